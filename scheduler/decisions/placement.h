#pragma once

// Placement: may a pod go to a node at all, by the node's taints and labels? The Kubernetes
// scheduler's TaintToleration and NodeAffinity filters with their exact semantics
// (k8s.io/component-helpers scheduling/corev1: ToleratesTaint, FindMatchingUntoleratedTaint,
// nodeaffinity.GetRequiredNodeAffinity and LazyErrorNodeSelector.Match), so that preemption
// never frees room on a node the scheduler will not put the pod on.
//
//  * Taints. Only NoSchedule and NoExecute taints keep a pod off a node (PreferNoSchedule does
//    not); each must be tolerated by some toleration. A toleration tolerates a taint when its
//    effect is empty or the taint's, its key is empty or the taint's, and its operator is Exists,
//    or Equal (also when empty) with the taint's value. An empty key with Exists tolerates every
//    taint. Any other operator tolerates nothing (Gt and Lt exist only behind an alpha feature
//    gate, off by default).
//  * spec.nodeSelector. Every label it names is present on the node with that value.
//  * Required node affinity. The terms are ORed; the requirements of a term are ANDed
//    (matchExpressions on the labels, matchFields on the node's fields, of which only
//    metadata.name exists: any other field reads as ""). A term without requirements matches no
//    node, and so does a term Kubernetes cannot parse: an unknown operator, In / NotIn without
//    values, Exists / DoesNotExist with values, Gt / Lt without exactly one base-10 int64, a label
//    key that is not a qualified name or a value that is not a label value, a field requirement
//    other than In / NotIn with exactly one value. In holds when the label is present with one of
//    the values; NotIn when it is absent or has none of them; Gt / Lt when it is present, parses
//    as a base-10 int64, and is greater / less than the value.
//  * Unschedulable and not-ready nodes are not judged here (NodeState::schedulable).
//
// Pure functions over value types; thread-safe.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "scheduler/model/objects.h"

namespace taskgov::scheduler::decisions {

[[nodiscard]] bool ToleratesTaint(const model::Toleration& toleration, const model::Taint& taint);
// The first taint that keeps pods off and no toleration tolerates, or nullptr.
[[nodiscard]] const model::Taint* FindUntoleratedTaint(
    const std::vector<model::Taint>& taints, const std::vector<model::Toleration>& tolerations);

[[nodiscard]] bool MatchesNodeSelector(const model::Labels& node_selector,
                                       const model::Labels& labels);
// One requirement of matchExpressions against the labels; false when Kubernetes cannot parse it.
[[nodiscard]] bool MatchesLabelRequirement(const model::NodeSelectorRequirement& requirement,
                                           const model::Labels& labels);
// The ORed terms of a required node affinity against the node.
[[nodiscard]] bool MatchesNodeSelectorTerms(const std::vector<model::NodeSelectorTerm>& terms,
                                            const model::NodePlacement& node);

// "key=value:NoSchedule", or "key:NoSchedule" without a value (as kubectl shows taints).
[[nodiscard]] std::string FormatTaint(const model::Taint& taint);

enum class PlacementVerdict : uint8_t {
  kAccepted,
  kUntoleratedTaint,
  kNodeSelector,  // spec.nodeSelector does not match the labels
  kNodeAffinity,  // the required node affinity does not match
};

// Does the node accept a pod with `node_selector` and `spec` (nullptr: no tolerations, no
// required affinity)? Checked in the scheduler's order: taints, then selector, then affinity.
// For kUntoleratedTaint, *taint (if given) points at the taint in `node`.
[[nodiscard]] PlacementVerdict Judge(const model::Labels& node_selector,
                                     const model::PodPlacementSpec* spec,
                                     const model::NodePlacement& node,
                                     const model::Taint** taint = nullptr);

// Which of a set of nodes accept one pod, with a tally of the refusals for an explanation.
struct NodeEligibility {
  std::vector<uint8_t> accepts;  // parallel to the nodes judged: 1 when the pod may go there
  size_t accepted = 0;
  size_t untolerated_taint = 0;
  size_t node_selector_mismatch = 0;
  size_t node_affinity_mismatch = 0;
  std::string first_taint;  // FormatTaint of the first node refused for a taint

  // Judges every node (a null entry: a node without placement facts, accepted). Parses the
  // affinity once, whatever the number of nodes; reuses `accepts`' buffer.
  void Compute(const model::Labels& node_selector, const model::PodPlacementSpec* spec,
               const std::vector<std::shared_ptr<const model::NodePlacement>>& nodes);
  // The same over `count` nodes, node i's facts `node(i)` (null: accepted), without copies.
  void Compute(const model::Labels& node_selector, const model::PodPlacementSpec* spec,
               size_t count, const std::function<const model::NodePlacement*(size_t)>& node);
  // Why the nodes judged refuse `pod_key`, for a person: "no ml.p5.48xlarge node accepts
  // team-a/job-0: 2 nodes with an untolerated taint (nvidia.com/gpu=present:NoSchedule), 1 node
  // not matching its nodeSelector".
  [[nodiscard]] std::string Explain(std::string_view flavor, std::string_view pod_key) const;
};

}  // namespace taskgov::scheduler::decisions
