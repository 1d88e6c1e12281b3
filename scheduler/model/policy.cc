#include "scheduler/model/policy.h"

#include <algorithm>
#include <functional>
#include <map>
#include <tuple>

#include "scheduler/model/resources.h"

namespace taskgov::scheduler::model {

int64_t ResourceQuota::guaranteed() const { return nominal - lendable(); }

int64_t ResourceQuota::ceiling() const {
  return borrowing_limit == kUnlimited ? kUnlimited : SaturatingAdd(nominal, borrowing_limit);
}

int64_t ResourceQuota::lendable() const { return std::min(lending_limit, nominal); }

bool LabelSelector::Matches(const Labels& labels) const {
  if (nothing) return false;
  for (const auto& [key, value] : match_labels) {
    auto it = labels.find(key);
    if (it == labels.end() || it->second != value) return false;
  }
  for (const Requirement& r : match_expressions) {
    auto it = labels.find(r.key);
    const bool has = it != labels.end();
    const bool listed =
        has && std::find(r.values.begin(), r.values.end(), it->second) != r.values.end();
    switch (r.op) {
      case Operator::kIn:
        if (!listed) return false;
        break;
      case Operator::kNotIn:
        if (listed) return false;
        break;
      case Operator::kExists:
        if (!has) return false;
        break;
      case Operator::kDoesNotExist:
        if (has) return false;
        break;
    }
  }
  return true;
}

std::string LabelSelector::ToString() const {
  if (nothing) return "<none>";
  std::string out;
  auto add = [&out](const std::string& term) { out += (out.empty() ? "" : ",") + term; };
  for (const auto& [key, value] : match_labels) add(key + "=" + value);
  for (const Requirement& r : match_expressions) {
    std::string values;
    for (const std::string& v : r.values) values += (values.empty() ? "" : ",") + v;
    switch (r.op) {
      case Operator::kIn:
        add(r.key + " in (" + values + ")");
        break;
      case Operator::kNotIn:
        add(r.key + " notin (" + values + ")");
        break;
      case Operator::kExists:
        add(r.key);
        break;
      case Operator::kDoesNotExist:
        add("!" + r.key);
        break;
    }
  }
  return out;
}

namespace {

// The cohort tree as the policy gives it: each cohort's parent ("" at a root; a parent that
// would close a cycle, an error the config check reports, is dropped — the later link), its root
// and its depth. Near-linear in the number of cohorts (a union-find finds the cycles), so that a
// policy of thousands of nested cohorts loads as fast as a flat one.
struct CohortTree {
  std::map<std::string, std::string, std::less<>> parent;
  std::map<std::string, std::string, std::less<>> root;
  std::map<std::string, int, std::less<>> depth;
};

CohortTree BuildCohortTree(const Policy& policy) {
  CohortTree tree;
  for (const Team& t : policy.teams) {
    if (!t.cohort.empty()) tree.parent.emplace(t.cohort, "");
  }
  for (const Cohort& c : policy.cohorts) {
    tree.parent.emplace(c.name, "");
    if (!c.parent.empty()) tree.parent.emplace(c.parent, "");
  }
  std::map<std::string_view, size_t> id;
  for (const auto& [name, unused] : tree.parent) id.emplace(name, id.size());
  std::vector<size_t> set(id.size());
  for (size_t i = 0; i < set.size(); ++i) set[i] = i;
  auto find = [&](size_t x) {
    while (set[x] != x) x = set[x] = set[set[x]];
    return x;
  };
  for (const Cohort& c : policy.cohorts) {
    std::string& parent = tree.parent.at(c.name);
    if (c.parent.empty() || !parent.empty()) continue;  // a root, or linked already
    const size_t from = find(id.at(c.name));
    const size_t to = find(id.at(c.parent));
    if (from == to) continue;  // its parent is under it: a cycle
    parent = c.parent;
    set[from] = to;
  }
  for (const auto& [name, unused] : tree.parent) {
    // Up to a cohort whose root is known already, or to a root (the path's last).
    std::vector<std::string_view> path;
    std::string_view at = name;
    bool known = false;
    while (true) {
      if (tree.root.count(at)) {
        known = true;
        break;
      }
      path.push_back(at);
      const std::string& up = tree.parent.find(at)->second;
      if (up.empty()) break;
      at = up;
    }
    const std::string top = known ? tree.root.find(at)->second : std::string(path.back());
    int depth = known ? tree.depth.find(at)->second : -1;
    for (auto it = path.rbegin(); it != path.rend(); ++it) {
      ++depth;
      tree.root.emplace(std::string(*it), top);
      tree.depth.emplace(std::string(*it), depth);
    }
  }
  return tree;
}

}  // namespace

void Policy::IndexFlavors() {
  flavor_index.clear();
  flavors_by_first_label.clear();
  for (size_t i = 0; i < flavors.size(); ++i) {
    flavor_index.emplace(flavors[i].name, i);  // the first of a name wins, as a scan finds it
    if (!flavors[i].node_labels.empty()) {
      const auto& [key, value] = *flavors[i].node_labels.begin();
      flavors_by_first_label[{key, value}].push_back(i);
    }
  }
}

std::vector<std::string> TopologyLevelsOf(const Flavor& flavor) {
  if (!flavor.topology_levels.empty()) return flavor.topology_levels;
  if (!flavor.name.starts_with("ml.")) return {};
  return {"topology.k8s.aws/network-node-layer-1", "topology.k8s.aws/network-node-layer-2",
          "topology.k8s.aws/network-node-layer-3", "kubernetes.io/hostname"};
}

std::vector<std::string> TopologyLevelsOf(const Policy& policy, std::string_view flavor) {
  if (const Flavor* f = policy.FindFlavor(flavor)) return TopologyLevelsOf(*f);
  Flavor named;  // a flavor named by an instance type alone is not among the policy's
  named.name = std::string(flavor);
  return TopologyLevelsOf(named);
}

uint64_t TopologyLevelsStamp(const std::vector<std::string>& levels) {
  std::string joined;
  for (const std::string& level : levels) joined.append(level).push_back('\x1f');
  const uint64_t hash = std::hash<std::string>{}(joined);
  return hash == 0 ? 1 : hash;
}

TopologyPath TopologyPathOf(const std::vector<std::string>& levels, const Labels& labels) {
  TopologyPath path;
  path.levels = levels.empty() ? 0 : TopologyLevelsStamp(levels);
  for (const std::string& level : levels) {
    auto it = labels.find(level);
    if (it == labels.end() || it->second.empty()) break;
    path.values.append(it->second).push_back('\x1f');
    path.ends.push_back(static_cast<uint32_t>(path.values.size()));
  }
  return path;
}

const TopologyPath& TopologyPathAt(const NodePlacement& node,
                                   const std::vector<std::string>& levels, uint64_t stamp,
                                   TopologyPath* scratch) {
  if (node.topology.levels == stamp) return node.topology;
  *scratch = TopologyPathOf(levels, node.labels);
  return *scratch;
}

const Flavor* Policy::FindFlavor(std::string_view name) const {
  if (flavor_index.size() == flavors.size() && !flavors.empty()) {
    auto it = flavor_index.find(name);
    return it == flavor_index.end() ? nullptr : &flavors[it->second];
  }
  for (const Flavor& f : flavors) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

void Policy::Finalize() {
  IndexFlavors();
  team_index.clear();
  namespace_index.clear();
  for (size_t i = 0; i < teams.size(); ++i) {
    team_index.emplace(teams[i].name, i);
    for (const std::string& ns : teams[i].namespaces) namespace_index.emplace(ns, i);
  }
  cohort_index.clear();
  for (size_t i = 0; i < cohorts.size(); ++i) cohort_index.emplace(cohorts[i].name, i);
  CohortTree tree = BuildCohortTree(*this);
  cohort_root = std::move(tree.root);
  cohort_parent = std::move(tree.parent);
  std::map<std::string_view, uint32_t> roots;
  for (const auto& [cohort, root] : cohort_root) roots.emplace(root, 0);
  uint32_t next = 0;
  for (auto& [root, id] : roots) id = next++;
  team_tree.clear();
  for (const Team& t : teams) {
    team_tree.push_back(t.cohort.empty() ? kNoCohortTree : roots.at(RootCohort(t.cohort)));
  }
}

const Team* Policy::FindTeam(std::string_view name) const {
  auto it = team_index.find(name);
  return it == team_index.end() ? nullptr : &teams[it->second];
}

std::vector<CohortPool> CohortPools(const Policy& policy) {
  const CohortTree tree = BuildCohortTree(policy);
  const auto& parent = tree.parent;
  using Key = std::tuple<std::string, std::string, std::string>;  // cohort, flavor, resource
  std::map<Key, CohortPool> pools;
  // The pools of (flavor, resource) from cohort `from` up to its root.
  // A pool that exists has its ancestors' already: the walk stops there, so making every path
  // costs each pool once, not once per line under it.
  auto make_path = [&](const std::string& from, const std::string& flavor,
                       const std::string& resource) {
    for (std::string at = from; !at.empty(); at = parent.at(at)) {
      auto [it, inserted] = pools.try_emplace(Key{at, flavor, resource});
      if (!inserted && !it->second.cohort.empty()) break;
      CohortPool& pool = it->second;
      pool.cohort = at;
      pool.parent = parent.at(at);
      pool.flavor = flavor;
      pool.resource = resource;
    }
  };
  for (const Team& t : policy.teams) {
    if (t.cohort.empty()) continue;
    for (const FlavorQuota& fq : t.flavors) {
      for (const ResourceQuota& q : fq.resources) {
        CohortPool& own = pools[{t.cohort, fq.flavor, q.resource}];
        own.teams = SaturatingAdd(own.teams, q.lendable());
        make_path(t.cohort, fq.flavor, q.resource);
      }
    }
  }
  // A cohort's own quota joins its tree wherever a team of the tree governs the (flavor,
  // resource), teams under the cohort or not (Kueue passes every cohort's subtree quota up): the
  // cohort's pool and its ancestors' are made.
  for (const Cohort& c : policy.cohorts) {
    const std::string& root = tree.root.at(c.name);
    for (const FlavorQuota& fq : c.flavors) {
      for (const ResourceQuota& q : fq.resources) {
        if (pools.count({root, fq.flavor, q.resource})) make_path(c.name, fq.flavor, q.resource);
      }
    }
  }
  std::map<Key, int64_t> lending;  // a cohort's lending limit on its pool (absent: none)
  for (const Cohort& c : policy.cohorts) {
    for (const FlavorQuota& fq : c.flavors) {
      for (const ResourceQuota& q : fq.resources) {
        auto it = pools.find({c.name, fq.flavor, q.resource});
        if (it == pools.end()) continue;  // no team of the cohort's tree could use it
        it->second.own = SaturatingAdd(it->second.own, q.nominal);
        if (it->second.parent.empty()) continue;  // a root's limits bound nothing
        it->second.borrowing_limit = q.borrowing_limit;
        lending[it->first] = q.lending_limit;
      }
    }
  }
  // Children before parents: by depth, deepest first.
  std::vector<std::tuple<int, Key, CohortPool*>> order;
  for (auto& [key, pool] : pools) order.emplace_back(-tree.depth.at(pool.cohort), key, &pool);
  std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) {
    return std::tie(std::get<0>(a), std::get<1>(a)) < std::tie(std::get<0>(b), std::get<1>(b));
  });
  std::vector<CohortPool> out;
  for (const auto& [depth, key, pool] : order) {
    pool->subtree = SaturatingAdd(SaturatingAdd(pool->teams, pool->own), pool->children);
    if (pool->parent.empty()) {
      pool->local = pool->subtree;
    } else {
      auto limit = lending.find(key);
      pool->local = limit == lending.end() || limit->second == kUnlimited
                        ? 0
                        : std::max<int64_t>(0, SaturatingSub(pool->subtree, limit->second));
      CohortPool& up = pools.at({pool->parent, pool->flavor, pool->resource});
      up.children = SaturatingAdd(up.children, pool->subtree - pool->local);
    }
    out.push_back(*pool);
  }
  return out;
}

