#include "scheduler/sim/node_resources_fit.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace taskgov::scheduler::sim {
namespace {

using model::ResourceList;
using Type = ScoringStrategy::Type;

constexpr char kGpu[] = "nvidia.com/gpu";
constexpr int64_t kGi = int64_t{1} << 30;

// The second-scheduler overlay's strategy, trimmed to the resources the examples use.
ScoringStrategy Packing(Type type) {
  return ScoringStrategy{type, {{"cpu", 1}, {"memory", 1}, {kGpu, 3}}};
}

// A p5 node half full: 192 cpu, 2 TiB, 8 GPUs; 96 cpu, 1 TiB and 4 GPUs requested there.
const ResourceList kP5{{"cpu", 192'000}, {"memory", 2048 * kGi}, {kGpu, 8}};
const ResourceList kHalf{{"cpu", 96'000}, {"memory", 1024 * kGi}, {kGpu, 4}};
// The pod: 12 cpu, 128 GiB, 1 GPU.
const ResourceList kPod{{"cpu", 12'000}, {"memory", 128 * kGi}, {kGpu, 1}};

struct Case {
  std::string name;
  ScoringStrategy strategy;
  ResourceList request, allocatable, used;
  int64_t want;
};

// The worked example, by hand: with the pod, cpu is 108 of 192 and memory 1152 of 2048 GiB
// (56.25 % each), GPUs 5 of 8 (62.5 %).
//   LeastAllocated per resource: (192 − 108) × 100 / 192 = 43 (43.75 truncated), memory 43,
//   GPU (8 − 5) × 100 / 8 = 37; MostAllocated: 108 × 100 / 192 = 56, memory 56, GPU 62.
//   Upstream's default (LeastAllocated, cpu 1, memory 1): (43 + 43) / 2 = 43.
//   MostAllocated, cpu 1, memory 1, GPU 3: (56 + 56 + 3 × 62) / 5 = 298 / 5 = 59.
//   LeastAllocated, cpu 1, memory 1, GPU 3: (43 + 43 + 3 × 37) / 5 = 197 / 5 = 39.
std::vector<Case> Cases() {
  const ResourceList cpu_only_pod{{"cpu", 12'000}, {"memory", 128 * kGi}};
  const ResourceList no_gpu_node{{"cpu", 192'000}, {"memory", 2048 * kGi}};
  const ResourceList busy_cpu{{"cpu", 190'000}, {"memory", 1024 * kGi}, {kGpu, 4}};
  return {
      {"UpstreamDefaultIsLeastAllocatedOnCpuAndMemory", ScoringStrategy{}, kPod, kP5, kHalf, 43},
      {"MostAllocatedWeighsTheGpuThreeTimes", Packing(Type::kMostAllocated), kPod, kP5, kHalf, 59},
      {"LeastAllocatedWeighsTheGpuThreeTimes", Packing(Type::kLeastAllocated), kPod, kP5, kHalf,
       39},
      {"MostAllocatedOnAnEmptyNode", Packing(Type::kMostAllocated), kPod, kP5, ResourceList{},
       // cpu 12 × 100 / 192 = 6, memory 6, GPU 1 × 100 / 8 = 12: (6 + 6 + 36) / 5 = 9.
       9},
      // An extended resource the pod does not request does not count, weight and all: cpu and
      // memory at 56 each.
      {"AnUnrequestedGpuDoesNotCount", Packing(Type::kMostAllocated), cpu_only_pod, kP5, kHalf, 56},
      // A resource the node has none of does not count either.
      {"AResourceTheNodeLacksDoesNotCount", Packing(Type::kMostAllocated), kPod, no_gpu_node, kHalf,
       56},
      // Requests above what the node has: LeastAllocated scores that resource 0, MostAllocated
      // 100 (requested is capped at allocatable). cpu 202 of 192; memory 56 / 43; GPU 62 / 37.
      {"LeastAllocatedScoresOverCapacityZero", Packing(Type::kLeastAllocated), kPod, kP5, busy_cpu,
       (0 + 43 + 3 * 37) / 5},
      {"MostAllocatedCapsOverCapacityAtAllocatable", Packing(Type::kMostAllocated), kPod, kP5,
       busy_cpu, (100 + 56 + 3 * 62) / 5},
      // Nothing counts: 0.
      {"NothingCounts", ScoringStrategy{Type::kMostAllocated, {{kGpu, 3}}}, cpu_only_pod, kP5,
       kHalf, 0},
      // "pods" is neither a node resource kube-scheduler scores nor a scalar one: never counted.
      {"PodsNeverCounts", ScoringStrategy{Type::kMostAllocated, {{"cpu", 1}, {"pods", 5}}}, kPod,
       ResourceList{{"cpu", 192'000}, {"pods", 110}}, kHalf, 56},
      // cpu and memory count even when the pod requests none of them (its request adds 0).
      {"CpuCountsWithoutARequest", ScoringStrategy{Type::kMostAllocated, {{"cpu", 1}}},
       ResourceList{{kGpu, 1}}, kP5, kHalf, 50},
  };
}

class NodeResourcesFitTest : public ::testing::TestWithParam<Case> {};

TEST_P(NodeResourcesFitTest, ScoresAsUpstream) {
  const Case& c = GetParam();
  EXPECT_EQ(NodeResourcesFitScore(c.strategy, c.request, c.allocatable, c.used), c.want);
}

INSTANTIATE_TEST_SUITE_P(Examples, NodeResourcesFitTest, ::testing::ValuesIn(Cases()),
                         [](const auto& info) { return info.param.name; });

// The packing strategy prefers the fuller node, the default one the emptier: the choice the
// second-scheduler overlay changes.
TEST(NodeResourcesFitTest, MostAllocatedPrefersTheFullerNodeAndLeastAllocatedTheEmptier) {
  for (const Type type : {Type::kLeastAllocated, Type::kMostAllocated}) {
    const int64_t fuller = NodeResourcesFitScore(Packing(type), kPod, kP5, kHalf);
    const int64_t emptier = NodeResourcesFitScore(Packing(type), kPod, kP5, ResourceList{});
    if (type == Type::kMostAllocated) {
      EXPECT_GT(fuller, emptier);
    } else {
      EXPECT_LT(fuller, emptier);
    }
  }
}

TEST(NodeResourcesFitTest, TypeNamesAreUpstreams) {
  EXPECT_STREQ(TypeName(Type::kLeastAllocated), "LeastAllocated");
  EXPECT_STREQ(TypeName(Type::kMostAllocated), "MostAllocated");
}

}  // namespace
}  // namespace taskgov::scheduler::sim
