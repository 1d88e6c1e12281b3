#pragma once

// The admission rules of DESIGN §3.6 that come before the quota itself, as functions of one
// decision's Snapshot (snapshot.h) and nothing else: no state component, no lock, no clock.
//
//  * queue order — TaskRanking / FirstComeFirstServe under StrictFIFO (the team's best-ranked
//    pending pod goes first) or BestEffortFIFO (the pods ranked ahead take what they can, in rank
//    order; the subject waits only if what they take leaves it no room);
//  * fair share — when borrowing under FairShare, a pod waits while a team of its cohort has
//    pending demand that would lose out to this pod and either fits within that team's nominal
//    quota (a team that does not borrow goes first, as Kueue's FairSharingPrioritizeNonBorrowing)
//    or needs to borrow on the flavor, could borrow now, and has a lower weighted share after
//    admission (ties: the older pod).
//
// Each returns the reason the subject waits on `flavor` (for a person to read), or nothing.
// FairShareBlocks needs the cohort's heads in the snapshot (TakeCohortHeads); without them it
// aborts (a bug in the caller: it must not pass a borrowing pod unchecked).
// Thread-compatible (the snapshot is).

#include <cstdint>
#include <optional>
#include <string>

#include "scheduler/decisions/snapshot.h"
#include "scheduler/ledger/ledger.h"
#include "scheduler/model/policy.h"

namespace taskgov::scheduler {

[[nodiscard]] std::optional<std::string> QueueOrderBlocks(const Snapshot& snapshot, NameId flavor,
                                                          Ledger::Mode mode);
[[nodiscard]] std::optional<std::string> FairShareBlocks(const Snapshot& snapshot, NameId flavor);

// A team's weighted share on a flavor if it were given `request` (DESIGN §3.6), in per-mille:
// max over governed resources of (usage + request − nominal)⁺ / pool capacity, divided by the
// fair-share weight. Weight 0 ⇒ kUnlimited (always last).
[[nodiscard]] int64_t WeightedShare(const Ledger::Session& session, const Team& team, NameId flavor,
                                    const ResourceList& request);
// The share reports show (metrics, the admin API): WeightedShare with no request; for a team of
// weight 0, kUnlimited while it borrows any resource on the flavor, else 0.
[[nodiscard]] int64_t ReportedWeightedShare(const Ledger::Session& session, const Team& team,
                                            NameId flavor);

}  // namespace taskgov::scheduler
