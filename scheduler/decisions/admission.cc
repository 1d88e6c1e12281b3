#include "scheduler/decisions/admission.h"

#include <algorithm>
#include <deque>
#include <map>
#include <set>
#include <unordered_map>

#include "common/log.h"
#include "scheduler/decisions/fair_share.h"
#include "scheduler/decisions/preemption.h"
#include "scheduler/model/pod_identity.h"

namespace taskgov::scheduler {
namespace {

constexpr std::string_view kComponent = "admission";
using Mode = Ledger::Mode;

bool IsAccelerator(std::string_view resource) {
  return resource != "cpu" && resource != "memory" && resource != "ephemeral-storage" &&
         resource != "pods" && !resource.starts_with("hugepages-");
}

// What hypothetical admissions add on top of the ledger's current numbers: to one team's usage
// and to its cohort pool.
struct Tally {
  ResourceList team;
  ResourceList pool;
};

// Would `request` fit for (team, flavor) on top of the ledger and `tally` (DESIGN §3.3)? A dry
// run. When it fits and `after` is given, *after = tally plus this admission.
bool FitsOnTop(const Ledger::Session& s, NameId team, NameId flavor, const ResourceList& request,
               Mode mode, const Tally& tally, Tally* after) {
  if (!s.HasFlavor(team, flavor)) return false;
  Tally next = tally;
  for (const ResourceAmount& want : request) {
    std::optional<NameId> resource = ResourceNames().Find(want.name);
    if (!resource) continue;
    CellView v = s.View(team, flavor, *resource);
    if (!v.exists) continue;
    const int64_t usage = SaturatingAdd(v.usage, tally.team.Get(want.name));
    const int64_t ceiling =
        v.borrowing_limit == kUnlimited ? kUnlimited : SaturatingAdd(v.nominal, v.borrowing_limit);
    const int64_t cap = mode == Mode::kWithinNominal ? std::min(v.nominal, ceiling) : ceiling;
    if (SaturatingAdd(usage, want.amount) > cap) return false;
    const int64_t delta = std::max<int64_t>(0, usage + want.amount - v.guaranteed) -
                          std::max<int64_t>(0, usage - v.guaranteed);
    const int64_t pool_used = SaturatingAdd(v.pool_used, tally.pool.Get(want.name));
    if (delta > 0 && SaturatingAdd(pool_used, delta) > v.pool_capacity) return false;
    next.team.Set(want.name, SaturatingAdd(next.team.Get(want.name), want.amount));
    next.pool.Set(want.name, SaturatingAdd(next.pool.Get(want.name), delta));
  }
  if (after != nullptr) *after = std::move(next);
  return true;
}

std::string ReasonCode(RefusalKind kind) {
  switch (kind) {
    case RefusalKind::kNoQuota:
      return "no_quota";
    case RefusalKind::kNominal:
      return "quota";
    case RefusalKind::kBorrowingLimit:
      return "borrowing_limit";
    case RefusalKind::kPool:
      return "pool";
    case RefusalKind::kTooManyResources:
      return "no_quota";
  }
  return "quota";
}

}  // namespace

int64_t WeightedShare(const Ledger::Session& session, const Team& team, NameId flavor,
                      const ResourceList& request) {
  const NameId team_id = TeamNames().Intern(team.name);
  ShareAccumulator share;
  for (NameId resource : session.Resources(team_id, flavor)) {
    CellView v = session.View(team_id, flavor, resource);
    share.Add(v.usage + request.Get(ResourceNames().Name(resource)), v.nominal, v.pool_capacity);
  }
  return share.PerMille(team.fair_share_weight);
}

struct Admission::Context {
  PolicyPtr policy;
  const Team* team = nullptr;
  NameId team_id = kNoTeam;
  const Pod* pod = nullptr;
  ResourceList request;
  int32_t priority = 0;
  bool by_priority = true;
  Mode mode = Mode::kWithinNominal;
  // Higher-ranked pending pods of the team, fetched once per filter.
  std::optional<std::vector<PendingPod>> ahead;
};

Admission::Admission(QuotaBook* book, ClusterState* cluster, KubeActions* binder,
                     const common::Clock* clock, Options options)
    : book_(book), cluster_(cluster), binder_(binder), clock_(clock), options_(options) {}

void Admission::ApplyPolicy(PolicyPtr policy) {
  book_->ApplyPolicy(policy);
  cluster_->SetPolicy(std::move(policy));
}

bool Admission::QueueOrderBlocks(Context& ctx, NameId flavor, std::string* why) const {
  const bool strict = ctx.team->queueing == QueueingStrategy::kStrictFIFO;
  if (!ctx.ahead) {
    ctx.ahead =
        cluster_->PendingAhead(ctx.team_id, ctx.priority, ctx.pod->creation_unix_ms, ctx.pod->uid,
                               ctx.by_priority, strict ? 1 : options_.queue_lookahead);
  }
  if (ctx.ahead->empty()) return false;
  if (strict) {
    *why = "waiting behind higher-ranked pod " + ctx.ahead->front().key + " (StrictFIFO)";
    return true;
  }
  // BestEffortFIFO: the pods ahead take what they can, in rank order (a pod that cannot fit
  // does not hold the others back); this pod waits if what they take leaves it no room.
  Ledger::Session s(book_->ledger());
  const Tally none;
  if (!FitsOnTop(s, ctx.team_id, flavor, ctx.request, ctx.mode, none, nullptr)) {
    return false;  // it does not fit anyway: the quota refusal explains it
  }
  Tally ahead;
  const std::string_view flavor_name = FlavorNames().Name(flavor);
  for (const PendingPod& other : *ctx.ahead) {
    if (!ctx.policy->FlavorAllows(flavor_name, other.node_selector)) continue;  // not its flavor
    if (!FitsOnTop(s, ctx.team_id, flavor, other.request, Mode::kBorrowing, ahead, &ahead)) {
      continue;
    }
    if (!FitsOnTop(s, ctx.team_id, flavor, ctx.request, ctx.mode, ahead, nullptr)) {
      *why = "waiting behind higher-ranked pod " + other.key;
      return true;
    }
  }
  return false;
}

bool Admission::FairShareBlocks(Context& ctx, NameId flavor, std::string* why) const {
  if (ctx.policy->idle_compute != IdleComputeAllocation::kFairShare || ctx.team->cohort.empty()) {
    return false;
  }
  // The other teams' best-ranked waiting pods, read before the ledger session: the cluster
  // state's lock is never taken inside a session (informer events hold it while charging, and a
  // generation swap waits for open sessions).
  std::vector<std::pair<const Team*, PendingPod>> heads;
  for (const Team& other : ctx.policy->teams) {
    if (other.cohort != ctx.team->cohort || other.name == ctx.team->name || !other.active) {
      continue;
    }
    std::optional<PendingPod> head =
        cluster_->PendingHead(TeamNames().Intern(other.name),
                              ctx.policy->task_prioritization == TaskPrioritization::kTaskRanking);
    if (head) heads.emplace_back(&other, std::move(*head));
  }
  if (heads.empty()) return false;
  Ledger::Session s(book_->ledger());
  const int64_t my_share = WeightedShare(s, *ctx.team, flavor, ctx.request);
  const Tally none;
  Tally mine;
  (void)FitsOnTop(s, ctx.team_id, flavor, ctx.request, Mode::kBorrowing, none, &mine);
  Tally after_mine;  // another team's view once this pod took its share of the pool
  after_mine.pool = mine.pool;
  for (const auto& [other_team, pending] : heads) {
    const Team& other = *other_team;
    const NameId other_id = TeamNames().Intern(other.name);
    if (!s.HasFlavor(other_id, flavor)) continue;
    const PendingPod* head = &pending;
    if (!ctx.policy->FlavorAllows(FlavorNames().Name(flavor), head->node_selector)) continue;
    // Only demand that needs to borrow here, could borrow now, and would lose out to this pod.
    if (FitsOnTop(s, other_id, flavor, head->request, Mode::kWithinNominal, none, nullptr))
      continue;
    if (!FitsOnTop(s, other_id, flavor, head->request, Mode::kBorrowing, none, nullptr)) continue;
    if (FitsOnTop(s, other_id, flavor, head->request, Mode::kBorrowing, after_mine, nullptr)) {
      continue;
    }
    const int64_t other_share = WeightedShare(s, other, flavor, head->request);
    if (other_share < my_share ||
        (other_share == my_share && head->created_ms < ctx.pod->creation_unix_ms)) {
      auto show = [](int64_t share) {
        return share == kUnlimited ? std::string("inf") : std::to_string(share);
      };
      *why = "fair share: " + other.name + " (share " + show(other_share) + ") is ahead of " +
             ctx.team->name + " (share " + show(my_share) + ")";
      return true;
    }
  }
  return false;
}

FilterResult Admission::Filter(const FilterArgs& args) {
  FilterResult result;
  FilterDecision decision;
  const uint32_t node_count = static_cast<uint32_t>(args.node_names.size());
  auto refuse_all = [&](std::string reason, const std::string& code) {
    const uint32_t why = result.AddReason(std::move(reason));
    result.unresolvable.reserve(node_count);
    for (uint32_t i = 0; i < node_count; ++i) result.unresolvable.push_back({i, why});
    decision.reason = code;
    if (observer_) observer_(decision);
    return result;
  };
  if (std::string gate = Gate(); !gate.empty()) {
    result.error = gate;
    decision.reason = "not_ready";
    if (observer_) observer_(decision);
    return result;
  }
  Context ctx;
  ctx.policy = book_->ledger().policy();
  ctx.pod = &args.pod;
  ctx.team_id = cluster_->TeamOf(args.pod);
  ctx.team = ctx.team_id == kNoTeam ? nullptr : ctx.policy->FindTeam(TeamNames().Name(ctx.team_id));
  decision.team = ctx.team_id;
  if (ctx.team == nullptr) {
    if (ctx.policy->no_team == NoTeamAction::kRefuse) {
      return refuse_all("pod " + args.pod.key() + " belongs to no team (namespace " +
                            args.pod.namespace_ + " is not a team namespace)",
                        "no_team");
    }
    result.feasible.resize(node_count);  // not governed: pass through untouched
    for (uint32_t i = 0; i < node_count; ++i) result.feasible[i] = i;
    decision.admitted = true;
    decision.reason = "no_team";
    if (observer_) observer_(decision);
    return result;
  }
  if (!ctx.team->active) {
    return refuse_all(ctx.team->name + " is not active: its new pods are held", "inactive");
  }
  ctx.request = EffectiveRequest(args.pod);
  ctx.priority = ResolvePriority(*ctx.policy, args.pod);
  ctx.by_priority = ctx.policy->task_prioritization == TaskPrioritization::kTaskRanking;
  decision.priority_class = PriorityClassOf(*ctx.policy, args.pod);

  // Flavor and room of every candidate node: one hash lookup and integer compares each.
  const IdAmounts request_ids = ToIdAmounts(ctx.request);
  std::vector<NodeFit> fits;
  cluster_->FitNodes(args.node_names, request_ids, &fits);
  if (!args.node_names_mode) {
    for (size_t i = 0; i < args.nodes.size() && i < fits.size(); ++i) {
      NodeFit& fit = fits[i];
      fit.flavor = cluster_->FlavorOfLabels(args.nodes[i].labels);
      if (!fit.known) {  // not in the cache yet: judge by the node the scheduler sent
        fit.known = true;
        fit.room = !args.nodes[i].unschedulable;
        for (const ResourceAmount& want : ctx.request) {
          fit.room = fit.room && args.nodes[i].allocatable.Get(want.name) >= want.amount;
        }
      }
    }
  }

  std::vector<std::pair<NameId, uint32_t>> reason_of;  // flavor → index into result.reasons
  std::vector<std::pair<NameId, std::string>> code_of;
  auto note = [&](NameId flavor, std::string reason, std::string code) {
    for (auto& [f, r] : reason_of) {
      if (f == flavor) {
        result.reasons[r] = std::move(reason);
        for (auto& [g, c] : code_of) {
          if (g == flavor) c = std::move(code);
        }
        return;
      }
    }
    reason_of.emplace_back(flavor, result.AddReason(std::move(reason)));
    code_of.emplace_back(flavor, std::move(code));
  };
  for (Mode mode : {Mode::kWithinNominal, Mode::kBorrowing}) {
    ctx.mode = mode;
    for (const FlavorQuota& fq : ctx.team->flavors) {
      const NameId flavor = FlavorNames().Intern(fq.flavor);
      bool any = false;
      bool roomy = false;
      for (const NodeFit& fit : fits) {
        if (fit.flavor != flavor) continue;
        any = true;
        roomy = roomy || fit.room;
      }
      if (!any) continue;
      if (!roomy) {
        note(flavor,
             ctx.team->name + ": no " + fq.flavor + " node has room for " + ctx.request.ToString(),
             "no_room");
        continue;
      }
      std::string why;
      if (QueueOrderBlocks(ctx, flavor, &why)) {
        note(flavor, ctx.team->name + ": " + why, "queue_order");
        continue;
      }
      if (mode == Mode::kBorrowing && FairShareBlocks(ctx, flavor, &why)) {
        note(flavor, std::move(why), "fair_share");
        continue;
      }
      PodMeta meta;
      meta.priority = ctx.priority;
      meta.created_ms = args.pod.creation_unix_ms;
      std::variant<Charge, Refusal> r = book_->Assume(
          args.pod.uid, ctx.team_id, flavor, ctx.request, mode, options_.assume_ttl_ms, meta);
      if (const Refusal* refusal = std::get_if<Refusal>(&r)) {
        note(flavor, refusal->Explain(), ReasonCode(refusal->kind));
        continue;
      }
      // Admitted on this flavor: its nodes with room are feasible, the others are explained.
      cluster_->NoteAdmitted(args.pod.uid);
      result.reasons.clear();
      const uint32_t no_room =
          result.AddReason(ctx.team->name + ": node has no room for " + ctx.request.ToString());
      const uint32_t elsewhere =
          result.AddReason("taskgov assigned " + args.pod.key() + " to " + fq.flavor);
      result.feasible.reserve(node_count);
      result.unresolvable.reserve(node_count);
      for (uint32_t i = 0; i < node_count; ++i) {
        if (fits[i].flavor != flavor) {
          result.unresolvable.push_back({i, elsewhere});
        } else if (fits[i].room) {
          result.feasible.push_back(i);
        } else {
          result.unresolvable.push_back({i, no_room});
        }
      }
      decision.admitted = true;
      decision.flavor = flavor;
      decision.borrowing = std::get<Charge>(r).borrowing;
      if (observer_) observer_(decision);
      return result;
    }
  }

  // Refused on every flavor: one reason per flavor, shared by its nodes.
  cluster_->NotePending(args.pod, ctx.team_id, ctx.priority, ctx.request);
  if (preemption_status_) {
    if (std::string status = preemption_status_(args.pod.uid); !status.empty()) {
      for (std::string& reason : result.reasons) reason += "; " + status;
    }
  }
  decision.reason = code_of.empty() ? "no_quota" : code_of.front().second;
  std::vector<std::pair<NameId, uint32_t>> other;  // flavors without a verdict
  auto reason_for = [&](NameId flavor) -> uint32_t {
    for (const auto& [f, r] : reason_of) {
      if (f == flavor) return r;
    }
    for (const auto& [f, r] : other) {
      if (f == flavor) return r;
    }
    std::string reason = flavor == kNoNode
                             ? "node belongs to no flavor (no instance-type label, or unknown)"
                             : ctx.team->name + ": no quota on " + FlavorNames().Name(flavor);
    other.emplace_back(flavor, result.AddReason(std::move(reason)));
    return other.back().second;
  };
  result.unresolvable.reserve(node_count);
  NameId last_flavor = kNoNode;
  uint32_t last_reason = 0;
  bool have_last = false;
  for (uint32_t i = 0; i < node_count; ++i) {
    if (!have_last || fits[i].flavor != last_flavor) {
      last_flavor = fits[i].flavor;
      last_reason = reason_for(last_flavor);
      have_last = true;
    }
    result.unresolvable.push_back({i, last_reason});
  }
  if (observer_) observer_(decision);
  return result;
}

std::vector<HostPriority> Admission::Prioritize(const FilterArgs& args) {
  std::vector<HostPriority> scores;
  scores.reserve(args.node_names.size());
  for (const std::string& name : args.node_names) scores.push_back(HostPriority{name, 0});
  if (!Gate().empty()) return scores;
  std::optional<Reservation> reservation = book_->Find(args.pod.uid);
  if (!reservation) return scores;
  const ResourceList request = EffectiveRequest(args.pod);
  // The resource to pack: the pod's largest accelerator request, else cpu.
  std::string packed = "cpu";
  int64_t biggest = 0;
  for (const ResourceAmount& r : request) {
    if (IsAccelerator(r.name) && r.amount > biggest) {
      biggest = r.amount;
      packed = r.name;
    }
  }
  std::vector<NodePacking> nodes;
  cluster_->PackNodes(args.node_names, ResourceNames().Intern(packed), &nodes);
  const int64_t want = request.Get(packed);
  for (size_t i = 0; i < nodes.size(); ++i) {
    const NodePacking& n = nodes[i];
    if (!n.known || n.flavor != reservation->charge.flavor) continue;
    int64_t pack = 0;
    if (n.allocatable > 0) {
      const int64_t after = std::min(n.allocatable, SaturatingAdd(n.used, want));
      pack = (8 * after + n.allocatable / 2) / n.allocatable;
    }
    const bool together =
        reservation->charge.borrowing ? n.borrowing_pods > 0 : n.borrowing_pods == 0;
    scores[i].score = std::clamp<int64_t>(pack + (together ? 2 : 0), 0, 10);
  }
  return scores;
}

PreemptResult Admission::Preempt(const PreemptArgs& args) {
  PreemptResult result;
  if (std::string gate = Gate(); !gate.empty()) {
    result.error = gate;
    return result;
  }
  PolicyPtr policy = book_->ledger().policy();
  PreemptorFacts preemptor;
  preemptor.team_id = cluster_->TeamOf(args.pod);
  preemptor.team = preemptor.team_id == kNoTeam
                       ? nullptr
                       : policy->FindTeam(TeamNames().Name(preemptor.team_id));
  preemptor.priority = ResolvePriority(*policy, args.pod);
  preemptor.created_ms = args.pod.creation_unix_ms;
  const ResourceList preemptor_request = EffectiveRequest(args.pod);
  const std::optional<Reservation> own = book_->Find(args.pod.uid);
  const int64_t now = clock_->NowMs();
  auto charged = [](const Charge& charge) {
    IdAmounts out;
    for (uint8_t i = 0; i < charge.count; ++i) {
      out.emplace_back(charge.items[i].resource, charge.items[i].amount);
    }
    return out;
  };
  // The quota state of each flavor met, as the rule needs it: with the preemptor not yet
  // admitted (a reservation it already holds is taken out).
  std::deque<QuotaSim> sims;
  auto sim_of = [&](NameId flavor) -> const QuotaSim* {
    if (flavor == kNoNode) return nullptr;
    for (const QuotaSim& sim : sims) {
      if (sim.flavor() == flavor) return &sim;
    }
    {
      Ledger::Session session(book_->ledger());
      sims.push_back(QuotaSim::FromSession(session, flavor));
    }
    QuotaSim& sim = sims.back();
    if (own && own->charge.flavor == flavor) {
      if (int row = sim.Row(own->charge.team); row >= 0) {
        sim.Remove(row, sim.ToSlots(charged(own->charge)));
      }
    }
    return &sim;
  };

  struct Kept {
    int32_t priority = 0;
    Pod pod;
    std::string gang;
  };
  std::map<std::string, std::vector<Kept>> kept_by_node;
  std::set<std::string> gangs;
  for (const auto& [node, victims] : args.node_to_victims) {
    const QuotaSim* sim = sim_of(cluster_->ViewNode(node).flavor);
    const QuotaSim::Amounts request = sim ? sim->ToSlots(preemptor_request) : QuotaSim::Amounts{};
    std::vector<Kept>& kept = kept_by_node[node];
    for (const Pod& given : victims.pods) {
      std::optional<Pod> known = args.meta ? cluster_->FindPod(given.uid) : std::optional(given);
      if (!known) continue;  // unknown to us: cannot judge, do not evict
      VictimFacts victim;
      victim.team_id = cluster_->TeamOf(*known);
      victim.team =
          victim.team_id == kNoTeam ? nullptr : policy->FindTeam(TeamNames().Name(victim.team_id));
      victim.priority = ResolvePriority(*policy, *known);
      victim.created_ms = known->creation_unix_ms;
      victim.started_ms = known->start_unix_ms.value_or(known->creation_unix_ms);
      QuotaSim::Amounts charge{};
      if (sim != nullptr) {
        std::optional<Reservation> r = book_->Find(known->uid);
        charge = r && r->charge.flavor == sim->flavor() ? sim->ToSlots(charged(r->charge))
                                                        : sim->ToSlots(EffectiveRequest(*known));
      }
      if (!JudgeVictim(*policy, preemptor, victim, sim, request, charge, now).allowed) continue;
      Kept k{victim.priority, std::move(*known), ""};
      k.gang = GangOf(k.pod);
      if (!k.gang.empty()) gangs.insert(k.gang);
      kept.push_back(std::move(k));
    }
  }
  // A gang goes whole or not at all: a member is kept only when every running member of its
  // gang is a kept victim on the same node (the scheduler evicts per node).
  std::map<std::string, std::set<std::string>> members;
  if (!gangs.empty()) {
    cluster_->ForEachBoundPod([&](const Pod& pod, NameId, const ResourceList&) {
      std::string gang = GangOf(pod);
      if (gangs.count(gang) > 0) members[gang].insert(pod.uid);
    });
  }
  for (auto& [node, kept] : kept_by_node) {
    std::set<std::string> uids;
    for (const Kept& k : kept) uids.insert(k.pod.uid);
    std::erase_if(kept, [&](const Kept& k) {
      if (k.gang.empty()) return false;
      for (const std::string& uid : members[k.gang]) {
        if (uids.count(uid) == 0) return true;
      }
      return false;
    });
    if (kept.empty()) continue;  // a node without victims is dropped
    std::stable_sort(kept.begin(), kept.end(),
                     [](const Kept& a, const Kept& b) { return a.priority > b.priority; });
    Victims& out = result.node_to_victims[node];
    out.num_pdb_violations = args.node_to_victims.at(node).num_pdb_violations;
    for (Kept& k : kept) out.pods.push_back(std::move(k.pod));
  }
  return result;
}

BindResult Admission::Bind(const BindArgs& args) {
  BindResult result;
  if (std::string gate = Gate(); !gate.empty()) {
    result.error = gate;
    return result;
  }
  if (binder_ == nullptr) {
    result.error = "taskgov is not configured as the binder";
    return result;
  }
  const std::string key = args.pod_namespace + "/" + args.pod_name;
  const NodeView node = cluster_->ViewNode(args.node);
  std::optional<Pod> pod = cluster_->FindPod(args.pod_uid);
  std::optional<Reservation> reservation = book_->Find(args.pod_uid);
  NameId team = kNoTeam;
  ResourceList request;
  if (pod) {
    team = cluster_->TeamOf(*pod);
    request = EffectiveRequest(*pod);
  }
  if (reservation) {
    team = reservation->charge.team;
    if (!pod) {
      for (uint8_t i = 0; i < reservation->charge.count; ++i) {
        const Charge::Item& item = reservation->charge.items[i];
        request.Set(ResourceNames().Name(item.resource), item.amount);
      }
    }
  } else if (!pod) {
    result.error = "unknown pod " + key + " (uid " + args.pod_uid + "): not seen by taskgov";
    return result;
  } else if (team != kNoTeam) {
    // The assumed reservation expired (or another replica filtered it): admit again here.
    if (node.flavor == kNoNode) {
      result.error = "node " + args.node + " belongs to no flavor";
      return result;
    }
    PodMeta meta;
    meta.priority = ResolvePriority(*book_->ledger().policy(), *pod);
    meta.created_ms = pod->creation_unix_ms;
    std::variant<Charge, Refusal> r = book_->Assume(args.pod_uid, team, node.flavor, request,
                                                    Mode::kBorrowing, options_.assume_ttl_ms, meta);
    if (const Refusal* refusal = std::get_if<Refusal>(&r)) {
      result.error = refusal->Explain();
      return result;
    }
  }
  common::Status bound = binder_->Bind(args.pod_namespace, args.pod_name, args.pod_uid, args.node);
  if (!bound.ok()) {
    book_->Release(args.pod_uid);
    result.error = "binding " + key + " to " + args.node + " failed: " + bound.error().message;
    common::log::Warn(kComponent, "bind failed",
                      {{"pod", key}, {"node", args.node}, {"error", bound.error().message}});
    return result;
  }
  if (team != kNoTeam && node.flavor != kNoNode) {
    PodMeta meta;
    meta.node = NodeNames().Intern(args.node);
    meta.created_ms = pod ? pod->creation_unix_ms : 0;
    book_->ConfirmBound(args.pod_uid, team, node.flavor, request, meta);
  }
  return result;
}

}  // namespace taskgov::scheduler
