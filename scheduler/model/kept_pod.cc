#include "scheduler/model/kept_pod.h"

#include <algorithm>
#include <cstring>

#include "scheduler/model/gang.h"
#include "scheduler/model/pod_identity.h"

namespace taskgov::scheduler::model {
namespace {

// The packed block: in this order, each string as a LEB128 length and its bytes, each count and
// resource id as a LEB128 number, each amount as 8 bytes:
//   namespace, name, gang key (GangOf), effective request (count, then resource name and amount
//   each) — what walks over every pod read, first —
//   scheduler name, priority class name, labels (count, then key and value each), kept
//   annotations (the same), node selector (the same), owner references (count, then API
//   version, kind, name, UID and a controller byte each).
class Writer {
 public:
  void Number(uint64_t n) {
    do {
      uint8_t byte = n & 0x7f;
      n >>= 7;
      if (n != 0) byte |= 0x80;
      out_.push_back(static_cast<char>(byte));
    } while (n != 0);
  }
  void String(std::string_view s) {
    Number(s.size());
    out_.append(s);
  }
  void Amount(int64_t amount) {
    char bytes[sizeof amount];
    std::memcpy(bytes, &amount, sizeof amount);
    out_.append(bytes, sizeof amount);
  }
  std::string& out() { return out_; }

 private:
  std::string out_;
};

class Reader {
 public:
  Reader(const char* data, size_t size) : at_(data), end_(data + size) {}
  uint64_t Number() {
    uint64_t n = 0;
    for (int shift = 0; at_ < end_; shift += 7) {
      const auto byte = static_cast<uint8_t>(*at_++);
      n |= static_cast<uint64_t>(byte & 0x7f) << shift;
      if ((byte & 0x80) == 0) break;
    }
    return n;
  }
  std::string_view String() {
    const size_t n = Number();
    std::string_view s(at_, n);
    at_ += n;
    return s;
  }
  int64_t Amount() {
    int64_t amount = 0;
    std::memcpy(&amount, at_, sizeof amount);
    at_ += sizeof amount;
    return amount;
  }
  void Pairs(Labels* into) {
    for (uint64_t n = Number(); n > 0; --n) {
      const std::string_view key = String();
      into->emplace(std::string(key), std::string(String()));
    }
  }
  void SkipPairs() {
    for (uint64_t n = Number(); n > 0; --n) {
      String();
      String();
    }
  }

