// The fake API server's Job controller (with Kubernetes' failure accounting, suspend and
// podFailurePolicy), eviction's DisruptionTarget condition, PATCH, discovery and the service
// proxy, over HTTP as clients see them.

#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include <set>
#include <string>
#include <thread>

#include "scheduler/common/testing/http_client.h"
#include "scheduler/kube/testing/fake_apiserver.h"

namespace taskgov::scheduler::kube::testing {
namespace {

using common::testing::HttpClient;
using common::testing::HttpReply;

constexpr char kJobs[] = "/apis/batch/v1/namespaces/team/jobs";

// An Indexed Job of `parallelism` pods (completions as many); `extra_spec`: more spec members
// (",\"backoffLimit\":6").
std::string JobJson(const std::string& name, int parallelism, bool suspend,
                    const std::string& extra_spec = "") {
  return R"({"apiVersion":"batch/v1","kind":"Job","metadata":{"name":")" + name +
         R"(","namespace":"team","labels":{"kueue.x-k8s.io/queue-name":"q"}},"spec":{"parallelism":)" +
         std::to_string(parallelism) + R"(,"completions":)" + std::to_string(parallelism) +
         R"(,"completionMode":"Indexed","suspend":)" + (suspend ? "true" : "false") + extra_spec +
         R"(,"template":{"metadata":{"labels":{"app":"train"}},"spec":{"restartPolicy":"Never",)"
         R"("containers":[{"name":"main","image":"img"}]}}}})";
}

// spec.podFailurePolicy with one rule: `action` when the pod has condition `type`.
std::string PodFailurePolicy(const std::string& action, const std::string& type) {
  return R"(,"podFailurePolicy":{"rules":[{"action":")" + action +
         R"(","onPodConditions":[{"type":")" + type + R"("}]}]})";
}

rapidjson::Document Parse(const std::string& json) {
  rapidjson::Document doc;
  doc.Parse(json.c_str());
  return doc;
}

// status.conditions[type] of `object`, or nullptr.
const rapidjson::Value* ConditionOf(const rapidjson::Value& object, const std::string& type) {
  if (!object.HasMember("status") || !object["status"].HasMember("conditions")) return nullptr;
  for (const auto& c : object["status"]["conditions"].GetArray()) {
    if (c["type"].GetString() == type) return &c;
  }
  return nullptr;
}

// status.<field> of `object` as text ("" when absent) or as a number (-1 when absent).
std::string StatusText(const rapidjson::Value& object, const char* field) {
  if (!object.IsObject() || !object.HasMember("status")) return "";
  const rapidjson::Value& status = object["status"];
  return status.HasMember(field) && status[field].IsString() ? status[field].GetString() : "";
}
int64_t StatusInt(const rapidjson::Value& object, const char* field) {
  if (!object.IsObject() || !object.HasMember("status")) return -1;
  const rapidjson::Value& status = object["status"];
  return status.HasMember(field) && status[field].IsInt64() ? status[field].GetInt64() : -1;
}

// `json` with status.startTime replaced by `time` (RFC 3339, seconds).
std::string WithStartTime(std::string json, const std::string& time) {
  const std::string key = "\"startTime\":\"";
  const size_t at = json.find(key);
  if (at != std::string::npos) json.replace(at + key.size(), 20, time);
  return json;
}

// "status reason: message" of a condition, "" when absent.
std::string Describe(const rapidjson::Value& object, const std::string& type) {
  const rapidjson::Value* c = ConditionOf(object, type);
  if (c == nullptr) return "";
  return std::string(c->HasMember("status") ? (*c)["status"].GetString() : "") + " " +
         (c->HasMember("reason") ? (*c)["reason"].GetString() : "") + ": " +
         (c->HasMember("message") ? (*c)["message"].GetString() : "");
}

