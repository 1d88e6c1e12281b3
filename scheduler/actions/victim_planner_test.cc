#include "scheduler/actions/victim_planner.h"

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "scheduler/testing/builders.h"

namespace taskgov::scheduler::actions {
namespace {

using decisions::Candidate;
using decisions::PreemptionReason;
using decisions::Preemptor;
using decisions::Selection;
using decisions::VictimSelector;
using ledger::CellKey;
using ledger::Charge;
using ledger::Ledger;
using model::FlavorNames;
using model::IdAmounts;
using model::NameId;
using model::NodePlacement;
using model::PlacementOf;
using model::Pod;
using model::PolicyPtr;
using model::ResourceList;
using model::ResourceNames;
using model::TaintEffect;
using model::TeamNames;
using model::TolerationOperator;
using scheduler::testing::NodeBuilder;
using scheduler::testing::PolicyBuilder;
using state::NodeView;
using state::PendingPod;
using Names = std::vector<std::string>;

constexpr char kP5[] = "ml.p5.48xlarge";
constexpr char kGpu[] = "nvidia.com/gpu";
constexpr int64_t kNow = 1'700'000'000'000;
constexpr int64_t kMinute = 60'000;

NameId Gpu() { return ResourceNames().Intern(kGpu); }
NameId P5() { return FlavorNames().Intern(kP5); }

PolicyPtr TwoTeams() {
  return PolicyBuilder()
      .Team("team-a", "c")
      .Quota(kP5, kGpu, 8)
      .Team("team-b", "c")
      .Quota(kP5, kGpu, 8)
      .Build();
}

// The ledger and the nodes a planner reads: nodes of 8 GPUs on ml.p5.48xlarge, pods charged as
// they are placed. Counts its reads.
class FakeSource final : public PlanSource {
 public:
  explicit FakeSource(PolicyPtr policy) : ledger_(std::move(policy)) {}

  // A node (again: new labels and taints, same pods).
  FakeSource& WithNode(const std::string& name, NodeBuilder facts = NodeBuilder("")) {
    scheduler::model::Node node = facts.Build();
    node.name = name;
    NodeView& view = nodes_[name];
    view.known = true;
    view.flavor = P5();
    view.allocatable = ResourceList{{kGpu, 8}};
    view.placement = std::make_shared<const NodePlacement>(PlacementOf(node));
    return *this;
  }
  // A pod of `team` using `gpus` on `node` (charged in the ledger, used on the node).
  void Place(NameId team, const std::string& node, int64_t gpus) {
    Ledger::Session s(ledger_);
    Charge charge;
    std::vector<CellKey> missing;
    (void)s.ForceCharge(team, P5(), ResourceList{{kGpu, gpus}}, &charge, &missing);
    ResourceList& used = nodes_.at(node).used;
    used.Set(kGpu, used.Get(kGpu) + gpus);
  }

  Ledger::Usage Usage() const override {
    ++cells_reads;
    return ledger_.ReadUsage();
  }
  std::vector<std::pair<std::string, NodeView>> NodesOfFlavor(NameId flavor) const override {
    ++node_reads;
    std::vector<std::pair<std::string, NodeView>> out;
    for (auto it = nodes_.rbegin(); it != nodes_.rend(); ++it) {  // any order
      if (it->second.flavor == flavor) out.emplace_back(it->first, it->second);
    }
    return out;
  }

  mutable int cells_reads = 0;
  mutable int node_reads = 0;

