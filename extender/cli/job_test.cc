// The job commands against the fake API server: the kind submit picks by discovery, PyTorchJobs'
// suspend and priority (runPolicy.suspend, both replica templates), writes that meet a concurrent
// change (409: re-read, re-applied, nothing lost), and what the CLI says when the admin API
// refuses it behind the service proxy.

#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include <atomic>

#include "extender/cli/testing/cli_fixture.h"

namespace taskgov::cli {
namespace {

rapidjson::Document Parse(const std::optional<std::string>& json) {
  rapidjson::Document doc;
  doc.Parse(json.value_or("{}").c_str());
  return doc;
}

std::vector<std::string> SubmitArgs(const std::string& name) {
  return {"job",
          "submit",
          name,
          "-n",
          "hyperpod-ns-a",
          "--image",
          "img",
          "--instance-type",
          "ml.p5.48xlarge",
          "--accelerators",
          "8",
          "--node-count",
          "3",
          "--priority",
          "training"};
}

// Issue 37: --required-topology / --preferred-topology write Kueue's annotation on the pods'
// template (HyperPod's short level names accepted); both at once, or a bad label, is refused.
TEST(JobKindTest, TopologyFlagsAnnotateThePodTemplate) {
  testing::CliFixture cli;
  ASSERT_TRUE(cli.Start());
  cli.api().SetServed("pytorchjobs", false);
  std::vector<std::string> args = SubmitArgs("near");
  args.insert(args.end(), {"--required-topology", "network-node-layer-2"});
  testing::CliRun run = cli.Run(args);
  ASSERT_EQ(run.code, 0) << run.err;
  rapidjson::Document job = Parse(cli.api().Get("jobs", "hyperpod-ns-a", "near"));
  ASSERT_TRUE(job.IsObject());
  EXPECT_STREQ(
      job["spec"]["template"]["metadata"]["annotations"]["kueue.x-k8s.io/podset-required-topology"]
          .GetString(),
      "topology.k8s.aws/network-node-layer-2");
  args = SubmitArgs("loose");
  args.insert(args.end(), {"--preferred-topology", "example.com/rack"});
  ASSERT_EQ(cli.Run(args).code, 0);
  job = Parse(cli.api().Get("jobs", "hyperpod-ns-a", "loose"));
  EXPECT_STREQ(
      job["spec"]["template"]["metadata"]["annotations"]["kueue.x-k8s.io/podset-preferred-topology"]
          .GetString(),
      "example.com/rack");
  args = SubmitArgs("both");
  args.insert(args.end(), {"--required-topology", "network-node-layer-1", "--preferred-topology",
                           "network-node-layer-2"});
  run = cli.Run(args);
  EXPECT_EQ(run.code, 2);
  EXPECT_NE(run.err.find("not both"), std::string::npos) << run.err;
  args = SubmitArgs("bad");
  args.insert(args.end(), {"--required-topology", "not a label"});
  run = cli.Run(args);
  EXPECT_EQ(run.code, 2);
  EXPECT_NE(run.err.find("give a node label key"), std::string::npos) << run.err;
}

TEST(JobKindTest, APyTorchJobWhereTheCrdIsServedElseAnIndexedJob) {
  testing::CliFixture cli;
  ASSERT_TRUE(cli.Start());
  testing::CliRun run = cli.Run(SubmitArgs("pt"));
  ASSERT_EQ(run.code, 0) << run.err;
  EXPECT_NE(run.out.find("pytorchjob/pt created"), std::string::npos) << run.out;
  rapidjson::Document pt = Parse(cli.api().Get("pytorchjobs", "hyperpod-ns-a", "pt"));
  ASSERT_TRUE(pt.IsObject());
  EXPECT_EQ(pt["spec"]["pytorchReplicaSpecs"]["Master"]["replicas"].GetInt64(), 1);
  EXPECT_EQ(pt["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"].GetInt64(), 2);
  EXPECT_STREQ(pt["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]
                 ["resources"]["limits"]["nvidia.com/gpu"]
                     .GetString(),
               "8");
  EXPECT_FALSE(cli.api().Get("jobs", "hyperpod-ns-a", "pt").has_value());

  cli.api().SetServed("pytorchjobs", false);
  cli.api().SetServed("tfjobs", false);
  run = cli.Run(SubmitArgs("plain"));
  ASSERT_EQ(run.code, 0) << run.err;
  rapidjson::Document job = Parse(cli.api().Get("jobs", "hyperpod-ns-a", "plain"));
  ASSERT_TRUE(job.IsObject());
  EXPECT_EQ(job["spec"]["parallelism"].GetInt64(), 3);
  EXPECT_EQ(job["spec"]["completions"].GetInt64(), 3);
  EXPECT_STREQ(job["spec"]["completionMode"].GetString(), "Indexed");
  // Issue 35: a disruption (eviction, drain, preemption) burns no retry.
  const rapidjson::Value& rule = job["spec"]["podFailurePolicy"]["rules"][0];
  EXPECT_STREQ(rule["action"].GetString(), "Ignore");
  EXPECT_STREQ(rule["onPodConditions"][0]["type"].GetString(), "DisruptionTarget");
  EXPECT_STREQ(job["spec"]["template"]["spec"]["restartPolicy"].GetString(), "Never");
  EXPECT_STREQ(
      job["spec"]["template"]["metadata"]["labels"]["kueue.x-k8s.io/queue-name"].GetString(),
      "hyperpod-ns-a-localqueue");
  EXPECT_STREQ(job["spec"]["template"]["spec"]["schedulerName"].GetString(), "taskgov");
  // Submitting the same name again says what to do.
  run = cli.Run(SubmitArgs("plain"));
  EXPECT_EQ(run.code, 1);
  // (after a note that without the admin API the policy's checks were not made)
  EXPECT_EQ(run.err.substr(run.err.find("error: ")),
            "error: job/plain already exists in namespace hyperpod-ns-a: 'taskgov job delete "
            "plain -n hyperpod-ns-a' first, or choose another name\n");
}

TEST(JobKindTest, PyTorchJobsSuspendThroughRunPolicyAndRelabelEveryReplica) {
  testing::CliFixture cli;
  ASSERT_TRUE(cli.Start());
  ASSERT_EQ(cli.Run(SubmitArgs("pt")).code, 0);
  ASSERT_EQ(cli.Run({"job", "suspend", "pt", "-n", "hyperpod-ns-a"}).code, 0);
  rapidjson::Document pt = Parse(cli.api().Get("pytorchjobs", "hyperpod-ns-a", "pt"));
  EXPECT_TRUE(pt["spec"]["runPolicy"]["suspend"].GetBool());
  testing::CliRun list = cli.Run({"job", "list", "-n", "hyperpod-ns-a", "-o", "name"});
  EXPECT_EQ(list.out, "pytorchjob/pt\n");
  testing::CliRun again = cli.Run({"job", "suspend", "pt", "-n", "hyperpod-ns-a"});
  EXPECT_EQ(again.out, "pytorchjob/pt is already suspended (unchanged)\n");

  testing::CliRun priority = cli.Run({"job", "priority", "pt", "inference", "-n", "hyperpod-ns-a"});
  ASSERT_EQ(priority.code, 0) << priority.err;
  pt = Parse(cli.api().Get("pytorchjobs", "hyperpod-ns-a", "pt"));
  EXPECT_STREQ(pt["metadata"]["labels"]["kueue.x-k8s.io/priority-class"].GetString(), "inference");
  for (const char* role : {"Master", "Worker"}) {
    EXPECT_STREQ(pt["spec"]["pytorchReplicaSpecs"][role]["template"]["metadata"]["labels"]
                   ["kueue.x-k8s.io/priority-class"]
                       .GetString(),
                 "inference")
        << role;
  }
  ASSERT_EQ(cli.Run({"job", "resume", "pt", "-n", "hyperpod-ns-a"}).code, 0);
  pt = Parse(cli.api().Get("pytorchjobs", "hyperpod-ns-a", "pt"));
  EXPECT_FALSE(pt["spec"]["runPolicy"]["suspend"].GetBool());
  ASSERT_EQ(cli.Run({"job", "delete", "pt", "-n", "hyperpod-ns-a"}).code, 0);
  EXPECT_FALSE(cli.api().Get("pytorchjobs", "hyperpod-ns-a", "pt").has_value());
}

TEST(JobWriteTest, AConcurrentChangeIsReReadAndKept) {
  testing::CliFixture cli;
  ASSERT_TRUE(cli.Start());
  cli.api().SetServed("pytorchjobs", false);
  ASSERT_EQ(cli.Run(SubmitArgs("train")).code, 0);
  // Between the CLI's GET and its PUT someone else labels the Job: the PUT meets a 409.
  std::atomic<int> changes{0};
  cli.api().SetRequestHook([&](const std::string& method, const std::string& path) {
    if (method != "PUT" || !path.ends_with("/jobs/train") || changes.fetch_add(1) > 0) return;
    std::string json = *cli.api().Get("jobs", "hyperpod-ns-a", "train");
    json.replace(json.find("\"labels\":{"), 10, "\"labels\":{\"owner\":\"someone\",");
    ASSERT_TRUE(cli.api().Upsert("jobs", json).ok());
  });
  testing::CliRun run = cli.Run({"job", "suspend", "train", "-n", "hyperpod-ns-a"});
  ASSERT_EQ(run.code, 0) << run.err;
  cli.api().SetRequestHook(nullptr);
  rapidjson::Document job = Parse(cli.api().Get("jobs", "hyperpod-ns-a", "train"));
  EXPECT_TRUE(job["spec"]["suspend"].GetBool());
  EXPECT_STREQ(job["metadata"]["labels"]["owner"].GetString(), "someone");  // not overwritten
  size_t puts = 0;
  for (const auto& r : cli.api().requests()) {
    if (r.method == "PUT" && r.path.ends_with("/jobs/train")) ++puts;
  }
  EXPECT_EQ(puts, 2u);  // the one refused, the one re-applied
}

TEST(LiveTest, AConsoleThatChecksTokensBehindTheProxyIsExplained) {
  testing::CliFixture cli;
  ASSERT_TRUE(cli.Start());
  cli.api().SetServiceHandler("taskgov-system", "taskgov-console", 9091,
                              [](const std::string&, const std::string&) {
                                return std::make_pair(401, std::string(R"({"error":"no token"})"));
                              });
  testing::CliRun run = cli.Run({"top", "teams"});
  EXPECT_EQ(run.code, 1);
  EXPECT_NE(run.err.find("answered 401 Unauthorized ({\"error\":\"no token\"}): the console "
                         "checks a bearer token issued for its audience, which the CLI passes "
                         "through the API server's proxy in X-Taskgov-Authorization: give one "
                         "with --console-token"),
            std::string::npos)
      << run.err;
  // Another Service named by the flag is the one asked.
  cli.api().SetServiceHandler(
      "ops", "console", 8080,
      testing::AdminApiFixture(R"({"kind":"TeamList","items":[]})",
                               R"({"kind":"WorkloadList","items":[],"continue":null})"));
  run = cli.Run({"top", "teams", "--console-service", "ops/console:8080", "-o", "json"});
  ASSERT_EQ(run.code, 0) << run.err;
  EXPECT_NE(run.out.find("\"teams\": []"), std::string::npos) << run.out;
}

}  // namespace
}  // namespace taskgov::cli
