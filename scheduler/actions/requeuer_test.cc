// Requeuer: the pods whose filter refusal lapsed are asked for again — once the filter would admit
// them, a gang's every refused member, with a doubling gap while they stay refused — and nothing
// else is.

#include "scheduler/actions/requeuer.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "scheduler/common/time_format.h"
#include "scheduler/testing/admission_fixture.h"
#include "scheduler/testing/builders.h"
#include "scheduler/testing/fake_kube_actions.h"

namespace taskgov::scheduler::actions {
namespace {

using model::Pod;
using testing::FakeKubeActions;
using testing::PodBuilder;
using testing::PolicyBuilder;

constexpr char kP5[] = "ml.p5.48xlarge";
constexpr char kGpu[] = "nvidia.com/gpu";

class RequeuerTest : public testing::AdmissionFixture {
 protected:
  // quiet_ms 0: a pod refused a moment ago is judged (QuietPodsBeingTriedAreNotJudged: not so).
  void Start(model::PolicyPtr policy, int64_t quiet_ms = 0) {
    AdmissionFixture::Start(std::move(policy));
    Requeuer::Options options;
    options.quiet_ms = quiet_ms;
    requeuer_ = std::make_unique<Requeuer>(
        cluster_.get(), &kube_,
        [this](const Pod& pod, bool known_to_wait) {
          return admission_->OutlookOf(pod, known_to_wait);
        },
        &clock_, options);
  }
  // A filter call over every node; whether it admitted the pod.
  bool Filter(const Pod& pod) {
    FilterArgs args;
    args.pod = pod;
    args.node_names = nodes_;
    const FilterResult r = admission_->Filter(args);
    cluster_->pending().Flush();
    return !r.feasible.empty();
  }
  // The pods asked for so far, as ns/name.
  std::vector<std::string> Asked() const {
    std::vector<std::string> out;
    for (const FakeKubeActions::RequeueCall& c : kube_.requeues())
      out.push_back(c.ns + "/" + c.name);
    return out;
  }
  static Pod Member(const std::string& name, const std::string& gang, int size, int gpus) {
    return PodBuilder(name)
        .Namespace("ns-team-a")
        .Gpus(gpus)
        .Priority(1)
        .Label("kueue.x-k8s.io/pod-group-name", gang)
        .Annotation("kueue.x-k8s.io/pod-group-total-count", std::to_string(size));
  }

  // team-a (4 GPUs, may borrow 2) and team-b (8) of one cohort, on two 8-GPU nodes.
  void StartBorrowing() {
    Start(PolicyBuilder()
              .Team("team-a", "c")
              .Quota(kP5, kGpu, 4, /*borrow=*/2)
              .Team("team-b", "c")
              .Quota(kP5, kGpu, 8)
              .Build());
    AddNodes("p5", kP5, 2, 8);
  }
  // team-a alone (8 GPUs, StrictFIFO) on one 8-GPU node.
  void StartStrictFifo(int64_t quiet_ms = 0) {
    Start(PolicyBuilder()
              .Team("team-a", "c")
              .Quota(kP5, kGpu, 8, 0)
              .Queueing(model::QueueingStrategy::kStrictFIFO)
              .Build(),
          quiet_ms);
    AddNodes("p5", kP5, 1, 8);
  }
  // team-a's 6-GPU gang of one, disrupted a moment ago (it may borrow again in 60 s), refused now.
  Pod RefusedBorrower() {
    const Pod train = Member("train-r1", "train", 1, 6);
    cluster_->disruptions().Note(model::GangOf(train), clock_.NowMs());
    cluster_->OnPodUpsert(train);
    EXPECT_FALSE(Filter(train));
    return train;
  }
  // Under StrictFIFO "small" is refused behind "big", which its user then deletes while pending:
  // small's refusal lapsed with no assigned pod changed.
  void RefusedBehindADeletedHead() {
    const Pod big = PodBuilder("big").Namespace("ns-team-a").Gpus(8).Priority(100);
    const Pod small = PodBuilder("small").Namespace("ns-team-a").Gpus(2);
    cluster_->OnPodUpsert(big);
    cluster_->OnPodUpsert(small);
    EXPECT_FALSE(Filter(small));
    cluster_->OnPodDelete(big);
  }

