#pragma once

// The configuration's spelling of the policy's enumerations and amounts, for what config/ and
// its tools print (check-config, the CLI): the names the documents use ("LendAndBorrow",
// "LowerPriority", ...) and canonical amounts in Kubernetes units, "unlimited" for no limit.
// Pure functions; thread-safe.

#include <cstdint>
#include <string>
#include <string_view>

#include "config/spec.h"
#include "scheduler/model/policy.h"

namespace taskgov::config {

[[nodiscard]] std::string_view Name(scheduler::model::TaskPrioritization v);
[[nodiscard]] std::string_view Name(scheduler::model::IdleComputeAllocation v);
[[nodiscard]] std::string_view Name(scheduler::model::NoTeamAction v);
[[nodiscard]] std::string_view Name(scheduler::model::QueueingStrategy v);
[[nodiscard]] std::string_view Name(scheduler::model::WithinTeamPreemption v);
[[nodiscard]] std::string_view Name(scheduler::model::ReclaimPolicy v);
[[nodiscard]] std::string_view Name(SharingStrategy v);

// "unlimited" for scheduler::model::kUnlimited, else scheduler::model::FormatQuantity
// ("8", "1500m", "64Gi").
[[nodiscard]] std::string FormatAmount(std::string_view resource, int64_t amount);

}  // namespace taskgov::config