const Cohort* Policy::FindCohort(std::string_view name) const {
  auto it = cohort_index.find(name);
  if (it != cohort_index.end()) return &cohorts[it->second];
  for (const Cohort& c : cohorts) {  // not finalized (a policy being built)
    if (cohort_index.empty() && c.name == name) return &c;
  }
  return nullptr;
}

bool Policy::SameCohortTree(const Team& a, const Team& b) const {
  const uint32_t tree = team_tree[static_cast<size_t>(&a - teams.data())];
  return tree != kNoCohortTree && tree == team_tree[static_cast<size_t>(&b - teams.data())];
}

std::string_view Policy::ParentCohort(std::string_view cohort) const {
  auto it = cohort_parent.find(cohort);
  return it == cohort_parent.end() ? std::string_view() : std::string_view(it->second);
}

std::string_view Policy::RootCohort(std::string_view cohort) const {
  auto it = cohort_root.find(cohort);
  return it == cohort_root.end() ? cohort : std::string_view(it->second);
}

const Team* Policy::TeamOfNamespace(std::string_view ns) const {
  auto it = namespace_index.find(ns);
  return it == namespace_index.end() ? nullptr : &teams[it->second];
}

const PriorityClass* Policy::FindPriorityClass(std::string_view name) const {
  for (const PriorityClass& pc : priority_classes) {
    if (pc.name == name) return &pc;
  }
  return nullptr;
}

