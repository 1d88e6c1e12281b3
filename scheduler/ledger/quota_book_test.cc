#include "scheduler/ledger/quota_book.h"

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <thread>

#include "scheduler/common/log.h"
#include "scheduler/testing/builders.h"

namespace taskgov::scheduler::ledger {
namespace {

using model::FlavorNames;
using model::IdAmounts;
using model::NameId;
using model::ResourceList;
using model::ResourceNames;
using model::TeamNames;
using model::ToIdAmounts;
using scheduler::testing::PolicyBuilder;
using Mode = Ledger::Mode;

constexpr char kP5[] = "ml.p5.48xlarge";
constexpr char kG5[] = "ml.g5.12xlarge";
constexpr char kGpu[] = "nvidia.com/gpu";
constexpr int64_t kTtl = 30'000;

NameId T(const std::string& name) { return TeamNames().Intern(name); }
NameId F(const std::string& name) { return FlavorNames().Intern(name); }

ResourceList Gpus(int64_t n) { return ResourceList{{kGpu, n}}; }

class QuotaBookTest : public ::testing::Test {
 protected:
  QuotaBookTest()
      : book_(PolicyBuilder()
                  .Team("a", "c")
                  .Quota(kP5, kGpu, 8, 0)
                  .Quota(kG5, kGpu, 4, 0)
                  .Team("b", "c")
                  .Quota(kP5, kGpu, 8, 0, 0)
                  .Build(),
              &clock_) {}

  bool Assume(const std::string& uid, int64_t gpus, const std::string& flavor = kP5) {
    return std::holds_alternative<Charge>(
        book_.Assume(uid, T("a"), F(flavor), Gpus(gpus), Mode::kBorrowing, kTtl, PodMeta{}));
  }
  int64_t Usage(const std::string& flavor = kP5) {
    Ledger::Session s(book_.ledger());
    return s.View(T("a"), F(flavor), ResourceNames().Intern(kGpu)).usage;
  }

