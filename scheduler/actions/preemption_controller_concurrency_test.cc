// The preemption controller's runs (on the test's thread, as the process's ticker calls RunOnce)
// while webhook threads filter and read statuses and an informer thread delivers pod events. Run
// under ThreadSanitizer in CI.

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <thread>

#include "scheduler/actions/preemption_controller.h"
#include "scheduler/decisions/admission.h"
#include "scheduler/testing/builders.h"
#include "scheduler/testing/fake_kube_actions.h"

namespace taskgov::scheduler::actions {
namespace {

using decisions::Admission;
using decisions::PreemptionReason;
using ledger::QuotaBook;
using model::Pod;
using model::PodPhase;
using model::PolicyPtr;
using scheduler::testing::FakeKubeActions;
using scheduler::testing::NodeBuilder;
using scheduler::testing::PodBuilder;
using scheduler::testing::PolicyBuilder;
using state::ClusterState;

constexpr char kP5[] = "ml.p5.48xlarge";
constexpr char kGpu[] = "nvidia.com/gpu";

class ConcurrencyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    PolicyPtr policy = PolicyBuilder()
                           .Team("team-a", "c")
                           .Quota(kP5, kGpu, 8)
                           .Team("team-b", "c")
                           .Quota(kP5, kGpu, 8)
                           .Build();
    book_ = std::make_unique<QuotaBook>(policy, &clock_);
    cluster_ = std::make_unique<ClusterState>(book_.get(), &clock_, ClusterState::Options{});
    admission_ = std::make_unique<Admission>(book_.get(), cluster_.get(), &kube_, &clock_,
                                             Admission::Options{});
    controller_ = std::make_unique<PreemptionController>(book_.get(), cluster_.get(), &kube_,
                                                         &clock_, PreemptionController::Options{});
    admission_->SetPreemptionStatus(
        [this](std::string_view uid) { return controller_->StatusFor(uid); });
    admission_->SetPreemptorState(
        [this](std::string_view uid) { return controller_->StateOf(uid); });
    cluster_->SetPodGoneObserver([this](std::string_view uid) { controller_->OnPodGone(uid); });
    informer_ = cluster_.get();
    informer_->OnSynced(ObjectKind::kPod);
    informer_->OnSynced(ObjectKind::kNode);
    for (int i = 0; i < 2; ++i) {
      informer_->OnNodeUpsert(
          NodeBuilder("p5-" + std::to_string(i)).InstanceType(kP5).Allocatable(kGpu, "8"));
      nodes_.push_back("p5-" + std::to_string(i));
    }
  }
  Pod Make(const std::string& name, const std::string& team, int32_t priority) {
    Pod pod =
        PodBuilder(name).Namespace("ns-" + team).Gpus(4).Priority(priority).Created(clock_.NowMs());
    return pod;
  }
  bool Schedule(Pod pod) {
    FilterArgs args;
    args.pod = pod;
    args.node_names = nodes_;
    FilterResult r = admission_->Filter(args);
    if (r.feasible.empty()) return false;
    const std::string node = nodes_[r.feasible[0]];
    if (!admission_->Bind(BindArgs{pod.name, pod.namespace_, pod.uid, node}).error.empty()) {
      return false;
    }
    pod.node_name = node;
    pod.phase = PodPhase::kRunning;
    pod.start_unix_ms = clock_.NowMs();
    informer_->OnPodUpsert(pod);
    return true;
  }
  // The process's ticker: runs the controller, run after run, until `done` holds; false after
  // `timeout`.
  bool RunUntil(const std::function<bool()>& done, std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!done()) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      (void)controller_->RunOnce();
    }
    return true;
  }

  common::FakeClock clock_;
  FakeKubeActions kube_;
  std::unique_ptr<QuotaBook> book_;
  std::unique_ptr<ClusterState> cluster_;
  std::unique_ptr<Admission> admission_;
  std::unique_ptr<PreemptionController> controller_;
  ClusterObserver* informer_ = nullptr;
  std::vector<std::string> nodes_;
};

