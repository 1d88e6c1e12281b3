#pragma once

// Published<T>: an immutable value that many threads read while one writer at a time replaces it
// — readers take no lock and never wait for the writer (a map of statuses a webhook consults, a
// table a controller rebuilds).
//
// A reader announces itself in one of two counters, the one of the current epoch, then reads the
// current value. Publish swaps the value in, moves the epoch on and waits until the counter of the
// epoch it left is zero: a reader that could have seen the old value is counted there, and a
// reader arriving later sees the new epoch and the new value. Only then is the old value freed.
// A reader whose announcement raced a Publish (the epoch moved between its load and its count)
// withdraws and announces again, so reads are lock-free, and wait-free while nothing is published.
//
// Why a reader counted in the other counter is safe too: it announced before the previous Publish
// moved the epoch, and that Publish did not return before the reader withdrew; publishes are
// serialized, so this one started after it.
//
// Memory orders: the reader's announcement, its recheck of the epoch and its load of the value, and
// the writer's swap, epoch increment and counter load are sequentially consistent: the argument
// above needs one order of all six. A reader's withdrawal after a read is a release that the
// writer's (sequentially consistent, so acquire) load of the counter pairs with: the reader's use
// of the old value happens before it is freed. A withdrawal after a raced announcement read
// nothing (relaxed).
//
// Thread-safety: Read from any thread; Publish from one thread at a time (callers publish under
// the lock that orders their writes). A reader must not Publish from inside Read (it would wait
// for itself).

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <thread>
#include <utility>

namespace taskgov::common {

template <typename T>
class Published {
 public:
  explicit Published(std::unique_ptr<const T> initial) : value_(initial.release()) {}
  Published(const Published&) = delete;
  Published& operator=(const Published&) = delete;
  ~Published() { delete value_.load(std::memory_order_relaxed); }

  // fn(const T&) on the current value; what fn returns. The value lives until fn returns.
  template <typename Fn>
  auto Read(Fn&& fn) const {
    while (true) {
      const uint64_t epoch = epoch_.load(std::memory_order_seq_cst);
      std::atomic<int64_t>& readers = readers_[epoch & 1];
      readers.fetch_add(1, std::memory_order_seq_cst);
      if (epoch_.load(std::memory_order_seq_cst) == epoch) {
        struct Withdraw {
          std::atomic<int64_t>& readers;
          ~Withdraw() { readers.fetch_sub(1, std::memory_order_release); }
        } withdraw{readers};
        return std::forward<Fn>(fn)(*value_.load(std::memory_order_seq_cst));
      }
      readers.fetch_sub(1, std::memory_order_relaxed);  // it read nothing
    }
  }

  // Makes `next` the value; returns once no reader can still be reading the one it replaced,
  // which it frees.
  void Publish(std::unique_ptr<const T> next) {
    const T* old = value_.exchange(next.release(), std::memory_order_seq_cst);
    const uint64_t left = epoch_.fetch_add(1, std::memory_order_seq_cst);
    while (readers_[left & 1].load(std::memory_order_seq_cst) != 0) std::this_thread::yield();
    delete old;
  }

 private:
  std::atomic<const T*> value_;
  std::atomic<uint64_t> epoch_{0};
  mutable std::array<std::atomic<int64_t>, 2> readers_{};
};

}  // namespace taskgov::common
