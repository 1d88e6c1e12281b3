#include "scheduler/sim/trace.h"

#include <gtest/gtest.h>

#include <set>

namespace taskgov::scheduler::sim {
namespace {

constexpr char kTrace[] = R"({
  "name": "two jobs",
  "nodes": [{"instanceType": "ml.p5.48xlarge", "count": 2,
             "allocatable": {"nvidia.com/gpu": "8", "cpu": "192", "memory": "2Ti"}}],
  "jobs": [
    {"name": "late", "namespace": "ns-a", "arrivalSeconds": 30, "kind": "Pod",
     "podSets": [{"requests": {"nvidia.com/gpu": 2}}], "workSeconds": 60},
    {"name": "gang", "namespace": "ns-b", "arrivalSeconds": 1.5, "priorityClass": "training",
     "kind": "PodGroup", "podSets": [{"name": "worker", "count": 4, "instanceType": "ml.p5.48xlarge",
     "requests": {"nvidia.com/gpu": "4", "cpu": "500m"}}], "workSeconds": 600,
     "checkpointEverySeconds": 120, "saveOnTermSeconds": 10, "announcesCheckpoints": true,
     "terminationGracePeriodSeconds": 45}
  ]})";

TEST(TraceTest, ParsesNodesAndJobsInArrivalOrder) {
  common::Result<Trace> trace = ParseTrace(kTrace);
  ASSERT_TRUE(trace.ok()) << trace.error().message;
  ASSERT_EQ(trace->nodes.size(), 1u);
  EXPECT_EQ(trace->nodes[0].name_prefix, "ml.p5.48xlarge");
  EXPECT_EQ(trace->nodes[0].allocatable.Get("memory"), int64_t{2} << 40);
  ASSERT_EQ(trace->jobs.size(), 2u);
  const TraceJob& gang = trace->jobs[0];
  EXPECT_EQ(gang.name, "gang");
  EXPECT_EQ(gang.arrival_ms, 1'500);
  EXPECT_EQ(gang.kind, JobKind::kPodGroup);
  EXPECT_EQ(gang.pods(), 4);
  EXPECT_EQ(gang.Demand().Get("nvidia.com/gpu"), 16);
  EXPECT_EQ(gang.Demand().Get("cpu"), 2'000);
  EXPECT_EQ(gang.checkpoint_every_ms, 120'000);
  EXPECT_EQ(gang.save_on_term_ms, 10'000);
  EXPECT_EQ(gang.termination_grace_ms, 45'000);
  EXPECT_TRUE(gang.announces_checkpoints);
  EXPECT_EQ(trace->jobs[1].name, "late");
  EXPECT_FALSE(trace->jobs[1].save_on_term_ms.has_value());
  EXPECT_FALSE(trace->jobs[1].announces_checkpoints);
}

TEST(TraceTest, WritingAndReadingBackGivesTheSameTrace) {
  common::Result<Trace> trace = ParseTrace(kTrace);
  ASSERT_TRUE(trace.ok());
  const std::string json = TraceToJson(*trace);
  common::Result<Trace> again = ParseTrace(json);
  ASSERT_TRUE(again.ok()) << again.error().message;
  EXPECT_EQ(TraceToJson(*again), json);
}

TEST(TraceTest, ErrorsNameThePathAndTheReason) {
  struct Case {
    std::string name;
    std::string json;
    std::string error;
  };
  const std::vector<Case> cases = {
      {"not json", "{", "trace: invalid JSON at offset 1"},
      {"no nodes", R"({"jobs": []})", "nodes: missing or not a list"},
      {"bad quantity",
       R"({"nodes": [{"instanceType": "x", "allocatable": {"cpu": "lots"}}], "jobs": []})",
       "nodes[0].allocatable.cpu:"},
      {"unknown kind",
       R"({"nodes": [], "jobs": [{"name": "j", "namespace": "n", "arrivalSeconds": 0,
           "kind": "Deployment", "podSets": [{"requests": {}}], "workSeconds": 1}]})",
       "jobs[0].kind: unknown kind 'Deployment'"},
      {"negative time",
       R"({"nodes": [], "jobs": [{"name": "j", "namespace": "n", "arrivalSeconds": -1,
           "podSets": [{"requests": {}}], "workSeconds": 1}]})",
       "jobs[0].arrivalSeconds: not a number of seconds"},
      {"a Pod of two",
       R"({"nodes": [], "jobs": [{"name": "j", "namespace": "n", "arrivalSeconds": 0,
           "podSets": [{"count": 2, "requests": {}}], "workSeconds": 1}]})",
       "jobs[0].podSets: a Pod has one pod set of count 1"},
      {"announces what",
       R"({"nodes": [], "jobs": [{"name": "j", "namespace": "n", "arrivalSeconds": 0,
           "podSets": [{"requests": {}}], "workSeconds": 1, "announcesCheckpoints": "yes"}]})",
       "jobs[0].announcesCheckpoints: not true or false"},
      {"named twice",
       R"({"nodes": [], "jobs": [
           {"name": "j", "namespace": "n", "arrivalSeconds": 0, "podSets": [{"requests": {}}],
            "workSeconds": 1},
           {"name": "j", "namespace": "n", "arrivalSeconds": 0, "podSets": [{"requests": {}}],
            "workSeconds": 1}]})",
       "jobs[1].name: job n/j is named twice (first at jobs[0])"},
  };
  for (const Case& c : cases) {
    common::Result<Trace> trace = ParseTrace(c.json);
    ASSERT_FALSE(trace.ok()) << c.name;
    EXPECT_NE(trace.error().message.find(c.error), std::string::npos)
        << c.name << ": " << trace.error().message;
  }
}

