#include "extender/cli/report.h"

#include <algorithm>

#include "config/catalogue.h"
#include "config/names.h"
#include "config/resolve.h"
#include "extender/cli/owned_policy.h"
#include "scheduler/model/quantity.h"

namespace taskgov::cli {

namespace {

using config::ComputeSpec;
using config::Dialect;
using config::SharingStrategy;
using config::TeamSpec;

std::string Where(const config::Origin& o) {
  std::string out = o.file;
  if (o.document > 0) out += " (document " + std::to_string(o.document + 1) + ")";
  if (!o.path.empty()) out += ": " + o.path;
  return out;
}

std::string Join(const std::vector<std::string>& items, std::string_view sep) {
  std::string out;
  for (const std::string& s : items) {
    if (!out.empty()) out += sep;
    out += s;
  }
  return out;
}

std::string Gib(int64_t bytes) { return FormatDecimal(bytes, int64_t{1} << 30) + " GiB"; }
std::string Vcpu(int64_t millis) { return FormatDecimal(millis, 1000) + " vCPU"; }

// The compute lines in force: a HyperPod UpdateComputeQuota with compute lines replaces them.
const std::vector<ComputeSpec>& ComputeInForce(const config::ConfigSet& set, const TeamSpec& t) {
  const config::TeamUpdateSpec* latest = nullptr;
  for (const config::TeamUpdateSpec& u : set.team_updates) {
    if (u.team == t.name && u.has_compute &&
        (latest == nullptr || u.target_version >= latest->target_version)) {
      latest = &u;
    }
  }
  return latest != nullptr ? latest->fields.compute : t.compute;
}

std::string DescribeAmounts(const ComputeSpec& c) {
  std::vector<std::string> parts;
  const config::ComputeAmounts& a = c.amounts;
  if (a.count) parts.push_back("count " + std::to_string(*a.count));
  if (a.accelerators) parts.push_back("accelerators " + std::to_string(*a.accelerators));
  if (a.partition_type) {
    parts.push_back("partition " + *a.partition_type + " × " +
                    std::to_string(a.partition_count.value_or(0)));
  }
  if (a.vcpu_millis) parts.push_back("vCpu " + FormatDecimal(*a.vcpu_millis, 1000));
  if (a.memory_bytes) parts.push_back("memoryInGiB " + FormatDecimal(*a.memory_bytes, 1 << 30));
  std::string flavor = c.flavor != c.instance_type ? " on flavor " + c.flavor : "";
  return c.instance_type + flavor + ": " + Join(parts, ", ");
}

// How a compute line gives the accelerator resource.
std::string AcceleratorPhrase(const config::ComputeAmounts& a, const config::InstanceType& t) {
  if (a.accelerators) return std::to_string(*a.accelerators) + " accelerators given";
  if (a.count) {
    return "count " + std::to_string(*a.count) + " × " + std::to_string(t.accelerators) +
           " accelerators per " + t.name;
  }
  return "0: no accelerators asked (§3.4: vCPU or memory alone gives 0 accelerators)";
}

// How a compute line gives cpu or memory (per_instance in its canonical unit).
std::string ScaledPhrase(const config::ComputeAmounts& a, const config::InstanceType& t, bool cpu) {
  auto amount = [&](int64_t v) { return cpu ? Vcpu(v) : Gib(v); };
  const int64_t per_instance = cpu ? t.vcpus * 1000 : t.memory_mib * (int64_t{1} << 20);
  const std::optional<int64_t>& given = cpu ? a.vcpu_millis : a.memory_bytes;
  if (given) return amount(*given) + " given";
  const std::string base = amount(per_instance) + " per " + t.name;
  if (a.count) return "count " + std::to_string(*a.count) + " × " + base;
  if (a.accelerators || a.partition_type) {
    std::string share;
    if (a.accelerators) {
      share =
          std::to_string(*a.accelerators) + "/" + std::to_string(t.accelerators) + " accelerators";
    }
    if (a.partition_type) {
      const config::MigProfile* profile = t.FindMigProfile(*a.partition_type);
      if (!share.empty()) share += " + ";
      share += std::to_string(a.partition_count.value_or(0)) + " " + *a.partition_type + "/(" +
               std::to_string(profile != nullptr ? profile->per_accelerator : 0) +
               " per accelerator × " + std::to_string(t.accelerators) + " accelerators)";
    }
    return base + " × " + share + " (§3.4 ratio default, rounded up)";
  }
  const std::optional<int64_t>& other = cpu ? a.memory_bytes : a.vcpu_millis;
  if (other) {
    const std::string other_per =
        cpu ? Gib(t.memory_mib * (int64_t{1} << 20)) : Vcpu(t.vcpus * 1000);
    return base + " × " + (cpu ? Gib(*other) : Vcpu(*other)) + "/" + other_per +
           " (§3.4 ratio default, rounded up)";
  }
  return base;
}

// How compute line `c` gives `resource` (which its derived list holds).
std::string NominalPhrase(const ComputeSpec& c, const config::InstanceType* type,
                          std::string_view resource) {
  const std::string where = " [" + Where(c.origin) + "]";
  if (type == nullptr) return "given for an instance type outside the catalogue" + where;
  if (resource == "cpu") return ScaledPhrase(c.amounts, *type, true) + where;
  if (resource == "memory") return ScaledPhrase(c.amounts, *type, false) + where;
  if (resource == type->accelerator_resource) return AcceleratorPhrase(c.amounts, *type) + where;
  return std::to_string(c.amounts.partition_count.value_or(0)) + " " + std::string(resource) +
         " given" + where;
}

const config::LineSpec* ExplicitLine(const TeamSpec& t, const std::string& flavor,
                                     const std::string& resource) {
  for (const config::LineSpec& l : t.lines) {
    if ((l.flavor == flavor || l.flavor.empty()) && l.resource == resource) return &l;
  }
  return nullptr;
}

bool HasLimitLine(const std::vector<ComputeSpec>& lines, const std::string& flavor) {
  return std::any_of(lines.begin(), lines.end(),
                     [&](const ComputeSpec& c) { return c.flavor == flavor; });
}

class TeamReporter {
 public:
  TeamReporter(const config::ConfigSet& set, const config::Catalogue& catalogue,
               const scheduler::model::Team& team, const TeamSpec& spec)
      : set_(set), catalogue_(catalogue), team_(team), spec_(spec) {}

