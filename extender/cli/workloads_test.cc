// Everything the console lists, the CLI lists and explains (issue 38, item 10): pods, Kueue pod
// groups, PodGroups and every owner kind the extender recognises — not only the Jobs and
// PyTorchJobs the CLI itself submits — through the fake API server and an admin API behind its
// service proxy.

#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include "extender/cli/testing/cli_fixture.h"

namespace taskgov::cli {
namespace {

// The admin API's workloads: a Job the CLI submitted, a lone pod, a Kueue pod group and a
// PodGroup, none of the last three a Job.
constexpr char kWorkloads[] = R"({"kind": "WorkloadList", "continue": null, "items": [
  {"namespace": "hyperpod-ns-a", "name": "train", "hidden": false, "kind": "Job", "team": "a",
   "state": "Running", "priorityClass": "training", "priority": 75, "pods": 2, "declaredPods": 2,
   "instanceType": "ml.p5.48xlarge", "request": {"nvidia.com/gpu": "16"}, "queuePosition": null,
   "waitSeconds": 3, "refused": false, "refusal": "", "preemption": "", "why": ""},
  {"namespace": "hyperpod-ns-a", "name": "solo", "hidden": false, "kind": "Pod", "team": "a",
   "state": "Pending", "priorityClass": "", "priority": 0, "pods": 1, "declaredPods": 1,
   "instanceType": "ml.p5.48xlarge", "request": {"nvidia.com/gpu": "1"}, "queuePosition": 1,
   "waitSeconds": 40, "refused": true, "refusal": "a: no room", "preemption": "",
   "why": "a: no room"},
  {"namespace": "hyperpod-ns-b", "name": "dist", "hidden": false, "kind": "KueuePodGroup",
   "team": "b", "state": "Admitted", "priorityClass": "inference", "priority": 100, "pods": 4,
   "declaredPods": 4, "instanceType": "ml.p5.48xlarge", "request": {"nvidia.com/gpu": "8"},
   "topology": {"level": "topology.k8s.aws/network-node-layer-2", "domain": "nn-7f3",
                "required": true},
   "queuePosition": null, "waitSeconds": 12, "refused": false, "refusal": "", "preemption": "",
   "why": ""},
  {"namespace": "hyperpod-ns-b", "name": "volc", "hidden": false, "kind": "PodGroup", "team": "b",
   "state": "Pending", "priorityClass": "", "priority": 0, "pods": 2, "declaredPods": 3,
   "instanceType": "", "request": {"cpu": "4"}, "queuePosition": 2, "waitSeconds": 9,
   "refused": false, "refusal": "", "preemption": "", "why": "no node has room"}]})";

constexpr char kSoloWhy[] = R"({"apiVersion": "taskgov.io/v1", "kind": "WorkloadExplanation",
  "namespace": "hyperpod-ns-a", "name": "solo", "workloadKind": "Pod", "team": "a",
  "state": "Pending", "evaluatedPod": "hyperpod-ns-a/solo", "outlook": "Waiting",
  "summary": "hyperpod-ns-a/solo waits: no ml.p5.48xlarge node has room for 1 nvidia.com/gpu.",
  "request": {"nvidia.com/gpu": "1"}, "need": {"nvidia.com/gpu": "1"}, "podsNotCreated": 0,
  "checks": [], "flavors": [], "preemption": ""})";

class WorkloadsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(cli_.Start());
    cli_.api().SetServed("pytorchjobs", false);
    // The Job the CLI submitted exists as an object; the others are pods only.
    ASSERT_EQ(cli_.Run({"job", "submit", "train", "-n", "hyperpod-ns-a", "--image", "img",
                        "--instance-type", "ml.p5.48xlarge", "--accelerators", "8", "--node-count",
                        "2", "--kind", "Job"})
                  .code,
              0);
    cli_.api().SetServiceHandler(
        "taskgov-system", "taskgov-console", 9091,
        testing::AdminApiFixture(R"({"kind":"TeamList","items":[]})", kWorkloads,
                                 {{"hyperpod-ns-a/solo", kSoloWhy}}));
  }
  testing::CliFixture cli_;
};

TEST_F(WorkloadsTest, JobListShowsEveryWorkloadTheConsoleLists) {
  testing::CliRun run = cli_.Run({"job", "list", "-A", "-o", "name"});
  ASSERT_EQ(run.code, 0) << run.err;
  EXPECT_EQ(run.out, "pod/solo\njob/train\nkueuepodgroup/dist\npodgroup/volc\n");
  run = cli_.Run({"job", "list", "-A"});
  ASSERT_EQ(run.code, 0) << run.err;
  EXPECT_NE(run.out.find("solo "), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("dist "), std::string::npos) << run.out;
  EXPECT_EQ(run.err, "");
  // Filters apply to them too: a namespace, a team, a state (the admin API's Admitted included).
  run = cli_.Run({"job", "list", "-n", "hyperpod-ns-b", "-o", "name"});
  EXPECT_EQ(run.out, "kueuepodgroup/dist\npodgroup/volc\n") << run.err;
  run = cli_.Run({"job", "list", "-A", "--team", "b", "--state", "Pending", "-o", "name"});
  EXPECT_EQ(run.out, "podgroup/volc\n") << run.err;
  run = cli_.Run({"job", "list", "-A", "--state", "Admitted", "-o", "name"});
  EXPECT_EQ(run.out, "kueuepodgroup/dist\n") << run.err;
  run = cli_.Run({"job", "list", "-A", "-o", "wide"});
  EXPECT_NE(run.out.find("KueuePodGroup"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("no node has room"), std::string::npos) << "WHY in -o wide\n" << run.out;
}

TEST_F(WorkloadsTest, JobWhyAndDescribeExplainAPodTheyDidNotSubmit) {
  testing::CliRun run = cli_.Run({"job", "why", "solo", "-n", "hyperpod-ns-a"});
  ASSERT_EQ(run.code, 0) << run.err;
  EXPECT_NE(run.out.find("Pod hyperpod-ns-a/solo (team a, Pending): Waiting"), std::string::npos)
      << run.out;
  EXPECT_NE(run.out.find("no ml.p5.48xlarge node has room"), std::string::npos) << run.out;
  run = cli_.Run({"job", "describe", "dist", "-n", "hyperpod-ns-b"});
  ASSERT_EQ(run.code, 0) << run.err;
  EXPECT_NE(run.out.find("KueuePodGroup"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("Admitted"), std::string::npos) << run.out;
  // Issue 37: where its gang was placed.
  EXPECT_NE(run.out.find("Topology:       network-node-layer-2 domain nn-7f3 (required)"),
            std::string::npos)
      << run.out;
  // What it cannot do to a workload it did not submit, it says, with what to use instead.
  run = cli_.Run({"job", "suspend", "solo", "-n", "hyperpod-ns-a"});
  EXPECT_EQ(run.code, 1);
  EXPECT_NE(run.err.find("hyperpod-ns-a/solo is a Pod workload, not a Job or PyTorchJob"),
            std::string::npos)
      << run.err;
  // Nothing of that name anywhere: said so.
  run = cli_.Run({"job", "why", "nothere", "-n", "hyperpod-ns-a"});
  EXPECT_EQ(run.code, 1);
  EXPECT_NE(run.err.find("no job, pod group or pod named \"nothere\" in namespace hyperpod-ns-a"),
            std::string::npos)
      << run.err;
}

}  // namespace
}  // namespace taskgov::cli
