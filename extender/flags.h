#pragma once

// Command-line flags of taskgov-extender. Parsing is pure (no file access); main() checks that
// the named files are readable.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "scheduler/common/result.h"

namespace taskgov::extender {

struct HostPort {
  std::string host;  // an IP literal; IPv6 without brackets
  uint16_t port = 0;
};

// Parses "127.0.0.1:8888", "[::1]:0", ":9090" (all interfaces).
[[nodiscard]] common::Result<HostPort> ParseHostPort(std::string_view text);

struct Flags {
  HostPort listen{"127.0.0.1", 8888};        // webhook listener
  HostPort metrics_listen{"0.0.0.0", 9090};  // /metrics, /healthz, /readyz
  // /healthz and /readyz alone, on a listener of their own (its own I/O thread and cap), so that
  // probes answer whatever /metrics is doing; the kubelet's probes go here.
  HostPort health_listen{"0.0.0.0", 9092};
  // The admin API and console (read-only); nullopt: disabled (--console-listen=).
  std::optional<HostPort> console_listen = HostPort{"127.0.0.1", 9091};
  // Who may read it: "token" (a bearer token that TokenReview accepts and SubjectAccessReview
  // allows `get` on console_resource) or "none" (anyone who reaches the listener); "": token
  // with a Kubernetes API, none with --no-kube.
  std::string console_auth;
  std::string console_resource = "workloads.taskgov.io";  // resource.group, as kubectl writes it
  // The audience the console's bearer tokens must be issued for (TokenReview spec.audiences, and
  // status.audiences must name it): tokens of `kubectl create token SA --audience taskgov`, never
  // the API server's own. "": the API server's audience (tokens usable elsewhere; warned).
  std::string console_token_audience = "taskgov";
  // The console's TLS certificate and key (PEM, re-read when they change). Without them a
  // console listening off loopback serves a self-signed certificate made at startup.
  std::string console_tls_cert_file;
  std::string console_tls_key_file;
  // How often the console's history is sampled (1s..5m; the README's memory bound is for 30s).
  std::chrono::milliseconds history_interval{30'000};
  std::string url_prefix;  // e.g. "/taskgov"; verbs are served at prefix/verb
  std::string config_dir = "/etc/taskgov";
  std::string kubeconfig;
  std::string tls_cert_file;
  std::string tls_key_file;
  std::string tls_client_ca_file;
  std::string log_level = "info";
  int io_threads = 2;
  std::string port_file;     // when set, the bound ports are written here as JSON once serving
  std::string check_config;  // when set: validate this directory, print the result, exit 0 / 1
  // Run without a Kubernetes API: no informers, no binding, no leader election (webhook tests).
  bool no_kube = false;
  std::string scheduler_name = "taskgov";  // pods with this schedulerName are governed
  bool kueue_metrics = false;  // also export Kueue's metric names (dashboards, CloudWatch)
  bool leader_elect = true;
  // Ask kube-scheduler to try again the pods whose refusal lapsed (actions/requeuer.h): needs
  // `patch` on pods (deploy/base/rbac.yaml).
  bool requeue_lapsed_refusals = true;
  std::string leader_elect_namespace;  // "" → the pod's namespace in-cluster, else "default"
  std::string leader_elect_name = "taskgov";
  std::string identity;  // "" → hostname + a random suffix
  // kube-scheduler's defaults.
  std::chrono::milliseconds lease_duration{15'000};
  std::chrono::milliseconds renew_deadline{10'000};
  std::chrono::milliseconds retry_period{2'000};
  // The kubeconfig context to use ("" → its current-context).
  std::string kube_context;
  // Pods the informer lists and watches (InformerOptions::pod_field_selector; "" → all pods).
  std::string pod_field_selector = "status.phase!=Succeeded,status.phase!=Failed";
  // Webhook body limits per endpoint (WebhookOptions), in bytes.
  size_t filter_body_limit = 64 << 20;
  size_t prioritize_body_limit = 64 << 20;
  size_t preempt_body_limit = 64 << 20;
  size_t bind_body_limit = 64 << 10;
  // Webhook listener deadlines and capacity (HttpServerOptions).
  std::chrono::milliseconds header_timeout{10'000};
  std::chrono::milliseconds request_timeout{30'000};
  std::chrono::milliseconds idle_timeout{90'000};
  size_t max_connections = 1024;
  // Connections the metrics listener (/metrics, /healthz, /readyz) holds at once; same rules.
  size_t metrics_max_connections = 64;
  // The same for the console listener.
  static constexpr size_t kConsoleMaxConnections = 64;
  // The same for the health listener (probes open a connection, ask, close).
  static constexpr size_t kHealthMaxConnections = 16;
  // Request bodies held in memory at once, across every request in flight (BodyBudget). The
  // default leaves the Deployment's 1 GiB limit room for the decoding of the bodies being
  // handled and for the rest of the process (README: "Limits").
  size_t max_inflight_body_bytes = 256 << 20;
  // How long requests in flight may finish after SIGTERM.
  std::chrono::milliseconds shutdown_drain{600};
  bool help = false;
};

// Accepts `--name=value` and `--name value`. Unknown flags, missing values and malformed values
// are errors naming the flag.
[[nodiscard]] common::Result<Flags> ParseFlags(const std::vector<std::string_view>& args);

// Parses a byte size: a whole number with an optional binary suffix Ki, Mi or Gi ("65536",
// "64Ki", "64Mi").
[[nodiscard]] common::Result<size_t> ParseByteSize(std::string_view text);

// Parses a duration such as "15s", "1500ms", "2m".
[[nodiscard]] common::Result<std::chrono::milliseconds> ParseDuration(std::string_view text);

// Settings that are valid but deserve a warning at startup (each a sentence naming the flag),
// e.g. a webhook listener bound to every interface.
[[nodiscard]] std::vector<std::string> FlagWarnings(const Flags& flags);

// The open-file limit the connection caps need: the listeners' caps plus a reserve for the
// API server connections, the config directory, logs and listening sockets.
inline constexpr uint64_t kFileReserve = 256;
[[nodiscard]] uint64_t FilesNeeded(const Flags& flags);
// Given the process's soft and hard RLIMIT_NOFILE: the soft limit to set (the need, within the
// hard limit; never lowered), and a warning (a sentence naming both caps) when even the hard
// limit is short of the need — then accept() can fail with EMFILE before the caps are reached.
struct FileLimitPlan {
  uint64_t soft = 0;
  std::string warning;
};
[[nodiscard]] FileLimitPlan PlanFileLimit(const Flags& flags, uint64_t soft, uint64_t hard);

// The --help text.
[[nodiscard]] std::string Usage();

}  // namespace taskgov::extender
