#pragma once

// Kubernetes name syntax (k8s.io/apimachinery/pkg/util/validation), as pure predicates: what
// the API server accepts as an object name, a label key and a label value. Used to validate
// configuration and to parse node selectors the way the scheduler does.
//
// Pure functions; thread-safe.

#include <cstddef>
#include <string_view>

namespace taskgov::common {

// A DNS-1123 label: [a-z0-9]([-a-z0-9]*[a-z0-9])?, at most `max_length` characters.
[[nodiscard]] bool IsDnsLabel(std::string_view name, size_t max_length = 63);
// A DNS-1123 subdomain: DNS-1123 labels (of any length) joined by dots, at most 253 characters.
[[nodiscard]] bool IsDnsSubdomain(std::string_view name);
// A qualified name, as label keys are: an optional DNS-1123 subdomain prefix and a slash, then
// ([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9] of at most 63 characters.
[[nodiscard]] bool IsQualifiedName(std::string_view name);
// A label value: empty, or ([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9] of at most 63 characters.
[[nodiscard]] bool IsLabelValue(std::string_view value);
// A resource name a container may request, as the API server validates it: a qualified name;
// without a domain prefix one of the standard ones (cpu, memory, ephemeral-storage,
// hugepages-<size>, and pods, which Kueue quotas count).
[[nodiscard]] bool IsResourceName(std::string_view name);

}  // namespace taskgov::common
