#include "config/resolve.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "scheduler/common/k8s_names.h"
#include "scheduler/model/quantity.h"

namespace taskgov::config {

namespace {

using scheduler::model::kUnlimited;

void ErrorAt(Diagnostics* d, const Origin& o, std::string message) {
  d->Error(o.file, o.document, o.path, o.mark, std::move(message));
}

void WarnAt(Diagnostics* d, const Origin& o, std::string message) {
  d->Warn(o.file, o.document, o.path, o.mark, std::move(message));
}

std::string Where(const Origin& o) { return o.path.empty() ? o.file : o.file + " at " + o.path; }

template <typename T>
T ValueOr(const Setting<T>& s, T fallback) {
  return s.value ? *s.value : fallback;
}

// One (flavor, resource) line of a team while it is being built.
struct Draft {
  Origin origin;
  int64_t nominal = 0;
  std::optional<int64_t> explicit_borrow;
  std::optional<int64_t> absolute_borrow;
  std::optional<int64_t> explicit_lend;
  std::optional<int64_t> derived_lend;
  bool from_compute = false;
  bool from_line = false;
};

// See resolve.h.
Catalogue BuildCatalogueImpl(const std::vector<InstanceTypeOverride>& overrides, Diagnostics* d) {
  Catalogue catalogue = Catalogue::Builtin();
  std::map<std::string, Origin> seen;
  for (const InstanceTypeOverride& o : overrides) {
    if (auto [it, inserted] = seen.emplace(o.name, o.origin); !inserted) {
      ErrorAt(
          d, o.origin,
          "instance type '" + o.name + "' is described twice (first in " + Where(it->second) + ")");
      continue;
    }
    const InstanceType* existing = catalogue.Find(o.name);
    InstanceType t;
    if (existing != nullptr && existing->name == o.name) {
      t = *existing;
    } else {
      if (!o.vcpus || !o.memory_mib) {
        ErrorAt(d, o.origin,
                "instance type '" + o.name +
                    "' is not in the built-in catalogue: give vCpu and memoryInGiB");
        continue;
      }
      t.name = o.name;
    }
    if (o.accelerator_resource) t.accelerator_resource = *o.accelerator_resource;
    if (o.accelerators) t.accelerators = *o.accelerators;
    if (o.vcpus) t.vcpus = *o.vcpus;
    if (o.memory_mib) t.memory_mib = *o.memory_mib;
    if (o.mig_profiles) t.mig_profiles = *o.mig_profiles;
    if (t.accelerators > 0 && t.accelerator_resource.empty()) {
      ErrorAt(d, o.origin,
              "instance type '" + o.name + "' has accelerators but no acceleratorResource");
      continue;
    }
    catalogue.Put(std::move(t));
  }
  return catalogue;
}

struct TeamDraft {
  // Flavors in first-mention order; per flavor, resource → draft.
  std::vector<std::string> flavor_order;
  std::map<std::string, std::map<std::string, Draft>> flavors;

  Draft& At(const std::string& flavor, const std::string& resource) {
    auto [it, inserted] = flavors.try_emplace(flavor);
    if (inserted) flavor_order.push_back(flavor);
    return it->second[resource];
  }
};

class Resolver {
 public:
  Resolver(ConfigSet set, Diagnostics* d) : set_(std::move(set)), d_(d) {}

  std::shared_ptr<scheduler::model::Policy> Run() {
    policy_ = std::make_shared<scheduler::model::Policy>();
    BuildCatalogue();
    ApplySettings();
    CheckClusterArns();
    BuildFlavors();
    policy_->IndexFlavors();
    ApplyUpdates();
    VolcanoParentsToCohorts();
    BuildTeams();
    CheckTeamsDefined();
    AssignNamespaces();
    BuildLocalQueues();
    BuildCohorts();
    IdleSharingCohort();
    AddFillerLines();
    BuildPriorityClasses();
    policy_->Finalize();
    return policy_;
  }

 private:
  void BuildCatalogue() { catalogue_ = BuildCatalogueImpl(set_.instance_types, d_); }

  void ApplySettings() {
    scheduler::model::Policy& p = *policy_;
    p.task_prioritization =
        ValueOr(set_.task_prioritization, scheduler::model::TaskPrioritization::kTaskRanking);
    p.idle_compute =
        ValueOr(set_.idle_compute, scheduler::model::IdleComputeAllocation::kFairShare);
    p.use_pod_priority_class_name = ValueOr(set_.use_pod_priority_class_name, true);
    p.preemption.grace_period_seconds =
        ValueOr(set_.grace_period_seconds, p.preemption.grace_period_seconds);
    p.preemption.minimum_runtime_seconds =
        ValueOr(set_.minimum_runtime_seconds, p.preemption.minimum_runtime_seconds);
    // A TaskGovernancePolicy that names no strategy gets LessThanOrEqualToFinalShare alone:
    // Kueue's second default, LessThanInitialShare, lets two borrowers take the same capacity
    // from each other in turn (issue 34: ping-pong). Kueue and HyperPod configurations keep
    // Kueue's default pair (the model's).
    const std::vector<scheduler::model::FairShareStrategy> fallback =
        set_.policy_documents.empty()
            ? p.preemption.fair_sharing_strategies
            : std::vector{scheduler::model::FairShareStrategy::kLessThanOrEqualToFinalShare};
    p.preemption.fair_sharing_strategies = ValueOr(set_.fair_sharing_strategies, fallback);
    p.gang_timeout_seconds = ValueOr(set_.gang_timeout_seconds, p.gang_timeout_seconds);
    p.starvation_bound_seconds = ValueOr(set_.starvation_bound_seconds, p.starvation_bound_seconds);
    p.idle_resource_sharing.enabled = ValueOr(set_.idle_resource_sharing, false);
    p.no_team = ValueOr(set_.no_team, scheduler::model::NoTeamAction::kPassThrough);
    p.team_resolution.pod_label = ValueOr(set_.team_pod_label, p.team_resolution.pod_label);
    p.team_resolution.namespace_label =
        ValueOr(set_.team_namespace_label, p.team_resolution.namespace_label);
    p.instance_type_label = ValueOr(set_.instance_type_label, p.instance_type_label);
    if (p.instance_type_label.empty()) {
      ErrorAt(d_, set_.instance_type_label.origin, "must not be empty");
      p.instance_type_label = "node.kubernetes.io/instance-type";
    }
    default_queueing_ = ValueOr(set_.queueing, scheduler::model::QueueingStrategy::kBestEffortFIFO);
    hyperpod_cohort_ = ValueOr(set_.hyperpod_cohort, std::string(kDefaultHyperPodCohort));
    volcano_flavor_ = ValueOr(set_.volcano_flavor, std::string(kDefaultVolcanoFlavor));
    default_cohort_ = ValueOr(set_.default_cohort, std::string());
    if (hyperpod_cohort_.empty()) {
      ErrorAt(d_, set_.hyperpod_cohort.origin, "must not be empty: HyperPod teams share a cohort");
      hyperpod_cohort_ = std::string(kDefaultHyperPodCohort);
    }
    if (volcano_flavor_.empty()) {
      ErrorAt(d_, set_.volcano_flavor.origin, "must not be empty");
      volcano_flavor_ = std::string(kDefaultVolcanoFlavor);
    }
  }

