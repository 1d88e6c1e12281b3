#include "scheduler/model/idle_sharing.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "scheduler/testing/builders.h"

namespace taskgov::scheduler::model {
namespace {

using testing::PolicyBuilder;

constexpr char kP5[] = "ml.p5.48xlarge";
constexpr char kG5[] = "ml.g5.12xlarge";
constexpr char kTrn1[] = "ml.trn1.32xlarge";
constexpr char kGpu[] = "nvidia.com/gpu";
constexpr char kNeuron[] = "aws.amazon.com/neuron";

// Teams a (LendAndBorrow) and b (DontLend: lends and borrows nothing) share cohort "hp"; c is in
// cohort "other". On p5 the teams' nominal GPUs sum to 8 + 8 + 4 = 20 and the CPU to 100 + 100.
PolicyBuilder Cluster() {
  PolicyBuilder b;
  b.Team("a", "hp")
      .Quota(kP5, kGpu, 8, /*borrowing_limit=*/24)
      .Quota(kP5, "cpu", 100'000, /*borrowing_limit=*/300'000)
      .Quota(kG5, kGpu, 4, /*borrowing_limit=*/8)
      .Team("b", "hp")
      .Quota(kP5, kGpu, 8, 0, 0)
      .Quota(kP5, "cpu", 100'000, 0, 0)
      .Team("c", "other")
      .Quota(kP5, kGpu, 4)
      .Quota(kTrn1, kNeuron, 16)
      .Cohort("hp")
      .Cohort("other")
      .IdleResourceSharing("hp");
  return b;
}

// Σ allocatable of `nodes` nodes of 8 GPUs and 192 vCPUs on p5, and of `g5` nodes of 4 GPUs on
// g5, with resources no team governs.
FlavorCapacity Nodes(int64_t p5, int64_t g5, int64_t trn1 = 0) {
  FlavorCapacity c;
  if (p5 > 0) {
    c[kP5] = ResourceList{{kGpu, 8 * p5},
                          {"cpu", 192'000 * p5},
                          {"pods", 110 * p5},
                          {"vpc.amazonaws.com/efa", 32 * p5}};
  }
  if (g5 > 0) c[kG5] = ResourceList{{kGpu, 4 * g5}, {"cpu", 48'000 * g5}};
  if (trn1 > 0) c[kTrn1] = ResourceList{{kNeuron, 16 * trn1}};
  return c;
}

TEST(UnallocatedCapacity, IsWhatNodesOfferBeyondEveryNominalQuotaPerFlavorAndResource) {
  struct Case {
    std::string name;
    PolicyPtr policy;
    FlavorCapacity nodes;
    FlavorCapacity want;
  };
  const std::vector<Case> cases = {
      {"nominal below capacity: the rest, per resource the cohort governs (not pods or EFA)",
       Cluster().Build(),
       Nodes(4, 2),
       {{kP5, ResourceList{{kGpu, 32 - 20}, {"cpu", 768'000 - 200'000}}},
        {kG5, ResourceList{{kGpu, 8 - 4}}}}},
      {"nominal above capacity on p5: nothing there",
       Cluster().Build(),
       Nodes(2, 2),
       {{kP5, ResourceList{{"cpu", 384'000 - 200'000}}}, {kG5, ResourceList{{kGpu, 4}}}}},
      {"a flavor without nodes offers nothing",
       Cluster().Build(),
       Nodes(0, 2),
       {{kG5, ResourceList{{kGpu, 4}}}}},
      {"only what the sharing cohort's teams govern: trn1 is the other cohort's",
       Cluster().Build(),
       Nodes(0, 0, 4),
       {}},
      {"a cohort's own quota is allocated too",
       Cluster().CohortQuota("other", kP5, kGpu, 6).Build(),
       Nodes(4, 0),
       {{kP5, ResourceList{{kGpu, 32 - 26}, {"cpu", 768'000 - 200'000}}}}},
      {"sharing off", PolicyBuilder().Team("a", "hp").Quota(kP5, kGpu, 8).Build(), Nodes(4, 2), {}},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(UnallocatedCapacity(*c.policy, c.nodes), c.want) << c.name;
  }
}

TEST(WithUnallocatedCapacity, TheSharingCohortHoldsItAndTheTeamsKeepTheirLimits) {
  const PolicyPtr configured = Cluster().CohortQuota("hp", kG5, kGpu, 2).Build();
  const FlavorCapacity unallocated = UnallocatedCapacity(*configured, Nodes(4, 2));
  const PolicyPtr effective = WithUnallocatedCapacity(configured, unallocated);
  ASSERT_NE(effective, configured);
  // The configured policy is untouched.
  EXPECT_EQ(configured->FindCohort("hp")->flavors.size(), 1u);
  EXPECT_TRUE(configured->idle_resource_sharing.unallocated.empty());

  // p5: 12 GPUs and 568 vCPUs; g5: 8 − 4 − the cohort's own 2 = 2, added to its 2.
  const Cohort* hp = effective->FindCohort("hp");
  ASSERT_NE(hp, nullptr);
  std::map<std::pair<std::string, std::string>, int64_t> own;
  for (const FlavorQuota& fq : hp->flavors) {
    for (const ResourceQuota& q : fq.resources) own[{fq.flavor, q.resource}] = q.nominal;
  }
  const std::map<std::pair<std::string, std::string>, int64_t> want_own = {
      {{kG5, kGpu}, 4}, {{kP5, kGpu}, 12}, {{kP5, "cpu"}, 568'000}};
  EXPECT_EQ(own, want_own);
  ASSERT_EQ(effective->idle_resource_sharing.unallocated.size(), 2u);
  EXPECT_EQ(effective->idle_resource_sharing.unallocated[0].flavor, kG5);
  EXPECT_EQ(effective->idle_resource_sharing.unallocated[0].resources[0].nominal, 2);

  // The pool grows by it: a's 8 GPUs it may lend, b's none, and the cohort's 12.
  for (const CohortPool& pool : CohortPools(*effective)) {
    if (pool.cohort == "hp" && pool.flavor == kP5 && pool.resource == kGpu) {
      EXPECT_EQ(pool.teams, 8);
      EXPECT_EQ(pool.own, 12);
      EXPECT_EQ(pool.subtree, 20);
    }
  }
  // Teams keep their lines: b still may not borrow.
  for (const Team& t : effective->teams) {
    const Team* before = configured->FindTeam(t.name);
    ASSERT_EQ(t.flavors.size(), before->flavors.size()) << t.name;
    for (size_t f = 0; f < t.flavors.size(); ++f) {
      for (size_t r = 0; r < t.flavors[f].resources.size(); ++r) {
        const ResourceQuota& q = t.flavors[f].resources[r];
        const ResourceQuota& was = before->flavors[f].resources[r];
        EXPECT_EQ(q.nominal, was.nominal);
        EXPECT_EQ(q.borrowing_limit, was.borrowing_limit);
        EXPECT_EQ(q.lending_limit, was.lending_limit);
      }
    }
  }
  EXPECT_EQ(effective->FindTeam("b")->flavors[0].resources[0].borrowing_limit, 0);
  EXPECT_EQ(effective->RootCohort("hp"), "hp");  // finalized
}

TEST(WithUnallocatedCapacity, NothingUnallocatedIsTheConfiguredPolicyItself) {
  const PolicyPtr configured = Cluster().Build();
  EXPECT_EQ(WithUnallocatedCapacity(configured, UnallocatedCapacity(*configured, Nodes(0, 1))),
            configured);
}

}  // namespace
}  // namespace taskgov::scheduler::model
