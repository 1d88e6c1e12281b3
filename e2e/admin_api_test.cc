// The admin API through the real binary (issue 16): team a borrows 4 of team b's idle GPUs and
// team b's 2-pod gang waits for the pool (b does not reclaim); every number of the admin API's
// replies equals the API server's truth and the same instant's /metrics.

#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include "e2e/scenario_test_util.h"

namespace taskgov::e2e {
namespace {

constexpr char kPolicy[] = R"(apiVersion: taskgov.io/v1
kind: TaskGovernancePolicy
taskPrioritization: TaskRanking
idleComputeAllocation: FairShare
defaultCohort: e2e
teams:
  - name: a
    sharing: {strategy: LendAndBorrow, borrowLimit: 100}
    compute: [{instanceType: ml.p5.48xlarge, accelerators: 8}]
  - name: b
    reclaimWithinCohort: Never
    sharing: {strategy: LendAndBorrow, borrowLimit: 100}
    compute: [{instanceType: ml.p5.48xlarge, accelerators: 8}]
)";

class AdminApiE2eTest : public ScenarioTest {
 protected:
  rapidjson::Document Get(const std::string& target) {
    rapidjson::Document d;
    common::Result<common::testing::HttpReply> reply = h().extender().Admin(target, "t-admin");
    EXPECT_TRUE(reply.ok()) << target << ": " << (reply.ok() ? "" : reply.error().message);
    if (!reply.ok()) return d;
    EXPECT_EQ(reply->status, 200) << target << ": " << reply->body;
    EXPECT_EQ(reply->headers["content-type"], "application/json");
    d.Parse(reply->body.c_str());
    EXPECT_FALSE(d.HasParseError()) << reply->body;
    return d;
  }
  // The team's quota line of nvidia.com/gpu on p5 (HyperPod's ratios derive cpu and memory too).
  static const rapidjson::Value& GpuQuota(const rapidjson::Value& team) {
    for (const rapidjson::Value& q : team["quotas"].GetArray()) {
      if (q["resource"].GetString() == std::string(kGpu)) return q;
    }
    ADD_FAILURE() << "no GPU quota";
    return team;
  }
  static const rapidjson::Value* Item(const rapidjson::Value& items, const std::string& name) {
    for (const rapidjson::Value& item : items.GetArray()) {
      if (item["name"].GetString() == name) return &item;
    }
    ADD_FAILURE() << "no item named " << name;
    return nullptr;
  }
};

// Issue 36, item 6, through the real extender and the fake API server's TokenReview: the console
// serves TLS (plain HTTP gets no reply), its replies say Cache-Control: no-store, tokens are
// reviewed for the taskgov audience, and a token the API server issued for itself is refused.
TEST_F(AdminApiE2eTest, TheConsoleServesTlsAndAcceptsOnlyTokensOfItsAudience) {
  StartWithPolicy(kPolicy);
  h().api().SetAccessReviews(
      {{"t-admin", "admin", {}, {"taskgov"}},
       {"t-kubeconfig", "admin", {}, {scheduler::kube::testing::kApiServerAudience}}},
      {{"admin", "get", "taskgov.io", "workloads", ""}});
  common::Result<common::testing::HttpReply> ok = h().extender().Admin("/api/v1/teams", "t-admin");
  ASSERT_TRUE(ok.ok()) << ok.error().message;
  EXPECT_EQ(ok->status, 200);
  EXPECT_EQ(ok->headers["cache-control"], "no-store");
  common::Result<common::testing::HttpReply> api =
      h().extender().Admin("/api/v1/teams", "t-kubeconfig");
  ASSERT_TRUE(api.ok()) << api.error().message;
  EXPECT_EQ(api->status, 401);
  EXPECT_NE(api->body.find("kubectl create token <serviceaccount> --audience taskgov"),
            std::string::npos)
      << api->body;
  EXPECT_EQ(api->headers["cache-control"], "no-store");
  common::testing::HttpClient plain("127.0.0.1", h().extender().console_port(),
                                    std::chrono::seconds(2));
  EXPECT_FALSE(plain.Get("/api/v1/teams").ok()) << "the console answered plain HTTP";
}

TEST_F(AdminApiE2eTest, RepliesAgreeWithTheApiServerAndMetrics) {
  StartWithPolicy(kPolicy);
  // The console's readers: an admin, and a member of team b allowed in b's namespace only.
  h().api().SetAccessReviews(
      {{"t-admin", "admin", {"ml-admins"}, {"taskgov"}}, {"t-bob", "bob", {}, {"taskgov"}}},
      {{"group:ml-admins", "get", "taskgov.io", "workloads", ""},
       {"bob", "get", "taskgov.io", "workloads", Ns("b")}});
  std::vector<PodSpec> pods;
  for (int i = 0; i < 12; ++i) pods.push_back(GpuPod("a", "a-" + std::to_string(i)));
  SubmitAll(pods);
  ASSERT_TRUE(h().RunUntil([&] { return Running("a") == 12; }, 5));
  std::vector<PodSpec> gang;
  for (int i = 0; i < 2; ++i) gang.push_back(KueueGangPod("b", "train", i, 2, 4));
  SubmitAll(gang);
  for (int i = 0; i < 3; ++i) h().Step();  // tried and refused: the pool has 4 GPUs left
  ASSERT_EQ(PendingOf("b"), 2u);
  ASSERT_EQ(Running("a"), 12u);

  common::Result<metrics::testing::Exposition> m = h().extender().ScrapeMetrics();
  ASSERT_TRUE(m.ok()) << m.error().message;
  rapidjson::Document teams = Get("/api/v1/teams");
  ASSERT_TRUE(teams.IsObject() && teams.HasMember("items"));
  for (const char* team : {"a", "b"}) {
    const rapidjson::Value* t = Item(teams["items"], team);
    ASSERT_NE(t, nullptr);
    const rapidjson::Value& q = GpuQuota(*t);
    const std::map<std::string, std::string> cell = {
        {"team", team}, {"flavor", kP5}, {"resource", kGpu}};
    for (const auto& [field, family] : {std::pair{"nominal", "taskgov_quota_nominal"},
                                        {"usage", "taskgov_quota_usage"},
                                        {"borrowed", "taskgov_quota_borrowed"},
                                        {"lent", "taskgov_quota_lent"}}) {
      EXPECT_EQ(std::stod(q[field].GetString()), m->Value(family, cell).value_or(-1))
          << team << " " << field;
    }
    EXPECT_EQ(static_cast<double>((*t)["pods"]["running"].GetInt()),
              m->Value("taskgov_pods", {{"team", team}, {"state", "running"}}).value_or(-1));
    EXPECT_EQ(static_cast<double>((*t)["pods"]["pending"].GetInt()),
              m->Value("taskgov_pods", {{"team", team}, {"state", "pending"}}).value_or(-1));
    EXPECT_EQ(static_cast<double>((*t)["workloads"]["pending"].GetInt()),
              m->Value("taskgov_workloads", {{"team", team}, {"state", "pending"}}).value_or(-1));
  }
  // The API server's truth.
  const rapidjson::Value* a = Item(teams["items"], "a");
  const rapidjson::Value* b = Item(teams["items"], "b");
  ASSERT_TRUE(a != nullptr && b != nullptr);
  EXPECT_STREQ(GpuQuota(*a)["usage"].GetString(), "12");
  EXPECT_STREQ(GpuQuota(*a)["borrowed"].GetString(), "4");
  EXPECT_STREQ(GpuQuota(*b)["lent"].GetString(), "4");
  EXPECT_EQ((*b)["pods"]["pending"].GetInt(), 2);
  EXPECT_EQ((*b)["workloads"]["pending"].GetInt(), 1);

  rapidjson::Document waiting = Get("/api/v1/workloads?team=b");
  ASSERT_EQ(waiting["items"].Size(), 1u);
  const rapidjson::Value& w = waiting["items"][0];
  EXPECT_STREQ(w["name"].GetString(), "train");
  EXPECT_STREQ(w["kind"].GetString(), "KueuePodGroup");
  EXPECT_STREQ(w["state"].GetString(), "Pending");
  EXPECT_EQ(w["pods"].GetInt(), 2);
  EXPECT_STREQ(w["request"][kGpu].GetString(), "8");
  EXPECT_EQ(w["queuePosition"].GetInt(), 1);
  EXPECT_TRUE(w["refused"].GetBool());
  EXPECT_NE(std::string(w["refusal"].GetString()).find("needs 8, b may use 4 more"),
            std::string::npos)
      << w["refusal"].GetString();

  rapidjson::Document running = Get("/api/v1/workloads?team=a&state=Running&limit=5");
  EXPECT_EQ(running["total"].GetInt(), 12);
  EXPECT_EQ(running["items"].Size(), 5u);
  EXPECT_FALSE(running["continue"].IsNull());

  rapidjson::Document cluster = Get("/api/v1/cluster");
  const rapidjson::Value* p5 = Item(cluster["flavors"], kP5);
  ASSERT_NE(p5, nullptr);
  EXPECT_STREQ((*p5)["inUse"][kGpu].GetString(), "12");
  EXPECT_STREQ((*p5)["nominalQuota"][kGpu].GetString(), "16");

  rapidjson::Document policy = Get("/api/v1/policy");
  EXPECT_TRUE(policy["reload"]["lastSucceeded"].GetBool());
  EXPECT_EQ(policy["teams"].GetInt(), 2);

  common::Result<common::testing::HttpReply> bad =
      h().extender().Admin("/api/v1/workloads?x=1", "t-admin");
  ASSERT_TRUE(bad.ok());
  EXPECT_EQ(bad->status, 400);

  // Access, checked with the API server's TokenReview and SubjectAccessReview.
  common::Result<common::testing::HttpReply> anonymous = h().extender().Admin("/api/v1/teams");
  ASSERT_TRUE(anonymous.ok());
  EXPECT_EQ(anonymous->status, 401);
  common::Result<common::testing::HttpReply> forged =
      h().extender().Admin("/api/v1/teams", "t-forged");
  ASSERT_TRUE(forged.ok());
  EXPECT_EQ(forged->status, 401);
  common::Result<common::testing::HttpReply> bob =
      h().extender().Admin("/api/v1/workloads?team=a&limit=1", "t-bob");
  ASSERT_TRUE(bob.ok());
  EXPECT_EQ(bob->status, 200);
  rapidjson::Document seen;
  seen.Parse(bob->body.c_str());
  ASSERT_TRUE(seen.IsObject() && seen["items"].Size() == 1) << bob->body;
  EXPECT_TRUE(seen["items"][0]["hidden"].GetBool());
  EXPECT_STREQ(seen["items"][0]["name"].GetString(), "");
  common::Result<metrics::testing::Exposition> counted = h().extender().ScrapeMetrics();
  ASSERT_TRUE(counted.ok());
  EXPECT_EQ(counted->Value("taskgov_console_access_total", {{"result", "unauthenticated"}}), 2);
  EXPECT_EQ(counted->Value("taskgov_console_access_total", {{"result", "team"}}), 1);
  EXPECT_GE(counted->Value("taskgov_console_access_total", {{"result", "full"}}).value_or(0), 1);
}

}  // namespace
}  // namespace taskgov::e2e
