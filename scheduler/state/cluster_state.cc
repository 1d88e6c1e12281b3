#include "scheduler/state/cluster_state.h"

#include "scheduler/model/gang.h"

#include <mutex>
#include <utility>

#include "scheduler/common/log.h"

namespace taskgov::scheduler::state {

using ledger::PodMeta;
using ledger::QuotaBook;
using ledger::Reservation;
using ledger::ReservationState;
using model::EffectiveRequest;
using model::GangSource;
using model::KeptPod;
using model::Labels;
using model::NameId;
using model::Node;
using model::NodeNames;
using model::Pod;
using model::PodGroupKey;
using model::PodPhase;
using model::Policy;
using model::PolicyPtr;
using model::PriorityClassOf;
using model::ResolvePriority;
using model::ResourceList;
using model::TeamNames;
using model::WorkloadRef;

namespace {

constexpr std::string_view kComponent = "cluster";

// The informers whose objects declare gangs' sizes (TeamResolver::MarkSynced).
constexpr std::pair<ObjectKind, GangSource> kGangSourceKinds[] = {
    {ObjectKind::kPodGroup, GangSource::kPodGroup},
    {ObjectKind::kJob, GangSource::kJob},
    {ObjectKind::kJobSet, GangSource::kJobSet},
    {ObjectKind::kPyTorchJob, GangSource::kPyTorchJob},
    {ObjectKind::kTFJob, GangSource::kTFJob},
    {ObjectKind::kMPIJob, GangSource::kMPIJob},
    {ObjectKind::kXGBoostJob, GangSource::kXGBoostJob},
    {ObjectKind::kPaddleJob, GangSource::kPaddleJob},
    {ObjectKind::kJAXJob, GangSource::kJAXJob},
    {ObjectKind::kRayCluster, GangSource::kRayCluster},
};

// The effective request of an unpacked record (KeptPod::ToPod keeps it as pod-level requests).
const ResourceList& RequestOf(const Pod& kept) {
  static const ResourceList kNone;
  return kept.pod_requests ? *kept.pod_requests : kNone;
}

}  // namespace

ClusterState::ClusterState(QuotaBook* book, const common::Clock* clock, Options options)
    : book_(book),
      clock_(clock),
      options_(std::move(options)),
      pending_(clock, PendingQueues::Options{options_.filter_seen_ttl_ms}),
      teams_(book->ledger().policy()) {}

void ClusterState::SetPolicy(PolicyPtr policy) {
  std::lock_guard lock(mu_);
  teams_.SetPolicy(policy);
  nodes_.Reflavor(*policy);
  // Pending pods may belong to other teams now, or rank differently.
  pending_.Retarget([&](PendingPod& pending) { RependLocked(pending); });
  // Priorities and classes follow the policy, and the counted pods their nodes' flavors.
  for (PodEntry& entry : pods_) {
    PodRecord& record = entry.second;
    if (record.counted()) {
      SetFlavorLocked(entry, nodes_.FlavorOf(NodeNames().Name(record.counted_node)));
    }
    const Pod kept = record.pod->ToPod();
    record.priority = ResolvePriority(*policy, kept);
    TabulateLocked(record, kept);
  }
}

// ---- pods ----

void ClusterState::SetFlavorLocked(PodEntry& entry, NameId flavor) {
  PodRecord& record = entry.second;
  if (record.flavor == flavor) return;
  if (record.flavor != kNoFlavor) {
    std::vector<PodEntry*>& slots = by_flavor_[record.flavor];
    PodEntry* last = slots.back();
    slots[record.flavor_slot] = last;
    last->second.flavor_slot = record.flavor_slot;
    slots.pop_back();
  }
  record.flavor = flavor;
  if (flavor != kNoFlavor) {
    std::vector<PodEntry*>& slots = by_flavor_[flavor];
    record.flavor_slot = static_cast<uint32_t>(slots.size());
    slots.push_back(&entry);
  }
}

void ClusterState::Account(PodEntry& entry, const Pod& pod, const ResourceList& request) {
  PodRecord& record = entry.second;
  if (!pod.bound() || pod.terminal() || record.counted()) return;
  const std::optional<NameId> flavor =
      nodes_.AddUsage(pod.node_name, request, state::Holder{pod.uid, record.pod->gang()});
  if (!flavor) {
    awaiting_node_[pod.node_name].insert(pod.uid);  // counted when the node shows up
    return;
  }
  awaiting_node_[pod.node_name].erase(pod.uid);
  record.counted_node = record.pod->node();
  SetFlavorLocked(entry, *flavor);
  // A pod bound before taskgov saw it ran since its start time.
  if (record.bound_ms == 0) record.bound_ms = pod.start_unix_ms.value_or(clock_->NowMs());
  ChargeLocked(record, pod, request, *flavor);
}

void ClusterState::NoteUngovernedLocked(const PodRecord& record, const Pod& pod,
                                        const ResourceList& request) {
  auto [it, inserted] = ungoverned_.try_emplace(pod.key());
  UngovernedPod& u = it->second;
  u = UngovernedPod{pod.namespace_, pod.name,    pod.uid, pod.scheduler_name,
                    pod.node_name,  record.team, request};
  if (!inserted) return;
  common::log::Warn(kComponent,
                    "a pod of a governed namespace was bound by another scheduler: it counts "
                    "against its team's quota, but taskgov did not admit it",
                    {{"pod", pod.key()},
                     {"team", TeamNames().Name(record.team)},
                     {"scheduler", pod.scheduler_name},
                     {"node", pod.node_name},
                     {"fix", "set spec.schedulerName: " + options_.scheduler_name}});
}

void ClusterState::ChargeLocked(PodRecord& record, const Pod& pod, const ResourceList& request,
                                NameId flavor) {
  if (record.team == kNoTeam || flavor == kNoFlavor) return;
  PodMeta meta;
  meta.priority = record.priority;
  meta.created_ms = pod.creation_unix_ms;
  meta.admitted_ms = pod.start_unix_ms.value_or(0);
  meta.node = NodeNames().Intern(pod.node_name);
  if (WorkloadRef workload = teams_.WorkloadOf(pod); workload.gang()) {
    meta.workload = std::move(workload.key);
  }
  book_->ConfirmBound(pod.uid, record.team, flavor, request, meta);
  record.charged = true;
  if (pod.scheduler_name != options_.scheduler_name) NoteUngovernedLocked(record, pod, request);
  if (std::optional<Reservation> r = book_->Find(pod.uid); r && r->charge.borrowing) {
    record.borrowing = true;
    nodes_.AddBorrower(pod.node_name);
  }
}

ClusterState::ReservationDrift ClusterState::ReconcileReservations(int64_t min_age_ms) {
  std::lock_guard lock(mu_);
  ReservationDrift drift;
  if (!synced()) return drift;
  const int64_t now = clock_->NowMs();
  // Bound reservations of pods that are not running here: gone without a DELETED we saw. A
  // young one may be a pod we bound whose update has not arrived yet: left alone.
  std::vector<std::string> orphans;
  book_->ForEach([&](std::string_view uid, const Reservation& r) {
    if (r.state != ReservationState::kBound || now - r.meta.admitted_ms < min_age_ms) return;
    auto it = pods_.find(uid);
    if (it == pods_.end() || !it->second.counted()) orphans.emplace_back(uid);
  });
  for (const std::string& uid : orphans) {
    if (book_->Release(uid)) drift.released.push_back(uid);
  }
  // Running pods counted on a node but holding no reservation: charged again.
  for (auto& [uid, record] : pods_) {
    if (!record.counted() || book_->Find(uid)) continue;
    const std::string& node = NodeNames().Name(record.counted_node);
    if (!nodes_.Contains(node)) continue;
    const Pod kept = record.pod->ToPod();
    ChargeLocked(record, kept, RequestOf(kept), nodes_.FlavorOf(node));
    if (record.charged) drift.charged.emplace_back(uid);
  }
  return drift;
}

void ClusterState::Notify(const PodRecord& record, const Pod& pod, PodTransition transition) {
  if (!lifecycle_) return;
  const std::string priority_class = PriorityClassOf(*teams_.policy(), pod);
  PodLifecycle event;
  event.pod = &pod;
  event.team = record.team;
  event.priority_class = priority_class;
  event.transition = transition;
  event.now_ms = clock_->NowMs();
  event.bound_ms = record.bound_ms != 0 ? record.bound_ms : event.now_ms;
  lifecycle_(event);
}

void ClusterState::Unaccount(PodEntry& entry, std::optional<model::PodPhase> final_phase) {
  const std::string_view uid = entry.first;
  PodRecord& record = entry.second;
  if (record.counted()) {
    Pod kept = record.pod->ToPod();
    if (final_phase) kept.phase = *final_phase;
    if (kept.scheduler_name != options_.scheduler_name) ungoverned_.erase(kept.key());
    Notify(record, kept, PodTransition::kEnded);
    nodes_.RemoveUsage(NodeNames().Name(record.counted_node), RequestOf(kept), record.borrowing);
    record.counted_node = KeptPod::kNoNode;
    SetFlavorLocked(entry, kNoFlavor);
    record.borrowing = false;
  }
  if (record.pod->bound()) {
    auto waiting = awaiting_node_.find(record.pod->node_name());
    if (waiting != awaiting_node_.end()) waiting->second.erase(std::string(uid));
  }
  (void)book_->Release(uid);  // false: it held no reservation
  record.charged = false;
}

void ClusterState::ReleaseSameNameLocked(const Pod& pod) {
  // A predecessor of the same name is gone: the API server admits a new pod of a name only
  // once the old object is deleted. Release it now rather than count both until its DELETED.
  auto [b, e] = entry_by_name_.equal_range(NameHash(pod.namespace_, pod.name));
  for (auto n = b; n != e; ++n) {
    const KeptPod& other = *n->second->second.pod;
    if (other.ns() != pod.namespace_ || other.name() != pod.name) continue;
    auto old = pods_.find(n->second->first);
    common::log::Info(kComponent, "pod replaced under a new uid before its deletion was seen",
                      {{"pod", pod.key()}, {"old_uid", old->first}, {"uid", pod.uid}});
    pending_.Remove(std::string(old->first));
    Unaccount(*old);
    ErasePodLocked(old);
    return;
  }
}

void ClusterState::NotePendingFromInformer(const PodRecord& record, const Pod& pod,
                                           const ResourceList& request) {
  pending_.Upsert(PendingPodOf(pod, record.team, record.priority, request, teams_.WorkloadOf(pod)));
}

void ClusterState::OnPodUpsert(const Pod& pod) {
  {
    const ResourceList effective = EffectiveRequest(pod);
    auto kept = std::make_shared<const KeptPod>(pod, effective);
    std::lock_guard lock(mu_);
    // A pod's node never changes once set: an event that shows a bound pod unbound is older than
    // what made it bound — here, the bind verb's NoteBound ahead of the watch (a status patch
    // from a failed scheduling attempt may still be in the pipe). Applying it would take the pod
    // off its node and release its quota until the bound event comes. (Looked up only for such
    // events.)
    if (!pod.bound() && !pod.terminal() && !pod.deletion_unix_ms) {
      if (auto found = pods_.find(pod.uid); found != pods_.end() && found->second.pod->bound()) {
        return;
      }
    }
    TabulateLocked(UpsertLocked(pod, effective, std::move(kept)).second, pod);
  }
  if (pod.terminal() && pod_gone_) pod_gone_(pod.uid);
}

void ClusterState::NoteBound(const std::string& uid, const std::string& node) {
  std::lock_guard lock(mu_);
  auto found = pods_.find(uid);
  if (found == pods_.end() || found->second.pod->bound()) return;
  Pod pod = found->second.pod->ToPod();
  pod.node_name = node;
  const ResourceList effective = EffectiveRequest(pod);
  auto kept = std::make_shared<const KeptPod>(pod, effective);
  TabulateLocked(UpsertLocked(pod, effective, std::move(kept)).second, pod);
}

ClusterState::PodEntry& ClusterState::UpsertLocked(const Pod& pod, const ResourceList& effective,
                                                   std::shared_ptr<const KeptPod> kept) {
  auto found = pods_.find(pod.uid);
  const bool inserted = found == pods_.end();
  if (inserted) {
    ReleaseSameNameLocked(pod);
    found = pods_.try_emplace(kept->uid()).first;
    found->second.pod = kept;
    entry_by_name_.emplace(NameHash(pod.namespace_, pod.name), &*found);
  }
  PodRecord& record = found->second;
  const bool was_pending = !inserted && !record.pod->bound();
  // A pod that leaves a node it was bound to is taken off it; a pending pod that is now bound is
  // not: its assumed reservation is confirmed as it is (Account), never released and charged
  // again — a filter in between would see the quota free and over-admit.
  const bool left_node = !was_pending && !inserted && record.pod->node_name() != pod.node_name;
  // A member that completed leaves its gang without making it wait for a replacement.
  if (pod.phase == PodPhase::kSucceeded) book_->DetachFromGang(pod.uid, /*lost=*/false);
  if (!inserted && (left_node || pod.terminal())) Unaccount(*found);
  // Packed once; the rest of the event reads the pod it reports (what taskgov reads of it is
  // what the packed form keeps).
  if (!inserted) found = Repack(found, std::move(kept));
  PodEntry& entry = *found;
  if (record.team == kNoTeam || inserted) record.team = teams_.TeamOf(pod);
  record.priority = ResolvePriority(*teams_.policy(), pod);
  if (pod.terminal()) {
    pending_.Remove(pod.uid);
    (void)book_->Release(pod.uid);
    return entry;
  }
  if (pod.bound()) {
    pending_.Remove(pod.uid);
    Account(entry, pod, effective);
    // Terminating: it keeps its quota until gone, but its gang no longer counts on it.
    if (pod.deletion_unix_ms) book_->DetachFromGang(pod.uid, /*lost=*/true);
    if (was_pending) Notify(record, pod, PodTransition::kBound);
    return entry;
  }
  // Waiting for a scheduler.
  if (pod.scheduler_name == options_.scheduler_name && record.team != kNoTeam &&
      !pod.deletion_unix_ms && !book_->Find(pod.uid)) {
    NotePendingFromInformer(record, pod, effective);
    // A filter that admitted the pod since the Find above may have had its note applied before
    // this entry existed: look again now that it does (a later admission's note comes after it).
    if (book_->Find(pod.uid)) pending_.Remove(pod.uid);
  } else {
    pending_.Remove(pod.uid);
  }
  return entry;
}

ClusterState::Pods::iterator ClusterState::Repack(Pods::iterator it,
                                                  std::shared_ptr<const KeptPod> kept) {
  // Extracted while its key still views the old bytes; the node itself stays (by_flavor_ and
  // entry_by_name_ point at it).
  Pods::node_type node = pods_.extract(it);
  node.mapped().pod = std::move(kept);
  node.key() = node.mapped().pod->uid();
  return pods_.insert(std::move(node)).position;
}

void ClusterState::OnPodDelete(const Pod& last_known) {
  {
    std::lock_guard lock(mu_);
    DeleteLocked(last_known);
  }
  if (pod_gone_) pod_gone_(last_known.uid);
}

void ClusterState::DeleteLocked(const Pod& last_known) {
  pending_.Remove(last_known.uid);
  auto it = pods_.find(last_known.uid);
  if (it == pods_.end()) {
    (void)book_->Release(last_known.uid);  // e.g. only ever seen in a filter call
    return;
  }
  // A pod that left the watch because it ended is reported in its final phase.
  const bool ended = last_known.phase == model::PodPhase::kSucceeded ||
                     last_known.phase == model::PodPhase::kFailed;
  Unaccount(*it, ended ? std::optional<model::PodPhase>(last_known.phase) : std::nullopt);
  ErasePodLocked(it);
}

size_t ClusterState::NameHash(std::string_view ns, std::string_view name) {
  const size_t h = std::hash<std::string_view>{}(ns);
  return h ^ (std::hash<std::string_view>{}(name) + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2));
}

