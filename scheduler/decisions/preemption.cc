#include "scheduler/decisions/preemption.h"

#include "scheduler/decisions/fair_share.h"

#include <algorithm>
#include <limits>

#include "scheduler/model/quantity.h"

namespace taskgov::scheduler::decisions {

using ledger::CellView;
using ledger::Ledger;
using model::AmountOf;
using model::BorrowWithinCohort;
using model::FairShareStrategy;
using model::FlavorNames;
using model::FormatQuantity;
using model::IdAmounts;
using model::IdleComputeAllocation;
using model::kUnlimited;
using model::NameId;
using model::Policy;
using model::ReclaimPolicy;
using model::ResourceAmount;
using model::ResourceList;
using model::ResourceNames;
using model::SaturatingAdd;
using model::Team;
using model::TeamNames;
using model::WithinTeamPreemption;

namespace {

int64_t Positive(int64_t v) { return v > 0 ? v : 0; }

std::string Show(NameId resource, int64_t amount) {
  if (amount == kUnlimited) return "unlimited";
  return FormatQuantity(ResourceNames().Name(resource), amount);
}

Verdict Yes(PreemptionReason reason) { return Verdict{true, reason, {}, false}; }
// A refusal that may change as the state loses usage (shares, the preemptor's own usage).
Verdict No(std::string_view why) {
  return Verdict{false, PreemptionReason::kInTeamPriority, why, false};
}
// A refusal that holds however much usage the state loses.
Verdict Never(std::string_view why) {
  return Verdict{false, PreemptionReason::kInTeamPriority, why, true};
}

}  // namespace

std::string_view ReasonName(PreemptionReason reason) {
  switch (reason) {
    case PreemptionReason::kInTeamPriority:
      return "InTeamPriority";
    case PreemptionReason::kReclaim:
      return "Reclaim";
    case PreemptionReason::kFairShare:
      return "FairShare";
    case PreemptionReason::kReclaimWhileBorrowing:
      return "ReclaimWhileBorrowing";
    case PreemptionReason::kPriority:
      return "Priority";
  }
  return "Priority";
}

// ---- QuotaSim ----

void QuotaSim::AddCell(const Policy& policy, NameId team, NameId resource, const CellView& view,
                       const std::vector<Ledger::PoolUsage>& pools) {
  if (!view.exists) return;
  int slot = Slot(resource);
  if (slot < 0) {
    if (slot_count_ == kMaxSlots) {
      ++dropped_;
      return;
    }
    slots_[slot_count_] = resource;
    slot = static_cast<int>(slot_count_++);
  }
  int row = Row(team);
  if (row < 0) {
    TeamRow r;
    r.team = team;
    r.policy = policy.FindTeam(TeamNames().Name(team));
    r.weight = r.policy != nullptr ? r.policy->fair_share_weight : 1.0;
    const std::string key = r.policy == nullptr        ? "\x01orphan:" + TeamNames().Name(team)
                            : r.policy->cohort.empty() ? "\x01team:" + r.policy->name
                                                       : r.policy->cohort;
    r.pool = static_cast<uint32_t>(PoolNamed(policy, key));
    rows_.push_back(r);
    row = static_cast<int>(rows_.size() - 1);
  }
  Cell& cell = rows_[row].cells[slot];
  cell.governed = true;
  cell.usage = view.usage;
  cell.nominal = view.nominal;
  cell.ceiling = view.borrowing_limit == kUnlimited
                     ? kUnlimited
                     : SaturatingAdd(view.nominal, view.borrowing_limit);
  cell.guaranteed = view.guaranteed;
  cell.lendable = view.pool_potential;
  // The team's pool and its parents up the tree, on this slot.
  int32_t p = static_cast<int32_t>(rows_[row].pool);
  for (int32_t at = view.pool; at >= 0 && at < static_cast<int32_t>(pools.size());
       at = pools[at].parent) {
    const Ledger::PoolUsage& from = pools[at];
    Pool& to = pools_[p];
    to.used[slot] = from.used;
    to.capacity[slot] = from.capacity;
    to.local[slot] = from.local;
    to.in_parent_limit[slot] = from.in_parent_limit;
    to.potential[slot] = from.potential;
    if (from.parent < 0) break;
    const int32_t parent = PoolNamed(policy, pools[from.parent].cohort);
    pools_[p].parent = parent;
    p = parent;
  }
}

int32_t QuotaSim::PoolNamed(const Policy& policy, const std::string& key) {
  auto it = std::find(pool_keys_.begin(), pool_keys_.end(), key);
  if (it != pool_keys_.end()) return static_cast<int32_t>(it - pool_keys_.begin());
  pool_keys_.push_back(key);
  pools_.emplace_back();
  if (const model::Cohort* cohort = policy.FindCohort(key)) {
    pools_.back().weight = cohort->fair_share_weight;
  }
  return static_cast<int32_t>(pools_.size() - 1);
}

QuotaSim QuotaSim::FromUsage(const Policy& policy, NameId flavor, const Ledger::Usage& usage) {
  QuotaSim sim;
  sim.flavor_ = flavor;
  for (const std::vector<Ledger::CellUsage>* cells : {&usage.cells, &usage.companions}) {
    for (const Ledger::CellUsage& cell : *cells) {
      if (cell.key.flavor != flavor) continue;
      sim.AddCell(policy, cell.key.team, cell.key.resource, cell.view, usage.pools);
    }
  }
  return sim;
}

QuotaSim QuotaSim::FromSession(const Ledger::Session& session, NameId flavor) {
  QuotaSim sim;
  sim.flavor_ = flavor;
  const Policy& policy = session.policy();
  const std::vector<Ledger::PoolUsage> pools = session.Pools();
  for (const Team& team : policy.teams) {
    const NameId team_id = TeamNames().Intern(team.name);
    if (!session.HasFlavor(team_id, flavor)) continue;
    for (NameId resource : session.Resources(team_id, flavor)) {
      sim.AddCell(policy, team_id, resource, session.View(team_id, flavor, resource), pools);
    }
  }
  return sim;
}

int QuotaSim::Slot(NameId resource) const {
  for (size_t i = 0; i < slot_count_; ++i) {
    if (slots_[i] == resource) return static_cast<int>(i);
  }
  return -1;
}

int QuotaSim::Row(NameId team) const {
  for (size_t i = 0; i < rows_.size(); ++i) {
    if (rows_[i].team == team) return static_cast<int>(i);
  }
  return -1;
}

int32_t QuotaSim::Root(int32_t p) const {
  while (pools_[p].parent >= 0) p = pools_[p].parent;
  return p;
}

int64_t QuotaSim::Free(int32_t p, size_t slot) const {
  const Pool& n = pools_[p];
  return ledger::PoolFreeOf(n.used[slot], n.capacity[slot], n.local[slot], n.in_parent_limit[slot],
                            n.parent < 0, n.parent < 0 ? 0 : Free(n.parent, slot));
}

bool QuotaSim::BranchBorrows(int victim, int preemptor, const Amounts& on) const {
  auto above = [&](int32_t p, int32_t ancestor) {
    for (int32_t at = p; at >= 0; at = pools_[at].parent) {
      if (at == ancestor) return true;
    }
    return false;
  };
  const int32_t mine = static_cast<int32_t>(rows_[preemptor].pool);
  for (int32_t p = static_cast<int32_t>(rows_[victim].pool); p >= 0 && !above(mine, p);
       p = pools_[p].parent) {
    bool over = false;
    for (size_t s = 0; s < slot_count_; ++s) {
      over = over || (on[s] > 0 && pools_[p].used[s] > pools_[p].capacity[s]);
    }
    if (!over) return false;
  }
  return true;
}

void QuotaSim::Propagate(int32_t p, size_t slot, int64_t delta) {
  while (p >= 0 && delta != 0) {
    Pool& n = pools_[p];
    if (journaling_) journal_.push_back(Undo{-1, p, static_cast<uint32_t>(slot), n.used[slot]});
    const int64_t before = n.parent < 0 ? 0 : Positive(n.used[slot] - n.local[slot]);
    n.used[slot] = std::max<int64_t>(0, SaturatingAdd(n.used[slot], delta));
    const int64_t after = n.parent < 0 ? 0 : Positive(n.used[slot] - n.local[slot]);
    delta = after - before;
    p = n.parent;
  }
}

QuotaSim::Amounts QuotaSim::ToSlots(const IdAmounts& amounts) const {
  Amounts out{};
  for (const auto& [resource, amount] : amounts) {
    const int slot = Slot(resource);
    if (slot >= 0) out[slot] = SaturatingAdd(out[slot], amount);
  }
  return out;
}

QuotaSim::Amounts QuotaSim::ToSlots(const ResourceList& amounts) const {
  Amounts out{};
  for (const ResourceAmount& r : amounts) {
    std::optional<NameId> resource = ResourceNames().Find(r.name);
    if (!resource) continue;
    const int slot = Slot(*resource);
    if (slot >= 0) out[slot] = SaturatingAdd(out[slot], r.amount);
  }
  return out;
}

void QuotaSim::Add(int row, const Amounts& amounts) {
  TeamRow& r = rows_[row];
  for (size_t s = 0; s < slot_count_; ++s) {
    Cell& c = r.cells[s];
    if (!c.governed || amounts[s] == 0) continue;
    if (journaling_) {
      journal_.push_back(Undo{row, 0, static_cast<uint32_t>(s), c.usage});
    }
    const int64_t before = Positive(c.usage - c.guaranteed);
    c.usage = std::max<int64_t>(0, SaturatingAdd(c.usage, amounts[s]));
    const int64_t after = Positive(c.usage - c.guaranteed);
    Propagate(static_cast<int32_t>(r.pool), s, after - before);
  }
}

size_t QuotaSim::Mark() {
  journaling_ = true;
  return journal_.size();
}

void QuotaSim::Rollback(size_t mark) {
  while (journal_.size() > mark) {
    const Undo& u = journal_.back();
    if (u.row >= 0) {
      rows_[u.row].cells[u.slot].usage = u.value;
    } else {
      pools_[u.pool].used[u.slot] = u.value;
    }
    journal_.pop_back();
  }
}

void QuotaSim::Remove(int row, const Amounts& amounts) {
  Amounts negative{};
  for (size_t s = 0; s < slot_count_; ++s) negative[s] = -amounts[s];
  Add(row, negative);
}

bool QuotaSim::Fits(int row, const Amounts& request, std::string* why) const {
  if (row < 0) {
    if (why != nullptr) *why = "no quota on " + FlavorNames().Name(flavor_);
    return false;
  }
  const TeamRow& r = rows_[row];
  for (size_t s = 0; s < slot_count_; ++s) {
    const Cell& c = r.cells[s];
    const int64_t q = request[s];
    if (!c.governed || q <= 0) continue;
    const int64_t after = SaturatingAdd(c.usage, q);
    if (after > c.ceiling) {
      if (why != nullptr) {
        *why = TeamNames().Name(r.team) + ": " + ResourceNames().Name(slots_[s]) + " on " +
               FlavorNames().Name(flavor_) + ": requested " + Show(slots_[s], q) + ", in use " +
               Show(slots_[s], c.usage) + " of nominal " + Show(slots_[s], c.nominal) + ", limit " +
               Show(slots_[s], c.ceiling);
      }
      return false;
    }
    const int64_t delta = Positive(after - c.guaranteed) - Positive(c.usage - c.guaranteed);
    const int64_t free = delta > 0 ? Free(static_cast<int32_t>(r.pool), s) : 0;
    if (delta > free) {
      if (why != nullptr) {
        *why = TeamNames().Name(r.team) + ": " + ResourceNames().Name(slots_[s]) + " on " +
               FlavorNames().Name(flavor_) + ": requested " + Show(slots_[s], q) + ", in use " +
               Show(slots_[s], c.usage) + " of nominal " + Show(slots_[s], c.nominal) +
               ", cohort pool free " + Show(slots_[s], free) + " of " + Show(slots_[s], c.lendable);
      }
      return false;
    }
  }
  return true;
}

bool QuotaSim::WithinNominal(int row, const Amounts& extra) const {
  const TeamRow& r = rows_[row];
  for (size_t s = 0; s < slot_count_; ++s) {
    const Cell& c = r.cells[s];
    if (c.governed && extra[s] > 0 && SaturatingAdd(c.usage, extra[s]) > c.nominal) return false;
  }
  return true;
}

bool QuotaSim::Borrowing(int row) const {
  for (size_t s = 0; s < slot_count_; ++s) {
    const Cell& c = rows_[row].cells[s];
    if (c.governed && c.usage - c.held > c.nominal) return true;
  }
  return false;
}

bool QuotaSim::Borrowing(int row, const Amounts& on) const {
  const TeamRow& r = rows_[row];
  for (size_t s = 0; s < slot_count_; ++s) {
    const Cell& c = r.cells[s];
    if (c.governed && on[s] > 0 && c.usage - c.held > c.nominal) return true;
  }
  return false;
}

void QuotaSim::SetHeld(int row, const Amounts& held) {
  for (size_t s = 0; s < slot_count_; ++s) {
    Cell& c = rows_[row].cells[s];
    c.held = std::clamp<int64_t>(held[s], 0, c.usage);
  }
}

int64_t QuotaSim::ShareWith(int row, const Amounts* delta, int sign) const {
  const TeamRow& r = rows_[row];
  ShareAccumulator share;
  for (size_t s = 0; s < slot_count_; ++s) {
    const Cell& c = r.cells[s];
    if (!c.governed) continue;
    const int64_t usage =
        delta == nullptr ? c.usage : std::max<int64_t>(0, c.usage + sign * (*delta)[s]);
    share.Add(usage, c.nominal, c.lendable);
  }
  return share.PerMille(r.weight);
}

int64_t QuotaSim::Share(int row) const { return ShareWith(row, nullptr, 0); }
int64_t QuotaSim::ShareAfterAdding(int row, const Amounts& delta) const {
  return ShareWith(row, &delta, 1);
}

int64_t QuotaSim::CohortShareOf(int32_t p, const Amounts& used) const {
  const Pool& n = pools_[p];
  if (n.parent < 0) return 0;  // a root borrows from no one
  const Pool& parent = pools_[n.parent];
  ShareAccumulator share;
  for (size_t s = 0; s < slot_count_; ++s) share.Add(used[s], n.capacity[s], parent.potential[s]);
  return share.PerMille(n.weight);
}

int64_t QuotaSim::CohortShareAfterAdding(int32_t pool, int row, const Amounts& amounts) const {
  return CohortShareOf(pool, PoolUsedAfter(row, amounts, 1, pool));
}

int64_t QuotaSim::CohortShare(int32_t pool) const {
  Amounts used{};
  std::copy_n(pools_[pool].used.begin(), slot_count_, used.begin());
  return CohortShareOf(pool, used);
}

bool QuotaSim::CohortBorrowing(int32_t pool) const {
  const Pool& n = pools_[pool];
  for (size_t s = 0; s < slot_count_; ++s) {
    if (n.used[s] > n.capacity[s]) return true;
  }
  return false;
}

QuotaSim::Amounts QuotaSim::PoolUsedAfter(int row, const Amounts& amounts, int sign,
                                          int32_t target) const {
  Amounts out{};
  const TeamRow& r = rows_[row];
  for (size_t s = 0; s < slot_count_; ++s) {
    const Cell& c = r.cells[s];
    int64_t delta = 0;
    if (c.governed && amounts[s] != 0) {
      const int64_t usage = std::max<int64_t>(0, SaturatingAdd(c.usage, sign * amounts[s]));
      delta = Positive(usage - c.guaranteed) - Positive(c.usage - c.guaranteed);
    }
    for (int32_t p = static_cast<int32_t>(r.pool); p >= 0; p = pools_[p].parent) {
      const Pool& n = pools_[p];
      const int64_t used = std::max<int64_t>(0, SaturatingAdd(n.used[s], delta));
      if (p == target) {
        out[s] = used;
        break;
      }
      delta = Positive(used - n.local[s]) - Positive(n.used[s] - n.local[s]);
    }
  }
  return out;
}

int32_t QuotaSim::AlmostLca(int row, int32_t lca) const {
  int32_t side = -1;
  for (int32_t p = static_cast<int32_t>(rows_[row].pool); p >= 0 && p != lca;
       p = pools_[p].parent) {
    side = p;
  }
  return side;
}

int64_t QuotaSim::SideShare(int row, int32_t side, const Amounts& amounts, int sign) const {
  if (side < 0) return ShareWith(row, &amounts, sign);
  return CohortShareOf(side, PoolUsedAfter(row, amounts, sign, side));
}

int32_t QuotaSim::LowestShared(int a, int b) const {
  // The first of b's pools that is also one of a's (trees are shallow: a walk per level).
  for (int32_t v = static_cast<int32_t>(rows_[b].pool); v >= 0; v = pools_[v].parent) {
    for (int32_t p = static_cast<int32_t>(rows_[a].pool); p >= 0; p = pools_[p].parent) {
      if (p == v) return v;
    }
  }
  return -1;
}

QuotaSim::FairShares QuotaSim::Sides(int a, int b, const Amounts& a_adds, const Amounts& b_change,
                                     int b_sign) const {
  const int32_t lca = LowestShared(a, b);
  FairShares out;
  out.preemptor_pool = AlmostLca(a, lca);
  out.victim_pool = AlmostLca(b, lca);
  out.preemptor_after = SideShare(a, out.preemptor_pool, a_adds, 1);
  out.victim_before = SideShare(b, out.victim_pool, Amounts{}, 1);
  out.victim_after = SideShare(b, out.victim_pool, b_change, b_sign);
  return out;
}

QuotaSim::FairShares QuotaSim::CompareAdmissions(int a, int b, const Amounts& a_adds,
                                                 const Amounts& b_adds) const {
  return Sides(a, b, a_adds, b_adds, 1);
}

QuotaSim::FairShares QuotaSim::CompareShares(int prow, int vrow, const Amounts& request,
                                             const Amounts& victim_charge) const {
  return Sides(prow, vrow, request, victim_charge, -1);
}

// ---- the rule ----

bool WithinTeamAllows(WithinTeamPreemption rule, int32_t priority, int64_t created_ms,
                      int32_t victim_priority, int64_t victim_created_ms) {
  switch (rule) {
    case WithinTeamPreemption::kNever:
      return false;
    case WithinTeamPreemption::kLowerPriority:
      return victim_priority < priority;
    case WithinTeamPreemption::kLowerOrNewerEqualPriority:
      return victim_priority < priority ||
             (victim_priority == priority && victim_created_ms > created_ms);
  }
  return false;
}

namespace {

// JudgeVictim's rules, except the minimum runtime.
Verdict JudgeByRules(const Policy& policy, const PreemptorFacts& preemptor,
                     const VictimFacts& victim, const QuotaSim* sim,
                     const QuotaSim::Amounts& request, const QuotaSim::Amounts& victim_charge) {
  const bool lower = victim.priority < preemptor.priority;
  if (preemptor.team == nullptr || victim.team == nullptr) {
    return lower ? Yes(PreemptionReason::kPriority) : Never("not of lower priority");
  }
  if (preemptor.team_id == victim.team_id) {
    const WithinTeamPreemption rule = preemptor.team->within_team;
    if (WithinTeamAllows(rule, preemptor.priority, preemptor.created_ms, victim.priority,
                         victim.created_ms)) {
      return Yes(PreemptionReason::kInTeamPriority);
    }
    switch (rule) {
      case WithinTeamPreemption::kLowerPriority:
        return Never("not of lower priority");
      case WithinTeamPreemption::kLowerOrNewerEqualPriority:
        return Never("neither of lower priority nor newer with equal priority");
      case WithinTeamPreemption::kNever:
        break;
    }
    return Never("its team never preempts its own pods");
  }
  if (!victim.team->reclaimable) return Never("its team is not reclaimable");
  switch (preemptor.team->reclaim) {
    case ReclaimPolicy::kNever:
      return Never("the preemptor's team never reclaims");
    case ReclaimPolicy::kLowerPriority:
      if (!lower) return Never("not of lower priority (reclaim: LowerPriority)");
      break;
    case ReclaimPolicy::kAny:
      break;
  }
  if (sim == nullptr) return No("quota state unknown");
  const int prow = sim->Row(preemptor.team_id);
  const int vrow = sim->Row(victim.team_id);
  if (prow < 0 || vrow < 0) return Never("no quota on the flavor");
  if (!sim->SameCohort(prow, vrow)) return Never("its team is in another cohort");
  if (!sim->BranchBorrows(vrow, prow, request)) {
    return Never("its branch of the cohort tree is within its quota");
  }
  if (!sim->Borrowing(vrow, request)) return Never("its team is within its nominal quota");
  if (sim->WithinNominal(prow, request)) return Yes(PreemptionReason::kReclaim);
  if (policy.idle_compute != IdleComputeAllocation::kFairShare) {
    const BorrowWithinCohort& bwc = preemptor.team->borrow_within_cohort;
    if (bwc.lower_priority && lower &&
        (!bwc.max_priority_threshold || victim.priority <= *bwc.max_priority_threshold)) {
      return Yes(PreemptionReason::kReclaimWhileBorrowing);
    }
    Verdict v = No("the preemptor would borrow (no fair-share preemption)");
    v.reason = PreemptionReason::kReclaim;
    v.reclaim_if_within_nominal = true;
    return v;
  }
  // Shares of the two sides just below the cohort both teams share (in a flat cohort, the
  // teams'), the preemptor's with its pod admitted.
  const QuotaSim::FairShares shares = sim->CompareShares(prow, vrow, request, victim_charge);
  Verdict v =
      No(shares.victim_pool < 0 ? "its team's weighted share is not above the preemptor's"
                                : "its cohort's weighted share is not above the preemptor's");
  v.reason = PreemptionReason::kFairShare;
  v.final_share = shares.preemptor_after <= shares.victim_after;
  v.initial_share = shares.preemptor_after < shares.victim_before;
  for (FairShareStrategy s : policy.preemption.fair_sharing_strategies) {
    if (s == FairShareStrategy::kLessThanOrEqualToFinalShare ? v.final_share : v.initial_share) {
      v.allowed = true;
      v.why_not = {};
      break;
    }
  }
  return v;
}

}  // namespace

Verdict JudgeVictim(const Policy& policy, const PreemptorFacts& preemptor,
                    const VictimFacts& victim, const QuotaSim* sim,
                    const QuotaSim::Amounts& request, const QuotaSim::Amounts& victim_charge,
                    int64_t now_ms) {
  Verdict v = JudgeByRules(policy, preemptor, victim, sim, request, victim_charge);
  // The minimum runtime keeps preemption from thrashing, but never delays a team taking back
  // its nominal quota (its guarantee: within the grace period) — also once its own victims are
  // gone (reclaim_if_within_nominal).
  const int64_t min_runtime_ms = policy.preemption.minimum_runtime_seconds * 1000;
  const bool reclaim =
      v.reason == PreemptionReason::kReclaim && (v.allowed || v.reclaim_if_within_nominal);
  if (min_runtime_ms > 0 && now_ms - victim.started_ms < min_runtime_ms && !reclaim) {
    // Another team's pod may yet be a Reclaim once the preemptor's own victims are gone (the
    // walks only remove usage): refused for now, not for good.
    const bool may_be_reclaimed = !v.lasting && preemptor.team != nullptr &&
                                  victim.team != nullptr && preemptor.team_id != victim.team_id;
    return may_be_reclaimed ? No("younger than the minimum runtime")
                            : Never("younger than the minimum runtime");
  }
  return v;
}

// ---- nodes and candidates ----

void FlavorNodes::Add(NodeState node) {
  index[node.name] = static_cast<uint32_t>(nodes.size());
  nodes.push_back(std::move(node));
}

void FlavorNodes::Take(const std::string& node, const IdAmounts& amounts) {
  auto it = index.find(node);
  if (it == index.end()) return;
  model::AddTo(&nodes[it->second].used, amounts);
}

void FlavorNodes::Free(const std::string& node, const IdAmounts& amounts) {
  auto it = index.find(node);
  if (it == index.end()) return;
  IdAmounts& used = nodes[it->second].used;
  for (const auto& [resource, amount] : amounts) {
    for (auto& entry : used) {
      if (entry.first == resource) entry.second = std::max<int64_t>(0, entry.second - amount);
    }
  }
}

const NodeState* FlavorNodes::Find(const std::string& node) const {
  auto it = index.find(node);
  return it == index.end() ? nullptr : &nodes[it->second];
}

const std::vector<uint32_t> CandidateSet::kEmpty;

CandidateSet::CandidateSet(std::vector<Candidate> candidates) : all_(std::move(candidates)) {
  self_.resize(all_.size());
  gang_of_.assign(all_.size(), nullptr);
  for (uint32_t i = 0; i < all_.size(); ++i) {
    self_[i] = i;
    by_flavor_[all_[i].flavor].push_back(i);
    if (!all_[i].gang.empty()) by_gang_[all_[i].gang].push_back(i);
  }
  for (auto& [gang, members] : by_gang_) {  // members in UID order, whatever the input order
    std::sort(members.begin(), members.end(),
              [&](uint32_t a, uint32_t b) { return all_[a].uid < all_[b].uid; });
  }
  for (uint32_t i = 0; i < all_.size(); ++i) {
    if (!all_[i].gang.empty()) gang_of_[i] = &by_gang_[all_[i].gang];
  }
}

const std::vector<uint32_t>& CandidateSet::OnFlavor(NameId flavor) const {
  auto it = by_flavor_.find(flavor);
  return it == by_flavor_.end() ? kEmpty : it->second;
}

void CandidateSet::GangMembers(uint32_t i, const uint32_t** first, size_t* count) const {
  if (gang_of_[i] != nullptr) {
    *first = gang_of_[i]->data();
    *count = gang_of_[i]->size();
  } else {
    *first = &self_[i];
    *count = 1;
  }
}

// ---- VictimSelector ----

bool VictimSelector::FitsNow(const SelectionInput& in, std::string* node) {
  const QuotaSim& quota = *in.quota;
  const int prow = quota.Row(in.preemptor->team);
  if (prow < 0 || !quota.Fits(prow, quota.ToSlots(in.preemptor->quota_request()))) return false;
  for (size_t i = 0; i < in.nodes->nodes.size(); ++i) {
    const NodeState& n = in.nodes->nodes[i];
    if (!Usable(in, i)) continue;
    bool room = true;
    for (const ResourceAmount& want : in.preemptor->request) {
      if (want.amount <= 0) continue;
      std::optional<NameId> id = ResourceNames().Find(want.name);
      const int64_t free = id ? AmountOf(n.allocatable, *id) - AmountOf(n.used, *id) : int64_t{0};
      if (free < want.amount) {
        room = false;
        break;
      }
    }
    if (room) {
      if (node != nullptr) *node = n.name;
      return true;
    }
  }
  return false;
}

bool VictimSelector::OnMarkedNode(const SelectionInput& in, const Candidate& c) {
  if (c.flavor != in.nodes->flavor) return false;
  auto it = in.nodes->index.find(c.node);
  return it != in.nodes->index.end() && it->second < in.victim_nodes->size() &&
         (*in.victim_nodes)[it->second] != 0;
}

bool VictimSelector::Usable(const SelectionInput& in, size_t node) {
  return in.nodes->nodes[node].schedulable &&
         (in.eligible == nullptr || (node < in.eligible->size() && (*in.eligible)[node] != 0));
}

bool VictimSelector::Room(const Amounts& free) const {
  for (size_t k = 0; k < node_slot_count_; ++k) {
    if (free[k] < node_request_[k]) return false;
  }
  return true;
}

VictimSelector::Amounts VictimSelector::BaseFree(const SelectionInput& in, uint32_t node) const {
  Amounts free{};
  const NodeState& n = in.nodes->nodes[node];
  for (size_t k = 0; k < node_slot_count_; ++k) {
    free[k] = AmountOf(n.allocatable, node_resources_[k]) - AmountOf(n.used, node_resources_[k]);
  }
  return free;
}

void VictimSelector::BuildUnits(const SelectionInput& in, int prow) {
  units_.clear();
  members_.clear();
  frees_.clear();
  excluded_.clear();
  const CandidateSet& set = *in.candidates;
  if (stamp_.size() < set.size()) stamp_.resize(set.size(), 0);
  if (++call_ == 0) {  // wrapped: reset the stamps
    std::fill(stamp_.begin(), stamp_.end(), 0);
    call_ = 1;
  }
  const QuotaSim& quota = *in.quota;
  const NameId flavor = quota.flavor();
  for (uint32_t i : set.OnFlavor(flavor)) {
    if (stamp_[i] == call_) continue;
    const Candidate& c = set.at(i);
    const int row = quota.Row(c.team);
    if (row < 0 || (row != prow && !quota.SameCohort(row, prow))) continue;
    const uint32_t* first = nullptr;
    size_t count = 0;
    set.GangMembers(i, &first, &count);
    Unit unit;
    unit.row = row;
    unit.own = row == prow;
    unit.first_member = static_cast<uint32_t>(members_.size());
    unit.first_free = static_cast<uint32_t>(frees_.size());
    unit.priority = std::numeric_limits<int32_t>::min();
    unit.created_ms = std::numeric_limits<int64_t>::max();
    unit.uid = c.uid;
    std::string_view bad;
    for (size_t m = 0; m < count; ++m) {
      const uint32_t idx = first[m];
      stamp_[idx] = call_;
      const Candidate& member = set.at(idx);
      if (member.excluded) bad = "already being evicted";
      if (bad.empty() && member.pdb_blocked)
        bad = "its eviction was refused by a PodDisruptionBudget";
      if (bad.empty() && member.team != c.team) bad = "its gang spans teams";
      if (bad.empty() && row != prow &&
          std::find(member.took_from.begin(), member.took_from.end(), quota.team(prow)) !=
              member.took_from.end()) {
        bad = "it took capacity from the preemptor's team recently";
      }
      if (bad.empty() && in.victim_nodes != nullptr && !OnMarkedNode(in, member)) {
        bad = "it runs outside the topology domain";
      }
      members_.push_back(idx);
      unit.priority = std::max(unit.priority, member.priority);
      unit.started_ms = std::max(unit.started_ms, member.started_ms);
      unit.work_from_ms =
          std::max(unit.work_from_ms, std::max(member.started_ms, member.checkpoint_ms));
      unit.admitted_ms = std::max(unit.admitted_ms, member.admitted_ms);
      unit.created_ms = std::min(unit.created_ms, member.created_ms);
      if (member.uid < unit.uid) unit.uid = member.uid;
      if (member.flavor != flavor) continue;
      const Amounts charge = quota.ToSlots(member.charged);
      for (size_t s = 0; s < quota.slot_count(); ++s) {
        unit.charge[s] = SaturatingAdd(unit.charge[s], charge[s]);
      }
      auto node = in.nodes->index.find(member.node);
      if (node == in.nodes->index.end()) continue;
      NodeFree free;
      free.node = node->second;
      for (size_t k = 0; k < node_slot_count_; ++k) {
        free.amounts[k] = AmountOf(member.occupies, node_resources_[k]);
      }
      frees_.push_back(free);
    }
    if (!bad.empty()) {
      CountExcluded(count > 1 ? std::string_view("a gang member may not be evicted") : bad);
      members_.resize(unit.first_member);
      frees_.resize(unit.first_free);
      continue;
    }
    unit.member_count = static_cast<uint32_t>(members_.size() - unit.first_member);
    unit.free_count = static_cast<uint32_t>(frees_.size() - unit.first_free);
    units_.push_back(unit);
  }
}

void VictimSelector::Order(const SelectionInput& in) {
  order_.clear();
  std::vector<uint32_t>& order = order_;
  const size_t n = units_.size();
  for (uint32_t i = 0; i < n; ++i) {
    if (!units_[i].own) order.push_back(i);
  }
  const size_t others = order.size();
  for (uint32_t i = 0; i < n; ++i) {
    if (units_[i].own) order.push_back(i);
  }
  auto within = [&](uint32_t a, uint32_t b) { return WithinTeamFirst(units_[a], units_[b]); };
  std::sort(order.begin() + others, order.end(), within);
  if (in.policy->idle_compute == IdleComputeAllocation::kFirstComeFirstServe) {
    std::sort(order.begin(), order.begin() + others, [&](uint32_t a, uint32_t b) {
      if (units_[a].admitted_ms != units_[b].admitted_ms) {
        return units_[a].admitted_ms > units_[b].admitted_ms;
      }
      return within(a, b);
    });
    return;
  }
  // FairShare: other teams by team, then the preemptor's; FairOrder puts first what Kueue takes.
  std::sort(order.begin(), order.begin() + others, [&](uint32_t a, uint32_t b) {
    if (units_[a].row != units_[b].row) return units_[a].row < units_[b].row;
    return within(a, b);
  });
  FairOrder(in);
}

void VictimSelector::GroupTargets() {
  ranges_.clear();
  for (size_t i = 0; i < targets_.size();) {
    const int row = units_[targets_[i]].row;
    size_t j = i;
    while (j < targets_.size() && units_[targets_[j]].row == row) ++j;
    ranges_.push_back(TeamRange{i, j, row});
    i = j;
  }
}

int32_t VictimSelector::ResetTree(int prow) {
  pool_pruned_.assign(work_.pool_count(), 0);
  pool_on_path_.assign(work_.pool_count(), 0);
  int32_t root = work_.pool_of(prow);
  for (int32_t p = root; p >= 0; p = work_.pool_parent(p)) {
    pool_on_path_[p] = 1;
    root = p;
  }
  return root;
}

// Kueue's fair-sharing preemption (preemption.go fairPreemptions), on quota alone:
//  1. Targets come one at a time, in NextTarget's order. A unit of the preemptor's own team, or
//     any unit while the preemptor stays within its nominal quota (a reclaim), is taken; of
//     another team, the team's units are tried in order until one passes the policy's first
//     strategy, which is taken; the others wait for step 2. After each unit taken the target is
//     chosen again, and it all stops once the pod fits.
//  2. Else, with a second strategy: the units that waited, in NextTarget's order again, one per
//     team — the team's first, taken when it passes the second strategy.
// The units taken, in the order taken, lead order_; every other unit follows as Order put it.
// The walk then re-judges each unit against its own state, which, over this prefix, is Kueue's.
void VictimSelector::FairOrder(const SelectionInput& in) {
  const int prow = in.quota->Row(in.preemptor->team);
  const std::vector<FairShareStrategy>& strategies = in.policy->preemption.fair_sharing_strategies;
  auto passes = [&](const Verdict& v, size_t strategy) {
    if (v.reason != PreemptionReason::kFairShare) return v.allowed;
    if (strategy >= strategies.size()) return false;
    return strategies[strategy] == FairShareStrategy::kLessThanOrEqualToFinalShare
               ? v.final_share
               : v.initial_share;
  };
  work_.Rollback(base_mark_);
  sequence_.clear();
  retry_.clear();
  taken_flag_.assign(units_.size(), 0);
  auto take = [&](uint32_t u) {
    sequence_.push_back(u);
    taken_flag_[u] = 1;
    work_.Remove(units_[u].row, units_[u].charge);
    return work_.Fits(prow, request_);
  };
  bool fits = false;
  targets_ = order_;
  GroupTargets();
  for (int32_t root = ResetTree(prow); !fits && !pool_pruned_[root];) {
    const int t = NextTarget(root, prow);
    if (t < 0) continue;  // a cohort was pruned: look again from the root
    for (TeamRange& r = ranges_[t]; r.next < r.end;) {
      const uint32_t u = targets_[r.next++];
      const Verdict v = Judge(in, prow, units_[u], work_);
      if (passes(v, 0)) {
        fits = take(u);
        break;
      }
      if (v.reason == PreemptionReason::kFairShare) retry_.push_back(u);
    }
  }
  if (!fits && strategies.size() > 1 && !retry_.empty()) {
    targets_ = retry_;
    std::stable_sort(targets_.begin(), targets_.end(),
                     [&](uint32_t a, uint32_t b) { return units_[a].row < units_[b].row; });
    GroupTargets();
    for (int32_t root = ResetTree(prow); !fits && !pool_pruned_[root];) {
      const int t = NextTarget(root, prow);
      if (t < 0) continue;
      TeamRange& r = ranges_[t];
      const uint32_t u = targets_[r.next];
      r.next = r.end;  // one per team (Kueue's DropQueue)
      if (passes(Judge(in, prow, units_[u], work_), 1)) fits = take(u);
    }
  }
  for (uint32_t u : order_) {
    if (!taken_flag_[u]) sequence_.push_back(u);
  }
  work_.Rollback(base_mark_);
  order_.swap(sequence_);
}

// At cohort `pool`: its child of highest share, the pod's usage counted on the preemptor's side
// (Kueue's ordering.go nextTarget, with the pod simulated as admitted) — among the teams with
// targets left that borrow (the preemptor's own team even when it does not) and the child
// cohorts that borrow or lead to the preemptor's team. A cohort wins a tie with a team (Kueue:
// the most unfair node within it can then be chosen); teams tie by their next units (other
// teams first, then WithinTeamFirst). A cohort chosen is descended into. Returns the range of
// the team chosen, or -1 after pruning `pool` (nothing left below it) or a cohort below it.
int VictimSelector::NextTarget(int32_t pool, int prow) {
  int team = -1;
  int64_t team_share = -1;
  for (size_t t = 0; t < ranges_.size(); ++t) {
    const TeamRange& r = ranges_[t];
    if (r.next == r.end || work_.pool_of(r.row) != pool) continue;
    if (r.row != prow && !work_.Borrowing(r.row)) continue;
    const int64_t share =
        r.row == prow ? work_.ShareAfterAdding(prow, request_) : work_.Share(r.row);
    bool better = share > team_share;
    if (share == team_share) {
      const Unit& head = units_[targets_[r.next]];
      const Unit& best = units_[targets_[ranges_[team].next]];
      better = head.own != best.own ? !head.own : WithinTeamFirst(head, best);
    }
    if (better) {
      team = static_cast<int>(t);
      team_share = share;
    }
  }
  int32_t cohort = -1;
  int64_t cohort_share = -1;
  for (int32_t c = 0; c < static_cast<int32_t>(work_.pool_count()); ++c) {
    if (work_.pool_parent(c) != pool || pool_pruned_[c]) continue;
    if (!pool_on_path_[c] && !work_.CohortBorrowing(c)) {
      pool_pruned_[c] = 1;
      continue;
    }
    const int64_t share =
        pool_on_path_[c] ? work_.CohortShareAfterAdding(c, prow, request_) : work_.CohortShare(c);
    if (share >= cohort_share) {
      cohort = c;
      cohort_share = share;
    }
  }
  if (team < 0 && cohort < 0) {
    pool_pruned_[pool] = 1;
    return -1;
  }
  if (cohort >= 0 && cohort_share >= team_share) return NextTarget(cohort, prow);
  return team;
}

// Lower priority first; then the least work lost (the latest start or checkpoint: without
// checkpoints, the most recently started, as Kueue orders).
bool VictimSelector::WithinTeamFirst(const Unit& x, const Unit& y) {
  if (x.priority != y.priority) return x.priority < y.priority;
  if (x.work_from_ms != y.work_from_ms) return x.work_from_ms > y.work_from_ms;
  if (x.started_ms != y.started_ms) return x.started_ms > y.started_ms;
  return x.uid < y.uid;
}

Verdict VictimSelector::Judge(const SelectionInput& in, int prow, const Unit& unit,
                              const QuotaSim& state) const {
  PreemptorFacts p;
  p.team = state.team_policy(prow);
  p.team_id = state.team(prow);
  p.priority = in.preemptor->priority;
  p.created_ms = in.preemptor->created_ms;
  VictimFacts v;
  v.team = state.team_policy(unit.row);
  v.team_id = state.team(unit.row);
  v.priority = unit.priority;
  v.created_ms = unit.created_ms;
  v.started_ms = unit.started_ms;
  if (p.team == nullptr || v.team == nullptr) return Never("its team is not in the policy");
  return JudgeVictim(*in.policy, p, v, &state, request_, unit.charge, in.now_ms);
}

Verdict VictimSelector::JudgeInRound(const SelectionInput& in, int prow, const Unit& unit) const {
  Verdict v = Judge(in, prow, unit, work_);
  if (round_.within_nominal && v.reclaim_if_within_nominal) v.allowed = true;
  if (v.allowed && v.reason == PreemptionReason::kFairShare) {
    v.allowed = ((round_.fair_strategies & kFinalShareBit) != 0 && v.final_share) ||
                ((round_.fair_strategies & kInitialShareBit) != 0 && v.initial_share);
  }
  return v;
}

void VictimSelector::PlanRounds(const SelectionInput& in, int prow) {
  rounds_.clear();
  if (in.policy->idle_compute != IdleComputeAllocation::kFairShare) {
    const Team* team = in.quota->team_policy(prow);
    if (team != nullptr && team->borrow_within_cohort.lower_priority) {
      // Kueue: with borrowing allowed first, then without (the pod ending within its nominal).
      rounds_.push_back(Round{false, 0});
      if (!in.quota->WithinNominal(prow, request_)) rounds_.push_back(Round{true, 0});
      return;
    }
    if (WithinNominalRoundApplies(in, prow)) rounds_.push_back(Round{true, 0});
    rounds_.push_back(Round{false, 0});
    return;
  }
  // Fair sharing: the policy's strategies, one more each round.
  uint8_t strategies = 0;
  for (FairShareStrategy s : in.policy->preemption.fair_sharing_strategies) {
    strategies |=
        s == FairShareStrategy::kLessThanOrEqualToFinalShare ? kFinalShareBit : kInitialShareBit;
    rounds_.push_back(Round{false, strategies});
  }
  if (rounds_.empty()) rounds_.push_back(Round{false, 0});
}

bool VictimSelector::WithinNominalRoundApplies(const SelectionInput& in, int prow) const {
  if (in.policy->idle_compute == IdleComputeAllocation::kFairShare) return false;
  if (in.quota->WithinNominal(prow, request_)) return false;  // reclaims need no condition
  bool asks = false;
  for (size_t s = 0; s < in.quota->slot_count(); ++s) {
    const QuotaSim::Cell& c = in.quota->cell(prow, s);
    if (request_[s] <= 0 || !c.governed) continue;
    if (c.usage >= c.nominal) return false;
    asks = true;
  }
  return asks;
}

VictimSelector::Amounts VictimSelector::Gain(const Unit& unit, int node) const {
  Amounts gain{};
  if (node < 0) return gain;
  for (uint32_t f = unit.first_free; f < unit.first_free + unit.free_count; ++f) {
    if (frees_[f].node != static_cast<uint32_t>(node)) continue;
    for (size_t k = 0; k < node_slot_count_; ++k) gain[k] += frees_[f].amounts[k];
  }
  return gain;
}

bool VictimSelector::FreesRoom(const Amounts& free, const Amounts& gain) const {
  for (size_t k = 0; k < node_slot_count_; ++k) {
    if (free[k] < node_request_[k] && gain[k] > 0) return true;
  }
  return false;
}

bool VictimSelector::Walk(const SelectionInput& in, int prow, int node, uint32_t max_pos,
                          bool room_first, std::vector<Taken>* taken) {
  taken->clear();
  Amounts free = node >= 0 ? BaseFree(in, static_cast<uint32_t>(node)) : Amounts{};
  const size_t slots = work_.slot_count();
  // Room first: the units on the node, in order, until it has room; the walk below then adds
  // what the quota still lacks.
  std::vector<uint8_t>& on_node = on_node_;
  on_node.assign(room_first ? order_.size() : 0, 0);
  if (room_first && node >= 0) {
    for (uint32_t pos = 0; pos < order_.size() && pos <= max_pos && !Room(free); ++pos) {
      const Unit& unit = units_[order_[pos]];
      const Amounts gain = Gain(unit, node);
      if (!FreesRoom(free, gain)) continue;
      const Verdict verdict = JudgeInRound(in, prow, unit);
      if (!verdict.allowed) continue;
      work_.Remove(unit.row, unit.charge);
      for (size_t k = 0; k < node_slot_count_; ++k) free[k] += gain[k];
      taken->push_back(Taken{order_[pos], pos, verdict.reason});
      on_node[pos] = 1;
    }
    if (!Room(free)) return false;
  }
  for (uint32_t pos = 0; pos <= order_.size(); ++pos) {
    // Which limits are still in the way.
    uint32_t team_short = 0;  // slots where the team's own limit is in the way
    uint32_t pool_short = 0;  // slots where the cohort pool is
    {
      const int64_t* req = request_.data();
      for (size_t s = 0; s < slots; ++s) {
        if (req[s] <= 0) continue;
        const QuotaSim::Cell& c = work_.cell(prow, s);
        if (!c.governed) continue;
        const int64_t after = SaturatingAdd(c.usage, req[s]);
        // In the round without borrowing the nominal quota is the team's limit.
        if (after > (round_.within_nominal ? c.nominal : c.ceiling)) team_short |= 1u << s;
        const int64_t delta = Positive(after - c.guaranteed) - Positive(c.usage - c.guaranteed);
        if (delta > 0 && delta > work_.pool_free(prow, s)) {
          pool_short |= 1u << s;
        }
      }
    }
    const bool quota_ok = team_short == 0 && pool_short == 0;
    const bool room_ok = node < 0 || Room(free);
    if (quota_ok && room_ok) return true;
    if (pos == order_.size() || pos > max_pos) return false;
    if (room_first && on_node[pos]) continue;  // taken for room already
    const Unit& unit = units_[order_[pos]];
    bool helps = false;
    if (!quota_ok) {
      const uint32_t mask = unit.own ? (team_short | pool_short) : pool_short;
      for (size_t s = 0; s < slots && !helps; ++s) {
        helps = (mask & (1u << s)) != 0 && unit.charge[s] > 0;
      }
    }
    const Amounts gain = Gain(unit, node);
    if (!room_ok) helps = helps || FreesRoom(free, gain);
    if (!helps) continue;
    const Verdict verdict = JudgeInRound(in, prow, unit);
    if (!verdict.allowed) continue;
    work_.Remove(unit.row, unit.charge);
    for (size_t k = 0; k < node_slot_count_; ++k) free[k] += gain[k];
    taken->push_back(Taken{order_[pos], pos, verdict.reason});
  }
  return false;
}

bool VictimSelector::Replay(const SelectionInput& in, int prow, int node,
                            const std::vector<Taken>& taken, std::vector<Taken>* with_reasons) {
  work_.Rollback(base_mark_);
  Amounts free = node >= 0 ? BaseFree(in, static_cast<uint32_t>(node)) : Amounts{};
  if (with_reasons != nullptr) with_reasons->clear();
  for (const Taken& t : taken) {
    const Unit& unit = units_[t.unit];
    const Verdict verdict = JudgeInRound(in, prow, unit);
    if (!verdict.allowed) return false;
    work_.Remove(unit.row, unit.charge);
    const Amounts gain = Gain(unit, node);
    for (size_t k = 0; k < node_slot_count_; ++k) free[k] += gain[k];
    if (with_reasons != nullptr) with_reasons->push_back(Taken{t.unit, t.pos, verdict.reason});
  }
  return work_.Fits(prow, request_) && (node < 0 || Room(free)) &&
         (!round_.within_nominal || work_.WithinNominal(prow, request_));
}

void VictimSelector::Minimize(const SelectionInput& in, int prow, int node,
                              std::vector<Taken>* taken) {
  std::vector<Taken>& trial = trial_;
  std::vector<Taken>& replayed = replayed_;
  for (size_t j = taken->size(); j-- > 0;) {
    trial.clear();
    for (size_t i = 0; i < taken->size(); ++i) {
      if (i != j) trial.push_back((*taken)[i]);
    }
    if (Replay(in, prow, node, trial, &replayed)) *taken = replayed;
  }
}

// Select: fits now → request slots → units (lasting refusals set aside, ordered) → quota walk →
// best node → victims with their notes.
Selection VictimSelector::Select(const SelectionInput& in) {
  round_ = Round{};
  Selection out;
  const Preemptor& p = *in.preemptor;
  out.flavor = in.quota->flavor();
  const int prow = in.quota->Row(p.team);
  if (prow < 0) {
    out.explanation = TeamNames().Name(p.team) + ": no quota on " + FlavorNames().Name(out.flavor);
    return out;
  }
  if (FitsNow(in, &out.node)) {
    out.outcome = Selection::Outcome::kFits;
    return out;
  }
  if (!PrepareRequest(in)) {
    out.explanation = p.key + " requests more resources than victim selection handles";
    return out;
  }
  PrepareUnits(in, prow);
  std::string why_not_now;
  (void)in.quota->Fits(prow, request_, &why_not_now);
  // Kueue's rounds, each a walk: without borrowing first when it applies (FirstComeFirstServe),
  // or fair sharing's first strategy alone (FairShare); then every rule.
  int node = -1;
  bool quota_freed = false;
  PlanRounds(in, prow);
  for (const Round& round : rounds_) {
    round_ = round;
    work_.Rollback(base_mark_);
    if (!Walk(in, prow, /*node=*/-1, std::numeric_limits<uint32_t>::max(),
              /*room_first=*/false, &taken_)) {
      continue;
    }
    quota_freed = true;
    node = PickNode(in, prow);
    if (node >= 0) break;
  }
  if (!quota_freed) {
    round_ = Round{};
    out.explanation = "no victims can make room for " + p.key + ": " + why_not_now + "; " +
                      CandidatesSummary(in, prow);
    return out;
  }
  if (node < 0) {
    out.explanation = NoNodeExplanation(in) + "; " + CandidatesSummary(in, prow);
    return out;
  }
  out.outcome = Selection::Outcome::kVictims;
  out.node = in.nodes->nodes[node].name;
  AddVictims(in, prow, &out);
  return out;
}

bool VictimSelector::PrepareRequest(const SelectionInput& in) {
  request_ = in.quota->ToSlots(in.preemptor->quota_request());
  node_slot_count_ = 0;
  node_request_ = Amounts{};
  for (const ResourceAmount& want : in.preemptor->request) {
    if (want.amount <= 0) continue;
    if (node_slot_count_ == QuotaSim::kMaxSlots) return false;
    node_resources_[node_slot_count_] = ResourceNames().Intern(want.name);
    node_request_[node_slot_count_++] = want.amount;
  }
  return true;
}

void VictimSelector::PrepareUnits(const SelectionInput& in, int prow) {
  work_ = *in.quota;
  base_mark_ = work_.Mark();
  BuildUnits(in, prow);
  // Set aside the units that can never be allowed (the walks only ever remove usage).
  size_t kept = 0;
  for (size_t i = 0; i < units_.size(); ++i) {
    const Verdict verdict = Judge(in, prow, units_[i], work_);
    if (!verdict.allowed && verdict.lasting) {
      CountExcluded(verdict.why_not);
      continue;
    }
    units_[kept++] = units_[i];
  }
  units_.resize(kept);
  Order(in);
}

void VictimSelector::CountExcluded(std::string_view why) {
  for (auto& [text, count] : excluded_) {
    if (text == why) {
      ++count;
      return;
    }
  }
  excluded_.emplace_back(why, 1);
}

std::string VictimSelector::CandidatesSummary(const SelectionInput& in, int prow) {
  work_.Rollback(base_mark_);
  int allowed = 0;
  for (const Unit& unit : units_) {
    const Verdict verdict = Judge(in, prow, unit, work_);
    if (verdict.allowed) {
      ++allowed;
    } else {
      CountExcluded(verdict.why_not);
    }
  }
  if (units_.empty() && excluded_.empty()) {
    return "no running pod of " + TeamNames().Name(in.preemptor->team) +
           " or of a borrowing team on " + FlavorNames().Name(in.quota->flavor());
  }
  std::string out = "candidates:";
  bool first = true;
  for (const auto& [text, count] : excluded_) {
    out += (first ? " " : ", ") + std::to_string(count) + " " + std::string(text);
    first = false;
  }
  if (allowed > 0) out += (first ? " " : ", ") + std::to_string(allowed) + " allowed";
  return out;
}

int VictimSelector::PickNode(const SelectionInput& in, int prow) {
  // What each node would have free with every unit gone: nodes short even then are skipped.
  const size_t node_count = in.nodes->nodes.size();
  std::vector<Amounts>& reach = reach_;
  reach.resize(node_count);
  for (uint32_t n = 0; n < node_count; ++n) reach[n] = BaseFree(in, n);
  for (const NodeFree& f : frees_) {
    for (size_t k = 0; k < node_slot_count_; ++k) reach[f.node][k] += f.amounts[k];
  }
  std::vector<Taken>& taken = taken_;
  std::vector<Taken>& best = best_;
  best.clear();
  int best_node = -1;
  uint32_t best_depth = std::numeric_limits<uint32_t>::max();
  // Quota first, in preference order, on every node; if that frees none (it spent what the
  // victims' teams may lose on units elsewhere), every node again room first.
  for (const bool room_first : {false, true}) {
    if (best_node >= 0) break;
    for (uint32_t n = 0; n < node_count; ++n) {
      if (!Usable(in, n) || !Room(reach[n])) continue;
      work_.Rollback(base_mark_);
      if (!Walk(in, prow, static_cast<int>(n), best_depth, room_first, &taken)) continue;
      Minimize(in, prow, static_cast<int>(n), &taken);
      uint32_t depth = 0;
      for (const Taken& t : taken) depth = std::max(depth, t.pos);
      const bool better = best_node < 0 || depth < best_depth ||
                          (depth == best_depth && taken.size() < best.size());
      if (better) {
        best = taken;
        best_node = static_cast<int>(n);
        best_depth = depth;
      }
    }
  }
  return best_node;
}

std::string VictimSelector::NoNodeExplanation(const SelectionInput& in) const {
  const size_t node_count = in.nodes->nodes.size();
  size_t refused = 0;  // schedulable nodes the pod may not go to
  for (uint32_t n = 0; n < node_count; ++n) {
    refused += in.nodes->nodes[n].schedulable && !Usable(in, n);
  }
  std::string out = "no " + FlavorNames().Name(in.quota->flavor()) +
                    " node can be freed enough for " + in.preemptor->key + " (" +
                    in.preemptor->request.ToString() + ") by pods it may preempt";
  if (refused > 0) {
    out += " (" + std::to_string(refused) + " of " + std::to_string(node_count) +
           " nodes refuse it: taints, nodeSelector or required node affinity)";
  }
  return out;
}

void VictimSelector::AddVictims(const SelectionInput& in, int prow, Selection* out) {
  // The chosen set, replayed in order for the reasons and the numbers behind them.
  work_.Rollback(base_mark_);
  for (const Taken& t : best_) {
    const Unit& unit = units_[t.unit];
    std::string note = VictimNote(in, prow, unit, t.reason);
    if (unit.member_count > 1) {
      note += "; evicted with its gang of " + std::to_string(unit.member_count) + " pods";
    }
    work_.Remove(unit.row, unit.charge);
    for (uint32_t m = unit.first_member; m < unit.first_member + unit.member_count; ++m) {
      out->victims.push_back(Selection::Victim{members_[m], t.reason, note});
    }
  }
}

std::string VictimSelector::VictimNote(const SelectionInput& in, int prow, const Unit& unit,
                                       PreemptionReason reason) const {
  const Preemptor& p = *in.preemptor;
  const std::string& flavor_name = FlavorNames().Name(in.quota->flavor());
  const std::string& pteam = TeamNames().Name(p.team);
  // The note is the victim's event, in the victim's namespace: another team's pod is named by
  // its UID only, as Kueue's preemption messages do (issue 36, item 5).
  const std::string pkey = p.team == work_.team(unit.row) ? p.key : "(UID " + p.uid + ")";
  if (reason == PreemptionReason::kInTeamPriority || reason == PreemptionReason::kPriority) {
    return std::string(ReasonName(reason)) + ": preempted by higher-priority pod " + pkey + " of " +
           pteam + " (priority " + std::to_string(p.priority) + " > " +
           std::to_string(unit.priority) + "), which needs " + p.request.ToString() + " on " +
           flavor_name;
  }
  // Reclaim and FairShare name a resource the pod requests that the victim's team borrows: an
  // accelerator when there is one (what these clusters are short of; the event named cpu when
  // GPUs were the constraint), else the first.
  std::optional<size_t> slot;
  for (const bool accelerators : {true, false}) {
    for (size_t s = 0; s < work_.slot_count() && !slot; ++s) {
      const QuotaSim::Cell& c = work_.cell(unit.row, s);
      if (request_[s] > 0 && c.governed && c.usage > c.nominal &&
          (!accelerators || model::IsAccelerator(ResourceNames().Name(work_.slot_resource(s))))) {
        slot = s;
      }
    }
  }
  if (!slot) slot = 0;
  const QuotaSim::Cell& c = work_.cell(unit.row, *slot);
  const NameId r = work_.slot_resource(*slot);
  const std::string& vteam = TeamNames().Name(work_.team(unit.row));
  if (reason == PreemptionReason::kReclaimWhileBorrowing) {
    return "ReclaimWhileBorrowing: pod " + pkey + " of " + pteam + " (priority " +
           std::to_string(p.priority) + ", borrowing once admitted) takes borrowed " +
           ResourceNames().Name(r) + " on " + flavor_name + " from a priority " +
           std::to_string(unit.priority) + " pod of " + vteam + " (uses " + Show(r, c.usage) +
           " of nominal " + Show(r, c.nominal) + ")";
  }
  if (reason == PreemptionReason::kReclaim) {
    return "Reclaim: " + pteam + " reclaims the " + ResourceNames().Name(r) + " on " + flavor_name +
           " it lent, for its pod " + pkey + "; " + vteam + " uses " + Show(r, c.usage) +
           " of nominal " + Show(r, c.nominal);
  }
  // The shares compared: the teams', or in a cohort tree those of the cohorts just below the
  // one both teams share.
  const QuotaSim::FairShares shares = work_.CompareShares(prow, unit.row, request_, unit.charge);
  auto side = [&](int32_t pool, const std::string& team) {
    return pool < 0 ? team : team + "'s cohort " + work_.pool_name(pool);
  };
  return "FairShare: pod " + pkey + " of " + side(shares.preemptor_pool, pteam) +
         " (weighted share " + ShowShare(shares.preemptor_after) +
         " after admission) takes borrowed " + ResourceNames().Name(r) + " on " + flavor_name +
         " from " + side(shares.victim_pool, vteam) + " (share " + ShowShare(shares.victim_before) +
         (shares.victim_pool < 0 ? ", " : "; " + vteam + " ") + "uses " + Show(r, c.usage) +
         " of nominal " + Show(r, c.nominal) + ")";
}

}  // namespace taskgov::scheduler::decisions
