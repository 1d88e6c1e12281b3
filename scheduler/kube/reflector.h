#pragma once

// Reflector: keeps a local store of one resource in step with the API server, the way client-go's
// reflector does (DESIGN §5):
//  1. LIST in pages (limit/continue); an expired continue token (410) restarts the list from the
//     beginning; when the list completes, objects the store holds that the list no longer has are
//     deleted (so a relist after 410 reports vanished objects as deletes);
//  2. WATCH from the list's resourceVersion with bookmarks; every event (bookmarks included)
//     advances the last seen resourceVersion;
//  3. a watch that ends (cleanly, by idle timeout, or because the connection broke) is re-opened
//     from the last seen resourceVersion — at once when it had been healthy (it delivered events
//     or lived `min_healthy_watch`), after a backoff when it ended empty and early, as client-go
//     does; 410 Gone (as the reply status or an in-stream ERROR
//     event) goes back to 1; 429 waits Retry-After; other failures wait a jittered exponential
//     backoff (backoff.h); a 4xx other than 410/429 on a watch also relists;
//  4. a 404 on the list of an optional resource moves on to the next served-version candidate
//     (ResourceSpec::fallback_paths) at once; when every candidate answers 404 (the CRD is not
//     installed) it is reported once, counts as synced, and is re-checked quietly every
//     `missing_crd_recheck`, from the preferred version again. The version found is kept for
//     watches and relists until it answers 404.
// The store (ObjectSink) makes duplicate ADDED, MODIFIED-before-ADDED and DELETED-for-unknown
// idempotent, so the observer sees a consistent stream.
//
// Threading: Run() is the reflector's loop and blocks its thread until Stop(). The sink and the
// on_synced callback are called from that thread only, one event at a time, in the server's
// order. Stop() and stats() are thread-safe; Stop() interrupts a blocked list or watch at once.

#include <rapidjson/document.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "scheduler/kube/backoff.h"
#include "scheduler/kube/client.h"
#include "scheduler/kube/watch_decoder.h"
#include "scheduler/kube/watch_reasons.h"

