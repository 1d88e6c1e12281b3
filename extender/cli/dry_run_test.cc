// kubectl's habit (issue 38, item 14): `create`/`update`/`delete`/`set` with --dry-run and
// -o yaml|json print the object the command would write — the policy ConfigMap as it would be
// after the change — and write nothing; a job's dry run needs no cluster at all.

#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include "extender/cli/testing/cli_fixture.h"

namespace taskgov::cli {
namespace {

class DryRunTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(cli_.Start());
    for (const char* team : {"a", "keep"}) {
      ASSERT_EQ(
          cli_.Run({"quota", "create", team, "--instance-type", "ml.p5.48xlarge", "--count", "1"})
              .code,
          0);
    }
    version_ = cli_.ResourceVersion();
  }
  testing::CliFixture cli_;
  std::string version_;
};

TEST_F(DryRunTest, QuotaCreateDryRunPrintsTheConfigMapItWouldWrite) {
  testing::CliRun run = cli_.Run({"quota", "create", "b", "--instance-type", "ml.g5.12xlarge",
                                  "--accelerators", "2", "--dry-run=client", "-o", "json"});
  ASSERT_EQ(run.code, 0) << run.err;
  rapidjson::Document doc;
  ASSERT_FALSE(doc.Parse(run.out.c_str()).HasParseError()) << run.out;
  EXPECT_STREQ(doc["kind"].GetString(), "ConfigMap");
  EXPECT_STREQ(doc["apiVersion"].GetString(), "v1");
  EXPECT_STREQ(doc["metadata"]["name"].GetString(), "taskgov-config");
  EXPECT_STREQ(doc["metadata"]["namespace"].GetString(), "taskgov-system");
  const std::string key = doc["data"]["taskgov-cli.yaml"].GetString();
  EXPECT_NE(key.find("name: a\n"), std::string::npos) << key;
  EXPECT_NE(key.find("name: b\n"), std::string::npos) << key;
  EXPECT_NE(key.find("{instanceType: ml.g5.12xlarge, accelerators: 2}"), std::string::npos) << key;
  EXPECT_EQ(cli_.ResourceVersion(), version_) << "a dry run writes nothing";
  EXPECT_EQ(cli_.Data().at("taskgov-cli.yaml").find("name: b\n"), std::string::npos);

  run = cli_.Run({"quota", "create", "b", "--instance-type", "ml.g5.12xlarge", "--accelerators",
                  "2", "--dry-run=client", "-o", "yaml"});
  ASSERT_EQ(run.code, 0) << run.err;
  EXPECT_TRUE(run.out.starts_with("apiVersion: v1\nkind: ConfigMap\n")) << run.out;
  EXPECT_NE(run.out.find("taskgov-cli.yaml: "), std::string::npos) << run.out;
}

TEST_F(DryRunTest, UpdateDeleteAndPolicySetPrintTheirObjectToo) {
  testing::CliRun run = cli_.Run(
      {"quota", "update", "a", "--fair-share-weight", "5", "--dry-run=server", "-o", "json"});
  ASSERT_EQ(run.code, 0) << run.err;
  rapidjson::Document doc;
  ASSERT_FALSE(doc.Parse(run.out.c_str()).HasParseError()) << run.out;
  EXPECT_NE(std::string(doc["data"]["taskgov-cli.yaml"].GetString()).find("fairShareWeight: 5"),
            std::string::npos);
  run = cli_.Run({"quota", "delete", "a", "--dry-run=client", "-o", "yaml"});
  ASSERT_EQ(run.code, 0) << run.err;
  EXPECT_TRUE(run.out.starts_with("apiVersion: v1\nkind: ConfigMap\n")) << run.out;
  EXPECT_EQ(run.out.find("name: a"), std::string::npos) << run.out;
  run = cli_.Run({"policy", "set", "--task-prioritization", "FirstComeFirstServe",
                  "--dry-run=client", "-o", "yaml"});
  ASSERT_EQ(run.code, 0) << run.err;
  EXPECT_NE(run.out.find("taskPrioritization: FirstComeFirstServe"), std::string::npos) << run.out;
  EXPECT_EQ(cli_.ResourceVersion(), version_) << "no dry run writes anything";
}

TEST_F(DryRunTest, AJobsClientDryRunNeedsNoCluster) {
  testing::CliRun run = testing::CliFixture::RunOffline(
      {"job", "submit", "t", "--image", "img", "-n", "hyperpod-ns-a", "--kubeconfig",
       "/nonexistent/kubeconfig", "--dry-run=client", "-o", "yaml"});
  ASSERT_EQ(run.code, 0) << run.err;
  EXPECT_TRUE(run.out.starts_with("apiVersion: batch/v1\nkind: Job\n")) << run.out;
}

}  // namespace
}  // namespace taskgov::cli