  void CheckClusterArns() {
    for (const auto& [arn, origin] : set_.cluster_arns) {
      if (arn != set_.cluster_arns.front().first) {
        WarnAt(d_, origin,
               "names cluster " + arn + " while " + Where(set_.cluster_arns.front().second) +
                   " names " + set_.cluster_arns.front().first +
                   ": taskgov governs one cluster and applies both");
      }
    }
  }

  void BuildFlavors() {
    std::map<std::string, const TopologySpec*> topologies;
    for (const TopologySpec& t : set_.topologies) {
      if (auto [it, inserted] = topologies.emplace(t.name, &t); !inserted) {
        ErrorAt(d_, t.origin,
                "Topology '" + t.name + "' is defined twice (first in " +
                    Where(it->second->origin) + ")");
      }
    }
    for (FlavorSpec& f : set_.flavors) {
      if (!f.topology_name.empty()) {
        auto t = topologies.find(f.topology_name);
        if (t == topologies.end()) {
          ErrorAt(d_, f.origin,
                  "ResourceFlavor '" + f.flavor.name + "' names Topology '" + f.topology_name +
                      "', which is not defined");
        } else if (t->second->valid) {
          f.flavor.topology_levels = t->second->levels;
        }  // else the Topology's own errors say what is wrong
      }
      if (auto it = flavors_.find(f.flavor.name); it != flavors_.end()) {
        ErrorAt(d_, f.origin,
                "flavor '" + f.flavor.name + "' is defined twice (first in " +
                    Where(it->second.origin) + ")");
        continue;
      }
      // A flavor defined only by an instance type is the nodes labelled with that type.
      if (f.flavor.node_labels.empty() && !f.flavor.matches_all_nodes) {
        f.flavor.node_labels.emplace(policy_->instance_type_label, f.instance_type);
      }
      policy_->flavors.push_back(f.flavor);
      flavors_.emplace(f.flavor.name, f);
    }
    const bool any_volcano = std::any_of(set_.teams.begin(), set_.teams.end(), [](const auto& t) {
      return t.dialect == Dialect::kVolcano;
    });
    if (any_volcano && !flavors_.count(volcano_flavor_) &&
        catalogue_.Find(volcano_flavor_) == nullptr) {
      scheduler::model::Flavor all;
      all.name = volcano_flavor_;
      all.matches_all_nodes = true;
      policy_->flavors.push_back(all);
      flavors_.emplace(volcano_flavor_, FlavorSpec{Origin{}, all, "", ""});
    }
  }

  // The instance type whose proportions a compute line on `flavor` follows.
  std::string InstanceTypeOf(const ComputeSpec& c) const {
    if (!c.instance_type.empty()) return c.instance_type;
    if (auto it = flavors_.find(c.flavor);
        it != flavors_.end() && !it->second.instance_type.empty()) {
      return it->second.instance_type;
    }
    return c.flavor;
  }

  void ApplyUpdates() {
    std::stable_sort(set_.team_updates.begin(), set_.team_updates.end(),
                     [](const TeamUpdateSpec& a, const TeamUpdateSpec& b) {
                       return a.target_version < b.target_version;
                     });
    for (TeamUpdateSpec& u : set_.team_updates) {
      auto it = std::find_if(set_.teams.begin(), set_.teams.end(), [&](const TeamSpec& t) {
        return t.name == u.team && t.dialect == Dialect::kHyperPod;
      });
      if (it == set_.teams.end()) {
        if (!u.has_compute) {
          ErrorAt(d_, u.origin,
                  "UpdateComputeQuota for team '" + u.team +
                      "', which no CreateComputeQuota defines, must carry ComputeQuotaConfig");
          continue;
        }
        set_.teams.push_back(std::move(u.fields));
        continue;
      }
      TeamSpec& team = *it;
      if (u.has_compute) {
        team.compute = std::move(u.fields.compute);
        team.absolute_borrow_limits = std::move(u.fields.absolute_borrow_limits);
        team.strategy = u.fields.strategy;
        team.borrow_limit_percent = u.fields.borrow_limit_percent;
        team.within_team = u.fields.within_team;
        team.sharing_origin = u.fields.sharing_origin;
      }
      if (u.has_target_weight) team.fair_share_weight = u.fields.fair_share_weight;
      if (u.has_activation) team.active = u.fields.active;
    }
  }

