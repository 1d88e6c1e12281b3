#pragma once

// The taskgov CLI's command tree (issue 13, part 1: the allocation commands):
//
//   taskgov quota create|update TEAM [compute lines] [team flags] [--dry-run[=client|server]]
//   taskgov quota describe TEAM | quota list | quota delete TEAM
//   taskgov policy show | policy set [--task-prioritization] [--idle-compute] [--priority-class]
//   taskgov config validate DIR
//   taskgov completion bash|zsh
//
// The live commands (quota use, top teams) and the job commands add children to this tree.
// Writes go through ApplyEdit (apply.h) to the CLI's own key of the policy ConfigMap
// (owned_policy.h). ConnectApi is how the binary reaches the API server: the kubeconfig (kubectl's
// precedence: --kubeconfig, $KUBECONFIG, ~/.kube/config), else in-cluster, with --context, --as
// and --request-timeout; tests inject their own Environment::connect or use it against the fake
// API server. Thread-compatible.

#include "extender/cli/command.h"

namespace taskgov::cli {

[[nodiscard]] Command TaskgovCommands();

// The policy ConfigMap through the API server the global flags name.
[[nodiscard]] common::Result<std::unique_ptr<ConfigMapStore>> ConnectApi(
    const GlobalOptions& global);

// Runs the CLI as `program` ("taskgov", "kubectl taskgov") over `argv` (without argv[0]).
[[nodiscard]] int RunTaskgov(const std::vector<std::string>& argv, Environment& env);

}  // namespace taskgov::cli
