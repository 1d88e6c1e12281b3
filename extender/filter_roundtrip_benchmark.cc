// A filter (and prioritize) round trip over 500 node names through the real HttpServer on
// loopback, with a trivial Decider: the cost of the HTTP path and the codec alone. The client
// is the kube-scheduler-like extender::testing::ExtenderClient on one kept-alive connection.
// Reports the median and p99 of the per-call latency.
//
//   bazel run -c opt //extender:filter_roundtrip_benchmark

#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include "extender/handlers.h"
#include "extender/http_server.h"
#include "extender/testing/extender_client.h"

namespace taskgov::extender {
namespace {

using Clock = std::chrono::steady_clock;

constexpr const char* kPod =
    R"({"metadata":{"name":"train-0","namespace":"hyperpod-ns-team-a","uid":"7f3e1a52-0001",)"
    R"("labels":{"kueue.x-k8s.io/queue-name":"team-a"}},"spec":{"schedulerName":"taskgov",)"
    R"("priority":1000,"containers":[{"name":"trainer","resources":{"requests":{"cpu":"180",)"
    R"("memory":"1800Gi","nvidia.com/gpu":"8"}}}]},"status":{"phase":"Pending"}})";

// Every node feasible, every score 5.
class TrivialDecider : public scheduler::Decider {
 public:
  scheduler::FilterResult Filter(const scheduler::FilterArgs& args) override {
    scheduler::FilterResult r;
    for (uint32_t i = 0; i < args.node_names.size(); ++i) r.feasible.push_back(i);
    return r;
  }
  std::vector<scheduler::HostPriority> Prioritize(const scheduler::FilterArgs& args) override {
    std::vector<scheduler::HostPriority> out;
    out.reserve(args.node_names.size());
    for (const std::string& n : args.node_names) out.push_back({n, 5});
    return out;
  }
  scheduler::PreemptResult Preempt(const scheduler::PreemptArgs&) override { return {}; }
  scheduler::BindResult Bind(const scheduler::BindArgs&) override { return {}; }
};

struct Fixture {
  Fixture() : handlers(&decider) {
    server = std::make_unique<HttpServer>(HttpServerOptions{}, handlers.Routes());
    if (!server->Start().ok()) std::abort();
    extender::testing::ExtenderClientOptions options;
    options.port = server->port();
    client = std::make_unique<extender::testing::ExtenderClient>(options);
    for (int i = 0; i < 500; ++i) {
      names.push_back("ip-10-0-" + std::to_string(i / 250) + "-" + std::to_string(i % 250));
    }
  }
  ~Fixture() { server->Shutdown(std::chrono::milliseconds(500)); }

  TrivialDecider decider;
  WebhookHandlers handlers;
  std::unique_ptr<HttpServer> server;
  std::unique_ptr<extender::testing::ExtenderClient> client;
  std::vector<std::string> names;
};

void Report(benchmark::State& state, std::vector<double>& micros) {
  if (micros.empty()) return;
  std::sort(micros.begin(), micros.end());
  state.counters["p50_us"] = micros[micros.size() / 2];
  state.counters["p99_us"] = micros[std::min(micros.size() - 1, micros.size() * 99 / 100)];
  state.counters["max_us"] = micros.back();
}

void BM_FilterRoundTrip500Names(benchmark::State& state) {
  Fixture f;
  std::vector<double> micros;
  for (auto _ : state) {
    const Clock::time_point start = Clock::now();
    common::Result<extender::testing::FilterReply> reply = f.client->FilterNames(kPod, f.names);
    micros.push_back(std::chrono::duration<double, std::micro>(Clock::now() - start).count());
    if (!reply.ok() || reply->feasible.size() != 500) {
      state.SkipWithError(reply.ok() ? "wrong reply" : reply.error().message.c_str());
      break;
    }
  }
  Report(state, micros);
  state.counters["connections"] = f.client->connections_opened();
}
BENCHMARK(BM_FilterRoundTrip500Names)->Unit(benchmark::kMicrosecond)->MinTime(1.0);

void BM_FilterAndPrioritize500Names(benchmark::State& state) {
  Fixture f;
  std::vector<double> micros;
  for (auto _ : state) {
    const Clock::time_point start = Clock::now();
    common::Result<extender::testing::FilterReply> reply = f.client->FilterNames(kPod, f.names);
    common::Result<std::vector<extender::testing::HostScore>> scores =
        f.client->PrioritizeNames(kPod, f.names);
    micros.push_back(std::chrono::duration<double, std::micro>(Clock::now() - start).count());
    if (!reply.ok() || !scores.ok() || scores->size() != 500) {
      state.SkipWithError("call failed");
      break;
    }
  }
  Report(state, micros);
}
BENCHMARK(BM_FilterAndPrioritize500Names)->Unit(benchmark::kMicrosecond)->MinTime(1.0);

}  // namespace
}  // namespace taskgov::extender
