#include "metrics/metrics.h"

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "metrics/testing/exposition.h"
#include "metrics/testing/scenario.h"
#include "scheduler/common/testing/files.h"
#include "scheduler/kube/watch_reasons.h"

namespace taskgov::metrics {
namespace {

using scheduler::model::ResourceList;
using testing::Exposition;
using testing::FlavorId;
using testing::ParseExposition;
using testing::Scenario;
using testing::TeamId;

constexpr char kGolden[] = "metrics/testdata/exposition.prom";

using common::testing::ReadFile;

// `bazel run //metrics:metrics_test -- --gtest_filter='*Golden*'` with UPDATE_GOLDEN=1 rewrites
// the golden file in the source tree.
TEST(MetricsTest, GoldenExposition) {
  Scenario s;
  s.Script();
  const std::string actual = s.metrics->Render();
  const char* workspace = std::getenv("BUILD_WORKSPACE_DIRECTORY");
  if (std::getenv("UPDATE_GOLDEN") != nullptr && workspace != nullptr) {
    std::ofstream(std::string(workspace) + "/" + kGolden) << actual;
    GTEST_SKIP() << "rewrote " << kGolden;
  }
  const std::string expected = ReadFile(kGolden);
  ASSERT_FALSE(expected.empty()) << "cannot read " << kGolden;
  if (actual == expected) return;
  std::istringstream a(actual), e(expected);
  std::string la, le;
  for (int line = 1;; ++line) {
    const bool more_a = static_cast<bool>(std::getline(a, la));
    const bool more_e = static_cast<bool>(std::getline(e, le));
    if (!more_a && !more_e) break;
    if (la != le || more_a != more_e) {
      FAIL() << kGolden << " differs at line " << line << "\n  expected: " << le
             << "\n  actual:   " << la
             << "\n(rerun with UPDATE_GOLDEN=1 under `bazel run` to accept)";
    }
  }
}

// Every family has one HELP and one TYPE line before its samples; HELP names every label;
// counters end in _total; histograms are cumulative with +Inf equal to _count.
void CheckWellFormed(const std::string& text) {
  const Exposition x = ParseExposition(text);
  EXPECT_TRUE(x.errors.empty()) << x.errors.front();
  std::map<std::string, int> first_sample;
  for (size_t i = 0; i < x.samples.size(); ++i) {
    const testing::Sample& sample = x.samples[i];
    const std::string family = x.FamilyOf(sample.name);
    ASSERT_FALSE(family.empty()) << "sample of no declared family: " << sample.name;
    const testing::FamilyInfo& info = x.families.at(family);
    for (const auto& [label, value] : sample.labels) {
      if (label == "le") continue;
      EXPECT_NE(info.help.find(label), std::string::npos)
          << family << ": HELP does not name label " << label;
    }
  }
  for (const auto& [name, info] : x.families) {
    SCOPED_TRACE(name);
    EXPECT_FALSE(info.help.empty());
    EXPECT_GT(info.help_line, 0);
    EXPECT_EQ(info.type_line, info.help_line + 1);
    EXPECT_TRUE(info.type == "counter" || info.type == "gauge" || info.type == "histogram")
        << info.type;
    EXPECT_TRUE(name.rfind("taskgov_", 0) == 0 || name.rfind("kueue_", 0) == 0);
    const bool total = name.size() > 6 && name.compare(name.size() - 6, 6, "_total") == 0;
    EXPECT_EQ(total, info.type == "counter");
  }
  // Histograms: cumulative buckets; +Inf bucket == count.
  for (const testing::Sample& sample : x.samples) {
    if (sample.name.size() < 7 || sample.name.compare(sample.name.size() - 6, 6, "_count") != 0) {
      continue;
    }
    const std::string base = sample.name.substr(0, sample.name.size() - 6);
    if (x.families.count(base) == 0 || x.families.at(base).type != "histogram") continue;
    std::map<std::string, std::string> labels = sample.labels;
    double last = 0;
    int buckets = 0;
    for (const testing::Sample& b : x.All(base + "_bucket")) {
      std::map<std::string, std::string> without_le = b.labels;
      without_le.erase("le");
      if (without_le != labels) continue;
      ++buckets;
      EXPECT_GE(b.value, last) << base;
      last = b.value;
      if (b.labels.at("le") == "+Inf") {
        EXPECT_EQ(b.value, sample.value) << base;
      }
    }
    EXPECT_GT(buckets, 1) << base;
  }
}

TEST(MetricsTest, HelpAndTypeLinesAreWellFormed) {
  for (bool kueue : {false, true}) {
    SCOPED_TRACE(kueue ? "kueue" : "taskgov only");
    Scenario s(kueue);
    s.Script();
    CheckWellFormed(s.metrics->Render());
  }
}

TEST(MetricsTest, NoSourcesRendersProcessFamiliesOnly) {
  Metrics m;
  m.ObserveRequest("/filter", true, 200, true, "", std::chrono::microseconds(100));
  const std::string text = m.Render();
  CheckWellFormed(text);
  const Exposition x = ParseExposition(text);
  EXPECT_EQ(x.Value("taskgov_build_info", {{"version", "dev"}}), 1);
  EXPECT_EQ(x.Value("taskgov_webhook_requests_total", {{"verb", "filter"}, {"outcome", "ok"}}), 1);
  EXPECT_TRUE(x.All("taskgov_quota_usage").empty());
  EXPECT_TRUE(x.All("taskgov_pods").empty());
}

TEST(MetricsTest, QuotaGaugesInBaseUnits) {
  Scenario s;
  s.Script();
  const Exposition x = ParseExposition(s.metrics->Render());
  auto v = [&](const std::string& name, const std::string& team, const std::string& resource) {
    return x.Value(name, {{"team", team}, {"resource", resource}});
  };
  EXPECT_EQ(v("taskgov_quota_nominal", "team-a", "cpu"), 192);  // cores, from 192000m
  EXPECT_EQ(v("taskgov_quota_usage", "team-a", "cpu"), 48);
  EXPECT_EQ(v("taskgov_quota_nominal", "team-a", "memory"), 2048.0 * testing::kGi);  // bytes
  EXPECT_EQ(v("taskgov_quota_usage", "team-a", "memory"), 512.0 * testing::kGi);
  EXPECT_EQ(v("taskgov_quota_borrowing_limit", "team-a", "nvidia.com/gpu"), 8);
  EXPECT_EQ(v("taskgov_quota_borrowing_limit", "team-b", "nvidia.com/gpu"), INFINITY);
  EXPECT_EQ(v("taskgov_quota_lending_limit", "team-a", "nvidia.com/gpu"), INFINITY);
  EXPECT_EQ(v("taskgov_quota_lending_limit", "team-b", "nvidia.com/gpu"), 8);
  EXPECT_EQ(v("taskgov_quota_usage", "team-b", "nvidia.com/gpu"), 24);
  EXPECT_EQ(v("taskgov_quota_borrowed", "team-b", "nvidia.com/gpu"), 8);
  EXPECT_EQ(v("taskgov_quota_borrowed", "team-a", "nvidia.com/gpu"), 0);
  EXPECT_EQ(v("taskgov_quota_lent", "team-a", "nvidia.com/gpu"), 8);
  EXPECT_EQ(v("taskgov_quota_lent", "team-b", "nvidia.com/gpu"), 0);
  // Bound and assumed both count as usage.
  EXPECT_EQ(v("taskgov_quota_usage", "ml", "aws.amazon.com/neurondevice"), 16);
  EXPECT_EQ(x.Value("taskgov_weighted_share", {{"team", "team-b"}}), 0.166);  // 8/24 / 2
  EXPECT_EQ(x.Value("taskgov_pods", {{"team", "team-b"}, {"state", "pending"}}), 2);
  EXPECT_EQ(x.Value("taskgov_pods", {{"team", "team-b"}, {"state", "running"}}), 2);
  EXPECT_EQ(x.Value("taskgov_pods", {{"team", "ml"}, {"state", "running"}}), 1);
  EXPECT_EQ(x.Value("taskgov_pods", {{"team", "ml"}, {"state", "admitted"}}), 1);  // assumed
  EXPECT_EQ(x.Value("taskgov_pods", {{"team", "team-a"}, {"state", "preempted"}}), 1);
}

TEST(MetricsTest, ScrapeReflectsTheLedgerAtThatMoment) {
  Scenario s;
  s.Script();
  auto usage = [&] {
    return ParseExposition(s.metrics->Render())
        .Value("taskgov_quota_usage", {{"team", "team-a"}, {"resource", "nvidia.com/gpu"}});
  };
  EXPECT_EQ(usage(), 4);
  auto r = s.book.Assume("a-2", TeamId("team-a"), FlavorId("ml.p5.48xlarge"),
                         ResourceList{{"nvidia.com/gpu", 4}},  // what the cohort pool has left
                         scheduler::ledger::Ledger::Mode::kWithinNominal, 30'000,
                         scheduler::ledger::PodMeta{});
  ASSERT_TRUE(std::holds_alternative<scheduler::ledger::Charge>(r));
  EXPECT_EQ(usage(), 8);
  EXPECT_TRUE(s.book.Release("a-2"));
  EXPECT_EQ(usage(), 4);
}

// Property: in every cohort pool Σ lent = Σ borrowed, and no team lends more than it leaves
// idle of its lendable quota.
TEST(MetricsTest, LentSumsToBorrowedInEachCohort) {
  struct Line {
    const char* team;
    int64_t nominal, borrowing, lending, usage;
  };
  struct Case {
    const char* name;
    std::vector<Line> lines;
  };
  using scheduler::model::kUnlimited;
  const std::vector<Case> cases = {
      {"one borrower, two lenders",
       {{"l1", 10, 0, kUnlimited, 2}, {"l2", 10, 0, kUnlimited, 6}, {"b", 4, kUnlimited, 0, 12}}},
      {"lending limits", {{"l1", 10, 0, 3, 0}, {"l2", 10, 0, 5, 0}, {"b", 0, kUnlimited, 0, 6}}},
      {"two borrowers", {{"x", 8, 8, 4, 10}, {"y", 8, 8, 8, 11}, {"z", 16, 0, kUnlimited, 1}}},
      {"nobody borrows", {{"p", 8, 8, kUnlimited, 8}, {"q", 8, 8, kUnlimited, 3}}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    scheduler::testing::PolicyBuilder builder;
    for (const Line& l : c.lines) {
      builder.Team(std::string("lent-") + l.team, "pool")
          .Quota("f", "nvidia.com/gpu", l.nominal, l.borrowing, l.lending);
    }
    common::FakeClock clock;
    scheduler::ledger::QuotaBook book(builder.Build(), &clock);
    for (const Line& l : c.lines) {
      const std::string team = std::string("lent-") + l.team;
      book.ConfirmBound("uid-" + team, TeamId(team), FlavorId("f"),
                        ResourceList{{"nvidia.com/gpu", l.usage}}, scheduler::ledger::PodMeta{});
    }
    Metrics m;
    Sources sources;
    sources.book = &book;
    m.SetSources(sources);
    const Exposition x = ParseExposition(m.Render());
    double lent = 0, borrowed = 0;
    for (const Line& l : c.lines) {
      const std::map<std::string, std::string> labels = {{"team", std::string("lent-") + l.team}};
      const double t_lent = x.Value("taskgov_quota_lent", labels).value_or(-1);
      const double t_borrowed = x.Value("taskgov_quota_borrowed", labels).value_or(-1);
      EXPECT_GE(t_lent, 0);
      EXPECT_EQ(t_borrowed, static_cast<double>(std::max<int64_t>(0, l.usage - l.nominal)));
      const int64_t lendable = std::min(l.lending, l.nominal);
      const int64_t guaranteed = l.nominal - lendable;
      const int64_t idle =
          std::max<int64_t>(0, l.nominal - std::max(guaranteed, std::min(l.usage, l.nominal)));
      EXPECT_LE(t_lent, static_cast<double>(idle) + 1e-9) << l.team;
      lent += t_lent;
      borrowed += t_borrowed;
    }
    EXPECT_NEAR(lent, borrowed, 1e-9);
  }
}

// A cohort's own quota is exported, and joins its pool: the capacity is its teams' lendable
// quota plus the cohort's own (Kueue's cohort subtree quota), the usage what its teams hold in
// the pool; a team of no cohort has no pool series.
TEST(MetricsTest, CohortQuotaAndPool) {
  common::FakeClock clock;
  scheduler::ledger::QuotaBook book(
      scheduler::testing::PolicyBuilder()
          .Team("pool-a", "org")
          .Quota("f", "nvidia.com/gpu", 4, scheduler::model::kUnlimited,
                 /*lending_limit=*/1)
          .Team("pool-b", "org")
          .Quota("f", "nvidia.com/gpu", 0)
          .Team("pool-alone")
          .Quota("f", "nvidia.com/gpu", 2)
          .CohortQuota("org", "f", "nvidia.com/gpu", 6)
          .Build(),
      &clock);
  book.ConfirmBound("uid-b", TeamId("pool-b"), FlavorId("f"), ResourceList{{"nvidia.com/gpu", 5}},
                    scheduler::ledger::PodMeta{});
  Options options;
  options.kueue_compatible = true;
  Metrics m(options);
  Sources sources;
  sources.book = &book;
  m.SetSources(sources);
  const Exposition x = ParseExposition(m.Render());
  const std::map<std::string, std::string> org = {
      {"cohort", "org"}, {"flavor", "f"}, {"resource", "nvidia.com/gpu"}};
  EXPECT_EQ(x.Value("taskgov_cohort_quota", org), 6);
  EXPECT_EQ(x.Value("taskgov_cohort_pool_capacity", org), 7);  // a lends 1, the cohort 6
  EXPECT_EQ(x.Value("kueue_cohort_subtree_quota", org), 7);
  EXPECT_EQ(x.Value("taskgov_cohort_pool_usage", org), 5);
  EXPECT_EQ(x.Value("taskgov_cohort_pool_capacity", {{"cohort", ""}}), std::nullopt);
  // b borrows 5 of the 7 idle (a's 1 and the cohort's 6): a carries 5·1/7 of it.
  EXPECT_NEAR(x.Value("taskgov_quota_lent", {{"team", "pool-a"}}).value_or(-1), 5.0 / 7, 1e-9);
}

// Hierarchical cohorts: a parent cohort's pool has series of its own (its subtree quota and
// what its children store in it), and the teams of the tree lend to each other across it.
//   org ── lab ── tree-a (nominal 4), tree-b (nominal 0)
//       └─ ops ── tree-c (nominal 2)
TEST(MetricsTest, ACohortTreeHasAPoolPerCohort) {
  common::FakeClock clock;
  scheduler::ledger::QuotaBook book(scheduler::testing::PolicyBuilder()
                                        .Cohort("org")
                                        .Cohort("lab", "org")
                                        .CohortWeight("lab", 0.5)
                                        .Cohort("ops", "org")
                                        .Team("tree-a", "lab")
                                        .Quota("f", "nvidia.com/gpu", 4)
                                        .Team("tree-b", "lab")
                                        .Quota("f", "nvidia.com/gpu", 0)
                                        .Team("tree-c", "ops")
                                        .Quota("f", "nvidia.com/gpu", 2)
                                        .Build(),
                                    &clock);
  book.ConfirmBound("uid-tree-b", TeamId("tree-b"), FlavorId("f"),
                    ResourceList{{"nvidia.com/gpu", 5}}, scheduler::ledger::PodMeta{});
  Metrics m;
  Sources sources;
  sources.book = &book;
  m.SetSources(sources);
  const Exposition x = ParseExposition(m.Render());
  auto pool = [](const char* cohort) {
    return std::map<std::string, std::string>{
        {"cohort", cohort}, {"flavor", "f"}, {"resource", "nvidia.com/gpu"}};
  };
  EXPECT_EQ(x.Value("taskgov_cohort_pool_capacity", pool("lab")), 4);
  EXPECT_EQ(x.Value("taskgov_cohort_pool_usage", pool("lab")), 5);
  EXPECT_EQ(x.Value("taskgov_cohort_pool_capacity", pool("org")), 6);
  EXPECT_EQ(x.Value("taskgov_cohort_pool_usage", pool("org")), 5);
  EXPECT_EQ(x.Value("taskgov_cohort_pool_capacity", pool("ops")), 2);
  // b borrows 5: a's idle 4 and c's idle 2 (across the tree) carry it, 4·5/6 and 2·5/6.
  EXPECT_NEAR(x.Value("taskgov_quota_lent", {{"team", "tree-a"}}).value_or(-1), 20.0 / 6, 1e-9);
  EXPECT_NEAR(x.Value("taskgov_quota_lent", {{"team", "tree-c"}}).value_or(-1), 10.0 / 6, 1e-9);
  // lab borrows 1 beyond its subtree quota of what org could lend (6): 166‰, by weight 0.5.
  EXPECT_EQ(x.Value("taskgov_cohort_weighted_share", {{"cohort", "lab"}, {"flavor", "f"}}), 0.333);
  EXPECT_EQ(x.Value("taskgov_cohort_weighted_share", {{"cohort", "ops"}, {"flavor", "f"}}), 0);
  EXPECT_FALSE(x.Value("taskgov_cohort_weighted_share", {{"cohort", "org"}, {"flavor", "f"}}))
      << "a root borrows from no one";
}

TEST(MetricsTest, KueueFamiliesOnlyWhenSwitchedOn) {
  Scenario plain(false);
  plain.Script();
  const std::string off = plain.metrics->Render();
  EXPECT_EQ(off.find("kueue_"), std::string::npos);

  Scenario kueue(true);
  kueue.Script();
  const std::string on = kueue.metrics->Render();
  const Exposition x = ParseExposition(on);
  const std::map<std::string, std::string> want = {
      {"kueue_cluster_queue_nominal_quota", "gauge"},
      {"kueue_cluster_queue_resource_usage", "gauge"},
      {"kueue_cluster_queue_borrowing_limit", "gauge"},
      {"kueue_cluster_queue_lending_limit", "gauge"},
      {"kueue_cluster_queue_weighted_share", "gauge"},
      {"kueue_pending_workloads", "gauge"},
      {"kueue_admitted_active_workloads", "gauge"},
      {"kueue_admission_wait_time_seconds", "histogram"},
      {"kueue_preempted_workloads_total", "counter"},
      {"kueue_evicted_workloads_total", "counter"},
      {"kueue_cohort_subtree_quota", "gauge"},
      {"kueue_cohort_weighted_share", "gauge"},
  };
  for (const auto& [name, type] : want) {
    ASSERT_TRUE(x.families.count(name)) << name;
    EXPECT_EQ(x.families.at(name).type, type) << name;
  }
  // Kueue's labels, with cluster_queue = the team's ClusterQueue name.
  const std::map<std::string, std::string> ml = {{"cohort", ""},
                                                 {"cluster_queue", "hyperpod-ns-ml-clusterqueue"},
                                                 {"flavor", "ml.trn1.32xlarge"},
                                                 {"resource", "aws.amazon.com/neurondevice"}};
  EXPECT_EQ(x.Value("kueue_cluster_queue_nominal_quota", ml), 16);
  EXPECT_EQ(x.Value("kueue_cluster_queue_resource_usage", ml), 16);
  EXPECT_EQ(x.Value("kueue_cluster_queue_resource_usage",
                    {{"cohort", "research"}, {"cluster_queue", "team-a"}, {"resource", "cpu"}}),
            48);
  EXPECT_EQ(x.Value("kueue_cluster_queue_borrowing_limit",
                    {{"cluster_queue", "team-b"}, {"resource", "nvidia.com/gpu"}}),
            INFINITY);
  EXPECT_EQ(x.Value("kueue_cluster_queue_weighted_share", {{"cluster_queue", "team-b"}}), 166);
  EXPECT_EQ(
      x.Value("kueue_pending_workloads", {{"cluster_queue", "team-b"}, {"status", "inadmissible"}}),
      2);
  EXPECT_EQ(x.Value("kueue_admitted_active_workloads",
                    {{"cluster_queue", "hyperpod-ns-ml-clusterqueue"}}),
            2);
  EXPECT_EQ(x.Value("kueue_admission_wait_time_seconds_count", {{"cluster_queue", "team-a"}}), 1);
  EXPECT_EQ(x.Value("kueue_admission_wait_time_seconds_bucket",
                    {{"cluster_queue", "team-a"}, {"le", "80"}}),
            0);  // waited 90 s
  EXPECT_EQ(x.Value("kueue_admission_wait_time_seconds_bucket",
                    {{"cluster_queue", "team-a"}, {"le", "160"}}),
            1);
  EXPECT_EQ(x.Value("kueue_preempted_workloads_total",
                    {{"preempting_cluster_queue", "team-a"}, {"reason", "InCohortReclamation"}}),
            3);  // 1 pod evicted, 2 stopped by pausing their job
  // Kueue evicts a workload by suspending its job: the job team-a paused, in team-b's queue.
  EXPECT_EQ(
      x.Value("kueue_evicted_workloads_total",
              {{"cluster_queue", "team-b"}, {"reason", "Preempted"}, {"underlying_cause", ""}}),
      1);

  // The taskgov families are the same either way.
  std::string filtered;
  std::istringstream lines(on);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("kueue_", 0) == 0 || line.rfind("# HELP kueue_", 0) == 0 ||
        line.rfind("# TYPE kueue_", 0) == 0) {
      continue;
    }
    filtered += line + "\n";
  }
  EXPECT_EQ(filtered, off);
}

std::vector<std::string> LinesNaming(const std::string& text, const std::string& value) {
  std::vector<std::string> out;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line[0] != '#' && line.find("\"" + value + "\"") != std::string::npos) {
      out.push_back(line);
    }
  }
  return out;
}

