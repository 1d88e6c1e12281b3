#pragma once

// Clock: the time sources of the Kubernetes client, injected so tests control time.
//  * SteadyNow — monotonic time for timeouts, backoff, token re-reads and lease validity;
//  * WallNow   — Unix time in microseconds for timestamps written to the API (lease renewTime,
//                event eventTime) and for comparing with timestamps read from it (credential
//                expiry).
// RealClock reads the system clocks. Implementations must be thread-safe.

#include <chrono>
#include <cstdint>

namespace taskgov::scheduler::kube {

class Clock {
 public:
  using SteadyTime = std::chrono::steady_clock::time_point;
  virtual ~Clock() = default;
  [[nodiscard]] virtual SteadyTime SteadyNow() const = 0;
  [[nodiscard]] virtual int64_t WallNowMicros() const = 0;
};

class RealClock final : public Clock {
 public:
  SteadyTime SteadyNow() const override { return std::chrono::steady_clock::now(); }
  int64_t WallNowMicros() const override {
    return std::chrono::duration_cast<std::chrono::microseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  }
  // A process-wide instance for callers that do not inject one.
  static const Clock* Get() {
    static const RealClock clock;
    return &clock;
  }
};

}  // namespace taskgov::scheduler::kube
