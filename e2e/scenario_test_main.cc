// main() of the scenario tests: the one argument is the extender binary's runfiles path
// ($(rootpath //extender:taskgov-extender)), kept in ExtenderBinary().

#include <gtest/gtest.h>

#include <cstdio>

#include "e2e/scenario_test_util.h"
#include "scheduler/common/testing/process.h"

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (argc < 2) {
    fprintf(stderr, "usage: %s <path to taskgov-extender>\n", argv[0]);
    return 2;
  }
  taskgov::e2e::ExtenderBinary() = taskgov::common::testing::RunfilePath(argv[1]);
  return RUN_ALL_TESTS();
}
