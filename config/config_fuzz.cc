// Fuzzes the policy loader with one ConfigMap file: LoadSources parses every YAML/JSON document
// of it, decodes each in its dialect (DecodeDocument dispatches on apiVersion / kind / shape) and
// resolves the set, then --check-config's report is rendered from the result. Built once per
// dialect (config_native_fuzz, config_hyperpod_fuzz, config_kueue_fuzz, config_volcano_fuzz):
// the binaries differ only in their seed corpus and dictionary, which keep the mutations inside
// that dialect. Properties: nothing crashes or throws; a refused policy carries at least one
// error, each naming this file (or none: configuration-wide) and saying what is
// wrong; an accepted one has no error.

#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>
#include <string_view>

#include "config/check_config.h"
#include "config/loader.h"
#include "scheduler/common/testing/fuzz_check.h"

namespace taskgov::config {
namespace {

constexpr std::string_view kFile = "policy.yaml";

void CheckDiagnostics(const LoadResult& result) {
  FUZZ_CHECK(result.ok() == (result.error_count() == 0), "a policy is refused iff it has errors");
  FUZZ_CHECK(result.draft != nullptr, "resolution always yields a draft for check-config");
  for (const Diagnostic& d : result.diagnostics) {
    FUZZ_CHECK(d.file == kFile || d.file.empty(),
               "a diagnostic names the file, or none (config-wide)");
    FUZZ_CHECK(!d.message.empty(), "every diagnostic says what is wrong");
    FUZZ_CHECK(!result.Format(d).empty(), "every diagnostic formats as a line");
  }
  if (!result.ok()) FUZZ_CHECK(!result.FirstError().empty(), "a refusal has a first error");
}

}  // namespace
}  // namespace taskgov::config

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace taskgov::config;
  const std::string content(reinterpret_cast<const char*>(data), size);
  const LoadResult result = LoadSources({SourceFile{std::string(kFile), content}});
  CheckDiagnostics(result);
  std::ostringstream report;
  RenderCheckConfig("/fuzz", result, report);
  // The fail-safe against truncated writes: the first half of the file, with this as in force.
  (void)TruncationErrors({SourceFile{std::string(kFile), content.substr(0, size / 2)}},
                         {SourceFile{std::string(kFile), content}});
  return 0;
}
