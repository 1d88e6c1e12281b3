#include "extender/testing/extender_client.h"

#include <algorithm>
#include <memory>
#include <string_view>
#include <unordered_set>

#include "scheduler/common/log.h"
#include "scheduler/model/json_select.h"

namespace taskgov::extender::testing {
namespace {

using rapidjson::SizeType;
using rapidjson::Value;
using scheduler::model::FieldSelector;
using scheduler::model::FindMemberFolded;
using scheduler::model::JsonTypeName;
using scheduler::model::KeepAll;
using scheduler::model::SelectFolded;

void AppendString(std::string_view text, std::string* out) {
  out->push_back('"');
  if (text.find_first_of("\"\\") == std::string_view::npos &&
      std::none_of(text.begin(), text.end(),
                   [](char c) { return static_cast<unsigned char>(c) < 0x20; })) {
    out->append(text);
  } else {
    common::log::AppendJsonEscaped(text, out);
  }
  out->push_back('"');
}

common::Error TypeError(const std::string& where, std::string_view expected, const Value& got) {
  return common::Error{"decoding the reply: " + where + ": expected " + std::string(expected) +
                       ", got " + JsonTypeName(got)};
}

// Go: the member whose key folds to `folded_key`; null counts as absent.
const Value* Member(const Value& object, std::string_view folded_key) {
  const Value* v = FindMemberFolded(object, folded_key);
  return v != nullptr && !v->IsNull() ? v : nullptr;
}

std::string Str(const Value& v) { return std::string(v.GetString(), v.GetStringLength()); }

// Go string field: null leaves "", anything but a string is an error.
common::Status GetString(const Value& object, std::string_view folded_key, const std::string& where,
                         std::string* out) {
  const Value* v = Member(object, folded_key);
  if (v == nullptr) return common::Status::Ok();
  if (!v->IsString()) return TypeError(where, "a string", *v);
  *out = Str(*v);
  return common::Status::Ok();
}

common::Status GetInt64(const Value& object, std::string_view folded_key, const std::string& where,
                        int64_t* out) {
  const Value* v = Member(object, folded_key);
  if (v == nullptr) return common::Status::Ok();
  if (!v->IsInt64()) return TypeError(where, "a 64-bit integer", *v);
  *out = v->GetInt64();
  return common::Status::Ok();
}

// map[string]string.
common::Status GetStringMap(const Value& object, std::string_view folded_key,
                            const std::string& where, std::map<std::string, std::string>* out) {
  const Value* v = Member(object, folded_key);
  if (v == nullptr) return common::Status::Ok();
  if (!v->IsObject()) return TypeError(where, "an object", *v);
  for (auto it = v->MemberBegin(); it != v->MemberEnd(); ++it) {
    if (it->value.IsNull()) {
      (*out)[Str(it->name)] = "";
    } else if (it->value.IsString()) {
      (*out)[Str(it->name)] = Str(it->value);
    } else {
      return TypeError(where + "[\"" + Str(it->name) + "\"]", "a string", it->value);
    }
  }
  return common::Status::Ok();
}

const FieldSelector& FilterReplySelector() {
  static const FieldSelector* const kSelector = [] {
    FieldSelector node = KeepAll();
    node.capture = true;
    FieldSelector rest;
    rest.any = std::make_shared<FieldSelector>(KeepAll());
    rest.fields.push_back({"items", node});
    rest.fold_keys = true;
    FieldSelector root = KeepAll();
    root.keep_all = false;
    root.fold_keys = true;
    root.fields.push_back({"nodes", rest});
    root.any = std::make_shared<FieldSelector>(KeepAll());
    return new FieldSelector(std::move(root));
  }();
  return *kSelector;
}

scheduler::model::SelectOptions GoDecoder() {
  scheduler::model::SelectOptions options;
  options.stop_when_done = true;  // json.Decoder.Decode reads one value
  options.max_depth = 10000;      // Go's limit
  return options;
}

}  // namespace

ExtenderClient::ExtenderClient(ExtenderClientOptions options)
    : options_(std::move(options)), http_(options_.host, options_.port, options_.timeout) {
  std::string_view prefix = options_.url_prefix;
  while (!prefix.empty() && prefix.back() == '/') prefix.remove_suffix(1);
  prefix_ = std::string(prefix);
}

std::string ExtenderClient::Key(const char* go_name, const char* lower_name) const {
  std::string out;
  AppendString(options_.keys == ExtenderKeys::kGoFieldNames ? go_name : lower_name, &out);
  out.push_back(':');
  return out;
}

common::Result<common::testing::HttpReply> ExtenderClient::PostRaw(const std::string& verb,
                                                                   const std::string& body) {
  return http_.Post(prefix_ + "/" + verb, body);
}

common::Result<std::string> ExtenderClient::Send(const std::string& verb, const std::string& body) {
  common::Result<common::testing::HttpReply> reply = PostRaw(verb, body);
  if (!reply.ok()) return reply.error();
  if (reply->status != 200) {
    return common::Error{"failed " + verb + " with extender at URL " + prefix_ + "/" + verb +
                         ", code " + std::to_string(reply->status) + ": " + reply->body};
  }
  return std::move(reply->body);
}

std::string ExtenderClient::FilterNamesBody(const std::string& pod_json,
                                            const std::vector<std::string>& node_names) const {
  const bool go = options_.keys == ExtenderKeys::kGoFieldNames;
  std::string body = "{" + Key("Pod", "pod") + pod_json + ",";
  if (go) body += "\"Nodes\":null,";
  body += Key("NodeNames", "nodenames") + "[";
  for (size_t i = 0; i < node_names.size(); ++i) {
    if (i > 0) body.push_back(',');
    AppendString(node_names[i], &body);
  }
  body += "]}";
  return body;
}

std::string ExtenderClient::FilterNodesBody(const std::string& pod_json,
                                            const std::vector<std::string>& node_jsons) const {
  const bool go = options_.keys == ExtenderKeys::kGoFieldNames;
  std::string body = "{" + Key("Pod", "pod") + pod_json + "," + Key("Nodes", "nodes") +
                     "{\"metadata\":{},\"items\":[";
  for (size_t i = 0; i < node_jsons.size(); ++i) {
    if (i > 0) body.push_back(',');
    body += node_jsons[i];
  }
  body += "]}";
  if (go) body += ",\"NodeNames\":null";
  body += "}";
  return body;
}

common::Result<FilterReply> ExtenderClient::DecodeFilter(
    const std::string& body, bool node_cache_capable,
    const std::vector<std::string>* requested_names) {
  scheduler::model::SelectedJson json;
  common::Status s =
      scheduler::model::SelectiveParse(body, FilterReplySelector(), &json, GoDecoder());
  if (!s.ok()) return common::Error{"decoding the filter reply: " + s.error().message};
  const Value& root = json.doc;
  FilterReply reply;
  if (root.IsNull()) return reply;
  if (!root.IsObject()) return TypeError("ExtenderFilterResult", "an object", root);

  if (const Value* names = Member(root, "nodenames"); names != nullptr) {
    if (!names->IsArray()) return TypeError("NodeNames", "an array", *names);
    reply.node_names.emplace();
    for (SizeType i = 0; i < names->Size(); ++i) {
      const Value& n = (*names)[i];
      if (!n.IsNull() && !n.IsString()) {
        return TypeError("NodeNames[" + std::to_string(i) + "]", "a string", n);
      }
      reply.node_names->push_back(n.IsString() ? Str(n) : "");
    }
  }
  std::vector<std::string> names_of_nodes;
  if (const Value* nodes = Member(root, "nodes"); nodes != nullptr) {
    if (!nodes->IsObject()) return TypeError("Nodes", "an object", *nodes);
    reply.nodes.emplace();
    const Value* items = Member(*nodes, "items");
    if (items != nullptr) {
      if (!items->IsArray()) return TypeError("Nodes.items", "an array", *items);
      if (json.captures.size() < items->Size())
        return common::Error{"decoding the reply: span mismatch"};
      const size_t first = json.captures.size() - items->Size();
      for (SizeType i = 0; i < items->Size(); ++i) {
        const Value& item = (*items)[i];
        const std::string where = "Nodes.items[" + std::to_string(i) + "]";
        if (!item.IsObject()) return TypeError(where, "an object", item);
        std::string name;
        if (const Value* metadata = Member(item, "metadata"); metadata != nullptr) {
          if (!metadata->IsObject()) return TypeError(where + ".metadata", "an object", *metadata);
          common::Status n = GetString(*metadata, "name", where + ".metadata.name", &name);
          if (!n.ok()) return n.error();
        }
        names_of_nodes.push_back(name);
        const scheduler::model::JsonSpan span = json.captures[first + i];
        reply.nodes->push_back(body.substr(span.begin, span.end - span.begin));
      }
    }
  }
  for (auto [key, where, map] :
       {std::tuple{"failednodes", "FailedNodes", &reply.failed_nodes},
        std::tuple{"failedandunresolvablenodes", "FailedAndUnresolvableNodes",
                   &reply.failed_and_unresolvable_nodes}}) {
    common::Status m = GetStringMap(root, key, where, map);
    if (!m.ok()) return m.error();
  }
  common::Status e = GetString(root, "error", "Error", &reply.error);
  if (!e.ok()) return e.error();

  // kube-scheduler's reading of the reply.
  if (node_cache_capable && reply.node_names.has_value()) {
    std::unordered_set<std::string_view> requested;
    if (requested_names != nullptr) {
      requested.reserve(requested_names->size());
      for (const std::string& name : *requested_names) requested.insert(name);
    }
    for (const std::string& name : *reply.node_names) {
      if (reply.error.empty() && requested.count(name) == 0) {
        return common::Error{"extender claims a filtered node '" + name +
                             "' which is not found in the input node list"};
      }
      reply.feasible.push_back(name);
    }
  } else if (reply.nodes.has_value()) {
    reply.feasible = std::move(names_of_nodes);
  }
  return reply;
}

common::Result<FilterReply> ExtenderClient::FilterNames(
    const std::string& pod_json, const std::vector<std::string>& node_names) {
  common::Result<std::string> body = Send("filter", FilterNamesBody(pod_json, node_names));
  if (!body.ok()) return body.error();
  return DecodeFilter(*body, /*node_cache_capable=*/true, &node_names);
}

common::Result<FilterReply> ExtenderClient::FilterNodes(
    const std::string& pod_json, const std::vector<std::string>& node_jsons) {
  common::Result<std::string> body = Send("filter", FilterNodesBody(pod_json, node_jsons));
  if (!body.ok()) return body.error();
  return DecodeFilter(*body, /*node_cache_capable=*/false, nullptr);
}

namespace {

common::Result<std::vector<HostScore>> DecodePriorities(const std::string& body) {
  rapidjson::Document doc;
  common::Status s = scheduler::model::ParseJson(body, &doc, GoDecoder());
  if (!s.ok()) return common::Error{"decoding the prioritize reply: " + s.error().message};
  std::vector<HostScore> out;
  if (doc.IsNull()) return out;
  if (!doc.IsArray()) return TypeError("HostPriorityList", "an array", doc);
  for (SizeType i = 0; i < doc.Size(); ++i) {
    const Value& item = doc[i];
    const std::string where = "[" + std::to_string(i) + "]";
    HostScore score;
    if (!item.IsNull()) {
      if (!item.IsObject()) return TypeError(where, "an object", item);
      common::Status h = GetString(item, "host", where + ".Host", &score.host);
      if (!h.ok()) return h.error();
      common::Status sc = GetInt64(item, "score", where + ".Score", &score.score);
      if (!sc.ok()) return sc.error();
    }
    out.push_back(std::move(score));
  }
  return out;
}

}  // namespace

common::Result<std::vector<HostScore>> ExtenderClient::PrioritizeNames(
    const std::string& pod_json, const std::vector<std::string>& node_names) {
  common::Result<std::string> body = Send("prioritize", FilterNamesBody(pod_json, node_names));
  if (!body.ok()) return body.error();
  return DecodePriorities(*body);
}

common::Result<std::vector<HostScore>> ExtenderClient::PrioritizeNodes(
    const std::string& pod_json, const std::vector<std::string>& node_jsons) {
  common::Result<std::string> body = Send("prioritize", FilterNodesBody(pod_json, node_jsons));
  if (!body.ok()) return body.error();
  return DecodePriorities(*body);
}

namespace {

common::Result<PreemptReply> DecodePreempt(const std::string& body) {
  rapidjson::Document doc;
  common::Status s = scheduler::model::ParseJson(body, &doc, GoDecoder());
  if (!s.ok()) return common::Error{"decoding the preempt reply: " + s.error().message};
  PreemptReply reply;
  if (doc.IsNull()) return reply;
  if (!doc.IsObject()) return TypeError("ExtenderPreemptionResult", "an object", doc);
  common::Status e = GetString(doc, "error", "Error", &reply.error);
  if (!e.ok()) return e.error();
  const Value* map = Member(doc, "nodenametometavictims");
  if (map == nullptr) return reply;
  if (!map->IsObject()) return TypeError("NodeNameToMetaVictims", "an object", *map);
  for (auto it = map->MemberBegin(); it != map->MemberEnd(); ++it) {
    const std::string node = Str(it->name);
    const std::string where = "NodeNameToMetaVictims[\"" + node + "\"]";
    const Value& v = it->value;
    // kube-scheduler dereferences every entry: a null one would crash it.
    if (!v.IsObject()) return TypeError(where, "an object", v);
    MetaVictims victims;
    common::Status n =
        GetInt64(v, "numpdbviolations", where + ".NumPDBViolations", &victims.num_pdb_violations);
    if (!n.ok()) return n.error();
    if (const Value* pods = Member(v, "pods"); pods != nullptr) {
      if (!pods->IsArray()) return TypeError(where + ".Pods", "an array", *pods);
      for (SizeType i = 0; i < pods->Size(); ++i) {
        const Value& p = (*pods)[i];
        const std::string pod_where = where + ".Pods[" + std::to_string(i) + "]";
        if (!p.IsObject()) return TypeError(pod_where, "an object", p);
        std::string uid;
        common::Status u = GetString(p, "uid", pod_where + ".UID", &uid);
        if (!u.ok()) return u.error();
        victims.uids.push_back(std::move(uid));
      }
    }
    reply.node_to_victims[node] = std::move(victims);
  }
  return reply;
}

}  // namespace

common::Result<PreemptReply> ExtenderClient::PreemptMeta(
    const std::string& pod_json, const std::map<std::string, MetaVictims>& victims) {
  const bool go = options_.keys == ExtenderKeys::kGoFieldNames;
  std::string body = "{" + Key("Pod", "pod") + pod_json + ",";
  if (go) body += "\"NodeNameToVictims\":null,";
  body += Key("NodeNameToMetaVictims", "nodeNameToMetaVictims") + "{";
  bool first = true;
  for (const auto& [node, v] : victims) {
    if (!first) body.push_back(',');
    first = false;
    AppendString(node, &body);
    body += ":{" + Key("Pods", "pods") + "[";
    for (size_t i = 0; i < v.uids.size(); ++i) {
      if (i > 0) body.push_back(',');
      body += "{" + Key("UID", "uid");
      AppendString(v.uids[i], &body);
      body += "}";
    }
    body += "]," + Key("NumPDBViolations", "numPDBViolations") +
            std::to_string(v.num_pdb_violations) + "}";
  }
  body += "}}";
  common::Result<std::string> reply = Send("preempt", body);
  if (!reply.ok()) return reply.error();
  return DecodePreempt(*reply);
}

common::Result<PreemptReply> ExtenderClient::PreemptFull(
    const std::string& pod_json, const std::map<std::string, FullVictims>& victims) {
  const bool go = options_.keys == ExtenderKeys::kGoFieldNames;
  std::string body = "{" + Key("Pod", "pod") + pod_json + "," +
                     Key("NodeNameToVictims", "nodeNameToVictims") + "{";
  bool first = true;
  for (const auto& [node, v] : victims) {
    if (!first) body.push_back(',');
    first = false;
    AppendString(node, &body);
    body += ":{" + Key("Pods", "pods") + "[";
    for (size_t i = 0; i < v.pod_jsons.size(); ++i) {
      if (i > 0) body.push_back(',');
      body += v.pod_jsons[i];
    }
    body += "]," + Key("NumPDBViolations", "numPDBViolations") +
            std::to_string(v.num_pdb_violations) + "}";
  }
  body += "}";
  if (go) body += ",\"NodeNameToMetaVictims\":null";
  body += "}";
  common::Result<std::string> reply = Send("preempt", body);
  if (!reply.ok()) return reply.error();
  return DecodePreempt(*reply);
}

common::Result<std::string> ExtenderClient::Bind(const std::string& pod_name,
                                                 const std::string& pod_namespace,
                                                 const std::string& pod_uid,
                                                 const std::string& node) {
  std::string body = "{" + Key("PodName", "podName");
  AppendString(pod_name, &body);
  body += "," + Key("PodNamespace", "podNamespace");
  AppendString(pod_namespace, &body);
  body += "," + Key("PodUID", "podUID");
  AppendString(pod_uid, &body);
  body += "," + Key("Node", "node");
  AppendString(node, &body);
  body += "}";
  common::Result<std::string> reply = Send("bind", body);
  if (!reply.ok()) return reply.error();
  rapidjson::Document doc;
  common::Status s = scheduler::model::ParseJson(*reply, &doc, GoDecoder());
  if (!s.ok()) return common::Error{"decoding the bind reply: " + s.error().message};
  std::string error;
  if (doc.IsNull()) return error;
  if (!doc.IsObject()) return TypeError("ExtenderBindingResult", "an object", doc);
  common::Status e = GetString(doc, "error", "Error", &error);
  if (!e.ok()) return e.error();
  return error;
}

}  // namespace taskgov::extender::testing
