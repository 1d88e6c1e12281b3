#include "scheduler/ledger/ledger.h"

#include <gtest/gtest.h>

#include <bitset>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <thread>

#include "scheduler/ledger/run_bounded_for_testing.h"
#include "scheduler/testing/builders.h"

namespace taskgov::scheduler::ledger {
namespace {

using model::FlavorNames;
using model::IdAmounts;
using model::kUnlimited;
using model::NameId;
using model::PolicyPtr;
using model::ResourceList;
using model::ResourceNames;
using model::SaturatingAdd;
using model::TeamNames;
using model::ToIdAmounts;
using scheduler::testing::PolicyBuilder;
using testing::RunBounded;
using Mode = Ledger::Mode;

constexpr char kP5[] = "ml.p5.48xlarge";
constexpr char kGpu[] = "nvidia.com/gpu";

NameId T(const std::string& name) { return TeamNames().Intern(name); }
NameId F(const std::string& name) { return FlavorNames().Intern(name); }
NameId R(const std::string& name) { return ResourceNames().Intern(name); }

ResourceList Gpus(int64_t n) { return ResourceList{{kGpu, n}}; }

class LedgerTest : public ::testing::Test {
 protected:
  std::variant<Charge, Refusal> Reserve(Ledger& ledger, const std::string& team,
                                        const ResourceList& request, Mode mode = Mode::kBorrowing,
                                        const std::string& flavor = kP5) {
    Ledger::Session s(ledger);
    return s.Reserve(T(team), F(flavor), request, mode);
  }
  static bool Ok(const std::variant<Charge, Refusal>& r) {
    return std::holds_alternative<Charge>(r);
  }
  static const Refusal& Why(const std::variant<Charge, Refusal>& r) { return std::get<Refusal>(r); }
  static int64_t Usage(Ledger& ledger, const std::string& team, const std::string& resource = kGpu,
                       const std::string& flavor = kP5) {
    Ledger::Session s(ledger);
    return s.View(T(team), F(flavor), R(resource)).usage;
  }
  static void Release(Ledger& ledger, const std::variant<Charge, Refusal>& r) {
    Ledger::Session s(ledger);
    EXPECT_TRUE(s.Release(std::get<Charge>(r)));
  }
};

// Two teams of 8 GPUs each in one cohort, borrowing unlimited unless said otherwise.
PolicyPtr TwoTeams(int64_t a_borrow = kUnlimited, int64_t b_lend = kUnlimited,
                   int64_t b_borrow = kUnlimited, int64_t a_lend = kUnlimited) {
  return PolicyBuilder()
      .Team("a", "c")
      .Quota(kP5, kGpu, 8, a_borrow, a_lend)
      .Team("b", "c")
      .Quota(kP5, kGpu, 8, b_borrow, b_lend)
      .Build();
}

// Issue 36, item 3: a team at the bottom of a chain of 100,000 cohorts gets its pools up to the
// root, and their potentials, without recursing once per level (the recursive PoolOf overflowed
// the stack here). Reservations walk the tree recursively: config/ refuses trees deeper than
// config::kMaxCohortDepth, and the top team's reservation stays shallow.
TEST_F(LedgerTest, AChainOfCohortsAnyNumberDeepCostsNoStack) {
  constexpr int kDepth = 100'000;
  PolicyBuilder builder;
  builder.Team("deep", "c" + std::to_string(kDepth - 1)).Quota(kP5, kGpu, 1);
  builder.Team("top", "c0").Quota(kP5, kGpu, 2);
  model::Policy& policy = builder.mutable_policy();
  policy.cohorts.reserve(kDepth);
  policy.cohorts.push_back(model::Cohort{"c0", "", {}});
  for (int i = 1; i < kDepth; ++i) {
    policy.cohorts.push_back(
        model::Cohort{"c" + std::to_string(i), "c" + std::to_string(i - 1), {}});
  }
  Ledger ledger(builder.Build());
  const std::vector<Ledger::PoolUsage> pools = ledger.Pools();
  ASSERT_EQ(pools.size(), static_cast<size_t>(kDepth));
  size_t levels = 1;
  for (int32_t at = 0; pools[at].parent >= 0; at = pools[at].parent) ++levels;
  EXPECT_EQ(levels, static_cast<size_t>(kDepth));  // pool 0 is the deep team's: up to c0
  EXPECT_EQ(pools[0].potential, 3);                // its 1 and top's 2, passed up every level
  EXPECT_TRUE(Ok(Reserve(ledger, "top", Gpus(2))));
}

// ApplyPolicy builds the new generation before its swap and copies the usage into it inside:
// usage charged between the build and the swap — on a cell the new policy drops, which the build
// did not know held usage — is kept (the swap builds again when a charged cell is missing).
TEST_F(LedgerTest, ApplyPolicyKeepsUsageOnCellsTheNewPolicyDrops) {
  Ledger ledger(TwoTeams());
  auto charge = Reserve(ledger, "b", Gpus(3));
  ASSERT_TRUE(Ok(charge));
  ledger.ApplyPolicy(PolicyBuilder().Team("a", "c").Quota(kP5, kGpu, 8).Build());
  EXPECT_EQ(Usage(ledger, "b"), 3);  // b's cell is an orphan now, its usage kept
  EXPECT_EQ(Usage(ledger, "a"), 0);
  Release(ledger, charge);
  EXPECT_EQ(Usage(ledger, "b"), 0);
}

TEST_F(LedgerTest, WithinNominalAdmitsUpToNominal) {
  Ledger ledger(TwoTeams());
  EXPECT_TRUE(Ok(Reserve(ledger, "a", Gpus(8), Mode::kWithinNominal)));
  auto refused = Reserve(ledger, "a", Gpus(1), Mode::kWithinNominal);
  ASSERT_FALSE(Ok(refused));
  EXPECT_EQ(Why(refused).kind, RefusalKind::kNominal);
  EXPECT_EQ(Usage(ledger, "a"), 8);
}

TEST_F(LedgerTest, BorrowsIdleQuotaOfTheCohort) {
  Ledger ledger(TwoTeams());
  std::vector<std::variant<Charge, Refusal>> held;
  for (int i = 0; i < 12; ++i) {
    held.push_back(Reserve(ledger, "a", Gpus(1)));
    ASSERT_TRUE(Ok(held.back())) << i;
  }
  EXPECT_EQ(Usage(ledger, "a"), 12);
  EXPECT_TRUE(std::get<Charge>(held.back()).borrowing);
  EXPECT_FALSE(std::get<Charge>(held.front()).borrowing);
  // 16 in the cohort: a 13th..16th still fit, the 17th does not.
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(Ok(Reserve(ledger, "a", Gpus(1))));
  auto refused = Reserve(ledger, "a", Gpus(1));
  ASSERT_FALSE(Ok(refused));
  EXPECT_EQ(Why(refused).kind, RefusalKind::kPool);
}

// A cohort's own quota (Kueue Cohort resourceGroups) adds to the pool its teams borrow from: a
// team of nominal 0 borrows it, a team's borrowing limit still caps it, a resource no team
// governs is not pooled, and a new policy's cohort quota applies to the usage carried over.
TEST_F(LedgerTest, ACohortsOwnQuotaJoinsItsPool) {
  auto policy = [](int64_t cohort_gpus) {
    return PolicyBuilder()
        .Team("a", "c")
        .Quota(kP5, kGpu, 1)
        .Team("b", "c")
        .Quota(kP5, kGpu, 0, /*borrowing_limit=*/5)
        .CohortQuota("c", kP5, kGpu, cohort_gpus)
        .CohortQuota("c", kP5, "cpu", 64000)  // no team governs cpu: nothing to pool
        .Build();
  };
  Ledger ledger(policy(3));
  {
    Ledger::Session s(ledger);
    const CellView v = s.View(T("b"), F(kP5), R(kGpu));
    EXPECT_EQ(v.pool_capacity, 4);  // a's lendable 1 + the cohort's 3
  }
  EXPECT_TRUE(Ok(Reserve(ledger, "b", Gpus(4))));
  auto refused = Reserve(ledger, "b", Gpus(1));
  ASSERT_FALSE(Ok(refused));
  EXPECT_EQ(Why(refused).kind, RefusalKind::kPool);
  EXPECT_EQ(Why(refused).pool_capacity, 4);
  EXPECT_FALSE(Ok(Reserve(ledger, "a", Gpus(1), Mode::kWithinNominal)));  // b holds a's GPU
  EXPECT_TRUE(Ok(Reserve(ledger, "b", ResourceList{{"cpu", 1000}})));     // ungoverned

  ledger.ApplyPolicy(policy(10));
  EXPECT_EQ(Usage(ledger, "b"), 4);
  EXPECT_TRUE(Ok(Reserve(ledger, "b", Gpus(1))));
  refused = Reserve(ledger, "b", Gpus(1));  // now its borrowing limit of 5 binds
  ASSERT_FALSE(Ok(refused));
  EXPECT_EQ(Why(refused).kind, RefusalKind::kBorrowingLimit);
  EXPECT_TRUE(Ok(Reserve(ledger, "a", Gpus(1), Mode::kWithinNominal)));
}

// Hierarchical cohorts (Kueue Cohort parentName): a team borrows what teams under another
// branch of the tree leave idle, through the cohorts' common ancestor; what it takes is stored
// up the tree and given back the same way.
//   ROOT ── LEFT ── a (nominal 2)
//        └─ RIGHT ─ d (nominal 4)
TEST_F(LedgerTest, ATeamBorrowsAcrossTheCohortTree) {
  Ledger ledger(PolicyBuilder()
                    .Cohort("ROOT")
                    .Cohort("LEFT", "ROOT")
                    .Cohort("RIGHT", "ROOT")
                    .Team("a", "LEFT")
                    .Quota(kP5, kGpu, 2)
                    .Team("d", "RIGHT")
                    .Quota(kP5, kGpu, 4)
                    .Build());
  std::vector<std::variant<Charge, Refusal>> held;
  for (int i = 0; i < 6; ++i) {
    held.push_back(Reserve(ledger, "a", Gpus(1)));
    ASSERT_TRUE(Ok(held.back())) << i;
  }
  {
    Ledger::Session s(ledger);
    const CellView v = s.View(T("a"), F(kP5), R(kGpu));
    EXPECT_EQ(v.pool_capacity, 2);  // LEFT's subtree quota: a's 2
    EXPECT_EQ(v.pool_used, 6);      // 4 of it stored in ROOT
    EXPECT_EQ(v.pool_free, 0);
    EXPECT_EQ(v.pool_potential, 6);  // ROOT's subtree quota: all of it could be lent
  }
  auto refused = Reserve(ledger, "a", Gpus(1));
  ASSERT_FALSE(Ok(refused));
  EXPECT_EQ(Why(refused).kind, RefusalKind::kPool);
  EXPECT_EQ(Why(refused).Explain(),
            "a: nvidia.com/gpu on ml.p5.48xlarge: requested 1, in use 6 of nominal 2, borrowing "
            "limit unlimited, cohort pool free 0 of 6");  // of what the tree could lend
  EXPECT_FALSE(Ok(Reserve(ledger, "d", Gpus(1), Mode::kWithinNominal)));  // a holds all of d's
  for (int i = 0; i < 4; ++i) Release(ledger, held[i]);
  EXPECT_TRUE(Ok(Reserve(ledger, "d", Gpus(4), Mode::kWithinNominal)));
  EXPECT_FALSE(Ok(Reserve(ledger, "a", Gpus(1))));
  EXPECT_EQ(Usage(ledger, "a"), 2);
}

// A cohort's lending limit keeps part of its subtree quota for its own teams; its borrowing
// limit caps what it takes from its parent (Kueue's localQuota and BorrowingLimit of a cohort).
//   ROOT (own 3) ── LEFT (own 2, lends at most 1) ── a (nominal 2)
//                └─ RIGHT (borrows at most 1)     ── d (nominal 1), e (nominal 0)
TEST_F(LedgerTest, ACohortsLimitsBoundWhatItLendsAndBorrowsUpTheTree) {
  Ledger ledger(PolicyBuilder()
                    .Cohort("ROOT")
                    .CohortQuota("ROOT", kP5, kGpu, 3)
                    .Cohort("LEFT", "ROOT")
                    .CohortQuota("LEFT", kP5, kGpu, 2, kUnlimited, /*lending_limit=*/1)
                    .Cohort("RIGHT", "ROOT")
                    .CohortQuota("RIGHT", kP5, kGpu, 0, /*borrowing_limit=*/1)
                    .Team("a", "LEFT")
                    .Quota(kP5, kGpu, 2)
                    .Team("d", "RIGHT")
                    .Quota(kP5, kGpu, 1)
                    .Team("e", "RIGHT")
                    .Quota(kP5, kGpu, 0)
                    .Build());
  // ROOT holds its own 3, LEFT's lendable 1 and RIGHT's 1. RIGHT stores in it what d lends and
  // 1 more (its borrowing limit), so e gets 2 and no more, although ROOT has 3 left.
  EXPECT_TRUE(Ok(Reserve(ledger, "e", Gpus(2))));
  auto refused = Reserve(ledger, "e", Gpus(1));
  ASSERT_FALSE(Ok(refused));
  EXPECT_EQ(Why(refused).kind, RefusalKind::kPool);
  EXPECT_EQ(Why(refused).pool_free, 0);
  // LEFT keeps 3 of its 4 for a (its nominal is 2), and a may borrow ROOT's 3 left.
  EXPECT_TRUE(Ok(Reserve(ledger, "a", Gpus(6))));
  EXPECT_FALSE(Ok(Reserve(ledger, "a", Gpus(1))));
  {
    Ledger::Session s(ledger);
    const CellView v = s.View(T("a"), F(kP5), R(kGpu));
    EXPECT_EQ(v.pool_capacity, 4);
    EXPECT_EQ(v.pool_used, 6);
    EXPECT_EQ(v.pool_free, 0);       // its local quota is used, and ROOT is full
    EXPECT_EQ(v.pool_potential, 8);  // LEFT's 3 kept and ROOT's 5, with no usage anywhere
  }
  // d's nominal is taken by e: d gets nothing until e gives back.
  EXPECT_FALSE(Ok(Reserve(ledger, "d", Gpus(1), Mode::kWithinNominal)));
}

// Usage carried into a new generation keeps the tree's split: a policy that removes the tree
// leaves the usage where it is, above the new limits, and blocks new admissions until it drains.
TEST_F(LedgerTest, ATreeSurvivesAPolicySwap) {
  auto policy = [](bool tree) {
    PolicyBuilder b;
    if (tree) b.Cohort("ROOT").Cohort("LEFT", "ROOT").Cohort("RIGHT", "ROOT");
    return b.Team("a", "LEFT").Quota(kP5, kGpu, 2).Team("d", "RIGHT").Quota(kP5, kGpu, 4).Build();
  };
  Ledger ledger(policy(true));
  auto big = Reserve(ledger, "a", Gpus(5));
  ASSERT_TRUE(Ok(big));
  ledger.ApplyPolicy(policy(false));
  EXPECT_EQ(Usage(ledger, "a"), 5);
  EXPECT_FALSE(Ok(Reserve(ledger, "a", Gpus(1))));  // LEFT alone holds 2
  ledger.ApplyPolicy(policy(true));
  EXPECT_TRUE(Ok(Reserve(ledger, "a", Gpus(1))));
  EXPECT_FALSE(Ok(Reserve(ledger, "a", Gpus(1))));
  Release(ledger, big);
  EXPECT_TRUE(Ok(Reserve(ledger, "d", Gpus(4), Mode::kWithinNominal)));
}

TEST_F(LedgerTest, BorrowingLimitCapsTheTeam) {
  Ledger ledger(TwoTeams(/*a_borrow=*/2));
  EXPECT_TRUE(Ok(Reserve(ledger, "a", Gpus(10))));
  auto refused = Reserve(ledger, "a", Gpus(1));
  ASSERT_FALSE(Ok(refused));
  EXPECT_EQ(Why(refused).kind, RefusalKind::kBorrowingLimit);
  EXPECT_EQ(Why(refused).Explain(),
            "a: nvidia.com/gpu on ml.p5.48xlarge: requested 1, in use 10 of nominal 8, "
            "borrowing limit 2");
}

TEST_F(LedgerTest, LendingLimitCapsWhatOthersBorrow) {
  Ledger ledger(TwoTeams(kUnlimited, /*b_lend=*/3));
  EXPECT_TRUE(Ok(Reserve(ledger, "a", Gpus(11))));
  auto refused = Reserve(ledger, "a", Gpus(1));
  ASSERT_FALSE(Ok(refused));
  EXPECT_EQ(Why(refused).kind, RefusalKind::kPool);
  // b still gets its whole nominal: 5 guaranteed + 3 lendable that a holds... no: a holds b's 3,
  // so b gets only its 5 guaranteed until a gives them back.
  EXPECT_TRUE(Ok(Reserve(ledger, "b", Gpus(5), Mode::kWithinNominal)));
  EXPECT_FALSE(Ok(Reserve(ledger, "b", Gpus(1), Mode::kWithinNominal)));
}

TEST_F(LedgerTest, DontLendKeepsNominalForTheTeam) {
  // b: DontLend ⇒ L = 0, B = 0.
  Ledger ledger(TwoTeams(kUnlimited, /*b_lend=*/0, /*b_borrow=*/0));
  EXPECT_TRUE(Ok(Reserve(ledger, "a", Gpus(8))));
  EXPECT_FALSE(Ok(Reserve(ledger, "a", Gpus(1))));  // nothing to borrow
  EXPECT_TRUE(Ok(Reserve(ledger, "b", Gpus(8))));
  EXPECT_FALSE(Ok(Reserve(ledger, "b", Gpus(1))));  // b may not borrow either
}

TEST_F(LedgerTest, LendButNeverBorrow) {
  // a: Lend ⇒ B = 0.
  Ledger ledger(TwoTeams(/*a_borrow=*/0));
  EXPECT_TRUE(Ok(Reserve(ledger, "b", Gpus(12))));  // b borrows 4 of a's
  EXPECT_TRUE(Ok(Reserve(ledger, "a", Gpus(4))));
  EXPECT_FALSE(Ok(Reserve(ledger, "a", Gpus(1))));  // a's other 4 are lent out
}

// A peer's bug: checking `used < limit` instead of `used + request <= limit`. Every limit is
// tested from below: the team is under the limit, and the request would cross it.
TEST_F(LedgerTest, UsedPlusRequestIsComparedWithEveryLimit) {
  {  // nominal: 6 of 8 in use, 3 more would cross it, 2 fit
    Ledger ledger(TwoTeams());
    ASSERT_TRUE(Ok(Reserve(ledger, "a", Gpus(6), Mode::kWithinNominal)));
    auto refused = Reserve(ledger, "a", Gpus(3), Mode::kWithinNominal);
    ASSERT_FALSE(Ok(refused));
    EXPECT_EQ(Why(refused).kind, RefusalKind::kNominal);
    EXPECT_EQ(Why(refused).Explain(),
              "a: nvidia.com/gpu on ml.p5.48xlarge: requested 3, in use 6 of nominal 8 "
              "(staying within nominal)");
    EXPECT_TRUE(Ok(Reserve(ledger, "a", Gpus(2), Mode::kWithinNominal)));
  }
  {  // borrowing limit: 9 of 8 + 2 in use, 2 more would cross it, 1 fits
    Ledger ledger(TwoTeams(/*a_borrow=*/2));
    ASSERT_TRUE(Ok(Reserve(ledger, "a", Gpus(9))));
    auto refused = Reserve(ledger, "a", Gpus(2));
    ASSERT_FALSE(Ok(refused));
    EXPECT_EQ(Why(refused).kind, RefusalKind::kBorrowingLimit);
    EXPECT_TRUE(Ok(Reserve(ledger, "a", Gpus(1))));
  }
  {  // cohort pool: b lends 3; a borrowed 2 of them, 2 more would cross the pool, 1 fits
    Ledger ledger(TwoTeams(kUnlimited, /*b_lend=*/3, kUnlimited, /*a_lend=*/0));
    ASSERT_TRUE(Ok(Reserve(ledger, "a", Gpus(10))));
    auto refused = Reserve(ledger, "a", Gpus(2));
    ASSERT_FALSE(Ok(refused));
    EXPECT_EQ(Why(refused).kind, RefusalKind::kPool);
    EXPECT_EQ(Why(refused).Explain(),
              "a: nvidia.com/gpu on ml.p5.48xlarge: requested 2, in use 10 of nominal 8, "
              "borrowing limit unlimited, cohort pool free 1 of 3");
    EXPECT_TRUE(Ok(Reserve(ledger, "a", Gpus(1))));
  }
}

TEST_F(LedgerTest, LenderIsNotAdmittedWhileABorrowerHoldsItsLentCapacity) {
  Ledger ledger(TwoTeams());
  auto borrowed = Reserve(ledger, "a", Gpus(12));
  ASSERT_TRUE(Ok(borrowed));
  auto refused = Reserve(ledger, "b", Gpus(8), Mode::kWithinNominal);
  ASSERT_FALSE(Ok(refused));
  EXPECT_EQ(Why(refused).kind, RefusalKind::kPool);
  EXPECT_TRUE(Ok(Reserve(ledger, "b", Gpus(4), Mode::kWithinNominal)));
  Release(ledger, borrowed);
  EXPECT_TRUE(Ok(Reserve(ledger, "b", Gpus(4), Mode::kWithinNominal)));
}

TEST_F(LedgerTest, TwoTeamsCannotTakeTheSameBorrowedCapacity) {
  Ledger ledger(PolicyBuilder()
                    .Team("a", "c")
                    .Quota(kP5, kGpu, 8)
                    .Team("b", "c")
                    .Quota(kP5, kGpu, 8)
                    .Team("lender", "c")
                    .Quota(kP5, kGpu, 4)
                    .Build());
  EXPECT_TRUE(Ok(Reserve(ledger, "a", Gpus(12))));  // a takes the lender's 4
  EXPECT_TRUE(Ok(Reserve(ledger, "b", Gpus(8))));
  EXPECT_FALSE(Ok(Reserve(ledger, "b", Gpus(1))));
}

TEST_F(LedgerTest, MultiResourceTakesAllOrNothing) {
  Ledger ledger(PolicyBuilder()
                    .Team("a", "c")
                    .Quota(kP5, kGpu, 8)
                    .Quota(kP5, "cpu", 4000, 0)
                    .Team("b", "c")
                    .Quota(kP5, kGpu, 8)
                    .Build());
  auto refused = Reserve(ledger, "a", ResourceList{{kGpu, 2}, {"cpu", 5000}});
  ASSERT_FALSE(Ok(refused));
  EXPECT_EQ(ResourceNames().Name(Why(refused).resource), "cpu");
  EXPECT_EQ(Usage(ledger, "a"), 0);
  EXPECT_EQ(Usage(ledger, "a", "cpu"), 0);
  EXPECT_TRUE(Ok(Reserve(ledger, "a", ResourceList{{kGpu, 2}, {"cpu", 4000}})));
}

TEST_F(LedgerTest, UngovernedResourcesAreNotCharged) {
  Ledger ledger(TwoTeams());
  auto r = Reserve(ledger, "a", ResourceList{{kGpu, 1}, {"vpc.amazonaws.com/efa", 32}});
  ASSERT_TRUE(Ok(r));
  EXPECT_EQ(std::get<Charge>(r).count, 1);
  EXPECT_EQ(std::get<Charge>(r).Amount(R(kGpu)), 1);
}

TEST_F(LedgerTest, NoQuotaOnFlavor) {
  Ledger ledger(TwoTeams());
  auto r = Reserve(ledger, "a", Gpus(1), Mode::kBorrowing, "ml.g5.12xlarge");
  ASSERT_FALSE(Ok(r));
  EXPECT_EQ(Why(r).kind, RefusalKind::kNoQuota);
  EXPECT_EQ(Why(r).Explain(), "a: no quota on ml.g5.12xlarge");
}

TEST_F(LedgerTest, TeamWithoutCohortUsesItsNominalAndNoMore) {
  Ledger ledger(PolicyBuilder().Team("solo").Quota(kP5, kGpu, 8).Build());
  EXPECT_TRUE(Ok(Reserve(ledger, "solo", Gpus(8))));
  EXPECT_FALSE(Ok(Reserve(ledger, "solo", Gpus(1))));
}

TEST_F(LedgerTest, ReloadKeepsUsageAndRefusesUntilItDrains) {
  Ledger ledger(TwoTeams());
  std::vector<std::variant<Charge, Refusal>> held;
  for (int i = 0; i < 8; ++i) held.push_back(Reserve(ledger, "a", Gpus(1)));
  // Halve a's quota, no borrowing.
  ledger.ApplyPolicy(TwoTeams(/*a_borrow=*/0, kUnlimited, kUnlimited, /*a_lend=*/0).get()
                         ? PolicyBuilder()
                               .Team("a", "c")
                               .Quota(kP5, kGpu, 4, 0, 0)
                               .Team("b", "c")
                               .Quota(kP5, kGpu, 8)
                               .Build()
                         : nullptr);
  EXPECT_EQ(Usage(ledger, "a"), 8);  // nothing lost, nothing touched
  EXPECT_FALSE(Ok(Reserve(ledger, "a", Gpus(1))));
  for (int i = 0; i < 4; ++i) Release(ledger, held[i]);  // charges of the old generation
  EXPECT_EQ(Usage(ledger, "a"), 4);
  EXPECT_FALSE(Ok(Reserve(ledger, "a", Gpus(1))));
  Release(ledger, held[4]);
  EXPECT_TRUE(Ok(Reserve(ledger, "a", Gpus(1))));
  EXPECT_EQ(Usage(ledger, "a"), 4);
}

TEST_F(LedgerTest, RemovedTeamKeepsItsUsageUntilItEnds) {
  Ledger ledger(TwoTeams());
  auto charge = Reserve(ledger, "a", Gpus(12));  // 4 borrowed from b
  ASSERT_TRUE(Ok(charge));
  ledger.ApplyPolicy(PolicyBuilder().Team("b", "c").Quota(kP5, kGpu, 8).Build());
  EXPECT_EQ(Usage(ledger, "a"), 12);
  // a's 12 now sit in the cohort pool, whose capacity is b's 8: b is blocked.
  EXPECT_FALSE(Ok(Reserve(ledger, "b", Gpus(1))));
  Release(ledger, charge);
  EXPECT_EQ(Usage(ledger, "a"), 0);
  EXPECT_TRUE(Ok(Reserve(ledger, "b", Gpus(8))));
}

TEST_F(LedgerTest, ForceChargeCreatesMissingCellsOnRequest) {
  Ledger ledger(TwoTeams());
  Charge charge;
  std::vector<CellKey> missing;
  {
    Ledger::Session s(ledger);
    ASSERT_FALSE(s.ForceCharge(T("ghost"), F(kP5), Gpus(2), &charge, &missing));
  }
  ASSERT_EQ(missing.size(), 1u);
  ledger.EnsureCells(missing);
  {
    Ledger::Session s(ledger);
    ASSERT_TRUE(s.ForceCharge(T("ghost"), F(kP5), Gpus(2), &charge, &missing));
  }
  EXPECT_EQ(Usage(ledger, "ghost"), 2);
  // Unlimited force: existing usage beyond every limit is still recorded.
  {
    Ledger::Session s(ledger);
    Charge big;
    ASSERT_TRUE(s.ForceCharge(T("a"), F(kP5), Gpus(100), &big, &missing));
  }
  EXPECT_EQ(Usage(ledger, "a"), 100);
  // A flavor nobody governs is not charged at all.
  {
    Ledger::Session s(ledger);
    Charge none;
    ASSERT_TRUE(s.ForceCharge(T("a"), F("ml.c5.xlarge"), Gpus(1), &none, &missing));
    EXPECT_EQ(none.count, 0);
  }
}

TEST_F(LedgerTest, RebuildReplacesUsageByTheCollectedCharges) {
  Ledger ledger(TwoTeams());
  auto keep = Reserve(ledger, "a", Gpus(3));
  auto lost = Reserve(ledger, "a", Gpus(5));  // pretend this one leaked
  ASSERT_TRUE(Ok(keep) && Ok(lost));
  Charge kept = std::get<Charge>(keep);
  ledger.Rebuild([&] { return std::vector<Charge*>{&kept}; });
  EXPECT_EQ(Usage(ledger, "a"), 3);
  EXPECT_EQ(kept.generation, ledger.generation());
  Ledger::Session s(ledger);
  EXPECT_TRUE(s.Release(kept));
  EXPECT_EQ(s.View(T("a"), F(kP5), R(kGpu)).usage, 0);
}

// Verify keeps the generation when the sums agree with the counters (the charges are not even
// collected), and rebuilds from the charges, reporting the drift, when they do not.
TEST_F(LedgerTest, VerifyRebuildsOnlyWhenTheSumsDisagree) {
  Ledger ledger(TwoTeams());
  auto keep = Reserve(ledger, "a", Gpus(3));
  auto lost = Reserve(ledger, "a", Gpus(5));  // pretend this one leaked
  ASSERT_TRUE(Ok(keep) && Ok(lost));
  Charge kept = std::get<Charge>(keep);
  const uint64_t generation = ledger.generation();
  int collected = 0;
  auto collect = [&] {
    ++collected;
    return std::vector<Charge*>{&kept};
  };
  const CellKey cell{T("a"), F(kP5), R(kGpu)};
  EXPECT_TRUE(
      ledger.Verify(
                [&] {
                  return std::vector<Ledger::CellSum>{{cell, 3}, {cell, 5}};
                },
                collect)
          .empty());
  EXPECT_EQ(ledger.generation(), generation);
  EXPECT_EQ(collected, 0);
  EXPECT_EQ(Usage(ledger, "a"), 8);
  std::vector<Ledger::Drift> drift = ledger.Verify(
      [&] {
        return std::vector<Ledger::CellSum>{{cell, 3}};
      },
      collect);
  EXPECT_EQ(collected, 1);
  ASSERT_EQ(drift.size(), 1u);
  EXPECT_EQ(drift[0].key, cell);
  EXPECT_EQ(drift[0].ledger_usage, 8);
  EXPECT_EQ(drift[0].charged, 3);
  EXPECT_NE(ledger.generation(), generation);
  EXPECT_EQ(Usage(ledger, "a"), 3);
  EXPECT_EQ(kept.generation, ledger.generation());
  // Sessions open on the kept generation as on a new one.
  Ledger::Session s(ledger);
  EXPECT_TRUE(s.Release(kept));
  EXPECT_EQ(s.View(T("a"), F(kP5), R(kGpu)).usage, 0);
}

// Usage a sum puts in a cell the generation lacks is drift: the rebuild creates the cell.
TEST_F(LedgerTest, VerifyCreatesACellOnlyTheSumsName) {
  Ledger ledger(TwoTeams());
  const CellKey orphan{T("gone"), F(kP5), R(kGpu)};
  Charge ghost;
  ghost.team = orphan.team;
  ghost.flavor = orphan.flavor;
  ghost.count = 1;
  ghost.items[0] = Charge::Item{orphan.resource, 0, 2};
  std::vector<Ledger::Drift> drift = ledger.Verify(
      [&] {
        return std::vector<Ledger::CellSum>{{orphan, 2}};
      },
      [&] { return std::vector<Charge*>{&ghost}; });
  ASSERT_EQ(drift.size(), 1u);
  EXPECT_EQ(drift[0].key, orphan);
  EXPECT_EQ(drift[0].ledger_usage, 0);
  EXPECT_EQ(drift[0].charged, 2);
  EXPECT_EQ(Usage(ledger, "gone"), 2);
}

// ---- Interned ids: the lock-free, allocation-free overloads. ----

// The IdAmounts overloads decide exactly as the ResourceList ones do.
TEST_F(LedgerTest, IdAmountsOverloadsMatchTheResourceListOnes) {
  struct Case {
    std::string name;
    ResourceList request;
    Mode mode;
  };
  const std::vector<Case> cases = {
      {"within nominal", Gpus(8), Mode::kWithinNominal},
      {"over nominal, staying within", Gpus(9), Mode::kWithinNominal},
      {"borrowing", Gpus(12), Mode::kBorrowing},
      {"over the cohort", Gpus(17), Mode::kBorrowing},
      {"ungoverned resource skipped", ResourceList{{kGpu, 2}, {"vpc.amazonaws.com/efa", 4}},
       Mode::kBorrowing},
      {"zero amount skipped", ResourceList{{kGpu, 0}, {"cpu", 1000}}, Mode::kBorrowing},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Ledger by_name(TwoTeams());
    Ledger by_id(TwoTeams());
    Ledger::Session names(by_name);
    Ledger::Session ids(by_id);
    auto a = names.Reserve(T("a"), F(kP5), c.request, c.mode);
    auto b = ids.Reserve(T("a"), F(kP5), ToIdAmounts(c.request), c.mode);
    ASSERT_EQ(Ok(a), Ok(b));
    if (Ok(a)) {
      EXPECT_EQ(std::get<Charge>(a).count, std::get<Charge>(b).count);
      EXPECT_EQ(std::get<Charge>(a).Amount(R(kGpu)), std::get<Charge>(b).Amount(R(kGpu)));
      EXPECT_EQ(std::get<Charge>(a).borrowing, std::get<Charge>(b).borrowing);
    } else {
      EXPECT_EQ(Why(a).Explain(), Why(b).Explain());
    }
    EXPECT_EQ(names.View(T("a"), F(kP5), R(kGpu)).usage, ids.View(T("a"), F(kP5), R(kGpu)).usage);
    Charge forced_by_name, forced_by_id;
    std::vector<CellKey> missing;
    ASSERT_TRUE(names.ForceCharge(T("b"), F(kP5), c.request, &forced_by_name, &missing));
    ASSERT_TRUE(ids.ForceCharge(T("b"), F(kP5), ToIdAmounts(c.request), &forced_by_id, &missing));
    EXPECT_EQ(forced_by_name.count, forced_by_id.count);
    EXPECT_EQ(forced_by_name.Amount(R(kGpu)), forced_by_id.Amount(R(kGpu)));
  }
}

TEST_F(LedgerTest, KnownIdAmountsDropsNamesNeverInternedWithoutInterningThem) {
  const std::string unknown = "example.com/never-interned-by-anyone";
  const IdAmounts ids = KnownIdAmounts(ResourceList{{kGpu, 2}, {unknown, 5}, {"cpu", 0}});
  const IdAmounts want = {{R("cpu"), 0}, {R(kGpu), 2}};  // list order (sorted by name)
  EXPECT_EQ(ids, want);
  EXPECT_EQ(ResourceNames().Find(unknown), std::nullopt);
}

// ---- Over-release: refused, counted, and the counters stay right. ----

// (usage, pool used) per "team/resource" cell.
std::map<std::string, std::pair<int64_t, int64_t>> Snapshot(const Ledger& ledger) {
  std::map<std::string, std::pair<int64_t, int64_t>> out;
  for (const Ledger::CellUsage& cell : ledger.Cells()) {
    out[TeamNames().Name(cell.key.team) + "/" + ResourceNames().Name(cell.key.resource)] = {
        cell.view.usage, cell.view.pool_used};
  }
  return out;
}

std::string KeyOf(const Charge& charge, uint8_t item) {
  return TeamNames().Name(charge.team) + "/" + ResourceNames().Name(charge.items[item].resource);
}

TEST_F(LedgerTest, AnOverReleaseIsRefusedCountedAndSubtractsNothing) {
  struct Setup {
    std::vector<Charge> kept;  // still held afterwards
    Charge bad;                // released once too often, or for too much
  };
  struct Case {
    std::string name;
    std::function<Setup(Ledger&)> setup;
    std::bitset<kMaxChargedResources> want_refused;
  };
  auto reserve = [this](Ledger& ledger, const ResourceList& request) {
    auto r = Reserve(ledger, "a", request);
    EXPECT_TRUE(Ok(r));
    return std::get<Charge>(r);
  };
  const std::vector<Case> cases = {
      {"released twice, guaranteed part (the old code took g to -3)",
       [&](Ledger& ledger) {
         Charge c = reserve(ledger, Gpus(3));
         Release(ledger, c);
         return Setup{{}, c};
       },
       0b1},
      {"released twice, pool charge too",
       [&](Ledger& ledger) {
         Charge c = reserve(ledger, Gpus(10));  // 4 guaranteed, 6 from the pool
         Release(ledger, c);
         return Setup{{}, c};
       },
       0b1},
      {"for more than the cell holds",
       [&](Ledger& ledger) {
         Charge c = reserve(ledger, Gpus(3));
         Charge bad = c;
         bad.items[0].amount = 5;
         return Setup{{c}, bad};
       },
       0b1},
      {"one resource short: only that one is refused",
       [&](Ledger& ledger) {
         Charge c = reserve(ledger, ResourceList{{kGpu, 2}, {"cpu", 1000}});
         Charge bad = c;  // items: cpu, then the GPU (names in order)
         bad.items[0].amount = 3000;
         Charge cpu_only = c;
         cpu_only.count = 1;
         return Setup{{cpu_only}, bad};
       },
       0b01},
      {"a charge the counters were rebuilt without",
       [&](Ledger& ledger) {
         Charge c = reserve(ledger, Gpus(2));
         (void)ledger.Rebuild([] { return std::vector<Charge*>{}; });
         return Setup{{}, c};
       },
       0b1},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Ledger ledger(PolicyBuilder()
                      .Team("a", "c")
                      .Quota(kP5, kGpu, 8, kUnlimited, 4)
                      .Quota(kP5, "cpu", 4000)
                      .Team("b", "c")
                      .Quota(kP5, kGpu, 8)
                      .Quota(kP5, "cpu", 4000)
                      .Build());
    Setup setup = c.setup(ledger);
    const auto before = Snapshot(ledger);
    const uint64_t over_before = ledger.over_releases();
    std::bitset<kMaxChargedResources> refused;
    {
      Ledger::Session s(ledger);
      EXPECT_FALSE(s.Release(setup.bad, &refused));
    }
    EXPECT_EQ(refused, c.want_refused);
    EXPECT_EQ(ledger.over_releases() - over_before, c.want_refused.count());
    const auto after = Snapshot(ledger);
    for (uint8_t i = 0; i < setup.bad.count; ++i) {
      const std::string key = KeyOf(setup.bad, i);
      if (refused[i]) {
        EXPECT_EQ(after.at(key), before.at(key)) << key << ": nothing subtracted";
      } else {
        EXPECT_EQ(after.at(key).first, before.at(key).first - setup.bad.items[i].amount) << key;
      }
    }
    for (const Ledger::CellUsage& cell : ledger.Cells()) {
      EXPECT_GE(cell.view.usage, 0);
      EXPECT_GE(cell.view.pool_used, 0);
      EXPECT_LE(cell.view.pool_used, cell.view.pool_capacity);
    }
    // Consistent: what is still held gives back cleanly, to zero everywhere.
    {
      Ledger::Session s(ledger);
      for (const Charge& kept : setup.kept) EXPECT_TRUE(s.Release(kept));
    }
    for (const Ledger::CellUsage& cell : ledger.Cells()) {
      EXPECT_EQ(cell.view.usage, 0) << TeamNames().Name(cell.key.team);
      EXPECT_EQ(cell.view.pool_used, 0);
    }
  }
}

TEST_F(LedgerTest, ANormalReleaseReturnsTrueAndCountsNothing) {
  Ledger ledger(TwoTeams());
  for (int64_t gpus : {1, 8, 12, 16}) {
    auto r = Reserve(ledger, "a", Gpus(gpus));
    ASSERT_TRUE(Ok(r)) << gpus;
    std::bitset<kMaxChargedResources> refused;
    Ledger::Session s(ledger);
    EXPECT_TRUE(s.Release(std::get<Charge>(r), &refused));
    EXPECT_TRUE(refused.none());
  }
  EXPECT_EQ(ledger.over_releases(), 0u);
  EXPECT_EQ(Usage(ledger, "a"), 0);
}

// ---- Sessions: nesting, and misuse that would wait for itself. ----

// Kueue's resource groups: cpu on an unlabelled "default" flavor, GPUs on an instance type. A pod
// on a p5 node is charged its GPUs on p5 and its cpu on default (a companion cell of (a, p5)),
// which pods on default nodes share; the charge survives a policy swap, and a team with no quota
// of its own on p5 gets no companions there.
TEST_F(LedgerTest, CompanionCellsChargeOtherResourceGroupsFlavors) {
  auto policy = [](int64_t cpu) {
    return PolicyBuilder()
        .AnyNodeFlavor("default")
        .Team("a")
        .Quota("default", "cpu", cpu)
        .Quota(kP5, kGpu, 8)
        .Team("b")
        .Quota("default", "cpu", 4)
        .Build();
  };
  Ledger ledger(policy(8000));
  const ResourceList pod{{kGpu, 2}, {"cpu", 6000}};
  auto on_p5 = Reserve(ledger, "a", pod);
  ASSERT_TRUE(Ok(on_p5));
  EXPECT_EQ(std::get<Charge>(on_p5).count, 2);
  EXPECT_EQ(Usage(ledger, "a", "cpu", "default"), 6000);
  EXPECT_EQ(Usage(ledger, "a", "cpu", kP5), 6000);  // the same cell, seen from p5
  EXPECT_EQ(Usage(ledger, "a", kGpu, kP5), 2);
  // A cpu pod on a default node shares the cpu quota; one more p5 pod does not fit its cpu.
  auto refused = Reserve(ledger, "a", ResourceList{{"cpu", 3000}}, Mode::kBorrowing, "default");
  ASSERT_FALSE(Ok(refused));
  EXPECT_EQ(FlavorNames().Name(Why(refused).flavor), "default");
  EXPECT_FALSE(Ok(Reserve(ledger, "a", pod)));
  EXPECT_EQ(Usage(ledger, "a", kGpu, kP5), 2);  // nothing of the refused pod stayed
  // The ledger's usage lists the companion as (a, p5, cpu), for preemption's view of p5.
  const Ledger::Usage usage = ledger.ReadUsage();
  ASSERT_EQ(usage.companions.size(), 1u);
  EXPECT_EQ(usage.companions[0].key, (CellKey{T("a"), F(kP5), R("cpu")}));
  EXPECT_EQ(usage.companions[0].view.usage, 6000);
  EXPECT_EQ(usage.companions[0].view.nominal, 8000);
  // b has cpu quota only: a pod on a p5 node is refused there, not charged on default.
  auto b_on_p5 = Reserve(ledger, "b", ResourceList{{"cpu", 1000}});
  ASSERT_FALSE(Ok(b_on_p5));
  EXPECT_EQ(Why(b_on_p5).kind, RefusalKind::kNoQuota);
  // A swap keeps the charge on the companion cell, under its new limit; releasing frees both.
  ledger.ApplyPolicy(policy(6000));
  EXPECT_EQ(Usage(ledger, "a", "cpu", "default"), 6000);
  EXPECT_FALSE(Ok(Reserve(ledger, "a", ResourceList{{"cpu", 1}}, Mode::kBorrowing, "default")));
  Release(ledger, on_p5);
  EXPECT_EQ(Usage(ledger, "a", "cpu", "default"), 0);
  EXPECT_EQ(Usage(ledger, "a", kGpu, kP5), 0);
  // ForceCharge (a pod found bound) charges the companion too.
  {
    Ledger::Session s(ledger);
    Charge charge;
    std::vector<CellKey> missing;
    ASSERT_TRUE(s.ForceCharge(T("a"), F(kP5), pod, &charge, &missing));
    EXPECT_EQ(charge.count, 2);
    EXPECT_TRUE(s.Release(charge));
  }
  EXPECT_EQ(ledger.over_releases(), 0u);
}

TEST_F(LedgerTest, NestedSessionsShareTheOuterGeneration) {
  Ledger ledger(TwoTeams());
  Ledger other(TwoTeams());
  Ledger::Session outer(ledger);
  Ledger::Session elsewhere(other);  // a session on another ledger in between
  Ledger::Session nested(ledger);
  EXPECT_EQ(nested.generation(), outer.generation());
  // Helpers that open sessions of their own work inside one.
  EXPECT_EQ(ledger.generation(), outer.generation());
  EXPECT_FALSE(ledger.Cells().empty());
  auto r = nested.Reserve(T("a"), F(kP5), Gpus(2), Mode::kBorrowing);
  ASSERT_TRUE(Ok(r));
  EXPECT_EQ(outer.View(T("a"), F(kP5), R(kGpu)).usage, 2);
  EXPECT_TRUE(outer.Release(std::get<Charge>(r)));
}

// The hazard: a thread holds a session, another starts a swap (which waits for that session), and
// the first opens a nested session. Waiting for the swap there would deadlock.
TEST_F(LedgerTest, NestedSessionDuringASwapJoinsTheHeldGeneration) {
  Ledger ledger(TwoTeams());
  RunBounded("nested session during a swap", [&] {
    std::thread swapper;
    uint64_t held = 0;
    {
      Ledger::Session outer(ledger);
      held = outer.generation();
      swapper = std::thread([&] { ledger.ApplyPolicy(TwoTeams(/*a_borrow=*/2)); });
      // The swap has closed the generation and now waits for `outer`.
      while (!ledger.swap_in_progress()) std::this_thread::yield();
      {
        Ledger::Session nested(ledger);
        EXPECT_EQ(nested.generation(), held);
        auto r = nested.Reserve(T("a"), F(kP5), Gpus(3), Mode::kBorrowing);
        ASSERT_TRUE(Ok(r));
        EXPECT_TRUE(nested.Release(std::get<Charge>(r)));
      }
      EXPECT_TRUE(ledger.swap_in_progress());  // still waiting for `outer`
    }
    swapper.join();
    EXPECT_FALSE(ledger.swap_in_progress());
    EXPECT_GT(ledger.generation(), held);
  });
}

// Sessions may end in any order; the swap still waits for (only) the ones still open.
TEST_F(LedgerTest, SessionsEndingOutOfOrderStillHoldOffTheSwap) {
  Ledger ledger(TwoTeams());
  RunBounded("sessions ending out of order", [&] {
    auto outer = std::make_unique<Ledger::Session>(ledger);
    auto nested = std::make_unique<Ledger::Session>(ledger);
    const uint64_t held = nested->generation();
    std::thread swapper([&] { ledger.ApplyPolicy(TwoTeams(/*a_borrow=*/2)); });
    while (!ledger.swap_in_progress()) std::this_thread::yield();
    outer.reset();  // the nested one still holds the generation
    auto r = nested->Reserve(T("a"), F(kP5), Gpus(1), Mode::kBorrowing);
    ASSERT_TRUE(Ok(r));
    EXPECT_TRUE(nested->Release(std::get<Charge>(r)));
    EXPECT_TRUE(ledger.swap_in_progress());
    nested.reset();
    swapper.join();
    EXPECT_GT(ledger.generation(), held);
    Ledger::Session fresh(ledger);  // the chain is empty again: a normal session
    EXPECT_EQ(fresh.generation(), ledger.generation());
  });
}

// A thread announces one ledger in its slot; a session it opens on a second ledger meanwhile is
// counted in that ledger instead. A swap of either waits for the session it concerns, and only
// for that one.
TEST_F(LedgerTest, ASwapWaitsForSessionsAnnouncedAndCountedAlike) {
  Ledger first(TwoTeams());
  Ledger second(TwoTeams());
  RunBounded("swaps of two ledgers held by one thread", [&] {
    const uint64_t first_held = first.generation();
    const uint64_t second_held = second.generation();
    auto announced = std::make_unique<Ledger::Session>(first);  // this thread's slot
    auto counted = std::make_unique<Ledger::Session>(second);   // counted in `second`
    std::thread swap_second([&] { second.ApplyPolicy(TwoTeams(/*a_borrow=*/2)); });
    while (!second.swap_in_progress()) std::this_thread::yield();
    std::thread swap_first([&] { first.ApplyPolicy(TwoTeams(/*a_borrow=*/2)); });
    while (!first.swap_in_progress()) std::this_thread::yield();
    // Both swaps wait, each for the session on its own ledger.
    auto r = counted->Reserve(T("a"), F(kP5), Gpus(1), Mode::kBorrowing);
    ASSERT_TRUE(Ok(r));
    EXPECT_TRUE(counted->Release(std::get<Charge>(r)));
    EXPECT_EQ(counted->generation(), second_held);
    EXPECT_TRUE(second.swap_in_progress());
    counted.reset();
    swap_second.join();  // ends although `first` is still held on this thread
    EXPECT_GT(second.generation(), second_held);
    EXPECT_TRUE(first.swap_in_progress());
    EXPECT_EQ(announced->generation(), first_held);
    announced.reset();
    swap_first.join();
    EXPECT_GT(first.generation(), first_held);
    // Sessions after the swaps, on both, from this thread and a new one.
    Ledger::Session again(second);
    EXPECT_EQ(again.generation(), second.generation());
    std::thread([&] {
      Ledger::Session s(first);
      EXPECT_EQ(s.generation(), first.generation());
    }).join();
  });
}

TEST(LedgerDeathTest, ASwapOnAThreadHoldingASessionAbortsInsteadOfWaitingForever) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        Ledger ledger(TwoTeams());
        Ledger::Session s(ledger);
        ledger.ApplyPolicy(TwoTeams());
      },
      "holds a Session on the same ledger");
  EXPECT_DEATH(
      {
        Ledger ledger(TwoTeams());
        (void)ledger.Rebuild([&] {
          Ledger::Session s(ledger);
          return std::vector<Charge*>{};
        });
      },
      "inside this ledger's own swap");
}

