// `taskgov simulate --scheduler-config`: the shipped second-scheduler configuration played on the
// shipped sample day, --pod-max-backoff over it, and a file it cannot play refused as a usage
// error naming the file and the field.

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "extender/cli/commands.h"
#include "extender/cli/testing/cli_fixture.h"

namespace taskgov::cli {
namespace {

constexpr char kSample[] = "scheduler/sim/samples/five-teams";
constexpr char kOverlay[] = "deploy/overlays/second-scheduler/scheduler-config.yaml";

using testing::CliFixture;
using testing::CliRun;

CliRun RunCli(const std::vector<std::string>& args) { return CliFixture::RunOffline(args); }

std::vector<std::string> SampleDay(std::vector<std::string> more = {}) {
  std::vector<std::string> args = {"simulate",
                                   "--policy",
                                   std::string(kSample) + "/policy",
                                   "--trace",
                                   std::string(kSample) + "/day.json",
                                   "--seed",
                                   "7"};
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

// The table's rows, without the wall time (the one number that is not simulated).
std::string Table(const std::string& out) {
  std::istringstream in(out.substr(out.find("\n\n")));
  std::string table, line;
  while (std::getline(in, line)) {
    if (line.find("wall time") == std::string::npos) table += line + "\n";
  }
  return table;
}

std::string WriteFile(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + "/" + name;
  std::ofstream(path) << text;
  return path;
}

// The overlay's bin packing changes where the sample day's pods go: the table differs from
// upstream's defaults, and the line under the trace says what was played.
TEST(SimulateCommandTest, PlaysTheShippedSchedulerConfigOnTheSampleDay) {
  const CliRun defaults = RunCli(SampleDay());
  ASSERT_EQ(defaults.code, kExitOk) << defaults.err;
  // The header is the trace line alone.
  EXPECT_EQ(defaults.out.find("jobs\n\n"), defaults.out.find('\n') - 4) << defaults.out;

  const CliRun shipped = RunCli(SampleDay({"--scheduler-config", kOverlay}));
  ASSERT_EQ(shipped.code, kExitOk) << shipped.err;
  EXPECT_NE(shipped.out.find("\nkube-scheduler: " + std::string(kOverlay) +
                             ": MostAllocated (cpu 1, memory 1, nvidia.com/gpu 3, "
                             "aws.amazon.com/neuron 3, aws.amazon.com/neurondevice 3, "
                             "aws.amazon.com/neuroncore 3 and 28 more), backoff 1s to 1s, "
                             "extender weight 1\n\n"),
            std::string::npos)
      << shipped.out;
  EXPECT_NE(Table(shipped.out), Table(defaults.out));
  // Not the backoff alone: the same 1 s backoff with upstream's LeastAllocated plays otherwise.
  const CliRun backoff_only = RunCli(SampleDay({"--pod-max-backoff", "1s"}));
  ASSERT_EQ(backoff_only.code, kExitOk) << backoff_only.err;
  EXPECT_NE(Table(shipped.out), Table(backoff_only.out));
}

// --pod-max-backoff, given as well, overrides the file's podMaxBackoffSeconds.
TEST(SimulateCommandTest, PodMaxBackoffOverridesTheFiles) {
  const std::vector<std::string> small = {
      "simulate",   "--policy", std::string(kSample) + "/policy",
      "--generate", "--nodes",  "ml.p5.48xlarge=1",
      "--jobs",     "3",        "--scheduler-config",
      kOverlay};
  std::vector<std::string> args = small;
  args.insert(args.end(), {"--pod-max-backoff", "5s"});
  const CliRun o = RunCli(args);
  ASSERT_EQ(o.code, kExitOk) << o.err;
  EXPECT_NE(o.out.find("and 28 more), backoff 1s to 5s, extender weight 1\n"), std::string::npos)
      << o.out;
  // Below the file's initial backoff: refused.
  const std::string slow = WriteFile("slow.yaml",
                                     "apiVersion: kubescheduler.config.k8s.io/v1\n"
                                     "kind: KubeSchedulerConfiguration\n"
                                     "podInitialBackoffSeconds: 3\n"
                                     "profiles: [{schedulerName: taskgov}]\n"
                                     "extenders: [{filterVerb: f, bindVerb: b}]\n");
  args = small;
  args.back() = slow;
  args.insert(args.end(), {"--pod-max-backoff", "2s"});
  const CliRun refused = RunCli(args);
  EXPECT_EQ(refused.code, kExitUsage);
  EXPECT_EQ(refused.err,
            "error: invalid --pod-max-backoff: at least kube-scheduler's initial backoff, 3s\n"
            "See 'taskgov simulate --help' for usage.\n");
}

// --no-requeue plays the extender that never asks kube-scheduler to try a pod again: the header
// says so, nothing is requeued, and under v1.30 (where such requests matter most) the day plays
// otherwise.
TEST(SimulateCommandTest, NoRequeuePlaysTheExtenderWithoutRequeueRequests) {
  auto requeued = [](const std::string& out) {
    const std::string row = "extender: pods requeued (refusal lapsed)";
    const size_t at = out.find(row);
    return at == std::string::npos ? -1 : std::stol(out.substr(at + row.size()));
  };
  const CliRun with = RunCli(SampleDay({"--kube-version", "1.30"}));
  const CliRun without = RunCli(SampleDay({"--kube-version", "1.30", "--no-requeue"}));
  ASSERT_EQ(with.code, kExitOk) << with.err;
  ASSERT_EQ(without.code, kExitOk) << without.err;
  EXPECT_NE(without.out.find("\nextender: --requeue-lapsed-refusals=false (kube-scheduler alone "
                             "decides when a refused pod is tried again)\n\n"),
            std::string::npos)
      << without.out;
  EXPECT_GT(requeued(with.out), 0) << with.out;
  EXPECT_EQ(requeued(without.out), 0) << without.out;
  EXPECT_NE(Table(with.out), Table(without.out));
}

// --kube-version: the release whose queue is played (by default every event retries every pod).
// Before v1.32 a pod bound retries nobody; from v1.32 it retries the pods the extender refused;
// from v1.33 the backoffQ is popped when activeQ is empty: the sample day plays otherwise under
// each.
TEST(SimulateCommandTest, KubeVersionPlaysThatReleasesQueue) {
  const CliRun defaults = RunCli(SampleDay());
  ASSERT_EQ(defaults.code, kExitOk) << defaults.err;
  const CliRun v130 = RunCli(SampleDay({"--kube-version", "v1.30.2"}));
  ASSERT_EQ(v130.code, kExitOk) << v130.err;
  EXPECT_NE(v130.out.find("\nkube-scheduler v1.30\n\n"), std::string::npos) << v130.out;
  EXPECT_NE(Table(v130.out), Table(defaults.out));
  const CliRun v132 = RunCli(SampleDay({"--kube-version", "1.32"}));
  const CliRun v133 = RunCli(SampleDay({"--kube-version", "1.33"}));
  ASSERT_EQ(v132.code, kExitOk) << v132.err;
  ASSERT_EQ(v133.code, kExitOk) << v133.err;
  EXPECT_NE(Table(v132.out), Table(defaults.out));
  EXPECT_NE(Table(v133.out), Table(v132.out));

  for (const char* bad : {"1.28", "1.36", "2.30", "1.x", "1.30.", "1.30.x", "130", ""}) {
    const CliRun refused = RunCli(SampleDay({"--kube-version", bad}));
    EXPECT_EQ(refused.code, kExitUsage) << bad;
    EXPECT_EQ(refused.err, "error: invalid --kube-version " + std::string(bad) +
                               ": give 1.29 to 1.35 (such as 1.30)\n"
                               "See 'taskgov simulate --help' for usage.\n")
        << bad;
  }
}

struct BadFile {
  std::string name;
  std::string text;
  std::string message;  // after "error: PATH: "
};

TEST(SimulateCommandTest, AFileItCannotPlayIsAUsageErrorNamingTheFileAndTheField) {
  const std::vector<BadFile> cases = {
      {"malformed.yaml", "apiVersion: kubescheduler.config.k8s.io/v1\nprofiles: [\n",
       "not valid YAML (line 3, column 1): end of sequence flow not found"},
      {"ratio.yaml",
       "apiVersion: v1\nkind: ConfigMap\ndata:\n  scheduler-config.yaml: |\n"
       "    apiVersion: kubescheduler.config.k8s.io/v1\n"
       "    kind: KubeSchedulerConfiguration\n"
       "    profiles:\n"
       "      - schedulerName: taskgov\n"
       "        pluginConfig:\n"
       "          - name: NodeResourcesFit\n"
       "            args: {scoringStrategy: {type: RequestedToCapacityRatio}}\n",
       "data[\"scheduler-config.yaml\"].profiles[0].pluginConfig[0].args.scoringStrategy.type: "
       "RequestedToCapacityRatio is not played: the simulator plays LeastAllocated and "
       "MostAllocated"},
  };
  for (const BadFile& c : cases) {
    const std::string path = WriteFile(c.name, c.text);
    const CliRun o = RunCli(SampleDay({"--scheduler-config", path}));
    EXPECT_EQ(o.code, kExitUsage) << c.name;
    EXPECT_EQ(o.err,
              "error: " + path + ": " + c.message + "\nSee 'taskgov simulate --help' for usage.\n");
    EXPECT_EQ(o.out, "");
  }
  const CliRun missing = RunCli(SampleDay({"--scheduler-config", "no-such-file.yaml"}));
  EXPECT_EQ(missing.code, kExitUsage);
  EXPECT_EQ(missing.err,
            "error: cannot read \"no-such-file.yaml\"\nSee 'taskgov simulate --help' for usage.\n");
}

}  // namespace
}  // namespace taskgov::cli
