#pragma once

// Ticker: runs a callback every period on a thread of its own, until stopped, and sooner when
// poked. The process's background loops (preemption, ledger housekeeping) are Tickers.
//
// The n-th call gets n (1, 2, ...); calls never overlap. A call starts one period after the
// previous call returned (the first, one period after construction), or earlier after Poke():
// then at once, but never sooner than `min_gap` after the previous call returned (the first,
// after construction). A call answers every poke made before it started: any number of pokes
// during a call, or during the gap after it, bring one more call, not one each. A call that
// starts after Poke() returned sees what the poking thread did before it. The period counts
// again from each call's return, whatever started the call. Stop() (or destruction) wakes the
// thread at once, waits for a call in progress to return and joins; no call starts after Stop()
// returns, and a Poke() after that does nothing.
//
// Thread-safety: Poke() may be called from any thread, the ticker's own included, at any rate,
// while the Ticker exists; it allocates nothing and never waits for a call in progress. The
// first poke since a call started passes through the ticker's mutex — held by the loop only
// between calls, for an instant, never during one — so that its wake-up cannot fall between the
// loop's look at the flag and its wait, and be lost; later pokes are one atomic exchange. Stop()
// may be called from any thread but the ticker's own, more than once.
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
    // The loop reads the flag under mu_: passing through it puts this poke before that read or
    // after the loop waits, never in between, where the notification would be lost.
    { std::lock_guard<std::mutex> lock(mu_); }
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
      lock.unlock();
      tick_(++n);
      lock.lock();
      returned = Clock::now();
    }
  }

  // With mu_ held: waits until the next call is due — a period after `returned`, or min_gap_
  // after it once poked. False when stopped.
  bool WaitForNextCall(std::unique_lock<std::mutex>& lock, Clock::time_point returned) {
    const Clock::time_point timer = returned + period_;
    // relaxed: a reason to wake only; Loop's exchange orders what the call reads.
    auto poked = [this] { return poked_.load(std::memory_order_relaxed); };
    cv_.wait_until(lock, timer, [&] { return stop_ || poked(); });
    if (!stop_ && poked()) {
      cv_.wait_until(lock, std::min(timer, returned + min_gap_), [this] { return stop_; });
    }
    return !stop_;
  }

  const std::chrono::milliseconds period_;
  const std::chrono::milliseconds min_gap_;
  std::function<void(uint64_t)> tick_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;               // guarded by mu_
  std::atomic<bool> poked_{false};  // a call is asked for; set by Poke, cleared as a call starts
  std::thread thread_;
};

}  // namespace taskgov::extender
