#include "extender/handlers.h"

#include <algorithm>

#include "extender/wire.h"
#include "scheduler/common/log.h"

namespace taskgov::extender {
namespace {

using Clock = std::chrono::steady_clock;

constexpr std::string_view kComponent = "webhook";
constexpr int kOk = 200;
constexpr int kBadRequest = 400;
constexpr int64_t kMinScore = 0;
constexpr int64_t kMaxScore = 10;

int64_t Micros(Clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - start).count();
}

// Logs a request that could not be decided on.
void LogRejected(Verb verb, const DecodeStatus& status, size_t body_bytes) {
  common::log::Warn(
      kComponent,
      status.failure == DecodeFailure::kMalformed ? "undecodable request" : "unusable request",
      {{"verb", VerbName(verb)}, {"error", status.message}, {"bytes", uint64_t{body_bytes}}});
}

Outcome OutcomeOf(const DecodeStatus& status) {
  return status.failure == DecodeFailure::kMalformed ? Outcome::kBadRequest : Outcome::kUnusable;
}

struct Reply {
  Outcome outcome;
  int status;
  std::string body;
};

// The reply to a filter, preempt or bind request that could not be decided on, logged: HTTP 400
// for a malformed body; for an unusable one HTTP 200 with the verb's own error reply,
// unusable_reply(message).
template <typename UnusableReply>
Reply Rejection(Verb verb, const DecodeStatus& status, size_t body_bytes,
                UnusableReply&& unusable_reply) {
  LogRejected(verb, status, body_bytes);
  if (status.failure == DecodeFailure::kMalformed) {
    return Reply{Outcome::kBadRequest, kBadRequest, EncodeError(status.message)};
  }
  return Reply{Outcome::kUnusable, kOk, unusable_reply(status.message)};
}

}  // namespace

const char* VerbName(Verb verb) {
  switch (verb) {
    case Verb::kFilter:
      return "filter";
    case Verb::kPrioritize:
      return "prioritize";
    case Verb::kPreempt:
      return "preempt";
    case Verb::kBind:
      return "bind";
  }
  return "unknown";
}

WebhookHandlers::WebhookHandlers(scheduler::Decider* decider, WebhookOptions options)
    : decider_(decider), options_(std::move(options)) {}

std::string WebhookHandlers::NormalizePrefix(std::string_view prefix) {
  while (!prefix.empty() && prefix.back() == '/') prefix.remove_suffix(1);
  if (prefix.empty()) return "";
  std::string out(prefix);
  if (out.front() != '/') out.insert(out.begin(), '/');
  return out;
}

std::vector<Route> WebhookHandlers::Routes() {
  const std::string prefix = NormalizePrefix(options_.url_prefix);
  std::vector<Route> routes;
  routes.push_back(Route{prefix + "/filter", "POST", options_.filter_body_limit,
                         [this](const HttpRequest& r) { return Filter(r); }});
  routes.push_back(Route{prefix + "/prioritize", "POST", options_.prioritize_body_limit,
                         [this](const HttpRequest& r) { return Prioritize(r); }});
  routes.push_back(Route{prefix + "/preempt", "POST", options_.preempt_body_limit,
                         [this](const HttpRequest& r) { return Preempt(r); }});
  routes.push_back(Route{prefix + "/bind", "POST", options_.bind_body_limit,
                         [this](const HttpRequest& r) { return Bind(r); }});
  return routes;
}

HttpResponse WebhookHandlers::Finish(Outcome outcome, int status, std::string body) {
  HttpResponse response;
  response.status = status;
  response.body = std::move(body);
  response.outcome = metrics::WebhookOutcomeName(outcome);
  return response;
}

HttpResponse WebhookHandlers::Filter(const HttpRequest& request) {
  const Clock::time_point start = Clock::now();
  FilterRequest decoded;
  DecodeStatus status = DecodeFilterRequest(request.body, &decoded);
  if (!status.ok()) {
    Reply r = Rejection(Verb::kFilter, status, request.body.size(), EncodeFilterError);
    return Finish(r.outcome, r.status, std::move(r.body));
  }
  const scheduler::FilterResult result = decider_->Filter(decoded.args);
  size_t dropped = 0;
  std::string body = EncodeFilterResult(decoded, result, &dropped);
  if (dropped > 0) {
    common::log::Error(kComponent,
                       "decider returned feasible nodes the request did not name; dropped",
                       {{"pod", decoded.args.pod.key()}, {"dropped", uint64_t{dropped}}});
  }
  const Outcome outcome = result.error.empty() ? Outcome::kOk : Outcome::kErrorReply;
  if (outcome == Outcome::kErrorReply) {
    common::log::Info(kComponent, "filter failed",
                      {{"pod", decoded.args.pod.key()}, {"error", result.error}});
  } else if (common::log::Enabled(common::log::Level::kDebug)) {  // the fields cost allocations
    common::log::Debug(kComponent, "filter",
                       {{"pod", decoded.args.pod.key()},
                        {"nodes", uint64_t{decoded.args.node_names.size()}},
                        {"feasible", uint64_t{result.feasible.size()}},
                        {"micros", Micros(start)}});
  }
  return Finish(outcome, kOk, std::move(body));
}

