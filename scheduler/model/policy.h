#pragma once

// Policy: one immutable snapshot of who may use what (DESIGN §3, §6). config/ builds it from the
// ConfigMap in any dialect (native, HyperPod, Kueue, Volcano); the ledger and the decisions read
// it. Published as std::shared_ptr<const Policy>; never modified after publication, so any number
// of threads may read it without synchronisation.
//
// Amounts are canonical (quantity.h). Every quota line is explicit: config/ has already applied
// HyperPod ratio defaults, sharing strategies and dialect defaults, so a team has one
// ResourceQuota per (flavor, resource) it may use and nothing else.

#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "scheduler/model/objects.h"

namespace taskgov::scheduler::model {

// Amount meaning "no limit".
inline constexpr int64_t kUnlimited = std::numeric_limits<int64_t>::max();

enum class TaskPrioritization { kTaskRanking, kFirstComeFirstServe };
enum class QueueingStrategy { kBestEffortFIFO, kStrictFIFO };
enum class IdleComputeAllocation { kFairShare, kFirstComeFirstServe };
// Kueue ClusterQueue preemption.withinClusterQueue.
enum class WithinTeamPreemption { kNever, kLowerPriority, kLowerOrNewerEqualPriority };
// Kueue ClusterQueue preemption.reclaimWithinCohort.
enum class ReclaimPolicy { kNever, kLowerPriority, kAny };
enum class NoTeamAction { kPassThrough, kRefuse };
// Kueue ClusterQueue preemption.borrowWithinCohort: a pod that will borrow once admitted may
// still take other teams' borrowed pods of lower priority — at most max_priority_threshold when
// set (policy LowerPriority; the default, Never, lets it take none). As in Kueue, fair sharing
// (idle compute FairShare) ignores it.
struct BorrowWithinCohort {
  bool lower_priority = false;
  std::optional<int32_t> max_priority_threshold;
};

struct PriorityClass {
  std::string name;
  int32_t value = 0;  // HyperPod weight 0..100, or Kueue WorkloadPriorityClass value
};

// A class of identical nodes. A node belongs to the first flavor (in Policy::flavors order)
// whose node_labels it all carries.
struct Flavor {
  std::string name;    // e.g. "ml.p5.48xlarge" or a Kueue ResourceFlavor name
  Labels node_labels;  // e.g. {"node.kubernetes.io/instance-type": "ml.p5.48xlarge"}
  // true: a flavor without node labels that every node belongs to unless a labelled flavor
  // claims it first (a Kueue ResourceFlavor without nodeLabels, the flavor of Volcano queues).
  // Ignored when node_labels is not empty.
  bool matches_all_nodes = false;
  // Topology levels (node label keys), widest first: a Kueue Topology's levels named by the
  // ResourceFlavor's topologyName, or the native schema's. Empty: HyperPod's for ml.* instance
  // types (TopologyLevelsOf), none otherwise.
  std::vector<std::string> topology_levels = {};
};

// The topology levels of `flavor`, widest first: its own (Flavor::topology_levels); else, for a
// HyperPod instance type (ml.*), the labels HyperPod puts on its nodes:
// topology.k8s.aws/network-node-layer-1, -2, -3, then kubernetes.io/hostname.
[[nodiscard]] std::vector<std::string> TopologyLevelsOf(const Flavor& flavor);

// Per (team, flavor, resource); DESIGN §3.3.
struct ResourceQuota {
  std::string resource;
  int64_t nominal = 0;                   // N: the team's guaranteed share
  int64_t borrowing_limit = kUnlimited;  // B: how far above N the team may go
  int64_t lending_limit = kUnlimited;    // L: how much of its unused N others may use (≤ N)

  // G = N − L: the part never lent.
  [[nodiscard]] int64_t guaranteed() const;
  // N + B, saturating.
  [[nodiscard]] int64_t ceiling() const;
  // min(L, N): what the team contributes to its cohort's pool.
  [[nodiscard]] int64_t lendable() const;
};

struct FlavorQuota {
  std::string flavor;  // a Flavor::name
  std::vector<ResourceQuota> resources;
};

// A metav1.LabelSelector (a Kueue ClusterQueue's namespaceSelector), with Kubernetes' semantics
// (apimachinery's LabelSelectorAsSelector): match_labels and match_expressions are ANDed; the
// empty selector selects everything; the nil selector (`nothing`) selects nothing. NotIn and
// DoesNotExist hold for a label that is absent.
struct LabelSelector {
  enum class Operator : uint8_t { kIn, kNotIn, kExists, kDoesNotExist };
  struct Requirement {
    std::string key;
    Operator op = Operator::kIn;
    std::vector<std::string> values;
  };
  bool nothing = false;
  Labels match_labels;
  std::vector<Requirement> match_expressions;

