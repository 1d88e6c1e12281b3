// Pause and resume (issue 35), through the real extender and the fake API server's Job
// controller, which counts failures as Kubernetes does (an evicted or deleted pod of a Job counts
// in status.failed unless its podFailurePolicy ignores DisruptionTarget; more than backoffLimit
// and the Job is Failed for good; pods deleted because the Job is suspended count nothing).
//
// Team a's 8-pod Indexed Job (2 GPUs a pod, backoffLimit 6, no podFailurePolicy) runs on 16
// GPUs, 8 of them lent by team b. Team b asks for its 8: before, taskgov evicted the Job's 8 pods
// and the Job ended Failed (8 failures > 6) and never ran again. Now taskgov suspends the Job
// (spec.suspend, annotations saying who, why and when), b's pods run, and when b's work is done
// taskgov resumes the Job, which completes with status.failed 0. Also: the paused Job resumed by
// the next extender after a SIGKILL (state from the annotations); a PyTorchJob paused through
// spec.runPolicy.suspend; a Job as `taskgov job submit` writes it preempted within its team
// (evicted with the policy's grace period, then suspended); a user-suspended Job never resumed.

#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include <chrono>
#include <csignal>
#include <string>
#include <vector>

#include "e2e/harness.h"
#include "e2e/scenario_test_util.h"

namespace taskgov::e2e {
namespace {

constexpr char kPolicy[] = R"(apiVersion: taskgov.io/v1
kind: TaskGovernancePolicy
taskPrioritization: TaskRanking
idleComputeAllocation: FirstComeFirstServe
priorityClasses:
  - {name: inference, weight: 100}
  - {name: training, weight: 75}
defaultCohort: hyperpod
preemption: {gracePeriodSeconds: 2}
teams:
  - name: a
    sharing: {strategy: LendAndBorrow, borrowLimit: 100}
    compute: [{instanceType: ml.p5.48xlarge, accelerators: 8}]
  - name: b
    sharing: {strategy: LendAndBorrow, borrowLimit: 100}
    compute: [{instanceType: ml.p5.48xlarge, accelerators: 8}]
)";

// An Indexed Job of `pods` pods of `gpus` GPUs each on ml.p5.48xlarge, in team `team`'s namespace.
std::string IndexedJob(const std::string& team, const std::string& name, int pods, int gpus,
                       const std::string& priority_class) {
  const std::string n = std::to_string(pods);
  return R"({"apiVersion":"batch/v1","kind":"Job","metadata":{"name":")" + name +
         R"(","namespace":")" + Ns(team) + R"("},"spec":{"parallelism":)" + n +
         R"(,"completions":)" + n + R"(,"completionMode":"Indexed","backoffLimit":6,"template":{
           "metadata":{"labels":{"app":")" +
         name + R"("}},"spec":{"schedulerName":"taskgov","restartPolicy":"Never",
           "priorityClassName":")" +
         priority_class + R"(","nodeSelector":{"node.kubernetes.io/instance-type":"ml.p5.48xlarge"},
           "containers":[{"name":"main","image":"pytorch","resources":{"requests":{"nvidia.com/gpu":")" +
         std::to_string(gpus) + R"("}}}]}}}})";
}

class PauseResumeTest : public ScenarioTest {
 protected:
  void SetUp() override {
    HarnessOptions options;
    options.config["policy.yaml"] = kPolicy;
    options.play_every_pod = true;
    StartHarness(std::move(options));
    h().api().SetJobController(true);
    h().api().SetServed("pytorchjobs", false);
  }

