// Kueue objects, v1beta1 and v1beta2.

#include <gtest/gtest.h>

#include "config/loader.h"
#include "config/resolve.h"
#include "config/test_util.h"

namespace taskgov::config {
namespace {

using scheduler::model::kUnlimited;
using testing::Dump;
using testing::FindQuota;
using testing::HasDiagnostic;
using testing::LoadOne;

// Issue 37: a ResourceFlavor's topologyName names a Topology, whose levels (widest first) become
// the flavor's; as Kueue's docs write them (v1beta1 objects; v1alpha1 Topology of Kueue <= 0.13).
TEST(Kueue, ATopologyNamedByAResourceFlavorGivesItsLevels) {
  const char* objects = R"(
apiVersion: kueue.x-k8s.io/%s
kind: Topology
metadata: {name: default}
spec:
  levels:
  - nodeLabel: cloud.provider.com/topology-block
  - nodeLabel: cloud.provider.com/topology-rack
  - nodeLabel: kubernetes.io/hostname
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {name: tas-flavor}
spec:
  nodeLabels: {cloud.provider.com/node-group: tas-node-group}
  topologyName: default
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: tas-cluster-queue}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [cpu]
    flavors:
    - name: tas-flavor
      resources: [{name: cpu, nominalQuota: 100}]
)";
  for (const char* version : {"v1alpha1", "v1beta1", "v1beta2"}) {
    std::string text = objects;
    text.replace(text.find("%s"), 2, version);
    LoadResult r = LoadOne("tas.yaml", text);
    ASSERT_TRUE(r.ok()) << version << ": " << r.FirstError();
    const scheduler::model::Flavor* f = r.policy->FindFlavor("tas-flavor");
    ASSERT_NE(f, nullptr);
    EXPECT_EQ(f->topology_levels, (std::vector<std::string>{"cloud.provider.com/topology-block",
                                                            "cloud.provider.com/topology-rack",
                                                            "kubernetes.io/hostname"}))
        << version;
    EXPECT_EQ(r.warning_count(), 0u) << version << ": topologyName is honoured now";
  }
  // A missing Topology; a hostname level that is not the last, a level listed twice, none.
  auto with = [&](const std::string& from, const std::string& to) {
    std::string text = objects;
    text.replace(text.find("%s"), 2, "v1beta2");
    text.replace(text.find(from), from.size(), to);
    return LoadOne("tas.yaml", text);
  };
  LoadResult missing = with("metadata: {name: default}", "metadata: {name: other}");
  EXPECT_FALSE(missing.ok());
  EXPECT_NE(missing.FirstError().find("names Topology 'default', which is not defined"),
            std::string::npos)
      << missing.FirstError();
  const std::string levels =
      "  levels:\n  - nodeLabel: cloud.provider.com/topology-block\n"
      "  - nodeLabel: cloud.provider.com/topology-rack\n  - nodeLabel: kubernetes.io/hostname\n";
  const std::vector<std::pair<std::string, std::string>> bad_levels = {
      {"  levels: [{nodeLabel: kubernetes.io/hostname}, {nodeLabel: rack}]\n",
       "kubernetes.io/hostname may only be the last (lowest) level"},
      {"  levels: [{nodeLabel: rack}, {nodeLabel: rack}]\n", "level 'rack' is listed twice"},
      {"  levels: []\n", "a Topology has 1 to 16 levels"}};
  for (const auto& [bad, error] : bad_levels) {
    LoadResult r = with(levels, bad);
    EXPECT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.FirstError().find(error), std::string::npos) << bad << ": " << r.FirstError();
    EXPECT_EQ(r.error_count(), 1u) << "the flavor naming it is not blamed too: " << Dump(r);
  }
}

TEST(Kueue, DefaultsFollowKueue) {
  LoadResult r = LoadOne("cq.yaml", R"(
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: team-a}
spec:
  cohortName: org
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [cpu, nvidia.com/gpu]
    flavors:
    - name: on-demand
      resources:
      - {name: cpu, nominalQuota: 500m}
      - {name: nvidia.com/gpu, nominalQuota: 4, lendingLimit: 2}
    - name: spot
      resources:
      - {name: cpu, nominalQuota: 2}
      - {name: nvidia.com/gpu, nominalQuota: 0, borrowingLimit: 8}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: on-demand}
