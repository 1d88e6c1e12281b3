// Benchmarks of the quota ledger and the filter decision (issue targets: reserve + release
// ≥ 10 M/s on one thread; filter for a pod over 500 node names with 100 teams ≤ 20 µs of CPU
// excluding JSON; ≤ 512 bytes per tracked pod). Run: bazel run -c opt //scheduler:ledger_benchmark

#include <benchmark/benchmark.h>
#include <malloc.h>

#include "scheduler/decisions/admission.h"
#include "scheduler/testing/builders.h"
#include "scheduler/testing/filter_fixture.h"

namespace taskgov::scheduler {
namespace {

using ledger::Charge;
using ledger::Ledger;
using ledger::PodMeta;
using ledger::QuotaBook;
using model::Container;
using model::FlavorNames;
using model::IdAmounts;
using model::NameId;
using model::OwnerReference;
using model::Pod;
using model::PodPhase;
using model::ResourceList;
using model::TeamNames;
using model::ToIdAmounts;
using state::ClusterState;
using testing::NodeBuilder;
using testing::PodBuilder;

using testing::FilterFixture;
using testing::HundredTeams;
constexpr const char* kGpu = testing::kBenchGpu;
constexpr const char* const* kFlavors = testing::kBenchFlavors;

const ResourceList kOneGpu{{kGpu, 1}};
const ResourceList kThreeResources{{kGpu, 1}, {"cpu", 24000}, {"memory", int64_t{256} << 30}};

// Reserve + release of `request` for team-7 on the first flavor, one thread. `Request` is a
// ResourceList (names looked up per call) or IdAmounts (interned once up front: no lookups).
template <typename Request>
void ReserveReleaseLoop(benchmark::State& state, const Request& request) {
  Ledger ledger(HundredTeams());
  const NameId team = TeamNames().Intern("team-7");
  const NameId flavor = FlavorNames().Intern(kFlavors[0]);
  for (auto _ : state) {
    Ledger::Session s(ledger);
    auto r = s.Reserve(team, flavor, request, Ledger::Mode::kBorrowing);
    benchmark::DoNotOptimize(s.Release(std::get<Charge>(r)));
  }
  state.SetItemsProcessed(state.iterations());
}

void BM_ReserveRelease(benchmark::State& state) { ReserveReleaseLoop(state, kOneGpu); }
BENCHMARK(BM_ReserveRelease);

void BM_ReserveReleaseThreeResources(benchmark::State& state) {
  ReserveReleaseLoop(state, kThreeResources);
}
BENCHMARK(BM_ReserveReleaseThreeResources);

void BM_ReserveReleaseIds(benchmark::State& state) {
  ReserveReleaseLoop(state, ToIdAmounts(kOneGpu));
}
BENCHMARK(BM_ReserveReleaseIds);

void BM_ReserveReleaseIdsThreeResources(benchmark::State& state) {
  ReserveReleaseLoop(state, ToIdAmounts(kThreeResources));
}
BENCHMARK(BM_ReserveReleaseIdsThreeResources);

// Reserve + release by name from several threads, each for a team of its own (no shared
// counters): what the threads still share is the name lookup.
void BM_ReserveReleaseThreaded(benchmark::State& state) {
  static Ledger* ledger = nullptr;
  if (state.thread_index() == 0) ledger = new Ledger(HundredTeams());
  const NameId team = TeamNames().Intern("team-" + std::to_string(10 + state.thread_index()));
  const NameId flavor = FlavorNames().Intern(kFlavors[0]);
  const ResourceList& request = kThreeResources;
  for (auto _ : state) {
    Ledger::Session s(*ledger);
    auto r = s.Reserve(team, flavor, request, Ledger::Mode::kBorrowing);
    benchmark::DoNotOptimize(r);
    if (const Charge* c = std::get_if<Charge>(&r)) benchmark::DoNotOptimize(s.Release(*c));
  }
  state.SetItemsProcessed(state.iterations());
  if (state.thread_index() == 0) {
    delete ledger;
    ledger = nullptr;
  }
}
BENCHMARK(BM_ReserveReleaseThreaded)->Threads(1)->Threads(2)->UseRealTime();

// An admitted pod: the filter decision plus giving the reservation back.
void BM_FilterAdmit500Nodes100Teams(benchmark::State& state) {
  FilterFixture f;
  FilterArgs args;
  args.pod = PodBuilder("w").Namespace("ns-team-42").Gpus(1).Cpu("4").Memory("64Gi");
  args.node_names = f.names;
  for (auto _ : state) {
    FilterResult r = f.admission.Filter(args);
    benchmark::DoNotOptimize(r);
    f.book.Release(args.pod.uid);
    f.cluster.OnPodDelete(args.pod);
  }
}
BENCHMARK(BM_FilterAdmit500Nodes100Teams);

// A refused pod (over its borrowing limit on every flavor): per-flavor work only.
void BM_FilterRefuse500Nodes100Teams(benchmark::State& state) {
  FilterFixture f;
  FilterArgs args;
  args.pod = PodBuilder("w").Namespace("ns-team-42").Gpus(64);
  args.node_names = f.names;
  for (auto _ : state) {
    FilterResult r = f.admission.Filter(args);
    benchmark::DoNotOptimize(r);
  }
}
BENCHMARK(BM_FilterRefuse500Nodes100Teams);

// A gang member against a lone pod of the same shape (DESIGN §3.7): each iteration admits a whole
// 64-pod Kueue pod group — the first member's filter reserves for all 64, the others take their
// shares — then gives every reservation back. items/s counts member filters, so its inverse is
// the cost of one member's decision, to compare with BM_FilterLonePodLikeAGangMember.
void BM_FilterGangOf64PerMember(benchmark::State& state) {
  FilterFixture f;
  constexpr int kMembers = 64;
  std::vector<FilterArgs> members(kMembers);
  for (int i = 0; i < kMembers; ++i) {
    members[i].pod = PodBuilder("m-" + std::to_string(i))
                         .Namespace("ns-team-42")
                         .Cpu("2")
                         .Memory("16Gi")
                         .Label("kueue.x-k8s.io/pod-group-name", "train")
                         .Annotation("kueue.x-k8s.io/pod-group-total-count", "64");
    members[i].node_names = f.names;
  }
  for (auto _ : state) {
    for (const FilterArgs& args : members) {
      FilterResult r = f.admission.Filter(args);
      if (r.feasible.empty()) state.SkipWithError("a member was refused");
      benchmark::DoNotOptimize(r);
    }
    state.PauseTiming();
    for (const FilterArgs& args : members) {
      f.book.Release(args.pod.uid);
      f.cluster.OnPodDelete(args.pod);
    }
    state.ResumeTiming();
  }
  state.SetItemsProcessed(state.iterations() * kMembers);
}
BENCHMARK(BM_FilterGangOf64PerMember);

void BM_FilterLonePodLikeAGangMember(benchmark::State& state) {
  FilterFixture f;
  FilterArgs args;
  args.pod = PodBuilder("w").Namespace("ns-team-42").Cpu("2").Memory("16Gi");
  args.node_names = f.names;
  for (auto _ : state) {
    FilterResult r = f.admission.Filter(args);
    if (r.feasible.empty()) state.SkipWithError("the pod was refused");
    benchmark::DoNotOptimize(r);
    state.PauseTiming();
    f.book.Release(args.pod.uid);
    f.cluster.OnPodDelete(args.pod);
    state.ResumeTiming();
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_FilterLonePodLikeAGangMember);

// Bytes the allocator has handed out and not had back: from its arena (uordblks) and mapped for
// large blocks (hblkhd: a hash table's bucket array of 100,000 pods is one; the arena count alone
// missed it, or not, depending on what ran before and moved glibc's mmap threshold).
size_t HeapInUse() {
  const struct mallinfo2 info = mallinfo2();
  return info.uordblks + info.hblkhd;
}

// Bytes per tracked pod: heap growth for 100,000 bound reservations.
void BM_MemoryPerTrackedPod(benchmark::State& state) {
  for (auto _ : state) {
    common::FakeClock clock;
    auto book = std::make_unique<QuotaBook>(HundredTeams(), &clock);
    const NameId flavor = FlavorNames().Intern(kFlavors[0]);
    std::vector<NameId> teams;
    for (int t = 0; t < 100; ++t) teams.push_back(TeamNames().Intern("team-" + std::to_string(t)));
    const ResourceList request{{kGpu, 1}, {"cpu", 1000}, {"memory", int64_t{1} << 30}};
    constexpr int kPods = 100'000;
    std::vector<std::string> uids;
    uids.reserve(kPods);
    for (int i = 0; i < kPods; ++i)
      uids.push_back("0b1f5c2e-6a7d-4c8e-9f00-" + std::to_string(100000000000 + i));
    const size_t before = HeapInUse();
    for (int i = 0; i < kPods; ++i) {
      book->ConfirmBound(uids[i], teams[i % 100], flavor, request, PodMeta{});
    }
    const size_t after = HeapInUse();
    state.counters["bytes_per_pod"] = static_cast<double>(after - before) / kPods;
    benchmark::DoNotOptimize(book);
  }
}
BENCHMARK(BM_MemoryPerTrackedPod)->Iterations(1)->Unit(benchmark::kMillisecond);

// QuotaBook::Reconcile at 100,000 bound reservations (3 resources each) of 100 teams on 3
// flavors: the time it holds every session out (no filter is decided meanwhile), which is its
// whole run.
void BM_ReconcileHundredThousandReservations(benchmark::State& state) {
  common::FakeClock clock;
  QuotaBook book(HundredTeams(), &clock);
  const IdAmounts request = ToIdAmounts(kThreeResources);
  constexpr int kPods = 100'000;
  for (int i = 0; i < kPods; ++i) {
    book.ConfirmBound("pod-" + std::to_string(i),
                      TeamNames().Intern("team-" + std::to_string(i % 100)),
                      FlavorNames().Intern(kFlavors[i % 3]), request, PodMeta{});
  }
  for (auto _ : state) {
    std::vector<Ledger::Drift> drift = book.Reconcile();
    if (!drift.empty()) state.SkipWithError("the counters drifted");
    benchmark::DoNotOptimize(drift);
  }
  state.counters["reservations"] = static_cast<double>(book.size());
}
BENCHMARK(BM_ReconcileHundredThousandReservations)->Unit(benchmark::kMillisecond);

// Running pods shaped like real training workers: Kueue labels, a kubectl
// last-applied-configuration annotation of ~2 KB, a main container and a sidecar with requests
// and limits; as members of one PyTorchJob (owner reference, job labels) or as lone pods (each a
// workload of its own). Bound round-robin to `nodes` nodes named node-<i>.
std::vector<Pod> TrainingWorkers(int count, int nodes, bool job_member) {
  const std::string last_applied(2048, 'x');
  std::vector<Pod> pods;
  pods.reserve(count);
  for (int i = 0; i < count; ++i) {
    const std::string team = "team-" + std::to_string(i % 100);
    Pod pod = PodBuilder("llama-pretrain-worker-" + std::to_string(i))
                  .Namespace("ns-" + team)
                  .Uid("0b1f5c2e-6a7d-4c8e-9f00-" + std::to_string(100000000000 + i))
                  .Label("kueue.x-k8s.io/queue-name", "hyperpod-ns-" + team + "-localqueue")
                  .Label("kueue.x-k8s.io/priority-class", "training-priority")
                  .Annotation("kubectl.kubernetes.io/last-applied-configuration", last_applied)
                  .Gpus(1)
                  .Cpu("4")
                  .Memory("64Gi")
                  .Build();
    pod.containers.front().limits = pod.containers.front().requests;
    Container sidecar;
    sidecar.name = "log-shipper";
    sidecar.restart_always = true;
    sidecar.requests.Set("cpu", 100);
    sidecar.requests.Set("memory", int64_t{128} << 20);
    pod.init_containers.push_back(sidecar);
    if (job_member) {
      pod.labels["training.kubeflow.org/job-name"] = "llama-pretrain";
      pod.labels["training.kubeflow.org/replica-type"] = "worker";
      pod.owner_references.push_back(
          OwnerReference{"kubeflow.org/v1", "PyTorchJob", "llama-pretrain", "9d3c-uid", true});
    }
    pod.node_name = "node-" + std::to_string(i % nodes);
    pod.phase = PodPhase::kRunning;
    pods.push_back(std::move(pod));
  }
  return pods;
}

// A ClusterState (and its QuotaBook) with `nodes` nodes of the first flavor.
struct StateWithNodes {
  explicit StateWithNodes(int nodes)
      : book(std::make_unique<QuotaBook>(HundredTeams(), &clock)),
        cluster(std::make_unique<ClusterState>(book.get(), &clock, ClusterState::Options{})) {
    for (int i = 0; i < nodes; ++i) {
      cluster->OnNodeUpsert(NodeBuilder("node-" + std::to_string(i))
                                .InstanceType(kFlavors[0])
                                .Allocatable(kGpu, "1000")
                                .Allocatable("cpu", "100000")
                                .Allocatable("memory", "1000Ti"));
    }
  }
  common::FakeClock clock;
  std::unique_ptr<QuotaBook> book;
  std::unique_ptr<ClusterState> cluster;
};

// Bytes per running pod in the whole in-memory state (QuotaBook reservation, ClusterState pod
// record, node accounting and the workload table), for TrainingWorkers.
void MemoryPerRunningPod(benchmark::State& state, bool job_member) {
  constexpr int kNodes = 2'000;
  constexpr int kPods = 50'000;
  for (auto _ : state) {
    const std::vector<Pod> pods = TrainingWorkers(kPods, kNodes, job_member);
    StateWithNodes s(kNodes);
    const size_t before = HeapInUse();
    for (const Pod& pod : pods) s.cluster->OnPodUpsert(pod);
    const size_t after = HeapInUse();
    state.counters["bytes_per_pod"] = static_cast<double>(after - before) / kPods;
    state.counters["tracked"] = static_cast<double>(s.book->size());
    benchmark::DoNotOptimize(s.cluster);
  }
}
void BM_MemoryPerRunningPodWholeState(benchmark::State& state) { MemoryPerRunningPod(state, true); }
BENCHMARK(BM_MemoryPerRunningPodWholeState)->Iterations(1)->Unit(benchmark::kMillisecond);
void BM_MemoryPerRunningLonePodWholeState(benchmark::State& state) {
  MemoryPerRunningPod(state, false);
}
BENCHMARK(BM_MemoryPerRunningLonePodWholeState)->Iterations(1)->Unit(benchmark::kMillisecond);

// The preemption controller's walk over running pods (ClusterState::ForEachBoundPod) at 50,000
// lone training workers, reading what a victim candidate takes from each: namespace, name, gang,
// request by id.
void BM_WalkBoundPods(benchmark::State& state) {
  constexpr int kNodes = 2'000;
  constexpr int kPods = 50'000;
  StateWithNodes s(kNodes);
  for (const Pod& pod : TrainingWorkers(kPods, kNodes, false)) s.cluster->OnPodUpsert(pod);
  for (auto _ : state) {
    size_t read = 0;
    s.cluster->ForEachBoundPod([&](const ClusterState::BoundPod& pod) {
      read += pod.kept.ns().size() + pod.kept.name().size() + pod.kept.gang().size() +
              pod.kept.request_ids().size();
    });
    benchmark::DoNotOptimize(read);
  }
  state.SetItemsProcessed(state.iterations() * kPods);
}
BENCHMARK(BM_WalkBoundPods)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace taskgov::scheduler
