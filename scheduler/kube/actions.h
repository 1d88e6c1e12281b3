#pragma once

// ApiKubeActions: KubeActions (scheduler/cluster_api.h) over the real API client.
//  * Bind  — POST /api/v1/namespaces/{ns}/pods/{name}/binding with the Binding of DESIGN §2
//            (metadata.uid makes the API refuse a re-created pod of the same name).
//  * Evict — POST .../pods/{name}/eviction, a policy/v1 Eviction with
//            deleteOptions.gracePeriodSeconds and preconditions.uid. 200/201 → kEvicted;
//            429 with a DisruptionBudget cause (or a PDB message, or no Retry-After) →
//            kBlockedByPdb; 429 with Retry-After and no PDB cause (API throttling) is waited out
//            within the timeout; 404, or 409 from the uid precondition (the pod was re-created)
//            → kNotFound; anything else → kFailed. `detail` receives the API's message.
//  * SetSuspended — PATCH (application/merge-patch+json) of a job's spec.suspend (or
//            spec.runPolicy.suspend) and taskgov.io/ annotations, metadata.uid as a precondition.
//            404 → kNotFound; anything else that is not 2xx → kFailed.
//  * Requeue — PATCH (application/merge-patch+json) of a pending pod's annotation
//            taskgov.io/requeued-at, metadata.uid as a precondition (a pod re-created under the
//            same name is refused: 422, the uid is immutable); any error is returned.
//  * RecordEvent — an events.k8s.io/v1 Event regarding the pod, queued and sent by a background
//            thread (best effort: a full queue or a failed POST is counted and logged, never
//            blocks the caller).
//
// Thread-safety: all methods are thread-safe. Bind and Evict block the calling thread for at
// most their timeout; they never wait on the informer threads, so calling them from HTTP handler
// threads or from observer callbacks cannot deadlock.

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <thread>

#include "scheduler/cluster_api.h"
#include "scheduler/kube/client.h"

namespace taskgov::scheduler::kube {

struct KubeActionsOptions {
  std::chrono::milliseconds bind_timeout{1'500};  // well inside the scheduler's httpTimeout
  std::chrono::milliseconds evict_timeout{10'000};
  std::chrono::milliseconds event_timeout{5'000};
  size_t event_queue_limit = 1000;
  std::string reporting_controller = "taskgov.io/scheduler";
  std::string reporting_instance;        // e.g. the pod name; "" → "taskgov"
  const common::Clock* clock = nullptr;  // eventTime; nullptr: SystemClock
};

struct KubeActionsStats {
  uint64_t binds = 0;
  uint64_t bind_failures = 0;
  uint64_t evictions = 0;
  uint64_t evictions_blocked_by_pdb = 0;
  uint64_t evictions_not_found = 0;
  uint64_t eviction_failures = 0;
  uint64_t suspensions = 0;  // jobs paused (spec.suspend set by taskgov)
  uint64_t resumptions = 0;
  uint64_t suspend_failures = 0;
  uint64_t requeues = 0;  // pending pods annotated for kube-scheduler to try again
  uint64_t requeue_failures = 0;
  uint64_t events_sent = 0;
  uint64_t events_failed = 0;
  uint64_t events_dropped = 0;  // queue full or stopped
};

class ApiKubeActions final : public KubeActions {
 public:
  ApiKubeActions(KubeClient* client, KubeActionsOptions options = {});
  ~ApiKubeActions() override;  // sends what is queued (bounded by event_timeout each), then stops

  common::Status Bind(const std::string& ns, const std::string& name, const std::string& uid,
                      const std::string& node) override;
  EvictOutcome Evict(const std::string& ns, const std::string& name, const std::string& uid,
                     int64_t grace_period_seconds, std::string* detail) override;
  SuspendOutcome SetSuspended(const model::JobControl& job, bool suspend,
                              const model::Labels& annotations, std::string* detail) override;
  common::Status Requeue(const std::string& ns, const std::string& name, const std::string& uid,
                         const std::string& at) override;
  void RecordEvent(const EventRecord& event) override;

  // Blocks until every event queued so far was sent or failed (tests, shutdown).
  void FlushEvents();
  [[nodiscard]] KubeActionsStats stats() const;

 private:
  void EventLoop();
  void SendEvent(const EventRecord& event);

  KubeClient* const client_;
  const KubeActionsOptions options_;
  const common::Clock* const clock_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<EventRecord> queue_;  // guarded by mu_
  size_t in_flight_ = 0;           // guarded by mu_
  bool stopping_ = false;          // guarded by mu_
  uint64_t event_seq_ = 0;         // guarded by mu_
  KubeActionsStats stats_;         // guarded by mu_
  std::thread worker_;
};

// The request bodies (exposed for tests).
[[nodiscard]] std::string BindingBody(const std::string& name, const std::string& uid,
                                      const std::string& node);
[[nodiscard]] std::string EvictionBody(const std::string& ns, const std::string& name,
                                       const std::string& uid, int64_t grace_period_seconds);
[[nodiscard]] std::string RequeuePatch(const std::string& uid, const std::string& at);
[[nodiscard]] std::string EventBody(const EventRecord& event, const std::string& event_name,
                                    const std::string& event_time,
                                    const std::string& reporting_controller,
                                    const std::string& reporting_instance);

}  // namespace taskgov::scheduler::kube
