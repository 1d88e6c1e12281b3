#include "scheduler/decisions/rules.h"

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "scheduler/common/log.h"

#include "scheduler/decisions/fair_share.h"
#include "scheduler/decisions/gang_room.h"
#include "scheduler/decisions/preemption.h"

namespace taskgov::scheduler::decisions {
namespace {

using ledger::CellView;
using ledger::Ledger;
using model::FlavorNames;
using model::IdleComputeAllocation;
using model::kUnlimited;
using model::NameId;
using model::QueueingStrategy;
using model::ResourceAmount;
using model::ResourceList;
using model::ResourceNames;
using model::SaturatingAdd;
using model::SaturatingSub;
using model::Team;
using model::TeamNames;
using model::WithinTeamPreemption;
using state::PendingPod;
using Mode = Ledger::Mode;

// Amounts by resource id: the few resources of a request, found by a scan (no name compared).
class IdTotals {
 public:
  [[nodiscard]] int64_t Get(NameId resource) const {
    for (const auto& [id, amount] : items_) {
      if (id == resource) return amount;
    }
    return 0;
  }
  void Set(NameId resource, int64_t amount) {
    for (auto& [id, value] : items_) {
      if (id == resource) {
        value = amount;
        return;
      }
    }
    items_.emplace_back(resource, amount);
  }
  void Add(const IdTotals& other) {
    for (const auto& [id, amount] : other.items_) Set(id, SaturatingAdd(Get(id), amount));
  }

