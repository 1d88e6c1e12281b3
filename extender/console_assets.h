#pragma once

// The console's files (extender/console/: index.html, app.js, style.css), compiled into the
// binary by a genrule (console/embed.sh): served by ConsoleRoutes, nothing fetched from anywhere
// else at run time. Immutable; thread-safe.

#include <span>
#include <string_view>
#include <vector>

#include "extender/http_server.h"

namespace taskgov::extender {

struct ConsoleAsset {
  std::string_view path;  // "/index.html", "/app.js", ...
  std::string_view content_type;
  std::string_view body;
};

[[nodiscard]] std::span<const ConsoleAsset> ConsoleAssets();

// GET / (index.html) and every asset at its path, with headers that keep the page to itself:
// Content-Security-Policy (only this origin; no inline script), X-Content-Type-Options,
// Referrer-Policy, and no caching (a new binary serves a new console). No access check: the
// files hold no data; the API calls they make are checked.
[[nodiscard]] std::vector<Route> ConsoleRoutes();

}  // namespace taskgov::extender
