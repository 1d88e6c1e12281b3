#include "scheduler/decisions/rules.h"

#include <gtest/gtest.h>

#include "scheduler/testing/builders.h"

// The rules read a hand-built snapshot: a ledger with usage, a subject and a pending view, and no
// cluster state at all.
namespace taskgov::scheduler::decisions {
namespace {

using ledger::KnownIdAmounts;
using ledger::Ledger;
using ledger::PodMeta;
using ledger::QuotaBook;
using model::FlavorNames;
using model::IdleComputeAllocation;
using model::NameId;
using model::Pod;
using model::PolicyPtr;
using model::QueueingStrategy;
using model::ResourceList;
using model::TeamNames;
using state::PendingPod;
using testing::LenderAndBorrowers;
using testing::PolicyBuilder;

constexpr char kP5[] = "ml.p5.48xlarge";
constexpr char kG5[] = "ml.g5.12xlarge";
constexpr char kGpu[] = "nvidia.com/gpu";

ResourceList Gpus(int64_t n) {
  ResourceList list;
  list.Set(kGpu, n);
  return list;
}

PendingPod Pending(const std::string& key, const std::string& team, int64_t gpus,
                   int64_t created_ms = 1) {
  PendingPod pod;
  pod.uid = key + "-uid";
  pod.key = key;
  pod.team = TeamNames().Intern(team);
  pod.created_ms = created_ms;
  pod.request = Gpus(gpus);
  return pod;
}

// As the pending queues hand it out.
state::PendingRef Ref(PendingPod pod) { return std::make_shared<const PendingPod>(std::move(pod)); }

class RulesTest : public ::testing::Test {
 protected:
  void Start(PolicyPtr policy) { book_ = std::make_unique<QuotaBook>(std::move(policy), &clock_); }
  // Usage of `gpus` for `team` on p5, as a bound pod.
  void Use(const std::string& team, int64_t gpus) {
    book_->ConfirmBound("used-" + std::to_string(++used_), TeamNames().Intern(team),
                        FlavorNames().Intern(kP5), Gpus(gpus), PodMeta{});
  }
  // A snapshot for a pod of `team` asking for `gpus`.
  std::unique_ptr<Snapshot> Take(const std::string& team, int64_t gpus, int64_t created_ms = 10) {
    auto snap = std::make_unique<Snapshot>(*book_);
    pod_.creation_unix_ms = created_ms;
    pod_.uid = "me";
    Subject& me = snap->subject;
    me.pod = &pod_;
    me.team_id = TeamNames().Intern(team);
    me.team = snap->policy.FindTeam(team);
    me.request = Gpus(gpus);
    me.request_ids = KnownIdAmounts(me.request);
    me.need = me.request;
    return snap;
  }
  NameId P5() const { return FlavorNames().Intern(kP5); }

