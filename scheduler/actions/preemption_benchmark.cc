// Benchmarks of victim selection and of one preemption-controller run at cluster scale: 64 nodes
// of 8 GPUs, 512 running 1-GPU pods of 8 teams, preemptors needing a whole node.
// Run: bazel run -c opt //scheduler/actions:preemption_benchmark

#include <benchmark/benchmark.h>

#include "scheduler/actions/job_resumer.h"
#include "scheduler/actions/preemption_controller.h"
#include "scheduler/decisions/admission.h"
#include "scheduler/decisions/preemption.h"
#include "scheduler/testing/builders.h"
#include "scheduler/testing/fake_kube_actions.h"

namespace taskgov::scheduler::actions {
namespace {

using decisions::Candidate;
using decisions::CandidateSet;
using decisions::FlavorNodes;
using decisions::NodeState;
using decisions::Preemptor;
using decisions::QuotaSim;
using decisions::Selection;
using decisions::SelectionInput;
using decisions::VictimSelector;
using ledger::CellKey;
using ledger::Charge;
using ledger::Ledger;
using ledger::QuotaBook;
using model::FlavorNames;
using model::NameId;
using model::Pod;
using model::PolicyPtr;
using model::ResourceList;
using model::ResourceNames;
using model::TeamNames;
using scheduler::testing::NodeBuilder;
using scheduler::testing::PodBuilder;
using scheduler::testing::PolicyBuilder;
using state::ClusterState;

constexpr char kP5[] = "ml.p5.48xlarge";
constexpr char kGpu[] = "nvidia.com/gpu";
constexpr int kNodes = 64;
constexpr int kTeams = 8;
constexpr int64_t kNow = 1'700'000'000'000;

// 8 teams of nominal 64 GPUs each in one cohort; team-0 is idle and team-1 borrows what it lent.
struct World {
  PolicyPtr policy;
  std::unique_ptr<Ledger> ledger;
  FlavorNodes nodes;
  std::vector<Candidate> candidates;

