#pragma once

// TeamResolver: which team a pod belongs to (DESIGN §3.3), from the policy in force and the live
// Kueue LocalQueues, Volcano PodGroups and namespace labels the informers report. The rule itself
// is the pure ResolveTeam (pod_identity.h); this holds its inputs.
//
// Thread-safety: a shared_mutex; informer events and policy changes hold it exclusively for
// microseconds, TeamOf holds it shared.

#include <shared_mutex>
#include <string>
#include <unordered_map>

#include "scheduler/model/gang.h"
#include "scheduler/model/interner.h"
#include "scheduler/model/pod_identity.h"
#include "scheduler/model/policy.h"
#include "scheduler/state/pending_queues.h"

namespace taskgov::scheduler::state {

class TeamResolver {
 public:
  explicit TeamResolver(model::PolicyPtr policy) : policy_(std::move(policy)) {}

  void SetPolicy(model::PolicyPtr policy);
  [[nodiscard]] model::PolicyPtr policy() const;

  void UpsertNamespace(const std::string& name, const model::Labels& labels);
  void EraseNamespace(const std::string& name);
  void UpsertLocalQueue(const std::string& ns, const std::string& name,
                        const std::string& cluster_queue);
  void EraseLocalQueue(const std::string& ns, const std::string& name);
  // A PodGroup: its queue (team resolution) and minMember (its gang's declared size). These
  // and the gang-size calls return whether what its members resolve to changed.
  bool UpsertPodGroup(const std::string& ns, const std::string& name, const std::string& queue,
                      int64_t min_member = 0);
  bool ErasePodGroup(const std::string& ns, const std::string& name);
  // The size a job object declares for its gang (ClusterObserver::OnGangSizeUpsert).
  bool UpsertGangSize(const std::string& workload, int64_t size);
  bool EraseGangSize(const std::string& workload);

  // The pod's team under the current policy and live queues (kNoTeam: none, or a pod that names
  // a queue it may not use: model::ResolveTeamOfPod).
  [[nodiscard]] model::NameId TeamOf(const model::Pod& pod) const;
  // TeamOf, and why the pod is refused when it names a queue it may not use ("" otherwise).
  struct Resolved {
    model::NameId team = kNoTeam;
    std::string refusal;
  };
  [[nodiscard]] Resolved Resolve(const model::Pod& pod) const;
  [[nodiscard]] model::LiveQueues live_queues() const;
  // The informer of objects of `source` has listed them all: from now on a gang of that source
  // whose object is unknown waits for it (WorkloadRef::awaiting_object).
  void MarkSynced(model::GangSource source);

  // The pod's workload (WorkloadOf), its size declared on the pod or else by its PodGroup's
  // minMember or its job object; awaiting_object when neither declares it and that object's
  // informer has synced (the object is about to arrive: a controller creates it before its pods).
  [[nodiscard]] model::WorkloadRef WorkloadOf(const model::Pod& pod) const;

 private:
  mutable std::shared_mutex mu_;
  model::PolicyPtr policy_;
  model::LiveQueues live_;
  // Declared gang sizes by workload key: PodGroupKey → minMember, and the job objects' sizes
  // (0 when an object declares none).
  std::unordered_map<std::string, int32_t> group_sizes_;
  uint32_t synced_sources_ = 0;                       // bit (1 << GangSource) per synced informer
  bool SetSizeLocked(std::string key, int64_t size);  // whether it changed
};

}  // namespace taskgov::scheduler::state
