// Reclaim must reach every pod of a team that is within its nominal quota (DESIGN §3.6
// "Reclaim"): however many better-ranked pods of other teams wait for something no eviction can
// give them, and whatever other flavors the team has quota on that the pod cannot use.

#include <gtest/gtest.h>

#include "e2e/scenario_test_util.h"

namespace taskgov::e2e {
namespace {

constexpr char kPolicy[] = R"(apiVersion: taskgov.io/v1
kind: TaskGovernancePolicy
taskPrioritization: TaskRanking
idleComputeAllocation: FairShare
priorityClasses:
  - {name: inference, weight: 100}
  - {name: training, weight: 50}
preemption: {gracePeriodSeconds: 30, minimumRuntimeSeconds: 0}
defaultCohort: e2e
teams:
  - {name: h0, sharing: {strategy: DontLend}, preemptTeamTasks: Never, compute: [{instanceType: ml.g5.12xlarge, accelerators: 1}]}
  - {name: h1, sharing: {strategy: DontLend}, preemptTeamTasks: Never, compute: [{instanceType: ml.g5.12xlarge, accelerators: 1}]}
  - {name: h2, sharing: {strategy: DontLend}, preemptTeamTasks: Never, compute: [{instanceType: ml.g5.12xlarge, accelerators: 1}]}
  - {name: h3, sharing: {strategy: DontLend}, preemptTeamTasks: Never, compute: [{instanceType: ml.g5.12xlarge, accelerators: 1}]}
  - {name: h4, sharing: {strategy: DontLend}, preemptTeamTasks: Never, compute: [{instanceType: ml.g5.12xlarge, accelerators: 1}]}
  - name: b
    sharing: {strategy: LendAndBorrow, borrowLimit: 100}
    compute: [{instanceType: ml.p5.48xlarge, accelerators: 8}]
  - name: c
    sharing: {strategy: LendAndBorrow, borrowLimit: 100}
    compute: [{instanceType: ml.p5.48xlarge, accelerators: 8}]
)";

// Five teams (h0..h4) hold their whole quota on ml.g5.12xlarge (DontLend, no in-team preemption)
// and each has 16 inference pods waiting: nothing may ever be evicted for those 80 pods. On
// ml.p5.48xlarge team c borrows all 8 GPUs of team b's idle quota. Then b submits one training
// pod, within its nominal quota: taskgov has to reclaim one GPU from c for it.
TEST_F(ScenarioTest, ReclaimReachesATeamRankedBelowManyPodsThatCannotBeHelped) {
  StartWithPolicy(kPolicy);
  for (int t = 0; t < 5; ++t) {
    const std::string team = "h" + std::to_string(t);
    ASSERT_TRUE(h().Submit(GpuPod(team, team + "-run", 1, "training", kG5)).ok());
    for (int i = 0; i < 16; ++i) {
      PodSpec p = GpuPod(team, team + "-wait-" + std::to_string(i), 1, "inference", kG5);
      p.priority = 100;
      ASSERT_TRUE(h().Submit(p).ok());
    }
  }
  for (int i = 0; i < 16; ++i) ASSERT_TRUE(h().Submit(GpuPod("c", "c-" + std::to_string(i))).ok());
  ASSERT_TRUE(h().RunUntil([&] { return Running("c") == 16; }, 5));
  for (int t = 0; t < 5; ++t) EXPECT_EQ(Running("h" + std::to_string(t), kG5), 1u);

  PodSpec mine = GpuPod("b", "b-0");
  mine.priority = 50;
  ASSERT_TRUE(h().Submit(mine).ok());
  const bool bound = h().RunUntil(
      [&] {
        std::optional<PodView> p = h().PodOfJob("b-0");
        return p && p->active();
      },
      12);
  EXPECT_TRUE(bound) << "b is within its nominal quota and c borrows 8 of b's GPUs, yet nothing "
                        "was reclaimed for b-0 ("
                     << h().Evictions().size() << " evictions)";
  EXPECT_EQ(Running("c"), 15u);
  EXPECT_EQ(h().Evictions().size(), 1u);
}

// Team b has quota on ml.p5.48xlarge (8, all borrowed by a) and on ml.g5.12xlarge (4, idle).
// b's pod selects ml.p5.48xlarge with a nodeSelector, as HyperPod jobs choose their instance
// type: it can only run there, so the GPU a borrows there must be reclaimed for it — the free
// g5 quota is no use to it.
TEST_F(ScenarioTest, ReclaimHonoursThePodsNodeSelector) {
  StartWithPolicy(R"(apiVersion: taskgov.io/v1
kind: TaskGovernancePolicy
preemption: {gracePeriodSeconds: 30, minimumRuntimeSeconds: 0}
defaultCohort: e2e
teams:
  - name: a
    sharing: {strategy: LendAndBorrow, borrowLimit: 100}
    compute: [{instanceType: ml.p5.48xlarge, accelerators: 8}]
  - name: b
    sharing: {strategy: LendAndBorrow, borrowLimit: 100}
    compute:
      - {instanceType: ml.p5.48xlarge, accelerators: 8}
      - {instanceType: ml.g5.12xlarge, accelerators: 4}
)");
  for (int i = 0; i < 16; ++i) ASSERT_TRUE(h().Submit(GpuPod("a", "a-" + std::to_string(i))).ok());
  ASSERT_TRUE(h().RunUntil([&] { return Running("a") == 16; }, 5));
  ASSERT_TRUE(h().Submit(GpuPod("b", "b-0")).ok());
  const bool bound = h().RunUntil(
      [&] {
        std::optional<PodView> p = h().PodOfJob("b-0");
        return p && p->active();
      },
      8);
  EXPECT_TRUE(bound) << "b-0 selects ml.p5.48xlarge, where b is within its nominal quota and a "
                        "borrows all of it, yet nothing was reclaimed ("
                     << h().Evictions().size() << " evictions)";
  EXPECT_EQ(Running("a"), 15u);
  EXPECT_EQ(Running("b"), 1u);
  EXPECT_EQ(Running("b", kG5), 0u);
}

}  // namespace
}  // namespace taskgov::e2e
