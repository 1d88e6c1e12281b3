// The second scheduler's configuration as shipped (the overlay's ConfigMap) and as
// docs/install.md shows it, read by the parser `taskgov simulate --scheduler-config` plays it
// with: the two say the same, and the bin packing weighs every accelerator resource the
// catalogue knows.

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include "config/catalogue.h"
#include "deploy/testing/manifests.h"
#include "scheduler/common/testing/files.h"
#include "scheduler/sim/scheduler_config.h"

namespace taskgov::deploy {
namespace {

using scheduler::sim::KubeScheduler;
using scheduler::sim::ScoringStrategy;

constexpr char kOverlay[] = "deploy/overlays/second-scheduler/scheduler-config.yaml";

using common::testing::ReadFile;

KubeScheduler::Options Played(const std::string& where, const std::string& text) {
  auto options = scheduler::sim::ApplySchedulerConfig(text, KubeScheduler::Options{});
  EXPECT_TRUE(options.ok()) << where << ": " << options.error().message;
  return options.ok() ? *options : KubeScheduler::Options{};
}

// docs/install.md's form (a): the YAML block of the KubeSchedulerConfiguration with the profile
// taskgov.
std::string InstallMdFormA() {
  for (const testing::YamlBlock& block : testing::YamlBlocks("docs/install.md")) {
    if (block.text.find("kind: KubeSchedulerConfiguration") != std::string::npos &&
        block.text.find("schedulerName: taskgov") != std::string::npos) {
      return block.text;
    }
  }
  return "";
}

TEST(SchedulerConfigTest, TheOverlayPacksEveryAcceleratorTheCatalogueKnows) {
  const KubeScheduler::Options o = Played(kOverlay, ReadFile(kOverlay));
  EXPECT_EQ(o.scoring.type, ScoringStrategy::Type::kMostAllocated);
  std::map<std::string, int64_t> weights;
  for (const ScoringStrategy::Resource& r : o.scoring.resources) {
    EXPECT_TRUE(weights.emplace(r.name, r.weight).second) << r.name << " is listed twice";
  }
  EXPECT_EQ(weights["cpu"], 1);
  EXPECT_EQ(weights["memory"], 1);
  std::set<std::string> accelerators;
  for (const config::InstanceType& t : config::Catalogue::Builtin().types()) {
    if (!t.accelerator_resource.empty()) accelerators.insert(t.accelerator_resource);
    for (const config::MigProfile& p : t.mig_profiles) {
      accelerators.insert(config::PartitionResource(p.name));
    }
  }
  ASSERT_GE(accelerators.size(), 3u);
  for (const std::string& a : accelerators) {
    EXPECT_EQ(weights.count(a) ? weights[a] : 0, 3)
        << a << " (the catalogue's) is not packed at weight 3 in " << kOverlay;
  }
}

TEST(SchedulerConfigTest, InstallMdShowsWhatTheOverlayShips) {
  const std::string form_a = InstallMdFormA();
  ASSERT_FALSE(form_a.empty()) << "docs/install.md shows no configuration of the profile taskgov";
  const KubeScheduler::Options shipped = Played(kOverlay, ReadFile(kOverlay));
  const KubeScheduler::Options shown = Played("docs/install.md", form_a);
  EXPECT_EQ(shown.scoring, shipped.scoring);
  EXPECT_EQ(shown.initial_backoff_ms, shipped.initial_backoff_ms);
  EXPECT_EQ(shown.max_backoff_ms, shipped.max_backoff_ms);
  EXPECT_EQ(shown.extender_weight, shipped.extender_weight);
  EXPECT_EQ(shown.preempt_verb, shipped.preempt_verb);
}

}  // namespace
}  // namespace taskgov::deploy
