#pragma once

// CohortUsage: what each team cell of the ledger uses, borrows and lends within its cohort's pool
// for (flavor, resource) — the rule behind taskgov_quota_usage, _borrowed and _lent, held once
// here and read by metrics at scrape time.
//
// Borrowed. A cell's borrowed amount is max(0, U − N): its usage above its nominal quota.
//
// Lent. Within a cohort tree's pools for (flavor, resource) — a flat cohort's pool, or every pool
// under one root cohort (hierarchical cohorts lend across the tree) — what the borrowers use is
// lent by the teams whose lendable quota is idle. For team t with nominal N, lendable part L' =
// min(L, N) and guaranteed part G = N − L', its idle lendable quota is I_t = max(0, N − max(G,
// min(U, N))) (the part of L' it does not use itself); the pool's borrowed total is B = Σ_s max(0,
// U_s − N_s) over the pool's cells. Then
//   lent_t = min(I_t, B × I_t / Σ_s I_s)   (0 when Σ I = 0)
// so the idle lenders carry the borrowing in proportion to what each leaves idle, and within a
// pool Σ lent = Σ borrowed whenever the ledger's pool constraint holds (it guarantees B ≤ Σ I).
// The quota the tree's cohorts hold themselves (Kueue Cohort resourceGroups) is idle lendable
// quota of no team: it counts in Σ I, so the teams' lent shares leave out the part it carries,
// and Σ lent ≤ Σ borrowed. In a tree, the shares spread the borrowing over every idle lender of
// the tree, also over quota a cohort's lending limit keeps within its own branch.
// A team without a cohort has a pool of its own: it neither lends nor is lent to.
//
// Teams. A cell's cohort is its team's in the policy; a team the policy no longer has keeps the
// cohort `former_cohort(team)` returns ("" for none), since its usage still occupies its old
// pool. Cells the policy does not name and whose usage has drained (a removed team, flavor or
// resource) are left out.
//
// Pure value code: no I/O, no locks, no shared state (thread-compatible).

#include <cstdint>
#include <functional>
#include <string_view>
#include <vector>

#include "scheduler/ledger/ledger.h"
#include "scheduler/model/policy.h"

namespace taskgov::scheduler::ledger {

struct CohortCellUsage {
  CellKey key;
  CellView view;         // the ledger's limits and usage of the cell
  int64_t borrowed = 0;  // max(0, usage − nominal)
  double lent = 0;       // in the resource's canonical unit; a share, so fractional
};

// The cohort of a team the policy no longer has ("" for none).
using FormerCohort = std::function<std::string_view(std::string_view team)>;

// One entry per cell of `cells` that the policy names or that has usage, in `cells` order.
// `former_cohort` may be empty (every removed team then has no cohort).
[[nodiscard]] std::vector<CohortCellUsage> ComputeCohortUsage(
    const std::vector<Ledger::CellUsage>& cells, const model::Policy& policy,
    const FormerCohort& former_cohort);

}  // namespace taskgov::scheduler::ledger
