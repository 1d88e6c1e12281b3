// QuotaBook::Reconcile racing filters, confirmations and releases from several threads: the
// check runs while no session is open, so it never reports drift that is not there, never loses
// or double-counts a charge, and the counters end at zero. Runs under TSan in CI (tag
// "concurrency").

#include <gtest/gtest.h>

#include <atomic>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "scheduler/ledger/quota_book.h"
#include "scheduler/ledger/run_bounded_for_testing.h"
#include "scheduler/testing/builders.h"

namespace taskgov::scheduler::ledger {
namespace {

using model::FlavorNames;
using model::NameId;
using model::ResourceList;
using model::ResourceNames;
using model::TeamNames;
using scheduler::testing::PolicyBuilder;
using testing::RunBounded;

constexpr char kP5[] = "ml.p5.48xlarge";
constexpr char kGpu[] = "nvidia.com/gpu";

TEST(QuotaBookStressTest, ReconcileRacingTrafficFindsNoDriftAndUsageEndsAtZero) {
  common::FakeClock clock;
  QuotaBook book(PolicyBuilder()
                     .Team("s0", "c")
                     .Quota(kP5, kGpu, 16, 8)
                     .Quota(kP5, "cpu", 64000)
                     .Team("s1", "c")
                     .Quota(kP5, kGpu, 8, 16)
                     .Quota(kP5, "cpu", 64000)
                     .Build(),
                 &clock);
  const NameId flavor = FlavorNames().Intern(kP5);
  std::atomic<bool> stop{false};
  std::atomic<int64_t> drifted{0};
  std::atomic<int64_t> checks{0};
  RunBounded("reconcile racing traffic", [&] {
    std::thread checker([&] {
      while (!stop.load(std::memory_order_relaxed)) {
        drifted.fetch_add(static_cast<int64_t>(book.Reconcile().size()));
        checks.fetch_add(1);
        std::this_thread::yield();
      }
    });
    constexpr int kThreads = 4;
    constexpr int kOps = 4000;
    std::vector<std::thread> workers;
    for (int t = 0; t < kThreads; ++t) {
      workers.emplace_back([&, t] {
        std::mt19937 rng(static_cast<uint32_t>(t * 104729 + 1));
        for (int i = 0; i < kOps; ++i) {
          const std::string uid = "w" + std::to_string(t) + "-" + std::to_string(rng() % 24);
          const NameId team = TeamNames().Intern("s" + std::to_string(rng() % 2));
          const ResourceList request{{kGpu, 1 + static_cast<int64_t>(rng() % 3)},
                                     {"cpu", 1000 * (1 + static_cast<int64_t>(rng() % 8))}};
          switch (rng() % 3) {
            case 0:
              (void)book.Assume(uid, team, flavor, request, Ledger::Mode::kBorrowing, 60'000,
                                PodMeta{});
              break;
            case 1:
              (void)book.ConfirmBound(uid, team, flavor, request, PodMeta{});
              break;
            default:
              (void)book.Release(uid);
          }
        }
        for (int u = 0; u < 24; ++u)
          (void)book.Release("w" + std::to_string(t) + "-" + std::to_string(u));
      });
    }
    for (std::thread& w : workers) w.join();
    stop.store(true);
    checker.join();
  });
  EXPECT_EQ(drifted.load(), 0);
  EXPECT_GT(checks.load(), 0);
  EXPECT_EQ(book.size(), 0u);
  EXPECT_EQ(book.ledger().over_releases(), 0u);
  for (const Ledger::CellUsage& cell : book.ledger().Cells()) {
    EXPECT_EQ(cell.view.usage, 0) << TeamNames().Name(cell.key.team) << " "
                                  << ResourceNames().Name(cell.key.resource);
  }
}

}  // namespace
}  // namespace taskgov::scheduler::ledger
