#pragma once

// ClusterState: taskgov's view of the cluster, fed by the informers (it is their
// ClusterObserver) and by the pods seen in filter calls. It is the pod usage feeder and routes
// everything else to the component that owns it:
//
//  * NodeCache (node_cache.h): nodes, their flavor, allocatable, usage and placement facts.
//  * Pods (here): every pod the informers report, each packed (model::KeptPod: ~200 bytes; unpacked
//    for a query or a policy change, read packed by ForEachBoundPod). Bound, non-terminal pods of
//    a team are usage:
//    they are counted on their node and confirmed in the QuotaBook (charged if no assumed
//    reservation exists); pods that end or are deleted are released. A pod bound to a node not
//    seen yet is counted and charged when the node arrives.
//  * PendingQueues (pending_queues.h): pods waiting for admission, per team in rank order.
//  * DisruptionLog (disruption_log.h): workloads taskgov's preemptions stopped, for the
//    borrowing back-off.
//  * TeamResolver (team_resolver.h): the policy's teams and the live Kueue / Volcano queues.
//  * WorkloadTable (workload_table.h): the pods grouped by workload in the admin API's order,
//    brought up to date with each pod event, read without the pods' lock.
//
// Thread-safety: the pods are guarded by one mutex, taken by informer events, the reconcile pass
// and the pod queries (FindPod, ForEachBoundPod: the preempt and bind verbs and the
// preemption controller); the filter and prioritize verbs never take it. Each component has
// its own lock (see its header). Lock order: the pods' lock, then a component's lock, then the
// QuotaBook (which never calls back). A decision holds a Ledger::Session while it reads the
// components (their holders never wait for a session: they call no QuotaBook), but the pods' lock
// is never taken inside a session — informer events hold it while they charge the ledger, and a
// generation swap waits for open sessions.

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "scheduler/cluster_api.h"
#include "scheduler/common/clock.h"
#include "scheduler/ledger/quota_book.h"
#include "scheduler/model/kept_pod.h"
#include "scheduler/model/objects.h"
#include "scheduler/model/pod_identity.h"
#include "scheduler/state/disruption_log.h"
#include "scheduler/state/node_cache.h"
#include "scheduler/state/pending_queues.h"
#include "scheduler/state/team_resolver.h"
#include "scheduler/state/workload_table.h"

namespace taskgov::scheduler::state {

enum class PodTransition {
  kBound,  // seen pending, then bound (wait time = now − created)
  kEnded,  // seen bound, then terminal or deleted (run time = now − bound)
};

class ClusterState final : public ClusterObserver {
 public:
  struct Options {
    std::string scheduler_name = "taskgov";
    // A pod known only from filter calls (not from the informer) stops counting as pending
    // when it has not been filtered for this long.
    int64_t filter_seen_ttl_ms = 60'000;
  };

  ClusterState(ledger::QuotaBook* book, const common::Clock* clock, Options options);

  // A new policy: node flavors and pending teams are recomputed (charges stay where they are).
  void SetPolicy(model::PolicyPtr policy);
  // What a lifecycle observer learns about a pod.
  struct PodLifecycle {
    const model::Pod* pod = nullptr;  // valid during the call only
    model::NameId team = kNoTeam;
    std::string_view priority_class;  // PriorityClassOf under the current policy
    PodTransition transition = PodTransition::kBound;
    int64_t bound_ms = 0;  // when it was seen bound (start time for pods bound before we saw them)
    int64_t now_ms = 0;
  };
  // Called (under the state's lock: keep it short, no calls back) when a pod is seen bound after
  // having been seen pending, and when a pod seen bound ends. Set before events flow.
  void SetLifecycleObserver(std::function<void(const PodLifecycle&)> observer) {
    lifecycle_ = std::move(observer);
  }
  // Called (outside the state's locks) after a pod ended or was deleted, once the state has
  // released it: the preemption controller hands a victim's capacity over at once. Set before
  // events flow.
  void SetPodGoneObserver(std::function<void(std::string_view uid)> observer) {
    pod_gone_ = std::move(observer);
  }
  // Called when a pod starts waiting for admission: it joins the pending queues, reported
  // waiting by the informers or refused by a filter call (PendingQueues::SetJoinObserver) — not
  // again while it waits, however often it is reported or refused. Called on any thread that
  // writes the queues or applies a filter call's note (informer, webhook, housekeeping, metrics),
  // possibly under the state's lock: it must only signal (the process pokes the preemption
  // controller's loop), never call back or wait. Set before events flow.
  void SetPodWaitingObserver(std::function<void()> observer) {
    pending_.SetJoinObserver(std::move(observer));
  }
  // Bound, non-terminal pods per team (running), and pending pods per team.
  [[nodiscard]] std::unordered_map<model::NameId, size_t> RunningByTeam() const;
  // Bound pods being deleted (a deletionTimestamp; they keep their quota until gone) per team: a
  // walk of the workload table under its own shared lock, never this object's.
  [[nodiscard]] std::unordered_map<model::NameId, size_t> TerminatingByTeam() const;

