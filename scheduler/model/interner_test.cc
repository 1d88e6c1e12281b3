#include "scheduler/model/interner.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace taskgov::scheduler::model {
namespace {

TEST(InternerTest, IdsAreDenseStableAndRoundTrip) {
  struct Case {
    std::string name;
    NameId want;
  };
  const std::vector<Case> cases = {
      {"nvidia.com/gpu", 0},
      {"cpu", 1},
      {"memory", 2},
      {"", 3},                     // the empty name is a name like any other
      {"cpu", 1},                  // again: the same id
      {std::string(300, 'x'), 4},  // longer than any small-string buffer
      {"nvidia.com/gpu", 0},
      {"vpc.amazonaws.com/efa", 5},
  };
  Interner interner;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(interner.Intern(c.name), c.want);
    EXPECT_EQ(interner.Find(c.name), std::optional<NameId>(c.want));
    EXPECT_EQ(interner.Name(c.want), c.name);
  }
  EXPECT_EQ(interner.size(), 6u);
}

TEST(InternerTest, FindOfAnAbsentNameIsEmptyAndAddsNothing) {
  Interner interner;
  (void)interner.Intern("cpu");
  for (const std::string name : {"memory", "cp", "cpu ", "CPU", ""}) {
    EXPECT_EQ(interner.Find(name), std::nullopt) << name;
  }
  EXPECT_EQ(interner.size(), 1u);
}

// Past the first table (64 slots) and the first name chunk (4096 names): every name keeps its
// id through every growth.
TEST(InternerTest, GrowthKeepsEveryName) {
  Interner interner;
  constexpr int kNames = 3 * static_cast<int>(Interner::kChunkSize) + 17;
  for (int i = 0; i < kNames; ++i) {
    ASSERT_EQ(interner.Intern("node-" + std::to_string(i)), static_cast<NameId>(i));
  }
  EXPECT_EQ(interner.size(), static_cast<size_t>(kNames));
  for (int i = 0; i < kNames; ++i) {
    const std::string name = "node-" + std::to_string(i);
    ASSERT_EQ(interner.Find(name), std::optional<NameId>(i)) << name;
    ASSERT_EQ(interner.Name(static_cast<NameId>(i)), name);
  }
  EXPECT_EQ(interner.Find("node-" + std::to_string(kNames)), std::nullopt);
}

// The contract the ledger's hot path relies on: looking up a name that is already interned, with
// Find or Intern, never takes the writer mutex.
TEST(InternerTest, LookupsOfKnownNamesTakeNoLock) {
  Interner interner;
  constexpr int kNames = 1000;
  for (int i = 0; i < kNames; ++i) (void)interner.Intern("r-" + std::to_string(i));
  const uint64_t locked = interner.locked_interns();
  EXPECT_EQ(locked, static_cast<uint64_t>(kNames));  // one per new name
  for (int round = 0; round < 10; ++round) {
    for (int i = 0; i < kNames; ++i) {
      const std::string name = "r-" + std::to_string(i);
      ASSERT_EQ(interner.Find(name), std::optional<NameId>(i));
      ASSERT_EQ(interner.Intern(name), static_cast<NameId>(i));
      ASSERT_EQ(interner.Find(name + "?"), std::nullopt);  // a miss takes no lock either
    }
  }
  EXPECT_EQ(interner.locked_interns(), locked);
}

TEST(InternerTest, PriorityClassIdZeroIsNoClass) {
  EXPECT_EQ(PriorityClassNames().Name(0), "");
  EXPECT_EQ(PriorityClassNames().Intern(""), 0u);
  EXPECT_NE(PriorityClassNames().Intern("training"), 0u);
}

}  // namespace
}  // namespace taskgov::scheduler::model
