#pragma once

// The kube-scheduler extender verbs as domain values (DESIGN §2), free of JSON and HTTP:
// extender/ decodes webhook bodies into these, calls a Decider, and encodes the results.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "scheduler/objects.h"

namespace taskgov::scheduler {

// filter and prioritize.
struct FilterArgs {
  Pod pod;
  // Candidate node names in request order; filled in both modes.
  std::vector<std::string> node_names;
  // Full nodes, parallel to node_names, only when the request carried "Nodes"
  // (nodeCacheCapable: false). Empty in NodeNames mode: use the node cache.
  std::vector<Node> nodes;
  bool node_names_mode = true;
};

struct FilterResult {
  std::vector<std::string> feasible;  // a subset of FilterArgs::node_names, in request order
  std::map<std::string, std::string> failed;               // node → reason (preemption may help)
  std::map<std::string, std::string> failed_unresolvable;  // node → reason (it will not)
  std::string error;                                       // non-empty: the call failed
};

struct HostPriority {
  std::string host;
  int64_t score = 0;  // 0..10
};

struct Victims {
  std::vector<Pod> pods;  // full pods (NodeNameToVictims) or only uid set (NodeNameToMetaVictims)
  int64_t num_pdb_violations = 0;
};

struct PreemptArgs {
  Pod pod;
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
