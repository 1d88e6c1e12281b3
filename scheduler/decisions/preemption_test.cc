#include "scheduler/decisions/preemption.h"

#include <gtest/gtest.h>

#include <functional>
#include <map>

#include "scheduler/decisions/admission.h"
#include "scheduler/decisions/placement.h"
#include "scheduler/testing/builders.h"
#include "scheduler/testing/fake_kube_actions.h"

namespace taskgov::scheduler::decisions {
namespace {

using ledger::CellKey;
using ledger::Charge;
using ledger::Ledger;
using ledger::PodMeta;
using ledger::QuotaBook;
using model::BorrowWithinCohort;
using model::FairShareStrategy;
using model::FlavorNames;
using model::GangOf;
using model::IdleComputeAllocation;
using model::kUnlimited;
using model::NameId;
using model::Node;
using model::NodePlacement;
using model::NodeSelectorOperator;
using model::NodeSelectorTerm;
using model::PlacementOf;
using model::Pod;
using model::PodPhase;
using model::Policy;
using model::PolicyPtr;
using model::ReclaimPolicy;
using model::ResourceList;
using model::ResourceNames;
using model::TaintEffect;
using model::TeamNames;
using model::TolerationOperator;
using model::WithinTeamPreemption;
using state::ClusterState;
using testing::FakeKubeActions;
using testing::NodeBuilder;
using testing::PodBuilder;
using testing::PolicyBuilder;

constexpr char kP5[] = "ml.p5.48xlarge";
constexpr char kGpu[] = "nvidia.com/gpu";
constexpr int64_t kMinute = 60'000;
constexpr int64_t kNow = 1'700'000'000'000;

NameId T(const std::string& name) { return TeamNames().Intern(name); }
NameId F(const std::string& name) { return FlavorNames().Intern(name); }
NameId R(const std::string& name) { return ResourceNames().Intern(name); }

// ---------------------------------------------------------------------------------------------
// Victim selection over a real ledger (charged like running pods), nodes and candidates.

class SelectTest : public ::testing::Test {
 protected:
  void SetPolicy(PolicyPtr policy) {
    policy_ = std::move(policy);
    ledger_ = std::make_unique<Ledger>(policy_);
  }
  // A node of the flavor; `facts` gives its labels and taints (its name is set here).
  void AddNode(const std::string& name, int gpus, NodeBuilder facts = NodeBuilder("")) {
    NodeState node;
    node.name = name;
    node.allocatable = {{R(kGpu), gpus}};
    nodes_.Add(node);
    Node n = facts.Build();
    n.name = name;
    placements_.push_back(std::make_shared<const NodePlacement>(PlacementOf(n)));
  }
  // A running pod of `team` with `gpus` on `node`, started `age_min` minutes before now.
  Candidate& Running(const std::string& name, const std::string& team, int gpus,
                     const std::string& node, int32_t priority = 0, int64_t age_min = 60) {
    Charge charge;
    std::vector<CellKey> missing;
    {
      Ledger::Session s(*ledger_);
      EXPECT_TRUE(s.ForceCharge(T(team), F(kP5), ResourceList{{kGpu, gpus}}, &charge, &missing));
    }
    Candidate c;
    c.uid = "uid-" + name;
    c.ns = "ns-" + team;
    c.name = name;
    c.team = T(team);
    c.flavor = F(kP5);
    c.priority = priority;
    c.started_ms = kNow - age_min * kMinute;
    c.created_ms = c.started_ms;
    c.admitted_ms = c.started_ms;
    c.node = node;
    c.occupies = {{R(kGpu), gpus}};
    c.charged = {{R(kGpu), gpus}};
    nodes_.Take(node, c.occupies);
    candidates_.push_back(c);
    return candidates_.back();
  }
  static Preemptor Pending(const std::string& name, const std::string& team, int gpus,
                           int32_t priority = 0) {
    Preemptor p;
    p.uid = "uid-" + name;
    p.key = "ns-" + team + "/" + name;
    p.team = T(team);
    p.priority = priority;
    p.created_ms = kNow;
    p.request = ResourceList{{kGpu, gpus}};
    return p;
  }
  // Decides for `p` on every node, or (with `constraints`) only on the nodes that accept a pod
  // with that pod's nodeSelector, tolerations and required affinity.
  Selection Select(const Preemptor& p, const Pod* constraints = nullptr) {
    QuotaSim quota = QuotaSim::FromUsage(*policy_, F(kP5), ledger_->ReadUsage());
    set_ = CandidateSet(candidates_);
    SelectionInput in;
    in.policy = policy_.get();
    in.preemptor = &p;
    in.quota = &quota;
    in.nodes = &nodes_;
    in.candidates = &set_;
    in.now_ms = kNow;
    NodeEligibility eligibility;
    if (constraints != nullptr) {
      eligibility.Compute(constraints->node_selector, constraints->placement.get(), placements_);
      in.eligible = &eligibility.accepts;
    }
    return selector_.Select(in);
  }
  Selection Select(const Preemptor& p, const Pod& constraints) { return Select(p, &constraints); }
  // Two teams of nominal 8; team-a borrows 8 (16 of nominal 8): its oldest pods a0 and a1 fill
  // n1, its most recent a2 and a3 fill n0, tainted nvidia.com/gpu=present:NoSchedule.
  void BorrowedPodsOnATaintedAndAPlainNode();
  // "name:Reason" per victim, in the order chosen.
  std::vector<std::string> Victims(const Selection& s) const {
    std::vector<std::string> out;
    for (const Selection::Victim& v : s.victims) {
      out.push_back(set_.at(v.candidate).name + ":" + std::string(ReasonName(v.reason)));
    }
    return out;
  }