  FakeKubeActions kube_;
  std::unique_ptr<Requeuer> requeuer_;
};

TEST_F(RequeuerTest, AsksForABorrowerOnceItsWaitAfterADisruptionLapsesAndAgainAfterAGrowingGap) {
  StartBorrowing();
  const Pod train = RefusedBorrower();

  // Refused for a reason that has not lapsed: judged, not asked for.
  Requeuer::RunReport r = requeuer_->RunOnce();
  EXPECT_EQ(r.refused, 1u);
  EXPECT_EQ(r.judged, 1u);
  EXPECT_EQ(r.requeued, 0u);
  EXPECT_TRUE(kube_.requeues().empty());

  // The wait lapsed, and no cluster event would have told kube-scheduler so: asked for, with the
  // time as the annotation's value (every request changes the pod).
  clock_.Advance(60'000);
  r = requeuer_->RunOnce();
  EXPECT_EQ(r.requeued, 1u);
  ASSERT_EQ(Asked(), std::vector<std::string>{"ns-team-a/train-r1"});
  EXPECT_EQ(kube_.requeues()[0].uid, train.uid);
  EXPECT_EQ(kube_.requeues()[0].at, common::FormatMicroTime(clock_.NowMs() * 1000));

  // Not tried yet (still refused): asked again after 2 s, then 4 s, not sooner.
  EXPECT_EQ(requeuer_->RunOnce().requeued, 0u);
  clock_.Advance(2'000);
  EXPECT_EQ(requeuer_->RunOnce().requeued, 1u);
  clock_.Advance(3'000);
  EXPECT_EQ(requeuer_->RunOnce().requeued, 0u);
  clock_.Advance(1'000);
  EXPECT_EQ(requeuer_->RunOnce().requeued, 1u);
  EXPECT_EQ(requeuer_->stats().requeued, 3u);

  // Tried and admitted: nothing is refused any more.
  ASSERT_TRUE(Filter(train));
  clock_.Advance(60'000);
  r = requeuer_->RunOnce();
  EXPECT_EQ(r.refused, 0u);
  EXPECT_EQ(r.requeued, 0u);
  EXPECT_EQ(kube_.requeues().size(), 3u);
}

// Pods that can never be admitted rank above one whose wait lapses: judged once, they are not
// judged again while nothing changes, so the run's judging reaches the pod below them.
TEST_F(RequeuerTest, HopelessPodsRankedAboveDoNotUseUpTheJudgingOfEveryRun) {
  StartBorrowing();
  for (int i = 0; i < 4; ++i) {  // 8 GPUs each, above team-a's 4 + 2
    const Pod huge = PodBuilder("huge-" + std::to_string(i))
                         .Namespace("ns-team-a")
                         .Gpus(8)
                         .Priority(100)
                         .Created(1000 + i);
    cluster_->OnPodUpsert(huge);
    ASSERT_FALSE(Filter(huge));
  }
  const Pod train = RefusedBorrower();
  int64_t asked_at = -1;
  for (int s = 0; s <= 100 && asked_at < 0; ++s) {
    (void)requeuer_->RunOnce();
    if (!kube_.requeues().empty()) asked_at = s;
    clock_.Advance(1'000);
  }
  // Its wait lapses at 60 s; it is judged again at most 30 s (max_recheck_ms) after its last
  // judgement, once the hopeless pods are set aside.
  EXPECT_GE(asked_at, 60);
  EXPECT_LE(asked_at, 92);
  EXPECT_EQ(Asked(), std::vector<std::string>{"ns-team-a/train-r1"});
}

// A pod a filter call refused a moment ago is being tried by kube-scheduler: it is judged only
// once no filter call has refused it for quiet_ms.
TEST_F(RequeuerTest, PodsRefusedAMomentAgoAreNotJudged) {
  StartStrictFifo(/*quiet_ms=*/3'000);
  RefusedBehindADeletedHead();
  clock_.Advance(2'000);
  Requeuer::RunReport r = requeuer_->RunOnce();
  EXPECT_EQ(r.refused, 1u);
  EXPECT_EQ(r.judged, 0u);
  clock_.Advance(1'000);
  r = requeuer_->RunOnce();
  EXPECT_EQ(r.judged, 1u);
  EXPECT_EQ(Asked(), std::vector<std::string>{"ns-team-a/small"});
}

TEST_F(RequeuerTest, AsksForEveryRefusedMemberOfAGangOnceTheHeadAheadOfItIsDeleted) {
  StartStrictFifo();
  const Pod big = PodBuilder("big").Namespace("ns-team-a").Gpus(8).Priority(100);
  cluster_->OnPodUpsert(big);
  const Pod m0 = Member("gang-0", "gang", 2, 2), m1 = Member("gang-1", "gang", 2, 2);
  for (const Pod& m : {m0, m1}) {
    cluster_->OnPodUpsert(m);
    ASSERT_FALSE(Filter(m));  // waiting behind big (StrictFIFO)
  }
  Requeuer::RunReport r = requeuer_->RunOnce();
  EXPECT_EQ(r.refused, 2u);
  EXPECT_EQ(r.judged, 1u);  // the gang, once
  EXPECT_TRUE(kube_.requeues().empty());

  // Its user deletes big while it is pending: no assigned pod changed, so before v1.32 nothing
  // would retry the gang. Judged again once recheck_ms passed since its last judgment.
  cluster_->OnPodDelete(big);
  clock_.Advance(2'000);
  r = requeuer_->RunOnce();
  EXPECT_EQ(r.judged, 1u);
  EXPECT_EQ(r.requeued, 2u);
  EXPECT_EQ(Asked(), (std::vector<std::string>{"ns-team-a/gang-0", "ns-team-a/gang-1"}));
  EXPECT_TRUE(Filter(m0));
  EXPECT_TRUE(Filter(m1));
}

// A pod judged not admissible is not judged again for recheck_ms (2 s), however its team's queue
// or flavors change meanwhile (on a busy cluster they change with nearly every bind, and each
// judgment costs a filter call's work); then the change is seen.
TEST_F(RequeuerTest, APodJudgedAMomentAgoIsNotJudgedAgainBeforeTheRecheckWhateverChanged) {
  StartStrictFifo();
  const Pod big = PodBuilder("big").Namespace("ns-team-a").Gpus(8).Priority(100);
  const Pod small = PodBuilder("small").Namespace("ns-team-a").Gpus(2);
  cluster_->OnPodUpsert(big);
  cluster_->OnPodUpsert(small);
  ASSERT_FALSE(Filter(small));  // waiting behind big (StrictFIFO)
  Requeuer::RunReport r = requeuer_->RunOnce();
  EXPECT_EQ(r.judged, 1u);
  EXPECT_EQ(r.requeued, 0u);

  cluster_->OnPodDelete(big);  // its team's queue changed: small could go now
  clock_.Advance(1'999);
  r = requeuer_->RunOnce();
  EXPECT_EQ(r.refused, 1u);
  EXPECT_EQ(r.judged, 0u);
  EXPECT_TRUE(kube_.requeues().empty());
  clock_.Advance(1);
  r = requeuer_->RunOnce();
  EXPECT_EQ(r.judged, 1u);
  EXPECT_EQ(Asked(), std::vector<std::string>{"ns-team-a/small"});
}

TEST_F(RequeuerTest, LeavesAloneWhatTheFilterStillRefusesAndPodsOnlyFilterCallsKnow) {
  Start(PolicyBuilder()
            .Team("team-a", "c")
            .Quota(kP5, kGpu, 4, 0)
            .Team("team-b", "c")
            .Quota(kP5, kGpu, 8)
            .Build());
  AddNodes("p5", kP5, 2, 8);
  // Over its team's quota with no borrowing: refused for as long as the policy stands.
  const Pod huge = PodBuilder("huge").Namespace("ns-team-a").Gpus(6);
  cluster_->OnPodUpsert(huge);
  ASSERT_FALSE(Filter(huge));
  // Refused while team-b's quota was in use, then admissible; but the informer never reported
  // it, so there is no pod to update.
  const Pod run = PodBuilder("run")
                      .Namespace("ns-team-b")
                      .Gpus(8)
                      .OnNode("p5-0")
                      .Phase(model::PodPhase::kRunning);
  cluster_->OnPodUpsert(run);
  const Pod ghost = PodBuilder("ghost").Namespace("ns-team-b").Gpus(8).Priority(-1);
  ASSERT_FALSE(Filter(PodBuilder("more").Namespace("ns-team-b").Gpus(8)));
  ASSERT_FALSE(Filter(ghost));
  cluster_->OnPodDelete(run);
  for (int i = 0; i < 5; ++i) {
    const Requeuer::RunReport r = requeuer_->RunOnce();
    EXPECT_EQ(r.refused, 3u);
    EXPECT_EQ(r.requeued, 0u);
    clock_.Advance(10'000);
  }
  EXPECT_TRUE(kube_.requeues().empty());
}

// The requeuer's judgment is Explain's outlook, but a pod its last judgment found waiting that no
// node has room for is still waiting: nothing is explained (every flavor's room check would fail).
TEST_F(RequeuerTest, APodKnownToWaitThatNoNodeHasRoomForIsJudgedWaitingUnexplained) {
  Start(PolicyBuilder().Team("team-a", "c").Quota(kP5, kGpu, 4, 0).Build());
  AddNodes("p5", kP5, 1, 8);
  // Over its team's quota with no borrowing: it can never run as the policy stands.
  const Pod huge = PodBuilder("huge").Namespace("ns-team-a").Gpus(6);
  cluster_->OnPodUpsert(huge);
  EXPECT_EQ(admission_->OutlookOf(huge, /*known_to_wait=*/false), decisions::Outlook::kNeverFits);
  EXPECT_EQ(admission_->OutlookOf(huge, /*known_to_wait=*/true), decisions::Outlook::kNeverFits)
      << "a node has room: explained";
  // With the node full, the rules are not explained when the caller knows it waits.
  cluster_->OnPodUpsert(PodBuilder("other")
                            .Namespace("ns-team-b")
                            .Gpus(8)
                            .OnNode("p5-0")
                            .Phase(model::PodPhase::kRunning));
  EXPECT_EQ(admission_->OutlookOf(huge, /*known_to_wait=*/false), decisions::Outlook::kNeverFits);
  EXPECT_EQ(admission_->OutlookOf(huge, /*known_to_wait=*/true), decisions::Outlook::kWaiting);
  // A pod that fits is admissible whatever the caller knew.
  cluster_->OnPodDelete(PodBuilder("other").Namespace("ns-team-b"));
  const Pod small = PodBuilder("small").Namespace("ns-team-a").Gpus(2);
  cluster_->OnPodUpsert(small);
  EXPECT_EQ(admission_->OutlookOf(small, /*known_to_wait=*/true), decisions::Outlook::kAdmissible);
}

TEST_F(RequeuerTest, AFailedRequestIsCountedAndTriedAgainAfterTheGap) {
  StartStrictFifo();
  RefusedBehindADeletedHead();
  kube_.FailRequeues("the server is currently unable to handle the request");
  Requeuer::RunReport r = requeuer_->RunOnce();
  EXPECT_EQ(r.failed, 1u);
  EXPECT_EQ(r.requeued, 0u);
  EXPECT_EQ(requeuer_->stats().failed, 1u);
  kube_.FailRequeues("");
  EXPECT_EQ(requeuer_->RunOnce().requeued, 0u);  // within the gap
  clock_.Advance(2'000);
  r = requeuer_->RunOnce();
  EXPECT_EQ(r.requeued, 1u);
  EXPECT_EQ(Asked(), (std::vector<std::string>{"ns-team-a/small", "ns-team-a/small"}));
}

}  // namespace
}  // namespace taskgov::scheduler::actions
