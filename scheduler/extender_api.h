#pragma once

// The kube-scheduler extender verbs as domain values (DESIGN §2), free of JSON and HTTP:
// extender/ decodes webhook bodies into these, calls a Decider, and encodes the results.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "scheduler/model/objects.h"

namespace taskgov::scheduler {

// filter and prioritize.
struct FilterArgs {
  model::Pod pod;
  // Candidate node names in request order; filled in both modes.
  std::vector<std::string> node_names;
  // Full nodes, parallel to node_names, only when the request carried "Nodes"
  // (nodeCacheCapable: false). Empty in NodeNames mode: use the node cache.
  std::vector<model::Node> nodes;
  bool node_names_mode = true;
};

// Nodes are referred to by their index in FilterArgs::node_names and reasons are shared, so a
// verdict over hundreds of nodes costs no string copies.
struct FilterResult {
  struct Refused {
    uint32_t node = 0;    // index into FilterArgs::node_names
    uint32_t reason = 0;  // index into `reasons`
  };
  std::vector<uint32_t> feasible;     // ascending indices of the feasible nodes
  std::vector<Refused> failed;        // preemption may help there
  std::vector<Refused> unresolvable;  // it will not
  std::vector<std::string> reasons;
  std::string error;  // non-empty: the call failed

  // Adds a reason and returns its index.
  uint32_t AddReason(std::string reason) {
    reasons.push_back(std::move(reason));
    return static_cast<uint32_t>(reasons.size() - 1);
  }
  // Conveniences for tests and logs (linear).
  [[nodiscard]] std::vector<std::string> FeasibleNames(const FilterArgs& args) const {
    std::vector<std::string> out;
    for (uint32_t i : feasible) out.push_back(args.node_names[i]);
    return out;
  }
  // The reason a node was refused ("" if it was not).
  [[nodiscard]] std::string ReasonFor(const FilterArgs& args, std::string_view node) const {
    for (const auto* list : {&failed, &unresolvable}) {
      for (const Refused& r : *list) {
        if (args.node_names[r.node] == node) return reasons[r.reason];
      }
    }
    return "";
  }
};

struct HostPriority {
  std::string host;
  int64_t score = 0;  // 0..10
};

struct Victims {
  std::vector<model::Pod>
      pods;  // full pods (NodeNameToVictims) or only uid set (NodeNameToMetaVictims)
  int64_t num_pdb_violations = 0;
};

struct PreemptArgs {
  model::Pod pod;
  std::map<std::string, Victims> node_to_victims;
  bool meta = false;  // the input was NodeNameToMetaVictims (victims carry only their UID)
};

struct PreemptResult {
  // node → victims (only uid needs to be set), highest priority first.
  std::map<std::string, Victims> node_to_victims;
  std::string error;
};

struct BindArgs {
  std::string pod_name;
  std::string pod_namespace;
  std::string pod_uid;
  std::string node;
};

struct BindResult {
  std::string error;  // empty: bound
};

// The decisions behind the webhooks. Implementations are called concurrently from the HTTP
// I/O threads and must be thread-safe; they never throw.
class Decider {
 public:
  virtual ~Decider() = default;
  virtual FilterResult Filter(const FilterArgs& args) = 0;
  virtual std::vector<HostPriority> Prioritize(const FilterArgs& args) = 0;
  virtual PreemptResult Preempt(const PreemptArgs& args) = 0;
  virtual BindResult Bind(const BindArgs& args) = 0;
};

}  // namespace taskgov::scheduler
