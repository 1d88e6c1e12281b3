#pragma once

// NodeResourcesFit's score, as kube-scheduler computes it (v1.30,
// pkg/scheduler/framework/plugins/noderesources: resource_allocation.go, least_allocated.go,
// most_allocated.go), for the two strategies the simulator plays. Integer arithmetic as
// upstream's, node score 0..100:
//  * per configured resource: `allocatable` is the node's, `requested` what the pods counted on
//    the node request plus the pod's own request. cpu, memory and ephemeral-storage always count;
//    any other resource (an extended resource such as nvidia.com/gpu, hugepages-*) counts only
//    when the pod requests it and the node lists it; a resource the node has none of
//    (allocatable 0) is skipped, weight and all; a name that is none of these (e.g. "pods")
//    never counts;
//  * LeastAllocated: (allocatable − requested) × 100 / allocatable, 0 when requested exceeds it;
//    MostAllocated: min(requested, allocatable) × 100 / allocatable;
//  * the node's score: Σ score × weight / Σ weight over the resources that count (0 when none).
// Upstream counts a container that requests no cpu or memory as 100m / 200Mi when scoring
// (NonZeroRequested); the simulator's pods are scored on what they request (generated traces
// always request cpu and memory).
//
// Pure value code; thread-safe.

#include <cstdint>
#include <string>
#include <vector>

#include "scheduler/model/resources.h"

namespace taskgov::scheduler::sim {

// NodeResourcesFitArgs.scoringStrategy (kubescheduler.config.k8s.io/v1): its default is
// LeastAllocated on cpu and memory, weight 1 each.
struct ScoringStrategy {
  enum class Type { kLeastAllocated, kMostAllocated };
  struct Resource {
    std::string name;
    int64_t weight = 1;  // 1..100
    bool operator==(const Resource&) const = default;
  };
  Type type = Type::kLeastAllocated;
  std::vector<Resource> resources = {{"cpu", 1}, {"memory", 1}};
  bool operator==(const ScoringStrategy&) const = default;
};

// "LeastAllocated", "MostAllocated".
[[nodiscard]] const char* TypeName(ScoringStrategy::Type type);

// The node's NodeResourcesFit score (0..100) for a pod requesting `request`, on a node with
// `allocatable` where the pods counted there request `used` in total.
[[nodiscard]] int64_t NodeResourcesFitScore(const ScoringStrategy& strategy,
                                            const model::ResourceList& request,
                                            const model::ResourceList& allocatable,
                                            const model::ResourceList& used);

}  // namespace taskgov::scheduler::sim
