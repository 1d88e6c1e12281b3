#include "scheduler/decisions/topology.h"

#include <algorithm>
#include <climits>
#include <memory>
#include <optional>
#include <unordered_map>
#include <utility>

#include "scheduler/common/k8s_names.h"
#include "scheduler/decisions/placement.h"
#include "scheduler/model/quantity.h"

namespace taskgov::scheduler::decisions {

namespace {

// Go's strconv.ParseBool.
std::optional<bool> ParseGoBool(std::string_view v) {
  for (std::string_view t : {"1", "t", "T", "TRUE", "true", "True"}) {
    if (v == t) return true;
  }
  for (std::string_view f : {"0", "f", "F", "FALSE", "false", "False"}) {
    if (v == f) return false;
  }
  return std::nullopt;
}

// Go's strconv.ParseInt(v, 10, 32): an optional sign, then decimal digits only.
std::optional<int64_t> ParseInt32(std::string_view v) {
  size_t i = (!v.empty() && (v[0] == '+' || v[0] == '-')) ? 1 : 0;
  if (i == v.size() || v.size() - i > 10) return std::nullopt;
  int64_t n = 0;
  for (size_t k = i; k < v.size(); ++k) {
    if (v[k] < '0' || v[k] > '9') return std::nullopt;
    n = n * 10 + (v[k] - '0');
  }
  if (v[0] == '-') n = -n;
  if (n > INT32_MAX || n < INT32_MIN) return std::nullopt;
  return n;
}

std::string Quoted(std::string_view key, std::string_view value) {
  return std::string(key) + ": \"" + std::string(value) + "\"";
}

}  // namespace

TopologyRequest TopologyRequestOf(const model::Labels& annotations) {
  TopologyRequest out;
  auto find = [&](const char* key) -> const std::string* {
    auto it = annotations.find(key);
    return it == annotations.end() ? nullptr : &it->second;
  };
  auto invalid = [&](std::string why) {
    if (out.invalid.empty()) out.invalid = std::move(why);
  };
  const std::string* required = find(kRequiredTopologyAnnotation);
  const std::string* preferred = find(kPreferredTopologyAnnotation);
  const std::string* unconstrained = find(kUnconstrainedTopologyAnnotation);
  const std::string* slice_level = find(kSliceRequiredTopologyAnnotation);
  const std::string* slice_size = find(kSliceSizeAnnotation);
  if ((required != nullptr) + (preferred != nullptr) + (unconstrained != nullptr) > 1) {
    invalid(std::string("at most one of ") + kRequiredTopologyAnnotation + ", " +
            kPreferredTopologyAnnotation + " and " + kUnconstrainedTopologyAnnotation +
            " may be set");
  }
  for (auto [key, value] : {std::pair{kRequiredTopologyAnnotation, required},
                            std::pair{kPreferredTopologyAnnotation, preferred},
                            std::pair{kSliceRequiredTopologyAnnotation, slice_level}}) {
    if (value != nullptr && !common::IsQualifiedName(*value)) {
      invalid(Quoted(key, *value) + " is not a node label name");
    }
  }
  if (required != nullptr) {
    out.mode = TopologyRequest::Mode::kRequired;
    out.level = *required;
  } else if (preferred != nullptr) {
    out.mode = TopologyRequest::Mode::kPreferred;
    out.level = *preferred;
  } else if (unconstrained != nullptr) {
    const std::optional<bool> b = ParseGoBool(*unconstrained);
    if (!b) invalid(Quoted(kUnconstrainedTopologyAnnotation, *unconstrained) + " is not a boolean");
    if (b.value_or(false)) out.mode = TopologyRequest::Mode::kUnconstrained;
  }
  if (slice_size != nullptr) {
    const std::optional<int64_t> n = ParseInt32(*slice_size);
    if (!n) {
      invalid(Quoted(kSliceSizeAnnotation, *slice_size) + " is not an integer");
    } else if (*n < 1) {
      invalid(Quoted(kSliceSizeAnnotation, *slice_size) + " must be at least 1");
    } else {
      out.slice_size = *n;
    }
  }
  if (slice_level != nullptr && slice_size == nullptr) {
    invalid(std::string(kSliceSizeAnnotation) + " must be set with " +
            Quoted(kSliceRequiredTopologyAnnotation, *slice_level));
  }
  if (slice_level == nullptr && slice_size != nullptr) {
    invalid(Quoted(kSliceSizeAnnotation, *slice_size) + " may not be set without " +
            kSliceRequiredTopologyAnnotation);
  }
  if (const std::string* layers = find(kSliceConstraintsAnnotation)) {
    invalid(Quoted(kSliceConstraintsAnnotation, *layers) +
            ": multi-layer slices are not supported by taskgov (use " +
            kSliceRequiredTopologyAnnotation + " and " + kSliceSizeAnnotation + ")");
  }
  if (slice_level != nullptr && out.slice_size > 0) {
    out.slice_level = *slice_level;
    if (out.mode == TopologyRequest::Mode::kNone) out.mode = TopologyRequest::Mode::kUnconstrained;
  }
  return out;
}

TopologyRequest TopologyRequestOf(const model::Pod& pod) {
  return TopologyRequestOf(pod.annotations);
}

namespace {

constexpr const char* kTopologyAnnotations[] = {kRequiredTopologyAnnotation,
                                                kPreferredTopologyAnnotation,
                                                kUnconstrainedTopologyAnnotation,
                                                kSliceRequiredTopologyAnnotation,
                                                kSliceSizeAnnotation,
                                                kSliceConstraintsAnnotation};

// The topology annotations among `annotations`.
model::Labels TopologyPart(const model::Labels& annotations) {
  model::Labels out;
  for (const char* key : kTopologyAnnotations) {
    if (auto it = annotations.find(key); it != annotations.end()) out.emplace(key, it->second);
  }
  return out;
}

}  // namespace

bool HasTopologyAnnotations(const model::Labels& annotations) {
  for (const char* key : kTopologyAnnotations) {
    if (annotations.contains(key)) return true;
  }
  return false;
}

TopologyRequest TopologyRequestOfGang(const model::Pod& pod, const model::JobControl* job) {
  if (job == nullptr || HasTopologyAnnotations(pod.annotations)) return TopologyRequestOf(pod);
  if (HasTopologyAnnotations(job->annotations)) return TopologyRequestOf(job->annotations);
  // Its pod templates', when they all say the same.
  std::optional<model::Labels> templates;
  for (const model::JobControl::PodSet& set : job->pod_sets) {
    model::Labels mine = TopologyPart(set.pod.annotations);
    if (templates && *templates != mine) return TopologyRequestOf(pod);
    templates = std::move(mine);
  }
  return templates ? TopologyRequestOf(*templates) : TopologyRequestOf(pod);
}

TopologyRequest TopologyRequestOfGang(const state::ClusterState& cluster, const model::Pod& pod,
                                      const model::WorkloadRef& workload) {
  if (!workload.gang() || HasTopologyAnnotations(pod.annotations)) return TopologyRequestOf(pod);
  const std::shared_ptr<const model::JobControl> job = cluster.JobOf(workload.key);
  return TopologyRequestOfGang(pod, job.get());
}

std::string CheckTopologyRequest(const TopologyRequest& request, int64_t count,
                                 const std::vector<std::string>& levels) {
  if (!request.invalid.empty()) return request.invalid;
  if (!request.sliced()) return "";
  if (request.slice_size > count) {
    return Quoted(kSliceSizeAnnotation, std::to_string(request.slice_size)) +
           " must not be greater than the gang's " + std::to_string(count) + " pods";
  }
  const auto slice = std::find(levels.begin(), levels.end(), request.slice_level);
  const auto podset = std::find(levels.begin(), levels.end(), request.level);
  if (!request.level.empty() && slice != levels.end() && podset != levels.end() && slice < podset) {
    return "podset slice topology " + request.slice_level + " is above the podset topology " +
           request.level;
  }
  return "";
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

namespace {

// "8 nvidia.com/gpu, 64 cpu" ("nothing" for nothing).
std::string Requested(const model::ResourceList& request) {
  std::string what;
  for (const model::ResourceAmount& r : request) {
    if (r.amount <= 0) continue;
    what += (what.empty() ? "" : ", ") + model::FormatQuantity(r.name, r.amount) + " " + r.name;
  }
  return what.empty() ? std::string("nothing") : what;
}

// "; the best has room for 3 (domain nn-4, 8 domains)".
std::string TheBest(int64_t fits, std::string_view name, size_t domains) {
  return "; the best has room for " + std::to_string(fits) + " (domain " + std::string(name) +
         ", " + std::to_string(domains) + " domain" + (domains == 1 ? "" : "s") + ")";
}

}  // namespace

std::string DomainChoice::Refusal(std::string_view level, std::string_view flavor,
                                  const model::ResourceList& request) const {
  std::string out = "no " + LevelName(level) + " domain of " + std::string(flavor) +
                    " has room for " + std::to_string(wanted) + " pods of " + Requested(request);
  if (domains == 0) return out + " (no node of it has the label " + std::string(level) + ")";
  return out + TheBest(fits, name, domains);
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
  nodes.CountFits(flavor, model::ToIdAmounts(want), self, now_ms, &capacity);
  NodeEligibility eligible;
  eligible.Compute(pod.node_selector, pod.placement.get(), capacity.size(),
                   [&](size_t i) { return capacity[i].placement.get(); });

  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::unordered_map<std::string, size_t, Hash, std::equal_to<>> index;  // key -> domains[]
  // The node cache's topology path of each node (NodePlacement::topology) when it was made for
  // these levels, else one made here from its labels.
  const uint64_t stamp = model::TopologyLevelsStamp(levels);
  model::TopologyPath own;
  for (size_t i = 0; i < capacity.size(); ++i) {
    const state::NodeCache::NodeCapacity& c = capacity[i];
    if (c.placement == nullptr) continue;
    std::string_view key;
    std::string_view value;
    if (!model::TopologyPathAt(*c.placement, levels, stamp, &own).At(depth, &key, &value)) {
      continue;  // it lacks a label down to the level
    }
    auto slot = index.find(key);
    if (slot == index.end()) {
      slot = index.emplace(std::string(key), domains.size()).first;
      domains.push_back(Domain{std::string(key), std::string(value), 0, {}});
    }
    if (c.fits == 0 || !eligible.accepts[i]) continue;
    Domain& domain = domains[slot->second];
    domain.fits = model::SaturatingAdd(domain.fits, c.fits);
    domain.nodes.push_back(c.node);
  }
  capacity.clear();  // the placements are not kept past the choice (their memory is)
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

int GangSlices::Assign(std::string_view uid, int64_t now_ms,
                       const std::function<bool(std::string_view uid)>& holds) {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<int64_t> count(domains_.size(), 0);
  int mine = -1;
  for (auto it = place_.begin(); it != place_.end();) {
    if (it->first == uid) {
      mine = it->second.domain;
    } else if (now_ms - it->second.at_ms < kGraceMs || holds(it->first)) {
      ++count[it->second.domain];
    } else {
      it = place_.erase(it);  // gone: its place is free
      continue;
    }
    ++it;
  }
  auto room = [&](int d) { return count[d] < domains_[d].slices * size_; };
  int chosen = mine >= 0 && room(mine) ? mine : -1;
  for (int d = 0; chosen < 0 && d < static_cast<int>(domains_.size()); ++d) {
    if (count[d] % size_ != 0 && room(d)) chosen = d;  // a slice begun: complete it
  }
  for (int d = 0; chosen < 0 && d < static_cast<int>(domains_.size()); ++d) {
    if (room(d)) chosen = d;
  }
  if (chosen < 0) {
    place_.erase(std::string(uid));
    return -1;
  }
  place_.insert_or_assign(std::string(uid), Place{chosen, now_ms});
  return chosen;
}

void GangSlices::Forget(std::string_view uid) {
  std::lock_guard<std::mutex> lock(mu_);
  place_.erase(std::string(uid));
}

namespace {

// A set of slice-level domains sharing the values of the levels down to some depth.
struct SliceGroup {
  std::string_view key;   // the shared values, each followed by '\x1f'
  std::string_view name;  // its value at that depth
  int64_t slices = 0;
  int64_t pods = 0;
  std::vector<const Domain*> members;
};

// Kueue's sortedDomains: BestFit most slices first, LeastFreeCapacity fewest first; then the
// fewest pods, then the values.
void SortGroups(std::vector<SliceGroup>* groups, bool least_free) {
  std::sort(groups->begin(), groups->end(), [&](const SliceGroup& a, const SliceGroup& b) {
    if (a.slices != b.slices) return least_free ? a.slices < b.slices : a.slices > b.slices;
    if (a.pods != b.pods) return a.pods < b.pods;
    return a.key < b.key;
  });
}

// `members` grouped by their values down to `depth` levels, with ⌊pods / size⌋ slices per
// slice-level domain summed.
std::vector<SliceGroup> GroupAt(const std::vector<const Domain*>& members, size_t depth,
                                int64_t size) {
  std::vector<SliceGroup> groups;
  std::unordered_map<std::string_view, size_t> index;
  for (const Domain* d : members) {
    size_t end = 0;
    size_t begin = 0;
    for (size_t l = 0; l < depth; ++l) {
      begin = end;
      end = d->key.find('\x1f', begin) + 1;
    }
    const std::string_view key = std::string_view(d->key).substr(0, end);
    auto [slot, added] = index.try_emplace(key, groups.size());
    if (added) {
      SliceGroup g;
      g.key = key;
      g.name = std::string_view(d->key).substr(begin, end - begin - 1);
      groups.push_back(std::move(g));
    }
    SliceGroup& g = groups[slot->second];
    g.slices = model::SaturatingAdd(g.slices, d->fits / size);
    g.pods = model::SaturatingAdd(g.pods, d->fits);
    g.members.push_back(d);
  }
  return groups;
}

// The first of the sorted `groups` with the fewest slices ≥ `need` (Kueue's
// findBestFitDomainForSlices); null when none has that many.
const SliceGroup* BestFit(const std::vector<SliceGroup>& groups, size_t from, int64_t need) {
  const SliceGroup* best = nullptr;
  for (size_t i = from; i < groups.size(); ++i) {
    if (groups[i].slices >= need && (best == nullptr || groups[i].slices < best->slices)) {
      best = &groups[i];
    }
  }
  return best;
}

// Takes slices from the sorted `groups` until `need` are taken (Kueue's
// updateCountsToMinimumGeneric without leaders): in order, BestFit choosing the last as the
// tightest that completes them. Empty when they do not hold `need`.
std::vector<std::pair<const SliceGroup*, int64_t>> Take(const std::vector<SliceGroup>& groups,
                                                        int64_t need, bool least_free) {
  std::vector<std::pair<const SliceGroup*, int64_t>> taken;
  for (size_t i = 0; i < groups.size() && need > 0; ++i) {
    const SliceGroup* g = &groups[i];
    if (g->slices == 0) continue;
    if (!least_free && g->slices >= need) g = BestFit(groups, i, need);
    const int64_t take = std::min(g->slices, need);
    taken.emplace_back(g, take);
    need -= take;
  }
  if (need > 0) taken.clear();
  return taken;
}

// The slice-level domains under `group` (at `depth`) for `need` slices, level by level down to
// `slice_depth`, appended to `out`.
void Descend(const SliceGroup& group, size_t depth, size_t slice_depth, int64_t need, int64_t size,
             bool least_free, std::vector<GangSlices::Domain>* out) {
  if (depth == slice_depth) {
    GangSlices::Domain d;
    d.name = std::string(group.name);
    d.slices = need;
    for (const Domain* member : group.members) {
      for (model::NameId node : member->nodes) {
        if (node >= d.members.size()) d.members.resize(node + 1, 0);
        d.members[node] = 1;
      }
    }
    out->push_back(std::move(d));
    return;
  }
  std::vector<SliceGroup> children = GroupAt(group.members, depth + 1, size);
  SortGroups(&children, least_free);
  for (const auto& [child, take] : Take(children, need, least_free)) {
    Descend(*child, depth + 1, slice_depth, take, size, least_free, out);
  }
}

}  // namespace

std::string SliceChoice::Refusal(const TopologyRequest& request, std::string_view flavor,
                                 const model::ResourceList& request_each) const {
  const std::string what = std::to_string(wanted) + " slices of " +
                           std::to_string(request.slice_size) + " pods (each slice in one " +
                           LevelName(request.slice_level) + " domain) of " +
                           Requested(request_each);
  if (request.level.empty()) {
    std::string out = std::string(flavor) + " has room for " + std::to_string(fits) + " of " + what;
    if (domains == 0) out += " (no node of it has the label " + request.slice_level + ")";
    return out;
  }
  std::string out = "no " + LevelName(request.level) + " domain of " + std::string(flavor) +
                    " has room for " + what;
  if (domains == 0)
    return out + " (no node of it has the labels down to " + request.slice_level + ")";
  return out + TheBest(fits, name, domains);
}

SliceChoice ChooseSlices(const state::NodeCache& nodes, model::NameId flavor,
                         const std::vector<std::string>& levels, const TopologyRequest& request,
                         const model::Pod& pod, const model::ResourceList& request_each,
                         int64_t count, int64_t now_ms, state::Holder self) {
  SliceChoice choice;
  const int64_t size = std::max<int64_t>(1, request.slice_size);
  choice.wanted = (count + size - 1) / size;
  const auto slice_at = std::find(levels.begin(), levels.end(), request.slice_level);
  const auto podset_at = std::find(levels.begin(), levels.end(), request.level);
  if (slice_at == levels.end() || (!request.level.empty() && podset_at > slice_at)) return choice;
  const size_t slice_depth = static_cast<size_t>(slice_at - levels.begin()) + 1;
  const std::vector<Domain> domains =
      DomainsAt(nodes, flavor, levels, request.slice_level, pod, request_each, now_ms, self);
  std::vector<const Domain*> all;
  all.reserve(domains.size());
  for (const Domain& d : domains) all.push_back(&d);
  // Unconstrained: Kueue's search at the highest level, least free first.
  const bool least_free = request.level.empty();
  const size_t depth = least_free ? 1 : static_cast<size_t>(podset_at - levels.begin()) + 1;
  std::vector<SliceGroup> groups = GroupAt(all, depth, size);
  choice.domains = least_free ? domains.size() : groups.size();
  SortGroups(&groups, least_free);
  std::vector<std::pair<const SliceGroup*, int64_t>> taken;
  if (least_free) {
    for (const SliceGroup& g : groups) {  // one domain when one holds them: the least free
      if (g.slices >= choice.wanted) {
        taken.emplace_back(&g, choice.wanted);
        break;
      }
    }
  } else if (const SliceGroup* one = BestFit(groups, 0, choice.wanted)) {
    taken.emplace_back(one, choice.wanted);
  }
  if (taken.empty() && request.mode != TopologyRequest::Mode::kRequired) {
    taken = Take(groups, choice.wanted, least_free);
  }
  if (taken.empty()) {
    if (least_free) {  // the flavor's
      for (const SliceGroup& g : groups) choice.fits = model::SaturatingAdd(choice.fits, g.slices);
    } else if (!groups.empty()) {  // sorted: the one holding the most first
      choice.fits = groups.front().slices;
      choice.name = std::string(groups.front().name);
    }
    return choice;
  }
  choice.found = true;
  for (const auto& [group, take] : taken) {
    choice.name += (choice.name.empty() ? "" : "+") + std::string(group->name);
    choice.fits = model::SaturatingAdd(choice.fits, group->slices);
    Descend(*group, depth, slice_depth, take, size, least_free, &choice.slices);
  }
  return choice;
}

}  // namespace taskgov::scheduler::decisions
