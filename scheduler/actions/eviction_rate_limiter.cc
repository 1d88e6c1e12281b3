#include "scheduler/actions/eviction_rate_limiter.h"

#include <algorithm>

namespace taskgov::scheduler::actions {

EvictionRateLimiter::EvictionRateLimiter(double per_second, int64_t burst, int64_t now_ms)
    : per_second_(per_second),
      burst_(static_cast<double>(std::max<int64_t>(1, burst))),
      tokens_(static_cast<double>(burst)),
      at_ms_(now_ms) {}

void EvictionRateLimiter::Refill(int64_t now_ms) {
  // Time that went back refills nothing and takes nothing: the bucket restarts from there.
  const int64_t elapsed = std::max<int64_t>(0, now_ms - at_ms_);
  tokens_ = std::min(burst_, tokens_ + static_cast<double>(elapsed) * per_second_ / 1000.0);
  at_ms_ = now_ms;
}

bool EvictionRateLimiter::Allows(int64_t now_ms, double want) {
  Refill(now_ms);
  return tokens_ + 1e-9 >= std::min(want, burst_);
}

bool EvictionRateLimiter::TryTake(int64_t now_ms) {
  if (!Allows(now_ms, 1)) return false;
  tokens_ -= 1;
  return true;
}

}  // namespace taskgov::scheduler::actions
