#pragma once

// Preemption and reclaim, as value code (DESIGN §3.6, §4; issue 8): the one rule that says
// whether a running pod may be a victim of a pending pod, and the choice of a minimal victim set.
// No I/O, no locks, no clock: callers pass the ledger's numbers, the nodes and the candidates in,
// and get a decision with a reason per victim out. The preempt verb (Admission::Preempt) and the
// preemption controller (preemption_controller.h) both decide through JudgeVictim.
//
// The rule (JudgeVictim). A pod younger than the minimum runtime is a victim of a Reclaim only (a
// team taking back its nominal quota never waits for it: its guarantee). Then:
//  * same team — the preemptor's team policy within_team: LowerPriority (victim priority lower),
//    LowerOrNewerEqualPriority (or equal and created later), Never. Reason InTeamPriority.
//  * another team of the same cohort — the victim's team is reclaimable, the preemptor's team
//    reclaim policy allows it (Any; LowerPriority: victim priority lower), and the victim's team
//    is above its nominal quota, on the flavor, in a resource the preemptor requests, *before*
//    losing the victim (a team at or within its nominal loses nothing to another team; as in
//    Kueue, the last pod taken may straddle the nominal line). Then:
//      - Reclaim when the preemptor's team, once the pod is admitted, stays within its nominal
//        on every resource the pod requests;
//      - else, with idle compute FairShare, FairShare when the preemptor's weighted share after
//        admission is ≤ the victim team's share after losing the victim, or < its share before
//        (Kueue's LessThanOrEqualToFinalShare / LessThanInitialShare; the choice applies the
//        first to every candidate before the second). Both strategies imply that a team that
//        took from another can never be taken back from by it in turn. In a cohort tree the
//        shares compared are those of the two sides just below the lowest cohort both teams
//        share — each team, or its ancestor cohort there, with the cohort's own weight (Kueue's
//        almost-least-common ancestors, QuotaSim::CompareShares);
//      - else (FirstComeFirstServe) ReclaimWhileBorrowing when the preemptor's team has
//        borrowWithinCohort LowerPriority and the victim's priority is lower (and at most its
//        maxPriorityThreshold when set); else no — unless the preemptor, once its own victims
//        are gone too, ends within its nominal quota: the choice's round without borrowing, as
//        Kueue's.
//  * a preemptor or victim outside governance (no team) — plain priority (reason Priority).
//
// The choice (VictimSelector::Select), for one preemptor on one flavor:
//  1. If the pod fits now (quota, and a node of the flavor with room) there is nothing to do.
//  2. Candidates become units: a pod alone, or every running pod of its gang (gangs are evicted
//     together or not at all: a gang with a member that may not be a victim is not a candidate).
//  3. Units are put in preference order. FairShare: first the units Kueue's fair-sharing
//     preemption takes, in the order it takes them, judged on quota alone (FairOrder): from the
//     root of the cohort tree, at each cohort the child — a borrowing team, or a cohort that
//     borrows or leads to the preemptor — of highest weighted share, the preemptor's side
//     counted with the pod admitted, until a team; its units tried in order under the first
//     strategy, one taken, the shares recomputed; then the rejected units, one per team, under
//     the second; then every other unit. FirstComeFirstServe: other teams before own, the most
//     recently admitted first. Within a team: lower priority first; most recently started
//     first; UID last.
//  4. Rounds, as Kueue's (each steps 4 and 5 in full; the first that frees a node wins):
//     with FirstComeFirstServe, a round without borrowing — other teams' borrowed pods may be
//     reclaimed, and the pod must fit within its nominal — first when the preemptor is strictly
//     under its nominal quota on every resource it asks for (yet over it once admitted), or
//     second, after a round with borrowing, when its team has borrowWithinCohort; with
//     FairShare, first a round with LessThanOrEqualToFinalShare alone; then a round with every
//     rule. For each node of the flavor the pod may use (schedulable, and accepted by its placement
//     constraints — SelectionInput::eligible, placement.h): walk the order, taking a unit when the
//     rule allows it (judged against the state with the units taken so far) and it helps — it
//     frees quota the pod still lacks, wherever the unit runs, or room on that node once the
//     quota is there — until the pod fits (quota AND that node has room); then drop, in reverse,
//     every unit the pod does not need. When no node can be freed so (typically: the most
//     preferred borrowers run elsewhere, and once they are taken the victims' team is back at
//     its nominal), walk every node again room first: the units on the node, in order, then
//     whatever quota still lacks. A node the pod may not use is never a target, so no set is
//     chosen that frees room only where the pod cannot go.
//  5. Of the nodes' sets, keep the one reaching least deep into the order, then the smallest,
//     then the first node by name: victims concentrated where the pod will run, never a scatter
//     that frees quota but no node.
//
// Thread-safety: value types; a VictimSelector keeps scratch buffers and is not shared between
// threads (one per caller). Costs: O(nodes × units) fit checks per decision (a second walk per
// node only when the first frees none), each a few integer compares per resource; buffers are
// reused across calls. Placement is judged by the caller, once per preemptor and flavor, never
// per fit check.

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "scheduler/ledger/ledger.h"
#include "scheduler/model/gang.h"
#include "scheduler/model/interner.h"
#include "scheduler/model/objects.h"
#include "scheduler/model/policy.h"