HttpResponse WebhookHandlers::Prioritize(const HttpRequest& request) {
  const Clock::time_point start = Clock::now();
  FilterRequest decoded;
  DecodeStatus status = DecodeFilterRequest(request.body, &decoded);
  if (!status.ok()) {
    LogRejected(Verb::kPrioritize, status, request.body.size());
    // No Error field in a bare list: both kinds are HTTP 400 (see the header).
    return Finish(OutcomeOf(status), kBadRequest, EncodeError(status.message));
  }
  std::vector<scheduler::HostPriority> priorities = decider_->Prioritize(decoded.args);
  size_t clamped = 0;
  for (scheduler::HostPriority& p : priorities) {
    const int64_t score = std::clamp(p.score, kMinScore, kMaxScore);
    if (score != p.score) ++clamped;
    p.score = score;
  }
  if (clamped > 0) {
    common::log::Error(kComponent, "decider returned scores outside 0..10; clamped",
                       {{"pod", decoded.args.pod.key()}, {"clamped", uint64_t{clamped}}});
  }
  if (common::log::Enabled(common::log::Level::kDebug)) {  // the fields cost allocations
    common::log::Debug(kComponent, "prioritize",
                       {{"pod", decoded.args.pod.key()},
                        {"nodes", uint64_t{decoded.args.node_names.size()}},
                        {"micros", Micros(start)}});
  }
  return Finish(Outcome::kOk, kOk, EncodePriorities(priorities));
}

HttpResponse WebhookHandlers::Preempt(const HttpRequest& request) {
  const Clock::time_point start = Clock::now();
  scheduler::PreemptArgs args;
  DecodeStatus status = DecodePreemptRequest(request.body, &args);
  if (!status.ok()) {
    Reply r = Rejection(Verb::kPreempt, status, request.body.size(), [](const std::string& error) {
      scheduler::PreemptResult veto;
      veto.error = error;
      return EncodePreemptResult(veto);
    });
    return Finish(r.outcome, r.status, std::move(r.body));
  }
  scheduler::PreemptResult result = decider_->Preempt(args);
  Outcome outcome = Outcome::kOk;
  if (!result.error.empty()) {
    // Whatever the Decider put in the map, an error vetoes preemption.
    result.node_to_victims.clear();
    outcome = Outcome::kErrorReply;
    common::log::Info(kComponent, "preempt failed",
                      {{"pod", args.pod.key()}, {"error", result.error}});
  } else {
    common::log::Debug(kComponent, "preempt",
                       {{"pod", args.pod.key()},
                        {"candidates", uint64_t{args.node_to_victims.size()}},
                        {"kept", uint64_t{result.node_to_victims.size()}},
                        {"micros", Micros(start)}});
  }
  return Finish(outcome, kOk, EncodePreemptResult(result));
}

HttpResponse WebhookHandlers::Bind(const HttpRequest& request) {
  const Clock::time_point start = Clock::now();
  scheduler::BindArgs args;
  DecodeStatus status = DecodeBindRequest(request.body, &args);
  if (!status.ok()) {
    Reply r = Rejection(Verb::kBind, status, request.body.size(), [](const std::string& error) {
      return EncodeBindResult(scheduler::BindResult{error});
    });
    return Finish(r.outcome, r.status, std::move(r.body));
  }
  const scheduler::BindResult result = decider_->Bind(args);
  const std::string pod = args.pod_namespace + "/" + args.pod_name;
  Outcome outcome = Outcome::kOk;
  if (!result.error.empty()) {
    outcome = Outcome::kErrorReply;
    common::log::Info(kComponent, "bind failed",
                      {{"pod", pod}, {"node", args.node}, {"error", result.error}});
  } else {
    common::log::Debug(kComponent, "bind",
                       {{"pod", pod}, {"node", args.node}, {"micros", Micros(start)}});
  }
  return Finish(outcome, kOk, EncodeBindResult(result));
}

}  // namespace taskgov::extender
