#pragma once

// HyperPod IdleResourceSharing as policy arithmetic (Policy::idle_resource_sharing): the
// capacity of the cluster that no quota covers, and the effective policy in which the sharing
// cohort holds it as quota of its own — so that the ledger's pools (Σ L plus the quota the cohort
// holds itself, ledger.h) grow by it and the cohort's teams may borrow it within their own
// borrowing limits. A team that may not borrow (DontLend, Lend: B = 0) still may not; what a
// team lends is unchanged.
//
// Pure value code: no state, no locks. state/idle_sharing.h feeds it the nodes and applies the
// result.

#include <functional>
#include <map>
#include <string>

#include "scheduler/model/policy.h"
#include "scheduler/model/resources.h"

namespace taskgov::scheduler::model {

// Per flavor (a Flavor::name or an instance type), a sum of node allocatable.
using FlavorCapacity = std::map<std::string, ResourceList, std::less<>>;

// Per (flavor, resource) a team of the sharing cohort's tree governs (it has a pool there,
// CohortPools): max(0, capacity − Σ every team's nominal − Σ every cohort's own nominal), whatever
// cohort the teams are in (their quota is allocated either way). Only positive amounts; empty when
// sharing is off or has no cohort. `capacity`: the schedulable nodes' allocatable per flavor.
[[nodiscard]] FlavorCapacity UnallocatedCapacity(const Policy& configured,
                                                 const FlavorCapacity& capacity);

// `configured` with `unallocated` (UnallocatedCapacity's result) added to the sharing cohort's
// own nominal quota and recorded in idle_resource_sharing.unallocated, finalized; `configured`
// itself when `unallocated` is empty. `configured` must be finalized and must not carry
// unallocated capacity already.
[[nodiscard]] PolicyPtr WithUnallocatedCapacity(const PolicyPtr& configured,
                                                const FlavorCapacity& unallocated);

}  // namespace taskgov::scheduler::model
