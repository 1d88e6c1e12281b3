#include "scheduler/model/interner.h"

#include <cstdlib>
#include <iostream>
#include <mutex>

namespace taskgov::scheduler {

Interner::Interner() {
  for (auto& chunk : chunks_) chunk.store(nullptr, std::memory_order_relaxed);
}

Interner::~Interner() {
  for (auto& chunk : chunks_) delete chunk.load(std::memory_order_relaxed);
}

NameId Interner::Intern(std::string_view name) {
  {
    std::shared_lock lock(mu_);
    auto it = ids_.find(name);
    if (it != ids_.end()) return it->second;
  }
  std::unique_lock lock(mu_);
  auto it = ids_.find(name);
  if (it != ids_.end()) return it->second;
  const size_t id = size_.load(std::memory_order_relaxed);
  if (id >= kMaxNames) {
    std::cerr << "interner: more than " << kMaxNames << " names\n";
    std::abort();
  }
  Chunk* chunk = chunks_[id / kChunkSize].load(std::memory_order_relaxed);
  if (chunk == nullptr) {
    chunk = new Chunk();
    // Release: a reader that acquires the chunk pointer sees its constructed strings.
    chunks_[id / kChunkSize].store(chunk, std::memory_order_release);
  }
  chunk->names[id % kChunkSize] = std::string(name);
  ids_.emplace(std::string(name), static_cast<NameId>(id));
  // Release: Name(id) for any id < size happens after the name was written.
  size_.store(id + 1, std::memory_order_release);
  return static_cast<NameId>(id);
}

std::optional<NameId> Interner::Find(std::string_view name) const {
  std::shared_lock lock(mu_);
  auto it = ids_.find(name);
  if (it == ids_.end()) return std::nullopt;
  return it->second;
}

const std::string& Interner::Name(NameId id) const {
  // Acquire pairs with the release store in Intern(): ids are only handed out after that store.
  return chunks_[id / kChunkSize].load(std::memory_order_acquire)->names[id % kChunkSize];
}

Interner& ResourceNames() {
  static Interner* interner = new Interner();
  return *interner;
}
Interner& TeamNames() {
  static Interner* interner = new Interner();
  return *interner;
}
Interner& FlavorNames() {
  static Interner* interner = new Interner();
  return *interner;
}
Interner& NodeNames() {
  static Interner* interner = new Interner();
  return *interner;
}

}  // namespace taskgov::scheduler