  // A pod of a team that another scheduler bound (its spec.schedulerName is not the governed
  // one): counted against its team like every running pod — so it may be reclaimed as a
  // borrower's when it puts its team above its nominal quota — and reported: a warning in the
  // log when first seen, taskgov_ungoverned_pods, and an event (the preemption controller's).
  struct UngovernedPod {
    std::string ns, name, uid;
    std::string scheduler;  // its spec.schedulerName
    std::string node;
    model::NameId team = kNoTeam;
    model::ResourceList request;  // effective
  };
  // Those running now, by namespace/name.
  [[nodiscard]] std::vector<UngovernedPod> UngovernedPods() const;
  [[nodiscard]] std::unordered_map<model::NameId, size_t> UngovernedByTeam() const;
  [[nodiscard]] const std::string& governed_scheduler() const { return options_.scheduler_name; }

  // The bind verb bound pod `uid` to `node` (the API server accepted the binding): counted on
  // the node and its reservation confirmed now, as the informer's event will do, so that the
  // next filter — kube-scheduler binds a burst of pods before the first binding's watch event
  // arrives — sees the room it takes. Nothing when the pod is unknown (deleted meanwhile) or
  // already bound (the informer was first).
  void NoteBound(const std::string& uid, const std::string& node);

  // ClusterObserver.
  void OnPodUpsert(const model::Pod& pod) override;
  void OnPodDelete(const model::Pod& last_known) override;
  void OnNodeUpsert(const model::Node& node) override;
  void OnNodeDelete(const std::string& name) override;
  void OnNamespaceUpsert(const std::string& name, const model::Labels& labels) override;
  void OnNamespaceDelete(const std::string& name) override;
  void OnLocalQueueUpsert(const std::string& ns, const std::string& name,
                          const std::string& cluster_queue) override;
  void OnLocalQueueDelete(const std::string& ns, const std::string& name) override;
  void OnPodGroupUpsert(const std::string& ns, const std::string& name, const std::string& queue,
                        int64_t min_member) override;
  void OnPodGroupDelete(const std::string& ns, const std::string& name) override;
  void OnGangSizeUpsert(const std::string& workload, int64_t size) override;
  void OnGangSizeDelete(const std::string& workload) override;
  void OnJobUpsert(std::shared_ptr<const model::JobControl> job) override;
  void OnJobDelete(const std::string& workload) override;
  void OnSynced(ObjectKind kind) override;

  // The pausable job that owns the gang `workload` (model/job_control.h), or null; for a RayJob's
  // cluster, the RayJob.
  [[nodiscard]] std::shared_ptr<const model::JobControl> JobOf(std::string_view workload) const;
  // Every job taskgov paused and has not resumed (JobControl::paused_by_taskgov), and every job
  // still carrying taskgov's suspended-by annotation though someone else resumed it.
  [[nodiscard]] std::vector<std::shared_ptr<const model::JobControl>> PausedJobs() const;

  // Pods and nodes have been listed once.
  [[nodiscard]] bool synced() const;