  World() {
    PolicyBuilder builder;
    for (int t = 0; t < kTeams; ++t) {
      builder.Team("bench-team-" + std::to_string(t), "c").Quota(kP5, kGpu, 64);
    }
    policy = builder.Build();
    ledger = std::make_unique<Ledger>(policy);
    const NameId gpu = ResourceNames().Intern(kGpu);
    const NameId flavor = FlavorNames().Intern(kP5);
    for (int n = 0; n < kNodes; ++n) {
      NodeState node;
      node.name = "bench-node-" + std::to_string(n);
      node.allocatable = {{gpu, 8}};
      nodes.Add(node);
    }
    int pod = 0;
    for (int n = 0; n < kNodes; ++n) {
      for (int slot = 0; slot < 8; ++slot, ++pod) {
        // team-1 holds nodes 0..15 (128: 64 borrowed), teams 2..7 the rest within nominal.
        const int team = n < 16 ? 1 : 2 + (pod % 6);
        Candidate c;
        c.uid = "bench-uid-" + std::to_string(pod);
        c.ns = "ns";
        c.name = "pod-" + std::to_string(pod);
        c.team = TeamNames().Intern("bench-team-" + std::to_string(team));
        c.flavor = flavor;
        c.priority = pod % 3;
        c.started_ms = kNow - (pod * 7919 % 100'000);
        c.created_ms = c.started_ms;
        c.admitted_ms = c.started_ms;
        c.node = nodes.nodes[n].name;
        c.occupies = {{gpu, 1}};
        c.charged = {{gpu, 1}};
        if (pod % 16 < 4) c.gang = "gang-" + std::to_string(pod / 16);
        nodes.Take(c.node, c.occupies);
        Ledger::Session s(*ledger);
        Charge charge;
        std::vector<CellKey> missing;
        (void)s.ForceCharge(c.team, flavor, ResourceList{{kGpu, 1}}, &charge, &missing);
        candidates.push_back(std::move(c));
      }
    }
  }
};

Preemptor NodePreemptor(int team) {
  Preemptor p;
  p.uid = "bench-preemptor";
  p.key = "ns/bench-preemptor";
  p.team = TeamNames().Intern("bench-team-" + std::to_string(team));
  p.priority = 100;
  p.created_ms = kNow;
  p.request = ResourceList{{kGpu, 8}};
  return p;
}

void BM_SelectReclaimOneNode(benchmark::State& state) {
  World world;
  const QuotaSim quota =
      QuotaSim::FromUsage(*world.policy, FlavorNames().Intern(kP5), world.ledger->ReadUsage());
  const CandidateSet set(world.candidates);
  const Preemptor p = NodePreemptor(0);  // idle team-0 reclaims a node from team-1
  VictimSelector selector;
  SelectionInput in{world.policy.get(), &p, &quota, &world.nodes, &set, kNow};
  size_t victims = 0;
  for (auto _ : state) {
    Selection s = selector.Select(in);
    victims = s.victims.size();
    benchmark::DoNotOptimize(s);
  }
  state.counters["victims"] = static_cast<double>(victims);
  state.counters["candidates"] = static_cast<double>(set.size());
}
BENCHMARK(BM_SelectReclaimOneNode)->Unit(benchmark::kMicrosecond);

void BM_SelectFairShare(benchmark::State& state) {
  World world;
  const QuotaSim quota =
      QuotaSim::FromUsage(*world.policy, FlavorNames().Intern(kP5), world.ledger->ReadUsage());
  const CandidateSet set(world.candidates);
  const Preemptor p = NodePreemptor(3);  // team-3 (at nominal) borrows from team-1 (above)
  VictimSelector selector;
  SelectionInput in{world.policy.get(), &p, &quota, &world.nodes, &set, kNow};
  size_t victims = 0;
  for (auto _ : state) {
    Selection s = selector.Select(in);
    victims = s.victims.size();
    benchmark::DoNotOptimize(s);
  }
  state.counters["victims"] = static_cast<double>(victims);
}
BENCHMARK(BM_SelectFairShare)->Unit(benchmark::kMicrosecond);

void BM_SelectHopeless(benchmark::State& state) {
  World world;
  const QuotaSim quota =
      QuotaSim::FromUsage(*world.policy, FlavorNames().Intern(kP5), world.ledger->ReadUsage());
  const CandidateSet set(world.candidates);
  Preemptor p = NodePreemptor(0);
  p.request = ResourceList{{kGpu, 16}};  // larger than any node: refused after the quota walk
  VictimSelector selector;
  SelectionInput in{world.policy.get(), &p, &quota, &world.nodes, &set, kNow};
  for (auto _ : state) {
    Selection s = selector.Select(in);
    benchmark::DoNotOptimize(s);
  }
}
BENCHMARK(BM_SelectHopeless)->Unit(benchmark::kMicrosecond);

void BM_QuotaSimFromUsage(benchmark::State& state) {
  World world;
  const Ledger::Usage usage = world.ledger->ReadUsage();
  for (auto _ : state) {
    QuotaSim quota = QuotaSim::FromUsage(*world.policy, FlavorNames().Intern(kP5), usage);
    benchmark::DoNotOptimize(quota);
  }
}
BENCHMARK(BM_QuotaSimFromUsage)->Unit(benchmark::kMicrosecond);

// The same cluster fed through ClusterState to a controller, with 64 pods waiting that no
// eviction can place (16 GPUs: larger than any node) — the steady state of a busy cluster.
struct ControllerWorld {
  World world;
  common::FakeClock clock{kNow};
  QuotaBook book{world.policy, &clock};
  ClusterState cluster{&book, &clock, ClusterState::Options{}};
  scheduler::testing::FakeKubeActions kube;
  PreemptionController::Options options;
  PreemptionController controller{&book, &cluster, &kube, &clock, options};

