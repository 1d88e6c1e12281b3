#pragma once

// Metrics: taskgov's Prometheus exporter (DESIGN §7). One object per process owns the registry,
// is fed by a few Observe* calls from the components that see the events, reads the ledger, the
// cluster view and the other components' monotonic totals (Sources) when scraped, and renders the
// text exposition format 0.0.4.
//
// Families (prefix `taskgov_`, base units: seconds, bytes, cpu in cores; counters end in
// `_total`; every HELP text lists its labels and their values):
//   per team × flavor × resource, read from the ledger at scrape time —
//     taskgov_quota_nominal, taskgov_quota_borrowing_limit, taskgov_quota_lending_limit
//       (+Inf where unlimited), taskgov_quota_usage, taskgov_quota_borrowed,
//       taskgov_quota_lent                                      {team, flavor, resource}
//   per cohort × flavor × resource — taskgov_cohort_quota (what the cohort holds itself),
//     taskgov_cohort_pool_capacity (its teams' lendable quota plus its own),
//     taskgov_cohort_pool_usage                                 {cohort, flavor, resource}
//   per team — taskgov_team_info{team, cohort, cluster_queue} (1),
//     taskgov_weighted_share{team, flavor}, taskgov_pods{team, state},
//     taskgov_admissions_total{team, flavor, mode}, taskgov_refusals_total{team, reason},
//     taskgov_pod_wait_seconds{team, priority_class} (created → bound),
//     taskgov_pod_run_seconds{team, priority_class} (bound → ended),
//     taskgov_preemptions_total{team, victim_team, reason, mechanism} (mechanism: evict — the
//       pod was evicted — or suspend — its job was suspended, issue 35),
//     taskgov_jobs_paused_total{team, victim_team, reason} (jobs suspended, once each),
//     taskgov_paused_workloads{team} (jobs taskgov paused and has not resumed),
//     taskgov_topology_waiting_workloads{team} (pending workloads refused for their topology)
//   process — taskgov_webhook_requests_total{verb, outcome},
//     taskgov_webhook_request_duration_seconds{verb}, taskgov_watch_restarts_total{resource,
//     reason}, taskgov_informer_last_event_age_seconds{resource},
//     taskgov_informer_last_event_timestamp_seconds{resource}, taskgov_config_reloads_total
//     {result}, taskgov_config_last_reload_successful,
//     taskgov_config_last_reload_success_timestamp_seconds, taskgov_build_info{version,
//     revision}, taskgov_requeue_requests_total{outcome} (Sources::requeues: pending pods asked
//     for again once their refusal lapsed: requested, failed)
//   HTTP listeners (Sources::http_listeners) — taskgov_http_connections_refused_total{listener,
//     reason} (kHttpRefusals), taskgov_http_open_connections{listener},
//     taskgov_http_inflight_body_bytes{listener} (request bodies held against the budget)
//   ledger housekeeping (Sources::reconciler) — taskgov_ledger_repairs_total{kind}: expired
//     (assumed reservations released when their TTL passed: a filter whose bind never came),
//     orphan_released (bound reservations released because their pod was not running),
//     uncharged_charged (running pods charged because they held no reservation), drift_cell
//     (ledger cells whose counters disagreed with the reservations, rebuilt); all but expired
//     are drift and normally stay 0. taskgov_ledger_over_release_total (releases that found a
//     cell holding less than the charge: Ledger::over_releases(), drift, normally 0).
//   with Options::kueue_compatible, the same numbers under Kueue's names and labels —
//     kueue_cluster_queue_{nominal_quota, borrowing_limit, lending_limit, resource_usage}
//       {cohort, cluster_queue, flavor, resource}, kueue_cluster_queue_weighted_share
//       {cluster_queue}, kueue_cohort_subtree_quota{cohort, flavor, resource},
//       kueue_pending_workloads{cluster_queue, status},
//     kueue_admitted_active_workloads{cluster_queue}, kueue_admission_wait_time_seconds
//       {cluster_queue}, kueue_preempted_workloads_total{preempting_cluster_queue, reason},
//     kueue_evicted_workloads_total{cluster_queue, reason="Preempted", underlying_cause=""}
//       (the jobs taskgov paused: Kueue evicts a workload by suspending its job).
//
// Borrowed and lent are the ledger's rule, computed once in scheduler/ledger/cohort_usage.h: a
// team's usage above nominal, and its share of its cohort's borrowing in proportion to the
// lendable quota it leaves idle (within a cohort Σ lent = Σ borrowed, less the part the cohort's
// own quota carries; a team without a cohort neither lends nor borrows).
//
// Removed teams. A team's series exist while it is in the policy or still has usage in the
// ledger; after that every series naming it (quota, pods, counters, histograms) disappears from
// the exposition. Counters of a team that comes back continue from where they were (they
// count since the process started).
//
// Totals of other components (informers, preemptions, ledger repairs) are not copied here: a
// scrape reads them through Sources and renders them as they are then, so they are as monotonic
// as the component's own counts.
//
// Label values are bounded by construction: teams and flavors come from the policy (or the
// ledger), refusal reasons are FilterDecision's codes (others count as "other"), webhook verbs
// are a route's last path segment (every request to a path no route has is verb "unknown"),
// priority classes are capped at kMaxPriorityClasses distinct values (then "other"), watch
// resources/reasons and preemption reasons are code-defined strings.
//
// Thread-safety: every method may be called from any thread. The Observe* methods on the
// webhook path (ObserveFilter, ObserveRequest, and the others once their series exist) take no
// lock: a lock-free lookup and relaxed atomic increments. The first observation of a new label
// combination takes that family's mutex once. Render() serialises scrapes on its own mutex and
// never blocks observers.

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "metrics/labels.h"
#include "scheduler/common/clock.h"
#include "scheduler/decisions/admission.h"
#include "scheduler/decisions/preemption.h"
#include "scheduler/ledger/quota_book.h"
#include "scheduler/model/interner.h"
#include "scheduler/state/cluster_state.h"
#include "scheduler/state/reconciler.h"

