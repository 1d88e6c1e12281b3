#include "scheduler/model/gang.h"

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

}  // namespace

std::string GangOf(const Pod& pod) {
  if (const std::string* name = LabelOrAnnotation(pod, kKueuePodGroupKey)) {
    return "kueue/" + pod.namespace_ + "/" + *name;
  }
  for (const char* key : {kPodGroupKey, kVolcanoGroupKey}) {
    if (const std::string* name = LabelOrAnnotation(pod, key)) {
      return "podgroup/" + pod.namespace_ + "/" + *name;
    }
  }
  if (const std::string* name = LabelOrAnnotation(pod, kJobSetKey)) {
    return "jobset/" + pod.namespace_ + "/" + *name;
  }
  if (const OwnerReference* owner = pod.controller_owner()) {
    for (std::string_view kind : kGangOwnerKinds) {
      if (owner->kind != kind) continue;
      if (!owner->uid.empty()) return "owner/" + owner->uid;
      return "owner/" + pod.namespace_ + "/" + owner->kind + "/" + owner->name;
    }
  }
  return "";
}

}  // namespace taskgov::scheduler
