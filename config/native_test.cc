// The native taskgov schema.

#include <gtest/gtest.h>

#include "config/loader.h"
#include "config/test_util.h"

namespace taskgov::config {
namespace {

using scheduler::model::kUnlimited;
using testing::Dump;
using testing::FindQuota;
using testing::HasDiagnostic;
using testing::LoadOne;

constexpr int64_t kGi = int64_t{1} << 30;
const char kPolicyHead[] = "apiVersion: taskgov.io/v1\nkind: TaskGovernancePolicy\n";
const char kTeamA[] = "apiVersion: taskgov.io/v1\nkind: Team\nname: a\n";

struct QuotaCase {
  std::string team, flavor, resource;
  int64_t nominal, borrowing, lending;
};

void ExpectQuotas(const scheduler::model::Policy& p, const std::vector<QuotaCase>& cases) {
  for (const QuotaCase& c : cases) {
    SCOPED_TRACE(c.team + " " + c.flavor + " " + c.resource);
    const scheduler::model::ResourceQuota* q = FindQuota(p, c.team, c.flavor, c.resource);
    ASSERT_NE(q, nullptr);
    EXPECT_EQ(q->nominal, c.nominal);
    EXPECT_EQ(q->borrowing_limit, c.borrowing);
    EXPECT_EQ(q->lending_limit, c.lending);
  }
}

TEST(Native, CompleteExample) {
  LoadResult r = LoadDirectory("config/testdata/native");
  ASSERT_TRUE(r.ok()) << Dump(r);
  EXPECT_EQ(r.warning_count(), 0u) << Dump(r);
  const scheduler::model::Policy& p = *r.policy;

  EXPECT_EQ(p.task_prioritization, scheduler::model::TaskPrioritization::kTaskRanking);
  EXPECT_EQ(p.idle_compute, scheduler::model::IdleComputeAllocation::kFairShare);
  EXPECT_TRUE(p.idle_resource_sharing.enabled);
  EXPECT_EQ(p.idle_resource_sharing.cohort, "ml-platform");  // defaultCohort
  EXPECT_EQ(p.no_team, scheduler::model::NoTeamAction::kRefuse);
  EXPECT_EQ(p.preemption.grace_period_seconds, 300);
  EXPECT_EQ(p.preemption.minimum_runtime_seconds, 600);
  ASSERT_EQ(p.priority_classes.size(), 2u);
  EXPECT_EQ(p.FindPriorityClass("inference")->value, 100);

  ExpectQuotas(p, {
                      // count 2 of ml.p5.48xlarge; absolute borrow limit of 4 GPUs' worth.
                      {"research", "ml.p5.48xlarge", "nvidia.com/gpu", 16, 4, kUnlimited},
                      {"research", "ml.p5.48xlarge", "cpu", 384000, 96000, kUnlimited},
                      {"research", "ml.p5.48xlarge", "memory", 4096 * kGi, 1024 * kGi, kUnlimited},
                      {"research", "ml.p5.48xlarge", "vpc.amazonaws.com/efa", 64, 0, kUnlimited},
                      // A named flavor whose proportions come from its instance type; 100%.
                      {"research", "p5-reserved", "nvidia.com/gpu", 8, 8, kUnlimited},
                      {"research", "p5-reserved", "cpu", 192000, 192000, kUnlimited},
                      // 14 MIG 1g.5gb slices = 2 A100s' worth of vCPU and memory.
                      {"research", "ml.p4d.24xlarge", "nvidia.com/mig-1g.5gb", 14, 14, kUnlimited},
                      {"research", "ml.p4d.24xlarge", "nvidia.com/gpu", 0, 0, kUnlimited},
                      {"research", "ml.p4d.24xlarge", "cpu", 24000, 24000, kUnlimited},
                      {"research", "ml.p4d.24xlarge", "memory", 288 * kGi, 288 * kGi, kUnlimited},
                      // Lend: never borrows; lends at most 2 GPUs' worth of the new type.
                      {"inference", "ml.g7e.2xlarge", "nvidia.com/gpu", 4, 0, 2},
                      {"inference", "ml.g7e.2xlarge", "cpu", 32000, 0, 16000},
                      {"inference", "ml.g7e.2xlarge", "memory", 256 * kGi, 0, 128 * kGi},
                      {"inference", "ml.m5.2xlarge", "cpu", 16000, 0, kUnlimited},
                      {"inference", "ml.m5.2xlarge", "memory", 64 * kGi, 0, kUnlimited},
                      // DontLend.
                      {"interns", "ml.g5.xlarge", "nvidia.com/gpu", 2, 0, 0},
                      {"interns", "ml.g5.xlarge", "cpu", 8000, 0, 0},
                  });

  const scheduler::model::Team* research = p.FindTeam("research");
  ASSERT_NE(research, nullptr);
  EXPECT_EQ(research->namespaces, (std::vector<std::string>{"research", "research-batch"}));
  EXPECT_EQ(research->cohort, "ml-platform");
  EXPECT_EQ(research->fair_share_weight, 2);
  ASSERT_EQ(research->flavors.size(), 3u);
  EXPECT_EQ(research->flavors[0].flavor, "ml.p5.48xlarge");
  EXPECT_EQ(research->flavors[1].flavor, "p5-reserved");
  EXPECT_EQ(research->flavors[2].flavor, "ml.p4d.24xlarge");
  EXPECT_EQ(p.TeamOfNamespace("research-batch"), research);

  const scheduler::model::Team* inference = p.FindTeam("inference");
  EXPECT_EQ(inference->queueing, scheduler::model::QueueingStrategy::kStrictFIFO);
  EXPECT_EQ(inference->namespaces, std::vector<std::string>{"hyperpod-ns-inference"});
  EXPECT_EQ(inference->cluster_queue, "hyperpod-ns-inference-clusterqueue");

  const scheduler::model::Team* interns = p.FindTeam("interns");
  EXPECT_FALSE(interns->active);
  EXPECT_EQ(interns->cohort, "sandbox");

  // The named flavor wins over the instance-type flavor for nodes that carry its labels.
  EXPECT_EQ(p.FlavorOfNode({{"node.kubernetes.io/instance-type", "ml.p5.48xlarge"},
                            {"example.com/capacity", "reserved"}}),
            "p5-reserved");
  EXPECT_EQ(p.FlavorOfNode({{"node.kubernetes.io/instance-type", "ml.p5.48xlarge"}}),
            "ml.p5.48xlarge");
  // HyperPod's LocalQueue naming for the default namespace.
  bool found = false;
  for (const scheduler::model::LocalQueue& lq : p.local_queues) {
    if (lq.namespace_ == "hyperpod-ns-inference" && lq.name == "hyperpod-ns-inference-localqueue" &&
        lq.team == "inference") {
      found = true;
    }
  }
  EXPECT_TRUE(found);
}

TEST(Native, Defaults) {
  LoadResult r = LoadOne("t.yaml", R"(
apiVersion: taskgov.io/v1
kind: TaskGovernancePolicy
defaultCohort: shared
teams:
  - name: a
    compute: [{instanceType: ml.g5.12xlarge, accelerators: 3}]
  - name: solo
    cohort: ""
    compute: [{instanceType: ml.g5.12xlarge, accelerators: 1}]
)");
  ASSERT_TRUE(r.ok()) << Dump(r);
  const scheduler::model::Policy& p = *r.policy;
  // LendAndBorrow with BorrowLimit 50%, rounded down; lending unlimited.
  ExpectQuotas(p, {{"a", "ml.g5.12xlarge", "nvidia.com/gpu", 3, 1, kUnlimited},
                   {"a", "ml.g5.12xlarge", "cpu", 36000, 18000, kUnlimited},
                   // No cohort: neither borrows nor lends.
                   {"solo", "ml.g5.12xlarge", "nvidia.com/gpu", 1, 0, 0}});
  const scheduler::model::Team* a = p.FindTeam("a");
  EXPECT_EQ(a->fair_share_weight, 1.0);
  EXPECT_EQ(a->within_team, scheduler::model::WithinTeamPreemption::kLowerPriority);
  EXPECT_EQ(a->reclaim, scheduler::model::ReclaimPolicy::kAny);
  EXPECT_EQ(a->queueing, scheduler::model::QueueingStrategy::kBestEffortFIFO);
  EXPECT_TRUE(a->active);
  EXPECT_EQ(p.FindTeam("solo")->cohort, "");
}

// A policy of one team with `settings` (top-level YAML lines) after the head.
LoadResult LoadWithSettings(const std::string& settings) {
  return LoadOne("t.yaml", std::string(kPolicyHead) + settings + R"(teams:
  - name: a
    compute: [{instanceType: ml.g5.12xlarge, accelerators: 3}]
)");
}

TEST(Native, StarvationBoundDefaultsToTenMinutesAndZeroTurnsItOff) {
  LoadResult fallback = LoadWithSettings("");
  ASSERT_TRUE(fallback.ok()) << Dump(fallback);
  EXPECT_EQ(fallback.policy->starvation_bound_seconds, 600);
  LoadResult off = LoadWithSettings("starvationBoundSeconds: 0\n");
  ASSERT_TRUE(off.ok()) << Dump(off);
  EXPECT_EQ(off.policy->starvation_bound_seconds, 0);
  LoadResult negative = LoadWithSettings("starvationBoundSeconds: -5\n");
  EXPECT_FALSE(negative.ok());
  EXPECT_TRUE(HasDiagnostic(negative, Severity::kError, "t.yaml", "starvationBoundSeconds", ""))
      << Dump(negative);
}

// idleResourceSharing (HyperPod's IdleResourceSharing): off by default; Enabled lends the
// unallocated capacity within defaultCohort, and without one says it has no effect.
TEST(Native, IdleResourceSharingLendsWithinTheDefaultCohort) {
  LoadResult fallback = LoadWithSettings("defaultCohort: all\n");
  ASSERT_TRUE(fallback.ok()) << Dump(fallback);
  EXPECT_FALSE(fallback.policy->idle_resource_sharing.enabled);
  LoadResult on = LoadWithSettings("defaultCohort: all\nidleResourceSharing: Enabled\n");
  ASSERT_TRUE(on.ok()) << Dump(on);
  EXPECT_TRUE(on.diagnostics.empty()) << Dump(on);
  EXPECT_TRUE(on.policy->idle_resource_sharing.enabled);
  EXPECT_EQ(on.policy->idle_resource_sharing.cohort, "all");
  LoadResult off = LoadWithSettings("defaultCohort: all\nidleResourceSharing: Disabled\n");
  ASSERT_TRUE(off.ok()) << Dump(off);
  EXPECT_FALSE(off.policy->idle_resource_sharing.enabled);
  LoadResult no_cohort = LoadWithSettings("idleResourceSharing: Enabled\n");
  ASSERT_TRUE(no_cohort.ok()) << Dump(no_cohort);
  EXPECT_TRUE(HasDiagnostic(no_cohort, Severity::kWarning, "t.yaml", "idleResourceSharing",
                            "has no effect"))
      << Dump(no_cohort);
  EXPECT_EQ(no_cohort.policy->idle_resource_sharing.cohort, "");
  LoadResult bad = LoadWithSettings("idleResourceSharing: On\n");
  EXPECT_FALSE(bad.ok());
  EXPECT_TRUE(HasDiagnostic(bad, Severity::kError, "t.yaml", "idleResourceSharing",
                            "must be one of Enabled, Disabled; got 'On'"))
      << Dump(bad);
}

TEST(Native, GangTimeoutDefaultsToFiveMinutesAndIsSetPerPolicy) {
  LoadResult fallback = LoadWithSettings("");
  ASSERT_TRUE(fallback.ok()) << Dump(fallback);
  EXPECT_EQ(fallback.policy->gang_timeout_seconds, 300);
  LoadResult set = LoadWithSettings("gangs: {timeoutSeconds: 900}\n");
  ASSERT_TRUE(set.ok()) << Dump(set);
  EXPECT_EQ(set.policy->gang_timeout_seconds, 900);
  LoadResult zero = LoadWithSettings("gangs: {timeoutSeconds: 0}\n");
  EXPECT_FALSE(zero.ok());
  EXPECT_TRUE(HasDiagnostic(zero, Severity::kError, "t.yaml", "gangs.timeoutSeconds", ""))
      << Dump(zero);
}

// A team's borrowWithinCohort, as Kueue's ClusterQueue field.
TEST(Native, BorrowWithinCohort) {
  LoadResult r = LoadOne("t.yaml", std::string(kPolicyHead) + R"(teams:
  - name: a
    borrowWithinCohort: {policy: LowerPriority, maxPriorityThreshold: -3}
    compute: [{instanceType: ml.g5.12xlarge, accelerators: 3}]
  - name: b
    compute: [{instanceType: ml.g5.12xlarge, accelerators: 3}]
)");
  ASSERT_TRUE(r.ok()) << Dump(r);
  EXPECT_TRUE(r.policy->FindTeam("a")->borrow_within_cohort.lower_priority);
  EXPECT_EQ(r.policy->FindTeam("a")->borrow_within_cohort.max_priority_threshold, -3);
  EXPECT_FALSE(r.policy->FindTeam("b")->borrow_within_cohort.lower_priority);
  LoadResult bad = LoadOne("t.yaml", std::string(kPolicyHead) + R"(teams:
  - name: a
    borrowWithinCohort: {policy: Always}
    compute: [{instanceType: ml.g5.12xlarge, accelerators: 3}]
)");
  EXPECT_FALSE(bad.ok());
  EXPECT_TRUE(
      HasDiagnostic(bad, Severity::kError, "t.yaml", "teams[0].borrowWithinCohort.policy", ""))
      << Dump(bad);
}

// Kueue's fairSharing.preemptionStrategies: the default pair, or a list of distinct names.
TEST(Native, FairSharingStrategies) {
  using scheduler::model::FairShareStrategy;
  const std::string teams = R"(teams:
  - name: a
    compute: [{instanceType: ml.g5.12xlarge, accelerators: 3}]
)";
  auto with = [&](const std::string& list) {
    return LoadOne("t.yaml", std::string(kPolicyHead) +
                                 "preemption: {fairSharingStrategies: " + list + "}\n" + teams);
  };
  LoadResult fallback = LoadOne("t.yaml", std::string(kPolicyHead) + teams);
  ASSERT_TRUE(fallback.ok()) << Dump(fallback);
  // A TaskGovernancePolicy leaves Kueue's LessThanInitialShare out unless it names it (issue 34:
  // it lets two borrowers take the same capacity from each other in turn).
  EXPECT_EQ(fallback.policy->preemption.fair_sharing_strategies,
            std::vector<FairShareStrategy>{FairShareStrategy::kLessThanOrEqualToFinalShare});
  LoadResult pair = with("[LessThanOrEqualToFinalShare, LessThanInitialShare]");
  ASSERT_TRUE(pair.ok()) << Dump(pair);
  EXPECT_EQ(pair.policy->preemption.fair_sharing_strategies,
            (std::vector<FairShareStrategy>{FairShareStrategy::kLessThanOrEqualToFinalShare,
                                            FairShareStrategy::kLessThanInitialShare}));
  LoadResult one = with("[LessThanInitialShare]");
  ASSERT_TRUE(one.ok()) << Dump(one);
  EXPECT_EQ(one.policy->preemption.fair_sharing_strategies,
            std::vector<FairShareStrategy>{FairShareStrategy::kLessThanInitialShare});
  const std::pair<const char*, const char*> bad[] = {
      {"[LessThanFinalShare]", "preemption.fairSharingStrategies[0]"},
      {"[LessThanInitialShare, LessThanInitialShare]", "preemption.fairSharingStrategies[1]"},
      {"[]", "preemption.fairSharingStrategies"},
  };
  for (const auto& [list, path] : bad) {
    LoadResult r = with(list);
    EXPECT_FALSE(r.ok()) << list;
    EXPECT_TRUE(HasDiagnostic(r, Severity::kError, "t.yaml", path, "")) << list << "\n" << Dump(r);
  }
}

TEST(Native, TeamResolutionRules) {
  LoadResult defaults = LoadOne("t.yaml", R"(
apiVersion: taskgov.io/v1
kind: TaskGovernancePolicy
emptyPolicy: true
)");
  ASSERT_TRUE(defaults.ok()) << Dump(defaults);
  EXPECT_EQ(defaults.policy->team_resolution.pod_label, "");
  EXPECT_EQ(defaults.policy->team_resolution.namespace_label, "taskgov.io/team");

  LoadResult set = LoadOne("t.yaml", R"(
apiVersion: taskgov.io/v1
kind: TaskGovernancePolicy
emptyPolicy: true
teamResolution:
  podLabel: ml-platform.io/team
  namespaceLabel: ""
)");
  ASSERT_TRUE(set.ok()) << Dump(set);
  EXPECT_EQ(set.policy->team_resolution.pod_label, "ml-platform.io/team");
  EXPECT_EQ(set.policy->team_resolution.namespace_label, "");

  LoadResult bad = LoadOne("t.yaml", R"(
apiVersion: taskgov.io/v1
kind: TaskGovernancePolicy
teamResolution:
  podLabel: "not a label"
  namespaceLabel: [taskgov.io/team]
  byOwner: true
)");
  EXPECT_FALSE(bad.ok());
  EXPECT_TRUE(HasDiagnostic(bad, Severity::kError, "t.yaml", "teamResolution.podLabel",
                            "'not a label' is not a label key"))
      << Dump(bad);
  EXPECT_TRUE(HasDiagnostic(bad, Severity::kError, "t.yaml", "teamResolution.namespaceLabel", ""))
      << Dump(bad);
  EXPECT_TRUE(
      HasDiagnostic(bad, Severity::kError, "t.yaml", "teamResolution.byOwner", "unknown field"))
      << Dump(bad);
}

TEST(Native, FillerLinesForResourcesOthersGovern) {
  LoadResult r = LoadOne("t.yaml", R"(
apiVersion: taskgov.io/v1
kind: TaskGovernancePolicy
defaultCohort: shared
teams:
  - name: a
    compute: [{instanceType: ml.p5.48xlarge, accelerators: 8}]
    resources:
      - {flavor: ml.p5.48xlarge, name: vpc.amazonaws.com/efa, nominalQuota: 32}
  - name: b
    compute: [{instanceType: ml.p5.48xlarge, vCpu: 10}]
)");
  ASSERT_TRUE(r.ok()) << Dump(r);
  // b never mentions EFA on the flavor: an explicit zero line that neither borrows nor lends.
  ExpectQuotas(*r.policy, {{"b", "ml.p5.48xlarge", "vpc.amazonaws.com/efa", 0, 0, 0},
                           {"b", "ml.p5.48xlarge", "nvidia.com/gpu", 0, 0, kUnlimited},
                           {"a", "ml.p5.48xlarge", "vpc.amazonaws.com/efa", 32, 16, kUnlimited}});
}

TEST(Native, TeamDocumentsAndMultipleFiles) {
  LoadResult r = testing::Load({{"b.yaml", R"(
apiVersion: taskgov.io/v1
kind: Team
name: b
cohort: x
compute: [{instanceType: ml.m5.large, count: 4}]
)"},
                                {"a.yaml", R"(
apiVersion: taskgov.io/v1
kind: Team
name: a
cohort: x
compute: [{instanceType: ml.m5.large, count: 1}]
)"}});
  ASSERT_TRUE(r.ok()) << Dump(r);
  ASSERT_EQ(r.policy->teams.size(), 2u);
  EXPECT_EQ(r.policy->teams[0].name, "a");  // files in name order
  ExpectQuotas(*r.policy, {{"b", "ml.m5.large", "cpu", 8000, 4000, kUnlimited},
                           {"b", "ml.m5.large", "memory", 32 * kGi, 16 * kGi, kUnlimited}});
}

// Governance never switches off by accident: no files, an empty file and a configuration without
// teams are refused; `emptyPolicy: true` says it is meant, and must then define no team.
TEST(Native, ConfigurationWithoutTeamsNeedsTheEmptyPolicyMarker) {
  const char kNoTeam[] = "no team is defined";
  LoadResult none = testing::Load({});
  EXPECT_FALSE(none.ok());
  EXPECT_TRUE(HasDiagnostic(none, Severity::kError, "", "", kNoTeam)) << Dump(none);

  for (const char* content : {"", "# nothing yet\n", "\n  \n", "---\n---\n"}) {
    LoadResult blank = testing::Load({{"empty.yaml", content}, {"team.yaml", kTeamA}});
    EXPECT_FALSE(blank.ok()) << "'" << content << "'";
    EXPECT_TRUE(HasDiagnostic(blank, Severity::kError, "empty.yaml", "", "holds no document") ||
                HasDiagnostic(blank, Severity::kError, "empty.yaml", "", "empty (0 bytes)"))
        << "'" << content << "'\n"
        << Dump(blank);
  }

  LoadResult settings_only =
      LoadOne("p.yaml", std::string(kPolicyHead) + "podsWithoutTeam: Refuse\n");
  EXPECT_FALSE(settings_only.ok());
  EXPECT_TRUE(HasDiagnostic(settings_only, Severity::kError, "", "", "emptyPolicy: true"))
      << Dump(settings_only);

  LoadResult marked = LoadOne("p.yaml", std::string(kPolicyHead) + "emptyPolicy: true\n");
  ASSERT_TRUE(marked.ok()) << Dump(marked);
  EXPECT_TRUE(marked.policy->teams.empty());

  LoadResult contradiction = testing::Load(
      {{"p.yaml", std::string(kPolicyHead) + "emptyPolicy: true\n"}, {"team.yaml", kTeamA}});
  EXPECT_FALSE(contradiction.ok());
  EXPECT_TRUE(
      HasDiagnostic(contradiction, Severity::kError, "p.yaml", "emptyPolicy", "defines 1 teams"))
      << Dump(contradiction);
}

TEST(Native, SettingsFromTwoDocumentsMustAgree) {
  LoadResult r = testing::Load({{"a.yaml",
                                 "apiVersion: taskgov.io/v1\nkind: TaskGovernancePolicy\n"
                                 "idleComputeAllocation: FairShare\n"},
                                {"b.json", R"({"SchedulerConfig": {"FairShare": "Disabled",
                      "PriorityClasses": [{"Name": "x", "Weight": 1}]}})"}});
  EXPECT_FALSE(r.ok());
  EXPECT_TRUE(HasDiagnostic(r, Severity::kError, "b.json", "SchedulerConfig.FairShare",
                            "conflicts with the value set in a.yaml"))
      << Dump(r);
}

}  // namespace
}  // namespace taskgov::config
