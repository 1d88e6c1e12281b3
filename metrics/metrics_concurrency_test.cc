// Recording from many threads while scrapes run and the ledger changes: nothing is lost, no
// data race (this target runs under ThreadSanitizer in CI), and scrapes stay well-formed.

#include <atomic>
#include <cmath>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "metrics/metrics.h"
#include "metrics/series.h"
#include "metrics/testing/exposition.h"
#include "metrics/testing/scenario.h"

namespace taskgov::metrics {
namespace {

using testing::FlavorId;
using testing::ParseExposition;
using testing::TeamId;

constexpr int kWriters = 4;
constexpr int kPerWriter = 3'000;
constexpr int kClasses = 30;  // × 3 teams: more than a series map's first table, so it grows

double Sum(const testing::Exposition& x, const std::string& name) {
  double total = 0;
  for (const testing::Sample& s : x.All(name)) total += s.value;
  return total;
}

TEST(MetricsConcurrencyTest, RecordingWhileRendering) {
  testing::Scenario s;
  s.Script();
  const testing::Exposition before = ParseExposition(s.metrics->Render());
  // Teams of the policy (others' series would be hidden as removed teams).
  const std::vector<scheduler::model::NameId> teams = {TeamId("team-a"), TeamId("team-b"),
                                                       TeamId("ml")};
  const scheduler::model::NameId flavor = FlavorId("ml.p5.48xlarge");

  std::atomic<int> writers_left{kWriters};
  std::vector<std::thread> threads;
  for (int w = 0; w < kWriters; ++w) {
    threads.emplace_back([&, w] {
      for (int i = 0; i < kPerWriter; ++i) {
        scheduler::decisions::FilterDecision d;
        d.team = teams[static_cast<size_t>((i + w) % 3)];
        d.flavor = flavor;
        d.admitted = i % 3 != 0;
        d.reason = d.admitted ? "" : "pool";
        s.metrics->ObserveFilter(d);
        s.metrics->ObserveRequest("/v" + std::to_string(i % 5), true, 200, true, "ok",
                                  std::chrono::microseconds(i % 1000));
        s.metrics->ObservePodBound(d.team, "pc-" + std::to_string((i * 7 + w) % kClasses), 0, i);
        // The informers' totals change under the scrapes that read them.
        s.NoteInformerEvent("pods", i);
        if (i % 500 == 0) s.NoteWatchRestart("pods", "expired");
      }
      writers_left.fetch_sub(1);
    });
  }
  // The ledger changes under the scrapes.
  threads.emplace_back([&] {
    for (int i = 0; writers_left.load() > 0; ++i) {
      const std::string uid = "conc-a-" + std::to_string(i);
      (void)s.book.Assume(
          uid, TeamId("team-a"), flavor, scheduler::model::ResourceList{{"cpu", 1000}},
          scheduler::ledger::Ledger::Mode::kWithinNominal, 30'000, scheduler::ledger::PodMeta{});
      s.book.Release(uid);
    }
  });
  int scrapes = 0;
  while (writers_left.load() > 0 || scrapes < 3) {
    const testing::Exposition x = ParseExposition(s.metrics->Render());
    ASSERT_TRUE(x.errors.empty()) << x.errors.front();
    ++scrapes;
  }
  for (std::thread& t : threads) t.join();

  const testing::Exposition x = ParseExposition(s.metrics->Render());
  const int total = kWriters * kPerWriter;
  int admitted = 0;
  for (int i = 0; i < kPerWriter; ++i) admitted += i % 3 != 0;
  admitted *= kWriters;
  EXPECT_EQ(Sum(x, "taskgov_admissions_total") - Sum(before, "taskgov_admissions_total"), admitted);
  EXPECT_EQ(Sum(x, "taskgov_refusals_total") - Sum(before, "taskgov_refusals_total"),
            total - admitted);
  EXPECT_EQ(
      Sum(x, "taskgov_webhook_requests_total") - Sum(before, "taskgov_webhook_requests_total"),
      total);
  EXPECT_EQ(
      Sum(x, "taskgov_pod_wait_seconds_count") - Sum(before, "taskgov_pod_wait_seconds_count"),
      total);
  EXPECT_EQ(x.Value("taskgov_watch_restarts_total", {{"resource", "pods"}}),
            1 + kWriters * (kPerWriter / 500));
  // The ledger is back where it was.
  EXPECT_EQ(x.Value("taskgov_quota_usage", {{"team", "team-a"}, {"resource", "cpu"}}), 48);
}

TEST(SeriesMapConcurrencyTest, OneSeriesPerKeyUnderRacingCreation) {
  internal::SeriesMap<internal::Counter, 2> map;
  constexpr int kThreads = 4;
  constexpr int kKeys = 300;
  std::vector<std::thread> threads;
  std::vector<std::vector<internal::Counter*>> seen(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int k = 0; k < kKeys; ++k) {
        const std::string a = "a" + std::to_string(k % 17), b = "b" + std::to_string(k);
        internal::Counter& c = map.Get({a, b});
        c.Add();
        seen[static_cast<size_t>(t)].push_back(&c);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(map.size(), static_cast<size_t>(kKeys));
  for (int t = 1; t < kThreads; ++t) EXPECT_EQ(seen[static_cast<size_t>(t)], seen[0]);
  uint64_t total = 0;
  map.ForEach([&](const auto&, const internal::Counter& c) {
    EXPECT_EQ(c.Value(), static_cast<uint64_t>(kThreads));
    total += c.Value();
  });
  EXPECT_EQ(total, static_cast<uint64_t>(kThreads * kKeys));
  for (int k = 0; k < kKeys; ++k) {
    const std::string a = "a" + std::to_string(k % 17), b = "b" + std::to_string(k);
    EXPECT_EQ(map.Find({a, b}), seen[0][static_cast<size_t>(k)]);
  }
  EXPECT_EQ(map.Find({"a0", "missing"}), nullptr);
}

TEST(HistogramTest, BucketsAreUpperInclusiveAndCumulative) {
  const internal::Buckets bounds = {1, 2, 5};
  internal::Histogram h(bounds);
  for (double v : {0.5, 1.0, 1.5, 2.0, 4.0, 9.0, std::nan("")}) h.Observe(v);
  const auto snap = h.Snapshot();
  ASSERT_EQ(snap.bucket.size(), 4u);
  EXPECT_EQ(snap.bucket[0].cumulative_count, 2u);  // 0.5, 1.0
  EXPECT_EQ(snap.bucket[1].cumulative_count, 4u);  // + 1.5, 2.0
  EXPECT_EQ(snap.bucket[2].cumulative_count, 5u);  // + 4.0
  EXPECT_EQ(snap.bucket[3].cumulative_count, 6u);  // + 9.0 (NaN ignored)
  EXPECT_TRUE(std::isinf(snap.bucket[3].upper_bound));
  EXPECT_EQ(snap.sample_count, 6u);
  EXPECT_DOUBLE_EQ(snap.sample_sum, 18.0);
}

}  // namespace
}  // namespace taskgov::metrics