TEST(MetricsTest, SeriesOfRemovedTeamsDisappearOnceTheirUsageDrains) {
  Scenario s;
  s.Script();
  ASSERT_FALSE(LinesNaming(s.metrics->Render(), "team-b").empty());

  // team-b leaves the policy while its pods still run: its usage keeps its series.
  s.book.ApplyPolicy(testing::ScenarioPolicy(/*with_team_b=*/false));
  s.cluster.SetPolicy(s.book.ledger().policy());
  Exposition x = ParseExposition(s.metrics->Render());
  const std::map<std::string, std::string> b_gpu = {{"team", "team-b"},
                                                    {"resource", "nvidia.com/gpu"}};
  EXPECT_EQ(x.Value("taskgov_quota_usage", b_gpu), 24);
  EXPECT_EQ(x.Value("taskgov_quota_nominal", b_gpu), 0);
  EXPECT_EQ(x.Value("taskgov_quota_borrowed", b_gpu), 24);
  EXPECT_EQ(x.Value("taskgov_team_info", {{"team", "team-b"}, {"cohort", "research"}}), 1);
  // It still occupies its old cohort's pool: team-a lends all its idle 12.
  EXPECT_EQ(x.Value("taskgov_quota_lent", {{"team", "team-a"}, {"resource", "nvidia.com/gpu"}}),
            12);
  EXPECT_EQ(x.Value("kueue_cluster_queue_resource_usage",
                    {{"cluster_queue", "team-b"}, {"cohort", "research"}}),
            24);

  // Its pods end: every series naming it goes, in every family.
  EXPECT_TRUE(s.book.Release("b-1"));
  EXPECT_TRUE(s.book.Release("b-2"));
  const std::string text = s.metrics->Render();
  EXPECT_EQ(LinesNaming(text, "team-b"), std::vector<std::string>{});
  CheckWellFormed(text);
  x = ParseExposition(text);
  EXPECT_EQ(x.Value("taskgov_quota_lent", {{"team", "team-a"}, {"resource", "nvidia.com/gpu"}}), 0);
  // team-a's own counters stay (its preemption of team-b still counts for Kueue).
  EXPECT_EQ(x.Value("taskgov_admissions_total", {{"team", "team-a"}}), 2);
  EXPECT_EQ(x.Value("kueue_preempted_workloads_total", {{"preempting_cluster_queue", "team-a"}}),
            3);

  // A team that comes back continues its counters.
  s.book.ApplyPolicy(testing::ScenarioPolicy(/*with_team_b=*/true));
  x = ParseExposition(s.metrics->Render());
  EXPECT_EQ(x.Value("taskgov_refusals_total", {{"team", "team-b"}, {"reason", "pool"}}), 1);
  EXPECT_EQ(x.Value("taskgov_quota_usage", b_gpu), 0);
}