 private:
  Ledger ledger_;
  std::map<std::string, NodeView> nodes_;
};

// The world of the controller tests: team-a's four 4-GPU pods a-0 … a-3, a minute apart, fill
// p5-0 (a-0, a-1) and p5-1 (a-2, a-3); team-a uses 16 of nominal 8.
class PlannerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    source_ = std::make_unique<FakeSource>(policy_);
    source_->WithNode("p5-0").WithNode("p5-1");
    for (int i = 0; i < 4; ++i) Run("a-" + std::to_string(i), i < 2 ? "p5-0" : "p5-1", i);
  }
  void Run(const std::string& name, const std::string& node, int minute) {
    Candidate c;
    c.uid = "uid-" + name;
    c.ns = "ns-team-a";
    c.name = name;
    c.team = TeamNames().Intern("team-a");
    c.flavor = P5();
    c.started_ms = c.created_ms = c.admitted_ms = kNow - 10 * kMinute + minute * kMinute;
    c.node = node;
    c.occupies = c.charged = {{Gpu(), 4}};
    source_->Place(c.team, node, 4);
    running_.push_back(std::move(c));
  }
  // Moves a running pod to the terminating ones.
  void Terminating(const std::string& name) {
    for (auto it = running_.begin(); it != running_.end(); ++it) {
      if (it->name != name) continue;
      terminating_.push_back(*it);
      running_.erase(it);
      return;
    }
  }
  VictimPlanner Planner(std::vector<Claim> claims = {}) {
    VictimPlanner::Inputs in;
    in.policy = policy_.get();
    in.now_ms = kNow;
    in.source = source_.get();
    in.selector = &selector_;
    in.running = running_;
    in.terminating = terminating_;
    in.claims = std::move(claims);
    return VictimPlanner(std::move(in));
  }
  static PendingPod Pending(
      const std::string& name, int64_t gpus,
      scheduler::testing::PodBuilder facts = scheduler::testing::PodBuilder("")) {
    const Pod pod = facts.Build();
    PendingPod p;
    p.uid = "uid-" + name;
    p.key = "ns-team-b/" + name;
    p.team = TeamNames().Intern("team-b");
    p.priority = 100;
    p.created_ms = kNow;
    p.request = ResourceList{{kGpu, gpus}};
    p.node_selector = pod.node_selector;
    p.placement = pod.placement;
    return p;
  }
  static Preemptor PreemptorOf(const PendingPod& pending) {
    return Preemptor{pending.uid,
                     pending.key,
                     pending.team,
                     pending.priority,
                     pending.created_ms,
                     pending.request,
                     {},
                     "",
                     0,
                     {},
                     ""};
  }
  Selection Plan(VictimPlanner& planner, const PendingPod& pending) {
    return planner.Plan(*policy_->FindTeam("team-b"), pending, PreemptorOf(pending));
  }
  Names Victims(const VictimPlanner& planner, const Selection& sel) const {
    Names out;
    for (const Selection::Victim& v : sel.victims) {
      out.push_back(planner.candidates().at(v.candidate).name);
    }
    return out;
  }
  const Candidate& CandidateNamed(const VictimPlanner& planner, const std::string& name) const {
    for (const Candidate& c : planner.candidates().all()) {
      if (c.name == name) return c;
    }
    ADD_FAILURE() << "no candidate " << name;
    return planner.candidates().all().front();
  }

  PolicyPtr policy_ = TwoTeams();
  std::unique_ptr<FakeSource> source_;
  std::vector<Candidate> running_;
  std::vector<Candidate> terminating_;
  VictimSelector selector_;
};

// One decision for b-0 of team-b (within its nominal) against the world, with changes.
struct PlanCase {
  std::string name;
  int64_t gpus;
  scheduler::testing::PodBuilder facts;
  Names terminating;          // of team-a's pods
  std::vector<Claim> claims;  // of rounds in flight
  NodeBuilder p5_0 = NodeBuilder("");
  NodeBuilder p5_1 = NodeBuilder("");
  Selection::Outcome outcome;
  std::string node;  // kFits, kVictims
  Names victims;
  std::string explanation = "";  // kNoVictims
};

void PrintTo(const PlanCase& c, std::ostream* os) { *os << c.name; }

class PlanTest : public PlannerTest, public ::testing::WithParamInterface<PlanCase> {};