class FakeJobsTest : public ::testing::Test {
 protected:
  void Start(bool controller, EvictionMode eviction = EvictionMode::kImmediate) {
    FakeApiServerOptions options;
    options.simulate_job_controller = controller;
    options.eviction_mode = eviction;
    api_ = std::make_unique<FakeApiServer>(options);
    ASSERT_TRUE(api_->Start().ok());
    http_ = std::make_unique<HttpClient>("127.0.0.1", api_->port());
  }
  HttpReply Call(const std::string& method, const std::string& target,
                 const std::string& body = "") {
    common::Result<HttpReply> reply = http_->Request(method, target, body);
    EXPECT_TRUE(reply.ok()) << (reply.ok() ? "" : reply.error().message);
    return reply.ok() ? *reply : HttpReply{};
  }
  HttpReply Patch(const std::string& target, const std::string& patch,
                  const std::string& content_type = "application/merge-patch+json") {
    common::Result<HttpReply> reply = http_->Request("PATCH", target, patch, content_type);
    EXPECT_TRUE(reply.ok()) << (reply.ok() ? "" : reply.error().message);
    return reply.ok() ? *reply : HttpReply{};
  }
  // POST pods/{pod}/eviction in namespace "team": the status.
  int Evict(const std::string& pod) {
    return Call("POST", "/api/v1/namespaces/team/pods/" + pod + "/eviction",
                R"({"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":")" + pod +
                    R"(","namespace":"team"}})")
        .status;
  }
  rapidjson::Document JobNamed(const std::string& name) {
    return Parse(api_->Get("jobs", "team", name).value_or("{}"));
  }
  // The watch events of `collection` after `resource_version`, each "TYPE <event>": the stream
  // is ended once it is open, so this returns what the history replays.
  std::vector<std::string> EventsSince(const std::string& collection, const std::string& resource,
                                       int64_t resource_version) {
    HttpClient watcher("127.0.0.1", api_->port());
    common::Result<HttpReply> reply = common::Error{"not run"};
    std::thread watch([&] {
      reply = watcher.Get(collection +
                          "?watch=true&resourceVersion=" + std::to_string(resource_version));
    });
    EXPECT_TRUE(
        api_->WaitFor([&] { return api_->open_watches(resource) == 1; }, std::chrono::seconds(10)));
    api_->EndWatches(resource);
    watch.join();
    std::vector<std::string> events;
    if (!reply.ok()) return events;
    for (size_t start = 0; start < reply->body.size();) {
      size_t end = reply->body.find('\n', start);
      if (end == std::string::npos) end = reply->body.size();
      rapidjson::Document event = Parse(reply->body.substr(start, end - start));
      if (event.IsObject()) {
        events.push_back(std::string(event["type"].GetString()) + " " +
                         reply->body.substr(start, end - start));
      }
      start = end + 1;
    }
    return events;
  }
  // The pods owned by the Job, by name.
  std::vector<rapidjson::Document> PodsOf(const std::string& job) {
    std::vector<rapidjson::Document> out;
    for (const std::string& json : api_->List("pods")) {
      rapidjson::Document pod = Parse(json);
      const auto& labels = pod["metadata"]["labels"];
      if (labels.HasMember("job-name") && labels["job-name"].GetString() == job) {
        out.push_back(std::move(pod));
      }
    }
    return out;
  }
  std::unique_ptr<FakeApiServer> api_;
  std::unique_ptr<HttpClient> http_;
};

TEST_F(FakeJobsTest, WithoutTheControllerAJobIsOnlyStored) {
  Start(false);
  EXPECT_EQ(Call("POST", kJobs, JobJson("train", 2, false)).status, 201);
  EXPECT_EQ(api_->Count("pods"), 0u);
}

TEST_F(FakeJobsTest, AnIndexedJobGetsOnePodPerIndexWithItsTemplateAndOwner) {
  Start(true);
  HttpReply created = Call("POST", kJobs, JobJson("train", 2, false));
  ASSERT_EQ(created.status, 201) << created.body;
  const std::string uid = Parse(created.body)["metadata"]["uid"].GetString();
  std::vector<rapidjson::Document> pods = PodsOf("train");
  ASSERT_EQ(pods.size(), 2u);
  std::set<std::string> indexes;
  for (const auto& pod : pods) {
    const auto& meta = pod["metadata"];
    EXPECT_STREQ(meta["labels"]["app"].GetString(), "train");
    EXPECT_STREQ(meta["ownerReferences"][0]["kind"].GetString(), "Job");
    EXPECT_EQ(meta["ownerReferences"][0]["uid"].GetString(), uid);
    EXPECT_TRUE(meta["ownerReferences"][0]["controller"].GetBool());
    indexes.insert(meta["labels"]["batch.kubernetes.io/job-completion-index"].GetString());
    EXPECT_STREQ(pod["spec"]["containers"][0]["image"].GetString(), "img");
    EXPECT_STREQ(pod["status"]["phase"].GetString(), "Pending");
  }
  EXPECT_EQ(indexes, (std::set<std::string>{"0", "1"}));
  rapidjson::Document job = Parse(*api_->Get("jobs", "team", "train"));
  EXPECT_EQ(job["status"]["active"].GetInt64(), 2);
}

TEST_F(FakeJobsTest, SuspendDeletesThePodsResumeCreatesThemDeleteCascades) {
  Start(true);
  ASSERT_EQ(Call("POST", kJobs, JobJson("train", 2, true)).status, 201);
  EXPECT_EQ(PodsOf("train").size(), 0u);
  rapidjson::Document job = Parse(*api_->Get("jobs", "team", "train"));
  EXPECT_STREQ(job["status"]["conditions"][0]["type"].GetString(), "Suspended");

  std::string resumed = *api_->Get("jobs", "team", "train");
  resumed.replace(resumed.find("\"suspend\":true"), 14, "\"suspend\":false");
  ASSERT_EQ(Call("PUT", std::string(kJobs) + "/train", resumed).status, 200);
  EXPECT_EQ(PodsOf("train").size(), 2u);

  // A deleted pod of a running Job is replaced.
  const std::string victim = PodsOf("train")[0]["metadata"]["name"].GetString();
  ASSERT_TRUE(api_->Delete("pods", "team", victim));
  EXPECT_EQ(PodsOf("train").size(), 2u);
  EXPECT_FALSE(api_->Get("pods", "team", victim).has_value());

  std::string suspended = *api_->Get("jobs", "team", "train");
  suspended.replace(suspended.find("\"suspend\":false"), 15, "\"suspend\":true");
  ASSERT_EQ(Call("PUT", std::string(kJobs) + "/train", suspended).status, 200);
  EXPECT_EQ(PodsOf("train").size(), 0u) << *api_->Get("jobs", "team", "train");

  std::string again = *api_->Get("jobs", "team", "train");
  again.replace(again.find("\"suspend\":true"), 14, "\"suspend\":false");
  ASSERT_EQ(Call("PUT", std::string(kJobs) + "/train", again).status, 200);
  EXPECT_EQ(PodsOf("train").size(), 2u);
  EXPECT_EQ(Call("DELETE", std::string(kJobs) + "/train").status, 200);
  EXPECT_EQ(PodsOf("train").size(), 0u);
}

