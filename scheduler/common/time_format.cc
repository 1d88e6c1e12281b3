#include "scheduler/common/time_format.h"

#include <cstdio>

namespace taskgov::common {
namespace {

bool Digits(std::string_view text, size_t pos, size_t count, int* out) {
  if (pos + count > text.size()) return false;
  int v = 0;
  for (size_t i = pos; i < pos + count; ++i) {
    if (text[i] < '0' || text[i] > '9') return false;
    v = v * 10 + (text[i] - '0');
  }
  *out = v;
  return true;
}

// Days since 1970-01-01 of a proleptic Gregorian date (the "days from civil" algorithm).
int64_t DaysFromCivil(int64_t y, int64_t m, int64_t d) {
  y -= m <= 2 ? 1 : 0;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const int64_t yoe = y - era * 400;
  const int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

int DaysInMonth(int year, int month) {
  static constexpr int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  const bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
  return month == 2 && leap ? 29 : kDays[month - 1];
}

void CivilFromDays(int64_t z, int64_t* y, unsigned* m, unsigned* d) {
  z += 719468;
  const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const unsigned doe = static_cast<unsigned>(z - era * 146097);
  const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const unsigned mp = (5 * doy + 2) / 153;
  *d = doy - (153 * mp + 2) / 5 + 1;
  *m = mp < 10 ? mp + 3 : mp - 9;
  *y = static_cast<int64_t>(yoe) + era * 400 + (*m <= 2);
}

std::string Format(int64_t unix_micros, bool micros) {
  int64_t secs = unix_micros >= 0 ? unix_micros / 1'000'000 : (unix_micros - 999'999) / 1'000'000;
  const int64_t frac = unix_micros - secs * 1'000'000;
  int64_t days = secs >= 0 ? secs / 86400 : (secs - 86399) / 86400;
  int64_t rem = secs - days * 86400;
  int64_t y;
  unsigned m, d;
  CivilFromDays(days, &y, &m, &d);
  char buf[96];
  if (micros) {
    snprintf(buf, sizeof(buf), "%04lld-%02u-%02uT%02lld:%02lld:%02lld.%06lldZ",
             static_cast<long long>(y), m, d, static_cast<long long>(rem / 3600),
             static_cast<long long>(rem % 3600 / 60), static_cast<long long>(rem % 60),
             static_cast<long long>(frac));
  } else {
    snprintf(buf, sizeof(buf), "%04lld-%02u-%02uT%02lld:%02lld:%02lldZ", static_cast<long long>(y),
             m, d, static_cast<long long>(rem / 3600), static_cast<long long>(rem % 3600 / 60),
             static_cast<long long>(rem % 60));
  }
  return buf;
}

}  // namespace

Result<int64_t> ParseRfc3339Micros(std::string_view text) {
  const auto bad = [&](std::string_view why) {
    return Error{"invalid timestamp '" + std::string(text.substr(0, 64)) +
                 "': " + std::string(why) + " (want RFC 3339, e.g. 2006-01-02T15:04:05Z)"};
  };
  int year, month, day, hour, minute, second;
  if (!Digits(text, 0, 4, &year) || text.size() < 19 || text[4] != '-' ||
      !Digits(text, 5, 2, &month) || text[7] != '-' || !Digits(text, 8, 2, &day) ||
      (text[10] != 'T' && text[10] != 't') || !Digits(text, 11, 2, &hour) || text[13] != ':' ||
      !Digits(text, 14, 2, &minute) || text[16] != ':' || !Digits(text, 17, 2, &second)) {
    return bad("malformed");
  }
  if (month < 1 || month > 12) return bad("month out of range");
  if (day < 1 || day > DaysInMonth(year, month)) return bad("day out of range");
  if (hour > 23 || minute > 59 || second > 59) return bad("time of day out of range");
  size_t pos = 19;
  int64_t micros = 0;
  if (pos < text.size() && (text[pos] == '.' || text[pos] == ',')) {
    ++pos;
    const size_t start = pos;
    int64_t scale = 100'000;
    while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') {
      micros += (text[pos] - '0') * scale;  // digits past the sixth contribute 0 (truncated)
      scale /= 10;
      ++pos;
    }
    if (pos == start) return bad("empty fraction");
  }
  int64_t offset_minutes = 0;
  if (pos < text.size() && (text[pos] == 'Z' || text[pos] == 'z')) {
    ++pos;
  } else if (pos < text.size() && (text[pos] == '+' || text[pos] == '-')) {
    const int sign = text[pos] == '-' ? -1 : 1;
    int oh, om;
    if (!Digits(text, pos + 1, 2, &oh) || pos + 3 >= text.size() || text[pos + 3] != ':' ||
        !Digits(text, pos + 4, 2, &om)) {
      return bad("malformed zone offset");
    }
    if (oh > 23 || om > 59) return bad("zone offset out of range");
    offset_minutes = sign * (oh * 60 + om);
    pos += 6;
  } else {
    return bad("missing zone (Z or ±hh:mm)");
  }
  if (pos != text.size()) return bad("trailing characters");
  const int64_t days = DaysFromCivil(year, month, day);
  const int64_t seconds =
      days * 86400 + int64_t{hour} * 3600 + int64_t{minute} * 60 + second - offset_minutes * 60;
  return seconds * 1'000'000 + micros;
}

std::string FormatMicroTime(int64_t unix_micros) { return Format(unix_micros, true); }
std::string FormatTime(int64_t unix_micros) { return Format(unix_micros, false); }

}  // namespace taskgov::common