TEST_P(PlanTest, Decides) {
  const PlanCase& c = GetParam();
  source_->WithNode("p5-0", c.p5_0).WithNode("p5-1", c.p5_1);
  for (const std::string& name : c.terminating) Terminating(name);
  VictimPlanner planner = Planner(c.claims);
  const Selection sel = Plan(planner, Pending("b-0", c.gpus, c.facts));
  EXPECT_EQ(sel.outcome, c.outcome);
  EXPECT_EQ(sel.node, c.node);
  EXPECT_EQ(Victims(planner, sel), c.victims);
  if (c.outcome == Selection::Outcome::kNoVictims) {
    EXPECT_EQ(sel.explanation, c.explanation);
  } else {
    EXPECT_EQ(sel.flavor, P5());
  }
}

// b-9 of team-b, whose round in flight holds 4 GPUs on p5-1.
std::vector<Claim> ClaimOnP51() {
  return {Claim{TeamNames().Intern("team-b"), P5(), "p5-1", ResourceList{{kGpu, 4}}, true, {}}};
}

INSTANTIATE_TEST_SUITE_P(
    Cases, PlanTest,
    ::testing::Values(
        // Reclaim: the most recently started borrower goes.
        PlanCase{.name = "ReclaimsTheMostRecentPod",
                 .gpus = 4,
                 .facts = scheduler::testing::PodBuilder(""),
                 .terminating = {},
                 .claims = {},
                 .outcome = Selection::Outcome::kVictims,
                 .node = "p5-1",
                 .victims = {"a-3"}},
        // A pod going counts as freed: b-0 fits where it was.
        PlanCase{.name = "TerminatingPodsCountAsFreed",
                 .gpus = 4,
                 .facts = scheduler::testing::PodBuilder(""),
                 .terminating = {"a-3"},
                 .claims = {},
                 .outcome = Selection::Outcome::kFits,
                 .node = "p5-1",
                 .victims = {}},
        // What a round in flight claims is not free: the next victim is chosen instead.
        PlanCase{.name = "ClaimsOfRoundsInFlightHoldBack",
                 .gpus = 4,
                 .facts = scheduler::testing::PodBuilder(""),
                 .terminating = {"a-3"},
                 .claims = ClaimOnP51(),
                 .outcome = Selection::Outcome::kVictims,
                 .node = "p5-1",
                 .victims = {"a-2"}},
        // Pinned to p5-0 by its required affinity: the victim is on p5-0.
        PlanCase{.name = "APinnedPodReclaimsOnItsNode",
                 .gpus = 4,
                 .facts = scheduler::testing::PodBuilder("").PinnedTo({"p5-0"}),
                 .terminating = {},
                 .claims = {},
                 .outcome = Selection::Outcome::kVictims,
                 .node = "p5-0",
                 .victims = {"a-1"}},
        // Tolerating p5-0's taint only: not a-3, which runs where b-0 cannot go.
        PlanCase{
            .name = "OnlyOnNodesThatAcceptIt",
            .gpus = 4,
            .facts = scheduler::testing::PodBuilder("").Toleration("nvidia.com/gpu",
                                                                   TolerationOperator::kExists),
            .terminating = {},
            .claims = {},
            .p5_0 = NodeBuilder("").Taint("nvidia.com/gpu", "present", TaintEffect::kNoSchedule),
            .p5_1 = NodeBuilder("").Taint("dedicated", "x", TaintEffect::kNoSchedule),
            .outcome = Selection::Outcome::kVictims,
            .node = "p5-0",
            .victims = {"a-1"}},
        // No node of the flavor accepts it: nothing is evicted, and it says why.
        PlanCase{
            .name = "AFlavorNoNodeAcceptsIsSkipped",
            .gpus = 4,
            .facts = scheduler::testing::PodBuilder(""),
            .terminating = {},
            .claims = {},
            .p5_0 = NodeBuilder("").Taint("nvidia.com/gpu", "present", TaintEffect::kNoSchedule),
            .p5_1 = NodeBuilder("").Taint("nvidia.com/gpu", "present", TaintEffect::kNoSchedule),
            .outcome = Selection::Outcome::kNoVictims,
            .node = "",
            .victims = {},
            .explanation = "no ml.p5.48xlarge node accepts ns-team-b/b-0: 2 nodes with an "
                           "untolerated taint (nvidia.com/gpu=present:NoSchedule)"},
        // Its nodeSelector names another instance type: no flavor of its team is its.
        PlanCase{.name = "AFlavorItsNodeSelectorRefusesIsNotTried",
                 .gpus = 4,
                 .facts = scheduler::testing::PodBuilder("").NodeSelector(
                     "node.kubernetes.io/instance-type", "ml.p4d.24xlarge"),
                 .terminating = {},
                 .claims = {},
                 .outcome = Selection::Outcome::kNoVictims,
                 .node = "",
                 .victims = {},
                 .explanation = ""},
        // More than a node: VictimSelector's reason is the planner's.
        PlanCase{.name = "NoVictimsSaysWhy",
                 .gpus = 16,
                 .facts = scheduler::testing::PodBuilder(""),
                 .terminating = {},
                 .claims = {},
                 .outcome = Selection::Outcome::kNoVictims,
                 .node = "",
                 .victims = {},
                 .explanation = "no victims can make room for ns-team-b/b-0: team-b: "
                                "nvidia.com/gpu on ml.p5.48xlarge: requested 16, in use 0 of "
                                "nominal 8, cohort pool free 0 of 16; candidates: 4 its team's "
                                "weighted share is not above the preemptor's"}),
    [](const ::testing::TestParamInfo<PlanCase>& info) { return info.param.name; });

