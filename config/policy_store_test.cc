#include "config/policy_store.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

namespace taskgov::config {
namespace {

// A policy whose every part encodes `version`, so a reader can tell a torn snapshot.
scheduler::model::PolicyPtr Versioned(int version) {
  auto p = std::make_shared<scheduler::model::Policy>();
  for (int i = 0; i < 1 + version % 7; ++i) {
    scheduler::model::Team t;
    t.name = "t" + std::to_string(i);
    t.namespaces = {"ns-" + std::to_string(i)};
    t.flavors.push_back(
        scheduler::model::FlavorQuota{"f", {{"nvidia.com/gpu", version, version, 0}}});
    p->teams.push_back(std::move(t));
  }
  p->source_hash = std::to_string(version);
  p->Finalize();
  return p;
}

// Returns the version, or -1 when the snapshot is inconsistent.
int Check(const scheduler::model::Policy& p) {
  const int version = std::stoi(p.source_hash);
  if (p.teams.size() != static_cast<size_t>(1 + version % 7)) return -1;
  for (const scheduler::model::Team& t : p.teams) {
    if (t.flavors.size() != 1 || t.flavors[0].resources[0].nominal != version) return -1;
    if (p.TeamOfNamespace(t.namespaces[0]) != &t) return -1;
  }
  return version;
}

TEST(PolicyStore, StartsEmptyAndPublishes) {
  PolicyStore store;
  ASSERT_NE(store.Current(), nullptr);
  EXPECT_TRUE(store.Current()->teams.empty());
  EXPECT_EQ(store.generation(), 0u);
  scheduler::model::PolicyPtr held = store.Current();
  store.Publish(Versioned(3));
  EXPECT_EQ(store.generation(), 1u);
  EXPECT_EQ(Check(*store.Current()), 3);
  EXPECT_TRUE(held->teams.empty());  // a held snapshot never changes
}

// A subscriber gets the snapshot in force at once and then every published one, in order, before
// Publish returns: the components holding derived state follow the one published policy.
TEST(PolicyStore, SubscribersFollowEveryPublicationInOrder) {
  PolicyStore store(Versioned(1));
  std::vector<int> seen_a;
  std::vector<int> seen_b;
  store.Subscribe([&](const scheduler::model::PolicyPtr& p) { seen_a.push_back(Check(*p)); });
  store.Publish(Versioned(2));
  store.Subscribe([&](const scheduler::model::PolicyPtr& p) { seen_b.push_back(Check(*p)); });
  store.Publish(Versioned(3));
  store.Publish(Versioned(4));
  EXPECT_EQ(seen_a, (std::vector<int>{1, 2, 3, 4}));
  EXPECT_EQ(seen_b, (std::vector<int>{2, 3, 4}));
  EXPECT_EQ(Check(*store.Current()), 4);
}

TEST(PolicyStore, ConcurrentReadersSeeWholeSnapshotsInOrder) {
  PolicyStore store(Versioned(0));
  std::atomic<bool> done{false};
  std::atomic<int> torn{0};
  std::atomic<int> backwards{0};
  std::atomic<long> reads{0};
  std::vector<std::thread> readers;
  for (int r = 0; r < 4; ++r) {
    readers.emplace_back([&] {
      int last = 0;
      while (!done.load(std::memory_order_acquire)) {
        const uint64_t generation = store.generation();
        scheduler::model::PolicyPtr p = store.Current();
        const int version = Check(*p);
        if (version < 0) torn++;
        // Publications are numbered: generation g means at least version g is published.
        if (version < last || static_cast<uint64_t>(version) < generation) backwards++;
        last = version;
        reads++;
      }
    });
  }
  for (int v = 1; v <= 2000; ++v) store.Publish(Versioned(v));
  done.store(true, std::memory_order_release);
  for (std::thread& t : readers) t.join();
  EXPECT_EQ(torn.load(), 0);
  EXPECT_EQ(backwards.load(), 0);
  EXPECT_GT(reads.load(), 0);
  EXPECT_EQ(Check(*store.Current()), 2000);
}

}  // namespace
}  // namespace taskgov::config
