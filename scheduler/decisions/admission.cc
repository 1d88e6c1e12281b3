#include "scheduler/decisions/admission.h"

#include <algorithm>
#include <deque>
#include <map>
#include <set>
#include <unordered_map>
#include <utility>

#include "scheduler/common/log.h"
#include "scheduler/decisions/gang_room.h"
#include "scheduler/decisions/placement.h"
#include "scheduler/decisions/preemption.h"
#include "scheduler/decisions/rules.h"
#include "scheduler/model/pod_identity.h"
#include "scheduler/model/quantity.h"

namespace taskgov::scheduler::decisions {

using ledger::Charge;
using ledger::KnownIdAmounts;
using ledger::Ledger;
using ledger::PodMeta;
using ledger::QuotaBook;
using ledger::Refusal;
using ledger::RefusalKind;
using ledger::Reservation;
using model::AwaitsGangObject;
using model::EffectiveRequest;
using model::FlavorNames;
using model::FlavorQuota;
using model::FormatQuantity;
using model::GangOf;
using model::GangSourceName;
using model::IdAmounts;
using model::IsAccelerator;
using model::kUnlimited;
using model::NameId;
using model::NodeNames;
using model::NoTeamAction;
using model::Pod;
using model::Policy;
using model::PolicyPtr;
using model::PriorityClassOf;
using model::ResolvePriority;
using model::ResourceAmount;
using model::ResourceList;
using model::ResourceNames;
using model::SaturatingAdd;
using model::Team;
using model::TeamNames;
using model::WorkloadRef;
using state::ClusterState;
using state::kNoFlavor;
using state::kNoTeam;
using state::NodeFit;
using state::NodePacking;
using state::NodeView;
using state::PendingPod;
using state::PendingPodOf;

namespace {

constexpr std::string_view kComponent = "admission";
using Mode = Ledger::Mode;

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
    case RefusalKind::kBusy:
      return "busy";
  }
  return "quota";
}

}  // namespace

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
  // Some flavor's verdict has reason `code`.
  [[nodiscard]] bool Has(std::string_view code) const {
    return std::any_of(entries_.begin(), entries_.end(),
                       [&](const Entry& e) { return e.code == code; });
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
    : book_(book),
      cluster_(cluster),
      binder_(binder),
      clock_(clock),
      options_(options),
      admitted_(options.bind_window_ms) {}

void Admission::ApplyPolicy(PolicyPtr policy) {
  book_->ApplyPolicy(policy);
  cluster_->SetPolicy(std::move(policy));
}

FilterResult Admission::Filter(const FilterArgs& args) {
  FilterDecision decision;
  if (std::string gate = Gate(); !gate.empty()) {
    FilterResult result;
    result.error = gate;
    decision.reason = "not_ready";
    return Report(decision, std::move(result));
  }
  Snapshot snap(*book_);
  snap.now_ms = clock_->NowMs();
  snap.preemptor_state = preemptor_state_;
  TakeSnapshot(*book_, *cluster_, args, options_.queue_lookahead, &snap);
  const Subject& me = snap.subject;
  decision.team = me.team_id;
  if (!me.team_refusal.empty()) return RefuseAll(args, me.team_refusal, "foreign_queue", decision);
  if (me.team == nullptr) return NoTeam(snap, args, decision);
  if (!me.team->active) {
    return RefuseAll(args, me.team->name + " is not active: its new pods are held", "inactive",
                     decision);
  }
  decision.priority_class = PriorityClassOf(snap.policy, args.pod);
  if (AwaitsGangObject(me.workload.awaiting_object, args.pod.creation_unix_ms, clock_->NowMs())) {
    return RefuseAll(args,
                     me.workload.display + ": waiting for its " +
                         std::string(GangSourceName(me.workload.source)) +
                         " to be observed: it declares how many pods the gang admits together",
                     "awaiting_gang", decision);
  }
  FilterResult result;
  FlavorNotes notes(&result);
  const TopologyRequest topology = TopologyRequestOfGang(*cluster_, args.pod, me.workload);
  for (Mode mode : {Mode::kWithinNominal, Mode::kBorrowing}) {
    for (const FlavorQuota& fq : me.team->flavors) {
      const NameId flavor = FlavorNames().Intern(fq.flavor);
      Placement placement{topology, nullptr, false};
      std::optional<Charge> charge = TryFlavor(snap, fq, flavor, mode, &placement, &notes);
      if (!charge) continue;
      decision.admitted = true;
      decision.flavor = flavor;
      decision.borrowing = charge->borrowing;
      return Report(decision, AdmittedOn(snap, args, fq, flavor, placement));
    }
  }
  decision.reason = notes.FirstCode();
  return Report(decision, RefusedEverywhere(snap, args, notes, std::move(result)));
}

FilterArgs Admission::AskingAboutEveryNode(const Pod& pod) const {
  // The nodes kube-scheduler would ask about: every node whose taints, labels and required
  // affinity let the pod go there (placement.h), of any flavor.
  FilterArgs args;
  args.pod = pod;
  for (const NameId flavor : cluster_->nodes().FlavorsWithNodes()) {
    for (auto& [name, view] : cluster_->nodes().NodesOfFlavor(flavor)) {
      if (view.placement == nullptr || Judge(pod.node_selector, pod.placement.get(),
                                             *view.placement) == PlacementVerdict::kAccepted) {
        args.node_names.push_back(name);
      }
    }
  }
  return args;
}

bool Admission::ReserveForGang(const Pod& stand_in) {
  const FilterArgs args = AskingAboutEveryNode(stand_in);
  Snapshot snap(*book_);
  snap.now_ms = clock_->NowMs();
  snap.preemptor_state = preemptor_state_;
  TakeSnapshot(*book_, *cluster_, args, options_.queue_lookahead, &snap);
  const Subject& me = snap.subject;
  if (!me.team_refusal.empty() || me.team == nullptr || !me.team->active || !me.workload.gang()) {
    return false;
  }
  FilterResult unused;
  FlavorNotes notes(&unused);
  // A required topology: the domain is chosen (and kept for the members) as for a first member.
  const TopologyRequest topology = TopologyRequestOfGang(*cluster_, stand_in, me.workload);
  for (Mode mode : {Mode::kWithinNominal, Mode::kBorrowing}) {
    for (const FlavorQuota& fq : me.team->flavors) {
      Placement placement{topology, nullptr, false};
      if (TryFlavor(snap, fq, FlavorNames().Intern(fq.flavor), mode, &placement, &notes)) {
        // The stand-in takes no place among the gang's slices: its members will.
        if (placement.domain != nullptr && placement.domain->slices != nullptr) {
          placement.domain->slices->Forget(stand_in.uid);
        }
        return book_->ReturnToGang(stand_in.uid);  // the whole need stays held for the members
      }
    }
  }
  return false;
}

void Admission::SnapshotNow(const FilterArgs& args, Snapshot* snap) const {
  snap->now_ms = clock_->NowMs();
  snap->preemptor_state = preemptor_state_;
  TakeSnapshot(*book_, *cluster_, args, options_.queue_lookahead, snap);
}

Explanation Admission::Explain(const Pod& pod) const {
  const FilterArgs args = AskingAboutEveryNode(pod);  // the snapshot points into it
  Snapshot snap(*book_);
  SnapshotNow(args, &snap);
  return scheduler::decisions::Explain(snap, *book_, *cluster_, clock_->NowMs(),
                                       options_.queue_lookahead);
}

Outlook Admission::OutlookOf(const Pod& pod, bool known_to_wait) const {
  const FilterArgs args = AskingAboutEveryNode(pod);
  Snapshot snap(*book_);
  SnapshotNow(args, &snap);
  const bool no_room = snap.subject.team != nullptr && snap.subject.team->active &&
                       !snap.subject.unknown_resource && !state::AnyRoom(snap.fits);
  if (known_to_wait && no_room) return Outlook::kWaiting;
  return scheduler::decisions::OutlookOf(snap, *book_, *cluster_, clock_->NowMs(),
                                         options_.queue_lookahead);
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

FilterResult Admission::NoTeam(const Snapshot& snap, const FilterArgs& args,
                               FilterDecision decision) const {
  if (snap.policy.no_team == NoTeamAction::kRefuse) {
    return RefuseAll(args,
                     "pod " + args.pod.key() + " belongs to no team (namespace " +
                         args.pod.namespace_ + " is not a team namespace)",
                     "no_team", decision);
  }
  FilterResult result;  // not governed: pass through untouched
  admitted_.Note(args.pod.uid, clock_->NowMs());
  const uint32_t node_count = static_cast<uint32_t>(args.node_names.size());
  result.feasible.resize(node_count);
  for (uint32_t i = 0; i < node_count; ++i) result.feasible[i] = i;
  decision.admitted = true;
  decision.reason = "no_team";
  return Report(decision, std::move(result));
}

std::optional<Charge> Admission::TryFlavor(Snapshot& snap, const FlavorQuota& fq, NameId flavor,
                                           Mode mode, Placement* placement,
                                           FlavorNotes* notes) const {
  const Subject& me = snap.subject;
  const bool any = std::any_of(snap.fits.begin(), snap.fits.end(),
                               [&](const NodeFit& fit) { return fit.flavor == flavor; });
  if (!any) return std::nullopt;
  if (placement->request.asks() && !PlaceInDomain(snap, fq, flavor, placement, notes)) {
    return std::nullopt;
  }
  bool roomy = false;
  bool held_room = false;  // some node would have room but for room held for a preemptor
  for (size_t i = 0; i < snap.fits.size(); ++i) {
    const NodeFit& fit = snap.fits[i];
    if (fit.flavor != flavor || !placement->Allows(fit)) continue;
    roomy = roomy || fit.room;
    held_room = held_room || fit.held;
  }
  const bool held = HeldOn(snap, flavor);
  if (!held) {
    if (const std::optional<NameId> there = HeldElsewhere(snap, flavor)) {
      notes->Note(flavor, me.workload.display + " holds its quota on " + FlavorNames().Name(*there),
                  "gang_elsewhere");
      return std::nullopt;
    }
  }
  if (!roomy) {
    std::string where = "no " + fq.flavor + " node";
    if (placement->domain != nullptr && placement->slice >= 0) {
      const GangSlices& slices = *placement->domain->slices;
      where = "no node of its slice's " + LevelName(slices.level()) + " domain " +
              slices.domains()[static_cast<size_t>(placement->slice)].name;
    } else if (placement->domain != nullptr) {
      where = "no node of its gang's " + LevelName(placement->domain->level) + " domain " +
              placement->domain->name;
    }
    notes->Note(flavor,
                me.team->name + ": " + where + " has room for " + me.request.ToString() +
                    (held_room ? " (room freed by a preemption is held for its preemptor)" : ""),
                "no_room");
    return std::nullopt;
  }
  if (!held) {  // a gang holding quota for it was admitted already, as a whole
    if (std::optional<std::string> why = QueueOrderBlocks(snap, flavor, mode)) {
      notes->Note(flavor, me.team->name + ": " + *why, "queue_order");
      return std::nullopt;
    }
    if (mode == Mode::kBorrowing) {
      if (std::optional<std::string> why =
              BorrowingBackOff(*cluster_, me.workload.key, snap.now_ms)) {
        notes->Note(flavor, me.team->name + ": " + *why, "disrupted_recently");
        return std::nullopt;
      }
      TakeCohortHeads(*cluster_, &snap);  // once per decision, on the first flavor that needs it
      if (std::optional<std::string> why = FairShareBlocks(snap, flavor)) {
        notes->Note(flavor, std::move(*why), "fair_share");
        return std::nullopt;
      }
    }
  }
  if (!held && !placement->chosen && !RoomForWholeGang(snap, fq, flavor, mode, notes)) {
    return std::nullopt;
  }
  // The rules let it through: the reservation is the quota check itself, against the live
  // counters of the snapshot's generation.
  std::variant<Charge, Refusal> r = Commit(snap, flavor, mode);
  if (const Refusal* refusal = std::get_if<Refusal>(&r)) {
    notes->Note(flavor, me.workload.gang() ? ExplainGang(me, *refusal) : refusal->Explain(),
                ReasonCode(refusal->kind));
    if (placement->slice >= 0) placement->domain->slices->Forget(me.pod->uid);
    return std::nullopt;
  }
  if (placement->chosen) {  // the gang now holds quota: its domain with it
    const GangDomain* mine = placement->domain.get();
    placement->domain =
        domains_.Record(me.workload.key, std::move(placement->domain),
                        [&](const std::string& gang) { return book_->FindGang(gang).has_value(); });
    if (placement->domain.get() != mine && placement->domain->slices != nullptr) {
      (void)AssignSlice(snap, flavor, placement, notes);  // another member's filter chose first
    }
    common::log::Info(kComponent, "gang placed in a topology domain",
                      {{"workload", me.workload.display},
                       {"flavor", fq.flavor},
                       {"level", placement->domain->level},
                       {"domain", placement->domain->name}});
  }
  return std::get<Charge>(r);
}

std::optional<TopologyPlacement> Admission::PlacementOf(const std::string& workload) const {
  std::shared_ptr<const GangDomain> d =
      domains_.Find(workload, [&] { return book_->FindGang(workload).has_value(); });
  if (d == nullptr) return std::nullopt;
  return TopologyPlacement{d->level, d->name, d->required};
}

bool Admission::PlaceInDomain(const Snapshot& snap, const FlavorQuota& fq, NameId flavor,
                              Placement* placement, FlavorNotes* notes) const {
  const Subject& me = snap.subject;
  const TopologyRequest& request = placement->request;
  const std::vector<std::string> levels = model::TopologyLevelsOf(snap.policy, fq.flavor);
  const int64_t count = me.workload.gang() ? me.workload.size : 1;
  if (std::string invalid = CheckTopologyRequest(request, count, levels); !invalid.empty()) {
    notes->Note(flavor, me.workload.display + ": invalid topology request: " + invalid, "topology");
    return false;
  }
  if (!me.workload.gang()) return true;
  const std::string& gang = me.workload.key;
  placement->domain = domains_.Find(gang, [&] { return snap.gang.has_value(); });  // read once
  const bool required = request.required();
  if (placement->domain != nullptr) {
    if (placement->domain->flavor == flavor) {
      return placement->domain->slices == nullptr || AssignSlice(snap, flavor, placement, notes);
    }
    if (!required && !request.sliced()) return true;
    notes->Note(
        flavor,
        me.workload.display + " is placed on " + FlavorNames().Name(placement->domain->flavor),
        "gang_elsewhere");
    return false;
  }
  for (const std::string* level : {&request.level, &request.slice_level}) {
    if (level->empty() || std::find(levels.begin(), levels.end(), *level) != levels.end()) {
      continue;
    }
    if (!required && !request.sliced()) return true;  // a preference it cannot have here
    std::string known;
    for (const std::string& l : levels) known += (known.empty() ? "" : ", ") + l;
    notes->Note(flavor,
                me.workload.display + " asks for topology level " + *level + ", which " +
                    fq.flavor + " does not have" +
                    (known.empty() ? " (it has no topology)" : " (its levels: " + known + ")"),
                "topology");
    return false;
  }
  const state::Holder self{me.pod->uid, gang};
  auto domain = std::make_shared<GangDomain>();
  domain->flavor = flavor;
  domain->required = required;
  std::vector<model::NameId> nodes;
  if (request.sliced()) {
    SliceChoice choice = ChooseSlices(cluster_->nodes(), flavor, levels, request, *me.pod,
                                      me.request, me.workload.size, snap.now_ms, self);
    if (!choice.found) {  // slices are required, whatever the podset's mode
      notes->Note(flavor,
                  me.workload.display + ": " + choice.Refusal(request, fq.flavor, me.request),
                  "topology");
      return false;
    }
    domain->level = request.level.empty() ? request.slice_level : request.level;
    domain->name = choice.name;
    if (request.level.empty()) {  // unconstrained: where its slices are
      domain->name.clear();
      for (const GangSlices::Domain& d : choice.slices) {
        domain->name += (domain->name.empty() ? "" : "+") + d.name;
      }
    }
    for (const GangSlices::Domain& d : choice.slices) {
      for (size_t node = 0; node < d.members.size(); ++node) {
        if (d.members[node] != 0) nodes.push_back(static_cast<model::NameId>(node));
      }
    }
    domain->slices = std::make_shared<GangSlices>(request.slice_level, request.slice_size,
                                                  std::move(choice.slices));
  } else {
    const std::string& level = request.level;
    DomainChoice choice =
        required ? ChooseDomain(cluster_->nodes(), flavor, levels, level, *me.pod, me.request,
                                me.workload.size, snap.now_ms, self)
                 : ChooseFewestDomains(cluster_->nodes(), flavor, levels, level, *me.pod,
                                       me.request, me.workload.size, snap.now_ms, self);
    if (!choice.found) {
      if (!required) return true;  // no room for all of it anywhere: the quota rules say the rest
      notes->Note(flavor, me.workload.display + ": " + choice.Refusal(level, fq.flavor, me.request),
                  "topology");
      return false;
    }
    domain->level = level;
    domain->name = std::move(choice.name);
    nodes = std::move(choice.nodes);
  }
  for (model::NameId node : nodes) {
    if (node >= domain->members.size()) domain->members.resize(node + 1, 0);
    domain->members[node] = 1;
  }
  placement->domain = std::move(domain);
  placement->chosen = true;
  return placement->domain->slices == nullptr || AssignSlice(snap, flavor, placement, notes);
}

bool Admission::RoomForWholeGang(const Snapshot& snap, const FlavorQuota& fq, NameId flavor,
                                 Mode mode, FlavorNotes* notes) const {
  const Subject& me = snap.subject;
  if (!me.workload.gang()) return true;
  // A gang its quota refuses anyway gets the quota's refusal: it says more.
  for (const QuotaLine& line : QuotaLines(snap.session, me.team_id, flavor, me.need, mode)) {
    if (!line.fits()) return true;
  }
  const std::optional<GangRoom> room = RoomForUnadmittedGang(snap, *cluster_, flavor);
  if (!room || room->fits()) return true;
  notes->Note(flavor,
              me.team->name + ": " + me.workload.display + ": no room for all " +
                  std::to_string(room->pods) + " pods of its gang on " + fq.flavor +
                  " nodes at once (room for " + std::to_string(room->placed) + ")",
              "no_room");
  return false;
}

bool Admission::AssignSlice(const Snapshot& snap, NameId flavor, Placement* placement,
                            FlavorNotes* notes) const {
  const Subject& me = snap.subject;
  GangSlices& slices = *placement->domain->slices;
  placement->slice = slices.Assign(me.pod->uid, snap.now_ms,
                                   [&](std::string_view uid) { return book_->Holds(uid); });
  if (placement->slice >= 0) return true;
  notes->Note(flavor,
              me.workload.display + ": every slice of its " + std::to_string(slices.size()) +
                  " pods has its members already (" + LevelName(slices.level()) + " domains " +
                  placement->domain->name + ")",
              "topology");
  return false;
}

std::variant<Charge, Refusal> Admission::Commit(Snapshot& snap, NameId flavor, Mode mode) const {
  const Subject& me = snap.subject;
  PodMeta meta;
  meta.priority = me.priority;
  meta.created_ms = me.pod->creation_unix_ms;
  if (!me.workload.gang()) {
    return book_->Assume(snap.session, me.pod->uid, me.team_id, flavor, me.request_ids, mode,
                         options_.assume_ttl_ms, meta);
  }
  const IdAmounts need = KnownIdAmounts(me.need);
  std::vector<ledger::FlavorNeed> elsewhere;
  for (const auto& [there, amounts] : me.elsewhere) {
    if (there != flavor) elsewhere.push_back(ledger::FlavorNeed{there, KnownIdAmounts(amounts)});
  }
  return book_->AssumeMember(snap.session, me.pod->uid, me.workload.key, me.workload.size,
                             me.team_id, flavor, me.request_ids, mode, options_.assume_ttl_ms,
                             snap.policy.gang_timeout_seconds * 1000, meta, &need, elsewhere);
}

std::string Admission::ExplainGang(const Subject& me, const Refusal& refusal) {
  // e.g. "team-a/job-x (8 pods, 16 nvidia.com/gpu on ml.p5.48xlarge): needs 16, team-a may use
  // 8 more"; a gang that can never fit says so.
  std::string out = me.workload.display + " (" + std::to_string(me.workload.size) + " pods";
  if (refusal.kind == RefusalKind::kNoQuota || refusal.kind == RefusalKind::kTooManyResources) {
    return out + "): " + refusal.Explain();
  }
  const std::string& resource = ResourceNames().Name(refusal.resource);
  auto q = [&](int64_t v) { return FormatQuantity(resource, v); };
  // The need of the part refused: the members pinned to that flavor's, or this member's.
  const model::ResourceList* need = &me.need;
  for (const auto& [there, amounts] : me.elsewhere) {
    if (there == refusal.flavor) need = &amounts;
  }
  out += ", " + q(need->Get(resource)) + " " + resource + " on " +
         FlavorNames().Name(refusal.flavor) + "): needs " + q(refusal.requested) + ", ";
  const int64_t ceiling = refusal.borrowing_limit == kUnlimited
                              ? kUnlimited
                              : SaturatingAdd(refusal.nominal, refusal.borrowing_limit);
  if (ceiling != kUnlimited && refusal.requested > ceiling) {
    out += "more than " + me.team->name + " may ever use (nominal " + q(refusal.nominal) +
           " + borrowing limit " + q(refusal.borrowing_limit) + ")";
    if (me.estimated_members == 0) return out + ": it can never be admitted";
    // Members not created yet are counted as its largest: smaller ones may still fit.
    return out + ", counting its " + std::to_string(me.estimated_members) +
           " pods not created yet as large as its largest";
  }
  int64_t room = refusal.pool_free;  // kPool
  if (refusal.kind == RefusalKind::kNominal) room = refusal.nominal - refusal.in_use;
  if (refusal.kind == RefusalKind::kBorrowingLimit) room = ceiling - refusal.in_use;
  out += me.team->name + " may use " + q(std::max<int64_t>(0, room)) + " more";
  if (refusal.kind == RefusalKind::kPool) out += " of the cohort's idle quota";
  return out;
}

FilterResult Admission::AdmittedOn(const Snapshot& snap, const FilterArgs& args,
                                   const FlavorQuota& fq, NameId flavor,
                                   const Placement& placement) const {
  const std::vector<NodeFit>& fits = snap.fits;
  // Admitted on this flavor: its nodes with room are feasible, the others are explained.
  cluster_->pending().NoteAdmitted(std::string(args.pod.uid));
  admitted_.Note(args.pod.uid, clock_->NowMs());
  FilterResult result;
  const uint32_t no_room = result.AddReason(snap.subject.team->name + ": node has no room for " +
                                            snap.subject.request.ToString());
  const uint32_t elsewhere =
      result.AddReason("taskgov assigned " + args.pod.key() + " to " + fq.flavor);
  uint32_t outside = 0;
  if (placement.domain != nullptr && placement.slice >= 0) {
    const GangSlices& slices = *placement.domain->slices;
    outside = result.AddReason(
        "taskgov placed " + args.pod.key() + " in a slice of " + std::to_string(slices.size()) +
        " pods of " + snap.subject.workload.display + " in " + LevelName(slices.level()) +
        " domain " + slices.domains()[static_cast<size_t>(placement.slice)].name);
  } else if (placement.domain != nullptr) {
    outside =
        result.AddReason("taskgov placed " + snap.subject.workload.display + " in " +
                         LevelName(placement.domain->level) + " domain " + placement.domain->name);
  }
  const uint32_t node_count = static_cast<uint32_t>(args.node_names.size());
  result.feasible.reserve(node_count);
  result.unresolvable.reserve(node_count);
  for (uint32_t i = 0; i < node_count; ++i) {
    if (fits[i].flavor != flavor) {
      result.unresolvable.push_back({i, elsewhere});
    } else if (!placement.Allows(fits[i])) {
      result.unresolvable.push_back({i, outside});
    } else if (fits[i].room) {
      result.feasible.push_back(i);
    } else {
      result.unresolvable.push_back({i, no_room});
    }
  }
  return result;
}

FilterResult Admission::RefusedEverywhere(const Snapshot& snap, const FilterArgs& args,
                                          const FlavorNotes& notes, FilterResult result) const {
  const Subject& me = snap.subject;
  const std::vector<NodeFit>& fits = snap.fits;
  // Refused on every flavor: one reason per flavor, shared by its nodes.
  PendingPod refused = PendingPodOf(args.pod, me.team_id, me.priority, me.request, me.workload);
  for (const std::string& reason : result.reasons) {
    refused.refusal += (refused.refusal.empty() ? "" : "; ") + reason;
  }
  refused.topology_refused = notes.Has("topology");
  cluster_->pending().NoteRefused(std::move(refused));
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
                             : me.team->name + ": no quota on " + FlavorNames().Name(flavor);
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
  // A topology gang's domain (issue 37): its nodes rank above every other. Any gang member may
  // have one: its request may be on its owner job (TopologyRequestOfGang).
  std::shared_ptr<const GangDomain> domain;
  if (!reservation->meta.workload.empty()) {
    const std::string gang(reservation->meta.workload.view());
    domain = domains_.Find(gang, [&] { return book_->FindGang(gang).has_value(); });
  }
  for (size_t i = 0; i < nodes.size(); ++i) {
    const NodePacking& n = nodes[i];
    if (!n.known || n.flavor != reservation->charge.flavor) continue;
    // Packing: how full the node is with the pod, in 0..8; in a topology, 0..6 and how full
    // its closest domain's other nodes are in 0..2 (busy neighbours: empty domains stay whole
    // for the gangs that need one).
    const bool near = n.near_allocatable > 0;
    const int64_t pack_scale = near ? 6 : 8;
    int64_t pack = 0;
    if (n.allocatable > 0) {
      const int64_t after = std::min(n.allocatable, SaturatingAdd(n.used, want));
      pack = (pack_scale * after + n.allocatable / 2) / n.allocatable;
    }
    if (near) {
      const int64_t used = std::min(n.near_used, n.near_allocatable);
      pack += (2 * used + n.near_allocatable / 2) / n.near_allocatable;
    }
    const bool together =
        reservation->charge.borrowing ? n.borrowing_pods > 0 : n.borrowing_pods == 0;
    scores[i].score = std::clamp<int64_t>(pack + (together ? 2 : 0), 0, 10);
    if (domain != nullptr) {  // in the domain 6..10, outside 0..4, packed within each
      const bool inside = domain->Contains(n.node);
      scores[i].score = scores[i].score * 4 / 10 + (inside ? 6 : 0);
    }
  }
  return scores;
}

PreemptResult Admission::Preempt(const PreemptArgs& args) {
  PreemptResult result;
  if (std::string gate = Gate(); !gate.empty()) {
    result.error = gate;
    return result;
  }
  // A governed pod's disruptions are the preemption controller's alone (DESIGN §3.7): it frees
  // room only when that admits the preemptor's whole workload, holds what it freed for it,
  // suspends what can be suspended and gives every victim the policy's grace period. Victims
  // approved here would be deleted by kube-scheduler beside the controller's, per member of a
  // gang, with their own grace period: the verb vetoes (an empty map).
  if (cluster_->teams().TeamOf(args.pod) != kNoTeam) return result;
  // An ungoverned preemptor (no team): plain priority, as kube-scheduler decided, with the
  // minimum runtime, and gangs whole. The victims as taskgov knows them are read before
  // anything else (the pods' lock is never taken inside a ledger session).
  std::map<std::string, std::vector<Pod>> known = KnownVictims(args);
  std::map<std::string, std::vector<KeptVictim>> kept_by_node;
  {
    Ledger::Session session(book_->ledger());
    const Policy& policy = session.policy();
    PreemptorFacts preemptor;
    preemptor.team_id = kNoTeam;
    preemptor.priority = ResolvePriority(policy, args.pod);
    preemptor.created_ms = args.pod.creation_unix_ms;
    const int64_t now = clock_->NowMs();
    for (auto& [node, victims] : known) {
      std::vector<KeptVictim>& kept = kept_by_node[node];
      for (Pod& pod : victims) {
        VictimFacts victim;
        victim.priority = ResolvePriority(policy, pod);
        victim.created_ms = pod.creation_unix_ms;
        victim.started_ms = pod.start_unix_ms.value_or(pod.creation_unix_ms);
        if (!JudgeVictim(policy, preemptor, victim, nullptr, {}, {}, now).allowed) continue;
        KeptVictim k{victim.priority, std::move(pod), ""};
        k.gang = GangOf(k.pod);
        kept.push_back(std::move(k));
      }
    }
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
  std::set<std::string, std::less<>> gangs;
  for (const auto& [node, kept] : *kept_by_node) {
    for (const KeptVictim& k : kept) {
      if (!k.gang.empty()) gangs.insert(k.gang);
    }
  }
  if (gangs.empty()) return;
  std::map<std::string, std::set<std::string>> members;
  cluster_->ForEachBoundPod([&](const ClusterState::BoundPod& pod) {
    if (auto gang = gangs.find(pod.kept.gang()); gang != gangs.end()) {
      members[*gang].emplace(pod.uid);
    }
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

std::variant<Charge, Refusal> Admission::Readmit(const Pod& pod, NameId team, NameId flavor,
                                                 const ResourceList& request) const {
  Ledger::Session session(book_->ledger());
  PodMeta meta;
  meta.priority = ResolvePriority(session.policy(), pod);
  meta.created_ms = pod.creation_unix_ms;
  const IdAmounts ids = KnownIdAmounts(request);
  if (const WorkloadRef workload = cluster_->teams().WorkloadOf(pod); workload.gang()) {
    // With its gang, as its filter would have.
    return book_->AssumeMember(session, pod.uid, workload.key, workload.size, team, flavor, ids,
                               Mode::kBorrowing, options_.assume_ttl_ms,
                               session.policy().gang_timeout_seconds * 1000, meta);
  }
  return book_->Assume(session, pod.uid, team, flavor, ids, Mode::kBorrowing,
                       options_.assume_ttl_ms, meta);
}

std::string Admission::BindRefusal(const BindArgs& args, const std::optional<Pod>& pod,
                                   bool reserved) const {
  const std::string key = args.pod_namespace + "/" + args.pod_name;
  if (!pod) {
    return "unknown pod " + key + " (uid " + args.pod_uid +
           "): not seen by taskgov, which binds only pods its informer has seen";
  }
  if (pod->namespace_ != args.pod_namespace || pod->name != args.pod_name) {
    return "uid " + args.pod_uid + " is pod " + pod->key() + ", not " + key;
  }
  if (pod->scheduler_name != options_.scheduler_name) {
    return "pod " + key + " has schedulerName '" + pod->scheduler_name +
           "': taskgov binds only pods of scheduler '" + options_.scheduler_name + "'";
  }
  if (pod->bound()) return "pod " + key + " is bound to " + pod->node_name + " already";
  if (!reserved && !admitted_.Admitted(args.pod_uid, clock_->NowMs())) {
    return "pod " + key + " was not admitted by a taskgov filter (or that was longer ago than " +
           std::to_string(options_.bind_window_ms / 1000) + " s): taskgov binds only pods it " +
           "filtered; the scheduler filters it again";
  }
  return "";
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
  if (std::string why = BindRefusal(args, pod, reservation.has_value()); !why.empty()) {
    result.error = std::move(why);
    return result;
  }
  if (const NameId team = cluster_->teams().TeamOf(*pod); !reservation && team != kNoTeam) {
    // Admitted by a filter whose assumed reservation expired since: admit again here.
    if (node.flavor == kNoFlavor) {
      result.error = "node " + args.node + " belongs to no flavor";
      return result;
    }
    std::variant<Charge, Refusal> r = Readmit(*pod, team, node.flavor, EffectiveRequest(*pod));
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
  // Counted on its node and its reservation confirmed now, as the informer's event will: the
  // next filter — kube-scheduler binds a burst of pods before the first watch event — sees them.
  cluster_->NoteBound(args.pod_uid, args.node);
  return result;
}

}  // namespace taskgov::scheduler::decisions
