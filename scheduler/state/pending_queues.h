#pragma once

// PendingQueues: the pods of this scheduler waiting for admission, per team in rank order — for
// TaskRanking / FirstComeFirstServe ordering and fair-share borrowing (DESIGN §3.6).
//
// Two sources feed it. The informers (through ClusterState) report pods waiting for a scheduler:
// Upsert / Remove, applied at once. Filter calls report what they decided — a pod refused
// (NoteRefused: it waits, and counts as "refused" for Kueue's inadmissible metric) or admitted
// (NoteAdmitted: it no longer waits); a pod known only from filter calls stops counting once it
// has not been filtered for filter_seen_ttl_ms, and is forgotten by the next Sync() after that
// (at most max_filter_only are kept). The common notes post nothing: a repeated refusal only
// refreshes its time, and an admission of a pod that never waited has nothing to undo (each
// looks under the shared lock if it is free at once). Filter notes take no exclusive lock and do
// no queue work: they are posted to a lock-free PostBox, and the queues' own applier thread —
// woken by the post (an atomic exchange; a futex wake only while it sleeps) — applies them under
// the write lock, as every other writer (informer events, Sync) does before its own step. So a
// note is in force microseconds after it was posted, and before the next writer's step; Flush()
// waits until the notes posted before it are. Readers (the ranking queries) never apply notes:
// that would put writes on every filter's path.
//
// Thread-safety: a shared_mutex. Informer writes hold it exclusively for microseconds; the
// ranking queries (Ahead, Head) hold it shared; CountsOf() and Sync() first apply the posted
// notes (waiting for the lock) so that callers off the webhook path (metrics, the preemption
// controller, tests) read every note posted before the call.
//
// A pod joining the queues (it starts waiting) is announced to the join observer, once, after
// the lock is let go, by a thread that wrote — an informer, housekeeping or the applier, never a
// filter call (SetJoinObserver): the preemption controller's loop runs soon after instead of at
// its next tick.
//
// The applier thread starts with the queues and stops at Stop() (or destruction); notes posted
// after that are applied by the other writers.

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <thread>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "scheduler/common/clock.h"
#include "scheduler/common/post_box.h"
#include "scheduler/model/gang.h"
#include "scheduler/model/interner.h"
#include "scheduler/model/objects.h"
#include "scheduler/state/string_hash.h"

namespace taskgov::scheduler::state {

inline constexpr model::NameId kNoTeam = 0xffffffff;

struct PendingPod {
  std::string uid;
  std::string key;  // namespace/name
  model::NameId team = kNoTeam;
  int32_t priority = 0;
  int64_t created_ms = 0;
  model::ResourceList request;
  model::Labels node_selector;  // the flavors it can use: Policy::FlavorAllows
  // Tolerations and required node affinity (null: none): with node_selector, the nodes it can
  // use (placement.h). Shared with the pod's record.
  std::shared_ptr<const model::PodPlacementSpec> placement;
  // Its gang (WorkloadRef::key, "" for a lone pod or a gang of undeclared size) and the members
  // the gang declares.
  std::string workload;
  int32_t workload_size = 0;
  // The gang it names, declared or not (GangOf; "" for a lone pod), and whether it waits for
  // the object declaring its size (WorkloadRef::awaiting_object).
  std::string gang;
  bool awaiting_object = false;
  // Filter notes only: why the filter refused it (its reasons, "; "-joined), and whether one of
  // them was its topology (no domain has room for its gang, or an invalid request: reason
  // "topology").
  std::string refusal;
  bool topology_refused = false;
};

// A pending pod as the queues held it when it was read: immutable and shared (the queues replace
// an entry rather than change it), so a reader keeps it past the queues' lock for the price of a
// reference count.
using PendingRef = std::shared_ptr<const PendingPod>;

// The pending entry of `pod` for `team`, at `priority`, asking for `request`.
[[nodiscard]] PendingPod PendingPodOf(const model::Pod& pod, model::NameId team, int32_t priority,
                                      const model::ResourceList& request,
                                      const model::WorkloadRef& workload);

class PendingQueues {
 public:
  static constexpr size_t kMaxFilterOnly = 50'000;
  struct Options {
    // A pod known only from filter calls (not from the informer) stops counting as pending
    // when it has not been filtered for this long.
    int64_t filter_seen_ttl_ms = 60'000;
    // At most this many pods known only from filter calls are kept (a client filtering pods
    // the API server never reports cannot grow the queues without bound); refusals of further
    // such pods are not recorded until Sync() has forgotten expired ones.
    size_t max_filter_only = kMaxFilterOnly;
  };
  PendingQueues(const common::Clock* clock, Options options);
  ~PendingQueues();
  PendingQueues(const PendingQueues&) = delete;
  PendingQueues& operator=(const PendingQueues&) = delete;
  // Stops the applier thread (idempotent; not from the join observer): before what the observer
  // signals goes away.
  void Stop();

