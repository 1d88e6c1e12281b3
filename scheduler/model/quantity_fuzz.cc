// Fuzzes ParseQuantity with arbitrary text in both canonical units. Properties: it never crashes
// or reports a negative amount; every error names the offending string (its first 24 characters
// when overlong); an amount formatted by FormatQuantity parses back to itself.

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "scheduler/common/testing/fuzz_check.h"
#include "scheduler/model/quantity.h"

namespace taskgov::scheduler::model {
namespace {

void Check(std::string_view text, QuantityUnit unit, std::string_view resource) {
  common::Result<int64_t> parsed = ParseQuantity(text, unit);
  if (!parsed.ok()) {
    FUZZ_CHECK(parsed.error().message.starts_with("invalid quantity '"),
               "an error names the offending string");
    return;
  }
  FUZZ_CHECK(*parsed >= 0, "amounts are never negative");
  common::Result<int64_t> again =
      ParseResourceQuantity(resource, FormatQuantity(resource, *parsed));
  FUZZ_CHECK(again.ok() && *again == *parsed, "FormatQuantity output parses back to the amount");
}

}  // namespace
}  // namespace taskgov::scheduler::model

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using taskgov::scheduler::model::Check;
  using taskgov::scheduler::model::QuantityUnit;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  Check(text, QuantityUnit::kUnits, "memory");
  Check(text, QuantityUnit::kUnits, "nvidia.com/gpu");
  Check(text, QuantityUnit::kMillis, "cpu");
  return 0;
}
