#pragma once

// PreemptionController: preemption and reclaim for pods waiting for quota (DESIGN §4, issue 8).
//
// Every RunOnce():
//  1. Follows the rounds in flight. A round is one preemptor's set of victims. A victim is gone
//     when its pod is deleted or terminal. When every victim of a round is gone, the capacity is
//     handed to the preemptor: an assumed reservation for it in the QuotaBook (a "nomination",
//     expiring after nomination_ttl_ms), so that pods of other teams cannot take what was freed
//     for it before the scheduler retries it; the filter replaces that reservation with its own
//     when the pod comes back. A round ends when its preemptor is bound (success), deleted, its
//     nomination expired unused, or its victims have not gone within the grace period plus
//     round_slack_ms (abandoned).
//  2. Takes the pending pods of every active team (ClusterState's queues, best-ranked first),
//     skipping pods with a round in flight or a reservation, and decides for each with
//     VictimSelector, on the team's flavors in order — only on the nodes that accept the pod
//     (its tolerations against their taints, its nodeSelector and required node affinity against
//     their labels: placement.h), judged once per pod and flavor. A flavor none of whose nodes
//     accept the pod is skipped, with the reason in RunReport::no_preemption and the
//     "no preemption" log line; victims are only chosen where the pod can then run (quota may be
//     reclaimed from pods anywhere on the flavor). Decisions see the cluster as it will be:
//     pods already terminating (evicted, or deleted with a grace period) count as freed, and
//     every preemptor with a round or a fit this run claims its request (quota, and room on its
//     node) — so no second round evicts for capacity that is already on its way. A pod whose
//     round failed (victims stuck, freed capacity unused) waits retry_backoff_ms first.
//  3. Evicts through KubeActions::Evict with the policy's grace period, at most
//     evictions_per_second (token bucket, burst eviction_burst; a round whose victims exceed the
//     tokens waits unless the bucket is full), and records an event on each victim naming the
//     preemptor, its team and the reason (InTeamPriority, Reclaim, FairShare). A
//     PodDisruptionBudget refusal marks the victim as blocked for pdb_retry_ms and chooses other
//     victims for the same round at once (a gang member refused after others of its gang were
//     evicted is retried instead: half a gang is worth nothing); failures are retried.
//     When a round starts, one event (reason Preempting) is recorded on the preemptor itself,
//     naming what is freed for it, from which teams, why and how many pods go ("taskgov is
//     reclaiming 4 nvidia.com/gpu on ml.p5.48xlarge from team-a (Reclaim): evicting 2 pods with a
//     120s grace period"): kube-scheduler's own filters refuse the pod while nodes are full, so
//     the filter's refusal reason alone would not reach the user. A round starts only when the
//     token bucket holds its evictions, so these events are rate-limited with the victims'.
//  4. Publishes, per waiting preemptor, a status for the filter's refusal reason
//     ("reclaiming 4 nvidia.com/gpu from team-a, 2 pods terminating") and counters.
//
// Wiring: Admission::SetPreemptionStatus([&](uid) { return controller.StatusFor(uid); }). Feed
// the informers to observer() instead of the ClusterState: it forwards every event to the
// ClusterState and, when a victim goes, nominates its preemptor at once (otherwise that happens
// at the next RunOnce, and another team's pod may take the capacity in between).
//
// Thread-safety: RunOnce calls are serialised (run_mu_); the round table is guarded by mu_,
// never held across a KubeActions call; StatusFor and Stats may be called from any thread
// (webhook, metrics) and never wait for a run. The controller has no thread of its own: the
// process calls RunOnce from its housekeeping ticker.

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/clock.h"
#include "scheduler/actions/event_writer.h"
#include "scheduler/actions/eviction_rate_limiter.h"
#include "scheduler/actions/round.h"
#include "scheduler/actions/round_table.h"
#include "scheduler/cluster_api.h"
#include "scheduler/decisions/preemption.h"
#include "scheduler/ledger/quota_book.h"
#include "scheduler/state/cluster_state.h"

