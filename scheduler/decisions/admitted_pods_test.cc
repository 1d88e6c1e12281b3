#include "scheduler/decisions/admitted_pods.h"

#include <gtest/gtest.h>

#include <string>

namespace taskgov::scheduler::decisions {
namespace {

TEST(AdmittedPodsTest, AnAdmissionLastsItsTtlAndARepeatRenewsIt) {
  AdmittedPods admitted(/*ttl_ms=*/1000);
  EXPECT_FALSE(admitted.Admitted("u", 0));
  admitted.Note("u", 100);
  EXPECT_TRUE(admitted.Admitted("u", 1099));
  EXPECT_FALSE(admitted.Admitted("u", 1100));
  admitted.Note("u", 1050);
  EXPECT_TRUE(admitted.Admitted("u", 2000));
  EXPECT_FALSE(admitted.Admitted("v", 2000));
}

// Full, a shard drops its expired entries first, then all of them: it never grows past its
// bound, and a dropped pod is refused (fail closed), never bound unfiltered.
TEST(AdmittedPodsTest, ItStaysWithinItsBound) {
  AdmittedPods admitted(/*ttl_ms=*/1000, /*per_shard=*/4);
  for (int i = 0; i < 1000; ++i) admitted.Note("u-" + std::to_string(i), 0);
  int kept = 0;
  for (int i = 0; i < 1000; ++i) kept += admitted.Admitted("u-" + std::to_string(i), 1);
  EXPECT_LE(kept, static_cast<int>(AdmittedPods::kShards * 4));
  EXPECT_GT(kept, 0);
  admitted.Note("late", 5000);  // the expired go first
  EXPECT_TRUE(admitted.Admitted("late", 5001));
}

}  // namespace
}  // namespace taskgov::scheduler::decisions
