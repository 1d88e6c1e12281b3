#pragma once

// Topology-aware placement of gangs (issue 37). A flavor's topology is an ordered list of node
// label keys, widest first (model::Flavor::topology_levels: a Kueue Topology's levels, the native
// schema's, or HyperPod's network-node layers by default for its instance types). A gang asks for
// a placement with Kueue TAS's pod-template annotations — on its pods, or, when its pods carry
// none, on its owner job (TopologyRequestOfGang) — as HyperPod's `hyp --required-topology /
// --preferred-topology` write them:
//   kueue.x-k8s.io/podset-required-topology: <level label>   all its pods in one domain, or wait
//   kueue.x-k8s.io/podset-preferred-topology: <level label>  one domain when one fits
//   kueue.x-k8s.io/podset-unconstrained-topology: "true"     no locality (a plain gang)
//   kueue.x-k8s.io/podset-slice-required-topology: <level>   with podset-slice-size: N — every
//       slice of N pods in one domain of that level (required, whatever the podset's mode)
// Precedence required > preferred > unconstrained, as Kueue's Build; a request Kueue's webhook
// would reject (ValidateTASPodSetRequest: two of the first three, a level that is not a label
// name, an unconstrained value that is not a bool, a slice size that is not an integer ≥ 1 or
// is above the gang's size, a slice level without a size or a size without one, a slice level
// above the podset's level) is `invalid`, and the filter refuses it, naming the annotation and
// the value: taskgov never places a gang the way it did not ask.
//
// Required and preferred gangs without slices are placed by their first member's filter, with
// its quota: ChooseDomain picks the domain at that level (nodes sharing the values of that level
// and every wider one) with room for every member, one node at a time (per-node fit of each
// member's request, not the domain's sum), and of those the tightest (best fit, as Kueue's
// BestFit: large domains stay whole for large jobs).
//
// Sliced gangs (ChooseSlices): slices are counted as Kueue counts them — per node how many pods
// fit, per slice-level domain ⌊pods / N⌋ slices, summed above. A gang of `count` pods needs
// ⌈count / N⌉ slices (a last, partial slice is kept whole too, and takes a whole slice's room;
// Kueue places only ⌊count / N⌋). The first member's filter chooses a podset-level domain that
// holds them — required: the tightest (fewest slices, then fewest pods, then values); preferred:
// that, else the fewest podset-level domains (most slices first, the last the tightest that
// completes them); unconstrained or slice-only: the whole flavor — and then the slice-level
// domains inside it, level by level as Kueue descends: required and preferred BestFit (most
// slices first, the last the tightest that completes them), unconstrained LeastFreeCapacity
// (fewest slices first), as Kueue's default Mixed profile. Each chosen slice domain takes a
// whole number of slices (capacity slices × N members).
//
// Who goes where (GangSlices): every member's filter gives the member one chosen slice domain
// and offers it that domain's nodes only, so a member can only bind there. A member is counted
// in the domain its filter gave it for as long as it holds a reservation in the QuotaBook
// (assumed, then bound); a member gone (deleted, ended, its assumption expired) frees its place.
// The rule, members filtered one at a time (kube-scheduler's order): a re-filtered member keeps
// its domain while it has room; else a member goes to the first chosen domain whose count is not
// a multiple of N (a slice begun and not complete: at most one is), else to the first with
// room. So the members of every slice are consecutive and share one slice-level domain.
//
// Cost: one pass over the flavor's nodes under the node cache's shared lock (how many members
// each node's free room holds: NodeCache::CountFits), a label lookup per level and node, and one
// pass over the domains (with slices: a sort per level of the chosen subtree). A member's slice:
// one QuotaBook lookup per member of its gang with a place, under the gang's own mutex.

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "scheduler/model/gang.h"
#include "scheduler/model/interner.h"
#include "scheduler/model/job_control.h"
#include "scheduler/model/objects.h"
#include "scheduler/model/policy.h"
#include "scheduler/state/cluster_state.h"
#include "scheduler/state/node_cache.h"

