#include "deploy/testing/manifests.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>

#include "gtest/gtest.h"
#include "scheduler/common/testing/process.h"

namespace taskgov::deploy::testing {

std::vector<YAML::Node> Manifests::OfKind(const std::string& kind) const {
  std::vector<YAML::Node> out;
  for (const YAML::Node& o : objects) {
    if (Scalar(o, {"kind"}) == kind) out.push_back(o);
  }
  return out;
}

std::optional<YAML::Node> Manifests::Find(const std::string& kind, const std::string& name) const {
  for (const YAML::Node& o : OfKind(kind)) {
    if (Scalar(o, {"metadata", "name"}) == name) return o;
  }
  return std::nullopt;
}

std::vector<YamlBlock> YamlBlocks(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  const std::string doc = text.str();
  std::vector<YamlBlock> blocks;
  for (size_t at = doc.find("```yaml\n"); at != std::string::npos;
       at = doc.find("```yaml\n", at + 1)) {
    const size_t begin = at + 8;
    const size_t end = doc.find("```", begin);
    if (end == std::string::npos) break;
    const size_t line = std::count(doc.begin(), doc.begin() + static_cast<long>(at), '\n') + 1;
    blocks.push_back({doc.substr(begin, end - begin), line});
  }
  return blocks;
}

common::Result<std::string> DeployCopy() {
  static std::mutex mu;
  static std::string copied;
  std::lock_guard<std::mutex> lock(mu);
  if (!copied.empty()) return copied;
  namespace fs = std::filesystem;
  const fs::path to = fs::path(::testing::TempDir()) / "deploy-copy" / "deploy";
  std::error_code ec;
  fs::remove_all(to.parent_path(), ec);
  fs::create_directories(to.parent_path(), ec);
  // Without copy_symlinks, copy follows the runfiles' symlinks and writes real files.
  fs::copy("deploy", to, fs::copy_options::recursive, ec);
  if (ec)
    return common::Error{"cannot copy the runfiles' deploy/ to " + to.string() + ": " +
                         ec.message()};
  copied = to.string();
  return copied;
}

common::Result<Manifests> RenderDir(const std::string& dir) {
  common::Result<std::string> root = DeployCopy();
  if (!root.ok()) return root.error();
  const std::string what = "kubectl kustomize deploy/" + dir;
  const common::testing::ToolRun run = common::testing::RunToCompletion(
      {kKubectl, "kustomize", *root + "/" + dir}, "", std::chrono::seconds(60));
  if (run.exit_code != 0) {
    return common::Error{what + " failed (exit " + std::to_string(run.exit_code) +
                         "): " + run.output};
  }
  // kubectl writes deprecation warnings as "# Warning: ..." comment lines, which YAML ignores.
  Manifests m;
  m.overlay = dir;
  try {
    for (const YAML::Node& doc : YAML::LoadAll(run.output)) {
      if (doc.IsNull()) continue;
      m.objects.push_back(doc);
    }
  } catch (const YAML::Exception& e) {
    return common::Error{"the output of " + what + " is not YAML: " + e.what()};
  }
  if (m.objects.empty()) return common::Error{what + " rendered nothing"};
  return m;
}

common::Result<Manifests> Render(const std::string& overlay) {
  common::Result<Manifests> m = RenderDir("overlays/" + overlay);
  if (!m.ok()) return m.error();
  common::Result<Manifests> monitoring = RenderDir("monitoring");
  if (!monitoring.ok()) return monitoring.error();
  m->overlay = overlay;
  m->objects.insert(m->objects.end(), monitoring->objects.begin(), monitoring->objects.end());
  return m;
}

std::string Describe(const YAML::Node& object) {
  const std::string ns = Scalar(object, {"metadata", "namespace"});
  return Scalar(object, {"kind"}) + " " + (ns.empty() ? "" : ns + "/") +
         Scalar(object, {"metadata", "name"});
}

std::string Scalar(const YAML::Node& node, const std::vector<std::string>& path) {
  YAML::Node at;
  at.reset(node);
  for (const std::string& key : path) {
    if (!at.IsMap()) return "";
    at.reset(at[key]);  // not operator=, which would overwrite the node at refers to
  }
  return at.IsScalar() ? at.Scalar() : "";
}

std::vector<YAML::Node> Containers(const YAML::Node& deployment) {
  std::vector<YAML::Node> out;
  const YAML::Node list = deployment["spec"]["template"]["spec"]["containers"];
  if (!list.IsSequence()) return out;
  for (const YAML::Node& c : list) out.push_back(c);
  return out;
}

std::optional<YAML::Node> Container(const YAML::Node& deployment, const std::string& name) {
  for (const YAML::Node& c : Containers(deployment)) {
    if (Scalar(c, {"name"}) == name) return c;
  }
  return std::nullopt;
}

std::map<std::string, std::string> Flags(const YAML::Node& container) {
  std::vector<std::string> words;
  if (container["args"] && container["args"].IsSequence()) {
    for (const YAML::Node& a : container["args"]) words.push_back(a.as<std::string>(""));
  } else if (container["command"] && container["command"].IsSequence()) {
    bool first = true;
    for (const YAML::Node& a : container["command"]) {
      if (!first) words.push_back(a.as<std::string>(""));
      first = false;
    }
  }
  std::map<std::string, std::string> out;
  for (const std::string& w : words) {
    if (w.rfind("--", 0) != 0) continue;
    const size_t eq = w.find('=');
    out[w.substr(0, eq)] = eq == std::string::npos ? "" : w.substr(eq + 1);
  }
  return out;
}

bool Selects(const YAML::Node& selector, const YAML::Node& labels) {
  if (!selector.IsMap() || selector.size() == 0 || !labels.IsMap()) return false;
  for (const auto& kv : selector) {
    const std::string key = kv.first.as<std::string>("");
    if (!labels[key].IsScalar() || labels[key].Scalar() != kv.second.as<std::string>("")) {
      return false;
    }
  }
  return true;
}

}  // namespace taskgov::deploy::testing
