// The data scientist's walkthrough with the taskgov CLI against the real extender (issue 13):
// jobs submitted with `taskgov job submit` become indexed batch/v1 Jobs whose pods the fake API
// server's Job controller creates; the extender governs each as one gang; a small scheduler loop
// here plays kube-scheduler for those pods (filter, bind through the extender, start). The CLI
// reads the admin API through the API server's service proxy, as a user's kubectl would.
//
//   submit a 2-node job → list it Pending → it is admitted whole and runs → list it Running;
//   a second job over the team's quota waits, and describe / why say why; its priority changes
//   (a running job's is refused); suspend frees the quota the first held (the second runs),
//   resume makes it wait again; `top teams` prints the admin API's numbers. A suspended job says
//   who suspended it and why (issue 35).

#include <gtest/gtest.h>

#include <rapidjson/document.h>
#include <chrono>
#include <ctime>
#include <thread>

#include <fstream>
#include <set>
#include <sstream>

#include "e2e/scenario_test_util.h"
#include "extender/cli/testing/cli_fixture.h"
#include "extender/http_test_util.h"

namespace taskgov::e2e {
namespace {

constexpr char kPolicy[] = R"(apiVersion: taskgov.io/v1
kind: TaskGovernancePolicy
taskPrioritization: TaskRanking
idleComputeAllocation: FairShare
priorityClasses:
  - {name: inference, weight: 100}
  - {name: training, weight: 75}
defaultCohort: hyperpod
teams:
  - name: a
    sharing: {strategy: Lend}
    preemptTeamTasks: Never
    compute: [{instanceType: ml.p5.48xlarge, accelerators: 8}]
  - name: b
    sharing: {strategy: Lend}
    compute: [{instanceType: ml.p5.48xlarge, accelerators: 8}]
)";

constexpr char kNs[] = "hyperpod-ns-a";

using cli::testing::CliRun;

class CliJobsTest : public ScenarioTest {
 protected:
  void SetUp() override {
    HarnessOptions options;
    options.config["policy.yaml"] = kPolicy;
    options.extender_args = {"--console-auth=" + console_auth_};
    StartHarness(options);
    h().api().SetJobController(true);
    if (!pytorch_jobs_served_) h().api().SetServed("pytorchjobs", false);  // indexed Jobs
    h().api().SetServiceProxy("taskgov-system", "taskgov-console", 9091,
                              h().extender().console_url());
    kubeconfig_ = ::testing::TempDir() + "/cli-jobs-kubeconfig";
    std::ofstream(kubeconfig_) << scheduler::kube::testing::KubeconfigFor(h().api().url());
  }

  // How the console checks callers: "none" (RBAC on services/proxy decides), or "token".
  std::string console_auth_ = "none";
  // Whether the API server serves the PyTorchJob CRD, from before the extender starts: the
  // extender's informer lists an optional CRD at start and, when it is missing then, looks for it
  // again minutes later (served only once the extender had listed it, the job would not be seen).
  bool pytorch_jobs_served_ = false;

  // E2E_VERBOSE=1 prints each command line and what it printed: a session transcript.
  CliRun Cli(std::vector<std::string> args) {
    std::string line = "$ taskgov";
    for (const std::string& a : args) {
      line += " " + (a.find(' ') == std::string::npos ? a : "'" + a + "'");
    }
    args.push_back("--kubeconfig=" + kubeconfig_);
    CliRun run = cli::testing::CliFixture::RunOffline(args);
    if (getenv("E2E_VERBOSE") != nullptr)
      printf("%s\n%s%s", line.c_str(), run.out.c_str(), run.err.c_str());
    return run;
  }
  CliRun Ok(std::vector<std::string> args) {
    CliRun run = Cli(args);
    std::string line;
    for (const std::string& a : args) line += a + " ";
    EXPECT_EQ(run.code, 0) << line << "\n" << run.err << run.out;
    return run;
  }

