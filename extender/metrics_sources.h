#pragma once

// MetricsSources: what the process's components expose to a scrape (metrics::Sources), as
// read-only accessors over the components themselves. Wiring only: each accessor reads the
// component's own monotonic totals when called and copies them into the metrics' view types
// (metrics/ may not depend on the Kubernetes client or the preemption controller).
//
// Thread-safety: the accessors call the components' thread-safe Stats(); the components must
// outlive the Metrics object the sources are given to.

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "extender/http_server.h"
#include "metrics/metrics.h"
#include "scheduler/actions/preemption_controller.h"
#include "scheduler/kube/informers.h"
#include "scheduler/ledger/quota_book.h"
#include "scheduler/state/cluster_state.h"
#include "scheduler/state/reconciler.h"

namespace taskgov::extender {

// An HTTP listener whose HttpServerStats a scrape reads, and its `listener` label.
struct HttpListenerSource {
  std::string listener;  // "webhook", "metrics", "console"
  const HttpServer* server = nullptr;
};

// `informers` and `preemption` may be null (no Kubernetes API: no such series); no
// `http_listeners`: no HTTP listener series.
[[nodiscard]] metrics::Sources MetricsSources(
    const scheduler::ledger::QuotaBook* book, const scheduler::state::ClusterState* cluster,
    const scheduler::state::Reconciler* reconciler, const scheduler::kube::Informers* informers,
    const scheduler::actions::PreemptionController* preemption,
    std::vector<HttpListenerSource> http_listeners = {});

// The metrics' view of the controller's totals (exposed for tests).
[[nodiscard]] metrics::PreemptionTotals PreemptionTotalsOf(
    const scheduler::actions::PreemptionStats& stats);

// The jobs taskgov paused and has not resumed, by the team their pods belong to (TeamOfJob);
// jobs of no team are not counted (exposed for tests).
[[nodiscard]] std::map<std::string, int64_t, std::less<>> PausedWorkloadsByTeam(
    const scheduler::state::ClusterState& cluster);

// The metrics' view of one listener's stats (exposed for tests).
[[nodiscard]] metrics::HttpListenerTotals HttpListenerTotalsOf(std::string listener,
                                                               const HttpServerStats& stats);

}  // namespace taskgov::extender
