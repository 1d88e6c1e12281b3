#pragma once

// RFC 3339 timestamps as the Kubernetes API writes them: metav1.Time ("2026-01-01T00:00:00Z")
// and metav1.MicroTime ("2026-01-01T00:00:00.000000Z"). Parsing accepts any fraction length
// (truncated to microseconds), "Z" or a ±hh:mm offset, and validates every field. One parser for
// the object decoder, leases and credentials. Pure functions; thread-safe.

#include <cstdint>
#include <string>
#include <string_view>

#include "scheduler/common/result.h"

namespace taskgov::common {

// Unix microseconds, or an error naming the text and what is wrong with it.
[[nodiscard]] Result<int64_t> ParseRfc3339Micros(std::string_view text);

// "2026-01-01T00:00:00.000000Z" (MicroTime).
[[nodiscard]] std::string FormatMicroTime(int64_t unix_micros);

// "2026-01-01T00:00:00Z" (Time; sub-second part truncated).
[[nodiscard]] std::string FormatTime(int64_t unix_micros);

}  // namespace taskgov::common
