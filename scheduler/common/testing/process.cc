#include "scheduler/common/testing/process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <utility>

extern char** environ;

namespace taskgov::common::testing {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// Closes the descriptor it owns when it goes out of scope.
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  ~UniqueFd() { Reset(); }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    Reset();
    fd_ = std::exchange(other.fd_, -1);
    return *this;
  }

  int get() const { return fd_; }
  int Release() { return std::exchange(fd_, -1); }
  void Reset() {
    if (fd_ >= 0) ::close(std::exchange(fd_, -1));
  }

 private:
  int fd_ = -1;
};

common::Error ErrnoError(const std::string& what) {
  return common::Error{what + ": " + strerror(errno)};
}

// An anonymous file holding `text`, positioned at its start: the child's stdin.
common::Status TextFile(const std::string& text, UniqueFd* out) {
  UniqueFd fd(::memfd_create("subprocess-stdin", MFD_CLOEXEC));
  if (fd.get() < 0) return ErrnoError("memfd_create");
  for (size_t done = 0; done < text.size();) {
    const ssize_t n = ::write(fd.get(), text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrnoError("write stdin text");
    done += static_cast<size_t>(n);
  }
  if (::lseek(fd.get(), 0, SEEK_SET) != 0) return ErrnoError("lseek stdin text");
  *out = std::move(fd);
  return common::Status::Ok();
}

// How long a group that was sent SIGKILL may take to be reaped, and the pipe to reach end of
// file after the tool exits (its writers were killed with the group; only a process that left
// the group could keep it open).
constexpr milliseconds kReapTimeout{5000};
constexpr milliseconds kDrainTimeout{2000};

}  // namespace

Subprocess::~Subprocess() {
  if (pid_ > 0 && !exit_code_) {
    Kill();
    int status = 0;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
  }
  if (stderr_fd_ >= 0) ::close(stderr_fd_);
}

common::Status Subprocess::Start(const std::string& program, const std::vector<std::string>& args,
                                 const SubprocessOptions& options) {
  if (pid_ > 0) return common::Error{"start " + program + ": this Subprocess already ran one"};
  if (options.capture_stdout && !options.output_file.empty()) {
    return common::Error{"start " + program + ": capture_stdout and output_file are exclusive"};
  }
  UniqueFd stdin_fd, read_end, write_end;
  if (options.stdin_text) {
    if (common::Status s = TextFile(*options.stdin_text, &stdin_fd); !s.ok()) {
      return s.error().Wrap("start " + program);
    }
  }
  if (!options.output_file.empty()) {
    write_end = UniqueFd(
        ::open(options.output_file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644));
    if (write_end.get() < 0) return ErrnoError("start " + program + ": " + options.output_file);
  } else {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) return ErrnoError("start " + program + ": pipe");
    read_end = UniqueFd(fds[0]);
    write_end = UniqueFd(fds[1]);
  }

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (stdin_fd.get() >= 0) posix_spawn_file_actions_adddup2(&actions, stdin_fd.get(), STDIN_FILENO);
  if (options.capture_stdout || !options.output_file.empty()) {
    posix_spawn_file_actions_adddup2(&actions, write_end.get(), STDOUT_FILENO);
  }
  posix_spawn_file_actions_adddup2(&actions, write_end.get(), STDERR_FILENO);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  // A new group, led by the child, with no signal blocked whatever the caller blocks (the demo
  // blocks Ctrl-C for sigwait).
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK);
  posix_spawnattr_setpgroup(&attr, 0);
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attr, &none);
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(program.c_str()));
  for (const std::string& arg : args) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, program.c_str(), &actions, &attr, argv.data(), environ);
  posix_spawnattr_destroy(&attr);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) return common::Error{"spawn " + program + ": " + strerror(rc)};
  pid_ = pid;
  stderr_fd_ = read_end.Release();  // -1 when the output goes to a file
  return common::Status::Ok();
}