// 405 and 413 replies the server writes itself are on a route's path: they keep its verb.
TEST(MetricsTest, ServerRepliesOnARoutesPathKeepTheVerb) {
  Metrics m;
  m.ObserveRequest("/scheduler/filter", true, 405, true, "", std::chrono::microseconds(10));
  m.ObserveRequest("/scheduler/preempt", true, 413, true, "", std::chrono::microseconds(10));
  const Exposition x = ParseExposition(m.Render());
  EXPECT_EQ(x.Value("taskgov_webhook_requests_total",
                    {{"verb", "filter"}, {"outcome", "method_not_allowed"}}),
            1);
  EXPECT_EQ(
      x.Value("taskgov_webhook_requests_total", {{"verb", "preempt"}, {"outcome", "too_large"}}),
      1);
}

TEST(MetricsTest, ConsoleAccessDecisionsAreCountedByResult) {
  Metrics m;
  EXPECT_EQ(m.Render().find("taskgov_console_access_total"), std::string::npos);
  Sources sources;
  sources.console_access = [] { return ConsoleAccessTotals{4, 3, 2, 1, 5}; };
  m.SetSources(sources);
  const Exposition x = ParseExposition(m.Render());
  EXPECT_EQ(x.Value("taskgov_console_access_total", {{"result", "full"}}), 4);
  EXPECT_EQ(x.Value("taskgov_console_access_total", {{"result", "team"}}), 3);
  EXPECT_EQ(x.Value("taskgov_console_access_total", {{"result", "unauthenticated"}}), 2);
  EXPECT_EQ(x.Value("taskgov_console_access_total", {{"result", "forbidden"}}), 1);
  EXPECT_EQ(x.Value("taskgov_console_access_total", {{"result", "error"}}), 5);
}

