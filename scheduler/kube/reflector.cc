#include "scheduler/kube/reflector.h"

#include <algorithm>

#include "scheduler/common/log.h"

namespace taskgov::scheduler::kube {
namespace {

constexpr std::string_view kComponent = "kube-reflector";

// The counter of a bookmark or object (ADDED, MODIFIED, DELETED) event.
uint64_t ReflectorStats::*EventCounter(WatchEventType type) {
  switch (type) {
    case WatchEventType::kBookmark:
      return &ReflectorStats::bookmarks;
    case WatchEventType::kAdded:
      return &ReflectorStats::added;
    case WatchEventType::kModified:
      return &ReflectorStats::modified;
    default:
      return &ReflectorStats::deleted;
  }
}

}  // namespace

Reflector::Reflector(KubeClient* client, ResourceSpec spec, ObjectSink* sink,
                     std::function<void()> on_synced, ReflectorOptions options,
                     const common::Clock* clock, RandomSource random)
    : client_(client),
      spec_(std::move(spec)),
      sink_(sink),
      on_synced_(std::move(on_synced)),
      options_(options),
      clock_(clock != nullptr ? clock : common::SystemClock::Get()),
      random_(random ? std::move(random) : MakeRandomSource()),
      backoff_(options.backoff, clock_, random_) {
  stats_.resource = spec_.name;
  stats_.path = spec_.path;
}

const std::string& Reflector::ActivePath() const {
  return path_index_ == 0 ? spec_.path : spec_.fallback_paths[path_index_ - 1];
}

std::string Reflector::CandidateList() const {
  std::string out = spec_.path;
  for (const std::string& p : spec_.fallback_paths) out += ", " + p;
  return out;
}

void Reflector::Stop() {
  stopping_.store(true, std::memory_order_release);
  cancel_.Cancel();
}

ReflectorStats Reflector::stats() const {
  std::lock_guard<std::mutex> lock(stats_mu_);
  ReflectorStats s = stats_;
  s.synced = synced();
  return s;
}

bool Reflector::WaitStats(const std::function<bool(const ReflectorStats&)>& predicate,
                          std::chrono::milliseconds timeout) const {
  std::unique_lock<std::mutex> lock(stats_mu_);
  return stats_cv_.wait_for(lock, timeout, [&] { return predicate(stats_); });
}

bool Reflector::Wait(std::chrono::milliseconds duration) {
  if (stopping_.load(std::memory_order_acquire)) return false;
  return cancel_.SleepFor(duration);
}

void Reflector::Restart(std::string_view reason) {
  StatsLock lock(this);
  ++stats_.watch_restarts[std::string(reason)];
}

void Reflector::MarkSynced() {
  if (synced_.load(std::memory_order_acquire)) return;
  synced_.store(true, std::memory_order_release);
  {
    StatsLock lock(this);
    stats_.synced = true;
  }
  common::log::Info(kComponent, "initial list complete",
                    {{"resource", spec_.name}, {"objects", static_cast<uint64_t>(sink_->size())}});
  if (on_synced_) on_synced_();
}

void Reflector::Count(ApplyOutcome outcome, const ObjectMeta& meta, const std::string& error) {
  StatsLock lock(this);
  switch (outcome) {
    case ApplyOutcome::kApplied:
    case ApplyOutcome::kDeleted:
      break;
    case ApplyOutcome::kUnchanged:
      ++stats_.duplicates;
      break;
    case ApplyOutcome::kReplaced:
      ++stats_.replaced;
      break;
    case ApplyOutcome::kDecodeError:
      ++stats_.decode_errors;
      common::log::Warn(kComponent, "cannot decode object; keeping the last good version",
                        {{"resource", spec_.name}, {"object", meta.key()}, {"error", error}});
      break;
    case ApplyOutcome::kUnknownDelete:
      ++stats_.unknown_deletes;
      break;
    case ApplyOutcome::kStaleDelete:
      ++stats_.stale_deletes;
      break;
  }
  stats_.objects = sink_->size();
}

ApiResult<std::string> Reflector::ListAll() {
  sink_->BeginList();
  ListOptions list;
  list.field_selector = spec_.field_selector;
  list.limit = options_.page_size;
  const CallOptions call = Call();
  int restarts = 0;
  std::string resource_version;
  while (true) {
    ApiResult<ListPage> page = client_->List(ActivePath(), list, call);
    if (!page.ok()) {
      if (page.error().status == 410 && !list.continue_token.empty() &&
          restarts < options_.max_list_restarts && !stopping_.load(std::memory_order_acquire)) {
        // The continue token expired (etcd compacted): start the list over.
        ++restarts;
        {
          StatsLock lock(this);
          ++stats_.expired_continues;
        }
        common::log::Info(kComponent, "continue token expired; restarting the list",
                          {{"resource", spec_.name}});
        list.continue_token.clear();
        sink_->BeginList();
        continue;
      }
      sink_->AbortList();
      return page.error();
    }
    {
      StatsLock lock(this);
      ++stats_.list_pages;
    }
    for (const rapidjson::Value& item : page->items().GetArray()) {
      common::Result<ObjectMeta> meta = ReadObjectMeta(item);
      if (!meta.ok() || meta->name.empty()) {
        Count(ApplyOutcome::kDecodeError, meta.ok() ? *meta : ObjectMeta{},
              meta.ok() ? "object has no name" : meta.error().message);
        continue;
      }
      std::string error;
      ApplyOutcome outcome = sink_->Upsert(*meta, item, &error);
      Count(outcome, *meta, error);
    }
    resource_version = page->resource_version;
    if (page->continue_token.empty()) break;
    list.continue_token = page->continue_token;
  }
  const size_t vanished = sink_->EndList();
  StatsLock lock(this);
  ++stats_.lists;
  stats_.vanished_on_relist += vanished;
  stats_.objects = sink_->size();
  stats_.resource_version = resource_version;
  stats_.served = true;
  stats_.path = ActivePath();
  return resource_version;
}

void Reflector::Run() {
  bool relist = true;
  std::string resource_version;
  while (!stopping_.load(std::memory_order_acquire)) {
    if (relist) {
      ApiResult<std::string> listed = ListAll();
      if (!listed.ok()) {
        const ApiError& e = listed.error();
        if (e.cancelled || stopping_.load(std::memory_order_acquire)) break;
        if (e.status == 404 && spec_.optional) {
          if (path_index_ < spec_.fallback_paths.size()) {
            ++path_index_;  // another served version may exist: try it now
            continue;
          }
          path_index_ = 0;  // the next re-check starts from the preferred version
          if (!missing_reported_) {
            missing_reported_ = true;
            common::log::Warn(kComponent, "resource not served (CRD not installed?); ignoring it",
                              {{"resource", spec_.name}, {"paths", CandidateList()}});
          }
          {
            StatsLock lock(this);
            stats_.served = false;
          }
          MarkSynced();
          if (!Wait(options_.missing_crd_recheck)) break;
          continue;
        }
        {
          StatsLock lock(this);
          ++stats_.list_errors;
        }
        std::chrono::milliseconds delay = backoff_.Next();
        if (e.status == 429) delay = std::max(delay, e.retry_after);
        common::log::Warn(kComponent, "list failed; retrying",
                          {{"resource", spec_.name},
                           {"error", e.ToString()},
                           {"retry_in_ms", static_cast<int64_t>(delay.count())}});
        if (!Wait(delay)) break;
        continue;
      }
      if (missing_reported_) {
        missing_reported_ = false;
        common::log::Info(kComponent, "resource is now served",
                          {{"resource", spec_.name}, {"path", ActivePath()}});
      }
      resource_version = *listed;
      relist = false;
      MarkSynced();
    }
    WatchOnce(&resource_version, &relist);
  }
}

CallOptions Reflector::Call() {
  CallOptions call;
  call.timeout = options_.request_timeout;
  call.cancel = &cancel_;
  return call;
}

void Reflector::BackOff() { Wait(backoff_.Next()); }

WatchOptions Reflector::WatchFrom(const std::string& resource_version) {
  WatchOptions watch;
  watch.resource_version = resource_version;
  watch.field_selector = spec_.field_selector;
  watch.allow_bookmarks = true;
  const int64_t lo = options_.watch_timeout_min_seconds;
  const int64_t hi = std::max(lo, options_.watch_timeout_max_seconds);
  watch.timeout_seconds = lo + static_cast<int64_t>(random_() * static_cast<double>(hi - lo + 1));
  watch.timeout_seconds = std::clamp(watch.timeout_seconds, lo, hi);
  watch.idle_timeout =
      std::chrono::milliseconds(watch.timeout_seconds * 1000) + options_.watch_idle_grace;
  return watch;
}

void Reflector::WatchOnce(std::string* resource_version, bool* relist) {
  const WatchOptions watch = WatchFrom(*resource_version);
  const common::Clock::SteadyTime opened_at = clock_->SteadyNow();
  ApiResult<std::unique_ptr<WatchStream>> stream = client_->Watch(ActivePath(), watch, Call());
  if (!stream.ok()) {
    OnWatchRefused(stream.error(), relist);
    return;
  }
  {
    StatsLock lock(this);
    ++stats_.watches_opened;
  }
  ReadEvents(**stream, opened_at, resource_version, relist);
}

void Reflector::OnWatchRefused(const ApiError& e, bool* relist) {
  if (e.cancelled || stopping_.load(std::memory_order_acquire)) return;
  if (e.status == 410) {
    Restart(kWatchExpired);
    *relist = true;
    if (++quick_expiries_ > 1) BackOff();
    return;
  }
  if (e.status == 429) {
    Restart(kWatchThrottled);
    Wait(std::max(backoff_.Next(), e.retry_after));
    return;
  }
  Restart(kWatchError);
  common::log::Warn(kComponent, "watch failed",
                    {{"resource", spec_.name}, {"error", e.ToString()}});
  // Transport errors and 5xx re-watch from the same version; other refusals relist.
  if (!e.transport() && e.status < 500) *relist = true;
  BackOff();
}

void Reflector::ReadEvents(WatchStream& stream, common::Clock::SteadyTime opened_at,
                           std::string* resource_version, bool* relist) {
  uint64_t events = 0;
  while (true) {
    WatchEvent event;
    ApiResult<bool> next = stream.Next(&event);
    // A watch that ended or broke after it was healthy (events, or open long enough) resumes at
    // once, as client-go's does; only a short, empty one backs off (the server is in trouble).
    const bool healthy =
        events > 0 || clock_->SteadyNow() - opened_at >= options_.min_healthy_watch;
    if (!next.ok()) {
      OnStreamBroken(next.error(), *resource_version, healthy);
      return;
    }
    if (!*next) {
      Restart(kWatchEnded);
      if (!healthy) BackOff();
      return;
    }
    ++events;
    const int64_t now_ms = clock_->WallNowMicros() / 1000;
    if (event.type == WatchEventType::kError) {
      OnErrorEvent(event, /*first=*/events == 1, now_ms, relist);
      return;
    }
    quick_expiries_ = 0;
    if (event.type != WatchEventType::kBookmark) Apply(event);
    Advance(event, now_ms, resource_version);
  }
}

void Reflector::OnStreamBroken(const ApiError& e, const std::string& resource_version,
                               bool healthy) {
  if (e.cancelled || stopping_.load(std::memory_order_acquire)) return;
  const std::string_view reason = e.reason == "Timeout"        ? kWatchTimeout
                                  : e.reason == "InvalidEvent" ? kWatchError
                                                               : kWatchDropped;
  Restart(reason);
  common::log::Info(kComponent, "watch interrupted; resuming",
                    {{"resource", spec_.name},
                     {"reason", reason},
                     {"error", e.ToString()},
                     {"resource_version", resource_version}});
  if (!healthy) BackOff();
}

void Reflector::OnErrorEvent(const WatchEvent& event, bool first, int64_t now_ms, bool* relist) {
  {
    StatsLock lock(this);
    ++stats_.error_events;
    stats_.last_event_unix_ms = now_ms;
  }
  if (event.error_code == 410) {
    Restart(kWatchExpired);
    common::log::Info(kComponent, "watch expired (410); relisting",
                      {{"resource", spec_.name}, {"message", event.error_message}});
    *relist = true;
    // Expired again before anything else arrived: do not spin list → watch → 410.
    if (first && ++quick_expiries_ > 1) BackOff();
    return;
  }
  Restart(kWatchError);
  common::log::Warn(kComponent, "watch error event",
                    {{"resource", spec_.name},
                     {"code", event.error_code},
                     {"reason", event.error_reason},
                     {"message", event.error_message}});
  BackOff();
}

void Reflector::Apply(const WatchEvent& event) {
  common::Result<ObjectMeta> meta = ReadObjectMeta(event.object());
  ApplyOutcome outcome = ApplyOutcome::kDecodeError;
  std::string error;
  if (!meta.ok()) {
    error = meta.error().message;
  } else if (event.type == WatchEventType::kDeleted) {
    outcome = sink_->Delete(*meta);
  } else {
    outcome = sink_->Upsert(*meta, event.object(), &error);
  }
  Count(outcome, meta.ok() ? *meta : ObjectMeta{}, error);
}

void Reflector::Advance(const WatchEvent& event, int64_t now_ms, std::string* resource_version) {
  const std::string version = event.resource_version();
  StatsLock lock(this);
  ++(stats_.*EventCounter(event.type));
  stats_.last_event_unix_ms = now_ms;
  if (!version.empty()) {
    *resource_version = version;
    stats_.resource_version = version;
  }
}

}  // namespace taskgov::scheduler::kube
