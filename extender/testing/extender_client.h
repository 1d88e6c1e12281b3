#pragma once

// ExtenderClient: talks to an extender the way kube-scheduler's HTTPExtender does
// (pkg/scheduler/extender.go), for end-to-end tests. Test support.
//
//  * One kept-alive connection (common::testing::HttpClient), POST <url_prefix>/<verb> (the
//  prefix's
//    trailing slashes trimmed), Content-Type application/json.
//  * Requests are marshalled like Go marshals the extender types: capitalised field names with
//    unused pointers as null (kube-scheduler ≥ 1.18), or the lower-case json tags with unused
//    fields omitted (≤ 1.17).
//  * Any status but 200 is an error. Replies are decoded the way Go's json.Decoder decodes them:
//    the first JSON value (trailing bytes ignored), keys matched case-insensitively with Go's
//    folds, unknown keys ignored, null as absent, a wrong JSON type an error.
//  * Filter applies kube-scheduler's reading of the reply (FilterReply::feasible): with
//    nodeCacheCapable, "NodeNames" when present (a name not in the request is an error), else
//    "Nodes"; without it, "Nodes" only. A non-empty Error is reported in the reply, not as a
//    failed Result, so tests can inspect it; kube-scheduler treats it as a failure of the call.
//
// Thread-safety: one thread at a time per client.

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "scheduler/common/result.h"
#include "scheduler/common/testing/http_client.h"

namespace taskgov::extender::testing {

enum class ExtenderKeys {
  kGoFieldNames,  // kube-scheduler ≥ 1.18: "Pod", "NodeNames", ...
  kLowerCase,     // kube-scheduler ≤ 1.17: "pod", "nodenames", ...
};

struct ExtenderClientOptions {
  std::string host = "127.0.0.1";
  uint16_t port = 0;
  std::string url_prefix;                   // e.g. "/taskgov"
  std::chrono::milliseconds timeout{5000};  // kube-scheduler's default httpTimeout
  ExtenderKeys keys = ExtenderKeys::kGoFieldNames;
};

struct FilterReply {
  std::optional<std::vector<std::string>> node_names;  // "NodeNames" (nullopt: absent / null)
  std::optional<std::vector<std::string>> nodes;       // "Nodes".items, each as received
  std::map<std::string, std::string> failed_nodes;
  std::map<std::string, std::string> failed_and_unresolvable_nodes;
  std::string error;
  // The feasible node names as kube-scheduler reads the reply (see above).
  std::vector<std::string> feasible;
};

struct HostScore {
  std::string host;
  int64_t score = 0;
};

struct MetaVictims {
  std::vector<std::string> uids;
  int64_t num_pdb_violations = 0;
};

// Full victims (nodeCacheCapable: false): pods as v1.Pod JSON.
struct FullVictims {
  std::vector<std::string> pod_jsons;
  int64_t num_pdb_violations = 0;
};

struct PreemptReply {
  std::map<std::string, MetaVictims> node_to_victims;  // "NodeNameToMetaVictims"
  std::string error;  // "Error": a taskgov extension kube-scheduler ignores
};

class ExtenderClient {
 public:
  explicit ExtenderClient(ExtenderClientOptions options);

  // nodeCacheCapable: true. `pod_json` is a v1.Pod as JSON.
  [[nodiscard]] common::Result<FilterReply> FilterNames(const std::string& pod_json,
                                                        const std::vector<std::string>& node_names);
  // nodeCacheCapable: false. `node_jsons` are v1.Node objects as JSON.
  [[nodiscard]] common::Result<FilterReply> FilterNodes(const std::string& pod_json,
                                                        const std::vector<std::string>& node_jsons);
  [[nodiscard]] common::Result<std::vector<HostScore>> PrioritizeNames(
      const std::string& pod_json, const std::vector<std::string>& node_names);
  [[nodiscard]] common::Result<std::vector<HostScore>> PrioritizeNodes(
      const std::string& pod_json, const std::vector<std::string>& node_jsons);
  // nodeCacheCapable: true (NodeNameToMetaVictims) / false (NodeNameToVictims).
  [[nodiscard]] common::Result<PreemptReply> PreemptMeta(
      const std::string& pod_json, const std::map<std::string, MetaVictims>& victims);
  [[nodiscard]] common::Result<PreemptReply> PreemptFull(
      const std::string& pod_json, const std::map<std::string, FullVictims>& victims);
  // Returns the reply's Error ("" on success).
  [[nodiscard]] common::Result<std::string> Bind(const std::string& pod_name,
                                                 const std::string& pod_namespace,
                                                 const std::string& pod_uid,
                                                 const std::string& node);

  // POSTs an arbitrary body to <prefix>/<verb> on the same connection and returns the raw reply
  // (any status), for tests that send bad input between good requests.
  [[nodiscard]] common::Result<common::testing::HttpReply> PostRaw(const std::string& verb,
                                                                   const std::string& body);

  // The request bodies, as built for the calls above (exposed for tests and benchmarks).
  [[nodiscard]] std::string FilterNamesBody(const std::string& pod_json,
                                            const std::vector<std::string>& node_names) const;
  [[nodiscard]] std::string FilterNodesBody(const std::string& pod_json,
                                            const std::vector<std::string>& node_jsons) const;

  [[nodiscard]] int connections_opened() const { return http_.connections_opened(); }

 private:
  // POST, require 200, return the body.
  common::Result<std::string> Send(const std::string& verb, const std::string& body);
  common::Result<FilterReply> DecodeFilter(const std::string& body, bool node_cache_capable,
                                           const std::vector<std::string>* requested_names);
  std::string Key(const char* go_name, const char* lower_name) const;

  ExtenderClientOptions options_;
  std::string prefix_;
  common::testing::HttpClient http_;
};

}  // namespace taskgov::extender::testing
