// TaskRanking through the real extender when more than one unit of quota frees at once
// (DESIGN §3.6): "a pod is refused while a pending pod of the same team ranked ahead of it could
// use the capacity it would take". Two training pods wait behind nothing but quota; an older
// experimentation pod must not take one of the two GPUs they need together.

#include <gtest/gtest.h>

#include "e2e/scenario_test_util.h"

namespace taskgov::e2e {
namespace {

TEST_F(ScenarioTest, LowerRankedPodDoesNotTakeCapacityTheHigherRankedNeedTogether) {
  StartWithPolicy(R"(apiVersion: taskgov.io/v1
kind: TaskGovernancePolicy
taskPrioritization: TaskRanking
priorityClasses:
  - {name: training, weight: 50}
  - {name: experimentation, weight: 10}
preemption: {gracePeriodSeconds: 30, minimumRuntimeSeconds: 0}
teams:
  - name: a
    sharing: {strategy: DontLend}
    preemptTeamTasks: Never
    compute: [{instanceType: ml.p5.48xlarge, accelerators: 4}]
)");
  for (int i = 0; i < 4; ++i)
    ASSERT_TRUE(h().Submit(GpuPod("a", "a-run-" + std::to_string(i))).ok());
  ASSERT_TRUE(h().RunUntil([&] { return Running("a") == 4; }, 5));
  // Submission order: the experimentation pod first, then two training pods (the class is a
  // Kueue label: kube-scheduler tries them in submission order).
  ASSERT_TRUE(h().Submit(GpuPod("a", "a-low", 1, "experimentation")).ok());
  ASSERT_TRUE(h().Submit(GpuPod("a", "a-high-0", 1, "training")).ok());
  ASSERT_TRUE(h().Submit(GpuPod("a", "a-high-1", 1, "training")).ok());
  h().Step();
  ASSERT_TRUE(h().Finish("a-run-0").ok());
  ASSERT_TRUE(h().Finish("a-run-1").ok());
  StepReport r = h().Step();
  EXPECT_EQ(r.Bound(), (std::vector<std::string>{Ns("a") + "/a-high-0", Ns("a") + "/a-high-1"}))
      << "the two GPUs that freed belong to the two training pods, which rank first";
  const Attempt* low = r.Find(Ns("a") + "/a-low");
  ASSERT_NE(low, nullptr);
  EXPECT_EQ(low->outcome, Attempt::Outcome::kRefused);
}

}  // namespace
}  // namespace taskgov::e2e
