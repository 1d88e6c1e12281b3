// Submissions are checked against the policy in force before anything is created (issue 38,
// item 13): an unknown priority class, a namespace no team owns (the default one included) and
// an instance type the team has no quota on are refused with what to do instead; 'job why' in a
// namespace of no team says so instead of blaming the admin API; quota writes warn when the
// teams' quotas on an instance type exceed what its nodes have, and name an unknown instance
// type; --memory takes GiB or a quantity everywhere.

#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include <fstream>
#include <sstream>

#include "extender/cli/testing/cli_fixture.h"

namespace taskgov::cli {
namespace {

std::string Testdata(const std::string& name) {
  std::ifstream in("extender/cli/testdata/" + name);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

constexpr char kPolicy[] = R"({"kind": "Policy", "priorityClasses": [
  {"name": "inference", "value": 100}, {"name": "training", "value": 75}]})";

class SubmitChecksTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(cli_.Start());
    cli_.api().SetServed("pytorchjobs", false);
    cli_.api().SetServiceHandler(
        "taskgov-system", "taskgov-console", 9091,
        testing::AdminApiFixture(Testdata("admin_teams.json"),
                                 R"({"kind":"WorkloadList","items":[],"continue":null})", {},
                                 kPolicy));
  }
  testing::CliRun Submit(std::vector<std::string> more) {
    std::vector<std::string> args = {"job", "submit", "t", "--image", "img", "--accelerators", "1"};
    args.insert(args.end(), more.begin(), more.end());
    return cli_.Run(args);
  }
  bool Created(const std::string& ns) { return cli_.api().Get("jobs", ns, "t").has_value(); }

  testing::CliFixture cli_;
};

TEST_F(SubmitChecksTest, AnUnknownPriorityClassIsRefused) {
  testing::CliRun run =
      Submit({"-n", "hyperpod-ns-a", "--instance-type", "ml.p5.48xlarge", "--priority", "urgent"});
  EXPECT_EQ(run.code, 1);
  EXPECT_EQ(run.err,
            "error: priority class \"urgent\" is not in the policy in force (its classes: "
            "inference, training): its pods would rank as priority 0; 'taskgov policy show' lists "
            "the classes\n");
  EXPECT_FALSE(Created("hyperpod-ns-a"));
  // A known class, with or without the "-priority" suffix, is accepted.
  run = Submit({"-n", "hyperpod-ns-a", "--instance-type", "ml.p5.48xlarge", "--priority",
                "training-priority"});
  EXPECT_EQ(run.code, 0) << run.err;
}

TEST_F(SubmitChecksTest, ANamespaceNoTeamOwnsIsRefused) {
  // Without -n: the context's namespace, default, which is no team's.
  testing::CliRun run = Submit({"--instance-type", "ml.p5.48xlarge"});
  EXPECT_EQ(run.code, 1);
  EXPECT_EQ(run.err,
            "error: namespace default belongs to no team, so taskgov would not govern the job "
            "(and no team's quota would hold it): submit it in a team's namespace with -n (a: "
            "hyperpod-ns-a; b: hyperpod-ns-b)\n");
  EXPECT_FALSE(Created("default"));
  // A made-up team namespace does not invent a queue.
  run = Submit({"-n", "hyperpod-ns-zz", "--instance-type", "ml.p5.48xlarge"});
  EXPECT_EQ(run.code, 1);
  EXPECT_NE(run.err.find("namespace hyperpod-ns-zz belongs to no team"), std::string::npos)
      << run.err;
  EXPECT_FALSE(Created("hyperpod-ns-zz"));
}

TEST_F(SubmitChecksTest, AnInstanceTypeTheTeamHasNoQuotaOnIsRefused) {
  testing::CliRun run = Submit({"-n", "hyperpod-ns-a", "--instance-type", "ml.g5.12xlarge"});
  EXPECT_EQ(run.code, 1);
  EXPECT_EQ(run.err,
            "error: team a has no quota on ml.g5.12xlarge, so the job could never run: its quota "
            "is on ml.p5.48xlarge (give --instance-type ml.p5.48xlarge), or an admin gives a "
            "quota there ('taskgov quota update a ...')\n");
  EXPECT_FALSE(Created("hyperpod-ns-a"));
  run = Submit({"-n", "hyperpod-ns-a", "--instance-type", "ml.p5.48xlarge"});
  EXPECT_EQ(run.code, 0) << run.err;
  EXPECT_TRUE(Created("hyperpod-ns-a"));
}

