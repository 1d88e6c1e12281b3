#include "config/dialects.h"

#include <limits>

#include "scheduler/common/k8s_names.h"

namespace taskgov::config {

std::string_view DialectName(Dialect d) {
  switch (d) {
    case Dialect::kNative:
      return "taskgov";
    case Dialect::kHyperPod:
      return "HyperPod";
    case Dialect::kKueue:
      return "Kueue";
    case Dialect::kVolcano:
      return "Volcano";
  }
  return "?";
}

bool CheckName(const DocContext& ctx, std::string path, Mark mark, std::string_view what,
               std::string_view name, NameRule rule) {
  constexpr size_t kLabelMax = 63;
  constexpr size_t kSubdomainMax = 253;
  constexpr size_t kQuoted = 40;  // a long name is quoted up to here
  const bool label = rule == NameRule::kDnsLabel;
  if (label ? common::IsDnsLabel(name) : common::IsDnsSubdomain(name)) return true;
  const size_t max = label ? kLabelMax : kSubdomainMax;
  const std::string kind = label ? "a DNS label (RFC 1123)" : "a DNS subdomain (RFC 1123)";
  if (name.size() > max) {
    ctx.Error(std::move(path), mark,
              std::string(what) + " '" + std::string(name.substr(0, kQuoted)) + "...' is " +
                  std::to_string(name.size()) + " characters long: Kubernetes allows at most " +
                  std::to_string(max) + " for " + kind);
    return false;
  }
  const std::string syntax =
      label ? "must match [a-z0-9]([-a-z0-9]*[a-z0-9])? (lower-case letters, digits and '-')"
            : "lower-case DNS labels joined by '.', each matching [a-z0-9]([-a-z0-9]*[a-z0-9])?";
  ctx.Error(std::move(path), mark,
            std::string(what) + " '" + std::string(name) + "' must be " + kind + ": " + syntax +
                ", at most " + std::to_string(max) + " characters");
  return false;
}

bool CheckNameField(const ObjectReader& r, std::string_view key, std::string_view what,
                    const std::optional<std::string>& name, NameRule rule, bool allow_empty) {
  if (!name || (allow_empty && name->empty())) return true;
  return CheckName(r.ctx(), r.PathOf(key), r.MarkOf(key), what, *name, rule);
}

void ReadBorrowWithinCohort(ObjectReader& r, scheduler::model::BorrowWithinCohort* out,
                            std::string_view key) {
  if (!r.Has(key)) return;
  ObjectReader b = r.Object(key);
  if (auto policy = b.Enum<bool>("policy", {{"Never", false}, {"LowerPriority", true}})) {
    out->lower_priority = *policy;
  }
  if (auto t = b.Integer("maxPriorityThreshold", std::numeric_limits<int32_t>::min(),
                         std::numeric_limits<int32_t>::max())) {
    out->max_priority_threshold = static_cast<int32_t>(*t);
  }
}

Origin OriginOf(const DocContext& ctx, std::string path, Mark mark) {
  return Origin{ctx.file(), ctx.document(), std::move(path), mark};
}

Origin OriginOf(const ObjectReader& r) { return OriginOf(r.ctx(), r.path(), r.mark()); }

void RecordSingleton(const ObjectReader& r, std::vector<Origin>* seen, std::string_view what,
                     std::string_view advice) {
  if (!seen->empty()) {
    r.ctx().Error(r.path(), r.mark(),
                  "a second " + std::string(what) + " (the first is in " + seen->front().file +
                      "): " + std::string(advice));
  }
  seen->push_back(OriginOf(r));
}

std::optional<ComputeSpec> DecodeCompute(ObjectReader& r, const ComputeKeys& keys) {
  constexpr int64_t kMaxCount = 10000000;
  ComputeSpec spec;
  spec.origin = OriginOf(r);
  bool ok = true;
  const bool has_type = r.Has(keys.instance_type);
  std::optional<std::string> type = r.String(keys.instance_type);
  if (type) {
    if (type->empty()) {
      r.ctx().Error(r.PathOf(keys.instance_type), r.MarkOf(keys.instance_type),
                    "must not be empty");
      ok = false;
    }
    spec.instance_type = *type;
  } else if (has_type) {
    ok = false;
  }
  auto count_field = [&](std::string_view key, std::optional<int64_t>* out) {
    const bool has = r.Has(key);
    *out = r.Integer(key, 0, kMaxCount);
    if (has && !*out) ok = false;
  };
  count_field(keys.count, &spec.amounts.count);
  count_field(keys.accelerators, &spec.amounts.accelerators);
  auto decimal_field = [&](std::string_view key, std::string_view suffix,
                           scheduler::model::QuantityUnit unit, std::optional<int64_t>* out) {
    const bool has = r.Has(key);
    *out = r.Decimal(key, suffix, unit);
    if (has && !*out) ok = false;
  };
  decimal_field(keys.vcpu, "", scheduler::model::QuantityUnit::kMillis, &spec.amounts.vcpu_millis);
  decimal_field(keys.memory, "Gi", scheduler::model::QuantityUnit::kUnits,
                &spec.amounts.memory_bytes);
  if (r.Has(keys.partition)) {
    ObjectReader p = r.Object(keys.partition);
    if (!p.present()) {
      ok = false;
    } else {
      std::optional<std::string> ptype = p.String(keys.partition_type, /*required=*/true);
      std::optional<int64_t> pcount =
          p.Integer(keys.partition_count, 0, kMaxCount, /*required=*/true);
      if (ptype && ptype->empty()) {
        p.ctx().Error(p.PathOf(keys.partition_type), p.MarkOf(keys.partition_type),
                      "must not be empty");
        ptype.reset();
      }
      if (!ptype || !pcount) {
        ok = false;
      } else {
        spec.amounts.partition_type = *ptype;
        spec.amounts.partition_count = *pcount;
      }
    }
  }
  if (!ok) {
    if (spec.instance_type.empty()) return std::nullopt;
    spec.amounts_valid = false;
  }
  return spec;
}

namespace {

bool LooksLikeHyperPod(const Node& doc) {
  for (const char* key : {"ComputeQuotaConfig", "ComputeQuotaTarget", "ComputeQuotaId",
                          "SchedulerConfig", "ClusterSchedulerConfigId"}) {
    if (doc.Find(key) != nullptr) return true;
  }
  return false;
}

void Decode(const Node& doc, const DocContext& ctx, const std::string& path, int depth,
            ConfigSet* out);

// A document without apiVersion and kind: a HyperPod request, or an error.
void DecodeUntyped(const Node& doc, const DocContext& ctx, const std::string& path,
                   ConfigSet* out) {
  if (LooksLikeHyperPod(doc)) {
    ObjectReader r(&ctx, &doc, path);
    DecodeHyperPod(r, out);
    return;
  }
  ctx.Error(path, doc.mark(),
            "cannot tell what this document is: expected apiVersion and kind (taskgov.io/v1, "
            "kueue.x-k8s.io/v1beta1 or v1beta2, scheduling.volcano.sh/v1beta1) or a HyperPod "
            "request (ComputeQuotaConfig, ComputeQuotaTarget or SchedulerConfig)");
}

// A map document with a string apiVersion and kind.
struct TypedDoc {
  const Node& doc;
  const DocContext& ctx;
  const std::string& path;
  const Node& api_node;
  const Node& kind_node;
  std::string api = api_node.text();
  std::string kind = kind_node.text();

