#pragma once

// PreemptionController: preemption and reclaim for pods waiting for quota (DESIGN §3.6, §4).
// Each RunOnce() is a short pipeline over small parts, each with its own contract:
//  1. Follow the rounds in flight (RoundTable, round_table.h). A round is one preemptor's set of
//     victims; when they are gone the capacity is handed to the preemptor (a nomination); a
//     round ends when its preemptor is bound, deleted, or its victims or nomination fail.
//  2. Pick preemptors: the pending pods of every active team (ClusterState's queues, at most
//     max_preemptors_per_team each — StrictFIFO: only the head — and max_preemptors_per_run in
//     all, best-ranked first), skipping pods with a round, a reservation or a backoff, and pods
//     set aside because nothing could be done for them, until one of their team's flavors
//     changes (Options::unchanged_wait_ms; with a minimum runtime they are not skipped, their
//     decision is replayed). A run with no eviction token plans nothing.
//  3. Plan (VictimPlanner, victim_planner.h): for each preemptor, its team's flavors in order,
//     only on the nodes that accept it, over the cluster as it will be (pods going count as
//     freed, rounds in flight claim their preemptors' requests); VictimSelector chooses. A pod
//     nothing may be evicted for is backed off no_victims_backoff_ms, with why in
//     RunReport::no_preemption and the "no preemption" log line.
//  4. Evict, through KubeActions::Evict with the policy's grace period: first what is due in the
//     rounds in flight, then each new round as it starts. At most evictions_per_second (burst
//     eviction_burst: EvictionRateLimiter); a round starts only when the bucket holds all its
//     evictions. A refused eviction (PdbRetry, pdb_retry.h) is retried, or its victim is
//     replaced by others chosen at once. Events (EventWriter, event_writer.h): Preempting on the
//     preemptor when its round starts — so it is rate-limited with the evictions — and
//     Preempted on each victim evicted.
//  5. Publish, per waiting preemptor, a status for the filter's refusal reason ("reclaiming 4
//     nvidia.com/gpu from team-a, 2 pods terminating") and the counters (Stats).
//
// Wiring: Admission::SetPreemptionStatus([&](uid) { return controller.StatusFor(uid); }),
// Admission::SetPreemptorState([&](uid) { return controller.StateOf(uid); }) and
// ClusterState::SetPodGoneObserver([&](uid) { controller.OnPodGone(uid); }): when a victim goes,
// its preemptor is nominated at once (otherwise that happens at the next RunOnce, and another
// team's pod may take the capacity in between). The controller has no thread of its own: the
// process calls RunOnce from a Ticker every second, and sooner when poked (250 ms after the poke,
// so that kube-scheduler tries a burst of new pods first; extender/main.cc says why):
// ClusterState::SetPodWaitingObserver pokes it when a pod starts waiting, and the pod-gone
// observer when OnPodGone says a victim of a round in flight went.
//
// Thread-safety: RunOnce calls are serialised (run_mu_); the rate limiter, the PDB retry state,
// the planner and the selector belong to the run. The round table and the counters are guarded
// by mu_, never held across a KubeActions call. StatusFor and Stats may be called from any
// thread (webhook, metrics) and never wait for a run; StatusFor takes no lock (the statuses are
// published, common::Published), Stats takes mu_. OnPodGone (informer thread) takes mu_ only.

#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "scheduler/actions/event_writer.h"
#include "scheduler/actions/eviction_rate_limiter.h"
#include "scheduler/actions/pdb_retry.h"
#include "scheduler/actions/round.h"
#include "scheduler/actions/round_table.h"
#include "scheduler/actions/victim_planner.h"
#include "scheduler/cluster_api.h"
#include "scheduler/common/clock.h"
#include "scheduler/common/published.h"
#include "scheduler/decisions/preemption.h"
#include "scheduler/decisions/snapshot.h"
#include "scheduler/ledger/quota_book.h"
#include "scheduler/state/cluster_state.h"

