#pragma once

// Subprocess: the one helper tests use to run another program. It starts a program with its
// stderr piped back (optionally its stdout too, or both into a log file instead), feeds it a
// given stdin text, lets a test wait for a log line instead of sleeping, signals it and collects
// its exit status. RunToCompletion() runs a command-line tool through it: given stdin, output
// captured, exit code returned, killed at a deadline. Test support.
//
// Process groups: the child is started as the leader of a new process group, so whatever it
// starts stays in that group unless it moves itself. The helper ends the group with the child:
// when Wait() sees the child exit it SIGKILLs what is left of the group before reaping the child
// (an unreaped child keeps the group id from being reused), and Kill() and the destructor
// SIGKILL the whole group. Signal() goes to the child alone, so a test of graceful shutdown
// signals exactly the program it started. A group the test process never got to end (the test
// itself killed, e.g. by Bazel at its timeout) is not in the test's group and outlives it.
//
// Failures are values: Start() returns an error a person can act on; Wait() returns nullopt at
// its timeout. Thread-safety: one thread at a time per Subprocess; pid() may be read from any
// thread after Start().

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "scheduler/common/result.h"

namespace taskgov::common::testing {

struct SubprocessOptions {
  // The child's stdin: unset, the test's own; set, exactly this text and then end of file.
  std::optional<std::string> stdin_text;
  // The child's stdout joins its stderr in the pipe that WaitForLine, DrainStderr and Wait read,
  // in the order written; otherwise stdout is the test's own.
  bool capture_stdout = false;
  // Set: stdout and stderr are appended to this file and nothing is piped, for a long-running
  // server whose output nobody reads as it runs. Exclusive with capture_stdout.
  std::string output_file;
};

class Subprocess {
 public:
  Subprocess() = default;
  ~Subprocess();  // SIGKILLs the group of a child that is still running, and reaps the child
  Subprocess(const Subprocess&) = delete;
  Subprocess& operator=(const Subprocess&) = delete;

  // Starts `program` (a path; argv[0] is `program`) with `args`, once per Subprocess.
  [[nodiscard]] common::Status Start(const std::string& program,
                                     const std::vector<std::string>& args,
                                     const SubprocessOptions& options = {});

  // Reads piped lines until one contains `needle` (returns it) or the timeout passes. Every
  // line read is kept in stderr_lines().
  [[nodiscard]] common::Result<std::string> WaitForLine(const std::string& needle,
                                                        std::chrono::milliseconds timeout);
  // Reads whatever the pipe still holds until end of file (every writer gone) or the timeout;
  // returns whether the pipe is closed (also when nothing was piped).
  bool DrainStderr(std::chrono::milliseconds timeout);

  // Sends `signal_number` to the child alone (not its group), while it has not been reaped.
  void Signal(int signal_number);
  // SIGKILLs the child and its whole group, while the child has not been reaped; Wait() reaps
  // it.
  void Kill();
  // Waits for exit, reading the pipe meanwhile; on exit ends the rest of the group and reaps the
  // child. Returns the exit code, 128+signal if killed, or nullopt on timeout.
  [[nodiscard]] std::optional<int> Wait(std::chrono::milliseconds timeout);

  pid_t pid() const { return pid_; }
  // What came through the pipe so far, split into lines (a last unterminated line once the pipe
  // is closed), and the same bytes exactly as written.
  const std::vector<std::string>& stderr_lines() const { return lines_; }
  const std::string& piped_output() const { return output_; }

 private:
  bool ReadSome(std::chrono::milliseconds timeout);
  bool Reaped();

  pid_t pid_ = -1;
  int stderr_fd_ = -1;
  std::string output_;
  std::string partial_;
  std::vector<std::string> lines_;
  std::optional<int> exit_code_;
};

// The outcome of RunToCompletion.
struct ToolRun {
  int exit_code = -1;      // 128+signal if killed; -1 if it did not start
  std::string output;      // stdout and stderr as written; after it, why the run failed, if it did
  bool timed_out = false;  // it was still running at the timeout and was killed with its group
};

// Runs args[0] (a path) with args[1...] to completion: stdin is `stdin_text`, stdout and stderr
// are captured together. A tool still running at `timeout` is SIGKILLed with its group and
// reported (timed_out, exit code 137, a line saying so after its output); the call returns
// within `timeout` plus a few seconds whatever the tool does.
[[nodiscard]] ToolRun RunToCompletion(const std::vector<std::string>& args,
                                      const std::string& stdin_text = "",
                                      std::chrono::milliseconds timeout = std::chrono::seconds(30));

// Path of a runfile given as a test argument ($(rootpath ...)), made absolute.
[[nodiscard]] std::string RunfilePath(const std::string& rootpath);

}  // namespace taskgov::common::testing
