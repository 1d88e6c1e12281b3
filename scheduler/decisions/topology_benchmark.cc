// Topology benchmarks (issue 37), at 5,000 ml.p5.48xlarge nodes labelled as HyperPod labels them
// (5 network-node-layer-1 × 10 layer-2 × 10 layer-3 domains of 10 nodes):
//   BM_ChooseDomain           the first member's domain choice (every node's room, per domain);
//   BM_ChooseSlices           the same for 8 pods in slices of 4 at layer-3 within one layer-2
//                             domain (slice counts per layer-3 domain, the descent);
//   BM_GangMemberFilter/0|1|2 a member of a held gang of 4 × 8 GPUs filtered over all 5,000
//                             nodes without (0) and with (1) a required layer-2 topology, and
//                             (2) with it and slices of 2 at layer-3 (the member's slice place)
//                             — the peer is the same filter without topology;
//   BM_RoomForMembers         what a gang's first member's filter adds when the gang holds no
//                             quota yet (issue 34): room for all 4 × 8 GPUs at once, over the
//                             5,000 nodes — beside BM_GangMemberFilter/0, the whole filter.
// Goals: the choice ≤ 1 ms; the member's filter with topology ≤ 2× without.
//   bazel run -c opt //scheduler/decisions:topology_benchmark

#include <benchmark/benchmark.h>

#include <memory>
#include <string>

#include "scheduler/common/clock.h"
#include "scheduler/decisions/admission.h"
#include "scheduler/decisions/gang_room.h"
#include "scheduler/decisions/topology.h"
#include "scheduler/testing/builders.h"

namespace taskgov::scheduler::decisions {
namespace {

using testing::NodeBuilder;
using testing::PodBuilder;
using testing::PolicyBuilder;

constexpr char kP5[] = "ml.p5.48xlarge";
constexpr char kLayer2[] = "topology.k8s.aws/network-node-layer-2";
constexpr int kNodes = 5000;

struct World {
  World()
      : book(PolicyBuilder().Team("team-a").Quota(kP5, "nvidia.com/gpu", 8 * kNodes).Build(),
             &clock),
        cluster(&book, &clock, state::ClusterState::Options{}),
        admission(&book, &cluster, nullptr, &clock, Admission::Options{}) {
    cluster.OnSynced(ObjectKind::kPod);
    cluster.OnSynced(ObjectKind::kNode);
    for (int n = 0; n < kNodes; ++n) {
      const std::string name = "p5-" + std::to_string(n);
      cluster.OnNodeUpsert(
          NodeBuilder(name)
              .InstanceType(kP5)
              .Allocatable("nvidia.com/gpu", "8")
              .Label("topology.k8s.aws/network-node-layer-1", "l1-" + std::to_string(n / 1000))
              .Label(kLayer2, "l2-" + std::to_string(n / 100))
              .Label("topology.k8s.aws/network-node-layer-3", "l3-" + std::to_string(n / 10)));
      names.push_back(name);
      // Every other layer-2 domain has a busy node: the choice has domains of both kinds.
      if (n % 200 == 0) {
        cluster.OnPodUpsert(PodBuilder("busy-" + std::to_string(n))
                                .Namespace("ns-team-a")
                                .Uid("uid-busy-" + std::to_string(n))
                                .Gpus(8)
                                .OnNode(name));
      }
    }
  }
  // Member i of gang `job`: 4 × 8 GPUs, with or without a required layer-2 topology, with slices
  // of 2 at layer-3 when `sliced`.
  static model::Pod Member(const std::string& job, int i, bool topology, bool sliced = false) {
    PodBuilder b(job + "-" + std::to_string(i));
    b.Namespace("ns-team-a").Uid("uid-" + job + "-" + std::to_string(i)).Gpus(8);
    model::Pod pod = b.Build();
    pod.labels["kueue.x-k8s.io/pod-group-name"] = job;
    pod.annotations["kueue.x-k8s.io/pod-group-total-count"] = "4";
    if (topology) pod.annotations[kRequiredTopologyAnnotation] = kLayer2;
    if (sliced) {
      pod.annotations[kSliceRequiredTopologyAnnotation] = "topology.k8s.aws/network-node-layer-3";
      pod.annotations[kSliceSizeAnnotation] = "2";
    }
    return pod;
  }