namespace taskgov::scheduler::decisions {

enum class PreemptionReason : uint8_t {
  kInTeamPriority,  // a higher-priority pod of the same team
  kReclaim,         // the owner takes back quota it lent
  kFairShare,       // a team below its fair share takes from one above it
  // a pod that will borrow takes a lower-priority borrowed pod of another team
  // (Team::borrow_within_cohort; Kueue's InCohortReclaimWhileBorrowing)
  kReclaimWhileBorrowing,
  kPriority,  // outside governance: plain pod priority
};

// "InTeamPriority", "Reclaim", "FairShare", "ReclaimWhileBorrowing", "Priority".
[[nodiscard]] std::string_view ReasonName(PreemptionReason reason);

// ---------------------------------------------------------------------------------------------
// QuotaSim: the ledger's numbers for one flavor (every team with quota on it, its cohort pools),
// as a value that can be changed to simulate evictions and admissions with the ledger's own
// arithmetic (DESIGN §3.3): a team's usage above its guaranteed part G = N − L is charged to its
// cohort's pool, and a cohort's usage above its local quota to its parent's (ledger.h, "Cohort
// tree"). Resources are held in slots (at most kMaxSlots governed resources per flavor;
// further ones are ignored and counted in dropped_resources()). Teams are rows, in the order of
// the policy (then orphan cells); a team without cells on the flavor has no row.
class QuotaSim {
 public:
  static constexpr size_t kMaxSlots = 16;
  using Amounts = std::array<int64_t, kMaxSlots>;

  struct Cell {
    bool governed = false;
    int64_t usage = 0;
    // Of `usage`, what reservations of pods not bound hold (assumed after a filter, a gang's
    // quota for members to come, a round's claim): it counts for fit, not for the protection
    // rule — a team is judged above its nominal on what its bound pods use (DESIGN §3.7).
    int64_t held = 0;
    int64_t nominal = 0;
    int64_t ceiling = 0;  // N + B (kUnlimited when B is)
    int64_t guaranteed = 0;
    int64_t lendable = 0;  // what the cohort could lend it (CellView::pool_potential)
  };

  QuotaSim() = default;
  // From Ledger::ReadUsage() (every cell and pool of one generation); `policy` outlives the sim.
  static QuotaSim FromUsage(const model::Policy& policy, model::NameId flavor,
                            const ledger::Ledger::Usage& usage);
  // From a session (the policy's teams only).
  static QuotaSim FromSession(const ledger::Ledger::Session& session, model::NameId flavor);

