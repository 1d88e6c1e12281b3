#include "scheduler/decisions/explanation.h"

#include <algorithm>

#include "scheduler/decisions/fair_share.h"
#include "scheduler/decisions/gang_room.h"
#include "scheduler/decisions/placement.h"
#include "scheduler/decisions/topology.h"
#include "scheduler/model/pod_identity.h"
#include "scheduler/model/quantity.h"

namespace taskgov::scheduler::decisions {
namespace {

using ledger::Ledger;
using ledger::QuotaBook;
using model::AwaitsGangObject;
using model::FlavorNames;
using model::FlavorQuota;
using model::FormatQuantity;
using model::GangSourceName;
using model::IdleComputeAllocation;
using model::kUnlimited;
using model::NameId;
using model::NoTeamAction;
using model::Pod;
using model::ResourceAmount;
using model::ResourceList;
using model::SaturatingAdd;
using model::WorkloadRef;
using state::ClusterState;
using state::NodeCache;
using state::NodeFit;
using Mode = Ledger::Mode;

std::string Q(std::string_view resource, int64_t amount) {
  return amount == kUnlimited ? std::string("unlimited") : FormatQuantity(resource, amount);
}

// "team-a/job-x (a gang of 4 pods)" or "team-a/pod-0".
std::string WhoOf(const Subject& me) {
  if (!me.workload.gang()) return me.pod->key();
  return me.workload.display + " (a gang of " + std::to_string(me.workload.size) + " pods)";
}

Check Passed(std::string rule, std::string detail) {
  Check c;
  c.rule = std::move(rule);
  c.passed = true;
  c.detail = std::move(detail);
  return c;
}

Check Failed(std::string rule, std::string detail, std::string change) {
  Check c;
  c.rule = std::move(rule);
  c.detail = std::move(detail);
  c.change = std::move(change);
  return c;
}

// The subject's own checks; false when no flavor is worth evaluating (no team).
bool SubjectChecks(const Snapshot& snap, int64_t now_ms, Explanation* out) {
  const Subject& me = snap.subject;
  const Pod& pod = *me.pod;
  if (!me.team_refusal.empty()) {
    out->outlook = Outlook::kNotGoverned;
    out->checks.push_back(
        Failed("team", me.team_refusal,
               "name a queue of the team that owns namespace " + pod.namespace_ + ", or none"));
    out->summary = pod.key() + " is refused on every node: " + me.team_refusal;
    return false;
  }
  if (me.team == nullptr) {
    const bool refused = snap.policy.no_team == NoTeamAction::kRefuse;
    out->outlook = Outlook::kNotGoverned;
    out->checks.push_back(Failed(
        "team",
        "namespace " + pod.namespace_ + " belongs to no team (no team's namespace, Kueue " +
            "LocalQueue or PodGroup queue names it); " +
            (refused ? "the policy refuses pods of no team" : "taskgov lets it through untouched"),
        "run it in a team's namespace, or name a team's queue (kueue.x-k8s.io/queue-name)"));
    out->summary = pod.key() + " belongs to no team: " +
                   (refused ? "the policy refuses it on every node"
                            : "taskgov does not govern it, kube-scheduler alone decides");
    return false;
  }
  out->team = me.team->name;
  out->checks.push_back(Passed(
      "team", "team " + me.team->name +
                  (me.team->cohort.empty() ? " (in no cohort)" : " of cohort " + me.team->cohort)));
  if (me.team->active) {
    out->checks.push_back(Passed("active", me.team->name + " is active"));
  } else {
    out->checks.push_back(Failed("active", me.team->name + " is not active: its new pods are held",
                                 "the team must be made active in the policy"));
  }
  if (AwaitsGangObject(me.workload.awaiting_object, pod.creation_unix_ms, now_ms)) {
    const std::string source(GangSourceName(me.workload.source));
    out->checks.push_back(Failed(
        "gangObject",
        me.workload.display + " waits for its " + source +
            " to be observed: it declares how many pods are admitted together (at most " +
            std::to_string(WorkloadRef::kAwaitObjectMs / 1000) + " s from the pod's creation)",
        "the " + source + " " + me.workload.display + " must exist"));
  } else if (me.workload.gang()) {
    out->checks.push_back(Passed("gangObject", WhoOf(me) + ": admitted all together or not at all" +
                                                   (me.held ? "; its gang holds quota" : "")));
  }
  return true;
}

// The free amount of each requested resource on the best schedulable node of `flavor`, and
// whether any node of it is big enough at all (allocatable, empty).
struct NodeRoom {
  size_t nodes = 0;
  size_t schedulable = 0;
  ResourceList largest_free;
  bool big_enough = false;
};

NodeRoom RoomOf(const NodeCache& nodes, NameId flavor, const ResourceList& request) {
  NodeRoom room;
  for (const auto& [name, view] : nodes.NodesOfFlavor(flavor)) {
    ++room.nodes;
    if (!view.schedulable) continue;
    ++room.schedulable;
    bool fits_empty = true;
    for (const ResourceAmount& want : request) {
      const int64_t alloc = view.allocatable.Get(want.name);
      const int64_t free = std::max<int64_t>(0, alloc - view.used.Get(want.name));
      if (!room.largest_free.Has(want.name) || free > room.largest_free.Get(want.name)) {
        room.largest_free.Set(want.name, free);
      }
      fits_empty = fits_empty && alloc >= want.amount;
    }
    room.big_enough = room.big_enough || fits_empty;
  }
  return room;
}

std::string Amounts(const ResourceList& list) {
  std::string out;
  for (const ResourceAmount& r : list) {
    if (r.amount <= 0) continue;
    out += (out.empty() ? "" : ", ") + Q(r.name, r.amount) + " " + r.name;
  }
  return out.empty() ? std::string("nothing") : out;
}

// Which nodes of `flavor` the pod's taints, node selector and required affinity let it go to.
NodeEligibility EligibilityOn(const ClusterState& cluster, NameId flavor, const Pod& pod) {
  std::vector<std::shared_ptr<const model::NodePlacement>> nodes;
  for (auto& [name, view] : cluster.nodes().NodesOfFlavor(flavor)) nodes.push_back(view.placement);
  NodeEligibility eligibility;
  eligibility.Compute(pod.node_selector, pod.placement.get(), nodes);
  return eligibility;
}

// The candidate nodes of `flavor` (the nodes kube-scheduler would send: the pod may go there);
// false (a lasting failure) when there are none — none in the cluster, or none it may go to.
bool NodesCheck(const Snapshot& snap, const ClusterState& cluster, NameId flavor,
                FlavorExplanation* fe) {
  const size_t count = std::count_if(snap.fits.begin(), snap.fits.end(),
                                     [&](const NodeFit& f) { return f.flavor == flavor; });
  if (count == 0) {
    const NodeEligibility eligibility = EligibilityOn(cluster, flavor, *snap.subject.pod);
    if (eligibility.accepts.empty()) {
      fe->checks.push_back(Failed("nodes", "the cluster has no " + fe->flavor + " node",
                                  fe->flavor + " nodes must join the cluster"));
    } else {
      fe->checks.push_back(Failed("nodes", eligibility.Explain(fe->flavor, snap.subject.pod->key()),
                                  "its nodeSelector, node affinity and tolerations must allow " +
                                      fe->flavor + " nodes, to use " + snap.subject.team->name +
                                      "'s quota there"));
    }
    fe->checks.back().lasting = true;
    return false;
  }
  fe->checks.push_back(Passed(
      "nodes", std::to_string(count) + " " + fe->flavor + " node" + (count == 1 ? "" : "s")));
  return true;
}

void RoomCheck(const Snapshot& snap, const ClusterState& cluster, NameId flavor,
               FlavorExplanation* fe) {
  const Subject& me = snap.subject;
  size_t roomy = 0, count = 0;
  for (const NodeFit& f : snap.fits) {
    if (f.flavor != flavor) continue;
    ++count;
    roomy += f.room;
  }
  const std::string want = Amounts(me.request);
  if (roomy > 0) {
    fe->checks.push_back(Passed("room", std::to_string(roomy) + " of " + std::to_string(count) +
                                            " " + fe->flavor + " nodes have room for " + want));
    return;
  }
  if (me.unknown_resource) {
    fe->checks.push_back(Failed("room", "it asks for a resource no node has (" + want + ")",
                                "ask only for resources the nodes offer"));
    fe->checks.back().lasting = true;
    return;
  }
  const NodeRoom room = RoomOf(cluster.nodes(), flavor, me.request);
  std::string detail = "no " + fe->flavor + " node has room for " + want + " (" +
                       std::to_string(room.schedulable) + " of " + std::to_string(room.nodes) +
                       " schedulable; most free on one node: " + Amounts(room.largest_free) + ")";
  if (!room.big_enough) {
    fe->checks.push_back(Failed("room", std::move(detail) + "; no node is that big",
                                "ask for at most what one " + fe->flavor + " node has"));
    fe->checks.back().lasting = room.schedulable > 0;
    return;
  }
  fe->checks.push_back(
      Failed("room", std::move(detail),
             "pods on a " + fe->flavor + " node must finish or be preempted to free " + want));
}

// A gang not admitted yet (no member holds quota, none pinned to another flavor) and asking for
// no topology domain: whether all its members find room on the flavor's nodes at once, as the
// filter requires before holding its quota (issue 34).
void GangRoomCheck(const Snapshot& snap, const ClusterState& cluster, NameId flavor,
                   FlavorExplanation* fe) {
  const Subject& me = snap.subject;
  if (!me.workload.gang()) return;
  const TopologyRequest request = TopologyRequestOfGang(cluster, *me.pod, me.workload);
  if (request.required() || request.sliced()) return;  // TopologyCheck says where
  const std::optional<GangRoom> checked = RoomForUnadmittedGang(snap, cluster, flavor);
  if (!checked) return;
  const GangRoom& room = *checked;
  const std::string all = "all " + std::to_string(room.pods) + " pods of its gang";
  if (room.fits()) {
    fe->checks.push_back(
        Passed(kGangRoomRule, all + " find room on " + fe->flavor + " nodes at once"));
    return;
  }
  fe->checks.push_back(Failed(
      kGangRoomRule,
      "room for " + std::to_string(room.placed) + " of " + all + " on " + fe->flavor +
          " nodes at once: its quota is held only when all of them can run",
      "pods on " + fe->flavor + " nodes must finish or be preempted to free room for " + all));
}

// A workload taskgov's preemptions stopped repeatedly does not borrow for a while (DESIGN §3.6):
// the check is there only while it backs off.
void BackOffCheck(const Snapshot& snap, const ClusterState& cluster, FlavorExplanation* fe) {
  const Subject& me = snap.subject;
  const std::optional<std::string> why = BorrowingBackOff(cluster, me.workload.key, snap.now_ms);
  if (!why) return;
  fe->checks.push_back(Failed(
      "disruptedRecently", me.team->name + ": " + *why,
      "wait until its back-off ends, or let it run within " + me.team->name + "'s nominal quota"));
}

// A gang asking for a required topology level or for slices (issue 37): the domain it holds, or
// the tightest with room for all its members (its slices) — or why there is none, with the
// numbers. An invalid request says why, for a lone pod too.
void TopologyCheck(const Snapshot& snap, const ClusterState& cluster, const FlavorQuota& fq,
                   NameId flavor, FlavorExplanation* fe) {
  const Subject& me = snap.subject;
  const TopologyRequest request = TopologyRequestOfGang(cluster, *me.pod, me.workload);
  if (!request.asks()) return;
  const std::vector<std::string> levels = model::TopologyLevelsOf(snap.policy, fq.flavor);
  const int64_t count = me.workload.gang() ? me.workload.size : 1;
  if (std::string invalid = CheckTopologyRequest(request, count, levels); !invalid.empty()) {
    fe->checks.push_back(Failed("topology", "invalid topology request: " + invalid,
                                "correct the kueue.x-k8s.io/podset-* annotations of its pods "
                                "(as Kueue's webhook would require)"));
    fe->checks.back().lasting = true;
    return;
  }
  if (!me.workload.gang() || (!request.required() && !request.sliced())) return;
  const std::string level = LevelName(request.sliced() ? request.slice_level : request.level);
  if (HeldOn(snap, flavor)) {
    fe->checks.push_back(Passed("topology", request.sliced()
                                                ? "its gang holds its " + level + " slice domains"
                                                : "its gang holds its " + level + " domain"));
    return;
  }
  for (const std::string* wanted : {&request.level, &request.slice_level}) {
    if (wanted->empty() || std::find(levels.begin(), levels.end(), *wanted) != levels.end()) {
      continue;
    }
    fe->checks.push_back(Failed("topology", fq.flavor + " has no topology level " + *wanted,
                                "ask for a level of " + fq.flavor + "'s topology"));
    fe->checks.back().lasting = true;
    return;
  }
  const state::Holder self{me.pod->uid, me.workload.key};
  if (request.sliced()) {
    const SliceChoice choice = ChooseSlices(cluster.nodes(), flavor, levels, request, *me.pod,
                                            me.request, me.workload.size, snap.now_ms, self);
    if (choice.found) {
      fe->checks.push_back(Passed(
          "topology", std::to_string(choice.wanted) + " slices of " +
                          std::to_string(request.slice_size) + " pods fit, each in one " + level +
                          " domain" + (choice.name.empty() ? "" : " (in " + choice.name + ")")));
      return;
    }
    fe->checks.push_back(Failed("topology", choice.Refusal(request, fq.flavor, me.request),
                                "pods on the nodes of " + level +
                                    " domains must finish or be "
                                    "preempted to free room for " +
                                    std::to_string(choice.wanted) + " slices of " +
                                    std::to_string(request.slice_size) + " pods"));
    return;
  }
  const DomainChoice choice = ChooseDomain(cluster.nodes(), flavor, levels, request.level, *me.pod,
                                           me.request, me.workload.size, snap.now_ms, self);
  if (choice.found) {
    fe->checks.push_back(Passed("topology", level + " domain " + choice.name + " has room for " +
                                                std::to_string(choice.fits) + " of its pods"));
    return;
  }
  fe->checks.push_back(Failed("topology", choice.Refusal(request.level, fq.flavor, me.request),
                              "pods on the nodes of one " + level +
                                  " domain must finish or be "
                                  "preempted to free room for all " +
                                  std::to_string(me.workload.size) + " of its pods"));
}

// Why a subject that HeldOn a flavor passes its checks there.
std::string HeldSentence(const Snapshot& snap) {
  return snap.subject.held ? "its gang holds the quota it needs"
                           : "quota is reserved for it (admitted already, or given to it once a "
                             "preemption's victims went)";
}

void QueueCheck(const Snapshot& snap, NameId flavor, Mode mode, FlavorExplanation* fe) {
  const Subject& me = snap.subject;
  if (HeldOn(snap, flavor)) {
    fe->checks.push_back(Passed("queueOrder", HeldSentence(snap) + ": it takes it"));
    return;
  }
  std::optional<std::string> why = QueueOrderBlocks(snap, flavor, mode);
  if (!why) {
    fe->checks.push_back(
        Passed("queueOrder", snap.ahead.empty()
                                 ? "no pending pod of " + me.team->name + " ranks ahead of it"
                                 : std::to_string(snap.ahead.size()) + " pending pod" +
                                       (snap.ahead.size() == 1 ? " of " : "s of ") + me.team->name +
                                       " rank ahead of it; none needs this room first"));
    return;
  }
  std::string change = "the pods ranked ahead of it (first: " + snap.ahead.front()->key +
                       ") must be admitted or leave first";
  if (me.by_priority) {
    change += ", or it must rank higher (priority " + std::to_string(me.priority) +
              "; a higher priority class)";
  }
  fe->checks.push_back(Failed("queueOrder", me.team->name + ": " + *why, std::move(change)));
}

void FairShareCheck(Snapshot& snap, const ClusterState& cluster, NameId flavor,
                    FlavorExplanation* fe) {
  const Subject& me = snap.subject;
  if (HeldOn(snap, flavor)) {
    fe->checks.push_back(Passed("fairShare", HeldSentence(snap) + ": it takes it"));
    return;
  }
  if (snap.policy.idle_compute != IdleComputeAllocation::kFairShare) {
    fe->checks.push_back(
        Passed("fairShare", "idle compute is lent first come, first served: no fair-share order"));
    return;
  }
  TakeCohortHeads(cluster, &snap);
  const int64_t share = WeightedShare(snap.session, *me.team, flavor, me.need);
  const std::string shown = ShowShare(share);
  if (std::optional<std::string> why = FairShareBlocks(snap, flavor)) {
    fe->checks.push_back(Failed(
        "fairShare", std::move(*why),
        "the other team's pending work goes first: it must be admitted or withdrawn (a higher "
        "fair-share weight for " +
            me.team->name + " lowers its share, " + shown + " after admission)"));
    return;
  }
  fe->checks.push_back(Passed("fairShare",
                              "no team of its cohort with a lower weighted share waits "
                              "for this capacity (" +
                                  me.team->name + "'s share after admission: " + shown + ")"));
}

std::string LineText(const QuotaLine& l) {
  std::string out = l.resource + ": needs " + Q(l.resource, l.need) + ", in use " +
                    Q(l.resource, l.in_use) + " of " + Q(l.resource, l.limit) + " (nominal " +
                    Q(l.resource, l.nominal);
  if (l.borrowing_limit != 0) out += ", borrowing limit " + Q(l.resource, l.borrowing_limit);
  out += ")";
  if (l.pool_need > 0) {
    out += "; " + Q(l.resource, l.pool_need) + " of it from the cohort's pool, which has " +
           Q(l.resource, l.pool_free) + " free";
    if (!l.pool_fits) out += " (other teams borrow " + Q(l.resource, l.others_borrowed) + ")";
  }
  return out;
}

// Whether `l` needs more than the team may ever use, its nominal plus borrowing limit (lasting,
// unless members not created yet are only estimated).
bool Beyond(const QuotaLine& l) { return l.ceiling != kUnlimited && l.need > l.ceiling; }

// What would let `l` fit, from the numbers LineText shows beside it; `never` when nothing short
// of a policy change can. Each amount is the line's own arithmetic: "must use X less" only when
// the team uses X (X = in use + need − limit ≤ in use), "more idle" by pool need − pool free,
// "borrowed pods" only when other teams borrow.
std::string LineChange(const Subject& me, const std::string& flavor, const QuotaLine& l, Mode mode,
                       bool* never) {
  const std::string& team = me.team->name;
  auto q = [&](int64_t v) { return Q(l.resource, v) + " " + l.resource; };
  const std::string raise =
      mode == Mode::kWithinNominal
          ? "its nominal quota be raised to " + q(l.in_use + l.need)
          : "its borrowing limit be raised to " + q(SaturatingAdd(l.in_use, l.need) - l.nominal);
  if (Beyond(l)) {
    if (me.estimated_members == 0) *never = true;
    return "it needs more than " + team + " may ever use on " + flavor + ": its nominal plus " +
           "borrowing limit must grow by " + q(l.need - l.ceiling) + ", or it must ask for less";
  }
  if (!l.team_fits) {
    if (l.need > l.limit) {  // even with nothing of the team's running
      return "it needs " + q(l.need) + ", more than " + team + "'s " +
             (mode == Mode::kWithinNominal ? "nominal quota" : "nominal plus borrowing limit") +
             " of " + q(l.limit) + " on " + flavor + ": " +
             (mode == Mode::kWithinNominal ? "it can run only by borrowing, or if " : "only if ") +
             raise;
    }
    const int64_t short_by = SaturatingAdd(l.in_use, l.need) - l.limit;  // ≤ in_use here
    return team + " must use " + q(short_by) + " less on " + flavor + " (it uses " +
           Q(l.resource, l.in_use) + " of " + q(l.limit) +
           ": its pods finishing, or preempted for it), or " + raise;
  }
  const int64_t short_by = l.pool_need - l.pool_free;
  const std::string more = "the cohort must have " + q(short_by) + " more idle on " + flavor + ": ";
  const std::string lent = "or more quota lent to it";
  if (l.others_borrowed >= short_by) {
    return more + "other teams borrow " + q(l.others_borrowed) +
           " there, their borrowed pods finishing or reclaimed, " + lent;
  }
  if (l.others_borrowed == 0) {
    return more + "nobody else borrows there: the other teams use their own quota, which comes " +
           "back to the pool as their pods finish, " + lent;
  }
  return more + "other teams borrow " + q(l.others_borrowed) +
         " there (their borrowed pods finishing or reclaimed) and " +
         q(short_by - l.others_borrowed) +
         " more must come back as their own quota's pods finish, " + lent;
}

// What the other teams of `me`'s cohort tree borrow of `resource` on `flavor`.
int64_t OthersBorrowed(const Snapshot& snap, NameId flavor, std::string_view resource) {
  const model::Team& me = *snap.subject.team;
  const std::optional<NameId> id = model::ResourceNames().Find(resource);
  if (!id || me.cohort.empty()) return 0;
  int64_t sum = 0;
  for (const model::Team& other : snap.policy.teams) {
    if (&other == &me || !snap.policy.SameCohortTree(other, me)) continue;
    const std::optional<NameId> team = model::TeamNames().Find(other.name);
    if (!team) continue;
    const ledger::CellView v = snap.session.View(*team, flavor, *id);
    if (v.exists) sum = SaturatingAdd(sum, std::max<int64_t>(0, v.usage - v.nominal));
  }
  return sum;
}

void QuotaCheck(const Snapshot& snap, NameId flavor, Mode mode, bool words, FlavorExplanation* fe) {
  const Subject& me = snap.subject;
  if (HeldOn(snap, flavor)) {
    fe->checks.push_back(Passed("quota", HeldSentence(snap) + " on " + fe->flavor));
    return;
  }
  fe->quota = QuotaLines(snap.session, me.team_id, flavor, me.need, mode);
  if (!words) {  // the verdict alone, as the words below would give it
    bool fits = true, lasting = false;
    for (const QuotaLine& l : fe->quota) {
      if (l.fits()) continue;
      fits = false;
      lasting = lasting || (Beyond(l) && me.estimated_members == 0);
    }
    fe->checks.push_back(fits ? Passed("quota", "") : Failed("quota", "", ""));
    fe->checks.back().lasting = lasting;
    return;
  }
  for (QuotaLine& l : fe->quota) l.others_borrowed = OthersBorrowed(snap, flavor, l.resource);
  std::string detail, change;
  bool fits = true, lasting = false;
  for (const QuotaLine& l : fe->quota) {
    detail += (detail.empty() ? "" : "; ") + LineText(l);
    if (l.fits()) continue;
    fits = false;
    change += (change.empty() ? "" : "; ") + LineChange(me, fe->flavor, l, mode, &lasting);
  }
  if (fe->quota.empty()) detail = "no resource it asks for is governed on " + fe->flavor;
  if (me.estimated_members > 0) {
    detail += " (counting its " + std::to_string(me.estimated_members) +
              " pods not created yet as large as its largest)";
  }
  fe->checks.push_back(fits ? Passed("quota", std::move(detail))
                            : Failed("quota", std::move(detail), std::move(change)));
  fe->checks.back().lasting = lasting;
}

FlavorExplanation ExplainFlavor(Snapshot& snap, const ClusterState& cluster, const FlavorQuota& fq,
                                Mode mode, bool words, bool* never) {
  const Subject& me = snap.subject;
  const NameId flavor = FlavorNames().Intern(fq.flavor);
  FlavorExplanation fe;
  fe.flavor = fq.flavor;
  fe.mode = mode;
  const bool nodes = NodesCheck(snap, cluster, flavor, &fe);
  if (nodes) {
    const std::optional<NameId> there =
        HeldOn(snap, flavor) ? std::nullopt : HeldElsewhere(snap, flavor);
    if (there) {
      fe.checks.push_back(Failed(
          "gangFlavor", me.workload.display + " holds its quota on " + FlavorNames().Name(*there),
          "none here: it runs where its gang holds quota"));
    }
    RoomCheck(snap, cluster, flavor, &fe);
    TopologyCheck(snap, cluster, fq, flavor, &fe);
    QueueCheck(snap, flavor, mode, &fe);
    if (mode == Mode::kBorrowing && !HeldOn(snap, flavor)) BackOffCheck(snap, cluster, &fe);
    if (mode == Mode::kBorrowing) FairShareCheck(snap, cluster, flavor, &fe);
  }
  QuotaCheck(snap, flavor, mode, words, &fe);
  // After the quota, as the filter asks it: a gang its quota refuses is told that first.
  if (nodes) GangRoomCheck(snap, cluster, flavor, &fe);
  fe.admissible =
      std::all_of(fe.checks.begin(), fe.checks.end(), [](const Check& c) { return c.passed; });
  // It never fits while every flavor has a failure that lasts.
  *never = *never && std::any_of(fe.checks.begin(), fe.checks.end(),
                                 [](const Check& c) { return !c.passed && c.lasting; });
  return fe;
}

const Check* FirstFailed(const std::vector<Check>& checks) {
  for (const Check& c : checks) {
    if (!c.passed) return &c;
  }
  return nullptr;
}

void Summarize(const Subject& me, Explanation* out) {
  const std::string who = WhoOf(me);
  if (const Check* c = FirstFailed(out->checks)) {
    out->summary = who + (c->lasting ? " can never run as it is: " : " waits: ") + c->detail +
                   ". To run: " + c->change + ".";
    return;
  }
  for (const FlavorExplanation& fe : out->flavors) {
    if (!fe.admissible) continue;
    out->outlook = Outlook::kAdmissible;
    out->summary = who + " would be admitted now on " + fe.flavor +
                   (fe.mode == Mode::kBorrowing ? ", borrowing" : ", within nominal quota") +
                   ": taskgov lets it through on kube-scheduler's next try (if it still waits, "
                   "kube-scheduler's own filters keep it off those nodes).";
    return;
  }
  // The first obstacle of the filter's first choice — or, when nothing can ever fit, of its last
  // (borrowing: the most it may have).
  const bool never = out->outlook == Outlook::kNeverFits;
  for (size_t i = 0; i < out->flavors.size(); ++i) {
    const FlavorExplanation& fe = out->flavors[never ? out->flavors.size() - 1 - i : i];
    const Check* c = FirstFailed(fe.checks);
    if (c == nullptr) continue;
    if (never) {  // the reason it never fits, not a passing obstacle before it
      auto lasting = std::find_if(fe.checks.begin(), fe.checks.end(),
                                  [](const Check& k) { return !k.passed && k.lasting; });
      if (lasting != fe.checks.end()) c = &*lasting;
    }
    out->summary = who + (never ? " can never run as it is: " : " waits: ") + fe.flavor +
                   (fe.mode == Mode::kBorrowing ? ", borrowing: " : ": ") + c->detail +
                   ". To run: " + c->change + ".";
    return;
  }
}

// The instance types the pod may go to at all (its nodeSelector, affinity and tolerations, over
// every node of the cluster) against those its team has quota on: a lasting failure when it may
// go only where the team has none — "team d has no quota on ml.p5.48xlarge: it can never run".
// Nothing when no node takes it at all (the flavors' checks say why) or it may use some of them.
void InstanceTypeCheck(const Subject& me, const ClusterState& cluster, Explanation* out) {
  std::vector<std::string> allowed;
  for (const NameId flavor : cluster.nodes().FlavorsWithNodes()) {
    if (flavor == state::kNoFlavor || EligibilityOn(cluster, flavor, *me.pod).accepted == 0) {
      continue;
    }
    const std::string name(FlavorNames().Name(flavor));
    if (std::any_of(me.team->flavors.begin(), me.team->flavors.end(),
                    [&](const FlavorQuota& fq) { return fq.flavor == name; })) {
      return;  // it may use one of the team's flavors
    }
    allowed.push_back(name);
  }
  if (allowed.empty()) return;
  std::string where, quota;
  for (const std::string& f : allowed) where += (where.empty() ? "" : ", ") + f;
  for (const FlavorQuota& fq : me.team->flavors) quota += (quota.empty() ? "" : ", ") + fq.flavor;
  out->checks.push_back(
      Failed("instanceType",
             me.team->name + " has no quota on " + where + ", the only instance type" +
                 (allowed.size() == 1 ? "" : "s") + " its nodeSelector and node affinity allow",
             (quota.empty() ? std::string("the team needs quota there")
                            : "ask for an instance type " + me.team->name + " has quota on (" +
                                  quota + "), or give " + me.team->name + " quota on " + where)));
  out->checks.back().lasting = true;
}

}  // namespace

std::string_view OutlookName(Outlook outlook) {
  switch (outlook) {
    case Outlook::kAdmissible:
      return "Admissible";
    case Outlook::kWaiting:
      return "Waiting";
    case Outlook::kNeverFits:
      return "NeverFits";
    case Outlook::kNotGoverned:
      return "NotGoverned";
    case Outlook::kNotPending:
      return "NotPending";
  }
  return "Waiting";
}

std::string_view ModeName(Ledger::Mode mode) {
  return mode == Mode::kBorrowing ? "Borrowing" : "WithinNominal";
}

namespace {

// Explain, or with `words` false its outlook alone: no quota line is put in words, no summary is
// written, and it stops at the first (flavor, mode) that admits it.
Explanation ExplainOrJudge(Snapshot& snapshot, const QuotaBook& book, const ClusterState& cluster,
                           int64_t now_ms, size_t queue_lookahead, bool words) {
  Explanation out;
  const Subject& me = snapshot.subject;
  if (!SubjectChecks(snapshot, now_ms, &out)) return out;
  out.request = me.request;
  out.need = me.need;
  out.estimated_members = me.estimated_members;
  if (!me.team->active) {  // the snapshot stopped before the workload and the nodes
    if (words) Summarize(me, &out);
    return out;
  }
  // TakeSnapshot reads the pending view only when some node has room; every rule is explained.
  if (!state::AnyRoom(snapshot.fits)) {
    TakeAhead(book, cluster, queue_lookahead, &snapshot);
  }
  InstanceTypeCheck(me, cluster, &out);
  const bool subject_passed = FirstFailed(out.checks) == nullptr;
  bool never = !me.team->flavors.empty();
  for (Mode mode : {Mode::kWithinNominal, Mode::kBorrowing}) {
    for (const FlavorQuota& fq : me.team->flavors) {
      out.flavors.push_back(ExplainFlavor(snapshot, cluster, fq, mode, words, &never));
      if (!words && subject_passed && out.flavors.back().admissible) {
        out.outlook = Outlook::kAdmissible;  // what Summarize would find first
        return out;
      }
    }
  }
  if (me.team->flavors.empty()) {
    out.checks.push_back(Failed("quota", me.team->name + " has no quota on any flavor",
                                "the team needs a compute quota"));
    never = true;
  }
  const bool lasting = std::any_of(out.checks.begin(), out.checks.end(),
                                   [](const Check& c) { return !c.passed && c.lasting; });
  out.outlook = never || lasting ? Outlook::kNeverFits : Outlook::kWaiting;
  if (words) Summarize(me, &out);
  return out;
}

}  // namespace

Explanation Explain(Snapshot& snapshot, const QuotaBook& book, const ClusterState& cluster,
                    int64_t now_ms, size_t queue_lookahead) {
  return ExplainOrJudge(snapshot, book, cluster, now_ms, queue_lookahead, /*words=*/true);
}

Outlook OutlookOf(Snapshot& snapshot, const QuotaBook& book, const ClusterState& cluster,
                  int64_t now_ms, size_t queue_lookahead) {
  return ExplainOrJudge(snapshot, book, cluster, now_ms, queue_lookahead, /*words=*/false).outlook;
}

}  // namespace taskgov::scheduler::decisions
