#include "scheduler/model/pod_identity.h"

namespace taskgov::scheduler::model {
namespace {

constexpr std::string_view kPrioritySuffix = "-priority";

const Team* TeamOfClusterQueue(const Policy& policy, std::string_view cluster_queue) {
  for (const Team& team : policy.teams) {
    if (team.cluster_queue == cluster_queue || team.name == cluster_queue) return &team;
  }
  return nullptr;
}

const PriorityClass* ClassFromLabel(const Policy& policy, std::string_view label) {
  if (const PriorityClass* pc = policy.FindPriorityClass(label)) return pc;
  if (label.size() > kPrioritySuffix.size() && label.ends_with(kPrioritySuffix)) {
    return policy.FindPriorityClass(label.substr(0, label.size() - kPrioritySuffix.size()));
  }
  return policy.FindPriorityClass(std::string(label) + std::string(kPrioritySuffix));
}

const PriorityClass* ClassOf(const Policy& policy, const Pod& pod) {
  if (auto it = pod.labels.find(kKueuePriorityLabel); it != pod.labels.end()) {
    if (const PriorityClass* pc = ClassFromLabel(policy, it->second)) return pc;
  }
  if (policy.use_pod_priority_class_name && !pod.priority_class_name.empty()) {
    return ClassFromLabel(policy, pod.priority_class_name);
  }
  return nullptr;
}

}  // namespace

namespace {

// The team a pod names through one of its queue rules, and how (for a refusal).
struct QueueClaim {
  const Team* team = nullptr;
  std::string via;
};

QueueClaim ClaimOfKueueQueue(const Policy& policy, const Pod& pod, const LiveQueues* live,
                             const std::string& queue) {
  const std::string via = "LocalQueue " + pod.namespace_ + "/" + queue;
  for (const LocalQueue& lq : policy.local_queues) {
    if (lq.namespace_ == pod.namespace_ && lq.name == queue) {
      if (const Team* team = policy.FindTeam(lq.team)) return {team, via};
    }
  }
  if (live == nullptr) return {};
  auto lq = live->local_queues.find({pod.namespace_, queue});
  if (lq == live->local_queues.end()) return {};
  return {TeamOfClusterQueue(policy, lq->second), via + " (ClusterQueue " + lq->second + ")"};
}

// The first queue rule of the pod that names a known team.
QueueClaim ClaimOfPod(const Policy& policy, const Pod& pod, const LiveQueues* live) {
  const TeamResolution& rules = policy.team_resolution;
  if (!rules.pod_label.empty()) {
    if (auto it = pod.labels.find(rules.pod_label); it != pod.labels.end()) {
      if (const Team* team = policy.FindTeam(it->second)) {
        return {team, "pod label " + rules.pod_label + "=" + it->second};
      }
    }
  }
  if (auto it = pod.labels.find(kKueueQueueLabel); it != pod.labels.end()) {
    if (QueueClaim claim = ClaimOfKueueQueue(policy, pod, live, it->second); claim.team) {
      return claim;
    }
  }
  auto team_of_volcano_queue = [&](std::string_view queue) -> const Team* {
    auto it = policy.volcano_queues.find(queue);
    return it == policy.volcano_queues.end() ? nullptr : policy.FindTeam(it->second);
  };
  if (auto it = pod.annotations.find(kVolcanoQueueAnnotation); it != pod.annotations.end()) {
    if (const Team* team = team_of_volcano_queue(it->second)) {
      return {team, "Volcano queue " + it->second};
    }
  }
  if (live != nullptr) {
    if (auto it = pod.annotations.find(kPodGroupKey); it != pod.annotations.end()) {
      auto pg = live->pod_groups.find({pod.namespace_, it->second});
      if (pg != live->pod_groups.end()) {
        if (const Team* team = team_of_volcano_queue(pg->second)) {
          return {team, "PodGroup " + pod.namespace_ + "/" + it->second + " (Volcano queue " +
                            pg->second + ")"};
        }
      }
    }
  }
  return {};
}

// The team that owns the namespace: the team listing it, else the one its label names.
const Team* OwnerOfNamespace(const Policy& policy, const std::string& ns, const LiveQueues* live) {
  if (const Team* team = policy.TeamOfNamespace(ns)) return team;
  const std::string& label = policy.team_resolution.namespace_label;
  if (live == nullptr || label.empty()) return nullptr;
  auto it = live->namespace_labels.find(ns);
  if (it == live->namespace_labels.end()) return nullptr;
  auto team = it->second.find(label);
  return team == it->second.end() ? nullptr : policy.FindTeam(team->second);
}

// Why the queue's team may not take a pod of `ns` through its namespace selector; "" when it
// may.
std::string SelectorRefusal(const Team& team, const std::string& ns, const LiveQueues* live) {
  const LabelSelector& selector = *team.namespace_selector;
  if (selector.MatchesEverything()) return "";
  static const Labels kNoLabels;
  const Labels* labels = &kNoLabels;
  if (live != nullptr) {
    auto it = live->namespace_labels.find(ns);
    if (it == live->namespace_labels.end()) {
      return "namespace " + ns + " has not been observed, so ClusterQueue " + team.cluster_queue +
             "'s namespaceSelector cannot be checked";
    }
    labels = &it->second;
  }
  if (selector.Matches(*labels)) return "";
  return "Workload namespace doesn't match ClusterQueue selector (ClusterQueue " +
         team.cluster_queue + " selects namespaces " +
         (selector.nothing ? std::string("<none>: it has no namespaceSelector")
                           : "'" + selector.ToString() + "'") +
         "; namespace " + ns + " does not match)";
}

}  // namespace

TeamOfPod ResolveTeamOfPod(const Policy& policy, const Pod& pod, const LiveQueues* live) {
  const Team* owner = OwnerOfNamespace(policy, pod.namespace_, live);
  const QueueClaim claim = ClaimOfPod(policy, pod, live);
  if (claim.team == nullptr) return {owner, ""};
  const Team& team = *claim.team;
  auto refused = [&](const std::string& why) {
    return TeamOfPod{nullptr, "pod " + pod.key() + " names " + claim.via + " of team " + team.name +
                                  ", which it may not use: " + why};
  };
  if (owner != nullptr && owner != &team) {
    return refused("namespace " + pod.namespace_ + " belongs to team " + owner->name +
                   " (a pod's team is the team that owns its namespace): use a queue of team " +
                   owner->name);
  }
  if (team.namespace_selector) {
    if (std::string why = SelectorRefusal(team, pod.namespace_, live); !why.empty()) {
      return refused(why);
    }
  } else if (owner == nullptr) {
    std::string list;
    for (const std::string& ns : team.namespaces) list += (list.empty() ? "" : ", ") + ns;
    return refused("namespace " + pod.namespace_ + " is not one of team " + team.name +
                   "'s namespaces (" + (list.empty() ? "none" : list) + ")");
  }
  return {&team, ""};
}

const Team* ResolveTeam(const Policy& policy, const Pod& pod, const LiveQueues* live) {
  TeamOfPod of = ResolveTeamOfPod(policy, pod, live);
  return of.refusal.empty() ? of.team : nullptr;
}

int32_t ResolvePriority(const Policy& policy, const Pod& pod) {
  if (const PriorityClass* pc = ClassOf(policy, pod)) return pc->value;
  return pod.priority.value_or(0);
}

std::string PriorityClassOf(const Policy& policy, const Pod& pod) {
  if (const PriorityClass* pc = ClassOf(policy, pod)) return pc->name;
  return pod.priority_class_name;
}

}  // namespace taskgov::scheduler::model
