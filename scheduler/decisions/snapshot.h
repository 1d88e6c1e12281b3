#pragma once

// Snapshot: everything one filter decision reads, taken once at its start.
//
//  * the ledger generation — the policy and its usage counters — pinned by a Ledger::Session for
//    the decision's whole length (the reservation that ends an admission is taken inside it, so
//    it lands in the generation the decision read);
//  * the subject: the pod's team, effective request (with its interned resource ids), priority
//    and workload (TeamResolver, read under its shared lock), and its gang's hold (QuotaBook);
//  * the candidate nodes' flavor and room (NodeCache, shared lock);
//  * the pending view: the team's pending pods that rank ahead of this one (at most the
//    lookahead) and, for the borrowing pass under FairShare, the best-ranked pending pod of every
//    other active team of its cohort (PendingQueues, shared lock).
//
// TakeSnapshot reads all of it but the cohort's heads, which only borrowing needs and which cost
// one queue lookup per cohort team: TakeCohortHeads adds them, once, when the borrowing pass
// first reaches the fair-share rule.
// Nothing else is read from the state components: the rules (rules.h) are functions of the
// snapshot alone, and tests build snapshots by hand. The counters stay live
// atomics (a snapshot of usage would be stale the moment it was taken); the reservation re-checks
// every limit inside its compare-exchange, so a decision made on them never over-admits.
//
// Thread-compatible: one snapshot per decision, used and destroyed on the thread that took it.

#include <cstddef>
#include <functional>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "scheduler/extender_api.h"
#include "scheduler/ledger/quota_book.h"
#include "scheduler/model/gang.h"
#include "scheduler/state/cluster_state.h"

namespace taskgov::scheduler::decisions {

// What is being decided on: the pod and what policy makes of it.
struct Subject {
  const model::Pod* pod = nullptr;
  model::NameId team_id = state::kNoTeam;
  const model::Team* team = nullptr;  // null: the pod belongs to no team of the policy
  // Non-empty: the pod names a queue it may not use (another team's, or one whose ClusterQueue's
  // namespaceSelector does not select its namespace): refused with this (team is null).
  std::string team_refusal;
  model::ResourceList request;
  // The request's resources that have an interned id (KnownIdAmounts: lock-free, and names from
  // the pod are never added to the interners); `unknown_resource` when some positive request
  // names a resource nothing ever interned, so no node can hold it.
  model::IdAmounts request_ids;
  bool unknown_resource = false;
  int32_t priority = 0;
  bool by_priority = true;  // TaskRanking (else FirstComeFirstServe)
  // Its workload (DESIGN §3.7): a gang member is admitted with its gang, all or nothing.
  model::WorkloadRef workload;
  // What admitting it must reserve: its request, or for a gang member whose gang holds no quota
  // the request of every member not holding a reservation yet.
  model::ResourceList need;
  // Members of the gang counted in `need` that have not been created yet (each as the largest
  // known member).
  int64_t estimated_members = 0;
  // What the gang's members pinned to other flavors need there, reserved with `need` (all or
  // nothing; SplitGangNeed).
  std::vector<std::pair<model::NameId, model::ResourceList>> elsewhere;
  // Whether its gang holds quota for it (then it takes its share and no rule applies).
  bool held = false;
  // A lone pod's own reservation's flavor (kNoFlavor: none): it was admitted there, or the
  // preemption controller nominated it there once its victims went; no ordering rule takes
  // that back (DESIGN §3.7: room freed for a preemptor goes to it).
  model::NameId reserved_on = state::kNoFlavor;
};

// What the preemption controller makes of a pending pod, as the rules read it: it has decided
// nothing for it yet, it is freeing room for it (a round in flight), or it found nothing to do
// for it (set aside: it fits, no victims exist, or its turn has not come).
enum class PreemptorState : uint8_t { kUndecided, kPreempting, kSetAside };

struct Snapshot {
  explicit Snapshot(const ledger::QuotaBook& book)
      : book(book), session(book.ledger()), policy(session.policy()) {}
  Snapshot(const Snapshot&) = delete;
  Snapshot& operator=(const Snapshot&) = delete;

