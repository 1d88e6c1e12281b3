#pragma once

// The cluster of the topology scenario tests (issue 37): 32 ml.p5.48xlarge nodes p5-0..p5-31 of
// 8 GPUs in 2 network-node-layer-1 × 4 network-node-layer-2 × 4 nodes, a network-node-layer-3
// domain every 2 nodes, labelled as HyperPod labels them (topology.k8s.aws/network-node-layer-1..3;
// kubernetes.io/hostname is the node's name). Node n is in layer-1 domain "nn-l1-<n/16>", layer-2
// domain "spine-<n/4>" and layer-3 domain "nn-l3-<n/2>". Test support.

#include <string>
#include <utility>
#include <vector>

#include "e2e/harness.h"
#include "e2e/scenario_test_util.h"

namespace taskgov::e2e {

inline constexpr char kLayer1[] = "topology.k8s.aws/network-node-layer-1";
inline constexpr char kLayer2[] = "topology.k8s.aws/network-node-layer-2";
inline constexpr char kLayer3[] = "topology.k8s.aws/network-node-layer-3";

// One team a with the whole cluster's GPUs, lending nothing.
inline constexpr char kOneTeamTopologyPolicy[] = R"(apiVersion: taskgov.io/v1
kind: TaskGovernancePolicy
taskPrioritization: TaskRanking
priorityClasses:
  - {name: training, weight: 50}
teams:
  - name: a
    sharing: {strategy: DontLend}
    compute: [{instanceType: ml.p5.48xlarge, accelerators: 256}]
)";

inline std::string NodeName(int n) { return "p5-" + std::to_string(n); }
inline std::string Spine(int n) { return "spine-" + std::to_string(n / 4); }
inline std::string Layer3(int n) { return "nn-l3-" + std::to_string(n / 2); }
// n of "p5-n".
inline int NodeNumber(const std::string& node) { return std::stoi(node.substr(3)); }

// The harness options of the cluster under `policy`, with the namespaces of `teams`.
inline HarnessOptions TopologyCluster(const std::string& policy,
                                      const std::vector<std::string>& teams) {
  HarnessOptions options;
  options.sample_cluster = false;
  options.config["policy.yaml"] = policy;
  for (const std::string& team : teams) options.namespaces.push_back(Ns(team));
  for (int n = 0; n < 32; ++n) {
    NodeSpec node;
    node.name = NodeName(n);
    node.instance_type = kP5;
    node.allocatable = {{"cpu", 192'000}, {"pods", 110}, {kGpu, 8}};
    node.labels = {
        {kLayer1, "nn-l1-" + std::to_string(n / 16)}, {kLayer2, Spine(n)}, {kLayer3, Layer3(n)}};
    options.nodes.push_back(std::move(node));
  }
  return options;
}

}  // namespace taskgov::e2e
