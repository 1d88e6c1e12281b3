#include "scheduler/actions/preemption_controller.h"

#include <algorithm>
#include <limits>
#include <map>
#include <set>
#include <unordered_set>
#include <utility>

#include "scheduler/common/log.h"
#include "scheduler/common/time_format.h"
#include "scheduler/decisions/rules.h"
#include "scheduler/decisions/snapshot.h"
#include "scheduler/decisions/topology.h"
#include "scheduler/model/gang.h"
#include "scheduler/model/pod_identity.h"

namespace taskgov::scheduler::actions {

using decisions::Candidate;
using decisions::Preemptor;
using decisions::ReasonName;
using decisions::Selection;
using ledger::Charge;
using ledger::GangHold;
using ledger::KnownIdAmounts;
using ledger::Ledger;
using ledger::PodMeta;
using ledger::QuotaBook;
using ledger::Refusal;
using ledger::Reservation;
using ledger::ReservationState;
using model::AwaitsGangObject;
using model::FlavorNames;
using model::FlavorQuota;
using model::IdAmounts;
using model::Labels;
using model::NameId;
using model::Pod;
using model::PodPlacementSpec;
using model::Policy;
using model::PolicyPtr;
using model::QueueingStrategy;
using model::ResourceList;
using model::TaskPrioritization;
using model::Team;
using model::TeamNames;
using model::ToResourceList;
using state::ClusterState;
using state::kNoTeam;
using state::NodeView;
using state::PendingPod;
using state::PendingQueues;

namespace {

constexpr std::string_view kComponent = "preemption";

// A running pod of a team, charged on the ledger, as a victim candidate.
Candidate CandidateOf(const ClusterState::BoundPod& pod, const Reservation& r) {
  const model::KeptPod& kept = pod.kept;
  Candidate c;
  c.uid = pod.uid;
  c.ns = kept.ns();
  c.name = kept.name();
  c.team = pod.team;
  c.flavor = r.charge.flavor;
  c.priority = pod.priority;
  c.created_ms = kept.creation_unix_ms();
  c.started_ms = kept.start_unix_ms().value_or(c.created_ms);
  c.admitted_ms = r.meta.admitted_ms != 0 ? r.meta.admitted_ms : c.started_ms;
  c.node = kept.node_name();
  c.occupies = kept.request_ids();
  for (uint8_t i = 0; i < r.charge.count; ++i) {
    c.charged.emplace_back(r.charge.items[i].resource, r.charge.items[i].amount);
  }
  c.gang = kept.gang();
  c.checkpoint_ms = kept.checkpoint_unix_ms().value_or(0);
  return c;
}

// The preemptor for `pending`; a gang member stands for its gang: its need is what the members
// of the gang not holding quota (`holders` of them do) need together on its flavor, and what
// members pinned to other flavors need there is reserved with it (decisions::SplitGangNeed):
// each of those members, when pending, is a preemptor on its own flavor.
// Whose room the node cache holds for a preemptor: its gang's (the workload key), else its own.
const std::string& HolderOf(const Preemptor& p) { return p.workload.empty() ? p.uid : p.workload; }

Preemptor PreemptorOf(const PendingPod& pending, int32_t holders, const PendingQueues& queues,
                      const Policy& policy, const Team& team) {
  Preemptor p;
  p.uid = pending.uid;
  p.key = pending.key;
  p.team = pending.team;
  p.priority = pending.priority;
  p.created_ms = pending.created_ms;
  p.request = pending.request;
  if (!pending.workload.empty()) {
    p.workload = pending.workload;
    p.workload_size = pending.workload_size;
    decisions::GangNeedSplit split = decisions::SplitGangNeed(
        queues, policy, team, pending.team, pending.workload, pending.uid, pending.request,
        pending.node_selector, std::max(1, pending.workload_size - holders));
    p.need = std::move(split.here);
    p.elsewhere = std::move(split.elsewhere);
  }
  return p;
}

}  // namespace

class PreemptionController::WorldImpl final : public RoundWorld, public PlanSource {
 public:
  WorldImpl(QuotaBook* book, ClusterState* cluster) : book_(book), cluster_(cluster) {}

  // RoundWorld.
  PodFacts FindPod(std::string_view uid) const override {
    const std::optional<Pod> pod = cluster_->FindPod(uid);
    if (!pod) return PodFacts{};
    return PodFacts{true, pod->terminal(), pod->deletion_unix_ms.has_value(), pod->bound()};
  }
  Reservation FindReservation(std::string_view uid) const override {
    const std::optional<scheduler::ledger::Reservation> r = book_->Find(uid);
    if (!r) return Reservation::kNone;
    return r->state == ReservationState::kBound ? Reservation::kBound : Reservation::kAssumed;
  }
  // Known only from filter calls (ClusterState::NotePending): the filter saw it within
  // ClusterState's filter_seen_ttl_ms.
  bool FilterPending(const Preemptor& p) const override {
    const std::optional<PendingPod> pending = cluster_->pending().Find(p.uid);
    return pending && pending->team == p.team;
  }
  bool Nominate(const Preemptor& p, NameId flavor, int64_t ttl_ms, std::string* why) override {
    PodMeta meta;
    meta.priority = p.priority;
    meta.created_ms = p.created_ms;
    std::variant<Charge, Refusal> r;
    if (p.workload.empty()) {
      r = book_->Assume(p.uid, p.team, flavor, p.request, Ledger::Mode::kBorrowing, ttl_ms, meta);
    } else {
      // A gang member: the freed quota is held for its whole gang.
      Ledger::Session session(book_->ledger());
      const IdAmounts need = KnownIdAmounts(p.quota_request());
      std::vector<ledger::FlavorNeed> elsewhere;
      for (const auto& [there, amounts] : p.elsewhere) {
        if (there != flavor)
          elsewhere.push_back(ledger::FlavorNeed{there, KnownIdAmounts(amounts)});
      }
      r = book_->AssumeMember(session, p.uid, p.workload, p.workload_size, p.team, flavor,
                              KnownIdAmounts(p.request), Ledger::Mode::kBorrowing, ttl_ms,
                              std::max(ttl_ms, session.policy().gang_timeout_seconds * 1000), meta,
                              &need, elsewhere);
    }
    if (const Refusal* refusal = std::get_if<Refusal>(&r)) {
      *why = refusal->Explain();
      return false;
    }
    return true;
  }