  [[nodiscard]] bool Matches(const Labels& labels) const;
  [[nodiscard]] bool MatchesEverything() const {
    return !nothing && match_labels.empty() && match_expressions.empty();
  }
  // As kubectl prints a selector: "team=a,tier in (x,y),!legacy"; "<none>" for nil, "" for {}.
  [[nodiscard]] std::string ToString() const;
};

struct Team {
  std::string name;
  std::vector<std::string> namespaces;
  std::string cohort;  // empty: no cohort (lends and borrows nothing)
  double fair_share_weight = 1.0;
  // In the team's preference order: flavor assignment tries them in this order.
  std::vector<FlavorQuota> flavors;
  QueueingStrategy queueing = QueueingStrategy::kBestEffortFIFO;
  WithinTeamPreemption within_team = WithinTeamPreemption::kLowerPriority;
  ReclaimPolicy reclaim = ReclaimPolicy::kAny;
  BorrowWithinCohort borrow_within_cohort;
  // false: ActivationState Disabled / Kueue stopPolicy Hold — the team's new pods are held.
  bool active = true;
  // false: Volcano reclaimable: false — never reclaimed from.
  bool reclaimable = true;
  // The Kueue ClusterQueue name this team is known by (metrics compatibility); for HyperPod teams
  // "hyperpod-ns-<team>-clusterqueue".
  std::string cluster_queue;
  // Which namespaces not owned by a team may use the team's queues (DESIGN §3.3): a Kueue
  // ClusterQueue's namespaceSelector (its namespaces must match it too); a Volcano queue's, the
  // empty selector (Volcano restricts no namespace). nullopt: only the team's own namespaces.
  std::optional<LabelSelector> namespace_selector;
};

// A Kueue LocalQueue: pods labelled kueue.x-k8s.io/queue-name=<name> in <namespace> belong to the
// team of <cluster_queue>.
struct LocalQueue {
  std::string namespace_;
  std::string name;
  std::string team;
};

struct Cohort {
  std::string name;
  std::string parent;  // hierarchical cohorts (Kueue parentName); empty at the root
  // Quota the cohort holds itself (Kueue Cohort spec.resourceGroups): its nominal adds to its
  // pool for each (flavor, resource) a team of its cohort tree governs; its borrowing and lending
  // limits bound what that pool takes from and gives to its parent's (CohortPools).
  std::vector<FlavorQuota> flavors;
  // Kueue Cohort spec.fairSharing.weight: how a cohort's borrowing weighs against its siblings'
  // (teams and cohorts under the same parent) in fair sharing; a root's weighs nothing.
  double fair_share_weight = 1.0;
};

// Kueue's fairSharing.preemptionStrategies: when a pod of another team may be taken under
// FairShare (DESIGN §3.6), comparing the preemptor's weighted share after admission with the
// victim team's share after losing it (final) or before (initial).
enum class FairShareStrategy { kLessThanOrEqualToFinalShare, kLessThanInitialShare };

struct PreemptionSettings {
  int64_t grace_period_seconds = 120;   // for evictions, so jobs can checkpoint
  int64_t minimum_runtime_seconds = 0;  // younger pods are preempted only by a Reclaim
  // Tried in order, each over every candidate before the next (Kueue's default pair).
  std::vector<FairShareStrategy> fair_sharing_strategies = {
      FairShareStrategy::kLessThanOrEqualToFinalShare, FairShareStrategy::kLessThanInitialShare};
};

// How a pod's team is found besides Kueue / Volcano queues and the teams' namespace lists
// (DESIGN §3.3). Empty strings turn a rule off.
struct TeamResolution {
  // A pod label naming its team directly; checked first.
  std::string pod_label;
  // A namespace label naming the team that owns the namespace; checked last, after the teams'
  // own namespace lists, so namespaces can join a team without a policy change.
  std::string namespace_label = "taskgov.io/team";
};

// HyperPod SchedulerConfig.IdleResourceSharing ("when enabled, unallocated resources are
// automatically calculated and made available for entities to borrow"): per flavor and governed
// resource, what the schedulable nodes offer beyond every team's and cohort's nominal quota is
// held by `cohort` as quota of its own, so that its teams may borrow it within their borrowing
// limits (model/idle_sharing.h computes it; state/idle_sharing.h keeps it up to date as nodes
// come and go).
struct IdleResourceSharing {
  bool enabled = false;
  // The cohort that holds it: the one the HyperPod teams share, else the native defaultCohort
  // (config/resolve.cc); "" when enabled with neither (nothing is lent; config warns).
  std::string cohort;
  // What this snapshot added to that cohort's own quota, per flavor and resource (positive
  // amounts only). Empty in the configured policy: only the effective policy the ledger gets
  // (WithUnallocatedCapacity) carries it.
  std::vector<FlavorQuota> unallocated;
};

struct Policy {
  TaskPrioritization task_prioritization = TaskPrioritization::kTaskRanking;
  IdleComputeAllocation idle_compute = IdleComputeAllocation::kFairShare;
  std::vector<PriorityClass> priority_classes;
  // Also look up spec.priorityClassName among priority_classes.
  bool use_pod_priority_class_name = true;
  PreemptionSettings preemption;
  // How long a gang's quota is held for members that have not come (DESIGN §3.7); then the
  // hold is released whole.
  int64_t gang_timeout_seconds = 300;
  // A workload (a pod, or a gang) pending longer than this is starving (decisions::Starving):
  // the capacity it needs is kept for it — smaller pods of its team ranked at or below it (when
  // its team's nominal quota can hold it), and other teams' smaller borrowing pods, wait while it
  // does not fit its quota, and the nodes it will run on are held for it (a drain) while its
  // quota fits but no node has room (DESIGN §3.7). 0: no such guard.
  int64_t starvation_bound_seconds = 600;
  IdleResourceSharing idle_resource_sharing;
  NoTeamAction no_team = NoTeamAction::kPassThrough;
  TeamResolution team_resolution;
  std::string instance_type_label = "node.kubernetes.io/instance-type";
  // Explicit flavors first; a node matching none of them belongs to the flavor named by its
  // instance-type label value.
  std::vector<Flavor> flavors;
  std::vector<Team> teams;
  std::vector<Cohort> cohorts;
  std::vector<LocalQueue> local_queues;
  // Volcano queue name → team name.
  std::map<std::string, std::string, std::less<>> volcano_queues;
  // Resolved lookups, filled by Finalize().
  std::map<std::string, size_t, std::less<>> team_index;          // team name → index
  std::map<std::string, size_t, std::less<>> namespace_index;     // namespace → team index
  std::map<std::string, size_t, std::less<>> cohort_index;        // cohort name → index
  std::map<std::string, std::string, std::less<>> cohort_root;    // cohort → its tree's root
  std::map<std::string, std::string, std::less<>> cohort_parent;  // cohort → parent (cycles cut)
  // Flavor name → index in `flavors`, and the flavors with node labels by their first label
  // (FlavorOfNode's candidates); filled by Finalize (or IndexFlavors), stale once `flavors`
  // changes (a size that disagrees makes every lookup scan `flavors` instead).
  std::map<std::string, size_t, std::less<>> flavor_index;
  std::map<std::pair<std::string, std::string>, std::vector<size_t>> flavors_by_first_label;
  // Per team (parallel to `teams`): a number its cohort tree shares with no other tree (the
  // index of its root in the sorted roots), or kNoCohortTree for a team in no cohort.
  std::vector<uint32_t> team_tree;
  static constexpr uint32_t kNoCohortTree = 0xffffffff;
  // A content hash of the documents this snapshot came from (for logs and metrics).
  std::string source_hash;