GeneratorOptions FiveTeams() {
  GeneratorOptions o;
  o.seed = 11;
  o.jobs = 300;
  o.span_ms = 3600'000;
  NodeGroup p5{"ml.p5.48xlarge", 4, "p5", {}, {}};
  p5.allocatable.Set("nvidia.com/gpu", 8);
  p5.allocatable.Set("cpu", 192'000);
  NodeGroup g5{"ml.g5.12xlarge", 4, "g5", {}, {}};
  g5.allocatable.Set("nvidia.com/gpu", 4);
  g5.allocatable.Set("cpu", 48'000);
  o.nodes = {p5, g5};
  o.teams = {{"hyperpod-ns-a", 1, {{"ml.p5.48xlarge", 12}, {"ml.g5.12xlarge", 6}}},
             {"hyperpod-ns-b", 2, {{"ml.g5.12xlarge", 4}}}};
  o.priority_classes = {"inference", "training"};
  return o;
}

TEST(TraceTest, TheGeneratorIsDeterministicForASeed) {
  const GeneratorOptions o = FiveTeams();
  EXPECT_EQ(TraceToJson(GenerateTrace(o)), TraceToJson(GenerateTrace(o)));
  GeneratorOptions other = o;
  other.seed = 12;
  EXPECT_NE(TraceToJson(GenerateTrace(o)), TraceToJson(GenerateTrace(other)));
}

// Every job the generator makes can run: on an instance type its team has quota for, asking for
// no more than the team may ever hold there; and the work offered is the load asked for.
TEST(TraceTest, GeneratedJobsFitTheirTeamsAndOfferTheLoad) {
  const GeneratorOptions o = FiveTeams();
  const Trace trace = GenerateTrace(o);
  ASSERT_EQ(trace.jobs.size(), 300u);
  double offered = 0;
  std::set<JobKind> kinds;
  for (const TraceJob& job : trace.jobs) {
    kinds.insert(job.kind);
    ASSERT_EQ(job.pod_sets.size(), 1u);
    const std::string& type = job.pod_sets[0].instance_type;
    const int64_t gpus = job.Demand().Get("nvidia.com/gpu");
    const GeneratorOptions::Team& team = job.ns == "hyperpod-ns-a" ? o.teams[0] : o.teams[1];
    ASSERT_EQ(team.max_accelerators.count(type), 1u) << job.name << " on " << type;
    EXPECT_LE(gpus, team.max_accelerators.at(type)) << job.name;
    EXPECT_LE(job.pod_sets[0].requests.Get("nvidia.com/gpu"), type == "ml.p5.48xlarge" ? 8 : 4);
    EXPECT_GE(job.work_ms, 30'000);
    EXPECT_GE(job.arrival_ms, 0);
    EXPECT_LE(job.arrival_ms, o.span_ms * 2);
    offered += static_cast<double>(gpus) * static_cast<double>(job.work_ms);
  }
  EXPECT_EQ(kinds, (std::set<JobKind>{JobKind::kPod, JobKind::kPodGroup}));
  const double capacity = 48.0 * static_cast<double>(o.span_ms);
  EXPECT_NEAR(offered / capacity, o.load, 0.25 * o.load);
}

}  // namespace
}  // namespace taskgov::scheduler::sim
