#include "scheduler/model/interner.h"

#include <cstdlib>
#include <iostream>

#include "scheduler/common/name_hash.h"

namespace taskgov::scheduler::model {
namespace {

constexpr size_t kInitialCapacity = 64;

uint32_t HashOf(std::string_view name) {
  const uint64_t h = common::NameHash(name);
  return static_cast<uint32_t>(h ^ (h >> 32));
}

uint64_t SlotOf(uint32_t hash, NameId id) { return (uint64_t{hash} << 32) | (uint64_t{id} + 1); }

// Stores `slot` in the first empty place of its probe sequence. Only for a table that only the
// caller (holding the writer mutex) writes; `order` is how the store is published.
void Place(std::atomic<uint64_t>* slots, size_t mask, uint64_t slot, std::memory_order order) {
  size_t i = static_cast<uint32_t>(slot >> 32) & mask;
  // Relaxed: writers hold the mutex, which orders them; this load only finds a free place.
  while (slots[i].load(std::memory_order_relaxed) != 0) i = (i + 1) & mask;
  slots[i].store(slot, order);
}

}  // namespace

Interner::Table::Table(size_t capacity)
    : mask(capacity - 1), slots(std::make_unique<std::atomic<uint64_t>[]>(capacity)) {
  for (size_t i = 0; i < capacity; ++i) slots[i].store(0, std::memory_order_relaxed);
}

Interner::Interner() {
  for (auto& chunk : chunks_) chunk.store(nullptr, std::memory_order_relaxed);
  tables_.push_back(std::make_unique<Table>(kInitialCapacity));
  // Release: whoever gets this Interner through a synchronised hand-over sees the empty table;
  // the store is the same publication Grow() makes.
  table_.store(tables_.back().get(), std::memory_order_release);
}

Interner::~Interner() {
  for (auto& chunk : chunks_) delete chunk.load(std::memory_order_relaxed);
}

std::optional<NameId> Interner::Probe(const Table& table, std::string_view name,
                                      uint32_t hash) const {
  for (size_t i = hash & table.mask;; i = (i + 1) & table.mask) {
    // Acquire: pairs with the release store in Add(); the name of a slot seen here is written.
    const uint64_t slot = table.slots[i].load(std::memory_order_acquire);
    if (slot == 0) return std::nullopt;
    if (static_cast<uint32_t>(slot >> 32) != hash) continue;
    const NameId id = static_cast<NameId>(slot & 0xffffffffu) - 1;
    if (Name(id) == name) return id;
  }
}

NameId Interner::Intern(std::string_view name) {
  const uint32_t hash = HashOf(name);
  // Acquire: pairs with the release store that published the table (its slots are visible).
  if (std::optional<NameId> id = Probe(*table_.load(std::memory_order_acquire), name, hash)) {
    return *id;
  }
  std::lock_guard<std::mutex> lock(mu_);
  // Relaxed: a statistic; nothing is ordered by it.
  locked_interns_.fetch_add(1, std::memory_order_relaxed);
  // Relaxed: only writers store table_, and they hold mu_, which orders this load after them.
  if (std::optional<NameId> id = Probe(*table_.load(std::memory_order_relaxed), name, hash)) {
    return *id;  // another thread added it since the lock-free probe
  }
  return Add(name, hash);
}

NameId Interner::Add(std::string_view name, uint32_t hash) {
  // Relaxed: size_ is only stored under mu_, which this thread holds.
  const size_t id = size_.load(std::memory_order_relaxed);
  if (id >= kMaxNames) {
    std::cerr << "interner: more than " << kMaxNames << " names\n";
    std::abort();
  }
  // Relaxed: chunk pointers are only stored under mu_.
  Chunk* chunk = chunks_[id / kChunkSize].load(std::memory_order_relaxed);
  if (chunk == nullptr) {
    chunk = new Chunk();
    // Release: a reader that acquires the chunk pointer sees its constructed strings.
    chunks_[id / kChunkSize].store(chunk, std::memory_order_release);
  }
  chunk->names[id % kChunkSize].assign(name);
  // Relaxed: table_ is only stored under mu_.
  if (2 * (id + 1) > table_.load(std::memory_order_relaxed)->mask + 1) Grow();
  const Table* table = table_.load(std::memory_order_relaxed);
  // Release: a reader that acquires this slot sees the name written above.
  Place(table->slots.get(), table->mask, SlotOf(hash, static_cast<NameId>(id)),
        std::memory_order_release);
  // Release: size() readers see every name below it written.
  size_.store(id + 1, std::memory_order_release);
  return static_cast<NameId>(id);
}

void Interner::Grow() {
  const Table& old = *table_.load(std::memory_order_relaxed);  // relaxed: under mu_
  auto bigger = std::make_unique<Table>(2 * (old.mask + 1));
  for (size_t i = 0; i <= old.mask; ++i) {
    // Relaxed: under mu_, after every store to `old` (all made under mu_).
    const uint64_t slot = old.slots[i].load(std::memory_order_relaxed);
    // Relaxed: `bigger` is unpublished; the release store of table_ below publishes it whole.
    if (slot != 0) Place(bigger->slots.get(), bigger->mask, slot, std::memory_order_relaxed);
  }
  const Table* published = bigger.get();
  tables_.push_back(std::move(bigger));  // `old` stays alive for readers still probing it
  // Release: a reader that acquires the new table sees every slot copied into it, and (through
  // the mutex that ordered the earlier writers before this one) every name those slots name.
  table_.store(published, std::memory_order_release);
}

std::optional<NameId> Interner::Find(std::string_view name) const {
  // Acquire: pairs with the release store that published the table (its slots are visible).
  return Probe(*table_.load(std::memory_order_acquire), name, HashOf(name));
}

const std::string& Interner::Name(NameId id) const {
  // Acquire pairs with the release store in Add(): ids are only handed out after that store.
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
Interner& PriorityClassNames() {
  static Interner* interner = [] {
    auto* names = new Interner();
    (void)names->Intern("");  // id 0: no class, so a default id names one
    return names;
  }();
  return *interner;
}

}  // namespace taskgov::scheduler::model