// ---- Property test: random reserve / release / reload against a reference model. ----

struct ModelCell {
  int64_t nominal, borrowing, lending;
};

class Model {
 public:
  std::map<std::string, ModelCell> limits;  // team → limits (one flavor, one resource)
  std::map<std::string, int64_t> usage;

  int64_t G(const std::string& t) const {
    const ModelCell& c = limits.at(t);
    return c.nominal - std::min(c.lending, c.nominal);
  }
  int64_t PoolCapacity() const {
    int64_t cap = 0;
    for (const auto& [t, c] : limits) cap = SaturatingAdd(cap, std::min(c.lending, c.nominal));
    return cap;
  }
  int64_t PoolUsed() const {
    int64_t used = 0;
    for (const auto& [t, u] : usage) {
      const int64_t g = limits.count(t) ? G(t) : 0;
      used += std::max<int64_t>(0, u - g);
    }
    return used;
  }
  bool Fits(const std::string& t, int64_t q, Mode mode) const {
    const ModelCell& c = limits.at(t);
    const int64_t u = usage.count(t) ? usage.at(t) : 0;
    const int64_t cap =
        mode == Mode::kWithinNominal ? c.nominal : SaturatingAdd(c.nominal, c.borrowing);
    if (SaturatingAdd(u, q) > cap) return false;
    const int64_t delta = std::max<int64_t>(0, u + q - G(t)) - std::max<int64_t>(0, u - G(t));
    return delta == 0 || PoolUsed() + delta <= PoolCapacity();
  }
};