namespace taskgov::scheduler::actions {

// Counters for metrics (a snapshot; monotonic unless said otherwise).
struct PreemptionStats {
  struct Key {
    std::string preemptor_team;
    std::string victim_team;
    decisions::PreemptionReason reason =
        decisions::PreemptionReason::kReclaim;  // metrics map it to their label
    bool operator<(const Key& o) const {
      return std::tie(preemptor_team, victim_team, reason) <
             std::tie(o.preemptor_team, o.victim_team, o.reason);
    }
  };
  // Victims stopped (evictions accepted by the API server, and pods of a job paused), by
  // preemptor team, victim team and reason.
  std::map<Key, uint64_t> preemptions;
  // Of those, the pods stopped by suspending their job (issue 35); the rest were evicted.
  std::map<Key, uint64_t> paused_pods;
  // Jobs suspended (one per job, however many of its pods were victims), by the same key.
  std::map<Key, uint64_t> jobs_paused;
  // Gauge: pods evicted and not yet gone ("preempted" state), by victim team.
  std::map<std::string, int64_t> preempted_pods;
  uint64_t runs = 0;
  uint64_t rounds_started = 0;
  uint64_t rounds_succeeded = 0;  // preemptor bound
  uint64_t rounds_cancelled = 0;  // preemptor deleted
  uint64_t rounds_abandoned = 0;  // victims stuck, nomination lost or expired
  uint64_t evictions_blocked_by_pdb = 0;
  uint64_t eviction_failures = 0;
  // Preemptors left for a later run by the eviction rate limit: their round needed more tokens
  // than the bucket held, or it held none (then they were not decided for at all).
  uint64_t rounds_deferred_by_rate_limit = 0;
  size_t rounds_in_flight = 0;  // gauge
  // Members of gangs whose quota hold expired before every member came, evicted so that no gang
  // runs partly (DESIGN §3.7).
  uint64_t gang_timeout_evictions = 0;
  // Runs that held nodes for a pod owed room to drain toward it, a starving one or one its
  // team's nominal quota holds (Drain).
  uint64_t drains = 0;
};

class PreemptionController {
 public:
  struct Options {
    double evictions_per_second = 5.0;
    int64_t eviction_burst = 20;
    int64_t pdb_retry_ms = 30'000;
    int64_t nomination_ttl_ms = 60'000;
    int64_t round_slack_ms = 60'000;
    // After a round failed — its victims did not go in time, or the capacity it freed was not
    // used by the preemptor (nomination expired, or taken by others first) — no new round for
    // that pod for this long: a pod the scheduler cannot place for other reasons (node
    // selectors, taints) must not make the controller evict again and again.
    int64_t retry_backoff_ms = 300'000;
    // A pending pod for which no victims exist now is not considered again for this long.
    int64_t no_victims_backoff_ms = 5'000;
    // Nor one that needs no remedy (it fits its quota and a node now: it waits only for the
    // scheduler), so that a backlog of those cannot keep pods that need a remedy from a turn.
    int64_t no_remedy_backoff_ms = 5'000;
    // After those backoffs, such a pod is considered again only once one of its team's flavors
    // changed (NodeCache::ChangeStamp: pods counted or gone, nodes, the policy), a round ended
    // or a PodDisruptionBudget's block did, or at the latest this long after it was set aside:
    // what it found depends on nothing else, so a cluster where nothing moves costs no
    // decisions (at 100,000 pods every decision gathered every running pod, and a backlog of
    // 5,000 waiting pods took a minute of runs to go through once). What lapses with time ends
    // it too: the pod starting to starve (or giving up), and with a policy
    // minimumRuntimeSeconds the first pod it protects on the run's flavors coming of age. With a
    // minimum runtime a pod set aside still takes its turns in rank order (a pod ranked below it
    // never gets a round ahead of it), but a decision that found no victims is repeated instead
    // of planned again while it holds (ReplaySetAside; nothing started or drained this run): a
    // day of 5,000 jobs ran 18 % faster, its rounds and disruptions alike.
    int64_t unchanged_wait_ms = 300'000;
    size_t max_preemptors_per_team = 16;
    // A run gathers the running pods of its preemptors' flavors once, then decides for each:
    // at 100,000 pods the gathering costs more than 64 decisions, so a run takes up to 256
    // (a backlog of 4,500 waiting pods is decided through in 18 runs, not 70).
    size_t max_preemptors_per_run = 256;
    // A starving pod's nodes (decisions::Starving, VictimPlanner::PlanDrain) are held this long
    // past each run that holds them; it is decided for again after drain_recheck_ms.
    int64_t drain_hold_ms = 3'000;
    int64_t drain_recheck_ms = 1'000;
    // A drained pod that fits now keeps its room this long (kube-scheduler's longest backoff and
    // some): past that, something else keeps it off the node, and the room is let go.
    int64_t drain_fit_hold_ms = 15'000;
    int max_eviction_attempts = 3;  // per victim, for errors other than a PDB refusal
    int max_reselections = 3;       // per round and run, after PDB refusals
  };

