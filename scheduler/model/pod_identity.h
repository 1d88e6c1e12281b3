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

// The pod's team, in order: the team pod label (Policy::team_resolution.pod_label), Kueue
// queue-name label (LocalQueue → ClusterQueue → team), Volcano queue-name annotation or its
// PodGroup's queue, the team owning its namespace, then the team its namespace's label names
// (team_resolution.namespace_label). A rule naming an unknown team is skipped. nullptr: no team.
[[nodiscard]] const Team* ResolveTeam(const Policy& policy, const Pod& pod, const LiveQueues* live);

// The pod's priority: the Kueue priority-class label (with or without a "-priority" suffix),
// then spec.priorityClassName when configured, then spec.priority, then 0.
[[nodiscard]] int32_t ResolvePriority(const Policy& policy, const Pod& pod);

// The name of the priority class the pod ranks by ("" when none): for metrics labels.
[[nodiscard]] std::string PriorityClassOf(const Policy& policy, const Pod& pod);

}  // namespace taskgov::scheduler::model
