#pragma once

// The weighted share of DESIGN §3.6, in one place: for a team on a flavor,
//   share = max over governed resources of (usage − nominal)⁺ / cohort pool capacity,
// divided by the team's fair-share weight, in per-mille. Borrowing from a pool of capacity 0
// counts as a huge ratio. A team that borrows nothing has share 0, whatever its weight. A team
// of weight 0 (or less) that borrows ranks after every team of positive weight, and among such
// teams by its unweighted ratio — Kueue's CompareDRS — encoded as kZeroWeightBorrowing plus the
// unweighted per-mille, so shares still compare as plain integers.
// Value code; thread-compatible.

#include <algorithm>
#include <cstdint>
#include <string>

#include "scheduler/model/policy.h"

namespace taskgov::scheduler::decisions {

class ShareAccumulator {
 public:
  // Adds one resource: what the team uses and its nominal, and what its cohort could lend it
  // (Kueue's lendable: the cohort pool's potential, CellView::pool_potential; a flat cohort's
  // capacity).
  void Add(int64_t usage, int64_t nominal, int64_t lendable) {
    const int64_t borrowed = std::max<int64_t>(0, usage - nominal);
    if (borrowed == 0) return;
    const double ratio =
        lendable > 0 ? static_cast<double>(borrowed) / static_cast<double>(lendable) : 1e6;
    max_ratio_ = std::max(max_ratio_, ratio);
  }
  // The share for a team of `weight`, in per-mille.
  [[nodiscard]] int64_t PerMille(double weight) const {
    if (max_ratio_ <= 0) return 0;
    if (weight <= 0) return kZeroWeightBorrowing + Capped(max_ratio_ * 1000.0);
    return Capped(max_ratio_ * 1000.0 / weight);
  }

  // Shares from here up are of teams of weight 0 that borrow.
  static constexpr int64_t kZeroWeightBorrowing = int64_t{1} << 62;

 private:
  static int64_t Capped(double per_mille) {
    return static_cast<int64_t>(std::min(per_mille, static_cast<double>(kZeroWeightBorrowing - 1)));
  }
  double max_ratio_ = 0;
};

// A share as every surface shows it — refusals, explanations, events, the console, the CLI, and
// taskgov_weighted_share — in one unit: the fraction, with three decimals ("0.125": the team
// borrows 12.5% of what its cohort can lend, per unit of fair-share weight). "inf" for an
// unbounded one, and for a team of weight 0 that borrows "inf (weight 0, <unweighted> unweighted)".
// `share` is the per-mille the rules compute in (exact: it has no more digits).
inline std::string ShowShare(int64_t share) {
  auto fraction = [](int64_t per_mille) {
    std::string decimals = std::to_string(1000 + per_mille % 1000).substr(1);
    return std::to_string(per_mille / 1000) + "." + decimals;
  };
  if (share == model::kUnlimited) return "inf";
  if (share >= ShareAccumulator::kZeroWeightBorrowing) {
    return "inf (weight 0, " + fraction(share - ShareAccumulator::kZeroWeightBorrowing) +
           " unweighted)";
  }
  return fraction(share);
}

}  // namespace taskgov::scheduler::decisions
