#pragma once

// Jobs as a data scientist submits and watches them (issue 13, part 2):
//  * JobSubmission: `job submit`'s flags (HyperPod `hyp create hyp-pytorch-job`'s vocabulary)
//    checked into one value; an error is the usage error's message;
//  * JobManifest: the object to create — an indexed batch/v1 Job run as one gang (parallelism =
//    completions = nodes, completionMode Indexed; the gang the extender admits whole, sized by
//    the Job's parallelism), or a kubeflow.org/v1 PyTorchJob (Master + Workers = nodes) where
//    that CRD is served; both with the Kueue queue and priority-class labels on the object and
//    its pods (the extender resolves team and priority from the pods' labels), the instance-type
//    node selector, requests and limits, schedulerName taskgov;
//  * JobView: a Job or PyTorchJob read back with its pods (by controller owner), its state and,
//    when the admin API is reachable, its workload's live numbers; or another workload the
//    admin API lists (ViewOfWorkload), with its numbers and state there.
// Pure functions; thread-safe.

#include <rapidjson/document.h>

#include <cstdint>
#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "extender/cli/args.h"
#include "extender/cli/live.h"
#include "scheduler/common/result.h"

namespace taskgov::cli {

// kWorkload: any other workload the extender governs (a lone pod, a Kueue pod group, a PodGroup,
// a JobSet, ...), known only from its admin API: listed and explained, not changed.
enum class JobKind { kJob, kPyTorchJob, kWorkload };

inline constexpr char kQueueLabel[] = "kueue.x-k8s.io/queue-name";
inline constexpr char kPriorityLabel[] = "kueue.x-k8s.io/priority-class";
inline constexpr char kInstanceTypeLabel[] = "node.kubernetes.io/instance-type";

// "jobs" / "pytorchjobs" collection path in `ns` ("" for every namespace).
// The member at `path` below `v` (objects all the way down), or null.
[[nodiscard]] const rapidjson::Value* JsonAt(const rapidjson::Value& v,
                                             std::initializer_list<const char*> path);
[[nodiscard]] inline rapidjson::Value* JsonAt(rapidjson::Value& v,
                                              std::initializer_list<const char*> path) {
  return const_cast<rapidjson::Value*>(JsonAt(static_cast<const rapidjson::Value&>(v), path));
}

[[nodiscard]] std::string JobCollection(JobKind kind, const std::string& ns);
[[nodiscard]] std::string JobKindName(JobKind kind);  // "Job", "PyTorchJob"

struct JobSubmission {
  std::string name;
  std::string ns;
  std::string image;
  std::string queue;  // "" : no queue label
  std::string priority_class;
  std::string instance_type;
  std::map<std::string, std::string> requests;  // resource → quantity, per node (pod)
  std::map<std::string, std::string> limits;
  int64_t nodes = 1;
  int64_t tasks_per_node = 1;
  std::vector<std::string> command;
  std::vector<std::string> args;
  std::vector<std::pair<std::string, std::string>> env;
  std::string pull_policy;  // "" : the cluster's default
  std::optional<int64_t> max_retry;
  std::string scheduler_name = "taskgov";
  // --required-topology / --preferred-topology (issue 37): the annotation
  // kueue.x-k8s.io/podset-required-topology or -preferred-topology and its level (a node label
  // key).
  std::string topology_annotation;
  std::string topology_level;
};

// `job submit`'s flags. Errors are usage messages.
[[nodiscard]] common::Result<JobSubmission> ParseJobSubmission(const ParsedArgs& args);
// The namespace it goes to (-n or the context's), and HyperPod's default queue there: a
// hyperpod-ns-T namespace's LocalQueue hyperpod-ns-T-localqueue, unless --queue-name gave one.
void SetNamespace(const std::string& ns, JobSubmission* job);
[[nodiscard]] std::string JobManifest(const JobSubmission& job, JobKind kind);

struct JobPod {
  std::string name;
  std::string index;  // completion index or replica "Master-0"
  std::string phase;
  std::string node;
  bool terminating = false;
};

struct JobView {
  JobKind kind = JobKind::kJob;
  std::string ns;
  std::string name;
  std::string uid;
  std::string created;
  std::string priority_class;
  std::string queue;
  std::string instance_type;
  std::string image;
  int64_t nodes = 0;
  bool suspended = false;
  // Who suspended it and why, while it is suspended (its taskgov.io/ annotations; for a
  // kWorkload, the admin API's word).
  std::optional<JobSuspension> suspension;
  std::string state;                            // Pending, Running, Suspended, Succeeded, Failed
  std::map<std::string, std::string> requests;  // per pod, of its first container
  std::map<std::string, std::string> limits;
  std::vector<JobPod> pods;
  std::optional<LiveWorkload> live;
  std::string workload_kind;  // kWorkload: the admin API's kind (Pod, KueuePodGroup, ...)
  // "job/train", "pytorchjob/train", "pod/solo", "kueuepodgroup/dist".
  [[nodiscard]] std::string Ref() const;
  // "Job", "PyTorchJob", or the admin API's kind.
  [[nodiscard]] std::string Kind() const;
  // The state as shown: "Suspended (Reclaimed by taskgov)", "Suspended (by its user)", or state.
  [[nodiscard]] std::string StateText() const;
};

// Who suspended a job, from its annotations: taskgov when its taskgov.io/suspended-by says so,
// else its user.
[[nodiscard]] JobSuspension SuspensionOf(const std::map<std::string, std::string>& annotations);
// "Reclaimed by taskgov", "Preempted by taskgov" (InTeamPriority, Priority), "FairShare by
// taskgov", "Paused by taskgov" (another reason), "by its user".
[[nodiscard]] std::string SuspendedBy(const JobSuspension& s);

// A workload the admin API lists that is no Job or PyTorchJob object: its view.
[[nodiscard]] JobView ViewOfWorkload(const LiveWorkload& w);

// A Job or PyTorchJob object as read; its pods and state are filled by AttachPods.
[[nodiscard]] JobView ViewOf(const rapidjson::Value& object, JobKind kind);
// Adds the pods `pods` (objects) whose controller owner is the job, then derives its state.
void AttachPods(const rapidjson::Value& pods_items, JobView* job);

}  // namespace taskgov::cli
