#include "extender/wire.h"

#include <charconv>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <unordered_map>

#include "scheduler/common/log.h"
#include "scheduler/model/json_select.h"
#include "scheduler/model/kube_fields.h"
#include "scheduler/model/kube_json.h"

namespace taskgov::extender {
namespace {

using rapidjson::SizeType;
using rapidjson::Value;
using scheduler::model::FieldSelector;
using scheduler::model::FindMemberFolded;
using scheduler::model::JsonTypeName;
using scheduler::model::KeepAll;
using scheduler::model::SelectFolded;

DecodeStatus Malformed(std::string message) {
  return DecodeStatus{DecodeFailure::kMalformed, std::move(message)};
}

DecodeStatus Unusable(std::string message) {
  return DecodeStatus{DecodeFailure::kUnusable, std::move(message)};
}

DecodeStatus TypeError(const std::string& where, std::string_view expected, const Value& got) {
  return Malformed(where + ": expected " + std::string(expected) + ", got " + JsonTypeName(got));
}

// The member whose key folds to `folded_key`, or nullptr when absent or null.
const Value* Member(const Value& object, std::string_view folded_key) {
  const Value* v = FindMemberFolded(object, folded_key);
  return v != nullptr && !v->IsNull() ? v : nullptr;
}

std::string View(const Value& s) { return std::string(s.GetString(), s.GetStringLength()); }

// ---- selectors: what each request keeps ----

const FieldSelector& ExtenderArgsSelector() {
  static const FieldSelector* const kSelector = [] {
    FieldSelector node = scheduler::model::NodeFieldSelector();
    node.capture = true;  // keep each node's text for the Nodes-mode reply
    return new FieldSelector(SelectFolded({
        {"Pod", scheduler::model::PodFieldSelector()},
        {"Nodes", SelectFolded({{"Items", node}})},
        {"NodeNames", KeepAll()},
    }));
  }();
  return *kSelector;
}

const FieldSelector& PreemptionArgsSelector() {
  static const FieldSelector* const kSelector = [] {
    FieldSelector victims_map;
    victims_map.any = std::make_shared<FieldSelector>(SelectFolded({
        {"Pods", scheduler::model::PodFieldSelector()},
        {"NumPDBViolations", KeepAll()},
    }));
    FieldSelector meta_map;
    meta_map.any = std::make_shared<FieldSelector>(SelectFolded({
        {"Pods", SelectFolded({{"UID", KeepAll()}})},
        {"NumPDBViolations", KeepAll()},
    }));
    return new FieldSelector(SelectFolded({
        {"Pod", scheduler::model::PodFieldSelector()},
        {"NodeNameToVictims", victims_map},
        {"NodeNameToMetaVictims", meta_map},
    }));
  }();
  return *kSelector;
}

const FieldSelector& BindingArgsSelector() {
  static const FieldSelector* const kSelector = new FieldSelector(SelectFolded({
      {"PodName", KeepAll()},
      {"PodNamespace", KeepAll()},
      {"PodUID", KeepAll()},
      {"Node", KeepAll()},
  }));
  return *kSelector;
}

// ---- decoding helpers ----

DecodeStatus ParseBody(std::string_view body, const FieldSelector& selector,
                       scheduler::model::SelectedJson* out) {
  common::Status s = scheduler::model::SelectiveParse(body, selector, out);
  if (!s.ok()) return Malformed(s.error().message);
  if (!out->doc.IsObject()) return TypeError("request", "a JSON object", out->doc);
  return DecodeStatus{};
}

// Decodes the request's "Pod"; *present is false when it is absent or null.
DecodeStatus DecodeRequestPod(const Value& root, scheduler::model::Pod* pod, bool* present) {
  const Value* v = Member(root, "pod");
  *present = v != nullptr;
  if (v == nullptr) return DecodeStatus{};
  if (!v->IsObject()) return TypeError("Pod", "an object", *v);
  common::Result<scheduler::model::Pod> decoded = scheduler::model::DecodePod(*v);
  if (!decoded.ok()) return Malformed("Pod: " + decoded.error().message);
  *pod = std::move(decoded).value();
  return DecodeStatus{};
}

DecodeStatus CheckPodIdentity(const scheduler::model::Pod& pod, const std::string& where) {
  for (const auto& [field, value] :
       {std::pair{"name", &pod.name}, std::pair{"namespace", &pod.namespace_},
        std::pair{"uid", &pod.uid}}) {
    if (value->empty()) return Unusable(where + " has no metadata." + field);
  }
  return DecodeStatus{};
}

DecodeStatus GetInt64(const Value& object, std::string_view folded_key, const std::string& where,
                      int64_t* out) {
  const Value* v = Member(object, folded_key);
  if (v == nullptr) return DecodeStatus{};
  if (!v->IsInt64()) return TypeError(where, "a 64-bit integer", *v);
  *out = v->GetInt64();
  return DecodeStatus{};
}

DecodeStatus GetString(const Value& object, std::string_view folded_key, const std::string& where,
                       std::string* out) {
  const Value* v = Member(object, folded_key);
  if (v == nullptr) return DecodeStatus{};
  if (!v->IsString()) return TypeError(where, "a string", *v);
  *out = View(*v);
  return DecodeStatus{};
}

// Finds names among the request's node names. Deciders return a subset in request order, so a
// forward scan finds each in amortised O(1); the first name not found ahead switches to a hash
// index (out-of-order or unknown names).
class NameIndex {
 public:
  static constexpr size_t kNone = static_cast<size_t>(-1);

