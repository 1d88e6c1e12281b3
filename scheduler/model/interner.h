#pragma once

// Interner: maps names (teams, flavors, resources, nodes) to small dense ids that stay stable for
// the life of the process, so hot structures (ledger cells, reservations) hold 4-byte ids instead
// of strings and survive policy reloads.
//
// Thread-safety: Intern() and Find() take a shared_mutex (exclusive only when a new name is
// added — rare after warm-up). Name(id) is lock-free: names live in fixed-size chunks that are
// never moved or freed; a chunk pointer is published with a release store and read with an
// acquire load, and an id is only handed out after its name is written.

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>

namespace taskgov::scheduler {

using NameId = uint32_t;

class Interner {
 public:
  Interner();
  ~Interner();
  Interner(const Interner&) = delete;
  Interner& operator=(const Interner&) = delete;

  // The id of `name`, adding it if new. Aborts if more than kMaxNames names are interned (a bug:
  // names come from bounded sets).
  [[nodiscard]] NameId Intern(std::string_view name);
  // The id of `name` if it was interned.
  [[nodiscard]] std::optional<NameId> Find(std::string_view name) const;
  // The name of an id returned by Intern.
  [[nodiscard]] const std::string& Name(NameId id) const;
  [[nodiscard]] size_t size() const { return size_.load(std::memory_order_acquire); }

  static constexpr size_t kChunkSize = 4096;
  static constexpr size_t kMaxChunks = 1024;
  static constexpr size_t kMaxNames = kChunkSize * kMaxChunks;

 private:
  struct Chunk {
    std::array<std::string, kChunkSize> names;
  };
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };

  mutable std::shared_mutex mu_;
  std::unordered_map<std::string, NameId, Hash, std::equal_to<>> ids_;  // guarded by mu_
  std::array<std::atomic<Chunk*>, kMaxChunks> chunks_;
  std::atomic<size_t> size_{0};
};

// The process-wide interners.
Interner& ResourceNames();
Interner& TeamNames();
Interner& FlavorNames();
Interner& NodeNames();

}  // namespace taskgov::scheduler