TEST_F(PlannerTest, AFitClaimsItsRequestForTheDecisionsThatFollow) {
  Terminating("a-3");
  VictimPlanner planner = Planner();
  EXPECT_EQ(Plan(planner, Pending("b-0", 4)).outcome, Selection::Outcome::kFits);
  // a-3's room on p5-1 is b-0's now: b-1 needs a victim.
  const Selection sel = Plan(planner, Pending("b-1", 4));
  EXPECT_EQ(sel.outcome, Selection::Outcome::kVictims);
  EXPECT_EQ(Victims(planner, sel), Names{"a-2"});
}

TEST_F(PlannerTest, ACommittedRoundsVictimsAreNotChosenAgain) {
  VictimPlanner planner = Planner();
  const PendingPod b0 = Pending("b-0", 4);
  const Selection first = Plan(planner, b0);
  ASSERT_EQ(Victims(planner, first), Names{"a-3"});
  const std::vector<RoundVictim> victims = planner.Commit(PreemptorOf(b0), first);
  ASSERT_EQ(victims.size(), 1u);
  EXPECT_EQ(victims[0].uid, "uid-a-3");
  EXPECT_EQ(victims[0].reason, PreemptionReason::kReclaim);
  EXPECT_EQ(victims[0].node, "p5-1");
  EXPECT_EQ(victims[0].charged, (IdAmounts{{Gpu(), 4}}));
  EXPECT_EQ(victims[0].note, first.victims[0].note);
  EXPECT_TRUE(CandidateNamed(planner, "a-3").excluded);
  // a-3's room is b-0's; b-1 takes a-2, the next on p5-1.
  const Selection second = Plan(planner, Pending("b-1", 4));
  EXPECT_EQ(Victims(planner, second), Names{"a-2"});
  EXPECT_EQ(second.node, "p5-1");
}

