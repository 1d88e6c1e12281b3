#pragma once

// Resolve: ConfigSet → scheduler::model::Policy, with every quota line explicit
// (DESIGN §3.3, §3.4).
//
//   * Compute lines become per-resource nominal quota through the catalogue's ratio rules
//     (built-in catalogue plus the configuration's instanceTypes overrides).
//   * Explicit lines override what compute lines derived, field by field.
//   * Limits, for a team in a cohort: an explicit limit wins; else HyperPod/native absolute
//     borrow limits; else the sharing strategy — DontLend ⇒ lending 0 and borrowing 0, Lend ⇒
//     borrowing 0, LendAndBorrow ⇒ borrowing ⌊nominal × BorrowLimit% / 100⌋ per resource (50% by
//     default); Kueue and Volcano lines without a limit are unlimited. A team with no cohort lends
//     and borrows nothing (0 / 0), and any explicit limit on it is an error.
//   * A resource that some team governs on a flavor but another team using that flavor does not
//     mention gets an explicit line on the latter: nominal 0, lending 0, and a borrowing limit of
//     0 — what Kueue does with a resource a ClusterQueue does not cover, and what HyperPod's
//     BorrowLimit% of a zero quota gives — except for Volcano queues, where a resource without
//     capability is unlimited.
//   * Dialect defaults: native and HyperPod teams own namespace hyperpod-ns-<team>, are known to
//     Kueue as ClusterQueue hyperpod-ns-<team>-clusterqueue with LocalQueue
//     hyperpod-ns-<team>-localqueue; every HyperPod team joins the cohort `hyperpodCohort`
//     ("hyperpod"). Kueue teams own the namespaces whose LocalQueues all point to them. Volcano
//     teams own no namespace (pods name their queue).
//
// Cross-document errors (duplicate teams, flavors, priority classes or LocalQueues, a namespace
// claimed by two teams, cohort cycles, limits on a team without a cohort, instance types that
// cannot be converted) are reported against the document that caused them.
//
// Pure function; thread-safe.

#include <cstddef>
#include <memory>

#include "config/diagnostics.h"
#include "config/spec.h"
#include "scheduler/model/policy.h"

namespace taskgov::config {

// Builds and finalizes the policy. The result is complete even when errors were reported (the
// erroneous parts left out), so that check-config can show what would load; callers must not
// publish it when `diagnostics` has errors.
[[nodiscard]] std::shared_ptr<scheduler::model::Policy> Resolve(ConfigSet set,
                                                                Diagnostics* diagnostics);

// The built-in catalogue with a configuration's `instanceTypes` overrides applied, as Resolve
// uses it; problems with the overrides go to `diagnostics` (nullptr: dropped).
[[nodiscard]] Catalogue BuildCatalogue(const std::vector<InstanceTypeOverride>& overrides,
                                       Diagnostics* diagnostics);

// Defaults shared with the documentation and tests.
inline constexpr std::string_view kDefaultHyperPodCohort = "hyperpod";
inline constexpr std::string_view kDefaultVolcanoFlavor = "default";
inline constexpr int64_t kDefaultBorrowLimitPercent = 50;
// The deepest cohort tree a policy may have: the ledger checks a reservation at every level up
// to the root (a recursion per level), so a deeper one is refused.
inline constexpr size_t kMaxCohortDepth = 10'000;
[[nodiscard]] std::string DefaultNamespace(std::string_view team);     // hyperpod-ns-<team>
[[nodiscard]] std::string DefaultClusterQueue(std::string_view team);  // ...-clusterqueue

}  // namespace taskgov::config
