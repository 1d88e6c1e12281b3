#include "extender/usage_history.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <limits>

namespace taskgov::extender {
namespace {

constexpr float kMissing = std::numeric_limits<float>::quiet_NaN();
constexpr int64_t kDayMs = 86'400'000;

// The slot a circular buffer of `capacity` writes next, advancing (start, count).
size_t Advance(size_t capacity, size_t* start, size_t* count) {
  if (*count < capacity) return (*start + (*count)++) % capacity;
  const size_t slot = *start;
  *start = (*start + 1) % capacity;
  return slot;
}

bool Matches(const std::vector<std::string>& key, const std::vector<int>& positions,
             const UsageHistory::Query& q) {
  const std::string* wanted[] = {&q.team, &q.flavor, &q.resource};
  for (size_t i = 0; i < 3; ++i) {
    const int at = positions[i];
    if (at >= 0 && !wanted[i]->empty() && key[static_cast<size_t>(at)] != *wanted[i]) return false;
  }
  return true;
}

std::string Day(int64_t day) {
  const time_t t = static_cast<time_t>(day * (kDayMs / 1000));
  std::tm tm{};
  gmtime_r(&t, &tm);
  char text[16];
  std::strftime(text, sizeof(text), "%Y-%m-%d", &tm);
  return text;
}

}  // namespace

void UsageHistory::Sample(int64_t now_ms, const Snapshot& snapshot) {
  std::lock_guard<std::mutex> lock(mu_);
  if (last_sample_ms_ > 0 && now_ms <= last_sample_ms_) return;  // clocks only go forward here
  const int64_t bucket = now_ms / options_.coarse_ms;
  if (bucket_ >= 0 && bucket != bucket_) CloseBucket();
  bucket_ = bucket;
  fine_times_.resize(options_.fine_points);
  const size_t slot = Advance(options_.fine_points, &fine_start_, &fine_count_);
  fine_times_[slot] = now_ms;
  fine_slot_ = slot;
  for (Family* f : {&teams_, &cluster_, &queues_}) {
    for (auto& [key, ring] : f->rings) {
      std::fill_n(ring.fine.begin() + static_cast<ptrdiff_t>(slot * f->values), f->values,
                  kMissing);
    }
  }
  for (const TeamCell& c : snapshot.teams) {
    const float v[] = {static_cast<float>(c.usage), static_cast<float>(c.borrowed),
                       static_cast<float>(c.lent)};
    Write(teams_, {c.team, c.flavor, c.resource}, v, now_ms);
  }
  for (const ClusterCell& c : snapshot.cluster) {
    const float v[] = {static_cast<float>(c.in_use), static_cast<float>(c.allocatable)};
    Write(cluster_, {c.flavor, c.resource}, v, now_ms);
  }
  for (const TeamQueue& q : snapshot.queues) {
    const float v[] = {static_cast<float>(q.pending_pods), static_cast<float>(q.average_wait_s)};
    Write(queues_, {q.team}, v, now_ms);
  }
  if (last_sample_ms_ > 0) {
    AddToReport(now_ms, std::min(now_ms - last_sample_ms_, 2 * options_.interval_ms), snapshot);
  }
  last_sample_ms_ = now_ms;
  const int64_t keep_ms = static_cast<int64_t>(options_.fine_points) * options_.interval_ms +
                          static_cast<int64_t>(options_.coarse_points) * options_.coarse_ms;
  for (Family* f : {&teams_, &cluster_, &queues_}) {
    std::erase_if(f->rings, [&](const auto& e) { return now_ms - e.second.last_ms > keep_ms; });
  }
}

void UsageHistory::Write(Family& family, const Key& key, const float* values, int64_t now_ms) {
  auto [it, inserted] = family.rings.try_emplace(key);
  Ring& ring = it->second;
  const size_t n = family.values;
  if (inserted) {
    ring.fine.assign(options_.fine_points * n, kMissing);
    ring.coarse.assign(options_.coarse_points * n, kMissing);
    ring.bucket_sum.assign(n, 0);
    ring.bucket_n.assign(n, 0);
  }
  for (size_t i = 0; i < n; ++i) {
    ring.fine[fine_slot_ * n + i] = values[i];
    ring.bucket_sum[i] += values[i];
    ++ring.bucket_n[i];
  }
  ring.last_ms = now_ms;
}

void UsageHistory::CloseBucket() {
  coarse_times_.resize(options_.coarse_points);
  const size_t slot = Advance(options_.coarse_points, &coarse_start_, &coarse_count_);
  coarse_times_[slot] = bucket_ * options_.coarse_ms;
  for (Family* f : {&teams_, &cluster_, &queues_}) {
    for (auto& [key, ring] : f->rings) {
      for (size_t i = 0; i < f->values; ++i) {
        ring.coarse[slot * f->values + i] =
            ring.bucket_n[i] > 0 ? static_cast<float>(ring.bucket_sum[i] / ring.bucket_n[i])
                                 : kMissing;
        ring.bucket_sum[i] = 0;
        ring.bucket_n[i] = 0;
      }
    }
  }
}

void UsageHistory::AddToReport(int64_t now_ms, int64_t dt_ms, const Snapshot& snapshot) {
  const int64_t day = now_ms / kDayMs;
  const double hours = static_cast<double>(dt_ms) / 3'600'000.0;
  std::vector<ReportCell>& today = report_[day];
  for (const TeamCell& c : snapshot.teams) {
    const uint32_t n = report_cells_
                           .try_emplace({c.team, c.flavor, c.resource},
                                        static_cast<uint32_t>(report_cells_.size()))
                           .first->second;
    if (today.size() <= n) today.resize(n + 1);
    ReportCell& cell = today[n];
    cell.present = true;
    cell.hours[0] += c.nominal * hours;
    cell.hours[1] += c.usage * hours;
    cell.hours[2] += c.borrowed * hours;
  }
  if (today.capacity() > today.size()) today.shrink_to_fit();  // once, when it grew
  while (report_.size() > options_.report_days) report_.erase(report_.begin());
}

std::vector<UsageHistory::Series> UsageHistory::ReadFamily(
    const Family& family, const Query& query, const std::vector<int>& positions) const {
  std::vector<Series> out;
  const int64_t oldest_fine = fine_count_ > 0 ? fine_times_[fine_start_] : 0;
  for (const auto& [key, ring] : family.rings) {
    if (!Matches(key, positions, query)) continue;
    Series s;
    s.labels = key;
    auto emit = [&](int64_t t, const float* v) {
      if (t < query.since_ms) return;
      if (std::all_of(v, v + family.values, [](float x) { return std::isnan(x); })) return;
      s.points.emplace_back(t, std::vector<float>(v, v + family.values));
    };
    for (size_t i = 0; i < coarse_count_; ++i) {
      const size_t slot = (coarse_start_ + i) % options_.coarse_points;
      if (fine_count_ > 0 && coarse_times_[slot] + options_.coarse_ms > oldest_fine) continue;
      emit(coarse_times_[slot], &ring.coarse[slot * family.values]);
    }
    for (size_t i = 0; i < fine_count_; ++i) {
      const size_t slot = (fine_start_ + i) % options_.fine_points;
      emit(fine_times_[slot], &ring.fine[slot * family.values]);
    }
    out.push_back(std::move(s));
  }
  return out;
}

UsageHistory::Result UsageHistory::Read(const Query& query) const {
  std::lock_guard<std::mutex> lock(mu_);
  Result r;
  r.teams = ReadFamily(teams_, query, {0, 1, 2});
  r.cluster = ReadFamily(cluster_, query, {-1, 0, 1});
  r.queues = ReadFamily(queues_, query, {0, -1, -1});
  return r;
}

ReportUnit ReportUnitOf(std::string_view resource) {
  if (resource == "cpu") return {"cores", 1};
  if (resource == "memory" || resource == "ephemeral-storage" ||
      resource.starts_with("hugepages-")) {
    return {"GiB", 1024.0 * 1024.0 * 1024.0};
  }
  return {"devices", 1};
}

namespace {

// One CSV field (RFC 4180): quoted when it holds a comma, a quote or a line break (quotes
// doubled); and, as spreadsheets read a field starting with =, +, - or @ as a formula, such a
// field is prefixed with ' (OWASP's CSV injection advice). Names are validated by config/, but
// the report must not depend on that.
std::string CsvField(std::string_view text) {
  std::string out;
  if (!text.empty() && (text[0] == '=' || text[0] == '+' || text[0] == '-' || text[0] == '@')) {
    out += '\'';
  }
  out += text;
  if (out.find_first_of(",\"\r\n") == std::string::npos) return out;
  std::string quoted = "\"";
  for (char c : out) {
    if (c == '"') quoted += '"';
    quoted += c;
  }
  return quoted + "\"";
}

}  // namespace

std::string UsageHistory::ReportCsv() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::string out = "day,team,flavor,resource,unit,allocated_hours,used_hours,borrowed_hours\n";
  for (const auto& [day, cells] : report_) {
    const std::string date = Day(day);
    for (const auto& [key, n] : report_cells_) {
      if (n >= cells.size() || !cells[n].present) continue;
      const std::array<double, 3>& h = cells[n].hours;
      const auto& [team, flavor, resource] = key;
      const ReportUnit unit = ReportUnitOf(resource);
      char numbers[96];
      std::snprintf(numbers, sizeof(numbers), "%.3f,%.3f,%.3f", h[0] / unit.base_units,
                    h[1] / unit.base_units, h[2] / unit.base_units);
      out += date + "," + CsvField(team) + "," + CsvField(flavor) + "," + CsvField(resource) + "," +
             std::string(unit.name) + "," + numbers + "\n";
    }
  }
  return out;
}

size_t UsageHistory::MemoryBytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  size_t bytes = (fine_times_.capacity() + coarse_times_.capacity()) * sizeof(int64_t);
  for (const Family* f : {&teams_, &cluster_, &queues_}) {
    for (const auto& [key, ring] : f->rings) {
      bytes += (ring.fine.capacity() + ring.coarse.capacity()) * sizeof(float) +
               ring.bucket_sum.capacity() * sizeof(double) +
               ring.bucket_n.capacity() * sizeof(uint32_t);
      for (const std::string& label : key) bytes += label.capacity();
    }
  }
  return bytes;
}

size_t UsageHistory::ReportBytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  size_t bytes = 0;
  for (const auto& [day, cells] : report_) bytes += cells.capacity() * sizeof(ReportCell);
  for (const auto& [key, n] : report_cells_) {
    bytes +=
        std::get<0>(key).capacity() + std::get<1>(key).capacity() + std::get<2>(key).capacity();
  }
  return bytes;
}

}  // namespace taskgov::extender