TEST_F(SubmitChecksTest, WithoutTheAdminApiTheChecksAreSaidNotDone) {
  cli_.api().RemoveServiceProxy("taskgov-system", "taskgov-console", 9091);
  testing::CliRun run = Submit({"-n", "hyperpod-ns-a", "--instance-type", "ml.g5.12xlarge"});
  EXPECT_EQ(run.code, 0) << run.err;
  EXPECT_NE(run.err.find("note: checks of the namespace's team, its quota and the priority "
                         "class not shown"),
            std::string::npos)
      << run.err;
}

TEST_F(SubmitChecksTest, WhyInANamespaceOfNoTeamSaysSo) {
  // A Job someone created in default, outside any team.
  ASSERT_EQ(cli_.Run({"job", "submit", "lost", "-n", "default", "--image", "img", "--kind", "Job",
                      "--dry-run=server"})
                .code,
            1);  // refused like any submission there
  ASSERT_TRUE(cli_.api()
                  .Upsert("jobs",
                          R"({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name":
                          "lost", "namespace": "default"}, "spec": {"parallelism": 1}})")
                  .ok());
  testing::CliRun run = cli_.Run({"job", "why", "lost", "-n", "default"});
  EXPECT_EQ(run.code, 1);
  EXPECT_EQ(run.err,
            "error: job/lost is in namespace default, which belongs to no team: taskgov does not "
            "govern it (kube-scheduler alone decides where it runs); teams' namespaces: a: "
            "hyperpod-ns-a; b: hyperpod-ns-b\n");
}

TEST_F(SubmitChecksTest, QuotaWritesWarnAboveCapacityAndOfUnknownInstanceTypes) {
  cli_.api().LoadSampleCluster();  // 2 ml.p5.48xlarge nodes: 16 GPUs
  testing::CliRun run = cli_.Run(
      {"quota", "create", "x", "--instance-type", "ml.p5.48xlarge", "--accelerators", "12"});
  ASSERT_EQ(run.code, 0) << run.err;
  EXPECT_EQ(run.err.find("warning"), std::string::npos) << run.err;
  run = cli_.Run(
      {"quota", "create", "y", "--instance-type", "ml.p5.48xlarge", "--accelerators", "8"});
  ASSERT_EQ(run.code, 0) << run.err;
  EXPECT_NE(run.err.find("warning: the teams' nominal quotas on ml.p5.48xlarge add up to 20 "
                         "nvidia.com/gpu, more than its 2 nodes have (16)"),
            std::string::npos)
      << run.err;
  run = cli_.Run({"quota", "create", "z", "--instance-type", "ml.p5.48xlarg", "--vcpu", "8",
                  "--memory", "64"});
  ASSERT_EQ(run.code, 0) << run.err;
  EXPECT_NE(run.err.find("warning: instance type ml.p5.48xlarg is unknown: it is not in the "
                         "catalogue and no node of the cluster has it"),
            std::string::npos)
      << run.err;
}

TEST_F(SubmitChecksTest, MemoryTakesGiBOrAQuantityEverywhere) {
  testing::CliRun quota = cli_.Run({"quota", "create", "m", "--instance-type", "ml.p5.48xlarge",
                                    "--vcpu", "4", "--memory", "512Mi", "--dry-run=client"});
  EXPECT_EQ(quota.code, 0) << quota.err;
  EXPECT_NE(quota.out.find("memoryInGiB: 0.5"), std::string::npos) << quota.out;
  testing::CliRun plain = cli_.Run({"quota", "create", "m", "--instance-type", "ml.p5.48xlarge",
                                    "--vcpu", "4", "--memory", "0.5", "--dry-run=client"});
  EXPECT_EQ(plain.out, quota.out);
  testing::CliRun job = cli_.Run({"job", "submit", "m", "--image", "img", "--memory", "512Mi",
                                  "--dry-run=client", "-o", "json"});
  EXPECT_EQ(job.code, 0) << job.err;
  EXPECT_NE(job.out.find("\"memory\": \"512Mi\""), std::string::npos) << job.out;
}

}  // namespace
}  // namespace taskgov::cli
