#include "scheduler/actions/job_resumer.h"

#include <algorithm>
#include <tuple>
#include <utility>
#include <vector>

#include "scheduler/common/log.h"

namespace taskgov::scheduler::actions {

namespace {

constexpr std::string_view kComponent = "resume";

// What resuming writes: the flag, and taskgov's annotations gone but the count.
model::Labels ResumeAnnotations() {
  return {{model::kSuspendedByAnnotation, ""},
          {model::kSuspendReasonAnnotation, ""},
          {model::kSuspendedAtAnnotation, ""},
          {model::kSuspendedPriorityAnnotation, ""}};
}

}  // namespace

JobResumer::JobResumer(state::ClusterState* cluster, KubeActions* kube, Explainer explain,
                       const common::Clock* clock, Options options)
    : cluster_(cluster),
      kube_(kube),
      explain_(std::move(explain)),
      clock_(clock),
      options_(options) {}

int64_t JobResumer::ResumableAt(int64_t suspended_at_ms, int64_t suspensions) const {
  int64_t wait = options_.base_backoff_ms;
  for (int64_t i = 1; i < suspensions && wait < options_.max_backoff_ms; ++i) wait *= 2;
  return suspended_at_ms + std::min(wait, options_.max_backoff_ms);
}

model::Pod JobResumer::Representative(const model::JobControl& job) {
  model::Pod pod = job.pod_sets.empty() ? model::Pod{} : job.pod_sets.front().pod;
  pod.namespace_ = job.ns;
  pod.name = job.name + " (paused)";
  pod.uid = "paused/" + job.uid;
  pod.creation_unix_ms = job.creation_unix_ms;
  pod.node_name.clear();
  pod.phase = model::PodPhase::kPending;
  if (std::optional<int32_t> p = job.suspended_priority()) pod.priority = *p;
  const std::string api_version =
      job.run_policy ? (job.kind == "MPIJob" ? "kubeflow.org/v2beta1" : "kubeflow.org/v1")
                     : "batch/v1";
  pod.owner_references = {model::OwnerReference{api_version, job.kind, job.name, job.uid, true}};
  return pod;
}

JobResumer::RunReport JobResumer::RunOnce() {
  RunReport report;
  const int64_t now = clock_->NowMs();
  struct Candidate {
    int32_t priority;
    int64_t created_ms;
    std::shared_ptr<const model::JobControl> job;
  };
  std::vector<Candidate> candidates;
  for (std::shared_ptr<const model::JobControl>& job : cluster_->PausedJobs()) {
    if (!job->suspended) {
      // Someone else resumed it: it is no longer taskgov's to resume, ever.
      std::string detail;
      (void)kube_->SetSuspended(*job, false, ResumeAnnotations(), &detail);
      continue;
    }
    if (!job->paused_by_taskgov()) continue;
    ++report.paused;
    const std::optional<int64_t> at = job->suspended_at_ms();
    if (at && now < ResumableAt(*at, job->suspensions())) {
      ++report.waiting;
      continue;
    }
    candidates.push_back(
        {job->suspended_priority().value_or(0), job->creation_unix_ms, std::move(job)});
  }
  std::sort(candidates.begin(), candidates.end(), [](const Candidate& a, const Candidate& b) {
    return std::tie(b.priority, a.created_ms, a.job->workload) <
           std::tie(a.priority, b.created_ms, b.job->workload);
  });
  for (const Candidate& c : candidates) {
    if (explain_(Representative(*c.job)) != decisions::Outlook::kAdmissible) continue;
    std::string detail;
    const SuspendOutcome outcome = kube_->SetSuspended(*c.job, false, ResumeAnnotations(), &detail);
    if (outcome != SuspendOutcome::kDone) continue;
    common::log::Info(kComponent, "job resumed",
                      {{"job", c.job->display()},
                       {"pods", c.job->pods()},
                       {"suspensions", c.job->suspensions()}});
    report.resumed = c.job->display();
    break;
  }
  return report;
}

}  // namespace taskgov::scheduler::actions
