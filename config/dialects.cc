#include "config/dialects.h"

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

Origin OriginOf(const DocContext& ctx, std::string path, Mark mark) {
  return Origin{ctx.file(), ctx.document(), std::move(path), mark};
}

Origin OriginOf(const ObjectReader& r) { return OriginOf(r.ctx(), r.path(), r.mark()); }

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
                           scheduler::QuantityUnit unit, std::optional<int64_t>* out) {
    const bool has = r.Has(key);
    *out = r.Decimal(key, suffix, unit);
    if (has && !*out) ok = false;
  };
  decimal_field(keys.vcpu, "", scheduler::QuantityUnit::kMillis, &spec.amounts.vcpu_millis);
  decimal_field(keys.memory, "Gi", scheduler::QuantityUnit::kUnits, &spec.amounts.memory_bytes);
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
  if (!ok) return std::nullopt;
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
            ConfigSet* out) {
  if (doc.is_null()) return;
  if (!doc.is_map()) {
    ctx.Error(
        path, doc.mark(),
        "a configuration document must be a map (an object), got " + std::string(doc.TypeName()));
    return;
  }
  const Node* api_node = doc.Find("apiVersion");
  const Node* kind_node = doc.Find("kind");
  if (api_node == nullptr && kind_node == nullptr) {
    if (LooksLikeHyperPod(doc)) {
      ObjectReader r(&ctx, &doc, path);
      DecodeHyperPod(r, out);
      return;
    }
    ctx.Error(path, doc.mark(),
              "cannot tell what this document is: expected apiVersion and kind (taskgov.io/v1, "
              "kueue.x-k8s.io/v1beta1 or v1beta2, scheduling.volcano.sh/v1beta1) or a HyperPod "
              "request (ComputeQuotaConfig, ComputeQuotaTarget or SchedulerConfig)");
    return;
  }
  std::string api;
  std::string kind;
  if (api_node == nullptr || !api_node->is_scalar()) {
    ctx.Error(JoinPath(path, "apiVersion"), api_node ? api_node->mark() : doc.mark(),
              api_node ? "must be a string" : "required field is missing");
    return;
  }
  if (kind_node == nullptr || !kind_node->is_scalar()) {
    ctx.Error(JoinPath(path, "kind"), kind_node ? kind_node->mark() : doc.mark(),
              kind_node ? "must be a string" : "required field is missing");
    return;
  }
  api = api_node->text();
  kind = kind_node->text();

  const bool is_list = kind == "List" || (kind.size() > 4 && kind.ends_with("List"));
  if (is_list && doc.Find("items") != nullptr) {
    ObjectReader r(&ctx, &doc, path);
    r.Ignore("apiVersion");
    r.Ignore("kind");
    r.Ignore("metadata");
    const Node* items = r.List("items");
    if (items == nullptr) return;
    if (depth > 4) {
      ctx.Error(path, doc.mark(), "lists nested too deeply");
      return;
    }
    for (size_t i = 0; i < items->items().size(); ++i) {
      Decode(items->items()[i], ctx, IndexPath(JoinPath(path, "items"), i), depth + 1, out);
    }
    return;
  }

  const std::string group = api.substr(0, api.find('/'));
  if (group == "taskgov.io") {
    if (api != "taskgov.io/v1") {
      ctx.Error(JoinPath(path, "apiVersion"), api_node->mark(),
                "unsupported version '" + api + "' (expected taskgov.io/v1)");
      return;
    }
    if (kind != "TaskGovernancePolicy" && kind != "Team") {
      ctx.Error(JoinPath(path, "kind"), kind_node->mark(),
                "unknown kind '" + kind + "' (expected TaskGovernancePolicy or Team)");
      return;
    }
    ObjectReader r(&ctx, &doc, path);
    r.Ignore("apiVersion");
    r.Ignore("kind");
    DecodeNative(r, kind, out);
    return;
  }
  if (group == "kueue.x-k8s.io") {
    const bool known_version = api == "kueue.x-k8s.io/v1beta1" || api == "kueue.x-k8s.io/v1beta2" ||
                               (api == "kueue.x-k8s.io/v1alpha1" && kind == "Cohort");
    if (!known_version) {
      ctx.Error(
          JoinPath(path, "apiVersion"), api_node->mark(),
          "unsupported Kueue version '" + api + "' (expected kueue.x-k8s.io/v1beta1 or v1beta2)");
      return;
    }
    if (kind != "ClusterQueue" && kind != "LocalQueue" && kind != "ResourceFlavor" &&
        kind != "WorkloadPriorityClass" && kind != "Cohort") {
      ctx.Warn(JoinPath(path, "kind"), kind_node->mark(),
               "Kueue kind '" + kind + "' carries no quota policy; ignored");
      return;
    }
    ObjectReader r(&ctx, &doc, path);
    r.Ignore("apiVersion");
    r.Ignore("kind");
    DecodeKueue(r, api, kind, out);
    return;
  }
  if (group == "scheduling.volcano.sh") {
    if (kind != "Queue") {
      ctx.Warn(JoinPath(path, "kind"), kind_node->mark(),
               "Volcano kind '" + kind + "' carries no quota policy; ignored");
      return;
    }
    if (api != "scheduling.volcano.sh/v1beta1") {
      ctx.Error(
          JoinPath(path, "apiVersion"), api_node->mark(),
          "unsupported Volcano version '" + api + "' (expected scheduling.volcano.sh/v1beta1)");
      return;
    }
    ObjectReader r(&ctx, &doc, path);
    r.Ignore("apiVersion");
    r.Ignore("kind");
    DecodeVolcano(r, kind, out);
    return;
  }
  ctx.Warn(path, doc.mark(),
           "kind '" + kind + "' (apiVersion " + api + ") is not a policy document; ignored");
}

}  // namespace

void DecodeDocument(const Node& doc, const DocContext& ctx, ConfigSet* out) {
  Decode(doc, ctx, "", 0, out);
}

}  // namespace taskgov::config
