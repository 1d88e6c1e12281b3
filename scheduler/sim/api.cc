#include "scheduler/sim/api.h"

#include <charconv>
#include <cstdio>

namespace taskgov::scheduler::sim {

void Api::AddNode(model::Node node) {
  node.resource_version = NextResourceVersion();
  WatchEvent e;
  e.type = WatchEvent::Type::kNodeUpsert;
  e.node = node;
  nodes_.push_back(std::move(node));
  events_.push_back(std::move(e));
}

const model::Node* Api::FindNode(const std::string& name) const {
  for (const model::Node& n : nodes_) {
    if (n.name == name) return &n;
  }
  return nullptr;
}

const PodObject& Api::CreatePod(model::Pod pod, PodTag tag) {
  char uid[32];
  snprintf(uid, sizeof(uid), "sim-%08llu", static_cast<unsigned long long>(++uid_counter_));
  pod.uid = uid;
  pod.creation_unix_ms = clock_->NowMs();
  pod.resource_version = NextResourceVersion();
  PodObject object;
  object.request = model::EffectiveRequest(pod);
  object.pod = std::move(pod);
  object.tag = std::move(tag);
  uid_by_key_[object.pod.key()] = object.pod.uid;
  pods_.resize(uid_counter_ + 1);
  pods_[uid_counter_] = std::make_unique<PodObject>(std::move(object));
  Emit(WatchEvent::Type::kPodUpsert, *pods_[uid_counter_], "");
  return *pods_[uid_counter_];
}

size_t Api::IndexOf(const std::string& uid) const {
  constexpr std::string_view kPrefix = "sim-";
  size_t n = 0;
  if (!uid.starts_with(kPrefix)) return 0;
  const char* end = uid.data() + uid.size();
  if (std::from_chars(uid.data() + kPrefix.size(), end, n).ptr != end || n >= pods_.size()) {
    return 0;
  }
  return pods_[n] != nullptr && pods_[n]->pod.uid == uid ? n : 0;
}

PodObject* Api::Mutable(const std::string& uid) {
  const size_t i = IndexOf(uid);
  return i == 0 ? nullptr : pods_[i].get();
}

const PodObject* Api::Find(const std::string& uid) const {
  const size_t i = IndexOf(uid);
  return i == 0 ? nullptr : pods_[i].get();
}

std::vector<const PodObject*> Api::pods() const {
  std::vector<const PodObject*> out;
  for (const std::unique_ptr<PodObject>& o : pods_) {
    if (o != nullptr) out.push_back(o.get());
  }
  return out;
}

void Api::SetPhase(const std::string& uid, model::PodPhase phase) {
  PodObject* o = Mutable(uid);
  if (o == nullptr || o->pod.phase == phase) return;
  o->pod.phase = phase;
  if (phase == model::PodPhase::kRunning && !o->pod.start_unix_ms) {
    o->pod.start_unix_ms = clock_->NowMs();
  }
  o->pod.resource_version = NextResourceVersion();
  Emit(WatchEvent::Type::kPodUpsert, *o, o->pod.node_name);
}

bool Api::DeleteGracefully(const std::string& uid, int64_t grace_ms,
                           const std::string& disruption_reason) {
  PodObject* o = Mutable(uid);
  if (o == nullptr || o->pod.deletion_unix_ms) return false;
  o->pod.deletion_unix_ms = clock_->NowMs() + grace_ms;
  o->deletion_grace_ms = grace_ms;
  if (!disruption_reason.empty()) o->disruption_target = disruption_reason;
  o->pod.resource_version = NextResourceVersion();
  Emit(WatchEvent::Type::kPodUpsert, *o, o->pod.node_name);
  return true;
}

void Api::Remove(const std::string& uid) {
  const size_t i = IndexOf(uid);
  if (i == 0) return;
  Emit(WatchEvent::Type::kPodDelete, *pods_[i], pods_[i]->pod.node_name);
  uid_by_key_.erase(pods_[i]->pod.key());
  pods_[i].reset();
}

void Api::SetNominatedNode(const std::string& uid, const std::string& node) {
  if (PodObject* o = Mutable(uid)) o->nominated_node = node;
}

void Api::Annotate(const std::string& uid, const std::string& key, const std::string& value) {
  PodObject* o = Mutable(uid);
  if (o == nullptr) return;
  o->pod.annotations[key] = value;
  o->pod.resource_version = NextResourceVersion();
  Emit(WatchEvent::Type::kPodUpsert, *o, o->pod.node_name);
}

std::deque<WatchEvent> Api::TakeEvents() {
  std::deque<WatchEvent> out;
  out.swap(events_);
  return out;
}

void Api::Emit(WatchEvent::Type type, const PodObject& object, const std::string& previous_node) {
  WatchEvent e;
  e.type = type;
  e.pod = object.pod;
  e.previous_node = previous_node;
  events_.push_back(std::move(e));
}

common::Status Api::Bind(const std::string& ns, const std::string& name, const std::string& uid,
                         const std::string& node) {
  PodObject* o = Mutable(uid);
  if (o == nullptr || o->pod.namespace_ != ns || o->pod.name != name) {
    ++counts_.bind_conflicts;
    return common::Error{"pods \"" + name + "\" not found"};
  }
  if (!o->pod.node_name.empty() || o->pod.deletion_unix_ms) {
    ++counts_.bind_conflicts;
    return common::Error{"Operation cannot be fulfilled on pods/binding \"" + name + "\": pod " +
                         name + " is already assigned to node \"" + o->pod.node_name + "\""};
  }
  if (FindNode(node) == nullptr) {
    ++counts_.bind_conflicts;
    return common::Error{"nodes \"" + node + "\" not found"};
  }
  o->pod.node_name = node;
  o->nominated_node.clear();
  o->pod.resource_version = NextResourceVersion();
  ++counts_.binds;
  Emit(WatchEvent::Type::kPodUpsert, *o, "");
  return common::Status::Ok();
}

EvictOutcome Api::Evict(const std::string& ns, const std::string& name, const std::string& uid,
                        int64_t grace_period_seconds, std::string* detail) {
  PodObject* o = Mutable(uid);
  if (o == nullptr || o->pod.namespace_ != ns || o->pod.name != name) {
    if (detail) *detail = "pods \"" + name + "\" not found";
    return EvictOutcome::kNotFound;
  }
  ++counts_.evictions;
  // A terminal pod is deleted at once (eviction.go: canIgnorePDB, then a plain delete).
  const bool terminal = o->pod.terminal();
  DeleteGracefully(uid, terminal ? 0 : grace_period_seconds * 1000, "EvictionByEvictionAPI");
  return EvictOutcome::kEvicted;
}

common::Status Api::Requeue(const std::string& ns, const std::string& name, const std::string& uid,
                            const std::string& at) {
  auto by_key = uid_by_key_.find(ns + "/" + name);
  if (by_key == uid_by_key_.end()) return common::Error{"pods \"" + name + "\" not found"};
  if (by_key->second != uid) {  // a merge patch naming another uid (metadata.uid is immutable)
    return common::Error{"Pod \"" + name + "\" is invalid: metadata.uid: Invalid value: \"" + uid +
                         "\": field is immutable"};
  }
  Annotate(uid, kRequeuedAtAnnotation, at);
  ++counts_.requeues;
  return common::Status::Ok();
}

void Api::RecordEvent(const EventRecord& event) {
  ++counts_.events_by_reason[event.reason];
  if (event_observer_) event_observer_(event);
}

}  // namespace taskgov::scheduler::sim
