// The metrics route and request observer on a real HttpServer; and a real Prometheus server
// (Debian package `prometheus`, skipped when missing) scraping the exporter on loopback, with
// its query API returning the numbers the scenario holds.

#include "extender/metrics_http.h"

#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "metrics/testing/exposition.h"
#include "metrics/testing/prometheus_server.h"
#include "metrics/testing/scenario.h"
#include "scheduler/common/testing/http_client.h"

namespace taskgov::extender {
namespace {

using metrics::testing::ParseExposition;
using metrics::testing::PrometheusServer;
using metrics::testing::QuerySample;
using metrics::testing::Scenario;

// Counts observations, so a test can wait for the server to have reported a reply (it does so
// after the client already has the reply).
class ObservationCounter {
 public:
  std::function<void(const RequestObservation&)> Wrap(
      std::function<void(const RequestObservation&)> inner) {
    return [this, inner = std::move(inner)](const RequestObservation& o) {
      inner(o);
      std::lock_guard<std::mutex> lock(mu_);
      ++count_;
      cv_.notify_all();
    };
  }
  bool WaitFor(int n) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(10), [&] { return count_ >= n; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int count_ = 0;
};

TEST(MetricsHttpTest, RouteServesTheExpositionAndTheObserverCountsRoutes) {
  Scenario s;
  s.Script();
  ObservationCounter observed;
  HttpServerOptions options;
  options.observer = observed.Wrap(MetricsObserver(*s.metrics));
  std::vector<Route> routes;
  routes.push_back(MetricsRoute(*s.metrics));
  routes.push_back(Route{"/scheduler/filter", "POST", 1024, [](const HttpRequest&) {
                           return HttpResponse{200, "application/json", "{}", {}};
                         }});
  HttpServer server(options, std::move(routes));
  ASSERT_TRUE(server.Start().ok());

  common::testing::HttpClient client("127.0.0.1", server.port());
  ASSERT_TRUE(client.Post("/scheduler/filter", "{}").ok());
  ASSERT_TRUE(client.Get("/no/such/path").ok());
  ASSERT_TRUE(client.Get("/scheduler/filter").ok());  // 405: a route's path, another method
  ASSERT_TRUE(observed.WaitFor(3));
  common::Result<common::testing::HttpReply> reply = client.Get("/metrics");
  ASSERT_TRUE(reply.ok()) << reply.error().message;
  EXPECT_EQ(reply->status, 200);
  EXPECT_EQ(reply->headers["content-type"], "text/plain; version=0.0.4; charset=utf-8");
  const metrics::testing::Exposition x = ParseExposition(reply->body);
  EXPECT_TRUE(x.errors.empty());
  EXPECT_EQ(x.Value("taskgov_quota_usage", {{"team", "team-b"}, {"resource", "nvidia.com/gpu"}}),
            24);
  // The scenario's own requests plus these (the /metrics GET itself is observed after reply).
  // A reply without a handler outcome label is labelled from its status.
  EXPECT_EQ(x.Value("taskgov_webhook_requests_total", {{"verb", "filter"}, {"outcome", "ok"}}), 3);
  EXPECT_EQ(
      x.Value("taskgov_webhook_requests_total", {{"verb", "unknown"}, {"outcome", "not_found"}}),
      2);
  // The 405 keeps the verb of the route's path.
  EXPECT_EQ(x.Value("taskgov_webhook_requests_total",
                    {{"verb", "filter"}, {"outcome", "method_not_allowed"}}),
            1);
  server.Shutdown(std::chrono::milliseconds(200));
}

double Only(const std::vector<QuerySample>& result) {
  return result.size() == 1 ? result[0].value : -1;
}

// The real thing: Prometheus scrapes /metrics every second; its query API returns what the
// ledger holds, and follows it when the ledger changes.
TEST(MetricsPrometheusTest, RealPrometheusScrapesTheExporter) {
  if (!PrometheusServer::Available()) {
    GTEST_SKIP() << metrics::testing::kPrometheusBinary
                 << " not found: install the Debian package `prometheus` (tools/bootstrap does)";
  }
  Scenario s;
  s.Script();
  HttpServerOptions options;
  options.io_threads = 1;
  std::vector<Route> routes;
  routes.push_back(MetricsRoute(*s.metrics));
  HttpServer exporter(options, std::move(routes));
  ASSERT_TRUE(exporter.Start().ok());

  PrometheusServer prometheus;
  common::Status started = prometheus.Start("127.0.0.1:" + std::to_string(exporter.port()));
  ASSERT_TRUE(started.ok()) << started.error().message;

  auto wait_value = [&](const std::string& query, double want) {
    common::Result<std::vector<QuerySample>> r = prometheus.WaitFor(
        query, [&](const std::vector<QuerySample>& v) { return Only(v) == want; },
        std::chrono::seconds(20));
    EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message) << "\nprometheus log:\n"
                        << prometheus.LogTail();
  };
  wait_value("up{job=\"taskgov\"}", 1);
  wait_value("taskgov_quota_usage{team=\"team-b\",resource=\"nvidia.com/gpu\"}", 24);
  wait_value("taskgov_quota_borrowed{team=\"team-b\",resource=\"nvidia.com/gpu\"}", 8);
  wait_value("taskgov_quota_lent{team=\"team-a\",resource=\"nvidia.com/gpu\"}", 8);
  wait_value("taskgov_quota_usage{team=\"team-a\",resource=\"cpu\"}", 48);
  wait_value("kueue_cluster_queue_resource_usage{cluster_queue=\"hyperpod-ns-ml-clusterqueue\"}",
             16);
  wait_value("sum(taskgov_webhook_requests_total{verb=\"filter\"})", 2);

  // The ledger changes; the next scrapes follow it.
  ASSERT_TRUE(s.book.Release("b-2"));
  wait_value("taskgov_quota_usage{team=\"team-b\",resource=\"nvidia.com/gpu\"}", 16);
  wait_value("taskgov_quota_borrowed{team=\"team-b\",resource=\"nvidia.com/gpu\"}", 0);
  wait_value("taskgov_quota_lent{team=\"team-a\",resource=\"nvidia.com/gpu\"}", 0);

  prometheus.Stop();
  EXPECT_EQ(prometheus.pid(), -1);
  exporter.Shutdown(std::chrono::milliseconds(200));
}

}  // namespace
}  // namespace taskgov::extender
