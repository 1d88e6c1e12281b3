#include "scheduler/model/idle_sharing.h"

#include <algorithm>
#include <set>
#include <utility>

namespace taskgov::scheduler::model {

namespace {

// Σ nominal per (flavor, resource) over `flavors`, into `out`.
void AddNominal(const std::vector<FlavorQuota>& flavors, FlavorCapacity* out) {
  for (const FlavorQuota& fq : flavors) {
    ResourceList& sum = (*out)[fq.flavor];
    for (const ResourceQuota& q : fq.resources) {
      sum.Set(q.resource, SaturatingAdd(sum.Get(q.resource), q.nominal));
    }
  }
}

}  // namespace

FlavorCapacity UnallocatedCapacity(const Policy& configured, const FlavorCapacity& capacity) {
  FlavorCapacity out;
  const IdleResourceSharing& sharing = configured.idle_resource_sharing;
  if (!sharing.enabled || sharing.cohort.empty()) return out;
  // The (flavor, resource) pairs the cohort's tree governs: its root's pools.
  const std::string_view root = configured.RootCohort(sharing.cohort);
  std::set<std::pair<std::string, std::string>> governed;
  for (const CohortPool& pool : CohortPools(configured)) {
    if (pool.cohort == root) governed.emplace(pool.flavor, pool.resource);
  }
  FlavorCapacity allocated;
  for (const Team& t : configured.teams) AddNominal(t.flavors, &allocated);
  for (const Cohort& c : configured.cohorts) AddNominal(c.flavors, &allocated);
  for (const auto& [flavor, resource] : governed) {
    auto offered = capacity.find(flavor);
    if (offered == capacity.end()) continue;
    auto taken = allocated.find(flavor);
    const int64_t nominal = taken == allocated.end() ? 0 : taken->second.Get(resource);
    const int64_t free = SaturatingSub(offered->second.Get(resource), nominal);
    if (free > 0) out[flavor].Set(resource, free);
  }
  return out;
}

PolicyPtr WithUnallocatedCapacity(const PolicyPtr& configured, const FlavorCapacity& unallocated) {
  if (unallocated.empty()) return configured;
  auto effective = std::make_shared<Policy>(*configured);
  IdleResourceSharing& sharing = effective->idle_resource_sharing;
  auto cohort = std::find_if(effective->cohorts.begin(), effective->cohorts.end(),
                             [&](const Cohort& c) { return c.name == sharing.cohort; });
  if (cohort == effective->cohorts.end()) {
    cohort = effective->cohorts.insert(effective->cohorts.end(), Cohort{sharing.cohort, "", {}});
  }
  for (const auto& [flavor, amounts] : unallocated) {
    FlavorQuota& added = sharing.unallocated.emplace_back(FlavorQuota{flavor, {}});
    auto own = std::find_if(cohort->flavors.begin(), cohort->flavors.end(),
                            [&added](const FlavorQuota& fq) { return fq.flavor == added.flavor; });
    if (own == cohort->flavors.end()) {
      own = cohort->flavors.insert(cohort->flavors.end(), FlavorQuota{flavor, {}});
    }
    for (const ResourceAmount& a : amounts) {
      added.resources.push_back(ResourceQuota{a.name, a.amount});
      auto line = std::find_if(own->resources.begin(), own->resources.end(),
                               [&](const ResourceQuota& q) { return q.resource == a.name; });
      if (line == own->resources.end()) {
        own->resources.push_back(ResourceQuota{a.name, a.amount});
      } else {
        line->nominal = SaturatingAdd(line->nominal, a.amount);
      }
    }
  }
  effective->Finalize();
  return effective;
}

}  // namespace taskgov::scheduler::model