// As the Kubeflow training operator: one pod per replica, Master first, named by type and
// index; runPolicy.suspend deletes them, a deleted replica comes back, deleting the job cascades.
TEST_F(FakeJobsTest, APyTorchJobGetsAPodPerReplica) {
  Start(true);
  constexpr char kPyTorchJobs[] = "/apis/kubeflow.org/v1/namespaces/team/pytorchjobs";
  auto replica = [](int n) {
    return R"({"replicas":)" + std::to_string(n) +
           R"(,"template":{"metadata":{"labels":{"app":"pt"}},"spec":{"containers":)"
           R"([{"name":"pytorch","image":"img"}]}}})";
  };
  const std::string job = R"({"apiVersion":"kubeflow.org/v1","kind":"PyTorchJob","metadata":)"
                          R"({"name":"pt","namespace":"team"},"spec":{"runPolicy":{"suspend":)"
                          R"(false},"pytorchReplicaSpecs":{"Master":)" +
                          replica(1) + R"(,"Worker":)" + replica(2) + "}}}";
  HttpReply created = Call("POST", kPyTorchJobs, job);
  ASSERT_EQ(created.status, 201) << created.body;
  const std::string uid = Parse(created.body)["metadata"]["uid"].GetString();
  auto names = [&] {
    std::set<std::string> out;
    for (const std::string& json : api_->List("pods"))
      out.insert(Parse(json)["metadata"]["name"].GetString());
    return out;
  };
  EXPECT_EQ(names(), (std::set<std::string>{"pt-master-0", "pt-worker-0", "pt-worker-1"}));
  rapidjson::Document worker = Parse(*api_->Get("pods", "team", "pt-worker-1"));
  const auto& labels = worker["metadata"]["labels"];
  EXPECT_STREQ(labels["training.kubeflow.org/job-name"].GetString(), "pt");
  EXPECT_STREQ(labels["training.kubeflow.org/replica-type"].GetString(), "worker");
  EXPECT_STREQ(labels["training.kubeflow.org/replica-index"].GetString(), "1");
  EXPECT_STREQ(labels["app"].GetString(), "pt");
  const auto& owner = worker["metadata"]["ownerReferences"][0];
  EXPECT_STREQ(owner["kind"].GetString(), "PyTorchJob");
  EXPECT_STREQ(owner["uid"].GetString(), uid.c_str());
  EXPECT_TRUE(owner["controller"].GetBool());

  ASSERT_TRUE(api_->Delete("pods", "team", "pt-worker-0"));
  EXPECT_EQ(names().size(), 3u);  // created again

  std::string suspended = *api_->Get("pytorchjobs", "team", "pt");
  suspended.replace(suspended.find("\"suspend\":false"), 15, "\"suspend\":true");
  ASSERT_EQ(Call("PUT", std::string(kPyTorchJobs) + "/pt", suspended).status, 200);
  EXPECT_TRUE(names().empty());
  rapidjson::Document status = Parse(*api_->Get("pytorchjobs", "team", "pt"));
  EXPECT_EQ(Describe(status, "Created"), "True PyTorchJobCreated: PyTorchJob pt is created.");
  EXPECT_EQ(Describe(status, "Suspended"), "True PyTorchJobSuspended: PyTorchJob pt is suspended.");
  std::string resumed = *api_->Get("pytorchjobs", "team", "pt");
  resumed.replace(resumed.find("\"suspend\":true"), 14, "\"suspend\":false");
  resumed = WithStartTime(resumed, "2020-01-01T00:00:00Z");
  ASSERT_EQ(Call("PUT", std::string(kPyTorchJobs) + "/pt", resumed).status, 200);
  EXPECT_EQ(names().size(), 3u);
  status = Parse(*api_->Get("pytorchjobs", "team", "pt"));
  EXPECT_EQ(Describe(status, "Suspended"), "False PyTorchJobResumed: PyTorchJob pt is resumed.");
  EXPECT_NE(StatusText(status, "startTime"), "2020-01-01T00:00:00Z");
  EXPECT_EQ(Call("DELETE", std::string(kPyTorchJobs) + "/pt").status, 200);
  EXPECT_TRUE(names().empty());
}

TEST_F(FakeJobsTest, SucceededPodsCompleteTheJob) {
  Start(true);
  ASSERT_EQ(Call("POST", kJobs, JobJson("train", 1, false)).status, 201);
  const std::string pod = PodsOf("train")[0]["metadata"]["name"].GetString();
  ASSERT_TRUE(api_->SetPodPhase("team", pod, "Succeeded"));
  rapidjson::Document job = Parse(*api_->Get("jobs", "team", "train"));
  EXPECT_EQ(StatusInt(job, "succeeded"), 1);
  EXPECT_EQ(StatusInt(job, "active"), 0);
  EXPECT_EQ(StatusText(job, "completedIndexes"), "0");
  // v1.31+: SuccessCriteriaMet first, then Complete.
  ASSERT_EQ(job["status"]["conditions"].Size(), 2u);
  EXPECT_STREQ(job["status"]["conditions"][0]["type"].GetString(), "SuccessCriteriaMet");
  EXPECT_EQ(Describe(job, "Complete"),
            "True CompletionsReached: Reached expected number of succeeded pods");
  EXPECT_TRUE(job["status"].HasMember("completionTime"));
  EXPECT_EQ(PodsOf("train").size(), 1u);  // the finished pod stays; no new one
}

