#include "scheduler/state/team_resolver.h"

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
                                  const std::string& queue) {
  std::unique_lock lock(mu_);
  live_.pod_groups[{ns, name}] = queue;
}

void TeamResolver::ErasePodGroup(const std::string& ns, const std::string& name) {
  std::unique_lock lock(mu_);
  live_.pod_groups.erase({ns, name});
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
