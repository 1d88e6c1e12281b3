#pragma once

// PolicyStore: the published policy snapshot.
//
// Readers call Current() on any thread, as often as every decision, and get a complete,
// immutable scheduler::Policy that stays valid for as long as they hold the pointer; a reload
// never changes a snapshot a reader holds, it publishes a new one. The writer (ConfigWatcher)
// calls Publish() with a finalized policy.
//
// Scheme: std::atomic<std::shared_ptr<const Policy>> (C++20, libstdc++ 12). Current() is an
// acquire load, Publish() a release store, so a reader that sees the new pointer also sees every
// write made while building the policy — it never sees half a config. libstdc++ implements the
// atomic shared_ptr with a lock bit in the control-block pointer that is held only while the
// reference count is incremented (a few instructions, never across a reload or any I/O), so
// readers never wait for a configuration to be parsed or validated. The old snapshot is freed
// by whichever thread drops the last reference.
//
// generation() counts publications (starting at 0 for the initial snapshot); it is incremented
// after the store, so a reader that sees generation g sees a snapshot at least that new.

#include <atomic>
#include <cstdint>
#include <memory>

#include "scheduler/policy.h"

namespace taskgov::config {

class PolicyStore {
 public:
  // Starts with an empty, finalized policy (no teams: every pod is of no team).
  PolicyStore();
  explicit PolicyStore(scheduler::PolicyPtr initial);
  PolicyStore(const PolicyStore&) = delete;
  PolicyStore& operator=(const PolicyStore&) = delete;

  // Never null. Lock-free in effect, wait-free for practical purposes (see above).
  [[nodiscard]] scheduler::PolicyPtr Current() const;
  // `policy` must be non-null and finalized; it must not be modified afterwards.
  void Publish(scheduler::PolicyPtr policy);
  [[nodiscard]] uint64_t generation() const;

 private:
  std::atomic<scheduler::PolicyPtr> current_;
  std::atomic<uint64_t> generation_{0};
};

}  // namespace taskgov::config