namespace prometheus {
class Registry;
}

namespace taskgov::metrics {

// The Content-Type of Render()'s output.
inline constexpr std::string_view kContentType = "text/plain; version=0.0.4; charset=utf-8";

// Label value for events that belong to no team (pods passed through, not-ready refusals).
inline constexpr std::string_view kNoTeamLabel = "_none";

// Preemption reason labels (kPreempt*, with the Kueue reason each is exported as) and webhook
// outcomes are declared in labels.h.

inline constexpr size_t kMaxPriorityClasses = 64;

struct BuildInfo {
  std::string version = "dev";
  std::string revision = "unknown";
};

struct Options {
  // Also export Kueue's metric names and labels (see the header comment).
  bool kueue_compatible = false;
  BuildInfo build;
  // Time for informer event ages; null: the system clock.
  const common::Clock* clock = nullptr;
};

// One informer's totals (scheduler::kube::ReflectorStats' fields of the same names).
struct InformerTotals {
  std::string resource;                            // "pods", "nodes", ...
  std::map<std::string, uint64_t> watch_restarts;  // by reason (kWatchRestartReasons); monotonic
  int64_t last_event_unix_ms = 0;                  // wall time of the last event; 0: none yet
};

// One HTTP listener's totals (extender's HttpServerStats fields of the same names).
struct HttpListenerTotals {
  std::string listener;                                  // "webhook", "metrics"
  std::array<uint64_t, kHttpRefusals.size()> refused{};  // by HttpRefusal; monotonic
  uint64_t open_connections = 0;                         // gauge
  uint64_t inflight_body_bytes = 0;                      // gauge
};

// The preemption controller's totals (scheduler::actions::PreemptionStats).
struct PreemptionTotals {
  struct Count {
    std::string team;         // the preemptor's
    std::string victim_team;  // "" for a pod of no team
    scheduler::decisions::PreemptionReason reason =
        scheduler::decisions::PreemptionReason::kPriority;
    uint64_t evictions = 0;    // pods stopped: evictions accepted, and pods of jobs paused
    uint64_t paused_pods = 0;  // of those, the pods stopped by suspending their job; monotonic
    uint64_t jobs_paused = 0;  // jobs suspended (once per job); monotonic
  };
  std::vector<Count> preemptions;  // one per (team, victim_team, reason)
  // Gauge: pods evicted by preemption that have not terminated yet, by victim team.
  std::map<std::string, int64_t, std::less<>> preempted_pods;
};

// One (team, victim_team, reason) of taskgov_preemptions_total: the preemptor's team, the
// victim's, the reason's label; `evictions` counts every pod stopped, `paused_pods` those of them
// stopped by suspending their job (mechanism "suspend"; the rest "evict"), `jobs_paused` the jobs
// suspended (taskgov_jobs_paused_total).
struct CountedPreemption {
  std::string_view team;
  std::string_view victim_team;
  std::string_view reason;
  double evictions = 0;
  double paused_pods = 0;
  double jobs_paused = 0;
};
// The preemptions taskgov_preemptions_total counts, where `live` accepts both teams: a team's
// preemptions only (not plain priority, not pods of no team). The one rule the metric and the
// admin API's teams (victims' counts) read; views into `totals`.
[[nodiscard]] std::vector<CountedPreemption> CountedPreemptions(
    const PreemptionTotals& totals, const std::function<bool(std::string_view team)>& live);

// A team's pods by state: one partition, the same on every surface that counts them
// (taskgov_pods, the admin API's teams, the console, the CLI) — each pod is in one state, and
// the states of a workload's pods are those the admin API's workloads report (podStates). Quota
// is charged for every state but pending.
struct TeamPods {
  int64_t pending = 0;      // waiting for admission
  int64_t admitted = 0;     // holding quota, not bound yet
  int64_t running = 0;      // bound, not being deleted
  int64_t preempted = 0;    // evicted by preemption, not gone yet
  int64_t terminating = 0;  // being deleted otherwise (finishing its grace period)
};
// The partition, from the QuotaBook's counts of the team's reservations (`charged`: bound and
// assumed), its pods waiting (the pending queues), its bound pods being deleted (the informers:
// ClusterState::TerminatingByTeam) and its pods evicted by preemption and not gone (the
// preemption controller). A pod evicted but not yet seen being deleted is counted preempted, not
// running.
[[nodiscard]] TeamPods PartitionTeamPods(const scheduler::ledger::QuotaBook::TeamCounts& charged,
                                         int64_t pending, int64_t terminating, int64_t preempted);

// The console listener's access checks (extender's ConsoleAccessStats fields of the same
// names); monotonic.
struct ConsoleAccessTotals {
  uint64_t full = 0;
  uint64_t team_scoped = 0;
  uint64_t unauthenticated = 0;
  uint64_t forbidden = 0;
  uint64_t errors = 0;
};

// The requests to try a pending pod again whose refusal lapsed (the extender's Requeuer stats);
// monotonic.
struct RequeueTotals {
  uint64_t requested = 0;
  uint64_t failed = 0;
};

// What a scrape reads. Pointers must outlive the Metrics object (or be replaced first). Each
// function is called once per scrape, on the scraping thread: it must be safe to call while the
// component runs, and must not call back into Metrics.
struct Sources {
  // Limits, usage and reservations; the policy is the ledger's. Null: no quota, team or pod
  // series (only the process families).
  const scheduler::ledger::QuotaBook* book = nullptr;
  // Pending pods per team. Null: no pending series.
  const scheduler::state::ClusterState* cluster = nullptr;
  // The ledger's housekeeping. Null: no taskgov_ledger_repairs_total series.
  const scheduler::state::Reconciler* reconciler = nullptr;
  // taskgov_watch_restarts_total and the informer event age and timestamp. Unset: no such
  // series.
  std::function<std::vector<InformerTotals>()> informers;
  // taskgov_preemptions_total (kueue_preempted_workloads_total) and taskgov_pods{state=
  // "preempted"}. Preemptions of plain priority (outside governance) and of pods of no team are
  // not a team's and are not counted. Unset: no such series.
  std::function<PreemptionTotals()> preemptions;
  // taskgov_http_connections_refused_total, taskgov_http_open_connections and
  // taskgov_http_inflight_body_bytes, one entry per listener. Unset: no such series.
  std::function<std::vector<HttpListenerTotals>()> http_listeners;
  // taskgov_console_access_total. Unset: no such series (no access checks).
  std::function<ConsoleAccessTotals()> console_access;
  // taskgov_requeue_requests_total{outcome} (only the leader's requests: a standby's stay 0).
  // Unset: no such series (--requeue-lapsed-refusals=false, or no Kubernetes API).
  std::function<RequeueTotals()> requeues;
  // taskgov_paused_workloads{team}: the jobs taskgov paused and has not resumed, by team (the
  // team their pods belong to). Unset: no such series.
  std::function<std::map<std::string, int64_t, std::less<>>()> paused_workloads;
};

class Metrics {
 public:
  explicit Metrics(Options options = {});
  ~Metrics();
  Metrics(const Metrics&) = delete;
  Metrics& operator=(const Metrics&) = delete;

