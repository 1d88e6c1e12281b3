#pragma once

// The seams between taskgov's decisions and the Kubernetes API (DESIGN §5):
//  * ClusterObserver — informers push what they see (implemented by the cluster state that feeds
//    the ledger and the node cache);
//  * KubeActions — what taskgov does to the cluster (bind, evict, record events).
// Implemented over the real API client in scheduler/kube/, by fakes in tests.

#include <cstdint>
#include <memory>
#include <string>

#include "scheduler/common/result.h"
#include "scheduler/model/job_control.h"
#include "scheduler/model/objects.h"

namespace taskgov::scheduler {

enum class ObjectKind {
  kPod,
  kNode,
  kNamespace,
  kLocalQueue,
  kPodGroup,
  kJob,
  kJobSet,
  kPyTorchJob,
  kTFJob,
  kMPIJob,
  kXGBoostJob,
  kPaddleJob,
  kJAXJob,
  kRayCluster,
  kRayJob,
};

// Called from informer threads, one event at a time per kind, in the order the API server sent
// them. A relist reports objects that vanished as deletes. Implementations must be thread-safe
// across kinds.
class ClusterObserver {
 public:
  virtual ~ClusterObserver() = default;
  virtual void OnPodUpsert(const model::Pod& pod) = 0;
  // `last_known` carries the pod's namespace, name and uid only: the informers keep no more.
  virtual void OnPodDelete(const model::Pod& last_known) = 0;
  virtual void OnNodeUpsert(const model::Node& node) = 0;
  virtual void OnNodeDelete(const std::string& name) = 0;
  virtual void OnNamespaceUpsert(const std::string& name, const model::Labels& labels) = 0;
  virtual void OnNamespaceDelete(const std::string& name) = 0;
  // Kueue LocalQueue (namespace/name → spec.clusterQueue).
  virtual void OnLocalQueueUpsert(const std::string& ns, const std::string& name,
                                  const std::string& cluster_queue) = 0;
  virtual void OnLocalQueueDelete(const std::string& ns, const std::string& name) = 0;
  // Volcano / scheduler-plugins PodGroup (namespace/name → spec.queue, spec.minMember).
  virtual void OnPodGroupUpsert(const std::string& ns, const std::string& name,
                                const std::string& queue, int64_t min_member) = 0;
  virtual void OnPodGroupDelete(const std::string& ns, const std::string& name) = 0;
  // The size a job object declares for the gang its pods form (WorkloadRef::key → size): a
  // batch/v1 Job's parallelism, a JobSet's replicated jobs, a PyTorchJob's replicas.
  virtual void OnGangSizeUpsert(const std::string& workload, int64_t size) = 0;
  virtual void OnGangSizeDelete(const std::string& workload) = 0;
  // A job taskgov may pause (model/job_control.h), and its deletion (by its workload key; also
  // called for jobs that were never pausable). Observers that do not pause jobs ignore them.
  virtual void OnJobUpsert(std::shared_ptr<const model::JobControl> /*job*/) {}
  virtual void OnJobDelete(const std::string& /*workload*/) {}
  // The initial list of `kind` is complete (or the kind is not served: missing CRD).
  virtual void OnSynced(ObjectKind kind) = 0;
};

enum class EvictOutcome {
  kEvicted,       // accepted; the pod terminates within its grace period
  kBlockedByPdb,  // 429: a PodDisruptionBudget refused it
  kNotFound,      // already gone
  kFailed,        // any other error
};

struct EventRecord {
  std::string ns;
  std::string pod_name;
  std::string pod_uid;
  std::string type = "Normal";  // Normal | Warning
  std::string reason;           // e.g. Preempted, Reclaimed, Admitted
  std::string action;           // e.g. Preempting, Binding
  std::string note;             // the human explanation
};

// The answer to pausing or resuming a job (KubeActions::SetSuspended).
enum class SuspendOutcome {
  kDone,         // the patch was applied
  kNotFound,     // the job is gone
  kFailed,       // any other error (a conflict included: the caller decides again later)
  kUnsupported,  // this KubeActions cannot patch jobs: evict the pods instead
};

// The annotation KubeActions::Requeue sets on a pending pod: when taskgov asked kube-scheduler to
// try it again (RFC 3339 MicroTime, so that every request changes the pod).
inline constexpr char kRequeuedAtAnnotation[] = "taskgov.io/requeued-at";

// Thread-safe; calls block for at most their timeout.
class KubeActions {
 public:
  virtual ~KubeActions() = default;
  // POST pods/{name}/binding.
  virtual common::Status Bind(const std::string& ns, const std::string& name,
                              const std::string& uid, const std::string& node) = 0;
  // POST pods/{name}/eviction (policy/v1) with deleteOptions.gracePeriodSeconds.
  virtual EvictOutcome Evict(const std::string& ns, const std::string& name, const std::string& uid,
                             int64_t grace_period_seconds, std::string* detail) = 0;
  // PATCH (JSON merge patch) of the job's suspend flag and taskgov.io/ annotations (a value ""
  // removes one), preconditioned on the job's uid.
  virtual SuspendOutcome SetSuspended(const model::JobControl& /*job*/, bool /*suspend*/,
                                      const model::Labels& /*annotations*/,
                                      std::string* /*detail*/) {
    return SuspendOutcome::kUnsupported;
  }
  // PATCH (JSON merge patch) of a pending pod's annotation kRequeuedAtAnnotation to `at`,
  // preconditioned on its uid: kube-scheduler moves an unschedulable pod whose metadata changed
  // back to its queue (actions/requeuer.h). An error when this KubeActions cannot.
  virtual common::Status Requeue(const std::string& /*ns*/, const std::string& /*name*/,
                                 const std::string& /*uid*/, const std::string& /*at*/) {
    return common::Error{"requeueing pods is not supported here"};
  }
  // events.k8s.io/v1, best effort (failures are counted and logged, not returned).
  virtual void RecordEvent(const EventRecord& event) = 0;
};

}  // namespace taskgov::scheduler