spec:
  nodeLabels: {capacity: on-demand}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: spot}
)");
  ASSERT_TRUE(r.ok()) << Dump(r);
  const scheduler::model::Policy& p = *r.policy;
  const scheduler::model::Team* t = p.FindTeam("team-a");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->within_team, scheduler::model::WithinTeamPreemption::kNever);
  EXPECT_EQ(t->reclaim, scheduler::model::ReclaimPolicy::kNever);
  EXPECT_EQ(t->fair_share_weight, 1.0);
  EXPECT_EQ(t->cluster_queue, "team-a");
  EXPECT_EQ(t->cohort, "org");
  EXPECT_TRUE(t->namespaces.empty());
  ASSERT_EQ(t->flavors.size(), 2u);
  EXPECT_EQ(t->flavors[0].flavor, "on-demand");
  const scheduler::model::ResourceQuota* cpu = FindQuota(p, "team-a", "on-demand", "cpu");
  EXPECT_EQ(cpu->nominal, 500);
  EXPECT_EQ(cpu->borrowing_limit, kUnlimited);  // unset = unlimited
  EXPECT_EQ(cpu->lending_limit, kUnlimited);
  EXPECT_EQ(FindQuota(p, "team-a", "on-demand", "nvidia.com/gpu")->lending_limit, 2);
  EXPECT_EQ(FindQuota(p, "team-a", "spot", "nvidia.com/gpu")->borrowing_limit, 8);
  // A ResourceFlavor without labels matches every node not claimed by a labelled flavor.
  EXPECT_EQ(p.FlavorOfNode({{"capacity", "on-demand"}}), "on-demand");
  EXPECT_EQ(p.FlavorOfNode({{"node.kubernetes.io/instance-type", "ml.g5.xlarge"}}), "spot");
  // Kueue's fairSharing.preemptionStrategies default (a TaskGovernancePolicy's differs).
  EXPECT_EQ(p.preemption.fair_sharing_strategies,
            (std::vector<scheduler::model::FairShareStrategy>{
                scheduler::model::FairShareStrategy::kLessThanOrEqualToFinalShare,
                scheduler::model::FairShareStrategy::kLessThanInitialShare}));
}

TEST(Kueue, PreemptionFairSharingStopPolicyAndPriorityClasses) {
  LoadResult r = LoadOne("kueue.yaml", R"(
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: prod}
spec:
  cohort: org
  namespaceSelector:
    matchLabels: {tier: prod}
  queueingStrategy: StrictFIFO
  stopPolicy: HoldAndDrain
  fairSharing: {weight: "0.5"}
  preemption:
    withinClusterQueue: LowerOrNewerEqualPriority
    reclaimWithinCohort: LowerPriority
    borrowWithinCohort: {policy: LowerPriority, maxPriorityThreshold: 100}
  admissionChecks: [prov]
  resourceGroups:
  - coveredResources: [cpu]
    flavors:
    - name: default
      resources: [{name: cpu, nominalQuota: 8}]
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: WorkloadPriorityClass
metadata: {name: high}
value: 10000
description: business critical
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: main, namespace: prod-ns}
spec: {clusterQueue: prod}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: Cohort
metadata: {name: org}
spec: {parentName: company}
)");
  ASSERT_TRUE(r.ok()) << Dump(r);
  const scheduler::model::Policy& p = *r.policy;
  const scheduler::model::Team* t = p.FindTeam("prod");
  EXPECT_EQ(t->within_team, scheduler::model::WithinTeamPreemption::kLowerOrNewerEqualPriority);
  EXPECT_EQ(t->reclaim, scheduler::model::ReclaimPolicy::kLowerPriority);
  EXPECT_TRUE(t->borrow_within_cohort.lower_priority);  // honoured (FirstComeFirstServe)
  EXPECT_EQ(t->borrow_within_cohort.max_priority_threshold, 100);
  EXPECT_EQ(t->queueing, scheduler::model::QueueingStrategy::kStrictFIFO);
  EXPECT_FALSE(t->active);
  EXPECT_DOUBLE_EQ(t->fair_share_weight, 0.5);
  EXPECT_EQ(t->namespaces, std::vector<std::string>{"prod-ns"});
  ASSERT_TRUE(t->namespace_selector);
  EXPECT_EQ(t->namespace_selector->ToString(), "tier=prod");
  EXPECT_TRUE(t->namespace_selector->Matches({{"tier", "prod"}, {"x", "y"}}));
  EXPECT_FALSE(t->namespace_selector->Matches({{"tier", "dev"}}));
  ASSERT_EQ(p.local_queues.size(), 1u);
  EXPECT_EQ(p.local_queues[0].team, "prod");
  EXPECT_EQ(p.FindPriorityClass("high")->value, 10000);
  ASSERT_EQ(p.cohorts.size(), 2u);
  EXPECT_EQ(p.cohorts[0].name, "org");
  EXPECT_EQ(p.cohorts[0].parent, "company");
  // Each thing taskgov cannot honour is a warning naming the field.
  for (const char* path : {"spec.stopPolicy", "spec.admissionChecks"}) {
    EXPECT_TRUE(HasDiagnostic(r, Severity::kWarning, "kueue.yaml", path, "")) << path << Dump(r);
  }
  // 'default' is neither a ResourceFlavor here nor an instance type.
  EXPECT_TRUE(
      HasDiagnostic(r, Severity::kWarning, "kueue.yaml", "", "no ResourceFlavor 'default'"));
}

