#include "extender/cli/diff.h"

#include <algorithm>
#include <vector>

namespace taskgov::cli {

namespace {

std::vector<std::string_view> Lines(std::string_view text) {
  std::vector<std::string_view> out;
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    out.push_back(text.substr(0, nl));
    if (nl == std::string_view::npos) break;
    text.remove_prefix(nl + 1);
  }
  return out;
}

struct Op {
  char kind;  // ' ', '-', '+'
  std::string_view line;
  size_t a, b;  // 0-based line numbers in before / after
};

std::vector<Op> Script(const std::vector<std::string_view>& a,
                       const std::vector<std::string_view>& b) {
  const size_t n = a.size(), m = b.size();
  std::vector<std::vector<int>> lcs(n + 1, std::vector<int>(m + 1, 0));
  for (size_t i = n; i-- > 0;) {
    for (size_t j = m; j-- > 0;) {
      lcs[i][j] = a[i] == b[j] ? lcs[i + 1][j + 1] + 1 : std::max(lcs[i + 1][j], lcs[i][j + 1]);
    }
  }
  std::vector<Op> ops;
  size_t i = 0, j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && a[i] == b[j]) {
      ops.push_back({' ', a[i], i, j});
      ++i, ++j;
    } else if (i < n && (j == m || lcs[i + 1][j] >= lcs[i][j + 1])) {
      ops.push_back({'-', a[i], i, j});
      ++i;
    } else {
      ops.push_back({'+', b[j], i, j});
      ++j;
    }
  }
  return ops;
}

void AppendHunk(const std::vector<Op>& ops, size_t first, size_t last, std::string* out) {
  size_t a_count = 0, b_count = 0;
  for (size_t k = first; k < last; ++k) {
    if (ops[k].kind != '+') ++a_count;
    if (ops[k].kind != '-') ++b_count;
  }
  auto start = [](size_t line, size_t count) { return count == 0 ? line : line + 1; };
  *out += "@@ -" + std::to_string(start(ops[first].a, a_count)) + "," + std::to_string(a_count) +
          " +" + std::to_string(start(ops[first].b, b_count)) + "," + std::to_string(b_count) +
          " @@\n";
  for (size_t k = first; k < last; ++k) {
    *out += ops[k].kind;
    *out += ops[k].line;
    *out += '\n';
  }
}

}  // namespace

std::string UnifiedDiff(std::string_view before, std::string_view after,
                        std::string_view before_label, std::string_view after_label, int context) {
  if (before == after) return "";
  const std::vector<Op> ops = Script(Lines(before), Lines(after));
  std::string out = "--- " + std::string(before_label) + "\n+++ " + std::string(after_label) + "\n";
  const size_t ctx = static_cast<size_t>(std::max(context, 0));
  size_t k = 0;
  while (k < ops.size()) {
    while (k < ops.size() && ops[k].kind == ' ') ++k;
    if (k == ops.size()) break;
    const size_t first = k >= ctx ? k - ctx : 0;
    size_t last = k;
    // Extend over changes closer than 2 × context apart.
    while (last < ops.size()) {
      size_t run = 0;
      while (last + run < ops.size() && ops[last + run].kind == ' ') ++run;
      if (last + run == ops.size() || run > 2 * ctx) {
        last = std::min(ops.size(), last + std::min(run, ctx));
        break;
      }
      last += run;
      while (last < ops.size() && ops[last].kind != ' ') ++last;
    }
    AppendHunk(ops, first, last, &out);
    k = last;
  }
  return out;
}

}  // namespace taskgov::cli
