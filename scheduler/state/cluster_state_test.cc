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
using model::IdAmounts;
using model::NameId;
using model::ResourceList;
using model::TeamNames;
using model::ToResourceList;
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
      [&](const ClusterState::BoundPod& pod) { names.emplace(pod.kept.name()); }, flavors);
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

// The bound pods being deleted, per team (what taskgov_pods counts as preempted or terminating
// rather than running): a pod waiting that is deleted is not one, and one that ends leaves the
// count.
TEST(ClusterStateTest, TerminatingPodsAreCountedPerTeam) {
  common::FakeClock clock;
  QuotaBook book(
      PolicyBuilder().Team("team-a").Quota(kP5, kGpu, 8).Team("team-b").Quota(kP5, kGpu, 8).Build(),
      &clock);
  ClusterState cluster(&book, &clock, ClusterState::Options{});
  cluster.SetPolicy(book.ledger().policy());
  cluster.OnSynced(ObjectKind::kPod);
  cluster.OnSynced(ObjectKind::kNode);
  cluster.OnNodeUpsert(NodeBuilder("p5-0").InstanceType(kP5).Allocatable(kGpu, "8"));
  auto deleted = [](model::Pod pod) {
    pod.deletion_unix_ms = 1000;
    return pod;
  };
  cluster.OnPodUpsert(PodBuilder("runs").Namespace("ns-team-a").Gpus(1).OnNode("p5-0"));
  cluster.OnPodUpsert(deleted(PodBuilder("leaves").Namespace("ns-team-a").Gpus(1).OnNode("p5-0")));
  cluster.OnPodUpsert(deleted(PodBuilder("never-ran").Namespace("ns-team-a").Gpus(1)));
  cluster.OnPodUpsert(
      deleted(PodBuilder("b-leaves").Namespace("ns-team-b").Gpus(1).OnNode("p5-0")));
  cluster.OnPodUpsert(deleted(PodBuilder("b-also").Namespace("ns-team-b").Gpus(1).OnNode("p5-0")));
  const NameId a = TeamNames().Intern("team-a"), b = TeamNames().Intern("team-b");
  EXPECT_EQ(cluster.TerminatingByTeam(), (std::unordered_map<NameId, size_t>{{a, 1}, {b, 2}}));

  cluster.OnPodUpsert(deleted(PodBuilder("b-also")
                                  .Namespace("ns-team-b")
                                  .Gpus(1)
                                  .OnNode("p5-0")
                                  .Phase(model::PodPhase::kSucceeded)));
  EXPECT_EQ(cluster.TerminatingByTeam(), (std::unordered_map<NameId, size_t>{{a, 1}, {b, 1}}));
}

// A walk shows each running pod's packed facts, its team and its priority under the policy in
// force: a new policy that gives its class another value is seen at the next walk.
TEST(ClusterStateTest, AWalkShowsEachPodsTeamGangRequestAndPriorityUnderThePolicyInForce) {
  common::FakeClock clock;
  auto policy = [](int32_t training) {
    return PolicyBuilder()
        .Team("team-a")
        .Quota(kP5, kGpu, 8)
        .PriorityClass("training", training)
        .Build();
  };
  QuotaBook book(policy(100), &clock);
  ClusterState cluster(&book, &clock, ClusterState::Options{});
  cluster.SetPolicy(book.ledger().policy());
  cluster.OnNodeUpsert(NodeBuilder("p5-0").InstanceType(kP5).Allocatable(kGpu, "8"));
  cluster.OnPodUpsert(PodBuilder("w-0")
                          .Namespace("ns-team-a")
                          .Label("kueue.x-k8s.io/priority-class", "training")
                          .Annotation("kueue.x-k8s.io/pod-group-name", "llama")
                          .Gpus(2)
                          .Cpu("4")
                          .OnNode("p5-0"));
  struct Seen {
    std::string uid, key, gang, node;
    NameId team = kNoTeam;
    int32_t priority = 0;
    IdAmounts request;
  };
  auto walk = [&] {
    std::vector<Seen> seen;
    cluster.ForEachBoundPod([&](const ClusterState::BoundPod& pod) {
      seen.push_back(Seen{std::string(pod.uid), pod.kept.key(), std::string(pod.kept.gang()),
                          pod.kept.node_name(), pod.team, pod.priority, pod.kept.request_ids()});
    });
    return seen;
  };
  std::vector<Seen> seen = walk();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].uid, "uid-w-0");
  EXPECT_EQ(seen[0].key, "ns-team-a/w-0");
  EXPECT_EQ(seen[0].gang, "kueue/ns-team-a/llama");
  EXPECT_EQ(seen[0].node, "p5-0");
  EXPECT_EQ(seen[0].team, TeamNames().Intern("team-a"));
  EXPECT_EQ(seen[0].priority, 100);
  EXPECT_EQ(ToResourceList(seen[0].request).ToString(),
            ResourceList({{"cpu", 4000}, {kGpu, 2}}).ToString());

  cluster.SetPolicy(policy(7));
  seen = walk();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].priority, 7);
}

