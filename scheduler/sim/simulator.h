#pragma once

// Simulator: a trace played through taskgov's real decision code on virtual time (DESIGN §8,
// "One simulator"). The extender's parts — QuotaBook, ClusterState (its informers' observer),
// Admission (filter, prioritize, preempt, bind), PreemptionController, Requeuer and Reconciler —
// are the production classes, wired as extender/main.cc wires them, on a FakeClock that an
// EventLoop moves from one action to the next. Around them the cluster is played: the API server
// (Api), kube-scheduler with taskgov as its extender (KubeScheduler), the kubelet and the job
// controllers (Workloads). The controller runs as the process's ticker runs it: every second,
// and 250 ms after a pod starts waiting or a victim goes (no sooner than 250 ms after its last
// run); housekeeping (Reconciler::Tick) every second. After every action the watch events it
// caused are delivered — to the informers' observer first, then the recorder, kube-scheduler and
// the workloads — and kube-scheduler runs its cycles, until nothing is left to do at that instant.
// The filter's pending-queue notes are applied after each call (PendingQueues::Flush), so a run
// is deterministic: the same policy, trace and seed give the same report.
//
// Not synchronised: Run() plays the whole trace on the calling thread.

#include <cstdint>
#include <functional>
#include <ostream>
#include <string>

#include "scheduler/actions/preemption_controller.h"
#include "scheduler/model/policy.h"
#include "scheduler/sim/kube_scheduler.h"
#include "scheduler/sim/report.h"
#include "scheduler/sim/trace.h"
#include "scheduler/sim/workloads.h"

namespace taskgov::scheduler::sim {

struct SimulationOptions {
  std::string label = "policy";
  uint64_t seed = 1;
  // Stop this long after the last arrival even if jobs are left (they count as never run or
  // unfinished).
  int64_t horizon_after_last_arrival_ms = 6 * 3600'000;
  KubeScheduler::Options scheduler;
  Workloads::Options workloads;
  actions::PreemptionController::Options controller;
  // The extender asks kube-scheduler to try again the pods whose refusal lapsed (the
  // extender's --requeue-lapsed-refusals, actions/requeuer.h), after each controller run.
  bool requeue = true;
  int64_t preemption_min_gap_ms = 250;
  int64_t tick_ms = 1'000;
  // When set: a line per thing that happened to a job or a pod (arrivals, bindings, the
  // extender's events, disruptions, completions), with its virtual time.
  std::ostream* timeline = nullptr;
  // When set: called after every action, once its consequences settled (invariant checks),
  // with the API server's objects and the virtual time (Unix ms).
  std::function<void(const Api& api, int64_t now_ms)> after_step;
  // When set: called with every event the extender records, as it records it (the victim still
  // running), with the API server's objects.
  std::function<void(const EventRecord& event, const Api& api)> on_event;
};

// Plays `trace` under `policy`; returns what it measured (Report::label is options.label).
[[nodiscard]] Report Simulate(const model::PolicyPtr& policy, const Trace& trace,
                              const SimulationOptions& options);

}  // namespace taskgov::scheduler::sim
