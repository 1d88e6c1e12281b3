#pragma once

// KeptPod: what the state keeps of a pod it tracks — everything taskgov reads, nothing else —
// packed into one allocation. The state holds one per pod (100,000 of them at scale): as a
// model::Pod that was ~1.2 KB a pod (a 600-byte object, a node per label, a heap string per long
// name); packed, it is its unique strings (name, UID) and 1–3-byte ids of the strings pods
// repeat (namespace, labels, gang key, owners, resource names: PodStrings, string_pool.h) in one
// block, plus ~90 bytes.
//
// What is kept: namespace, name, labels, the annotations taskgov reads (team resolution and
// gangs: pods often carry kilobytes of others, such as kubectl's last-applied-configuration),
// timestamps, scheduler name, node (interned in NodeNames), node selector, placement (shared,
// as every copy of the pod shares it), priority and its class name, phase, owner references,
// and instead of containers, init containers, overhead and pod-level resources, pod-level
// requests equal to the pod's effective request (so EffectiveRequest of ToPod() is unchanged).
// Not kept: resourceVersion.
// Also packed: its gang key (GangOf), so that walks over every pod read it without unpacking.
//
// Immutable once built; a value type (move-only). Thread-compatible: the state and its workload
// table share each pod's (std::shared_ptr<const KeptPod>) and read it under different locks.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "scheduler/model/interner.h"
#include "scheduler/model/objects.h"

namespace taskgov::scheduler::model {

// Where a pod (or its job) says when its training last saved a checkpoint (RFC 3339): victims
// that lose the least work since then go first (issue 35).
inline constexpr char kLastCheckpointAnnotation[] = "taskgov.io/last-checkpoint";

// The time an annotation map's kLastCheckpointAnnotation names, if valid (Unix ms).
[[nodiscard]] std::optional<int64_t> LastCheckpointMs(const Labels& annotations);

// Whether the state keeps a pod's annotation `key` (team resolution, gangs and topology requests
// read it).
[[nodiscard]] bool KeptAnnotation(std::string_view key);

class KeptPod {
 public:
  KeptPod() = default;
  // The part of `pod` taskgov keeps; `effective` is its EffectiveRequest.
  KeptPod(const Pod& pod, const ResourceList& effective);
  KeptPod(KeptPod&&) noexcept = default;
  KeptPod& operator=(KeptPod&&) noexcept = default;
  KeptPod(const KeptPod&) = delete;
  KeptPod& operator=(const KeptPod&) = delete;

  // The kept part as a Pod (no resourceVersion).
  [[nodiscard]] Pod ToPod() const;

  [[nodiscard]] std::string_view ns() const;
  [[nodiscard]] std::string_view name() const;
  [[nodiscard]] std::string_view uid() const;
  [[nodiscard]] std::string_view scheduler_name() const;
  // "namespace/name"
  [[nodiscard]] std::string key() const;
  // Its node in NodeNames(); only when bound().
  [[nodiscard]] NameId node() const { return node_; }
  [[nodiscard]] const std::string& node_name() const;
  [[nodiscard]] bool bound() const { return node_ != kNoNode; }
  [[nodiscard]] bool terminal() const {
    return phase_ == PodPhase::kSucceeded || phase_ == PodPhase::kFailed;
  }
  [[nodiscard]] bool terminating() const { return has_deletion_; }
  [[nodiscard]] int64_t creation_unix_ms() const { return created_ms_; }
  [[nodiscard]] std::optional<int64_t> start_unix_ms() const {
    return has_start_ ? std::optional<int64_t>(start_ms_) : std::nullopt;
  }
  // Its annotation taskgov.io/last-checkpoint (kLastCheckpointAnnotation), the last time its
  // training saved a checkpoint, when it holds a valid RFC 3339 time (kept parsed, not as text:
  // its value changes with every checkpoint). Not given back by ToPod.
  [[nodiscard]] std::optional<int64_t> checkpoint_unix_ms() const {
    return checkpoint_ms_ != 0 ? std::optional<int64_t>(checkpoint_ms_) : std::nullopt;
  }
  // Its effective request.
  [[nodiscard]] ResourceList request() const;
  // The same by resource id (ToIdAmounts).
  [[nodiscard]] IdAmounts request_ids() const;
  // GangOf(pod): its gang's key, "" for a lone pod.
  [[nodiscard]] std::string_view gang() const;

  // Bytes this object holds outside itself (the packed block; pooled strings not counted).
  [[nodiscard]] size_t heap_bytes() const { return block_.size(); }

  static constexpr NameId kNoNode = 0xffffffff;

 private:
  // The packed bytes (kept_pod.cc: Writer); it holds its pooled strings (PodStrings) until it goes.
  class Block {
   public:
    Block() = default;
    explicit Block(std::string_view bytes);
    Block(Block&& other) noexcept
        : data_(std::move(other.data_)), size_(std::exchange(other.size_, 0)) {}
    Block& operator=(Block&& other) noexcept;
    ~Block() { Release(); }
    [[nodiscard]] const char* data() const { return data_.get(); }
    [[nodiscard]] uint32_t size() const { return size_; }

   private:
    void Release();
    std::unique_ptr<char[]> data_;
    uint32_t size_ = 0;
  };

  Block block_;
  NameId node_ = kNoNode;
  PodPhase phase_ = PodPhase::kPending;
  bool has_deletion_ = false;
  bool has_start_ = false;
  bool has_priority_ = false;
  int32_t priority_ = 0;
  int64_t created_ms_ = 0;
  int64_t deletion_ms_ = 0;
  int64_t start_ms_ = 0;
  int64_t checkpoint_ms_ = 0;
  std::shared_ptr<const PodPlacementSpec> placement_;
};

}  // namespace taskgov::scheduler::model
