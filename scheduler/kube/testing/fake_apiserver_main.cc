// fake_apiserver: the fake Kubernetes API server as a process, for tests that drive a separate
// extender process and for tools/demo. It logs one JSON line {"msg":"serving","port":N,...} when
// ready (and writes --port-file), serves the control API under /fake/ (see fake_apiserver.h),
// and exits 0 on SIGTERM / SIGINT.
//
//   fake_apiserver [--listen=127.0.0.1:0] [--sample-cluster] [--port-file=PATH]
//                  [--tls-cert-file=PEM --tls-key-file=PEM [--client-ca-file=PEM]]
//                  [--token=T]... [--bookmark-interval-ms=N] [--eviction-mode=M] [--auto-run]
//                  [--no-crds] [--job-controller]
//   eviction modes: immediate (default), grace, manual

#include <signal.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "scheduler/common/log.h"
#include "scheduler/kube/testing/fake_apiserver.h"

namespace {

using taskgov::scheduler::kube::testing::EvictionMode;
using taskgov::scheduler::kube::testing::FakeApiServer;
using taskgov::scheduler::kube::testing::FakeApiServerOptions;

int Usage(const std::string& error) {
  std::cerr << "fake_apiserver: " << error << "\n"
            << "usage: fake_apiserver [--listen=HOST:PORT] [--sample-cluster] [--port-file=PATH]\n"
               "         [--tls-cert-file=PEM --tls-key-file=PEM [--client-ca-file=PEM]]\n"
               "         [--token=T]... [--bookmark-interval-ms=N]\n"
               "         [--eviction-mode=immediate|grace|manual] [--auto-run] [--no-crds]\n"
               "         [--job-controller]\n";
  return 2;
}

bool ReadAll(const std::string& path, std::string* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::stringstream buffer;
  buffer << in.rdbuf();
  *out = buffer.str();
  return true;
}

int Run(int argc, char** argv) {
  FakeApiServerOptions options;
  bool sample = false;
  std::string port_file;
  std::string cert_file, key_file, ca_file;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&](const char* flag) -> std::optional<std::string> {
      const std::string prefix = std::string(flag) + "=";
      if (arg.rfind(prefix, 0) == 0) return arg.substr(prefix.size());
      return std::nullopt;
    };
    if (arg == "--help" || arg == "-h") {
      Usage("help");
      return 0;
    } else if (auto v = value("--listen")) {
      size_t colon = v->rfind(':');
      if (colon == std::string::npos) return Usage("--listen wants HOST:PORT");
      options.address = v->substr(0, colon);
      char* end = nullptr;
      long port = std::strtol(v->c_str() + colon + 1, &end, 10);
      if (*end != '\0' || port < 0 || port > 65535) return Usage("bad port in --listen");
      options.port = static_cast<uint16_t>(port);
    } else if (arg == "--sample-cluster") {
      sample = true;
    } else if (auto v = value("--port-file")) {
      port_file = *v;
    } else if (auto v = value("--tls-cert-file")) {
      cert_file = *v;
    } else if (auto v = value("--tls-key-file")) {
      key_file = *v;
    } else if (auto v = value("--client-ca-file")) {
      ca_file = *v;
    } else if (auto v = value("--token")) {
      options.tokens.push_back(*v);
    } else if (auto v = value("--bookmark-interval-ms")) {
      options.bookmark_interval = std::chrono::milliseconds(std::strtoll(v->c_str(), nullptr, 10));
    } else if (auto v = value("--eviction-mode")) {
      if (*v == "immediate") {
        options.eviction_mode = EvictionMode::kImmediate;
      } else if (*v == "grace") {
        options.eviction_mode = EvictionMode::kGracePeriod;
      } else if (*v == "manual") {
        options.eviction_mode = EvictionMode::kManual;
      } else {
        return Usage("unknown --eviction-mode " + *v);
      }
    } else if (arg == "--auto-run") {
      options.auto_run_bound_pods = true;
    } else if (arg == "--job-controller") {
      options.simulate_job_controller = true;
    } else if (arg == "--no-crds") {
      options.serve_local_queues = false;
      options.serve_pod_groups = false;
    } else {
      return Usage("unknown argument " + arg);
    }
  }
  if (cert_file.empty() != key_file.empty()) {
    return Usage("--tls-cert-file and --tls-key-file go together");
  }
  if (!cert_file.empty() &&
      (!ReadAll(cert_file, &options.tls_cert_pem) || !ReadAll(key_file, &options.tls_key_pem))) {
    return Usage("cannot read the TLS certificate or key");
  }
  if (!ca_file.empty() && !ReadAll(ca_file, &options.client_ca_pem)) {
    return Usage("cannot read --client-ca-file");
  }

  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  FakeApiServer server(options);
  if (taskgov::common::Status s = server.Start(); !s.ok()) {
    std::cerr << "fake_apiserver: " << s.error().message << "\n";
    return 1;
  }
  if (sample) server.LoadSampleCluster();
  if (!port_file.empty()) {
    const std::string tmp = port_file + ".tmp";
    {
      std::ofstream out(tmp, std::ios::trunc);
      out << "{\"port\":" << server.port() << "}\n";
    }
    if (std::rename(tmp.c_str(), port_file.c_str()) != 0) {
      std::cerr << "fake_apiserver: cannot write " << port_file << "\n";
      return 1;
    }
  }
  taskgov::common::log::Info("fake-apiserver", "serving",
                             {{"port", static_cast<int>(server.port())},
                              {"url", server.url()},
                              {"sample_cluster", sample}});
  int signal_number = 0;
  sigwait(&signals, &signal_number);
  server.Stop();
  taskgov::common::log::Info("fake-apiserver", "stopped");
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return Run(argc, argv); }
