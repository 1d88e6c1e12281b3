#include "extender/task_history.h"

#include <algorithm>

#include "scheduler/model/gang.h"
#include "scheduler/model/interner.h"
#include "scheduler/state/workload_table.h"

namespace taskgov::extender {
namespace {

using scheduler::state::ClusterState;
using scheduler::state::PodTransition;

constexpr std::string_view kPreempted = "Preempted";
constexpr std::string_view kSucceeded = "Succeeded";
constexpr std::string_view kFailed = "Failed";
constexpr std::string_view kDeleted = "Deleted";

double Seconds(int64_t from_ms, int64_t to_ms) {  // as the metrics' histograms take them
  return static_cast<double>(std::max<int64_t>(0, to_ms - from_ms)) / 1000.0;
}

// The workload key of a pod: its gang's, or its own for a lone pod.
std::string KeyOf(const scheduler::model::Pod& pod, const scheduler::model::WorkloadRef& ref) {
  return scheduler::state::WorkloadKeyOf(ref.key, pod.key());
}

}  // namespace

std::string_view TaskHistory::OutcomeOf(const scheduler::model::Pod& pod, std::string* reason) {
  if (auto it = evicted_.find(pod.uid); it != evicted_.end()) {
    *reason = it->second.reason;
    return kPreempted;
  }
  if (pod.phase == scheduler::model::PodPhase::kSucceeded) return kSucceeded;
  if (pod.phase == scheduler::model::PodPhase::kFailed) return kFailed;
  return kDeleted;
}

void TaskHistory::OnLifecycle(const ClusterState::PodLifecycle& event) {
  if (event.team == scheduler::state::kNoTeam || event.pod == nullptr) return;
  const scheduler::model::Pod& pod = *event.pod;
  std::lock_guard<std::mutex> lock(mu_);
  Trim(event.now_ms);
  if (event.transition == PodTransition::kBound) {
    observations_.push_back(
        {event.now_ms, event.team, true, Seconds(pod.creation_unix_ms, event.now_ms), {}});
    last_bound_[KeyOf(pod, scheduler::model::WorkloadOf(pod))] = event.now_ms;
    return;
  }
  std::string reason;
  const std::string_view outcome = OutcomeOf(pod, &reason);
  observations_.push_back(
      {event.now_ms, event.team, false, Seconds(event.bound_ms, event.now_ms), outcome});
  const uint64_t task = AddEnded(event, outcome, std::move(reason));
  if (auto it = evicted_.find(pod.uid); it != evicted_.end()) it->second.task = task;
}

uint64_t TaskHistory::AddEnded(const ClusterState::PodLifecycle& event, std::string_view outcome,
                               std::string reason) {
  const scheduler::model::Pod& pod = *event.pod;
  const scheduler::model::WorkloadRef ref = scheduler::model::WorkloadOf(pod);
  const std::string key = KeyOf(pod, ref);
  // The pods of one workload ending alike, with none of it bound again in between, are one task.
  auto open = open_.find(key);
  auto bound = last_bound_.find(key);
  if (open != open_.end() && open->second.first >= ended_base_) {
    EndedTask& task = ended_[open->second.first - ended_base_];
    const bool rebound = bound != last_bound_.end() && bound->second > open->second.second;
    if (!rebound && task.outcome == outcome) {
      ++task.pods;
      task.ended_ms = std::max(task.ended_ms, event.now_ms);
      if (task.started_ms == 0 || (event.bound_ms > 0 && event.bound_ms < task.started_ms)) {
        task.started_ms = event.bound_ms;
      }
      if (task.reason.empty()) task.reason = std::move(reason);
      return open->second.first;
    }
  }
  EndedTask task;
  const bool lone = ref.key.empty();
  const std::string display = lone ? pod.key() : ref.display;
  const size_t slash = display.find('/');
  task.ns = slash == std::string::npos ? pod.namespace_ : display.substr(0, slash);
  task.name = slash == std::string::npos ? display : display.substr(slash + 1);
  task.kind = std::string(scheduler::state::WorkloadKindOf(ref.source, lone));
  task.team = std::string(scheduler::model::TeamNames().Name(event.team));
  task.outcome = std::string(outcome);
  task.reason = std::move(reason);
  task.pods = 1;
  task.started_ms = event.bound_ms;
  task.ended_ms = event.now_ms;
  ended_.push_back(std::move(task));
  const uint64_t index = ended_base_ + ended_.size() - 1;
  open_[key] = {index, event.now_ms};
  while (ended_.size() > options_.max_ended) {
    ended_.pop_front();
    ++ended_base_;
  }
  return index;
}

void TaskHistory::NoteEvicted(std::string_view uid, int64_t now_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  evicted_[std::string(uid)].at_ms = now_ms;
}

void TaskHistory::NoteEvictionReason(std::string_view uid, std::string reason) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = evicted_.find(std::string(uid));
  if (it == evicted_.end()) return;  // not taskgov's eviction, or long gone
  Evicted& e = it->second;
  // The pod ended before the event was written: its task takes the reason.
  if (e.task != kNoTask && e.task >= ended_base_ && ended_[e.task - ended_base_].reason.empty()) {
    ended_[e.task - ended_base_].reason = reason;
  }
  e.reason = std::move(reason);
}

