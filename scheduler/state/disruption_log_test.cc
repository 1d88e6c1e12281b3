#include "scheduler/state/disruption_log.h"

#include <gtest/gtest.h>

namespace taskgov::scheduler::state {
namespace {

constexpr int64_t kT = 1'000'000;

TEST(DisruptionLogTest, FromTheFirstDisruptionTheBackOffDoublesUpToTenMinutes) {
  DisruptionLog log;
  EXPECT_FALSE(log.BackingOff("ns/train", kT));
  log.Note("ns/train", kT);
  std::optional<DisruptionLog::BackOff> b = log.BackingOff("ns/train", kT + 59'999);
  ASSERT_TRUE(b);
  EXPECT_EQ(b->disruptions, 1);
  EXPECT_EQ(b->last_ms, kT);
  EXPECT_EQ(b->until_ms, kT + 60'000);
  EXPECT_FALSE(log.BackingOff("ns/train", kT + 60'000));
  log.Note("ns/train", kT + 100'000);
  EXPECT_EQ(log.BackingOff("ns/train", kT + 100'000)->until_ms, kT + 220'000);
  log.Note("ns/train", kT + 300'000);
  EXPECT_EQ(log.BackingOff("ns/train", kT + 300'000)->until_ms, kT + 540'000);
  for (int i = 4; i <= 8; ++i) log.Note("ns/train", kT + i * 100'000);
  b = log.BackingOff("ns/train", kT + 800'000);
  ASSERT_TRUE(b);
  EXPECT_EQ(b->disruptions, 8);
  EXPECT_EQ(b->until_ms, kT + 800'000 + DisruptionLog::kMaxBackOffMs);
  EXPECT_FALSE(log.BackingOff("ns/other", kT + 800'000));
}

TEST(DisruptionLogTest, AfterASingleDisruptionTheBackOffEndsOnceThePodItWasStoppedForIsGone) {
  DisruptionLog log;
  log.Note("ns/train", kT, "uid-serve");
  bool serving = true;
  const DisruptionLog::Alive alive = [&](std::string_view uid) {
    EXPECT_EQ(uid, "uid-serve");
    return serving;
  };
  EXPECT_TRUE(log.BackingOff("ns/train", kT + 10'000, alive)->ends_with_preemptor);
  serving = false;  // it finished: the capacity it was taken back for is free again
  EXPECT_FALSE(log.BackingOff("ns/train", kT + 10'000, alive));
  EXPECT_TRUE(log.BackingOff("ns/train", kT + 10'000));  // nobody to ask: in force
  log.Note("ns/train", kT + 20'000, "uid-other");
  // A second disruption backs off its whole time, whatever it was for.
  EXPECT_TRUE(log.BackingOff("ns/train", kT + 20'000, [](std::string_view) { return false; }));
  EXPECT_FALSE(log.BackingOff("ns/train", kT + 20'000)->ends_with_preemptor);
}

TEST(DisruptionLogTest, MembersOfOneRoundCountOnceAndLonePodsAreNotKept) {
  DisruptionLog log;
  log.Note("ns/train", kT);
  log.Note("ns/train", kT);
  log.Note("ns/train", kT);
  EXPECT_EQ(log.BackingOff("ns/train", kT)->disruptions, 1);  // one disruption, not three
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
  std::optional<DisruptionLog::BackOff> b = log.BackingOff("ns/train", later);
  ASSERT_TRUE(b);
  EXPECT_EQ(b->disruptions, 1);  // its first disruption again: 60 s, not 120 s
  EXPECT_EQ(b->until_ms, later + DisruptionLog::kFirstBackOffMs);
  EXPECT_EQ(log.size(), 1u);  // ns/old is forgotten
}

}  // namespace
}  // namespace taskgov::scheduler::state