  rapidjson::Document Job(const std::string& team, const std::string& name) {
    rapidjson::Document doc;
    std::optional<std::string> json = h().api().Get("jobs", Ns(team), name);
    doc.Parse(json ? json->c_str() : "{}");
    return doc;
  }
  static std::string Text(const rapidjson::Value& v, std::initializer_list<const char*> path) {
    const rapidjson::Value* at = &v;
    for (const char* key : path) {
      if (!at->IsObject() || !at->HasMember(key)) return "";
      at = &(*at)[key];
    }
    if (at->IsString()) return at->GetString();
    if (at->IsBool()) return at->GetBool() ? "true" : "false";
    if (at->IsInt64()) return std::to_string(at->GetInt64());
    return "";
  }
  // Pods of job `name` of team `team` by phase: "Running", "Pending", ... ("" counts all).
  int PodsOf(const std::string& team, const std::string& name, const std::string& phase = "") {
    int n = 0;
    for (const std::string& json : h().api().List("pods")) {
      rapidjson::Document pod;
      pod.Parse(json.c_str());
      if (Text(pod, {"metadata", "namespace"}) != Ns(team) ||
          Text(pod, {"metadata", "labels", "job-name"}) != name) {
        continue;
      }
      if (phase.empty() || Text(pod, {"status", "phase"}) == phase) ++n;
    }
    return n;
  }
  bool HasCondition(const rapidjson::Document& job, const std::string& type) {
    if (!job.IsObject() || !job.HasMember("status") || !job["status"].HasMember("conditions"))
      return false;
    for (const auto& c : job["status"]["conditions"].GetArray()) {
      if (Text(c, {"type"}) == type && Text(c, {"status"}) == "True") return true;
    }
    return false;
  }
  // The job's work is done: each of its running pods succeeds.
  void Finish(const std::string& team, const std::string& name) {
    for (const std::string& json : h().api().List("pods")) {
      rapidjson::Document pod;
      pod.Parse(json.c_str());
      if (Text(pod, {"metadata", "labels", "job-name"}) != name ||
          Text(pod, {"status", "phase"}) != "Running") {
        continue;
      }
      ASSERT_TRUE(h().api().SetPodPhase(Ns(team), Text(pod, {"metadata", "name"}), "Succeeded"));
    }
  }
};

TEST_F(PauseResumeTest, AReclaimedIndexedJobIsSuspendedAndResumedNeverFailed) {
  ASSERT_TRUE(h().api().Upsert("jobs", IndexedJob("a", "train", 8, 2, "training")).ok());
  ASSERT_TRUE(h().RunUntil([&] { return PodsOf("a", "train", "Running") == 8; }, 30))
      << "team a's Job runs on 16 GPUs, 8 borrowed";

  ASSERT_TRUE(h().api().Upsert("jobs", IndexedJob("b", "serve", 2, 4, "inference")).ok());
  ASSERT_TRUE(h().RunUntil([&] { return PodsOf("b", "serve", "Running") == 2; }, 30))
      << "team b gets its 8 GPUs back";
  rapidjson::Document train = Job("a", "train");
  EXPECT_EQ(Text(train, {"spec", "suspend"}), "true") << "paused, not evicted";
  EXPECT_EQ(Text(train, {"metadata", "annotations", "taskgov.io/suspended-by"}), "taskgov");
  EXPECT_EQ(Text(train, {"metadata", "annotations", "taskgov.io/suspend-reason"}), "Reclaim");
  EXPECT_EQ(Text(train, {"metadata", "annotations", "taskgov.io/suspensions"}), "1");
  EXPECT_TRUE(HasCondition(train, "Suspended"));
  EXPECT_FALSE(HasCondition(train, "Failed"));
  EXPECT_EQ(Text(train, {"status", "failed"}), "0");
  EXPECT_EQ(PodsOf("a", "train"), 0);
  EXPECT_TRUE(h().api().evictions().empty()) << "nothing was evicted";

  // b's work ends: the Job is resumed (after its 5 s backoff) and runs whole again.
  Finish("b", "serve");
  ASSERT_TRUE(h().RunUntil([&] { return PodsOf("a", "train", "Running") == 8; }, 60))
      << "the paused Job resumes when its quota returns";
  train = Job("a", "train");
  EXPECT_EQ(Text(train, {"spec", "suspend"}), "false");
  EXPECT_EQ(Text(train, {"metadata", "annotations", "taskgov.io/suspended-by"}), "");
  EXPECT_EQ(Text(train, {"metadata", "annotations", "taskgov.io/suspensions"}), "1");

  Finish("a", "train");
  ASSERT_TRUE(h().RunUntil([&] { return HasCondition(Job("a", "train"), "Complete"); }, 10));
  EXPECT_EQ(Text(Job("a", "train"), {"status", "failed"}), "0");
}

