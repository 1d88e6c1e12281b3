#include "scheduler/sim/node_resources_fit.h"

#include <algorithm>
#include <string_view>

namespace taskgov::scheduler::sim {

namespace {

constexpr int64_t kMaxNodeScore = 100;

// How kube-scheduler counts a resource when scoring (calculateResourceAllocatableRequest): the
// node's own resources always; scalar ones (extended resources, hugepages-*,
// attachable-volumes-*, kubernetes.io/-prefixed) only when the pod requests them; anything else
// never.
enum class Counted { kAlways, kWhenRequested, kNever };

Counted HowCounted(std::string_view name) {
  if (name == "cpu" || name == "memory" || name == "ephemeral-storage") return Counted::kAlways;
  if (name.find('/') != std::string_view::npos || name.starts_with("hugepages-") ||
      name.starts_with("attachable-volumes-")) {
    return Counted::kWhenRequested;
  }
  return Counted::kNever;
}

// amount × 100 / allocatable without overflow (amounts saturate at the int64 limit).
int64_t Percent(int64_t amount, int64_t allocatable) {
  return static_cast<int64_t>(static_cast<__int128>(amount) * kMaxNodeScore / allocatable);
}

// leastRequestedScore and mostRequestedScore, for allocatable > 0.
int64_t ResourceScore(ScoringStrategy::Type type, int64_t requested, int64_t allocatable) {
  if (type == ScoringStrategy::Type::kMostAllocated) {
    return Percent(std::min(requested, allocatable), allocatable);
  }
  if (requested > allocatable) return 0;
  return Percent(allocatable - requested, allocatable);
}

}  // namespace

const char* TypeName(ScoringStrategy::Type type) {
  return type == ScoringStrategy::Type::kMostAllocated ? "MostAllocated" : "LeastAllocated";
}

int64_t NodeResourcesFitScore(const ScoringStrategy& strategy, const model::ResourceList& request,
                              const model::ResourceList& allocatable,
                              const model::ResourceList& used) {
  int64_t node_score = 0;
  int64_t weight_sum = 0;
  for (const ScoringStrategy::Resource& r : strategy.resources) {
    const Counted counted = HowCounted(r.name);
    const int64_t wanted = request.Get(r.name);
    if (counted == Counted::kNever || (counted == Counted::kWhenRequested && wanted == 0)) continue;
    const int64_t capacity = allocatable.Get(r.name);
    if (capacity <= 0) continue;
    const int64_t requested = model::SaturatingAdd(used.Get(r.name), wanted);
    node_score += ResourceScore(strategy.type, requested, capacity) * r.weight;
    weight_sum += r.weight;
  }
  return weight_sum == 0 ? 0 : node_score / weight_sum;
}

}  // namespace taskgov::scheduler::sim
