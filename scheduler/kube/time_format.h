#pragma once

// RFC 3339 timestamps as the Kubernetes API writes them: metav1.Time ("2026-01-01T00:00:00Z")
// and metav1.MicroTime ("2026-01-01T00:00:00.000000Z"). Parsing accepts any fraction length and
// a "Z" or ±hh:mm offset. Pure functions; thread-safe.
//
// (kube_json.h declares ParseTimestamp in milliseconds for object decoding; this one keeps
// microseconds for leases and credentials and works without the object decoder.)

#include <cstdint>
#include <string>
#include <string_view>

#include "scheduler/common/result.h"

namespace taskgov::scheduler::kube {

// Unix microseconds, or an error naming the text.
[[nodiscard]] Result<int64_t> ParseRfc3339Micros(std::string_view text);

// "2026-01-01T00:00:00.000000Z" (MicroTime).
[[nodiscard]] std::string FormatMicroTime(int64_t unix_micros);

// "2026-01-01T00:00:00Z" (Time; sub-second part truncated).
[[nodiscard]] std::string FormatTime(int64_t unix_micros);

}  // namespace taskgov::scheduler::kube