  // All pointers outlive the controller.
  PreemptionController(ledger::QuotaBook* book, state::ClusterState* cluster, KubeActions* kube,
                       const common::Clock* clock, Options options);
  ~PreemptionController();
  PreemptionController(const PreemptionController&) = delete;
  PreemptionController& operator=(const PreemptionController&) = delete;

  struct RunReport {
    size_t preemptors = 0;      // pending pods decided for
    size_t replayed = 0;        // of them, by repeating a decision that still holds (no victims)
    size_t rounds_started = 0;  // new rounds
    size_t evictions = 0;       // accepted evictions
    size_t blocked = 0;         // PDB refusals
    size_t gang_timeout_evictions = 0;
    // Pending pods nothing may be evicted for, by key, with why: the "no preemption" log line
    // (e.g. "no ml.p5.48xlarge node accepts team-a/job-0: 2 nodes with an untolerated taint
    // (nvidia.com/gpu=present:NoSchedule)"; one clause per flavor it may use, "; "-joined).
    std::map<std::string, std::string> no_preemption;
  };
  RunReport RunOnce();

  // The note for a waiting pod's refusal reason ("" when no round is in flight for it).
  [[nodiscard]] std::string StatusFor(std::string_view uid) const;
  // What this controller makes of a pending pod: a round in flight (kPreempting), backed off
  // after finding nothing to do for it (kSetAside), or neither yet (kUndecided). As of the last
  // run (or victim gone); lock-free, as StatusFor.
  [[nodiscard]] decisions::PreemptorState StateOf(std::string_view uid) const;
  [[nodiscard]] PreemptionStats Stats() const;

  // A pod was deleted or ended: if it was a victim, the round may hand over its capacity now.
  // True when it was a victim of a round in flight: a run may move that round on (the process
  // then runs one soon rather than at its next tick).
  bool OnPodGone(std::string_view uid);

 private:
  // The round table's and the planner's view of the ClusterState and the QuotaBook.
  class WorldImpl;

  // One run: its fixed inputs, its planner and its report.
  struct Run {
    const model::Policy& policy;
    int64_t now_ms = 0;     // wall time: compared with the pods' times and the rounds' deadlines
    int64_t steady_ms = 0;  // steady time: the eviction rate limiter's, which never steps back
    int64_t grace_s = 0;
    VictimPlanner* planner = nullptr;
    RunReport* report = nullptr;
    std::vector<model::NameId> drained;  // flavors where a starving pod's nodes are held (Drain)
    bool started = false;                // a round was started this run
  };
  // What one eviction attempt did to its round.
  struct Applied {
    bool round_gone = false;
    bool evicted = false;       // accepted: the victim's event is due
    bool choose_again = false;  // refused: `dropped` left the round, choose others
    std::vector<RoundVictim> dropped;
  };

