// The policy deploy/base installs is in the CLI's key (issue 38, item 11), so that a default
// install's `taskgov quota create|update|delete` and `taskgov policy set` work without a
// take-over: the ConfigMap holds taskgov-cli.yaml alone, exactly as the CLI renders it (it reads
// back unchanged), the extender loads it, and the CLI's writes succeed on it.

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include "config/loader.h"
#include "extender/cli/owned_policy.h"
#include "extender/cli/testing/cli_fixture.h"

namespace taskgov::cli {
namespace {

TEST(ShippedPolicyTest, DeployBaseShipsTheCliKeyAndTheCliCanChangeIt) {
  const YAML::Node manifest = YAML::LoadFile("deploy/base/policy.yaml");
  testing::ConfigData data;
  for (const auto& kv : manifest["data"])
    data[kv.first.as<std::string>()] = kv.second.as<std::string>();
  ASSERT_EQ(data.size(), 1u);
  ASSERT_EQ(data.count(std::string(kOwnedKey)), 1u) << "the ConfigMap's key is the CLI's";
  const std::string& key = data.at(std::string(kOwnedKey));
  common::Result<OwnedPolicy> owned = ParseOwned(key);
  ASSERT_TRUE(owned.ok()) << owned.error().message;
  EXPECT_EQ(RenderOwned(*owned), key) << "render it as the CLI does:\n" << RenderOwned(*owned);
  const config::LoadResult loaded = config::LoadSources({{std::string(kOwnedKey), key}});
  ASSERT_TRUE(loaded.ok()) << loaded.FirstError();
  EXPECT_EQ(loaded.policy->teams.size(), 3u);

  testing::CliFixture cli;
  ASSERT_TRUE(cli.Start());
  cli.PutConfigMap(data);
  testing::CliRun run = cli.Run({"policy", "set", "--task-prioritization", "FirstComeFirstServe"});
  EXPECT_EQ(run.code, 0) << run.err;
  run = cli.Run({"quota", "update", "a", "--fair-share-weight", "20"});
  EXPECT_EQ(run.code, 0) << run.err;
  run =
      cli.Run({"quota", "create", "d", "--instance-type", "ml.g5.12xlarge", "--accelerators", "2"});
  EXPECT_EQ(run.code, 0) << run.err;
}

}  // namespace
}  // namespace taskgov::cli