  void VolcanoParentsToCohorts() {
    std::set<std::string> parents;
    for (const TeamSpec& t : set_.teams) {
      if (t.dialect == Dialect::kVolcano && t.cohort) parents.insert(*t.cohort);
    }
    std::vector<TeamSpec> kept;
    for (TeamSpec& t : set_.teams) {
      if (t.dialect == Dialect::kVolcano && (parents.count(t.name) || t.name == "root")) {
        if (!t.lines.empty()) {
          WarnAt(d_, t.origin,
                 "queue '" + t.name +
                     "' is a parent queue: taskgov makes it a cohort, and its deserved, "
                     "capability and guarantee are not honoured");
        }
        set_.cohorts.push_back(
            CohortSpec{t.origin, t.name, t.name == "root" ? "" : t.cohort.value_or(""), {}, {}});
        volcano_cohorts_.insert(t.name);
        continue;
      }
      kept.push_back(std::move(t));
    }
    set_.teams = std::move(kept);
  }

  std::optional<int64_t> PercentOf(int64_t nominal, int64_t percent) {
    const __int128 v = static_cast<__int128>(nominal) * percent / 100;
    if (v > kUnlimited - 1) return std::nullopt;
    return static_cast<int64_t>(v);
  }

  void Derive(const TeamSpec& team, const std::vector<ComputeSpec>& lines, TeamDraft* draft,
              std::string_view what) {
    std::set<std::string> seen;
    for (const ComputeSpec& c : lines) {
      if (!seen.insert(c.flavor).second) {
        ErrorAt(d_, c.origin,
                "flavor '" + c.flavor + "' appears twice in the " + std::string(what) +
                    " of team '" + team.name + "'");
        continue;
      }
      const std::string type = InstanceTypeOf(c);
      const InstanceType* known = catalogue_.Find(type);
      if (!c.amounts_valid) {
        // Its amounts are in error (reported): only an unknown instance type adds to that.
        common::Status s = CheckKnownInstanceType(known, type);
        if (!s.ok()) ErrorAt(d_, c.origin, s.error().message);
        continue;
      }
      common::Result<scheduler::model::ResourceList> derived = DeriveQuota(known, type, c.amounts);
      if (!derived.ok()) {
        ErrorAt(d_, c.origin, derived.error().message);
        continue;
      }
      for (const scheduler::model::ResourceAmount& r : *derived) {
        Draft& line = draft->At(c.flavor, r.name);
        if (what == "compute") {
          line.nominal = r.amount;
          line.from_compute = true;
          line.origin = c.origin;
        } else if (what == "absoluteBorrowLimits") {
          line.absolute_borrow = r.amount;
          if (!line.from_compute && !line.from_line) line.origin = c.origin;
        } else {
          line.derived_lend = r.amount;
          if (!line.from_compute && !line.from_line) line.origin = c.origin;
        }
      }
    }
  }

  void BuildTeams() {
    std::map<std::string, Origin> seen;
    for (TeamSpec& spec : set_.teams) {
      if (spec.checks_only) {
        (void)DraftQuota(spec);  // reports the errors of its lines; it joins no policy
        continue;
      }
      if (auto [it, inserted] = seen.emplace(spec.name, spec.origin); !inserted) {
        ErrorAt(d_, spec.origin,
                "team '" + spec.name + "' is defined twice (first in " + Where(it->second) +
                    " by a " + std::string(DialectName(dialect_of_[spec.name])) + " document)");
        continue;
      }
      dialect_of_[spec.name] = spec.dialect;
      BuildTeam(spec);
    }
  }

  // A configuration with no team is refused unless it says `emptyPolicy: true`, and one that says
  // so must define none. Reported only when nothing else is wrong (an emptied or broken file that
  // held the teams is the error to fix, and names the file).
  void CheckTeamsDefined() {
    const bool marker = set_.empty_policy.value.value_or(false);
    if (marker && !policy_->teams.empty()) {
      ErrorAt(d_, set_.empty_policy.origin,
              "emptyPolicy: true, but the configuration defines " +
                  std::to_string(policy_->teams.size()) +
                  " teams: remove emptyPolicy, or the teams");
      return;
    }
    if (marker || !policy_->teams.empty() || d_->has_errors()) return;
    ErrorAt(d_, Origin{},
            "no team is defined: a configuration without teams would switch governance off, "
            "so it is refused (an empty, truncated or deleted policy looks like this). To run "
            "with no teams on purpose, put `emptyPolicy: true` in a TaskGovernancePolicy "
            "document (apiVersion: taskgov.io/v1)");
  }

  // The team's identity, queueing and cohort, with the dialect defaults; no quota yet.
  scheduler::model::Team TeamOf(const TeamSpec& spec) const {
    scheduler::model::Team team;
    team.name = spec.name;
    team.fair_share_weight = spec.fair_share_weight;
    team.queueing = spec.queueing.value_or(default_queueing_);
    team.within_team = spec.within_team;
    team.reclaim = spec.reclaim;
    team.borrow_within_cohort = spec.borrow_within_cohort;
    team.active = spec.active;
    team.reclaimable = spec.reclaimable;
    team.namespace_selector = spec.namespace_selector;
    if (spec.dialect == Dialect::kVolcano) {
      team.namespace_selector = scheduler::model::LabelSelector{};  // Volcano: any namespace
    }
    const bool hyperpod_like =
        spec.dialect == Dialect::kNative || spec.dialect == Dialect::kHyperPod;
    team.cluster_queue = !spec.cluster_queue.empty() ? spec.cluster_queue
                         : hyperpod_like             ? DefaultClusterQueue(spec.name)
                                                     : spec.name;
    if (spec.cohort) {
      team.cohort = *spec.cohort;
    } else if (spec.dialect == Dialect::kHyperPod) {
      team.cohort = hyperpod_cohort_;
    } else if (spec.dialect == Dialect::kNative) {
      team.cohort = default_cohort_;
    }
    return team;
  }

