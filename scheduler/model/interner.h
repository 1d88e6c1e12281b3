#pragma once

// Interner: maps names (teams, flavors, resources, nodes) to small dense ids that stay stable for
// the life of the process, so hot structures (ledger cells, reservations) hold 4-byte ids instead
// of strings and survive policy reloads.
//
// Thread-safety: every method is thread-safe. Find(), Name() and Intern() of a name that is
// already interned take no lock and never wait; only Intern() of a new name locks (a mutex that
// serialises writers; rare after warm-up).
//
// Layout. Names live in fixed-size chunks that are never moved or freed. Lookups go through an
// insert-only open-addressing hash table of atomic 64-bit slots, each 0 (empty) or
// (32-bit hash << 32 | id + 1); linear probing, load factor at most 1/2, so every probe sequence
// ends at an empty slot. A writer, holding the mutex, writes the name into its chunk and then
// publishes the slot with a release store; a reader probes with acquire loads, so a slot it sees
// is a name it can read. When a table is half full the writer builds one twice the size, copies
// the slots, publishes it with a release store and keeps the old one (never written again, still
// valid for readers that loaded it) until the Interner is destroyed: the tables add up to less
// than twice the last one.
//
// Why a miss needs no lock: a name whose Intern() happened before a Find() began is in every table
// that Find() can load (its slot was stored, or copied, before the table pointer it loads was
// published), so the miss is only ever for a name being added concurrently, and reporting it
// absent is correct: that Find() is ordered before the insert. Intern() of a new name re-probes
// under the mutex before inserting, so a name is never added twice.

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace taskgov::scheduler::model {

using NameId = uint32_t;

class Interner {
 public:
  Interner();
  ~Interner();
  Interner(const Interner&) = delete;
  Interner& operator=(const Interner&) = delete;

  // The id of `name`, adding it if new. Ids are dense, in order of first Intern. Aborts if more
  // than kMaxNames names are interned (a bug: names come from bounded sets).
  [[nodiscard]] NameId Intern(std::string_view name);
  // The id of `name` if it was interned. Never locks.
  [[nodiscard]] std::optional<NameId> Find(std::string_view name) const;
  // The name of an id returned by Intern. Never locks.
  [[nodiscard]] const std::string& Name(NameId id) const;
  [[nodiscard]] size_t size() const { return size_.load(std::memory_order_acquire); }
  // How many times Intern() took the writer mutex (one per new name, plus one per lost race
  // between two threads adding the same name). For tests of the lock-free contract.
  [[nodiscard]] uint64_t locked_interns() const {
    return locked_interns_.load(std::memory_order_relaxed);
  }

  static constexpr size_t kChunkSize = 4096;
  static constexpr size_t kMaxChunks = 1024;
  static constexpr size_t kMaxNames = kChunkSize * kMaxChunks;

 private:
  struct Chunk {
    std::array<std::string, kChunkSize> names;
  };
  struct Table {
    explicit Table(size_t capacity);
    const size_t mask;  // capacity − 1; capacity is a power of two
    std::unique_ptr<std::atomic<uint64_t>[]> slots;
  };

  // The id in the lock-free table `table`, if it holds `name` (whose hash is `hash`).
  std::optional<NameId> Probe(const Table& table, std::string_view name, uint32_t hash) const;
  // Under mu_: adds `name` (not yet interned) and returns its new id.
  NameId Add(std::string_view name, uint32_t hash);
  // Under mu_: replaces the current table by one twice its size.
  void Grow();

  std::array<std::atomic<Chunk*>, kMaxChunks> chunks_;
  std::atomic<const Table*> table_{nullptr};  // the table readers probe
  std::atomic<size_t> size_{0};
  std::atomic<uint64_t> locked_interns_{0};
  std::mutex mu_;                               // serialises writers
  std::vector<std::unique_ptr<Table>> tables_;  // every table ever published; guarded by mu_
};

// The process-wide interners.
Interner& ResourceNames();
Interner& TeamNames();
Interner& FlavorNames();
Interner& NodeNames();
// The priority classes pods rank by (the policy's, and PriorityClass objects the API server
// checks pods against): a bounded set. Id 0 is "" (no class).
Interner& PriorityClassNames();

}  // namespace taskgov::scheduler::model