// The extender is killed while the Job is paused: its successor rebuilds the paused job from the
// Job's annotations and resumes it when b's work ends.
TEST_F(PauseResumeTest, APausedJobIsResumedByTheNextExtender) {
  ASSERT_TRUE(h().api().Upsert("jobs", IndexedJob("a", "train", 8, 2, "training")).ok());
  ASSERT_TRUE(h().RunUntil([&] { return PodsOf("a", "train", "Running") == 8; }, 30));
  ASSERT_TRUE(h().api().Upsert("jobs", IndexedJob("b", "serve", 2, 4, "inference")).ok());
  ASSERT_TRUE(h().RunUntil([&] { return PodsOf("b", "serve", "Running") == 2; }, 30));
  ASSERT_EQ(Text(Job("a", "train"), {"spec", "suspend"}), "true");

  common::Result<int> killed = h().extender().Stop(SIGKILL);
  ASSERT_TRUE(killed.ok()) << killed.error().message;
  Finish("b", "serve");
  ASSERT_TRUE(h().extender().Start().ok());
  ASSERT_TRUE(h().extender().WaitReady(std::chrono::seconds(20)).ok()) << h().Logs();
  ASSERT_TRUE(h().RunUntil([&] { return PodsOf("a", "train", "Running") == 8; }, 60))
      << "the new extender resumes the Job the old one paused";
  EXPECT_EQ(Text(Job("a", "train"), {"status", "failed"}), "0");
}

// A Kubeflow PyTorchJob is paused through spec.runPolicy.suspend and resumed the same way.
TEST_F(PauseResumeTest, AReclaimedPyTorchJobIsSuspendedThroughItsRunPolicyAndResumed) {
  h().api().SetServed("pytorchjobs", true);
  ASSERT_TRUE(h().extender().Stop(SIGTERM).ok());  // so that its informers watch PyTorchJobs
  ASSERT_TRUE(h().extender().Start().ok());
  ASSERT_TRUE(h().extender().WaitReady(std::chrono::seconds(20)).ok()) << h().Logs();
  const std::string replica = R"({"replicas":%d,"template":{"spec":{"schedulerName":"taskgov",
    "priorityClassName":"training","nodeSelector":{"node.kubernetes.io/instance-type":"ml.p5.48xlarge"},
    "containers":[{"name":"pytorch","image":"pytorch","resources":{"requests":{"nvidia.com/gpu":"4"}}}]}}})";
  auto spec = [&](int n) {
    std::string s = replica;
    s.replace(s.find("%d"), 2, std::to_string(n));
    return s;
  };
  ASSERT_TRUE(
      h().api()
          .Upsert(
              "pytorchjobs",
              R"({"apiVersion":"kubeflow.org/v1","kind":"PyTorchJob","metadata":{"name":"pt","namespace":")" +
                  Ns("a") +
                  R"("},"spec":{"runPolicy":{"suspend":false},"pytorchReplicaSpecs":{"Master":)" +
                  spec(1) + R"(,"Worker":)" + spec(3) + "}}}")
          .ok());
  auto running = [&] {
    int n = 0;
    for (const std::string& json : h().api().List("pods")) {
      rapidjson::Document pod;
      pod.Parse(json.c_str());
      if (Text(pod, {"metadata", "labels", "training.kubeflow.org/job-name"}) == "pt" &&
          Text(pod, {"status", "phase"}) == "Running") {
        ++n;
      }
    }
    return n;
  };
  ASSERT_TRUE(h().RunUntil([&] { return running() == 4; }, 30)) << "16 GPUs, 8 borrowed";
  ASSERT_TRUE(h().api().Upsert("jobs", IndexedJob("b", "serve", 2, 4, "inference")).ok());
  ASSERT_TRUE(h().RunUntil([&] { return PodsOf("b", "serve", "Running") == 2; }, 30));
  rapidjson::Document pt;
  pt.Parse(h().api().Get("pytorchjobs", Ns("a"), "pt").value_or("{}").c_str());
  EXPECT_EQ(Text(pt, {"spec", "runPolicy", "suspend"}), "true");
  EXPECT_EQ(Text(pt, {"metadata", "annotations", "taskgov.io/suspend-reason"}), "Reclaim");
  EXPECT_EQ(running(), 0);
  EXPECT_TRUE(h().api().evictions().empty());

  Finish("b", "serve");
  ASSERT_TRUE(h().RunUntil([&] { return running() == 4; }, 60)) << "resumed";
}