void ClusterState::ErasePodLocked(Pods::iterator it) {
  auto [b, e] = entry_by_name_.equal_range(NameHash(it->second.pod->ns(), it->second.pod->name()));
  for (auto n = b; n != e; ++n) {
    if (n->second == &*it) {
      entry_by_name_.erase(n);
      break;
    }
  }
  workloads_.Remove(it->first, it->second.pod->ns(), it->second.pod->name());
  SetFlavorLocked(*it, kNoFlavor);
  pods_.erase(it);
}

void ClusterState::TabulateLocked(const PodRecord& record, const Pod& pod) {
  if (record.team == kNoTeam || pod.terminal()) {
    workloads_.Remove(pod.uid, pod.namespace_, pod.name);
    return;
  }
  const Policy& policy = *teams_.policy();
  workloads_.Put(record.pod, record.team, teams_.WorkloadOf(pod), record.priority,
                 PriorityClassOf(policy, pod),
                 RequestedInstanceType(pod.node_selector, policy.instance_type_label));
}

// ---- nodes ----

void ClusterState::OnNodeUpsert(const Node& node) {
  std::lock_guard lock(mu_);
  nodes_.Upsert(node, *teams_.policy());
  auto waiting = awaiting_node_.find(node.name);
  if (waiting == awaiting_node_.end()) return;
  std::set<std::string> uids = std::move(waiting->second);
  awaiting_node_.erase(waiting);
  for (const std::string& uid : uids) {
    auto pod = pods_.find(uid);
    if (pod == pods_.end()) continue;
    const Pod kept = pod->second.pod->ToPod();
    Account(*pod, kept, RequestOf(kept));
  }
}

