#pragma once

// The taskgov CLI's command tree (issue 13: the allocation commands here, the job and live
// commands in job_commands.h):
//
//   taskgov quota create|update TEAM [compute lines] [team flags] [--dry-run[=client|server]]
//   taskgov quota describe TEAM | quota list | quota delete TEAM
//   taskgov policy show | policy set [--task-prioritization] [--idle-compute] [--priority-class]
//   taskgov config validate DIR
//   taskgov completion bash|zsh
//
// Writes go through ApplyEdit (apply.h) to the CLI's own key of the policy ConfigMap
// (owned_policy.h). ConnectApi is how the binary reaches the API server: the kubeconfig (kubectl's
// precedence: --kubeconfig, $KUBECONFIG, ~/.kube/config), else in-cluster, with --context, --as
// and --request-timeout; tests inject their own Environment::connect or use it against the fake
// API server. Thread-compatible.

#include "extender/cli/command.h"

namespace taskgov::cli {

[[nodiscard]] Command TaskgovCommands();

// The API server the global flags name (kubeconfig or in-cluster, --context, --as, timeouts); with
// `server_url`, a client of that URL with the same credentials.
[[nodiscard]] common::Result<std::unique_ptr<scheduler::kube::KubeClient>> ConnectKube(
    const GlobalOptions& global, const std::string& server_url);

// The policy ConfigMap through the API server the global flags name.
[[nodiscard]] common::Result<std::unique_ptr<ConfigMapStore>> ConnectApi(
    const GlobalOptions& global);

// Runs the CLI as `program` ("taskgov", "kubectl taskgov") over `argv` (without argv[0]).
[[nodiscard]] int RunTaskgov(const std::vector<std::string>& argv, Environment& env);

}  // namespace taskgov::cli
