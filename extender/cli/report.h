#pragma once

// Reports for `quota list|describe` and `policy show`: what the server will enforce (the policy
// config/'s loader resolves from the ConfigMap's keys) and, for every value, where it came from —
// the key and document that set it, or the rule that derived it: the HyperPod ratio defaults of
// DESIGN §3.4 (count × per-instance amounts, vCPU and memory × accelerators / per-instance
// accelerators, ...), the sharing strategy's limits (LendAndBorrow: ⌊nominal × BorrowLimit%⌋), the
// zero lines resolution adds for resources other teams govern, and the dialects' defaults.
//
// Pure functions of (decoded ConfigSet, resolved Policy); thread-safe.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "config/names.h"
#include "config/spec.h"
#include "scheduler/model/policy.h"

namespace taskgov::cli {

// A value and where it came from.
struct Sourced {
  std::string value;
  std::string source;
};

struct QuotaRow {
  std::string flavor;
  std::string resource;
  int64_t nominal = 0;
  int64_t borrowing_limit = 0;  // scheduler::model::kUnlimited for none
  int64_t lending_limit = 0;
  std::string nominal_source;
  std::string borrowing_source;
  std::string lending_source;
};

struct TeamReport {
  std::string name;
  std::string defined_in;  // the ConfigMap key
  std::string dialect;     // "taskgov", "HyperPod", "Kueue", "Volcano"
  bool managed = false;    // defined in the CLI's key
  Sourced namespaces;      // comma-separated
  Sourced cohort;
  Sourced strategy;
  Sourced borrow_limit;  // "50%"; "-" for dialects without one
  Sourced preempt_team_tasks;
  Sourced fair_share_weight;
  std::vector<std::string> compute;  // the compute lines as written: "ml.p5.48xlarge: count 2"
  std::vector<QuotaRow> quota;
};

struct PriorityClassRow {
  std::string name;
  int32_t weight = 0;
  std::string source;
};

struct PolicyReport {
  Sourced task_prioritization;
  Sourced idle_compute;
  std::vector<PriorityClassRow> priority_classes;
};

// The team's document in force (the last usable one of that name); nullptr when none.
[[nodiscard]] const config::TeamSpec* FindTeamSpec(const config::ConfigSet& set,
                                                   std::string_view name);

// One report per team of `policy`, in the policy's order.
[[nodiscard]] std::vector<TeamReport> BuildTeamReports(const config::ConfigSet& set,
                                                       const scheduler::model::Policy& policy);
[[nodiscard]] PolicyReport BuildPolicyReport(const config::ConfigSet& set,
                                             const scheduler::model::Policy& policy);

using config::FormatAmount;  // the amounts reports print: "unlimited", "8", "64Gi"

}  // namespace taskgov::cli