  // The team's lines: what its compute lines derive, overridden field by field by its explicit
  // lines, then the limits its absoluteBorrowLimits and lendingLimits derive. Errors go to the
  // diagnostics; the offending line is skipped.
  TeamDraft DraftQuota(const TeamSpec& spec) {
    TeamDraft draft;
    Derive(spec, spec.compute, &draft, "compute");
    std::set<std::pair<std::string, std::string>> explicit_seen;
    for (const LineSpec& l : spec.lines) {
      const std::string flavor = l.flavor.empty() ? volcano_flavor_ : l.flavor;
      if (!explicit_seen.insert({flavor, l.resource}).second) {
        ErrorAt(d_, l.origin,
                "resource '" + l.resource + "' on flavor '" + flavor +
                    "' is given twice for team '" + spec.name + "'");
        continue;
      }
      Draft& line = draft.At(flavor, l.resource);
      line.origin = l.origin;
      line.from_line = true;
      if (l.nominal) line.nominal = *l.nominal;
      if (l.borrowing_limit) line.explicit_borrow = l.borrowing_limit;
      if (l.lending_limit) line.explicit_lend = l.lending_limit;
    }
    Derive(spec, spec.absolute_borrow_limits, &draft, "absoluteBorrowLimits");
    Derive(spec, spec.lending_limits, &draft, "lendingLimits");
    return draft;
  }

  // A line of a team without a cohort: it neither borrows nor lends. Any limit on it is an error,
  // reported once per team (*reported).
  scheduler::model::ResourceQuota IsolatedQuota(const TeamSpec& spec, const std::string& resource,
                                                const Draft& line, bool* reported) {
    const bool any_limit = line.explicit_borrow || line.explicit_lend ||
                           (line.absolute_borrow && spec.dialect == Dialect::kNative) ||
                           (line.derived_lend);
    if (any_limit && !*reported) {
      ErrorAt(d_, line.origin,
              "team '" + spec.name +
                  "' has no cohort, so it can neither borrow nor lend: remove the "
                  "borrowing/lending limits or give it a cohort");
      *reported = true;
    }
    return scheduler::model::ResourceQuota{resource, line.nominal, 0, 0};
  }

  // Lending: the explicit limit, else the derived one, else nothing for DontLend and unlimited
  // otherwise. A lending limit under DontLend is an error.
  int64_t LendingLimit(const TeamSpec& spec, const std::string& flavor, const std::string& resource,
                       const Draft& line) {
    const bool dont_lend = spec.strategy == SharingStrategy::kDontLend;
    if (dont_lend && (line.explicit_lend.value_or(0) > 0 || line.derived_lend.value_or(0) > 0)) {
      ErrorAt(d_, line.origin,
              "team '" + spec.name + "' has strategy DontLend but a lending limit for " + resource +
                  " on " + flavor);
    }
    if (line.explicit_lend) return *line.explicit_lend;
    if (line.derived_lend) return *line.derived_lend;
    return dont_lend ? 0 : kUnlimited;
  }

  // Whether the team's sharing strategy lets it borrow (no strategy: lines say for themselves).
  static bool Borrows(const TeamSpec& spec) {
    return !spec.strategy || *spec.strategy == SharingStrategy::kLendAndBorrow;
  }

  // Borrowing: the explicit limit (an error above zero when the team does not borrow), else none
  // when it does not borrow, else its absoluteBorrowLimits, else unlimited without a strategy,
  // else BorrowLimit% of the nominal quota.
  int64_t BorrowingLimit(const TeamSpec& spec, const std::string& flavor,
                         const std::string& resource, const Draft& line) {
    if (line.explicit_borrow) {
      if (!Borrows(spec) && *line.explicit_borrow > 0) {
        ErrorAt(d_, line.origin,
                "team '" + spec.name + "' does not borrow (strategy " +
                    (*spec.strategy == SharingStrategy::kLend ? "Lend" : "DontLend") +
                    ") but has a borrowing limit for " + resource + " on " + flavor);
      }
      return *line.explicit_borrow;
    }
    if (!Borrows(spec)) return 0;
    if (line.absolute_borrow) return *line.absolute_borrow;
    if (!spec.strategy) return kUnlimited;
    const int64_t percent = spec.borrow_limit_percent.value_or(kDefaultBorrowLimitPercent);
    std::optional<int64_t> b = PercentOf(line.nominal, percent);
    if (!b) {
      ErrorAt(d_, line.origin, "borrowing limit for " + resource + " overflows");
      return kUnlimited;
    }
    return *b;
  }

  // A line of a team in a cohort, with its lending and borrowing limits, checked against the
  // strategy and the nominal quota.
  scheduler::model::ResourceQuota SharedQuota(const TeamSpec& spec, const std::string& flavor,
                                              const std::string& resource, const Draft& line) {
    scheduler::model::ResourceQuota q;
    q.resource = resource;
    q.nominal = line.nominal;
    q.lending_limit = LendingLimit(spec, flavor, resource, line);
    q.borrowing_limit = BorrowingLimit(spec, flavor, resource, line);
    if (!Borrows(spec) && line.absolute_borrow && spec.dialect == Dialect::kNative &&
        *line.absolute_borrow > 0) {
      ErrorAt(d_, line.origin,
              "team '" + spec.name +
                  "' does not borrow (its strategy is not LendAndBorrow) but has "
                  "absoluteBorrowLimits");
    }
    if (q.lending_limit != kUnlimited && q.lending_limit > q.nominal) {
      ErrorAt(d_, line.origin,
              "lending limit " + scheduler::model::FormatQuantity(resource, q.lending_limit) +
                  " for " + resource + " on " + flavor + " exceeds the nominal quota " +
                  scheduler::model::FormatQuantity(resource, q.nominal));
    }
    return q;
  }

