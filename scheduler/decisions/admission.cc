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

// One decision's snapshot. The ledger generation — the policy and the usage counters — is
// pinned by the session for the decision's whole length, and the reservation is taken inside it.
// Everything else is read once and then held as a copy: the pod's team (TeamResolver), the
// candidate nodes' flavor and room (NodeCache, JudgeNodes) and the pending view (PendingQueues,
// on first need). Those reads take their components' locks shared, never exclusively.
struct Admission::Context {
  explicit Context(const QuotaBook& book) : session(book.ledger()), policy(session.policy()) {}
  Ledger::Session session;
  const Policy& policy;
  const Team* team = nullptr;
  NameId team_id = kNoTeam;
  const Pod* pod = nullptr;
  ResourceList request;
  // The request's resources that have an interned id (KnownIdAmounts: lock-free, and names from
  // the pod are never added to the interners); `unknown_resource` when some positive request
  // names a resource nothing ever interned, so no node can hold it.
  IdAmounts request_ids;
  bool unknown_resource = false;
  int32_t priority = 0;
  bool by_priority = true;
  Mode mode = Mode::kWithinNominal;
  // The pending view the decision needs, copied from the pending queues the first time it is
  // needed and never read again: the team's higher-ranked pending pods, and the best-ranked
  // pending pod of every other active team of its cohort.
  std::optional<std::vector<PendingPod>> ahead;
  std::optional<std::vector<std::pair<const Team*, PendingPod>>> heads;
};

// Why each flavor was refused: one reason per flavor, shared by its nodes, and its code.
class Admission::FlavorNotes {
 public:
  explicit FlavorNotes(FilterResult* result) : result_(result) {}
  // A later verdict on a flavor replaces the earlier one (borrowing after within-nominal).
  void Note(NameId flavor, std::string reason, std::string code) {
    for (Entry& e : entries_) {
      if (e.flavor == flavor) {
        result_->reasons[e.reason] = std::move(reason);
        e.code = std::move(code);
        return;
      }
    }
    entries_.push_back({flavor, result_->AddReason(std::move(reason)), std::move(code)});
  }
  [[nodiscard]] std::optional<uint32_t> ReasonOf(NameId flavor) const {
    for (const Entry& e : entries_) {
      if (e.flavor == flavor) return e.reason;
    }
    return std::nullopt;
  }
  // The code of the first flavor with a verdict ("no_quota" when none had one).
  [[nodiscard]] std::string FirstCode() const {
    return entries_.empty() ? "no_quota" : entries_.front().code;
  }

