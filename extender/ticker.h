#pragma once

// Ticker: runs a callback every period on a thread of its own, until stopped, and sooner when
// poked. The process's background loops (preemption, ledger housekeeping) are Tickers.
//
// The n-th call gets n (1, 2, ...); calls never overlap. A call starts one period after the
// previous call returned (the first, one period after construction), or earlier after Poke():
// `min_gap` after the later of the first poke it answers and the previous call's return (the
// first call's: construction) — with min_gap 0, at once. A call answers every poke made before
// it started: any number of pokes during a call, or while one waits for its gap, bring one call,
// not one each. A call that starts after Poke() returned sees what the poking thread did before
// it. The period counts again from each call's return, whatever started the call. Stop() (or
// destruction) wakes the thread at once, waits for a call in progress to return and joins; no
// call starts after Stop() returns, and a Poke() after that does nothing.
//
// Thread-safety: Poke() may be called from any thread, the ticker's own included, at any rate,
// while the Ticker exists; it allocates nothing and never waits for a call in progress. The
// first poke since a call started passes through the ticker's mutex — held by the loop only
// between calls, for an instant, never during one — to note its time and so that its wake-up
// cannot fall between the loop's look and its wait, and be lost; later pokes are one atomic
// exchange. Stop() may be called from any thread but the ticker's own, more than once.
//
// `nice` (Linux: the thread's own nice value, setpriority on its thread id) lowers the loop's
// CPU priority: background passes then yield the CPU to the webhook threads, whose replies
// kube-scheduler waits for, instead of sharing it equally. A value the process may not set
// leaves the thread as it is.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>

#include <sys/resource.h>
#include <unistd.h>

namespace taskgov::extender {

class Ticker {
 public:
  Ticker(std::chrono::milliseconds period, std::function<void(uint64_t)> tick, int nice = 0,
         std::chrono::milliseconds min_gap = std::chrono::milliseconds(0))
      : period_(period), min_gap_(min_gap), tick_(std::move(tick)), thread_([this, nice] {
          if (nice != 0) (void)setpriority(PRIO_PROCESS, static_cast<id_t>(gettid()), nice);
          Loop();
        }) {}
  ~Ticker() { Stop(); }
  Ticker(const Ticker&) = delete;
  Ticker& operator=(const Ticker&) = delete;

  // Asks for a call soon (see above).
  void Poke() {
    // release: the call that answers this poke clears the flag with an acquire exchange, and so
    // sees what this thread did before. Already set: that call is due anyway.
    if (poked_.exchange(true, std::memory_order_release)) return;
    {
      // The loop looks at poked_at_ under mu_: this poke comes before that look or after the
      // loop waits, never in between, where the notification would be lost. relaxed: mu_ orders
      // it with the loop's clearing; cleared already, a call started since answers this poke.
      std::lock_guard<std::mutex> lock(mu_);
      if (poked_.load(std::memory_order_relaxed) && !poked_at_) poked_at_ = Clock::now();
    }
    cv_.notify_one();
  }

  void Stop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

 private:
  using Clock = std::chrono::steady_clock;

  void Loop() {
    uint64_t n = 0;
    std::unique_lock<std::mutex> lock(mu_);
    Clock::time_point returned = Clock::now();  // of the previous call; at first, the start
    while (WaitForNextCall(lock, returned)) {
      // acquire: pairs with Poke's release; this call answers every poke made so far.
      poked_.exchange(false, std::memory_order_acquire);
      poked_at_.reset();
      lock.unlock();
      tick_(++n);
      lock.lock();
      returned = Clock::now();
    }
  }

  // With mu_ held: waits until the next call is due — a period after `returned`, or once poked,
  // min_gap_ after the later of the poke and `returned`. False when stopped.
  bool WaitForNextCall(std::unique_lock<std::mutex>& lock, Clock::time_point returned) {
    const Clock::time_point timer = returned + period_;
    cv_.wait_until(lock, timer, [this] { return stop_ || poked_at_.has_value(); });
    if (!stop_ && poked_at_) {
      const Clock::time_point due = std::max(returned, *poked_at_) + min_gap_;
      cv_.wait_until(lock, std::min(timer, due), [this] { return stop_; });
    }
    return !stop_;
  }

  const std::chrono::milliseconds period_;
  const std::chrono::milliseconds min_gap_;
  std::function<void(uint64_t)> tick_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;  // guarded by mu_
  // A call is asked for: set by Poke, cleared as a call starts; and when the first poke it
  // answers was made (guarded by mu_; empty until that poke has passed through mu_).
  std::atomic<bool> poked_{false};
  std::optional<Clock::time_point> poked_at_;
  std::thread thread_;
};

}  // namespace taskgov::extender
