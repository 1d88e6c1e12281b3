#include "scheduler/model/string_pool.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <string>
#include <thread>
#include <vector>

namespace taskgov::scheduler::model {
namespace {

using Id = StringPool::Id;

Id AcquireOne(StringPool& pool, std::string_view s) {
  Id id = 0;
  pool.Acquire(std::span<const std::string_view>(&s, 1), &id);
  return id;
}

void ReleaseOne(StringPool& pool, Id id) { pool.Release(std::span<const Id>(&id, 1)); }

TEST(StringPoolTest, KeepsEachStringOnceAndTheEmptyOneAsZero) {
  StringPool pool;
  const std::array<std::string_view, 4> strings{"kueue.x-k8s.io/queue-name", "", "team-a",
                                                "kueue.x-k8s.io/queue-name"};
  std::array<Id, 4> ids{};
  pool.Acquire(strings, ids.data());
  EXPECT_EQ(ids[0], ids[3]);
  EXPECT_EQ(ids[1], 0u);
  EXPECT_NE(ids[2], ids[0]);
  EXPECT_NE(ids[2], 0u);
  for (size_t i = 0; i < strings.size(); ++i) EXPECT_EQ(pool.View(ids[i]), strings[i]) << i;
  EXPECT_EQ(pool.size(), 3u);  // "", the key, team-a
}

TEST(StringPoolTest, AStringGoesWithItsLastHolderAndItsIdIsReused) {
  StringPool pool;
  const std::string long_value(300, 'v');  // on the heap, not in the slot
  const Id first = AcquireOne(pool, long_value);
  EXPECT_EQ(AcquireOne(pool, long_value), first);
  ReleaseOne(pool, first);
  EXPECT_EQ(pool.size(), 2u);  // still held once
  EXPECT_EQ(pool.View(first), long_value);
  ReleaseOne(pool, first);
  EXPECT_EQ(pool.size(), 1u);  // only ""
  const Id other = AcquireOne(pool, "other");
  EXPECT_EQ(other, first);  // the freed slot, reused
  EXPECT_EQ(pool.View(other), "other");
  EXPECT_NE(AcquireOne(pool, long_value), other);  // back as a new string
  ReleaseOne(pool, 0);                             // "" is held by none: nothing happens
  EXPECT_EQ(pool.View(0), "");
}

TEST(StringPoolTest, GrowsPastAChunk) {
  StringPool pool;
  std::vector<Id> ids;
  for (size_t i = 0; i < StringPool::kChunkSize + 10; ++i) {
    ids.push_back(AcquireOne(pool, "value-" + std::to_string(i)));
  }
  for (size_t i = 0; i < ids.size(); ++i) {
    ASSERT_EQ(pool.View(ids[i]), "value-" + std::to_string(i)) << i;
  }
  pool.Release(ids);
  EXPECT_EQ(pool.size(), 1u);
}

// A PooledString holds its string in PodStrings() as long as some copy of it lives.
TEST(StringPoolTest, APooledStringHoldsItsStringWhileACopyLives) {
  const size_t before = PodStrings().size();
  const std::string text = "ml.p5.48xlarge/" + std::to_string(::getpid());  // new to the pool
  {
    PooledString a(text);
    EXPECT_EQ(a.view(), text);
    EXPECT_EQ(PodStrings().size(), before + 1);
    PooledString b = a;  // held twice
    PooledString c = std::move(a);
    EXPECT_TRUE(a.empty());  // NOLINT(bugprone-use-after-move): a move hands the hold over
    EXPECT_EQ(a.view(), "");
    {
      PooledString d;
      d = b;
      d = PooledString("");  // gives its hold back
      EXPECT_TRUE(d.empty());
    }
    b = PooledString();
    EXPECT_EQ(c.view(), text);  // c still holds it
    EXPECT_EQ(PodStrings().size(), before + 1);
  }
  EXPECT_EQ(PodStrings().size(), before);  // gone with its last holder
  EXPECT_TRUE(PooledString("").empty());
}

// Threads acquire and release strings that overlap (shared label keys, values of their own) and
// read what they hold while the others change the pool: every read is the string acquired, and
// the pool ends empty (ThreadSanitizer runs this).
TEST(StringPoolTest, HoldersReadTheirStringsWhileOthersChangeThePool) {
  StringPool pool;
  constexpr int kThreads = 4;
  std::vector<std::thread> threads;
  std::vector<int> wrong(kThreads, 0);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&pool, &wrong, t] {
      for (int round = 0; round < 2000; ++round) {
        const std::string own = "pod-" + std::to_string(t) + "-" + std::to_string(round % 37);
        const std::array<std::string_view, 3> strings{"shared-key", own, "shared-value"};
        std::array<Id, 3> ids{};
        pool.Acquire(strings, ids.data());
        for (size_t i = 0; i < strings.size(); ++i) wrong[t] += pool.View(ids[i]) != strings[i];
        pool.Release(ids);
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(wrong[t], 0) << t;
  EXPECT_EQ(pool.size(), 1u);
}

// Holders copy a string they hold (AddRef, no lock) and give every hold back, while other threads
// take the same string anew (Acquire) and its count keeps touching zero: a last holder racing an
// Acquire that takes the string again, and two last holders racing to free it. Every read is the
// string, the pool ends empty, and no slot was freed twice: a slot on the free list twice would be
// handed to two new strings, which then read as one (ThreadSanitizer runs this).
TEST(StringPoolTest, CopiesTakeNoLockAndALastHolderFreesOnceWhileOthersTakeItAgain) {
  StringPool pool;
  constexpr int kThreads = 4;
  std::vector<std::thread> threads;
  std::vector<int> wrong(kThreads, 0);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&pool, &wrong, t] {
      for (int round = 0; round < 3000; ++round) {
        const std::string hot = "gang-" + std::to_string(round % 3);
        const Id id = AcquireOne(pool, hot);
        const int copies = 1 + (round + t) % 3;
        for (int c = 0; c < copies; ++c) pool.AddRef(id);
        for (int c = 0; c <= copies; ++c) {
          wrong[t] += pool.View(id) != hot;
          ReleaseOne(pool, id);
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(wrong[t], 0) << t;
  EXPECT_EQ(pool.size(), 1u);
  std::vector<Id> fresh;
  for (int i = 0; i < 16; ++i) fresh.push_back(AcquireOne(pool, "fresh-" + std::to_string(i)));
  for (int i = 0; i < 16; ++i) EXPECT_EQ(pool.View(fresh[i]), "fresh-" + std::to_string(i)) << i;
  EXPECT_EQ(pool.size(), 17u);
}

}  // namespace
}  // namespace taskgov::scheduler::model
