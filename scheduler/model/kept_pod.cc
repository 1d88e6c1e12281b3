#include "scheduler/model/kept_pod.h"

#include "scheduler/common/time_format.h"

#include <algorithm>
#include <cstring>
#include <utility>
#include <vector>

#include "scheduler/model/gang.h"
#include "scheduler/model/pod_identity.h"
#include "scheduler/model/string_pool.h"

namespace taskgov::scheduler::model {
namespace {

// The packed block: in this order, each plain string as a LEB128 length and its bytes, each
// pooled string (PodStrings: what many pods repeat) as its LEB128 id, each count as a LEB128
// number, each amount as 8 bytes:
//   namespace (pooled), name, gang key (GangOf, pooled), UID, effective request (count, then
//   resource name (pooled) and amount each) — what walks over every pod read, first —
//   then, all pooled: scheduler name, priority class name, labels (count, then key and value
//   each), kept annotations (the same), node selector (the same), owner references (count, then
//   API version, kind, name and UID, and a plain controller number each).
class Writer {
 public:
  explicit Writer(const StringPool::Id* ids) : ids_(ids) {}
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
  // The next pooled string (in the order they were acquired).
  void Pooled() { Number(*ids_++); }
  void Amount(int64_t amount) {
    char bytes[sizeof amount];
    std::memcpy(bytes, &amount, sizeof amount);
    out_.append(bytes, sizeof amount);
  }
  std::string& out() { return out_; }

 private:
  const StringPool::Id* ids_;
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
  std::string_view Pooled() { return PodStrings().View(static_cast<StringPool::Id>(Number())); }
  int64_t Amount() {
    int64_t amount = 0;
    std::memcpy(&amount, at_, sizeof amount);
    at_ += sizeof amount;
    return amount;
  }
  void Pairs(Labels* into) {
    for (uint64_t n = Number(); n > 0; --n) {
      const std::string_view key = Pooled();
      into->emplace(std::string(key), std::string(Pooled()));
    }
  }
  [[nodiscard]] bool done() const { return at_ >= end_; }

