#include "scheduler/state/node_cache.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "scheduler/testing/builders.h"

namespace taskgov::scheduler::state {
namespace {

using model::FlavorNames;
using model::NameId;
using model::PolicyPtr;
using model::ResourceList;
using model::ToIdAmounts;
using testing::NodeBuilder;
using testing::PolicyBuilder;

constexpr char kFlavor[] = "ml.p5.48xlarge";

class NodeCacheTest : public ::testing::Test {
 protected:
  void Add(NodeCache& cache, const std::string& name) {
    cache.Upsert(NodeBuilder(name).InstanceType(kFlavor).Allocatable("nvidia.com/gpu", "8"),
                 *policy_);
  }
  // Which of `names` the cache knows and has room for `gpus` on: "k" known with room, "f"
  // known and full, "-" unknown.
  static std::string Fits(const NodeCache& cache, const std::vector<std::string>& names, int gpus) {
    std::vector<NodeFit> fits;
    cache.FitNodes(names, ToIdAmounts(ResourceList{{"nvidia.com/gpu", gpus}}), &fits);
    std::string out;
    for (const NodeFit& f : fits) out += !f.known ? '-' : f.room ? 'k' : 'f';
    return out;
  }
  PolicyPtr policy_ = PolicyBuilder().Team("a").Quota(kFlavor, "nvidia.com/gpu", 8).Build();
};

// The same list asked again and again (as kube-scheduler sends it) still sees nodes join and
// leave, and the use on them change.
TEST_F(NodeCacheTest, ARepeatedNodeListFollowsJoinsLeavesAndUse) {
  NodeCache cache;
  Add(cache, "n0");
  Add(cache, "n1");
  const std::vector<std::string> names = {"n0", "n1", "n2"};
  EXPECT_EQ(Fits(cache, names, 4), "kk-");
  EXPECT_EQ(Fits(cache, names, 4), "kk-");
  Add(cache, "n2");
  EXPECT_EQ(Fits(cache, names, 4), "kkk");
  ASSERT_TRUE(cache.AddUsage("n1", ResourceList{{"nvidia.com/gpu", 6}}).has_value());
  EXPECT_EQ(Fits(cache, names, 4), "kfk");
  EXPECT_TRUE(cache.Erase("n0"));
  EXPECT_EQ(Fits(cache, names, 4), "-fk");
  Add(cache, "n0");
  EXPECT_EQ(Fits(cache, names, 4), "kfk");
  EXPECT_EQ(Fits(cache, {"n2", "n0"}, 4), "kk");  // another list
}

// ChangeStamp moves with what a flavor offers (pods counted or gone, nodes joining, leaving or
// changing, a policy) and with nothing else: the same node again, another flavor's use.
TEST_F(NodeCacheTest, AFlavorsChangeStampMovesWithWhatItOffersOnly) {
  NodeCache cache;
  const std::vector<NameId> p5 = {FlavorNames().Intern(kFlavor)};
  const std::vector<NameId> g5 = {FlavorNames().Intern("ml.g5.48xlarge")};
  Add(cache, "n0");
  cache.Upsert(NodeBuilder("g0").InstanceType("ml.g5.48xlarge").Allocatable("nvidia.com/gpu", "8"),
               *policy_);
  uint64_t stamp = cache.ChangeStamp(p5);
  const ResourceList two{{"nvidia.com/gpu", 2}};
  auto moved = [&] {
    const uint64_t now = cache.ChangeStamp(p5);
    const bool changed = now != stamp;
    stamp = now;
    return changed;
  };
  Add(cache, "n0");  // the same node again (a status heartbeat)
  EXPECT_FALSE(moved());
  ASSERT_TRUE(cache.AddUsage("g0", two).has_value());  // another flavor's use
  EXPECT_FALSE(moved());
  ASSERT_TRUE(cache.AddUsage("n0", two).has_value());
  EXPECT_TRUE(moved());
  cache.RemoveUsage("n0", two, false);
  EXPECT_TRUE(moved());
  cache.Upsert(NodeBuilder("n0").InstanceType(kFlavor).Allocatable("nvidia.com/gpu", "4"),
               *policy_);  // allocatable changed
  EXPECT_TRUE(moved());
  Add(cache, "n1");
  EXPECT_TRUE(moved());
  EXPECT_TRUE(cache.Erase("n1"));
  EXPECT_TRUE(moved());
  const uint64_t g5_stamp = cache.ChangeStamp(g5);
  cache.Reflavor(*policy_);
  EXPECT_TRUE(moved());
  EXPECT_NE(cache.ChangeStamp(g5), g5_stamp);
}

// Two caches asked for the same names on one thread answer each for itself.
// Every flavor a node has, whether or not the policy gives quota on it, and the nodes of none.
TEST_F(NodeCacheTest, FlavorsWithNodesNameEveryFlavorOnce) {
  NodeCache cache;
  EXPECT_TRUE(cache.FlavorsWithNodes().empty());
  Add(cache, "p5-0");
  Add(cache, "p5-1");
  cache.Upsert(NodeBuilder("trn1-0").InstanceType("ml.trn1.32xlarge"), *policy_);
  cache.Upsert(NodeBuilder("bare-0"), *policy_);
  const std::vector<NameId> flavors = cache.FlavorsWithNodes();
  ASSERT_EQ(flavors.size(), 3u);
  EXPECT_EQ(flavors.back(), kNoFlavor);
  EXPECT_NE(std::find(flavors.begin(), flavors.end(), FlavorNames().Intern(kFlavor)),
            flavors.end());
  EXPECT_NE(std::find(flavors.begin(), flavors.end(), FlavorNames().Intern("ml.trn1.32xlarge")),
            flavors.end());
}

TEST_F(NodeCacheTest, EachCacheAnswersForItsOwnNodes) {
  NodeCache first, second;
  Add(first, "n0");
  const std::vector<std::string> names = {"n0"};
  EXPECT_EQ(Fits(first, names, 1), "k");
  EXPECT_EQ(Fits(second, names, 1), "-");
  EXPECT_EQ(Fits(first, names, 1), "k");
}

// A node's closest topology domain (HyperPod's network-node-layer-3 on ml.* flavors) is summed
// as its nodes join, change, fill, empty and leave: PackNodes reports the other nodes' sums.
TEST_F(NodeCacheTest, PackNodesReportsTheOtherNodesOfTheClosestDomain) {
  constexpr char kLayer1[] = "topology.k8s.aws/network-node-layer-1";
  constexpr char kLayer2[] = "topology.k8s.aws/network-node-layer-2";
  constexpr char kLayer3[] = "topology.k8s.aws/network-node-layer-3";
  NodeCache cache;
  auto add = [&](const std::string& name, const std::string& layer3, const char* gpus = "8") {
    cache.Upsert(NodeBuilder(name)
                     .InstanceType(kFlavor)
                     .Allocatable("nvidia.com/gpu", gpus)
                     .Label(kLayer1, "nn-1")
                     .Label(kLayer2, "nn-2")
                     .Label(kLayer3, layer3),
                 *policy_);
  };
  add("n0", "nn-3a");
  add("n1", "nn-3a");
  add("n2", "nn-3b");
  cache.Upsert(NodeBuilder("bare").InstanceType(kFlavor).Allocatable("nvidia.com/gpu", "8"),
               *policy_);  // no topology labels: in no domain
  const NameId gpu = model::ResourceNames().Intern("nvidia.com/gpu");
  // "allocatable/used" of each node's neighbours, in the order of `names`.
  auto near = [&](const std::vector<std::string>& names) {
    std::vector<NodePacking> packing;
    cache.PackNodes(names, gpu, &packing);
    std::vector<std::string> out;
    for (const NodePacking& p : packing) {
      out.push_back(std::to_string(p.near_allocatable) + "/" + std::to_string(p.near_used));
    }
    return out;
  };
  const std::vector<std::string> all = {"n0", "n1", "n2", "bare"};
  using Near = std::vector<std::string>;
  EXPECT_EQ(near(all), (Near{"8/0", "8/0", "0/0", "0/0"}));
  ASSERT_TRUE(cache.AddUsage("n1", ResourceList{{"nvidia.com/gpu", 6}}).has_value());
  ASSERT_TRUE(cache.AddUsage("bare", ResourceList{{"nvidia.com/gpu", 2}}).has_value());
  EXPECT_EQ(near(all), (Near{"8/6", "8/0", "0/0", "0/0"}));
  cache.RemoveUsage("n1", ResourceList{{"nvidia.com/gpu", 4}}, /*borrowing=*/false);
  EXPECT_EQ(near(all), (Near{"8/2", "8/0", "0/0", "0/0"}));
  add("n1", "nn-3b", "4");  // moves to n2's domain, smaller, its use kept
  EXPECT_EQ(near(all), (Near{"0/0", "8/0", "4/2", "0/0"}));
  EXPECT_TRUE(cache.Erase("n2"));
  EXPECT_EQ(near({"n0", "n1"}), (Near{"0/0", "0/0"}));
  add("n2", "nn-3a");
  EXPECT_EQ(near({"n0", "n1", "n2"}), (Near{"8/0", "0/0", "8/0"}));
  // A policy naming a topology for the flavor without layer-3: the closest domain is layer-2.
  model::PolicyPtr wider = PolicyBuilder().Team("a").Quota(kFlavor, "nvidia.com/gpu", 8).Build();
  auto policy = std::make_shared<model::Policy>(*wider);
  for (model::Flavor& f : policy->flavors) f.topology_levels = {kLayer1, kLayer2};
  // Each node's values at its flavor's levels travel with its placement (for topology choices),
  // made again when a policy changes the levels.
  const NodeView n0 = cache.View("n0");
  EXPECT_EQ(n0.placement->topology.values, "nn-1\x1fnn-2\x1fnn-3a\x1f");  // no hostname label
  EXPECT_EQ(n0.placement->topology.ends, (std::vector<uint32_t>{5, 10, 16}));
  EXPECT_EQ(n0.placement->topology.levels,
            model::TopologyLevelsStamp(model::TopologyLevelsOf(*policy_, kFlavor)));
  cache.Reflavor(*policy);
  EXPECT_EQ(near({"n0", "n1", "n2"}), (Near{"12/2", "16/0", "12/2"}));
  EXPECT_EQ(cache.View("n0").placement->topology.values, "nn-1\x1fnn-2\x1f");
  EXPECT_EQ(cache.View("n0").placement->topology.levels,
            model::TopologyLevelsStamp({kLayer1, kLayer2}));
}

}  // namespace
}  // namespace taskgov::scheduler::state
