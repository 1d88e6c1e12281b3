#pragma once

// Workloads: the trace's jobs as their controllers and the kubelet run them.
//  * Kubelet: a pod bound to a node starts running start_latency_ms later (phase Running,
//    status.startTime). A pod being deleted (metadata.deletionTimestamp) gets SIGTERM: it exits
//    once it has saved its checkpoint (the job's saveOnTermSeconds, when its grace period is that
//    long) or when its grace period ends (SIGKILL), whichever is first — at once when it never
//    started — then its phase is Failed and the kubelet finishes the delete (the object goes).
//    Until then it holds its node and its quota.
//  * A job's work progresses while every pod of its current attempt runs; it is done once that
//    lasted workSeconds in all (progress carried across attempts up to the last checkpoint).
//    Then every pod Succeeds and the controller deletes them. A job that announces its
//    checkpoints writes each one's time on its running pods (taskgov.io/last-checkpoint).
//  * Controllers: a Pod or PodGroup job whose running attempt loses a pod (its deletion starts)
//    is broken — the progress since its last checkpoint is lost, unless the pod's grace period let
//    it save — and the launcher gives up on the other pods (a training job cannot go on without a
//    peer: pending ones are deleted at once, running ones stop with the lost peer's grace
//    period). Once every pod of the attempt is gone the job is submitted again: new pods, new
//    names and UIDs, a new creation time, the same pod group name (recreate_delay_ms later).
//
// Not synchronised (the simulator is single-threaded).

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "scheduler/model/policy.h"
#include "scheduler/sim/api.h"
#include "scheduler/sim/event_loop.h"
#include "scheduler/sim/report.h"
#include "scheduler/sim/trace.h"

namespace taskgov::scheduler::sim {

class Workloads {
 public:
  struct Options {
    std::string scheduler_name = "taskgov";
    int64_t start_latency_ms = 1'000;
    int64_t recreate_delay_ms = 1'000;
  };

  Workloads(Api* api, EventLoop* loop, Recorder* recorder, const model::Policy& policy,
            Options options);

  // The job arrives: its first attempt's pods are created.
  void Submit(const TraceJob& job);
  // Every watch event (after the informers and the scheduler saw it).
  void OnEvent(const WatchEvent& event);
  // Jobs that arrived and are not done.
  [[nodiscard]] size_t unfinished() const { return unfinished_; }

 private:
  struct Job {
    const TraceJob* spec = nullptr;
    int attempt = 0;
    std::vector<std::string> members;  // uids of the current attempt
    std::set<std::string> bound;       // members bound and not being deleted
    std::set<std::string> running;     // members running and not being deleted
    std::set<std::string> gone;        // members deleted
    int64_t saved_ms = 0;              // progress kept (checkpoints)
    int64_t run_start_ms = -1;         // every member running since
    uint64_t epoch = 0;                // moves when a scheduled completion no longer holds
    bool broken = false;               // the attempt lost a pod
    bool complete = false;
  };

  void CreateAttempt(Job& job);
  [[nodiscard]] model::Pod PodFor(const Job& job, const PodSet& set, int index) const;
  void Kubelet(const WatchEvent& event);
  void Stop(const std::string& uid);
  void Controller(Job& job, const WatchEvent& event);
  void Break(Job& job, const PodObject& lost);
  void MaybeStartRunning(Job& job);
  void Complete(Job& job, uint64_t epoch);
  // The next checkpoint of the attempt running since `epoch`, `in_ms` from now.
  void ScheduleCheckpoint(const Job& job, uint64_t epoch, int64_t in_ms);

  Api* const api_;
  EventLoop* const loop_;
  Recorder* const recorder_;
  const model::Policy& policy_;
  const Options options_;
  std::map<std::string, Job> jobs_;                // by trace job name
  std::map<std::string, std::string> job_of_pod_;  // uid → job name
  std::set<std::string> starting_;                 // uids whose start is scheduled
  std::set<std::string> stopping_;                 // uids whose exit is scheduled
  size_t unfinished_ = 0;
};

}  // namespace taskgov::scheduler::sim
