#pragma once

// The parts of Kubernetes objects taskgov reads, as plain values. Decoded from JSON by
// kube_json.h (webhook bodies and API server responses alike); built directly by tests.
// Value types; not synchronised.

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "scheduler/model/resources.h"

namespace taskgov::scheduler::model {

using Labels = std::map<std::string, std::string, std::less<>>;

struct Container {
  std::string name;
  ResourceList requests;
  ResourceList limits;
  // Init containers only: restartPolicy: Always makes it a sidecar that keeps running.
  bool restart_always = false;
};

struct OwnerReference {
  std::string api_version;
  std::string kind;
  std::string name;
  std::string uid;
  bool controller = false;
};

enum class PodPhase { kPending, kRunning, kSucceeded, kFailed, kUnknown };

// A taint's effect; in a toleration, kAll (an empty effect) matches every effect. kOther stands
// for any effect Kubernetes does not define (API validation rejects them): such a taint never
// keeps a pod off a node, and such a toleration tolerates no taint that does.
enum class TaintEffect : uint8_t { kAll, kNoSchedule, kPreferNoSchedule, kNoExecute, kOther };

// A toleration's operator: empty means Equal. kOther is any other string (including Gt and Lt,
// which Kubernetes accepts only behind an alpha feature gate): it tolerates nothing.
enum class TolerationOperator : uint8_t { kEqual, kExists, kOther };

struct Toleration {
  std::string key;  // empty: every key (with Exists: every taint)
  std::string value;
  TolerationOperator op = TolerationOperator::kEqual;
  TaintEffect effect = TaintEffect::kAll;
  // tolerationSeconds is not read: it only bounds how long a NoExecute taint is tolerated.
};

// NodeSelectorRequirement.operator. kOther is any other string: Kubernetes cannot parse the
// requirement, and its term matches no node.
enum class NodeSelectorOperator : uint8_t { kIn, kNotIn, kExists, kDoesNotExist, kGt, kLt, kOther };

struct NodeSelectorRequirement {
  std::string key;
  NodeSelectorOperator op = NodeSelectorOperator::kIn;
  std::vector<std::string> values;
};

// One term of a node selector: its requirements are ANDed; a term with none matches no node.
struct NodeSelectorTerm {
  std::vector<NodeSelectorRequirement> match_expressions;  // on the node's labels
  std::vector<NodeSelectorRequirement> match_fields;       // on its fields (metadata.name)
};

// Where a pod may run besides spec.nodeSelector: spec.tolerations and the required node
// affinity. Decoded once and shared (immutable) by every copy of the pod.
struct PodPlacementSpec {
  std::vector<Toleration> tolerations;
  // spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms
  // (ORed), when that selector is set; set with no terms, it matches no node.
  std::optional<std::vector<NodeSelectorTerm>> required_node_affinity;
};

struct Pod {
  std::string namespace_;
  std::string name;
  std::string uid;
  Labels labels;
  Labels annotations;
  int64_t creation_unix_ms = 0;             // metadata.creationTimestamp
  std::optional<int64_t> deletion_unix_ms;  // metadata.deletionTimestamp
  std::optional<int64_t> start_unix_ms;     // status.startTime
  std::string resource_version;
  std::string scheduler_name;
  std::string node_name;  // spec.nodeName: empty while pending
  Labels node_selector;   // spec.nodeSelector
  // Tolerations and required node affinity; null when the pod has neither. Copies of the pod
  // share it.
  std::shared_ptr<const PodPlacementSpec> placement;
  std::optional<int32_t> priority;
  std::string priority_class_name;
  PodPhase phase = PodPhase::kPending;
  std::vector<OwnerReference> owner_references;
  std::vector<Container> containers;
  std::vector<Container> init_containers;
  ResourceList overhead;
  // spec.resources (pod-level resources), when set.
  std::optional<ResourceList> pod_requests;
  std::optional<ResourceList> pod_limits;

  [[nodiscard]] bool terminal() const {
    return phase == PodPhase::kSucceeded || phase == PodPhase::kFailed;
  }
  [[nodiscard]] bool bound() const { return !node_name.empty(); }
  // "namespace/name"
  [[nodiscard]] std::string key() const { return namespace_ + "/" + name; }
  [[nodiscard]] const OwnerReference* controller_owner() const;
};

// What the scheduler charges for the pod (DESIGN §3.1): the sum of the regular containers'
// requests plus the sidecars (restartable init containers) started before them, compared with
// the maximum over init containers of (its request + the sidecars started before it); the larger
// of the two per resource; pod-level requests override per resource; plus spec.overhead. A
// container (or the pod) with a limit but no request for a resource requests its limit.
[[nodiscard]] ResourceList EffectiveRequest(const Pod& pod);

struct Taint {
  std::string key;
  std::string value;
  TaintEffect effect = TaintEffect::kOther;  // kAll never appears on a taint
};

struct Node {
  std::string name;
  Labels labels;
  ResourceList allocatable;
  ResourceList capacity;
  bool unschedulable = false;
  bool ready = true;  // the Ready condition; true when absent
  std::vector<Taint> taints;
  std::string resource_version;
};

// What placement reads of a node: its name (matchFields), its labels and the taints that can keep
// a pod off it (NoSchedule and NoExecute only). The state builds one per node version and
// shares it, immutable, with every view of the node.
// A node's values at the levels of its flavor's topology (model::TopologyPathOf), widest first,
// up to the first level it has no label for: `values` holds each followed by '\x1f', `ends[l]` is
// the offset just past level l's; `levels` is the TopologyLevelsStamp of the levels (0: none).
struct TopologyPath {
  std::string values;
  std::vector<uint32_t> ends;
  uint64_t levels = 0;
  // The values of levels [0, depth) ("a\x1fb\x1f"), and level depth − 1's alone; false when it
  // has no value that deep.
  [[nodiscard]] bool At(size_t depth, std::string_view* key, std::string_view* value) const {
    if (depth == 0 || depth > ends.size()) return false;
    const size_t begin = depth >= 2 ? ends[depth - 2] : 0;
    *key = std::string_view(values).substr(0, ends[depth - 1]);
    *value = std::string_view(values).substr(begin, ends[depth - 1] - begin - 1);
    return true;
  }
};

struct NodePlacement {
  std::string name;
  Labels labels;
  std::vector<Taint> taints;
  // Set by the node cache for its flavor's levels, so that a topology choice reads no label per
  // level and node (decisions/topology.h).
  TopologyPath topology;
};

// NoSchedule or NoExecute.
[[nodiscard]] bool KeepsPodsOff(const Taint& taint);
[[nodiscard]] NodePlacement PlacementOf(const Node& node);

}  // namespace taskgov::scheduler::model