  [[nodiscard]] model::NameId flavor() const { return flavor_; }
  [[nodiscard]] size_t slot_count() const { return slot_count_; }
  [[nodiscard]] model::NameId slot_resource(size_t slot) const { return slots_[slot]; }
  [[nodiscard]] size_t dropped_resources() const { return dropped_; }
  // The slot of a resource, -1 when no team governs it on the flavor.
  [[nodiscard]] int Slot(model::NameId resource) const;
  [[nodiscard]] size_t row_count() const { return rows_.size(); }
  // The row of a team, -1 when it has no quota on the flavor.
  [[nodiscard]] int Row(model::NameId team) const;
  [[nodiscard]] model::NameId team(int row) const { return rows_[row].team; }
  // The team's policy (nullptr: a team the policy no longer has).
  [[nodiscard]] const model::Team* team_policy(int row) const { return rows_[row].policy; }
  [[nodiscard]] const Cell& cell(int row, size_t slot) const { return rows_[row].cells[slot]; }
  // Whether two teams lend and borrow to each other: in one cohort tree (for flat cohorts, one
  // cohort).
  [[nodiscard]] bool SameCohort(int a, int b) const {
    return Root(rows_[a].pool) == Root(rows_[b].pool);
  }
  // Whether every cohort between team `victim`'s and the cohort it shares with team `preemptor`
  // uses more than its subtree quota of some resource in `on` (Kueue's hierarchical reclaim
  // visits only those: a branch of the tree within its quota lends nothing to the rest). True in
  // a flat cohort (no cohort in between).
  [[nodiscard]] bool BranchBorrows(int victim, int preemptor, const Amounts& on) const;
  // What the team may still take from its cohort's pool on `slot`, up the tree.
  [[nodiscard]] int64_t pool_free(int row, size_t slot) const {
    return Free(rows_[row].pool, slot);
  }

  // `amounts` in slots (resources not governed on the flavor are dropped).
  [[nodiscard]] Amounts ToSlots(const model::IdAmounts& amounts) const;
  [[nodiscard]] Amounts ToSlots(const model::ResourceList& amounts) const;

  // Usage of the team grows / shrinks by `amounts` (never below zero), its pool by the change in
  // its above-guaranteed part.
  void Add(int row, const Amounts& amounts);
  void Remove(int row, const Amounts& amounts);

  // Would `request` be admitted for the team now, borrowing allowed (Ledger::Mode::kBorrowing)?
  // When not and `why` is set: the first limit in the way, with the numbers.
  [[nodiscard]] bool Fits(int row, const Amounts& request, std::string* why = nullptr) const;
  // usage + extra ≤ nominal on every governed slot where `extra` is positive.
  [[nodiscard]] bool WithinNominal(int row, const Amounts& extra) const;
  // usage − held > nominal (its bound pods borrow) on some governed slot where `on` is positive.
  [[nodiscard]] bool Borrowing(int row, const Amounts& on) const;
  // usage − held > nominal on some governed slot.
  [[nodiscard]] bool Borrowing(int row) const;
  // What the team's usage holds for pods not bound (Cell::held), per slot.
  void SetHeld(int row, const Amounts& held);
  // The weighted share (DESIGN §3.6) in per-mille, as WeightedShare in rules.h computes it:
  // max over governed slots of (usage ± delta − nominal)⁺ / pool capacity, divided by the
  // fair-share weight (weight 0 while borrowing: see fair_share.h).
  [[nodiscard]] int64_t Share(int row) const;
  [[nodiscard]] int64_t ShareAfterAdding(int row, const Amounts& delta) const;

