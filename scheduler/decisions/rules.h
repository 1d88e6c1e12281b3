#pragma once

// The admission rules of DESIGN §3.6 that come before the quota itself, as functions of one
// decision's Snapshot (snapshot.h) and nothing else: no state component, no lock, no clock.
//
//  * queue order — TaskRanking / FirstComeFirstServe under StrictFIFO (the team's best-ranked
//    pending pod goes first) or BestEffortFIFO (the pods ranked ahead take what they can, in rank
//    order; the subject waits only if what they take leaves it no room). A pod ahead that does
//    not fit yet holds the subject back once it is starving (it has waited longer than the
//    policy's starvation bound, Starving): the quota it needs drains toward it;
//  * fair share — when borrowing under FairShare, a pod waits while a team of its cohort has
//    pending demand that would lose out to this pod and either fits within that team's nominal
//    quota (a team that does not borrow goes first, as Kueue's FairSharingPrioritizeNonBorrowing)
//    or needs to borrow on the flavor, could borrow now, and has a lower weighted share after
//    admission (ties: the older pod), or is starving and needs what this pod would take.
//
// Each returns the reason the subject waits on `flavor` (for a person to read), or nothing.
// FairShareBlocks needs the cohort's heads in the snapshot (TakeCohortHeads); without them it
// aborts (a bug in the caller: it must not pass a borrowing pod unchecked).
// Thread-compatible (the snapshot is).

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "scheduler/decisions/snapshot.h"
#include "scheduler/ledger/ledger.h"
#include "scheduler/model/policy.h"

