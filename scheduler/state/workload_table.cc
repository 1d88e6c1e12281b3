#include "scheduler/state/workload_table.h"

#include <algorithm>
#include <mutex>
#include <utility>

namespace taskgov::scheduler::state {

using ledger::kNoNode;
using model::GangSource;
using model::GangSourceName;
using model::Labels;
using model::NameId;
using model::NodeNames;
using model::Pod;
using model::ResourceList;
using model::ToIdAmounts;
using model::WorkloadRef;

std::string_view WorkloadKindOf(const WorkloadRef& ref) {
  if (ref.key.empty()) return "Pod";
  switch (ref.source) {
    case GangSource::kPod:
      return "KueuePodGroup";  // pods labelled kueue.x-k8s.io/pod-group-name
    case GangSource::kOtherOwner:
      return "Owner";
    case GangSource::kNone:
      return "Pod";
    default:
      return GangSourceName(ref.source);  // PodGroup, Job, JobSet, PyTorchJob, ...
  }
}

std::string WorkloadKeyOf(std::string_view gang_key, std::string_view pod_key) {
  if (!gang_key.empty()) return std::string(gang_key);
  std::string key = "pod/";
  key += pod_key;
  return key;
}

std::string WorkloadOrderKey(std::string_view ns, std::string_view name, std::string_view kind,
                             std::string_view key) {
  std::string order;
  order.reserve(ns.size() + name.size() + kind.size() + key.size() + 3);
  order.append(ns).append("/").append(name).append("/").append(kind).append("/").append(key);
  return order;
}

std::pair<std::string_view, std::string_view> SplitKey(std::string_view key) {
  const size_t slash = key.find('/');
  if (slash == std::string_view::npos) return {std::string_view(), key};
  return {key.substr(0, slash), key.substr(slash + 1)};
}

std::string RequestedInstanceType(const Labels& node_selector, std::string_view label) {
  auto selected = node_selector.find(label);
  return selected == node_selector.end() ? "" : selected->second;
}

void WorkloadTable::Put(const Pod& pod, NameId team, const ResourceList& request,
                        const WorkloadRef& ref, int32_t priority, std::string_view priority_class,
                        std::string instance_type) {
  const std::string pod_key = pod.key();
  std::string key = WorkloadKeyOf(ref.key, pod_key);
  std::unique_lock lock(mu_);
  if (auto was = OwnerOf(pod.uid); was != workload_of_.end() && was->second->second.key != key) {
    RemoveLocked(pod.uid);  // it moved to another workload
  }
  auto order = order_of_.find(key);
  if (order == order_of_.end()) {
    auto [ns, name] = SplitKey(ref.display.empty() ? pod_key : ref.display);
    if (ns.empty()) ns = pod.namespace_;
    const std::string_view kind = WorkloadKindOf(ref);
    auto placed = ordered_.emplace(WorkloadOrderKey(ns, name, kind, key), WorkloadEntry{}).first;
    // The entry's strings are views of its order key, which the map node keeps in place.
    const std::string_view order_key = placed->first;
    WorkloadEntry& entry = placed->second;
    entry.ns = order_key.substr(0, ns.size());
    entry.name = order_key.substr(ns.size() + 1, name.size());
    entry.kind = kind;
    entry.key = order_key.substr(order_key.size() - key.size());
    order = order_of_.emplace(entry.key, placed).first;
  }
  const Ordered::iterator at_entry = order->second;
  WorkloadEntry& entry = at_entry->second;
  auto at = std::lower_bound(
      entry.members.begin(), entry.members.end(), pod.name,
      [](const WorkloadMember& m, const std::string& name) { return m.name < name; });
  if (at == entry.members.end() || at->name != pod.name) {
    at = entry.members.insert(at, WorkloadMember{});
    at->name = pod.name;
  } else if (at->uid != pod.uid) {
    // A pod of the same name before it.
    if (auto before = OwnerOf(at->uid); before != workload_of_.end()) workload_of_.erase(before);
  }
  at->uid = pod.uid;
  at->request = ToIdAmounts(request);
  at->created_ms = pod.creation_unix_ms;
  at->started_ms = pod.start_unix_ms.value_or(0);
  at->node = pod.node_name.empty() ? kNoNode : NodeNames().Intern(pod.node_name);
  at->terminating = pod.deletion_unix_ms.has_value();
  at->team = team;
  at->priority = priority;
  at->priority_class = model::PriorityClassNames().Intern(priority_class);
  at->declared = ref.key.empty() ? 1 : ref.size;
  at->instance_type = std::move(instance_type);
  Summarize(entry);
  if (auto owner = OwnerOf(pod.uid); owner != workload_of_.end()) {
    owner->second = at_entry;
  } else {
    workload_of_.emplace(Hash{}(pod.uid), at_entry);
  }
}

WorkloadTable::Owners::iterator WorkloadTable::OwnerOf(std::string_view uid) {
  auto [from, to] = workload_of_.equal_range(Hash{}(uid));
  for (auto it = from; it != to; ++it) {
    const std::vector<WorkloadMember>& members = it->second->second.members;
    if (std::any_of(members.begin(), members.end(),
                    [&](const WorkloadMember& m) { return m.uid == uid; })) {
      return it;
    }
  }
  return workload_of_.end();
}

WorkloadTable::Owners::const_iterator WorkloadTable::OwnerOf(std::string_view uid) const {
  // The lookup changes nothing: the const overload shares the other's body.
  return const_cast<WorkloadTable*>(this)->OwnerOf(uid);
}

void WorkloadTable::Summarize(WorkloadEntry& entry) {
  const WorkloadMember* top = &entry.members.front();
  entry.declared = 0;
  entry.instance_type.clear();
  for (const WorkloadMember& m : entry.members) {
    if (m.priority > top->priority) top = &m;
    entry.declared = std::max(entry.declared, m.declared);
    if (entry.instance_type.empty()) entry.instance_type = m.instance_type;
  }
  entry.team = entry.members.front().team;
  entry.priority = top->priority;
  entry.priority_class = top->priority_class;
}

void WorkloadTable::Remove(std::string_view uid) {
  std::unique_lock lock(mu_);
  RemoveLocked(uid);
}

void WorkloadTable::RemoveLocked(std::string_view uid) {
  auto was = OwnerOf(uid);
  if (was == workload_of_.end()) return;
  const Ordered::iterator entry = was->second;
  workload_of_.erase(was);
  std::vector<WorkloadMember>& members = entry->second.members;
  std::erase_if(members, [&](const WorkloadMember& m) { return m.uid == uid; });
  if (members.empty()) {
    order_of_.erase(entry->second.key);
    ordered_.erase(entry);
  } else {
    Summarize(entry->second);
  }
}

std::vector<std::string> WorkloadTable::MembersOf(std::string_view key) const {
  std::shared_lock lock(mu_);
  std::vector<std::string> uids;
  auto order = order_of_.find(key);
  if (order == order_of_.end()) return uids;
  for (const WorkloadMember& m : order->second->second.members) uids.push_back(m.uid);
  return uids;
}

size_t WorkloadTable::size() const {
  std::shared_lock lock(mu_);
  return ordered_.size();
}

const WorkloadEntry* WorkloadTable::View::Find(std::string_view key) const {
  auto order = table_.order_of_.find(key);
  return order == table_.order_of_.end() ? nullptr : &order->second->second;
}

bool WorkloadTable::View::HasPod(std::string_view uid) const {
  return table_.OwnerOf(uid) != table_.workload_of_.end();
}

}  // namespace taskgov::scheduler::state
