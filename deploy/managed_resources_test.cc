// Every governed pod reaches the extender (issue 37). kube-scheduler calls an extender that lists
// managedResources only for pods whose containers or init containers name one of them in their
// requests or limits (HTTPExtender::IsInterested); a pod asking only for resources the list
// leaves out — vCPU and memory, a MIG slice — is never filtered, and its quota is enforced only
// after it runs. Each shipped kube-scheduler configuration (the second-scheduler overlay's, and
// the two registration forms docs/install.md gives) must send every pod to taskgov (an empty
// list) or list every resource a shipped or sample policy governs.

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <set>
#include <string>
#include <vector>

#include "config/loader.h"
#include "deploy/testing/manifests.h"

namespace taskgov::deploy {
namespace {

// The resources a policy governs: every resource any team has quota for on any flavor.
std::set<std::string> Governed(const config::LoadResult& loaded) {
  std::set<std::string> out;
  if (!loaded.ok()) return out;
  for (const scheduler::model::Team& team : loaded.policy->teams) {
    for (const scheduler::model::FlavorQuota& flavor : team.flavors) {
      for (const scheduler::model::ResourceQuota& r : flavor.resources) out.insert(r.resource);
    }
  }
  return out;
}

struct Policy {
  std::string name;
  std::set<std::string> governed;
};

std::vector<Policy> ShippedAndSamplePolicies() {
  std::vector<Policy> out;
  for (const char* dir : {"config/samples/native", "config/samples/hyperpod"}) {
    const config::LoadResult loaded = config::LoadDirectory(dir);
    EXPECT_TRUE(loaded.ok()) << dir << ": " << loaded.FirstError();
    out.push_back({dir, Governed(loaded)});
  }
  const YAML::Node cm = YAML::LoadFile("deploy/base/policy.yaml");
  std::vector<config::SourceFile> files;
  for (const auto& entry : cm["data"]) {
    files.push_back({entry.first.as<std::string>(""), entry.second.as<std::string>("")});
  }
  const config::LoadResult loaded = config::LoadSources(files);
  EXPECT_TRUE(loaded.ok()) << "deploy/base/policy.yaml: " << loaded.FirstError();
  out.push_back({"deploy/base/policy.yaml", Governed(loaded)});
  return out;
}

struct SchedulerConfig {
  std::string where;
  YAML::Node config;
};

// The overlay's ConfigMap and every KubeSchedulerConfiguration in docs/install.md's YAML blocks.
std::vector<SchedulerConfig> ShippedSchedulerConfigs() {
  std::vector<SchedulerConfig> out;
  const YAML::Node cm = YAML::LoadFile("deploy/overlays/second-scheduler/scheduler-config.yaml");
  out.push_back({"deploy/overlays/second-scheduler/scheduler-config.yaml",
                 YAML::Load(cm["data"]["scheduler-config.yaml"].as<std::string>(""))});
  for (const testing::YamlBlock& block : testing::YamlBlocks("docs/install.md")) {
    if (block.text.find("kind: KubeSchedulerConfiguration") == std::string::npos) continue;
    out.push_back({"docs/install.md:" + std::to_string(block.line), YAML::Load(block.text)});
  }
  return out;
}

TEST(ManagedResourcesTest, EveryGovernedResourceReachesTheExtender) {
  const std::vector<Policy> policies = ShippedAndSamplePolicies();
  std::set<std::string> governed;
  for (const Policy& p : policies) governed.insert(p.governed.begin(), p.governed.end());
  // The samples govern more than accelerators: what made CPU-only pods slip through.
  EXPECT_TRUE(governed.count("cpu")) << "no sample policy governs cpu";
  EXPECT_TRUE(governed.count("memory")) << "no sample policy governs memory";

  const std::vector<SchedulerConfig> configs = ShippedSchedulerConfigs();
  ASSERT_GE(configs.size(), 3u) << "the overlay and docs/install.md's forms (a) and (b)";
  for (const SchedulerConfig& c : configs) {
    SCOPED_TRACE(c.where);
    const YAML::Node extenders = c.config["extenders"];
    ASSERT_TRUE(extenders.IsSequence() && extenders.size() == 1) << "one extender: taskgov";
    const YAML::Node managed = extenders[0]["managedResources"];
    if (!managed || managed.IsNull() || managed.size() == 0) continue;  // every pod is sent
    std::set<std::string> listed;
    for (const YAML::Node& r : managed) listed.insert(r["name"].as<std::string>(""));
    for (const Policy& p : policies) {
      for (const std::string& resource : p.governed) {
        EXPECT_TRUE(listed.count(resource))
            << p.name << " governs " << resource
            << ", which managedResources leaves out: pods asking only for it skip taskgov";
      }
    }
  }
}

}  // namespace
}  // namespace taskgov::deploy
