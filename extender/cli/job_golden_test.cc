// Golden output of the job and live commands: `job list`, `job describe`, `top teams` and the
// live part of `quota describe` in their -o formats, and `job submit --dry-run`'s manifests,
// against a fixed cluster: jobs submitted with the CLI into the fake API server (its Job
// controller on), two of their pods placed and running, and an admin API behind the service proxy
// that answers testdata/admin_*.json (admin_explanation.json is ADMIN_API.md's real reply, its
// workload renamed to the fixture's job). Compared byte for byte with testdata/.
//
// To regenerate after an intended change (then review the diff):
//   bazel test //extender/cli:job_golden_test --spawn_strategy=local
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
  bool admin_api = true;  // the console Service answers
  std::string err;        // what stderr must say ("" : nothing)
};

std::string Testdata(const std::string& file) {
  common::Result<std::string> text =
      scheduler::kube::ReadFile("extender/cli/testdata/" + file, "testdata");
  EXPECT_TRUE(text.ok()) << text.error().message;
  return text.ok() ? *text : "";
}

// A stored object with `from` replaced by `to` (fixed timestamps, a placed pod).
void Rewrite(testing::CliFixture& cli, const std::string& resource, const std::string& ns,
             const std::string& name, const std::string& from, const std::string& to) {
  std::optional<std::string> json = cli.api().Get(resource, ns, name);
  ASSERT_TRUE(json.has_value()) << resource << " " << ns << "/" << name;
  const size_t at = json->find(from);
  ASSERT_NE(at, std::string::npos) << from << " in " << *json;
  json->replace(at, from.size(), to);
  ASSERT_TRUE(cli.api().Upsert(resource, *json).ok());
}

std::string Created(testing::CliFixture& cli, const std::string& ns, const std::string& name) {
  std::optional<std::string> json = cli.api().Get("jobs", ns, name);
  const std::string key = "\"creationTimestamp\":\"";
  const size_t at = json ? json->find(key) : std::string::npos;
  return at == std::string::npos ? "" : key + json->substr(at + key.size(), 20) + "\"";
}

void Submit(testing::CliFixture& cli, std::vector<std::string> args) {
  testing::CliRun run = cli.Run(std::move(args));
  ASSERT_EQ(run.code, 0) << run.err;
}

// The pods of job `name`, by name.
std::vector<std::string> PodNames(testing::CliFixture& cli, const std::string& name) {
  std::vector<std::string> out;
  for (const std::string& json : cli.api().List("pods")) {
    if (json.find("\"job-name\":\"" + name + "\"") == std::string::npos) continue;
    const std::string key = "\"name\":\"" + name + "-";
    const size_t at = json.find(key);
    out.push_back(json.substr(at + 8, json.find('"', at + 8) - at - 8));
  }
  return out;
}

