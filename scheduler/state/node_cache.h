#pragma once

// NodeCache: the nodes the informers report, with what the filter and prioritize verbs read of
// them (nodeCacheCapable): flavor (from the policy), schedulability, allocatable, what bound pods
// use, and how many of those pods borrow; and the placement facts (labels, taints that keep pods
// off) that decide which pods may go there, for preemption.
//
// The cache knows nothing of pods: the pod usage feeder (ClusterState) adds and removes a bound
// pod's request as it counts the pod on a node.
//
// Held room (DESIGN §3.7, "room freed for a preemptor is held for it"): the preemption controller
// holds, on the nodes a round frees, the room its preemptor will need there, for that preemptor
// (its workload key for a gang, else its uid), until the round ends or the hold's deadline.
// FitNodes counts every other holder's room as used, so the victims' recreated pods and anything
// else cannot take it while the preemptor is on its way.
//
// Closest domains (issue 37): a node of a flavor with a topology (model::TopologyLevelsOf) is in
// the domain of its values at every level but the narrowest when that is kubernetes.io/hostname
// (the node itself) — for HyperPod's levels its network-node-layer-3 domain. The cache keeps each
// domain's allocatable and usage summed, updated with the nodes', so that prioritize reads how
// busy a node's neighbours are in O(1) (NodePacking::near_*). A node lacking one of those labels
// is in none.
//
// Thread-safety: one shared_mutex. Writers (informer events, policy changes) hold it exclusively
// for microseconds; every query holds it shared, so webhook calls never exclude each other. The
// cache calls nothing outside itself while holding it.

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "scheduler/model/idle_sharing.h"
#include "scheduler/model/interner.h"
#include "scheduler/model/objects.h"
#include "scheduler/model/policy.h"
#include "scheduler/model/resources.h"

namespace taskgov::scheduler::state {

inline constexpr model::NameId kNoFlavor = 0xffffffff;

struct NodeView {
  bool known = false;
  model::NameId flavor = kNoFlavor;  // kNoFlavor: the node belongs to no flavor
  bool schedulable = true;
  model::ResourceList allocatable;
  model::ResourceList used;  // by bound, non-terminal pods
  int borrowing_pods = 0;
  // Name, labels and the taints that keep pods off (placement.h); shared with the node's record,
  // immutable. Null for an unknown node.
  std::shared_ptr<const model::NodePlacement> placement;
};

// What the filter needs per candidate node, without copying the node.
struct NodeFit {
  bool known = false;
  model::NameId node = 0;  // NodeNames' id of the node (when known)
  model::NameId flavor = kNoFlavor;
  bool room = true;  // schedulable and allocatable − used − others' held room covers the request
  bool held = false;  // no room only because of room held for a preemptor
};

// Whether any of `fits` has room.
[[nodiscard]] inline bool AnyRoom(const std::vector<NodeFit>& fits) {
  return std::any_of(fits.begin(), fits.end(), [](const NodeFit& fit) { return fit.room; });
}

// Who asks FitNodes: room held for these is theirs (empty: none).
struct Holder {
  std::string_view uid;
  std::string_view workload;  // its gang's WorkloadRef::key, "" for a lone pod
};

// What prioritize needs per node for the resource it packs.
struct NodePacking {
  bool known = false;
  model::NameId node = 0;  // NodeNames' id (when known)
  model::NameId flavor = kNoFlavor;
  int64_t allocatable = 0;
  int64_t used = 0;
  int borrowing_pods = 0;
  // The other nodes of its closest topology domain together (NodeCache's header comment); 0, 0
  // when it has none.
  int64_t near_allocatable = 0;
  int64_t near_used = 0;
};

// The flavor of a node given its labels under `policy` (kNoFlavor: none).
[[nodiscard]] model::NameId FlavorOfNode(const model::Policy& policy, const model::Labels& labels);

class NodeCache {
 public:
  // ---- writers ----
  // A new or changed node; its flavor under `policy`. Usage already counted on it stays.
  void Upsert(const model::Node& node, const model::Policy& policy);
  // False when the node was not known.
  bool Erase(const std::string& name);
  // Every node's flavor recomputed under a new policy: found under the shared lock, stored under
  // the exclusive one. The caller serialises Reflavor with Upsert.
  void Reflavor(const model::Policy& policy);
  // Counts a bound pod's request on the node and returns the node's flavor; nullopt (nothing
  // counted) when the node is unknown. Room held there for the pod (`self`: its uid, or its gang)
  // shrinks by what it now uses.
  [[nodiscard]] std::optional<model::NameId> AddUsage(const std::string& name,
                                                      const model::ResourceList& request,
                                                      Holder self = {});
  // Takes a counted pod's request back off the node (and one borrower if it borrowed).
  void RemoveUsage(const std::string& name, const model::ResourceList& request, bool borrowing);
  // A pod counted on the node borrows.
  void AddBorrower(const std::string& name);
  // Holds `amount` on node `name` for `holder` (a pod uid or a gang's workload key) until
  // `until_ms` (Unix ms) or ReleaseHolds(holder); a second hold of the same holder on the node
  // replaces the first. Unknown nodes hold nothing.
  void Hold(const std::string& name, const std::string& holder, const model::ResourceList& amount,
            int64_t until_ms);
  void ReleaseHolds(const std::string& holder);

