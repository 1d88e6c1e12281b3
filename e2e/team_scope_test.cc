// Nobody charges another team (issue 36, item 1), through the real extender: a pod's team is the
// team that owns its namespace. The attack: a user of team a creates a LocalQueue `steal` in
// hyperpod-ns-a pointing at team b's ClusterQueue, and labels a high-priority pod with it. Were
// it charged to b, b (full) would have its own running pod evicted to make room. It is refused on
// every node with the reason, b keeps every pod, and nothing is evicted. A Kueue ClusterQueue's
// namespaceSelector is enforced as Kueue does it: a LocalQueue in a namespace it does not select
// gets Kueue's "Workload namespace doesn't match ClusterQueue selector".

#include <gtest/gtest.h>

#include "e2e/scenario_test_util.h"

namespace taskgov::e2e {
namespace {

// Teams a and b, 8 GPUs each on ml.p5.48xlarge, neither lends; b preempts its own lower-priority
// pods for higher-priority ones.
constexpr char kPolicy[] = R"(apiVersion: taskgov.io/v1
kind: TaskGovernancePolicy
taskPrioritization: TaskRanking
idleComputeAllocation: FairShare
priorityClasses:
  - {name: inference, weight: 100}
  - {name: training, weight: 50}
preemption: {gracePeriodSeconds: 30, minimumRuntimeSeconds: 0}
defaultCohort: e2e
teams:
  - name: a
    sharing: {strategy: DontLend}
    preemptTeamTasks: LowerPriority
    compute: [{instanceType: ml.p5.48xlarge, accelerators: 8}]
  - name: b
    sharing: {strategy: DontLend}
    preemptTeamTasks: LowerPriority
    compute: [{instanceType: ml.p5.48xlarge, accelerators: 8}]
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {name: ml.g5.12xlarge}
spec: {nodeLabels: {node.kubernetes.io/instance-type: ml.g5.12xlarge}}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: shared}
spec:
  namespaceSelector: {matchLabels: {taskgov.example/shared: "true"}}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - name: ml.g5.12xlarge
      resources: [{name: nvidia.com/gpu, nominalQuota: 4}]
)";

std::string LocalQueueJson(const std::string& ns, const std::string& name,
                           const std::string& cluster_queue) {
  return R"({"apiVersion":"kueue.x-k8s.io/v1beta1","kind":"LocalQueue","metadata":{"name":")" +
         name + R"(","namespace":")" + ns + R"("},"spec":{"clusterQueue":")" + cluster_queue +
         R"("}})";
}

class TeamScopeTest : public ScenarioTest {};

