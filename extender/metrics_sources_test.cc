#include "extender/metrics_sources.h"

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <type_traits>

#include "scheduler/common/clock.h"
#include "scheduler/model/gang.h"
#include "scheduler/model/job_control.h"
#include "scheduler/testing/builders.h"

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

// Issue 35: the pods stopped by suspending their job, and the jobs suspended, keep their key.
TEST(MetricsSourcesTest, PausedPodsAndJobsKeepTheirKey) {
  PreemptionStats stats;
  const PreemptionStats::Key reclaim{"team-b", "team-a", ReasonField(PreemptionReason::kReclaim)};
  const PreemptionStats::Key within{"team-a", "team-a",
                                    ReasonField(PreemptionReason::kInTeamPriority)};
  stats.preemptions[reclaim] = 5;  // 4 pods of one paused job, 1 pod evicted
  stats.paused_pods[reclaim] = 4;
  stats.jobs_paused[reclaim] = 1;
  stats.preemptions[within] = 2;  // evicted
  const metrics::PreemptionTotals totals = PreemptionTotalsOf(stats);
  ASSERT_EQ(totals.preemptions.size(), 2u);
  for (const metrics::PreemptionTotals::Count& c : totals.preemptions) {
    if (c.team == "team-b") {
      EXPECT_EQ(c.evictions, 5u);
      EXPECT_EQ(c.paused_pods, 4u);
      EXPECT_EQ(c.jobs_paused, 1u);
    } else {
      EXPECT_EQ(c.evictions, 2u);
      EXPECT_EQ(c.paused_pods, 0u);
      EXPECT_EQ(c.jobs_paused, 0u);
    }
  }
}

// taskgov_paused_workloads: the jobs taskgov paused, by the team of their pods; a job its user
// suspended, one resumed, and one of no team are not counted.
TEST(MetricsSourcesTest, PausedWorkloadsAreTheJobsTaskgovPausedByTeam) {
  common::FakeClock clock(1'780'000'000'000);
  scheduler::ledger::QuotaBook book(scheduler::testing::PolicyBuilder()
                                        .Team("team-a", "research")
                                        .Quota("ml.p5.48xlarge", "nvidia.com/gpu", 8)
                                        .Team("team-b", "research")
                                        .Quota("ml.p5.48xlarge", "nvidia.com/gpu", 8)
                                        .Cohort("research")
                                        .Build(),
                                    &clock);
  scheduler::state::ClusterState cluster(&book, &clock, {});
  cluster.SetPolicy(book.ledger().policy());
  auto job = [&](const std::string& ns, const std::string& name, bool suspended, bool ours) {
    auto j = std::make_shared<scheduler::model::JobControl>();
    j->kind = "Job";
    j->ns = ns;
    j->name = name;
    j->uid = "uid-" + name;
    j->workload = scheduler::model::OwnerGangKey(j->uid);
    j->suspended = suspended;
    if (ours) j->annotations = {{scheduler::model::kSuspendedByAnnotation, "taskgov"}};
    j->pod_sets = {{2, scheduler::testing::PodBuilder("").Namespace(ns).Gpus(4).Build()}};
    cluster.OnJobUpsert(j);
  };
  job("ns-team-a", "a1", true, true);
  job("ns-team-a", "a2", true, true);
  job("ns-team-b", "b1", true, true);
  job("ns-team-b", "mine", true, false);  // its user's
  job("ns-team-b", "back", false, true);  // resumed by someone else, annotation not yet gone
  job("default", "stray", true, true);    // no team
  const std::map<std::string, int64_t, std::less<>> paused = PausedWorkloadsByTeam(cluster);
  EXPECT_EQ(paused, (std::map<std::string, int64_t, std::less<>>{{"team-a", 2}, {"team-b", 1}}));
  EXPECT_TRUE(MetricsSources(&book, &cluster, nullptr, nullptr, nullptr).paused_workloads);
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
