#include "scheduler/common/k8s_names.h"

#include <algorithm>

namespace taskgov::common {
namespace {

bool IsAlnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

bool IsLowerAlnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }

// ([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9], 1 to 63 characters.
bool IsNamePart(std::string_view name) {
  if (name.empty() || name.size() > 63) return false;
  if (!IsAlnum(name.front()) || !IsAlnum(name.back())) return false;
  return std::all_of(name.begin(), name.end(),
                     [](char c) { return IsAlnum(c) || c == '-' || c == '_' || c == '.'; });
}

}  // namespace

bool IsDnsLabel(std::string_view name, size_t max_length) {
  if (name.empty() || name.size() > max_length) return false;
  if (!IsLowerAlnum(name.front()) || !IsLowerAlnum(name.back())) return false;
  return std::all_of(name.begin(), name.end(), [](char c) { return IsLowerAlnum(c) || c == '-'; });
}

bool IsDnsSubdomain(std::string_view name) {
  if (name.empty() || name.size() > 253) return false;
  size_t start = 0;
  while (true) {
    const size_t dot = name.find('.', start);
    const std::string_view label =
        name.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start);
    if (!IsDnsLabel(label, 253)) return false;
    if (dot == std::string_view::npos) return true;
    start = dot + 1;
  }
}

bool IsQualifiedName(std::string_view name) {
  const size_t slash = name.find('/');
  if (slash == std::string_view::npos) return IsNamePart(name);
  if (name.find('/', slash + 1) != std::string_view::npos) return false;
  return IsDnsSubdomain(name.substr(0, slash)) && IsNamePart(name.substr(slash + 1));
}

bool IsLabelValue(std::string_view value) { return value.empty() || IsNamePart(value); }

bool IsResourceName(std::string_view name) {
  if (!IsQualifiedName(name)) return false;
  if (name.find('/') != std::string_view::npos) return true;
  return name == "cpu" || name == "memory" || name == "ephemeral-storage" || name == "pods" ||
         (name.starts_with("hugepages-") && name.size() > 10);
}

}  // namespace taskgov::common