  // A Warning event "Ungoverned" on each pod another scheduler bound in a team's namespace
  // (ClusterState::UngovernedPods), once per pod and leader.
  void ReportUngoverned();
  // Evicts the members of partly admitted gangs whose hold expired (QuotaBook::TakeExpiredGangs).
  void EvictTimedOutGangs(int64_t grace_s, RunReport* report);
  // Evicts the running members of `gang`; false when an eviction was refused (a budget, an API
  // error): the gang is tried again pdb_retry_ms later.
  bool EvictGangMembers(const ledger::QuotaBook::ExpiredGang& gang, int64_t grace_s,
                        RunReport* report);
  // The pipeline.
  RoundTable::Followed FollowRounds(int64_t now_ms);
  std::vector<state::PendingRef> PickPreemptors(const model::Policy& policy, int64_t now_ms);
  // Appends the team's preemptors to `out`. Returns until when the team may rest (every pod
  // looked at was set aside: the earliest end of those set-asides), or 0. `replayed` (a policy
  // minimumRuntimeSeconds): pods set aside are not skipped; they take their turns and DecideFor
  // replays their decision.
  int64_t PickFromTeam(const model::Team& team, model::NameId team_id, uint64_t stamp,
                       bool by_priority, bool replayed, int64_t now_ms,
                       std::vector<state::PendingRef>* out);
  // Until when (ms) pod `uid` stays set aside (nothing changed on its team's flavors since
  // `stamp`), or 0 when it is not (a stale entry is dropped).
  int64_t SetAsideUntil(const std::string& uid, uint64_t stamp, int64_t now_ms);
  // Sets `pending` aside after a decision that found nothing to do for it. With a policy
  // minimumRuntimeSeconds a pod set aside still takes its turns (in rank order, as backed off),
  // but only a decision that found no victims is kept, with `why`: it is replayed
  // (ReplaySetAside) instead of planned again while it holds.
  void SetAsideUnchanged(const Run& run, const state::PendingPod& pending,
                         std::string why = std::string());
  // With a policy minimumRuntimeSeconds: whether `pending`'s last decision (no victims) still
  // holds — nothing changed on its team's flavors, no pod they protect came of age, nothing
  // started or drained this run — and, if so, repeats its outcome.
  bool ReplaySetAside(Run& run, const state::PendingPod& pending);
  // The planner's inputs: the candidates (running, and going) on the flavors of `preemptors`'
  // teams and of the rounds in flight — a victim is charged on the flavor its preemptor takes —
  // and the rounds' claims.
  VictimPlanner::Inputs PlanInputs(const model::Policy& policy, int64_t now_ms,
                                   const std::vector<state::PendingRef>& preemptors,
                                   RoundTable::Followed followed);
  void DecideFor(Run& run, const state::PendingPod& pending);
  // Why `p` must not preempt `chosen` yet: once its victims went it would borrow, and the
  // filter's fair-share rule would hold it back for another team's pending pod. `pod`: p's pod
  // when the caller has it (else it is looked up, once it would borrow).
  [[nodiscard]] std::optional<std::string> TurnNotCome(Run& run, const decisions::Preemptor& p,
                                                       const decisions::Selection& chosen,
                                                       const model::Pod* pod = nullptr);
  // A pod owed room that nothing is evicted for — it starves (decisions::Starving), or its
  // team's nominal quota holds it but no node has room (other teams' pods within their quota
  // fill the nodes in pieces) — has the room it needs held for it: a starving or drained pod on
  // the node it fits now (`chosen` kFits), else on the nodes closest to room, which then drain
  // toward it; it is decided for again soon. One drain per flavor and run: the best-ranked such
  // pod's. False when it is owed nothing, its quota admits it nowhere (the filter's queue-order and
  // fair-share rules keep that quota for a starving pod instead) or every flavor it could drain
  // is taken. A drain stays on the nodes it holds (VictimPlanner::PlanDrain's `kept`); a
  // drained pod that fits now keeps its room there for drain_fit_hold_ms, until it binds.
  bool Drain(Run& run, const state::PendingPod& pending, const decisions::Preemptor& p,
             const model::Team& team, int members, const decisions::Selection& chosen);
  void StartRound(Run& run, const state::PendingPod& pending, const decisions::Preemptor& p,
                  const decisions::Selection& chosen);
  // took_: the teams a round's preemptor takes from (not its own, not by priority in its team);
  // the teams a holder took from within kNoRetaliationMs of `now_ms`; dropping what is older.
  void NoteTakings(const decisions::Preemptor& p, const std::vector<RoundVictim>& victims,
                   int64_t now_ms);
  [[nodiscard]] std::vector<model::NameId> TookFrom(const std::string& holder,
                                                    int64_t now_ms) const;
  void ForgetOldTakings(int64_t now_ms);
  void FinishRun();

  // Evicting one round: what is due, and after a refused eviction, other victims for it.
  void EvictRound(Run& run, const std::string& uid);
  // Evicts the round's due victims while tokens last; true when one was refused and dropped.
  bool EvictDue(Run& run, const std::string& uid);
  // Stops victim `v`: suspends its job when it has a pausable one (model/job_control.h; once per
  // job, its other pods go with it; `paused_job` names it, `suspended` says this call patched
  // it), else evicts it.
  // `last_of_gang`: no other victim of its gang is due after it in this pass.
  EvictOutcome Stop(Run& run, const RoundVictim& v, bool last_of_gang, std::string* detail,
                    std::string* paused_job, bool* suspended);
  Applied ApplyLocked(Run& run, const std::string& uid, const decisions::Preemptor& preemptor,
                      const RoundVictim& victim, EvictOutcome outcome, const std::string& detail);
  void RefusedLocked(Run& run, Round& round, RoundVictim& victim, bool by_pdb,
                     const std::string& detail, Applied* out);
  // Chooses other victims for the round; true when it goes on evicting (another pass).
  bool ChooseAgain(Run& run, const std::string& uid);
  // No other victims: the round keeps what is evicted (or ends without it).
  void KeepWhatIsEvictedLocked(Run& run, Round& round, const Claim& claim,
                               const decisions::Selection& sel);

  // With mu_ held.
  void PublishLocked();

