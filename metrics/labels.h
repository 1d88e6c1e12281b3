#pragma once

// Label values of taskgov's process families that other components produce, declared once so
// that what a component emits and what the family's HELP text advertises are the same list.
// Header-only, no dependencies: the HTTP surface (extender/) sets webhook outcomes and HTTP
// refusal reasons from it, and metrics.cc builds the HELP texts from it.
//
// Thread-safety: constants only.

#include <array>
#include <cstddef>
#include <string_view>

namespace taskgov::metrics {

// A label value and what it means (for HELP texts and README).
struct LabelValue {
  std::string_view name;
  std::string_view meaning;
};

// taskgov_webhook_requests_total{outcome}: how a request to the webhook listener ended.
enum class WebhookOutcome : size_t {
  kOk = 0,            // decided; HTTP 200 without an error
  kErrorReply,        // decided; HTTP 200 whose reply carries Error (not ready, not leader, bind
                      // failure, ...) or, for preempt, vetoes preemption
  kUnusable,          // well-formed but unusable request (no Pod, no node list, ...)
  kBadRequest,        // undecodable body or HTTP request: HTTP 400
  kNotFound,          // no route with this path: HTTP 404
  kMethodNotAllowed,  // a route, another method: HTTP 405
  kTooLarge,          // body or header over its limit: HTTP 413 / 431
  kServerError,       // any other status (5xx)
  kReplyFailed,       // the reply could not be written (peer gone, deadline)
};

inline constexpr std::array<LabelValue, 9> kWebhookOutcomes = {{
    {"ok", "HTTP 200, decided without error"},
    {"error_reply", "HTTP 200 whose reply carries Error: not ready, not leader, bind failure"},
    {"unusable", "well-formed but unusable request, answered with Error (prioritize: 400)"},
    {"bad_request", "undecodable body or request, HTTP 400"},
    {"not_found", "no such path, HTTP 404"},
    {"method_not_allowed", "HTTP 405"},
    {"too_large", "body or header over its limit, HTTP 413 or 431"},
    {"server_error", "any other status"},
    {"reply_failed", "the reply could not be written"},
}};

[[nodiscard]] constexpr std::string_view WebhookOutcomeName(WebhookOutcome outcome) {
  return kWebhookOutcomes[static_cast<size_t>(outcome)].name;
}

// taskgov_http_connections_refused_total{listener, reason}: a connection or request the HTTP
// server (extender/http_server.h) refused or cut off to keep hostile or broken clients from
// starving it. Indexes of HttpServerStats::refused.
enum class HttpRefusal : size_t {
  kCap = 0,         // a new connection at the cap found no idle connection to close: 503
  kIdleEvicted,     // an idle connection closed to make room for a new one at the cap
  kHeaderTimeout,   // no complete request header within the header timeout: closed
  kRequestTimeout,  // the body not received (or the reply not taken) within the request timeout
  kBodyBudget,      // the request's body would exceed the in-flight body budget: 503
};

inline constexpr std::array<LabelValue, 5> kHttpRefusals = {{
    {"cap", "a new connection at the connection cap with no idle connection to close: 503"},
    {"idle_evicted",
     "an idle connection (no request header complete) closed to make room at the cap"},
    {"header_timeout",
     "no complete request header within the header timeout (from accept, or from the first "
     "byte on a kept-alive connection; TLS handshake included): closed"},
    {"request_timeout",
     "the body not received or the reply not taken within the request timeout: closed"},
    {"body_budget", "the body would exceed the in-flight body budget: 503"},
}};

[[nodiscard]] constexpr std::string_view HttpRefusalName(HttpRefusal reason) {
  return kHttpRefusals[static_cast<size_t>(reason)].name;
}

// Preemption reasons of taskgov_preemptions_total{reason} and the Kueue reason each is exported
// as in kueue_preempted_workloads_total{reason}.
struct PreemptionReason {
  std::string_view name;
  std::string_view kueue_reason;
  std::string_view meaning;
};
inline constexpr std::string_view kPreemptWithinTeam = "within_team";
inline constexpr std::string_view kPreemptReclaim = "reclaim";
inline constexpr std::string_view kPreemptFairShare = "fair_share";
inline constexpr std::string_view kPreemptReclaimWhileBorrowing = "reclaim_while_borrowing";
inline constexpr std::array<PreemptionReason, 4> kPreemptionReasons = {{
    {kPreemptWithinTeam, "InClusterQueue", "a lower-priority pod of the same team"},
    {kPreemptReclaim, "InCohortReclamation", "nominal quota taken back from a borrower"},
    {kPreemptFairShare, "InCohortFairSharing", "borrowed capacity of a team above its share"},
    {kPreemptReclaimWhileBorrowing, "InCohortReclaimWhileBorrowing",
     "a lower-priority borrowed pod taken by a pod that borrows too (borrowWithinCohort)"},
}};

}  // namespace taskgov::metrics
