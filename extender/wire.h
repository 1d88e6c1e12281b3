#pragma once

// The kube-scheduler extender wire format (DESIGN §2): request bodies → the argument structs of
// scheduler/extender_api.h, and results → reply bodies.
//
// Requests. kube-scheduler ≥ 1.18 marshals the extender types without json tags (capitalised Go
// field names: "Pod", "Nodes", "NodeNames", "NodeNameToVictims", "NodeNameToMetaVictims",
// "PodName", "PodNamespace", "PodUID", "Node", and inside victims "Pods", "NumPDBViolations",
// "UID"); ≤ 1.17 used lower-case tags ("pod", "nodenames", "nodeNameToVictims", "podName", ...).
// Those keys are matched the way Go's encoding/json matches them (case-insensitively, with Go's
// Unicode folds); the v1.Pod / v1.Node objects inside use their json tags and are decoded by
// scheduler/model/kube_json.h. `null` and absent are the same. Unknown keys are ignored. A key
// given twice: the last one wins.
//
// Only what taskgov reads is materialised (scheduler/kube_fields.h): a filter request with 500
// full nodes (~6 MB) is read in one pass without building a DOM of the skipped parts. In Nodes
// mode the raw JSON text of every node is kept (as views into the body) so the reply echoes the
// feasible nodes exactly as received.
//
// Failures come in two kinds:
//  * kMalformed — the body is not JSON, has the wrong JSON type somewhere, or an unparsable
//    quantity or timestamp: the webhook answers HTTP 400 {"Error": "<what and where>"};
//  * kUnusable — well-formed, but nothing can be decided from it (no Pod, no node list, both
//    node lists, a pod without name/namespace/uid, a node without a name, a bind without pod or
//    node): the webhook answers with a reply whose Error is set.
//
// Replies use the capitalised Go field names. Maps are written in key order, so equal results
// encode to equal bytes.
//
// Pure functions; thread-safe.

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "scheduler/extender_api.h"

namespace taskgov::extender {

enum class DecodeFailure { kNone, kMalformed, kUnusable };

struct [[nodiscard]] DecodeStatus {
  DecodeFailure failure = DecodeFailure::kNone;
  std::string message;  // what and where, e.g. "Pod: spec.containers[0]...: invalid quantity ..."

  bool ok() const { return failure == DecodeFailure::kNone; }
};

// A decoded filter / prioritize request (ExtenderArgs).
struct FilterRequest {
  scheduler::FilterArgs args;
  // Nodes mode: the JSON text of each node exactly as received, parallel to args.nodes. Views
  // into the request body: valid only while the body is.
  std::vector<std::string_view> raw_nodes;
};

// ExtenderArgs (filter and prioritize).
DecodeStatus DecodeFilterRequest(std::string_view body, FilterRequest* out);
// ExtenderPreemptionArgs. Either victims map may be absent: no candidates.
DecodeStatus DecodePreemptRequest(std::string_view body, scheduler::PreemptArgs* out);
// ExtenderBindingArgs.
DecodeStatus DecodeBindRequest(std::string_view body, scheduler::BindArgs* out);

// ExtenderFilterResult in the form the request used: {"NodeNames": [...]} or
// {"Nodes": {"metadata": {}, "items": [<each feasible node as received>]}}, then "FailedNodes",
// "FailedAndUnresolvableNodes" and "Error". Feasible names that were not in the request are
// dropped (kube-scheduler fails the whole call on them); `dropped` counts them.
[[nodiscard]] std::string EncodeFilterResult(const FilterRequest& request,
                                             const scheduler::FilterResult& result,
                                             size_t* dropped = nullptr);
// An ExtenderFilterResult with only Error set (no node is feasible), for unusable requests.
[[nodiscard]] std::string EncodeFilterError(std::string_view error);
// HostPriorityList: [{"Host": "n1", "Score": 5}, ...].
[[nodiscard]] std::string EncodePriorities(const std::vector<scheduler::HostPriority>& priorities);
// ExtenderPreemptionResult: {"NodeNameToMetaVictims": {node: {"Pods": [{"UID": uid}],
// "NumPDBViolations": n}}}. Go's type has no Error field; a non-empty error is added as "Error"
// (ignored by kube-scheduler, which then sees no candidates: preemption is vetoed).
[[nodiscard]] std::string EncodePreemptResult(const scheduler::PreemptResult& result);
// ExtenderBindingResult: {"Error": ""}.
[[nodiscard]] std::string EncodeBindResult(const scheduler::BindResult& result);
// {"Error": "<message>"}: the body of HTTP 400 replies.
[[nodiscard]] std::string EncodeError(std::string_view message);

// Appends `text` as a JSON string literal (quoted and escaped).
void AppendJsonString(std::string_view text, std::string* out);

}  // namespace taskgov::extender