TEST_F(TeamScopeTest, AQueueOfAnotherTeamIsRefusedAndEvictsNothing) {
  HarnessOptions options;
  options.config["policy.yaml"] = kPolicy;
  options.preload = [](scheduler::kube::testing::FakeApiServer& api) -> common::Status {
    for (auto [ns, name, cq] :
         {std::tuple{"hyperpod-ns-a", "steal", "hyperpod-ns-b-clusterqueue"},
          std::tuple{"lab", "to-shared", "shared"}, std::tuple{"scratch", "to-shared", "shared"}}) {
      common::Result<std::string> r = api.Upsert("localqueues", LocalQueueJson(ns, name, cq));
      if (!r.ok()) return r.error();
    }
    for (auto [ns, shared] : {std::pair{"lab", true}, std::pair{"scratch", false}}) {
      common::Result<std::string> r =
          api.Upsert("namespaces", std::string(R"({"metadata":{"name":")") + ns +
                                       R"(","labels":{"taskgov.example/shared":")" +
                                       (shared ? "true" : "false") + R"("}}})");
      if (!r.ok()) return r.error();
    }
    return common::Status::Ok();
  };
  StartHarness(std::move(options));
  // b fills its 8 GPUs with training pods.
  std::vector<PodSpec> b_pods;
  for (int i = 0; i < 4; ++i) b_pods.push_back(GpuPod("b", "b-" + std::to_string(i), 2));
  SubmitAll(b_pods);
  ASSERT_TRUE(h().RunUntil([&] { return Running("b") == 8; }, 10));
  const size_t steps_before = h().history().size();

  PodSpec steal = GpuPod("a", "steal", 2, "inference");
  steal.labels["kueue.x-k8s.io/queue-name"] = "steal";
  ASSERT_TRUE(h().Submit(steal).ok());
  StepReport step = h().Step();
  const Attempt* attempt = step.Find(Ns("a") + "/steal");
  ASSERT_NE(attempt, nullptr);
  EXPECT_EQ(attempt->outcome, Attempt::Outcome::kRefused);
  EXPECT_NE(attempt->reason.find("names LocalQueue hyperpod-ns-a/steal (ClusterQueue "
                                 "hyperpod-ns-b-clusterqueue) of team b, which it may not use: "
                                 "namespace hyperpod-ns-a belongs to team a"),
            std::string::npos)
      << attempt->reason;
  // The preemption controller runs every second and soon after a pod starts waiting: steps until
  // nothing has been evicted for 3 s.
  ASSERT_TRUE(h().RunUntilQuiet(std::chrono::seconds(3), 20));
  EXPECT_TRUE(EvictedSince(steps_before).empty());
  EXPECT_TRUE(h().Evictions().empty());
  EXPECT_EQ(Running("b"), 8u);
  EXPECT_EQ(Running("a"), 0u);
  common::Result<LedgerLine> b = h().ProbeLedger(Ns("b"), kP5, kGpu);
  ASSERT_TRUE(b.ok()) << b.error().message;
  EXPECT_EQ(b->in_use, 8);

  // Kueue's namespaceSelector: lab is selected, scratch is not.
  PodSpec in_lab = GpuPod("a", "in-lab", 1, "training", kG5);
  in_lab.ns = "lab";
  in_lab.labels["kueue.x-k8s.io/queue-name"] = "to-shared";
  PodSpec in_scratch = in_lab;
  in_scratch.ns = "scratch";
  in_scratch.name = "in-scratch";
  SubmitAll({in_lab, in_scratch});
  step = h().Step();
  ASSERT_NE(step.Find("lab/in-lab"), nullptr);
  EXPECT_EQ(step.Find("lab/in-lab")->outcome, Attempt::Outcome::kBound);
  const Attempt* scratch = step.Find("scratch/in-scratch");
  ASSERT_NE(scratch, nullptr);
  EXPECT_EQ(scratch->outcome, Attempt::Outcome::kRefused);
  EXPECT_NE(scratch->reason.find("Workload namespace doesn't match ClusterQueue selector"),
            std::string::npos)
      << scratch->reason;
}

