#pragma once

// Runs a command-line tool to completion with stdin from a file and stdout+stderr captured in a
// file, for tests that check output with external tools (promtool). Test support.

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

extern char** environ;

namespace taskgov::metrics::testing {

inline constexpr char kPromtool[] = "/usr/bin/promtool";

struct ToolRun {
  int exit_code = -1;  // 128+signal if killed; -1 if it did not start
  std::string output;  // stdout and stderr
};

// A path for a scratch file under $TEST_TMPDIR.
inline std::string ScratchPath(const std::string& name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  return std::string(dir != nullptr ? dir : "/tmp") + "/" + name;
}

inline ToolRun RunTool(const std::vector<std::string>& args, const std::string& stdin_text = "") {
  static int counter = 0;
  const std::string base =
      ScratchPath("tool-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
  const std::string in_path = base + ".in", out_path = base + ".out";
  std::ofstream(in_path) << stdin_text;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, in_path.c_str(), O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, out_path.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = -1;
  ToolRun run;
  const int rc = posix_spawn(&pid, args[0].c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    run.output = "spawn " + args[0] + ": " + strerror(rc);
    return run;
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  std::stringstream out;
  out << std::ifstream(out_path).rdbuf();
  run.output = out.str();
  return run;
}

}  // namespace taskgov::metrics::testing
