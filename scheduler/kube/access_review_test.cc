// ApiAccessReviewer against the fake API server, and the decoding of replies the fake does not
// produce (malformed, authenticated without a user).

#include "scheduler/kube/access_review.h"

#include <gtest/gtest.h>

#include "scheduler/kube/client.h"
#include "scheduler/kube/testing/fake_apiserver.h"
#include "scheduler/kube/testing/test_support.h"

namespace taskgov::scheduler::kube {
namespace {

using testing::AccessRule;
using testing::FakeApiServer;
using testing::ReviewUser;

TEST(AccessReviewTest, TokensAndAccessAreReviewedByTheApi) {
  FakeApiServer server;
  ASSERT_TRUE(server.Start().ok());
  server.SetAccessReviews({ReviewUser{"t-alice", "alice", {"ml-admins"}, {}}},
                          {AccessRule{"group:ml-admins", "get", "taskgov.io", "workloads", ""},
                           AccessRule{"bob", "get", "taskgov.io", "workloads", "team-b"}});
  auto client = KubeClient::Create(testing::HttpConfig(server.port()));
  ASSERT_TRUE(client.ok());
  ApiAccessReviewer reviewer(client->get());

  ApiResult<std::optional<ReviewedUser>> alice = reviewer.ReviewToken("t-alice", {});
  ASSERT_TRUE(alice.ok()) << alice.error().message;
  ASSERT_TRUE(alice.value().has_value());
  EXPECT_EQ(alice.value()->username, "alice");
  EXPECT_EQ(alice.value()->groups, std::vector<std::string>{"ml-admins"});
  ApiResult<std::optional<ReviewedUser>> nobody = reviewer.ReviewToken("t-forged", {});
  ASSERT_TRUE(nobody.ok());
  EXPECT_FALSE(nobody.value().has_value());

  const ResourceAttributes everywhere{"get", "taskgov.io", "workloads", ""};
  ApiResult<bool> allowed = reviewer.Allowed(*alice.value(), everywhere);
  ASSERT_TRUE(allowed.ok()) << allowed.error().message;
  EXPECT_TRUE(allowed.value());
  const ReviewedUser bob{"bob", "", {}, {}, {}};
  EXPECT_FALSE(reviewer.Allowed(bob, everywhere).value());
  EXPECT_TRUE(reviewer.Allowed(bob, {"get", "taskgov.io", "workloads", "team-b"}).value());
  EXPECT_FALSE(reviewer.Allowed(bob, {"get", "taskgov.io", "workloads", "team-a"}).value());
  EXPECT_EQ(server.review_counts(), (std::pair<size_t, size_t>{2, 4}));

  testing::FaultRule fault;
  fault.method = "POST";
  fault.path_prefix = "/apis/authentication.k8s.io";
  fault.status = 500;
  fault.message = "etcd unavailable";
  server.AddFault(fault);
  ApiResult<std::optional<ReviewedUser>> failed = reviewer.ReviewToken("t-alice", {});
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.error().status, 500);
}

// spec.audiences goes to the API server, and status.audiences comes back: a token issued for
// taskgov is valid for taskgov and not for the API server; the API server's own token is not
// valid for taskgov; a static token (no audiences) authenticates with none.
TEST(AccessReviewTest, TokensAreReviewedForAnAudience) {
  FakeApiServer server;
  ASSERT_TRUE(server.Start().ok());
  server.SetAccessReviews({ReviewUser{"t-console", "alice", {}, {"taskgov"}},
                           ReviewUser{"t-api", "alice", {}, {testing::kApiServerAudience}},
                           ReviewUser{"t-static", "bob", {}, {}}},
                          {});
  auto client = KubeClient::Create(testing::HttpConfig(server.port()));
  ASSERT_TRUE(client.ok());
  ApiAccessReviewer reviewer(client->get());
  ApiResult<std::optional<ReviewedUser>> console = reviewer.ReviewToken("t-console", {"taskgov"});
  ASSERT_TRUE(console.ok() && console.value().has_value());
  EXPECT_EQ(console.value()->audiences, std::vector<std::string>{"taskgov"});
  EXPECT_FALSE(reviewer.ReviewToken("t-console", {}).value().has_value());
  EXPECT_FALSE(reviewer.ReviewToken("t-api", {"taskgov"}).value().has_value());
  EXPECT_TRUE(reviewer.ReviewToken("t-api", {}).value().has_value());
  ApiResult<std::optional<ReviewedUser>> stat = reviewer.ReviewToken("t-static", {"taskgov"});
  ASSERT_TRUE(stat.ok() && stat.value().has_value());
  EXPECT_TRUE(stat.value()->audiences.empty());
  EXPECT_NE(TokenReviewBody("x", {"taskgov"}).find(R"("audiences":["taskgov"])"),
            std::string::npos);
}

TEST(AccessReviewTest, RepliesAreCheckedNotTrusted) {
  EXPECT_FALSE(DecodeTokenReview("not json").ok());
  EXPECT_FALSE(DecodeTokenReview(R"({"status":{"authenticated":true}})").ok());
  EXPECT_FALSE(
      DecodeTokenReview(R"({"status":{"authenticated":true,"user":{"username":""}}})").ok());
  ApiResult<std::optional<ReviewedUser>> no = DecodeTokenReview(R"({"status":{}})");
  ASSERT_TRUE(no.ok());
  EXPECT_FALSE(no.value().has_value());
  ApiResult<std::optional<ReviewedUser>> yes = DecodeTokenReview(
      R"({"status":{"authenticated":true,"user":{"username":"u","uid":"1","groups":["g",7],)"
      R"("extra":{"scopes":["a","b"]}}}})");
  ASSERT_TRUE(yes.ok());
  EXPECT_EQ(yes.value()->groups, std::vector<std::string>{"g"});
  EXPECT_EQ(yes.value()->extra.at("scopes"), (std::vector<std::string>{"a", "b"}));
  EXPECT_FALSE(DecodeSubjectAccessReview("[]").ok());
  EXPECT_FALSE(DecodeSubjectAccessReview(R"({"status":{"allowed":"yes"}})").value());
  EXPECT_TRUE(DecodeSubjectAccessReview(R"({"status":{"allowed":true}})").value());
  EXPECT_EQ(SubjectAccessReviewBody({"u", "1", {"g"}, {{"scopes", {"a"}}}, {}},
                                    {"get", "taskgov.io", "workloads", "team-a"}),
            R"({"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview","spec":)"
            R"({"user":"u","uid":"1","groups":["g"],"extra":{"scopes":["a"]},)"
            R"("resourceAttributes":{"verb":"get","group":"taskgov.io","resource":"workloads",)"
            R"("namespace":"team-a"}}})");
}

}  // namespace
}  // namespace taskgov::scheduler::kube
