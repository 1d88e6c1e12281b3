// deploy/monitoring/prometheusrule.yaml: its rules pass `promtool check rules`, every alert fires
// and stays quiet where deploy/alerts_test.yml says (`promtool test rules`), every alert has a test
// case, a severity, a summary and a runbook link whose paragraph exists in deploy/README.md.
// (That the metrics the alerts query are the binary's is //e2e:install_test.)

#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "gtest/gtest.h"
#include "metrics/testing/promtool.h"
#include "scheduler/common/testing/files.h"
#include "scheduler/common/testing/process.h"

namespace taskgov::deploy {
namespace {

constexpr char kRule[] = "deploy/monitoring/prometheusrule.yaml";
constexpr char kTests[] = "deploy/alerts_test.yml";
constexpr char kReadme[] = "deploy/README.md";

using common::testing::ReadFile;

class AlertsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    try {
      rule_ = YAML::LoadFile(kRule);
    } catch (const YAML::Exception& e) {
      FAIL() << kRule << ": " << e.what();
    }
    ASSERT_EQ(rule_["kind"].as<std::string>(""), "PrometheusRule");
    ASSERT_TRUE(rule_["spec"]["groups"].IsSequence()) << kRule << " has no spec.groups";
    for (const YAML::Node& group : rule_["spec"]["groups"]) {
      for (const YAML::Node& r : group["rules"]) alerts_.push_back(r);
    }
    ASSERT_GE(alerts_.size(), 6u);
  }

  // spec.groups as a Prometheus rule file in `dir`, beside a copy of the unit tests.
  std::string WriteRuleFiles() {
    const std::filesystem::path dir = std::filesystem::path(::testing::TempDir()) / "alerts";
    std::filesystem::create_directories(dir);
    YAML::Emitter out;
    out << rule_["spec"];
    std::ofstream(dir / "taskgov-rules.yml") << out.c_str() << "\n";
    std::ofstream(dir / "alerts_test.yml") << ReadFile(kTests);
    return dir.string();
  }

  bool HavePromtool() { return ::access(metrics::testing::kPromtool, X_OK) == 0; }

  YAML::Node rule_;
  std::vector<YAML::Node> alerts_;
};

TEST_F(AlertsTest, PromtoolChecksTheRules) {
  if (!HavePromtool()) GTEST_SKIP() << "install the Debian package `prometheus`";
  const std::string dir = WriteRuleFiles();
  const common::testing::ToolRun run = common::testing::RunToCompletion(
      {metrics::testing::kPromtool, "check", "rules", dir + "/taskgov-rules.yml"});
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("SUCCESS: " + std::to_string(alerts_.size()) + " rules found"),
            std::string::npos)
      << run.output;
}

TEST_F(AlertsTest, PromtoolUnitTestsEveryAlert) {
  if (!HavePromtool()) GTEST_SKIP() << "install the Debian package `prometheus`";
  const std::string dir = WriteRuleFiles();
  const common::testing::ToolRun run = common::testing::RunToCompletion(
      {metrics::testing::kPromtool, "test", "rules", dir + "/alerts_test.yml"});
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("SUCCESS"), std::string::npos) << run.output;
  // Every alert is tested firing (a case expecting it) and quiet (a case expecting none).
  const YAML::Node tests = YAML::LoadFile(kTests);
  std::set<std::string> fires, quiet;
  for (const YAML::Node& t : tests["tests"]) {
    for (const YAML::Node& a : t["alert_rule_test"]) {
      const std::string name = a["alertname"].as<std::string>("");
      (a["exp_alerts"].size() > 0 ? fires : quiet).insert(name);
    }
  }
  for (const YAML::Node& r : alerts_) {
    const std::string name = r["alert"].as<std::string>("");
    EXPECT_TRUE(fires.count(name)) << kTests << " never expects " << name << " to fire";
    EXPECT_TRUE(quiet.count(name)) << kTests << " never expects " << name << " to stay quiet";
  }
}

TEST_F(AlertsTest, EveryAlertHasASeveritySummaryAndRunbook) {
  const std::string readme = ReadFile(kReadme);
  ASSERT_FALSE(readme.empty());
  std::set<std::string> names;
  for (const YAML::Node& r : alerts_) {
    const std::string name = r["alert"].as<std::string>("");
    ASSERT_FALSE(name.empty()) << "a rule that is no alert";
    EXPECT_TRUE(names.insert(name).second) << name << " twice";
    const std::string severity = r["labels"]["severity"].as<std::string>("");
    EXPECT_TRUE(severity == "critical" || severity == "warning") << name << ": " << severity;
    EXPECT_FALSE(r["annotations"]["summary"].as<std::string>("").empty()) << name;
    std::string anchor;
    for (char c : name) anchor += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    EXPECT_EQ(r["annotations"]["runbook"].as<std::string>(""), "deploy/README.md#" + anchor)
        << name;
    // GitHub's anchor of a "### Name" heading is the lower-cased name.
    const size_t at = readme.find("\n### " + name + "\n");
    ASSERT_NE(at, std::string::npos) << kReadme << " has no runbook heading ### " << name;
    const size_t next = readme.find("\n#", at + 5 + name.size());
    EXPECT_GT(next - at, 200u) << "the runbook of " << name << " is too short to act on";
  }
}

}  // namespace
}  // namespace taskgov::deploy
