#include "extender/body_budget.h"

#include <atomic>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace taskgov::extender {
namespace {

TEST(BodyBudgetTest, ReservesOnlyWithinTheLimit) {
  BodyBudget budget(100);
  EXPECT_TRUE(budget.TryReserve(60));
  EXPECT_FALSE(budget.TryReserve(41));  // 101 > 100: nothing reserved
  EXPECT_EQ(budget.in_use(), 60u);
  EXPECT_TRUE(budget.TryReserve(40));  // exactly the limit
  EXPECT_FALSE(budget.TryReserve(1));
  budget.Release(60);
  EXPECT_EQ(budget.in_use(), 40u);
  EXPECT_TRUE(budget.TryReserve(60));
  EXPECT_EQ(budget.limit(), 100u);
}

TEST(BodyBudgetTest, OversizedAndHugeRequestsNeverFitAndNeverWrap) {
  BodyBudget budget(100);
  EXPECT_FALSE(budget.TryReserve(101));
  EXPECT_TRUE(budget.TryReserve(1));
  EXPECT_FALSE(budget.TryReserve(UINT64_MAX));  // in_use + bytes would wrap around
  EXPECT_EQ(budget.in_use(), 1u);
}

// Many threads reserving and releasing: the total never exceeds the limit and returns to 0.
TEST(BodyBudgetTest, ConcurrentReservationsNeverExceedTheLimit) {
  constexpr uint64_t kLimit = 1000;
  BodyBudget budget(kLimit);
  std::atomic<bool> over{false};
  std::atomic<uint64_t> granted{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      const uint64_t size = 100 + 50 * static_cast<uint64_t>(t);
      for (int i = 0; i < 20'000; ++i) {
        if (!budget.TryReserve(size)) continue;
        granted.fetch_add(1, std::memory_order_relaxed);
        if (budget.in_use() > kLimit) over.store(true);
        budget.Release(size);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_FALSE(over.load());
  EXPECT_GT(granted.load(), 0u);
  EXPECT_EQ(budget.in_use(), 0u);
}

}  // namespace
}  // namespace taskgov::extender