  explicit NameIndex(const std::vector<std::string>& names) : names_(names) {}

  size_t Find(std::string_view name) {
    if (!indexed_) {
      for (size_t i = next_; i < names_.size(); ++i) {
        if (names_[i] == name) {
          next_ = i + 1;
          return i;
        }
      }
      index_.reserve(names_.size());
      for (size_t i = 0; i < names_.size(); ++i) index_.emplace(names_[i], i);  // first wins
      indexed_ = true;
    }
    auto it = index_.find(name);
    return it == index_.end() ? kNone : it->second;
  }

 private:
  const std::vector<std::string>& names_;
  size_t next_ = 0;
  bool indexed_ = false;
  std::unordered_map<std::string_view, size_t> index_;
};

#define TASKGOV_RETURN_IF_FAILED(expr)        \
  do {                                        \
    if (DecodeStatus s_ = (expr); !s_.ok()) { \
      return s_;                              \
    }                                         \
  } while (0)

// ---- encoding helpers ----

// Whether one of the 8 bytes of `word` is a quote, a backslash or a control character (< 0x20).
// Word-at-a-time tests, exact (no false positives): (x - 0x01..) & ~x & 0x80.. is non-zero iff a
// byte of x is zero, and (x - n * 0x01..) & ~x & 0x80.. iff a byte is below n (n <= 0x80).
bool WordNeedsEscape(uint64_t word) {
  constexpr uint64_t kOnes = 0x0101010101010101;
  constexpr uint64_t kHigh = 0x8080808080808080;
  const uint64_t quote = word ^ (kOnes * '"');
  const uint64_t backslash = word ^ (kOnes * '\\');
  const uint64_t found = ((word - kOnes * 0x20) & ~word) | ((quote - kOnes) & ~quote) |
                         ((backslash - kOnes) & ~backslash);
  return (found & kHigh) != 0;
}

// Whether `text` must be escaped in a JSON string: it holds a quote, a backslash or a control
// character. Eight bytes a step: the check is most of the cost of writing a list of names.
bool NeedsEscape(std::string_view text) {
  size_t i = 0;
  for (; i + 8 <= text.size(); i += 8) {
    uint64_t word;
    std::memcpy(&word, text.data() + i, 8);
    if (WordNeedsEscape(word)) return true;
  }
  for (; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x20 || c == '"' || c == '\\') return true;
  }
  return false;
}

// Writes `"text"` at `at` (text.size() + 2 bytes); `text` needs no escape.
char* WriteQuoted(std::string_view text, char* at) {
  *at++ = '"';
  std::memcpy(at, text.data(), text.size());
  at += text.size();
  *at++ = '"';
  return at;
}

// Appends the names at `positions` as JSON strings separated by commas. Node names need no
// escape (DNS subdomains), so the list is usually sized once and copied name by name.
void AppendNameList(const std::vector<std::string>& names, const std::vector<uint32_t>& positions,
                    std::string* out) {
  size_t bytes = 0;
  bool escape = false;
  for (uint32_t i : positions) {
    bytes += names[i].size() + 3;
    escape |= NeedsEscape(names[i]);
  }
  if (positions.empty()) return;
  if (escape) {
    for (size_t k = 0; k < positions.size(); ++k) {
      if (k > 0) out->push_back(',');
      AppendJsonString(names[positions[k]], out);
    }
    return;
  }
  const size_t at = out->size();
  out->resize(at + bytes - 1);  // no comma after the last
  char* p = out->data() + at;
  for (size_t k = 0; k < positions.size(); ++k) {
    if (k > 0) *p++ = ',';
    p = WriteQuoted(names[positions[k]], p);
  }
}

// Writes `"key":{"node":"reason",...}` for the refused nodes whose indices are valid; returns
// how many were not.
size_t AppendNodeMap(std::string_view key,
                     const std::vector<scheduler::FilterResult::Refused>& list,
                     const scheduler::FilterArgs& args, const std::vector<std::string>& reasons,
                     std::string* out) {
  AppendJsonString(key, out);
  out->append(":{");
  bool first = true;
  size_t invalid = 0;
  for (const scheduler::FilterResult::Refused& refused : list) {
    if (refused.node >= args.node_names.size() || refused.reason >= reasons.size()) {
      ++invalid;
      continue;
    }
    if (!first) out->push_back(',');
    first = false;
    AppendJsonString(args.node_names[refused.node], out);
    out->push_back(':');
    AppendJsonString(reasons[refused.reason], out);
  }
  out->push_back('}');
  return invalid;
}

}  // namespace

