// Volcano Queue documents.

#include <gtest/gtest.h>

#include "config/loader.h"
#include "config/test_util.h"

namespace taskgov::config {
namespace {

using scheduler::model::kUnlimited;
using testing::Dump;
using testing::FindQuota;
using testing::HasDiagnostic;
using testing::LoadOne;

TEST(Volcano, DeservedCapabilityGuarantee) {
  LoadResult r = LoadOne("queues.yaml", R"(
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: training}
spec:
  weight: 4
  reclaimable: false
  deserved: {cpu: "64", nvidia.com/gpu: "8"}
  capability: {cpu: "96", nvidia.com/gpu: "16", memory: 1Ti}
  guarantee:
    resource: {nvidia.com/gpu: "2"}
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: serving}
spec:
  deserved: {vpc.amazonaws.com/efa: "4"}
)");
  ASSERT_TRUE(r.ok()) << Dump(r);
  const scheduler::model::Policy& p = *r.policy;
  const scheduler::model::Team* t = p.FindTeam("training");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->fair_share_weight, 4);
  EXPECT_FALSE(t->reclaimable);
  EXPECT_EQ(t->cohort, "root");
  EXPECT_TRUE(t->namespaces.empty());
  EXPECT_EQ(p.volcano_queues.at("training"), "training");

  const std::string f = "default";
  const scheduler::model::ResourceQuota* gpu = FindQuota(p, "training", f, "nvidia.com/gpu");
  ASSERT_NE(gpu, nullptr);
  EXPECT_EQ(gpu->nominal, 8);
  EXPECT_EQ(gpu->borrowing_limit, 8);  // capability 16 − deserved 8
  EXPECT_EQ(gpu->lending_limit, 6);    // deserved 8 − guarantee 2
  const scheduler::model::ResourceQuota* mem = FindQuota(p, "training", f, "memory");
  EXPECT_EQ(mem->nominal, 0);
  EXPECT_EQ(mem->borrowing_limit, int64_t{1} << 40);
  EXPECT_EQ(FindQuota(p, "training", f, "cpu")->lending_limit, kUnlimited);
  // Resources a queue does not mention: unlimited, as Volcano treats a missing capability.
  const scheduler::model::ResourceQuota* serving_gpu = FindQuota(p, "serving", f, "nvidia.com/gpu");
  ASSERT_NE(serving_gpu, nullptr);
  EXPECT_EQ(serving_gpu->nominal, 0);
  EXPECT_EQ(serving_gpu->borrowing_limit, kUnlimited);
  EXPECT_EQ(serving_gpu->lending_limit, 0);
  // The Volcano flavor takes every node.
  EXPECT_EQ(p.FlavorOfNode({{"node.kubernetes.io/instance-type", "ml.g5.xlarge"}}), "default");
}

TEST(Volcano, HierarchyBecomesCohorts) {
  LoadResult r = LoadOne("queues.yaml", R"(
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: root}
spec: {}
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: research}
spec:
  parent: root
  deserved: {cpu: "10"}
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: vision}
spec:
  parent: research
  deserved: {cpu: "4"}
  priority: 10
)");
  ASSERT_TRUE(r.ok()) << Dump(r);
  const scheduler::model::Policy& p = *r.policy;
  ASSERT_EQ(p.teams.size(), 1u);
  EXPECT_EQ(p.teams[0].name, "vision");
  EXPECT_EQ(p.teams[0].cohort, "research");
  bool research_parent_root = false;
  for (const scheduler::model::Cohort& c : p.cohorts) {
    if (c.name == "research" && c.parent == "root") research_parent_root = true;
  }
  EXPECT_TRUE(research_parent_root);
  EXPECT_TRUE(HasDiagnostic(r, Severity::kWarning, "queues.yaml", "", "parent queue"));
  EXPECT_TRUE(HasDiagnostic(r, Severity::kWarning, "queues.yaml", "spec.priority", "not honoured"));
}

TEST(Volcano, ValidationErrors) {
  struct Case {
    std::string name, yaml, path, text;
  };
  const std::string head = "apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\n";
  for (const Case& c : std::vector<Case>{
           {"capability below deserved",
            head + "metadata: {name: q}\nspec: {deserved: {cpu: 4}, capability: {cpu: 2}}\n",
            "spec.capability.cpu", "below deserved"},
           {"guarantee above deserved",
            head + "metadata: {name: q}\nspec: {deserved: {cpu: 4}, guarantee: {resource: {cpu: "
                   "8}}}\n",
            "spec.guarantee.resource.cpu", "above deserved"},
           {"weight as a word", head + "metadata: {name: q}\nspec: {weight: heavy}\n",
            "spec.weight", "must be an integer"},
           {"missing name", head + "metadata: {}\nspec: {}\n", "metadata.name", "required"},
           {"bad quantity", head + "metadata: {name: q}\nspec: {deserved: {memory: 12XB}}\n",
            "spec.deserved.memory", "12XB"},
       }) {
    LoadResult r = LoadOne("q.yaml", c.yaml);
    EXPECT_FALSE(r.ok()) << c.name;
    EXPECT_TRUE(HasDiagnostic(r, Severity::kError, "q.yaml", c.path, c.text)) << c.name << "\n"
                                                                              << Dump(r);
  }
}

}  // namespace
}  // namespace taskgov::config
