#include "scheduler/sim/kube_scheduler.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "scheduler/common/clock.h"
#include "scheduler/testing/builders.h"

namespace taskgov::scheduler::sim {
namespace {

using testing::NodeBuilder;
using testing::PodBuilder;
using Type = ScoringStrategy::Type;

constexpr char kGpu[] = "nvidia.com/gpu";

// An extender that admits every node, scores them as told and binds through the API server.
class FakeExtender final : public Decider {
 public:
  explicit FakeExtender(Api* api) : api_(api) {}

  std::map<std::string, int64_t> scores;  // node → prioritize score (0..10)
  std::set<std::string> refuse;           // pods refused on every node (by name)
  int prioritize_calls = 0;

  FilterResult Filter(const FilterArgs& args) override {
    FilterResult r;
    const uint32_t reason = r.AddReason("refused");
    for (uint32_t i = 0; i < args.node_names.size(); ++i) {
      if (refuse.count(args.pod.name) != 0) {
        r.unresolvable.push_back({i, reason});
      } else {
        r.feasible.push_back(i);
      }
    }
    return r;
  }
  std::vector<HostPriority> Prioritize(const FilterArgs& args) override {
    ++prioritize_calls;
    std::vector<HostPriority> out;
    for (const std::string& n : args.node_names) out.push_back({n, scores[n]});
    return out;
  }
  PreemptResult Preempt(const PreemptArgs&) override { return {}; }
  BindResult Bind(const BindArgs& args) override {
    common::Status s = api_->Bind(args.pod_namespace, args.pod_name, args.pod_uid, args.node);
    return BindResult{s.ok() ? "" : s.error().message};
  }

 private:
  Api* api_;
};

// kube-scheduler played with the fake extender on a fake clock; `tried` lists the pods each
// attempt was made for (a preemption's report is the same attempt's).
struct Played {
  explicit Played(const KubeScheduler::Options& options)
      : loop(&clock), api(&clock), extender(&api), scheduler(&api, &extender, &loop, options) {
    scheduler.SetAttemptObserver([this](const model::Pod& pod, const std::string& outcome) {
      if (outcome.rfind("preempts", 0) != 0) tried.push_back(pod.name);
    });
  }
  static KubeScheduler::Options Release(int minor) {
    KubeScheduler::Options options;
    options.minor = minor;
    return options;
  }
  // The watch events of what happened, to the scheduler.
  void Deliver() {
    for (const WatchEvent& e : api.TakeEvents()) scheduler.OnEvent(e);
  }
  // The pods tried by the cycles that run now.
  std::vector<std::string> Cycles() {
    tried.clear();
    scheduler.RunCycles();
    return tried;
  }
  std::string Bound(const std::string& name, const model::Pod& pod, const std::string& node) {
    EXPECT_TRUE(api.Bind("default", name, pod.uid, node).ok()) << name;
    return pod.uid;
  }

