#pragma once

// MemoryTrim: gives the heap's free pages back to the OS once the webhooks have gone quiet. A
// burst of large requests (a 6 MB NodeList on 8 connections) leaves the allocator holding tens of
// MiB it does not return by itself (glibc keeps freed memory in its arenas for reuse): 83 MiB at
// the peak, 42 MiB two seconds after it (tools/bench). Returning it on every free would cost
// the hot path (an mmap and page faults per large buffer: 4× the CPU per request, measured), so
// it is done once per quiet spell instead: when no request has arrived for `quiet` since the last
// one (or since the first Tick: the initial sync's garbage), `trim` runs once (malloc_trim in the
// process), off the webhook threads. A trim takes time in proportion to what was freed since the
// last one (measured with 120 MiB live: 4 ms after a burst that freed 50 MiB, 13 ms after 150
// MiB); a request that arrives meanwhile may wait that long for its thread's arena, which is why
// the trim waits for a quiet spell rather than running on a timer.
//
// Thread-safety: Tick is called by one thread (the housekeeping loop); `requests` is read there.

#include <cstdint>
#include <functional>
#include <utility>

namespace taskgov::extender {

class MemoryTrim {
 public:
  // `requests`: a count that grows with every request served; `trim`: returns the heap's free
  // pages (malloc_trim(0) in the process).
  MemoryTrim(int64_t quiet_ms, std::function<uint64_t()> requests, std::function<void()> trim)
      : quiet_ms_(quiet_ms), requests_(std::move(requests)), trim_(std::move(trim)) {}

  // Called periodically with the steady clock's milliseconds.
  void Tick(int64_t now_ms) {
    const uint64_t requests = requests_();
    if (!started_ || requests != seen_) {
      started_ = true;
      seen_ = requests;
      last_change_ms_ = now_ms;
      trimmed_ = false;
      return;
    }
    if (trimmed_ || now_ms - last_change_ms_ < quiet_ms_) return;
    trim_();
    trimmed_ = true;
    ++trims_;
  }

  [[nodiscard]] uint64_t trims() const { return trims_; }

 private:
  const int64_t quiet_ms_;
  std::function<uint64_t()> requests_;
  std::function<void()> trim_;
  bool started_ = false;
  uint64_t seen_ = 0;
  int64_t last_change_ms_ = 0;  // when `seen_` was read first
  bool trimmed_ = false;
  uint64_t trims_ = 0;
};

}  // namespace taskgov::extender