  // Replaces what scrapes read. Call before serving, or at any time (a scrape in progress
  // finishes with the old sources).
  void SetSources(Sources sources);

  // --- Feeding (any thread) ---

  // After every filter decision (Admission::SetObserver): admitted ⇒
  // taskgov_admissions_total{team, flavor, mode="nominal"|"borrowing"} (pods of no team passed
  // through: team=flavor="_none", mode="passthrough"); refused ⇒
  // taskgov_refusals_total{team, reason}. Each filter call counts (a pod retried after a
  // refusal counts each time it is refused). Lock-free.
  void ObserveFilter(const scheduler::decisions::FilterDecision& decision);

  // After every reply of the webhook listener (HttpServerOptions::observer; see
  // extender/metrics_http.h): verb = the last segment of the path when `known_path` (a route
  // has this path, whatever its method: 405 and 413 replies keep their verb), else "unknown".
  // outcome (kWebhookOutcomes) = reply_failed when the reply could not be written; else
  // `handler_outcome`, the label the handler gave its reply (one of kWebhookOutcomes; anything else
  // counts as server_error); else, for replies the server wrote itself, from the status: 2xx ok,
  // 404 not_found, 405 method_not_allowed, 413/431 too_large, other 4xx bad_request, the rest
  // server_error. Lock-free.
  void ObserveRequest(std::string_view path, bool known_path, int status, bool reply_sent,
                      std::string_view handler_outcome, std::chrono::nanoseconds duration);

