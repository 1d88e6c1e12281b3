#pragma once

// AdminApi: the read-only admin API, version 1, served on the console listener — what the
// console and the CLI show (reference: extender/ADMIN_API.md). Every number comes from the same
// place as the /metrics series of the same meaning: the ledger's cells through
// ComputeCohortUsage (nominal, limits, usage, borrowed, lent), QuotaBook::CountByTeam (running
// pods, admitted workloads), the pending queues (pending pods and workloads), the weighted share
// of ReportedWeightedShare, the preemption controller's totals through metrics::
// CountedPreemptions (a team's pods preempted now and in all) — so a reply and a scrape taken at
// the same instant agree.
//
//   GET /api/v1/cluster                 flavors: nodes, allocatable, in use, quota
//   GET /api/v1/teams                   every team of the policy (?cohort=; ?namespace=: the team
//                                       a pod created there belongs to; ?window=)
//   GET /api/v1/teams/{team}            one team
//   GET /api/v1/workloads               workloads (gangs once, lone pods), filtered and paged:
//                                       ?team= &namespace= &state=Pending|Admitted|Running|
//                                       Terminating|Suspended &limit=1..1000 &continue=; a
//                                       job taskgov paused is listed (Suspended) once its pods
//                                       are gone, and a suspended job's workload says who
//                                       suspended it and why (workload_rows.h)
//   GET /api/v1/workloads/{ns}/{name}   the workloads of that name (a gang, an owner and a lone pod
//                                       may share one) with their pods
//   GET /api/v1/workloads/{ns}/{name}/explanation
//                                       why it waits: every rule of the filter with its numbers
//                                       and what would have to change (explanation.h)
//   GET /api/v1/policy                  the policy in force and the last reload's result
//   GET /api/v1/history                 trends (usage_history.h): ?team= &flavor= &resource=
//                                       &since=RFC3339
//   GET /api/v1/reports/usage.csv       GPU-hours (any resource) per team and day, as CSV
//   GET /api/v1/history/tasks           tasks that ended (succeeded, failed, preempted,
//                                       deleted), newest first: ?team= &since= &limit=1..1000
//
// Access: with `access` set, every request is checked (console_access.h: a bearer token that
// TokenReview accepts and SubjectAccessReview allows) — 401 / 403 / 503 otherwise; a caller
// allowed only some teams' namespaces sees the other teams' workloads without their names
// (and cannot look one up). Without `access` (no Kubernetes API) everything is visible.
//
// Amounts are Kubernetes quantity strings ("8", "96", "1152Gi", "1500m"); a limit that does not
// apply is null. Times are RFC 3339 UTC. Errors are JSON {"error": "..."}: 400 for a malformed
// or unknown query parameter (naming it), 404 for an unknown team or workload.
//
// Thread-safety: handlers run concurrently on the listener's threads; each reads the components
// through their thread-safe queries and shares no state. A reply's quota numbers come from one
// read of the ledger; its pod and workload counts from reads just after it.

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "config/watcher.h"
#include "extender/console_access.h"
#include "extender/http_server.h"
#include "extender/task_history.h"
#include "extender/usage_history.h"
#include "extender/workload_rows.h"
#include "metrics/metrics.h"
#include "scheduler/common/clock.h"
#include "scheduler/decisions/explanation.h"
#include "scheduler/ledger/quota_book.h"
#include "scheduler/state/cluster_state.h"

