#pragma once

// RoomForGang: whether every pod of a gang finds room on one flavor's nodes at the same time
// (issue 35: a paused job is resumed only when all its pods can run, not only when its quota is
// free — a resumed job whose pods cannot all be placed would hold its quota, idle, until its
// gang's timeout).
//
// The free room of a node is its allocatable minus what its bound, non-terminal pods request
// (NodeCache) and the room held there at `now_ms` for others than `self` (a preemptor's
// nominated node, another gang's reserved room); unschedulable nodes and nodes a pod set's
// selector, affinity or taints keep it off are skipped. Pod sets are placed largest first; each on
// the fullest nodes that still take it (best fit, as many pods of the set on a node as its room
// allows). A heuristic, as any placement by the scheduler is: when it says yes, kube-scheduler can
// place the pods one by one in that order; it may say no to a packing only an exhaustive search
// would find.
//
// Cost: O(pod sets × nodes of the flavor × resources requested).

#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "scheduler/decisions/snapshot.h"
#include "scheduler/model/interner.h"
#include "scheduler/model/job_control.h"
#include "scheduler/model/objects.h"
#include "scheduler/state/node_cache.h"

namespace taskgov::scheduler::decisions {

struct PodSetDemand {
  int64_t count = 0;
  const model::Pod* pod = nullptr;  // the template: its request, selector and tolerations
};

struct GangRoom {
  int64_t pods = 0;    // Σ count
  int64_t placed = 0;  // how many of them found room
  [[nodiscard]] bool fits() const { return placed == pods; }
};

[[nodiscard]] GangRoom RoomForGang(const state::NodeCache& nodes, model::NameId flavor,
                                   std::span<const PodSetDemand> sets, int64_t now_ms,
                                   state::Holder self = {});

// RoomForGang for every member of a gang: its job's pod sets when `job` (the pausable job owning
// it, or null) has them, else `size` pods like `member` (Kueue pod groups are usually uniform).
[[nodiscard]] GangRoom RoomForMembers(const state::NodeCache& nodes, model::NameId flavor,
                                      const model::Pod& member, int64_t size,
                                      const model::JobControl* job, int64_t now_ms,
                                      state::Holder self);

// RoomForMembers for pending pod `pod` of the cluster's pending view, with the members its gang
// declares (one for a lone pod). Members like it (no job with pod sets) are counted from the
// entry's own request, selector and placement, without a copy of the pod; a job's pod sets need
// the pod, and the answer is unset when the cluster does not know it (known from filter calls
// only).
[[nodiscard]] std::optional<GangRoom> RoomForPending(const state::ClusterState& cluster,
                                                     model::NameId flavor,
                                                     const state::PendingPod& pod, int64_t now_ms);

// For the subject of `snap` when it is a member of a gang not admitted yet (no member holds
// quota, none pinned to another flavor): whether all its members find room on `flavor`'s nodes
// at once (issue 34) — what the filter asks before holding the gang's quota, and what the
// explanation shows. Members alike (no job, or a job of one pod set): as many nodes of
// `snap.fits` with room for one as the gang has members hold it, without placing them; else
// RoomForMembers. Unset when the question does not arise.
[[nodiscard]] std::optional<GangRoom> RoomForUnadmittedGang(const Snapshot& snap,
                                                            const state::ClusterState& cluster,
                                                            model::NameId flavor);

}  // namespace taskgov::scheduler::decisions
