#pragma once

// Test builders for pods and nodes:
//   Pod p = PodBuilder("w-0").Namespace("hyperpod-ns-a").Gpus(8).Cpu("4").Build();
//   Node n = NodeBuilder("n-1").InstanceType("ml.p5.48xlarge").Allocatable("nvidia.com/gpu", "8")
//                .Build();
// Quantities are Kubernetes strings; a malformed one aborts the test binary (a test bug).

#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "scheduler/model/objects.h"
#include "scheduler/model/quantity.h"

namespace taskgov::scheduler::testing {

inline int64_t Q(const std::string& resource, const std::string& quantity) {
  common::Result<int64_t> r = model::ParseResourceQuantity(resource, quantity);
  if (!r.ok()) {
    std::cerr << "test builder: " << r.error().message << "\n";
    std::abort();
  }
  return *r;
}

class ContainerBuilder {
 public:
  explicit ContainerBuilder(std::string name) { c_.name = std::move(name); }
  ContainerBuilder& Request(const std::string& r, const std::string& q) {
    c_.requests.Set(r, Q(r, q));
    return *this;
  }
  ContainerBuilder& Limit(const std::string& r, const std::string& q) {
    c_.limits.Set(r, Q(r, q));
    return *this;
  }
  ContainerBuilder& Sidecar() {
    c_.restart_always = true;
    return *this;
  }
  model::Container Build() const { return c_; }

 private:
  model::Container c_;
};

class PodBuilder {
 public:
  explicit PodBuilder(std::string name) {
    pod_.name = std::move(name);
    pod_.namespace_ = "default";
    pod_.uid = "uid-" + pod_.name;
    pod_.scheduler_name = "taskgov";
    pod_.containers.push_back(model::Container{"main", {}, {}, false});
  }
  PodBuilder& SchedulerName(std::string name) {
    pod_.scheduler_name = std::move(name);
    return *this;
  }
  PodBuilder& Namespace(std::string ns) {
    pod_.namespace_ = std::move(ns);
    return *this;
  }
  PodBuilder& Uid(std::string uid) {
    pod_.uid = std::move(uid);
    return *this;
  }
  PodBuilder& Label(const std::string& k, const std::string& v) {
    pod_.labels[k] = v;
    return *this;
  }
  PodBuilder& Annotation(const std::string& k, const std::string& v) {
    pod_.annotations[k] = v;
    return *this;
  }
  // Adds a request to the first (main) container.
  PodBuilder& Request(const std::string& r, const std::string& q) {
    pod_.containers.front().requests.Set(r, Q(r, q));
    return *this;
  }
  PodBuilder& Gpus(int n) { return Request("nvidia.com/gpu", std::to_string(n)); }
  PodBuilder& Cpu(const std::string& q) { return Request("cpu", q); }
  PodBuilder& Memory(const std::string& q) { return Request("memory", q); }
  PodBuilder& AddContainer(const scheduler::model::Container& c) {
    pod_.containers.push_back(c);
    return *this;
  }
  PodBuilder& AddInitContainer(const scheduler::model::Container& c) {
    pod_.init_containers.push_back(c);
    return *this;
  }
  PodBuilder& Overhead(const std::string& r, const std::string& q) {
    pod_.overhead.Set(r, Q(r, q));
    return *this;
  }
  PodBuilder& NodeSelector(const std::string& k, const std::string& v) {
    pod_.node_selector[k] = v;
    return *this;
  }
  // Appends to spec.tolerations (an empty effect tolerates every effect).
  PodBuilder& Toleration(const std::string& key, model::TolerationOperator op,
                         const std::string& value = "",
                         model::TaintEffect effect = model::TaintEffect::kAll) {
    model::PodPlacementSpec spec = pod_.placement ? *pod_.placement : model::PodPlacementSpec{};
    spec.tolerations.push_back(scheduler::model::Toleration{key, value, op, effect});
    pod_.placement = std::make_shared<const model::PodPlacementSpec>(std::move(spec));
    return *this;
  }
  // Appends a term (ORed with the others) to the required node affinity.
  PodBuilder& AffinityTerm(model::NodeSelectorTerm term) {
    model::PodPlacementSpec spec = pod_.placement ? *pod_.placement : model::PodPlacementSpec{};
    if (!spec.required_node_affinity) spec.required_node_affinity.emplace();
    spec.required_node_affinity->push_back(std::move(term));
    pod_.placement = std::make_shared<const model::PodPlacementSpec>(std::move(spec));
    return *this;
  }
  // A required node affinity term pinning the pod to the named nodes (matchFields).
  PodBuilder& PinnedTo(std::vector<std::string> nodes) {
    model::NodeSelectorTerm term;
    term.match_fields.push_back(model::NodeSelectorRequirement{
        "metadata.name", model::NodeSelectorOperator::kIn, std::move(nodes)});
    return AffinityTerm(std::move(term));
  }
  PodBuilder& Priority(int32_t p) {
    pod_.priority = p;
    return *this;
  }
  PodBuilder& PriorityClassName(std::string name) {
    pod_.priority_class_name = std::move(name);
    return *this;
  }
  PodBuilder& Created(int64_t unix_ms) {
    pod_.creation_unix_ms = unix_ms;
    return *this;
  }
  PodBuilder& Started(int64_t unix_ms) {
    pod_.start_unix_ms = unix_ms;
    return *this;
  }
  PodBuilder& OnNode(std::string node) {
    pod_.node_name = std::move(node);
    pod_.phase = model::PodPhase::kRunning;
    return *this;
  }
  PodBuilder& Phase(model::PodPhase phase) {
    pod_.phase = phase;
    return *this;
  }
  PodBuilder& Owner(std::string kind, std::string name, std::string uid) {
    pod_.owner_references.push_back(
        model::OwnerReference{"batch/v1", std::move(kind), std::move(name), std::move(uid), true});
    return *this;
  }
  model::Pod Build() const { return pod_; }
  operator model::Pod() const { return pod_; }  // NOLINT: builders convert implicitly

