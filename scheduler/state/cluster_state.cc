#include "scheduler/state/cluster_state.h"

#include <algorithm>
#include <mutex>

#include "common/log.h"

namespace taskgov::scheduler {
namespace {

constexpr std::string_view kComponent = "cluster";

bool GovernsPod(const Pod& pod) { return !pod.terminal(); }

int64_t AmountOf(const IdAmounts& list, NameId id) {
  for (const auto& [key, amount] : list) {
    if (key == id) return amount;
  }
  return -1;  // absent
}

}  // namespace

void ClusterState::SyncIds(NodeRecord& record) {
  record.allocatable_ids = ToIdAmounts(record.allocatable);
  record.used_ids = ToIdAmounts(record.used);
}

ClusterState::ClusterState(QuotaBook* book, const common::Clock* clock, Options options)
    : book_(book), clock_(clock), options_(std::move(options)), policy_(book->ledger().policy()) {}

void ClusterState::SetPolicy(PolicyPtr policy) {
  std::unique_lock lock(mu_);
  policy_ = std::move(policy);
  for (auto& [name, record] : nodes_) {
    const std::string flavor = policy_->FlavorOfNode(record.placement->labels);
    record.flavor = flavor.empty() ? kNoNode : FlavorNames().Intern(flavor);
  }
  // Pending pods may belong to other teams now.
  std::vector<PendingEntry> entries;
  for (auto& [uid, entry] : pending_) entries.push_back(entry);
  pending_.clear();
  queues_.clear();
  for (PendingEntry& entry : entries) {
    auto it = pods_.find(entry.pod.uid);
    if (it != pods_.end()) {
      entry.pod.team = ResolveTeamLocked(it->second.pod);
      entry.pod.priority = ResolvePriority(*policy_, it->second.pod);
    }
    if (entry.pod.team != kNoTeam) AddPending(entry.pod, entry.from_informer);
  }
}

NameId ClusterState::ResolveTeamLocked(const Pod& pod) const {
  const Team* team = ResolveTeam(*policy_, pod, &live_);
  return team == nullptr ? kNoTeam : TeamNames().Intern(team->name);
}

// ---- pods ----

void ClusterState::Account(PodRecord& record) {
  const Pod& pod = record.pod;
  if (!pod.bound() || !GovernsPod(pod) || !record.counted_node.empty()) return;
  auto node = nodes_.find(pod.node_name);
  if (node == nodes_.end()) {
    awaiting_node_[pod.node_name].insert(pod.uid);  // charged when the node shows up
    return;
  }
  awaiting_node_[pod.node_name].erase(pod.uid);
  NodeRecord& n = node->second;
  n.used.Add(record.request);
  SyncIds(n);
  record.counted_node = pod.node_name;
  // A pod bound before taskgov saw it ran since its start time.
  if (record.bound_ms == 0) record.bound_ms = pod.start_unix_ms.value_or(clock_->NowMs());
  ChargeLocked(record, n);
}

void ClusterState::ChargeLocked(PodRecord& record, NodeRecord& node) {
  const Pod& pod = record.pod;
  if (record.team == kNoTeam || node.flavor == kNoNode) return;
  PodMeta meta;
  meta.priority = ResolvePriority(*policy_, pod);
  meta.created_ms = pod.creation_unix_ms;
  meta.admitted_ms = pod.start_unix_ms.value_or(0);
  meta.node = NodeNames().Intern(pod.node_name);
  book_->ConfirmBound(pod.uid, record.team, node.flavor, record.request, meta);
  record.charged = true;
  if (std::optional<Reservation> r = book_->Find(pod.uid); r && r->charge.borrowing) {
    ++node.borrowing_pods;
  }
}

ClusterState::ReservationDrift ClusterState::ReconcileReservations(int64_t min_age_ms) {
  std::unique_lock lock(mu_);
  ReservationDrift drift;
  if (!pods_synced_ || !nodes_synced_) return drift;
  const int64_t now = clock_->NowMs();
  // Bound reservations of pods that are not running here: gone without a DELETED we saw. A
  // young one may be a pod we bound whose update has not arrived yet: left alone.
  std::vector<std::string> orphans;
  book_->ForEach([&](std::string_view uid, const Reservation& r) {
    if (r.state != ReservationState::kBound || now - r.meta.admitted_ms < min_age_ms) return;
    auto it = pods_.find(std::string(uid));
    if (it == pods_.end() || it->second.counted_node.empty()) orphans.emplace_back(uid);
  });
  for (const std::string& uid : orphans) {
    if (book_->Release(uid)) drift.released.push_back(uid);
  }
  // Running pods counted on a node but holding no reservation: charged again.
  for (auto& [uid, record] : pods_) {
    if (record.counted_node.empty() || book_->Find(uid)) continue;
    auto node = nodes_.find(record.counted_node);
    if (node == nodes_.end()) continue;
    ChargeLocked(record, node->second);
    if (record.charged) drift.charged.push_back(uid);
  }
  return drift;
}

void ClusterState::Notify(const PodRecord& record, PodTransition transition) {
  if (!lifecycle_) return;
  const std::string priority_class = PriorityClassOf(*policy_, record.pod);
  PodLifecycle event;
  event.pod = &record.pod;
  event.team = record.team;
  event.priority_class = priority_class;
  event.transition = transition;
  event.now_ms = clock_->NowMs();
  event.bound_ms = record.bound_ms != 0 ? record.bound_ms : event.now_ms;
  lifecycle_(event);
}

void ClusterState::Unaccount(PodRecord& record) {
  if (!record.counted_node.empty()) Notify(record, PodTransition::kEnded);
  if (!record.counted_node.empty()) {
    auto node = nodes_.find(record.counted_node);
    if (node != nodes_.end()) {
      ResourceList negative;
      for (const ResourceAmount& r : record.request) negative.Set(r.name, -r.amount);
      node->second.used.Add(negative);
      node->second.used.DropZeros();
      SyncIds(node->second);
      if (record.charged) {
        if (std::optional<Reservation> r = book_->Find(record.pod.uid); r && r->charge.borrowing) {
          node->second.borrowing_pods = std::max(0, node->second.borrowing_pods - 1);
        }
      }
    }
    record.counted_node.clear();
  }
  if (!record.pod.node_name.empty()) {
    auto waiting = awaiting_node_.find(record.pod.node_name);
    if (waiting != awaiting_node_.end()) waiting->second.erase(record.pod.uid);
  }
  book_->Release(record.pod.uid);
  record.charged = false;
}

void ClusterState::OnPodUpsert(const Pod& pod) {
  std::unique_lock lock(mu_);
  auto [it, inserted] = pods_.try_emplace(pod.uid);
  if (inserted) {
    // A predecessor of the same name is gone: the API server admits a new pod of a name only
    // once the old object is deleted. Release it now rather than count both until its DELETED.
    const size_t hash = NameHash(pod.namespace_, pod.name);
    auto [b, e] = uid_by_name_.equal_range(hash);
    for (auto n = b; n != e; ++n) {
      auto old = pods_.find(std::string(n->second));
      if (old == pods_.end() || old->second.pod.namespace_ != pod.namespace_ ||
          old->second.pod.name != pod.name) {
        continue;
      }
      common::log::Info(kComponent, "pod replaced under a new uid before its deletion was seen",
                        {{"pod", pod.key()}, {"old_uid", old->first}, {"uid", pod.uid}});
      RemovePending(old->first);
      Unaccount(old->second);
      ErasePodLocked(old);
      break;
    }
    uid_by_name_.emplace(hash, std::string_view(it->first));
  }
  PodRecord& record = it->second;
  const bool was_pending = !inserted && record.pod.node_name.empty();
  const bool node_changed = !inserted && record.pod.node_name != pod.node_name;
  if (!inserted && (node_changed || pod.terminal())) Unaccount(record);
  record.request = EffectiveRequest(pod);
  record.pod = KeptPart(pod, record.request);
  if (record.team == kNoTeam || inserted) record.team = ResolveTeamLocked(pod);
  if (pod.terminal()) {
    RemovePending(pod.uid);
    book_->Release(pod.uid);
    return;
  }
  if (pod.bound()) {
    RemovePending(pod.uid);
    Account(record);
    if (was_pending) Notify(record, PodTransition::kBound);
    return;
  }
  // Waiting for a scheduler.
  if (pod.scheduler_name == options_.scheduler_name && record.team != kNoTeam &&
      !pod.deletion_unix_ms && !book_->Find(pod.uid)) {
    PendingPod pending;
    pending.uid = pod.uid;
    pending.key = pod.key();
    pending.team = record.team;
    pending.priority = ResolvePriority(*policy_, pod);
    pending.created_ms = pod.creation_unix_ms;
    pending.request = record.request;
    pending.node_selector = pod.node_selector;
    pending.placement = pod.placement;
    AddPending(pending, /*from_informer=*/true);
  } else {
    RemovePending(pod.uid);
  }
}

void ClusterState::OnPodDelete(const Pod& last_known) {
  std::unique_lock lock(mu_);
  RemovePending(last_known.uid);
  auto it = pods_.find(last_known.uid);
  if (it == pods_.end()) {
    book_->Release(last_known.uid);  // e.g. only ever seen in a filter call
    return;
  }
  Unaccount(it->second);
  ErasePodLocked(it);
}

size_t ClusterState::NameHash(std::string_view ns, std::string_view name) {
  const size_t h = std::hash<std::string_view>{}(ns);
  return h ^ (std::hash<std::string_view>{}(name) + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2));
}