// spec.namespaceSelector is decoded with Kueue's meaning and enforced (pod_identity.h): absent
// selects no namespace (warned), {} every namespace, expressions as Kubernetes reads them; a
// malformed expression is an error.
TEST(Kueue, NamespaceSelectorIsDecodedAsKueueReadsIt) {
  auto selector_of = [](const std::string& spec) {
    LoadResult r = LoadOne("kueue.yaml",
                           "apiVersion: kueue.x-k8s.io/v1beta1\nkind: ClusterQueue\n"
                           "metadata: {name: q}\nspec:\n" +
                               spec);
    return r;
  };
  LoadResult absent = selector_of("  cohort: x\n");
  ASSERT_TRUE(absent.ok()) << Dump(absent);
  EXPECT_TRUE(absent.policy->FindTeam("q")->namespace_selector->nothing);
  EXPECT_TRUE(HasDiagnostic(absent, Severity::kWarning, "kueue.yaml", "spec.namespaceSelector",
                            "admits pods of no namespace"))
      << Dump(absent);
  LoadResult all = selector_of("  namespaceSelector: {}\n");
  ASSERT_TRUE(all.ok()) << Dump(all);
  EXPECT_TRUE(all.policy->FindTeam("q")->namespace_selector->MatchesEverything());
  LoadResult expr = selector_of(
      "  namespaceSelector:\n    matchExpressions:\n"
      "    - {key: team, operator: In, values: [a, b]}\n    - {key: legacy, operator: "
      "DoesNotExist}\n");
  ASSERT_TRUE(expr.ok()) << Dump(expr);
  const auto& sel = *expr.policy->FindTeam("q")->namespace_selector;
  EXPECT_EQ(sel.ToString(), "team in (a,b),!legacy");
  EXPECT_TRUE(sel.Matches({{"team", "b"}}));
  EXPECT_FALSE(sel.Matches({{"team", "b"}, {"legacy", ""}}));
  EXPECT_FALSE(sel.Matches({}));
  LoadResult bad = selector_of(
      "  namespaceSelector:\n    matchExpressions:\n    - {key: team, operator: Gt, values: "
      "[1]}\n"
      "    - {key: tier, operator: In}\n");
  EXPECT_FALSE(bad.ok());
  EXPECT_TRUE(HasDiagnostic(bad, Severity::kError, "kueue.yaml",
                            "spec.namespaceSelector.matchExpressions[0].operator",
                            "must be one of"))
      << Dump(bad);
  EXPECT_TRUE(HasDiagnostic(bad, Severity::kError, "kueue.yaml",
                            "spec.namespaceSelector.matchExpressions[1].values", "non-empty"))
      << Dump(bad);
}

