#include "metrics/text_format.h"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string_view>

namespace taskgov::metrics {
namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;

template <typename Integer>
void AppendInteger(Integer value, std::string* out) {
  char buf[24];
  const std::to_chars_result r = std::to_chars(buf, buf + sizeof(buf), value);
  out->append(buf, r.ptr);
}

// As an ostream with precision 16 in the classic locale writes a double ("%.16g"), and "Nan",
// "+Inf", "-Inf".
void AppendDouble(double value, std::string* out) {
  if (std::isnan(value)) {
    out->append("Nan");
  } else if (std::isinf(value)) {
    out->append(value < 0 ? "-Inf" : "+Inf");
  } else if (value == 0) {
    out->append(std::signbit(value) ? "-0" : "0");
  } else if (std::fabs(value) < 1e15 && value == std::trunc(value)) {
    AppendInteger(static_cast<int64_t>(value), out);  // what %.16g prints for it
  } else {
    char buf[32];
    const int n = std::snprintf(buf, sizeof(buf), "%.16g", value);
    out->append(buf, static_cast<size_t>(n));
  }
}

// A label value with \, " and newline escaped (\\, \", \n).
void AppendEscaped(std::string_view value, std::string* out) {
  size_t from = 0;
  for (size_t i = 0; i < value.size(); ++i) {
    const char c = value[i];
    if (c != '\\' && c != '"' && c != '\n') continue;
    out->append(value.substr(from, i - from));
    out->push_back('\\');
    out->push_back(c == '\n' ? 'n' : c);
    from = i + 1;
  }
  out->append(value.substr(from));
}

// "<name><suffix>{labels[,extra="value"]} ": `extra` is written only when not null.
void AppendHead(const MetricFamily& family, const ClientMetric& metric, std::string_view suffix,
                const char* extra, std::string_view extra_value, std::string* out) {
  out->append(family.name).append(suffix);
  if (!metric.label.empty() || extra != nullptr) {
    out->push_back('{');
    const char* separator = "";
    for (const ClientMetric::Label& label : metric.label) {
      out->append(separator).append(label.name).append("=\"");
      AppendEscaped(label.value, out);
      out->push_back('"');
      separator = ",";
    }
    if (extra != nullptr) {
      out->append(separator).append(extra).append("=\"");
      AppendEscaped(extra_value, out);
      out->push_back('"');
    }
    out->push_back('}');
  }
  out->push_back(' ');
}

void AppendTail(const ClientMetric& metric, std::string* out) {
  if (metric.timestamp_ms != 0) {
    out->push_back(' ');
    AppendInteger(metric.timestamp_ms, out);
  }
  out->push_back('\n');
}

std::string DoubleText(double value) {
  std::string text;
  AppendDouble(value, &text);
  return text;
}

void AppendSeries(const MetricFamily& family, const ClientMetric& m, std::string* out) {
  switch (family.type) {
    case MetricType::Counter:
    case MetricType::Gauge:
    case MetricType::Untyped:
      AppendHead(family, m, "", nullptr, {}, out);
      AppendDouble(family.type == MetricType::Counter ? m.counter.value
                   : family.type == MetricType::Gauge ? m.gauge.value
                                                      : m.untyped.value,
                   out);
      break;
    case MetricType::Summary:
      AppendHead(family, m, "_count", nullptr, {}, out);
      AppendInteger(m.summary.sample_count, out);
      AppendTail(m, out);
      AppendHead(family, m, "_sum", nullptr, {}, out);
      AppendDouble(m.summary.sample_sum, out);
      for (const ClientMetric::Quantile& q : m.summary.quantile) {
        AppendTail(m, out);
        AppendHead(family, m, "", "quantile", DoubleText(q.quantile), out);
        AppendDouble(q.value, out);
      }
      break;
    case MetricType::Histogram: {
      AppendHead(family, m, "_count", nullptr, {}, out);
      AppendInteger(m.histogram.sample_count, out);
      AppendTail(m, out);
      AppendHead(family, m, "_sum", nullptr, {}, out);
      AppendDouble(m.histogram.sample_sum, out);
      double last = -INFINITY;
      for (const ClientMetric::Bucket& b : m.histogram.bucket) {
        AppendTail(m, out);
        AppendHead(family, m, "_bucket", "le", DoubleText(b.upper_bound), out);
        AppendInteger(b.cumulative_count, out);
        last = b.upper_bound;
      }
      if (last != INFINITY) {
        AppendTail(m, out);
        AppendHead(family, m, "_bucket", "le", "+Inf", out);
        AppendInteger(m.histogram.sample_count, out);
      }
      break;
    }
  }
  AppendTail(m, out);
}

std::string_view TypeName(MetricType type) {
  switch (type) {
    case MetricType::Counter:
      return "counter";
    case MetricType::Gauge:
      return "gauge";
    case MetricType::Summary:
      return "summary";
    case MetricType::Untyped:
      return "untyped";
    case MetricType::Histogram:
      return "histogram";
  }
  return "untyped";
}

}  // namespace

void AppendText(const std::vector<MetricFamily>& families, std::string* out) {
  for (const MetricFamily& family : families) {
    if (!family.help.empty()) {
      out->append("# HELP ").append(family.name).append(" ").append(family.help).append("\n");
    }
    out->append("# TYPE ").append(family.name).append(" ").append(TypeName(family.type));
    out->push_back('\n');
    for (const ClientMetric& metric : family.metric) AppendSeries(family, metric, out);
  }
}

}  // namespace taskgov::metrics
