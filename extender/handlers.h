#pragma once

// The four extender webhooks: POST <prefix>/filter, /prioritize, /preempt, /bind. Each decodes
// the body (wire.h), calls the scheduler::Decider, and encodes its result.
//
// Replies by outcome:
//  * ok / decider error — HTTP 200 with the verb's reply; a Decider failure (e.g. "not ready")
//    travels in the reply's Error field (filter, bind) or, for preempt, as an empty candidate
//    map (which vetoes preemption) plus an "Error" member kube-scheduler ignores.
//  * unusable request (well-formed, but no Pod, no node list, ...) — HTTP 200 with the reply's
//    Error set (filter, bind; preempt as above). Prioritize has no Error field (its reply is a
//    bare list), so an unusable prioritize request gets HTTP 400 {"Error": ...}: kube-scheduler
//    logs it and ignores this extender's scores for the cycle, which is what a failed
//    prioritize means anyway.
//  * malformed body (not JSON, wrong JSON types, bad quantities) — HTTP 400 {"Error": "<what
//    and where>"} for every verb.
// Every request that is not ok writes one log line; every reply carries its outcome label
// (HttpResponse::outcome) for the listener's metrics observer. Prioritize scores outside 0..10 are
// clamped (kube-scheduler multiplies them by weight × 10 and clamps nothing) and logged, feasible
// nodes the request did not name are dropped and logged: both are Decider bugs that must not reach
// the scheduler.
//
// Thread-safety: the handlers are called concurrently from the HTTP server's I/O threads; they
// share only the Decider (thread-safe by contract).

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "extender/http_server.h"
#include "metrics/labels.h"
#include "scheduler/extender_api.h"

namespace taskgov::extender {

enum class Verb { kFilter = 0, kPrioritize = 1, kPreempt = 2, kBind = 3 };

// A handler's outcome: ok, error_reply (decided, the Decider reported an error in the reply),
// unusable (well-formed but unusable request), bad_request (undecodable body: HTTP 400). Each
// reply carries its outcome's label in HttpResponse::outcome; the listener's observer counts it
// (extender/metrics_http.h), the only count of webhook outcomes.
using Outcome = metrics::WebhookOutcome;

[[nodiscard]] const char* VerbName(Verb verb);  // "filter", "prioritize", ...

struct WebhookOptions {
  // The extender's urlPrefix path: "" or "/" serve /filter, "/taskgov" serves /taskgov/filter.
  std::string url_prefix;
  size_t filter_body_limit = 64 << 20;
  size_t prioritize_body_limit = 64 << 20;
  size_t preempt_body_limit = 64 << 20;
  size_t bind_body_limit = 64 << 10;
};

class WebhookHandlers {
 public:
  // `decider` must outlive this object.
  explicit WebhookHandlers(scheduler::Decider* decider, WebhookOptions options = {});
  WebhookHandlers(const WebhookHandlers&) = delete;
  WebhookHandlers& operator=(const WebhookHandlers&) = delete;

  // The four POST routes with their body limits. They call back into this object, which must
  // outlive the server serving them.
  [[nodiscard]] std::vector<Route> Routes();

  HttpResponse Filter(const HttpRequest& request);
  HttpResponse Prioritize(const HttpRequest& request);
  HttpResponse Preempt(const HttpRequest& request);
  HttpResponse Bind(const HttpRequest& request);

  // "" / "/" → ""; "taskgov/" → "/taskgov" (kube-scheduler trims trailing slashes too).
  [[nodiscard]] static std::string NormalizePrefix(std::string_view prefix);

 private:
  static HttpResponse Finish(Outcome outcome, int status, std::string body);

  scheduler::Decider* const decider_;
  const WebhookOptions options_;
};

}  // namespace taskgov::extender
