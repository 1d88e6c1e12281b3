// check-config DIR: the same report as `taskgov-extender --check-config DIR`, as a standalone tool
// for operators and CI (exit 0: valid, 1: invalid, 2: usage).

#include <iostream>

#include "config/check_config.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: check-config DIR\n";
    return 2;
  }
  return taskgov::config::RunCheckConfig(argv[1], std::cout);
}
