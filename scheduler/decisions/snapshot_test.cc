#include "scheduler/decisions/snapshot.h"

#include <gtest/gtest.h>

#include "scheduler/testing/builders.h"

// SplitGangNeed: a gang's need on the flavor a member decides on, and its members pinned to
// other flavors, from the pending view alone.

namespace taskgov::scheduler::decisions {
namespace {

using model::FlavorNames;
using model::Labels;
using model::ResourceList;
using model::TeamNames;
using state::PendingPod;
using state::PendingQueues;
using testing::PolicyBuilder;

constexpr char kP5[] = "ml.p5.48xlarge";
constexpr char kG5[] = "ml.g5.12xlarge";
constexpr char kP4[] = "ml.p4d.24xlarge";
constexpr char kGpu[] = "nvidia.com/gpu";
constexpr char kLabel[] = "node.kubernetes.io/instance-type";

PendingPod Member(const std::string& name, int64_t gpus, const std::string& pinned_to) {
  PendingPod pod;
  pod.uid = name;
  pod.key = "ns-a/" + name;
  pod.team = TeamNames().Intern("a");
  pod.request = ResourceList{{kGpu, gpus}};
  pod.workload = "kueue/ns-a/mpi";
  pod.workload_size = 6;
  if (!pinned_to.empty()) pod.node_selector = {{kLabel, pinned_to}};
  return pod;
}

TEST(SplitGangNeedTest, MembersPinnedToOtherFlavorsAreNeededThere) {
  const model::PolicyPtr policy =
      PolicyBuilder().Team("a").Quota(kP5, kGpu, 8).Quota(kG5, kGpu, 4).Quota(kP4, kGpu, 8).Build();
  common::FakeClock clock;
  PendingQueues queues(&clock, PendingQueues::Options{});
  // A launcher on g5, three workers on p5, one member free to go anywhere, one pinned to an
  // instance type the team has no quota for.
  const PendingPod launcher = Member("launcher", 4, kG5);
  for (const PendingPod& pod :
       {launcher, Member("w0", 1, kP5), Member("w1", 1, kP5), Member("w2", 1, kP5),
        Member("any", 2, ""), Member("nowhere", 3, "ml.trn1.32xlarge")}) {
    queues.Upsert(pod);
  }
  const model::Team& team = *policy->FindTeam("a");
  // Decided from a worker: the workers, the free member and the one that fits nowhere (refused
  // with the gang) here; the launcher on g5.
  const PendingPod w0 = Member("w0", 1, kP5);
  GangNeedSplit split = SplitGangNeed(queues, *policy, team, w0.team, w0.workload, w0.uid,
                                      w0.request, w0.node_selector, 6);
  EXPECT_EQ(split.here.Get(kGpu), 1 + 1 + 1 + 2 + 3);
  EXPECT_EQ(split.estimated, 0);
  // With two members not created yet, each counts here as the largest known here (3), not as
  // the launcher.
  split = SplitGangNeed(queues, *policy, team, w0.team, w0.workload, w0.uid, w0.request,
                        w0.node_selector, 8);
  EXPECT_EQ(split.estimated, 2);
  EXPECT_EQ(split.here.Get(kGpu), 1 + 1 + 1 + 2 + 3 + 2 * 3);
  ASSERT_EQ(split.elsewhere.size(), 1u);
  EXPECT_EQ(FlavorNames().Name(split.elsewhere[0].first), kG5);
  EXPECT_EQ(split.elsewhere[0].second.Get(kGpu), 4);
  // Decided from the free member: every flavor is its, so nothing is pinned elsewhere.
  const PendingPod any = Member("any", 2, "");
  split = SplitGangNeed(queues, *policy, team, any.team, any.workload, any.uid, any.request,
                        any.node_selector, 6);
  EXPECT_TRUE(split.elsewhere.empty());
  EXPECT_EQ(split.here.Get(kGpu), 2 + 4 + 1 + 1 + 1 + 3);
  // From the launcher: the three workers on p5 (the free member may run on g5: it counts here).
  split = SplitGangNeed(queues, *policy, team, launcher.team, launcher.workload, launcher.uid,
                        launcher.request, launcher.node_selector, 6);
  ASSERT_EQ(split.elsewhere.size(), 1u);
  EXPECT_EQ(FlavorNames().Name(split.elsewhere[0].first), kP5);
  EXPECT_EQ(split.elsewhere[0].second.Get(kGpu), 3);
  EXPECT_EQ(split.here.Get(kGpu), 4 + 2 + 3);
}

}  // namespace
}  // namespace taskgov::scheduler::decisions
