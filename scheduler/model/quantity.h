#pragma once

// Kubernetes resource quantities in taskgov's canonical integer units.
//
// Grammar (k8s.io/apimachinery resource.Quantity): optional sign, digits with an optional
// fraction, then one suffix — binary Ki Mi Gi Ti Pi Ei, decimal n u m k M G T P E or none, or a
// decimal exponent e±N / E±N. Values are converted exactly (no floating point) and rounded up to
// the canonical unit, as MilliValue() / Value() do: "0.1" cpu is 100 millicores, "1.5Ki" bytes is
// 1536, "0.1Ki" is 103 (102.4 rounded up). Negative, empty, malformed, overlong (> 64 characters)
// and overflowing (> int64) quantities are errors naming the offending string.
//
// Pure functions; thread-safe.

#include <cstdint>
#include <string>
#include <string_view>

#include "scheduler/common/result.h"

namespace taskgov::scheduler::model {

enum class QuantityUnit {
  kUnits,   // the value itself, rounded up (memory bytes, GPUs, ...)
  kMillis,  // thousandths, rounded up (cpu millicores)
};

[[nodiscard]] common::Result<int64_t> ParseQuantity(std::string_view text, QuantityUnit unit);

// The canonical unit for a resource name: kMillis for "cpu", kUnits for everything else.
[[nodiscard]] QuantityUnit CanonicalUnit(std::string_view resource);

// Parses a quantity of `resource` into its canonical unit.
[[nodiscard]] inline common::Result<int64_t> ParseResourceQuantity(std::string_view resource,
                                                                   std::string_view text) {
  return ParseQuantity(text, CanonicalUnit(resource));
}

// A canonical amount in the resource's base unit, as Prometheus reports it: cpu in cores, memory
// and ephemeral-storage in bytes, anything else in its own count.
[[nodiscard]] double InBaseUnits(std::string_view resource, double canonical);

// Formats a canonical amount for people: "8", "1500m" / "2" for cpu, "64Gi" for exact binary
// multiples of memory, otherwise the plain number.
[[nodiscard]] std::string FormatQuantity(std::string_view resource, int64_t amount);

}  // namespace taskgov::scheduler::model
