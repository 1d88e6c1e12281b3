// POST round trip on one kept-alive loopback connection with a ~20 KB body (a filter request
// over a few hundred node names), plain and TLS (TLS 1.3, mTLS), through HttpServer and the e2e
// client. Prints Google Benchmark's table with the median and p99 of the per-request latency
// as counters (p50_us, p99_us).
//
//   bazel run -c opt //extender:http_benchmark

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "extender/http_server.h"
#include "extender/http_test_util.h"
#include "scheduler/common/log.h"
#include "scheduler/common/testing/http_client.h"

namespace taskgov::extender {
namespace {

using testing::TlsTestFile;

// ~20 KB of JSON shaped like a filter request with node names.
std::string FilterLikeBody() {
  std::string body =
      "{\"Pod\":{\"metadata\":{\"name\":\"w-0\",\"namespace\":\"team-a\"}},"
      "\"Nodes\":null,\"NodeNames\":[";
  for (int i = 0; body.size() < 20'000; ++i) {
    if (i > 0) body += ",";
    body +=
        "\"ip-10-0-" + std::to_string(i / 250) + "-" + std::to_string(i % 250) + ".ec2.internal\"";
  }
  body += "]}";
  return body;
}

void RoundTrip(benchmark::State& state, bool tls) {
  common::log::SetLevel(common::log::Level::kError);
  HttpServerOptions options;
  if (tls) {
    HttpTlsOptions server_tls;
    server_tls.cert_chain_file = TlsTestFile("server.pem");
    server_tls.key_file = TlsTestFile("server.key");
    server_tls.client_ca_file = TlsTestFile("ca.pem");
    options.tls = server_tls;
  }
  const std::string reply = "{\"NodeNames\":[\"ip-10-0-0-1.ec2.internal\"],\"FailedNodes\":{}}";
  std::vector<Route> routes;
  routes.push_back(Route{"/filter", "POST", 64 << 20, [&reply](const HttpRequest&) {
                           return HttpResponse{200, "application/json", reply, {}};
                         }});
  HttpServer server(options, std::move(routes));
  if (common::Status s = server.Start(); !s.ok()) {
    state.SkipWithError(s.error().message.c_str());
    return;
  }
  std::unique_ptr<common::testing::HttpClient> client;
  if (tls) {
    common::testing::HttpClientTls client_tls;
    client_tls.ca_file = TlsTestFile("ca.pem");
    client_tls.cert_file = TlsTestFile("client.pem");
    client_tls.key_file = TlsTestFile("client.key");
    client = std::make_unique<common::testing::HttpClient>("127.0.0.1", server.port(), client_tls);
  } else {
    client = std::make_unique<common::testing::HttpClient>("127.0.0.1", server.port());
  }
  const std::string body = FilterLikeBody();
  if (common::Result<common::testing::HttpReply> warm = client->Post("/filter", body); !warm.ok()) {
    state.SkipWithError(warm.error().message.c_str());
    return;
  }
  std::vector<double> micros;
  micros.reserve(100'000);
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    common::Result<common::testing::HttpReply> r = client->Post("/filter", body);
    micros.push_back(
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start)
            .count());
    if (!r.ok() || r->status != 200) {
      state.SkipWithError(r.ok() ? "status not 200" : r.error().message.c_str());
      break;
    }
  }
  if (!micros.empty()) {
    std::sort(micros.begin(), micros.end());
    state.counters["p50_us"] = micros[micros.size() / 2];
    state.counters["p99_us"] = micros[std::min(micros.size() - 1, micros.size() * 99 / 100)];
  }
  state.counters["body_bytes"] = static_cast<double>(body.size());
  state.counters["connections"] = client->connections_opened();
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * body.size()));
  server.Shutdown(std::chrono::milliseconds(500));
}

void BM_PostRoundTripPlain(benchmark::State& state) { RoundTrip(state, /*tls=*/false); }
void BM_PostRoundTripTls(benchmark::State& state) { RoundTrip(state, /*tls=*/true); }

BENCHMARK(BM_PostRoundTripPlain)->Unit(benchmark::kMicrosecond)->UseRealTime()->MinTime(1.0);
BENCHMARK(BM_PostRoundTripTls)->Unit(benchmark::kMicrosecond)->UseRealTime()->MinTime(1.0);

}  // namespace
}  // namespace taskgov::extender
