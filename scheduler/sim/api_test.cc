#include "scheduler/sim/api.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "scheduler/common/clock.h"
#include "scheduler/testing/builders.h"

namespace taskgov::scheduler::sim {
namespace {

using testing::PodBuilder;

// The API server gives each pod its uid ("sim-<n>") and finds it by it, whatever uid the pod
// came with; a uid it did not give, or of a pod removed, finds nothing.
TEST(ApiTest, FindsAPodByTheUidItGaveAndNothingElse) {
  common::FakeClock clock;
  Api api(&clock);
  const std::string a = api.CreatePod(PodBuilder("a").Build(), PodTag{"job-a"}).pod.uid;
  const std::string b = api.CreatePod(PodBuilder("b").Build(), PodTag{"job-b"}).pod.uid;
  EXPECT_EQ(a, "sim-00000001");
  ASSERT_NE(api.Find(a), nullptr);
  EXPECT_EQ(api.Find(a)->pod.name, "a");
  EXPECT_EQ(api.Find(a)->tag.job, "job-a");
  ASSERT_NE(api.Find(b), nullptr);
  EXPECT_EQ(api.Find(b)->pod.name, "b");

  for (const std::string& other :
       {std::string("uid-a"), std::string("sim-"), std::string("sim-1"),
        std::string("sim-00000003"), std::string("sim-00000001x"), std::string("sim--0000001"),
        std::string("xim-00000001"), std::string("")}) {
    EXPECT_EQ(api.Find(other), nullptr) << other;
  }

  api.Remove(a);
  EXPECT_EQ(api.Find(a), nullptr);
  EXPECT_FALSE(api.DeleteGracefully(a, 0, ""));  // gone: nothing to delete
  ASSERT_EQ(api.pods().size(), 1u);
  EXPECT_EQ(api.pods()[0]->pod.uid, b);

  // A pod created after a removal gets a new number; the removed one stays unknown.
  const std::string c = api.CreatePod(PodBuilder("c").Build(), PodTag{"job-c"}).pod.uid;
  EXPECT_EQ(c, "sim-00000003");
  EXPECT_EQ(api.Find(a), nullptr);
  ASSERT_NE(api.Find(c), nullptr);
  EXPECT_EQ(api.Find(c)->pod.name, "c");
  std::vector<std::string> names;
  for (const PodObject* o : api.pods()) names.push_back(o->pod.name);
  EXPECT_EQ(names, (std::vector<std::string>{"b", "c"}));  // oldest first
}

}  // namespace
}  // namespace taskgov::scheduler::sim
