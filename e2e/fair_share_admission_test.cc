// Kueue's fair-sharing integration test "Admits workloads respecting fair share", context
// "Preemption is disabled" (test/integration/singlecluster/scheduler/fairsharing/
// fair_sharing_test.go, Kueue ff69552e, line 157), through the real binary: its numbers, with a
// 1-GPU pod for each 1-CPU workload. Teams a (nominal 3), b (1) and shared (4) in one cohort,
// FairShare, no preemption of any kind; every pod has the same priority. Each time a's pods
// finish, the freed quota goes to the team whose weighted share after admission is the lower,
// a team that would not borrow first (FairSharingPrioritizeNonBorrowing); ties: the older pod.

#include <gtest/gtest.h>

#include "e2e/scenario_test_util.h"
#include "metrics/testing/exposition.h"

namespace taskgov::e2e {
namespace {

using std::chrono::milliseconds;

constexpr char kPolicy[] = R"(apiVersion: taskgov.io/v1
kind: TaskGovernancePolicy
taskPrioritization: FirstComeFirstServe
idleComputeAllocation: FairShare
defaultCohort: all
teams:
  - name: a
    preemptTeamTasks: Never
    reclaimWithinCohort: Never
    sharing: {strategy: LendAndBorrow, borrowLimit: 1000}
    compute: [{instanceType: ml.p5.48xlarge, accelerators: 3}]
  - name: b
    preemptTeamTasks: Never
    reclaimWithinCohort: Never
    sharing: {strategy: LendAndBorrow, borrowLimit: 1000}
    compute: [{instanceType: ml.p5.48xlarge, accelerators: 1}]
  - name: shared
    preemptTeamTasks: Never
    reclaimWithinCohort: Never
    sharing: {strategy: LendAndBorrow, borrowLimit: 1000}
    compute: [{instanceType: ml.p5.48xlarge, accelerators: 4}]
)";

class FairShareAdmissionTest : public ScenarioTest {
 protected:
  // Runs until nothing changes; returns "a=<running> b=<running>".
  std::string Settle() {
    EXPECT_TRUE(h().RunUntilQuiet(milliseconds(1500), 40));
    return "a=" + std::to_string(Running("a")) + " b=" + std::to_string(Running("b"));
  }
  // Finishes `n` of a's running pods.
  void FinishA(int n) {
    for (const PodView& p : h().Pods()) {
      if (n == 0) break;
      if (p.ns != Ns("a") || !p.active() || p.phase != "Running") continue;
      ASSERT_TRUE(h().Finish(p.job).ok());
      --n;
    }
    ASSERT_EQ(n, 0) << "a has fewer running pods than asked to finish";
  }
  // taskgov_weighted_share of `team` on ml.p5.48xlarge, in Kueue's per-mille.
  double Share(const std::string& team) {
    common::Result<metrics::testing::Exposition> m = h().extender().ScrapeMetrics();
    EXPECT_TRUE(m.ok()) << m.error().message;
    if (!m.ok()) return -1;
    return m->Value("taskgov_weighted_share", {{"team", team}, {"flavor", kP5}}).value_or(-1) *
           1000;
  }
};

TEST_F(FairShareAdmissionTest, AdmitsWorkloadsRespectingFairShare) {
  StartWithPolicy(kPolicy);
  CheckLimitsEveryStep(QuotaOracle({{"a", Ns("a"), "all", kP5, kGpu, 3, 30, kNoLimit},
                                    {"b", Ns("b"), "all", kP5, kGpu, 1, 10, kNoLimit},
                                    {"shared", Ns("shared"), "all", kP5, kGpu, 4, 40, kNoLimit}}));
  // Step 1: ten in a. It takes the cohort's 8; share (8 − 3) / 8.
  for (int i = 0; i < 10; ++i)
    ASSERT_TRUE(h().Submit(GpuPod("a", "a-" + std::to_string(i), 1, "")).ok());
  EXPECT_EQ(Settle(), "a=8 b=0");
  EXPECT_DOUBLE_EQ(Share("a"), 625);
  // Step 2: five in b, newer.
  for (int i = 0; i < 5; ++i)
    ASSERT_TRUE(h().Submit(GpuPod("b", "b-" + std::to_string(i), 1, "")).ok());
  EXPECT_EQ(Settle(), "a=8 b=0");
  EXPECT_DOUBLE_EQ(Share("b"), 0);
  // Steps 3–5: each freed GPU goes to b (b→1 does not borrow; then b→2 = 125 < a→7 = 500;
  // b→3 = 250 < a→6 = 375).
  FinishA(1);
  EXPECT_EQ(Settle(), "a=7 b=1");
  FinishA(1);
  EXPECT_EQ(Settle(), "a=6 b=2");
  FinishA(1);
  EXPECT_EQ(Settle(), "a=5 b=3");
  // Step 6: this time a's pod wins (a→5 = 250 < b→4 = 375).
  FinishA(1);
  EXPECT_EQ(Settle(), "a=5 b=3");
  // Step 7.
  EXPECT_DOUBLE_EQ(Share("a"), 250);
  EXPECT_DOUBLE_EQ(Share("b"), 250);
  EXPECT_EQ(PendingOf("a"), 1u);
  EXPECT_EQ(PendingOf("b"), 2u);
  // Step 8: two freed: a's last pod (a→4 = 125 < b→4 = 375), then b's.
  FinishA(2);
  EXPECT_EQ(Settle(), "a=4 b=4");
  EXPECT_EQ(PendingOf("a"), 0u);
  EXPECT_EQ(PendingOf("b"), 1u);
  EXPECT_DOUBLE_EQ(Share("a"), 125);
  EXPECT_DOUBLE_EQ(Share("b"), 375);
  EXPECT_DOUBLE_EQ(Share("shared"), 0);
}

}  // namespace
}  // namespace taskgov::e2e
