#pragma once

// CredentialProvider: the bearer token and client certificate to present to the API server,
// kept fresh (DESIGN §5):
//  * a token file (in-cluster service-account tokens are rotated by the kubelet) is re-read every
//    `token_reread_interval` and after any 401 (Invalidate);
//  * an exec credential plugin (client.authentication.k8s.io/v1 or v1beta1) is run with its args
//    and env plus KUBERNETES_EXEC_INFO, stdin from /dev/null, under `exec_timeout`; its
//    ExecCredential status (token, clientCertificateData/clientKeyData, expirationTimestamp) is
//    cached until the expiry (wall clock) or until a 401 invalidates it;
//  * otherwise the static token and client certificate of the config.
// A token file that cannot be re-read keeps the last good token (logged).
//
// Thread-safety: all methods are thread-safe. Get() holds an internal mutex while it re-reads or
// runs the plugin, so concurrent callers wait for one run instead of starting several; it blocks
// for at most exec_timeout.

#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "scheduler/common/clock.h"
#include "scheduler/common/result.h"
#include "scheduler/kube/config.h"

namespace taskgov::scheduler::kube {

struct Credentials {
  std::string token;  // empty: no Authorization header
  std::string client_cert_pem;
  std::string client_key_pem;
  // Changes whenever the client certificate or key changes, so TLS contexts can be rebuilt.
  uint64_t tls_generation = 0;
};

struct CredentialOptions {
  std::chrono::milliseconds token_reread_interval{60'000};
  std::chrono::milliseconds exec_timeout{30'000};
  const common::Clock* clock = nullptr;  // nullptr: SystemClock
};

struct CredentialStats {
  uint64_t token_file_reads = 0;
  uint64_t token_file_errors = 0;
  uint64_t exec_runs = 0;
  uint64_t exec_errors = 0;
  uint64_t invalidations = 0;
};

class CredentialProvider {
 public:
  CredentialProvider(const ClusterConfig& config, CredentialOptions options);

  // Current credentials; an error only when none can be produced (the plugin failed and nothing
  // valid is cached, or the token file was never readable).
  [[nodiscard]] common::Result<Credentials> Get();
  // The server answered 401 to a request made with `rejected_token`: re-read the file / re-run
  // the plugin before the next request (unless the credentials already changed meanwhile).
  void Invalidate(const std::string& rejected_token);
  [[nodiscard]] CredentialStats stats() const;

 private:
  common::Status RunExec();
  void SetCert(std::string cert, std::string key);

  const ClusterConfig config_;
  const CredentialOptions options_;
  const common::Clock* clock_;

  mutable std::mutex mu_;
  Credentials current_;                        // guarded by mu_
  bool token_loaded_ = false;                  // guarded by mu_
  bool stale_ = false;                         // guarded by mu_: Invalidate was called
  common::Clock::SteadyTime token_read_at_{};  // guarded by mu_
  std::optional<int64_t> exec_expiry_micros_;  // guarded by mu_
  bool exec_valid_ = false;                    // guarded by mu_
  CredentialStats stats_;                      // guarded by mu_
};

struct ProcessOutput {
  int exit_code = 0;  // 128 + signal when killed
  std::string out;
  std::string err;
};

// Runs `command` (looked up in PATH when it has no '/') with `args`, the process environment
// plus `env`, stdin from /dev/null, collecting stdout and stderr (each capped at 1 MiB). Killed
// after `timeout`. Thread-safe (posix_spawn).
[[nodiscard]] common::Result<ProcessOutput> RunProcess(
    const std::string& command, const std::vector<std::string>& args,
    const std::vector<std::pair<std::string, std::string>>& env, std::chrono::milliseconds timeout);

}  // namespace taskgov::scheduler::kube
