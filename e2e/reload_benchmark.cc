// Issue 36's reload benchmark: what a reload of a 1 MiB policy ConfigMap costs the filters that
// run meanwhile, through the real extender against the fake API server.
//
// One kept-alive client (kube-scheduler's shape) filters a pod of team a every 2 ms on the
// sample cluster's p5 nodes and times each call from its send to its reply. Six times: it runs
// 3 s with the policy unchanged (the "unloaded" sample), then the policy is rewritten,
// alternately with two 1 MiB variants (the kubelet's ..data swap), and the calls from the write
// until 1 s after the extender's "policy loaded" line for it are the "during reload" sample.
// Interleaving the two samples spreads the machine's other load over both. The policy keeps teams a
// and b (the filtered pod's team) and adds, per variant: 3,000 Kueue ResourceFlavors, 20
// ClusterQueues of 250 flavors in two resource groups (cpu and memory on a flavor every node
// belongs to: companion cells), and a tree of 1,500 cohorts. Prints one table; exits non-zero when
// an unloaded call failed.
//
//   bazel run -c opt //e2e:reload_benchmark
//
// Goal (issue 36, item 3): filter p99 during the reloads within 2x of the unloaded p99.

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "e2e/harness.h"
#include "scheduler/common/testing/http_client.h"

namespace taskgov::e2e {
namespace {

using Clock = std::chrono::steady_clock;

constexpr char kTeams[] = R"(apiVersion: taskgov.io/v1
kind: TaskGovernancePolicy
taskPrioritization: TaskRanking
idleComputeAllocation: FairShare
priorityClasses:
  - {name: training, weight: 50}
defaultCohort: e2e
teams:
  - name: a
    sharing: {strategy: LendAndBorrow, borrowLimit: 100}
    compute: [{instanceType: ml.p5.48xlarge, accelerators: 8}]
  - name: b
    sharing: {strategy: LendAndBorrow, borrowLimit: 100}
    compute: [{instanceType: ml.p5.48xlarge, accelerators: 8}]
)";

// About 1 MiB of Kueue documents; `variant` changes every quota (so each write is new content).
std::string LargePolicy(int variant) {
  std::string y;
  y += "---\napiVersion: kueue.x-k8s.io/v1beta1\nkind: ResourceFlavor\nmetadata: {name: any}\n";
  constexpr int kFlavors = 3000, kQueues = 20, kPerQueue = 250, kCohorts = 1500;
  for (int i = 0; i < kFlavors; ++i) {
    const std::string n = std::to_string(i);
    y += "---\napiVersion: kueue.x-k8s.io/v1beta1\nkind: ResourceFlavor\nmetadata: {name: rf-" + n +
         "}\nspec: {nodeLabels: {node.kubernetes.io/instance-type: rf-" + n + "}}\n";
  }
  for (int c = 0; c < kCohorts; ++c) {
    y += "---\napiVersion: kueue.x-k8s.io/v1beta1\nkind: Cohort\nmetadata: {name: co-" +
         std::to_string(c) + "}\n" +
         (c > 0 ? "spec: {parentName: co-" + std::to_string((c - 1) / 4) + "}\n" : "");
  }
  for (int q = 0; q < kQueues; ++q) {
    y += "---\napiVersion: kueue.x-k8s.io/v1beta1\nkind: ClusterQueue\nmetadata: {name: cq-" +
         std::to_string(q) + "}\nspec:\n  cohort: co-" + std::to_string(kCohorts - 1 - q) +
         "\n  namespaceSelector: {}\n  resourceGroups:\n  - coveredResources: [cpu, memory]\n"
         "    flavors:\n    - name: any\n      resources: [{name: cpu, nominalQuota: " +
         std::to_string(100 + variant) +
         "}, {name: memory, nominalQuota: 100Gi}]\n  - coveredResources: [nvidia.com/gpu]\n"
         "    flavors:\n";
    for (int f = 0; f < kPerQueue; ++f) {
      y += "    - name: rf-" + std::to_string((q * kPerQueue + f) % kFlavors) +
           "\n      resources: [{name: nvidia.com/gpu, nominalQuota: " +
           std::to_string(8 + variant) + "}]\n";
    }
  }
  return y;
}

std::string FilterBody() {
  return R"({"Pod":{"metadata":{"name":"bench","namespace":"hyperpod-ns-a","uid":"bench-uid",)"
         R"("creationTimestamp":"2026-12-01T00:00:00Z","labels":{"kueue.x-k8s.io/priority-class":)"
         R"("training"}},"spec":{"schedulerName":"taskgov","nodeSelector":{)"
         R"("node.kubernetes.io/instance-type":"ml.p5.48xlarge"},"containers":[{"name":"c",)"
         R"("resources":{"requests":{"nvidia.com/gpu":"1"}}}]}},"Nodes":null,)"
         R"("NodeNames":["hyperpod-p5-0","hyperpod-p5-1"]})";
}

struct Sample {
  std::vector<double> ms;
  int failures = 0;
};

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))];
}

