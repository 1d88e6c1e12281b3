#pragma once

// Explanation: why a pending pod (and its gang) waits, rule by rule, with the numbers, and what
// would have to change for it to run — what the admin API's explanation endpoint, the console's
// task panel and `taskgov job why` show.
//
// It evaluates the filter's own rules (rules.h and the ledger's quota check as a dry run,
// QuotaLines) on a Snapshot (snapshot.h), in the filter's order: the subject's checks (team,
// active, its gang's object), then each of the team's flavors within nominal, then each
// borrowing. Unlike the filter it does not stop at the first rule that refuses and reserves
// nothing: every rule of every (flavor, mode) is evaluated, so a person sees all that stands in
// the way. An outlook of kAdmissible means the filter would admit it now on the first admissible
// (flavor, mode), within what taskgov decides (kube-scheduler's own filters — taints, affinity,
// ports — are not evaluated here).
//
// Value code over one snapshot; thread-compatible.

#include <cstdint>
#include <string>
#include <vector>

#include "scheduler/decisions/rules.h"
#include "scheduler/decisions/snapshot.h"
#include "scheduler/ledger/ledger.h"
#include "scheduler/state/cluster_state.h"

namespace taskgov::scheduler::decisions {

// One rule's verdict: what was found and, when it refuses, what would have to change.
struct Check {
  std::string rule;  // team, active, gangObject; nodes, gangFlavor, room, topology, gangRoom,
                     // queueOrder, disruptedRecently, fairShare, quota
  bool passed = false;
  std::string detail;
  std::string change;  // empty when passed
  // A failure that lasts until the policy or the cluster changes (what makes it NeverFits).
  bool lasting = false;
};

// The rule that fails when a gang's members do not all find room at once (the job resumer
// counts such jobs apart).
inline constexpr char kGangRoomRule[] = "gangRoom";

struct FlavorExplanation {
  std::string flavor;
  ledger::Ledger::Mode mode = ledger::Ledger::Mode::kWithinNominal;
  bool admissible = false;
  std::vector<Check> checks;
  std::vector<QuotaLine> quota;  // the quota rule's numbers, one line per governed resource
};

enum class Outlook {
  kAdmissible,   // the filter would admit it now
  kWaiting,      // something that can change holds it back
  kNeverFits,    // as it is, no flavor can ever take it
  kNotGoverned,  // no team, so no rule of taskgov applies (or all its pods are refused)
  kNotPending,   // nothing of it waits (set by callers that look a workload up)
};
[[nodiscard]] std::string_view OutlookName(Outlook outlook);
[[nodiscard]] std::string_view ModeName(ledger::Ledger::Mode mode);  // WithinNominal, Borrowing

struct Explanation {
  Outlook outlook = Outlook::kWaiting;
  std::string summary;                     // one or two sentences for a person
  std::string team;                        // "" without one
  model::ResourceList request;             // the pod's
  model::ResourceList need;                // what admission must reserve: the pod's, or its gang's
  int64_t estimated_members = 0;           // gang members not created yet, counted in `need`
  std::vector<Check> checks;               // the subject's
  std::vector<FlavorExplanation> flavors;  // in the filter's order
};

// Explains the subject of `snapshot` (taken by TakeSnapshot over the nodes of its team's
// flavors) at `now_ms`; reads the rest of the pending view and the cohort's heads as needed.
[[nodiscard]] Explanation Explain(Snapshot& snapshot, const ledger::QuotaBook& book,
                                  const state::ClusterState& cluster, int64_t now_ms,
                                  size_t queue_lookahead);
// Explain's outlook alone, cheaper: no words, and it stops at the first admissible (flavor,
// mode).
[[nodiscard]] Outlook OutlookOf(Snapshot& snapshot, const ledger::QuotaBook& book,
                                const state::ClusterState& cluster, int64_t now_ms,
                                size_t queue_lookahead);

}  // namespace taskgov::scheduler::decisions
