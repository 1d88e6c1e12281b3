#pragma once

// The HTTP side of metrics::Metrics: the /metrics route for the metrics listener and the
// request observer for the webhook listener. metrics/ knows nothing of HTTP; this is the glue.
//
//   HttpServerOptions webhook_options; ...
//   webhook_server_options.observer = MetricsObserver(metrics);
//   health_routes.push_back(MetricsRoute(metrics));
//
// Thread-safety: as Metrics (the route renders under Metrics' scrape lock; the observer is
// lock-free). `metrics` must outlive the servers.

#include <functional>
#include <string>

#include "extender/http_server.h"
#include "metrics/metrics.h"

namespace taskgov::extender {

// GET `path`: the text exposition (Content-Type: text/plain; version=0.0.4; charset=utf-8).
[[nodiscard]] Route MetricsRoute(const metrics::Metrics& metrics, std::string path = "/metrics");

// An HttpServerOptions::observer that counts every reply of that listener in
// taskgov_webhook_requests_total / taskgov_webhook_request_duration_seconds (verb = the path's
// last segment when a route has that path, whatever the method, so 405 and 413 replies keep
// their verb; requests to other paths are verb "unknown", never their raw path;
// outcome = the handler's HttpResponse::outcome, else derived from the status: see
// Metrics::ObserveRequest). The only place webhook outcomes are counted.
[[nodiscard]] std::function<void(const RequestObservation&)> MetricsObserver(
    metrics::Metrics& metrics);

}  // namespace taskgov::extender
