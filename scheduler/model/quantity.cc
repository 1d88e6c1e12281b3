#include "scheduler/model/quantity.h"

#include <limits>
#include <optional>
#include <utility>
#include <vector>

namespace taskgov::scheduler::model {
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

common::Error UnknownSuffix(std::string_view text, std::string_view suffix) {
  return Bad(text, "unknown suffix '" + std::string(suffix) + "'");
}

// The significant digits of a mantissa `digits [. digits]`, leading zeros dropped (empty for
// zero), and how many of them stood after the point.
struct Mantissa {
  std::string digits;
  int64_t frac = 0;
};

// Reads a mantissa from text[*pos] on and advances *pos past it; nullopt when it has no digit.
std::optional<Mantissa> ParseMantissa(std::string_view text, size_t* pos) {
  Mantissa m;
  bool seen_digit = false;
  bool seen_point = false;
  for (; *pos < text.size(); ++*pos) {
    char c = text[*pos];
    if (IsDigit(c)) {
      seen_digit = true;
      if (!(m.digits.empty() && c == '0')) m.digits.push_back(c);  // drop leading zeros
      if (seen_point) ++m.frac;
    } else if (c == '.' && !seen_point) {
      seen_point = true;
    } else {
      break;
    }
  }
  if (!seen_digit) return std::nullopt;
  return m;
}

// The factor a suffix stands for: 10^exp10 * 2^exp2.
struct Scale {
  int64_t exp10 = 0;
  int exp2 = 0;
};

constexpr std::pair<char, int64_t> kDecimalSuffixes[] = {
    {'n', -9}, {'u', -6}, {'m', -3}, {'k', 3}, {'M', 6}, {'G', 9}, {'T', 12}, {'P', 15}, {'E', 18},
};

// The exponent of a suffix `e±N` / `E±N` (at most six digits).
common::Result<int64_t> ParseExponent(std::string_view text, std::string_view suffix) {
  std::string_view e = suffix.substr(1);
  bool e_negative = false;
  if (!e.empty() && (e[0] == '+' || e[0] == '-')) {
    e_negative = e[0] == '-';
    e.remove_prefix(1);
  }
  if (e.empty()) return Bad(text, "exponent without digits");
  for (char c : e) {
    if (!IsDigit(c)) return UnknownSuffix(text, suffix);
  }
  int64_t magnitude = 0;
  if (e.size() > 6 || !DigitsToInt(e, &magnitude)) return Bad(text, "exponent out of range");
  return e_negative ? -magnitude : magnitude;
}

// The scale of a suffix: none, binary (Ki..Ei), decimal (n..E) or a decimal exponent.
common::Result<Scale> ParseSuffix(std::string_view text, std::string_view suffix) {
  if (suffix.empty()) return Scale{};
  if (suffix.size() == 2 && suffix[1] == 'i') {
    static constexpr std::string_view kBinary = "KMGTPE";
    size_t i = kBinary.find(suffix[0]);
    if (i == std::string_view::npos) return UnknownSuffix(text, suffix);
    return Scale{.exp2 = 10 * static_cast<int>(i + 1)};
  }
  if (suffix.size() == 1) {
    for (const auto& [letter, exp10] : kDecimalSuffixes) {
      if (suffix[0] == letter) return Scale{.exp10 = exp10};
    }
    return UnknownSuffix(text, suffix);
  }
  if (suffix[0] == 'e' || suffix[0] == 'E') {
    common::Result<int64_t> exp10 = ParseExponent(text, suffix);
    if (!exp10.ok()) return exp10.error();
    return Scale{.exp10 = *exp10};
  }
  return UnknownSuffix(text, suffix);
}

// digits * 10^exp10 * 2^exp2 for exp10 >= 0: an exact integer, or "too large".
common::Result<int64_t> ScaleUp(std::string_view text, std::string_view digits, int64_t exp10,
                                int exp2) {
  if (static_cast<int64_t>(digits.size()) + exp10 > 19) return Bad(text, "too large");
  int64_t v = 0;
  if (!DigitsToInt(digits, &v)) return Bad(text, "too large");
  for (int64_t i = 0; i < exp10; ++i) {
    if (MulOverflow(v, 10, &v)) return Bad(text, "too large");
  }
  if (exp2 > 0 && (v > (kMax >> exp2))) return Bad(text, "too large");
  return v << exp2;
}

// Multiplies the decimal fraction (one digit an element) by 2^exp2 in place, one doubling at a
// time; returns what carried out of it into the integer part.
int64_t DoubleFraction(std::vector<uint8_t>& fraction, int exp2) {
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
  return carried;
}

// digits * 10^-m * 2^exp2 for m > 0, rounded up to a whole unit, or "too large".
common::Result<int64_t> ScaleDownRoundingUp(std::string_view text, std::string_view digits,
                                            int64_t m, int exp2) {
  const int64_t len = static_cast<int64_t>(digits.size());
  if (m >= len + 20) return int64_t{1};  // 0 < value < 10^-20 * 2^60 < 1: rounds up to one unit
  // Split into the integer part and the fraction (left-padded to m digits).
  std::string_view int_digits = len > m ? digits.substr(0, static_cast<size_t>(len - m)) : "";
  std::vector<uint8_t> fraction;
  fraction.reserve(static_cast<size_t>(m));
  for (int64_t i = 0; i < m - len; ++i) fraction.push_back(0);
  for (char c : (len > m ? digits.substr(static_cast<size_t>(len - m)) : digits)) {
    fraction.push_back(static_cast<uint8_t>(c - '0'));
  }
  int64_t integer = 0;
  if (int_digits.size() > 19 || !DigitsToInt(int_digits, &integer)) return Bad(text, "too large");
  if (exp2 > 0 && integer > (kMax >> exp2)) return Bad(text, "too large");
  integer <<= exp2;
  const int64_t carried = DoubleFraction(fraction, exp2);
  bool remainder = false;
  for (uint8_t d : fraction) remainder |= d != 0;
  int64_t result = 0;
  if (AddOverflow(integer, carried, &result) || (remainder && AddOverflow(result, 1, &result))) {
    return Bad(text, "too large");
  }
  return result;
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
  std::optional<Mantissa> mantissa = ParseMantissa(text, &pos);
  if (!mantissa) return Bad(text, "no digits");
  common::Result<Scale> scale = ParseSuffix(text, text.substr(pos));
  if (!scale.ok()) return scale.error();
  if (mantissa->digits.empty()) return int64_t{0};  // zero in any unit, whatever the sign
  if (negative) return Bad(text, "negative quantities are not allowed");

  // value = digits * 10^exp10 * 2^exp2, rounded up.
  int64_t exp10 = scale->exp10 - mantissa->frac;
  if (unit == QuantityUnit::kMillis) exp10 += 3;
  if (exp10 >= 0) return ScaleUp(text, mantissa->digits, exp10, scale->exp2);
  return ScaleDownRoundingUp(text, mantissa->digits, -exp10, scale->exp2);
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

double InBaseUnits(std::string_view resource, double canonical) {
  return CanonicalUnit(resource) == QuantityUnit::kMillis ? canonical / 1000.0 : canonical;
}

}  // namespace taskgov::scheduler::model
