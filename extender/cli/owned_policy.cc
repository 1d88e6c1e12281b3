#include "extender/cli/owned_policy.h"

#include <algorithm>
#include <map>
#include <sstream>

#include "config/loader.h"
#include "config/names.h"

namespace taskgov::cli {

namespace {

// A YAML scalar: plain when it is made of name characters only, else double-quoted.
std::string Scalar(std::string_view s) {
  const bool plain = !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '.' || c == '_' || c == '/';
  });
  if (plain) return std::string(s);
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

std::string RenderComputeLine(const ComputeLine& line) {
  std::string out = "{instanceType: " + Scalar(line.instance_type);
  if (line.count) out += ", count: " + std::to_string(*line.count);
  if (line.accelerators) out += ", accelerators: " + std::to_string(*line.accelerators);
  if (line.vcpu) out += ", vCpu: " + *line.vcpu;
  if (line.memory_gib) out += ", memoryInGiB: " + *line.memory_gib;
  return out + "}";
}

void RenderTeam(const TeamQuota& t, std::ostream& out) {
  out << "apiVersion: taskgov.io/v1\nkind: Team\nname: " << Scalar(t.name) << "\n";
  if (!t.namespaces.empty()) {
    out << "namespaces: [";
    for (size_t i = 0; i < t.namespaces.size(); ++i) {
      out << (i ? ", " : "") << Scalar(t.namespaces[i]);
    }
    out << "]\n";
  }
  out << "cohort: " << Scalar(t.cohort) << "\n";
  if (t.fair_share_weight) out << "fairShareWeight: " << *t.fair_share_weight << "\n";
  out << "preemptTeamTasks: " << Scalar(t.preempt_team_tasks) << "\n";
  out << "sharing:\n  strategy: " << Scalar(t.strategy) << "\n";
  if (t.borrow_limit) out << "  borrowLimit: " << *t.borrow_limit << "\n";
  out << "compute:\n";
  for (const ComputeLine& line : t.compute) out << "  - " << RenderComputeLine(line) << "\n";
}

void RenderCluster(const ClusterSettings& c, std::ostream& out) {
  out << "apiVersion: taskgov.io/v1\nkind: TaskGovernancePolicy\n";
  if (c.task_prioritization)
    out << "taskPrioritization: " << Scalar(*c.task_prioritization) << "\n";
  if (c.idle_compute) out << "idleComputeAllocation: " << Scalar(*c.idle_compute) << "\n";
  if (c.priority_classes) {
    out << "priorityClasses:" << (c.priority_classes->empty() ? " []" : "") << "\n";
    for (const PriorityClassWeight& p : *c.priority_classes) {
      out << "  - {name: " << Scalar(p.name) << ", weight: " << p.weight << "}\n";
    }
  }
  if (c.grace_period_seconds || c.minimum_runtime_seconds) {
    out << "preemption:\n";
    if (c.grace_period_seconds) out << "  gracePeriodSeconds: " << *c.grace_period_seconds << "\n";
    if (c.minimum_runtime_seconds) {
      out << "  minimumRuntimeSeconds: " << *c.minimum_runtime_seconds << "\n";
    }
  }
  if (c.gang_timeout_seconds) out << "gangs: {timeoutSeconds: " << *c.gang_timeout_seconds << "}\n";
  if (c.pods_without_team) out << "podsWithoutTeam: " << Scalar(*c.pods_without_team) << "\n";
  if (c.default_cohort) out << "defaultCohort: " << Scalar(*c.default_cohort) << "\n";
}

common::Result<ComputeLine> LineFromSpec(const config::ComputeSpec& spec) {
  if (spec.flavor != spec.instance_type || spec.amounts.partition_type) {
    return common::Error{spec.origin.path +
                         ": flavors and accelerator partitions are not written by the CLI"};
  }
  ComputeLine line;
  line.instance_type = spec.instance_type;
  line.count = spec.amounts.count;
  line.accelerators = spec.amounts.accelerators;
  if (spec.amounts.vcpu_millis) line.vcpu = FormatDecimal(*spec.amounts.vcpu_millis, 1000);
  if (spec.amounts.memory_bytes) {
    line.memory_gib = FormatDecimal(*spec.amounts.memory_bytes, int64_t{1} << 30);
  }
  return line;
}

}  // namespace