  // The cohort tree's side of fair sharing, as Kueue's (pkg/cache/scheduler/fair_sharing.go).
  // A cohort's share: max over slots of (usage − subtree quota)⁺ / what its parent could lend
  // (the parent pool's potential), divided by the cohort's weight, in per-mille as Share; a
  // root's is 0.
  [[nodiscard]] int64_t CohortShare(int32_t pool) const;
  // The share were team `row` (under the cohort) to use `amounts` more.
  [[nodiscard]] int64_t CohortShareAfterAdding(int32_t pool, int row, const Amounts& amounts) const;
  // The pool uses more than its subtree quota on some slot.
  [[nodiscard]] bool CohortBorrowing(int32_t pool) const;
  // The team's cohort pool, a pool's parent (-1 at a root), and a pool's cohort name.
  [[nodiscard]] int32_t pool_of(int row) const { return static_cast<int32_t>(rows_[row].pool); }
  [[nodiscard]] int32_t pool_parent(int32_t pool) const { return pools_[pool].parent; }
  [[nodiscard]] size_t pool_count() const { return pools_.size(); }
  [[nodiscard]] const std::string& pool_name(int32_t pool) const { return pool_keys_[pool]; }
  // What a preemptor's team and a victim's team compare under fair sharing (Kueue's
  // least_common_ancestor.go): the shares of their "almost-LCAs", each team's ancestor just
  // below the lowest cohort they share — the team itself when it sits directly under it.
  struct FairShares {
    int64_t preemptor_after = 0;  // the preemptor's side with `request` added to its team
    int64_t victim_before = 0;
    int64_t victim_after = 0;     // the victim's side with `victim_charge` removed from its team
    int32_t preemptor_pool = -1;  // the cohort compared (its pool), -1: the team itself
    int32_t victim_pool = -1;
  };
  [[nodiscard]] FairShares CompareShares(int prow, int vrow, const Amounts& request,
                                         const Amounts& victim_charge) const;
  // The same two sides for admission (Kueue's fair-sharing tournament compares them where the
  // two teams' workloads meet): team `a`'s side with `a_adds` added to the team's usage, and
  // team `b`'s with `b_adds`.
  [[nodiscard]] FairShares CompareAdmissions(int a, int b, const Amounts& a_adds,
                                             const Amounts& b_adds) const;

  // Journaling: from Mark() on, every change is recorded, and Rollback(mark) undoes the changes
  // made since that mark exactly (trial evictions without copying the whole state).
  [[nodiscard]] size_t Mark();
  void Rollback(size_t mark);

 private:
  struct TeamRow {
    model::NameId team = 0;
    const model::Team* policy = nullptr;
    double weight = 1.0;
    uint32_t pool = 0;
    std::array<Cell, kMaxSlots> cells{};
  };
  // A cohort's pool on this flavor, one slot per resource (Ledger::PoolUsage).
  struct Pool {
    int32_t parent = -1;
    double weight = 1.0;  // the cohort's fair-sharing weight
    std::array<int64_t, kMaxSlots> used{};
    std::array<int64_t, kMaxSlots> capacity{};
    std::array<int64_t, kMaxSlots> local{};
    std::array<int64_t, kMaxSlots> in_parent_limit{};
    std::array<int64_t, kMaxSlots> potential{};  // what it could lend a child (Kueue's lendable)
  };
  void AddCell(const model::Policy& policy, model::NameId team, model::NameId resource,
               const ledger::CellView& view, const std::vector<ledger::Ledger::PoolUsage>& pools);
  // The sim's pool of cohort key `key` (added when new, with the cohort's weight).
  int32_t PoolNamed(const model::Policy& policy, const std::string& key);
  // Usage of pool `p` changes by `delta` on `slot`, and its parents' by the change in what it
  // stores in them.
  void Propagate(int32_t p, size_t slot, int64_t delta);
  [[nodiscard]] int64_t Free(int32_t p, size_t slot) const;
  [[nodiscard]] int32_t Root(int32_t p) const;
  int64_t ShareWith(int row, const Amounts* delta, int sign) const;
  int64_t CohortShareOf(int32_t p, const Amounts& used) const;
  // What pool `target` (the team's pool or one of its ancestors) would use on each slot were
  // the team's usage changed by sign × `amounts` (as Add would propagate it).
  Amounts PoolUsedAfter(int row, const Amounts& amounts, int sign, int32_t target) const;
  // The team's side of a fair-share comparison below `lca`: the team (-1) or its ancestor pool
  // whose parent is `lca`.
  int32_t AlmostLca(int row, int32_t lca) const;
  // The lowest pool both teams are under (-1: none, teams of different trees).
  int32_t LowestShared(int a, int b) const;
  // CompareShares and CompareAdmissions: a's side with `a_adds` added, b's before and with
  // b_sign × `b_change`.
  FairShares Sides(int a, int b, const Amounts& a_adds, const Amounts& b_change, int b_sign) const;
  // The share of that side with sign × `amounts` applied to the team.
  int64_t SideShare(int row, int32_t side, const Amounts& amounts, int sign) const;