 private:
  const char* at_;
  const char* end_;
};

// The strings of `pod` the block pools, in the block's order (views of `pod` and `gang`).
std::vector<std::string_view> PooledStrings(const Pod& pod, const ResourceList& effective,
                                            const std::string& gang) {
  std::vector<std::string_view> pooled{pod.namespace_, gang};
  for (const auto& [resource, amount] : effective) pooled.push_back(resource);
  pooled.push_back(pod.scheduler_name);
  pooled.push_back(pod.priority_class_name);
  auto pairs = [&](const Labels& labels, bool (*keep)(std::string_view)) {
    for (const auto& [key, value] : labels) {
      if (keep != nullptr && !keep(key)) continue;
      pooled.push_back(key);
      pooled.push_back(value);
    }
  };
  pairs(pod.labels, nullptr);
  pairs(pod.annotations, &KeptAnnotation);
  pairs(pod.node_selector, nullptr);
  for (const OwnerReference& owner : pod.owner_references) {
    pooled.insert(pooled.end(), {owner.api_version, owner.kind, owner.name, owner.uid});
  }
  return pooled;
}

void WritePairs(Writer& w, const Labels& labels, bool (*keep)(std::string_view)) {
  size_t count = 0;
  for (const auto& [key, value] : labels) count += keep == nullptr || keep(key) ? 1 : 0;
  w.Number(count);
  for (size_t i = 0; i < count; ++i) {
    w.Pooled();
    w.Pooled();
  }
}

// A reader past the namespace, name, gang key and UID: at the request.
Reader AtRequest(const char* data, size_t size) {
  Reader r(data, size);
  r.Number();
  r.String();
  r.Number();
  r.String();
  return r;
}

// A reader past the request: at the scheduler name.
Reader AfterRequest(const char* data, size_t size) {
  Reader r = AtRequest(data, size);
  for (uint64_t n = r.Number(); n > 0; --n) {
    r.Number();
    r.Amount();
  }
  return r;
}

// The pooled ids of a block, in its order.
std::vector<StringPool::Id> PooledIds(const char* data, size_t size) {
  std::vector<StringPool::Id> ids;
  auto id = [&](Reader& r) { ids.push_back(static_cast<StringPool::Id>(r.Number())); };
  Reader r(data, size);
  id(r);       // namespace
  r.String();  // name
  id(r);       // gang key
  r.String();  // UID
  for (uint64_t n = r.Number(); n > 0; --n) {
    id(r);
    r.Amount();
  }
  id(r);
  id(r);
  for (int section = 0; section < 3; ++section) {
    for (uint64_t n = r.Number(); n > 0; --n) {
      id(r);
      id(r);
    }
  }
  for (uint64_t n = r.Number(); n > 0; --n) {
    for (int i = 0; i < 4; ++i) id(r);
    r.Number();
  }
  return ids;
}

}  // namespace

KeptPod::Block::Block(std::string_view bytes)
    : data_(std::make_unique_for_overwrite<char[]>(bytes.size())),
      size_(static_cast<uint32_t>(bytes.size())) {
  std::memcpy(data_.get(), bytes.data(), bytes.size());
}

KeptPod::Block& KeptPod::Block::operator=(Block&& other) noexcept {
  if (this != &other) {
    Release();
    data_ = std::move(other.data_);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

void KeptPod::Block::Release() {
  if (data_ == nullptr) return;
  PodStrings().Release(PooledIds(data_.get(), size_));
  data_.reset();
  size_ = 0;
}

std::optional<int64_t> LastCheckpointMs(const Labels& annotations) {
  auto it = annotations.find(kLastCheckpointAnnotation);
  if (it == annotations.end()) return std::nullopt;
  common::Result<int64_t> micros = common::ParseRfc3339Micros(it->second);
  if (!micros.ok() || *micros <= 0) return std::nullopt;
  return *micros / 1000;
}

bool KeptAnnotation(std::string_view key) {
  return key == kVolcanoQueueAnnotation ||
         key.starts_with("kueue.x-k8s.io/podset-") ||  // topology requests (issue 37)
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
      checkpoint_ms_(LastCheckpointMs(pod.annotations).value_or(0)),
      placement_(pod.placement) {
  const std::string gang = GangOf(pod);
  const std::vector<std::string_view> pooled = PooledStrings(pod, effective, gang);
  std::vector<StringPool::Id> ids(pooled.size());
  PodStrings().Acquire(pooled, ids.data());
  Writer w(ids.data());
  w.Pooled();  // namespace
  w.String(pod.name);
  w.Pooled();  // gang key
  w.String(pod.uid);
  w.Number(effective.size());
  // Resource names are pooled, not interned: a pod's resources are interned only where a decision
  // reads them by id.
  for (const auto& [resource, amount] : effective) {
    w.Pooled();
    w.Amount(amount);
  }
  w.Pooled();  // scheduler name
  w.Pooled();  // priority class name
  WritePairs(w, pod.labels, nullptr);
  WritePairs(w, pod.annotations, &KeptAnnotation);
  WritePairs(w, pod.node_selector, nullptr);
  w.Number(pod.owner_references.size());
  for (const OwnerReference& owner : pod.owner_references) {
    for (int i = 0; i < 4; ++i) w.Pooled();  // API version, kind, name, UID
    w.Number(owner.controller ? 1 : 0);
  }
  block_ = Block(w.out());
}

Pod KeptPod::ToPod() const {
  Pod pod;
  pod.pod_requests = request();
  Reader r(block_.data(), block_.size());
  pod.namespace_ = r.Pooled();
  pod.name = r.String();
  r.Number();  // the gang key: GangOf gives it back
  pod.uid = r.String();
  r = AfterRequest(block_.data(), block_.size());
  pod.scheduler_name = r.Pooled();
  pod.priority_class_name = r.Pooled();
  r.Pairs(&pod.labels);
  r.Pairs(&pod.annotations);
  r.Pairs(&pod.node_selector);
  pod.owner_references.resize(r.Number());
  for (OwnerReference& owner : pod.owner_references) {
    owner.api_version = r.Pooled();
    owner.kind = r.Pooled();
    owner.name = r.Pooled();
    owner.uid = r.Pooled();
    owner.controller = r.Number() != 0;
  }
  pod.creation_unix_ms = created_ms_;
  if (has_deletion_) pod.deletion_unix_ms = deletion_ms_;
  if (has_start_) pod.start_unix_ms = start_ms_;
  if (bound()) pod.node_name = NodeNames().Name(node_);
  pod.placement = placement_;
  if (has_priority_) pod.priority = priority_;
  pod.phase = phase_;
  return pod;
}

std::string_view KeptPod::ns() const { return Reader(block_.data(), block_.size()).Pooled(); }

std::string_view KeptPod::name() const {
  Reader r(block_.data(), block_.size());
  r.Number();
  return r.String();
}

std::string_view KeptPod::gang() const {
  Reader r(block_.data(), block_.size());
  r.Number();
  r.String();
  return r.Pooled();
}

std::string_view KeptPod::uid() const {
  Reader r(block_.data(), block_.size());
  r.Number();
  r.String();
  r.Number();
  return r.String();
}

std::string_view KeptPod::scheduler_name() const {
  return AfterRequest(block_.data(), block_.size()).Pooled();
}

std::string KeptPod::key() const {
  Reader r(block_.data(), block_.size());
  std::string key(r.Pooled());
  key += '/';
  key += r.String();
  return key;
}

const std::string& KeptPod::node_name() const {
  static const std::string kNone;
  return bound() ? NodeNames().Name(node_) : kNone;
}

ResourceList KeptPod::request() const {
  Reader r = AtRequest(block_.data(), block_.size());
  ResourceList request;
  for (uint64_t n = r.Number(); n > 0; --n) {
    const std::string_view resource = r.Pooled();
    request.Set(resource, r.Amount());
  }
  return request;
}

IdAmounts KeptPod::request_ids() const {
  Reader r = AtRequest(block_.data(), block_.size());
  IdAmounts request(r.Number());
  for (auto& [resource, amount] : request) {
    resource = ResourceNames().Intern(r.Pooled());
    amount = r.Amount();
  }
  return request;
}

}  // namespace taskgov::scheduler::model