common::Result<TeamQuota> TeamFromSpec(const config::TeamSpec& spec) {
  if (!spec.lines.empty() || !spec.absolute_borrow_limits.empty() || !spec.lending_limits.empty()) {
    return common::Error{"team " + spec.name +
                         ": resources, absoluteBorrowLimits and lendingLimits are not written by "
                         "the CLI"};
  }
  TeamQuota team;
  team.name = spec.name;
  if (spec.namespaces) team.namespaces = *spec.namespaces;
  team.cohort = spec.cohort.value_or("");
  team.strategy =
      std::string(config::Name(spec.strategy.value_or(config::SharingStrategy::kLendAndBorrow)));
  team.borrow_limit = spec.borrow_limit_percent;
  team.preempt_team_tasks = std::string(config::Name(spec.within_team));
  if (spec.fair_share_weight_given) {
    team.fair_share_weight = static_cast<int64_t>(spec.fair_share_weight);
  }
  for (const config::ComputeSpec& c : spec.compute) {
    common::Result<ComputeLine> line = LineFromSpec(c);
    if (!line.ok()) return line.error();
    team.compute.push_back(std::move(*line));
  }
  return team;
}

ClusterSettings ClusterFromSet(const config::ConfigSet& set) {
  ClusterSettings c;
  if (set.task_prioritization.value) {
    c.task_prioritization = std::string(config::Name(*set.task_prioritization.value));
  }
  if (set.idle_compute.value) c.idle_compute = std::string(config::Name(*set.idle_compute.value));
  c.grace_period_seconds = set.grace_period_seconds.value;
  c.minimum_runtime_seconds = set.minimum_runtime_seconds.value;
  c.gang_timeout_seconds = set.gang_timeout_seconds.value;
  if (set.no_team.value) c.pods_without_team = std::string(config::Name(*set.no_team.value));
  c.default_cohort = set.default_cohort.value;
  if (!set.policy_documents.empty() && !set.priority_classes.empty()) {
    c.priority_classes.emplace();
    for (const config::PriorityClassSpec& p : set.priority_classes) {
      c.priority_classes->push_back({p.priority_class.name, p.priority_class.value});
    }
  }
  return c;
}

TeamQuota* OwnedPolicy::FindTeam(std::string_view name) {
  for (TeamQuota& t : teams) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

const TeamQuota* OwnedPolicy::FindTeam(std::string_view name) const {
  return const_cast<OwnedPolicy*>(this)->FindTeam(name);
}

std::string FormatDecimal(int64_t value, int64_t scale) {
  std::string out = std::to_string(value / scale);
  int64_t rest = value % scale;
  if (rest == 0) return out;
  out += '.';
  for (int digits = 0; rest != 0 && digits < 30; ++digits) {
    // rest < scale ≤ 2^62, so rest × 10 stays below 2^63 only for scale < 2^59: true for the
    // scales used here (1000 and 2^30).
    rest *= 10;
    out += static_cast<char>('0' + rest / scale);
    rest %= scale;
  }
  return out;
}

std::string RenderOwned(const OwnedPolicy& policy) {
  if (policy.empty()) return "";
  std::vector<TeamQuota> teams = policy.teams;
  std::sort(teams.begin(), teams.end(),
            [](const TeamQuota& a, const TeamQuota& b) { return a.name < b.name; });
  std::ostringstream body;
  bool first = true;
  auto separate = [&] {
    if (!first) body << "---\n";
    first = false;
  };
  if (!policy.cluster.empty()) {
    separate();
    RenderCluster(policy.cluster, body);
  }
  for (const TeamQuota& t : teams) {
    separate();
    RenderTeam(t, body);
  }
  const std::string text = body.str();
  return "# Written by the taskgov CLI (taskgov quota, taskgov policy): every change the CLI "
         "makes\n"
         "# rewrites this key. Keep hand-written documents under other keys of the ConfigMap.\n"
         "# digest: " +
         config::ContentHash({config::SourceFile{std::string(kOwnedKey), text}}) + "\n" + text;
}

common::Result<OwnedPolicy> ParseOwned(std::string_view text) {
  OwnedPolicy policy;
  if (text.empty()) return policy;
  config::Diagnostics diagnostics;
  std::map<std::string, int> counts;
  config::ConfigSet set = config::DecodeSources(
      {config::SourceFile{std::string(kOwnedKey), std::string(text)}}, &diagnostics, &counts);
  for (const config::Diagnostic& d : diagnostics.items()) {
    if (d.severity == config::Severity::kError) {
      return common::Error{d.ToString(counts[d.file])};
    }
  }
  for (const config::TeamSpec& spec : set.teams) {
    common::Result<TeamQuota> team = TeamFromSpec(spec);
    if (!team.ok()) return team.error().Wrap(std::string(kOwnedKey));
    policy.teams.push_back(std::move(*team));
  }
  policy.cluster = ClusterFromSet(set);
  return policy;
}

}  // namespace taskgov::cli
