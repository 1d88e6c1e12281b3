#pragma once

// Topology-aware placement of gangs (issue 37). A flavor's topology is an ordered list of node
// label keys, widest first (model::Flavor::topology_levels: a Kueue Topology's levels, the native
// schema's, or HyperPod's network-node layers by default for its instance types). A gang whose
// pods ask for a level — Kueue's pod-template annotations, which HyperPod's `hyp
// --required-topology / --preferred-topology` write:
//   kueue.x-k8s.io/podset-required-topology: <level label>   all its pods in one domain, or wait
//   kueue.x-k8s.io/podset-preferred-topology: <level label>  one domain when one fits
// — is placed by its first member's filter, with its quota: ChooseDomain picks the domain at that
// level (nodes sharing the values of that level and every wider one) with room for every member,
// one node at a time (per-node fit of each member's request, not the domain's sum), and of those
// the tightest (best fit, as Kueue's BestFit: large domains stay whole for large jobs).
//
// Cost: one pass over the flavor's nodes under the node cache's shared lock (how many members
// each node's free room holds: NodeCache::CountFits), a label lookup per level and node, and one
// pass over the domains.

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "scheduler/model/interner.h"
#include "scheduler/model/objects.h"
#include "scheduler/model/policy.h"
#include "scheduler/state/node_cache.h"

namespace taskgov::scheduler::decisions {

inline constexpr char kRequiredTopologyAnnotation[] = "kueue.x-k8s.io/podset-required-topology";
inline constexpr char kPreferredTopologyAnnotation[] = "kueue.x-k8s.io/podset-preferred-topology";

struct TopologyRequest {
  enum class Mode : uint8_t { kNone, kRequired, kPreferred };
  Mode mode = Mode::kNone;
  std::string level;  // a node label key
  [[nodiscard]] bool required() const { return mode == Mode::kRequired; }
};

// From the pod's annotations (its template's): required before preferred, as Kueue reads them.
[[nodiscard]] TopologyRequest TopologyRequestOf(const model::Pod& pod);

// The levels of `flavor`, widest first: its own (a Kueue Topology's, the native schema's); else,
// for a HyperPod instance type (ml.*), the labels HyperPod puts on its nodes:
// topology.k8s.aws/network-node-layer-1, -2, -3, then kubernetes.io/hostname.
[[nodiscard]] std::vector<std::string> LevelsOf(const model::Flavor& flavor);
// The same for the flavor named `flavor` of `policy` (one named by an instance type alone, which
// the policy may not list, included).
[[nodiscard]] std::vector<std::string> LevelsOf(const model::Policy& policy,
                                                std::string_view flavor);

// "network-node-layer-2" for "topology.k8s.aws/network-node-layer-2": the label's name part.
[[nodiscard]] std::string LevelName(std::string_view level);

struct DomainChoice {
  bool found = false;
  // The chosen domain (found), or the one where the most members fit (not found).
  std::string name;                  // its value at the requested level
  std::vector<model::NameId> nodes;  // its nodes with room for a member, NodeNames' ids (found)
  int64_t fits = 0;                  // members that fit on its nodes, one node at a time
  size_t domains = 0;                // domains at the level among the flavor's nodes
  int64_t wanted = 0;
  // Why nothing was found, for a person: "no network-node-layer-2 domain of ml.p5.48xlarge has
  // room for 4 pods of 8 nvidia.com/gpu; the best has room for 3 (domain nn-2)".
  [[nodiscard]] std::string Refusal(std::string_view level, std::string_view flavor,
                                    const model::ResourceList& request) const;
};

// The tightest domain at `level` (one of `levels`) among `flavor`'s schedulable nodes that the
// pod's selector, affinity and taints allow, where `count` pods asking `request` each fit (free
// room: allocatable − used − room held at `now_ms` for others than `self`). Ties: the fewest
// members fitting, then the domain's values. Nodes without every label down to `level` are in no
// domain. Not found when `level` is not one of `levels`, or no domain fits them all.
[[nodiscard]] DomainChoice ChooseDomain(const state::NodeCache& nodes, model::NameId flavor,
                                        const std::vector<std::string>& levels,
                                        std::string_view level, const model::Pod& pod,
                                        const model::ResourceList& request, int64_t count,
                                        int64_t now_ms, state::Holder self);

// The domain a required-topology gang was placed in by its first member's filter.
struct GangDomain {
  model::NameId flavor = 0;
  std::string level;             // the node label key
  std::string name;              // the domain's value at that level
  bool required = true;          // else preferred
  std::vector<uint8_t> members;  // by NodeNames' id: 1 for its nodes when it was chosen
  [[nodiscard]] bool Contains(model::NameId node) const {
    return node < members.size() && members[node] != 0;
  }
};

// Where a gang was placed, as the admin API, the CLI and the console show it.
struct TopologyPlacement {
  std::string level;   // the node label key
  std::string domain;  // its value(s): "spine-1", or "spine-1+spine-3" for a preferred spread
  bool required = true;
};

// The domains of the gangs, by gang key, for as long as the gang holds quota: a domain whose
// gang's hold is gone is forgotten when next looked up, or by the sweep a Record makes once the
// map has doubled since the last one. Thread-safe.
class GangDomains {
 public:
  // The gang's domain; null when it has none, or when `holds` says its hold is gone.
  [[nodiscard]] std::shared_ptr<const GangDomain> Find(const std::string& gang,
                                                       const std::function<bool()>& holds);
  // Records `domain` for the gang unless it has one; returns the one in force. `holds(gang)`:
  // whether a gang still holds quota (for the sweep).
  std::shared_ptr<const GangDomain> Record(const std::string& gang,
                                           std::shared_ptr<const GangDomain> domain,
                                           const std::function<bool(const std::string&)>& holds);

 private:
  static constexpr size_t kMinSweep = 64;
  mutable std::mutex mu_;
  std::unordered_map<std::string, std::shared_ptr<const GangDomain>> domains_;
  size_t next_sweep_ = kMinSweep;
};

// For a preferred level: ChooseDomain's domain when one holds every member; else the fewest
// domains at that level that hold them together (most room first, the last the tightest that
// completes them; `name` joins theirs with "+"). Not found when the flavor's nodes cannot hold
// them at all.
[[nodiscard]] DomainChoice ChooseFewestDomains(const state::NodeCache& nodes, model::NameId flavor,
                                               const std::vector<std::string>& levels,
                                               std::string_view level, const model::Pod& pod,
                                               const model::ResourceList& request, int64_t count,
                                               int64_t now_ms, state::Holder self);

}  // namespace taskgov::scheduler::decisions