  // The pods of job `job` as the fake API server holds them.
  std::vector<rapidjson::Document> PodsOf(const std::string& job) {
    std::vector<rapidjson::Document> out;
    for (const std::string& json : h().api().List("pods")) {
      rapidjson::Document pod;
      pod.Parse(json.c_str());
      const auto& meta = pod["metadata"];
      if (!meta.HasMember("labels")) continue;
      // A Job's pods, or a PyTorchJob's (as the training operator labels them).
      for (const char* label : {"job-name", "training.kubeflow.org/job-name"}) {
        if (meta["labels"].HasMember(label) && meta["labels"][label].GetString() == job) {
          out.push_back(std::move(pod));
          break;
        }
      }
    }
    return out;
  }

  // kube-scheduler for the Jobs' pods: every pending one is filtered against the free p5 nodes,
  // bound through the extender when it is feasible, and started. Returns the pods bound.
  int SchedulePending(const std::string& job) {
    common::Status synced = h().Sync();
    EXPECT_TRUE(synced.ok()) << synced.error().message;
    std::set<std::string> used;  // nodes taken by a running job pod (each takes a node's half+)
    std::map<std::string, int> gpus_used;
    for (const std::string& json : h().api().List("pods")) {
      rapidjson::Document pod;
      pod.Parse(json.c_str());
      if (!pod["spec"].HasMember("nodeName")) continue;
      gpus_used[pod["spec"]["nodeName"].GetString()] += 4;
    }
    int bound = 0;
    for (rapidjson::Document& pod : PodsOf(job)) {
      if (pod["spec"].HasMember("nodeName")) continue;
      std::vector<std::string> free;
      for (const char* node : {"hyperpod-p5-0", "hyperpod-p5-1"}) {
        if (gpus_used[node] + 4 <= 8) free.push_back(node);
      }
      const std::string name = pod["metadata"]["name"].GetString();
      const std::string uid = pod["metadata"]["uid"].GetString();
      const std::string json = *h().api().Get("pods", kNs, name);
      common::Result<extender::testing::FilterReply> filtered =
          h().extender().client().FilterNames(json, free);
      EXPECT_TRUE(filtered.ok()) << (filtered.ok() ? "" : filtered.error().message);
      if (!filtered.ok() || filtered->feasible.empty()) continue;
      const std::string node = filtered->feasible.front();
      common::Result<std::string> bind = h().extender().client().Bind(name, kNs, uid, node);
      EXPECT_TRUE(bind.ok() && bind->empty()) << (bind.ok() ? *bind : bind.error().message);
      if (!bind.ok() || !bind->empty()) continue;
      gpus_used[node] += 4;
      EXPECT_TRUE(h().api().StartPod(kNs, name, "2026-05-28T20:00:00Z"));
      ++bound;
    }
    EXPECT_TRUE(h().Sync().ok());
    return bound;
  }

  // The row of `job` in `job list`'s table, split in columns.
  std::vector<std::string> Row(const std::string& table, const std::string& job) {
    std::istringstream lines(table);
    for (std::string line; std::getline(lines, line);) {
      std::istringstream words(line);
      std::vector<std::string> row;
      for (std::string w; words >> w;) row.push_back(w);
      if (!row.empty() && row[0] == job) return row;
    }
    ADD_FAILURE() << "no row " << job << " in\n" << table;
    return {};
  }

  std::string State(const std::string& job) {
    std::vector<std::string> row = Row(Ok({"job", "list", "-n", kNs}).out, job);
    return row.size() > 3 ? row[3] : "";
  }

