// tools/demo: runs taskgov-extender on loopback against the built-in sample setup and narrates
// what it does. Exit status 0 when everything the demo shows worked.

#include <signal.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <regex>
#include <string>

#include "e2e/http_client.h"
#include "e2e/process.h"

namespace taskgov::e2e {
namespace {

using std::chrono::milliseconds;

int Demo(const std::string& binary) {
  std::filesystem::path dir = std::filesystem::temp_directory_path() / "taskgov-demo";
  std::filesystem::create_directories(dir / "config");
  printf("taskgov demo\n");
  printf("  starting %s on loopback\n", binary.c_str());
  Subprocess extender;
  Status started =
      extender.Start(binary, {"--listen=127.0.0.1:0", "--metrics-listen=127.0.0.1:0",
                              "--config-dir=" + (dir / "config").string(), "--no-kube"});
  if (!started.ok()) {
    fprintf(stderr, "demo: %s\n", started.error().message.c_str());
    return 1;
  }
  Result<std::string> serving = extender.WaitForLine("\"msg\":\"serving\"", milliseconds(10000));
  if (!serving.ok()) {
    fprintf(stderr, "demo: the extender did not start: %s\n", serving.error().message.c_str());
    return 1;
  }
  std::smatch m;
  std::regex port_re("\"metrics_port\":([0-9]+)");
  if (!std::regex_search(*serving, m, port_re)) {
    fprintf(stderr, "demo: no metrics port in: %s\n", serving->c_str());
    return 1;
  }
  const uint16_t metrics_port = static_cast<uint16_t>(std::stoi(m[1]));
  HttpClient health("127.0.0.1", metrics_port);
  Result<HttpReply> healthz = health.Get("/healthz");
  if (!healthz.ok() || healthz->status != 200) {
    fprintf(stderr, "demo: /healthz failed\n");
    return 1;
  }
  printf("  /healthz on 127.0.0.1:%u answered %d\n", metrics_port, healthz->status);
  extender.Signal(SIGTERM);
  std::optional<int> code = extender.Wait(milliseconds(2000));
  if (!code || *code != 0) {
    fprintf(stderr, "demo: the extender did not stop cleanly\n");
    return 1;
  }
  printf("  stopped cleanly on SIGTERM\n");
  return 0;
}

}  // namespace
}  // namespace taskgov::e2e

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s <path to taskgov-extender>\n", argv[0]);
    return 2;
  }
  return taskgov::e2e::Demo(taskgov::e2e::RunfilePath(argv[1]));
}
