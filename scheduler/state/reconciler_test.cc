#include "scheduler/state/reconciler.h"

#include <gtest/gtest.h>

#include <chrono>

#include "scheduler/testing/builders.h"

namespace taskgov::scheduler::state {
namespace {

using ledger::Charge;
using ledger::Ledger;
using ledger::PodMeta;
using ledger::QuotaBook;
using model::FlavorNames;
using model::NameId;
using model::ResourceList;
using model::ResourceNames;
using model::TeamNames;
using testing::NodeBuilder;
using testing::PodBuilder;
using testing::PolicyBuilder;

constexpr char kP5[] = "ml.p5.48xlarge";
constexpr char kGpu[] = "nvidia.com/gpu";
constexpr int64_t kSecond = 1'000;

NameId TeamA() { return TeamNames().Intern("team-a"); }
NameId P5() { return FlavorNames().Intern(kP5); }
ResourceList Gpus(int64_t n) { return ResourceList{{kGpu, n}}; }

// team-a has 8 GPUs on one synced 8-GPU node; reconcile every 60 s, orphans after 10 s.
class ReconcilerTest : public ::testing::Test {
 protected:
  ReconcilerTest()
      : book_(PolicyBuilder().Team("team-a").Quota(kP5, kGpu, 8).Build(), &clock_),
        cluster_(&book_, &clock_, ClusterState::Options{}),
        reconciler_(&book_, &cluster_, &clock_, Options()) {
    cluster_.SetPolicy(book_.ledger().policy());
    cluster_.OnSynced(ObjectKind::kPod);
    cluster_.OnSynced(ObjectKind::kNode);
    cluster_.OnNodeUpsert(NodeBuilder("p5-0").InstanceType(kP5).Allocatable(kGpu, "8"));
  }
  static Reconciler::Options Options() {
    Reconciler::Options options;
    options.reconcile_period = std::chrono::seconds(60);
    options.orphan_reservation_age = std::chrono::seconds(10);
    return options;
  }
  int64_t Usage() {
    Ledger::Session session(book_.ledger());
    return session.View(TeamA(), P5(), ResourceNames().Intern(kGpu)).usage;
  }

  common::FakeClock clock_;
  QuotaBook book_;
  ClusterState cluster_;
  Reconciler reconciler_;
};

TEST_F(ReconcilerTest, ExpiresAssumedReservationsOnEveryTick) {
  ASSERT_TRUE(std::holds_alternative<Charge>(book_.Assume(
      "a-1", TeamA(), P5(), Gpus(2), Ledger::Mode::kWithinNominal, 30 * kSecond, PodMeta{})));
  reconciler_.Tick();
  EXPECT_TRUE(book_.Find("a-1").has_value());
  EXPECT_EQ(reconciler_.repairs().expired, 0u);

  clock_.Advance(30 * kSecond);
  reconciler_.Tick();
  EXPECT_FALSE(book_.Find("a-1").has_value());
  EXPECT_EQ(reconciler_.repairs().expired, 1u);
  EXPECT_EQ(Usage(), 0);
  EXPECT_EQ(reconciler_.repairs().drift_cells, 0u);  // expiry is not a repair of the ledger
}

TEST_F(ReconcilerTest, ReleasesOrphanReservationsOncePerPeriod) {
  // Bound by us, but its pod never shows up running.
  book_.ConfirmBound("ghost", TeamA(), P5(), Gpus(2), PodMeta{});
  clock_.Advance(59 * kSecond);
  reconciler_.Tick();
  EXPECT_TRUE(book_.Find("ghost").has_value()) << "reconciled before the period passed";
  EXPECT_EQ(reconciler_.repairs().orphan_released, 0u);

  clock_.Advance(1 * kSecond);
  reconciler_.Tick();
  EXPECT_FALSE(book_.Find("ghost").has_value());
  EXPECT_EQ(reconciler_.repairs().orphan_released, 1u);
  EXPECT_EQ(Usage(), 0);
}

TEST_F(ReconcilerTest, ChargesRunningPodsThatHoldNoReservation) {
  cluster_.OnPodUpsert(PodBuilder("a-run").Namespace("ns-team-a").Gpus(4).OnNode("p5-0"));
  ASSERT_TRUE(book_.Find("uid-a-run").has_value());
  ASSERT_TRUE(book_.Release("uid-a-run"));  // lost, as if by a bug
  clock_.Advance(60 * kSecond);
  reconciler_.Tick();
  EXPECT_TRUE(book_.Find("uid-a-run").has_value());
  EXPECT_EQ(reconciler_.repairs().uncharged_charged, 1u);
  EXPECT_EQ(Usage(), 4);
}

TEST_F(ReconcilerTest, RepairsLedgerCountersThatDisagreeWithTheReservations) {
  clock_.Advance(60 * kSecond);
  reconciler_.Tick();  // the first reconcile: nothing to repair
  EXPECT_EQ(reconciler_.repairs().drift_cells, 0u);
  {
    // Usage charged to the ledger without a reservation behind it.
    Ledger::Session session(book_.ledger());
    ASSERT_TRUE(std::holds_alternative<Charge>(
        session.Reserve(TeamA(), P5(), Gpus(3), Ledger::Mode::kWithinNominal)));
  }
  ASSERT_EQ(Usage(), 3);
  clock_.Advance(30 * kSecond);
  reconciler_.Tick();
  EXPECT_EQ(Usage(), 3) << "reconciled again before the period passed";
  clock_.Advance(30 * kSecond);
  reconciler_.Tick();
  EXPECT_EQ(Usage(), 0);
  const Reconciler::Repairs repairs = reconciler_.repairs();
  EXPECT_EQ(repairs.drift_cells, 1u);
  EXPECT_EQ(repairs.orphan_released, 0u);
  EXPECT_EQ(repairs.uncharged_charged, 0u);
  EXPECT_EQ(repairs.expired, 0u);
}

}  // namespace
}  // namespace taskgov::scheduler::state