  model::NameId flavor_ = 0;
  std::array<model::NameId, kMaxSlots> slots_{};
  size_t slot_count_ = 0;
  size_t dropped_ = 0;
  std::vector<TeamRow> rows_;
  std::vector<Pool> pools_;
  std::vector<std::string> pool_keys_;
  // A value a change overwrote: a team's usage (row ≥ 0) or a pool's (row < 0: pool `pool`).
  struct Undo {
    int32_t row = 0;
    int32_t pool = 0;
    uint32_t slot = 0;
    int64_t value = 0;
  };
  std::vector<Undo> journal_;
  bool journaling_ = false;
};

// ---------------------------------------------------------------------------------------------
// The rule.

struct PreemptorFacts {
  const model::Team* team = nullptr;  // nullptr: the pod belongs to no team
  model::NameId team_id = 0;
  int32_t priority = 0;
  int64_t created_ms = 0;
};

struct VictimFacts {
  const model::Team* team = nullptr;  // nullptr: no team
  model::NameId team_id = 0;
  int32_t priority = 0;
  int64_t created_ms = 0;
  int64_t started_ms = 0;  // status.startTime, else creation
};

struct Verdict {
  bool allowed = false;
  PreemptionReason reason = PreemptionReason::kInTeamPriority;
  // Why not, for explanations ("" when allowed). Static text.
  std::string_view why_not;
  // The refusal holds however much usage the state loses (minimum runtime, priorities,
  // policies, another cohort, a team within its nominal): the victim can be set aside.
  bool lasting = false;
  // A FairShare verdict: which strategies hold (allowed: one the policy lists does). The walk
  // tries the policy's strategies one more at a time, as Kueue does.
  bool final_share = false;    // LessThanOrEqualToFinalShare
  bool initial_share = false;  // LessThanInitialShare
  // Refused only because the preemptor would borrow (no fair sharing): the victim may be
  // reclaimed after all when the preemptor ends within its nominal quota once its own team's
  // victims are gone too — Kueue's round without borrowing (VictimSelector, step 4).
  bool reclaim_if_within_nominal = false;
};

// The within-team rule alone (Kueue's withinClusterQueue): may a pending pod of `priority`,
// created at `created_ms`, preempt a running pod of its own team of `victim_priority`, created at
// `victim_created_ms`? Part of JudgeVictim.
[[nodiscard]] bool WithinTeamAllows(model::WithinTeamPreemption rule, int32_t priority,
                                    int64_t created_ms, int32_t victim_priority,
                                    int64_t victim_created_ms);

// May `victim` be preempted for the preemptor (see the header comment)? `sim` holds the quota
// state of the flavor in question (nullptr: unknown — other teams' pods are then refused);
// `request` is the preemptor's request and `victim_charge` what the victim holds, both in `sim`
// slots.
[[nodiscard]] Verdict JudgeVictim(const model::Policy& policy, const PreemptorFacts& preemptor,
                                  const VictimFacts& victim, const QuotaSim* sim,
                                  const QuotaSim::Amounts& request,
                                  const QuotaSim::Amounts& victim_charge, int64_t now_ms);

// ---------------------------------------------------------------------------------------------
// The inputs of a choice.

struct NodeState {
  std::string name;
  bool schedulable = true;
  model::IdAmounts allocatable;
  model::IdAmounts used;  // by running pods (and claims)
};

// The nodes of one flavor with a name index.
struct FlavorNodes {
  model::NameId flavor = 0;
  std::vector<NodeState> nodes;
  std::unordered_map<std::string, uint32_t> index;

