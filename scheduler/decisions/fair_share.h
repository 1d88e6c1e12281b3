#pragma once

// The weighted share of DESIGN §3.6, in one place: for a team on a flavor,
//   share = max over governed resources of (usage − nominal)⁺ / cohort pool capacity,
// divided by the team's fair-share weight, in per-mille. Borrowing from a pool of capacity 0
// counts as a huge ratio; weight 0 (or less) means kUnlimited: always last.
// Value code; thread-compatible.

#include <algorithm>
#include <cstdint>

#include "scheduler/model/policy.h"

namespace taskgov::scheduler::decisions {

class ShareAccumulator {
 public:
  // Adds one resource: what the team uses and its nominal, and the cohort pool's capacity.
  void Add(int64_t usage, int64_t nominal, int64_t pool_capacity) {
    const int64_t borrowed = std::max<int64_t>(0, usage - nominal);
    if (borrowed == 0) return;
    const double ratio = pool_capacity > 0
                             ? static_cast<double>(borrowed) / static_cast<double>(pool_capacity)
                             : 1e6;
    max_ratio_ = std::max(max_ratio_, ratio);
  }
  // The share for a team of `weight`, in per-mille.
  [[nodiscard]] int64_t PerMille(double weight) const {
    if (weight <= 0) return model::kUnlimited;
    return static_cast<int64_t>(max_ratio_ * 1000.0 / weight);
  }

 private:
  double max_ratio_ = 0;
};

}  // namespace taskgov::scheduler::decisions
