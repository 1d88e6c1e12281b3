#include "scheduler/decisions/topology.h"

#include <algorithm>
#include <map>
#include <memory>
#include <tuple>
#include <utility>

#include "scheduler/decisions/gang_room.h"
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
  if (!flavor.topology_levels.empty()) return flavor.topology_levels;
  if (!flavor.name.starts_with("ml.")) return {};
  return {"topology.k8s.aws/network-node-layer-1", "topology.k8s.aws/network-node-layer-2",
          "topology.k8s.aws/network-node-layer-3", "kubernetes.io/hostname"};
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

std::shared_ptr<const GangDomain> GangDomains::Record(const std::string& gang,
                                                      std::shared_ptr<const GangDomain> domain) {
  std::lock_guard<std::mutex> lock(mu_);
  return domains_.try_emplace(gang, std::move(domain)).first->second;
}

size_t GangDomains::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return domains_.size();
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
  std::string name;
  int64_t fits = 0;
  std::vector<std::string> nodes;
};

// The domains at `level` among `flavor`'s nodes, with the members each holds node by node, by
// the values of its levels (widest first). Empty when `level` is not one of `levels`.
std::map<std::vector<std::string>, Domain> DomainsAt(const state::NodeCache& nodes,
                                                     model::NameId flavor,
                                                     const std::vector<std::string>& levels,
                                                     std::string_view level, const model::Pod& pod,
                                                     const model::ResourceList& request,
                                                     int64_t now_ms, state::Holder self) {
  std::map<std::vector<std::string>, Domain> domains;
  const auto at = std::find(levels.begin(), levels.end(), level);
  if (at == levels.end()) return domains;
  const size_t depth = static_cast<size_t>(at - levels.begin()) + 1;  // levels that name a domain
  model::ResourceList want = request;
  want.DropZeros();

  const std::vector<std::pair<std::string, state::NodeView>> views = nodes.NodesOfFlavor(flavor);
  std::vector<std::shared_ptr<const model::NodePlacement>> placements;
  placements.reserve(views.size());
  for (const auto& [name, view] : views) placements.push_back(view.placement);
  NodeEligibility eligible;
  eligible.Compute(pod.node_selector, pod.placement.get(), placements);

  std::vector<std::string> path(depth);
  for (size_t i = 0; i < views.size(); ++i) {
    const auto& [name, view] = views[i];
    if (view.placement == nullptr) continue;
    bool labelled = true;
    for (size_t l = 0; l < depth && labelled; ++l) {
      auto it = view.placement->labels.find(levels[l]);
      labelled = it != view.placement->labels.end() && !it->second.empty();
      if (labelled) path[l] = it->second;
    }
    if (!labelled) continue;
    Domain& domain = domains[path];
    domain.name = path.back();
    if (!view.schedulable || !eligible.accepts[i]) continue;
    const int64_t fits = PodsFitting(FreeRoom(nodes, name, view, now_ms, self), want);
    if (fits == 0) continue;
    domain.fits = model::SaturatingAdd(domain.fits, fits);
    domain.nodes.push_back(name);
  }
  return domains;
}

}  // namespace

DomainChoice ChooseDomain(const state::NodeCache& nodes, model::NameId flavor,
                          const std::vector<std::string>& levels, std::string_view level,
                          const model::Pod& pod, const model::ResourceList& request, int64_t count,
                          int64_t now_ms, state::Holder self) {
  DomainChoice choice;
  choice.wanted = count;
  const std::map<std::vector<std::string>, Domain> domains =
      DomainsAt(nodes, flavor, levels, level, pod, request, now_ms, self);
  choice.domains = domains.size();
  const Domain* best = nullptr;     // the tightest that fits
  const Domain* largest = nullptr;  // the one that fits the most
  for (const auto& [values, domain] : domains) {
    if (largest == nullptr || domain.fits > largest->fits) largest = &domain;
    if (domain.fits >= count && (best == nullptr || domain.fits < best->fits)) best = &domain;
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

DomainChoice ChooseFewestDomains(const state::NodeCache& nodes, model::NameId flavor,
                                 const std::vector<std::string>& levels, std::string_view level,
                                 const model::Pod& pod, const model::ResourceList& request,
                                 int64_t count, int64_t now_ms, state::Holder self) {
  DomainChoice one = ChooseDomain(nodes, flavor, levels, level, pod, request, count, now_ms, self);
  if (one.found || one.domains == 0) return one;
  const std::map<std::vector<std::string>, Domain> domains =
      DomainsAt(nodes, flavor, levels, level, pod, request, now_ms, self);
  std::vector<const Domain*> order;
  for (const auto& [values, domain] : domains) {
    if (domain.fits > 0) order.push_back(&domain);
  }
  // Most room first (the fewest domains); the last one taken the tightest that completes it.
  std::stable_sort(order.begin(), order.end(),
                   [](const Domain* a, const Domain* b) { return a->fits > b->fits; });
  DomainChoice choice;
  choice.wanted = count;
  choice.domains = domains.size();
  int64_t placed = 0;
  for (size_t i = 0; i < order.size() && placed < count; ++i) {
    const int64_t missing = count - placed;
    const Domain* take = order[i];
    for (size_t j = i + 1; j < order.size(); ++j) {  // a tighter one that still completes it
      if (order[j]->fits >= missing && order[j]->fits < take->fits) {
        std::swap(order[i], order[j]);
        take = order[i];
      }
    }
    placed = model::SaturatingAdd(placed, take->fits);
    choice.name += (choice.name.empty() ? "" : "+") + take->name;
    choice.nodes.insert(choice.nodes.end(), take->nodes.begin(), take->nodes.end());
  }
  choice.fits = placed;
  choice.found = placed >= count;
  return choice;
}

}  // namespace taskgov::scheduler::decisions