void AppendJsonString(std::string_view text, std::string* out) {
  if (NeedsEscape(text)) {
    out->push_back('"');
    common::log::AppendJsonEscaped(text, out);
    out->push_back('"');
    return;
  }
  const size_t at = out->size();
  out->resize(at + text.size() + 2);
  WriteQuoted(text, out->data() + at);
}

namespace {

// The request's Nodes (a NodeList): the decoded nodes, their names and each one's text in `body`
// (from the captures of `json`).
DecodeStatus DecodeNodeList(const Value& nodes, const scheduler::model::SelectedJson& json,
                            std::string_view body, FilterRequest* out) {
  scheduler::FilterArgs& args = out->args;
  if (!nodes.IsObject()) return TypeError("Nodes", "a NodeList object", nodes);
  const Value* items = Member(nodes, "items");
  if (items != nullptr && !items->IsArray()) return TypeError("Nodes.items", "an array", *items);
  const SizeType count = items != nullptr ? items->Size() : 0;
  // The chosen items array is the last one captured (last key wins at every level), so its
  // spans are the last `count` captures.
  if (json.captures.size() < count) return Malformed("Nodes.items: internal span mismatch");
  const size_t first_span = json.captures.size() - count;
  args.nodes.reserve(count);
  args.node_names.reserve(count);
  out->raw_nodes.reserve(count);
  for (SizeType i = 0; i < count; ++i) {
    const std::string where = "Nodes.items[" + std::to_string(i) + "]";
    const Value& item = (*items)[i];
    if (!item.IsObject()) return TypeError(where, "a Node object", item);
    common::Result<scheduler::model::Node> node = scheduler::model::DecodeNode(item);
    if (!node.ok()) return Malformed(where + ": " + node.error().message);
    const scheduler::model::JsonSpan span = json.captures[first_span + i];
    args.node_names.push_back(node->name);
    args.nodes.push_back(std::move(node).value());
    out->raw_nodes.push_back(body.substr(span.begin, span.end - span.begin));
  }
  return DecodeStatus{};
}

// The request's NodeNames (an array) into *out.
DecodeStatus DecodeNodeNames(const Value& names, std::vector<std::string>* out) {
  out->reserve(names.Size());
  for (SizeType i = 0; i < names.Size(); ++i) {
    const Value& name = names[i];
    if (!name.IsString())
      return TypeError("NodeNames[" + std::to_string(i) + "]", "a string", name);
    out->push_back(View(name));
  }
  return DecodeStatus{};
}

// One node's entry of NodeNameToVictims (full pods) or NodeNameToMetaVictims (`is_meta`: UIDs
// only); null is no victims.
DecodeStatus DecodeVictims(const Value& v, const std::string& where, bool is_meta,
                           scheduler::Victims* victims) {
  if (v.IsNull()) return DecodeStatus{};
  if (!v.IsObject()) return TypeError(where, "an object", v);
  TASKGOV_RETURN_IF_FAILED(
      GetInt64(v, "numpdbviolations", where + ".NumPDBViolations", &victims->num_pdb_violations));
  const Value* pods = Member(v, "pods");
  if (pods == nullptr) return DecodeStatus{};
  if (!pods->IsArray()) return TypeError(where + ".Pods", "an array", *pods);
  for (SizeType i = 0; i < pods->Size(); ++i) {
    const std::string pod_where = where + ".Pods[" + std::to_string(i) + "]";
    const Value& p = (*pods)[i];
    if (!p.IsObject()) return TypeError(pod_where, "an object", p);
    scheduler::model::Pod pod;
    if (is_meta) {
      TASKGOV_RETURN_IF_FAILED(GetString(p, "uid", pod_where + ".UID", &pod.uid));
    } else {
      common::Result<scheduler::model::Pod> decoded = scheduler::model::DecodePod(p);
      if (!decoded.ok()) return Malformed(pod_where + ": " + decoded.error().message);
      pod = std::move(decoded).value();
    }
    victims->pods.push_back(std::move(pod));
  }
  return DecodeStatus{};
}

// Every node's victims of one of the two maps into *out; a node given twice: the last wins.
DecodeStatus DecodeVictimsMap(const Value& map, bool is_meta,
                              std::map<std::string, scheduler::Victims>* out) {
  const std::string map_name = is_meta ? "NodeNameToMetaVictims" : "NodeNameToVictims";
  if (!map.IsObject()) return TypeError(map_name, "an object", map);
  for (auto it = map.MemberBegin(); it != map.MemberEnd(); ++it) {
    const std::string node = View(it->name);
    scheduler::Victims victims;
    TASKGOV_RETURN_IF_FAILED(
        DecodeVictims(it->value, map_name + "[\"" + node + "\"]", is_meta, &victims));
    (*out)[node] = std::move(victims);
  }
  return DecodeStatus{};
}

}  // namespace