TEST_F(ConcurrencyTest, RunsReclaimWhileWebhooksAndInformersRun) {
  std::vector<Pod> a;
  for (int i = 0; i < 4; ++i) {
    a.push_back(Make("a-" + std::to_string(i), "team-a", 10));
    informer_->OnPodUpsert(a.back());
    ASSERT_TRUE(Schedule(a.back()));
    clock_.Advance(60'000);
  }
  const Pod b0 = Make("b-0", "team-b", 100);
  const Pod b1 = Make("b-1", "team-b", 100);
  informer_->OnPodUpsert(b0);
  informer_->OnPodUpsert(b1);

  std::atomic<bool> stop{false};
  std::atomic<int> statuses_seen{0};
  // Webhook threads: the scheduler retries b-0 and reads status and counters meanwhile.
  std::vector<std::thread> webhooks;
  for (int t = 0; t < 2; ++t) {
    webhooks.emplace_back([&] {
      while (!stop.load(std::memory_order_relaxed)) {
        FilterArgs args;
        args.pod = b0;
        args.node_names = nodes_;
        FilterResult r = admission_->Filter(args);
        if (r.feasible.empty() && !r.reasons.empty() &&
            r.reasons[0].find("reclaiming") != std::string::npos) {
          statuses_seen.fetch_add(1, std::memory_order_relaxed);
        }
        (void)controller_->Stats();
        (void)controller_->StatusFor(b1.uid);
      }
    });
  }
  ASSERT_TRUE(RunUntil([&] { return kube_.evictions().size() >= 2; }, std::chrono::seconds(10)));
  // The rounds stay in flight until the victims go, and the status is published at the end of
  // the run that evicted them: a webhook sees it before the informer thread below lets them go
  // (and b-0 is nominated, so that its filter admits it).
  ASSERT_TRUE(RunUntil([&] { return statuses_seen.load(std::memory_order_relaxed) > 0; },
                       std::chrono::seconds(10)));

  // The informer thread: the victims terminate and go; A's job recreates them. The controller
  // keeps running meanwhile.
  std::atomic<bool> delivered{false};
  std::thread informer([&] {
    for (const FakeKubeActions::EvictCall& e : kube_.evictions()) {
      for (Pod pod : a) {
        if (pod.uid != e.uid) continue;
        pod.node_name = pod.uid == a[2].uid || pod.uid == a[3].uid ? "p5-1" : "p5-0";
        pod.phase = PodPhase::kRunning;
        pod.deletion_unix_ms = clock_.NowMs();
        informer_->OnPodUpsert(pod);
        informer_->OnPodDelete(pod);
        Pod retry = pod;
        retry.uid += "-retry";
        retry.node_name.clear();
        retry.deletion_unix_ms.reset();
        retry.phase = PodPhase::kPending;
        informer_->OnPodUpsert(retry);
      }
    }
    delivered.store(true, std::memory_order_release);
  });
  const bool informer_done =
      RunUntil([&] { return delivered.load(std::memory_order_acquire); }, std::chrono::seconds(10));
  informer.join();
  ASSERT_TRUE(informer_done);
  stop.store(true, std::memory_order_relaxed);
  for (std::thread& t : webhooks) t.join();

  // The victims' capacity went to b-0 and b-1 (nominated, or admitted by a webhook filter).
  ASSERT_TRUE(RunUntil([&] { return book_->Find(b1.uid).has_value(); }, std::chrono::seconds(10)));
  ASSERT_TRUE(RunUntil([&] { return Schedule(b0); }, std::chrono::seconds(10)));
  ASSERT_TRUE(RunUntil([&] { return Schedule(b1); }, std::chrono::seconds(10)));
  const uint64_t runs = controller_->Stats().runs;
  ASSERT_TRUE(
      RunUntil([&] { return controller_->Stats().runs > runs + 3; }, std::chrono::seconds(10)));
  EXPECT_EQ(kube_.evictions().size(), 2u);
  EXPECT_GT(statuses_seen.load(), 0);
  PreemptionStats stats = controller_->Stats();
  EXPECT_EQ(stats.rounds_in_flight, 0u);
  EXPECT_EQ((stats.preemptions[{"team-b", "team-a", PreemptionReason::kReclaim}]), 2u);
}

}  // namespace
}  // namespace taskgov::scheduler::actions
