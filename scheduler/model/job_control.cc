#include "scheduler/model/job_control.h"

#include <charconv>

#include "scheduler/model/kube_json.h"

namespace taskgov::scheduler::model {

namespace {

std::optional<int64_t> IntAnnotation(const Labels& annotations, const char* key) {
  auto it = annotations.find(key);
  if (it == annotations.end()) return std::nullopt;
  int64_t value = 0;
  const char* end = it->second.data() + it->second.size();
  auto [ptr, ec] = std::from_chars(it->second.data(), end, value);
  if (ec != std::errc() || ptr != end) return std::nullopt;
  return value;
}

}  // namespace

bool JobControl::paused_by_taskgov() const {
  auto it = annotations.find(kSuspendedByAnnotation);
  return suspended && it != annotations.end() && it->second == kSuspendedByValue;
}

int64_t JobControl::suspensions() const {
  return std::max<int64_t>(0, IntAnnotation(annotations, kSuspensionsAnnotation).value_or(0));
}

std::optional<int64_t> JobControl::suspended_at_ms() const {
  auto it = annotations.find(kSuspendedAtAnnotation);
  if (it == annotations.end()) return std::nullopt;
  common::Result<int64_t> t = ParseTimestamp(it->second);
  if (!t.ok()) return std::nullopt;
  return *t;
}

std::optional<int32_t> JobControl::suspended_priority() const {
  std::optional<int64_t> p = IntAnnotation(annotations, kSuspendedPriorityAnnotation);
  if (!p || *p < INT32_MIN || *p > INT32_MAX) return std::nullopt;
  return static_cast<int32_t>(*p);
}

int64_t JobControl::pods() const {
  int64_t n = 0;
  for (const PodSet& set : pod_sets) n += set.count;
  return n;
}

}  // namespace taskgov::scheduler::model