DecodeStatus DecodeFilterRequest(std::string_view body, FilterRequest* out) {
  *out = FilterRequest{};
  scheduler::model::SelectedJson json;
  TASKGOV_RETURN_IF_FAILED(ParseBody(body, ExtenderArgsSelector(), &json));
  const Value& root = json.doc;
  scheduler::FilterArgs& args = out->args;

  bool has_pod = false;
  TASKGOV_RETURN_IF_FAILED(DecodeRequestPod(root, &args.pod, &has_pod));

  const Value* nodes = Member(root, "nodes");
  const Value* names = Member(root, "nodenames");
  if (nodes != nullptr) TASKGOV_RETURN_IF_FAILED(DecodeNodeList(*nodes, json, body, out));
  if (names != nullptr) {
    if (!names->IsArray()) return TypeError("NodeNames", "an array of strings", *names);
    if (nodes == nullptr) TASKGOV_RETURN_IF_FAILED(DecodeNodeNames(*names, &args.node_names));
  }

  // Well-formed from here on; is it usable?
  if (!has_pod) return Unusable("the request has no Pod");
  TASKGOV_RETURN_IF_FAILED(CheckPodIdentity(args.pod, "Pod"));
  if (nodes != nullptr && names != nullptr) {
    return Unusable("the request carries both Nodes and NodeNames; expected one of them");
  }
  if (nodes == nullptr && names == nullptr) {
    return Unusable("the request carries neither Nodes nor NodeNames");
  }
  args.node_names_mode = nodes == nullptr;
  for (size_t i = 0; i < args.nodes.size(); ++i) {
    if (args.nodes[i].name.empty()) {
      return Unusable("Nodes.items[" + std::to_string(i) + "] has no metadata.name");
    }
  }
  return DecodeStatus{};
}