// A Job as `taskgov job submit` writes it (backoffLimit 0, a podFailurePolicy that ignores
// DisruptionTarget) preempted within its team by higher-priority work: its pods are evicted with
// the policy's grace period (evictions do not count for it) and the Job is suspended so that it
// does not replace them; it resumes when the inference job ends, and completes with failed 0.
// Before, its first in-team preemption failed it.
TEST_F(PauseResumeTest, ACliJobPreemptedInTeamIsPausedWithTheGracePeriodAndResumed) {
  ASSERT_TRUE(h().api().Upsert("jobs", IndexedJob("b", "bjob", 2, 4, "training")).ok());
  ASSERT_TRUE(h().RunUntil([&] { return PodsOf("b", "bjob", "Running") == 2; }, 30));
  std::string low = IndexedJob("a", "low", 4, 2, "training");
  const std::string six = "\"backoffLimit\":6";
  low.replace(low.find(six), six.size(),
              R"("backoffLimit":0,"podFailurePolicy":{"rules":[{"action":"Ignore",)"
              R"("onPodConditions":[{"type":"DisruptionTarget"}]}]})");
  ASSERT_TRUE(h().api().Upsert("jobs", low).ok());
  ASSERT_TRUE(h().RunUntil([&] { return PodsOf("a", "low", "Running") == 4; }, 30));

  ASSERT_TRUE(h().api().Upsert("jobs", IndexedJob("a", "infer", 2, 4, "inference")).ok());
  ASSERT_TRUE(h().RunUntil([&] { return PodsOf("a", "infer", "Running") == 2; }, 30))
      << "the inference job preempts the training job of its own team";
  rapidjson::Document job = Job("a", "low");
  EXPECT_EQ(Text(job, {"spec", "suspend"}), "true");
  EXPECT_EQ(Text(job, {"metadata", "annotations", "taskgov.io/suspend-reason"}), "InTeamPriority");
  EXPECT_EQ(Text(job, {"status", "failed"}), "0");
  EXPECT_FALSE(HasCondition(job, "Failed"));
  const std::vector<std::string> evictions = h().api().evictions();
  EXPECT_EQ(evictions.size(), 4u) << "each pod evicted once, with the policy's grace period";
  for (const std::string& e : evictions) {
    EXPECT_NE(e.find("\"gracePeriodSeconds\":2"), std::string::npos) << e;
  }

  Finish("a", "infer");
  ASSERT_TRUE(h().RunUntil([&] { return PodsOf("a", "low", "Running") == 4; }, 60));
  Finish("a", "low");
  ASSERT_TRUE(h().RunUntil([&] { return HasCondition(Job("a", "low"), "Complete"); }, 10));
  EXPECT_EQ(Text(Job("a", "low"), {"status", "failed"}), "0");
}

// A Job a user suspended is theirs: taskgov never resumes it, however much quota is free.
TEST_F(PauseResumeTest, AJobSuspendedByItsUserIsNeverResumed) {
  std::string job = IndexedJob("a", "mine", 2, 2, "training");
  job.replace(job.find("\"parallelism\""), 0, "\"suspend\":true,");
  ASSERT_TRUE(h().api().Upsert("jobs", job).ok());
  for (int i = 0; i < 10; ++i) h().Step();
  EXPECT_EQ(Text(Job("a", "mine"), {"spec", "suspend"}), "true");
  EXPECT_EQ(PodsOf("a", "mine"), 0);
}

}  // namespace
}  // namespace taskgov::e2e
