#include "scheduler/kube/backoff.h"

#include <gtest/gtest.h>

#include "scheduler/common/clock.h"

namespace taskgov::scheduler::kube {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

TEST(Backoff, DoublesFromPointEightSecondsToThirtyWithoutJitter) {
  common::FakeClock clock;
  Backoff backoff(BackoffOptions{}, &clock, [] { return 0.0; });
  const int64_t expected[] = {800, 1600, 3200, 6400, 12800, 25600, 30000, 30000};
  for (int64_t ms : expected) {
    EXPECT_EQ(backoff.Next(), milliseconds(ms));
    clock.Advance(seconds(1));
  }
}

TEST(Backoff, JitterStretchesWithinBoundsAndNeverPassesTheCap) {
  common::FakeClock clock;
  double r = 0.0;
  Backoff backoff(BackoffOptions{}, &clock, [&r] { return r; });
  r = 0.999;
  milliseconds first = backoff.Next();
  EXPECT_GE(first, milliseconds(800));
  EXPECT_LE(first, milliseconds(960));  // 0.8 s × (1 + 0.2)
  EXPECT_GT(first, milliseconds(900));
  for (int i = 0; i < 10; ++i) EXPECT_LE(backoff.Next(), milliseconds(30'000));
}

TEST(Backoff, ResetsAfterTwoMinutesWithoutFailure) {
  common::FakeClock clock;
  Backoff backoff(BackoffOptions{}, &clock, [] { return 0.0; });
  for (int i = 0; i < 5; ++i) (void)backoff.Next();
  clock.Advance(seconds(119));
  EXPECT_EQ(backoff.Next(), milliseconds(25'600));  // not yet: 1 min 59 s since the last failure
  clock.Advance(seconds(120));
  EXPECT_EQ(backoff.Next(), milliseconds(800));  // healthy for 2 minutes: start over
  EXPECT_EQ(backoff.Next(), milliseconds(1600));
}

}  // namespace
}  // namespace taskgov::scheduler::kube
