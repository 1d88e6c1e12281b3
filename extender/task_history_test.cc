#include "extender/task_history.h"

#include <gtest/gtest.h>

#include "scheduler/common/clock.h"
#include "scheduler/testing/builders.h"
#include "scheduler/testing/fake_kube_actions.h"

namespace taskgov::extender {
namespace {

using scheduler::model::Pod;
using scheduler::model::PodPhase;
using scheduler::state::ClusterState;
using scheduler::state::PodTransition;
using scheduler::testing::PodBuilder;

constexpr int64_t kT0 = 1'800'000'000'000;

class TaskHistoryTest : public ::testing::Test {
 protected:
  // A pod of `team`, created at `created_ms`; a member of gang `gang` when it is not empty.
  static Pod Of(const std::string& name, const std::string& team, int64_t created_ms,
                const std::string& gang = "") {
    PodBuilder b(name);
    b.Namespace("ns-" + team).Gpus(1).Created(created_ms);
    if (!gang.empty()) {
      b.Label("kueue.x-k8s.io/pod-group-name", gang)
          .Annotation("kueue.x-k8s.io/pod-group-total-count", "2");
    }
    return b.Build();
  }
  void Bound(const Pod& pod, int64_t at_ms) {
    ClusterState::PodLifecycle e;
    e.pod = &pod;
    e.team = scheduler::model::TeamNames().Intern(pod.namespace_.substr(3));
    e.transition = PodTransition::kBound;
    e.now_ms = at_ms;
    history_.OnLifecycle(e);
  }
  void Ended(Pod pod, PodPhase phase, int64_t bound_ms, int64_t at_ms) {
    pod.phase = phase;
    ClusterState::PodLifecycle e;
    e.pod = &pod;
    e.team = scheduler::model::TeamNames().Intern(pod.namespace_.substr(3));
    e.transition = PodTransition::kEnded;
    e.bound_ms = bound_ms;
    e.now_ms = at_ms;
    history_.OnLifecycle(e);
  }