void ClusterState::OnNodeDelete(const std::string& name) {
  std::lock_guard lock(mu_);
  if (!nodes_.Erase(name)) return;
  // Pods still bound there keep their charges; they count on the node again if it returns.
  const std::optional<NameId> node = NodeNames().Find(name);
  if (!node) return;
  for (PodEntry& entry : pods_) {
    PodRecord& record = entry.second;
    if (record.counted_node == *node) {
      record.counted_node = KeptPod::kNoNode;
      SetFlavorLocked(entry, kNoFlavor);
      record.borrowing = false;
      awaiting_node_[name].emplace(entry.first);
    }
  }
}

// ---- namespaces, queues ----

void ClusterState::OnNamespaceUpsert(const std::string& name, const Labels& labels) {
  teams_.UpsertNamespace(name, labels);
}

void ClusterState::OnNamespaceDelete(const std::string& name) { teams_.EraseNamespace(name); }

void ClusterState::OnLocalQueueUpsert(const std::string& ns, const std::string& name,
                                      const std::string& cluster_queue) {
  teams_.UpsertLocalQueue(ns, name, cluster_queue);
}

void ClusterState::OnLocalQueueDelete(const std::string& ns, const std::string& name) {
  teams_.EraseLocalQueue(ns, name);
}

void ClusterState::OnPodGroupUpsert(const std::string& ns, const std::string& name,
                                    const std::string& queue, int64_t min_member) {
  if (teams_.UpsertPodGroup(ns, name, queue, min_member)) RegangPending(PodGroupKey(ns, name));
}