namespace taskgov::scheduler::decisions {

// The quota check of one governed resource as a dry run (the ledger's reservation, DESIGN §3.3,
// without taking anything): `need` on top of what the team uses, against the mode's limit, and
// the part beyond the team's guaranteed quota against the cohort pool.
struct QuotaLine {
  std::string resource;
  int64_t need = 0;
  int64_t in_use = 0;
  int64_t nominal = 0;
  int64_t borrowing_limit = 0;  // kUnlimited: none
  int64_t limit = 0;            // the mode's cap: nominal, or nominal + borrowing limit
  int64_t ceiling = 0;          // nominal + borrowing limit: what the team may ever use
  int64_t pool_used = 0;
  int64_t pool_capacity = 0;
  int64_t pool_free = 0;  // what the team may still take from its pool, up the cohort tree
  int64_t pool_need = 0;  // what admission would add to the pool
  // What the other teams of its cohort tree borrow on the flavor (usage above their nominal):
  // the part of the pool's use that reclaim or their borrowed pods finishing can give back.
  // Filled by explanations only (Explain), 0 elsewhere.
  int64_t others_borrowed = 0;
  bool team_fits = false;
  bool pool_fits = false;
  [[nodiscard]] bool fits() const { return team_fits && pool_fits; }
};
// One line per resource of `need` the team's quota on `flavor` governs.
[[nodiscard]] std::vector<QuotaLine> QuotaLines(const ledger::Ledger::Session& session,
                                                model::NameId team, model::NameId flavor,
                                                const model::ResourceList& need,
                                                ledger::Ledger::Mode mode);

// Whether a pod created at `created_ms` has waited longer than the policy's starvation bound at
// `now_ms` (Policy::starvation_bound_seconds; never when it is 0): the capacity it needs is kept
// for it. A starving pod holds back smaller workloads (less of its first accelerator): those of
// its team ranked below it and, when they borrow, those of other teams that do not starve. It is
// held back only by its team's pods ranked above it and by other teams' pods within their
// nominal quota — so starving pods never wait for each other in a circle.
// A workload still not running at kStarvationGiveUp times the bound holds nothing back any more:
// it may never be placeable (a selector no node matches, a volume never bound), and a team must
// not wait for it forever.
inline constexpr int64_t kStarvationGiveUp = 3;
[[nodiscard]] bool Starving(const model::Policy& policy, int64_t created_ms, int64_t now_ms);

// The team's queue order (DESIGN §3.6): under StrictFIFO the subject waits behind the head;
// under BestEffortFIFO the pods ahead take their quota in rank order, one that cannot fit its
// quota holding nothing (unless it could preempt the subject once admitted, or it starves), and
// the subject waits if what they take leaves it none. A pod ahead that fits its quota but finds no
// room on the nodes (with its whole gang) holds nothing either (backfill) — unless it starves,
// the controller frees room for it, or it could preempt the subject once room appears and the
// controller has not yet looked at it and found nothing to free (PreemptorState::kSetAside).
[[nodiscard]] std::optional<std::string> QueueOrderBlocks(const Snapshot& snapshot,
                                                          model::NameId flavor,
                                                          ledger::Ledger::Mode mode);
[[nodiscard]] std::optional<std::string> FairShareBlocks(const Snapshot& snapshot,
                                                         model::NameId flavor);

// How the preemption controller sees other teams' pending pods, for BorrowingHeldBack.
struct OwnerView {
  // What a team's running pods on the flavor that `pending` may preempt (its team's within-team
  // rule) hold: they count as gone for it. Empty: nothing.
  std::function<model::ResourceList(const model::Team& team, const state::PendingPod& pending)>
      preemptible;
  // Whether `pending` could never run on the flavor (no node accepts it, or none could hold it
  // even empty): it would hold borrowers back for as long as it waits. Empty: every pod could.
  std::function<bool(const state::PendingPod& pending)> hopeless;
};

// Whether a preemption must not start for `pod`, which would borrow on `flavor` once its victims
// are gone — the capacity would go to one that waits (DESIGN §3.7) — on one snapshot as a filter
// call would take it (a ledger session, the pending queues; `state`: what the controller makes of
// pending pods). The reason, else nothing:
//  * owners first: another team of its cohort tree has a pending pod on `flavor`, not admitted,
//    that fits within its own team's nominal quota there (its gang's members together; `view`
//    says which of its team's pods it may preempt, and which pods could never run): it waits —
//    for room on the nodes, or its turn — and would reclaim what `pod` borrowed. Kueue admits the
//    workloads that do not borrow before those that do;
//  * the fair-share rule (FairShareBlocks).
[[nodiscard]] std::optional<std::string> BorrowingHeldBack(
    const ledger::QuotaBook& book, const state::ClusterState& cluster, const model::Pod& pod,
    model::NameId flavor, int64_t now_ms, std::function<PreemptorState(std::string_view uid)> state,
    const OwnerView& view);

// Whether the team's queue order holds `pod` back on `flavor` (QueueOrderBlocks), on a snapshot
// as a filter call would take it but whatever room the nodes have (`state` as for
// BorrowingHeldBack): the preemption controller keeps no room for such a pod — it could not use
// it, and the pods ranked above it that go first could not have it. The reason, else nothing.
[[nodiscard]] std::optional<std::string> QueueOrderHoldsBack(
    const ledger::QuotaBook& book, const state::ClusterState& cluster, const model::Pod& pod,
    model::NameId flavor, int64_t now_ms,
    std::function<PreemptorState(std::string_view uid)> state);

// Whether workload `workload` (model::GangOf) may not borrow at `now_ms` because taskgov's
// preemptions stopped it recently (state::DisruptionLog; after a single disruption only while the
// pod it was stopped for is alive): the refusal, naming how often and until when; else nothing.
// Filter calls ask it before admitting on borrowed quota, and the preemption controller before
// freeing borrowed room for it (DESIGN §3.6: no ping-pong).
[[nodiscard]] std::optional<std::string> BorrowingBackOff(const state::ClusterState& cluster,
                                                          std::string_view workload,
                                                          int64_t now_ms);

// A team's weighted share on a flavor if it were given `request` (DESIGN §3.6), in per-mille:
// max over governed resources of (usage + request − nominal)⁺ / pool capacity, divided by the
// fair-share weight; 0 when it borrows nothing; at weight 0 while borrowing, above every share of
// a positive weight and ordered by the unweighted share (fair_share.h).
[[nodiscard]] int64_t WeightedShare(const ledger::Ledger::Session& session, const model::Team& team,
                                    model::NameId flavor, const model::ResourceList& request);
// The share reports show (metrics, the admin API): WeightedShare with no request; for a team of
// weight 0, kUnlimited while it borrows any resource on the flavor, else 0.
[[nodiscard]] int64_t ReportedWeightedShare(const ledger::Ledger::Session& session,
                                            const model::Team& team, model::NameId flavor);

}  // namespace taskgov::scheduler::decisions