  TaskHistory history_{TaskHistory::Options{}};
};

TEST_F(TaskHistoryTest, AWindowAveragesTheWaitsAndRunTimesOfItsPods) {
  const Pod p0 = Of("p0", "team-a", kT0), p1 = Of("p1", "team-a", kT0);
  Bound(p0, kT0 + 10'000);                                      // waited 10 s
  Bound(p1, kT0 + 30'000);                                      // waited 30 s
  Ended(p0, PodPhase::kSucceeded, kT0 + 10'000, kT0 + 70'000);  // ran 60 s
  Ended(p1, PodPhase::kFailed, kT0 + 30'000, kT0 + 130'000);    // ran 100 s
  std::map<std::string, TaskHistory::Window, std::less<>> w =
      history_.Windows(kT0 + 130'000, 3'600'000);
  ASSERT_EQ(w.count("team-a"), 1u);
  EXPECT_EQ(w["team-a"].bound, 2u);
  EXPECT_DOUBLE_EQ(w["team-a"].wait_seconds, 40);
  EXPECT_EQ(w["team-a"].ended, 2u);
  EXPECT_DOUBLE_EQ(w["team-a"].run_seconds, 160);
  EXPECT_EQ(w["team-a"].outcomes["Succeeded"], 1u);
  EXPECT_EQ(w["team-a"].outcomes["Failed"], 1u);
  // A window of the last minute holds the second end only.
  w = history_.Windows(kT0 + 130'000, 60'000);
  EXPECT_EQ(w["team-a"].bound, 0u);
  EXPECT_EQ(w["team-a"].ended, 1u);
}

TEST_F(TaskHistoryTest, TaskgovsEvictionsEndAsPreemptedWithTheirReason) {
  common::FakeClock clock(kT0 + 2000);
  scheduler::testing::FakeKubeActions kube;
  RecordingKubeActions actions(&kube, &history_, &clock);
  const Pod g0 = Of("g0", "team-b", kT0, "train"), g1 = Of("g1", "team-b", kT0, "train");
  const Pod lone = Of("solo", "team-b", kT0);
  for (const Pod* p : {&g0, &g1, &lone}) Bound(*p, kT0 + 1000);
  // The controller evicts the gang whole and says why on each member.
  for (const Pod* p : {&g0, &g1}) {
    std::string detail;
    ASSERT_EQ(actions.Evict(p->namespace_, p->name, p->uid, 120, &detail),
              scheduler::EvictOutcome::kEvicted);
    actions.RecordEvent({p->namespace_, p->name, p->uid, "Normal", "Preempted", "Preempting",
                         "Reclaim: team-a reclaims the nvidia.com/gpu it lent"});
  }
  Ended(g0, PodPhase::kRunning, kT0 + 1000, kT0 + 60'000);  // deleted while running
  Ended(g1, PodPhase::kRunning, kT0 + 1000, kT0 + 61'000);
  Ended(lone, PodPhase::kRunning, kT0 + 1000, kT0 + 62'000);  // deleted by someone else
  EXPECT_EQ(kube.events().size(), 2u) << "every event is passed on";

  const std::vector<TaskHistory::EndedTask> ended = history_.Ended(0, "", 10);
  ASSERT_EQ(ended.size(), 2u);
  EXPECT_EQ(ended[0].name, "solo");
  EXPECT_EQ(ended[0].outcome, "Deleted");
  EXPECT_EQ(ended[0].kind, "Pod");
  EXPECT_EQ(ended[1].name, "train");  // the gang: one task of 2 pods
  EXPECT_EQ(ended[1].ns, "ns-team-b");
  EXPECT_EQ(ended[1].outcome, "Preempted");
  EXPECT_EQ(ended[1].reason, "Reclaim");
  EXPECT_EQ(ended[1].pods, 2u);
  EXPECT_EQ(ended[1].started_ms, kT0 + 1000);
  EXPECT_EQ(ended[1].ended_ms, kT0 + 61'000);
  EXPECT_EQ(ended[1].team, "team-b");
  EXPECT_EQ(history_.Ended(0, "team-a", 10).size(), 0u);

  // Recreated and bound again, the gang's next end is a new task.
  const Pod r0 = Of("g0-r1", "team-b", kT0 + 70'000, "train");
  Bound(r0, kT0 + 80'000);
  Ended(r0, PodPhase::kSucceeded, kT0 + 80'000, kT0 + 90'000);
  EXPECT_EQ(history_.Ended(0, "", 10).size(), 3u);
  EXPECT_EQ(history_.Ended(0, "", 10)[0].outcome, "Succeeded");
  EXPECT_EQ(history_.Ended(kT0 + 62'000, "", 10).size(), 1u) << "since";
}

TEST_F(TaskHistoryTest, ItForgetsWhatIsOlderThanItKeeps) {
  TaskHistory::Options options;
  options.keep_ms = 60'000;
  options.max_ended = 2;
  TaskHistory history(options);
  for (int i = 0; i < 3; ++i) {
    Pod p = Of("p" + std::to_string(i), "team-a", kT0);
    ClusterState::PodLifecycle e;
    e.pod = &p;
    e.team = scheduler::model::TeamNames().Intern("team-a");
    e.transition = PodTransition::kEnded;
    e.bound_ms = kT0;
    e.now_ms = kT0 + 1000 * i;
    history.OnLifecycle(e);
  }
  EXPECT_EQ(history.Ended(0, "", 10).size(), 2u) << "at most max_ended";
  EXPECT_EQ(history.Windows(kT0 + 2000, 3'600'000)["team-a"].ended, 3u);
  Pod late = Of("late", "team-a", kT0);
  ClusterState::PodLifecycle e;
  e.pod = &late;
  e.team = scheduler::model::TeamNames().Intern("team-a");
  e.transition = PodTransition::kBound;
  e.now_ms = kT0 + 120'000;
  history.OnLifecycle(e);
  EXPECT_EQ(history.Windows(kT0 + 120'000, 3'600'000)["team-a"].ended, 0u) << "older than 60 s";
  EXPECT_EQ(history.Ended(0, "", 10).size(), 0u);
}

}  // namespace
}  // namespace taskgov::extender