  // A lone preemptor needs its request on the node it was planned on; a gang's members go where
  // its victims ran (and to the planned node). What victims still occupy is counted there already
  // (the node's usage): the hold is what they no longer do, growing as they go.
  void HoldRoom(const Round& round, int64_t until_ms) override {
    const Preemptor& p = round.preemptor;
    std::map<std::string, ResourceList> room;
    if (!p.workload.empty()) {
      for (const RoundVictim& v : round.victims) room[v.node].Add(ToResourceList(v.occupies));
    }
    if (!round.node.empty()) room[round.node].MaxWith(p.request);
    for (const RoundVictim& v : round.victims) {
      auto it = room.find(v.node);
      if (it == room.end() || v.phase == VictimPhase::kGone) continue;
      for (const auto& [resource, amount] : ToResourceList(v.occupies)) {
        it->second.Set(resource, std::max<int64_t>(0, it->second.Get(resource) - amount));
      }
    }
    const std::string& holder = HolderOf(p);
    cluster_->ReleaseRoom(holder);
    for (auto& [node, amount] : room) {
      amount.DropZeros();
      if (!amount.empty()) cluster_->HoldRoom(node, holder, amount, until_ms);
    }
  }
  void ReleaseRoom(const Round& round) override {
    cluster_->ReleaseRoom(HolderOf(round.preemptor));
  }

  // PlanSource.
  Ledger::Usage Usage() const override { return book_->ledger().ReadUsage(); }
  std::vector<std::pair<std::string, NodeView>> NodesOfFlavor(NameId flavor) const override {
    return cluster_->nodes().NodesOfFlavor(flavor);
  }

 private:
  QuotaBook* const book_;
  ClusterState* const cluster_;
};

PreemptionController::PreemptionController(QuotaBook* book, ClusterState* cluster,
                                           KubeActions* kube, const common::Clock* clock,
                                           Options options)
    : book_(book),
      cluster_(cluster),
      kube_(kube),
      clock_(clock),
      options_(options),
      world_(std::make_unique<WorldImpl>(book, cluster)),
      events_(kube),
      limiter_(options.evictions_per_second, options.eviction_burst, clock->SteadyNowMs()),
      pdb_(PdbRetry::Options{options.pdb_retry_ms, options.max_eviction_attempts,
                             options.max_reselections}),
      table_(world_.get(), RoundTable::Options{options.nomination_ttl_ms, options.round_slack_ms,
                                               options.retry_backoff_ms}),
      status_(std::make_unique<const Statuses>()) {}

PreemptionController::~PreemptionController() = default;

bool PreemptionController::OnPodGone(std::string_view uid) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!table_.OnPodGone(uid, clock_->NowMs())) return false;
  PublishLocked();
  return true;
}

void PreemptionController::PublishLocked() {
  std::unordered_set<std::string> set_aside = table_.BackedOffUids();
  set_aside.insert(set_aside_seen_.begin(), set_aside_seen_.end());
  std::unordered_map<std::string, std::string> text = table_.Statuses();
  for (const auto& [uid, drain] : draining_) text.emplace(uid, drain.status);
  status_.Publish(
      std::make_unique<const Statuses>(Statuses{std::move(text), std::move(set_aside)}));
}

std::string PreemptionController::StatusFor(std::string_view uid) const {
  const std::string key(uid);
  return status_.Read([&](const Statuses& status) {
    auto it = status.text.find(key);
    return it == status.text.end() ? std::string() : it->second;
  });
}

decisions::PreemptorState PreemptionController::StateOf(std::string_view uid) const {
  const std::string key(uid);
  return status_.Read([&](const Statuses& status) {
    if (status.text.count(key) != 0) return decisions::PreemptorState::kPreempting;
    if (status.set_aside.count(key) != 0) return decisions::PreemptorState::kSetAside;
    return decisions::PreemptorState::kUndecided;
  });
}

PreemptionStats PreemptionController::Stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  PreemptionStats out = stats_;
  out.preempted_pods = table_.PreemptedPods();
  out.rounds_in_flight = table_.in_flight();
  const RoundTable::Counts& rounds = table_.counts();
  out.rounds_started = rounds.started;
  out.rounds_succeeded = rounds.succeeded;
  out.rounds_cancelled = rounds.cancelled;
  out.rounds_abandoned = rounds.abandoned;
  return out;
}

// ---- the run: follow rounds → pick preemptors → plan → evict → publish ----

PreemptionController::RunReport PreemptionController::RunOnce() {
  std::lock_guard<std::mutex> run_lock(run_mu_);
  RunReport report;
  const int64_t now = clock_->NowMs();
  const PolicyPtr policy = book_->ledger().policy();
  ReportUngoverned();
  EvictTimedOutGangs(policy->preemption.grace_period_seconds, &report);
  RoundTable::Followed followed = FollowRounds(now);
  if (policy != resting_policy_) {
    resting_.clear();
    resting_policy_ = policy;
  }
  const std::vector<state::PendingRef> preemptors = PickPreemptors(*policy, now);
  const int64_t steady = clock_->SteadyNowMs();
  const bool work = !preemptors.empty() || followed.evictions_due;
  if (work && !limiter_.Allows(steady, 1.0)) {
    // No token: nothing can be evicted this run, so nothing is planned (a plan gathers the
    // candidates of every flavor involved); the preemptors wait for the next run.
    std::lock_guard<std::mutex> lock(mu_);
    stats_.rounds_deferred_by_rate_limit += preemptors.size();
  } else if (work) {
    ForgetOldTakings(now);
    VictimPlanner planner(PlanInputs(*policy, now, preemptors, std::move(followed)));
    Run run{*policy, now, steady, policy->preemption.grace_period_seconds, &planner, &report, {}};
    std::vector<std::string> in_flight;
    {
      std::lock_guard<std::mutex> lock(mu_);
      in_flight = table_.InFlight();
    }
    // Rounds in flight first (evictions rate-limited before, or to retry), then new ones.
    for (const std::string& uid : in_flight) EvictRound(run, uid);
    for (const state::PendingRef& entry : preemptors) {
      const PendingPod& pending = *entry;
      // No token left: no round could start this run, so the rest wait for the next one
      // undecided (planning each would cost a pass over its flavors' pods for nothing).
      if (!limiter_.Allows(run.steady_ms, 1.0)) {
        std::lock_guard<std::mutex> lock(mu_);
        ++stats_.rounds_deferred_by_rate_limit;
        continue;
      }
      DecideFor(run, pending);
    }
  }
  FinishRun();
  return report;
}

