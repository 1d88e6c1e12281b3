#include "scheduler/actions/preemption_controller.h"

#include <algorithm>
#include <limits>
#include <set>

#include "common/log.h"
#include "scheduler/decisions/placement.h"
#include "scheduler/model/pod_identity.h"
#include "scheduler/model/quantity.h"

namespace taskgov::scheduler {
namespace {

constexpr std::string_view kComponent = "preemption";

}  // namespace

// The round table's world: the ClusterState and the QuotaBook.
class PreemptionController::RoundWorldImpl final : public RoundWorld {
 public:
  RoundWorldImpl(QuotaBook* book, const ClusterState* cluster) : book_(book), cluster_(cluster) {}

  PodFacts FindPod(std::string_view uid) const override {
    const std::optional<Pod> pod = cluster_->FindPod(uid);
    if (!pod) return PodFacts{};
    return PodFacts{true, pod->terminal(), pod->deletion_unix_ms.has_value(), pod->bound()};
  }
  Reservation FindReservation(std::string_view uid) const override {
    const std::optional<scheduler::Reservation> r = book_->Find(uid);
    if (!r) return Reservation::kNone;
    return r->state == ReservationState::kBound ? Reservation::kBound : Reservation::kAssumed;
  }
  bool FilterPending(const Preemptor& p) const override {
    const std::vector<PendingPod> pending = cluster_->PendingAhead(
        p.team, std::numeric_limits<int32_t>::min(), std::numeric_limits<int64_t>::max(), "",
        /*by_priority=*/false, cluster_->pending_count(p.team));
    return std::any_of(pending.begin(), pending.end(),
                       [&](const PendingPod& x) { return x.uid == p.uid; });
  }
  bool Nominate(const Preemptor& p, NameId flavor, int64_t ttl_ms, std::string* why) override {
    PodMeta meta;
    meta.priority = p.priority;
    meta.created_ms = p.created_ms;
    std::variant<Charge, Refusal> r =
        book_->Assume(p.uid, p.team, flavor, p.request, Ledger::Mode::kBorrowing, ttl_ms, meta);
    if (const Refusal* refusal = std::get_if<Refusal>(&r)) {
      *why = refusal->Explain();
      return false;
    }
    return true;
  }

