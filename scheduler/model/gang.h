#pragma once

// Gangs: the pods that are admitted, preempted and evicted together. A pod's gang is a fact of
// the pod (its labels, annotations and controller owner); pure functions, no state.

#include <string>
#include <string_view>

#include "scheduler/model/objects.h"

namespace taskgov::scheduler {

// The gang a pod belongs to, "" if none: the Kueue pod group (kueue.x-k8s.io/pod-group-name),
// the PodGroup (scheduling.k8s.io/group-name or scheduling.volcano.sh/group-name, label or
// annotation), the JobSet (jobset.sigs.k8s.io/jobset-name), or its controller owner when that is
// a training or batch job (Job, JobSet, PyTorchJob, TFJob, MPIJob, XGBoostJob, PaddleJob,
// JAXJob, TrainJob, HyperPodPyTorchJob, RayJob). Keys are namespaced so different sources never
// collide.
[[nodiscard]] std::string GangOf(const Pod& pod);
// The label or annotation keys GangOf reads.
inline constexpr char kKueuePodGroupKey[] = "kueue.x-k8s.io/pod-group-name";
inline constexpr char kPodGroupKey[] = "scheduling.k8s.io/group-name";
inline constexpr char kVolcanoGroupKey[] = "scheduling.volcano.sh/group-name";
inline constexpr char kJobSetKey[] = "jobset.sigs.k8s.io/jobset-name";
inline constexpr std::string_view kGangKeys[] = {kKueuePodGroupKey, kPodGroupKey, kVolcanoGroupKey,
                                                 kJobSetKey};

}  // namespace taskgov::scheduler
