#include "scheduler/decisions/gang_room.h"

#include <algorithm>
#include <limits>
#include <memory>
#include <utility>
#include <vector>

#include "scheduler/decisions/placement.h"

namespace taskgov::scheduler::decisions {

namespace {

struct Set {
  int64_t count = 0;
  const model::Pod* pod = nullptr;
  model::ResourceList request;
  double size = 0;  // its largest request as a share of the largest node's allocatable
};

// How many pods asking `request` (no zero amounts) fit in `free`; every pod for an empty request.
int64_t PodsFitting(const model::ResourceList& free, const model::ResourceList& request) {
  int64_t n = std::numeric_limits<int64_t>::max();
  for (const model::ResourceAmount& want : request) {
    n = std::min(n, std::max<int64_t>(0, free.Get(want.name)) / want.amount);
  }
  return n;
}

// A node's free room at `now_ms`: allocatable − what its bound, non-terminal pods request − room
// held there for others than `self`.
model::ResourceList FreeRoom(const state::NodeCache& nodes, const std::string& name,
                             const state::NodeView& view, int64_t now_ms, state::Holder self) {
  const model::ResourceList held = nodes.HeldFor(name, self, now_ms);
  model::ResourceList left;
  for (const model::ResourceAmount& alloc : view.allocatable) {
    left.Set(alloc.name,
             model::SaturatingSub(alloc.amount, model::SaturatingAdd(view.used.Get(alloc.name),
                                                                     held.Get(alloc.name))));
  }
  return left;
}

// RoomForGang for `count` pods asking `request` (their selector and placement spec): Σ over the
// nodes that take them of how many fit, up to `count` (packing pods of one shape places exactly
// that many) — one pass under the node cache's shared lock, without copies (CountFits).
GangRoom RoomForOneShape(const state::NodeCache& nodes, model::NameId flavor,
                         model::ResourceList request, const model::Labels& node_selector,
                         const model::PodPlacementSpec* spec, int64_t count, int64_t now_ms,
                         state::Holder self) {
  request.DropZeros();
  thread_local std::vector<state::NodeCache::NodeCapacity> capacity;  // reused per thread
  nodes.CountFits(flavor, model::ToIdAmounts(request), self, now_ms, &capacity);
  NodeEligibility eligible;
  eligible.Compute(node_selector, spec, capacity.size(),
                   [&](size_t i) { return capacity[i].placement.get(); });
  GangRoom room{count, 0};
  for (size_t i = 0; i < capacity.size() && room.placed < count; ++i) {
    if (eligible.accepts[i])
      room.placed = std::min(count, model::SaturatingAdd(room.placed, capacity[i].fits));
  }
  return room;
}

}  // namespace

GangRoom RoomForGang(const state::NodeCache& nodes, model::NameId flavor,
                     std::span<const PodSetDemand> demands, int64_t now_ms, state::Holder self) {
  if (demands.size() == 1 && demands[0].count > 0 && demands[0].pod != nullptr) {
    const model::Pod& pod = *demands[0].pod;
    return RoomForOneShape(nodes, flavor, model::EffectiveRequest(pod), pod.node_selector,
                           pod.placement.get(), demands[0].count, now_ms, self);
  }
  GangRoom room;
  std::vector<model::ResourceList> free;
  std::vector<std::shared_ptr<const model::NodePlacement>> placements;
  model::ResourceList largest;  // the largest allocatable of each resource on one node
  for (const auto& [name, view] : nodes.NodesOfFlavor(flavor)) {
    if (!view.schedulable) continue;
    largest.MaxWith(view.allocatable);
    free.push_back(FreeRoom(nodes, name, view, now_ms, self));
    placements.push_back(view.placement);
  }
  std::vector<Set> sets;
  for (const PodSetDemand& d : demands) {
    if (d.count <= 0 || d.pod == nullptr) continue;
    room.pods += d.count;
    Set s{d.count, d.pod, model::EffectiveRequest(*d.pod), 0};
    s.request.DropZeros();
    for (const model::ResourceAmount& want : s.request) {
      const int64_t most = largest.Get(want.name);
      s.size = std::max(s.size, most > 0 ? static_cast<double>(want.amount) / most
                                         : std::numeric_limits<double>::infinity());
    }
    sets.push_back(std::move(s));
  }
  std::stable_sort(sets.begin(), sets.end(),
                   [](const Set& a, const Set& b) { return a.size > b.size; });

  NodeEligibility eligible;
  std::vector<std::pair<int64_t, size_t>> takers;  // (pods of the set it takes, node)
  for (const Set& s : sets) {
    eligible.Compute(s.pod->node_selector, s.pod->placement.get(), placements);
    takers.clear();
    for (size_t n = 0; n < free.size(); ++n) {
      if (!eligible.accepts[n]) continue;
      const int64_t k = PodsFitting(free[n], s.request);
      if (k > 0) takers.emplace_back(k, n);
    }
    // Best fit: the fullest nodes that still take a pod of the set first.
    std::sort(takers.begin(), takers.end());
    int64_t left = s.count;
    for (const auto& [k, n] : takers) {
      if (left == 0) break;
      const int64_t take = std::min(k, left);
      for (const model::ResourceAmount& want : s.request) {
        free[n].Set(want.name, free[n].Get(want.name) - model::SaturatingTimes(want.amount, take));
      }
      left -= take;
    }
    room.placed += s.count - left;
  }
  return room;
}

GangRoom RoomForMembers(const state::NodeCache& nodes, model::NameId flavor,
                        const model::Pod& member, int64_t size, const model::JobControl* job,
                        int64_t now_ms, state::Holder self) {
  std::vector<PodSetDemand> sets;
  if (job != nullptr) {
    for (const model::JobControl::PodSet& set : job->pod_sets)
      sets.push_back({set.count, &set.pod});
  }
  if (sets.empty()) sets.push_back({size, &member});
  return RoomForGang(nodes, flavor, sets, now_ms, self);
}

std::optional<GangRoom> RoomForPending(const state::ClusterState& cluster, model::NameId flavor,
                                       const state::PendingPod& pod, int64_t now_ms) {
  const state::Holder self{pod.uid, pod.workload};
  const std::shared_ptr<const model::JobControl> job =
      pod.workload.empty() ? nullptr : cluster.JobOf(pod.workload);
  if (job == nullptr || job->pod_sets.empty()) {  // members like it: no copy of the pod
    return RoomForOneShape(cluster.nodes(), flavor, pod.request, pod.node_selector,
                           pod.placement.get(), std::max(1, pod.workload_size), now_ms, self);
  }
  const std::optional<model::Pod> found = cluster.FindPod(pod.uid);
  if (!found) return std::nullopt;
  return RoomForMembers(cluster.nodes(), flavor, *found, std::max(1, pod.workload_size), job.get(),
                        now_ms, self);
}

std::optional<GangRoom> RoomForUnadmittedGang(const Snapshot& snap,
                                              const state::ClusterState& cluster,
                                              model::NameId flavor) {
  const Subject& me = snap.subject;
  if (!me.workload.gang() || !me.elsewhere.empty() || snap.gang.has_value() ||
      snap.book.Holds(me.pod->uid)) {
    return std::nullopt;
  }
  const std::shared_ptr<const model::JobControl> job = cluster.JobOf(me.workload.key);
  if (job == nullptr || job->pod_sets.size() <= 1) {
    const auto roomy =
        std::count_if(snap.fits.begin(), snap.fits.end(),
                      [&](const state::NodeFit& f) { return f.flavor == flavor && f.room; });
    if (roomy >= me.workload.size) return GangRoom{me.workload.size, me.workload.size};
  }
  return RoomForMembers(cluster.nodes(), flavor, *me.pod, me.workload.size, job.get(), snap.now_ms,
                        state::Holder{me.pod->uid, me.workload.key});
}

}  // namespace taskgov::scheduler::decisions
