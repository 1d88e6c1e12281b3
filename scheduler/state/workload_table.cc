#include "scheduler/state/workload_table.h"

#include <algorithm>
#include <mutex>
#include <optional>
#include <utility>

namespace taskgov::scheduler::state {

using model::GangSource;
using model::GangSourceName;
using model::KeptPod;
using model::Labels;
using model::NameId;
using model::WorkloadRef;

// One per workload: most are lone pods (memory per pod, issue 19).
static_assert(sizeof(void*) != 8 || sizeof(WorkloadEntry) <= 56);

std::string_view WorkloadKindOf(const WorkloadRef& ref) {
  return WorkloadKindOf(ref.source, ref.key.empty());
}

std::string_view WorkloadKindOf(GangSource source, bool lone) {
  if (lone) return "Pod";
  switch (source) {
    case GangSource::kPod:
      return "KueuePodGroup";  // pods labelled kueue.x-k8s.io/pod-group-name
    case GangSource::kOtherOwner:
      return "Owner";
    case GangSource::kNone:
      return "Pod";
    default:
      return GangSourceName(source);  // PodGroup, Job, JobSet, PyTorchJob, ...
  }
}

std::string WorkloadKeyOf(std::string_view gang_key, std::string_view pod_key) {
  if (!gang_key.empty()) return std::string(gang_key);
  std::string key(WorkloadTable::kLonePrefix);
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

void WorkloadTable::Put(std::shared_ptr<const KeptPod> pod, NameId team, const WorkloadRef& ref,
                        int32_t priority, std::string_view priority_class,
                        std::string instance_type) {
  const std::string pod_key = pod->key();
  const std::string_view uid = pod->uid();
  const std::string_view pod_name = pod->name();
  std::string key = WorkloadKeyOf(ref.key, pod_key);
  const bool lone = IsLone(key);
  std::unique_lock lock(mu_);
  Ordered::iterator at_entry = ordered_.end();
  if (Place was = Locate(uid, pod->ns(), pod_name); was.entry != ordered_.end()) {
    if (was.entry->second.key() == key) {
      at_entry = was.entry;  // most events: the pod stays where it is
    } else {
      RemoveAt(was, pod_name);  // it moved to another workload
    }
  }
  if (at_entry == ordered_.end()) at_entry = FindEntry(key);
  if (at_entry == ordered_.end()) {
    auto [ns, name] = SplitKey(ref.display.empty() ? pod_key : ref.display);  // lone: no display
    if (ns.empty()) ns = pod->ns();  // ns holds no '/' (WorkloadEntry::ns): SplitKey cut there
    const std::string_view kind = WorkloadKindOf(ref.source, lone);
    auto placed = ordered_.emplace(WorkloadOrderKey(ns, name, kind, key), WorkloadEntry{}).first;
    // The entry's strings are views of its order key, which the map node keeps in place.
    WorkloadEntry& entry = placed->second;
    entry.order_ = &placed->first;
    entry.name_len_ = static_cast<uint32_t>(name.size());
    entry.source_ = ref.source;
    entry.lone_ = lone;
    if (!lone) order_of_.emplace(entry.key(), placed);
    at_entry = placed;
  }
  WorkloadEntry& entry = at_entry->second;
  auto at = LowerBound(entry.members, pod_name);
  std::optional<Standing> before;  // what the member was
  if (at == entry.members.end() || at->name() != pod_name) {
    at = entry.members.insert(at, WorkloadMember{});
  } else {
    before = Standing{at->priority, at->priority_class, at->declared};
    if (at->uid() != uid && !lone) {
      // A pod of the same name before it.
      if (auto was = OwnerOf(at->uid(), pod_name); was != workload_of_.end()) {
        workload_of_.erase(was);
      }
    }
  }
  at->pod = std::move(pod);  // `uid` and `pod_name` view its block, which the member now holds
  at->team = team;
  at->priority = priority;
  at->priority_class = model::PriorityClassNames().Intern(priority_class);
  at->declared = ref.key.empty() ? 1 : ref.size;
  at->instance_type = model::PooledString(instance_type);
  Follow(entry, *at, before ? &*before : nullptr);
  if (lone) return;
  if (auto owner = OwnerOf(uid, pod_name); owner != workload_of_.end()) {
    owner->second = at_entry;
  } else {
    workload_of_.emplace(StringHash{}(uid), at_entry);
  }
}

bool WorkloadTable::IsLone(std::string_view key) { return key.starts_with(kLonePrefix); }

WorkloadTable::Ordered::iterator WorkloadTable::FindEntry(std::string_view key) {
  if (IsLone(key)) {
    const auto [ns, name] = SplitKey(key.substr(kLonePrefix.size()));
    return FindLone(ns, name);
  }
  auto order = order_of_.find(key);
  return order == order_of_.end() ? ordered_.end() : order->second;
}

std::vector<WorkloadMember>::iterator WorkloadTable::LowerBound(
    std::vector<WorkloadMember>& members, std::string_view name) {
  return std::lower_bound(
      members.begin(), members.end(), name,
      [](const WorkloadMember& m, std::string_view name) { return m.name() < name; });
}

WorkloadTable::Owners::iterator WorkloadTable::OwnerOf(std::string_view uid,
                                                       std::string_view name) {
  auto [from, to] = workload_of_.equal_range(StringHash{}(uid));
  for (auto it = from; it != to; ++it) {
    std::vector<WorkloadMember>& members = it->second->second.members;
    auto at = LowerBound(members, name);
    if (at != members.end() && at->name() == name && at->uid() == uid) return it;
  }
  return workload_of_.end();
}

WorkloadTable::Ordered::iterator WorkloadTable::FindLone(std::string_view ns,
                                                         std::string_view name) {
  std::string key(kLonePrefix);
  key.append(ns).append("/").append(name);
  return ordered_.find(
      WorkloadOrderKey(ns, name, WorkloadKindOf(model::GangSource::kNone, true), key));
}

WorkloadTable::Place WorkloadTable::Locate(std::string_view uid, std::string_view ns,
                                           std::string_view name) {
  if (auto lone = FindLone(ns, name); lone != ordered_.end()) {
    const WorkloadMember& m = lone->second.members.front();  // its one member
    if (m.uid() == uid) return Place{lone, workload_of_.end()};
  }
  auto owner = OwnerOf(uid, name);
  return Place{owner == workload_of_.end() ? ordered_.end() : owner->second, owner};
}

std::string_view WorkloadEntry::instance_type() const {
  for (const WorkloadMember& m : members) {
    if (!m.instance_type.empty()) return m.instance_type.view();
  }
  return {};
}

void WorkloadTable::Summarize(WorkloadEntry& entry) {
  const WorkloadMember* top = &entry.members.front();
  entry.declared = 0;
  for (const WorkloadMember& m : entry.members) {
    if (m.priority > top->priority) top = &m;
    entry.declared = std::max(entry.declared, m.declared);
  }
  entry.team = entry.members.front().team;
  entry.priority = top->priority;
  entry.priority_class = top->priority_class;
}

void WorkloadTable::Follow(WorkloadEntry& entry, const WorkloadMember& m, const Standing* before) {
  entry.team = entry.members.front().team;
  if (before != nullptr && before->priority == m.priority &&
      before->priority_class == m.priority_class && before->declared == m.declared) {
    return;  // an event that changes no summary (a gang's pods bound one by one)
  }
  if (before != nullptr || entry.members.size() == 1 ||
      (m.priority == entry.priority && m.priority_class != entry.priority_class)) {
    Summarize(entry);  // the top may have fallen, or a tie picks the first by name
    return;
  }
  if (m.priority > entry.priority) {
    entry.priority = m.priority;
    entry.priority_class = m.priority_class;
  }
  entry.declared = std::max(entry.declared, m.declared);
}

void WorkloadTable::Remove(std::string_view uid, std::string_view ns, std::string_view name) {
  std::unique_lock lock(mu_);
  if (Place place = Locate(uid, ns, name); place.entry != ordered_.end()) RemoveAt(place, name);
}

void WorkloadTable::RemoveAt(Place place, std::string_view name) {
  const Ordered::iterator entry = place.entry;
  if (place.owner != workload_of_.end()) workload_of_.erase(place.owner);
  std::vector<WorkloadMember>& members = entry->second.members;
  auto at = LowerBound(members, name);  // Locate found it there
  const bool was_top =
      at->priority == entry->second.priority || at->declared == entry->second.declared;
  members.erase(at);
  if (members.empty()) {
    if (!IsLone(entry->second.key())) order_of_.erase(entry->second.key());
    ordered_.erase(entry);
  } else if (was_top) {
    Summarize(entry->second);
  } else {
    entry->second.team = members.front().team;
  }
}

std::vector<std::string> WorkloadTable::MembersOf(std::string_view key) const {
  std::shared_lock lock(mu_);
  std::vector<std::string> uids;
  if (const WorkloadEntry* entry = View(*this).Find(key)) {
    for (const WorkloadMember& m : entry->members) uids.emplace_back(m.uid());
  }
  return uids;
}

size_t WorkloadTable::size() const {
  std::shared_lock lock(mu_);
  return ordered_.size();
}

const WorkloadEntry* WorkloadTable::View::Find(std::string_view key) const {
  // The lookup changes nothing.
  auto found = const_cast<WorkloadTable&>(table_).FindEntry(key);
  return found == table_.ordered_.end() ? nullptr : &found->second;
}

bool WorkloadTable::View::HasPod(std::string_view uid, std::string_view ns,
                                 std::string_view name) const {
  // The lookup changes nothing.
  return const_cast<WorkloadTable&>(table_).Locate(uid, ns, name).entry != table_.ordered_.end();
}

}  // namespace taskgov::scheduler::state
