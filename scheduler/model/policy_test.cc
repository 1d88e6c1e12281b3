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

// TeamCompanions finds, for every flavor of a team, what the pairwise rule (FlavorCovers over
// every other flavor, in order) finds: a flavor matching every node covers all, a flavor whose
// labels are a subset of another's covers it, instance types never cover each other.
TEST(CompanionsTest, TeamCompanionsAgreesWithThePairwiseRule) {
  PolicyBuilder builder;
  builder.mutable_policy().flavors = {
      Flavor{"any", {}, true},
      Flavor{"zone-a", {{"zone", "a"}}, false},
      Flavor{"p5-a", {{"node.kubernetes.io/instance-type", kP5}, {"zone", "a"}}, false},
      Flavor{"p5-b", {{"node.kubernetes.io/instance-type", kP5}, {"zone", "b"}}, false},
  };
  builder.Team("t")
      .Quota("p5-a", kGpu, 8)
      .Quota("p5-b", kGpu, 8)
      .Quota("zone-a", "cpu", 100)
      .Quota("any", "cpu", 50)
      .Quota("any", "memory", 1000)
      .Quota(kP5, "ephemeral-storage", 10)
      .Quota("ml.g5.12xlarge", "memory", 5);
  PolicyPtr policy = builder.Build();
  const Team& team = *policy->FindTeam("t");
  const auto all = policy->TeamCompanions(team);
  ASSERT_EQ(all.size(), team.flavors.size());
  for (size_t j = 0; j < team.flavors.size(); ++j) {
    // The pairwise rule, written out.
    std::vector<std::pair<std::string, std::string>> want;
    auto charged = [&](const std::string& r) {
      for (const ResourceQuota& q : team.flavors[j].resources) {
        if (q.resource == r) return true;
      }
      for (const auto& [resource, unused] : want) {
        if (resource == r) return true;
      }
      return false;
    };
    for (const FlavorQuota& fq : team.flavors) {
      if (fq.flavor == team.flavors[j].flavor ||
          !policy->FlavorCovers(fq.flavor, team.flavors[j].flavor)) {
        continue;
      }
      for (const ResourceQuota& q : fq.resources) {
        if (!charged(q.resource)) want.emplace_back(q.resource, fq.flavor);
      }
    }
    EXPECT_EQ(all[j], want) << team.flavors[j].flavor;
  }
  using Pairs = std::vector<std::pair<std::string, std::string>>;
  // zone-a's cpu comes first (before any's); the instance type covers its labelled flavors.
  EXPECT_EQ(policy->Companions(team, "p5-a"),
            (Pairs{{"cpu", "zone-a"}, {"memory", "any"}, {"ephemeral-storage", kP5}}));
  EXPECT_EQ(policy->Companions(team, "p5-b"),
            (Pairs{{"cpu", "any"}, {"memory", "any"}, {"ephemeral-storage", kP5}}));
  EXPECT_EQ(policy->Companions(team, kP5),
            (Pairs{{"cpu", "any"}, {"memory", "any"}}));  // an instance type: covered by any only
}

// A team of 20,000 flavors (two resource groups: cpu on a flavor every node belongs to, GPUs on
// instance types) gets its companions in near-linear time — the pairwise rule took minutes.
TEST(CompanionsTest, TwentyThousandFlavorsOfOneTeam) {
  Policy policy;
  policy.flavors = {Flavor{"any", {}, true}};
  Team team;
  team.name = "t";
  team.flavors.push_back(FlavorQuota{"any", {ResourceQuota{"cpu", 50}}});
  for (int i = 0; i < 20'000; ++i) {
    team.flavors.push_back(FlavorQuota{"it-" + std::to_string(i), {ResourceQuota{kGpu, 8}}});
  }
  policy.teams.push_back(std::move(team));
  policy.Finalize();
  const auto all = policy.TeamCompanions(policy.teams[0]);
  ASSERT_EQ(all.size(), 20'001u);
  EXPECT_TRUE(all[0].empty());
  for (size_t j = 1; j < all.size(); ++j) {
    ASSERT_EQ(all[j], (std::vector<std::pair<std::string, std::string>>{{"cpu", "any"}})) << j;
  }
}

}  // namespace
}  // namespace taskgov::scheduler::model