void ClusterState::ErasePodLocked(std::unordered_map<std::string, PodRecord>::iterator it) {
  auto [b, e] = uid_by_name_.equal_range(NameHash(it->second.pod.namespace_, it->second.pod.name));
  for (auto n = b; n != e; ++n) {
    if (n->second.data() == it->first.data()) {
      uid_by_name_.erase(n);
      break;
    }
  }
  pods_.erase(it);
}

// ---- nodes ----

void ClusterState::OnNodeUpsert(const Node& node) {
  std::unique_lock lock(mu_);
  NodeRecord& record = nodes_[node.name];
  record.placement = std::make_shared<const NodePlacement>(PlacementOf(node));
  record.allocatable = node.allocatable;
  record.schedulable = !node.unschedulable && node.ready;
  const std::string flavor = policy_->FlavorOfNode(node.labels);
  record.flavor = flavor.empty() ? kNoNode : FlavorNames().Intern(flavor);
  SyncIds(record);
  auto waiting = awaiting_node_.find(node.name);
  if (waiting == awaiting_node_.end()) return;
  std::set<std::string> uids = std::move(waiting->second);
  awaiting_node_.erase(waiting);
  for (const std::string& uid : uids) {
    auto pod = pods_.find(uid);
    if (pod != pods_.end()) Account(pod->second);
  }
}

