#include "scheduler/decisions/snapshot.h"

#include <algorithm>

#include "scheduler/model/pod_identity.h"

namespace taskgov::scheduler::decisions {

using ledger::IdAmount;
using ledger::KnownIdAmounts;
using ledger::QuotaBook;
using model::EffectiveRequest;
using model::FlavorNames;
using model::IdleComputeAllocation;
using model::Labels;
using model::NameId;
using model::Pod;
using model::Policy;
using model::QueueingStrategy;
using model::ResolvePriority;
using model::ResourceAmount;
using model::ResourceList;
using model::TaskPrioritization;
using model::Team;
using model::TeamNames;
using state::ClusterState;
using state::FlavorOfNode;
using state::kNoTeam;
using state::NodeCache;
using state::NodeFit;
using state::PendingPod;
using state::PendingQueues;
using state::PendingRef;
using state::TeamResolver;

namespace {

void ResolveSubject(const TeamResolver& teams, const Policy& policy, const Pod& pod,
                    Subject* subject) {
  subject->pod = &pod;
  TeamResolver::Resolved resolved = teams.Resolve(pod);
  subject->team_id = resolved.team;
  subject->team_refusal = std::move(resolved.refusal);
  subject->team =
      subject->team_id == kNoTeam ? nullptr : policy.FindTeam(TeamNames().Name(subject->team_id));
  if (subject->team == nullptr) return;
  subject->request = EffectiveRequest(pod);
  subject->request_ids = KnownIdAmounts(subject->request);
  const auto requested = std::count_if(subject->request.begin(), subject->request.end(),
                                       [](const ResourceAmount& r) { return r.amount > 0; });
  const auto known = std::count_if(subject->request_ids.begin(), subject->request_ids.end(),
                                   [](const IdAmount& r) { return r.second > 0; });
  subject->unknown_resource = known < requested;
  subject->priority = ResolvePriority(policy, pod);
  subject->by_priority = policy.task_prioritization == TaskPrioritization::kTaskRanking;
}

// Flavor and room of every candidate node: one hash lookup and integer compares each; room held
// for another preemptor counts as used.
void JudgeNodes(const NodeCache& nodes, const Policy& policy, const Subject& subject,
                const FilterArgs& args, int64_t now_ms, std::vector<NodeFit>* fits) {
  nodes.FitNodes(args.node_names, subject.request_ids, fits,
                 state::Holder{subject.pod->uid, subject.workload.key}, now_ms);
  if (subject.unknown_resource) {
    for (NodeFit& fit : *fits) fit.room = false;  // no node has a resource nothing interned
  }
  if (args.node_names_mode) return;
  for (size_t i = 0; i < args.nodes.size() && i < fits->size(); ++i) {
    NodeFit& fit = (*fits)[i];
    fit.flavor = FlavorOfNode(policy, args.nodes[i].labels);
    if (fit.known) continue;
    // Not in the cache yet: judge by the node the scheduler sent.
    fit.known = true;
    fit.room = !args.nodes[i].unschedulable;
    for (const ResourceAmount& want : subject.request) {
      fit.room = fit.room && args.nodes[i].allocatable.Get(want.name) >= want.amount;
    }
  }
}

}  // namespace

// How many of another team's best-ranked pending pods are read: its heads under BestEffortFIFO
// (DESIGN §3.6), less those admitted already (admissions the pending queues have not applied yet
// are a few at most: their applier runs as soon as they are posted).
constexpr size_t kHeadLookahead = 8;

std::vector<std::pair<const Team*, PendingRef>> CohortHeads(const PendingQueues& pending,
                                                            const QuotaBook& book,
                                                            const Policy& policy, const Team& team,
                                                            size_t lookahead) {
  std::vector<std::pair<const Team*, PendingRef>> heads;
  for (const Team& other : policy.teams) {
    if (&other == &team || !other.active || !policy.SameCohortTree(other, team)) continue;
    // Under BestEffortFIFO a head that cannot be admitted steps aside for the next (Kueue's
    // inadmissible workloads), and the preemption controller decides for each of the team's
    // best-ranked pods: each of them may be the one this borrowing would keep waiting, and whose
    // preemption would take it back. Under StrictFIFO only the first goes before the others.
    const bool strict = other.queueing == model::QueueingStrategy::kStrictFIFO;
    for (PendingRef& head :
         pending.Heads(TeamNames().Intern(other.name),
                       policy.task_prioritization == TaskPrioritization::kTaskRanking, lookahead)) {
      if (AdmittedWhilePending(book, *head)) continue;
      heads.emplace_back(&other, std::move(head));
      if (strict) break;
    }
  }
  return heads;
}

GangNeedSplit SplitGangNeed(const PendingQueues& queues, const Policy& policy, const Team& team,
                            NameId team_id, std::string_view workload, std::string_view uid,
                            const ResourceList& request, const Labels& node_selector,
                            int64_t members) {
  // Which of the team's flavors this pod may use.
  std::vector<uint8_t> mine(team.flavors.size());
  for (size_t i = 0; i < mine.size(); ++i) {
    mine[i] = policy.FlavorAllows(team.flavors[i].flavor, node_selector);
  }
  // The first of the team's flavors a member may use (-1: none).
  auto first_allowed = [&](const Labels& selector) {
    for (size_t i = 0; i < team.flavors.size(); ++i) {
      if (policy.FlavorAllows(team.flavors[i].flavor, selector)) return static_cast<int>(i);
    }
    return -1;
  };
  auto apart = [&](const PendingPod& member) {
    // Most members are of this pod's pod set, with its selector, or have none at all.
    if (member.node_selector.empty() || member.node_selector == node_selector) return false;
    bool anywhere = false;  // it fits no flavor: counted here, refused with the gang
    for (size_t i = 0; i < team.flavors.size(); ++i) {
      if (!policy.FlavorAllows(team.flavors[i].flavor, member.node_selector)) continue;
      if (mine[i]) return false;
      anywhere = true;
    }
    return anywhere;
  };
  GangNeedSplit split;
  std::vector<PendingPod> pinned;
  split.here =
      queues.GangNeed(team_id, workload, uid, request, members, &split.estimated, apart, &pinned);
  for (const PendingPod& member : pinned) {
    const NameId flavor =
        FlavorNames().Intern(team.flavors[first_allowed(member.node_selector)].flavor);
    auto it = std::find_if(split.elsewhere.begin(), split.elsewhere.end(),
                           [&](const auto& e) { return e.first == flavor; });
    if (it == split.elsewhere.end() && split.elsewhere.size() + 1 < ledger::kMaxGangFlavors) {
      it = split.elsewhere.insert(split.elsewhere.end(), {flavor, ResourceList{}});
    }
    (it == split.elsewhere.end() ? split.here : it->second).Add(member.request);
  }
  return split;
}

bool HeldOn(const Snapshot& snapshot, NameId flavor) {
  if (snapshot.subject.reserved_on == flavor) return true;
  return snapshot.subject.held && snapshot.gang->holds_quota(flavor);
}

std::optional<NameId> HeldElsewhere(const Snapshot& snapshot, NameId flavor) {
  if (!snapshot.subject.held) return std::nullopt;
  const ledger::GangHold& hold = *snapshot.gang;
  for (uint8_t p = 0; p < hold.parts; ++p) {
    const NameId there = hold.remaining[p].flavor;
    if (there != flavor && hold.holds_quota(there) &&
        snapshot.policy.FlavorAllows(FlavorNames().Name(there),
                                     snapshot.subject.pod->node_selector)) {
      return there;
    }
  }
  return std::nullopt;
}

bool AdmittedWhilePending(const QuotaBook& book, const PendingPod& pod) {
  return book.HoldsFor(pod.uid, pod.workload);
}

void TakeSnapshot(const QuotaBook& book, const ClusterState& cluster, const FilterArgs& args,
                  size_t queue_lookahead, Snapshot* snapshot) {
  Subject& subject = snapshot->subject;
  snapshot->cluster = &cluster;
  ResolveSubject(cluster.teams(), snapshot->policy, args.pod, &subject);
  if (subject.team == nullptr || !subject.team->active) return;
  subject.workload = cluster.teams().WorkloadOf(args.pod);
  subject.need = subject.request;
  if (!subject.workload.gang()) {
    if (std::optional<ledger::Reservation> own = book.Find(args.pod.uid)) {
      subject.reserved_on = own->charge.flavor;
    }
  }
  if (subject.workload.gang()) {
    snapshot->gang = book.FindGang(subject.workload.key);
    subject.held = snapshot->gang && snapshot->gang->holds_quota();
    const int64_t holders = snapshot->gang ? snapshot->gang->holders : 0;
    const int64_t members = std::max<int64_t>(1, subject.workload.size - holders);
    if (!subject.held) {
      GangNeedSplit split = SplitGangNeed(cluster.pending(), snapshot->policy, *subject.team,
                                          subject.team_id, subject.workload.key, subject.pod->uid,
                                          subject.request, subject.pod->node_selector, members);
      subject.need = std::move(split.here);
      subject.elsewhere = std::move(split.elsewhere);
      subject.estimated_members = split.estimated;
    }
  }
  JudgeNodes(cluster.nodes(), snapshot->policy, subject, args, snapshot->now_ms, &snapshot->fits);
  if (!state::AnyRoom(snapshot->fits)) return;  // refused for room alone: no rule reads the queue
  TakeAhead(book, cluster, queue_lookahead, snapshot);
}

void TakeAhead(const QuotaBook& book, const ClusterState& cluster, size_t queue_lookahead,
               Snapshot* snapshot) {
  const Subject& subject = snapshot->subject;
  const bool strict = subject.team->queueing == QueueingStrategy::kStrictFIFO;
  // The pending queues' lock is taken shared: it may be taken inside a session (see
  // cluster_state.h).
  snapshot->ahead =
      cluster.pending().Ahead(subject.team_id, subject.priority, subject.pod->creation_unix_ms,
                              subject.pod->uid, subject.by_priority, strict ? 1 : queue_lookahead,
                              subject.workload.gang() ? subject.workload.key : std::string());
  // A gang never waits for itself (left out above), nor does a pod for one admitted already.
  std::erase_if(snapshot->ahead,
                [&](const PendingRef& other) { return AdmittedWhilePending(book, *other); });
}

void TakeCohortHeads(const ClusterState& cluster, Snapshot* snapshot) {
  if (snapshot->heads) return;
  const Team& team = *snapshot->subject.team;
  snapshot->heads.emplace();
  if (snapshot->policy.idle_compute != IdleComputeAllocation::kFairShare || team.cohort.empty()) {
    return;
  }
  *snapshot->heads =
      CohortHeads(cluster.pending(), snapshot->book, snapshot->policy, team, kHeadLookahead);
}

}  // namespace taskgov::scheduler::decisions
