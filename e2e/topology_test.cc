// Topology-aware gangs (issue 37), through the real extender: 32 ml.p5.48xlarge nodes in 2
// network-node-layer-1 × 4 network-node-layer-2 × 4 nodes, labelled as HyperPod labels them
// (topology.k8s.aws/network-node-layer-1..3, kubernetes.io/hostname). Gangs of 4 × 8 GPUs ask for
// one layer-2 domain (kueue.x-k8s.io/podset-required-topology, as `hyp --required-topology`
// writes it): each lands whole in one domain — the tightest that fits — and one that no domain
// can hold waits with the numbers, though the cluster has GPUs enough, until a domain frees.
// kube-scheduler is played binding each pod to the first node the filter allows.

#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "e2e/scenario_test_util.h"
#include "e2e/topology_cluster.h"

namespace taskgov::e2e {
namespace {

class TopologyTest : public ScenarioTest {
 protected:
  [[nodiscard]] virtual const char* Policy() const { return kOneTeamTopologyPolicy; }
  void SetUp() override { StartHarness(TopologyCluster(Policy(), {"a", "b"})); }

  // Member i of gang `job` of `size` × 8 GPUs, asking for one layer-2 domain (required, or
  // preferred).
  static PodSpec Member(const std::string& job, int i, int size = 4, bool required = true) {
    PodSpec spec = KueueGangPod("a", job, i, size, 8);
    spec.annotations[required ? "kueue.x-k8s.io/podset-required-topology"
                              : "kueue.x-k8s.io/podset-preferred-topology"] = kLayer2;
    return spec;
  }
  // A lone 8-GPU pod on node n.
  static PodSpec Busy(int n) {
    PodSpec spec = GpuPod("a", "busy-" + std::to_string(n), 8);
    spec.node_selector["kubernetes.io/hostname"] = NodeName(n);
    return spec;
  }
  // The layer-2 domains the running members of `job` are on.
  std::set<std::string> SpinesOf(const std::string& job) {
    std::set<std::string> out;
    for (const PodView& p : h().Pods()) {
      if (!p.job.starts_with(job + "-") || p.node.empty()) continue;
      out.insert(Spine(NodeNumber(p.node)));
    }
    return out;
  }
  size_t Running(const std::string& job) {
    return h().CountPods([&](const PodView& p) {
      return p.job.starts_with(job + "-") && !p.node.empty() && p.phase == "Running";
    });
  }
};

TEST_F(TopologyTest, RequiredGangsLandInOneDomainEachOrWaitWithTheNumbers) {
  // A busy node in spine-0 (p5-1) and in each of spines 2..7: only spine-1 has 4 free nodes.
  std::vector<int> busy = {1};
  for (int spine = 2; spine < 8; ++spine) busy.push_back(spine * 4);
  for (int n : busy) ASSERT_TRUE(h().Submit(Busy(n)).ok());
  ASSERT_TRUE(h().RunUntil([&] { return Running("busy") == busy.size(); }, 10));

  // x lands whole in spine-1, though p5-0, p5-2 and p5-3 (spine-0) come first and have room.
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(h().Submit(Member("x", i)).ok());
  ASSERT_TRUE(h().RunUntil([&] { return Running("x") == 4; }, 10));
  EXPECT_EQ(SpinesOf("x"), (std::set<std::string>{"spine-1"}));
  // The admin API (job describe, the console's task page) says where it was placed.
  h().api().SetAccessReviews({{"t-admin", "admin", {}, {"taskgov"}}},
                             {{"admin", "get", "taskgov.io", "workloads", ""}});
  common::Result<common::testing::HttpReply> described =
      h().extender().Admin("/api/v1/workloads/" + Ns("a") + "/x", "t-admin");
  ASSERT_TRUE(described.ok()) << described.error().message;
  EXPECT_EQ(described->status, 200) << described->body;
  EXPECT_NE(described->body.find(R"("topology":{"level":"topology.k8s.aws/network-node-layer-2",)"
                                 R"("domain":"spine-1","required":true})"),
            std::string::npos)
      << described->body;

  // 7 spines × 3 free nodes: 168 free GPUs, but no spine has 4 free nodes: y waits, saying so.
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(h().Submit(Member("y", i)).ok());
  StepReport step = h().Step();
  const Attempt* y = step.Find(Ns("a") + "/y-0");
  ASSERT_NE(y, nullptr);
  EXPECT_EQ(y->outcome, Attempt::Outcome::kRefused);
  EXPECT_NE(y->reason.find("no network-node-layer-2 domain of ml.p5.48xlarge has room for 4 pods "
                           "of 8 nvidia.com/gpu; the best has room for 3"),
            std::string::npos)
      << y->reason;
  for (int k = 0; k < 3; ++k) h().Step();
  EXPECT_EQ(Running("y"), 0u);
  // Prometheus sees one workload of team a waiting for its topology.
  common::Result<metrics::testing::Exposition> scraped = h().extender().ScrapeMetrics();
  ASSERT_TRUE(scraped.ok()) << scraped.error().message;
  EXPECT_EQ(scraped->Value("taskgov_topology_waiting_workloads", {{"team", "a"}}), 1);

  // A busy node of spine-5 frees: y runs there, whole.
  ASSERT_TRUE(h().Finish("busy-20").ok());
  ASSERT_TRUE(h().RunUntil([&] { return Running("y") == 4; }, 10));
  EXPECT_EQ(SpinesOf("y"), (std::set<std::string>{"spine-5"}));
  scraped = h().extender().ScrapeMetrics();
  ASSERT_TRUE(scraped.ok()) << scraped.error().message;
  EXPECT_EQ(scraped->Value("taskgov_topology_waiting_workloads", {{"team", "a"}}), 0);

  // spine-0's busy node frees: the next gang takes spine-0, the tightest that holds it.
  ASSERT_TRUE(h().Finish("busy-1").ok());
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(h().Submit(Member("z", i)).ok());
  ASSERT_TRUE(h().RunUntil([&] { return Running("z") == 4; }, 10));
  EXPECT_EQ(SpinesOf("z"), (std::set<std::string>{"spine-0"}));
}

// A preferred level no single domain can hold: the gang still runs, in the fewest domains — the
// freest spine, then the tightest that completes it (spine-0's 3 free nodes, not a 4-node one);
// the harness binds where prioritize scores highest (the first node by name among equals:
// p5-0, p5-10, p5-11, ... would spread it over three spines).
TEST_F(TopologyTest, APreferredGangLargerThanAnyDomainRunsInTheFewestDomains) {
  ASSERT_TRUE(h().Submit(Busy(1)).ok());
  ASSERT_TRUE(h().RunUntil([&] { return Running("busy") == 1; }, 10));
  for (int i = 0; i < 6; ++i) {
    ASSERT_TRUE(h().Submit(Member("p", i, /*size=*/6, /*required=*/false)).ok());
  }
  ASSERT_TRUE(h().RunUntil([&] { return Running("p") == 6; }, 10));
  EXPECT_EQ(SpinesOf("p"), (std::set<std::string>{"spine-0", "spine-1"}));
}

// Lone pods on a flavor with a topology are packed next to busy nodes (prioritize's closest-domain
// term): beside a full p5-8 the first goes to p5-9, its network-node-layer-3 neighbour; the next,
// with no busy neighbour anywhere, to the first node by name (p5-0), and the third beside it
// (p5-1) — not p5-0, p5-1, p5-10 (the first nodes by name), which would break three layer-3
// domains.
TEST_F(TopologyTest, LonePodsArePackedNextToBusyNodes) {
  ASSERT_TRUE(h().Submit(Busy(8)).ok());
  ASSERT_TRUE(h().RunUntil([&] { return Running("busy") == 1; }, 10));
  std::vector<std::string> nodes;
  for (int k = 0; k < 3; ++k) {
    const std::string job = "lone-" + std::to_string(k);
    ASSERT_TRUE(h().Submit(GpuPod("a", job, 8)).ok());
    ASSERT_TRUE(h().RunUntil([&] { return Running("lone") == static_cast<size_t>(k) + 1; }, 10));
    std::optional<PodView> pod = h().PodOfJob(job);
    ASSERT_TRUE(pod.has_value());
    nodes.push_back(pod->node);
  }
  EXPECT_EQ(nodes, (std::vector<std::string>{"p5-9", "p5-0", "p5-1"}));
}

// Team a lends; team b borrows all of it, filling the 32 nodes: two 4-GPU pods on each node,
// but one 8-GPU pod on each node of spine-5 (started first: the oldest, which a choice for one
// member would reach last). a's required-layer-2 gang, within a's nominal quota, reclaims inside
// one domain only — the one needing the fewest victims: spine-5's four pods.
constexpr char kLendingPolicy[] = R"(apiVersion: taskgov.io/v1
kind: TaskGovernancePolicy
taskPrioritization: TaskRanking
priorityClasses:
  - {name: training, weight: 50}
preemption: {gracePeriodSeconds: 30, minimumRuntimeSeconds: 0}
defaultCohort: e2e
teams:
  - name: a
    sharing: {strategy: LendAndBorrow}
    compute: [{instanceType: ml.p5.48xlarge, accelerators: 128}]
  - name: b
    sharing: {strategy: LendAndBorrow, borrowLimit: 100}
    compute: [{instanceType: ml.p5.48xlarge, accelerators: 128}]
)";

class TopologyReclaimTest : public TopologyTest {
 protected:
  [[nodiscard]] const char* Policy() const override { return kLendingPolicy; }
  // Pod `name` of team b asking `gpus` GPUs on node n.
  static PodSpec Borrower(int n, const std::string& name, int64_t gpus) {
    PodSpec spec = GpuPod("b", name, gpus);
    spec.node_selector["kubernetes.io/hostname"] = NodeName(n);
    return spec;
  }
};

TEST_F(TopologyReclaimTest, AReclaimForARequiredGangEvictsInsideOneDomainOnly) {
  std::set<std::string> spine5;
  for (int n = 20; n < 24; ++n) {
    ASSERT_TRUE(h().Submit(Borrower(n, "whole-" + std::to_string(n), 8)).ok());
    spine5.insert(Ns("b") + "/whole-" + std::to_string(n));
  }
  ASSERT_TRUE(h().RunUntil([&] { return Running("whole") == 4; }, 10));
  for (int n = 0; n < 32; ++n) {
    if (n / 4 == 5) continue;
    for (int k = 0; k < 2; ++k) {
      ASSERT_TRUE(
          h().Submit(Borrower(n, "half-" + std::to_string(n) + "-" + std::to_string(k), 4)).ok());
    }
  }
  ASSERT_TRUE(h().RunUntil([&] { return Running("half") == 56; }, 20));

  const size_t before = h().history().size();
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(h().Submit(Member("x", i)).ok());
  ASSERT_TRUE(h().RunUntil([&] { return Running("x") == 4; }, 20))
      << h().Evictions().size() << " evictions";
  EXPECT_EQ(SpinesOf("x"), (std::set<std::string>{"spine-5"}));
  const std::vector<std::string> evicted = EvictedSince(before);
  EXPECT_EQ(std::set<std::string>(evicted.begin(), evicted.end()), spine5);
  EXPECT_EQ(evicted.size(), 4u);
  EXPECT_EQ(h().Evictions().size(), 4u);
  EXPECT_EQ(Running("half"), 56u);
}

}  // namespace
}  // namespace taskgov::e2e
