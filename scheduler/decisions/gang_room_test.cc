#include "scheduler/decisions/gang_room.h"

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
constexpr int64_t kNow = 1'000'000;

class GangRoomTest : public ::testing::Test {
 protected:
  void Node(const std::string& name, int gpus_used, NodeBuilder builder = NodeBuilder("")) {
    model::Node node = builder.InstanceType(kP5).Allocatable("nvidia.com/gpu", "8").Build();
    node.name = name;
    nodes_.Upsert(node, *policy_);
    if (gpus_used > 0) {
      ASSERT_TRUE(nodes_.AddUsage(name, model::ResourceList{{"nvidia.com/gpu", gpus_used}}));
    }
  }
  GangRoom Room(const std::vector<PodSetDemand>& sets) {
    return RoomForGang(nodes_, FlavorNames().Intern(kP5), sets, kNow);
  }

  model::PolicyPtr policy_ = PolicyBuilder().Team("a").Quota(kP5, "nvidia.com/gpu", 64).Build();
  state::NodeCache nodes_;
};

// 12 GPUs are free on the flavor, but spread 4 + 4 + 4: a gang of two 6-GPU pods does not fit
// (the quota alone would say it does), one of three 4-GPU pods does.
TEST_F(GangRoomTest, FreeGpusSpreadOverNodesDoNotMakeRoomForLargePods) {
  Node("n0", 4);
  Node("n1", 4);
  Node("n2", 4);
  const model::Pod six = PodBuilder("").Gpus(6).Build();
  const model::Pod four = PodBuilder("").Gpus(4).Build();
  GangRoom room = Room({{2, &six}});
  EXPECT_FALSE(room.fits());
  EXPECT_EQ(room.pods, 2);
  EXPECT_EQ(room.placed, 0);
  room = Room({{3, &four}});
  EXPECT_TRUE(room.fits());
  EXPECT_EQ(room.placed, 3);
  EXPECT_FALSE(Room({{4, &four}}).fits()) << "a fourth 4-GPU pod has no node";
}

// Larger pods are placed first, on the fullest nodes that take them: an 8-GPU pod and four
// 2-GPU pods fit an empty node and a half-used one whichever order the sets come in.
TEST_F(GangRoomTest, LargePodsArePlacedFirstOnTheFullestNodesThatTakeThem) {
  Node("empty", 0);
  Node("half", 4);
  const model::Pod whole = PodBuilder("").Gpus(8).Build();
  const model::Pod two = PodBuilder("").Gpus(2).Build();
  EXPECT_TRUE(Room({{2, &two}, {1, &whole}}).fits());
  EXPECT_TRUE(Room({{1, &whole}, {2, &two}}).fits());
  EXPECT_FALSE(Room({{3, &two}, {1, &whole}}).fits()) << "the third 2-GPU pod has no room left";
}

// Room on an unschedulable node, on a node the pod's taints keep it off, or held for another
// pod (a preemptor's nominated node) is not room.
TEST_F(GangRoomTest, CordonedTaintedAndHeldRoomIsNotRoom) {
  Node("cordoned", 0, NodeBuilder("").Unschedulable());
  Node("tainted", 0, NodeBuilder("").Taint("dedicated", "infer", model::TaintEffect::kNoSchedule));
  Node("held", 0);
  nodes_.Hold("held", "uid-preemptor", model::ResourceList{{"nvidia.com/gpu", 8}}, kNow + 5'000);
  const model::Pod pod = PodBuilder("").Gpus(4).Build();
  EXPECT_EQ(Room({{1, &pod}}).placed, 0);
  const model::Pod tolerating = PodBuilder("")
                                    .Gpus(4)
                                    .Toleration("dedicated", model::TolerationOperator::kEqual,
                                                "infer", model::TaintEffect::kNoSchedule)
                                    .Build();
  EXPECT_EQ(Room({{3, &tolerating}}).placed, 2) << "two 4-GPU pods fit the tainted node";
  nodes_.ReleaseHolds("uid-preemptor");
  EXPECT_TRUE(Room({{2, &pod}}).fits());
}

// A pod asking for a resource no node has, or pods without any request, are judged as such.
TEST_F(GangRoomTest, UnknownResourcesNeverFitAndEmptyRequestsAlwaysDo) {
  Node("n0", 0);
  const model::Pod odd = PodBuilder("").Request("example.com/fpga", "1").Build();
  const model::Pod nothing = PodBuilder("").Build();
  EXPECT_FALSE(Room({{1, &odd}}).fits());
  EXPECT_TRUE(Room({{100, &nothing}}).fits());
  EXPECT_TRUE(Room({}).fits());
}

}  // namespace
}  // namespace taskgov::scheduler::decisions