  PolicyPtr policy_;
  std::unique_ptr<Ledger> ledger_;
  FlavorNodes nodes_;
  std::vector<std::shared_ptr<const NodePlacement>> placements_;  // parallel to nodes_.nodes
  std::vector<Candidate> candidates_;
  CandidateSet set_;
  VictimSelector selector_;
};

using Strings = std::vector<std::string>;

PolicyPtr TwoTeams(IdleComputeAllocation idle = IdleComputeAllocation::kFairShare) {
  return PolicyBuilder()
      .Team("team-a", "c")
      .Quota(kP5, kGpu, 8)
      .Team("team-b", "c")
      .Quota(kP5, kGpu, 8)
      .IdleCompute(idle)
      .Build();
}

// Reclaim across a cohort tree (Kueue's hierarchical reclaim): p's quota is held by q, which
// borrows it within p's own branch, and by y, which borrows only what its own branch lends it
// (x's idle 4). Evicting either would free p's GPUs in the root's pool, but y's branch is within
// its subtree quota, so only q's pods are taken.
//   ROOT ── LEFT ── x (4, idle), y (0, runs 4)
//        └─ RIGHT ─ p (4, wants 4), q (0, runs 4)
TEST_F(SelectTest, ReclaimAcrossTheTreeSparesABranchWithinItsQuota) {
  SetPolicy(PolicyBuilder()
                .Cohort("ROOT")
                .Cohort("LEFT", "ROOT")
                .Cohort("RIGHT", "ROOT")
                .Team("x", "LEFT")
                .Quota(kP5, kGpu, 4)
                .Team("y", "LEFT")
                .Quota(kP5, kGpu, 0)
                .Team("p", "RIGHT")
                .Quota(kP5, kGpu, 4)
                .Team("q", "RIGHT")
                .Quota(kP5, kGpu, 0)
                .IdleCompute(IdleComputeAllocation::kFirstComeFirstServe)
                .Build());
  AddNode("n0", 8);
  Running("y0", "y", 2, "n0", /*priority=*/0, /*age_min=*/10);  // the newest: tried first
  Running("y1", "y", 2, "n0", 0, 11);
  Running("q0", "q", 2, "n0", 0, 60);
  Running("q1", "q", 2, "n0", 0, 61);
  Selection s = Select(Pending("p0", "p", 4));
  ASSERT_EQ(s.outcome, Selection::Outcome::kVictims) << s.explanation;
  EXPECT_EQ(Victims(s), (Strings{"q0:Reclaim", "q1:Reclaim"}));
}

TEST_F(SelectTest, FitsNowNeedsNoVictims) {
  SetPolicy(TwoTeams());
  AddNode("n0", 8);
  Running("a0", "team-a", 4, "n0");
  Selection s = Select(Pending("b0", "team-b", 4));
  EXPECT_EQ(s.outcome, Selection::Outcome::kFits);
  EXPECT_EQ(s.node, "n0");
  EXPECT_TRUE(s.victims.empty());
}

TEST_F(SelectTest, ReclaimTakesTheMostRecentBorrowedPodsOnOneNode) {
  SetPolicy(TwoTeams());
  AddNode("n0", 8);
  AddNode("n1", 8);
  Running("a0", "team-a", 4, "n0", 0, 40);
  Running("a1", "team-a", 4, "n0", 0, 30);
  Running("a2", "team-a", 4, "n1", 0, 20);
  Running("a3", "team-a", 4, "n1", 0, 10);  // most recently started
  Selection s = Select(Pending("b0", "team-b", 8, 100));
  ASSERT_EQ(s.outcome, Selection::Outcome::kVictims) << s.explanation;
  EXPECT_EQ(s.node, "n1");
  EXPECT_EQ(Victims(s), (Strings{"a3:Reclaim", "a2:Reclaim"}));
  EXPECT_EQ(s.victims[0].note,
            "Reclaim: team-b reclaims the nvidia.com/gpu on ml.p5.48xlarge it lent, for its pod "
            "(UID uid-b0); team-a uses 16 of nominal 8");
}

// Issue 35: the note names the resource the preemptor is short of. Both teams have cpu and GPU
// quota and team-a borrows both; team-b's pod needs GPUs (its cpu fits within its nominal), so
// the reclaimed resource is nvidia.com/gpu — before, the first borrowed resource, cpu.
TEST_F(SelectTest, TheReclaimNoteNamesTheAcceleratorNotTheFirstResourceBorrowed) {
  SetPolicy(PolicyBuilder()
                .Team("team-a", "c")
                .Quota(kP5, "cpu", 32000)
                .Quota(kP5, kGpu, 8)
                .Team("team-b", "c")
                .Quota(kP5, "cpu", 32000)
                .Quota(kP5, kGpu, 8)
                .Build());
  for (const char* name : {"n0", "n1"}) {
    NodeState node;
    node.name = name;
    node.allocatable = {{R(kGpu), 8}, {R("cpu"), 64000}};
    nodes_.Add(node);
    Node n;
    n.name = name;
    placements_.push_back(std::make_shared<const NodePlacement>(PlacementOf(n)));
  }
  for (int i = 0; i < 2; ++i) {
    Candidate& c =
        Running("a" + std::to_string(i), "team-a", 8, "n" + std::to_string(i), 0, 10 + i);
    nodes_.Take(c.node, {{R("cpu"), 24000}});
    c.occupies.push_back({R("cpu"), 24000});
    Charge charge;
    std::vector<CellKey> missing;
    Ledger::Session s(*ledger_);
    EXPECT_TRUE(
        s.ForceCharge(T("team-a"), F(kP5), ResourceList{{"cpu", 24000}}, &charge, &missing));
    c.charged.push_back({R("cpu"), 24000});
  }
  Preemptor p = Pending("b0", "team-b", 8, 100);
  p.request = ResourceList{{"cpu", 8000}, {kGpu, 8}};
  Selection s = Select(p);
  ASSERT_EQ(s.outcome, Selection::Outcome::kVictims) << s.explanation;
  ASSERT_FALSE(s.victims.empty());
  EXPECT_EQ(s.victims[0].note,
            "Reclaim: team-b reclaims the nvidia.com/gpu on ml.p5.48xlarge it lent, for its pod "
            "(UID uid-b0); team-a uses 16 of nominal 8");
}

// Issue 35, victim choice by lost work: pods alike in every rule, started together, differ only
// in their last checkpoint (taskgov.io/last-checkpoint): the ones that lose the least work go.
TEST_F(SelectTest, OfPodsAlikeTheOnesThatLoseTheLeastWorkSinceTheirCheckpointGo) {
  SetPolicy(TwoTeams());
  AddNode("n0", 16);
  for (int i = 0; i < 4; ++i) {
    Candidate& c = Running("a" + std::to_string(i), "team-a", 4, "n0", 0, /*age_min=*/60);
    c.checkpoint_ms = kNow - (i == 2 ? 1 : i == 0 ? 3 : 40 + i) * kMinute;
  }
  Selection s = Select(Pending("b0", "team-b", 8, 100));
  ASSERT_EQ(s.outcome, Selection::Outcome::kVictims) << s.explanation;
  EXPECT_EQ(Victims(s), (Strings{"a2:Reclaim", "a0:Reclaim"}));
}

// Without checkpoints the most recently started go (what they lose is the time since they
// started), as Kueue orders; a checkpoint a minute ago makes an old pod the cheapest.
TEST_F(SelectTest, WithoutCheckpointsTheMostRecentlyStartedGoAndACheckpointCanOutweighIt) {
  for (const bool checkpointed : {false, true}) {
    SCOPED_TRACE(checkpointed ? "a0 checkpointed a minute ago" : "no checkpoints");
    candidates_.clear();
    SetPolicy(TwoTeams());
    AddNode("n" + std::string(checkpointed ? "1" : "0"), 16);
    const std::string node = checkpointed ? "n1" : "n0";
    Candidate& a0 = Running("a0", "team-a", 4, node, 0, 50);
    if (checkpointed) a0.checkpoint_ms = kNow - kMinute;
    Running("a1", "team-a", 4, node, 0, 40);
    Running("a2", "team-a", 4, node, 0, 30);
    Running("a3", "team-a", 4, node, 0, 20);
    Selection s = Select(Pending("b0", "team-b", 8, 100));
    ASSERT_EQ(s.outcome, Selection::Outcome::kVictims) << s.explanation;
    EXPECT_EQ(Victims(s), checkpointed ? (Strings{"a0:Reclaim", "a3:Reclaim"})
                                       : (Strings{"a3:Reclaim", "a2:Reclaim"}));
  }
}

TEST_F(SelectTest, APodWithinItsTeamsNominalIsNeverEvictedForAnotherTeam) {
  SetPolicy(TwoTeams());
  AddNode("n0", 8);
  Running("a0", "team-a", 8, "n0", /*priority=*/0);  // team-a is exactly at its nominal
  Selection s = Select(Pending("b0", "team-b", 8, 1000));
  EXPECT_EQ(s.outcome, Selection::Outcome::kNoVictims);
  EXPECT_TRUE(s.victims.empty());
  EXPECT_NE(s.explanation.find("1 its team is within its nominal quota"), std::string::npos)
      << s.explanation;
}

TEST_F(SelectTest, OnlyThePartAboveNominalIsReclaimed) {
  // team-a uses 12 of nominal 8; team-c sits within its nominal.
  auto world = [&](int b_gpus) {
    SetPolicy(PolicyBuilder()
                  .Team("team-a", "c")
                  .Quota(kP5, kGpu, 8)
                  .Team("team-b", "c")
                  .Quota(kP5, kGpu, 8)
                  .Team("team-c", "c")
                  .Quota(kP5, kGpu, 4, 0)
                  .Build());
    nodes_ = FlavorNodes();
    placements_.clear();
    candidates_.clear();
    AddNode("n0", 8);
    AddNode("n1", 8);
    Running("a0", "team-a", 4, "n0", 0, 50);
    Running("a1", "team-a", 4, "n0", 0, 40);
    Running("a2", "team-a", 4, "n1", 0, 30);
    Running("c0", "team-c", 4, "n1", 0, 30);
    return Select(Pending("b0", "team-b", b_gpus));
  };
  // 4 GPUs: team-a gives back the 4 it borrowed (its most recent pod), on n1.
  Selection s = world(4);
  ASSERT_EQ(s.outcome, Selection::Outcome::kVictims) << s.explanation;
  EXPECT_EQ(Victims(s), (Strings{"a2:Reclaim"}));
  // 8 GPUs on one node: n0 would need a1 too, but team-a is back at its nominal by then, and
  // team-c's pod on n1 is within its nominal. Nothing goes.
  Selection none = world(8);
  EXPECT_EQ(none.outcome, Selection::Outcome::kNoVictims);
  EXPECT_NE(none.explanation.find("its team is within its nominal quota"), std::string::npos)
      << none.explanation;
}

// Ordering rules, each in isolation: which single victim goes first.
struct OrderCase {
  struct Pod {
    std::string name;
    std::string team;
    int32_t priority;
    int64_t age_min;       // started this many minutes ago
    int64_t admitted_min;  // admitted this many minutes ago (-1: when it started)
  };
  std::string name;
  IdleComputeAllocation idle;
  std::vector<Pod> pods;  // 1 GPU each, one node each
  std::string expected;   // the first victim
};
void PrintTo(const OrderCase& c, std::ostream* os) { *os << c.name; }

class OrderTest : public SelectTest, public ::testing::WithParamInterface<OrderCase> {};

TEST_P(OrderTest, PicksTheFirstCandidateInOrder) {
  const OrderCase& c = GetParam();
  // A 6-GPU pool, full: the lender (2) and team-own (4) lend, team-x and team-y borrow. The
  // preemptor (team-own, priority 100, 1 GPU) is within its nominal: it may reclaim, and take
  // team-own's own lower-priority pods.
  SetPolicy(PolicyBuilder()
                .Team("lender", "c")
                .Quota(kP5, kGpu, 2)
                .Team("team-own", "c")
                .Quota(kP5, kGpu, 4, /*borrow=*/0)
                .Team("team-x", "c")
                .Quota(kP5, kGpu, 0)
                .Team("team-y", "c")
                .Quota(kP5, kGpu, 0)
                .IdleCompute(c.idle)
                .Build());
  int node = 0;
  for (const OrderCase::Pod& pod : c.pods) {
    const std::string n = "n" + std::to_string(node++);
    AddNode(n, 1);
    Candidate& cand = Running(pod.name, pod.team, 1, n, pod.priority, pod.age_min);
    if (pod.admitted_min >= 0) cand.admitted_ms = kNow - pod.admitted_min * kMinute;
  }
  AddNode("free", 1);
  Selection s = Select(Pending("p", "team-own", 1, 100));
  ASSERT_EQ(s.outcome, Selection::Outcome::kVictims) << s.explanation;
  ASSERT_EQ(s.victims.size(), 1u);
  EXPECT_EQ(set_.at(s.victims[0].candidate).name, c.expected);
}

const std::vector<OrderCase::Pod> kLenderFull = {{"lender-0", "lender", 0, 1, -1},
                                                 {"lender-1", "lender", 0, 1, -1}};
std::vector<OrderCase::Pod> With(std::vector<OrderCase::Pod> pods,
                                 const std::vector<OrderCase::Pod>& more) {
  pods.insert(pods.end(), more.begin(), more.end());
  return pods;
}

INSTANTIATE_TEST_SUITE_P(
    Rules, OrderTest,
    ::testing::Values(
        // team-own's own pods are of lower priority and more recent, yet other teams go first.
        OrderCase{"OtherTeamsBeforeOwn",
                  IdleComputeAllocation::kFairShare,
                  {{"own-0", "team-own", 0, 1, -1},
                   {"own-1", "team-own", 0, 1, -1},
                   {"x0", "team-x", 50, 100, -1},
                   {"x1", "team-x", 50, 50, -1},
                   {"x2", "team-x", 50, 100, -1},
                   {"x3", "team-x", 50, 100, -1}},
                  "x1"},
        // team-x borrows 3 (share 0.500), team-y 1 (share 0.166): x gives first, though y0 is the
        // most recent pod.
        OrderCase{"HighestShareFirst", IdleComputeAllocation::kFairShare,
                  With({{"x0", "team-x", 0, 100, -1},
                        {"x1", "team-x", 0, 90, -1},
                        {"x2", "team-x", 0, 80, -1},
                        {"y0", "team-y", 0, 1, -1}},
                       kLenderFull),
                  "x2"},
        // First come, first served: the last admitted gives back first, however long ago it
        // started.
        OrderCase{"MostRecentlyAdmittedFirstUnderFcfs", IdleComputeAllocation::kFirstComeFirstServe,
                  With({{"x0", "team-x", 0, 100, 100},
                        {"x1", "team-x", 0, 90, 90},
                        {"x2", "team-x", 0, 80, 80},
                        {"y0", "team-y", 0, 200, 5}},
                       kLenderFull),
                  "y0"},
        OrderCase{"LowerPriorityFirst", IdleComputeAllocation::kFairShare,
                  With({{"x-high", "team-x", 90, 1, -1},
                        {"x-low", "team-x", 10, 100, -1},
                        {"own-0", "team-own", 0, 1, -1},
                        {"own-1", "team-own", 0, 1, -1}},
                       kLenderFull),
                  "x-low"},
        OrderCase{"MostRecentlyStartedFirst", IdleComputeAllocation::kFairShare,
                  With({{"x-old", "team-x", 0, 100, -1},
                        {"x-new", "team-x", 0, 5, -1},
                        {"own-0", "team-own", 0, 1, -1},
                        {"own-1", "team-own", 0, 1, -1}},
                       kLenderFull),
                  "x-new"},
        OrderCase{"UidLast", IdleComputeAllocation::kFairShare,
                  With({{"x-b", "team-x", 0, 5, -1},
                        {"x-a", "team-x", 0, 5, -1},
                        {"own-0", "team-own", 0, 1, -1},
                        {"own-1", "team-own", 0, 1, -1}},
                       kLenderFull),
                  "x-a"}),
    [](const ::testing::TestParamInfo<OrderCase>& info) { return info.param.name; });

TEST_F(SelectTest, InTeamPreemptionTakesTheLowestPriorityMostRecentPod) {
  SetPolicy(PolicyBuilder().Team("team-a", "c").Quota(kP5, kGpu, 8, /*borrow=*/0).Build());
  AddNode("n0", 8);
  Running("train-old", "team-a", 2, "n0", 10, 50);
  Running("train-new", "team-a", 2, "n0", 10, 20);
  Running("mid", "team-a", 4, "n0", 50, 5);
  Selection s = Select(Pending("urgent", "team-a", 2, 100));
  ASSERT_EQ(s.outcome, Selection::Outcome::kVictims) << s.explanation;
  EXPECT_EQ(Victims(s), (Strings{"train-new:InTeamPriority"}));
  EXPECT_EQ(s.victims[0].note,
            "InTeamPriority: preempted by higher-priority pod ns-team-a/urgent of team-a "
            "(priority 100 > 10), which needs nvidia.com/gpu: 2 on ml.p5.48xlarge");
}

TEST_F(SelectTest, WithinTeamPolicies) {
  struct Case {
    std::string name;
    WithinTeamPreemption policy;
    int32_t victim_priority;
    bool victim_newer;
    bool allowed;
  };
  const Case cases[] = {
      {"NeverKeepsLower", WithinTeamPreemption::kNever, 1, false, false},
      {"LowerPriorityTakesLower", WithinTeamPreemption::kLowerPriority, 1, false, true},
      {"LowerPriorityKeepsEqual", WithinTeamPreemption::kLowerPriority, 50, true, false},
      {"NewerEqualTakesNewerEqual", WithinTeamPreemption::kLowerOrNewerEqualPriority, 50, true,
       true},
      {"NewerEqualKeepsOlderEqual", WithinTeamPreemption::kLowerOrNewerEqualPriority, 50, false,
       false},
  };
  for (const Case& c : cases) {
    PolicyBuilder builder;
    builder.Team("team-a", "c").Quota(kP5, kGpu, 8, 0);
    builder.mutable_policy().teams.back().within_team = c.policy;
    SetPolicy(builder.Build());
    nodes_ = FlavorNodes();
    placements_.clear();
    candidates_.clear();
    AddNode("n0", 8);
    Candidate& v = Running("v", "team-a", 8, "n0", c.victim_priority);
    v.created_ms = c.victim_newer ? kNow + 1 : kNow - 1;
    Selection s = Select(Pending("p", "team-a", 8, 50));
    EXPECT_EQ(s.outcome == Selection::Outcome::kVictims, c.allowed)
        << c.name << ": " << s.explanation;
  }
}

TEST_F(SelectTest, ReclaimPoliciesAndReclaimableTeams) {
  struct Case {
    std::string name;
    ReclaimPolicy reclaim;
    bool victim_reclaimable;
    int32_t victim_priority;
    bool allowed;
  };
  const Case cases[] = {
      {"AnyTakesEqualPriority", ReclaimPolicy::kAny, true, 50, true},
      {"AnyTakesHigherPriority", ReclaimPolicy::kAny, true, 90, true},
      {"LowerPriorityTakesLower", ReclaimPolicy::kLowerPriority, true, 10, true},
      {"LowerPriorityKeepsEqual", ReclaimPolicy::kLowerPriority, true, 50, false},
      {"NeverKeepsAll", ReclaimPolicy::kNever, true, 10, false},
      {"NotReclaimableIsKept", ReclaimPolicy::kAny, false, 10, false},
  };
  for (const Case& c : cases) {
    PolicyBuilder builder;
    builder.Team("team-a", "c").Quota(kP5, kGpu, 0);
    builder.mutable_policy().teams.back().reclaimable = c.victim_reclaimable;
    builder.Team("team-b", "c").Quota(kP5, kGpu, 8);
    builder.mutable_policy().teams.back().reclaim = c.reclaim;
    SetPolicy(builder.Build());
    nodes_ = FlavorNodes();
    placements_.clear();
    candidates_.clear();
    AddNode("n0", 8);
    Running("a0", "team-a", 8, "n0", c.victim_priority);
    Selection s = Select(Pending("b0", "team-b", 8, 50));
    EXPECT_EQ(s.outcome == Selection::Outcome::kVictims, c.allowed)
        << c.name << ": " << s.explanation;
  }
}

TEST_F(SelectTest, GreedyThenDropsVictimsNotNeeded) {
  SetPolicy(TwoTeams());
  AddNode("n0", 16);
  Running("a-big", "team-a", 8, "n0", 0, 50);
  Running("a-small", "team-a", 1, "n0", 0, 10);  // first in order, not needed in the end
  Running("a-rest", "team-a", 7, "n0", 0, 60);
  // b needs 8: greedy takes a-small (1), then a-big (8); a-small is then dropped.
  Selection s = Select(Pending("b0", "team-b", 8));
  ASSERT_EQ(s.outcome, Selection::Outcome::kVictims) << s.explanation;
  EXPECT_EQ(Victims(s), (Strings{"a-big:Reclaim"}));
}

TEST_F(SelectTest, PrefersFreeingOneNodeOverAScatterThatFreesNone) {
  SetPolicy(PolicyBuilder()
                .Team("team-a", "c")
                .Quota(kP5, kGpu, 4)
                .Team("team-b", "c")
                .Quota(kP5, kGpu, 8)
                .Team("team-c", "c")
                .Quota(kP5, kGpu, 12, 0)
                .Build());
  AddNode("n1", 8);
  AddNode("n2", 8);
  AddNode("n3", 8);
  // team-a borrows 8 (12 of nominal 4): its most recent pods are spread over n1 and n2, next to
  // team-c's own pods that nobody may touch; its oldest four fill n3.
  for (int i = 0; i < 2; ++i) Running("a-n1-" + std::to_string(i), "team-a", 1, "n1", 0, 1 + i);
  for (int i = 0; i < 2; ++i) Running("a-n2-" + std::to_string(i), "team-a", 1, "n2", 0, 3 + i);
  Running("c-n1", "team-c", 6, "n1", 0, 100);
  Running("c-n2", "team-c", 6, "n2", 0, 100);
  for (int i = 0; i < 4; ++i) Running("a-n3-" + std::to_string(i), "team-a", 1, "n3", 0, 10 + i);
  for (int i = 0; i < 4; ++i) Running("a-n3-old-" + std::to_string(i), "team-a", 1, "n3", 0, 50);
  Selection s = Select(Pending("b0", "team-b", 4));
  ASSERT_EQ(s.outcome, Selection::Outcome::kVictims) << s.explanation;
  EXPECT_EQ(s.node, "n3");
  ASSERT_EQ(s.victims.size(), 4u);
  for (const Selection::Victim& v : s.victims) EXPECT_EQ(set_.at(v.candidate).node, "n3");
}

TEST_F(SelectTest, NoNodeCanBeFreedMeansNoVictims) {
  SetPolicy(TwoTeams());
  AddNode("n0", 4);
  AddNode("n1", 4);
  Running("a0", "team-a", 4, "n0");
  Running("a1", "team-a", 4, "n1");
  Running("a2", "team-a", 4, "n1");  // (over-packed node: a stale cache)
  Selection s = Select(Pending("b0", "team-b", 8));
  EXPECT_EQ(s.outcome, Selection::Outcome::kNoVictims);
  EXPECT_NE(s.explanation.find("no ml.p5.48xlarge node can be freed enough"), std::string::npos)
      << s.explanation;
}

// ---- placement: victims only where the preemptor may run ----

// What the GPU nodes of a production cluster carry; the pods that tolerate it.
NodeBuilder GpuTainted() {
  return NodeBuilder("").Taint("nvidia.com/gpu", "present", TaintEffect::kNoSchedule);
}
PodBuilder GpuTolerating() {
  return PodBuilder("").Toleration("nvidia.com/gpu", TolerationOperator::kExists);
}

void SelectTest::BorrowedPodsOnATaintedAndAPlainNode() {
  SetPolicy(TwoTeams());
  AddNode("n0", 8, GpuTainted());
  AddNode("n1", 8);
  Running("a0", "team-a", 4, "n1", 0, 40);
  Running("a1", "team-a", 4, "n1", 0, 30);
  Running("a2", "team-a", 4, "n0", 0, 20);
  Running("a3", "team-a", 4, "n0", 0, 10);
}

TEST_F(SelectTest, TheOnlyNodeWithVictimsCarriesAnUntoleratedTaint) {
  // team-a borrows everything it runs: a0 and a1 fill n0, which is tainted. n1 is full with
  // team-c's pod, within its nominal: nobody may take it for another team.
  SetPolicy(PolicyBuilder()
                .Team("team-a", "c")
                .Quota(kP5, kGpu, 0)
                .Team("team-b", "c")
                .Quota(kP5, kGpu, 8)
                .Team("team-c", "c")
                .Quota(kP5, kGpu, 8)
                .Build());
  AddNode("n0", 8, GpuTainted());
  AddNode("n1", 8);
  Running("a0", "team-a", 4, "n0", 0, 20);
  Running("a1", "team-a", 4, "n0", 0, 10);
  Running("c0", "team-c", 8, "n1", 0, 30);
  const Preemptor b0 = Pending("b0", "team-b", 8, 100);

  // Blind to placement, n0 would be emptied for b0 — which the scheduler never puts there.
  Selection blind = Select(b0);
  ASSERT_EQ(blind.outcome, Selection::Outcome::kVictims) << blind.explanation;
  EXPECT_EQ(blind.node, "n0");

  Selection s = Select(b0, PodBuilder("b0").Build());
  EXPECT_EQ(s.outcome, Selection::Outcome::kNoVictims);
  EXPECT_TRUE(s.victims.empty());
  EXPECT_TRUE(s.node.empty());
  EXPECT_EQ(s.explanation,
            "no ml.p5.48xlarge node can be freed enough for ns-team-b/b0 (nvidia.com/gpu: 8) by "
            "pods it may preempt (1 of 2 nodes refuse it: taints, nodeSelector or required node "
            "affinity); candidates: 1 its team is within its nominal quota, 2 allowed");

  // Tolerating the taint makes n0 a target again.
  Selection tolerated = Select(b0, GpuTolerating().Build());
  ASSERT_EQ(tolerated.outcome, Selection::Outcome::kVictims) << tolerated.explanation;
  EXPECT_EQ(tolerated.node, "n0");
  EXPECT_EQ(Victims(tolerated), (Strings{"a1:Reclaim", "a0:Reclaim"}));
  // A toleration of another key, or of another effect, does not.
  EXPECT_EQ(
      Select(b0, PodBuilder("").Toleration("aws.amazon.com/neuron", TolerationOperator::kExists))
          .outcome,
      Selection::Outcome::kNoVictims);
  EXPECT_EQ(Select(b0, PodBuilder("").Toleration("nvidia.com/gpu", TolerationOperator::kExists, "",
                                                 TaintEffect::kNoExecute))
                .outcome,
            Selection::Outcome::kNoVictims);
}

TEST_F(SelectTest, AnUntoleratedTaintSendsTheVictimsToAnotherNode) {
  // b0 needs 4: the least deep set is a3 alone on n0; on n1 it is a1.
  BorrowedPodsOnATaintedAndAPlainNode();
  const Preemptor b0 = Pending("b0", "team-b", 4, 100);

  Selection tolerated = Select(b0, GpuTolerating().Build());
  ASSERT_EQ(tolerated.outcome, Selection::Outcome::kVictims) << tolerated.explanation;
  EXPECT_EQ(tolerated.node, "n0");
  EXPECT_EQ(Victims(tolerated), Strings{"a3:Reclaim"});

  Selection s = Select(b0, PodBuilder("b0").Build());
  ASSERT_EQ(s.outcome, Selection::Outcome::kVictims) << s.explanation;
  EXPECT_EQ(s.node, "n1");
  EXPECT_EQ(Victims(s), Strings{"a1:Reclaim"});
  // PreferNoSchedule keeps no pod off: with only that taint, n0 is a target again.
  placements_[0] = std::make_shared<const NodePlacement>(PlacementOf(
      NodeBuilder("n0").Taint("nvidia.com/gpu", "present", TaintEffect::kPreferNoSchedule)));
  EXPECT_EQ(Select(b0, PodBuilder("b0").Build()).node, "n0");
}

TEST_F(SelectTest, ThePodsOnTheOneNodeItMayUseGoEvenWhenMoreRecentOnesRunElsewhere) {
  // b0 needs 8 and may only use n1. Taking the preferred a3 and a2 first would put team-a back
  // at its nominal and leave n1 full; walking n1 room first, a1 and a0 go — each while team-a is
  // still above its nominal.
  BorrowedPodsOnATaintedAndAPlainNode();
  Selection s = Select(Pending("b0", "team-b", 8, 100), PodBuilder("b0").Build());
  ASSERT_EQ(s.outcome, Selection::Outcome::kVictims) << s.explanation;
  EXPECT_EQ(s.node, "n1");
  EXPECT_EQ(Victims(s), (Strings{"a1:Reclaim", "a0:Reclaim"}));
}

TEST_F(SelectTest, QuotaIsReclaimedFromPodsWhereverTheyRun) {
  // b0 needs the pool's GPUs back and room on a node it may use. team-a's borrowed pods run on
  // tainted n0, where b0 cannot go; n1 is empty. Evicting a1 frees the quota; b0 runs on n1.
  SetPolicy(PolicyBuilder()
                .Team("team-a", "c")
                .Quota(kP5, kGpu, 4)
                .Team("team-b", "c")
                .Quota(kP5, kGpu, 8)
                .Build());
  AddNode("n0", 8, GpuTainted());
  AddNode("n1", 8);
  Running("a0", "team-a", 4, "n0", 0, 40);
  Running("a1", "team-a", 4, "n0", 0, 30);
  Selection s = Select(Pending("b0", "team-b", 8, 100), PodBuilder("b0").Build());
  ASSERT_EQ(s.outcome, Selection::Outcome::kVictims) << s.explanation;
  EXPECT_EQ(s.node, "n1");
  EXPECT_EQ(Victims(s), Strings{"a1:Reclaim"});
}

TEST_F(SelectTest, NodeSelectorAndAffinityPinThePodToOneNode) {
  // Three nodes, each holding two of team-a's borrowed pods; b0 needs a whole node. Unpinned,
  // the node with the most recent pods (n2) goes.
  auto world = [&] {
    SetPolicy(PolicyBuilder()
                  .Team("team-a", "c")
                  .Quota(kP5, kGpu, 4)
                  .Team("team-b", "c")
                  .Quota(kP5, kGpu, 24)
                  .Build());
    nodes_ = FlavorNodes();
    placements_.clear();
    candidates_.clear();
    for (int n = 0; n < 3; ++n) {
      const std::string node = "n" + std::to_string(n);
      AddNode(node, 8, NodeBuilder("").Label("zone", n == 1 ? "b" : "a"));
      for (int i = 0; i < 2; ++i) {
        Running("a-" + node + "-" + std::to_string(i), "team-a", 4, node, 0, 30 - 10 * n - i);
      }
    }
  };
  const Preemptor b0 = Pending("b0", "team-b", 8, 100);
  world();
  Selection free = Select(b0, PodBuilder("b0").Build());
  ASSERT_EQ(free.outcome, Selection::Outcome::kVictims) << free.explanation;
  EXPECT_EQ(free.node, "n2");

  world();
  Selection by_selector = Select(b0, PodBuilder("b0").NodeSelector("zone", "b").Build());
  ASSERT_EQ(by_selector.outcome, Selection::Outcome::kVictims) << by_selector.explanation;
  EXPECT_EQ(by_selector.node, "n1");
  EXPECT_EQ(Victims(by_selector), (Strings{"a-n1-1:Reclaim", "a-n1-0:Reclaim"}));

  world();
  Selection by_affinity = Select(b0, PodBuilder("b0").PinnedTo({"n0"}).Build());
  ASSERT_EQ(by_affinity.outcome, Selection::Outcome::kVictims) << by_affinity.explanation;
  EXPECT_EQ(by_affinity.node, "n0");
  EXPECT_EQ(Victims(by_affinity), (Strings{"a-n0-1:Reclaim", "a-n0-0:Reclaim"}));

  // Affinity by label: zone NotIn [a] is n1 again.
  world();
  NodeSelectorTerm not_a;
  not_a.match_expressions.push_back({"zone", NodeSelectorOperator::kNotIn, {"a"}});
  Selection by_label = Select(b0, PodBuilder("b0").AffinityTerm(not_a).Build());
  EXPECT_EQ(by_label.node, "n1");

  // Pinned to a node that the selector refuses: nowhere, nothing goes.
  world();
  Selection nowhere =
      Select(b0, PodBuilder("b0").NodeSelector("zone", "b").PinnedTo({"n0"}).Build());
  EXPECT_EQ(nowhere.outcome, Selection::Outcome::kNoVictims);
  EXPECT_TRUE(nowhere.victims.empty());
}

TEST_F(SelectTest, FitsNowOnlyOnANodeThePodMayUse) {
  SetPolicy(TwoTeams());
  AddNode("n0", 8);
  AddNode("n1", 8, NodeBuilder("").Label("zone", "b"));
  Running("a0", "team-a", 4, "n1");
  const Preemptor b0 = Pending("b0", "team-b", 4);
  Selection s = Select(b0, PodBuilder("b0").NodeSelector("zone", "b").Build());
  EXPECT_EQ(s.outcome, Selection::Outcome::kFits);
  EXPECT_EQ(s.node, "n1");  // n0 is emptier, but not the pod's
}

TEST_F(SelectTest, AGangGoesWholeOrNotAtAll) {
  // Team-a's two lone pods on n0 and its gang's two members on n1, started so many minutes ago.
  auto world = [&](PolicyPtr policy, int64_t job_0_age_min, int64_t job_1_age_min) {
    SetPolicy(std::move(policy));
    nodes_ = FlavorNodes();
    candidates_.clear();
    AddNode("n0", 8);
    AddNode("n1", 8);
    Running("a-solo", "team-a", 4, "n0", 0, 100);
    Running("a-x", "team-a", 4, "n0", 0, 90);
    Running("job-0", "team-a", 4, "n1", 0, job_0_age_min).gang = "owner/job";
    Running("job-1", "team-a", 4, "n1", 0, job_1_age_min).gang = "owner/job";
  };
  world(TwoTeams(), 5, 5);
  // The gang comes first (most recent); it is evicted whole, both pods.
  Selection s = Select(Pending("b0", "team-b", 4));
  ASSERT_EQ(s.outcome, Selection::Outcome::kVictims) << s.explanation;
  EXPECT_EQ(Victims(s), (Strings{"job-0:Reclaim", "job-1:Reclaim"}));
  EXPECT_NE(s.victims[0].note.find("evicted with its gang of 2 pods"), std::string::npos);

  // With a minimum runtime of 10 minutes the gang's second member is 1 minute old.
  auto with_young_member = [&](PolicyBuilder builder) {
    builder.mutable_policy().preemption.minimum_runtime_seconds = 600;
    world(builder.Build(), 30, 1);
  };
  // A gang with one member that may not go (too young for a preemption by priority) is not a
  // candidate at all.
  PolicyBuilder alone;
  alone.Team("team-a", "c").Quota(kP5, kGpu, 16);
  with_young_member(alone);
  Selection s2 = Select(Pending("a-high", "team-a", 4, 10));
  ASSERT_EQ(s2.outcome, Selection::Outcome::kVictims) << s2.explanation;
  EXPECT_EQ(Victims(s2), (Strings{"a-x:InTeamPriority"}));

  // A team taking back its nominal quota does not wait for the minimum runtime: the gang, most
  // recent, goes whole, its young member too.
  PolicyBuilder lending;
  lending.Team("team-a", "c").Quota(kP5, kGpu, 8).Team("team-b", "c").Quota(kP5, kGpu, 8);
  with_young_member(lending);
  Selection s3 = Select(Pending("b0", "team-b", 4));
  ASSERT_EQ(s3.outcome, Selection::Outcome::kVictims) << s3.explanation;
  EXPECT_EQ(Victims(s3), (Strings{"job-0:Reclaim", "job-1:Reclaim"}));
}

// A gang spread over two nodes goes whole, though the room of its member on one node would do.
TEST_F(SelectTest, AGangAcrossNodesGoesWhole) {
  SetPolicy(TwoTeams());
  AddNode("n0", 8);
  AddNode("n1", 8);
  Running("a-solo-0", "team-a", 4, "n0", 0, 100);
  Running("a-solo-1", "team-a", 4, "n1", 0, 100);
  Running("job-0", "team-a", 4, "n0", 0, 5).gang = "kueue/ns/train";
  Running("job-1", "team-a", 4, "n1", 0, 5).gang = "kueue/ns/train";
  Selection s = Select(Pending("b0", "team-b", 4));
  ASSERT_EQ(s.outcome, Selection::Outcome::kVictims) << s.explanation;
  EXPECT_EQ(Victims(s), (Strings{"job-0:Reclaim", "job-1:Reclaim"}));
  EXPECT_NE(s.victims[1].note.find("evicted with its gang of 2 pods"), std::string::npos);
}

// The minimum runtime protects a young pod from a preemption by priority; a team taking back its
// nominal quota does not wait for it (its guarantee): the most recent goes, as without one.
TEST_F(SelectTest, MinimumRuntimeProtectsYoungPodsButNotFromAReclaim) {
  PolicyBuilder builder;
  builder.Team("team-a", "c").Quota(kP5, kGpu, 8).Team("team-b", "c").Quota(kP5, kGpu, 8);
  builder.mutable_policy().preemption.minimum_runtime_seconds = 600;
  SetPolicy(builder.Build());
  AddNode("n0", 8);
  AddNode("n1", 8);
  Running("a-old", "team-a", 8, "n0", 0, 60);
  Running("a-young", "team-a", 8, "n1", 0, 5);  // most recent, but younger than 10 minutes
  Selection by_priority = Select(Pending("a-high", "team-a", 8, 10));
  ASSERT_EQ(by_priority.outcome, Selection::Outcome::kVictims) << by_priority.explanation;
  EXPECT_EQ(Victims(by_priority), (Strings{"a-old:InTeamPriority"}));
  Selection reclaim = Select(Pending("b0", "team-b", 8));
  ASSERT_EQ(reclaim.outcome, Selection::Outcome::kVictims) << reclaim.explanation;
  EXPECT_EQ(Victims(reclaim), (Strings{"a-young:Reclaim"}));
}

TEST_F(SelectTest, PdbBlockedVictimsAreSkipped) {
  SetPolicy(TwoTeams());
  AddNode("n0", 8);
  AddNode("n1", 8);
  Running("a0", "team-a", 8, "n0", 0, 60);
  Running("a1", "team-a", 8, "n1", 0, 5).pdb_blocked = true;
  Selection s = Select(Pending("b0", "team-b", 8));
  ASSERT_EQ(s.outcome, Selection::Outcome::kVictims) << s.explanation;
  EXPECT_EQ(Victims(s), (Strings{"a0:Reclaim"}));
  candidates_[0].pdb_blocked = true;
  Selection none = Select(Pending("b0", "team-b", 8));
  EXPECT_EQ(none.outcome, Selection::Outcome::kNoVictims);
  EXPECT_NE(none.explanation.find("2 its eviction was refused by a PodDisruptionBudget"),
            std::string::npos)
      << none.explanation;
}

// DESIGN §3.6, no two teams preempt each other back and forth: a pod that took capacity from
// team-b recently (Candidate::took_from) is not team-b's victim, though its team borrows; another
// team may still reclaim it.
TEST_F(SelectTest, APodThatTookFromATeamIsNotThatTeamsVictim) {
  SetPolicy(PolicyBuilder()
                .Team("team-a", "c")
                .Quota(kP5, kGpu, 4)
                .Team("team-b", "c")
                .Quota(kP5, kGpu, 8)
                .Team("team-c", "c")
                .Quota(kP5, kGpu, 8)
                .Build());
  AddNode("n0", 8);
  AddNode("n1", 8);
  // The most recently started: the first to go, but for team-b.
  Running("a-took", "team-a", 8, "n0", 0, 10).took_from = {TeamNames().Intern("team-b")};
  Running("a-filler", "team-a", 8, "n1", 0, 60);  // team-a uses 16 of nominal 4
  Selection s = Select(Pending("b0", "team-b", 8));
  ASSERT_EQ(s.outcome, Selection::Outcome::kVictims) << s.explanation;
  EXPECT_EQ(Victims(s), (Strings{"a-filler:Reclaim"}));
  candidates_[1].pdb_blocked = true;  // the only other way is closed
  Selection none = Select(Pending("b0", "team-b", 8));
  EXPECT_EQ(none.outcome, Selection::Outcome::kNoVictims);
  EXPECT_NE(none.explanation.find("it took capacity from the preemptor's team recently"),
            std::string::npos)
      << none.explanation;
  Selection other = Select(Pending("c0", "team-c", 8));
  ASSERT_EQ(other.outcome, Selection::Outcome::kVictims) << other.explanation;
  EXPECT_EQ(Victims(other), (Strings{"a-took:Reclaim"}));
}

// Fair share: a lender and two borrowers with nominal 0 sharing an 8-GPU pool.
PolicyPtr FairShareTeams() {
  return PolicyBuilder()
      .Team("lender", "c")
      .Quota(kP5, kGpu, 8)
      .Team("team-x", "c")
      .Quota(kP5, kGpu, 0)
      .Team("team-y", "c")
      .Quota(kP5, kGpu, 0)
      .Build();
}

TEST_F(SelectTest, FairShareTakesFromTheTeamAboveItsShareAndNeverBack) {
  SetPolicy(FairShareTeams());
  AddNode("n0", 8);
  for (int i = 0; i < 3; ++i) Running("x" + std::to_string(i), "team-x", 2, "n0", 0, 10 + i);
  Running("y0", "team-y", 2, "n0", 0, 50);
  // y after = 4/8 = 500 ≤ x after losing a pod = 4/8 = 500.
  Selection s = Select(Pending("y1", "team-y", 2));
  ASSERT_EQ(s.outcome, Selection::Outcome::kVictims) << s.explanation;
  EXPECT_EQ(Victims(s), (Strings{"x0:FairShare"}));
  EXPECT_EQ(s.victims[0].note,
            "FairShare: pod (UID uid-y1) of team-y (weighted share 0.500 after admission) takes "
            "borrowed nvidia.com/gpu on ml.p5.48xlarge from team-x (share 0.750, uses 6 of "
            "nominal 0)");

  // Apply it: x0 goes, y1 runs. Then x's recreated pod may not take it back, and y may take
  // no more.
  SetPolicy(FairShareTeams());
  nodes_ = FlavorNodes();
  candidates_.clear();
  AddNode("n0", 8);
  Running("x1", "team-x", 2, "n0", 0, 11);
  Running("x2", "team-x", 2, "n0", 0, 12);
  Running("y0", "team-y", 2, "n0", 0, 50);
  Running("y1", "team-y", 2, "n0", 0, 0);
  Selection back = Select(Pending("x0-recreated", "team-x", 2));
  EXPECT_EQ(back.outcome, Selection::Outcome::kNoVictims) << back.explanation;
  Selection again = Select(Pending("y2", "team-y", 2));
  EXPECT_EQ(again.outcome, Selection::Outcome::kNoVictims);
}

TEST_F(SelectTest, FairShareLessThanInitialShareAllowsABigVictim) {
  SetPolicy(FairShareTeams());
  AddNode("n0", 8);
  Running("x-big", "team-x", 5, "n0", 0, 10);  // x: 5/8 = 625
  Running("y0", "team-y", 3, "n0", 0, 50);     // y: 3/8 = 375
  // y after = 4/8 = 500; x after = 0 (500 ≤ 0 fails) but 500 < 625 before: allowed.
  Selection s = Select(Pending("y1", "team-y", 1));
  ASSERT_EQ(s.outcome, Selection::Outcome::kVictims) << s.explanation;
  EXPECT_EQ(Victims(s), (Strings{"x-big:FairShare"}));
}

// Kueue's rule order: LessThanOrEqualToFinalShare for every candidate before
// LessThanInitialShare for any (preemption_fair_test.go "prefer to preempt workloads that don't
// make the target CQ have the biggest share"). x-big comes first in the order and only the second
// rule allows it; x-small passes the first, so it is the one taken.
TEST_F(SelectTest, FairShareTriesTheFinalShareRuleOnEveryCandidateFirst) {
  SetPolicy(FairShareTeams());
  AddNode("n0", 8);
  Running("x-small", "team-x", 1, "n0", 0, 50);  // older: after x-big in the order
  Running("x-big", "team-x", 4, "n0", 0, 10);    // x: 5/8 = 625
  Running("y0", "team-y", 3, "n0", 0, 60);       // y: 3/8 = 375
  // y after = 4/8 = 500. x-big: x after 1/8 = 125 (fails the first rule), 500 < 625 before;
  // x-small: x after 4/8 = 500, 500 ≤ 500 (passes the first rule).
  Selection s = Select(Pending("y1", "team-y", 1));
  ASSERT_EQ(s.outcome, Selection::Outcome::kVictims) << s.explanation;
  EXPECT_EQ(Victims(s), (Strings{"x-small:FairShare"}));
}

// Fair sharing orders the preemptor's own team by its share too, counted with the pod admitted
// (preemption_fair_test.go "preempt from target and others even if over nominal"): team-a's
// share with the pod is the highest, so its own low-priority pod goes first; then team-b's share
// is the highest, and b1 is taken by LessThanInitialShare.
TEST_F(SelectTest, FairShareOrdersTheOwnTeamByItsShareWithThePod) {
  SetPolicy(PolicyBuilder()
                .Team("team-a", "c")
                .Quota(kP5, kGpu, 3)
                .Team("team-b", "c")
                .Quota(kP5, kGpu, 3)
                .Team("team-c", "c")
                .Quota(kP5, kGpu, 3)
                .Build());
  AddNode("n0", 100);
  Running("a1-low", "team-a", 2, "n0", /*priority=*/-1, /*age_min=*/10);
  Running("a2-low", "team-a", 1, "n0", /*priority=*/-1, /*age_min=*/20);
  Running("b1", "team-b", 3, "n0", 0, 10);
  Running("b2", "team-b", 3, "n0", 0, 20);
  Selection s = Select(Pending("a-new", "team-a", 4));
  ASSERT_EQ(s.outcome, Selection::Outcome::kVictims) << s.explanation;
  EXPECT_EQ(Victims(s), (Strings{"a1-low:InTeamPriority", "b1:FairShare"}));
}

// The policy's strategies decide (Kueue's fairSharing.preemptionStrategies): with
// LessThanInitialShare alone the first candidate it allows goes (preemption_fair_test.go
// "preempt lower priority first, even if big"); with LessThanOrEqualToFinalShare alone, x-big
// is never allowed.
TEST_F(SelectTest, FairShareUsesOnlyThePolicysStrategies) {
  auto with = [&](std::vector<FairShareStrategy> strategies) {
    Policy p = *FairShareTeams();
    p.preemption.fair_sharing_strategies = std::move(strategies);
    SetPolicy(std::make_shared<const Policy>(p));
    nodes_ = FlavorNodes();
    candidates_.clear();
    AddNode("n0", 8);
    Running("x-big", "team-x", 5, "n0", 0, 10);  // x: 5/8 = 625
    Running("y0", "team-y", 3, "n0", 0, 50);     // y: 3/8 = 375
    // y after = 4/8 = 500; x after = 0: the final-share rule refuses, the initial one allows.
    return Select(Pending("y1", "team-y", 1));
  };
  Selection initial = with({FairShareStrategy::kLessThanInitialShare});
  ASSERT_EQ(initial.outcome, Selection::Outcome::kVictims) << initial.explanation;
  EXPECT_EQ(Victims(initial), (Strings{"x-big:FairShare"}));
  EXPECT_EQ(with({FairShareStrategy::kLessThanOrEqualToFinalShare}).outcome,
            Selection::Outcome::kNoVictims);
}

// borrowWithinCohort (FirstComeFirstServe): a pod that will borrow takes another team's
// lower-priority borrowed pod, at most the threshold (preemption_test.go "use BorrowWithinCohort;
// allow preempting a lower-priority workload from another ClusterQueue while borrowing").
// Without it, or above the threshold, nothing is taken.
TEST_F(SelectTest, BorrowWithinCohortTakesLowerPriorityBorrowedPods) {
  auto world = [&](std::optional<BorrowWithinCohort> bwc) {
    Policy p = *PolicyBuilder()
                    .Team("team-a", "c")
                    .Quota(kP5, kGpu, 1, 12)
                    .Team("team-x", "c")
                    .Quota(kP5, kGpu, 1)
                    .Team("idle", "c")
                    .Quota(kP5, kGpu, 11)
                    .IdleCompute(IdleComputeAllocation::kFirstComeFirstServe)
                    .Build();
    if (bwc) p.teams[0].borrow_within_cohort = *bwc;
    SetPolicy(std::make_shared<const Policy>(p));
    nodes_ = FlavorNodes();
    candidates_.clear();
    AddNode("n0", 100);
    Running("x-low", "team-x", 10, "n0", /*priority=*/-1);          // team-x borrows 9
    return Select(Pending("a-new", "team-a", 10, /*priority=*/0));  // 2 free of 13
  };
  Selection s = world(BorrowWithinCohort{true, 0});
  ASSERT_EQ(s.outcome, Selection::Outcome::kVictims) << s.explanation;
  EXPECT_EQ(Victims(s), (Strings{"x-low:ReclaimWhileBorrowing"}));
  EXPECT_EQ(Victims(world(BorrowWithinCohort{true, std::nullopt})),
            (Strings{"x-low:ReclaimWhileBorrowing"}));
  EXPECT_EQ(world(BorrowWithinCohort{true, -2}).outcome, Selection::Outcome::kNoVictims);
  EXPECT_EQ(world(std::nullopt).outcome, Selection::Outcome::kNoVictims);
}

// Preemption composes (FirstComeFirstServe, Kueue's round without borrowing): team-a is under
// its nominal but would borrow with the new pod; its own lower-priority pod and team-b's
// borrowed pod go together, and team-a ends within its nominal (preemption_test.go "preempt from
// all ClusterQueues in cohort"). Either alone is not enough.
TEST_F(SelectTest, OwnTeamAndReclaimVictimsInOneRound) {
  SetPolicy(PolicyBuilder()
                .Team("team-a", "c")
                .Quota(kP5, kGpu, 6, 6)
                .Team("team-b", "c")
                .Quota(kP5, kGpu, 6, 6)
                .IdleCompute(IdleComputeAllocation::kFirstComeFirstServe)
                .Build());
  AddNode("n0", 100);
  Running("a-low", "team-a", 3, "n0", /*priority=*/-1);
  Running("a-mid", "team-a", 2, "n0", /*priority=*/0);
  Running("b-low", "team-b", 3, "n0", /*priority=*/-1);
  Running("b-mid", "team-b", 4, "n0", /*priority=*/0);  // team-b uses 7 of nominal 6
  Selection s = Select(Pending("a-new", "team-a", 4, /*priority=*/1));
  ASSERT_EQ(s.outcome, Selection::Outcome::kVictims) << s.explanation;
  EXPECT_EQ(Victims(s), (Strings{"b-low:Reclaim", "a-low:InTeamPriority"}));
}

// The same round with a minimum runtime that team-b's pods have not run: team-a ends within its
// nominal, so taking back what team-b borrowed does not wait for them (its guarantee); its own
// lower-priority pod had run long enough. Under FirstComeFirstServe and under FairShare (where
// team-b's pods are first judged FairShare: refused for now, not for good, they are a Reclaim
// once a-low is counted gone).
TEST_F(SelectTest, OwnTeamAndReclaimVictimsInOneRoundDoNotWaitForTheMinimumRuntime) {
  auto world = [&](IdleComputeAllocation idle) {
    PolicyBuilder builder;
    builder.Team("team-a", "c")
        .Quota(kP5, kGpu, 6, 6)
        .Team("team-b", "c")
        .Quota(kP5, kGpu, 6, 6)
        .IdleCompute(idle);
    builder.mutable_policy().preemption.minimum_runtime_seconds = 600;
    SetPolicy(builder.Build());
    nodes_ = FlavorNodes();
    candidates_.clear();
    AddNode("n0", 100);
    Running("a-low", "team-a", 3, "n0", /*priority=*/-1);
    Running("a-mid", "team-a", 2, "n0", /*priority=*/0);
    Running("b-low", "team-b", 3, "n0", /*priority=*/-1, /*age_min=*/5);
    Running("b-mid", "team-b", 4, "n0", /*priority=*/0, /*age_min=*/5);
    return Select(Pending("a-new", "team-a", 4, /*priority=*/1));
  };
  Selection s = world(IdleComputeAllocation::kFirstComeFirstServe);
  ASSERT_EQ(s.outcome, Selection::Outcome::kVictims) << s.explanation;
  EXPECT_EQ(Victims(s), (Strings{"b-low:Reclaim", "a-low:InTeamPriority"}));
  s = world(IdleComputeAllocation::kFairShare);
  ASSERT_EQ(s.outcome, Selection::Outcome::kVictims) << s.explanation;
  EXPECT_EQ(Victims(s), (Strings{"a-low:InTeamPriority", "b-low:Reclaim"}));
}

TEST_F(SelectTest, FairShareRefusesWhenTheVictimTeamIsNotAbove) {
  SetPolicy(FairShareTeams());
  AddNode("n0", 8);
  Running("x0", "team-x", 2, "n0", 0, 10);
  Running("x1", "team-x", 2, "n0", 0, 11);
  Running("y0", "team-y", 2, "n0", 0, 50);
  Running("y1", "team-y", 2, "n0", 0, 51);
  // y after = 750; x after = 250, before = 500: neither rule holds.
  Selection s = Select(Pending("y2", "team-y", 2));
  EXPECT_EQ(s.outcome, Selection::Outcome::kNoVictims);
  EXPECT_NE(s.explanation.find("share is not above"), std::string::npos) << s.explanation;
  // Without FairShare a borrower never preempts another team.
  SetPolicy(PolicyBuilder()
                .Team("lender", "c")
                .Quota(kP5, kGpu, 8)
                .Team("team-x", "c")
                .Quota(kP5, kGpu, 0)
                .Team("team-y", "c")
                .Quota(kP5, kGpu, 0)
                .IdleCompute(IdleComputeAllocation::kFirstComeFirstServe)
                .Build());
  nodes_ = FlavorNodes();
  candidates_.clear();
  AddNode("n0", 8);
  for (int i = 0; i < 3; ++i) Running("x" + std::to_string(i), "team-x", 2, "n0", 0, 10 + i);
  Running("y0", "team-y", 2, "n0", 0, 50);
  EXPECT_EQ(Select(Pending("y1", "team-y", 2)).outcome, Selection::Outcome::kNoVictims);
}

TEST_F(SelectTest, FairShareHighestShareGivesFirstAndSharesAreRecomputed) {
  SetPolicy(PolicyBuilder()
                .Team("lender", "c")
                .Quota(kP5, kGpu, 12)
                .Team("team-x", "c")
                .Quota(kP5, kGpu, 0)
                .Team("team-y", "c")
                .Quota(kP5, kGpu, 0)
                .Build());
  AddNode("n0", 12);
  // x borrows 5 (417‰), y borrows 4 (333‰), lender uses 3 of its own.
  for (int i = 0; i < 5; ++i) Running("x" + std::to_string(i), "team-x", 1, "n0", 0, 10 + i);
  for (int i = 0; i < 4; ++i) Running("y" + std::to_string(i), "team-y", 1, "n0", 0, 1 + i);
  for (int i = 0; i < 3; ++i) Running("l" + std::to_string(i), "lender", 1, "n0", 0, 100);
  // The lender needs 3 back: x gives (5→4), then x and y are level at 4 — the tie goes to the
  // team whose next pod started last (Kueue's candidate order): y0 (1 min) before x1 (11 min);
  // then x again (4 > 3).
  Selection s = Select(Pending("l-new", "lender", 3));
  ASSERT_EQ(s.outcome, Selection::Outcome::kVictims) << s.explanation;
  EXPECT_EQ(Victims(s), (Strings{"x0:Reclaim", "y0:Reclaim", "x1:Reclaim"}));
}

// Across a cohort tree, fair sharing compares the cohorts just below the one both teams share
// (Kueue's almost-least-common ancestors), weighted by the cohorts' weights; a team's own weight
// weighs it only against its siblings.
//   ROOT (holds 4) ── A (weight w) ── a (0, weight 0.1, wants 2)
//                  └─ B ──────────── b (0, runs 2 + 2)
// Once a's pod is admitted A borrows 2 of 4: 500 / w. B borrows 4 (1000), 2 after losing b's
// newest pod (500). With w = 1, 500 ≤ 500; with w = 0.5, A's 1000 is above both of B's.
TEST_F(SelectTest, FairShareAcrossATreeWeighsTheCohortsBelowTheSharedOne) {
  for (double w : {1.0, 0.5}) {
    SetPolicy(PolicyBuilder()
                  .Cohort("ROOT")
                  .CohortQuota("ROOT", kP5, kGpu, 4)
                  .Cohort("A", "ROOT")
                  .CohortWeight("A", w)
                  .Cohort("B", "ROOT")
                  .Team("a", "A")
                  .Quota(kP5, kGpu, 0)
                  .Weight(0.1)
                  .Team("b", "B")
                  .Quota(kP5, kGpu, 0)
                  .Build());
    nodes_ = FlavorNodes();
    candidates_.clear();
    AddNode("n0", 4);
    Running("b0", "b", 2, "n0", 0, 10);
    Running("b1", "b", 2, "n0", 0, 20);
    Selection s = Select(Pending("a0", "a", 2));
    if (w == 0.5) {
      EXPECT_EQ(s.outcome, Selection::Outcome::kNoVictims) << s.explanation;
      EXPECT_NE(s.explanation.find("2 its cohort's weighted share is not above the preemptor's"),
                std::string::npos)
          << s.explanation;
      continue;
    }
    ASSERT_EQ(s.outcome, Selection::Outcome::kVictims) << s.explanation;
    EXPECT_EQ(Victims(s), (Strings{"b0:FairShare"}));
    EXPECT_EQ(
        s.victims[0].note,
        "FairShare: pod (UID uid-a0) of a's cohort A (weighted share 0.500 after admission) takes "
        "borrowed nvidia.com/gpu on ml.p5.48xlarge from b's cohort B (share 1.000; b uses 4 "
        "of nominal 0)");
  }
}

// ---------------------------------------------------------------------------------------------
// The rule on its own.

TEST(JudgeVictimTest, OutsideGovernancePlainPriorityDecides) {
  PolicyPtr policy = TwoTeams();
  PreemptorFacts p;
  p.priority = 10;
  VictimFacts v;
  v.priority = 5;
  QuotaSim::Amounts none{};
  Verdict yes = JudgeVictim(*policy, p, v, nullptr, none, none, kNow);
  EXPECT_TRUE(yes.allowed);
  EXPECT_EQ(yes.reason, PreemptionReason::kPriority);
  v.priority = 10;
  EXPECT_FALSE(JudgeVictim(*policy, p, v, nullptr, none, none, kNow).allowed);
}

TEST(JudgeVictimTest, OtherTeamsNeedTheQuotaState) {
  PolicyPtr policy = TwoTeams();
  PreemptorFacts p{policy->FindTeam("team-b"), T("team-b"), 10, 0};
  VictimFacts v{policy->FindTeam("team-a"), T("team-a"), 1, 0, 0};
  QuotaSim::Amounts none{};
  Verdict verdict = JudgeVictim(*policy, p, v, nullptr, none, none, kNow);
  EXPECT_FALSE(verdict.allowed);
  EXPECT_EQ(verdict.why_not, "quota state unknown");
}

TEST(GangTest, GroupsBySourceAndNamespacesTheKeys) {
  EXPECT_EQ(GangOf(PodBuilder("p").Namespace("ns").Label("kueue.x-k8s.io/pod-group-name", "g")),
            "kueue/ns/g");
  EXPECT_EQ(
      GangOf(PodBuilder("p").Namespace("ns").Annotation("scheduling.k8s.io/group-name", "pg")),
      "podgroup/ns/pg");
  EXPECT_EQ(GangOf(PodBuilder("p").Namespace("ns").Label("scheduling.volcano.sh/group-name", "pg")),
            "podgroup/ns/pg");
  EXPECT_EQ(GangOf(PodBuilder("p").Namespace("ns").Label("jobset.sigs.k8s.io/jobset-name", "js")),
            "jobset/ns/js");
  EXPECT_EQ(GangOf(PodBuilder("p").Owner("PyTorchJob", "train", "uid-train")), "owner/uid-train");
  EXPECT_EQ(GangOf(PodBuilder("p").Owner("Job", "batch", "uid-batch")), "owner/uid-batch");
  EXPECT_EQ(GangOf(PodBuilder("p").Owner("ReplicaSet", "web", "uid-rs")), "");
  EXPECT_EQ(GangOf(PodBuilder("p")), "");
}

// Each key as a label and as an annotation, and every gang owner kind.
TEST(GangTest, EverySourceAsLabelAndAnnotation) {
  struct Case {
    std::string key;
    std::string want;
  };
  for (const Case& c : {Case{"kueue.x-k8s.io/pod-group-name", "kueue/ns/g"},
                        Case{"scheduling.k8s.io/group-name", "podgroup/ns/g"},
                        Case{"scheduling.volcano.sh/group-name", "podgroup/ns/g"},
                        Case{"jobset.sigs.k8s.io/jobset-name", "jobset/ns/g"}}) {
    EXPECT_EQ(GangOf(PodBuilder("p").Namespace("ns").Label(c.key, "g")), c.want) << c.key;
    EXPECT_EQ(GangOf(PodBuilder("p").Namespace("ns").Annotation(c.key, "g")), c.want) << c.key;
    // Same name, other namespace: another gang.
    EXPECT_NE(GangOf(PodBuilder("p").Namespace("other").Label(c.key, "g")), c.want) << c.key;
  }
  for (const char* kind : {"Job", "JobSet", "PyTorchJob", "TFJob", "MPIJob", "XGBoostJob",
                           "PaddleJob", "JAXJob", "TrainJob", "HyperPodPyTorchJob", "RayJob"}) {
    EXPECT_EQ(GangOf(PodBuilder("p").Namespace("ns").Owner(kind, "j", "uid-j")), "owner/uid-j")
        << kind;
  }
  // Without an owner uid, the owner's namespaced kind and name.
  EXPECT_EQ(GangOf(PodBuilder("p").Namespace("ns").Owner("JobSet", "js", "")),
            "owner/ns/JobSet/js");
  for (const char* kind : {"ReplicaSet", "StatefulSet", "DaemonSet", "Node"}) {
    EXPECT_EQ(GangOf(PodBuilder("p").Namespace("ns").Owner(kind, "x", "uid-x")), "") << kind;
  }
}

// A pod with several markers belongs to the most specific: the Kueue pod group, then the
// PodGroup, then the JobSet label, then its owner.
TEST(GangTest, TheMostSpecificSourceWins) {
  PodBuilder all = PodBuilder("p")
                       .Namespace("ns")
                       .Owner("JobSet", "js", "uid-js")
                       .Label("jobset.sigs.k8s.io/jobset-name", "js")
                       .Annotation("scheduling.volcano.sh/group-name", "vg")
                       .Label("scheduling.k8s.io/group-name", "pg")
                       .Annotation("kueue.x-k8s.io/pod-group-name", "kg");
  EXPECT_EQ(GangOf(all), "kueue/ns/kg");
  EXPECT_EQ(GangOf(PodBuilder("p")
                       .Namespace("ns")
                       .Owner("JobSet", "js", "uid-js")
                       .Label("jobset.sigs.k8s.io/jobset-name", "js")
                       .Label("scheduling.k8s.io/group-name", "pg")),
            "podgroup/ns/pg");
  EXPECT_EQ(GangOf(PodBuilder("p")
                       .Namespace("ns")
                       .Owner("PyTorchJob", "t", "uid-t")
                       .Label("jobset.sigs.k8s.io/jobset-name", "js")),
            "jobset/ns/js");
}

// ---------------------------------------------------------------------------------------------
// The preempt verb decides through the same rule.

class PreemptVerbTest : public ::testing::Test {
 protected:
  void Start(PolicyPtr policy) {
    book_ = std::make_unique<QuotaBook>(policy, &clock_);
    cluster_ = std::make_unique<ClusterState>(book_.get(), &clock_, ClusterState::Options{});
    admission_ = std::make_unique<Admission>(book_.get(), cluster_.get(), &kube_, &clock_,
                                             Admission::Options{});
    for (int i = 0; i < 2; ++i) {
      cluster_->OnNodeUpsert(
          NodeBuilder("p5-" + std::to_string(i)).InstanceType(kP5).Allocatable(kGpu, "8"));
    }
  }
  Pod Bind(Pod pod, const std::string& node) {
    pod.node_name = node;
    pod.phase = PodPhase::kRunning;
    cluster_->OnPodUpsert(pod);
    return pod;
  }
  static std::vector<std::string> Names(const Victims& v) {
    std::vector<std::string> out;
    for (const Pod& p : v.pods) out.push_back(p.name);
    return out;
  }

