// The taskgov CLI against a running extender (issue 13): quotas created and updated with the CLI
// through the API server's policy ConfigMap, the ConfigMap's data then mounted as the kubelet
// does (the `..data` swap), and the extender enforcing the new numbers — its own ledger, read
// through a filter refusal, says so.

#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "e2e/scenario_test_util.h"
#include "extender/cli/commands.h"
#include "extender/cli/testing/cli_fixture.h"

namespace taskgov::e2e {
namespace {

using cli::testing::HyperPodQuotaJson;

class CliQuotaTest : public ScenarioTest {
 protected:
  void SetUp() override {
    HarnessOptions options;
    options.config = {{"hyperpod-c.json", HyperPodQuotaJson("c", kG5, 1)}};
    StartHarness(options);
    // The ConfigMap the kubelet mounts, as installed.
    ASSERT_TRUE(h().api()
                    .Upsert("configmaps",
                            R"({"metadata":{"name":"taskgov-config","namespace":"taskgov-system"},)"
                            R"("data":{"hyperpod-c.json":)" +
                                Quote(HyperPodQuotaJson("c", kG5, 1)) + "}}")
                    .ok());
    kubeconfig_ = ::testing::TempDir() + "/cli-kubeconfig";
    std::ofstream(kubeconfig_) << scheduler::kube::testing::KubeconfigFor(h().api().url());
  }

  static std::string Quote(const std::string& s) {
    std::string out = "\"";
    for (char c : s) {
      if (c == '"' || c == '\\') out += '\\';
      if (c == '\n') {
        out += "\\n";
        continue;
      }
      out += c;
    }
    return out + "\"";
  }

  // `taskgov <args> --kubeconfig ...`; expects exit 0.
  void Cli(std::vector<std::string> args) {
    args.push_back("--kubeconfig=" + kubeconfig_);
    std::ostringstream out, err;
    cli::Environment env;
    env.out = &out;
    env.err = &err;
    ASSERT_EQ(cli::RunTaskgov(args, env), 0) << err.str();
  }

  // What the kubelet would mount: the ConfigMap's data now.
  std::map<std::string, std::string> Mounted() {
    std::map<std::string, std::string> data;
    std::optional<std::string> json =
        h().api().Get("configmaps", "taskgov-system", "taskgov-config");
    EXPECT_TRUE(json.has_value());
    rapidjson::Document doc;
    doc.Parse(json.value_or("{}").c_str());
    if (doc.IsObject() && doc.HasMember("data") && doc["data"].IsObject()) {
      for (const auto& m : doc["data"].GetObject()) {
        if (m.value.IsString()) data[m.name.GetString()] = m.value.GetString();
      }
    }
    return data;
  }

  LedgerLine Probe(const std::string& team) {
    common::Result<LedgerLine> line = h().ProbeLedger(Ns(team), kP5, kGpu);
    EXPECT_TRUE(line.ok()) << (line.ok() ? "" : line.error().message) << "\n" << h().Logs();
    return line.ok() ? *line : LedgerLine{};
  }

  std::string kubeconfig_;
};

TEST_F(CliQuotaTest, TheRunningExtenderEnforcesWhatTheCliWrote) {
  Cli({"quota", "create", "a", "--instance-type", kP5, "--count", "1"});
  Cli({"quota", "create", "b", "--instance-type", kP5, "--accelerators", "4"});
  common::Status loaded = h().Reconfigure(Mounted());
  ASSERT_TRUE(loaded.ok()) << loaded.error().message;
  LedgerLine a = Probe("a");
  EXPECT_EQ(a.nominal, 8) << a.reason;
  EXPECT_EQ(a.borrowing_limit, "4") << a.reason;  // LendAndBorrow, 50% by default
  LedgerLine b = Probe("b");
  EXPECT_EQ(b.nominal, 4) << b.reason;
  EXPECT_EQ(b.borrowing_limit, "2") << b.reason;

  Cli({"quota", "update", "a", "--borrow-limit", "100"});
  loaded = h().Reconfigure(Mounted());
  ASSERT_TRUE(loaded.ok()) << loaded.error().message;
  a = Probe("a");
  EXPECT_EQ(a.nominal, 8) << a.reason;
  EXPECT_EQ(a.borrowing_limit, "8") << a.reason;
  // The hand-written key is still what was installed.
  EXPECT_EQ(Mounted()["hyperpod-c.json"], HyperPodQuotaJson("c", kG5, 1));
}

}  // namespace
}  // namespace taskgov::e2e
