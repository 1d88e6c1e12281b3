#include "scheduler/actions/preemption_controller.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>

#include "scheduler/actions/job_resumer.h"
#include "scheduler/common/time_format.h"
#include "scheduler/decisions/admission.h"
#include "scheduler/decisions/placement.h"
#include "scheduler/testing/builders.h"
#include "scheduler/testing/fake_kube_actions.h"

namespace taskgov::scheduler::actions {
namespace {

using decisions::Admission;
using decisions::Judge;
using decisions::PlacementVerdict;
using decisions::PreemptionReason;
using ledger::CellView;
using ledger::GangHold;
using ledger::Ledger;
using ledger::QuotaBook;
using model::FlavorNames;
using model::IdleComputeAllocation;
using model::kUnlimited;
using model::Node;
using model::Pod;
using model::PodPhase;
using model::Policy;
using model::PolicyPtr;
using model::ResourceNames;
using model::TaintEffect;
using model::Team;
using model::TeamNames;
using model::TolerationOperator;
using scheduler::testing::FakeKubeActions;
using scheduler::testing::NodeBuilder;
using scheduler::testing::PodBuilder;
using scheduler::testing::PolicyBuilder;
using state::ClusterState;
using state::NodeView;

constexpr char kP5[] = "ml.p5.48xlarge";
constexpr char kGpu[] = "nvidia.com/gpu";
constexpr int64_t kMinute = 60'000;

using Strings = std::vector<std::string>;

// FakeKubeActions, with a PodDisruptionBudget refusing the eviction of chosen pods.
class PdbKube final : public KubeActions {
 public:
  common::Status Bind(const std::string& ns, const std::string& name, const std::string& uid,
                      const std::string& node) override {
    return fake.Bind(ns, name, uid, node);
  }
  EvictOutcome Evict(const std::string& ns, const std::string& name, const std::string& uid,
                     int64_t grace, std::string* detail) override {
    EvictOutcome outcome = fake.Evict(ns, name, uid, grace, detail);
    if (protected_uids.count(uid) > 0) {
      if (detail != nullptr) *detail = "Cannot evict pod as it would violate the pod's budget";
      return EvictOutcome::kBlockedByPdb;
    }
    return outcome;
  }
  void RecordEvent(const EventRecord& event) override { fake.RecordEvent(event); }

  FakeKubeActions fake;
  std::set<std::string> protected_uids;
};

// The domain wired as in the process: informer events through the controller's observer, the
// scheduler as filter + bind over every node, the kubelet as explicit steps.
class ControllerTest : public ::testing::Test {
 protected:
  void Start(PolicyPtr policy, PreemptionController::Options options = {}) {
    book_ = std::make_unique<QuotaBook>(policy, &clock_);
    cluster_ = std::make_unique<ClusterState>(book_.get(), &clock_, ClusterState::Options{});
    admission_ = std::make_unique<Admission>(book_.get(), cluster_.get(), &kube_, &clock_,
                                             Admission::Options{});
    controller_ = std::make_unique<PreemptionController>(book_.get(), cluster_.get(), &kube_,
                                                         &clock_, options);
    admission_->SetPreemptionStatus(
        [this](std::string_view uid) { return controller_->StatusFor(uid); });
    admission_->SetPreemptorState(
        [this](std::string_view uid) { return controller_->StateOf(uid); });
    cluster_->SetPodGoneObserver([this](std::string_view uid) { controller_->OnPodGone(uid); });
    informer_ = cluster_.get();
    informer_->OnSynced(ObjectKind::kPod);
    informer_->OnSynced(ObjectKind::kNode);
  }
  void AddNodes(int n, int gpus) {
    for (int i = 0; i < n; ++i) {
      const std::string name = "p5-" + std::to_string(i);
      informer_->OnNodeUpsert(
          NodeBuilder(name).InstanceType(kP5).Allocatable(kGpu, std::to_string(gpus)));
      nodes_.push_back(name);
    }
  }
  // A pod created now, pending, that the informer delivers.
  Pod Submit(const std::string& name, const std::string& team, int gpus, int32_t priority,
             PodBuilder builder = PodBuilder("")) {
    Pod pod = Create(name, team, gpus, priority, std::move(builder));
    informer_->OnPodUpsert(pod);
    return pod;
  }
  // The facts of a member of Kueue pod group `group` declaring `size` members.
  static PodBuilder GangMember(const std::string& group, int size) {
    return PodBuilder("")
        .Label("kueue.x-k8s.io/pod-group-name", group)
        .Annotation("kueue.x-k8s.io/pod-group-total-count", std::to_string(size));
  }
  // Two 8-GPU nodes; b-0 and b-1 (2 GPUs each) of team-b's gang "train" of 4 run, the quota of
  // the other two is held.
  void TwoOfAFourPodGangRunning() {
    AddNodes(2, 8);
    Submit("b-0", "team-b", 2, 100, GangMember("train", 4));
    Submit("b-1", "team-b", 2, 100, GangMember("train", 4));
    ASSERT_TRUE(Schedule("uid-b-0"));
    ASSERT_TRUE(Schedule("uid-b-1"));
  }
  // A pod created now, pending, in the API server only: the informer has not delivered it.
  Pod Create(const std::string& name, const std::string& team, int gpus, int32_t priority,
             PodBuilder builder = PodBuilder("")) {
    Pod pod = builder.Build();
    pod.name = name;
    pod.uid = "uid-" + name;
    pod.namespace_ = "ns-" + team;
    pod.priority = priority;
    pod.creation_unix_ms = clock_.NowMs();
    pod.containers.front().requests.Set(kGpu, gpus);
    pods_[pod.uid] = pod;
    return pod;
  }
  // A node of the flavor with labels and taints from `facts`.
  void AddNode(const std::string& name, int gpus, NodeBuilder facts) {
    Node node = facts.InstanceType(kP5).Allocatable(kGpu, std::to_string(gpus));
    node.name = name;
    informer_->OnNodeUpsert(node);
    nodes_.push_back(name);
  }
  // Two 8-GPU nodes; four 4-GPU pods of team-a, a minute apart: a-0 and a-1 on p5-0, a-2 and
  // a-3 on p5-1.
  void FourBorrowedPods() {
    AddNodes(2, 8);
    for (int i = 0; i < 4; ++i) {
      Submit("a-" + std::to_string(i), "team-a", 4, 10);
      ASSERT_TRUE(Schedule("uid-a-" + std::to_string(i)));
      clock_.Advance(kMinute);
    }
  }
  // Two 8-GPU nodes: team-a's a-solo-0 and a-solo-1 (4 GPUs each) fill p5-0; a minute later,
  // the two 4-GPU members of a gang (`member`: its labels, annotations or owner), job-0 and
  // job-1, land on p5-1. Alone, one member would be enough for a 4-GPU preemptor.
  void GangStartedLastOnP51(PodBuilder member) {
    AddNodes(2, 8);
    Submit("a-solo-0", "team-a", 4, 10);
    ASSERT_TRUE(Schedule("uid-a-solo-0"));
    Submit("a-solo-1", "team-a", 4, 10);
    ASSERT_TRUE(Schedule("uid-a-solo-1"));
    clock_.Advance(kMinute);
    for (int i = 0; i < 2; ++i) {
      Submit("job-" + std::to_string(i), "team-a", 4, 10, member);
      ASSERT_TRUE(Schedule("uid-job-" + std::to_string(i)));
    }
    ASSERT_EQ(pods_["uid-job-0"].node_name, "p5-1");
    ASSERT_EQ(pods_["uid-job-1"].node_name, "p5-1");
  }
  // GPU nodes tainted as in production: p5-0 nvidia.com/gpu=present:NoSchedule, p5-1 reserved
  // (dedicated=team-x:NoSchedule). Four 4-GPU pods of team-a that tolerate everything, a minute
  // apart, fill both: a-0 and a-1 on p5-0, the more recent a-2 and a-3 on p5-1.
  void TaintedNodesFilledByTeamA() {
    AddNode("p5-0", 8,
            NodeBuilder("").Taint("nvidia.com/gpu", "present", TaintEffect::kNoSchedule));
    AddNode("p5-1", 8, NodeBuilder("").Taint("dedicated", "team-x", TaintEffect::kNoSchedule));
    for (int i = 0; i < 4; ++i) {
      Submit("a-" + std::to_string(i), "team-a", 4, 10,
             PodBuilder("").Toleration("", TolerationOperator::kExists));
      ASSERT_TRUE(Schedule("uid-a-" + std::to_string(i)));
      clock_.Advance(kMinute);
    }
    ASSERT_EQ(pods_["uid-a-1"].node_name, "p5-0");
    ASSERT_EQ(pods_["uid-a-2"].node_name, "p5-1");
  }
  // The extender's filter over the nodes kube-scheduler's own filters leave: those whose taints
  // the pod tolerates and whose labels its nodeSelector and required affinity match.
  FilterResult Filter(const Pod& pod, FilterArgs* args) {
    args->pod = pod;
    args->node_names.clear();
    for (const std::string& node : nodes_) {
      const NodeView view = cluster_->nodes().View(node);
      if (Judge(pod.node_selector, pod.placement.get(), *view.placement) ==
          PlacementVerdict::kAccepted) {
        args->node_names.push_back(node);
      }
    }
    FilterResult result = admission_->Filter(*args);
    cluster_->pending().Flush();  // its note applied, as by the queues' applier soon after
    return result;
  }
  // The scheduler's attempt: filter, bind to the first feasible node, the informer sees it run.
  bool Schedule(const std::string& uid) {
    Pod pod = pods_.at(uid);
    FilterArgs args;
    FilterResult r = Filter(pod, &args);
    if (r.feasible.empty()) return false;
    const std::string& node = args.node_names[r.feasible[0]];
    if (!admission_->Bind(BindArgs{pod.name, pod.namespace_, pod.uid, node}).error.empty()) {
      return false;
    }
    pod.node_name = node;
    pod.phase = PodPhase::kRunning;
    pod.start_unix_ms = clock_.NowMs();
    pods_[uid] = pod;
    informer_->OnPodUpsert(pod);
    return true;
  }
  std::string Refusal(const std::string& uid) {
    FilterArgs args;
    FilterResult r = Filter(pods_.at(uid), &args);
    return r.feasible.empty() ? r.ReasonFor(args, nodes_[0]) : "";
  }
  // The kubelet: an evicted pod gets its deletion timestamp, later it is gone.
  void Terminating(const std::string& uid) {
    Pod& pod = pods_.at(uid);
    pod.deletion_unix_ms = clock_.NowMs();
    informer_->OnPodUpsert(pod);
  }
  void Gone(const std::string& uid) {
    informer_->OnPodDelete(pods_.at(uid));
    pods_.erase(uid);
  }
  void Finish(const std::string& uid) {
    Pod& pod = pods_.at(uid);
    pod.phase = PodPhase::kSucceeded;
    informer_->OnPodUpsert(pod);
  }
  int64_t Usage(const std::string& team) {
    Ledger::Session s(book_->ledger());
    return s.View(TeamNames().Intern(team), FlavorNames().Intern(kP5), ResourceNames().Intern(kGpu))
        .usage;
  }
  Strings Evicted() const {
    Strings out;
    for (const FakeKubeActions::EvictCall& e : fake().evictions()) out.push_back(e.name);
    return out;
  }
  virtual const FakeKubeActions& fake() const { return kube_; }
  // The events recorded with `reason`, in order: Preempted on victims, Preempting on preemptors.
  std::vector<EventRecord> Events(const std::string& reason) const {
    std::vector<EventRecord> out;
    for (const EventRecord& e : fake().events()) {
      if (e.reason == reason) out.push_back(e);
    }
    return out;
  }
  // Owners go before borrowers: team-a's borrowing round (`ns-team-a/a-urgent`) waits, and the
  // one round of the run is team-b's `owner`, which reclaims.
  void ExpectOwnerGoesFirst(const PreemptionController::RunReport& report,
                            const std::string& owner) const {
    EXPECT_EQ(report.no_preemption.at("ns-team-a/a-urgent"),
              "its turn to borrow has not come: team-b's pending pod ns-team-b/" + owner +
                  " fits within team-b's nominal quota on ml.p5.48xlarge and goes first: it "
                  "would reclaim what team-a borrowed there");
    ASSERT_EQ(Events("Preempting").size(), 1u);
    EXPECT_EQ(Events("Preempting")[0].pod_name, owner);
  }

