#include "extender/metrics_sources.h"

#include <gtest/gtest.h>

#include <string>
#include <type_traits>

namespace taskgov::extender {
namespace {

using scheduler::actions::PreemptionStats;
using scheduler::decisions::PreemptionReason;

// A Key's reason field from the enum, whether the field holds the enum or its name.
template <typename Field = decltype(PreemptionStats::Key::reason)>
Field ReasonField(PreemptionReason reason) {
  if constexpr (std::is_same_v<Field, PreemptionReason>) {
    return reason;
  } else {
    return std::string(scheduler::decisions::ReasonName(reason));
  }
}

TEST(MetricsSourcesTest, PreemptionTotalsKeepEveryCountWithItsReason) {
  PreemptionStats stats;
  stats.preemptions[{"team-b", "team-a", ReasonField(PreemptionReason::kReclaim)}] = 2;
  stats.preemptions[{"team-a", "team-a", ReasonField(PreemptionReason::kInTeamPriority)}] = 1;
  stats.preemptions[{"team-c", "team-b", ReasonField(PreemptionReason::kFairShare)}] = 4;
  stats.preemptions[{"", "", ReasonField(PreemptionReason::kPriority)}] = 3;
  stats.preempted_pods["team-a"] = 2;

  const metrics::PreemptionTotals totals = PreemptionTotalsOf(stats);
  ASSERT_EQ(totals.preemptions.size(), 4u);  // metrics decides what counts (plain priority not)
  std::map<std::string, std::pair<PreemptionReason, uint64_t>> by_pair;
  for (const metrics::PreemptionTotals::Count& c : totals.preemptions) {
    by_pair[c.team + ">" + c.victim_team] = {c.reason, c.evictions};
  }
  EXPECT_EQ(by_pair["team-b>team-a"], std::pair(PreemptionReason::kReclaim, uint64_t{2}));
  EXPECT_EQ(by_pair["team-a>team-a"], std::pair(PreemptionReason::kInTeamPriority, uint64_t{1}));
  EXPECT_EQ(by_pair["team-c>team-b"], std::pair(PreemptionReason::kFairShare, uint64_t{4}));
  EXPECT_EQ(by_pair[">"], std::pair(PreemptionReason::kPriority, uint64_t{3}));
  EXPECT_EQ(totals.preempted_pods.at("team-a"), 2);
}

TEST(MetricsSourcesTest, WithoutKubernetesThereAreNoComponentTotals) {
  const metrics::Sources sources = MetricsSources(nullptr, nullptr, nullptr, nullptr, nullptr);
  EXPECT_FALSE(sources.informers);
  EXPECT_FALSE(sources.preemptions);
  EXPECT_FALSE(sources.http_listeners);
}

TEST(MetricsSourcesTest, HttpListenerTotalsCopyRefusalsAndGauges) {
  HttpServerStats stats;
  stats.refused[static_cast<size_t>(metrics::HttpRefusal::kIdleEvicted)] = 3;
  stats.refused[static_cast<size_t>(metrics::HttpRefusal::kBodyBudget)] = 2;
  stats.open_connections = 7;
  stats.inflight_body_bytes = 4096;
  const metrics::HttpListenerTotals totals = HttpListenerTotalsOf("webhook", stats);
  EXPECT_EQ(totals.listener, "webhook");
  EXPECT_EQ(totals.refused, stats.refused);
  EXPECT_EQ(totals.open_connections, 7u);
  EXPECT_EQ(totals.inflight_body_bytes, 4096u);
}

TEST(MetricsSourcesTest, HttpListenersAreReadAtScrapeTime) {
  HttpServer server(HttpServerOptions{}, {});  // not started: its stats are all zero
  const metrics::Sources sources =
      MetricsSources(nullptr, nullptr, nullptr, nullptr, nullptr, {{"metrics", &server}});
  ASSERT_TRUE(sources.http_listeners);
  const std::vector<metrics::HttpListenerTotals> totals = sources.http_listeners();
  ASSERT_EQ(totals.size(), 1u);
  EXPECT_EQ(totals[0].listener, "metrics");
  EXPECT_EQ(totals[0].open_connections, 0u);
}

}  // namespace
}  // namespace taskgov::extender
