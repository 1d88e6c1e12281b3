#include "scheduler/common/post_box.h"

#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

namespace taskgov::common {
namespace {

TEST(PostBoxTest, TakesEverythingPostedOldestFirst) {
  PostBox<std::string> box;
  EXPECT_TRUE(box.Empty());
  box.Post("a");
  box.Post("b");
  EXPECT_FALSE(box.Empty());
  box.Post("c");
  EXPECT_EQ(box.TakeAll(), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_TRUE(box.Empty());
  EXPECT_TRUE(box.TakeAll().empty());
  box.Post("d");
  EXPECT_EQ(box.TakeAll(), std::vector<std::string>{"d"});
}

// Four producers post while a consumer keeps taking: every value arrives exactly once and each
// producer's values arrive in the order it posted them.
TEST(PostBoxTest, ConcurrentProducersLoseNothingAndKeepTheirOrder) {
  constexpr int kProducers = 4;
  constexpr int kPerProducer = 20'000;
  PostBox<std::pair<int, int>> box;
  std::atomic<int> done{0};
  std::vector<std::thread> producers;
  for (int p = 0; p < kProducers; ++p) {
    producers.emplace_back([&, p] {
      for (int i = 0; i < kPerProducer; ++i) box.Post({p, i});
      done.fetch_add(1, std::memory_order_release);
    });
  }
  std::vector<int> next(kProducers, 0);
  int taken = 0;
  bool in_order = true;
  auto consume = [&] {
    for (const auto& [p, i] : box.TakeAll()) {
      in_order = in_order && i == next[p];
      next[p] = i + 1;
      ++taken;
    }
  };
  while (done.load(std::memory_order_acquire) < kProducers) consume();
  for (std::thread& t : producers) t.join();
  consume();
  EXPECT_TRUE(in_order);
  EXPECT_EQ(taken, kProducers * kPerProducer);
  EXPECT_TRUE(box.Empty());
}

}  // namespace
}  // namespace taskgov::common
