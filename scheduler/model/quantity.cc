#include "scheduler/model/quantity.h"

#include <limits>
#include <vector>

namespace taskgov::scheduler {
namespace {

constexpr size_t kMaxQuantityLength = 64;
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

common::Error Bad(std::string_view text, std::string_view why) {
  return common::Error{"invalid quantity '" + std::string(text) + "': " + std::string(why)};
}

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// a * b with overflow detection.
bool MulOverflow(int64_t a, int64_t b, int64_t* out) { return __builtin_mul_overflow(a, b, out); }
bool AddOverflow(int64_t a, int64_t b, int64_t* out) { return __builtin_add_overflow(a, b, out); }

// Parses a string of decimal digits (no sign) into an int64; false on overflow.
bool DigitsToInt(std::string_view digits, int64_t* out) {
  int64_t v = 0;
  for (char c : digits) {
    if (MulOverflow(v, 10, &v) || AddOverflow(v, c - '0', &v)) return false;
  }
  *out = v;
  return true;
}

}  // namespace

QuantityUnit CanonicalUnit(std::string_view resource) {
  return resource == "cpu" ? QuantityUnit::kMillis : QuantityUnit::kUnits;
}

common::Result<int64_t> ParseQuantity(std::string_view text, QuantityUnit unit) {
  if (text.empty()) return common::Error{"invalid quantity '': empty"};
  if (text.size() > kMaxQuantityLength) {
    return common::Error{"invalid quantity '" + std::string(text.substr(0, 24)) +
                         "...': longer than " + std::to_string(kMaxQuantityLength) + " characters"};
  }
  size_t pos = 0;
  bool negative = false;
  if (text[pos] == '+' || text[pos] == '-') {
    negative = text[pos] == '-';
    ++pos;
  }
  // Mantissa: digits [. digits]; all significant digits go to `digits`, `frac` counts those
  // after the point.
  std::string digits;
  int64_t frac = 0;
  bool seen_digit = false;
  bool seen_point = false;
  for (; pos < text.size(); ++pos) {
    char c = text[pos];
    if (IsDigit(c)) {
      seen_digit = true;
      if (!(digits.empty() && c == '0')) digits.push_back(c);  // drop leading zeros
      if (seen_point) ++frac;
    } else if (c == '.' && !seen_point) {
      seen_point = true;
    } else {
      break;
    }
  }
  if (!seen_digit) return Bad(text, "no digits");
  // Suffix.
  std::string_view suffix = text.substr(pos);
  int64_t exp10 = 0;
  int exp2 = 0;
  if (suffix.empty()) {
  } else if (suffix.size() == 2 && suffix[1] == 'i') {
    static constexpr std::string_view kBinary = "KMGTPE";
    size_t i = kBinary.find(suffix[0]);
    if (i == std::string_view::npos)
      return Bad(text, "unknown suffix '" + std::string(suffix) + "'");
    exp2 = 10 * static_cast<int>(i + 1);
  } else if (suffix.size() == 1) {
    switch (suffix[0]) {
      case 'n':
        exp10 = -9;
        break;
      case 'u':
        exp10 = -6;
        break;
      case 'm':
        exp10 = -3;
        break;
      case 'k':
        exp10 = 3;
        break;
      case 'M':
        exp10 = 6;
        break;
      case 'G':
        exp10 = 9;
        break;
      case 'T':
        exp10 = 12;
        break;
      case 'P':
        exp10 = 15;
        break;
      case 'E':
        exp10 = 18;
        break;
      default:
        return Bad(text, "unknown suffix '" + std::string(suffix) + "'");
    }
  } else if (suffix[0] == 'e' || suffix[0] == 'E') {
    std::string_view e = suffix.substr(1);
    bool e_negative = false;
    if (!e.empty() && (e[0] == '+' || e[0] == '-')) {
      e_negative = e[0] == '-';
      e.remove_prefix(1);
    }
    if (e.empty()) return Bad(text, "exponent without digits");
    for (char c : e) {
      if (!IsDigit(c)) return Bad(text, "unknown suffix '" + std::string(suffix) + "'");
    }
    int64_t magnitude = 0;
    if (e.size() > 6 || !DigitsToInt(e, &magnitude)) return Bad(text, "exponent out of range");
    exp10 = e_negative ? -magnitude : magnitude;
  } else {
    return Bad(text, "unknown suffix '" + std::string(suffix) + "'");
  }
  if (digits.empty()) return int64_t{0};  // zero in any unit, whatever the sign
  if (negative) return Bad(text, "negative quantities are not allowed");

  exp10 -= frac;
  if (unit == QuantityUnit::kMillis) exp10 += 3;
  const int64_t len = static_cast<int64_t>(digits.size());

  // value = digits * 10^exp10 * 2^exp2, rounded up.
  if (exp10 >= 0) {
    if (len + exp10 > 19) return Bad(text, "too large");
    int64_t v = 0;
    if (!DigitsToInt(digits, &v)) return Bad(text, "too large");
    for (int64_t i = 0; i < exp10; ++i) {
      if (MulOverflow(v, 10, &v)) return Bad(text, "too large");
    }
    if (exp2 > 0 && (v > (kMax >> exp2))) return Bad(text, "too large");
    return v << exp2;
  }
  const int64_t m = -exp10;              // digits after the (shifted) point
  if (m >= len + 20) return int64_t{1};  // 0 < value < 10^-20 * 2^60 < 1: rounds up to one unit
  // Split into the integer part and the fraction (left-padded to m digits).
  std::string_view all(digits);
  std::string_view int_digits = len > m ? all.substr(0, static_cast<size_t>(len - m)) : "";
  std::vector<uint8_t> fraction;
  fraction.reserve(static_cast<size_t>(m));
  for (int64_t i = 0; i < m - len; ++i) fraction.push_back(0);
  for (char c : (len > m ? all.substr(static_cast<size_t>(len - m)) : all)) {
    fraction.push_back(static_cast<uint8_t>(c - '0'));
  }
  int64_t integer = 0;
  if (int_digits.size() > 19 || !DigitsToInt(int_digits, &integer)) return Bad(text, "too large");
  if (exp2 > 0 && integer > (kMax >> exp2)) return Bad(text, "too large");
  integer <<= exp2;
  // Multiply the decimal fraction by 2^exp2 one doubling at a time; carries out of the fraction
  // accumulate in `carried`.
  int64_t carried = 0;
  for (int step = 0; step < exp2; ++step) {
    int carry = 0;
    for (size_t i = fraction.size(); i-- > 0;) {
      int d = fraction[i] * 2 + carry;
      fraction[i] = static_cast<uint8_t>(d % 10);
      carry = d / 10;
    }
    carried = carried * 2 + carry;
  }
  bool remainder = false;
  for (uint8_t d : fraction) remainder |= d != 0;
  int64_t result = 0;
  if (AddOverflow(integer, carried, &result) || (remainder && AddOverflow(result, 1, &result))) {
    return Bad(text, "too large");
  }
  return result;
}

std::string FormatQuantity(std::string_view resource, int64_t amount) {
  if (resource == "cpu") {
    if (amount % 1000 == 0) return std::to_string(amount / 1000);
    return std::to_string(amount) + "m";
  }
  if (resource == "memory" || resource == "ephemeral-storage") {
    static constexpr std::pair<int, const char*> kUnits[] = {{60, "Ei"}, {50, "Pi"}, {40, "Ti"},
                                                             {30, "Gi"}, {20, "Mi"}, {10, "Ki"}};
    for (const auto& [shift, name] : kUnits) {
      const int64_t unit = int64_t{1} << shift;
      if (amount != 0 && amount % unit == 0) return std::to_string(amount / unit) + name;
    }
  }
  return std::to_string(amount);
}

}  // namespace taskgov::scheduler
