#pragma once

// Reconciler: the ledger's housekeeping. It expires assumed reservations whose TTL has passed,
// and, every reconcile period, repairs the reservations against the pods running (bound
// reservations of pods gone without an event are released, running pods without a reservation
// are charged: ClusterState::ReconcileReservations) and then the ledger's counters against the
// reservations (QuotaBook::Reconcile). Each repair is logged (component "ledger") and counted.
// Repairs are drift, normally none; expiry is routine (a filter whose bind never came).
//
// Every Tick():
//  1. QuotaBook::ExpireAssumed(); logs "assumed reservations expired" when any were.
//  2. PendingQueues::Sync(): applies the filters' notes no writer has applied yet.
//  3. When at least Options::reconcile_period of steady time (by the injected clock) has passed
//     since construction or the last reconcile: ReconcileReservations(orphan_reservation_age)
//     — logs "reservations repaired against the running pods" per kind repaired — then
//     QuotaBook::Reconcile — logs "usage drift repaired" per cell.
//
// Thread-safety: Tick() calls must not overlap (one housekeeping thread calls it); repairs() may
// be called from any thread at any time. The book and the cluster state are thread-safe and
// must outlive the Reconciler.

#include <atomic>
#include <chrono>
#include <cstdint>

#include "scheduler/common/clock.h"
#include "scheduler/ledger/quota_book.h"
#include "scheduler/state/cluster_state.h"

namespace taskgov::scheduler::state {

class Reconciler {
 public:
  struct Options {
    std::chrono::milliseconds reconcile_period{60'000};
    // A bound reservation whose pod has not been seen running for this long is an orphan.
    std::chrono::milliseconds orphan_reservation_age{120'000};
  };

  // Monotonic totals since construction.
  struct Repairs {
    uint64_t expired = 0;            // assumed reservations released when their TTL passed
    uint64_t orphan_released = 0;    // bound reservations released: their pod is not running
    uint64_t uncharged_charged = 0;  // running pods charged: they held no reservation
    uint64_t drift_cells = 0;        // ledger cells whose counters disagreed with the charges
  };

  Reconciler(ledger::QuotaBook* book, ClusterState* cluster, const common::Clock* clock,
             Options options);
  Reconciler(const Reconciler&) = delete;
  Reconciler& operator=(const Reconciler&) = delete;

  // One housekeeping step (see the header comment).
  void Tick();

  [[nodiscard]] Repairs repairs() const;

 private:
  void Expire();
  void ReconcileReservations();
  void ReconcileLedger();

  ledger::QuotaBook* const book_;
  ClusterState* const cluster_;
  const common::Clock* const clock_;
  const Options options_;
  common::Clock::SteadyTime last_reconcile_;  // Tick() only

  // relaxed: independent monotonic counts; a reader needs no other memory visible with them.
  std::atomic<uint64_t> expired_{0};
  std::atomic<uint64_t> orphan_released_{0};
  std::atomic<uint64_t> uncharged_charged_{0};
  std::atomic<uint64_t> drift_cells_{0};
};

}  // namespace taskgov::scheduler::state
