#include "scheduler/kube/actions.h"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <cstdio>
#include <optional>

#include "scheduler/common/log.h"
#include "scheduler/common/time_format.h"

namespace taskgov::scheduler::kube {
namespace {

constexpr std::string_view kComponent = "kube-actions";

using Writer = rapidjson::Writer<rapidjson::StringBuffer>;

void Str(Writer& w, const char* key, std::string_view value) {
  w.Key(key);
  w.String(value.data(), static_cast<rapidjson::SizeType>(value.size()));
}

// `key: {...}` with the members `fields()` writes.
template <typename Fields>
void Nested(Writer& w, const char* key, Fields&& fields) {
  w.Key(key);
  w.StartObject();
  fields();
  w.EndObject();
}

// A Kubernetes object as compact JSON: apiVersion and kind, then the members `fields(w)` writes.
template <typename Fields>
std::string ObjectJson(std::string_view api_version, std::string_view kind, Fields&& fields) {
  rapidjson::StringBuffer buffer;
  Writer w(buffer);
  w.StartObject();
  Str(w, "apiVersion", api_version);
  Str(w, "kind", kind);
  fields(w);
  w.EndObject();
  return buffer.GetString();
}

// Cuts `text` to at most `limit` bytes without splitting a UTF-8 sequence.
std::string Truncate(const std::string& text, size_t limit) {
  if (text.size() <= limit) return text;
  size_t end = limit;
  while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
  return text.substr(0, end);
}

std::string PodPath(const std::string& ns, const std::string& name) {
  return "/api/v1/namespaces/" + QueryEscape(ns) + "/pods/" + QueryEscape(name);
}

bool MentionsDisruptionBudget(const std::string& message) {
  return message.find("disruption budget") != std::string::npos ||
         message.find("DisruptionBudget") != std::string::npos;
}

}  // namespace

std::string BindingBody(const std::string& name, const std::string& uid, const std::string& node) {
  return ObjectJson("v1", "Binding", [&](Writer& w) {
    Nested(w, "metadata", [&] {
      Str(w, "name", name);
      if (!uid.empty()) Str(w, "uid", uid);
    });
    Nested(w, "target", [&] {
      Str(w, "kind", "Node");
      Str(w, "name", node);
    });
  });
}

std::string EvictionBody(const std::string& ns, const std::string& name, const std::string& uid,
                         int64_t grace_period_seconds) {
  return ObjectJson("policy/v1", "Eviction", [&](Writer& w) {
    Nested(w, "metadata", [&] {
      Str(w, "name", name);
      Str(w, "namespace", ns);
    });
    Nested(w, "deleteOptions", [&] {
      w.Key("gracePeriodSeconds");
      w.Int64(std::max<int64_t>(0, grace_period_seconds));
      if (!uid.empty()) Nested(w, "preconditions", [&] { Str(w, "uid", uid); });
    });
  });
}

// The JSON merge patch that sets a job's suspend flag and taskgov's annotations ("" removes
// one: null), with its uid as a precondition.
std::string SuspendPatch(const model::JobControl& job, bool suspend,
                         const model::Labels& annotations) {
  rapidjson::StringBuffer buffer;
  Writer w(buffer);
  w.StartObject();
  Nested(w, "metadata", [&] {
    Str(w, "uid", job.uid);
    Nested(w, "annotations", [&] {
      for (const auto& [key, value] : annotations) {
        w.Key(key.data(), static_cast<rapidjson::SizeType>(key.size()));
        if (value.empty()) {
          w.Null();
        } else {
          w.String(value.data(), static_cast<rapidjson::SizeType>(value.size()));
        }
      }
    });
  });
  Nested(w, "spec", [&] {
    if (job.run_policy) {
      Nested(w, "runPolicy", [&] {
        w.Key("suspend");
        w.Bool(suspend);
      });
    } else {
      w.Key("suspend");
      w.Bool(suspend);
    }
  });
  w.EndObject();
  return buffer.GetString();
}

std::string RequeuePatch(const std::string& uid, const std::string& at) {
  rapidjson::StringBuffer buffer;
  Writer w(buffer);
  w.StartObject();
  Nested(w, "metadata", [&] {
    Str(w, "uid", uid);
    Nested(w, "annotations", [&] { Str(w, kRequeuedAtAnnotation, at); });
  });
  w.EndObject();
  return buffer.GetString();
}

std::string EventBody(const EventRecord& event, const std::string& event_name,
                      const std::string& event_time, const std::string& reporting_controller,
                      const std::string& reporting_instance) {
  return ObjectJson("events.k8s.io/v1", "Event", [&](Writer& w) {
    Nested(w, "metadata", [&] {
      Str(w, "name", event_name);
      Str(w, "namespace", event.ns);
    });
    Str(w, "eventTime", event_time);
    // The API's validation limits: reason and action 128 bytes, note 1 KiB.
    Str(w, "reportingController", Truncate(reporting_controller, 128));
    Str(w, "reportingInstance", Truncate(reporting_instance, 128));
    Str(w, "action", Truncate(event.action.empty() ? event.reason : event.action, 128));
    Str(w, "reason", Truncate(event.reason, 128));
    Str(w, "type", event.type == "Warning" ? "Warning" : "Normal");
    Str(w, "note", Truncate(event.note, 1024));
    Nested(w, "regarding", [&] {
      Str(w, "apiVersion", "v1");
      Str(w, "kind", "Pod");
      Str(w, "namespace", event.ns);
      Str(w, "name", event.pod_name);
      if (!event.pod_uid.empty()) Str(w, "uid", event.pod_uid);
    });
  });
}

ApiKubeActions::ApiKubeActions(KubeClient* client, KubeActionsOptions options)
    : client_(client),
      options_(std::move(options)),
      clock_(options_.clock != nullptr ? options_.clock : common::SystemClock::Get()) {
  worker_ = std::thread([this] { EventLoop(); });
}

ApiKubeActions::~ApiKubeActions() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  worker_.join();
}

