#pragma once

// Why a reflector restarted a watch (keys of ReflectorStats::watch_restarts, label values of
// taskgov_watch_restarts_total{reason}). Declared once: the reflector emits only these, and the
// metrics HELP text lists exactly these. Header-only, no dependencies.

#include <array>
#include <string_view>

namespace taskgov::scheduler::kube {

struct WatchRestartReason {
  std::string_view name;
  std::string_view meaning;
};

inline constexpr std::string_view kWatchEnded = "ended";
inline constexpr std::string_view kWatchExpired = "expired";
inline constexpr std::string_view kWatchDropped = "dropped";
inline constexpr std::string_view kWatchTimeout = "timeout";
inline constexpr std::string_view kWatchThrottled = "throttled";
inline constexpr std::string_view kWatchError = "error";

inline constexpr std::array<WatchRestartReason, 6> kWatchRestartReasons = {{
    {kWatchEnded, "the server closed the watch cleanly"},
    {kWatchExpired, "410 Gone: relist"},
    {kWatchDropped, "the connection broke mid-stream"},
    {kWatchTimeout, "silent past the idle deadline"},
    {kWatchThrottled, "429 Too Many Requests"},
    {kWatchError, "any other failure"},
}};

}  // namespace taskgov::scheduler::kube
