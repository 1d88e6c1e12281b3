#pragma once

// `taskgov-extender --check-config DIR`: validates a configuration directory and prints, for
// people, every file's errors and warnings, the cluster policy, the teams and the effective quota
// of every team / flavor / resource as a table (nominal, borrowing limit, lending limit in
// Kubernetes units; "unlimited" for no limit).
//
// Thread-safe (no shared state).

#include <ostream>
#include <string>

#include "config/loader.h"

namespace taskgov::config {

// Prints `result` (loaded from `dir`) to `out`.
void RenderCheckConfig(const std::string& dir, const LoadResult& result, std::ostream& out);

// Loads `dir`, prints the report to `out`, and returns the process exit code: 0 when the
// configuration is valid (warnings allowed), 1 when it has errors.
[[nodiscard]] int RunCheckConfig(const std::string& dir, std::ostream& out);

}  // namespace taskgov::config
