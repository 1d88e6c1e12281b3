#pragma once

// Gangs: the pods that are admitted, preempted and evicted together. A pod's gang is a fact of
// the pod (its labels, annotations and controller owner); pure functions, no state.

#include <cstdint>
#include <string>
#include <string_view>

#include "scheduler/model/objects.h"

namespace taskgov::scheduler::model {

// The gang a pod belongs to, "" if none: the Kueue pod group (kueue.x-k8s.io/pod-group-name),
// the PodGroup (scheduling.k8s.io/group-name or scheduling.volcano.sh/group-name, label or
// annotation), the JobSet (jobset.sigs.k8s.io/jobset-name), or its controller owner when that is
// a training or batch job (Job, JobSet, PyTorchJob, TFJob, MPIJob, XGBoostJob, PaddleJob,
// JAXJob, TrainJob, HyperPodPyTorchJob, RayJob). Keys are namespaced so different sources never
// collide.
[[nodiscard]] std::string GangOf(const Pod& pod);

// What names a pod's gang: the pod itself (a Kueue pod group), or an object taskgov may watch
// for the gang's size (a PodGroup, a Job, a JobSet, a PyTorchJob), or another job owner.
enum class GangSource : uint8_t {
  kNone,
  kPod,
  kPodGroup,
  kJob,
  kJobSet,
  kPyTorchJob,
  kTFJob,
  kMPIJob,
  kXGBoostJob,
  kPaddleJob,
  kJAXJob,
  kRayCluster,  // a RayCluster's pods (a RayJob's run in the RayCluster it creates)
  kOtherOwner,
};

// "PodGroup", "Job", "JobSet", "PyTorchJob", "TFJob", "MPIJob", "XGBoostJob", "PaddleJob",
// "JAXJob", "RayCluster", "job owner", "pod group" (kPod),
// "" (kNone).
[[nodiscard]] std::string_view GangSourceName(GangSource source);

// A pod's workload (DESIGN §3.7): the gang it belongs to and how many pods the gang declares.
struct WorkloadRef {
  std::string key;      // GangOf; "" for a lone pod
  std::string display;  // for people: "namespace/name" of the group or owner
  GangSource source = GangSource::kNone;
  // Members the gang declares (kueue.x-k8s.io/pod-group-total-count); 0 when nothing declares
  // it, and then the gang is admitted pod by pod.
  int32_t size = 0;
  // The object declaring its size is watched but has not been observed yet (TeamResolver): the
  // member waits for it rather than be admitted alone.
  bool awaiting_object = false;
  // How long from its creation a member waits for that object at most (then it is decided on
  // what is known).
  static constexpr int64_t kAwaitObjectMs = 30'000;
  [[nodiscard]] bool gang() const { return !key.empty() && size > 1; }
};

// Whether a member created at `created_ms` still waits, at `now_ms`, for the object declaring
// its gang (`awaiting_object`: WorkloadRef::awaiting_object). The filter and the preemption
// controller both ask this.
[[nodiscard]] inline bool AwaitsGangObject(bool awaiting_object, int64_t created_ms,
                                           int64_t now_ms) {
  return awaiting_object && now_ms - created_ms < WorkloadRef::kAwaitObjectMs;
}
[[nodiscard]] WorkloadRef WorkloadOf(const Pod& pod);
// The gang key of the PodGroup object `name` in `ns` (what GangOf gives its members).
[[nodiscard]] std::string PodGroupKey(std::string_view ns, std::string_view name);
// The gang key of the pods of JobSet `name` in `ns` (jobset.sigs.k8s.io/jobset-name).
[[nodiscard]] std::string JobSetKey(std::string_view ns, std::string_view name);
// The gang key of the pods whose controller owner has this uid (a Job, a PyTorchJob, ...).
[[nodiscard]] std::string OwnerGangKey(std::string_view owner_uid);

// The label or annotation keys GangOf and WorkloadOf read.
inline constexpr char kKueuePodGroupKey[] = "kueue.x-k8s.io/pod-group-name";
inline constexpr char kPodGroupKey[] = "scheduling.k8s.io/group-name";
inline constexpr char kVolcanoGroupKey[] = "scheduling.volcano.sh/group-name";
inline constexpr char kJobSetKey[] = "jobset.sigs.k8s.io/jobset-name";
inline constexpr char kKueueTotalCountKey[] = "kueue.x-k8s.io/pod-group-total-count";
inline constexpr std::string_view kGangKeys[] = {kKueuePodGroupKey, kPodGroupKey, kVolcanoGroupKey,
                                                 kJobSetKey, kKueueTotalCountKey};

}  // namespace taskgov::scheduler::model