  void Add(NodeState node);
  // used += amounts / used −= amounts on the named node (no-op for an unknown node).
  void Take(const std::string& node, const model::IdAmounts& amounts);
  void Free(const std::string& node, const model::IdAmounts& amounts);
  [[nodiscard]] const NodeState* Find(const std::string& node) const;
};

// A running pod that could be a victim.
struct Candidate {
  std::string uid;
  std::string ns;
  std::string name;
  model::NameId team = 0;
  model::NameId flavor = 0;  // the flavor it is charged on
  int32_t priority = 0;
  int64_t created_ms = 0;
  int64_t started_ms = 0;
  int64_t admitted_ms = 0;
  // When its training last saved a checkpoint (taskgov.io/last-checkpoint on the pod or its job;
  // 0: unknown): what it loses if stopped is the work since max(started_ms, checkpoint_ms).
  int64_t checkpoint_ms = 0;
  std::string node;
  model::IdAmounts occupies;  // its effective request: what it holds on its node
  model::IdAmounts charged;   // what it holds in the ledger on `flavor`
  std::string gang;           // GangOf(pod)
  bool pdb_blocked = false;   // a PodDisruptionBudget refused its eviction recently
  // The teams it took capacity from recently as a preemptor, by reclaim or fair share: it is not
  // their victim (DESIGN §3.6: no two teams preempt each other back and forth).
  std::vector<model::NameId> took_from;
  bool excluded = false;  // already chosen (terminating): never chosen again
};

// Candidates with their indexes by flavor and gang.
class CandidateSet {
 public:
  CandidateSet() = default;
  explicit CandidateSet(std::vector<Candidate> candidates);

  [[nodiscard]] const std::vector<Candidate>& all() const { return all_; }
  [[nodiscard]] const Candidate& at(uint32_t i) const { return all_[i]; }
  [[nodiscard]] Candidate& at(uint32_t i) { return all_[i]; }
  [[nodiscard]] size_t size() const { return all_.size(); }
  // Candidates charged on `flavor`.
  [[nodiscard]] const std::vector<uint32_t>& OnFlavor(model::NameId flavor) const;
  // Every member of the candidate's gang (itself included; just itself without a gang), in UID
  // order, as a span into the index.
  void GangMembers(uint32_t i, const uint32_t** first, size_t* count) const;

 private:
  std::vector<Candidate> all_;
  std::unordered_map<model::NameId, std::vector<uint32_t>> by_flavor_;
  std::unordered_map<std::string, std::vector<uint32_t>> by_gang_;
  std::vector<uint32_t> self_;  // self_[i] == i (spans for pods without a gang)
  std::vector<const std::vector<uint32_t>*> gang_of_;
  static const std::vector<uint32_t> kEmpty;
};

struct Preemptor {
  std::string uid;
  std::string key;  // namespace/name
  model::NameId team = 0;
  int32_t priority = 0;
  int64_t created_ms = 0;
  model::ResourceList request;  // the pod's: what one node must have room for
  // What admitting it takes from the quota: its request, or for a gang member the request of
  // every member of its gang not holding quota yet (DESIGN §3.7). Empty: `request`.
  model::ResourceList need;
  // Its gang (WorkloadRef::key) and the members the gang declares; "" for a lone pod.
  std::string workload;
  int32_t workload_size = 0;
  // What its gang's members pinned to other flavors need there (decisions::SplitGangNeed):
  // reserved with `need` once it is admitted; their own members preempt for it there.
  std::vector<std::pair<model::NameId, model::ResourceList>> elsewhere;
  // Its gang must run in one domain at this node-label level (kueue.x-k8s.io/
  // podset-required-topology): room is freed for every member inside one domain
  // (VictimPlanner::Plan). "" for none.
  std::string required_topology;

