#include "scheduler/state/workload_table.h"

#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <random>
#include <sstream>
#include <thread>

#include "scheduler/model/pod_identity.h"
#include "scheduler/state/cluster_state.h"
#include "scheduler/testing/builders.h"

namespace taskgov::scheduler::state {
namespace {

using ledger::QuotaBook;
using model::EffectiveRequest;
using model::KeptPod;
using model::NameId;
using model::Pod;
using model::PodPhase;
using model::PolicyPtr;
using model::PriorityClassOf;
using model::ResolvePriority;
using model::TeamNames;
using model::WorkloadOf;
using testing::PodBuilder;
using testing::PolicyBuilder;

constexpr char kGroup[] = "kueue.x-k8s.io/pod-group-name";
constexpr char kGroupSize[] = "kueue.x-k8s.io/pod-group-total-count";

// The table as text: one line per workload, "<order key> team=<t> declared=<n> prio=<p>: " and
// its members as "<name>@<uid>[<node>][!]{<request>}" (terminating: !).
std::string Dump(const WorkloadTable& table) {
  return table.Read([](const WorkloadTable::View& view) {
    std::ostringstream out;
    for (const auto& [order, e] : view.ordered()) {
      out << order << " team=" << TeamNames().Name(e.team) << " declared=" << e.declared
          << " prio=" << e.priority << ":";
      for (const WorkloadMember& m : e.members) {
        out << " " << m.name() << "@" << m.uid() << "[" << (m.bound() ? m.node_name() : "") << "]"
            << (m.terminating() ? "!" : "") << "{" << m.pod->request().ToString() << "}";
      }
      out << "\n";
    }
    return out.str();
  });
}

Pod Member(const std::string& name, const std::string& group, int size) {
  return PodBuilder(name)
      .Namespace("ns-a")
      .Label(kGroup, group)
      .Annotation(kGroupSize, std::to_string(size))
      .Gpus(1);
}

std::shared_ptr<const KeptPod> Kept(const Pod& pod) {
  return std::make_shared<const KeptPod>(pod, EffectiveRequest(pod));
}

void Put(WorkloadTable& table, const Pod& pod, NameId team) {
  table.Put(Kept(pod), team, WorkloadOf(pod), 0, "");
}

TEST(WorkloadTableTest, GroupsGangMembersAndOrdersByNamespaceNameKind) {
  WorkloadTable table;
  const NameId a = TeamNames().Intern("a");
  Put(table, Member("train-1", "train", 2), a);
  Put(table, PodBuilder("solo").Namespace("ns-a"), a);
  Put(table, Member("train-0", "train", 2), a);
  Put(table, PodBuilder("alpha").Namespace("ns-b"), a);
  EXPECT_EQ(Dump(table),
            "ns-a/solo/Pod/pod/ns-a/solo team=a declared=1 prio=0: solo@uid-solo[]{}\n"
            "ns-a/train/KueuePodGroup/" +
                WorkloadOf(Member("x", "train", 2)).key +
                " team=a declared=2 prio=0: train-0@uid-train-0[]{nvidia.com/gpu: 1} "
                "train-1@uid-train-1[]{nvidia.com/gpu: 1}\n"
                "ns-b/alpha/Pod/pod/ns-b/alpha team=a declared=1 prio=0: alpha@uid-alpha[]{}\n");
  EXPECT_EQ(table.size(), 3u);
  EXPECT_EQ(table.MembersOf(WorkloadOf(Member("x", "train", 2)).key),
            (std::vector<std::string>{"uid-train-0", "uid-train-1"}));
  // A lone pod's workload is found by its key too (through its order key: no index entry).
  EXPECT_EQ(table.MembersOf("pod/ns-a/solo"), (std::vector<std::string>{"uid-solo"}));
  EXPECT_TRUE(table.MembersOf("pod/ns-a/other").empty());
  table.Read([](const WorkloadTable::View& view) {
    ASSERT_NE(view.Find("pod/ns-b/alpha"), nullptr);
    EXPECT_EQ(view.Find("pod/ns-b/alpha")->name(), "alpha");
    EXPECT_EQ(view.Find("pod/ns-b/solo"), nullptr);
  });
}

TEST(WorkloadTableTest, AWorkloadGoesWithItsLastMember) {
  WorkloadTable table;
  const NameId a = TeamNames().Intern("a");
  Put(table, Member("train-0", "train", 2), a);
  Put(table, Member("train-1", "train", 2), a);
  table.Remove("uid-train-0", "ns-a", "train-0");
  EXPECT_EQ(table.size(), 1u);
  table.Remove("uid-train-1", "ns-a", "train-1");
  EXPECT_EQ(table.size(), 0u);
  EXPECT_EQ(Dump(table), "");
  table.Remove("uid-never-seen", "ns-a", "train-0");  // nothing to do
  EXPECT_EQ(table.size(), 0u);
}

TEST(WorkloadTableTest, APodThatChangesWorkloadLeavesTheOldOne) {
  WorkloadTable table;
  const NameId a = TeamNames().Intern("a");
  Put(table, Member("p", "first", 2), a);
  Put(table, Member("p", "second", 2), a);
  EXPECT_EQ(table.size(), 1u);
  EXPECT_NE(Dump(table).find("ns-a/second/"), std::string::npos) << Dump(table);
  EXPECT_TRUE(table.MembersOf(WorkloadOf(Member("p", "first", 2)).key).empty());
}

TEST(WorkloadTableTest, APodOfTheSameNameReplacesItsPredecessor) {
  WorkloadTable table;
  const NameId a = TeamNames().Intern("a");
  Put(table, Member("train-0", "train", 2), a);
  Pod successor = Member("train-0", "train", 2);
  successor.uid = "uid-new";
  Put(table, successor, a);
  EXPECT_NE(Dump(table).find("train-0@uid-new[]{nvidia.com/gpu: 1}\n"), std::string::npos)
      << Dump(table);
  table.Remove("uid-train-0", "ns-a", "train-0");  // the predecessor's late DELETED changes nothing
  EXPECT_NE(Dump(table).find("train-0@uid-new[]{nvidia.com/gpu: 1}\n"), std::string::npos)
      << Dump(table);
  table.Remove("uid-new", "ns-a", "train-0");
  EXPECT_EQ(table.size(), 0u);
}

// Lone pods are found by their order key, gang members through the uid index: a pod moving
// between the two, or replaced under its name by a new uid, is in one place only.
TEST(WorkloadTableTest, ALonePodIsFoundWhereverItMoves) {
  WorkloadTable table;
  const NameId a = TeamNames().Intern("a");
  auto has = [&](std::string_view uid, std::string_view name) {
    return table.Read([&](const WorkloadTable::View& v) { return v.HasPod(uid, "ns-a", name); });
  };
  const Pod lone = PodBuilder("p").Namespace("ns-a").Gpus(1);
  Put(table, lone, a);
  EXPECT_TRUE(has("uid-p", "p"));
  EXPECT_FALSE(has("uid-p", "q"));
  Put(table, Member("p", "g", 2), a);  // it joins a gang
  EXPECT_EQ(table.size(), 1u);
  EXPECT_TRUE(table.MembersOf("pod/ns-a/p").empty());
  EXPECT_EQ(table.MembersOf(WorkloadOf(Member("p", "g", 2)).key),
            (std::vector<std::string>{"uid-p"}));
  Put(table, lone, a);  // and leaves it
  EXPECT_EQ(table.size(), 1u);
  EXPECT_TRUE(table.MembersOf(WorkloadOf(Member("p", "g", 2)).key).empty());
  EXPECT_EQ(table.MembersOf("pod/ns-a/p"), (std::vector<std::string>{"uid-p"}));
  Pod successor = lone;
  successor.uid = "uid-new";
  Put(table, successor, a);
  EXPECT_FALSE(has("uid-p", "p"));
  EXPECT_TRUE(has("uid-new", "p"));
  table.Remove("uid-p", "ns-a", "p");  // the predecessor's late DELETED changes nothing
  EXPECT_EQ(table.MembersOf("pod/ns-a/p"), (std::vector<std::string>{"uid-new"}));
  table.Remove("uid-new", "ns-b", "p");  // another namespace's pod of that name is not it
  EXPECT_EQ(table.size(), 1u);
  table.Remove("uid-new", "ns-a", "p");
  EXPECT_EQ(table.size(), 0u);
  EXPECT_FALSE(has("uid-new", "p"));
}

// A workload's priority and class are its top member's, and its size the largest declared,
// whichever way its members change: joining, rising, falling, tying, leaving.
TEST(WorkloadTableTest, TheSummaryFollowsItsMembersUpAndDown) {
  WorkloadTable table;
  const NameId a = TeamNames().Intern("a");
  const Pod p0 = Member("train-0", "train", 2);
  const Pod p1 = Member("train-1", "train", 2);
  const Pod p2 = Member("train-2", "train", 2);
  auto put = [&](const Pod& pod, int32_t priority, std::string_view cls, int32_t size) {
    model::WorkloadRef ref = WorkloadOf(pod);
    ref.size = size;
    table.Put(Kept(pod), a, ref, priority, cls);
  };
  auto summary = [&] {
    return table.Read([](const WorkloadTable::View& view) {
      const WorkloadEntry& e = view.ordered().begin()->second;
      return std::to_string(e.priority) + "/" + e.priority_class_name() + "/" +
             std::to_string(e.declared);
    });
  };
  put(p0, 5, "mid", 2);
  EXPECT_EQ(summary(), "5/mid/2");
  put(p1, 9, "high", 2);  // a higher member joins
  EXPECT_EQ(summary(), "9/high/2");
  put(p2, 9, "other", 4);  // a tie after it by name: the first keeps the class; a larger size
  EXPECT_EQ(summary(), "9/high/4");
  put(p1, 1, "low", 2);  // the top falls: the next top is train-2
  EXPECT_EQ(summary(), "9/other/4");
  put(p2, 2, "low", 2);  // and falls too, with its size
  EXPECT_EQ(summary(), "5/mid/2");
  put(p2, 5, "tie", 2);  // a tie after the top by name changes nothing
  EXPECT_EQ(summary(), "5/mid/2");
  table.Remove(p0.uid, p0.namespace_, p0.name);  // the top leaves
  EXPECT_EQ(summary(), "5/tie/2");
  put(p0, 5, "first", 3);  // back, first by name: its class wins the tie
  EXPECT_EQ(summary(), "5/first/3");
  table.Remove(p1.uid, p1.namespace_, p1.name);  // a member below the top leaves: nothing changes
  EXPECT_EQ(summary(), "5/first/3");
  table.Remove(p0.uid, p0.namespace_, p0.name);
  EXPECT_EQ(summary(), "5/tie/2");
}

// The table a ClusterState keeps, after any sequence of pod events, equals the grouping of the
// pods it holds computed from scratch.
class ClusterWorkloadsTest : public ::testing::Test {
 protected:
  static PolicyPtr Policy(int32_t high) {
    return PolicyBuilder()
        .Team("a", "c")
        .Quota("f", "nvidia.com/gpu", 8)
        .Team("b", "c")
        .Quota("f", "nvidia.com/gpu", 8)
        .PriorityClass("high", high)
        .Build();
  }

