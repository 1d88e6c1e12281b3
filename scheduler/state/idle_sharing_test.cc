#include "scheduler/state/idle_sharing.h"

#include <gtest/gtest.h>

#include <string>
#include <variant>
#include <vector>

#include "scheduler/ledger/ledger.h"
#include "scheduler/testing/builders.h"

namespace taskgov::scheduler::state {
namespace {

using ledger::Charge;
using ledger::Ledger;
using ledger::Refusal;
using model::FlavorNames;
using model::PolicyPtr;
using model::ResourceList;
using model::TeamNames;
using testing::NodeBuilder;
using testing::PolicyBuilder;

constexpr char kP5[] = "ml.p5.48xlarge";
constexpr char kG5[] = "ml.g5.12xlarge";
constexpr char kGpu[] = "nvidia.com/gpu";

// a (LendAndBorrow, may borrow up to 24 more) and b (DontLend) in cohort "hp", 8 GPUs each on
// p5; a has 4 on g5.
PolicyBuilder Teams() {
  PolicyBuilder b;
  b.Team("a", "hp")
      .Quota(kP5, kGpu, 8, /*borrowing_limit=*/24)
      .Quota(kG5, kGpu, 4, /*borrowing_limit=*/8)
      .Team("b", "hp")
      .Quota(kP5, kGpu, 8, 0, 0)
      .Cohort("hp");
  return b;
}

model::Node P5(int i) {
  return NodeBuilder("p5-" + std::to_string(i)).InstanceType(kP5).Allocatable(kGpu, "8");
}
model::Node G5(int i) {
  return NodeBuilder("g5-" + std::to_string(i)).InstanceType(kG5).Allocatable(kGpu, "4");
}

// The GPUs cohort "hp" holds itself on `flavor` in `policy` (0: none).
int64_t OwnGpus(const model::Policy& policy, const std::string& flavor) {
  const model::Cohort* hp = policy.FindCohort("hp");
  if (hp == nullptr) return 0;
  for (const model::FlavorQuota& fq : hp->flavors) {
    if (fq.flavor != flavor) continue;
    for (const model::ResourceQuota& q : fq.resources) {
      if (q.resource == kGpu) return q.nominal;
    }
  }
  return 0;
}

class IdleSharingTest : public ::testing::Test {
 protected:
  IdleSharingTest()
      : sharing_(
            &nodes_, &clock_, [this](const PolicyPtr& p) { applied_.push_back(p); },
            IdleSharing::Options{/*min_gap_ms=*/10'000}) {}

  void Add(const model::Node& node) { nodes_.Upsert(node, *policy_); }

  common::FakeClock clock_;
  PolicyPtr policy_ = Teams().IdleResourceSharing("hp").Build();
  NodeCache nodes_;
  std::vector<PolicyPtr> applied_;
  IdleSharing sharing_;
};

// 4 p5 nodes (32 GPUs) and 2 g5 (8): p5 has 32 − 16 unallocated, g5 8 − 4. Nodes joining,
// leaving and being cordoned change it — one application per change, after the gap — and a node
// reported again unchanged (a heartbeat) applies nothing.
TEST_F(IdleSharingTest, FollowsTheNodesOfEachInstanceTypeAndAppliesOnlyOnChange) {
  for (int i = 0; i < 4; ++i) Add(P5(i));
  for (int i = 0; i < 2; ++i) Add(G5(i));
  sharing_.SetPolicy(policy_);
  ASSERT_EQ(applied_.size(), 1u);
  EXPECT_EQ(OwnGpus(*applied_.back(), kP5), 16);
  EXPECT_EQ(OwnGpus(*applied_.back(), kG5), 4);
  EXPECT_EQ(sharing_.effective(), applied_.back());

  EXPECT_FALSE(sharing_.Refresh());
  Add(P5(0));  // unchanged
  EXPECT_FALSE(sharing_.Refresh());
  EXPECT_EQ(applied_.size(), 1u);

  Add(P5(4));  // the first change after the policy applies at once
  EXPECT_TRUE(sharing_.Refresh());
  EXPECT_EQ(OwnGpus(*applied_.back(), kP5), 24);

  ASSERT_TRUE(nodes_.Erase("p5-4"));
  ASSERT_TRUE(nodes_.Erase("g5-1"));
  EXPECT_FALSE(sharing_.Refresh());  // within the gap: later
  clock_.Advance(10'000);
  EXPECT_TRUE(sharing_.Refresh());
  EXPECT_EQ(applied_.size(), 3u);
  EXPECT_EQ(OwnGpus(*applied_.back(), kP5), 16);
  EXPECT_EQ(OwnGpus(*applied_.back(), kG5), 0);  // 4 GPUs, all a's

  // A cordoned node offers nothing; with 16 GPUs left on p5 the teams' 16 take them all.
  model::Node cordoned = P5(3);
  cordoned.unschedulable = true;
  Add(cordoned);
  ASSERT_TRUE(nodes_.Erase("p5-2"));
  clock_.Advance(10'000);
  EXPECT_TRUE(sharing_.Refresh());
  EXPECT_EQ(OwnGpus(*applied_.back(), kP5), 0);
  EXPECT_TRUE(applied_.back()->idle_resource_sharing.unallocated.empty());
  EXPECT_EQ(applied_.back(), policy_);  // nothing added: the configured policy itself

  // Another node of a type no team has quota on changes nothing the teams could borrow.
  Add(NodeBuilder("m5-0").InstanceType("ml.m5.2xlarge").Allocatable("cpu", "8"));
  clock_.Advance(10'000);
  EXPECT_FALSE(sharing_.Refresh());
  EXPECT_EQ(applied_.size(), 4u);
}

TEST_F(IdleSharingTest, APolicyWithoutSharingIsAppliedAsIsAndNodesChangeNothing) {
  for (int i = 0; i < 4; ++i) Add(P5(i));
  const PolicyPtr off = Teams().Build();
  sharing_.SetPolicy(off);
  ASSERT_EQ(applied_.size(), 1u);
  EXPECT_EQ(applied_.back(), off);
  Add(P5(4));
  clock_.Advance(10'000);
  EXPECT_FALSE(sharing_.Refresh());
  // Enabled by a reload: applied at once, with the 40 − 16 GPUs the nodes offer beyond quota.
  sharing_.SetPolicy(policy_);
  ASSERT_EQ(applied_.size(), 2u);
  EXPECT_EQ(OwnGpus(*applied_.back(), kP5), 24);
}

// The ledger keeps usage across the applications: a borrows the unallocated capacity; b, which
// may not borrow, stays within its nominal quota; when nodes go, the pool holds more than its
// new capacity and admits nothing more until usage falls back under it — no release is refused.
TEST_F(IdleSharingTest, ShrinkingKeepsUsageAndAdmitsNothingMoreUntilUsageFallsBack) {
  for (int i = 0; i < 4; ++i) Add(P5(i));
  Ledger ledger(policy_);
  IdleSharing sharing(
      &nodes_, &clock_, [&](const PolicyPtr& p) { ledger.ApplyPolicy(p); },
      IdleSharing::Options{/*min_gap_ms=*/0});
  sharing.SetPolicy(policy_);
  const model::NameId p5 = FlavorNames().Intern(kP5);
  auto reserve = [&](const std::string& team, int64_t gpus) {
    Ledger::Session s(ledger);
    return s.Reserve(TeamNames().Intern(team), p5, ResourceList{{kGpu, gpus}},
                     Ledger::Mode::kBorrowing);
  };
  auto pool = [&] {
    Ledger::Session s(ledger);
    for (const Ledger::PoolUsage& p : s.Pools()) {
      if (p.cohort == "hp" && p.flavor == p5) return p;
    }
    return Ledger::PoolUsage{};
  };
  // Pool: a's 8 + b's 0 + 16 unallocated. Without sharing a would stop at its own 8.
  EXPECT_EQ(pool().capacity, 24);
  auto first = reserve("a", 16);
  auto second = reserve("a", 8);
  ASSERT_TRUE(std::holds_alternative<Charge>(first));
  ASSERT_TRUE(std::holds_alternative<Charge>(second));
  auto more = reserve("a", 1);
  ASSERT_TRUE(std::holds_alternative<Refusal>(more));
  EXPECT_EQ(std::get<Refusal>(more).kind, ledger::RefusalKind::kPool);
  ASSERT_TRUE(std::holds_alternative<Charge>(reserve("b", 8)));  // its guaranteed 8
  auto b_more = reserve("b", 1);
  ASSERT_TRUE(std::holds_alternative<Refusal>(b_more));
  EXPECT_EQ(std::get<Refusal>(b_more).kind, ledger::RefusalKind::kBorrowingLimit);

  // Two nodes go: nothing is unallocated any more.
  ASSERT_TRUE(nodes_.Erase("p5-3"));
  ASSERT_TRUE(nodes_.Erase("p5-2"));
  ASSERT_TRUE(sharing.Refresh());
  EXPECT_EQ(pool().capacity, 8);
  EXPECT_EQ(pool().used, 24);
  ASSERT_TRUE(std::holds_alternative<Refusal>(reserve("a", 1)));
  {
    Ledger::Session s(ledger);
    EXPECT_TRUE(s.Release(std::get<Charge>(first)));
    EXPECT_EQ(s.View(TeamNames().Intern("a"), p5, model::ResourceNames().Intern(kGpu)).usage, 8);
  }
  EXPECT_EQ(pool().used, 8);
  ASSERT_TRUE(std::holds_alternative<Refusal>(reserve("a", 1)));  // 8 of 8
  {
    Ledger::Session s(ledger);
    EXPECT_TRUE(s.Release(std::get<Charge>(second)));
  }
  ASSERT_TRUE(std::holds_alternative<Charge>(reserve("a", 8)));
  EXPECT_EQ(ledger.over_releases(), 0u);
}

}  // namespace
}  // namespace taskgov::scheduler::state
