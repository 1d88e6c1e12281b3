// team-namespaces: the Namespace objects of a policy's teams, labelled for governance, for
// `kubectl apply -f -`. The ValidatingAdmissionPolicy of deploy/base/admission.yaml selects
// namespaces labelled taskgov.io/team (and the extender resolves a pod's team by that label
// too), so labelling a team's namespaces is what puts them under governance.
//
//   team-namespaces POLICY
//
// POLICY is a policy directory (as --config-dir and --check-config take) or a ConfigMap
// manifest whose data keys are the policy's files (deploy/base/policy.yaml). It prints one
// Namespace per namespace a team lists (HyperPod's default hyperpod-ns-<team> included), with
// the label taskgov.io/team=<team> (and the policy's teamResolution.namespaceLabel, when that
// is another key). Teams found only through Kueue LocalQueues, Volcano queues or a pod label
// own no namespace of their own: label their namespaces by hand (deploy/README.md).
//
// Exit codes: 0 printed; 1 the policy is invalid (its first error on stderr); 2 bad usage or an
// unreadable file.

#include <yaml-cpp/yaml.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "config/loader.h"

namespace {

constexpr char kTeamLabel[] = "taskgov.io/team";

int Usage(const std::string& why) {
  std::cerr << "team-namespaces: " << why
            << "\nusage: team-namespaces POLICY (a policy directory, or a ConfigMap manifest "
               "holding the policy's files)\n";
  return 2;
}

// The ConfigMap's data keys as files; an error message when it is not a ConfigMap with data.
std::string ConfigMapFiles(const std::string& path, std::vector<taskgov::config::SourceFile>* out) {
  YAML::Node cm;
  try {
    cm = YAML::LoadFile(path);
  } catch (const YAML::Exception& e) {
    return path + ": not YAML: " + e.what();
  }
  if (!cm.IsMap() || cm["kind"].as<std::string>("") != "ConfigMap") {
    return path + ": not a ConfigMap (give a policy directory or a ConfigMap manifest)";
  }
  if (!cm["data"].IsMap() || cm["data"].size() == 0) return path + ": the ConfigMap has no data";
  for (const auto& entry : cm["data"]) {
    out->push_back({entry.first.as<std::string>(""), entry.second.as<std::string>("")});
  }
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) return Usage(argc < 2 ? "no POLICY given" : "one POLICY only");
  const std::string arg = argv[1];
  if (arg == "--help" || arg == "-h") {
    std::cout << "usage: team-namespaces POLICY\n";
    return 0;
  }
  std::error_code ec;
  taskgov::config::LoadResult result;
  if (std::filesystem::is_directory(arg, ec)) {
    result = taskgov::config::LoadDirectory(arg);
  } else if (std::filesystem::is_regular_file(arg, ec)) {
    std::vector<taskgov::config::SourceFile> files;
    if (std::string error = ConfigMapFiles(arg, &files); !error.empty()) return Usage(error);
    result = taskgov::config::LoadSources(files);
  } else {
    return Usage(arg + ": no such file or directory");
  }
  if (!result.ok()) {
    std::cerr << "team-namespaces: " << arg << ": the policy is invalid: " << result.FirstError()
              << " (taskgov-extender --check-config shows every error)\n";
    return 1;
  }
  const std::string extra = result.policy->team_resolution.namespace_label;
  std::cout << "# The namespaces of the teams of " << arg
            << ", labelled for governance (team-namespaces).\n";
  bool first = true;
  for (const taskgov::scheduler::model::Team& team : result.policy->teams) {
    for (const std::string& ns : team.namespaces) {
      if (!first) std::cout << "---\n";
      first = false;
      std::cout << "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: " << ns
                << "\n  labels:\n    " << kTeamLabel << ": " << team.name << "\n";
      if (!extra.empty() && extra != kTeamLabel)
        std::cout << "    " << extra << ": " << team.name << "\n";
    }
  }
  return 0;
}