namespace taskgov::scheduler::decisions {

inline constexpr char kRequiredTopologyAnnotation[] = "kueue.x-k8s.io/podset-required-topology";
inline constexpr char kPreferredTopologyAnnotation[] = "kueue.x-k8s.io/podset-preferred-topology";
inline constexpr char kUnconstrainedTopologyAnnotation[] =
    "kueue.x-k8s.io/podset-unconstrained-topology";
inline constexpr char kSliceRequiredTopologyAnnotation[] =
    "kueue.x-k8s.io/podset-slice-required-topology";
inline constexpr char kSliceSizeAnnotation[] = "kueue.x-k8s.io/podset-slice-size";
// Kueue's multi-layer slices (TASMultiLayerTopology): not supported, refused as such.
inline constexpr char kSliceConstraintsAnnotation[] =
    "kueue.x-k8s.io/podset-slice-required-topology-constraints";

struct TopologyRequest {
  // kUnconstrained: no locality for the podset ("true", or slices alone).
  enum class Mode : uint8_t { kNone, kRequired, kPreferred, kUnconstrained };
  Mode mode = Mode::kNone;
  std::string level;        // a node label key ("" for kNone and kUnconstrained)
  std::string slice_level;  // a node label key; "" without slices
  int64_t slice_size = 0;   // ≥ 1 with slices
  // Why Kueue's webhook would reject the request, naming the annotation and its value ("" when
  // valid). The fields above keep what could be read, for the explanation.
  std::string invalid;
  [[nodiscard]] bool required() const { return mode == Mode::kRequired; }
  [[nodiscard]] bool sliced() const { return !slice_level.empty(); }
  // It asks anything of placement, or is invalid: the filter must look at it.
  [[nodiscard]] bool asks() const {
    return !invalid.empty() || sliced() || mode == Mode::kRequired || mode == Mode::kPreferred;
  }
};

// From annotations (a pod's, its template's or its owner's), as Kueue's Build and webhook read
// them (see the header comment). The slice size is checked against the gang's size by
// CheckTopologyRequest, which knows it.
[[nodiscard]] TopologyRequest TopologyRequestOf(const model::Labels& annotations);
// From the pod's annotations (its template's).
[[nodiscard]] TopologyRequest TopologyRequestOf(const model::Pod& pod);
// Whether `annotations` carry any of the annotations above.
[[nodiscard]] bool HasTopologyAnnotations(const model::Labels& annotations);
// A gang member's request: its own annotations when it has any; else its owner job's (`job` may
// be null): the job's own metadata annotations, else its pod templates' when every template
// says the same (`hyp` writes both). A lone pod's is its own.
[[nodiscard]] TopologyRequest TopologyRequestOfGang(const model::Pod& pod,
                                                    const model::JobControl* job);
// The same for a pod of `workload` as the cluster knows it: its job from ClusterState::JobOf (one
// lookup under the jobs' mutex, only when the pod itself carries no topology annotation).
[[nodiscard]] TopologyRequest TopologyRequestOfGang(const state::ClusterState& cluster,
                                                    const model::Pod& pod,
                                                    const model::WorkloadRef& workload);
// What the gang's size and the flavor's `levels` add to the validation: the slice size at most
// the gang's `count` ("must not be greater than pod set count"), the slice level at or below the
// podset's level ("podset slice topology X is above the podset topology Y"). "" when valid.
[[nodiscard]] std::string CheckTopologyRequest(const TopologyRequest& request, int64_t count,
                                               const std::vector<std::string>& levels);

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

// The slice-level domains chosen for a sliced gang, and which member went to which (the rule is
// in the header comment). Thread-safe: Assign under its own mutex.
class GangSlices {
 public:
  struct Domain {
    std::string name;              // its value at the slice level
    int64_t slices = 0;            // slices it takes: room for slices × size members
    std::vector<uint8_t> members;  // by NodeNames' id: 1 for its nodes
    [[nodiscard]] bool Contains(model::NameId node) const {
      return node < members.size() && members[node] != 0;
    }
  };
  GangSlices(std::string level, int64_t size, std::vector<Domain> domains)
      : level_(std::move(level)), size_(size), domains_(std::move(domains)) {}

  // The domain (index) member `uid` goes to, recorded as its place; -1 when every domain is full.
  // `holds(uid)`: whether a member still holds its reservation (others' places count only then).
  // A place given less than kGraceMs before `now_ms` counts even without a reservation: the
  // member's filter may not have reserved yet.
  [[nodiscard]] int Assign(std::string_view uid, int64_t now_ms,
                           const std::function<bool(std::string_view uid)>& holds);
  // Member `uid` has no place (its filter did not reserve after all; a stand-in).
  void Forget(std::string_view uid);
  static constexpr int64_t kGraceMs = 10'000;
  [[nodiscard]] const std::vector<Domain>& domains() const { return domains_; }
  [[nodiscard]] const std::string& level() const { return level_; }
  [[nodiscard]] int64_t size() const { return size_; }

 private:
  const std::string level_;  // the slice level's node label key
  const int64_t size_;       // N
  const std::vector<Domain> domains_;
  std::mutex mu_;
  struct Place {
    int domain = 0;  // domains_ index
    int64_t at_ms = 0;
  };
  std::unordered_map<std::string, Place> place_;  // by member uid
};

// The domain a topology gang was placed in by its first member's filter.
struct GangDomain {
  model::NameId flavor = 0;
  std::string level;             // the node label key ("" unconstrained: the whole flavor)
  std::string name;              // the domain's value at that level
  bool required = true;          // else preferred (or unconstrained)
  std::vector<uint8_t> members;  // by NodeNames' id: 1 for its nodes when it was chosen
  // Its slices, for a sliced gang (their nodes are `members`); null without.
  std::shared_ptr<GangSlices> slices;
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

// For a sliced gang (`request.sliced()`, valid): the podset-level domain and the slice-level
// domains of its ⌈count / N⌉ slices, chosen as the header comment says, among `flavor`'s nodes
// that the pod may use (free room as ChooseDomain counts it).
struct SliceChoice {
  bool found = false;
  // The podset-level domain(s) chosen ("+"-joined for a preferred spread; "" unconstrained), or
  // when not found the one holding the most slices.
  std::string name;
  std::vector<GangSlices::Domain> slices;  // chosen (found): fill order
  int64_t wanted = 0;                      // slices the gang needs
  int64_t fits = 0;                        // slices the chosen (or best) domain holds
  size_t domains = 0;                      // podset-level domains among the flavor's nodes
  // Why nothing was found, for a person: "no network-node-layer-2 domain of ml.p5.48xlarge has
  // room for 2 slices of 4 pods (each slice in one network-node-layer-3 domain) of 8
  // nvidia.com/gpu; the best has room for 1 (domain spine-3, 8 domains)".
  [[nodiscard]] std::string Refusal(const TopologyRequest& request, std::string_view flavor,
                                    const model::ResourceList& request_each) const;
};
[[nodiscard]] SliceChoice ChooseSlices(const state::NodeCache& nodes, model::NameId flavor,
                                       const std::vector<std::string>& levels,
                                       const TopologyRequest& request, const model::Pod& pod,
                                       const model::ResourceList& request_each, int64_t count,
                                       int64_t now_ms, state::Holder self);

}  // namespace taskgov::scheduler::decisions
