// TaskRanking through the real extender when more than one unit of quota frees at once
// (DESIGN §3.6): "a pod is refused while a pending pod of the same team ranked ahead of it could
// use the capacity it would take". Two training pods wait behind nothing but quota; an older
// experimentation pod must not take one of the two GPUs they need together.

#include <gtest/gtest.h>

#include <chrono>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "e2e/scenario_test_util.h"

namespace taskgov::e2e {
namespace {

// Team a alone, 4 GPUs of its own, two priority classes; `queueing` adds a line of its own.
std::string OneTeamPolicy(const std::string& queueing) {
  return R"(apiVersion: taskgov.io/v1
kind: TaskGovernancePolicy
taskPrioritization: TaskRanking
)" + queueing +
         R"(priorityClasses:
  - {name: training, weight: 50}
  - {name: experimentation, weight: 10}
preemption: {gracePeriodSeconds: 30, minimumRuntimeSeconds: 0}
teams:
  - name: a
    sharing: {strategy: DontLend}
    preemptTeamTasks: Never
    compute: [{instanceType: ml.p5.48xlarge, accelerators: 4}]
)";
}

TEST_F(ScenarioTest, LowerRankedPodDoesNotTakeCapacityTheHigherRankedNeedTogether) {
  StartWithPolicy(OneTeamPolicy(""));
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

// A refusal can lapse with no cluster event that kube-scheduler (before v1.32) retries a pod for:
// here the pod ranked ahead of a-low (StrictFIFO: a-low waits behind it whatever its size) is
// deleted while it is still pending. The extender asks for
// a-low again itself — the annotation taskgov.io/requeued-at on it, within a few of its
// controller's one-second runs, with no step of the cluster — and for nothing else.
TEST_F(ScenarioTest, ARefusalThatLapsesWithoutAPodLeavingIsAskedForAgain) {
  StartWithPolicy(OneTeamPolicy("queueingStrategy: StrictFIFO\n"));
  for (int i = 0; i < 2; ++i)
    ASSERT_TRUE(h().Submit(GpuPod("a", "a-run-" + std::to_string(i))).ok());
  ASSERT_TRUE(h().RunUntil([&] { return Running("a") == 2; }, 5));
  ASSERT_TRUE(h().Submit(GpuPod("a", "a-high", 4, "training")).ok());
  ASSERT_TRUE(h().Submit(GpuPod("a", "a-low", 2, "experimentation")).ok());
  StepReport r = h().Step();
  const Attempt* low = r.Find(Ns("a") + "/a-low");
  ASSERT_NE(low, nullptr);
  ASSERT_EQ(low->outcome, Attempt::Outcome::kRefused);
  EXPECT_NE(low->reason.find("waiting behind higher-ranked pod " + Ns("a") + "/a-high"),
            std::string::npos)
      << low->reason;
  auto annotated = [&](const std::string& name) {
    const std::optional<std::string> json = h().api().Get("pods", Ns("a"), name);
    return json && json->find("taskgov.io/requeued-at") != std::string::npos;
  };
  // Its refusal stands (a-high may use the 2 GPUs): nothing is asked for.
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  EXPECT_FALSE(annotated("a-low"));
  EXPECT_FALSE(annotated("a-high"));

  ASSERT_TRUE(h().api().Delete("pods", Ns("a"), "a-high"));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!annotated("a-low") && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_TRUE(annotated("a-low"));
  // (The harness's kube-scheduler tries every pending pod each step: this shows only that the
  // request did no harm.)
  r = h().Step();
  EXPECT_EQ(r.Bound(), std::vector<std::string>{Ns("a") + "/a-low"});
}

}  // namespace
}  // namespace taskgov::e2e
