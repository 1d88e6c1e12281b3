#pragma once

// Subprocess: starts a program with its stderr piped back, so a test can wait for a log line
// instead of sleeping, then signal it and collect its exit status. Test support.

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"

namespace taskgov::common::testing {

class Subprocess {
 public:
  Subprocess() = default;
  ~Subprocess();  // SIGKILLs and reaps a child that is still running
  Subprocess(const Subprocess&) = delete;
  Subprocess& operator=(const Subprocess&) = delete;

  [[nodiscard]] common::Status Start(const std::string& program,
                                     const std::vector<std::string>& args);

  // Reads stderr lines until one contains `needle` (returns it) or the timeout passes. Every
  // line read is kept in stderr_lines().
  [[nodiscard]] common::Result<std::string> WaitForLine(const std::string& needle,
                                                        std::chrono::milliseconds timeout);
  // Reads whatever stderr remains until EOF or the timeout.
  void DrainStderr(std::chrono::milliseconds timeout);

  void Signal(int signal_number);
  // Waits for exit; returns the exit code, 128+signal if killed, or nullopt on timeout.
  [[nodiscard]] std::optional<int> Wait(std::chrono::milliseconds timeout);

  pid_t pid() const { return pid_; }
  const std::vector<std::string>& stderr_lines() const { return lines_; }

 private:
  bool ReadSome(std::chrono::milliseconds timeout);

  pid_t pid_ = -1;
  int stderr_fd_ = -1;
  std::string partial_;
  std::vector<std::string> lines_;
  std::optional<int> exit_code_;
};

// Path of a runfile given as a test argument ($(rootpath ...)), made absolute.
[[nodiscard]] std::string RunfilePath(const std::string& rootpath);

}  // namespace taskgov::common::testing
