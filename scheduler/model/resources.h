#pragma once

// ResourceList: resource name → amount in canonical units (see quantity.h), kept sorted by name
// in a flat vector (pods name a handful of resources). Arithmetic saturates at the int64 limits
// instead of overflowing. Value type; not synchronised.

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "scheduler/model/interner.h"

namespace taskgov::scheduler::model {

// Saturating arithmetic on canonical amounts (inline: the ledger's compare-exchange loops use
// them).
[[nodiscard]] inline int64_t SaturatingAdd(int64_t a, int64_t b) {
  int64_t out;
  if (__builtin_add_overflow(a, b, &out)) {
    return b > 0 ? std::numeric_limits<int64_t>::max() : std::numeric_limits<int64_t>::min();
  }
  return out;
}
// a × n for n ≥ 0, saturating at the int64 maximum (amounts are non-negative).
[[nodiscard]] int64_t SaturatingTimes(int64_t a, int64_t n);
[[nodiscard]] inline int64_t SaturatingSub(int64_t a, int64_t b) {
  int64_t out;
  if (__builtin_sub_overflow(a, b, &out)) {
    return b < 0 ? std::numeric_limits<int64_t>::max() : std::numeric_limits<int64_t>::min();
  }
  return out;
}

struct ResourceAmount {
  std::string name;
  int64_t amount = 0;
  bool operator==(const ResourceAmount&) const = default;
};

class ResourceList {
 public:
  ResourceList() = default;
  ResourceList(std::initializer_list<ResourceAmount> items);

  // 0 when absent.
  [[nodiscard]] int64_t Get(std::string_view name) const;
  [[nodiscard]] bool Has(std::string_view name) const;
  void Set(std::string_view name, int64_t amount);
  // this[r] += other[r] for every r (saturating).
  void Add(const ResourceList& other);
  // this[r] = max(this[r], other[r]) for every r.
  void MaxWith(const ResourceList& other);
  // Every amount times n ≥ 0 (saturating): the request of n pods asking this each.
  [[nodiscard]] ResourceList Times(int64_t n) const;
  // Drops entries whose amount is zero.
  void DropZeros();

  [[nodiscard]] bool empty() const { return items_.empty(); }
  [[nodiscard]] size_t size() const { return items_.size(); }
  [[nodiscard]] auto begin() const { return items_.begin(); }
  [[nodiscard]] auto end() const { return items_.end(); }
  bool operator==(const ResourceList&) const = default;

  // "nvidia.com/gpu: 8, cpu: 1500m, memory: 64Gi" — for messages.
  [[nodiscard]] std::string ToString() const;

 private:
  [[nodiscard]] const ResourceAmount* Find(std::string_view name) const;  // null when absent
  std::vector<ResourceAmount> items_;                                     // sorted by name, unique
};

// Whether `resource` is an accelerator or another device a pod asks for by count (a GPU, a
// Neuron device, a MIG slice, an EFA interface): every resource but cpu, memory,
// ephemeral-storage, pods and hugepages-*.
[[nodiscard]] inline bool IsAccelerator(std::string_view resource) {
  return resource != "cpu" && resource != "memory" && resource != "ephemeral-storage" &&
         resource != "pods" && !resource.starts_with("hugepages-");
}

// A compact resource list keyed by interned resource id (small; linear search).
using IdAmounts = std::vector<std::pair<NameId, int64_t>>;

// Interns the resources of `list` (ResourceNames()).
[[nodiscard]] IdAmounts ToIdAmounts(const ResourceList& list);
// The list `ids` names (ResourceNames()).
[[nodiscard]] ResourceList ToResourceList(const IdAmounts& ids);
// The amount of resource `id` in `ids` (0 when absent).
[[nodiscard]] int64_t AmountOf(const IdAmounts& ids, NameId id);
// `*ids` += `add`, resource by resource (saturating; a resource `*ids` lacks is appended).
void AddTo(IdAmounts* ids, const IdAmounts& add);

}  // namespace taskgov::scheduler::model
