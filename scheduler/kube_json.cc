#include "scheduler/kube_json.h"

#include <string_view>

#include "scheduler/json_select.h"
#include "scheduler/kube_fields.h"
#include "scheduler/quantity.h"

namespace taskgov::scheduler {
namespace {

using rapidjson::Value;

#define TASKGOV_RETURN_IF_ERROR(expr)   \
  do {                                  \
    if (Status s_ = (expr); !s_.ok()) { \
      return s_.error();                \
    }                                   \
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

Error TypeError(const std::string& where, std::string_view expected, const Value& got) {
  return Error{where + ": expected " + std::string(expected) + ", got " + JsonTypeName(got)};
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

Status GetString(const Value& obj, std::string_view key, const std::string& path,
                 std::string* out) {
  const Value* v = Member(obj, key);
  if (v == nullptr) return Status::Ok();
  if (!v->IsString()) return TypeError(Join(path, key), "a string", *v);
  out->assign(v->GetString(), v->GetStringLength());
  return Status::Ok();
}

Status GetBool(const Value& obj, std::string_view key, const std::string& path, bool* out) {
  const Value* v = Member(obj, key);
  if (v == nullptr) return Status::Ok();
  if (!v->IsBool()) return TypeError(Join(path, key), "a boolean", *v);
  *out = v->GetBool();
  return Status::Ok();
}

// An object member; *out is nullptr when absent or null.
Status GetObject(const Value& obj, std::string_view key, const std::string& path,
                 const Value** out) {
  *out = Member(obj, key);
  if (*out != nullptr && !(*out)->IsObject()) return TypeError(Join(path, key), "an object", **out);
  return Status::Ok();
}

Status GetArray(const Value& obj, std::string_view key, const std::string& path,
                const Value** out) {
  *out = Member(obj, key);
  if (*out != nullptr && !(*out)->IsArray()) return TypeError(Join(path, key), "an array", **out);
  return Status::Ok();
}

Status GetTimestamp(const Value& obj, std::string_view key, const std::string& path,
                    std::optional<int64_t>* out) {
  const Value* v = Member(obj, key);
  if (v == nullptr) return Status::Ok();
  if (!v->IsString()) return TypeError(Join(path, key), "an RFC 3339 timestamp string", *v);
  Result<int64_t> t = ParseTimestamp(View(*v));
  if (!t.ok()) return t.error().Wrap(Join(path, key));
  *out = *t;
  return Status::Ok();
}

// map[string]string; null values are empty strings (Go's zero value).
Status GetStringMap(const Value& obj, std::string_view key, const std::string& path, Labels* out) {
  const Value* map = nullptr;
  TASKGOV_RETURN_IF_ERROR(GetObject(obj, key, path, &map));
  if (map == nullptr) return Status::Ok();
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
  return Status::Ok();
}

Status GetResourceList(const Value& obj, std::string_view key, const std::string& path,
                       ResourceList* out) {
  const Value* v = Member(obj, key);
  if (v == nullptr) return Status::Ok();
  Result<ResourceList> list = DecodeResourceList(*v, Join(path, key));
  if (!list.ok()) return list.error();
  *out = std::move(list).value();
  return Status::Ok();
}

// ---- pods ----

Status DecodeContainer(const Value& value, const std::string& path, Container* out) {
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
  return Status::Ok();
}

Status DecodeContainers(const Value& spec, std::string_view key, const std::string& path,
                        std::vector<Container>* out) {
  const Value* list = nullptr;
  TASKGOV_RETURN_IF_ERROR(GetArray(spec, key, path, &list));
  if (list == nullptr) return Status::Ok();
  out->resize(list->Size());
  for (rapidjson::SizeType i = 0; i < list->Size(); ++i) {
    TASKGOV_RETURN_IF_ERROR(DecodeContainer((*list)[i], Indexed(Join(path, key), i), &(*out)[i]));
  }
  return Status::Ok();
}

Status DecodeOwnerReferences(const Value& metadata, std::vector<OwnerReference>* out) {
  const Value* refs = nullptr;
  TASKGOV_RETURN_IF_ERROR(GetArray(metadata, "ownerReferences", "metadata", &refs));
  if (refs == nullptr) return Status::Ok();
  out->resize(refs->Size());
  for (rapidjson::SizeType i = 0; i < refs->Size(); ++i) {
    const Value& ref = (*refs)[i];
    const std::string path = Indexed("metadata.ownerReferences", i);
    if (!ref.IsObject()) return TypeError(path, "an object", ref);
    OwnerReference& o = (*out)[i];
    TASKGOV_RETURN_IF_ERROR(GetString(ref, "apiVersion", path, &o.api_version));
    TASKGOV_RETURN_IF_ERROR(GetString(ref, "kind", path, &o.kind));
    TASKGOV_RETURN_IF_ERROR(GetString(ref, "name", path, &o.name));
    TASKGOV_RETURN_IF_ERROR(GetString(ref, "uid", path, &o.uid));
    TASKGOV_RETURN_IF_ERROR(GetBool(ref, "controller", path, &o.controller));
  }
  return Status::Ok();
}

PodPhase ParsePhase(std::string_view phase) {
  if (phase.empty() || phase == "Pending") return PodPhase::kPending;
  if (phase == "Running") return PodPhase::kRunning;
  if (phase == "Succeeded") return PodPhase::kSucceeded;
  if (phase == "Failed") return PodPhase::kFailed;
  return PodPhase::kUnknown;
}

// ---- timestamps ----

bool Digits(std::string_view text, size_t pos, size_t count, int* out) {
  if (pos + count > text.size()) return false;
  int v = 0;
  for (size_t i = pos; i < pos + count; ++i) {
    if (text[i] < '0' || text[i] > '9') return false;
    v = v * 10 + (text[i] - '0');
  }
  *out = v;
  return true;
}

// Days since 1970-01-01 of a proleptic Gregorian date (the "days from civil" algorithm).
int64_t DaysFromCivil(int64_t y, int64_t m, int64_t d) {
  y -= m <= 2 ? 1 : 0;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const int64_t yoe = y - era * 400;
  const int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

int DaysInMonth(int year, int month) {
  static constexpr int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  const bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
  return month == 2 && leap ? 29 : kDays[month - 1];
}

}  // namespace

Result<int64_t> ParseTimestamp(std::string_view text) {
  const auto bad = [&](std::string_view why) {
    return Error{"invalid timestamp '" + std::string(text.substr(0, 64)) +
                 "': " + std::string(why) + " (want RFC 3339, e.g. 2006-01-02T15:04:05Z)"};
  };
  int year, month, day, hour, minute, second;
  if (!Digits(text, 0, 4, &year) || text.size() < 19 || text[4] != '-' ||
      !Digits(text, 5, 2, &month) || text[7] != '-' || !Digits(text, 8, 2, &day) ||
      (text[10] != 'T' && text[10] != 't') || !Digits(text, 11, 2, &hour) || text[13] != ':' ||
      !Digits(text, 14, 2, &minute) || text[16] != ':' || !Digits(text, 17, 2, &second)) {
    return bad("malformed");
  }
  if (month < 1 || month > 12) return bad("month out of range");
  if (day < 1 || day > DaysInMonth(year, month)) return bad("day out of range");
  if (hour > 23 || minute > 59 || second > 59) return bad("time of day out of range");
  size_t pos = 19;
  int64_t millis = 0;
  if (pos < text.size() && (text[pos] == '.' || text[pos] == ',')) {
    ++pos;
    const size_t start = pos;
    int64_t scale = 100;
    while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') {
      millis += (text[pos] - '0') * scale;  // digits past the third contribute 0 (truncated)
      scale /= 10;
      ++pos;
    }
    if (pos == start) return bad("empty fraction");
  }
  int64_t offset_minutes = 0;
  if (pos < text.size() && (text[pos] == 'Z' || text[pos] == 'z')) {
    ++pos;
  } else if (pos < text.size() && (text[pos] == '+' || text[pos] == '-')) {
    const int sign = text[pos] == '-' ? -1 : 1;
    int oh, om;
    if (!Digits(text, pos + 1, 2, &oh) || pos + 3 >= text.size() || text[pos + 3] != ':' ||
        !Digits(text, pos + 4, 2, &om)) {
      return bad("malformed zone offset");
    }
    if (oh > 23 || om > 59) return bad("zone offset out of range");
    offset_minutes = sign * (oh * 60 + om);
    pos += 6;
  } else {
    return bad("missing zone (Z or ±hh:mm)");
  }
  if (pos != text.size()) return bad("trailing characters");
  const int64_t days = DaysFromCivil(year, month, day);
  const int64_t seconds =
      days * 86400 + int64_t{hour} * 3600 + int64_t{minute} * 60 + second - offset_minutes * 60;
  return seconds * 1000 + millis;
}

Result<ResourceList> DecodeResourceList(const Value& value, const std::string& path) {
  ResourceList out;
  if (value.IsNull()) return out;
  if (!value.IsObject()) return TypeError(path, "an object of quantities", value);
  for (auto it = value.MemberBegin(); it != value.MemberEnd(); ++it) {
    const std::string_view name = View(it->name);
    const Value& q = it->value;
    Result<int64_t> amount = int64_t{0};  // null: Go's zero Quantity
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

Result<Pod> DecodePod(const Value& value) {
  if (!value.IsObject()) return TypeError("pod", "an object", value);
  Pod pod;
  const Value* metadata = nullptr;
  TASKGOV_RETURN_IF_ERROR(GetObject(value, "metadata", "", &metadata));
  if (metadata != nullptr) {
    const Value& m = *metadata;
    const std::string path = "metadata";
    TASKGOV_RETURN_IF_ERROR(GetString(m, "namespace", path, &pod.namespace_));
    TASKGOV_RETURN_IF_ERROR(GetString(m, "name", path, &pod.name));
    TASKGOV_RETURN_IF_ERROR(GetString(m, "uid", path, &pod.uid));
    TASKGOV_RETURN_IF_ERROR(GetStringMap(m, "labels", path, &pod.labels));
    TASKGOV_RETURN_IF_ERROR(GetStringMap(m, "annotations", path, &pod.annotations));
    std::optional<int64_t> created;
    TASKGOV_RETURN_IF_ERROR(GetTimestamp(m, "creationTimestamp", path, &created));
    pod.creation_unix_ms = created.value_or(0);
    TASKGOV_RETURN_IF_ERROR(GetTimestamp(m, "deletionTimestamp", path, &pod.deletion_unix_ms));
    TASKGOV_RETURN_IF_ERROR(GetString(m, "resourceVersion", path, &pod.resource_version));
    TASKGOV_RETURN_IF_ERROR(DecodeOwnerReferences(m, &pod.owner_references));
  }
  const Value* spec = nullptr;
  TASKGOV_RETURN_IF_ERROR(GetObject(value, "spec", "", &spec));
  if (spec != nullptr) {
    const Value& s = *spec;
    const std::string path = "spec";
    TASKGOV_RETURN_IF_ERROR(GetString(s, "schedulerName", path, &pod.scheduler_name));
    TASKGOV_RETURN_IF_ERROR(GetString(s, "nodeName", path, &pod.node_name));
    if (const Value* p = Member(s, "priority"); p != nullptr) {
      if (!p->IsInt()) return TypeError("spec.priority", "a 32-bit integer", *p);
      pod.priority = p->GetInt();
    }
    TASKGOV_RETURN_IF_ERROR(GetString(s, "priorityClassName", path, &pod.priority_class_name));
    TASKGOV_RETURN_IF_ERROR(DecodeContainers(s, "containers", path, &pod.containers));
    TASKGOV_RETURN_IF_ERROR(DecodeContainers(s, "initContainers", path, &pod.init_containers));
    TASKGOV_RETURN_IF_ERROR(GetResourceList(s, "overhead", path, &pod.overhead));
    const Value* resources = nullptr;
    TASKGOV_RETURN_IF_ERROR(GetObject(s, "resources", path, &resources));
    if (resources != nullptr) {
      const std::string rpath = "spec.resources";
      if (Member(*resources, "requests") != nullptr) {
        pod.pod_requests.emplace();
        TASKGOV_RETURN_IF_ERROR(GetResourceList(*resources, "requests", rpath, &*pod.pod_requests));
      }
      if (Member(*resources, "limits") != nullptr) {
        pod.pod_limits.emplace();
        TASKGOV_RETURN_IF_ERROR(GetResourceList(*resources, "limits", rpath, &*pod.pod_limits));
      }
    }
  }
  const Value* status = nullptr;
  TASKGOV_RETURN_IF_ERROR(GetObject(value, "status", "", &status));
  if (status != nullptr) {
    std::string phase;
    TASKGOV_RETURN_IF_ERROR(GetString(*status, "phase", "status", &phase));
    pod.phase = ParsePhase(phase);
    TASKGOV_RETURN_IF_ERROR(GetTimestamp(*status, "startTime", "status", &pod.start_unix_ms));
  }
  return pod;
}

Result<Node> DecodeNode(const Value& value) {
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
    const Value* taints = nullptr;
    TASKGOV_RETURN_IF_ERROR(GetArray(*spec, "taints", "spec", &taints));
    if (taints != nullptr) {
      node.taints.resize(taints->Size());
      for (rapidjson::SizeType i = 0; i < taints->Size(); ++i) {
        const Value& t = (*taints)[i];
        const std::string path = Indexed("spec.taints", i);
        if (!t.IsObject()) return TypeError(path, "an object", t);
        TASKGOV_RETURN_IF_ERROR(GetString(t, "key", path, &node.taints[i].key));
        TASKGOV_RETURN_IF_ERROR(GetString(t, "value", path, &node.taints[i].value));
        TASKGOV_RETURN_IF_ERROR(GetString(t, "effect", path, &node.taints[i].effect));
      }
    }
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
        {"spec", Select({
                     {"schedulerName", KeepAll()},
                     {"nodeName", KeepAll()},
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

}  // namespace taskgov::scheduler