PolicyPtr PolicyFrom(const Model& model) {
  PolicyBuilder builder;
  for (const auto& [team, c] : model.limits) {
    builder.Team(team, "c").Quota(kP5, kGpu, c.nominal, c.borrowing, c.lending);
  }
  return builder.Build();
}

TEST_F(LedgerTest, PropertyRandomSequencesMatchTheModel) {
  std::mt19937_64 rng(20261129);
  for (int round = 0; round < 40; ++round) {
    Model model;
    const int teams = 2 + static_cast<int>(rng() % 4);
    auto random_limits = [&] {
      ModelCell c;
      c.nominal = static_cast<int64_t>(rng() % 10);
      c.borrowing = rng() % 3 == 0 ? kUnlimited : static_cast<int64_t>(rng() % 6);
      c.lending = rng() % 3 == 0 ? kUnlimited : static_cast<int64_t>(rng() % 6);
      return c;
    };
    for (int t = 0; t < teams; ++t) model.limits["p" + std::to_string(t)] = random_limits();
    Ledger ledger(PolicyFrom(model));
    std::vector<std::pair<std::string, Charge>> live;
    for (int step = 0; step < 300; ++step) {
      const int op = static_cast<int>(rng() % 10);
      if (op < 6) {
        const std::string team = "p" + std::to_string(rng() % teams);
        const int64_t q = 1 + static_cast<int64_t>(rng() % 4);
        const Mode mode = rng() % 2 ? Mode::kBorrowing : Mode::kWithinNominal;
        const bool fits = model.Fits(team, q, mode);
        auto r = Reserve(ledger, team, Gpus(q), mode);
        ASSERT_EQ(Ok(r), fits) << "round " << round << " step " << step << " team " << team << " q "
                               << q;
        if (fits) {
          model.usage[team] += q;
          live.emplace_back(team, std::get<Charge>(r));
        }
      } else if (op < 9 && !live.empty()) {
        const size_t i = rng() % live.size();
        {
          Ledger::Session s(ledger);
          ASSERT_TRUE(s.Release(live[i].second));
        }
        model.usage[live[i].first] -= live[i].second.Amount(R(kGpu));
        live.erase(live.begin() + static_cast<long>(i));
      } else {
        for (auto& [team, c] : model.limits) {
          if (rng() % 2) c = random_limits();
        }
        ledger.ApplyPolicy(PolicyFrom(model));
      }
      // Usage equals the sum of live reservations, cell by cell.
      for (const auto& [team, c] : model.limits) {
        const int64_t expected = model.usage.count(team) ? model.usage.at(team) : 0;
        ASSERT_EQ(Usage(ledger, team), expected) << "round " << round << " step " << step;
      }
    }
    EXPECT_EQ(ledger.over_releases(), 0u);
  }
}

}  // namespace
}  // namespace taskgov::scheduler::ledger