namespace taskgov::scheduler {

// Counters for metrics (a snapshot; monotonic unless said otherwise).
struct PreemptionStats {
  struct Key {
    std::string preemptor_team;
    std::string victim_team;
    PreemptionReason reason = PreemptionReason::kReclaim;  // metrics map it to their label
    bool operator<(const Key& o) const {
      return std::tie(preemptor_team, victim_team, reason) <
             std::tie(o.preemptor_team, o.victim_team, o.reason);
    }
  };
  // Evictions accepted by the API server, by preemptor team, victim team and reason.
  std::map<Key, uint64_t> preemptions;
  // Gauge: pods evicted and not yet gone ("preempted" state), by victim team.
  std::map<std::string, int64_t> preempted_pods;
  uint64_t runs = 0;
  uint64_t rounds_started = 0;
  uint64_t rounds_succeeded = 0;  // preemptor bound
  uint64_t rounds_cancelled = 0;  // preemptor deleted
  uint64_t rounds_abandoned = 0;  // victims stuck, nomination lost or expired
  uint64_t evictions_blocked_by_pdb = 0;
  uint64_t eviction_failures = 0;
  uint64_t rounds_deferred_by_rate_limit = 0;
  size_t rounds_in_flight = 0;  // gauge
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
    size_t max_preemptors_per_team = 16;
    size_t max_preemptors_per_run = 64;
    int max_eviction_attempts = 3;  // per victim, for errors other than a PDB refusal
    int max_reselections = 3;       // per round and run, after PDB refusals
  };

  // All pointers outlive the controller.
  PreemptionController(QuotaBook* book, ClusterState* cluster, KubeActions* kube,
                       const common::Clock* clock, Options options);
  ~PreemptionController();
  PreemptionController(const PreemptionController&) = delete;
  PreemptionController& operator=(const PreemptionController&) = delete;

  struct RunReport {
    size_t preemptors = 0;      // pending pods decided for
    size_t rounds_started = 0;  // new rounds
    size_t evictions = 0;       // accepted evictions
    size_t blocked = 0;         // PDB refusals
    // Pending pods nothing may be evicted for, by key, with why: the "no preemption" log line
    // (e.g. "no ml.p5.48xlarge node accepts team-a/job-0: 2 nodes with an untolerated taint
    // (nvidia.com/gpu=present:NoSchedule)"; one clause per flavor it may use, "; "-joined).
    std::map<std::string, std::string> no_preemption;
  };
  RunReport RunOnce();

  // The note for a waiting pod's refusal reason ("" when no round is in flight for it).
  [[nodiscard]] std::string StatusFor(std::string_view uid) const;
  [[nodiscard]] PreemptionStats Stats() const;

  // Forwards informer events to the ClusterState; see the header comment.
  [[nodiscard]] ClusterObserver* observer() { return &observer_; }
  // A pod was deleted or ended: if it was a victim, the round may hand over its capacity now.
  void OnPodGone(std::string_view uid);

 private:
  struct FlavorCtx;
  class Observer final : public ClusterObserver {
   public:
    explicit Observer(PreemptionController* c) : c_(c) {}
    void OnPodUpsert(const Pod& pod) override;
    void OnPodDelete(const Pod& last_known) override;
    void OnNodeUpsert(const Node& node) override;
    void OnNodeDelete(const std::string& name) override;
    void OnNamespaceUpsert(const std::string& name, const Labels& labels) override;
    void OnNamespaceDelete(const std::string& name) override;
    void OnLocalQueueUpsert(const std::string& ns, const std::string& name,
                            const std::string& cluster_queue) override;
    void OnLocalQueueDelete(const std::string& ns, const std::string& name) override;
    void OnPodGroupUpsert(const std::string& ns, const std::string& name, const std::string& queue,
                          int64_t min_member) override;
    void OnPodGroupDelete(const std::string& ns, const std::string& name) override;
    void OnSynced(ObjectKind kind) override;

   private:
    PreemptionController* c_;
  };

  class RoundWorldImpl;

  // With mu_ held.
  void PublishLocked();

  // Steps 2 (the decisions) and 3 (the evictions) of RunOnce, after the rounds are followed.
  void Decide(const Policy& policy, int64_t now, int64_t grace_s,
              const std::vector<PendingPod>& preemptors, const std::vector<Claim>& claims,
              const std::set<std::string>& committed, RunReport* report);
  void Loop();

  QuotaBook* const book_;
  ClusterState* const cluster_;
  KubeActions* const kube_;
  const common::Clock* const clock_;
  const Options options_;
  Observer observer_{this};
  EventWriter events_;

  std::mutex run_mu_;            // serialises RunOnce
  EvictionRateLimiter limiter_;  // RunOnce only

  mutable std::mutex mu_;
  std::unique_ptr<RoundWorldImpl> world_;
  RoundTable table_;                                            // guarded by mu_
  std::unordered_map<std::string, int64_t> pdb_blocked_until_;  // victim uid → ms
  PreemptionStats stats_;  // guarded by mu_; the round counters live in table_

  mutable std::mutex status_mu_;
  std::shared_ptr<const std::unordered_map<std::string, std::string>> status_;

  VictimSelector selector_;  // used by RunOnce only
};

}  // namespace taskgov::scheduler
