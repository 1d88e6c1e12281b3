#pragma once

// TeamTally: per-team counts of the QuotaBook's reservations, kept with every change and read by
// metrics, the admin API and the reconciliation — without a lock, because every filter call
// changes them.
//
// Teams are found by their interned id (dense, small) in a two-level array: chunks of kChunk
// teams, each allocated on first use by one compare-exchange and kept until destruction. A
// team's (flavor, resource) sums are a list that only grows: a cell is pushed by a
// compare-exchange on the list's head. Two threads adding the same cell at once may push it
// twice; readers add the sums of a cell up wherever it appears.
//
// Counters are relaxed atomics: each is a tally read on its own; the reconciliation reads them
// while no reservation can change (Ledger::Verify runs its callbacks with no session open).
//
// Thread-safety: every method from any thread.

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "scheduler/model/interner.h"

namespace taskgov::scheduler::ledger {

class TeamTally {
 public:
  // One (flavor, resource) of a team: what its reservations charge there.
  struct Cell {
    Cell(model::NameId f, model::NameId r) : flavor(f), resource(r) {}
    const model::NameId flavor;
    const model::NameId resource;
    std::atomic<int64_t> amount{0};
    Cell* next = nullptr;  // written before the cell is published, then constant
  };
  struct Counts {
    std::atomic<int64_t> running{0};  // bound reservations
    std::atomic<int64_t> assumed{0};  // assumed reservations
    std::atomic<int64_t> lone{0};     // reservations of no gang
    std::atomic<int64_t> gangs{0};    // gangs with members holding reservations
    std::atomic<Cell*> cells{nullptr};
  };

  // Team ids from 0 to kMaxTeams − 1 are counted; larger ones are not (At returns null).
  static constexpr size_t kChunk = 256;
  static constexpr size_t kChunks = 16384;
  static constexpr size_t kMaxTeams = kChunk * kChunks;

  TeamTally() = default;
  TeamTally(const TeamTally&) = delete;
  TeamTally& operator=(const TeamTally&) = delete;
  ~TeamTally() {
    for (std::atomic<Chunk*>& c : chunks_) {
      Chunk* chunk = c.load(std::memory_order_relaxed);
      if (chunk == nullptr) continue;
      for (Counts& counts : chunk->teams) {
        for (Cell* cell = counts.cells.load(std::memory_order_relaxed); cell != nullptr;) {
          Cell* next = cell->next;
          delete cell;
          cell = next;
        }
      }
      delete chunk;
    }
  }

  // `team`'s counts, created (zero) on first use; null for an id of kMaxTeams or more.
  Counts* At(model::NameId team) {
    if (team >= kMaxTeams) return nullptr;
    std::atomic<Chunk*>& slot = chunks_[team / kChunk];
    // acquire: a chunk another thread published is seen initialised.
    Chunk* chunk = slot.load(std::memory_order_acquire);
    if (chunk == nullptr) {
      auto fresh = std::make_unique<Chunk>();
      // release: the zeroed chunk before its pointer; acquire on failure: the winner's.
      if (slot.compare_exchange_strong(chunk, fresh.get(), std::memory_order_acq_rel,
                                       std::memory_order_acquire)) {
        chunk = fresh.release();
      }
    }
    return &chunk->teams[team % kChunk];
  }

  // Adds `delta` to `counts`' sum for (flavor, resource).
  static void AddCell(Counts& counts, model::NameId flavor, model::NameId resource, int64_t delta) {
    // acquire: the cells pushed before are seen with their keys.
    Cell* head = counts.cells.load(std::memory_order_acquire);
    for (Cell* c = head; c != nullptr; c = c->next) {
      if (c->flavor == flavor && c->resource == resource) {
        c->amount.fetch_add(delta, std::memory_order_relaxed);
        return;
      }
    }
    auto* cell = new Cell(flavor, resource);
    cell->amount.store(delta, std::memory_order_relaxed);
    cell->next = head;
    // release: the cell's key and amount before it can be found; a failed exchange reloads the
    // head (another cell, maybe this one's twin, went first: both count).
    while (!counts.cells.compare_exchange_weak(cell->next, cell, std::memory_order_release,
                                               std::memory_order_acquire)) {
    }
  }

  // Calls `fn(team, counts)` for every team counted so far.
  template <typename F>
  void ForEach(F&& fn) const {
    for (size_t c = 0; c < kChunks; ++c) {
      const Chunk* chunk = chunks_[c].load(std::memory_order_acquire);
      if (chunk == nullptr) continue;
      for (size_t i = 0; i < kChunk; ++i) {
        fn(static_cast<model::NameId>(c * kChunk + i), chunk->teams[i]);
      }
    }
  }

 private:
  struct Chunk {
    std::array<Counts, kChunk> teams;
  };
  std::array<std::atomic<Chunk*>, kChunks> chunks_{};
};

}  // namespace taskgov::scheduler::ledger