  TeamReport Build() {
    TeamReport r;
    r.name = team_.name;
    r.defined_in = spec_.origin.file;
    r.dialect = std::string(config::DialectName(spec_.dialect));
    r.managed = spec_.origin.file == kOwnedKey;
    r.namespaces = Namespaces();
    r.cohort = Cohort();
    SharingFields(&r);
    r.preempt_team_tasks = {std::string(config::Name(team_.within_team)), spec_.origin.file};
    r.fair_share_weight = Weight();
    for (const ComputeSpec& c : ComputeInForce(set_, spec_))
      r.compute.push_back(DescribeAmounts(c));
    for (const scheduler::model::FlavorQuota& fq : team_.flavors) {
      for (const scheduler::model::ResourceQuota& rq : fq.resources) r.quota.push_back(Row(fq, rq));
    }
    return r;
  }

 private:
  bool HyperPodLike() const {
    return spec_.dialect == Dialect::kNative || spec_.dialect == Dialect::kHyperPod;
  }

  Sourced Namespaces() const {
    Sourced s{Join(team_.namespaces, ", "), ""};
    if (s.value.empty()) s.value = "-";
    if (spec_.namespaces) {
      s.source = Where(spec_.namespaces_origin);
    } else if (HyperPodLike()) {
      s.source = "default: hyperpod-ns-<team>";
    } else if (spec_.dialect == Dialect::kKueue) {
      s.source = "the namespaces whose LocalQueues all point to this ClusterQueue";
    } else {
      s.source = "none: pods name the Volcano queue";
    }
    return s;
  }

