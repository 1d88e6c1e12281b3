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

const Team* ResolveTeam(const Policy& policy, const Pod& pod, const LiveQueues* live) {
  const TeamResolution& rules = policy.team_resolution;
  if (!rules.pod_label.empty()) {
    if (auto it = pod.labels.find(rules.pod_label); it != pod.labels.end()) {
      if (const Team* team = policy.FindTeam(it->second)) return team;
    }
  }
  if (auto it = pod.labels.find(kKueueQueueLabel); it != pod.labels.end()) {
    for (const LocalQueue& lq : policy.local_queues) {
      if (lq.namespace_ == pod.namespace_ && lq.name == it->second) {
        if (const Team* team = policy.FindTeam(lq.team)) return team;
      }
    }
    if (live != nullptr) {
      auto lq = live->local_queues.find({pod.namespace_, it->second});
      if (lq != live->local_queues.end()) {
        if (const Team* team = TeamOfClusterQueue(policy, lq->second)) return team;
      }
    }
  }
  auto team_of_volcano_queue = [&](std::string_view queue) -> const Team* {
    auto it = policy.volcano_queues.find(queue);
    return it == policy.volcano_queues.end() ? nullptr : policy.FindTeam(it->second);
  };
  if (auto it = pod.annotations.find(kVolcanoQueueAnnotation); it != pod.annotations.end()) {
    if (const Team* team = team_of_volcano_queue(it->second)) return team;
  }
  if (live != nullptr) {
    if (auto it = pod.annotations.find(kPodGroupKey); it != pod.annotations.end()) {
      auto pg = live->pod_groups.find({pod.namespace_, it->second});
      if (pg != live->pod_groups.end()) {
        if (const Team* team = team_of_volcano_queue(pg->second)) return team;
      }
    }
  }
  if (const Team* team = policy.TeamOfNamespace(pod.namespace_)) return team;
  if (live != nullptr && !rules.namespace_label.empty()) {
    auto ns = live->namespace_labels.find(pod.namespace_);
    if (ns != live->namespace_labels.end()) {
      if (auto it = ns->second.find(rules.namespace_label); it != ns->second.end()) {
        return policy.FindTeam(it->second);
      }
    }
  }
  return nullptr;
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
