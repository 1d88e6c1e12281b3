// `promtool check metrics` (Prometheus' own linter for the text exposition format) on real
// renders: the scripted scenario with and without the Kueue families, and an empty exporter.
// promtool comes from the Debian package `prometheus` (tools/bootstrap installs it); without it
// the test is skipped, saying so.

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

#include "gtest/gtest.h"
#include "metrics/metrics.h"
#include "metrics/testing/scenario.h"

extern char** environ;

namespace taskgov::metrics {
namespace {

constexpr char kPromtool[] = "/usr/bin/promtool";

std::string TempDir() {
  const char* dir = std::getenv("TEST_TMPDIR");
  return dir != nullptr ? dir : "/tmp";
}

struct ToolRun {
  int exit_code = -1;
  std::string output;  // stdout and stderr
};

// Runs `promtool check metrics` with `input` on stdin.
ToolRun CheckMetrics(const std::string& input, const std::string& name) {
  const std::string in_path = TempDir() + "/" + name + ".prom";
  const std::string out_path = TempDir() + "/" + name + ".out";
  std::ofstream(in_path) << input;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, in_path.c_str(), O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, out_path.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  char* argv[] = {const_cast<char*>(kPromtool), const_cast<char*>("check"),
                  const_cast<char*>("metrics"), nullptr};
  pid_t pid = -1;
  ToolRun run;
  const int rc = posix_spawn(&pid, kPromtool, &actions, nullptr, argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    run.output = std::string("spawn failed: ") + strerror(rc);
    return run;
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  std::stringstream out;
  out << std::ifstream(out_path).rdbuf();
  run.output = out.str();
  return run;
}

class PromtoolTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::access(kPromtool, X_OK) != 0) {
      GTEST_SKIP() << kPromtool << " not found: install the Debian package `prometheus` "
                   << "(tools/bootstrap does) to run promtool on the exposition";
    }
  }
};

TEST_F(PromtoolTest, ScenarioWithKueueFamiliesIsLintClean) {
  testing::Scenario s(/*kueue_compatible=*/true);
  s.Script();
  const ToolRun run = CheckMetrics(s.metrics->Render(), "kueue");
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_EQ(run.output, "");
}

TEST_F(PromtoolTest, ScenarioWithoutKueueFamiliesIsLintClean) {
  testing::Scenario s(/*kueue_compatible=*/false);
  s.Script();
  const ToolRun run = CheckMetrics(s.metrics->Render(), "plain");
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_EQ(run.output, "");
}

TEST_F(PromtoolTest, EmptyExporterIsLintClean) {
  Metrics m;
  const ToolRun run = CheckMetrics(m.Render(), "empty");
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_EQ(run.output, "");
}

// The check is real: promtool rejects what breaks the conventions.
TEST_F(PromtoolTest, PromtoolRejectsACounterWithoutTotal) {
  const ToolRun run = CheckMetrics("# HELP x_count c\n# TYPE x_count counter\nx_count 1\n", "bad");
  EXPECT_NE(run.exit_code, 0);
  EXPECT_NE(run.output.find("_total"), std::string::npos) << run.output;
}

}  // namespace
}  // namespace taskgov::metrics
