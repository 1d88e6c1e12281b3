#include "scheduler/model/objects.h"

#include <gtest/gtest.h>

#include "scheduler/testing/builders.h"

namespace taskgov::scheduler::model {
namespace {

using testing::ContainerBuilder;
using testing::PodBuilder;
using testing::Q;

struct Case {
  std::string name;
  Pod pod;
  ResourceList expected;
};

class EffectiveRequestTest : public ::testing::TestWithParam<Case> {};

TEST_P(EffectiveRequestTest, MatchesTheSchedulersRule) {
  EXPECT_EQ(EffectiveRequest(GetParam().pod), GetParam().expected)
      << EffectiveRequest(GetParam().pod).ToString();
}

INSTANTIATE_TEST_SUITE_P(
    Table, EffectiveRequestTest,
    ::testing::Values(
        Case{"single_container", PodBuilder("p").Gpus(8).Cpu("4").Build(),
             ResourceList{{"nvidia.com/gpu", 8}, {"cpu", 4000}}},
        Case{"containers_sum",
             PodBuilder("p").Cpu("1").AddContainer(
                 ContainerBuilder("b").Request("cpu", "500m").Build()),
             ResourceList{{"cpu", 1500}}},
        Case{"limit_without_request_requests_the_limit",
             PodBuilder("p").AddContainer(
                 ContainerBuilder("b").Limit("nvidia.com/gpu", "2").Build()),
             ResourceList{{"nvidia.com/gpu", 2}}},
        Case{"request_wins_over_limit",
             PodBuilder("p").AddContainer(
                 ContainerBuilder("b").Request("cpu", "1").Limit("cpu", "4").Build()),
             ResourceList{{"cpu", 1000}}},
        Case{"init_container_larger_than_containers",
             PodBuilder("p").Cpu("1").AddInitContainer(
                 ContainerBuilder("i").Request("cpu", "3").Build()),
             ResourceList{{"cpu", 3000}}},
        Case{"init_container_smaller_than_containers",
             PodBuilder("p").Cpu("2").AddInitContainer(
                 ContainerBuilder("i").Request("cpu", "1").Build()),
             ResourceList{{"cpu", 2000}}},
        // sidecar 1 cpu + main 2 cpu = 3; the later init container needs 2 + sidecar 1 = 3.
        Case{"sidecar_adds_to_containers_and_to_later_init_containers",
             PodBuilder("p")
                 .Cpu("2")
                 .AddInitContainer(ContainerBuilder("side").Request("cpu", "1").Sidecar().Build())
                 .AddInitContainer(ContainerBuilder("init").Request("cpu", "2").Build()),
             ResourceList{{"cpu", 3000}}},
        // init before the sidecar does not add the sidecar: max(4, 1+1=2 sidecar+main)... = 4.
        Case{"init_before_sidecar_does_not_count_it",
             PodBuilder("p")
                 .Cpu("1")
                 .AddInitContainer(ContainerBuilder("init").Request("cpu", "4").Build())
                 .AddInitContainer(ContainerBuilder("side").Request("cpu", "1").Sidecar().Build()),
             ResourceList{{"cpu", 4000}}},
        Case{"init_after_sidecar_counts_it",
             PodBuilder("p")
                 .Cpu("1")
                 .AddInitContainer(ContainerBuilder("side").Request("cpu", "1").Sidecar().Build())
                 .AddInitContainer(ContainerBuilder("init").Request("cpu", "4").Build()),
             ResourceList{{"cpu", 5000}}},
        Case{"overhead_added",
             PodBuilder("p")
                 .Cpu("1")
                 .Memory("1Gi")
                 .Overhead("cpu", "250m")
                 .Overhead("memory", "120Mi"),
             ResourceList{{"cpu", 1250}, {"memory", Q("memory", "1Gi") + Q("memory", "120Mi")}}},
        Case{"extended_resources",
             PodBuilder("p")
                 .Request("aws.amazon.com/neuron", "16")
                 .Request("vpc.amazonaws.com/efa", "8"),
             ResourceList{{"aws.amazon.com/neuron", 16}, {"vpc.amazonaws.com/efa", 8}}},
        Case{"zeros_dropped", PodBuilder("p").Cpu("0").Gpus(1),
             ResourceList{{"nvidia.com/gpu", 1}}}),
    [](const ::testing::TestParamInfo<Case>& info) { return info.param.name; });

TEST(EffectiveRequestTest, PodLevelRequestsOverridePerResource) {
  Pod pod = PodBuilder("p").Cpu("1").Memory("1Gi").Gpus(2).Overhead("cpu", "100m");
  pod.pod_requests = ResourceList{{"cpu", 4000}};
  EXPECT_EQ(EffectiveRequest(pod),
            (ResourceList{{"cpu", 4100}, {"memory", Q("memory", "1Gi")}, {"nvidia.com/gpu", 2}}));
}

TEST(ResourceListTest, SaturatesInsteadOfOverflowing) {
  ResourceList a{{"x", INT64_MAX - 1}};
  a.Add(ResourceList{{"x", 5}});
  EXPECT_EQ(a.Get("x"), INT64_MAX);
  EXPECT_EQ(SaturatingSub(INT64_MIN + 1, 5), INT64_MIN);
}

// Add sums what both name and takes in, in order, what only the other names: before, between
// and after this list's names.
TEST(ResourceListTest, AddMergesByName) {
  ResourceList a{{"b", 1}, {"d", 2}};
  a.Add(ResourceList{{"a", 10}, {"b", 20}, {"c", 30}, {"d", 40}, {"e", 50}});
  EXPECT_EQ(a, (ResourceList{{"a", 10}, {"b", 21}, {"c", 30}, {"d", 42}, {"e", 50}}));
  EXPECT_EQ(a.ToString(), "a: 10, b: 21, c: 30, d: 42, e: 50");
  ResourceList empty;
  empty.Add(a);
  EXPECT_EQ(empty, a);
  a.Add(ResourceList{});
  EXPECT_EQ(a, empty);
  a.Add(a);  // itself: every name doubles
  EXPECT_EQ(a, (ResourceList{{"a", 20}, {"b", 42}, {"c", 60}, {"d", 84}, {"e", 100}}));
}

TEST(ResourceListTest, SortedAndFormatted) {
  ResourceList a{{"nvidia.com/gpu", 8}, {"cpu", 1500}, {"memory", int64_t{64} << 30}};
  EXPECT_EQ(a.ToString(), "cpu: 1500m, memory: 64Gi, nvidia.com/gpu: 8");
  EXPECT_EQ(a.Get("absent"), 0);
}

}  // namespace
}  // namespace taskgov::scheduler::model
