// deploy/dashboards: the Grafana dashboard parses, has its template variables, queries only
// metrics (and labels) the exporter emits, and its ConfigMap carries the same JSON with the
// label Grafana's dashboard sidecar looks for.

#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <fstream>
#include <functional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "metrics/testing/exposition.h"
#include "metrics/testing/promql.h"
#include "metrics/testing/promtool.h"
#include "metrics/testing/scenario.h"
#include "rapidjson/document.h"
#include "scheduler/common/testing/files.h"
#include "scheduler/common/testing/process.h"

namespace taskgov::metrics {
namespace {

constexpr char kDashboard[] = "deploy/dashboards/taskgov.json";
constexpr char kConfigMap[] = "deploy/dashboards/taskgov-dashboard-configmap.yaml";

using common::testing::ReadFile;

using testing::CollectQueries;
using testing::Selector;
using testing::Selectors;

class DashboardTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string text = ReadFile(kDashboard);
    ASSERT_FALSE(text.empty()) << "cannot read " << kDashboard;
    dashboard_.Parse(text.c_str(), text.size());
    ASSERT_FALSE(dashboard_.HasParseError())
        << kDashboard << " is not JSON (offset " << dashboard_.GetErrorOffset() << ")";
    ASSERT_TRUE(dashboard_.IsObject());
  }
  rapidjson::Document dashboard_;
};

TEST_F(DashboardTest, HasPanelsAndTheTeamAndFlavorVariables) {
  ASSERT_TRUE(dashboard_.HasMember("panels") && dashboard_["panels"].IsArray());
  std::set<int> ids;
  int with_queries = 0;
  for (const auto& panel : dashboard_["panels"].GetArray()) {
    ASSERT_TRUE(panel.IsObject());
    ASSERT_TRUE(panel.HasMember("id") && panel["id"].IsInt());
    EXPECT_TRUE(ids.insert(panel["id"].GetInt()).second) << "duplicate panel id";
    ASSERT_TRUE(panel.HasMember("gridPos") && panel["gridPos"].IsObject());
    ASSERT_TRUE(panel.HasMember("type") && panel["type"].IsString());
    if (std::string(panel["type"].GetString()) == "row") continue;
    ASSERT_TRUE(panel.HasMember("targets") && panel["targets"].IsArray())
        << panel["title"].GetString();
    for (const auto& target : panel["targets"].GetArray()) {
      ASSERT_TRUE(target.HasMember("expr") && target["expr"].IsString());
      EXPECT_GT(target["expr"].GetStringLength(), 0u);
      ++with_queries;
    }
  }
  EXPECT_GE(with_queries, 20);
  std::set<std::string> variables;
  ASSERT_TRUE(dashboard_.HasMember("templating") && dashboard_["templating"].IsObject());
  for (const auto& v : dashboard_["templating"]["list"].GetArray()) {
    variables.insert(v["name"].GetString());
  }
  EXPECT_TRUE(variables.count("team"));
  EXPECT_TRUE(variables.count("flavor"));
}

TEST_F(DashboardTest, EveryMetricAndLabelItQueriesIsExported) {
  testing::Scenario s(/*kueue_compatible=*/true);
  s.Script();
  const testing::Exposition x = testing::ParseExposition(s.metrics->Render());
  // Labels seen per sample name.
  std::map<std::string, std::set<std::string>> labels;
  for (const testing::Sample& sample : x.samples) {
    for (const auto& [k, v] : sample.labels) labels[sample.name].insert(k);
    labels[sample.name];
  }
  std::vector<std::string> queries;
  CollectQueries(dashboard_, &queries);
  ASSERT_FALSE(queries.empty());
  std::set<std::string> used;
  for (const std::string& q : queries) {
    for (const Selector& sel : Selectors(q)) {
      used.insert(sel.name);
      EXPECT_TRUE(labels.count(sel.name))
          << "the dashboard queries " << sel.name << ", which the exporter does not emit: " << q;
      for (const std::string& label : sel.labels) {
        EXPECT_TRUE(labels[sel.name].count(label))
            << "the dashboard selects " << sel.name << " by label " << label
            << ", which it does not have: " << q;
      }
    }
  }
  // The panels the issue asks for are there.
  for (const char* name :
       {"taskgov_quota_nominal", "taskgov_quota_usage", "taskgov_quota_borrowed", "taskgov_pods",
        "taskgov_pod_wait_seconds_bucket", "taskgov_pod_run_seconds_bucket",
        "taskgov_webhook_request_duration_seconds_bucket",
        "taskgov_config_last_reload_successful"}) {
    EXPECT_TRUE(used.count(name)) << "no panel shows " << name;
  }
}