 private:
  std::vector<std::pair<NameId, int64_t>> items_;
};

// What hypothetical admissions add on top of the ledger's current numbers: to one team's usage
// and to its cohort pool.
struct Tally {
  IdTotals team;
  IdTotals pool;
};

// One resource of a dry run (DESIGN §3.3): `amount` on top of the cell `v` with `team_extra`
// already added to the team's usage and `pool_extra` to its pool. The line's resource name is
// left to the caller (the filter's rules need only the numbers, and allocate nothing).
QuotaLine LineOf(const CellView& v, int64_t amount, Mode mode, int64_t team_extra,
                 int64_t pool_extra) {
  QuotaLine line;
  line.need = amount;
  line.in_use = SaturatingAdd(v.usage, team_extra);
  line.nominal = v.nominal;
  line.borrowing_limit = v.borrowing_limit;
  const int64_t ceiling =
      v.borrowing_limit == kUnlimited ? kUnlimited : SaturatingAdd(v.nominal, v.borrowing_limit);
  line.limit = mode == Mode::kWithinNominal ? std::min(v.nominal, ceiling) : ceiling;
  line.ceiling = ceiling;
  line.pool_used = SaturatingAdd(v.pool_used, pool_extra);
  line.pool_capacity = v.pool_capacity;
  line.pool_free = std::max<int64_t>(0, SaturatingSub(v.pool_free, pool_extra));
  line.pool_need = std::max<int64_t>(0, line.in_use + amount - v.guaranteed) -
                   std::max<int64_t>(0, line.in_use - v.guaranteed);
  line.team_fits = SaturatingAdd(line.in_use, amount) <= line.limit;
  line.pool_fits = line.pool_need <= line.pool_free;
  return line;
}

// Would `request` fit for (team, flavor) on top of the ledger and `tally`? A dry run. When it
// fits and `after` is given, *after = tally plus this admission.
bool FitsOnTop(const Ledger::Session& s, NameId team, NameId flavor, const ResourceList& request,
               Mode mode, const Tally& tally, Tally* after) {
  if (!s.HasFlavor(team, flavor)) return false;
  std::optional<Tally> next;  // only when asked for: a check alone allocates nothing
  if (after != nullptr) next = tally;
  for (const ResourceAmount& want : request) {
    std::optional<NameId> resource = ResourceNames().Find(want.name);
    if (!resource) continue;
    CellView v = s.View(team, flavor, *resource);
    if (!v.exists) continue;
    const QuotaLine line =
        LineOf(v, want.amount, mode, tally.team.Get(*resource), tally.pool.Get(*resource));
    if (!line.fits()) return false;
    if (!next) continue;
    next->team.Set(*resource, SaturatingAdd(next->team.Get(*resource), want.amount));
    next->pool.Set(*resource, SaturatingAdd(next->pool.Get(*resource), line.pool_need));
  }
  if (after != nullptr) *after = std::move(*next);
  return true;
}

// What admitting `need` for (team, flavor) adds to its cohort pool — the part above the team's
// guaranteed quota (DESIGN §3.3) — whether or not it fits now (a preemptor's need fits only once
// its victims are gone).
Tally PoolTake(const Ledger::Session& s, NameId team, NameId flavor, const ResourceList& need) {
  Tally take;
  for (const ResourceAmount& want : need) {
    std::optional<NameId> resource = ResourceNames().Find(want.name);
    if (!resource || want.amount <= 0) continue;
    const CellView v = s.View(team, flavor, *resource);
    if (!v.exists) continue;
    take.pool.Set(*resource, LineOf(v, want.amount, Mode::kBorrowing, 0, 0).pool_need);
  }
  return take;
}

// Whether `need` on top of what (team, flavor) uses — and `tally` adds — stays within the team's
// own limit on every resource, whatever the pool holds: its nominal quota (kWithinNominal: a team
// within it reclaims what it lent) or its ceiling, nominal plus borrowing limit (kBorrowing).
bool TeamWithin(const Ledger::Session& s, NameId team, NameId flavor, const ResourceList& need,
                const Tally& tally, Mode limit) {
  for (const ResourceAmount& want : need) {
    std::optional<NameId> resource = ResourceNames().Find(want.name);
    if (!resource || want.amount <= 0) continue;
    const CellView v = s.View(team, flavor, *resource);
    if (!v.exists) continue;
    if (!LineOf(v, want.amount, limit, tally.team.Get(*resource), 0).team_fits) return false;
  }
  return true;
}

// Whether `need` could ever be admitted for (team, flavor): within its nominal plus borrowing
// limit, and the part beyond its guaranteed quota within what its cohort could ever lend it (the
// pool's potential).
bool CouldEverFit(const Ledger::Session& s, NameId team, NameId flavor, const ResourceList& need) {
  for (const ResourceAmount& want : need) {
    std::optional<NameId> resource = ResourceNames().Find(want.name);
    if (!resource || want.amount <= 0) continue;
    const CellView v = s.View(team, flavor, *resource);
    if (!v.exists) continue;
    if (LineOf(v, want.amount, Mode::kBorrowing, 0, 0).ceiling < want.amount) return false;
    if (std::max<int64_t>(0, want.amount - v.guaranteed) > v.pool_potential) return false;
  }
  return true;
}

// Whether pending pod `pod` (of team `other`, needing `need`, not fitting now) could preempt the
// subject once the subject is admitted on `sim`'s flavor: the victim rule (JudgeVictim) on the
// flavor's numbers with the subject's need added — admitting the subject would only make it a
// victim (DESIGN §3.7: no ping-pong). Unless the preemption controller set that pod aside (it
// found nothing it may free for it, or its turn has not come): whether it frees room for it now
// or has not decided yet (it decides within a fraction of a second), the subject waits. The
// minimum runtime is not counted: it delays such a preemption, it does not prevent it. The
// reason when it could, else nothing.
std::optional<std::string> WouldTakeBack(const Snapshot& snapshot, const QuotaSim& sim,
                                         const Team& other, NameId other_id, const PendingPod& pod,
                                         const ResourceList& need) {
  if (!snapshot.preemptor_state || snapshot.preemptor_state(pod.uid) == PreemptorState::kSetAside) {
    return std::nullopt;
  }
  const Subject& me = snapshot.subject;
  QuotaSim admitted = sim;
  const int row = admitted.Row(me.team_id);
  if (row < 0) return std::nullopt;
  const QuotaSim::Amounts mine = admitted.ToSlots(me.need);
  admitted.Add(row, mine);
  PreemptorFacts preemptor{&other, other_id, pod.priority, pod.created_ms};
  VictimFacts victim{me.team, me.team_id, me.priority, me.pod->creation_unix_ms,
                     snapshot.now_ms - snapshot.policy.preemption.minimum_runtime_seconds * 1000};
  const Verdict v = JudgeVictim(snapshot.policy, preemptor, victim, &admitted,
                                admitted.ToSlots(need), mine, snapshot.now_ms);
  if (!v.allowed) return std::nullopt;
  return "pending pod " + pod.key + " of " + other.name + " could preempt it once admitted (" +
         std::string(ReasonName(v.reason)) + ")";
}

}  // namespace

std::vector<QuotaLine> QuotaLines(const Ledger::Session& session, NameId team, NameId flavor,
                                  const ResourceList& need, Ledger::Mode mode) {
  std::vector<QuotaLine> lines;
  for (const ResourceAmount& want : need) {
    if (want.amount <= 0) continue;
    std::optional<NameId> resource = ResourceNames().Find(want.name);
    if (!resource) continue;
    const CellView v = session.View(team, flavor, *resource);
    if (!v.exists) continue;
    lines.push_back(LineOf(v, want.amount, mode, 0, 0));
    lines.back().resource = want.name;
  }
  return lines;
}

int64_t WeightedShare(const Ledger::Session& session, const Team& team, NameId flavor,
                      const ResourceList& request) {
  const NameId team_id = TeamNames().Intern(team.name);
  ShareAccumulator share;
  for (NameId resource : session.Resources(team_id, flavor)) {
    CellView v = session.View(team_id, flavor, resource);
    share.Add(v.usage + request.Get(ResourceNames().Name(resource)), v.nominal, v.pool_potential);
  }
  return share.PerMille(team.fair_share_weight);
}

bool Starving(const model::Policy& policy, int64_t created_ms, int64_t now_ms) {
  const int64_t bound_ms = policy.starvation_bound_seconds * 1000;
  const int64_t waited_ms = now_ms - created_ms;
  return bound_ms > 0 && waited_ms > bound_ms && waited_ms <= kStarvationGiveUp * bound_ms;
}

namespace {

// Whether the team's nominal quota on the flavor could hold `need` alone, resource by resource
// (what the team uses aside: its pods ending make that room).
bool NominalCanHold(const Ledger::Session& s, NameId team, NameId flavor,
                    const ResourceList& need) {
  for (const ResourceAmount& want : need) {
    std::optional<NameId> resource = ResourceNames().Find(want.name);
    if (!resource || want.amount <= 0) continue;
    const CellView v = s.View(team, flavor, *resource);
    if (v.exists && want.amount > v.nominal) return false;
  }
  return true;
}

// Whether a workload needing `mine` is smaller than one needing `theirs`: less of the first
// accelerator `theirs` asks for, else of cpu. Only smaller workloads are held back for a starving
// one: one at least as large that fits leaves it no less room than it had.
bool Smaller(const ResourceList& mine, const ResourceList& theirs) {
  for (const ResourceAmount& r : theirs) {
    if (model::IsAccelerator(r.name)) return mine.Get(r.name) < r.amount;
  }
  return mine.Get("cpu") < theirs.Get("cpu");
}

// What `pod`'s workload asks for whole: a lone pod's request, a gang member's times the members
// its gang declares.
ResourceList WholeNeed(const PendingPod& pod) {
  return pod.workload.empty() ? pod.request : pod.request.Times(std::max(1, pod.workload_size));
}

// Whether `pod` is a member of a gang already in `gangs` — a gang ahead counts once, by its
// best-ranked member — else records its gang. `gangs` views the pods' own strings.
bool GangSeen(const PendingPod& pod, std::vector<std::string_view>* gangs) {
  if (pod.workload.empty()) return false;
  if (std::find(gangs->begin(), gangs->end(), pod.workload) != gangs->end()) return true;
  gangs->push_back(pod.workload);
  return false;
}

// Whether pending pod `pod`'s workload backs off from borrowing now (state::DisruptionLog).
bool BacksOff(const Snapshot& snapshot, const PendingPod& pod) {
  return snapshot.cluster != nullptr && !pod.gang.empty() &&
         snapshot.cluster->BackingOff(pod.gang, snapshot.now_ms).has_value();
}

// Whether the subject may pass `other`, a pod (or gang) ranked ahead of it in its team's queue
// whose quota would leave the subject none, while `other` cannot run (backfill): no node has room
// for it (with all its gang's members) now, nothing is being freed for it, and it is not starving
// (then the room it needs is kept for it). When `other` could preempt the subject once admitted
// (the team's within-team rule), the preemption controller must also have looked at it and found
// nothing to free (set aside): passing it then makes no victim of a round that could start, only
// uses room it cannot use; the subject's minimum runtime protects it once it runs. Before that
// look, the subject waits for it (the controller runs within a second).
// The room is looked at while `*room_looks` > 0 (each look scans the flavor's nodes); else no.
bool MayPass(const Snapshot& snapshot, const PendingPod& other, NameId flavor, int* room_looks) {
  const Subject& me = snapshot.subject;
  if (snapshot.cluster == nullptr) return false;
  bool could_preempt_me = false;
  switch (me.team->within_team) {
    case WithinTeamPreemption::kNever:
      break;
    case WithinTeamPreemption::kLowerPriority:
      could_preempt_me = other.priority > me.priority;
      break;
    case WithinTeamPreemption::kLowerOrNewerEqualPriority:
      could_preempt_me = other.priority >= me.priority;  // the subject is the newer one
      break;
  }
  if (Starving(snapshot.policy, other.created_ms, snapshot.now_ms)) return false;
  const PreemptorState state =  // unset: nothing is ever preempted (Admission::SetPreemptorState)
      snapshot.preemptor_state ? snapshot.preemptor_state(other.uid) : PreemptorState::kSetAside;
  if (state == PreemptorState::kPreempting) return false;
  if (could_preempt_me && state != PreemptorState::kSetAside) return false;
  if (*room_looks <= 0) return false;
  --*room_looks;
  const std::optional<GangRoom> room =
      RoomForPending(*snapshot.cluster, flavor, other, snapshot.now_ms);
  return room.has_value() && !room->fits();
}

std::string StarvingAhead(const Snapshot& snapshot, const PendingPod& other) {
  return "waiting behind " +
         (other.workload.empty() ? "pod " + other.key : "gang of pod " + other.key) +
         ", which has waited longer than the starvation bound (" +
         std::to_string(snapshot.policy.starvation_bound_seconds) +
         "s): the capacity it needs is kept for it";
}

}  // namespace

std::optional<std::string> QueueOrderBlocks(const Snapshot& snapshot, NameId flavor, Mode mode) {
  const Subject& me = snapshot.subject;
  if (snapshot.ahead.empty()) return std::nullopt;
  if (me.team->queueing == QueueingStrategy::kStrictFIFO) {
    return "waiting behind higher-ranked pod " + snapshot.ahead.front()->key + " (StrictFIFO)";
  }
  // BestEffortFIFO: the pods ahead take what they can, in rank order (a pod that cannot fit
  // does not hold the others back); this pod waits if what they take leaves it no room.
  const Ledger::Session& s = snapshot.session;
  const Tally none;
  if (!FitsOnTop(s, me.team_id, flavor, me.need, mode, none, nullptr)) {
    return std::nullopt;  // it does not fit anyway: the quota refusal explains it
  }
  Tally ahead;
  std::optional<QuotaSim> tree;  // the flavor's numbers, for the victim rule
  const std::string_view flavor_name = FlavorNames().Name(flavor);
  std::vector<std::string_view> gangs;  // a gang ahead takes its members' quota once, whole
  int room_looks = 4;  // MayPass scans the flavor's nodes: at most 4 times a decision
  for (const state::PendingRef& entry : snapshot.ahead) {
    const PendingPod& other = *entry;
    if (!snapshot.policy.FlavorAllows(flavor_name, other.node_selector)) continue;  // elsewhere
    if (GangSeen(other, &gangs)) continue;
    const ResourceList other_need = WholeNeed(other);
    // Backing off from borrowing: it takes now only what its team's nominal quota holds.
    const Mode other_mode = BacksOff(snapshot, other) ? Mode::kWithinNominal : Mode::kBorrowing;
    Tally with_other;  // what the pods ahead take with this one
    if (!FitsOnTop(s, me.team_id, flavor, other_need, other_mode, ahead, &with_other)) {
      if (other_mode == Mode::kWithinNominal) continue;
      // It does not fit now; if it ever can and may preempt this pod once admitted (a higher
      // priority), admitting this pod would only make its victim.
      if (!CouldEverFit(s, me.team_id, flavor, other_need)) continue;
      // Starving: what this pod would take is kept for it, or smaller pods could pass it forever
      // — when its team's own quota can hold it (then the team's pods ending make room; what it
      // needs beyond that comes from other teams' borrowing draining, FairShareBlocks).
      if (Starving(snapshot.policy, other.created_ms, snapshot.now_ms) &&
          Smaller(me.need, other_need) && NominalCanHold(s, me.team_id, flavor, other_need)) {
        return StarvingAhead(snapshot, other);
      }
      if (!tree) tree = QuotaSim::FromSession(s, flavor);
      if (std::optional<std::string> why =
              WouldTakeBack(snapshot, *tree, *me.team, me.team_id, other, other_need)) {
        return "waiting behind higher-ranked " +
               (other.workload.empty() ? "pod " + other.key : "gang of pod " + other.key) +
               ", which needs this room: " + *why;
      }
      continue;
    }
    if (!FitsOnTop(s, me.team_id, flavor, me.need, mode, with_other, nullptr)) {
      if (MayPass(snapshot, other, flavor, &room_looks)) continue;  // it takes nothing for now
      return "waiting behind higher-ranked " +
             (other.workload.empty() ? "pod " + other.key : "gang of pod " + other.key);
    }
    ahead = std::move(with_other);
  }
  return std::nullopt;
}

namespace {

// What two teams' pending workloads compare under fair sharing, each with its need admitted.
struct Sides {
  int64_t mine = 0;
  int64_t theirs = 0;
  std::string my_name;
  std::string their_name;
};

// Across a cohort tree: the sides just below the lowest cohort the two teams share, each team or
// its ancestor cohort there with that cohort's weight (Kueue's tournament compares them where
// the two workloads meet).
Sides TreeSides(const QuotaSim& tree, const Subject& me, const Team& other, NameId other_id,
                const ResourceList& need) {
  const int a = tree.Row(me.team_id);
  const int b = tree.Row(other_id);
  Sides sides;
  sides.my_name = me.team->name;
  sides.their_name = other.name;
  if (a < 0 || b < 0) return sides;  // not on the flavor: shares 0, as WeightedShare's
  const QuotaSim::FairShares shares =
      tree.CompareAdmissions(a, b, tree.ToSlots(me.need), tree.ToSlots(need));
  sides.mine = shares.preemptor_after;
  sides.theirs = shares.victim_after;
  if (shares.preemptor_pool >= 0) {
    sides.my_name += "'s cohort " + tree.pool_name(shares.preemptor_pool);
  }
  if (shares.victim_pool >= 0)
    sides.their_name += "'s cohort " + tree.pool_name(shares.victim_pool);
  return sides;
}

}  // namespace

std::optional<std::string> FairShareBlocks(const Snapshot& snapshot, NameId flavor) {
  const Subject& me = snapshot.subject;
  if (!snapshot.heads) {
    common::log::Error("admission", "fair share judged without the cohort's heads");
    std::abort();
  }
  if (snapshot.policy.idle_compute != IdleComputeAllocation::kFairShare ||
      me.team->cohort.empty() || snapshot.heads->empty()) {
    return std::nullopt;
  }
  const Ledger::Session& s = snapshot.session;
  const int64_t my_share = WeightedShare(s, *me.team, flavor, me.need);
  const Tally mine = PoolTake(s, me.team_id, flavor, me.need);
  std::optional<QuotaSim> tree;  // the flavor's numbers, for heads of other cohorts of the tree
  const std::string_view flavor_name = FlavorNames().Name(flavor);
  // Each other team's pods come in its rank order, those that fit taking their need first (as in
  // its own queue, QueueOrderBlocks). A pod this one's borrowing would keep waiting — it does not
  // fit once this pod took its share of the pool — goes first, whether it fits now or must
  // preempt to get in (what it would preempt includes this pod: admitting it would only make a
  // victim):
  //  * when it fits within its own team's nominal quota (Kueue's FairSharingPrioritizeNonBorrowing:
  //    a team that does not borrow wins; it reclaims what it lent);
  //  * when it borrows too, within its team's ceiling (beside what its team uses now: a pod
  //    beyond it waits for its own team's pods to end, not for the pool, and holds nothing —
  //    Kueue skips a workload its borrowing limit refuses), with a lower weighted share after
  //    admission than this pod's (ties: the older pod) — the order fair-share preemption keeps;
  //  * when it starves (Starving) and this pod does not.
  const bool i_starve = Starving(snapshot.policy, me.pod->creation_unix_ms, snapshot.now_ms);
  const Team* team_of_tally = nullptr;
  NameId other_id = 0;                  // team_of_tally's
  Tally theirs;                         // what the other team's pods ahead take
  std::vector<std::string_view> gangs;  // theirs: a gang ahead takes its members' need once
  for (const auto& [other_team, head_entry] : *snapshot.heads) {
    const PendingPod& head = *head_entry;
    const Team& other = *other_team;
    if (other_team != team_of_tally) {
      team_of_tally = other_team;
      other_id = TeamNames().Intern(other.name);
      theirs = Tally{};
      gangs.clear();
    }
    if (!s.HasFlavor(other_id, flavor)) continue;
    if (!snapshot.policy.FlavorAllows(flavor_name, head.node_selector)) continue;
    // A gang at the head asks for its members together, once (counted for each member, it would
    // seem to need its room again beside this pod, and the pods behind it not to fit).
    if (GangSeen(head, &gangs)) continue;
    std::optional<ResourceList> gang_need;
    if (!head.workload.empty()) gang_need = WholeNeed(head);
    const ResourceList& need = gang_need ? *gang_need : head.request;
    const Tally before = theirs;
    // A pod that would fit alone but not after the pods ahead of it in its own queue took theirs
    // waits for them, not for this pod (else two teams' pods could each wait for the other).
    if (!FitsOnTop(s, other_id, flavor, need, Mode::kBorrowing, before, &theirs) &&
        FitsOnTop(s, other_id, flavor, need, Mode::kBorrowing, Tally{}, nullptr)) {
      continue;
    }
    Tally after_mine = before;  // its view once this pod took its share of the pool
    after_mine.pool.Add(mine.pool);
    if (FitsOnTop(s, other_id, flavor, need, Mode::kBorrowing, after_mine, nullptr)) continue;
    if (TeamWithin(s, other_id, flavor, need, before, Mode::kWithinNominal)) {
      return "fair share: " + other.name + " is ahead of " + me.team->name + ": its pending pod " +
             head.key + " fits within its nominal quota, and " + me.team->name +
             " would borrow what it needs";
    }
    if (BacksOff(snapshot, head)) continue;                  // it does not borrow now
    if (!CouldEverFit(s, other_id, flavor, need)) continue;  // it can never be admitted
    if (!TeamWithin(s, other_id, flavor, need, before, Mode::kBorrowing)) continue;
    // A starving pod goes before other teams' borrowers that do not starve, whatever the shares.
    if (i_starve) continue;
    if (Starving(snapshot.policy, head.created_ms, snapshot.now_ms) && Smaller(me.need, need)) {
      return StarvingAhead(snapshot, head);
    }
    Sides sides;
    if (other.cohort == me.team->cohort) {  // siblings: the teams' own shares
      sides = Sides{my_share, WeightedShare(s, other, flavor, need), me.team->name, other.name};
    } else {
      if (!tree) tree = QuotaSim::FromSession(s, flavor);
      sides = TreeSides(*tree, me, other, other_id, need);
    }
    if (sides.theirs < sides.mine ||
        (sides.theirs == sides.mine && head.created_ms < me.pod->creation_unix_ms)) {
      return "fair share: " + sides.their_name + " (share " + ShowShare(sides.theirs) +
             ") is ahead of " + sides.my_name + " (share " + ShowShare(sides.mine) + ")";
    }
  }
  return std::nullopt;
}

namespace {

// BorrowingHeldBack's owner rule on the subject's snapshot (rules.h, OwnerView).
std::optional<std::string> OwnerWaits(const Snapshot& snap, const state::ClusterState& cluster,
                                      NameId flavor, const OwnerView& view) {
  const Subject& me = snap.subject;
  if (me.team->cohort.empty()) return std::nullopt;
  const std::string_view flavor_name = FlavorNames().Name(flavor);
  // Deeper than the filter's look at other teams' heads: a team's best-ranked pods are often
  // gangs' members, or wait for another flavor. Called only before a borrower's round starts.
  constexpr size_t kLookahead = 64;
  const Team* team_of_id = nullptr;
  NameId other_id = 0;  // team_of_id's
  for (const auto& [other, head] :
       CohortHeads(cluster.pending(), snap.book, snap.policy, *me.team, kLookahead)) {
    if (other != team_of_id) {  // a team's heads come together
      team_of_id = other;
      other_id = TeamNames().Intern(other->name);
    }
    if (!snap.session.HasFlavor(other_id, flavor)) continue;
    if (!snap.policy.FlavorAllows(flavor_name, head->node_selector)) continue;
    ResourceList need = WholeNeed(*head);
    if (view.preemptible) {  // what its own team's pods it may preempt would give back
      for (const ResourceAmount& r : view.preemptible(*other, *head)) {
        need.Set(r.name, std::max<int64_t>(0, need.Get(r.name) - r.amount));
      }
    }
    if (TeamWithin(snap.session, other_id, flavor, need, Tally{}, Mode::kWithinNominal)) {
      // Last, being the dearest: a pod that could never run holds no borrower back.
      if (view.hopeless && view.hopeless(*head)) continue;
      return other->name + "'s pending pod " + head->key + " fits within " + other->name +
             "'s nominal quota on " + std::string(flavor_name) +
             " and goes first: it would reclaim what " + me.team->name + " borrowed there";
    }
  }
  return std::nullopt;
}

// A snapshot of `pod` as a filter call takes it, for the preemption controller's questions
// (`state`: what it makes of pending pods), without the nodes: none is judged, so its own team's
// queue is not read either (TakeAhead). It owns the filter arguments the snapshot's subject points
// into. `governed`: the pod has an active team (else no rule applies).
struct ControllerSnapshot {
  ControllerSnapshot(const ledger::QuotaBook& book, const state::ClusterState& cluster,
                     const model::Pod& pod, int64_t now_ms,
                     std::function<PreemptorState(std::string_view uid)> state)
      : snap(book) {
    snap.now_ms = now_ms;
    snap.preemptor_state = std::move(state);
    args.pod = pod;
    TakeSnapshot(book, cluster, args, /*queue_lookahead=*/0, &snap);
    governed = snap.subject.team != nullptr && snap.subject.team->active;
  }
  FilterArgs args;
  Snapshot snap;
  bool governed = false;
};

}  // namespace

std::optional<std::string> BorrowingHeldBack(
    const ledger::QuotaBook& book, const state::ClusterState& cluster, const model::Pod& pod,
    NameId flavor, int64_t now_ms, std::function<PreemptorState(std::string_view uid)> state,
    const OwnerView& view) {
  ControllerSnapshot c(book, cluster, pod, now_ms, std::move(state));
  if (!c.governed) return std::nullopt;
  if (std::optional<std::string> why = OwnerWaits(c.snap, cluster, flavor, view)) return why;
  TakeCohortHeads(cluster, &c.snap);
  return FairShareBlocks(c.snap, flavor);
}

std::optional<std::string> QueueOrderHoldsBack(
    const ledger::QuotaBook& book, const state::ClusterState& cluster, const model::Pod& pod,
    NameId flavor, int64_t now_ms, std::function<PreemptorState(std::string_view uid)> state) {
  ControllerSnapshot c(book, cluster, pod, now_ms, std::move(state));
  if (!c.governed || c.snap.subject.held) return std::nullopt;
  TakeAhead(book, cluster, kQueueLookahead, &c.snap);
  return QueueOrderBlocks(c.snap, flavor, Mode::kBorrowing);
}

std::optional<std::string> BorrowingBackOff(const state::ClusterState& cluster,
                                            std::string_view workload, int64_t now_ms) {
  const std::optional<state::DisruptionLog::BackOff> b = cluster.BackingOff(workload, now_ms);
  if (!b) return std::nullopt;
  return "disrupted by preemption " +
         (b->disruptions == 1 ? std::string("once") : std::to_string(b->disruptions) + " times") +
         ", last " + std::to_string((now_ms - b->last_ms) / 1000) +
         "s ago: it may borrow again in " + std::to_string((b->until_ms - now_ms + 999) / 1000) +
         (b->ends_with_preemptor ? "s, or once the pod it was stopped for has finished" : "s") +
         " (within its team's nominal quota it may run now)";
}

int64_t ReportedWeightedShare(const Ledger::Session& session, const Team& team, NameId flavor) {
  if (team.fair_share_weight > 0) return WeightedShare(session, team, flavor, ResourceList{});
  const NameId team_id = TeamNames().Intern(team.name);
  for (NameId resource : session.Resources(team_id, flavor)) {
    const CellView v = session.View(team_id, flavor, resource);
    if (v.usage > v.nominal) return kUnlimited;
  }
  return 0;
}

}  // namespace taskgov::scheduler::decisions
