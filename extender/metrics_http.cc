#include "extender/metrics_http.h"

#include <utility>

namespace taskgov::extender {

Route MetricsRoute(const metrics::Metrics& metrics, std::string path) {
  return Route{std::move(path), "GET", 0, [&metrics](const HttpRequest&) {
                 return HttpResponse{200, std::string(metrics::kContentType), metrics.Render(), {}};
               }};
}

std::function<void(const RequestObservation&)> MetricsObserver(metrics::Metrics& metrics) {
  return [&metrics](const RequestObservation& o) {
    metrics.ObserveRequest(o.path, o.path_known, o.status, o.reply_sent, o.outcome, o.duration);
  };
}

}  // namespace taskgov::extender