// Issue 36, item 3: a policy's derived structures are near-linear. One ClusterQueue of 3,000
// flavors in two resource groups (cpu and memory on a flavor every node belongs to, GPUs on
// 3,000 ResourceFlavors) and a chain of 6,000 cohorts (a team at its bottom) load in seconds —
// the pairwise companion checks and the cycle walk from every cohort took minutes. A chain
// deeper than kMaxCohortDepth is refused, once, naming its deepest cohort.
std::string LargeKueuePolicy(int flavors, int cohorts) {
  std::string y =
      "apiVersion: kueue.x-k8s.io/v1beta1\nkind: ResourceFlavor\nmetadata: {name: default}\n";
  for (int i = 0; i < flavors; ++i) {
    const std::string n = std::to_string(i);
    y += "---\napiVersion: kueue.x-k8s.io/v1beta1\nkind: ResourceFlavor\nmetadata: {name: it-" + n +
         "}\nspec: {nodeLabels: {node.kubernetes.io/instance-type: it-" + n +
         ", example.com/zone: z" + std::to_string(i % 4) + "}}\n";
  }
  for (int c = 0; c < cohorts; ++c) {
    y += "---\napiVersion: kueue.x-k8s.io/v1beta1\nkind: Cohort\nmetadata: {name: c" +
         std::to_string(c) + "}\n" +
         (c > 0 ? "spec: {parentName: c" + std::to_string(c - 1) + "}\n" : "");
  }
  // A small team at the bottom of the chain, the big one under its root.
  y += "---\napiVersion: kueue.x-k8s.io/v1beta1\nkind: ClusterQueue\nmetadata: {name: small}\n"
       "spec:\n  cohort: c" +
       std::to_string(cohorts - 1) +
       "\n  namespaceSelector: {}\n  resourceGroups:\n  - coveredResources: [cpu]\n    "
       "flavors:\n"
       "    - name: default\n      resources: [{name: cpu, nominalQuota: 1}]\n";
  y += "---\napiVersion: kueue.x-k8s.io/v1beta1\nkind: ClusterQueue\nmetadata: {name: "
       "big}\nspec:\n"
       "  cohort: c0\n  namespaceSelector: {}\n  resourceGroups:\n  - coveredResources: [cpu, "
       "memory]\n"
       "    flavors:\n    - name: default\n      resources: [{name: cpu, nominalQuota: 100}, "
       "{name: memory, nominalQuota: 100Gi}]\n  - coveredResources: [nvidia.com/gpu]\n    "
       "flavors:\n";
  for (int i = 0; i < flavors; ++i) {
    y += "    - name: it-" + std::to_string(i) +
         "\n      resources: [{name: nvidia.com/gpu, "
         "nominalQuota: 8}]\n";
  }
  return y;
}

TEST(Kueue, ALargePolicyLoadsInNearLinearTime) {
  LoadResult r = LoadOne("kueue.yaml", LargeKueuePolicy(3000, 6000));
  ASSERT_TRUE(r.ok()) << Dump(r);
  const scheduler::model::Policy& p = *r.policy;
  const scheduler::model::Team& big = *p.FindTeam("big");
  ASSERT_EQ(big.flavors.size(), 3001u);
  EXPECT_EQ(p.RootCohort("c5999"), "c0");
  const auto companions = p.TeamCompanions(big);
  // A GPU pod's cpu and memory are charged on the default flavor, which covers every node.
  EXPECT_EQ(companions[1], (std::vector<std::pair<std::string, std::string>>{
                               {"cpu", "default"}, {"memory", "default"}}));
  EXPECT_FALSE(HasDiagnostic(r, Severity::kWarning, "kueue.yaml", "", "are not charged for"));
}

TEST(Kueue, ACohortTreeDeeperThanTheLimitIsRefused) {
  LoadResult r = LoadOne("kueue.yaml", LargeKueuePolicy(1, static_cast<int>(kMaxCohortDepth) + 1));
  EXPECT_FALSE(r.ok());
  EXPECT_TRUE(HasDiagnostic(r, Severity::kError, "kueue.yaml", "",
                            "cohort 'c10000' is 10001 levels below its root"))
      << Dump(r);
}

// Issue 36, item 12: resource names are validated as the API server validates a pod's
// requests; a name that is not one ("a,b=c\n<script>", which passed --check-config and reached
// usage.csv as written) is an error naming the file, the path and the rule, in Kueue and
// Volcano documents alike.
TEST(Kueue, ResourceNamesAreValidatedAsKubernetesDoes) {
  LoadResult bad = LoadOne("kueue.yaml", R"(apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: q}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: ["a,b=c\n<script>", nvidia.com/gpu, gpu]
    flavors:
    - name: default
      resources:
      - {name: "a,b=c\n<script>", nominalQuota: 1}
      - {name: nvidia.com/gpu, nominalQuota: 8}
      - {name: gpu, nominalQuota: 8}
)");
  EXPECT_FALSE(bad.ok());
  EXPECT_TRUE(HasDiagnostic(bad, Severity::kError, "kueue.yaml",
                            "spec.resourceGroups[0].flavors[0].resources[0]",
                            "resource name 'a,b=c\\x0a<script>' is not one Kubernetes accepts"))
      << Dump(bad);
  EXPECT_TRUE(HasDiagnostic(bad, Severity::kError, "kueue.yaml",
                            "spec.resourceGroups[0].flavors[0].resources[2]",
                            "resource name 'gpu' is not one Kubernetes accepts"))
      << Dump(bad);
  LoadResult volcano = LoadOne("v.yaml", R"(apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: training}
spec:
  weight: 1
  capability: {"x/<b>": "1", nvidia.com/gpu: "8", hugepages-2Mi: 1Gi}
)");
  EXPECT_FALSE(volcano.ok());
  EXPECT_TRUE(HasDiagnostic(volcano, Severity::kError, "v.yaml", "",
                            "resource name 'x/<b>' is not one Kubernetes accepts"))
      << Dump(volcano);
  EXPECT_FALSE(HasDiagnostic(volcano, Severity::kError, "v.yaml", "", "hugepages-2Mi"));
}