// The waiting observer hears of a pod when it starts waiting — the informer reports it pending,
// or a filter call refuses it first — and not again while it waits; pods another scheduler
// places, or of no team, never wait here.
TEST(ClusterStateTest, APodStartingToWaitIsAnnouncedOnceWhileItWaits) {
  common::FakeClock clock;
  QuotaBook book(PolicyBuilder().Team("team-a").Quota(kP5, kGpu, 8).Build(), &clock);
  ClusterState cluster(&book, &clock, ClusterState::Options{});
  cluster.SetPolicy(book.ledger().policy());
  int waiting = 0;
  cluster.SetPodWaitingObserver([&waiting] { ++waiting; });
  cluster.OnSynced(ObjectKind::kPod);
  cluster.OnSynced(ObjectKind::kNode);
  cluster.OnNodeUpsert(NodeBuilder("p5-0").InstanceType(kP5).Allocatable(kGpu, "8"));

  const model::Pod pod = PodBuilder("w-0").Namespace("ns-team-a").Gpus(8);
  cluster.OnPodUpsert(pod);
  EXPECT_EQ(waiting, 1);
  // kube-scheduler retries it: its status changes, and the filter refuses it each time.
  const NameId team = TeamNames().Intern("team-a");
  for (int i = 0; i < 3; ++i) {
    cluster.OnPodUpsert(pod);
    PendingPod refused = PendingPodOf(pod, team, 0, ResourceList({{kGpu, 8}}), {});
    refused.refusal = "over quota, try " + std::to_string(i);
    cluster.pending().NoteRefused(refused);
    cluster.pending().Flush();
  }
  cluster.SetPolicy(book.ledger().policy());  // re-ranks it
  EXPECT_EQ(waiting, 1);

  // Refused by a filter call before the informer reports it: announced then, once.
  const model::Pod early = PodBuilder("w-1").Namespace("ns-team-a").Gpus(8);
  cluster.pending().NoteRefused(PendingPodOf(early, team, 0, ResourceList({{kGpu, 8}}), {}));
  cluster.pending().Flush();  // applied, and its join announced, by the queues' applier
  EXPECT_EQ(waiting, 2);
  cluster.OnPodUpsert(early);
  EXPECT_EQ(waiting, 2);

  cluster.OnPodUpsert(PodBuilder("other").Namespace("ns-team-a").SchedulerName("default"));
  cluster.OnPodUpsert(PodBuilder("no-team").Namespace("elsewhere").Gpus(1));
  cluster.OnPodUpsert(PodBuilder("w-0").Namespace("ns-team-a").Gpus(8).OnNode("p5-0"));  // bound
  cluster.OnPodDelete(early);
  EXPECT_EQ(waiting, 2);
}

}  // namespace
}  // namespace taskgov::scheduler::state
