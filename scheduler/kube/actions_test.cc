// ApiKubeActions against the fake API server: bindings, evictions (accepted, blocked by a
// PodDisruptionBudget, gone, throttled, failing) and events.

#include "scheduler/kube/actions.h"

#include <gtest/gtest.h>

#include "scheduler/common/clock.h"
#include "scheduler/common/time_format.h"
#include "scheduler/kube/testing/fake_apiserver.h"
#include "scheduler/kube/testing/test_support.h"

namespace taskgov::scheduler::kube {
namespace {

using scheduler::kube::testing::EvictionMode;
using scheduler::kube::testing::FakeApiServer;
using scheduler::kube::testing::FaultRule;
using testing::PodJson;

class ActionsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(server_.Start().ok());
    auto client = KubeClient::Create(testing::HttpConfig(server_.port()));
    ASSERT_TRUE(client.ok());
    client_ = std::move(*client);
    KubeActionsOptions options;
    options.reporting_instance = "taskgov-0";
    options.clock = &clock_;
    actions_ = std::make_unique<ApiKubeActions>(client_.get(), options);
  }

  std::string Uid(const std::string& ns, const std::string& name) {
    rapidjson::Document doc;
    doc.Parse(server_.Get("pods", ns, name).value_or("{}").c_str());
    return doc.HasMember("metadata") ? doc["metadata"]["uid"].GetString() : "";
  }

  std::string Field(const std::string& json, const char* a, const char* b) {
    rapidjson::Document doc;
    doc.Parse(json.c_str());
    common::Result<std::string> v = testing::TestString(doc, a, b);
    return v.ok() ? *v : "";
  }

  FakeApiServer server_;
  std::unique_ptr<KubeClient> client_;
  common::FakeClock clock_;
  std::unique_ptr<ApiKubeActions> actions_;
};

TEST(ActionBodies, BindingEvictionAndEventMatchTheApi) {
  EXPECT_EQ(BindingBody("w-0", "u-1", "node-7"),
            "{\"apiVersion\":\"v1\",\"kind\":\"Binding\",\"metadata\":{\"name\":\"w-0\",\"uid\":"
            "\"u-1\"},\"target\":{\"kind\":\"Node\",\"name\":\"node-7\"}}");
  EXPECT_EQ(EvictionBody("team-a", "w-0", "u-1", 30),
            "{\"apiVersion\":\"policy/v1\",\"kind\":\"Eviction\",\"metadata\":{\"name\":\"w-0\","
            "\"namespace\":\"team-a\"},\"deleteOptions\":{\"gracePeriodSeconds\":30,"
            "\"preconditions\":{\"uid\":\"u-1\"}}}");
  EventRecord event{
      "team-a", "w-0", "u-1", "Warning", "Preempted", "Preempting", std::string(2000, 'x')};
  rapidjson::Document doc;
  const std::string body = EventBody(event, "w-0.abc", "2026-01-01T00:00:00.000000Z",
                                     "taskgov.io/scheduler", "taskgov-0");
  doc.Parse(body.c_str());
  ASSERT_FALSE(doc.HasParseError());
  EXPECT_STREQ(doc["apiVersion"].GetString(), "events.k8s.io/v1");
  EXPECT_STREQ(doc["type"].GetString(), "Warning");
  EXPECT_EQ(std::string(doc["note"].GetString()).size(), 1024u);  // the API's limit
  EXPECT_STREQ(doc["regarding"]["uid"].GetString(), "u-1");
  EXPECT_STREQ(doc["regarding"]["kind"].GetString(), "Pod");
}