void ClusterState::OnNodeDelete(const std::string& name) {
  std::unique_lock lock(mu_);
  if (nodes_.erase(name) == 0) return;
  // Pods still bound there keep their charges; they count on the node again if it returns.
  for (auto& [uid, record] : pods_) {
    if (record.counted_node == name) {
      record.counted_node.clear();
      awaiting_node_[name].insert(uid);
    }
  }
}

// ---- namespaces, queues ----

void ClusterState::OnNamespaceUpsert(const std::string& name, const Labels& labels) {
  std::unique_lock lock(mu_);
  live_.namespace_labels[name] = labels;
}

void ClusterState::OnNamespaceDelete(const std::string& name) {
  std::unique_lock lock(mu_);
  live_.namespace_labels.erase(name);
}

void ClusterState::OnLocalQueueUpsert(const std::string& ns, const std::string& name,
                                      const std::string& cluster_queue) {
  std::unique_lock lock(mu_);
  live_.local_queues[{ns, name}] = cluster_queue;
}

void ClusterState::OnLocalQueueDelete(const std::string& ns, const std::string& name) {
  std::unique_lock lock(mu_);
  live_.local_queues.erase({ns, name});
}

void ClusterState::OnPodGroupUpsert(const std::string& ns, const std::string& name,
                                    const std::string& queue, int64_t) {
  std::unique_lock lock(mu_);
  live_.pod_groups[{ns, name}] = queue;
}

void ClusterState::OnPodGroupDelete(const std::string& ns, const std::string& name) {
  std::unique_lock lock(mu_);
  live_.pod_groups.erase({ns, name});
}

void ClusterState::OnSynced(ObjectKind kind) {
  std::unique_lock lock(mu_);
  if (kind == ObjectKind::kPod) pods_synced_ = true;
  if (kind == ObjectKind::kNode) nodes_synced_ = true;
  common::log::Info(kComponent, "synced",
                    {{"kind", kind == ObjectKind::kPod    ? "pods"
                              : kind == ObjectKind::kNode ? "nodes"
                                                          : "other"},
                     {"pods", static_cast<int64_t>(pods_.size())},
                     {"nodes", static_cast<int64_t>(nodes_.size())}});
}

bool ClusterState::synced() const {
  std::shared_lock lock(mu_);
  return pods_synced_ && nodes_synced_;
}

// ---- queries ----

void ClusterState::FitNodes(const std::vector<std::string>& names, const IdAmounts& request,
                            std::vector<NodeFit>* out) const {
  std::shared_lock lock(mu_);
  out->assign(names.size(), NodeFit{});
  for (size_t i = 0; i < names.size(); ++i) {
    auto it = nodes_.find(names[i]);
    if (it == nodes_.end()) continue;
    const NodeRecord& n = it->second;
    NodeFit& fit = (*out)[i];
    fit.known = true;
    fit.flavor = n.flavor;
    fit.room = n.schedulable;
    for (const auto& [id, amount] : request) {
      if (!fit.room) break;
      const int64_t allocatable = AmountOf(n.allocatable_ids, id);
      const int64_t used = std::max<int64_t>(0, AmountOf(n.used_ids, id));
      fit.room = allocatable >= 0 && SaturatingAdd(used, amount) <= allocatable;
    }
  }
}

