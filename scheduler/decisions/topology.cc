#include "scheduler/decisions/topology.h"

#include <algorithm>
#include <memory>
#include <unordered_map>
#include <utility>

#include "scheduler/decisions/placement.h"
#include "scheduler/model/quantity.h"

namespace taskgov::scheduler::decisions {

TopologyRequest TopologyRequestOf(const model::Pod& pod) {
  TopologyRequest out;
  for (auto [key, mode] :
       {std::pair{kRequiredTopologyAnnotation, TopologyRequest::Mode::kRequired},
        std::pair{kPreferredTopologyAnnotation, TopologyRequest::Mode::kPreferred}}) {
    auto it = pod.annotations.find(key);
    if (it == pod.annotations.end() || it->second.empty()) continue;
    out.mode = mode;
    out.level = it->second;
    return out;
  }
  return out;
}

std::vector<std::string> LevelsOf(const model::Flavor& flavor) {
  return model::TopologyLevelsOf(flavor);
}

std::vector<std::string> LevelsOf(const model::Policy& policy, std::string_view flavor) {
  return model::TopologyLevelsOf(policy, flavor);
}

std::shared_ptr<const GangDomain> GangDomains::Find(const std::string& gang,
                                                    const std::function<bool()>& holds) {
  std::shared_ptr<const GangDomain> found;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = domains_.find(gang);
    if (it == domains_.end()) return nullptr;
    found = it->second;
  }
  if (holds()) return found;
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = domains_.find(gang); it != domains_.end() && it->second == found) {
    domains_.erase(it);
  }
  return nullptr;
}

std::shared_ptr<const GangDomain> GangDomains::Record(
    const std::string& gang, std::shared_ptr<const GangDomain> domain,
    const std::function<bool(const std::string&)>& holds) {
  std::lock_guard<std::mutex> lock(mu_);
  if (domains_.size() >= next_sweep_) {  // gangs never looked up again once their hold went
    std::erase_if(domains_, [&](const auto& entry) { return !holds(entry.first); });
    next_sweep_ = std::max<size_t>(kMinSweep, 2 * domains_.size());
  }
  return domains_.try_emplace(gang, std::move(domain)).first->second;
}

std::string LevelName(std::string_view level) {
  const size_t slash = level.rfind('/');
  return std::string(slash == std::string_view::npos ? level : level.substr(slash + 1));
}

std::string DomainChoice::Refusal(std::string_view level, std::string_view flavor,
                                  const model::ResourceList& request) const {
  std::string what;
  for (const model::ResourceAmount& r : request) {
    if (r.amount <= 0) continue;
    what += (what.empty() ? "" : ", ") + model::FormatQuantity(r.name, r.amount) + " " + r.name;
  }
  std::string out = "no " + LevelName(level) + " domain of " + std::string(flavor) +
                    " has room for " + std::to_string(wanted) + " pods of " +
                    (what.empty() ? std::string("nothing") : what);
  if (domains == 0) return out + " (no node of it has the label " + std::string(level) + ")";
  out += "; the best has room for " + std::to_string(fits) + " (domain " + name + ", " +
         std::to_string(domains) + " domain" + (domains == 1 ? "" : "s") + ")";
  return out;
}

