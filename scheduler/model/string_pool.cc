#include "scheduler/model/string_pool.h"

#include <cstdlib>
#include <iostream>

namespace taskgov::scheduler::model {

StringPool::StringPool() {
  for (auto& chunk : chunks_) chunk.store(nullptr, std::memory_order_relaxed);
  chunks_[0].store(new Chunk, std::memory_order_release);  // id 0, "", lives there
}

StringPool::~StringPool() {
  for (auto& chunk : chunks_) delete chunk.load(std::memory_order_relaxed);
}

StringPool::Slot& StringPool::SlotOf(Id id) const {
  // Acquire: pairs with the release store that published the chunk.
  return (*chunks_[id / kChunkSize].load(std::memory_order_acquire))[id % kChunkSize];
}

std::string_view StringPool::View(Id id) const { return SlotOf(id).text; }

StringPool::Id StringPool::AddLocked(std::string_view s) {
  Id id;
  if (!free_.empty()) {
    id = free_.back();
    free_.pop_back();
  } else {
    if (next_ >= kMaxStrings) {
      std::cerr << "StringPool: more than " << kMaxStrings << " distinct strings held\n";
      std::abort();
    }
    id = next_++;
    if (id % kChunkSize == 0) chunks_[id / kChunkSize].store(new Chunk, std::memory_order_release);
  }
  Slot& slot = SlotOf(id);
  slot.text.assign(s);
  ids_.emplace(slot.text, id);
  return id;
}

void StringPool::Acquire(std::span<const std::string_view> strings, Id* ids) {
  std::lock_guard lock(mu_);
  ++locks_;
  for (std::string_view s : strings) {
    Id id = 0;
    if (!s.empty()) {
      auto found = ids_.find(s);
      id = found != ids_.end() ? found->second : AddLocked(s);
      // Relaxed: the mutex orders it with the Release that would free the slot.
      SlotOf(id).holders.fetch_add(1, std::memory_order_relaxed);
    }
    *ids++ = id;
  }
}

void StringPool::AddRef(Id id) {
  if (id == 0) return;
  // Relaxed: the caller holds the string, so the count cannot reach zero meanwhile (as a
  // shared_ptr copy).
  SlotOf(id).holders.fetch_add(1, std::memory_order_relaxed);
}

void StringPool::Release(std::span<const Id> ids) {
  for (Id id : ids) {
    if (id == 0) continue;
    // acq_rel: the last holder's free comes after every other holder's use of the text.
    if (SlotOf(id).holders.fetch_sub(1, std::memory_order_acq_rel) != 1) continue;
    std::lock_guard lock(mu_);
    ++locks_;
    FreeIfUnheldLocked(id);
  }
}

void StringPool::FreeIfUnheldLocked(Id id) {
  Slot& slot = SlotOf(id);
  // Acquire: pairs with the release of whichever decrement brought it to zero. Taken again by an
  // Acquire since (under this mutex), or freed already by another last holder (its text is then
  // "", which no slot in use holds): nothing to do.
  if (slot.holders.load(std::memory_order_acquire) != 0 || slot.text.empty()) return;
  ids_.erase(std::string_view(slot.text));
  std::string().swap(slot.text);  // its heap goes now, not when the slot is reused
  free_.push_back(id);
}

size_t StringPool::size() const {
  std::lock_guard lock(mu_);
  return ids_.size() + 1;
}

uint64_t StringPool::locks() const {
  std::lock_guard lock(mu_);
  return locks_;
}

StringPool& PodStrings() {
  static StringPool* pool = new StringPool;  // never destroyed: pods may outlive statics
  return *pool;
}

}  // namespace taskgov::scheduler::model