  void ApiError(std::string message) const {
    ctx.Error(JoinPath(path, "apiVersion"), api_node.mark(), std::move(message));
  }
  void KindError(std::string message) const {
    ctx.Error(JoinPath(path, "kind"), kind_node.mark(), std::move(message));
  }
  void KindWarn(std::string message) const {
    ctx.Warn(JoinPath(path, "kind"), kind_node.mark(), std::move(message));
  }
  // A reader of the document with apiVersion and kind already read.
  ObjectReader Reader() const {
    ObjectReader r(&ctx, &doc, path);
    r.Ignore("apiVersion");
    r.Ignore("kind");
    return r;
  }
};

// The node of `key` (apiVersion or kind) when it is a string; else nullptr, reported.
const Node* TypeField(const Node& doc, const DocContext& ctx, const std::string& path,
                      std::string_view key) {
  const Node* node = doc.Find(key);
  if (node == nullptr || !node->is_scalar()) {
    ctx.Error(JoinPath(path, key), node ? node->mark() : doc.mark(),
              node ? "must be a string" : "required field is missing");
    return nullptr;
  }
  return node;
}

// A List (or <Kind>List) with items: each item in turn, at path items[i].
void DecodeList(const TypedDoc& t, int depth, ConfigSet* out) {
  ObjectReader r = t.Reader();
  r.Ignore("metadata");
  const Node* items = r.List("items");
  if (items == nullptr) return;
  if (depth > 4) {
    t.ctx.Error(t.path, t.doc.mark(), "lists nested too deeply");
    return;
  }
  for (size_t i = 0; i < items->items().size(); ++i) {
    Decode(items->items()[i], t.ctx, IndexPath(JoinPath(t.path, "items"), i), depth + 1, out);
  }
}

void DecodeNativeDoc(const TypedDoc& t, ConfigSet* out) {
  if (t.api != "taskgov.io/v1") {
    t.ApiError("unsupported version '" + t.api + "' (expected taskgov.io/v1)");
    return;
  }
  if (t.kind != "TaskGovernancePolicy" && t.kind != "Team") {
    t.KindError("unknown kind '" + t.kind + "' (expected TaskGovernancePolicy or Team)");
    return;
  }
  ObjectReader r = t.Reader();
  DecodeNative(r, t.kind, out);
}

void DecodeKueueDoc(const TypedDoc& t, ConfigSet* out) {
  const std::string& api = t.api;
  const std::string& kind = t.kind;
  const bool known_version =
      api == "kueue.x-k8s.io/v1beta1" || api == "kueue.x-k8s.io/v1beta2" ||
      (api == "kueue.x-k8s.io/v1alpha1" && (kind == "Cohort" || kind == "Topology"));
  if (!known_version) {
    t.ApiError("unsupported Kueue version '" + api +
               "' (expected kueue.x-k8s.io/v1beta1 or v1beta2)");
    return;
  }
  if (kind != "ClusterQueue" && kind != "LocalQueue" && kind != "ResourceFlavor" &&
      kind != "WorkloadPriorityClass" && kind != "Cohort" && kind != "Topology") {
    t.KindWarn("Kueue kind '" + kind + "' carries no quota policy; ignored");
    return;
  }
  ObjectReader r = t.Reader();
  DecodeKueue(r, api, kind, out);
}

void DecodeVolcanoDoc(const TypedDoc& t, ConfigSet* out) {
  if (t.kind != "Queue") {
    t.KindWarn("Volcano kind '" + t.kind + "' carries no quota policy; ignored");
    return;
  }
  if (t.api != "scheduling.volcano.sh/v1beta1") {
    t.ApiError("unsupported Volcano version '" + t.api +
               "' (expected scheduling.volcano.sh/v1beta1)");
    return;
  }
  ObjectReader r = t.Reader();
  DecodeVolcano(r, t.kind, out);
}

// A typed document, by the group of its apiVersion; other groups are warned about and skipped.
void DecodeTyped(const TypedDoc& t, ConfigSet* out) {
  const std::string group = t.api.substr(0, t.api.find('/'));
  if (group == "taskgov.io") {
    DecodeNativeDoc(t, out);
  } else if (group == "kueue.x-k8s.io") {
    DecodeKueueDoc(t, out);
  } else if (group == "scheduling.volcano.sh") {
    DecodeVolcanoDoc(t, out);
  } else {
    t.ctx.Warn(
        t.path, t.doc.mark(),
        "kind '" + t.kind + "' (apiVersion " + t.api + ") is not a policy document; ignored");
  }
}

void Decode(const Node& doc, const DocContext& ctx, const std::string& path, int depth,
            ConfigSet* out) {
  if (doc.is_null()) return;
  if (!doc.is_map()) {
    ctx.Error(
        path, doc.mark(),
        "a configuration document must be a map (an object), got " + std::string(doc.TypeName()));
    return;
  }
  if (doc.Find("apiVersion") == nullptr && doc.Find("kind") == nullptr) {
    DecodeUntyped(doc, ctx, path, out);
    return;
  }
  const Node* api_node = TypeField(doc, ctx, path, "apiVersion");
  if (api_node == nullptr) return;
  const Node* kind_node = TypeField(doc, ctx, path, "kind");
  if (kind_node == nullptr) return;
  const TypedDoc t{doc, ctx, path, *api_node, *kind_node};
  const bool is_list = t.kind == "List" || (t.kind.size() > 4 && t.kind.ends_with("List"));
  if (is_list && doc.Find("items") != nullptr) {
    DecodeList(t, depth, out);
    return;
  }
  DecodeTyped(t, out);
}

}  // namespace

void DecodeDocument(const Node& doc, const DocContext& ctx, ConfigSet* out) {
  Decode(doc, ctx, "", 0, out);
}

}  // namespace taskgov::config
