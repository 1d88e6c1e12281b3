#include "scheduler/model/objects.h"

namespace taskgov::scheduler::model {
namespace {

// requests, with limits standing in for missing requests.
ResourceList RequestsOf(const ResourceList& requests, const ResourceList& limits) {
  ResourceList out = requests;
  for (const ResourceAmount& limit : limits) {
    if (!out.Has(limit.name)) out.Set(limit.name, limit.amount);
  }
  return out;
}

}  // namespace

const OwnerReference* Pod::controller_owner() const {
  for (const OwnerReference& ref : owner_references) {
    if (ref.controller) return &ref;
  }
  return owner_references.empty() ? nullptr : &owner_references.front();
}

ResourceList EffectiveRequest(const Pod& pod) {
  ResourceList regular;
  for (const Container& c : pod.containers) regular.Add(RequestsOf(c.requests, c.limits));

  ResourceList sidecars;  // restartable init containers started so far
  ResourceList init_peak;
  for (const Container& c : pod.init_containers) {
    ResourceList request = RequestsOf(c.requests, c.limits);
    if (c.restart_always) {
      regular.Add(request);  // runs alongside the regular containers
      sidecars.Add(request);
      init_peak.MaxWith(sidecars);
    } else {
      request.Add(sidecars);
      init_peak.MaxWith(request);
    }
  }
  regular.MaxWith(init_peak);

  if (pod.pod_requests || pod.pod_limits) {
    ResourceList pod_level = RequestsOf(pod.pod_requests.value_or(ResourceList{}),
                                        pod.pod_limits.value_or(ResourceList{}));
    for (const ResourceAmount& r : pod_level) regular.Set(r.name, r.amount);
  }
  regular.Add(pod.overhead);
  regular.DropZeros();
  return regular;
}

bool KeepsPodsOff(const Taint& taint) {
  return taint.effect == TaintEffect::kNoSchedule || taint.effect == TaintEffect::kNoExecute;
}

NodePlacement PlacementOf(const Node& node) {
  NodePlacement out;
  out.name = node.name;
  out.labels = node.labels;
  for (const Taint& taint : node.taints) {
    if (KeepsPodsOff(taint)) out.taints.push_back(taint);
  }
  return out;
}

}  // namespace taskgov::scheduler::model
