#include "scheduler/model/policy.h"

#include <algorithm>

#include "scheduler/model/resources.h"

namespace taskgov::scheduler::model {

int64_t ResourceQuota::guaranteed() const { return nominal - lendable(); }

int64_t ResourceQuota::ceiling() const {
  return borrowing_limit == kUnlimited ? kUnlimited : SaturatingAdd(nominal, borrowing_limit);
}

int64_t ResourceQuota::lendable() const { return std::min(lending_limit, nominal); }

void Policy::Finalize() {
  team_index.clear();
  namespace_index.clear();
  for (size_t i = 0; i < teams.size(); ++i) {
    team_index.emplace(teams[i].name, i);
    for (const std::string& ns : teams[i].namespaces) namespace_index.emplace(ns, i);
  }
}

const Team* Policy::FindTeam(std::string_view name) const {
  auto it = team_index.find(name);
  return it == team_index.end() ? nullptr : &teams[it->second];
}

int64_t Cohort::Nominal(std::string_view flavor, std::string_view resource) const {
  for (const FlavorQuota& fq : flavors) {
    if (fq.flavor != flavor) continue;
    for (const ResourceQuota& q : fq.resources) {
      if (q.resource == resource) return q.nominal;
    }
  }
  return 0;
}

const Cohort* Policy::FindCohort(std::string_view name) const {
  for (const Cohort& c : cohorts) {
    if (c.name == name) return &c;
  }
  return nullptr;
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

bool Policy::FlavorAllows(std::string_view flavor, const Labels& node_selector) const {
  if (node_selector.empty()) return true;
  const Flavor* defined = nullptr;
  for (const Flavor& f : flavors) {
    if (f.name == flavor) defined = &f;
  }
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
  for (const Flavor& flavor : flavors) {
    if (flavor.node_labels.empty()) continue;
    bool match =
        std::all_of(flavor.node_labels.begin(), flavor.node_labels.end(), [&](const auto& kv) {
          auto it = node_labels.find(kv.first);
          return it != node_labels.end() && it->second == kv.second;
        });
    if (match) return flavor.name;
  }
  for (const Flavor& flavor : flavors) {
    if (flavor.node_labels.empty() && flavor.matches_all_nodes) return flavor.name;
  }
  auto it = node_labels.find(instance_type_label);
  return it == node_labels.end() ? std::string() : it->second;
}

}  // namespace taskgov::scheduler::model
