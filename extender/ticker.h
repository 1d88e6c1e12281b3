#pragma once

// Ticker: runs a callback every period on a thread of its own, until stopped. The process's
// background loops (preemption, ledger housekeeping) are Tickers.
//
// The n-th call gets n (1, 2, ...), one period after the previous call returned; calls never
// overlap. Stop() (or destruction) wakes the thread at once, waits for a call in progress to
// return and joins; no call starts after Stop() returns.
//
// Thread-safety: Stop() may be called from any thread but the ticker's own, more than once.
//
// `nice` (Linux: the thread's own nice value, setpriority on its thread id) lowers the loop's
// CPU priority: background passes then yield the CPU to the webhook threads, whose replies
// kube-scheduler waits for, instead of sharing it equally. A value the process may not set
// leaves the thread as it is.

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
  Ticker(std::chrono::milliseconds period, std::function<void(uint64_t)> tick, int nice = 0)
      : period_(period), tick_(std::move(tick)), thread_([this, nice] {
          if (nice != 0) (void)setpriority(PRIO_PROCESS, static_cast<id_t>(gettid()), nice);
          Loop();
        }) {}
  ~Ticker() { Stop(); }
  Ticker(const Ticker&) = delete;
  Ticker& operator=(const Ticker&) = delete;

  void Stop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

 private:
  void Loop() {
    uint64_t n = 0;
    std::unique_lock<std::mutex> lock(mu_);
    while (!cv_.wait_for(lock, period_, [this] { return stop_; })) {
      lock.unlock();
      tick_(++n);
      lock.lock();
    }
  }

  const std::chrono::milliseconds period_;
  std::function<void(uint64_t)> tick_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;  // guarded by mu_
  std::thread thread_;
};

}  // namespace taskgov::extender
