// Taking over what was written by hand (issue 38, item 11): a team or the whole cluster policy
// moves from a hand-written key into the CLI's, shown and asked first, never changing what the
// extender enforces; from then on `quota update` and `policy set` work on it.

#include <gtest/gtest.h>

#include "config/loader.h"
#include "extender/cli/take_over.h"
#include "extender/cli/testing/cli_fixture.h"

namespace taskgov::cli {
namespace {

// Two teams listed in a hand-written TaskGovernancePolicy, as deploy/base shipped them.
constexpr char kPolicy[] = R"(# The site's policy (hand-written).
apiVersion: taskgov.io/v1
kind: TaskGovernancePolicy
taskPrioritization: TaskRanking
idleComputeAllocation: FairShare
priorityClasses:
  - {name: training, weight: 75}
preemption: {gracePeriodSeconds: 90, minimumRuntimeSeconds: 30}
defaultCohort: hyperpod
teams:
  - name: a
    fairShareWeight: 40
    sharing: {strategy: LendAndBorrow, borrowLimit: 50}
    compute: [{instanceType: ml.p5.48xlarge, accelerators: 8}]
  - name: b
    sharing: {strategy: Lend}
    preemptTeamTasks: Never
    compute: [{instanceType: ml.g5.12xlarge, accelerators: 4}]
)";

class TakeOverTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(cli_.Start()); }
  std::vector<config::SourceFile> Files() {
    std::vector<config::SourceFile> files;
    for (const auto& [key, content] : cli_.Data()) files.push_back({key, content});
    return files;
  }
  testing::CliFixture cli_;
};

TEST_F(TakeOverTest, ATeamListedInTheHandWrittenPolicyMovesAndCanThenBeChanged) {
  cli_.PutConfigMap({{"policy.yaml", kPolicy}});
  const std::vector<config::SourceFile> before = Files();
  testing::CliRun run = cli_.Run({"quota", "update", "b", "--fair-share-weight", "5"});
  EXPECT_EQ(run.code, 1);
  EXPECT_NE(run.err.find("'taskgov quota take-over b' moves it into the CLI's key"),
            std::string::npos)
      << run.err;

  run = cli_.Run({"quota", "take-over", "b", "--yes"});
  ASSERT_EQ(run.code, 0) << run.err;
  EXPECT_NE(run.out.find("--- policy.yaml"), std::string::npos) << "both keys' diffs\n" << run.out;
  EXPECT_NE(run.out.find("quota/b taken over into taskgov-cli.yaml"), std::string::npos) << run.out;
  // Nothing the extender enforces changed; b now lives in the CLI's key, a stays by hand.
  EXPECT_EQ(PolicyDifference(before, Files()), "");
  const std::map<std::string, std::string> data = cli_.Data();
  EXPECT_NE(data.at("taskgov-cli.yaml").find("name: b\n"), std::string::npos);
  EXPECT_EQ(data.at("policy.yaml").find("name: b"), std::string::npos) << data.at("policy.yaml");
  EXPECT_NE(data.at("policy.yaml").find("name: a"), std::string::npos);

  run = cli_.Run({"quota", "update", "b", "--fair-share-weight", "5"});
  EXPECT_EQ(run.code, 0) << run.err;
}

TEST_F(TakeOverTest, ThePolicyTakeOverMovesTheSettingsAndTheTeamsAndPolicySetThenWorks) {
  cli_.PutConfigMap({{"policy.yaml", kPolicy}});
  const std::vector<config::SourceFile> before = Files();
  testing::CliRun run = cli_.Run({"policy", "set", "--task-prioritization", "FirstComeFirstServe"});
  EXPECT_EQ(run.code, 1) << "a second TaskGovernancePolicy, before";
  run = cli_.Run({"policy", "take-over", "--yes"});
  ASSERT_EQ(run.code, 0) << run.err;
  EXPECT_NE(run.out.find("the cluster policy and quota/a, quota/b taken over"), std::string::npos)
      << run.out;
  EXPECT_EQ(PolicyDifference(before, Files()), "");
  EXPECT_EQ(cli_.Data().count("policy.yaml"), 0u) << "the key left empty goes";
  run = cli_.Run({"policy", "set", "--task-prioritization", "FirstComeFirstServe"});
  EXPECT_EQ(run.code, 0) << run.err;
  run = cli_.Run({"quota", "update", "a", "--borrow-limit", "20"});
  EXPECT_EQ(run.code, 0) << run.err;
}

TEST_F(TakeOverTest, AHyperPodDocumentAloneInItsKeyMovesAndItsKeyGoes) {
  cli_.PutConfigMap({{"hyperpod-ml.json", testing::HyperPodQuotaJson("ml", "ml.p5.48xlarge", 1)},
                     {"policy.yaml", kPolicy}});
  const std::vector<config::SourceFile> before = Files();
  testing::CliRun run = cli_.Run({"quota", "take-over", "ml", "--yes"});
  ASSERT_EQ(run.code, 0) << run.err;
  EXPECT_EQ(PolicyDifference(before, Files()), "");
  EXPECT_EQ(cli_.Data().count("hyperpod-ml.json"), 0u);
}

TEST_F(TakeOverTest, ItAsksAndANoWritesNothing) {
  cli_.PutConfigMap({{"policy.yaml", kPolicy}});
  const std::string version = cli_.ResourceVersion();
  testing::CliRun run = cli_.RunAnswering({"quota", "take-over", "a"}, "n\n");
  EXPECT_EQ(run.code, 1);
  EXPECT_NE(run.err.find("Take over quota/a into taskgov-cli.yaml, as the diffs above show?"),
            std::string::npos)
      << run.err;
  EXPECT_NE(run.out.find("+++ taskgov-cli.yaml (after)"), std::string::npos) << run.out;
  EXPECT_EQ(cli_.ResourceVersion(), version);
  // No terminal to ask: refused without --yes.
  run = cli_.Run({"quota", "take-over", "a"});
  EXPECT_EQ(run.code, 1);
  EXPECT_NE(run.err.find("there is no terminal to ask: add --yes"), std::string::npos) << run.err;
  run = cli_.RunAnswering({"quota", "take-over", "a"}, "y\n");
  EXPECT_EQ(run.code, 0) << run.err;
  EXPECT_NE(cli_.ResourceVersion(), version);
}

TEST_F(TakeOverTest, WhatTheCliKeyCannotHoldStaysWhereItIs) {
  cli_.PutConfigMap({{"kueue.yaml", R"(apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: q}
spec:
  cohort: hyperpod
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - name: ml.p5.48xlarge
      resources: [{name: nvidia.com/gpu, nominalQuota: 8}]
)"}});
  testing::CliRun run = cli_.Run({"quota", "take-over", "q", "--yes"});
  EXPECT_EQ(run.code, 1);
  EXPECT_NE(run.err.find("is a Kueue object in key kueue.yaml"), std::string::npos) << run.err;
}

}  // namespace
}  // namespace taskgov::cli
