#pragma once

// CliFixture: the taskgov CLI run in-process against the fake API server, as a user runs it —
// through a kubeconfig file naming the server (the product's kubeconfig loader and KubeClient),
// with the policy ConfigMap taskgov-system/taskgov-config stored in the fake. Test support.
//
// Thread-compatible: one test thread drives it (the fake API server has threads of its own).

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "scheduler/kube/testing/fake_apiserver.h"

namespace taskgov::cli::testing {

struct CliRun {
  int code = -1;
  std::string out;
  std::string err;
};

// The ConfigMap's data: key → content.
using ConfigData = std::map<std::string, std::string>;

class CliFixture {
 public:
  CliFixture();
  explicit CliFixture(scheduler::kube::testing::FakeApiServerOptions options);
  ~CliFixture();

  // Starts the fake API server and writes the kubeconfig; false (with the test failed) on error.
  [[nodiscard]] bool Start();
  // `taskgov <args>` with --kubeconfig added.
  CliRun Run(std::vector<std::string> args);
  // `taskgov <args>` as given (for usage errors that must not reach the API).
  static CliRun RunOffline(const std::vector<std::string>& args);
  // `taskgov <args>` with --kubeconfig added, on a terminal that answers `input`.
  CliRun RunAnswering(std::vector<std::string> args, const std::string& input);

  // Stores taskgov-system/taskgov-config with `data` (replacing it).
  void PutConfigMap(const ConfigData& data);
  // Its data now; empty when it does not exist.
  [[nodiscard]] ConfigData Data() const;
  [[nodiscard]] std::string ResourceVersion() const;
  // Requests to the ConfigMap's paths, as "METHOD target".
  [[nodiscard]] std::vector<std::string> ConfigMapRequests() const;

  scheduler::kube::testing::FakeApiServer& api() { return *api_; }
  [[nodiscard]] const std::string& kubeconfig() const { return kubeconfig_; }

 private:
  scheduler::kube::testing::FakeApiServerOptions options_;
  std::unique_ptr<scheduler::kube::testing::FakeApiServer> api_;
  std::string dir_;
  std::string kubeconfig_;
};

// An in-process admin API for the service proxy: GET /api/v1/teams answers `teams_json` (with
// ?namespace=, the teams that list that namespace, as the extender resolves a namespace a team
// names); GET /api/v1/workloads answers the items of `workloads_json` that match its namespace,
// team and state parameters (as the extender filters them; one page); GET
// /api/v1/workloads/{ns}/{name}/explanation answers explanations["ns/name"]; GET /api/v1/policy
// answers `policy_json` when given; anything else 404.
[[nodiscard]] scheduler::kube::testing::ServiceHandler AdminApiFixture(
    std::string teams_json, std::string workloads_json,
    std::map<std::string, std::string> explanations = {}, std::string policy_json = "");

// A hand-written HyperPod CreateComputeQuota for `team` (JSON, exact AWS field names).
[[nodiscard]] std::string HyperPodQuotaJson(const std::string& team, const std::string& type,
                                            int count);

}  // namespace taskgov::cli::testing