// policy/v1 Eviction writes DisruptionTarget in one update before the delete
// (pkg/registry/core/pod/storage/eviction.go): watchers see it, and the DELETED object carries it.
TEST_F(FakeJobsTest, AnEvictionAddsDisruptionTargetBeforeTheDelete) {
  Start(false);
  ASSERT_TRUE(api_->Upsert("pods", R"({"metadata":{"name":"w-0","namespace":"team"},)"
                                   R"("status":{"phase":"Running"}})")
                  .ok());
  const int64_t before = api_->resource_version();
  ASSERT_EQ(Evict("w-0"), 201);
  EXPECT_FALSE(api_->Get("pods", "team", "w-0").has_value());
  std::vector<std::string> events = EventsSince("/api/v1/namespaces/team/pods", "pods", before);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].substr(0, 9), "MODIFIED ");
  EXPECT_EQ(events[1].substr(0, 8), "DELETED ");
  for (const std::string& event : events) {
    const rapidjson::Document parsed = Parse(event.substr(event.find(' ') + 1));
    const rapidjson::Value& pod = parsed["object"];
    EXPECT_EQ(Describe(pod, "DisruptionTarget"),
              "True EvictionByEvictionAPI: Eviction API: evicting")
        << event;
    ASSERT_NE(ConditionOf(pod, "DisruptionTarget"), nullptr);
    EXPECT_TRUE(ConditionOf(pod, "DisruptionTarget")->HasMember("lastTransitionTime"));
  }

  // A graceful eviction: the condition first, then deletionTimestamp; a second eviction changes
  // nothing.
  api_->SetEvictionMode(EvictionMode::kManual);
  ASSERT_TRUE(api_->Upsert("pods", R"({"metadata":{"name":"w-1","namespace":"team"}})").ok());
  ASSERT_EQ(Evict("w-1"), 201);
  rapidjson::Document pod = Parse(*api_->Get("pods", "team", "w-1"));
  EXPECT_TRUE(pod["metadata"].HasMember("deletionTimestamp"));
  EXPECT_EQ(Describe(pod, "DisruptionTarget"),
            "True EvictionByEvictionAPI: Eviction API: evicting");
  const int64_t marked = api_->resource_version();
  ASSERT_EQ(Evict("w-1"), 201);
  EXPECT_EQ(api_->resource_version(), marked);
}

// Evictions of an Indexed Job's pods (parallelism 8, completions 8, backoffLimit 6) until the
// Job ends, by spec.podFailurePolicy: a deleted pod that has not succeeded is a failure
// (isPodFailed), unless a rule ignores it; failed > backoffLimit fails the Job, and then its
// unfinished pods count as failed too ("When the job is considered finished, every
// non-terminated pod is considered failed", trackJobStatusAndRemoveFinalizers) and are deleted.
// The fake creates a replacement at once (no pod failure back-off), so 6 replacements exist when
// the 7th eviction fails the Job: 7 evicted + 7 unfinished = 14.
struct EvictionCase {
  std::string name;
  std::string policy;         // spec members added to the Job
  int accepted;               // evictions of the 8 original pods answered 201 (then 404)
  int64_t failed;             // status.failed at the end
  std::string failed_reason;  // of the Failed condition; "": none
  size_t pods;                // pods left
};

void PrintTo(const EvictionCase& c, std::ostream* os) { *os << c.name; }

class FakeJobsEvictionTest : public FakeJobsTest,
                             public ::testing::WithParamInterface<EvictionCase> {};

TEST_P(FakeJobsEvictionTest, EvictingEveryPodOfAJob) {
  const EvictionCase& c = GetParam();
  Start(true);
  ASSERT_EQ(
      Call("POST", kJobs, JobJson("train", 8, false, ",\"backoffLimit\":6" + c.policy)).status,
      201);
  std::vector<std::string> originals;
  for (const auto& pod : PodsOf("train")) originals.push_back(pod["metadata"]["name"].GetString());
  ASSERT_EQ(originals.size(), 8u);
  int accepted = 0;
  for (const std::string& pod : originals) {
    const int status = Evict(pod);
    EXPECT_TRUE(status == 201 || status == 404) << status;
    accepted += status == 201 ? 1 : 0;
  }
  EXPECT_EQ(accepted, c.accepted);
  rapidjson::Document job = JobNamed("train");
  EXPECT_EQ(StatusInt(job, "failed"), c.failed) << Describe(job, "Failed");
  const rapidjson::Value* failed = ConditionOf(job, "Failed");
  EXPECT_EQ(failed == nullptr ? "" : (*failed)["reason"].GetString(), c.failed_reason);
  if (!c.failed_reason.empty()) {
    EXPECT_EQ(Describe(job, "FailureTarget"), Describe(job, "Failed"));
    EXPECT_EQ(StatusInt(job, "active"), 0);
  }
  if (c.failed_reason == "BackoffLimitExceeded") {
    EXPECT_EQ(Describe(job, "Failed"),
              "True BackoffLimitExceeded: Job has reached the specified backoff limit");
  }
  EXPECT_EQ(PodsOf("train").size(), c.pods);
  // A failed Job creates no pod again, whatever is written to it.
  ASSERT_EQ(
      Patch(std::string(kJobs) + "/train", R"({"metadata":{"labels":{"touched":"yes"}}})").status,
      200);
  EXPECT_EQ(PodsOf("train").size(), c.pods);
  EXPECT_EQ(StatusInt(JobNamed("train"), "failed"), c.failed);
}