  // ---- informer side ----
  void Upsert(const PendingPod& pod);
  void Remove(const std::string& uid);
  // Re-ranks every entry after a policy change: `retarget` gives its new team and priority (a
  // team of kNoTeam drops it).
  void Retarget(const std::function<void(PendingPod&)>& retarget);
  // The same for the members of `gang` (PendingPod::gang) only.
  void RetargetGang(const std::string& gang, const std::function<void(PendingPod&)>& retarget);

  // ---- filter side: never waits, takes no exclusive lock ----
  void NoteRefused(PendingPod pod);
  void NoteAdmitted(std::string uid);
  // Returns once every note posted before the call is applied and its joins announced (callers
  // off the webhook path that read the queues right after a filter call, e.g. tests).
  void Flush();

  // Called when a pod joins the queues: reported by the informer (Upsert) or refused by a filter
  // call (NoteRefused) while not queued — not when a queued pod is reported, refused or re-ranked
  // again, nor when the queues are re-ranked (Retarget). Joins close together may be announced by
  // one call. It runs after the queues' lock is let go, on whichever thread wrote or applied the
  // note (informer, housekeeping, the applier), possibly under that thread's other locks
  // (ClusterState's): it must only signal (e.g. Ticker::Poke), never call back or wait. Set before
  // any write.
  void SetJoinObserver(std::function<void()> observer) { on_join_ = std::move(observer); }

