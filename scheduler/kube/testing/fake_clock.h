#pragma once

// FakeClock: a Clock that moves only when the test says so. Thread-safe (atomics with relaxed
// order: a test advances time between steps it has already synchronised by other means).

#include <atomic>
#include <chrono>
#include <cstdint>

#include "scheduler/kube/clock.h"

namespace taskgov::scheduler::kube::testing {

class FakeClock final : public Clock {
 public:
  // Starts at an arbitrary steady instant and at 2026-01-01T00:00:00Z wall time.
  FakeClock() = default;

  SteadyTime SteadyNow() const override {
    return SteadyTime(std::chrono::microseconds(steady_us_.load(std::memory_order_relaxed)));
  }
  int64_t WallNowMicros() const override { return wall_us_.load(std::memory_order_relaxed); }

  void Advance(std::chrono::microseconds d) {
    steady_us_.fetch_add(d.count(), std::memory_order_relaxed);
    wall_us_.fetch_add(d.count(), std::memory_order_relaxed);
  }
  void SetWallMicros(int64_t us) { wall_us_.store(us, std::memory_order_relaxed); }

 private:
  std::atomic<int64_t> steady_us_{1'000'000'000'000};
  std::atomic<int64_t> wall_us_{1'767'225'600'000'000};
};

}  // namespace taskgov::scheduler::kube::testing
