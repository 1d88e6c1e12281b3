#include "scheduler/model/gang.h"

#include <tuple>
#include <utility>

namespace taskgov::scheduler {
namespace {

constexpr std::string_view kGangOwnerKinds[] = {
    "Job",    "JobSet",   "PyTorchJob",         "TFJob",  "MPIJob", "XGBoostJob", "PaddleJob",
    "JAXJob", "TrainJob", "HyperPodPyTorchJob", "RayJob",
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

// The gang key and its display name.
std::pair<std::string, std::string> GangKeyAndName(const Pod& pod) {
  if (const std::string* name = LabelOrAnnotation(pod, kKueuePodGroupKey)) {
    return {"kueue/" + pod.namespace_ + "/" + *name, pod.namespace_ + "/" + *name};
  }
  for (const char* key : {kPodGroupKey, kVolcanoGroupKey}) {
    if (const std::string* name = LabelOrAnnotation(pod, key)) {
      return {PodGroupKey(pod.namespace_, *name), pod.namespace_ + "/" + *name};
    }
  }
  if (const std::string* name = LabelOrAnnotation(pod, kJobSetKey)) {
    return {JobSetKey(pod.namespace_, *name), pod.namespace_ + "/" + *name};
  }
  if (const OwnerReference* owner = pod.controller_owner()) {
    for (std::string_view kind : kGangOwnerKinds) {
      if (owner->kind != kind) continue;
      std::string display = pod.namespace_ + "/" + owner->name;
      if (!owner->uid.empty()) return {OwnerGangKey(owner->uid), std::move(display)};
      return {"owner/" + pod.namespace_ + "/" + owner->kind + "/" + owner->name,
              std::move(display)};
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

std::string GangOf(const Pod& pod) { return GangKeyAndName(pod).first; }

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
  WorkloadRef ref;
  std::tie(ref.key, ref.display) = GangKeyAndName(pod);
  if (!ref.key.empty()) ref.size = DeclaredSize(pod);
  return ref;
}

}  // namespace taskgov::scheduler