  // Adds the team to the policy. Errors are in the diagnostics; the team stays for
  // check-config's table.
  void BuildTeam(const TeamSpec& spec) {
    scheduler::model::Team team = TeamOf(spec);
    TeamDraft draft = DraftQuota(spec);
    bool reported_no_cohort = false;
    for (const std::string& flavor_name : draft.flavor_order) {
      scheduler::model::FlavorQuota fq;
      fq.flavor = flavor_name;
      NoteFlavorUse(flavor_name, spec);
      for (const auto& [resource, line] : draft.flavors[flavor_name]) {
        if (!CheckResourceName(resource, line.origin)) continue;
        fq.resources.push_back(team.cohort.empty()
                                   ? IsolatedQuota(spec, resource, line, &reported_no_cohort)
                                   : SharedQuota(spec, flavor_name, resource, line));
      }
      team.flavors.push_back(std::move(fq));
    }
    CheckCompanions(spec, team);
    team_specs_.push_back(&spec);
    policy_->teams.push_back(std::move(team));
  }

  // A pod is charged on its node's flavor and, for a resource its team has no quota for there,
  // on the team's first flavor with quota for it whose node labels every node of the pod's flavor
  // has (the ledger's companion cells). For a Kueue ClusterQueue of several resource groups
  // (e.g. cpu and memory on an unlabelled default flavor, GPUs on instance types), a flavor of
  // one group whose nodes no flavor of another group covers leaves that group's resources
  // uncharged for pods on those nodes: a warning. Not for a flavor that matches every node: its
  // nodes are those no labelled flavor claims, which labelled flavors never cover.
  void CheckCompanions(const TeamSpec& spec, const scheduler::model::Team& team) {
    if (spec.resource_groups.size() < 2) return;
    const auto companions = policy_->TeamCompanions(team);
    // The team's flavors with quota for each resource, in order (for the message).
    std::map<std::string, std::string> holders;
    for (const scheduler::model::FlavorQuota& g : team.flavors) {
      for (const scheduler::model::ResourceQuota& q : g.resources) {
        std::string& list = holders[q.resource];
        list += (list.empty() ? "'" : ", '") + g.flavor + "'";
      }
    }
    for (size_t i = 0; i < team.flavors.size(); ++i) {
      const scheduler::model::FlavorQuota& at = team.flavors[i];
      const scheduler::model::Flavor* flavor = policy_->FindFlavor(at.flavor);
      if (flavor != nullptr && flavor->node_labels.empty() && flavor->matches_all_nodes) continue;
      std::set<std::string> charged;
      for (const scheduler::model::ResourceQuota& q : at.resources) charged.insert(q.resource);
      for (const auto& [resource, unused] : companions[i]) charged.insert(resource);
      for (const std::vector<std::string>& group : spec.resource_groups) {
        for (const std::string& resource : group) {
          if (charged.count(resource)) continue;
          auto held = holders.find(resource);
          if (held == holders.end()) continue;
          WarnAt(d_, spec.origin,
                 "ClusterQueue '" + team.name + "': pods on '" + at.flavor +
                     "' nodes are not charged for " + resource + ": none of its flavors for it (" +
                     held->second + ") matches every '" + at.flavor +
                     "' node (a pod is charged on its node's flavor, and another resource group's "
                     "resources on that group's first flavor whose node labels the node has)");
        }
      }
    }
  }

  // Whether `resource` is a resource name Kubernetes accepts in a pod's requests; otherwise an
  // error at `origin` quoting it (control characters escaped) and the rule. Resource names reach
  // logs, metrics labels, the console and the usage report.
  bool CheckResourceName(const std::string& resource, const Origin& origin) {
    if (common::IsResourceName(resource)) return true;
    std::string quoted;
    for (unsigned char c : resource) {
      if (c < 0x20 || c == 0x7f) {
        char hex[5];
        snprintf(hex, sizeof(hex), "\\x%02x", c);
        quoted += hex;
      } else {
        quoted += static_cast<char>(c);
      }
    }
    ErrorAt(d_, origin,
            "resource name '" + quoted +
                "' is not one Kubernetes accepts: [prefix/]name, the name 1-63 characters of "
                "[A-Za-z0-9-_.] starting and ending alphanumeric, the prefix a DNS subdomain "
                "(e.g. nvidia.com/gpu); without a prefix only cpu, memory, ephemeral-storage, "
                "hugepages-<size> or pods");
    return false;
  }

  // Warns once per flavor name that is neither defined nor a known instance type.
  void NoteFlavorUse(const std::string& flavor, const TeamSpec& spec) {
    if (flavors_.count(flavor) || catalogue_.Find(flavor) != nullptr) return;
    if (!warned_flavors_.insert(flavor).second) return;
    const std::string label = policy_->instance_type_label;
    if (spec.dialect == Dialect::kKueue) {
      WarnAt(d_, spec.origin,
             "no ResourceFlavor '" + flavor + "' in the configuration: nodes whose " + label +
                 " label is '" + flavor + "' belong to it");
    } else {
      WarnAt(d_, spec.origin,
             "flavor '" + flavor +
                 "' is neither defined under flavors nor a known instance "
                 "type: nodes whose " +
                 label + " label is '" + flavor + "' belong to it");
    }
  }

  // namespace → the team that owns it, and where.
  using NamespaceOwners = std::map<std::string, std::pair<std::string, Origin>>;

  void AssignNamespaces() {
    NamespaceOwners owner;
    ClaimNamespaces(&owner);
    AssignLocalQueueNamespaces(&owner);
  }

