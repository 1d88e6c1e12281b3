#include "scheduler/actions/victim_planner.h"

#include <algorithm>
#include <limits>
#include <map>
#include <numeric>

#include "scheduler/decisions/topology.h"

namespace taskgov::scheduler::actions {

using decisions::Candidate;
using decisions::NodeEligibility;
using decisions::NodeState;
using decisions::Preemptor;
using decisions::QuotaSim;
using decisions::Selection;
using decisions::SelectionInput;
using decisions::VictimSelector;
using model::AmountOf;
using model::FlavorNames;
using model::FlavorQuota;
using model::Labels;
using model::NameId;
using model::PodPlacementSpec;
using model::Team;
using model::ToIdAmounts;
using state::NodeView;
using state::PendingPod;

VictimPlanner::VictimPlanner(Inputs inputs)
    : policy_(*inputs.policy),
      now_ms_(inputs.now_ms),
      source_(*inputs.source),
      selector_(*inputs.selector),
      set_(std::move(inputs.running)),
      terminating_(std::move(inputs.terminating)),
      claims_(std::move(inputs.claims)) {}

// ---- per-flavor state ----

VictimPlanner::FlavorCtx& VictimPlanner::Ctx(NameId flavor) {
  auto it = ctxs_.find(flavor);
  if (it != ctxs_.end()) return it->second;
  if (!have_usage_) {
    usage_ = source_.Usage();
    have_usage_ = true;
  }
  FlavorCtx& ctx = ctxs_[flavor];
  BuildCtx(flavor, &ctx);
  return ctx;
}

// The ledger minus what is terminating, plus claims.
void VictimPlanner::BuildCtx(NameId flavor, FlavorCtx* ctx) {
  ctx->quota = QuotaSim::FromUsage(policy_, flavor, usage_);
  ctx->nodes.flavor = flavor;
  std::vector<std::pair<std::string, NodeView>> nodes = source_.NodesOfFlavor(flavor);
  std::sort(nodes.begin(), nodes.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  for (auto& [name, view] : nodes) {
    NodeState n;
    n.name = name;
    n.schedulable = view.schedulable;
    n.allocatable = ToIdAmounts(view.allocatable);
    n.used = ToIdAmounts(view.used);
    ctx->nodes.Add(std::move(n));
    ctx->placement.push_back(std::move(view.placement));
  }
  for (const Candidate& t : terminating_) {
    if (t.flavor != flavor) continue;
    if (int row = ctx->quota.Row(t.team); row >= 0) {
      ctx->quota.Remove(row, ctx->quota.ToSlots(t.charged));
    }
    ctx->nodes.Free(t.node, t.occupies);
  }
  for (const Claim& claim : claims_) {
    if (claim.flavor != flavor) continue;
    if (int row = ctx->quota.Row(claim.team); row >= 0 && claim.quota) {
      ctx->quota.Add(row, ctx->quota.ToSlots(claim.quota_request()));
    }
    ctx->nodes.Take(claim.node, ToIdAmounts(claim.request));
  }
  HoldUnbound(flavor, &ctx->quota);
}

// What each team's usage holds beyond its running pods' charges — reservations of pods not bound,
// a gang's quota for members to come, the claims of rounds in flight — for the protection rule
// to leave out (QuotaSim::Cell::held).
void VictimPlanner::HoldUnbound(NameId flavor, QuotaSim* quota) const {
  std::vector<QuotaSim::Amounts> bound(quota->row_count(), QuotaSim::Amounts{});
  for (uint32_t i : set_.OnFlavor(flavor)) {
    const Candidate& c = set_.at(i);
    const int row = quota->Row(c.team);
    if (row < 0 || c.excluded) continue;
    const QuotaSim::Amounts charged = quota->ToSlots(c.charged);
    for (size_t s = 0; s < quota->slot_count(); ++s) bound[row][s] += charged[s];
  }
  for (size_t row = 0; row < quota->row_count(); ++row) {
    QuotaSim::Amounts held{};
    for (size_t s = 0; s < quota->slot_count(); ++s) {
      held[s] = quota->cell(static_cast<int>(row), s).usage - bound[row][s];
    }
    quota->SetHeld(static_cast<int>(row), held);
  }
}

void VictimPlanner::ApplyClaim(const Claim& claim, int sign) {
  FlavorCtx& ctx = Ctx(claim.flavor);
  if (int row = ctx.quota.Row(claim.team); row >= 0 && claim.quota) {
    // A claim holds quota for a pod not bound: usage, and held with it.
    const QuotaSim::Amounts amounts = ctx.quota.ToSlots(claim.quota_request());
    QuotaSim::Amounts held{};
    for (size_t s = 0; s < ctx.quota.slot_count(); ++s) {
      held[s] = ctx.quota.cell(row, s).held + sign * amounts[s];
    }
    sign > 0 ? ctx.quota.Add(row, amounts) : ctx.quota.Remove(row, amounts);
    ctx.quota.SetHeld(row, held);
  }
  sign > 0 ? ctx.nodes.Take(claim.node, ToIdAmounts(claim.request))
           : ctx.nodes.Free(claim.node, ToIdAmounts(claim.request));
}

void VictimPlanner::ApplyVictim(const RoundVictim& v, int sign) {
  FlavorCtx& ctx = Ctx(v.flavor);
  if (int row = ctx.quota.Row(v.team); row >= 0) {
    const QuotaSim::Amounts amounts = ctx.quota.ToSlots(v.charged);
    sign > 0 ? ctx.quota.Remove(row, amounts) : ctx.quota.Add(row, amounts);
  }
  sign > 0 ? ctx.nodes.Free(v.node, v.occupies) : ctx.nodes.Take(v.node, v.occupies);
}

void VictimPlanner::Hold(const Claim& claim) { ApplyClaim(claim, +1); }
void VictimPlanner::Release(const Claim& claim) { ApplyClaim(claim, -1); }
void VictimPlanner::Unfree(const RoundVictim& victim) { ApplyVictim(victim, -1); }

SelectionInput VictimPlanner::Input(const Preemptor& p, NameId flavor,
                                    const std::vector<uint8_t>& eligible) {
  FlavorCtx& ctx = Ctx(flavor);
  SelectionInput in;
  in.policy = &policy_;
  in.preemptor = &p;
  in.quota = &ctx.quota;
  in.nodes = &ctx.nodes;
  in.candidates = &set_;
  in.now_ms = now_ms_;
  in.eligible = &eligible;
  return in;
}

// ---- decisions ----

size_t VictimPlanner::UsableFlavors(const Team& team, const PendingPod& pending, std::string* why) {
  size_t usable = 0;
  for (const FlavorQuota& fq : team.flavors) {
    if (!policy_.FlavorAllows(fq.flavor, pending.node_selector)) continue;  // not its flavor
    const NameId flavor = FlavorNames().Intern(fq.flavor);
    const FlavorCtx& ctx = Ctx(flavor);
    if (eligibility_.size() == usable) eligibility_.emplace_back();
    std::pair<NameId, NodeEligibility>& e = eligibility_[usable];
    e.first = flavor;
    e.second.Compute(pending.node_selector, pending.placement.get(), ctx.placement);
    if (!ctx.placement.empty() && e.second.accepted == 0) {
      *why += (why->empty() ? "" : "; ") + e.second.Explain(fq.flavor, pending.key);
      continue;
    }
    ++usable;
  }
  return usable;
}

Selection VictimPlanner::Plan(const Team& team, const PendingPod& pending, const Preemptor& p,
                              int members) {
  std::string why;
  const size_t usable = UsableFlavors(team, pending, &why);
  if (!p.required_topology.empty()) return PlanInOneDomain(p, usable, members, std::move(why));
  if (members > 1) return PlanGang(p, usable, members, std::move(why));
  // Fits somewhere now (or once what terminates is gone): claim it, evict nothing.
  for (size_t i = 0; i < usable; ++i) {
    const auto& [flavor, nodes] = eligibility_[i];
    Selection fits;
    if (VictimSelector::FitsNow(Input(p, flavor, nodes.accepts), &fits.node)) {
      Hold(Claim{p.team, flavor, fits.node, p.request, /*quota=*/true, p.need});
      fits.outcome = Selection::Outcome::kFits;
      fits.flavor = flavor;
      return fits;
    }
  }
  for (size_t i = 0; i < usable; ++i) {
    Selection sel =
        selector_.Select(Input(p, eligibility_[i].first, eligibility_[i].second.accepts));
    if (sel.outcome == Selection::Outcome::kVictims) return sel;
    why += (why.empty() ? "" : "; ") + sel.explanation;
  }
  Selection none;
  none.explanation = std::move(why);
  return none;
}

namespace {

// The domains at `level` (one of `levels`) among a flavor's nodes: for each, the indexes of its
// nodes, in the order of the domains' label values. Nodes without every label down to `level`
// are in none; empty when `level` is not one of `levels`.
std::vector<std::vector<uint32_t>> DomainsAt(
    const std::vector<std::shared_ptr<const model::NodePlacement>>& placement,
    const std::vector<std::string>& levels, std::string_view level) {
  std::map<std::string, std::vector<uint32_t>> by_key;
  const auto at = std::find(levels.begin(), levels.end(), level);
  if (at == levels.end()) return {};
  const size_t depth = static_cast<size_t>(at - levels.begin()) + 1;
  const uint64_t stamp = model::TopologyLevelsStamp(levels);
  model::TopologyPath own;
  for (size_t i = 0; i < placement.size(); ++i) {
    if (placement[i] == nullptr) continue;
    std::string_view key;
    std::string_view value;
    if (model::TopologyPathAt(*placement[i], levels, stamp, &own).At(depth, &key, &value)) {
      by_key[std::string(key)].push_back(static_cast<uint32_t>(i));
    }
  }
  std::vector<std::vector<uint32_t>> out;
  out.reserve(by_key.size());
  for (auto& [unused, nodes] : by_key) out.push_back(std::move(nodes));
  return out;
}

// Every node of `nodes`, as one domain.
std::vector<uint32_t> AllNodes(const decisions::FlavorNodes& nodes) {
  std::vector<uint32_t> all(nodes.nodes.size());
  std::iota(all.begin(), all.end(), 0U);
  return all;
}

// How many pods asking `request` the nodes `domain` of `nodes` could hold were they empty.
int64_t EverHolds(const decisions::FlavorNodes& nodes, const std::vector<uint8_t>& accepts,
                  const std::vector<uint32_t>& domain, const model::IdAmounts& request) {
  int64_t total = 0;
  for (uint32_t i : domain) {
    const NodeState& n = nodes.nodes[i];
    if (!n.schedulable || (i < accepts.size() && accepts[i] == 0)) continue;
    int64_t fits = std::numeric_limits<int64_t>::max();
    for (const auto& [id, want] : request) {
      if (want > 0) fits = std::min(fits, AmountOf(n.allocatable, id) / want);
    }
    if (fits != std::numeric_limits<int64_t>::max()) total += fits;
  }
  return total;
}

}  // namespace

Selection VictimPlanner::PlanInOneDomain(const Preemptor& p, size_t usable, int members,
                                         std::string why) {
  const std::string& level = p.required_topology;
  const model::IdAmounts request = ToIdAmounts(p.request);
  for (size_t f = 0; f < usable; ++f) {
    const NameId flavor = eligibility_[f].first;
    const std::vector<uint8_t>& accepts = eligibility_[f].second.accepts;
    FlavorCtx& ctx = Ctx(flavor);
    const std::string& flavor_name = FlavorNames().Name(flavor);
    const std::vector<std::vector<uint32_t>> domains =
        DomainsAt(ctx.placement, model::TopologyLevelsOf(policy_, flavor_name), level);
    std::optional<Selection> best;
    size_t tried = 0;
    for (const std::vector<uint32_t>& domain : domains) {
      if (EverHolds(ctx.nodes, accepts, domain, request) < members) continue;
      ++tried;
      std::optional<Selection> sel = TryDomain(p, flavor, accepts, domain, members);
      if (sel && (!best || sel->victims.size() < best->victims.size())) best = std::move(sel);
      if (best && best->victims.empty()) break;  // it fits now
    }
    if (best) {
      if (best->outcome == Selection::Outcome::kFits) {
        Hold(Claim{p.team, flavor, best->node, p.request, /*quota=*/true, p.need});
      }
      return *best;
    }
    why += std::string(why.empty() ? "" : "; ") + "no " + decisions::LevelName(level) +
           " domain of " + flavor_name + " can be freed for " + std::to_string(members) +
           " pods of " + p.request.ToString() + " by pods it may preempt inside it (" +
           std::to_string(tried) + " of " + std::to_string(domains.size()) +
           " domains could hold them)";
  }
  Selection none;
  none.explanation = std::move(why);
  return none;
}

Selection VictimPlanner::PlanGang(const Preemptor& p, size_t usable, int members, std::string why) {
  const model::IdAmounts request = ToIdAmounts(p.request);
  std::optional<Selection> chosen;  // the first flavor where victims make room for them all
  for (size_t f = 0; f < usable; ++f) {
    const NameId flavor = eligibility_[f].first;
    const std::vector<uint8_t>& accepts = eligibility_[f].second.accepts;
    FlavorCtx& ctx = Ctx(flavor);
    const std::vector<uint32_t> all = AllNodes(ctx.nodes);
    const std::string& flavor_name = FlavorNames().Name(flavor);
    std::optional<Selection> sel;
    if (EverHolds(ctx.nodes, accepts, all, request) >= members) {
      sel = TryDomain(p, flavor, accepts, all, members);
    }
    if (!sel) {
      why += std::string(why.empty() ? "" : "; ") + "no room on " + flavor_name +
             " can be freed for " + std::to_string(members) + " pods of " + p.request.ToString() +
             " by pods it may preempt";
      continue;
    }
    if (sel->outcome == Selection::Outcome::kFits) {
      Hold(Claim{p.team, flavor, sel->node, p.request, /*quota=*/true, p.need});
      return *sel;
    }
    if (!chosen) chosen = std::move(sel);
  }
  if (chosen) return *chosen;
  Selection none;
  none.explanation = std::move(why);
  return none;
}

std::optional<Selection> VictimPlanner::TryDomain(const Preemptor& p, NameId flavor,
                                                  const std::vector<uint8_t>& accepts,
                                                  const std::vector<uint32_t>& domain,
                                                  int members) {
  FlavorCtx& ctx = Ctx(flavor);
  // What the trial changes, restored at its end: the flavor's quota, the domain's nodes, the
  // candidates it takes.
  const QuotaSim quota = ctx.quota;
  std::vector<model::IdAmounts> used;
  used.reserve(domain.size());
  std::vector<uint8_t> inside(ctx.nodes.nodes.size(), 0);
  std::vector<uint8_t> eligible(ctx.nodes.nodes.size(), 0);
  for (uint32_t i : domain) {
    used.push_back(ctx.nodes.nodes[i].used);
    inside[i] = 1;
    eligible[i] = i >= accepts.size() || accepts[i] != 0;
  }
  const model::IdAmounts request = ToIdAmounts(p.request);
  Selection out;
  out.outcome = Selection::Outcome::kFits;
  out.flavor = flavor;
  std::vector<uint32_t> taken;
  bool placed = true;
  for (int m = 0; m < members && placed; ++m) {
    SelectionInput in = Input(p, flavor, eligible);
    in.victim_nodes = &inside;
    Selection sel;
    if (VictimSelector::FitsNow(in, &sel.node)) {
      sel.outcome = Selection::Outcome::kFits;
    } else {
      sel = selector_.Select(in);
    }
    placed = sel.outcome != Selection::Outcome::kNoVictims;
    if (!placed) break;
    for (const Selection::Victim& v : sel.victims) taken.push_back(v.candidate);
    (void)TakeVictims(sel);
    if (m == 0) out.node = sel.node;
    if (!sel.victims.empty()) out.outcome = Selection::Outcome::kVictims;
    out.victims.insert(out.victims.end(), sel.victims.begin(), sel.victims.end());
    ctx.nodes.Take(sel.node, request);  // the member's room, for the next
  }
  ctx.quota = quota;
  for (size_t k = 0; k < domain.size(); ++k) ctx.nodes.nodes[domain[k]].used = std::move(used[k]);
  for (uint32_t c : taken) set_.at(c).excluded = false;
  if (!placed) return std::nullopt;
  return out;
}

int64_t VictimPlanner::ClosestToRoom(const decisions::FlavorNodes& nodes,
                                     const std::vector<uint8_t>& accepts,
                                     const std::vector<model::IdAmounts>& planned,
                                     const model::IdAmounts& request, double* shortfall,
                                     const DrainHints* hints) {
  int64_t best = -1;
  double best_short = 0;
  int best_rank = 0;  // 0: room now; 1: kept; 2: any other
  int64_t best_newest = 0;
  for (size_t i = 0; i < nodes.nodes.size(); ++i) {
    const NodeState& n = nodes.nodes[i];
    if (!n.schedulable || (i < accepts.size() && accepts[i] == 0)) continue;
    double missing_parts = 0;  // Σ over resources of what is missing, in parts of the node's
    bool ever = true;
    for (const auto& [id, want] : request) {
      const int64_t allocatable = AmountOf(n.allocatable, id);
      const int64_t room = allocatable - AmountOf(planned[i], id);
      ever = ever && room >= want;
      const int64_t missing = std::max<int64_t>(0, want - (room - AmountOf(n.used, id)));
      missing_parts +=
          static_cast<double>(missing) / static_cast<double>(std::max<int64_t>(1, allocatable));
    }
    if (!ever) continue;
    const int rank = missing_parts == 0 ? 0 : hints != nullptr && hints->kept.at(i) != 0 ? 1 : 2;
    const int64_t newest = hints != nullptr ? hints->newest_start_ms.at(i) : 0;
    if (best < 0 || rank < best_rank ||
        (rank == best_rank &&
         (missing_parts < best_short || (missing_parts == best_short && newest < best_newest)))) {
      best = static_cast<int64_t>(i);
      best_short = missing_parts;
      best_rank = rank;
      best_newest = newest;
    }
  }
  if (best >= 0 && shortfall != nullptr) *shortfall += best_short;
  return best;
}

bool VictimPlanner::PlaceMembers(const decisions::FlavorNodes& nodes,
                                 const std::vector<uint8_t>& accepts, int members,
                                 const model::IdAmounts& request,
                                 std::vector<model::IdAmounts>* planned, double* shortfall,
                                 const DrainHints* hints) {
  planned->assign(nodes.nodes.size(), {});
  for (int m = 0; m < members; ++m) {
    const int64_t i = ClosestToRoom(nodes, accepts, *planned, request, shortfall, hints);
    if (i < 0) return false;
    model::AddTo(&(*planned)[i], request);
  }
  return true;
}

std::optional<VictimPlanner::Drain> VictimPlanner::PlanDrain(
    const Team& team, const PendingPod& pending, const Preemptor& p, int members,
    const std::vector<NameId>& skip, bool within_nominal, const std::vector<std::string>& kept) {
  std::string unused;
  const size_t usable = UsableFlavors(team, pending, &unused);
  const model::IdAmounts request = ToIdAmounts(p.request);
  for (size_t f = 0; f < usable; ++f) {
    const auto& [flavor, eligibility] = eligibility_[f];
    if (std::find(skip.begin(), skip.end(), flavor) != skip.end()) continue;
    FlavorCtx& ctx = Ctx(flavor);
    const int row = ctx.quota.Row(p.team);
    const QuotaSim::Amounts need = ctx.quota.ToSlots(p.quota_request());
    if (row < 0 || !ctx.quota.Fits(row, need)) continue;
    if (within_nominal && !ctx.quota.WithinNominal(row, need)) continue;
    std::vector<model::IdAmounts> planned;
    double shortfall = 0;
    if (p.required_topology.empty()) {
      DrainHints hints;
      hints.kept.assign(ctx.nodes.nodes.size(), 0);
      hints.newest_start_ms.assign(ctx.nodes.nodes.size(), 0);
      for (const std::string& node : kept) {
        if (auto it = ctx.nodes.index.find(node); it != ctx.nodes.index.end()) {
          hints.kept[it->second] = 1;
        }
      }
      // The newest start of the pods taskgov knows on each node; a node with usage it cannot
      // account for (pods of no team, ungoverned) counts as started now: its pods may never end.
      std::vector<model::IdAmounts> known(ctx.nodes.nodes.size());
      for (uint32_t c : set_.OnFlavor(flavor)) {
        const Candidate& pod = set_.at(c);
        if (auto it = ctx.nodes.index.find(pod.node); it != ctx.nodes.index.end()) {
          int64_t& newest = hints.newest_start_ms[it->second];
          newest = std::max(newest, pod.started_ms);
          model::AddTo(&known[it->second], pod.occupies);
        }
      }
      for (size_t i = 0; i < ctx.nodes.nodes.size(); ++i) {
        for (const auto& [id, want] : request) {
          if (AmountOf(ctx.nodes.nodes[i].used, id) > AmountOf(known[i], id)) {
            hints.newest_start_ms[i] = now_ms_;
          }
        }
      }
      if (!PlaceMembers(ctx.nodes, eligibility.accepts, members, request, &planned, &shortfall,
                        &hints)) {
        continue;
      }
    } else if (!PlaceInOneDomain(ctx, eligibility.accepts, flavor, p.required_topology, members,
                                 request, &planned)) {
      continue;
    }
    Drain drain;
    drain.flavor = flavor;
    for (size_t i = 0; i < planned.size(); ++i) {
      if (planned[i].empty()) continue;
      drain.nodes.emplace_back(ctx.nodes.nodes[i].name, model::ToResourceList(planned[i]));
      ctx.nodes.Take(ctx.nodes.nodes[i].name, planned[i]);
    }
    return drain;
  }
  return std::nullopt;
}

bool VictimPlanner::PlaceInOneDomain(const FlavorCtx& ctx, const std::vector<uint8_t>& accepts,
                                     NameId flavor, std::string_view level, int members,
                                     const model::IdAmounts& request,
                                     std::vector<model::IdAmounts>* planned) {
  bool found = false;
  double least = 0;
  std::vector<model::IdAmounts> trial;
  std::vector<uint8_t> inside;
  for (const std::vector<uint32_t>& domain : DomainsAt(
           ctx.placement, model::TopologyLevelsOf(policy_, FlavorNames().Name(flavor)), level)) {
    inside.assign(ctx.nodes.nodes.size(), 0);
    for (uint32_t i : domain) inside[i] = i >= accepts.size() || accepts[i] != 0;
    double shortfall = 0;
    if (!PlaceMembers(ctx.nodes, inside, members, request, &trial, &shortfall)) continue;
    if (!found || shortfall < least) {
      found = true;
      least = shortfall;
      planned->swap(trial);
    }
  }
  return found;
}

bool VictimPlanner::CouldEverRun(const PendingPod& pending, NameId flavor) {
  FlavorCtx& ctx = Ctx(flavor);
  NodeEligibility eligibility;
  eligibility.Compute(pending.node_selector, pending.placement.get(), ctx.placement);
  const model::IdAmounts request = ToIdAmounts(pending.request);
  return EverHolds(ctx.nodes, eligibility.accepts, AllNodes(ctx.nodes), request) > 0;
}

std::vector<RoundVictim> VictimPlanner::Commit(const Preemptor& p, const Selection& chosen) {
  std::vector<RoundVictim> victims = TakeVictims(chosen);
  Hold(Claim{p.team, chosen.flavor, chosen.node, p.request, /*quota=*/true, p.need});
  return victims;
}

Selection VictimPlanner::Choose(const Preemptor& p, NameId flavor, const Labels& node_selector,
                                const PodPlacementSpec* placement) {
  NodeEligibility eligibility;
  eligibility.Compute(node_selector, placement, Ctx(flavor).placement);
  return selector_.Select(Input(p, flavor, eligibility.accepts));
}

std::vector<RoundVictim> VictimPlanner::TakeVictims(const Selection& sel) {
  std::vector<RoundVictim> out;
  for (const Selection::Victim& chosen : sel.victims) {
    Candidate& c = set_.at(chosen.candidate);
    c.excluded = true;
    RoundVictim v;
    v.uid = c.uid;
    v.ns = c.ns;
    v.name = c.name;
    v.team = c.team;
    v.flavor = c.flavor;
    v.node = c.node;
    v.gang = c.gang;
    v.charged = c.charged;
    v.occupies = c.occupies;
    v.reason = chosen.reason;
    v.note = chosen.note;
    v.checkpoint_ms = c.checkpoint_ms;
    out.push_back(std::move(v));
  }
  for (const RoundVictim& v : out) ApplyVictim(v, +1);
  return out;
}

int64_t VictimPlanner::CandidateIndex(std::string_view uid) const {
  for (size_t i = 0; i < set_.size(); ++i) {
    if (set_.at(static_cast<uint32_t>(i)).uid == uid) return static_cast<int64_t>(i);
  }
  return -1;
}

void VictimPlanner::ReturnVictims(const std::vector<RoundVictim>& dropped,
                                  std::string_view refused_uid, bool refused_for_good) {
  for (const RoundVictim& d : dropped) {
    ApplyVictim(d, -1);
    if (int64_t i = CandidateIndex(d.uid); i >= 0) {
      Candidate& c = set_.at(static_cast<uint32_t>(i));
      c.excluded = refused_for_good && d.uid == refused_uid;
      c.pdb_blocked = c.pdb_blocked || d.uid == refused_uid;
    }
  }
}

bool VictimPlanner::BorrowsAfter(const decisions::Preemptor& p,
                                 const decisions::Selection& chosen) {
  decisions::QuotaSim quota = Ctx(chosen.flavor).quota;
  const int row = quota.Row(p.team);
  if (row < 0) return false;
  const decisions::QuotaSim::Amounts mine = quota.ToSlots(p.quota_request());
  if (chosen.outcome == decisions::Selection::Outcome::kFits) quota.Remove(row, mine);
  for (const decisions::Selection::Victim& v : chosen.victims) {
    const decisions::Candidate& c = set_.at(v.candidate);
    if (c.flavor != chosen.flavor) continue;
    if (const int other = quota.Row(c.team); other >= 0) {
      quota.Remove(other, quota.ToSlots(c.charged));
    }
  }
  return !quota.WithinNominal(row, mine);
}

}  // namespace taskgov::scheduler::actions
