// HyperPod CreateComputeQuota / UpdateComputeQuota / CreateClusterSchedulerConfig documents.

#include <gtest/gtest.h>

#include <utility>
#include <vector>

#include "config/loader.h"
#include "config/test_util.h"

namespace taskgov::config {
namespace {

using scheduler::model::kUnlimited;
using testing::Dump;
using testing::FindQuota;
using testing::HasDiagnostic;
using testing::Load;
using testing::LoadOne;

constexpr int64_t kGi = int64_t{1} << 30;

TEST(HyperPod, AwsDefaults) {
  LoadResult r = LoadOne("q.json", R"({
    "Name": "minimal",
    "ClusterArn": "arn:aws:sagemaker:us-east-1:111122223333:cluster/abc123def456",
    "ComputeQuotaConfig": {
      "ComputeQuotaResources": [{"InstanceType": "ml.p4d.24xlarge", "Accelerators": 4}]
    },
    "ComputeQuotaTarget": {"TeamName": "ml-research"}
  })");
  ASSERT_TRUE(r.ok()) << Dump(r);
  const scheduler::model::Team* t = r.policy->FindTeam("ml-research");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->fair_share_weight, 0);  // AWS default FairShareWeight
  EXPECT_EQ(t->within_team, scheduler::model::WithinTeamPreemption::kLowerPriority);
  EXPECT_EQ(t->reclaim, scheduler::model::ReclaimPolicy::kAny);
  EXPECT_TRUE(t->active);
  EXPECT_EQ(t->cohort, "hyperpod");
  EXPECT_EQ(t->namespaces, std::vector<std::string>{"hyperpod-ns-ml-research"});
  EXPECT_EQ(t->cluster_queue, "hyperpod-ns-ml-research-clusterqueue");
  // LendAndBorrow, BorrowLimit 50.
  const scheduler::model::ResourceQuota* gpu =
      FindQuota(*r.policy, "ml-research", "ml.p4d.24xlarge", "nvidia.com/gpu");
  ASSERT_NE(gpu, nullptr);
  EXPECT_EQ(gpu->nominal, 4);
  EXPECT_EQ(gpu->borrowing_limit, 2);
  EXPECT_EQ(gpu->lending_limit, kUnlimited);
  EXPECT_EQ(FindQuota(*r.policy, "ml-research", "ml.p4d.24xlarge", "cpu")->nominal, 48000);
  EXPECT_EQ(FindQuota(*r.policy, "ml-research", "ml.p4d.24xlarge", "memory")->nominal, 576 * kGi);
}

TEST(HyperPod, SharingStrategiesAbsoluteLimitsAndPartitions) {
  LoadResult r = LoadOne("q.json", R"({
    "ComputeQuotaConfig": {
      "ComputeQuotaResources": [
        {"InstanceType": "ml.p5.48xlarge", "Count": 1},
        {"InstanceType": "ml.p5en.48xlarge", "AcceleratorPartition": {"Type": "mig-3g.71gb", "Count": 4}},
        {"InstanceType": "ml.trn2.48xlarge", "Accelerators": 4, "VCpu": 10.5, "MemoryInGiB": 100.25}
      ],
      "ResourceSharingConfig": {
        "Strategy": "LendAndBorrow",
        "BorrowLimit": 200,
        "AbsoluteBorrowLimits": [{"InstanceType": "ml.p5.48xlarge", "Accelerators": 2}]
      },
      "PreemptTeamTasks": "Never"
    },
    "ComputeQuotaTarget": {"TeamName": "t", "FairShareWeight": 100},
    "ActivationState": "Disabled"
  })");
  ASSERT_TRUE(r.ok()) << Dump(r);
  const scheduler::model::Policy& p = *r.policy;
  const scheduler::model::Team* t = p.FindTeam("t");
  EXPECT_FALSE(t->active);
  EXPECT_EQ(t->within_team, scheduler::model::WithinTeamPreemption::kNever);
  EXPECT_EQ(t->fair_share_weight, 100);
  // Absolute limits win over the percentage: 2 GPUs' worth.
  EXPECT_EQ(FindQuota(p, "t", "ml.p5.48xlarge", "nvidia.com/gpu")->borrowing_limit, 2);
  EXPECT_EQ(FindQuota(p, "t", "ml.p5.48xlarge", "cpu")->borrowing_limit, 48000);
  // 4 of 2-per-GPU 3g.71gb slices = 2 H200s' worth; 200%.
  const scheduler::model::ResourceQuota* mig =
      FindQuota(p, "t", "ml.p5en.48xlarge", "nvidia.com/mig-3g.71gb");
  ASSERT_NE(mig, nullptr);
  EXPECT_EQ(mig->nominal, 4);
  EXPECT_EQ(mig->borrowing_limit, 8);
  EXPECT_EQ(FindQuota(p, "t", "ml.p5en.48xlarge", "cpu")->nominal, 48000);
  // Explicit fractional vCPU and memory.
  EXPECT_EQ(FindQuota(p, "t", "ml.trn2.48xlarge", "cpu")->nominal, 10500);
  EXPECT_EQ(FindQuota(p, "t", "ml.trn2.48xlarge", "memory")->nominal, 100 * kGi + kGi / 4);
  EXPECT_EQ(FindQuota(p, "t", "ml.trn2.48xlarge", "aws.amazon.com/neuron")->nominal, 4);
}

