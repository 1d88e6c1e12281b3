#include "scheduler/actions/job_resumer.h"

#include <algorithm>
#include <tuple>
#include <utility>
#include <vector>

#include "scheduler/common/log.h"
#include "scheduler/decisions/gang_room.h"
#include "scheduler/model/interner.h"

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
                       const common::Clock* clock, Options options, Reserver reserve)
    : cluster_(cluster),
      kube_(kube),
      explain_(std::move(explain)),
      reserve_(std::move(reserve)),
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
  if (job.kind == "JobSet") {  // its pods' gang is named by the JobSet's label
    pod.labels["jobset.sigs.k8s.io/jobset-name"] = job.name;
    pod.owner_references.clear();
    return pod;
  }
  const std::string api_version = job.kind == "RayCluster" || job.kind == "RayJob" ? "ray.io/v1"
                                  : !job.run_policy                                ? "batch/v1"
                                  : job.kind == "MPIJob" ? "kubeflow.org/v2beta1"
                                                         : "kubeflow.org/v1";
  pod.owner_references = {model::OwnerReference{api_version, job.kind, job.name, job.uid, true}};
  return pod;
}

bool JobResumer::RoomForAll(const model::JobControl& job, const decisions::Explanation& explanation,
                            int64_t now_ms) const {
  std::vector<decisions::PodSetDemand> sets;
  for (const model::JobControl::PodSet& set : job.pod_sets) sets.push_back({set.count, &set.pod});
  return std::any_of(explanation.flavors.begin(), explanation.flavors.end(),
                     [&](const decisions::FlavorExplanation& flavor) {
                       return flavor.admissible &&
                              decisions::RoomForGang(cluster_->nodes(),
                                                     model::FlavorNames().Intern(flavor.flavor),
                                                     sets, now_ms, state::Holder{"", job.workload})
                                  .fits();
                     });
}

// Some flavor would admit it but that its pods find no room there at once (the explanation's
// gangRoom check, or RoomForAll).
bool JobResumer::OnlyRoomLacks(const decisions::Explanation& explanation) {
  return std::any_of(explanation.flavors.begin(), explanation.flavors.end(),
                     [](const decisions::FlavorExplanation& flavor) {
                       bool room = flavor.admissible;
                       for (const decisions::Check& check : flavor.checks) {
                         if (check.passed) continue;
                         if (check.rule != decisions::kGangRoomRule) return false;
                         room = true;
                       }
                       return room;
                     });
}

JobResumer::RunReport JobResumer::RunOnce() {
  RunReport report;
  const int64_t now = clock_->NowMs();
  const model::PolicyPtr policy = cluster_->teams().policy();
  // What a judgement depends on, per namespace (its team): the policy, what the team's flavors
  // offer (pods counted or gone on their nodes: any team's), and the team's queue. A job judged
  // not admissible is not judged again while these stay as they were (at most
  // rejudge_after_ms), so a run where nothing changed judges nothing.
  std::unordered_map<std::string_view, Judged> seen_by_ns;
  auto seen_for = [&](const model::JobControl& job) -> const Judged& {
    auto it = seen_by_ns.find(job.ns);
    if (it != seen_by_ns.end()) return it->second;
    const model::NameId team = cluster_->teams().TeamOf(Representative(job));
    std::vector<model::NameId> flavors;
    if (const model::Team* t = policy->FindTeam(model::TeamNames().Name(team))) {
      for (const model::FlavorQuota& f : t->flavors) {
        flavors.push_back(model::FlavorNames().Intern(f.flavor));
      }
    }
    return seen_by_ns
        .emplace(job.ns, Judged{policy.get(), cluster_->nodes().ChangeStamp(flavors),
                                cluster_->pending().Version(team), now})
        .first->second;
  };
  struct Candidate {
    int32_t priority;
    int64_t created_ms;
    const model::JobControl* job;
  };
  std::vector<Candidate> stale;
  const std::vector<std::shared_ptr<const model::JobControl>> jobs = cluster_->PausedJobs();
  for (const std::shared_ptr<const model::JobControl>& job : jobs) {
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
    const Judged& seen = seen_for(*job);
    auto before = judged_.find(job->workload);
    if (before != judged_.end() && before->second.Same(seen, options_.rejudge_after_ms)) {
      ++report.unchanged;
      continue;
    }
    stale.push_back({job->suspended_priority().value_or(0), job->creation_unix_ms, job.get()});
  }
  // Best-ranked first: its pods' priority when suspended, then its creation (it keeps its place).
  std::sort(stale.begin(), stale.end(), [](const Candidate& a, const Candidate& b) {
    return std::tie(b.priority, a.created_ms, a.job->workload) <
           std::tie(a.priority, b.created_ms, b.job->workload);
  });
  for (const Candidate& c : stale) {
    if (report.judged == options_.max_judged_per_run) break;  // the next run's
    ++report.judged;
    const model::Pod stand_in = Representative(*c.job);
    const decisions::Explanation explanation = explain_(stand_in);
    bool resumable = explanation.outlook == decisions::Outlook::kAdmissible;
    if (resumable && !RoomForAll(*c.job, explanation, now)) resumable = false;
    if (!resumable && OnlyRoomLacks(explanation)) ++report.no_room;
    if (!resumable || (reserve_ && !reserve_(stand_in))) {
      judged_[c.job->workload] = seen_for(*c.job);
      continue;
    }
    // The quota now waits in the gang's hold for the job's pods (until the gang's timeout, if
    // the patch below fails).
    std::string detail;
    const SuspendOutcome outcome = kube_->SetSuspended(*c.job, false, ResumeAnnotations(), &detail);
    if (outcome != SuspendOutcome::kDone) continue;
    judged_.erase(c.job->workload);
    common::log::Info(kComponent, "job resumed",
                      {{"job", c.job->display()},
                       {"pods", c.job->pods()},
                       {"suspensions", c.job->suspensions()}});
    report.resumed = c.job->display();
    break;
  }
  // Forget the jobs that are no longer paused, now and then.
  if (judged_.size() > 2 * jobs.size() + 64) {
    std::unordered_map<std::string, Judged> kept;
    for (const std::shared_ptr<const model::JobControl>& job : jobs) {
      if (auto it = judged_.find(job->workload); it != judged_.end()) kept.insert(*it);
    }
    judged_ = std::move(kept);
  }
  return report;
}

}  // namespace taskgov::scheduler::actions
