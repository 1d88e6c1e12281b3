// The four dialects describing the same cluster load to the same model.

#include <gtest/gtest.h>

#include "config/loader.h"
#include "config/test_util.h"

namespace taskgov::config {
namespace {

using scheduler::model::kUnlimited;
using testing::Dump;
using testing::FindQuota;
using testing::ModelSummary;

constexpr int64_t kGi = int64_t{1} << 30;

LoadResult LoadTestdata(const std::string& dir) {
  return LoadDirectory("config/testdata/equivalence/" + dir);
}

struct Want {
  std::string team, flavor, resource;
  int64_t nominal, borrowing, lending;
};

void ExpectQuotas(const scheduler::model::Policy& p, const std::vector<Want>& wants) {
  for (const Want& w : wants) {
    const scheduler::model::ResourceQuota* q = FindQuota(p, w.team, w.flavor, w.resource);
    ASSERT_NE(q, nullptr) << w.team << " " << w.flavor << " " << w.resource;
    EXPECT_EQ(q->nominal, w.nominal) << w.team << " " << w.resource;
    EXPECT_EQ(q->borrowing_limit, w.borrowing) << w.team << " " << w.resource;
    EXPECT_EQ(q->lending_limit, w.lending) << w.team << " " << w.resource;
  }
}

TEST(Equivalence, NativeHasTheExpectedQuotas) {
  LoadResult native = LoadTestdata("native");
  ASSERT_TRUE(native.ok()) << Dump(native);
  const std::string f = "ml.p5.48xlarge";
  ExpectQuotas(*native.policy, {
                                   {"a", f, "nvidia.com/gpu", 16, 8, kUnlimited},
                                   {"a", f, "cpu", 384000, 192000, kUnlimited},
                                   {"a", f, "memory", 4096 * kGi, 2048 * kGi, kUnlimited},
                                   {"b", f, "nvidia.com/gpu", 8, 0, 0},
                                   {"b", f, "cpu", 192000, 0, 0},
                                   {"b", f, "memory", 2048 * kGi, 0, 0},
                                   {"c", f, "nvidia.com/gpu", 8, 0, kUnlimited},
                                   {"c", f, "cpu", 192000, 0, kUnlimited},
                                   {"c", f, "memory", 2048 * kGi, 0, kUnlimited},
                               });
  ASSERT_EQ(native.policy->teams.size(), 3u);
  for (const scheduler::model::Team& t : native.policy->teams) EXPECT_EQ(t.cohort, "research");
}

TEST(Equivalence, EveryDialectLoadsTheSameModel) {
  LoadResult native = LoadTestdata("native");
  ASSERT_TRUE(native.ok()) << Dump(native);
  const std::string want = ModelSummary(*native.policy);
  for (const std::string dir : {"hyperpod", "kueue_v1beta1", "kueue_v1beta2", "volcano"}) {
    LoadResult other = LoadTestdata(dir);
    ASSERT_TRUE(other.ok()) << dir << "\n" << Dump(other);
    EXPECT_EQ(ModelSummary(*other.policy), want) << dir;
  }
}

TEST(Equivalence, DialectsKeepTheirOwnNamesAndNamespaces) {
  LoadResult hyperpod = LoadTestdata("hyperpod");
  ASSERT_TRUE(hyperpod.ok()) << Dump(hyperpod);
  const scheduler::model::Team* a = hyperpod.policy->FindTeam("a");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->namespaces, std::vector<std::string>{"hyperpod-ns-a"});
  EXPECT_EQ(a->cluster_queue, "hyperpod-ns-a-clusterqueue");
  EXPECT_EQ(a->cohort, "hyperpod");

  LoadResult kueue = LoadTestdata("kueue_v1beta1");
  ASSERT_TRUE(kueue.ok()) << Dump(kueue);
  a = kueue.policy->FindTeam("a");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->cluster_queue, "a");
  EXPECT_EQ(a->namespaces, std::vector<std::string>{"team-a"});  // from its LocalQueue
  EXPECT_EQ(kueue.policy->TeamOfNamespace("team-a"), a);

  LoadResult volcano = LoadTestdata("volcano");
  ASSERT_TRUE(volcano.ok()) << Dump(volcano);
  EXPECT_EQ(volcano.policy->volcano_queues.at("b"), "b");
  EXPECT_TRUE(volcano.policy->FindTeam("b")->namespaces.empty());
}

TEST(Samples, NativeAndHyperPodSamplesAgree) {
  LoadResult native = LoadDirectory("config/samples/native");
  LoadResult hyperpod = LoadDirectory("config/samples/hyperpod");
  ASSERT_TRUE(native.ok()) << Dump(native);
  ASSERT_TRUE(hyperpod.ok()) << Dump(hyperpod);
  EXPECT_EQ(native.warning_count(), 0u) << Dump(native);
  EXPECT_EQ(hyperpod.warning_count(), 0u) << Dump(hyperpod);
  EXPECT_EQ(ModelSummary(*native.policy), ModelSummary(*hyperpod.policy));
  EXPECT_EQ(native.policy->priority_classes.size(), 3u);
  EXPECT_EQ(hyperpod.policy->priority_classes.size(), 3u);
  EXPECT_EQ(hyperpod.policy->task_prioritization,
            scheduler::model::TaskPrioritization::kTaskRanking);

  const scheduler::model::Policy& p = *native.policy;
  ExpectQuotas(p, {
                      {"a", "ml.p5.48xlarge", "nvidia.com/gpu", 8, 4, kUnlimited},
                      {"a", "ml.g5.12xlarge", "nvidia.com/gpu", 4, 2, kUnlimited},
                      {"a", "ml.g5.12xlarge", "cpu", 48000, 24000, kUnlimited},
                      {"b", "ml.g5.12xlarge", "memory", 192 * kGi, 192 * kGi, kUnlimited},
                      {"c", "ml.trn1.32xlarge", "aws.amazon.com/neuron", 16, 0, kUnlimited},
                      {"c", "ml.trn1.32xlarge", "cpu", 128000, 0, kUnlimited},
                  });
  // Team a's flavors in the order it lists them.
  const scheduler::model::Team* a = p.FindTeam("a");
  ASSERT_EQ(a->flavors.size(), 2u);
  EXPECT_EQ(a->flavors[0].flavor, "ml.p5.48xlarge");
  EXPECT_EQ(a->flavors[1].flavor, "ml.g5.12xlarge");
  EXPECT_EQ(p.FindTeam("c")->within_team, scheduler::model::WithinTeamPreemption::kNever);
  for (const scheduler::model::Team& t : p.teams) EXPECT_EQ(t.cohort, "hyperpod");
}

}  // namespace
}  // namespace taskgov::config