// v1beta2 LocalQueue, WorkloadPriorityClass and Cohort with Kueue's v1beta2 field names
// (apis/kueue/v1beta2: LocalQueueSpec.clusterQueue / stopPolicy / fairSharing / wallTimePolicy,
// WorkloadPriorityClass.value / description, CohortSpec.parentName / resourceGroups /
// fairSharing), as `kubectl get -o yaml` prints them.
TEST(Kueue, V1beta2LocalQueuePriorityClassAndCohort) {
  LoadResult r = LoadOne("v1beta2.yaml", R"(
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: research}
spec:
  cohortName: lab
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - name: ml.p5.48xlarge
      resources: [{name: nvidia.com/gpu, nominalQuota: 16}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: jobs, namespace: research-ns}
spec:
  clusterQueue: research
  stopPolicy: Hold
  fairSharing: {weight: "2"}
  wallTimePolicy: {wallTimeAllocatedHours: 100, actionWhenWallTimeExhausted: Hold}
status: {pendingWorkloads: 3, admittedWorkloads: 1}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: WorkloadPriorityClass
metadata: {name: urgent}
value: 5000
description: deadlines
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Cohort
metadata: {name: lab}
spec:
  parentName: company
  fairSharing: {weight: "1.5"}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - name: ml.p5.48xlarge
      resources: [{name: nvidia.com/gpu, nominalQuota: 8}]
status: {}
)");
  ASSERT_TRUE(r.ok()) << Dump(r);
  const scheduler::model::Policy& p = *r.policy;
  ASSERT_EQ(p.local_queues.size(), 1u);
  EXPECT_EQ(p.local_queues[0].team, "research");
  EXPECT_EQ(p.FindTeam("research")->namespaces, std::vector<std::string>{"research-ns"});
  ASSERT_NE(p.FindPriorityClass("urgent"), nullptr);
  EXPECT_EQ(p.FindPriorityClass("urgent")->value, 5000);
  ASSERT_FALSE(p.cohorts.empty());
  EXPECT_EQ(p.cohorts[0].name, "lab");
  EXPECT_EQ(p.cohorts[0].parent, "company");
  EXPECT_DOUBLE_EQ(p.cohorts[0].fair_share_weight, 1.5);  // weighs 'lab' against its siblings
  EXPECT_EQ(p.FindTeam("research")->cohort, "lab");
  ASSERT_EQ(p.cohorts[0].flavors.size(), 1u);  // the Cohort's own quota
  EXPECT_EQ(p.cohorts[0].flavors[0].flavor, "ml.p5.48xlarge");
  ASSERT_EQ(p.cohorts[0].flavors[0].resources.size(), 1u);
  EXPECT_EQ(p.cohorts[0].flavors[0].resources[0].resource, "nvidia.com/gpu");
  EXPECT_EQ(p.cohorts[0].flavors[0].resources[0].nominal, 8);
  for (const char* path : {"spec.stopPolicy", "spec.fairSharing", "spec.wallTimePolicy"}) {
    EXPECT_TRUE(HasDiagnostic(r, Severity::kWarning, "v1beta2.yaml", path, "")) << path << Dump(r);
  }
  EXPECT_FALSE(HasDiagnostic(r, Severity::kWarning, "v1beta2.yaml", "spec.resourceGroups", ""))
      << Dump(r);
  // 'lab' pools its quota with the rest of 'company' (the ledger's cohort tree): nothing to
  // warn.
  EXPECT_FALSE(HasDiagnostic(r, Severity::kWarning, "v1beta2.yaml", "", "has parent")) << Dump(r);
}

// A Cohort's own quota: its lines are checked as a ClusterQueue's are; its limits bound what it
// takes from and gives to its parent (ignored, with a warning, for a cohort without one), and
// quota no team of the cohort's tree can use is pointed out.
TEST(Kueue, CohortQuota) {
  LoadResult r = LoadOne("cohort.yaml", R"(
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: a}
spec:
  cohort: all
  resourceGroups:
  - coveredResources: [cpu]
    flavors:
    - name: default
      resources: [{name: cpu, nominalQuota: 1}]
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: Cohort
metadata: {name: all}
spec:
  resourceGroups:
  - coveredResources: [cpu, memory]
    flavors:
    - name: default
      resources:
      - {name: cpu, nominalQuota: 3, borrowingLimit: 1}
      - {name: memory, nominalQuota: 4Gi}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: Cohort
metadata: {name: child}
spec:
  parentName: all
  resourceGroups:
  - coveredResources: [cpu]
    flavors:
    - name: default
      resources:
      - {name: cpu, nominalQuota: 2, borrowingLimit: 2, lendingLimit: 1}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: b}
