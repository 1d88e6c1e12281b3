#include "scheduler/model/gang.h"

#include <utility>

namespace taskgov::scheduler::model {
namespace {

constexpr std::string_view kGangOwnerKinds[] = {
    "Job",    "JobSet",   "PyTorchJob",         "TFJob",  "MPIJob",     "XGBoostJob", "PaddleJob",
    "JAXJob", "TrainJob", "HyperPodPyTorchJob", "RayJob", "RayCluster",
};

const std::string* LabelOrAnnotation(const Pod& pod, std::string_view key) {
  if (auto it = pod.labels.find(key); it != pod.labels.end() && !it->second.empty()) {
    return &it->second;
  }
  if (auto it = pod.annotations.find(key); it != pod.annotations.end() && !it->second.empty()) {
    return &it->second;
  }
  return nullptr;
}

// The source of a gang named by its controller owner's kind (the names are GangSourceName's).
GangSource OwnerSource(std::string_view kind) {
  for (GangSource source : {GangSource::kJob, GangSource::kJobSet, GangSource::kPyTorchJob,
                            GangSource::kTFJob, GangSource::kMPIJob, GangSource::kXGBoostJob,
                            GangSource::kPaddleJob, GangSource::kJAXJob, GangSource::kRayCluster}) {
    if (GangSourceName(source) == kind) return source;
  }
  return GangSource::kOtherOwner;
}

// The gang key, its display name and its source.
WorkloadRef GangKeyAndName(const Pod& pod) {
  auto ref = [&](std::string key, const std::string& name, GangSource source) {
    WorkloadRef r;
    r.key = std::move(key);
    r.display = pod.namespace_ + "/" + name;
    r.source = source;
    return r;
  };
  if (const std::string* name = LabelOrAnnotation(pod, kKueuePodGroupKey)) {
    return ref("kueue/" + pod.namespace_ + "/" + *name, *name, GangSource::kPod);
  }
  for (const char* key : {kPodGroupKey, kVolcanoGroupKey}) {
    if (const std::string* name = LabelOrAnnotation(pod, key)) {
      return ref(PodGroupKey(pod.namespace_, *name), *name, GangSource::kPodGroup);
    }
  }
  if (const std::string* name = LabelOrAnnotation(pod, kJobSetKey)) {
    return ref(JobSetKey(pod.namespace_, *name), *name, GangSource::kJobSet);
  }
  if (const OwnerReference* owner = pod.controller_owner()) {
    for (std::string_view kind : kGangOwnerKinds) {
      if (owner->kind != kind) continue;
      if (!owner->uid.empty()) {
        return ref(OwnerGangKey(owner->uid), owner->name, OwnerSource(kind));
      }
      return ref("owner/" + pod.namespace_ + "/" + owner->kind + "/" + owner->name, owner->name,
                 GangSource::kOtherOwner);  // no uid: no job object can be matched to it
    }
  }
  return {};
}

// A declared member count: a positive decimal integer, else 0.
int32_t DeclaredSize(const Pod& pod) {
  const std::string* text = LabelOrAnnotation(pod, kKueueTotalCountKey);
  if (text == nullptr || text->empty() || text->size() > 9) return 0;
  int32_t n = 0;
  for (char c : *text) {
    if (c < '0' || c > '9') return 0;
    n = n * 10 + (c - '0');
  }
  return n;
}

}  // namespace

std::string_view GangSourceName(GangSource source) {
  switch (source) {
    case GangSource::kNone:
      return "";
    case GangSource::kPod:
      return "pod group";
    case GangSource::kPodGroup:
      return "PodGroup";
    case GangSource::kJob:
      return "Job";
    case GangSource::kJobSet:
      return "JobSet";
    case GangSource::kPyTorchJob:
      return "PyTorchJob";
    case GangSource::kTFJob:
      return "TFJob";
    case GangSource::kMPIJob:
      return "MPIJob";
    case GangSource::kXGBoostJob:
      return "XGBoostJob";
    case GangSource::kPaddleJob:
      return "PaddleJob";
    case GangSource::kJAXJob:
      return "JAXJob";
    case GangSource::kRayCluster:
      return "RayCluster";
    case GangSource::kOtherOwner:
      return "job owner";
  }
  return "";
}

std::string GangOf(const Pod& pod) { return GangKeyAndName(pod).key; }

std::string JobSetKey(std::string_view ns, std::string_view name) {
  std::string key = "jobset/";
  key.append(ns).append("/").append(name);
  return key;
}

std::string OwnerGangKey(std::string_view owner_uid) {
  std::string key = "owner/";
  key.append(owner_uid);
  return key;
}

std::string PodGroupKey(std::string_view ns, std::string_view name) {
  std::string key = "podgroup/";
  key.append(ns).append("/").append(name);
  return key;
}

WorkloadRef WorkloadOf(const Pod& pod) {
  WorkloadRef ref = GangKeyAndName(pod);
  if (!ref.key.empty()) ref.size = DeclaredSize(pod);
  return ref;
}

}  // namespace taskgov::scheduler::model
