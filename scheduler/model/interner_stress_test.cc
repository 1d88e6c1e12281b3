// Many threads interning overlapping name sets in different orders while readers look names up:
// every name gets exactly one id, ids are dense, and a name whose Intern() happened before a
// lookup is always found. Runs under TSan in CI (tag "concurrency").

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "scheduler/model/interner.h"

namespace taskgov::scheduler::model {
namespace {

std::string NameOf(int i) { return "ml.node-" + std::to_string(i); }

TEST(InternerStressTest, ConcurrentInternsAgreeAndPublishedNamesAreAlwaysFound) {
  constexpr int kNames = 20000;  // many table growths and several chunks
  constexpr int kWriters = 3;
  constexpr int kReaders = 2;
  Interner interner;

  // Writer 0 interns in order and publishes each id; the others intern in shuffled orders.
  auto published_ids = std::make_unique<std::atomic<NameId>[]>(kNames);
  std::atomic<int> published{0};
  std::vector<std::vector<NameId>> ids(kWriters, std::vector<NameId>(kNames));
  std::atomic<int64_t> misses{0};
  std::atomic<int64_t> wrong{0};
  std::atomic<bool> writers_done{false};
  std::atomic<int> readers_ready{0};
  std::atomic<int64_t> lookups{0};

  std::vector<std::thread> threads;
  for (int w = 0; w < kWriters; ++w) {
    threads.emplace_back([&, w] {
      // Start once the readers run, so lookups overlap the inserts and the table growths.
      while (readers_ready.load(std::memory_order_acquire) < kReaders) std::this_thread::yield();
      std::vector<int> order(kNames);
      for (int i = 0; i < kNames; ++i) order[i] = i;
      if (w > 0) std::shuffle(order.begin(), order.end(), std::mt19937(static_cast<uint32_t>(w)));
      for (int i : order) {
        const NameId id = interner.Intern(NameOf(i));
        ids[w][i] = id;
        if (w == 0) {
          // Relaxed: ordered by the release store of `published` below.
          published_ids[i].store(id, std::memory_order_relaxed);
          // Release: a reader that acquires i + 1 sees the Intern() of name i as done.
          published.store(i + 1, std::memory_order_release);
        }
      }
    });
  }
  for (int r = 0; r < kReaders; ++r) {
    threads.emplace_back([&, r] {
      std::mt19937 rng(static_cast<uint32_t>(100 + r));
      readers_ready.fetch_add(1, std::memory_order_release);
      while (!writers_done.load(std::memory_order_acquire)) {
        // Acquire: pairs with the writer's release store.
        const int p = published.load(std::memory_order_acquire);
        if (p == 0) continue;
        const int i = static_cast<int>(rng() % static_cast<uint32_t>(p));
        const std::string name = NameOf(i);
        const std::optional<NameId> found = interner.Find(name);
        lookups.fetch_add(1, std::memory_order_relaxed);
        if (!found) {
          misses.fetch_add(1, std::memory_order_relaxed);
          continue;
        }
        if (*found != published_ids[i].load(std::memory_order_relaxed) ||
            interner.Name(*found) != name) {
          wrong.fetch_add(1, std::memory_order_relaxed);
        }
        if (interner.Find("absent-" + name).has_value()) wrong.fetch_add(1);
      }
    });
  }
  for (int w = 0; w < kWriters; ++w) threads[w].join();
  writers_done.store(true, std::memory_order_release);
  for (size_t t = kWriters; t < threads.size(); ++t) threads[t].join();

  EXPECT_GT(lookups.load(), 0);
  EXPECT_EQ(misses.load(), 0);
  EXPECT_EQ(wrong.load(), 0);
  ASSERT_EQ(interner.size(), static_cast<size_t>(kNames));
  std::vector<bool> seen(kNames, false);
  for (int i = 0; i < kNames; ++i) {
    for (int w = 1; w < kWriters; ++w) ASSERT_EQ(ids[w][i], ids[0][i]) << NameOf(i);
    ASSERT_LT(ids[0][i], static_cast<NameId>(kNames));
    ASSERT_FALSE(seen[ids[0][i]]) << "id handed out twice: " << ids[0][i];
    seen[ids[0][i]] = true;
    ASSERT_EQ(interner.Name(ids[0][i]), NameOf(i));
  }
}

}  // namespace
}  // namespace taskgov::scheduler::model