class JobGoldenTest : public ::testing::TestWithParam<GoldenCase> {
 protected:
  void SetUp() override {
    scheduler::kube::testing::FakeApiServerOptions options;
    options.simulate_job_controller = true;
    cli_ = std::make_unique<testing::CliFixture>(options);
    ASSERT_TRUE(cli_->Start());
    cli_->api().LoadSampleCluster();
    cli_->api().SetServed("pytorchjobs", false);  // indexed Jobs
    Submit(*cli_, {"job", "submit", "train", "-n", "hyperpod-ns-a", "--image", "pytorch:2.3",
                   "--instance-type", "ml.p5.48xlarge", "--accelerators", "8", "--vcpu", "32",
                   "--memory", "256", "--node-count", "2"});
    Submit(*cli_, {"job", "submit", "finetune", "-n", "hyperpod-ns-b", "--image", "pytorch:2.3",
                   "--instance-type", "ml.p5.48xlarge", "--accelerators", "8", "--vcpu", "4",
                   "--memory-limit", "64", "--node-count", "2", "--priority", "training"});
    Submit(*cli_, {"job", "submit", "eval", "-n", "hyperpod-ns-b", "--image", "eval:1",
                   "--instance-type", "ml.g5.12xlarge", "--accelerators", "1"});
    Submit(*cli_, {"job", "suspend", "eval", "-n", "hyperpod-ns-b"});
    // pretrain was paused by taskgov for a reclaim (issue 35): suspended, with its annotations.
    Submit(*cli_,
           {"job", "submit", "pretrain", "-n", "hyperpod-ns-a", "--image", "pytorch:2.3",
            "--instance-type", "ml.p5.48xlarge", "--accelerators", "8", "--node-count", "2"});
    Submit(*cli_, {"job", "suspend", "pretrain", "-n", "hyperpod-ns-a"});
    for (const auto& [ns, name, at, annotations] :
         std::vector<std::tuple<std::string, std::string, std::string, std::string>>{
             {"hyperpod-ns-a", "train", "2026-05-28T19:00:00Z", ""},
             {"hyperpod-ns-b", "finetune", "2026-05-28T20:00:00Z", ""},
             {"hyperpod-ns-b", "eval", "2026-05-28T20:10:00Z", ""},
             {"hyperpod-ns-a", "pretrain", "2026-05-28T18:00:00Z",
              R"(,"annotations":{"taskgov.io/suspended-by":"taskgov",)"
              R"("taskgov.io/suspend-reason":"Reclaim",)"
              R"("taskgov.io/suspended-at":"2026-05-28T20:20:00Z",)"
              R"("taskgov.io/suspensions":"2","taskgov.io/suspended-priority":"0"})"}}) {
      Rewrite(*cli_, "jobs", ns, name, Created(*cli_, ns, name),
              "\"creationTimestamp\":\"" + at + "\"" + annotations);
    }
    // train runs: its pods are placed and started.
    std::vector<std::string> pods = PodNames(*cli_, "train");
    ASSERT_EQ(pods.size(), 2u);
    for (size_t i = 0; i < pods.size(); ++i) {
      Rewrite(*cli_, "pods", "hyperpod-ns-a", pods[i], "\"spec\":{",
              "\"spec\":{\"nodeName\":\"hyperpod-p5-" + std::to_string(i) + "\",");
      ASSERT_TRUE(cli_->api().SetPodPhase("hyperpod-ns-a", pods[i], "Running"));
    }
  }

  std::unique_ptr<testing::CliFixture> cli_;
};

TEST_P(JobGoldenTest, OutputMatches) {
  const GoldenCase& c = GetParam();
  if (c.admin_api) {
    cli_->api().SetServiceHandler(
        "taskgov-system", "taskgov-console", 9091,
        testing::AdminApiFixture(Testdata("admin_teams.json"), Testdata("admin_workloads.json"),
                                 {{"hyperpod-ns-b/finetune", Testdata("admin_explanation.json")}}));
  }
  OwnedPolicy policy;
  TeamQuota a;
  a.name = "a";
  a.cohort = "hyperpod";
  a.compute = {ComputeLine{"ml.p5.48xlarge", 1, {}, {}, {}}};
  policy.teams = {a};
  cli_->PutConfigMap({{"taskgov-cli.yaml", RenderOwned(policy)}});
  testing::CliRun run = cli_->Run(c.args);
  ASSERT_EQ(run.code, 0) << run.err;
  EXPECT_EQ(run.err, c.err);
  if (const char* dir = std::getenv("TASKGOV_UPDATE_GOLDEN"); dir != nullptr) {
    std::ofstream(std::string(dir) + "/" + c.name + ".golden", std::ios::binary) << run.out;
    GTEST_SKIP() << "wrote " << c.name << ".golden";
  }
  EXPECT_EQ(run.out, Testdata(c.name + ".golden"));
}

const char kNoConsole[] =
    "note: team, queue position and wait not shown: the extender's admin API (service "
    "taskgov-system/taskgov-console:9091 through the API server's proxy) did not answer: GET "
    "/api/v1/namespaces/taskgov-system/services/https:taskgov-console:9091/proxy/api/v1/"
    "workloads?limit=500: 404 NotFound: services \"taskgov-console\" not found; install the "
    "console Service (deploy/base/console-service.yaml; the extender serves it with "
    "--console-listen), name another one with --console-service NS/NAME:PORT, or connect "
    "directly with --console-url URL (after kubectl port-forward)\n";