KubeActionsStats ApiKubeActions::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

common::Status ApiKubeActions::Bind(const std::string& ns, const std::string& name,
                                    const std::string& uid, const std::string& node) {
  CallOptions call;
  call.timeout = options_.bind_timeout;
  ApiResult<HttpResponse> response =
      client_->Call("POST", PodPath(ns, name) + "/binding", BindingBody(name, uid, node), call);
  std::lock_guard<std::mutex> lock(mu_);
  if (!response.ok()) {
    ++stats_.bind_failures;
    return common::Error{"bind " + ns + "/" + name + " to " + node + ": " +
                         response.error().ToString()};
  }
  ++stats_.binds;
  return common::Status::Ok();
}

common::Status ApiKubeActions::Requeue(const std::string& ns, const std::string& name,
                                       const std::string& uid, const std::string& at) {
  CallOptions call;
  call.timeout = options_.bind_timeout;
  call.content_type = "application/merge-patch+json";
  ApiResult<HttpResponse> response =
      client_->Call("PATCH", PodPath(ns, name), RequeuePatch(uid, at), call);
  std::lock_guard<std::mutex> lock(mu_);
  if (!response.ok()) {
    ++stats_.requeue_failures;
    return common::Error{"requeue " + ns + "/" + name + ": " + response.error().ToString()};
  }
  ++stats_.requeues;
  return common::Status::Ok();
}

namespace {

// What a refused eviction of `pod` comes to: blocked by a PodDisruptionBudget, the pod gone (or
// replaced), or failed (logged unless throttled). nullopt for API throttling whose Retry-After
// the deadline allows: it has been waited out and call->timeout is the time left.
std::optional<EvictOutcome> RefusedEviction(const ApiError& e, const std::string& pod,
                                            std::chrono::steady_clock::time_point deadline,
                                            CallOptions* call) {
  if (e.status == 429) {
    const bool pdb = e.HasCause("DisruptionBudget") || MentionsDisruptionBudget(e.message) ||
                     e.retry_after.count() == 0;
    if (pdb) return EvictOutcome::kBlockedByPdb;
    // API throttling with Retry-After: wait it out if the deadline allows.
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (e.retry_after < left) {
      std::this_thread::sleep_for(e.retry_after);
      call->timeout = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (call->timeout.count() > 0) return std::nullopt;
    }
    return EvictOutcome::kFailed;
  }
  if (e.status == 404 || (e.status == 409 && (e.message.find("UID") != std::string::npos ||
                                              e.message.find("uid") != std::string::npos))) {
    return EvictOutcome::kNotFound;
  }
  common::log::Warn(kComponent, "eviction failed", {{"pod", pod}, {"error", e.ToString()}});
  return EvictOutcome::kFailed;
}

}  // namespace