namespace {

// A flavor's node labels as the covering rule reads them: its own, or for an instance type the
// policy does not define, the label naming it.
Labels CoverLabels(const Flavor* f, std::string_view name, const std::string& instance_label) {
  return f != nullptr && !f->node_labels.empty() ? f->node_labels
                                                 : Labels{{instance_label, std::string(name)}};
}

bool CoversAll(const Flavor* f) {
  return f != nullptr && f->node_labels.empty() && f->matches_all_nodes;
}

bool Subset(const Labels& need, const Labels& have) {
  for (const auto& [key, value] : need) {
    auto it = have.find(key);
    if (it == have.end() || it->second != value) return false;
  }
  return true;
}

// A canonical key of a label set.
std::string LabelKey(const Labels& labels) {
  std::string key;
  for (const auto& [k, v] : labels) {
    key += k;
    key += '\0';
    key += v;
    key += '\0';
  }
  return key;
}

// Subsets of a flavor's labels are enumerated up to this many labels (4,096 subsets); a flavor
// with more is compared with every flavor of the team instead.
constexpr size_t kMaxEnumeratedLabels = 12;

}  // namespace

bool Policy::FlavorCovers(std::string_view covering, std::string_view flavor) const {
  const Flavor* outer = FindFlavor(covering);
  if (CoversAll(outer)) return true;
  return Subset(CoverLabels(outer, covering, instance_type_label),
                CoverLabels(FindFlavor(flavor), flavor, instance_type_label));
}

