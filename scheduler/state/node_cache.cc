#include "scheduler/state/node_cache.h"

#include <algorithm>
#include <atomic>
#include <limits>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "scheduler/model/quantity.h"

namespace taskgov::scheduler::state {

using model::FlavorNames;
using model::IdAmounts;
using model::Labels;
using model::NameId;
using model::Node;
using model::NodePlacement;
using model::PlacementOf;
using model::Policy;
using model::ResourceAmount;
using model::ResourceList;
using model::SaturatingAdd;
using model::ToIdAmounts;

namespace {

int64_t AmountOf(const IdAmounts& list, NameId id) {
  for (const auto& [key, amount] : list) {
    if (key == id) return amount;
  }
  return -1;  // absent
}

}  // namespace

NameId FlavorOfNode(const Policy& policy, const Labels& labels) {
  const std::string flavor = policy.FlavorOfNode(labels);
  return flavor.empty() ? kNoFlavor : FlavorNames().Intern(flavor);
}

NodeCache::NodeTopology NodeCache::TopologyOf(const Policy& policy, NameId flavor,
                                              const Labels& labels) {
  NodeTopology t;
  if (flavor == kNoFlavor) return t;
  const std::string& name = FlavorNames().Name(flavor);
  const std::vector<std::string> levels = model::TopologyLevelsOf(policy, name);
  if (levels.empty()) return t;
  t.path = model::TopologyPathOf(levels, labels);
  // The closest domain: every level but the node itself.
  const size_t closest = levels.size() - (levels.back() == "kubernetes.io/hostname" ? 1 : 0);
  std::string_view key;
  std::string_view value;
  if (t.path.At(closest, &key, &value)) {
    t.domain = name;
    t.domain.push_back('\x1f');
    t.domain.append(key);
  }
  return t;
}

void NodeCache::CountInDomain(const Record& record, int sign) {
  if (record.domain == kNoDomain) return;
  Domain& domain = domains_[record.domain];
  for (auto [list, amounts] : {std::pair{&domain.allocatable, &record.allocatable_ids},
                               std::pair{&domain.used, &record.used_ids}}) {
    IdAmounts signed_amounts = *amounts;
    for (auto& [id, amount] : signed_amounts) amount = sign * std::max<int64_t>(0, amount);
    model::AddTo(list, signed_amounts);
  }
}

void NodeCache::SetDomain(Record* record, const std::string& key) {
  CountInDomain(*record, -1);
  record->domain = kNoDomain;
  if (key.empty()) return;
  auto [it, added] = domain_ids_.try_emplace(key, static_cast<uint32_t>(domains_.size()));
  if (added) domains_.emplace_back();
  record->domain = it->second;
  CountInDomain(*record, +1);
}

NodeView NodeCache::ViewOf(const Record& record) {
  NodeView v;
  v.known = true;
  v.flavor = record.flavor;
  v.schedulable = record.schedulable;
  v.allocatable = record.allocatable;
  v.used = record.used;
  v.borrowing_pods = record.borrowing_pods;
  v.placement = record.placement;
  return v;
}

void NodeCache::Upsert(const Node& node, const Policy& policy) {
  const NameId flavor = FlavorOfNode(policy, node.labels);
  NodeTopology topology = TopologyOf(policy, flavor, node.labels);
  NodePlacement facts = PlacementOf(node);
  facts.topology = std::move(topology.path);
  auto placement = std::make_shared<const NodePlacement>(std::move(facts));
  const NameId id = model::NodeNames().Intern(node.name);
  const std::string& domain = topology.domain;
  std::unique_lock lock(mu_);
  auto [it, joined] = nodes_.try_emplace(node.name);
  if (joined) ++membership_;
  Record& record = it->second;
  record.id = id;
  const bool schedulable = !node.unschedulable && node.ready;
  if (joined || record.flavor != flavor || record.schedulable != schedulable ||
      !(record.allocatable == node.allocatable)) {
    ++changes_[record.flavor];
    ++changes_[flavor];
    ++capacity_changes_;
  }
  CountInDomain(record, -1);
  record.placement = std::move(placement);
  record.allocatable = node.allocatable;
  record.allocatable_ids = ToIdAmounts(record.allocatable);
  record.schedulable = schedulable;
  record.flavor = flavor;
  record.domain = kNoDomain;
  SetDomain(&record, domain);
}

bool NodeCache::Erase(const std::string& name) {
  std::unique_lock lock(mu_);
  auto it = nodes_.find(name);
  if (it == nodes_.end()) return false;
  ++changes_[it->second.flavor];
  CountInDomain(it->second, -1);
  nodes_.erase(it);
  ++membership_;
  ++capacity_changes_;
  return true;
}

model::FlavorCapacity NodeCache::SchedulableCapacity(const Policy& policy, uint64_t* stamp) const {
  model::FlavorCapacity out;
  std::shared_lock lock(mu_);
  if (stamp != nullptr) *stamp = capacity_changes_;
  for (const auto& [name, record] : nodes_) {
    if (!record.schedulable) continue;
    const std::string flavor = policy.FlavorOfNode(record.placement->labels);
    if (flavor.empty()) continue;
    out[flavor].Add(record.allocatable);
  }
  return out;
}

uint64_t NodeCache::CapacityStamp() const {
  std::shared_lock lock(mu_);
  return capacity_changes_;
}

uint64_t NodeCache::ChangeStamp(const std::vector<NameId>& flavors) const {
  std::shared_lock lock(mu_);
  uint64_t stamp = changes_all_;
  for (NameId flavor : flavors) {
    auto it = changes_.find(flavor);
    if (it != changes_.end()) stamp += it->second;
  }
  return stamp;
}

uint64_t NodeCache::NextId() {
  static std::atomic<uint64_t> next{1};  // relaxed: only uniqueness matters
  return next.fetch_add(1, std::memory_order_relaxed);
}

const std::vector<const NodeCache::Record*>& NodeCache::Resolve(
    const std::vector<std::string>& names) const {
  struct Memo {
    uint64_t cache = 0, membership = 0;
    std::vector<std::string> names;
    std::vector<const Record*> records;
  };
  thread_local Memo memo;
  if (memo.cache == id_ && memo.membership == membership_ && memo.names == names) {
    return memo.records;
  }
  memo.cache = id_;
  memo.membership = membership_;
  memo.names = names;
  memo.records.resize(names.size());
  for (size_t i = 0; i < names.size(); ++i) {
    auto it = nodes_.find(names[i]);
    memo.records[i] = it == nodes_.end() ? nullptr : &it->second;
  }
  return memo.records;
}

void NodeCache::Reflavor(const Policy& policy) {
  // Each node's flavor is found under the shared lock (filters keep reading meanwhile); the
  // exclusive section only stores them. Nodes are added and replaced by Upsert, which the
  // caller serialises with this (ClusterState's lock): a record whose placement changed in
  // between is left as that Upsert flavored it.
  struct Found {
    NameId flavor = kNoFlavor;
    std::string domain;
    std::shared_ptr<const NodePlacement> placement;  // with its new topology path, when it moved
  };
  std::unordered_map<const NodePlacement*, Found> by_placement;
  {
    std::shared_lock lock(mu_);
    by_placement.reserve(nodes_.size());
    for (const auto& [name, record] : nodes_) {
      const NodePlacement& old = *record.placement;
      Found& found = by_placement[&old];
      found.flavor = FlavorOfNode(policy, old.labels);
      NodeTopology topology = TopologyOf(policy, found.flavor, old.labels);
      found.domain = std::move(topology.domain);
      if (topology.path.values != old.topology.values ||
          topology.path.levels != old.topology.levels) {
        NodePlacement moved = old;
        moved.topology = std::move(topology.path);
        found.placement = std::make_shared<const NodePlacement>(std::move(moved));
      }
    }
  }
  std::unique_lock lock(mu_);
  for (auto& [name, record] : nodes_) {
    if (auto it = by_placement.find(record.placement.get()); it != by_placement.end()) {
      record.flavor = it->second.flavor;
      if (it->second.placement != nullptr) record.placement = std::move(it->second.placement);
      SetDomain(&record, it->second.domain);
    }
  }
  ++changes_all_;
}

std::optional<NameId> NodeCache::AddUsage(const std::string& name, const ResourceList& request,
                                          Holder self) {
  const IdAmounts ids = self.uid.empty() ? IdAmounts{} : ToIdAmounts(request);
  std::unique_lock lock(mu_);
  auto it = nodes_.find(name);
  if (it == nodes_.end()) return std::nullopt;
  Record& record = it->second;
  ++changes_[record.flavor];
  CountInDomain(record, -1);
  record.used.Add(request);
  record.used_ids = ToIdAmounts(record.used);
  CountInDomain(record, +1);
  // What the pod uses now comes out of the room held for it (or its gang) here.
  std::erase_if(record.held, [&](Record::Held& h) {
    if (h.holder != self.uid && (self.workload.empty() || h.holder != self.workload)) return false;
    bool left = false;
    for (auto& [id, amount] : h.amount) {
      amount -= std::max<int64_t>(0, AmountOf(ids, id));
      left = left || amount > 0;
    }
    return !left;
  });
  return record.flavor;
}

void NodeCache::RemoveUsage(const std::string& name, const ResourceList& request, bool borrowing) {
  std::unique_lock lock(mu_);
  auto it = nodes_.find(name);
  if (it == nodes_.end()) return;
  Record& record = it->second;
  ++changes_[record.flavor];
  ResourceList negative;
  for (const ResourceAmount& r : request) negative.Set(r.name, -r.amount);
  CountInDomain(record, -1);
  record.used.Add(negative);
  record.used.DropZeros();
  record.used_ids = ToIdAmounts(record.used);
  CountInDomain(record, +1);
  if (borrowing) record.borrowing_pods = std::max(0, record.borrowing_pods - 1);
}

void NodeCache::AddBorrower(const std::string& name) {
  std::unique_lock lock(mu_);
  if (auto it = nodes_.find(name); it != nodes_.end()) ++it->second.borrowing_pods;
}

bool NodeCache::Contains(const std::string& name) const {
  std::shared_lock lock(mu_);
  return nodes_.contains(name);
}

NameId NodeCache::FlavorOf(const std::string& name) const {
  std::shared_lock lock(mu_);
  auto it = nodes_.find(name);
  return it == nodes_.end() ? kNoFlavor : it->second.flavor;
}

int64_t NodeCache::HeldOthers(const Record& record, NameId id, Holder self, int64_t now_ms) {
  int64_t held = 0;
  for (const Record::Held& h : record.held) {
    if (h.until_ms <= now_ms || h.holder == self.uid ||
        (!self.workload.empty() && h.holder == self.workload)) {
      continue;
    }
    held = SaturatingAdd(held, std::max<int64_t>(0, AmountOf(h.amount, id)));
  }
  return held;
}

void NodeCache::FitNodes(const std::vector<std::string>& names, const IdAmounts& request,
                         std::vector<NodeFit>* out, Holder self, int64_t now_ms) const {
  std::shared_lock lock(mu_);
  out->assign(names.size(), NodeFit{});
  const std::vector<const Record*>& records = Resolve(names);
  for (size_t i = 0; i < names.size(); ++i) {
    if (records[i] == nullptr) continue;
    const Record& n = *records[i];
    NodeFit& fit = (*out)[i];
    fit.known = true;
    fit.node = n.id;
    fit.flavor = n.flavor;
    fit.room = n.schedulable;
    for (const auto& [id, amount] : request) {
      if (!fit.room) break;
      const int64_t allocatable = AmountOf(n.allocatable_ids, id);
      const int64_t used = std::max<int64_t>(0, AmountOf(n.used_ids, id));
      fit.room = allocatable >= 0 && SaturatingAdd(used, amount) <= allocatable;
      if (fit.room && !n.held.empty()) {
        const int64_t held = HeldOthers(n, id, self, now_ms);
        fit.room = SaturatingAdd(SaturatingAdd(used, held), amount) <= allocatable;
        fit.held = !fit.room;
      }
    }
  }
}

void NodeCache::CountFits(NameId flavor, const IdAmounts& request, Holder self, int64_t now_ms,
                          std::vector<NodeCapacity>* out) const {
  out->clear();
  std::shared_lock lock(mu_);
  out->reserve(nodes_.size());
  for (const auto& [name, n] : nodes_) {
    if (n.flavor != flavor) continue;
    NodeCapacity& c = out->emplace_back();
    c.node = n.id;
    c.placement = n.placement;
    if (!n.schedulable) continue;
    int64_t fits = std::numeric_limits<int64_t>::max();
    for (const auto& [id, amount] : request) {
      if (amount <= 0) continue;
      const int64_t allocatable = AmountOf(n.allocatable_ids, id);
      const int64_t used = std::max<int64_t>(0, AmountOf(n.used_ids, id));
      const int64_t held = n.held.empty() ? 0 : HeldOthers(n, id, self, now_ms);
      const int64_t free = std::max<int64_t>(0, allocatable - SaturatingAdd(used, held));
      fits = std::min(fits, allocatable < 0 ? 0 : free / amount);
    }
    c.fits = fits;
  }
}

ResourceList NodeCache::HeldFor(const std::string& name, Holder self, int64_t now_ms) const {
  std::shared_lock lock(mu_);
  ResourceList out;
  auto it = nodes_.find(name);
  if (it == nodes_.end()) return out;
  for (const Record::Held& h : it->second.held) {
    if (h.until_ms <= now_ms || h.holder == self.uid ||
        (!self.workload.empty() && h.holder == self.workload)) {
      continue;
    }
    out.Add(model::ToResourceList(h.amount));
  }
  return out;
}

void NodeCache::Hold(const std::string& name, const std::string& holder, const ResourceList& amount,
                     int64_t until_ms) {
  IdAmounts ids = ToIdAmounts(amount);
  std::unique_lock lock(mu_);
  auto it = nodes_.find(name);
  if (it == nodes_.end()) return;
  std::vector<Record::Held>& held = it->second.held;
  std::erase_if(held, [&](const Record::Held& h) { return h.holder == holder; });
  held.push_back(Record::Held{holder, std::move(ids), until_ms});
}

void NodeCache::ReleaseHolds(const std::string& holder) {
  std::unique_lock lock(mu_);
  for (auto& [name, record] : nodes_) {
    if (record.held.empty()) continue;
    std::erase_if(record.held, [&](const Record::Held& h) { return h.holder == holder; });
  }
}

void NodeCache::PackNodes(const std::vector<std::string>& names, NameId resource,
                          std::vector<NodePacking>* out) const {
  std::shared_lock lock(mu_);
  out->assign(names.size(), NodePacking{});
  const std::vector<const Record*>& records = Resolve(names);
  for (size_t i = 0; i < names.size(); ++i) {
    if (records[i] == nullptr) continue;
    const Record& n = *records[i];
    NodePacking& p = (*out)[i];
    p.known = true;
    p.node = n.id;
    p.flavor = n.flavor;
    p.allocatable = std::max<int64_t>(0, AmountOf(n.allocatable_ids, resource));
    p.used = std::max<int64_t>(0, AmountOf(n.used_ids, resource));
    p.borrowing_pods = n.borrowing_pods;
    if (n.domain != kNoDomain) {  // the others: the domain's sums without the node's own
      const Domain& domain = domains_[n.domain];
      p.near_allocatable =
          std::max<int64_t>(0, model::AmountOf(domain.allocatable, resource) - p.allocatable);
      p.near_used = std::max<int64_t>(0, model::AmountOf(domain.used, resource) - p.used);
    }
  }
}

NodeView NodeCache::View(const std::string& name) const {
  std::shared_lock lock(mu_);
  auto it = nodes_.find(name);
  return it == nodes_.end() ? NodeView{} : ViewOf(it->second);
}

std::vector<std::pair<std::string, NodeView>> NodeCache::NodesOfFlavor(NameId flavor) const {
  std::shared_lock lock(mu_);
  std::vector<std::pair<std::string, NodeView>> out;
  for (const auto& [name, record] : nodes_) {
    if (record.flavor == flavor) out.emplace_back(name, ViewOf(record));
  }
  return out;
}

std::vector<NameId> NodeCache::FlavorsWithNodes() const {
  std::vector<NameId> out;
  {
    std::shared_lock lock(mu_);
    for (const auto& [name, record] : nodes_) out.push_back(record.flavor);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

size_t NodeCache::size() const {
  std::shared_lock lock(mu_);
  return nodes_.size();
}

}  // namespace taskgov::scheduler::state