 private:
  const char* at_;
  const char* end_;
};

void WriteLabels(Writer& w, const Labels& labels, bool (*keep)(std::string_view)) {
  size_t count = 0;
  for (const auto& [key, value] : labels) count += keep == nullptr || keep(key) ? 1 : 0;
  w.Number(count);
  for (const auto& [key, value] : labels) {
    if (keep != nullptr && !keep(key)) continue;
    w.String(key);
    w.String(value);
  }
}

// A reader past the namespace, name and gang key: at the request.
Reader AtRequest(const char* data, size_t size) {
  Reader r(data, size);
  for (int i = 0; i < 3; ++i) r.String();
  return r;
}

// A reader past the request: at the scheduler name.
Reader AfterRequest(const char* data, size_t size) {
  Reader r = AtRequest(data, size);
  for (uint64_t n = r.Number(); n > 0; --n) {
    r.String();
    r.Amount();
  }
  return r;
}

}  // namespace

bool KeptAnnotation(std::string_view key) {
  return key == kVolcanoQueueAnnotation ||
         std::find(std::begin(kGangKeys), std::end(kGangKeys), key) != std::end(kGangKeys);
}

KeptPod::KeptPod(const Pod& pod, const ResourceList& effective)
    : node_(pod.node_name.empty() ? kNoNode : NodeNames().Intern(pod.node_name)),
      phase_(pod.phase),
      has_deletion_(pod.deletion_unix_ms.has_value()),
      has_start_(pod.start_unix_ms.has_value()),
      has_priority_(pod.priority.has_value()),
      priority_(pod.priority.value_or(0)),
      created_ms_(pod.creation_unix_ms),
      deletion_ms_(pod.deletion_unix_ms.value_or(0)),
      start_ms_(pod.start_unix_ms.value_or(0)),
      placement_(pod.placement) {
  Writer w;
  w.String(pod.namespace_);
  w.String(pod.name);
  w.String(GangOf(pod));
  w.Number(effective.size());
  // By name: a pod's resources are interned only where a decision reads them by id.
  for (const auto& [resource, amount] : effective) {
    w.String(resource);
    w.Amount(amount);
  }
  w.String(pod.scheduler_name);
  w.String(pod.priority_class_name);
  WriteLabels(w, pod.labels, nullptr);
  WriteLabels(w, pod.annotations, &KeptAnnotation);
  WriteLabels(w, pod.node_selector, nullptr);
  w.Number(pod.owner_references.size());
  for (const OwnerReference& owner : pod.owner_references) {
    w.String(owner.api_version);
    w.String(owner.kind);
    w.String(owner.name);
    w.String(owner.uid);
    w.Number(owner.controller ? 1 : 0);
  }
  size_ = static_cast<uint32_t>(w.out().size());
  blob_ = std::make_unique_for_overwrite<char[]>(size_);
  std::memcpy(blob_.get(), w.out().data(), size_);
}

Pod KeptPod::ToPod(std::string_view uid) const {
  Pod pod;
  pod.pod_requests = request();
  Reader r(blob_.get(), size_);
  pod.namespace_ = r.String();
  pod.name = r.String();
  r = AfterRequest(blob_.get(), size_);
  pod.scheduler_name = r.String();
  pod.priority_class_name = r.String();
  r.Pairs(&pod.labels);
  r.Pairs(&pod.annotations);
  r.Pairs(&pod.node_selector);
  pod.owner_references.resize(r.Number());
  for (OwnerReference& owner : pod.owner_references) {
    owner.api_version = r.String();
    owner.kind = r.String();
    owner.name = r.String();
    owner.uid = r.String();
    owner.controller = r.Number() != 0;
  }
  pod.uid = uid;
  pod.creation_unix_ms = created_ms_;
  if (has_deletion_) pod.deletion_unix_ms = deletion_ms_;
  if (has_start_) pod.start_unix_ms = start_ms_;
  if (bound()) pod.node_name = NodeNames().Name(node_);
  pod.placement = placement_;
  if (has_priority_) pod.priority = priority_;
  pod.phase = phase_;
  return pod;
}

std::string_view KeptPod::ns() const {
  Reader r(blob_.get(), size_);
  return r.String();
}

std::string_view KeptPod::name() const {
  Reader r(blob_.get(), size_);
  r.String();
  return r.String();
}

std::string_view KeptPod::gang() const {
  Reader r(blob_.get(), size_);
  r.String();
  r.String();
  return r.String();
}

std::string_view KeptPod::scheduler_name() const {
  Reader r = AfterRequest(blob_.get(), size_);
  return r.String();
}

std::string KeptPod::key() const {
  Reader r(blob_.get(), size_);
  std::string key(r.String());
  key += '/';
  key += r.String();
  return key;
}

const std::string& KeptPod::node_name() const {
  static const std::string kNone;
  return bound() ? NodeNames().Name(node_) : kNone;
}

ResourceList KeptPod::request() const {
  Reader r = AtRequest(blob_.get(), size_);
  ResourceList request;
  for (uint64_t n = r.Number(); n > 0; --n) {
    const std::string_view resource = r.String();
    request.Set(resource, r.Amount());
  }
  return request;
}

IdAmounts KeptPod::request_ids() const {
  Reader r = AtRequest(blob_.get(), size_);
  IdAmounts request(r.Number());
  for (auto& [resource, amount] : request) {
    resource = ResourceNames().Intern(r.String());
    amount = r.Amount();
  }
  return request;
}

}  // namespace taskgov::scheduler::model