  common::FakeClock clock_;
  std::unique_ptr<QuotaBook> book_;
  Pod pod_;
  int used_ = 0;
};

TEST_F(RulesTest, NothingAheadNeverBlocks) {
  Start(PolicyBuilder().Team("team-a").Quota(kP5, kGpu, 8, 0).Build());
  EXPECT_EQ(QueueOrderBlocks(*Take("team-a", 8), P5(), Ledger::Mode::kWithinNominal), std::nullopt);
}

TEST_F(RulesTest, StrictFifoWaitsBehindTheHeadWhateverItsSize) {
  Start(PolicyBuilder()
            .Team("team-a")
            .Quota(kP5, kGpu, 8, 0)
            .Queueing(QueueingStrategy::kStrictFIFO)
            .Build());
  auto snap = Take("team-a", 1);
  snap->ahead.push_back(Ref(Pending("ns-team-a/huge", "team-a", 64)));  // can never fit
  EXPECT_EQ(QueueOrderBlocks(*snap, P5(), Ledger::Mode::kWithinNominal),
            "waiting behind higher-ranked pod ns-team-a/huge (StrictFIFO)");
}

TEST_F(RulesTest, BestEffortFifoWaitsOnlyWhenThePodsAheadTakeTheRoom) {
  Start(PolicyBuilder().Team("team-a").Quota(kP5, kGpu, 8, 0).Build());
  Use("team-a", 5);
  auto snap = Take("team-a", 2);
  snap->ahead.push_back(Ref(Pending("ns-team-a/too-big", "team-a", 4)));  // cannot fit: passed
  EXPECT_EQ(QueueOrderBlocks(*snap, P5(), Ledger::Mode::kWithinNominal), std::nullopt);
  snap->ahead.push_back(Ref(Pending("ns-team-a/two", "team-a", 2)));  // takes 2 of the 3 left
  EXPECT_EQ(QueueOrderBlocks(*snap, P5(), Ledger::Mode::kWithinNominal),
            "waiting behind higher-ranked pod ns-team-a/two");
}

TEST_F(RulesTest, PodsAheadForAnotherFlavorDoNotBlock) {
  Start(PolicyBuilder().Team("team-a").Quota(kP5, kGpu, 4, 0).Quota(kG5, kGpu, 4, 0).Build());
  auto snap = Take("team-a", 4);
  PendingPod g5_only = Pending("ns-team-a/g5-only", "team-a", 4);
  g5_only.node_selector = {{"node.kubernetes.io/instance-type", kG5}};
  snap->ahead.push_back(Ref(g5_only));
  EXPECT_EQ(QueueOrderBlocks(*snap, P5(), Ledger::Mode::kWithinNominal), std::nullopt);
}

TEST_F(RulesTest, QueueOrderLeavesAPodThatDoesNotFitToTheQuota) {
  Start(PolicyBuilder().Team("team-a").Quota(kP5, kGpu, 4, 0).Build());
  auto snap = Take("team-a", 8);
  snap->ahead.push_back(Ref(Pending("ns-team-a/one", "team-a", 1)));
  EXPECT_EQ(QueueOrderBlocks(*snap, P5(), Ledger::Mode::kWithinNominal), std::nullopt);
}

// A higher-priority pod ahead that does not fit now and may preempt this one holds it back —
// admitting it would only make its victim (issue 34: in-team preemptions a quarter of a second
// after admission) — unless the preemption controller set that pod aside (nothing to free for
// it), or it could never be admitted.
TEST_F(RulesTest, APodAheadThatWouldPreemptItHoldsItBackUntilSetAside) {
  Start(PolicyBuilder().Team("team-a").Quota(kP5, kGpu, 8, 0).Build());
  Use("team-a", 6);
  auto snap = Take("team-a", 2);
  snap->subject.priority = 1;
  PendingPod high = Pending("ns-team-a/high", "team-a", 4);
  high.priority = 100;
  snap->ahead.push_back(Ref(high));
  EXPECT_EQ(QueueOrderBlocks(*snap, P5(), Ledger::Mode::kWithinNominal), std::nullopt)
      << "no controller: nothing is ever preempted";
  PreemptorState state = PreemptorState::kUndecided;
  snap->preemptor_state = [&](std::string_view) { return state; };
  EXPECT_EQ(QueueOrderBlocks(*snap, P5(), Ledger::Mode::kWithinNominal),
            "waiting behind higher-ranked pod ns-team-a/high, which needs this room: pending pod "
            "ns-team-a/high of team-a could preempt it once admitted (InTeamPriority)");
  state = PreemptorState::kPreempting;
  EXPECT_NE(QueueOrderBlocks(*snap, P5(), Ledger::Mode::kWithinNominal), std::nullopt);
  state = PreemptorState::kSetAside;
  EXPECT_EQ(QueueOrderBlocks(*snap, P5(), Ledger::Mode::kWithinNominal), std::nullopt);
  // Beyond the team's ceiling (8): it can never be admitted, and holds nothing back.
  state = PreemptorState::kUndecided;
  high.request = Gpus(9);
  snap->ahead[0] = Ref(high);
  EXPECT_EQ(QueueOrderBlocks(*snap, P5(), Ledger::Mode::kWithinNominal), std::nullopt);
  // Of equal priority: it may not preempt this pod (LowerPriority).
  high.request = Gpus(4);
  high.priority = 1;
  snap->ahead[0] = Ref(high);
  EXPECT_EQ(QueueOrderBlocks(*snap, P5(), Ledger::Mode::kWithinNominal), std::nullopt);
}

TEST_F(RulesTest, FairShareYieldsToALowerShareThatWouldLoseOut) {
  Start(LenderAndBorrowers(4, 3, 1));
  Use("team-b", 3);
  auto snap = Take("team-b", 1);
  snap->heads.emplace().emplace_back(snap->policy.FindTeam("team-c"),
                                     Ref(Pending("ns-team-c/c-0", "team-c", 1)));
  // b after = 4/4/3 = 333‰, c after = 1/4/1 = 250‰, and b's fourth leaves c nothing.
  EXPECT_EQ(FairShareBlocks(*snap, P5()),
            "fair share: team-c (share 0.250) is ahead of team-b (share 0.333)");
}

// A team that does not borrow goes first (Kueue's FairSharingPrioritizeNonBorrowing): the
// lender's pending pod fits within its nominal now, and would not once team-b borrowed the last
// GPU; with two GPUs idle both fit, and nothing waits.
TEST_F(RulesTest, FairShareLetsDemandWithinNominalGoFirst) {
  Start(LenderAndBorrowers(4, 1, 1));
  Use("team-b", 3);  // borrowed from the lender's 4
  auto snap = Take("team-b", 1);
  snap->heads.emplace().emplace_back(snap->policy.FindTeam("lender"),
                                     Ref(Pending("ns-lender/l-0", "lender", 1)));
  EXPECT_EQ(FairShareBlocks(*snap, P5()),
            "fair share: lender is ahead of team-b: its pending pod ns-lender/l-0 fits within its "
            "nominal quota, and team-b would borrow what it needs");
  Start(LenderAndBorrowers(4, 1, 1));
  Use("team-b", 2);
  auto roomy = Take("team-b", 1);
  roomy->heads.emplace().emplace_back(roomy->policy.FindTeam("lender"),
                                      Ref(Pending("ns-lender/l-0", "lender", 1)));
  EXPECT_EQ(FairShareBlocks(*roomy, P5()), std::nullopt);
}

// The lender's pod goes first even when the pool holds none of its quota now (team-b borrowed all
// 4): it reclaims what team-b borrows. The preemption controller asks this of a preemptor whose
// need fits only once its victims are gone: team-b's fifth GPU would only be reclaimed. Before,
// only demand that fitted now counted (issue 34).
TEST_F(RulesTest, DemandWithinNominalGoesFirstEvenWhenItMustReclaimToFit) {
  Start(LenderAndBorrowers(4, 1, 1));
  Use("team-b", 4);
  auto snap = Take("team-b", 1);
  snap->heads.emplace().emplace_back(snap->policy.FindTeam("lender"),
                                     Ref(Pending("ns-lender/l-0", "lender", 2)));
  EXPECT_EQ(FairShareBlocks(*snap, P5()),
            "fair share: lender is ahead of team-b: its pending pod ns-lender/l-0 fits within its "
            "nominal quota, and team-b would borrow what it needs");
}

// A lower share that needs to borrow goes first even when it cannot borrow now: fair-share
// preemption would take back what this pod borrowed (issue 34: admitted, then preempted seconds
// later). Unless it could never be admitted at all (beyond its team's ceiling).
TEST_F(RulesTest, ALowerShareGoesFirstEvenWhenItMustPreemptToFit) {
  PolicyBuilder builder;
  builder.Team("lender", "c").Quota(kP5, kGpu, 4).Team("team-b", "c").Quota(kP5, kGpu, 0);
  builder.Weight(1).Team("team-c", "c").Quota(kP5, kGpu, 0, /*borrow=*/3).Weight(1);
  Start(builder.Build());
  Use("team-b", 3);
  auto snap = Take("team-b", 1);
  snap->heads.emplace().emplace_back(snap->policy.FindTeam("team-c"),
                                     Ref(Pending("ns-team-c/c-0", "team-c", 2)));
  // b after = 4/4 = 1.000, c after = 2/4 = 0.500: c first, though only 1 GPU is free now.
  EXPECT_EQ(FairShareBlocks(*snap, P5()),
            "fair share: team-c (share 0.500) is ahead of team-b (share 1.000)");
  auto beyond = Take("team-b", 1);
  beyond->heads.emplace().emplace_back(beyond->policy.FindTeam("team-c"),
                                       Ref(Pending("ns-team-c/c-big", "team-c", 4)));  // ceiling 3
  EXPECT_EQ(FairShareBlocks(*beyond, P5()), std::nullopt);
}

// Another team's pod that would fit alone but waits behind its own team's pods ahead does not
// hold this pod back: it waits for them (else two teams' pods could each wait for the other).
TEST_F(RulesTest, APodWaitingInItsOwnQueueDoesNotHoldAnotherTeamBack) {
  Start(LenderAndBorrowers(4, 1, 1));
  Use("team-b", 1);
  auto snap = Take("team-b", 2);  // b after: 3/4 = 0.750
  auto& heads = snap->heads.emplace();
  // c-big takes 3 of the 3 idle GPUs first (0.750 after, as b, and newer: b goes first);
  // c-small would fit alone, and go before b (0.500), but not once c-big took its 3: it waits in
  // c's queue, not for b.
  heads.emplace_back(snap->policy.FindTeam("team-c"),
                     Ref(Pending("ns-team-c/c-big", "team-c", 3, /*created_ms=*/20)));
  heads.emplace_back(snap->policy.FindTeam("team-c"),
                     Ref(Pending("ns-team-c/c-small", "team-c", 2)));
  EXPECT_EQ(FairShareBlocks(*snap, P5()), std::nullopt);
  // At the head of its queue, c-small goes first.
  auto alone = Take("team-b", 2);
  alone->heads.emplace().emplace_back(alone->policy.FindTeam("team-c"),
                                      Ref(Pending("ns-team-c/c-small", "team-c", 2)));
  EXPECT_EQ(FairShareBlocks(*alone, P5()),
            "fair share: team-c (share 0.500) is ahead of team-b (share 0.750)");
}

TEST_F(RulesTest, FairShareIgnoresDemandThatStillFitsAfterwards) {
  Start(LenderAndBorrowers(4, 3, 1));
  Use("team-b", 2);
  auto snap = Take("team-b", 1);
  snap->heads.emplace().emplace_back(snap->policy.FindTeam("team-c"),
                                     Ref(Pending("ns-team-c/c-0", "team-c", 1)));
  EXPECT_EQ(FairShareBlocks(*snap, P5()), std::nullopt);
}

TEST_F(RulesTest, FairShareTiesGoToTheOlderPod) {
  Start(LenderAndBorrowers(4, 1, 1));
  // b and c each want the whole pool: both shares after admission are 4/4 = 1000‰.
  auto newer = Take("team-b", 4, /*created_ms=*/10);
  newer->heads.emplace().emplace_back(
      newer->policy.FindTeam("team-c"),
      Ref(Pending("ns-team-c/c-old", "team-c", 4, /*created_ms=*/5)));
  EXPECT_EQ(FairShareBlocks(*newer, P5()),
            "fair share: team-c (share 1.000) is ahead of team-b (share 1.000)");
  auto older = Take("team-b", 4, /*created_ms=*/1);
  older->heads.emplace().emplace_back(
      older->policy.FindTeam("team-c"),
      Ref(Pending("ns-team-c/c-new", "team-c", 4, /*created_ms=*/5)));
  EXPECT_EQ(FairShareBlocks(*older, P5()), std::nullopt);
}

TEST_F(RulesTest, AGangAtTheHeadOfAnotherTeamCountsWithAllItsMembers) {
  Start(LenderAndBorrowers(4, 1, 1));
  // c's head is one member of a 2-pod gang of 1 GPU each: the gang needs 2 of the 4 idle GPUs.
  // b asking 2 leaves c its 2: no contest. b asking 3 leaves 1: enough for the member alone, not
  // for its gang, whose share after admission (2/4) is below b's (3/4).
  auto snap = Take("team-b", 2, /*created_ms=*/10);
  PendingPod member = Pending("ns-team-c/pair-0", "team-c", 1, /*created_ms=*/5);
  member.workload = "kueue/ns-team-c/pair";
  member.workload_size = 2;
  snap->heads.emplace().emplace_back(snap->policy.FindTeam("team-c"), Ref(member));
  EXPECT_EQ(FairShareBlocks(*snap, P5()), std::nullopt);  // 2 + 2 fit the 4 idle: no contest
  auto big = Take("team-b", 3, /*created_ms=*/10);
  big->heads.emplace().emplace_back(big->policy.FindTeam("team-c"), Ref(member));
  EXPECT_EQ(FairShareBlocks(*big, P5()),
            "fair share: team-c (share 0.500) is ahead of team-b (share 0.750)");
}

// Across a cohort tree the heads of other branches compare at the cohort both teams share: the
// sides just below it, with the cohorts' weights (Kueue's tournament).
//   ROOT (holds 4) ── A (weight w) ── team-a (0)
//                  └─ B ──────────── team-b (0, uses 2)
// team-a asks 2 (A after: 2/4 = 500 / w), team-b's head asks 2 (B after: 4/4 = 1000), and only
// one fits. Team weights weigh nothing here: a's is 0.1. With w = 0.25, A's 2000 is above B's
// 1000, so team-b's head goes first.
TEST_F(RulesTest, FairShareAcrossATreeComparesTheCohortsBelowTheSharedOne) {
  for (double w : {1.0, 0.25}) {
    Start(PolicyBuilder()
              .Cohort("ROOT")
              .CohortQuota("ROOT", kP5, kGpu, 4)
              .Cohort("A", "ROOT")
              .CohortWeight("A", w)
              .Cohort("B", "ROOT")
              .Team("team-a", "A")
              .Quota(kP5, kGpu, 0)
              .Weight(0.1)
              .Team("team-b", "B")
              .Quota(kP5, kGpu, 0)
              .Build());
    Use("team-b", 2);
    auto snap = Take("team-a", 2);
    snap->heads.emplace().emplace_back(snap->policy.FindTeam("team-b"),
                                       Ref(Pending("ns-team-b/b-0", "team-b", 2)));
    if (w == 1.0) {
      EXPECT_EQ(FairShareBlocks(*snap, P5()), std::nullopt);
    } else {
      EXPECT_EQ(FairShareBlocks(*snap, P5()),
                "fair share: team-b's cohort B (share 1.000) is ahead of team-a's cohort A (share "
                "2.000)");
    }
  }
}

TEST_F(RulesTest, FairShareIsOffUnderFirstComeFirstServeIdleCompute) {
  PolicyBuilder builder;
  builder.Team("lender", "c").Quota(kP5, kGpu, 4);
  builder.Team("team-b", "c").Quota(kP5, kGpu, 0).Weight(3);
  builder.Team("team-c", "c").Quota(kP5, kGpu, 0).Weight(1);
  builder.IdleCompute(IdleComputeAllocation::kFirstComeFirstServe);
  Start(builder.Build());
  Use("team-b", 3);
  auto snap = Take("team-b", 1);
  snap->heads.emplace().emplace_back(snap->policy.FindTeam("team-c"),
                                     Ref(Pending("ns-team-c/c-0", "team-c", 1)));
  EXPECT_EQ(FairShareBlocks(*snap, P5()), std::nullopt);
}

}  // namespace
}  // namespace taskgov::scheduler::decisions