INSTANTIATE_TEST_SUITE_P(
    Policies, FakeJobsEvictionTest,
    ::testing::Values(
        EvictionCase{"NoPolicy", "", 7, 14, "BackoffLimitExceeded", 0},
        EvictionCase{"IgnoreDisruptionTarget", PodFailurePolicy("Ignore", "DisruptionTarget"), 8, 0,
                     "", 8},
        EvictionCase{"CountDisruptionTarget", PodFailurePolicy("Count", "DisruptionTarget"), 7, 14,
                     "BackoffLimitExceeded", 0},
        EvictionCase{"IgnoreAnotherCondition", PodFailurePolicy("Ignore", "ConfigIssue"), 7, 14,
                     "BackoffLimitExceeded", 0},
        // FailJob: the first eviction fails the Job; the evicted pod and the 7 others count.
        EvictionCase{"FailJobOnDisruptionTarget", PodFailurePolicy("FailJob", "DisruptionTarget"),
                     1, 8, "PodFailurePolicy", 0}),
    [](const ::testing::TestParamInfo<EvictionCase>& info) { return info.param.name; });

TEST_F(FakeJobsTest, AFailJobRuleNamesThePodAndTheRule) {
  Start(true);
  ASSERT_EQ(Call("POST", kJobs,
                 JobJson("train", 2, false, PodFailurePolicy("FailJob", "DisruptionTarget")))
                .status,
            201);
  const std::string victim = PodsOf("train")[0]["metadata"]["name"].GetString();
  ASSERT_EQ(Evict(victim), 201);
  rapidjson::Document job = JobNamed("train");
  EXPECT_EQ(Describe(job, "Failed"), "True PodFailurePolicy: Pod team/" + victim +
                                         " has condition DisruptionTarget matching FailJob rule "
                                         "at index 0");
  EXPECT_EQ(StatusInt(job, "failed"), 2);
  EXPECT_TRUE(PodsOf("train").empty());
}

// A plain DELETE of a running Job's pod (no eviction, no policy) is one failure; the index gets
// a new pod.
TEST_F(FakeJobsTest, ADeletedPodCountsOneFailure) {
  Start(true);
  ASSERT_EQ(Call("POST", kJobs, JobJson("train", 2, false)).status, 201);
  const std::string victim = PodsOf("train")[0]["metadata"]["name"].GetString();
  ASSERT_EQ(Call("DELETE", "/api/v1/namespaces/team/pods/" + victim).status, 200);
  rapidjson::Document job = JobNamed("train");
  EXPECT_EQ(StatusInt(job, "failed"), 1);
  EXPECT_EQ(StatusInt(job, "active"), 2);
  EXPECT_EQ(PodsOf("train").size(), 2u);
  EXPECT_EQ(ConditionOf(job, "Failed"), nullptr);
  // A pod that reaches phase Failed counts once, however often it is written, and once more
  // when it is deleted: never.
  const std::string other = PodsOf("train")[1]["metadata"]["name"].GetString();
  ASSERT_TRUE(api_->SetPodPhase("team", other, "Failed"));
  ASSERT_TRUE(api_->SetPodPhase("team", other, "Failed"));
  ASSERT_TRUE(api_->Delete("pods", "team", other));
  EXPECT_EQ(StatusInt(JobNamed("train"), "failed"), 2);
}

// A graceful eviction: the pod counts when it starts terminating (isPodFailed: deletionTimestamp,
// no podFailurePolicy), once; it keeps its index until it is gone. With a podFailurePolicy only
// its end counts, and the policy reads its last state.
TEST_F(FakeJobsTest, AGracefulEvictionCountsOnce) {
  Start(true, EvictionMode::kManual);
  ASSERT_EQ(Call("POST", kJobs, JobJson("plain", 1, false)).status, 201);
  ASSERT_EQ(Call("POST", kJobs,
                 JobJson("tolerant", 1, false, PodFailurePolicy("Ignore", "DisruptionTarget")))
                .status,
            201);
  ASSERT_EQ(Evict(PodsOf("plain")[0]["metadata"]["name"].GetString()), 201);
  ASSERT_EQ(Evict(PodsOf("tolerant")[0]["metadata"]["name"].GetString()), 201);
  EXPECT_EQ(StatusInt(JobNamed("plain"), "failed"), 1);
  EXPECT_EQ(StatusInt(JobNamed("tolerant"), "failed"), 0);
  EXPECT_EQ(PodsOf("plain").size(), 1u);  // still terminating: no replacement yet
  api_->CompleteEvictions();
  EXPECT_EQ(StatusInt(JobNamed("plain"), "failed"), 1);
  EXPECT_EQ(StatusInt(JobNamed("tolerant"), "failed"), 0);
  for (const char* job : {"plain", "tolerant"}) {
    ASSERT_EQ(PodsOf(job).size(), 1u) << job;
    EXPECT_FALSE(PodsOf(job)[0]["metadata"].HasMember("deletionTimestamp")) << job;
  }
}

