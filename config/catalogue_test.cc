#include "config/catalogue.h"

#include <gtest/gtest.h>

namespace taskgov::config {
namespace {

constexpr int64_t kGi = int64_t{1} << 30;

TEST(Catalogue, KnowsTheHyperPodInstanceTypes) {
  const Catalogue& c = Catalogue::Builtin();
  struct Case {
    const char* name;
    const char* resource;
    int64_t accelerators, vcpus, memory_gib;
  };
  for (const Case& k : std::initializer_list<Case>{
           {"ml.p4d.24xlarge", "nvidia.com/gpu", 8, 96, 1152},
           {"ml.p4de.24xlarge", "nvidia.com/gpu", 8, 96, 1152},
           {"ml.p5.48xlarge", "nvidia.com/gpu", 8, 192, 2048},
           {"ml.p5e.48xlarge", "nvidia.com/gpu", 8, 192, 2048},
           {"ml.p5en.48xlarge", "nvidia.com/gpu", 8, 192, 2048},
           {"ml.p6-b200.48xlarge", "nvidia.com/gpu", 8, 192, 2048},
           {"ml.g5.12xlarge", "nvidia.com/gpu", 4, 48, 192},
           {"ml.g6.48xlarge", "nvidia.com/gpu", 8, 192, 768},
           {"ml.g6e.xlarge", "nvidia.com/gpu", 1, 4, 32},
           {"ml.trn1.32xlarge", "aws.amazon.com/neuron", 16, 128, 512},
           {"ml.trn1n.32xlarge", "aws.amazon.com/neuron", 16, 128, 512},
           {"ml.trn2.48xlarge", "aws.amazon.com/neuron", 16, 192, 2048},
           {"ml.inf2.48xlarge", "aws.amazon.com/neuron", 12, 192, 768},
           {"ml.m5.2xlarge", "", 0, 8, 32},
           {"ml.c5.4xlarge", "", 0, 16, 32},
           {"ml.r5.large", "", 0, 2, 16},
           {"ml.t3.medium", "", 0, 2, 4},
       }) {
    const InstanceType* t = c.Find(k.name);
    ASSERT_NE(t, nullptr) << k.name;
    EXPECT_EQ(t->accelerator_resource, k.resource) << k.name;
    EXPECT_EQ(t->accelerators, k.accelerators) << k.name;
    EXPECT_EQ(t->vcpus, k.vcpus) << k.name;
    EXPECT_EQ(t->memory_mib, k.memory_gib * 1024) << k.name;
  }
  EXPECT_EQ(c.Find("p5.48xlarge"), c.Find("ml.p5.48xlarge"));  // EKS label without "ml."
  EXPECT_EQ(c.Find("ml.nope.xlarge"), nullptr);
  EXPECT_EQ(c.Find("ml.c5n.large")->memory_mib, 5376);  // 5.25 GiB
}

struct RatioCase {
  std::string name;
  std::string type;
  ComputeAmounts amounts;
  scheduler::model::ResourceList want;
};

TEST(DeriveQuota, RatioDefaults) {
  const Catalogue& c = Catalogue::Builtin();
  const std::vector<RatioCase> cases = {
      {"count",
       "ml.p5.48xlarge",
       {.count = 2},
       {{"cpu", 384000}, {"memory", 4096 * kGi}, {"nvidia.com/gpu", 16}}},
      {"accelerators scale vcpu and memory",
       "ml.p5.48xlarge",
       {.accelerators = 4},
       {{"cpu", 96000}, {"memory", 1024 * kGi}, {"nvidia.com/gpu", 4}}},
      {"explicit vcpu wins",
       "ml.p5.48xlarge",
       {.accelerators = 4, .vcpu_millis = 10000},
       {{"cpu", 10000}, {"memory", 1024 * kGi}, {"nvidia.com/gpu", 4}}},
      {"vcpu only: memory scales, no accelerators",
       "ml.g5.12xlarge",
       {.vcpu_millis = 12000},
       {{"cpu", 12000}, {"memory", 48 * kGi}, {"nvidia.com/gpu", 0}}},
      {"memory only: vcpu scales",
       "ml.m5.2xlarge",
       {.memory_bytes = 8 * kGi},
       {{"cpu", 2000}, {"memory", 8 * kGi}}},
      {"fractions round up",
       "ml.g5.12xlarge",
       {.vcpu_millis = 1},
       {{"cpu", 1}, {"memory", 4294968}, {"nvidia.com/gpu", 0}}},  // 192Gi / 48000 = 4294967.3
      {"neuron",
       "ml.trn1.32xlarge",
       {.accelerators = 8},
       {{"aws.amazon.com/neuron", 8}, {"cpu", 64000}, {"memory", 256 * kGi}}},
      {"mig partition",
       "ml.p5.48xlarge",
       {.partition_type = "mig-1g.10gb", .partition_count = 14},
       {{"cpu", 48000},
        {"memory", 512 * kGi},
        {"nvidia.com/gpu", 0},
        {"nvidia.com/mig-1g.10gb", 14}}},
      {"unknown type with explicit values",
       "ml.x9.xlarge",
       {.vcpu_millis = 4000, .memory_bytes = 16 * kGi},
       {{"cpu", 4000}, {"memory", 16 * kGi}}},
  };
  for (const RatioCase& k : cases) {
    common::Result<scheduler::model::ResourceList> got =
        DeriveQuota(c.Find(k.type), k.type, k.amounts);
    ASSERT_TRUE(got.ok()) << k.name << ": " << got.error().message;
    EXPECT_EQ(*got, k.want) << k.name << ": got " << got->ToString();
  }
}

// Found by config_hyperpod_fuzz: Accelerators 0 on a type without accelerators divided by its 0
// accelerators per instance (a SIGFPE at load). It is no share of an instance, as on any type;
// explicit values still win.
TEST(DeriveQuota, ZeroAcceleratorsOnATypeWithoutAccelerators) {
  const Catalogue& c = Catalogue::Builtin();
  common::Result<scheduler::model::ResourceList> zero =
      DeriveQuota(c.Find("ml.c5n.4xlarge"), "ml.c5n.4xlarge", {.accelerators = 0});
  ASSERT_TRUE(zero.ok()) << zero.error().message;
  EXPECT_EQ(zero->Get("cpu"), 0);
  EXPECT_EQ(zero->Get("memory"), 0);
  common::Result<scheduler::model::ResourceList> explicit_cpu = DeriveQuota(
      c.Find("ml.c5n.4xlarge"), "ml.c5n.4xlarge", {.accelerators = 0, .vcpu_millis = 4000});
  ASSERT_TRUE(explicit_cpu.ok()) << explicit_cpu.error().message;
  EXPECT_EQ(explicit_cpu->Get("cpu"), 4000);
}

TEST(DeriveQuota, Errors) {
  const Catalogue& c = Catalogue::Builtin();
  struct Case {
    std::string name, type;
    ComputeAmounts amounts;
    std::string error;
  };
  for (const Case& k : std::vector<Case>{
           {"nothing", "ml.p5.48xlarge", {}, "none of"},
           {"unknown count", "ml.x9.xlarge", {.count = 1}, "not in the catalogue"},
           {"unknown without memory",
            "ml.x9.xlarge",
            {.vcpu_millis = 1000},
            "not in the catalogue"},
           {"unknown accelerators",
            "ml.x9.xlarge",
            {.accelerators = 1, .vcpu_millis = 1, .memory_bytes = 1},
            "accelerator resource is unknown"},
           {"cpu type with accelerators", "ml.m5.large", {.accelerators = 1}, "no accelerators"},
           {"unknown MIG profile",
            "ml.g5.12xlarge",
            {.partition_type = "mig-1g.10gb", .partition_count = 1},
            "offers no accelerator partition"},
           {"overflow", "ml.p5.48xlarge", {.count = int64_t{1} << 40}, "overflows"},
       }) {
    common::Result<scheduler::model::ResourceList> got =
        DeriveQuota(c.Find(k.type), k.type, k.amounts);
    ASSERT_FALSE(got.ok()) << k.name;
    EXPECT_NE(got.error().message.find(k.error), std::string::npos)
        << k.name << ": " << got.error().message;
  }
}

}  // namespace
}  // namespace taskgov::config