 private:
  QuotaBook* const book_;
  const ClusterState* const cluster_;
};

// The decision state of one flavor during a run.
struct PreemptionController::FlavorCtx {
  QuotaSim quota;
  FlavorNodes nodes;
  std::vector<std::shared_ptr<const NodePlacement>> placement;  // parallel to nodes.nodes
};

PreemptionController::PreemptionController(QuotaBook* book, ClusterState* cluster,
                                           KubeActions* kube, const common::Clock* clock,
                                           Options options)
    : book_(book),
      cluster_(cluster),
      kube_(kube),
      clock_(clock),
      options_(options),
      events_(kube),
      limiter_(options.evictions_per_second, options.eviction_burst, clock->NowMs()),
      world_(std::make_unique<RoundWorldImpl>(book, cluster)),
      table_(world_.get(), RoundTable::Options{options.nomination_ttl_ms, options.round_slack_ms,
                                               options.retry_backoff_ms}),
      status_(std::make_shared<const std::unordered_map<std::string, std::string>>()) {}

PreemptionController::~PreemptionController() = default;

// ---- the informer tee ----

void PreemptionController::Observer::OnPodUpsert(const Pod& pod) {
  c_->cluster_->OnPodUpsert(pod);
  if (pod.terminal()) c_->OnPodGone(pod.uid);
}
void PreemptionController::Observer::OnPodDelete(const Pod& last_known) {
  c_->cluster_->OnPodDelete(last_known);
  c_->OnPodGone(last_known.uid);
}
void PreemptionController::Observer::OnNodeUpsert(const Node& node) {
  c_->cluster_->OnNodeUpsert(node);
}
void PreemptionController::Observer::OnNodeDelete(const std::string& name) {
  c_->cluster_->OnNodeDelete(name);
}
void PreemptionController::Observer::OnNamespaceUpsert(const std::string& name,
                                                       const Labels& labels) {
  c_->cluster_->OnNamespaceUpsert(name, labels);
}
void PreemptionController::Observer::OnNamespaceDelete(const std::string& name) {
  c_->cluster_->OnNamespaceDelete(name);
}
void PreemptionController::Observer::OnLocalQueueUpsert(const std::string& ns,
                                                        const std::string& name,
                                                        const std::string& cluster_queue) {
  c_->cluster_->OnLocalQueueUpsert(ns, name, cluster_queue);
}
void PreemptionController::Observer::OnLocalQueueDelete(const std::string& ns,
                                                        const std::string& name) {
  c_->cluster_->OnLocalQueueDelete(ns, name);
}
void PreemptionController::Observer::OnPodGroupUpsert(const std::string& ns,
                                                      const std::string& name,
                                                      const std::string& queue,
                                                      int64_t min_member) {
  c_->cluster_->OnPodGroupUpsert(ns, name, queue, min_member);
}
void PreemptionController::Observer::OnPodGroupDelete(const std::string& ns,
                                                      const std::string& name) {
  c_->cluster_->OnPodGroupDelete(ns, name);
}
void PreemptionController::Observer::OnSynced(ObjectKind kind) { c_->cluster_->OnSynced(kind); }

// ---- rounds ----

void PreemptionController::OnPodGone(std::string_view uid) {
  std::lock_guard<std::mutex> lock(mu_);
  if (table_.OnPodGone(uid, clock_->NowMs())) PublishLocked();
}

void PreemptionController::PublishLocked() {
  auto map =
      std::make_shared<const std::unordered_map<std::string, std::string>>(table_.Statuses());
  std::lock_guard<std::mutex> lock(status_mu_);
  status_ = std::move(map);
}

std::string PreemptionController::StatusFor(std::string_view uid) const {
  std::shared_ptr<const std::unordered_map<std::string, std::string>> status;
  {
    std::lock_guard<std::mutex> lock(status_mu_);
    status = status_;
  }
  auto it = status->find(std::string(uid));
  return it == status->end() ? std::string() : it->second;
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

// ---- the run ----

PreemptionController::RunReport PreemptionController::RunOnce() {
  std::lock_guard<std::mutex> run_lock(run_mu_);
  RunReport report;
  const int64_t now = clock_->NowMs();
  const PolicyPtr policy = book_->ledger().policy();
  const int64_t grace_s = policy->preemption.grace_period_seconds;

  // 1. Rounds in flight; what they claim.
  RoundTable::Followed followed;
  {
    std::lock_guard<std::mutex> lock(mu_);
    followed = table_.Follow(now);
    for (auto it = pdb_blocked_until_.begin(); it != pdb_blocked_until_.end();) {
      it = it->second <= now ? pdb_blocked_until_.erase(it) : std::next(it);
    }
  }

  // 2. Preemptors: pending pods of active teams, best-ranked first.
  const bool by_priority = policy->task_prioritization == TaskPrioritization::kTaskRanking;
  std::vector<PendingPod> preemptors;
  for (const Team& team : policy->teams) {
    if (!team.active || team.flavors.empty()) continue;
    const NameId team_id = TeamNames().Intern(team.name);
    // Every pending pod ranks ahead of the last possible position.
    // Look further than the per-team limit: pods set aside (backoff, rounds in flight) do not
    // take the places of those behind them.
    std::vector<PendingPod> pending = cluster_->PendingAhead(
        team_id, std::numeric_limits<int32_t>::min(), std::numeric_limits<int64_t>::max(), "",
        by_priority, options_.max_preemptors_per_team * 8);
    size_t taken = 0;
    for (PendingPod& p : pending) {
      if (taken == options_.max_preemptors_per_team) break;
      bool skip = book_->Find(p.uid).has_value();
      {
        std::lock_guard<std::mutex> lock(mu_);
        skip = skip || table_.Has(p.uid) || table_.BackedOff(p.uid);
      }
      if (!skip) {
        preemptors.push_back(std::move(p));
        ++taken;
      }
      // StrictFIFO: nobody passes the head of the queue.
      if (team.queueing == QueueingStrategy::kStrictFIFO) break;
    }
  }
  std::sort(preemptors.begin(), preemptors.end(), [&](const PendingPod& a, const PendingPod& b) {
    if (by_priority && a.priority != b.priority) return a.priority > b.priority;
    if (a.created_ms != b.created_ms) return a.created_ms < b.created_ms;
    return a.uid < b.uid;
  });
  if (preemptors.size() > options_.max_preemptors_per_run) {
    preemptors.resize(options_.max_preemptors_per_run);
  }
  if (preemptors.empty() && !followed.evictions_due) {
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.runs;
    PublishLocked();
  } else {
    Decide(*policy, now, grace_s, preemptors, followed.claims, followed.committed, &report);
  }
  return report;
}

void PreemptionController::Decide(const Policy& policy, int64_t now, int64_t grace_s,
                                  const std::vector<PendingPod>& preemptors,
                                  const std::vector<Claim>& claims,
                                  const std::set<std::string>& committed, RunReport* report) {
  // 3. Candidates: running pods of teams; terminating ones count as freed.
  std::unordered_map<std::string, int64_t> blocked;
  std::set<std::string> evicted;
  {
    std::lock_guard<std::mutex> lock(mu_);
    blocked = pdb_blocked_until_;
    evicted = table_.EvictedUids();
  }
  std::vector<Candidate> running;
  std::vector<Candidate> terminating;
  cluster_->ForEachBoundPod([&](const Pod& pod, NameId team, const ResourceList& request) {
    if (team == kNoTeam) return;
    std::optional<Reservation> r = book_->Find(pod.uid);
    if (!r || r->state != ReservationState::kBound) return;
    Candidate c;
    c.uid = pod.uid;
    c.ns = pod.namespace_;
    c.name = pod.name;
    c.team = team;
    c.flavor = r->charge.flavor;
    c.priority = ResolvePriority(policy, pod);
    c.created_ms = pod.creation_unix_ms;
    c.started_ms = pod.start_unix_ms.value_or(pod.creation_unix_ms);
    c.admitted_ms = r->meta.admitted_ms != 0 ? r->meta.admitted_ms : c.started_ms;
    c.node = pod.node_name;
    c.occupies = ToIdAmounts(request);
    for (uint8_t i = 0; i < r->charge.count; ++i) {
      c.charged.emplace_back(r->charge.items[i].resource, r->charge.items[i].amount);
    }
    c.gang = GangOf(pod);
    auto b = blocked.find(pod.uid);
    c.pdb_blocked = b != blocked.end() && b->second > now;
    const bool going = pod.deletion_unix_ms.has_value() || evicted.count(pod.uid) > 0 ||
                       committed.count(pod.uid) > 0;
    (going ? terminating : running).push_back(std::move(c));
  });
  CandidateSet set(std::move(running));

  // Per-flavor state, built on first use: the ledger minus what is terminating, plus claims.
  std::vector<Ledger::CellUsage> cells;
  bool have_cells = false;
  std::unordered_map<NameId, FlavorCtx> ctxs;
  auto ctx_of = [&](NameId flavor) -> FlavorCtx& {
    auto it = ctxs.find(flavor);
    if (it != ctxs.end()) return it->second;
    if (!have_cells) {
      cells = book_->ledger().Cells();
      have_cells = true;
    }
    FlavorCtx& ctx = ctxs[flavor];
    ctx.quota = QuotaSim::FromCells(policy, flavor, cells);
    ctx.nodes.flavor = flavor;
    std::vector<std::pair<std::string, NodeView>> nodes = cluster_->NodesOfFlavor(flavor);
    std::sort(nodes.begin(), nodes.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    for (auto& [name, view] : nodes) {
      NodeState n;
      n.name = name;
      n.schedulable = view.schedulable;
      n.allocatable = ToIdAmounts(view.allocatable);
      n.used = ToIdAmounts(view.used);
      ctx.nodes.Add(std::move(n));
      ctx.placement.push_back(std::move(view.placement));
    }
    for (const Candidate& t : terminating) {
      if (t.flavor != flavor) continue;
      if (int row = ctx.quota.Row(t.team); row >= 0) {
        ctx.quota.Remove(row, ctx.quota.ToSlots(t.charged));
      }
      ctx.nodes.Free(t.node, t.occupies);
    }
    for (const Claim& claim : claims) {
      if (claim.flavor != flavor) continue;
      if (int row = ctx.quota.Row(claim.team); row >= 0 && claim.quota) {
        ctx.quota.Add(row, ctx.quota.ToSlots(claim.request));
      }
      ctx.nodes.Take(claim.node, ToIdAmounts(claim.request));
    }
    return ctx;
  };
  auto claim = [&](NameId team, NameId flavor, const std::string& node, const ResourceList& request,
                   bool quota, int sign) {
    FlavorCtx& ctx = ctx_of(flavor);
    if (int row = ctx.quota.Row(team); row >= 0 && quota) {
      const QuotaSim::Amounts amounts = ctx.quota.ToSlots(request);
      sign > 0 ? ctx.quota.Add(row, amounts) : ctx.quota.Remove(row, amounts);
    }
    sign > 0 ? ctx.nodes.Take(node, ToIdAmounts(request))
             : ctx.nodes.Free(node, ToIdAmounts(request));
  };
  // A victim chosen: it counts as freed from now on (sign −1 undoes that).
  auto commit_victim = [&](const RoundVictim& v, int sign) {
    FlavorCtx& ctx = ctx_of(v.flavor);
    if (int row = ctx.quota.Row(v.team); row >= 0) {
      const QuotaSim::Amounts amounts = ctx.quota.ToSlots(v.charged);
      sign > 0 ? ctx.quota.Remove(row, amounts) : ctx.quota.Add(row, amounts);
    }
    sign > 0 ? ctx.nodes.Free(v.node, v.occupies) : ctx.nodes.Take(v.node, v.occupies);
  };
  // The input of a decision for `p` on `flavor`, on the nodes `eligible` marks.
  auto input = [&](const Preemptor& p, NameId flavor, const std::vector<uint8_t>& eligible) {
    FlavorCtx& ctx = ctx_of(flavor);
    SelectionInput in;
    in.policy = &policy;
    in.preemptor = &p;
    in.quota = &ctx.quota;
    in.nodes = &ctx.nodes;
    in.candidates = &set;
    in.now_ms = now;
    in.eligible = &eligible;
    return in;
  };
  auto select = [&](const Preemptor& p, NameId flavor, const std::vector<uint8_t>& eligible,
                    Selection* out) { *out = selector_.Select(input(p, flavor, eligible)); };
  auto victims_from = [&](const Selection& sel) {
    std::vector<RoundVictim> out;
    for (const Selection::Victim& chosen : sel.victims) {
      Candidate& c = set.at(chosen.candidate);
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
      out.push_back(std::move(v));
    }
    return out;
  };
  auto candidate_index = [&](const std::string& uid) -> int64_t {
    for (size_t i = 0; i < set.size(); ++i) {
      if (set.at(static_cast<uint32_t>(i)).uid == uid) return static_cast<int64_t>(i);
    }
    return -1;
  };

  // Evicts what is due in one round; after a PDB refusal, chooses other victims for it.
  auto evict_round = [&](const std::string& uid) {
    for (int pass = 0; pass <= options_.max_reselections; ++pass) {
      std::vector<RoundVictim> due;
      Preemptor preemptor;
      NameId flavor = 0;
      Labels node_selector;
      std::shared_ptr<const PodPlacementSpec> placement;
      {
        std::lock_guard<std::mutex> lock(mu_);
        const Round* round = table_.Find(uid);
        if (round == nullptr || round->ended) return;
        preemptor = round->preemptor;
        flavor = round->flavor;
        node_selector = round->node_selector;
        placement = round->placement;
        for (const RoundVictim& v : round->victims) {
          if (EvictionDue(v, now)) due.push_back(v);
        }
      }
      bool reselect = false;
      for (const RoundVictim& v : due) {
        if (!limiter_.TryTake(now)) break;  // the rest waits for the next run
        std::string detail;
        const EvictOutcome outcome = kube_->Evict(v.ns, v.name, v.uid, grace_s, &detail);
        bool evicted = false;
        std::vector<RoundVictim> dropped;
        {
          std::lock_guard<std::mutex> lock(mu_);
          Round* found = table_.Find(uid);
          if (found == nullptr) break;
          Round& round = *found;
          RoundVictim* mine = RoundTable::FindVictim(round, v.uid);
          if (mine == nullptr) continue;
          switch (outcome) {
            case EvictOutcome::kEvicted: {
              table_.MarkEvicted(round, *mine, now, grace_s);
              ++stats_.preemptions[PreemptionStats::Key{TeamNames().Name(preemptor.team),
                                                        TeamNames().Name(v.team), v.reason}];
              ++report->evictions;
              evicted = true;
              common::log::Info(kComponent, "evicted",
                                {{"pod", v.ns + "/" + v.name},
                                 {"team", TeamNames().Name(v.team)},
                                 {"preemptor", preemptor.key},
                                 {"preemptor_team", TeamNames().Name(preemptor.team)},
                                 {"reason", std::string(ReasonName(v.reason))}});
              break;
            }
            case EvictOutcome::kNotFound:
              table_.MarkGone(*mine);
              break;
            case EvictOutcome::kBlockedByPdb:
            case EvictOutcome::kFailed: {
              const bool pdb = outcome == EvictOutcome::kBlockedByPdb;
              if (pdb) {
                ++stats_.evictions_blocked_by_pdb;
                ++report->blocked;
                pdb_blocked_until_[v.uid] = now + options_.pdb_retry_ms;
                RoundTable::RefusedByPdb(round, v, detail);
              } else {
                ++stats_.eviction_failures;
                ++mine->attempts;
                common::log::Warn(kComponent, "eviction failed",
                                  {{"pod", v.ns + "/" + v.name}, {"error", detail}});
                if (mine->attempts < options_.max_eviction_attempts) break;  // next run
              }
              // Half a gang is worth nothing: once part of it is gone, finish it later.
              bool gang_started = false;
              if (!v.gang.empty()) {
                for (const RoundVictim& x : round.victims) {
                  gang_started =
                      gang_started ||
                      (x.gang == v.gang && x.uid != v.uid &&
                       (x.phase == VictimPhase::kEvicted || x.phase == VictimPhase::kGone));
                }
              }
              if (gang_started) {
                mine->phase = VictimPhase::kBlocked;
                mine->retry_at_ms = now + options_.pdb_retry_ms;
                break;
              }
              // Drop it (and its gang's members not evicted yet) and choose again.
              dropped = table_.Drop(round, [&](const RoundVictim& x) {
                return x.uid == v.uid ||
                       (!v.gang.empty() && x.gang == v.gang && x.phase == VictimPhase::kToEvict);
              });
              reselect = true;
              break;
            }
          }
        }
        if (evicted) events_.VictimEvicted(v, grace_s);
        for (const RoundVictim& d : dropped) {
          commit_victim(d, -1);
          if (int64_t i = candidate_index(d.uid); i >= 0) {
            Candidate& c = set.at(static_cast<uint32_t>(i));
            c.excluded = false;
            c.pdb_blocked = c.pdb_blocked || d.uid == v.uid;
            if (outcome == EvictOutcome::kFailed && d.uid == v.uid) c.excluded = true;
          }
        }
        if (reselect) break;
      }
      if (!reselect) return;
      // Choose again for this preemptor, on the same flavor, with what is already committed.
      std::string node;
      {
        std::lock_guard<std::mutex> lock(mu_);
        const Round* round = table_.Find(uid);
        if (round == nullptr) return;
        node = round->node;
      }
      const bool quota_claimed = !book_->Find(uid).has_value();
      claim(preemptor.team, flavor, node, preemptor.request, quota_claimed, -1);
      NodeEligibility eligibility;
      eligibility.Compute(node_selector, placement.get(), ctx_of(flavor).placement);
      Selection sel;
      select(preemptor, flavor, eligibility.accepts, &sel);
      std::lock_guard<std::mutex> lock(mu_);
      Round* found = table_.Find(uid);
      if (found == nullptr) return;
      Round& round = *found;
      if (sel.outcome == Selection::Outcome::kNoVictims) {
        // Nothing else may go: do not evict the rest for nothing; what is evicted stays.
        for (const RoundVictim& x : table_.Drop(
                 round, [](const RoundVictim& x) { return x.phase == VictimPhase::kToEvict; })) {
          commit_victim(x, -1);
        }
        common::log::Info(kComponent, "no other victims after a refused eviction",
                          {{"preemptor", preemptor.key}, {"why", sel.explanation}});
        if (round.victims.empty()) {
          table_.Abandon(round);
          return;
        }
        claim(preemptor.team, flavor, node, preemptor.request, quota_claimed, +1);
        table_.MaybeNominate(round, now);
        return;
      }
      if (sel.outcome == Selection::Outcome::kVictims) {
        round.node = sel.node;
        std::vector<RoundVictim> more = victims_from(sel);
        for (const RoundVictim& v : more) commit_victim(v, +1);
        table_.Add(round, std::move(more));
      } else if (!sel.node.empty()) {
        round.node = sel.node;
      }
      claim(preemptor.team, flavor, round.node, preemptor.request, quota_claimed, +1);
    }
  };

  // 4. Rounds in flight with evictions due (rate-limited or to retry).
  std::vector<std::string> in_flight;
  {
    std::lock_guard<std::mutex> lock(mu_);
    in_flight = table_.InFlight();
  }
  for (const std::string& uid : in_flight) evict_round(uid);

  // 5. Decide for each preemptor.
  std::vector<std::pair<NameId, NodeEligibility>> eligibility;  // per usable flavor, reused
  for (const PendingPod& pending : preemptors) {
    const Team* team = policy.FindTeam(TeamNames().Name(pending.team));
    if (team == nullptr) continue;
    ++report->preemptors;
    Preemptor p;
    p.uid = pending.uid;
    p.key = pending.key;
    p.team = pending.team;
    p.priority = pending.priority;
    p.created_ms = pending.created_ms;
    p.request = pending.request;
    // The flavors it may use, each with the nodes that accept it (taints, nodeSelector, required
    // affinity), judged once here for every decision below. A flavor none of whose nodes accept
    // it is skipped: evicting there would free room it cannot use.
    std::string why;
    size_t usable = 0;
    for (const FlavorQuota& fq : team->flavors) {
      if (!policy.FlavorAllows(fq.flavor, pending.node_selector)) continue;  // not its flavor
      const NameId flavor = FlavorNames().Intern(fq.flavor);
      const FlavorCtx& ctx = ctx_of(flavor);
      if (eligibility.size() == usable) eligibility.emplace_back();
      std::pair<NameId, NodeEligibility>& e = eligibility[usable];
      e.first = flavor;
      e.second.Compute(pending.node_selector, pending.placement.get(), ctx.placement);
      if (!ctx.placement.empty() && e.second.accepted == 0) {
        why += (why.empty() ? "" : "; ") + e.second.Explain(fq.flavor, p.key);
        continue;
      }
      ++usable;
    }
    // Fits somewhere now (or once what terminates is gone): claim it, evict nothing.
    bool fits = false;
    for (size_t i = 0; i < usable && !fits; ++i) {
      const auto& [flavor, nodes] = eligibility[i];
      std::string node;
      if (VictimSelector::FitsNow(input(p, flavor, nodes.accepts), &node)) {
        claim(p.team, flavor, node, p.request, true, +1);
        fits = true;
      }
    }
    if (fits) continue;
    Selection chosen;
    for (size_t i = 0; i < usable; ++i) {
      Selection sel;
      select(p, eligibility[i].first, eligibility[i].second.accepts, &sel);
      if (sel.outcome == Selection::Outcome::kVictims) {
        chosen = std::move(sel);
        break;
      }
      why += (why.empty() ? "" : "; ") + sel.explanation;
    }
    if (chosen.outcome != Selection::Outcome::kVictims) {
      // Nothing can be evicted for it now: set it aside for a while, so that pods ranked below
      // it are considered too (a run looks at a bounded number of preemptors).
      common::log::Debug(kComponent, "no preemption", {{"pod", p.key}, {"why", why}});
      report->no_preemption[p.key] = why;
      std::lock_guard<std::mutex> lock(mu_);
      table_.BackOff(p.uid, now + options_.no_victims_backoff_ms);
      continue;
    }
    if (!limiter_.Allows(now, static_cast<double>(chosen.victims.size()))) {
      std::lock_guard<std::mutex> lock(mu_);
      ++stats_.rounds_deferred_by_rate_limit;
      continue;
    }
    Round round;
    round.preemptor = p;
    round.node_selector = pending.node_selector;
    round.placement = pending.placement;
    round.flavor = chosen.flavor;
    round.node = chosen.node;
    round.started_ms = now;
    round.deadline_ms = now + grace_s * 1000 + options_.round_slack_ms;
    round.victims = victims_from(chosen);
    for (const RoundVictim& v : round.victims) commit_victim(v, +1);
    claim(p.team, chosen.flavor, chosen.node, p.request, true, +1);
    events_.RoundStarted(round, grace_s);
    {
      std::lock_guard<std::mutex> lock(mu_);
      table_.Start(std::move(round));
    }
    ++report->rounds_started;
    common::log::Info(kComponent, "preemption round",
                      {{"preemptor", p.key},
                       {"team", TeamNames().Name(p.team)},
                       {"flavor", FlavorNames().Name(chosen.flavor)},
                       {"node", chosen.node},
                       {"victims", static_cast<int64_t>(chosen.victims.size())}});
    evict_round(p.uid);
  }

  std::lock_guard<std::mutex> lock(mu_);
  ++stats_.runs;
  PublishLocked();
}

}  // namespace taskgov::scheduler
