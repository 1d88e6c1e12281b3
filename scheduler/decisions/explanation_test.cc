#include "scheduler/decisions/explanation.h"

#include <random>
#include <regex>

#include <gtest/gtest.h>

#include "scheduler/decisions/admission.h"
#include "scheduler/testing/admission_fixture.h"
#include "scheduler/testing/builders.h"

namespace taskgov::scheduler::decisions {
namespace {

using ledger::Ledger;
using model::kUnlimited;
using model::NoTeamAction;
using model::Pod;
using model::PodPhase;
using model::QueueingStrategy;
using testing::NodeBuilder;
using testing::PodBuilder;
using testing::PolicyBuilder;

constexpr char kP5[] = "ml.p5.48xlarge";
constexpr char kG5[] = "ml.g5.12xlarge";
constexpr char kGpu[] = "nvidia.com/gpu";

class ExplanationTest : public testing::AdmissionFixture {
 protected:
  // Whether the filter admits `pod` on some node (a reservation taken, then given back by
  // forgetting the pod).
  // `nodes`: those kube-scheduler sends (default: every node).
  bool Admits(const Pod& pod, const std::vector<std::string>& nodes = {}) {
    FilterArgs args;
    args.pod = pod;
    args.node_names = nodes.empty() ? nodes_ : nodes;
    const bool admitted = !admission_->Filter(args).feasible.empty();
    (void)book_->Release(pod.uid);
    return admitted;
  }
  // The pod's explanation; its outlook alone (what the requeuer asks: no words, the first
  // admissible flavor ends it) must be the same.
  Explanation Explain(const Pod& pod) {
    Explanation e = admission_->Explain(pod);
    EXPECT_EQ(OutlookName(admission_->OutlookOf(pod, /*known_to_wait=*/false)),
              OutlookName(e.outlook))
        << pod.key() << ": " << e.summary;
    return e;
  }
  // Runs `pod` on the node of `flavor` with the most free GPUs: bound, as the informer reports.
  void RunOn(const std::string& node, const Pod& pod) {
    Pod bound = pod;
    bound.node_name = node;
    bound.phase = PodPhase::kRunning;
    cluster_->OnPodUpsert(bound);
  }
  static const FlavorExplanation& Pass(const Explanation& e, const std::string& flavor,
                                       Ledger::Mode mode) {
    for (const FlavorExplanation& f : e.flavors) {
      if (f.flavor == flavor && f.mode == mode) return f;
    }
    ADD_FAILURE() << "no pass " << flavor << " " << ModeName(mode);
    static const FlavorExplanation none;
    return none;
  }
  static const Check& CheckOf(const FlavorExplanation& f, const std::string& rule) {
    for (const Check& c : f.checks) {
      if (c.rule == rule) return c;
    }
    ADD_FAILURE() << "no check " << rule << " for " << f.flavor;
    static const Check none;
    return none;
  }
};

// Every amount a quota check's "To pass" states is the arithmetic of the numbers beside it (its
// quota line), and every remedy it names is one those numbers allow: a team asked to use less
// uses that much; the borrowers blamed borrow.
void ExpectChangeFromNumbers(const FlavorExplanation& f, const std::string& context) {
  const Check* quota = nullptr;
  for (const Check& c : f.checks) {
    if (c.rule == "quota" && !c.passed) quota = &c;
  }
  if (quota == nullptr) return;
  const std::string& change = quota->change;
  int failing = 0;
  for (const QuotaLine& l : f.quota) failing += l.fits() ? 0 : 1;
  ASSERT_EQ(failing, 1) << context << ": one governed resource in these tests";
  const QuotaLine& l =
      *std::find_if(f.quota.begin(), f.quota.end(), [](const QuotaLine& q) { return !q.fits(); });
  const std::string why = context + " (" + std::string(ModeName(f.mode)) + "): " + change;
  std::smatch m;
  int remedies = 0;
  auto found = [&](const char* pattern) {
    const bool hit = std::regex_search(change, m, std::regex(pattern));
    remedies += hit ? 1 : 0;
    return hit;
  };
  auto n = [&](int i) { return std::stoll(m[i].str()); };
  if (found(R"(must use (\d+) \S+ less on \S+ \(it uses (\d+) of (\d+))")) {
    EXPECT_EQ(n(1), l.in_use + l.need - l.limit) << why;
    EXPECT_GT(n(1), 0) << why;
    EXPECT_LE(n(1), l.in_use) << why << ": it cannot use less than nothing";
    EXPECT_EQ(n(2), l.in_use) << why;
    EXPECT_EQ(n(3), l.limit) << why;
  }
  if (found(R"(it needs (\d+) \S+, more than .* of (\d+))")) {
    EXPECT_EQ(n(1), l.need) << why;
    EXPECT_EQ(n(2), l.limit) << why;
    EXPECT_GT(l.need, l.limit) << why;
  }
  if (std::regex_search(change, m, std::regex(R"(nominal quota be raised to (\d+))"))) {
    EXPECT_EQ(n(1), l.in_use + l.need) << why;
  }
  if (std::regex_search(change, m, std::regex(R"(borrowing limit be raised to (\d+))"))) {
    EXPECT_EQ(n(1), l.in_use + l.need - l.nominal) << why;
  }
  if (found(R"(grow by (\d+))")) {
    EXPECT_EQ(n(1), l.need - l.ceiling) << why;
  }
  if (found(R"(must have (\d+) \S+ more idle)")) {
    EXPECT_EQ(n(1), l.pool_need - l.pool_free) << why;
    EXPECT_TRUE(l.team_fits) << why;
    if (std::regex_search(change, m, std::regex(R"(other teams borrow (\d+))"))) {
      EXPECT_EQ(n(1), l.others_borrowed) << why;
      EXPECT_GT(l.others_borrowed, 0) << why;
    } else {
      EXPECT_EQ(l.others_borrowed, 0) << why;
      EXPECT_NE(change.find("nobody else borrows"), std::string::npos) << why;
    }
  }
  EXPECT_EQ(remedies, 1) << why << ": exactly one remedy for the one failing line";
}

TEST_F(ExplanationTest, WithinNominalIsAdmissibleAndEveryRuleSaysWhy) {
  Start(TwoTeams());
  AddNodes("p5", kP5, 2, 8);
  const Explanation e = Explain(GpuPod("w-0", "team-a", 8));
  EXPECT_EQ(e.outlook, Outlook::kAdmissible);
  EXPECT_EQ(e.team, "team-a");
  const FlavorExplanation& f = Pass(e, kP5, Ledger::Mode::kWithinNominal);
  EXPECT_TRUE(f.admissible);
  EXPECT_EQ(CheckOf(f, "nodes").detail, "2 ml.p5.48xlarge nodes");
  EXPECT_EQ(CheckOf(f, "room").detail,
            "2 of 2 ml.p5.48xlarge nodes have room for 8 nvidia.com/gpu");
  EXPECT_EQ(
      CheckOf(f, "quota").detail,
      "nvidia.com/gpu: needs 8, in use 0 of 8 (nominal 8, borrowing limit unlimited); 8 of it "
      "from the cohort's pool, which has 16 free");
  ASSERT_EQ(f.quota.size(), 1u);
  EXPECT_EQ(f.quota[0].need, 8);
  EXPECT_EQ(f.quota[0].limit, 8);
  EXPECT_TRUE(f.quota[0].fits());
  EXPECT_NE(e.summary.find("would be admitted now on ml.p5.48xlarge, within nominal quota"),
            std::string::npos)
      << e.summary;
  EXPECT_TRUE(Admits(GpuPod("w-0", "team-a", 8)));
}

TEST_F(ExplanationTest, OverNominalNamesTheNumbersAndBorrowingIsAdmissible) {
  Start(TwoTeams());
  AddNodes("p5", kP5, 2, 8);
  RunOn("p5-0", GpuPod("run-0", "team-a", 8));
  const Explanation e = Explain(GpuPod("w-1", "team-a", 4));
  const FlavorExplanation& nominal = Pass(e, kP5, Ledger::Mode::kWithinNominal);
  EXPECT_FALSE(nominal.admissible);
  const Check& quota = CheckOf(nominal, "quota");
  EXPECT_FALSE(quota.passed);
  EXPECT_EQ(
      quota.detail,
      "nvidia.com/gpu: needs 4, in use 8 of 8 (nominal 8, borrowing limit unlimited); 4 of it "
      "from the cohort's pool, which has 8 free");
  EXPECT_EQ(quota.change,
            "team-a must use 4 nvidia.com/gpu less on ml.p5.48xlarge (it uses 8 of 8 "
            "nvidia.com/gpu: its pods finishing, or preempted for it), or its nominal quota be "
            "raised to 12 nvidia.com/gpu");
  const FlavorExplanation& borrowing = Pass(e, kP5, Ledger::Mode::kBorrowing);
  EXPECT_TRUE(borrowing.admissible);
  EXPECT_TRUE(CheckOf(borrowing, "fairShare").passed);
  EXPECT_EQ(e.outlook, Outlook::kAdmissible);
  EXPECT_NE(e.summary.find("on ml.p5.48xlarge, borrowing"), std::string::npos) << e.summary;
  EXPECT_TRUE(Admits(GpuPod("w-1", "team-a", 4)));
}

TEST_F(ExplanationTest, TheBorrowingLimitAndTheCohortsIdleQuotaSayWhatMustChange) {
  Start(TwoTeams(/*a_borrow=*/2));
  AddNodes("p5", kP5, 3, 8);
  RunOn("p5-0", GpuPod("run-0", "team-a", 8));
  Explanation e = Explain(GpuPod("w-1", "team-a", 4));
  EXPECT_EQ(e.outlook, Outlook::kWaiting);
  const Check& limit = CheckOf(Pass(e, kP5, Ledger::Mode::kBorrowing), "quota");
  EXPECT_FALSE(limit.passed);
  EXPECT_EQ(limit.change,
            "team-a must use 2 nvidia.com/gpu less on ml.p5.48xlarge (it uses 8 of 10 "
            "nvidia.com/gpu: its pods finishing, or preempted for it), or its borrowing limit be "
            "raised to 4 nvidia.com/gpu");
  EXPECT_FALSE(Admits(GpuPod("w-1", "team-a", 4)));

  // Within the limit, but team-b uses its own quota: nothing is idle to lend.
  RunOn("p5-1", GpuPod("b-0", "team-b", 8));
  e = Explain(GpuPod("w-2", "team-a", 1));
  const Check& pool = CheckOf(Pass(e, kP5, Ledger::Mode::kBorrowing), "quota");
  EXPECT_FALSE(pool.passed);
  EXPECT_NE(pool.detail.find("1 of it from the cohort's pool, which has 0 free"), std::string::npos)
      << pool.detail;
  EXPECT_NE(pool.detail.find("(other teams borrow 0)"), std::string::npos) << pool.detail;
  EXPECT_EQ(pool.change,
            "the cohort must have 1 nvidia.com/gpu more idle on ml.p5.48xlarge: nobody else "
            "borrows there: the other teams use their own quota, which comes back to the pool as "
            "their pods finish, or more quota lent to it");
  EXPECT_EQ(e.outlook, Outlook::kWaiting);
  EXPECT_FALSE(Admits(GpuPod("w-2", "team-a", 1)));
}

// The demo's waiting gang (issue 38, item 4): a uses nothing and its gang needs more than its
// nominal quota; b uses its own. No "a must use less", no borrowers blamed.
TEST_F(ExplanationTest, AGangLargerThanTheNominalQuotaOfAnIdleTeamIsToldSo) {
  Start(TwoTeams(/*a_borrow=*/4));
  AddNodes("p5", kP5, 2, 8);
  RunOn("p5-1", GpuPod("b-0", "team-b", 8));
  Explanation e = Explain(GpuPod("w-0", "team-a", 12));
  const Check& nominal = CheckOf(Pass(e, kP5, Ledger::Mode::kWithinNominal), "quota");
  EXPECT_EQ(nominal.change,
            "it needs 12 nvidia.com/gpu, more than team-a's nominal quota of 8 nvidia.com/gpu on "
            "ml.p5.48xlarge: it can run only by borrowing, or if its nominal quota be raised to 12 "
            "nvidia.com/gpu");
  const Check& borrowing = CheckOf(Pass(e, kP5, Ledger::Mode::kBorrowing), "quota");
  EXPECT_EQ(borrowing.change,
            "the cohort must have 4 nvidia.com/gpu more idle on ml.p5.48xlarge: nobody else "
            "borrows there: the other teams use their own quota, which comes back to the pool as "
            "their pods finish, or more quota lent to it");
  for (const FlavorExplanation& f : e.flavors) ExpectChangeFromNumbers(f, "idle team");

  // Now b borrows 4 of a's nominal, which a wants back: the borrowers are named with what they
  // borrow.
  Start(TwoTeams(/*a_borrow=*/4));
  AddNodes("p5", kP5, 2, 8);
  RunOn("p5-0", GpuPod("a-0", "team-a", 4));
  RunOn("p5-1", GpuPod("b-0", "team-b", 8));
  RunOn("p5-0", GpuPod("b-1", "team-b", 4));
  e = Explain(GpuPod("w-1", "team-a", 4));
  const Check& reclaim = CheckOf(Pass(e, kP5, Ledger::Mode::kWithinNominal), "quota");
  EXPECT_EQ(reclaim.change,
            "the cohort must have 4 nvidia.com/gpu more idle on ml.p5.48xlarge: other teams "
            "borrow 4 nvidia.com/gpu there, their borrowed pods finishing or reclaimed, or more "
            "quota lent to it");
  for (const FlavorExplanation& f : e.flavors) ExpectChangeFromNumbers(f, "borrowing team");
}

// Issue 37: a gang asking for a required topology level is told which domain would hold it, or
// why none does with the numbers — as the filter refuses it.
TEST_F(ExplanationTest, ARequiredTopologyGangIsToldWhichDomainHoldsItOrWhyNone) {
  Start(PolicyBuilder().Team("team-a").Quota(kP5, kGpu, 64).Build());
  for (int i = 0; i < 4; ++i) {
    const std::string name = "p5-" + std::to_string(i);
    cluster_->OnNodeUpsert(
        NodeBuilder(name)
            .InstanceType(kP5)
            .Allocatable(kGpu, "8")
            .Label("topology.k8s.aws/network-node-layer-1", "l1")
            .Label("topology.k8s.aws/network-node-layer-2", i < 2 ? "spine-a" : "spine-b"));
    nodes_.push_back(name);
  }
  RunOn("p5-0", GpuPod("busy-0", "team-a", 4));
  RunOn("p5-2", GpuPod("busy-2", "team-a", 4));
  auto member = [](const std::string& name, const std::string& level) {
    Pod pod = GpuPod(name, "team-a", 8);
    pod.labels["kueue.x-k8s.io/pod-group-name"] = "job";
    pod.annotations["kueue.x-k8s.io/pod-group-total-count"] = "2";
    pod.annotations["kueue.x-k8s.io/podset-required-topology"] = level;
    return pod;
  };
  const Pod spine = member("w-0", "topology.k8s.aws/network-node-layer-2");
  const Explanation narrow = Explain(spine);
  const Check& refused = CheckOf(Pass(narrow, kP5, Ledger::Mode::kWithinNominal), "topology");
  EXPECT_FALSE(refused.passed);
  EXPECT_EQ(refused.detail,
            "no network-node-layer-2 domain of ml.p5.48xlarge has room for 2 pods of 8 "
            "nvidia.com/gpu; the best has room for 1 (domain spine-a, 2 domains)");
  EXPECT_FALSE(Admits(spine)) << "the filter refuses it as Explain says";
  // At layer 1 the two free nodes are one domain.
  const Pod wide = member("w-1", "topology.k8s.aws/network-node-layer-1");
  const Explanation broad = Explain(wide);
  const Check& passed = CheckOf(Pass(broad, kP5, Ledger::Mode::kWithinNominal), "topology");
  EXPECT_TRUE(passed.passed) << passed.detail;
  EXPECT_EQ(passed.detail, "network-node-layer-1 domain l1 has room for 2 of its pods");
}

TEST_F(ExplanationTest, MoreThanTheTeamMayEverUseNeverFits) {
  Start(TwoTeams(/*a_borrow=*/2));
  AddNodes("p5", kP5, 2, 16);
  const Explanation e = Explain(GpuPod("huge", "team-a", 12));
  EXPECT_EQ(e.outlook, Outlook::kNeverFits);
  const Check& quota = CheckOf(Pass(e, kP5, Ledger::Mode::kBorrowing), "quota");
  EXPECT_EQ(quota.change,
            "it needs more than team-a may ever use on ml.p5.48xlarge: its nominal plus "
            "borrowing limit must grow by 2 nvidia.com/gpu, or it must ask for less");
  EXPECT_NE(e.summary.find("can never run as it is"), std::string::npos) << e.summary;
}

TEST_F(ExplanationTest, FullNodesWaitAndAPodBiggerThanAnyNodeNeverFits) {
  Start(TwoTeams());
  AddNodes("p5", kP5, 1, 8);
  RunOn("p5-0", GpuPod("run-0", "team-b", 6));
  Explanation e = Explain(GpuPod("w-0", "team-a", 4));
  const Check& room = CheckOf(Pass(e, kP5, Ledger::Mode::kWithinNominal), "room");
  EXPECT_FALSE(room.passed);
  EXPECT_EQ(room.detail,
            "no ml.p5.48xlarge node has room for 4 nvidia.com/gpu (1 of 1 schedulable; most free "
            "on one node: 2 nvidia.com/gpu)");
  EXPECT_EQ(room.change,
            "pods on a ml.p5.48xlarge node must finish or be preempted to free 4 nvidia.com/gpu");
  EXPECT_EQ(e.outlook, Outlook::kWaiting);
  EXPECT_FALSE(Admits(GpuPod("w-0", "team-a", 4)));

  e = Explain(GpuPod("w-1", "team-a", 9));
  EXPECT_EQ(e.outlook, Outlook::kNeverFits);
  EXPECT_NE(
      CheckOf(Pass(e, kP5, Ledger::Mode::kBorrowing), "room").detail.find("no node is that big"),
      std::string::npos);
}

// Nodes that are full now and a quota the pod can never have: the summary names the quota (what
// lasts), not the full nodes (what passes) that the filter meets first.
TEST_F(ExplanationTest, ANeverFitsSummaryNamesWhatLasts) {
  Start(TwoTeams(/*a_borrow=*/2));
  AddNodes("p5", kP5, 2, 16);
  RunOn("p5-0", GpuPod("run-0", "team-b", 16));
  RunOn("p5-1", GpuPod("run-1", "team-b", 16));
  const Explanation e = Explain(GpuPod("huge", "team-a", 12));
  EXPECT_EQ(e.outlook, Outlook::kNeverFits);
  const FlavorExplanation& borrowing = Pass(e, kP5, Ledger::Mode::kBorrowing);
  EXPECT_FALSE(CheckOf(borrowing, "room").passed);
  EXPECT_FALSE(CheckOf(borrowing, "room").lasting);
  EXPECT_TRUE(CheckOf(borrowing, "quota").lasting);
  EXPECT_NE(e.summary.find("can never run as it is: ml.p5.48xlarge, borrowing: nvidia.com/gpu"),
            std::string::npos)
      << e.summary;
  EXPECT_NE(e.summary.find("may ever use"), std::string::npos) << e.summary;
}

TEST_F(ExplanationTest, QuotaOnAnInstanceTypeWithoutNodes) {
  Start(PolicyBuilder().Team("team-a").Quota(kG5, kGpu, 4).Build());
  AddNodes("p5", kP5, 1, 8);
  const Explanation e = Explain(GpuPod("w-0", "team-a", 1));
  const Check& nodes = CheckOf(Pass(e, kG5, Ledger::Mode::kWithinNominal), "nodes");
  EXPECT_FALSE(nodes.passed);
  EXPECT_EQ(nodes.change, "ml.g5.12xlarge nodes must join the cluster");
  EXPECT_EQ(e.outlook, Outlook::kNeverFits);
}

// A pod that selects an instance type its team has no quota on is judged there, as
// kube-scheduler sends it there: it can never run, whatever the team's other flavors hold.
TEST_F(ExplanationTest, AnInstanceTypeTheTeamHasNoQuotaOnNeverFits) {
  Start(PolicyBuilder().Team("team-d").Quota(kG5, kGpu, 2).Build());
  AddNodes("p5", kP5, 2, 8);
  AddNodes("g5", kG5, 2, 4);
  const Pod pod = PodBuilder("w-0")
                      .Namespace("ns-team-d")
                      .Gpus(1)
                      .NodeSelector("node.kubernetes.io/instance-type", kP5);
  const Explanation e = Explain(pod);
  EXPECT_EQ(e.outlook, Outlook::kNeverFits);
  EXPECT_EQ(e.summary,
            "ns-team-d/w-0 can never run as it is: team-d has no quota on ml.p5.48xlarge, the "
            "only instance type its nodeSelector and node affinity allow. To run: ask for an "
            "instance type team-d has quota on (ml.g5.12xlarge), or give team-d quota on "
            "ml.p5.48xlarge.");
  // Its team's flavor is not where it may go: no g5 node takes it.
  const Check& nodes = CheckOf(Pass(e, kG5, Ledger::Mode::kWithinNominal), "nodes");
  EXPECT_FALSE(nodes.passed);
  EXPECT_EQ(nodes.detail,
            "no ml.g5.12xlarge node accepts ns-team-d/w-0: 2 nodes not matching its nodeSelector");
  EXPECT_FALSE(Admits(pod, {"p5-0", "p5-1"}));  // the nodes its selector allows

  // Selecting g5 (or nothing), it is judged on its team's g5 quota.
  const Explanation g5 = Explain(PodBuilder("w-1")
                                     .Namespace("ns-team-d")
                                     .Gpus(1)
                                     .NodeSelector("node.kubernetes.io/instance-type", kG5));
  EXPECT_EQ(g5.outlook, Outlook::kAdmissible);
  EXPECT_EQ(Explain(GpuPod("w-2", "team-d", 1)).outlook, Outlook::kAdmissible);
}

TEST_F(ExplanationTest, QueueOrderNamesThePodAheadAndThePriority) {
  Start(PolicyBuilder()
            .Team("team-a", "c")
            .Quota(kP5, kGpu, 8, 0)
            .Queueing(QueueingStrategy::kStrictFIFO)
            .Build());
  AddNodes("p5", kP5, 1, 8);
  RunOn("p5-0", GpuPod("base", "team-a", 6));
  cluster_->OnPodUpsert(PodBuilder("big").Namespace("ns-team-a").Gpus(8).Priority(100));
  const Pod small = PodBuilder("small").Namespace("ns-team-a").Gpus(2).Priority(1);
  const Explanation e = Explain(small);
  const Check& queue = CheckOf(Pass(e, kP5, Ledger::Mode::kWithinNominal), "queueOrder");
  EXPECT_FALSE(queue.passed);
  EXPECT_EQ(queue.detail, "team-a: waiting behind higher-ranked pod ns-team-a/big (StrictFIFO)");
  EXPECT_EQ(queue.change,
            "the pods ranked ahead of it (first: ns-team-a/big) must be admitted or leave first, "
            "or it must rank higher (priority 1; a higher priority class)");
  EXPECT_TRUE(CheckOf(Pass(e, kP5, Ledger::Mode::kWithinNominal), "quota").passed);
  EXPECT_EQ(e.outlook, Outlook::kWaiting);
  EXPECT_FALSE(Admits(small));
}

TEST_F(ExplanationTest, FairShareNamesTheTeamAheadWithTheShares) {
  Start(PolicyBuilder()
            .Team("lender", "c")
            .Quota(kP5, kGpu, 4)
            .Team("team-b", "c")
            .Quota(kP5, kGpu, 0)
            .Weight(3)
            .Team("team-c", "c")
            .Quota(kP5, kGpu, 0)
            .Weight(1)
            .Build());
  AddNodes("p5", kP5, 1, 8);
  for (int i = 0; i < 3; ++i) RunOn("p5-0", GpuPod("b-" + std::to_string(i), "team-b", 1));
  cluster_->OnPodUpsert(GpuPod("c-0", "team-c", 1, 5000));
  const Pod b3 = GpuPod("b-3", "team-b", 1, 100);
  const Explanation e = Explain(b3);
  const Check& fair = CheckOf(Pass(e, kP5, Ledger::Mode::kBorrowing), "fairShare");
  EXPECT_FALSE(fair.passed);
  EXPECT_EQ(fair.detail, "fair share: team-c (share 0.250) is ahead of team-b (share 0.333)");
  EXPECT_NE(fair.change.find("0.333 after admission"), std::string::npos) << fair.change;
  EXPECT_EQ(e.outlook, Outlook::kWaiting);
  EXPECT_FALSE(Admits(b3));
}

TEST_F(ExplanationTest, NoTeamInactiveTeamAndAGangWaitingForItsObject) {
  Start(PolicyBuilder().Team("team-a").Quota(kP5, kGpu, 8).NoTeam(NoTeamAction::kRefuse).Build());
  AddNodes("p5", kP5, 1, 8);
  Explanation e = Explain(PodBuilder("stray").Namespace("elsewhere").Gpus(1));
  EXPECT_EQ(e.outlook, Outlook::kNotGoverned);
  ASSERT_EQ(e.checks.size(), 1u);
  EXPECT_FALSE(e.checks[0].passed);
  EXPECT_NE(e.checks[0].detail.find("the policy refuses pods of no team"), std::string::npos);
  EXPECT_TRUE(e.flavors.empty());

  Start(PolicyBuilder().Team("team-a").Quota(kP5, kGpu, 8).Inactive().Build());
  e = Explain(GpuPod("w-0", "team-a", 1));
  EXPECT_EQ(e.outlook, Outlook::kWaiting);
  EXPECT_EQ(e.summary,
            "ns-team-a/w-0 waits: team-a is not active: its new pods are held. To run: the team "
            "must be made active in the policy.");
}

// A member seen before the PodGroup that declares its gang waits for it, with room and quota for
// it on every flavor: its outlook, explained or judged alone, is Waiting, never Admissible.
TEST_F(ExplanationTest, AMemberAwaitingItsPodGroupWaitsThoughAFlavorWouldTakeIt) {
  Start(PolicyBuilder().Team("team-a").Quota(kP5, kGpu, 8).Build());
  AddNodes("p5", kP5, 1, 8);
  cluster_->OnSynced(ObjectKind::kPodGroup);
  const Pod member = PodBuilder("pg-0")
                         .Namespace("ns-team-a")
                         .Gpus(1)
                         .Created(clock_.NowMs())
                         .Annotation("scheduling.k8s.io/group-name", "pg");
  cluster_->OnPodUpsert(member);
  const Explanation e = Explain(member);
  EXPECT_EQ(e.outlook, Outlook::kWaiting) << e.summary;
  EXPECT_TRUE(std::any_of(e.flavors.begin(), e.flavors.end(), [](const FlavorExplanation& f) {
    return f.admissible;
  })) << "a flavor would take it but for its PodGroup";
  EXPECT_EQ(admission_->OutlookOf(member, /*known_to_wait=*/false), Outlook::kWaiting);
}

// The explanation's verdict is the filter's: over random clusters, "Admissible" exactly when
// the filter admits.
// Issue 34: a gang not admitted yet is told whether all its members find room at once, and a
// workload disrupted repeatedly that its borrowing backs off — as the filter refuses them.
TEST_F(ExplanationTest, AGangIsToldItsMembersRoomAndABackedOffOneItsWait) {
  Start(TwoTeams());
  AddNodes("p5", kP5, 2, 8);
  RunOn("p5-0", GpuPod("b-0", "team-b", 6));
  RunOn("p5-1", GpuPod("b-1", "team-b", 6));
  Pod member = GpuPod("w-0", "team-a", 3);
  member.labels["kueue.x-k8s.io/pod-group-name"] = "wg";
  member.annotations["kueue.x-k8s.io/pod-group-total-count"] = "2";
  Explanation e = Explain(member);
  const Check& room = CheckOf(Pass(e, kP5, Ledger::Mode::kWithinNominal), "gangRoom");
  EXPECT_FALSE(room.passed);
  EXPECT_EQ(room.detail,
            "room for 0 of all 2 pods of its gang on ml.p5.48xlarge nodes at once: its quota is "
            "held only when all of them can run");
  EXPECT_NE(e.outlook, Outlook::kAdmissible);
  EXPECT_FALSE(Admits(member));

  Start(TwoTeams());
  AddNodes("p5", kP5, 2, 8);
  RunOn("p5-0", GpuPod("a-0", "team-a", 8));
  member.containers.front().requests.Set(kGpu, 2);
  cluster_->disruptions().Note(model::GangOf(member), clock_.NowMs() - 10'000);
  e = Explain(member);
  EXPECT_TRUE(CheckOf(Pass(e, kP5, Ledger::Mode::kBorrowing), "gangRoom").passed);
  const Check& backoff = CheckOf(Pass(e, kP5, Ledger::Mode::kBorrowing), "disruptedRecently");
  EXPECT_EQ(backoff.detail,
            "team-a: disrupted by preemption once, last 10s ago: it may borrow again in 50s "
            "(within its team's nominal quota it may run now)");
  EXPECT_NE(e.outlook, Outlook::kAdmissible);
  EXPECT_FALSE(Admits(member));
  clock_.Advance(50'000);
  EXPECT_EQ(Explain(member).outlook, Outlook::kAdmissible);
  EXPECT_TRUE(Admits(member));
}

TEST_F(ExplanationTest, AdmissibleExactlyWhenTheFilterAdmits) {
  std::mt19937 rng(17);
  int admissible = 0, refused = 0;
  for (int round = 0; round < 300; ++round) {
    const int64_t borrow = std::uniform_int_distribution<int>(0, 3)(rng) == 0 ? kUnlimited : 4;
    Start(PolicyBuilder()
              .Team("team-a", "c")
              .Quota(kP5, kGpu, 4, borrow)
              .Quota(kG5, kGpu, 2, borrow)
              .Team("team-b", "c")
              .Quota(kP5, kGpu, 4)
              .Quota(kG5, kGpu, 2)
              .Build());
    nodes_.clear();
    AddNodes("p5", kP5, 2, 4);
    AddNodes("g5", kG5, 1, 4);
    auto gpus = [&](int max) { return std::uniform_int_distribution<int>(0, max)(rng); };
    int i = 0;
    for (const std::string& node : nodes_) {
      for (const char* team : {"team-a", "team-b"}) {
        if (int n = gpus(2); n > 0) RunOn(node, GpuPod("r-" + std::to_string(i++), team, n));
      }
    }
    if (gpus(1) == 1) cluster_->OnPodUpsert(GpuPod("ahead", "team-a", gpus(3) + 1, 10));
    Pod pod = GpuPod("w", "team-a", gpus(5) + 1, 100);
    if (gpus(2) == 0) {  // a member of a pod group of 2 (all of it must find room), backing off
      pod.labels["kueue.x-k8s.io/pod-group-name"] = "wg";
      pod.annotations["kueue.x-k8s.io/pod-group-total-count"] = "2";
      if (gpus(1) == 1) {
        for (int64_t ago : {20'000, 10'000}) {
          cluster_->disruptions().Note(model::GangOf(pod), clock_.NowMs() - ago);
        }
      }
    }
    const Explanation e = Explain(pod);
    const bool admits = Admits(pod);
    EXPECT_EQ(e.outlook == Outlook::kAdmissible, admits) << "round " << round << ": " << e.summary;
    for (const FlavorExplanation& f : e.flavors) {
      ExpectChangeFromNumbers(f, "round " + std::to_string(round) + ", " + f.flavor);
    }
    (admits ? admissible : refused) += 1;
  }
  EXPECT_GT(admissible, 30);
  EXPECT_GT(refused, 30);
}

}  // namespace
}  // namespace taskgov::scheduler::decisions
