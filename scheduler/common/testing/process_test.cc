// Subprocess and RunToCompletion against /bin/sh and /bin/cat: exit codes, captured output,
// stdin, the kill at a timeout, and the process group ended with the child.

#include "scheduler/common/testing/process.h"

#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace taskgov::common::testing {
namespace {

using std::chrono::milliseconds;

constexpr char kSh[] = "/bin/sh";
constexpr char kCat[] = "/bin/cat";

// A bound, not an expectation: the tools below exit at once unless a case says otherwise.
constexpr milliseconds kQuick{20'000};

struct ToolCase {
  std::string name = "";
  std::vector<std::string> args = {};
  std::string stdin_text = "";
  milliseconds timeout = kQuick;
  int exit_code = 0;
  std::string output = "";           // the whole output, unless output_contains is set
  std::string output_contains = "";  // a part of the output
  bool timed_out = false;
};

std::string Lines(int count) {
  std::string text;
  for (int i = 0; i < count; ++i) text += "line " + std::to_string(i) + "\n";
  return text;
}

void PrintTo(const ToolCase& c, std::ostream* os) { *os << c.name; }

class RunToCompletionTest : public ::testing::TestWithParam<ToolCase> {};

TEST_P(RunToCompletionTest, ReportsExitCodeAndOutput) {
  const ToolCase& c = GetParam();
  const ToolRun run = RunToCompletion(c.args, c.stdin_text, c.timeout);
  EXPECT_EQ(run.exit_code, c.exit_code) << run.output;
  EXPECT_EQ(run.timed_out, c.timed_out) << run.output;
  if (c.output_contains.empty()) {
    EXPECT_EQ(run.output, c.output);
  } else {
    EXPECT_NE(run.output.find(c.output_contains), std::string::npos) << run.output;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Tools, RunToCompletionTest,
    ::testing::Values(
        ToolCase{.name = "ExitCode", .args = {kSh, "-c", "exit 3"}, .exit_code = 3},
        ToolCase{.name = "StdoutAndStderrInOrder",
                 .args = {kSh, "-c", "echo out; echo err >&2; printf tail"},
                 .output = "out\nerr\ntail"},
        ToolCase{
            .name = "StdinText", .args = {kCat}, .stdin_text = "one\ntwo", .output = "one\ntwo"},
        ToolCase{.name = "EmptyStdinIsEndOfFile", .args = {kCat}},
        // More than a pipe holds, both ways: the output is read while the tool runs.
        ToolCase{.name = "LargeStdinAndOutput",
                 .args = {kCat},
                 .stdin_text = Lines(100'000),
                 .output = Lines(100'000)},
        ToolCase{.name = "KilledBySignalIs128PlusSignal",
                 .args = {kSh, "-c", "kill -TERM $$"},
                 .exit_code = 128 + SIGTERM},
        // The background sleep keeps the output pipe open; ending the group with the shell
        // closes it, so nothing is reported cut short.
        ToolCase{.name = "GroupEndedWhenTheToolExits",
                 .args = {kSh, "-c", "sleep 600 & echo spawned"},
                 .output = "spawned\n"},
        ToolCase{.name = "HungToolIsKilledAtTheTimeout",
                 .args = {kSh, "-c", "sleep 600"},
                 .timeout = milliseconds(300),
                 .exit_code = 128 + SIGKILL,
                 .output_contains =
                     "was still running after 300 ms and was killed with its process group",
                 .timed_out = true},
        ToolCase{.name = "MissingProgram",
                 .args = {"/nonexistent/tool"},
                 .exit_code = -1,
                 .output_contains = "spawn /nonexistent/tool: No such file or directory"},
        ToolCase{
            .name = "NoProgram", .exit_code = -1, .output = "RunToCompletion: no program given"}),
    [](const ::testing::TestParamInfo<ToolCase>& info) { return info.param.name; });

// A shell that starts a background sleep in its group, prints the sleep's pid and waits; on
// SIGTERM it exits 0.
const std::vector<std::string> kShellWithGrandchild = {
    "-c", "trap 'exit 0' TERM; sleep 600 & echo grandchild=$! >&2; wait"};

struct GroupCase {
  std::string name;
  std::function<void(Subprocess&)> end;
  int exit_code;
};

void PrintTo(const GroupCase& c, std::ostream* os) { *os << c.name; }

class ProcessGroupTest : public ::testing::TestWithParam<GroupCase> {};

TEST_P(ProcessGroupTest, TheGroupEndsWithTheChild) {
  Subprocess shell;
  ASSERT_TRUE(shell.Start(kSh, kShellWithGrandchild).ok());
  EXPECT_EQ(::getpgid(shell.pid()), shell.pid()) << "the child leads a group of its own";
  common::Result<std::string> line = shell.WaitForLine("grandchild=", milliseconds(20'000));
  ASSERT_TRUE(line.ok()) << line.error().message;
  const pid_t grandchild = std::stoi(line->substr(line->find('=') + 1));
  // The sleep is the shell's child and the shell is waiting for it: the pid is still the sleep.
  // (glibc 2.36's <sys/pidfd.h> lacks extern "C", so the system call is made directly.)
  const int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, grandchild, 0));
  ASSERT_GE(pidfd, 0) << strerror(errno);
  EXPECT_EQ(::getpgid(grandchild), shell.pid());

  GetParam().end(shell);
  EXPECT_EQ(shell.Wait(milliseconds(20'000)), GetParam().exit_code);
  pollfd ended{pidfd, POLLIN, 0};
  EXPECT_EQ(::poll(&ended, 1, 20'000), 1) << "the background sleep outlived the shell";
  ::close(pidfd);
}

INSTANTIATE_TEST_SUITE_P(
    Endings, ProcessGroupTest,
    ::testing::Values(GroupCase{"Kill", [](Subprocess& p) { p.Kill(); }, 128 + SIGKILL},
                      // Signal() reaches the shell alone; the sleep ends because the shell did.
                      GroupCase{"ChildExits", [](Subprocess& p) { p.Signal(SIGTERM); }, 0}),
    [](const ::testing::TestParamInfo<GroupCase>& info) { return info.param.name; });

TEST(SubprocessTest, OutputFileTakesStdoutAndStderrAndNothingIsPiped) {
  const std::string path = ::testing::TempDir() + "subprocess-output.log";
  std::ofstream(path) << "earlier\n";
  Subprocess proc;
  SubprocessOptions options;
  options.output_file = path;
  ASSERT_TRUE(proc.Start(kSh, {"-c", "echo out; echo err >&2"}, options).ok());
  EXPECT_EQ(proc.Wait(milliseconds(20'000)), 0);
  EXPECT_TRUE(proc.DrainStderr(milliseconds(0)));
  EXPECT_TRUE(proc.stderr_lines().empty());
  std::stringstream text;
  text << std::ifstream(path).rdbuf();
  EXPECT_EQ(text.str(), "earlier\nout\nerr\n");  // appended
}

TEST(SubprocessTest, StderrIsPipedAndStdoutIsNotCapturedByDefault) {
  Subprocess proc;
  SubprocessOptions options;
  options.stdin_text = "";
  ASSERT_TRUE(proc.Start(kSh, {"-c", "echo err >&2; printf last >&2"}, options).ok());
  EXPECT_EQ(proc.Wait(milliseconds(20'000)), 0);
  EXPECT_TRUE(proc.DrainStderr(milliseconds(20'000)));
  EXPECT_EQ(proc.stderr_lines(), (std::vector<std::string>{"err", "last"}));
  EXPECT_EQ(proc.piped_output(), "err\nlast");
}

TEST(SubprocessTest, RefusesContradictoryOptionsAndASecondStart) {
  Subprocess proc;
  SubprocessOptions both;
  both.capture_stdout = true;
  both.output_file = ::testing::TempDir() + "unused.log";
  common::Status refused = proc.Start(kSh, {"-c", "exit 0"}, both);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("exclusive"), std::string::npos);
  ASSERT_TRUE(proc.Start(kSh, {"-c", "exit 0"}).ok());
  EXPECT_FALSE(proc.Start(kSh, {"-c", "exit 0"}).ok());
  EXPECT_EQ(proc.Wait(milliseconds(20'000)), 0);
}

}  // namespace
}  // namespace taskgov::common::testing
