// The taskgov-extender process as an operator meets it: flags, health, signals, exit codes.

#include <signal.h>

#include <chrono>
#include <filesystem>
#include <regex>
#include <string>

#include <gtest/gtest.h>

#include "scheduler/common/testing/http_client.h"
#include "scheduler/common/testing/process.h"

namespace taskgov::e2e {
namespace {

using std::chrono::milliseconds;

std::string g_binary;

class ExtenderProcessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    config_dir_ = std::filesystem::path(::testing::TempDir()) / "config";
    std::filesystem::create_directories(config_dir_);
  }

  std::vector<std::string> LoopbackArgs() {
    return {"--listen=127.0.0.1:0",
            "--metrics-listen=127.0.0.1:0",
            "--health-listen=127.0.0.1:0",
            "--console-listen=127.0.0.1:0",
            "--config-dir=" + config_dir_.string(),
            "--no-kube"};
  }

  static uint16_t PortFrom(const std::string& line, const std::string& key) {
    std::smatch m;
    std::regex re("\"" + key + "\":([0-9]+)");
    if (!std::regex_search(line, m, re)) return 0;
    return static_cast<uint16_t>(std::stoi(m[1]));
  }

  std::filesystem::path config_dir_;
};

TEST_F(ExtenderProcessTest, ServesHealthAndStopsOnSigtermWithinASecond) {
  common::testing::Subprocess proc;
  ASSERT_TRUE(proc.Start(g_binary, LoopbackArgs()).ok());
  common::Result<std::string> serving =
      proc.WaitForLine("\"msg\":\"serving\"", milliseconds(10000));
  ASSERT_TRUE(serving.ok()) << serving.error().message;
  uint16_t metrics_port = PortFrom(*serving, "metrics_port");
  ASSERT_NE(metrics_port, 0);
  ASSERT_NE(PortFrom(*serving, "webhook_port"), 0);

  common::testing::HttpClient client("127.0.0.1", metrics_port);
  common::Result<common::testing::HttpReply> health = client.Get("/healthz");
  ASSERT_TRUE(health.ok()) << health.error().message;
  EXPECT_EQ(health->status, 200);
  EXPECT_EQ(health->body, "ok\n");

  const auto start = std::chrono::steady_clock::now();
  proc.Signal(SIGTERM);
  std::optional<int> code = proc.Wait(milliseconds(1000));
  const auto elapsed = std::chrono::steady_clock::now() - start;
  ASSERT_TRUE(code.has_value()) << "still running one second after SIGTERM";
  EXPECT_EQ(*code, 0);
  EXPECT_LT(elapsed, milliseconds(1000));
}

TEST_F(ExtenderProcessTest, StopsOnSigintWithAnOpenKeepAliveConnection) {
  common::testing::Subprocess proc;
  ASSERT_TRUE(proc.Start(g_binary, LoopbackArgs()).ok());
  common::Result<std::string> serving =
      proc.WaitForLine("\"msg\":\"serving\"", milliseconds(10000));
  ASSERT_TRUE(serving.ok()) << serving.error().message;
  common::testing::HttpClient client("127.0.0.1", PortFrom(*serving, "metrics_port"));
  ASSERT_TRUE(client.Get("/healthz").ok());  // leaves an idle kept-alive connection open
  proc.Signal(SIGINT);
  std::optional<int> code = proc.Wait(milliseconds(1000));
  ASSERT_TRUE(code.has_value());
  EXPECT_EQ(*code, 0);
}

TEST_F(ExtenderProcessTest, LogsAreOneJsonObjectPerLine) {
  common::testing::Subprocess proc;
  ASSERT_TRUE(proc.Start(g_binary, LoopbackArgs()).ok());
  ASSERT_TRUE(proc.WaitForLine("\"msg\":\"serving\"", milliseconds(10000)).ok());
  proc.Signal(SIGTERM);
  ASSERT_TRUE(proc.Wait(milliseconds(1000)).has_value());
  proc.DrainStderr(milliseconds(1000));
  ASSERT_GE(proc.stderr_lines().size(), 2u);
  std::regex shape(
      R"re(^\{"time":"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z","level":"(debug|info|warn|error)","component":"[a-z]+","msg":".*\}$)re");
  for (const std::string& line : proc.stderr_lines()) {
    EXPECT_TRUE(std::regex_match(line, shape)) << line;
  }
}

struct BadFlagsCase {
  std::string name;
  std::vector<std::string> args;
  std::string expected;
};

class BadFlagsTest : public ::testing::TestWithParam<BadFlagsCase> {};

TEST_P(BadFlagsTest, OneLineErrorAndExitCodeTwo) {
  common::testing::Subprocess proc;
  ASSERT_TRUE(proc.Start(g_binary, GetParam().args).ok());
  std::optional<int> code = proc.Wait(milliseconds(5000));
  ASSERT_TRUE(code.has_value());
  EXPECT_EQ(*code, 2);
  proc.DrainStderr(milliseconds(1000));
  ASSERT_EQ(proc.stderr_lines().size(), 1u);
  EXPECT_NE(proc.stderr_lines()[0].find(GetParam().expected), std::string::npos)
      << proc.stderr_lines()[0];
}

INSTANTIATE_TEST_SUITE_P(
    Flags, BadFlagsTest,
    ::testing::Values(
        BadFlagsCase{"unknown_flag", {"--no-such-flag=1"}, "unknown flag --no-such-flag"},
        BadFlagsCase{"bad_port", {"--listen=127.0.0.1:99999"}, "--listen"},
        BadFlagsCase{"missing_value", {"--config-dir"}, "needs a value"},
        BadFlagsCase{"bad_level", {"--log-level=loud"}, "--log-level"},
        BadFlagsCase{"unreadable_config",
                     {"--config-dir=/nonexistent/taskgov"},
                     "cannot read config directory '/nonexistent/taskgov'"},
        BadFlagsCase{"unreadable_kubeconfig",
                     {"--config-dir=/", "--kubeconfig=/nonexistent/kubeconfig"},
                     "cannot read kubeconfig"},
        BadFlagsCase{"bad_bool", {"--leader-elect=maybe"}, "not true or false"},
        BadFlagsCase{
            "cert_without_key", {"--config-dir=/", "--tls-cert-file=/etc/hostname"}, "go together"},
        BadFlagsCase{"bad_address",
                     {"--no-kube", "--listen=300.1.1.1:0", "--metrics-listen=127.0.0.1:0",
                      "--health-listen=127.0.0.1:0", "--console-listen=127.0.0.1:0"},
                     "invalid listen address '300.1.1.1'"}),
    [](const ::testing::TestParamInfo<BadFlagsCase>& info) { return info.param.name; });

}  // namespace
}  // namespace taskgov::e2e

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (argc < 2) {
    fprintf(stderr, "usage: %s <path to taskgov-extender>\n", argv[0]);
    return 2;
  }
  taskgov::e2e::g_binary = taskgov::common::testing::RunfilePath(argv[1]);
  return RUN_ALL_TESTS();
}
