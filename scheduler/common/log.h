#pragma once

// Structured logging: one JSON object per line on stderr,
//   {"time":"2026-11-29T22:11:31.123Z","level":"info","component":"extender","msg":"...",...}
// with any extra fields appended as string or number members.
//
// Thread-safety: every call formats into a local buffer and emits the line with one write(2),
// so lines from different threads never interleave. The level threshold is an atomic read with
// relaxed order (a stale threshold only changes which lines appear).

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace taskgov::common::log {

enum class Level { kDebug = 0, kInfo = 1, kWarn = 2, kError = 3 };

// Parses "debug" | "info" | "warn" | "error". Returns false for anything else.
[[nodiscard]] bool ParseLevel(std::string_view text, Level* level);
void SetLevel(Level level);
[[nodiscard]] bool Enabled(Level level);

// A named value attached to a log line.
struct Field {
  Field(std::string_view k, std::string_view v) : key(k), value(v), quoted(true) {}
  Field(std::string_view k, const char* v) : key(k), value(v), quoted(true) {}
  Field(std::string_view k, const std::string& v) : key(k), value(v), quoted(true) {}
  Field(std::string_view k, int64_t v) : key(k), value(std::to_string(v)), quoted(false) {}
  Field(std::string_view k, int v) : key(k), value(std::to_string(v)), quoted(false) {}
  Field(std::string_view k, uint64_t v) : key(k), value(std::to_string(v)), quoted(false) {}
  Field(std::string_view k, double v);
  Field(std::string_view k, bool v) : key(k), value(v ? "true" : "false"), quoted(false) {}

  std::string_view key;
  std::string value;
  bool quoted;
};

// Formats one line (without the trailing newline); exposed for tests.
[[nodiscard]] std::string Format(Level level, std::string_view component, std::string_view message,
                                 std::initializer_list<Field> fields, int64_t unix_millis);

void Write(Level level, std::string_view component, std::string_view message,
           std::initializer_list<Field> fields = {});

inline void Debug(std::string_view component, std::string_view message,
                  std::initializer_list<Field> fields = {}) {
  if (Enabled(Level::kDebug)) Write(Level::kDebug, component, message, fields);
}
inline void Info(std::string_view component, std::string_view message,
                 std::initializer_list<Field> fields = {}) {
  if (Enabled(Level::kInfo)) Write(Level::kInfo, component, message, fields);
}
inline void Warn(std::string_view component, std::string_view message,
                 std::initializer_list<Field> fields = {}) {
  if (Enabled(Level::kWarn)) Write(Level::kWarn, component, message, fields);
}
inline void Error(std::string_view component, std::string_view message,
                  std::initializer_list<Field> fields = {}) {
  Write(Level::kError, component, message, fields);
}

// Test hook: while a ScopedCapture lives, every line written (from any thread) is kept by it,
// without its newline, instead of going to stderr. At most one at a time (a second one replaces
// the first until it ends). Level filtering applies as usual.
class ScopedCapture {
 public:
  ScopedCapture();
  ~ScopedCapture();
  ScopedCapture(const ScopedCapture&) = delete;
  ScopedCapture& operator=(const ScopedCapture&) = delete;

  [[nodiscard]] std::vector<std::string> Lines() const;
  // Lines containing `text`.
  [[nodiscard]] size_t Count(std::string_view text) const;
  void Clear();
  // Called by Write; not for other callers.
  void Append(std::string line);

 private:
  ScopedCapture* previous_;
  mutable std::mutex mu_;
  std::vector<std::string> lines_;  // guarded by mu_
};

// Appends `text` to `out` as the inside of a JSON string (quotes, backslashes and control
// characters escaped; bytes >= 0x80 copied as they are).
void AppendJsonEscaped(std::string_view text, std::string* out);

}  // namespace taskgov::common::log
