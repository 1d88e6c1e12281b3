#pragma once

// The install's manifests as the cluster would receive them: `kubectl kustomize` of an overlay
// (Debian's `kubernetes-client`, or any kubectl with kustomize; an absolute path, like promtool:
// a system binary cannot be a Bazel data dependency), parsed into one YAML node per object, and
// the lookups the install tests share (objects by kind and name, containers, the extender's
// arguments, label selectors). Test support.
//
// The overlays are rendered from a copy of deploy/ with the runfiles' symlinks resolved:
// kustomize refuses files whose real path is outside the kustomization's root.
//
// Failures are values: Render() returns an error naming the overlay and kubectl's output.
// Thread-safety: plain functions and values.

#include <yaml-cpp/yaml.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "scheduler/common/result.h"

namespace taskgov::deploy::testing {

inline constexpr char kKubectl[] = "/usr/bin/kubectl";

// The overlays an operator applies (deploy/overlays/<name>).
inline const std::vector<std::string>& Overlays() {
  static const std::vector<std::string> overlays = {"second-scheduler", "extender-service",
                                                    "extender-service-cert-manager"};
  return overlays;
}

// The rendered objects of one overlay.
struct Manifests {
  std::string overlay;
  std::vector<YAML::Node> objects;

  // Objects of `kind` (all of them, in output order).
  [[nodiscard]] std::vector<YAML::Node> OfKind(const std::string& kind) const;
  // The one object of `kind` named `name` (any namespace); nullopt when absent.
  [[nodiscard]] std::optional<YAML::Node> Find(const std::string& kind,
                                               const std::string& name) const;
};

// Copies the runfiles' deploy/ (symlinks resolved) into `dir` once per process and returns the
// copy's path.
[[nodiscard]] common::Result<std::string> DeployCopy();

// `kubectl kustomize deploy/<dir>`, parsed (dir: "monitoring", "overlays/second-scheduler").
[[nodiscard]] common::Result<Manifests> RenderDir(const std::string& dir);

// What an operator installs for an overlay: `kubectl kustomize deploy/overlays/<overlay>` and
// `deploy/monitoring`, parsed (Manifests::overlay is `overlay`).
[[nodiscard]] common::Result<Manifests> Render(const std::string& overlay);

// "kind namespace/name" (or "kind name"), for messages.
[[nodiscard]] std::string Describe(const YAML::Node& object);

// The string at a path of map keys; "" when any step is missing or not a scalar.
[[nodiscard]] std::string Scalar(const YAML::Node& node, const std::vector<std::string>& path);

// The containers of a workload's pod template.
[[nodiscard]] std::vector<YAML::Node> Containers(const YAML::Node& deployment);

// The container named `name` of a Deployment; nullopt when absent.
[[nodiscard]] std::optional<YAML::Node> Container(const YAML::Node& deployment,
                                                  const std::string& name);

// A container's args (or, without args, its command after argv[0]) as "--flag" → value ("" for
// a bare flag).
[[nodiscard]] std::map<std::string, std::string> Flags(const YAML::Node& container);

// A fenced ```yaml block of a Markdown file: its text and the line of its opening fence.
struct YamlBlock {
  std::string text;
  size_t line = 0;
};
// The ```yaml blocks of the Markdown file at `path` (relative to the runfiles), in order; none
// when it cannot be read.
[[nodiscard]] std::vector<YamlBlock> YamlBlocks(const std::string& path);

// Whether `selector` (a map of labels, e.g. spec.selector or matchLabels) selects `labels`.
[[nodiscard]] bool Selects(const YAML::Node& selector, const YAML::Node& labels);

}  // namespace taskgov::deploy::testing
