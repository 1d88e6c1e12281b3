#pragma once

// Who a pod belongs to and how it ranks (DESIGN §3.3, §3.5). Pure functions of the policy, the
// pod and the live Kueue / Volcano objects the informers have seen.

#include <cstdint>
#include <map>
#include <string>
#include <utility>

#include "scheduler/model/gang.h"
#include "scheduler/model/objects.h"
#include "scheduler/model/policy.h"

namespace taskgov::scheduler::model {

inline constexpr char kKueueQueueLabel[] = "kueue.x-k8s.io/queue-name";
inline constexpr char kKueuePriorityLabel[] = "kueue.x-k8s.io/priority-class";
inline constexpr char kVolcanoQueueAnnotation[] = "scheduling.volcano.sh/queue-name";

// Kueue LocalQueues and Volcano PodGroups seen live, keyed by (namespace, name), and the labels
// of the namespaces.
struct LiveQueues {
  std::map<std::pair<std::string, std::string>, std::string> local_queues;  // → ClusterQueue
  std::map<std::pair<std::string, std::string>, std::string> pod_groups;    // → Volcano queue
  std::map<std::string, Labels, std::less<>> namespace_labels;
};

// What a pod's team is, and whether the queue it names may be used (DESIGN §3.3). A pod's team
// is the team that owns its namespace: the team listing it, else the team its namespace's label
// names (team_resolution.namespace_label). A pod may name a queue — the team pod label
// (team_resolution.pod_label), the Kueue queue-name label (LocalQueue → ClusterQueue → team),
// the Volcano queue-name annotation or its PodGroup's queue, tried in that order (a rule naming
// an unknown team is skipped) — and the queue's team decides when
//  * it is the namespace's owner (a Kueue ClusterQueue's namespaceSelector must also select the
//    namespace, as Kueue requires), or
//  * the namespace has no owner and the team's namespace_selector selects it (a namespace shared
//    by design, as Kueue's namespaceSelector allows).
// Otherwise the pod is refused with `refusal`, which says which queue, whose it is and why: it
// is never charged to the queue's team (nor to the namespace's owner).
struct TeamOfPod {
  const Team* team = nullptr;  // null: no team (or refused)
  std::string refusal;         // non-empty: the pod names a queue it may not use
};
[[nodiscard]] TeamOfPod ResolveTeamOfPod(const Policy& policy, const Pod& pod,
                                         const LiveQueues* live);
// ResolveTeamOfPod's team; nullptr when the pod has none or is refused.
[[nodiscard]] const Team* ResolveTeam(const Policy& policy, const Pod& pod, const LiveQueues* live);

// The pod's priority: the Kueue priority-class label (with or without a "-priority" suffix),
// then spec.priorityClassName when configured, then spec.priority, then 0.
[[nodiscard]] int32_t ResolvePriority(const Policy& policy, const Pod& pod);

// The name of the priority class the pod ranks by ("" when none): for metrics labels.
[[nodiscard]] std::string PriorityClassOf(const Policy& policy, const Pod& pod);

}  // namespace taskgov::scheduler::model
