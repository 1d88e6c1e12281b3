#pragma once

// TaskHistory: what the console and the CLI show of tasks over time, as HyperPod's dashboard
// does — per team the waits and run times of its pods over a window (the same observations
// taskgov_pod_wait_seconds and taskgov_pod_run_seconds count, so a window's count and sum are the
// histograms' while the process has run less than the window), and the tasks that ended:
// succeeded, failed, preempted (evicted by taskgov, with the reason its event gave) or deleted.
//
// Fed by the ClusterState's lifecycle observer (a pod seen bound; a pod seen bound that ended)
// and by RecordingKubeActions (kube_actions.h's Evict and RecordEvent as the preemption
// controller calls them). A task is a workload (a gang, or a lone pod: model::WorkloadOf): the
// pods of one workload that end with the same outcome, with none of it bound again in between,
// are one ended task.
//
// Bounded: observations older than `keep_ms` go, and at most `max_observations` and
// `max_ended` are kept (the oldest go first). Thread-safety: one mutex; the lifecycle calls come
// under the cluster state's lock and take only this one; queries run on the console's threads.

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "scheduler/cluster_api.h"
#include "scheduler/state/cluster_state.h"

namespace taskgov::extender {

class TaskHistory {
 public:
  struct Options {
    int64_t keep_ms = 24 * 3'600'000LL;
    size_t max_observations = 200'000;
    size_t max_ended = 5'000;
  };
  explicit TaskHistory(Options options) : options_(options) {}

  void OnLifecycle(const scheduler::state::ClusterState::PodLifecycle& event);
  // An eviction taskgov made was accepted for the pod `uid`, at `now_ms`.
  void NoteEvicted(std::string_view uid, int64_t now_ms);
  // Why (the event taskgov recorded on the evicted pod: "Reclaim", "InTeamPriority", ...).
  void NoteEvictionReason(std::string_view uid, std::string reason);

  // A team's pods over a window: bound (with their waits: creation → bound) and ended (with
  // their run times: bound → end), by outcome.
  struct Window {
    size_t bound = 0;
    double wait_seconds = 0;  // summed
    size_t ended = 0;
    double run_seconds = 0;  // summed
    std::map<std::string, size_t, std::less<>> outcomes;
  };
  // By team name, over (now − window, now].
  [[nodiscard]] std::map<std::string, Window, std::less<>> Windows(int64_t now_ms,
                                                                   int64_t window_ms) const;

  struct EndedTask {
    std::string ns, name, kind, team;
    std::string outcome;  // Succeeded, Failed, Preempted, Deleted
    std::string reason;   // a preemption's reason ("" otherwise)
    size_t pods = 0;
    int64_t started_ms = 0;  // the earliest of its pods' bindings
    int64_t ended_ms = 0;    // the last of its pods' ends
  };
  // Tasks that ended after `since_ms`, of `team` ("": every team), newest first, at most `limit`.
  [[nodiscard]] std::vector<EndedTask> Ended(int64_t since_ms, std::string_view team,
                                             size_t limit) const;

 private:
  struct Observation {
    int64_t at_ms = 0;
    scheduler::model::NameId team = 0;
    bool bound = false;  // else ended
    double seconds = 0;  // wait, or run
    std::string_view outcome;
  };
  static constexpr uint64_t kNoTask = ~uint64_t{0};
  struct Evicted {
    int64_t at_ms = 0;
    std::string reason;
    uint64_t task = kNoTask;  // the ended task it joined, once it ended
  };
  // What a pod's end was: Preempted (taskgov evicted it), Succeeded, Failed or Deleted.
  std::string_view OutcomeOf(const scheduler::model::Pod& pod, std::string* reason);
  void Trim(int64_t now_ms);
  // Adds the pod's end to its workload's open task, or a new one; the task's index.
  uint64_t AddEnded(const scheduler::state::ClusterState::PodLifecycle& event,
                    std::string_view outcome, std::string reason);

  const Options options_;
  mutable std::mutex mu_;
  std::deque<Observation> observations_;              // by time
  std::deque<EndedTask> ended_;                       // by end, oldest first
  std::unordered_map<std::string, Evicted> evicted_;  // by pod uid, for keep_ms
  // Per workload key: when a pod of it was last bound, and its latest ended task (an index
  // into ended_ counted from the first ever added, ended_base_ being ended_.front()'s).
  std::unordered_map<std::string, int64_t> last_bound_;
  std::unordered_map<std::string, std::pair<uint64_t, int64_t>> open_;  // key → (index, opened)
  uint64_t ended_base_ = 0;
};

// KubeActions that tells a TaskHistory of taskgov's evictions and their reasons, and passes every
// call on. Thread-safe as `inner` is.
class RecordingKubeActions final : public scheduler::KubeActions {
 public:
  RecordingKubeActions(scheduler::KubeActions* inner, TaskHistory* history,
                       const common::Clock* clock)
      : inner_(inner), history_(history), clock_(clock) {}
  common::Status Bind(const std::string& ns, const std::string& name, const std::string& uid,
                      const std::string& node) override {
    return inner_->Bind(ns, name, uid, node);
  }
  scheduler::EvictOutcome Evict(const std::string& ns, const std::string& name,
                                const std::string& uid, int64_t grace_period_seconds,
                                std::string* detail) override;
  scheduler::SuspendOutcome SetSuspended(const scheduler::model::JobControl& job, bool suspend,
                                         const scheduler::model::Labels& annotations,
                                         std::string* detail) override {
    return inner_->SetSuspended(job, suspend, annotations, detail);
  }
  common::Status Requeue(const std::string& ns, const std::string& name, const std::string& uid,
                         const std::string& at) override {
    return inner_->Requeue(ns, name, uid, at);
  }
  void RecordEvent(const scheduler::EventRecord& event) override;

 private:
  scheduler::KubeActions* const inner_;
  TaskHistory* const history_;
  const common::Clock* const clock_;
};

}  // namespace taskgov::extender