void ClusterState::PackNodes(const std::vector<std::string>& names, NameId resource,
                             std::vector<NodePacking>* out) const {
  std::shared_lock lock(mu_);
  out->assign(names.size(), NodePacking{});
  for (size_t i = 0; i < names.size(); ++i) {
    auto it = nodes_.find(names[i]);
    if (it == nodes_.end()) continue;
    const NodeRecord& n = it->second;
    NodePacking& p = (*out)[i];
    p.known = true;
    p.flavor = n.flavor;
    p.allocatable = std::max<int64_t>(0, AmountOf(n.allocatable_ids, resource));
    p.used = std::max<int64_t>(0, AmountOf(n.used_ids, resource));
    p.borrowing_pods = n.borrowing_pods;
  }
}

void ClusterState::ViewNodes(const std::vector<std::string>& names,
                             std::vector<NodeView>* out) const {
  std::shared_lock lock(mu_);
  out->clear();
  out->resize(names.size());
  for (size_t i = 0; i < names.size(); ++i) {
    auto it = nodes_.find(names[i]);
    if (it == nodes_.end()) continue;
    NodeView& v = (*out)[i];
    v.known = true;
    v.flavor = it->second.flavor;
    v.schedulable = it->second.schedulable;
    v.allocatable = it->second.allocatable;
    v.used = it->second.used;
    v.borrowing_pods = it->second.borrowing_pods;
    v.placement = it->second.placement;
  }
}

NodeView ClusterState::ViewNode(const std::string& name) const {
  std::vector<NodeView> out;
  ViewNodes({name}, &out);
  return out[0];
}

NameId ClusterState::FlavorOfLabels(const Labels& labels) const {
  std::shared_lock lock(mu_);
  const std::string flavor = policy_->FlavorOfNode(labels);
  return flavor.empty() ? kNoNode : FlavorNames().Intern(flavor);
}

std::optional<Pod> ClusterState::FindPod(std::string_view uid) const {
  std::shared_lock lock(mu_);
  auto it = pods_.find(std::string(uid));
  if (it == pods_.end()) return std::nullopt;
  return it->second.pod;
}

NameId ClusterState::TeamOf(const Pod& pod) const {
  std::shared_lock lock(mu_);
  return ResolveTeamLocked(pod);
}

LiveQueues ClusterState::live_queues() const {
  std::shared_lock lock(mu_);
  return live_;
}

std::vector<Pod> ClusterState::PodsOnNode(const std::string& node) const {
  std::shared_lock lock(mu_);
  std::vector<Pod> out;
  for (const auto& [uid, record] : pods_) {
    if (record.pod.node_name == node && !record.pod.terminal()) out.push_back(record.pod);
  }
  return out;
}

void ClusterState::ForEachBoundPod(
    const std::function<void(const Pod& pod, NameId team, const ResourceList& request)>& fn) const {
  std::shared_lock lock(mu_);
  for (const auto& [uid, record] : pods_) {
    if (record.pod.bound() && !record.pod.terminal()) fn(record.pod, record.team, record.request);
  }
}

std::vector<std::pair<std::string, NodeView>> ClusterState::NodesOfFlavor(NameId flavor) const {
  std::shared_lock lock(mu_);
  std::vector<std::pair<std::string, NodeView>> out;
  for (const auto& [name, record] : nodes_) {
    if (record.flavor != flavor) continue;
    NodeView v;
    v.known = true;
    v.flavor = record.flavor;
    v.schedulable = record.schedulable;
    v.allocatable = record.allocatable;
    v.used = record.used;
    v.borrowing_pods = record.borrowing_pods;
    v.placement = record.placement;
    out.emplace_back(name, std::move(v));
  }
  return out;
}

// ---- pending ----

void ClusterState::AddPending(const PendingPod& pod, bool from_informer) {
  auto [it, inserted] = pending_.try_emplace(pod.uid);
  PendingEntry& entry = it->second;
  if (!inserted) {
    TeamQueue& old = queues_[entry.pod.team];
    old.by_priority.erase(PriorityKey{-int64_t{entry.pod.priority}, entry.pod.created_ms, pod.uid});
    old.by_age.erase(AgeKey{entry.pod.created_ms, pod.uid});
  }
  entry.pod = pod;
  entry.last_seen_ms = clock_->NowMs();
  entry.from_informer = entry.from_informer || from_informer;
  entry.refused = entry.refused || !from_informer;  // NotePending: after a refusing filter
  TeamQueue& queue = queues_[pod.team];
  queue.by_priority.emplace(-int64_t{pod.priority}, pod.created_ms, pod.uid);
  queue.by_age.emplace(pod.created_ms, pod.uid);
}

