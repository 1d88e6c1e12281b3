#include "scheduler/ledger/record_table.h"

#include <gtest/gtest.h>

#include <atomic>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace taskgov::scheduler::ledger {
namespace {

using Table = RecordTable<int64_t>;

std::string Key(int i) { return "uid-" + std::to_string(i) + "-0000-4000-8000-000000000000"; }

TEST(RecordTableTest, AcquireCreatesOnceAndFindSeesIt) {
  Table t(16);
  EXPECT_FALSE(t.Find("a"));
  {
    Table::Claim c = t.Acquire("a");
    ASSERT_TRUE(c);
    EXPECT_FALSE(c->present);
    c->value = 7;
    c->present = true;
  }
  Table::Claim again = t.Acquire("a");
  ASSERT_TRUE(again);
  EXPECT_TRUE(again->present);
  EXPECT_EQ(again->value, 7);
  EXPECT_EQ(t.occupied(), 1u);
}

TEST(RecordTableTest, KeysBeyondTheInlineLengthAndCollidingProbes) {
  Table t(4);
  std::vector<std::string> keys;
  for (int i = 0; i < 40; ++i) keys.push_back(std::string(30 + i, static_cast<char>('a' + i % 26)));
  for (size_t i = 0; i < keys.size(); ++i) {
    Table::Claim c = t.Acquire(keys[i]);
    ASSERT_TRUE(c) << i;
    c->value = static_cast<int64_t>(i);
    c->present = true;
  }
  for (size_t i = 0; i < keys.size(); ++i) {
    Table::Claim c = t.Find(keys[i]);
    ASSERT_TRUE(c) << i;
    EXPECT_EQ(c->key.view(), keys[i]);
    EXPECT_EQ(c->value, static_cast<int64_t>(i));
  }
}

// An emptied record stays (a tombstone the same key reuses) until Compact frees it; Compact keeps
// every present record findable and resizes the array for them.
TEST(RecordTableTest, CompactFreesEmptyRecordsAndKeepsThePresentOnes) {
  Table t(16);
  for (int i = 0; i < 30; ++i) {
    Table::Claim c = t.Acquire(Key(i));
    ASSERT_TRUE(c);
    c->value = i;
    c->present = i % 3 == 0;
  }
  EXPECT_EQ(t.occupied(), 30u);
  EXPECT_EQ(t.Compact(), 10u);
  EXPECT_EQ(t.occupied(), 10u);
  for (int i = 0; i < 30; ++i) {
    Table::Claim c = t.Find(Key(i));
    EXPECT_EQ(static_cast<bool>(c), i % 3 == 0) << i;
    if (c) {
      EXPECT_EQ(c->value, i);
    }
  }
  size_t seen = 0;
  t.ForEach([&](Table::Record& r) {
    EXPECT_TRUE(r.present);
    ++seen;
  });
  EXPECT_EQ(seen, 10u);
}

// Past three quarters of its slots the table refuses to create records (the caller compacts),
// while keys it has are still found; NeedsCompaction says so from five eighths.
TEST(RecordTableTest, AFullTableRefusesNewKeysUntilCompacted) {
  Table t(0);  // 64 slots: 48 records
  const size_t slots = t.capacity();
  ASSERT_EQ(slots, 64u);
  int created = 0;
  for (int i = 0; i < 100; ++i) {
    Table::Claim c = t.Acquire(Key(i));
    if (!c) break;
    c->present = true;
    ++created;
    EXPECT_EQ(t.NeedsCompaction(), static_cast<size_t>(created) > slots / 8 * 5) << created;
  }
  EXPECT_EQ(created, 48);
  EXPECT_FALSE(t.Acquire(Key(1000)));
  EXPECT_TRUE(t.Acquire(Key(3)));  // an existing key needs no new record
  EXPECT_EQ(t.Compact(), 48u);
  EXPECT_GE(t.capacity(), 2u * 48u);
  EXPECT_FALSE(t.NeedsCompaction());
  EXPECT_TRUE(t.Acquire(Key(1000)));
}

TEST(RecordTableTest, AClaimIsHeldUntilReleasedAndMoves) {
  Table t(16);
  Table::Claim c = t.Acquire("k");
  std::atomic<bool> got{false};
  std::atomic<uint64_t> waits{0};
  std::thread other([&] {
    Table::Claim d = t.Find("k", &waits);
    got.store(true);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(got.load());
  Table::Claim moved = std::move(c);
  EXPECT_FALSE(c);  // NOLINT(bugprone-use-after-move): the moved-from claim is empty
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_FALSE(got.load());     // the claim moved, still held
  EXPECT_EQ(waits.load(), 1u);  // counted before it waits
  moved = Table::Claim();
  other.join();
  EXPECT_TRUE(got.load());
}

// Threads creating, changing and emptying records of overlapping keys: each key has one record
// (concurrent creations of one key meet in it), a claim is exclusive (the per-key counters never
// see another holder), and no count is lost.
TEST(RecordTableTest, ConcurrentClaimsOfOverlappingKeysAreExclusiveAndLoseNothing) {
  constexpr int kThreads = 4;
  constexpr int kKeys = 200;
  constexpr int kRounds = 20000;
  RecordTable<std::pair<int, int64_t>> t(4 * kKeys);  // (holders, count)
  std::atomic<int> overlaps{0};
  std::vector<std::thread> threads;
  for (int w = 0; w < kThreads; ++w) {
    threads.emplace_back([&, w] {
      for (int i = 0; i < kRounds; ++i) {
        const std::string key = Key((i * 7 + w * 13) % kKeys);
        auto c = t.Acquire(key);
        ASSERT_TRUE(c);
        if (++c->value.first != 1) overlaps.fetch_add(1);
        ++c->value.second;
        c->present = true;
        --c->value.first;
      }
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(overlaps.load(), 0);
  EXPECT_EQ(t.occupied(), static_cast<size_t>(kKeys));
  int64_t total = 0;
  std::set<std::string> keys;
  t.ForEach([&](auto& r) {
    total += r.value.second;
    keys.insert(std::string(r.key.view()));
  });
  EXPECT_EQ(total, static_cast<int64_t>(kThreads) * kRounds);
  EXPECT_EQ(keys.size(), static_cast<size_t>(kKeys));
}

}  // namespace
}  // namespace taskgov::scheduler::ledger
