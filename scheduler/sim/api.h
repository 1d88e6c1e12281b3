#pragma once

// Api: the simulated API server. It holds pods and nodes as Kubernetes does and turns every
// change into a watch event, queued in order; the simulator hands the queue to the informers'
// ClusterObserver and to the cluster players after each step (Drain), as watches deliver them.
// It is also the extender's KubeActions (bind, evict, events), with Kubernetes' semantics where
// taskgov's correctness depends on them:
//  * pods/binding sets spec.nodeName of a pod that has none and is not being deleted (409
//    otherwise: pkg/registry/core/pod/storage/storage.go, assignPod / setPodNodeAndMetadata);
//  * policy/v1 Eviction adds the DisruptionTarget condition (reason EvictionByEvictionAPI) and
//    deletes the pod gracefully with the request's gracePeriodSeconds
//    (pkg/registry/core/pod/storage/eviction.go); an eviction of a pod already being deleted is
//    accepted and changes nothing; of a pod gone, 404;
//  * a merge patch of a pod's metadata (Requeue: taskgov's annotation) changes the object and
//    its resourceVersion, and is refused for another pod of the same name (metadata.uid);
//  * a graceful delete sets metadata.deletionTimestamp and deletionGracePeriodSeconds; the pod
//    stays (and holds its node) until the kubelet has stopped it (Kubelet in workloads.h) and
//    finishes the delete.
// PodDisruptionBudgets are not simulated (no eviction is refused).
//
// Not synchronised: the simulator is single-threaded.

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "scheduler/cluster_api.h"
#include "scheduler/common/clock.h"
#include "scheduler/model/objects.h"

namespace taskgov::scheduler::sim {

// What the players keep beside a pod (not part of the Kubernetes object).
struct PodTag {
  std::string job;            // the trace job it belongs to
  int attempt = 0;            // the job's attempt (a recreated gang is a new attempt)
  int index = 0;              // its index in the attempt
  int64_t grace_ms = 30'000;  // spec.terminationGracePeriodSeconds
};

struct PodObject {
  model::Pod pod;
  PodTag tag;
  // status.conditions DisruptionTarget (reason), "" when absent.
  std::string disruption_target;
  int64_t deletion_grace_ms = -1;  // metadata.deletionGracePeriodSeconds, when deleting
  std::string nominated_node;      // status.nominatedNodeName
  model::ResourceList request;     // its effective request (model::EffectiveRequest)
};

struct WatchEvent {
  enum class Type { kPodUpsert, kPodDelete, kNodeUpsert };
  Type type = Type::kPodUpsert;
  model::Pod pod;  // the pod as of the change (a delete carries its last state)
  model::Node node;
  std::string previous_node;  // pods: the node before the change ("" if none)
};

class Api final : public KubeActions {
 public:
  explicit Api(const common::Clock* clock) : clock_(clock) {}

  // ---- objects ----
  void AddNode(model::Node node);
  // Creates `pod` (uid and creationTimestamp are set here, resourceVersion moves on); returns it.
  const PodObject& CreatePod(model::Pod pod, PodTag tag);
  // A kubelet's status update: phase (and status.startTime when it starts running).
  void SetPhase(const std::string& uid, model::PodPhase phase);
  // A graceful delete: deletionTimestamp now, `grace_ms`; with `disruption_reason`, the
  // DisruptionTarget condition too. False when the pod is gone or already being deleted.
  bool DeleteGracefully(const std::string& uid, int64_t grace_ms,
                        const std::string& disruption_reason);
  // The object is removed (the kubelet's final delete, or a delete with grace 0).
  void Remove(const std::string& uid);
  void SetNominatedNode(const std::string& uid, const std::string& node);
  // A metadata update: the annotation `key` set to `value`.
  void Annotate(const std::string& uid, const std::string& key, const std::string& value);

  [[nodiscard]] const PodObject* Find(const std::string& uid) const;
  // The pods that exist, oldest first.
  [[nodiscard]] std::vector<const PodObject*> pods() const;
  [[nodiscard]] const std::vector<model::Node>& nodes() const { return nodes_; }
  [[nodiscard]] const model::Node* FindNode(const std::string& name) const;

  // ---- watches ----
  // The events since the last call, in order.
  [[nodiscard]] std::deque<WatchEvent> TakeEvents();
  [[nodiscard]] bool has_events() const { return !events_.empty(); }

  // ---- KubeActions ----
  common::Status Bind(const std::string& ns, const std::string& name, const std::string& uid,
                      const std::string& node) override;
  EvictOutcome Evict(const std::string& ns, const std::string& name, const std::string& uid,
                     int64_t grace_period_seconds, std::string* detail) override;
  common::Status Requeue(const std::string& ns, const std::string& name, const std::string& uid,
                         const std::string& at) override;
  void RecordEvent(const EventRecord& event) override;

  // What went through the actions (for the report).
  struct Counts {
    uint64_t binds = 0;
    uint64_t bind_conflicts = 0;
    uint64_t evictions = 0;
    uint64_t requeues = 0;
    std::map<std::string, uint64_t> events_by_reason;
  };
  [[nodiscard]] const Counts& counts() const { return counts_; }
  // Called on every event an extender records (its reason and note).
  void SetEventObserver(std::function<void(const EventRecord&)> observer) {
    event_observer_ = std::move(observer);
  }

 private:
  PodObject* Mutable(const std::string& uid);
  // The index of `uid`'s object in pods_; 0 when it has none.
  [[nodiscard]] size_t IndexOf(const std::string& uid) const;
  void Emit(WatchEvent::Type type, const PodObject& object, const std::string& previous_node);
  std::string NextResourceVersion() { return std::to_string(++resource_version_); }

  const common::Clock* const clock_;
  // By the number in their uid ("sim-<n>", n from 1): a lookup is a parse and an index, where a
  // hash map's was a string hash and two cache misses, on every scheduling attempt. Null once
  // removed.
  std::vector<std::unique_ptr<PodObject>> pods_;
  std::map<std::string, std::string> uid_by_key_;  // ns/name → uid
  std::vector<model::Node> nodes_;
  std::deque<WatchEvent> events_;
  uint64_t resource_version_ = 0;
  uint64_t uid_counter_ = 0;
  Counts counts_;
  std::function<void(const EventRecord&)> event_observer_;
};

}  // namespace taskgov::scheduler::sim
