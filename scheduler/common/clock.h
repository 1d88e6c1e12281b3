#pragma once

// Clock: the time source, injected wherever time matters so tests control it.
// Thread-safety: implementations are thread-safe.

#include <atomic>
#include <chrono>
#include <cstdint>

namespace taskgov {

class Clock {
 public:
  virtual ~Clock() = default;
  // Wall-clock Unix milliseconds (compared with Kubernetes timestamps).
  [[nodiscard]] virtual int64_t NowMs() const = 0;
};

class SystemClock final : public Clock {
 public:
  int64_t NowMs() const override {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  }
};

// A clock that only moves when told to (tests).
class FakeClock final : public Clock {
 public:
  explicit FakeClock(int64_t start_ms = 1'700'000'000'000) : now_(start_ms) {}
  int64_t NowMs() const override { return now_.load(std::memory_order_relaxed); }
  void Advance(int64_t ms) { now_.fetch_add(ms, std::memory_order_relaxed); }
  void Set(int64_t ms) { now_.store(ms, std::memory_order_relaxed); }

 private:
  std::atomic<int64_t> now_;
};

}  // namespace taskgov