DecodeStatus DecodePreemptRequest(std::string_view body, scheduler::PreemptArgs* out) {
  *out = scheduler::PreemptArgs{};
  scheduler::model::SelectedJson json;
  TASKGOV_RETURN_IF_FAILED(ParseBody(body, PreemptionArgsSelector(), &json));
  const Value& root = json.doc;
  bool has_pod = false;
  TASKGOV_RETURN_IF_FAILED(DecodeRequestPod(root, &out->pod, &has_pod));

  const Value* full = Member(root, "nodenametovictims");
  const Value* meta = Member(root, "nodenametometavictims");
  if (full != nullptr) {
    TASKGOV_RETURN_IF_FAILED(DecodeVictimsMap(*full, /*is_meta=*/false, &out->node_to_victims));
  }
  if (meta != nullptr) {
    TASKGOV_RETURN_IF_FAILED(DecodeVictimsMap(*meta, /*is_meta=*/true, &out->node_to_victims));
  }

  if (!has_pod) return Unusable("the request has no Pod");
  TASKGOV_RETURN_IF_FAILED(CheckPodIdentity(out->pod, "Pod"));
  if (full != nullptr && meta != nullptr) {
    return Unusable(
        "the request carries both NodeNameToVictims and NodeNameToMetaVictims; expected one");
  }
  if (full == nullptr && meta == nullptr) {
    return Unusable(
        "the request has neither NodeNameToVictims nor NodeNameToMetaVictims (both absent or "
        "null); expected one");
  }
  out->meta = meta != nullptr;
  for (const auto& [node, victims] : out->node_to_victims) {
    for (size_t i = 0; i < victims.pods.size(); ++i) {
      if (victims.pods[i].uid.empty()) {
        return Unusable("victim " + std::to_string(i) + " on node '" + node + "' has no UID");
      }
    }
  }
  return DecodeStatus{};
}

DecodeStatus DecodeBindRequest(std::string_view body, scheduler::BindArgs* out) {
  *out = scheduler::BindArgs{};
  scheduler::model::SelectedJson json;
  TASKGOV_RETURN_IF_FAILED(ParseBody(body, BindingArgsSelector(), &json));
  const Value& root = json.doc;
  TASKGOV_RETURN_IF_FAILED(GetString(root, "podname", "PodName", &out->pod_name));
  TASKGOV_RETURN_IF_FAILED(GetString(root, "podnamespace", "PodNamespace", &out->pod_namespace));
  TASKGOV_RETURN_IF_FAILED(GetString(root, "poduid", "PodUID", &out->pod_uid));
  TASKGOV_RETURN_IF_FAILED(GetString(root, "node", "Node", &out->node));
  for (const auto& [field, value] :
       {std::pair{"PodName", &out->pod_name}, std::pair{"PodNamespace", &out->pod_namespace},
        std::pair{"Node", &out->node}}) {
    if (value->empty()) return Unusable(std::string("the bind request has no ") + field);
  }
  return DecodeStatus{};
}