TEST(MetricsTest, RequeueRequestsAreCountedByOutcome) {
  Metrics m;
  EXPECT_EQ(m.Render().find("taskgov_requeue_requests_total"), std::string::npos);
  Sources sources;
  sources.requeues = [] { return RequeueTotals{7, 2}; };
  m.SetSources(sources);
  const std::string text = m.Render();
  CheckWellFormed(text);
  const Exposition x = ParseExposition(text);
  EXPECT_EQ(x.Value("taskgov_requeue_requests_total", {{"outcome", "requested"}}), 7);
  EXPECT_EQ(x.Value("taskgov_requeue_requests_total", {{"outcome", "failed"}}), 2);
}

TEST(MetricsTest, HttpListenerRefusalsAndGaugesAreReadFromTheSources) {
  Metrics m;
  EXPECT_EQ(m.Render().find("taskgov_http_"), std::string::npos);  // no source, no series
  HttpListenerTotals webhook;
  webhook.listener = "webhook";
  webhook.refused[static_cast<size_t>(HttpRefusal::kIdleEvicted)] = 5;
  webhook.refused[static_cast<size_t>(HttpRefusal::kBodyBudget)] = 2;
  webhook.open_connections = 1024;
  webhook.inflight_body_bytes = 1 << 20;
  HttpListenerTotals health;
  health.listener = "metrics";
  health.refused[static_cast<size_t>(HttpRefusal::kHeaderTimeout)] = 7;
  health.open_connections = 3;
  Sources sources;
  sources.http_listeners = [&] { return std::vector<HttpListenerTotals>{webhook, health}; };
  m.SetSources(sources);
  const std::string text = m.Render();
  const Exposition x = ParseExposition(text);
  EXPECT_EQ(x.Value("taskgov_http_connections_refused_total",
                    {{"listener", "webhook"}, {"reason", "idle_evicted"}}),
            5);
  EXPECT_EQ(x.Value("taskgov_http_connections_refused_total",
                    {{"listener", "webhook"}, {"reason", "body_budget"}}),
            2);
  EXPECT_EQ(x.Value("taskgov_http_connections_refused_total",
                    {{"listener", "webhook"}, {"reason", "cap"}}),
            0);  // every reason has a series from the start
  EXPECT_EQ(x.Value("taskgov_http_connections_refused_total",
                    {{"listener", "metrics"}, {"reason", "header_timeout"}}),
            7);
  EXPECT_EQ(x.Value("taskgov_http_open_connections", {{"listener", "webhook"}}), 1024);
  EXPECT_EQ(x.Value("taskgov_http_open_connections", {{"listener", "metrics"}}), 3);
  EXPECT_EQ(x.Value("taskgov_http_inflight_body_bytes", {{"listener", "webhook"}}), 1 << 20);
  for (const LabelValue& reason : kHttpRefusals) {
    EXPECT_NE(text.find(std::string(reason.name) + " ("), std::string::npos) << reason.name;
  }
}