  // Builds the lookup maps. Call once after filling the vectors, before publishing.
  void Finalize();
  // Builds flavor_index and flavors_by_first_label alone (Finalize does too): for a policy being
  // built whose flavors are complete.
  void IndexFlavors();
  // The flavor defined with this name (null: none, an instance-type flavor). Logarithmic once
  // indexed.
  [[nodiscard]] const Flavor* FindFlavor(std::string_view name) const;
  [[nodiscard]] const Team* FindTeam(std::string_view name) const;
  [[nodiscard]] const Cohort* FindCohort(std::string_view name) const;
  // The root of `cohort`'s tree (itself when it has no parent, or is not named by the policy;
  // a parent that would close a cycle, an error the config check reports, is not followed).
  // Teams under one root lend and borrow to each other. Needs Finalize().
  [[nodiscard]] std::string_view RootCohort(std::string_view cohort) const;
  // Whether teams `a` and `b` (of this policy) lend and borrow to each other: in one cohort
  // tree. Compares two numbers. Needs Finalize().
  [[nodiscard]] bool SameCohortTree(const Team& a, const Team& b) const;
  // The parent of `cohort` in that tree ("" at a root). Needs Finalize().
  [[nodiscard]] std::string_view ParentCohort(std::string_view cohort) const;
  [[nodiscard]] const Team* TeamOfNamespace(std::string_view ns) const;
  [[nodiscard]] const PriorityClass* FindPriorityClass(std::string_view name) const;
  // Whether a pod with `node_selector` can run on nodes of `flavor`: no selector key that the
  // flavor's labels define (its node_labels, or the instance-type label for an instance-type
  // flavor) asks for another value. Keys the flavor does not define cannot rule it out.
  [[nodiscard]] bool FlavorAllows(std::string_view flavor, const Labels& node_selector) const;
  // Every node of `flavor` also belongs to `covering`: `covering` matches all nodes, or its node
  // labels are among `flavor`'s (an instance type the policy does not define is labelled by
  // instance_type_label). The ledger's companion cells (ledger.h).
  [[nodiscard]] bool FlavorCovers(std::string_view covering, std::string_view flavor) const;
  // Kueue's resource groups (the ledger's companion cells): what a pod of `team` on `flavor` is
  // charged for on the team's other flavors — each resource the team has no quota for on
  // `flavor`, on its first flavor (in the team's order) with quota for it that covers `flavor`
  // — as (resource, flavor) pairs. Empty when the team has no quota on `flavor`.
  [[nodiscard]] std::vector<std::pair<std::string, std::string>> Companions(
      const Team& team, std::string_view flavor) const;
  // Companions of every flavor of `team` (parallel to team.flavors), in near-linear time: each
  // flavor's covering flavors are found by the subsets of its node labels (a flavor has a few),
  // not by comparing every pair of flavors.
  [[nodiscard]] std::vector<std::vector<std::pair<std::string, std::string>>> TeamCompanions(
      const Team& team) const;
  // The flavor a node belongs to: the first Flavor with labels that all match, else the first
  // Flavor with matches_all_nodes, else its instance type (empty when it has none of these).
  [[nodiscard]] std::string FlavorOfNode(const Labels& node_labels) const;
};

using PolicyPtr = std::shared_ptr<const Policy>;

// A cohort's pool for one (flavor, resource) — Kueue's resource node of a cohort
// (pkg/cache/scheduler/resource_node.go) — as the policy makes it: its subtree quota S is its
// teams' lendable quota, its own nominal, and for each child cohort the part of the child's S
// beyond the child's local quota; its local quota is S − its lending limit (none: 0), and all
// of S at a root. The ledger's pools hold these limits (ledger.h, "Cohort tree").
struct CohortPool {
  std::string cohort;
  std::string parent;  // "" at a root (and where a parent would close a cycle)
  std::string flavor;
  std::string resource;
  int64_t teams = 0;                     // Σ min(L, N) of the cohort's own teams
  int64_t own = 0;                       // the cohort's own nominal quota
  int64_t children = 0;                  // Σ over child cohorts of (their S − their local quota)
  int64_t subtree = 0;                   // S = teams + own + children
  int64_t local = 0;                     // S − lending limit (no lending limit: 0); a root: S
  int64_t borrowing_limit = kUnlimited;  // on what it stores in its parent's pool, beyond S − local
};
// One per (cohort, flavor, resource) a team under the cohort has quota for, or that the cohort
// or a cohort under it holds quota for and a team of the tree governs (the quota is passed up to
// the root, where any team of the tree may borrow it); children before their parents.
[[nodiscard]] std::vector<CohortPool> CohortPools(const Policy& policy);

// TopologyLevelsOf for the flavor named `flavor` of `policy` (one named by an instance type alone,
// which the policy may not list, included).
[[nodiscard]] std::vector<std::string> TopologyLevelsOf(const Policy& policy,
                                                        std::string_view flavor);
// A number standing for `levels` (never 0; equal levels, equal numbers), and a node's values at
// them (TopologyPath).
[[nodiscard]] uint64_t TopologyLevelsStamp(const std::vector<std::string>& levels);
[[nodiscard]] TopologyPath TopologyPathOf(const std::vector<std::string>& levels,
                                          const Labels& labels);
// `node`'s path at `levels` (whose stamp is `stamp`): the one the node cache made, when it made it
// for these levels; else one made from its labels into `*scratch`.
[[nodiscard]] const TopologyPath& TopologyPathAt(const NodePlacement& node,
                                                 const std::vector<std::string>& levels,
                                                 uint64_t stamp, TopologyPath* scratch);

}  // namespace taskgov::scheduler::model
