#pragma once

// ConfigSet: what the documents of a configuration directory say, before resolution. Each dialect
// decoder (native, HyperPod, Kueue, Volcano) appends to one ConfigSet; Resolve() then applies the
// catalogue, the ratio defaults, the sharing strategies and the dialect defaults, checks the
// cross-document rules (duplicate teams, namespaces claimed twice, cohort cycles, ...) and builds
// the scheduler::model::Policy. Keeping the decoders free of cross-document knowledge is what lets
// a directory mix dialects and lets every document be validated on its own.
//
// Every element remembers its Origin (file, document, path, line) so that a resolution error
// points at the text that caused it. Value types; not synchronised.

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "config/catalogue.h"
#include "config/diagnostics.h"
#include "scheduler/model/policy.h"

namespace taskgov::config {

struct Origin {
  std::string file;
  int document = -1;
  std::string path;
  Mark mark;
};

enum class Dialect { kNative, kHyperPod, kKueue, kVolcano };
[[nodiscard]] std::string_view DialectName(Dialect d);

enum class SharingStrategy { kDontLend, kLend, kLendAndBorrow };

// A setting of the cluster policy and the document that set it; two documents may set the same
// setting only to the same value.
template <typename T>
struct Setting {
  std::optional<T> value;
  Origin origin;
};

// Records `value` for setting `what`, or reports a conflict when another document already set it
// to a different value.
template <typename T>
void AssignSetting(Setting<T>* setting, T value, Origin origin, std::string_view what,
                   Diagnostics* diagnostics) {
  if (setting->value.has_value()) {
    if (!(*setting->value == value)) {
      const Origin& first = setting->origin;
      diagnostics->Error(origin.file, origin.document, origin.path, origin.mark,
                         std::string(what) + " conflicts with the value set in " + first.file +
                             (first.path.empty() ? std::string() : " at " + first.path));
    }
    return;
  }
  setting->value = std::move(value);
  setting->origin = std::move(origin);
}

// A HyperPod-style quota line for one instance type (ComputeQuotaResourceConfig / native
// `compute[]`), expanded by DeriveQuota at resolution.
struct ComputeSpec {
  Origin origin;
  std::string instance_type;  // catalogue key
  std::string flavor;         // the flavor the quota is on (defaults to instance_type)
  ComputeAmounts amounts;
  // false: an amount had an error (reported); resolution only checks that the instance type is
  // known, so that every error of the line is reported in one run.
  bool amounts_valid = true;
};

// An explicit quota line for any resource (Kueue `resources[]`, native `resources[]`, Volcano).
// Unset fields keep what compute lines and the sharing strategy give.
struct LineSpec {
  Origin origin;
  std::string flavor;  // empty for Volcano queues: the configured Volcano flavor
  std::string resource;
  std::optional<int64_t> nominal;
  std::optional<int64_t> borrowing_limit;
  std::optional<int64_t> lending_limit;
};

struct TeamSpec {
  Origin origin;
  Dialect dialect = Dialect::kNative;
  std::string name;

  std::optional<std::vector<std::string>> namespaces;  // explicit; else the dialect default
  Origin namespaces_origin;
  // Explicit; else the dialect default. Volcano: the parent queue ("root" when none); a Volcano
  // queue that other queues name as parent becomes a cohort, not a team.
  std::optional<std::string> cohort;
  Origin cohort_origin;
  double fair_share_weight = 1.0;
  bool fair_share_weight_given = false;  // the document set it (else the dialect's default)

  // HyperPod / native sharing. nullopt (Kueue, Volcano): lines carry their own limits and an
  // unset limit means unlimited.
  std::optional<SharingStrategy> strategy;
  std::optional<int64_t> borrow_limit_percent;  // nullopt: 50 (HyperPod default)
  Origin sharing_origin;

  std::vector<ComputeSpec> compute;
  std::vector<ComputeSpec> absolute_borrow_limits;
  std::vector<ComputeSpec> lending_limits;
  std::vector<LineSpec> lines;
  // Kueue: the coveredResources of each of the ClusterQueue's resource groups.
  std::vector<std::vector<std::string>> resource_groups;