  [[nodiscard]] const model::ResourceList& quota_request() const {
    return need.empty() ? request : need;
  }
};

struct SelectionInput {
  const model::Policy* policy = nullptr;
  const Preemptor* preemptor = nullptr;
  const QuotaSim* quota = nullptr;  // the flavor's quota state (terminating pods already freed)
  const FlavorNodes* nodes = nullptr;
  const CandidateSet* candidates = nullptr;
  int64_t now_ms = 0;
  // Parallel to nodes->nodes: non-zero where the preemptor's taints, nodeSelector and required
  // affinity let it go (NodeEligibility::accepts). nullptr: every node.
  const std::vector<uint8_t>* eligible = nullptr;
  // Parallel to nodes->nodes: when set, a unit is a candidate only if every member runs on a
  // node marked non-zero (victims inside one topology domain). nullptr: anywhere.
  const std::vector<uint8_t>* victim_nodes = nullptr;
};

struct Selection {
  enum class Outcome {
    kFits,       // fits now: nothing to evict
    kVictims,    // evicting `victims` lets it fit on `node`
    kNoVictims,  // no allowed victim set makes it fit (see `explanation`)
  };
  struct Victim {
    uint32_t candidate = 0;  // index in the CandidateSet
    PreemptionReason reason = PreemptionReason::kInTeamPriority;
    std::string note;  // a sentence a person can read: why this pod, for whom
  };
  Outcome outcome = Outcome::kNoVictims;
  model::NameId flavor = 0;
  std::string node;  // where the pod fits (kFits, kVictims)
  std::vector<Victim> victims;
  std::string explanation;
};

class VictimSelector {
 public:
  // Decides for one preemptor on the flavor of `in.quota` (see the header comment).
  [[nodiscard]] Selection Select(const SelectionInput& in);
  // The pod fits now; `node` (optional) receives the first eligible node with room.
  [[nodiscard]] static bool FitsNow(const SelectionInput& in, std::string* node = nullptr);

 private:
  using Amounts = QuotaSim::Amounts;
  struct Unit {
    uint32_t first_member = 0;  // into members_
    uint32_t member_count = 0;
    uint32_t first_free = 0;  // into frees_
    uint32_t free_count = 0;
    int row = -1;
    bool own = false;
    int32_t priority = 0;
    int64_t started_ms = 0;
    int64_t admitted_ms = 0;
    int64_t created_ms = 0;
    // Work is lost from here if it is stopped: its members' latest start or checkpoint.
    int64_t work_from_ms = 0;
    std::string_view uid;
    Amounts charge{};
  };
  struct NodeFree {
    uint32_t node = 0;
    Amounts amounts{};  // in request slots
  };
  struct Taken {
    uint32_t unit = 0;
    uint32_t pos = 0;
    PreemptionReason reason = PreemptionReason::kInTeamPriority;
  };

  // The steps of Select, in order.
  // Fills the request's quota slots and node slots; false when it names more resources than
  // QuotaSim::kMaxSlots.
  bool PrepareRequest(const SelectionInput& in);
  // work_ at the input state; the units (BuildUnits), those no walk could ever take set aside,
  // the rest in preference order (Order).
  void PrepareUnits(const SelectionInput& in, int prow);
  // The best node's walk, minimized, into best_ (header comment, steps 4 and 5); -1: none.
  int PickNode(const SelectionInput& in, int prow);
  // best_ as victims, each with its reason and note.
  void AddVictims(const SelectionInput& in, int prow, Selection* out);

  // Why no node can be freed (with how many nodes refuse the pod).
  std::string NoNodeExplanation(const SelectionInput& in) const;
  // Why the candidates were not enough, judged against the input state ("candidates: 3 not of
  // lower priority, 1 allowed").
  std::string CandidatesSummary(const SelectionInput& in, int prow);
  // The note of one chosen unit, against work_ with the units chosen before it removed.
  std::string VictimNote(const SelectionInput& in, int prow, const Unit& unit,
                         PreemptionReason reason) const;
  // Counts one more candidate set aside for `why` (static text).
  void CountExcluded(std::string_view why);