  // The components, for their queries (see each header). The pending queues are mutable:
  // applying the notes filter calls posted changes no meaning, and a filter posts through them.
  [[nodiscard]] const NodeCache& nodes() const { return nodes_; }
  [[nodiscard]] PendingQueues& pending() const { return pending_; }
  [[nodiscard]] DisruptionLog& disruptions() const { return disruptions_; }
  [[nodiscard]] const TeamResolver& teams() const { return teams_; }

  [[nodiscard]] std::optional<model::Pod> FindPod(std::string_view uid) const;
  // Whether the pod of UID `uid` is known and has not finished (Succeeded or Failed).
  [[nodiscard]] bool PodAlive(std::string_view uid) const;
  // The borrowing back-off of workload `workload` at `now_ms` (DisruptionLog::BackingOff, the
  // pods it was stopped for asked of this cluster: PodAlive).
  [[nodiscard]] std::optional<DisruptionLog::BackOff> BackingOff(std::string_view workload,
                                                                 int64_t now_ms) const;
  // Room held on a node for a preemptor (NodeCache::Hold, ReleaseHolds).
  void HoldRoom(const std::string& node, const std::string& holder,
                const model::ResourceList& amount, int64_t until_ms) {
    nodes_.Hold(node, holder, amount, until_ms);
  }
  void ReleaseRoom(const std::string& holder) { nodes_.ReleaseHolds(holder); }

  // Compares the QuotaBook's reservations with the pods running here and repairs both ways:
  // bound reservations at least `min_age_ms` old whose pod is not running here are released;
  // running pods of a team on a flavor without a reservation are charged. Nothing before the
  // first sync. Returns the UIDs repaired (drift: normally none).
  struct ReservationDrift {
    std::vector<std::string> released;
    std::vector<std::string> charged;
  };
  ReservationDrift ReconcileReservations(int64_t min_age_ms);

  // A bound pod as ForEachBoundPod shows it: its packed form (namespace, name, node, times,
  // request, gang key — read without unpacking), its team and its priority under the current
  // policy. Valid during the call only.
  struct BoundPod {
    std::string_view uid;
    const model::KeptPod& kept;
    model::NameId team = kNoTeam;
    int32_t priority = 0;  // ResolvePriority
    [[nodiscard]] model::Pod ToPod() const { return kept.ToPod(); }
  };
  // Calls `fn` for every bound, non-terminal pod (under the pods' lock: keep `fn` short), or,
  // with `flavors`, for those counted on a node of one of them (a walk that skips the others
  // at the cost of one compare each).
  void ForEachBoundPod(const std::function<void(const BoundPod& pod)>& fn,
                       const std::vector<model::NameId>* flavors = nullptr) const;
  // Every governed, non-terminal pod the informers report, bound or waiting, by workload (for
  // the admin API): read it without this object's lock.
  [[nodiscard]] const WorkloadTable& workloads() const { return workloads_; }

 private:
  struct PodRecord {
    // Packed; shared with its workload table row (an event replaces it whole). Never null.
    std::shared_ptr<const model::KeptPod> pod;
    model::NameId team = kNoTeam;
    // The node (NodeNames) whose `used` includes this pod (kNoNode while it counts on none).
    model::NameId counted_node = model::KeptPod::kNoNode;
    model::NameId flavor = kNoFlavor;  // counted_node's flavor (kNoFlavor while not counted)
    uint32_t flavor_slot = 0;          // its place in by_flavor_[flavor]
    bool charged = false;
    bool borrowing = false;  // counted as a borrower on counted_node
    int32_t priority = 0;    // ResolvePriority under the current policy (kept so by every event,
                             // re-rank and policy change; what charges and rows read)
    int64_t bound_ms = 0;    // when first counted on a node
    [[nodiscard]] bool counted() const { return counted_node != model::KeptPod::kNoNode; }
  };
  // By uid: a view of the record's own packed pod's uid (KeptPod::uid), so the uid is kept once;
  // an event that repacks the pod re-keys its node (Repack).
  using Pods = std::unordered_map<std::string_view, PodRecord>;
  using PodEntry = Pods::value_type;

