#include "extender/console_access.h"

#include <gtest/gtest.h>

#include "extender/testing/fake_access_reviewer.h"
#include "scheduler/testing/builders.h"

namespace taskgov::extender {
namespace {

using testing::FakeAccessReviewer;

class ConsoleAccessTest : public ::testing::Test {
 protected:
  ConsoleAccessTest()
      : policy_(scheduler::testing::PolicyBuilder()
                    .Team("team-a")
                    .Namespaces({"ns-team-a"})
                    .Team("team-b")
                    .Namespaces({"ns-team-b", "ns-team-b-dev"})
                    .Build()),
        access_(&reviewer_, &clock_, ConsoleAccess::Options{}) {
    reviewer_.allowed = {"admin@", "bob@ns-team-b-dev"};
  }
  AccessDecision Check(std::string_view header) { return access_.Check(header, *policy_); }

  common::FakeClock clock_{1'000'000};
  scheduler::model::PolicyPtr policy_;
  FakeAccessReviewer reviewer_;
  ConsoleAccess access_;
};

TEST_F(ConsoleAccessTest, AdminsSeeEverythingTeamMembersTheirTeamsOthersNothing) {
  AccessDecision admin = Check("Bearer t-admin");
  EXPECT_EQ(admin.status, 200);
  EXPECT_EQ(reviewer_.last.verb, "get");
  EXPECT_EQ(reviewer_.last.group, "taskgov.io");
  EXPECT_EQ(reviewer_.last.resource, "workloads");
  EXPECT_EQ(reviewer_.last.namespace_, "");
  EXPECT_TRUE(admin.viewer.all_teams);
  EXPECT_EQ(admin.viewer.user, "admin");

  AccessDecision bob = Check("bearer   t-bob ");  // the scheme is case-insensitive
  EXPECT_EQ(bob.status, 200);
  EXPECT_FALSE(bob.viewer.all_teams);
  EXPECT_EQ(bob.viewer.teams, std::set<std::string>{"team-b"});
  EXPECT_TRUE(bob.viewer.Sees("team-b"));
  EXPECT_FALSE(bob.viewer.Sees("team-a"));

  AccessDecision eve = Check("Bearer t-eve");
  EXPECT_EQ(eve.status, 403);
  EXPECT_EQ(eve.message,
            "user \"eve\" may not get workloads.taskgov.io in any team's namespace (RBAC: a Role "
            "or ClusterRole granting \"get workloads.taskgov.io\")");
  EXPECT_FALSE(eve.viewer.Sees("team-a"));
}

TEST_F(ConsoleAccessTest, NoTokenOrABadOneIs401) {
  for (const char* header : {"", "Basic YWRtaW46YWRtaW4=", "Bearer", "Bearer    "}) {
    AccessDecision d = Check(header);
    EXPECT_EQ(d.status, 401) << header;
    EXPECT_NE(d.message.find("needs a Kubernetes bearer token"), std::string::npos) << d.message;
  }
  EXPECT_EQ(reviewer_.token_reviews, 0);  // nothing to review
  AccessDecision forged = Check("Bearer forged");
  EXPECT_EQ(forged.status, 401);
  EXPECT_EQ(forged.message,
            "the bearer token was not accepted by the Kubernetes API (expired or invalid): get a "
            "new one");
  EXPECT_EQ(access_.stats().unauthenticated, 5u);
}

TEST_F(ConsoleAccessTest, DecisionsAreCachedForTheTtlAndFailuresAreNot) {
  ASSERT_EQ(Check("Bearer t-bob").status, 200);
  const int reviews = reviewer_.token_reviews + reviewer_.access_reviews;
  EXPECT_EQ(Check("Bearer t-bob").status, 200);
  EXPECT_EQ(Check("Bearer t-eve").status, 403);
  EXPECT_EQ(Check("Bearer t-eve").status, 403);  // refusals are cached too
  EXPECT_EQ(access_.stats().cache_hits, 2u);
  clock_.Advance(10'001);
  reviewer_.allowed.insert("bob@");  // granted meanwhile: seen once the entry expired
  EXPECT_TRUE(Check("Bearer t-bob").viewer.all_teams);
  EXPECT_GT(reviewer_.token_reviews + reviewer_.access_reviews, reviews);

  reviewer_.down = true;
  clock_.Advance(10'001);
  AccessDecision down = Check("Bearer t-bob");
  EXPECT_EQ(down.status, 503);
  EXPECT_EQ(down.message, "cannot check access now (connect timed out); retry");
  EXPECT_FALSE(down.viewer.Sees("team-b"));  // never a view when it cannot tell
  reviewer_.down = false;
  EXPECT_EQ(Check("Bearer t-bob").status, 200);  // the failure was not cached
  const ConsoleAccessStats s = access_.stats();
  EXPECT_EQ(s.errors, 1u);
  EXPECT_EQ(s.full, 2u);  // requests, from the cache or not
  EXPECT_EQ(s.team_scoped, 2u);
  EXPECT_EQ(s.forbidden, 2u);
}

TEST_F(ConsoleAccessTest, TheCacheIsBounded) {
  ConsoleAccess::Options options;
  options.max_cached = 2;
  ConsoleAccess small(&reviewer_, &clock_, options);
  for (const char* token : {"Bearer t-a1", "Bearer t-a2", "Bearer t-a3"}) {
    EXPECT_EQ(small.Check(token, *policy_).status, 403);
  }
  // The third entry cleared the full cache: t-a1 is reviewed again, t-a3 is not.
  const int before = reviewer_.token_reviews;
  (void)small.Check("Bearer t-a3", *policy_);
  EXPECT_EQ(reviewer_.token_reviews, before);
  (void)small.Check("Bearer t-a1", *policy_);
  EXPECT_EQ(reviewer_.token_reviews, before + 1);
}

}  // namespace
}  // namespace taskgov::extender
