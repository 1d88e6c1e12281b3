// The native taskgov schema (apiVersion taskgov.io/v1): TaskGovernancePolicy and Team documents.
// config/README.md documents every field with a complete example.

#include <algorithm>
#include <limits>

#include "config/dialects.h"
#include "scheduler/common/k8s_names.h"

namespace taskgov::config {

namespace {

using scheduler::model::IdleComputeAllocation;
using scheduler::model::NoTeamAction;
using scheduler::model::QueueingStrategy;
using scheduler::model::ReclaimPolicy;
using scheduler::model::TaskPrioritization;
using scheduler::model::WithinTeamPreemption;

constexpr int64_t kMaxSeconds = int64_t{10} * 365 * 24 * 3600;

template <typename T>
void SetIf(std::optional<T> value, const ObjectReader& r, std::string_view key, Setting<T>* s) {
  if (!value) return;
  AssignSetting(s, std::move(*value), OriginOf(r.ctx(), r.PathOf(key), r.MarkOf(key)), key,
                r.ctx().diagnostics());
}

// A setting naming a cohort or flavor: set only when it is a valid name (else reported).
void SetNameIf(ObjectReader& r, std::string_view key, std::string_view what, bool allow_empty,
               Setting<std::string>* s) {
  std::optional<std::string> name = r.String(key);
  if (!CheckNameField(r, key, what, name, NameRule::kDnsSubdomain, allow_empty)) return;
  SetIf(std::move(name), r, key, s);
}

// Kueue's fairSharing.preemptionStrategies: a non-empty list of distinct strategy names.
std::optional<std::vector<scheduler::model::FairShareStrategy>> ReadFairSharingStrategies(
    ObjectReader& r, std::string_view key) {
  std::optional<std::vector<std::string>> names = r.StringList(key);
  if (!names) return std::nullopt;
  std::vector<scheduler::model::FairShareStrategy> out;
  for (size_t i = 0; i < names->size(); ++i) {
    const std::string& name = (*names)[i];
    scheduler::model::FairShareStrategy s;
    if (name == "LessThanOrEqualToFinalShare") {
      s = scheduler::model::FairShareStrategy::kLessThanOrEqualToFinalShare;
    } else if (name == "LessThanInitialShare") {
      s = scheduler::model::FairShareStrategy::kLessThanInitialShare;
    } else {
      r.ctx().Error(
          r.PathOf(key) + "[" + std::to_string(i) + "]", r.MarkOf(key),
          "must be one of LessThanOrEqualToFinalShare, LessThanInitialShare; got '" + name + "'");
      return std::nullopt;
    }
    if (std::find(out.begin(), out.end(), s) != out.end()) {
      r.ctx().Error(r.PathOf(key) + "[" + std::to_string(i) + "]", r.MarkOf(key),
                    "'" + name + "' is listed twice");
      return std::nullopt;
    }
    out.push_back(s);
  }
  if (out.empty()) {
    r.ctx().Error(r.PathOf(key), r.MarkOf(key), "must name at least one strategy");
    return std::nullopt;
  }
  return out;
}

std::optional<QueueingStrategy> ReadQueueing(ObjectReader& r, std::string_view key) {
  return r.Enum<QueueingStrategy>(key, {{"BestEffortFIFO", QueueingStrategy::kBestEffortFIFO},
                                        {"StrictFIFO", QueueingStrategy::kStrictFIFO}});
}

void DecodeComputeLine(ObjectReader& line, std::vector<ComputeSpec>* out) {
  std::optional<std::string> flavor = line.String("flavor");
  std::optional<ComputeSpec> spec = DecodeCompute(line, kNativeComputeKeys);
  if (!spec) return;
  if (flavor && flavor->empty()) {
    line.ctx().Error(line.PathOf("flavor"), line.MarkOf("flavor"), "must not be empty");
    return;
  }
  if (!CheckNameField(line, "flavor", "flavor name", flavor, NameRule::kDnsSubdomain)) return;
  if (spec->instance_type.empty() && !flavor) {
    line.ctx().Error(line.path(), line.mark(), "needs instanceType or flavor");
    return;
  }
  spec->flavor = flavor ? *flavor : spec->instance_type;
  out->push_back(std::move(*spec));
}

void DecodeComputeList(ObjectReader& r, std::string_view key, std::vector<ComputeSpec>* out) {
  r.ForEachObject(
      key, [&](ObjectReader& line) { DecodeComputeLine(line, out); }, /*null_is_error=*/true);
}

void DecodeResourceLine(ObjectReader& line, std::vector<LineSpec>* out) {
  LineSpec spec;
  spec.origin = OriginOf(line);
  std::optional<std::string> flavor = line.String("flavor", /*required=*/true);
  std::optional<std::string> name = line.String("name", /*required=*/true);
  if (!flavor || !name) return;
  if (flavor->empty() || name->empty()) {
    line.ctx().Error(line.path(), line.mark(), "flavor and name must not be empty");
    return;
  }
  if (!CheckNameField(line, "flavor", "flavor name", flavor, NameRule::kDnsSubdomain)) return;
  spec.flavor = *flavor;
  spec.resource = *name;
  bool ok = true;
  auto quantity = [&](std::string_view key, std::optional<int64_t>* field) {
    const bool has = line.Has(key);
    *field = line.Quantity(key, spec.resource);
    if (has && !*field) ok = false;
  };
  quantity("nominalQuota", &spec.nominal);
  quantity("borrowingLimit", &spec.borrowing_limit);
  quantity("lendingLimit", &spec.lending_limit);
  if (ok) out->push_back(std::move(spec));
}

// namespaces: explicit namespace names, each a DNS label.
void DecodeNamespaces(ObjectReader& r, TeamSpec* team) {
  if (!r.Has("namespaces")) return;
  team->namespaces_origin = OriginOf(r.ctx(), r.PathOf("namespaces"), r.MarkOf("namespaces"));
  std::optional<std::vector<std::string>> namespaces = r.StringList("namespaces");
  if (!namespaces) return;
  for (size_t i = 0; i < namespaces->size(); ++i) {
    (void)CheckName(r.ctx(), IndexPath(r.PathOf("namespaces"), i), r.MarkOf("namespaces"),
                    "namespace", (*namespaces)[i], NameRule::kDnsLabel);
  }
  team->namespaces = std::move(namespaces);
}

// sharing: the strategy (default LendAndBorrow), borrowLimit and the absolute limits.
void DecodeSharing(ObjectReader& r, TeamSpec* team) {
  if (r.Has("sharing")) {
    ObjectReader sharing = r.Object("sharing");
    team->sharing_origin = OriginOf(sharing);
    team->strategy = sharing.Enum<SharingStrategy>(
        "strategy", {{"DontLend", SharingStrategy::kDontLend},
                     {"Lend", SharingStrategy::kLend},
                     {"LendAndBorrow", SharingStrategy::kLendAndBorrow}});
    team->borrow_limit_percent = sharing.Integer("borrowLimit", 0, 10000);
    DecodeComputeList(sharing, "absoluteBorrowLimits", &team->absolute_borrow_limits);
    DecodeComputeList(sharing, "lendingLimits", &team->lending_limits);
  }
  if (!team->strategy) team->strategy = SharingStrategy::kLendAndBorrow;
}

void DecodeTeam(ObjectReader& r, ConfigSet* out) {
  TeamSpec team;
  team.dialect = Dialect::kNative;
  team.origin = OriginOf(r);
  std::optional<std::string> name = r.String("name", /*required=*/true);
  if (!CheckNameField(r, "name", "team name", name, NameRule::kDnsLabel)) team.checks_only = true;
  DecodeNamespaces(r, &team);
  if (r.Has("cohort")) {
    team.cohort_origin = OriginOf(r.ctx(), r.PathOf("cohort"), r.MarkOf("cohort"));
    team.cohort = r.String("cohort");
    (void)CheckNameField(r, "cohort", "cohort name", team.cohort, NameRule::kDnsSubdomain,
                         /*allow_empty=*/true);
  }
  if (std::optional<double> w = r.Number("fairShareWeight", 0, 1e9)) {
    team.fair_share_weight = *w;
    team.fair_share_weight_given = true;
  }

  DecodeSharing(r, &team);

  if (auto v = r.Enum<WithinTeamPreemption>(
          "preemptTeamTasks",
          {{"LowerPriority", WithinTeamPreemption::kLowerPriority},
           {"LowerOrNewerEqualPriority", WithinTeamPreemption::kLowerOrNewerEqualPriority},
           {"Never", WithinTeamPreemption::kNever}})) {
    team.within_team = *v;
  }
  if (auto v = r.Enum<ReclaimPolicy>("reclaimWithinCohort",
                                     {{"Any", ReclaimPolicy::kAny},
                                      {"LowerPriority", ReclaimPolicy::kLowerPriority},
                                      {"Never", ReclaimPolicy::kNever}})) {
    team.reclaim = *v;
  }
  ReadBorrowWithinCohort(r, &team.borrow_within_cohort);
  team.queueing = ReadQueueing(r, "queueingStrategy");
  if (auto v = r.Enum<bool>("activationState", {{"Enabled", true}, {"Disabled", false}})) {
    team.active = *v;
  }
  if (auto v = r.Bool("reclaimable")) team.reclaimable = *v;
  if (auto v = r.String("clusterQueue")) {
    if (CheckNameField(r, "clusterQueue", "ClusterQueue name", v, NameRule::kDnsSubdomain)) {
      team.cluster_queue = *v;
    }
  }

  DecodeComputeList(r, "compute", &team.compute);
  r.ForEachObject("resources", [&](ObjectReader& line) { DecodeResourceLine(line, &team.lines); });
  if (name) {
    team.name = *name;
  } else {
    team.checks_only = true;
  }
  out->teams.push_back(std::move(team));
}

void DecodeFlavor(ObjectReader& f, ConfigSet* out) {
  FlavorSpec spec;
  spec.origin = OriginOf(f);
  std::optional<std::string> name = f.String("name", /*required=*/true);
  if (auto labels = f.StringMap("nodeLabels")) {
    for (auto& [k, v] : *labels) spec.flavor.node_labels.emplace(k, v);
  }
  if (auto t = f.String("instanceType")) spec.instance_type = *t;
  if (auto all = f.Bool("matchAllNodes")) spec.flavor.matches_all_nodes = *all;
  if (!name || name->empty()) return;
  if (!CheckNameField(f, "name", "flavor name", name, NameRule::kDnsSubdomain)) return;
  spec.flavor.name = *name;
  if (spec.flavor.node_labels.empty() && !spec.flavor.matches_all_nodes) {
    // Only the instance type: the flavor is the nodes labelled with it.
    if (spec.instance_type.empty()) {
      f.ctx().Error(f.path(), f.mark(),
                    "a flavor needs nodeLabels, instanceType or matchAllNodes: true");
      return;
    }
  }
  if (spec.flavor.matches_all_nodes && !spec.flavor.node_labels.empty()) {
    f.ctx().Error(f.PathOf("matchAllNodes"), f.MarkOf("matchAllNodes"),
                  "matchAllNodes and nodeLabels exclude each other");
    return;
  }
  out->flavors.push_back(std::move(spec));
}

// migProfiles; nullopt when absent (or not a list: reported).
std::optional<std::vector<MigProfile>> DecodeMigProfiles(ObjectReader& t) {
  std::vector<MigProfile> parsed;
  const Node* list = t.ForEachObject("migProfiles", [&](ObjectReader& p) {
    std::optional<std::string> pname = p.String("name", /*required=*/true);
    std::optional<int64_t> per = p.Integer("perAccelerator", 1, 64, /*required=*/true);
    if (pname && per) parsed.push_back(MigProfile{*pname, *per});
  });
  if (list == nullptr) return std::nullopt;
  return parsed;
}

void DecodeInstanceType(ObjectReader& t, ConfigSet* out) {
  InstanceTypeOverride o;
  o.origin = OriginOf(t);
  std::optional<std::string> name = t.String("name", /*required=*/true);
  o.accelerator_resource = t.String("acceleratorResource");
  o.accelerators = t.Integer("accelerators", 0, 1000000);
  o.vcpus = t.Integer("vCpu", 0, 1000000);
  // x GiB is x × 1024 MiB, which the quantity grammar computes exactly as "xKi" units.
  o.memory_mib = t.Decimal("memoryInGiB", "Ki", scheduler::model::QuantityUnit::kUnits);
  o.mig_profiles = DecodeMigProfiles(t);
  if (!name || name->empty()) return;
  o.name = *name;
  out->instance_types.push_back(std::move(o));
}

// teamResolution: the pod and namespace label keys that name a pod's team.
void DecodeTeamResolution(ObjectReader& r, ConfigSet* out) {
  if (!r.Has("teamResolution")) return;
  ObjectReader t = r.Object("teamResolution");
  for (const char* key : {"podLabel", "namespaceLabel"}) {
    std::optional<std::string> label = t.String(key);
    if (label && !label->empty() && !common::IsQualifiedName(*label)) {
      t.ctx().Error(t.PathOf(key), t.MarkOf(key),
                    "'" + *label +
                        "' is not a label key (an optional DNS subdomain prefix and "
                        "'/', then at most 63 of [A-Za-z0-9-_.])");
      continue;
    }
    SetIf(label, t, key,
          std::string_view(key) == "podLabel" ? &out->team_pod_label : &out->team_namespace_label);
  }
}

void DecodePriorityClass(ObjectReader& pc, ConfigSet* out) {
  std::optional<std::string> name = pc.String("name", /*required=*/true);
  std::optional<int64_t> weight = pc.Integer("weight", 0, 100, /*required=*/true);
  if (name && name->empty()) {
    pc.ctx().Error(pc.PathOf("name"), pc.MarkOf("name"), "must not be empty");
    return;
  }
  if (!CheckNameField(pc, "name", "priority class name", name, NameRule::kDnsSubdomain)) return;
  if (!name || !weight) return;
  out->priority_classes.push_back(
      PriorityClassSpec{OriginOf(pc), {*name, static_cast<int32_t>(*weight)}});
}

void DecodePolicy(ObjectReader& r, ConfigSet* out) {
  RecordSingleton(r, &out->policy_documents, "TaskGovernancePolicy",
                  "put the cluster policy in one document");
  r.Object("metadata").IgnoreRest();
  SetIf(r.Enum<TaskPrioritization>(
            "taskPrioritization",
            {{"TaskRanking", TaskPrioritization::kTaskRanking},
             {"FirstComeFirstServe", TaskPrioritization::kFirstComeFirstServe}}),
        r, "taskPrioritization", &out->task_prioritization);
  SetIf(ReadQueueing(r, "queueingStrategy"), r, "queueingStrategy", &out->queueing);
  SetIf(r.Integer("starvationBoundSeconds", 0, kMaxSeconds), r, "starvationBoundSeconds",
        &out->starvation_bound_seconds);
  SetIf(r.Enum<IdleComputeAllocation>(
            "idleComputeAllocation",
            {{"FairShare", IdleComputeAllocation::kFairShare},
             {"FirstComeFirstServe", IdleComputeAllocation::kFirstComeFirstServe}}),
        r, "idleComputeAllocation", &out->idle_compute);
  SetIf(r.Enum<bool>("idleResourceSharing", {{"Enabled", true}, {"Disabled", false}}), r,
        "idleResourceSharing", &out->idle_resource_sharing);
  SetIf(r.Bool("usePodPriorityClassName"), r, "usePodPriorityClassName",
        &out->use_pod_priority_class_name);
  SetIf(r.Enum<NoTeamAction>("podsWithoutTeam", {{"PassThrough", NoTeamAction::kPassThrough},
                                                 {"Refuse", NoTeamAction::kRefuse}}),
        r, "podsWithoutTeam", &out->no_team);
  DecodeTeamResolution(r, out);
  SetIf(r.String("instanceTypeLabel"), r, "instanceTypeLabel", &out->instance_type_label);
  SetIf(r.Bool("emptyPolicy"), r, "emptyPolicy", &out->empty_policy);
  SetNameIf(r, "defaultCohort", "cohort name", /*allow_empty=*/true, &out->default_cohort);
  SetNameIf(r, "hyperpodCohort", "cohort name", /*allow_empty=*/true, &out->hyperpod_cohort);
  SetNameIf(r, "volcanoFlavor", "flavor name", /*allow_empty=*/false, &out->volcano_flavor);
  if (r.Has("preemption")) {
    ObjectReader p = r.Object("preemption");
    SetIf(p.Integer("gracePeriodSeconds", 0, kMaxSeconds), p, "gracePeriodSeconds",
          &out->grace_period_seconds);
    SetIf(p.Integer("minimumRuntimeSeconds", 0, kMaxSeconds), p, "minimumRuntimeSeconds",
          &out->minimum_runtime_seconds);
    SetIf(ReadFairSharingStrategies(p, "fairSharingStrategies"), p, "fairSharingStrategies",
          &out->fair_sharing_strategies);
  }
  if (r.Has("gangs")) {
    ObjectReader g = r.Object("gangs");
    SetIf(g.Integer("timeoutSeconds", 1, kMaxSeconds), g, "timeoutSeconds",
          &out->gang_timeout_seconds);
  }
  r.ForEachObject("priorityClasses", [&](ObjectReader& pc) { DecodePriorityClass(pc, out); });
  r.ForEachObject("flavors", [&](ObjectReader& f) { DecodeFlavor(f, out); });
  r.ForEachObject("instanceTypes", [&](ObjectReader& t) { DecodeInstanceType(t, out); });
  r.ForEachObject(
      "teams", [&](ObjectReader& team) { DecodeTeam(team, out); }, /*null_is_error=*/true);
}

}  // namespace

void DecodeNative(ObjectReader& doc, std::string_view kind, ConfigSet* out) {
  if (kind == "TaskGovernancePolicy") {
    DecodePolicy(doc, out);
    return;
  }
  doc.Object("metadata").IgnoreRest();
  DecodeTeam(doc, out);
}

}  // namespace taskgov::config