namespace taskgov::extender {

class AdminApi {
 public:
  struct Sources {
    const scheduler::ledger::QuotaBook* book = nullptr;  // required
    scheduler::state::ClusterState* cluster = nullptr;   // required
    // A note on a preemption or reclaim in progress for a pending pod ("" if none).
    std::function<std::string(std::string_view uid)> preemption_status;
    // The policy watcher's state; unset: no "reload" in /api/v1/policy.
    std::function<config::ReloadStatus()> reload_status;
    const common::Clock* clock = nullptr;   // required
    ConsoleAccess* access = nullptr;        // null: no access checks
    const UsageHistory* history = nullptr;  // null: the history endpoints answer 404
    // Waits, run times and ended tasks; null: no window in team replies, tasks history 404.
    const TaskHistory* tasks = nullptr;
    // The preemption controller's totals, as /metrics reads them (the teams' preempted pods and
    // preemptions); unset: zeros (no Kubernetes API, no controller).
    std::function<metrics::PreemptionTotals()> preemptions;
    // Where a topology gang was placed (Admission::PlacementOf, by workload key); unset: none.
    std::function<std::optional<scheduler::decisions::TopologyPlacement>(const std::string&)>
        topology;
    // Why a pod waits (Admission::Explain); unset: the explanation endpoint answers 404.
    std::function<scheduler::decisions::Explanation(const scheduler::model::Pod&)> explain;
    // The key of the digest that stands for a hidden workload's name (HMAC-SHA256, so that a
    // team cannot confirm a guess of another team's workload names); empty: 32 random bytes
    // drawn when the AdminApi is made (tests pass one to compare).
    std::string hidden_name_key;
  };
  explicit AdminApi(Sources sources);

  [[nodiscard]] std::vector<Route> Routes() const;

  // What UsageHistory samples now: the teams' cells (as /api/v1/teams), the flavors' use (as
  // /api/v1/cluster) and the teams' queues (as /api/v1/workloads), in base units.
  [[nodiscard]] UsageHistory::Snapshot HistorySnapshot() const;

 private:
  using Handler = HttpResponse (AdminApi::*)(const HttpRequest&, const ConsoleViewer&) const;
  // `handler` behind the access check, answered through `respond`.
  void Checked(Handler handler, const HttpRequest& request, Responder respond) const;
  HttpResponse Cluster(const HttpRequest& request, const ConsoleViewer& viewer) const;
  HttpResponse Teams(const HttpRequest& request, const ConsoleViewer& viewer) const;
  HttpResponse Team(const HttpRequest& request, const ConsoleViewer& viewer) const;
  HttpResponse Workloads(const HttpRequest& request, const ConsoleViewer& viewer) const;
  HttpResponse Workload(const HttpRequest& request, const ConsoleViewer& viewer) const;
  HttpResponse Explanation(const std::string& ns, const std::string& name,
                           const ConsoleViewer& viewer) const;
  HttpResponse Policy(const HttpRequest& request, const ConsoleViewer& viewer) const;
  HttpResponse History(const HttpRequest& request, const ConsoleViewer& viewer) const;
  HttpResponse UsageReport(const HttpRequest& request, const ConsoleViewer& viewer) const;
  HttpResponse EndedTasks(const HttpRequest& request, const ConsoleViewer& viewer) const;

  // A workload's explanation: of its first member the informers report waiting (else a summary
  // saying why there is none), with that member.
  struct Explained {
    scheduler::decisions::Explanation explanation;
    const PodRow* waiting = nullptr;  // into the row
    std::optional<scheduler::model::Pod> pod;
  };
  [[nodiscard]] Explained ExplainRow(const WorkloadRow& row) const;
  // Why a waiting workload waits, for lists: a preemption under way for it, else the filter's
  // last refusal, else its explanation's summary (pods kube-scheduler never sent to the filter:
  // no node has room) — at most kMaxExplainedPerList explained per reply (`explained` counts
  // them). "" for a workload that does not wait.
  [[nodiscard]] std::string WhyItWaits(const WorkloadRow& row, size_t* explained) const;
  // Where a topology gang was placed (Sources::topology), nullopt for none.
  [[nodiscard]] std::optional<scheduler::decisions::TopologyPlacement> TopologyOf(
      const WorkloadRow& row) const;
  static constexpr size_t kMaxExplainedPerList = 200;
  // row.flavor: where its pods run (their node's flavor), else what they ask for.
  void SetFlavor(WorkloadRow& row) const;

  const Sources sources_;
  const std::string hidden_name_key_;  // never empty
};

}  // namespace taskgov::extender