void ClusterState::OnPodGroupDelete(const std::string& ns, const std::string& name) {
  if (teams_.ErasePodGroup(ns, name)) RegangPending(PodGroupKey(ns, name));
}

void ClusterState::OnGangSizeUpsert(const std::string& workload, int64_t size) {
  if (teams_.UpsertGangSize(workload, size)) RegangPending(workload);
}

void ClusterState::OnGangSizeDelete(const std::string& workload) {
  if (teams_.EraseGangSize(workload)) RegangPending(workload);
}

void ClusterState::OnJobUpsert(std::shared_ptr<const model::JobControl> job) {
  if (!job->controlled_by.empty()) {
    // A RayJob's cluster: the quota held for the RayJob's resumption is its pods' now.
    if (book_->MoveGang(job->controlled_by, job->workload)) {
      common::log::Info(kComponent, "held quota moved to the job's new cluster",
                        {{"job", job->controlled_by}, {"cluster", job->display()}});
    }
    std::lock_guard lock(jobs_mu_);
    links_[job->workload] = job->controlled_by;
    return;
  }
  std::lock_guard lock(jobs_mu_);
  if (job->annotations.count(model::kSuspendedByAnnotation) > 0) {
    annotated_jobs_.insert(job->workload);
  } else {
    annotated_jobs_.erase(job->workload);
  }
  jobs_[job->workload] = std::move(job);
}

