#include "scheduler/common/published.h"

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

namespace taskgov::common {
namespace {

// Version v is a vector of v+1 copies of v: a read of a value being freed, or of a torn one, shows
// elements that disagree (and ASan or TSan, which run this, report the use).
std::unique_ptr<const std::vector<int64_t>> Version(int64_t v) {
  return std::make_unique<const std::vector<int64_t>>(static_cast<size_t>(v % 64) + 1, v);
}

TEST(PublishedTest, ReadsTheValueLastPublished) {
  Published<std::vector<int64_t>> published(Version(0));
  EXPECT_EQ(published.Read([](const std::vector<int64_t>& v) { return v.front(); }), 0);
  published.Publish(Version(7));
  EXPECT_EQ(published.Read([](const std::vector<int64_t>& v) { return v.size(); }), 8u);
  published.Publish(Version(8));
  published.Publish(Version(9));  // the epochs' counters are reused
  EXPECT_EQ(published.Read([](const std::vector<int64_t>& v) { return v.back(); }), 9);
}

// Readers read while a writer publishes 500 versions: every value read is whole, and a reader
// never sees an older version after a newer one (a read returns the value current at some point
// during it).
TEST(PublishedTest, ReadersSeeWholeValuesInOrderWhileTheWriterReplacesThem) {
  Published<std::vector<int64_t>> published(Version(0));
  std::atomic<bool> done{false};
  std::atomic<int> started{0};
  constexpr int kReaders = 2;
  std::vector<int64_t> torn(kReaders, 0), backwards(kReaders, 0), reads(kReaders, 0);
  std::vector<std::thread> readers;
  for (int r = 0; r < kReaders; ++r) {
    readers.emplace_back([&, r] {
      int64_t last = 0;
      started.fetch_add(1);
      while (!done.load(std::memory_order_acquire)) {
        const int64_t seen = published.Read([&](const std::vector<int64_t>& v) {
          for (int64_t x : v) torn[r] += x != v.front();
          torn[r] += v.size() != static_cast<size_t>(v.front() % 64) + 1;
          return v.front();
        });
        backwards[r] += seen < last;
        last = seen;
        ++reads[r];
      }
    });
  }
  while (started.load() < kReaders) std::this_thread::yield();
  for (int64_t v = 1; v <= 500; ++v) published.Publish(Version(v));
  done.store(true, std::memory_order_release);
  for (std::thread& t : readers) t.join();
  for (int r = 0; r < kReaders; ++r) {
    EXPECT_EQ(torn[r], 0) << r;
    EXPECT_EQ(backwards[r], 0) << r;
    EXPECT_GT(reads[r], 0) << r;
  }
  EXPECT_EQ(published.Read([](const std::vector<int64_t>& v) { return v.front(); }), 500);
}

}  // namespace
}  // namespace taskgov::common