  Sourced Cohort() const {
    Sourced s{team_.cohort.empty() ? "-" : team_.cohort, ""};
    if (spec_.cohort) {
      s.source = Where(spec_.cohort_origin);
    } else if (spec_.dialect == Dialect::kHyperPod) {
      s.source = "all HyperPod teams share hyperpodCohort";
    } else if (spec_.dialect == Dialect::kNative) {
      s.source = "the policy's defaultCohort";
    } else {
      s.source = spec_.origin.file;
    }
    if (team_.cohort.empty()) s.source += " (no cohort: the team neither lends nor borrows)";
    return s;
  }

  void SharingFields(TeamReport* r) const {
    if (!spec_.strategy) {
      r->strategy = {"-", "limits are set per quota line (" + r->dialect + ")"};
      r->borrow_limit = {"-", r->strategy.source};
      return;
    }
    const bool given = !spec_.sharing_origin.file.empty();
    r->strategy = {std::string(config::Name(*spec_.strategy)),
                   given ? Where(spec_.sharing_origin) : "default (HyperPod: LendAndBorrow)"};
    if (*spec_.strategy != SharingStrategy::kLendAndBorrow) {
      r->borrow_limit = {"-", r->strategy.value + " borrows nothing"};
      return;
    }
    r->borrow_limit = {std::to_string(BorrowPercent()) + "%",
                       spec_.borrow_limit_percent ? Where(spec_.sharing_origin) + ".borrowLimit"
                                                  : "default (HyperPod: 50%)"};
  }

  int64_t BorrowPercent() const {
    return spec_.borrow_limit_percent.value_or(config::kDefaultBorrowLimitPercent);
  }

  Sourced Weight() const {
    char text[32];
    snprintf(text, sizeof(text), "%g", team_.fair_share_weight);
    if (spec_.fair_share_weight_given) return {text, spec_.origin.file};
    return {text, spec_.dialect == Dialect::kHyperPod ? "default (HyperPod: 0)" : "default (1)"};
  }

  QuotaRow Row(const scheduler::model::FlavorQuota& fq,
               const scheduler::model::ResourceQuota& rq) const {
    QuotaRow row{fq.flavor,        rq.resource, rq.nominal, rq.borrowing_limit,
                 rq.lending_limit, "",          "",         ""};
    const config::LineSpec* line = ExplicitLine(spec_, fq.flavor, rq.resource);
    row.nominal_source = NominalSource(fq.flavor, rq.resource, line);
    if (row.nominal_source.empty()) {
      row.nominal_source = "no quota line of this team: 0 (another team governs " + rq.resource +
                           " on " + fq.flavor +
                           "; a team may not use a resource it has no line for)";
      row.borrowing_source = spec_.unlisted_resources_borrowable
                                 ? "Volcano: a resource without capability is unlimited"
                                 : "no quota line: none to borrow";
      row.lending_source = "no quota line: none to lend";
      return row;
    }
    row.borrowing_source = BorrowingSource(fq.flavor, rq, line);
    row.lending_source = LendingSource(fq.flavor, line);
    return row;
  }

  std::string NominalSource(const std::string& flavor, const std::string& resource,
                            const config::LineSpec* line) const {
    if (line != nullptr && line->nominal) return "quota line [" + Where(line->origin) + "]";
    std::vector<std::string> parts;
    for (const ComputeSpec& c : ComputeInForce(set_, spec_)) {
      if (c.flavor != flavor) continue;
      const config::InstanceType* type = catalogue_.Find(c.instance_type);
      common::Result<scheduler::model::ResourceList> derived =
          config::DeriveQuota(type, c.instance_type, c.amounts);
      if (!derived.ok() || !derived->Has(resource)) continue;
      parts.push_back(NominalPhrase(c, type, resource));
    }
    if (parts.empty() && line != nullptr) return "quota line [" + Where(line->origin) + "]";
    return Join(parts, " + ");
  }

