#include "extender/cli/testing/cli_fixture.h"

#include <gtest/gtest.h>
#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "extender/cli/commands.h"

namespace taskgov::cli::testing {

namespace {

constexpr char kConfigMapPath[] = "/api/v1/namespaces/taskgov-system/configmaps";

std::string ConfigMapJson(const ConfigData& data) {
  rapidjson::Document doc(rapidjson::kObjectType);
  auto& a = doc.GetAllocator();
  rapidjson::Value meta(rapidjson::kObjectType);
  meta.AddMember("name", "taskgov-config", a);
  meta.AddMember("namespace", "taskgov-system", a);
  doc.AddMember("metadata", meta, a);
  rapidjson::Value values(rapidjson::kObjectType);
  for (const auto& [k, v] : data) {
    values.AddMember(rapidjson::Value(k.c_str(), a), rapidjson::Value(v.c_str(), a), a);
  }
  doc.AddMember("data", values, a);
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> writer(buffer);
  doc.Accept(writer);
  return buffer.GetString();
}

}  // namespace

CliFixture::CliFixture() = default;
CliFixture::CliFixture(scheduler::kube::testing::FakeApiServerOptions options)
    : options_(std::move(options)) {}

CliFixture::~CliFixture() {
  if (api_) api_->Stop();
  if (!dir_.empty()) std::filesystem::remove_all(dir_);
}

bool CliFixture::Start() {
  api_ = std::make_unique<scheduler::kube::testing::FakeApiServer>(options_);
  common::Status started = api_->Start();
  EXPECT_TRUE(started.ok()) << started.error().message;
  if (!started.ok()) return false;
  const char* tmp = getenv("TEST_TMPDIR");
  std::string pattern = std::string(tmp != nullptr ? tmp : "/tmp") + "/cli-XXXXXX";
  if (mkdtemp(pattern.data()) == nullptr) {
    ADD_FAILURE() << "mkdtemp failed";
    return false;
  }
  dir_ = pattern;
  kubeconfig_ = dir_ + "/kubeconfig";
  std::ofstream out(kubeconfig_);
  out << scheduler::kube::testing::KubeconfigFor(api_->url());
  return static_cast<bool>(out);
}

CliRun CliFixture::Run(std::vector<std::string> args) {
  args.push_back("--kubeconfig=" + kubeconfig_);
  return RunOffline(args);
}

CliRun CliFixture::RunOffline(const std::vector<std::string>& args) {
  std::ostringstream out, err;
  Environment env;
  env.out = &out;
  env.err = &err;
  CliRun run;
  run.code = RunTaskgov(args, env);
  run.out = out.str();
  run.err = err.str();
  return run;
}

CliRun CliFixture::RunAnswering(std::vector<std::string> args, const std::string& input) {
  args.push_back("--kubeconfig=" + kubeconfig_);
  std::ostringstream out, err;
  std::istringstream in(input);
  Environment env;
  env.out = &out;
  env.err = &err;
  env.in = &in;
  env.interactive = true;
  CliRun run;
  run.code = RunTaskgov(args, env);
  run.out = out.str();
  run.err = err.str();
  return run;
}

void CliFixture::PutConfigMap(const ConfigData& data) {
  common::Result<std::string> stored = api_->Upsert("configmaps", ConfigMapJson(data));
  ASSERT_TRUE(stored.ok()) << stored.error().message;
}

ConfigData CliFixture::Data() const {
  ConfigData data;
  std::optional<std::string> json = api_->Get("configmaps", "taskgov-system", "taskgov-config");
  if (!json) return data;
  rapidjson::Document doc;
  doc.Parse(json->c_str());
  if (!doc.IsObject() || !doc.HasMember("data") || !doc["data"].IsObject()) return data;
  for (const auto& m : doc["data"].GetObject()) {
    if (m.value.IsString()) data[m.name.GetString()] = m.value.GetString();
  }
  return data;
}

std::string CliFixture::ResourceVersion() const {
  std::optional<std::string> json = api_->Get("configmaps", "taskgov-system", "taskgov-config");
  if (!json) return "";
  rapidjson::Document doc;
  doc.Parse(json->c_str());
  if (!doc.IsObject() || !doc.HasMember("metadata") || !doc["metadata"].IsObject()) return "";
  const rapidjson::Value& meta = doc["metadata"];
  if (!meta.HasMember("resourceVersion") || !meta["resourceVersion"].IsString()) return "";
  return meta["resourceVersion"].GetString();
}

std::vector<std::string> CliFixture::ConfigMapRequests() const {
  std::vector<std::string> out;
  for (const auto& r : api_->requests()) {
    if (r.path.starts_with(kConfigMapPath)) out.push_back(r.method + " " + r.target);
  }
  return out;
}

namespace {

std::string Serialize(const rapidjson::Document& doc) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> writer(buffer);
  doc.Accept(writer);
  return std::string(buffer.GetString(), buffer.GetSize());
}

// The teams of `teams_json` whose namespaces include `ns` (the extender resolves a namespace
// listed by a team to that team).
std::string TeamsOfNamespace(const std::string& teams_json, const std::string& ns) {
  rapidjson::Document doc;
  doc.Parse(teams_json.c_str());
  rapidjson::Value kept(rapidjson::kArrayType);
  for (auto& team : doc["items"].GetArray()) {
    bool owns = false;
    if (team.HasMember("namespaces")) {
      for (const auto& n : team["namespaces"].GetArray()) owns = owns || n.GetString() == ns;
    }
    if (owns) kept.PushBack(rapidjson::Value(team, doc.GetAllocator()), doc.GetAllocator());
  }
  doc["items"] = kept;
  return Serialize(doc);
}

}  // namespace

