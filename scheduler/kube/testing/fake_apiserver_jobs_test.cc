// The fake API server's Job controller, discovery and service proxy, over HTTP as clients see
// them.

#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include <set>
#include <string>

#include "scheduler/common/testing/http_client.h"
#include "scheduler/kube/testing/fake_apiserver.h"

namespace taskgov::scheduler::kube::testing {
namespace {

using common::testing::HttpClient;
using common::testing::HttpReply;

constexpr char kJobs[] = "/apis/batch/v1/namespaces/team/jobs";

std::string JobJson(const std::string& name, int parallelism, bool suspend) {
  return R"({"apiVersion":"batch/v1","kind":"Job","metadata":{"name":")" + name +
         R"(","namespace":"team","labels":{"kueue.x-k8s.io/queue-name":"q"}},"spec":{"parallelism":)" +
         std::to_string(parallelism) + R"(,"completions":)" + std::to_string(parallelism) +
         R"(,"completionMode":"Indexed","suspend":)" + (suspend ? "true" : "false") +
         R"(,"template":{"metadata":{"labels":{"app":"train"}},"spec":{"restartPolicy":"Never",)"
         R"("containers":[{"name":"main","image":"img"}]}}}})";
}

rapidjson::Document Parse(const std::string& json) {
  rapidjson::Document doc;
  doc.Parse(json.c_str());
  return doc;
}

class FakeJobsTest : public ::testing::Test {
 protected:
  void Start(bool controller) {
    FakeApiServerOptions options;
    options.simulate_job_controller = controller;
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
  EXPECT_STREQ(
      Parse(*api_->Get("pytorchjobs", "team", "pt"))["status"]["conditions"][0]["type"].GetString(),
      "Suspended");
  std::string resumed = *api_->Get("pytorchjobs", "team", "pt");
  resumed.replace(resumed.find("\"suspend\":true"), 14, "\"suspend\":false");
  ASSERT_EQ(Call("PUT", std::string(kPyTorchJobs) + "/pt", resumed).status, 200);
  EXPECT_EQ(names().size(), 3u);
  EXPECT_EQ(Call("DELETE", std::string(kPyTorchJobs) + "/pt").status, 200);
  EXPECT_TRUE(names().empty());
}

TEST_F(FakeJobsTest, SucceededPodsCompleteTheJob) {
  Start(true);
  ASSERT_EQ(Call("POST", kJobs, JobJson("train", 1, false)).status, 201);
  const std::string pod = PodsOf("train")[0]["metadata"]["name"].GetString();
  ASSERT_TRUE(api_->SetPodPhase("team", pod, "Succeeded"));
  rapidjson::Document job = Parse(*api_->Get("jobs", "team", "train"));
  EXPECT_EQ(job["status"]["succeeded"].GetInt64(), 1);
  EXPECT_EQ(job["status"]["active"].GetInt64(), 0);
  EXPECT_STREQ(job["status"]["conditions"][0]["type"].GetString(), "Complete");
  EXPECT_EQ(PodsOf("train").size(), 1u);  // the finished pod stays; no new one
}

TEST_F(FakeJobsTest, DiscoveryListsServedResourcesOfAGroupVersion) {
  Start(false);
  HttpReply kubeflow = Call("GET", "/apis/kubeflow.org/v1");
  ASSERT_EQ(kubeflow.status, 200);
  EXPECT_NE(kubeflow.body.find("\"name\":\"pytorchjobs\""), std::string::npos);
  EXPECT_NE(kubeflow.body.find("\"kind\":\"PyTorchJob\""), std::string::npos);
  api_->SetServed("pytorchjobs", false);
  api_->SetServed("tfjobs", false);
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