TEST(HyperPod, BorrowLimitWithoutBorrowingIsAWarning) {
  LoadResult r = LoadOne("q.json", R"({
    "ComputeQuotaConfig": {
      "ComputeQuotaResources": [{"InstanceType": "ml.g5.xlarge", "Count": 1}],
      "ResourceSharingConfig": {"Strategy": "Lend", "BorrowLimit": 30}
    },
    "ComputeQuotaTarget": {"TeamName": "t"}
  })");
  ASSERT_TRUE(r.ok()) << Dump(r);
  EXPECT_TRUE(HasDiagnostic(r, Severity::kWarning, "q.json",
                            "ComputeQuotaConfig.ResourceSharingConfig.BorrowLimit", "no effect"))
      << Dump(r);
  EXPECT_EQ(FindQuota(*r.policy, "t", "ml.g5.xlarge", "nvidia.com/gpu")->borrowing_limit, 0);
}

TEST(HyperPod, UpdatesApplyInTargetVersionOrder) {
  LoadResult r = Load({
      {"a-create.json", R"({"Name": "q", "ClusterArn": "arn:x",
        "ComputeQuotaConfig": {"ComputeQuotaResources": [{"InstanceType": "ml.g5.xlarge", "Count": 1}]},
        "ComputeQuotaTarget": {"TeamName": "t", "FairShareWeight": 5}})"},
      {"b-update-2.json", R"({"ComputeQuotaId": "abcdefabcdef", "TargetVersion": 2,
        "ComputeQuotaConfig": {"ComputeQuotaResources": [{"InstanceType": "ml.g5.xlarge", "Count": 3}]}})"},
      {"c-update-1.json", R"({"ComputeQuotaId": "abcdefabcdef", "TargetVersion": 1,
        "ComputeQuotaTarget": {"TeamName": "t", "FairShareWeight": 7},
        "ComputeQuotaConfig": {"ComputeQuotaResources": [{"InstanceType": "ml.g5.xlarge", "Count": 2}]}})"},
  });
  // The update without ComputeQuotaTarget cannot be attributed to a team.
  EXPECT_TRUE(HasDiagnostic(r, Severity::kError, "b-update-2.json", "ComputeQuotaTarget",
                            "required field is missing"))
      << Dump(r);
  LoadResult ok = Load({
      {"a-create.json",
       R"({"ComputeQuotaConfig": {"ComputeQuotaResources": [{"InstanceType": "ml.g5.xlarge", "Count": 1}]},
        "ComputeQuotaTarget": {"TeamName": "t", "FairShareWeight": 5}})"},
      {"b-update-2.json", R"({"ComputeQuotaId": "abcdefabcdef", "TargetVersion": 2,
        "ComputeQuotaTarget": {"TeamName": "t"}, "ActivationState": "Disabled",
        "ComputeQuotaConfig": {"ComputeQuotaResources": [{"InstanceType": "ml.g5.xlarge", "Count": 3}]}})"},
      {"c-update-1.json", R"({"ComputeQuotaId": "abcdefabcdef", "TargetVersion": 1,
        "ComputeQuotaTarget": {"TeamName": "t", "FairShareWeight": 7},
        "ComputeQuotaConfig": {"ComputeQuotaResources": [{"InstanceType": "ml.g5.xlarge", "Count": 2}]}})"},
  });
  ASSERT_TRUE(ok.ok()) << Dump(ok);
  ASSERT_EQ(ok.policy->teams.size(), 1u);
  const scheduler::model::Team* t = ok.policy->FindTeam("t");
  EXPECT_EQ(t->fair_share_weight, 7);  // version 1 set it; version 2 did not touch it
  EXPECT_FALSE(t->active);             // version 2
  EXPECT_EQ(FindQuota(*ok.policy, "t", "ml.g5.xlarge", "nvidia.com/gpu")->nominal, 3);
}