void PreemptionController::ReportUngoverned() {
  std::set<std::string> running;
  for (const ClusterState::UngovernedPod& u : cluster_->UngovernedPods()) {
    running.insert(u.uid);
    if (reported_ungoverned_.count(u.uid) > 0) continue;
    const std::string team(TeamNames().Name(u.team));
    const std::string& governed = cluster_->governed_scheduler();
    kube_->RecordEvent(
        EventRecord{u.ns, u.name, u.uid, "Warning", "Ungoverned", "Reporting",
                    "bound by scheduler " + u.scheduler + ", not " + governed + ": its " +
                        u.request.ToString() + " count against " + team +
                        "'s quota, and it may be reclaimed while " + team +
                        " uses more than its nominal quota; set spec.schedulerName: " + governed});
  }
  reported_ungoverned_ = std::move(running);
}

void PreemptionController::EvictTimedOutGangs(int64_t grace_s, RunReport* report) {
  const int64_t now = clock_->SteadyNowMs();
  for (QuotaBook::ExpiredGang& gang : book_->TakeExpiredGangs()) {
    gang_evictions_.push_back(GangEviction{std::move(gang), now});
  }
  std::vector<GangEviction> later;
  for (GangEviction& e : gang_evictions_) {
    if (e.due_ms > now) {
      later.push_back(std::move(e));
      continue;
    }
    // Whole again meanwhile (its members were recreated and admitted): it runs as it should.
    const std::optional<GangHold> hold = book_->FindGang(e.gang.workload);
    if (hold && hold->holders >= hold->size) continue;
    if (!EvictGangMembers(e.gang, grace_s, report)) {
      e.due_ms = now + options_.pdb_retry_ms;
      later.push_back(std::move(e));
    }
  }
  gang_evictions_ = std::move(later);
}

bool PreemptionController::EvictGangMembers(const QuotaBook::ExpiredGang& gang, int64_t grace_s,
                                            RunReport* report) {
  std::vector<Pod> members;
  cluster_->ForEachBoundPod([&](const ClusterState::BoundPod& pod) {
    if (!pod.kept.terminating() && pod.kept.gang() == gang.workload) {
      members.push_back(pod.ToPod());
    }
  });
  std::sort(members.begin(), members.end(),
            [](const Pod& a, const Pod& b) { return a.key() < b.key(); });  // deterministic
  if (members.empty()) return true;
  const std::string note =
      "Gang timeout: " + std::to_string(gang.admitted) + " of the " + std::to_string(gang.size) +
      " members of its gang were admitted within " + std::to_string(gang.waited_s) +
      "s; its running members are evicted so that the gang runs whole or not at all (grace "
      "period " +
      std::to_string(grace_s) + "s)";
  common::log::Warn(kComponent, "gang timed out: evicting its running members",
                    {{"workload", gang.workload},
                     {"members_running", static_cast<int64_t>(members.size())},
                     {"members_declared", static_cast<int64_t>(gang.size)}});
  bool all = true;
  for (const Pod& pod : members) {
    std::string detail;
    const EvictOutcome outcome = kube_->Evict(pod.namespace_, pod.name, pod.uid, grace_s, &detail);
    if (outcome == EvictOutcome::kNotFound) continue;
    if (outcome != EvictOutcome::kEvicted) {
      all = false;
      common::log::Warn(
          kComponent, "gang timeout eviction refused; retried later",
          {{"pod", pod.key()}, {"detail", detail}, {"retry_in_ms", options_.pdb_retry_ms}});
      continue;
    }
    kube_->RecordEvent(
        EventRecord{pod.namespace_, pod.name, pod.uid, "Warning", "GangTimeout", "Evicting", note});
    ++report->gang_timeout_evictions;
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.gang_timeout_evictions;
  }
  return all;
}

RoundTable::Followed PreemptionController::FollowRounds(int64_t now_ms) {
  // A pod whose budget blocked its eviction may be a victim again.
  const bool unblocked = pdb_.Expire(now_ms) > 0;
  std::lock_guard<std::mutex> lock(mu_);
  RoundTable::Followed followed = table_.Follow(now_ms);
  // A round that ended hands its claim back (or its preemptor took it): what the pods set aside
  // found may differ now.
  const RoundTable::Counts& c = table_.counts();
  const uint64_t ended = c.succeeded + c.cancelled + c.abandoned;
  if (ended != rounds_ended_ || unblocked) {
    set_aside_.clear();
    resting_.clear();
  }
  rounds_ended_ = ended;
  for (auto it = set_aside_.begin(); it != set_aside_.end();) {
    it = it->second.until_ms <= now_ms ? set_aside_.erase(it) : std::next(it);
  }
  return followed;
}

int64_t PreemptionController::SetAsideUntil(const std::string& uid, uint64_t stamp,
                                            int64_t now_ms) {
  auto it = set_aside_.find(uid);
  if (it == set_aside_.end()) return 0;
  if (it->second.stamp == stamp && now_ms < it->second.until_ms) return it->second.until_ms;
  set_aside_.erase(it);
  return 0;
}

void PreemptionController::SetAsideUnchanged(const Run& run, const PendingPod& pending,
                                             std::string why) {
  const bool replayed = run.policy.preemption.minimum_runtime_seconds > 0;
  if (replayed && why.empty()) return;
  auto team = teams_.find(pending.team);
  if (team == teams_.end()) return;
  // What lapses with time alone ends the set-aside too: a protected pod coming of age, the pod
  // starting to starve (or giving up).
  int64_t until = std::min(run.now_ms + options_.unchanged_wait_ms, first_of_age_ms_);
  const int64_t bound_ms = run.policy.starvation_bound_seconds * 1000;
  if (bound_ms > 0) {
    for (const int64_t waited : {bound_ms, decisions::kStarvationGiveUp * bound_ms}) {
      const int64_t change = pending.created_ms + waited + 1;
      if (change > run.now_ms) until = std::min(until, change);
    }
  }
  if (until <= run.now_ms) return;
  set_aside_[pending.uid] = SetAside{team->second.stamp, until, std::move(why)};
}

