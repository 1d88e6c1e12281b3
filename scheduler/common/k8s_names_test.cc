#include "scheduler/common/k8s_names.h"

#include <gtest/gtest.h>

#include <string>

namespace taskgov::common {
namespace {

TEST(K8sNamesTest, DnsLabel) {
  for (const char* ok : {"a", "team-a", "0", "a0-b1", "hyperpod-ns-team-a"}) {
    EXPECT_TRUE(IsDnsLabel(ok)) << ok;
  }
  for (const char* bad : {"", "-a", "a-", "A", "a_b", "a.b", "team a"}) {
    EXPECT_FALSE(IsDnsLabel(bad)) << bad;
  }
  EXPECT_TRUE(IsDnsLabel(std::string(63, 'a')));
  EXPECT_FALSE(IsDnsLabel(std::string(64, 'a')));
  EXPECT_FALSE(IsDnsLabel("abcd", 3));
}

TEST(K8sNamesTest, DnsSubdomain) {
  for (const char* ok : {"a", "kueue.x-k8s.io", "node.kubernetes.io", "a.b-c.d0"}) {
    EXPECT_TRUE(IsDnsSubdomain(ok)) << ok;
  }
  for (const char* bad : {"", ".a", "a.", "a..b", "A.io", "a_b.io", "-a.io", "a-.io"}) {
    EXPECT_FALSE(IsDnsSubdomain(bad)) << bad;
  }
  // No limit per label, 253 in all (as IsDNS1123Subdomain).
  EXPECT_TRUE(IsDnsSubdomain(std::string(100, 'a') + ".io"));
  EXPECT_TRUE(IsDnsSubdomain(std::string(253, 'a')));
  EXPECT_FALSE(IsDnsSubdomain(std::string(254, 'a')));
}

TEST(K8sNamesTest, QualifiedName) {
  for (const char* ok : {"gpus", "node.kubernetes.io/instance-type", "nvidia.com/gpu.product",
                         "Tier_1", "a/B", "x.y/z-0"}) {
    EXPECT_TRUE(IsQualifiedName(ok)) << ok;
  }
  for (const char* bad :
       {"", "/a", "a/", "a/b/c", "Example.com/a", "-a", "a-", "a b", "a:b", "_a"}) {
    EXPECT_FALSE(IsQualifiedName(bad)) << bad;
  }
  EXPECT_TRUE(IsQualifiedName(std::string(63, 'a')));
  EXPECT_FALSE(IsQualifiedName(std::string(64, 'a')));
  EXPECT_FALSE(IsQualifiedName(std::string(254, 'a') + "/b"));
}

TEST(K8sNamesTest, LabelValue) {
  for (const char* ok : {"", "8", "ml.p5.48xlarge", "Gold_1", "a-b"}) {
    EXPECT_TRUE(IsLabelValue(ok)) << ok;
  }
  for (const char* bad : {"-1", "+1", "a b", "a/b", ".a", "a."}) {
    EXPECT_FALSE(IsLabelValue(bad)) << bad;
  }
  EXPECT_TRUE(IsLabelValue(std::string(63, 'x')));
  EXPECT_FALSE(IsLabelValue(std::string(64, 'x')));
}

}  // namespace
}  // namespace taskgov::common