 private:
  struct Entry {
    NameId flavor;
    uint32_t reason;
    std::string code;
  };
  FilterResult* result_;
  std::vector<Entry> entries_;
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
    ctx.ahead = cluster_->pending().Ahead(ctx.team_id, ctx.priority, ctx.pod->creation_unix_ms,
                                          ctx.pod->uid, ctx.by_priority,
                                          strict ? 1 : options_.queue_lookahead);
  }
  if (ctx.ahead->empty()) return false;
  if (strict) {
    *why = "waiting behind higher-ranked pod " + ctx.ahead->front().key + " (StrictFIFO)";
    return true;
  }
  // BestEffortFIFO: the pods ahead take what they can, in rank order (a pod that cannot fit
  // does not hold the others back); this pod waits if what they take leaves it no room.
  const Ledger::Session& s = ctx.session;
  const Tally none;
  if (!FitsOnTop(s, ctx.team_id, flavor, ctx.request, ctx.mode, none, nullptr)) {
    return false;  // it does not fit anyway: the quota refusal explains it
  }
  Tally ahead;
  const std::string_view flavor_name = FlavorNames().Name(flavor);
  for (const PendingPod& other : *ctx.ahead) {
    if (!ctx.policy.FlavorAllows(flavor_name, other.node_selector)) continue;  // not its flavor
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

std::vector<std::pair<const Team*, PendingPod>> Admission::CohortHeads(const Context& ctx) const {
  // The pending queues' lock, shared: it may be taken inside a session (see cluster_state.h).
  std::vector<std::pair<const Team*, PendingPod>> heads;
  for (const Team& other : ctx.policy.teams) {
    if (other.cohort != ctx.team->cohort || other.name == ctx.team->name || !other.active) {
      continue;
    }
    std::optional<PendingPod> head = cluster_->pending().Head(
        TeamNames().Intern(other.name),
        ctx.policy.task_prioritization == TaskPrioritization::kTaskRanking);
    if (head) heads.emplace_back(&other, std::move(*head));
  }
  return heads;
}

bool Admission::FairShareBlocks(Context& ctx, NameId flavor, std::string* why) const {
  if (ctx.policy.idle_compute != IdleComputeAllocation::kFairShare || ctx.team->cohort.empty()) {
    return false;
  }
  if (!ctx.heads) ctx.heads = CohortHeads(ctx);
  const std::vector<std::pair<const Team*, PendingPod>>& heads = *ctx.heads;
  if (heads.empty()) return false;
  const Ledger::Session& s = ctx.session;
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
    if (!ctx.policy.FlavorAllows(FlavorNames().Name(flavor), head->node_selector)) continue;
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
  FilterDecision decision;
  if (std::string gate = Gate(); !gate.empty()) {
    FilterResult result;
    result.error = gate;
    decision.reason = "not_ready";
    return Report(decision, std::move(result));
  }
  Context ctx(*book_);
  ResolveSubject(ctx, args.pod);
  decision.team = ctx.team_id;
  if (ctx.team == nullptr) return NoTeam(ctx, args, decision);
  if (!ctx.team->active) {
    return RefuseAll(args, ctx.team->name + " is not active: its new pods are held", "inactive",
                     decision);
  }
  decision.priority_class = PriorityClassOf(ctx.policy, args.pod);
  const std::vector<NodeFit> fits = JudgeNodes(ctx, args);
  FilterResult result;
  FlavorNotes notes(&result);
  for (Mode mode : {Mode::kWithinNominal, Mode::kBorrowing}) {
    ctx.mode = mode;
    for (const FlavorQuota& fq : ctx.team->flavors) {
      const NameId flavor = FlavorNames().Intern(fq.flavor);
      std::optional<Charge> charge = TryFlavor(ctx, fq, flavor, fits, &notes);
      if (!charge) continue;
      decision.admitted = true;
      decision.flavor = flavor;
      decision.borrowing = charge->borrowing;
      return Report(decision, AdmittedOn(ctx, args, fq, flavor, fits));
    }
  }
  decision.reason = notes.FirstCode();
  return Report(decision, RefusedEverywhere(ctx, args, fits, notes, std::move(result)));
}

void Admission::ResolveSubject(Context& ctx, const Pod& pod) const {
  ctx.pod = &pod;
  ctx.team_id = cluster_->teams().TeamOf(pod);
  ctx.team = ctx.team_id == kNoTeam ? nullptr : ctx.policy.FindTeam(TeamNames().Name(ctx.team_id));
  if (ctx.team == nullptr) return;
  ctx.request = EffectiveRequest(pod);
  ctx.request_ids = KnownIdAmounts(ctx.request);
  const auto requested = std::count_if(ctx.request.begin(), ctx.request.end(),
                                       [](const ResourceAmount& r) { return r.amount > 0; });
  const auto known = std::count_if(ctx.request_ids.begin(), ctx.request_ids.end(),
                                   [](const IdAmount& r) { return r.second > 0; });
  ctx.unknown_resource = known < requested;
  ctx.priority = ResolvePriority(ctx.policy, pod);
  ctx.by_priority = ctx.policy.task_prioritization == TaskPrioritization::kTaskRanking;
}

FilterResult Admission::Report(const FilterDecision& decision, FilterResult result) const {
  if (observer_) observer_(decision);
  return result;
}

FilterResult Admission::RefuseAll(const FilterArgs& args, std::string reason,
                                  const std::string& code, FilterDecision decision) const {
  FilterResult result;
  const uint32_t why = result.AddReason(std::move(reason));
  const uint32_t node_count = static_cast<uint32_t>(args.node_names.size());
  result.unresolvable.reserve(node_count);
  for (uint32_t i = 0; i < node_count; ++i) result.unresolvable.push_back({i, why});
  decision.reason = code;
  return Report(decision, std::move(result));
}

FilterResult Admission::NoTeam(const Context& ctx, const FilterArgs& args,
                               FilterDecision decision) const {
  if (ctx.policy.no_team == NoTeamAction::kRefuse) {
    return RefuseAll(args,
                     "pod " + args.pod.key() + " belongs to no team (namespace " +
                         args.pod.namespace_ + " is not a team namespace)",
                     "no_team", decision);
  }
  FilterResult result;  // not governed: pass through untouched
  const uint32_t node_count = static_cast<uint32_t>(args.node_names.size());
  result.feasible.resize(node_count);
  for (uint32_t i = 0; i < node_count; ++i) result.feasible[i] = i;
  decision.admitted = true;
  decision.reason = "no_team";
  return Report(decision, std::move(result));
}

std::vector<NodeFit> Admission::JudgeNodes(const Context& ctx, const FilterArgs& args) const {
  // Flavor and room of every candidate node: one hash lookup and integer compares each.
  std::vector<NodeFit> fits;
  cluster_->nodes().FitNodes(args.node_names, ctx.request_ids, &fits);
  if (ctx.unknown_resource) {
    for (NodeFit& fit : fits) fit.room = false;  // no node has a resource nothing interned
  }
  if (args.node_names_mode) return fits;
  for (size_t i = 0; i < args.nodes.size() && i < fits.size(); ++i) {
    NodeFit& fit = fits[i];
    fit.flavor = FlavorOfNode(ctx.policy, args.nodes[i].labels);
    if (fit.known) continue;
    // Not in the cache yet: judge by the node the scheduler sent.
    fit.known = true;
    fit.room = !args.nodes[i].unschedulable;
    for (const ResourceAmount& want : ctx.request) {
      fit.room = fit.room && args.nodes[i].allocatable.Get(want.name) >= want.amount;
    }
  }
  return fits;
}

std::optional<Charge> Admission::TryFlavor(Context& ctx, const FlavorQuota& fq, NameId flavor,
                                           const std::vector<NodeFit>& fits,
                                           FlavorNotes* notes) const {
  bool any = false;
  bool roomy = false;
  for (const NodeFit& fit : fits) {
    if (fit.flavor != flavor) continue;
    any = true;
    roomy = roomy || fit.room;
  }
  if (!any) return std::nullopt;
  if (!roomy) {
    notes->Note(
        flavor,
        ctx.team->name + ": no " + fq.flavor + " node has room for " + ctx.request.ToString(),
        "no_room");
    return std::nullopt;
  }
  std::string why;
  if (QueueOrderBlocks(ctx, flavor, &why)) {
    notes->Note(flavor, ctx.team->name + ": " + why, "queue_order");
    return std::nullopt;
  }
  if (ctx.mode == Mode::kBorrowing && FairShareBlocks(ctx, flavor, &why)) {
    notes->Note(flavor, std::move(why), "fair_share");
    return std::nullopt;
  }
  PodMeta meta;
  meta.priority = ctx.priority;
  meta.created_ms = ctx.pod->creation_unix_ms;
  std::variant<Charge, Refusal> r =
      book_->Assume(ctx.session, ctx.pod->uid, ctx.team_id, flavor, ctx.request, ctx.mode,
                    options_.assume_ttl_ms, meta);
  if (const Refusal* refusal = std::get_if<Refusal>(&r)) {
    notes->Note(flavor, refusal->Explain(), ReasonCode(refusal->kind));
    return std::nullopt;
  }
  return std::get<Charge>(r);
}

FilterResult Admission::AdmittedOn(const Context& ctx, const FilterArgs& args,
                                   const FlavorQuota& fq, NameId flavor,
                                   const std::vector<NodeFit>& fits) const {
  // Admitted on this flavor: its nodes with room are feasible, the others are explained.
  cluster_->pending().NoteAdmitted(std::string(args.pod.uid));
  FilterResult result;
  const uint32_t no_room =
      result.AddReason(ctx.team->name + ": node has no room for " + ctx.request.ToString());
  const uint32_t elsewhere =
      result.AddReason("taskgov assigned " + args.pod.key() + " to " + fq.flavor);
  const uint32_t node_count = static_cast<uint32_t>(args.node_names.size());
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
  return result;
}

FilterResult Admission::RefusedEverywhere(const Context& ctx, const FilterArgs& args,
                                          const std::vector<NodeFit>& fits,
                                          const FlavorNotes& notes, FilterResult result) const {
  // Refused on every flavor: one reason per flavor, shared by its nodes.
  cluster_->pending().NoteRefused(PendingPodOf(args.pod, ctx.team_id, ctx.priority, ctx.request));
  if (preemption_status_) {
    if (std::string status = preemption_status_(args.pod.uid); !status.empty()) {
      for (std::string& reason : result.reasons) reason += "; " + status;
    }
  }
  std::vector<std::pair<NameId, uint32_t>> other;  // flavors without a verdict
  auto reason_for = [&](NameId flavor) -> uint32_t {
    if (std::optional<uint32_t> r = notes.ReasonOf(flavor)) return *r;
    for (const auto& [f, r] : other) {
      if (f == flavor) return r;
    }
    std::string reason = flavor == kNoFlavor
                             ? "node belongs to no flavor (no instance-type label, or unknown)"
                             : ctx.team->name + ": no quota on " + FlavorNames().Name(flavor);
    other.emplace_back(flavor, result.AddReason(std::move(reason)));
    return other.back().second;
  };
  const uint32_t node_count = static_cast<uint32_t>(args.node_names.size());
  result.unresolvable.reserve(node_count);
  NameId last_flavor = kNoFlavor;
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
  cluster_->nodes().PackNodes(args.node_names, ResourceNames().Intern(packed), &nodes);
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

// What the preempt verb judges one victim with: the preemptor, and the quota state of each flavor
// met as the rule needs it — with the preemptor not yet admitted (a reservation it already holds
// is taken out). Every flavor's state is read through the one session of the decision.
class Admission::PreemptJudge {
 public:
  PreemptJudge(const QuotaBook& book, const ClusterState& cluster, const Pod& pod, int64_t now)
      : book_(book),
        cluster_(cluster),
        session_(book.ledger()),
        policy_(session_.policy()),
        now_(now),
        own_(book.Find(pod.uid)),
        request_(EffectiveRequest(pod)) {
    preemptor_.team_id = cluster.teams().TeamOf(pod);
    preemptor_.team = TeamOf(preemptor_.team_id);
    preemptor_.priority = ResolvePriority(policy_, pod);
    preemptor_.created_ms = pod.creation_unix_ms;
  }

  // The victims of one node the rule allows, with their gangs.
  // `victims` are the pods as taskgov knows them (KnownVictims).
  [[nodiscard]] std::vector<KeptVictim> AllowedOn(const std::string& node,
                                                  std::vector<Pod> victims) {
    const QuotaSim* sim = SimOf(cluster_.nodes().View(node).flavor);
    const QuotaSim::Amounts request = sim ? sim->ToSlots(request_) : QuotaSim::Amounts{};
    std::vector<KeptVictim> kept;
    for (Pod& pod : victims) {
      VictimFacts victim;
      victim.team_id = cluster_.teams().TeamOf(pod);
      victim.team = TeamOf(victim.team_id);
      victim.priority = ResolvePriority(policy_, pod);
      victim.created_ms = pod.creation_unix_ms;
      victim.started_ms = pod.start_unix_ms.value_or(pod.creation_unix_ms);
      const QuotaSim::Amounts charge = sim ? ChargeOf(*sim, pod) : QuotaSim::Amounts{};
      if (!JudgeVictim(policy_, preemptor_, victim, sim, request, charge, now_).allowed) continue;
      KeptVictim k{victim.priority, std::move(pod), ""};
      k.gang = GangOf(k.pod);
      kept.push_back(std::move(k));
    }
    return kept;
  }

 private:
  static IdAmounts Charged(const Charge& charge) {
    IdAmounts out;
    for (uint8_t i = 0; i < charge.count; ++i) {
      out.emplace_back(charge.items[i].resource, charge.items[i].amount);
    }
    return out;
  }
  const Team* TeamOf(NameId id) const {
    return id == kNoTeam ? nullptr : policy_.FindTeam(TeamNames().Name(id));
  }
  QuotaSim::Amounts ChargeOf(const QuotaSim& sim, const Pod& victim) const {
    std::optional<Reservation> r = book_.Find(victim.uid);
    return r && r->charge.flavor == sim.flavor() ? sim.ToSlots(Charged(r->charge))
                                                 : sim.ToSlots(EffectiveRequest(victim));
  }
  const QuotaSim* SimOf(NameId flavor) {
    if (flavor == kNoFlavor) return nullptr;
    for (const QuotaSim& sim : sims_) {
      if (sim.flavor() == flavor) return &sim;
    }
    sims_.push_back(QuotaSim::FromSession(session_, flavor));
    QuotaSim& sim = sims_.back();
    if (own_ && own_->charge.flavor == flavor) {
      if (int row = sim.Row(own_->charge.team); row >= 0) {
        sim.Remove(row, sim.ToSlots(Charged(own_->charge)));
      }
    }
    return &sim;
  }

  const QuotaBook& book_;
  const ClusterState& cluster_;
  Ledger::Session session_;
  const Policy& policy_;
  const int64_t now_;
  const std::optional<Reservation> own_;
  const ResourceList request_;
  PreemptorFacts preemptor_;
  std::deque<QuotaSim> sims_;
};

PreemptResult Admission::Preempt(const PreemptArgs& args) {
  PreemptResult result;
  if (std::string gate = Gate(); !gate.empty()) {
    result.error = gate;
    return result;
  }
  // The victims as taskgov knows them, read before the judge's session opens: the pods' lock is
  // never taken inside a session (informer events hold it while they charge the ledger, and a
  // generation swap waits for open sessions).
  std::map<std::string, std::vector<Pod>> known = KnownVictims(args);
  std::map<std::string, std::vector<KeptVictim>> kept_by_node;
  {
    PreemptJudge judge(*book_, *cluster_, args.pod, clock_->NowMs());
    for (auto& [node, victims] : known)
      kept_by_node[node] = judge.AllowedOn(node, std::move(victims));
  }
  DropPartialGangs(&kept_by_node);
  for (auto& [node, kept] : kept_by_node) {
    if (kept.empty()) continue;  // a node without victims is dropped
    std::stable_sort(kept.begin(), kept.end(), [](const KeptVictim& a, const KeptVictim& b) {
      return a.priority > b.priority;
    });
    Victims& out = result.node_to_victims[node];
    out.num_pdb_violations = args.node_to_victims.at(node).num_pdb_violations;
    for (KeptVictim& k : kept) out.pods.push_back(std::move(k.pod));
  }
  return result;
}

std::map<std::string, std::vector<Pod>> Admission::KnownVictims(const PreemptArgs& args) const {
  std::map<std::string, std::vector<Pod>> known;
  for (const auto& [node, victims] : args.node_to_victims) {
    std::vector<Pod>& pods = known[node];
    for (const Pod& given : victims.pods) {
      // Meta victims are UIDs only: judged as taskgov knows them; unknown ones are not evicted.
      std::optional<Pod> pod = args.meta ? cluster_->FindPod(given.uid) : std::optional(given);
      if (pod) pods.push_back(std::move(*pod));
    }
  }
  return known;
}

void Admission::DropPartialGangs(
    std::map<std::string, std::vector<KeptVictim>>* kept_by_node) const {
  // A gang goes whole or not at all: a member is kept only when every running member of its
  // gang is a kept victim on the same node (the scheduler evicts per node).
  std::set<std::string> gangs;
  for (const auto& [node, kept] : *kept_by_node) {
    for (const KeptVictim& k : kept) {
      if (!k.gang.empty()) gangs.insert(k.gang);
    }
  }
  if (gangs.empty()) return;
  std::map<std::string, std::set<std::string>> members;
  cluster_->ForEachBoundPod([&](const Pod& pod, NameId, const ResourceList&) {
    std::string gang = GangOf(pod);
    if (gangs.count(gang) > 0) members[gang].insert(pod.uid);
  });
  for (auto& [node, kept] : *kept_by_node) {
    std::set<std::string> uids;
    for (const KeptVictim& k : kept) uids.insert(k.pod.uid);
    std::erase_if(kept, [&](const KeptVictim& k) {
      if (k.gang.empty()) return false;
      for (const std::string& uid : members[k.gang]) {
        if (uids.count(uid) == 0) return true;
      }
      return false;
    });
  }
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
  const NodeView node = cluster_->nodes().View(args.node);
  std::optional<Pod> pod = cluster_->FindPod(args.pod_uid);
  std::optional<Reservation> reservation = book_->Find(args.pod_uid);
  NameId team = kNoTeam;
  ResourceList request;
  if (pod) {
    team = cluster_->teams().TeamOf(*pod);
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
    if (node.flavor == kNoFlavor) {
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
  if (team != kNoTeam && node.flavor != kNoFlavor) {
    PodMeta meta;
    meta.node = NodeNames().Intern(args.node);
    meta.created_ms = pod ? pod->creation_unix_ms : 0;
    book_->ConfirmBound(args.pod_uid, team, node.flavor, request, meta);
  }
  return result;
}

}  // namespace taskgov::scheduler