  // A pod of `team` was seen bound: wait time = bound − created (clamped at 0), into
  // taskgov_pod_wait_seconds{team, priority_class} (and kueue_admission_wait_time_seconds).
  void ObservePodBound(scheduler::model::NameId team, std::string_view priority_class,
                       int64_t created_ms, int64_t bound_ms);
  // A bound pod of `team` ended (succeeded, failed, deleted or evicted): run time = ended −
  // bound, into taskgov_pod_run_seconds{team, priority_class}.
  void ObservePodEnded(scheduler::model::NameId team, std::string_view priority_class,
                       int64_t bound_ms, int64_t ended_ms);
  // A pod's lifecycle transition (ClusterState::SetLifecycleObserver): seen bound ⇒
  // ObservePodBound(created → now), ended ⇒ ObservePodEnded(bound → now). Pods of no team are
  // not counted.
  void ObservePodLifecycle(const scheduler::state::ClusterState::PodLifecycle& event);
  // A config reload finished (the initial load counts as one) at `unix_ms`.
  void ObserveConfigReload(bool ok, int64_t unix_ms);

  // --- Exposition ---

  // The text exposition (format 0.0.4) of every family, read at this moment: quota and pod
  // gauges and the components' totals come from the sources now. Families are sorted by name;
  // series of the quota families follow the policy (team, flavor, resource order), the others
  // their label values.
  [[nodiscard]] std::string Render() const;

  // The registry of the process-level families, for components that declare families of their
  // own (they are rendered with the rest; names must not collide with the families above).
  [[nodiscard]] prometheus::Registry& registry();

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace taskgov::metrics
