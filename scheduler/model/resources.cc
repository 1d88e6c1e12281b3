#include "scheduler/model/resources.h"

#include <algorithm>
#include <limits>

#include "scheduler/model/quantity.h"

namespace taskgov::scheduler::model {

int64_t SaturatingTimes(int64_t a, int64_t n) {
  int64_t out;
  if (__builtin_mul_overflow(a, n, &out)) return std::numeric_limits<int64_t>::max();
  return out;
}

ResourceList::ResourceList(std::initializer_list<ResourceAmount> items) {
  for (const ResourceAmount& item : items) Set(item.name, item.amount);
}

const ResourceAmount* ResourceList::Find(std::string_view name) const {
  // A pod's or a node's list names a handful of resources: comparing for equality (lengths
  // first) item by item beats a binary search's ordered comparisons of whole names.
  constexpr size_t kScanned = 8;
  if (items_.size() <= kScanned) {
    for (const ResourceAmount& a : items_) {
      if (a.name == name) return &a;
    }
    return nullptr;
  }
  auto it =
      std::lower_bound(items_.begin(), items_.end(), name,
                       [](const ResourceAmount& a, std::string_view n) { return a.name < n; });
  return it != items_.end() && it->name == name ? &*it : nullptr;
}

int64_t ResourceList::Get(std::string_view name) const {
  const ResourceAmount* found = Find(name);
  return found != nullptr ? found->amount : 0;
}

bool ResourceList::Has(std::string_view name) const { return Find(name) != nullptr; }

void ResourceList::Set(std::string_view name, int64_t amount) {
  auto it =
      std::lower_bound(items_.begin(), items_.end(), name,
                       [](const ResourceAmount& a, std::string_view n) { return a.name < n; });
  if (it != items_.end() && it->name == name) {
    it->amount = amount;
  } else {
    items_.insert(it, ResourceAmount{std::string(name), amount});
  }
}

void ResourceList::Add(const ResourceList& other) {
  // Both sorted by name: one pass, each search starting where the last ended.
  auto it = items_.begin();
  for (const ResourceAmount& item : other.items_) {
    it = std::lower_bound(it, items_.end(), item.name,
                          [](const ResourceAmount& a, std::string_view n) { return a.name < n; });
    if (it != items_.end() && it->name == item.name) {
      it->amount = SaturatingAdd(it->amount, item.amount);
    } else {
      it = items_.insert(it, ResourceAmount{item.name, SaturatingAdd(0, item.amount)});
    }
    ++it;
  }
}

void ResourceList::MaxWith(const ResourceList& other) {
  for (const ResourceAmount& item : other) {
    if (!Has(item.name) || Get(item.name) < item.amount) Set(item.name, item.amount);
  }
}

ResourceList ResourceList::Times(int64_t n) const {
  ResourceList out = *this;
  for (ResourceAmount& item : out.items_) item.amount = SaturatingTimes(item.amount, n);
  return out;
}

void ResourceList::DropZeros() {
  std::erase_if(items_, [](const ResourceAmount& a) { return a.amount == 0; });
}

std::string ResourceList::ToString() const {
  std::string out;
  for (const ResourceAmount& item : items_) {
    if (!out.empty()) out += ", ";
    out += item.name + ": " + FormatQuantity(item.name, item.amount);
  }
  return out;
}

IdAmounts ToIdAmounts(const ResourceList& list) {
  IdAmounts out;
  out.reserve(list.size());
  for (const ResourceAmount& r : list) out.emplace_back(ResourceNames().Intern(r.name), r.amount);
  return out;
}

ResourceList ToResourceList(const IdAmounts& ids) {
  ResourceList out;
  for (const auto& [id, amount] : ids) out.Set(ResourceNames().Name(id), amount);
  return out;
}

int64_t AmountOf(const IdAmounts& ids, NameId id) {
  for (const auto& [key, amount] : ids) {
    if (key == id) return amount;
  }
  return 0;
}

void AddTo(IdAmounts* ids, const IdAmounts& add) {
  for (const auto& [resource, amount] : add) {
    auto entry = std::find_if(ids->begin(), ids->end(),
                              [id = resource](const auto& e) { return e.first == id; });
    if (entry == ids->end()) {
      ids->emplace_back(resource, amount);
    } else {
      entry->second = SaturatingAdd(entry->second, amount);
    }
  }
}

}  // namespace taskgov::scheduler::model
