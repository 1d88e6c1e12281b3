// The policy shipped in deploy/base/policy.yaml loads without errors, as a mounted ConfigMap
// would: every data key becomes a file.

#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "config/loader.h"

namespace taskgov::config {
namespace {

TEST(DeployConfigTest, TheShippedConfigMapLoads) {
  YAML::Node configmap = YAML::LoadFile("deploy/base/policy.yaml");
  ASSERT_EQ(configmap["kind"].as<std::string>(), "ConfigMap");
  const std::filesystem::path dir = std::filesystem::path(::testing::TempDir()) / "taskgov-config";
  std::filesystem::create_directories(dir);
  int files = 0;
  for (const auto& entry : configmap["data"]) {
    std::ofstream(dir / entry.first.as<std::string>()) << entry.second.as<std::string>();
    ++files;
  }
  ASSERT_GT(files, 0);
  LoadResult result = LoadDirectory(dir.string());
  ASSERT_TRUE(result.policy) << result.FirstError();
  EXPECT_EQ(result.error_count(), 0u);
  EXPECT_FALSE(result.policy->teams.empty());
}

}  // namespace
}  // namespace taskgov::config
