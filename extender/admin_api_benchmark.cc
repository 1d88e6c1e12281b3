// The admin API's workload list at 10,000 workloads (issue 16: ≤ 20 ms): 100 teams, 500 nodes,
// 7,000 running pods, 2,000 pending lone pods and 1,000 pending 2-pod gangs — 10,000
// workloads of 11,000 pods. Rows:
//   * Handler/page     — one page of 1,000 (the console's Tasks page), the handler alone;
//   * Handler/all      — all 10,000, following `continue` through 10 pages;
//   * Http/page        — one page over a kept-alive loopback connection through HttpServer;
//   * Http/static_peer — the same bytes from a handler that only returns them: the floor of the
//                        transport in the same run (Http/page ÷ this is the API's own cost);
//   * History/day      — a day of the console's history at 100 teams × 10 flavors (≤ 16 MB).
// Each row reports the reply size; wall time per iteration is the latency. Each request reads
// the pending queues and walks the ClusterState's WorkloadTable (nothing is cached between
// requests).
//
//   bazel run -c opt //extender:admin_api_benchmark

#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include <memory>
#include <string>

#include <benchmark/benchmark.h>

#include "extender/admin_api.h"
#include "extender/http_server.h"
#include "extender/usage_history.h"
#include "scheduler/common/log.h"
#include "scheduler/common/testing/http_client.h"
#include "scheduler/testing/builders.h"