  std::optional<scheduler::model::QueueingStrategy> queueing;  // nullopt: the cluster default
  scheduler::model::WithinTeamPreemption within_team =
      scheduler::model::WithinTeamPreemption::kLowerPriority;
  scheduler::model::ReclaimPolicy reclaim = scheduler::model::ReclaimPolicy::kAny;
  scheduler::model::BorrowWithinCohort borrow_within_cohort;
  bool active = true;
  bool reclaimable = true;
  std::string cluster_queue;  // empty: the dialect default
  // Kueue: the ClusterQueue's namespaceSelector; Volcano: every namespace; else none (only the
  // team's own namespaces may use its queues).
  std::optional<scheduler::model::LabelSelector> namespace_selector;
  // Borrowing limit of the zero-nominal lines resolution adds for resources the team does not
  // mention on a flavor it uses: false → 0 (Kueue: an uncovered resource cannot be used;
  // HyperPod/native: BorrowLimit% of 0), true → unlimited (Volcano: no capability means none).
  bool unlisted_resources_borrowable = false;
  // A decoding error made the team unusable (its name is missing or invalid; reported).
  // Resolution still checks its quota lines, so that every error of the document is reported in
  // one run, but the team joins no policy.
  bool checks_only = false;
};

// A HyperPod UpdateComputeQuota request, applied over the team's CreateComputeQuota.
struct TeamUpdateSpec {
  Origin origin;
  std::string team;
  int64_t target_version = 0;
  TeamSpec fields;  // only the has_* parts are applied
  bool has_compute = false;
  bool has_target_weight = false;
  bool has_activation = false;
};

struct FlavorSpec {
  Origin origin;
  scheduler::model::Flavor flavor;
  std::string instance_type;  // for ratio defaults when the flavor name is not an instance type
  std::string topology_name;  // a Kueue ResourceFlavor's spec.topologyName ("" none)
};

// A Kueue Topology: its levels' node labels, widest first.
struct TopologySpec {
  Origin origin;
  std::string name;
  std::vector<std::string> levels;
  bool valid = true;  // false: its errors were reported; a flavor naming it gets no levels
};

struct CohortSpec {
  Origin origin;
  std::string name;
  std::string parent;
  // The quota the cohort holds itself (Kueue Cohort spec.resourceGroups): nominal only.
  std::vector<LineSpec> lines;  // Kueue Cohort spec.fairSharing.weight (unset: 1).
  std::optional<double> fair_share_weight;
};

struct LocalQueueSpec {
  Origin origin;
  std::string namespace_;
  std::string name;
  std::string cluster_queue;
};

struct PriorityClassSpec {
  Origin origin;
  scheduler::model::PriorityClass priority_class;
};

struct InstanceTypeOverride {
  Origin origin;
  std::string name;
  std::optional<std::string> accelerator_resource;
  std::optional<int64_t> accelerators;
  std::optional<int64_t> vcpus;
  std::optional<int64_t> memory_mib;
  std::optional<std::vector<MigProfile>> mig_profiles;
};

struct ConfigSet {
  // Cluster policy settings.
  Setting<scheduler::model::TaskPrioritization> task_prioritization;
  Setting<scheduler::model::QueueingStrategy> queueing;
  Setting<scheduler::model::IdleComputeAllocation> idle_compute;
  Setting<bool> use_pod_priority_class_name;
  Setting<int64_t> grace_period_seconds;
  Setting<int64_t> minimum_runtime_seconds;
  Setting<std::vector<scheduler::model::FairShareStrategy>> fair_sharing_strategies;
  Setting<int64_t> gang_timeout_seconds;
  Setting<int64_t> starvation_bound_seconds;
  // HyperPod SchedulerConfig.IdleResourceSharing / native idleResourceSharing (Enabled: true).
  Setting<bool> idle_resource_sharing;
  Setting<scheduler::model::NoTeamAction> no_team;
  Setting<std::string> team_pod_label;        // teamResolution.podLabel
  Setting<std::string> team_namespace_label;  // teamResolution.namespaceLabel
  Setting<std::string> instance_type_label;
  Setting<std::string> default_cohort;   // native teams that name no cohort
  Setting<std::string> hyperpod_cohort;  // all HyperPod teams (default "hyperpod")
  Setting<std::string> volcano_flavor;   // the flavor of Volcano queues (default "default")
  // `emptyPolicy: true`: the configuration defines no team on purpose. Without it a configuration
  // with no team is refused, so that an empty, truncated or deleted policy cannot switch
  // governance off.
  Setting<bool> empty_policy;
  std::vector<Origin> policy_documents;   // TaskGovernancePolicy documents, to refuse a second
  std::vector<Origin> scheduler_configs;  // HyperPod CreateClusterSchedulerConfig documents
  std::vector<std::pair<std::string, Origin>> cluster_arns;

  std::vector<PriorityClassSpec> priority_classes;
  std::vector<FlavorSpec> flavors;
  std::vector<TopologySpec> topologies;
  std::vector<InstanceTypeOverride> instance_types;
  std::vector<TeamSpec> teams;
  std::vector<TeamUpdateSpec> team_updates;
  std::vector<CohortSpec> cohorts;
  std::vector<LocalQueueSpec> local_queues;
};

}  // namespace taskgov::config
