#pragma once

// BodyBudget: a process-wide limit on the bytes of request bodies held in memory at once, shared
// by the HTTP listeners (HttpServerOptions::body_budget). A request reserves its declared
// Content-Length (or, chunked, each chunk as its header arrives) before the body is read and
// releases it once the handler has returned; a reservation that would take the total over the
// limit is refused and the caller decides (wait briefly, or answer 503).
//
// Thread-safety: every method may be called from any thread. TryReserve is a lock-free
// compare-exchange loop that reserves only while the total stays within the limit (the total
// never exceeds it, not even transiently); Release subtracts. The counter orders nothing else:
// relaxed is enough at every access (the memory a reservation stands for is allocated after it
// succeeds and freed before it is released, by the same thread).

#include <atomic>
#include <cstdint>

namespace taskgov::extender {

class BodyBudget {
 public:
  explicit BodyBudget(uint64_t limit_bytes) : limit_(limit_bytes) {}
  BodyBudget(const BodyBudget&) = delete;
  BodyBudget& operator=(const BodyBudget&) = delete;

  // Reserves `bytes` if the total stays within the limit; false (nothing reserved) otherwise.
  [[nodiscard]] bool TryReserve(uint64_t bytes) {
    // Relaxed: the counter publishes no other data (see the header comment).
    uint64_t in_use = in_use_.load(std::memory_order_relaxed);
    do {
      if (bytes > limit_ || in_use > limit_ - bytes) return false;
    } while (!in_use_.compare_exchange_weak(in_use, in_use + bytes, std::memory_order_relaxed,
                                            std::memory_order_relaxed));
    return true;
  }

  // Gives back `bytes` of earlier successful reservations.
  void Release(uint64_t bytes) {
    in_use_.fetch_sub(bytes, std::memory_order_relaxed);  // relaxed: a statistic and a limit only
  }

  [[nodiscard]] uint64_t in_use() const { return in_use_.load(std::memory_order_relaxed); }
  [[nodiscard]] uint64_t limit() const { return limit_; }

 private:
  const uint64_t limit_;
  std::atomic<uint64_t> in_use_{0};
};

}  // namespace taskgov::extender
