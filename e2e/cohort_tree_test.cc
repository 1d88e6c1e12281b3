// Hierarchical cohorts (Kueue Cohort parentName), through the real extender. The tree:
//   org ── lab (holds 2 GPUs itself) ── b (nominal 0)
//       └─ ops ──────────────────────── a (nominal 4, may not borrow, reclaims)
// Team b borrows across the tree: the lab's own 2 and a's idle 4, stored up to org — 6 of 6 —
// and a 7th pod is refused with the numbers. When a wants its nominal quota back it reclaims its
// 4 from b, across the tree, and b keeps the lab's 2.

#include <gtest/gtest.h>

#include "e2e/scenario_test_util.h"
#include "metrics/testing/exposition.h"

namespace taskgov::e2e {
namespace {

constexpr char kPolicy[] = R"(apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {name: ml.p5.48xlarge}
spec: {nodeLabels: {node.kubernetes.io/instance-type: ml.p5.48xlarge}}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: Cohort
metadata: {name: org}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: Cohort
metadata: {name: lab}
spec:
  parentName: org
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - name: ml.p5.48xlarge
      resources: [{name: nvidia.com/gpu, nominalQuota: 2}]
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: Cohort
metadata: {name: ops}
spec: {parentName: org}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: a}
spec:
  cohort: ops
  namespaceSelector: {}
  preemption: {reclaimWithinCohort: Any}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - name: ml.p5.48xlarge
      resources: [{name: nvidia.com/gpu, nominalQuota: 4, borrowingLimit: 0}]
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: b}
spec:
  cohort: lab
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - name: ml.p5.48xlarge
      resources: [{name: nvidia.com/gpu, nominalQuota: 0}]
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: jobs, namespace: hyperpod-ns-a}
spec: {clusterQueue: a}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: jobs, namespace: hyperpod-ns-b}
spec: {clusterQueue: b}
)";

class CohortTreeTest : public ScenarioTest {};

TEST_F(CohortTreeTest, TeamsBorrowAcrossTheTreeAndOwnersReclaimAcrossIt) {
  StartWithPolicy(kPolicy);
  std::vector<PodSpec> pods;
  for (int i = 0; i < 7; ++i) pods.push_back(GpuPod("b", "b-" + std::to_string(i), 1, ""));
  SubmitAll(pods);
  ASSERT_TRUE(h().RunUntil([&] { return Running("b") == 6; }, 10));
  const StepReport step = h().Step();
  EXPECT_EQ(Running("b"), 6u);
  ASSERT_EQ(PendingOf("b"), 1u);
  const std::string refusal = step.LastRefusal();
  EXPECT_NE(refusal.find("cohort pool free 0 of 6"), std::string::npos) << refusal;

  common::Result<metrics::testing::Exposition> m = h().extender().ScrapeMetrics();
  ASSERT_TRUE(m.ok()) << m.error().message;
  auto pool = [](const char* cohort) {
    return std::map<std::string, std::string>{
        {"cohort", cohort}, {"flavor", kP5}, {"resource", kGpu}};
  };
  EXPECT_EQ(m->Value("taskgov_cohort_pool_capacity", pool("lab")), 2);
  EXPECT_EQ(m->Value("taskgov_cohort_pool_usage", pool("lab")), 6);
  EXPECT_EQ(m->Value("taskgov_cohort_pool_capacity", pool("org")), 6);
  EXPECT_EQ(m->Value("taskgov_cohort_pool_usage", pool("org")), 6);
  EXPECT_EQ(m->Value("taskgov_quota_borrowed", {{"team", "b"}, {"resource", kGpu}}), 6);
  EXPECT_EQ(m->Value("taskgov_quota_lent", {{"team", "a"}, {"resource", kGpu}}), 4);

  // a takes back its nominal 4 by evicting 4 of b's pods, and no more: the lab's 2 stay with b.
  const size_t history_before = h().history().size();
  std::vector<PodSpec> mine;
  for (int i = 0; i < 6; ++i) mine.push_back(GpuPod("a", "a-" + std::to_string(i), 1, ""));
  SubmitAll(mine);
  ASSERT_TRUE(h().RunUntil([&] { return Running("a") == 4; }, 20));
  ASSERT_TRUE(h().RunUntilQuiet(std::chrono::milliseconds(1500), 20));
  EXPECT_EQ(Running("a"), 4u);
  EXPECT_EQ(Running("b"), 2u);
  EXPECT_EQ(PendingOf("a"), 2u);
  const std::vector<std::string> evicted = EvictedSince(history_before);
  for (const std::string& pod : evicted) EXPECT_EQ(pod.rfind(Ns("b") + "/", 0), 0u) << pod;
  EXPECT_EQ(evicted.size(), 4u);
}

}  // namespace
}  // namespace taskgov::e2e
