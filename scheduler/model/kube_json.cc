#include "scheduler/model/kube_json.h"

#include "scheduler/common/time_format.h"

#include <string_view>

#include "scheduler/model/json_select.h"
#include "scheduler/model/kube_fields.h"
#include "scheduler/model/quantity.h"

namespace taskgov::scheduler::model {
namespace {

using rapidjson::Value;

#define TASKGOV_RETURN_IF_ERROR(expr)           \
  do {                                          \
    if (common::Status s_ = (expr); !s_.ok()) { \
      return s_.error();                        \
    }                                           \
  } while (0)

// ---- paths, built only when an error needs them ----

std::string Join(const std::string& path, std::string_view key) {
  std::string out = path;
  if (!out.empty()) out += '.';
  out += key;
  return out;
}

std::string Indexed(const std::string& path, size_t i) {
  return path + "[" + std::to_string(i) + "]";
}

std::string Keyed(const std::string& path, std::string_view key) {
  std::string out = path;
  out += "[\"";
  out += key;
  out += "\"]";
  return out;
}

common::Error TypeError(const std::string& where, std::string_view expected, const Value& got) {
  return common::Error{where + ": expected " + std::string(expected) + ", got " +
                       JsonTypeName(got)};
}

std::string_view View(const Value& string_value) {
  return std::string_view(string_value.GetString(), string_value.GetStringLength());
}

// ---- typed member access: absent and null leave the output untouched ----

// `obj.key`, or nullptr when absent or null.
const Value* Member(const Value& obj, std::string_view key) {
  const Value* v = FindMemberExact(obj, key);
  return v != nullptr && !v->IsNull() ? v : nullptr;
}

common::Status GetString(const Value& obj, std::string_view key, const std::string& path,
                         std::string* out) {
  const Value* v = Member(obj, key);
  if (v == nullptr) return common::Status::Ok();
  if (!v->IsString()) return TypeError(Join(path, key), "a string", *v);
  out->assign(v->GetString(), v->GetStringLength());
  return common::Status::Ok();
}

common::Status GetBool(const Value& obj, std::string_view key, const std::string& path, bool* out) {
  const Value* v = Member(obj, key);
  if (v == nullptr) return common::Status::Ok();
  if (!v->IsBool()) return TypeError(Join(path, key), "a boolean", *v);
  *out = v->GetBool();
  return common::Status::Ok();
}

// An object member; *out is nullptr when absent or null.
common::Status GetObject(const Value& obj, std::string_view key, const std::string& path,
                         const Value** out) {
  *out = Member(obj, key);
  if (*out != nullptr && !(*out)->IsObject()) return TypeError(Join(path, key), "an object", **out);
  return common::Status::Ok();
}

common::Status GetArray(const Value& obj, std::string_view key, const std::string& path,
                        const Value** out) {
  *out = Member(obj, key);
  if (*out != nullptr && !(*out)->IsArray()) return TypeError(Join(path, key), "an array", **out);
  return common::Status::Ok();
}

// An array member, each element read by `decode(element, its path, &(*out)[i])`.
template <typename T, typename Decode>
common::Status GetArrayOf(const Value& obj, std::string_view key, const std::string& path,
                          std::vector<T>* out, Decode decode) {
  const Value* list = nullptr;
  TASKGOV_RETURN_IF_ERROR(GetArray(obj, key, path, &list));
  if (list == nullptr) return common::Status::Ok();
  out->resize(list->Size());
  for (rapidjson::SizeType i = 0; i < list->Size(); ++i) {
    TASKGOV_RETURN_IF_ERROR(decode((*list)[i], Indexed(Join(path, key), i), &(*out)[i]));
  }
  return common::Status::Ok();
}

common::Status GetTimestamp(const Value& obj, std::string_view key, const std::string& path,
                            std::optional<int64_t>* out) {
  const Value* v = Member(obj, key);
  if (v == nullptr) return common::Status::Ok();
  if (!v->IsString()) return TypeError(Join(path, key), "an RFC 3339 timestamp string", *v);
  common::Result<int64_t> t = ParseTimestamp(View(*v));
  if (!t.ok()) return t.error().Wrap(Join(path, key));
  *out = *t;
  return common::Status::Ok();
}

// map[string]string; null values are empty strings (Go's zero value).
common::Status GetStringMap(const Value& obj, std::string_view key, const std::string& path,
                            Labels* out) {
  const Value* map = nullptr;
  TASKGOV_RETURN_IF_ERROR(GetObject(obj, key, path, &map));
  if (map == nullptr) return common::Status::Ok();
  for (auto it = map->MemberBegin(); it != map->MemberEnd(); ++it) {
    std::string name(View(it->name));
    if (it->value.IsNull()) {
      (*out)[name] = "";
    } else if (it->value.IsString()) {
      (*out)[name] = std::string(View(it->value));
    } else {
      return TypeError(Keyed(Join(path, key), name), "a string", it->value);
    }
  }
  return common::Status::Ok();
}

common::Status GetResourceList(const Value& obj, std::string_view key, const std::string& path,
                               ResourceList* out) {
  const Value* v = Member(obj, key);
  if (v == nullptr) return common::Status::Ok();
  common::Result<ResourceList> list = DecodeResourceList(*v, Join(path, key));
  if (!list.ok()) return list.error();
  *out = std::move(list).value();
  return common::Status::Ok();
}

// ---- pods ----

common::Status DecodeContainer(const Value& value, const std::string& path, Container* out) {
  if (!value.IsObject()) return TypeError(path, "an object", value);
  TASKGOV_RETURN_IF_ERROR(GetString(value, "name", path, &out->name));
  const Value* resources = nullptr;
  TASKGOV_RETURN_IF_ERROR(GetObject(value, "resources", path, &resources));
  if (resources != nullptr) {
    const std::string rpath = Join(path, "resources");
    TASKGOV_RETURN_IF_ERROR(GetResourceList(*resources, "requests", rpath, &out->requests));
    TASKGOV_RETURN_IF_ERROR(GetResourceList(*resources, "limits", rpath, &out->limits));
  }
  std::string restart_policy;
  TASKGOV_RETURN_IF_ERROR(GetString(value, "restartPolicy", path, &restart_policy));
  out->restart_always = restart_policy == "Always";
  return common::Status::Ok();
}

common::Status DecodeOwnerReference(const Value& ref, const std::string& path,
                                    OwnerReference* out) {
  if (!ref.IsObject()) return TypeError(path, "an object", ref);
  TASKGOV_RETURN_IF_ERROR(GetString(ref, "apiVersion", path, &out->api_version));
  TASKGOV_RETURN_IF_ERROR(GetString(ref, "kind", path, &out->kind));
  TASKGOV_RETURN_IF_ERROR(GetString(ref, "name", path, &out->name));
  TASKGOV_RETURN_IF_ERROR(GetString(ref, "uid", path, &out->uid));
  TASKGOV_RETURN_IF_ERROR(GetBool(ref, "controller", path, &out->controller));
  return common::Status::Ok();
}

// "" is kAll: in a toleration, every effect.
TaintEffect ParseTaintEffect(std::string_view effect) {
  if (effect.empty()) return TaintEffect::kAll;
  if (effect == "NoSchedule") return TaintEffect::kNoSchedule;
  if (effect == "PreferNoSchedule") return TaintEffect::kPreferNoSchedule;
  if (effect == "NoExecute") return TaintEffect::kNoExecute;
  return TaintEffect::kOther;
}

TolerationOperator ParseTolerationOperator(std::string_view op) {
  if (op.empty() || op == "Equal") return TolerationOperator::kEqual;
  if (op == "Exists") return TolerationOperator::kExists;
  return TolerationOperator::kOther;
}

NodeSelectorOperator ParseNodeSelectorOperator(std::string_view op) {
  if (op == "In") return NodeSelectorOperator::kIn;
  if (op == "NotIn") return NodeSelectorOperator::kNotIn;
  if (op == "Exists") return NodeSelectorOperator::kExists;
  if (op == "DoesNotExist") return NodeSelectorOperator::kDoesNotExist;
  if (op == "Gt") return NodeSelectorOperator::kGt;
  if (op == "Lt") return NodeSelectorOperator::kLt;
  return NodeSelectorOperator::kOther;
}

common::Status DecodeToleration(const Value& t, const std::string& path, Toleration* out) {
  if (!t.IsObject()) return TypeError(path, "an object", t);
  std::string op, effect;
  TASKGOV_RETURN_IF_ERROR(GetString(t, "key", path, &out->key));
  TASKGOV_RETURN_IF_ERROR(GetString(t, "operator", path, &op));
  TASKGOV_RETURN_IF_ERROR(GetString(t, "value", path, &out->value));
  TASKGOV_RETURN_IF_ERROR(GetString(t, "effect", path, &effect));
  out->op = ParseTolerationOperator(op);
  out->effect = ParseTaintEffect(effect);
  return common::Status::Ok();
}

// An element of a []string; null is the empty string (Go's zero value).
common::Status DecodeStringElement(const Value& v, const std::string& path, std::string* out) {
  if (v.IsNull()) return common::Status::Ok();
  if (!v.IsString()) return TypeError(path, "a string", v);
  out->assign(v.GetString(), v.GetStringLength());
  return common::Status::Ok();
}

// An element of a term's matchExpressions or matchFields.
common::Status DecodeRequirement(const Value& r, const std::string& path,
                                 NodeSelectorRequirement* out) {
  if (!r.IsObject()) return TypeError(path, "an object", r);
  std::string op;
  TASKGOV_RETURN_IF_ERROR(GetString(r, "key", path, &out->key));
  TASKGOV_RETURN_IF_ERROR(GetString(r, "operator", path, &op));
  TASKGOV_RETURN_IF_ERROR(GetArrayOf(r, "values", path, &out->values, DecodeStringElement));
  out->op = ParseNodeSelectorOperator(op);
  return common::Status::Ok();
}

common::Status DecodeTerm(const Value& term, const std::string& path, NodeSelectorTerm* out) {
  if (!term.IsObject()) return TypeError(path, "an object", term);
  TASKGOV_RETURN_IF_ERROR(
      GetArrayOf(term, "matchExpressions", path, &out->match_expressions, DecodeRequirement));
  return GetArrayOf(term, "matchFields", path, &out->match_fields, DecodeRequirement);
}

// spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.
common::Status DecodeRequiredNodeAffinity(const Value& spec,
                                          std::optional<std::vector<NodeSelectorTerm>>* out) {
  const Value* affinity = nullptr;
  TASKGOV_RETURN_IF_ERROR(GetObject(spec, "affinity", "spec", &affinity));
  if (affinity == nullptr) return common::Status::Ok();
  const Value* node_affinity = nullptr;
  TASKGOV_RETURN_IF_ERROR(GetObject(*affinity, "nodeAffinity", "spec.affinity", &node_affinity));
  if (node_affinity == nullptr) return common::Status::Ok();
  const std::string npath = "spec.affinity.nodeAffinity";
  const Value* required = nullptr;
  TASKGOV_RETURN_IF_ERROR(GetObject(
      *node_affinity, "requiredDuringSchedulingIgnoredDuringExecution", npath, &required));
  if (required == nullptr) return common::Status::Ok();
  return GetArrayOf(*required, "nodeSelectorTerms",
                    Join(npath, "requiredDuringSchedulingIgnoredDuringExecution"), &out->emplace(),
                    DecodeTerm);
}

common::Status DecodeTaint(const Value& t, const std::string& path, Taint* out) {
  if (!t.IsObject()) return TypeError(path, "an object", t);
  std::string effect;
  TASKGOV_RETURN_IF_ERROR(GetString(t, "key", path, &out->key));
  TASKGOV_RETURN_IF_ERROR(GetString(t, "value", path, &out->value));
  TASKGOV_RETURN_IF_ERROR(GetString(t, "effect", path, &effect));
  // A taint without an effect is invalid, and keeps no pod off the node.
  out->effect = effect.empty() ? TaintEffect::kOther : ParseTaintEffect(effect);
  return common::Status::Ok();
}

PodPhase ParsePhase(std::string_view phase) {
  if (phase.empty() || phase == "Pending") return PodPhase::kPending;
  if (phase == "Running") return PodPhase::kRunning;
  if (phase == "Succeeded") return PodPhase::kSucceeded;
  if (phase == "Failed") return PodPhase::kFailed;
  return PodPhase::kUnknown;
}

// ---- timestamps ----

}  // namespace

common::Result<int64_t> ParseTimestamp(std::string_view text) {
  common::Result<int64_t> micros = common::ParseRfc3339Micros(text);
  if (!micros.ok()) return micros.error();
  // Floor to milliseconds (also before 1970).
  return *micros >= 0 ? *micros / 1000 : (*micros - 999) / 1000;
}

common::Result<ResourceList> DecodeResourceList(const Value& value, const std::string& path) {
  ResourceList out;
  if (value.IsNull()) return out;
  if (!value.IsObject()) return TypeError(path, "an object of quantities", value);
  for (auto it = value.MemberBegin(); it != value.MemberEnd(); ++it) {
    const std::string_view name = View(it->name);
    const Value& q = it->value;
    common::Result<int64_t> amount = int64_t{0};  // null: Go's zero Quantity
    if (q.IsString()) {
      amount = ParseResourceQuantity(name, View(q));
    } else if (q.IsInt64() || q.IsUint64()) {
      // Go's Quantity also accepts an unquoted integer.
      const std::string text =
          q.IsInt64() ? std::to_string(q.GetInt64()) : std::to_string(q.GetUint64());
      amount = ParseResourceQuantity(name, text);
    } else if (!q.IsNull()) {
      return TypeError(Keyed(path, name), "a quantity string", q);
    }
    if (!amount.ok()) return amount.error().Wrap(Keyed(path, name));
    out.Set(name, *amount);
  }
  return out;
}

namespace {

common::Status DecodePodMetadata(const Value& m, Pod* pod) {
  const std::string path = "metadata";
  TASKGOV_RETURN_IF_ERROR(GetString(m, "namespace", path, &pod->namespace_));
  TASKGOV_RETURN_IF_ERROR(GetString(m, "name", path, &pod->name));
  TASKGOV_RETURN_IF_ERROR(GetString(m, "uid", path, &pod->uid));
  TASKGOV_RETURN_IF_ERROR(GetStringMap(m, "labels", path, &pod->labels));
  TASKGOV_RETURN_IF_ERROR(GetStringMap(m, "annotations", path, &pod->annotations));
  std::optional<int64_t> created;
  TASKGOV_RETURN_IF_ERROR(GetTimestamp(m, "creationTimestamp", path, &created));
  pod->creation_unix_ms = created.value_or(0);
  TASKGOV_RETURN_IF_ERROR(GetTimestamp(m, "deletionTimestamp", path, &pod->deletion_unix_ms));
  TASKGOV_RETURN_IF_ERROR(GetString(m, "resourceVersion", path, &pod->resource_version));
  return GetArrayOf(m, "ownerReferences", path, &pod->owner_references, DecodeOwnerReference);
}

// spec.resources (pod-level requests and limits), when present.
common::Status DecodePodResources(const Value& s, Pod* pod) {
  const Value* resources = nullptr;
  TASKGOV_RETURN_IF_ERROR(GetObject(s, "resources", "spec", &resources));
  if (resources == nullptr) return common::Status::Ok();
  const std::string rpath = "spec.resources";
  if (Member(*resources, "requests") != nullptr) {
    pod->pod_requests.emplace();
    TASKGOV_RETURN_IF_ERROR(GetResourceList(*resources, "requests", rpath, &*pod->pod_requests));
  }
  if (Member(*resources, "limits") != nullptr) {
    pod->pod_limits.emplace();
    TASKGOV_RETURN_IF_ERROR(GetResourceList(*resources, "limits", rpath, &*pod->pod_limits));
  }
  return common::Status::Ok();
}

common::Status DecodePodSpec(const Value& s, Pod* pod) {
  const std::string path = "spec";
  TASKGOV_RETURN_IF_ERROR(GetString(s, "schedulerName", path, &pod->scheduler_name));
  TASKGOV_RETURN_IF_ERROR(GetString(s, "nodeName", path, &pod->node_name));
  TASKGOV_RETURN_IF_ERROR(GetStringMap(s, "nodeSelector", path, &pod->node_selector));
  PodPlacementSpec placement;
  TASKGOV_RETURN_IF_ERROR(
      GetArrayOf(s, "tolerations", path, &placement.tolerations, DecodeToleration));
  TASKGOV_RETURN_IF_ERROR(DecodeRequiredNodeAffinity(s, &placement.required_node_affinity));
  if (!placement.tolerations.empty() || placement.required_node_affinity.has_value()) {
    pod->placement = std::make_shared<const PodPlacementSpec>(std::move(placement));
  }
  if (const Value* p = Member(s, "priority"); p != nullptr) {
    if (!p->IsInt()) return TypeError("spec.priority", "a 32-bit integer", *p);
    pod->priority = p->GetInt();
  }
  TASKGOV_RETURN_IF_ERROR(GetString(s, "priorityClassName", path, &pod->priority_class_name));
  TASKGOV_RETURN_IF_ERROR(GetArrayOf(s, "containers", path, &pod->containers, DecodeContainer));
  TASKGOV_RETURN_IF_ERROR(
      GetArrayOf(s, "initContainers", path, &pod->init_containers, DecodeContainer));
  TASKGOV_RETURN_IF_ERROR(GetResourceList(s, "overhead", path, &pod->overhead));
  return DecodePodResources(s, pod);
}

common::Status DecodePodStatus(const Value& status, Pod* pod) {
  std::string phase;
  TASKGOV_RETURN_IF_ERROR(GetString(status, "phase", "status", &phase));
  pod->phase = ParsePhase(phase);
  return GetTimestamp(status, "startTime", "status", &pod->start_unix_ms);
}

}  // namespace

common::Result<Pod> DecodePod(const Value& value) {
  if (!value.IsObject()) return TypeError("pod", "an object", value);
  Pod pod;
  const Value* metadata = nullptr;
  TASKGOV_RETURN_IF_ERROR(GetObject(value, "metadata", "", &metadata));
  if (metadata != nullptr) TASKGOV_RETURN_IF_ERROR(DecodePodMetadata(*metadata, &pod));
  const Value* spec = nullptr;
  TASKGOV_RETURN_IF_ERROR(GetObject(value, "spec", "", &spec));
  if (spec != nullptr) TASKGOV_RETURN_IF_ERROR(DecodePodSpec(*spec, &pod));
  const Value* status = nullptr;
  TASKGOV_RETURN_IF_ERROR(GetObject(value, "status", "", &status));
  if (status != nullptr) TASKGOV_RETURN_IF_ERROR(DecodePodStatus(*status, &pod));
  return pod;
}

common::Result<Node> DecodeNode(const Value& value) {
  if (!value.IsObject()) return TypeError("node", "an object", value);
  Node node;
  const Value* metadata = nullptr;
  TASKGOV_RETURN_IF_ERROR(GetObject(value, "metadata", "", &metadata));
  if (metadata != nullptr) {
    TASKGOV_RETURN_IF_ERROR(GetString(*metadata, "name", "metadata", &node.name));
    TASKGOV_RETURN_IF_ERROR(GetStringMap(*metadata, "labels", "metadata", &node.labels));
    TASKGOV_RETURN_IF_ERROR(
        GetString(*metadata, "resourceVersion", "metadata", &node.resource_version));
  }
  const Value* spec = nullptr;
  TASKGOV_RETURN_IF_ERROR(GetObject(value, "spec", "", &spec));
  if (spec != nullptr) {
    TASKGOV_RETURN_IF_ERROR(GetBool(*spec, "unschedulable", "spec", &node.unschedulable));
    TASKGOV_RETURN_IF_ERROR(GetArrayOf(*spec, "taints", "spec", &node.taints, DecodeTaint));
  }
  const Value* status = nullptr;
  TASKGOV_RETURN_IF_ERROR(GetObject(value, "status", "", &status));
  if (status != nullptr) {
    TASKGOV_RETURN_IF_ERROR(GetResourceList(*status, "allocatable", "status", &node.allocatable));
    TASKGOV_RETURN_IF_ERROR(GetResourceList(*status, "capacity", "status", &node.capacity));
    const Value* conditions = nullptr;
    TASKGOV_RETURN_IF_ERROR(GetArray(*status, "conditions", "status", &conditions));
    if (conditions != nullptr) {
      for (rapidjson::SizeType i = 0; i < conditions->Size(); ++i) {
        const Value& c = (*conditions)[i];
        const std::string path = Indexed("status.conditions", i);
        if (!c.IsObject()) return TypeError(path, "an object", c);
        std::string type, cond_status;
        TASKGOV_RETURN_IF_ERROR(GetString(c, "type", path, &type));
        TASKGOV_RETURN_IF_ERROR(GetString(c, "status", path, &cond_status));
        if (type == "Ready") node.ready = cond_status == "True";
      }
    }
  }
  return node;
}

const FieldSelector& PodFieldSelector() {
  static const FieldSelector* const kSelector = [] {
    const FieldSelector container = Select({
        {"name", KeepAll()},
        {"resources", KeepAll()},
        {"restartPolicy", KeepAll()},
    });
    return new FieldSelector(Select({
        {"metadata", Select({
                         {"namespace", KeepAll()},
                         {"name", KeepAll()},
                         {"uid", KeepAll()},
                         {"labels", KeepAll()},
                         {"annotations", KeepAll()},
                         {"creationTimestamp", KeepAll()},
                         {"deletionTimestamp", KeepAll()},
                         {"resourceVersion", KeepAll()},
                         {"ownerReferences", KeepAll()},
                     })},
        {"spec",
         Select({
             {"schedulerName", KeepAll()},
             {"nodeName", KeepAll()},
             {"nodeSelector", KeepAll()},
             {"tolerations", KeepAll()},
             {"affinity",
              Select({{"nodeAffinity",
                       Select({{"requiredDuringSchedulingIgnoredDuringExecution", KeepAll()}})}})},
             {"priority", KeepAll()},
             {"priorityClassName", KeepAll()},
             {"containers", container},
             {"initContainers", container},
             {"overhead", KeepAll()},
             {"resources", KeepAll()},
         })},
        {"status", Select({
                       {"phase", KeepAll()},
                       {"startTime", KeepAll()},
                   })},
    }));
  }();
  return *kSelector;
}

const FieldSelector& NodeFieldSelector() {
  static const FieldSelector* const kSelector = new FieldSelector(Select({
      {"metadata", Select({
                       {"name", KeepAll()},
                       {"labels", KeepAll()},
                       {"resourceVersion", KeepAll()},
                   })},
      {"spec", Select({
                   {"unschedulable", KeepAll()},
                   {"taints", KeepAll()},
               })},
      {"status", Select({
                     {"allocatable", KeepAll()},
                     {"capacity", KeepAll()},
                     {"conditions", KeepAll()},
                 })},
  }));
  return *kSelector;
}

}  // namespace taskgov::scheduler::model
