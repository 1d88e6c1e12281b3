#pragma once

// PrometheusServer: a real Prometheus server (the Debian package's /usr/bin/prometheus) for
// end-to-end tests of the exporter. Test support.
//
// Start() writes a config that scrapes one target every scrape_interval as job "taskgov", picks
// a free loopback port (Prometheus cannot listen on port 0: a port is found by binding port 0
// and closing it, and Start retries with another port if Prometheus then finds it taken),
// starts the server (a common::testing::Subprocess, so in a process group of its own) with its
// TSDB, config and log in a fresh directory under $TEST_TMPDIR, and waits until /-/ready answers
// 200. Query() runs an instant query through the HTTP API (/api/v1/query) on one kept-alive
// common::testing::HttpClient connection, with compression disabled (the API would gzip);
// WaitFor() repeats a query until its result satisfies a predicate, polling every 50 ms up to a
// deadline (Prometheus offers nothing to wait on). Stop() (and the destructor) sends SIGTERM to
// the server, waits up to 10 s for it to exit, then SIGKILLs its process group. The server's
// output goes to `log_path()`; errors quote its tail.
//
// Thread-safety: one thread at a time.

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "scheduler/common/result.h"
#include "scheduler/common/testing/http_client.h"
#include "scheduler/common/testing/process.h"

namespace taskgov::metrics::testing {

inline constexpr char kPrometheusBinary[] = "/usr/bin/prometheus";

struct PrometheusOptions {
  std::string binary = kPrometheusBinary;
  std::chrono::milliseconds scrape_interval{1000};
  std::chrono::milliseconds ready_timeout{60'000};
};

struct QuerySample {
  std::map<std::string, std::string> labels;  // __name__ included
  double value = 0;
};

class PrometheusServer {
 public:
  explicit PrometheusServer(PrometheusOptions options = {});
  ~PrometheusServer();
  PrometheusServer(const PrometheusServer&) = delete;
  PrometheusServer& operator=(const PrometheusServer&) = delete;

  // Whether `binary` exists and is executable (tests skip without it).
  [[nodiscard]] static bool Available(const std::string& binary = kPrometheusBinary);

  // Starts a server that scrapes http://<target><metrics_path> (target "127.0.0.1:1234").
  [[nodiscard]] common::Status Start(const std::string& target,
                                     const std::string& metrics_path = "/metrics");
  // An instant query; the result must be a vector (or scalar, returned as one sample).
  [[nodiscard]] common::Result<std::vector<QuerySample>> Query(const std::string& promql);
  // Repeats `promql` until `done(result)` holds; the last result or error at the deadline.
  [[nodiscard]] common::Result<std::vector<QuerySample>> WaitFor(
      const std::string& promql, const std::function<bool(const std::vector<QuerySample>&)>& done,
      std::chrono::milliseconds timeout);
  void Stop();

  [[nodiscard]] uint16_t port() const { return port_; }
  // The server's pid while it runs (until Stop()), else -1.
  [[nodiscard]] pid_t pid() const { return server_ ? server_->pid() : -1; }
  [[nodiscard]] const std::string& log_path() const { return log_path_; }
  // The last `bytes` of the server's output.
  [[nodiscard]] std::string LogTail(size_t bytes = 2000) const;

 private:
  common::Status StartOnce(const std::string& target, const std::string& metrics_path,
                           bool* port_taken);
  common::Result<std::string> Get(const std::string& target);

  PrometheusOptions options_;
  std::string dir_;
  std::string log_path_;
  uint16_t port_ = 0;
  std::unique_ptr<common::testing::Subprocess> server_;  // set from start until Stop()
  std::unique_ptr<common::testing::HttpClient> client_;  // to server_, while it is set
};

}  // namespace taskgov::metrics::testing