 private:
  model::Pod pod_;
};

class NodeBuilder {
 public:
  explicit NodeBuilder(std::string name) { node_.name = std::move(name); }
  NodeBuilder& Label(const std::string& k, const std::string& v) {
    node_.labels[k] = v;
    return *this;
  }
  NodeBuilder& InstanceType(const std::string& type) {
    return Label("node.kubernetes.io/instance-type", type);
  }
  NodeBuilder& Allocatable(const std::string& r, const std::string& q) {
    node_.allocatable.Set(r, Q(r, q));
    node_.capacity.Set(r, Q(r, q));
    return *this;
  }
  NodeBuilder& Taint(const std::string& key, const std::string& value, model::TaintEffect effect) {
    node_.taints.push_back(scheduler::model::Taint{key, value, effect});
    return *this;
  }
  NodeBuilder& Unschedulable() {
    node_.unschedulable = true;
    return *this;
  }
  model::Node Build() const { return node_; }
  operator model::Node() const { return node_; }  // NOLINT: builders convert implicitly

 private:
  model::Node node_;
};

}  // namespace taskgov::scheduler::testing

#include <memory>

#include "scheduler/model/policy.h"

namespace taskgov::scheduler::testing {

// Builds a Policy:
//   auto policy = PolicyBuilder()
//       .Team("a", "cohort").Quota("ml.p5.48xlarge", "nvidia.com/gpu", 8, /*borrow=*/4)
//       .Team("b", "cohort").Quota("ml.p5.48xlarge", "nvidia.com/gpu", 8)
//       .Build();
// Amounts are canonical; borrowing/lending default to unlimited. Team namespaces default to
// "ns-<team>". No starvation bound unless a test sets one (mutable_policy()): the builders' pods
// are created near the Unix epoch (PodBuilder::Created), decades before the FakeClock's now, so
// under the production default every pending pod would count as starving.
class PolicyBuilder {
 public:
  PolicyBuilder() { policy_.starvation_bound_seconds = 0; }
  PolicyBuilder& Team(const std::string& name, const std::string& cohort = "") {
    scheduler::model::Team team;
    team.name = name;
    team.cohort = cohort;
    team.namespaces = {"ns-" + name};
    team.cluster_queue = name;
    policy_.teams.push_back(team);
    return *this;
  }
  // A flavor without node labels that every node belongs to (a Kueue ResourceFlavor without
  // nodeLabels); name it before the quota that uses it.
  PolicyBuilder& AnyNodeFlavor(const std::string& flavor) {
    policy_.flavors.push_back(model::Flavor{flavor, {}, /*matches_all_nodes=*/true});
    return *this;
  }
  PolicyBuilder& Weight(double weight) {
    policy_.teams.back().fair_share_weight = weight;
    return *this;
  }
  PolicyBuilder& Namespaces(std::vector<std::string> namespaces) {
    policy_.teams.back().namespaces = std::move(namespaces);
    return *this;
  }
  PolicyBuilder& Inactive() {
    policy_.teams.back().active = false;
    return *this;
  }
  PolicyBuilder& Queueing(model::QueueingStrategy strategy) {
    policy_.teams.back().queueing = strategy;
    return *this;
  }
  PolicyBuilder& Quota(const std::string& flavor, const std::string& resource, int64_t nominal,
                       int64_t borrowing_limit = model::kUnlimited,
                       int64_t lending_limit = model::kUnlimited) {
    scheduler::model::Team& team = policy_.teams.back();
    model::FlavorQuota* fq = nullptr;
    for (model::FlavorQuota& f : team.flavors) {
      if (f.flavor == flavor) fq = &f;
    }
    if (fq == nullptr) {
      team.flavors.push_back(model::FlavorQuota{flavor, {}});
      fq = &team.flavors.back();
    }
    fq->resources.push_back(
        model::ResourceQuota{resource, nominal, borrowing_limit, lending_limit});
    bool known = false;
    for (const model::Flavor& f : policy_.flavors) known |= f.name == flavor;
    if (!known) {
      policy_.flavors.push_back(model::Flavor{flavor, {{policy_.instance_type_label, flavor}}});
    }
    return *this;
  }
  // A cohort object (as config resolution lists every cohort named), holding no quota yet.
  PolicyBuilder& Cohort(const std::string& cohort, const std::string& parent = "") {
    CohortNamed(cohort, parent)->parent = parent;
    return *this;
  }
  // Quota cohort `cohort` holds itself (Kueue Cohort resourceGroups), and the limits on what it
  // borrows from and lends to its parent (kUnlimited: none).
  PolicyBuilder& CohortQuota(const std::string& cohort, const std::string& flavor,
                             const std::string& resource, int64_t nominal,
                             int64_t borrowing_limit = model::kUnlimited,
                             int64_t lending_limit = model::kUnlimited) {
    model::Cohort* c = CohortNamed(cohort, "");
    model::FlavorQuota* fq = nullptr;
    for (model::FlavorQuota& f : c->flavors) {
      if (f.flavor == flavor) fq = &f;
    }
    if (fq == nullptr) fq = &c->flavors.emplace_back(model::FlavorQuota{flavor, {}});
    fq->resources.push_back(
        model::ResourceQuota{resource, nominal, borrowing_limit, lending_limit});
    return *this;
  }
  // Cohort `cohort`'s fair-sharing weight (Kueue Cohort spec.fairSharing.weight).
  PolicyBuilder& CohortWeight(const std::string& cohort, double weight) {
    CohortNamed(cohort, "")->fair_share_weight = weight;
    return *this;
  }
  PolicyBuilder& PriorityClass(const std::string& name, int32_t value) {
    policy_.priority_classes.push_back(scheduler::model::PriorityClass{name, value});
    return *this;
  }
  PolicyBuilder& TaskPrioritization(scheduler::model::TaskPrioritization mode) {
    policy_.task_prioritization = mode;
    return *this;
  }
  PolicyBuilder& IdleCompute(model::IdleComputeAllocation mode) {
    policy_.idle_compute = mode;
    return *this;
  }
  // HyperPod IdleResourceSharing, lending the unallocated capacity within `cohort`.
  PolicyBuilder& IdleResourceSharing(const std::string& cohort) {
    policy_.idle_resource_sharing.enabled = true;
    policy_.idle_resource_sharing.cohort = cohort;
    return *this;
  }
  PolicyBuilder& NoTeam(model::NoTeamAction action) {
    policy_.no_team = action;
    return *this;
  }
  model::Policy& mutable_policy() { return policy_; }
  std::shared_ptr<const model::Policy> Build() const {
    auto policy = std::make_shared<model::Policy>(policy_);
    policy->Finalize();
    return policy;
  }

 private:
  model::Cohort* CohortNamed(const std::string& cohort, const std::string& parent) {
    for (model::Cohort& each : policy_.cohorts) {
      if (each.name == cohort) return &each;
    }
    return &policy_.cohorts.emplace_back(model::Cohort{cohort, parent, {}});
  }

  model::Policy policy_;
};

// The fair-share tests' cohort "c": a lender with `lent` GPUs (nvidia.com/gpu) on ml.p5.48xlarge,
// and team-b and team-c with no quota of their own, borrowing at those weights.
inline std::shared_ptr<const model::Policy> LenderAndBorrowers(int64_t lent, double b_weight = 1,
                                                               double c_weight = 1) {
  constexpr char kP5[] = "ml.p5.48xlarge";
  constexpr char kGpu[] = "nvidia.com/gpu";
  return PolicyBuilder()
      .Team("lender", "c")
      .Quota(kP5, kGpu, lent)
      .Team("team-b", "c")
      .Quota(kP5, kGpu, 0)
      .Weight(b_weight)
      .Team("team-c", "c")
      .Quota(kP5, kGpu, 0)
      .Weight(c_weight)
      .Build();
}

}  // namespace taskgov::scheduler::testing