namespace taskgov::extender {
namespace {

using scheduler::testing::NodeBuilder;
using scheduler::testing::PodBuilder;
using scheduler::testing::PolicyBuilder;

constexpr char kFlavor[] = "ml.p5.48xlarge";
constexpr int kTeams = 100;
constexpr int kNodes = 500;

scheduler::model::PolicyPtr Teams() {
  PolicyBuilder builder;
  for (int t = 0; t < kTeams; ++t) {
    builder.Team("team-" + std::to_string(t), "cohort")
        .Quota(kFlavor, "nvidia.com/gpu", 8, 16)
        .Quota(kFlavor, "cpu", 192'000);
  }
  return builder.Build();
}

struct Cluster {
  common::FakeClock clock{1'800'000'000'000};
  scheduler::ledger::QuotaBook book{Teams(), &clock};
  scheduler::state::ClusterState cluster{&book, &clock, scheduler::state::ClusterState::Options{}};
  std::unique_ptr<AdminApi> api;

  Cluster() {
    common::log::SetLevel(common::log::Level::kError);
    cluster.SetPolicy(book.ledger().policy());
    for (int n = 0; n < kNodes; ++n) {
      cluster.OnNodeUpsert(NodeBuilder("node-" + std::to_string(n))
                               .InstanceType(kFlavor)
                               .Allocatable("nvidia.com/gpu", "8")
                               .Allocatable("cpu", "192"));
    }
    cluster.OnSynced(scheduler::ObjectKind::kNode);
    for (int i = 0; i < 7'000; ++i) {  // running, 1 CPU each
      scheduler::model::Pod pod =
          PodBuilder("run-" + std::to_string(i)).Namespace(Ns(i)).Cpu("1").Created(1'000 + i);
      pod.node_name = "node-" + std::to_string(i % kNodes);
      pod.phase = scheduler::model::PodPhase::kRunning;
      cluster.OnPodUpsert(pod);
    }
    for (int i = 0; i < 2'000; ++i) {  // pending lone pods
      cluster.OnPodUpsert(
          PodBuilder("wait-" + std::to_string(i)).Namespace(Ns(i)).Gpus(1).Created(20'000 + i));
    }
    for (int g = 0; g < 1'000; ++g) {  // pending 2-pod gangs
      for (int m = 0; m < 2; ++m) {
        cluster.OnPodUpsert(PodBuilder("gang-" + std::to_string(g) + "-" + std::to_string(m))
                                .Namespace(Ns(g))
                                .Label("kueue.x-k8s.io/pod-group-name", "gang-" + std::to_string(g))
                                .Annotation("kueue.x-k8s.io/pod-group-total-count", "2")
                                .Gpus(4)
                                .Created(30'000 + g));
      }
    }
    cluster.OnSynced(scheduler::ObjectKind::kPod);
    AdminApi::Sources sources;
    sources.book = &book;
    sources.cluster = &cluster;
    sources.clock = &clock;
    api = std::make_unique<AdminApi>(std::move(sources));
  }

  static std::string Ns(int i) { return "ns-team-" + std::to_string(i % kTeams); }

  // The workloads route's handler.
  [[nodiscard]] std::function<HttpResponse(const HttpRequest&)> Workloads() const {
    for (const Route& r : api->Routes()) {
      if (r.path == "/api/v1/workloads" && !r.prefix) return r.handler;
    }
    return nullptr;
  }
};

Cluster& Shared() {
  static Cluster* cluster = new Cluster();  // built once for every row
  return *cluster;
}

// The process's resident size now (/proc/self/statm), in KiB.
long RssKib() {
  long pages = 0, resident = 0;
  if (FILE* f = fopen("/proc/self/statm", "r")) {
    if (fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
    fclose(f);
  }
  return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

HttpRequest Get(const std::string& query) {
  HttpRequest request;
  request.method = "GET";
  request.path = "/api/v1/workloads";
  request.query = query;
  return request;
}

// The `continue` token of a reply ("" on the last page).
std::string ContinueOf(const std::string& body) {
  const std::string key = "\"continue\":\"";
  const size_t at = body.find(key);
  if (at == std::string::npos) return "";
  const size_t end = body.find('"', at + key.size());
  return body.substr(at + key.size(), end - at - key.size());
}

void BM_HandlerPage(benchmark::State& state) {
  auto handler = Shared().Workloads();
  size_t bytes = 0;
  for (auto _ : state) {
    HttpResponse reply = handler(Get("limit=1000"));
    bytes = reply.body.size();
    benchmark::DoNotOptimize(reply);
  }
  state.counters["reply_kB"] = static_cast<double>(bytes) / 1000.0;
}

void BM_HandlerAll(benchmark::State& state) {
  auto handler = Shared().Workloads();
  size_t workloads = 0, bytes = 0;
  for (auto _ : state) {
    std::string token;
    size_t pages = 0;
    bytes = 0;
    do {
      HttpResponse reply = handler(Get("limit=1000" + (token.empty() ? "" : "&continue=" + token)));
      bytes += reply.body.size();
      token = ContinueOf(reply.body);
      ++pages;
    } while (!token.empty() && pages < 20);
    workloads = pages;
  }
  state.counters["pages"] = static_cast<double>(workloads);
  state.counters["reply_kB"] = static_cast<double>(bytes) / 1000.0;
}

void OverHttp(benchmark::State& state, bool static_peer) {
  auto handler = Shared().Workloads();
  const std::string page = handler(Get("limit=1000")).body;
  std::vector<Route> routes;
  if (static_peer) {
    routes.push_back(Route{"/api/v1/workloads", "GET", 0, [&page](const HttpRequest&) {
                             return HttpResponse{200, "application/json", page, {}};
                           }});
  } else {
    routes = Shared().api->Routes();
  }
  HttpServer server(HttpServerOptions{}, std::move(routes));
  if (common::Status s = server.Start(); !s.ok()) {
    state.SkipWithError(s.error().message.c_str());
    return;
  }
  common::testing::HttpClient client("127.0.0.1", server.port());
  size_t bytes = 0;
  for (auto _ : state) {
    common::Result<common::testing::HttpReply> reply =
        client.Request("GET", "/api/v1/workloads?limit=1000");
    if (!reply.ok() || reply->status != 200) {
      state.SkipWithError("request failed");
      break;
    }
    bytes = reply->body.size();
  }
  state.counters["reply_kB"] = static_cast<double>(bytes) / 1000.0;
  server.Shutdown(std::chrono::milliseconds(200));
}

void BM_HttpPage(benchmark::State& state) { OverHttp(state, false); }
void BM_HttpStaticPeer(benchmark::State& state) { OverHttp(state, true); }

// A day of the console's history (issue 16: ≤ 16 MB): 100 teams × 10 flavors × 3 resources
// sampled every 30 s for 24 h (2,880 samples). The time is one day's sampling; the counters are
// the bytes its buffers hold (history_MiB) and how much the process's resident size grew while
// the day's history was alive (rss_MiB: the buffers, the series' keys, the allocator's slack).
void BM_HistoryDay(benchmark::State& state) {
  UsageHistory::Snapshot snapshot;
  for (int t = 0; t < 100; ++t) {
    for (int f = 0; f < 10; ++f) {
      for (const char* r : {"nvidia.com/gpu", "cpu", "memory"}) {
        snapshot.teams.push_back({"team-" + std::to_string(t), "flavor-" + std::to_string(f), r, 8,
                                  static_cast<double>((t + f) % 9), 1, 0});
      }
    }
  }
  size_t bytes = 0, report_bytes = 0;
  double rss_mib = 0;
  for (auto _ : state) {
    const long before = RssKib();
    UsageHistory history;
    for (int i = 0; i < 2'880; ++i) history.Sample(1'800'000'000'000 + i * 30'000LL, snapshot);
    bytes = history.MemoryBytes();
    report_bytes = history.ReportBytes();
    // The first day's growth: later ones reuse what the allocator kept of the one before.
    rss_mib = std::max(rss_mib, static_cast<double>(RssKib() - before) / 1024.0);
    benchmark::DoNotOptimize(bytes);
  }
  state.counters["history_MiB"] = static_cast<double>(bytes) / (1 << 20);
  state.counters["report_MiB"] = static_cast<double>(report_bytes) / (1 << 20);
  state.counters["rss_MiB"] = rss_mib;
}

BENCHMARK(BM_HandlerPage)->Name("Handler/page")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_HandlerAll)->Name("Handler/all")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_HttpPage)->Name("Http/page")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_HttpStaticPeer)
    ->Name("Http/static_peer")
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_HistoryDay)
    ->Name("History/day")
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Iterations(2);

}  // namespace
}  // namespace taskgov::extender
