// taskgov-extender: the process. The only file that knows every concrete class.

#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "config/check_config.h"
#include "extender/flags.h"
#include "extender/http_server.h"
#include "scheduler/common/log.h"

namespace taskgov::extender {
namespace {

constexpr std::string_view kComponent = "main";
constexpr std::chrono::milliseconds kShutdownDrain{600};

int Fail(const std::string& message) {
  std::cerr << "taskgov-extender: " << message << "\n";
  return 2;
}

Status CheckReadable(const std::string& path, std::string_view what) {
  if (path.empty()) return Status::Ok();
  if (::access(path.c_str(), R_OK) != 0) {
    return Error{"cannot read " + std::string(what) + " '" + path + "': " + strerror(errno)};
  }
  return Status::Ok();
}

Status WritePortFile(const std::string& path, uint16_t webhook, uint16_t metrics) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << "{\"webhook\":" << webhook << ",\"metrics\":" << metrics << "}\n";
    if (!out) return Error{"cannot write port file '" + tmp + "'"};
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    return Error{"cannot rename port file to '" + path + "': " + strerror(errno)};
  }
  return Status::Ok();
}

int Run(int argc, char** argv) {
  std::vector<std::string_view> args(argv + 1, argv + argc);
  Result<Flags> parsed = ParseFlags(args);
  if (!parsed.ok()) return Fail(parsed.error().message);
  const Flags& flags = *parsed;
  if (flags.help) {
    std::cout << Usage();
    return 0;
  }
  if (!flags.check_config.empty()) return config::RunCheckConfig(flags.check_config, std::cout);
  log::Level level = log::Level::kInfo;
  (void)log::ParseLevel(flags.log_level, &level);  // validated by ParseFlags
  log::SetLevel(level);

  if ((flags.tls_cert_file.empty()) != (flags.tls_key_file.empty())) {
    return Fail("--tls-cert-file and --tls-key-file go together");
  }
  if (!flags.tls_client_ca_file.empty() && flags.tls_cert_file.empty()) {
    return Fail("--tls-client-ca-file needs --tls-cert-file and --tls-key-file");
  }
  for (auto [path, what] :
       {std::pair{flags.config_dir, "config directory"}, std::pair{flags.kubeconfig, "kubeconfig"},
        std::pair{flags.tls_cert_file, "TLS certificate"}, std::pair{flags.tls_key_file, "TLS key"},
        std::pair{flags.tls_client_ca_file, "TLS client CA"}}) {
    if (Status s = CheckReadable(path, what); !s.ok()) return Fail(s.error().message);
  }

  // Block the termination signals before any thread starts, so every thread inherits the mask
  // and sigwait() below is the only place they are delivered.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  HttpServerOptions health_options;
  health_options.address = flags.metrics_listen.host;
  health_options.port = flags.metrics_listen.port;
  health_options.io_threads = 1;
  std::vector<Route> health_routes;
  health_routes.push_back(Route{"/healthz", "GET", 0, [](const HttpRequest&) {
                                  return HttpResponse{200, "text/plain", "ok\n", {}};
                                }});
  HttpServer health(health_options, std::move(health_routes));

  HttpServerOptions webhook_options;
  webhook_options.address = flags.listen.host;
  webhook_options.port = flags.listen.port;
  webhook_options.io_threads = flags.io_threads;
  if (!flags.tls_cert_file.empty()) {
    HttpTlsOptions tls;
    tls.cert_chain_file = flags.tls_cert_file;
    tls.key_file = flags.tls_key_file;
    tls.client_ca_file = flags.tls_client_ca_file;
    webhook_options.tls = tls;
  }
  HttpServer webhooks(webhook_options, {});

  if (Status s = health.Start(); !s.ok()) return Fail(s.error().message);
  if (Status s = webhooks.Start(); !s.ok()) return Fail(s.error().message);
  if (!flags.port_file.empty()) {
    if (Status s = WritePortFile(flags.port_file, webhooks.port(), health.port()); !s.ok()) {
      return Fail(s.error().message);
    }
  }
  log::Info(kComponent, "serving",
            {{"webhook_port", static_cast<int>(webhooks.port())},
             {"metrics_port", static_cast<int>(health.port())},
             {"config_dir", flags.config_dir}});

  int signal_number = 0;
  sigwait(&signals, &signal_number);
  log::Info(kComponent, "shutting down", {{"signal", strsignal(signal_number)}});
  webhooks.Shutdown(kShutdownDrain);
  health.Shutdown(std::chrono::milliseconds(100));
  log::Info(kComponent, "stopped");
  return 0;
}

}  // namespace
}  // namespace taskgov::extender

int main(int argc, char** argv) { return taskgov::extender::Run(argc, argv); }
