#include "scheduler/decisions/topology.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "scheduler/testing/builders.h"

namespace taskgov::scheduler::decisions {
namespace {

using model::FlavorNames;
using testing::NodeBuilder;
using testing::PodBuilder;
using testing::PolicyBuilder;

constexpr char kP5[] = "ml.p5.48xlarge";
constexpr char kL1[] = "topology.k8s.aws/network-node-layer-1";
constexpr char kL2[] = "topology.k8s.aws/network-node-layer-2";
constexpr int64_t kNow = 1'000'000;

class ChooseDomainTest : public ::testing::Test {
 protected:
  // Node `name` in layer-1 domain `l1`, layer-2 domain `l2`, with `used` of its 8 GPUs in use.
  void Node(const std::string& name, const std::string& l1, const std::string& l2, int used,
            bool cordoned = false) {
    NodeBuilder b(name);
    b.InstanceType(kP5).Allocatable("nvidia.com/gpu", "8").Label(kL1, l1).Label(kL2, l2);
    if (cordoned) b.Unschedulable();
    nodes_.Upsert(b, *policy_);
    if (used > 0) {
      ASSERT_TRUE(nodes_.AddUsage(name, model::ResourceList{{"nvidia.com/gpu", used}}));
    }
  }
  DomainChoice Choose(const std::string& level, int64_t count, int gpus = 8) {
    const model::Pod pod = PodBuilder("m").Gpus(gpus).Build();
    return ChooseDomain(nodes_, FlavorNames().Intern(kP5), levels_, level, pod,
                        model::EffectiveRequest(pod), count, kNow, {});
  }

