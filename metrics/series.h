#pragma once

// The metric cells behind metrics::Metrics and the map that finds them by label values.
//
//  * Counter, Histogram: lock-free cells. Writers use relaxed atomic read-modify-writes: each
//    counter is independent and nothing is published through them, so no ordering is needed.
//    A scrape reads each counter once; it may see an observation's bucket before its sum (one
//    observation of skew, which Prometheus tolerates), but a histogram's `+Inf` bucket always
//    equals its count, because the count is computed as the sum of the bucket counters it read.
//    (prometheus-cpp 1.0.1's Histogram takes a mutex per Observe, hence these.)
//  * SeriesMap<V, N>: label values (N strings) → one V that lives as long as the map. Get() is
//    lock-free when the series exists (an acquire load of the table and of one or two slots, a
//    hash and N string compares); creating a series takes the map's own mutex (first use only).
//    Entries are never removed: a series that should disappear (a removed team) is hidden at
//    scrape time by its collector, so a pointer a writer holds can never dangle. Memory is
//    bounded by the label combinations ever seen, which callers keep bounded (teams, flavors,
//    fixed reason codes, routes).
//
// Thread-safety: every method may be called from any thread.

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "prometheus/client_metric.h"

namespace taskgov::metrics::internal {

class Counter {
 public:
  // relaxed: an independent event count; readers need no other memory to be visible with it.
  void Add(uint64_t n = 1) { value_.fetch_add(n, std::memory_order_relaxed); }
  [[nodiscard]] uint64_t Value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> value_{0};
};

// Bucket upper bounds, strictly ascending and finite; the +Inf bucket is implicit.
using Buckets = std::vector<double>;

class Histogram {
 public:
  // `bounds` must outlive the histogram (the Metrics object owns one vector per family).
  explicit Histogram(const Buckets& bounds);
  Histogram(const Histogram&) = delete;
  Histogram& operator=(const Histogram&) = delete;

  // Counts `value` in the first bucket whose bound is ≥ value. NaN is ignored.
  void Observe(double value);
  // Cumulative buckets (the last is +Inf), count and sum, as the text format wants them.
  [[nodiscard]] prometheus::ClientMetric::Histogram Snapshot() const;

 private:
  const Buckets& bounds_;
  std::unique_ptr<std::atomic<uint64_t>[]> counts_;  // per bucket, not cumulative; last: +Inf
  std::atomic<double> sum_{0};
};

template <typename V, size_t N>
class SeriesMap {
 public:
  using Key = std::array<std::string_view, N>;
  using Labels = std::array<std::string, N>;

  SeriesMap() { Publish(std::make_unique<Table>(kInitialSlots)); }
  SeriesMap(const SeriesMap&) = delete;
  SeriesMap& operator=(const SeriesMap&) = delete;

  // The series for `key`, created as V(args...) on first use.
  template <typename... Args>
  V& Get(const Key& key, Args&&... args) {
    const size_t hash = Hash(key);
    if (V* found = Probe(*table_.load(std::memory_order_acquire), hash, key)) return *found;
    std::lock_guard<std::mutex> lock(mu_);
    // Another thread may have created it between the probe and the lock.
    if (V* found = Probe(*table_.load(std::memory_order_relaxed), hash, key)) return *found;
    entries_.push_back(std::make_unique<Entry>(hash, key, std::forward<Args>(args)...));
    Entry* entry = entries_.back().get();
    Table* table = table_.load(std::memory_order_relaxed);
    if (entries_.size() * 2 > table->size) {
      // Grow: fill a table twice the size, then publish it (release: its slots happen before
      // any reader's acquire load of the new table). The old one stays allocated for readers
      // still probing it; the tables sum to less than twice the last one.
      auto bigger = std::make_unique<Table>(table->size * 2);
      for (const auto& e : entries_) Place(*bigger, e.get());
      Publish(std::move(bigger));
    } else {
      Place(*table, entry);
    }
    size_.store(entries_.size(), std::memory_order_relaxed);
    return entry->value;
  }

  // The series for `key` if it exists (lock-free), else null.
  [[nodiscard]] V* Find(const Key& key) const {
    return Probe(*table_.load(std::memory_order_acquire), Hash(key), key);
  }

  // Calls fn(const Labels&, const V&) for every series, in creation order. Holds the map's
  // mutex: series creation waits meanwhile (lookups and updates do not).
  template <typename F>
  void ForEach(F&& fn) const {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& e : entries_) fn(e->labels, e->value);
  }

  [[nodiscard]] size_t size() const { return size_.load(std::memory_order_relaxed); }

 private:
  static constexpr size_t kInitialSlots = 16;

  struct Entry {
    template <typename... Args>
    Entry(size_t h, const Key& key, Args&&... args) : hash(h), value(std::forward<Args>(args)...) {
      for (size_t i = 0; i < N; ++i) labels[i] = std::string(key[i]);
    }
    const size_t hash;
    Labels labels;
    V value;
  };
  // Open addressing with linear probing; slots only go from null to an entry.
  struct Table {
    explicit Table(size_t n) : size(n), slots(new std::atomic<Entry*>[n]) {
      for (size_t i = 0; i < n; ++i) slots[i].store(nullptr, std::memory_order_relaxed);
    }
    const size_t size;  // a power of two
    std::unique_ptr<std::atomic<Entry*>[]> slots;
  };

  static size_t Hash(const Key& key) {
    size_t h = 0x9e3779b97f4a7c15ull;
    for (std::string_view part : key) {
      h ^= std::hash<std::string_view>{}(part) + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    }
    return h;
  }

  static V* Probe(const Table& table, size_t hash, const Key& key) {
    for (size_t i = hash & (table.size - 1);; i = (i + 1) & (table.size - 1)) {
      // acquire: pairs with the release store in Place, so the entry's fields are visible.
      Entry* e = table.slots[i].load(std::memory_order_acquire);
      if (e == nullptr) return nullptr;  // tables are at most half full: a null slot ends it
      if (e->hash != hash) continue;
      bool same = true;
      for (size_t j = 0; j < N && same; ++j) same = e->labels[j] == key[j];
      if (same) return &e->value;
    }
  }

  static void Place(Table& table, Entry* entry) {
    for (size_t i = entry->hash & (table.size - 1);; i = (i + 1) & (table.size - 1)) {
      if (table.slots[i].load(std::memory_order_relaxed) == nullptr) {
        // release: the entry's construction happens before a reader's acquire load of it.
        table.slots[i].store(entry, std::memory_order_release);
        return;
      }
    }
  }

  void Publish(std::unique_ptr<Table> table) {
    // release: the table's slot stores happen before a reader's acquire load of table_.
    table_.store(table.get(), std::memory_order_release);
    tables_.push_back(std::move(table));
  }

  std::atomic<Table*> table_{nullptr};
  std::atomic<size_t> size_{0};
  mutable std::mutex mu_;                        // creation, growth, ForEach
  std::vector<std::unique_ptr<Entry>> entries_;  // guarded by mu_; creation order
  std::vector<std::unique_ptr<Table>> tables_;   // guarded by mu_; current and retired
};

}  // namespace taskgov::metrics::internal