TEST_F(ActionsTest, BindSetsTheNodeAndReportsConflicts) {
  ASSERT_TRUE(server_.Upsert("pods", PodJson("team-a", "w-0")).ok());
  const std::string uid = Uid("team-a", "w-0");
  common::Status bound = actions_->Bind("team-a", "w-0", uid, "hyperpod-p5-0");
  ASSERT_TRUE(bound.ok()) << bound.error().message;
  EXPECT_EQ(Field(*server_.Get("pods", "team-a", "w-0"), "spec", "nodeName"), "hyperpod-p5-0");
  ASSERT_EQ(server_.bindings().size(), 1u);
  EXPECT_EQ(server_.bindings()[0], BindingBody("w-0", uid, "hyperpod-p5-0"));

  common::Status again = actions_->Bind("team-a", "w-0", uid, "hyperpod-p5-1");
  ASSERT_FALSE(again.ok());
  EXPECT_NE(again.error().message.find("409"), std::string::npos);
  EXPECT_NE(again.error().message.find("already assigned"), std::string::npos);

  ASSERT_TRUE(server_.Upsert("pods", PodJson("team-a", "w-1")).ok());
  common::Status wrong_uid = actions_->Bind("team-a", "w-1", "some-older-pod", "hyperpod-p5-1");
  ASSERT_FALSE(wrong_uid.ok());
  EXPECT_NE(wrong_uid.error().message.find("UID"), std::string::npos);

  common::Status missing = actions_->Bind("team-a", "nope", "x", "hyperpod-p5-1");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("bind team-a/nope to hyperpod-p5-1"), std::string::npos);
  EXPECT_NE(missing.error().message.find("404"), std::string::npos);
  EXPECT_EQ(actions_->stats().binds, 1u);
  EXPECT_EQ(actions_->stats().bind_failures, 3u);
}

// Requeue patches taskgov's annotation onto the pending pod (a merge patch: the pod keeps its uid
// and spec) and is refused for a pod re-created under the same name (the uid) or gone.
TEST_F(ActionsTest, RequeueAnnotatesThePodItNamesAndNoOther) {
  ASSERT_TRUE(server_.Upsert("pods", PodJson("team-a", "w-0")).ok());
  const std::string uid = Uid("team-a", "w-0");
  const common::Status done =
      actions_->Requeue("team-a", "w-0", uid, "2026-01-01T00:00:00.000000Z");
  ASSERT_TRUE(done.ok()) << done.error().message;
  rapidjson::Document doc;
  doc.Parse(server_.Get("pods", "team-a", "w-0").value_or("{}").c_str());
  EXPECT_STREQ(doc["metadata"]["annotations"][kRequeuedAtAnnotation].GetString(),
               "2026-01-01T00:00:00.000000Z");
  EXPECT_STREQ(doc["metadata"]["uid"].GetString(), uid.c_str());
  rapidjson::Document before;
  before.Parse(PodJson("team-a", "w-0").c_str());
  EXPECT_TRUE(doc["spec"] == before["spec"]);
  EXPECT_FALSE(actions_->Requeue("team-a", "w-0", "another-uid", "t").ok());
  EXPECT_FALSE(actions_->Requeue("team-a", "gone", uid, "t").ok());
  EXPECT_EQ(actions_->stats().requeues, 1u);
  EXPECT_EQ(actions_->stats().requeue_failures, 2u);
  EXPECT_EQ(RequeuePatch("u-1", "t"),
            "{\"metadata\":{\"uid\":\"u-1\",\"annotations\":{\"taskgov.io/requeued-at\":\"t\"}}}");
}

