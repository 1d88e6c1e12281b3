#include "scheduler/model/kept_pod.h"

#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "scheduler/model/gang.h"
#include "scheduler/model/pod_identity.h"
#include "scheduler/model/string_pool.h"
#include "scheduler/testing/builders.h"

namespace taskgov::scheduler::model {
namespace {

using testing::PodBuilder;

// Every field a Pod has, one per line, for comparing two pods whole.
std::string Fields(const Pod& p) {
  std::ostringstream o;
  auto labels = [&](const char* what, const Labels& l) {
    o << what << ":";
    for (const auto& [k, v] : l) o << " [" << k << "]=[" << v << "]";
    o << "\n";
  };
  auto containers = [&](const char* what, const std::vector<Container>& cs) {
    o << what << ":";
    for (const Container& c : cs) {
      o << " " << c.name << " " << c.requests.ToString() << " " << c.limits.ToString() << " "
        << c.restart_always;
    }
    o << "\n";
  };
  o << "ns=" << p.namespace_ << "\nname=" << p.name << "\nuid=" << p.uid << "\n";
  labels("labels", p.labels);
  labels("annotations", p.annotations);
  labels("node_selector", p.node_selector);
  o << "created=" << p.creation_unix_ms << "\ndeletion=" << p.deletion_unix_ms.value_or(-1) << " "
    << p.deletion_unix_ms.has_value() << "\nstart=" << p.start_unix_ms.value_or(-1) << " "
    << p.start_unix_ms.has_value() << "\nrv=" << p.resource_version
    << "\nscheduler=" << p.scheduler_name << "\nnode=" << p.node_name
    << "\nplacement=" << p.placement.get() << "\npriority=" << p.priority.value_or(-1) << " "
    << p.priority.has_value() << "\nclass=" << p.priority_class_name
    << "\nphase=" << static_cast<int>(p.phase) << "\nowners:";
  for (const OwnerReference& r : p.owner_references) {
    o << " " << r.api_version << "|" << r.kind << "|" << r.name << "|" << r.uid << "|"
      << r.controller;
  }
  o << "\n";
  containers("containers", p.containers);
  containers("init_containers", p.init_containers);
  o << "overhead=" << p.overhead.ToString()
    << "\nrequests=" << (p.pod_requests ? p.pod_requests->ToString() : "unset")
    << "\nlimits=" << (p.pod_limits ? p.pod_limits->ToString() : "unset") << "\n";
  return o.str();
}

// What the state keeps of `pod`, as a Pod: `pod` without what KeptPod drops.
Pod Expected(const Pod& pod) {
  Pod want = pod;
  want.resource_version.clear();
  Labels annotations;
  for (const auto& [k, v] : pod.annotations) {
    if (KeptAnnotation(k)) annotations.emplace(k, v);
  }
  want.annotations = std::move(annotations);
  want.containers.clear();
  want.init_containers.clear();
  want.overhead = ResourceList();
  want.pod_limits.reset();
  want.pod_requests = EffectiveRequest(pod);
  return want;
}

Pod Kept(const Pod& pod) { return KeptPod(pod, EffectiveRequest(pod)).ToPod(); }

TEST(KeptPodTest, KeepsWhatTaskgovReadsAndTheEffectiveRequest) {
  Pod pod =
      PodBuilder("w-0")
          .Namespace("ns-a")
          .Label("kueue.x-k8s.io/queue-name", "q")
          .Annotation("kubectl.kubernetes.io/last-applied-configuration", std::string(4096, 'x'))
          .Annotation("scheduling.volcano.sh/queue-name", "research")
          .Gpus(2)
          .Cpu("4")
          .Build();
  pod.resource_version = "48213";
  pod.overhead.Set("cpu", 250);
  Container init;
  init.name = "download";
  init.requests.Set("cpu", 8000);
  pod.init_containers.push_back(init);
  Container sidecar;
  sidecar.name = "logs";
  sidecar.restart_always = true;
  sidecar.limits.Set("memory", int64_t{1} << 30);  // limits only: requests its limit
  pod.init_containers.push_back(sidecar);
  for (std::string_view key : kGangKeys) {
    Pod member = pod;
    member.annotations[std::string(key)] = "gang-1";
    const Pod kept = Kept(member);
    EXPECT_EQ(GangOf(kept), GangOf(member)) << key;
    EXPECT_EQ(kept.annotations.count(std::string(key)), 1u) << key;
  }
  const ResourceList effective = EffectiveRequest(pod);
  const KeptPod packed(pod, effective);
  const Pod kept = packed.ToPod();
  EXPECT_EQ(EffectiveRequest(kept).ToString(), effective.ToString());
  EXPECT_EQ(effective.Get("cpu"), 8250);  // the init container's 8, plus overhead
  EXPECT_EQ(packed.request().ToString(), effective.ToString());
  EXPECT_TRUE(kept.containers.empty());
  EXPECT_TRUE(kept.init_containers.empty());
  EXPECT_EQ(kept.annotations.size(), 1u);  // the Volcano queue; last-applied is gone
  EXPECT_TRUE(kept.resource_version.empty());
  EXPECT_EQ(Fields(kept), Fields(Expected(pod)));
  EXPECT_LT(packed.heap_bytes(), 200u);  // the 4 KB annotation is not in it
}

TEST(KeptPodTest, EveryKeptFieldComesBackAsItWas) {
  auto placement = std::make_shared<PodPlacementSpec>();
  placement->tolerations.push_back(
      Toleration{"gpu", "", TolerationOperator::kExists, TaintEffect::kNoSchedule});
  std::vector<Pod> pods;
  pods.push_back(Pod{});  // nothing set at all
  Pod full = PodBuilder("llama-pretrain-worker-17")
                 .Namespace("hyperpod-ns-team-a")
                 .Uid("0b1f5c2e-6a7d-4c8e-9f00-100000000017")
                 .Label("kueue.x-k8s.io/queue-name", "hyperpod-ns-team-a-localqueue")
                 .Label("", "")  // empty key and value
                 .Label("long", std::string(300, 'v'))
                 .Annotation("kueue.x-k8s.io/pod-group-name", "g")
                 .NodeSelector("node.kubernetes.io/instance-type", "ml.p5.48xlarge")
                 .Priority(1000)
                 .PriorityClassName("training-priority")
                 .Created(1'700'000'000'123)
                 .Started(1'700'000'100'456)
                 .OnNode("ip-10-1-2-3.us-west-2.compute.internal")
                 .Phase(PodPhase::kRunning)
                 .SchedulerName("taskgov")
                 .Owner("PyTorchJob", "llama", "9d3c")
                 .Gpus(8)
                 .Memory("2Ti")
                 .Build();
  full.placement = placement;
  full.deletion_unix_ms = 1'700'000'200'000;
  full.owner_references.push_back(OwnerReference{"v1", "Other", "x", "", false});
  full.labels[std::string(70'000, 'k')] = std::string(20'000, 'w');  // 3-byte lengths
  full.pod_requests = ResourceList{{"example.com/fpga", -3}};        // overrides, kept as is
  pods.push_back(full);
  Pod negative = PodBuilder("n").Priority(-5).Phase(PodPhase::kFailed).Build();
  negative.creation_unix_ms = -1;
  pods.push_back(negative);
  for (const Pod& pod : pods) {
    const KeptPod packed(pod, EffectiveRequest(pod));
    EXPECT_EQ(Fields(packed.ToPod()), Fields(Expected(pod)));
    EXPECT_EQ(packed.ns(), pod.namespace_);
    EXPECT_EQ(packed.name(), pod.name);
    EXPECT_EQ(packed.uid(), pod.uid);
    EXPECT_EQ(packed.key(), pod.key());
    EXPECT_EQ(packed.scheduler_name(), pod.scheduler_name);
    EXPECT_EQ(packed.bound(), pod.bound());
    EXPECT_EQ(packed.node_name(), pod.node_name);
    EXPECT_EQ(packed.terminal(), pod.terminal());
    EXPECT_EQ(packed.terminating(), pod.deletion_unix_ms.has_value());
    EXPECT_EQ(packed.start_unix_ms(), pod.start_unix_ms);
    EXPECT_EQ(packed.request().ToString(), EffectiveRequest(pod).ToString());
    EXPECT_EQ(packed.request_ids(), ToIdAmounts(EffectiveRequest(pod)));
    EXPECT_EQ(packed.gang(), GangOf(pod));
    EXPECT_EQ(packed.creation_unix_ms(), pod.creation_unix_ms);
  }
}

// Issue 35: the last checkpoint is kept as a time (its text changes with every checkpoint, so it
// is not pooled); an invalid one is no checkpoint.
TEST(KeptPodTest, KeepsTheLastCheckpointAsATime) {
  Pod pod;
  pod.name = "p";
  pod.annotations[kLastCheckpointAnnotation] = "2026-01-01T00:00:10.5Z";
  EXPECT_EQ(KeptPod(pod, {}).checkpoint_unix_ms(), 1767225610500);
  pod.annotations[kLastCheckpointAnnotation] = "yesterday";
  EXPECT_EQ(KeptPod(pod, {}).checkpoint_unix_ms(), std::nullopt);
  pod.annotations.erase(kLastCheckpointAnnotation);
  EXPECT_EQ(KeptPod(pod, {}).checkpoint_unix_ms(), std::nullopt);
}

TEST(KeptPodTest, AMovedPodKeepsItsBlockAndAnEmptyOneReadsEmpty) {
  const Pod pod = PodBuilder("a").Namespace("ns").OnNode("n1").Gpus(1).Build();
  KeptPod first(pod, EffectiveRequest(pod));
  KeptPod second = std::move(first);
  EXPECT_EQ(second.key(), "ns/a");
  KeptPod empty;
  EXPECT_EQ(empty.key(), "/");
  EXPECT_FALSE(empty.bound());
  EXPECT_TRUE(empty.request().empty());
}

// The pooled strings a packed pod holds go with it (and with what a move replaces): pods with
// labels of their own leave the pool as it was.
TEST(KeptPodTest, ItsPooledStringsGoWithIt) {
  const size_t before = PodStrings().size();
  {
    std::vector<KeptPod> kept;
    for (int i = 0; i < 100; ++i) {
      const Pod pod = PodBuilder("w-" + std::to_string(i))
                          .Namespace("ns-pool-test")
                          .Label("replica-index", "pool-test-" + std::to_string(i))
                          .Owner("Job", "pool-test-job", "pool-test-uid")
                          .Gpus(1)
                          .Build();
      kept.emplace_back(pod, EffectiveRequest(pod));
    }
    EXPECT_GE(PodStrings().size(), before + 100);
    const Pod other = PodBuilder("x").Namespace("ns-pool-test-other").Build();
    kept[0] = KeptPod(other, EffectiveRequest(other));  // the replaced pod's strings go
    EXPECT_EQ(kept[0].ns(), "ns-pool-test-other");
    EXPECT_EQ(kept[1].ns(), "ns-pool-test");
  }
  EXPECT_EQ(PodStrings().size(), before);
}

}  // namespace
}  // namespace taskgov::scheduler::model
