#pragma once

// PolicyStore: the published policy snapshot — the one holder of the policy in force.
//
// The components that hold state derived from the policy (the ledger's cell layout and limits,
// the cluster view's node flavors and pending teams) Subscribe(): they are given the current
// snapshot at once and every later one in publication order, on the publishing thread, before
// Publish returns. So there is one published object, and everything else holds that same
// pointer (a decision reads it from the ledger generation it opened).
//
// Readers call Current() on any thread, as often as every decision, and get a complete,
// immutable scheduler::model::Policy that stays valid for as long as they hold the pointer; a
// reload never changes a snapshot a reader holds, it publishes a new one. The writer
// (ConfigWatcher) calls Publish() with a finalized policy.
//
// Scheme: Left-Right (Ramalhete & Correia). The store keeps two slots, each holding a
// shared_ptr; readers copy the pointer out of the slot `left_right_` names while registered in
// the read indicator of the current version; the writer fills the slot readers are not using,
// flips `left_right_`, then waits (yielding) until the readers that might still be copying out
// of the old slot have left — toggling `version_` between two indicators so that new readers
// never delay it — and finally refreshes the old slot. Readers are wait-free: two atomic
// increments, two atomic loads and one shared_ptr copy, whatever the writer does; they never
// wait for a configuration to be read, parsed or validated, and never see a half-built policy
// (the policy is complete and finalized before Publish, and the slot handoff is release/acquire).
// A reader holds its snapshot for as long as it keeps the pointer; the old snapshot is freed by
// whoever drops the last reference. (std::atomic<std::shared_ptr> was the first choice; GCC 12's
// implementation is reported as racy by ThreadSanitizer, so this scheme is used instead.)
//
// generation() counts publications (starting at 0 for the initial snapshot); it is incremented
// after the store, so a reader that sees generation g sees a snapshot at least that new.

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "scheduler/model/policy.h"

namespace taskgov::config {

class PolicyStore {
 public:
  // Starts with an empty, finalized policy (no teams: every pod is of no team).
  PolicyStore();
  explicit PolicyStore(scheduler::model::PolicyPtr initial);
  PolicyStore(const PolicyStore&) = delete;
  PolicyStore& operator=(const PolicyStore&) = delete;

  // Never null. Wait-free.
  [[nodiscard]] scheduler::model::PolicyPtr Current() const;
  // `policy` must be non-null and finalized; it must not be modified afterwards. Blocks only for
  // the readers that are copying the previous pointer at that instant.
  void Publish(scheduler::model::PolicyPtr policy);
  [[nodiscard]] uint64_t generation() const;
  // Calls `apply` now with the current snapshot, then with each one published after it, in
  // order, one at a time (under the writer's lock: `apply` must not Publish or Subscribe).
  void Subscribe(std::function<void(const scheduler::model::PolicyPtr&)> apply);

 private:
  scheduler::model::PolicyPtr slots_[2];
  std::atomic<int> left_right_{0};                    // the slot readers copy from
  std::atomic<int> version_{0};                       // the read indicator new readers register in
  mutable std::atomic<int64_t> readers_[2] = {0, 0};  // readers registered per indicator
  std::mutex writer_mu_;                              // one writer at a time
  std::atomic<uint64_t> generation_{0};
  std::vector<std::function<void(const scheduler::model::PolicyPtr&)>> subscribers_;  // writer_mu_
};

}  // namespace taskgov::config
