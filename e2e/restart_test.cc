// Restart and failover through real processes (issue 6 "restart" and "failover", issue 9
// scenario 6): the extender keeps nothing across a restart that the API server cannot confirm,
// admits nothing while it is down, and hands leadership over through the Lease.

#include <signal.h>

#include <gtest/gtest.h>

#include <map>
#include <regex>

#include "e2e/scenario_test_util.h"

namespace taskgov::e2e {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using SteadyClock = std::chrono::steady_clock;

// FirstComeFirstServe idle compute: no fair-share ordering, so ProbeLedger reads the numbers.
constexpr char kPolicy[] = R"(apiVersion: taskgov.io/v1
kind: TaskGovernancePolicy
taskPrioritization: FirstComeFirstServe
idleComputeAllocation: FirstComeFirstServe
preemption: {gracePeriodSeconds: 30, minimumRuntimeSeconds: 0}
defaultCohort: e2e
teams:
  - name: a
    sharing: {strategy: LendAndBorrow, borrowLimit: 100}
    compute: [{instanceType: ml.p5.48xlarge, accelerators: 8}]
  - name: b
    sharing: {strategy: LendAndBorrow, borrowLimit: 50}
    compute: [{instanceType: ml.p5.48xlarge, accelerators: 8}]
)";

QuotaOracle Oracle() {
  return QuotaOracle({{"a", Ns("a"), "e2e", kP5, kGpu, 8, 8, kNoLimit},
                      {"b", Ns("b"), "e2e", kP5, kGpu, 8, 4, kNoLimit}});
}

class RestartTest : public ScenarioTest {
 protected:
  LedgerLine Probe(const std::string& team) {
    common::Status synced = h().Sync();
    EXPECT_TRUE(synced.ok()) << synced.error().message;
    common::Result<LedgerLine> line = h().ProbeLedger(Ns(team), kP5, kGpu);
    EXPECT_TRUE(line.ok()) << line.error().message;
    return line.ok() ? *line : LedgerLine{};
  }

