#pragma once

// Test support for scheduler/kube: JSON builders for pods and nodes, minimal decoders standing in
// for kube_json's DecodePod / DecodeNode (they read only what these tests check), a recording
// ClusterObserver that checks the stream it receives is consistent, and small file helpers.
// Thread-safe where noted.

#include <rapidjson/document.h>

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "scheduler/cluster_api.h"
#include "scheduler/common/result.h"
#include "scheduler/kube/client.h"
#include "scheduler/kube/config.h"

namespace taskgov::scheduler::kube::testing {

inline std::string PodJson(const std::string& ns, const std::string& name,
                           const std::string& node = "", const std::string& phase = "Pending",
                           const std::string& uid = "") {
  std::string json = "{\"metadata\":{\"name\":\"" + name + "\",\"namespace\":\"" + ns + "\"";
  if (!uid.empty()) json += ",\"uid\":\"" + uid + "\"";
  json += "},\"spec\":{\"schedulerName\":\"taskgov\"";
  if (!node.empty()) json += ",\"nodeName\":\"" + node + "\"";
  json +=
      ",\"containers\":[{\"name\":\"main\",\"resources\":{\"requests\":{\"nvidia.com/gpu\":"
      "\"1\"}}}]},\"status\":{\"phase\":\"" +
      phase + "\"}}";
  return json;
}

inline std::string NodeJson(const std::string& name, const std::string& instance_type = "ml.p5",
                            const std::string& uid = "") {
  std::string json = "{\"metadata\":{\"name\":\"" + name + "\"";
  if (!uid.empty()) json += ",\"uid\":\"" + uid + "\"";
  json += ",\"labels\":{\"node.kubernetes.io/instance-type\":\"" + instance_type +
          "\"}},\"status\":{\"allocatable\":{\"nvidia.com/gpu\":\"8\"}}}";
  return json;
}

inline const rapidjson::Value* TestMember(const rapidjson::Value& v, const char* name) {
  if (!v.IsObject()) return nullptr;
  auto it = v.FindMember(name);
  return it == v.MemberEnd() ? nullptr : &it->value;
}

inline common::Result<std::string> TestString(const rapidjson::Value& root, const char* a,
                                              const char* b) {
  const rapidjson::Value* v = TestMember(root, a);
  if (v == nullptr) return std::string();
  v = TestMember(*v, b);
  if (v == nullptr || v->IsNull()) return std::string();
  if (!v->IsString()) return common::Error{std::string(a) + "." + b + ": expected a string"};
  return std::string(v->GetString(), v->GetStringLength());
}

// Reads metadata (name, namespace, uid, resourceVersion), spec.nodeName and status.phase.
inline common::Result<model::Pod> TestDecodePod(const rapidjson::Value& v) {
  model::Pod pod;
  for (auto [out, a, b] : {std::tuple{&pod.name, "metadata", "name"},
                           std::tuple{&pod.namespace_, "metadata", "namespace"},
                           std::tuple{&pod.uid, "metadata", "uid"},
                           std::tuple{&pod.resource_version, "metadata", "resourceVersion"},
                           std::tuple{&pod.node_name, "spec", "nodeName"}}) {
    common::Result<std::string> s = TestString(v, a, b);
    if (!s.ok()) return s.error();
    *out = *s;
  }
  common::Result<std::string> phase = TestString(v, "status", "phase");
  if (!phase.ok()) return phase.error();
  if (*phase == "Running") pod.phase = model::PodPhase::kRunning;
  if (*phase == "Succeeded") pod.phase = model::PodPhase::kSucceeded;
  if (*phase == "Failed") pod.phase = model::PodPhase::kFailed;
  return pod;
}

inline common::Result<model::Node> TestDecodeNode(const rapidjson::Value& v) {
  model::Node node;
  common::Result<std::string> name = TestString(v, "metadata", "name");
  if (!name.ok()) return name.error();
  node.name = *name;
  common::Result<std::string> rv = TestString(v, "metadata", "resourceVersion");
  if (!rv.ok()) return rv.error();
  node.resource_version = *rv;
  return node;
}

// Records what informers report and checks the stream is consistent as it arrives:
//  * no delete of an object it does not hold, no identical re-add (same uid and version);
//  * an object re-created under the same name (new uid) is deleted before it is re-added.
// Violations are collected in errors(). Thread-safe; Wait() blocks on a condition variable.
class RecordingObserver : public ClusterObserver {
 public:
  struct PodState {
    std::string uid;
    std::string resource_version;
    std::string node;
  };