bool PreemptionController::ReplaySetAside(Run& run, const PendingPod& pending) {
  if (run.policy.preemption.minimum_runtime_seconds <= 0 || run.started || !run.drained.empty()) {
    return false;
  }
  auto team = teams_.find(pending.team);
  if (team == teams_.end()) return false;
  const int64_t until = SetAsideUntil(pending.uid, team->second.stamp, run.now_ms);
  if (until == 0) return false;
  run.report->no_preemption[pending.key] = set_aside_[pending.uid].why;
  ++run.report->replayed;
  std::lock_guard<std::mutex> lock(mu_);
  table_.BackOff(pending.uid, run.now_ms + options_.no_victims_backoff_ms,
                 /*nothing_started=*/true);
  return true;
}

std::vector<state::PendingRef> PreemptionController::PickPreemptors(const Policy& policy,
                                                                    int64_t now_ms) {
  const bool by_priority = policy.task_prioritization == TaskPrioritization::kTaskRanking;
  std::vector<state::PendingRef> picked;
  teams_.clear();
  for (const Team& team : policy.teams) {
    if (!team.active || team.flavors.empty()) continue;
    const NameId team_id = TeamNames().Intern(team.name);
    TeamView& view = teams_[team_id];
    for (const FlavorQuota& f : team.flavors)
      view.flavors.push_back(FlavorNames().Intern(f.flavor));
    view.stamp = cluster_->nodes().ChangeStamp(view.flavors);
    const Resting seen{view.stamp, cluster_->pending().Version(team_id), 0};
    if (auto rest = resting_.find(team_id); rest != resting_.end()) {
      if (rest->second.stamp == seen.stamp && rest->second.version == seen.version &&
          now_ms < rest->second.until_ms) {
        continue;
      }
      resting_.erase(rest);
    }
    const int64_t rest_until =
        PickFromTeam(team, team_id, view.stamp, by_priority,
                     /*replayed=*/policy.preemption.minimum_runtime_seconds > 0, now_ms, &picked);
    if (rest_until > 0) resting_[team_id] = Resting{seen.stamp, seen.version, rest_until};
  }
  auto first = [&](const state::PendingRef& a, const state::PendingRef& b) {
    if (by_priority && a->priority != b->priority) return a->priority > b->priority;
    if (a->created_ms != b->created_ms) return a->created_ms < b->created_ms;
    return a->uid < b->uid;
  };
  const size_t kept = std::min(picked.size(), options_.max_preemptors_per_run);
  std::partial_sort(picked.begin(), picked.begin() + static_cast<ptrdiff_t>(kept), picked.end(),
                    first);
  picked.resize(kept);
  return picked;
}

int64_t PreemptionController::PickFromTeam(const Team& team, NameId team_id, uint64_t stamp,
                                           bool by_priority, bool replayed, int64_t now_ms,
                                           std::vector<state::PendingRef>* out) {
  // Every pending pod ranks ahead of the last possible position. Look further than the per-team
  // limit: pods set aside (backoff, rounds in flight) do not take the places of those behind.
  const std::vector<state::PendingRef> pending =
      cluster_->pending().Heads(team_id, by_priority, options_.max_preemptors_per_team * 8);
  int64_t rest_until = std::numeric_limits<int64_t>::max();  // 0 once a pod is not set aside
  size_t taken = 0;
  std::unordered_set<std::string_view> gangs;  // one preemptor per gang: its best-ranked member
  // Backed off, nothing started: they go above the next pod taken.
  std::vector<const state::PendingRef*> passed;
  for (const state::PendingRef& head : pending) {
    const PendingPod& p = *head;
    if (taken == options_.max_preemptors_per_team) break;
    // Set aside (nothing could be done for it, and nothing changed since): the common case of a
    // settled cluster, decided by one lookup here, before the checks that take other locks.
    const int64_t aside_until = replayed ? 0 : SetAsideUntil(p.uid, stamp, now_ms);
    rest_until = aside_until == 0 ? 0 : std::min(rest_until, aside_until);
    bool skip = aside_until != 0;
    if (!p.workload.empty()) {
      skip = !gangs.insert(p.workload).second || skip;
      // A gang holding quota takes what is held for it: nothing to free.
      if (!skip) {
        const std::optional<GangHold> hold = book_->FindGang(p.workload);
        skip = hold && hold->holds_quota();
      }
    }
    // Waiting for the object declaring its gang: its filter refuses it meanwhile, so nothing
    // freed for it as a lone pod would be used.
    skip = skip || AwaitsGangObject(p.awaiting_object, p.created_ms, clock_->NowMs());
    bool backed_off = false;
    bool nothing_started = false;
    if (!skip) {
      std::lock_guard<std::mutex> lock(mu_);
      skip = table_.Has(p.uid);
      backed_off = !skip && table_.BackedOff(p.uid);
      nothing_started = backed_off && table_.NothingStarted(p.uid);
    }
    // Admitted: it waits for the scheduler, not for us.
    const bool admitted = !skip && book_->Holds(p.uid);
    skip = skip || backed_off || admitted;
    if (nothing_started && !admitted) passed.push_back(&head);
    if (!skip) {
      // Pods ranked above it that nothing was done for a moment ago go first: what would be
      // freed for it could serve them (a pod never gets a round ahead of its turn in the queue).
      for (const state::PendingRef* above : passed) {
        if (taken + 1 >= options_.max_preemptors_per_team) break;
        out->push_back(*above);
        ++taken;
      }
      passed.clear();
      out->push_back(head);
      ++taken;
    }
    // StrictFIFO: nobody passes the head of the queue.
    if (team.queueing == QueueingStrategy::kStrictFIFO) break;
  }
  return rest_until;
}