TEST(HyperPod, DescribeOutputIsAccepted) {
  LoadResult r = LoadOne("describe.json", R"({
    "ComputeQuotaArn": "arn:aws:sagemaker:us-west-2:123456789012:compute-quota/abcdefabcdef",
    "ComputeQuotaId": "abcdefabcdef",
    "Name": "team-x",
    "ComputeQuotaVersion": 3,
    "Status": "Created",
    "ClusterArn": "arn:aws:sagemaker:us-west-2:123456789012:cluster/abcdef123456",
    "ComputeQuotaConfig": {
      "ComputeQuotaResources": [{"InstanceType": "ml.g6.12xlarge", "Count": 1}],
      "ResourceSharingConfig": {"Strategy": "LendAndBorrow", "BorrowLimit": 50},
      "PreemptTeamTasks": "LowerPriority"
    },
    "ComputeQuotaTarget": {"TeamName": "x", "FairShareWeight": 1},
    "ActivationState": "Enabled",
    "CreationTime": "2026-11-29T10:00:00Z",
    "CreatedBy": {"UserProfileArn": "arn:x"},
    "LastModifiedTime": "2026-11-29T11:00:00Z"
  })");
  ASSERT_TRUE(r.ok()) << Dump(r);
  EXPECT_EQ(FindQuota(*r.policy, "x", "ml.g6.12xlarge", "nvidia.com/gpu")->nominal, 4);
}

// A cluster-policy document alone defines no team, which is refused: the tests add one.
const char kOneTeam[] = "apiVersion: taskgov.io/v1\nkind: Team\nname: t\n";

TEST(HyperPod, SchedulerConfig) {
  struct Case {
    std::string name, json;
    scheduler::model::TaskPrioritization prioritization;
    scheduler::model::IdleComputeAllocation idle;
    size_t classes;
  };
  for (const Case& c : std::vector<Case>{
           {"ranking and fair share",
            R"({"Name": "p", "ClusterArn": "arn:x", "SchedulerConfig": {
                 "PriorityClasses": [{"Name": "inference", "Weight": 100},
                                     {"Name": "fine-tuning", "Weight": 0}],
                 "FairShare": "Enabled"}})",
            scheduler::model::TaskPrioritization::kTaskRanking,
            scheduler::model::IdleComputeAllocation::kFairShare, 2},
           {"no classes: first come first serve",
            R"({"SchedulerConfig": {"FairShare": "Disabled"}})",
            scheduler::model::TaskPrioritization::kFirstComeFirstServe,
            scheduler::model::IdleComputeAllocation::kFirstComeFirstServe, 0},
       }) {
    LoadResult r = testing::Load({{"policy.json", c.json}, {"team.yaml", kOneTeam}});
    ASSERT_TRUE(r.ok()) << c.name << "\n" << Dump(r);
    EXPECT_EQ(r.policy->task_prioritization, c.prioritization) << c.name;
    EXPECT_EQ(r.policy->idle_compute, c.idle) << c.name;
    EXPECT_EQ(r.policy->priority_classes.size(), c.classes) << c.name;
  }
}

