#pragma once

// EvictionRateLimiter: the token bucket that bounds how fast the preemption controller evicts
// (DESIGN §4: evictions_per_second, burst eviction_burst). The bucket starts full; it refills at
// `per_second` tokens a second up to the burst (at least 1); each eviction takes one token.
//
// Time is passed in — the run's one reading of the controller's injected clock — and never read
// here, so every check of a run sees the same instant and tests need no clock at all. The
// controller passes steady time; time that steps back anyway refills nothing (see Refill).
//
// Thread-compatible: not synchronised; the controller uses it from RunOnce only (serialised).

#include <cstdint>

namespace taskgov::scheduler::actions {

class EvictionRateLimiter {
 public:
  // Holds `burst` tokens at `now_ms`.
  EvictionRateLimiter(double per_second, int64_t burst, int64_t now_ms);

  // Refills to `now_ms`; true when `want` evictions (capped at the burst: a round larger than the
  // bucket starts when the bucket is full) may start now. Takes nothing.
  [[nodiscard]] bool Allows(int64_t now_ms, double want);
  // Refills to `now_ms` and takes one token; false (taking nothing) when less than one is there.
  [[nodiscard]] bool TryTake(int64_t now_ms);

  [[nodiscard]] double tokens() const { return tokens_; }

 private:
  void Refill(int64_t now_ms);

  const double per_second_;
  const double burst_;
  double tokens_;
  int64_t at_ms_;
};

}  // namespace taskgov::scheduler::actions
