// HyperPod's IdleResourceSharing through the real extender, configured with HyperPod API
// documents, on the sample cluster (2 ml.p5.48xlarge nodes: 16 GPUs). Team a (4 GPUs,
// LendAndBorrow, BorrowLimit 1000%) and team b (2 GPUs, DontLend) leave 10 GPUs no team was
// allocated. Enabled, the cohort's pool holds them: b — which may not borrow — still cannot go
// above its nominal 2 though the nodes have room, while a borrows them (14 of 14) and its 15th
// pod is refused with the pool's numbers. Disabled, a stops at its own 4 (b lends nothing, and
// nothing else is lent) while 11 GPUs stay free.

#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "e2e/scenario_test_util.h"
#include "metrics/testing/exposition.h"

namespace taskgov::e2e {
namespace {

std::string SchedulerConfig(const std::string& idle) {
  return R"({"Name": "cluster", "SchedulerConfig": {"FairShare": "Disabled",
             "IdleResourceSharing": ")" +
         idle + R"("}})";
}

constexpr char kTeamA[] = R"({
  "ComputeQuotaConfig": {
    "ComputeQuotaResources": [{"InstanceType": "ml.p5.48xlarge", "Accelerators": 4}],
    "ResourceSharingConfig": {"Strategy": "LendAndBorrow", "BorrowLimit": 1000}
  },
  "ComputeQuotaTarget": {"TeamName": "a"}
})";

constexpr char kTeamB[] = R"({
  "ComputeQuotaConfig": {
    "ComputeQuotaResources": [{"InstanceType": "ml.p5.48xlarge", "Accelerators": 2}],
    "ResourceSharingConfig": {"Strategy": "DontLend"}
  },
  "ComputeQuotaTarget": {"TeamName": "b"}
})";

class IdleResourceSharingTest : public ScenarioTest {
 protected:
  void Start(const std::string& idle) {
    HarnessOptions options;
    options.config["cluster-policy.json"] = SchedulerConfig(idle);
    options.config["team-a.json"] = kTeamA;
    options.config["team-b.json"] = kTeamB;
    options.extender_args = {"--console-auth=none"};
    StartHarness(std::move(options));
  }

  // taskgov_cohort_pool_capacity of cohort "hyperpod" on p5 GPUs (-1 when not exported).
  double PoolCapacity() {
    common::Result<metrics::testing::Exposition> m = h().extender().ScrapeMetrics();
    if (!m.ok()) return -1;
    return m
        ->Value("taskgov_cohort_pool_capacity",
                {{"cohort", "hyperpod"}, {"flavor", kP5}, {"resource", kGpu}})
        .value_or(-1);
  }

  // Polls until the pool's capacity is `want` (the extender applies the nodes' unallocated
  // capacity within a second of seeing them); returns the last value seen.
  double AwaitPoolCapacity(double want) {
    double seen = PoolCapacity();
    for (int i = 0; i < 50 && seen != want; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      seen = PoolCapacity();
    }
    return seen;
  }

  void SubmitGpuPods(const std::string& team, int n) {
    std::vector<PodSpec> pods;
    for (int i = 0; i < n; ++i) {
      pods.push_back(GpuPod(team, team + "-" + std::to_string(i), 1, ""));
    }
    SubmitAll(pods);
  }
};

TEST_F(IdleResourceSharingTest, EnabledTeamsBorrowTheGpusNoTeamWasAllocated) {
  Start("Enabled");
  // a lends its 4; b lends nothing; 16 − 6 allocated = 10 unallocated.
  ASSERT_EQ(AwaitPoolCapacity(14), 14);

  common::Result<common::testing::HttpReply> policy = h().extender().Admin("/api/v1/policy");
  ASSERT_TRUE(policy.ok()) << policy.error().message;
  ASSERT_EQ(policy->status, 200) << policy->body;
  rapidjson::Document d;
  d.Parse(policy->body.c_str());
  ASSERT_FALSE(d.HasParseError()) << policy->body;
  const rapidjson::Value& sharing = d["idleResourceSharing"];
  EXPECT_TRUE(sharing["enabled"].GetBool());
  EXPECT_EQ(std::string(sharing["cohort"].GetString()), "hyperpod");
  bool gpus = false;
  for (const rapidjson::Value& u : sharing["unallocated"].GetArray()) {
    if (std::string(u["flavor"].GetString()) == kP5 &&
        std::string(u["resource"].GetString()) == kGpu) {
      EXPECT_EQ(std::string(u["amount"].GetString()), "10");
      gpus = true;
    }
  }
  EXPECT_TRUE(gpus) << policy->body;

  // b may not borrow: 1 + 2 GPUs is above its nominal 2, though 15 GPUs are free.
  SubmitAll({GpuPod("b", "b-0", 1, ""), GpuPod("b", "b-1", 2, "")});
  ASSERT_TRUE(h().RunUntil([&] { return Running("b") == 1; }, 10));
  const StepReport b_step = h().Step();
  EXPECT_EQ(Running("b"), 1u);
  const Attempt* refused = b_step.Find(Ns("b") + "/b-1");
  ASSERT_NE(refused, nullptr);
  EXPECT_EQ(refused->outcome, Attempt::Outcome::kRefused);
  EXPECT_NE(refused->reason.find("borrowing limit 0"), std::string::npos) << refused->reason;

  // a borrows its cohort's pool whole: its own 4 and the 10 unallocated.
  SubmitGpuPods("a", 15);
  ASSERT_TRUE(h().RunUntil([&] { return Running("a") == 14; }, 10));
  ASSERT_TRUE(h().RunUntilQuiet(std::chrono::milliseconds(1500), 10));
  EXPECT_EQ(Running("a"), 14u);
  EXPECT_EQ(PendingOf("a"), 1u);
  const StepReport a_step = h().Step();
  const Attempt* last = a_step.Find(Ns("a") + "/a-14");
  ASSERT_NE(last, nullptr);
  EXPECT_EQ(last->outcome, Attempt::Outcome::kRefused);  // one GPU is free on the nodes
  EXPECT_NE(last->reason.find("cohort pool free 0 of 14"), std::string::npos) << last->reason;
  EXPECT_EQ(Running("b"), 1u);
}

TEST_F(IdleResourceSharingTest, DisabledOnlyTheTeamsUnusedQuotaIsLent) {
  Start("Disabled");
  ASSERT_EQ(AwaitPoolCapacity(4), 4);
  SubmitGpuPods("a", 15);
  ASSERT_TRUE(h().RunUntil([&] { return Running("a") == 4; }, 10));
  ASSERT_TRUE(h().RunUntilQuiet(std::chrono::milliseconds(1500), 10));
  EXPECT_EQ(Running("a"), 4u);
  EXPECT_EQ(PendingOf("a"), 11u);
  const StepReport step = h().Step();
  EXPECT_NE(step.LastRefusal().find("cohort pool free 0 of 4"), std::string::npos)
      << step.LastRefusal();
  // The pool stays the teams' own: 12 GPUs of the nodes stay idle.
  EXPECT_EQ(PoolCapacity(), 4);
}

}  // namespace
}  // namespace taskgov::e2e
