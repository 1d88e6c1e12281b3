// Scrape cost for a large cluster, and the cost of recording on the webhook path.
//   bazel run -c opt //metrics:metrics_benchmark
//
// BM_Render/<teams>/<kueue>: teams × 3 flavors × 3 resources ledger cells, every team with
// admissions, refusals and wait/run histograms; kueue=1 adds the Kueue families. 20 teams make
// about 2,000 series, 100 teams about 10,000. Counter "series" is the number of samples in one
// scrape, "bytes" its size.
// BM_ObserveFilter / BM_ObserveRequest: one call on the hot path, from 1 and 2 threads.
// BM_PrometheusCppHistogram: prometheus-cpp 1.0.1's Histogram::Observe (takes a mutex), for
// comparison with the lock-free histogram inside BM_ObserveRequest.

#include <memory>
#include <string>

#include "benchmark/benchmark.h"
#include "metrics/metrics.h"
#include "prometheus/histogram.h"
#include "scheduler/common/clock.h"
#include "scheduler/decisions/admission.h"
#include "scheduler/ledger/quota_book.h"
#include "scheduler/model/interner.h"
#include "scheduler/testing/builders.h"

namespace taskgov::metrics {
namespace {

constexpr int kMaxTeams = 100;
constexpr int kFlavors = 3;

std::string Team(int t) { return "bench-team-" + std::to_string(t); }
std::string Flavor(int f) { return "ml.bench" + std::to_string(f) + ".48xlarge"; }

struct Cluster {
  Cluster(bool kueue, int teams)
      : book(MakePolicy(teams), &clock),
        cluster(&book, &clock, scheduler::state::ClusterState::Options{}) {
    cluster.SetPolicy(book.ledger().policy());
    Options options;
    options.kueue_compatible = kueue;
    options.clock = &clock;
    metrics = std::make_unique<Metrics>(options);
    PreemptionTotals preemptions;  // one preempted pod per team
    for (int t = 0; t < teams; ++t) preemptions.preempted_pods[Team(t)] = 1;
    Sources sources;
    sources.book = &book;
    sources.cluster = &cluster;
    sources.preemptions = [preemptions] { return preemptions; };
    metrics->SetSources(sources);
    for (int t = 0; t < teams; ++t) {
      const scheduler::model::NameId team = scheduler::model::TeamNames().Intern(Team(t));
      for (int f = 0; f < kFlavors; ++f) {
        const scheduler::model::NameId flavor = scheduler::model::FlavorNames().Intern(Flavor(f));
        book.ConfirmBound(
            Team(t) + "-" + std::to_string(f), team, flavor,
            scheduler::model::ResourceList{
                {"cpu", 8'000 * (t % 5)}, {"memory", int64_t{1} << 36}, {"nvidia.com/gpu", t % 12}},
            scheduler::ledger::PodMeta{});
        scheduler::decisions::FilterDecision d;
        d.team = team;
        d.flavor = flavor;
        d.admitted = true;
        metrics->ObserveFilter(d);
      }
      scheduler::decisions::FilterDecision refused;
      refused.team = team;
      refused.reason = t % 2 ? "pool" : "quota";
      metrics->ObserveFilter(refused);
      metrics->ObservePodBound(team, "training", 0, 60'000 * t);
      metrics->ObservePodEnded(team, "training", 0, 3'600'000 * t);
    }
    for (const char* verb : {"/filter", "/prioritize", "/preempt", "/bind"}) {
      metrics->ObserveRequest(verb, true, 200, true, "", std::chrono::microseconds(100));
    }
  }

  static scheduler::model::PolicyPtr MakePolicy(int teams) {
    scheduler::testing::PolicyBuilder b;
    for (int t = 0; t < teams; ++t) {
      b.Team(Team(t), "cohort-" + std::to_string(t / 10));
      for (int f = 0; f < kFlavors; ++f) {
        b.Quota(Flavor(f), "nvidia.com/gpu", 16, 8)
            .Quota(Flavor(f), "cpu", 192'000)
            .Quota(Flavor(f), "memory", int64_t{2048} << 30);
      }
    }
    return b.Build();
  }

  common::FakeClock clock;
  scheduler::ledger::QuotaBook book;
  scheduler::state::ClusterState cluster;
  std::unique_ptr<Metrics> metrics;
};

void BM_Render(benchmark::State& state) {
  Cluster c(state.range(1) != 0, static_cast<int>(state.range(0)));
  size_t bytes = 0, series = 0;
  for (auto _ : state) {
    std::string text = c.metrics->Render();
    bytes = text.size();
    benchmark::DoNotOptimize(text);
  }
  const std::string text = c.metrics->Render();
  size_t start = 0;
  while (start < text.size()) {
    const size_t end = text.find('\n', start);
    if (text[start] != '#') ++series;
    start = end == std::string::npos ? text.size() : end + 1;
  }
  state.counters["series"] = static_cast<double>(series);
  state.counters["bytes"] = static_cast<double>(bytes);
}
BENCHMARK(BM_Render)
    ->Args({20, 0})
    ->Args({100, 0})
    ->Args({100, 1})
    ->Args({500, 0})
    ->Args({500, 1})
    ->Unit(benchmark::kMillisecond);

Metrics& Shared() {
  static Cluster* cluster = new Cluster(true, kMaxTeams);
  return *cluster->metrics;
}

void BM_ObserveFilter(benchmark::State& state) {
  Metrics& m = Shared();
  scheduler::decisions::FilterDecision admitted;
  admitted.team = scheduler::model::TeamNames().Intern(Team(state.thread_index() + 1));
  admitted.flavor = scheduler::model::FlavorNames().Intern(Flavor(0));
  admitted.admitted = true;
  scheduler::decisions::FilterDecision refused;
  refused.team = admitted.team;
  refused.reason = "fair_share";
  bool flip = false;
  for (auto _ : state) {
    m.ObserveFilter(flip ? admitted : refused);
    flip = !flip;
  }
}
BENCHMARK(BM_ObserveFilter)->Threads(1)->Threads(2);

void BM_ObserveRequest(benchmark::State& state) {
  Metrics& m = Shared();
  for (auto _ : state) {
    m.ObserveRequest("/filter", true, 200, true, "", std::chrono::microseconds(120));
  }
}
BENCHMARK(BM_ObserveRequest)->Threads(1)->Threads(2);

void BM_PrometheusCppHistogram(benchmark::State& state) {
  static prometheus::Histogram* h =
      new prometheus::Histogram({0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01,
                                 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10});
  for (auto _ : state) h->Observe(0.00012);
}
BENCHMARK(BM_PrometheusCppHistogram)->Threads(1)->Threads(2);

}  // namespace
}  // namespace taskgov::metrics