void ClusterState::OnJobDelete(const std::string& workload) {
  std::lock_guard lock(jobs_mu_);
  links_.erase(workload);
  jobs_.erase(workload);
  annotated_jobs_.erase(workload);
}

std::shared_ptr<const model::JobControl> ClusterState::JobOf(std::string_view workload) const {
  std::lock_guard lock(jobs_mu_);
  std::string key(workload);
  if (auto link = links_.find(key); link != links_.end()) key = link->second;
  auto it = jobs_.find(key);
  return it == jobs_.end() ? nullptr : it->second;
}

std::vector<std::shared_ptr<const model::JobControl>> ClusterState::PausedJobs() const {
  std::lock_guard lock(jobs_mu_);
  std::vector<std::shared_ptr<const model::JobControl>> out;
  out.reserve(annotated_jobs_.size());
  for (const std::string& workload : annotated_jobs_) out.push_back(jobs_.at(workload));
  return out;
}

void ClusterState::RegangPending(const std::string& gang) {
  // Its members may have arrived before the object declaring it (informers of different kinds
  // race): they wait in the queues as members of the gang it declares now, of its team.
  std::lock_guard lock(mu_);
  pending_.RetargetGang(gang, [&](PendingPod& pending) { RependLocked(pending); });
  // Its members' declared size (and a waiting member's team) changed.
  for (const std::string& uid : workloads_.MembersOf(gang)) {
    if (auto it = pods_.find(uid); it != pods_.end()) {
      const Pod kept = it->second.pod->ToPod();
      TabulateLocked(it->second, kept);
    }
  }
}