bool Subprocess::ReadSome(milliseconds timeout) {
  if (stderr_fd_ < 0) return false;
  pollfd pfd{stderr_fd_, POLLIN, 0};
  int ready = ::poll(&pfd, 1, static_cast<int>(timeout.count()));
  if (ready <= 0) return ready == 0 || errno == EINTR;  // nothing yet; the pipe is still open
  char buf[4096];
  ssize_t n = ::read(stderr_fd_, buf, sizeof(buf));
  if (n < 0 && errno == EINTR) return true;
  if (n <= 0) {
    ::close(stderr_fd_);
    stderr_fd_ = -1;
    if (!partial_.empty()) lines_.push_back(std::move(partial_));
    partial_.clear();
    return false;
  }
  output_.append(buf, static_cast<size_t>(n));
  partial_.append(buf, static_cast<size_t>(n));
  size_t newline;
  while ((newline = partial_.find('\n')) != std::string::npos) {
    lines_.push_back(partial_.substr(0, newline));
    partial_.erase(0, newline + 1);
  }
  return true;
}

common::Result<std::string> Subprocess::WaitForLine(const std::string& needle,
                                                    milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  size_t checked = 0;
  while (true) {
    for (; checked < lines_.size(); ++checked) {
      if (lines_[checked].find(needle) != std::string::npos) return lines_[checked];
    }
    auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) break;
    if (!ReadSome(left) && stderr_fd_ < 0) break;
  }
  std::string seen;
  for (const std::string& line : lines_) seen += "\n  " + line;
  return common::Error{"no stderr line containing '" + needle + "'; saw:" + seen};
}

bool Subprocess::DrainStderr(milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  while (stderr_fd_ >= 0) {
    auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) break;
    ReadSome(left);
  }
  return stderr_fd_ < 0;
}

void Subprocess::Signal(int signal_number) {
  if (pid_ > 0 && !exit_code_) ::kill(pid_, signal_number);
}

void Subprocess::Kill() {
  if (pid_ <= 0 || exit_code_) return;
  ::kill(-pid_, SIGKILL);
  ::kill(pid_, SIGKILL);  // also when the child has moved itself to another group
}

bool Subprocess::Reaped() {
  siginfo_t info{};
  // WNOWAIT: the exited child stays a zombie, so its pid (the group id) cannot be reused while
  // the rest of the group is killed.
  if (::waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT) != 0 ||
      info.si_pid != pid_) {
    return false;
  }
  ::kill(-pid_, SIGKILL);
  int status = 0;
  while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return true;
}

std::optional<int> Subprocess::Wait(milliseconds timeout) {
  if (exit_code_) return exit_code_;
  if (pid_ <= 0) return std::nullopt;
  const auto deadline = Clock::now() + timeout;
  while (!Reaped()) {
    if (Clock::now() >= deadline) return std::nullopt;
    // Reading the pipe doubles as the wait: it returns as soon as the child writes or exits.
    if (!ReadSome(milliseconds(5))) ::usleep(1000);
  }
  return exit_code_;
}

ToolRun RunToCompletion(const std::vector<std::string>& args, const std::string& stdin_text,
                        milliseconds timeout) {
  ToolRun run;
  if (args.empty()) {
    run.output = "RunToCompletion: no program given";
    return run;
  }
  Subprocess tool;
  SubprocessOptions options;
  options.stdin_text = stdin_text;
  options.capture_stdout = true;
  if (common::Status s = tool.Start(args[0], {args.begin() + 1, args.end()}, options); !s.ok()) {
    run.output = s.error().message;
    return run;
  }
  std::optional<int> code = tool.Wait(timeout);
  if (!code) {
    run.timed_out = true;
    tool.Kill();
    code = tool.Wait(kReapTimeout);
  }
  const bool complete = tool.DrainStderr(kDrainTimeout);
  run.output = tool.piped_output();
  if (run.timed_out) {
    run.output += "\n[" + args[0] + " was still running after " + std::to_string(timeout.count()) +
                  " ms and was killed with its process group]\n";
  }
  if (!complete) {
    run.output += "\n[output may be cut short: a process that left " + args[0] +
                  "'s process group still holds its stdout or stderr]\n";
  }
  run.exit_code = code.value_or(-1);
  return run;
}

std::string RunfilePath(const std::string& rootpath) {
  if (!rootpath.empty() && rootpath.front() == '/') return rootpath;
  char cwd[4096];
  if (::getcwd(cwd, sizeof(cwd)) == nullptr) return rootpath;
  return std::string(cwd) + "/" + rootpath;
}

}  // namespace taskgov::common::testing
