#pragma once

// StringHash: a hash for string-keyed unordered containers that finds a key by std::string_view
// (with std::equal_to<>), so that a lookup builds no std::string — a heap block for a UID of 36
// bytes — and hashes it with NameHash (common/name_hash.h).

#include <cstddef>
#include <string_view>

#include "scheduler/common/name_hash.h"

namespace taskgov::scheduler::state {

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return common::NameHash(s); }
};

}  // namespace taskgov::scheduler::state