spec:
  cohort: child
  resourceGroups:
  - coveredResources: [cpu]
    flavors:
    - name: default
      resources: [{name: cpu, nominalQuota: 1}]
)");
  ASSERT_TRUE(r.ok()) << Dump(r);
  const scheduler::model::Cohort* all = r.policy->FindCohort("all");
  ASSERT_NE(all, nullptr);
  ASSERT_EQ(all->flavors.size(), 1u);
  ASSERT_EQ(all->flavors[0].resources.size(), 2u);
  EXPECT_EQ(all->flavors[0].resources[0].resource, "cpu");
  EXPECT_EQ(all->flavors[0].resources[0].nominal, 3000);  // millicores
  EXPECT_EQ(all->flavors[0].resources[1].nominal, 4LL << 30);
  const std::string line = "spec.resourceGroups[0].flavors[0].resources[";
  EXPECT_EQ(all->flavors[0].resources[0].borrowing_limit, scheduler::model::kUnlimited);
  EXPECT_TRUE(HasDiagnostic(r, Severity::kWarning, "cohort.yaml", line + "0]",
                            "ignored: cohort 'all' has no parent"))
      << Dump(r);
  EXPECT_TRUE(HasDiagnostic(r, Severity::kWarning, "cohort.yaml", line + "1]",
                            "no team in the cohort tree of 'all' has quota for memory"))
      << Dump(r);
  // Under a parent, the limits hold; a team of a child cohort governs the parent's cpu.
  const scheduler::model::Cohort* child = r.policy->FindCohort("child");
  ASSERT_NE(child, nullptr);
  ASSERT_EQ(child->flavors.size(), 1u);
  EXPECT_EQ(child->flavors[0].resources[0].borrowing_limit, 2000);
  EXPECT_EQ(child->flavors[0].resources[0].lending_limit, 1000);
  EXPECT_FALSE(HasDiagnostic(r, Severity::kWarning, "cohort.yaml", "", "cohort tree of 'child'"))
      << Dump(r);

  LoadResult bad = LoadOne("cohort.yaml", R"(
apiVersion: kueue.x-k8s.io/v1beta1
kind: Cohort
metadata: {name: all}
spec:
  resourceGroups:
  - coveredResources: [cpu]
    flavors:
    - name: default
      resources: [{name: cpu, nominalQuota: 1.5.3}]
    - name: default
      resources: [{name: cpu, nominalQuota: 1}]
)");
  EXPECT_FALSE(bad.ok());
  EXPECT_TRUE(HasDiagnostic(bad, Severity::kError, "cohort.yaml",
                            "spec.resourceGroups[0].flavors[0].resources[0].nominalQuota", "1.5.3"))
      << Dump(bad);
  EXPECT_TRUE(HasDiagnostic(bad, Severity::kError, "cohort.yaml",
                            "spec.resourceGroups[0].flavors[1].name",
                            "listed twice in this Cohort"))
      << Dump(bad);
}

// A Cohort's spec.fairSharing.weight weighs it against its siblings (Kueue's DRS of a cohort);
// unset it is 1, a root's weighs nothing (a warning), and a weight that is not a quantity is an
// error at its path.
TEST(Kueue, CohortFairSharingWeight) {
  const std::string queue = R"(
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: a}
spec:
  cohortName: lab
  resourceGroups:
  - coveredResources: [cpu]
    flavors:
    - name: default
      resources: [{name: cpu, nominalQuota: 1}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Cohort
metadata: {name: org}
spec:
  fairSharing: {weight: "3"}
)";
  LoadResult r = LoadOne("weights.yaml", queue + R"(---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Cohort
metadata: {name: lab}
spec:
  parentName: org
  fairSharing: {weight: "0.25"}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Cohort
metadata: {name: ops}
spec: {parentName: org}
)");
  ASSERT_TRUE(r.ok()) << Dump(r);
  ASSERT_NE(r.policy->FindCohort("lab"), nullptr);
  EXPECT_DOUBLE_EQ(r.policy->FindCohort("lab")->fair_share_weight, 0.25);
  ASSERT_NE(r.policy->FindCohort("ops"), nullptr);
  EXPECT_DOUBLE_EQ(r.policy->FindCohort("ops")->fair_share_weight, 1.0);
  EXPECT_TRUE(HasDiagnostic(r, Severity::kWarning, "weights.yaml", "",
                            "cohort 'org' has no parent, and its fair-sharing weight"))
      << Dump(r);
  EXPECT_FALSE(HasDiagnostic(r, Severity::kWarning, "weights.yaml", "", "cohort 'lab' has no"))
      << Dump(r);

  LoadResult bad = LoadOne("weights.yaml", queue + R"(---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Cohort
metadata: {name: lab}
spec:
  parentName: org
  fairSharing: {weight: heavy}
)");
  EXPECT_FALSE(bad.ok());
  EXPECT_TRUE(HasDiagnostic(bad, Severity::kError, "weights.yaml", "spec.fairSharing.weight", ""))
      << Dump(bad);
}