void ClusterState::RependLocked(PendingPod& pending) {
  auto it = pods_.find(pending.uid);
  if (it == pods_.end()) return;
  PodRecord& record = it->second;
  const Pod kept = record.pod->ToPod();
  record.team = teams_.TeamOf(kept);  // pending: nothing is charged to it yet
  record.priority = ResolvePriority(*teams_.policy(), kept);
  pending =
      PendingPodOf(kept, record.team, record.priority, RequestOf(kept), teams_.WorkloadOf(kept));
  // Its workload row is left to the callers: SetPolicy and RegangPending tabulate every pod they
  // re-rank once the queues are done.
}

void ClusterState::OnSynced(ObjectKind kind) {
  for (auto [object_kind, source] : kGangSourceKinds) {
    if (object_kind == kind) teams_.MarkSynced(source);
  }
  std::lock_guard lock(mu_);
  // release: a reader that sees the flag synced also sees everything listed before it.
  if (kind == ObjectKind::kPod) pods_synced_.store(true, std::memory_order_release);
  if (kind == ObjectKind::kNode) nodes_synced_.store(true, std::memory_order_release);
  common::log::Info(kComponent, "synced",
                    {{"kind", kind == ObjectKind::kPod    ? "pods"
                              : kind == ObjectKind::kNode ? "nodes"
                                                          : "other"},
                     {"pods", static_cast<int64_t>(pods_.size())},
                     {"nodes", static_cast<int64_t>(nodes_.size())}});
}

