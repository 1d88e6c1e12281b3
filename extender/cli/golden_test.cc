// Golden output of the read commands: `quota list` and `quota describe` in every -o format and
// `policy show`, against a fixed ConfigMap (the CLI's key with teams by count, by accelerators and
// by vCPU, plus a hand-written HyperPod document), compared byte for byte with testdata/.
//
// To regenerate after an intended change (then review the diff):
//   bazel test //extender/cli:golden_test --spawn_strategy=local
//     --test_env=TASKGOV_UPDATE_GOLDEN=$PWD/extender/cli/testdata   (one command line)

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

#include "extender/cli/owned_policy.h"
#include "extender/cli/testing/cli_fixture.h"
#include "scheduler/kube/config.h"

namespace taskgov::cli {
namespace {

struct GoldenCase {
  std::string name;  // testdata/<name>.golden
  std::vector<std::string> args;
};

OwnedPolicy Teams() {
  OwnedPolicy p;
  TeamQuota a;
  a.name = "team-a";
  a.cohort = "hyperpod";
  a.compute = {ComputeLine{"ml.p5.48xlarge", 2, {}, {}, {}}};
  a.borrow_limit = 100;
  TeamQuota b;
  b.name = "team-b";
  b.cohort = "hyperpod";
  b.compute = {ComputeLine{"ml.g5.12xlarge", {}, 2, {}, {}}};
  b.fair_share_weight = 10;
  TeamQuota c;
  c.name = "team-c";
  c.cohort = "hyperpod";
  c.namespaces = {"research"};
  c.compute = {ComputeLine{"ml.m5.2xlarge", {}, {}, "16", {}}};
  c.strategy = "Lend";
  c.preempt_team_tasks = "Never";
  p.teams = {a, b, c};
  p.cluster.priority_classes =
      std::vector<PriorityClassWeight>{{"inference", 100}, {"training", 50}};
  return p;
}

class GoldenTest : public ::testing::TestWithParam<GoldenCase> {};

TEST_P(GoldenTest, OutputMatches) {
  const GoldenCase& c = GetParam();
  testing::CliFixture cli;
  ASSERT_TRUE(cli.Start());
  cli.PutConfigMap({{"taskgov-cli.yaml", RenderOwned(Teams())},
                    {"hyperpod-ml.json", testing::HyperPodQuotaJson("ml", "ml.p5.48xlarge", 1)}});
  testing::CliRun run = cli.Run(c.args);
  ASSERT_EQ(run.code, 0) << run.err;
  EXPECT_EQ(run.err, "");
  if (const char* dir = std::getenv("TASKGOV_UPDATE_GOLDEN"); dir != nullptr) {
    std::ofstream(std::string(dir) + "/" + c.name + ".golden", std::ios::binary) << run.out;
    GTEST_SKIP() << "wrote " << c.name << ".golden";
  }
  common::Result<std::string> golden =
      scheduler::kube::ReadFile("extender/cli/testdata/" + c.name + ".golden", "golden file");
  ASSERT_TRUE(golden.ok()) << golden.error().message;
  EXPECT_EQ(run.out, *golden);
}

INSTANTIATE_TEST_SUITE_P(
    Testdata, GoldenTest,
    ::testing::Values(GoldenCase{"list_table", {"quota", "list"}},
                      GoldenCase{"list_wide", {"quota", "list", "-o", "wide"}},
                      GoldenCase{"list_json", {"quota", "list", "-o", "json"}},
                      GoldenCase{"list_yaml", {"quota", "list", "-o", "yaml"}},
                      GoldenCase{"list_name", {"quota", "list", "-o", "name"}},
                      GoldenCase{"describe_table", {"quota", "describe", "team-b"}},
                      GoldenCase{"describe_json", {"quota", "describe", "team-b", "-o", "json"}},
                      GoldenCase{"describe_yaml", {"quota", "describe", "team-a", "-o", "yaml"}},
                      GoldenCase{"describe_handwritten", {"quota", "describe", "ml"}},
                      GoldenCase{"policy_table", {"policy", "show"}},
                      GoldenCase{"policy_yaml", {"policy", "show", "-o", "yaml"}}),
    [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace taskgov::cli