  void OnPodUpsert(const model::Pod& pod) override {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = pods_.find(pod.key());
    if (it != pods_.end()) {
      if (it->second.uid != pod.uid) Violation("pod re-created without a delete: " + pod.key());
      if (it->second.resource_version == pod.resource_version) {
        Violation("duplicate pod upsert: " + pod.key() + "@" + pod.resource_version);
      }
    }
    pods_[pod.key()] = PodState{pod.uid, pod.resource_version, pod.node_name};
    log_.push_back("pod+ " + pod.key());
    ++pod_upserts_;
    Changed();
    if (on_pod_upsert) on_pod_upsert(pod);
  }
  void OnPodDelete(const model::Pod& pod) override {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = pods_.find(pod.key());
    if (it == pods_.end()) {
      Violation("delete of unknown pod " + pod.key());
    } else {
      if (it->second.uid != pod.uid) Violation("delete with another uid: " + pod.key());
      pods_.erase(it);
    }
    deleted_pods_.push_back(pod.key());
    deleted_phases_[pod.key()] = pod.phase;
    log_.push_back("pod- " + pod.key());
    Changed();
  }
  void OnNodeUpsert(const model::Node& node) override {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = nodes_.find(node.name);
    if (it != nodes_.end() && it->second == node.resource_version) {
      Violation("duplicate node upsert: " + node.name);
    }
    nodes_[node.name] = node.resource_version;
    log_.push_back("node+ " + node.name);
    Changed();
  }
  void OnNodeDelete(const std::string& name) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (nodes_.erase(name) == 0) Violation("delete of unknown node " + name);
    log_.push_back("node- " + name);
    Changed();
  }
  void OnNamespaceUpsert(const std::string& name, const model::Labels& labels) override {
    std::lock_guard<std::mutex> lock(mu_);
    namespaces_[name] = labels;
    Changed();
  }
  void OnNamespaceDelete(const std::string& name) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (namespaces_.erase(name) == 0) Violation("delete of unknown namespace " + name);
    Changed();
  }
  void OnLocalQueueUpsert(const std::string& ns, const std::string& name,
                          const std::string& cluster_queue) override {
    std::lock_guard<std::mutex> lock(mu_);
    local_queues_[ns + "/" + name] = cluster_queue;
    Changed();
  }
  void OnLocalQueueDelete(const std::string& ns, const std::string& name) override {
    std::lock_guard<std::mutex> lock(mu_);
    local_queues_.erase(ns + "/" + name);
    Changed();
  }
  void OnPodGroupUpsert(const std::string& ns, const std::string& name, const std::string& queue,
                        int64_t min_member) override {
    std::lock_guard<std::mutex> lock(mu_);
    pod_groups_[ns + "/" + name] = queue + "/" + std::to_string(min_member);
    Changed();
  }
  void OnPodGroupDelete(const std::string& ns, const std::string& name) override {
    std::lock_guard<std::mutex> lock(mu_);
    pod_groups_.erase(ns + "/" + name);
    Changed();
  }
  void OnGangSizeUpsert(const std::string& workload, int64_t size) override {
    std::lock_guard<std::mutex> lock(mu_);
    gang_sizes_[workload] = size;
    Changed();
  }
  void OnGangSizeDelete(const std::string& workload) override {
    std::lock_guard<std::mutex> lock(mu_);
    gang_sizes_.erase(workload);
    Changed();
  }
  void OnSynced(ObjectKind kind) override {
    std::lock_guard<std::mutex> lock(mu_);
    ++synced_[kind];
    Changed();
  }

  // Waits until `predicate` (called with the lock held) holds.
  bool Wait(const std::function<bool(RecordingObserver&)>& predicate,
            std::chrono::milliseconds timeout = std::chrono::seconds(20)) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, timeout, [&] { return predicate(*this); });
  }
  template <typename F>
  auto With(F&& f) {
    std::lock_guard<std::mutex> lock(mu_);
    return f(*this);
  }

  // Read with the lock held (inside Wait / With).
  std::map<std::string, PodState> pods_;
  std::map<std::string, std::string> nodes_;  // name → resourceVersion
  std::map<std::string, model::Labels> namespaces_;
  std::map<std::string, std::string> local_queues_;
  std::map<std::string, std::string> pod_groups_;
  std::map<std::string, int64_t> gang_sizes_;  // workload key → declared size
  std::map<ObjectKind, int> synced_;
  std::vector<std::string> deleted_pods_;
  std::map<std::string, model::PodPhase> deleted_phases_;  // what each delete said it ended as
  std::vector<std::string> log_;
  std::vector<std::string> errors_;
  int pod_upserts_ = 0;
  // Called from OnPodUpsert with the lock held (keep it short; it may block on I/O).
  std::function<void(const model::Pod&)> on_pod_upsert;

 private:
  void Violation(const std::string& what) { errors_.push_back(what); }
  void Changed() { cv_.notify_all(); }
  std::mutex mu_;
  std::condition_variable cv_;
};

// A fresh directory under TEST_TMPDIR (or /tmp).
inline std::string TempDir(const std::string& name) {
  const char* base = std::getenv("TEST_TMPDIR");
  std::filesystem::path dir = std::filesystem::path(base != nullptr ? base : "/tmp") / name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

inline void WriteFile(const std::string& path, const std::string& content) {
  std::ofstream out(path, std::ios::trunc | std::ios::binary);
  out << content;
}

inline std::string ReadTestFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

inline std::string Testdata(const std::string& name) {
  return ReadTestFile("scheduler/kube/testdata/" + name);
}

// A config pointing at a plain-HTTP fake server on 127.0.0.1.
inline ClusterConfig HttpConfig(uint16_t port) {
  ClusterConfig config;
  (void)ParseServerUrl("http://127.0.0.1:" + std::to_string(port), &config);
  config.source = "test";
  return config;
}

}  // namespace taskgov::scheduler::kube::testing
