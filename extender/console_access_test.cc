#include "extender/console_access.h"

#include <gtest/gtest.h>

#include <future>
#include <thread>

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
    EXPECT_NE(d.message.find("--audience taskgov"), std::string::npos) << d.message;
  }
  EXPECT_EQ(reviewer_.token_reviews, 0);  // nothing to review
  AccessDecision forged = Check("Bearer forged");
  EXPECT_EQ(forged.status, 401);
  EXPECT_EQ(forged.message,
            "the bearer token was not accepted by the Kubernetes API (expired, invalid, or for "
            "another audience): the console accepts tokens issued for audience \"taskgov\" only "
            "(not the API server's own, which work elsewhere too): make one with kubectl create "
            "token <serviceaccount> --audience taskgov");
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

// Issue 36, item 6: tokens are reviewed for the console's audience, and one the API server
// issued for itself (which a reader would otherwise hand the console) is refused with how to make
// one; so is one whose authenticator knows no audiences. An empty audience accepts the API
// server's own.
TEST_F(ConsoleAccessTest, TokensMustBeIssuedForTheConsolesAudience) {
  EXPECT_EQ(Check("Bearer t-admin").status, 200);
  EXPECT_EQ(reviewer_.last_audiences(), std::vector<std::string>{"taskgov"});
  AccessDecision api = Check("Bearer api-admin");
  EXPECT_EQ(api.status, 401);
  EXPECT_NE(api.message.find("kubectl create token <serviceaccount> --audience taskgov"),
            std::string::npos)
      << api.message;
  AccessDecision unaware = Check("Bearer s-admin");
  EXPECT_EQ(unaware.status, 401);
  EXPECT_NE(unaware.message.find("is valid for the API server, not for audience \"taskgov\""),
            std::string::npos)
      << unaware.message;
  ConsoleAccess::Options options;
  options.audience = "";
  ConsoleAccess any(&reviewer_, &clock_, options);
  EXPECT_EQ(any.Check("Bearer api-admin", *policy_).status, 200);
  EXPECT_TRUE(reviewer_.last_audiences().empty());
}

// Issue 36, item 4: reviews run on the console's own workers, never the caller's thread. A
// cached reader is answered at once, on the caller's thread, while another token's review is
// stuck in a slow API server; checks of one token share its review.
TEST_F(ConsoleAccessTest, ReviewsRunOffTheCallersThreadAndAreShared) {
  ASSERT_EQ(Check("Bearer t-admin").status, 200);  // cached from here
  reviewer_.held = {"t-bob"};
  const int reviews = reviewer_.token_reviews;
  std::promise<std::thread::id> first, second;
  access_.CheckAsync("Bearer t-bob", "c", *policy_,
                     [&](const AccessDecision&) { first.set_value(std::this_thread::get_id()); });
  access_.CheckAsync("Bearer t-bob", "c", *policy_,
                     [&](const AccessDecision&) { second.set_value(std::this_thread::get_id()); });
  std::thread::id cached_on;
  int cached_status = 0;
  access_.CheckAsync("Bearer t-admin", "c", *policy_, [&](const AccessDecision& d) {
    cached_on = std::this_thread::get_id();
    cached_status = d.status;
  });
  EXPECT_EQ(cached_status, 200);  // answered during the call: no review to wait for
  EXPECT_EQ(cached_on, std::this_thread::get_id());
  reviewer_.Release("t-bob");
  EXPECT_NE(first.get_future().get(), std::this_thread::get_id());
  (void)second.get_future().get();
  EXPECT_EQ(reviewer_.token_reviews, reviews + 1);  // one review for both
}

// Issue 36, item 4: a user without grants costs one review per team namespace, but they run in
// parallel on the workers, not one after another.
TEST_F(ConsoleAccessTest, NamespaceReviewsRunInParallel) {
  scheduler::testing::PolicyBuilder many;
  for (int t = 0; t < 8; ++t) {
    many.Team("team-" + std::to_string(t)).Namespaces({"ns-" + std::to_string(t)});
  }
  scheduler::model::PolicyPtr policy = many.Build();
  reviewer_.review_delay = std::chrono::milliseconds(50);
  EXPECT_EQ(access_.Check("Bearer t-eve", *policy).status, 403);
  EXPECT_EQ(reviewer_.access_reviews, 1 + 8);
  EXPECT_GE(reviewer_.max_in_flight, 2) << "the namespaces were reviewed one after another";
}

// Issue 36, item 4: random tokens cost one review each until the client's bucket is empty, then
// 429 without a review; refusals live in a cache of their own, so a flood of random tokens (from
// many clients) never evicts a reader's decision.
TEST_F(ConsoleAccessTest, RandomTokensAreThrottledAndEvictNoReadersDecision) {
  ASSERT_EQ(Check("Bearer t-bob").status, 200);
  const int before = reviewer_.token_reviews;
  int throttled = 0;
  for (int i = 0; i < 100; ++i) {
    const AccessDecision d =
        access_.Check("Bearer random-" + std::to_string(i), *policy_, "10.0.0.9");
    if (d.status == 429) {
      ++throttled;
      EXPECT_NE(d.message.find("too many token reviews from 10.0.0.9"), std::string::npos);
    } else {
      EXPECT_EQ(d.status, 401);
    }
  }
  EXPECT_EQ(reviewer_.token_reviews, before + 20);  // the burst, then nothing
  EXPECT_EQ(throttled, 80);
  EXPECT_EQ(access_.stats().throttled, 80u);
  for (int i = 0; i < 3 * 4096; ++i) {  // from as many clients: each reviewed, each refused
    (void)access_.Check("Bearer flood-" + std::to_string(i), *policy_,
                        "10.1." + std::to_string(i / 256) + "." + std::to_string(i % 256));
  }
  const int after_flood = reviewer_.token_reviews;
  EXPECT_EQ(Check("Bearer t-bob").status, 200);
  EXPECT_EQ(reviewer_.token_reviews, after_flood);  // still cached
  clock_.Advance(2'001);  // a refusal is kept 2 s: the token is reviewed again after that
  (void)access_.Check("Bearer random-0", *policy_, "10.0.0.10");
  EXPECT_EQ(reviewer_.token_reviews, after_flood + 1);
}

}  // namespace
}  // namespace taskgov::extender
