// `promtool check metrics` (Prometheus' own linter for the text exposition format) on real
// renders: the scripted scenario with and without the Kueue families, and an empty exporter.
// promtool comes from the Debian package `prometheus` (tools/bootstrap installs it); without it
// the test is skipped, saying so.

#include <unistd.h>

#include <string>

#include "gtest/gtest.h"
#include "metrics/metrics.h"
#include "metrics/testing/promtool.h"
#include "metrics/testing/scenario.h"

namespace taskgov::metrics {
namespace {

using common::testing::ToolRun;
using testing::kPromtool;
using testing::PromtoolCheckMetrics;

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
  const ToolRun run = PromtoolCheckMetrics(s.metrics->Render());
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_EQ(run.output, "");
}

TEST_F(PromtoolTest, ScenarioWithoutKueueFamiliesIsLintClean) {
  testing::Scenario s(/*kueue_compatible=*/false);
  s.Script();
  const ToolRun run = PromtoolCheckMetrics(s.metrics->Render());
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_EQ(run.output, "");
}

TEST_F(PromtoolTest, EmptyExporterIsLintClean) {
  Metrics m;
  const ToolRun run = PromtoolCheckMetrics(m.Render());
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_EQ(run.output, "");
}

// The check is real: promtool rejects what breaks the conventions.
TEST_F(PromtoolTest, PromtoolRejectsACounterWithoutTotal) {
  const ToolRun run = PromtoolCheckMetrics("# HELP x_count c\n# TYPE x_count counter\nx_count 1\n");
  EXPECT_NE(run.exit_code, 0);
  EXPECT_NE(run.output.find("_total"), std::string::npos) << run.output;
}

}  // namespace
}  // namespace taskgov::metrics