constexpr char kHyperPodTeam[] = R"({
  "ComputeQuotaConfig": {"ComputeQuotaResources": [{"InstanceType": "ml.p5.48xlarge", "Count": 1}]},
  "ComputeQuotaTarget": {"TeamName": "a"}
})";

// IdleResourceSharing is decoded into the policy (no "not honoured" warning); the unallocated
// capacity goes to the cohort the HyperPod teams share. Absent means Disabled (the API reference
// states no default).
TEST(HyperPod, IdleResourceSharing) {
  struct Case {
    std::string name, policy, team;
    bool enabled;
    std::string cohort;
  };
  for (const Case& c : std::vector<Case>{
           {"enabled", R"({"SchedulerConfig": {"IdleResourceSharing": "Enabled"}})", kHyperPodTeam,
            true, "hyperpod"},
           {"enabled, cohort renamed", R"({"SchedulerConfig": {"IdleResourceSharing": "Enabled"}})",
            kHyperPodTeam, true, "gpu-cluster"},
           {"disabled", R"({"SchedulerConfig": {"IdleResourceSharing": "Disabled"}})",
            kHyperPodTeam, false, ""},
           {"absent", R"({"SchedulerConfig": {"FairShare": "Enabled"}})", kHyperPodTeam, false, ""},
       }) {
    std::vector<std::pair<std::string, std::string>> files = {{"policy.json", c.policy},
                                                              {"a.json", c.team}};
    if (c.cohort == "gpu-cluster") {
      files.emplace_back(
          "settings.yaml",
          "apiVersion: taskgov.io/v1\nkind: TaskGovernancePolicy\nhyperpodCohort: gpu-cluster\n");
    }
    LoadResult r = testing::Load(files);
    ASSERT_TRUE(r.ok()) << c.name << "\n" << Dump(r);
    EXPECT_TRUE(r.diagnostics.empty()) << c.name << "\n" << Dump(r);
    EXPECT_EQ(r.policy->idle_resource_sharing.enabled, c.enabled) << c.name;
    EXPECT_EQ(r.policy->idle_resource_sharing.cohort, c.cohort) << c.name;
    EXPECT_TRUE(r.policy->idle_resource_sharing.unallocated.empty()) << c.name;
  }
}

TEST(HyperPod, IdleResourceSharingErrorsAndWarnings) {
  LoadResult maybe =
      testing::Load({{"policy.json", R"({"SchedulerConfig": {"IdleResourceSharing": "Maybe"}})"},
                     {"a.json", kHyperPodTeam}});
  EXPECT_FALSE(maybe.ok());
  EXPECT_TRUE(HasDiagnostic(maybe, Severity::kError, "policy.json",
                            "SchedulerConfig.IdleResourceSharing",
                            "must be one of Enabled, Disabled; got 'Maybe'"))
      << Dump(maybe);

  LoadResult conflict = testing::Load(
      {{"policy.json", R"({"SchedulerConfig": {"IdleResourceSharing": "Enabled"}})"},
       {"a.json", kHyperPodTeam},
       {"settings.yaml",
        "apiVersion: taskgov.io/v1\nkind: TaskGovernancePolicy\nidleResourceSharing: Disabled\n"}});
  EXPECT_FALSE(conflict.ok());
  EXPECT_TRUE(HasDiagnostic(conflict, Severity::kError, "settings.yaml", "idleResourceSharing",
                            "conflicts with the value set in policy.json"))
      << Dump(conflict);

  // No HyperPod team and no defaultCohort: nothing to lend within, said at the setting.
  LoadResult nowhere =
      testing::Load({{"policy.json", R"({"SchedulerConfig": {"IdleResourceSharing": "Enabled"}})"},
                     {"team.yaml", kOneTeam}});
  ASSERT_TRUE(nowhere.ok()) << Dump(nowhere);
  EXPECT_TRUE(HasDiagnostic(nowhere, Severity::kWarning, "policy.json",
                            "SchedulerConfig.IdleResourceSharing", "has no effect"))
      << Dump(nowhere);
  EXPECT_TRUE(nowhere.policy->idle_resource_sharing.enabled);
  EXPECT_EQ(nowhere.policy->idle_resource_sharing.cohort, "");
}

