#include "extender/ticker.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <vector>

namespace taskgov::extender {
namespace {

TEST(TickerTest, CountsItsCallsAndStopsForGood) {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<uint64_t> seen;  // guarded by mu
  Ticker ticker(std::chrono::milliseconds(1), [&](uint64_t n) {
    std::lock_guard<std::mutex> lock(mu);
    seen.push_back(n);
    cv.notify_all();
  });
  {
    std::unique_lock<std::mutex> lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(10), [&] { return seen.size() >= 3; }));
  }
  ticker.Stop();
  std::lock_guard<std::mutex> lock(mu);
  const std::vector<uint64_t> at_stop = seen;
  for (size_t i = 0; i < at_stop.size(); ++i) EXPECT_EQ(at_stop[i], i + 1);
  ticker.Stop();  // again: a no-op
  EXPECT_EQ(seen, at_stop);
}

TEST(TickerTest, StopDoesNotWaitForThePeriod) {
  std::atomic<int> calls{0};
  const auto start = std::chrono::steady_clock::now();
  {
    Ticker ticker(std::chrono::hours(1), [&](uint64_t) { calls.fetch_add(1); });
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::minutes(1));
  EXPECT_EQ(calls.load(), 0);
}

}  // namespace
}  // namespace taskgov::extender