  // Explicit and default namespaces first: they are claims; a namespace claimed twice is an
  // error.
  void ClaimNamespaces(NamespaceOwners* owner) {
    for (size_t i = 0; i < policy_->teams.size(); ++i) {
      scheduler::model::Team& team = policy_->teams[i];
      const TeamSpec& spec = *team_specs_[i];
      std::vector<std::string> namespaces;
      Origin origin = spec.namespaces ? spec.namespaces_origin : spec.origin;
      if (origin.file.empty()) origin = spec.origin;
      if (spec.namespaces) {
        namespaces = *spec.namespaces;
      } else if (spec.dialect == Dialect::kNative || spec.dialect == Dialect::kHyperPod) {
        namespaces.push_back(DefaultNamespace(team.name));
        if (namespaces.back().size() > 63) {
          ErrorAt(d_, spec.origin,
                  "the default namespace of team '" + team.name + "' (" + namespaces.back() +
                      ") is longer than 63 characters: name the team's namespaces explicitly");
          namespaces.clear();
        }
      } else {
        continue;  // Kueue: below, from LocalQueues
      }
      std::set<std::string> own;
      for (const std::string& ns : namespaces) {
        if (!own.insert(ns).second) continue;
        auto [it, inserted] = owner->emplace(ns, std::make_pair(team.name, origin));
        if (!inserted) {
          ErrorAt(d_, origin,
                  "namespace '" + ns + "' is claimed by team '" + team.name + "' and by team '" +
                      it->second.first + "' (" + Where(it->second.second) + ")");
          continue;
        }
        team.namespaces.push_back(ns);
      }
    }
  }

  // Kueue teams without explicit namespaces: the unclaimed namespaces whose LocalQueues all
  // point to the team.
  void AssignLocalQueueNamespaces(NamespaceOwners* owner) {
    std::map<std::string, std::set<std::string>> queues_of_namespace;
    std::map<std::string, Origin> namespace_origin;
    for (const LocalQueueSpec& lq : set_.local_queues) {
      queues_of_namespace[lq.namespace_].insert(lq.cluster_queue);
      namespace_origin.emplace(lq.namespace_, lq.origin);
    }
    for (const auto& [ns, cqs] : queues_of_namespace) {
      if (cqs.size() != 1) {
        std::string list;
        for (const std::string& cq : cqs) list += (list.empty() ? "" : ", ") + cq;
        WarnAt(d_, namespace_origin[ns],
               "namespace '" + ns + "' has LocalQueues of several ClusterQueues (" + list +
                   "): no team owns it; its pods belong to the team of the LocalQueue their "
                   "kueue.x-k8s.io/queue-name label names, where that ClusterQueue's "
                   "namespaceSelector selects the namespace");
        continue;
      }
      const std::string& cq = *cqs.begin();
      for (size_t i = 0; i < policy_->teams.size(); ++i) {
        scheduler::model::Team& team = policy_->teams[i];
        const TeamSpec& spec = *team_specs_[i];
        if (team.name != cq || spec.dialect != Dialect::kKueue || spec.namespaces) continue;
        if (auto it = owner->find(ns); it != owner->end()) {
          if (it->second.first != team.name) {
            WarnAt(d_, namespace_origin[ns],
                   "namespace '" + ns + "' belongs to team '" + it->second.first +
                       "': pods there that name a LocalQueue of ClusterQueue '" + cq +
                       "' are refused (a pod's team is the team that owns its namespace)");
          }
          continue;
        }
        owner->emplace(ns, std::make_pair(team.name, namespace_origin[ns]));
        team.namespaces.push_back(ns);
      }
    }
  }

  void BuildLocalQueues() {
    std::set<std::pair<std::string, std::string>> seen;
    std::map<std::string, size_t> index;
    for (size_t i = 0; i < policy_->teams.size(); ++i) index[policy_->teams[i].name] = i;
    for (const LocalQueueSpec& lq : set_.local_queues) {
      if (!seen.insert({lq.namespace_, lq.name}).second) {
        ErrorAt(d_, lq.origin, "LocalQueue " + lq.namespace_ + "/" + lq.name + " is defined twice");
        continue;
      }
      auto it = index.find(lq.cluster_queue);
      if (it == index.end()) {
        // A LocalQueue may also name a HyperPod/native team's ClusterQueue.
        auto by_cq = std::find_if(
            policy_->teams.begin(), policy_->teams.end(),
            [&](const scheduler::model::Team& t) { return t.cluster_queue == lq.cluster_queue; });
        if (by_cq == policy_->teams.end()) {
          WarnAt(d_, lq.origin,
                 "LocalQueue " + lq.namespace_ + "/" + lq.name + " points to ClusterQueue '" +
                     lq.cluster_queue +
                     "', which is not in the configuration: its pods belong to no team");
          continue;
        }
        policy_->local_queues.push_back(
            scheduler::model::LocalQueue{lq.namespace_, lq.name, by_cq->name});
        continue;
      }
      policy_->local_queues.push_back(
          scheduler::model::LocalQueue{lq.namespace_, lq.name, lq.cluster_queue});
    }
    // HyperPod's own LocalQueue in each namespace of HyperPod-style teams.
    for (size_t i = 0; i < policy_->teams.size(); ++i) {
      const scheduler::model::Team& team = policy_->teams[i];
      const Dialect dialect = team_specs_[i]->dialect;
      if (dialect == Dialect::kVolcano) {
        policy_->volcano_queues.emplace(team.name, team.name);
        continue;
      }
      if (dialect != Dialect::kNative && dialect != Dialect::kHyperPod) continue;
      for (const std::string& ns : team.namespaces) {
        const std::string name = ns + "-localqueue";
        if (!seen.insert({ns, name}).second) continue;
        policy_->local_queues.push_back(scheduler::model::LocalQueue{ns, name, team.name});
      }
    }
  }

