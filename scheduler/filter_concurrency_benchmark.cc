// Benchmarks of the filter decision under concurrency: the same work as ledger_benchmark's
// BM_FilterAdmit500Nodes100Teams and BM_FilterRefuse500Nodes100Teams, run by 1, 2 and 8 threads
// against one shared Admission (100 teams, 500 nodes over 3 flavors, synced), with and without
// an informer thread writing to the ClusterState, and for members of gangs. Wall time (UseRealTime)
// and items/s summed over the threads, so the numbers show what the locks on the filter path cost
// as threads are added. Run: bazel run -c opt //scheduler:filter_concurrency_benchmark
//
// Each benchmark has its own fixture, built once on first use and shared by every thread of
// every run of that benchmark; each thread files its own pod (own uid, own team), so threads
// contend on the shared state's locks and never on quota.

#include <benchmark/benchmark.h>

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "scheduler/decisions/admission.h"
#include "scheduler/testing/builders.h"
#include "scheduler/testing/filter_fixture.h"

namespace taskgov::scheduler {
namespace {

using testing::NodeBuilder;
using testing::PodBuilder;
using testing::PolicyBuilder;

using testing::FilterFixture;
using testing::HundredTeams;
constexpr const char* kGpu = testing::kBenchGpu;
constexpr const char* const* kFlavors = testing::kBenchFlavors;

// Benchmark thread `thread`'s pod: its own uid ("uid-w-<thread>") in team (7·thread) mod 100 —
// distinct teams for up to 100 threads.
PodBuilder ThreadPod(int thread) {
  PodBuilder pod("w-" + std::to_string(thread));
  pod.Namespace("ns-team-" + std::to_string(thread * 7 % 100));
  return pod;
}

// A filter of `pod` over every node of `f`.
FilterArgs ArgsFor(const FilterFixture& f, model::Pod pod) {
  FilterArgs args;
  args.pod = std::move(pod);
  args.node_names = f.names;
  return args;
}

// One admit cycle, as BM_FilterAdmit500Nodes100Teams: the decision, then the reservation given
// back and the pod forgotten.
void AdmitCycle(FilterFixture& f, const FilterArgs& args) {
  FilterResult r = f.admission.Filter(args);
  benchmark::DoNotOptimize(r);
  f.book.Release(args.pod.uid);
  f.cluster.OnPodDelete(args.pod);
}

// Marks the benchmark failed unless `args` is admitted (want_admitted) or refused; untimed,
// leaves no reservation behind. The caller still enters its loop (which then runs no iteration):
// every thread must reach the framework's start barrier.
void CheckPremise(benchmark::State& state, FilterFixture& f, const FilterArgs& args,
                  bool want_admitted) {
  FilterResult r = f.admission.Filter(args);
  f.book.Release(args.pod.uid);
  if (r.feasible.empty() == want_admitted) {
    state.SkipWithError(want_admitted ? "premise: the pod was refused"
                                      : "premise: the pod was admitted");
  }
}

// An informer feeding the ClusterState from its own thread for as long as the object lives: a
// bound pod of team-99 (no benchmark thread's team) upserted onto node-0, then deleted, in a
// loop — each event takes the state's lock exclusively and charges or releases the QuotaBook.
// Stop() (or the destructor) ends the loop and joins.
class InformerChurn {
 public:
  explicit InformerChurn(state::ClusterState* cluster)
      : pod_(PodBuilder("informer-churn")
                 .Namespace("ns-team-99")
                 .Gpus(1)
                 .Cpu("4")
                 .Memory("64Gi")
                 .OnNode("node-0")),
        thread_([this, cluster] { Run(cluster); }) {}
  InformerChurn(const InformerChurn&) = delete;
  InformerChurn& operator=(const InformerChurn&) = delete;
  ~InformerChurn() { Stop(); }

  // Ends the loop, joins; returns how many events were delivered.
  int64_t Stop() {
    // relaxed: the flag carries no data; join() orders the writer's work before what follows.
    stop_.store(true, std::memory_order_relaxed);
    if (thread_.joinable()) thread_.join();
    return events_;
  }

 private:
  void Run(state::ClusterState* cluster) {
    int64_t events = 0;
    // relaxed: see Stop().
    while (!stop_.load(std::memory_order_relaxed)) {
      cluster->OnPodUpsert(pod_);
      cluster->OnPodDelete(pod_);
      events += 2;
    }
    events_ = events;  // read only after join()
  }

  const model::Pod pod_;
  std::atomic<bool> stop_{false};
  int64_t events_ = 0;
  std::thread thread_;  // last: starts after the members it reads are built
};

// Counts, on thread 0, the waits for a reservation record another thread had claimed
// (QuotaBook::claim_waits: the same pod's) from before the timed loops start until after they
// end: the counter `claim_waits`, per run.
class LockWaits {
 public:
  LockWaits(benchmark::State& state, const ledger::QuotaBook& book)
      : state_(state), book_(book), before_(book.claim_waits()) {}
  ~LockWaits() {
    if (state_.thread_index() != 0) return;
    state_.counters["claim_waits"] =
        benchmark::Counter(static_cast<double>(book_.claim_waits() - before_));
  }