TEST(MetricsTest, WebhookVerbsAreRoutesNotPaths) {
  Metrics m;
  for (int i = 0; i < 50; ++i) {
    m.ObserveRequest("/probe/" + std::to_string(i), false, 404, true, "",
                     std::chrono::microseconds(10));
  }
  m.ObserveRequest("/scheduler/filter", true, 200, true, "", std::chrono::microseconds(10));
  m.ObserveRequest("/scheduler/bind", true, 500, true, "", std::chrono::microseconds(10));
  m.ObserveRequest("/scheduler/bind", true, 200, false, "", std::chrono::microseconds(10));
  m.ObserveRequest("/filter", false, 405, true, "", std::chrono::microseconds(10));  // GET /filter
  const Exposition x = ParseExposition(m.Render());
  std::set<std::string> verbs;
  for (const testing::Sample& s : x.All("taskgov_webhook_requests_total")) {
    verbs.insert(s.labels.at("verb"));
  }
  EXPECT_EQ(verbs, (std::set<std::string>{"bind", "filter", "unknown"}));
  EXPECT_EQ(
      x.Value("taskgov_webhook_requests_total", {{"verb", "unknown"}, {"outcome", "not_found"}}),
      50);
  EXPECT_EQ(x.Value("taskgov_webhook_requests_total",
                    {{"verb", "unknown"}, {"outcome", "method_not_allowed"}}),
            1);
  EXPECT_EQ(
      x.Value("taskgov_webhook_requests_total", {{"verb", "bind"}, {"outcome", "server_error"}}),
      1);
  EXPECT_EQ(
      x.Value("taskgov_webhook_requests_total", {{"verb", "bind"}, {"outcome", "reply_failed"}}),
      1);
  EXPECT_EQ(x.Value("taskgov_webhook_request_duration_seconds_count", {{"verb", "unknown"}}), 51);
}