TEST_F(PlannerTest, AfterARefusalTheRoundChoosesAgainWithoutTheRefusedPod) {
  VictimPlanner planner = Planner();
  const PendingPod b0 = Pending("b-0", 4);
  const Preemptor p = PreemptorOf(b0);
  const std::vector<RoundVictim> victims = planner.Commit(p, Plan(planner, b0));
  ASSERT_EQ(victims.size(), 1u);
  // A budget refuses a-3: it is returned, blocked; b-0's claim is handed back; choose again.
  planner.ReturnVictims(victims, "uid-a-3", /*refused_for_good=*/false);
  EXPECT_FALSE(CandidateNamed(planner, "a-3").excluded);
  EXPECT_TRUE(CandidateNamed(planner, "a-3").pdb_blocked);
  const Claim claim{p.team, P5(), "p5-1", p.request, /*quota=*/true, {}};
  planner.Release(claim);
  const Selection again = planner.Choose(p, P5(), b0.node_selector, b0.placement.get());
  EXPECT_EQ(again.outcome, Selection::Outcome::kVictims);
  EXPECT_EQ(Victims(planner, again), Names{"a-2"});
  const std::vector<RoundVictim> more = planner.TakeVictims(again);
  ASSERT_EQ(more.size(), 1u);
  EXPECT_TRUE(CandidateNamed(planner, "a-2").excluded);
  planner.Hold(claim);
  // With a-2 going and b-0 holding p5-1, b-1 takes from p5-0.
  EXPECT_EQ(Plan(planner, Pending("b-1", 4)).node, "p5-0");
}

TEST_F(PlannerTest, AVictimRefusedForGoodIsNeverChosenAgain) {
  VictimPlanner planner = Planner();
  const PendingPod b0 = Pending("b-0", 4);
  const std::vector<RoundVictim> victims = planner.Commit(PreemptorOf(b0), Plan(planner, b0));
  planner.ReturnVictims(victims, "uid-a-3", /*refused_for_good=*/true);
  EXPECT_TRUE(CandidateNamed(planner, "a-3").excluded);
  EXPECT_TRUE(CandidateNamed(planner, "a-3").pdb_blocked);
}

TEST_F(PlannerTest, AGangMateReturnedIsACandidateAgain) {
  VictimPlanner planner = Planner();
  const PendingPod b0 = Pending("b-0", 8);
  const Selection sel = Plan(planner, b0);
  ASSERT_EQ(Victims(planner, sel), (Names{"a-3", "a-2"}));
  const std::vector<RoundVictim> victims = planner.Commit(PreemptorOf(b0), sel);
  planner.ReturnVictims(victims, "uid-a-3", /*refused_for_good=*/false);
  EXPECT_FALSE(CandidateNamed(planner, "a-2").excluded);
  EXPECT_FALSE(CandidateNamed(planner, "a-2").pdb_blocked);
}

TEST_F(PlannerTest, AVictimUnfreedHoldsItsRoomAgain) {
  Terminating("a-3");
  VictimPlanner planner = Planner();
  RoundVictim a3;
  a3.uid = "uid-a-3";
  a3.team = TeamNames().Intern("team-a");
  a3.flavor = P5();
  a3.node = "p5-1";
  a3.charged = a3.occupies = {{Gpu(), 4}};
  planner.Unfree(a3);  // a-3 no longer counts as going
  EXPECT_EQ(Plan(planner, Pending("b-0", 4)).outcome, Selection::Outcome::kVictims);
}

TEST_F(PlannerTest, ReadsTheSourceOnceAFlavorIsFirstUsed) {
  VictimPlanner planner = Planner();
  EXPECT_EQ(source_->cells_reads, 0);
  EXPECT_EQ(source_->node_reads, 0);
  (void)Plan(planner, Pending("b-0", 4));
  (void)Plan(planner, Pending("b-1", 4));
  EXPECT_EQ(source_->cells_reads, 1);
  EXPECT_EQ(source_->node_reads, 1);
}

// ---- a gang that requires one topology domain ----

constexpr char kLayer1[] = "topology.k8s.aws/network-node-layer-1";
constexpr char kLayer2[] = "topology.k8s.aws/network-node-layer-2";