namespace taskgov::scheduler::kube {

enum class ApplyOutcome {
  kApplied,        // new or changed: the observer was told
  kUnchanged,      // same uid and resourceVersion as stored (duplicate event): nothing told
  kReplaced,       // same name, new uid: the old object was deleted, then the new one added
  kDecodeError,    // the object could not be decoded: the stored version (if any) is kept
  kDeleted,        // removed: the observer was told
  kUnknownDelete,  // DELETED for an object the store does not hold: ignored
  kStaleDelete,    // DELETED for another uid than the stored one: ignored
};

// The typed store of one resource and its link to the observer. Called from one reflector
// thread only.
class ObjectSink {
 public:
  virtual ~ObjectSink() = default;
  // An object from a list page or an ADDED/MODIFIED event. On kDecodeError `*error` says why.
  virtual ApplyOutcome Upsert(const ObjectMeta& meta, const rapidjson::Value& object,
                              std::string* error) = 0;
  virtual ApplyOutcome Delete(const ObjectMeta& meta) = 0;
  // A (re)list begins: Upserts until EndList mark what still exists.
  virtual void BeginList() = 0;
  // The list completed: deletes every stored object the list did not mark; returns how many.
  virtual size_t EndList() = 0;
  // The list failed half-way: forget the marks, delete nothing.
  virtual void AbortList() = 0;
  [[nodiscard]] virtual size_t size() const = 0;
};

struct ResourceSpec {
  std::string name;  // for stats and logs: "pods", "nodes", ...
  std::string path;  // the collection, e.g. "/api/v1/pods"
  std::string field_selector;
  bool optional = false;  // a CRD that may not be installed
  // Optional resources: the same collection at other versions of the CRD, in order of
  // preference after `path` (e.g. path = .../v1beta2/localqueues, fallback .../v1beta1/...).
  std::vector<std::string> fallback_paths;
};

struct ReflectorOptions {
  int64_t page_size = 500;
  // Each watch asks the server to end it after a random time in [min, max] seconds.
  int64_t watch_timeout_min_seconds = 300;
  int64_t watch_timeout_max_seconds = 600;
  // A watch silent for its timeout plus this grace is abandoned (a hung connection).
  std::chrono::milliseconds watch_idle_grace{30'000};
  std::chrono::milliseconds request_timeout{60'000};  // each list page; opening a watch
  int max_list_restarts = 5;                          // expired continue tokens per list
  BackoffOptions backoff;
  std::chrono::milliseconds missing_crd_recheck{300'000};
  // A watch that ends this soon after it opened, with no event, counts as a failure (backoff).
  std::chrono::milliseconds min_healthy_watch{1'000};
};

// Counters for the metrics engineer. A plain copy; see Reflector::stats().
struct ReflectorStats {
  std::string resource;
  bool synced = false;
  bool served = true;  // false while an optional resource's CRD is missing
  uint64_t lists = 0;  // completed lists: the first and every relist
  uint64_t list_pages = 0;
  uint64_t list_errors = 0;
  uint64_t expired_continues = 0;
  std::map<std::string, uint64_t> watch_restarts;  // by reason (watch_reasons.h)
  uint64_t watches_opened = 0;
  uint64_t added = 0;
  uint64_t modified = 0;
  uint64_t deleted = 0;
  uint64_t bookmarks = 0;
  uint64_t error_events = 0;
  uint64_t decode_errors = 0;
  uint64_t duplicates = 0;
  uint64_t unknown_deletes = 0;
  uint64_t stale_deletes = 0;
  uint64_t replaced = 0;
  uint64_t vanished_on_relist = 0;
  int64_t last_event_unix_ms = 0;  // wall time of the last watch event (bookmarks included)
  uint64_t objects = 0;
  std::string resource_version;  // the last one seen
  std::string path;              // the collection in use (for optional resources: the version)
};

class Reflector {
 public:
  Reflector(KubeClient* client, ResourceSpec spec, ObjectSink* sink,
            std::function<void()> on_synced, ReflectorOptions options, const common::Clock* clock,
            RandomSource random);

  // The loop; returns after Stop().
  void Run();
  // Thread-safe; idempotent.
  void Stop();
  [[nodiscard]] ReflectorStats stats() const;
  // Blocks until `predicate` holds for the stats (re-checked after every change) or the timeout
  // passes; returns the last result. For tests and readiness probes.
  bool WaitStats(const std::function<bool(const ReflectorStats&)>& predicate,
                 std::chrono::milliseconds timeout) const;
  [[nodiscard]] bool synced() const { return synced_.load(std::memory_order_acquire); }
  [[nodiscard]] const ResourceSpec& spec() const { return spec_; }

 private:
  // Returns the list's resourceVersion.
  ApiResult<std::string> ListAll();
  // Watches until the stream ends; sets *relist when it must relist.
  void WatchOnce(std::string* resource_version, bool* relist);
  // The steps of WatchOnce, each on the reflector thread:
  // a watch from `resource_version` with a jittered server-side timeout;
  WatchOptions WatchFrom(const std::string& resource_version);
  // the watch could not be opened: count, wait, and maybe relist;
  void OnWatchRefused(const ApiError& e, bool* relist);
  // the events of an open watch, until it ends, breaks or sends an ERROR event;
  void ReadEvents(WatchStream& stream, common::Clock::SteadyTime opened_at,
                  std::string* resource_version, bool* relist);
  // the stream broke: count, and resume from `resource_version` — at once when the watch was
  // `healthy` (it had events or lived min_healthy_watch), else after a backoff;
  void OnStreamBroken(const ApiError& e, const std::string& resource_version, bool healthy);
  // an ERROR event (`first`: the watch's first event): relist on 410, else wait;
  void OnErrorEvent(const WatchEvent& event, bool first, int64_t now_ms, bool* relist);
  // an ADDED/MODIFIED/DELETED event into the sink;
  void Apply(const WatchEvent& event);
  // count a bookmark or object event and advance *resource_version to its version.
  void Advance(const WatchEvent& event, int64_t now_ms, std::string* resource_version);
  // Every list page and watch: the request timeout, interrupted by Stop().
  CallOptions Call();
  void BackOff();                         // waits the next backoff delay
  void Restart(std::string_view reason);  // one of kWatchRestartReasons
  void MarkSynced();
  bool Wait(std::chrono::milliseconds duration);  // false: stopping
  void Count(ApplyOutcome outcome, const ObjectMeta& meta, const std::string& error);

  KubeClient* const client_;
  const ResourceSpec spec_;
  ObjectSink* const sink_;
  const std::function<void()> on_synced_;
  const ReflectorOptions options_;
  const common::Clock* const clock_;
  RandomSource random_;
  Backoff backoff_;
  Cancellation cancel_;
  bool missing_reported_ = false;  // reflector thread only
  size_t path_index_ = 0;          // reflector thread only: into Candidates()
  // spec_.path, then spec_.fallback_paths.
  [[nodiscard]] const std::string& ActivePath() const;
  [[nodiscard]] std::string CandidateList() const;  // "a, b" for logs
  int quick_expiries_ = 0;                          // reflector thread only

  // Release on store, acquire on load: a reader that sees synced also sees the sink filled.
  std::atomic<bool> synced_{false};
  std::atomic<bool> stopping_{false};  // release/acquire: pairs with Stop()'s cancel
  // Locks stats_mu_; notifies stats_cv_ when released (so WaitStats sees every change).
  class StatsLock {
   public:
    explicit StatsLock(const Reflector* r) : r_(r), lock_(r->stats_mu_) {}
    ~StatsLock() {
      lock_.unlock();
      r_->stats_cv_.notify_all();
    }
    StatsLock(const StatsLock&) = delete;
    StatsLock& operator=(const StatsLock&) = delete;

   private:
    const Reflector* r_;
    std::unique_lock<std::mutex> lock_;
  };

  mutable std::mutex stats_mu_;
  mutable std::condition_variable stats_cv_;
  ReflectorStats stats_;  // guarded by stats_mu_
};

}  // namespace taskgov::scheduler::kube
