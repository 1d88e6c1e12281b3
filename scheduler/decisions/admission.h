#pragma once

// Admission: the decisions behind the webhooks (DESIGN §3.6, §4), implementing Decider.
//
//  * filter — take one Snapshot (snapshot.h: team, request, priority, the candidate nodes'
//    flavor and room, the pending view, inside one ledger session); try the team's flavors in
//    order, first staying within nominal, then borrowing; a flavor is taken only if a node of it
//    has room, no higher-ranked pod of the team could use the capacity (TaskRanking /
//    FirstComeFirstServe, BestEffortFIFO or StrictFIFO), and — when borrowing under FairShare — no
//    team with a lower weighted share has pending borrowing demand on it (rules.h, functions of the
//    snapshot). A pass records an assumed reservation (QuotaBook) and returns that flavor's nodes;
//    every other node is unresolvable with a reason a person can act on. The work for a refused pod
//    is per flavor, not per node.
//  * prioritize — 0..10: accelerators packed onto partly used nodes, borrowers together; in a
//    topology, next to busy nodes (NodePacking::near_*: docs/operations.md "Topology-aware
//    gangs"), and a preferred-topology gang's domain first.
//  * preempt — vetoes for a governed pod (the preemption controller owns every disruption of
//    governed work, DESIGN §3.7); for an ungoverned pod, trims kube-scheduler's candidates to
//    lower-priority victims past the minimum runtime, gangs whole.
//  * bind — reserve (or confirm the assumed reservation), bind through KubeActions, commit or
//    roll back.
//
// Thread-safety: all verbs may run concurrently.

#include <atomic>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "scheduler/common/clock.h"
#include "scheduler/decisions/admitted_pods.h"
#include "scheduler/decisions/explanation.h"
#include "scheduler/decisions/snapshot.h"
#include "scheduler/decisions/topology.h"
#include "scheduler/extender_api.h"
#include "scheduler/ledger/quota_book.h"
#include "scheduler/state/cluster_state.h"

namespace taskgov::scheduler::decisions {

// What a filter decided, for metrics and logs.
struct FilterDecision {
  model::NameId team = state::kNoTeam;
  model::NameId flavor = state::kNoFlavor;  // the flavor admitted to (kNoFlavor when refused)
  bool admitted = false;
  bool borrowing = false;
  std::string priority_class;
  // Why it was refused: "quota", "borrowing_limit", "pool", "fair_share", "queue_order",
  // "no_room", "no_quota", "inactive", "no_team", "foreign_queue" (the pod names a queue it may
  // not use), "not_ready", "awaiting_gang", "busy" (the reservation table had no room until its
  // next compaction), "topology", "disrupted_recently" (the borrowing back-off,
  // state::DisruptionLog); empty when admitted.
  std::string reason;
};

class Admission final : public Decider {
 public:
  struct Options {
    int64_t assume_ttl_ms = 30'000;
    // How many higher-ranked pending pods of the team a filter looks at (BestEffortFIFO).
    size_t queue_lookahead = kQueueLookahead;
    // The governed scheduler (pods' spec.schedulerName): the bind verb binds only its pods.
    std::string scheduler_name = "taskgov";
    // How long after a filter admitted a pod its bind is accepted (its assumed reservation may
    // have expired before: the bind admits it again).
    int64_t bind_window_ms = 300'000;
  };

  // `binder` may be null: then taskgov is not the binder and the bind verb refuses.
  Admission(ledger::QuotaBook* book, state::ClusterState* cluster, KubeActions* binder,
            const common::Clock* clock, Options options);

  // New policy for the ledger and the cluster view.
  void ApplyPolicy(model::PolicyPtr policy);
  // Returns "" when webhooks may be served, else the reason ("not ready: waiting for initial
  // sync", "not leader"). Unset: always serve.
  void SetGate(std::function<std::string()> gate) { gate_ = std::move(gate); }
  // Called after every filter decision.
  void SetObserver(std::function<void(const FilterDecision&)> observer) {
    observer_ = std::move(observer);
  }
  // For a refused pod: a note on a preemption or reclaim in progress for it (e.g. "reclaiming 4
  // nvidia.com/gpu from team-a, 2 pods terminating"), appended to its refusal reason; "" if none.
  void SetPreemptionStatus(std::function<std::string(std::string_view uid)> status) {
    preemption_status_ = std::move(status);
  }

