#include "scheduler/model/policy.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "scheduler/testing/builders.h"

namespace taskgov::scheduler::model {
namespace {

using scheduler::testing::PolicyBuilder;

constexpr char kP5[] = "ml.p5.48xlarge";
constexpr char kGpu[] = "nvidia.com/gpu";

std::map<std::string, CohortPool> ByCohort(const Policy& policy) {
  std::map<std::string, CohortPool> out;
  for (const CohortPool& pool : CohortPools(policy)) out[pool.cohort] = pool;
  return out;
}

// Kueue's subtree quotas (resource_node.go): a child lends its parent what its lending limit
// allows (all of it without one) and keeps the rest; a root keeps everything; its own quota and
// its teams' lendable quota add up; a root's limits bound nothing.
//   ROOT (own 1, borrowing limit 5: ignored) ── MID (own 2, lends at most 3) ── LEAF ── a (4)
//                                            └─ b (nominal 8, lends at most 2)
TEST(CohortPoolsTest, SubtreeQuotasAddUpFromTheLeaves) {
  PolicyPtr policy = PolicyBuilder()
                         .Cohort("ROOT")
                         .CohortQuota("ROOT", kP5, kGpu, 1, /*borrowing_limit=*/5)
                         .Cohort("MID", "ROOT")
                         .CohortQuota("MID", kP5, kGpu, 2, kUnlimited, /*lending_limit=*/3)
                         .Cohort("LEAF", "MID")
                         .Team("a", "LEAF")
                         .Quota(kP5, kGpu, 4)
                         .Team("b", "ROOT")
                         .Quota(kP5, kGpu, 8, kUnlimited, 2)
                         .Build();
  std::map<std::string, CohortPool> pools = ByCohort(*policy);
  ASSERT_EQ(pools.size(), 3u);
  EXPECT_EQ(pools["LEAF"].parent, "MID");
  EXPECT_EQ(pools["LEAF"].subtree, 4);
  EXPECT_EQ(pools["LEAF"].local, 0);  // no lending limit: lends all of it
  EXPECT_EQ(pools["MID"].teams, 0);
  EXPECT_EQ(pools["MID"].own, 2);
  EXPECT_EQ(pools["MID"].children, 4);
  EXPECT_EQ(pools["MID"].subtree, 6);
  EXPECT_EQ(pools["MID"].local, 3);   // 6 − its lending limit 3
  EXPECT_EQ(pools["ROOT"].teams, 2);  // b lends 2 of its 8
  EXPECT_EQ(pools["ROOT"].children, 3);
  EXPECT_EQ(pools["ROOT"].subtree, 6);
  EXPECT_EQ(pools["ROOT"].local, 6);
  EXPECT_EQ(pools["ROOT"].borrowing_limit, kUnlimited);
  EXPECT_EQ(CohortPools(*policy).back().cohort, "ROOT");  // children first
}

// A parent that would close a cycle (an error of the config check) is dropped, and a cohort
// quota no team under the cohort governs makes no pool.
TEST(CohortPoolsTest, ACycleIsCutAndUngovernedQuotaMakesNoPool) {
  PolicyPtr policy = PolicyBuilder()
                         .Cohort("X", "Y")
                         .Cohort("Y", "X")
                         .CohortQuota("Y", kP5, "cpu", 64000)
                         .Team("a", "X")
                         .Quota(kP5, kGpu, 4)
                         .Build();
  std::map<std::string, CohortPool> pools = ByCohort(*policy);
  ASSERT_EQ(pools.size(), 2u);
  EXPECT_EQ(pools["X"].parent, "Y");
  EXPECT_EQ(pools["Y"].parent, "");
  EXPECT_EQ(pools["Y"].subtree, 4);
  EXPECT_EQ(pools["Y"].resource, kGpu);
}

// A cohort with no team under it still passes its own quota up to the root, for the (flavor,
// resource) a team elsewhere in the tree governs (Kueue's "deep preemption": the quota sits four
// levels down another branch).
TEST(CohortPoolsTest, QuotaOfACohortWithoutTeamsIsPassedUp) {
  PolicyPtr policy = PolicyBuilder()
                         .Cohort("ROOT")
                         .Cohort("A", "ROOT")
                         .Cohort("C", "ROOT")
                         .Cohort("CC", "C")
                         .CohortQuota("CC", kP5, kGpu, 8)
                         .CohortQuota("CC", kP5, "cpu", 64000)
                         .Team("a", "A")
                         .Quota(kP5, kGpu, 0)
                         .Build();
  std::map<std::string, CohortPool> pools = ByCohort(*policy);
  ASSERT_EQ(pools.size(), 4u) << "A, ROOT, and C and CC on the way up";
  EXPECT_EQ(pools["CC"].own, 8);
  EXPECT_EQ(pools["CC"].resource, kGpu);  // cpu: no team of the tree governs it
  EXPECT_EQ(pools["C"].subtree, 8);
  EXPECT_EQ(pools["ROOT"].subtree, 8);
  EXPECT_EQ(pools["A"].subtree, 0);
}

// Every cohort of a chain 3,000 deep finds its root, and the teams at the bottom pool with the
// root's; a cycle's later link is cut, so its cohorts still have a root.
TEST(CohortPoolsTest, RootsOfADeepChainAndOfACycle) {
  PolicyBuilder builder;
  builder.Cohort("c0");
  for (int i = 1; i < 3000; ++i) {
    builder.Cohort("c" + std::to_string(i), "c" + std::to_string(i - 1));
  }
  builder.Team("deep", "c2999").Quota(kP5, kGpu, 1).Team("top", "c0").Quota(kP5, kGpu, 2);
  builder.Cohort("x", "y").Cohort("y", "x").Team("in-x", "x").Team("alone").Team("alone-2");
  PolicyPtr policy = builder.Build();
  EXPECT_EQ(policy->RootCohort("c2999"), "c0");
  EXPECT_EQ(policy->RootCohort("c1500"), "c0");
  EXPECT_EQ(policy->RootCohort("c0"), "c0");
  EXPECT_EQ(policy->RootCohort("unknown"), "unknown");
  EXPECT_EQ(policy->RootCohort("x"), "y");  // x → y kept, y → x cut
  EXPECT_EQ(policy->RootCohort("y"), "y");
  const Policy& p = *policy;
  EXPECT_TRUE(p.SameCohortTree(*p.FindTeam("deep"), *p.FindTeam("top")));
  EXPECT_FALSE(p.SameCohortTree(*p.FindTeam("deep"), *p.FindTeam("in-x")));
  EXPECT_FALSE(p.SameCohortTree(*p.FindTeam("alone"), *p.FindTeam("alone-2")));  // no cohort
  std::map<std::string, CohortPool> pools = ByCohort(*policy);
  EXPECT_EQ(pools["c2999"].subtree, 1);
  EXPECT_EQ(pools["c0"].subtree, 3);  // the deep team's 1 passed up 2,999 levels, and top's 2
}

}  // namespace
}  // namespace taskgov::scheduler::model