// Filters every 2 ms until `until` returns true; each call's latency in ms.
Sample Filter(common::testing::HttpClient& client, const std::function<bool()>& until) {
  Sample out;
  const std::string body = FilterBody();
  auto next = Clock::now();
  while (!until()) {
    next += std::chrono::milliseconds(2);
    std::this_thread::sleep_until(next);
    const auto start = Clock::now();
    common::Result<common::testing::HttpReply> r = client.Post("/filter", body);
    const double ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
    if (!r.ok() || r->status != 200) ++out.failures;
    out.ms.push_back(ms);
    if (Clock::now() > next + std::chrono::milliseconds(50)) next = Clock::now();
  }
  return out;
}

void PrintRow(const char* phase, const Sample& s) {
  printf("| %-22s | %7zu | %8.3f | %8.3f | %8.3f | %8d |\n", phase, s.ms.size(),
         Percentile(s.ms, 0.5), Percentile(s.ms, 0.99),
         s.ms.empty() ? 0.0 : *std::max_element(s.ms.begin(), s.ms.end()), s.failures);
}

int Run(const std::string& binary) {
  HarnessOptions options;
  options.extender_binary = binary;
  options.config["policy.yaml"] = kTeams;
  Harness harness(options);
  if (common::Status s = harness.Start(); !s.ok()) {
    fprintf(stderr, "harness: %s\n", s.error().message.c_str());
    return 1;
  }
  ExtenderProcess& extender = harness.extender();
  common::testing::HttpClient client("127.0.0.1", extender.webhook_port());
  (void)Filter(client, [end = Clock::now() + std::chrono::seconds(2)] {
    return Clock::now() > end;
  });  // warm-up
  Sample unloaded;
  Sample reloading;
  std::vector<double> reload_ms;
  const size_t policy_bytes = LargePolicy(0).size() + sizeof(kTeams);
  auto add = [](Sample* to, const Sample& from) {
    to->ms.insert(to->ms.end(), from.ms.begin(), from.ms.end());
    to->failures += from.failures;
  };
  for (int i = 0; i < 6; ++i) {
    add(&unloaded, Filter(client, [end = Clock::now() + std::chrono::seconds(3)] {
      return Clock::now() > end;
    }));
    const size_t from = extender.log_line_count();
    const auto written = Clock::now();
    if (common::Status s = harness.config_dir().Write(
            {{"policy.yaml", kTeams}, {"large.yaml", LargePolicy(i % 2 + 1)}});
        !s.ok()) {
      fprintf(stderr, "write: %s\n", s.error().message.c_str());
      return 1;
    }
    Clock::time_point loaded_at{};
    Sample during = Filter(client, [&] {
      if (loaded_at == Clock::time_point{}) {
        if (extender.WaitForLog("policy loaded", from, std::chrono::milliseconds(0)).ok()) {
          loaded_at = Clock::now();
          reload_ms.push_back(
              std::chrono::duration<double, std::milli>(loaded_at - written).count());
        } else if (Clock::now() - written > std::chrono::seconds(120)) {
          return true;
        }
        return false;
      }
      return Clock::now() > loaded_at + std::chrono::seconds(1);
    });
    if (loaded_at == Clock::time_point{}) {
      fprintf(stderr, "reload %d: no \"policy loaded\" within 120 s\n", i);
      return 1;
    }
    add(&reloading, during);
  }
  printf("\nfilter latency through the real extender while a %.2f MiB policy reloads\n",
         static_cast<double>(policy_bytes) / (1 << 20));
  printf("| %-22s | %7s | %8s | %8s | %8s | %8s |\n", "phase", "filters", "p50 ms", "p99 ms",
         "max ms", "failures");
  printf("|%s|%s|%s|%s|%s|%s|\n", std::string(24, '-').c_str(), std::string(9, '-').c_str(),
         std::string(10, '-').c_str(), std::string(10, '-').c_str(), std::string(10, '-').c_str(),
         std::string(10, '-').c_str());
  PrintRow("unloaded", unloaded);
  PrintRow("during 6 reloads", reloading);
  printf("\nreload (write to \"policy loaded\"): min %.0f ms, max %.0f ms; p99 ratio %.2f\n",
         *std::min_element(reload_ms.begin(), reload_ms.end()),
         *std::max_element(reload_ms.begin(), reload_ms.end()),
         Percentile(reloading.ms, 0.99) / std::max(1e-9, Percentile(unloaded.ms, 0.99)));
  return unloaded.failures == 0 ? 0 : 1;
}

}  // namespace
}  // namespace taskgov::e2e

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: reload_benchmark <taskgov-extender>\n");
    return 2;
  }
  return taskgov::e2e::Run(argv[1]);
}