  common::FakeClock clock_;
  QuotaBook book_;
};

TEST_F(QuotaBookTest, AssumeThenConfirmChargesOnce) {
  ASSERT_TRUE(Assume("u1", 4));
  EXPECT_EQ(book_.ConfirmBound("u1", T("a"), F(kP5), Gpus(4), PodMeta{}),
            QuotaBook::ConfirmOutcome::kConfirmedAssumed);
  EXPECT_EQ(book_.ConfirmBound("u1", T("a"), F(kP5), Gpus(4), PodMeta{}),
            QuotaBook::ConfirmOutcome::kAlreadyBound);
  EXPECT_EQ(Usage(), 4);
  EXPECT_EQ(book_.Find("u1")->state, ReservationState::kBound);
}

TEST_F(QuotaBookTest, DuplicateReleaseChangesNothing) {
  ASSERT_TRUE(Assume("u1", 4));
  EXPECT_TRUE(book_.Release("u1"));
  EXPECT_FALSE(book_.Release("u1"));
  EXPECT_EQ(Usage(), 0);
}

TEST_F(QuotaBookTest, RefilterReplacesTheAssumedReservation) {
  ASSERT_TRUE(Assume("u1", 4));
  ASSERT_TRUE(Assume("u1", 2));
  EXPECT_EQ(Usage(), 2);
  EXPECT_EQ(book_.size(), 1u);
}

TEST_F(QuotaBookTest, RefilterOfABoundPodKeepsItsCharge) {
  ASSERT_TRUE(Assume("u1", 4));
  book_.ConfirmBound("u1", T("a"), F(kP5), Gpus(4), PodMeta{});
  ASSERT_TRUE(Assume("u1", 4));
  EXPECT_EQ(Usage(), 4);
}

TEST_F(QuotaBookTest, BurstOfFiltersBeforeAnyBindingCannotExceedTheQuota) {
  int admitted = 0;
  for (int i = 0; i < 20; ++i) admitted += Assume("burst-" + std::to_string(i), 1) ? 1 : 0;
  EXPECT_EQ(admitted, 8);
  EXPECT_EQ(Usage(), 8);
}

TEST_F(QuotaBookTest, AssumedReservationsExpireAfterTheirTtl) {
  ASSERT_TRUE(Assume("u1", 4));
  ASSERT_TRUE(Assume("u2", 2));
  book_.ConfirmBound("u2", T("a"), F(kP5), Gpus(2), PodMeta{});
  clock_.Advance(kTtl - 1);
  EXPECT_EQ(book_.ExpireAssumed(), 0u);
  clock_.Advance(1);
  EXPECT_EQ(book_.ExpireAssumed(), 1u);
  EXPECT_EQ(Usage(), 2);  // the bound one stays
  EXPECT_FALSE(book_.Find("u1").has_value());
}

// The sweep skips shards with nothing due: a reservation assumed (or re-filtered) after a sweep
// that found nothing due, with a shorter TTL than those already there, still expires on time.
TEST_F(QuotaBookTest, ASweepThatFoundNothingDueStillExpiresWhatIsAssumedAfterIt) {
  for (int i = 0; i < 64; ++i) {  // every shard holds an assumed reservation due at kTtl
    ASSERT_TRUE(Assume("long-" + std::to_string(i), 0));
  }
  clock_.Advance(kTtl / 2);
  EXPECT_EQ(book_.ExpireAssumed(), 0u);
  for (int i = 0; i < 64; ++i) {  // due at kTtl / 2 + 10, before the others
    ASSERT_TRUE(std::holds_alternative<Charge>(book_.Assume(
        "short-" + std::to_string(i), T("a"), F(kP5), Gpus(0), Mode::kBorrowing, 10, PodMeta{})));
  }
  clock_.Advance(10);
  EXPECT_EQ(book_.ExpireAssumed(), 64u);
  EXPECT_EQ(book_.ExpireAssumed(), 0u);
  clock_.Advance(kTtl / 2);
  EXPECT_EQ(book_.ExpireAssumed(), 64u);
  EXPECT_EQ(book_.size(), 0u);
}
TEST_F(QuotaBookTest, BoundPodsSeenAfterARestartAreChargedEvenOverQuota) {
  for (int i = 0; i < 10; ++i) {
    EXPECT_EQ(book_.ConfirmBound("r" + std::to_string(i), T("a"), F(kP5), Gpus(1), PodMeta{}),
              QuotaBook::ConfirmOutcome::kCharged);
  }
  EXPECT_EQ(Usage(), 10);
  EXPECT_FALSE(Assume("new", 1));
}

TEST_F(QuotaBookTest, DeletedPodIsNoLongerCountedAndItsRecreationCountsOnce) {
  book_.ConfirmBound("old-uid", T("a"), F(kP5), Gpus(8), PodMeta{});
  EXPECT_TRUE(book_.Release("old-uid"));  // the job controller deleted it
  book_.ConfirmBound("new-uid", T("a"), F(kP5), Gpus(8), PodMeta{});
  EXPECT_EQ(Usage(), 8);
}

TEST_F(QuotaBookTest, BoundToAnotherFlavorThanAssumedMovesTheCharge) {
  ASSERT_TRUE(Assume("u1", 2, kP5));
  EXPECT_EQ(book_.ConfirmBound("u1", T("a"), F(kG5), Gpus(2), PodMeta{}),
            QuotaBook::ConfirmOutcome::kCharged);
  EXPECT_EQ(Usage(kP5), 0);
  EXPECT_EQ(Usage(kG5), 2);
}

TEST_F(QuotaBookTest, ReconcileReportsAndRepairsDrift) {
  ASSERT_TRUE(Assume("u1", 3));
  EXPECT_TRUE(book_.Reconcile().empty());
  // Corrupt the counters behind the table's back.
  {
    Ledger::Session s(book_.ledger());
    ASSERT_TRUE(
        std::holds_alternative<Charge>(s.Reserve(T("a"), F(kP5), Gpus(2), Mode::kBorrowing)));
  }
  EXPECT_EQ(Usage(), 5);
  std::vector<Ledger::Drift> drift = book_.Reconcile();
  ASSERT_EQ(drift.size(), 1u);
  EXPECT_EQ(drift[0].ledger_usage, 5);
  EXPECT_EQ(drift[0].charged, 3);
  EXPECT_EQ(Usage(), 3);
  // The table's charges still release cleanly after the rebuild.
  EXPECT_TRUE(book_.Release("u1"));
  EXPECT_EQ(Usage(), 0);
}

// Without drift the check changes nothing: no new generation, the charges keep their cells.
// With drift (here usage of a cell no reservation charges, on another flavor) it rebuilds.
TEST_F(QuotaBookTest, ReconcileWithoutDriftKeepsTheGeneration) {
  ASSERT_TRUE(Assume("u1", 3));
  ASSERT_EQ(book_.ConfirmBound("u2", T("a"), F(kG5), Gpus(2), PodMeta{}),
            QuotaBook::ConfirmOutcome::kCharged);
  const uint64_t generation = book_.ledger().generation();
  EXPECT_TRUE(book_.Reconcile().empty());
  EXPECT_EQ(book_.ledger().generation(), generation);
  EXPECT_EQ(book_.Find("u1")->charge.generation, generation);
  {
    Ledger::Session s(book_.ledger());
    ASSERT_TRUE(std::holds_alternative<Charge>(
        s.Reserve(T("a"), F(kG5), Gpus(1), Mode::kBorrowing)));  // leaked
  }
  std::vector<Ledger::Drift> drift = book_.Reconcile();
  ASSERT_EQ(drift.size(), 1u);
  EXPECT_EQ(drift[0].key.flavor, F(kG5));
  EXPECT_EQ(drift[0].ledger_usage, 3);
  EXPECT_EQ(drift[0].charged, 2);
  EXPECT_NE(book_.ledger().generation(), generation);
  EXPECT_EQ(Usage(kG5), 2);
  EXPECT_EQ(Usage(kP5), 3);
  EXPECT_TRUE(book_.Release("u1"));
  EXPECT_TRUE(book_.Release("u2"));
  EXPECT_EQ(Usage(kP5), 0);
  EXPECT_EQ(Usage(kG5), 0);
  EXPECT_TRUE(book_.Reconcile().empty());
}

TEST_F(QuotaBookTest, ReloadKeepsReservations) {
  ASSERT_TRUE(Assume("u1", 6));
  book_.ApplyPolicy(PolicyBuilder().Team("a", "c").Quota(kP5, kGpu, 4, 0).Build());
  EXPECT_EQ(Usage(), 6);
  EXPECT_FALSE(Assume("u2", 1));
  EXPECT_TRUE(book_.Release("u1"));
  EXPECT_EQ(Usage(), 0);
  EXPECT_TRUE(Assume("u2", 4));
}

// Every place the book gives a charge back handles a refused release: it warns, naming the team,
// flavor and resource, the ledger counts it, and the operation completes.
TEST_F(QuotaBookTest, ARefusedReleaseIsLoggedCountedAndTheOperationGoesOn) {
  struct Case {
    std::string name;
    std::function<void()> op;  // gives back u1's reservation one way or another
    int64_t usage_after;       // on p5
  };
  const std::vector<Case> cases = {
      {"release", [this] { EXPECT_TRUE(book_.Release("u1")); }, 0},
      {"re-filter", [this] { EXPECT_TRUE(Assume("u1", 2)); }, 2},
      {"bound to another flavor",
       [this] {
         EXPECT_EQ(book_.ConfirmBound("u1", T("a"), F(kG5), Gpus(4), PodMeta{}),
                   QuotaBook::ConfirmOutcome::kCharged);
       },
       0},
      {"expiry",
       [this] {
         clock_.Advance(kTtl);
         EXPECT_EQ(book_.ExpireAssumed(), 1u);
       },
       0},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    ASSERT_TRUE(Assume("u1", 4));
    // The counters drift behind the table's back: u1's charge is given back directly.
    {
      Ledger::Session s(book_.ledger());
      ASSERT_TRUE(s.Release(book_.Find("u1")->charge));
    }
    const uint64_t over_before = book_.ledger().over_releases();
    common::log::ScopedCapture logs;
    c.op();
    EXPECT_EQ(book_.ledger().over_releases() - over_before, 1u);
    ASSERT_EQ(logs.Count("release refused"), 1u);
    std::string line;
    for (const std::string& l : logs.Lines()) {
      if (l.find("release refused") != std::string::npos) line = l;
    }
    EXPECT_NE(line.find(R"("level":"warn")"), std::string::npos) << line;
    EXPECT_NE(line.find(R"("component":"ledger")"), std::string::npos) << line;
    EXPECT_NE(line.find(R"("team":"a")"), std::string::npos) << line;
    EXPECT_NE(line.find(R"("flavor":"ml.p5.48xlarge")"), std::string::npos) << line;
    EXPECT_NE(line.find(R"("resource":"nvidia.com/gpu")"), std::string::npos) << line;
    EXPECT_NE(line.find(R"("uid":"u1")"), std::string::npos) << line;
    EXPECT_EQ(Usage(), c.usage_after);  // nothing went negative
    // Clean up for the next case.
    book_.Release("u1");
    clock_.Advance(kTtl);
    book_.ExpireAssumed();
    ASSERT_EQ(book_.size(), 0u);
    ASSERT_TRUE(book_.Reconcile().empty());
  }
}

TEST_F(QuotaBookTest, IdAmountsOverloadsChargeLikeResourceLists) {
  const IdAmounts four = ToIdAmounts(Gpus(4));
  ASSERT_TRUE(std::holds_alternative<Charge>(
      book_.Assume("u1", T("a"), F(kP5), four, Mode::kBorrowing, kTtl, PodMeta{})));
  EXPECT_EQ(book_.ConfirmBound("u1", T("a"), F(kP5), four, PodMeta{}),
            QuotaBook::ConfirmOutcome::kConfirmedAssumed);
  EXPECT_EQ(book_.ConfirmBound("u2", T("a"), F(kP5), ToIdAmounts(Gpus(2)), PodMeta{}),
            QuotaBook::ConfirmOutcome::kCharged);
  EXPECT_EQ(Usage(), 6);
  EXPECT_FALSE(std::holds_alternative<Charge>(
      book_.Assume("u3", T("a"), F(kP5), ToIdAmounts(Gpus(3)), Mode::kBorrowing, kTtl, {})));
  EXPECT_TRUE(book_.Release("u1"));
  EXPECT_TRUE(book_.Release("u2"));
  EXPECT_EQ(Usage(), 0);
  EXPECT_EQ(book_.ledger().over_releases(), 0u);
}

// ---- gangs ----

constexpr int64_t kGangTtl = 300'000;

class GangBookTest : public QuotaBookTest {
 protected:
  // Member `uid` of gang `gang` (declaring `size` members of `gpus` GPUs each) on p5.
  std::variant<Charge, Refusal> Member(const std::string& uid, const std::string& gang, int size,
                                       int64_t gpus, const std::string& team = "a") {
    Ledger::Session session(book_.ledger());
    return book_.AssumeMember(session, uid, gang, size, T(team), F(kP5), KnownIdAmounts(Gpus(gpus)),
                              Mode::kBorrowing, kTtl, kGangTtl, PodMeta{});
  }
  bool Admitted(const std::string& uid, const std::string& gang, int size, int64_t gpus) {
    return std::holds_alternative<Charge>(Member(uid, gang, size, gpus));
  }
  int64_t Held(const std::string& gang) {
    std::optional<GangHold> hold = book_.FindGang(gang);
    return hold ? hold->remaining[0].Amount(ResourceNames().Intern(kGpu)) : -1;
  }
};

TEST_F(GangBookTest, TheFirstMemberReservesForEveryMember) {
  ASSERT_TRUE(Admitted("m0", "job-x", 4, 2));
  EXPECT_EQ(Usage(), 8);  // all four members' quota
  EXPECT_EQ(Held("job-x"), 6);
  EXPECT_EQ(book_.FindGang("job-x")->holders, 1);
  for (const char* uid : {"m1", "m2", "m3"}) ASSERT_TRUE(Admitted(uid, "job-x", 4, 2));
  EXPECT_EQ(Usage(), 8);  // the others took their shares: nothing more charged
  EXPECT_EQ(Held("job-x"), 0);
  EXPECT_EQ(book_.Find("m3")->charge.Amount(ResourceNames().Intern(kGpu)), 2);
}

// HoldsFor: a pod's own reservation, or its gang's hold (a member not filtered yet takes what is
// held for it); nothing once both are gone.
TEST_F(GangBookTest, HoldsForSeesAPodsReservationOrItsGangsHold) {
  EXPECT_FALSE(book_.HoldsFor("m0", "job-x"));
  ASSERT_TRUE(Admitted("m0", "job-x", 2, 2));
  EXPECT_TRUE(book_.HoldsFor("m0", "job-x"));
  EXPECT_TRUE(book_.HoldsFor("m1", "job-x"));  // not filtered yet: its gang holds for it
  EXPECT_FALSE(book_.HoldsFor("m1", ""));      // no reservation of its own
  EXPECT_FALSE(book_.HoldsFor("m1", "job-y"));
  ASSERT_TRUE(std::holds_alternative<Charge>(
      book_.Assume("lone", T("a"), F(kP5), ToIdAmounts(Gpus(1)), Mode::kBorrowing, kTtl, {})));
  EXPECT_TRUE(book_.HoldsFor("lone", ""));
  EXPECT_TRUE(book_.HoldsFor("lone", "job-y"));
  EXPECT_TRUE(book_.Release("lone"));
  EXPECT_FALSE(book_.HoldsFor("lone", ""));
  ASSERT_TRUE(Admitted("m1", "job-x", 2, 2));
  EXPECT_TRUE(book_.HoldsFor("m1", ""));
  EXPECT_TRUE(book_.Release("m0"));
  EXPECT_TRUE(book_.Release("m1"));  // the last holder, nothing held for others: the hold goes
  EXPECT_FALSE(book_.FindGang("job-x").has_value());
  EXPECT_FALSE(book_.HoldsFor("m0", "job-x"));
  EXPECT_FALSE(book_.HoldsFor("m1", "job-x"));
}

// A gang's key is pooled once, by its first member (the hold keeps it); the others' filters copy
// it from the hold, which takes no lock. With the key pooled per member, each member's filter took
// the pool's mutex.
TEST_F(GangBookTest, OnlyTheFirstMemberPoolsTheGangKey) {
  const model::StringPool& pool = model::PodStrings();
  const size_t strings = pool.size();
  const uint64_t locks = pool.locks();
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(Admitted("m" + std::to_string(i), "job-pooled", 4, 2));
  ASSERT_TRUE(Admitted("m2", "job-pooled", 4, 2));  // a re-filter
  EXPECT_EQ(pool.locks(), locks + 1);
  EXPECT_EQ(pool.size(), strings + 1);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(book_.Find("m" + std::to_string(i))->meta.workload.view(), "job-pooled") << i;
  }
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(book_.Release("m" + std::to_string(i)));
  EXPECT_FALSE(book_.FindGang("job-pooled").has_value());
  EXPECT_EQ(pool.size(), strings);  // gone with the hold and the last member
}

TEST_F(GangBookTest, OfTwoGangsThatEachNeedTheQuotaOnlyOneIsAdmitted) {
  ASSERT_TRUE(Admitted("x0", "job-x", 4, 2));
  std::variant<Charge, Refusal> y = Member("y0", "job-y", 4, 2);
  ASSERT_TRUE(std::holds_alternative<Refusal>(y));
  EXPECT_EQ(std::get<Refusal>(y).requested, 8);  // the whole gang was asked for
  EXPECT_FALSE(book_.FindGang("job-y").has_value());
  for (const char* uid : {"x1", "x2", "x3"}) EXPECT_TRUE(Admitted(uid, "job-x", 4, 2));
  EXPECT_FALSE(Admitted("y1", "job-y", 4, 2));
  EXPECT_EQ(Usage(), 8);
}

TEST_F(GangBookTest, AGangLargerThanTheQuotaReservesNothing) {
  EXPECT_FALSE(Admitted("m0", "big", 8, 2));  // 16 > 8, no borrowing
  EXPECT_EQ(Usage(), 0);
  EXPECT_FALSE(book_.FindGang("big").has_value());
}

TEST_F(GangBookTest, ARefilterKeepsItsShare) {
  ASSERT_TRUE(Admitted("m0", "job-x", 4, 2));
  ASSERT_TRUE(Admitted("m0", "job-x", 4, 2));
  EXPECT_EQ(Usage(), 8);
  EXPECT_EQ(Held("job-x"), 6);
  EXPECT_EQ(book_.FindGang("job-x")->holders, 1);
}

TEST_F(GangBookTest, AnExpiredMemberShareGoesBackToItsGang) {
  ASSERT_TRUE(Admitted("m0", "job-x", 4, 2));
  clock_.Advance(kTtl + 1);
  EXPECT_EQ(book_.ExpireAssumed(), 1u);
  EXPECT_EQ(Usage(), 8);  // still held for the gang
  EXPECT_EQ(Held("job-x"), 8);
  EXPECT_EQ(book_.FindGang("job-x")->holders, 0);
  ASSERT_TRUE(Admitted("m0", "job-x", 4, 2));  // retried: takes a share again
  EXPECT_EQ(Usage(), 8);
}

// Issue 35: a paused job's resumption reserves for its pods. A stand-in member is admitted with
// the whole gang's need and hands its share back at once: the hold keeps all of it for the
// gang's real members (another gang cannot take it), who then take their shares as usual.
TEST_F(GangBookTest, AStandInsShareReturnsToTheGangAndItsMembersTakeIt) {
  ASSERT_TRUE(Admitted("paused/job-x", "job-x", 4, 2));
  ASSERT_TRUE(book_.ReturnToGang("paused/job-x"));
  EXPECT_FALSE(book_.Find("paused/job-x").has_value());
  EXPECT_EQ(Usage(), 8);
  EXPECT_EQ(Held("job-x"), 8);
  EXPECT_EQ(book_.FindGang("job-x")->holders, 0);
  EXPECT_FALSE(Admitted("y0", "job-y", 4, 2)) << "the quota is held for job-x's members";
  for (const char* uid : {"m0", "m1", "m2", "m3"}) ASSERT_TRUE(Admitted(uid, "job-x", 4, 2));
  EXPECT_EQ(Usage(), 8);
  EXPECT_EQ(Held("job-x"), 0);
  EXPECT_EQ(book_.FindGang("job-x")->holders, 4);
  // Nothing to return: a lone pod's reservation, an unknown uid, a member's second return.
  ASSERT_TRUE(std::holds_alternative<Charge>(
      book_.Assume("lone", T("b"), F(kP5), ToIdAmounts(Gpus(1)), Mode::kBorrowing, kTtl, {})));
  EXPECT_FALSE(book_.ReturnToGang("lone"));
  EXPECT_FALSE(book_.ReturnToGang("nobody"));
  EXPECT_FALSE(book_.ReturnToGang("paused/job-x"));
}

// A resumed RayJob's hold goes to the cluster KubeRay creates for it (a new gang key): the
// cluster's pods take it, and nothing is counted twice. A hold with members, or none, does not
// move; a target with a hold of its own gets nothing and the source's quota goes back.
TEST_F(GangBookTest, AHeldGangMovesToItsNewKeyWhole) {
  ASSERT_TRUE(Admitted("paused/rayjob", "rayjob", 4, 2));
  ASSERT_TRUE(book_.ReturnToGang("paused/rayjob"));
  EXPECT_TRUE(book_.MoveGang("rayjob", "cluster-1"));
  EXPECT_FALSE(book_.FindGang("rayjob").has_value());
  EXPECT_EQ(Held("cluster-1"), 8);
  EXPECT_EQ(Usage(), 8);
  EXPECT_FALSE(book_.MoveGang("rayjob", "cluster-2")) << "nothing left to move";
  for (const char* uid : {"m0", "m1", "m2", "m3"}) ASSERT_TRUE(Admitted(uid, "cluster-1", 4, 2));
  EXPECT_EQ(Usage(), 8);
  EXPECT_EQ(Held("cluster-1"), 0);
  EXPECT_FALSE(book_.MoveGang("cluster-1", "cluster-3")) << "its members hold shares";
  for (const char* uid : {"m0", "m1", "m2", "m3"}) ASSERT_TRUE(book_.Release(uid));
  EXPECT_EQ(Usage(), 0);

  ASSERT_TRUE(Admitted("paused/rayjob", "rayjob", 2, 2));
  ASSERT_TRUE(book_.ReturnToGang("paused/rayjob"));
  ASSERT_TRUE(Admitted("c0", "cluster-4", 2, 2));  // a hold of its own already
  EXPECT_EQ(Usage(), 8);
  EXPECT_FALSE(book_.MoveGang("rayjob", "cluster-4"));
  EXPECT_FALSE(book_.FindGang("rayjob").has_value());
  EXPECT_EQ(Usage(), 4) << "the source's quota went back";
  EXPECT_EQ(Held("cluster-4"), 2);
}

TEST_F(GangBookTest, AGangWhoseMembersDoNotAllComeIsReleasedAfterItsTimeout) {
  ASSERT_TRUE(Admitted("m0", "job-x", 4, 2));
  ASSERT_EQ(book_.ConfirmBound("m0", T("a"), F(kP5), Gpus(2), PodMeta{}),
            QuotaBook::ConfirmOutcome::kConfirmedAssumed);
  clock_.Advance(kGangTtl + 1);
  common::log::ScopedCapture capture;
  EXPECT_EQ(book_.ExpireAssumed(), 0u);
  EXPECT_EQ(Usage(), 2);  // the bound member keeps its share; the rest went back
  EXPECT_EQ(book_.gangs_expired(), 1u);
  EXPECT_EQ(capture.Count("gang not whole in time"), 1u);
  EXPECT_TRUE(book_.Release("m0"));
  EXPECT_EQ(Usage(), 0);
  EXPECT_FALSE(book_.FindGang("job-x").has_value());
}

TEST_F(GangBookTest, MembersBoundBeforeARestartCountTowardTheGang) {
  PodMeta meta;
  meta.workload = "job-x";
  for (const char* uid : {"m0", "m1"}) {
    ASSERT_EQ(book_.ConfirmBound(uid, T("a"), F(kP5), Gpus(2), meta),
              QuotaBook::ConfirmOutcome::kCharged);
  }
  ASSERT_TRUE(Admitted("m2", "job-x", 4, 2));
  EXPECT_EQ(Usage(), 8);  // two running, two reserved: not four more
  EXPECT_EQ(Held("job-x"), 2);
}

TEST_F(GangBookTest, MembersRecreatedBesideTerminatingOnesAreAdmittedWithTheWholeGangAgain) {
  for (const char* uid : {"m0", "m1"}) ASSERT_TRUE(Admitted(uid, "job-x", 2, 2));
  ASSERT_EQ(Usage(), 4);
  // Both evicted: terminating, they keep their quota but leave the gang.
  book_.DetachFromGang("m0", /*lost=*/true);
  book_.DetachFromGang("m1", /*lost=*/true);
  EXPECT_FALSE(book_.FindGang("job-x").has_value());
  // A recreated member reserves for the whole gang again (4 more), not 2 alone.
  ASSERT_TRUE(Admitted("m0-r1", "job-x", 2, 2));
  EXPECT_EQ(Usage(), 8);
  EXPECT_EQ(Held("job-x"), 2);
  EXPECT_TRUE(book_.Release("m0"));  // the old ones go: the gang is not touched
  EXPECT_TRUE(book_.Release("m1"));
  EXPECT_EQ(book_.FindGang("job-x")->holders, 1);
  EXPECT_EQ(Usage(), 4);
}

TEST_F(GangBookTest, AMemberBeyondTheDeclaredSizeIsReservedAlone) {
  ASSERT_TRUE(Admitted("m0", "job-x", 2, 2));
  ASSERT_TRUE(Admitted("m1", "job-x", 2, 2));
  ASSERT_TRUE(Admitted("m2", "job-x", 2, 2));
  EXPECT_EQ(Usage(), 6);
}

TEST_F(GangBookTest, GangHoldsAgreeWithTheCountersAfterReconcile) {
  ASSERT_TRUE(Admitted("m0", "job-x", 4, 2));
  ASSERT_TRUE(Admitted("m1", "job-x", 4, 2));
  EXPECT_TRUE(book_.Reconcile().empty());
  EXPECT_EQ(Usage(), 8);
  EXPECT_TRUE(book_.Release("m1"));
  EXPECT_TRUE(book_.Reconcile().empty());
  EXPECT_EQ(Usage(), 6);
}

// A gang whose pod sets are pinned to different flavors: a launcher of 1 GPU on g5 and three
// workers of 2 on p5. The first member's filter reserves both parts at once, or nothing when one
// part does not fit; members take their shares on their own flavor; once the gang is whole the
// estimate's leftovers go back on every flavor, and a timeout releases every part.
TEST_F(GangBookTest, AGangAcrossFlavorsReservesEveryPartAtOnceOrNothing) {
  auto member = [&](const std::string& uid, const std::string& flavor, int64_t gpus,
                    int64_t need_here, int64_t need_g5) {
    Ledger::Session session(book_.ledger());
    const IdAmounts need = KnownIdAmounts(Gpus(need_here));
    std::vector<FlavorNeed> elsewhere;
    if (need_g5 > 0) elsewhere.push_back(FlavorNeed{F(kG5), KnownIdAmounts(Gpus(need_g5))});
    return book_.AssumeMember(session, uid, "mpi", 4, T("a"), F(flavor), KnownIdAmounts(Gpus(gpus)),
                              Mode::kBorrowing, kTtl, kGangTtl, PodMeta{}, &need, elsewhere);
  };
  // The g5 part does not fit (5 of 4): nothing is reserved, on p5 either.
  auto refused = member("w0", kP5, 2, 6, 5);
  ASSERT_TRUE(std::holds_alternative<Refusal>(refused));
  EXPECT_EQ(FlavorNames().Name(std::get<Refusal>(refused).flavor), kG5);
  EXPECT_EQ(Usage(kP5), 0);
  EXPECT_EQ(Usage(kG5), 0);
  EXPECT_FALSE(book_.FindGang("mpi") && book_.FindGang("mpi")->holds_quota());
  // It fits: 6 on p5 for the workers and 1 on g5 for the launcher, held before either runs.
  ASSERT_TRUE(std::holds_alternative<Charge>(member("w0", kP5, 2, 6, 1)));
  EXPECT_EQ(Usage(kP5), 6);
  EXPECT_EQ(Usage(kG5), 1);
  std::optional<GangHold> hold = book_.FindGang("mpi");
  ASSERT_TRUE(hold);
  EXPECT_EQ(hold->parts, 2);
  EXPECT_TRUE(hold->holds_quota(F(kG5)));
  // The launcher takes its share on g5; nothing more is charged anywhere.
  ASSERT_TRUE(std::holds_alternative<Charge>(member("launcher", kG5, 1, 1, 0)));
  EXPECT_EQ(Usage(kG5), 1);
  EXPECT_FALSE(book_.FindGang("mpi")->holds_quota(F(kG5)));
  EXPECT_TRUE(book_.Reconcile().empty());
  // The other workers are not all coming: after the timeout the p5 part goes back, and what the
  // members took stays.
  ASSERT_TRUE(std::holds_alternative<Charge>(member("w1", kP5, 2, 0, 0)));
  for (const char* uid : {"w0", "w1"}) {
    ASSERT_EQ(book_.ConfirmBound(uid, T("a"), F(kP5), Gpus(2), PodMeta{}),
              QuotaBook::ConfirmOutcome::kConfirmedAssumed);
  }
  ASSERT_EQ(book_.ConfirmBound("launcher", T("a"), F(kG5), Gpus(1), PodMeta{}),
            QuotaBook::ConfirmOutcome::kConfirmedAssumed);
  clock_.Advance(kGangTtl + 1);
  common::log::ScopedCapture capture;
  (void)book_.ExpireAssumed();
  EXPECT_EQ(book_.gangs_expired(), 1u);
  EXPECT_EQ(Usage(kP5), 4);  // w0's and w1's
  EXPECT_EQ(Usage(kG5), 1);
  EXPECT_TRUE(book_.Reconcile().empty());
  for (const char* uid : {"w0", "w1", "launcher"}) EXPECT_TRUE(book_.Release(uid));
  EXPECT_EQ(Usage(kP5), 0);
  EXPECT_EQ(Usage(kG5), 0);
  EXPECT_EQ(book_.ledger().over_releases(), 0u);
}

TEST_F(QuotaBookTest, AWaitForAClaimedRecordIsCounted) {
  ASSERT_TRUE(Assume("u1", 1));
  EXPECT_EQ(book_.claim_waits(), 0u);  // one thread: never a wait
  // ForEach holds u1's claim while its callback runs; a Find of u1 from another thread must wait
  // for it, and counts the wait before it blocks, which the callback sees.
  std::thread finder;
  bool seen = false;
  book_.ForEach([&](std::string_view uid, const Reservation&) {
    if (uid != "u1") return;
    finder = std::thread([this] { (void)book_.Find("u1"); });
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (book_.claim_waits() == 0 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::yield();
    }
    seen = book_.claim_waits() == 1;
  });
  finder.join();
  EXPECT_TRUE(seen);
  EXPECT_EQ(book_.claim_waits(), 1u);
}

// A burst of new pods larger than the room the tables have left refuses the surplus as "busy"
// (fail closed, with the reason), and the next sweep compacts so that every one of them fits.
TEST(QuotaBookTableTest, AFullTableRefusesAsBusyUntilTheNextSweepCompactsIt) {
  common::FakeClock clock;
  QuotaBook book(PolicyBuilder().Team("burst").Quota(kP5, kGpu, 1'000'000).Build(), &clock);
  std::vector<std::string> busy;
  constexpr int kPods = 16'000;  // past the 32 shards' 384 records each
  for (int i = 0; i < kPods; ++i) {
    const std::string uid = "burst-" + std::to_string(i);
    auto r = book.Assume(uid, T("burst"), F(kP5), Gpus(1), Mode::kBorrowing, kTtl, PodMeta{});
    if (const Refusal* refusal = std::get_if<Refusal>(&r)) {
      ASSERT_EQ(refusal->kind, RefusalKind::kBusy);
      EXPECT_NE(refusal->Explain().find("reservation table is full"), std::string::npos);
      busy.push_back(uid);
    }
  }
  ASSERT_FALSE(busy.empty());
  EXPECT_EQ(book.size(), static_cast<size_t>(kPods) - busy.size());
  (void)book.ExpireAssumed();  // compacts: every table now has room
  for (const std::string& uid : busy) {
    EXPECT_TRUE(std::holds_alternative<Charge>(
        book.Assume(uid, T("burst"), F(kP5), Gpus(1), Mode::kBorrowing, kTtl, PodMeta{})))
        << uid;
  }
  EXPECT_EQ(book.size(), static_cast<size_t>(kPods));
  Ledger::Session s(book.ledger());
  EXPECT_EQ(s.View(T("burst"), F(kP5), ResourceNames().Intern(kGpu)).usage, kPods);
}

}  // namespace
}  // namespace taskgov::scheduler::ledger