INSTANTIATE_TEST_SUITE_P(
    Testdata, JobGoldenTest,
    ::testing::Values(
        GoldenCase{"job_list_table", {"job", "list", "-A"}, true, ""},
        GoldenCase{"job_list_wide", {"job", "list", "-A", "-o", "wide"}, true, ""},
        GoldenCase{"job_list_json", {"job", "list", "-n", "hyperpod-ns-b", "-o", "json"}, true, ""},
        GoldenCase{"job_list_yaml", {"job", "list", "--team", "a", "-o", "yaml"}, true, ""},
        GoldenCase{"job_list_pending", {"job", "list", "-A", "--state", "Pending"}, true, ""},
        GoldenCase{"job_list_no_console", {"job", "list", "-A"}, false, kNoConsole},
        GoldenCase{
            "job_describe_table", {"job", "describe", "finetune", "-n", "hyperpod-ns-b"}, true, ""},
        GoldenCase{"job_describe_json",
                   {"job", "describe", "train", "-n", "hyperpod-ns-a", "-o", "json"},
                   true,
                   ""},
        GoldenCase{"job_describe_yaml",
                   {"job", "describe", "eval", "-n", "hyperpod-ns-b", "-o", "yaml"},
                   true,
                   ""},
        GoldenCase{"job_why_table", {"job", "why", "finetune", "-n", "hyperpod-ns-b"}, true, ""},
        // Issue 35: who suspended a job and why; what a paused job waits for.
        GoldenCase{"job_list_suspended",
                   {"job", "list", "-A", "--state", "Suspended", "-o", "wide"},
                   true,
                   ""},
        GoldenCase{"job_describe_paused",
                   {"job", "describe", "pretrain", "-n", "hyperpod-ns-a"},
                   true,
                   ""},
        GoldenCase{"job_why_paused", {"job", "why", "pretrain", "-n", "hyperpod-ns-a"}, true, ""},
        GoldenCase{
            "job_why_user_suspended", {"job", "why", "eval", "-n", "hyperpod-ns-b"}, true, ""},
        GoldenCase{"job_why_json",
                   {"job", "why", "finetune", "-n", "hyperpod-ns-b", "-o", "json"},
                   true,
                   ""},
        GoldenCase{"job_why_yaml",
                   {"job", "why", "finetune", "-n", "hyperpod-ns-b", "-o", "yaml"},
                   true,
                   ""},
        GoldenCase{"top_teams_table", {"top", "teams"}, true, ""},
        GoldenCase{"top_teams_json", {"top", "teams", "-o", "json"}, true, ""},
        GoldenCase{"top_teams_yaml", {"top", "teams", "--team", "b", "-o", "yaml"}, true, ""},
        GoldenCase{"quota_describe_live", {"quota", "describe", "a"}, true, ""},
        GoldenCase{"submit_dry_run_yaml",
                   {"job",
                    "submit",
                    "smoke",
                    "-n",
                    "hyperpod-ns-c",
                    "--image",
                    "busybox",
                    "--instance-type",
                    "ml.g5.12xlarge",
                    "--accelerators",
                    "1",
                    "--vcpu",
                    "0.5",
                    "--memory",
                    "1.5",
                    "--vcpu-limit",
                    "1",
                    "--node-count",
                    "2",
                    "--tasks-per-node",
                    "4",
                    "--command",
                    "sh",
                    "--args",
                    "-c",
                    "--args",
                    "echo ok",
                    "--env",
                    "A=1",
                    "--pull-policy",
                    "IfNotPresent",
                    "--max-retry",
                    "3",
                    "--priority",
                    "inference",
                    "--dry-run"},
                   true,
                   ""},
        GoldenCase{"submit_dry_run_pytorch_json",
                   {"job",
                    "submit",
                    "smoke",
                    "-n",
                    "hyperpod-ns-c",
                    "--image",
                    "busybox",
                    "--instance-type",
                    "ml.p5.48xlarge",
                    "--accelerators",
                    "8",
                    "--node-count",
                    "3",
                    "--tasks-per-node",
                    "8",
                    "--kind",
                    "PyTorchJob",
                    "--dry-run",
                    "-o",
                    "json"},
                   true,
                   ""}),
    [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace taskgov::cli
