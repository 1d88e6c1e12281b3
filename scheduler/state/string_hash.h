#pragma once

// StringHash: a hash for string-keyed unordered containers that finds a key by std::string_view
// (with std::equal_to<>), so that a lookup builds no std::string — a heap block for a UID of 36
// bytes.

#include <cstddef>
#include <functional>
#include <string_view>

namespace taskgov::scheduler::state {

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

}  // namespace taskgov::scheduler::state