// Four nodes in two network-node-layer-2 domains (p5-0, p5-1 in spine-0; p5-2, p5-3 in spine-1);
// team-a (nominal 8) borrows, team-b (nominal 24) has a gang of two 8-GPU pods asking for one
// layer-2 domain.
class TopologyPlannerTest : public PlannerTest {
 protected:
  void SetUp() override { Start(24); }
  void Start(int64_t b_nominal) {
    policy_ = PolicyBuilder()
                  .Team("team-a", "c")
                  .Quota(kP5, kGpu, 8)
                  .Team("team-b", "c")
                  .Quota(kP5, kGpu, b_nominal)
                  .Build();
    source_ = std::make_unique<FakeSource>(policy_);
    for (int n = 0; n < 4; ++n) {
      source_->WithNode(
          "p5-" + std::to_string(n),
          NodeBuilder("").Label(kLayer1, "nn-1").Label(kLayer2, n < 2 ? "spine-0" : "spine-1"));
    }
  }
  // Member g-0 of team-b's gang of two 8-GPU pods, its gang needing 16, asking for `level`.
  static PendingPod GangPending() {
    PendingPod pending = Pending("g-0", 8);
    pending.workload = "ns-team-b/g";
    pending.workload_size = 2;
    return pending;
  }
  static Preemptor GangPreemptor(const PendingPod& pending, const std::string& level) {
    Preemptor p = PreemptorOf(pending);
    p.workload = pending.workload;
    p.workload_size = pending.workload_size;
    p.need = ResourceList{{kGpu, 16}};
    p.required_topology = level;
    return p;
  }
  Selection PlanGang(VictimPlanner& planner, const std::string& level) {
    const PendingPod pending = GangPending();
    return planner.Plan(*policy_->FindTeam("team-b"), pending, GangPreemptor(pending, level),
                        /*members=*/2);
  }
  std::string SpineOf(const std::string& node) const {
    return node == "p5-0" || node == "p5-1" ? "spine-0" : "spine-1";
  }
};

TEST_F(TopologyPlannerTest, TheGangsVictimsAreInsideTheDomainThatNeedsTheFewest) {
  // spine-0: p5-0 full (a-0, a-1), p5-1 half (a-2); spine-1: p5-2 and p5-3 half (a-3, a-4).
  Run("a-0", "p5-0", 0);
  Run("a-1", "p5-0", 1);
  Run("a-2", "p5-1", 2);
  Run("a-3", "p5-2", 3);
  Run("a-4", "p5-3", 4);
  {
    // Without the topology the victims free a node for each member, anywhere: a-3 (p5-2) and
    // a-4 (p5-3), the most recently started pods whose nodes they free — never one node only.
    VictimPlanner planner = Planner();
    const Selection plain = PlanGang(planner, "");
    ASSERT_EQ(plain.outcome, Selection::Outcome::kVictims) << plain.explanation;
    Names freed = Victims(planner, plain);
    std::sort(freed.begin(), freed.end());
    EXPECT_EQ(freed, (Names{"a-3", "a-4"}));
  }
  VictimPlanner planner = Planner();
  const Selection sel = PlanGang(planner, kLayer2);
  ASSERT_EQ(sel.outcome, Selection::Outcome::kVictims) << sel.explanation;
  Names victims = Victims(planner, sel);
  std::sort(victims.begin(), victims.end());
  EXPECT_EQ(victims, (Names{"a-3", "a-4"}));  // spine-0 would take three
  EXPECT_EQ(SpineOf(sel.node), "spine-1");
  for (const Selection::Victim& v : sel.victims) {
    EXPECT_EQ(v.reason, PreemptionReason::kReclaim);
  }
  // The trials left nothing behind: committing the choice frees exactly its victims.
  const std::vector<RoundVictim> taken = planner.Commit(PreemptorOf(Pending("g-0", 8)), sel);
  EXPECT_EQ(taken.size(), 2u);
  for (const Candidate& c : planner.candidates().all()) {
    EXPECT_EQ(c.excluded, c.name == "a-3" || c.name == "a-4") << c.name;
  }
}

