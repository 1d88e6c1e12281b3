#include "extender/cli/capacity.h"

#include <algorithm>
#include <map>

#include "scheduler/model/quantity.h"

namespace taskgov::cli {

std::vector<std::string> CapacityWarnings(const scheduler::model::Policy& policy,
                                          const std::vector<scheduler::model::Node>& nodes,
                                          const std::vector<std::string>& flavors,
                                          const config::Catalogue& catalogue) {
  std::vector<std::string> out;
  for (const std::string& flavor : flavors) {
    scheduler::model::ResourceList capacity;
    size_t count = 0;
    for (const scheduler::model::Node& node : nodes) {
      if (policy.FlavorOfNode(node.labels) != flavor) continue;
      ++count;
      capacity.Add(node.allocatable);
    }
    if (count == 0) {
      const bool named = std::any_of(policy.flavors.begin(), policy.flavors.end(),
                                     [&](const scheduler::model::Flavor& f) {
                                       return f.name == flavor && !f.node_labels.empty();
                                     });
      if (catalogue.Find(flavor) == nullptr && !named) {
        out.push_back("instance type " + flavor +
                      " is unknown: it is not in the catalogue and no node of the cluster has it "
                      "(a typo? its quota counts only once nodes of that name join)");
      }
      continue;  // quota for capacity not there yet is planned capacity
    }
    std::map<std::string, int64_t> nominal;  // by resource, over the teams
    for (const scheduler::model::Team& team : policy.teams) {
      for (const scheduler::model::FlavorQuota& fq : team.flavors) {
        if (fq.flavor != flavor) continue;
        for (const scheduler::model::ResourceQuota& q : fq.resources) {
          nominal[q.resource] = scheduler::model::SaturatingAdd(nominal[q.resource], q.nominal);
        }
      }
    }
    for (const auto& [resource, sum] : nominal) {
      const int64_t have = capacity.Get(resource);
      if (sum <= have) continue;
      out.push_back("the teams' nominal quotas on " + flavor + " add up to " +
                    scheduler::model::FormatQuantity(resource, sum) + " " + resource +
                    ", more than its " + std::to_string(count) +
                    (count == 1 ? " node has (" : " nodes have (") +
                    scheduler::model::FormatQuantity(resource, have) +
                    "): borrowing and reclaim work within what there is, but a team may wait "
                    "for quota it is promised");
    }
  }
  return out;
}

}  // namespace taskgov::cli