  common::FakeClock clock;
  ledger::QuotaBook book;
  state::ClusterState cluster;
  Admission admission;
  std::vector<std::string> names;
};

World& TheWorld() {
  static World* world = new World();
  return *world;
}

void BM_ChooseDomain(benchmark::State& state) {
  World& w = TheWorld();
  const model::Pod pod = World::Member("choice", 0, true);
  const model::ResourceList request = model::EffectiveRequest(pod);
  const std::vector<std::string> levels =
      model::TopologyLevelsOf(model::Flavor{kP5, {}, false, {}});
  const model::NameId flavor = model::FlavorNames().Intern(kP5);
  for (auto _ : state) {
    DomainChoice c = ChooseDomain(w.cluster.nodes(), flavor, levels, kLayer2, pod, request, 4,
                                  w.clock.NowMs(), {});
    benchmark::DoNotOptimize(c);
  }
  state.SetLabel("5,000 nodes, 50 layer-2 domains");
}
BENCHMARK(BM_ChooseDomain)->Unit(benchmark::kMicrosecond);

void BM_ChooseSlices(benchmark::State& state) {
  World& w = TheWorld();
  const model::Pod pod = World::Member("slices", 0, true);
  const model::ResourceList request = model::EffectiveRequest(pod);
  const std::vector<std::string> levels =
      model::TopologyLevelsOf(model::Flavor{kP5, {}, false, {}});
  const model::NameId flavor = model::FlavorNames().Intern(kP5);
  const TopologyRequest slices =
      TopologyRequestOf(model::Labels{{kRequiredTopologyAnnotation, kLayer2},
                                      {kSliceRequiredTopologyAnnotation, levels[2]},
                                      {kSliceSizeAnnotation, "4"}});
  for (auto _ : state) {
    SliceChoice c = ChooseSlices(w.cluster.nodes(), flavor, levels, slices, pod, request, 8,
                                 w.clock.NowMs(), {});
    benchmark::DoNotOptimize(c);
  }
  state.SetLabel("5,000 nodes, 500 layer-3 domains, 8 pods in slices of 4");
}
BENCHMARK(BM_ChooseSlices)->Unit(benchmark::kMicrosecond);

void BM_RoomForMembers(benchmark::State& state) {
  World& w = TheWorld();
  const model::Pod pod = World::Member("room", 0, false);
  const model::NameId flavor = model::FlavorNames().Intern(kP5);
  GangRoom room;
  for (auto _ : state) {
    room = RoomForMembers(w.cluster.nodes(), flavor, pod, 4, nullptr, w.clock.NowMs(),
                          state::Holder{pod.uid, "room"});
    benchmark::DoNotOptimize(room);
  }
  state.counters["placed"] = static_cast<double>(room.placed);
  state.SetLabel("5,000 nodes, a gang of 4 x 8 GPUs");
}
BENCHMARK(BM_RoomForMembers)->Unit(benchmark::kMicrosecond);

void BM_GangMemberFilter(benchmark::State& state) {
  World& w = TheWorld();
  const bool topology = state.range(0) >= 1;
  const bool sliced = state.range(0) == 2;
  const std::string job = sliced ? "sliced" : topology ? "with" : "without";
  // The first member holds the gang's quota (and, with topology, its domain).
  FilterArgs first;
  first.pod = World::Member(job, 0, topology, sliced);
  first.node_names = w.names;
  if (w.admission.Filter(first).feasible.empty()) {
    state.SkipWithError("the first member was not admitted");
    return;
  }
  FilterArgs member;
  member.pod = World::Member(job, 1, topology, sliced);
  member.node_names = w.names;
  size_t feasible = 0;
  for (auto _ : state) {
    FilterResult r = w.admission.Filter(member);
    feasible = r.feasible.size();
    benchmark::DoNotOptimize(r);
    state.PauseTiming();
    (void)w.book.ReturnToGang(member.pod.uid);  // its share back to the hold: the same next time
    state.ResumeTiming();
  }
  state.counters["feasible"] = static_cast<double>(feasible);
  state.SetLabel(sliced     ? "required layer-2, slices of 2 at layer-3"
                 : topology ? "required layer-2 topology"
                            : "no topology (peer)");
}
BENCHMARK(BM_GangMemberFilter)->Arg(0)->Arg(1)->Arg(2)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace taskgov::scheduler::decisions