  model::PolicyPtr policy_ = PolicyBuilder().Team("a").Quota(kP5, "nvidia.com/gpu", 64).Build();
  std::vector<std::string> levels_ = LevelsOf(model::Flavor{kP5, {}, false, {}});
  state::NodeCache nodes_;
};

TEST(TopologyRequestTest, RequiredBeforePreferredAndHyperPodLevelsByDefault) {
  model::Pod pod = PodBuilder("m").Build();
  EXPECT_EQ(TopologyRequestOf(pod).mode, TopologyRequest::Mode::kNone);
  pod.annotations[kPreferredTopologyAnnotation] = kL1;
  EXPECT_EQ(TopologyRequestOf(pod).mode, TopologyRequest::Mode::kPreferred);
  pod.annotations[kRequiredTopologyAnnotation] = kL2;
  EXPECT_TRUE(TopologyRequestOf(pod).required());
  EXPECT_EQ(TopologyRequestOf(pod).level, kL2);
  EXPECT_EQ(LevelsOf(model::Flavor{kP5, {}, false, {}}),
            (std::vector<std::string>{kL1, kL2, "topology.k8s.aws/network-node-layer-3",
                                      "kubernetes.io/hostname"}));
  EXPECT_TRUE(LevelsOf(model::Flavor{"gpu-a100", {}, false, {}}).empty());
  EXPECT_EQ(LevelsOf(model::Flavor{"gpu-a100", {}, false, {"rack", "kubernetes.io/hostname"}}),
            (std::vector<std::string>{"rack", "kubernetes.io/hostname"}));
  EXPECT_EQ(LevelName(kL2), "network-node-layer-2");
}

// The tightest domain that holds the gang, counted node by node: spine-b has 4 nodes with 4 free
// GPUs each (16 free, but no room for one 8-GPU pod), spine-c 2 free nodes, spine-d 3.
TEST_F(ChooseDomainTest, TheTightestDomainWhereEveryMemberFitsOnANode) {
  for (int i = 0; i < 4; ++i) Node("b" + std::to_string(i), "l1-0", "spine-b", 4);
  Node("c0", "l1-0", "spine-c", 0);
  Node("c1", "l1-0", "spine-c", 0);
  for (int i = 0; i < 3; ++i) Node("d" + std::to_string(i), "l1-1", "spine-d", 0);
  DomainChoice c = Choose(kL2, 2);
  ASSERT_TRUE(c.found);
  EXPECT_EQ(c.name, "spine-c");
  EXPECT_EQ(c.fits, 2);
  EXPECT_EQ(c.nodes.size(), 2u);
  c = Choose(kL2, 3);
  ASSERT_TRUE(c.found);
  EXPECT_EQ(c.name, "spine-d");
  // Four 8-GPU members: no spine holds them, though spine-b has 16 free GPUs.
  c = Choose(kL2, 4);
  EXPECT_FALSE(c.found);
  EXPECT_EQ(c.name, "spine-d");
  EXPECT_EQ(c.fits, 3);
  EXPECT_EQ(c.domains, 3u);
  EXPECT_EQ(c.Refusal(kL2, kP5, model::ResourceList{{"nvidia.com/gpu", 8}}),
            "no network-node-layer-2 domain of ml.p5.48xlarge has room for 4 pods of 8 "
            "nvidia.com/gpu; the best has room for 3 (domain spine-d, 3 domains)");
  // 4-GPU members fit spine-b's nodes: 4 of them, the tightest that holds 4.
  c = Choose(kL2, 4, 4);
  ASSERT_TRUE(c.found);
  EXPECT_EQ(c.name, "spine-b");
  // At layer 1, l1-0 holds two 8-GPU members (spine-c), l1-1 three: neither holds 4.
  EXPECT_FALSE(Choose(kL1, 4).found);
  EXPECT_TRUE(Choose(kL1, 3).found);
}

// Domains are named by every wider level too: spine-x under l1-0 and spine-x under l1-1 are two
// domains. Cordoned nodes and nodes without the labels hold no member.
TEST_F(ChooseDomainTest, DomainsAreTheirWholePathAndCordonedOrUnlabelledNodesHoldNothing) {
  Node("a0", "l1-0", "spine-x", 0);
  Node("a1", "l1-1", "spine-x", 0);
  Node("a2", "l1-1", "spine-x", 0, /*cordoned=*/true);
  nodes_.Upsert(NodeBuilder("bare").InstanceType(kP5).Allocatable("nvidia.com/gpu", "8"), *policy_);
  DomainChoice c = Choose(kL2, 2);
  EXPECT_FALSE(c.found);
  EXPECT_EQ(c.domains, 2u);
  EXPECT_EQ(c.fits, 1);
  EXPECT_FALSE(Choose("example.com/rack", 1).found) << "not a level of the flavor";
}

// A preferred level: one domain when one holds them all, else the fewest — the freest first, the
// last the tightest that completes them.
TEST_F(ChooseDomainTest, APreferredGangGoesToTheFewestDomains) {
  for (int i = 0; i < 4; ++i) Node("a" + std::to_string(i), "l1-0", "spine-a", 0);
  for (int i = 0; i < 3; ++i) Node("b" + std::to_string(i), "l1-0", "spine-b", 0);
  Node("c0", "l1-0", "spine-c", 0);
  const model::Pod pod = PodBuilder("m").Gpus(8).Build();
  auto fewest = [&](int64_t count) {
    return ChooseFewestDomains(nodes_, FlavorNames().Intern(kP5), levels_, kL2, pod,
                               model::EffectiveRequest(pod), count, kNow, {});
  };
  EXPECT_EQ(fewest(3).name, "spine-b") << "one domain holds them";
  DomainChoice c = fewest(6);
  ASSERT_TRUE(c.found);
  EXPECT_EQ(c.name, "spine-a+spine-b");
  EXPECT_EQ(c.nodes.size(), 7u);
  EXPECT_EQ(fewest(5).name, "spine-a+spine-c") << "spine-c's 1 completes 5, tighter than b";
  EXPECT_FALSE(fewest(9).found) << "8 members fit the flavor's nodes at most";
}

// A domain lives as long as its gang's hold: forgotten when looked up after the hold went, and
// swept on a later Record once the map doubled, for gangs never looked up again.
TEST(GangDomainsTest, DomainsOfGangsWithoutAHoldAreForgotten) {
  GangDomains domains;
  auto domain = std::make_shared<GangDomain>();
  const auto never = [](const std::string&) { return false; };
  EXPECT_EQ(domains.Record("g", domain, never), domain);
  EXPECT_EQ(domains.Record("g", std::make_shared<GangDomain>(), never), domain)
      << "the first stays";
  EXPECT_EQ(domains.Find("g", [] { return true; }), domain);
  EXPECT_EQ(domains.Find("g", [] { return false; }), nullptr);
  EXPECT_EQ(domains.Find("g", [] { return true; }), nullptr) << "forgotten";
  for (int i = 0; i < 64; ++i) (void)domains.Record("old-" + std::to_string(i), domain, never);
  (void)domains.Record("new", domain, [](const std::string& gang) { return gang == "new"; });
  EXPECT_EQ(domains.Find("old-0", [] { return true; }), nullptr) << "swept";
  EXPECT_EQ(domains.Find("new", [] { return true; }), domain);
}

}  // namespace
}  // namespace taskgov::scheduler::decisions