EvictOutcome ApiKubeActions::Evict(const std::string& ns, const std::string& name,
                                   const std::string& uid, int64_t grace_period_seconds,
                                   std::string* detail) {
  CallOptions call;
  call.timeout = options_.evict_timeout;
  call.retry_throttled = false;  // a PDB refusal is an answer, not throttling: decided below
  const std::string path = PodPath(ns, name) + "/eviction";
  const std::string body = EvictionBody(ns, name, uid, grace_period_seconds);
  const auto deadline = std::chrono::steady_clock::now() + options_.evict_timeout;
  std::string text;
  EvictOutcome outcome = EvictOutcome::kFailed;
  while (true) {
    ApiResult<HttpResponse> response = client_->Call("POST", path, body, call);
    if (response.ok()) {
      text = "evicted";
      outcome = EvictOutcome::kEvicted;
      break;
    }
    text = response.error().ToString();
    std::optional<EvictOutcome> refused =
        RefusedEviction(response.error(), ns + "/" + name, deadline, &call);
    if (!refused) continue;
    outcome = *refused;
    break;
  }
  if (detail != nullptr) *detail = text;
  std::lock_guard<std::mutex> lock(mu_);
  switch (outcome) {
    case EvictOutcome::kEvicted:
      ++stats_.evictions;
      break;
    case EvictOutcome::kBlockedByPdb:
      ++stats_.evictions_blocked_by_pdb;
      break;
    case EvictOutcome::kNotFound:
      ++stats_.evictions_not_found;
      break;
    case EvictOutcome::kFailed:
      ++stats_.eviction_failures;
      break;
  }
  return outcome;
}

SuspendOutcome ApiKubeActions::SetSuspended(const model::JobControl& job, bool suspend,
                                            const model::Labels& annotations, std::string* detail) {
  CallOptions call;
  call.timeout = options_.evict_timeout;
  call.content_type = "application/merge-patch+json";
  ApiResult<HttpResponse> response =
      client_->Call("PATCH", job.path, SuspendPatch(job, suspend, annotations), call);
  SuspendOutcome outcome = SuspendOutcome::kDone;
  if (!response.ok()) {
    const ApiError& e = response.error();
    outcome = e.status == 404 ? SuspendOutcome::kNotFound : SuspendOutcome::kFailed;
    common::log::Warn(kComponent, suspend ? "suspending a job failed" : "resuming a job failed",
                      {{"job", job.display()}, {"error", e.ToString()}});
  }
  if (detail != nullptr) *detail = response.ok() ? "" : response.error().ToString();
  std::lock_guard<std::mutex> lock(mu_);
  switch (outcome) {
    case SuspendOutcome::kDone:
      ++(suspend ? stats_.suspensions : stats_.resumptions);
      break;
    default:
      ++stats_.suspend_failures;
      break;
  }
  return outcome;
}

void ApiKubeActions::RecordEvent(const EventRecord& event) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_ || queue_.size() >= options_.event_queue_limit) {
      ++stats_.events_dropped;
      return;
    }
    queue_.push_back(event);
  }
  cv_.notify_all();
}

void ApiKubeActions::FlushEvents() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [this] { return queue_.empty() && in_flight_ == 0; });
}

void ApiKubeActions::EventLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping with nothing left
    EventRecord event = std::move(queue_.front());
    queue_.pop_front();
    ++in_flight_;
    lock.unlock();
    SendEvent(event);
    lock.lock();
    --in_flight_;
    cv_.notify_all();
  }
}

void ApiKubeActions::SendEvent(const EventRecord& event) {
  const int64_t now = clock_->WallNowMicros();
  uint64_t seq;
  {
    std::lock_guard<std::mutex> lock(mu_);
    seq = ++event_seq_;
  }
  char suffix[40];
  snprintf(suffix, sizeof(suffix), ".%llx%04llx", static_cast<unsigned long long>(now),
           static_cast<unsigned long long>(seq & 0xffff));
  // Object names are at most 253 characters.
  const std::string name = Truncate(event.pod_name, 253 - std::string(suffix).size()) + suffix;
  const std::string instance =
      options_.reporting_instance.empty() ? "taskgov" : options_.reporting_instance;
  CallOptions call;
  call.timeout = options_.event_timeout;
  ApiResult<HttpResponse> response = client_->Call(
      "POST", "/apis/events.k8s.io/v1/namespaces/" + QueryEscape(event.ns) + "/events",
      EventBody(event, name, common::FormatMicroTime(now), options_.reporting_controller, instance),
      call);
  std::lock_guard<std::mutex> lock(mu_);
  if (response.ok()) {
    ++stats_.events_sent;
  } else {
    ++stats_.events_failed;
    common::log::Warn(kComponent, "cannot record event",
                      {{"pod", event.ns + "/" + event.pod_name},
                       {"reason", event.reason},
                       {"error", response.error().ToString()}});
  }
}

}  // namespace taskgov::scheduler::kube
