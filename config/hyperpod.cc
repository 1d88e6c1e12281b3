// SageMaker HyperPod task-governance API documents, with the exact AWS field names:
//   * CreateComputeQuota / UpdateComputeQuota requests (and DescribeComputeQuota output);
//   * CreateClusterSchedulerConfig / UpdateClusterSchedulerConfig requests (and Describe output).
// AWS defaults: Strategy LendAndBorrow, BorrowLimit 50, PreemptTeamTasks LowerPriority,
// FairShareWeight 0, ActivationState Enabled, FairShare Enabled. IdleResourceSharing's default is
// not stated by the API reference: absent is Disabled.

#include "config/dialects.h"

namespace taskgov::config {

namespace {

using scheduler::model::IdleComputeAllocation;
using scheduler::model::TaskPrioritization;
using scheduler::model::WithinTeamPreemption;

// Fields of DescribeComputeQuota / DescribeClusterSchedulerConfig output that carry no policy.
constexpr std::string_view kDescribeFields[] = {"ComputeQuotaArn",
                                                "ComputeQuotaVersion",
                                                "ClusterSchedulerConfigArn",
                                                "ClusterSchedulerConfigVersion",
                                                "Status",
                                                "FailureReason",
                                                "CreationTime",
                                                "CreatedBy",
                                                "LastModifiedTime",
                                                "LastModifiedBy",
                                                "ResponseMetadata"};

void IgnoreDescriptive(ObjectReader& r, ConfigSet* out) {
  r.Ignore("Name");
  r.Ignore("Description");
  r.Ignore("Tags");
  r.Ignore("ComputeQuotaId");
  r.Ignore("ClusterSchedulerConfigId");
  for (std::string_view f : kDescribeFields) r.Ignore(f);
  if (std::optional<std::string> arn = r.String("ClusterArn")) {
    out->cluster_arns.emplace_back(
        *arn, OriginOf(r.ctx(), r.PathOf("ClusterArn"), r.MarkOf("ClusterArn")));
  }
}

void DecodeComputeLine(ObjectReader& line, std::vector<ComputeSpec>* out) {
  const bool has_type = line.Has("InstanceType");
  std::optional<ComputeSpec> spec = DecodeCompute(line, kHyperPodComputeKeys);
  if (!has_type) {
    line.ctx().Error(line.PathOf("InstanceType"), line.mark(), "required field is missing");
    return;
  }
  if (!spec) return;
  spec->flavor = spec->instance_type;
  out->push_back(std::move(*spec));
}

void DecodeComputeList(ObjectReader& r, std::string_view key, std::vector<ComputeSpec>* out) {
  r.ForEachObject(key, [&](ObjectReader& line) { DecodeComputeLine(line, out); });
}

// ComputeQuotaConfig into `team`.
void DecodeQuotaConfig(ObjectReader& config, TeamSpec* team) {
  DecodeComputeList(config, "ComputeQuotaResources", &team->compute);
  if (auto v = config.Enum<WithinTeamPreemption>(
          "PreemptTeamTasks", {{"LowerPriority", WithinTeamPreemption::kLowerPriority},
                               {"Never", WithinTeamPreemption::kNever}})) {
    team->within_team = *v;
  }
  if (config.Has("ResourceSharingConfig")) {
    ObjectReader sharing = config.Object("ResourceSharingConfig");
    team->sharing_origin = OriginOf(sharing);
    if (auto s = sharing.Enum<SharingStrategy>(
            "Strategy", {{"DontLend", SharingStrategy::kDontLend},
                         {"Lend", SharingStrategy::kLend},
                         {"LendAndBorrow", SharingStrategy::kLendAndBorrow}})) {
      team->strategy = *s;
    }
    team->borrow_limit_percent = sharing.Integer("BorrowLimit", 0, 10000);
    DecodeComputeList(sharing, "AbsoluteBorrowLimits", &team->absolute_borrow_limits);
    if (team->strategy && *team->strategy != SharingStrategy::kLendAndBorrow) {
      for (std::string_view key : {"BorrowLimit", "AbsoluteBorrowLimits"}) {
        if (sharing.Has(key)) {
          sharing.ctx().Warn(sharing.PathOf(key), sharing.MarkOf(key),
                             "has no effect: a team whose Strategy is not LendAndBorrow never "
                             "borrows");
        }
      }
    }
  }
}

// ComputeQuotaTarget: returns TeamName (nullopt when missing or invalid: reported) and reads
// FairShareWeight into `team`; *has_weight says whether it was given.
std::optional<std::string> DecodeQuotaTarget(ObjectReader& r, TeamSpec* team, bool* has_weight) {
  std::optional<std::string> name;
  const bool has_target = r.Has("ComputeQuotaTarget");
  {
    ObjectReader target = r.Object("ComputeQuotaTarget");
    name = target.String("TeamName", /*required=*/target.present());
    if (!CheckNameField(target, "TeamName", "team name", name, NameRule::kDnsLabel)) name.reset();
    *has_weight = target.Has("FairShareWeight");
    if (auto w = target.Integer("FairShareWeight", 0, 100)) {
      team->fair_share_weight = static_cast<double>(*w);
      team->fair_share_weight_given = true;
    }
  }
  if (!has_target) {
    r.ctx().Error(r.PathOf("ComputeQuotaTarget"), r.mark(),
                  "required field is missing: ComputeQuotaTarget.TeamName names the team");
  }
  return name;
}

void DecodeComputeQuota(ObjectReader& r, ConfigSet* out) {
  IgnoreDescriptive(r, out);
  const bool is_update = r.Has("TargetVersion");
  std::optional<int64_t> target_version = r.Integer("TargetVersion", 0, 1LL << 31);

  TeamSpec team;
  team.dialect = Dialect::kHyperPod;
  team.origin = OriginOf(r);
  team.strategy = SharingStrategy::kLendAndBorrow;
  team.fair_share_weight = 0;  // AWS default
  team.within_team = WithinTeamPreemption::kLowerPriority;
  team.reclaim = scheduler::model::ReclaimPolicy::kAny;

  bool has_weight = false;
  std::optional<std::string> name = DecodeQuotaTarget(r, &team, &has_weight);
  const bool has_config = r.Has("ComputeQuotaConfig");
  if (has_config) {
    ObjectReader config = r.Object("ComputeQuotaConfig");
    DecodeQuotaConfig(config, &team);
  } else if (!is_update) {
    r.ctx().Error(r.PathOf("ComputeQuotaConfig"), r.mark(), "required field is missing");
  }
  const bool has_activation = r.Has("ActivationState");
  if (auto v = r.Enum<bool>("ActivationState", {{"Enabled", true}, {"Disabled", false}})) {
    team.active = *v;
  }
  if (!name) {
    team.checks_only = true;  // its compute lines are still checked
    out->teams.push_back(std::move(team));
    return;
  }
  team.name = *name;
  if (is_update) {
    TeamUpdateSpec update;
    update.origin = team.origin;
    update.team = team.name;
    update.target_version = target_version.value_or(0);
    update.has_compute = has_config;
    update.has_target_weight = has_weight;
    update.has_activation = has_activation;
    update.fields = std::move(team);
    out->team_updates.push_back(std::move(update));
    return;
  }
  out->teams.push_back(std::move(team));
}

// SchedulerConfig.PriorityClasses (at most 10) into `out`; returns how many are valid.
size_t DecodePriorityClasses(ObjectReader& config, ConfigSet* out) {
  const Node* list = config.List("PriorityClasses");
  if (list == nullptr) return 0;
  const std::string base = config.PathOf("PriorityClasses");
  if (list->items().size() > 10) {
    config.ctx().Error(base, list->mark(),
                       "at most 10 priority classes, got " + std::to_string(list->items().size()));
  }
  size_t classes = 0;
  for (size_t i = 0; i < list->items().size(); ++i) {
    ObjectReader pc(&config.ctx(), &list->items()[i], IndexPath(base, i));
    if (!pc.present()) continue;
    std::optional<std::string> name = pc.String("Name", /*required=*/true);
    std::optional<int64_t> weight = pc.Integer("Weight", 0, 100, /*required=*/true);
    if (!CheckNameField(pc, "Name", "priority class name", name, NameRule::kDnsLabel)) continue;
    if (!name || !weight) continue;
    ++classes;
    out->priority_classes.push_back(
        PriorityClassSpec{OriginOf(pc), {*name, static_cast<int32_t>(*weight)}});
  }
  return classes;
}

void DecodeSchedulerConfig(ObjectReader& r, ConfigSet* out) {
  IgnoreDescriptive(r, out);
  r.Ignore("TargetVersion");
  RecordSingleton(r, &out->scheduler_configs, "cluster scheduler config", "a cluster has one");
  ObjectReader config = r.Object("SchedulerConfig");
  if (!config.present()) {
    r.ctx().Error(r.PathOf("SchedulerConfig"), r.mark(), "required field is missing");
    return;
  }
  const size_t classes = DecodePriorityClasses(config, out);
  // With priority classes the cluster ranks tasks; without, it serves them in order.
  AssignSetting(
      &out->task_prioritization,
      classes > 0 ? TaskPrioritization::kTaskRanking : TaskPrioritization::kFirstComeFirstServe,
      OriginOf(config.ctx(), config.PathOf("PriorityClasses"), config.MarkOf("PriorityClasses")),
      "task prioritization (PriorityClasses)", config.ctx().diagnostics());
  if (auto fair = config.Enum<IdleComputeAllocation>(
          "FairShare", {{"Enabled", IdleComputeAllocation::kFairShare},
                        {"Disabled", IdleComputeAllocation::kFirstComeFirstServe}})) {
    AssignSetting(&out->idle_compute, *fair,
                  OriginOf(config.ctx(), config.PathOf("FairShare"), config.MarkOf("FairShare")),
                  "FairShare", config.ctx().diagnostics());
  }
  if (auto idle =
          config.Enum<bool>("IdleResourceSharing", {{"Enabled", true}, {"Disabled", false}})) {
    AssignSetting(&out->idle_resource_sharing, *idle,
                  OriginOf(config.ctx(), config.PathOf("IdleResourceSharing"),
                           config.MarkOf("IdleResourceSharing")),
                  "IdleResourceSharing", config.ctx().diagnostics());
  }
}

}  // namespace

void DecodeHyperPod(ObjectReader& doc, ConfigSet* out) {
  if (doc.Has("SchedulerConfig") || doc.Has("ClusterSchedulerConfigId")) {
    DecodeSchedulerConfig(doc, out);
    return;
  }
  DecodeComputeQuota(doc, out);
}

}  // namespace taskgov::config