VictimPlanner::Inputs PreemptionController::PlanInputs(
    const Policy& policy, int64_t now_ms, const std::vector<state::PendingRef>& preemptors,
    RoundTable::Followed followed) {
  std::set<std::string> evicted;
  // The flavors this run may decide on: the rounds' in flight and the preemptors' teams'.
  std::vector<NameId> flavors;
  {
    std::lock_guard<std::mutex> lock(mu_);
    evicted = table_.EvictedUids();
    flavors = table_.FlavorsInFlight();
  }
  for (const state::PendingRef& p : preemptors) {
    auto team = teams_.find(p->team);
    if (team == teams_.end()) continue;
    for (NameId id : team->second.flavors) {
      if (std::find(flavors.begin(), flavors.end(), id) == flavors.end()) flavors.push_back(id);
    }
  }
  const int64_t min_runtime_ms = policy.preemption.minimum_runtime_seconds * 1000;
  first_of_age_ms_ = std::numeric_limits<int64_t>::max();
  VictimPlanner::Inputs in;
  in.policy = &policy;
  in.now_ms = now_ms;
  in.source = world_.get();
  in.selector = &selector_;
  in.claims = std::move(followed.claims);
  // Running pods of teams; those already going (deleted, evicted, or victims of a round in
  // flight) count as freed.
  cluster_->ForEachBoundPod(
      [&](const ClusterState::BoundPod& pod) {
        if (pod.team == kNoTeam) return;
        std::optional<Reservation> r = book_->Find(pod.uid);
        if (!r || r->state != ReservationState::kBound) return;
        Candidate c = CandidateOf(pod, *r);
        c.pdb_blocked = pdb_.Blocked(c.uid, now_ms);
        if (!took_.empty()) c.took_from = TookFrom(c.gang.empty() ? c.uid : c.gang, now_ms);
        if (c.checkpoint_ms == 0 && !c.gang.empty()) {  // its job's checkpoint, if it says
          if (auto job = cluster_->JobOf(c.gang)) {
            c.checkpoint_ms = model::LastCheckpointMs(job->annotations).value_or(0);
          }
        }
        const bool going = pod.kept.terminating() || evicted.count(c.uid) > 0 ||
                           followed.committed.count(c.uid) > 0;
        if (!going && min_runtime_ms > 0 && c.started_ms + min_runtime_ms > now_ms) {
          first_of_age_ms_ = std::min(first_of_age_ms_, c.started_ms + min_runtime_ms);
        }
        (going ? in.terminating : in.running).push_back(std::move(c));
      },
      &flavors);
  return in;
}

void PreemptionController::DecideFor(Run& run, const PendingPod& pending) {
  const Team* team = run.policy.FindTeam(TeamNames().Name(pending.team));
  if (team == nullptr) return;
  ++run.report->preemptors;
  if (ReplaySetAside(run, pending)) return;
  const std::optional<GangHold> hold =
      pending.workload.empty() ? std::nullopt : book_->FindGang(pending.workload);
  const int32_t holders = hold ? hold->holders : 0;
  Preemptor p = PreemptorOf(pending, holders, cluster_->pending(), run.policy, *team);
  const int members = p.workload.empty() ? 1 : std::max(1, p.workload_size - holders);
  if (!p.workload.empty()) {  // a gang that must run in one domain gets its room freed there
    if (const std::optional<Pod> pod = cluster_->FindPod(p.uid)) {
      const std::shared_ptr<const model::JobControl> job =
          decisions::HasTopologyAnnotations(pod->annotations) ? nullptr
                                                              : cluster_->JobOf(p.workload);
      const decisions::TopologyRequest topology = decisions::TopologyRequestOfGang(*pod, job.get());
      if (topology.required() && topology.invalid.empty()) p.required_topology = topology.level;
    }
  }
  const Selection chosen = run.planner->Plan(*team, pending, p, members);
  if (chosen.outcome != Selection::Outcome::kVictims &&
      Drain(run, pending, p, *team, members, chosen)) {
    return;
  }
  if (chosen.outcome == Selection::Outcome::kFits) {
    // Claimed for this run, nothing to evict: it waits only for the scheduler. Set it aside for
    // a while too, or a backlog of such pods would hold every place of every run and a pod
    // ranked below them that needs a remedy would never be considered.
    SetAsideUnchanged(run, pending);
    std::lock_guard<std::mutex> lock(mu_);
    table_.BackOff(p.uid, run.now_ms + options_.no_remedy_backoff_ms, /*nothing_started=*/true);
    return;
  }
  if (chosen.outcome != Selection::Outcome::kVictims) {
    // Nothing can be evicted for it now: set it aside for a while, so that pods ranked below it
    // are considered too (a run looks at a bounded number of preemptors).
    common::log::Debug(kComponent, "no preemption", {{"pod", p.key}, {"why", chosen.explanation}});
    run.report->no_preemption[p.key] = chosen.explanation;
    SetAsideUnchanged(run, pending, chosen.explanation);
    std::lock_guard<std::mutex> lock(mu_);
    table_.BackOff(p.uid, run.now_ms + options_.no_victims_backoff_ms, /*nothing_started=*/true);
    return;
  }
  if (std::optional<std::string> why = TurnNotCome(run, p, chosen)) {
    // Evicting now would free capacity for a pod the filter then holds back: another team's
    // pending pod goes first under fair share (DESIGN §3.7: a disruption only when it admits
    // the preemptor). It waits for its turn like any borrower.
    common::log::Debug(kComponent, "no preemption yet", {{"pod", p.key}, {"why", *why}});
    run.report->no_preemption[p.key] = "its turn to borrow has not come: " + *why;
    SetAsideUnchanged(run, pending);
    std::lock_guard<std::mutex> lock(mu_);
    table_.BackOff(p.uid, run.now_ms + options_.no_victims_backoff_ms, /*nothing_started=*/true);
    return;
  }
  if (!limiter_.Allows(run.steady_ms, static_cast<double>(chosen.victims.size()))) {
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.rounds_deferred_by_rate_limit;
    return;
  }
  StartRound(run, pending, p, chosen);
}

