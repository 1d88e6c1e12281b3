#pragma once

// ClusterConfig: where the Kubernetes API server is and how to authenticate to it, loaded from
// the pod's service account (in-cluster) or from kubeconfig files (DESIGN §5).
//
// In-cluster: KUBERNETES_SERVICE_HOST / KUBERNETES_SERVICE_PORT, and from the service-account
// directory the token (kept as a token *file*, re-read by the client), ca.crt and namespace.
//
// kubeconfig: `--kubeconfig` alone if given; otherwise every file of the `$KUBECONFIG` path list
// (':'-separated; missing files skipped), merged so that the first file defining a cluster,
// user or context name wins and the first non-empty current-context wins; otherwise
// `$HOME/.kube/config`. Supported per cluster: server, certificate-authority(-data),
// insecure-skip-tls-verify, tls-server-name; per user: token, tokenFile, client-certificate(-data),
// client-key(-data), exec (client.authentication.k8s.io/v1 and v1beta1). Relative file paths
// (and exec commands containing '/') resolve against the directory of the file that names them.
//
// Loading reads files once; errors name the file and the YAML path. Pure functions otherwise;
// thread-safe.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "scheduler/common/result.h"

namespace taskgov::scheduler::kube {

// users[].user.exec of a kubeconfig.
struct ExecConfig {
  std::string api_version;  // client.authentication.k8s.io/v1 | v1beta1
  std::string command;
  std::vector<std::string> args;
  std::vector<std::pair<std::string, std::string>> env;
  std::string interactive_mode;  // Never | IfAvailable | Always ("" = IfAvailable for v1beta1)
  bool provide_cluster_info = false;
  std::string install_hint;
};

struct ClusterConfig {
  // The server URL as configured, and its parts.
  std::string server;
  std::string scheme;  // "https" | "http"
  std::string host;    // without brackets for IPv6
  uint16_t port = 0;
  std::string base_path;  // a path prefix of the server URL, without the trailing '/'

  std::string ca_pem;  // empty: the system's trust store
  bool insecure_skip_tls_verify = false;
  std::string tls_server_name;  // SNI and certificate name; empty: host

  std::string token;       // a static bearer token
  std::string token_file;  // re-read by the client (wins over `token` once readable)
  std::string client_cert_pem;
  std::string client_key_pem;
  std::optional<ExecConfig> exec;

  std::string default_namespace = "default";
  std::string source;  // where this came from, for logs: "in-cluster", "kubeconfig <path> ..."
};

// Parses "https://host:port/prefix" into `config`'s scheme/host/port/base_path. Default ports:
// 443 for https, 80 for http.
[[nodiscard]] common::Status ParseServerUrl(const std::string& server, ClusterConfig* config);

struct InClusterPaths {
  std::string token_file = "/var/run/secrets/kubernetes.io/serviceaccount/token";
  std::string ca_file = "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt";
  std::string namespace_file = "/var/run/secrets/kubernetes.io/serviceaccount/namespace";
};

using GetEnv = std::function<std::optional<std::string>(const std::string&)>;
// The process environment.
[[nodiscard]] GetEnv ProcessEnv();

// True when KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are set.
[[nodiscard]] bool InClusterAvailable(const GetEnv& env);
[[nodiscard]] common::Result<ClusterConfig> LoadInClusterConfig(const GetEnv& env,
                                                                const InClusterPaths& paths = {});

struct KubeconfigSource {
  std::string explicit_path;   // --kubeconfig
  std::string env_kubeconfig;  // $KUBECONFIG
  std::string home;            // $HOME
  std::string context;         // a context to use instead of current-context
};

// The files to read, in precedence order.
[[nodiscard]] std::vector<std::string> KubeconfigPaths(const KubeconfigSource& source);
[[nodiscard]] common::Result<ClusterConfig> LoadKubeconfig(const KubeconfigSource& source);

// What the extender does: --kubeconfig if given; else in-cluster when its environment is set;
// else $KUBECONFIG / ~/.kube/config.
[[nodiscard]] common::Result<ClusterConfig> LoadClusterConfig(const std::string& kubeconfig_flag,
                                                              const std::string& context,
                                                              const GetEnv& env,
                                                              const InClusterPaths& paths = {});

// Reads a whole file; errors name the path and the system error.
[[nodiscard]] common::Result<std::string> ReadFile(const std::string& path, std::string_view what);
// Standard base64 (with or without padding; URL-safe letters accepted); errors name `what`.

// Standard base64 with padding.

}  // namespace taskgov::scheduler::kube