// Every panel query is valid PromQL once Grafana's variables are substituted: promtool parses
// them as recording rules.
TEST_F(DashboardTest, EveryPanelQueryIsValidPromQL) {
  if (::access(testing::kPromtool, X_OK) != 0) {
    GTEST_SKIP() << testing::kPromtool << " not found: install the Debian package `prometheus`";
  }
  std::vector<std::string> exprs;
  std::function<void(const rapidjson::Value&)> walk = [&](const rapidjson::Value& v) {
    if (v.IsObject()) {
      for (const auto& m : v.GetObject()) {
        if (std::string(m.name.GetString()) == "expr" && m.value.IsString()) {
          exprs.push_back(m.value.GetString());
        } else {
          walk(m.value);
        }
      }
    } else if (v.IsArray()) {
      for (const auto& item : v.GetArray()) walk(item);
    }
  };
  walk(dashboard_["panels"]);
  ASSERT_FALSE(exprs.empty());
  std::string rules = "groups:\n  - name: dashboard\n    rules:\n";
  for (size_t i = 0; i < exprs.size(); ++i) {
    std::string e = exprs[i];
    for (const auto& [var, value] :
         std::vector<std::pair<std::string, std::string>>{{"$__rate_interval", "5m"},
                                                          {"$resource", "cpu"},
                                                          {"$team", ".*"},
                                                          {"$flavor", ".*"}}) {
      for (size_t at; (at = e.find(var)) != std::string::npos;) e.replace(at, var.size(), value);
    }
    EXPECT_EQ(e.find('$'), std::string::npos) << "unknown variable in " << exprs[i];
    std::string quoted;
    for (char c : e) quoted += c == '\'' ? std::string("''") : std::string(1, c);
    rules += "      - record: dashboard:expr_" + std::to_string(i) + "\n        expr: '" + quoted +
             "'\n";
  }
  const std::string path = ::testing::TempDir() + "dashboard-rules.yml";
  std::ofstream(path) << rules;
  const common::testing::ToolRun run =
      common::testing::RunToCompletion({testing::kPromtool, "check", "rules", path});
  EXPECT_EQ(run.exit_code, 0) << run.output << "\n" << rules;
}

TEST_F(DashboardTest, ConfigMapCarriesTheSameDashboardForTheSidecar) {
  YAML::Node cm;
  try {
    cm = YAML::LoadFile(kConfigMap);
  } catch (const YAML::Exception& e) {
    FAIL() << kConfigMap << ": " << e.what();
  }
  EXPECT_EQ(cm["apiVersion"].as<std::string>(""), "v1");
  EXPECT_EQ(cm["kind"].as<std::string>(""), "ConfigMap");
  EXPECT_EQ(cm["metadata"]["labels"]["grafana_dashboard"].as<std::string>(""), "1");
  const std::string embedded = cm["data"]["taskgov.json"].as<std::string>("");
  rapidjson::Document doc;
  doc.Parse(embedded.c_str(), embedded.size());
  ASSERT_FALSE(doc.HasParseError()) << "the ConfigMap's taskgov.json is not JSON";
  EXPECT_TRUE(doc == dashboard_) << kConfigMap
                                 << " is stale: run deploy/dashboards/make-configmap.sh";
}

}  // namespace
}  // namespace taskgov::metrics
