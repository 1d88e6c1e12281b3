#pragma once

// The parts of Kubernetes objects taskgov reads, as plain values. Decoded from JSON by
// kube_json.h (webhook bodies and API server responses alike); built directly by tests.
// Value types; not synchronised.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "scheduler/resources.h"

namespace taskgov::scheduler {

using Labels = std::map<std::string, std::string, std::less<>>;

struct Container {
  std::string name;
  ResourceList requests;
  ResourceList limits;
  // Init containers only: restartPolicy: Always makes it a sidecar that keeps running.
  bool restart_always = false;
};

struct OwnerReference {
  std::string api_version;
  std::string kind;
  std::string name;
  std::string uid;
  bool controller = false;
};

enum class PodPhase { kPending, kRunning, kSucceeded, kFailed, kUnknown };

struct Pod {
  std::string namespace_;
  std::string name;
  std::string uid;
  Labels labels;
  Labels annotations;
  int64_t creation_unix_ms = 0;             // metadata.creationTimestamp
  std::optional<int64_t> deletion_unix_ms;  // metadata.deletionTimestamp
  std::optional<int64_t> start_unix_ms;     // status.startTime
  std::string resource_version;
  std::string scheduler_name;
  std::string node_name;  // spec.nodeName: empty while pending
  Labels node_selector;   // spec.nodeSelector
  std::optional<int32_t> priority;
  std::string priority_class_name;
  PodPhase phase = PodPhase::kPending;
  std::vector<OwnerReference> owner_references;
  std::vector<Container> containers;
  std::vector<Container> init_containers;
  ResourceList overhead;
  // spec.resources (pod-level resources), when set.
  std::optional<ResourceList> pod_requests;
  std::optional<ResourceList> pod_limits;

  [[nodiscard]] bool terminal() const {
    return phase == PodPhase::kSucceeded || phase == PodPhase::kFailed;
  }
  [[nodiscard]] bool bound() const { return !node_name.empty(); }
  // "namespace/name"
  [[nodiscard]] std::string key() const { return namespace_ + "/" + name; }
  [[nodiscard]] const OwnerReference* controller_owner() const;
};

// What the scheduler charges for the pod (DESIGN §3.1): the sum of the regular containers'
// requests plus the sidecars (restartable init containers) started before them, compared with
// the maximum over init containers of (its request + the sidecars started before it); the larger
// of the two per resource; pod-level requests override per resource; plus spec.overhead. A
// container (or the pod) with a limit but no request for a resource requests its limit.
[[nodiscard]] ResourceList EffectiveRequest(const Pod& pod);

struct Taint {
  std::string key;
  std::string value;
  std::string effect;  // NoSchedule | PreferNoSchedule | NoExecute
};

struct Node {
  std::string name;
  Labels labels;
  ResourceList allocatable;
  ResourceList capacity;
  bool unschedulable = false;
  bool ready = true;  // the Ready condition; true when absent
  std::vector<Taint> taints;
  std::string resource_version;
};

}  // namespace taskgov::scheduler