  // ---- queries ----
  // A number that moves whenever a pod joins, leaves or changes in `team`'s queue (0: never had
  // one): a reader that saw the same number saw the same queue.
  [[nodiscard]] uint64_t Version(model::NameId team) const;
  // Pending pods of `team` that rank ahead of (priority, created_ms, uid), best first, at most
  // `limit`, leaving out the members of gang `skip_workload` (when not empty). by_priority:
  // TaskRanking order (priority, then age); else age only.
  [[nodiscard]] std::vector<PendingRef> Ahead(model::NameId team, int32_t priority,
                                              int64_t created_ms, std::string_view uid,
                                              bool by_priority, size_t limit,
                                              std::string_view skip_workload = {}) const;
  // What `members` members of gang `workload` (of `team`) that hold no quota need together
  // (DESIGN §3.7): the request of member `uid`, each pending member's (per pod set when members
  // differ, e.g. a launcher and its workers), and for members not created yet the largest
  // request among those known; `*estimated` (if not null) is set to how many members that is.
  // Pending members `apart` accepts (when given) count as members but not in the need: they are
  // appended to `*apart_pods` (a gang's pod sets pinned to other flavors; see SplitGangNeed).
  [[nodiscard]] model::ResourceList GangNeed(
      model::NameId team, std::string_view workload, std::string_view uid,
      const model::ResourceList& request, int64_t members, int64_t* estimated = nullptr,
      const std::function<bool(const PendingPod&)>& apart = {},
      std::vector<PendingPod>* apart_pods = nullptr) const;
  // The best-ranked pending pod of `team`, if any.
  [[nodiscard]] std::optional<PendingPod> Head(model::NameId team, bool by_priority) const;
  // The best-ranked pending pods of `team`, at most `limit`, best first (shared: reading many
  // to choose a few, e.g. the preemption controller's 128 of a team to keep 16, copies none).
  [[nodiscard]] std::vector<PendingRef> Heads(model::NameId team, bool by_priority,
                                              size_t limit) const;
  // The best-ranked pending pods of `team` a filter call refused, at most `limit`, best first,
  // each with when a filter call last refused it (the requeuer's candidates, actions/requeuer.h).
  struct Refused {
    PendingRef pod;
    int64_t last_refused_ms = 0;
  };
  [[nodiscard]] std::vector<Refused> RefusedHeads(model::NameId team, bool by_priority,
                                                  size_t limit) const;
  // The pending pod `uid`, if it is queued and counts as pending.
  [[nodiscard]] std::optional<PendingPod> Find(std::string_view uid) const;
  // Pending pods of `team`: all, and those a filter call has refused (the rest are waiting for
  // the scheduler to try them). Applies posted notes first.
  struct Counts {
    size_t total = 0;
    size_t refused = 0;
    // The same by workload (DESIGN §3.7): a gang counts once, refused when a member was.
    size_t workloads = 0;
    size_t refused_workloads = 0;
    // Of those, refused for their topology by the last refusing call (a gang: some member).
    size_t topology_workloads = 0;
  };
  [[nodiscard]] Counts CountsOf(model::NameId team);
  // The pending pods of `team` in rank order (as Head: by_priority is TaskRanking order), each
  // with whether a filter call refused it. Applies posted notes first.
  struct Queued {
    PendingPod pod;  // its `refusal`: the last filter call's reasons ("" if never refused)
    bool refused = false;
    int64_t refused_ms = 0;  // since when filter calls give that reason
  };
  [[nodiscard]] std::vector<Queued> QueueOf(model::NameId team, bool by_priority);
  // Applies every note posted before the call, and forgets the pods known only from filter
  // calls that have not been filtered for filter_seen_ttl_ms (the housekeeping tick calls it
  // every second).
  void Sync();
  // Pods known only from filter calls (not from the informer), and how many such refusals were
  // not recorded because max_filter_only was reached.
  [[nodiscard]] size_t filter_only() const;
  [[nodiscard]] uint64_t filter_only_dropped() const {
    return filter_only_dropped_.load(std::memory_order_relaxed);
  }

 private:
  struct Entry {
    Entry() = default;
    Entry(const Entry& o)
        : pod(o.pod),
          last_seen_ms(o.last_seen_ms.load(std::memory_order_relaxed)),
          from_informer(o.from_informer),
          refused(o.refused),
          refusal(o.refusal),
          topology(o.topology),
          refused_ms(o.refused_ms) {}
    PendingRef pod;  // never null once added; replaced, never changed
    // Refreshed under the shared lock by a repeated refusal (relaxed: a freshness time, read
    // for a TTL compared in milliseconds; no other data is published through it).
    mutable std::atomic<int64_t> last_seen_ms{0};
    bool from_informer = false;
    bool refused = false;    // a filter call refused it (Kueue: inadmissible; else active)
    std::string refusal;     // the last refusing filter call's reasons (pod.refusal is "")
    bool topology = false;   // one of them was its topology (pod.topology_refused is false)
    int64_t refused_ms = 0;  // since when filter calls give them
  };
  // A refusal of a pod already waiting as refused, with the same rank: only its time is
  // refreshed (shared lock, if free at once), nothing is posted. False when the note must be
  // posted.
  bool RefreshRefused(const PendingPod& pod) const;
  // Whether `uid` is surely not queued: the shared lock was free at once and it is not there.
  bool SurelyNotQueued(const std::string& uid) const;
  // Rank keys: (−priority, created, uid) and (created, uid).
  using PriorityKey = std::tuple<int64_t, int64_t, std::string>;
  using AgeKey = std::tuple<int64_t, std::string>;
  // Each rank index maps to the entry in pending_ (unordered_map nodes do not move; an entry
  // leaves the indexes before it leaves pending_).
  struct TeamQueue {
    std::map<PriorityKey, const Entry*> by_priority;
    std::map<AgeKey, const Entry*> by_age;
    uint64_t version = 0;  // Version(): a value of version_clock_, never reused
  };
  struct Note {
    bool admitted = false;
    PendingPod pod;     // for a refusal; only uid for an admission
    int64_t at_ms = 0;  // when the filter call made it (applied later, it keeps its time)
  };

