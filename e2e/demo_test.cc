// tools/demo keeps its promise: the narrated demo runs to the end within a minute, every claim it
// makes holds (its exit status is 0 only then), and its per-team tables are the metrics'
// numbers — each row the demo scrapes from the extender's /metrics agrees with the pods the fake
// API server holds, down to the closing table.

#include <gtest/gtest.h>

#include <csignal>
#include <regex>
#include <thread>

#include <chrono>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "scheduler/common/testing/http_client.h"
#include "scheduler/common/testing/process.h"

namespace taskgov::e2e {
namespace {

std::string g_demo;
std::string g_extender;

constexpr char kFinalTable[] = "Where everything stands";

// One "demo-table|<title>|<team>|<flavor>|<name>=<metric>/<api>|..." line.
struct TableRow {
  std::string title;
  std::string team;
  std::string flavor;
  std::map<std::string, std::pair<std::string, std::string>> values;  // name → (metric, api)
};

std::vector<std::string> Split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream in(s);
  std::string part;
  while (std::getline(in, part, sep)) out.push_back(part);
  return out;
}

std::vector<TableRow> Rows(const std::vector<std::string>& lines) {
  std::vector<TableRow> rows;
  for (const std::string& line : lines) {
    if (line.rfind("demo-table|", 0) != 0) continue;
    const std::vector<std::string> parts = Split(line, '|');
    if (parts.size() < 4) continue;
    TableRow row{parts[1], parts[2], parts[3], {}};
    for (size_t i = 4; i < parts.size(); ++i) {
      const size_t eq = parts[i].find('=');
      const size_t slash = parts[i].find('/', eq);
      if (eq == std::string::npos || slash == std::string::npos) continue;
      row.values[parts[i].substr(0, eq)] = {parts[i].substr(eq + 1, slash - eq - 1),
                                            parts[i].substr(slash + 1)};
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

TEST(DemoTest, EveryNarratedStepHoldsAndTheTablesAreTheMetrics) {
  common::testing::Subprocess demo;
  const auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(demo.Start(g_demo, {g_extender, "--table-rows", "--no-wait"}).ok());
  std::optional<int> code = demo.Wait(std::chrono::seconds(120));
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_TRUE(code.has_value()) << "the demo did not finish within two minutes";
  demo.DrainStderr(std::chrono::seconds(2));
  EXPECT_EQ(*code, 0) << "see the narration above for the claim that did not hold";
  EXPECT_LT(seconds, 60.0) << "the demo promises to run in under a minute";
  printf("the demo ran %.1f s\n", seconds);

  const std::vector<TableRow> rows = Rows(demo.stderr_lines());
  std::map<std::string, size_t> rows_per_table;
  for (const TableRow& row : rows) ++rows_per_table[row.title];
  EXPECT_EQ(rows_per_table.size(), 3u) << "after the reclaim, after the fair share, at the end";
  ASSERT_EQ(rows_per_table[kFinalTable], 5u) << "one row per team";
  for (const TableRow& row : rows) {
    for (const char* name : {"nominal", "usage", "borrowed", "running", "pending", "preempted"}) {
      auto it = row.values.find(name);
      ASSERT_NE(it, row.values.end()) << row.title << ", team " << row.team << ": no " << name;
      EXPECT_EQ(it->second.first, it->second.second)
          << row.title << ", team " << row.team << " on " << row.flavor << ": " << name
          << " from /metrics differs from the API server's";
    }
  }
  // The closing table's numbers: the demo's story ends with b's gang running on its own 8 GPUs
  // on ml.p5.48xlarge and a's gang waiting whole (none of its workers runs), d and e sharing
  // c's idle GPUs 3:1.
  std::map<std::string, std::string> usage, borrowed;
  for (const TableRow& row : rows) {
    if (row.title != kFinalTable) continue;
    usage[row.team] = row.values.at("usage").first;
    borrowed[row.team] = row.values.at("borrowed").first;
  }
  EXPECT_EQ(usage["a"], "0");
  EXPECT_EQ(borrowed["a"], "0");
  EXPECT_EQ(usage["b"], "8");
  EXPECT_EQ(borrowed["b"], "0");
  EXPECT_EQ(usage["c"], "0");
  EXPECT_EQ(usage["d"], "5");
  EXPECT_EQ(borrowed["d"], "3");
  EXPECT_EQ(usage["e"], "3");
  EXPECT_EQ(borrowed["e"], "1");
}

// Without --no-wait the demo ends with the console of the end state up — the URL printed, the
// admin API answering — until Ctrl-C, which stops the extender and ends the demo cleanly.
TEST(DemoTest, KeepsTheConsoleUpUntilCtrlC) {
  common::testing::Subprocess demo;
  common::testing::SubprocessOptions options;
  options.capture_stdout = true;
  ASSERT_TRUE(demo.Start(g_demo, {g_extender}, options).ok());
  common::Result<std::string> url =
      demo.WaitForLine("The console shows where everything stands: ", std::chrono::seconds(120));
  ASSERT_TRUE(url.ok()) << demo.piped_output();
  std::smatch m;
  ASSERT_TRUE(std::regex_search(*url, m, std::regex(R"(http://127\.0\.0\.1:(\d+)/)"))) << *url;
  ASSERT_TRUE(demo.WaitForLine("Press Ctrl-C to stop", std::chrono::seconds(5)).ok());
  common::testing::HttpClient console("127.0.0.1", static_cast<uint16_t>(std::stoi(m[1])));
  common::Result<common::testing::HttpReply> teams = console.Request("GET", "/api/v1/teams");
  ASSERT_TRUE(teams.ok()) << teams.error().message;
  EXPECT_EQ(teams->status, 200);
  EXPECT_NE(teams->body.find("\"name\":\"b\""), std::string::npos) << teams->body;
  common::Result<common::testing::HttpReply> page = console.Request("GET", "/");
  ASSERT_TRUE(page.ok());
  EXPECT_NE(page->body.find("<title>"), std::string::npos);
  // Still up a moment later: it waits for the signal, not for a timer.
  std::this_thread::sleep_for(std::chrono::seconds(1));
  ASSERT_TRUE(console.Request("GET", "/api/v1/cluster").ok());
  demo.Signal(SIGINT);
  std::optional<int> code = demo.Wait(std::chrono::seconds(30));
  ASSERT_TRUE(code.has_value()) << "Ctrl-C did not end the demo";
  EXPECT_EQ(*code, 0) << demo.piped_output();
  EXPECT_NE(demo.piped_output().find("The extender stops."), std::string::npos);
  EXPECT_FALSE(console.Request("GET", "/api/v1/teams").ok()) << "the extender outlived the demo";
}

std::string g_taskgov;

// `taskgov ARGS --kubeconfig KUBECONFIG`: its exit code and output.
common::testing::ToolRun Taskgov(std::vector<std::string> args, const std::string& kubeconfig) {
  args.insert(args.begin(), g_taskgov);
  args.push_back("--kubeconfig=" + kubeconfig);
  return common::testing::RunToCompletion(args, "", std::chrono::seconds(30));
}

// After its story the demo is a sandbox: it prints how to point the CLI at it, keeps playing the
// cluster and copies the policy ConfigMap to the extender as the kubelet does — so a quota
// created with the CLI reaches the extender, and a job submitted on it is admitted, bound and
// runs.
TEST(DemoTest, AfterTheStoryTheCliCreatesAQuotaAndAJobOnItRuns) {
  common::testing::Subprocess demo;
  common::testing::SubprocessOptions options;
  options.capture_stdout = true;
  ASSERT_TRUE(demo.Start(g_demo, {g_extender}, options).ok());
  common::Result<std::string> line =
      demo.WaitForLine("export KUBECONFIG=", std::chrono::seconds(120));
  ASSERT_TRUE(line.ok()) << demo.piped_output();
  const std::string kubeconfig = line->substr(line->find('=') + 1);
  ASSERT_TRUE(demo.WaitForLine("Press Ctrl-C to stop", std::chrono::seconds(5)).ok());

  common::testing::ToolRun run = Taskgov(
      {"quota", "create", "f", "--instance-type", "ml.trn1.32xlarge", "--count", "1"}, kubeconfig);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  ASSERT_TRUE(
      demo.WaitForLine("[sandbox] the policy ConfigMap changed: copied", std::chrono::seconds(10))
          .ok())
      << demo.piped_output();
  // The extender reloads it: the CLI's submission checks find team f (bounded: 10 s).
  for (int i = 0; i < 50; ++i) {
    run = Taskgov({"job", "submit", "train", "-n", "hyperpod-ns-f", "--image", "pytorch:2.3",
                   "--instance-type", "ml.trn1.32xlarge", "--accelerators", "8"},
                  kubeconfig);
    if (run.exit_code == 0 || run.output.find("belongs to no team") == std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  ASSERT_EQ(run.exit_code, 0) << run.output;
  std::string state;
  for (int i = 0; i < 100 && state != "Running"; ++i) {  // bounded: 20 s
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    run = Taskgov({"job", "list", "-n", "hyperpod-ns-f", "-o", "json"}, kubeconfig);
    std::smatch m;
    if (std::regex_search(run.output, m, std::regex(R"re("state": "([A-Za-z]+)")re"))) {
      state = m[1];
    }
  }
  EXPECT_EQ(state, "Running") << run.output;
  demo.Signal(SIGINT);
  std::optional<int> code = demo.Wait(std::chrono::seconds(30));  // reads the rest of its output
  ASSERT_TRUE(code.has_value());
  EXPECT_EQ(*code, 0) << demo.piped_output();
  // It told what it did with the job's pod.
  EXPECT_NE(demo.piped_output().find("[sandbox] hyperpod-ns-f/train-0-"), std::string::npos)
      << demo.piped_output();
}

}  // namespace
}  // namespace taskgov::e2e

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (argc < 4) {
    fprintf(stderr, "usage: %s <demo> <taskgov-extender> <taskgov>\n", argv[0]);
    return 2;
  }
  taskgov::e2e::g_demo = taskgov::common::testing::RunfilePath(argv[1]);
  taskgov::e2e::g_extender = taskgov::common::testing::RunfilePath(argv[2]);
  taskgov::e2e::g_taskgov = taskgov::common::testing::RunfilePath(argv[3]);
  return RUN_ALL_TESTS();
}
