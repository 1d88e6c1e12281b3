#pragma once

// Clock: the time sources, injected wherever time matters so tests control it.
//  * SteadyNow     — monotonic time for timeouts, backoff, token re-reads and lease validity;
//  * WallNowMicros — Unix time for timestamps written to or read from the API and for comparing
//                    with Kubernetes timestamps (NowMs: the same in milliseconds).
// Thread-safety: implementations are thread-safe.

#include <atomic>
#include <chrono>
#include <cstdint>

namespace taskgov::common {

class Clock {
 public:
  using SteadyTime = std::chrono::steady_clock::time_point;
  virtual ~Clock() = default;
  [[nodiscard]] virtual SteadyTime SteadyNow() const = 0;
  [[nodiscard]] virtual int64_t WallNowMicros() const = 0;
  // Steady milliseconds since an arbitrary epoch: never steps back.
  [[nodiscard]] int64_t SteadyNowMs() const {
    return std::chrono::duration_cast<std::chrono::milliseconds>(SteadyNow().time_since_epoch())
        .count();
  }
  // Wall-clock Unix milliseconds.
  [[nodiscard]] int64_t NowMs() const {
    const int64_t us = WallNowMicros();
    return us >= 0 ? us / 1000 : (us - 999) / 1000;
  }
};

class SystemClock final : public Clock {
 public:
  SteadyTime SteadyNow() const override { return std::chrono::steady_clock::now(); }
  int64_t WallNowMicros() const override {
    return std::chrono::duration_cast<std::chrono::microseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  }
  // A process-wide instance for callers that do not inject one.
  static const Clock* Get() {
    static const SystemClock clock;
    return &clock;
  }
};

// A clock that only moves when told to (tests); steady and wall time move together. Relaxed
// atomics: a test advances time between steps it has already synchronised by other means.
class FakeClock final : public Clock {
 public:
  // Wall time starts at 2026-01-01T00:00:00Z unless given (Unix milliseconds).
  explicit FakeClock(int64_t start_ms = 1'767'225'600'000) : wall_us_(start_ms * 1000) {}

  SteadyTime SteadyNow() const override {
    return SteadyTime(std::chrono::microseconds(steady_us_.load(std::memory_order_relaxed)));
  }
  int64_t WallNowMicros() const override { return wall_us_.load(std::memory_order_relaxed); }

  void Advance(int64_t ms) { Advance(std::chrono::milliseconds(ms)); }
  template <typename Rep, typename Period>
  void Advance(std::chrono::duration<Rep, Period> d) {
    const int64_t us = std::chrono::duration_cast<std::chrono::microseconds>(d).count();
    steady_us_.fetch_add(us, std::memory_order_relaxed);
    wall_us_.fetch_add(us, std::memory_order_relaxed);
  }
  // Moves the wall clock only (steady time never goes back).
  void Set(int64_t ms) { wall_us_.store(ms * 1000, std::memory_order_relaxed); }
  void SetWallMicros(int64_t us) { wall_us_.store(us, std::memory_order_relaxed); }

 private:
  std::atomic<int64_t> steady_us_{1'000'000'000'000};
  std::atomic<int64_t> wall_us_;
};

}  // namespace taskgov::common
