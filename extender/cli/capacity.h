#pragma once

// CapacityWarnings: what an admin should hear after a quota change, from the policy that change
// leaves and the cluster's nodes (issue 38): an instance type whose teams' nominal quotas add up
// to more of a resource than its nodes have (borrowing and reclaim still work within what there
// is, but a team may wait for quota it is promised), and an instance type nothing knows — not in
// the catalogue, no node of the cluster, no Kueue ResourceFlavor (a typo, most likely).
// Warnings, not errors: quota for capacity that is not there yet is allowed (DESIGN §3.2).
// Pure; thread-safe.

#include <string>
#include <vector>

#include "config/catalogue.h"
#include "scheduler/model/objects.h"
#include "scheduler/model/policy.h"

namespace taskgov::cli {

// For the instance types `flavors` (the ones a command named), in that order.
[[nodiscard]] std::vector<std::string> CapacityWarnings(
    const scheduler::model::Policy& policy, const std::vector<scheduler::model::Node>& nodes,
    const std::vector<std::string>& flavors, const config::Catalogue& catalogue);

}  // namespace taskgov::cli