  common::FakeClock clock;
  EventLoop loop;
  Api api;
  FakeExtender extender;
  KubeScheduler scheduler;
  std::vector<std::string> tried;
};

// Two p5 nodes: "a" half full (a bound pod with 4 GPUs, 96 cpu, 1 TiB), "b" empty. A pod with
// 1 GPU, 12 cpu and 128 GiB arrives; returns the node kube-scheduler bound it to.
struct Placement {
  std::string node;
  int prioritize_calls = 0;
};
Placement PlaceOnePod(const KubeScheduler::Options& options,
                      const std::map<std::string, int64_t>& extender_scores = {}) {
  Played k(options);
  k.extender.scores = extender_scores;
  for (const char* name : {"a", "b"}) {
    k.api.AddNode(NodeBuilder(name)
                      .Allocatable("cpu", "192")
                      .Allocatable("memory", "2Ti")
                      .Allocatable(kGpu, "8"));
  }
  k.Bound("running",
          k.api.CreatePod(PodBuilder("running").Gpus(4).Cpu("96").Memory("1Ti"), PodTag{}).pod,
          "a");
  k.Deliver();
  const std::string uid =
      k.api.CreatePod(PodBuilder("new").Gpus(1).Cpu("12").Memory("128Gi"), PodTag{}).pod.uid;
  k.Deliver();
  EXPECT_EQ(k.scheduler.RunCycles(), 1u);
  return {k.api.Find(uid)->pod.node_name, k.extender.prioritize_calls};
}

KubeScheduler::Options Strategy(Type type, std::vector<ScoringStrategy::Resource> resources) {
  KubeScheduler::Options o;
  o.scoring = ScoringStrategy{type, std::move(resources)};
  return o;
}

TEST(KubeSchedulerTest, MostAllocatedPutsAGpuPodOnTheFullerNodeLeastAllocatedOnTheEmptier) {
  // Upstream's default (LeastAllocated on cpu and memory): a 43, b 93.
  EXPECT_EQ(PlaceOnePod(KubeScheduler::Options{}).node, "b");
  // The overlay's packing (GPU weight 3): a (56 + 56 + 3 × 62) / 5 = 59, b (6 + 6 + 3 × 12) / 5
  // = 9.
  const std::vector<ScoringStrategy::Resource> packing = {{"cpu", 1}, {"memory", 1}, {kGpu, 3}};
  EXPECT_EQ(PlaceOnePod(Strategy(Type::kMostAllocated, packing)).node, "a");
  EXPECT_EQ(PlaceOnePod(Strategy(Type::kLeastAllocated, packing)).node, "b");
}

// The extender's score × weight × 10 adds to the node's: b's 10 from the extender outweighs a's
// lead (59 against 9) at weight 1; with no prioritizeVerb (weight 0) it is not asked.
TEST(KubeSchedulerTest, TheExtendersWeightScalesItsScore) {
  const std::vector<ScoringStrategy::Resource> packing = {{"cpu", 1}, {"memory", 1}, {kGpu, 3}};
  KubeScheduler::Options options = Strategy(Type::kMostAllocated, packing);
  const Placement weighted = PlaceOnePod(options, {{"a", 0}, {"b", 10}});
  EXPECT_EQ(weighted.node, "b");
  EXPECT_EQ(weighted.prioritize_calls, 1);
  options.extender_weight = 0;
  const Placement unasked = PlaceOnePod(options, {{"a", 0}, {"b", 10}});
  EXPECT_EQ(unasked.node, "a");
  EXPECT_EQ(unasked.prioritize_calls, 0);
}

// The queue's requeueing, by release. "for-a" may run on node a only, which is full (rejected
// for room and by its node selector); "refused" may run on b only, which has room, and the
// extender refuses it there (rejected by the extender and by its node selector).
struct Requeued {
  std::vector<std::string> after_a_bind;  // retried when another pod binds on b
  std::vector<std::string> after_finish;  // retried when a's pod finishes
  std::string for_a_node;                 // where "for-a" went
};
Requeued PlayRequeueing(int minor) {
  Played k(Played::Release(minor));
  for (const char* name : {"a", "b"}) {
    k.api.AddNode(NodeBuilder(name).Label("pool", name).Allocatable(kGpu, "8"));
  }
  const std::string full =
      k.Bound("full", k.api.CreatePod(PodBuilder("full").Gpus(8), PodTag{}).pod, "a");
  k.Deliver();
  const std::string for_a =
      k.api.CreatePod(PodBuilder("for-a").Gpus(8).NodeSelector("pool", "a"), PodTag{}).pod.uid;
  k.api.CreatePod(PodBuilder("refused").Gpus(1).NodeSelector("pool", "b"), PodTag{});
  k.extender.refuse = {"refused"};
  k.Deliver();
  EXPECT_EQ(k.scheduler.RunCycles(), 2u);
  k.clock.Advance(60'000);  // every backoff has passed

  Requeued out;
  k.Bound("other", k.api.CreatePod(PodBuilder("other").Gpus(1), PodTag{}).pod, "b");
  k.Deliver();
  out.after_a_bind = k.Cycles();

  k.clock.Advance(60'000);
  k.api.SetPhase(full, model::PodPhase::kSucceeded);  // the scheduler's informer lists no such pod
  k.Deliver();
  out.after_finish = k.Cycles();
  out.for_a_node = k.api.Find(for_a)->pod.node_name;
  return out;
}

// Before v1.32 a pod bound elsewhere retries nobody (AssignedPodAdded: affinity terms only); from
// v1.32 (QueueingHints) it retries the pod the extender refused — its decision may have changed —
// not the one no node had room for. Room freed retries both. The default (0) retries every pod
// on every event.
TEST(KubeSchedulerTest, ABindRetriesThePodsTheExtenderRefusedFromV132RoomFreedRetriesAll) {
  for (int minor : {0, 30, 31, 32, 35}) {
    const Requeued r = PlayRequeueing(minor);
    const std::vector<std::string> expected = minor == 0
                                                  ? std::vector<std::string>{"for-a", "refused"}
                                              : minor >= 32 ? std::vector<std::string>{"refused"}
                                                            : std::vector<std::string>{};
    EXPECT_EQ(r.after_a_bind, expected) << minor;
    EXPECT_EQ(r.after_finish, (std::vector<std::string>{"for-a", "refused"})) << minor;
    EXPECT_EQ(r.for_a_node, "a") << minor;
  }
}

// An unschedulable pod whose metadata changes (taskgov's requeue annotation) goes back to the
// queue: before v1.32 whatever rejected it (isPodUpdated), from v1.32 if the extender did (an
// UpdatePodOther event only its wildcard registration matches). A status update moves nothing;
// a pod still backing off waits out its backoff (before v1.33). The API server refuses the patch
// for a pod of another uid or name.
TEST(KubeSchedulerTest, AnUnschedulablePodWhoseMetadataChangesIsTriedAgain) {
  for (int minor : {0, 30, 31, 32, 35}) {
    Played k(Played::Release(minor));
    for (const char* name : {"a", "b"}) {
      k.api.AddNode(NodeBuilder(name).Label("pool", name).Allocatable(kGpu, "8"));
    }
    k.Bound("full", k.api.CreatePod(PodBuilder("full").Gpus(8), PodTag{}).pod, "a");
    k.Deliver();
    const std::string for_a =
        k.api.CreatePod(PodBuilder("for-a").Gpus(8).NodeSelector("pool", "a"), PodTag{}).pod.uid;
    const std::string refused =
        k.api.CreatePod(PodBuilder("refused").Gpus(1).NodeSelector("pool", "b"), PodTag{}).pod.uid;
    k.extender.refuse = {"refused"};
    k.Deliver();
    ASSERT_EQ(k.scheduler.RunCycles(), 2u);

    k.clock.Advance(60'000);               // every backoff has passed
    k.api.SetNominatedNode(refused, "b");  // a status update
    k.Deliver();
    EXPECT_TRUE(k.Cycles().empty()) << minor;
    ASSERT_TRUE(k.api.Requeue("default", "for-a", for_a, "t1").ok());
    ASSERT_TRUE(k.api.Requeue("default", "refused", refused, "t1").ok());
    k.Deliver();
    const std::vector<std::string> expected = minor >= 32
                                                  ? std::vector<std::string>{"refused"}
                                                  : std::vector<std::string>{"for-a", "refused"};
    EXPECT_EQ(k.Cycles(), expected) << minor;
    EXPECT_EQ(k.api.Find(refused)->pod.annotations.at(kRequeuedAtAnnotation), "t1");

    // Refused again just now: within its backoff it goes to the backoffQ, tried once that ends
    // (from v1.33 at once: an idle scheduler pops the backoffQ).
    ASSERT_TRUE(k.api.Requeue("default", "refused", refused, "t2").ok());
    k.Deliver();
    if (minor == 0 || minor < 33) {
      EXPECT_TRUE(k.Cycles().empty()) << minor;
      while (!k.scheduler.has_active() && k.loop.RunNext()) {
      }
    }
    EXPECT_EQ(k.Cycles(), std::vector<std::string>{"refused"}) << minor;
    EXPECT_EQ(k.api.counts().requeues, 3u);
  }
  Played k(Played::Release(30));
  const std::string uid = k.api.CreatePod(PodBuilder("p").Gpus(1), PodTag{}).pod.uid;
  EXPECT_FALSE(k.api.Requeue("default", "p", "another-uid", "t").ok());
  EXPECT_FALSE(k.api.Requeue("default", "gone", uid, "t").ok());
  EXPECT_EQ(k.api.counts().requeues, 0u);
}

// From v1.33 (SchedulerPopFromBackoffQ) a scheduler with nothing in activeQ takes a pod still
// backing off; before, the pod waits for its backoff to end.
TEST(KubeSchedulerTest, FromV133AnIdleSchedulerPopsTheBackoffQueue) {
  for (int minor : {0, 32, 33}) {
    Played k(Played::Release(minor));
    k.api.AddNode(NodeBuilder("a").Allocatable(kGpu, "8"));
    const std::string full =
        k.Bound("full", k.api.CreatePod(PodBuilder("full").Gpus(8), PodTag{}).pod, "a");
    const std::string waits = k.api.CreatePod(PodBuilder("waits").Gpus(8), PodTag{}).pod.uid;
    k.Deliver();
    EXPECT_EQ(k.scheduler.RunCycles(), 1u);  // no room: unschedulable, backing off for 1 s
    k.clock.Advance(100);
    k.api.SetPhase(full, model::PodPhase::kSucceeded);  // room, 0.1 s into its backoff
    k.Deliver();
    EXPECT_EQ(k.scheduler.has_active(), minor >= 33) << minor;
    k.scheduler.RunCycles();
    EXPECT_EQ(k.api.Find(waits)->pod.node_name, minor >= 33 ? "a" : "") << minor;
  }
}

// From v1.33 a pending pod deleted while nominated frees the room held for it for the pods of its
// priority or lower (kubernetes#129058); before, they wait for another event. "high" preempts
// "victim" (30 s grace) and is nominated to a; "low" finds no room beside the nomination; "top",
// above high, is not retried.
TEST(KubeSchedulerTest, FromV133ANominatedPodDeletedRetriesThePodsBelowIt) {
  for (int minor : {32, 33}) {
    KubeScheduler::Options options = Played::Release(minor);
    options.preempt_verb = false;  // DefaultPreemption's own choice
    Played k(options);
    k.api.AddNode(NodeBuilder("a").Allocatable(kGpu, "8"));
    k.Bound("victim", k.api.CreatePod(PodBuilder("victim").Gpus(8).Priority(0), PodTag{}).pod, "a");
    k.Deliver();
    const std::string high =
        k.api.CreatePod(PodBuilder("high").Gpus(8).Priority(100), PodTag{}).pod.uid;
    k.Deliver();
    EXPECT_EQ(k.scheduler.RunCycles(), 1u);
    ASSERT_EQ(k.api.Find(high)->nominated_node, "a") << minor;
    k.api.CreatePod(PodBuilder("low").Gpus(8).Priority(50), PodTag{});
    // Above high's priority, and no node could ever hold it: not retried for high's room.
    k.api.CreatePod(PodBuilder("top").Gpus(16).Priority(200), PodTag{});
    k.Deliver();
    // No room beside high's nomination.
    ASSERT_EQ(k.Cycles(), (std::vector<std::string>{"top", "low"}));

    k.clock.Advance(10'000);  // backoffs over, "victim" still terminating
    k.api.Remove(high);
    k.Deliver();
    EXPECT_EQ(k.Cycles(),
              minor >= 33 ? std::vector<std::string>{"low"} : std::vector<std::string>{})
        << minor;
  }
}

// A pod that fails with an error (here: no node at all) waits out its backoff in the error
// backoffQ, which an idle v1.33 scheduler does not pop: the cycle ends, the pod is tried again
// once its backoff has passed.
TEST(KubeSchedulerTest, APodThatFailsWithAnErrorWaitsOutItsBackoffEvenWhenTheSchedulerIsIdle) {
  Played k(Played::Release(33));
  k.api.CreatePod(PodBuilder("lonely").Gpus(1), PodTag{});
  k.Deliver();
  EXPECT_EQ(k.scheduler.RunCycles(), 1u);
  EXPECT_FALSE(k.scheduler.has_active());
  ASSERT_TRUE(k.loop.RunNext());  // the backoffQ's flush, 1 s later: its backoff has passed
  EXPECT_TRUE(k.scheduler.has_active());
  EXPECT_EQ(k.scheduler.RunCycles(), 1u);
}

}  // namespace
}  // namespace taskgov::scheduler::sim
