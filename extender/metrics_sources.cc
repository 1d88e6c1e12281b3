#include "extender/metrics_sources.h"

#include <optional>
#include <string_view>
#include <utility>
#include <vector>

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
  for (const auto& [key, count] : stats.preemptions) {
    out.preemptions.push_back(
        metrics::PreemptionTotals::Count{key.preemptor_team, key.victim_team, key.reason, count});
  }
  out.preempted_pods.insert(stats.preempted_pods.begin(), stats.preempted_pods.end());
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
