#include "extender/metrics_sources.h"

#include <optional>
#include <string_view>
#include <vector>

namespace taskgov::extender {
namespace {

// INTEGRATION: PreemptionStats::Key::reason is becoming the PreemptionReason enum (a change in
// flight); until then it is ReasonName()'s string. Overload resolution picks whichever fits, so
// this compiles before and after; once the enum has landed the string overload can go.
[[maybe_unused]] std::optional<scheduler::PreemptionReason> ReasonOf(
    scheduler::PreemptionReason reason) {
  return reason;
}
[[maybe_unused]] std::optional<scheduler::PreemptionReason> ReasonOf(std::string_view name) {
  using scheduler::PreemptionReason;
  for (PreemptionReason reason : {PreemptionReason::kInTeamPriority, PreemptionReason::kReclaim,
                                  PreemptionReason::kFairShare, PreemptionReason::kPriority}) {
    if (scheduler::ReasonName(reason) == name) return reason;
  }
  return std::nullopt;
}

std::vector<metrics::InformerTotals> InformerTotalsOf(const scheduler::kube::Informers& informers) {
  std::vector<metrics::InformerTotals> out;
  for (const scheduler::kube::ReflectorStats& stats : informers.Stats()) {
    out.push_back(
        metrics::InformerTotals{stats.resource, stats.watch_restarts, stats.last_event_unix_ms});
  }
  return out;
}

}  // namespace

metrics::PreemptionTotals PreemptionTotalsOf(const scheduler::PreemptionStats& stats) {
  metrics::PreemptionTotals out;
  for (const auto& [key, count] : stats.preemptions) {
    const std::optional<scheduler::PreemptionReason> reason = ReasonOf(key.reason);
    if (!reason) continue;  // not a reason the controller declares
    out.preemptions.push_back(
        metrics::PreemptionTotals::Count{key.preemptor_team, key.victim_team, *reason, count});
  }
  out.preempted_pods.insert(stats.preempted_pods.begin(), stats.preempted_pods.end());
  return out;
}

metrics::Sources MetricsSources(const scheduler::QuotaBook* book,
                                const scheduler::ClusterState* cluster,
                                const scheduler::Reconciler* reconciler,
                                const scheduler::kube::Informers* informers,
                                const scheduler::PreemptionController* preemption) {
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
  return sources;
}

}  // namespace taskgov::extender
