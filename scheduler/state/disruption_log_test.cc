#include "scheduler/state/disruption_log.h"

#include <gtest/gtest.h>

namespace taskgov::scheduler::state {
namespace {

constexpr int64_t kT = 1'000'000;

TEST(DisruptionLogTest, FromTheSecondDisruptionTheBackOffDoublesUpToTenMinutes) {
  DisruptionLog log;
  EXPECT_FALSE(log.BackingOff("ns/train", kT));
  log.Note("ns/train", kT);
  EXPECT_FALSE(log.BackingOff("ns/train", kT));  // once: it may borrow at once
  log.Note("ns/train", kT + 10'000);
  std::optional<DisruptionLog::BackOff> b = log.BackingOff("ns/train", kT + 69'999);
  ASSERT_TRUE(b);
  EXPECT_EQ(b->disruptions, 2);
  EXPECT_EQ(b->last_ms, kT + 10'000);
  EXPECT_EQ(b->until_ms, kT + 70'000);
  EXPECT_FALSE(log.BackingOff("ns/train", kT + 70'000));
  log.Note("ns/train", kT + 100'000);
  EXPECT_EQ(log.BackingOff("ns/train", kT + 100'000)->until_ms, kT + 220'000);
  for (int i = 3; i <= 8; ++i) log.Note("ns/train", kT + i * 100'000);
  b = log.BackingOff("ns/train", kT + 800'000);
  ASSERT_TRUE(b);
  EXPECT_EQ(b->disruptions, 9);
  EXPECT_EQ(b->until_ms, kT + 800'000 + DisruptionLog::kMaxBackOffMs);
  EXPECT_FALSE(log.BackingOff("ns/other", kT + 800'000));
}

TEST(DisruptionLogTest, MembersOfOneRoundCountOnceAndLonePodsAreNotKept) {
  DisruptionLog log;
  log.Note("ns/train", kT);
  log.Note("ns/train", kT);
  log.Note("ns/train", kT);
  EXPECT_FALSE(log.BackingOff("ns/train", kT));  // one disruption, not three
  log.Note("ns/train", kT + 1);
  EXPECT_EQ(log.BackingOff("ns/train", kT + 1)->disruptions, 2);
  log.Note("", kT);
  EXPECT_EQ(log.size(), 1u);
  EXPECT_FALSE(log.BackingOff("", kT));
}

TEST(DisruptionLogTest, AWorkloadUndisturbedForHalfAnHourStartsAfreshAndOldOnesAreDropped) {
  DisruptionLog log;
  log.Note("ns/train", kT);
  log.Note("ns/train", kT + 1'000);
  log.Note("ns/old", kT);
  const int64_t later = kT + 1'000 + DisruptionLog::kForgetMs + 1;
  log.Note("ns/train", later);
  EXPECT_FALSE(log.BackingOff("ns/train", later));  // its first disruption again
  log.Note("ns/train", later + 1);
  EXPECT_EQ(log.BackingOff("ns/train", later + 1)->disruptions, 2);
  EXPECT_EQ(log.size(), 1u);  // ns/old is forgotten
}

}  // namespace
}  // namespace taskgov::scheduler::state