  // ---- queries (shared lock) ----
  [[nodiscard]] bool Contains(const std::string& name) const;
  // The node's flavor, kNoFlavor when unknown or of no flavor.
  [[nodiscard]] model::NameId FlavorOf(const std::string& name) const;
  // Flavor and room for `request` of each named node, for `self` at `now_ms` (room others hold
  // counts as used); `out` is parallel to `names`. The cost per node is one hash lookup and a few
  // integer compares (and one per live hold on it).
  void FitNodes(const std::vector<std::string>& names, const model::IdAmounts& request,
                std::vector<NodeFit>* out, Holder self = {}, int64_t now_ms = 0) const;
  // The room held on node `name` at `now_ms` for holders other than `self` (empty: none).
  [[nodiscard]] model::ResourceList HeldFor(const std::string& name, Holder self,
                                            int64_t now_ms) const;
  void PackNodes(const std::vector<std::string>& names, model::NameId resource,
                 std::vector<NodePacking>* out) const;
  // A full view (a copy); an unknown node's has known == false.
  [[nodiscard]] NodeView View(const std::string& name) const;
  // The flavors of the known nodes, each once, sorted (kNoFlavor last, when a node has none):
  // every flavor of the cluster, whether or not the policy gives quota on it.
  [[nodiscard]] std::vector<model::NameId> FlavorsWithNodes() const;
  // The known nodes of a flavor with their views, in no particular order.
  [[nodiscard]] std::vector<std::pair<std::string, NodeView>> NodesOfFlavor(
      model::NameId flavor) const;
  // Per node of `flavor`: its placement and how many pods asking `request` each fit in its free
  // room at `now_ms` (allocatable − used − room held for others than `self`; 0 when it is not
  // schedulable or lacks a resource), in one pass under the shared lock, without copies.
  struct NodeCapacity {
    model::NameId node = 0;  // NodeNames' id
    std::shared_ptr<const model::NodePlacement> placement;
    int64_t fits = 0;
  };
  void CountFits(model::NameId flavor, const model::IdAmounts& request, Holder self, int64_t now_ms,
                 std::vector<NodeCapacity>* out) const;
  [[nodiscard]] size_t size() const;
  // Σ allocatable of the schedulable nodes per flavor, each node's flavor as `policy` makes it
  // (so a policy about to be applied counts its own flavors), and *stamp (when given) set to
  // CapacityStamp() as of the same instant. One pass under the shared lock.
  [[nodiscard]] model::FlavorCapacity SchedulableCapacity(const model::Policy& policy,
                                                          uint64_t* stamp = nullptr) const;
  // A number that changes whenever SchedulableCapacity may have: a node joining, leaving, or
  // changing its allocatable, schedulability or flavor — not a pod counted on a node.
  [[nodiscard]] uint64_t CapacityStamp() const;
  // A number that changes whenever what a flavor offers may have: a pod counted on or taken off
  // one of its nodes, one of its nodes joining, leaving or changing its allocatable or
  // schedulability, or a policy reflavoring the nodes. ChangeStamp(flavors) is the same for
  // equal inputs as long as none of `flavors` changed (the preemption controller sets a pod
  // aside until its flavors change: nothing could be evicted for it before).
  [[nodiscard]] uint64_t ChangeStamp(const std::vector<model::NameId>& flavors) const;

 private:
  struct Record {
    model::NameId id = 0;  // NodeNames().Intern(name)
    std::shared_ptr<const model::NodePlacement>
        placement;  // name, labels, taints that keep pods off
    model::ResourceList allocatable;
    bool schedulable = true;  // not cordoned, and Ready
    model::NameId flavor = kNoFlavor;
    model::ResourceList used;
    model::IdAmounts allocatable_ids;  // allocatable, interned
    model::IdAmounts used_ids;         // `used`, interned
    int borrowing_pods = 0;
    struct Held {
      std::string holder;
      model::IdAmounts amount;
      int64_t until_ms = 0;
    };
    std::vector<Held> held;       // few: one per round in flight on the node
    uint32_t domain = kNoDomain;  // its closest domain, an index into domains_
  };
  // A closest domain's nodes summed.
  struct Domain {
    model::IdAmounts allocatable;
    model::IdAmounts used;
  };
  static constexpr uint32_t kNoDomain = 0xffffffff;
  // A node's topology on `flavor` under `policy` (NodePlacement::topology), and the key of its
  // closest domain ("": none).
  struct NodeTopology {
    model::TopologyPath path;
    std::string domain;
  };
  static NodeTopology TopologyOf(const model::Policy& policy, model::NameId flavor,
                                 const model::Labels& labels);
  // Moves `record` into the domain of `key` (mu_ held exclusively).
  void SetDomain(Record* record, const std::string& key);
  // Adds (sign +1) or takes off (−1) the record's allocatable and usage to its domain's sums.
  void CountInDomain(const Record& record, int sign);
  // Σ of the live holds of `record` not held for `self`, on resource `id`.
  static int64_t HeldOthers(const Record& record, model::NameId id, Holder self, int64_t now_ms);
  static NodeView ViewOf(const Record& record);
  // The records of `names` (null: unknown), with mu_ held. kube-scheduler sends the same node
  // list call after call: each thread keeps the last list it resolved and reuses it while no
  // node joined or left (a string comparison per name instead of a hash lookup).
  const std::vector<const Record*>& Resolve(const std::vector<std::string>& names) const;

  static uint64_t NextId();
  const uint64_t id_ = NextId();  // unique per instance, for Resolve's per-thread memo
  mutable std::shared_mutex mu_;
  std::unordered_map<std::string, Record> nodes_;  // by name
  uint64_t membership_ = 0;  // bumped when a node joins or leaves (mu_ held exclusively)
  // ChangeStamp's counters, mu_ held exclusively to bump: per flavor, and every flavor at once.
  std::unordered_map<model::NameId, uint64_t> changes_;
  uint64_t changes_all_ = 0;
  uint64_t capacity_changes_ = 0;  // CapacityStamp (mu_ held exclusively to bump)
  std::unordered_map<std::string, uint32_t> domain_ids_;  // by NodeTopology::domain
  std::vector<Domain> domains_;
};

}  // namespace taskgov::scheduler::state
