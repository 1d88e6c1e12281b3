#include "extender/cli/configmap_store.h"

#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>
#include <map>

#include "scheduler/kube/client.h"

namespace taskgov::cli {

namespace {

using scheduler::kube::ApiError;

std::string Serialize(const rapidjson::Value& v) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> writer(buffer);
  v.Accept(writer);
  return std::string(buffer.GetString(), buffer.GetSize());
}

// What to do about an API error, for people.
common::Error Explain(const ApiError& e, const ConfigMapRef& ref) {
  std::string hint;
  if (e.transport()) {
    hint =
        "check that the API server is reachable and that --kubeconfig / --context name the "
        "right cluster";
  } else if (e.status == 401) {
    hint = "your credentials were refused: log in again or check the kubeconfig user";
  } else if (e.status == 403) {
    hint = "you need get and update on configmaps in namespace " + ref.ns +
           " (ask an admin, or use --as with a user who may)";
  } else {
    hint = "nothing was written";
  }
  return common::Error{e.ToString() + " (" + hint + ")"};
}

class ApiConfigMapStore : public ConfigMapStore {
 public:
  ApiConfigMapStore(std::unique_ptr<scheduler::kube::KubeClient> client, ConfigMapRef ref)
      : client_(std::move(client)), ref_(std::move(ref)) {}

  common::Result<ConfigMapState> Read() override {
    auto reply = client_->Call("GET", ItemPath());
    if (!reply.ok()) {
      if (reply.error().status == 404) return ConfigMapState{};
      return Explain(reply.error(), ref_);
    }
    return DecodeConfigMap(reply->body);
  }

  common::Result<WriteResult> Write(const ConfigMapState& base,
                                    const std::vector<config::SourceFile>& files,
                                    bool server_dry_run) override {
    common::Result<std::string> body = ReplaceData(base.object_json, ref_, files);
    if (!body.ok()) return body.error();
    const std::string query = server_dry_run ? "?dryRun=All" : "";
    auto reply = base.exists ? client_->Call("PUT", ItemPath() + query, std::move(*body))
                             : client_->Call("POST", CollectionPath() + query, std::move(*body));
    if (!reply.ok()) {
      if (reply.error().status == 409) {
        return WriteResult{WriteStatus::kConflict, "", reply.error().message};
      }
      return Explain(reply.error(), ref_);
    }
    common::Result<ConfigMapState> written = DecodeConfigMap(reply->body);
    if (!written.ok()) return written.error().Wrap("the API server's reply");
    return WriteResult{WriteStatus::kWritten, written->resource_version, ""};
  }

  const ConfigMapRef& ref() const override { return ref_; }

 private:
  std::string CollectionPath() const {
    return "/api/v1/namespaces/" + scheduler::kube::QueryEscape(ref_.ns) + "/configmaps";
  }
  std::string ItemPath() const {
    return CollectionPath() + "/" + scheduler::kube::QueryEscape(ref_.name);
  }

  std::unique_ptr<scheduler::kube::KubeClient> client_;
  const ConfigMapRef ref_;
};

}  // namespace

std::unique_ptr<ConfigMapStore> MakeApiConfigMapStore(
    std::unique_ptr<scheduler::kube::KubeClient> client, ConfigMapRef ref) {
  return std::make_unique<ApiConfigMapStore>(std::move(client), std::move(ref));
}

common::Result<ConfigMapState> DecodeConfigMap(const std::string& object_json) {
  rapidjson::Document doc;
  doc.Parse(object_json.c_str(), object_json.size());
  if (doc.HasParseError() || !doc.IsObject()) {
    return common::Error{"the ConfigMap is not a JSON object"};
  }
  ConfigMapState state;
  state.exists = true;
  state.object_json = object_json;
  auto meta = doc.FindMember("metadata");
  if (meta != doc.MemberEnd() && meta->value.IsObject()) {
    auto rv = meta->value.FindMember("resourceVersion");
    if (rv != meta->value.MemberEnd() && rv->value.IsString()) {
      state.resource_version = rv->value.GetString();
    }
  }
  if (state.resource_version.empty()) {
    return common::Error{"the ConfigMap has no metadata.resourceVersion"};
  }
  auto data = doc.FindMember("data");
  if (data == doc.MemberEnd() || data->value.IsNull()) return state;
  if (!data->value.IsObject()) return common::Error{"the ConfigMap's data is not an object"};
  for (const auto& m : data->value.GetObject()) {
    if (!m.value.IsString()) {
      return common::Error{std::string("the ConfigMap's data.") + m.name.GetString() +
                           " is not a string"};
    }
    state.files.push_back(
        config::SourceFile{std::string(m.name.GetString(), m.name.GetStringLength()),
                           std::string(m.value.GetString(), m.value.GetStringLength())});
  }
  std::sort(
      state.files.begin(), state.files.end(),
      [](const config::SourceFile& a, const config::SourceFile& b) { return a.name < b.name; });
  return state;
}

common::Result<std::string> ReplaceData(const std::string& object_json, const ConfigMapRef& ref,
                                        const std::vector<config::SourceFile>& files) {
  rapidjson::Document doc;
  if (object_json.empty()) {
    doc.Parse(R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{}})");
    auto& a = doc.GetAllocator();
    doc["metadata"].AddMember("name", rapidjson::Value(ref.name.c_str(), a), a);
    doc["metadata"].AddMember("namespace", rapidjson::Value(ref.ns.c_str(), a), a);
  } else {
    doc.Parse(object_json.c_str(), object_json.size());
    if (doc.HasParseError() || !doc.IsObject()) {
      return common::Error{"the ConfigMap is not a JSON object"};
    }
  }
  auto& a = doc.GetAllocator();
  std::map<std::string, const std::string*> wanted;
  for (const config::SourceFile& f : files) wanted[f.name] = &f.content;
  rapidjson::Value data(rapidjson::kObjectType);
  auto old = doc.FindMember("data");
  if (old != doc.MemberEnd() && old->value.IsObject()) {
    for (auto& m : old->value.GetObject()) {
      auto it = wanted.find(m.name.GetString());
      if (it == wanted.end()) continue;
      data.AddMember(rapidjson::Value(it->first.c_str(), a),
                     rapidjson::Value(it->second->c_str(), it->second->size(), a), a);
      wanted.erase(it);
    }
  }
  for (const auto& [key, content] : wanted) {
    data.AddMember(rapidjson::Value(key.c_str(), a),
                   rapidjson::Value(content->c_str(), content->size(), a), a);
  }
  if (old != doc.MemberEnd()) {
    old->value = std::move(data);
  } else {
    doc.AddMember("data", std::move(data), a);
  }
  return Serialize(doc);
}

}  // namespace taskgov::cli
