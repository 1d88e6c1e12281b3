#include "extender/cli/quota_flags.h"

#include <algorithm>

#include "scheduler/common/k8s_names.h"
#include "scheduler/model/quantity.h"

namespace taskgov::cli {

namespace {

constexpr int64_t kMaxCount = 10000000;  // config/'s limit on Count and Accelerators

std::optional<int64_t> WholeNumber(std::string_view text, int64_t max) {
  if (text.empty() || text.size() > 12) return std::nullopt;
  if (!std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return std::nullopt;
  }
  const int64_t n = std::stoll(std::string(text));
  if (n > max) return std::nullopt;
  return n;
}

bool PlainDecimal(std::string_view text) {
  const size_t dot = text.find('.');
  auto digits = [](std::string_view s) {
    return !s.empty() &&
           std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
  };
  if (dot == std::string_view::npos) return digits(text);
  return digits(text.substr(0, dot)) && digits(text.substr(dot + 1));
}

std::optional<std::string> OneOf(std::string_view flag, std::string_view value,
                                 const std::vector<std::string_view>& accepted) {
  if (std::find(accepted.begin(), accepted.end(), value) != accepted.end()) return std::nullopt;
  std::string list;
  for (size_t i = 0; i < accepted.size(); ++i) {
    list += (i == 0 ? "" : i + 1 == accepted.size() ? " or " : ", ") + std::string(accepted[i]);
  }
  return "invalid --" + std::string(flag) + " " + Quoted(value) + ": use " + list;
}

// Builds the compute lines from the flags in command-line order.
class LineGrouper {
 public:
  std::optional<std::string> Take(const FlagValue& f) {
    if (f.name == "instance-type") return Start(f.value);
    if (lines_.empty()) {
      return "--" + f.name + " " + f.value +
             " comes before any --instance-type: each --instance-type starts a compute line, "
             "and the --count, --accelerators, --vcpu and --memory after it belong to it";
    }
    ComputeLine& line = lines_.back();
    const std::string where = " for --instance-type " + line.instance_type;
    if (f.name == "count" || f.name == "accelerators") {
      std::optional<int64_t>& field = f.name == "count" ? line.count : line.accelerators;
      if (field) return "--" + f.name + " is given twice" + where;
      field = WholeNumber(f.value, kMaxCount);
      if (!field) {
        return "invalid --" + f.name + " " + Quoted(f.value) + where +
               ": use a whole number from 0 to 10000000";
      }
      return std::nullopt;
    }
    const bool cpu = f.name == "vcpu";
    std::optional<std::string>& field = cpu ? line.vcpu : line.memory_gib;
    if (field) return "--" + f.name + " is given twice" + where;
    if (!cpu) {
      const std::optional<int64_t> bytes = MemoryFlagBytes(f.value);
      if (!bytes) return "invalid --memory " + Quoted(f.value) + where + ": " + kMemoryFlagHelp;
      field = FormatDecimal(*bytes, int64_t{1} << 30);  // in GiB, exactly
      return std::nullopt;
    }
    const common::Result<int64_t> parsed =
        scheduler::model::ParseQuantity(f.value, scheduler::model::QuantityUnit::kMillis);
    if (!PlainDecimal(f.value) || !parsed.ok()) {
      return "invalid --" + f.name + " " + Quoted(f.value) + where +
             ": use a number of vCPUs such as 96 or 1.5";
    }
    field = f.value;
    return std::nullopt;
  }

  // Checks every line; the lines when all are complete.
  common::Result<std::vector<ComputeLine>> Finish() const {
    for (const ComputeLine& line : lines_) {
      const bool others = line.accelerators || line.vcpu || line.memory_gib;
      if (line.count && others) {
        return common::Error{"--count and --" +
                             std::string(line.accelerators ? "accelerators"
                                         : line.vcpu       ? "vcpu"
                                                           : "memory") +
                             " exclude each other for --instance-type " + line.instance_type +
                             ": give a count of whole instances, or any of --accelerators, "
                             "--vcpu and --memory"};
      }
      if (!line.count && !others) {
        return common::Error{"--instance-type " + line.instance_type +
                             " has no amount: follow it with --count, or any of --accelerators, "
                             "--vcpu and --memory"};
      }
    }
    return lines_;
  }

 private:
  std::optional<std::string> Start(const std::string& type) {
    if (type.empty()) return std::string("--instance-type must not be empty");
    for (const ComputeLine& l : lines_) {
      if (l.instance_type == type) {
        return "--instance-type " + type +
               " is given twice: give each instance type once, followed by its amounts";
      }
    }
    lines_.push_back(ComputeLine{type, {}, {}, {}, {}});
    return std::nullopt;
  }

