#include "scheduler/sim/kube_scheduler.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "scheduler/common/clock.h"
#include "scheduler/testing/builders.h"

namespace taskgov::scheduler::sim {
namespace {

using testing::NodeBuilder;
using testing::PodBuilder;
using Type = ScoringStrategy::Type;

constexpr char kGpu[] = "nvidia.com/gpu";

// An extender that admits every node, scores them as told and binds through the API server.
class FakeExtender final : public Decider {
 public:
  explicit FakeExtender(Api* api) : api_(api) {}

  std::map<std::string, int64_t> scores;  // node → prioritize score (0..10)
  int prioritize_calls = 0;

  FilterResult Filter(const FilterArgs& args) override {
    FilterResult r;
    for (uint32_t i = 0; i < args.node_names.size(); ++i) r.feasible.push_back(i);
    return r;
  }
  std::vector<HostPriority> Prioritize(const FilterArgs& args) override {
    ++prioritize_calls;
    std::vector<HostPriority> out;
    for (const std::string& n : args.node_names) out.push_back({n, scores[n]});
    return out;
  }
  PreemptResult Preempt(const PreemptArgs&) override { return {}; }
  BindResult Bind(const BindArgs& args) override {
    common::Status s = api_->Bind(args.pod_namespace, args.pod_name, args.pod_uid, args.node);
    return BindResult{s.ok() ? "" : s.error().message};
  }

 private:
  Api* api_;
};

// Two p5 nodes: "a" half full (a bound pod with 4 GPUs, 96 cpu, 1 TiB), "b" empty. A pod with
// 1 GPU, 12 cpu and 128 GiB arrives; returns the node kube-scheduler bound it to.
struct Placement {
  std::string node;
  int prioritize_calls = 0;
};
Placement PlaceOnePod(const KubeScheduler::Options& options,
                      const std::map<std::string, int64_t>& extender_scores = {}) {
  common::FakeClock clock;
  EventLoop loop(&clock);
  Api api(&clock);
  FakeExtender extender(&api);
  extender.scores = extender_scores;
  KubeScheduler scheduler(&api, &extender, &loop, options);
  auto deliver = [&] {
    for (const WatchEvent& e : api.TakeEvents()) scheduler.OnEvent(e);
  };
  for (const char* name : {"a", "b"}) {
    api.AddNode(NodeBuilder(name)
                    .Allocatable("cpu", "192")
                    .Allocatable("memory", "2Ti")
                    .Allocatable(kGpu, "8"));
  }
  const PodObject& running =
      api.CreatePod(PodBuilder("running").Gpus(4).Cpu("96").Memory("1Ti"), PodTag{});
  EXPECT_TRUE(api.Bind("default", "running", running.pod.uid, "a").ok());
  deliver();
  const std::string uid =
      api.CreatePod(PodBuilder("new").Gpus(1).Cpu("12").Memory("128Gi"), PodTag{}).pod.uid;
  deliver();
  EXPECT_EQ(scheduler.RunCycles(), 1u);
  return {api.Find(uid)->pod.node_name, extender.prioritize_calls};
}

KubeScheduler::Options Strategy(Type type, std::vector<ScoringStrategy::Resource> resources) {
  KubeScheduler::Options o;
  o.scoring = ScoringStrategy{type, std::move(resources)};
  return o;
}

TEST(KubeSchedulerTest, MostAllocatedPutsAGpuPodOnTheFullerNodeLeastAllocatedOnTheEmptier) {
  // Upstream's default (LeastAllocated on cpu and memory): a 43, b 93.
  EXPECT_EQ(PlaceOnePod(KubeScheduler::Options{}).node, "b");
  // The overlay's packing (GPU weight 3): a (56 + 56 + 3 × 62) / 5 = 59, b (6 + 6 + 3 × 12) / 5
  // = 9.
  const std::vector<ScoringStrategy::Resource> packing = {{"cpu", 1}, {"memory", 1}, {kGpu, 3}};
  EXPECT_EQ(PlaceOnePod(Strategy(Type::kMostAllocated, packing)).node, "a");
  EXPECT_EQ(PlaceOnePod(Strategy(Type::kLeastAllocated, packing)).node, "b");
}

// The extender's score × weight × 10 adds to the node's: b's 10 from the extender outweighs a's
// lead (59 against 9) at weight 1; with no prioritizeVerb (weight 0) it is not asked.
TEST(KubeSchedulerTest, TheExtendersWeightScalesItsScore) {
  const std::vector<ScoringStrategy::Resource> packing = {{"cpu", 1}, {"memory", 1}, {kGpu, 3}};
  KubeScheduler::Options options = Strategy(Type::kMostAllocated, packing);
  const Placement weighted = PlaceOnePod(options, {{"a", 0}, {"b", 10}});
  EXPECT_EQ(weighted.node, "b");
  EXPECT_EQ(weighted.prioritize_calls, 1);
  options.extender_weight = 0;
  const Placement unasked = PlaceOnePod(options, {{"a", 0}, {"b", 10}});
  EXPECT_EQ(unasked.node, "a");
  EXPECT_EQ(unasked.prioritize_calls, 0);
}

}  // namespace
}  // namespace taskgov::scheduler::sim