  common::FakeClock clock_{kNow};
  FakeKubeActions kube_;
  std::unique_ptr<QuotaBook> book_;
  std::unique_ptr<ClusterState> cluster_;
  std::unique_ptr<Admission> admission_;
};

// A governed pod's disruptions are the controller's alone: whatever kube-scheduler's dry run
// found, the verb approves no victim for it — a gang member of a gang that can never be admitted
// (issue 34: each member kube-scheduler tried got one of its team's running pods approved, which
// could never make room for 16), and a lone pod whose reclaim the rules would allow.
TEST_F(PreemptVerbTest, AGovernedPreemptorGetsNoVictims) {
  Start(PolicyBuilder()
            .Team("team-a", "c")
            .Quota(kP5, kGpu, 8, /*borrow=*/1)
            .Team("team-b", "c")
            .Quota(kP5, kGpu, 8)
            .Build());
  Pod a_low = Bind(PodBuilder("a-low").Namespace("ns-team-a").Gpus(4).Priority(1), "p5-0");
  Pod b0 = Bind(PodBuilder("b0").Namespace("ns-team-b").Gpus(4).Priority(5), "p5-1");
  Pod b1 = Bind(PodBuilder("b1").Namespace("ns-team-b").Gpus(4).Priority(5), "p5-1");
  Pod b2 = Bind(PodBuilder("b2").Namespace("ns-team-b").Gpus(4).Priority(5), "p5-0");
  // team-a's gang of 4 × 4 GPUs: 16, where team-a may use 9.
  PreemptArgs gang;
  gang.pod = PodBuilder("g-0")
                 .Namespace("ns-team-a")
                 .Gpus(4)
                 .Priority(50)
                 .Label("kueue.x-k8s.io/pod-group-name", "g")
                 .Annotation("kueue.x-k8s.io/pod-group-total-count", "4");
  gang.node_to_victims["p5-0"].pods = {a_low, b2};
  EXPECT_TRUE(admission_->Preempt(gang).node_to_victims.empty());
  EXPECT_TRUE(admission_->Preempt(gang).error.empty());
  // A lone pod of team-a within its nominal: team-b borrows 4 (reclaimable), yet the verb
  // leaves the reclaim to the controller.
  PreemptArgs lone;
  lone.pod = PodBuilder("a-new").Namespace("ns-team-a").Gpus(4).Priority(50);
  lone.node_to_victims["p5-1"].pods = {b0, b1};
  EXPECT_TRUE(admission_->Preempt(lone).node_to_victims.empty());
}

// An ungoverned preemptor (no team) preempts by plain priority, as kube-scheduler decided;
// both input forms are trimmed the same way.
TEST_F(PreemptVerbTest, AnUngovernedPreemptorKeepsLowerPriorityVictims) {
  Start(TwoTeams());
  Pod b0 = Bind(PodBuilder("b0").Namespace("ns-team-b").Gpus(8).Priority(5), "p5-0");
  Pod b1 = Bind(PodBuilder("b1").Namespace("ns-team-b").Gpus(4).Priority(5), "p5-1");
  Pod a_low = Bind(PodBuilder("a-low").Namespace("ns-team-a").Gpus(2).Priority(1), "p5-1");
  Pod a_high = Bind(PodBuilder("a-high").Namespace("ns-team-a").Gpus(2).Priority(90), "p5-1");
  Pod preemptor = PodBuilder("system").Namespace("kube-system").Gpus(4).Priority(50);

  PreemptArgs full;
  full.pod = preemptor;
  full.node_to_victims["p5-0"].pods = {b0};
  full.node_to_victims["p5-1"].pods = {a_low, a_high, b1};
  full.node_to_victims["p5-1"].num_pdb_violations = 1;
  PreemptArgs meta = full;
  meta.meta = true;
  for (auto& [node, victims] : meta.node_to_victims) {
    for (Pod& p : victims.pods) {
      Pod only_uid;
      only_uid.uid = p.uid;
      p = only_uid;
    }
  }
  for (const PreemptArgs* args : {&full, &meta}) {
    PreemptResult r = admission_->Preempt(*args);
    ASSERT_EQ(r.node_to_victims.size(), 2u) << args->meta;
    EXPECT_EQ(Names(r.node_to_victims["p5-0"]), Strings{"b0"});
    EXPECT_EQ(Names(r.node_to_victims["p5-1"]), (Strings{"b1", "a-low"}));  // highest first
    EXPECT_EQ(r.node_to_victims["p5-1"].num_pdb_violations, 1);
  }
  // Meta victims taskgov does not know are dropped; a node left without victims goes.
  PreemptArgs ghost;
  ghost.meta = true;
  ghost.pod = preemptor;
  ghost.node_to_victims["p5-1"].pods = {PodBuilder("ghost").Namespace("ns-team-a")};
  ghost.node_to_victims["p5-1"].pods[0].uid = "ghost-uid";
  EXPECT_TRUE(admission_->Preempt(ghost).node_to_victims.empty());
}

TEST_F(PreemptVerbTest, AGangMemberIsKeptOnlyWithItsWholeGangOnTheNode) {
  Start(TwoTeams());
  auto member = [](const std::string& name) {
    return PodBuilder(name)
        .Namespace("ns-team-b")
        .Gpus(4)
        .Priority(5)
        .Owner("PyTorchJob", "train", "job-uid");
  };
  Pod g0 = Bind(member("g0"), "p5-0");
  Pod g1 = Bind(member("g1"), "p5-1");
  Bind(PodBuilder("b-solo").Namespace("ns-team-b").Gpus(4).Priority(5), "p5-0");
  Pod b2 = Bind(PodBuilder("b2").Namespace("ns-team-b").Gpus(4).Priority(5), "p5-1");
  PreemptArgs args;
  args.pod = PodBuilder("system").Namespace("kube-system").Gpus(4).Priority(50);
  args.node_to_victims["p5-0"].pods = {g0};      // g1 is elsewhere: half a gang, vetoed
  args.node_to_victims["p5-1"].pods = {g1, b2};  // g1 dropped, b2 stays
  PreemptResult r = admission_->Preempt(args);
  EXPECT_EQ(r.node_to_victims.count("p5-0"), 0u);
  EXPECT_EQ(Names(r.node_to_victims["p5-1"]), Strings{"b2"});
}

TEST_F(PreemptVerbTest, TheMinimumRuntimeProtectsYoungPodsFromAnUngovernedPreemptor) {
  PolicyBuilder builder;
  builder.Team("team-a", "c").Quota(kP5, kGpu, 8);
  builder.mutable_policy().preemption.minimum_runtime_seconds = 600;
  Start(builder.Build());
  Pod young = Bind(PodBuilder("young")
                       .Namespace("ns-team-a")
                       .Gpus(8)
                       .Priority(1)
                       .Started(clock_.NowMs() - 60'000),
                   "p5-0");
  PreemptArgs args;
  args.pod = PodBuilder("system").Namespace("kube-system").Gpus(8).Priority(100);
  args.node_to_victims["p5-0"].pods = {young};
  EXPECT_TRUE(admission_->Preempt(args).node_to_victims.empty());
  clock_.Advance(600'000);
  EXPECT_EQ(Names(admission_->Preempt(args).node_to_victims["p5-0"]), Strings{"young"});
}

}  // namespace
}  // namespace taskgov::scheduler::decisions
