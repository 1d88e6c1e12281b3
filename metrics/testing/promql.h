#pragma once

// The metric names a PromQL query (a dashboard panel's, an alert's) selects, with the label
// names of its `{...}` matchers and the values of its equality matchers, so tests can check
// that every name and label is one the exporter emits. Only names with taskgov's and Kueue's
// prefixes (`taskgov_`, `kueue_`) are reported: functions, keywords and Prometheus' own series
// (`up`) are not the exporter's. Test support; header-only.
//
// Thread-safety: pure functions.

#include <map>
#include <string>
#include <vector>

#include "rapidjson/document.h"

namespace taskgov::metrics::testing {

// A metric name in a query, the label names its selector matches on, and the value of each
// equality (`=`) matcher.
struct Selector {
  std::string name;
  std::vector<std::string> labels;
  std::map<std::string, std::string> equals;
};

inline bool PromqlNameChar(char c) {
  return (c >= 'a' && c <= 'z') || c == '_' || (c >= '0' && c <= '9');
}

// The taskgov_* / kueue_* names a PromQL query mentions, with their `{...}` matchers.
inline std::vector<Selector> Selectors(const std::string& q) {
  std::vector<Selector> out;
  for (size_t i = 0; i < q.size();) {
    const bool start =
        (i == 0 || !(PromqlNameChar(q[i - 1]) || (q[i - 1] >= 'A' && q[i - 1] <= 'Z'))) &&
        (q.compare(i, 8, "taskgov_") == 0 || q.compare(i, 6, "kueue_") == 0);
    if (!start) {
      ++i;
      continue;
    }
    size_t end = i;
    while (end < q.size() && PromqlNameChar(q[end])) ++end;
    Selector sel{q.substr(i, end - i), {}, {}};
    if (end < q.size() && q[end] == '{') {
      size_t close = q.find('}', end);
      if (close == std::string::npos) close = q.size();
      const std::string inner = q.substr(end + 1, close - end - 1);
      bool in_value = false;
      std::string label, op, value;
      for (size_t j = 0; j < inner.size(); ++j) {
        const char c = inner[j];
        if (in_value) {
          if (c == '\\') {
            if (j + 1 < inner.size()) value += inner[++j];
          } else if (c == '"') {
            in_value = false;
            if (op == "=") sel.equals[label] = value;
            label.clear();
            op.clear();
          } else {
            value += c;
          }
          continue;
        }
        if (c == '"') {
          in_value = true;
          value.clear();
          if (!label.empty()) sel.labels.push_back(label);
        } else if (PromqlNameChar(c) || (c >= 'A' && c <= 'Z')) {
          label += c;
        } else if (c == '=' || c == '!' || c == '~') {
          op += c;
        } else if (c == ',') {
          label.clear();
          op.clear();
        }
      }
      end = close;
    }
    out.push_back(std::move(sel));
    i = end;
  }
  return out;
}

// Every string under the keys of a Grafana dashboard that hold PromQL: targets' "expr",
// variables' "definition" and "query".
inline void CollectQueries(const rapidjson::Value& v, std::vector<std::string>* out) {
  if (v.IsObject()) {
    for (const auto& m : v.GetObject()) {
      const std::string key = m.name.GetString();
      if ((key == "expr" || key == "definition" || key == "query") && m.value.IsString()) {
        out->push_back(m.value.GetString());
      } else {
        CollectQueries(m.value, out);
      }
    }
  } else if (v.IsArray()) {
    for (const auto& item : v.GetArray()) CollectQueries(item, out);
  }
}

}  // namespace taskgov::metrics::testing
