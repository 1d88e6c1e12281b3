// A Kueue Cohort's own quota, through the real extender: the cohort "lab" holds 8 GPUs itself
// (Cohort spec.resourceGroups) besides its ClusterQueues' quota. Team b, of nominal 0, borrows
// a's idle 4 and the cohort's 8 — 12 of 12 — and a 13th pod is refused with the pool's numbers;
// when a (which may not borrow) wants its nominal quota back it reclaims its 4, and b keeps the
// cohort's 8.

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
metadata: {name: lab}
spec:
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - name: ml.p5.48xlarge
      resources: [{name: nvidia.com/gpu, nominalQuota: 8}]
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: a}
spec:
  cohort: lab
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

class CohortQuotaTest : public ScenarioTest {};

TEST_F(CohortQuotaTest, TeamsBorrowTheCohortsOwnQuotaAndOwnersReclaimOnlyTheirs) {
  StartWithPolicy(kPolicy);
  std::vector<PodSpec> pods;
  for (int i = 0; i < 13; ++i) pods.push_back(GpuPod("b", "b-" + std::to_string(i), 1, ""));
  SubmitAll(pods);
  ASSERT_TRUE(h().RunUntil([&] { return Running("b") == 12; }, 10));
  const StepReport step = h().Step();
  EXPECT_EQ(Running("b"), 12u);
  ASSERT_EQ(PendingOf("b"), 1u);
  const std::string refusal = step.LastRefusal();
  EXPECT_NE(refusal.find("cohort pool free 0 of 12"), std::string::npos) << refusal;

  common::Result<metrics::testing::Exposition> m = h().extender().ScrapeMetrics();
  ASSERT_TRUE(m.ok()) << m.error().message;
  const std::map<std::string, std::string> lab = {
      {"cohort", "lab"}, {"flavor", kP5}, {"resource", kGpu}};
  EXPECT_EQ(m->Value("taskgov_cohort_quota", lab), 8);
  EXPECT_EQ(m->Value("taskgov_cohort_pool_capacity", lab), 12);
  EXPECT_EQ(m->Value("taskgov_cohort_pool_usage", lab), 12);
  EXPECT_EQ(m->Value("taskgov_quota_borrowed", {{"team", "b"}, {"resource", kGpu}}), 12);
  EXPECT_EQ(m->Value("taskgov_quota_lent", {{"team", "a"}, {"resource", kGpu}}), 4);

  // a (which may not borrow) takes back its nominal 4 by evicting 4 of b's pods, and no more:
  // the cohort's 8 stay with b.
  const size_t history_before = h().history().size();
  std::vector<PodSpec> mine;
  for (int i = 0; i < 6; ++i) mine.push_back(GpuPod("a", "a-" + std::to_string(i), 1, ""));
  SubmitAll(mine);
  ASSERT_TRUE(h().RunUntil([&] { return Running("a") == 4; }, 20));
  ASSERT_TRUE(h().RunUntilQuiet(std::chrono::milliseconds(1500), 20));
  EXPECT_EQ(Running("a"), 4u);
  EXPECT_EQ(Running("b"), 8u);
  EXPECT_EQ(PendingOf("a"), 2u);
  const std::vector<std::string> evicted = EvictedSince(history_before);
  for (const std::string& pod : evicted) EXPECT_EQ(pod.rfind(Ns("b") + "/", 0), 0u) << pod;
  EXPECT_EQ(evicted.size(), 4u);
}

}  // namespace
}  // namespace taskgov::e2e
