#include "scheduler/decisions/topology.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "scheduler/testing/builders.h"

namespace taskgov::scheduler::decisions {
namespace {

using model::FlavorNames;
using testing::NodeBuilder;
using testing::PodBuilder;
using testing::PolicyBuilder;

constexpr char kP5[] = "ml.p5.48xlarge";
constexpr char kL1[] = "topology.k8s.aws/network-node-layer-1";
constexpr char kL2[] = "topology.k8s.aws/network-node-layer-2";
constexpr int64_t kNow = 1'000'000;

class ChooseDomainTest : public ::testing::Test {
 protected:
  // Node `name` in layer-1 domain `l1`, layer-2 domain `l2`, with `used` of its 8 GPUs in use.
  void Node(const std::string& name, const std::string& l1, const std::string& l2, int used,
            bool cordoned = false) {
    NodeBuilder b(name);
    b.InstanceType(kP5).Allocatable("nvidia.com/gpu", "8").Label(kL1, l1).Label(kL2, l2);
    if (cordoned) b.Unschedulable();
    nodes_.Upsert(b, *policy_);
    if (used > 0) {
      ASSERT_TRUE(nodes_.AddUsage(name, model::ResourceList{{"nvidia.com/gpu", used}}));
    }
  }
  DomainChoice Choose(const std::string& level, int64_t count, int gpus = 8) {
    const model::Pod pod = PodBuilder("m").Gpus(gpus).Build();
    return ChooseDomain(nodes_, FlavorNames().Intern(kP5), levels_, level, pod,
                        model::EffectiveRequest(pod), count, kNow, {});
  }

