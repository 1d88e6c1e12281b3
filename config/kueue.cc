// Kueue objects (kueue.x-k8s.io/v1beta1 and v1beta2): ClusterQueue, LocalQueue, ResourceFlavor,
// WorkloadPriorityClass and Cohort, as `kubectl get -o yaml` prints them. A ClusterQueue is a
// team named after it; status and bookkeeping metadata are skipped.

#include <algorithm>

#include "config/dialects.h"

namespace taskgov::config {

namespace {

using scheduler::model::LabelSelector;
using scheduler::model::QueueingStrategy;
using scheduler::model::ReclaimPolicy;
using scheduler::model::WithinTeamPreemption;

struct Meta {
  std::optional<std::string> name;
  std::optional<std::string> namespace_;
};

Meta ReadMetadata(ObjectReader& doc, bool namespaced) {
  Meta meta;
  ObjectReader m = doc.Object("metadata");
  if (!m.present()) {
    doc.ctx().Error(doc.PathOf("metadata"), doc.mark(), "required field is missing");
    return meta;
  }
  meta.name = m.String("name", /*required=*/true);
  if (!CheckNameField(m, "name", "object name", meta.name, NameRule::kDnsSubdomain)) {
    meta.name.reset();
  }
  if (namespaced) {
    meta.namespace_ = m.String("namespace", /*required=*/true);
    if (!CheckNameField(m, "namespace", "namespace", meta.namespace_, NameRule::kDnsLabel)) {
      meta.namespace_.reset();
    }
  }
  m.IgnoreRest();
  return meta;
}

// A Kueue weight quantity ("1", "0.5", 2) as a double.
std::optional<double> ReadWeight(ObjectReader& r, std::string_view key) {
  std::optional<int64_t> millis = r.Quantity(key, "cpu");  // cpu: parsed in thousandths
  if (!millis) return std::nullopt;
  return static_cast<double>(*millis) / 1000.0;
}

bool Contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

// One resources[] entry of a flavor: its name (appended to *names when present) and, when its
// quotas read, the line.
std::optional<LineSpec> DecodeQuotaLine(ObjectReader& res, std::vector<std::string>* names) {
  std::optional<std::string> rname = res.String("name", /*required=*/true);
  if (!rname) return std::nullopt;
  names->push_back(*rname);
  LineSpec line;
  line.origin = OriginOf(res);
  line.resource = *rname;
  bool ok = true;
  line.nominal = res.Quantity("nominalQuota", *rname, /*required=*/true);
  if (!line.nominal) ok = false;
  for (auto [key, field] : {std::pair{"borrowingLimit", &line.borrowing_limit},
                            std::pair{"lendingLimit", &line.lending_limit}}) {
    const bool has = res.Has(key);
    *field = res.Quantity(key, *rname);
    if (has && !*field) ok = false;
  }
  if (!ok) return std::nullopt;
  return line;
}

// One flavors[] entry of a resource group: a line per resource that the group covers. The
// resources must be the group's `covered` ones, in order; a flavor may appear once per
// ClusterQueue or Cohort (`seen_flavors`, `owner` names its kind).
void DecodeGroupFlavor(const DocContext& ctx, const Node& node, std::string path,
                       const std::optional<std::vector<std::string>>& covered,
                       std::vector<std::string>* seen_flavors, std::string_view owner,
                       std::vector<LineSpec>* lines) {
  ObjectReader flavor(&ctx, &node, std::move(path));
  if (!flavor.present()) return;
  std::optional<std::string> fname = flavor.String("name", /*required=*/true);
  if (fname && Contains(*seen_flavors, *fname)) {
    flavor.ctx().Error(flavor.PathOf("name"), flavor.MarkOf("name"),
                       "flavor '" + *fname + "' is listed twice in this " + std::string(owner));
    fname.reset();
  }
  if (fname) seen_flavors->push_back(*fname);
  const Node* resources = flavor.List("resources");
  if (resources == nullptr) {
    flavor.ctx().Error(flavor.PathOf("resources"), flavor.mark(), "required field is missing");
    return;
  }
  const std::vector<std::string> covered_list = covered.value_or(std::vector<std::string>{});
  const std::string rbase = flavor.PathOf("resources");
  std::vector<std::string> names;
  for (size_t i = 0; i < resources->items().size(); ++i) {
    ObjectReader res(&ctx, &resources->items()[i], IndexPath(rbase, i));
    if (!res.present()) continue;
    std::optional<LineSpec> line = DecodeQuotaLine(res, &names);
    if (!fname || !line) continue;
    if (!Contains(covered_list, line->resource)) continue;  // reported below
    line->flavor = *fname;
    lines->push_back(std::move(*line));
  }
  if (covered && names != covered_list) {
    flavor.ctx().Error(rbase, resources->mark(),
                       "must list the group's coveredResources in the same order");
  }
}

// One resourceGroups[] entry; a resource may be covered by one group only (`seen_resources`).
void DecodeResourceGroup(const DocContext& ctx, const Node& node, std::string path,
                         std::vector<std::string>* seen_flavors,
                         std::vector<std::string>* seen_resources, std::string_view owner,
                         std::vector<LineSpec>* lines,
                         std::vector<std::vector<std::string>>* groups) {
  ObjectReader group(&ctx, &node, std::move(path));
  if (!group.present()) return;
  std::optional<std::vector<std::string>> covered = group.StringList("coveredResources");
  if (!covered || covered->empty()) {
    group.ctx().Error(group.PathOf("coveredResources"), group.mark(),
                      "must list at least one resource");
  }
  if (groups != nullptr && covered) groups->push_back(*covered);
  for (const std::string& r : covered.value_or(std::vector<std::string>{})) {
    if (Contains(*seen_resources, r)) {
      group.ctx().Error(group.PathOf("coveredResources"), group.MarkOf("coveredResources"),
                        "resource '" + r + "' is covered by more than one resource group");
    }
    seen_resources->push_back(r);
  }
  const Node* flavors = group.List("flavors");
  if (flavors == nullptr) {
    group.ctx().Error(group.PathOf("flavors"), group.mark(), "required field is missing");
    return;
  }
  const std::string fbase = group.PathOf("flavors");
  for (size_t f = 0; f < flavors->items().size(); ++f) {
    DecodeGroupFlavor(ctx, flavors->items()[f], IndexPath(fbase, f), covered, seen_flavors, owner,
                      lines);
  }
}

// spec.resourceGroups of a ClusterQueue or Cohort (`owner`) into quota lines, and (`groups`,
// optional) each group's covered resources.
void DecodeResourceGroups(ObjectReader& spec, std::string_view owner, std::vector<LineSpec>* lines,
                          std::vector<std::vector<std::string>>* groups = nullptr) {
  const Node* list = spec.List("resourceGroups");
  if (list == nullptr) return;
  const std::string base = spec.PathOf("resourceGroups");
  std::vector<std::string> seen_flavors;
  std::vector<std::string> seen_resources;
  for (size_t g = 0; g < list->items().size(); ++g) {
    DecodeResourceGroup(spec.ctx(), list->items()[g], IndexPath(base, g), &seen_flavors,
                        &seen_resources, owner, lines, groups);
  }
}

// spec.cohort (v1beta1) or spec.cohortName (v1beta2); the other version's spelling is an error.
void ReadCohort(ObjectReader& spec, bool v1beta2, TeamSpec* team) {
  const char* cohort_key = v1beta2 ? "cohortName" : "cohort";
  const char* other_key = v1beta2 ? "cohort" : "cohortName";
  if (spec.Has(other_key)) {
    spec.ctx().Error(spec.PathOf(other_key), spec.MarkOf(other_key),
                     std::string("unknown field (") + (v1beta2 ? "v1beta2" : "v1beta1") +
                         " calls it " + cohort_key + ")");
    spec.Ignore(other_key);
  }
  if (spec.Has(cohort_key)) {
    team->cohort_origin = OriginOf(spec.ctx(), spec.PathOf(cohort_key), spec.MarkOf(cohort_key));
    team->cohort = spec.String(cohort_key).value_or("");
    (void)CheckNameField(spec, cohort_key, "cohort name", team->cohort, NameRule::kDnsSubdomain,
                         /*allow_empty=*/true);
  }
}

// One matchExpressions[] entry of a label selector; nullopt when it does not read (reported).
std::optional<LabelSelector::Requirement> ReadRequirement(ObjectReader& e) {
  using Op = LabelSelector::Operator;
  LabelSelector::Requirement r;
  std::optional<std::string> key = e.String("key", /*required=*/true);
  std::optional<Op> op = e.Enum<Op>("operator", {{"In", Op::kIn},
                                                 {"NotIn", Op::kNotIn},
                                                 {"Exists", Op::kExists},
                                                 {"DoesNotExist", Op::kDoesNotExist}});
  if (!e.Has("operator")) {
    e.ctx().Error(e.PathOf("operator"), e.mark(), "required field is missing");
  }
  const bool has_values = e.Has("values");
  r.values = e.StringList("values").value_or(std::vector<std::string>{});
  if (!key || !op) return std::nullopt;
  const bool needs_values = *op == Op::kIn || *op == Op::kNotIn;
  if (needs_values && r.values.empty()) {
    e.ctx().Error(e.PathOf("values"), e.mark(),
                  "must be non-empty when operator is In or NotIn (Kubernetes' validation)");
    return std::nullopt;
  }
  if (!needs_values && has_values && !r.values.empty()) {
    e.ctx().Error(e.PathOf("values"), e.MarkOf("values"),
                  "must be empty when operator is Exists or DoesNotExist (Kubernetes' validation)");
    return std::nullopt;
  }
  r.key = *key;
  r.op = *op;
  return r;
}

// spec.namespaceSelector: which namespaces' pods the ClusterQueue admits, with Kueue's meaning
// (absent or null: none; {}: all). taskgov enforces it (pod_identity.h): a pod whose LocalQueue
// points here from a namespace it does not select is refused.
LabelSelector ReadNamespaceSelector(ObjectReader& spec) {
  LabelSelector selector;
  if (!spec.present()) return selector;
  const Node* node = spec.Take("namespaceSelector");
  if (node == nullptr) {
    selector.nothing = true;
    spec.ctx().Warn(spec.PathOf("namespaceSelector"), spec.mark(),
                    "absent: as in Kueue, this ClusterQueue admits pods of no namespace (pods "
                    "of its LocalQueues are refused); write namespaceSelector: {} for all");
    return selector;
  }
  ObjectReader sel(&spec.ctx(), node, spec.PathOf("namespaceSelector"));
  if (auto labels = sel.StringMap("matchLabels")) {
    for (auto& [k, v] : *labels) selector.match_labels.emplace(k, v);
  }
  bool ok = true;
  sel.ForEachObject(
      "matchExpressions",
      [&](ObjectReader& e) {
        if (std::optional<LabelSelector::Requirement> r = ReadRequirement(e)) {
          selector.match_expressions.push_back(std::move(*r));
        } else {
          ok = false;
        }
      },
      /*null_is_error=*/true);
  if (!ok) selector.nothing = true;  // reported; fail closed
  return selector;
}

// spec.preemption: within-team, reclaim and borrow-within-cohort policies.
void ReadPreemption(ObjectReader& spec, TeamSpec* team) {
  if (!spec.Has("preemption")) return;
  ObjectReader p = spec.Object("preemption");
  if (auto v = p.Enum<WithinTeamPreemption>(
          "withinClusterQueue",
          {{"Never", WithinTeamPreemption::kNever},
           {"LowerPriority", WithinTeamPreemption::kLowerPriority},
           {"LowerOrNewerEqualPriority", WithinTeamPreemption::kLowerOrNewerEqualPriority}})) {
    team->within_team = *v;
  }
  if (auto v = p.Enum<ReclaimPolicy>("reclaimWithinCohort",
                                     {{"Never", ReclaimPolicy::kNever},
                                      {"LowerPriority", ReclaimPolicy::kLowerPriority},
                                      {"Any", ReclaimPolicy::kAny}})) {
    team->reclaim = *v;
  }
  ReadBorrowWithinCohort(p, &team->borrow_within_cohort);
}

// Warns about spec.flavorFungibility other than TryNextFlavor, which is what taskgov does.
void CheckFlavorFungibility(ObjectReader& spec) {
  if (!spec.Has("flavorFungibility")) return;
  ObjectReader f = spec.Object("flavorFungibility");
  for (const char* key : {"whenCanBorrow", "whenCanPreempt"}) {
    std::optional<std::string> v = f.String(key);
    if (v && *v != "TryNextFlavor") {
      f.ctx().Warn(f.PathOf(key), f.MarkOf(key),
                   "not honoured: taskgov tries every flavor within nominal quota before "
                   "borrowing or preempting (TryNextFlavor); got " +
                       *v);
    }
  }
  f.NotHonoured("preference", "taskgov prefers borrowing over preemption");
}

// spec.stopPolicy: a held team admits no new pods; HoldAndDrain is honoured as Hold.
void ReadStopPolicy(ObjectReader& spec, TeamSpec* team) {
  auto stop = spec.Enum<std::string_view>(
      "stopPolicy", {{"None", "None"}, {"Hold", "Hold"}, {"HoldAndDrain", "HoldAndDrain"}});
  if (!stop) return;
  team->active = *stop == "None";
  if (*stop == "HoldAndDrain") {
    spec.ctx().Warn(spec.PathOf("stopPolicy"), spec.MarkOf("stopPolicy"),
                    "HoldAndDrain is honoured as Hold: new pods are held, running pods are not "
                    "evicted");
  }
}

void DecodeClusterQueue(ObjectReader& doc, bool v1beta2, ConfigSet* out) {
  Meta meta = ReadMetadata(doc, /*namespaced=*/false);
  doc.Ignore("status");
  TeamSpec team;
  team.dialect = Dialect::kKueue;
  team.origin = OriginOf(doc);
  team.within_team = WithinTeamPreemption::kNever;  // Kueue defaults
  team.reclaim = ReclaimPolicy::kNever;
  team.queueing = QueueingStrategy::kBestEffortFIFO;
  team.cohort = "";

  ObjectReader spec = doc.Object("spec");
  ReadCohort(spec, v1beta2, &team);
  DecodeResourceGroups(spec, "ClusterQueue", &team.lines, &team.resource_groups);
  if (auto q = spec.Enum<QueueingStrategy>("queueingStrategy",
                                           {{"BestEffortFIFO", QueueingStrategy::kBestEffortFIFO},
                                            {"StrictFIFO", QueueingStrategy::kStrictFIFO}})) {
    team.queueing = *q;
  }
  team.namespace_selector = ReadNamespaceSelector(spec);
  ReadPreemption(spec, &team);
  CheckFlavorFungibility(spec);
  ReadStopPolicy(spec, &team);
  if (spec.Has("fairSharing")) {
    ObjectReader fs = spec.Object("fairSharing");
    if (auto w = ReadWeight(fs, "weight")) team.fair_share_weight = *w;
  }
  spec.NotHonoured("admissionChecks", "taskgov runs no admission checks");
  spec.NotHonoured("admissionChecksStrategy", "taskgov runs no admission checks");
  spec.NotHonoured("admissionScope", "taskgov has no admission fair sharing");
  spec.NotHonoured("concurrentAdmissionPolicy", "taskgov does not migrate pods between flavors");
  if (!meta.name) return;
  team.name = *meta.name;
  team.cluster_queue = *meta.name;
  out->teams.push_back(std::move(team));
}

void DecodeLocalQueue(ObjectReader& doc, ConfigSet* out) {
  Meta meta = ReadMetadata(doc, /*namespaced=*/true);
  doc.Ignore("status");
  ObjectReader spec = doc.Object("spec");
  std::optional<std::string> cq = spec.String("clusterQueue", /*required=*/true);
  if (!CheckNameField(spec, "clusterQueue", "ClusterQueue name", cq, NameRule::kDnsSubdomain)) {
    cq.reset();
  }
  if (!spec.present()) {
    doc.ctx().Error(doc.PathOf("spec"), doc.mark(), "required field is missing");
  }
  std::optional<std::string> stop = spec.String("stopPolicy");
  if (stop && *stop != "None") {
    spec.ctx().Warn(spec.PathOf("stopPolicy"), spec.MarkOf("stopPolicy"),
                    "not honoured: taskgov holds whole teams (the ClusterQueue's stopPolicy), not "
                    "single LocalQueues");
  }
  spec.NotHonoured("fairSharing", "taskgov has no admission fair sharing");
  spec.NotHonoured("wallTimePolicy", "taskgov keeps no wall-time budgets");  // v1beta2
  if (!meta.name || !meta.namespace_ || !cq) return;
  out->local_queues.push_back(LocalQueueSpec{OriginOf(doc), *meta.namespace_, *meta.name, *cq});
}

void DecodeResourceFlavor(ObjectReader& doc, ConfigSet* out) {
  Meta meta = ReadMetadata(doc, /*namespaced=*/false);
  FlavorSpec flavor;
  flavor.origin = OriginOf(doc);
  ObjectReader spec = doc.Object("spec");
  if (auto labels = spec.StringMap("nodeLabels")) {
    for (auto& [k, v] : *labels) flavor.flavor.node_labels.emplace(k, v);
  }
  spec.NotHonoured("nodeTaints", "taskgov leaves taints to the scheduler");
  spec.NotHonoured("tolerations", "taskgov does not add tolerations to pods");
  flavor.topology_name = spec.String("topologyName").value_or("");
  spec.NotHonoured("resourceWeights", "taskgov weighs every resource equally in fair sharing");
  if (!meta.name) return;
  flavor.flavor.name = *meta.name;
  // A ResourceFlavor without node labels is every node's flavor in Kueue.
  flavor.flavor.matches_all_nodes = flavor.flavor.node_labels.empty();
  out->flavors.push_back(std::move(flavor));
}

// kueue.x-k8s.io Topology: spec.levels[].nodeLabel, widest first; 1 to 16 levels, each once,
// kubernetes.io/hostname only as the last (Kueue's validation).
void DecodeTopology(ObjectReader& doc, ConfigSet* out) {
  Meta meta = ReadMetadata(doc, /*namespaced=*/false);
  doc.Ignore("status");
  ObjectReader spec = doc.Object("spec");
  TopologySpec topology;
  bool ok = true;
  const Node* levels = spec.ForEachObject(
      "levels",
      [&](ObjectReader& level) {
        std::optional<std::string> label = level.String("nodeLabel", /*required=*/true);
        if (!label || label->empty()) {
          ok = false;
          return;
        }
        const std::string at = level.path();
        if (std::find(topology.levels.begin(), topology.levels.end(), *label) !=
            topology.levels.end()) {
          level.ctx().Error(at, level.mark(), "level '" + *label + "' is listed twice");
          ok = false;
        }
        if (!topology.levels.empty() && topology.levels.back() == "kubernetes.io/hostname") {
          level.ctx().Error(at, level.mark(),
                            "kubernetes.io/hostname may only be the last (lowest) level");
          ok = false;
        }
        topology.levels.push_back(*label);
      },
      /*null_is_error=*/true);
  if (levels == nullptr || topology.levels.empty() || topology.levels.size() > 16) {
    spec.ctx().Error(spec.PathOf("levels"), spec.mark(),
                     "a Topology has 1 to 16 levels (each {nodeLabel: <node label key>})");
    ok = false;
  }
  if (!meta.name) return;
  topology.origin = OriginOf(doc);
  topology.name = *meta.name;
  topology.valid = ok;
  out->topologies.push_back(std::move(topology));
}

void DecodeWorkloadPriorityClass(ObjectReader& doc, ConfigSet* out) {
  Meta meta = ReadMetadata(doc, /*namespaced=*/false);
  doc.Ignore("description");
  std::optional<int64_t> value =
      doc.Integer("value", -2147483648LL, 1000000000LL, /*required=*/true);
  if (!meta.name || !value) return;
  out->priority_classes.push_back(
      PriorityClassSpec{OriginOf(doc), {*meta.name, static_cast<int32_t>(*value)}});
}

void DecodeCohort(ObjectReader& doc, bool v1alpha1, ConfigSet* out) {
  Meta meta = ReadMetadata(doc, /*namespaced=*/false);
  doc.Ignore("status");
  ObjectReader spec = doc.Object("spec");
  std::optional<std::string> parent = spec.String(v1alpha1 ? "parent" : "parentName");
  CohortSpec cohort;
  DecodeResourceGroups(spec, "Cohort", &cohort.lines);
  if (spec.Has("fairSharing")) {
    ObjectReader fs = spec.Object("fairSharing");
    cohort.fair_share_weight = ReadWeight(fs, "weight");
  }
  if (!meta.name) return;
  cohort.origin = OriginOf(doc);
  cohort.name = *meta.name;
  cohort.parent = parent.value_or("");
  out->cohorts.push_back(std::move(cohort));
}

}  // namespace

void DecodeKueue(ObjectReader& doc, std::string_view api_version, std::string_view kind,
                 ConfigSet* out) {
  const bool v1beta2 = api_version == "kueue.x-k8s.io/v1beta2";
  if (kind == "ClusterQueue") {
    DecodeClusterQueue(doc, v1beta2, out);
  } else if (kind == "LocalQueue") {
    DecodeLocalQueue(doc, out);
  } else if (kind == "ResourceFlavor") {
    DecodeResourceFlavor(doc, out);
  } else if (kind == "WorkloadPriorityClass") {
    DecodeWorkloadPriorityClass(doc, out);
  } else if (kind == "Cohort") {
    DecodeCohort(doc, api_version == "kueue.x-k8s.io/v1alpha1", out);
  } else if (kind == "Topology") {
    DecodeTopology(doc, out);
  }
}

}  // namespace taskgov::config