namespace {

struct Domain {
  std::string key;   // the values of its levels, widest first, joined by '\x1f'
  std::string name;  // its value at the level
  int64_t fits = 0;
  std::vector<model::NameId> nodes;  // those with room for a member
};

// The domains at `level` among `flavor`'s nodes, with the members each holds node by node. Empty
// when `level` is not one of `levels`. One pass under the node cache's shared lock
// (NodeCache::CountFits), then a label lookup per level and node.
std::vector<Domain> DomainsAt(const state::NodeCache& nodes, model::NameId flavor,
                              const std::vector<std::string>& levels, std::string_view level,
                              const model::Pod& pod, const model::ResourceList& request,
                              int64_t now_ms, state::Holder self) {
  std::vector<Domain> domains;
  const auto at = std::find(levels.begin(), levels.end(), level);
  if (at == levels.end()) return domains;
  const size_t depth = static_cast<size_t>(at - levels.begin()) + 1;  // levels that name a domain
  model::ResourceList want = request;
  want.DropZeros();
  // Per thread, reused: a choice allocates for its domains only.
  thread_local std::vector<state::NodeCache::NodeCapacity> capacity;
  thread_local std::vector<std::shared_ptr<const model::NodePlacement>> placements;
  nodes.CountFits(flavor, model::ToIdAmounts(want), self, now_ms, &capacity);
  placements.clear();
  for (const auto& c : capacity) placements.push_back(c.placement);
  NodeEligibility eligible;
  eligible.Compute(pod.node_selector, pod.placement.get(), placements);

  std::unordered_map<std::string, size_t> index;  // key -> domains[]
  std::string key;
  for (size_t i = 0; i < capacity.size(); ++i) {
    const state::NodeCache::NodeCapacity& c = capacity[i];
    if (c.placement == nullptr) continue;
    key.clear();
    const std::string* value = nullptr;
    for (size_t l = 0; l < depth; ++l) {
      auto it = c.placement->labels.find(levels[l]);
      if (it == c.placement->labels.end() || it->second.empty()) {
        value = nullptr;
        break;
      }
      value = &it->second;
      key.append(*value).push_back('\x1f');
    }
    if (value == nullptr) continue;
    auto [slot, added] = index.try_emplace(key, domains.size());
    if (added) domains.push_back(Domain{key, *value, 0, {}});
    if (c.fits == 0 || !eligible.accepts[i]) continue;
    Domain& domain = domains[slot->second];
    domain.fits = model::SaturatingAdd(domain.fits, c.fits);
    domain.nodes.push_back(c.node);
  }
  capacity.clear();  // the placements are not kept past the choice (their memory is)
  placements.clear();
  return domains;
}

// Ties: the fewest fitting, then the values.
bool Tighter(const Domain& a, const Domain& b) {
  return a.fits != b.fits ? a.fits < b.fits : a.key < b.key;
}

// ChooseDomain's choice among `domains`.
DomainChoice PickOne(const std::vector<Domain>& domains, int64_t count) {
  DomainChoice choice;
  choice.wanted = count;
  choice.domains = domains.size();
  const Domain* best = nullptr;     // the tightest that fits
  const Domain* largest = nullptr;  // the one that fits the most
  for (const Domain& domain : domains) {
    if (largest == nullptr || domain.fits > largest->fits ||
        (domain.fits == largest->fits && domain.key < largest->key)) {
      largest = &domain;
    }
    if (domain.fits >= count && (best == nullptr || Tighter(domain, *best))) best = &domain;
  }
  if (best != nullptr) {
    choice.found = true;
    choice.name = best->name;
    choice.fits = best->fits;
    choice.nodes = best->nodes;
  } else if (largest != nullptr) {
    choice.name = largest->name;
    choice.fits = largest->fits;
  }
  return choice;
}

}  // namespace

DomainChoice ChooseDomain(const state::NodeCache& nodes, model::NameId flavor,
                          const std::vector<std::string>& levels, std::string_view level,
                          const model::Pod& pod, const model::ResourceList& request, int64_t count,
                          int64_t now_ms, state::Holder self) {
  return PickOne(DomainsAt(nodes, flavor, levels, level, pod, request, now_ms, self), count);
}

DomainChoice ChooseFewestDomains(const state::NodeCache& nodes, model::NameId flavor,
                                 const std::vector<std::string>& levels, std::string_view level,
                                 const model::Pod& pod, const model::ResourceList& request,
                                 int64_t count, int64_t now_ms, state::Holder self) {
  const std::vector<Domain> domains =
      DomainsAt(nodes, flavor, levels, level, pod, request, now_ms, self);
  DomainChoice choice = PickOne(domains, count);
  if (choice.found || domains.empty()) return choice;
  std::vector<const Domain*> order;
  for (const Domain& domain : domains) {
    if (domain.fits > 0) order.push_back(&domain);
  }
  // Most room first (the fewest domains); the last one taken the tightest that completes it.
  std::sort(order.begin(), order.end(), [](const Domain* a, const Domain* b) {
    return a->fits != b->fits ? a->fits > b->fits : a->key < b->key;
  });
  choice.name.clear();
  int64_t placed = 0;
  for (auto next = order.begin(); next != order.end() && placed < count; ++next) {
    const int64_t missing = count - placed;
    const Domain* take = *next;
    for (auto later = next; later != order.end(); ++later) {
      if ((*later)->fits >= missing && Tighter(**later, *take)) take = *later;
    }
    placed = model::SaturatingAdd(placed, take->fits);
    choice.name += (choice.name.empty() ? "" : "+") + take->name;
    choice.nodes.insert(choice.nodes.end(), take->nodes.begin(), take->nodes.end());
    if (take != *next) break;  // it completes them
  }
  choice.fits = placed;
  choice.found = placed >= count;
  return choice;
}

}  // namespace taskgov::scheduler::decisions