TEST_F(TopologyPlannerTest, AGangThatFitsInADomainNowIsClaimedThereWithoutVictims) {
  // 8 GPUs free on p5-1 and p5-3 each, but no domain has two free nodes... until a-4 is gone.
  Run("a-0", "p5-0", 0);
  Run("a-1", "p5-0", 1);
  Run("a-3", "p5-2", 3);
  {
    VictimPlanner planner = Planner();
    const Selection sel = PlanGang(planner, kLayer2);
    ASSERT_EQ(sel.outcome, Selection::Outcome::kVictims) << sel.explanation;
    EXPECT_EQ(Victims(planner, sel), (Names{"a-3"}));  // spine-1 then has two free nodes
  }
  Terminating("a-3");
  VictimPlanner planner = Planner();
  const Selection sel = PlanGang(planner, kLayer2);
  EXPECT_EQ(sel.outcome, Selection::Outcome::kFits) << sel.explanation;
  EXPECT_EQ(SpineOf(sel.node), "spine-1");
  EXPECT_TRUE(sel.victims.empty());
}

TEST_F(TopologyPlannerTest, NoDomainThatCanBeFreedMeansNoVictimsAndSaysWhy) {
  // team-a at its nominal (protected) with a pod in each spine: 24 GPUs free, quota for the
  // gang, but no spine with two free nodes, and nothing may be taken.
  Run("a-0", "p5-0", 0);
  Run("a-1", "p5-2", 1);
  VictimPlanner planner = Planner();
  const Selection sel = PlanGang(planner, kLayer2);
  EXPECT_EQ(sel.outcome, Selection::Outcome::kNoVictims);
  EXPECT_TRUE(sel.victims.empty());
  EXPECT_NE(sel.explanation.find("no network-node-layer-2 domain of ml.p5.48xlarge can be freed "
                                 "for 2 pods of nvidia.com/gpu: 8 by pods it may preempt inside "
                                 "it (2 of 2 domains could hold them)"),
            std::string::npos)
      << sel.explanation;
  // Asking for a level the flavor does not have: no domain at all.
  const Selection unknown = PlanGang(planner, "example.com/rack");
  EXPECT_EQ(unknown.outcome, Selection::Outcome::kNoVictims);
  EXPECT_NE(unknown.explanation.find("(0 of 0 domains could hold them)"), std::string::npos)
      << unknown.explanation;
  // Without the topology its two members fit now on p5-1 and p5-3: claimed, nothing taken.
  VictimPlanner anywhere = Planner();
  const Selection plain = PlanGang(anywhere, "");
  EXPECT_EQ(plain.outcome, Selection::Outcome::kFits) << plain.explanation;
  EXPECT_TRUE(plain.victims.empty());
}

// A gang whose members could not all be placed even with every victim the rules allow gets
// none: room for some of its members only would not let it run.
TEST_F(TopologyPlannerTest, NoVictimsForAGangThatCouldNotRunWhole) {
  Run("a-0", "p5-0", 0);  // team-a borrows: its pods may be reclaimed
  Run("a-1", "p5-1", 1);
  Run("a-2", "p5-2", 2);
  PendingPod pending = GangPending();
  pending.workload_size = 5;  // five whole nodes on four
  Preemptor p = GangPreemptor(pending, "");
  p.workload_size = 5;
  p.need = ResourceList{{kGpu, 40}};
  VictimPlanner planner = Planner();
  const Selection sel = planner.Plan(*policy_->FindTeam("team-b"), pending, p, /*members=*/5);
  EXPECT_EQ(sel.outcome, Selection::Outcome::kNoVictims);
  EXPECT_TRUE(sel.victims.empty());
  EXPECT_NE(sel.explanation.find("no room on ml.p5.48xlarge can be freed for 5 pods of "
                                 "nvidia.com/gpu: 8 by pods it may preempt"),
            std::string::npos)
      << sel.explanation;
}