void TaskHistory::Trim(int64_t now_ms) {
  const int64_t oldest = now_ms - options_.keep_ms;
  while (!observations_.empty() && (observations_.front().at_ms < oldest ||
                                    observations_.size() > options_.max_observations)) {
    observations_.pop_front();
  }
  while (!ended_.empty() && ended_.front().ended_ms < oldest) {
    ended_.pop_front();
    ++ended_base_;
  }
  // Keys and evictions nothing will refer to again: their tasks are gone, their pods long ended.
  std::erase_if(open_, [&](const auto& kv) { return kv.second.first < ended_base_; });
  std::erase_if(last_bound_, [&](const auto& kv) { return kv.second < oldest; });
  std::erase_if(evicted_, [&](const auto& kv) { return kv.second.at_ms < oldest; });
}

std::map<std::string, TaskHistory::Window, std::less<>> TaskHistory::Windows(
    int64_t now_ms, int64_t window_ms) const {
  std::map<std::string, Window, std::less<>> out;
  std::lock_guard<std::mutex> lock(mu_);
  // Every observation is looked at: they come in the order they were seen, which a wall clock
  // stepping back can leave out of time order (at most max_observations).
  for (auto it = observations_.rbegin(); it != observations_.rend(); ++it) {
    if (it->at_ms <= now_ms - window_ms || it->at_ms > now_ms) continue;
    Window& w = out[std::string(scheduler::model::TeamNames().Name(it->team))];
    if (it->bound) {
      ++w.bound;
      w.wait_seconds += it->seconds;
    } else {
      ++w.ended;
      w.run_seconds += it->seconds;
      ++w.outcomes[std::string(it->outcome)];
    }
  }
  return out;
}

std::vector<TaskHistory::EndedTask> TaskHistory::Ended(int64_t since_ms, std::string_view team,
                                                       size_t limit) const {
  std::vector<EndedTask> out;
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = ended_.rbegin(); it != ended_.rend() && out.size() < limit; ++it) {
    if (it->ended_ms <= since_ms) continue;
    if (!team.empty() && it->team != team) continue;
    out.push_back(*it);
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const EndedTask& a, const EndedTask& b) { return a.ended_ms > b.ended_ms; });
  return out;
}

scheduler::EvictOutcome RecordingKubeActions::Evict(const std::string& ns, const std::string& name,
                                                    const std::string& uid,
                                                    int64_t grace_period_seconds,
                                                    std::string* detail) {
  const scheduler::EvictOutcome outcome =
      inner_->Evict(ns, name, uid, grace_period_seconds, detail);
  if (outcome == scheduler::EvictOutcome::kEvicted) history_->NoteEvicted(uid, clock_->NowMs());
  return outcome;
}

void RecordingKubeActions::RecordEvent(const scheduler::EventRecord& event) {
  // A victim's event says why: "Reclaim: b reclaims …" (Preempted), or it timed out (GangTimeout).
  if (!event.pod_uid.empty()) {
    if (event.reason == "Preempted") {
      history_->NoteEvictionReason(event.pod_uid, event.note.substr(0, event.note.find(':')));
    } else if (event.reason == "GangTimeout") {
      history_->NoteEvictionReason(event.pod_uid, "GangTimeout");
    }
  }
  inner_->RecordEvent(event);
}

}  // namespace taskgov::extender