  // How many times each harness pod was bound, by pod name.
  std::map<std::string, int> BindsPerPod() {
    std::map<std::string, int> out;
    std::regex name(R"re("metadata":\{"name":"([^"]+)")re");
    for (const std::string& body : h().api().bindings()) {
      std::smatch m;
      if (std::regex_search(body, m, name) && m[1].str().rfind("e2e-", 0) != 0) ++out[m[1].str()];
    }
    return out;
  }
};

// Scenario 6: fill the cluster; restart the extender (SIGTERM) with nothing changing — its
// numbers after the restart are exactly those before; then kill it (SIGKILL) in the middle of a
// scheduling pass, between a filter that admitted a pod and that pod's bind, while pods finish
// and new ones wait: nothing is bound while it is down, and after the restart its usage is the
// sum over the bound, running pods, and the waiting pods are admitted within the limits.
TEST_F(RestartTest, RestartKeepsTheNumbersAndAdmitsNothingWhileDown) {
  StartWithPolicy(kPolicy);
  CheckLimitsEveryStep(Oracle());
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(h().Submit(GpuPod("a", "a-" + std::to_string(i))).ok());
  for (int i = 0; i < 6; ++i) ASSERT_TRUE(h().Submit(GpuPod("b", "b-" + std::to_string(i))).ok());
  ASSERT_TRUE(h().RunUntil(
      [&] { return h().CountPods([](const PodView& p) { return p.phase == "Running"; }) == 16; },
      5));
  ASSERT_TRUE(h().Submit(GpuPod("a", "a-10")).ok());
  ASSERT_TRUE(h().Submit(GpuPod("a", "a-11")).ok());
  h().Step();
  const LedgerLine a_before = Probe("a");
  const LedgerLine b_before = Probe("b");
  EXPECT_EQ(a_before.in_use, 10);
  EXPECT_EQ(b_before.in_use, 6);

  // A clean restart with nothing changing: the same numbers, to the letter.
  const size_t bindings = h().BindingCount();
  common::Result<int> code = h().extender().Stop(SIGTERM);
  ASSERT_TRUE(code.ok());
  EXPECT_EQ(*code, 0);
  ASSERT_TRUE(h().extender().Start().ok());
  ASSERT_TRUE(h().extender().WaitReady(seconds(20)).ok());
  EXPECT_EQ(Probe("a").reason, a_before.reason);
  EXPECT_EQ(Probe("b").reason, b_before.reason);
  EXPECT_EQ(h().BindingCount(), bindings);

  // Churn: three of a's pods finish and b wants three more; the extender dies right after it
  // admitted the first waiting pod, before that pod is bound.
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(h().Finish("a-" + std::to_string(i)).ok());
  for (int i = 6; i < 9; ++i) ASSERT_TRUE(h().Submit(GpuPod("b", "b-" + std::to_string(i))).ok());
  std::string killed_before_bind;
  h().SetBeforeBind([&](const PodView& pod, const std::string& /*node*/) {
    if (!killed_before_bind.empty()) return;
    killed_before_bind = pod.key;
    common::Result<int> killed = h().extender().Stop(SIGKILL);
    EXPECT_TRUE(killed.ok());
  });
  StepReport during = h().Step();
  ASSERT_EQ(killed_before_bind, Ns("a") + "/a-10") << "the oldest waiting pod goes first";
  EXPECT_TRUE(during.Bound().empty());
  // Down: two more of a's pods finish; the scheduler keeps trying and gets nothing.
  for (int i = 3; i < 5; ++i) ASSERT_TRUE(h().Finish("a-" + std::to_string(i)).ok());
  for (int i = 0; i < 2; ++i) {
    StepReport down = h().Step();
    EXPECT_TRUE(down.Bound().empty());
    EXPECT_FALSE(down.attempts.empty());
  }
  EXPECT_EQ(h().BindingCount(), bindings) << "nothing may be admitted while the extender is down";

  ASSERT_TRUE(h().extender().Start().ok());
  ASSERT_TRUE(h().extender().WaitReady(seconds(20)).ok());
  // After the resync the extender's usage is the sum over bound, running pods — no trace of the
  // reservation the killed process had made for a-10.
  EXPECT_EQ(Probe("a").in_use, h().Usage(Ns("a"), kP5, kGpu));
  EXPECT_EQ(Probe("b").in_use, h().Usage(Ns("b"), kP5, kGpu));
  EXPECT_EQ(h().Usage(Ns("a"), kP5, kGpu), 5);
  EXPECT_EQ(h().Usage(Ns("b"), kP5, kGpu), 6);

  h().SetBeforeBind(nullptr);
  ASSERT_TRUE(h().RunUntil([&] { return PendingOf("a") == 0 && PendingOf("b") == 0; }, 10));
  EXPECT_EQ(h().Usage(Ns("a"), kP5, kGpu), 7);
  EXPECT_EQ(h().Usage(Ns("b"), kP5, kGpu), 9);  // borrows 1 of its 4
  EXPECT_EQ(Probe("a").in_use, 7);
  EXPECT_EQ(Probe("b").in_use, 9);
  for (const auto& [pod, binds] : BindsPerPod()) EXPECT_EQ(binds, 1) << pod;
  EXPECT_TRUE(h().Evictions().empty());
}

// Restart mid-reclaim: team a borrows 4 of b's GPUs; b wants its 8 back, and taskgov evicts 4 of
// a's pods (a step is 10 s of simulated time; the grace period is 30 s). Half of a's pods save
// their checkpoint within a step, the others use the whole grace period. The extender is killed
// (SIGKILL) the moment kube-scheduler is about to bind the first preemptor whose capacity the
// first finished victim freed — its filter has just admitted that pod, and the controller has
// nominated the freed capacity — while the other victims are still terminating. After the restart
// its numbers are the API server's (the terminating victims still hold their GPUs; the killed
// process's admission left no trace), no second round evicts more than the 4, and no step
// over-admits.
TEST_F(RestartTest, RestartMidReclaimKeepsTheNumbersAndEvictsNoMore) {
  HarnessOptions options;
  options.config["policy.yaml"] = kPolicy;
  options.step_seconds = 10;
  StartHarness(std::move(options));
  CheckLimitsEveryStep(Oracle());
  for (int i = 0; i < 12; ++i) {
    PodSpec pod = GpuPod("a", "a-" + std::to_string(100 + i));
    if (i % 2 == 0) pod.checkpoint_steps = 1;
    ASSERT_TRUE(h().Submit(pod).ok());
  }
  ASSERT_TRUE(h().RunUntil([&] { return h().Usage(Ns("a"), kP5, kGpu) == 12; }, 5));
  for (int i = 0; i < 8; ++i) {
    PodSpec pod = GpuPod("b", "b-" + std::to_string(i));
    pod.priority = 1000;
    ASSERT_TRUE(h().Submit(pod).ok());
  }
  StepReport first = h().Step();
  ASSERT_EQ(first.Bound().size(), 4u) << "4 GPUs were free";

  std::string killed_before_bind;
  size_t terminating_at_kill = 0;
  h().SetBeforeBind([&](const PodView& pod, const std::string& /*node*/) {
    if (!killed_before_bind.empty()) return;
    // The controller nominates the freed capacity on its own one-second loop: wait for it.
    common::Result<std::string> nominated =
        h().extender().WaitForLog("capacity reserved for the preemptor", 0, seconds(5));
    EXPECT_TRUE(nominated.ok()) << "the extender nominated capacity for a preemptor";
    terminating_at_kill = h().CountPods([](const PodView& p) { return p.terminating; });
    killed_before_bind = pod.key;
    common::Result<int> killed = h().extender().Stop(SIGKILL);
    EXPECT_TRUE(killed.ok());
  });
  ASSERT_TRUE(h().RunUntil([&] { return !killed_before_bind.empty(); }, 10));
  EXPECT_EQ(killed_before_bind.rfind(Ns("b") + "/b-", 0), 0u) << killed_before_bind;
  EXPECT_EQ(h().Evictions().size(), 4u);
  EXPECT_GT(terminating_at_kill, 0u) << "victims were still terminating at the kill";
  EXPECT_LT(terminating_at_kill, 4u) << "a victim had finished, freeing capacity";
  const int64_t a_before = h().Usage(Ns("a"), kP5, kGpu);
  const int64_t b_before = h().Usage(Ns("b"), kP5, kGpu);
  EXPECT_EQ(b_before, 4) << "the admitted preemptor was not bound";
  EXPECT_EQ(a_before, 12 - (4 - static_cast<int64_t>(terminating_at_kill)));

  h().SetBeforeBind(nullptr);
  ASSERT_TRUE(h().extender().Start().ok());
  ASSERT_TRUE(h().extender().WaitReady(seconds(20)).ok());
  // The numbers after the restart are those before, as the API server holds them: the victims
  // still terminating are charged to a; the killed process's admission of the preemptor is gone.
  EXPECT_EQ(Probe("a").in_use, a_before);
  EXPECT_EQ(Probe("b").in_use, b_before);

  ASSERT_TRUE(h().RunUntil([&] { return h().Usage(Ns("b"), kP5, kGpu) == 8; }, 40));
  EXPECT_EQ(h().Usage(Ns("a"), kP5, kGpu), 8);
  EXPECT_EQ(h().Evictions().size(), 4u) << "no second round evicts more after the restart";
  EXPECT_EQ(Probe("a").in_use, 8);
  EXPECT_EQ(Probe("b").in_use, 8);
  for (const auto& [pod, binds] : BindsPerPod()) EXPECT_EQ(binds, 1) << pod;
}

// Failover (issue 6): two extenders share a Lease. The follower answers "not leader"; when the
// leader stops (SIGTERM: it releases the lease) the follower takes over within the lease
// duration, resyncs from the API and serves with the same numbers; the old leader, restarted,
// follows. When the new leader crashes (SIGKILL: no release) the other takes over once the lease
// has expired. The lease timing is shortened (6 s lease, 4 s renew deadline, 0.5 s retry) to keep
// the test quick; the semantics are those of kube-scheduler's 15 s / 10 s / 2 s defaults.
TEST_F(RestartTest, FailoverToTheFollowerAndBack) {
  HarnessOptions options;
  options.config["policy.yaml"] = kPolicy;
  options.extenders = 2;
  options.extender_args = {"--leader-elect-lease-duration=6s", "--leader-elect-renew-deadline=4s",
                           "--leader-elect-retry-period=500ms"};
  StartHarness(std::move(options));
  CheckLimitsEveryStep(Oracle());
  ASSERT_TRUE(h().extender(1).WaitReadyzSays("not leader", seconds(20)).ok());
  common::Result<common::testing::HttpReply> follower = h().extender(1).Readyz();
  ASSERT_TRUE(follower.ok());
  EXPECT_EQ(follower->status, 503);
  auto filter_on = [&](size_t i) {
    common::Result<extender::testing::FilterReply> r = h().extender(i).client().FilterNames(
        "{\"metadata\":{\"name\":\"x\",\"namespace\":\"hyperpod-ns-a\",\"uid\":\"u-x\"}}",
        {"hyperpod-p5-0"});
    EXPECT_TRUE(r.ok());
    return r.ok() ? r->error : std::string("transport error");
  };
  EXPECT_EQ(filter_on(1), "not leader");

  for (int i = 0; i < 4; ++i) ASSERT_TRUE(h().Submit(GpuPod("a", "a-" + std::to_string(i))).ok());
  ASSERT_TRUE(h().RunUntil([&] { return h().Usage(Ns("a"), kP5, kGpu) == 4; }, 5));
  EXPECT_EQ(Probe("a").in_use, 4);

  // The leader stops; the follower takes the lease within the lease duration.
  auto start = SteadyClock::now();
  ASSERT_TRUE(h().extender(0).Stop(SIGTERM).ok());
  h().set_serving(1);
  common::Status took = h().extender(1).WaitReady(seconds(15));
  ASSERT_TRUE(took.ok()) << took.error().message;
  EXPECT_LT(SteadyClock::now() - start, seconds(6)) << "within the lease duration";
  std::optional<std::string> lease = h().api().Get("leases", "default", "taskgov");
  ASSERT_TRUE(lease.has_value());
  EXPECT_NE(lease->find("\"holderIdentity\":\"e2e-1\""), std::string::npos) << *lease;
  EXPECT_EQ(Probe("a").in_use, 4) << "the new leader rebuilt its usage from the API";
  for (int i = 4; i < 8; ++i) ASSERT_TRUE(h().Submit(GpuPod("a", "a-" + std::to_string(i))).ok());
  ASSERT_TRUE(h().RunUntil([&] { return h().Usage(Ns("a"), kP5, kGpu) == 8; }, 5));
  EXPECT_EQ(Probe("a").in_use, 8);

  // The old leader comes back as a follower.
  ASSERT_TRUE(h().extender(0).Start().ok());
  ASSERT_TRUE(h().extender(0).WaitReadyzSays("not leader", seconds(20)).ok());
  EXPECT_EQ(filter_on(0), "not leader");

  // The leader crashes: the lease is not released, so the follower waits for it to expire: 6 s
  // after it observed the last renewal (it polls every 0.5–1.1 s, so it may observe a renewal up
  // to 1.1 s late, and notice the expiry up to 1.1 s late), then leads. The upper bound leaves
  // room for a loaded machine.
  start = SteadyClock::now();
  ASSERT_TRUE(h().extender(1).Stop(SIGKILL).ok());
  h().set_serving(0);
  took = h().extender(0).WaitReady(seconds(30));
  ASSERT_TRUE(took.ok()) << took.error().message;
  const auto waited = SteadyClock::now() - start;
  EXPECT_GT(waited, milliseconds(3'500)) << "took over a lease that had not expired";
  EXPECT_LT(waited, milliseconds(6'000 + 2 * 1'100 + 6'000))
      << "lease 6 s + two retry periods with jitter + slack";
  EXPECT_EQ(Probe("a").in_use, 8);
  for (int i = 8; i < 10; ++i) ASSERT_TRUE(h().Submit(GpuPod("a", "a-" + std::to_string(i))).ok());
  ASSERT_TRUE(h().RunUntil([&] { return h().Usage(Ns("a"), kP5, kGpu) == 10; }, 5));
  EXPECT_EQ(Probe("a").in_use, 10);
  for (const auto& [pod, binds] : BindsPerPod()) EXPECT_EQ(binds, 1) << pod;
}

}  // namespace
}  // namespace taskgov::e2e
