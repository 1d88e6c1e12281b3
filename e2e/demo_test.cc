// tools/demo keeps its promise: the narrated demo runs to the end and every claim it makes holds
// (its exit status is 0 only then).

#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "e2e/process.h"

namespace taskgov::e2e {
namespace {

std::string g_demo;
std::string g_extender;

TEST(DemoTest, EveryNarratedStepHolds) {
  Subprocess demo;
  ASSERT_TRUE(demo.Start(g_demo, {g_extender}).ok());
  std::optional<int> code = demo.Wait(std::chrono::seconds(120));
  ASSERT_TRUE(code.has_value()) << "the demo did not finish within two minutes";
  EXPECT_EQ(*code, 0) << "see the narration above for the claim that did not hold";
}

}  // namespace
}  // namespace taskgov::e2e

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (argc < 3) {
    fprintf(stderr, "usage: %s <demo> <taskgov-extender>\n", argv[0]);
    return 2;
  }
  taskgov::e2e::g_demo = taskgov::e2e::RunfilePath(argv[1]);
  taskgov::e2e::g_extender = taskgov::e2e::RunfilePath(argv[2]);
  return RUN_ALL_TESTS();
}