TEST(Kueue, V1beta2CohortTakesParentNameNotParent) {
  LoadResult r = LoadOne("cohort.yaml", R"(
apiVersion: kueue.x-k8s.io/v1beta2
kind: Cohort
metadata: {name: lab}
spec: {parent: company}
)");
  EXPECT_FALSE(r.ok());
  EXPECT_TRUE(HasDiagnostic(r, Severity::kError, "cohort.yaml", "spec.parent", "")) << Dump(r);
}

TEST(Kueue, KubectlListWithUnrelatedObjects) {
  LoadResult r = LoadOne("dump.yaml", R"(
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: ConfigMap
  metadata: {name: unrelated}
  data: {x: y}
- apiVersion: kueue.x-k8s.io/v1beta2
  kind: Workload
  metadata: {name: w, namespace: n}
- apiVersion: kueue.x-k8s.io/v1beta2
  kind: ClusterQueueList
  items:
  - apiVersion: kueue.x-k8s.io/v1beta2
    kind: ClusterQueue
    metadata: {name: q}
    spec:
      namespaceSelector: {}
      resourceGroups:
      - coveredResources: [cpu]
        flavors: [{name: ml.m5.large, resources: [{name: cpu, nominalQuota: 4}]}]
)");
  ASSERT_TRUE(r.ok()) << Dump(r);
  EXPECT_NE(r.policy->FindTeam("q"), nullptr);
  EXPECT_TRUE(HasDiagnostic(r, Severity::kWarning, "dump.yaml", "items[0]", "not a policy"));
  EXPECT_TRUE(HasDiagnostic(r, Severity::kWarning, "dump.yaml", "items[1].kind", "Workload"));
  // No cohort: lends and borrows nothing.
  const scheduler::model::ResourceQuota* cpu = FindQuota(*r.policy, "q", "ml.m5.large", "cpu");
  EXPECT_EQ(cpu->borrowing_limit, 0);
  EXPECT_EQ(cpu->lending_limit, 0);
}

TEST(Kueue, UncoveredResourcesCannotBeBorrowed) {
  LoadResult r = LoadOne("kueue.yaml", R"(
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: gpu-team}
spec:
  cohortName: org
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [cpu, nvidia.com/gpu]
    flavors: [{name: ml.g5.12xlarge, resources: [{name: cpu, nominalQuota: 48}, {name: nvidia.com/gpu, nominalQuota: 4}]}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: cpu-team}
spec:
  cohortName: org
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [cpu]
    flavors: [{name: ml.g5.12xlarge, resources: [{name: cpu, nominalQuota: 4}]}]
)");
  ASSERT_TRUE(r.ok()) << Dump(r);
  const scheduler::model::ResourceQuota* gpu =
      FindQuota(*r.policy, "cpu-team", "ml.g5.12xlarge", "nvidia.com/gpu");
  ASSERT_NE(gpu, nullptr);
  EXPECT_EQ(gpu->nominal, 0);
  EXPECT_EQ(gpu->borrowing_limit, 0);
  EXPECT_EQ(gpu->lending_limit, 0);
}

// Several resource groups: cpu on an unlabelled default flavor, GPUs on an instance type. A pod
// on a p5 node is charged its cpu on default (the ledger's companions), so the team gets no
// zero cpu line on p5 though another team governs cpu there; with cpu on a flavor p5 nodes need
// not belong to, pods on p5 nodes would not be charged for cpu: a warning naming both.
TEST(Kueue, ResourceGroupsChargeOtherGroupsOnCoveringFlavors) {
  auto load = [](const std::string& cpu_flavor_spec) {
    return LoadOne("groups.yaml", R"(
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: cpus}
)" + cpu_flavor_spec + R"(
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: ml.p5.48xlarge}
spec: {nodeLabels: {node.kubernetes.io/instance-type: ml.p5.48xlarge}}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: train}
spec:
  cohortName: org
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [cpu]
    flavors: [{name: cpus, resources: [{name: cpu, nominalQuota: 64}]}]
  - coveredResources: [nvidia.com/gpu]
    flavors: [{name: ml.p5.48xlarge, resources: [{name: nvidia.com/gpu, nominalQuota: 8}]}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: serve}