TEST(HyperPod, ValidationErrors) {
  struct Case {
    std::string name, json, path, text;
  };
  for (
      const Case& c : std::vector<Case>{
          {"weight out of range",
           R"({"ComputeQuotaConfig": {"ComputeQuotaResources": []},
                "ComputeQuotaTarget": {"TeamName": "t", "FairShareWeight": 101}})",
           "ComputeQuotaTarget.FairShareWeight", "between 0 and 100"},
          {"priority weight out of range",
           R"({"SchedulerConfig": {"PriorityClasses": [{"Name": "x", "Weight": 150}]}})",
           "SchedulerConfig.PriorityClasses[0].Weight", "between 0 and 100"},
          {"bad strategy",
           R"({"ComputeQuotaConfig": {"ComputeQuotaResources": [],
                 "ResourceSharingConfig": {"Strategy": "LendandBorrow"}},
                "ComputeQuotaTarget": {"TeamName": "t"}})",
           "ComputeQuotaConfig.ResourceSharingConfig.Strategy", "must be one of"},
          {"negative accelerators",
           R"({"ComputeQuotaConfig": {"ComputeQuotaResources": [
                 {"InstanceType": "ml.g5.xlarge", "Accelerators": -1}]},
                "ComputeQuotaTarget": {"TeamName": "t"}})",
           "ComputeQuotaConfig.ComputeQuotaResources[0].Accelerators", "between 0"},
          {"accelerators as a string",
           R"({"ComputeQuotaConfig": {"ComputeQuotaResources": [
                 {"InstanceType": "ml.g5.xlarge", "Accelerators": "1"}]},
                "ComputeQuotaTarget": {"TeamName": "t"}})",
           "ComputeQuotaConfig.ComputeQuotaResources[0].Accelerators", "must be an integer"},
          {"unknown field",
           R"({"ComputeQuotaConfig": {"ComputeQuotaResources": [], "Preempt": "Never"},
                "ComputeQuotaTarget": {"TeamName": "t"}})",
           "ComputeQuotaConfig.Preempt", "unknown field"},
          {"missing instance type",
           R"({"ComputeQuotaConfig": {"ComputeQuotaResources": [{"Count": 1}]},
                "ComputeQuotaTarget": {"TeamName": "t"}})",
           "ComputeQuotaConfig.ComputeQuotaResources[0].InstanceType", "required"},
          {"unknown instance type",
           R"({"ComputeQuotaConfig": {"ComputeQuotaResources": [{"InstanceType": "ml.zz.xlarge", "Count": 1}]},
                "ComputeQuotaTarget": {"TeamName": "t"}})",
           "ComputeQuotaConfig.ComputeQuotaResources[0]", "not in the catalogue"},
          {"bad team name",
           R"({"ComputeQuotaConfig": {"ComputeQuotaResources": []},
                "ComputeQuotaTarget": {"TeamName": "Team_A"}})",
           "ComputeQuotaTarget.TeamName", "must match"},
      }) {
    LoadResult r = LoadOne("q.json", c.json);
    EXPECT_FALSE(r.ok()) << c.name;
    EXPECT_TRUE(HasDiagnostic(r, Severity::kError, "q.json", c.path, c.text)) << c.name << "\n"
                                                                              << Dump(r);
  }
}

}  // namespace
}  // namespace taskgov::config
