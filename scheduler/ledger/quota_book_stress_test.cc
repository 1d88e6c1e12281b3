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

// Filters of different pods never wait for each other: four threads assuming, confirming and
// releasing pods of their own while a fifth reconciles and counts find no claim taken.
TEST(QuotaBookStressTest, FiltersOfDifferentPodsNeverWaitForEachOther) {
  common::FakeClock clock;
  QuotaBook book(PolicyBuilder().Team("n0").Quota(kP5, kGpu, 1'000'000).Build(), &clock);
  const NameId flavor = FlavorNames().Intern(kP5);
  const NameId team = TeamNames().Intern("n0");
  std::atomic<bool> stop{false};
  RunBounded("filters of different pods", [&] {
    std::thread reader([&] {
      while (!stop.load(std::memory_order_relaxed)) {
        EXPECT_TRUE(book.Reconcile().empty());
        (void)book.CountByTeam();
        std::this_thread::yield();
      }
    });
    std::vector<std::thread> workers;
    for (int t = 0; t < 4; ++t) {
      workers.emplace_back([&, t] {
        for (int i = 0; i < 5000; ++i) {
          const std::string uid = "d" + std::to_string(t) + "-" + std::to_string(i % 64);
          const ResourceList request{{kGpu, 1}};
          switch (i % 4) {
            case 0:
            case 1:
              (void)book.Assume(uid, team, flavor, request, Ledger::Mode::kBorrowing, 60'000,
                                PodMeta{});
              break;
            case 2:
              (void)book.ConfirmBound(uid, team, flavor, request, PodMeta{});
              break;
            default:
              (void)book.Release(uid);
          }
        }
      });
    }
    for (std::thread& w : workers) w.join();
    stop.store(true);
    reader.join();
  });
  EXPECT_EQ(book.claim_waits(), 0u);
}

// Members of shared gangs taking shares, confirmed, released and detached from four threads while
// a fifth expires, compacts and reconciles: no drift, nothing lost, and once every member is gone
// and the holds have timed out the counters are back at zero.
TEST(QuotaBookStressTest, GangMembersRacingExpiryAndCompactionLoseNothing) {
  common::FakeClock clock;
  QuotaBook book(PolicyBuilder()
                     .Team("g0", "c")
                     .Quota(kP5, kGpu, 64, 64)
                     .Team("g1", "c")
                     .Quota(kP5, kGpu, 64, 64)
                     .Build(),
                 &clock);
  const NameId flavor = FlavorNames().Intern(kP5);
  std::atomic<bool> stop{false};
  std::atomic<int64_t> drifted{0};
  RunBounded("gang members racing expiry", [&] {
    std::thread sweeper([&] {
      while (!stop.load(std::memory_order_relaxed)) {
        (void)book.ExpireAssumed();
        drifted.fetch_add(static_cast<int64_t>(book.Reconcile().size()));
        (void)book.TakeExpiredGangs();
        std::this_thread::yield();
      }
    });
    std::vector<std::thread> workers;
    for (int t = 0; t < 4; ++t) {
      workers.emplace_back([&, t] {
        std::mt19937 rng(static_cast<uint32_t>(t * 7919 + 3));
        for (int i = 0; i < 3000; ++i) {
          const int g = static_cast<int>(rng() % 6);
          const std::string uid = "m" + std::to_string(t) + "-" + std::to_string(rng() % 16);
          const NameId team = TeamNames().Intern(g % 2 == 0 ? "g0" : "g1");
          const model::IdAmounts request = KnownIdAmounts(ResourceList{{kGpu, 1}});
          switch (rng() % 5) {
            case 0:
            case 1: {
              const std::string gang = "stress/gang-" + std::to_string(g);
              Ledger::Session session(book.ledger());
              (void)book.AssumeMember(session, uid, gang, 4, team, flavor, request,
                                      Ledger::Mode::kBorrowing, 60'000, 120'000, PodMeta{});
              break;
            }
            case 2:
              (void)book.ConfirmBound(uid, team, flavor, request, PodMeta{});
              break;
            case 3:
              book.DetachFromGang(uid, /*lost=*/rng() % 2 == 0);
              break;
            default:
              (void)book.Release(uid);
          }
        }
        for (int u = 0; u < 16; ++u)
          (void)book.Release("m" + std::to_string(t) + "-" + std::to_string(u));
      });
    }
    for (std::thread& w : workers) w.join();
    stop.store(true);
    sweeper.join();
  });
  clock.Advance(std::chrono::minutes(10));  // every hold left waits past its timeout
  (void)book.ExpireAssumed();
  EXPECT_EQ(drifted.load(), 0);
  EXPECT_TRUE(book.Reconcile().empty());
  EXPECT_EQ(book.size(), 0u);
  EXPECT_TRUE(book.CountByTeam().empty());
  EXPECT_EQ(book.ledger().over_releases(), 0u);
  for (const Ledger::CellUsage& cell : book.ledger().Cells()) {
    EXPECT_EQ(cell.view.usage, 0) << TeamNames().Name(cell.key.team);
  }
  for (int g = 0; g < 6; ++g) EXPECT_FALSE(book.FindGang("stress/gang-" + std::to_string(g)));
}

}  // namespace
}  // namespace taskgov::scheduler::ledger
