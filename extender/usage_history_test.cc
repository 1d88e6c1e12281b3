#include "extender/usage_history.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace taskgov::extender {
namespace {

// A small history: 4 fine points 1 s apart, then 3 coarse buckets of 5 s.
UsageHistory::Options Small() {
  UsageHistory::Options o;
  o.interval_ms = 1000;
  o.fine_points = 4;
  o.coarse_ms = 5000;
  o.coarse_points = 3;
  o.report_days = 2;
  return o;
}

UsageHistory::Snapshot OneTeam(double usage, double nominal = 8) {
  UsageHistory::Snapshot s;
  s.teams.push_back(
      {"a", "p5", "nvidia.com/gpu", nominal, usage, std::max(0.0, usage - nominal), 0});
  s.cluster.push_back({"p5", "nvidia.com/gpu", usage, 16});
  s.queues.push_back({"a", 2, 30});
  return s;
}

UsageHistory::Query Where(std::string team, std::string resource, int64_t since_ms = 0) {
  UsageHistory::Query q;
  q.team = std::move(team);
  q.resource = std::move(resource);
  q.since_ms = since_ms;
  return q;
}

std::vector<std::pair<int64_t, float>> Usage(const UsageHistory& h) {
  UsageHistory::Result r = h.Read({});
  std::vector<std::pair<int64_t, float>> out;
  if (r.teams.empty()) return out;
  for (const auto& [t, v] : r.teams[0].points) out.emplace_back(t, v[0]);
  return out;
}

TEST(UsageHistoryTest, TheLastPointsAtFullResolutionOlderOnesAveragedPerBucket) {
  UsageHistory h(Small());
  for (int64_t t = 1; t <= 14; ++t) h.Sample(t * 1000, OneTeam(static_cast<double>(t)));
  // Fine: the last 4 samples (11..14 s). Coarse: the buckets before them that ended before
  // 11 s: [0,5) averages samples 1..4 → 2.5, [5,10) samples 5..9 → 7; [10,15) is still open.
  EXPECT_EQ(Usage(h),
            (std::vector<std::pair<int64_t, float>>{
                {0, 2.5f}, {5000, 7.0f}, {11000, 11}, {12000, 12}, {13000, 13}, {14000, 14}}));
  UsageHistory::Result r = h.Read(Where("", "", 12'000));
  ASSERT_EQ(r.teams.size(), 1u);
  EXPECT_EQ(r.teams[0].points.size(), 3u);
  EXPECT_EQ(r.teams[0].labels, (std::vector<std::string>{"a", "p5", "nvidia.com/gpu"}));
  ASSERT_EQ(r.cluster.size(), 1u);
  EXPECT_EQ(r.cluster[0].points.back().second, (std::vector<float>{14, 16}));
  ASSERT_EQ(r.queues.size(), 1u);
  EXPECT_EQ(r.queues[0].points.back().second, (std::vector<float>{2, 30}));
  EXPECT_TRUE(h.Read(Where("b", "")).teams.empty());
  EXPECT_EQ(h.Read(Where("", "cpu")).cluster.size(), 0u);
}

TEST(UsageHistoryTest, ASeriesMissingFromASampleHasNoPointThereAndGoesAfterTheSpan) {
  UsageHistory h(Small());
  h.Sample(1000, OneTeam(1));
  h.Sample(2000, UsageHistory::Snapshot{});  // team a not sampled (e.g. the policy changed)
  h.Sample(3000, OneTeam(3));
  EXPECT_EQ(Usage(h), (std::vector<std::pair<int64_t, float>>{{1000, 1}, {3000, 3}}));
  // Kept for 4 × 1 s + 3 × 5 s after its last sample, then dropped.
  h.Sample(3000 + 19'000, UsageHistory::Snapshot{});
  EXPECT_FALSE(h.Read({}).teams.empty());
  h.Sample(3000 + 19'001 + 1000, UsageHistory::Snapshot{});
  EXPECT_TRUE(h.Read({}).teams.empty());
  h.Sample(1000, OneTeam(5));  // an older time is ignored
  EXPECT_TRUE(h.Read({}).teams.empty());
}

TEST(UsageHistoryTest, TheReportIntegratesHoursPerDay) {
  UsageHistory::Options o;  // 30 s samples
  UsageHistory h(o);
  const int64_t day = 20'000 * 86'400'000LL;  // 2024-10-04T00:00:00Z
  h.Sample(day - 60'000, OneTeam(12));        // the day before: 2 samples
  h.Sample(day - 30'000, OneTeam(12));
  for (int i = 0; i < 120; ++i) h.Sample(day + i * 30'000, OneTeam(12));  // one hour
  // A gap (the extender was down) counts at most two intervals.
  h.Sample(day + 3 * 3'600'000, OneTeam(12));
  EXPECT_EQ(h.ReportCsv(),
            "day,team,flavor,resource,unit,allocated_hours,used_hours,borrowed_hours\n"
            "2024-10-03,a,p5,nvidia.com/gpu,devices,0.067,0.100,0.033\n"
            "2024-10-04,a,p5,nvidia.com/gpu,devices,8.133,12.200,4.067\n");
}

// Memory in GiB-hours and cpu in core-hours, not byte-hours: the unit a person reads.
TEST(UsageHistoryTest, TheReportGivesMemoryInGiBHoursAndCpuInCoreHours) {
  UsageHistory h(UsageHistory::Options{});  // 30 s samples
  const int64_t day = 20'000 * 86'400'000LL;
  for (int i = 0; i <= 120; ++i) {  // one hour of 24 cores and 96 GiB allocated, half used
    UsageHistory::Snapshot s;
    s.teams.push_back({"a", "g5", "cpu", 24, 12, 0, 0});
    s.teams.push_back({"a", "g5", "memory", 96.0 * (1 << 30), 48.0 * (1 << 30), 0, 0});
    h.Sample(day + i * 30'000, s);
  }
  EXPECT_EQ(h.ReportCsv(),
            "day,team,flavor,resource,unit,allocated_hours,used_hours,borrowed_hours\n"
            "2024-10-04,a,g5,cpu,cores,24.000,12.000,0.000\n"
            "2024-10-04,a,g5,memory,GiB,96.000,48.000,0.000\n");
  EXPECT_EQ(ReportUnitOf("ephemeral-storage").name, "GiB");
  EXPECT_EQ(ReportUnitOf("aws.amazon.com/neuron").name, "devices");
}

// Issue 36, item 12: a field that holds a comma, a quote or a line break is quoted (RFC 4180),
// and one a spreadsheet would read as a formula is prefixed with ': a row stays one row of eight
// fields whatever the names.
TEST(UsageHistoryTest, TheReportEscapesItsFields) {
  UsageHistory h(UsageHistory::Options{});
  UsageHistory::Snapshot s;
  s.teams.push_back({"a", "=cmd()", "a,b=c\n<script>\"x\"", 8, 4, 0, 0});
  h.Sample(1'000'000, s);
  h.Sample(1'030'000, s);
  EXPECT_EQ(h.ReportCsv(),
            "day,team,flavor,resource,unit,allocated_hours,used_hours,borrowed_hours\n"
            "1970-01-01,a,'=cmd(),\"a,b=c\n<script>\"\"x\"\"\",devices,0.067,0.033,0.000\n");
}

// The bound docs/benchmarks.md states: 100 teams × 10 flavors × 3 resources for 24 h, with a usage
// report of 31 days (deterministic: the bytes the buffers hold, not a measurement; the
// benchmark measures the resident size).
TEST(UsageHistoryTest, ADayOfAHundredTeamsOnTenFlavorsFitsIn16MiB) {
  UsageHistory h;
  UsageHistory::Snapshot s;
  for (int t = 0; t < 100; ++t) {
    for (int f = 0; f < 10; ++f) {
      for (const char* r : {"nvidia.com/gpu", "cpu", "memory"}) {
        s.teams.push_back(
            {"team-" + std::to_string(t), "flavor-" + std::to_string(f), r, 8, 4, 0, 0});
      }
    }
  }
  // A series' buffers are whole from its first sample: a few samples show the day's cost.
  for (int i = 0; i < 12; ++i) h.Sample(1'000'000 + i * 30'000, s);
  EXPECT_EQ(h.Read({}).teams.size(), 3000u);
  EXPECT_LE(h.MemoryBytes(), 16u << 20) << h.MemoryBytes();
  // A sample every 8 hours for 40 days: the report keeps 31 of them, at 32 B per cell and day.
  for (int i = 1; i <= 120; ++i) h.Sample(1'000'000 + int64_t{i} * 8 * 3'600'000, s);
  const std::string csv = h.ReportCsv();
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 1 + 31 * 3000);
  EXPECT_LE(h.ReportBytes(), 31u * 3000 * 32 + (3000u * 64)) << h.ReportBytes();
  EXPECT_LE(h.MemoryBytes(), 16u << 20) << h.MemoryBytes();
}

}  // namespace
}  // namespace taskgov::extender
