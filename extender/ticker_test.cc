#include "extender/ticker.h"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>
#include <algorithm>
#include <cerrno>
#include <future>

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

// The loop runs at the nice value asked for (raising it needs no privilege); the thread that
// built the ticker keeps its own.
TEST(TickerTest, TheLoopRunsAtItsNiceValue) {
  errno = 0;
  const int own = getpriority(PRIO_PROCESS, static_cast<id_t>(gettid()));
  ASSERT_EQ(errno, 0);
  std::promise<int> seen;
  std::atomic<bool> once{false};
  Ticker ticker(
      std::chrono::milliseconds(1),
      [&](uint64_t) {
        if (!once.exchange(true))
          seen.set_value(getpriority(PRIO_PROCESS, static_cast<id_t>(gettid())));
      },
      5);
  EXPECT_EQ(seen.get_future().get(), std::min(own + 5, 19));
  ticker.Stop();
  EXPECT_EQ(getpriority(PRIO_PROCESS, static_cast<id_t>(gettid())), own);
}

}  // namespace
}  // namespace taskgov::extender