  // What the preemption controller makes of a pending pod (PreemptorState); unset: nothing is
  // ever preempted (every pod kSetAside).
  void SetPreemptorState(std::function<PreemptorState(std::string_view uid)> state) {
    preemptor_state_ = std::move(state);
  }

  FilterResult Filter(const FilterArgs& args) override;
  // Why `pod` waits, every rule with its numbers (explanation.h), over the nodes of every flavor
  // of the policy; reserves nothing.
  [[nodiscard]] Explanation Explain(const model::Pod& pod) const;
  // Explain's outlook alone. With `known_to_wait` (a judgment of the pod said kWaiting, and
  // whether it could ever fit depends on its spec, the policy and the nodes, not on room), a pod
  // that no node of the policy has room for — room held for it counts — is kWaiting without the
  // rules being explained: every flavor's room check fails, so nothing admits it.
  [[nodiscard]] Outlook OutlookOf(const model::Pod& pod, bool known_to_wait) const;
  // For a paused job about to be resumed (actions/job_resumer.h): reserves its whole gang's need
  // as the filter would for its first member — `stand_in`, a pod of its gang that will never
  // exist — then hands the stand-in's share back to the gang's hold, so the quota waits for the
  // job's real pods (until the gang's timeout) and nothing admitted meanwhile takes it. False when
  // the filter would not admit it now (nothing is reserved then).
  bool ReserveForGang(const model::Pod& stand_in);
  std::vector<HostPriority> Prioritize(const FilterArgs& args) override;
  PreemptResult Preempt(const PreemptArgs& args) override;
  // Binds only a pod of the governed scheduler that the pod informer has seen, unbound, under the
  // name and namespace the call gives, and that a filter of this process admitted (it holds a
  // reservation, or a filter admitted it within Options::bind_window_ms): anything else is
  // refused with the reason (issue 36, item 9).
  BindResult Bind(const BindArgs& args) override;

  // Where the topology gang `workload` (its gang key) was placed, while its gang holds quota.
  [[nodiscard]] std::optional<TopologyPlacement> PlacementOf(const std::string& workload) const;

