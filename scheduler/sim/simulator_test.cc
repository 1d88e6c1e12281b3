#include "scheduler/sim/simulator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <sstream>
#include <string>
#include <vector>

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

// Team a owns the 8 GPUs of a p5 node and lends them; team b owns none; a 2 s grace period.
PolicyBuilder ALendsToB() {
  PolicyBuilder builder;
  builder.Team("a", "c").Quota(kP5, kGpu, 8).Team("b", "c").Quota(kP5, kGpu, 0);
  builder.mutable_policy().preemption.grace_period_seconds = 2;
  return builder;
}

// Simulate, with the timeline written to *timeline.
Report SimulateWithTimeline(const model::PolicyPtr& policy, const Trace& trace,
                            std::string* timeline) {
  std::ostringstream out;
  SimulationOptions options;
  options.timeline = &out;
  Report r = Simulate(policy, trace, options);
  *timeline = out.str();
  return r;
}

// The time (s) of the timeline's first line containing `what`; -1 when none does.
double TimeOf(const std::string& timeline, const std::string& what) {
  const size_t at = timeline.find(what);
  if (at == std::string::npos) return -1;
  const size_t line = timeline.rfind('\n', at);
  return std::stod(timeline.substr(line == std::string::npos ? 0 : line + 1));
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
  PolicyBuilder builder = ALendsToB();
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

// A borrower reclaimed by one lender is not admitted at once on another lender's idle quota, to
// be reclaimed by that one a moment later (DESIGN §3.6, no ping-pong): b's pod group borrows a's
// node while c runs its own; a takes its node back at 30 s; c's job ends at 40 s and c's next
// arrives at 55 s. b-train backs off from borrowing for 60 s after its disruption (a-train, which
// it was stopped for, still runs), so c's node waits for c's next job instead of lending it to
// b-train for 15 s.
TEST(SimulatorTest, AReclaimedBorrowerIsNotAdmittedAtOnceOnAnotherLendersIdleQuota) {
  PolicyBuilder builder;
  builder.Team("a", "c").Quota(kP5, kGpu, 8).Team("b", "c").Quota(kP5, kGpu, 0);
  builder.Team("c", "c").Quota(kP5, kGpu, 8);
  builder.mutable_policy().preemption.grace_period_seconds = 2;
  Trace trace;
  trace.nodes = {P5Nodes(2)};
  trace.jobs = {Job("c-first", "c", 0, 1, 8, 40), Job("b-train", "b", 1, 2, 4, 600),
                Job("a-train", "a", 30, 1, 8, 300), Job("c-next", "c", 55, 1, 8, 300)};
  std::string timeline;
  const Report r = SimulateWithTimeline(builder.Build(), trace, &timeline);
  EXPECT_EQ(r.completed, 4) << Table(r);
  EXPECT_EQ(r.disruptions, 1u) << Table(r) << timeline;
  EXPECT_EQ(r.ping_pong, 0u) << Table(r);
  EXPECT_GE(TimeOf(timeline, "it may borrow again in"), 0) << timeline;
}

// The back-off after a single disruption ends once the pod it was stopped for has finished: a
// takes its node back at 30 s for a 10 s job, and b-train runs again on it as soon as a-train is
// done, not 60 s after its disruption.
TEST(SimulatorTest, AReclaimedBorrowerBorrowsAgainOnceItsPreemptorFinished) {
  PolicyBuilder builder = ALendsToB();
  Trace trace;
  trace.nodes = {P5Nodes(1)};
  trace.jobs = {Job("b-train", "b", 0, 2, 4, 600), Job("a-train", "a", 30, 1, 8, 10)};
  std::string timeline;
  const Report r = SimulateWithTimeline(builder.Build(), trace, &timeline);
  EXPECT_EQ(r.completed, 2) << Table(r);
  EXPECT_EQ(r.disruptions, 1u) << Table(r);
  // a-train starts about 33 s and ends 10 s later; b-train is bound at its next attempt.
  const double again = TimeOf(timeline, " pod ns-b/b-train-r1-0 Running");
  EXPECT_GE(again, 0) << timeline;
  EXPECT_LT(again, 30.0 + 60.0) << timeline;
}

// Under FairShare another team's pod ahead by share holds the idle capacity only while it could
// take it: x's second job is beyond x's own ceiling (4 running + 4 > 4 + 2) until x's first ends,
// so y borrows z's idle GPUs at once instead of waiting the 300 s of x's first job with them idle.
TEST(SimulatorTest, FairShareHoldsNoIdleCapacityForAPodBeyondItsOwnTeamsCeiling) {
  PolicyBuilder builder;
  builder.Team("x", "c").Quota(kP5, kGpu, 4, 2).Weight(3);
  builder.Team("y", "c").Quota(kP5, kGpu, 0).Weight(1);
  builder.Team("z", "c").Quota(kP5, kGpu, 12);
  builder.mutable_policy().preemption.grace_period_seconds = 2;
  Trace trace;
  trace.nodes = {P5Nodes(2)};
  trace.jobs = {Job("x-first", "x", 0, 1, 4, 300), Job("x-second", "x", 1, 1, 4, 60),
                Job("y-job", "y", 2, 1, 4, 60)};
  std::string timeline;
  const Report r = SimulateWithTimeline(builder.Build(), trace, &timeline);
  EXPECT_EQ(r.completed, 3) << Table(r);
  const double ran = TimeOf(timeline, " pod ns-y/y-job Running");
  EXPECT_GE(ran, 0) << timeline;
  EXPECT_LT(ran, 10.0) << timeline;
  EXPECT_EQ(r.disruptions, 0u) << Table(r);
}

// A minimum runtime keeps a young pod from a preemption by priority, not from its team's owner
// taking back its nominal quota: with 10 minutes, a-train still has a's 8 GPUs within grace + 2 s
// of arriving though b-train started 30 s before; a-urgent, a pod of higher priority arriving
// while a-train is young, waits until a-train has run the 10 minutes (or ends).
TEST(SimulatorTest, AMinimumRuntimeDelaysPriorityPreemptionsButNotAReclaim) {
  PolicyBuilder builder = ALendsToB();
  builder.PriorityClass("normal", 10).PriorityClass("urgent", 100);
  builder.mutable_policy().preemption.minimum_runtime_seconds = 600;
  Trace trace;
  trace.nodes = {P5Nodes(1)};
  trace.jobs = {Job("b-train", "b", 0, 1, 8, 900, "normal"),
                Job("a-train", "a", 30, 1, 8, 900, "normal"),
                Job("a-urgent", "a", 60, 1, 8, 60, "urgent")};
  std::ostringstream timeline;
  SimulationOptions options;
  options.timeline = &timeline;
  const Report r = Simulate(builder.Build(), trace, options);
  EXPECT_EQ(r.completed, 3) << Table(r);
  ASSERT_EQ(r.guarantee_samples, 1) << Table(r);  // a-train arrived within a's nominal
  EXPECT_LE(r.guarantee_max, 2.0 + 2.0) << Table(r);
  EXPECT_NE(timeline.str().find("event Preempted ns-b/b-train: Reclaim"), std::string::npos)
      << timeline.str();
  // a-train started about 33 s: a-urgent takes its place once it has run 600 s, not before.
  EXPECT_GE(r.waits_by_class.at("urgent").p95, 600.0 + 33 - 60 - 1) << Table(r);
  EXPECT_LE(r.waits_by_class.at("urgent").p95, 600.0 + 33 - 60 + 10) << Table(r);
  EXPECT_EQ(r.disruptions, 2u) << Table(r);
}

// A preemptor tried between its victims' exits backs off (docs/simulate.md, "A 1 s backoff"): a
// reclaims its 8 GPUs from four 2-GPU pods of b. Under v1.30's queue the first victim to leave
// sends a-train to be tried while the others are still leaving; it fails and waits out its
// backoff, then the backoff queue's next flush. With the overlay's 1 s backoff a has its quota
// within grace + 2 s; with 2 s it does not.
TEST(SimulatorTest, APreemptorTriedBetweenItsVictimsExitsGetsItsQuotaWithinGracePlusTwoSeconds) {
  PolicyBuilder builder = ALendsToB();
  Trace trace;
  trace.nodes = {P5Nodes(1)};
  for (int i = 0; i < 4; ++i)
    trace.jobs.push_back(Job("b-" + std::to_string(i), "b", 0, 1, 2, 600));
  trace.jobs.push_back(Job("a-train", "a", 30, 1, 8, 60));
  std::map<int64_t, double> guarantee_s;
  for (int64_t max_backoff_ms : {1'000, 2'000}) {
    SimulationOptions options;
    options.scheduler.minor = 30;
    options.scheduler.max_backoff_ms = max_backoff_ms;
    const Report r = Simulate(builder.Build(), trace, options);
    EXPECT_EQ(r.completed, 5) << Table(r);
    EXPECT_EQ(r.disruptions, 4u) << Table(r);
    ASSERT_EQ(r.guarantee_samples, 1) << Table(r);
    guarantee_s[max_backoff_ms] = r.guarantee_max;
  }
  EXPECT_LE(guarantee_s[1'000], 2.0 + 2.0) << guarantee_s[1'000];  // 4.0 here; 5.0 with 2 s
  EXPECT_GT(guarantee_s[2'000], 2.0 + 2.0) << guarantee_s[2'000];
}

// Jobs that announce their checkpoints (taskgov.io/last-checkpoint) are chosen as victims by the
// work they would lose. b borrows a's node with two 4-GPU jobs saving every 100 s: b-old started
// at 1 s (saved at 101 s), b-new at 81 s (nothing saved). At 110 s a needs 4 GPUs back. Without
// the announcements the most recently started goes (b-new: 29 s × 4 GPUs lost); with them, the
// one that saved 9 s ago (b-old: 9 s × 4).
TEST(SimulatorTest, AnnouncedCheckpointsMakeTheVictimTheJobThatLosesLeast) {
  for (bool announce : {false, true}) {
    PolicyBuilder builder;
    builder.Team("a", "c").Quota(kP5, kGpu, 8).Team("b", "c").Quota(kP5, kGpu, 0);
    builder.mutable_policy().preemption.grace_period_seconds = 2;
    Trace trace;
    trace.nodes = {P5Nodes(1)};
    trace.jobs = {Job("b-old", "b", 0, 1, 4, 1000), Job("b-new", "b", 80, 1, 4, 1000),
                  Job("a-infer", "a", 110, 1, 4, 60)};
    for (TraceJob& job : trace.jobs) {
      job.checkpoint_every_ms = 100'000;
      job.announces_checkpoints = announce;
    }
    std::ostringstream timeline;
    SimulationOptions options;
    options.timeline = &timeline;
    const Report r = Simulate(builder.Build(), trace, options);
    EXPECT_EQ(r.completed, 3) << Table(r);
    EXPECT_EQ(r.disruptions, 1u) << Table(r);
    const std::string victim = announce ? "ns-b/b-old:" : "ns-b/b-new:";
    EXPECT_NE(timeline.str().find("event Preempted " + victim), std::string::npos)
        << timeline.str();
    EXPECT_NEAR(r.lost_gpu_s, (announce ? 9.0 : 29.0) * 4, 6.0) << Table(r);
  }
}

// kube-scheduler's podMaxBackoffSeconds decides how long freed GPUs stay idle: in a busy cluster
// (team c's short jobs on another instance type end every few seconds, and each end makes
// kube-scheduler retry the pods that found no node) a pod waiting for a node is retried up to its
// backoff after the room frees. b-first holds the one p5 node for 61 s; b-next, waiting since
// 1 s, binds within 10 s of that by default, within 2 s with the 1 s backoff the second-scheduler
// overlay configures (its backoff, then the backoff queue's next flush).
TEST(SimulatorTest, ThePodMaxBackoffBoundsHowLongFreedRoomStaysIdle) {
  std::map<int64_t, double> wait_s;
  for (int64_t max_backoff_ms : {10'000, 1'000}) {
    PolicyBuilder builder;
    builder.Team("b", "c").Quota(kP5, kGpu, 16).Team("c", "c").Quota("ml.g5.12xlarge", kGpu, 4);
    Trace trace;
    NodeGroup g5 = P5Nodes(1);
    g5.instance_type = "ml.g5.12xlarge";
    g5.name_prefix = "g5";
    trace.nodes = {P5Nodes(1), g5};
    trace.jobs = {Job("b-first", "b", 0, 1, 8, 60), Job("b-next", "b", 1, 1, 8, 60)};
    for (int i = 0; i < 30; ++i) {
      TraceJob churn = Job("c-" + std::to_string(i), "c", 3 * i, 1, 1, 2, "short");
      churn.pod_sets[0].instance_type = "ml.g5.12xlarge";
      trace.jobs.push_back(churn);
    }
    std::stable_sort(
        trace.jobs.begin(), trace.jobs.end(),
        [](const TraceJob& x, const TraceJob& y) { return x.arrival_ms < y.arrival_ms; });
    SimulationOptions options;
    options.scheduler.max_backoff_ms = max_backoff_ms;
    std::ostringstream timeline;
    options.timeline = &timeline;
    const Report r = Simulate(builder.Build(), trace, options);
    ASSERT_EQ(r.completed, 32) << Table(r);
    wait_s[max_backoff_ms] = r.waits_by_class.at("(none)").p95;
  }
  // b-first ends at 61 s (bound at 0, running from 1 s, 60 s of work): b-next waited 60 s and
  // then its retry.
  EXPECT_LE(wait_s[1'000], 60.0 + 2.0) << wait_s[1'000];
  EXPECT_GT(wait_s[10'000], wait_s[1'000] + 2.0) << wait_s[10'000];
  EXPECT_LE(wait_s[10'000], 60.0 + 10.0) << wait_s[10'000];
}

// HyperPod's IdleResourceSharing in the simulator: a (8 GPUs, may borrow) and b (8, DontLend)
// on 4 nodes of 8 GPUs. Off, only a's own 8 serve its four 8-GPU jobs, one after another; on, the
// 16 GPUs no team was allocated join the pool and three run at once (8 + 16), the fourth after.
TEST(SimulatorTest, IdleResourceSharingLendsTheGpusNoTeamWasAllocated) {
  for (bool on : {false, true}) {
    PolicyBuilder builder;
    builder.Team("a", "c").Quota(kP5, kGpu, 8).Team("b", "c").Quota(kP5, kGpu, 8, 0, 0);
    if (on) builder.IdleResourceSharing("c");
    Trace trace;
    trace.nodes = {P5Nodes(4)};
    for (int i = 0; i < 4; ++i)
      trace.jobs.push_back(Job("a-" + std::to_string(i), "a", 0, 1, 8, 600));
    SimulationOptions options;
    options.horizon_after_last_arrival_ms = 3'600'000;
    const Report r = Simulate(builder.Build(), trace, options);
    EXPECT_EQ(r.completed, 4) << on << "\n" << Table(r);
    if (on) {
      EXPECT_GE(r.simulated_s, 1200) << Table(r);
      EXPECT_LT(r.simulated_s, 1300) << Table(r);
    } else {
      EXPECT_GE(r.simulated_s, 2400) << Table(r);
    }
  }
}

// Fairness in motion (Report::jain_contended): team l lends its 8 GPUs; a borrows all of them
// with 8 one-GPU pods of 10 minutes, and b asks for as many 10 s later. Under FairShare, b's
// pods preempt a's borrowed ones until both borrow their equal fair part, 4 each; first come,
// first served keeps a's 8 running and b borrows nothing (2× and 0× their fair parts: Jain's
// index 0.5) until they end.
TEST(SimulatorTest, FairShareGivesContendingBorrowersTheirFairParts) {
  for (model::IdleComputeAllocation mode : {model::IdleComputeAllocation::kFairShare,
                                            model::IdleComputeAllocation::kFirstComeFirstServe}) {
    PolicyBuilder builder;
    builder.Team("l", "c").Quota(kP5, kGpu, 8).Team("a", "c").Quota(kP5, kGpu, 0);
    builder.Team("b", "c").Quota(kP5, kGpu, 0).IdleCompute(mode);
    builder.mutable_policy().preemption.grace_period_seconds = 2;
    Trace trace;
    trace.nodes = {P5Nodes(1)};
    for (int i = 0; i < 8; ++i) {
      trace.jobs.push_back(Job("a-" + std::to_string(i), "a", 0, 1, 1, 600));
      trace.jobs.push_back(Job("b-" + std::to_string(i), "b", 10, 1, 1, 600));
    }
    const Report r = Simulate(builder.Build(), trace, SimulationOptions{});
    EXPECT_EQ(r.completed, 16) << Table(r);
    EXPECT_GE(r.contended_s, 500) << Table(r);
    const double a = r.teams.at("a").borrowed_of_fair;
    const double b = r.teams.at("b").borrowed_of_fair;
    if (mode == model::IdleComputeAllocation::kFairShare) {
      EXPECT_GE(r.jain_contended, 0.95) << Table(r);
      EXPECT_NEAR(a, 1.0, 0.1) << Table(r);
      EXPECT_NEAR(b, 1.0, 0.1) << Table(r);
    } else {
      EXPECT_NEAR(r.jain_contended, 0.5, 0.01) << Table(r);
      EXPECT_NEAR(a, 2.0, 0.02) << Table(r);
      EXPECT_NEAR(b, 0.0, 0.01) << Table(r);
    }
  }
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

// A stream of small pods of class "small": one every `every_s` seconds from `from_s` to
// `until_s`, each of `gpus` GPUs working `work_s`, `work_s` + 13 or `work_s` + 26 seconds in
// turn (so that pods placed together do not end together).
std::vector<TraceJob> SmallStream(const std::string& team, int64_t from_s, int64_t until_s,
                                  int64_t every_s, int64_t gpus, int64_t work_s) {
  std::vector<TraceJob> jobs;
  for (int64_t t = from_s, i = 0; t < until_s; t += every_s, ++i) {
    jobs.push_back(Job(team + "-small-" + std::to_string(i), team, t, 1, gpus,
                       work_s + (i % 3) * 13, "small"));
  }
  return jobs;
}

// The wait of the one job of class `big` (arrival → every pod bound), or −1 if it never ran.
double BigWait(const Report& r) {
  const Report::Waits& w = r.waits_by_class.at("big");
  return w.never_ran > 0 ? -1 : w.p50;
}

// Issue 34: a 16-GPU gang (two whole nodes) of the same rank as a stream of 1-GPU pods that keeps
// its team's quota busy. Under BestEffortFIFO the small pods pass it for as long as they come;
// with a starvation bound of 120 s they stop passing it then, the quota and the nodes drain
// toward it, and it runs once the small pods already running end (30 to 56 s each).
TEST(SimulatorTest, AGangBehindAStreamOfSmallPodsRunsWithinTheStarvationBound) {
  auto play = [](int64_t bound_s) {
    PolicyBuilder builder;
    builder.PriorityClass("small", 10).PriorityClass("big", 10);
    builder.Team("a", "c").Quota(kP5, kGpu, 16);
    builder.mutable_policy().starvation_bound_seconds = bound_s;
    Trace trace;
    trace.nodes = {P5Nodes(2)};
    trace.jobs = SmallStream("a", 0, 900, 2, 1, 30);
    trace.jobs.push_back(Job("a-big", "a", 21, 2, 8, 60, "big"));
    std::sort(trace.jobs.begin(), trace.jobs.end(),
              [](const TraceJob& x, const TraceJob& y) { return x.arrival_ms < y.arrival_ms; });
    return Simulate(builder.Build(), trace, SimulationOptions{});
  };
  const Report guarded = play(120);
  EXPECT_EQ(guarded.never_ran, 0) << Table(guarded);
  EXPECT_GE(BigWait(guarded), 120.0) << Table(guarded);  // it was passed until then
  // then drained toward: once the pods running end (56 s at most), and kube-scheduler's backoff
  // (10 s at most) let it try again
  EXPECT_LE(BigWait(guarded), 120.0 + 56 + 10 + 5) << Table(guarded);
  EXPECT_EQ(guarded.disruptions, 0u) << Table(guarded);
  // Without the bound it waits for the stream to end.
  const Report unguarded = play(0);
  EXPECT_TRUE(BigWait(unguarded) < 0 || BigWait(unguarded) > 800.0) << Table(unguarded);
}

// The nodes drain for a pod its team's nominal quota holds, starving or not: team a's 8-GPU pod
// fits its quota, but team b's 3-GPU pods — two per node, within b's nominal quota (nothing to
// reclaim) — leave no node with 8 free GPUs for as long as they come: the room each pod leaves
// is taken by the next. The node closest to room is held for it: b's pods go elsewhere or wait,
// and it runs once that node's pods end (66 s at most), with no disruption.
TEST(SimulatorTest, AWholeNodePodWithinItsNominalGetsANodeDrainedForIt) {
  PolicyBuilder builder;
  builder.PriorityClass("small", 10).PriorityClass("big", 10);
  builder.Team("a", "c").Quota(kP5, kGpu, 8).Team("b", "c").Quota(kP5, kGpu, 24, /*borrow=*/0);
  Trace trace;
  trace.nodes = {P5Nodes(3)};
  trace.jobs = SmallStream("b", 0, 900, 8, 3, 40);
  trace.jobs.push_back(Job("a-big", "a", 200, 1, 8, 60, "big"));
  std::sort(trace.jobs.begin(), trace.jobs.end(),
            [](const TraceJob& x, const TraceJob& y) { return x.arrival_ms < y.arrival_ms; });
  // Under every queue: the eager default and releases that retry it only on some events.
  for (int minor : {0, 30, 32, 33}) {
    SimulationOptions options;
    options.scheduler.minor = minor;
    const Report r = Simulate(builder.Build(), trace, options);
    EXPECT_EQ(r.never_ran, 0) << minor << "\n" << Table(r);
    // Once the pods on the node held for it end (66 s at most) and kube-scheduler's backoff (10
    // s at most) lets it try again.
    EXPECT_LE(BigWait(r), 66.0 + 10 + 5) << minor << "\n" << Table(r);
    EXPECT_EQ(r.disruptions, 0u) << minor << "\n" << Table(r);
    EXPECT_GT(r.counters.at("controller: drains"), 0u) << minor << "\n" << Table(r);
  }
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