  std::string kubeconfig_;
};

TEST_F(CliJobsTest, TheDataScientistsWalkthrough) {
  CliRun submitted = Ok({"job", "submit", "train", "-n", kNs, "--image", "pytorch:2.3",
                         "--instance-type", kP5, "--accelerators", "4", "--vcpu", "8", "--memory",
                         "64", "--node-count", "2", "--priority", "training"});
  EXPECT_NE(submitted.out.find("job/train created in namespace hyperpod-ns-a (Job, 2 nodes as "
                               "one gang, queue hyperpod-ns-a-localqueue, priority training)"),
            std::string::npos)
      << submitted.out;
  ASSERT_EQ(PodsOf("train").size(), 2u);
  EXPECT_EQ(State("train"), "Pending");

  // Admitted whole: both pods bind, then run.
  EXPECT_EQ(SchedulePending("train"), 2) << h().Logs();
  EXPECT_EQ(State("train"), "Running");
  std::vector<std::string> row = Row(Ok({"job", "list", "-n", kNs}).out, "train");
  ASSERT_EQ(row.size(), 8u);
  EXPECT_EQ(row[4], "training");
  EXPECT_EQ(row[5], "a");  // the team, from the admin API through the service proxy

  // A second job over the team's quota (8 GPUs, in use by train; Lend: no borrowing) waits.
  Ok({"job", "submit", "second", "-n", kNs, "--image", "pytorch:2.3", "--instance-type", kP5,
      "--accelerators", "4", "--node-count", "2", "--priority", "training"});
  EXPECT_EQ(SchedulePending("second"), 0);
  EXPECT_EQ(State("second"), "Pending");
  CliRun describe = Ok({"job", "describe", "second", "-n", kNs});
  EXPECT_NE(describe.out.find("Team:           a"), std::string::npos) << describe.out;
  EXPECT_NE(describe.out.find("Queue position: 1"), std::string::npos) << describe.out;
  EXPECT_NE(describe.out.find("Refused:"), std::string::npos) << describe.out;
  EXPECT_NE(describe.out.find("nvidia.com/gpu"), std::string::npos) << describe.out;

  // Why, rule by rule, from the extender's explanation: the quota rule fails, and what would
  // have to change is named.
  CliRun why = Ok({"job", "why", "second", "-n", kNs});
  EXPECT_NE(why.out.find("Job hyperpod-ns-a/second (team a, Pending): Waiting"), std::string::npos)
      << why.out;
  EXPECT_NE(why.out.find("Flavor ml.p5.48xlarge, WithinNominal: not admissible"), std::string::npos)
      << why.out;
  EXPECT_NE(why.out.find("✗   quota"), std::string::npos) << why.out;
  EXPECT_NE(why.out.find("To run:\n  - "), std::string::npos) << why.out;
  rapidjson::Document explained;
  explained.Parse(Ok({"job", "why", "second", "-n", kNs, "-o", "json"}).out.c_str());
  ASSERT_TRUE(explained.IsObject());
  EXPECT_STREQ(explained["outlook"].GetString(), "Waiting");
  EXPECT_STREQ(explained["workloadKind"].GetString(), "Job");
  EXPECT_STREQ(explained["need"][kGpu].GetString(), "8");  // the whole gang's
  // A job larger than the team may ever use (16 GPUs; nominal 8, Lend borrows nothing).
  Ok({"job", "submit", "huge", "-n", kNs, "--image", "pytorch:2.3", "--instance-type", kP5,
      "--accelerators", "8", "--node-count", "2"});
  EXPECT_EQ(SchedulePending("huge"), 0);
  // Sync() orders pod events only: until the extender's Job informer has seen the Job (which
  // declares the gang's size), its pods wait for it (gangObject) and are not judged whole.
  for (int i = 0; i < 50; ++i) {  // bounded: 5 s
    explained.Parse(Ok({"job", "why", "huge", "-n", kNs, "-o", "json"}).out.c_str());
    ASSERT_TRUE(explained.IsObject());
    if (std::string(explained["summary"].GetString()).find("to be observed") == std::string::npos) {
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_STREQ(explained["outlook"].GetString(), "NeverFits") << explained["summary"].GetString();
  Ok({"job", "delete", "huge", "-n", kNs});

  // Its priority changes while it waits (the job, its template and its waiting pods); a running
  // job's is refused.
  CliRun unknown = Cli({"job", "priority", "second", "urgent", "-n", kNs});
  EXPECT_EQ(unknown.code, 1);
  EXPECT_EQ(unknown.err,
            "error: priority class \"urgent\" is not in the policy in force (its classes: "
            "inference, training): its pods would rank as priority 0; 'taskgov policy show' "
            "lists the classes\n");
  CliRun priority = Ok({"job", "priority", "second", "inference", "-n", kNs});
  EXPECT_EQ(priority.out,
            "job/second priority class changed: training -> inference (2 waiting pods "
            "relabelled)\n");
  for (const auto& pod : PodsOf("second")) {
    EXPECT_STREQ(pod["metadata"]["labels"]["kueue.x-k8s.io/priority-class"].GetString(),
                 "inference");
  }
  EXPECT_EQ(Row(Ok({"job", "list", "-n", kNs}).out, "second")[4], "inference");
  CliRun refused = Cli({"job", "priority", "train", "inference", "-n", kNs});
  EXPECT_EQ(refused.code, 1);
  EXPECT_NE(refused.err.find("job/train is running (2 of 2 pods placed)"), std::string::npos)
      << refused.err;

  // Suspending train deletes its pods and frees the quota: second is admitted and runs.
  Ok({"job", "suspend", "train", "-n", kNs});
  EXPECT_EQ(PodsOf("train").size(), 0u);
  EXPECT_EQ(State("train"), "Suspended");
  EXPECT_EQ(SchedulePending("second"), 2) << h().Logs();
  EXPECT_EQ(State("second"), "Running");
  // Resumed, train's pods come back and wait: second holds the quota now.
  Ok({"job", "resume", "train", "-n", kNs});
  EXPECT_EQ(PodsOf("train").size(), 2u);
  EXPECT_EQ(SchedulePending("train"), 0);
  EXPECT_EQ(State("train"), "Pending");
  EXPECT_EQ(Ok({"job", "list", "-A", "--state", "Running", "-o", "name"}).out, "job/second\n");

  // top teams prints what the admin API says, number for number.
  ASSERT_TRUE(h().Sync().ok());
  common::Result<common::testing::HttpReply> teams = h().extender().Admin("/api/v1/teams");
  ASSERT_TRUE(teams.ok() && teams->status == 200);
  EXPECT_NE(Ok({"top", "teams"}).out.find("a      ml.p5.48xlarge   nvidia.com/gpu   8         8"),
            std::string::npos);
  CliRun top = Ok({"top", "teams", "-o", "json"});
  rapidjson::Document api, cli;
  api.Parse(teams->body.c_str());
  cli.Parse(top.out.c_str());
  ASSERT_TRUE(cli.IsObject()) << top.out;
  ASSERT_EQ(cli["teams"].Size(), api["items"].Size());
  bool saw_gpu_use = false;
  for (rapidjson::SizeType t = 0; t < api["items"].Size(); ++t) {
    const auto& want = api["items"][t];
    const auto& got = cli["teams"][t];
    EXPECT_STREQ(got["name"].GetString(), want["name"].GetString());
    ASSERT_EQ(got["quotas"].Size(), want["quotas"].Size());
    for (rapidjson::SizeType q = 0; q < want["quotas"].Size(); ++q) {
      for (const char* field : {"nominal", "usage", "borrowed", "lent"}) {
        EXPECT_STREQ(got["quotas"][q][field].GetString(), want["quotas"][q][field].GetString())
            << want["name"].GetString() << " " << field;
      }
      EXPECT_STREQ(got["quotas"][q]["instanceType"].GetString(),
                   want["quotas"][q]["flavor"].GetString());
    }
    if (std::string(want["name"].GetString()) == "a") {
      EXPECT_EQ(got["waiting"]["workloads"].GetInt64(), 1);  // train waits
      EXPECT_EQ(got["runningPods"].GetInt64(), want["pods"]["running"].GetInt64());
      for (const auto& q : got["quotas"].GetArray()) {
        if (std::string(q["resource"].GetString()) == kGpu) {
          EXPECT_STREQ(q["usage"].GetString(), "8");
          // train's 2 pods of 4 GPUs wait for ml.p5.48xlarge (its node selector).
          EXPECT_STREQ(q["waiting"].GetString(), "8");
          saw_gpu_use = true;
        }
      }
    }
  }
  EXPECT_TRUE(saw_gpu_use) << top.out;

  // delete removes the job and its pods.
  Ok({"job", "delete", "train", "-n", kNs});
  EXPECT_EQ(PodsOf("train").size(), 0u);
  CliRun gone = Cli({"job", "describe", "train", "-n", kNs});
  EXPECT_EQ(gone.code, 1);
  EXPECT_EQ(gone.err,
            "error: no job, pod group or pod named \"train\" in namespace hyperpod-ns-a; 'taskgov "
            "job list -A' "
            "lists the jobs of every namespace\n");
  CliRun elsewhere = Cli({"job", "describe", "second", "-n", "hyperpod-ns-b"});
  EXPECT_EQ(elsewhere.err,
            "error: no job, pod group or pod named \"second\" in namespace hyperpod-ns-b; it "
            "exists in namespace "
            "hyperpod-ns-a: add -n hyperpod-ns-a\n");
}

TEST_F(CliJobsTest, WithoutTheConsoleKubernetesCommandsWorkAndSayWhatIsMissing) {
  h().api().RemoveServiceProxy("taskgov-system", "taskgov-console", 9091);
  Ok({"job", "submit", "solo", "-n", kNs, "--image", "img", "--instance-type", kP5,
      "--accelerators", "1"});
  CliRun list = Ok({"job", "list", "-n", kNs});
  EXPECT_EQ(Row(list.out, "solo").size(), 5u) << list.out;  // no live columns
  EXPECT_NE(list.err.find("note: team, queue position and wait not shown: the extender's admin "
                          "API (service taskgov-system/taskgov-console:9091 through the API "
                          "server's proxy) did not answer"),
            std::string::npos)
      << list.err;
  CliRun top = Cli({"top", "teams"});
  EXPECT_EQ(top.code, 1);
  EXPECT_NE(top.err.find("--console-service NS/NAME:PORT, or connect directly with --console-url"),
            std::string::npos)
      << top.err;
  // A direct connection to the console (as after kubectl port-forward) works.
  CliRun direct = Ok({"top", "teams", "--console-url", h().extender().console_url(),
                      "--console-ca-file", extender::testing::TlsTestFile("ca.pem")});
  EXPECT_NE(direct.out.find("TEAM   INSTANCE-TYPE"), std::string::npos) << direct.out;
}

// Where the Kubeflow training operator's CRD is served, `job submit` creates a PyTorchJob: its
// Master and Worker pods are one gang to taskgov, admitted whole, explained, suspended and
// resumed through runPolicy.suspend, and deleted with it.
class CliPyTorchJobsTest : public CliJobsTest {
 protected:
  CliPyTorchJobsTest() { pytorch_jobs_served_ = true; }
};

TEST_F(CliPyTorchJobsTest, APyTorchJobIsOneGangFromSubmitToDelete) {
  CliRun submitted =
      Ok({"job", "submit", "pt", "-n", kNs, "--image", "pytorch:2.3", "--instance-type", kP5,
          "--accelerators", "4", "--node-count", "2", "--priority", "training"});
  EXPECT_NE(submitted.out.find("pytorchjob/pt created in namespace hyperpod-ns-a (PyTorchJob"),
            std::string::npos)
      << submitted.out;
  std::set<std::string> names;
  for (const auto& pod : PodsOf("pt")) names.insert(pod["metadata"]["name"].GetString());
  EXPECT_EQ(names, (std::set<std::string>{"pt-master-0", "pt-worker-0"}));
  EXPECT_EQ(State("pt"), "Pending");
  ASSERT_TRUE(h().Sync().ok());
  // Sync() orders pod events only: wait (bounded: 5 s) until the extender's PyTorchJob informer
  // has seen the job, which declares the gang's size; under load it may lag the pods.
  rapidjson::Document w;
  for (int i = 0; i < 50; ++i) {
    common::Result<common::testing::HttpReply> workload =
        h().extender().Admin("/api/v1/workloads/" + std::string(kNs) + "/pt");
    ASSERT_TRUE(workload.ok() && workload->status == 200)
        << (workload.ok() ? workload->body : workload.error().message);
    w.Parse(workload->body.c_str());
    ASSERT_TRUE(w.IsObject() && w["items"].IsArray() && !w["items"].Empty()) << workload->body;
    if (w["items"][0]["declaredPods"].GetInt() > 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_STREQ(w["items"][0]["kind"].GetString(), "PyTorchJob");
  EXPECT_EQ(w["items"][0]["declaredPods"].GetInt(), 2);  // Master 1 + Worker 1
  EXPECT_EQ(SchedulePending("pt"), 2) << h().Logs();
  EXPECT_EQ(State("pt"), "Running");

  // A second one over a's quota (8 GPUs, in use by pt; Lend: no borrowing) waits, whole.
  Ok({"job", "submit", "pt2", "-n", kNs, "--image", "pytorch:2.3", "--instance-type", kP5,
      "--accelerators", "4", "--node-count", "2"});
  EXPECT_EQ(SchedulePending("pt2"), 0);
  rapidjson::Document why;
  why.Parse(Ok({"job", "why", "pt2", "-n", kNs, "-o", "json"}).out.c_str());
  ASSERT_TRUE(why.IsObject());
  EXPECT_STREQ(why["workloadKind"].GetString(), "PyTorchJob");
  EXPECT_STREQ(why["outlook"].GetString(), "Waiting");
  EXPECT_STREQ(why["need"][kGpu].GetString(), "8");  // the whole gang's

  // Suspended: its replicas are deleted; resumed: created again, waiting as one gang.
  Ok({"job", "suspend", "pt2", "-n", kNs});
  EXPECT_TRUE(PodsOf("pt2").empty());
  EXPECT_EQ(State("pt2"), "Suspended");
  Ok({"job", "resume", "pt2", "-n", kNs});
  EXPECT_EQ(PodsOf("pt2").size(), 2u);
  EXPECT_EQ(SchedulePending("pt2"), 0);
  // Deleting the running one frees its quota; the waiting one is admitted whole.
  Ok({"job", "delete", "pt", "-n", kNs});
  EXPECT_TRUE(PodsOf("pt").empty());
  ASSERT_TRUE(h().Sync().ok());
  EXPECT_EQ(SchedulePending("pt2"), 2) << h().Logs();
  EXPECT_EQ(State("pt2"), "Running");
}

// The console checking tokens, as deployed: the API server keeps the caller's Authorization
// header, so the CLI passes a token through the proxy in X-Taskgov-Authorization and the console
// reviews that one — for its audience (issue 36, item 6): the kubeconfig's token, issued for the
// API server, is refused; a console token (kubectl create token SA --audience taskgov, given as
// --console-token or $TASKGOV_CONSOLE_TOKEN) is accepted, and never works against the API server.
// Issue 35: a Job taskgov paused (suspended with its taskgov.io/ annotations, as the preemption
// controller leaves it) shows who paused it and why in job list, describe and why; a Job its
// user suspended shows that, and that taskgov never resumes it.
TEST_F(CliJobsTest, ASuspendedJobSaysWhoSuspendedItAndWhy) {
  for (const char* name : {"paused", "mine"}) {
    Ok({"job", "submit", name, "-n", kNs, "--image", "pytorch:2.3", "--instance-type", kP5,
        "--accelerators", "4", "--node-count", "2", "--priority", "training"});
    Ok({"job", "suspend", name, "-n", kNs});
  }
  // What the preemption controller writes when it pauses a job for a reclaim. Suspended now,
  // for the 8th time: the resumer's backoff (5 s·2^7, at most 10 minutes) keeps it paused
  // through this test.
  const std::time_t now = std::time(nullptr);
  char at[32];
  std::strftime(at, sizeof(at), "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  std::string job = *h().api().Get("jobs", kNs, "paused");
  const std::string meta = "\"metadata\":{";
  ASSERT_NE(job.find(meta), std::string::npos) << job;
  job.insert(job.find(meta) + meta.size(),
             std::string(R"("annotations":{"taskgov.io/suspended-by":"taskgov",)") +
                 R"("taskgov.io/suspend-reason":"Reclaim","taskgov.io/suspended-at":")" + at +
                 R"(","taskgov.io/suspensions":"8","taskgov.io/suspended-priority":"75"},)");
  ASSERT_TRUE(h().api().Upsert("jobs", job).ok());
  EXPECT_EQ(PodsOf("paused").size(), 0u);

  const std::string list = Ok({"job", "list", "-n", kNs}).out;
  EXPECT_NE(list.find("Suspended (Reclaimed by taskgov)"), std::string::npos) << list;
  EXPECT_NE(list.find("Suspended (by its user)"), std::string::npos) << list;
  const std::string only = Ok({"job", "list", "-n", kNs, "--state", "Suspended", "-o", "name"}).out;
  EXPECT_EQ(only, "job/mine\njob/paused\n");
  const std::string describe = Ok({"job", "describe", "paused", "-n", kNs}).out;
  EXPECT_NE(describe.find(std::string("Suspended by:    taskgov (Reclaim, since ") + at +
                          "; suspended 8 times): taskgov resumes it when its whole demand fits"),
            std::string::npos)
      << describe;
  EXPECT_NE(Ok({"job", "describe", "mine", "-n", kNs}).out.find("Suspended by:    its user"),
            std::string::npos);

  // The extender lists the paused job (no pods) as its team's, and explains what it waits for;
  // polled (bounded) until its informer has seen the annotations.
  std::string why;
  for (int i = 0; i < 100; ++i) {
    why = Ok({"job", "why", "paused", "-n", kNs}).out;
    if (why.find("is paused by taskgov (Reclaim)") != std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));  // polling, bounded above
  }
  EXPECT_NE(why.find("Job hyperpod-ns-a/paused (team a, Suspended)"), std::string::npos) << why;
  EXPECT_NE(why.find(std::string("Job hyperpod-ns-a/paused is paused by taskgov (Reclaim) since ") +
                     at + ": taskgov resumes it when its whole demand fits its team's quota"),
            std::string::npos)
      << why;
  EXPECT_NE(why.find("Needs now:      nvidia.com/gpu 8"), std::string::npos) << why;
  std::vector<std::string> row = Row(Ok({"job", "list", "-n", kNs}).out, "paused");
  ASSERT_GE(row.size(), 9u);
  EXPECT_EQ(row[8], "a");  // STATE is 4 words: the team from the admin API's paused row
  const std::string mine = Ok({"job", "why", "mine", "-n", kNs}).out;
  EXPECT_NE(mine.find("job/mine is suspended by its user (spec.suspend): taskgov never resumes it"),
            std::string::npos)
      << mine;
}

class CliJobsTokenTest : public CliJobsTest {
 protected:
  CliJobsTokenTest() { console_auth_ = "token"; }
  void SetUp() override {
    CliJobsTest::SetUp();
    h().api().SetAccessReviews(
        {{"t-alice", "alice", {}, {scheduler::kube::testing::kApiServerAudience}},
         {"c-alice", "alice", {}, {"taskgov"}}},
        {{"alice", "get", "taskgov.io", "workloads", ""}});
    WriteKubeconfig("{token: t-alice}");
  }
  void WriteKubeconfig(const std::string& user) {
    std::string config = scheduler::kube::testing::KubeconfigFor(h().api().url());
    const std::string none = "user: {}";
    config.replace(config.find(none), none.size(), "user: " + user);
    std::ofstream(kubeconfig_) << config;
  }
};

TEST_F(CliJobsTokenTest, AConsoleTokenOfItsAudienceReachesTheConsoleThroughTheProxy) {
  CliRun top = Ok({"top", "teams", "--console-token", "c-alice"});
  EXPECT_NE(top.out.find("TEAM   INSTANCE-TYPE"), std::string::npos) << top.out;

  CliRun api_token = Cli({"top", "teams"});  // the kubeconfig's: the API server's audience
  EXPECT_EQ(api_token.code, 1);
  EXPECT_NE(api_token.err.find("answered 401 Unauthorized"), std::string::npos) << api_token.err;
  EXPECT_NE(api_token.err.find("--audience taskgov"), std::string::npos) << api_token.err;
  EXPECT_NE(api_token.err.find("give one with --console-token or $TASKGOV_CONSOLE_TOKEN"),
            std::string::npos)
      << api_token.err;

  CliRun forged = Cli({"top", "teams", "--console-token", "c-mallory"});
  EXPECT_EQ(forged.code, 1);
  EXPECT_NE(forged.err.find("X-Taskgov-Authorization"), std::string::npos) << forged.err;
}

}  // namespace
}  // namespace taskgov::e2e
