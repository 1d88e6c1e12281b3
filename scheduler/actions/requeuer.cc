#include "scheduler/actions/requeuer.h"

#include <algorithm>
#include <optional>
#include <utility>
#include <vector>

#include "scheduler/common/log.h"
#include "scheduler/common/time_format.h"
#include "scheduler/model/interner.h"

namespace taskgov::scheduler::actions {

namespace {

constexpr std::string_view kComponent = "requeue";

}  // namespace

Requeuer::Requeuer(state::ClusterState* cluster, KubeActions* kube, Judge judge,
                   const common::Clock* clock, Options options)
    : cluster_(cluster), kube_(kube), judge_(std::move(judge)), clock_(clock), options_(options) {}

bool Requeuer::Ask(const state::PendingPod& pending, int64_t now_ms, RunReport* report) {
  Asked& asked = asked_[pending.uid];
  if (now_ms < asked.next_ms) return false;
  const size_t slash = pending.key.find('/');
  if (slash == std::string::npos) return false;
  const std::string ns = pending.key.substr(0, slash);
  const std::string name = pending.key.substr(slash + 1);
  const common::Status status =
      kube_->Requeue(ns, name, pending.uid, common::FormatMicroTime(now_ms * 1000));
  int64_t gap = options_.first_gap_ms;
  for (int i = 0; i < asked.times && gap < options_.max_gap_ms; ++i) gap *= 2;
  ++asked.times;
  asked.next_ms = now_ms + std::min(gap, options_.max_gap_ms);
  if (!status.ok()) {
    ++report->failed;
    failed_.fetch_add(1, std::memory_order_relaxed);
    common::log::Warn(kComponent, "asking kube-scheduler to try a pod again failed",
                      {{"pod", pending.key}, {"error", status.error().message}});
    return false;
  }
  ++report->requeued;
  requeued_.fetch_add(1, std::memory_order_relaxed);
  common::log::Debug(kComponent, "pod requeued: its refusal lapsed",
                     {{"pod", pending.key}, {"times", asked.times}});
  return true;
}

Requeuer::RunReport Requeuer::RunOnce() {
  RunReport report;
  const int64_t now = clock_->NowMs();
  const model::PolicyPtr policy = cluster_->teams().policy();
  const bool by_priority = policy->task_prioritization == model::TaskPrioritization::kTaskRanking;
  ++run_;  // asked_ keeps the pods this run looks at (Asked::run)
  const size_t teams = policy->teams.size();
  // Teams take turns at going first: the run's judging budget is not always the first teams'.
  for (size_t t = 0; t < teams; ++t) {
    const model::Team& team = policy->teams[(first_team_ + t) % teams];
    if (!team.active || team.flavors.empty()) continue;
    const model::NameId team_id = model::TeamNames().Intern(team.name);
    const std::vector<state::PendingQueues::Refused> refused =
        cluster_->pending().RefusedHeads(team_id, by_priority, options_.scanned_per_team);
    if (refused.empty()) continue;
    std::vector<model::NameId> flavors;
    for (const model::FlavorQuota& f : team.flavors) {
      flavors.push_back(model::FlavorNames().Intern(f.flavor));
    }
    const uint64_t version = cluster_->pending().Version(team_id);
    const uint64_t stamp = cluster_->nodes().ChangeStamp(flavors);
    // Gangs judged this run (by PendingPod::gang): whether the filter would admit them now.
    std::unordered_map<std::string_view, bool> gangs;
    size_t judged_here = 0;
    for (const state::PendingQueues::Refused& ref : refused) {
      const state::PendingPod& p = *ref.pod;
      ++report.refused;
      if (!p.gang.empty()) {
        if (auto it = gangs.find(p.gang); it != gangs.end()) {
          if (it->second) (void)Ask(p, now, &report);
          continue;
        }
      }
      const auto last = asked_.find(p.uid);  // nothing is added to asked_ until the judgment
      if (last != asked_.end()) {
        const Asked& a = last->second;
        // Asked for a moment ago, or judged not admissible a moment ago or under what still
        // holds: so is its gang (members are asked for and judged together).
        // (judged at recheck_ms − recheck_gap_ms; a gap of 0: never judged not admissible)
        const bool judged_lately =
            a.recheck_gap_ms > 0 && now < a.recheck_ms - a.recheck_gap_ms + options_.recheck_ms;
        if (now < a.next_ms || judged_lately ||
            (now < a.recheck_ms && a.queue_version == version && a.stamp == stamp)) {
          if (!p.gang.empty()) gangs.emplace(p.gang, false);
          continue;
        }
      }
      if (now - ref.last_refused_ms < options_.quiet_ms) continue;  // being tried
      if (judged_here == options_.judged_per_team || report.judged == options_.judged_per_run) {
        continue;
      }
      const std::optional<model::Pod> pod = cluster_->FindPod(p.uid);
      if (!pod) continue;  // known from filter calls only: nothing to update
      ++judged_here;
      ++report.judged;
      const bool known_to_wait = last != asked_.end() && last->second.waiting;
      const decisions::Outlook outlook = judge_(*pod, known_to_wait);
      const bool admissible = outlook == decisions::Outlook::kAdmissible;
      if (!p.gang.empty()) gangs.emplace(p.gang, admissible);
      if (admissible) {
        (void)Ask(p, now, &report);
        continue;
      }
      Asked& a = asked_[p.uid];
      const bool same = a.recheck_gap_ms > 0 && a.queue_version == version && a.stamp == stamp;
      a.recheck_gap_ms = outlook == decisions::Outlook::kNeverFits ? options_.never_fits_recheck_ms
                         : same ? std::min(2 * a.recheck_gap_ms, options_.max_recheck_ms)
                                : options_.recheck_ms;
      a.queue_version = version;
      a.stamp = stamp;
      a.recheck_ms = now + a.recheck_gap_ms;
      a.waiting = outlook == decisions::Outlook::kWaiting;
    }
    for (const state::PendingQueues::Refused& ref : refused) {
      if (auto it = asked_.find(ref.pod->uid); it != asked_.end()) it->second.run = run_;
    }
  }
  if (teams > 0) first_team_ = (first_team_ + 1) % teams;
  std::erase_if(asked_, [&](const auto& entry) { return entry.second.run != run_; });
  return report;
}

}  // namespace taskgov::scheduler::actions