  ControllerWorld() {
    for (const NodeState& n : world.nodes.nodes) {
      cluster.OnNodeUpsert(NodeBuilder(n.name).InstanceType(kP5).Allocatable(kGpu, "8"));
    }
    for (const Candidate& c : world.candidates) {
      Pod pod = PodBuilder(c.name)
                    .Namespace("ns-" + TeamNames().Name(c.team))
                    .Uid(c.uid)
                    .Gpus(1)
                    .Priority(c.priority)
                    .Created(c.created_ms)
                    .Started(c.started_ms)
                    .OnNode(c.node);
      cluster.OnPodUpsert(pod);
    }
    for (int i = 0; i < 64; ++i) {
      cluster.OnPodUpsert(PodBuilder("wait-" + std::to_string(i))
                              .Namespace("ns-bench-team-" + std::to_string(2 + i % 6))
                              .Gpus(16)
                              .Created(kNow + i));
    }
  }
};

// One controller run after the first: every waiting pod is backed off (no victims), so the run
// only follows rounds and picks no preemptor.
void BM_ControllerRunOnce(benchmark::State& state) {
  ControllerWorld w;
  size_t preemptors = 0;
  for (auto _ : state) {
    PreemptionController::RunReport r = w.controller.RunOnce();
    preemptors = r.preemptors;
    benchmark::DoNotOptimize(r);
  }
  state.counters["preemptors"] = static_cast<double>(preemptors);
  state.counters["evictions"] = static_cast<double>(w.kube.evictions().size());
}
BENCHMARK(BM_ControllerRunOnce)->Unit(benchmark::kMillisecond);

// One controller run that decides: the clock moves past the no-victims backoff before each, so
// every run gathers the candidates and chooses (in vain) for all 64 waiting pods.
void BM_ControllerRunDecides(benchmark::State& state) {
  ControllerWorld w;
  size_t preemptors = 0;
  for (auto _ : state) {
    w.clock.Advance(w.options.no_victims_backoff_ms + 1);
    PreemptionController::RunReport r = w.controller.RunOnce();
    preemptors = r.preemptors;
    benchmark::DoNotOptimize(r);
  }
  state.counters["preemptors"] = static_cast<double>(preemptors);
  state.counters["evictions"] = static_cast<double>(w.kube.evictions().size());
}
BENCHMARK(BM_ControllerRunDecides)->Unit(benchmark::kMillisecond);

// Issue 35: one JobResumer run over `paused` jobs taskgov paused (8 pods of 4 GPUs each, teams
// 2..7) on the full cluster above — none can resume. Modes: 0, nothing changed since the last
// run (the steady state); 1, a pod of the cluster went and came back before each run (every
// team's flavor changed); 2, the naive scan, the peer: every paused job judged every run.
void BM_ResumerRun(benchmark::State& state) {
  ControllerWorld w;
  decisions::Admission admission(&w.book, &w.cluster, &w.kube, &w.clock, {});
  const int64_t paused = state.range(0);
  const int mode = static_cast<int>(state.range(1));
  Pod tmpl = PodBuilder("").Gpus(4).Priority(5).Build();
  for (int64_t j = 0; j < paused; ++j) {
    auto job = std::make_shared<model::JobControl>();
    job->kind = "Job";
    job->ns = "ns-bench-team-" + std::to_string(2 + j % 6);
    job->name = "paused-" + std::to_string(j);
    job->uid = "uid-paused-" + std::to_string(j);
    job->workload = model::OwnerGangKey(job->uid);
    job->suspended = true;
    job->creation_unix_ms = kNow - 1'000'000 + j;
    job->annotations = {{model::kSuspendedByAnnotation, "taskgov"},
                        {model::kSuspendedAtAnnotation, "2023-01-01T00:00:00Z"},
                        {model::kSuspensionsAnnotation, "1"}};
    tmpl.namespace_ = job->ns;
    job->pod_sets.push_back({8, tmpl});
    w.cluster.OnGangSizeUpsert(job->workload, 8);
    w.cluster.OnJobUpsert(job);
  }
  JobResumer::Options options;
  if (mode == 2) {
    options.max_judged_per_run = std::numeric_limits<size_t>::max();
    options.rejudge_after_ms = 0;
  }
  JobResumer resumer(
      &w.cluster, &w.kube, [&](const Pod& pod) { return admission.Explain(pod); }, &w.clock,
      options);
  // Every paused job judged once (a run judges at most 16): the state the modes start from.
  while (mode != 2 && resumer.RunOnce().judged > 0) {
  }
  Pod churn = PodBuilder("churn")
                  .Namespace("ns-bench-team-1")
                  .Uid("uid-churn")
                  .Gpus(1)
                  .OnNode(w.world.nodes.nodes[0].name);
  size_t judged = 0;
  for (auto _ : state) {
    if (mode == 1) {
      state.PauseTiming();
      w.cluster.OnPodDelete(churn);
      w.cluster.OnPodUpsert(churn);
      state.ResumeTiming();
    }
    const JobResumer::RunReport r = resumer.RunOnce();
    judged = r.judged;
    benchmark::DoNotOptimize(r);
  }
  state.counters["judged/run"] = static_cast<double>(judged);
  state.SetLabel(mode == 0 ? "unchanged" : mode == 1 ? "a flavor changed" : "naive scan (peer)");
}
BENCHMARK(BM_ResumerRun)
    ->ArgsProduct({{100, 1'000, 10'000}, {0, 1, 2}})
    ->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace taskgov::scheduler::actions