void ClusterState::RemovePending(const std::string& uid) {
  auto it = pending_.find(uid);
  if (it == pending_.end()) return;
  const PendingPod& pod = it->second.pod;
  TeamQueue& queue = queues_[pod.team];
  queue.by_priority.erase(PriorityKey{-int64_t{pod.priority}, pod.created_ms, uid});
  queue.by_age.erase(AgeKey{pod.created_ms, uid});
  pending_.erase(it);
}

bool ClusterState::Live(const PendingEntry& entry) const {
  return entry.from_informer || clock_->NowMs() - entry.last_seen_ms <= options_.filter_seen_ttl_ms;
}

void ClusterState::NotePending(const Pod& pod, NameId team, int32_t priority,
                               const ResourceList& request) {
  if (team == kNoTeam) return;
  std::unique_lock lock(mu_);
  PendingPod pending;
  pending.uid = pod.uid;
  pending.key = pod.key();
  pending.team = team;
  pending.priority = priority;
  pending.created_ms = pod.creation_unix_ms;
  pending.request = request;
  pending.node_selector = pod.node_selector;
  pending.placement = pod.placement;
  AddPending(pending, /*from_informer=*/false);
}

void ClusterState::NoteAdmitted(std::string_view uid) {
  std::unique_lock lock(mu_);
  RemovePending(std::string(uid));
}

std::vector<PendingPod> ClusterState::PendingAhead(NameId team, int32_t priority,
                                                   int64_t created_ms, std::string_view uid,
                                                   bool by_priority, size_t limit) const {
  std::shared_lock lock(mu_);
  std::vector<PendingPod> out;
  auto queue = queues_.find(team);
  if (queue == queues_.end()) return out;
  auto take = [&](const std::string& other) {
    if (other == uid) return;
    auto it = pending_.find(other);
    if (it != pending_.end() && Live(it->second)) out.push_back(it->second.pod);
  };
  if (by_priority) {
    const PriorityKey self{-int64_t{priority}, created_ms, std::string(uid)};
    for (auto it = queue->second.by_priority.begin();
         it != queue->second.by_priority.end() && *it < self && out.size() < limit; ++it) {
      take(std::get<2>(*it));
    }
  } else {
    const AgeKey self{created_ms, std::string(uid)};
    for (auto it = queue->second.by_age.begin();
         it != queue->second.by_age.end() && *it < self && out.size() < limit; ++it) {
      take(std::get<1>(*it));
    }
  }
  return out;
}

std::optional<PendingPod> ClusterState::PendingHead(NameId team, bool by_priority) const {
  std::shared_lock lock(mu_);
  auto queue = queues_.find(team);
  if (queue == queues_.end()) return std::nullopt;
  auto visit = [&](const std::string& uid) -> std::optional<PendingPod> {
    auto it = pending_.find(uid);
    if (it != pending_.end() && Live(it->second)) return it->second.pod;
    return std::nullopt;
  };
  if (by_priority) {
    for (const PriorityKey& key : queue->second.by_priority) {
      if (auto pod = visit(std::get<2>(key))) return pod;
    }
  } else {
    for (const AgeKey& key : queue->second.by_age) {
      if (auto pod = visit(std::get<1>(key))) return pod;
    }
  }
  return std::nullopt;
}

std::unordered_map<NameId, size_t> ClusterState::RunningByTeam() const {
  std::shared_lock lock(mu_);
  std::unordered_map<NameId, size_t> out;
  for (const auto& [uid, record] : pods_) {
    if (record.team != kNoTeam && record.pod.bound() && !record.pod.terminal()) ++out[record.team];
  }
  return out;
}

ClusterState::PendingCounts ClusterState::pending_counts(NameId team) const {
  std::shared_lock lock(mu_);
  PendingCounts n;
  auto queue = queues_.find(team);
  if (queue == queues_.end()) return n;
  for (const AgeKey& key : queue->second.by_age) {
    auto it = pending_.find(std::get<1>(key));
    if (it == pending_.end() || !Live(it->second)) continue;
    ++n.total;
    if (it->second.refused) ++n.refused;
  }
  return n;
}

}  // namespace taskgov::scheduler
