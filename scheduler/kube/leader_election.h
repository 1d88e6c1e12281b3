#pragma once

// LeaderElector: Lease-based leader election (coordination.k8s.io/v1) with kube-scheduler's
// defaults — lease 15 s, renew deadline 10 s, retry period 2 s (DESIGN §1, issue 6).
//
// Rules, as client-go's leaderelection applies them:
//  * validity is judged from the *locally observed* time at which the lease record last changed,
//    never from the remote acquireTime/renewTime (clocks differ between machines): another
//    holder's lease is valid until observed_time + leaseDurationSeconds on our steady clock;
//  * acquiring or renewing writes holderIdentity, leaseDurationSeconds, acquireTime (kept while
//    the same holder renews), renewTime and leaseTransitions (+1 when the holder changes) with
//    the resourceVersion read, so a concurrent writer makes the update fail with 409 instead of
//    two leaders;
//  * the leader steps down when it has not renewed within the renew deadline, or at once when it
//    sees another holder; every call made while leading is bounded by the time left before the
//    deadline, so stepping down is never late by more than one call's scheduling;
//  * Stop() releases a held lease (empty holder, leaseDurationSeconds 1) so a successor need not
//    wait for expiry.
// Clock and random source are injected: tests drive Step() by hand with a fake clock.
//
// Threading: Step() runs on one thread at a time (the elector's own thread after Start(), or the
// test's). Callbacks run on that thread, without internal locks held. is_leader() and
// is_serving() are atomic loads (acquire) and may be read from any thread; leader() and stats()
// are thread-safe. Serve only while is_serving(): is_leader() turns true before
// on_started_leading has rebuilt anything.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "scheduler/common/clock.h"
#include "scheduler/kube/backoff.h"
#include "scheduler/kube/lease.h"

namespace taskgov::scheduler::kube {

struct LeaderElectionOptions {
  std::string identity;  // unique per replica, e.g. "<pod name>_<uuid>"
  std::chrono::milliseconds lease_duration{15'000};
  std::chrono::milliseconds renew_deadline{10'000};
  std::chrono::milliseconds retry_period{2'000};
  double jitter_factor = 1.2;  // acquire retries wait retry_period × (1 + jitter_factor × r)
  std::chrono::milliseconds call_timeout{5'000};  // bound of each lease call (and see above)
  bool release_on_stop = true;
  std::function<void()> on_started_leading;
  std::function<void()> on_stopped_leading;
  std::function<void(const std::string& identity)> on_new_leader;  // observed holder changed
};

struct LeaderElectionStats {
  uint64_t acquisitions = 0;
  uint64_t renewals = 0;
  uint64_t failed_attempts = 0;  // get/create/update errors and conflicts
  uint64_t conflicts = 0;        // 409 on create or update
  uint64_t step_downs = 0;
};

class LeaderElector {
 public:
  LeaderElector(LeaseStore* store, LeaderElectionOptions options,
                const common::Clock* clock = nullptr, RandomSource random = nullptr);
  ~LeaderElector();  // Stop()
  LeaderElector(const LeaderElector&) = delete;
  LeaderElector& operator=(const LeaderElector&) = delete;

  // One round: try to acquire (follower) or renew (leader), stepping down when due. Returns how
  // long to wait before the next round.
  std::chrono::milliseconds Step();

  // Runs Step() in a loop on a thread of its own until Stop().
  void Start();
  // Stops the loop (waiting for a lease call in flight, at most call_timeout); releases the
  // lease if held (release_on_stop), then reports stopped leading. Idempotent.
  void Stop();

  // Holds the lease (from acquisition until stepping down).
  [[nodiscard]] bool is_leader() const { return leading_.load(std::memory_order_acquire); }
  // Holds the lease and on_started_leading has returned (a new leader's resync is done): the
  // condition for serving. False again before on_stopped_leading runs.
  [[nodiscard]] bool is_serving() const { return serving_.load(std::memory_order_acquire); }
  // The holder last observed in the lease ("" when none).
  [[nodiscard]] std::string leader() const;
  [[nodiscard]] LeaderElectionStats stats() const;

 private:
  bool TryAcquireOrRenew(std::chrono::milliseconds timeout);
  void Observe(const LeaseRecord& record, common::Clock::SteadyTime now);
  void StepDown(const std::string& why);
  void Release();
  std::chrono::milliseconds Jittered() const;

  LeaseStore* const store_;
  const LeaderElectionOptions options_;
  const common::Clock* const clock_;
  RandomSource random_;

  // Owned by the thread running Step().
  LeaseRecord observed_;
  common::Clock::SteadyTime observed_time_{};
  bool have_observed_ = false;
  common::Clock::SteadyTime last_renew_{};

  // Release on store, acquire on load: a reader that sees true also sees the callbacks' effects
  // ordered before the store (on_started_leading runs after the store: see Step()).
  std::atomic<bool> leading_{false};
  // Release on store after on_started_leading returned, acquire on load: a reader that sees
  // true also sees everything the callback (the resync) wrote.
  std::atomic<bool> serving_{false};

  mutable std::mutex mu_;
  std::string observed_holder_;  // guarded by mu_
  LeaderElectionStats stats_;    // guarded by mu_
  bool stopping_ = false;        // guarded by mu_
  std::condition_variable cv_;
  std::thread thread_;
  bool stopped_ = false;  // controlling thread only
};

}  // namespace taskgov::scheduler::kube