  // From scratch: the governed, non-terminal pods of `live`, grouped.
  std::string Expected(const std::map<std::string, Pod>& live, const PolicyPtr& policy) {
    WorkloadTable table;
    for (const auto& [uid, pod] : live) {
      if (pod.terminal() || pod.namespace_ == "elsewhere") continue;
      table.Put(Kept(pod), TeamNames().Intern(pod.namespace_.substr(3)), WorkloadOf(pod),
                ResolvePriority(*policy, pod), PriorityClassOf(*policy, pod));
    }
    return Dump(table);
  }

  common::FakeClock clock_{1'800'000'000'000};
  QuotaBook book_{Policy(1000), &clock_};
  ClusterState cluster_{&book_, &clock_, ClusterState::Options{}};
};

TEST_F(ClusterWorkloadsTest, TheTableFollowsEveryPodEvent) {
  std::mt19937 rng(17);
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
  const char* namespaces[] = {"ns-a", "ns-b", "elsewhere"};
  std::map<std::string, Pod> live;            // by uid
  std::map<std::string, std::string> uid_of;  // namespace/name → uid
  PolicyPtr policy = book_.ledger().policy();
  int next_uid = 0;
  for (int step = 0; step < 3000; ++step) {
    const std::string ns = namespaces[pick(3)];
    const std::string name = "p" + std::to_string(pick(20));
    const std::string full = ns + "/" + name;
    auto known = uid_of.find(full);
    const int op = pick(10);
    if (op == 9 && step % 97 == 0) {  // a policy change: priorities follow it
      policy = Policy(1000 + step);
      book_.ApplyPolicy(policy);
      cluster_.SetPolicy(policy);
    } else if (op == 8 && known != uid_of.end()) {  // deleted
      cluster_.OnPodDelete(live.at(known->second));
      live.erase(known->second);
      uid_of.erase(known);
    } else {
      Pod pod;
      if (known == uid_of.end() || op == 7) {  // a new pod (of a name maybe seen before)
        PodBuilder b(name);
        b.Namespace(ns).Uid("u" + std::to_string(next_uid++)).Gpus(1).Created(step);
        if (pick(2) == 0) {
          b.Label(kGroup, "g" + std::to_string(pick(4)))
              .Annotation(kGroupSize, std::to_string(1 + pick(3)));
        }
        if (pick(3) == 0) b.PriorityClassName("high");
        pod = b;
        if (known != uid_of.end()) live.erase(known->second);  // its predecessor is gone
      } else {
        pod = live.at(known->second);
        switch (pick(4)) {
          case 0:
            pod.node_name = "n" + std::to_string(pick(3));
            pod.phase = PodPhase::kRunning;
            pod.start_unix_ms = step;
            break;
          case 1:
            pod.deletion_unix_ms = step;
            break;
          case 2:
            pod.phase = pick(2) ? PodPhase::kSucceeded : PodPhase::kFailed;
            break;
          default:
            pod.labels["x"] = std::to_string(step);  // a change the table does not show
        }
      }
      cluster_.OnPodUpsert(pod);
      live[pod.uid] = pod;
      uid_of[full] = pod.uid;
    }
    ASSERT_EQ(Dump(cluster_.workloads()), Expected(live, policy)) << "after step " << step;
  }
}

TEST_F(ClusterWorkloadsTest, AGangSizeDeclaredLaterReachesItsMembers) {
  const Pod pod = PodBuilder("w-0").Namespace("ns-a").Owner("Job", "w", "job-uid").Gpus(1);
  cluster_.OnPodUpsert(pod);
  const std::string key = WorkloadOf(pod).key;
  ASSERT_FALSE(key.empty());
  cluster_.OnGangSizeUpsert(key, 4);
  EXPECT_NE(Dump(cluster_.workloads()).find("declared=4"), std::string::npos)
      << Dump(cluster_.workloads());
}

// Readers walk the table while the informer's events change it: each walk sees whole
// workloads, never an empty one or members out of order (ThreadSanitizer runs this).
TEST_F(ClusterWorkloadsTest, ReadersWalkTheTableWhileEventsChangeIt) {
  std::atomic<bool> done{false};
  std::thread informer([&] {
    for (int i = 0; i < 4000; ++i) {
      const std::string name = "p" + std::to_string(i % 50);
      Pod pod = PodBuilder(name).Namespace("ns-a").Uid("u" + std::to_string(i)).Gpus(1);
      if (i % 3 == 0) pod.labels[kGroup] = "g" + std::to_string(i % 5);
      if (i % 7 == 0) {
        cluster_.OnPodDelete(pod);
      } else {
        cluster_.OnPodUpsert(pod);
      }
    }
    done = true;
  });
  size_t walks = 0, seen = 0;
  while (!done || walks == 0) {
    cluster_.workloads().Read([&](const WorkloadTable::View& view) {
      for (const auto& [order, e] : view.ordered()) {
        ASSERT_FALSE(e.members.empty()) << order;
        for (size_t m = 1; m < e.members.size(); ++m) {
          ASSERT_LT(e.members[m - 1].name(), e.members[m].name()) << order;
        }
        ASSERT_TRUE(view.HasPod(e.members.front().uid(), e.members.front().pod->ns(),
                                e.members.front().name()));
        ++seen;
      }
    });
    ++walks;
  }
  informer.join();
  EXPECT_GT(walks, 0u);
  EXPECT_GT(seen, 0u);
}

}  // namespace
}  // namespace taskgov::scheduler::state