// A drain (a pod owed room that no node has) goes, of the nodes as close to room, to the one whose
// newest pod started first — its pods likely end first — and stays on the nodes it was given
// while no node has room for it now; a node with room now takes it. A flavor another drain took
// this run is passed by.
TEST_F(PlannerTest, ADrainGoesWhereThePodsStartedFirstAndStaysThere) {
  // team-a's pods within its nominal of 16 fill both nodes; team-b's 8 are free in the cohort.
  policy_ = PolicyBuilder()
                .Team("team-a", "c")
                .Quota(kP5, kGpu, 16)
                .Team("team-b", "c")
                .Quota(kP5, kGpu, 8)
                .Build();
  source_ = std::make_unique<FakeSource>(policy_);
  source_->WithNode("p5-0").WithNode("p5-1");
  running_.clear();
  for (int i = 0; i < 4; ++i) Run("a-" + std::to_string(i), i < 2 ? "p5-1" : "p5-0", i);
  auto drained = [&](const Names& kept, const std::vector<NameId>& skip = {}) {
    VictimPlanner planner = Planner();
    const PendingPod pending = Pending("b-0", 8);
    std::optional<VictimPlanner::Drain> drain =
        planner.PlanDrain(*policy_->FindTeam("team-b"), pending, PreemptorOf(pending),
                          /*members=*/1, skip, /*within_nominal=*/true, kept);
    Names nodes;
    if (drain) {
      for (const auto& [node, amount] : drain->nodes) nodes.push_back(node);
    }
    return nodes;
  };
  EXPECT_EQ(drained({}), Names{"p5-1"});  // a-1 (p5-1) started two minutes before a-3 (p5-0)
  EXPECT_EQ(drained({"p5-0"}), Names{"p5-0"});
  EXPECT_EQ(drained({}, {P5()}), Names{});  // another drain took the flavor this run
  // A node full of pods taskgov does not know (of no team: no candidates) may never empty: it
  // counts as started now, and goes last.
  source_->WithNode("p5-2");
  source_->Place(TeamNames().Intern("no-team"), "p5-2", 8);
  EXPECT_EQ(drained({}), Names{"p5-1"});
  source_->WithNode("p5-3");  // empty
  EXPECT_EQ(drained({"p5-0"}), Names{"p5-3"});
}

// A starving gang that requires one domain has its nodes drained inside one: the domain whose
// nodes lack the least together (spine-1: 2 + 7 GPUs missing, against spine-0's 4 + 6), not the
// nodes closest to room anywhere (p5-2, then p5-0).
TEST_F(TopologyPlannerTest, AGangsDrainIsInsideTheDomainThatLacksTheLeast) {
  Start(64);  // team-b's pods and the gang stay within its nominal quota
  const NameId b = TeamNames().Intern("team-b");
  source_->Place(b, "p5-0", 4);
  source_->Place(b, "p5-1", 6);
  source_->Place(b, "p5-2", 2);
  source_->Place(b, "p5-3", 7);
  auto drained = [&](const std::string& level) {
    VictimPlanner planner = Planner();
    const PendingPod pending = GangPending();
    std::optional<VictimPlanner::Drain> drain =
        planner.PlanDrain(*policy_->FindTeam("team-b"), pending, GangPreemptor(pending, level),
                          /*members=*/2, {}, /*within_nominal=*/true);
    Names nodes;
    if (drain) {
      for (const auto& [node, amount] : drain->nodes) nodes.push_back(node);
    }
    std::sort(nodes.begin(), nodes.end());
    return nodes;
  };
  EXPECT_EQ(drained(""), (Names{"p5-0", "p5-2"}));
  EXPECT_EQ(drained(kLayer2), (Names{"p5-2", "p5-3"}));
  EXPECT_EQ(drained("example.com/rack"), Names{});  // a level it does not have: no drain
}

}  // namespace
}  // namespace taskgov::scheduler::actions
