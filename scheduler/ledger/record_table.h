#pragma once

// RecordTable<V>: values keyed by a string (a pod UID, a gang key), for a table that threads
// working on different keys must be able to read and change without waiting for each other — the
// QuotaBook's reservations and gang holds, which every filter call changes.
//
// Structure. An open-addressing array of atomic pointers to records, probed linearly from the
// key's hash. A record is allocated with its key and published by one compare-exchange of an
// empty slot; from then on it stays in that slot, at that address, until Compact. A key's
// record is therefore found before the first empty slot of its probe sequence, with no lock. A
// value taken out leaves its record empty (`present` false), and the same key reuses it.
//
// Claims. Each record carries a claim, held by the one thread that reads or changes its value
// (Claim, RAII): a compare-exchange, spinning then yielding only while another thread holds the
// same key's claim. It is the table's only mutual exclusion, and it is per key: threads working
// on different keys never wait for each other.
//
// Quiescence. Compact moves pointers to a new array and frees empty records: it must run while
// no thread can be inside any other method of the table or hold a Claim — the QuotaBook runs it
// inside Ledger::Quiesce, and every other use inside a Ledger::Session. Between compactions the
// array only fills: Acquire refuses to create a record (returns an empty Claim) once that would
// pass three quarters of the slots; Compact is due from five eighths (NeedsCompaction), and sizes
// the array to at least twice the records present plus `headroom`.
//
// Thread-safety: Acquire, Find, ForEach, NeedsCompaction and the counters from any thread at
// once; Compact and destruction alone (see Quiescence).

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string_view>
#include <thread>
#include <utility>

#include "scheduler/common/name_hash.h"
#include "scheduler/ledger/uid_key.h"

namespace taskgov::scheduler::ledger {

template <typename V>
class RecordTable {
 public:
  struct Record {
    Record(std::string_view k, size_t h) : key(k), hash(h) {}
    const UidKey key;
    const size_t hash;  // of key: most records a probe passes are told apart by it alone
    std::atomic<bool> claimed{false};
    bool present = false;  // guarded by the claim, as is value
    V value{};
  };

  // A held claim on one record: the value may be read and changed until it is destroyed.
  class Claim {
   public:
    Claim() = default;
    Claim(const Claim&) = delete;
    Claim& operator=(const Claim&) = delete;
    Claim(Claim&& o) noexcept : record_(std::exchange(o.record_, nullptr)) {}
    Claim& operator=(Claim&& o) noexcept {
      if (this != &o) {
        Release();
        record_ = std::exchange(o.record_, nullptr);
      }
      return *this;
    }
    ~Claim() { Release(); }

    explicit operator bool() const { return record_ != nullptr; }
    Record* operator->() const { return record_; }
    Record& operator*() const { return *record_; }

   private:
    friend class RecordTable;
    explicit Claim(Record* record) : record_(record) {}
    void Release() {
      // release: what the holder wrote happens before the next claim of this record.
      if (record_ != nullptr) record_->claimed.store(false, std::memory_order_release);
      record_ = nullptr;
    }
    Record* record_ = nullptr;
  };

  // `headroom`: records the array has room for beyond those present (see SizeFor).
  explicit RecordTable(size_t headroom = 1024) : headroom_(headroom) {
    array_.store(new Array(SizeFor(0)), std::memory_order_relaxed);
  }
  RecordTable(const RecordTable&) = delete;
  RecordTable& operator=(const RecordTable&) = delete;
  ~RecordTable() { Free(array_.load(std::memory_order_relaxed), /*records=*/true); }

  // Claims `key`'s record, creating an empty one when it has none; an empty Claim when the
  // array is full (Compact is due). `waits` (if given) counts, before it waits, a claim another
  // thread holds.
  Claim Acquire(std::string_view key, std::atomic<uint64_t>* waits = nullptr) {
    return Acquire(key, Hash(key), waits);
  }
  // The same, with `hash` == Hash(key) computed by the caller.
  Claim Acquire(std::string_view key, size_t hash, std::atomic<uint64_t>* waits = nullptr) {
    Array* a = array_.load(std::memory_order_acquire);
    Record* mine = nullptr;  // allocated once, published or freed
    for (size_t i = hash & a->mask;; i = (i + 1) & a->mask) {
      Record* r = a->slots[i].load(std::memory_order_acquire);
      if (r == nullptr) {
        if (mine == nullptr) {
          // Three quarters full: refuse rather than let probe sequences grow without bound.
          if (occupied_.fetch_add(1, std::memory_order_relaxed) + 1 > a->limit) {
            occupied_.fetch_sub(1, std::memory_order_relaxed);
            return Claim();
          }
          mine = new Record(key, hash);
          mine->claimed.store(true, std::memory_order_relaxed);  // claimed before it is seen
        }
        // release: the key (and the claim) are written before the record can be found.
        if (a->slots[i].compare_exchange_strong(r, mine, std::memory_order_release,
                                                std::memory_order_acquire)) {
          return Claim(mine);
        }
        // Another record took the slot first: it may be this key's.
      }
      if (r->hash == hash && r->key.view() == key) {
        if (mine != nullptr) {
          delete mine;
          occupied_.fetch_sub(1, std::memory_order_relaxed);
        }
        Lock(r, waits);
        return Claim(r);
      }
    }
  }

