#pragma once

// StringPool: the strings that many packed pods repeat — namespaces, label keys and values, gang
// keys, owner names, resource names — each kept once, with a count of its holders, and freed
// with its last holder. A KeptPod holds 1–3-byte ids where it held the strings: a training
// worker's ~20 repeated strings were ~300 bytes of each pod's block.
//
// Unlike an Interner (whose names live as long as the process, for the bounded sets it serves),
// the pool forgets: pods name things freely (a label value per pod, a resource a hostile pod
// invents), and what no pod holds any more is gone. Ids of freed strings are reused.
//
// Thread-safety: Acquire locks (one mutex, once per call for all the strings of a pod; pod events
// are its callers). AddRef — a holder taking its string once more, which is how a PooledString
// copies — never locks: a holder keeps the count above zero, so an atomic increment is all it
// takes. Release locks only when a count reaches zero (the string may go): under the mutex, the
// slot is freed if it is still counted at zero and still holds its string — an Acquire may have
// taken it again in between, and another last holder may have freed it first. View never locks: a
// holder's id stays valid, and its slot unchanged, until the holder releases it; the holder got the
// id through Acquire, whose mutex release the holder's own hand-over to other threads extends, or
// through AddRef from such a holder. Id 0 is "", held by none (acquiring or releasing it costs
// nothing).

#include <array>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace taskgov::scheduler::model {

class StringPool {
 public:
  using Id = uint32_t;

  StringPool();
  ~StringPool();
  StringPool(const StringPool&) = delete;
  StringPool& operator=(const StringPool&) = delete;

  // One more holder of each of `strings` (added if new); their ids into `ids` (as many).
  // Aborts past kMaxStrings distinct strings held at once.
  void Acquire(std::span<const std::string_view> strings, Id* ids);
  // One more holder of `id`, which the caller holds. Never locks.
  void AddRef(Id id);
  // One holder fewer of each id (each from an Acquire or AddRef whose holder has not released
  // it). Locks only when some string loses its last holder.
  void Release(std::span<const Id> ids);
  // The string of an id the caller holds. Never locks.
  [[nodiscard]] std::string_view View(Id id) const;
  // Distinct strings held (with "").
  [[nodiscard]] size_t size() const;
  // How many times the mutex was taken for an Acquire or a last Release (tests show what does
  // not lock).
  [[nodiscard]] uint64_t locks() const;

  static constexpr size_t kChunkSize = 4096;
  static constexpr size_t kMaxChunks = 4096;
  static constexpr size_t kMaxStrings = kChunkSize * kMaxChunks;

 private:
  struct Slot {
    std::string text;  // written under mu_, only while no one holds the slot
    std::atomic<uint32_t> holders{0};
  };
  using Chunk = std::array<Slot, kChunkSize>;

  Slot& SlotOf(Id id) const;
  // Under mu_: a slot for `s`, new or reused.
  Id AddLocked(std::string_view s);
  // Under mu_: frees `id`'s slot if no one holds it (and no one freed it before).
  void FreeIfUnheldLocked(Id id);

  std::array<std::atomic<Chunk*>, kMaxChunks> chunks_;
  mutable std::mutex mu_;
  std::unordered_map<std::string_view, Id> ids_;  // views of the slots' text; guarded by mu_
  std::vector<Id> free_;                          // guarded by mu_
  Id next_ = 1;                                   // guarded by mu_
  uint64_t locks_ = 0;                            // guarded by mu_
};

// The pool of the process's packed pods.
StringPool& PodStrings();

// One holder of a string of PodStrings(), as a value of 4 bytes: a copy holds it again (AddRef: no
// lock), a move hands the hold over, and the last holder's end frees it. Only making one from a
// string locks. "" costs nothing (id 0, no lock).
class PooledString {
 public:
  PooledString() = default;
  explicit PooledString(std::string_view s) {
    if (!s.empty()) PodStrings().Acquire({&s, 1}, &id_);
  }
  PooledString(const PooledString& other) : id_(other.id_) {
    if (id_ != 0) PodStrings().AddRef(id_);
  }
  PooledString(PooledString&& other) noexcept : id_(std::exchange(other.id_, 0)) {}
  PooledString& operator=(PooledString other) noexcept {
    std::swap(id_, other.id_);
    return *this;
  }
  PooledString& operator=(std::string_view s) { return *this = PooledString(s); }
  ~PooledString() {
    if (id_ != 0) PodStrings().Release({&id_, 1});
  }
  [[nodiscard]] std::string_view view() const { return PodStrings().View(id_); }
  [[nodiscard]] bool empty() const { return id_ == 0; }

 private:
  StringPool::Id id_ = 0;
};

}  // namespace taskgov::scheduler::model