  model::PolicyPtr policy_ = PolicyBuilder().Team("a").Quota(kP5, "nvidia.com/gpu", 64).Build();
  std::vector<std::string> levels_ = model::TopologyLevelsOf(model::Flavor{kP5, {}, false, {}});
  state::NodeCache nodes_;
};

TEST(TopologyRequestTest, RequiredBeforePreferredAndHyperPodLevelsByDefault) {
  model::Pod pod = PodBuilder("m").Build();
  EXPECT_EQ(TopologyRequestOf(pod).mode, TopologyRequest::Mode::kNone);
  pod.annotations[kPreferredTopologyAnnotation] = kL1;
  EXPECT_EQ(TopologyRequestOf(pod).mode, TopologyRequest::Mode::kPreferred);
  pod.annotations[kRequiredTopologyAnnotation] = kL2;
  EXPECT_TRUE(TopologyRequestOf(pod).required());
  EXPECT_EQ(TopologyRequestOf(pod).level, kL2);
  EXPECT_EQ(model::TopologyLevelsOf(model::Flavor{kP5, {}, false, {}}),
            (std::vector<std::string>{kL1, kL2, "topology.k8s.aws/network-node-layer-3",
                                      "kubernetes.io/hostname"}));
  EXPECT_TRUE(model::TopologyLevelsOf(model::Flavor{"gpu-a100", {}, false, {}}).empty());
  EXPECT_EQ(model::TopologyLevelsOf(
                model::Flavor{"gpu-a100", {}, false, {"rack", "kubernetes.io/hostname"}}),
            (std::vector<std::string>{"rack", "kubernetes.io/hostname"}));
  EXPECT_EQ(LevelName(kL2), "network-node-layer-2");
}

// The tightest domain that holds the gang, counted node by node: spine-b has 4 nodes with 4 free
// GPUs each (16 free, but no room for one 8-GPU pod), spine-c 2 free nodes, spine-d 3.
TEST_F(ChooseDomainTest, TheTightestDomainWhereEveryMemberFitsOnANode) {
  for (int i = 0; i < 4; ++i) Node("b" + std::to_string(i), "l1-0", "spine-b", 4);
  Node("c0", "l1-0", "spine-c", 0);
  Node("c1", "l1-0", "spine-c", 0);
  for (int i = 0; i < 3; ++i) Node("d" + std::to_string(i), "l1-1", "spine-d", 0);
  DomainChoice c = Choose(kL2, 2);
  ASSERT_TRUE(c.found);
  EXPECT_EQ(c.name, "spine-c");
  EXPECT_EQ(c.fits, 2);
  EXPECT_EQ(c.nodes.size(), 2u);
  c = Choose(kL2, 3);
  ASSERT_TRUE(c.found);
  EXPECT_EQ(c.name, "spine-d");
  // Four 8-GPU members: no spine holds them, though spine-b has 16 free GPUs.
  c = Choose(kL2, 4);
  EXPECT_FALSE(c.found);
  EXPECT_EQ(c.name, "spine-d");
  EXPECT_EQ(c.fits, 3);
  EXPECT_EQ(c.domains, 3u);
  EXPECT_EQ(c.Refusal(kL2, kP5, model::ResourceList{{"nvidia.com/gpu", 8}}),
            "no network-node-layer-2 domain of ml.p5.48xlarge has room for 4 pods of 8 "
            "nvidia.com/gpu; the best has room for 3 (domain spine-d, 3 domains)");
  // 4-GPU members fit spine-b's nodes: 4 of them, the tightest that holds 4.
  c = Choose(kL2, 4, 4);
  ASSERT_TRUE(c.found);
  EXPECT_EQ(c.name, "spine-b");
  // At layer 1, l1-0 holds two 8-GPU members (spine-c), l1-1 three: neither holds 4.
  EXPECT_FALSE(Choose(kL1, 4).found);
  EXPECT_TRUE(Choose(kL1, 3).found);
}

// Domains are named by every wider level too: spine-x under l1-0 and spine-x under l1-1 are two
// domains. Cordoned nodes and nodes without the labels hold no member.
TEST_F(ChooseDomainTest, DomainsAreTheirWholePathAndCordonedOrUnlabelledNodesHoldNothing) {
  Node("a0", "l1-0", "spine-x", 0);
  Node("a1", "l1-1", "spine-x", 0);
  Node("a2", "l1-1", "spine-x", 0, /*cordoned=*/true);
  nodes_.Upsert(NodeBuilder("bare").InstanceType(kP5).Allocatable("nvidia.com/gpu", "8"), *policy_);
  DomainChoice c = Choose(kL2, 2);
  EXPECT_FALSE(c.found);
  EXPECT_EQ(c.domains, 2u);
  EXPECT_EQ(c.fits, 1);
  EXPECT_FALSE(Choose("example.com/rack", 1).found) << "not a level of the flavor";
}

// A preferred level: one domain when one holds them all, else the fewest — the freest first, the
// last the tightest that completes them.
TEST_F(ChooseDomainTest, APreferredGangGoesToTheFewestDomains) {
  for (int i = 0; i < 4; ++i) Node("a" + std::to_string(i), "l1-0", "spine-a", 0);
  for (int i = 0; i < 3; ++i) Node("b" + std::to_string(i), "l1-0", "spine-b", 0);
  Node("c0", "l1-0", "spine-c", 0);
  const model::Pod pod = PodBuilder("m").Gpus(8).Build();
  auto fewest = [&](int64_t count) {
    return ChooseFewestDomains(nodes_, FlavorNames().Intern(kP5), levels_, kL2, pod,
                               model::EffectiveRequest(pod), count, kNow, {});
  };
  EXPECT_EQ(fewest(3).name, "spine-b") << "one domain holds them";
  DomainChoice c = fewest(6);
  ASSERT_TRUE(c.found);
  EXPECT_EQ(c.name, "spine-a+spine-b");
  EXPECT_EQ(c.nodes.size(), 7u);
  EXPECT_EQ(fewest(5).name, "spine-a+spine-c") << "spine-c's 1 completes 5, tighter than b";
  EXPECT_FALSE(fewest(9).found) << "8 members fit the flavor's nodes at most";
}

// A domain lives as long as its gang's hold: forgotten when looked up after the hold went, and
// swept on a later Record once the map doubled, for gangs never looked up again.
TEST(GangDomainsTest, DomainsOfGangsWithoutAHoldAreForgotten) {
  GangDomains domains;
  auto domain = std::make_shared<GangDomain>();
  const auto never = [](const std::string&) { return false; };
  EXPECT_EQ(domains.Record("g", domain, never), domain);
  EXPECT_EQ(domains.Record("g", std::make_shared<GangDomain>(), never), domain)
      << "the first stays";
  EXPECT_EQ(domains.Find("g", [] { return true; }), domain);
  EXPECT_EQ(domains.Find("g", [] { return false; }), nullptr);
  EXPECT_EQ(domains.Find("g", [] { return true; }), nullptr) << "forgotten";
  for (int i = 0; i < 64; ++i) (void)domains.Record("old-" + std::to_string(i), domain, never);
  (void)domains.Record("new", domain, [](const std::string& gang) { return gang == "new"; });
  EXPECT_EQ(domains.Find("old-0", [] { return true; }), nullptr) << "swept";
  EXPECT_EQ(domains.Find("new", [] { return true; }), domain);
}

constexpr char kL3[] = "topology.k8s.aws/network-node-layer-3";

// Kueue's annotations as its docs and `hyp` write them, and every rule of Kueue's webhook
// (ValidateTASPodSetRequest) that makes a request invalid, named with the annotation and value.
TEST(TopologyRequestTest, KueuesAnnotationsAndItsWebhookRules) {
  using Mode = TopologyRequest::Mode;
  struct Case {
    const char* name;
    model::Labels annotations;
    Mode mode;
    std::string level, slice_level;
    int64_t slice_size;
    std::string invalid;  // a part of the reason; "" valid
  };
  const std::string req = kRequiredTopologyAnnotation;
  const std::string pref = kPreferredTopologyAnnotation;
  const std::string unc = kUnconstrainedTopologyAnnotation;
  const std::string slice = kSliceRequiredTopologyAnnotation;
  const std::string size = kSliceSizeAnnotation;
  const std::vector<Case> cases = {
      {"none", {}, Mode::kNone, "", "", 0, ""},
      {"required", {{req, kL2}}, Mode::kRequired, kL2, "", 0, ""},
      {"preferred", {{pref, kL1}}, Mode::kPreferred, kL1, "", 0, ""},
      {"unconstrained", {{unc, "true"}}, Mode::kUnconstrained, "", "", 0, ""},
      {"unconstrained as Go's ParseBool reads it",
       {{unc, "T"}},
       Mode::kUnconstrained,
       "",
       "",
       0,
       ""},
      {"unconstrained false asks nothing", {{unc, "false"}}, Mode::kNone, "", "", 0, ""},
      {"required with slices",
       {{req, kL2}, {slice, kL3}, {size, "4"}},
       Mode::kRequired,
       kL2,
       kL3,
       4,
       ""},
      {"slices alone are unconstrained",
       {{slice, kL3}, {size, "2"}},
       Mode::kUnconstrained,
       "",
       kL3,
       2,
       ""},
      {"two modes",
       {{req, kL2}, {pref, kL1}},
       Mode::kRequired,
       kL2,
       "",
       0,
       "at most one of kueue.x-k8s.io/podset-required-topology"},
      {"unconstrained not a bool",
       {{unc, "yes"}},
       Mode::kNone,
       "",
       "",
       0,
       "kueue.x-k8s.io/podset-unconstrained-topology: \"yes\" is not a boolean"},
      {"level not a label name",
       {{req, "rack/"}},
       Mode::kRequired,
       "rack/",
       "",
       0,
       "kueue.x-k8s.io/podset-required-topology: \"rack/\" is not a node label name"},
      {"empty level", {{pref, ""}}, Mode::kPreferred, "", "", 0, "is not a node label name"},
      {"slice size not a number",
       {{slice, kL3}, {size, "four"}},
       Mode::kNone,
       "",
       "",
       0,
       "kueue.x-k8s.io/podset-slice-size: \"four\" is not an integer"},
      {"slice size 0",
       {{slice, kL3}, {size, "0"}},
       Mode::kNone,
       "",
       "",
       0,
       "kueue.x-k8s.io/podset-slice-size: \"0\" must be at least 1"},
      {"slice size beyond int32",
       {{slice, kL3}, {size, "4294967296"}},
       Mode::kNone,
       "",
       "",
       0,
       "is not an integer"},
      {"slice level without a size",
       {{slice, kL3}},
       Mode::kNone,
       "",
       "",
       0,
       "kueue.x-k8s.io/podset-slice-size must be set with "
       "kueue.x-k8s.io/podset-slice-required-topology: \"topology.k8s.aws/network-node-layer-3\""},
      {"a size without a slice level",
       {{size, "4"}},
       Mode::kNone,
       "",
       "",
       4,
       "kueue.x-k8s.io/podset-slice-size: \"4\" may not be set without"},
      {"multi-layer slices",
       {{kSliceConstraintsAnnotation, "[]"}},
       Mode::kNone,
       "",
       "",
       0,
       "multi-layer slices are not supported"},
  };
  for (const Case& c : cases) {
    const TopologyRequest r = TopologyRequestOf(c.annotations);
    EXPECT_EQ(r.mode, c.mode) << c.name;
    EXPECT_EQ(r.level, c.level) << c.name;
    EXPECT_EQ(r.slice_level, c.slice_level) << c.name;
    EXPECT_EQ(r.slice_size, c.slice_size) << c.name;
    if (c.invalid.empty()) {
      EXPECT_EQ(r.invalid, "") << c.name;
    } else {
      EXPECT_NE(r.invalid.find(c.invalid), std::string::npos) << c.name << ": " << r.invalid;
    }
    EXPECT_EQ(r.asks(), c.mode == Mode::kRequired || c.mode == Mode::kPreferred ||
                            !c.slice_level.empty() || !c.invalid.empty())
        << c.name;
  }
}

// What only the gang's size and the flavor's levels tell: a slice larger than the gang, a slice
// level above the podset's.
TEST(TopologyRequestTest, SliceSizeAtMostTheGangAndSliceLevelAtOrBelowThePodsets) {
  const std::vector<std::string> levels =
      model::TopologyLevelsOf(model::Flavor{kP5, {}, false, {}});
  auto check = [&](model::Labels annotations, int64_t count) {
    return CheckTopologyRequest(TopologyRequestOf(annotations), count, levels);
  };
  EXPECT_EQ(check({{kSliceRequiredTopologyAnnotation, kL3}, {kSliceSizeAnnotation, "4"}}, 8), "");
  EXPECT_EQ(check({{kSliceRequiredTopologyAnnotation, kL3}, {kSliceSizeAnnotation, "16"}}, 8),
            "kueue.x-k8s.io/podset-slice-size: \"16\" must not be greater than the gang's 8 pods");
  EXPECT_EQ(check({{kRequiredTopologyAnnotation, kL2},
                   {kSliceRequiredTopologyAnnotation, kL2},
                   {kSliceSizeAnnotation, "4"}},
                  8),
            "")
      << "the same level";
  EXPECT_EQ(check({{kRequiredTopologyAnnotation, kL3},
                   {kSliceRequiredTopologyAnnotation, kL1},
                   {kSliceSizeAnnotation, "4"}},
                  8),
            "podset slice topology topology.k8s.aws/network-node-layer-1 is above the podset "
            "topology topology.k8s.aws/network-node-layer-3");
  EXPECT_EQ(check({{kUnconstrainedTopologyAnnotation, "maybe"}}, 8),
            "kueue.x-k8s.io/podset-unconstrained-topology: \"maybe\" is not a boolean");
}

// The pods' own annotations first; without any, their owner job's metadata (as `hyp` writes
// them), else its pod templates' when they agree.
TEST(TopologyRequestTest, AGangsPodsWithoutAnnotationsTakeTheirOwnersRequest) {
  model::Pod pod = PodBuilder("m").Build();
  model::JobControl job;
  job.annotations = {{kRequiredTopologyAnnotation, kL2},
                     {kSliceRequiredTopologyAnnotation, kL3},
                     {kSliceSizeAnnotation, "4"}};
  TopologyRequest r = TopologyRequestOfGang(pod, &job);
  EXPECT_TRUE(r.required());
  EXPECT_EQ(r.slice_level, kL3);
  EXPECT_EQ(r.slice_size, 4);
  EXPECT_EQ(TopologyRequestOfGang(pod, nullptr).mode, TopologyRequest::Mode::kNone);
  pod.annotations[kPreferredTopologyAnnotation] = kL1;
  r = TopologyRequestOfGang(pod, &job);
  EXPECT_EQ(r.mode, TopologyRequest::Mode::kPreferred) << "its own first";
  EXPECT_FALSE(r.sliced());

  model::Pod bare = PodBuilder("m").Build();
  model::JobControl templated;
  model::Pod tmpl = PodBuilder("").Build();
  tmpl.annotations = {{kPreferredTopologyAnnotation, kL1}, {"other", "x"}};
  templated.pod_sets = {{1, tmpl}, {4, tmpl}};
  EXPECT_EQ(TopologyRequestOfGang(bare, &templated).mode, TopologyRequest::Mode::kPreferred);
  templated.pod_sets[1].pod.annotations[kPreferredTopologyAnnotation] = kL2;
  EXPECT_EQ(TopologyRequestOfGang(bare, &templated).mode, TopologyRequest::Mode::kNone)
      << "templates that disagree say nothing for the gang";
}

class ChooseSlicesTest : public ChooseDomainTest {
 protected:
  // `n` nodes "<l3>-<i>" in layer-3 domain `l3` under `l2` (layer-1 "l1-0"), free.
  void Nodes(const std::string& l2, const std::string& l3, int n) {
    for (int i = 0; i < n; ++i) {
      NodeBuilder b(l3 + "-" + std::to_string(i));
      b.InstanceType(kP5).Allocatable("nvidia.com/gpu", "8").Label(kL1, "l1-0").Label(kL2, l2);
      nodes_.Upsert(b.Label(kL3, l3), *policy_);
    }
  }
  SliceChoice Slices(model::Labels annotations, int64_t count) {
    const model::Pod pod = PodBuilder("m").Gpus(8).Build();
    return ChooseSlices(nodes_, FlavorNames().Intern(kP5), levels_, TopologyRequestOf(annotations),
                        pod, model::EffectiveRequest(pod), count, kNow, {});
  }
  static std::vector<std::string> Names(const SliceChoice& c) {
    std::vector<std::string> out;
    for (const GangSlices::Domain& d : c.slices) {
      out.push_back(d.name + "x" + std::to_string(d.slices));
    }
    return out;
  }
};

// spine-a holds 8 pods (5 + 3 nodes) but one slice of 4; spine-b three (4 + 4 + 4): a gang of 8
// in slices of 4 at layer-3 goes to spine-b, one slice in each of two layer-3 domains.
TEST_F(ChooseSlicesTest, EachSliceInOneDomainCountedAsKueueCountsThem) {
  Nodes("spine-a", "a-0", 5);
  Nodes("spine-a", "a-1", 3);
  Nodes("spine-b", "b-0", 4);
  Nodes("spine-b", "b-1", 4);
  Nodes("spine-b", "b-2", 4);
  EXPECT_EQ(Choose(kL2, 8).name, "spine-a") << "without slices: the tightest that holds 8 pods";
  const model::Labels sliced = {{kRequiredTopologyAnnotation, kL2},
                                {kSliceRequiredTopologyAnnotation, kL3},
                                {kSliceSizeAnnotation, "4"}};
  SliceChoice c = Slices(sliced, 8);
  ASSERT_TRUE(c.found);
  EXPECT_EQ(c.name, "spine-b");
  EXPECT_EQ(c.wanted, 2);
  EXPECT_EQ(Names(c), (std::vector<std::string>{"b-0x1", "b-1x1"}));
  EXPECT_EQ(c.slices[0].members.size() > 0, true);
  // 16 pods: 4 slices, no spine holds them; the numbers say so.
  c = Slices(sliced, 16);
  EXPECT_FALSE(c.found);
  EXPECT_EQ(c.fits, 3);
  EXPECT_EQ(c.Refusal(TopologyRequestOf(sliced), kP5, model::ResourceList{{"nvidia.com/gpu", 8}}),
            "no network-node-layer-2 domain of ml.p5.48xlarge has room for 4 slices of 4 pods "
            "(each slice in one network-node-layer-3 domain) of 8 nvidia.com/gpu; the best has "
            "room for 3 (domain spine-b, 2 domains)");
  // 10 pods: ⌈10 / 4⌉ = 3 slices, the last partial one kept whole too.
  c = Slices(sliced, 10);
  ASSERT_TRUE(c.found);
  EXPECT_EQ(Names(c), (std::vector<std::string>{"b-0x1", "b-1x1", "b-2x1"}));
  // Slices of 2: spine-a holds 2 + 1, spine-b 6: the tightest that holds 3 is spine-a.
  c = Slices({{kRequiredTopologyAnnotation, kL2},
              {kSliceRequiredTopologyAnnotation, kL3},
              {kSliceSizeAnnotation, "2"}},
             6);
  ASSERT_TRUE(c.found);
  EXPECT_EQ(c.name, "spine-a");
  EXPECT_EQ(Names(c), (std::vector<std::string>{"a-0x2", "a-1x1"}));
}

// Preferred: the fewest podset domains when no one holds them; unconstrained (slices alone):
// the whole flavor, least free first (Kueue's LeastFreeCapacity), so large domains stay whole.
TEST_F(ChooseSlicesTest, PreferredSpreadsOverTheFewestAndUnconstrainedFillsTheLeastFreeFirst) {
  Nodes("spine-a", "a-0", 8);
  Nodes("spine-b", "b-0", 4);
  Nodes("spine-c", "c-0", 2);
  SliceChoice c = Slices({{kPreferredTopologyAnnotation, kL2},
                          {kSliceRequiredTopologyAnnotation, kL3},
                          {kSliceSizeAnnotation, "2"}},
                         12);
  ASSERT_TRUE(c.found);
  EXPECT_EQ(c.name, "spine-a+spine-b");
  EXPECT_EQ(Names(c), (std::vector<std::string>{"a-0x4", "b-0x2"}));
  c = Slices({{kSliceRequiredTopologyAnnotation, kL3}, {kSliceSizeAnnotation, "2"}}, 6);
  ASSERT_TRUE(c.found);
  EXPECT_EQ(Names(c), (std::vector<std::string>{"c-0x1", "b-0x2"}));
  c = Slices({{kSliceRequiredTopologyAnnotation, kL3}, {kSliceSizeAnnotation, "4"}}, 20);
  EXPECT_FALSE(c.found);
  EXPECT_EQ(c.Refusal(TopologyRequestOf(model::Labels{{kSliceRequiredTopologyAnnotation, kL3},
                                                      {kSliceSizeAnnotation, "4"}}),
                      kP5, model::ResourceList{{"nvidia.com/gpu", 8}}),
            "ml.p5.48xlarge has room for 3 of 5 slices of 4 pods (each slice in one "
            "network-node-layer-3 domain) of 8 nvidia.com/gpu");
}

// Members take places one at a time: a begun slice is completed before another starts, a
// re-filtered member keeps its place, a member gone frees it (after the grace a filter has to
// reserve), and when every place is taken there is none.
TEST(GangSlicesTest, MembersCompleteTheBegunSliceFirst) {
  std::vector<GangSlices::Domain> domains(2);
  domains[0].name = "d0";
  domains[0].slices = 1;
  domains[1].name = "d1";
  domains[1].slices = 2;
  GangSlices slices(kL3, 2, domains);
  std::set<std::string> holding;
  auto holds = [&](std::string_view uid) { return holding.contains(std::string(uid)); };
  auto place = [&](const std::string& uid, int64_t now) {
    const int d = slices.Assign(uid, now, holds);
    if (d >= 0) holding.insert(uid);
    return d;
  };
  EXPECT_EQ(place("a", kNow), 0);
  EXPECT_EQ(place("a", kNow), 0) << "re-filtered: the same";
  EXPECT_EQ(place("b", kNow), 0);
  EXPECT_EQ(place("c", kNow), 1);
  EXPECT_EQ(place("d", kNow), 1);
  EXPECT_EQ(place("e", kNow), 1);
  holding.erase("d");  // d is gone: after the grace its place is free, e's slice is begun
  const int64_t later = kNow + GangSlices::kGraceMs;
  EXPECT_EQ(place("f", later), 1);
  EXPECT_EQ(place("g", later), 1);
  EXPECT_EQ(place("h", later), -1) << "every place is taken";
  holding.erase("a");
  EXPECT_EQ(place("h", later), 0) << "a's place, in the slice b begun";
  // A place without a reservation counts during the grace (its filter may not have reserved):
  // h's slice is begun; once the grace is over nobody holds anything.
  const auto none = [](std::string_view) { return false; };
  EXPECT_EQ(slices.Assign("i", later, none), 0);
  EXPECT_EQ(slices.Assign("j", later + GangSlices::kGraceMs, none), 0);
  EXPECT_EQ(slices.Assign("k", later + GangSlices::kGraceMs, none), 0) << "j's begun slice";
}

}  // namespace
}  // namespace taskgov::scheduler::decisions