  // Claims `key`'s record if it has one (its value present or not); an empty Claim otherwise.
  Claim Find(std::string_view key, std::atomic<uint64_t>* waits = nullptr) const {
    return Find(key, Hash(key), waits);
  }
  // The same, with `hash` == Hash(key) computed by the caller.
  Claim Find(std::string_view key, size_t hash, std::atomic<uint64_t>* waits = nullptr) const {
    Array* a = array_.load(std::memory_order_acquire);
    for (size_t i = hash & a->mask;; i = (i + 1) & a->mask) {
      Record* r = a->slots[i].load(std::memory_order_acquire);
      if (r == nullptr) return Claim();
      if (r->hash == hash && r->key.view() == key) {
        Lock(r, waits);
        return Claim(r);
      }
    }
  }

  // Calls `fn(record)` for every record whose value is present, each claimed while `fn` runs (no
  // other call into the table from `fn`).
  void ForEach(const std::function<void(Record&)>& fn) const {
    Array* a = array_.load(std::memory_order_acquire);
    for (size_t i = 0; i <= a->mask; ++i) {
      Record* r = a->slots[i].load(std::memory_order_acquire);
      if (r == nullptr) continue;
      Lock(r, nullptr);
      Claim claim(r);
      if (r->present) fn(*r);
    }
  }

  // Quiescent only (see the header): every record, present or not, without claims.
  template <typename F>
  void ForEachQuiescent(F&& fn) {
    Array* a = array_.load(std::memory_order_relaxed);
    for (size_t i = 0; i <= a->mask; ++i) {
      if (Record* r = a->slots[i].load(std::memory_order_relaxed)) fn(*r);
    }
  }

  // Whether Compact is due: five eighths of the slots hold records (present or empty), an eighth
  // before Acquire would refuse.
  [[nodiscard]] bool NeedsCompaction() const {
    const Array* a = array_.load(std::memory_order_acquire);
    return occupied_.load(std::memory_order_relaxed) > (a->mask + 1) / 8 * 5;
  }

  // Quiescent only (see the header): frees the empty records and moves the others to an array
  // sized for them. Returns the records kept.
  size_t Compact() {
    Array* old = array_.load(std::memory_order_relaxed);
    size_t present = 0;
    for (size_t i = 0; i <= old->mask; ++i) {
      Record* r = old->slots[i].load(std::memory_order_relaxed);
      if (r != nullptr && r->present) ++present;
    }
    auto* next = new Array(SizeFor(present));
    for (size_t i = 0; i <= old->mask; ++i) {
      Record* r = old->slots[i].load(std::memory_order_relaxed);
      if (r == nullptr) continue;
      if (!r->present) {
        delete r;
        continue;
      }
      size_t j = r->hash & next->mask;
      while (next->slots[j].load(std::memory_order_relaxed) != nullptr) j = (j + 1) & next->mask;
      next->slots[j].store(r, std::memory_order_relaxed);
    }
    occupied_.store(present, std::memory_order_relaxed);
    // release: the filled array happens before any later acquire load of it (the caller's
    // quiescence already orders it; this keeps the table correct on its own).
    array_.store(next, std::memory_order_release);
    Free(old, /*records=*/false);
    return present;
  }

  // The hash a probe starts from (its low bits pick the slot).
  static size_t Hash(std::string_view key) { return common::NameHash(key); }

  // Records in the array (present or not) and its slots.
  [[nodiscard]] size_t occupied() const { return occupied_.load(std::memory_order_relaxed); }
  [[nodiscard]] size_t capacity() const { return array_.load(std::memory_order_acquire)->mask + 1; }

 private:
  struct Array {
    explicit Array(size_t n) : mask(n - 1), limit(n / 4 * 3), slots(new std::atomic<Record*>[n]) {
      for (size_t i = 0; i < n; ++i) slots[i].store(nullptr, std::memory_order_relaxed);
    }
    size_t mask;
    size_t limit;  // records the array may hold: three quarters of its slots
    std::unique_ptr<std::atomic<Record*>[]> slots;
  };

  // Slots for `present` records: the smallest power of two (at least 64) no less than twice
  // `present` + headroom, so that compaction is due again only after a quarter of the slots
  // filled.
  size_t SizeFor(size_t present) const {
    size_t n = 64;
    while (n < 2 * (present + headroom_)) n *= 2;
    return n;
  }

  static void Lock(Record* r, std::atomic<uint64_t>* waits) {
    // acquire: sees what the previous holder wrote.
    if (!r->claimed.exchange(true, std::memory_order_acquire)) return;
    if (waits != nullptr) waits->fetch_add(1, std::memory_order_relaxed);  // a statistic
    for (int spins = 0; r->claimed.exchange(true, std::memory_order_acquire); ++spins) {
      if (spins >= 64) std::this_thread::yield();
    }
  }

  static void Free(Array* a, bool records) {
    if (records) {
      for (size_t i = 0; i <= a->mask; ++i) delete a->slots[i].load(std::memory_order_relaxed);
    }
    delete a;
  }

  const size_t headroom_;
  std::atomic<Array*> array_;
  std::atomic<size_t> occupied_{0};  // records in the array; relaxed: a bound, not a publication
};

}  // namespace taskgov::scheduler::ledger
