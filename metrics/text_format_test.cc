#include "metrics/text_format.h"

#include <gtest/gtest.h>
#include <prometheus/text_serializer.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <sstream>

namespace taskgov::metrics {
namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;

std::string Library(const std::vector<MetricFamily>& families) {
  std::ostringstream out;
  prometheus::TextSerializer().Serialize(out, families);
  return out.str();
}

std::string Ours(const std::vector<MetricFamily>& families) {
  std::string text;
  AppendText(families, &text);
  return text;
}

// Values where formats part ways: integers near %.16g's switch to exponents, fractions,
// tiny and huge magnitudes, negative zero, NaN and the infinities.
const std::vector<double> kValues = {
    0.0,
    -0.0,
    1,
    -1,
    7200,
    1699999997.5,
    0.1,
    0.00025,
    1.0 / 3,
    0.1 + 0.2,
    123456789012345.0,
    999999999999999.0,
    1e15,
    1e16,
    12345678901234567.0,
    -98765432109876.0,
    1e-7,
    2.5e-300,
    1.7976931348623157e308,
    static_cast<double>(int64_t{1} << 53),
    std::numeric_limits<double>::quiet_NaN(),
    std::numeric_limits<double>::infinity(),
    -std::numeric_limits<double>::infinity(),
};

ClientMetric WithLabels(std::vector<ClientMetric::Label> labels, int64_t timestamp_ms = 0) {
  ClientMetric m;
  m.label = std::move(labels);
  m.timestamp_ms = timestamp_ms;
  return m;
}

TEST(TextFormatTest, WritesWhatPrometheusCppWritesForEveryTypeAndValue) {
  std::vector<MetricFamily> families;
  MetricFamily counter{"c_total", "a counter", MetricType::Counter, {}};
  MetricFamily gauge{"g", "", MetricType::Gauge, {}};
  MetricFamily untyped{"u", "untyped help", MetricType::Untyped, {}};
  for (size_t i = 0; i < kValues.size(); ++i) {
    ClientMetric m = WithLabels({{"i", std::to_string(i)}}, i % 3 == 0 ? 1700000000123 : 0);
    m.counter.value = kValues[i];
    m.gauge.value = kValues[i];
    m.untyped.value = kValues[i];
    counter.metric.push_back(m);
    gauge.metric.push_back(m);
    untyped.metric.push_back(m);
  }
  gauge.metric.push_back(WithLabels({}));  // no labels at all
  MetricFamily histogram{"h_seconds", "a histogram", MetricType::Histogram, {}};
  ClientMetric h = WithLabels({{"verb", "filter"}});
  h.histogram.sample_count = 12;
  h.histogram.sample_sum = 0.0123456789;
  for (double le : {0.00005, 0.00025, 0.001, 2.5, 10.0}) {
    h.histogram.bucket.push_back({static_cast<uint64_t>(le * 1000), le});
  }
  histogram.metric.push_back(h);
  h.histogram.bucket.push_back({12, std::numeric_limits<double>::infinity()});  // +Inf given
  histogram.metric.push_back(h);
  histogram.metric.push_back(WithLabels({}));  // no buckets
  MetricFamily summary{"s", "a summary", MetricType::Summary, {}};
  ClientMetric q = WithLabels({{"team", "a"}}, 42);
  q.summary.sample_count = 3;
  q.summary.sample_sum = 1.5;
  q.summary.quantile = {{0.5, 0.25}, {0.99, 1.0 / 3}};
  summary.metric.push_back(q);
  families = {counter, gauge, untyped, histogram, summary};
  EXPECT_EQ(Ours(families), Library(families));
}

TEST(TextFormatTest, EscapesLabelValuesAsPrometheusCppDoes) {
  MetricFamily g{"g", "help with \\ and \"quotes\"", MetricType::Gauge, {}};
  for (const char* value : {"", "plain", "back\\slash", "quo\"te", "new\nline", "\\\"\n\\",
                            "trailing\\", "\"", "ünïcödé"}) {
    ClientMetric m = WithLabels({{"a", value}, {"b", "x"}});
    m.gauge.value = 1;
    g.metric.push_back(m);
  }
  EXPECT_EQ(Ours({g}), Library({g}));
}

TEST(TextFormatTest, RandomDoublesMatch) {
  std::mt19937_64 rng(7);
  MetricFamily g{"g", "", MetricType::Gauge, {}};
  for (int i = 0; i < 20000; ++i) {
    ClientMetric m;
    double v;
    switch (i % 4) {
      case 0:  // any bit pattern
        do {
          const uint64_t bits = rng();
          std::memcpy(&v, &bits, sizeof(v));
        } while (std::isnan(v));
        break;
      case 1:  // integers of every size
        v = static_cast<double>(static_cast<int64_t>(rng() >> (rng() % 64)));
        break;
      case 2:  // quota-like amounts: millicores, bytes, halves
        v = static_cast<double>(rng() % 1000000000000) / 2;
        break;
      default:  // fractions
        v = static_cast<double>(rng() % 100000) / 7919.0;
    }
    m.gauge.value = v;
    g.metric.push_back(m);
  }
  EXPECT_EQ(Ours({g}), Library({g}));
}

}  // namespace
}  // namespace taskgov::metrics
