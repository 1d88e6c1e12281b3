#include "scheduler/ledger/uid_key.h"

#include <gtest/gtest.h>

#include <string>
#include <unordered_map>
#include <vector>

namespace taskgov::scheduler::ledger {
namespace {

// Lengths either side of the inline limit, and an API server's UUID.
const std::vector<std::string>& Uids() {
  static const std::vector<std::string> uids = {
      "",
      "u",
      "0b1f5c2e-6a7d-4c8e-9f00-100000000000",
      std::string(UidKey::kInline, 'i'),
      std::string(UidKey::kInline + 1, 'h'),
      std::string(300, 'x'),
  };
  return uids;
}

TEST(UidKeyTest, HoldsWhatItWasGivenAcrossCopiesAndMoves) {
  for (const std::string& uid : Uids()) {
    UidKey key(uid);
    EXPECT_EQ(key.view(), uid);
    UidKey copy = key;
    EXPECT_EQ(copy.view(), uid);
    UidKey moved = std::move(copy);
    EXPECT_EQ(moved.view(), uid);
    EXPECT_EQ(copy.view(), "");  // NOLINT(bugprone-use-after-move): a move leaves ""
    for (const std::string& other : Uids()) {
      UidKey assigned(other);
      assigned = key;
      EXPECT_EQ(assigned.view(), uid) << other.size();
      assigned = UidKey(other);
      EXPECT_EQ(assigned.view(), other) << uid.size();
      EXPECT_EQ(UidKey(other) == key, other == uid);
    }
  }
}

TEST(UidKeyTest, IsFoundInAMapByItsString) {
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::unordered_map<UidKey, int, Hash, std::equal_to<>> map;
  for (size_t i = 0; i < Uids().size(); ++i) map.emplace(UidKey(Uids()[i]), static_cast<int>(i));
  map.rehash(1000);  // the keys move with their nodes' rehash
  for (size_t i = 0; i < Uids().size(); ++i) {
    auto it = map.find(std::string_view(Uids()[i]));
    ASSERT_NE(it, map.end()) << i;
    EXPECT_EQ(it->second, static_cast<int>(i));
  }
  EXPECT_EQ(map.find(std::string_view("absent")), map.end());
}

}  // namespace
}  // namespace taskgov::scheduler::ledger