bool ClusterState::synced() const {
  // acquire: pairs with OnSynced's release.
  return pods_synced_.load(std::memory_order_acquire) &&
         nodes_synced_.load(std::memory_order_acquire);
}

// ---- queries ----

std::optional<Pod> ClusterState::FindPod(std::string_view uid) const {
  std::lock_guard lock(mu_);
  auto it = pods_.find(uid);
  if (it == pods_.end()) return std::nullopt;
  return it->second.pod->ToPod();
}

bool ClusterState::PodAlive(std::string_view uid) const {
  std::lock_guard lock(mu_);
  auto it = pods_.find(uid);
  return it != pods_.end() && !it->second.pod->terminal();
}

std::optional<DisruptionLog::BackOff> ClusterState::BackingOff(std::string_view workload,
                                                               int64_t now_ms) const {
  return disruptions_.BackingOff(workload, now_ms,
                                 [this](std::string_view uid) { return PodAlive(uid); });
}

void ClusterState::ForEachBoundPod(const std::function<void(const BoundPod& pod)>& fn,
                                   const std::vector<NameId>* flavors) const {
  std::lock_guard lock(mu_);
  auto visit = [&](const PodEntry& entry) {
    const PodRecord& record = entry.second;
    if (record.pod->bound() && !record.pod->terminal()) {
      fn(BoundPod{entry.first, *record.pod, record.team, record.priority});
    }
  };
  if (flavors == nullptr) {
    for (const PodEntry& entry : pods_) visit(entry);
    return;
  }
  for (NameId flavor : *flavors) {
    auto it = by_flavor_.find(flavor);
    if (it == by_flavor_.end()) continue;
    for (const PodEntry* entry : it->second) visit(*entry);
  }
}

std::vector<ClusterState::UngovernedPod> ClusterState::UngovernedPods() const {
  std::lock_guard lock(mu_);
  std::vector<UngovernedPod> out;
  out.reserve(ungoverned_.size());
  for (const auto& [key, pod] : ungoverned_) out.push_back(pod);
  return out;
}

std::unordered_map<NameId, size_t> ClusterState::UngovernedByTeam() const {
  std::lock_guard lock(mu_);
  std::unordered_map<NameId, size_t> out;
  for (const auto& [key, pod] : ungoverned_) ++out[pod.team];
  return out;
}

std::unordered_map<NameId, size_t> ClusterState::RunningByTeam() const {
  std::lock_guard lock(mu_);
  std::unordered_map<NameId, size_t> out;
  for (const auto& [uid, record] : pods_) {
    if (record.team != kNoTeam && record.pod->bound() && !record.pod->terminal())
      ++out[record.team];
  }
  return out;
}

std::unordered_map<NameId, size_t> ClusterState::TerminatingByTeam() const {
  return workloads_.Read([](const WorkloadTable::View& view) {
    std::unordered_map<NameId, size_t> out;
    for (const auto& [key, entry] : view.ordered()) {
      for (const WorkloadMember& m : entry.members) {
        if (m.team != kNoTeam && m.bound() && m.terminating()) ++out[m.team];
      }
    }
    return out;
  });
}

}  // namespace taskgov::scheduler::state
