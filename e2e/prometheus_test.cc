// The extender's metrics as an operator sees them (issue 7): the real taskgov-extender runs
// scenario (1) — team a borrows 4 of team b's idle GPUs — a real Prometheus server scrapes its
// /metrics, and Prometheus' query API returns the usage, borrowed and lent numbers the scenario
// admitted. promtool accepts the real scrape.

#include <gtest/gtest.h>

#include "e2e/scenario_test_util.h"
#include "metrics/testing/prometheus_server.h"
#include "metrics/testing/promtool.h"
#include "scheduler/common/testing/http_client.h"

namespace taskgov::e2e {
namespace {

using std::chrono::seconds;

constexpr char kTwoTeams[] = R"(apiVersion: taskgov.io/v1
kind: TaskGovernancePolicy
taskPrioritization: TaskRanking
idleComputeAllocation: FairShare
defaultCohort: e2e
teams:
  - name: a
    sharing: {strategy: LendAndBorrow, borrowLimit: 100}
    compute: [{instanceType: ml.p5.48xlarge, accelerators: 8}]
  - name: b
    sharing: {strategy: LendAndBorrow, borrowLimit: 100}
    compute: [{instanceType: ml.p5.48xlarge, accelerators: 8}]
)";

double Value(const std::vector<metrics::testing::QuerySample>& samples) {
  return samples.size() == 1 ? samples[0].value : -1;
}

TEST_F(ScenarioTest, PrometheusSeesWhatTheScenarioAdmitted) {
  if (!metrics::testing::PrometheusServer::Available()) {
    GTEST_SKIP() << "no /usr/bin/prometheus (tools/bootstrap installs Debian's prometheus)";
  }
  StartWithPolicy(kTwoTeams);
  std::vector<PodSpec> pods;
  for (int i = 0; i < 12; ++i) pods.push_back(GpuPod("a", "a-train-" + std::to_string(i)));
  SubmitAll(pods);
  ASSERT_TRUE(h().RunUntil([&] { return Running("a") == 12; }, 5));

  const uint16_t metrics_port = h().extender().metrics_port();
  common::testing::HttpClient scrape("127.0.0.1", metrics_port);
  common::Result<common::testing::HttpReply> exposition = scrape.Get("/metrics");
  ASSERT_TRUE(exposition.ok()) << exposition.error().message;
  ASSERT_EQ(exposition->status, 200);
  common::testing::ToolRun promtool = metrics::testing::PromtoolCheckMetrics(exposition->body);
  EXPECT_EQ(promtool.exit_code, 0) << promtool.output;

  metrics::testing::PrometheusServer prometheus;
  common::Status started = prometheus.Start("127.0.0.1:" + std::to_string(metrics_port));
  ASSERT_TRUE(started.ok()) << started.error().message << "\n" << prometheus.LogTail();
  const std::string gpu = "flavor=\"ml.p5.48xlarge\",resource=\"nvidia.com/gpu\"";
  auto wait_for = [&](const std::string& query, double want) {
    auto result = prometheus.WaitFor(
        query, [&](const auto& samples) { return Value(samples) == want; }, seconds(30));
    EXPECT_TRUE(result.ok()) << query << ": " << (result.ok() ? "" : result.error().message) << "\n"
                             << prometheus.LogTail();
  };
  wait_for("taskgov_quota_usage{team=\"a\"," + gpu + "}", 12);
  wait_for("taskgov_quota_borrowed{team=\"a\"," + gpu + "}", 4);
  wait_for("taskgov_quota_lent{team=\"b\"," + gpu + "}", 4);
  wait_for("taskgov_quota_nominal{team=\"a\"," + gpu + "}", 8);
  wait_for("sum(taskgov_admissions_total{team=\"a\"})", 12);
  wait_for("taskgov_pods{team=\"a\",state=\"running\"}", 12);
}

}  // namespace
}  // namespace taskgov::e2e
