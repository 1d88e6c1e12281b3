#pragma once

// Base64 (RFC 4648), as kubeconfig *-data fields, Secrets and list continue tokens use it.
// Decoding accepts the URL-safe alphabet too, padding or none, and ignores whitespace.
// Pure functions; thread-safe.

#include <string>
#include <string_view>

#include "scheduler/common/result.h"

namespace taskgov::common {

// Errors name `what` (e.g. "users[u].client-key-data").
[[nodiscard]] Result<std::string> Base64Decode(std::string_view text, std::string_view what);
[[nodiscard]] std::string Base64Encode(std::string_view data);

}  // namespace taskgov::common
