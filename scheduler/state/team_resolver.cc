#include "scheduler/state/team_resolver.h"

#include <algorithm>

#include <mutex>

namespace taskgov::scheduler {

void TeamResolver::SetPolicy(PolicyPtr policy) {
  std::unique_lock lock(mu_);
  policy_ = std::move(policy);
}

PolicyPtr TeamResolver::policy() const {
  std::shared_lock lock(mu_);
  return policy_;
}

void TeamResolver::UpsertNamespace(const std::string& name, const Labels& labels) {
  std::unique_lock lock(mu_);
  live_.namespace_labels[name] = labels;
}

void TeamResolver::EraseNamespace(const std::string& name) {
  std::unique_lock lock(mu_);
  live_.namespace_labels.erase(name);
}

void TeamResolver::UpsertLocalQueue(const std::string& ns, const std::string& name,
                                    const std::string& cluster_queue) {
  std::unique_lock lock(mu_);
  live_.local_queues[{ns, name}] = cluster_queue;
}

void TeamResolver::EraseLocalQueue(const std::string& ns, const std::string& name) {
  std::unique_lock lock(mu_);
  live_.local_queues.erase({ns, name});
}

void TeamResolver::UpsertPodGroup(const std::string& ns, const std::string& name,
                                  const std::string& queue, int64_t min_member) {
  std::unique_lock lock(mu_);
  live_.pod_groups[{ns, name}] = queue;
  SetSizeLocked(PodGroupKey(ns, name), min_member);
}

void TeamResolver::SetSizeLocked(std::string key, int64_t size) {
  const int32_t n = static_cast<int32_t>(std::clamp<int64_t>(size, 0, 1'000'000));
  if (n > 0) {
    group_sizes_[std::move(key)] = n;
  } else {
    group_sizes_.erase(key);
  }
}

void TeamResolver::UpsertGangSize(const std::string& workload, int64_t size) {
  std::unique_lock lock(mu_);
  SetSizeLocked(workload, size);
}

void TeamResolver::EraseGangSize(const std::string& workload) {
  std::unique_lock lock(mu_);
  group_sizes_.erase(workload);
}

void TeamResolver::ErasePodGroup(const std::string& ns, const std::string& name) {
  std::unique_lock lock(mu_);
  live_.pod_groups.erase({ns, name});
  group_sizes_.erase(PodGroupKey(ns, name));
}

WorkloadRef TeamResolver::WorkloadOf(const Pod& pod) const {
  WorkloadRef ref = scheduler::WorkloadOf(pod);
  if (ref.key.empty() || ref.size > 0) return ref;
  std::shared_lock lock(mu_);
  if (auto it = group_sizes_.find(ref.key); it != group_sizes_.end()) ref.size = it->second;
  return ref;
}

NameId TeamResolver::TeamOf(const Pod& pod) const {
  std::shared_lock lock(mu_);
  const Team* team = ResolveTeam(*policy_, pod, &live_);
  return team == nullptr ? kNoTeam : TeamNames().Intern(team->name);
}

LiveQueues TeamResolver::live_queues() const {
  std::shared_lock lock(mu_);
  return live_;
}

}  // namespace taskgov::scheduler
