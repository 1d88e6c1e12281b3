#pragma once

// The flags of `quota create|update` in HyperPod's vocabulary, and how repeated flags group into
// compute lines (ComputeQuotaResources):
//
//   every --instance-type TYPE starts a compute line; the --count, --accelerators, --vcpu and
//   --memory that follow it (up to the next --instance-type) belong to that line. A line has
//   --count (whole instances) or any of --accelerators, --vcpu, --memory (GiB); what it does not
//   give follows the instance's proportions (DESIGN §3.4). Each instance type appears once, each
//   amount at most once per line; an amount before any --instance-type is a usage error.
//
//   taskgov quota create ml-a --instance-type ml.p5.48xlarge --count 2
//       --instance-type ml.g5.12xlarge --accelerators 4   (two lines)
//
// The other flags apply to the team: --strategy, --borrow-limit PCT, --preempt-team-tasks,
// --fair-share-weight and -n/--namespace (repeatable). Every problem is a usage error whose
// message names the flag, the value and what is accepted. Pure functions; thread-safe.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "extender/cli/args.h"
#include "extender/cli/owned_policy.h"
#include "scheduler/common/result.h"

namespace taskgov::cli {

struct QuotaChange {
  std::vector<ComputeLine> compute;  // empty: none given
  std::optional<std::string> strategy;
  std::optional<int64_t> borrow_limit;
  std::optional<std::string> preempt_team_tasks;
  std::optional<int64_t> fair_share_weight;
  std::vector<std::string> namespaces;

  [[nodiscard]] bool empty() const {
    return compute.empty() && !strategy && !borrow_limit && !preempt_team_tasks &&
           !fair_share_weight && namespaces.empty();
  }
};

[[nodiscard]] std::vector<FlagSpec> QuotaFlags();

// The change the flags of `args` ask for; an error is a usage error's message.
[[nodiscard]] common::Result<QuotaChange> ParseQuotaChange(const ParsedArgs& args);

// Applies `change` to `team`: compute lines given replace the team's lines as a whole (as
// HyperPod's UpdateComputeQuota replaces ComputeQuotaResources); a strategy other than
// LendAndBorrow drops a borrow limit the change does not give. An error (and `team` unchanged)
// when the result would have a borrow limit with a strategy that borrows nothing.
[[nodiscard]] common::Status ApplyQuotaChange(const QuotaChange& change, TeamQuota* team);

// A usage error when `name` is not a DNS-1123 label, naming `what` ("team name", "namespace").
[[nodiscard]] std::optional<std::string> CheckDnsLabel(std::string_view what,
                                                       std::string_view name);

// A --memory value as every command takes it: GiB as HyperPod gives it ("512", "0.5") or a
// Kubernetes quantity ("512Mi", "1.5Gi"); its bytes, or nullopt when it is neither or not above 0.
[[nodiscard]] std::optional<int64_t> MemoryFlagBytes(std::string_view text);
inline constexpr char kMemoryFlagHelp[] =
    "use GiB (such as 512 or 0.5) or a quantity such as 512Mi";

}  // namespace taskgov::cli