std::vector<std::pair<std::string, std::string>> Policy::Companions(const Team& team,
                                                                    std::string_view flavor) const {
  std::vector<std::pair<std::string, std::string>> out;
  const auto own = std::find_if(team.flavors.begin(), team.flavors.end(),
                                [&](const FlavorQuota& fq) { return fq.flavor == flavor; });
  if (own == team.flavors.end()) return out;
  std::vector<std::vector<std::pair<std::string, std::string>>> all = TeamCompanions(team);
  return std::move(all[static_cast<size_t>(own - team.flavors.begin())]);
}

std::vector<std::vector<std::pair<std::string, std::string>>> Policy::TeamCompanions(
    const Team& team) const {
  const size_t n = team.flavors.size();
  std::vector<std::vector<std::pair<std::string, std::string>>> out(n);
  if (n < 2) return out;
  std::vector<Labels> labels(n);
  std::vector<size_t> covers_all;                     // team flavor indices, in order
  std::map<std::string, std::vector<size_t>> by_set;  // label set → team flavor indices
  for (size_t i = 0; i < n; ++i) {
    const Flavor* f = FindFlavor(team.flavors[i].flavor);
    labels[i] = CoverLabels(f, team.flavors[i].flavor, instance_type_label);
    if (CoversAll(f)) {
      covers_all.push_back(i);
    } else {
      by_set[LabelKey(labels[i])].push_back(i);
    }
  }
  std::vector<size_t> covering;
  for (size_t j = 0; j < n; ++j) {
    // The team's flavors that cover flavor j: those matching every node, and those whose labels
    // are a subset of j's.
    covering = covers_all;
    const Labels& mine = labels[j];
    if (mine.size() <= kMaxEnumeratedLabels) {
      const std::vector<std::pair<std::string, std::string>> pairs(mine.begin(), mine.end());
      for (uint32_t mask = 1; mask < (1u << pairs.size()); ++mask) {
        Labels subset;
        for (size_t b = 0; b < pairs.size(); ++b) {
          if (mask & (1u << b)) subset.emplace(pairs[b]);
        }
        if (auto it = by_set.find(LabelKey(subset)); it != by_set.end()) {
          covering.insert(covering.end(), it->second.begin(), it->second.end());
        }
      }
    } else {
      for (size_t i = 0; i < n; ++i) {
        if (!CoversAll(FindFlavor(team.flavors[i].flavor)) && Subset(labels[i], mine)) {
          covering.push_back(i);
        }
      }
    }
    std::sort(covering.begin(), covering.end());
    const FlavorQuota& own = team.flavors[j];
    auto charged = [&](const std::string& resource) {
      return std::any_of(own.resources.begin(), own.resources.end(),
                         [&](const ResourceQuota& q) { return q.resource == resource; }) ||
             std::any_of(out[j].begin(), out[j].end(),
                         [&](const auto& c) { return c.first == resource; });
    };
    for (size_t i : covering) {
      const FlavorQuota& fq = team.flavors[i];
      if (fq.flavor == own.flavor) continue;
      for (const ResourceQuota& q : fq.resources) {
        if (!charged(q.resource)) out[j].emplace_back(q.resource, fq.flavor);
      }
    }
  }
  return out;
}