  const ledger::QuotaBook& book;
  ledger::Ledger::Session session;
  const model::Policy& policy;
  // When the decision is made (Unix ms): room held for a preemptor counts until its deadline.
  int64_t now_ms = 0;
  // What the preemption controller makes of a pending pod (unset: no controller, every pod is
  // kSetAside: nothing will be preempted for it).
  std::function<PreemptorState(std::string_view uid)> preemptor_state;
  // The cluster the snapshot was taken of, for the nodes' room of other pending pods and the
  // workloads backing off from borrowing (null: no rule asks).
  const state::ClusterState* cluster = nullptr;
  Subject subject;
  // One per candidate node, in the order of the filter's node list.
  std::vector<state::NodeFit> fits;
  // A gang member's gang hold (QuotaBook::FindGang), if its gang holds quota.
  std::optional<ledger::GangHold> gang;
  // The team's pending pods ranked ahead of the subject, best first (one under StrictFIFO, at
  // most the lookahead under BestEffortFIFO), without the subject's own gang and without pods
  // admitted already (AdmittedWhilePending); read only when some candidate node has room.
  std::vector<state::PendingRef> ahead;
  // Under FairShare: the best-ranked pending pods of each other active team of the cohort tree,
  // not admitted already — up to 8 each, best first (its first only under StrictFIFO) — (empty
  // when fair share does not apply); unset until TakeCohortHeads.
  std::optional<std::vector<std::pair<const model::Team*, state::PendingRef>>> heads;
};

// Whether a pod of the pending view was admitted already: it holds a reservation (the pending
// queues learn it from a note their applier thread applies a moment later, or from the informer),
// or it is a member of a gang that holds quota (it takes what is held for it). Such a pod waits
// for nothing, and no rule makes another pod wait for it.
[[nodiscard]] bool AdmittedWhilePending(const ledger::QuotaBook& book,
                                        const state::PendingPod& pod);

// A gang member's need split by flavor (DESIGN §3.7): the gang's pending members whose node
// selector lets them use none of the team's flavors `node_selector` allows are pinned elsewhere
// (a launcher on CPU nodes, workers on GPU nodes): each is needed on the first of the team's
// flavors it may use (at most ledger::kMaxGangFlavors − 1 such flavors; members beyond count
// here). Every other member, and each not created yet, counts with this one (GangNeed).
struct GangNeedSplit {
  model::ResourceList here;
  std::vector<std::pair<model::NameId, model::ResourceList>> elsewhere;
  int64_t estimated = 0;
};
[[nodiscard]] GangNeedSplit SplitGangNeed(const state::PendingQueues& queues,
                                          const model::Policy& policy, const model::Team& team,
                                          model::NameId team_id, std::string_view workload,
                                          std::string_view uid, const model::ResourceList& request,
                                          const model::Labels& node_selector, int64_t members);

// Whether the subject's gang holds quota for it on `flavor` (it then takes its share there: its
// gang was admitted as a whole), or a lone subject holds its own reservation there: either way
// no ordering rule applies.
[[nodiscard]] bool HeldOn(const Snapshot& snapshot, model::NameId flavor);
// When not: a flavor where its gang does hold quota and that the subject may use — it is meant to
// run there, not here; nullopt when there is none (a member beyond what the gang held, or of a pod
// set the gang holds nothing for: it is admitted alone).
[[nodiscard]] std::optional<model::NameId> HeldElsewhere(const Snapshot& snapshot,
                                                         model::NameId flavor);

// Fills `snapshot` for `args` from the state components, in one pass. Stops after the subject
// when the pod has no team or its team is inactive (nothing else is needed to refuse it).
void TakeSnapshot(const ledger::QuotaBook& book, const state::ClusterState& cluster,
                  const FilterArgs& args, size_t queue_lookahead, Snapshot* snapshot);
// How many of its team's pending pods ranked above a pod a filter call reads (Admission's
// default queue_lookahead).
inline constexpr size_t kQueueLookahead = 32;
// Reads the pending view (`ahead`) of a governed pod's snapshot; TakeSnapshot does when some
// candidate node has room.
void TakeAhead(const ledger::QuotaBook& book, const state::ClusterState& cluster,
               size_t queue_lookahead, Snapshot* snapshot);
// Adds the cohort's heads to a snapshot of a governed pod; does nothing when they are taken.
void TakeCohortHeads(const state::ClusterState& cluster, Snapshot* snapshot);
// The `lookahead` best-ranked pending pods (a gang's members each), less those admitted, of each
// other active team in `team`'s cohort tree (the first only, of a StrictFIFO team), each team's in
// its rank order — whatever the policy's idle-compute allocation.
[[nodiscard]] std::vector<std::pair<const model::Team*, state::PendingRef>> CohortHeads(
    const state::PendingQueues& pending, const ledger::QuotaBook& book, const model::Policy& policy,
    const model::Team& team, size_t lookahead);

}  // namespace taskgov::scheduler::decisions
