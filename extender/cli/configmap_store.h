#pragma once

// ConfigMapStore: the policy ConfigMap as the CLI reads and writes it — the seam between the
// edit loop (apply.h) and the Kubernetes API. ApiConfigMapStore does one GET or one write per
// call through the product's KubeClient:
//   * Read: GET .../configmaps/{name}; 404 is "does not exist" (not an error);
//   * Write: PUT of the object as read with only `data` replaced and its metadata.resourceVersion
//     kept (the precondition), or POST of a new ConfigMap when it did not exist; `server_dry_run`
//     adds dryRun=All. 409 (Conflict, or AlreadyExists for a create) is WriteStatus::kConflict:
//     the caller re-reads; nothing is ever written without a precondition.
// Other keys of `data`, `binaryData`, labels and annotations are sent back exactly as read.
// Errors say what to do next (RBAC, reachability).
//
// Thread-compatible: one command uses one store from one thread.

#include <memory>
#include <string>
#include <vector>

#include "config/loader.h"
#include "scheduler/common/result.h"

namespace taskgov::scheduler::kube {
class KubeClient;
}

namespace taskgov::cli {

struct ConfigMapRef {
  std::string ns = "taskgov-system";
  std::string name = "taskgov-config";
  [[nodiscard]] std::string ToString() const { return ns + "/" + name; }
};

// Where the extender's admin API is: its Service (as installed by deploy/base/console-service.yaml)
// reached through the API server's service proxy, or `url` directly (a port-forward, an Ingress).
struct ConsoleRef {
  std::string ns = "taskgov-system";
  std::string name = "taskgov-console";
  int port = 9091;
  // How the API server's proxy speaks to it: "https" (the console serves TLS off loopback) or
  // "http" (--console-service http:NS/NAME:PORT).
  std::string scheme = "https";
  std::string url;      // non-empty: connect here instead of through the proxy
  std::string ca_file;  // PEM CA that signed the console's certificate, for an https `url`
  // The bearer token the console gets (--console-token, $TASKGOV_CONSOLE_TOKEN): one issued for
  // its audience (kubectl create token SA --audience taskgov); empty: the kubeconfig's.
  std::string token;
  [[nodiscard]] std::string ToString() const {
    return url.empty() ? "service " + ns + "/" + name + ":" + std::to_string(port) : url;
  }
};

struct ConfigMapState {
  bool exists = false;
  std::string resource_version;
  std::vector<config::SourceFile> files;  // `data`, sorted by key
  std::string object_json;                // the object as read; empty when it does not exist
};

enum class WriteStatus { kWritten, kConflict };

struct WriteResult {
  WriteStatus status = WriteStatus::kWritten;
  std::string resource_version;  // of the written object (unchanged for a server dry run)
  std::string message;           // the API server's, for a conflict
};

class ConfigMapStore {
 public:
  virtual ~ConfigMapStore() = default;
  [[nodiscard]] virtual common::Result<ConfigMapState> Read() = 0;
  [[nodiscard]] virtual common::Result<WriteResult> Write(
      const ConfigMapState& base, const std::vector<config::SourceFile>& files,
      bool server_dry_run) = 0;
  [[nodiscard]] virtual const ConfigMapRef& ref() const = 0;
};

// The store owns `client`.
[[nodiscard]] std::unique_ptr<ConfigMapStore> MakeApiConfigMapStore(
    std::unique_ptr<scheduler::kube::KubeClient> client, ConfigMapRef ref);

// The ConfigMap's data from its JSON object: every `data` value must be a string.
[[nodiscard]] common::Result<ConfigMapState> DecodeConfigMap(const std::string& object_json);
// `object_json` with its `data` replaced by `files` (existing keys keep their order, new keys
// follow); a new ConfigMap named by `ref` when `object_json` is empty.
[[nodiscard]] common::Result<std::string> ReplaceData(const std::string& object_json,
                                                      const ConfigMapRef& ref,
                                                      const std::vector<config::SourceFile>& files);

}  // namespace taskgov::cli