// Issue 36, item 5: team a reclaims from b, and the eviction of b's newest pods is refused by
// b's PodDisruptionBudget. a's refusal reason (what its FailedScheduling event says) tells that a
// pod of b is protected, never which pod or which budget; b's victim's event names a's pod by its
// UID only.
TEST_F(TeamScopeTest, NotesAndRefusalsNameOnlyTheTeamsOwnObjects) {
  StartWithPolicy(R"(apiVersion: taskgov.io/v1
kind: TaskGovernancePolicy
taskPrioritization: TaskRanking
idleComputeAllocation: FirstComeFirstServe
priorityClasses: [{name: training, weight: 50}, {name: experimentation, weight: 25}]
preemption: {gracePeriodSeconds: 30, minimumRuntimeSeconds: 0}
defaultCohort: e2e
teams:
  - name: a
    sharing: {strategy: LendAndBorrow, borrowLimit: 100}
    compute: [{instanceType: ml.p5.48xlarge, accelerators: 8}]
  - name: b
    sharing: {strategy: LendAndBorrow, borrowLimit: 200}
    compute: [{instanceType: ml.p5.48xlarge, accelerators: 4}]
)");
  // b runs 12 GPUs (8 borrowed from a), leaving 4 free on the nodes: a's pod fits a node, so its
  // filter is asked, and refused for the quota b borrowed.
  // One at a time: b-2 starts last. All three may start in the same second (startTime has
  // seconds), and then the newest is told by priority: b-1 and b-2 run at a lower one than b-0, so
  // one of them — both protected — is the first victim tried either way.
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(h().Submit(GpuPod("b", "b-" + std::to_string(i), 4,
                                  i == 0 ? "training" : "experimentation"))
                    .ok());
    h().Step();
  }
  ASSERT_TRUE(h().RunUntil([&] { return Running("b") == 12; }, 10));
  for (const char* pod : {"/b-1", "/b-2"}) {
    h().api().BlockEvictions(Ns("b") + pod,
                             "The disruption budget b-secret-pdb needs 4 healthy pods and has 4 "
                             "currently");
  }
  const size_t first = h().history().size();
  ASSERT_TRUE(h().Submit(GpuPod("a", "a-0", 4)).ok());
  ASSERT_TRUE(h().RunUntil([&] { return Running("a") == 4; }, 20));
  bool told = false;
  for (size_t i = first; i < h().history().size(); ++i) {
    for (const Attempt& a : h().history()[i].attempts) {
      if (a.pod != Ns("a") + "/a-0") continue;
      EXPECT_EQ(a.reason.find("hyperpod-ns-b/"), std::string::npos) << a.reason;
      EXPECT_EQ(a.reason.find("b-secret-pdb"), std::string::npos) << a.reason;
      told |= a.reason.find("eviction of a pod of b refused by a PodDisruptionBudget") !=
              std::string::npos;
    }
  }
  EXPECT_TRUE(told) << "a-0 was never told that a pod of b is protected";
  for (const std::string& event : h().Events()) {
    if (event.find("\"reason\":\"Preempted\"") == std::string::npos) continue;
    EXPECT_EQ(event.find("hyperpod-ns-a/"), std::string::npos) << event;
    EXPECT_NE(event.find("for its pod (UID "), std::string::npos) << event;
  }
}

// Issue 36, item 9: the bind verb binds only pods of the governed scheduler that taskgov has
// seen and filtered: a kube-system pod of default-scheduler, bound through taskgov's /bind, is
// refused, and nothing reaches the API server.
TEST_F(TeamScopeTest, BindRefusesPodsItDidNotFilter) {
  StartWithPolicy(R"(apiVersion: taskgov.io/v1
kind: TaskGovernancePolicy
teams:
  - name: a
    compute: [{instanceType: ml.p5.48xlarge, accelerators: 8}]
)");
  common::Result<std::string> stored = h().api().Upsert(
      "pods", R"({"metadata":{"name":"coredns","namespace":"kube-system"},"spec":{)"
              R"("schedulerName":"default-scheduler","containers":[{"name":"c"}]}})");
  ASSERT_TRUE(stored.ok()) << stored.error().message;
  const std::string uid = stored->substr(stored->find("\"uid\":\"") + 7, 36);
  ASSERT_TRUE(h().Sync().ok());
  const size_t bindings = h().BindingCount();
  common::Result<std::string> refused =
      h().extender().client().Bind("coredns", "kube-system", uid, "hyperpod-p5-0");
  ASSERT_TRUE(refused.ok()) << refused.error().message;
  EXPECT_EQ(
      *refused,
      "pod kube-system/coredns has schedulerName 'default-scheduler': taskgov binds only pods "
      "of scheduler 'taskgov'");
  // A pod of the governed scheduler that no filter admitted.
  PodSpec spec = GpuPod("a", "unfiltered", 1);
  ASSERT_TRUE(h().Submit(spec).ok());
  ASSERT_TRUE(h().Sync().ok());
  const PodView pod = *h().PodOfJob("unfiltered");
  refused = h().extender().client().Bind(pod.name, pod.ns, pod.uid, "hyperpod-p5-0");
  ASSERT_TRUE(refused.ok()) << refused.error().message;
  EXPECT_NE(refused->find("was not admitted by a taskgov filter"), std::string::npos) << *refused;
  EXPECT_EQ(h().BindingCount(), bindings);
  EXPECT_EQ(h().api().Get("pods", "kube-system", "coredns")->find("nodeName"), std::string::npos);
}

}  // namespace
}  // namespace taskgov::e2e