spec:
  cohortName: org
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [cpu, nvidia.com/gpu]
    flavors: [{name: ml.p5.48xlarge, resources: [{name: cpu, nominalQuota: 8}, {name: nvidia.com/gpu, nominalQuota: 1}]}]
)");
  };
  LoadResult r = load("");
  ASSERT_TRUE(r.ok()) << Dump(r);
  EXPECT_EQ(FindQuota(*r.policy, "train", "ml.p5.48xlarge", "cpu"), nullptr)
      << "charged on 'cpus' instead";
  EXPECT_FALSE(HasDiagnostic(r, Severity::kWarning, "groups.yaml", "", "not charged")) << Dump(r);

  LoadResult labelled = load("spec: {nodeLabels: {example.com/pool: cpu}}");
  ASSERT_TRUE(labelled.ok()) << Dump(labelled);
  EXPECT_TRUE(HasDiagnostic(labelled, Severity::kWarning, "groups.yaml", "",
                            "ClusterQueue 'train': pods on 'ml.p5.48xlarge' nodes are not charged "
                            "for cpu: none of its flavors for it ('cpus')"))
      << Dump(labelled);
  ASSERT_NE(FindQuota(*labelled.policy, "train", "ml.p5.48xlarge", "cpu"), nullptr);
  EXPECT_EQ(FindQuota(*labelled.policy, "train", "ml.p5.48xlarge", "cpu")->nominal, 0);
}

TEST(Kueue, ValidationErrors) {
  struct Case {
    std::string name, yaml, path, text;
  };
  const std::string head = "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\n";
  for (const Case& c : std::vector<Case>{
           {"v1beta1 field name in v1beta2",
            head + "metadata: {name: q}\nspec: {cohort: x, namespaceSelector: {}}\n", "spec.cohort",
            "calls it cohortName"},
           {"borrowing limit without cohort", head + R"(metadata: {name: q}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [cpu]
    flavors: [{name: f, resources: [{name: cpu, nominalQuota: 4, borrowingLimit: 2}]}]
)",
            "spec.resourceGroups[0].flavors[0].resources[0]", "has no cohort"},
           {"lending limit above nominal", head + R"(metadata: {name: q}
spec:
  cohortName: c
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [cpu]
    flavors: [{name: f, resources: [{name: cpu, nominalQuota: 4, lendingLimit: 5}]}]
)",
            "spec.resourceGroups[0].flavors[0].resources[0]", "exceeds the nominal quota"},
           {"resources out of step with coveredResources", head + R"(metadata: {name: q}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [cpu, memory]
    flavors: [{name: f, resources: [{name: memory, nominalQuota: 1Gi}, {name: cpu, nominalQuota: 1}]}]
)",
            "spec.resourceGroups[0].flavors[0].resources", "same order"},
           {"unparsable quantity", head + R"(metadata: {name: q}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [cpu]
    flavors: [{name: f, resources: [{name: cpu, nominalQuota: 1.5.3}]}]
)",
            "spec.resourceGroups[0].flavors[0].resources[0].nominalQuota", "1.5.3"},
           {"negative quantity", head + R"(metadata: {name: q}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [cpu]
    flavors: [{name: f, resources: [{name: cpu, nominalQuota: "-1"}]}]
)",
            "spec.resourceGroups[0].flavors[0].resources[0].nominalQuota", "-1"},
           {"unsupported version",
            "apiVersion: kueue.x-k8s.io/v1alpha9\nkind: ClusterQueue\nmetadata: {name: q}\n",
            "apiVersion", "unsupported Kueue version"},
           {"cohort cycle",
            R"(apiVersion: kueue.x-k8s.io/v1beta1
kind: Cohort
metadata: {name: x}
spec: {parentName: y}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: Cohort
metadata: {name: y}
spec: {parentName: z}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: Cohort
metadata: {name: z}
spec: {parentName: x}
)",
            "", "cohorts form a cycle"},
       }) {
    LoadResult r = LoadOne("kueue.yaml", c.yaml);
    EXPECT_FALSE(r.ok()) << c.name;
    EXPECT_TRUE(HasDiagnostic(r, Severity::kError, "kueue.yaml", c.path, c.text)) << c.name << "\n"
                                                                                  << Dump(r);
  }
}

}  // namespace
}  // namespace taskgov::config
