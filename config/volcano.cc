// Volcano Queue (scheduling.volcano.sh/v1beta1). A queue is a team named after it, with quota
// lines on the Volcano flavor (TaskGovernancePolicy.volcanoFlavor, default "default"):
//   deserved[r]          → nominal
//   capability[r]        → the ceiling: borrowingLimit = capability − deserved (unset: unlimited)
//   guarantee.resource[r] → the part never lent: lendingLimit = deserved − guarantee (unset: all)
//   weight               → fair-share weight (default 1)
//   reclaimable: false   → never reclaimed from
//   parent               → the cohort (default "root"); a queue that others name as parent is a
//                          cohort, not a team.

#include <algorithm>
#include <map>

#include "config/dialects.h"

namespace taskgov::config {

namespace {

using scheduler::model::kUnlimited;

using ResourceAmounts = std::vector<std::pair<std::string, int64_t>>;

// metadata.name, required and non-empty; nullopt when unusable (reported).
std::optional<std::string> ReadQueueName(ObjectReader& doc) {
  ObjectReader m = doc.Object("metadata");
  if (!m.present()) {
    doc.ctx().Error(doc.PathOf("metadata"), doc.mark(), "required field is missing");
  }
  std::optional<std::string> name = m.String("name", /*required=*/m.present());
  if (name && name->empty()) {
    m.ctx().Error(m.PathOf("name"), m.MarkOf("name"), "must not be empty");
    name.reset();
  }
  if (!CheckNameField(m, "name", "queue name", name, NameRule::kDnsSubdomain)) name.reset();
  m.IgnoreRest();
  return name;
}

// The three resource lists of a queue's spec.
struct QueueQuota {
  std::optional<ResourceAmounts> capability;
  std::optional<ResourceAmounts> deserved;
  std::optional<ResourceAmounts> guarantee;
};

// Reads the queue's spec into `team` (weight, reclaimable, parent, state) and returns its
// quota lists; warns about the fields taskgov does not honour.
QueueQuota ReadQueueSpec(ObjectReader& spec, TeamSpec* team) {
  QueueQuota quota;
  if (auto w = spec.Integer("weight", 0, 2147483647)) team->fair_share_weight = *w;
  quota.capability = spec.ResourceMap("capability");
  quota.deserved = spec.ResourceMap("deserved");
  if (spec.Has("guarantee")) {
    ObjectReader g = spec.Object("guarantee");
    quota.guarantee = g.ResourceMap("resource");
  }
  if (auto reclaimable = spec.Bool("reclaimable")) team->reclaimable = *reclaimable;
  std::optional<std::string> parent = spec.String("parent");
  if (!CheckNameField(spec, "parent", "queue name", parent, NameRule::kDnsSubdomain,
                      /*allow_empty=*/true)) {
    parent.reset();
  }
  if (parent) {
    team->cohort = parent->empty() ? "root" : *parent;
    team->cohort_origin = OriginOf(spec.ctx(), spec.PathOf("parent"), spec.MarkOf("parent"));
  } else {
    team->cohort = "root";
  }
  if (auto priority = spec.Integer("priority", -2147483648LL, 2147483647LL)) {
    if (*priority != 0) {
      spec.ctx().Warn(spec.PathOf("priority"), spec.MarkOf("priority"),
                      "not honoured: taskgov orders teams by fair share, not by queue priority");
    }
  }
  spec.NotHonoured("type", "taskgov ignores the queue type");
  spec.NotHonoured("affinity", "taskgov leaves node-group affinity to the scheduler");
  spec.NotHonoured("extendClusters", "taskgov governs one cluster");
  spec.NotHonoured("dequeueStrategy", "taskgov orders pods by its task prioritization");
  if (auto state = spec.String("state")) {
    team->active = *state != "Closed" && *state != "Closing";
  }
  return quota;
}

// One line per resource named in any of the three lists, in resource order: deserved is the
// nominal quota, capability − deserved the borrowing limit, deserved − guarantee the lending
// limit. nullopt when a capability is below or a guarantee above deserved (reported).
std::optional<std::vector<LineSpec>> QuotaLines(ObjectReader& spec, const QueueQuota& quota) {
  std::map<std::string, LineSpec> lines;
  auto line_for = [&](const std::string& resource, const std::string& path) -> LineSpec& {
    auto [it, inserted] = lines.try_emplace(resource);
    if (inserted) {
      it->second.resource = resource;
      it->second.origin = OriginOf(spec.ctx(), path, spec.mark());
      it->second.nominal = 0;
    }
    return it->second;
  };
  for (const auto& [r, q] : quota.deserved.value_or(ResourceAmounts{})) {
    line_for(r, JoinPath(spec.PathOf("deserved"), r)).nominal = q;
  }
  bool ok = true;
  for (const auto& [r, q] : quota.capability.value_or(ResourceAmounts{})) {
    LineSpec& line = line_for(r, JoinPath(spec.PathOf("capability"), r));
    if (q < *line.nominal) {
      spec.ctx().Error(JoinPath(spec.PathOf("capability"), r), spec.MarkOf("capability"),
                       "capability " + scheduler::model::FormatQuantity(r, q) +
                           " is below deserved " +
                           scheduler::model::FormatQuantity(r, *line.nominal));
      ok = false;
      continue;
    }
    line.borrowing_limit = q - *line.nominal;
  }
  for (const auto& [r, q] : quota.guarantee.value_or(ResourceAmounts{})) {
    const std::string path = JoinPath(spec.PathOf("guarantee") + ".resource", r);
    LineSpec& line = line_for(r, path);
    if (q > *line.nominal) {
      spec.ctx().Error(path, spec.MarkOf("guarantee"),
                       "guarantee " + scheduler::model::FormatQuantity(r, q) +
                           " is above deserved " +
                           scheduler::model::FormatQuantity(r, *line.nominal));
      ok = false;
      continue;
    }
    line.lending_limit = *line.nominal - q;
  }
  if (!ok) return std::nullopt;
  std::vector<LineSpec> out;
  for (auto& [r, line] : lines) out.push_back(std::move(line));
  return out;
}

}  // namespace

void DecodeVolcano(ObjectReader& doc, std::string_view /*kind*/, ConfigSet* out) {
  std::optional<std::string> name = ReadQueueName(doc);
  doc.Ignore("status");
  TeamSpec team;
  team.dialect = Dialect::kVolcano;
  team.origin = OriginOf(doc);
  team.within_team = scheduler::model::WithinTeamPreemption::kLowerPriority;
  team.reclaim = scheduler::model::ReclaimPolicy::kAny;
  team.unlisted_resources_borrowable = true;
  team.namespaces = std::vector<std::string>{};

  ObjectReader spec = doc.Object("spec");
  const QueueQuota quota = ReadQueueSpec(spec, &team);
  std::optional<std::vector<LineSpec>> lines = QuotaLines(spec, quota);
  if (!quota.deserved && !quota.guarantee) {
    spec.ctx().Warn(spec.PathOf("deserved"), spec.mark(),
                    "absent: taskgov gives the queue no nominal quota (Volcano's proportion "
                    "plugin would derive one from weight); it may borrow up to its capability");
  }
  if (!name || !lines) return;
  team.name = *name;
  team.cluster_queue = *name;
  team.lines = std::move(*lines);
  out->teams.push_back(std::move(team));
}

}  // namespace taskgov::config
