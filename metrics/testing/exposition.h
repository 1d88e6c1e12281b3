#pragma once

// A small reader of the Prometheus text exposition format (0.0.4) for tests: families with
// their HELP and TYPE, samples with their labels and values, and lookups by name and labels.
// It accepts what metrics::Metrics renders (and reports what it does not understand as
// errors, so a malformed render fails the test). Test support; not a general parser.

#include <cmath>
#include <cstdlib>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace taskgov::metrics::testing {

struct Sample {
  std::string name;  // as written, e.g. "foo_bucket"
  std::map<std::string, std::string> labels;
  double value = 0;
};

struct FamilyInfo {
  std::string help;
  std::string type;  // "" until its TYPE line
  int help_line = 0;
  int type_line = 0;
};

struct Exposition {
  std::map<std::string, FamilyInfo> families;
  std::vector<Sample> samples;
  std::vector<std::string> errors;

  // The family a sample name belongs to ("foo_bucket" → "foo" for histograms).
  [[nodiscard]] std::string FamilyOf(const std::string& sample_name) const {
    if (families.count(sample_name)) return sample_name;
    for (std::string_view suffix : {"_bucket", "_sum", "_count"}) {
      if (sample_name.size() > suffix.size() &&
          sample_name.compare(sample_name.size() - suffix.size(), suffix.size(), suffix) == 0) {
        std::string base = sample_name.substr(0, sample_name.size() - suffix.size());
        auto it = families.find(base);
        if (it != families.end() && it->second.type == "histogram") return base;
      }
    }
    return "";
  }

  // The value of the one sample with this name whose labels include `labels`.
  [[nodiscard]] std::optional<double> Value(
      const std::string& name, const std::map<std::string, std::string>& labels = {}) const {
    std::optional<double> found;
    for (const Sample& s : samples) {
      if (s.name != name) continue;
      bool match = true;
      for (const auto& [k, v] : labels) {
        auto it = s.labels.find(k);
        match = match && it != s.labels.end() && it->second == v;
      }
      if (!match) continue;
      if (found) return std::nullopt;  // ambiguous
      found = s.value;
    }
    return found;
  }

  // Every sample with this name.
  [[nodiscard]] std::vector<Sample> All(const std::string& name) const {
    std::vector<Sample> out;
    for (const Sample& s : samples) {
      if (s.name == name) out.push_back(s);
    }
    return out;
  }
};

inline double ParseValue(const std::string& text, bool* ok) {
  *ok = true;
  if (text == "+Inf") return INFINITY;
  if (text == "-Inf") return -INFINITY;
  if (text == "NaN") return NAN;
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  *ok = end != nullptr && *end == '\0' && !text.empty();
  return v;
}

inline Exposition ParseExposition(const std::string& text) {
  Exposition out;
  std::istringstream in(text);
  std::string line;
  int number = 0;
  auto error = [&](const std::string& what) {
    out.errors.push_back("line " + std::to_string(number) + ": " + what + ": " + line);
  };
  while (std::getline(in, line)) {
    ++number;
    if (line.empty()) continue;
    if (line.rfind("# HELP ", 0) == 0) {
      const std::string rest = line.substr(7);
      const size_t space = rest.find(' ');
      const std::string name = rest.substr(0, space);
      FamilyInfo& f = out.families[name];
      if (f.help_line != 0) error("second HELP for " + name);
      f.help = space == std::string::npos ? "" : rest.substr(space + 1);
      f.help_line = number;
      continue;
    }
    if (line.rfind("# TYPE ", 0) == 0) {
      const std::string rest = line.substr(7);
      const size_t space = rest.find(' ');
      const std::string name = rest.substr(0, space);
      FamilyInfo& f = out.families[name];
      if (f.type_line != 0) error("second TYPE for " + name);
      f.type = space == std::string::npos ? "" : rest.substr(space + 1);
      f.type_line = number;
      continue;
    }
    if (line[0] == '#') continue;
    Sample s;
    size_t i = 0;
    while (i < line.size() && line[i] != '{' && line[i] != ' ') ++i;
    s.name = line.substr(0, i);
    if (i < line.size() && line[i] == '{') {
      ++i;
      while (i < line.size() && line[i] != '}') {
        const size_t eq = line.find('=', i);
        if (eq == std::string::npos || eq + 1 >= line.size() || line[eq + 1] != '"') {
          error("bad label");
          break;
        }
        const std::string key = line.substr(i, eq - i);
        std::string value;
        size_t j = eq + 2;
        for (; j < line.size() && line[j] != '"'; ++j) {
          if (line[j] == '\\' && j + 1 < line.size()) {
            ++j;
            value += line[j] == 'n' ? '\n' : line[j];
          } else {
            value += line[j];
          }
        }
        s.labels[key] = value;
        i = j + 1;
        if (i < line.size() && line[i] == ',') ++i;
      }
      ++i;  // '}'
    }
    if (i >= line.size() || line[i] != ' ') {
      error("no value");
      continue;
    }
    bool ok = false;
    s.value = ParseValue(line.substr(i + 1), &ok);
    if (!ok) error("bad value");
    out.samples.push_back(std::move(s));
  }
  return out;
}

}  // namespace taskgov::metrics::testing