  std::string BorrowingSource(const std::string& flavor, const scheduler::model::ResourceQuota& rq,
                              const config::LineSpec* line) const {
    if (team_.cohort.empty()) return "no cohort: the team neither lends nor borrows";
    if (line != nullptr && line->borrowing_limit) return "quota line [" + Where(line->origin) + "]";
    if (HasLimitLine(spec_.absolute_borrow_limits, flavor)) return "absoluteBorrowLimits";
    if (!spec_.strategy) {
      return rq.borrowing_limit == scheduler::model::kUnlimited
                 ? "unlimited: the line sets no limit"
                 : "the quota line";
    }
    switch (*spec_.strategy) {
      case SharingStrategy::kDontLend:
        return "DontLend borrows nothing";
      case SharingStrategy::kLend:
        return "Lend borrows nothing";
      case SharingStrategy::kLendAndBorrow:
        break;
    }
    return "⌊" + FormatAmount(rq.resource, rq.nominal) + " × " + std::to_string(BorrowPercent()) +
           "%⌋: LendAndBorrow with borrow limit " + std::to_string(BorrowPercent()) + "%";
  }

  std::string LendingSource(const std::string& flavor, const config::LineSpec* line) const {
    if (team_.cohort.empty()) return "no cohort: the team neither lends nor borrows";
    if (line != nullptr && line->lending_limit) return "quota line [" + Where(line->origin) + "]";
    if (HasLimitLine(spec_.lending_limits, flavor)) return "lendingLimits";
    if (!spec_.strategy) return "the quota line (unset: all unused nominal)";
    if (*spec_.strategy == SharingStrategy::kDontLend) return "DontLend lends nothing";
    return std::string(config::Name(*spec_.strategy)) + " lends all unused nominal quota";
  }

  const config::ConfigSet& set_;
  const config::Catalogue& catalogue_;  // with the configuration's instanceTypes
  const scheduler::model::Team& team_;
  const TeamSpec& spec_;
};

template <typename T>
std::string SettingSource(const config::Setting<T>& s, std::string_view fallback) {
  return s.value ? Where(s.origin) : std::string(fallback);
}

}  // namespace

const TeamSpec* FindTeamSpec(const config::ConfigSet& set, std::string_view name) {
  const TeamSpec* found = nullptr;
  for (const TeamSpec& t : set.teams) {
    if (t.name == name && !t.checks_only) found = &t;
  }
  return found;
}

std::vector<TeamReport> BuildTeamReports(const config::ConfigSet& set,
                                         const scheduler::model::Policy& policy) {
  std::vector<TeamReport> out;
  const config::Catalogue catalogue = config::BuildCatalogue(set.instance_types, nullptr);
  for (const scheduler::model::Team& team : policy.teams) {
    const TeamSpec* spec = FindTeamSpec(set, team.name);
    if (spec == nullptr) continue;
    out.push_back(TeamReporter(set, catalogue, team, *spec).Build());
  }
  return out;
}

PolicyReport BuildPolicyReport(const config::ConfigSet& set,
                               const scheduler::model::Policy& policy) {
  PolicyReport r;
  const bool hyperpod = !set.scheduler_configs.empty();
  r.task_prioritization = {
      std::string(config::Name(policy.task_prioritization)),
      SettingSource(set.task_prioritization,
                    hyperpod ? "HyperPod: TaskRanking when PriorityClasses are given"
                             : "default (TaskRanking)")};
  r.idle_compute = {std::string(config::Name(policy.idle_compute)),
                    SettingSource(set.idle_compute, "default (FairShare)")};
  for (const scheduler::model::PriorityClass& pc : policy.priority_classes) {
    std::string source;
    for (const config::PriorityClassSpec& s : set.priority_classes) {
      if (s.priority_class.name == pc.name) source = Where(s.origin);
    }
    r.priority_classes.push_back({pc.name, pc.value, source});
  }
  return r;
}

}  // namespace taskgov::cli