// The outcome is the handler's label when it gave one (a 200 that carries Error is not "ok"),
// else the status of the reply the server wrote itself; every value is listed in the HELP text.
TEST(MetricsTest, WebhookOutcomesFollowTheHandlerLabelThenTheStatus) {
  struct Case {
    std::string name;
    int status;
    bool sent;
    std::string_view handler_outcome;
    std::string_view expected;
  };
  const std::vector<Case> cases = {
      {"HandlerOk", 200, true, "ok", "ok"},
      {"ErrorReplyIsNotOk", 200, true, "error_reply", "error_reply"},
      {"Unusable", 200, true, "unusable", "unusable"},
      {"HandlerBadRequest", 400, true, "bad_request", "bad_request"},
      {"ServerNotFound", 404, true, "", "not_found"},
      {"ServerMethod", 405, true, "", "method_not_allowed"},
      {"ServerBodyTooLarge", 413, true, "", "too_large"},
      {"ServerHeaderTooLarge", 431, true, "", "too_large"},
      {"ServerMalformedHttp", 400, true, "", "bad_request"},
      {"Server500", 500, true, "", "server_error"},
      {"UndeclaredHandlerLabel", 200, true, "weird", "server_error"},
      {"NotWritten", 200, false, "ok", "reply_failed"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Metrics m;
    m.ObserveRequest("/filter", true, c.status, c.sent, c.handler_outcome,
                     std::chrono::microseconds(1));
    const std::string text = m.Render();
    const Exposition x = ParseExposition(text);
    for (const LabelValue& v : kWebhookOutcomes) {
      EXPECT_EQ(x.Value("taskgov_webhook_requests_total",
                        {{"verb", "filter"}, {"outcome", std::string(v.name)}}),
                v.name == c.expected ? 1 : 0)
          << v.name;
      EXPECT_NE(text.find(std::string(v.name) + " ("), std::string::npos)
          << v.name << " is not in the HELP text";
    }
  }
}

TEST(MetricsTest, HelpTextsListExactlyTheEmittedReasons) {
  Options options;
  options.kueue_compatible = true;
  Metrics m(options);
  Sources sources;
  sources.informers = [] { return std::vector<InformerTotals>{{"pods", {{"ended", 1}}, 0}}; };
  m.SetSources(sources);
  const std::string text = m.Render();
  auto help = [&](const std::string& family) {
    const size_t at = text.find("# HELP " + family + " ");
    EXPECT_NE(at, std::string::npos) << family;
    return at == std::string::npos ? "" : text.substr(at, text.find('\n', at) - at);
  };
  const std::string watch = help("taskgov_watch_restarts_total");
  for (const auto& r : scheduler::kube::kWatchRestartReasons) {
    EXPECT_NE(watch.find(std::string(r.name) + " ("), std::string::npos) << r.name;
  }
  EXPECT_EQ(watch.find("gone ("), std::string::npos);
  EXPECT_EQ(watch.find("closed ("), std::string::npos);
  const std::string kueue = help("kueue_preempted_workloads_total");
  const std::string ours = help("taskgov_preemptions_total");
  for (const PreemptionReason& r : kPreemptionReasons) {
    EXPECT_NE(kueue.find(std::string(r.kueue_reason) + " (" + std::string(r.name) + ")"),
              std::string::npos)
        << r.kueue_reason;
    EXPECT_NE(ours.find(std::string(r.name) + " ("), std::string::npos) << r.name;
  }
}

TEST(MetricsTest, InformerAgeFollowsTheInjectedClock) {
  common::FakeClock clock(100'000);
  Options options;
  options.clock = &clock;
  Metrics m(options);
  int64_t last_event_ms = clock.NowMs();
  Sources sources;
  sources.informers = [&] {
    return std::vector<InformerTotals>{{"pods", {}, last_event_ms}, {"nodes", {}, 0}};
  };
  m.SetSources(sources);
  clock.Advance(12'500);
  Exposition x = ParseExposition(m.Render());
  EXPECT_EQ(x.Value("taskgov_informer_last_event_age_seconds", {{"resource", "pods"}}), 12.5);
  EXPECT_EQ(x.Value("taskgov_informer_last_event_timestamp_seconds", {{"resource", "pods"}}), 100);
  // An informer without an event yet has no age.
  EXPECT_FALSE(x.Value("taskgov_informer_last_event_age_seconds", {{"resource", "nodes"}}));
  last_event_ms = 110'000;
  x = ParseExposition(m.Render());
  EXPECT_EQ(x.Value("taskgov_informer_last_event_age_seconds", {{"resource", "pods"}}), 2.5);
}

// The informers' and the preemption controller's totals are read when scraped, as they are then:
// nothing is copied or diffed in between, so the counters are exactly the components' own.
TEST(MetricsTest, ComponentTotalsAreReadAtScrapeTime) {
  Scenario s;
  s.Script();
  Exposition x = ParseExposition(s.metrics->Render());
  EXPECT_EQ(x.Value("taskgov_watch_restarts_total", {{"resource", "pods"}, {"reason", "expired"}}),
            1);
  s.NoteWatchRestart("pods", "expired");
  s.NoteWatchRestart("nodes", "dropped");
  s.NotePreemption("team-a", "team-b", scheduler::decisions::PreemptionReason::kReclaim);
  s.NotePreemption("team-b", "team-b", scheduler::decisions::PreemptionReason::kInTeamPriority);
  s.SetPreempted("team-b", 2);  // of its 2 bound pods
  x = ParseExposition(s.metrics->Render());
  EXPECT_EQ(x.Value("taskgov_watch_restarts_total", {{"resource", "pods"}, {"reason", "expired"}}),
            2);
  EXPECT_EQ(x.Value("taskgov_watch_restarts_total", {{"resource", "nodes"}, {"reason", "dropped"}}),
            1);
  EXPECT_EQ(x.Value("taskgov_preemptions_total", {{"team", "team-a"},
                                                  {"victim_team", "team-b"},
                                                  {"reason", "reclaim"},
                                                  {"mechanism", "evict"}}),
            2);
  EXPECT_EQ(x.Value("taskgov_preemptions_total", {{"team", "team-b"},
                                                  {"victim_team", "team-b"},
                                                  {"reason", "within_team"},
                                                  {"mechanism", "evict"}}),
            1);
  EXPECT_EQ(x.Value("kueue_preempted_workloads_total",
                    {{"preempting_cluster_queue", "team-b"}, {"reason", "InClusterQueue"}}),
            1);
  EXPECT_EQ(x.Value("taskgov_pods", {{"team", "team-b"}, {"state", "preempted"}}), 2);
  EXPECT_EQ(x.Value("taskgov_pods", {{"team", "team-b"}, {"state", "running"}}), 0);
  EXPECT_EQ(x.Value("taskgov_pods", {{"team", "ml"}, {"state", "preempted"}}), 0);
}

// Issue 35: preemptions by mechanism (pods evicted, pods stopped by suspending their job), the
// jobs paused, and the jobs still paused per team.
TEST(MetricsTest, PausedJobsAreCountedByMechanismAndTeam) {
  Scenario s;
  s.Script();
  Exposition x = ParseExposition(s.metrics->Render());
  const std::map<std::string, std::string> reclaim = {
      {"team", "team-a"}, {"victim_team", "team-b"}, {"reason", "reclaim"}};
  auto with = [](std::map<std::string, std::string> labels, const char* mechanism) {
    labels["mechanism"] = mechanism;
    return labels;
  };
  EXPECT_EQ(x.Value("taskgov_preemptions_total", with(reclaim, "evict")), 1);
  EXPECT_EQ(x.Value("taskgov_preemptions_total", with(reclaim, "suspend")), 2);
  EXPECT_EQ(x.Value("taskgov_jobs_paused_total", reclaim), 1);
  EXPECT_EQ(x.Value("taskgov_paused_workloads", {{"team", "team-b"}}), 1);
  EXPECT_EQ(x.Value("taskgov_paused_workloads", {{"team", "team-a"}}), 0);  // every team has one
  EXPECT_EQ(x.Value("taskgov_paused_workloads", {{"team", "ml"}}), 0);
  // Only pausing, within a team: no evict series for that key.
  s.NotePause("team-b", "team-b", scheduler::decisions::PreemptionReason::kInTeamPriority, 4);
  s.SetPausedWorkloads("team-b", 2);
  x = ParseExposition(s.metrics->Render());
  const std::map<std::string, std::string> within = {
      {"team", "team-b"}, {"victim_team", "team-b"}, {"reason", "within_team"}};
  EXPECT_FALSE(x.Value("taskgov_preemptions_total", with(within, "evict")));
  EXPECT_EQ(x.Value("taskgov_preemptions_total", with(within, "suspend")), 4);
  EXPECT_EQ(x.Value("taskgov_jobs_paused_total", within), 1);
  EXPECT_EQ(x.Value("taskgov_paused_workloads", {{"team", "team-b"}}), 2);
  EXPECT_EQ(x.Value("kueue_evicted_workloads_total", {{"cluster_queue", "team-b"}}), 2);
}

// taskgov_pods' states partition a team's pods, whatever order the informers and the
// preemption controller learn of an eviction or a deletion in: each charged pod is running,
// preempted or terminating, once.
TEST(MetricsTest, PodStatesPartitionATeamsPods) {
  struct Case {
    const char* name;
    int64_t bound, assumed, pending, terminating, preempted;
    TeamPods want;  // pending, admitted, running, preempted, terminating
  };
  const std::vector<Case> cases = {
      {"nothing leaving", 5, 1, 2, 0, 0, {2, 1, 5, 0, 0}},
      {"evicted, seen being deleted", 5, 0, 0, 2, 2, {0, 0, 3, 2, 0}},
      {"evicted, not seen being deleted yet", 5, 0, 0, 0, 2, {0, 0, 3, 2, 0}},
      {"deleted by its owner", 5, 0, 0, 1, 0, {0, 0, 4, 0, 1}},
      {"evicted and deleted", 5, 0, 0, 3, 1, {0, 0, 2, 1, 2}},
      {"evicted and gone before the controller saw it", 1, 0, 0, 0, 3, {0, 0, 0, 1, 0}},
  };
  for (const Case& c : cases) {
    scheduler::ledger::QuotaBook::TeamCounts charged;
    charged.running = c.bound;
    charged.assumed = c.assumed;
    const TeamPods got = PartitionTeamPods(charged, c.pending, c.terminating, c.preempted);
    EXPECT_EQ(std::vector<int64_t>(
                  {got.pending, got.admitted, got.running, got.preempted, got.terminating}),
              std::vector<int64_t>({c.want.pending, c.want.admitted, c.want.running,
                                    c.want.preempted, c.want.terminating}))
        << c.name;
    EXPECT_EQ(got.running + got.preempted + got.terminating, c.bound) << c.name;
  }
}

// taskgov_ungoverned_pods counts, per team, the running pods another scheduler bound.
TEST(MetricsTest, UngovernedPodsAreCountedPerTeam) {
  Scenario s;
  s.cluster.OnNodeUpsert(scheduler::testing::NodeBuilder("p5-0")
                             .InstanceType("ml.p5.48xlarge")
                             .Allocatable("nvidia.com/gpu", "8"));
  auto running = [](const std::string& name, const std::string& scheduler) {
    scheduler::model::Pod pod = scheduler::testing::PodBuilder(name)
                                    .Namespace("ns-team-a")
                                    .SchedulerName(scheduler)
                                    .Gpus(1)
                                    .Build();
    pod.node_name = "p5-0";
    pod.phase = scheduler::model::PodPhase::kRunning;
    return pod;
  };
  s.cluster.OnPodUpsert(running("bypass-0", "default-scheduler"));
  s.cluster.OnPodUpsert(running("bypass-1", "volcano"));
  s.cluster.OnPodUpsert(running("governed", "taskgov"));
  Exposition x = ParseExposition(s.metrics->Render());
  EXPECT_EQ(x.Value("taskgov_ungoverned_pods", {{"team", "team-a"}}), 2);
  EXPECT_EQ(x.Value("taskgov_ungoverned_pods", {{"team", "team-b"}}), 0);
  s.cluster.OnPodDelete(running("bypass-1", "volcano"));
  x = ParseExposition(s.metrics->Render());
  EXPECT_EQ(x.Value("taskgov_ungoverned_pods", {{"team", "team-a"}}), 1);
}

// taskgov_topology_waiting_workloads counts, per team, the pending workloads (a gang once) whose
// last refusal was for their topology, and forgets one refused for something else since.
TEST(MetricsTest, WorkloadsWaitingForTheirTopologyAreCountedPerTeam) {
  Scenario s;
  auto refuse = [&](const std::string& name, const std::string& workload, bool topology) {
    scheduler::state::PendingPod p;
    p.uid = "uid-" + name;
    p.key = "ns-team-a/" + name;
    p.team = scheduler::model::TeamNames().Intern("team-a");
    p.created_ms = 1;
    p.request = scheduler::model::ResourceList{{"nvidia.com/gpu", 8}};
    p.workload = workload;
    p.workload_size = workload.empty() ? 0 : 2;
    p.refusal = topology ? "no network-node-layer-2 domain has room" : "quota";
    p.topology_refused = topology;
    s.cluster.pending().NoteRefused(p);
  };
  refuse("g-0", "ns-team-a/g", true);
  refuse("g-1", "ns-team-a/g", true);
  refuse("h-0", "ns-team-a/h", false);
  refuse("lone", "", false);
  Exposition x = ParseExposition(s.metrics->Render());
  EXPECT_EQ(x.Value("taskgov_topology_waiting_workloads", {{"team", "team-a"}}), 1);
  EXPECT_EQ(x.Value("taskgov_topology_waiting_workloads", {{"team", "team-b"}}), 0);
  EXPECT_EQ(x.Value("taskgov_workloads", {{"team", "team-a"}, {"state", "pending"}}), 3);
  refuse("g-0", "ns-team-a/g", false);
  refuse("g-1", "ns-team-a/g", false);
  refuse("lone", "", true);  // e.g. an invalid request
  x = ParseExposition(s.metrics->Render());
  EXPECT_EQ(x.Value("taskgov_topology_waiting_workloads", {{"team", "team-a"}}), 1);
}

// Only a team's preemptions count: plain priority (outside governance) and victims of no team do
// not, under any label.
TEST(MetricsTest, PreemptionsOutsideGovernanceAreNotCounted) {
  Scenario s;
  s.NotePreemption("team-a", "team-b", scheduler::decisions::PreemptionReason::kPriority);
  s.NotePreemption("team-a", "", scheduler::decisions::PreemptionReason::kReclaim);
  const Exposition x = ParseExposition(s.metrics->Render());
  EXPECT_TRUE(x.All("taskgov_preemptions_total").empty());
  EXPECT_TRUE(x.All("kueue_preempted_workloads_total").empty());
  EXPECT_EQ(x.families.count("taskgov_preemptions_total"), 1u);  // declared, without series
}

TEST(MetricsTest, NoWatchRestartFamilyBeforeTheFirstRestart) {
  Metrics m;
  Sources sources;
  sources.informers = [] { return std::vector<InformerTotals>{{"pods", {{"expired", 0}}, 1}}; };
  m.SetSources(sources);
  const std::string text = m.Render();
  EXPECT_EQ(text.find("taskgov_watch_restarts_total"), std::string::npos);
  CheckWellFormed(text);
}

TEST(MetricsTest, LedgerRepairsCountWhatTheReconcilerRepaired) {
  Scenario s;
  s.Script();
  Exposition x = ParseExposition(s.metrics->Render());
  for (const char* kind : {"expired", "orphan_released", "uncharged_charged", "drift_cell"}) {
    EXPECT_EQ(x.Value("taskgov_ledger_repairs_total", {{"kind", kind}}), 0) << kind;
  }
  // ml-2's 30 s reservation expires; a reconcile period later, usage charged to the ledger
  // without a reservation is repaired.
  s.clock.Advance(30'000);
  s.reconciler.Tick();
  {
    scheduler::ledger::Ledger::Session session(s.book.ledger());
    ASSERT_TRUE(std::holds_alternative<scheduler::ledger::Charge>(
        session.Reserve(TeamId("ml"), FlavorId("ml.trn1.32xlarge"),
                        ResourceList{{"aws.amazon.com/neurondevice", 1}},
                        scheduler::ledger::Ledger::Mode::kWithinNominal)));
  }
  s.clock.Advance(60'000);
  s.reconciler.Tick();
  x = ParseExposition(s.metrics->Render());
  EXPECT_EQ(x.Value("taskgov_ledger_repairs_total", {{"kind", "expired"}}), 1);
  EXPECT_EQ(x.Value("taskgov_ledger_repairs_total", {{"kind", "drift_cell"}}), 1);
  EXPECT_EQ(x.Value("taskgov_ledger_repairs_total", {{"kind", "orphan_released"}}), 0);
  EXPECT_EQ(x.Value("taskgov_ledger_repairs_total", {{"kind", "uncharged_charged"}}), 0);
  const std::string help = x.families.at("taskgov_ledger_repairs_total").help;
  for (const char* kind :
       {"expired (", "orphan_released (", "uncharged_charged (", "drift_cell ("}) {
    EXPECT_NE(help.find(kind), std::string::npos) << kind << " is not in the HELP text";
  }
}

// A charge given back twice: once the cell holds less than it (team-a's 48 cores stay in use),
// the ledger refuses the second release and the metric counts it.
TEST(MetricsTest, OverReleasesAreCounted) {
  Scenario s;
  s.Script();
  auto over = [&] {
    return ParseExposition(s.metrics->Render()).Value("taskgov_ledger_over_release_total", {});
  };
  EXPECT_EQ(over(), 0);
  scheduler::ledger::Ledger::Session session(s.book.ledger());
  auto r =
      session.Reserve(TeamId("team-a"), FlavorId("ml.p5.48xlarge"), ResourceList{{"cpu", 100'000}},
                      scheduler::ledger::Ledger::Mode::kWithinNominal);
  ASSERT_TRUE(std::holds_alternative<scheduler::ledger::Charge>(r));
  EXPECT_TRUE(session.Release(std::get<scheduler::ledger::Charge>(r)));
  EXPECT_FALSE(session.Release(std::get<scheduler::ledger::Charge>(r)));
  EXPECT_EQ(over(), 1);
}

TEST(MetricsTest, ConfigReloadState) {
  Metrics m;
  m.ObserveConfigReload(true, 5'000);
  Exposition x = ParseExposition(m.Render());
  EXPECT_EQ(x.Value("taskgov_config_last_reload_successful"), 1);
  EXPECT_EQ(x.Value("taskgov_config_last_reload_success_timestamp_seconds"), 5);
  m.ObserveConfigReload(false, 9'000);
  x = ParseExposition(m.Render());
  EXPECT_EQ(x.Value("taskgov_config_last_reload_successful"), 0);
  EXPECT_EQ(x.Value("taskgov_config_last_reload_success_timestamp_seconds"), 5);
  EXPECT_EQ(x.Value("taskgov_config_reloads_total", {{"result", "success"}}), 1);
  EXPECT_EQ(x.Value("taskgov_config_reloads_total", {{"result", "failure"}}), 1);
}

TEST(MetricsTest, PriorityClassesAreCapped) {
  Metrics m;
  const scheduler::model::NameId team = TeamId("capped");
  for (size_t i = 0; i < kMaxPriorityClasses + 20; ++i) {
    m.ObservePodBound(team, "class-" + std::to_string(i), 0, 1'000);
  }
  m.ObservePodBound(team, "", 0, 1'000);
  const Exposition x = ParseExposition(m.Render());
  const auto counts = x.All("taskgov_pod_wait_seconds_count");
  EXPECT_EQ(counts.size(), kMaxPriorityClasses + 2);  // + "other" + "none"
  EXPECT_EQ(x.Value("taskgov_pod_wait_seconds_count", {{"priority_class", "other"}}), 20);
  EXPECT_EQ(x.Value("taskgov_pod_wait_seconds_count", {{"priority_class", "none"}}), 1);
}

TEST(MetricsTest, RefusalCodesOutsideTheListCountAsOther) {
  Metrics m;
  scheduler::decisions::FilterDecision d;
  d.team = TeamId("team-x");
  d.reason = "something new";
  m.ObserveFilter(d);
  d.reason = "quota";
  m.ObserveFilter(d);
  const Exposition x = ParseExposition(m.Render());
  EXPECT_EQ(x.Value("taskgov_refusals_total", {{"team", "team-x"}, {"reason", "other"}}), 1);
  EXPECT_EQ(x.Value("taskgov_refusals_total", {{"team", "team-x"}, {"reason", "quota"}}), 1);
  EXPECT_EQ(x.All("taskgov_refusals_total").size(), 2u);  // zero reasons are not exported
}

TEST(MetricsTest, PodLifecycleFeedsWaitAndRunTimesOfTeamsOnly) {
  Metrics m;
  const scheduler::model::Pod pod = scheduler::testing::PodBuilder("w-0").Created(10'000);
  scheduler::state::ClusterState::PodLifecycle event;
  event.pod = &pod;
  event.team = TeamId("lifecycle");
  event.priority_class = "training";
  event.transition = scheduler::state::PodTransition::kBound;
  event.now_ms = 40'000;
  m.ObservePodLifecycle(event);
  event.transition = scheduler::state::PodTransition::kEnded;
  event.bound_ms = 40'000;
  event.now_ms = 100'000;
  m.ObservePodLifecycle(event);
  event.team = scheduler::state::kNoTeam;  // passed through: not counted
  m.ObservePodLifecycle(event);
  event.transition = scheduler::state::PodTransition::kBound;
  m.ObservePodLifecycle(event);
  const Exposition x = ParseExposition(m.Render());
  const std::map<std::string, std::string> labels = {{"team", "lifecycle"},
                                                     {"priority_class", "training"}};
  EXPECT_EQ(x.Value("taskgov_pod_wait_seconds_sum", labels), 30);
  EXPECT_EQ(x.Value("taskgov_pod_run_seconds_sum", labels), 60);
  EXPECT_EQ(x.All("taskgov_pod_wait_seconds_count").size(), 1u);
  EXPECT_EQ(x.All("taskgov_pod_run_seconds_count").size(), 1u);
}

TEST(MetricsTest, NegativeDurationsClampToZero) {
  Metrics m;
  m.ObservePodBound(TeamId("skew"), "p", 10'000, 9'000);  // clock skew: bound before created
  const Exposition x = ParseExposition(m.Render());
  EXPECT_EQ(x.Value("taskgov_pod_wait_seconds_sum", {{"team", "skew"}}), 0);
  EXPECT_EQ(x.Value("taskgov_pod_wait_seconds_bucket", {{"team", "skew"}, {"le", "1"}}), 1);
}

TEST(MetricsTest, ZeroWeightBorrowingTeamHasInfiniteShare) {
  scheduler::testing::PolicyBuilder builder;
  builder.Team("w0", "c").Weight(0).Quota("f", "nvidia.com/gpu", 4);
  builder.Team("w1", "c").Quota("f", "nvidia.com/gpu", 4);
  common::FakeClock clock;
  scheduler::ledger::QuotaBook book(builder.Build(), &clock);
  Metrics m(Options{true, {}, &clock});
  Sources sources;
  sources.book = &book;
  m.SetSources(sources);
  EXPECT_EQ(ParseExposition(m.Render()).Value("taskgov_weighted_share", {{"team", "w0"}}), 0);
  book.ConfirmBound("w0-1", TeamId("w0"), FlavorId("f"), ResourceList{{"nvidia.com/gpu", 6}},
                    scheduler::ledger::PodMeta{});
  const Exposition x = ParseExposition(m.Render());
  EXPECT_EQ(x.Value("taskgov_weighted_share", {{"team", "w0"}}), INFINITY);
  EXPECT_EQ(x.Value("kueue_cluster_queue_weighted_share", {{"cluster_queue", "w0"}}),
            9223372036854775807.0);
}

}  // namespace
}  // namespace taskgov::metrics
