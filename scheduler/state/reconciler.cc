#include "scheduler/state/reconciler.h"

#include <string>
#include <utility>
#include <vector>

#include "scheduler/common/log.h"
#include "scheduler/model/interner.h"

namespace taskgov::scheduler::state {
namespace {

constexpr std::string_view kComponent = "ledger";

}  // namespace

Reconciler::Reconciler(ledger::QuotaBook* book, ClusterState* cluster, const common::Clock* clock,
                       Options options)
    : book_(book),
      cluster_(cluster),
      clock_(clock),
      options_(options),
      last_reconcile_(clock->SteadyNow()) {}

void Reconciler::Tick() {
  Expire();
  cluster_->pending().Sync();  // a filter's note posted while only readers held the queues
  const common::Clock::SteadyTime now = clock_->SteadyNow();
  if (now - last_reconcile_ < options_.reconcile_period) return;
  last_reconcile_ = now;
  // Reservations against the pods running, then the counters against the reservations.
  ReconcileReservations();
  ReconcileLedger();
}

Reconciler::Repairs Reconciler::repairs() const {
  return Repairs{expired_.load(std::memory_order_relaxed),
                 orphan_released_.load(std::memory_order_relaxed),
                 uncharged_charged_.load(std::memory_order_relaxed),
                 drift_cells_.load(std::memory_order_relaxed)};
}

void Reconciler::Expire() {
  const size_t expired = book_->ExpireAssumed();
  if (expired == 0) return;
  expired_.fetch_add(expired, std::memory_order_relaxed);
  common::log::Info(kComponent, "assumed reservations expired",
                    {{"count", static_cast<int64_t>(expired)}});
}

void Reconciler::ReconcileReservations() {
  const ClusterState::ReservationDrift pods =
      cluster_->ReconcileReservations(options_.orphan_reservation_age.count());
  orphan_released_.fetch_add(pods.released.size(), std::memory_order_relaxed);
  uncharged_charged_.fetch_add(pods.charged.size(), std::memory_order_relaxed);
  for (const auto& [what, uids] :
       {std::pair{"released", &pods.released}, std::pair{"charged", &pods.charged}}) {
    if (uids->empty()) continue;
    common::log::Warn(kComponent, "reservations repaired against the running pods",
                      {{"repair", what},
                       {"count", static_cast<int64_t>(uids->size())},
                       {"first_uid", uids->front()}});
  }
}

void Reconciler::ReconcileLedger() {
  const std::vector<ledger::Ledger::Drift> drift = book_->Reconcile();
  drift_cells_.fetch_add(drift.size(), std::memory_order_relaxed);
  for (const ledger::Ledger::Drift& d : drift) {
    common::log::Warn(kComponent, "usage drift repaired",
                      {{"team", model::TeamNames().Name(d.key.team)},
                       {"flavor", model::FlavorNames().Name(d.key.flavor)},
                       {"resource", model::ResourceNames().Name(d.key.resource)},
                       {"ledger", d.ledger_usage},
                       {"reservations", d.charged}});
  }
}

}  // namespace taskgov::scheduler::state
