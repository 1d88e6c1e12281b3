// Many threads reserving and releasing against tight limits, with policy swaps in between: no
// limit is exceeded at any observed instant, no legitimate release is refused, and usage ends at
// zero. Also nested sessions racing swaps, and over-releases racing legitimate traffic. Runs
// under TSan in CI (tag "concurrency").

#include <gtest/gtest.h>
#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <bitset>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <optional>
#include <random>
#include <string_view>
#include <thread>
#include <vector>

#include "scheduler/ledger/ledger.h"
#include "scheduler/ledger/run_bounded_for_testing.h"
#include "scheduler/testing/builders.h"

namespace taskgov::scheduler::ledger {
namespace {

using model::FlavorNames;
using model::kUnlimited;
using model::NameId;
using model::PolicyPtr;
using model::ResourceList;
using model::ResourceNames;
using model::TeamNames;
using scheduler::testing::PolicyBuilder;
using testing::RunBounded;

constexpr char kP5[] = "ml.p5.48xlarge";
constexpr char kGpu[] = "nvidia.com/gpu";

PolicyPtr StressPolicy() {
  return PolicyBuilder()
      .Team("s0", "c")
      .Quota(kP5, kGpu, 8, 4)
      .Quota(kP5, "cpu", 64000, 16000)
      .Team("s1", "c")
      .Quota(kP5, kGpu, 8, 8, 4)
      .Quota(kP5, "cpu", 64000)
      .Team("s2", "c")
      .Quota(kP5, kGpu, 4, 0)
      .Quota(kP5, "cpu", 32000, 0)
      .Team("s3", "c")
      .Quota(kP5, kGpu, 0)
      .Quota(kP5, "cpu", 0)
      .Build();
}

// A tree of cohorts over the same teams (Kueue Cohort parentName), with a cohort's own quota, a
// lending limit and a borrowing limit:
//   ROOT (own 2 GPUs) ── LEFT (own 4 GPUs, lends at most 2) ── s0, s1
//                     └─ RIGHT (borrows at most 6 GPUs, 8 cores) ── s2, s3
PolicyPtr StressTreePolicy() {
  return PolicyBuilder()
      .Cohort("ROOT")
      .CohortQuota("ROOT", kP5, kGpu, 2)
      .Cohort("LEFT", "ROOT")
      .CohortQuota("LEFT", kP5, kGpu, 4, kUnlimited, /*lending_limit=*/2)
      .Cohort("RIGHT", "ROOT")
      .CohortQuota("RIGHT", kP5, kGpu, 0, /*borrowing_limit=*/6)
      .CohortQuota("RIGHT", kP5, "cpu", 0, /*borrowing_limit=*/8000)
      .Team("s0", "LEFT")
      .Quota(kP5, kGpu, 8, 4)
      .Quota(kP5, "cpu", 64000, 16000)
      .Team("s1", "LEFT")
      .Quota(kP5, kGpu, 8, 8, 4)
      .Quota(kP5, "cpu", 64000)
      .Team("s2", "RIGHT")
      .Quota(kP5, kGpu, 4, 0)
      .Quota(kP5, "cpu", 32000, 0)
      .Team("s3", "RIGHT")
      .Quota(kP5, kGpu, 0)
      .Quota(kP5, "cpu", 0)
      .Build();
}

// Counts what breaks a limit in one read of every cell and pool: a cell above its ceiling or
// below zero, a root pool above its subtree quota, a pool storing more in its parent than its
// borrowing limit allows.
int64_t Violations(const Ledger& ledger) {
  int64_t violations = 0;
  for (const Ledger::CellUsage& cell : ledger.Cells()) {
    const CellView& v = cell.view;
    const int64_t ceiling =
        v.borrowing_limit == kUnlimited ? kUnlimited : v.nominal + v.borrowing_limit;
    violations += v.usage > ceiling || v.usage < 0;
  }
  for (const Ledger::PoolUsage& pool : ledger.Pools()) {
    violations += pool.parent < 0 && pool.used > pool.capacity;
    violations += pool.in_parent > pool.in_parent_limit || pool.in_parent < 0;
  }
  return violations;
}

// Threads reserve and release against `policy()`'s tight limits while a monitor reads every cell
// and pool (Violations) and a reloader swaps generations with the same limits.
void StressReservations(const std::function<PolicyPtr()>& policy) {
  Ledger ledger(policy());
  const NameId flavor = FlavorNames().Intern(kP5);
  std::atomic<bool> stop{false};
  std::atomic<int64_t> violations{0};
  std::atomic<int64_t> admitted{0};
  std::thread monitor([&] {
    while (!stop.load(std::memory_order_relaxed)) violations.fetch_add(Violations(ledger));
  });
  std::thread reloader([&] {
    for (int i = 0; i < 200 && !stop.load(std::memory_order_relaxed); ++i) {
      ledger.ApplyPolicy(policy());
      std::this_thread::yield();
    }
  });
  constexpr int kThreads = 6;
  constexpr int kOps = 20000;
  std::vector<std::thread> workers;
  for (int t = 0; t < kThreads; ++t) {
    workers.emplace_back([&, t] {
      std::mt19937 rng(static_cast<uint32_t>(t * 7919));
      std::vector<Charge> held;
      for (int i = 0; i < kOps; ++i) {
        if (held.size() < 4 && rng() % 3 != 0) {
          const NameId team = TeamNames().Intern("s" + std::to_string(rng() % 4));
          ResourceList request{{kGpu, 1 + static_cast<int64_t>(rng() % 3)},
                               {"cpu", 1000 * (1 + static_cast<int64_t>(rng() % 16))}};
          Ledger::Session s(ledger);
          auto r = s.Reserve(team, flavor, request,
                             rng() % 2 ? Ledger::Mode::kBorrowing : Ledger::Mode::kWithinNominal);
          if (std::holds_alternative<Charge>(r)) {
            held.push_back(std::get<Charge>(r));
            admitted.fetch_add(1, std::memory_order_relaxed);
          }
        } else if (!held.empty()) {
          const size_t k = rng() % held.size();
          Ledger::Session s(ledger);
          EXPECT_TRUE(s.Release(held[k]));
          held.erase(held.begin() + static_cast<long>(k));
        }
      }
      Ledger::Session s(ledger);
      for (const Charge& c : held) EXPECT_TRUE(s.Release(c));
    });
  }
  for (auto& w : workers) w.join();
  stop.store(true);
  monitor.join();
  reloader.join();

  EXPECT_EQ(violations.load(), 0);
  EXPECT_GT(admitted.load(), 1000);
  EXPECT_EQ(ledger.over_releases(), 0u);  // the release check never refuses a legitimate release
  for (const Ledger::CellUsage& cell : ledger.Cells()) {
    EXPECT_EQ(cell.view.usage, 0) << TeamNames().Name(cell.key.team) << " "
                                  << ResourceNames().Name(cell.key.resource);
  }
  for (const Ledger::PoolUsage& pool : ledger.Pools()) {
    EXPECT_EQ(pool.used, 0) << pool.cohort << " " << ResourceNames().Name(pool.resource);
  }
}

TEST(LedgerStressTest, NoLimitIsEverExceededAndUsageEndsAtZero) {
  StressReservations(StressPolicy);
}

TEST(LedgerStressTest, NoLimitOfTheCohortTreeIsEverExceededAndUsageEndsAtZero) {
  StressReservations(StressTreePolicy);
}

// Sessions nested on one thread while another thread swaps generations over and over: nobody
// deadlocks, the nested session always sees the outer one's generation, and usage ends at zero.
TEST(LedgerStressTest, NestedSessionsRacingSwapsNeverDeadlock) {
  Ledger ledger(StressPolicy());
  const NameId flavor = FlavorNames().Intern(kP5);
  const uint64_t first_generation = ledger.generation();
  RunBounded(
      "nested sessions racing swaps",
      [&] {
        // The workers run until the reloader has swapped 100 times, so the two always overlap.
        std::atomic<bool> reloaded{false};
        std::thread reloader([&] {
          for (int i = 0; i < 100; ++i) ledger.ApplyPolicy(StressPolicy());
          reloaded.store(true, std::memory_order_relaxed);
        });
        std::atomic<int64_t> mismatched{0};
        std::vector<std::thread> workers;
        for (int t = 0; t < 3; ++t) {
          workers.emplace_back([&, t] {
            const NameId team = TeamNames().Intern("s" + std::to_string(t));
            const ResourceList one{{kGpu, 1}};
            for (int i = 0; i < 200 || !reloaded.load(std::memory_order_relaxed); ++i) {
              Ledger::Session outer(ledger);
              auto first = outer.Reserve(team, flavor, one, Ledger::Mode::kBorrowing);
              {
                Ledger::Session nested(ledger);
                if (nested.generation() != outer.generation()) mismatched.fetch_add(1);
                auto second = nested.Reserve(team, flavor, one, Ledger::Mode::kBorrowing);
                if (const Charge* c = std::get_if<Charge>(&first)) {
                  EXPECT_TRUE(nested.Release(*c));  // given back by the nested session
                }
                if (const Charge* c = std::get_if<Charge>(&second)) {
                  EXPECT_TRUE(outer.Release(*c));  // given back by the outer session
                }
              }
            }
          });
        }
        for (std::thread& w : workers) w.join();
        reloader.join();
        EXPECT_EQ(mismatched.load(), 0);
      },
      std::chrono::seconds(240));
  EXPECT_EQ(ledger.generation(), first_generation + 100);
  EXPECT_EQ(ledger.over_releases(), 0u);
  for (const Ledger::CellUsage& cell : ledger.Cells()) EXPECT_EQ(cell.view.usage, 0);
}

// The fence sessions announce themselves with: asymmetric exactly when the kernel offers
// membarrier's private expedited command and the environment does not ask for the seq_cst store
// — each stress test target runs one of the two.
TEST(LedgerStressTest, SessionsUseTheFenceTheEnvironmentChose) {
  const char* symmetric = std::getenv("TASKGOV_LEDGER_SYMMETRIC_FENCE");
  const bool asked_symmetric = symmetric != nullptr && std::string_view(symmetric) == "1";
  const long commands = syscall(__NR_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
  const bool available = commands > 0 && (commands & MEMBARRIER_CMD_PRIVATE_EXPEDITED) != 0;
  RecordProperty("asymmetric_fence", Ledger::UsesAsymmetricFence() ? "yes" : "no");
  EXPECT_EQ(Ledger::UsesAsymmetricFence(), available && !asked_symmetric)
      << "membarrier available: " << available << ", symmetric asked: " << asked_symmetric;
}

// Threads that come and go (their session slots reused by later threads) while both of two
// ledgers swap generations over and over. Each thread opens sessions on `second` alone (announced
// in its slot) and on `first` then `second` (the inner one counted in `second`; always in that
// order, see "Two ledgers" in ledger.h): no deadlock, and no update made inside a session is
// lost to a swap's copy (usage ends at zero on both, with no over-release).
TEST(LedgerStressTest, ThreadsComingAndGoingOnTwoLedgersRacingSwaps) {
  Ledger first(StressPolicy());
  Ledger second(StressPolicy());
  const NameId flavor = FlavorNames().Intern(kP5);
  const ResourceList one{{kGpu, 1}};
  auto reserve_release = [&](Ledger::Session& session, NameId team) {
    auto r = session.Reserve(team, flavor, one, Ledger::Mode::kBorrowing);
    std::this_thread::yield();
    if (const Charge* c = std::get_if<Charge>(&r)) {
      EXPECT_TRUE(session.Release(*c));
    }
  };
  RunBounded(
      "two ledgers racing swaps",
      [&] {
        std::atomic<bool> done{false};
        auto reload = [&](Ledger& ledger) {
          return std::thread([&] {
            while (!done.load(std::memory_order_relaxed)) ledger.ApplyPolicy(StressPolicy());
          });
        };
        std::thread reload_first = reload(first);
        std::thread reload_second = reload(second);
        for (int wave = 0; wave < 8; ++wave) {
          std::vector<std::thread> workers;
          for (int t = 0; t < 3; ++t) {
            workers.emplace_back([&, t] {
              const NameId team = TeamNames().Intern("s" + std::to_string(t));
              for (int i = 0; i < 25; ++i) {
                {
                  Ledger::Session alone(second);
                  reserve_release(alone, team);
                }
                Ledger::Session outer(first);
                auto held = outer.Reserve(team, flavor, one, Ledger::Mode::kBorrowing);
                {
                  Ledger::Session inner(second);
                  reserve_release(inner, team);
                }
                if (const Charge* c = std::get_if<Charge>(&held)) {
                  EXPECT_TRUE(outer.Release(*c));
                }
              }
            });
          }
          for (std::thread& w : workers) w.join();
        }
        done.store(true, std::memory_order_relaxed);
        reload_first.join();
        reload_second.join();
      },
      std::chrono::seconds(240));
  for (const Ledger* ledger : {&first, &second}) {
    EXPECT_EQ(ledger->over_releases(), 0u);
    for (const Ledger::CellUsage& cell : ledger->Cells()) EXPECT_EQ(cell.view.usage, 0);
  }
}

// Drift under load: some threads release charges twice (a bug elsewhere) while others reserve and
// release normally. No counter ever goes below zero, no limit is exceeded, and every refusal is
// counted.
TEST(LedgerStressTest, OverReleasesRacingTrafficNeverBreakTheCounters) {
  Ledger ledger(StressPolicy());
  const NameId flavor = FlavorNames().Intern(kP5);
  std::atomic<bool> stop{false};
  std::atomic<int64_t> violations{0};
  std::atomic<uint64_t> refused_items{0};
  std::thread monitor([&] {
    while (!stop.load(std::memory_order_relaxed)) {
      for (const Ledger::CellUsage& cell : ledger.Cells()) {
        const CellView& v = cell.view;
        const int64_t ceiling =
            v.borrowing_limit == kUnlimited ? kUnlimited : v.nominal + v.borrowing_limit;
        if (v.usage < 0 || v.pool_used < 0 || v.usage > ceiling || v.pool_used > v.pool_capacity) {
          violations.fetch_add(1);
        }
      }
    }
  });
  std::vector<std::thread> workers;
  for (int t = 0; t < 4; ++t) {
    workers.emplace_back([&, t] {
      std::mt19937 rng(static_cast<uint32_t>(t * 104729));
      const bool buggy = t % 2 == 0;
      for (int i = 0; i < 5000; ++i) {
        const NameId team = TeamNames().Intern("s" + std::to_string(rng() % 3));
        ResourceList request{{kGpu, 1 + static_cast<int64_t>(rng() % 3)},
                             {"cpu", 1000 * (1 + static_cast<int64_t>(rng() % 8))}};
        Ledger::Session s(ledger);
        auto r = s.Reserve(team, flavor, request, Ledger::Mode::kBorrowing);
        const Charge* c = std::get_if<Charge>(&r);
        if (c == nullptr) continue;
        std::bitset<kMaxChargedResources> refused;
        if (!s.Release(*c, &refused)) refused_items.fetch_add(refused.count());
        if (buggy && rng() % 4 == 0 && !s.Release(*c, &refused)) {
          refused_items.fetch_add(refused.count());
        }
      }
    });
  }
  for (std::thread& w : workers) w.join();
  stop.store(true);
  monitor.join();
  EXPECT_EQ(violations.load(), 0);
  EXPECT_GT(refused_items.load(), 0u);  // double releases of an emptied cell were refused
  // Every refusal a caller saw is counted; so are refused give-backs inside Reserve (a failed
  // reservation rolling back what a double release had already taken from the cell).
  EXPECT_GE(ledger.over_releases(), refused_items.load());
  for (const Ledger::CellUsage& cell : ledger.Cells()) {
    EXPECT_GE(cell.view.usage, 0);
    EXPECT_GE(cell.view.pool_used, 0);
  }
}

// A peer's bug: two teams admitted at once into the same borrowed capacity. Two threads, one
// per borrowing team, each reach for the lender's whole idle quota at the same instant; in every
// race exactly one of them gets it.
TEST(LedgerStressTest, TwoTeamsRacingForTheSameBorrowedCapacityNeverBothGetIt) {
  Ledger ledger(PolicyBuilder()
                    .Team("lender", "c")
                    .Quota(kP5, kGpu, 4)
                    .Team("x", "c")
                    .Quota(kP5, kGpu, 0)
                    .Team("y", "c")
                    .Quota(kP5, kGpu, 0)
                    .Build());
  const NameId flavor = FlavorNames().Intern(kP5);
  const NameId teams[2] = {TeamNames().Intern("x"), TeamNames().Intern("y")};
  constexpr int kRaces = 3000;
  std::atomic<int> ready{0};
  std::atomic<int> race{-1};  // the race both threads may start
  std::vector<std::array<std::optional<Charge>, 2>> won(kRaces);
  std::array<std::thread, 2> racers;
  for (int t = 0; t < 2; ++t) {
    racers[t] = std::thread([&, t] {
      for (int i = 0; i < kRaces; ++i) {
        while (race.load(std::memory_order_acquire) < i) std::this_thread::yield();
        Ledger::Session s(ledger);
        auto r = s.Reserve(teams[t], flavor, ResourceList{{kGpu, 4}}, Ledger::Mode::kBorrowing);
        if (const Charge* c = std::get_if<Charge>(&r)) won[i][t] = *c;
        ready.fetch_add(1, std::memory_order_acq_rel);
      }
    });
  }
  int x_wins = 0, y_wins = 0, bad_races = 0;
  for (int i = 0; i < kRaces; ++i) {
    race.store(i, std::memory_order_release);
    while (ready.load(std::memory_order_acquire) < 2 * (i + 1)) std::this_thread::yield();
    const int winners = won[i][0].has_value() + won[i][1].has_value();
    bad_races += winners != 1;
    x_wins += won[i][0].has_value();
    y_wins += won[i][1].has_value();
    Ledger::Session s(ledger);
    for (const std::optional<Charge>& c : won[i]) {
      if (c) {
        EXPECT_TRUE(s.Release(*c));
      }
    }
  }
  for (std::thread& r : racers) r.join();
  EXPECT_EQ(bad_races, 0);
  EXPECT_EQ(x_wins + y_wins, kRaces);
  for (const Ledger::CellUsage& cell : ledger.Cells()) EXPECT_EQ(cell.view.usage, 0);
}

}  // namespace
}  // namespace taskgov::scheduler::ledger
