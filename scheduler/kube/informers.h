#pragma once

// Informers: the reflectors that feed a ClusterObserver (scheduler/cluster_api.h) from the API
// server (DESIGN §5, issue 6):
//   pods         /api/v1/pods (all namespaces; field selector `pod_field_selector`, by default
//                every pod that is not Succeeded or Failed — a pod that ends leaves the
//                selector and is reported deleted)
//   nodes        /api/v1/nodes
//   namespaces   /api/v1/namespaces (labels, for team resolution)
//   localqueues  /apis/kueue.x-k8s.io/v1beta2/localqueues, else v1beta1 (optional CRD; the
//                first served version, see Reflector)
//   podgroups    /apis/scheduling.volcano.sh/v1beta1/podgroups       (optional CRD)
// Each resource has its own reflector thread (reflector.h), so the observer is called "one
// event at a time per kind" from that kind's thread, and different kinds concurrently. OnSynced
// is called once per kind after its first complete list (or when its CRD is missing); kinds
// turned off in InformerOptions are reported synced by the constructor, on the caller's thread.
//
// Pods and nodes are decoded by the injected ObjectDecoders (the lead wires kube_json.h's
// DecodePod / DecodeNode); namespaces, LocalQueues and PodGroups are decoded here.
//
// Thread-safety: Start/Stop from one controlling thread; Stats() and synced() from any thread.

#include <rapidjson/document.h>

#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "scheduler/cluster_api.h"
#include "scheduler/kube/reflector.h"
#include "scheduler/model/job_control.h"

namespace taskgov::scheduler::kube {

struct ObjectDecoders {
  std::function<common::Result<model::Pod>(const rapidjson::Value&)> pod;
  std::function<common::Result<model::Node>(const rapidjson::Value&)> node;
};

struct InformerOptions {
  std::string pod_field_selector = "status.phase!=Succeeded,status.phase!=Failed";
  bool watch_local_queues = true;
  bool watch_pod_groups = true;
  // Jobs, JobSets, PyTorchJobs, TFJobs, MPIJobs and RayClusters: the gang sizes they declare.
  bool watch_jobs = true;
  ReflectorOptions reflector;
  const common::Clock* clock = nullptr;  // nullptr: SystemClock
  RandomSource random;                   // nullptr: seeded from std::random_device
};

class Informers {
 public:
  Informers(KubeClient* client, ClusterObserver* observer, ObjectDecoders decoders,
            InformerOptions options = {});
  ~Informers();  // Stop()
  Informers(const Informers&) = delete;
  Informers& operator=(const Informers&) = delete;

  // Starts one thread per resource. Once.
  void Start();
  // Interrupts lists and watches in flight and joins the threads. Idempotent.
  void Stop();

  // True when every resource completed its first list (a missing CRD counts as synced).
  [[nodiscard]] bool synced() const;
  [[nodiscard]] std::vector<ReflectorStats> Stats() const;
  // Blocks until `predicate` holds for the stats of `resource` ("pods", "nodes", ...); false on
  // timeout or an unknown resource.
  bool WaitStats(const std::string& resource,
                 const std::function<bool(const ReflectorStats&)>& predicate,
                 std::chrono::milliseconds timeout) const;

 private:
  struct Entry {
    std::unique_ptr<ObjectSink> sink;
    std::unique_ptr<Reflector> reflector;
    std::thread thread;
  };
  std::vector<Entry> entries_;
  bool started_ = false;
  bool stopped_ = false;
};

// Decoders for the objects Informers decodes itself (exposed for tests).
struct NamespaceInfo {
  std::string name;
  model::Labels labels;
};
struct LocalQueueInfo {
  std::string ns;
  std::string name;
  std::string cluster_queue;  // spec.clusterQueue
};
struct PodGroupInfo {
  std::string ns;
  std::string name;
  std::string queue;       // spec.queue
  int64_t min_member = 1;  // spec.minMember (1 when absent)
};
[[nodiscard]] common::Result<NamespaceInfo> DecodeNamespace(const rapidjson::Value& object);
[[nodiscard]] common::Result<LocalQueueInfo> DecodeLocalQueue(const rapidjson::Value& object);
[[nodiscard]] common::Result<PodGroupInfo> DecodePodGroup(const rapidjson::Value& object);
// A job object's declared gang size, under the gang key its pods have (WorkloadRef::key).
struct GangSizeInfo {
  std::string ns;
  std::string name;
  std::string workload;
  int64_t size = 1;
  // A job taskgov may pause (Job, PyTorchJob, TFJob, MPIJob): what pausing and resuming it needs
  // (model/job_control.h); null for the other kinds, and for a job whose templates do not decode.
  std::shared_ptr<const model::JobControl> control;
};
// batch/v1 Job: owner/<uid>, spec.parallelism (1 when absent).
[[nodiscard]] common::Result<GangSizeInfo> DecodeJob(const rapidjson::Value& object);
// jobset.x-k8s.io JobSet: jobset/<ns>/<name>, Σ replicatedJobs[].replicas × their Job template's
// parallelism (each 1 when absent).
[[nodiscard]] common::Result<GangSizeInfo> DecodeJobSet(const rapidjson::Value& object);
// kubeflow.org training jobs: owner/<uid>, Σ spec.<kind>ReplicaSpecs.*.replicas (each 1 when
// absent): PyTorchJob (pytorchReplicaSpecs), TFJob (tfReplicaSpecs), MPIJob v2beta1
// (mpiReplicaSpecs: the launcher and its workers).
[[nodiscard]] common::Result<GangSizeInfo> DecodePyTorchJob(const rapidjson::Value& object);
[[nodiscard]] common::Result<GangSizeInfo> DecodeTFJob(const rapidjson::Value& object);
[[nodiscard]] common::Result<GangSizeInfo> DecodeMPIJob(const rapidjson::Value& object);
// kubeflow.org/v1 XGBoostJob (xgbReplicaSpecs), PaddleJob (paddleReplicaSpecs), JAXJob
// (jaxReplicaSpecs): as PyTorchJob.
[[nodiscard]] common::Result<GangSizeInfo> DecodeXGBoostJob(const rapidjson::Value& object);
[[nodiscard]] common::Result<GangSizeInfo> DecodePaddleJob(const rapidjson::Value& object);
[[nodiscard]] common::Result<GangSizeInfo> DecodeJAXJob(const rapidjson::Value& object);
// ray.io RayCluster (also the cluster a RayJob creates and runs in): owner/<uid>, its head plus
// Σ spec.workerGroupSpecs[].replicas (1 when absent) × numOfHosts (1 when absent), as Kueue
// counts its pod sets.
[[nodiscard]] common::Result<GangSizeInfo> DecodeRayCluster(const rapidjson::Value& object);
// A RayJob: the gang size of its cluster's pods (spec.rayClusterSpec); pausable when KubeRay may
// suspend it (spec.shutdownAfterJobFinishes, no spec.clusterSelector).
[[nodiscard]] common::Result<GangSizeInfo> DecodeRayJob(const rapidjson::Value& object);

}  // namespace taskgov::scheduler::kube