  std::vector<ComputeLine> lines_;
};

bool IsComputeFlag(std::string_view name) {
  return name == "instance-type" || name == "count" || name == "accelerators" || name == "vcpu" ||
         name == "memory";
}

std::optional<std::string> TeamFlags(const ParsedArgs& args, QuotaChange* change) {
  if (auto s = args.Get("strategy")) {
    if (auto e = OneOf("strategy", *s, {"Lend", "DontLend", "LendAndBorrow"})) return e;
    change->strategy = *s;
  }
  if (auto b = args.Get("borrow-limit")) {
    std::string_view text = *b;
    if (text.ends_with('%')) text.remove_suffix(1);
    change->borrow_limit = WholeNumber(text, 10000);
    if (!change->borrow_limit) {
      return "invalid --borrow-limit " + Quoted(*b) +
             ": use a whole percentage of the nominal quota from 0 to 10000, such as 50";
    }
    if (change->strategy && *change->strategy != "LendAndBorrow") {
      return "--borrow-limit applies only to --strategy LendAndBorrow (got --strategy " +
             *change->strategy + ", which borrows nothing)";
    }
  }
  if (auto p = args.Get("preempt-team-tasks")) {
    if (auto e = OneOf("preempt-team-tasks", *p, {"LowerPriority", "Never"})) return e;
    change->preempt_team_tasks = *p;
  }
  if (auto w = args.Get("fair-share-weight")) {
    change->fair_share_weight = WholeNumber(*w, 100);
    if (!change->fair_share_weight) {
      return "invalid --fair-share-weight " + Quoted(*w) + ": use a whole number from 0 to 100";
    }
  }
  for (const std::string& ns : args.All("namespace")) {
    if (auto e = CheckDnsLabel("namespace", ns)) return e;
    if (std::find(change->namespaces.begin(), change->namespaces.end(), ns) !=
        change->namespaces.end()) {
      return "namespace " + Quoted(ns) + " is given twice";
    }
    change->namespaces.push_back(ns);
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> CheckDnsLabel(std::string_view what, std::string_view name) {
  if (common::IsDnsLabel(name)) return std::nullopt;
  return "invalid " + std::string(what) + " " + Quoted(name) +
         ": use a DNS-1123 label (lowercase letters, digits and '-', starting and ending with a "
         "letter or digit, at most 63 characters)";
}

std::vector<FlagSpec> QuotaFlags() {
  return {
      ValueFlag("instance-type", "TYPE",
                "starts a compute line for this instance type (ml.p5.48xlarge)")
          .Repeatable(),
      ValueFlag("count", "N", "whole instances of the line's instance type").Repeatable(),
      ValueFlag("accelerators", "N", "accelerators (GPUs, Neuron devices) of the line")
          .Repeatable(),
      ValueFlag("vcpu", "N", "vCPUs of the line (96, 1.5)").Repeatable(),
      ValueFlag("memory", "GIB", "memory of the line in GiB (512, 0.5) or a quantity (512Gi)")
          .Repeatable(),
      ValueFlag("strategy", "S", "Lend, DontLend or LendAndBorrow (default LendAndBorrow)")
          .Values({"Lend", "DontLend", "LendAndBorrow"}),
      ValueFlag("borrow-limit", "PCT",
                "LendAndBorrow: how far above its quota the team may borrow, in % of it (default "
                "50)"),
      ValueFlag("preempt-team-tasks", "P",
                "LowerPriority (default) or Never: may a task preempt its team's lower-priority "
                "tasks")
          .Values({"LowerPriority", "Never"}),
      ValueFlag("fair-share-weight", "W",
                "0..100: the team's weight for idle compute (default 1; 0: always last)"),
  };
}

common::Result<QuotaChange> ParseQuotaChange(const ParsedArgs& args) {
  QuotaChange change;
  LineGrouper grouper;
  for (const FlagValue& f : args.flags) {
    if (!IsComputeFlag(f.name)) continue;
    if (auto problem = grouper.Take(f)) return common::Error{*problem};
  }
  common::Result<std::vector<ComputeLine>> lines = grouper.Finish();
  if (!lines.ok()) return lines.error();
  change.compute = std::move(*lines);
  if (auto problem = TeamFlags(args, &change)) return common::Error{*problem};
  return change;
}

common::Status ApplyQuotaChange(const QuotaChange& change, TeamQuota* team) {
  TeamQuota result = *team;
  if (!change.compute.empty()) result.compute = change.compute;
  if (change.strategy) {
    result.strategy = *change.strategy;
    if (result.strategy != "LendAndBorrow") result.borrow_limit.reset();
  }
  if (change.borrow_limit) result.borrow_limit = change.borrow_limit;
  if (result.borrow_limit && result.strategy != "LendAndBorrow") {
    return common::Error{"--borrow-limit applies only to the strategy LendAndBorrow, and quota/" +
                         team->name + " has the strategy " + result.strategy +
                         " (which borrows nothing): add --strategy LendAndBorrow"};
  }
  if (change.preempt_team_tasks) result.preempt_team_tasks = *change.preempt_team_tasks;
  if (change.fair_share_weight) result.fair_share_weight = change.fair_share_weight;
  if (!change.namespaces.empty()) result.namespaces = change.namespaces;
  *team = std::move(result);
  return common::Status::Ok();
}

std::optional<int64_t> MemoryFlagBytes(std::string_view text) {
  const std::string quantity = PlainDecimal(text) ? std::string(text) + "Gi" : std::string(text);
  common::Result<int64_t> bytes = scheduler::model::ParseResourceQuantity("memory", quantity);
  if (text.empty() || !bytes.ok() || *bytes <= 0) return std::nullopt;
  return *bytes;
}

}  // namespace taskgov::cli
