// check-config DIR: the same report as `taskgov-extender --check-config DIR`, as a standalone tool
// for operators and CI (exit 0: valid, 1: invalid, 2: usage). Under `bazel run`, a relative DIR
// is taken from the directory bazel was run in.

#include <cstdlib>
#include <iostream>
#include <string>

#include "config/check_config.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: check-config DIR\n";
    return 2;
  }
  std::string dir = argv[1];
  const char* cwd = std::getenv("BUILD_WORKING_DIRECTORY");
  if (!dir.empty() && dir[0] != '/' && cwd != nullptr) dir = std::string(cwd) + "/" + dir;
  return taskgov::config::RunCheckConfig(dir, std::cout);
}