bool PreemptionController::Drain(Run& run, const PendingPod& pending, const Preemptor& p,
                                 const Team& team, int members, const Selection& chosen) {
  // Owed the room: it starves, or its team's nominal quota holds it — once it fits, only if its
  // room was being drained, for drain_fit_hold_ms (kube-scheduler tries it again after its
  // backoff, or on the next pod leaving, and others must not take the room meanwhile).
  const bool starving = decisions::Starving(run.policy, pending.created_ms, run.now_ms);
  const bool fits = chosen.outcome == Selection::Outcome::kFits;
  const std::string& holder = HolderOf(p);
  std::vector<std::string> kept;  // the nodes held for it until now: the drain stays there
  int64_t fits_since = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto drained = drained_.find(holder);
        drained != drained_.end() && drained->second.until_ms > run.now_ms) {
      kept = drained->second.nodes;
      fits_since = drained->second.fits_since_ms;
    }
  }
  if (fits && fits_since == 0) fits_since = run.now_ms;
  if (!starving && fits && (kept.empty() || run.now_ms - fits_since > options_.drain_fit_hold_ms)) {
    return false;
  }
  std::vector<std::pair<std::string, ResourceList>> nodes;
  NameId flavor = chosen.flavor;
  if (chosen.outcome == Selection::Outcome::kFits) {
    nodes.emplace_back(chosen.node, p.request);  // claimed in the planner by Plan already
  } else if (std::optional<VictimPlanner::Drain> drain = run.planner->PlanDrain(
                 team, pending, p, members, run.drained, /*within_nominal=*/!starving, kept)) {
    nodes = std::move(drain->nodes);
    flavor = drain->flavor;
  } else {
    return false;
  }
  // Nothing is kept for a pod the filter would hold back whatever room it had: it could not use
  // the room, and those it waits for could not have it. Its own team's higher-ranked pods go
  // before it (a starving pod's drain could hold a node its team's higher-ranked gang needed,
  // each waiting for the other); or it would borrow there and its turn has not come — another
  // team's pod within its nominal quota goes first (a drain for a starving borrower held the
  // room that pod needed while it, in turn, waited for that pod), or the fair-share order. Room
  // still kept for it goes at once. The nodes planned stay claimed for the rest of this run.
  std::optional<std::string> held_back;
  if (const std::optional<Pod> pod = cluster_->FindPod(p.uid)) {
    held_back =
        decisions::QueueOrderHoldsBack(*book_, *cluster_, *pod, flavor, run.now_ms,
                                       [this](std::string_view uid) { return StateOf(uid); });
    if (!held_back) {
      Selection here;  // no victims: as it fits now (claimed), or as the drain leaves it
      here.outcome = chosen.outcome;
      here.flavor = flavor;
      held_back = TurnNotCome(run, p, here, &*pod);
    }
  }
  if (held_back) {
    common::log::Debug(kComponent, "no drain", {{"pod", p.key}, {"why", *held_back}});
    cluster_->ReleaseRoom(holder);
    std::lock_guard<std::mutex> lock(mu_);
    draining_.erase(p.uid);
    drained_.erase(holder);
    return false;
  }
  run.drained.push_back(flavor);
  const int64_t until = run.now_ms + options_.drain_hold_ms;
  cluster_->ReleaseRoom(holder);
  std::string where;
  std::vector<std::string> held;
  for (const auto& [node, amount] : nodes) {
    cluster_->HoldRoom(node, holder, amount, until);
    where += (where.empty() ? "" : ", ") + node;
    held.push_back(node);
  }
  std::string status =
      (starving ? "waiting longer than the starvation bound (" +
                      std::to_string(run.policy.starvation_bound_seconds) + "s)"
       : fits ? std::string("within its team's nominal quota, room drained for it")
              : std::string("within its team's nominal quota, no node has room for it and "
                            "nothing may be evicted")) +
      ": room is kept for it on " + where;
  common::log::Debug(kComponent, "draining", {{"pod", p.key}, {"nodes", where}});
  std::lock_guard<std::mutex> lock(mu_);
  draining_[p.uid] = Draining{until, std::move(status)};
  drained_[holder] = Drained{std::move(held), until, fits ? fits_since : 0};
  ++stats_.drains;
  table_.BackOff(p.uid, run.now_ms + options_.drain_recheck_ms);
  return true;
}

std::optional<std::string> PreemptionController::TurnNotCome(Run& run, const Preemptor& p,
                                                             const Selection& chosen,
                                                             const Pod* known) {
  if (!run.planner->BorrowsAfter(p, chosen)) return std::nullopt;
  const std::optional<Pod> found = known == nullptr ? cluster_->FindPod(p.uid) : std::nullopt;
  const Pod* pod = known != nullptr ? known : found ? &*found : nullptr;
  if (pod == nullptr) return std::nullopt;  // known only from filter calls: judged by them
  if (std::optional<std::string> why =
          decisions::BorrowingBackOff(*cluster_, model::GangOf(*pod), run.now_ms)) {
    return why;
  }
  // What another team's pending pod would free by preempting its own team's pods: those, too,
  // it reclaims for (its lower-priority pods go, then what it lent comes back).
  const decisions::CandidateSet& candidates = run.planner->candidates();
  const NameId flavor = chosen.flavor;
  decisions::OwnerView view;
  view.hopeless = [&](const PendingPod& head) { return !run.planner->CouldEverRun(head, flavor); };
  view.preemptible = [&](const Team& team, const PendingPod& head) {
    ResourceList held;
    const NameId team_id = TeamNames().Intern(team.name);
    for (uint32_t i : candidates.OnFlavor(flavor)) {
      const Candidate& c = candidates.at(i);
      if (c.team != team_id || c.excluded) continue;
      if (!decisions::WithinTeamAllows(team.within_team, head.priority, head.created_ms, c.priority,
                                       c.created_ms)) {
        continue;
      }
      for (const model::ResourceAmount& r : ToResourceList(c.charged)) {
        held.Set(r.name, held.Get(r.name) + r.amount);
      }
    }
    return held;
  };
  return decisions::BorrowingHeldBack(
      *book_, *cluster_, *pod, flavor, run.now_ms,
      [this](std::string_view uid) { return StateOf(uid); }, view);
}

void PreemptionController::StartRound(Run& run, const PendingPod& pending, const Preemptor& p,
                                      const Selection& chosen) {
  Round round;
  round.preemptor = p;
  round.node_selector = pending.node_selector;
  round.placement = pending.placement;
  round.flavor = chosen.flavor;
  round.node = chosen.node;
  round.started_ms = run.now_ms;
  round.deadline_ms = run.now_ms + run.grace_s * 1000 + options_.round_slack_ms;
  round.victims = run.planner->Commit(p, chosen);
  run.started = true;
  NoteTakings(p, round.victims, run.now_ms);
  events_.RoundStarted(round, run.grace_s);
  {
    std::lock_guard<std::mutex> lock(mu_);
    table_.Start(std::move(round));
  }
  ++run.report->rounds_started;
  common::log::Info(kComponent, "preemption round",
                    {{"preemptor", p.key},
                     {"team", TeamNames().Name(p.team)},
                     {"flavor", FlavorNames().Name(chosen.flavor)},
                     {"node", chosen.node},
                     {"victims", static_cast<int64_t>(chosen.victims.size())}});
  EvictRound(run, p.uid);
}