  // With mu_ held exclusively. True when the pod was not queued (the caller announces a join).
  // `now_ms`: the time of the event (a note's, or the clock's for the informer).
  bool AddLocked(const PendingPod& pod, bool from_informer, int64_t now_ms);
  // AddLocked of an entry taken out for a re-rank, keeping its standing.
  void ReAddLocked(const Entry& entry);
  // Gives `entry` a copy of its pod as `retarget` changes it; false when it leaves the queues
  // (no team).
  static bool RetargetLocked(const std::function<void(PendingPod&)>& retarget, Entry* entry);
  void RemoveLocked(const std::string& uid);
  // Drops (key → value) from `index` (by_gang_: a uid, by_workload_: an entry); nothing for an
  // empty key.
  template <typename V>
  static void Unindex(StringMultimap<V>* index, const std::string& key, const V& value);
  void ApplyNotesLocked();
  // Applies posted notes if the lock is free, without waiting (see the header comment); then,
  // outside the lock, announces the joins not announced yet. Every writer ends with it.
  void TryApplyNotes();
  // Applies every posted note (waiting for the write lock), then announces the joins.
  void ApplyNow();
  // After a post: wakes the applier thread.
  void WakeApplier();
  // Posts a note for the applier (counted, and the applier woken).
  void PostNote(Note note);
  // The applier thread: applies posted notes whenever woken, until Stop().
  void ApplierLoop();
  // With mu_ held: a pod joined (AddLocked returned true).
  void NoteJoinedLocked();
  // With mu_ held: the queued members of gang `workload` (PendingPod::workload) in `team`'s
  // queue, oldest first (its by_age order).
  [[nodiscard]] std::vector<const Entry*> MembersByAgeLocked(model::NameId team,
                                                             std::string_view workload) const;
  [[nodiscard]] bool Live(const Entry& entry) const;
  // With mu_ held: `visit` on the live entries of `team`'s queue best first, while it returns
  // true.
  template <typename Visit>
  void VisitLiveLocked(model::NameId team, bool by_priority, Visit&& visit) const;
  void ForgetExpiredLocked();

  const common::Clock* const clock_;
  const Options options_;
  common::PostBox<Note> notes_;
  mutable std::shared_mutex mu_;
  StringMap<Entry> pending_;  // by uid
  std::unordered_map<model::NameId, TeamQueue> queues_;
  uint64_t version_clock_ = 0;  // the last TeamQueue::version given
  // PendingPod::gang → uid
  StringMultimap<std::string> by_gang_;
  // PendingPod::workload → its entry in pending_ (left before the entry leaves pending_)
  StringMultimap<const Entry*> by_workload_;
  std::unordered_set<std::string> filter_only_;  // uids of entries not from the informer
  std::atomic<uint64_t> filter_only_dropped_{0};
  std::function<void()> on_join_;    // set before any write
  std::atomic<bool> joined_{false};  // a join not announced yet
  // Notes posted, counted after their post; notes the applier has applied (with their joins
  // announced): Flush waits for the second to reach the first.
  std::atomic<uint64_t> posted_{0};
  std::atomic<uint64_t> applied_{0};
  std::atomic<bool> wake_{false};  // set by a post, cleared by the applier before it applies
  std::atomic<bool> stopping_{false};
  std::once_flag stopped_;
  std::thread applier_;  // last: starts once every member above is ready
};

}  // namespace taskgov::scheduler::state
