#include "scheduler/sim/simulator.h"

#include <gtest/gtest.h>

#include <sstream>

#include "scheduler/testing/builders.h"

namespace taskgov::scheduler::sim {
namespace {

using testing::PolicyBuilder;

constexpr char kP5[] = "ml.p5.48xlarge";
constexpr char kGpu[] = "nvidia.com/gpu";

NodeGroup P5Nodes(int count) {
  NodeGroup g;
  g.instance_type = kP5;
  g.count = count;
  g.name_prefix = "p5";
  g.allocatable.Set(kGpu, 8);
  g.allocatable.Set("cpu", 192'000);
  return g;
}

TraceJob Job(const std::string& name, const std::string& team, int64_t arrival_s, int pods,
             int64_t gpus_per_pod, int64_t work_s, const std::string& priority_class = "") {
  TraceJob job;
  job.name = name;
  job.ns = "ns-" + team;
  job.arrival_ms = arrival_s * 1000;
  job.kind = pods == 1 ? JobKind::kPod : JobKind::kPodGroup;
  job.priority_class = priority_class;
  PodSet set;
  set.count = pods;
  set.instance_type = kP5;
  set.requests.Set(kGpu, gpus_per_pod);
  set.requests.Set("cpu", 1'000);
  job.pod_sets.push_back(set);
  job.work_ms = work_s * 1000;
  return job;
}

std::string Table(const Report& r) {
  std::ostringstream out;
  Report copy = r;
  copy.wall_s = 0;  // the one number that is not simulated
  PrintReports({copy}, out);
  return out.str();
}

// Team a lends its 8 GPUs to team b; when a needs them back, b's job is stopped once — within the
// grace period and a couple of seconds — and both jobs complete.
TEST(SimulatorTest, AReclaimDisruptsTheBorrowerOnceAndGivesTheOwnerItsQuotaSoon) {
  PolicyBuilder builder;
  builder.Team("a", "c").Quota(kP5, kGpu, 8).Team("b", "c").Quota(kP5, kGpu, 0);
  builder.mutable_policy().preemption.grace_period_seconds = 2;
  Trace trace;
  trace.nodes = {P5Nodes(1)};
  trace.jobs = {Job("b-train", "b", 0, 1, 8, 600), Job("a-train", "a", 30, 1, 8, 60)};
  const Report r = Simulate(builder.Build(), trace, SimulationOptions{});
  EXPECT_EQ(r.completed, 2) << Table(r);
  EXPECT_EQ(r.disruptions, 1u) << Table(r);
  EXPECT_EQ(r.disruptions_by_mechanism.at("eviction"), 1u);
  EXPECT_EQ(r.ping_pong, 0u);
  ASSERT_EQ(r.guarantee_samples, 1) << Table(r);  // a-train arrived within a's nominal
  EXPECT_LE(r.guarantee_max, 2.0 + 2.0) << Table(r);
  // b-train had run 30 s of its work without a checkpoint: lost, × 8 GPUs.
  EXPECT_NEAR(r.lost_gpu_s, 30.0 * 8, 8.0) << Table(r);
  EXPECT_EQ(r.never_ran, 0);
}

// The gang: 4 × 4 GPUs of a team that may use 9. Nodes are full of lower-priority pods,
// so kube-scheduler's dry run finds victims for every member it tries; none may be approved —
// no victim set can admit the gang — and nothing is disrupted.
TEST(SimulatorTest, AGangThatCanNeverBeAdmittedDisruptsNothing) {
  PolicyBuilder builder;
  builder.PriorityClass("low", 1).PriorityClass("high", 100);
  builder.Team("a", "c").Quota(kP5, kGpu, 8, /*borrow=*/1).Team("b", "c").Quota(kP5, kGpu, 8);
  Trace trace;
  trace.nodes = {P5Nodes(2)};
  trace.jobs = {Job("a-low-0", "a", 0, 1, 4, 900, "low"), Job("a-low-1", "a", 0, 1, 4, 900, "low"),
                Job("b-low", "b", 0, 1, 8, 900, "low"), Job("a-gang", "a", 10, 4, 4, 60, "high")};
  SimulationOptions options;
  options.horizon_after_last_arrival_ms = 1'200'000;
  const Report r = Simulate(builder.Build(), trace, options);
  EXPECT_EQ(r.disruptions, 0u) << Table(r);
  EXPECT_EQ(r.completed, 3) << Table(r);
  EXPECT_EQ(r.never_ran, 1) << Table(r);
  EXPECT_EQ(r.counters.at("extender: victims approved by the preempt verb"), 0u);
  EXPECT_GT(r.counters.at("extender: preempt calls"), 0u);  // kube-scheduler did ask
}

TEST(SimulatorTest, TheSameTraceAndSeedGiveTheSameReport) {
  PolicyBuilder builder;
  builder.PriorityClass("low", 1).PriorityClass("high", 100);
  builder.Team("a", "c").Quota(kP5, kGpu, 8).Weight(2).Team("b", "c").Quota(kP5, kGpu, 8);
  builder.mutable_policy().preemption.grace_period_seconds = 5;
  GeneratorOptions g;
  g.seed = 3;
  g.jobs = 60;
  g.span_ms = 600'000;
  g.nodes = {P5Nodes(2)};
  g.teams = {{"ns-a", 1, {{kP5, 16}}}, {"ns-b", 1, {{kP5, 16}}}};
  g.priority_classes = {"high", "low"};
  const Trace trace = GenerateTrace(g);
  SimulationOptions options;
  options.seed = 5;
  const Report first = Simulate(builder.Build(), trace, options);
  const Report second = Simulate(builder.Build(), trace, options);
  EXPECT_EQ(Table(first), Table(second));
  EXPECT_EQ(first.completed, 60) << Table(first);
}

}  // namespace
}  // namespace taskgov::scheduler::sim