TEST_F(ActionsTest, EvictionOutcomes) {
  server_.SetEvictionMode(EvictionMode::kManual);
  ASSERT_TRUE(server_.Upsert("pods", PodJson("team-b", "borrower", "n1", "Running")).ok());
  std::string detail;
  EXPECT_EQ(actions_->Evict("team-b", "borrower", Uid("team-b", "borrower"), 45, &detail),
            EvictOutcome::kEvicted);
  ASSERT_EQ(server_.evictions().size(), 1u);
  EXPECT_NE(server_.evictions()[0].find("\"gracePeriodSeconds\":45"), std::string::npos);
  // The pod terminates within its grace period: deletionTimestamp set, then gone.
  EXPECT_NE(Field(*server_.Get("pods", "team-b", "borrower"), "metadata", "deletionTimestamp"), "");
  server_.CompleteEvictions();
  EXPECT_FALSE(server_.Get("pods", "team-b", "borrower").has_value());

  EXPECT_EQ(actions_->Evict("team-b", "borrower", "gone-uid", 45, &detail),
            EvictOutcome::kNotFound);
  EXPECT_NE(detail.find("404"), std::string::npos);

  ASSERT_TRUE(server_.Upsert("pods", PodJson("team-b", "guarded", "n1", "Running")).ok());
  server_.BlockEvictions("team-b/guarded");
  EXPECT_EQ(actions_->Evict("team-b", "guarded", Uid("team-b", "guarded"), 30, &detail),
            EvictOutcome::kBlockedByPdb);
  EXPECT_NE(detail.find("disruption budget"), std::string::npos);
  EXPECT_TRUE(server_.Get("pods", "team-b", "guarded").has_value());

  // The name now belongs to a re-created pod: the uid precondition protects it.
  server_.UnblockEvictions();
  EXPECT_EQ(actions_->Evict("team-b", "guarded", "uid-of-the-old-pod", 30, &detail),
            EvictOutcome::kNotFound);
  EXPECT_TRUE(server_.Get("pods", "team-b", "guarded").has_value());

  FaultRule broken;
  broken.path_prefix = "/api/v1/namespaces/team-b/pods/guarded/eviction";
  broken.status = 500;
  server_.AddFault(broken);
  EXPECT_EQ(actions_->Evict("team-b", "guarded", Uid("team-b", "guarded"), 30, &detail),
            EvictOutcome::kFailed);
  KubeActionsStats stats = actions_->stats();
  EXPECT_EQ(stats.evictions, 1u);
  EXPECT_EQ(stats.evictions_blocked_by_pdb, 1u);
  EXPECT_EQ(stats.evictions_not_found, 2u);
  EXPECT_EQ(stats.eviction_failures, 1u);
}

TEST_F(ActionsTest, ThrottledEvictionWithoutABudgetIsRetried) {
  ASSERT_TRUE(server_.Upsert("pods", PodJson("team-c", "w", "n1", "Running")).ok());
  FaultRule throttled;
  throttled.path_prefix = "/api/v1/namespaces/team-c/pods/w/eviction";
  throttled.status = 429;
  throttled.retry_after_seconds = 1;
  server_.AddFault(throttled);
  std::string detail;
  EXPECT_EQ(actions_->Evict("team-c", "w", Uid("team-c", "w"), 0, &detail), EvictOutcome::kEvicted);
  EXPECT_FALSE(server_.Get("pods", "team-c", "w").has_value());
}

TEST_F(ActionsTest, EventsAreSentInTheBackground) {
  clock_.SetWallMicros(1'767'225'600'000'000);
  actions_->RecordEvent(EventRecord{"team-a", "w-0", "u-0", "Normal", "Admitted", "Binding",
                                    "team-a: admitted on ml.p5.48xlarge within nominal quota"});
  actions_->RecordEvent(EventRecord{"team-b", "w-9", "u-9", "Warning", "Preempted", "Preempting",
                                    "reclaimed by team-a"});
  actions_->FlushEvents();
  std::vector<std::string> events = server_.events();
  ASSERT_EQ(events.size(), 2u);
  rapidjson::Document doc;
  doc.Parse(events[0].c_str());
  EXPECT_STREQ(doc["reason"].GetString(), "Admitted");
  EXPECT_STREQ(doc["action"].GetString(), "Binding");
  EXPECT_STREQ(doc["eventTime"].GetString(), "2026-01-01T00:00:00.000000Z");
  EXPECT_STREQ(doc["reportingController"].GetString(), "taskgov.io/scheduler");
  EXPECT_STREQ(doc["reportingInstance"].GetString(), "taskgov-0");
  EXPECT_STREQ(doc["regarding"]["name"].GetString(), "w-0");
  EXPECT_STREQ(doc["metadata"]["namespace"].GetString(), "team-a");
  EXPECT_EQ(std::string(doc["metadata"]["name"].GetString()).rfind("w-0.", 0), 0u);

  FaultRule broken;
  broken.path_prefix = "/apis/events.k8s.io/";
  broken.status = 500;
  server_.AddFault(broken);
  actions_->RecordEvent(EventRecord{"team-a", "w-1", "u-1", "Normal", "Admitted", "", "x"});
  actions_->FlushEvents();
  EXPECT_EQ(actions_->stats().events_sent, 2u);
  EXPECT_EQ(actions_->stats().events_failed, 1u);
}

}  // namespace
}  // namespace taskgov::scheduler::kube