bool Policy::FlavorAllows(std::string_view flavor, const Labels& node_selector) const {
  if (node_selector.empty()) return true;
  const Flavor* defined = FindFlavor(flavor);
  if (defined != nullptr && defined->matches_all_nodes) return true;
  const bool by_labels = defined != nullptr && !defined->node_labels.empty();
  for (const auto& [key, value] : node_selector) {
    if (by_labels) {
      auto it = defined->node_labels.find(key);
      if (it != defined->node_labels.end() && it->second != value) return false;
    } else if (key == instance_type_label && value != flavor) {
      return false;
    }
  }
  return true;
}

std::string Policy::FlavorOfNode(const Labels& node_labels) const {
  auto matches = [&](const Flavor& flavor) { return Subset(flavor.node_labels, node_labels); };
  if (flavor_index.size() == flavors.size() && !flavors.empty()) {
    // Candidates by their first label: the node must carry it.
    size_t best = flavors.size();
    for (const auto& [key, value] : node_labels) {
      auto it = flavors_by_first_label.find({key, value});
      if (it == flavors_by_first_label.end()) continue;
      for (size_t i : it->second) {
        if (i >= best) break;  // ascending: the first matching flavor wins
        if (matches(flavors[i])) best = i;
      }
    }
    if (best < flavors.size()) return flavors[best].name;
  } else {
    for (const Flavor& flavor : flavors) {
      if (!flavor.node_labels.empty() && matches(flavor)) return flavor.name;
    }
  }
  for (const Flavor& flavor : flavors) {
    if (flavor.node_labels.empty() && flavor.matches_all_nodes) return flavor.name;
  }
  auto it = node_labels.find(instance_type_label);
  return it == node_labels.end() ? std::string() : it->second;
}

}  // namespace taskgov::scheduler::model
