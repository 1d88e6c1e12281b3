#pragma once

// A line diff for people, in unified form: `--- a` / `+++ b` headers, then hunks of changed lines
// (`-` removed, `+` added) with `context` unchanged lines around them and an `@@ -l,n +l,n @@`
// line before each. Longest-common-subsequence on lines; inputs are a ConfigMap key, small.
// Pure function; thread-safe.

#include <string>
#include <string_view>

namespace taskgov::cli {

// "" when `before` and `after` are equal.
[[nodiscard]] std::string UnifiedDiff(std::string_view before, std::string_view after,
                                      std::string_view before_label, std::string_view after_label,
                                      int context = 2);

}  // namespace taskgov::cli