scheduler::kube::testing::ServiceHandler AdminApiFixture(
    std::string teams_json, std::string workloads_json,
    std::map<std::string, std::string> explanations, std::string policy_json) {
  return [teams_json, workloads_json, explanations, policy_json](const std::string& method,
                                                                 const std::string& target) {
    if (method != "GET") return std::make_pair(405, std::string(R"({"error":"GET only"})"));
    const size_t q = target.find('?');
    const std::string path = target.substr(0, q);
    std::map<std::string, std::string> query;
    for (std::string rest = q == std::string::npos ? "" : target.substr(q + 1); !rest.empty();) {
      const size_t amp = rest.find('&');
      const std::string pair = rest.substr(0, amp);
      const size_t eq = pair.find('=');
      query[pair.substr(0, eq)] = eq == std::string::npos ? "" : pair.substr(eq + 1);
      rest = amp == std::string::npos ? "" : rest.substr(amp + 1);
    }
    if (path == "/api/v1/teams") {
      auto ns = query.find("namespace");
      return std::make_pair(
          200, ns == query.end() ? teams_json : TeamsOfNamespace(teams_json, ns->second));
    }
    if (path == "/api/v1/policy" && !policy_json.empty()) return std::make_pair(200, policy_json);
    const std::string prefix = "/api/v1/workloads/", suffix = "/explanation";
    if (path.starts_with(prefix) && path.ends_with(suffix)) {
      auto it = explanations.find(
          path.substr(prefix.size(), path.size() - prefix.size() - suffix.size()));
      if (it == explanations.end()) {
        return std::make_pair(404, std::string(R"({"error":"no such workload"})"));
      }
      return std::make_pair(200, it->second);
    }
    if (path != "/api/v1/workloads") {
      return std::make_pair(404, std::string(R"({"error":"not found"})"));
    }
    rapidjson::Document doc;
    doc.Parse(workloads_json.c_str());
    rapidjson::Value kept(rapidjson::kArrayType);
    for (auto& item : doc["items"].GetArray()) {
      bool match = true;
      for (const char* field : {"namespace", "team", "state"}) {
        auto want = query.find(field);
        match = match && (want == query.end() || item[field].GetString() == want->second);
      }
      if (match) kept.PushBack(rapidjson::Value(item, doc.GetAllocator()), doc.GetAllocator());
    }
    doc["items"] = kept;
    return std::make_pair(200, Serialize(doc));
  };
}

std::string HyperPodQuotaJson(const std::string& team, const std::string& type, int count) {
  return "{\n  \"Name\": \"" + team +
         "-quota\",\n  \"ComputeQuotaConfig\": {\n    \"ComputeQuotaResources\": [\n"
         "      {\"InstanceType\": \"" +
         type + "\", \"Count\": " + std::to_string(count) +
         "}\n    ],\n    \"ResourceSharingConfig\": {\"Strategy\": \"Lend\"},\n"
         "    \"PreemptTeamTasks\": \"Never\"\n  },\n"
         "  \"ComputeQuotaTarget\": {\"TeamName\": \"" +
         team + "\", \"FairShareWeight\": 20}\n}\n";
}

}  // namespace taskgov::cli::testing
