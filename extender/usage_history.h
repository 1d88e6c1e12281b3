#pragma once

// UsageHistory: what the console's trend charts and usage report show without a Prometheus — an
// in-memory record of the cluster's and every team's use, sampled every 30 s (Sample, from a
// Ticker).
//
// Series. Per (team, flavor, resource): usage, borrowed and lent; per (flavor, resource): in use
// and allocatable; per team: pending pods and the average wait of its pending workloads. Each
// series keeps the last hour at full resolution (120 samples) and the last 24 h in 5-minute
// averages (288 buckets; a chart shows them where the full resolution does not reach), as float: a
// chart older than an hour loses the peaks inside each 5 minutes (they are averaged), not the
// level. At 100 teams × 10 flavors × 3 resources that is 3,000 team series × 408 points × 3 values
// × 4 B ≈ 14.7 MB; the process grows by 15.9 MiB
// (//extender:admin_api_benchmark, History/day).
// Series of teams, flavors or resources gone from the policy and the cluster are dropped once
// they have had no sample for 24 h.
//
// Usage report. Per team and UTC day, GPU-hours (any resource's amount × hours) allocated (its
// nominal quota), used and borrowed, integrated over the samples; the last 31 days are kept.
// ReportCsv() writes it as HyperPod's usage report does, one row per (day, team, flavor,
// resource), each amount in the unit a person reads it in (ReportUnitOf: memory in GiB-hours,
// cpu in core-hours, devices in device-hours), named in the row's `unit` column. A day costs
// 32 B per (team, flavor, resource): 31 days of 3,000 cost 3 MB.
//
// Thread-safety: one mutex; Sample (the sampling ticker) and the queries (console requests) may
// run concurrently. Pure: time comes in as arguments.

#include <array>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

namespace taskgov::extender {

// The unit the usage report gives a resource's hours in: its name ("GiB", "cores", "devices")
// and how many base units (InBaseUnits: bytes, cores, counts) make one.
struct ReportUnit {
  std::string_view name;
  double base_units = 1;
};
[[nodiscard]] ReportUnit ReportUnitOf(std::string_view resource);

class UsageHistory {
 public:
  struct Options {
    int64_t interval_ms = 30'000;
    size_t fine_points = 120;     // the last hour at interval_ms
    int64_t coarse_ms = 300'000;  // older samples averaged per 5 minutes
    size_t coarse_points = 288;   // 24 h of them
    size_t report_days = 31;
  };

  // One sample's numbers, in canonical units (quantity.h).
  struct TeamCell {
    std::string team, flavor, resource;
    double nominal = 0, usage = 0, borrowed = 0, lent = 0;
  };
  struct ClusterCell {
    std::string flavor, resource;
    double in_use = 0, allocatable = 0;
  };
  struct TeamQueue {
    std::string team;
    double pending_pods = 0;
    double average_wait_s = 0;  // of its pending workloads
  };
  struct Snapshot {
    std::vector<TeamCell> teams;
    std::vector<ClusterCell> cluster;
    std::vector<TeamQueue> queues;
  };

  explicit UsageHistory(Options options) : options_(options) {}
  UsageHistory() : UsageHistory(Options{}) {}

  void Sample(int64_t now_ms, const Snapshot& snapshot);

  // A series: its key's labels and its points, oldest first: (time, value...) with the values
  // of its kind (team cells: usage, borrowed, lent; cluster cells: in use, allocatable; queues:
  // pending pods, average wait).
  struct Series {
    std::vector<std::string> labels;
    std::vector<std::pair<int64_t, std::vector<float>>> points;
  };
  struct Query {
    std::string team;      // "" all
    std::string flavor;    // "" all
    std::string resource;  // "" all
    int64_t since_ms = 0;
  };
  struct Result {
    std::vector<Series> teams, cluster, queues;
  };
  [[nodiscard]] Result Read(const Query& query) const;

  // The usage report as CSV:
  // day,team,flavor,resource,unit,allocated_hours,used_hours,borrowed_hours.
  [[nodiscard]] std::string ReportCsv() const;

  // Bytes held by the series' points (for the benchmark and the README's bound), and by the
  // usage report.
  [[nodiscard]] size_t MemoryBytes() const;
  [[nodiscard]] size_t ReportBytes() const;

 private:
  // One series: `values` floats per point, in circular buffers aligned with the shared time
  // axes (a sample without this series writes NaN).
  struct Ring {
    std::vector<float> fine, coarse;  // capacity × values each
    std::vector<double> bucket_sum;   // the coarse bucket being filled
    std::vector<uint32_t> bucket_n;
    int64_t last_ms = 0;  // the last sample that had it
  };
  using Key = std::vector<std::string>;
  struct Family {
    size_t values = 0;
    std::map<Key, Ring> rings;
  };
  void Write(Family& family, const Key& key, const float* values, int64_t now_ms);
  void CloseBucket();
  void AddToReport(int64_t now_ms, int64_t dt_ms, const Snapshot& snapshot);
  std::vector<Series> ReadFamily(const Family& family, const Query& query,
                                 const std::vector<int>& filter_positions) const;

  const Options options_;
  mutable std::mutex mu_;
  // All guarded by mu_.
  Family teams_{3, {}}, cluster_{2, {}}, queues_{2, {}};
  std::vector<int64_t> fine_times_, coarse_times_;  // circular, as the rings
  size_t fine_start_ = 0, fine_count_ = 0, coarse_start_ = 0, coarse_count_ = 0;
  size_t fine_slot_ = 0;  // the slot the sample being written fills
  int64_t bucket_ = -1;   // the coarse bucket being filled (time / coarse_ms)
  int64_t last_sample_ms_ = 0;
  // The report's (team, flavor, resource) cells, each numbered once, and per UTC day the
  // allocated, used and borrowed hours of each cell by its number.
  struct ReportCell {
    std::array<double, 3> hours{};
    bool present = false;
  };
  std::map<std::tuple<std::string, std::string, std::string>, uint32_t> report_cells_;
  std::map<int64_t, std::vector<ReportCell>> report_;
};

}  // namespace taskgov::extender
