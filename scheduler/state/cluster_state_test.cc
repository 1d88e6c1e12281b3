#include "scheduler/state/cluster_state.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "scheduler/testing/builders.h"

namespace taskgov::scheduler::state {
namespace {

using ledger::QuotaBook;
using model::FlavorNames;
using model::NameId;
using model::Pod;
using model::ResourceList;
using testing::NodeBuilder;
using testing::PodBuilder;
using testing::PolicyBuilder;

constexpr char kP5[] = "ml.p5.48xlarge";
constexpr char kG5[] = "ml.g5.48xlarge";
constexpr char kGpu[] = "nvidia.com/gpu";

// The pods ForEachBoundPod walks for `flavors` (null: all), by name.
std::set<std::string> Walked(const ClusterState& cluster, const std::vector<NameId>* flavors) {
  std::set<std::string> names;
  cluster.ForEachBoundPod(
      [&](const Pod& pod, NameId, const ResourceList&) { names.insert(pod.name); }, flavors);
  return names;
}

// The walk by flavor (the preemption controller's candidates) sees the pods counted on that
// flavor's nodes: not those waiting, nor those bound to a node not seen yet until it is.
TEST(ClusterStateTest, AWalkByFlavorSeesThePodsCountedOnItsNodesUnderTheCurrentPolicy) {
  common::FakeClock clock;
  auto policy = [] {
    return PolicyBuilder().Team("team-a").Quota(kP5, kGpu, 8).Quota(kG5, kGpu, 8).Build();
  };
  QuotaBook book(policy(), &clock);
  ClusterState cluster(&book, &clock, ClusterState::Options{});
  cluster.SetPolicy(book.ledger().policy());
  cluster.OnSynced(ObjectKind::kPod);
  cluster.OnSynced(ObjectKind::kNode);
  cluster.OnNodeUpsert(NodeBuilder("p5-0").InstanceType(kP5).Allocatable(kGpu, "8"));
  cluster.OnNodeUpsert(NodeBuilder("g5-0").InstanceType(kG5).Allocatable(kGpu, "8"));
  cluster.OnPodUpsert(PodBuilder("on-p5").Namespace("ns-team-a").Gpus(2).OnNode("p5-0"));
  cluster.OnPodUpsert(PodBuilder("on-g5").Namespace("ns-team-a").Gpus(2).OnNode("g5-0"));
  cluster.OnPodUpsert(PodBuilder("waiting").Namespace("ns-team-a").Gpus(2));
  // Bound to a node not seen yet: not counted anywhere, so on no flavor.
  cluster.OnPodUpsert(PodBuilder("early").Namespace("ns-team-a").Gpus(2).OnNode("p5-1"));

  const std::vector<NameId> p5 = {FlavorNames().Intern(kP5)};
  const std::vector<NameId> g5 = {FlavorNames().Intern(kG5)};
  EXPECT_EQ(Walked(cluster, nullptr), (std::set<std::string>{"on-p5", "on-g5", "early"}));
  EXPECT_EQ(Walked(cluster, &p5), std::set<std::string>{"on-p5"});
  EXPECT_EQ(Walked(cluster, &g5), std::set<std::string>{"on-g5"});
  cluster.OnNodeUpsert(NodeBuilder("p5-1").InstanceType(kP5).Allocatable(kGpu, "8"));
  EXPECT_EQ(Walked(cluster, &p5), (std::set<std::string>{"on-p5", "early"}));

  // A new policy recomputes the nodes' flavors (here from the instance-type label, as before),
  // and the counted pods follow them.
  cluster.SetPolicy(PolicyBuilder().Team("team-a").Quota(kP5, kGpu, 8).Build());
  EXPECT_EQ(Walked(cluster, &g5), std::set<std::string>{"on-g5"});
  EXPECT_EQ(Walked(cluster, &p5), (std::set<std::string>{"on-p5", "early"}));

  cluster.OnNodeDelete("p5-0");  // its pods count nowhere until it returns
  EXPECT_EQ(Walked(cluster, &p5), std::set<std::string>{"early"});
}

}  // namespace
}  // namespace taskgov::scheduler::state
