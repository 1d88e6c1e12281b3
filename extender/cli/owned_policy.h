#pragma once

// The ConfigMap key the CLI owns, `taskgov-cli.yaml`: the allocations (`quota create|update|
// delete`) and cluster settings (`policy set`) made with the CLI, as native taskgov documents —
// one `kind: Team` document per team and, when any cluster setting was set, one
// `kind: TaskGovernancePolicy` document.
//
// Why one key of its own: every other key of the ConfigMap is someone's hand-written HyperPod,
// Kueue, Volcano or native document, and a YAML round trip would lose its comments, order and
// spelling. The CLI never rewrites those keys; it regenerates its own key whole from this model,
// and reads it back with config/'s native decoder (one parser per format). A header comment
// carries a digest of the body, so that removing the last document never leaves a strict prefix
// of the previous version (which the extender refuses as a truncated write).
//
// Value types; thread-safe (no shared state).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/spec.h"
#include "scheduler/common/result.h"

namespace taskgov::cli {

inline constexpr std::string_view kOwnedKey = "taskgov-cli.yaml";

// One HyperPod ComputeQuotaResourceConfig: an instance type and `count` or any of the others.
struct ComputeLine {
  std::string instance_type;
  std::optional<int64_t> count;
  std::optional<int64_t> accelerators;
  std::optional<std::string> vcpu;        // a plain decimal, as given: "96", "1.5"
  std::optional<std::string> memory_gib;  // a plain decimal number of GiB
  bool operator==(const ComputeLine&) const = default;
};

struct TeamQuota {
  std::string name;
  std::vector<std::string> namespaces;  // empty: the default hyperpod-ns-<name>
  std::string cohort;                   // the cohort HyperPod teams share
  std::vector<ComputeLine> compute;
  std::string strategy = "LendAndBorrow";            // Lend | DontLend | LendAndBorrow
  std::optional<int64_t> borrow_limit;               // percent; unset: HyperPod's default 50
  std::string preempt_team_tasks = "LowerPriority";  // LowerPriority | Never
  std::optional<int64_t> fair_share_weight;          // 0..100; unset: the native default 1
  bool operator==(const TeamQuota&) const = default;
};

struct PriorityClassWeight {
  std::string name;
  int64_t weight = 0;
  bool operator==(const PriorityClassWeight&) const = default;
};

struct ClusterSettings {
  std::optional<std::string> task_prioritization;  // TaskRanking | FirstComeFirstServe
  std::optional<std::string> idle_compute;         // FairShare | FirstComeFirstServe
  std::optional<std::vector<PriorityClassWeight>> priority_classes;
  // Kept as a taken-over policy had them (`policy take-over`); `policy set` does not change them.
  std::optional<int64_t> grace_period_seconds;     // preemption.gracePeriodSeconds
  std::optional<int64_t> minimum_runtime_seconds;  // preemption.minimumRuntimeSeconds
  std::optional<int64_t> gang_timeout_seconds;     // gangs.timeoutSeconds
  std::optional<std::string> pods_without_team;    // PassThrough | Refuse
  std::optional<std::string> default_cohort;
  [[nodiscard]] bool empty() const {
    return !task_prioritization && !idle_compute && !priority_classes && !grace_period_seconds &&
           !minimum_runtime_seconds && !gang_timeout_seconds && !pods_without_team &&
           !default_cohort;
  }
  bool operator==(const ClusterSettings&) const = default;
};

struct OwnedPolicy {
  std::vector<TeamQuota> teams;  // sorted by name when rendered
  ClusterSettings cluster;

  [[nodiscard]] TeamQuota* FindTeam(std::string_view name);
  [[nodiscard]] const TeamQuota* FindTeam(std::string_view name) const;
  [[nodiscard]] bool empty() const { return teams.empty() && cluster.empty(); }
};

// The key's text; "" for an empty policy (the key is then removed: an empty file is refused).
[[nodiscard]] std::string RenderOwned(const OwnedPolicy& policy);
// Reads the key back through config/'s decoder. An error names the key and what is wrong: a
// document the decoder refuses, or content the CLI does not write (hand edits belong in other
// keys).
[[nodiscard]] common::Result<OwnedPolicy> ParseOwned(std::string_view text);

// A decoded team as the CLI's key holds it; an error names what the CLI's key cannot hold
// (resource lines, absolute limits, flavors, partitions).
[[nodiscard]] common::Result<TeamQuota> TeamFromSpec(const config::TeamSpec& spec);
// The cluster settings the CLI's key holds, as the decoded keys set them.
[[nodiscard]] ClusterSettings ClusterFromSet(const config::ConfigSet& set);

// `value` / `scale` as an exact plain decimal ("1.5"); `scale` is a power of 2 or of 10.
[[nodiscard]] std::string FormatDecimal(int64_t value, int64_t scale);

}  // namespace taskgov::cli
