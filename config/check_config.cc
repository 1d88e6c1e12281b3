#include "config/check_config.h"

#include <algorithm>
#include <map>
#include <sstream>
#include <tuple>
#include <vector>

#include "config/names.h"
#include "scheduler/model/quantity.h"

namespace taskgov::config {

namespace {

std::string Plural(size_t n, std::string_view word) {
  return std::to_string(n) + " " + std::string(word) + (n == 1 ? "" : "s");
}

std::string Weight(double w) {
  std::ostringstream s;
  s << w;
  return s.str();
}

// A left-aligned text table.
void PrintTable(const std::vector<std::vector<std::string>>& rows, std::ostream& out) {
  std::vector<size_t> width;
  for (const auto& row : rows) {
    if (width.size() < row.size()) width.resize(row.size(), 0);
    for (size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  }
  for (const auto& row : rows) {
    std::string line = "  ";
    for (size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size()) line += std::string(width[i] - row[i].size() + 2, ' ');
    }
    out << line << "\n";
  }
}

std::string Join(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& s : items) out += (out.empty() ? "" : ",") + s;
  return out.empty() ? "-" : out;
}

// PrintTable under a header row, or "(none)" when there is no other row.
void PrintTableOrNone(const std::vector<std::vector<std::string>>& rows, std::ostream& out) {
  if (rows.size() == 1) {
    out << "  (none)\n";
  } else {
    PrintTable(rows, out);
  }
}

// Per file, in load order (diagnostics with no file first, as <directory>): "ok", or the counts
// and every diagnostic.
void PrintDiagnostics(const LoadResult& result, std::ostream& out) {
  std::vector<std::string> files = result.files;
  const bool has_global = std::any_of(result.diagnostics.begin(), result.diagnostics.end(),
                                      [](const Diagnostic& d) { return d.file.empty(); });
  if (has_global) files.insert(files.begin(), "");
  for (const std::string& file : files) {
    size_t errors = 0;
    size_t warnings = 0;
    for (const Diagnostic& d : result.diagnostics) {
      if (d.file != file) continue;
      (d.severity == Severity::kError ? errors : warnings)++;
    }
    out << (file.empty() ? std::string("<directory>") : file) << ": ";
    if (errors == 0 && warnings == 0) {
      out << "ok\n";
      continue;
    }
    std::string summary;
    if (errors) summary = Plural(errors, "error");
    if (warnings) summary += (summary.empty() ? "" : ", ") + Plural(warnings, "warning");
    out << summary << "\n";
    for (const Diagnostic& d : result.diagnostics) {
      if (d.file != file) continue;
      out << "  " << (d.severity == Severity::kError ? "error: " : "warning: ") << result.Format(d)
          << "\n";
    }
  }
}

// The cluster-wide settings, priority classes and flavors.
void PrintClusterPolicy(const scheduler::model::Policy& p, bool loaded, std::ostream& out) {
  out << "\ncluster policy";
  if (!loaded) out << " (not loaded: the configuration has errors)";
  out << "\n";
  out << "  task prioritization: " << Name(p.task_prioritization) << "\n";
  out << "  idle compute allocation: " << Name(p.idle_compute) << "\n";
  const scheduler::model::IdleResourceSharing& idle = p.idle_resource_sharing;
  out << "  idle resource sharing: "
      << (!idle.enabled ? std::string("Disabled")
          : idle.cohort.empty()
              ? std::string("Enabled, but no cohort to lend in")
              : "Enabled: capacity no quota covers is lent within cohort " + idle.cohort)
      << "\n";
  out << "  pods without a team: " << Name(p.no_team) << "\n";
  auto rule = [](const std::string& label) { return label.empty() ? "off" : label; };
  out << "  team resolution: pod label " << rule(p.team_resolution.pod_label)
      << ", namespace label " << rule(p.team_resolution.namespace_label) << "\n";
  out << "  preemption: grace period " << p.preemption.grace_period_seconds << "s, minimum runtime "
      << p.preemption.minimum_runtime_seconds << "s\n";
  out << "  gangs: quota held " << p.gang_timeout_seconds << "s for members not yet admitted\n";
  if (p.starvation_bound_seconds > 0) {
    out << "  starvation bound: capacity kept for a workload waiting over "
        << p.starvation_bound_seconds << "s\n";
  } else {
    out << "  starvation bound: off\n";
  }
  out << "  instance-type label: " << p.instance_type_label << "\n";
  std::string classes;
  for (const scheduler::model::PriorityClass& pc : p.priority_classes) {
    classes += (classes.empty() ? "" : ", ") + pc.name + "=" + std::to_string(pc.value);
  }
  out << "  priority classes: " << (classes.empty() ? "none" : classes) << "\n";
  for (const scheduler::model::Flavor& f : p.flavors) {
    std::string labels;
    for (const auto& [k, v] : f.node_labels) labels += (labels.empty() ? "" : ",") + k + "=" + v;
    out << "  flavor " << f.name << ": "
        << (f.matches_all_nodes && f.node_labels.empty() ? std::string("every node") : labels)
        << "\n";
  }
}

// One row per team: cohort, weight, namespaces, ClusterQueue, preemption, queueing, state.
void PrintTeams(const scheduler::model::Policy& p, std::ostream& out) {
  out << "\nteams\n";
  std::vector<std::vector<std::string>> rows{{"TEAM", "COHORT", "WEIGHT", "NAMESPACES",
                                              "CLUSTERQUEUE", "PREEMPT-OWN", "RECLAIM", "QUEUEING",
                                              "STATE"}};
  for (const scheduler::model::Team& t : p.teams) {
    rows.push_back({t.name, t.cohort.empty() ? "-" : t.cohort, Weight(t.fair_share_weight),
                    Join(t.namespaces), t.cluster_queue, std::string(Name(t.within_team)),
                    std::string(Name(t.reclaim)) + (t.reclaimable ? "" : " (not reclaimable)"),
                    std::string(Name(t.queueing)), t.active ? "active" : "held"});
  }
  PrintTableOrNone(rows, out);
}

// One row per team, flavor and resource: nominal, borrowing and lending limits.
void PrintQuotas(const scheduler::model::Policy& p, std::ostream& out) {
  out << "\neffective quotas\n";
  std::vector<std::vector<std::string>> rows{
      {"TEAM", "FLAVOR", "RESOURCE", "NOMINAL", "BORROWING LIMIT", "LENDING LIMIT"}};
  for (const scheduler::model::Team& t : p.teams) {
    for (const scheduler::model::FlavorQuota& fq : t.flavors) {
      for (const scheduler::model::ResourceQuota& q : fq.resources) {
        rows.push_back({t.name, fq.flavor, q.resource, FormatAmount(q.resource, q.nominal),
                        FormatAmount(q.resource, q.borrowing_limit),
                        FormatAmount(q.resource, q.lending_limit)});
      }
    }
  }
  PrintTableOrNone(rows, out);
}

// Kueue's resource groups: what a team's pods on one flavor are charged for on another
// (model::Policy::Companions, the ledger's companion cells). Nothing when no team has any.
void PrintCompanions(const scheduler::model::Policy& p, std::ostream& out) {
  std::vector<std::vector<std::string>> rows{{"TEAM", "PODS ON", "RESOURCE", "CHARGED ON"}};
  for (const scheduler::model::Team& t : p.teams) {
    const auto companions = p.TeamCompanions(t);
    for (size_t i = 0; i < t.flavors.size(); ++i) {
      for (const auto& [resource, flavor] : companions[i]) {
        rows.push_back({t.name, t.flavors[i].flavor, resource, flavor});
      }
    }
  }
  if (rows.size() == 1) return;
  out << "\ncharged on another flavor (resource groups)\n";
  PrintTableOrNone(rows, out);
}

// One row per cohort pool (cohort, flavor, resource) a team of the cohort's tree governs
// (model::CohortPools, the ledger's limits): what its teams lend, the cohort's own quota, what
// its child cohorts lend it, the pool they make, and what a cohort with a parent keeps for its
// own subtree (the rest it lends up).
void PrintCohorts(const scheduler::model::Policy& p, std::ostream& out) {
  const std::vector<scheduler::model::CohortPool> pools = scheduler::model::CohortPools(p);
  if (pools.empty()) return;
  out << "\ncohort pools\n";
  std::vector<std::vector<std::string>> rows{{"COHORT", "PARENT", "WEIGHT", "FLAVOR", "RESOURCE",
                                              "TEAMS LEND", "COHORT'S OWN", "CHILDREN LEND", "POOL",
                                              "KEEPS"}};
  for (const scheduler::model::CohortPool& pool : pools) {
    const std::string& r = pool.resource;
    // A cohort's weight weighs it against its siblings: a root has none.
    const scheduler::model::Cohort* cohort = p.FindCohort(pool.cohort);
    const std::string weight =
        pool.parent.empty() ? "-" : Weight(cohort != nullptr ? cohort->fair_share_weight : 1.0);
    rows.push_back({pool.cohort, pool.parent.empty() ? "-" : pool.parent, weight, pool.flavor, r,
                    FormatAmount(r, pool.teams), FormatAmount(r, pool.own),
                    FormatAmount(r, pool.children), FormatAmount(r, pool.subtree),
                    pool.parent.empty() ? "-" : FormatAmount(r, pool.local)});
  }
  PrintTableOrNone(rows, out);
}

}  // namespace

void RenderCheckConfig(const std::string& dir, const LoadResult& result, std::ostream& out) {
  out << "taskgov configuration check: " << dir << "\n";
  out << Plural(result.files.size(), "file") << " read\n\n";
  PrintDiagnostics(result, out);
  // The loaded policy, or the draft resolution produced despite the errors.
  const scheduler::model::Policy* p = result.policy ? result.policy.get() : result.draft.get();
  if (p != nullptr) {
    PrintClusterPolicy(*p, result.ok(), out);
    PrintTeams(*p, out);
    PrintQuotas(*p, out);
    PrintCompanions(*p, out);
    PrintCohorts(*p, out);
  }
  out << "\n";
  if (result.ok()) {
    out << "result: valid (" << Plural(result.warning_count(), "warning") << ")\n";
  } else {
    out << "result: invalid (" << Plural(result.error_count(), "error") << ", "
        << Plural(result.warning_count(), "warning") << ")\n";
  }
}

int RunCheckConfig(const std::string& dir, std::ostream& out) {
  LoadResult result = LoadDirectory(dir);
  RenderCheckConfig(dir, result, out);
  return result.ok() ? 0 : 1;
}

}  // namespace taskgov::config
