#include "scheduler/actions/round_table.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

#include "scheduler/actions/round_builder.h"

namespace taskgov::scheduler::actions {
namespace {

using decisions::PreemptionReason;
using decisions::Preemptor;
using testing::RoundBuilder;
using testing::VictimBuilder;
using Facts = RoundWorld::PodFacts;
using Held = RoundWorld::Reservation;
using Uids = std::set<std::string>;

constexpr int64_t kNow = 1'000'000;
constexpr RoundTable::Options kOptions{/*nomination_ttl_ms=*/60'000, /*round_slack_ms=*/10'000,
                                       /*retry_backoff_ms=*/300'000};

Facts Pending() { return Facts{true, false, false, false}; }
Facts Running() { return Facts{true, false, false, true}; }
Facts Deleting() { return Facts{true, false, true, true}; }
Facts Ended() { return Facts{true, true, false, true}; }

// The world as a table: pods by uid (absent: unknown), reservations, the preemptors the filter
// still sees, and whether nominations succeed.
class FakeWorld final : public RoundWorld {
 public:
  FakeWorld& Pod(const std::string& uid, Facts facts) {
    pods_[uid] = facts;
    return *this;
  }
  FakeWorld& Reserved(const std::string& uid, Held held) {
    reservations_[uid] = held;
    return *this;
  }
  FakeWorld& Filtered(const std::string& uid) {
    filtered_.insert(uid);
    return *this;
  }
  FakeWorld& RefuseNominations(std::string why) {
    refusal_ = std::move(why);
    return *this;
  }

  PodFacts FindPod(std::string_view uid) const override {
    auto it = pods_.find(std::string(uid));
    return it == pods_.end() ? PodFacts{} : it->second;
  }
  Reservation FindReservation(std::string_view uid) const override {
    auto it = reservations_.find(std::string(uid));
    return it == reservations_.end() ? Reservation::kNone : it->second;
  }
  bool FilterPending(const Preemptor& p) const override { return filtered_.count(p.uid) > 0; }
  bool Nominate(const Preemptor& p, model::NameId, int64_t ttl_ms, std::string* why) override {
    nominations.push_back(p.uid);
    nomination_ttl_ms = ttl_ms;
    if (!refusal_.empty()) {
      *why = refusal_;
      return false;
    }
    reservations_[p.uid] = Reservation::kAssumed;
    return true;
  }
  void HoldRoom(const Round& round, int64_t until_ms) override {
    held[round.preemptor.uid] = until_ms;
  }
  void ReleaseRoom(const Round& round) override { held.erase(round.preemptor.uid); }

  std::vector<std::string> nominations;
  int64_t nomination_ttl_ms = 0;
  std::map<std::string, int64_t> held;  // preemptor uid → until when its round holds room

 private:
  std::map<std::string, PodFacts> pods_;
  std::map<std::string, Reservation> reservations_;
  std::set<std::string> filtered_;
  std::string refusal_;
};

// b-0 of team-b waits (the informer has it); a-3 and a-2 of team-a, 4 GPUs each, are its
// victims, evicted and terminating. Deadline at kNow + 1 s.
Round TwoTerminating() {
  return RoundBuilder("b-0")
      .Gpus(8)
      .Node("p5-1")
      .Deadline(kNow + 1'000)
      .Victim(VictimBuilder("a-3").Gpus(4).Phase(VictimPhase::kEvicted))
      .Victim(VictimBuilder("a-2").Gpus(4).Phase(VictimPhase::kEvicted));
}
FakeWorld Waiting() {
  return FakeWorld()
      .Pod("uid-b-0", Pending())
      .Pod("uid-a-3", Deleting())
      .Pod("uid-a-2", Deleting());
}

enum class Fate { kLive, kSucceeded, kCancelled, kAbandoned };

struct FollowCase {
  std::string name;
  Round round;
  FakeWorld world;
  int64_t now_ms = kNow;
  Fate fate = Fate::kLive;
  bool nominated = false;
  bool backed_off = false;
  // Live rounds: what they hold back.
  bool claims_quota = true;
  Uids committed = {};
  bool evictions_due = false;
};

void PrintTo(const FollowCase& c, std::ostream* os) { *os << c.name; }

class FollowTest : public ::testing::TestWithParam<FollowCase> {};

TEST_P(FollowTest, EndsOrHoldsBack) {
  FollowCase c = GetParam();
  RoundTable table(&c.world, kOptions);
  table.Start(c.round);
  const RoundTable::Followed followed = table.Follow(c.now_ms);
  const RoundTable::Counts& counts = table.counts();
  EXPECT_EQ(counts.started, 1u);
  EXPECT_EQ(counts.succeeded, c.fate == Fate::kSucceeded ? 1u : 0u);
  EXPECT_EQ(counts.cancelled, c.fate == Fate::kCancelled ? 1u : 0u);
  EXPECT_EQ(counts.abandoned, c.fate == Fate::kAbandoned ? 1u : 0u);
  EXPECT_EQ(table.in_flight(), c.fate == Fate::kLive ? 1u : 0u);
  EXPECT_EQ(table.Has("uid-b-0"), c.fate == Fate::kLive);  // ended rounds leave the table
  EXPECT_EQ(table.BackedOff("uid-b-0"), c.backed_off);
  if (c.fate != Fate::kLive) {
    EXPECT_TRUE(followed.claims.empty());
    EXPECT_TRUE(followed.committed.empty());
    EXPECT_FALSE(followed.evictions_due);
    return;
  }
  const Round* round = table.Find("uid-b-0");
  ASSERT_NE(round, nullptr);
  EXPECT_EQ(round->nominated, c.nominated);
  ASSERT_EQ(followed.claims.size(), 1u);
  const Claim& claim = followed.claims[0];
  EXPECT_EQ(claim.team, model::TeamNames().Intern("team-b"));
  EXPECT_EQ(claim.flavor, model::FlavorNames().Intern(testing::kRoundFlavor));
  EXPECT_EQ(claim.node, "p5-1");
  EXPECT_EQ(claim.request, c.round.preemptor.request);
  EXPECT_EQ(claim.quota, c.claims_quota);
  EXPECT_EQ(followed.committed, c.committed);
  EXPECT_EQ(followed.evictions_due, c.evictions_due);
}

INSTANTIATE_TEST_SUITE_P(
    Rounds, FollowTest,
    ::testing::Values(
        FollowCase{.name = "VictimsTerminatingTheRoundWaits",
                   .round = TwoTerminating(),
                   .world = Waiting(),
                   .committed = {"uid-a-3", "uid-a-2"}},
        FollowCase{.name = "AVictimGoneIsNoLongerCommitted",
                   .round = TwoTerminating(),
                   .world = Waiting().Pod("uid-a-2", Ended()),
                   .committed = {"uid-a-3"}},
        FollowCase{.name = "AVictimToEvictIsDue",
                   .round = RoundBuilder(TwoTerminating())
                                .Victim(VictimBuilder("a-1").Phase(VictimPhase::kToEvict)),
                   .world = Waiting().Pod("uid-a-1", Running()),
                   .committed = {"uid-a-3", "uid-a-2", "uid-a-1"},
                   .evictions_due = true},
        FollowCase{.name = "ABlockedVictimIsDueAtItsRetryTime",
                   .round = RoundBuilder(TwoTerminating())
                                .Victim(VictimBuilder("a-1").Phase(VictimPhase::kBlocked, kNow)),
                   .world = Waiting().Pod("uid-a-1", Running()),
                   .committed = {"uid-a-3", "uid-a-2", "uid-a-1"},
                   .evictions_due = true},
        FollowCase{
            .name = "ABlockedVictimIsNotDueBefore",
            .round = RoundBuilder(TwoTerminating())
                         .Victim(VictimBuilder("a-1").Phase(VictimPhase::kBlocked, kNow + 1)),
            .world = Waiting().Pod("uid-a-1", Running()),
            .committed = {"uid-a-3", "uid-a-2", "uid-a-1"}},
        // Every victim gone: the capacity is reserved for the preemptor, and its claim no
        // longer counts the quota (the ledger holds it now).
        FollowCase{.name = "VictimsGoneNominate",
                   .round = TwoTerminating(),
                   .world = FakeWorld().Pod("uid-b-0", Pending()),
                   .nominated = true,
                   .claims_quota = false},
        // The filter admitted it already: nominated without a reservation of the table's.
        FollowCase{
            .name = "VictimsGoneAndAdmittedNeedsNoNomination",
            .round = TwoTerminating(),
            .world = FakeWorld().Pod("uid-b-0", Pending()).Reserved("uid-b-0", Held::kAssumed),
            .nominated = true,
            .claims_quota = false},
        FollowCase{.name = "FreedCapacityTakenFirstAbandons",
                   .round = TwoTerminating(),
                   .world = FakeWorld().Pod("uid-b-0", Pending()).RefuseNominations("no room"),
                   .fate = Fate::kAbandoned,
                   .backed_off = true},
        FollowCase{.name = "ABoundPreemptorSucceeds",
                   .round = TwoTerminating(),
                   .world = Waiting().Pod("uid-b-0", Running()),
                   .fate = Fate::kSucceeded},
        FollowCase{.name = "ABoundReservationSucceeds",
                   .round = TwoTerminating(),
                   .world = Waiting().Reserved("uid-b-0", Held::kBound),
                   .fate = Fate::kSucceeded},
        FollowCase{.name = "ADeletedPreemptorCancels",
                   .round = TwoTerminating(),
                   .world = Waiting().Pod("uid-b-0", Deleting()),
                   .fate = Fate::kCancelled},
        FollowCase{.name = "AnEndedPreemptorCancels",
                   .round = TwoTerminating(),
                   .world = Waiting().Pod("uid-b-0", Ended()),
                   .fate = Fate::kCancelled},
        // Known only from filter calls: it lives while the filter sees it or holds a reservation.
        FollowCase{
            .name = "AFilterOnlyPreemptorLivesWhileFiltered",
            .round = TwoTerminating(),
            .world = FakeWorld()
                         .Pod("uid-a-3", Deleting())
                         .Pod("uid-a-2", Deleting())
                         .Filtered("uid-b-0"),
            .committed = {"uid-a-3", "uid-a-2"}},
        FollowCase{
            .name = "AFilterOnlyPreemptorWithAReservationLives",
            .round = TwoTerminating(),
            .world = FakeWorld()
                         .Pod("uid-a-3", Deleting())
                         .Pod("uid-a-2", Deleting())
                         .Reserved("uid-b-0", Held::kAssumed),
            .claims_quota = false,
            .committed = {"uid-a-3", "uid-a-2"}},
        FollowCase{.name = "AFilterOnlyPreemptorNoLongerFilteredCancels",
                   .round = TwoTerminating(),
                   .world = FakeWorld().Pod("uid-a-3", Deleting()).Pod("uid-a-2", Deleting()),
                   .fate = Fate::kCancelled},
        FollowCase{.name = "ANominationExpiredUnusedAbandons",
                   .round = RoundBuilder("b-0").Gpus(8).Node("p5-1").Nominated(),
                   .world = FakeWorld().Pod("uid-b-0", Pending()),
                   .fate = Fate::kAbandoned,
                   .backed_off = true},
        FollowCase{.name = "VictimsStuckPastTheDeadlineAbandon",
                   .round = TwoTerminating(),
                   .world = Waiting(),
                   .now_ms = kNow + 1'001,
                   .fate = Fate::kAbandoned,
                   .backed_off = true},
        FollowCase{.name = "AtTheDeadlineTheRoundStillWaits",
                   .round = TwoTerminating(),
                   .world = Waiting(),
                   .now_ms = kNow + 1'000,
                   .committed = {"uid-a-3", "uid-a-2"}}),
    [](const ::testing::TestParamInfo<FollowCase>& info) { return info.param.name; });

TEST(RoundTableTest, ANominationHoldsForTheTtlAndMovesTheDeadline) {
  FakeWorld world = FakeWorld().Pod("uid-b-0", Pending());
  RoundTable table(&world, kOptions);
  table.Start(TwoTerminating());
  (void)table.Follow(kNow);
  EXPECT_EQ(world.nominations, std::vector<std::string>{"uid-b-0"});
  EXPECT_EQ(world.nomination_ttl_ms, kOptions.nomination_ttl_ms);
  EXPECT_EQ(table.Find("uid-b-0")->deadline_ms,
            kNow + kOptions.nomination_ttl_ms + kOptions.round_slack_ms);
  // Nominated once: later runs do not nominate again.
  (void)table.Follow(kNow + 1'000);
  EXPECT_EQ(world.nominations.size(), 1u);
}

// A round holds its room from its start, for as long as it may wait (moved on with its deadline),
// and gives it back whichever way it ends.
TEST(RoundTableTest, ARoundHoldsItsRoomFromStartToEnd) {
  FakeWorld world = Waiting();
  RoundTable table(&world, kOptions);
  Round round = TwoTerminating();
  const int64_t started = round.started_ms;
  table.Start(std::move(round));
  ASSERT_EQ(world.held.count("uid-b-0"), 1u);
  EXPECT_GE(world.held["uid-b-0"], started + kOptions.nomination_ttl_ms);
  table.MarkEvicted(*table.Find("uid-b-0"), table.Find("uid-b-0")->victims[0], kNow + 5'000, 30);
  EXPECT_EQ(world.held["uid-b-0"],
            kNow + 5'000 + 30'000 + kOptions.round_slack_ms + kOptions.nomination_ttl_ms);
  table.Abandon(*table.Find("uid-b-0"));
  EXPECT_EQ(world.held.count("uid-b-0"), 0u);
  // A round that succeeds gives it back too.
  FakeWorld bound = Waiting();
  RoundTable other(&bound, kOptions);
  other.Start(TwoTerminating());
  bound.Pod("uid-b-0", Running());
  (void)other.Follow(kNow);
  EXPECT_EQ(other.counts().succeeded, 1u);
  EXPECT_TRUE(bound.held.empty());
}

TEST(RoundTableTest, OnPodGoneMarksTheVictimAndNominatesAfterTheLast) {
  FakeWorld world = Waiting();
  RoundTable table(&world, kOptions);
  table.Start(TwoTerminating());
  EXPECT_FALSE(table.OnPodGone("uid-unrelated", kNow));
  EXPECT_TRUE(table.OnPodGone("uid-a-3", kNow));
  const Round* round = table.Find("uid-b-0");
  EXPECT_EQ(round->victims[0].phase, VictimPhase::kGone);
  EXPECT_FALSE(round->nominated);
  EXPECT_TRUE(world.nominations.empty());
  EXPECT_FALSE(table.OnPodGone("uid-a-3", kNow));  // told twice
  EXPECT_TRUE(table.OnPodGone("uid-a-2", kNow));
  EXPECT_TRUE(round->nominated);
  EXPECT_EQ(world.nominations, std::vector<std::string>{"uid-b-0"});
}

// Its victims gone, a round holds their room for its preemptor; when the preemptor goes too
// (it ended without running, or was deleted) the room goes back as the informer says so, not at
// the next run — before, a pod filtered in between was refused for room held for nobody (seen in
// the demo: a finished gang's hold refused a new job for up to a second of fast steps).
TEST(RoundTableTest, APreemptorGoneEndsItsRoundAndItsHoldAtOnce) {
  FakeWorld world = Waiting();
  RoundTable table(&world, kOptions);
  table.Start(TwoTerminating());
  EXPECT_TRUE(table.OnPodGone("uid-a-3", kNow));
  EXPECT_TRUE(table.OnPodGone("uid-a-2", kNow));
  ASSERT_TRUE(table.Find("uid-b-0")->nominated);
  ASSERT_EQ(world.held.count("uid-b-0"), 1u);
  world.Pod("uid-b-0", Ended());  // the informer: it ended without running
  EXPECT_TRUE(table.OnPodGone("uid-b-0", kNow));
  EXPECT_EQ(world.held.count("uid-b-0"), 0u);
  EXPECT_EQ(table.counts().cancelled, 1u);
  EXPECT_TRUE(table.InFlight().empty());
}

TEST(RoundTableTest, AnEndedRoundHearsNothingAndLeavesAtTheNextFollow) {
  FakeWorld world = Waiting();
  RoundTable table(&world, kOptions);
  table.Start(TwoTerminating());
  table.Abandon(*table.Find("uid-b-0"));
  EXPECT_EQ(table.counts().abandoned, 1u);
  EXPECT_FALSE(table.BackedOff("uid-b-0"));  // abandoned for want of victims: no backoff
  EXPECT_TRUE(table.Has("uid-b-0"));
  EXPECT_TRUE(table.InFlight().empty());
  EXPECT_TRUE(table.Statuses().empty());
  EXPECT_FALSE(table.OnPodGone("uid-a-3", kNow));
  (void)table.Follow(kNow);
  EXPECT_FALSE(table.Has("uid-b-0"));
  EXPECT_FALSE(table.OnPodGone("uid-a-2", kNow));
}

TEST(RoundTableTest, DroppedVictimsLeaveTheIndexAddedOnesJoinIt) {
  FakeWorld world = Waiting();
  RoundTable table(&world, kOptions);
  table.Start(TwoTerminating());
  Round& round = *table.Find("uid-b-0");
  const std::vector<RoundVictim> dropped =
      table.Drop(round, [](const RoundVictim& v) { return v.name == "a-2"; });
  ASSERT_EQ(dropped.size(), 1u);
  EXPECT_EQ(dropped[0].uid, "uid-a-2");
  ASSERT_EQ(round.victims.size(), 1u);
  EXPECT_FALSE(table.OnPodGone("uid-a-2", kNow));
  table.Add(round, {VictimBuilder("a-1").Gpus(4)});
  EXPECT_EQ(round.victims.size(), 2u);
  EXPECT_EQ(RoundTable::FindVictim(round, "uid-a-1"), &round.victims[1]);
  EXPECT_EQ(RoundTable::FindVictim(round, "uid-a-2"), nullptr);
  EXPECT_TRUE(table.OnPodGone("uid-a-1", kNow));
}

TEST(RoundTableTest, EvictedPodsAreTrackedUntilGoneWhateverTheirRound) {
  FakeWorld world = Waiting().Pod("uid-a-1", Running());
  RoundTable table(&world, kOptions);
  table.Start(RoundBuilder("b-0")
                  .Gpus(4)
                  .Deadline(kNow)
                  .Victim(VictimBuilder("a-1").Gpus(4))
                  .Victim(VictimBuilder("c-0").Team("team-c").Gpus(4)));
  Round& round = *table.Find("uid-b-0");
  table.MarkEvicted(round, round.victims[0], kNow, /*grace_s=*/120);
  EXPECT_EQ(round.victims[0].phase, VictimPhase::kEvicted);
  EXPECT_EQ(round.deadline_ms, kNow + 120'000 + kOptions.round_slack_ms);
  // A victim gone before its eviction was acknowledged stays gone.
  table.MarkGone(round.victims[1]);
  table.MarkEvicted(round, round.victims[1], kNow - 5'000, 120);
  EXPECT_EQ(round.victims[1].phase, VictimPhase::kGone);
  EXPECT_EQ(round.deadline_ms, kNow + 120'000 + kOptions.round_slack_ms);  // never earlier
  EXPECT_EQ(table.EvictedUids(), (Uids{"uid-a-1", "uid-c-0"}));
  EXPECT_EQ(table.PreemptedPods(), (std::map<std::string, int64_t>{{"team-a", 1}, {"team-c", 1}}));
  // c-0 is unknown to the world, a-1 runs on: the next Follow forgets c-0 only.
  (void)table.Follow(kNow);
  EXPECT_EQ(table.EvictedUids(), Uids{"uid-a-1"});
  EXPECT_TRUE(table.OnPodGone("uid-a-1", kNow));
  EXPECT_TRUE(table.EvictedUids().empty());
}

TEST(RoundTableTest, BackoffsExpire) {
  FakeWorld world;
  RoundTable table(&world, kOptions);
  table.BackOff("uid-x", kNow + 5'000);
  EXPECT_TRUE(table.BackedOff("uid-x"));
  (void)table.Follow(kNow + 4'999);
  EXPECT_TRUE(table.BackedOff("uid-x"));
  (void)table.Follow(kNow + 5'000);
  EXPECT_FALSE(table.BackedOff("uid-x"));
}

struct StatusCase {
  std::string name;
  Round round;
  std::string status;
};

void PrintTo(const StatusCase& c, std::ostream* os) { *os << c.name; }

class StatusTest : public ::testing::TestWithParam<StatusCase> {};

TEST_P(StatusTest, SaysWhatTheRoundDoes) {
  EXPECT_EQ(RoundTable::StatusOf(GetParam().round), GetParam().status);
}

Round WithNote(Round round, std::string note) {
  round.blocked_note = std::move(note);
  return round;
}

INSTANTIATE_TEST_SUITE_P(
    Rounds, StatusTest,
    ::testing::Values(
        StatusCase{"Terminating", TwoTerminating(),
                   "reclaiming 8 nvidia.com/gpu from team-a, 2 pods terminating"},
        StatusCase{"EveryPhase",
                   RoundBuilder("b-0")
                       .Gpus(12)
                       .Victim(VictimBuilder("a-0").Gpus(4).Phase(VictimPhase::kEvicted))
                       .Victim(VictimBuilder("a-1").Gpus(4).Phase(VictimPhase::kToEvict))
                       .Victim(VictimBuilder("a-2").Gpus(2).Phase(VictimPhase::kBlocked, kNow))
                       .Victim(VictimBuilder("a-3").Gpus(2).Phase(VictimPhase::kGone)),
                   "reclaiming 12 nvidia.com/gpu from team-a, 1 pod terminating, 1 pod to "
                   "evict, 1 pod waiting for a PodDisruptionBudget"},
        StatusCase{
            "FairShare",
            RoundBuilder("y-0").Team("team-y").Gpus(2).Victim(
                VictimBuilder("x-0").Team("team-x").Gpus(2).Reason(PreemptionReason::kFairShare)),
            "reclaiming (fair share) 2 nvidia.com/gpu from team-x, 1 pod to evict"},
        StatusCase{
            "InTeamAndOtherTeams",
            RoundBuilder("a-9")
                .Team("team-a")
                .Gpus(4)
                .Victim(VictimBuilder("a-0").Gpus(2).Reason(PreemptionReason::kInTeamPriority))
                .Victim(VictimBuilder("c-0").Team("team-c").Gpus(2).Reason(
                    PreemptionReason::kInTeamPriority)),
            "preempting 4 nvidia.com/gpu from team-a, team-c, 2 pods to evict"},
        // The last refusal is said while no victim waits for a budget.
        StatusCase{"PdbNoteAfterReselection",
                   WithNote(TwoTerminating(),
                            "eviction of ns-team-a/a-9 refused by a "
                            "PodDisruptionBudget"),
                   "reclaiming 8 nvidia.com/gpu from team-a, 2 pods terminating, eviction of "
                   "ns-team-a/a-9 refused by a PodDisruptionBudget"},
        StatusCase{"PdbNoteHiddenWhileAVictimWaits",
                   WithNote(RoundBuilder("b-0").Gpus(4).Victim(
                                VictimBuilder("a-0").Gpus(4).Phase(VictimPhase::kBlocked, kNow)),
                            "eviction of ns-team-a/a-0 refused"),
                   "reclaiming 4 nvidia.com/gpu from team-a, 1 pod waiting for a "
                   "PodDisruptionBudget"},
        StatusCase{"Nominated",
                   RoundBuilder("b-0").Gpus(4).Nominated().Victim(
                       VictimBuilder("a-0").Gpus(4).Phase(VictimPhase::kGone)),
                   "reclaiming 4 nvidia.com/gpu from team-a, capacity reserved on "
                   "ml.p5.48xlarge"}),
    [](const ::testing::TestParamInfo<StatusCase>& info) { return info.param.name; });

// Issue 36, item 5: the note reaches the preemptor's team (its refusal, its FailedScheduling
// event, the console): a victim of its own team is named with the budget's detail; another
// team's pod and budget are not, only that team.
TEST(RoundTableTest, RefusedByPdbNamesOnlyThePreemptorsOwnObjects) {
  Round round = TwoTerminating();  // team-b's preemptor, team-a's victims
  RoundTable::RefusedByPdb(round, round.victims[1], "pdb a-secret-pdb would be violated");
  EXPECT_EQ(round.blocked_note, "eviction of a pod of team-a refused by a PodDisruptionBudget");
  Round own = RoundBuilder("a-9").Team("team-a").Gpus(2).Victim(
      VictimBuilder("a-0").Gpus(2).Reason(PreemptionReason::kInTeamPriority));
  RoundTable::RefusedByPdb(own, own.victims[0], "");
  EXPECT_EQ(own.blocked_note, "eviction of ns-team-a/a-0 refused by a PodDisruptionBudget");
  RoundTable::RefusedByPdb(own, own.victims[0], "would violate the budget");
  EXPECT_EQ(own.blocked_note,
            "eviction of ns-team-a/a-0 refused by a PodDisruptionBudget: would violate the "
            "budget");
}

TEST(RoundTableTest, StatusesAreTheLiveRoundsByPreemptor) {
  FakeWorld world = Waiting().Pod("uid-b-1", Pending());
  RoundTable table(&world, kOptions);
  table.Start(TwoTerminating());
  table.Start(RoundBuilder("b-1").Gpus(4).Victim(VictimBuilder("a-0").Gpus(4)));
  EXPECT_EQ(table.InFlight(), (std::vector<std::string>{"uid-b-0", "uid-b-1"}));
  table.Abandon(*table.Find("uid-b-1"));
  const auto statuses = table.Statuses();
  ASSERT_EQ(statuses.size(), 1u);
  EXPECT_EQ(statuses.at("uid-b-0"), RoundTable::StatusOf(*table.Find("uid-b-0")));
}

}  // namespace
}  // namespace taskgov::scheduler::actions
