#pragma once

// The Prometheus text exposition (format 0.0.4) of metric families, appended straight to a
// string: byte for byte what prometheus-cpp's TextSerializer writes (text_format_test compares
// the two), without its std::ostream (a sentry and a virtual call per piece, a locale-aware
// printf per number). Integral values, the common case (counts, bytes, quota amounts), are
// written by std::to_chars; others as "%.16g".

#include <prometheus/metric_family.h>

#include <string>
#include <vector>

namespace taskgov::metrics {

void AppendText(const std::vector<prometheus::MetricFamily>& families, std::string* out);

}  // namespace taskgov::metrics