  common::FakeClock clock_;
  FakeKubeActions kube_;
  std::unique_ptr<QuotaBook> book_;
  std::unique_ptr<ClusterState> cluster_;
  std::unique_ptr<Admission> admission_;
  std::unique_ptr<PreemptionController> controller_;
  ClusterObserver* informer_ = nullptr;
  std::vector<std::string> nodes_;
  std::map<std::string, Pod> pods_;  // by uid, as the API server has them
};

PolicyPtr TwoTeams(IdleComputeAllocation idle = IdleComputeAllocation::kFairShare) {
  return PolicyBuilder()
      .Team("team-a", "c")
      .Quota(kP5, kGpu, 8)
      .Team("team-b", "c")
      .Quota(kP5, kGpu, 8)
      .IdleCompute(idle)
      .Build();
}

// team-a, team-b and team-c with 8 GPUs each in cohort c, borrowing without limit, and the given
// starvation bound (0: the policy's default).
PolicyPtr ThreeTeams(int64_t starvation_bound_seconds = 0) {
  auto policy = std::make_shared<Policy>(*PolicyBuilder()
                                              .Team("team-a", "c")
                                              .Quota(kP5, kGpu, 8)
                                              .Team("team-b", "c")
                                              .Quota(kP5, kGpu, 8)
                                              .Team("team-c", "c")
                                              .Quota(kP5, kGpu, 8)
                                              .Build());
  if (starvation_bound_seconds > 0) policy->starvation_bound_seconds = starvation_bound_seconds;
  return policy;
}

// team-a alone with 8 GPUs (no borrowing) and the given minimum runtime and starvation bound (0:
// the policy's default).
PolicyPtr TeamAAlone(int64_t minimum_runtime_seconds, int64_t starvation_bound_seconds = 0) {
  auto policy = std::make_shared<Policy>(
      *PolicyBuilder().Team("team-a", "c").Quota(kP5, kGpu, 8, /*borrow=*/0).Build());
  policy->preemption.minimum_runtime_seconds = minimum_runtime_seconds;
  if (starvation_bound_seconds > 0) policy->starvation_bound_seconds = starvation_bound_seconds;
  return policy;
}

TEST_F(ControllerTest, HyperPodWalkthroughReclaimsLentGpusWithAGracePeriod) {
  Start(TwoTeams());
  AddNodes(2, 8);
  // Team A borrows team B's idle GPUs: four 4-GPU training pods, 16 of nominal 8.
  for (int i = 0; i < 4; ++i) {
    Submit("a-" + std::to_string(i), "team-a", 4, 10);
    ASSERT_TRUE(Schedule("uid-a-" + std::to_string(i)));
    clock_.Advance(kMinute);
  }
  EXPECT_EQ(Usage("team-a"), 16);
  EXPECT_EQ(controller_->RunOnce().rounds_started, 0u);  // nobody waits

  // Team B submits a high-priority job within its own quota: refused, A's pods fill the nodes
  // (and the cohort pool).
  clock_.Advance(10 * kMinute);
  Submit("b-0", "team-b", 4, 100);
  Submit("b-1", "team-b", 4, 100);
  EXPECT_EQ(Refusal("uid-b-0"), "team-b: no ml.p5.48xlarge node has room for nvidia.com/gpu: 4");

  // Reclaim: A's two most recent pods go, with the grace period to checkpoint.
  PreemptionController::RunReport report = controller_->RunOnce();
  EXPECT_EQ(report.rounds_started, 2u);
  EXPECT_EQ(report.evictions, 2u);
  EXPECT_EQ(Evicted(), (Strings{"a-3", "a-2"}));
  for (const FakeKubeActions::EvictCall& e : kube_.evictions()) {
    EXPECT_EQ(e.grace_period_seconds, 120);
  }
  ASSERT_EQ(Events("Preempted").size(), 2u);
  const EventRecord event = Events("Preempted")[0];
  EXPECT_EQ(event.pod_name, "a-3");
  EXPECT_EQ(event.reason, "Preempted");
  EXPECT_EQ(event.note,
            "Reclaim: team-b reclaims the nvidia.com/gpu on ml.p5.48xlarge it lent, for its pod "
            "(UID uid-b-0); team-a uses 16 of nominal 8 (grace period 120s)");
  EXPECT_EQ(controller_->StatusFor("uid-b-0"),
            "reclaiming 4 nvidia.com/gpu from team-a, 1 pod terminating");
  EXPECT_EQ(Refusal("uid-b-0"),
            "team-b: no ml.p5.48xlarge node has room for nvidia.com/gpu: 4; reclaiming 4 "
            "nvidia.com/gpu from team-a, 1 pod terminating");

  // While the victims terminate they count as freed: no second round evicts more.
  clock_.Advance(30'000);
  Terminating("uid-a-3");
  Terminating("uid-a-2");
  // A's job controller recreates its pods under new UIDs; they wait.
  Submit("a-2-retry", "team-a", 4, 10);
  Submit("a-3-retry", "team-a", 4, 10);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(controller_->RunOnce().evictions, 0u);
    clock_.Advance(30'000);
  }
  EXPECT_EQ(kube_.evictions().size(), 2u);
  PreemptionStats mid = controller_->Stats();
  EXPECT_EQ(mid.preempted_pods["team-a"], 2);
  EXPECT_EQ(mid.rounds_in_flight, 2u);

  // The victims are gone: their capacity is handed to B's pods at once, not to A's retries.
  Gone("uid-a-3");
  Gone("uid-a-2");
  EXPECT_TRUE(book_->Find("uid-b-0").has_value());
  EXPECT_NE(controller_->StatusFor("uid-b-0").find("capacity reserved on ml.p5.48xlarge"),
            std::string::npos);
  EXPECT_FALSE(Schedule("uid-a-2-retry"));
  EXPECT_TRUE(Schedule("uid-b-0"));
  EXPECT_TRUE(Schedule("uid-b-1"));
  EXPECT_EQ(Usage("team-b"), 8);
  EXPECT_EQ(Usage("team-a"), 8);
  controller_->RunOnce();
  EXPECT_EQ(controller_->StatusFor("uid-b-0"), "");
  // A's retries wait without evicting anything: B is within its nominal.
  for (int i = 0; i < 3; ++i) controller_->RunOnce();
  EXPECT_FALSE(Schedule("uid-a-2-retry"));
  EXPECT_EQ(kube_.evictions().size(), 2u);

  // B's job finishes: A's retries run.
  Finish("uid-b-0");
  Finish("uid-b-1");
  EXPECT_TRUE(Schedule("uid-a-2-retry"));
  EXPECT_TRUE(Schedule("uid-a-3-retry"));

  PreemptionStats stats = controller_->Stats();
  EXPECT_EQ((stats.preemptions[{"team-b", "team-a", PreemptionReason::kReclaim}]), 2u);
  EXPECT_EQ(stats.preemptions.size(), 1u);
  EXPECT_EQ(stats.rounds_started, 2u);
  EXPECT_EQ(stats.rounds_succeeded, 2u);
  EXPECT_TRUE(stats.preempted_pods.empty());
  EXPECT_EQ(stats.rounds_in_flight, 0u);
}

// Pods of a team's namespace that another scheduler bound (spec.schedulerName left at
// default-scheduler) count against the team; those that put it above its nominal quota are
// reclaimed like a borrower's when another team wants its lent quota back. Each gets a Warning
// event, once, naming the team and the fix.
// DESIGN §3.6, no two teams preempt each other back and forth. team-b's b-0 reclaims a node from
// team-a; later team-b borrows the other node and team-a wants its nominal back. Of team-b's
// pods b-0 would lose the least (it just saved a checkpoint), but it took from team-a: team-b's
// other pod goes. Five minutes after its reclaim b-0 is a candidate like any other.
TEST_F(ControllerTest, APodThatReclaimedFromATeamIsNotReclaimedBackByIt) {
  Start(TwoTeams());
  AddNodes(2, 8);
  Submit("a-0", "team-a", 8, 10);
  ASSERT_TRUE(Schedule("uid-a-0"));
  clock_.Advance(kMinute);
  Submit("a-1", "team-a", 8, 10);
  ASSERT_TRUE(Schedule("uid-a-1"));
  clock_.Advance(kMinute);
  Submit("b-0", "team-b", 8, 10);
  controller_->RunOnce();
  ASSERT_EQ(Evicted(), (Strings{"a-1"}));
  Terminating("uid-a-1");
  Gone("uid-a-1");
  ASSERT_TRUE(Schedule("uid-b-0"));
  clock_.Advance(kMinute);
  Finish("uid-a-0");
  Gone("uid-a-0");
  Submit("b-1", "team-b", 8, 10);  // borrows team-a's idle nominal
  ASSERT_TRUE(Schedule("uid-b-1"));
  clock_.Advance(kMinute);
  auto checkpoint_now = [&](const std::string& uid) {
    Pod& pod = pods_.at(uid);
    pod.annotations[model::kLastCheckpointAnnotation] =
        common::FormatMicroTime(clock_.NowMs() * 1000);
    informer_->OnPodUpsert(pod);
  };
  checkpoint_now("uid-b-0");
  Submit("a-2", "team-a", 8, 10);
  controller_->RunOnce();
  EXPECT_EQ(Evicted(), (Strings{"a-1", "b-1"}));

  // Later, the same standing: b-0 goes now.
  Terminating("uid-b-1");
  Gone("uid-b-1");
  ASSERT_TRUE(Schedule("uid-a-2"));
  clock_.Advance(5 * kMinute);
  Finish("uid-a-2");
  Gone("uid-a-2");
  Submit("b-2", "team-b", 8, 10);
  ASSERT_TRUE(Schedule("uid-b-2"));
  clock_.Advance(kMinute);
  checkpoint_now("uid-b-0");
  Submit("a-3", "team-a", 8, 10);
  controller_->RunOnce();
  EXPECT_EQ(Evicted(), (Strings{"a-1", "b-1", "b-0"}));
}

TEST_F(ControllerTest, UngovernedPodsOverTheirTeamsQuotaAreReportedAndReclaimedLikeBorrowers) {
  Start(PolicyBuilder()
            .Team("team-a", "c")
            .Quota(kP5, kGpu, 8, /*borrowing_limit=*/0)
            .Team("team-b", "c")
            .Quota(kP5, kGpu, 8)
            .Build());
  AddNodes(2, 8);
  for (int i = 0; i < 4; ++i) {
    Pod pod = Create("a-" + std::to_string(i), "team-a", 4, 10,
                     PodBuilder("").SchedulerName("default-scheduler"));
    pod.node_name = nodes_[i / 2];
    pod.phase = PodPhase::kRunning;
    pod.start_unix_ms = clock_.NowMs();
    pods_[pod.uid] = pod;
    informer_->OnPodUpsert(pod);
    clock_.Advance(kMinute);
  }
  EXPECT_EQ(Usage("team-a"), 16);  // twice what team-a may use
  EXPECT_EQ(cluster_->UngovernedByTeam()[TeamNames().Intern("team-a")], 4u);
  EXPECT_EQ(controller_->RunOnce().evictions, 0u);  // nobody needs the GPUs back yet
  std::vector<EventRecord> reported = Events("Ungoverned");
  ASSERT_EQ(reported.size(), 4u);
  EXPECT_EQ(reported[0].pod_name, "a-0");
  EXPECT_EQ(reported[0].type, "Warning");
  EXPECT_EQ(reported[0].note,
            "bound by scheduler default-scheduler, not taskgov: its nvidia.com/gpu: 4 count "
            "against team-a's quota, and it may be reclaimed while team-a uses more than its "
            "nominal quota; set spec.schedulerName: taskgov");

  // Team B wants its 8 lent GPUs: the two most recent ungoverned pods go, as borrowers would.
  Submit("b-0", "team-b", 4, 10);
  Submit("b-1", "team-b", 4, 10);
  EXPECT_EQ(controller_->RunOnce().evictions, 2u);
  EXPECT_EQ(Evicted(), (Strings{"a-3", "a-2"}));
  EXPECT_EQ(Events("Ungoverned").size(), 4u);  // once per pod
  Gone("uid-a-3");
  Gone("uid-a-2");
  EXPECT_EQ(cluster_->UngovernedByTeam()[TeamNames().Intern("team-a")], 2u);
  EXPECT_TRUE(Schedule("uid-b-0"));
  EXPECT_TRUE(Schedule("uid-b-1"));
  // Team A is within its nominal quota now: its ungoverned pods stay.
  Submit("b-2", "team-b", 4, 10);
  controller_->RunOnce();
  EXPECT_EQ(kube_.evictions().size(), 2u);
  EXPECT_EQ(Usage("team-a"), 8);
}

TEST_F(ControllerTest, LaterPreemptorsCountTerminatingPodsAsFreedAndRespectClaims) {
  Start(TwoTeams());
  AddNodes(2, 8);
  for (int i = 0; i < 4; ++i) {
    Submit("a-" + std::to_string(i), "team-a", 4, 10);
    ASSERT_TRUE(Schedule("uid-a-" + std::to_string(i)));
    clock_.Advance(kMinute);
  }
  Submit("b-0", "team-b", 4, 100);
  controller_->RunOnce();
  ASSERT_EQ(Evicted(), Strings{"a-3"});
  Terminating("uid-a-3");
  // b-1 arrives while a-3 terminates: a-3's 4 GPUs are b-0's; b-1 needs exactly one more pod.
  clock_.Advance(10'000);
  Submit("b-1", "team-b", 4, 100);
  controller_->RunOnce();
  EXPECT_EQ(Evicted(), (Strings{"a-3", "a-2"}));
  // A user deletes a-1 (it terminates on its own): b-2 fits, by borrowing, once a-1 is gone —
  // nothing is evicted for it.
  Terminating("uid-a-1");
  Submit("b-2", "team-b", 4, 100);
  controller_->RunOnce();
  EXPECT_EQ(Evicted(), (Strings{"a-3", "a-2"}));
  EXPECT_EQ(controller_->StatusFor("uid-b-2"), "");
}

TEST_F(ControllerTest, InTeamPreemptionEvictsTheLowestPriorityMostRecentPod) {
  Start(PolicyBuilder().Team("team-a", "c").Quota(kP5, kGpu, 8, /*borrow=*/0).Build());
  AddNodes(1, 8);
  Submit("train-0", "team-a", 2, 10);
  ASSERT_TRUE(Schedule("uid-train-0"));
  clock_.Advance(kMinute);
  Submit("train-1", "team-a", 2, 10);
  ASSERT_TRUE(Schedule("uid-train-1"));
  clock_.Advance(kMinute);
  Submit("eval", "team-a", 4, 50);
  ASSERT_TRUE(Schedule("uid-eval"));
  clock_.Advance(kMinute);
  Submit("urgent", "team-a", 2, 100);
  EXPECT_FALSE(Schedule("uid-urgent"));

  controller_->RunOnce();
  EXPECT_EQ(Evicted(), Strings{"train-1"});
  ASSERT_EQ(Events("Preempted").size(), 1u);
  EXPECT_EQ(Events("Preempted")[0].note,
            "InTeamPriority: preempted by higher-priority pod ns-team-a/urgent of team-a "
            "(priority 100 > 10), which needs nvidia.com/gpu: 2 on ml.p5.48xlarge (grace period "
            "120s)");
  ASSERT_EQ(Events("Preempting").size(), 1u);
  EXPECT_EQ(Events("Preempting")[0].pod_name, "urgent");
  EXPECT_EQ(Events("Preempting")[0].note,
            "taskgov is preempting 2 nvidia.com/gpu on ml.p5.48xlarge from team-a "
            "(InTeamPriority): evicting 1 pod with a 120s grace period");
  EXPECT_EQ(controller_->StatusFor("uid-urgent"),
            "preempting 2 nvidia.com/gpu from team-a, 1 pod terminating");
  Gone("uid-train-1");
  EXPECT_TRUE(Schedule("uid-urgent"));
  controller_->RunOnce();
  EXPECT_EQ(
      (controller_->Stats().preemptions[{"team-a", "team-a", PreemptionReason::kInTeamPriority}]),
      1u);
  EXPECT_EQ(controller_->Stats().rounds_succeeded, 1u);
}

TEST_F(ControllerTest, AGangIsEvictedWhole) {
  Start(TwoTeams());
  // A two-pod PyTorchJob.
  ASSERT_NO_FATAL_FAILURE(
      GangStartedLastOnP51(PodBuilder("").Owner("PyTorchJob", "train", "uid-train")));
  EXPECT_EQ(Usage("team-a"), 16);
  Submit("b-0", "team-b", 4, 100);
  controller_->RunOnce();
  EXPECT_EQ(Evicted(), (Strings{"job-0", "job-1"}));
  ASSERT_EQ(Events("Preempted").size(), 2u);
  EXPECT_NE(Events("Preempted")[1].note.find("evicted with its gang of 2 pods"), std::string::npos);
  EXPECT_EQ(controller_->StatusFor("uid-b-0"),
            "reclaiming 8 nvidia.com/gpu from team-a, 2 pods terminating");
  // The round hands the capacity over only when the whole gang is gone.
  Gone("uid-job-0");
  EXPECT_FALSE(book_->Find("uid-b-0").has_value());
  Gone("uid-job-1");
  EXPECT_TRUE(book_->Find("uid-b-0").has_value());
  EXPECT_TRUE(Schedule("uid-b-0"));
}

// No starvation of reclaim: a thousand higher-ranked pending pods that need no remedy (they fit
// their quota and a node; they only wait for kube-scheduler to get to them) are set aside for a
// while once judged, so a pod ranked below them that needs a reclaim is reached within a few
// runs, not never (each run looks at a bounded number of preemptors).
TEST_F(ControllerTest, AReclaimIsReachedPastAThousandHigherRankedPodsThatNeedNoRemedy) {
  constexpr char kG5[] = "ml.g5.12xlarge";
  PolicyBuilder policy;
  policy.Team("team-a", "c").Quota(kP5, kGpu, 8).Team("team-b", "c").Quota(kP5, kGpu, 8);
  for (int t = 0; t < 10; ++t)
    policy.Team("team-x" + std::to_string(t), "x").Quota(kG5, kGpu, 1000);
  Start(policy.Build());
  FourBorrowedPods();  // team-a runs 16 GPUs on p5: its 8 and team-b's 8
  informer_->OnNodeUpsert(NodeBuilder("g5-0").InstanceType(kG5).Allocatable(kGpu, "100000"));
  clock_.Advance(10 * kMinute);
  for (int i = 0; i < 1000; ++i) {
    Submit("x-" + std::to_string(i), "team-x" + std::to_string(i % 10), 1, 1000);
  }
  Submit("b-0", "team-b", 4, 100);
  int runs = 0;
  bool reached = false;
  while (runs < 40 && !reached) {
    reached = controller_->RunOnce().rounds_started > 0;
    ++runs;
    clock_.Advance(100);
  }
  EXPECT_TRUE(reached) << "no reclaim for team-b after " << runs << " runs";
  EXPECT_LE(runs, 1000 / 64 + 3);  // one pass over the thousand, then team-b
  EXPECT_EQ(Evicted(), (Strings{"a-3"}));
}

// Victim order is deterministic: the same cluster, its pods seen in another order, gives the
// same victims (candidates tie on team, share, priority and start time; the UID decides).
TEST_F(ControllerTest, TheSameClusterSeenInAnotherOrderPicksTheSameVictims) {
  std::vector<Strings> picked;
  for (bool reversed : {false, true}) {
    Start(TwoTeams());
    nodes_.clear();
    pods_.clear();
    const size_t before = kube_.evictions().size();
    AddNodes(2, 8);
    std::vector<int> order = {0, 1, 2, 3, 4, 5, 6, 7};
    if (reversed) std::reverse(order.begin(), order.end());
    for (int i : order) {  // eight 2-GPU pods of team-a started at the same instant
      Submit("a-" + std::to_string(i), "team-a", 2, 10);
      ASSERT_TRUE(Schedule("uid-a-" + std::to_string(i)));
    }
    clock_.Advance(10 * kMinute);
    Submit("b-0", "team-b", 4, 100);
    (void)controller_->RunOnce();
    const Strings evicted = Evicted();
    picked.emplace_back(evicted.begin() + static_cast<std::ptrdiff_t>(before), evicted.end());
  }
  ASSERT_EQ(picked[0].size(), 2u);
  EXPECT_EQ(picked[0], picked[1]);
}

// A gang must not run partly (DESIGN §3.7): when its members do not all come before the gang's
// timeout, the quota held for the missing ones is released and the members that run are evicted
// (with an event saying why), so that the gang is admitted again whole or not at all.
TEST_F(ControllerTest, TheRunningMembersOfAGangThatTimedOutAreEvicted) {
  Start(TwoTeams());
  TwoOfAFourPodGangRunning();
  EXPECT_EQ(Usage("team-b"), 8);  // two running, two more held for the gang
  EXPECT_EQ(controller_->RunOnce().gang_timeout_evictions, 0u);
  clock_.Advance(book_->ledger().policy()->gang_timeout_seconds * 1000 + 1);
  (void)book_->ExpireAssumed();
  EXPECT_EQ(Usage("team-b"), 4);  // the held part is released
  EXPECT_EQ(controller_->RunOnce().gang_timeout_evictions, 2u);
  EXPECT_EQ(Evicted(), (Strings{"b-0", "b-1"}));
  ASSERT_EQ(Events("GangTimeout").size(), 2u);
  EXPECT_EQ(Events("GangTimeout")[0].note,
            "Gang timeout: 2 of the 4 members of its gang were admitted within 300s; its running "
            "members are evicted so that the gang runs whole or not at all (grace period 120s)");
  EXPECT_EQ(controller_->RunOnce().gang_timeout_evictions, 0u);  // once
}

// A gang is one preemptor (DESIGN §3.7): one round frees what all its members need, and once
// the victims are gone the freed quota is held for the whole gang, so every member is admitted.
TEST_F(ControllerTest, AGangReclaimsForAllItsMembersInOneRoundAndIsAdmittedWhole) {
  Start(TwoTeams());
  FourBorrowedPods();
  clock_.Advance(10 * kMinute);
  Submit("b-0", "team-b", 4, 100, GangMember("train", 2));
  Submit("b-1", "team-b", 4, 100, GangMember("train", 2));
  ASSERT_FALSE(Schedule("uid-b-0"));
  PreemptionController::RunReport report = controller_->RunOnce();
  EXPECT_EQ(report.preemptors, 1u);  // the gang, not each member
  EXPECT_EQ(report.rounds_started, 1u);
  EXPECT_EQ(Evicted(), (Strings{"a-3", "a-2"}));  // 8 GPUs: what both members need
  Gone("uid-a-3");
  Gone("uid-a-2");
  (void)controller_->RunOnce();  // victims gone: the freed quota is held for the gang
  const std::optional<GangHold> hold = book_->FindGang("kueue/ns-team-b/train");
  ASSERT_TRUE(hold.has_value());
  EXPECT_EQ(hold->remaining[0].Amount(ResourceNames().Intern(kGpu)), 4);  // b-1's share
  EXPECT_TRUE(Schedule("uid-b-0"));
  EXPECT_TRUE(Schedule("uid-b-1"));
  EXPECT_EQ(Usage("team-b"), 8);
}

// A whole-node pod within its team's nominal quota that no node has room for, with nothing that
// may be evicted (team-b and team-c each fill a node within theirs), has the node whose pods
// started first drained for it: its room is held while its pods end, and once it fits, for
// drain_fit_hold_ms more while kube-scheduler has not tried it again — then let go, so a pod that
// something else keeps off the node does not hold it idle forever.
TEST_F(ControllerTest, ADrainedPodThatFitsKeepsItsRoomForTheFitHoldAndNoLonger) {
  Start(PolicyBuilder()
            .Team("team-a", "c")
            .Quota(kP5, kGpu, 8, /*borrow=*/0)
            .Team("team-b", "c")
            .Quota(kP5, kGpu, 8, /*borrow=*/0)
            .Team("team-c", "c")
            .Quota(kP5, kGpu, 8, /*borrow=*/0)
            .Build());
  AddNodes(2, 8);
  for (const char* name : {"b-0", "b-1"}) {
    Submit(name, "team-b", 4, 10);
    ASSERT_TRUE(Schedule(std::string("uid-") + name));
  }
  clock_.Advance(kMinute);
  for (const char* name : {"c-0", "c-1"}) {
    Submit(name, "team-c", 4, 10);
    ASSERT_TRUE(Schedule(std::string("uid-") + name));
  }
  ASSERT_EQ(pods_["uid-b-1"].node_name, "p5-0");
  ASSERT_EQ(pods_["uid-c-0"].node_name, "p5-1");
  clock_.Advance(kMinute);
  Submit("a-big", "team-a", 8, 10);
  EXPECT_EQ(Refusal("uid-a-big"), "team-a: no ml.p5.48xlarge node has room for nvidia.com/gpu: 8");
  PreemptionController::RunReport report = controller_->RunOnce();
  EXPECT_EQ(report.rounds_started, 0u);
  EXPECT_TRUE(Evicted().empty());
  // p5-0, whose pods started first, is drained: b-0's end leaves its room to a-big.
  Finish("uid-b-0");
  Gone("uid-b-0");
  Submit("b-2", "team-b", 4, 10);
  EXPECT_NE(Refusal("uid-b-2").find("held for"), std::string::npos) << Refusal("uid-b-2");
  clock_.Advance(1'000);
  (void)controller_->RunOnce();
  Finish("uid-b-1");
  Gone("uid-b-1");
  // a-big fits now; kube-scheduler has not tried it yet (backing off). Its room stays held.
  const int64_t fits_at = clock_.NowMs();
  while (clock_.NowMs() - fits_at <= PreemptionController::Options{}.drain_fit_hold_ms) {
    clock_.Advance(1'000);
    (void)controller_->RunOnce();
    ASSERT_NE(Refusal("uid-b-2").find("held for"), std::string::npos)
        << (clock_.NowMs() - fits_at) << " ms after a-big fitted: " << Refusal("uid-b-2");
  }
  // Past the fit hold the room is let go (once the last run's hold lapses): b-2 is admitted.
  for (int i = 0; i < 5 && !Refusal("uid-b-2").empty(); ++i) {
    clock_.Advance(1'000);
    (void)controller_->RunOnce();
  }
  EXPECT_EQ(Refusal("uid-b-2"), "");
  EXPECT_LE(clock_.NowMs() - fits_at, PreemptionController::Options{}.drain_fit_hold_ms +
                                          PreemptionController::Options{}.drain_hold_ms + 2'000);
  EXPECT_TRUE(Evicted().empty());
}

// A gang within its team's nominal quota whose members do not all find room gets room freed for
// them all. Judged on one member, which fits, nothing was freed: the gang waited while smaller
// pods took the room.
TEST_F(ControllerTest, AGangWithRoomForOneMemberGetsRoomForAll) {
  Start(ThreeTeams());
  AddNodes(2, 8);
  for (int i = 0; i < 3; ++i) {  // a-0 and a-1 on p5-0, a-2 on p5-1
    Submit("a-" + std::to_string(i), "team-a", 4, 10);
    ASSERT_TRUE(Schedule("uid-a-" + std::to_string(i)));
    clock_.Advance(kMinute);
  }
  ASSERT_EQ(Usage("team-a"), 12);  // 4 borrowed from team-c's idle quota
  Submit("b-0", "team-b", 4, 100, GangMember("train", 2));
  Submit("b-1", "team-b", 4, 100, GangMember("train", 2));
  EXPECT_EQ(Refusal("uid-b-0"),
            "team-b: ns-team-b/train: no room for all 2 pods of its gang on ml.p5.48xlarge "
            "nodes at once (room for 1)");
  PreemptionController::RunReport report = controller_->RunOnce();
  EXPECT_EQ(report.rounds_started, 1u);
  EXPECT_EQ(Evicted(), Strings{"a-2"});  // team-a's most recent borrowed pod
  Gone("uid-a-2");
  (void)controller_->RunOnce();
  EXPECT_TRUE(Schedule("uid-b-0"));
  EXPECT_TRUE(Schedule("uid-b-1"));
  EXPECT_EQ(Usage("team-b"), 8);
}

// A preemptor that would borrow waits while another team's pod waits within its nominal quota on
// the flavor: that team would reclaim what it borrowed, and its victims would have been disrupted
// for nothing. The waiting owner reclaims first — under first come, first served too, where no
// fair-share order holds the borrower back.
TEST_F(ControllerTest, NoRoundForABorrowerWhileAnOwnerWaitsWithinItsNominal) {
  Start(TwoTeams(IdleComputeAllocation::kFirstComeFirstServe));
  FourBorrowedPods();                    // team-a uses 16 of nominal 8
  Submit("b-0", "team-b", 8, 10);        // within team-b's nominal: a whole node
  Submit("a-urgent", "team-a", 4, 100);  // would preempt a-3 and still borrow 8
  ASSERT_FALSE(Schedule("uid-b-0"));
  ASSERT_FALSE(Schedule("uid-a-urgent"));
  PreemptionController::RunReport report = controller_->RunOnce();
  ExpectOwnerGoesFirst(report, "b-0");
  if (HasFatalFailure()) return;
  EXPECT_EQ(Evicted(), (Strings{"a-3", "a-2"}));  // p5-1, whole
  Gone("uid-a-3");
  Gone("uid-a-2");
  (void)controller_->RunOnce();
  EXPECT_TRUE(Schedule("uid-b-0"));
  EXPECT_EQ(Usage("team-b"), 8);
}

// The owner waiting may need its own team's lower-priority pods gone first: it fits within its
// nominal quota once they are, and reclaims the rest.
TEST_F(ControllerTest, NoRoundForABorrowerWhileAnOwnerWaitsWithinItsNominalBesideItsOwnVictims) {
  Start(TwoTeams(IdleComputeAllocation::kFirstComeFirstServe));
  AddNodes(2, 8);
  Submit("b-low", "team-b", 4, 1);
  ASSERT_TRUE(Schedule("uid-b-low"));  // p5-0
  for (int i = 0; i < 3; ++i) {        // a-0 on p5-0, a-1 and a-2 on p5-1
    clock_.Advance(kMinute);
    Submit("a-" + std::to_string(i), "team-a", 4, 10);
    ASSERT_TRUE(Schedule("uid-a-" + std::to_string(i)));
  }
  ASSERT_EQ(Usage("team-a"), 12);
  Submit("a-urgent", "team-a", 4, 100);  // would preempt a-2 and still borrow 4
  clock_.Advance(1'000);
  Submit("b-high", "team-b", 8, 100);  // team-b's nominal, once b-low is gone
  ASSERT_FALSE(Schedule("uid-a-urgent"));
  ASSERT_FALSE(Schedule("uid-b-high"));
  PreemptionController::RunReport report = controller_->RunOnce();
  ExpectOwnerGoesFirst(report, "b-high");
  if (HasFatalFailure()) return;
  Strings evicted = Evicted();
  std::sort(evicted.begin(), evicted.end());
  EXPECT_EQ(evicted, (Strings{"a-0", "b-low"}));  // p5-0, whole
}

// An owner's pod that could never run on the flavor — no node accepts it — holds no borrower
// back: it would hold them for as long as it waits, which may be forever.
TEST_F(ControllerTest, AnOwnerPodNoNodeAcceptsHoldsNoBorrowerBack) {
  Start(TwoTeams(IdleComputeAllocation::kFirstComeFirstServe));
  FourBorrowedPods();
  Submit("b-0", "team-b", 8, 10, PodBuilder("").NodeSelector("zone", "nowhere"));
  ASSERT_FALSE(Schedule("uid-b-0"));
  (void)controller_->RunOnce();  // b-0: no node accepts it
  Submit("a-urgent", "team-a", 4, 100);
  ASSERT_FALSE(Schedule("uid-a-urgent"));
  PreemptionController::RunReport report = controller_->RunOnce();
  EXPECT_EQ(report.no_preemption.count("ns-team-a/a-urgent"), 0u);
  ASSERT_EQ(Events("Preempting").size(), 1u);
  EXPECT_EQ(Events("Preempting")[0].pod_name, "a-urgent");
  EXPECT_EQ(Evicted(), Strings{"a-3"});
}

TEST_F(ControllerTest, AMemberWaitingForItsPodGroupGetsNoRoundUntilItArrives) {
  Start(TwoTeams());
  FourBorrowedPods();
  clock_.Advance(10 * kMinute);
  informer_->OnSynced(ObjectKind::kPodGroup);
  const PodBuilder member = PodBuilder("").Annotation("scheduling.k8s.io/group-name", "train");
  Submit("b-0", "team-b", 4, 100, member);
  Submit("b-1", "team-b", 4, 100, member);
  // Its filter refuses it until the PodGroup is seen: freeing 4 GPUs for b-0 alone is useless.
  EXPECT_EQ(controller_->RunOnce().preemptors, 0u);
  EXPECT_TRUE(Evicted().empty());
  informer_->OnPodGroupUpsert("ns-team-b", "train", "", 2);
  PreemptionController::RunReport report = controller_->RunOnce();
  EXPECT_EQ(report.preemptors, 1u);  // the gang, for both members
  EXPECT_EQ(Evicted(), (Strings{"a-3", "a-2"}));
}

// The token bucket runs on steady time: the wall clock stepping back (an NTP correction) neither
// drains it nor holds evictions back.
TEST_F(ControllerTest, TheWallClockSteppingBackDoesNotHoldEvictionsBack) {
  PreemptionController::Options options;
  options.evictions_per_second = 1;
  options.eviction_burst = 1;
  Start(TwoTeams(), options);
  FourBorrowedPods();
  clock_.Advance(10 * kMinute);
  Submit("b-0", "team-b", 4, 100);
  Submit("b-1", "team-b", 4, 100);
  EXPECT_EQ(controller_->RunOnce().rounds_started, 1u);
  // An hour back on the wall clock, a second and a half on the steady one: one token is there.
  clock_.Set(clock_.NowMs() - 60 * kMinute);
  clock_.Advance(1500);
  EXPECT_EQ(controller_->RunOnce().rounds_started, 1u);
  EXPECT_EQ(Evicted(), (Strings{"a-3", "a-2"}));
}

// kube-scheduler's own resource filters refuse a pod while the nodes are full, before the
// extender is asked: the preemptor learns of its round from an event on itself, one per round,
// and no sooner than the token bucket lets the round start.
TEST_F(ControllerTest, EachRoundRecordsOneEventOnItsPreemptor) {
  PreemptionController::Options options;
  options.evictions_per_second = 1;
  options.eviction_burst = 1;
  Start(TwoTeams(), options);
  FourBorrowedPods();
  clock_.Advance(10 * kMinute);
  Submit("b-0", "team-b", 4, 100);
  Submit("b-1", "team-b", 4, 100);

  // One token: b-0's round starts; b-1's waits for the bucket, and so does its event.
  PreemptionController::RunReport report = controller_->RunOnce();
  EXPECT_EQ(report.rounds_started, 1u);
  EXPECT_EQ(Evicted(), Strings{"a-3"});
  const std::string note =
      "taskgov is reclaiming 4 nvidia.com/gpu on ml.p5.48xlarge from team-a (Reclaim): evicting "
      "1 pod with a 120s grace period";
  std::vector<EventRecord> told = Events("Preempting");
  ASSERT_EQ(told.size(), 1u);
  EXPECT_EQ(told[0].ns, "ns-team-b");
  EXPECT_EQ(told[0].pod_name, "b-0");
  EXPECT_EQ(told[0].pod_uid, "uid-b-0");
  EXPECT_EQ(told[0].type, "Normal");
  EXPECT_EQ(told[0].action, "Preempting");
  EXPECT_EQ(told[0].note, note);

  // Half a token later: b-1 still waits; b-0's round in flight records nothing more.
  clock_.Advance(500);
  EXPECT_EQ(controller_->RunOnce().rounds_started, 0u);
  EXPECT_EQ(Events("Preempting").size(), 1u);
  EXPECT_EQ(controller_->Stats().rounds_deferred_by_rate_limit, 2u);

  clock_.Advance(1000);
  EXPECT_EQ(controller_->RunOnce().rounds_started, 1u);
  EXPECT_EQ(Evicted(), (Strings{"a-3", "a-2"}));
  for (int i = 0; i < 3; ++i) {
    clock_.Advance(10'000);
    controller_->RunOnce();
  }
  told = Events("Preempting");
  ASSERT_EQ(told.size(), 2u);
  EXPECT_EQ(told[1].pod_name, "b-1");
  EXPECT_EQ(told[1].pod_uid, "uid-b-1");
  EXPECT_EQ(told[1].note, note);
  const std::vector<EventRecord> victims = Events("Preempted");
  ASSERT_EQ(victims.size(), 2u);
  EXPECT_EQ(victims[0].pod_name, "a-3");
  EXPECT_EQ(victims[1].pod_name, "a-2");
  EXPECT_EQ(kube_.events().size(), 4u);  // nothing else
}

// Every source of a gang keeps its members together: the Kueue pod group, the PodGroup of
// scheduler-plugins and Volcano (label or annotation), the JobSet (label or owner) and training
// job owners.
struct GangCase {
  std::string name;
  PodBuilder member;
};

class GangControllerTest : public ControllerTest, public ::testing::WithParamInterface<GangCase> {};

TEST_P(GangControllerTest, TheWholeGangIsEvicted) {
  Start(TwoTeams());
  ASSERT_NO_FATAL_FAILURE(GangStartedLastOnP51(GetParam().member));
  Submit("b-0", "team-b", 4, 100);
  controller_->RunOnce();
  EXPECT_EQ(Evicted(), (Strings{"job-0", "job-1"}));
  ASSERT_EQ(Events("Preempting").size(), 1u);
  EXPECT_EQ(Events("Preempting")[0].pod_name, "b-0");
  EXPECT_EQ(Events("Preempting")[0].note,
            "taskgov is reclaiming 8 nvidia.com/gpu on ml.p5.48xlarge from team-a (Reclaim): "
            "evicting 2 pods with a 120s grace period");
}

INSTANTIATE_TEST_SUITE_P(
    Sources, GangControllerTest,
    ::testing::Values(
        GangCase{"KueuePodGroupLabel", PodBuilder("").Label("kueue.x-k8s.io/pod-group-name", "g")},
        GangCase{"KueuePodGroupAnnotation",
                 PodBuilder("").Annotation("kueue.x-k8s.io/pod-group-name", "g")},
        GangCase{"PodGroupLabel", PodBuilder("").Label("scheduling.k8s.io/group-name", "pg")},
        GangCase{"PodGroupAnnotation",
                 PodBuilder("").Annotation("scheduling.k8s.io/group-name", "pg")},
        GangCase{"VolcanoLabel", PodBuilder("").Label("scheduling.volcano.sh/group-name", "pg")},
        GangCase{"VolcanoAnnotation",
                 PodBuilder("").Annotation("scheduling.volcano.sh/group-name", "pg")},
        GangCase{"JobSetLabel", PodBuilder("").Label("jobset.sigs.k8s.io/jobset-name", "js")},
        GangCase{"JobSetOwner", PodBuilder("").Owner("JobSet", "js", "uid-js")},
        GangCase{"PyTorchJobOwner", PodBuilder("").Owner("PyTorchJob", "train", "uid-train")}),
    [](const ::testing::TestParamInfo<GangCase>& info) { return info.param.name; });

// A gang spread over two nodes goes whole though b-0 needs the room of only one of them, and
// everything it frees counts as freed: b-1, arriving while the gang terminates, fits in the
// member's room on the other node without a second round.
TEST_F(ControllerTest, AGangAcrossTwoNodesIsEvictedWholeAndCountedAsFreed) {
  Start(TwoTeams());
  AddNodes(2, 8);
  const auto pinned = [](const std::string& node) { return PodBuilder("").PinnedTo({node}); };
  Submit("a-solo-0", "team-a", 4, 10, pinned("p5-0"));
  ASSERT_TRUE(Schedule("uid-a-solo-0"));
  Submit("a-solo-1", "team-a", 4, 10, pinned("p5-1"));
  ASSERT_TRUE(Schedule("uid-a-solo-1"));
  clock_.Advance(kMinute);
  for (int i = 0; i < 2; ++i) {
    const std::string name = "job-" + std::to_string(i);
    Submit(name, "team-a", 4, 10,
           pinned("p5-" + std::to_string(i)).Label("kueue.x-k8s.io/pod-group-name", "train"));
    ASSERT_TRUE(Schedule("uid-" + name));
    ASSERT_EQ(pods_["uid-" + name].node_name, "p5-" + std::to_string(i));
  }
  EXPECT_EQ(Usage("team-a"), 16);

  Submit("b-0", "team-b", 4, 100);
  PreemptionController::RunReport report = controller_->RunOnce();
  EXPECT_EQ(report.rounds_started, 1u);
  EXPECT_EQ(Evicted(), (Strings{"job-0", "job-1"}));
  EXPECT_EQ(controller_->StatusFor("uid-b-0"),
            "reclaiming 8 nvidia.com/gpu from team-a, 2 pods terminating");
  Terminating("uid-job-0");
  Terminating("uid-job-1");

  clock_.Advance(10'000);
  Submit("b-1", "team-b", 4, 100);
  for (int i = 0; i < 3; ++i) {
    report = controller_->RunOnce();
    EXPECT_EQ(report.rounds_started, 0u);
    EXPECT_EQ(report.evictions, 0u);
    clock_.Advance(10'000);
  }
  EXPECT_EQ(Evicted(), (Strings{"job-0", "job-1"}));
  EXPECT_EQ(controller_->StatusFor("uid-b-1"), "");

  Gone("uid-job-0");
  EXPECT_FALSE(book_->Find("uid-b-0").has_value());  // half the gang is not the round's end
  Gone("uid-job-1");
  EXPECT_TRUE(book_->Find("uid-b-0").has_value());
  ASSERT_TRUE(Schedule("uid-b-0"));
  ASSERT_TRUE(Schedule("uid-b-1"));
  EXPECT_NE(pods_.at("uid-b-0").node_name, pods_.at("uid-b-1").node_name);
  EXPECT_EQ(Usage("team-a"), 8);
  EXPECT_EQ(Usage("team-b"), 8);
  controller_->RunOnce();
  EXPECT_EQ(Evicted(), (Strings{"job-0", "job-1"}));
  EXPECT_EQ(controller_->Stats().rounds_started, 1u);
  EXPECT_EQ(controller_->Stats().rounds_succeeded, 1u);
}

// Issue 35: the pods of a pausable job (a batch/v1 Job) are not evicted: the Job is suspended
// once, with who, why and when in its annotations, and its controller deletes its pods without
// counting a failure. The round goes on as for evictions.
class PauseControllerTest : public ControllerTest {
 protected:
  // Team-a's Job "train" of two 4-GPU pods on two nodes, past the minimum runtime, and team-b
  // asking for its 8 nominal GPUs back.
  static PodBuilder Pinned(const std::string& node) { return PodBuilder("").PinnedTo({node}); }
  // Team-a's two 4-GPU pods of its own, one on each node.
  void TeamASolosRunning() {
    Start(TwoTeams());
    AddNodes(2, 8);
    Submit("a-solo-0", "team-a", 4, 10, Pinned("p5-0"));
    ASSERT_TRUE(Schedule("uid-a-solo-0"));
    Submit("a-solo-1", "team-a", 4, 10, Pinned("p5-1"));
    ASSERT_TRUE(Schedule("uid-a-solo-1"));
  }
  // A pausable job of team-a named `name` (uid uid-<name>) of `pods` pods of `gpus` GPUs, as
  // the informers report it (with its gang's size).
  std::shared_ptr<model::JobControl> JobOfTeamA(const std::string& kind, const std::string& name,
                                                int64_t pods, int gpus) {
    auto job = std::make_shared<model::JobControl>();
    job->kind = kind;
    job->ns = "ns-team-a";
    job->name = name;
    job->uid = "uid-" + name;
    job->workload = model::OwnerGangKey(job->uid);
    job->pod_sets.push_back({pods, PodBuilder("").Gpus(gpus).Build()});
    informer_->OnGangSizeUpsert(job->workload, pods);
    informer_->OnJobUpsert(job);
    return job;
  }

  void JobRunningThenReclaimed(bool ignores_disruption) {
    ASSERT_NO_FATAL_FAILURE(TeamASolosRunning());
    auto job = std::make_shared<model::JobControl>(*JobOfTeamA("Job", "job-train", 2, 4));
    job->name = "train";
    job->path = "/apis/batch/v1/namespaces/ns-team-a/jobs/train";
    job->ignores_disruption = ignores_disruption;
    informer_->OnJobUpsert(job);
    clock_.Advance(kMinute);
    for (int i = 0; i < 2; ++i) {
      const std::string name = "train-" + std::to_string(i);
      Submit(name, "team-a", 4, 10,
             Pinned("p5-" + std::to_string(i)).Owner("Job", "train", "uid-job-train"));
      ASSERT_TRUE(Schedule("uid-" + name));
    }
    ASSERT_EQ(Usage("team-a"), 16);
    clock_.Advance(10 * kMinute);
    Submit("b-0", "team-b", 4, 100);
    Submit("b-1", "team-b", 4, 100);
  }
};

TEST_F(PauseControllerTest, AJobsPodsAreNotEvictedItIsSuspendedOnce) {
  JobRunningThenReclaimed(/*ignores_disruption=*/false);
  PreemptionController::RunReport report = controller_->RunOnce();
  EXPECT_GE(report.rounds_started, 1u);
  EXPECT_EQ(Evicted(), Strings{}) << "the Job's pods go through its suspension, never evicted";
  const std::vector<FakeKubeActions::SuspendCall> suspends = kube_.suspends();
  ASSERT_EQ(suspends.size(), 1u) << "one patch for the Job, whatever its pods in the rounds";
  EXPECT_TRUE(suspends[0].suspend);
  EXPECT_EQ(suspends[0].workload, model::OwnerGangKey("uid-job-train"));
  EXPECT_EQ(suspends[0].annotations.at(model::kSuspendedByAnnotation), "taskgov");
  EXPECT_EQ(suspends[0].annotations.at(model::kSuspendReasonAnnotation), "Reclaim");
  EXPECT_EQ(suspends[0].annotations.at(model::kSuspensionsAnnotation), "1");
  EXPECT_EQ(suspends[0].annotations.at(model::kSuspendedPriorityAnnotation), "10");
  EXPECT_EQ(suspends[0].annotations.at(model::kSuspendedAtAnnotation).size(), 20u);  // RFC 3339
  // Each pod still gets its Preempted event, saying that its Job is paused, not failed.
  const std::vector<EventRecord> preempted = Events("Preempted");
  ASSERT_EQ(preempted.size(), 2u);
  for (const EventRecord& e : preempted) {
    EXPECT_NE(e.note.find("its Job ns-team-a/train is suspended, not failed: taskgov resumes it"),
              std::string::npos)
        << e.note;
  }
  EXPECT_EQ(controller_->StatusFor("uid-b-0"),
            "reclaiming 8 nvidia.com/gpu from team-a, 2 pods terminating");
  const PreemptionStats::Key key{"team-b", "team-a", PreemptionReason::kReclaim};
  EXPECT_EQ(controller_->Stats().preemptions.at(key), 2u);
  EXPECT_EQ(controller_->Stats().paused_pods.at(key), 2u);
  EXPECT_EQ(controller_->Stats().jobs_paused.at(key), 1u);
  // The Job controller deletes the pods; the capacity goes to team-b as after evictions.
  Gone("uid-train-0");
  Gone("uid-train-1");
  EXPECT_TRUE(Schedule("uid-b-0"));
  EXPECT_TRUE(Schedule("uid-b-1"));
  EXPECT_EQ(kube_.suspends().size(), 1u);
}

// A Job whose podFailurePolicy ignores DisruptionTarget: its pods are evicted (the policy's
// grace period, not only their terminationGracePeriodSeconds) and then the Job is suspended, so
// that it does not replace them.
TEST_F(PauseControllerTest, AJobIgnoringDisruptionsHasItsPodsEvictedWithTheGraceThenSuspended) {
  JobRunningThenReclaimed(/*ignores_disruption=*/true);
  controller_->RunOnce();
  EXPECT_EQ(Evicted(), (Strings{"train-0", "train-1"}));
  for (const FakeKubeActions::EvictCall& e : kube_.evictions()) {
    EXPECT_EQ(e.grace_period_seconds, 120);
  }
  ASSERT_EQ(kube_.suspends().size(), 1u);
  EXPECT_TRUE(kube_.suspends()[0].suspend);
}

// A KubeActions that cannot patch jobs: the pods are evicted as before.
TEST_F(PauseControllerTest, WithoutPatchingThePodsAreEvicted) {
  JobRunningThenReclaimed(/*ignores_disruption=*/false);
  kube_.SetSuspendOutcome(SuspendOutcome::kUnsupported);
  controller_->RunOnce();
  EXPECT_EQ(Evicted(), (Strings{"train-0", "train-1"}));
  for (const EventRecord& e : Events("Preempted")) {
    EXPECT_EQ(e.note.find("suspended"), std::string::npos) << e.note;
  }
}

// The informer's view of the Job after a patch of `call` (what the API server would show).
std::shared_ptr<model::JobControl> Patched(const model::JobControl& job,
                                           const FakeKubeActions::SuspendCall& call) {
  auto next = std::make_shared<model::JobControl>(job);
  next->suspended = call.suspend;
  for (const auto& [key, value] : call.annotations) {
    if (value.empty()) {
      next->annotations.erase(key);
    } else {
      next->annotations[key] = value;
    }
  }
  return next;
}

// The paused Job waits while its quota is lent; when team-b's pods end it is resumed — once its
// backoff passed — with taskgov's annotations cleared but the count.
TEST_F(PauseControllerTest, APausedJobIsResumedWhenItsWholeDemandFits) {
  JobRunningThenReclaimed(/*ignores_disruption=*/false);
  controller_->RunOnce();
  ASSERT_EQ(kube_.suspends().size(), 1u);
  std::shared_ptr<const model::JobControl> job =
      cluster_->JobOf(model::OwnerGangKey("uid-job-train"));
  informer_->OnJobUpsert(Patched(*job, kube_.suspends()[0]));
  Gone("uid-train-0");
  Gone("uid-train-1");
  ASSERT_TRUE(Schedule("uid-b-0"));
  ASSERT_TRUE(Schedule("uid-b-1"));

  JobResumer resumer(
      cluster_.get(), &kube_, [this](const model::Pod& pod) { return admission_->Explain(pod); },
      &clock_, {}, [this](const model::Pod& pod) { return admission_->ReserveForGang(pod); });
  clock_.Advance(60'000);
  JobResumer::RunReport report = resumer.RunOnce();
  EXPECT_EQ(report.paused, 1u);
  EXPECT_EQ(report.resumed, "") << "team-b uses its 8: the pool has nothing for 8 more";
  EXPECT_EQ(kube_.suspends().size(), 1u);

  Gone("uid-b-0");
  Gone("uid-b-1");
  report = resumer.RunOnce();
  EXPECT_EQ(report.resumed, "Job ns-team-a/train");
  ASSERT_EQ(kube_.suspends().size(), 2u);
  // Its whole need waits in its gang's hold for its pods: team-b's new pod cannot take it.
  std::optional<GangHold> hold = book_->FindGang(job->workload);
  ASSERT_TRUE(hold.has_value());
  EXPECT_EQ(hold->holders, 0);
  EXPECT_EQ(Usage("team-a"), 16);  // its 8 and the Job's 8, held
  Submit("b-late", "team-b", 4, 100);
  EXPECT_FALSE(Schedule("uid-b-late")) << "the quota is held for the resumed Job's pods";
  Gone("uid-b-late");
  const FakeKubeActions::SuspendCall resume = kube_.suspends()[1];
  EXPECT_FALSE(resume.suspend);
  EXPECT_EQ(resume.annotations.at(model::kSuspendedByAnnotation), "");
  EXPECT_EQ(resume.annotations.count(model::kSuspensionsAnnotation), 0u) << "the count stays";
  informer_->OnJobUpsert(Patched(*cluster_->JobOf(job->workload), resume));
  EXPECT_EQ(resumer.RunOnce().paused, 0u);
  EXPECT_EQ(kube_.suspends().size(), 2u);
  // The Job controller creates its pods: they take their shares of the hold and run.
  for (int i = 2; i < 4; ++i) {
    const std::string name = "train-" + std::to_string(i);
    Submit(name, "team-a", 4, 10, PodBuilder("").Owner("Job", "train", "uid-job-train"));
    EXPECT_TRUE(Schedule("uid-" + name)) << name;
  }
  EXPECT_EQ(Usage("team-a"), 16);  // its 8 and the Job's 8, held
  EXPECT_EQ(book_->FindGang(job->workload)->holders, 2);
}

// Quota is not all: a paused Job of two whole-node pods is not resumed while no two nodes are
// free, though its 16 GPUs of quota are (pods of no team use half of two of the three nodes) —
// resumed, its pods would hold the quota idle until their gang's timeout. A node frees: resumed.
TEST_F(PauseControllerTest, APausedJobIsResumedOnlyWhenEveryPodFindsANode) {
  Start(TwoTeams());
  AddNodes(3, 8);
  std::vector<Pod> system;
  for (int i = 0; i < 2; ++i) {
    const std::string name = "sys-" + std::to_string(i);
    system.push_back(PodBuilder(name)
                         .Namespace("kube-system")
                         .Uid("uid-" + name)
                         .Gpus(4)
                         .OnNode("p5-" + std::to_string(i))
                         .Build());
    informer_->OnPodUpsert(system.back());
  }
  auto job = std::make_shared<model::JobControl>(*JobOfTeamA("Job", "wide", 2, 8));
  job->suspended = true;
  job->annotations[model::kSuspendedByAnnotation] = model::kSuspendedByValue;
  job->annotations[model::kSuspensionsAnnotation] = "1";
  informer_->OnJobUpsert(job);
  JobResumer resumer(
      cluster_.get(), &kube_, [this](const model::Pod& pod) { return admission_->Explain(pod); },
      &clock_, {}, [this](const model::Pod& pod) { return admission_->ReserveForGang(pod); });
  clock_.Advance(kMinute);
  JobResumer::RunReport report = resumer.RunOnce();
  EXPECT_EQ(report.paused, 1u);
  EXPECT_EQ(report.no_room, 1u);
  EXPECT_EQ(report.resumed, "");
  EXPECT_EQ(Usage("team-a"), 0) << "nothing reserved for it";
  EXPECT_EQ(resumer.RunOnce().judged, 0u) << "judged again only once a node changes";

  informer_->OnPodDelete(system[1]);
  report = resumer.RunOnce();
  EXPECT_EQ(report.no_room, 0u);
  EXPECT_EQ(report.resumed, "Job ns-team-a/wide");
  EXPECT_EQ(Usage("team-a"), 16);
}

// A RayJob's pods run in the RayCluster it creates. Reclaimed, the RayJob (not its cluster) is
// suspended, and KubeRay deletes the cluster; resumed, the quota reserved for the RayJob moves
// to the new cluster KubeRay creates, whose pods take it — counted once, never refused for it.
TEST_F(PauseControllerTest, ARayJobIsPausedAndItsNewClusterTakesTheQuotaHeldAtResume) {
  ASSERT_NO_FATAL_FAILURE(TeamASolosRunning());
  const std::shared_ptr<model::JobControl> rayjob = JobOfTeamA("RayJob", "rayjob", 2, 4);
  // KubeRay's cluster for it: a link to the RayJob.
  auto cluster = [&](const std::string& uid) {
    auto link = std::make_shared<model::JobControl>();
    link->kind = "RayCluster";
    link->ns = "ns-team-a";
    link->name = "rj-" + uid;
    link->uid = uid;
    link->workload = model::OwnerGangKey(uid);
    link->controlled_by = rayjob->workload;
    informer_->OnJobUpsert(link);
    informer_->OnGangSizeUpsert(link->workload, 2);
  };
  cluster("uid-rc-1");
  EXPECT_EQ(cluster_->JobOf(model::OwnerGangKey("uid-rc-1")), cluster_->JobOf(rayjob->workload));
  clock_.Advance(kMinute);
  for (int i = 0; i < 2; ++i) {
    const std::string name = "rc-1-worker-" + std::to_string(i);
    Submit(name, "team-a", 4, 10,
           Pinned("p5-" + std::to_string(i)).Owner("RayCluster", "rj-uid-rc-1", "uid-rc-1"));
    ASSERT_TRUE(Schedule("uid-" + name));
  }
  ASSERT_EQ(Usage("team-a"), 16);
  clock_.Advance(10 * kMinute);
  Submit("b-0", "team-b", 4, 100);
  Submit("b-1", "team-b", 4, 100);

  controller_->RunOnce();
  EXPECT_EQ(Evicted(), Strings{});
  ASSERT_EQ(kube_.suspends().size(), 1u);
  EXPECT_EQ(kube_.suspends()[0].workload, rayjob->workload) << "the RayJob, not its cluster";
  EXPECT_TRUE(kube_.suspends()[0].suspend);
  informer_->OnJobUpsert(Patched(*rayjob, kube_.suspends()[0]));
  // KubeRay deletes the cluster and its pods; team-b runs, then ends.
  informer_->OnJobDelete(model::OwnerGangKey("uid-rc-1"));
  informer_->OnGangSizeDelete(model::OwnerGangKey("uid-rc-1"));
  Gone("uid-rc-1-worker-0");
  Gone("uid-rc-1-worker-1");
  ASSERT_TRUE(Schedule("uid-b-0"));
  ASSERT_TRUE(Schedule("uid-b-1"));
  Gone("uid-b-0");
  Gone("uid-b-1");

  JobResumer resumer(
      cluster_.get(), &kube_, [this](const model::Pod& pod) { return admission_->Explain(pod); },
      &clock_, {}, [this](const model::Pod& pod) { return admission_->ReserveForGang(pod); });
  clock_.Advance(kMinute);
  EXPECT_EQ(resumer.RunOnce().resumed, "RayJob ns-team-a/rayjob");
  ASSERT_TRUE(book_->FindGang(rayjob->workload).has_value());
  EXPECT_EQ(Usage("team-a"), 16);
  // KubeRay creates a new cluster: the hold is its pods' now.
  cluster("uid-rc-2");
  EXPECT_FALSE(book_->FindGang(rayjob->workload).has_value());
  ASSERT_TRUE(book_->FindGang(model::OwnerGangKey("uid-rc-2")).has_value());
  EXPECT_EQ(Usage("team-a"), 16);
  Submit("b-late", "team-b", 4, 100);
  EXPECT_FALSE(Schedule("uid-b-late")) << "the quota is held for the new cluster's pods";
  Gone("uid-b-late");
  for (int i = 0; i < 2; ++i) {
    const std::string name = "rc-2-worker-" + std::to_string(i);
    Submit(name, "team-a", 4, 10, PodBuilder("").Owner("RayCluster", "rj-uid-rc-2", "uid-rc-2"));
    EXPECT_TRUE(Schedule("uid-" + name)) << name;
  }
  EXPECT_EQ(Usage("team-a"), 16);
  EXPECT_EQ(book_->FindGang(model::OwnerGangKey("uid-rc-2"))->holders, 2);
}

// The pod the resumer judges for a paused job belongs to the job's gang, whatever its kind: the
// filter then counts the whole gang's demand.
TEST(JobResumerTest, TheRepresentativePodIsAMemberOfThePausedJobsGang) {
  for (const auto& [kind, key] : std::vector<std::pair<std::string, std::string>>{
           {"Job", model::OwnerGangKey("uid-x")},
           {"PyTorchJob", model::OwnerGangKey("uid-x")},
           {"RayCluster", model::OwnerGangKey("uid-x")},
           {"RayJob", model::OwnerGangKey("uid-x")},
           {"JobSet", "jobset/ns-team-a/x"}}) {
    model::JobControl job;
    job.kind = kind;
    job.ns = "ns-team-a";
    job.name = "x";
    job.uid = "uid-x";
    job.run_policy = kind == "PyTorchJob";
    job.pod_sets.push_back({4, PodBuilder("").Gpus(2).Build()});
    const Pod pod = JobResumer::Representative(job);
    EXPECT_EQ(model::GangOf(pod), key) << kind;
    EXPECT_EQ(pod.namespace_, "ns-team-a") << kind;
  }
}

// Suspended N times: not resumed before base·2^(N-1) after the last suspension.
TEST_F(PauseControllerTest, AJobSuspendedAgainWaitsLongerBeforeItIsResumed) {
  JobResumer resumer(nullptr, nullptr, nullptr, &clock_, {});
  EXPECT_EQ(resumer.ResumableAt(1'000, 1), 6'000);
  EXPECT_EQ(resumer.ResumableAt(1'000, 2), 11'000);
  EXPECT_EQ(resumer.ResumableAt(1'000, 4), 41'000);
  EXPECT_EQ(resumer.ResumableAt(1'000, 40), 601'000);  // at most max_backoff_ms
}

// A Job suspended by a user (no taskgov annotation) is never resumed; one taskgov paused that
// someone else resumed loses taskgov's annotation, so a later suspension by a user is theirs.
TEST_F(PauseControllerTest, AJobSuspendedOrResumedBySomeoneElseIsNotTaskgovs) {
  Start(TwoTeams());
  AddNodes(2, 8);
  auto user = std::make_shared<model::JobControl>();
  user->kind = "Job";
  user->ns = "ns-team-a";
  user->name = "mine";
  user->uid = "uid-job-mine";
  user->workload = model::OwnerGangKey(user->uid);
  user->suspended = true;
  user->pod_sets.push_back({1, PodBuilder("").Gpus(1).Build()});
  informer_->OnJobUpsert(user);
  auto resumed = std::make_shared<model::JobControl>(*user);
  resumed->name = "theirs";
  resumed->uid = "uid-job-theirs";
  resumed->workload = model::OwnerGangKey(resumed->uid);
  resumed->suspended = false;
  resumed->annotations[model::kSuspendedByAnnotation] = "taskgov";
  informer_->OnJobUpsert(resumed);

  JobResumer resumer(cluster_.get(), &kube_,
                     [this](const model::Pod& pod) { return admission_->Explain(pod); }, &clock_,
                     {});
  clock_.Advance(kMinute);
  EXPECT_EQ(resumer.RunOnce().resumed, "");
  ASSERT_EQ(kube_.suspends().size(), 1u) << "only the annotation of the one resumed by others";
  EXPECT_EQ(kube_.suspends()[0].workload, resumed->workload);
  EXPECT_FALSE(kube_.suspends()[0].suspend);
  EXPECT_EQ(kube_.suspends()[0].annotations.at(model::kSuspendedByAnnotation), "");
}

// Issue 35, in motion: random arrivals and completions of team-b's 4-GPU pods (priority 100)
// against team-a's Job of two 4-GPU pods that runs on b's lent quota. The Job controller and the
// kubelet are played here: a suspension deletes the Job's pods, a resumption creates new ones,
// kube-scheduler tries every pending pod each step. After every step: no team above what it may
// use (DESIGN §3.3: nominal 8 + everything b lends), nothing evicted (the Job is only ever
// paused), and the Job's suspensions k and k+1 at least the backoff 5 s·2^(k-1) apart — no
// pause/resume ping-pong, whatever the seed.
TEST_F(PauseControllerTest, RandomReclaimsNeverPauseAJobFasterThanItsBackoff) {
  for (const uint32_t seed : {1u, 2u, 3u, 4u, 5u}) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    pods_.clear();
    nodes_.clear();
    const size_t evicted_before = kube_.evictions().size();
    size_t calls_seen = kube_.suspends().size();
    JobRunningThenReclaimed(/*ignores_disruption=*/false);  // b-0 and b-1 are waiting
    Gone("uid-a-solo-1");  // team-a: 4 of its own and the Job's 8, so it borrows 4
    JobResumer resumer(
        cluster_.get(), &kube_, [this](const model::Pod& pod) { return admission_->Explain(pod); },
        &clock_, {}, [this](const model::Pod& pod) { return admission_->ReserveForGang(pod); });
    std::mt19937 rng(seed);
    std::vector<int64_t> suspended_at;  // the Job's suspensions, in order
    bool busy = true;
    int64_t phase_end_ms = clock_.NowMs() + 10'000;
    int next_pod = 0, next_job_pod = 2;
    for (int step = 0; step < 400; ++step) {
      clock_.Advance(1'000 + static_cast<int64_t>(rng() % 2'000));
      controller_->RunOnce();
      resumer.RunOnce();
      // The Job controller: each patch is applied; a suspension deletes the pods, a resumption
      // creates them again (new names, as the Job controller names them).
      const std::vector<FakeKubeActions::SuspendCall> calls = kube_.suspends();
      for (; calls_seen < calls.size(); ++calls_seen) {
        const FakeKubeActions::SuspendCall& call = calls[calls_seen];
        std::shared_ptr<const model::JobControl> job = cluster_->JobOf(call.workload);
        ASSERT_NE(job, nullptr);
        informer_->OnJobUpsert(Patched(*job, call));
        std::vector<std::string> mine;
        for (const auto& [uid, pod] : pods_) {
          if (!pod.owner_references.empty()) mine.push_back(uid);
        }
        if (call.suspend) {
          suspended_at.push_back(clock_.NowMs());
          for (const std::string& uid : mine) Gone(uid);
        } else {
          for (int i = 0; i < 2; ++i) {
            Submit("train-" + std::to_string(next_job_pod++), "team-a", 4, 10,
                   PodBuilder("").Owner("Job", "train", "uid-job-train"));
          }
        }
      }
      // Team-b alternates at random between busy (it wants its 8 GPUs: two 4-GPU pods) and
      // idle (its pods end), each for 1 to 30 s.
      if (clock_.NowMs() >= phase_end_ms) {
        busy = !busy;
        phase_end_ms = clock_.NowMs() + 1'000 + static_cast<int64_t>(rng() % 29'000);
      }
      std::vector<std::string> b_pods;
      for (const auto& [uid, pod] : pods_) {
        if (pod.namespace_ == "ns-team-b") b_pods.push_back(uid);
      }
      if (!busy) {
        for (const std::string& uid : b_pods) Gone(uid);
      } else {
        for (size_t i = b_pods.size(); i < 2; ++i) {
          Submit("b-r" + std::to_string(next_pod++), "team-b", 4, 100);
        }
      }
      // kube-scheduler: every pending pod gets a try.
      std::vector<std::string> pending;
      for (const auto& [uid, pod] : pods_) {
        if (!pod.bound()) pending.push_back(uid);
      }
      for (const std::string& uid : pending) (void)Schedule(uid);

      ASSERT_LE(Usage("team-a"), 16);
      ASSERT_LE(Usage("team-b"), 16);
      ASSERT_LE(Usage("team-a") + Usage("team-b"), 16);
      ASSERT_EQ(kube_.evictions().size(), evicted_before) << "the Job is paused, never evicted";
      for (size_t k = 1; k < suspended_at.size(); ++k) {
        ASSERT_GE(suspended_at[k] - suspended_at[k - 1], 5'000LL << (k - 1))
            << "suspension " << k + 1 << " came before the backoff of suspension " << k;
      }
    }
    EXPECT_GE(suspended_at.size(), 2u) << "the run paused and resumed the Job more than once";
  }
}

// A pending pod the informer never delivered (kube-scheduler asked about it; the filter refused
// it and noted it pending) is a preemptor like any other, and its round lives on while the
// filter keeps seeing it.
TEST_F(ControllerTest, APreemptorKnownOnlyFromTheFilterGetsARound) {
  Start(TwoTeams());
  FourBorrowedPods();
  clock_.Advance(10 * kMinute);
  Create("b-0", "team-b", 4, 100);
  ASSERT_FALSE(cluster_->FindPod("uid-b-0").has_value());
  EXPECT_EQ(Refusal("uid-b-0"), "team-b: no ml.p5.48xlarge node has room for nvidia.com/gpu: 4");

  PreemptionController::RunReport report = controller_->RunOnce();
  EXPECT_EQ(report.preemptors, 1u);
  EXPECT_EQ(report.rounds_started, 1u);
  EXPECT_EQ(Evicted(), Strings{"a-3"});
  ASSERT_EQ(Events("Preempting").size(), 1u);
  EXPECT_EQ(Events("Preempting")[0].ns, "ns-team-b");
  EXPECT_EQ(Events("Preempting")[0].pod_name, "b-0");
  EXPECT_EQ(Events("Preempting")[0].pod_uid, "uid-b-0");
  EXPECT_EQ(Events("Preempting")[0].note,
            "taskgov is reclaiming 4 nvidia.com/gpu on ml.p5.48xlarge from team-a (Reclaim): "
            "evicting 1 pod with a 120s grace period");

  // The scheduler keeps retrying it while a-3 terminates: the round stays, nothing more goes.
  Terminating("uid-a-3");
  for (int i = 0; i < 3; ++i) {
    clock_.Advance(20'000);
    EXPECT_EQ(Refusal("uid-b-0"),
              "team-b: no ml.p5.48xlarge node has room for nvidia.com/gpu: 4; reclaiming 4 "
              "nvidia.com/gpu from team-a, 1 pod terminating");
    report = controller_->RunOnce();
    EXPECT_EQ(report.rounds_started, 0u);
  }
  EXPECT_EQ(Evicted(), Strings{"a-3"});
  EXPECT_EQ(controller_->Stats().rounds_in_flight, 1u);
  EXPECT_EQ(controller_->Stats().rounds_cancelled, 0u);

  // a-3 is gone: the capacity is reserved for b-0, which then runs (the informer has delivered
  // it by then: the bind verb binds only pods it has seen, issue 36 item 9).
  Gone("uid-a-3");
  EXPECT_TRUE(book_->Find("uid-b-0").has_value());
  informer_->OnPodUpsert(pods_.at("uid-b-0"));
  ASSERT_TRUE(Schedule("uid-b-0"));
  controller_->RunOnce();
  EXPECT_EQ(controller_->Stats().rounds_succeeded, 1u);
  EXPECT_EQ(Usage("team-b"), 4);
  EXPECT_EQ(Evicted(), Strings{"a-3"});
}

// Without the filter's calls it is forgotten: its round ends, and nothing more is evicted.
TEST_F(ControllerTest, AFilterOnlyPreemptorNoLongerFilteredEndsItsRound) {
  Start(TwoTeams());
  FourBorrowedPods();
  clock_.Advance(10 * kMinute);
  Create("b-0", "team-b", 4, 100);
  EXPECT_NE(Refusal("uid-b-0"), "");
  EXPECT_EQ(controller_->RunOnce().rounds_started, 1u);
  clock_.Advance(ClusterState::Options{}.filter_seen_ttl_ms + 1);
  controller_->RunOnce();
  EXPECT_EQ(controller_->Stats().rounds_cancelled, 1u);
  EXPECT_EQ(controller_->Stats().rounds_in_flight, 0u);
  EXPECT_EQ(controller_->StatusFor("uid-b-0"), "");
  EXPECT_EQ(Evicted(), Strings{"a-3"});
}

TEST_F(ControllerTest, NoEvictionForAPreemptorNoNodeAccepts) {
  Start(TwoTeams());
  TaintedNodesFilledByTeamA();  // team-a borrows 8

  // b-0 tolerates neither taint: reclaiming team-a's lent GPUs would be for nothing.
  Submit("b-0", "team-b", 8, 100);
  PreemptionController::RunReport report = controller_->RunOnce();
  EXPECT_TRUE(Evicted().empty());
  EXPECT_EQ(report.rounds_started, 0u);
  EXPECT_EQ(report.no_preemption["ns-team-b/b-0"],
            "no ml.p5.48xlarge node accepts ns-team-b/b-0: 2 nodes with an untolerated taint "
            "(nvidia.com/gpu=present:NoSchedule)");
  EXPECT_EQ(controller_->StatusFor("uid-b-0"), "");
  // It keeps being refused (when nothing changes, each time the longest wait has passed), and
  // nothing is ever evicted for it.
  for (int i = 0; i < 3; ++i) {
    clock_.Advance(PreemptionController::Options{}.unchanged_wait_ms);
    report = controller_->RunOnce();
    EXPECT_EQ(report.no_preemption.count("ns-team-b/b-0"), 1u);
  }
  EXPECT_TRUE(Evicted().empty());
  EXPECT_EQ(controller_->Stats().rounds_started, 0u);

  // b-1 tolerates the GPU taint: the victims are team-a's pods on p5-0 — not its most recent
  // ones, which run on p5-1 where b-1 cannot go.
  Submit("b-1", "team-b", 8, 100,
         PodBuilder("").Toleration("nvidia.com/gpu", TolerationOperator::kExists));
  report = controller_->RunOnce();
  EXPECT_TRUE(report.no_preemption.empty());  // b-0 waits out its backoff
  EXPECT_EQ(Evicted(), (Strings{"a-1", "a-0"}));
  EXPECT_EQ(report.rounds_started, 1u);
  for (const FakeKubeActions::EvictCall& e : kube_.evictions()) {
    EXPECT_EQ(pods_.at(e.uid).node_name, "p5-0") << e.name;
  }
  EXPECT_EQ(controller_->StatusFor("uid-b-1"),
            "reclaiming 8 nvidia.com/gpu from team-a, 2 pods terminating");
  Gone("uid-a-1");
  Gone("uid-a-0");
  ASSERT_TRUE(Schedule("uid-b-1"));
  EXPECT_EQ(pods_.at("uid-b-1").node_name, "p5-0");
  EXPECT_EQ(Usage("team-b"), 8);
  // b-0 still goes nowhere, and still takes nothing.
  clock_.Advance(10'000);
  controller_->RunOnce();
  EXPECT_EQ(Evicted(), (Strings{"a-1", "a-0"}));
}

// Issue 19: a pod nothing can be done for is decided for again only once its flavors change (a
// pod counted or gone, a node, the policy) or the longest wait has passed — not every backoff.
TEST_F(ControllerTest, APodNothingCanBeDoneForWaitsUntilItsFlavorChanges) {
  Start(TwoTeams());
  FourBorrowedPods();  // team-a runs 16 on p5, 8 of them borrowed: nothing left anywhere
  // a-4 is a borrower's own pod of the same priority: no victim is allowed for it.
  Submit("a-4", "team-a", 4, 10);
  PreemptionController::RunReport report = controller_->RunOnce();
  EXPECT_EQ(report.preemptors, 1u);
  EXPECT_EQ(report.no_preemption.count("ns-team-a/a-4"), 1u);
  // Past its backoff, nothing changed: not decided for.
  clock_.Advance(10'000);
  EXPECT_EQ(controller_->RunOnce().preemptors, 0u);
  // The longest wait passed: decided for again, still nothing to do.
  clock_.Advance(PreemptionController::Options{}.unchanged_wait_ms);
  report = controller_->RunOnce();
  EXPECT_EQ(report.preemptors, 1u);
  EXPECT_EQ(report.no_preemption.count("ns-team-a/a-4"), 1u);
  clock_.Advance(10'000);
  EXPECT_EQ(controller_->RunOnce().preemptors, 0u);
  // A pod of its flavor ends: decided for at once (it fits now).
  Finish("uid-a-0");
  report = controller_->RunOnce();
  EXPECT_EQ(report.preemptors, 1u);
  EXPECT_EQ(report.no_preemption.count("ns-team-a/a-4"), 0u);
  EXPECT_TRUE(Evicted().empty());
}

// A team whose waiting pods are all set aside is passed by without reading its queue, until its
// queue changes: a pod that joins it is decided for at the next run.
TEST_F(ControllerTest, APodJoiningATeamAtRestIsDecidedForAtOnce) {
  Start(TwoTeams());
  FourBorrowedPods();
  Submit("a-4", "team-a", 4, 10);
  EXPECT_EQ(controller_->RunOnce().preemptors, 1u);
  clock_.Advance(10'000);
  EXPECT_EQ(controller_->RunOnce().preemptors, 0u);  // at rest
  Submit("a-5", "team-a", 4, 10);
  PreemptionController::RunReport report = controller_->RunOnce();
  EXPECT_EQ(report.preemptors, 1u);
  EXPECT_EQ(report.no_preemption.count("ns-team-a/a-5"), 1u);
  clock_.Advance(10'000);
  EXPECT_EQ(controller_->RunOnce().preemptors, 0u);
  // A pod that leaves the queue wakes the team too; the one left is still set aside.
  Gone("uid-a-5");
  EXPECT_EQ(controller_->RunOnce().preemptors, 0u);
}

// OnPodGone tells whether the pod was a victim of a round in flight (the process then runs the
// controller soon): a victim going is, a pod that merely ends or is deleted is not, nor is the
// victim told twice.
TEST_F(ControllerTest, APodGoneIsReportedAsAVictimOnlyWhileItsRoundIsInFlight) {
  Start(TwoTeams());
  FourBorrowedPods();
  std::vector<std::string> victims_gone;
  cluster_->SetPodGoneObserver([this, &victims_gone](std::string_view uid) {
    if (controller_->OnPodGone(uid)) victims_gone.emplace_back(uid);
  });
  Submit("b-0", "team-b", 4, 100);
  ASSERT_EQ(controller_->RunOnce().evictions, 1u);
  ASSERT_EQ(Evicted(), Strings{"a-3"});
  Finish("uid-a-0");  // not a victim
  Gone("uid-a-0");
  EXPECT_TRUE(victims_gone.empty());
  Terminating("uid-a-3");
  Gone("uid-a-3");
  EXPECT_EQ(victims_gone, std::vector<std::string>{"uid-a-3"});
  EXPECT_FALSE(controller_->OnPodGone("uid-a-3"));
}

// With a minimum runtime, protection ends as time passes: the backoff alone applies.
TEST_F(ControllerTest, WithAMinimumRuntimeAPodIsDecidedForAfterItsBackoff) {
  PolicyPtr policy = TwoTeams();
  auto with_runtime = std::make_shared<Policy>(*policy);
  with_runtime->preemption.minimum_runtime_seconds = 1;
  Start(with_runtime);
  FourBorrowedPods();
  Submit("a-4", "team-a", 4, 10);
  EXPECT_EQ(controller_->RunOnce().preemptors, 1u);
  clock_.Advance(10'000);
  EXPECT_EQ(controller_->RunOnce().preemptors, 1u);
}

// A pod nothing could be done for a moment ago is backed off; a pod ranked below it in its team
// that now finds victims does not take them first: the one above is decided for again before it,
// and the round is its (the newer pod would have run ahead of its turn in the queue).
TEST_F(ControllerTest, APodBackedOffIsDecidedForBeforeOneRankedBelowItGetsARound) {
  Start(TeamAAlone(/*minimum_runtime_seconds=*/2));
  AddNodes(1, 8);
  Submit("low-0", "team-a", 4, 10);
  ASSERT_TRUE(Schedule("uid-low-0"));
  Submit("low-1", "team-a", 4, 10);
  ASSERT_TRUE(Schedule("uid-low-1"));
  Submit("first", "team-a", 4, 50);
  ASSERT_FALSE(Schedule("uid-first"));
  // The low pods ran less than the minimum runtime: nothing may be evicted for it yet.
  PreemptionController::RunReport report = controller_->RunOnce();
  ASSERT_EQ(report.no_preemption.count("ns-team-a/first"), 1u);
  clock_.Advance(1'000);
  Submit("second", "team-a", 4, 50);
  ASSERT_FALSE(Schedule("uid-second"));
  clock_.Advance(2'000);  // the low pods may go now; "first" is still backed off
  report = controller_->RunOnce();
  EXPECT_EQ(report.rounds_started, 2u);  // one each, "first" decided for before "second"
  ASSERT_EQ(Events("Preempting").size(), 2u);
  EXPECT_EQ(Events("Preempting")[0].pod_name, "first");
  EXPECT_EQ(Evicted(), (Strings{"low-0", "low-1"}));
}

// With a minimum runtime, a decision that found no victims is repeated, not planned again, while
// it holds: nothing changed on the team's flavors and no pod they protect came of age.
TEST_F(ControllerTest, ANoVictimsDecisionIsReplayedUntilAProtectedPodComesOfAge) {
  Start(TeamAAlone(/*minimum_runtime_seconds=*/20));
  AddNodes(1, 8);
  Submit("low-0", "team-a", 8, 10);
  ASSERT_TRUE(Schedule("uid-low-0"));
  Submit("high", "team-a", 8, 50);
  ASSERT_FALSE(Schedule("uid-high"));
  PreemptionController::RunReport first = controller_->RunOnce();
  ASSERT_EQ(first.no_preemption.count("ns-team-a/high"), 1u);
  EXPECT_EQ(first.replayed, 0u);
  clock_.Advance(6'000);  // past its backoff; low-0 is still young
  PreemptionController::RunReport again = controller_->RunOnce();
  EXPECT_EQ(again.replayed, 1u);
  EXPECT_EQ(again.no_preemption, first.no_preemption);
  EXPECT_EQ(again.rounds_started, 0u);
  // Another pod of the team on the flavor: what it protects changed, so it is planned again.
  Submit("low-1", "team-a", 0, 10);
  ASSERT_TRUE(Schedule("uid-low-1"));
  clock_.Advance(6'000);
  PreemptionController::RunReport changed = controller_->RunOnce();
  EXPECT_EQ(changed.replayed, 0u);
  EXPECT_EQ(changed.rounds_started, 0u);
  // low-0 comes of age at 20 s: the set-aside ends then, not after the unchanged wait (5 min).
  clock_.Advance(9'000);
  PreemptionController::RunReport of_age = controller_->RunOnce();
  EXPECT_EQ(of_age.replayed, 0u);
  EXPECT_EQ(of_age.rounds_started, 1u);
  EXPECT_EQ(Evicted(), Strings{"low-0"});
}

// A pod set aside (nothing could be done for it, nothing changed since) is decided for again when
// it starts to starve (what it is owed changes), not after the unchanged wait (5 min).
TEST_F(ControllerTest, ASetAsidePodIsDecidedForWhenItStartsToStarve) {
  Start(TeamAAlone(/*minimum_runtime_seconds=*/0, /*starvation_bound_seconds=*/30));
  AddNodes(1, 8);
  Submit("running", "team-a", 8, 10);
  ASSERT_TRUE(Schedule("uid-running"));
  Submit("waiting", "team-a", 8, 10);  // the same priority: nothing may be evicted for it
  ASSERT_FALSE(Schedule("uid-waiting"));
  ASSERT_EQ(controller_->RunOnce().no_preemption.count("ns-team-a/waiting"), 1u);
  clock_.Advance(10'000);
  EXPECT_EQ(controller_->RunOnce().preemptors, 0u);  // set aside
  clock_.Advance(21'000);                            // waited 31 s: it starves
  EXPECT_EQ(controller_->RunOnce().preemptors, 1u);
}

// A starving pod that its own team's higher-ranked gang goes before (the gang could preempt it
// once admitted) gets no room kept: it could not use the room, and the gang, which needs that node
// too, could not have it. Kept for it, p5-2 left the gang "room for 1" when b-0 ended: each
// waited for the other.
TEST_F(ControllerTest, NoRoomIsKeptForAStarvingPodItsTeamsHigherRankedGangGoesBefore) {
  Start(ThreeTeams(/*starvation_bound_seconds=*/30));
  AddNodes(3, 8);
  // team-b within its quota, a pod on p5-0 and one on p5-1: only p5-2 is whole.
  Submit("b-0", "team-b", 4, 10, PodBuilder("").PinnedTo({"p5-0"}));
  ASSERT_TRUE(Schedule("uid-b-0"));
  Submit("b-1", "team-b", 4, 10, PodBuilder("").PinnedTo({"p5-1"}));
  ASSERT_TRUE(Schedule("uid-b-1"));
  Submit("a-starving", "team-a", 8, 10);
  clock_.Advance(31'000);
  Submit("a-0", "team-a", 8, 100, GangMember("train", 2));
  Submit("a-1", "team-a", 8, 100, GangMember("train", 2));
  ASSERT_EQ(Refusal("uid-a-starving").rfind("team-a: waiting behind higher-ranked gang of pod", 0),
            0u)
      << Refusal("uid-a-starving");
  PreemptionController::RunReport report = controller_->RunOnce();
  EXPECT_EQ(report.rounds_started, 0u);  // team-b is within its quota
  EXPECT_EQ(controller_->Stats().drains, 0u);
  Finish("uid-b-0");
  Gone("uid-b-0");
  clock_.Advance(1'000);
  (void)controller_->RunOnce();
  EXPECT_TRUE(Schedule("uid-a-0")) << Refusal("uid-a-0");
  EXPECT_TRUE(Schedule("uid-a-1")) << Refusal("uid-a-1");
  EXPECT_TRUE(Evicted().empty());
}

// A starving pod that would borrow has room kept for it; then another team's pod within its own
// nominal quota arrives, which goes first (the owner rule): the starving pod cannot use the room
// while that pod waits, and that pod could not have the room while it was kept. The room goes
// at once, to the pod the guarantee is for.
TEST_F(ControllerTest, NoRoomIsKeptForAStarvingBorrowerWhileAnOwnersPodWithinItsQuotaWaits) {
  Start(ThreeTeams(/*starvation_bound_seconds=*/30));
  AddNodes(3, 8);
  // team-b within its quota on p5-0 (2 GPUs left) and p5-1 (6 left); team-a's 8 on p5-2.
  Submit("b-0", "team-b", 6, 10, PodBuilder("").PinnedTo({"p5-0"}));
  ASSERT_TRUE(Schedule("uid-b-0"));
  Submit("b-1", "team-b", 2, 10, PodBuilder("").PinnedTo({"p5-1"}));
  ASSERT_TRUE(Schedule("uid-b-1"));
  Submit("a-run", "team-a", 8, 10, PodBuilder("").PinnedTo({"p5-2"}));
  ASSERT_TRUE(Schedule("uid-a-run"));
  // team-a's next 8 GPUs would borrow team-c's idle quota; no node has room for them.
  Submit("a-starving", "team-a", 8, 10);
  ASSERT_FALSE(Schedule("uid-a-starving"));
  clock_.Advance(31'000);
  PreemptionController::RunReport report = controller_->RunOnce();
  EXPECT_EQ(report.rounds_started, 0u);  // nothing may be evicted for it
  ASSERT_EQ(controller_->Stats().drains, 1u);
  // team-c's pod, within its nominal quota, fits on p5-1 but for the room kept there.
  Submit("c-0", "team-c", 4, 10);
  EXPECT_NE(Refusal("uid-c-0").find("held for its preemptor"), std::string::npos)
      << Refusal("uid-c-0");
  EXPECT_NE(Refusal("uid-a-starving").find("room is kept for it on p5-1"), std::string::npos)
      << Refusal("uid-a-starving");
  clock_.Advance(1'000);
  (void)controller_->RunOnce();
  EXPECT_EQ(Refusal("uid-a-starving").find("room is kept"), std::string::npos)
      << Refusal("uid-a-starving");
  EXPECT_TRUE(Schedule("uid-c-0")) << Refusal("uid-c-0");
  EXPECT_EQ(pods_.at("uid-c-0").node_name, "p5-1");
  EXPECT_TRUE(Evicted().empty());
}

TEST_F(ControllerTest, APinnedPreemptorReclaimsOnItsNode) {
  Start(TwoTeams());
  FourBorrowedPods();
  // Unpinned, a-3 (on p5-1) would go; pinned to p5-0 by its required affinity, a-1 goes.
  Submit("b-0", "team-b", 4, 100, PodBuilder("").PinnedTo({"p5-0"}));
  controller_->RunOnce();
  EXPECT_EQ(Evicted(), Strings{"a-1"});
  Gone("uid-a-1");
  ASSERT_TRUE(Schedule("uid-b-0"));
  EXPECT_EQ(pods_.at("uid-b-0").node_name, "p5-0");
}

class PdbControllerTest : public ControllerTest {
 protected:
  void Start(PolicyPtr policy) {
    ControllerTest::Start(policy);
    controller_ = std::make_unique<PreemptionController>(book_.get(), cluster_.get(), &kube_pdb_,
                                                         &clock_, PreemptionController::Options{});
    cluster_->SetPodGoneObserver([this](std::string_view uid) { controller_->OnPodGone(uid); });
    informer_ = cluster_.get();
  }
  const FakeKubeActions& fake() const override { return kube_pdb_.fake; }
  PdbKube kube_pdb_;
};

TEST_F(PdbControllerTest, AVictimProtectedByABudgetIsReplacedByAnother) {
  Start(TwoTeams());
  FourBorrowedPods();
  kube_pdb_.protected_uids = {"uid-a-3"};
  Submit("b-0", "team-b", 4, 100);
  PreemptionController::RunReport report = controller_->RunOnce();
  EXPECT_EQ(report.blocked, 1u);
  EXPECT_EQ(report.evictions, 1u);
  EXPECT_EQ(Evicted(), (Strings{"a-3", "a-2"}));  // a-3 refused, a-2 instead, same run
  ASSERT_EQ(Events("Preempted").size(), 1u);
  EXPECT_EQ(Events("Preempted")[0].pod_name, "a-2");
  // The status reaches team-b (its filter's refusal): team-a's pod and budget are not named.
  EXPECT_EQ(controller_->StatusFor("uid-b-0"),
            "reclaiming 4 nvidia.com/gpu from team-a, 1 pod terminating, eviction of a pod of "
            "team-a refused by a PodDisruptionBudget");
  EXPECT_EQ(controller_->Stats().evictions_blocked_by_pdb, 1u);
  Gone("uid-a-2");
  EXPECT_TRUE(Schedule("uid-b-0"));
}

TEST_F(PdbControllerTest, AGangTimeoutEvictionRefusedByABudgetIsRetriedAfterThePdbRetry) {
  Start(TwoTeams());
  TwoOfAFourPodGangRunning();
  kube_pdb_.protected_uids = {"uid-b-1"};
  clock_.Advance(book_->ledger().policy()->gang_timeout_seconds * 1000 + 1);
  (void)book_->ExpireAssumed();
  EXPECT_EQ(controller_->RunOnce().gang_timeout_evictions, 1u);  // b-0; b-1's is refused
  Gone("uid-b-0");
  kube_pdb_.protected_uids.clear();
  clock_.Advance(1'000);
  EXPECT_EQ(controller_->RunOnce().gang_timeout_evictions, 0u);  // not before the retry time
  clock_.Advance(PreemptionController::Options{}.pdb_retry_ms);
  EXPECT_EQ(controller_->RunOnce().gang_timeout_evictions, 1u);
  EXPECT_EQ(Evicted(), (Strings{"b-0", "b-1", "b-1"}));  // b-1 refused once, then evicted
  EXPECT_EQ(Events("GangTimeout").size(), 2u);
  clock_.Advance(PreemptionController::Options{}.pdb_retry_ms);
  EXPECT_EQ(controller_->RunOnce().gang_timeout_evictions, 0u);  // done with it
}

TEST_F(PdbControllerTest, ChoosingAgainAfterARefusalStaysOnNodesThePodAccepts) {
  // team-a borrows 12 (16 of nominal 4): once a-0 and a-1 are chosen, a-2 and a-3 could still
  // free p5-1 — where b-0 cannot go.
  Start(PolicyBuilder()
            .Team("team-a", "c")
            .Quota(kP5, kGpu, 4)
            .Team("team-b", "c")
            .Quota(kP5, kGpu, 12)
            .Build());
  TaintedNodesFilledByTeamA();
  // b-0 may only use p5-0. A budget protects a-1: choosing again, team-a's pods on p5-1 would
  // free quota but no room b-0 can use — so nothing else goes, a-0 included.
  kube_pdb_.protected_uids = {"uid-a-1"};
  Submit("b-0", "team-b", 8, 100,
         PodBuilder("").Toleration("nvidia.com/gpu", TolerationOperator::kExists));
  controller_->RunOnce();
  EXPECT_EQ(Evicted(), Strings{"a-1"});  // the refused attempt
  EXPECT_EQ(controller_->Stats().evictions_blocked_by_pdb, 1u);
  EXPECT_EQ(controller_->Stats().rounds_abandoned, 1u);
  clock_.Advance(10'000);
  controller_->RunOnce();
  EXPECT_EQ(Evicted(), Strings{"a-1"});
}

TEST_F(PdbControllerTest, WhenEveryVictimIsProtectedItRetriesLater) {
  Start(TwoTeams());
  FourBorrowedPods();
  kube_pdb_.protected_uids = {"uid-a-0", "uid-a-1", "uid-a-2", "uid-a-3"};
  Submit("b-0", "team-b", 4, 100);
  PreemptionController::RunReport report = controller_->RunOnce();
  EXPECT_EQ(report.evictions, 0u);
  EXPECT_EQ(report.blocked, 4u);
  EXPECT_EQ(controller_->StatusFor("uid-b-0"), "");  // nothing in flight
  EXPECT_EQ(controller_->Stats().rounds_abandoned, 1u);
  // The budgets allow again; refused pods are left alone for a while, then retried.
  kube_pdb_.protected_uids.clear();
  controller_->RunOnce();
  EXPECT_EQ(Evicted().size(), 4u);
  clock_.Advance(31'000);
  controller_->RunOnce();
  EXPECT_EQ(Evicted().size(), 5u);
  EXPECT_EQ(Evicted().back(), "a-3");
}

TEST_F(ControllerTest, RateLimitDefersRoundsUntilTokensRefill) {
  PreemptionController::Options options;
  options.evictions_per_second = 0.1;  // one every 10 s
  options.eviction_burst = 1;
  Start(TwoTeams(), options);
  AddNodes(2, 8);
  for (int i = 0; i < 4; ++i) {
    Submit("a-" + std::to_string(i), "team-a", 4, 10);
    ASSERT_TRUE(Schedule("uid-a-" + std::to_string(i)));
    clock_.Advance(kMinute);
  }
  Submit("b-0", "team-b", 4, 100);
  Submit("b-1", "team-b", 4, 100);
  controller_->RunOnce();
  EXPECT_EQ(Evicted().size(), 1u);
  EXPECT_EQ(controller_->Stats().rounds_deferred_by_rate_limit, 1u);
  clock_.Advance(5'000);
  controller_->RunOnce();
  EXPECT_EQ(Evicted().size(), 1u);
  clock_.Advance(5'000);
  controller_->RunOnce();
  EXPECT_EQ(Evicted(), (Strings{"a-3", "a-2"}));
}

TEST_F(ControllerTest, AnAbandonedRoundFreesItsPreemptorForANewOne) {
  PreemptionController::Options options;
  options.round_slack_ms = 10'000;
  Start(TwoTeams(), options);
  AddNodes(2, 8);
  for (int i = 0; i < 4; ++i) {
    Submit("a-" + std::to_string(i), "team-a", 4, 10);
    ASSERT_TRUE(Schedule("uid-a-" + std::to_string(i)));
    clock_.Advance(kMinute);
  }
  Submit("b-0", "team-b", 4, 100);
  controller_->RunOnce();
  EXPECT_EQ(Evicted(), Strings{"a-3"});
  // a-3 is terminating but never goes (a stuck finalizer). Within the grace period and the
  // slack the round waits; after it, the round is abandoned — and since a-3 still counts as
  // freed, the new decision for b-0 evicts nothing more.
  clock_.Advance(121'000);
  controller_->RunOnce();
  EXPECT_EQ(controller_->Stats().rounds_abandoned, 0u);
  clock_.Advance(10'000);
  controller_->RunOnce();
  EXPECT_EQ(controller_->Stats().rounds_abandoned, 1u);
  EXPECT_EQ(controller_->StatusFor("uid-b-0"), "");
  controller_->RunOnce();
  EXPECT_EQ(Evicted(), Strings{"a-3"});
}

TEST_F(ControllerTest, FreedCapacityLeftUnusedBacksThePreemptorOff) {
  // FirstComeFirstServe: under FairShare team-a's recreated pod would wait behind b-0, which
  // fits within team-b's nominal (a team that does not borrow goes first).
  Start(TwoTeams(IdleComputeAllocation::kFirstComeFirstServe));
  AddNodes(2, 8);
  for (int i = 0; i < 4; ++i) {
    Submit("a-" + std::to_string(i), "team-a", 4, 10);
    ASSERT_TRUE(Schedule("uid-a-" + std::to_string(i)));
    clock_.Advance(kMinute);
  }
  Submit("b-0", "team-b", 4, 100);
  controller_->RunOnce();
  ASSERT_EQ(Evicted(), Strings{"a-3"});
  Gone("uid-a-3");
  ASSERT_TRUE(book_->Find("uid-b-0").has_value());  // nominated
  // The scheduler never places b-0 (say, a node selector no node matches). The nomination
  // expires, A's recreated pod takes the GPUs back.
  clock_.Advance(61'000);
  EXPECT_EQ(book_->ExpireAssumed(), 1u);
  Submit("a-3-retry", "team-a", 4, 10);
  ASSERT_TRUE(Schedule("uid-a-3-retry"));
  // The round failed: b-0 waits out the backoff before anything else is evicted for it.
  for (int i = 0; i < 5; ++i) {
    controller_->RunOnce();
    clock_.Advance(kMinute);
  }
  EXPECT_EQ(Evicted(), Strings{"a-3"});
  EXPECT_EQ(controller_->Stats().rounds_abandoned, 1u);
  clock_.Advance(kMinute);
  controller_->RunOnce();
  EXPECT_EQ(Evicted(), (Strings{"a-3", "a-3-retry"}));
}

// Convergence: teams compete over many rounds, evicted pods come back under new UIDs; the
// evictions stop after the first reclaim and the allocation settles.
struct ConvergenceCase {
  std::string name;
  PolicyPtr policy;
  std::vector<std::pair<std::string, int>> first;   // team, 4-GPU or 2-GPU pod count at tick 0
  std::vector<std::pair<std::string, int>> second;  // submitted at tick 5
  int gpus_per_pod;
  size_t expected_evictions;
  std::map<std::string, int64_t> expected_usage;
};

void PrintTo(const ConvergenceCase& c, std::ostream* os) { *os << c.name; }

class ConvergenceTest : public ControllerTest,
                        public ::testing::WithParamInterface<ConvergenceCase> {};

TEST_P(ConvergenceTest, EvictionsStopAndTheAllocationSettles) {
  const ConvergenceCase& c = GetParam();
  Start(c.policy);
  AddNodes(2, 8);
  int serial = 0;
  std::map<std::string, std::string> team_of;  // uid → team
  auto submit = [&](const std::string& team) {
    const std::string name = team + "-" + std::to_string(serial++);
    Submit(name, team, c.gpus_per_pod, 10);
    team_of["uid-" + name] = team;
  };
  size_t processed = 0;
  std::vector<std::string> terminating;
  std::vector<size_t> evictions_at;
  for (int tick = 0; tick < 60; ++tick) {
    clock_.Advance(10'000);
    if (tick == 0) {
      for (const auto& [team, n] : c.first) {
        for (int i = 0; i < n; ++i) submit(team);
      }
    }
    if (tick == 5) {
      for (const auto& [team, n] : c.second) {
        for (int i = 0; i < n; ++i) submit(team);
      }
    }
    // The kubelet and the job controllers: terminating pods go and come back as new pods.
    for (const std::string& uid : terminating) {
      const std::string team = team_of[uid];
      Gone(uid);
      submit(team);
    }
    terminating.clear();
    const auto evictions = kube_.evictions();
    for (; processed < evictions.size(); ++processed) {
      Terminating(evictions[processed].uid);
      terminating.push_back(evictions[processed].uid);
    }
    // The scheduler tries every pending pod, best first.
    std::vector<Pod> pending;
    for (const auto& [uid, pod] : pods_) {
      if (!pod.bound() && !pod.deletion_unix_ms) pending.push_back(pod);
    }
    std::sort(pending.begin(), pending.end(), [](const Pod& a, const Pod& b) {
      return a.creation_unix_ms != b.creation_unix_ms ? a.creation_unix_ms < b.creation_unix_ms
                                                      : a.uid < b.uid;
    });
    for (const Pod& pod : pending) Schedule(pod.uid);
    controller_->RunOnce();
    evictions_at.push_back(kube_.evictions().size());
  }
  EXPECT_EQ(kube_.evictions().size(), c.expected_evictions);
  // Nothing was evicted in the second half.
  EXPECT_EQ(evictions_at[30], evictions_at.back());
  for (const auto& [team, usage] : c.expected_usage) EXPECT_EQ(Usage(team), usage) << team;
  EXPECT_EQ(controller_->Stats().rounds_in_flight, 0u);
}

INSTANTIATE_TEST_SUITE_P(
    Teams, ConvergenceTest,
    ::testing::Values(
        ConvergenceCase{"ReclaimFairShare",
                        TwoTeams(IdleComputeAllocation::kFairShare),
                        {{"team-a", 4}},
                        {{"team-b", 4}},
                        4,
                        2,
                        {{"team-a", 8}, {"team-b", 8}}},
        ConvergenceCase{"ReclaimFirstComeFirstServe",
                        TwoTeams(IdleComputeAllocation::kFirstComeFirstServe),
                        {{"team-a", 4}},
                        {{"team-b", 4}},
                        4,
                        2,
                        {{"team-a", 8}, {"team-b", 8}}},
        // Both submit at once: team-a's pods happen to be tried first; none borrows, since each
        // of team-b's waiting pods — the first two and, once they take their share, the next
        // two — fits within team-b's nominal (a team that does not borrow goes first): nothing
        // is admitted only to be reclaimed, nothing is evicted.
        ConvergenceCase{"BothTeamsAtOnce",
                        TwoTeams(IdleComputeAllocation::kFairShare),
                        {{"team-a", 4}, {"team-b", 4}},
                        {},
                        4,
                        0,
                        {{"team-a", 8}, {"team-b", 8}}},
        // Two borrowers of an idle lender's 8 GPUs: fair share balances them, then stops.
        ConvergenceCase{"FairShareBetweenBorrowers",
                        PolicyBuilder()
                            .Team("lender", "c")
                            .Quota(kP5, kGpu, 16)
                            .Team("team-x", "c")
                            .Quota(kP5, kGpu, 0)
                            .Team("team-y", "c")
                            .Quota(kP5, kGpu, 0)
                            .Build(),
                        {{"team-x", 8}},
                        {{"team-y", 8}},
                        2,
                        4,
                        {{"team-x", 8}, {"team-y", 8}}}),
    [](const ::testing::TestParamInfo<ConvergenceCase>& info) { return info.param.name; });

// ---- property: gangs (DESIGN §3.3, §3.7) ----
//
// Random gangs (1 to 4 members of 1 to 4 GPUs, members arriving over a few steps) of three teams
// with random quotas in one cohort arrive, run, finish, are reclaimed and evicted, on three
// 8-GPU nodes, 10 s a step, with a 60 s gang timeout. After every step: every team is within
// nominal + borrowing limit and the cohort within its pool (DESIGN §3.3), the ledger agrees
// with its reservations (no drift), and no gang has run partly — some of its members running,
// not all — for longer than the timeout plus the two steps its eviction takes.
class GangPropertyTest : public ControllerTest, public ::testing::WithParamInterface<int> {
 protected:
  struct Gang {
    std::string name;
    std::string team;
    int size = 0;
    int gpus = 0;
    int arrived = 0;                   // members created so far (generation `generation`)
    int generation = 0;                // bumped when its evicted members are recreated
    std::optional<int64_t> partly_ms;  // since when it runs partly
  };
  static constexpr int64_t kStepMs = 10'000;
  static constexpr int64_t kTimeoutS = 60;

  std::string MemberUid(const Gang& g, int i) const {
    return "uid-" + g.name + "-" + std::to_string(i) + "-g" + std::to_string(g.generation);
  }
  void Arrive(Gang& g) {
    const std::string name =
        g.name + "-" + std::to_string(g.arrived) + "-g" + std::to_string(g.generation);
    Submit(name, g.team, g.gpus, 100, GangMember(g.name, g.size));
    ++g.arrived;
  }
  int Running(const Gang& g) const {
    int n = 0;
    for (int i = 0; i < g.arrived; ++i) {
      auto it = pods_.find(MemberUid(g, i));
      n += it != pods_.end() && it->second.bound() && !it->second.deletion_unix_ms &&
                   !it->second.terminal()
               ? 1
               : 0;
    }
    return n;
  }
  void CheckQuota(const Policy& policy, int step) {
    Ledger::Session s(book_->ledger());
    for (const Team& team : policy.teams) {
      const CellView v = s.View(TeamNames().Intern(team.name), FlavorNames().Intern(kP5),
                                ResourceNames().Intern(kGpu));
      const int64_t ceiling =
          v.borrowing_limit == kUnlimited ? kUnlimited : v.nominal + v.borrowing_limit;
      EXPECT_LE(v.usage, ceiling) << team.name << " at step " << step;
      EXPECT_LE(v.pool_used, v.pool_capacity) << "the cohort at step " << step;
    }
  }
};

TEST_P(GangPropertyTest, NoGangRunsPartlyLongerThanItsTimeoutAndQuotaHolds) {
  std::mt19937 rng(static_cast<uint32_t>(GetParam()));
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  PolicyBuilder builder;
  const std::vector<std::string> teams = {"team-a", "team-b", "team-c"};
  for (const std::string& team : teams) {
    const int64_t borrow[] = {0, 4, kUnlimited};
    builder.Team(team, "c").Quota(kP5, kGpu, 4 * pick(1, 3), borrow[pick(0, 2)]);
  }
  builder.mutable_policy().gang_timeout_seconds = kTimeoutS;
  builder.mutable_policy().preemption.grace_period_seconds = 0;
  const PolicyPtr policy = builder.Build();
  Start(policy);
  AddNodes(3, 8);
  std::vector<Gang> gangs;
  for (int step = 0; step < 150; ++step) {
    if (pick(0, 2) == 0) {
      Gang g;
      g.name = "job-" + std::to_string(gangs.size());
      g.team = teams[pick(0, 2)];
      g.size = pick(1, 4);
      g.gpus = pick(1, 4);
      gangs.push_back(g);
    }
    for (Gang& g : gangs) {
      if (g.arrived < g.size && pick(0, 1) == 0) Arrive(g);  // members trickle in
    }
    // kube-scheduler: every pending pod, in creation order.
    std::vector<std::pair<int64_t, std::string>> pending;
    for (const auto& [uid, pod] : pods_) {
      if (!pod.bound() && !pod.terminal()) pending.emplace_back(pod.creation_unix_ms, uid);
    }
    std::sort(pending.begin(), pending.end());
    for (const auto& [created, uid] : pending) (void)Schedule(uid);
    // The kubelet: evicted pods go (grace period 0); the job controller recreates a gang whose
    // members went. Finished gangs end whole.
    std::set<std::string> evicted;
    for (const FakeKubeActions::EvictCall& e : kube_.evictions()) evicted.insert(e.uid);
    for (Gang& g : gangs) {
      bool lost = false;
      for (int i = 0; i < g.arrived; ++i) {
        const std::string uid = MemberUid(g, i);
        if (evicted.count(uid) > 0 && pods_.count(uid) > 0) {
          Gone(uid);
          lost = true;
        }
      }
      if (lost) {
        for (int i = 0; i < g.arrived; ++i) {
          if (pods_.count(MemberUid(g, i)) > 0) Gone(MemberUid(g, i));
        }
        ++g.generation;
        g.arrived = 0;
      } else if (Running(g) == g.size && pick(0, 9) == 0) {
        for (int i = 0; i < g.arrived; ++i) Finish(MemberUid(g, i));
      }
    }
    clock_.Advance(kStepMs);
    (void)book_->ExpireAssumed();
    (void)controller_->RunOnce();
    // The invariants.
    CheckQuota(*policy, step);
    EXPECT_TRUE(book_->Reconcile().empty()) << "drift at step " << step;
    for (Gang& g : gangs) {
      const int running = Running(g);
      if (running > 0 && running < g.size) {
        if (!g.partly_ms) g.partly_ms = clock_.NowMs();
        EXPECT_LE(clock_.NowMs() - *g.partly_ms, kTimeoutS * 1000 + 2 * kStepMs)
            << g.name << " (" << running << " of " << g.size << " running) at step " << step;
      } else {
        g.partly_ms.reset();
      }
    }
    if (HasFailure()) return;
  }
  // The run did what it is for: gangs ran whole, and some were reclaimed or timed out.
  EXPECT_GT(kube_.binds().size(), 20u);
  EXPECT_GT(kube_.evictions().size() + book_->gangs_expired(), 0u);
  printf("seed %d: %zu gangs, %zu binds, %zu evictions, %llu gang timeouts\n", GetParam(),
         gangs.size(), kube_.binds().size(), kube_.evictions().size(),
         static_cast<unsigned long long>(book_->gangs_expired()));
}

INSTANTIATE_TEST_SUITE_P(Seeds, GangPropertyTest, ::testing::Range(1, 21));

}  // namespace
}  // namespace taskgov::scheduler::actions
