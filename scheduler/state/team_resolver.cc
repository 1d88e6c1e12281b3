#include "scheduler/state/team_resolver.h"

#include <algorithm>
#include <utility>

#include <mutex>

namespace taskgov::scheduler::state {

using model::GangSource;
using model::Labels;
using model::LiveQueues;
using model::NameId;
using model::Pod;
using model::PodGroupKey;
using model::PolicyPtr;
using model::ResolveTeam;
using model::Team;
using model::TeamNames;
using model::WorkloadRef;

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

bool TeamResolver::UpsertPodGroup(const std::string& ns, const std::string& name,
                                  const std::string& queue, int64_t min_member) {
  std::unique_lock lock(mu_);
  auto [it, inserted] = live_.pod_groups.try_emplace({ns, name}, queue);
  const bool requeued = !inserted && it->second != queue;
  it->second = queue;
  return SetSizeLocked(PodGroupKey(ns, name), min_member) || requeued;
}

bool TeamResolver::SetSizeLocked(std::string key, int64_t size) {
  const int32_t n = static_cast<int32_t>(std::clamp<int64_t>(size, 0, 1'000'000));
  auto [it, inserted] = group_sizes_.try_emplace(std::move(key), n);
  if (inserted) return true;
  return std::exchange(it->second, n) != n;
}

void TeamResolver::MarkSynced(GangSource source) {
  std::unique_lock lock(mu_);
  synced_sources_ |= 1u << static_cast<uint32_t>(source);
}

bool TeamResolver::UpsertGangSize(const std::string& workload, int64_t size) {
  std::unique_lock lock(mu_);
  return SetSizeLocked(workload, size);
}

bool TeamResolver::EraseGangSize(const std::string& workload) {
  std::unique_lock lock(mu_);
  return group_sizes_.erase(workload) > 0;
}

bool TeamResolver::ErasePodGroup(const std::string& ns, const std::string& name) {
  std::unique_lock lock(mu_);
  const bool queued = live_.pod_groups.erase({ns, name}) > 0;
  return (group_sizes_.erase(PodGroupKey(ns, name)) > 0) || queued;
}

WorkloadRef TeamResolver::WorkloadOf(const Pod& pod) const {
  WorkloadRef ref = scheduler::model::WorkloadOf(pod);
  if (ref.key.empty() || ref.size > 0) return ref;
  std::shared_lock lock(mu_);
  if (auto it = group_sizes_.find(ref.key); it != group_sizes_.end()) {
    ref.size = it->second;
  } else if (ref.source != GangSource::kPod && ref.source != GangSource::kOtherOwner) {
    ref.awaiting_object = (synced_sources_ >> static_cast<uint32_t>(ref.source)) & 1u;
  }
  return ref;
}

NameId TeamResolver::TeamOf(const Pod& pod) const {
  std::shared_lock lock(mu_);
  const Team* team = ResolveTeam(*policy_, pod, &live_);
  return team == nullptr ? kNoTeam : TeamNames().Intern(team->name);
}

TeamResolver::Resolved TeamResolver::Resolve(const Pod& pod) const {
  std::shared_lock lock(mu_);
  model::TeamOfPod of = model::ResolveTeamOfPod(*policy_, pod, &live_);
  if (!of.refusal.empty()) return {kNoTeam, std::move(of.refusal)};
  return {of.team == nullptr ? kNoTeam : TeamNames().Intern(of.team->name), ""};
}

LiveQueues TeamResolver::live_queues() const {
  std::shared_lock lock(mu_);
  return live_;
}

}  // namespace taskgov::scheduler::state
