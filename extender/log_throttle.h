#pragma once

// LogThrottle: at most one log line per interval for a kind of event that a hostile client can
// repeat at will (refused connections, header timeouts). Every event is counted; the line that
// is written reports how many events happened since the previous line, this one included, so no
// event goes unreported once the next line is written (the exact totals are in the metrics).
//
//   if (uint64_t n = throttle.Admit(Clock::now())) Warn("...", {{"count", n}});
//
// Thread-safety: Admit may be called from any thread (a mutex held for a few instructions;
// events are rare on a healthy server and the lock is never held across I/O).

#include <chrono>
#include <cstdint>
#include <mutex>

namespace taskgov::extender {

class LogThrottle {
 public:
  using Clock = std::chrono::steady_clock;

  explicit LogThrottle(Clock::duration interval = std::chrono::seconds(10)) : interval_(interval) {}

  // Counts one event at `now`. Returns the number of events the caller's line should report (the
  // ones held back since the last line, and this one), or 0 when no line is due yet.
  [[nodiscard]] uint64_t Admit(Clock::time_point now) {
    std::lock_guard<std::mutex> lock(mu_);
    ++pending_;
    if (written_ && now < next_) return 0;
    written_ = true;
    next_ = now + interval_;
    const uint64_t n = pending_;
    pending_ = 0;
    return n;
  }

 private:
  const Clock::duration interval_;
  std::mutex mu_;
  bool written_ = false;    // guarded by mu_
  Clock::time_point next_;  // guarded by mu_: no line before this
  uint64_t pending_ = 0;    // guarded by mu_: events since the last line
};

}  // namespace taskgov::extender
