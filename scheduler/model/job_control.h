#pragma once

// JobControl: a job object whose pods taskgov may pause instead of evicting them (issue 35). A
// preemption or reclaim that chooses the pods of such a job suspends the job (its controller
// deletes the pods without counting a failure) and records who did it, why and when in the job's
// annotations; taskgov resumes the jobs it suspended when their whole demand fits again. The
// annotations are the whole state: a restarted or newly elected extender rebuilds its queue of
// paused jobs from them.
//
// Kinds: batch/v1 Job, JobSet, RayJob (when it may be suspended: spec.shutdownAfterJobFinishes,
// no clusterSelector) and RayCluster (spec.suspend; not a RayCluster a RayJob owns: its RayJob
// is suspended, and KubeRay deletes the cluster) and the Kubeflow training jobs PyTorchJob, TFJob,
// MPIJob, XGBoostJob, PaddleJob and JAXJob (spec.runPolicy.suspend). Pods of any other owner are
// evicted.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "scheduler/model/objects.h"

namespace taskgov::scheduler::model {

// Annotations on a job taskgov suspended.
inline constexpr char kSuspendedByAnnotation[] = "taskgov.io/suspended-by";  // "taskgov"
inline constexpr char kSuspendReasonAnnotation[] =
    "taskgov.io/suspend-reason";  // Reclaim | InTeamPriority | FairShare
inline constexpr char kSuspendedAtAnnotation[] = "taskgov.io/suspended-at";  // RFC 3339
// How many times taskgov suspended it (kept after a resume: the resume backoff grows with it).
inline constexpr char kSuspensionsAnnotation[] = "taskgov.io/suspensions";
// The priority its pods had when suspended (its pods are gone while it waits).
inline constexpr char kSuspendedPriorityAnnotation[] = "taskgov.io/suspended-priority";
inline constexpr char kSuspendedByValue[] = "taskgov";

struct JobControl {
  std::string kind;  // Job, JobSet, RayJob, RayCluster, PyTorchJob, TFJob, MPIJob, XGBoostJob, ...
  std::string ns;
  std::string name;
  std::string uid;
  std::string workload;     // its pods' gang key (OwnerGangKey(uid))
  std::string path;         // the object's API path, e.g. /apis/batch/v1/namespaces/a/jobs/train
  bool run_policy = false;  // the flag is spec.runPolicy.suspend, else spec.suspend
  bool suspended = false;
  int64_t creation_unix_ms = 0;
  // A podFailurePolicy rule ignores pods with the DisruptionTarget condition (batch/v1 Job): an
  // eviction of its pods does not count against its backoffLimit.
  bool ignores_disruption = false;
  // The taskgov.io/ annotations above, and Kueue's kueue.x-k8s.io/podset-* topology requests
  // (decisions/topology.h reads them when its pods carry none), as found on its metadata.
  Labels annotations;
  // What its pods request: one entry per pod set (a Job's template × parallelism; a training
  // job's replica types × replicas), each a pod made from the template (namespace set, no name).
  struct PodSet {
    int64_t count = 0;
    Pod pod;
  };
  std::vector<PodSet> pod_sets;
  // Set on a RayCluster a pausable RayJob owns: that RayJob's workload key. Such a record is a
  // link, not a job: its pods' job is the RayJob (ClusterState::JobOf follows it), and the quota
  // a resumed RayJob holds moves to the cluster KubeRay creates for it.
  std::string controlled_by;

  // taskgov suspended it and it is still suspended: a paused job, which taskgov resumes.
  [[nodiscard]] bool paused_by_taskgov() const;
  [[nodiscard]] int64_t suspensions() const;
  [[nodiscard]] std::optional<int64_t> suspended_at_ms() const;
  [[nodiscard]] std::optional<int32_t> suspended_priority() const;
  // Σ count over the pod sets.
  [[nodiscard]] int64_t pods() const;
  // "Job hyperpod-ns-a/train"
  [[nodiscard]] std::string display() const { return kind + " " + ns + "/" + name; }
};

}  // namespace taskgov::scheduler::model
