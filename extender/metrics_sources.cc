#include "extender/metrics_sources.h"

#include <map>
#include <memory>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "extender/workload_rows.h"

namespace taskgov::extender {
namespace {

std::vector<metrics::InformerTotals> InformerTotalsOf(const scheduler::kube::Informers& informers) {
  std::vector<metrics::InformerTotals> out;
  for (const scheduler::kube::ReflectorStats& stats : informers.Stats()) {
    out.push_back(
        metrics::InformerTotals{stats.resource, stats.watch_restarts, stats.last_event_unix_ms});
  }
  return out;
}

}  // namespace

metrics::PreemptionTotals PreemptionTotalsOf(const scheduler::actions::PreemptionStats& stats) {
  metrics::PreemptionTotals out;
  // Every key of the three maps (a job paused always stops a pod, so its key has preemptions).
  std::map<scheduler::actions::PreemptionStats::Key, metrics::PreemptionTotals::Count> counts;
  auto count = [&](const scheduler::actions::PreemptionStats::Key& key) -> auto& {
    metrics::PreemptionTotals::Count& c = counts[key];
    c.team = key.preemptor_team;
    c.victim_team = key.victim_team;
    c.reason = key.reason;
    return c;
  };
  for (const auto& [key, n] : stats.preemptions) count(key).evictions = n;
  for (const auto& [key, n] : stats.paused_pods) count(key).paused_pods = n;
  for (const auto& [key, n] : stats.jobs_paused) count(key).jobs_paused = n;
  for (auto& [key, c] : counts) out.preemptions.push_back(std::move(c));
  out.preempted_pods.insert(stats.preempted_pods.begin(), stats.preempted_pods.end());
  return out;
}

std::map<std::string, int64_t, std::less<>> PausedWorkloadsByTeam(
    const scheduler::state::ClusterState& cluster) {
  std::map<std::string, int64_t, std::less<>> out;
  for (const std::shared_ptr<const scheduler::model::JobControl>& job : cluster.PausedJobs()) {
    if (!job->paused_by_taskgov()) continue;
    const scheduler::model::NameId team = TeamOfJob(cluster, *job);
    if (team == scheduler::state::kNoTeam) continue;
    ++out[std::string(scheduler::model::TeamNames().Name(team))];
  }
  return out;
}

metrics::HttpListenerTotals HttpListenerTotalsOf(std::string listener,
                                                 const HttpServerStats& stats) {
  metrics::HttpListenerTotals out;
  out.listener = std::move(listener);
  out.refused = stats.refused;
  out.open_connections = stats.open_connections;
  out.inflight_body_bytes = stats.inflight_body_bytes;
  return out;
}

metrics::Sources MetricsSources(const scheduler::ledger::QuotaBook* book,
                                const scheduler::state::ClusterState* cluster,
                                const scheduler::state::Reconciler* reconciler,
                                const scheduler::kube::Informers* informers,
                                const scheduler::actions::PreemptionController* preemption,
                                std::vector<HttpListenerSource> http_listeners) {
  metrics::Sources sources;
  sources.book = book;
  sources.cluster = cluster;
  sources.reconciler = reconciler;
  if (cluster != nullptr) {
    sources.paused_workloads = [cluster] { return PausedWorkloadsByTeam(*cluster); };
  }
  if (informers != nullptr) {
    sources.informers = [informers] { return InformerTotalsOf(*informers); };
  }
  if (preemption != nullptr) {
    sources.preemptions = [preemption] { return PreemptionTotalsOf(preemption->Stats()); };
  }
  if (!http_listeners.empty()) {
    sources.http_listeners = [listeners = std::move(http_listeners)] {
      std::vector<metrics::HttpListenerTotals> out;
      for (const HttpListenerSource& l : listeners) {
        out.push_back(HttpListenerTotalsOf(l.listener, l.server->stats()));
      }
      return out;
    };
  }
  return sources;
}

}  // namespace taskgov::extender
