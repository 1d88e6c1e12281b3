#include "common/testing/process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

extern char** environ;

namespace taskgov::common::testing {

using Clock = std::chrono::steady_clock;

Subprocess::~Subprocess() {
  if (pid_ > 0 && !exit_code_) {
    ::kill(pid_, SIGKILL);
    int status = 0;
    ::waitpid(pid_, &status, 0);
  }
  if (stderr_fd_ >= 0) ::close(stderr_fd_);
}

common::Status Subprocess::Start(const std::string& program, const std::vector<std::string>& args) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return common::Error{std::string("pipe: ") + strerror(errno)};
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDERR_FILENO);
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(program.c_str()));
  for (const std::string& arg : args) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  int rc = posix_spawn(&pid_, program.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(fds[1]);
  if (rc != 0) {
    ::close(fds[0]);
    pid_ = -1;
    return common::Error{"spawn " + program + ": " + strerror(rc)};
  }
  stderr_fd_ = fds[0];
  return common::Status::Ok();
}

bool Subprocess::ReadSome(std::chrono::milliseconds timeout) {
  if (stderr_fd_ < 0) return false;
  pollfd pfd{stderr_fd_, POLLIN, 0};
  int ready = ::poll(&pfd, 1, static_cast<int>(timeout.count()));
  if (ready <= 0) return ready == 0;  // timeout: nothing yet, but the pipe is still open
  char buf[4096];
  ssize_t n = ::read(stderr_fd_, buf, sizeof(buf));
  if (n <= 0) {
    ::close(stderr_fd_);
    stderr_fd_ = -1;
    if (!partial_.empty()) lines_.push_back(std::move(partial_));
    partial_.clear();
    return false;
  }
  partial_.append(buf, static_cast<size_t>(n));
  size_t newline;
  while ((newline = partial_.find('\n')) != std::string::npos) {
    lines_.push_back(partial_.substr(0, newline));
    partial_.erase(0, newline + 1);
  }
  return true;
}

common::Result<std::string> Subprocess::WaitForLine(const std::string& needle,
                                                    std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  size_t checked = 0;
  while (true) {
    for (; checked < lines_.size(); ++checked) {
      if (lines_[checked].find(needle) != std::string::npos) return lines_[checked];
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) break;
    if (!ReadSome(left) && stderr_fd_ < 0) break;
  }
  std::string seen;
  for (const std::string& line : lines_) seen += "\n  " + line;
  return common::Error{"no stderr line containing '" + needle + "'; saw:" + seen};
}

void Subprocess::DrainStderr(std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  while (stderr_fd_ >= 0) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) break;
    ReadSome(left);
  }
}

void Subprocess::Signal(int signal_number) {
  if (pid_ > 0 && !exit_code_) ::kill(pid_, signal_number);
}

std::optional<int> Subprocess::Wait(std::chrono::milliseconds timeout) {
  if (exit_code_) return exit_code_;
  if (pid_ <= 0) return std::nullopt;
  const auto deadline = Clock::now() + timeout;
  while (true) {
    int status = 0;
    pid_t r = ::waitpid(pid_, &status, WNOHANG);
    if (r == pid_) {
      exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      return exit_code_;
    }
    if (Clock::now() >= deadline) return std::nullopt;
    // Reading stderr doubles as the wait: it returns as soon as the child writes or exits.
    if (!ReadSome(std::chrono::milliseconds(5))) ::usleep(1000);
  }
}

std::string RunfilePath(const std::string& rootpath) {
  if (!rootpath.empty() && rootpath.front() == '/') return rootpath;
  char cwd[4096];
  if (::getcwd(cwd, sizeof(cwd)) == nullptr) return rootpath;
  return std::string(cwd) + "/" + rootpath;
}

}  // namespace taskgov::common::testing