  void BuildUnits(const SelectionInput& in, int prow);
  void Order(const SelectionInput& in);
  // Under FairShare: Kueue's choice on quota alone puts its units first (see the definitions).
  void FairOrder(const SelectionInput& in);
  int NextTarget(int32_t pool, int prow);
  // ranges_ over targets_ (grouped by team); the cohort tree's prune marks reset, returning the
  // root of the preemptor's tree.
  void GroupTargets();
  int32_t ResetTree(int prow);
  // Within a team: lower priority first, most recently started first, UID last.
  static bool WithinTeamFirst(const Unit& x, const Unit& y);
  Verdict Judge(const SelectionInput& in, int prow, const Unit& unit, const QuotaSim& state) const;
  // Judge as the walk applies it (the round without borrowing allows conditional reclaims).
  Verdict JudgeInRound(const SelectionInput& in, int prow, const Unit& unit) const;
  // The rounds to try for this preemptor, in order, into rounds_.
  void PlanRounds(const SelectionInput& in, int prow);
  // Whether the round without borrowing is tried first: FirstComeFirstServe idle compute (no
  // fair-share preemption), the preemptor strictly under its nominal on every resource it asks
  // for, but over it once admitted.
  bool WithinNominalRoundApplies(const SelectionInput& in, int prow) const;
  // Greedy walk for target node `node` (-1: quota only). Returns whether the pod fits.
  // room_first: first the units that free room on the node, then those that free quota.
  bool Walk(const SelectionInput& in, int prow, int node, uint32_t max_pos, bool room_first,
            std::vector<Taken>* taken);
  // What evicting `unit` frees on node `node` (in request slots; nothing for -1).
  Amounts Gain(const Unit& unit, int node) const;
  // `gain` covers part of what `free` still lacks for the request.
  bool FreesRoom(const Amounts& free, const Amounts& gain) const;
  // Re-checks `taken` in order against the base state; true when every unit is still allowed
  // and the pod fits on `node`.
  bool Replay(const SelectionInput& in, int prow, int node, const std::vector<Taken>& taken,
              std::vector<Taken>* with_reasons);
  void Minimize(const SelectionInput& in, int prow, int node, std::vector<Taken>* taken);
  // Node `node` of in.nodes is schedulable and eligible.
  static bool Usable(const SelectionInput& in, size_t node);
  // `c` runs on a node of the flavor that in.victim_nodes marks.
  static bool OnMarkedNode(const SelectionInput& in, const Candidate& c);
  bool Room(const Amounts& free) const;
  Amounts BaseFree(const SelectionInput& in, uint32_t node) const;

  // Per-call state, reused.
  Amounts request_{};       // quota slots
  Amounts node_request_{};  // request slots
  std::array<model::NameId, QuotaSim::kMaxSlots> node_resources_{};
  size_t node_slot_count_ = 0;
  std::vector<Unit> units_;
  std::vector<uint32_t> members_;
  std::vector<NodeFree> frees_;
  std::vector<uint32_t> order_;
  std::vector<uint32_t> stamp_;
  uint32_t call_ = 0;
  std::vector<Amounts> reach_;
  std::vector<Taken> taken_;
  std::vector<Taken> best_;
  std::vector<Taken> trial_;
  std::vector<Taken> replayed_;
  std::vector<uint8_t> on_node_;   // Walk(room_first): order positions taken for room
  std::vector<uint32_t> targets_;  // FairOrder: the units NextTarget chooses among
  std::vector<uint32_t> retry_;    // FairOrder: units refused by the first strategy
  std::vector<uint8_t> taken_flag_;
  struct TeamRange {  // a team's units in targets_: [next, end)
    size_t next = 0;
    size_t end = 0;
    int row = -1;
  };
  std::vector<TeamRange> ranges_;
  std::vector<uint8_t> pool_pruned_;   // NextTarget: cohorts with nothing left to give
  std::vector<uint8_t> pool_on_path_;  // the preemptor's cohort and its ancestors
  std::vector<uint32_t> sequence_;
  // The rules of the walk in progress (header comment, step 4). Kueue's round without
  // borrowing: reclaims allowed only if the preemptor ends within its nominal quota are taken,
  // and the walk succeeds only so. Fair sharing: the strategies this round may use
  // (kFinalShareBit | kInitialShareBit).
  static constexpr uint8_t kFinalShareBit = 1, kInitialShareBit = 2;
  struct Round {
    bool within_nominal = false;
    uint8_t fair_strategies = kFinalShareBit | kInitialShareBit;
  };
  Round round_;
  std::vector<Round> rounds_;
  QuotaSim work_;         // the state being tried: a copy of the input, journaled
  size_t base_mark_ = 0;  // work_ at the input state
  std::vector<std::pair<std::string_view, int>> excluded_;
};

}  // namespace taskgov::scheduler::decisions
