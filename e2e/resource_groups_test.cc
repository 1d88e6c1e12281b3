// Kueue's resource groups, through the real extender: a ClusterQueue covers cpu on an unlabelled
// "default" ResourceFlavor and GPUs on the ml.p5.48xlarge flavor, as most GPU clusters configure
// Kueue. A GPU pod on a p5 node is charged its GPUs on p5 and its cpu on default (the ledger's
// companion cells), so the cpu quota binds GPU pods too: of three pods of 2 GPUs and 8 cpus, two
// run and the third is refused for cpu on default, with the GPUs to spare.

#include <gtest/gtest.h>

#include "e2e/scenario_test_util.h"
#include "metrics/testing/exposition.h"

namespace taskgov::e2e {
namespace {

constexpr char kPolicy[] = R"(apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {name: default}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {name: ml.p5.48xlarge}
spec: {nodeLabels: {node.kubernetes.io/instance-type: ml.p5.48xlarge}}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: a}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [cpu]
    flavors:
    - name: default
      resources: [{name: cpu, nominalQuota: 16}]
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - name: ml.p5.48xlarge
      resources: [{name: nvidia.com/gpu, nominalQuota: 8}]
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: jobs, namespace: hyperpod-ns-a}
spec: {clusterQueue: a}
)";

class ResourceGroupsTest : public ScenarioTest {};

TEST_F(ResourceGroupsTest, AGpuPodsCpuIsChargedOnTheDefaultFlavor) {
  StartWithPolicy(kPolicy);
  std::vector<PodSpec> pods;
  for (int i = 0; i < 3; ++i) {
    PodSpec pod = GpuPod("a", "a-" + std::to_string(i), 2);
    pod.requests["cpu"] = 8000;  // millicores
    pods.push_back(pod);
  }
  SubmitAll(pods);
  ASSERT_TRUE(h().RunUntil([&] { return Running("a") == 4; }, 10));  // GPUs
  const StepReport step = h().Step();
  EXPECT_EQ(Running("a"), 4u);  // two pods of 2 GPUs
  ASSERT_EQ(PendingOf("a"), 1u);
  const std::string refusal = step.LastRefusal();
  EXPECT_NE(refusal.find("cpu on default: requested 8, in use 16 of nominal 16"), std::string::npos)
      << refusal;

  common::Result<metrics::testing::Exposition> m = h().extender().ScrapeMetrics();
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_EQ(
      m->Value("taskgov_quota_usage", {{"team", "a"}, {"flavor", "default"}, {"resource", "cpu"}}),
      16);
  EXPECT_EQ(m->Value("taskgov_quota_usage", {{"team", "a"}, {"flavor", kP5}, {"resource", kGpu}}),
            4);
}

}  // namespace
}  // namespace taskgov::e2e
