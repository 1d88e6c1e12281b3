#include "scheduler/common/name_hash.h"

#include <gtest/gtest.h>

#include <array>
#include <bit>
#include <cstdio>
#include <set>
#include <string>

namespace taskgov::common {
namespace {

// Every byte of a name moves the hash, at every length the tail is read differently (1–3 bytes,
// 4–7 as two overlapping words, whole words): a name differing from another in one byte, or
// only in its length, hashes differently.
TEST(NameHashTest, EveryByteAndTheLengthCount) {
  for (size_t length = 0; length <= 40; ++length) {
    const std::string name(length, 'a');
    const uint64_t base = NameHash(name);
    EXPECT_NE(NameHash(name + '\0'), base) << length;
    for (size_t i = 0; i < length; ++i) {
      std::string other = name;
      other[i] = 'b';
      EXPECT_NE(NameHash(other), base) << "length " << length << ", byte " << i;
    }
  }
}

// Sequential names, as the simulator's UIDs and a cluster's node names are: no two of 100,000
// collide in 64 bits, and both ends of the hash spread them — the low bits pick a table's slot,
// the top bits a QuotaBook shard.
TEST(NameHashTest, SequentialNamesSpreadOverLowAndHighBits) {
  constexpr int kNames = 100'000;
  constexpr int kBuckets = 64;
  std::set<uint64_t> seen;
  std::array<int, kBuckets> low{};
  std::array<int, kBuckets> high{};
  for (int i = 0; i < kNames; ++i) {
    char name[32];
    std::snprintf(name, sizeof name, "sim-%08d", i);
    const uint64_t h = NameHash(name);
    EXPECT_TRUE(seen.insert(h).second) << name;
    ++low[h % kBuckets];
    ++high[h >> (64 - std::countr_zero(unsigned{kBuckets}))];
  }
  // A uniform spread puts 1,562.5 in each bucket (s.d. about 39): 1,300 and 1,850 are 6.7 s.d.
  // away.
  for (int b = 0; b < kBuckets; ++b) {
    EXPECT_GT(low[b], 1300) << "low bits, bucket " << b;
    EXPECT_LT(low[b], 1850) << "low bits, bucket " << b;
    EXPECT_GT(high[b], 1300) << "high bits, bucket " << b;
    EXPECT_LT(high[b], 1850) << "high bits, bucket " << b;
  }
}

TEST(NameHashTest, TheSameNameHashesTheSameWhereverItLives) {
  const std::string owned = "nvidia.com/gpu";
  const char buffer[] = "xnvidia.com/gpuy";
  EXPECT_EQ(NameHash(owned), NameHash(std::string_view(buffer + 1, owned.size())));
  EXPECT_EQ(NameHash(""), NameHash(std::string_view()));
}

}  // namespace
}  // namespace taskgov::common
