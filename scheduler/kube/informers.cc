#include "scheduler/kube/informers.h"

#include "scheduler/kube/sink.h"
#include "scheduler/kube/watch_decoder.h"
#include "scheduler/model/gang.h"
#include "scheduler/model/kube_json.h"
#include "scheduler/model/resources.h"

namespace taskgov::scheduler::kube {

using model::JobSetKey;
using model::Node;
using model::OwnerGangKey;
using model::Pod;
using model::SaturatingAdd;
using model::SaturatingTimes;

namespace {

// metadata.name / metadata.namespace with type checks; the name must be present.
common::Status ReadNames(const rapidjson::Value& object, std::string* ns, std::string* name) {
  const rapidjson::Value* meta = JsonMember(object, "metadata");
  if (meta == nullptr || !meta->IsObject()) return common::Error{"metadata: expected an object"};
  common::Result<std::string> n = OptionalJsonString(*meta, "name", "metadata.name");
  if (!n.ok()) return n.error();
  if (n->empty()) return common::Error{"metadata.name: missing"};
  *name = std::move(*n);
  if (ns != nullptr) {
    common::Result<std::string> s = OptionalJsonString(*meta, "namespace", "metadata.namespace");
    if (!s.ok()) return s.error();
    *ns = std::move(*s);
  }
  return common::Status::Ok();
}

// ReadNames, then the spec: nullptr when absent, an error when not an object.
common::Result<const rapidjson::Value*> NamesAndSpec(const rapidjson::Value& object,
                                                     std::string* ns, std::string* name) {
  if (common::Status s = ReadNames(object, ns, name); !s.ok()) return s.error();
  const rapidjson::Value* spec = JsonMember(object, "spec");
  if (spec != nullptr && !spec->IsObject()) return common::Error{"spec: expected an object"};
  return spec;
}

struct PodTraits {
  using Object = Pod;
  ClusterObserver* observer;
  std::function<common::Result<Pod>(const rapidjson::Value&)> decode;
  using Kept = KeepNothing;  // ClusterState keeps what it reads of a pod
  common::Result<Pod> Decode(const rapidjson::Value& v) const { return decode(v); }
  void OnUpsert(const Pod& pod) const { observer->OnPodUpsert(pod); }
  Kept Keep(const Pod&) const { return {}; }
  void OnDelete(const Kept&, const StoredName& stored) const {
    Pod last_known;
    last_known.namespace_ = stored.ns;
    last_known.name = stored.name;
    last_known.uid = stored.uid;
    // Succeeded or Failed: what it ended as, when the DELETED event says (unknown otherwise).
    last_known.phase = stored.phase == "Succeeded" ? model::PodPhase::kSucceeded
                       : stored.phase == "Failed"  ? model::PodPhase::kFailed
                                                   : model::PodPhase::kUnknown;
    observer->OnPodDelete(last_known);
  }
};

struct NodeTraits {
  using Object = Node;
  ClusterObserver* observer;
  std::function<common::Result<Node>(const rapidjson::Value&)> decode;
  common::Result<Node> Decode(const rapidjson::Value& v) const { return decode(v); }
  using Kept = KeepNothing;
  void OnUpsert(const Node& node) const { observer->OnNodeUpsert(node); }
  Kept Keep(const Node&) const { return {}; }
  void OnDelete(const Kept&, const StoredName& stored) const {
    observer->OnNodeDelete(std::string(stored.name));
  }
};

struct NamespaceTraits {
  using Object = NamespaceInfo;
  ClusterObserver* observer;
  common::Result<NamespaceInfo> Decode(const rapidjson::Value& v) const {
    return DecodeNamespace(v);
  }
  using Kept = KeepNothing;
  void OnUpsert(const NamespaceInfo& ns) const { observer->OnNamespaceUpsert(ns.name, ns.labels); }
  Kept Keep(const NamespaceInfo&) const { return {}; }
  void OnDelete(const Kept&, const StoredName& stored) const {
    observer->OnNamespaceDelete(std::string(stored.name));
  }
};

struct LocalQueueTraits {
  using Object = LocalQueueInfo;
  ClusterObserver* observer;
  common::Result<LocalQueueInfo> Decode(const rapidjson::Value& v) const {
    return DecodeLocalQueue(v);
  }
  void OnUpsert(const LocalQueueInfo& q) const {
    observer->OnLocalQueueUpsert(q.ns, q.name, q.cluster_queue);
  }
  using Kept = KeepNothing;
  Kept Keep(const LocalQueueInfo&) const { return {}; }
  void OnDelete(const Kept&, const StoredName& stored) const {
    observer->OnLocalQueueDelete(std::string(stored.ns), std::string(stored.name));
  }
};

struct PodGroupTraits {
  using Object = PodGroupInfo;
  ClusterObserver* observer;
  common::Result<PodGroupInfo> Decode(const rapidjson::Value& v) const { return DecodePodGroup(v); }
  void OnUpsert(const PodGroupInfo& g) const {
    observer->OnPodGroupUpsert(g.ns, g.name, g.queue, g.min_member);
  }
  using Kept = KeepNothing;
  Kept Keep(const PodGroupInfo&) const { return {}; }
  void OnDelete(const Kept&, const StoredName& stored) const {
    observer->OnPodGroupDelete(std::string(stored.ns), std::string(stored.name));
  }
};

template <common::Result<GangSizeInfo> (*kDecode)(const rapidjson::Value&)>
struct GangSizeTraits {
  using Object = GangSizeInfo;
  ClusterObserver* observer;
  common::Result<GangSizeInfo> Decode(const rapidjson::Value& v) const { return kDecode(v); }
  using Kept = std::string;  // the workload it declares the size of
  void OnUpsert(const GangSizeInfo& g) const {
    // The job first: a RayJob's cluster moves the quota held for the resumed RayJob to itself
    // before its size lets its pods in.
    if (g.control != nullptr) observer->OnJobUpsert(g.control);
    observer->OnGangSizeUpsert(g.workload, g.size);
  }
  Kept Keep(const GangSizeInfo& g) const { return g.workload; }
  void OnDelete(const Kept& workload, const StoredName&) const {
    observer->OnGangSizeDelete(workload);
    observer->OnJobDelete(workload);
  }
};

template <common::Result<GangSizeInfo> (*kDecode)(const rapidjson::Value&)>
std::unique_ptr<ObjectSink> GangSizeSink(ClusterObserver* observer) {
  return std::make_unique<TypedSink<GangSizeTraits<kDecode>>>(GangSizeTraits<kDecode>{observer});
}

// A non-negative integer at `key` of `object` (`fallback` when absent or null); `path` names it.
common::Result<int64_t> CountAt(const rapidjson::Value& object, const char* key,
                                const std::string& path, int64_t fallback) {
  const rapidjson::Value* v = JsonMember(object, key);
  if (v == nullptr || v->IsNull()) return fallback;
  if (!v->IsInt64() || v->GetInt64() < 0) {
    return common::Error{path + ": expected a non-negative integer"};
  }
  return v->GetInt64();
}

// Names, uid and spec of a job object.
common::Result<const rapidjson::Value*> JobHeader(const rapidjson::Value& object,
                                                  GangSizeInfo* info, std::string* uid) {
  common::Result<const rapidjson::Value*> spec = NamesAndSpec(object, &info->ns, &info->name);
  if (!spec.ok()) return spec.error();
  common::Result<std::string> u = OptionalJsonString(object["metadata"], "uid", "metadata.uid");
  if (!u.ok()) return u.error();
  *uid = std::move(*u);
  return spec;
}

// JobHeader for a job whose pods name it as their owner: the uid is required, the gang key is
// OwnerGangKey(uid).
common::Result<const rapidjson::Value*> OwnerJobHeader(const rapidjson::Value& object,
                                                       GangSizeInfo* info) {
  std::string uid;
  common::Result<const rapidjson::Value*> spec = JobHeader(object, info, &uid);
  if (!spec.ok()) return spec.error();
  if (uid.empty()) return common::Error{"metadata.uid: missing"};
  info->workload = OwnerGangKey(uid);
  return spec;
}

}  // namespace

common::Result<NamespaceInfo> DecodeNamespace(const rapidjson::Value& object) {
  NamespaceInfo info;
  if (common::Status s = ReadNames(object, nullptr, &info.name); !s.ok()) return s.error();
  const rapidjson::Value* labels = JsonMember(object["metadata"], "labels");
  if (labels != nullptr) {
    if (!labels->IsObject()) return common::Error{"metadata.labels: expected an object"};
    for (const auto& m : labels->GetObject()) {
      std::string key(m.name.GetString(), m.name.GetStringLength());
      if (!m.value.IsString())
        return common::Error{"metadata.labels[\"" + key + "\"]: expected a string"};
      info.labels[key] = std::string(m.value.GetString(), m.value.GetStringLength());
    }
  }
  return info;
}

common::Result<LocalQueueInfo> DecodeLocalQueue(const rapidjson::Value& object) {
  LocalQueueInfo info;
  common::Result<const rapidjson::Value*> spec = NamesAndSpec(object, &info.ns, &info.name);
  if (!spec.ok()) return spec.error();
  if (*spec != nullptr) {
    common::Result<std::string> cq =
        OptionalJsonString(**spec, "clusterQueue", "spec.clusterQueue");
    if (!cq.ok()) return cq.error();
    info.cluster_queue = std::move(*cq);
  }
  return info;
}

common::Result<PodGroupInfo> DecodePodGroup(const rapidjson::Value& object) {
  PodGroupInfo info;
  common::Result<const rapidjson::Value*> spec = NamesAndSpec(object, &info.ns, &info.name);
  if (!spec.ok()) return spec.error();
  if (*spec != nullptr) {
    common::Result<std::string> queue = OptionalJsonString(**spec, "queue", "spec.queue");
    if (!queue.ok()) return queue.error();
    info.queue = std::move(*queue);
    const rapidjson::Value* min = JsonMember(**spec, "minMember");
    if (min != nullptr) {
      if (!min->IsInt64() || min->GetInt64() < 0) {
        return common::Error{"spec.minMember: expected a non-negative integer"};
      }
      info.min_member = min->GetInt64();
    }
  }
  return info;
}

namespace {

// The pod a job's pod template makes (namespace `ns`), or nullopt when it does not decode.
std::optional<model::Pod> TemplatePod(const rapidjson::Value* tmpl, const std::string& ns) {
  if (tmpl == nullptr || !tmpl->IsObject()) return std::nullopt;
  common::Result<model::Pod> pod = model::DecodePod(*tmpl);
  if (!pod.ok()) return std::nullopt;
  pod->namespace_ = ns;
  return std::move(*pod);
}

// What pausing a job needs besides its pod sets: names, path, the suspend flag, its creation,
// the taskgov.io/ and kueue.x-k8s.io/podset-* annotations. `plural_path` is e.g.
// "/apis/batch/v1/namespaces/" + ns + "/jobs/".
std::shared_ptr<model::JobControl> ControlHeader(const rapidjson::Value& object,
                                                 const GangSizeInfo& info, std::string kind,
                                                 std::string group_version, std::string plural,
                                                 bool run_policy) {
  auto c = std::make_shared<model::JobControl>();
  c->kind = std::move(kind);
  c->ns = info.ns;
  c->name = info.name;
  c->workload = info.workload;
  c->path = "/apis/" + group_version + "/namespaces/" + info.ns + "/" + plural + "/" + info.name;
  c->run_policy = run_policy;
  const rapidjson::Value* meta = JsonMember(object, "metadata");
  if (meta != nullptr && meta->IsObject()) {
    if (const rapidjson::Value* uid = JsonMember(*meta, "uid"); uid != nullptr && uid->IsString())
      c->uid = uid->GetString();
    if (const rapidjson::Value* t = JsonMember(*meta, "creationTimestamp");
        t != nullptr && t->IsString()) {
      if (common::Result<int64_t> ms = model::ParseTimestamp(t->GetString()); ms.ok())
        c->creation_unix_ms = *ms;
    }
    if (const rapidjson::Value* a = JsonMember(*meta, "annotations");
        a != nullptr && a->IsObject()) {
      for (const auto& m : a->GetObject()) {
        std::string_view key(m.name.GetString(), m.name.GetStringLength());
        // taskgov's own, and Kueue's topology requests (`hyp` writes them here too).
        if ((key.starts_with("taskgov.io/") || key.starts_with("kueue.x-k8s.io/podset-")) &&
            m.value.IsString()) {
          c->annotations[std::string(key)] = m.value.GetString();
        }
      }
    }
  }
  const rapidjson::Value* spec = JsonMember(object, "spec");
  const rapidjson::Value* holder = spec;
  if (run_policy && spec != nullptr && spec->IsObject()) holder = JsonMember(*spec, "runPolicy");
  const rapidjson::Value* flag =
      holder != nullptr && holder->IsObject() ? JsonMember(*holder, "suspend") : nullptr;
  c->suspended = flag != nullptr && flag->IsBool() && flag->GetBool();
  return c;
}

// A batch/v1 Job's podFailurePolicy has a rule that ignores pods with the DisruptionTarget
// condition (evicted): the first rule matching such a pod decides, as the Job controller does.
bool IgnoresDisruption(const rapidjson::Value& spec) {
  const rapidjson::Value* policy = JsonMember(spec, "podFailurePolicy");
  const rapidjson::Value* rules =
      policy != nullptr && policy->IsObject() ? JsonMember(*policy, "rules") : nullptr;
  if (rules == nullptr || !rules->IsArray()) return false;
  for (const rapidjson::Value& rule : rules->GetArray()) {
    if (!rule.IsObject()) continue;
    const rapidjson::Value* on = JsonMember(rule, "onPodConditions");
    if (on == nullptr || !on->IsArray()) continue;  // an exit-code rule: not about evictions
    for (const rapidjson::Value& c : on->GetArray()) {
      const rapidjson::Value* type = c.IsObject() ? JsonMember(c, "type") : nullptr;
      const rapidjson::Value* status = c.IsObject() ? JsonMember(c, "status") : nullptr;
      if (type == nullptr || !type->IsString() ||
          std::string_view(type->GetString()) != "DisruptionTarget") {
        continue;
      }
      if (status != nullptr && status->IsString() &&
          std::string_view(status->GetString()) != "True")
        continue;
      const rapidjson::Value* action = JsonMember(rule, "action");
      return action != nullptr && action->IsString() &&
             std::string_view(action->GetString()) == "Ignore";
    }
  }
  return false;
}

}  // namespace

common::Result<GangSizeInfo> DecodeJob(const rapidjson::Value& object) {
  GangSizeInfo info;
  common::Result<const rapidjson::Value*> spec = OwnerJobHeader(object, &info);
  if (!spec.ok()) return spec.error();
  if (*spec != nullptr) {
    common::Result<int64_t> parallelism = CountAt(**spec, "parallelism", "spec.parallelism", 1);
    if (!parallelism.ok()) return parallelism.error();
    info.size = *parallelism;
    common::Result<int64_t> completions =
        CountAt(**spec, "completions", "spec.completions", *parallelism);
    if (!completions.ok()) return completions.error();
    if (std::optional<model::Pod> pod = TemplatePod(JsonMember(**spec, "template"), info.ns)) {
      std::shared_ptr<model::JobControl> c =
          ControlHeader(object, info, "Job", "batch/v1", "jobs", false);
      c->ignores_disruption = IgnoresDisruption(**spec);
      c->pod_sets.push_back({std::min(*parallelism, *completions), std::move(*pod)});
      info.control = std::move(c);
    }
  }
  return info;
}

common::Result<GangSizeInfo> DecodeJobSet(const rapidjson::Value& object) {
  GangSizeInfo info;
  std::string uid;
  common::Result<const rapidjson::Value*> spec = JobHeader(object, &info, &uid);
  if (!spec.ok()) return spec.error();
  info.workload = JobSetKey(info.ns, info.name);
  info.size = 0;
  const rapidjson::Value* jobs = *spec == nullptr ? nullptr : JsonMember(**spec, "replicatedJobs");
  if (jobs == nullptr || jobs->IsNull()) return info;
  if (!jobs->IsArray()) return common::Error{"spec.replicatedJobs: expected an array"};
  // Pausable (spec.suspend; the JobSet controller suspends its Jobs) when every replicated Job's
  // pod template decodes.
  std::shared_ptr<model::JobControl> control =
      ControlHeader(object, info, "JobSet", "jobset.x-k8s.io/v1alpha2", "jobsets", false);
  for (rapidjson::SizeType i = 0; i < jobs->Size(); ++i) {
    const rapidjson::Value& job = (*jobs)[i];
    const std::string at = "spec.replicatedJobs[" + std::to_string(i) + "]";
    if (!job.IsObject()) return common::Error{at + ": expected an object"};
    common::Result<int64_t> replicas = CountAt(job, "replicas", at + ".replicas", 1);
    if (!replicas.ok()) return replicas.error();
    int64_t parallelism = 1;
    const rapidjson::Value* tmpl = JsonMember(job, "template");
    const rapidjson::Value* tspec =
        tmpl != nullptr && tmpl->IsObject() ? JsonMember(*tmpl, "spec") : nullptr;
    if (tspec != nullptr && tspec->IsObject()) {
      common::Result<int64_t> p =
          CountAt(*tspec, "parallelism", at + ".template.spec.parallelism", 1);
      if (!p.ok()) return p.error();
      parallelism = *p;
    }
    info.size = SaturatingAdd(info.size, SaturatingTimes(*replicas, parallelism));
    std::optional<model::Pod> pod = TemplatePod(
        tspec != nullptr && tspec->IsObject() ? JsonMember(*tspec, "template") : nullptr, info.ns);
    if (!pod) {
      control = nullptr;
    } else if (control != nullptr) {
      control->pod_sets.push_back({SaturatingTimes(*replicas, parallelism), std::move(*pod)});
    }
  }
  info.control = std::move(control);
  return info;
}

namespace {

// A kubeflow.org training job: Σ spec.<field>.*.replicas.
common::Result<GangSizeInfo> DecodeReplicaSpecs(const rapidjson::Value& object,
                                                const std::string& field, const char* kind,
                                                const char* group_version, const char* plural) {
  GangSizeInfo info;
  common::Result<const rapidjson::Value*> spec = OwnerJobHeader(object, &info);
  if (!spec.ok()) return spec.error();
  info.size = 0;
  const rapidjson::Value* replicas = *spec == nullptr ? nullptr : JsonMember(**spec, field.c_str());
  if (replicas == nullptr || replicas->IsNull()) return info;
  if (!replicas->IsObject()) return common::Error{"spec." + field + ": expected an object"};
  for (const auto& m : replicas->GetObject()) {
    const std::string at =
        "spec." + field + "." + std::string(m.name.GetString(), m.name.GetStringLength());
    if (!m.value.IsObject()) return common::Error{at + ": expected an object"};
    common::Result<int64_t> n = CountAt(m.value, "replicas", at + ".replicas", 1);
    if (!n.ok()) return n.error();
    info.size = SaturatingAdd(info.size, *n);
  }
  // Pausable when every replica type's template decodes.
  auto c = ControlHeader(object, info, kind, group_version, plural, true);
  for (const auto& m : replicas->GetObject()) {
    std::optional<model::Pod> pod = TemplatePod(JsonMember(m.value, "template"), info.ns);
    if (!pod) return info;
    common::Result<int64_t> n = CountAt(m.value, "replicas", "", 1);
    c->pod_sets.push_back({n.ok() ? *n : 1, std::move(*pod)});
  }
  info.control = std::move(c);
  return info;
}

}  // namespace

common::Result<GangSizeInfo> DecodePyTorchJob(const rapidjson::Value& object) {
  return DecodeReplicaSpecs(object, "pytorchReplicaSpecs", "PyTorchJob", "kubeflow.org/v1",
                            "pytorchjobs");
}

common::Result<GangSizeInfo> DecodeTFJob(const rapidjson::Value& object) {
  return DecodeReplicaSpecs(object, "tfReplicaSpecs", "TFJob", "kubeflow.org/v1", "tfjobs");
}

common::Result<GangSizeInfo> DecodeMPIJob(const rapidjson::Value& object) {
  return DecodeReplicaSpecs(object, "mpiReplicaSpecs", "MPIJob", "kubeflow.org/v2beta1", "mpijobs");
}

common::Result<GangSizeInfo> DecodeXGBoostJob(const rapidjson::Value& object) {
  return DecodeReplicaSpecs(object, "xgbReplicaSpecs", "XGBoostJob", "kubeflow.org/v1",
                            "xgboostjobs");
}

common::Result<GangSizeInfo> DecodePaddleJob(const rapidjson::Value& object) {
  return DecodeReplicaSpecs(object, "paddleReplicaSpecs", "PaddleJob", "kubeflow.org/v1",
                            "paddlejobs");
}

common::Result<GangSizeInfo> DecodeJAXJob(const rapidjson::Value& object) {
  return DecodeReplicaSpecs(object, "jaxReplicaSpecs", "JAXJob", "kubeflow.org/v1", "jaxjobs");
}

namespace {

// The pods of a RayCluster spec (`at` names it): the head, and each worker group's replicas ×
// numOfHosts; one pod set each in *sets, which is cleared when a template does not decode.
common::Result<int64_t> RayClusterPods(const rapidjson::Value* spec, const std::string& at,
                                       const std::string& ns,
                                       std::vector<model::JobControl::PodSet>* sets) {
  int64_t size = 1;  // the head
  if (spec == nullptr || spec->IsNull()) return size;
  if (!spec->IsObject()) return common::Error{at + ": expected an object"};
  const rapidjson::Value* groups = JsonMember(*spec, "workerGroupSpecs");
  if (groups != nullptr && groups->IsNull()) groups = nullptr;
  if (groups != nullptr && !groups->IsArray()) {
    return common::Error{at + ".workerGroupSpecs: expected a list"};
  }
  const rapidjson::Value* head = JsonMember(*spec, "headGroupSpec");
  std::optional<model::Pod> head_pod = TemplatePod(
      head != nullptr && head->IsObject() ? JsonMember(*head, "template") : nullptr, ns);
  bool decoded = head_pod.has_value();
  if (decoded) sets->push_back({1, std::move(*head_pod)});
  for (rapidjson::SizeType i = 0; groups != nullptr && i < groups->Size(); ++i) {
    const std::string group_at = at + ".workerGroupSpecs[" + std::to_string(i) + "]";
    const rapidjson::Value& group = (*groups)[i];
    if (!group.IsObject()) return common::Error{group_at + ": expected an object"};
    common::Result<int64_t> replicas = CountAt(group, "replicas", group_at + ".replicas", 1);
    if (!replicas.ok()) return replicas.error();
    common::Result<int64_t> hosts = CountAt(group, "numOfHosts", group_at + ".numOfHosts", 1);
    if (!hosts.ok()) return hosts.error();
    const int64_t pods = SaturatingTimes(*replicas, std::max<int64_t>(*hosts, 1));
    size = SaturatingAdd(size, pods);
    std::optional<model::Pod> pod = TemplatePod(JsonMember(group, "template"), ns);
    decoded = decoded && pod.has_value();
    if (decoded) sets->push_back({pods, std::move(*pod)});
  }
  if (!decoded) sets->clear();
  return size;
}

// The uid of the object's controller owner of `kind` ("" without one).
std::string ControllerOwnerUid(const rapidjson::Value& object, std::string_view kind) {
  const rapidjson::Value* meta = JsonMember(object, "metadata");
  const rapidjson::Value* owners =
      meta != nullptr && meta->IsObject() ? JsonMember(*meta, "ownerReferences") : nullptr;
  if (owners == nullptr || !owners->IsArray()) return "";
  for (const rapidjson::Value& o : owners->GetArray()) {
    if (!o.IsObject()) continue;
    const rapidjson::Value* k = JsonMember(o, "kind");
    const rapidjson::Value* uid = JsonMember(o, "uid");
    const rapidjson::Value* controller = JsonMember(o, "controller");
    if (k != nullptr && k->IsString() && std::string_view(k->GetString()) == kind &&
        uid != nullptr && uid->IsString() && controller != nullptr && controller->IsBool() &&
        controller->GetBool()) {
      return uid->GetString();
    }
  }
  return "";
}

}  // namespace

common::Result<GangSizeInfo> DecodeRayCluster(const rapidjson::Value& object) {
  GangSizeInfo info;
  common::Result<const rapidjson::Value*> spec = OwnerJobHeader(object, &info);
  if (!spec.ok()) return spec.error();
  std::vector<model::JobControl::PodSet> sets;
  common::Result<int64_t> size = RayClusterPods(*spec, "spec", info.ns, &sets);
  if (!size.ok()) return size.error();
  info.size = *size;
  // A RayJob's cluster is a link to the RayJob: the RayJob is what is suspended (suspending the
  // cluster under it would fight its controller).
  if (std::string owner = ControllerOwnerUid(object, "RayJob"); !owner.empty()) {
    auto link = ControlHeader(object, info, "RayCluster", "ray.io/v1", "rayclusters", false);
    link->controlled_by = OwnerGangKey(owner);
    info.control = std::move(link);
    return info;
  }
  // Pausable (spec.suspend) when its templates decode.
  if (sets.empty()) return info;
  auto control = ControlHeader(object, info, "RayCluster", "ray.io/v1", "rayclusters", false);
  control->pod_sets = std::move(sets);
  info.control = std::move(control);
  return info;
}

common::Result<GangSizeInfo> DecodeRayJob(const rapidjson::Value& object) {
  GangSizeInfo info;
  common::Result<const rapidjson::Value*> spec = OwnerJobHeader(object, &info);
  if (!spec.ok()) return spec.error();
  const rapidjson::Value* cluster =
      *spec == nullptr ? nullptr : JsonMember(**spec, "rayClusterSpec");
  std::vector<model::JobControl::PodSet> sets;
  common::Result<int64_t> size = RayClusterPods(cluster, "spec.rayClusterSpec", info.ns, &sets);
  if (!size.ok()) return size.error();
  info.size = *size;
  // KubeRay suspends a RayJob only when it deletes its cluster at the end
  // (shutdownAfterJobFinishes) and runs on a cluster of its own (no clusterSelector); it fails
  // one suspended otherwise. Such a RayJob's pods are evicted.
  if (*spec == nullptr || cluster == nullptr || sets.empty()) return info;
  const rapidjson::Value* shutdown = JsonMember(**spec, "shutdownAfterJobFinishes");
  const rapidjson::Value* selector = JsonMember(**spec, "clusterSelector");
  if (shutdown == nullptr || !shutdown->IsBool() || !shutdown->GetBool()) return info;
  if (selector != nullptr && selector->IsObject() && selector->MemberCount() > 0) return info;
  auto control = ControlHeader(object, info, "RayJob", "ray.io/v1", "rayjobs", false);
  control->pod_sets = std::move(sets);
  info.control = std::move(control);
  return info;
}

Informers::Informers(KubeClient* client, ClusterObserver* observer, ObjectDecoders decoders,
                     InformerOptions options) {
  const common::Clock* clock =
      options.clock != nullptr ? options.clock : common::SystemClock::Get();
  RandomSource random = options.random ? options.random : MakeRandomSource();
  auto add = [&](ResourceSpec spec, ObjectKind kind, std::unique_ptr<ObjectSink> sink) {
    Entry entry;
    entry.sink = std::move(sink);
    entry.reflector = std::make_unique<Reflector>(
        client, std::move(spec), entry.sink.get(), [observer, kind] { observer->OnSynced(kind); },
        options.reflector, clock, random);
    entries_.push_back(std::move(entry));
  };
  add(ResourceSpec{"pods", "/api/v1/pods", options.pod_field_selector, false, {}}, ObjectKind::kPod,
      std::make_unique<TypedSink<PodTraits>>(PodTraits{observer, std::move(decoders.pod)}));
  add(ResourceSpec{"nodes", "/api/v1/nodes", "", false, {}}, ObjectKind::kNode,
      std::make_unique<TypedSink<NodeTraits>>(NodeTraits{observer, std::move(decoders.node)}));
  add(ResourceSpec{"namespaces", "/api/v1/namespaces", "", false, {}}, ObjectKind::kNamespace,
      std::make_unique<TypedSink<NamespaceTraits>>(NamespaceTraits{observer}));
  if (options.watch_local_queues) {
    // The served Kueue version: v1beta2 preferred, v1beta1 otherwise (DecodeLocalQueue reads
    // spec.clusterQueue, the same in both).
    add(ResourceSpec{"localqueues",
                     "/apis/kueue.x-k8s.io/v1beta2/localqueues",
                     "",
                     true,
                     {"/apis/kueue.x-k8s.io/v1beta1/localqueues"}},
        ObjectKind::kLocalQueue,
        std::make_unique<TypedSink<LocalQueueTraits>>(LocalQueueTraits{observer}));
  } else {
    observer->OnSynced(ObjectKind::kLocalQueue);
  }
  if (options.watch_pod_groups) {
    add(ResourceSpec{"podgroups", "/apis/scheduling.volcano.sh/v1beta1/podgroups", "", true, {}},
        ObjectKind::kPodGroup,
        std::make_unique<TypedSink<PodGroupTraits>>(PodGroupTraits{observer}));
  } else {
    observer->OnSynced(ObjectKind::kPodGroup);
  }
  if (options.watch_jobs) {
    // Job objects declare their gang's size; optional: a cluster or a role without them only
    // loses that.
    add(ResourceSpec{"jobs", "/apis/batch/v1/jobs", "", true, {}}, ObjectKind::kJob,
        GangSizeSink<DecodeJob>(observer));
    add(ResourceSpec{"jobsets", "/apis/jobset.x-k8s.io/v1alpha2/jobsets", "", true, {}},
        ObjectKind::kJobSet, GangSizeSink<DecodeJobSet>(observer));
    add(ResourceSpec{"pytorchjobs", "/apis/kubeflow.org/v1/pytorchjobs", "", true, {}},
        ObjectKind::kPyTorchJob, GangSizeSink<DecodePyTorchJob>(observer));
    add(ResourceSpec{"tfjobs", "/apis/kubeflow.org/v1/tfjobs", "", true, {}}, ObjectKind::kTFJob,
        GangSizeSink<DecodeTFJob>(observer));
    add(ResourceSpec{"mpijobs", "/apis/kubeflow.org/v2beta1/mpijobs", "", true, {}},
        ObjectKind::kMPIJob, GangSizeSink<DecodeMPIJob>(observer));
    add(ResourceSpec{"xgboostjobs", "/apis/kubeflow.org/v1/xgboostjobs", "", true, {}},
        ObjectKind::kXGBoostJob, GangSizeSink<DecodeXGBoostJob>(observer));
    add(ResourceSpec{"paddlejobs", "/apis/kubeflow.org/v1/paddlejobs", "", true, {}},
        ObjectKind::kPaddleJob, GangSizeSink<DecodePaddleJob>(observer));
    add(ResourceSpec{"jaxjobs", "/apis/kubeflow.org/v1/jaxjobs", "", true, {}}, ObjectKind::kJAXJob,
        GangSizeSink<DecodeJAXJob>(observer));
    add(ResourceSpec{"rayclusters", "/apis/ray.io/v1/rayclusters", "", true, {}},
        ObjectKind::kRayCluster, GangSizeSink<DecodeRayCluster>(observer));
    add(ResourceSpec{"rayjobs", "/apis/ray.io/v1/rayjobs", "", true, {}}, ObjectKind::kRayJob,
        GangSizeSink<DecodeRayJob>(observer));
  } else {
    for (ObjectKind kind :
         {ObjectKind::kJob, ObjectKind::kJobSet, ObjectKind::kPyTorchJob, ObjectKind::kTFJob,
          ObjectKind::kMPIJob, ObjectKind::kXGBoostJob, ObjectKind::kPaddleJob, ObjectKind::kJAXJob,
          ObjectKind::kRayCluster, ObjectKind::kRayJob}) {
      observer->OnSynced(kind);
    }
  }
}

Informers::~Informers() { Stop(); }

void Informers::Start() {
  if (started_) return;
  started_ = true;
  for (Entry& entry : entries_) {
    Reflector* reflector = entry.reflector.get();
    entry.thread = std::thread([reflector] { reflector->Run(); });
  }
}

void Informers::Stop() {
  if (stopped_) return;
  stopped_ = true;
  for (Entry& entry : entries_) entry.reflector->Stop();
  for (Entry& entry : entries_) {
    if (entry.thread.joinable()) entry.thread.join();
  }
}

bool Informers::synced() const {
  for (const Entry& entry : entries_) {
    if (!entry.reflector->synced()) return false;
  }
  return true;
}

bool Informers::WaitStats(const std::string& resource,
                          const std::function<bool(const ReflectorStats&)>& predicate,
                          std::chrono::milliseconds timeout) const {
  for (const Entry& entry : entries_) {
    if (entry.reflector->spec().name == resource) {
      return entry.reflector->WaitStats(predicate, timeout);
    }
  }
  return false;
}

std::vector<ReflectorStats> Informers::Stats() const {
  std::vector<ReflectorStats> stats;
  for (const Entry& entry : entries_) stats.push_back(entry.reflector->stats());
  return stats;
}

}  // namespace taskgov::scheduler::kube
