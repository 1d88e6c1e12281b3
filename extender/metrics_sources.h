#pragma once

// MetricsSources: what the process's components expose to a scrape (metrics::Sources), as
// read-only accessors over the components themselves. Wiring only: each accessor reads the
// component's own monotonic totals when called and copies them into the metrics' view types
// (metrics/ may not depend on the Kubernetes client or the preemption controller).
//
// Thread-safety: the accessors call the components' thread-safe Stats(); the components must
// outlive the Metrics object the sources are given to.

#include "metrics/metrics.h"
#include "scheduler/actions/preemption_controller.h"
#include "scheduler/kube/informers.h"
#include "scheduler/ledger/quota_book.h"
#include "scheduler/state/cluster_state.h"
#include "scheduler/state/reconciler.h"

namespace taskgov::extender {

// `informers` and `preemption` may be null (no Kubernetes API: no such series).
[[nodiscard]] metrics::Sources MetricsSources(const scheduler::QuotaBook* book,
                                              const scheduler::ClusterState* cluster,
                                              const scheduler::Reconciler* reconciler,
                                              const scheduler::kube::Informers* informers,
                                              const scheduler::PreemptionController* preemption);

// The metrics' view of the controller's totals (exposed for tests).
[[nodiscard]] metrics::PreemptionTotals PreemptionTotalsOf(const scheduler::PreemptionStats& stats);

}  // namespace taskgov::extender