void PreemptionController::NoteTakings(const Preemptor& p, const std::vector<RoundVictim>& victims,
                                       int64_t now_ms) {
  std::vector<Taking>& took = took_[HolderOf(p)];
  for (const RoundVictim& v : victims) {
    if (v.team == p.team || v.reason == decisions::PreemptionReason::kInTeamPriority) continue;
    auto known =
        std::find_if(took.begin(), took.end(), [&](const Taking& t) { return t.team == v.team; });
    if (known != took.end()) {
      known->at_ms = now_ms;
    } else {
      took.push_back(Taking{v.team, now_ms});
    }
  }
  if (took.empty()) took_.erase(HolderOf(p));
}

std::vector<model::NameId> PreemptionController::TookFrom(const std::string& holder,
                                                          int64_t now_ms) const {
  std::vector<model::NameId> teams;
  auto it = took_.find(holder);
  if (it == took_.end()) return teams;
  for (const Taking& t : it->second) {
    if (now_ms - t.at_ms < kNoRetaliationMs) teams.push_back(t.team);
  }
  return teams;
}

void PreemptionController::ForgetOldTakings(int64_t now_ms) {
  for (auto it = took_.begin(); it != took_.end();) {
    std::erase_if(it->second,
                  [&](const Taking& t) { return now_ms - t.at_ms >= kNoRetaliationMs; });
    it = it->second.empty() ? took_.erase(it) : std::next(it);
  }
}

void PreemptionController::FinishRun() {
  const int64_t now = clock_->NowMs();
  std::vector<std::string> set_aside;
  set_aside.reserve(set_aside_.size());
  for (const auto& [uid, aside] : set_aside_) set_aside.push_back(uid);
  std::lock_guard<std::mutex> lock(mu_);
  std::erase_if(draining_, [&](const auto& d) { return d.second.until_ms <= now; });
  std::erase_if(drained_, [&](const auto& d) { return d.second.until_ms <= now; });
  set_aside_seen_ = std::move(set_aside);
  ++stats_.runs;
  PublishLocked();
}

// ---- evicting one round ----

void PreemptionController::EvictRound(Run& run, const std::string& uid) {
  for (int pass = 0; pass <= pdb_.max_reselections(); ++pass) {
    if (!EvictDue(run, uid) || !ChooseAgain(run, uid)) return;
  }
}

bool PreemptionController::EvictDue(Run& run, const std::string& uid) {
  std::vector<RoundVictim> due;
  Preemptor preemptor;
  {
    std::lock_guard<std::mutex> lock(mu_);
    const Round* round = table_.Find(uid);
    if (round == nullptr || round->ended) return false;
    preemptor = round->preemptor;
    for (const RoundVictim& v : round->victims) {
      if (EvictionDue(v, run.now_ms)) due.push_back(v);
    }
  }
  for (size_t i = 0; i < due.size(); ++i) {
    const RoundVictim& v = due[i];
    if (!limiter_.TryTake(run.steady_ms)) break;  // the rest waits for the next run
    std::string detail;
    std::string paused_job;
    bool suspended_now = false;
    const bool last_of_gang =
        v.gang.empty() || std::none_of(due.begin() + static_cast<std::ptrdiff_t>(i) + 1, due.end(),
                                       [&](const RoundVictim& o) { return o.gang == v.gang; });
    const EvictOutcome outcome = Stop(run, v, last_of_gang, &detail, &paused_job, &suspended_now);
    Applied applied;
    {
      std::lock_guard<std::mutex> lock(mu_);
      applied = ApplyLocked(run, uid, preemptor, v, outcome, detail);
    }
    if (applied.round_gone) break;
    if (applied.evicted) {
      events_.VictimEvicted(v, run.grace_s, paused_job, run.now_ms);
      // It does not borrow again at once.
      cluster_->disruptions().Note(v.gang, run.now_ms, preemptor.uid);
      if (!paused_job.empty()) {
        std::lock_guard<std::mutex> lock(mu_);
        const PreemptionStats::Key key{TeamNames().Name(preemptor.team), TeamNames().Name(v.team),
                                       v.reason};
        ++stats_.paused_pods[key];
        if (suspended_now) ++stats_.jobs_paused[key];
      }
    }
    if (!applied.choose_again) continue;
    run.planner->ReturnVictims(applied.dropped, v.uid, outcome == EvictOutcome::kFailed);
    return true;
  }
  return false;
}

EvictOutcome PreemptionController::Stop(Run& run, const RoundVictim& v, bool last_of_gang,
                                        std::string* detail, std::string* paused_job,
                                        bool* suspended) {
  const std::shared_ptr<const model::JobControl> job =
      v.gang.empty() ? nullptr : cluster_->JobOf(v.gang);
  if (job == nullptr) return kube_->Evict(v.ns, v.name, v.uid, run.grace_s, detail);
  // A Job whose podFailurePolicy ignores evictions: each pod is evicted with the policy's grace
  // period (a suspension alone would give it only its own terminationGracePeriodSeconds), and
  // once the last of its pods in the round is, the Job is suspended so that it does not replace
  // them (its controller deletes only pods that are not terminating yet).
  *paused_job = job->display();
  if (job->ignores_disruption) {
    const EvictOutcome evicted = kube_->Evict(v.ns, v.name, v.uid, run.grace_s, detail);
    if (evicted != EvictOutcome::kEvicted && evicted != EvictOutcome::kNotFound) return evicted;
    if (!last_of_gang) return evicted;
  }
  // Suspended already (by this controller for another of its pods, or by anyone): the job's
  // controller deletes its pods. This controller's own patch counts until the informer shows it
  // (the job's suspension count reached it); after that the job's own flag decides — it may
  // have been resumed since.
  for (auto it = paused_.begin(); it != paused_.end();) {
    it = run.now_ms - it->second.at_ms > kPausedMemoryMs ? paused_.erase(it) : std::next(it);
  }
  if (auto it = paused_.find(job->workload);
      it != paused_.end() && job->suspensions() >= it->second.suspensions) {
    paused_.erase(it);
  }
  if (job->suspended || paused_.count(job->workload) > 0) return EvictOutcome::kEvicted;
  model::Labels annotations = {
      {model::kSuspendedByAnnotation, model::kSuspendedByValue},
      {model::kSuspendReasonAnnotation, std::string(decisions::ReasonName(v.reason))},
      {model::kSuspendedAtAnnotation, common::FormatTime(run.now_ms * 1000)},
      {model::kSuspensionsAnnotation, std::to_string(job->suspensions() + 1)},
  };
  if (std::optional<model::Pod> pod = cluster_->FindPod(v.uid); pod && pod->priority) {
    annotations[model::kSuspendedPriorityAnnotation] = std::to_string(*pod->priority);
  }
  switch (kube_->SetSuspended(*job, true, annotations, detail)) {
    case SuspendOutcome::kDone:
      paused_[job->workload] = {run.now_ms, job->suspensions() + 1};
      *suspended = true;
      common::log::Info(kComponent, "job suspended",
                        {{"job", job->display()},
                         {"reason", std::string(decisions::ReasonName(v.reason))},
                         {"suspensions", job->suspensions() + 1}});
      return EvictOutcome::kEvicted;
    case SuspendOutcome::kNotFound:
      return EvictOutcome::kNotFound;
    case SuspendOutcome::kFailed:
      return EvictOutcome::kFailed;
    case SuspendOutcome::kUnsupported:
      break;
  }
  paused_job->clear();
  if (job->ignores_disruption) return EvictOutcome::kEvicted;  // evicted above
  return kube_->Evict(v.ns, v.name, v.uid, run.grace_s, detail);
}