std::string EncodeFilterResult(const FilterRequest& request, const scheduler::FilterResult& result,
                               size_t* dropped) {
  const scheduler::FilterArgs& args = request.args;
  // Positions in the request of the feasible nodes; an index the request does not have is
  // dropped (kube-scheduler would fail the whole call on a node it did not send).
  std::vector<uint32_t> positions;
  positions.reserve(result.feasible.size());
  size_t unknown = 0;
  size_t bytes = 128;
  for (uint32_t i : result.feasible) {
    if (i >= args.node_names.size() || (!args.node_names_mode && i >= request.raw_nodes.size())) {
      ++unknown;
      continue;
    }
    positions.push_back(i);
    bytes +=
        (args.node_names_mode ? args.node_names[i].size() + 3 : request.raw_nodes[i].size() + 1);
  }
  for (const std::string& reason : result.reasons) bytes += reason.size() + 6;
  bytes += (result.failed.size() + result.unresolvable.size()) * 24;

  std::string out;
  out.reserve(bytes + result.error.size());
  if (args.node_names_mode) {
    out.append("{\"NodeNames\":[");
    AppendNameList(args.node_names, positions, &out);
    out.append("]");
  } else {
    out.append("{\"Nodes\":{\"metadata\":{},\"items\":[");
    for (size_t k = 0; k < positions.size(); ++k) {
      if (k > 0) out.push_back(',');
      out.append(request.raw_nodes[positions[k]]);
    }
    out.append("]}");
  }
  out.push_back(',');
  unknown += AppendNodeMap("FailedNodes", result.failed, args, result.reasons, &out);
  out.push_back(',');
  unknown +=
      AppendNodeMap("FailedAndUnresolvableNodes", result.unresolvable, args, result.reasons, &out);
  out.append(",\"Error\":");
  AppendJsonString(result.error, &out);
  out.push_back('}');
  if (dropped != nullptr) *dropped = unknown;
  return out;
}

std::string EncodeFilterError(std::string_view error) {
  std::string out = "{\"FailedNodes\":{},\"FailedAndUnresolvableNodes\":{},\"Error\":";
  AppendJsonString(error, &out);
  out.push_back('}');
  return out;
}

std::string EncodePriorities(const std::vector<scheduler::HostPriority>& priorities) {
  std::string out;
  out.reserve(2 + priorities.size() * 40);
  out.push_back('[');
  for (size_t i = 0; i < priorities.size(); ++i) {
    if (i > 0) out.push_back(',');
    out.append("{\"Host\":");
    AppendJsonString(priorities[i].host, &out);
    char score[24];
    const std::to_chars_result digits =
        std::to_chars(score, score + sizeof(score), priorities[i].score);
    out.append(",\"Score\":");
    out.append(score, digits.ptr);
    out.push_back('}');
  }
  out.push_back(']');
  return out;
}

std::string EncodePreemptResult(const scheduler::PreemptResult& result) {
  std::string out = "{\"NodeNameToMetaVictims\":{";
  bool first_node = true;
  for (const auto& [node, victims] : result.node_to_victims) {
    if (!first_node) out.push_back(',');
    first_node = false;
    AppendJsonString(node, &out);
    out.append(":{\"Pods\":[");
    for (size_t i = 0; i < victims.pods.size(); ++i) {
      if (i > 0) out.push_back(',');
      out.append("{\"UID\":");
      AppendJsonString(victims.pods[i].uid, &out);
      out.push_back('}');
    }
    out.append("],\"NumPDBViolations\":");
    out.append(std::to_string(victims.num_pdb_violations));
    out.push_back('}');
  }
  out.push_back('}');
  if (!result.error.empty()) {
    out.append(",\"Error\":");
    AppendJsonString(result.error, &out);
  }
  out.push_back('}');
  return out;
}

std::string EncodeBindResult(const scheduler::BindResult& result) {
  return EncodeError(result.error);
}

std::string EncodeError(std::string_view message) {
  std::string out = "{\"Error\":";
  AppendJsonString(message, &out);
  out.push_back('}');
  return out;
}

}  // namespace taskgov::extender