 private:
  // Why `args` may not be bound ("" when it may), given the pod as the informer saw it.
  [[nodiscard]] std::string BindRefusal(const BindArgs& args, const std::optional<model::Pod>& pod,
                                        bool reserved) const;
  class FlavorNotes;
  // The steps of Filter after the snapshot: each flavor in turn (room, queue order, fair share,
  // then the quota itself, which reserves), and the reply.
  // The filter's arguments for `pod` asked about every node whose placement accepts it.
  [[nodiscard]] FilterArgs AskingAboutEveryNode(const model::Pod& pod) const;
  // `snap` taken now for `args` (Explain, OutlookOf), which must outlive it.
  void SnapshotNow(const FilterArgs& args, Snapshot* snap) const;
  // Where a topology gang member goes (issue 37): its gang's domain (found, or chosen by this
  // decision, recorded once the reservation is made); a required level restricts the filter's
  // nodes, a preferred one ranks the domain's nodes first (Prioritize); a sliced gang's member
  // is kept to the slice domain it was given (`slice`, GangSlices), whatever the podset's mode.
  struct Placement {
    TopologyRequest request;
    std::shared_ptr<const GangDomain> domain;
    bool chosen = false;
    int slice = -1;  // its index among domain->slices->domains()
    [[nodiscard]] bool Allows(const state::NodeFit& fit) const {
      if (domain == nullptr) return true;
      if (domain->slices != nullptr && slice >= 0) {
        return domain->slices->domains()[static_cast<size_t>(slice)].Contains(fit.node);
      }
      return !request.required() || domain->Contains(fit.node);
    }
  };
  [[nodiscard]] std::optional<ledger::Charge> TryFlavor(
      Snapshot& snap, const model::FlavorQuota& fq, model::NameId flavor, ledger::Ledger::Mode mode,
      Placement* placement, FlavorNotes* notes) const;
  // The domain of a topology gang member on `flavor`: its gang's, or for a required level the
  // tightest with room for the whole gang — false (noted) when there is none — and for a
  // preferred one the fewest domains that hold it (none: no preference, true); for a sliced
  // gang its slices (ChooseSlices; none: false, noted) and the member's slice domain. An invalid
  // request (topology.h) is false, noted with its reason, for a lone pod too.
  [[nodiscard]] bool PlaceInDomain(const Snapshot& snap, const model::FlavorQuota& fq,
                                   model::NameId flavor, Placement* placement,
                                   FlavorNotes* notes) const;
  // Whether every member of the subject's gang, admitted not yet (no member holds quota), finds
  // room on
  // `flavor`'s nodes at once (RoomForGang: its job's pod sets, else each member as the subject);
  // false, noted, when not — its quota is not held for members that could not run (a gang
  // partly bound holds borrowed quota idle until its timeout). True for a lone pod, a gang with
  // members pinned to other flavors, and a gang the quota refuses in `mode` (its refusal says
  // more).
  [[nodiscard]] bool RoomForWholeGang(const Snapshot& snap, const model::FlavorQuota& fq,
                                      model::NameId flavor, ledger::Ledger::Mode mode,
                                      FlavorNotes* notes) const;
  // A sliced gang's member's slice domain in `placement->domain` (false, noted, when every one
  // is full).
  [[nodiscard]] bool AssignSlice(const Snapshot& snap, model::NameId flavor, Placement* placement,
                                 FlavorNotes* notes) const;
  // The reservation: the pod's own, or a gang member's share (QuotaBook::AssumeMember).
  [[nodiscard]] std::variant<ledger::Charge, ledger::Refusal> Commit(
      Snapshot& snap, model::NameId flavor, ledger::Ledger::Mode mode) const;
  // Bind of a pod whose assumed reservation expired: admitted again on `flavor` (with its gang,
  // for a gang member), borrowing allowed.
  [[nodiscard]] std::variant<ledger::Charge, ledger::Refusal> Readmit(
      const model::Pod& pod, model::NameId team, model::NameId flavor,
      const model::ResourceList& request) const;
  // A gang's refusal, naming the gang and the numbers.
  [[nodiscard]] static std::string ExplainGang(const Subject& me, const ledger::Refusal& refusal);
  [[nodiscard]] FilterResult AdmittedOn(const Snapshot& snap, const FilterArgs& args,
                                        const model::FlavorQuota& fq, model::NameId flavor,
                                        const Placement& placement) const;
  [[nodiscard]] FilterResult RefusedEverywhere(const Snapshot& snap, const FilterArgs& args,
                                               const FlavorNotes& notes, FilterResult result) const;
  [[nodiscard]] FilterResult NoTeam(const Snapshot& snap, const FilterArgs& args,
                                    FilterDecision decision) const;
  [[nodiscard]] FilterResult RefuseAll(const FilterArgs& args, std::string reason,
                                       const std::string& code, FilterDecision decision) const;
  // The steps of Preempt (an ungoverned preemptor's): the victims as taskgov knows them, then
  // gangs kept whole.
  struct KeptVictim {
    int32_t priority = 0;
    model::Pod pod;
    std::string gang;
  };
  [[nodiscard]] std::map<std::string, std::vector<model::Pod>> KnownVictims(
      const PreemptArgs& args) const;
  void DropPartialGangs(std::map<std::string, std::vector<KeptVictim>>* kept_by_node) const;
  // Tells the observer, then returns `result`.
  FilterResult Report(const FilterDecision& decision, FilterResult result) const;
  std::string Gate() const { return gate_ ? gate_() : std::string(); }

  ledger::QuotaBook* const book_;
  state::ClusterState* const cluster_;
  KubeActions* const binder_;
  const common::Clock* const clock_;
  const Options options_;
  std::function<std::string()> gate_;
  std::function<void(const FilterDecision&)> observer_;
  std::function<std::string(std::string_view uid)> preemption_status_;
  std::function<PreemptorState(std::string_view uid)> preemptor_state_;
  mutable AdmittedPods admitted_;  // by the filter: what Bind may bind
  mutable GangDomains domains_;    // where required-topology gangs were placed
};

}  // namespace taskgov::scheduler::decisions
