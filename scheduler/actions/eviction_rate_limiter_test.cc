#include "scheduler/actions/eviction_rate_limiter.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace taskgov::scheduler::actions {
namespace {

constexpr int64_t kT0 = 1'000'000;

// One step against the bucket: at `at_ms` (from kT0), try to take one token, or ask whether
// `want` evictions may start.
struct Step {
  int64_t at_ms;
  double want;  // 0: TryTake
  bool expected;
};

struct BucketCase {
  std::string name;
  double per_second;
  int64_t burst;
  std::vector<Step> steps;
};

void PrintTo(const BucketCase& c, std::ostream* os) { *os << c.name; }

class BucketTest : public ::testing::TestWithParam<BucketCase> {};

TEST_P(BucketTest, Steps) {
  const BucketCase& c = GetParam();
  EvictionRateLimiter limiter(c.per_second, c.burst, kT0);
  for (size_t i = 0; i < c.steps.size(); ++i) {
    const Step& s = c.steps[i];
    const bool got =
        s.want == 0 ? limiter.TryTake(kT0 + s.at_ms) : limiter.Allows(kT0 + s.at_ms, s.want);
    EXPECT_EQ(got, s.expected) << "step " << i << " at " << s.at_ms << " ms, want " << s.want;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Buckets, BucketTest,
    ::testing::Values(
        // Starts full: the burst goes at once, the next waits for a refill.
        BucketCase{"StartsFullThenEmpties",
                   1,
                   3,
                   {{0, 0, true},
                    {0, 0, true},
                    {0, 0, true},
                    {0, 0, false},
                    {999, 0, false},
                    {1000, 0, true},
                    {1000, 0, false}}},
        // One every 10 s.
        BucketCase{"SlowRefill", 0.1, 1, {{0, 0, true}, {5'000, 0, false}, {10'000, 0, true}}},
        // Refill stops at the burst however long the bucket rests.
        BucketCase{"RefillCapsAtTheBurst",
                   1,
                   2,
                   {{0, 0, true},
                    {0, 0, true},
                    {3'600'000, 0, true},
                    {3'600'000, 0, true},
                    {3'600'000, 0, false}}},
        // Allows asks without taking.
        BucketCase{
            "AllowsTakesNothing",
            1,
            2,
            {{0, 2, true}, {0, 2, true}, {0, 3, true}, {0, 0, true}, {0, 2, false}, {0, 1, true}}},
        // A round larger than the burst may start when the bucket is full.
        BucketCase{
            "LargeRoundWaitsForAFullBucket", 1, 2, {{0, 0, true}, {0, 5, false}, {1000, 5, true}}},
        // A burst of 0 behaves as 1, and starts empty.
        BucketCase{
            "ZeroBurstIsOne",
            1,
            0,
            {{0, 0, false}, {1000, 0, true}, {1000, 0, false}, {5000, 0, true}, {5000, 0, false}}},
        // Half a token is not a token.
        BucketCase{"FractionsAccumulate", 2, 1, {{0, 0, true}, {250, 0, false}, {500, 0, true}}}),
    [](const ::testing::TestParamInfo<BucketCase>& info) { return info.param.name; });

TEST(EvictionRateLimiterTest, TimeSteppingBackNeitherDrainsNorRefills) {
  EvictionRateLimiter limiter(1, 5, kT0);
  ASSERT_TRUE(limiter.TryTake(kT0));
  ASSERT_TRUE(limiter.TryTake(kT0));
  EXPECT_DOUBLE_EQ(limiter.tokens(), 3);
  EXPECT_TRUE(limiter.Allows(kT0 - 2'000, 1));
  EXPECT_DOUBLE_EQ(limiter.tokens(), 3);
  EXPECT_TRUE(limiter.Allows(kT0 - 1'000, 1));  // refills from the new reading on
  EXPECT_DOUBLE_EQ(limiter.tokens(), 4);
}

}  // namespace
}  // namespace taskgov::scheduler::actions
