#include "scheduler/state/pending_queues.h"

#include <algorithm>
#include <mutex>

#include "scheduler/model/gang.h"

namespace taskgov::scheduler::state {

using model::NameId;
using model::Pod;
using model::ResourceList;
using model::WorkloadRef;

PendingPod PendingPodOf(const Pod& pod, NameId team, int32_t priority, const ResourceList& request,
                        const WorkloadRef& workload) {
  PendingPod pending;
  pending.uid = pod.uid;
  pending.key = pod.key();
  pending.team = team;
  pending.priority = priority;
  pending.created_ms = pod.creation_unix_ms;
  pending.request = request;
  pending.node_selector = pod.node_selector;
  pending.placement = pod.placement;
  if (workload.gang()) {
    pending.workload = workload.key;
    pending.workload_size = workload.size;
  }
  pending.gang = workload.key;
  pending.awaiting_object = workload.awaiting_object;
  return pending;
}

PendingQueues::PendingQueues(const common::Clock* clock, Options options)
    : clock_(clock), options_(options), applier_([this] { ApplierLoop(); }) {}

PendingQueues::~PendingQueues() { Stop(); }

void PendingQueues::Stop() {
  std::call_once(stopped_, [this] {
    stopping_.store(true, std::memory_order_relaxed);
    wake_.store(true, std::memory_order_release);
    wake_.notify_one();
    applier_.join();
  });
}

void PendingQueues::WakeApplier() {
  // release: the applier's acquire wait sees the post. Already set: it is due to run anyway.
  if (!wake_.exchange(true, std::memory_order_release)) wake_.notify_one();
}

void PendingQueues::ApplierLoop() {
  while (true) {
    wake_.wait(false, std::memory_order_acquire);
    if (stopping_.load(std::memory_order_relaxed)) return;
    // Cleared before it looks: a note posted from here on wakes it again. acq_rel: reading the
    // posters' release exchange makes their posts visible to the TakeAll below.
    wake_.exchange(false, std::memory_order_acq_rel);
    // acquire: every note counted here was posted before it was counted, so TakeAll sees it.
    const uint64_t target = posted_.load(std::memory_order_acquire);
    ApplyNow();
    // release: what was applied and announced happens before a Flush that sees the count.
    applied_.store(target, std::memory_order_release);
    applied_.notify_all();
  }
}

void PendingQueues::ApplyNow() {
  {
    std::unique_lock lock(mu_);
    ApplyNotesLocked();
  }
  TryApplyNotes();  // announces the joins
}

void PendingQueues::Flush() {
  const uint64_t target = posted_.load(std::memory_order_acquire);
  if (stopping_.load(std::memory_order_relaxed)) {  // no applier: apply here
    ApplyNow();
    return;
  }
  WakeApplier();
  for (uint64_t done = applied_.load(std::memory_order_acquire); done < target;
       done = applied_.load(std::memory_order_acquire)) {
    applied_.wait(done, std::memory_order_acquire);
  }
}

bool PendingQueues::AddLocked(const PendingPod& pod, bool from_informer, int64_t now_ms) {
  auto [it, inserted] = pending_.try_emplace(pod.uid);
  Entry& entry = it->second;
  if (!inserted) {
    const PendingPod& was = *entry.pod;
    TeamQueue& old = queues_[was.team];
    old.by_priority.erase(PriorityKey{-int64_t{was.priority}, was.created_ms, pod.uid});
    old.by_age.erase(AgeKey{was.created_ms, pod.uid});
    old.version = ++version_clock_;
    if (was.gang != pod.gang) Unindex(&by_gang_, was.gang, pod.uid);
    if (was.workload != pod.workload) {
      Unindex(&by_workload_, was.workload, static_cast<const Entry*>(&entry));
    }
  }
  if ((inserted || entry.pod->gang != pod.gang) && !pod.gang.empty()) {
    by_gang_.emplace(pod.gang, pod.uid);
  }
  if ((inserted || entry.pod->workload != pod.workload) && !pod.workload.empty()) {
    by_workload_.emplace(pod.workload, &entry);
  }
  auto fresh = std::make_shared<PendingPod>(pod);
  if (!from_informer && (entry.refused_ms == 0 || entry.refusal != fresh->refusal)) {
    entry.refusal = std::move(fresh->refusal);
    entry.topology = fresh->topology_refused;
    entry.refused_ms = now_ms;
  }
  fresh->refusal.clear();
  fresh->topology_refused = false;
  entry.pod = std::move(fresh);
  entry.last_seen_ms.store(now_ms, std::memory_order_relaxed);
  entry.from_informer = entry.from_informer || from_informer;
  if (entry.from_informer) {
    filter_only_.erase(pod.uid);
  } else {
    filter_only_.insert(pod.uid);
  }
  entry.refused = entry.refused || !from_informer;  // a note: after a refusing filter
  TeamQueue& queue = queues_[pod.team];
  queue.by_priority.emplace(PriorityKey{-int64_t{pod.priority}, pod.created_ms, pod.uid}, &entry);
  queue.by_age.emplace(AgeKey{pod.created_ms, pod.uid}, &entry);
  queue.version = ++version_clock_;
  return inserted;
}

void PendingQueues::ReAddLocked(const Entry& entry) {
  // A re-rank: it was queued already.
  (void)AddLocked(*entry.pod, entry.from_informer, clock_->NowMs());
  // Its standing is unchanged: refused or not, and last filtered when it was (a re-rank must not
  // keep a pod the filter no longer asks about alive).
  Entry& added = pending_.at(entry.pod->uid);
  added.refused = entry.refused;
  added.refusal = entry.refusal;
  added.topology = entry.topology;
  added.refused_ms = entry.refused_ms;
  added.last_seen_ms.store(entry.last_seen_ms.load(std::memory_order_relaxed),
                           std::memory_order_relaxed);
}

void PendingQueues::RemoveLocked(const std::string& uid) {
  auto it = pending_.find(uid);
  if (it == pending_.end()) return;
  const PendingPod& pod = *it->second.pod;
  TeamQueue& queue = queues_[pod.team];
  queue.by_priority.erase(PriorityKey{-int64_t{pod.priority}, pod.created_ms, uid});
  queue.by_age.erase(AgeKey{pod.created_ms, uid});
  queue.version = ++version_clock_;
  Unindex(&by_gang_, pod.gang, uid);
  Unindex(&by_workload_, pod.workload, static_cast<const Entry*>(&it->second));
  filter_only_.erase(uid);
  pending_.erase(it);
}

template <typename V>
void PendingQueues::Unindex(StringMultimap<V>* index, const std::string& key, const V& value) {
  if (key.empty()) return;
  auto [b, e] = index->equal_range(key);
  for (auto it = b; it != e; ++it) {
    if (it->second == value) {
      index->erase(it);
      return;
    }
  }
}

void PendingQueues::ApplyNotesLocked() {
  for (Note& note : notes_.TakeAll()) {
    if (note.admitted) {
      RemoveLocked(note.pod.uid);
    } else if (note.pod.team != kNoTeam) {
      if (filter_only_.size() >= options_.max_filter_only && !pending_.contains(note.pod.uid)) {
        filter_only_dropped_.fetch_add(1, std::memory_order_relaxed);
        continue;
      }
      if (AddLocked(note.pod, /*from_informer=*/false, note.at_ms)) NoteJoinedLocked();
    }
  }
}

void PendingQueues::NoteJoinedLocked() {
  // release: pairs with the acquire exchange in TryApplyNotes, so the observer's signal comes
  // after the pod is queued.
  joined_.store(true, std::memory_order_release);
}

void PendingQueues::TryApplyNotes() {
  // A holder that let go after our post was applied looks again (below, in its own call), so
  // a note is never left behind: either this try_lock wins, or the holder sees the note.
  while (!notes_.Empty()) {
    std::unique_lock lock(mu_, std::try_to_lock);
    if (!lock.owns_lock()) break;
    ApplyNotesLocked();
  }
  // The thread that queued a pod comes here after letting go of the lock, so every join is
  // announced. relaxed: a look that spares most writes the exchange; acquire: see NoteJoinedLocked.
  if (joined_.load(std::memory_order_relaxed) &&
      joined_.exchange(false, std::memory_order_acquire) && on_join_) {
    on_join_();
  }
}

void PendingQueues::Upsert(const PendingPod& pod) {
  {
    std::unique_lock lock(mu_);
    ApplyNotesLocked();
    if (AddLocked(pod, /*from_informer=*/true, clock_->NowMs())) NoteJoinedLocked();
  }
  TryApplyNotes();
}

void PendingQueues::Remove(const std::string& uid) {
  {
    std::unique_lock lock(mu_);
    ApplyNotesLocked();
    RemoveLocked(uid);
  }
  TryApplyNotes();
}

void PendingQueues::Retarget(const std::function<void(PendingPod&)>& retarget) {
  {
    std::unique_lock lock(mu_);
    ApplyNotesLocked();
    std::vector<Entry> entries;
    entries.reserve(pending_.size());
    for (auto& [uid, entry] : pending_) entries.push_back(std::move(entry));
    pending_.clear();
    queues_.clear();
    by_gang_.clear();
    by_workload_.clear();
    filter_only_.clear();
    for (Entry& entry : entries) {
      if (RetargetLocked(retarget, &entry)) ReAddLocked(entry);
    }
  }
  TryApplyNotes();
}

bool PendingQueues::RetargetLocked(const std::function<void(PendingPod&)>& retarget, Entry* entry) {
  PendingPod pod = *entry->pod;
  retarget(pod);
  entry->pod = std::make_shared<const PendingPod>(std::move(pod));
  return entry->pod->team != kNoTeam;
}

void PendingQueues::RetargetGang(const std::string& gang,
                                 const std::function<void(PendingPod&)>& retarget) {
  {
    std::unique_lock lock(mu_);
    ApplyNotesLocked();
    std::vector<Entry> entries;
    auto [b, e] = by_gang_.equal_range(gang);
    for (auto it = b; it != e; ++it) {
      if (auto found = pending_.find(it->second); found != pending_.end()) {
        entries.push_back(found->second);
      }
    }
    for (Entry& entry : entries) {
      RemoveLocked(entry.pod->uid);
      if (RetargetLocked(retarget, &entry)) ReAddLocked(entry);
    }
  }
  TryApplyNotes();
}

bool PendingQueues::RefreshRefused(const PendingPod& pod) const {
  std::shared_lock lock(mu_, std::try_to_lock);  // a note never waits for a writer
  if (!lock.owns_lock()) return false;
  auto it = pending_.find(pod.uid);
  if (it == pending_.end() || !it->second.refused) return false;
  const PendingPod& known = *it->second.pod;
  if (known.team != pod.team || known.priority != pod.priority ||
      known.created_ms != pod.created_ms || known.request != pod.request ||
      it->second.refusal != pod.refusal) {
    return false;
  }
  it->second.last_seen_ms.store(clock_->NowMs(), std::memory_order_relaxed);
  return true;
}

void PendingQueues::NoteRefused(PendingPod pod) {
  if (pod.team == kNoTeam) return;
  // Over-quota pods come back on every cluster event: the common case changes nothing but a
  // time, and takes no write lock at all.
  if (notes_.Empty() && RefreshRefused(pod)) return;
  PostNote(Note{false, std::move(pod), clock_->NowMs()});
}

void PendingQueues::PostNote(Note note) {
  notes_.Post(std::move(note));
  posted_.fetch_add(1, std::memory_order_release);
  WakeApplier();
}

bool PendingQueues::SurelyNotQueued(const std::string& uid) const {
  std::shared_lock lock(mu_, std::try_to_lock);  // a note never waits for a writer
  return lock.owns_lock() && !pending_.contains(uid);
}

void PendingQueues::NoteAdmitted(std::string uid) {
  // Most admitted pods never waited (kube-scheduler's first try admits them): with no note
  // posted that could queue it and the pod not queued, there is nothing to undo — no note, no
  // write lock. (An informer report that queues it after this is undone by the informer's own
  // look at the QuotaBook, ClusterState::UpsertLocked.)
  if (notes_.Empty() && SurelyNotQueued(uid)) return;
  Note note;
  note.admitted = true;
  note.pod.uid = std::move(uid);
  PostNote(std::move(note));
}

void PendingQueues::Sync() {
  {
    std::unique_lock lock(mu_);
    ApplyNotesLocked();
    ForgetExpiredLocked();
  }
  TryApplyNotes();
}

void PendingQueues::ForgetExpiredLocked() {
  std::vector<std::string> expired;
  for (const std::string& uid : filter_only_) {
    if (auto it = pending_.find(uid); it != pending_.end() && !Live(it->second)) {
      expired.push_back(uid);
    }
  }
  for (const std::string& uid : expired) RemoveLocked(uid);
}

size_t PendingQueues::filter_only() const {
  std::shared_lock lock(mu_);
  return filter_only_.size();
}

bool PendingQueues::Live(const Entry& entry) const {
  return entry.from_informer ||
         clock_->NowMs() - entry.last_seen_ms.load(std::memory_order_relaxed) <=
             options_.filter_seen_ttl_ms;
}

uint64_t PendingQueues::Version(NameId team) const {
  std::shared_lock lock(mu_);
  auto queue = queues_.find(team);
  return queue == queues_.end() ? 0 : queue->second.version;
}

std::vector<PendingRef> PendingQueues::Ahead(NameId team, int32_t priority, int64_t created_ms,
                                             std::string_view uid, bool by_priority, size_t limit,
                                             std::string_view skip_workload) const {
  std::shared_lock lock(mu_);
  std::vector<PendingRef> out;
  auto queue = queues_.find(team);
  if (queue == queues_.end()) return out;
  out.reserve(std::min(limit, queue->second.by_age.size()));
  auto take = [&](const Entry& other) {
    if (other.pod->uid == uid || !Live(other)) return;
    if (!skip_workload.empty() && other.pod->workload == skip_workload) return;
    out.push_back(other.pod);
  };
  if (by_priority) {
    const PriorityKey self{-int64_t{priority}, created_ms, std::string(uid)};
    for (auto it = queue->second.by_priority.begin();
         it != queue->second.by_priority.end() && it->first < self && out.size() < limit; ++it) {
      take(*it->second);
    }
  } else {
    const AgeKey self{created_ms, std::string(uid)};
    for (auto it = queue->second.by_age.begin();
         it != queue->second.by_age.end() && it->first < self && out.size() < limit; ++it) {
      take(*it->second);
    }
  }
  return out;
}

ResourceList PendingQueues::GangNeed(NameId team, std::string_view workload, std::string_view uid,
                                     const ResourceList& request, int64_t members,
                                     int64_t* estimated,
                                     const std::function<bool(const PendingPod&)>& apart,
                                     std::vector<PendingPod>* apart_pods) const {
  ResourceList need = request;
  ResourceList largest = request;
  int64_t counted = 1;
  {
    std::shared_lock lock(mu_);
    for (const Entry* member : MembersByAgeLocked(team, workload)) {
      if (counted >= members) break;
      const PendingPod& other = *member->pod;
      if (!Live(*member) || other.uid == uid) continue;
      if (apart && apart_pods != nullptr && apart(other)) {
        apart_pods->push_back(other);
        ++counted;
        continue;
      }
      need.Add(other.request);
      largest.MaxWith(other.request);
      ++counted;
    }
  }
  if (members > counted) need.Add(largest.Times(members - counted));
  if (estimated != nullptr) *estimated = std::max<int64_t>(0, members - counted);
  return need;
}

std::vector<const PendingQueues::Entry*> PendingQueues::MembersByAgeLocked(
    NameId team, std::string_view workload) const {
  std::vector<const Entry*> members;
  if (workload.empty()) return members;
  auto [b, e] = by_workload_.equal_range(workload);
  for (auto it = b; it != e; ++it) {
    if (it->second->pod->team == team) members.push_back(it->second);
  }
  // By AgeKey, without building one.
  std::sort(members.begin(), members.end(), [](const Entry* a, const Entry* b) {
    const PendingPod& x = *a->pod;
    const PendingPod& y = *b->pod;
    return x.created_ms != y.created_ms ? x.created_ms < y.created_ms : x.uid < y.uid;
  });
  return members;
}

std::optional<PendingPod> PendingQueues::Head(NameId team, bool by_priority) const {
  std::vector<PendingRef> heads = Heads(team, by_priority, 1);
  if (heads.empty()) return std::nullopt;
  return *heads.front();
}

template <typename Visit>
void PendingQueues::VisitLiveLocked(NameId team, bool by_priority, Visit&& visit) const {
  auto queue = queues_.find(team);
  if (queue == queues_.end()) return;
  if (by_priority) {
    for (const auto& [key, entry] : queue->second.by_priority) {
      if (Live(*entry) && !visit(*entry)) return;
    }
  } else {
    for (const auto& [key, entry] : queue->second.by_age) {
      if (Live(*entry) && !visit(*entry)) return;
    }
  }
}

std::vector<PendingRef> PendingQueues::Heads(NameId team, bool by_priority, size_t limit) const {
  std::shared_lock lock(mu_);
  std::vector<PendingRef> out;
  if (limit == 0) return out;
  VisitLiveLocked(team, by_priority, [&](const Entry& entry) {
    out.push_back(entry.pod);
    return out.size() < limit;
  });
  return out;
}

std::vector<PendingQueues::Refused> PendingQueues::RefusedHeads(NameId team, bool by_priority,
                                                                size_t limit) const {
  std::shared_lock lock(mu_);
  std::vector<Refused> out;
  if (limit == 0) return out;
  VisitLiveLocked(team, by_priority, [&](const Entry& entry) {
    if (entry.refused) {
      out.push_back({entry.pod, entry.last_seen_ms.load(std::memory_order_relaxed)});
    }
    return out.size() < limit;
  });
  return out;
}

std::optional<PendingPod> PendingQueues::Find(std::string_view uid) const {
  std::shared_lock lock(mu_);
  auto it = pending_.find(uid);
  if (it == pending_.end() || !Live(it->second)) return std::nullopt;
  return *it->second.pod;
}

std::vector<PendingQueues::Queued> PendingQueues::QueueOf(NameId team, bool by_priority) {
  Sync();
  std::shared_lock lock(mu_);
  std::vector<Queued> out;
  auto queue = queues_.find(team);
  if (queue == queues_.end()) return out;
  auto visit = [&](const Entry& entry) {
    if (Live(entry)) {
      out.push_back(Queued{*entry.pod, entry.refused, entry.refused_ms});
      out.back().pod.refusal = entry.refusal;
    }
  };
  if (by_priority) {
    for (const auto& [key, entry] : queue->second.by_priority) visit(*entry);
  } else {
    for (const auto& [key, entry] : queue->second.by_age) visit(*entry);
  }
  return out;
}

PendingQueues::Counts PendingQueues::CountsOf(NameId team) {
  Sync();
  std::shared_lock lock(mu_);
  Counts n;
  auto queue = queues_.find(team);
  if (queue == queues_.end()) return n;
  struct Gang {
    bool refused = false;   // a member was refused
    bool topology = false;  // for its topology
  };
  std::unordered_map<std::string_view, Gang> gangs;  // by workload
  for (const auto& [key, queued] : queue->second.by_age) {
    if (!Live(*queued)) continue;
    const Entry& entry = *queued;
    const bool topology = entry.refused && entry.topology;
    ++n.total;
    if (entry.refused) ++n.refused;
    if (entry.pod->workload.empty()) {
      ++n.workloads;
      if (entry.refused) ++n.refused_workloads;
      if (topology) ++n.topology_workloads;
    } else {
      Gang& gang = gangs[entry.pod->workload];
      gang.refused = gang.refused || entry.refused;
      gang.topology = gang.topology || topology;
    }
  }
  for (const auto& [workload, gang] : gangs) {
    ++n.workloads;
    if (gang.refused) ++n.refused_workloads;
    if (gang.topology) ++n.topology_workloads;
  }
  return n;
}

}  // namespace taskgov::scheduler::state
