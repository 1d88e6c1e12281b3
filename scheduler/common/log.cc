#include "scheduler/common/log.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <mutex>

namespace taskgov::common::log {
namespace {

std::atomic<int> g_level{static_cast<int>(Level::kInfo)};

// The live ScopedCapture, if any. g_capturing (relaxed: a line written while a capture starts or
// ends may go either way) keeps the mutex off the normal path; g_capture_mu guards the pointer
// and keeps a capture alive while a line is appended to it.
std::atomic<bool> g_capturing{false};
std::mutex g_capture_mu;
ScopedCapture* g_capture = nullptr;  // guarded by g_capture_mu

const char* LevelName(Level level) {
  switch (level) {
    case Level::kDebug:
      return "debug";
    case Level::kInfo:
      return "info";
    case Level::kWarn:
      return "warn";
    case Level::kError:
      return "error";
  }
  return "info";
}

void AppendTime(int64_t unix_millis, std::string* out) {
  time_t seconds = static_cast<time_t>(unix_millis / 1000);
  struct tm tm_utc;
  gmtime_r(&seconds, &tm_utc);
  char buf[96];  // sized for any int values, so the format can never truncate
  snprintf(buf, sizeof(buf), "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm_utc.tm_year + 1900,
           tm_utc.tm_mon + 1, tm_utc.tm_mday, tm_utc.tm_hour, tm_utc.tm_min, tm_utc.tm_sec,
           static_cast<int>(unix_millis % 1000));
  out->append(buf);
}

}  // namespace

Field::Field(std::string_view k, double v) : key(k), quoted(false) {
  if (std::isfinite(v)) {
    char buf[32];
    snprintf(buf, sizeof(buf), "%.6g", v);
    value = buf;
  } else {
    value = "null";  // JSON has no Inf/NaN.
  }
}

bool ParseLevel(std::string_view text, Level* level) {
  static constexpr std::pair<std::string_view, Level> kLevels[] = {{"debug", Level::kDebug},
                                                                   {"info", Level::kInfo},
                                                                   {"warn", Level::kWarn},
                                                                   {"error", Level::kError}};
  for (const auto& [name, value] : kLevels) {
    if (text == name) {
      *level = value;
      return true;
    }
  }
  return false;
}

// Relaxed: the threshold guards no other data.
void SetLevel(Level level) { g_level.store(static_cast<int>(level), std::memory_order_relaxed); }
bool Enabled(Level level) {
  return static_cast<int>(level) >= g_level.load(std::memory_order_relaxed);
}

void AppendJsonEscaped(std::string_view text, std::string* out) {
  for (char c : text) {
    switch (c) {
      case '"':
        out->append("\\\"");
        break;
      case '\\':
        out->append("\\\\");
        break;
      case '\n':
        out->append("\\n");
        break;
      case '\r':
        out->append("\\r");
        break;
      case '\t':
        out->append("\\t");
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          snprintf(buf, sizeof(buf), "\\u%04x", static_cast<unsigned char>(c));
          out->append(buf);
        } else {
          out->push_back(c);
        }
    }
  }
}

std::string Format(Level level, std::string_view component, std::string_view message,
                   std::initializer_list<Field> fields, int64_t unix_millis) {
  std::string line;
  line.reserve(128 + message.size());
  line.append("{\"time\":\"");
  AppendTime(unix_millis, &line);
  line.append("\",\"level\":\"");
  line.append(LevelName(level));
  line.append("\",\"component\":\"");
  AppendJsonEscaped(component, &line);
  line.append("\",\"msg\":\"");
  AppendJsonEscaped(message, &line);
  line.push_back('"');
  for (const Field& field : fields) {
    line.append(",\"");
    AppendJsonEscaped(field.key, &line);
    line.append("\":");
    if (field.quoted) {
      line.push_back('"');
      AppendJsonEscaped(field.value, &line);
      line.push_back('"');
    } else {
      line.append(field.value);
    }
  }
  line.push_back('}');
  return line;
}

void Write(Level level, std::string_view component, std::string_view message,
           std::initializer_list<Field> fields) {
  const int64_t now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                             std::chrono::system_clock::now().time_since_epoch())
                             .count();
  std::string line = Format(level, component, message, fields, now_ms);
  if (g_capturing.load(std::memory_order_relaxed)) {
    std::lock_guard<std::mutex> lock(g_capture_mu);
    if (g_capture != nullptr) {
      g_capture->Append(std::move(line));
      return;
    }
  }
  line.push_back('\n');
  size_t written = 0;
  while (written < line.size()) {
    ssize_t n = ::write(STDERR_FILENO, line.data() + written, line.size() - written);
    if (n <= 0) return;  // Nowhere left to report a failed log write.
    written += static_cast<size_t>(n);
  }
}

ScopedCapture::ScopedCapture() {
  std::lock_guard<std::mutex> lock(g_capture_mu);
  previous_ = g_capture;
  g_capture = this;
  g_capturing.store(true, std::memory_order_relaxed);
}

ScopedCapture::~ScopedCapture() {
  std::lock_guard<std::mutex> lock(g_capture_mu);
  g_capture = previous_;
  g_capturing.store(g_capture != nullptr, std::memory_order_relaxed);
}

std::vector<std::string> ScopedCapture::Lines() const {
  std::lock_guard<std::mutex> lock(mu_);
  return lines_;
}

size_t ScopedCapture::Count(std::string_view text) const {
  std::lock_guard<std::mutex> lock(mu_);
  size_t n = 0;
  for (const std::string& line : lines_) {
    if (line.find(text) != std::string::npos) ++n;
  }
  return n;
}

void ScopedCapture::Clear() {
  std::lock_guard<std::mutex> lock(mu_);
  lines_.clear();
}

void ScopedCapture::Append(std::string line) {
  std::lock_guard<std::mutex> lock(mu_);
  lines_.push_back(std::move(line));
}

}  // namespace taskgov::common::log
