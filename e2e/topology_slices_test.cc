// Topology slices (issue 37), through the real extender, on the cluster of topology_test: 32
// ml.p5.48xlarge nodes in 2 network-node-layer-1 × 4 network-node-layer-2 × 4 nodes, a
// network-node-layer-3 domain every 2 nodes, labelled as HyperPod labels them. A gang of 8 pods of
// 4 GPUs asks for one layer-1 domain in slices of 4 at layer 3
// (kueue.x-k8s.io/podset-slice-required-topology / podset-slice-size, as Kueue's docs write them):
// each slice lands whole in one layer-3 domain (2 nodes, room for 4 such pods), even where a
// tighter layer-1 domain has room for all 8 pods only by splitting slices — which a gang without
// slices does. kube-scheduler is played binding where prioritize scores highest.

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "e2e/scenario_test_util.h"
#include "e2e/topology_cluster.h"

namespace taskgov::e2e {
namespace {

class TopologySlicesTest : public ScenarioTest {
 protected:
  void SetUp() override { StartHarness(TopologyCluster(kOneTeamTopologyPolicy, {"a"})); }

  // Member i of gang `job` of `size` × 4 GPUs, in one layer-`podset` domain, in slices of
  // `slice` pods at layer 3 (0: no slices).
  static PodSpec Member(const std::string& job, int i, int size, const char* podset, int slice) {
    PodSpec spec = KueueGangPod("a", job, i, size, 4);
    spec.annotations["kueue.x-k8s.io/podset-required-topology"] = podset;
    if (slice > 0) {
      spec.annotations["kueue.x-k8s.io/podset-slice-required-topology"] = kLayer3;
      spec.annotations["kueue.x-k8s.io/podset-slice-size"] = std::to_string(slice);
    }
    return spec;
  }
  // A lone pod of `gpus` GPUs on node n.
  static PodSpec Busy(int n, int gpus, int k = 0) {
    PodSpec spec = GpuPod("a", "busy-" + std::to_string(n) + "-" + std::to_string(k), gpus);
    spec.node_selector["kubernetes.io/hostname"] = NodeName(n);
    return spec;
  }
  // How many running members of `job` each layer-3 domain has.
  std::map<std::string, int> Layer3sOf(const std::string& job) {
    std::map<std::string, int> out;
    for (const PodView& p : h().Pods()) {
      if (!p.job.starts_with(job + "-") || p.node.empty()) continue;
      ++out[Layer3(NodeNumber(p.node))];
    }
    return out;
  }
  size_t Running(const std::string& prefix) {
    return h().CountPods([&](const PodView& p) {
      return p.job.starts_with(prefix) && !p.node.empty() && p.phase == "Running";
    });
  }
};

TEST_F(TopologySlicesTest, EachSliceLandsWholeInOneLayer3Domain) {
  // Layer-1 domain 0 has room for 8 pods of 4 GPUs, but in layer-3 domains of 3, 3 and 2 (p5-1,
  // p5-3, p5-4 and p5-5 half busy, p5-6..p5-15 full): no slice of 4 fits it. Layer-1 domain 1 is
  // free: 8 layer-3 domains of 4.
  std::vector<PodSpec> busy = {Busy(1, 4), Busy(3, 4), Busy(4, 4), Busy(5, 4)};
  for (int n = 6; n < 16; ++n) busy.push_back(Busy(n, 8));
  for (const PodSpec& b : busy) ASSERT_TRUE(h().Submit(b).ok());
  ASSERT_TRUE(h().RunUntil([&] { return Running("busy-") == busy.size(); }, 10));

  // Sliced: not the tighter layer-1 domain 0 but domain 1, each slice of 4 in one layer-3 domain.
  for (int i = 0; i < 8; ++i) ASSERT_TRUE(h().Submit(Member("s", i, 8, kLayer1, 4)).ok());
  ASSERT_TRUE(h().RunUntil([&] { return Running("s-") == 8; }, 10));
  EXPECT_EQ(Layer3sOf("s"), (std::map<std::string, int>{{"nn-l3-8", 4}, {"nn-l3-9", 4}}));

  // Without slices the same gang takes the tighter domain 0, its pods 3, 3 and 2 to a layer-3
  // domain: what the slices keep from happening.
  for (int i = 0; i < 8; ++i) ASSERT_TRUE(h().Submit(Member("p", i, 8, kLayer1, 0)).ok());
  ASSERT_TRUE(h().RunUntil([&] { return Running("p-") == 8; }, 10));
  EXPECT_EQ(Layer3sOf("p"),
            (std::map<std::string, int>{{"nn-l3-0", 3}, {"nn-l3-1", 3}, {"nn-l3-2", 2}}));

  // 12 pods in slices of 4 in one layer-2 domain: 3 slices, no layer-2 domain left has more than
  // 2 (4 free nodes: 2 layer-3 domains of 4). It waits, saying so with the numbers.
  for (int i = 0; i < 12; ++i) ASSERT_TRUE(h().Submit(Member("w", i, 12, kLayer2, 4)).ok());
  StepReport step = h().Step();
  const Attempt* w = step.Find(Ns("a") + "/w-0");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->outcome, Attempt::Outcome::kRefused);
  EXPECT_NE(w->reason.find("no network-node-layer-2 domain of ml.p5.48xlarge has room for 3 "
                           "slices of 4 pods (each slice in one network-node-layer-3 domain) of "
                           "4 nvidia.com/gpu; the best has room for 2 (domain spine-5"),
            std::string::npos)
      << w->reason;
  for (int k = 0; k < 3; ++k) h().Step();
  EXPECT_EQ(Running("w-"), 0u);
}

// A request Kueue's webhook would reject (a slice larger than the gang) is refused with the
// annotation and value, and nothing of the gang runs.
TEST_F(TopologySlicesTest, AnInvalidSliceRequestIsRefusedSayingWhy) {
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(h().Submit(Member("x", i, 4, kLayer2, 8)).ok());
  StepReport step = h().Step();
  const Attempt* x = step.Find(Ns("a") + "/x-0");
  ASSERT_NE(x, nullptr);
  EXPECT_EQ(x->outcome, Attempt::Outcome::kRefused);
  EXPECT_NE(x->reason.find("invalid topology request: kueue.x-k8s.io/podset-slice-size: \"8\" "
                           "must not be greater than the gang's 4 pods"),
            std::string::npos)
      << x->reason;
  for (int k = 0; k < 3; ++k) h().Step();
  EXPECT_EQ(Running("x-"), 0u);
}

}  // namespace
}  // namespace taskgov::e2e
