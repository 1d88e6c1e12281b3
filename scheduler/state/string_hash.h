#pragma once

// StringHash: a hash for string-keyed unordered containers that finds a key by std::string_view
// (with std::equal_to<>), so that a lookup builds no std::string — a heap block for a UID of 36
// bytes — and hashes it with NameHash (common/name_hash.h).

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "scheduler/common/name_hash.h"

namespace taskgov::scheduler::state {

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return common::NameHash(s); }
};

// String-keyed maps found by a view of the key.
template <typename V>
using StringMap = std::unordered_map<std::string, V, StringHash, std::equal_to<>>;
template <typename V>
using StringMultimap = std::unordered_multimap<std::string, V, StringHash, std::equal_to<>>;

}  // namespace taskgov::scheduler::state
