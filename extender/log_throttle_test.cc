#include "extender/log_throttle.h"

#include <gtest/gtest.h>

namespace taskgov::extender {
namespace {

using std::chrono::seconds;

TEST(LogThrottleTest, FirstEventLogsThenOneLinePerIntervalWithTheCount) {
  LogThrottle throttle(seconds(10));
  const LogThrottle::Clock::time_point t0{seconds(1000)};
  EXPECT_EQ(throttle.Admit(t0), 1u);  // the first event is logged at once
  EXPECT_EQ(throttle.Admit(t0 + seconds(1)), 0u);
  EXPECT_EQ(throttle.Admit(t0 + seconds(9)), 0u);
  // The next line reports the two held back and this one.
  EXPECT_EQ(throttle.Admit(t0 + seconds(10)), 3u);
  EXPECT_EQ(throttle.Admit(t0 + seconds(11)), 0u);
  EXPECT_EQ(throttle.Admit(t0 + seconds(60)), 2u);
}

}  // namespace
}  // namespace taskgov::extender
