// taskgov: the command-line interface (also the kubectl plugin `kubectl-taskgov`). Wiring only:
// the commands live in commands.cc.

#include <unistd.h>

#include <iostream>
#include <string>
#include <vector>

#include "extender/cli/commands.h"

int main(int argc, char** argv) {
  taskgov::cli::Environment env;
  env.out = &std::cout;
  env.err = &std::cerr;
  env.in = &std::cin;
  env.interactive = ::isatty(0) != 0;
  const std::string self = argc > 0 ? argv[0] : "taskgov";
  const std::string base = self.substr(self.find_last_of('/') + 1);
  env.program = base == "kubectl-taskgov" ? "kubectl taskgov" : "taskgov";
  const std::vector<std::string> args(argv + (argc > 0 ? 1 : 0), argv + argc);
  return taskgov::cli::RunTaskgov(args, env);
}
