#pragma once

// IdleSharing: keeps the policy in force — what the ledger and the cluster view are given —
// in step with HyperPod's IdleResourceSharing (model/idle_sharing.h). It stands between the
// published (configured) policy and Admission::ApplyPolicy: SetPolicy takes each configured
// policy and applies it at once, with the cluster's unallocated capacity added to the sharing
// cohort's own quota when the policy enables it (as is, the very same pointer, when it does not);
// Refresh, called by a periodic loop, recomputes that capacity when the nodes changed and applies
// a new effective policy only when the capacity it adds changed. So a node's heartbeat, a pod
// bound or a filter call costs nothing here, and a burst of node changes costs one application
// per `min_gap_ms` at most. Applying keeps the ledger's usage: when nodes go, pools may hold
// more than their new capacity; the ledger admits nothing more to them until usage falls back
// (reclaim frees what teams within their nominal quota need).
//
// Thread-safety: SetPolicy and Refresh may be called from any thread; one mutex serialises them,
// and `apply` runs under it (so applications never reorder). `apply` must not call back into this
// object. Lock order: this object's mutex, then whatever `apply` takes (the ledger, the cluster
// view's lock), then the node cache's (read under its shared lock).

#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>

#include "scheduler/common/clock.h"
#include "scheduler/model/idle_sharing.h"
#include "scheduler/model/policy.h"
#include "scheduler/state/node_cache.h"

namespace taskgov::scheduler::state {

class IdleSharing {
 public:
  struct Options {
    // After a capacity-driven application, the next one waits this long (steady time): a scale-up
    // of many nodes applies a policy a few times, not once per node. Policy changes apply at once.
    int64_t min_gap_ms = 10'000;
  };
  using Apply = std::function<void(const model::PolicyPtr& effective)>;

  IdleSharing(const NodeCache* nodes, const common::Clock* clock, Apply apply, Options options);
  IdleSharing(const IdleSharing&) = delete;
  IdleSharing& operator=(const IdleSharing&) = delete;

  // A configured policy (a PolicyStore subscriber): applied now, with the unallocated capacity
  // of the nodes as they are when it enables IdleResourceSharing.
  void SetPolicy(model::PolicyPtr configured);
  // Recomputes the unallocated capacity when the nodes changed since the last look (and the gap
  // since the last capacity-driven application has passed; else at a later call) and applies a
  // new effective policy when it differs. Returns whether it applied one. Cheap when nothing
  // changed: one read of the node cache's stamp.
  bool Refresh();

  // The last policy applied (null before SetPolicy).
  [[nodiscard]] model::PolicyPtr effective() const;

 private:
  // Computes the effective policy for `configured_` from the nodes now and applies it when
  // `always` or when the capacity it adds changed. Returns whether it applied. mu_ held.
  bool ApplyLocked(bool always);

  const NodeCache* const nodes_;
  const common::Clock* const clock_;
  const Apply apply_;
  const Options options_;
  mutable std::mutex mu_;
  model::PolicyPtr configured_;                 // mu_
  model::PolicyPtr effective_;                  // mu_
  model::FlavorCapacity unallocated_;           // mu_: what effective_ adds
  uint64_t stamp_ = 0;                          // mu_: the node cache's stamp effective_ saw
  std::optional<int64_t> last_capacity_apply_;  // mu_: steady ms
};

}  // namespace taskgov::scheduler::state