// A pod evicted with a grace period, then its Job suspended (what the preemption controller does
// for a Job whose podFailurePolicy ignores DisruptionTarget): the controller deletes only the
// active pods (controller.FilterActivePods excludes terminating ones), so the evicted pod keeps
// its grace period and goes when it ends; nothing counts.
TEST_F(FakeJobsTest, SuspendingLeavesATerminatingPodItsGracePeriod) {
  Start(true, EvictionMode::kManual);
  ASSERT_EQ(Call("POST", kJobs,
                 JobJson("train", 2, false, PodFailurePolicy("Ignore", "DisruptionTarget")))
                .status,
            201);
  const std::string evicted = PodsOf("train")[0]["metadata"]["name"].GetString();
  ASSERT_EQ(Evict(evicted), 201);
  ASSERT_EQ(Patch(std::string(kJobs) + "/train", R"({"spec":{"suspend":true}})").status, 200);
  const auto left = PodsOf("train");
  ASSERT_EQ(left.size(), 1u) << "the active pod goes, the terminating one stays";
  EXPECT_EQ(std::string(left[0]["metadata"]["name"].GetString()), evicted);
  EXPECT_TRUE(left[0]["metadata"].HasMember("deletionTimestamp"));
  api_->CompleteEvictions();
  EXPECT_TRUE(PodsOf("train").empty());
  EXPECT_EQ(StatusInt(JobNamed("train"), "failed"), 0);
}

// spec.suspend: the controller deletes the active pods without counting them; resuming sets
// Suspended=False (JobResumed), resets startTime and creates the pods again.
TEST_F(FakeJobsTest, SuspendDeletesPodsUncountedResumeRecreatesThemAndResetsStartTime) {
  Start(true);
  ASSERT_EQ(Call("POST", kJobs, JobJson("train", 2, false)).status, 201);
  EXPECT_EQ(ConditionOf(JobNamed("train"), "Suspended"), nullptr);  // never suspended
  const std::string job_path = std::string(kJobs) + "/train";
  ASSERT_TRUE(api_->Upsert("jobs", WithStartTime(*api_->Get("jobs", "team", "train"),
                                                 "2020-01-01T00:00:00Z"))
                  .ok());

  ASSERT_EQ(Patch(job_path, R"({"spec":{"suspend":true}})").status, 200);
  rapidjson::Document job = JobNamed("train");
  EXPECT_TRUE(PodsOf("train").empty());
  EXPECT_EQ(StatusInt(job, "failed"), 0);
  EXPECT_EQ(StatusInt(job, "active"), 0);
  EXPECT_EQ(Describe(job, "Suspended"), "True JobSuspended: Job suspended");
  EXPECT_EQ(StatusText(job, "startTime"), "2020-01-01T00:00:00Z");

  ASSERT_EQ(Patch(job_path, R"({"spec":{"suspend":false}})").status, 200);
  job = JobNamed("train");
  EXPECT_EQ(PodsOf("train").size(), 2u);
  EXPECT_EQ(StatusInt(job, "failed"), 0);
  EXPECT_EQ(StatusInt(job, "active"), 2);
  EXPECT_EQ(Describe(job, "Suspended"), "False JobResumed: Job resumed");
  EXPECT_NE(StatusText(job, "startTime"), "2020-01-01T00:00:00Z");

  // Suspended again: none of its pods count.
  ASSERT_EQ(Patch(job_path, R"({"spec":{"suspend":true}})").status, 200);
  EXPECT_EQ(StatusInt(JobNamed("train"), "failed"), 0);
  EXPECT_EQ(Describe(JobNamed("train"), "Suspended"), "True JobSuspended: Job suspended");
}

// An index that succeeded is not run again after a suspension, and its count stays when its pod
// is deleted.
TEST_F(FakeJobsTest, SucceededIndexesSurviveSuspensionAndPodDeletion) {
  Start(true);
  ASSERT_EQ(Call("POST", kJobs, JobJson("train", 3, false)).status, 201);
  std::string done;
  for (const auto& pod : PodsOf("train")) {
    if (std::string(pod["metadata"]["annotations"]["batch.kubernetes.io/job-completion-index"]
                        .GetString()) == "1") {
      done = pod["metadata"]["name"].GetString();
    }
  }
  ASSERT_TRUE(api_->SetPodPhase("team", done, "Succeeded"));
  ASSERT_TRUE(api_->Delete("pods", "team", done));
  const std::string job_path = std::string(kJobs) + "/train";
  ASSERT_EQ(Patch(job_path, R"({"spec":{"suspend":true}})").status, 200);
  ASSERT_EQ(Patch(job_path, R"({"spec":{"suspend":false}})").status, 200);
  rapidjson::Document job = JobNamed("train");
  EXPECT_EQ(StatusInt(job, "succeeded"), 1);
  EXPECT_EQ(StatusInt(job, "failed"), 0);
  EXPECT_EQ(StatusText(job, "completedIndexes"), "1");
  std::set<std::string> indexes;
  for (const auto& pod : PodsOf("train")) {
    indexes.insert(
        pod["metadata"]["annotations"]["batch.kubernetes.io/job-completion-index"].GetString());
  }
  EXPECT_EQ(indexes, (std::set<std::string>{"0", "2"}));
}

