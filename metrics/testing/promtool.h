#pragma once

// promtool, Prometheus' own checker, from the Debian package `prometheus` (an absolute path: a
// system binary cannot be a Bazel data dependency). Run it with common::testing::RunToCompletion;
// `promtool check metrics`, which two tests run, is here once. Test support.

#include <string>

#include "scheduler/common/testing/process.h"

namespace taskgov::metrics::testing {

inline constexpr char kPromtool[] = "/usr/bin/promtool";

// `promtool check metrics` on a text exposition given as its stdin.
[[nodiscard]] inline common::testing::ToolRun PromtoolCheckMetrics(const std::string& exposition) {
  return common::testing::RunToCompletion({kPromtool, "check", "metrics"}, exposition);
}

}  // namespace taskgov::metrics::testing