PreemptionController::Applied PreemptionController::ApplyLocked(Run& run, const std::string& uid,
                                                                const Preemptor& preemptor,
                                                                const RoundVictim& v,
                                                                EvictOutcome outcome,
                                                                const std::string& detail) {
  Applied out;
  Round* round = table_.Find(uid);
  if (round == nullptr) {
    out.round_gone = true;
    return out;
  }
  RoundVictim* mine = RoundTable::FindVictim(*round, v.uid);
  if (mine == nullptr) return out;  // dropped meanwhile
  switch (outcome) {
    case EvictOutcome::kEvicted:
      table_.MarkEvicted(*round, *mine, run.now_ms, run.grace_s);
      ++stats_.preemptions[PreemptionStats::Key{TeamNames().Name(preemptor.team),
                                                TeamNames().Name(v.team), v.reason}];
      ++run.report->evictions;
      out.evicted = true;
      common::log::Info(kComponent, "evicted",
                        {{"pod", v.ns + "/" + v.name},
                         {"team", TeamNames().Name(v.team)},
                         {"preemptor", preemptor.key},
                         {"preemptor_team", TeamNames().Name(preemptor.team)},
                         {"reason", std::string(ReasonName(v.reason))}});
      break;
    case EvictOutcome::kNotFound:
      table_.MarkGone(*mine);
      break;
    case EvictOutcome::kBlockedByPdb:
    case EvictOutcome::kFailed:
      RefusedLocked(run, *round, *mine, outcome == EvictOutcome::kBlockedByPdb, detail, &out);
      break;
  }
  return out;
}

void PreemptionController::RefusedLocked(Run& run, Round& round, RoundVictim& victim, bool by_pdb,
                                         const std::string& detail, Applied* out) {
  if (by_pdb) {
    ++stats_.evictions_blocked_by_pdb;
    ++run.report->blocked;
    pdb_.Block(victim.uid, run.now_ms);
    RoundTable::RefusedByPdb(round, victim, detail);
  } else {
    ++stats_.eviction_failures;
    ++victim.attempts;
    common::log::Warn(kComponent, "eviction failed",
                      {{"pod", victim.ns + "/" + victim.name}, {"error", detail}});
  }
  const PdbRetry::Decision decision = pdb_.OnRefused(round.victims, victim, by_pdb, run.now_ms);
  switch (decision.step) {
    case PdbRetry::Step::kRetryNextRun:
      break;
    case PdbRetry::Step::kRetryLater:
      victim.phase = VictimPhase::kBlocked;
      victim.retry_at_ms = decision.retry_at_ms;
      break;
    case PdbRetry::Step::kChooseAgain:
      out->dropped = table_.Drop(round, [&](const RoundVictim& x) {
        return std::find(decision.drop.begin(), decision.drop.end(), x.uid) != decision.drop.end();
      });
      out->choose_again = true;
      break;
  }
}

bool PreemptionController::ChooseAgain(Run& run, const std::string& uid) {
  Preemptor preemptor;
  NameId flavor = 0;
  Labels node_selector;
  std::shared_ptr<const PodPlacementSpec> placement;
  std::string node;
  {
    std::lock_guard<std::mutex> lock(mu_);
    const Round* round = table_.Find(uid);
    if (round == nullptr) return false;
    preemptor = round->preemptor;
    flavor = round->flavor;
    node_selector = round->node_selector;
    placement = round->placement;
    node = round->node;
  }
  // Choose again for this preemptor, on the same flavor, with what is already committed — its
  // own claim handed back first.
  Claim claim{preemptor.team,
              flavor,
              node,
              preemptor.request,
              /*quota=*/!book_->Find(uid).has_value(),
              preemptor.need};
  run.planner->Release(claim);
  Selection sel;
  if (preemptor.required_topology.empty()) {
    sel = run.planner->Choose(preemptor, flavor, node_selector, placement.get());
  } else {
    // Its victims were chosen for one domain as a whole: a set chosen again for one member
    // could lie outside it. What is evicted stays; a later run plans for the gang afresh.
    sel.explanation = "victims of a gang requiring one topology domain are not chosen again";
  }
  std::lock_guard<std::mutex> lock(mu_);
  Round* round = table_.Find(uid);
  if (round == nullptr) return false;
  if (sel.outcome == Selection::Outcome::kNoVictims) {
    KeepWhatIsEvictedLocked(run, *round, claim, sel);
    return false;
  }
  if (sel.outcome == Selection::Outcome::kVictims) {
    round->node = sel.node;
    table_.Add(*round, run.planner->TakeVictims(sel));
  } else if (!sel.node.empty()) {
    round->node = sel.node;
  }
  claim.node = round->node;
  run.planner->Hold(claim);
  return true;
}

void PreemptionController::KeepWhatIsEvictedLocked(Run& run, Round& round, const Claim& claim,
                                                   const Selection& sel) {
  // Nothing else may go: do not evict the rest for nothing; what is evicted stays.
  for (const RoundVictim& x :
       table_.Drop(round, [](const RoundVictim& x) { return x.phase == VictimPhase::kToEvict; })) {
    run.planner->Unfree(x);
  }
  common::log::Info(kComponent, "no other victims after a refused eviction",
                    {{"preemptor", round.preemptor.key}, {"why", sel.explanation}});
  if (round.victims.empty()) {
    table_.Abandon(round);
    return;
  }
  run.planner->Hold(claim);
  table_.MaybeNominate(round, run.now_ms);
}

}  // namespace taskgov::scheduler::actions