  // All with mu_ held. `pod` is the pod an event reports, or a record's unpacked (KeptPod::ToPod:
  // what taskgov reads of a pod is the same in both); `request` its effective request.
  // The record counts on a node of `flavor` now (kNoFlavor: on none): by_flavor_ follows.
  void SetFlavorLocked(PodEntry& entry, model::NameId flavor);
  void Account(PodEntry& entry, const model::Pod& pod, const model::ResourceList& request);
  // `final_phase`: what a deleted pod ended as, when its DELETED event said (the lifecycle
  // observer is told it).
  void Unaccount(PodEntry& entry, std::optional<model::PodPhase> final_phase = std::nullopt);
  // Charges a pod counted on its node to its team's quota on the node's flavor (ConfirmBound).
  void ChargeLocked(PodRecord& record, const model::Pod& pod, const model::ResourceList& request,
                    model::NameId flavor);
  void NotePendingFromInformer(const PodRecord& record, const model::Pod& pod,
                               const model::ResourceList& request);
  // Re-ranks the pending members of `gang` after the object declaring it changed.
  void RegangPending(const std::string& gang);
  // A pending entry again from its pod's record: team, priority, workload (mu_ held).
  void RependLocked(PendingPod& pending);
  void ReleaseSameNameLocked(const model::Pod& pod);
  void Notify(const PodRecord& record, const model::Pod& pod, PodTransition transition);
  // Brings the pod's row in workloads_ up to date.
  void TabulateLocked(const PodRecord& record, const model::Pod& pod);
  // Applies the pod's new state (`effective`: its EffectiveRequest; `kept`: it packed).
  // Returns its entry.
  PodEntry& UpsertLocked(const model::Pod& pod, const model::ResourceList& effective,
                         std::shared_ptr<const model::KeptPod> kept);
  // Replaces the record's packed pod with `kept` (the same uid) and re-keys it by the new bytes;
  // the entry stays where it is (pointers to it hold).
  Pods::iterator Repack(Pods::iterator it, std::shared_ptr<const model::KeptPod> kept);
  void DeleteLocked(const model::Pod& last_known);
  // Starts reporting a counted pod as ungoverned.
  void NoteUngovernedLocked(const PodRecord& record, const model::Pod& pod,
                            const model::ResourceList& request);
  // Drops pods_[uid] and its name entry (after Unaccount).
  void ErasePodLocked(Pods::iterator it);
  static size_t NameHash(std::string_view ns, std::string_view name);

  ledger::QuotaBook* const book_;
  const common::Clock* const clock_;
  const Options options_;
  std::function<void(const PodLifecycle&)> lifecycle_;
  std::function<void(std::string_view uid)> pod_gone_;

  NodeCache nodes_;
  // Mutable: applying the notes filter calls posted (pending_counts) changes no meaning.
  mutable PendingQueues pending_;
  mutable DisruptionLog disruptions_;  // the preemption controller notes, filter calls read
  TeamResolver teams_;
  WorkloadTable workloads_;

  mutable std::mutex jobs_mu_;
  // Pausable jobs by workload key, and the workloads of those with taskgov's annotation.
  std::unordered_map<std::string, std::shared_ptr<const model::JobControl>> jobs_;
  std::set<std::string> annotated_jobs_;
  // A RayJob's cluster's workload key -> the RayJob's (JobControl::controlled_by).
  std::unordered_map<std::string, std::string> links_;

  mutable std::mutex mu_;  // the pods
  Pods pods_;
  // The records counted on each flavor's nodes (pointers into pods_, whose nodes never move), so
  // that a walk by flavor costs the pods of that flavor only.
  std::unordered_map<model::NameId, std::vector<PodEntry*>> by_flavor_;
  // Known pods by a hash of namespace/name → their entry in pods_. A name belongs to one live
  // pod: one seen under a new UID proves its predecessor gone, even before its DELETED.
  std::unordered_multimap<size_t, PodEntry*> entry_by_name_;
  std::unordered_map<std::string, std::set<std::string>> awaiting_node_;  // node → pod uids
  std::map<std::string, UngovernedPod> ungoverned_;  // by namespace/name; counted pods only
  std::atomic<bool> pods_synced_{false};
  std::atomic<bool> nodes_synced_{false};
};

}  // namespace taskgov::scheduler::state