// PATCH as the API server answers it: RFC 7386 merge patch, preconditions, content types.
TEST_F(FakeJobsTest, PatchMergesAndChecksLikeTheApiServer) {
  Start(true);
  constexpr char kMap[] = "/api/v1/namespaces/team/configmaps/cfg";
  ASSERT_EQ(Call("POST", "/api/v1/namespaces/team/configmaps",
                 R"({"metadata":{"name":"cfg","labels":{"x":"1","keep":"k"}},)"
                 R"("data":{"a":"1","b":"2"},"nested":{"deep":{"one":1,"two":2}}})")
                .status,
            201);
  const rapidjson::Document created = Parse(*api_->Get("configmaps", "team", "cfg"));
  const std::string uid = created["metadata"]["uid"].GetString();
  const std::string version = created["metadata"]["resourceVersion"].GetString();
  const int64_t before = api_->resource_version();

  HttpReply patched = Patch(kMap, R"({"metadata":{"labels":{"x":null,"y":"2"}},)"
                                  R"("data":{"b":null,"c":"3"},"nested":{"deep":{"two":null}},)"
                                  R"("added":{"kept":true,"dropped":null}})");
  ASSERT_EQ(patched.status, 200) << patched.body;
  EXPECT_EQ(api_->requests().back().method, "PATCH");  // recorded like any request
  EXPECT_EQ(api_->requests().back().status, 200);
  rapidjson::Document cfg = Parse(*api_->Get("configmaps", "team", "cfg"));
  EXPECT_EQ(patched.body, *api_->Get("configmaps", "team", "cfg"));
  EXPECT_FALSE(cfg["metadata"]["labels"].HasMember("x"));
  EXPECT_STREQ(cfg["metadata"]["labels"]["y"].GetString(), "2");
  EXPECT_STREQ(cfg["metadata"]["labels"]["keep"].GetString(), "k");
  EXPECT_STREQ(cfg["data"]["a"].GetString(), "1");
  EXPECT_FALSE(cfg["data"].HasMember("b"));
  EXPECT_STREQ(cfg["data"]["c"].GetString(), "3");
  EXPECT_EQ(cfg["nested"]["deep"]["one"].GetInt(), 1);
  EXPECT_FALSE(cfg["nested"]["deep"].HasMember("two"));
  EXPECT_TRUE(cfg["added"]["kept"].GetBool());
  EXPECT_FALSE(cfg["added"].HasMember("dropped"));
  EXPECT_EQ(cfg["metadata"]["uid"].GetString(), uid);
  EXPECT_NE(cfg["metadata"]["resourceVersion"].GetString(), version);
  const std::vector<std::string> events =
      EventsSince("/api/v1/namespaces/team/configmaps", "configmaps", before);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].substr(0, 9), "MODIFIED ");
  EXPECT_NE(events[0].find("\"c\":\"3\""), std::string::npos);

  // A stale resourceVersion is a failed precondition; the current one is accepted.
  EXPECT_EQ(
      Patch(kMap, R"({"metadata":{"resourceVersion":")" + version + R"("},"data":{}})").status,
      409);
  const std::string current = cfg["metadata"]["resourceVersion"].GetString();
  EXPECT_EQ(
      Patch(kMap, R"({"metadata":{"resourceVersion":")" + current + R"("},"data":{}})").status,
      200);
  // Identity cannot change; absent objects are 404; dryRun stores nothing.
  EXPECT_EQ(Patch(kMap, R"({"metadata":{"name":"other"}})").status, 400);
  EXPECT_EQ(Patch(kMap, R"({"metadata":{"uid":"another"}})").status, 422);
  EXPECT_EQ(Patch("/api/v1/namespaces/team/configmaps/none", R"({"data":{}})").status, 404);
  EXPECT_EQ(Patch(kMap, "[1]").status, 400);
  const std::string stored = *api_->Get("configmaps", "team", "cfg");
  EXPECT_EQ(Patch(std::string(kMap) + "?dryRun=All", R"({"data":{"d":"4"}})").status, 200);
  EXPECT_EQ(*api_->Get("configmaps", "team", "cfg"), stored);

  // Content types: a strategic merge patch of a built-in type is merged; of a custom resource
  // (no strategic merge patch for CRDs), 415; JSON patch is not simulated: 415.
  EXPECT_EQ(Patch(kMap, R"({"data":{"e":"5"}})", "application/strategic-merge-patch+json").status,
            200);
  EXPECT_STREQ(Parse(*api_->Get("configmaps", "team", "cfg"))["data"]["e"].GetString(), "5");
  ASSERT_TRUE(api_->Upsert("localqueues", R"({"metadata":{"name":"q","namespace":"team"}})").ok());
  HttpReply crd =
      Patch("/apis/kueue.x-k8s.io/v1beta1/namespaces/team/localqueues/q",
            R"({"spec":{"clusterQueue":"cq"}})", "application/strategic-merge-patch+json");
  EXPECT_EQ(crd.status, 415);
  EXPECT_STREQ(Parse(crd.body)["reason"].GetString(), "UnsupportedMediaType");
  EXPECT_EQ(Patch("/apis/kueue.x-k8s.io/v1beta1/namespaces/team/localqueues/q",
                  R"({"spec":{"clusterQueue":"cq"}})")
                .status,
            200);
  EXPECT_EQ(
      Patch(kMap, R"([{"op":"remove","path":"/data/a"}])", "application/json-patch+json").status,
      415);

  // pods/status, and a patched Job is synced like a PUT one.
  ASSERT_EQ(Call("POST", kJobs, JobJson("train", 1, false)).status, 201);
  const std::string pod = PodsOf("train")[0]["metadata"]["name"].GetString();
  ASSERT_EQ(Patch("/api/v1/namespaces/team/pods/" + pod + "/status",
                  R"({"status":{"phase":"Succeeded"}})", "application/strategic-merge-patch+json")
                .status,
            200);
  EXPECT_EQ(Describe(JobNamed("train"), "Complete"),
            "True CompletionsReached: Reached expected number of succeeded pods");
}