  void BuildCohorts() {
    std::map<std::string, std::string> parent;  // cohort → parent
    std::map<std::string, Origin> origin;
    std::vector<std::string> order;
    auto add = [&](const std::string& name) {
      if (name.empty()) return;
      if (parent.emplace(name, "").second) order.push_back(name);
    };
    for (const CohortSpec& c : set_.cohorts) {
      if (origin.count(c.name)) {
        ErrorAt(
            d_, c.origin,
            "cohort '" + c.name + "' is defined twice (first in " + Where(origin[c.name]) + ")");
        continue;
      }
      add(c.name);
      parent[c.name] = c.parent;
      origin.emplace(c.name, c.origin);
      add(c.parent);
    }
    for (const scheduler::model::Team& t : policy_->teams) add(t.cohort);
    if (!ReportCohortCycles(order, parent, origin)) ReportCohortDepth(order, parent, origin);
    for (const std::string& name : order) {
      policy_->cohorts.push_back(scheduler::model::Cohort{name, parent[name], {}});
    }
    // The pools the tree makes (model::CohortPools): a (cohort, flavor, resource) some team of
    // the cohort's tree governs.
    std::set<std::tuple<std::string, std::string, std::string>> pools;
    for (const scheduler::model::CohortPool& pool : scheduler::model::CohortPools(*policy_)) {
      pools.emplace(pool.cohort, pool.flavor, pool.resource);
    }
    std::map<std::string, const CohortSpec*> specs;
    for (const CohortSpec& c : set_.cohorts) specs.emplace(c.name, &c);
    for (scheduler::model::Cohort& cohort : policy_->cohorts) {
      if (auto it = specs.find(cohort.name); it != specs.end()) {
        cohort.flavors = CohortQuota(*it->second, pools);
        CohortWeight(*it->second, &cohort);
      }
    }
  }

  // IdleResourceSharing lends the unallocated capacity within one cohort: the one all HyperPod
  // teams share (HyperPod: the teams of a cluster form one), else the native defaultCohort. With
  // neither holding a team, nothing is lent: a warning at the setting.
  void IdleSharingCohort() {
    scheduler::model::IdleResourceSharing& sharing = policy_->idle_resource_sharing;
    if (!sharing.enabled) return;
    const bool hyperpod =
        std::any_of(team_specs_.begin(), team_specs_.end(),
                    [](const TeamSpec* spec) { return spec->dialect == Dialect::kHyperPod; });
    const std::string cohort = hyperpod ? hyperpod_cohort_ : default_cohort_;
    const bool has_team =
        !cohort.empty() &&
        std::any_of(policy_->teams.begin(), policy_->teams.end(),
                    [&](const scheduler::model::Team& t) { return t.cohort == cohort; });
    if (!has_team) {
      WarnAt(
          d_, set_.idle_resource_sharing.origin,
          cohort.empty()
              ? std::string("has no effect: the unallocated capacity is lent within the cohort of "
                            "the HyperPod teams, or else defaultCohort, and there are no HyperPod "
                            "teams and no defaultCohort")
              : "has no effect: the unallocated capacity is lent within cohort '" + cohort +
                    "', which holds no team");
      return;
    }
    sharing.cohort = cohort;
  }

  // Each cycle of parents, once, at the cohort where the walk from the first cohort (in `order`)
  // that reaches it enters it: "x → y → x". Linear: every cohort is walked once (a walk stops
  // at a cohort an earlier walk finished).
  // Returns whether it reported any.
  bool ReportCohortCycles(const std::vector<std::string>& order,
                          std::map<std::string, std::string>& parent,
                          std::map<std::string, Origin>& origin) {
    bool any = false;
    enum State : uint8_t { kNew, kOnPath, kDone };
    std::map<std::string_view, State> state;
    for (const std::string& start : order) {
      std::vector<std::string_view> path;
      std::string_view at = start;
      while (!at.empty() && state[at] == kNew) {
        state[at] = kOnPath;
        path.push_back(at);
        at = parent[std::string(at)];
      }
      if (!at.empty() && state[at] == kOnPath) {
        std::string text;
        for (auto it = std::find(path.begin(), path.end(), at); it != path.end(); ++it) {
          text += std::string(text.empty() ? "" : " → ") + std::string(*it);
        }
        text += " → " + std::string(at);
        const std::string next(at);
        ErrorAt(d_, origin.count(next) ? origin[next] : Origin{}, "cohorts form a cycle: " + text);
        any = true;
      }
      for (std::string_view name : path) state[name] = kDone;
    }
    return any;
  }

  // A tree deeper than kMaxCohortDepth levels is an error (every reservation walks it up to its
  // root), reported once, at its deepest cohort. With no cycle; linear (depths memoized).
  void ReportCohortDepth(const std::vector<std::string>& order,
                         std::map<std::string, std::string>& parent,
                         std::map<std::string, Origin>& origin) {
    std::map<std::string_view, size_t> depth;  // a root: 1
    std::string_view deepest;
    size_t most = 0;
    for (const std::string& start : order) {
      std::vector<std::string_view> path;
      std::string_view at = start;
      size_t above = 0;
      while (!at.empty()) {
        if (auto it = depth.find(at); it != depth.end()) {
          above = it->second;
          break;
        }
        path.push_back(at);
        at = parent[std::string(at)];
      }
      for (auto it = path.rbegin(); it != path.rend(); ++it) depth[*it] = ++above;
      if (above > most) {
        most = above;
        deepest = start;
      }
    }
    if (most <= kMaxCohortDepth) return;
    const std::string name(deepest);
    ErrorAt(d_, origin.count(name) ? origin[name] : Origin{},
            "cohort '" + name + "' is " + std::to_string(most) +
                " levels below its root: cohort trees may be at most " +
                std::to_string(kMaxCohortDepth) +
                " levels deep (every reservation is checked at each level up to the root)");
  }

  // A cohort's fair-sharing weight (Kueue: it weighs the cohort against its siblings, so a root's
  // weighs nothing: a warning).
  void CohortWeight(const CohortSpec& spec, scheduler::model::Cohort* cohort) {
    if (!spec.fair_share_weight) return;
    cohort->fair_share_weight = *spec.fair_share_weight;
    if (spec.parent.empty()) {
      WarnAt(d_, spec.origin,
             "ignored: cohort '" + spec.name +
                 "' has no parent, and its fair-sharing weight weighs it only against sibling "
                 "cohorts and teams under a parent");
    }
  }

