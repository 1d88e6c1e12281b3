#include "extender/memory_trim.h"

#include <gtest/gtest.h>

namespace taskgov::extender {
namespace {

struct Fixture {
  uint64_t requests = 0;
  int trims = 0;
  MemoryTrim trim{2'000, [this] { return requests; }, [this] { ++trims; }};
};

TEST(MemoryTrimTest, TrimsOnceWhenTheRequestsStopForTheQuietTime) {
  Fixture f;
  f.trim.Tick(0);
  f.trim.Tick(1'000);
  EXPECT_EQ(f.trims, 0);
  f.trim.Tick(2'000);
  EXPECT_EQ(f.trims, 1);  // quiet since it started: what the sync left goes
  f.requests = 500;
  f.trim.Tick(2'500);
  EXPECT_EQ(f.trims, 1);
  f.trim.Tick(3'000);
  f.trim.Tick(4'000);
  f.trim.Tick(4'499);
  EXPECT_EQ(f.trims, 1);  // quiet for less than 2 s since the burst
  f.trim.Tick(4'500);
  EXPECT_EQ(f.trims, 2);
  f.trim.Tick(5'000);
  f.trim.Tick(60'000);
  EXPECT_EQ(f.trims, 2);  // once per quiet spell
  EXPECT_EQ(f.trim.trims(), 2u);
}

TEST(MemoryTrimTest, AStartUnderLoadWaitsForTheQuiet) {
  Fixture f;
  for (int64_t t : {1'000, 2'000, 2'999}) {
    f.requests += 100;  // a burst from the start
    f.trim.Tick(t);
  }
  f.trim.Tick(4'998);
  EXPECT_EQ(f.trims, 0);  // quiet for less than 2 s
  f.trim.Tick(4'999);
  EXPECT_EQ(f.trims, 1);
}

TEST(MemoryTrimTest, NeverWhileRequestsKeepComingAndAgainAfterTheNextBurst) {
  Fixture f;
  for (int64_t t = 0; t < 10'000; t += 1'000) {
    f.requests += 10;  // steady traffic: one request a second would do
    f.trim.Tick(t);
  }
  EXPECT_EQ(f.trims, 0);
  f.trim.Tick(12'000);
  EXPECT_EQ(f.trims, 1);
  f.requests += 1;
  f.trim.Tick(13'000);
  f.trim.Tick(15'000);
  EXPECT_EQ(f.trims, 2);
}

}  // namespace
}  // namespace taskgov::extender