TEST_F(FakeJobsTest, DiscoveryListsServedResourcesOfAGroupVersion) {
  Start(false);
  HttpReply kubeflow = Call("GET", "/apis/kubeflow.org/v1");
  ASSERT_EQ(kubeflow.status, 200);
  EXPECT_NE(kubeflow.body.find("\"name\":\"pytorchjobs\""), std::string::npos);
  EXPECT_NE(kubeflow.body.find("\"kind\":\"PyTorchJob\""), std::string::npos);
  for (const char* plural : {"pytorchjobs", "tfjobs", "xgboostjobs", "paddlejobs", "jaxjobs"}) {
    api_->SetServed(plural, false);
  }
  EXPECT_EQ(Call("GET", "/apis/kubeflow.org/v1").status, 404);
  EXPECT_NE(Call("GET", "/apis/batch/v1").body.find("\"jobs\""), std::string::npos);
  EXPECT_EQ(Call("GET", "/apis/nothing.example/v1").status, 404);
}

TEST_F(FakeJobsTest, TheServiceProxyForwardsGetsAfterAuthenticationWithoutTheToken) {
  Start(false);
  api_->SetAcceptedTokens({"secret"});
  std::vector<std::string> seen;
  api_->SetServiceHandler("taskgov-system", "taskgov-console", 9091,
                          [&](const std::string& method, const std::string& target) {
                            seen.push_back(method + " " + target);
                            return std::make_pair(200, std::string(R"({"kind":"TeamList"})"));
                          });
  const std::string path =
      "/api/v1/namespaces/taskgov-system/services/taskgov-console:9091/proxy/api/v1/teams?x=1";
  EXPECT_EQ(Call("GET", path).status, 401);  // no token: never reaches the backend
  EXPECT_TRUE(seen.empty());
  common::Result<HttpReply> reply =
      http_->Request("GET", path, "", "application/json", {{"Authorization", "Bearer secret"}});
  ASSERT_TRUE(reply.ok());
  EXPECT_EQ(reply->status, 200);
  EXPECT_EQ(reply->body, R"({"kind":"TeamList"})");
  EXPECT_EQ(seen, (std::vector<std::string>{"GET /api/v1/teams?x=1"}));
  // The scheme may be named; the only port may be left out.
  reply = http_->Request("GET",
                         "/api/v1/namespaces/taskgov-system/services/http:taskgov-console/proxy/",
                         "", "application/json", {{"Authorization", "Bearer secret"}});
  ASSERT_TRUE(reply.ok());
  EXPECT_EQ(reply->status, 200);
  EXPECT_EQ(seen.back(), "GET /");
  reply = http_->Request("GET", "/api/v1/namespaces/default/services/other:80/proxy/", "",
                         "application/json", {{"Authorization", "Bearer secret"}});
  ASSERT_TRUE(reply.ok());
  EXPECT_EQ(reply->status, 404);
  // A backend URL nobody listens on: 503.
  api_->SetServiceProxy("default", "down", 80, "http://127.0.0.1:1");
  reply = http_->Request("GET", "/api/v1/namespaces/default/services/down:80/proxy/x", "",
                         "application/json", {{"Authorization", "Bearer secret"}});
  ASSERT_TRUE(reply.ok());
  EXPECT_EQ(reply->status, 503);
}

TEST_F(FakeJobsTest, TheServiceProxyForwardsToABackendUrl) {
  Start(false);
  // Another fake API server is the backend: its /api/v1/namespaces answers through the proxy.
  FakeApiServer backend;
  ASSERT_TRUE(backend.Start().ok());
  ASSERT_TRUE(backend.Upsert("namespaces", R"({"metadata":{"name":"seen-by-backend"}})").ok());
  api_->SetServiceProxy("kube-system", "svc", 8080, backend.url());
  HttpReply reply =
      Call("GET", "/api/v1/namespaces/kube-system/services/svc:8080/proxy/api/v1/namespaces");
  EXPECT_EQ(reply.status, 200);
  EXPECT_NE(reply.body.find("seen-by-backend"), std::string::npos);
  EXPECT_EQ(Call("POST", "/api/v1/namespaces/kube-system/services/svc:8080/proxy/x", "{}").status,
            405);
}

}  // namespace
}  // namespace taskgov::scheduler::kube::testing
