#include "scheduler/decisions/admission.h"

#include "scheduler/decisions/placement.h"

#include <map>
#include <tuple>

#include <gtest/gtest.h>

#include "scheduler/testing/admission_fixture.h"
#include "scheduler/testing/builders.h"
#include "scheduler/testing/fake_kube_actions.h"

namespace taskgov::scheduler::decisions {
namespace {

using ledger::Ledger;
using ledger::PodMeta;
using ledger::QuotaBook;
using ledger::Reservation;
using ledger::ReservationState;
using model::Flavor;
using model::FlavorNames;
using model::IdleComputeAllocation;
using model::Labels;
using model::NameId;
using model::Node;
using model::NoTeamAction;
using model::OwnerGangKey;
using model::Pod;
using model::PodPhase;
using model::PolicyPtr;
using model::QueueingStrategy;
using model::ResourceList;
using model::ResourceNames;
using model::TaintEffect;
using model::TaskPrioritization;
using model::TeamNames;
using model::TolerationOperator;
using model::WorkloadRef;
using state::ClusterState;
using state::NodeView;
using state::PendingPod;
using state::PendingQueues;
using testing::FakeKubeActions;
using testing::LenderAndBorrowers;
using testing::NodeBuilder;
using testing::PodBuilder;
using testing::PolicyBuilder;

constexpr char kP5[] = "ml.p5.48xlarge";
constexpr char kG5[] = "ml.g5.12xlarge";
constexpr char kGpu[] = "nvidia.com/gpu";

class AdmissionTest : public testing::AdmissionFixture {
 protected:
  void Start(PolicyPtr policy) {
    AdmissionFixture::Start(std::move(policy), &kube_);
    admission_->SetObserver([this](const FilterDecision& d) { decisions_.push_back(d); });
  }
  // A filter verdict with names resolved, for readable assertions.
  struct Verdict {
    std::vector<std::string> feasible;
    std::map<std::string, std::string> failed_unresolvable;
    size_t failed = 0;
    std::string error;
  };
  Verdict Filter(const Pod& pod) {
    FilterArgs args;
    args.pod = pod;
    args.node_names = nodes_;
    FilterResult r = admission_->Filter(args);
    cluster_->pending().Flush();  // its note applied, as by the queues' applier soon after
    Verdict v;
    v.feasible = r.FeasibleNames(args);
    for (const FilterResult::Refused& refused : r.unresolvable) {
      v.failed_unresolvable[nodes_[refused.node]] = r.reasons[refused.reason];
    }
    v.failed = r.failed.size();
    v.error = r.error;
    EXPECT_EQ(r.feasible.size() + r.unresolvable.size() + r.failed.size(),
              r.error.empty() ? nodes_.size() : 0u);
    return v;
  }
  bool Admitted(const Pod& pod) { return !Filter(pod).feasible.empty(); }
  // A filter call whose note stays posted: the pending queues learn of it only when their
  // applier runs (stop it first: cluster_->pending().Stop()). The refusal reason, "" if admitted.
  std::string FilterWithoutApplying(const Pod& pod) {
    FilterArgs args;
    args.pod = pod;
    args.node_names = nodes_;
    FilterResult r = admission_->Filter(args);
    if (!r.feasible.empty()) return "";
    return r.unresolvable.empty() ? "refused" : r.reasons[r.unresolvable[0].reason];
  }
  // Filters, then binds to the first feasible node; returns whether it ran.
  bool Run(const Pod& pod) {
    Verdict r = Filter(pod);
    if (r.feasible.empty()) return false;
    cluster_->OnPodUpsert(pod);  // the informer has seen it (taskgov binds only such pods)
    BindResult b = admission_->Bind(BindArgs{pod.name, pod.namespace_, pod.uid, r.feasible[0]});
    if (!b.error.empty()) return false;
    Pod bound = pod;
    bound.node_name = r.feasible[0];
    bound.phase = PodPhase::kRunning;
    cluster_->OnPodUpsert(bound);
    return true;
  }
  int64_t Usage(const std::string& team, const std::string& flavor = kP5) {
    Ledger::Session s(book_->ledger());
    return s
        .View(TeamNames().Intern(team), FlavorNames().Intern(flavor), ResourceNames().Intern(kGpu))
        .usage;
  }
  FakeKubeActions kube_;
  std::vector<FilterDecision> decisions_;
};

TEST_F(AdmissionTest, WithinNominalReturnsTheFlavorsNodesAndExplainsTheRest) {
  Start(TwoTeams());
  AddNodes("p5", kP5, 2, 8);
  AddNodes("g5", kG5, 1, 4);
  Verdict r = Filter(GpuPod("w-0", "team-a", 8));
  EXPECT_EQ(r.feasible, (std::vector<std::string>{"p5-0", "p5-1"}));
  EXPECT_EQ(r.failed_unresolvable.at("g5-0"), "taskgov assigned ns-team-a/w-0 to ml.p5.48xlarge");
  EXPECT_TRUE(r.error.empty());
  EXPECT_EQ(Usage("team-a"), 8);
  ASSERT_EQ(decisions_.size(), 1u);
  EXPECT_TRUE(decisions_[0].admitted);
  EXPECT_FALSE(decisions_[0].borrowing);
}

TEST_F(AdmissionTest, OverQuotaIsUnresolvableWithTheNumbers) {
  Start(PolicyBuilder()
            .Team("team-a", "c")
            .Quota(kP5, kGpu, 16, 0)
            .Team("team-b", "c")
            .Quota(kP5, kGpu, 8)
            .Build());
  AddNodes("p5", kP5, 4, 8);
  ASSERT_TRUE(Run(GpuPod("w-0", "team-a", 8)));
  ASSERT_TRUE(Run(GpuPod("w-1", "team-a", 8)));
  Verdict r = Filter(GpuPod("w-2", "team-a", 8));
  EXPECT_TRUE(r.feasible.empty());
  EXPECT_EQ(r.failed, 0u);
  ASSERT_EQ(r.failed_unresolvable.size(), 4u);
  EXPECT_EQ(r.failed_unresolvable.at("p5-3"),
            "team-a: nvidia.com/gpu on ml.p5.48xlarge: requested 8, in use 16 of nominal 16, "
            "borrowing limit 0");
  EXPECT_EQ(decisions_.back().reason, "borrowing_limit");
}

TEST_F(AdmissionTest, BorrowsIdleQuotaAndSaysSo) {
  Start(TwoTeams());
  AddNodes("p5", kP5, 2, 8);
  for (int i = 0; i < 12; ++i) ASSERT_TRUE(Run(GpuPod("a-" + std::to_string(i), "team-a", 1)));
  EXPECT_EQ(Usage("team-a"), 12);
  EXPECT_TRUE(decisions_.back().borrowing);
  EXPECT_FALSE(decisions_.front().borrowing);
}

TEST_F(AdmissionTest, PrefersAnotherFlavorWithinNominalOverBorrowing) {
  Start(PolicyBuilder()
            .Team("team-a", "c")
            .Quota(kP5, kGpu, 8)
            .Quota(kG5, kGpu, 4)
            .Team("team-b", "c")
            .Quota(kP5, kGpu, 8)
            .Build());
  AddNodes("p5", kP5, 2, 8);
  AddNodes("g5", kG5, 1, 4);
  ASSERT_TRUE(Run(GpuPod("w-0", "team-a", 8)));
  Verdict r = Filter(GpuPod("w-1", "team-a", 4));
  EXPECT_EQ(r.feasible, std::vector<std::string>{"g5-0"});
  Verdict r2 = Filter(GpuPod("w-2", "team-a", 2));           // g5 is taken: borrow on p5
  EXPECT_EQ(r2.feasible, std::vector<std::string>{"p5-1"});  // p5-0 is full
}

TEST_F(AdmissionTest, PodsOfNoTeamPassThroughOrAreRefused) {
  Start(TwoTeams());
  AddNodes("p5", kP5, 1, 8);
  Verdict pass = Filter(PodBuilder("x").Namespace("default").Gpus(8));
  EXPECT_EQ(pass.feasible, std::vector<std::string>{"p5-0"});
  Start(PolicyBuilder()
            .Team("team-a", "c")
            .Quota(kP5, kGpu, 8)
            .NoTeam(NoTeamAction::kRefuse)
            .Build());
  nodes_.clear();
  AddNodes("p5", kP5, 1, 8);
  Verdict refused = Filter(PodBuilder("x").Namespace("default").Gpus(8));
  EXPECT_TRUE(refused.feasible.empty());
  EXPECT_NE(refused.failed_unresolvable.at("p5-0").find("belongs to no team"), std::string::npos);
}

TEST_F(AdmissionTest, TeamFromPodLabelQueueNamespaceListOrNamespaceLabel) {
  PolicyBuilder builder;
  builder.Team("team-a", "c").Quota(kP5, kGpu, 8, 0).Team("team-b", "c").Quota(kP5, kGpu, 8, 0);
  builder.mutable_policy().team_resolution.pod_label = "example.com/team";
  Start(builder.Build());
  AddNodes("p5", kP5, 2, 8);
  // A namespace no team lists joins team-b by its label; a pod label may name that team.
  cluster_->OnNamespaceUpsert("research", {{"taskgov.io/team", "team-b"}});
  cluster_->OnNamespaceUpsert("stray", {{"taskgov.io/team", "no-such-team"}});
  ASSERT_TRUE(Run(PodBuilder("by-ns-label").Namespace("research").Gpus(2).Created(1)));
  EXPECT_EQ(Usage("team-b"), 2);
  ASSERT_TRUE(Run(PodBuilder("by-pod-label")
                      .Namespace("research")
                      .Label("example.com/team", "team-b")
                      .Gpus(3)));
  EXPECT_EQ(Usage("team-b"), 5);
  // The team's own namespace list comes before a namespace label.
  cluster_->OnNamespaceUpsert("ns-team-a", {{"taskgov.io/team", "team-b"}});
  ASSERT_TRUE(Run(GpuPod("listed", "team-a", 1)));
  EXPECT_EQ(Usage("team-a"), 1);
  // An unknown team name, or a namespace whose label went away: no team (passed through).
  Verdict stray = Filter(PodBuilder("stray").Namespace("stray").Gpus(1));
  EXPECT_EQ(stray.feasible.size(), 2u);
  EXPECT_EQ(decisions_.back().reason, "no_team");
  cluster_->OnNamespaceDelete("research");
  Filter(PodBuilder("late").Namespace("research").Gpus(1));
  EXPECT_EQ(decisions_.back().reason, "no_team");
  EXPECT_EQ(Usage("team-b"), 5);  // the running pods keep their team until they end
}

// Issue 36, item 1: a pod's team is the team that owns its namespace. A pod label, a LocalQueue
// (one in its namespace pointing at another team's ClusterQueue: the attack) or a Volcano queue
// naming another team is refused with that reason on every node — never charged to the other
// team — and neither team's usage moves.
TEST_F(AdmissionTest, APodNamingAnotherTeamsQueueIsRefusedNotCharged) {
  PolicyBuilder builder;
  builder.Team("team-a", "c").Quota(kP5, kGpu, 8, 0).Team("team-b", "c").Quota(kP5, kGpu, 8, 0);
  builder.mutable_policy().team_resolution.pod_label = "example.com/team";
  builder.mutable_policy().volcano_queues["q-b"] = "team-b";
  for (auto& team : builder.mutable_policy().teams) team.cluster_queue = team.name + "-cq";
  Start(builder.Build());
  AddNodes("p5", kP5, 2, 8);
  cluster_->OnNamespaceUpsert("ns-team-a", {});
  cluster_->OnLocalQueueUpsert("ns-team-a", "steal", "team-b-cq");
  auto pod = [](const std::string& name) {
    return PodBuilder(name).Namespace("ns-team-a").Gpus(4).Created(1000);
  };
  struct Case {
    std::string name;
    scheduler::model::Pod pod;
    std::string says;
  };
  const std::vector<Case> cases = {
      {"local queue", pod("lq").Label("kueue.x-k8s.io/queue-name", "steal"),
       "names LocalQueue ns-team-a/steal (ClusterQueue team-b-cq) of team team-b"},
      {"pod label", pod("label").Label("example.com/team", "team-b"),
       "names pod label example.com/team=team-b of team team-b"},
      {"volcano queue", pod("volcano").Annotation("scheduling.volcano.sh/queue-name", "q-b"),
       "names Volcano queue q-b of team team-b"},
  };
  for (const Case& c : cases) {
    Verdict v = Filter(c.pod);
    EXPECT_TRUE(v.feasible.empty()) << c.name;
    ASSERT_EQ(v.failed_unresolvable.size(), 2u) << c.name;
    const std::string& why = v.failed_unresolvable.at("p5-0");
    EXPECT_NE(why.find(c.says), std::string::npos) << c.name << ": " << why;
    EXPECT_NE(why.find("namespace ns-team-a belongs to team team-a"), std::string::npos) << why;
    EXPECT_EQ(decisions_.back().reason, "foreign_queue") << c.name;
  }
  EXPECT_EQ(Usage("team-a"), 0);
  EXPECT_EQ(Usage("team-b"), 0);
  // The team's own queue is fine.
  ASSERT_TRUE(Run(pod("own").Label("example.com/team", "team-a")));
  EXPECT_EQ(Usage("team-a"), 4);
}

// A Kueue ClusterQueue's namespaceSelector decides which namespaces no team owns may use its
// LocalQueues, as Kueue's scheduler does ("Workload namespace doesn't match ClusterQueue
// selector"); a ClusterQueue without one selects none.
TEST_F(AdmissionTest, AClusterQueuesNamespaceSelectorIsEnforced) {
  PolicyBuilder builder;
  builder.Team("team-b", "c").Quota(kP5, kGpu, 8, 0).Team("team-c", "c").Quota(kP5, kGpu, 8, 0);
  scheduler::model::Policy& policy = builder.mutable_policy();
  policy.teams[0].cluster_queue = "team-b-cq";
  policy.teams[0].namespace_selector = scheduler::model::LabelSelector{};
  policy.teams[0].namespace_selector->match_labels["tier"] = "shared";
  policy.teams[1].cluster_queue = "team-c-cq";
  policy.teams[1].namespace_selector = scheduler::model::LabelSelector{};
  policy.teams[1].namespace_selector->nothing = true;
  Start(builder.Build());
  AddNodes("p5", kP5, 1, 8);
  cluster_->OnNamespaceUpsert("lab", {{"tier", "shared"}});
  cluster_->OnNamespaceUpsert("scratch", {{"tier", "private"}});
  for (const char* ns : {"lab", "scratch"}) {
    cluster_->OnLocalQueueUpsert(ns, "to-b", "team-b-cq");
    cluster_->OnLocalQueueUpsert(ns, "to-c", "team-c-cq");
  }
  ASSERT_TRUE(Run(
      PodBuilder("in-lab").Namespace("lab").Label("kueue.x-k8s.io/queue-name", "to-b").Gpus(2)));
  EXPECT_EQ(Usage("team-b"), 2);
  Verdict scratch = Filter(PodBuilder("in-scratch")
                               .Namespace("scratch")
                               .Label("kueue.x-k8s.io/queue-name", "to-b")
                               .Gpus(2));
  EXPECT_TRUE(scratch.feasible.empty());
  EXPECT_NE(scratch.failed_unresolvable.at("p5-0").find(
                "Workload namespace doesn't match ClusterQueue selector (ClusterQueue team-b-cq "
                "selects namespaces 'tier=shared'; namespace scratch does not match)"),
            std::string::npos)
      << scratch.failed_unresolvable.at("p5-0");
  Verdict none = Filter(
      PodBuilder("to-c").Namespace("lab").Label("kueue.x-k8s.io/queue-name", "to-c").Gpus(2));
  EXPECT_TRUE(none.feasible.empty());
  EXPECT_NE(none.failed_unresolvable.at("p5-0").find("it has no namespaceSelector"),
            std::string::npos);
  // A native team's queue serves only its own namespaces.
  EXPECT_EQ(Usage("team-b"), 2);
  EXPECT_EQ(Usage("team-c"), 0);
}

TEST_F(AdmissionTest, InactiveTeamIsHeld) {
  Start(PolicyBuilder().Team("team-a", "c").Quota(kP5, kGpu, 8).Inactive().Build());
  AddNodes("p5", kP5, 1, 8);
  Verdict r = Filter(GpuPod("w", "team-a", 1));
  EXPECT_TRUE(r.feasible.empty());
  EXPECT_EQ(r.failed_unresolvable.at("p5-0"), "team-a is not active: its new pods are held");
}

TEST_F(AdmissionTest, GateRefusesEveryVerb) {
  Start(TwoTeams());
  AddNodes("p5", kP5, 1, 8);
  admission_->SetGate([] { return std::string("not ready: waiting for initial sync"); });
  EXPECT_EQ(Filter(GpuPod("w", "team-a", 1)).error, "not ready: waiting for initial sync");
  EXPECT_EQ(admission_->Bind(BindArgs{"w", "ns-team-a", "uid-w", "p5-0"}).error,
            "not ready: waiting for initial sync");
  EXPECT_EQ(Usage("team-a"), 0);
}

TEST_F(AdmissionTest, TaskRankingHigherPriorityPodThatFitsGoesFirst) {
  Start(PolicyBuilder()
            .Team("team-a", "c")
            .Quota(kP5, kGpu, 8, 0)
            .PriorityClass("inference", 100)
            .PriorityClass("training", 10)
            .Build());
  AddNodes("p5", kP5, 1, 8);
  ASSERT_TRUE(Run(GpuPod("base", "team-a", 4)));
  Pod high = PodBuilder("high")
                 .Namespace("ns-team-a")
                 .Gpus(4)
                 .Created(2000)
                 .Label("kueue.x-k8s.io/priority-class", "inference-priority");
  Pod low = PodBuilder("low")
                .Namespace("ns-team-a")
                .Gpus(4)
                .Created(1000)
                .Label("kueue.x-k8s.io/priority-class", "training");
  // The scheduler happens to try `high` while the quota is busy elsewhere: make it pending.
  cluster_->OnPodUpsert(high);
  Verdict r = Filter(low);  // older but lower priority: high could use these 4 GPUs
  EXPECT_TRUE(r.feasible.empty());
  EXPECT_EQ(r.failed_unresolvable.at("p5-0"),
            "team-a: waiting behind higher-ranked pod ns-team-a/high");
  EXPECT_TRUE(Run(high));
}

TEST_F(AdmissionTest, BestEffortFifoLetsASmallerPodPassAHeadThatCannotFit) {
  Start(PolicyBuilder().Team("team-a", "c").Quota(kP5, kGpu, 8, 0).Build());
  AddNodes("p5", kP5, 1, 8);
  ASSERT_TRUE(Run(GpuPod("base", "team-a", 6)));
  cluster_->OnPodUpsert(PodBuilder("big").Namespace("ns-team-a").Gpus(8).Priority(100));
  EXPECT_TRUE(Admitted(PodBuilder("small").Namespace("ns-team-a").Gpus(2).Priority(1)));
}

// team-a (4 GPUs, borrowing up to `a_borrow`) and team-b (8) of cohort "c" on ml.p5.48xlarge.
PolicyPtr LenderAndBorrower(int64_t a_borrow) {
  return PolicyBuilder()
      .Team("team-a", "c")
      .Quota(kP5, kGpu, 4, a_borrow)
      .Team("team-b", "c")
      .Quota(kP5, kGpu, 8)
      .Build();
}

// team-a's job "train" submitted again after a disruption: a pod group of one, 6 GPUs.
Pod RecreatedTrain() {
  return PodBuilder("train-r1")
      .Namespace("ns-team-a")
      .Gpus(6)
      .Priority(100)
      .Label("kueue.x-k8s.io/pod-group-name", "train")
      .Annotation("kueue.x-k8s.io/pod-group-total-count", "1");
}

// DESIGN §3.6, a workload disrupted repeatedly backs off instead of ping-ponging: a pod group
// taskgov's preemption stopped a moment ago may not borrow for a minute (reason
// "disrupted_recently"), and while it backs off it holds back no pod its team's nominal quota
// has room for; after the minute it borrows again.
TEST_F(AdmissionTest, AWorkloadStoppedByAPreemptionDoesNotBorrowAgainAtOnce) {
  Start(LenderAndBorrower(/*a_borrow=*/2));
  AddNodes("p5", kP5, 2, 8);
  const Pod train = RecreatedTrain();
  cluster_->disruptions().Note(model::GangOf(train), clock_.NowMs());
  cluster_->OnPodUpsert(train);
  Verdict r = Filter(train);
  EXPECT_TRUE(r.feasible.empty());
  EXPECT_EQ(r.failed_unresolvable.at("p5-0"),
            "team-a: disrupted by preemption once, last 0s ago: it may borrow again in 60s "
            "(within its team's nominal quota it may run now)");
  EXPECT_EQ(decisions_.back().reason, "disrupted_recently");
  // Ranked below it, within the nominal quota: not held back by it (else it would wait: the
  // two together exceed team-a's 6).
  const Pod small = PodBuilder("small").Namespace("ns-team-a").Gpus(2).Priority(1);
  EXPECT_TRUE(Run(small));
  clock_.Advance(60'000);
  cluster_->OnPodDelete(small);
  EXPECT_TRUE(Admitted(train));
  EXPECT_EQ(Usage("team-a"), 6);
}

// A workload stopped once may borrow again as soon as the pod it was stopped for has finished
// (a paused job resumes when the capacity taken back from it is free again).
TEST_F(AdmissionTest, AWorkloadStoppedOnceBorrowsAgainOnceItsPreemptorFinished) {
  Start(LenderAndBorrower(/*a_borrow=*/4));
  AddNodes("p5", kP5, 2, 8);
  const Pod serve = PodBuilder("serve").Namespace("ns-team-b").Gpus(8).Priority(100);
  ASSERT_TRUE(Run(serve));
  const Pod train = RecreatedTrain();
  cluster_->disruptions().Note(model::GangOf(train), clock_.NowMs(), serve.uid);
  cluster_->OnPodUpsert(train);
  clock_.Advance(10'000);
  EXPECT_EQ(Filter(train).failed_unresolvable.at("p5-0"),
            "team-a: disrupted by preemption once, last 10s ago: it may borrow again in 50s, or "
            "once the pod it was stopped for has finished (within its team's nominal quota it may "
            "run now)");
  Pod done = serve;
  done.node_name = "p5-0";
  done.phase = PodPhase::kSucceeded;
  cluster_->OnPodUpsert(done);
  EXPECT_TRUE(Admitted(train));
}

TEST_F(AdmissionTest, PodsAheadTakeWhatTheyNeedTogether) {
  Start(PolicyBuilder().Team("team-a", "c").Quota(kP5, kGpu, 4, 0, 0).Build());
  AddNodes("p5", kP5, 1, 8);
  ASSERT_TRUE(Run(GpuPod("base", "team-a", 2)));
  // Two higher-ranked pods of one GPU each wait; each alone would leave room for one more, but
  // together they need both free GPUs.
  cluster_->OnPodUpsert(
      PodBuilder("high-0").Namespace("ns-team-a").Gpus(1).Priority(50).Created(2));
  cluster_->OnPodUpsert(
      PodBuilder("high-1").Namespace("ns-team-a").Gpus(1).Priority(50).Created(3));
  Verdict r = Filter(PodBuilder("low").Namespace("ns-team-a").Gpus(1).Priority(10).Created(1));
  EXPECT_TRUE(r.feasible.empty());
  EXPECT_EQ(r.failed_unresolvable.at("p5-0"),
            "team-a: waiting behind higher-ranked pod ns-team-a/high-1");
  EXPECT_TRUE(
      Admitted(PodBuilder("high-0").Namespace("ns-team-a").Gpus(1).Priority(50).Created(2)));
}

// Backfill (issue 34): a pod ranked ahead whose quota would leave this one none, but which finds
// no room on the nodes, does not hold it back when it could not preempt it once room appears
// (equal priority): the GPUs would stay idle for nothing. One that finds room takes its quota
// first, whatever its priority.
TEST_F(AdmissionTest, APodAheadThatFindsNoRoomHoldsBackOnlyWhatItCouldPreempt) {
  Start(PolicyBuilder().Team("team-a", "c").Quota(kP5, kGpu, 8, 0).Build());
  AddNodes("p5", kP5, 2, 8);
  const auto occupy = [&](const std::string& name, const std::string& node, int gpus) {
    Pod pod = PodBuilder(name).Namespace("kube-system").Gpus(gpus);
    pod.node_name = node;
    pod.phase = PodPhase::kRunning;
    cluster_->OnPodUpsert(pod);
  };
  occupy("sys-0", "p5-0", 4);
  cluster_->OnPodUpsert(PodBuilder("wide").Namespace("ns-team-a").Gpus(6).Priority(50).Created(1));
  const Pod narrow = PodBuilder("narrow").Namespace("ns-team-a").Gpus(4).Priority(50).Created(2);
  Verdict v = Filter(narrow);  // p5-1 has room for the wide pod: it goes first
  EXPECT_TRUE(v.feasible.empty());
  EXPECT_EQ(v.failed_unresolvable.at("p5-1"),
            "team-a: waiting behind higher-ranked pod ns-team-a/wide");
  occupy("sys-1", "p5-1", 4);  // now no node has room for 6
  EXPECT_TRUE(Admitted(narrow));
  EXPECT_EQ(Usage("team-a"), 4);

  const Pod urgent = PodBuilder("urgent").Namespace("ns-team-a").Gpus(4).Priority(100).Created(3);
  cluster_->OnPodUpsert(urgent);
  const Pod late = PodBuilder("late").Namespace("ns-team-a").Gpus(4).Priority(50).Created(4);
  v = Filter(late);  // urgent has room (4 free on each node) and takes the team's last 4
  EXPECT_TRUE(v.feasible.empty());
  EXPECT_EQ(v.failed_unresolvable.at("p5-1"),
            "team-a: waiting behind higher-ranked pod ns-team-a/urgent");
}

// A pod ranked ahead of higher priority, which could preempt this one once admitted and finds no
// room on the nodes, holds it back until the preemption controller has looked at it and found
// nothing to free (set aside): passing it before could hand a round about to start its victim;
// after, the GPUs would stay idle for nothing (the passing pod's minimum runtime protects it
// once it runs). Before, it held the pod back for as long as it found no room: 31 % of the
// stranded accelerator-time of 32 generated days.
TEST_F(AdmissionTest, AHigherPriorityPodAheadWithNoRoomIsPassedOnceNothingCanBeFreedForIt) {
  Start(PolicyBuilder().Team("team-a", "c").Quota(kP5, kGpu, 8, 0).Build());
  AddNodes("p5", kP5, 2, 8);
  std::map<std::string, PreemptorState> states;  // the controller's, by uid
  admission_->SetPreemptorState([&](std::string_view uid) {
    auto it = states.find(std::string(uid));
    return it == states.end() ? PreemptorState::kUndecided : it->second;
  });
  // Pods of no team fill p5-0 and half of p5-1: nothing there may be evicted for team-a.
  for (const auto& [name, node, gpus] :
       {std::tuple{"sys-0", "p5-0", 8}, std::tuple{"sys-1", "p5-1", 4}}) {
    Pod pod = PodBuilder(name).Namespace("kube-system").Gpus(gpus);
    pod.node_name = node;
    pod.phase = PodPhase::kRunning;
    cluster_->OnPodUpsert(pod);
  }
  const Pod urgent = PodBuilder("urgent").Namespace("ns-team-a").Gpus(8).Priority(100).Created(1);
  cluster_->OnPodUpsert(urgent);
  const Pod late = PodBuilder("late").Namespace("ns-team-a").Gpus(4).Priority(50).Created(2);
  const std::string behind = "team-a: waiting behind higher-ranked pod ns-team-a/urgent";
  Verdict v = Filter(late);  // the controller has not looked at urgent yet
  EXPECT_TRUE(v.feasible.empty());
  EXPECT_EQ(v.failed_unresolvable.at("p5-1"), behind);
  states[urgent.uid] = PreemptorState::kPreempting;
  v = Filter(late);
  EXPECT_TRUE(v.feasible.empty());
  EXPECT_EQ(v.failed_unresolvable.at("p5-1"), behind);
  states[urgent.uid] = PreemptorState::kSetAside;
  EXPECT_TRUE(Admitted(late));
  EXPECT_EQ(Usage("team-a"), 4);
}

// A pod admitted a moment ago is still in the pending view until the queues' applier applies its
// note (or the informer reports it bound): the next pod must not wait behind it. Before, the
// second pod was refused "waiting behind higher-ranked pod ns-team-a/first" (seen in the demo).
TEST_F(AdmissionTest, APodAdmittedAMomentAgoIsNotAheadOfTheNext) {
  Start(PolicyBuilder().Team("team-a", "c").Quota(kP5, kGpu, 8, 0).Build());
  AddNodes("p5", kP5, 1, 8);
  const Pod first = PodBuilder("first").Namespace("ns-team-a").Gpus(4).Priority(50).Created(1);
  const Pod second = PodBuilder("second").Namespace("ns-team-a").Gpus(4).Priority(50).Created(2);
  cluster_->OnPodUpsert(first);
  cluster_->OnPodUpsert(second);
  cluster_->pending().Stop();  // notes wait: as when the applier has not run yet
  ASSERT_EQ(FilterWithoutApplying(first), "");
  EXPECT_EQ(FilterWithoutApplying(second), "");
  // A pod ranked ahead that is not admitted still holds the next one back.
  const Pod third = PodBuilder("third").Namespace("ns-team-a").Gpus(4).Priority(90).Created(3);
  cluster_->OnPodUpsert(third);
  cluster_->pending().Flush();
  ASSERT_TRUE(book_->Release(second.uid));
  EXPECT_EQ(FilterWithoutApplying(second),
            "team-a: waiting behind higher-ranked pod ns-team-a/third");
}

// The same for fair share: another team's head admitted a moment ago waits for nothing. Before,
// b's pod was refused "fair share: team-c (share 0.133) is ahead of team-b (share 0.800)".
TEST_F(AdmissionTest, FairShareIgnoresAHeadAdmittedAMomentAgo) {
  Start(LenderAndBorrowers(5, 1, 3));
  AddNodes("p5", kP5, 1, 8);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(Run(GpuPod("b-" + std::to_string(i), "team-b", 1)));
  const Pod c0 = GpuPod("c-0", "team-c", 1, 5000);
  cluster_->OnPodUpsert(c0);
  cluster_->pending().Flush();
  cluster_->pending().Stop();
  ASSERT_EQ(FilterWithoutApplying(c0), "");
  EXPECT_EQ(FilterWithoutApplying(GpuPod("b-3", "team-b", 1, 100)), "");
}

TEST(PolicyFlavorAllowsTest, NodeSelectorsRuleOutOtherFlavors) {
  PolicyBuilder builder;
  builder.Team("team-a", "c").Quota(kP5, kGpu, 8).Quota(kG5, kGpu, 4);
  builder.mutable_policy().flavors.push_back(Flavor{"spot", {{"lifecycle", "spot"}}, false});
  builder.mutable_policy().flavors.push_back(Flavor{"any", {}, true});
  PolicyPtr policy = builder.Build();
  const Labels p5{{"node.kubernetes.io/instance-type", kP5}};
  EXPECT_TRUE(policy->FlavorAllows(kP5, {}));
  EXPECT_TRUE(policy->FlavorAllows(kP5, p5));
  EXPECT_FALSE(policy->FlavorAllows(kG5, p5));
  EXPECT_TRUE(policy->FlavorAllows(kG5, {{"team", "a"}}));  // a key the flavor does not define
  EXPECT_TRUE(policy->FlavorAllows("spot", {{"lifecycle", "spot"}}));
  EXPECT_FALSE(policy->FlavorAllows("spot", {{"lifecycle", "on-demand"}}));
  EXPECT_TRUE(policy->FlavorAllows("any", p5));
}

TEST_F(AdmissionTest, PodsAheadThatSelectAnotherFlavorDoNotBlock) {
  Start(PolicyBuilder()
            .Team("team-a", "c")
            .Quota(kP5, kGpu, 4, 0, 0)
            .Quota(kG5, kGpu, 4, 0, 0)
            .Build());
  AddNodes("p5", kP5, 1, 8);
  ASSERT_TRUE(Run(GpuPod("base", "team-a", 3)));
  // A higher-ranked pod that only runs on g5 does not hold back a pod on p5.
  cluster_->OnPodUpsert(PodBuilder("g5-only")
                            .Namespace("ns-team-a")
                            .Gpus(1)
                            .Priority(50)
                            .NodeSelector("node.kubernetes.io/instance-type", kG5));
  EXPECT_TRUE(Admitted(PodBuilder("low").Namespace("ns-team-a").Gpus(1).Priority(10)));
}

TEST_F(AdmissionTest, StrictFifoWaitsForTheHeadWhateverItsSize) {
  Start(PolicyBuilder()
            .Team("team-a", "c")
            .Quota(kP5, kGpu, 8, 0)
            .Queueing(QueueingStrategy::kStrictFIFO)
            .Build());
  AddNodes("p5", kP5, 1, 8);
  ASSERT_TRUE(Run(GpuPod("base", "team-a", 6)));
  cluster_->OnPodUpsert(PodBuilder("big").Namespace("ns-team-a").Gpus(8).Priority(100));
  Verdict r = Filter(PodBuilder("small").Namespace("ns-team-a").Gpus(2).Priority(1));
  EXPECT_TRUE(r.feasible.empty());
  EXPECT_EQ(r.failed_unresolvable.at("p5-0"),
            "team-a: waiting behind higher-ranked pod ns-team-a/big (StrictFIFO)");
}

TEST_F(AdmissionTest, FirstComeFirstServeKeepsSubmissionOrder) {
  Start(PolicyBuilder()
            .Team("team-a", "c")
            .Quota(kP5, kGpu, 4, 0)
            .TaskPrioritization(TaskPrioritization::kFirstComeFirstServe)
            .Build());
  AddNodes("p5", kP5, 1, 8);
  cluster_->OnPodUpsert(PodBuilder("old").Namespace("ns-team-a").Gpus(4).Priority(1).Created(1));
  Verdict r = Filter(PodBuilder("new").Namespace("ns-team-a").Gpus(4).Priority(1000).Created(2));
  EXPECT_TRUE(r.feasible.empty());
  EXPECT_NE(r.failed_unresolvable.at("p5-0").find("ns-team-a/old"), std::string::npos);
}

TEST_F(AdmissionTest, FairShareGivesBorrowedCapacityToTheLowerShareFirst) {
  Start(LenderAndBorrowers(4, 3, 1));
  AddNodes("p5", kP5, 1, 8);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(Run(GpuPod("b-" + std::to_string(i), "team-b", 1)));
  cluster_->OnPodUpsert(GpuPod("c-0", "team-c", 1, 5000));  // c waits to borrow one GPU
  // b's fourth would leave nothing for c: b after = 4/4/3 = 333‰, c after = 1/4/1 = 250‰.
  Verdict r = Filter(GpuPod("b-3", "team-b", 1, 100));
  EXPECT_TRUE(r.feasible.empty());
  EXPECT_EQ(r.failed_unresolvable.at("p5-0"),
            "fair share: team-c (share 0.250) is ahead of team-b (share 0.333)");
  EXPECT_EQ(decisions_.back().reason, "fair_share");
  EXPECT_TRUE(Admitted(GpuPod("c-0", "team-c", 1, 5000)));
}

// A gang at the head of another team's queue takes its need once in the tally of what that team's
// pods ahead take, not once per member: counted for each of train's two members (2 + 2), b's 5 of
// the 8 lent would seem to leave train no room, and b would wait beside idle GPUs.
TEST_F(AdmissionTest, FairShareCountsAGangAheadOnce) {
  Start(LenderAndBorrowers(8, 1, 3));
  AddNodes("p5", kP5, 2, 8);
  for (int i = 0; i < 2; ++i) {
    cluster_->OnPodUpsert(PodBuilder("train-" + std::to_string(i))
                              .Namespace("ns-team-c")
                              .Gpus(1)
                              .Created(5000)
                              .Label("kueue.x-k8s.io/pod-group-name", "train")
                              .Annotation("kueue.x-k8s.io/pod-group-total-count", "2"));
  }
  // b's 7 would leave train 1 of the 2 it needs: c goes first (c after = 2/8/3 = 83‰, b after =
  // 7/8/1 = 875‰). b's 5 leaves train its 2.
  Verdict r = Filter(GpuPod("b-0", "team-b", 7, 200));
  EXPECT_TRUE(r.feasible.empty());
  EXPECT_EQ(r.failed_unresolvable.at("p5-0"),
            "fair share: team-c (share 0.083) is ahead of team-b (share 0.875)");
  EXPECT_TRUE(Admitted(GpuPod("b-1", "team-b", 5, 100)));
}

TEST_F(AdmissionTest, FairShareDoesNotHoldIdleCapacityForAPodBeyondItsOwnTeamsCeiling) {
  Start(PolicyBuilder()
            .Team("lender", "c")
            .Quota(kP5, kGpu, 8)
            .Team("team-b", "c")
            .Quota(kP5, kGpu, 0)
            .Team("team-c", "c")
            .Quota(kP5, kGpu, 2, 2)
            .Build());
  AddNodes("p5", kP5, 2, 8);
  ASSERT_TRUE(Run(GpuPod("c-0", "team-c", 3)));
  // c's next pod would have the lower share (c after = 3/10 = 300‰, b after = 4/10 = 400‰), but
  // 3 + 2 is beyond c's ceiling of 4: it waits for c's own pod to end, not for the pool, and b
  // may borrow the idle GPUs meanwhile (Kueue skips a workload its borrowing limit refuses).
  cluster_->OnPodUpsert(GpuPod("c-1", "team-c", 2, 5000));
  EXPECT_TRUE(Admitted(GpuPod("b-0", "team-b", 4)));
  Verdict c = Filter(GpuPod("c-1", "team-c", 2, 5000));
  EXPECT_TRUE(c.feasible.empty());
  EXPECT_NE(c.failed_unresolvable.at("p5-0").find("borrowing limit 2"), std::string::npos)
      << c.failed_unresolvable.at("p5-0");
}

TEST_F(AdmissionTest, FairShareOnlyMattersWhenCapacityIsContended) {
  Start(LenderAndBorrowers(8));
  AddNodes("p5", kP5, 1, 8);
  ASSERT_TRUE(Run(GpuPod("b-0", "team-b", 4)));
  cluster_->OnPodUpsert(GpuPod("c-0", "team-c", 1, 5000));
  EXPECT_TRUE(Admitted(GpuPod("b-1", "team-b", 1)));  // c still fits afterwards
}

TEST_F(AdmissionTest, FairShareWeightZeroIsAlwaysLast) {
  Start(LenderAndBorrowers(4, 0, 1));
  AddNodes("p5", kP5, 1, 8);
  cluster_->OnPodUpsert(GpuPod("c-0", "team-c", 4));
  Verdict r = Filter(GpuPod("b-0", "team-b", 4, 1));
  EXPECT_TRUE(r.feasible.empty());
  EXPECT_EQ(r.failed_unresolvable.at("p5-0"),
            "fair share: team-c (share 1.000) is ahead of team-b (share inf (weight 0, 1.000 "
            "unweighted))");
}

// Teams of weight 0 that borrow rank after every other team, and among themselves by their
// unweighted share (Kueue's CompareDRS): c, borrowing 1 of the 4 lent, goes before b, which would
// borrow all 4 — although b's pod is the older.
TEST_F(AdmissionTest, FairShareAmongWeightZeroTeamsGoesByUnweightedShare) {
  Start(LenderAndBorrowers(4, 0, 0));
  AddNodes("p5", kP5, 1, 8);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(Run(GpuPod("b-" + std::to_string(i), "team-b", 1)));
  cluster_->OnPodUpsert(GpuPod("c-0", "team-c", 1, 5000));
  Verdict r = Filter(GpuPod("b-3", "team-b", 1, 100));
  EXPECT_TRUE(r.feasible.empty());
  EXPECT_EQ(r.failed_unresolvable.at("p5-0"),
            "fair share: team-c (share inf (weight 0, 0.250 unweighted)) is ahead of team-b "
            "(share inf (weight 0, 1.000 unweighted))");
  EXPECT_TRUE(Run(GpuPod("c-0", "team-c", 1, 5000)));
}

TEST_F(AdmissionTest, FirstComeFirstServeIdleComputeIgnoresFairShare) {
  // The situation of FairShareGivesBorrowedCapacityToTheLowerShareFirst, with idle compute
  // handed out first come, first served: b's fourth borrowed GPU is admitted although c, with
  // the lower share, waits.
  Start(PolicyBuilder()
            .IdleCompute(IdleComputeAllocation::kFirstComeFirstServe)
            .Team("lender", "c")
            .Quota(kP5, kGpu, 4)
            .Team("team-b", "c")
            .Quota(kP5, kGpu, 0)
            .Weight(3)
            .Team("team-c", "c")
            .Quota(kP5, kGpu, 0)
            .Weight(1)
            .Build());
  AddNodes("p5", kP5, 1, 8);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(Run(GpuPod("b-" + std::to_string(i), "team-b", 1)));
  cluster_->OnPodUpsert(GpuPod("c-0", "team-c", 1, 5000));
  EXPECT_TRUE(Run(GpuPod("b-3", "team-b", 1, 100)));
  EXPECT_EQ(Usage("team-b"), 4);
  Verdict r = Filter(GpuPod("c-0", "team-c", 1, 5000));
  EXPECT_TRUE(r.feasible.empty());
  EXPECT_EQ(r.failed_unresolvable.at("p5-0"),
            "team-c: nvidia.com/gpu on ml.p5.48xlarge: requested 1, in use 0 of nominal 0, "
            "borrowing limit unlimited, cohort pool free 0 of 4");
}

TEST_F(AdmissionTest, FullNodesModeJudgesNodesTheCacheDoesNotKnow) {
  // nodeCacheCapable: false — the scheduler sends whole nodes; nodes the informer has not
  // delivered yet are judged by what the request carries (labels → flavor, allocatable → room).
  Start(TwoTeams(/*a_borrow=*/0));
  AddNodes("p5", kP5, 1, 8);  // known to the cache, 8 GPUs
  FilterArgs args;
  args.pod = GpuPod("w-0", "team-a", 4);
  args.node_names_mode = false;
  args.node_names = {"p5-0", "p5-new", "p5-small", "g5-new", "cordoned"};
  args.nodes.push_back(NodeBuilder("p5-0").InstanceType(kP5).Allocatable(kGpu, "8"));
  args.nodes.push_back(NodeBuilder("p5-new").InstanceType(kP5).Allocatable(kGpu, "8"));
  args.nodes.push_back(NodeBuilder("p5-small").InstanceType(kP5).Allocatable(kGpu, "2"));
  args.nodes.push_back(NodeBuilder("g5-new").InstanceType(kG5).Allocatable(kGpu, "4"));
  Node cordoned = NodeBuilder("cordoned").InstanceType(kP5).Allocatable(kGpu, "8");
  cordoned.unschedulable = true;
  args.nodes.push_back(cordoned);
  FilterResult r = admission_->Filter(args);
  EXPECT_TRUE(r.error.empty());
  EXPECT_EQ(r.FeasibleNames(args), (std::vector<std::string>{"p5-0", "p5-new"}));
  EXPECT_EQ(r.ReasonFor(args, "p5-small"), "team-a: node has no room for nvidia.com/gpu: 4");
  EXPECT_EQ(r.ReasonFor(args, "cordoned"), "team-a: node has no room for nvidia.com/gpu: 4");
  EXPECT_EQ(r.ReasonFor(args, "g5-new"), "taskgov assigned ns-team-a/w-0 to ml.p5.48xlarge");
  EXPECT_EQ(Usage("team-a"), 4);
}

TEST_F(AdmissionTest, RemovedFlavorKeepsItsPodsCountedUntilTheyEnd) {
  Start(PolicyBuilder()
            .Team("team-a", "c")
            .Quota(kP5, kGpu, 8, 0)
            .Quota(kG5, kGpu, 4, 0)
            .Team("team-b", "c")
            .Quota(kP5, kGpu, 8)
            .Build());
  AddNodes("g5", kG5, 1, 4);
  std::vector<Pod> running;
  for (int i = 0; i < 3; ++i) {
    running.push_back(GpuPod("g-" + std::to_string(i), "team-a", 1));
    ASSERT_TRUE(Run(running.back()));
  }
  // The g5 flavor goes from the policy while three pods run on it.
  admission_->ApplyPolicy(PolicyBuilder()
                              .Team("team-a", "c")
                              .Quota(kP5, kGpu, 8, 0)
                              .Team("team-b", "c")
                              .Quota(kP5, kGpu, 8)
                              .Build());
  EXPECT_EQ(Usage("team-a", kG5), 3);
  EXPECT_TRUE(kube_.evictions().empty());
  EXPECT_FALSE(Admitted(GpuPod("g-new", "team-a", 1)));
  cluster_->OnPodDelete(running[0]);
  EXPECT_EQ(Usage("team-a", kG5), 2);
  Pod done = running[1];
  done.node_name = "g5-0";
  done.phase = PodPhase::kSucceeded;
  cluster_->OnPodUpsert(done);
  EXPECT_EQ(Usage("team-a", kG5), 1);
  cluster_->OnPodDelete(running[2]);
  EXPECT_EQ(Usage("team-a", kG5), 0);
}

TEST_F(AdmissionTest, BurstOfFiltersBeforeAnyBindingIsCappedByTheQuota) {
  Start(TwoTeams(/*a_borrow=*/0));
  AddNodes("p5", kP5, 4, 8);
  int admitted = 0;
  for (int i = 0; i < 30; ++i) admitted += Admitted(GpuPod("w-" + std::to_string(i), "team-a", 1));
  EXPECT_EQ(admitted, 8);
}

TEST_F(AdmissionTest, BindConfirmsOrRollsBack) {
  Start(TwoTeams());
  AddNodes("p5", kP5, 1, 8);
  Pod pod = GpuPod("w", "team-a", 4);
  cluster_->OnPodUpsert(pod);
  ASSERT_FALSE(Filter(pod).feasible.empty());
  EXPECT_EQ(admission_->Bind(BindArgs{"w", "ns-team-a", pod.uid, "p5-0"}).error, "");
  ASSERT_EQ(kube_.binds().size(), 1u);
  EXPECT_EQ(kube_.binds()[0].node, "p5-0");
  EXPECT_EQ(book_->Find(pod.uid)->state, ReservationState::kBound);

  Pod second = GpuPod("w2", "team-a", 4);
  cluster_->OnPodUpsert(second);
  ASSERT_FALSE(Filter(second).feasible.empty());
  kube_.FailBinds("409 Conflict: pod already bound");
  BindResult failed = admission_->Bind(BindArgs{"w2", "ns-team-a", second.uid, "p5-0"});
  EXPECT_EQ(failed.error, "binding ns-team-a/w2 to p5-0 failed: 409 Conflict: pod already bound");
  EXPECT_EQ(Usage("team-a"), 4);
  EXPECT_FALSE(book_->Find(second.uid).has_value());
}

// Issue 34: kube-scheduler binds a burst of pods before the first binding's watch event reaches
// the extender. A pod the bind verb bound counts on its node at once: the next filter sees the
// room it took (before, it offered the same room again, and room a preemption held for its
// preemptor went to the victim's recreated pods); the informer's event counts it no twice.
TEST_F(AdmissionTest, APodBoundByTheBindVerbTakesItsNodeRoomBeforeItsWatchEvent) {
  Start(TwoTeams());
  AddNodes("p5", kP5, 1, 8);
  Pod first = GpuPod("w1", "team-a", 6);
  cluster_->OnPodUpsert(first);
  ASSERT_FALSE(Filter(first).feasible.empty());
  ASSERT_EQ(admission_->Bind(BindArgs{"w1", "ns-team-a", first.uid, "p5-0"}).error, "");
  Pod second = GpuPod("w2", "team-b", 4);
  cluster_->OnPodUpsert(second);
  EXPECT_TRUE(Filter(second).feasible.empty());  // 2 GPUs left on p5-0
  // An older event (a status patch still in the watch pipe) comes after: the pod stays bound.
  cluster_->OnPodUpsert(first);
  EXPECT_TRUE(Filter(second).feasible.empty());
  EXPECT_EQ(Usage("team-a"), 6);
  Pod bound = first;  // the informer's bound event, late
  bound.node_name = "p5-0";
  cluster_->OnPodUpsert(bound);
  bound.phase = PodPhase::kRunning;
  cluster_->OnPodUpsert(bound);
  EXPECT_TRUE(Filter(second).feasible.empty());
  Pod small = GpuPod("w3", "team-b", 2);
  cluster_->OnPodUpsert(small);
  EXPECT_FALSE(Filter(small).feasible.empty());  // counted once: 2 left
  cluster_->OnPodDelete(bound);
  EXPECT_FALSE(Filter(second).feasible.empty());  // and gone once
}

TEST_F(AdmissionTest, BindAfterTheReservationExpiredAdmitsAgain) {
  Start(TwoTeams(/*a_borrow=*/0));
  AddNodes("p5", kP5, 1, 8);
  Pod pod = GpuPod("w", "team-a", 8);
  cluster_->OnPodUpsert(pod);
  ASSERT_FALSE(Filter(pod).feasible.empty());
  clock_.Advance(31'000);
  EXPECT_EQ(book_->ExpireAssumed(), 1u);
  EXPECT_EQ(admission_->Bind(BindArgs{"w", "ns-team-a", pod.uid, "p5-0"}).error, "");
  EXPECT_EQ(Usage("team-a"), 8);
  EXPECT_NE(admission_->Bind(BindArgs{"ghost", "ns-team-a", "no-such-uid", "p5-0"})
                .error.find("unknown pod ns-team-a/ghost"),
            std::string::npos);
}

// Issue 36, item 9: /bind binds only a pod of the governed scheduler that the informer has seen,
// unbound, under its own name, and that a taskgov filter admitted — not a kube-system pod of
// default-scheduler, nor a pod never filtered, nor another pod's name with this one's uid.
TEST_F(AdmissionTest, BindBindsOnlyPodsOfTheGovernedSchedulerThatItFiltered) {
  Start(TwoTeams());
  AddNodes("p5", kP5, 1, 8);
  Pod system = PodBuilder("coredns").Namespace("kube-system").SchedulerName("default-scheduler");
  Pod unfiltered = GpuPod("unfiltered", "team-a", 1);
  Pod bound = GpuPod("bound", "team-a", 1);
  bound.node_name = "p5-0";
  bound.phase = PodPhase::kRunning;
  Pod other = GpuPod("other", "team-a", 1);
  for (const Pod& p : {system, unfiltered, bound, other}) cluster_->OnPodUpsert(p);
  ASSERT_FALSE(Filter(other).feasible.empty());
  struct Case {
    std::string name;
    BindArgs args;
    std::string error;
  };
  const std::vector<Case> cases = {
      {"another scheduler's pod",
       {"coredns", "kube-system", system.uid, "p5-0"},
       "pod kube-system/coredns has schedulerName 'default-scheduler': taskgov binds only pods "
       "of scheduler 'taskgov'"},
      {"a pod never filtered",
       {"unfiltered", "ns-team-a", unfiltered.uid, "p5-0"},
       "pod ns-team-a/unfiltered was not admitted by a taskgov filter (or that was longer ago "
       "than 300 s): taskgov binds only pods it filtered; the scheduler filters it again"},
      {"a bound pod",
       {"bound", "ns-team-a", bound.uid, "p5-0"},
       "pod ns-team-a/bound is bound to p5-0 already"},
      {"another name for the uid",
       {"victim", "ns-team-b", other.uid, "p5-0"},
       "uid " + other.uid + " is pod ns-team-a/other, not ns-team-b/victim"},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(admission_->Bind(c.args).error, c.error) << c.name;
  }
  EXPECT_TRUE(kube_.binds().empty());
  // A pod of no team that a filter passed through is bound (it holds no reservation).
  Pod loose = PodBuilder("loose").Namespace("default").Gpus(1);
  cluster_->OnPodUpsert(loose);
  ASSERT_FALSE(Filter(loose).feasible.empty());
  EXPECT_EQ(admission_->Bind(BindArgs{"loose", "default", loose.uid, "p5-0"}).error, "");
  // So is the filtered one, long after its reservation expired but within the bind window.
  clock_.Advance(60'000);
  (void)book_->ExpireAssumed();
  EXPECT_EQ(admission_->Bind(BindArgs{"other", "ns-team-a", other.uid, "p5-0"}).error, "");
  EXPECT_EQ(kube_.binds().size(), 2u);
}

TEST_F(AdmissionTest, PrioritizePacksAcceleratorsAndKeepsBorrowersTogether) {
  Start(TwoTeams());
  AddNodes("p5", kP5, 3, 8);
  // p5-1 has 4 GPUs used by team-b.
  Pod busy = GpuPod("busy", "team-b", 4);
  busy.node_name = "p5-1";
  busy.phase = PodPhase::kRunning;
  cluster_->OnPodUpsert(busy);
  Pod pod = GpuPod("w", "team-a", 2);
  ASSERT_FALSE(Filter(pod).feasible.empty());
  FilterArgs args;
  args.pod = pod;
  args.node_names = nodes_;
  std::vector<HostPriority> scores = admission_->Prioritize(args);
  ASSERT_EQ(scores.size(), 3u);
  EXPECT_EQ(scores[0].host, "p5-0");
  EXPECT_EQ(scores[0].score, 2 + 2);  // 2/8 packed → 2, no borrowers there → +2
  EXPECT_EQ(scores[1].score, 6 + 2);  // 6/8 packed → 6
  for (const HostPriority& h : scores) {
    EXPECT_GE(h.score, 0);
    EXPECT_LE(h.score, 10);
  }
}

TEST_F(AdmissionTest, InformerEventsKeepUsageExact) {
  Start(TwoTeams());
  Pod pod = GpuPod("w", "team-a", 4);
  pod.node_name = "p5-0";
  pod.phase = PodPhase::kRunning;
  cluster_->OnPodUpsert(pod);  // before its node
  EXPECT_EQ(Usage("team-a"), 0);
  AddNodes("p5", kP5, 1, 8);
  EXPECT_EQ(Usage("team-a"), 4);
  cluster_->OnPodUpsert(pod);  // duplicate ADDED
  EXPECT_EQ(Usage("team-a"), 4);
  EXPECT_EQ(cluster_->nodes().View("p5-0").used.Get(kGpu), 4);
  cluster_->OnNodeDelete("p5-0");  // node gone and back
  AddNodes("p5", kP5, 1, 8);
  EXPECT_EQ(Usage("team-a"), 4);
  EXPECT_EQ(cluster_->nodes().View("p5-0").used.Get(kGpu), 4);
  Pod done = pod;
  done.phase = PodPhase::kSucceeded;
  cluster_->OnPodUpsert(done);
  EXPECT_EQ(Usage("team-a"), 0);
  EXPECT_EQ(cluster_->nodes().View("p5-0").used.Get(kGpu), 0);
  cluster_->OnPodDelete(done);  // DELETED after terminal, and for an unknown pod
  cluster_->OnPodDelete(GpuPod("never-seen", "team-a", 1));
  EXPECT_EQ(Usage("team-a"), 0);
}

// The default binder binds (no bind verb): the informer then sees the pending pod bound. Its
// assumed reservation is confirmed as it is — never released and charged again, which would
// leave a window in which a concurrent filter sees the quota free and over-admits.
TEST_F(AdmissionTest, BindingSeenByTheInformerConfirmsTheAssumedReservationInPlace) {
  Start(TwoTeams(/*a_borrow=*/0));
  AddNodes("p5", kP5, 1, 8);
  Pod pod = GpuPod("w", "team-a", 8);
  cluster_->OnPodUpsert(pod);  // pending, seen by the informer
  const int64_t filtered_at = clock_.NowMs();
  ASSERT_TRUE(Admitted(pod));
  clock_.Advance(5'000);
  Pod bound = pod;
  bound.node_name = "p5-0";
  bound.phase = PodPhase::kRunning;
  cluster_->OnPodUpsert(bound);
  std::optional<Reservation> r = book_->Find(pod.uid);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->state, ReservationState::kBound);
  EXPECT_EQ(r->meta.admitted_ms, filtered_at);  // the filter's reservation, not a new charge
  EXPECT_EQ(Usage("team-a"), 8);
  EXPECT_EQ(cluster_->nodes().View("p5-0").used.Get(kGpu), 8);
}

// A pod asking for a resource no node has (nothing ever interned its name) fits no node; the
// filter explains it per flavor and adds nothing to the interners.
TEST_F(AdmissionTest, AResourceNoNodeHasFitsNowhere) {
  Start(TwoTeams());
  AddNodes("p5", kP5, 2, 8);
  const size_t interned = ResourceNames().size();
  Verdict r = Filter(PodBuilder("fpga")
                         .Namespace("ns-team-a")
                         .Gpus(1)
                         .Request("example.com/never-seen-fpga", "1"));
  EXPECT_TRUE(r.feasible.empty());
  EXPECT_EQ(r.failed_unresolvable.at("p5-0"),
            "team-a: no ml.p5.48xlarge node has room for example.com/never-seen-fpga: 1, "
            "nvidia.com/gpu: 1");
  EXPECT_EQ(ResourceNames().size(), interned);
  EXPECT_TRUE(Admitted(GpuPod("plain", "team-a", 1)));  // the same pod without it fits
}

TEST_F(AdmissionTest, NodeViewsCarryPlacementAndPendingPodsTheirConstraints) {
  Start(TwoTeams());
  cluster_->OnNodeUpsert(NodeBuilder("p5-0")
                             .InstanceType(kP5)
                             .Label("zone", "a")
                             .Taint("nvidia.com/gpu", "present", TaintEffect::kNoSchedule)
                             .Taint("spot", "", TaintEffect::kPreferNoSchedule)
                             .Allocatable(kGpu, "8"));
  const NodeView view = cluster_->nodes().View("p5-0");
  ASSERT_NE(view.placement, nullptr);
  EXPECT_EQ(view.placement->name, "p5-0");
  EXPECT_EQ(view.placement->labels.at("zone"), "a");
  ASSERT_EQ(view.placement->taints.size(), 1u);  // PreferNoSchedule keeps no pod off
  EXPECT_EQ(FormatTaint(view.placement->taints[0]), "nvidia.com/gpu=present:NoSchedule");
  EXPECT_EQ(cluster_->nodes().View("unknown").placement, nullptr);
  auto of_flavor = cluster_->nodes().NodesOfFlavor(FlavorNames().Intern(kP5));
  ASSERT_EQ(of_flavor.size(), 1u);
  EXPECT_EQ(of_flavor[0].second.placement.get(), view.placement.get());  // shared, not copied
  // A new version of the node replaces its placement facts.
  cluster_->OnNodeUpsert(NodeBuilder("p5-0").InstanceType(kP5).Allocatable(kGpu, "8"));
  EXPECT_TRUE(cluster_->nodes().View("p5-0").placement->taints.empty());
  EXPECT_FALSE(cluster_->nodes().View("p5-0").placement->labels.count("zone"));

  // A pending pod's record carries its constraints, from the informer and from a filter call.
  Pod pod = PodBuilder("w-0")
                .Namespace("ns-team-a")
                .Gpus(16)
                .NodeSelector("zone", "a")
                .Toleration("nvidia.com/gpu", TolerationOperator::kExists)
                .PinnedTo({"p5-0"});
  cluster_->OnPodUpsert(pod);
  std::optional<PendingPod> head = cluster_->pending().Head(TeamNames().Intern("team-a"), true);
  ASSERT_TRUE(head.has_value());
  EXPECT_EQ(head->node_selector, pod.node_selector);
  EXPECT_EQ(head->placement.get(), pod.placement.get());
  Pod other =
      PodBuilder("w-1").Namespace("ns-team-b").Gpus(16).Toleration("", TolerationOperator::kExists);
  EXPECT_FALSE(Admitted(other));  // refused: noted pending by the filter
  std::optional<PendingPod> b = cluster_->pending().Head(TeamNames().Intern("team-b"), true);
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->placement.get(), other.placement.get());
}

// A peer's bug: a pod recreated under a new UID (a job controller replacing it) counted twice.
// Whatever order the informer delivers the old pod's DELETED and the new pod's ADDED in, the
// name is charged once.
TEST_F(AdmissionTest, PodRecreatedUnderANewUidCountsOnceInEitherEventOrder) {
  Start(TwoTeams());
  AddNodes("p5", kP5, 2, 8);
  auto bound = [](const std::string& uid, const std::string& node) {
    Pod pod = PodBuilder("worker-0").Namespace("ns-team-a").Uid(uid).Gpus(8);
    pod.node_name = node;
    pod.phase = PodPhase::kRunning;
    return pod;
  };
  // DELETED, then ADDED.
  const Pod first = bound("uid-1", "p5-0");
  cluster_->OnPodUpsert(first);
  EXPECT_EQ(Usage("team-a"), 8);
  cluster_->OnPodDelete(first);
  const Pod second = bound("uid-2", "p5-1");
  cluster_->OnPodUpsert(second);
  EXPECT_EQ(Usage("team-a"), 8);
  // ADDED before the predecessor's DELETED (e.g. a relist): still once, node usage moves too.
  const Pod third = bound("uid-3", "p5-0");
  cluster_->OnPodUpsert(third);
  EXPECT_EQ(Usage("team-a"), 8);
  EXPECT_EQ(cluster_->nodes().View("p5-1").used.Get(kGpu), 0);
  EXPECT_EQ(cluster_->nodes().View("p5-0").used.Get(kGpu), 8);
  EXPECT_FALSE(book_->Find("uid-2").has_value());
  cluster_->OnPodDelete(second);  // the late DELETED changes nothing
  EXPECT_EQ(Usage("team-a"), 8);
  EXPECT_TRUE(book_->Find("uid-3").has_value());
  // Another pod's name in the same namespace is not a predecessor.
  cluster_->OnPodUpsert([&] {
    Pod other = bound("uid-9", "p5-1");
    other.name = "worker-1";
    return other;
  }());
  EXPECT_EQ(Usage("team-a"), 16);
  cluster_->OnPodDelete(third);
  EXPECT_EQ(Usage("team-a"), 8);
}

TEST_F(AdmissionTest, ReservationsAreReconciledWithTheRunningPods) {
  Start(TwoTeams());
  AddNodes("p5", kP5, 1, 8);
  Pod running = GpuPod("w-0", "team-a", 3);
  running.node_name = "p5-0";
  running.phase = PodPhase::kRunning;
  cluster_->OnPodUpsert(running);
  ASSERT_EQ(Usage("team-a"), 3);
  EXPECT_TRUE(cluster_->ReconcileReservations(60'000).released.empty());
  // A running pod whose reservation went missing is charged again.
  ASSERT_TRUE(book_->Release(running.uid));
  ASSERT_EQ(Usage("team-a"), 0);
  ClusterState::ReservationDrift drift = cluster_->ReconcileReservations(60'000);
  EXPECT_EQ(drift.charged, std::vector<std::string>{running.uid});
  EXPECT_EQ(Usage("team-a"), 3);
  // A bound reservation whose pod is not running here: released once it is old enough (a young
  // one may be a pod just bound whose update is still on its way).
  ASSERT_EQ(book_->ConfirmBound("ghost", TeamNames().Intern("team-a"), FlavorNames().Intern(kP5),
                                ResourceList{{kGpu, 2}}, PodMeta{}),
            QuotaBook::ConfirmOutcome::kCharged);
  ASSERT_EQ(Usage("team-a"), 5);
  EXPECT_TRUE(cluster_->ReconcileReservations(60'000).released.empty());
  clock_.Advance(61'000);
  drift = cluster_->ReconcileReservations(60'000);
  EXPECT_EQ(drift.released, std::vector<std::string>{"ghost"});
  EXPECT_TRUE(drift.charged.empty());
  EXPECT_EQ(Usage("team-a"), 3);
  EXPECT_TRUE(cluster_->ReconcileReservations(60'000).released.empty());  // nothing left to do
}

TEST_F(AdmissionTest, PendingPodsCountAsRefusedOnceAFilterRefusedThem) {
  Start(TwoTeams(/*a_borrow=*/0));
  AddNodes("p5", kP5, 1, 8);
  const NameId a = TeamNames().Intern("team-a");
  ASSERT_TRUE(Run(GpuPod("w-0", "team-a", 8)));
  const Pod waiting = GpuPod("w-1", "team-a", 1, 2000);
  cluster_->OnPodUpsert(waiting);  // seen by the informer, not tried yet
  EXPECT_EQ(cluster_->pending().CountsOf(a).total, 1u);
  EXPECT_EQ(cluster_->pending().CountsOf(a).refused, 0u);
  EXPECT_FALSE(Admitted(waiting));  // tried and refused: over quota
  EXPECT_EQ(cluster_->pending().CountsOf(a).total, 1u);
  EXPECT_EQ(cluster_->pending().CountsOf(a).refused, 1u);
  cluster_->OnPodUpsert(waiting);  // an informer update keeps the verdict
  EXPECT_EQ(cluster_->pending().CountsOf(a).refused, 1u);
  cluster_->OnPodDelete(GpuPod("w-0", "team-a", 8));
  EXPECT_TRUE(Admitted(waiting));
  EXPECT_EQ(cluster_->pending().CountsOf(a).total, 0u);
}

// A pod the filter refuses starts waiting: the waiting observer (the process pokes the
// preemption controller's loop) hears of it at its first refusal, not at the retries.
TEST_F(AdmissionTest, AFilterRefusingAPodAnnouncesItOnceAsWaiting) {
  Start(TwoTeams(/*a_borrow=*/0));
  AddNodes("p5", kP5, 1, 8);
  int waiting = 0;
  cluster_->SetPodWaitingObserver([&waiting] { ++waiting; });
  ASSERT_TRUE(Run(GpuPod("w-0", "team-a", 8)));
  EXPECT_EQ(waiting, 0);  // admitted at once: it never waited
  const Pod refused = GpuPod("w-1", "team-a", 1, 2000);
  EXPECT_FALSE(Admitted(refused));
  EXPECT_EQ(waiting, 1);
  for (int i = 0; i < 3; ++i) {
    clock_.Advance(1'000);
    EXPECT_FALSE(Admitted(refused));
    cluster_->OnPodUpsert(refused);  // its status, updated by kube-scheduler
  }
  EXPECT_EQ(waiting, 1);
  EXPECT_FALSE(Admitted(GpuPod("w-2", "team-a", 1, 3000)));
  EXPECT_EQ(waiting, 2);
}

TEST_F(AdmissionTest, ReloadHalvingAQuotaTouchesNoRunningPod) {
  Start(TwoTeams(/*a_borrow=*/0));
  AddNodes("p5", kP5, 1, 8);
  std::vector<Pod> running;
  for (int i = 0; i < 8; ++i) {
    Pod pod = GpuPod("w-" + std::to_string(i), "team-a", 1);
    ASSERT_TRUE(Run(pod));
    running.push_back(pod);
  }
  admission_->ApplyPolicy(PolicyBuilder()
                              .Team("team-a", "c")
                              .Quota(kP5, kGpu, 4, 0)
                              .Team("team-b", "c")
                              .Quota(kP5, kGpu, 8)
                              .Build());
  EXPECT_EQ(Usage("team-a"), 8);
  EXPECT_TRUE(kube_.evictions().empty());
  EXPECT_FALSE(Admitted(GpuPod("new-0", "team-a", 1)));
  for (int i = 0; i < 5; ++i) cluster_->OnPodDelete(running[i]);
  // new-0 waited first: it goes first, then there is room for new-1 too.
  EXPECT_FALSE(Admitted(GpuPod("new-1", "team-a", 1)));
  EXPECT_TRUE(Admitted(GpuPod("new-0", "team-a", 1)));
  EXPECT_FALSE(Admitted(GpuPod("new-2", "team-a", 1)));
}

// ---- workloads (DESIGN §3.7) ----

// Worker `i` of Kueue pod group `job` of team `team`, declaring `size` members of `gpus` GPUs.
PodBuilder Worker(const std::string& job, int i, int size, int gpus,
                  const std::string& team = "team-a", int64_t created_ms = 1000) {
  return PodBuilder(job + "-" + std::to_string(i))
      .Namespace("ns-" + team)
      .Gpus(gpus)
      .Created(created_ms)
      .Label("kueue.x-k8s.io/pod-group-name", job)
      .Annotation("kueue.x-k8s.io/pod-group-total-count", std::to_string(size));
}

class GangAdmissionTest : public AdmissionTest {
 protected:
  // See the definition below.
  void ExpectOwnerGangWaitsThenIsHeldWhole(ObjectKind kind, const std::string& owner_kind,
                                           const std::string& owner, const std::string& leader,
                                           const std::string& worker);
  void SetUp() override {
    Start(PolicyBuilder().Team("team-a", "c").Quota(kP5, kGpu, 8, 0).Build());
    AddNodes("p5", kP5, 2, 8);
  }
};

TEST_F(GangAdmissionTest, OfTwoGangsThatEachNeedTheWholeQuotaOneRunsWholeAndTheOtherNone) {
  // Submitted at once: the scheduler tries their workers in turns.
  int x = 0;
  int y = 0;
  for (int i = 0; i < 8; ++i) {
    x += Run(Worker("job-x", i, 8, 1)) ? 1 : 0;
    y += Run(Worker("job-y", i, 8, 1)) ? 1 : 0;
  }
  EXPECT_EQ(x, 8);
  EXPECT_EQ(y, 0);
  EXPECT_EQ(Usage("team-a"), 8);
  Verdict v = Filter(Worker("job-y", 0, 8, 1));
  EXPECT_EQ(v.failed_unresolvable.at("p5-0"),
            "ns-team-a/job-y (8 pods, 8 nvidia.com/gpu on ml.p5.48xlarge): needs 8, team-a may "
            "use 0 more");
  // job-x finishes: job-y runs whole.
  for (int i = 0; i < 8; ++i) cluster_->OnPodDelete(Worker("job-x", i, 8, 1));
  for (int i = 0; i < 8; ++i) EXPECT_TRUE(Run(Worker("job-y", i, 8, 1))) << i;
  EXPECT_EQ(Usage("team-a"), 8);
}

// Issue 34: a gang's quota is held only when all its members find room on the nodes at once —
// else it would hold quota idle, partly bound, until its timeout (a gang of 3 had 2 members
// running for a minute while the team it borrowed from waited for its nominal quota).
TEST_F(GangAdmissionTest, AGangIsHeldOnlyWhenAllItsMembersFindRoomAtOnce) {
  const auto occupy = [&](const std::string& name, const std::string& node, int gpus) {
    Pod pod = PodBuilder(name).Namespace("kube-system").Gpus(gpus);
    pod.node_name = node;
    pod.phase = PodPhase::kRunning;
    cluster_->OnPodUpsert(pod);
    return pod;
  };
  const Pod big = occupy("big", "p5-0", 6);
  occupy("small", "p5-1", 4);
  Verdict v = Filter(Worker("job-z", 0, 2, 3));
  EXPECT_TRUE(v.feasible.empty());
  EXPECT_EQ(v.failed_unresolvable.at("p5-1"),
            "team-a: ns-team-a/job-z: no room for all 2 pods of its gang on ml.p5.48xlarge nodes "
            "at once (room for 1)");
  EXPECT_EQ(decisions_.back().reason, "no_room");
  EXPECT_EQ(Usage("team-a"), 0);
  cluster_->OnPodDelete(big);
  EXPECT_TRUE(Run(Worker("job-z", 0, 2, 3)));
  EXPECT_EQ(Usage("team-a"), 6);
  EXPECT_TRUE(Run(Worker("job-z", 1, 2, 3)));
}

TEST_F(GangAdmissionTest, AVolcanoPodGroupsMinMemberMakesItsPodsOneGang) {
  cluster_->OnPodGroupUpsert("ns-team-a", "pg", "", 4);
  const auto member = [](int i) {
    return PodBuilder("pg-" + std::to_string(i))
        .Namespace("ns-team-a")
        .Gpus(2)
        .Annotation("scheduling.k8s.io/group-name", "pg");
  };
  ASSERT_TRUE(Run(member(0)));
  EXPECT_EQ(Usage("team-a"), 8);  // minMember 4 × 2 GPUs, held from the first member on
  EXPECT_FALSE(Admitted(GpuPod("lone", "team-a", 1)));
  for (int i = 1; i < 4; ++i) EXPECT_TRUE(Run(member(i))) << i;
  EXPECT_EQ(Usage("team-a"), 8);
}

TEST_F(GangAdmissionTest, AJobsParallelismMakesItsPodsOneGang) {
  cluster_->OnGangSizeUpsert(OwnerGangKey("job-uid"), 4);
  const auto member = [](int i) {
    return PodBuilder("train-" + std::to_string(i))
        .Namespace("ns-team-a")
        .Gpus(2)
        .Owner("Job", "train", "job-uid");
  };
  ASSERT_TRUE(Run(member(0)));
  EXPECT_EQ(Usage("team-a"), 8);  // parallelism 4 × 2 GPUs
  EXPECT_FALSE(Admitted(GpuPod("lone", "team-a", 1)));
  for (int i = 1; i < 4; ++i) EXPECT_TRUE(Run(member(i))) << i;
  cluster_->OnGangSizeDelete(OwnerGangKey("job-uid"));
}

// A job object of `kind` (watched, its informer synced) owning a 0-GPU leader and two 4-GPU
// workers: the members wait until the object is seen, then its size (3) makes them one gang whose
// quota is held whole.
void GangAdmissionTest::ExpectOwnerGangWaitsThenIsHeldWhole(ObjectKind kind,
                                                            const std::string& owner_kind,
                                                            const std::string& owner,
                                                            const std::string& leader,
                                                            const std::string& worker) {
  cluster_->OnSynced(kind);
  const int64_t now = clock_.NowMs();
  const std::string uid = owner + "-uid";
  const auto member = [&](const std::string& name, int gpus) {
    return PodBuilder(name)
        .Namespace("ns-team-a")
        .Gpus(gpus)
        .Created(now)
        .Owner(owner_kind, owner, uid);
  };
  cluster_->OnPodUpsert(member(leader, 0));
  for (int i = 0; i < 2; ++i) cluster_->OnPodUpsert(member(worker + std::to_string(i), 4));
  Verdict v = Filter(member(worker + "0", 4));
  EXPECT_EQ(v.failed_unresolvable.at("p5-0"),
            "ns-team-a/" + owner + ": waiting for its " + owner_kind +
                " to be observed: it declares how many pods the gang admits together");
  cluster_->OnGangSizeUpsert(OwnerGangKey(uid), 3);  // the leader + 2 workers
  ASSERT_TRUE(Run(member(worker + "0", 4)));
  EXPECT_EQ(Usage("team-a"), 8);  // 0 + 4 + 4, held for the whole job
  EXPECT_FALSE(Admitted(GpuPod("lone", "team-a", 1)));
  EXPECT_TRUE(Run(member(leader, 0)));
  EXPECT_TRUE(Run(member(worker + "1", 4)));
  EXPECT_EQ(Usage("team-a"), 8);
}

TEST_F(GangAdmissionTest, AnMPIJobsPodsWaitForItThenAreOneGangOfItsLauncherAndWorkers) {
  ExpectOwnerGangWaitsThenIsHeldWhole(ObjectKind::kMPIJob, "MPIJob", "mpi", "mpi-launcher",
                                      "mpi-worker-");
}

// A RayJob runs in the RayCluster it creates: the cluster's pods (owned by it) are one gang of
// its head and workers, sized by the RayCluster object.
TEST_F(GangAdmissionTest, ARayClustersPodsWaitForItThenAreOneGangOfItsHeadAndWorkers) {
  ExpectOwnerGangWaitsThenIsHeldWhole(ObjectKind::kRayCluster, "RayCluster", "rayjob-x-raycluster",
                                      "ray-head", "ray-worker-");
}

TEST_F(GangAdmissionTest, AGangOfMixedPodSetsReservesWhatEachMemberAsks) {
  // A launcher of 1 GPU and three workers of 2, all pending before the first filter: the gang
  // needs 7, not 4 × 1 (the launcher's) nor 4 × 2.
  cluster_->OnPodUpsert(Worker("mpi", 0, 4, 1, "team-a", 1000));
  for (int i = 1; i < 4; ++i) cluster_->OnPodUpsert(Worker("mpi", i, 4, 2, "team-a", 1000 + i));
  ASSERT_TRUE(Run(Worker("mpi", 0, 4, 1, "team-a", 1000)));
  EXPECT_EQ(Usage("team-a"), 7);
  for (int i = 1; i < 4; ++i) EXPECT_TRUE(Run(Worker("mpi", i, 4, 2, "team-a", 1000 + i))) << i;
  EXPECT_EQ(Usage("team-a"), 7);
  EXPECT_TRUE(Admitted(GpuPod("lone", "team-a", 1)));  // the eighth GPU was never held
}

TEST_F(GangAdmissionTest, WhatAGangHeldBeyondItsMembersGoesBackWhenItIsWhole) {
  // A worker of 2 GPUs comes first; its launcher (1 GPU) is not created yet and is counted as
  // the largest member known: 4 are held. Once the launcher took its 1, the gang is whole and
  // the 1 GPU held beyond it goes back.
  ASSERT_TRUE(Run(Worker("mpi", 1, 2, 2)));
  EXPECT_EQ(Usage("team-a"), 4);
  ASSERT_TRUE(Run(Worker("mpi", 0, 2, 1)));
  EXPECT_EQ(Usage("team-a"), 3);
  EXPECT_FALSE(book_->FindGang("kueue/ns-team-a/mpi")->holds_quota());
}

TEST_F(GangAdmissionTest, AMemberBoundAfterItsAssumedReservationExpiredRejoinsItsGang) {
  // m0 is filtered (its gang holds 8), its bind comes after its own reservation expired: its
  // share went back to the gang, and the bind takes it again — the gang still holds 8 in all.
  cluster_->OnPodUpsert(Worker("job-x", 0, 4, 2));  // the informer saw it pending
  ASSERT_FALSE(Filter(Worker("job-x", 0, 4, 2)).feasible.empty());
  clock_.Advance(Admission::Options{}.assume_ttl_ms + 1);
  (void)book_->ExpireAssumed();
  EXPECT_EQ(Usage("team-a"), 8);
  const Pod m0 = Worker("job-x", 0, 4, 2);
  EXPECT_TRUE(admission_->Bind(BindArgs{m0.name, m0.namespace_, m0.uid, nodes_[0]}).error.empty());
  EXPECT_EQ(Usage("team-a"), 8);
  EXPECT_EQ(book_->FindGang("kueue/ns-team-a/job-x")->holders, 1);
  for (int i = 1; i < 4; ++i) EXPECT_TRUE(Run(Worker("job-x", i, 4, 2))) << i;
}

TEST_F(GangAdmissionTest, AGangLargerThanItsTeamMayEverUseIsRefusedAtOnceWithThatReason) {
  for (int i = 0; i < 16; ++i) cluster_->OnPodUpsert(Worker("huge", i, 16, 1));
  Verdict v = Filter(Worker("huge", 0, 16, 1));
  EXPECT_TRUE(v.feasible.empty());
  EXPECT_EQ(v.failed_unresolvable.at("p5-0"),
            "ns-team-a/huge (16 pods, 16 nvidia.com/gpu on ml.p5.48xlarge): needs 16, more than "
            "team-a may ever use (nominal 8 + borrowing limit 0): it can never be admitted");
  EXPECT_EQ(Usage("team-a"), 0);
}

TEST_F(GangAdmissionTest, AGangWhoseEstimateIsTooLargeIsNotCalledImpossibleWhileMembersAreMissing) {
  // A launcher of 2 GPUs alone: its six workers, not created yet, are counted as 2 each (the
  // largest known), 14 > 8 — but workers of 1 would fit, so it is not "never".
  Verdict v = Filter(Worker("mpi", 0, 7, 2));
  EXPECT_TRUE(v.feasible.empty());
  EXPECT_EQ(v.failed_unresolvable.at("p5-0"),
            "ns-team-a/mpi (7 pods, 14 nvidia.com/gpu on ml.p5.48xlarge): needs 14, more than "
            "team-a may ever use (nominal 8 + borrowing limit 0), counting its 6 pods not created "
            "yet as large as its largest");
  // Its workers appear: 2 + 6 × 1 fits.
  for (int i = 1; i < 7; ++i) cluster_->OnPodUpsert(Worker("mpi", i, 7, 1));
  EXPECT_TRUE(Run(Worker("mpi", 0, 7, 2)));
  EXPECT_EQ(Usage("team-a"), 8);
}

// A PodGroup member seen before its PodGroup (the pods' and the PodGroups' informers race).
PodBuilder PodGroupMember(const std::string& group, int i, int gpus, int64_t created_ms) {
  return PodBuilder(group + "-" + std::to_string(i))
      .Namespace("ns-team-a")
      .Gpus(gpus)
      .Created(created_ms)
      .Annotation("scheduling.k8s.io/group-name", group);
}

TEST_F(GangAdmissionTest, AMemberWaitsForItsPodGroupAndItsGangCountsTheMembersSeenBefore) {
  cluster_->OnSynced(ObjectKind::kPodGroup);
  const int64_t now = clock_.NowMs();
  // A launcher of 1 GPU and three workers of 2, all pending before their PodGroup is seen.
  cluster_->OnPodUpsert(PodGroupMember("pg", 0, 1, now));
  for (int i = 1; i < 4; ++i) cluster_->OnPodUpsert(PodGroupMember("pg", i, 2, now));
  Verdict v = Filter(PodGroupMember("pg", 0, 1, now));
  EXPECT_TRUE(v.feasible.empty());
  EXPECT_EQ(v.failed_unresolvable.at("p5-0"),
            "ns-team-a/pg: waiting for its PodGroup to be observed: it declares how many pods the "
            "gang admits together");
  EXPECT_EQ(decisions_.back().reason, "awaiting_gang");
  EXPECT_EQ(Usage("team-a"), 0);
  // The PodGroup arrives: the waiting members are its gang now, and the first reserves 1 + 3 × 2
  // (not 4 × 1, as when the others still waited as lone pods).
  cluster_->OnPodGroupUpsert("ns-team-a", "pg", "", 4);
  ASSERT_TRUE(Run(PodGroupMember("pg", 0, 1, now)));
  EXPECT_EQ(Usage("team-a"), 7);
  for (int i = 1; i < 4; ++i) EXPECT_TRUE(Run(PodGroupMember("pg", i, 2, now))) << i;
  EXPECT_EQ(Usage("team-a"), 7);
}

TEST_F(GangAdmissionTest, AMemberWhosePodGroupNeverComesIsDecidedAloneAfterTheWait) {
  cluster_->OnSynced(ObjectKind::kPodGroup);
  const int64_t now = clock_.NowMs();
  EXPECT_FALSE(Admitted(PodGroupMember("pg", 0, 2, now)));
  clock_.Advance(WorkloadRef::kAwaitObjectMs);
  EXPECT_TRUE(Run(PodGroupMember("pg", 0, 2, now)));
  EXPECT_EQ(Usage("team-a"), 2);
}

TEST_F(GangAdmissionTest, WithoutAPodGroupInformerAMemberIsDecidedOnWhatItSays) {
  // Nothing lists PodGroups (not synced): nothing will declare the size, so no waiting.
  EXPECT_TRUE(Run(PodGroupMember("pg", 0, 2, clock_.NowMs())));
  EXPECT_EQ(Usage("team-a"), 2);
}

// In a namespace no team owns, a PodGroup's queue decides its members' team (a Volcano team's
// queues serve any such namespace): members seen before it are decided with it once it comes.
TEST_F(GangAdmissionTest, APodGroupSeenAfterItsMembersMovesThemToTheTeamOfItsQueue) {
  PolicyBuilder builder;
  builder.Team("team-a", "c").Quota(kP5, kGpu, 8, 0).Team("team-b", "c").Quota(kP5, kGpu, 8, 0);
  builder.mutable_policy().volcano_queues["q-b"] = "team-b";
  builder.mutable_policy().teams[1].namespace_selector = scheduler::model::LabelSelector{};
  Start(builder.Build());
  AddNodes("p5", kP5, 1, 8);
  cluster_->OnSynced(ObjectKind::kPodGroup);
  cluster_->OnNamespaceUpsert("shared", {});
  auto member = [&](int i) {
    return PodGroupMember("pg", i, 1, clock_.NowMs()).Namespace("shared");
  };
  for (int i = 0; i < 2; ++i) cluster_->OnPodUpsert(member(i));
  EXPECT_EQ(cluster_->pending().CountsOf(TeamNames().Intern("team-b")).total, 0u);
  cluster_->OnPodGroupUpsert("shared", "pg", "q-b", 2);
  ASSERT_TRUE(Run(member(0)));
  EXPECT_EQ(Usage("team-b"), 2);  // held for both members
  EXPECT_EQ(Usage("team-a"), 0);
}

// The PodGroup of pods in team-a's namespace names team-b's queue: they leave team-a's queue and
// join no other; their filter says why.
TEST_F(GangAdmissionTest, APodGroupNamingAnotherTeamsQueueTakesItsMembersOutOfEveryQueue) {
  PolicyBuilder builder;
  builder.Team("team-a", "c").Quota(kP5, kGpu, 8, 0).Team("team-b", "c").Quota(kP5, kGpu, 8, 0);
  builder.mutable_policy().volcano_queues["q-b"] = "team-b";
  Start(builder.Build());
  AddNodes("p5", kP5, 1, 8);
  cluster_->OnSynced(ObjectKind::kPodGroup);
  for (int i = 0; i < 2; ++i) cluster_->OnPodUpsert(PodGroupMember("pg", i, 1, clock_.NowMs()));
  EXPECT_EQ(cluster_->pending().CountsOf(TeamNames().Intern("team-a")).total, 2u);
  cluster_->OnPodGroupUpsert("ns-team-a", "pg", "q-b", 2);
  EXPECT_EQ(cluster_->pending().CountsOf(TeamNames().Intern("team-a")).total, 0u);
  EXPECT_EQ(cluster_->pending().CountsOf(TeamNames().Intern("team-b")).total, 0u);
  Verdict v = Filter(PodGroupMember("pg", 0, 1, clock_.NowMs()));
  EXPECT_TRUE(v.feasible.empty());
  EXPECT_NE(v.failed_unresolvable.at("p5-0").find("names PodGroup ns-team-a/pg (Volcano queue q-b) "
                                                  "of team team-b"),
            std::string::npos)
      << v.failed_unresolvable.at("p5-0");
  EXPECT_EQ(Usage("team-b"), 0);
}

TEST_F(GangAdmissionTest, MembersArrivingOverThirtySecondsAreAdmittedWhole) {
  ASSERT_TRUE(Run(Worker("job-x", 0, 4, 2)));
  EXPECT_EQ(Usage("team-a"), 8);  // held for all four
  // A lone pod arriving meanwhile finds no quota: it is held for the gang.
  EXPECT_FALSE(Admitted(GpuPod("lone", "team-a", 1)));
  for (int i = 1; i < 4; ++i) {
    clock_.Advance(10'000);
    EXPECT_TRUE(Run(Worker("job-x", i, 4, 2))) << i;
  }
  EXPECT_EQ(Usage("team-a"), 8);
}

TEST_F(GangAdmissionTest, AGangWhoseMembersDoNotComeGivesItsQuotaBackAfterTheTimeout) {
  ASSERT_TRUE(Run(Worker("job-x", 0, 4, 2)));
  clock_.Advance(book_->ledger().policy()->gang_timeout_seconds * 1000 + 1);
  (void)book_->ExpireAssumed();
  EXPECT_EQ(Usage("team-a"), 2);  // the running member only
  EXPECT_TRUE(Admitted(GpuPod("lone", "team-a", 6)));
}

TEST_F(GangAdmissionTest, AMemberOfAGangHoldingQuotaIsNotHeldBackByQueueOrder) {
  ASSERT_TRUE(Run(Worker("job-x", 0, 4, 2)));
  // A higher-ranked pod arrives after the gang was admitted: the gang's members still come in.
  cluster_->OnPodUpsert(PodBuilder("urgent").Namespace("ns-team-a").Gpus(2).Priority(1000));
  EXPECT_TRUE(Run(Worker("job-x", 1, 4, 2)));
}

TEST_F(GangAdmissionTest, ItsOwnPendingMembersNeverHoldAGangBack) {
  // The informer saw every worker pending before any filter: none waits behind a sibling.
  for (int i = 0; i < 4; ++i) cluster_->OnPodUpsert(Worker("job-x", i, 4, 2, "team-a", 1000 + i));
  EXPECT_TRUE(Run(Worker("job-x", 3, 4, 2, "team-a", 1003)));
}

TEST_F(GangAdmissionTest, APodWaitsBehindAHigherRankedGangThatNeedsTheQuotaWhole) {
  // A gang of 4 × 2 GPUs ranks ahead (BestEffortFIFO): it needs all 8, so a 1-GPU pod that
  // would fit alone waits for it.
  cluster_->OnPodUpsert(Worker("job-x", 0, 4, 2).Priority(100));
  Verdict v = Filter(PodBuilder("small").Namespace("ns-team-a").Gpus(1).Priority(1));
  EXPECT_TRUE(v.feasible.empty());
  EXPECT_EQ(v.failed_unresolvable.at("p5-0"),
            "team-a: waiting behind higher-ranked gang of pod ns-team-a/job-x-0");
}

// ---- topology slices (issue 37) ----

constexpr char kLayer1[] = "topology.k8s.aws/network-node-layer-1";
constexpr char kLayer2[] = "topology.k8s.aws/network-node-layer-2";
constexpr char kLayer3[] = "topology.k8s.aws/network-node-layer-3";

// spine-a holds 8 × 8-GPU pods on 5 + 3 nodes of two layer-3 domains (a-0, a-1), spine-b on
// 4 + 4 + 4 (b-0, b-1, b-2); nodes are asked about in that order, and each member binds to the
// first node it is offered.
class SliceAdmissionTest : public AdmissionTest {
 protected:
  void SetUp() override {
    Start(PolicyBuilder().Team("team-a", "c").Quota(kP5, kGpu, 256, 0).Build());
    Nodes("spine-a", "a-0", 5);
    Nodes("spine-a", "a-1", 3);
    Nodes("spine-b", "b-0", 4);
    Nodes("spine-b", "b-1", 4);
    Nodes("spine-b", "b-2", 4);
  }
  void Nodes(const std::string& l2, const std::string& l3, int n) {
    for (int i = 0; i < n; ++i) {
      const std::string name = l3 + "-" + std::to_string(i);
      cluster_->OnNodeUpsert(NodeBuilder(name)
                                 .InstanceType(kP5)
                                 .Allocatable(kGpu, "8")
                                 .Label(kLayer1, "l1")
                                 .Label(kLayer2, l2)
                                 .Label(kLayer3, l3));
      nodes_.push_back(name);
    }
  }
  // Member i of an 8-pod gang asking for its layer-2 domain, in slices of 4 at layer 3 when
  // `sliced`.
  static Pod Member(const std::string& job, int i, bool sliced) {
    PodBuilder b = Worker(job, i, 8, 8);
    b.Annotation("kueue.x-k8s.io/podset-required-topology", kLayer2);
    if (sliced) {
      b.Annotation("kueue.x-k8s.io/podset-slice-required-topology", kLayer3);
      b.Annotation("kueue.x-k8s.io/podset-slice-size", "4");
    }
    return b;
  }
  // PyTorchJob ns-team-a/train (uid job-uid) of `size` pods with `annotations`, known to the
  // cluster; its gang's key.
  std::string OwnerJob(int size, model::Labels annotations) {
    const std::string workload = OwnerGangKey("job-uid");
    cluster_->OnGangSizeUpsert(workload, size);
    auto job = std::make_shared<model::JobControl>();
    job->kind = "PyTorchJob";
    job->ns = "ns-team-a";
    job->name = "train";
    job->uid = "job-uid";
    job->workload = workload;
    job->annotations = std::move(annotations);
    cluster_->OnJobUpsert(job);
    return workload;
  }
  // The layer-3 domain ("a-0") of each member, in order, as the members ran.
  std::vector<std::string> RunAll(const std::function<Pod(int)>& member) {
    std::vector<std::string> where;
    for (int i = 0; i < 8; ++i) {
      const Pod pod = member(i);
      Verdict v = Filter(pod);
      if (v.feasible.empty()) {
        where.push_back("refused: " + (v.failed_unresolvable.empty()
                                           ? v.error
                                           : v.failed_unresolvable.begin()->second));
        continue;
      }
      EXPECT_TRUE(Run(pod)) << i;
      where.push_back(v.feasible[0].substr(0, v.feasible[0].rfind('-')));
    }
    return where;
  }
};

// With slices the gang goes to spine-b, each slice whole in one layer-3 domain, though spine-a is
// free and tighter; without slices the next gang takes spine-a, the tightest that holds 8 pods,
// and its second slice of 4 (members 4..7) is split over a-0 and a-1.
TEST_F(SliceAdmissionTest, EachSliceOfAGangLandsWholeInOneDomain) {
  const std::vector<std::string> sliced =
      RunAll([](int i) { return Member("sliced", i, /*sliced=*/true); });
  EXPECT_EQ(sliced,
            (std::vector<std::string>{"b-0", "b-0", "b-0", "b-0", "b-1", "b-1", "b-1", "b-1"}));
  const std::vector<std::string> plain =
      RunAll([](int i) { return Member("plain", i, /*sliced=*/false); });
  EXPECT_EQ(plain,
            (std::vector<std::string>{"a-0", "a-0", "a-0", "a-0", "a-0", "a-1", "a-1", "a-1"}));
}

// A member filtered again before it binds keeps its slice domain; a member that left (deleted:
// its reservation released) frees its place for the pod that replaces it, in the same slice.
TEST_F(SliceAdmissionTest, AMemberKeepsItsPlaceAndAReplacementTakesTheFreedOne) {
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(Run(Member("g", i, true))) << i;
  // Member 5 is offered b-1 (the slice member 4 began), twice.
  EXPECT_EQ(Filter(Member("g", 5, true)).feasible.front().substr(0, 3), "b-1");
  EXPECT_EQ(Filter(Member("g", 5, true)).feasible.front().substr(0, 3), "b-1");
  // Member 1 (in b-0) is deleted; its replacement (a new uid) goes back to b-0 once the grace a
  // filter has to reserve is over — not to b-1, whose slice has its places taken by 4, 5.
  const Pod gone = Member("g", 1, true);
  cluster_->OnPodDelete(gone);
  clock_.Advance(GangSlices::kGraceMs);
  Pod replacement = Member("g", 1, true);
  replacement.uid = "replacement-uid";
  replacement.name = "g-1b";
  const Verdict v = Filter(replacement);
  ASSERT_FALSE(v.feasible.empty());
  EXPECT_EQ(v.feasible.front().substr(0, 3), "b-0");
  for (const std::string& node : v.feasible) EXPECT_EQ(node.substr(0, 3), "b-0") << node;
  EXPECT_EQ(v.failed_unresolvable.at("b-1-3"),
            "taskgov placed ns-team-a/g-1b in a slice of 4 pods of ns-team-a/g in "
            "network-node-layer-3 domain b-0");
}

// A request Kueue's webhook would reject is refused, with the annotation and its value, under
// the refusal reason "topology" — never placed another way.
TEST_F(SliceAdmissionTest, AnInvalidRequestIsRefusedSayingWhy) {
  struct Case {
    const char* name;
    std::map<std::string, std::string> annotations;
    std::string reason;
  };
  const std::vector<Case> cases = {
      {"unconstrained not a bool",
       {{"kueue.x-k8s.io/podset-unconstrained-topology", "yes"}},
       "ns-team-a/bad: invalid topology request: "
       "kueue.x-k8s.io/podset-unconstrained-topology: \"yes\" is not a boolean"},
      {"slices larger than the gang",
       {{"kueue.x-k8s.io/podset-slice-required-topology", kLayer3},
        {"kueue.x-k8s.io/podset-slice-size", "9"}},
       "ns-team-a/bad: invalid topology request: kueue.x-k8s.io/podset-slice-size: "
       "\"9\" must not be greater than the gang's 8 pods"},
      {"a slice above the podset",
       {{"kueue.x-k8s.io/podset-required-topology", kLayer3},
        {"kueue.x-k8s.io/podset-slice-required-topology", kLayer2},
        {"kueue.x-k8s.io/podset-slice-size", "4"}},
       "ns-team-a/bad: invalid topology request: podset slice topology "
       "topology.k8s.aws/network-node-layer-2 is above the podset topology "
       "topology.k8s.aws/network-node-layer-3"},
  };
  for (const Case& c : cases) {
    PodBuilder b = Worker("bad", 0, 8, 8);
    for (const auto& [key, value] : c.annotations) b.Annotation(key, value);
    decisions_.clear();
    const Verdict v = Filter(b);
    EXPECT_TRUE(v.feasible.empty()) << c.name;
    ASSERT_FALSE(v.failed_unresolvable.empty()) << c.name;
    EXPECT_EQ(v.failed_unresolvable.begin()->second.substr(0, c.reason.size()), c.reason) << c.name;
    ASSERT_EQ(decisions_.size(), 1u);
    EXPECT_EQ(decisions_[0].reason, "topology") << c.name;
    EXPECT_EQ(Usage("team-a"), 0) << c.name;
  }
  // A lone pod's invalid request too.
  decisions_.clear();
  EXPECT_FALSE(Admitted(PodBuilder("lone")
                            .Namespace("ns-team-a")
                            .Gpus(8)
                            .Annotation("kueue.x-k8s.io/podset-unconstrained-topology", "maybe")));
  EXPECT_EQ(decisions_.at(0).reason, "topology");
}

// Pods without annotations take their owner job's (`hyp` writes them on the job's metadata as
// well as its pod template): the slices hold as if the pods carried them.
TEST_F(SliceAdmissionTest, AGangsOwnerJobsAnnotationsPlaceItsPods) {
  const std::string workload =
      OwnerJob(8, {{"kueue.x-k8s.io/podset-required-topology", kLayer2},
                   {"kueue.x-k8s.io/podset-slice-required-topology", kLayer3},
                   {"kueue.x-k8s.io/podset-slice-size", "4"}});
  const std::vector<std::string> where = RunAll([](int i) -> Pod {
    return PodBuilder("train-" + std::to_string(i))
        .Namespace("ns-team-a")
        .Gpus(8)
        .Owner("PyTorchJob", "train", "job-uid");
  });
  EXPECT_EQ(where,
            (std::vector<std::string>{"b-0", "b-0", "b-0", "b-0", "b-1", "b-1", "b-1", "b-1"}));
  const std::optional<TopologyPlacement> placed = admission_->PlacementOf(workload);
  ASSERT_TRUE(placed.has_value());
  EXPECT_EQ(placed->level, kLayer2);
  EXPECT_EQ(placed->domain, "spine-b");
}

// A preferred gang whose annotation is on its owner job only: its first member's filter places
// it in the tightest layer-2 domain that holds it (spine-a), and prioritize ranks that domain's
// nodes above every other, as for a gang whose pods carry the annotation.
TEST_F(SliceAdmissionTest, APreferredGangsOwnerJobAnnotationRanksItsDomainFirst) {
  const std::string workload = OwnerJob(4, {{"kueue.x-k8s.io/podset-preferred-topology", kLayer2}});
  const Pod pod =
      PodBuilder("train-0").Namespace("ns-team-a").Gpus(8).Owner("PyTorchJob", "train", "job-uid");
  ASSERT_FALSE(Filter(pod).feasible.empty());
  const std::optional<TopologyPlacement> placed = admission_->PlacementOf(workload);
  ASSERT_TRUE(placed.has_value());
  EXPECT_EQ(placed->domain, "spine-a");
  FilterArgs args;
  args.pod = pod;
  args.node_names = nodes_;
  for (const HostPriority& h : admission_->Prioritize(args)) {
    if (h.host.starts_with("a-")) {
      EXPECT_GE(h.score, 6) << h.host;
    } else {
      EXPECT_LE(h.score, 4) << h.host;
    }
  }
}

}  // namespace
}  // namespace taskgov::scheduler::decisions