  ledger::QuotaBook* const book_;
  state::ClusterState* const cluster_;
  KubeActions* const kube_;
  const common::Clock* const clock_;
  const Options options_;
  const std::unique_ptr<WorldImpl> world_;
  EventWriter events_;

  std::mutex run_mu_;  // serialises RunOnce
  // The run's: used by RunOnce only.
  EvictionRateLimiter limiter_;
  PdbRetry pdb_;
  decisions::VictimSelector selector_;
  // Timed-out gangs whose running members are still to be evicted, and when (steady ms).
  struct GangEviction {
    ledger::QuotaBook::ExpiredGang gang;
    int64_t due_ms = 0;
  };
  std::vector<GangEviction> gang_evictions_;
  std::set<std::string> reported_ungoverned_;  // uids
  // Pods set aside until their team's flavors change (Options::unchanged_wait_ms), by uid: the
  // ChangeStamp read before they were decided for, and until when at the latest.
  struct SetAside {
    uint64_t stamp = 0;
    int64_t until_ms = 0;
    std::string why;  // with a minimum runtime: why no victims were found
  };
  std::unordered_map<std::string, SetAside> set_aside_;
  // With a policy minimumRuntimeSeconds: when the first running pod of this run's flavors that
  // the minimum runtime protects comes of age (PlanInputs), which may change what can be done for
  // a pod set aside; max when none is protected.
  int64_t first_of_age_ms_ = std::numeric_limits<int64_t>::max();
  // This run's view of each active team, taken once by PickPreemptors: its flavors and their
  // ChangeStamp (read by SetAsideUnchanged and PlanInputs).
  struct TeamView {
    std::vector<model::NameId> flavors;
    uint64_t stamp = 0;
  };
  std::unordered_map<model::NameId, TeamView> teams_;
  // Teams whose every pending pod the last look found set aside, so that PickPreemptors passes
  // them by without reading their queue while nothing that could change that has changed: the
  // flavors' ChangeStamp, the queue's version (PendingQueues::Version), the earliest end of their
  // pods' set-asides; cleared with set_aside_ and on a new policy. At rest, a run costs the teams,
  // not the waiting pods.
  struct Resting {
    uint64_t stamp = 0;
    uint64_t version = 0;
    int64_t until_ms = 0;
  };
  std::unordered_map<model::NameId, Resting> resting_;
  model::PolicyPtr resting_policy_;  // the policy resting_ was found under
  uint64_t rounds_ended_ = 0;        // seen by the last run
  // Jobs this controller suspended, by workload, with when and the suspension count it wrote:
  // their other pods in a round go with them (no second patch) until the informer shows that
  // suspension. Run state.
  struct Paused {
    int64_t at_ms = 0;
    int64_t suspensions = 0;
  };
  std::map<std::string, Paused> paused_;
  static constexpr int64_t kPausedMemoryMs = 60'000;
  // Which teams each preemptor (its gang's key, or its uid) took capacity from by reclaim or fair
  // share, and when: for kNoRetaliationMs it is not their victim (DESIGN §3.6: no two teams
  // preempt each other back and forth). Run state.
  struct Taking {
    model::NameId team = 0;
    int64_t at_ms = 0;
  };
  std::unordered_map<std::string, std::vector<Taking>> took_;
  static constexpr int64_t kNoRetaliationMs = 300'000;

  mutable std::mutex mu_;
  RoundTable table_;  // guarded by mu_
  // The pods set aside (set_aside_'s keys) as of the last run, for the published states.
  std::vector<std::string> set_aside_seen_;  // guarded by mu_
  PreemptionStats stats_;                    // guarded by mu_; the round counters are table_'s
  // Pods whose nodes are held (Drain): until when, and their status. Guarded by mu_.
  struct Draining {
    int64_t until_ms = 0;
    std::string status;
  };
  std::unordered_map<std::string, Draining> draining_;
  // Where each drain holds room, by holder (a gang's workload: its members take turns at being
  // decided for): the nodes, until when, and since when its pod fits (0: it does not). Guarded
  // by mu_.
  struct Drained {
    std::vector<std::string> nodes;
    int64_t until_ms = 0;
    int64_t fits_since_ms = 0;
  };
  std::unordered_map<std::string, Drained> drained_;

  // Each waiting preemptor's status, and the pods backed off, republished under mu_ whenever
  // the table changes; read by filters without a lock.
  struct Statuses {
    std::unordered_map<std::string, std::string> text;
    std::unordered_set<std::string> set_aside;
  };
  common::Published<Statuses> status_;
};

}  // namespace taskgov::scheduler::actions