  // The quota a cohort holds itself per (flavor, resource): nominal, and the limits on what it
  // borrows from and lends to its parent (the ledger's cohort tree). A line given twice is an
  // error; limits of a cohort without a parent, and a line no team of the cohort's tree can use,
  // are warnings.
  std::vector<scheduler::model::FlavorQuota> CohortQuota(
      const CohortSpec& spec,
      const std::set<std::tuple<std::string, std::string, std::string>>& pools) {
    std::vector<scheduler::model::FlavorQuota> out;
    std::set<std::pair<std::string, std::string>> seen;
    for (const LineSpec& l : spec.lines) {
      if (!CheckResourceName(l.resource, l.origin)) continue;
      if (!seen.insert({l.flavor, l.resource}).second) {
        ErrorAt(d_, l.origin,
                "resource '" + l.resource + "' on flavor '" + l.flavor +
                    "' is given twice for cohort '" + spec.name + "'");
        continue;
      }
      if ((l.borrowing_limit || l.lending_limit) && spec.parent.empty()) {
        WarnAt(d_, l.origin,
               "ignored: cohort '" + spec.name +
                   "' has no parent, and its borrowingLimit and lendingLimit bound only what it "
                   "borrows from and lends to a parent");
      }
      if (!pools.count({spec.name, l.flavor, l.resource})) {
        WarnAt(d_, l.origin,
               "no team in the cohort tree of '" + spec.name + "' has quota for " + l.resource +
                   " on '" + l.flavor + "': no pod can use this quota");
      }
      auto fq = std::find_if(out.begin(), out.end(), [&](const scheduler::model::FlavorQuota& f) {
        return f.flavor == l.flavor;
      });
      if (fq == out.end()) fq = out.insert(out.end(), scheduler::model::FlavorQuota{l.flavor, {}});
      scheduler::model::ResourceQuota q;
      q.resource = l.resource;
      q.nominal = l.nominal.value_or(0);
      if (!spec.parent.empty()) {
        q.borrowing_limit = l.borrowing_limit.value_or(scheduler::model::kUnlimited);
        q.lending_limit = l.lending_limit.value_or(scheduler::model::kUnlimited);
      }
      fq->resources.push_back(std::move(q));
    }
    return out;
  }

  // A team's zero lines for resources others govern on its flavors (Kueue: a resource the
  // ClusterQueue does not cover cannot be borrowed) — except where another of its flavors covers
  // the resource and the flavor's nodes, which charges it there (CheckCompanions).
  void AddFillerLines() {
    // Resources governed per flavor, by any team.
    std::map<std::string, std::set<std::string>> governed;
    for (const scheduler::model::Team& t : policy_->teams) {
      for (const scheduler::model::FlavorQuota& fq : t.flavors) {
        for (const scheduler::model::ResourceQuota& q : fq.resources)
          governed[fq.flavor].insert(q.resource);
      }
    }
    for (size_t i = 0; i < policy_->teams.size(); ++i) {
      scheduler::model::Team& t = policy_->teams[i];
      const bool borrowable = team_specs_[i]->unlisted_resources_borrowable && !t.cohort.empty();
      // What the team's own lines charge elsewhere, before any filler line is added.
      const auto companions = policy_->TeamCompanions(t);
      for (size_t f = 0; f < t.flavors.size(); ++f) {
        scheduler::model::FlavorQuota& fq = t.flavors[f];
        std::set<std::string> elsewhere;
        for (const auto& [resource, unused] : companions[f]) elsewhere.insert(resource);
        for (const std::string& r : governed[fq.flavor]) {
          if (Covers(fq, r) || elsewhere.count(r)) continue;
          scheduler::model::ResourceQuota q;
          q.resource = r;
          q.nominal = 0;
          q.lending_limit = 0;
          q.borrowing_limit = borrowable ? kUnlimited : 0;
          fq.resources.push_back(std::move(q));
        }
        std::sort(fq.resources.begin(), fq.resources.end(),
                  [](const auto& a, const auto& b) { return a.resource < b.resource; });
      }
    }
  }

  static bool Covers(const scheduler::model::FlavorQuota& fq, const std::string& resource) {
    return std::any_of(fq.resources.begin(), fq.resources.end(),
                       [&](const auto& q) { return q.resource == resource; });
  }

  void BuildPriorityClasses() {
    std::map<std::string, Origin> seen;
    for (const PriorityClassSpec& pc : set_.priority_classes) {
      if (auto [it, inserted] = seen.emplace(pc.priority_class.name, pc.origin); !inserted) {
        ErrorAt(d_, pc.origin,
                "priority class '" + pc.priority_class.name + "' is defined twice (first in " +
                    Where(it->second) + ")");
        continue;
      }
      policy_->priority_classes.push_back(pc.priority_class);
    }
  }

  ConfigSet set_;
  Diagnostics* d_;
  std::shared_ptr<scheduler::model::Policy> policy_;
  Catalogue catalogue_;
  scheduler::model::QueueingStrategy default_queueing_ =
      scheduler::model::QueueingStrategy::kBestEffortFIFO;
  std::string hyperpod_cohort_;
  std::string volcano_flavor_;
  std::string default_cohort_;
  std::map<std::string, FlavorSpec> flavors_;
  std::map<std::string, Dialect> dialect_of_;
  std::set<std::string> volcano_cohorts_;
  std::set<std::string> warned_flavors_;
  std::vector<const TeamSpec*> team_specs_;  // parallel to policy_->teams
};

}  // namespace

std::string DefaultNamespace(std::string_view team) { return "hyperpod-ns-" + std::string(team); }

std::string DefaultClusterQueue(std::string_view team) {
  return DefaultNamespace(team) + "-clusterqueue";
}

Catalogue BuildCatalogue(const std::vector<InstanceTypeOverride>& overrides,
                         Diagnostics* diagnostics) {
  Diagnostics dropped;
  return BuildCatalogueImpl(overrides, diagnostics != nullptr ? diagnostics : &dropped);
}

std::shared_ptr<scheduler::model::Policy> Resolve(ConfigSet set, Diagnostics* diagnostics) {
  return Resolver(std::move(set), diagnostics).Run();
}

}  // namespace taskgov::config