 private:
  benchmark::State& state_;
  const ledger::QuotaBook& book_;
  const uint64_t before_;
};

// Admitted pods, one per thread: filter + release + pod delete per iteration.
void BM_ConcurrentFilterAdmit(benchmark::State& state) {
  // Built by the first thread to get here (thread-safe static), before any timed loop; never
  // destroyed, so process exit does not race a late reader.
  static FilterFixture& f = *new FilterFixture();
  const FilterArgs args =
      ArgsFor(f, ThreadPod(state.thread_index()).Gpus(1).Cpu("4").Memory("64Gi"));
  CheckPremise(state, f, args, /*want_admitted=*/true);
  LockWaits waits(state, f.book);
  for (auto _ : state) AdmitCycle(f, args);
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_ConcurrentFilterAdmit)->Threads(1)->Threads(2)->Threads(8)->UseRealTime();

// Refused pods (64 GPUs: no node of any flavor has room), one per thread; each refusal records
// the pod as pending.
void BM_ConcurrentFilterRefuse(benchmark::State& state) {
  static FilterFixture& f = *new FilterFixture();
  const FilterArgs args = ArgsFor(f, ThreadPod(state.thread_index()).Gpus(64));
  CheckPremise(state, f, args, /*want_admitted=*/false);
  for (auto _ : state) {
    FilterResult r = f.admission.Filter(args);
    benchmark::DoNotOptimize(r);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_ConcurrentFilterRefuse)->Threads(1)->Threads(2)->Threads(8)->UseRealTime();

// BM_ConcurrentFilterAdmit with an informer thread writing throughout each run (started by
// thread 0 before the timed loops begin, stopped and joined after they have all ended: the
// framework's start and stop barriers order both). informer_events: events per second it got in.
void BM_ConcurrentFilterWithInformer(benchmark::State& state) {
  static FilterFixture& f = *new FilterFixture();
  const FilterArgs args =
      ArgsFor(f, ThreadPod(state.thread_index()).Gpus(1).Cpu("4").Memory("64Gi"));
  CheckPremise(state, f, args, /*want_admitted=*/true);
  LockWaits waits(state, f.book);
  std::optional<InformerChurn> churn;
  if (state.thread_index() == 0) churn.emplace(&f.cluster);
  for (auto _ : state) AdmitCycle(f, args);
  state.SetItemsProcessed(state.iterations());
  if (churn) {
    state.counters["informer_events"] =
        benchmark::Counter(static_cast<double>(churn->Stop()), benchmark::Counter::kIsRate);
  }
}
BENCHMARK(BM_ConcurrentFilterWithInformer)->Threads(1)->Threads(2)->Threads(8)->UseRealTime();

// Gang members, one 64-pod Kueue pod group per thread: the gang's first member is admitted before
// the timed loop (reserving for all 64), then each iteration admits another member — it takes its
// share of what the gang holds — and gives it back (AdmitCycle). What a member's filter adds to a
// lone pod's: the gang's hold looked up and claimed, and the gang key kept with the reservation.
void BM_ConcurrentFilterGangMember(benchmark::State& state) {
  static FilterFixture& f = *new FilterFixture();
  constexpr int kMembers = 64;
  const std::string gang = "train-" + std::to_string(state.thread_index());
  auto member = [&](int i) {
    return ArgsFor(
        f, PodBuilder("w-" + std::to_string(state.thread_index()) + "-m-" + std::to_string(i))
               .Namespace(ThreadPod(state.thread_index()).Build().namespace_)
               .Cpu("2")
               .Memory("16Gi")
               .Label("kueue.x-k8s.io/pod-group-name", gang)
               .Annotation("kueue.x-k8s.io/pod-group-total-count", std::to_string(kMembers)));
  };
  const FilterArgs first = member(0);
  if (f.admission.Filter(first).feasible.empty()) state.SkipWithError("premise: member 0 refused");
  std::vector<FilterArgs> others;
  for (int i = 1; i < kMembers; ++i) others.push_back(member(i));
  CheckPremise(state, f, others[0], /*want_admitted=*/true);
  LockWaits waits(state, f.book);
  size_t next = 0;
  for (auto _ : state) {
    AdmitCycle(f, others[next]);
    next = next + 1 == others.size() ? 0 : next + 1;
  }
  state.SetItemsProcessed(state.iterations());
  f.book.Release(first.pod.uid);  // untimed: the next run's first member reserves again
  f.cluster.OnPodDelete(first.pod);
}
BENCHMARK(BM_ConcurrentFilterGangMember)->Threads(1)->Threads(2)->Threads(8)->UseRealTime();

}  // namespace
}  // namespace taskgov::scheduler
