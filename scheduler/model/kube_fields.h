#pragma once

// The members of a v1.Pod and a v1.Node that DecodePod / DecodeNode (kube_json.h) read, as
// FieldSelectors (json_select.h): a reader of large bodies (extender requests with full
// NodeLists, API list responses) keeps these and skips the rest. Defined beside the decoders so
// the two cannot drift apart.
//
// Immutable after first use; thread-safe.

#include "scheduler/model/json_select.h"

namespace taskgov::scheduler::model {

[[nodiscard]] const FieldSelector& PodFieldSelector();
[[nodiscard]] const FieldSelector& NodeFieldSelector();

}  // namespace taskgov::scheduler::model
