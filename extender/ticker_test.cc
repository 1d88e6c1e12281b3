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
#include <thread>
#include <vector>

namespace taskgov::extender {
namespace {

using std::chrono::hours;
using std::chrono::milliseconds;
using std::chrono::seconds;
using SteadyTime = std::chrono::steady_clock::time_point;

// Long enough that no test sees a call the period started: a call comes from a poke or not at
// all.
constexpr hours kNever{1};
// How long a test waits for something that must happen (a bound for noisy machines, not a
// timing requirement).
constexpr seconds kPatience{10};

// A ticker's callback for the tests: records when each call started and when it was about to
// return; while held (Hold), a call waits inside the callback until Release().
class Calls {
 public:
  std::function<void(uint64_t)> Callback() {
    return [this](uint64_t) {
      std::unique_lock<std::mutex> lock(mu_);
      starts_.push_back(std::chrono::steady_clock::now());
      cv_.notify_all();
      cv_.wait(lock, [this] { return !held_; });
      ends_.push_back(std::chrono::steady_clock::now());
      cv_.notify_all();
    };
  }
  void Hold() {
    std::lock_guard<std::mutex> lock(mu_);
    held_ = true;
  }
  void Release() {
    std::lock_guard<std::mutex> lock(mu_);
    held_ = false;
    cv_.notify_all();
  }
  // Whether `n` calls have started (returned) within `limit`.
  bool Started(size_t n, milliseconds limit = kPatience) { return WaitFor(starts_, n, limit); }
  bool Returned(size_t n, milliseconds limit = kPatience) { return WaitFor(ends_, n, limit); }
  size_t started() {
    std::lock_guard<std::mutex> lock(mu_);
    return starts_.size();
  }
  SteadyTime start(size_t i) {
    std::lock_guard<std::mutex> lock(mu_);
    return starts_.at(i);
  }
  SteadyTime end(size_t i) {
    std::lock_guard<std::mutex> lock(mu_);
    return ends_.at(i);
  }

 private:
  bool WaitFor(const std::vector<SteadyTime>& times, size_t n, milliseconds limit) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, limit, [&] { return times.size() >= n; });
  }

  std::mutex mu_;
  std::condition_variable cv_;
  bool held_ = false;               // guarded by mu_
  std::vector<SteadyTime> starts_;  // guarded by mu_
  std::vector<SteadyTime> ends_;    // guarded by mu_
};

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

TEST(TickerTest, APokeRunsTheCallbackWithoutWaitingForThePeriod) {
  Calls calls;
  Ticker ticker(kNever, calls.Callback());
  ticker.Poke();
  EXPECT_TRUE(calls.Returned(1));
}

// Pokes made while a call runs never wait for it, and bring exactly one more call, whatever
// their number.
TEST(TickerTest, PokesDuringACallCoalesceIntoOneMoreCall) {
  Calls calls;
  Ticker ticker(kNever, calls.Callback());
  calls.Hold();
  ticker.Poke();
  ASSERT_TRUE(calls.Started(1));
  std::future<void> poking = std::async(std::launch::async, [&ticker] {
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&ticker] {
        for (int i = 0; i < 250; ++i) ticker.Poke();
      });
    }
    for (std::thread& thread : threads) thread.join();
  });
  const bool poked_during_the_call = poking.wait_for(kPatience) == std::future_status::ready;
  calls.Release();
  ASSERT_TRUE(poked_during_the_call);
  EXPECT_TRUE(calls.Returned(2));
  // Then none: no poke is left unanswered (one call per poke would bring 999 more at once).
  EXPECT_FALSE(calls.Started(3, milliseconds(200)));
  EXPECT_EQ(calls.started(), 2u);
}

// A poked call starts no sooner than min_gap after the previous one returned (its callback's
// last step, so a lower bound of the real gap).
TEST(TickerTest, APokedCallWaitsTheMinimumGapAfterThePreviousCall) {
  constexpr milliseconds kGap{100};
  Calls calls;
  Ticker ticker(kNever, calls.Callback(), 0, kGap);
  calls.Hold();
  ticker.Poke();
  ASSERT_TRUE(calls.Started(1));
  ticker.Poke();  // during the call: the next is due as soon as the gap allows
  calls.Release();
  ASSERT_TRUE(calls.Started(2));
  EXPECT_GE(calls.start(1) - calls.end(0), kGap);
}

// A poke long after the previous call returned still gives min_gap before the call it brings,
// counted from the poke (so that what the poke announced can settle first).
TEST(TickerTest, APokedCallWaitsTheMinimumGapAfterThePoke) {
  constexpr milliseconds kGap{100};
  Calls calls;
  Ticker ticker(kNever, calls.Callback(), 0, kGap);
  ticker.Poke();
  ASSERT_TRUE(calls.Returned(1));
  // No call without a poke, and the previous call's gap is over.
  EXPECT_FALSE(calls.Started(2, 3 * kGap));
  const SteadyTime poked = std::chrono::steady_clock::now();
  ticker.Poke();
  ASSERT_TRUE(calls.Started(2));
  EXPECT_GE(calls.start(1) - poked, kGap);
}

// Stop() while a poked call waits for its gap returns at once, and no call starts.
TEST(TickerTest, StopWhileAPokedCallWaitsForItsGapStartsNone) {
  Calls calls;
  const SteadyTime start = std::chrono::steady_clock::now();
  {
    Ticker ticker(kNever, calls.Callback(), 0, /*min_gap=*/milliseconds(kNever));
    ticker.Poke();
    EXPECT_FALSE(calls.Started(1, milliseconds(100)));  // meanwhile the loop waits for the gap
    ticker.Stop();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::minutes(1));
  EXPECT_EQ(calls.started(), 0u);
}

// Stop() during a call with pokes pending returns once the call does; none starts after.
TEST(TickerTest, StopDuringACallWithPokesPendingReturnsAndNoCallStartsAfter) {
  Calls calls;
  Ticker ticker(kNever, calls.Callback());
  calls.Hold();
  ticker.Poke();
  ASSERT_TRUE(calls.Started(1));
  for (int i = 0; i < 10; ++i) ticker.Poke();
  std::future<void> stopping = std::async(std::launch::async, [&ticker] { ticker.Stop(); });
  calls.Release();
  ASSERT_EQ(stopping.wait_for(kPatience), std::future_status::ready);
  const size_t at_stop = calls.started();
  EXPECT_LE(at_stop, 2u);  // the pending call may have started before Stop() got in
  EXPECT_FALSE(calls.Started(at_stop + 1, milliseconds(200)));
}

}  // namespace
}  // namespace taskgov::extender
