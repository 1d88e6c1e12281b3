#include "scheduler/state/idle_sharing.h"

#include <utility>

#include "scheduler/common/log.h"

namespace taskgov::scheduler::state {

namespace {

// "ml.p5.48xlarge nvidia.com/gpu: 16, ..." for the log.
std::string Describe(const model::FlavorCapacity& capacity) {
  std::string out;
  for (const auto& [flavor, amounts] : capacity) {
    out += (out.empty() ? "" : "; ") + flavor + " " + amounts.ToString();
  }
  return out.empty() ? "none" : out;
}

}  // namespace

IdleSharing::IdleSharing(const NodeCache* nodes, const common::Clock* clock, Apply apply,
                         Options options)
    : nodes_(nodes), clock_(clock), apply_(std::move(apply)), options_(options) {}

void IdleSharing::SetPolicy(model::PolicyPtr configured) {
  std::lock_guard lock(mu_);
  configured_ = std::move(configured);
  (void)ApplyLocked(/*always=*/true);
}

bool IdleSharing::Refresh() {
  std::lock_guard lock(mu_);
  if (!configured_ || !configured_->idle_resource_sharing.enabled) return false;
  if (nodes_->CapacityStamp() == stamp_) return false;
  const int64_t now = clock_->SteadyNowMs();
  if (last_capacity_apply_ && now - *last_capacity_apply_ < options_.min_gap_ms) return false;
  if (!ApplyLocked(/*always=*/false)) return false;
  last_capacity_apply_ = now;
  return true;
}

model::PolicyPtr IdleSharing::effective() const {
  std::lock_guard lock(mu_);
  return effective_;
}

bool IdleSharing::ApplyLocked(bool always) {
  model::FlavorCapacity unallocated;
  if (configured_->idle_resource_sharing.enabled) {
    unallocated = model::UnallocatedCapacity(*configured_,
                                             nodes_->SchedulableCapacity(*configured_, &stamp_));
  }
  if (!always && unallocated == unallocated_) return false;
  if (configured_->idle_resource_sharing.enabled && unallocated != unallocated_) {
    common::log::Info("idle_sharing", "unallocated capacity lent within the sharing cohort",
                      {{"cohort", configured_->idle_resource_sharing.cohort},
                       {"unallocated", Describe(unallocated)},
                       {"before", Describe(unallocated_)}});
  }
  unallocated_ = std::move(unallocated);
  effective_ = model::WithUnallocatedCapacity(configured_, unallocated_);
  apply_(effective_);
  return true;
}

}  // namespace taskgov::scheduler::state
