// The taskgov-extender process before and outside serving (issue 6 "ready only after pods,
// nodes and config have synced", issue 5 `--check-config`): the real binary against the fake API
// server with its initial pod LIST withheld answers /readyz 503 and refuses filter calls with
// "not ready: waiting for initial sync" until the list succeeds, then decides; and
// `taskgov-extender --check-config DIR` exits 0 on the sample configuration and 1, naming the
// file and the path, on an invalid one.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "e2e/scenario_test_util.h"
#include "scheduler/common/testing/process.h"

namespace taskgov::e2e {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

std::string& SampleConfigDir() {
  static std::string path;
  return path;
}

constexpr char kPolicy[] = R"(apiVersion: taskgov.io/v1
kind: TaskGovernancePolicy
defaultCohort: e2e
teams:
  - name: a
    sharing: {strategy: LendAndBorrow, borrowLimit: 100}
    compute: [{instanceType: ml.p5.48xlarge, accelerators: 8}]
)";

constexpr char kNotReady[] = "not ready: waiting for initial sync";

class StartupTest : public ScenarioTest {
 protected:
  // The extender's LISTs of pods (not watches) so far.
  size_t PodLists() {
    size_t n = 0;
    for (const scheduler::kube::testing::RecordedRequest& r : h().api().requests()) {
      n += r.method == "GET" && r.path == "/api/v1/pods" && !r.watch;
    }
    return n;
  }

  std::vector<std::string> P5Nodes() {
    std::vector<std::string> out;
    for (const NodeSpec& n : h().nodes()) {
      if (n.instance_type == kP5) out.push_back(n.name);
    }
    return out;
  }
};

TEST_F(StartupTest, NotReadyUntilThePodListSucceeds) {
  HarnessOptions options;
  options.config["policy.yaml"] = kPolicy;
  options.wait_ready = false;
  scheduler::kube::testing::FaultRule withhold;  // every pod LIST fails until the test clears it
  withhold.method = "GET";
  withhold.path_prefix = "/api/v1/pods";
  withhold.watch = false;
  withhold.times = -1;
  withhold.status = 500;
  withhold.reason = "InternalError";
  withhold.message = "the e2e test withholds the pod list";
  options.api_faults.push_back(withhold);
  StartHarness(std::move(options));
  ASSERT_TRUE(h().Submit(GpuPod("a", "a-0")).ok());
  std::optional<PodView> pod = h().PodOfJob("a-0");
  ASSERT_TRUE(pod.has_value());

  // The extender serves, and has asked for the pods (twice: the list is retried).
  ASSERT_TRUE(h().api().WaitFor([&] { return PodLists() >= 2; }, seconds(20)));
  common::Result<common::testing::HttpReply> readyz = h().extender().Readyz();
  ASSERT_TRUE(readyz.ok()) << readyz.error().message;
  EXPECT_EQ(readyz->status, 503);
  EXPECT_NE(readyz->body.find(kNotReady), std::string::npos) << readyz->body;
  common::Result<extender::testing::FilterReply> refused =
      h().extender().client().FilterNames(pod->json, P5Nodes());
  ASSERT_TRUE(refused.ok()) << refused.error().message;
  EXPECT_NE(refused->error.find(kNotReady), std::string::npos) << refused->error;
  EXPECT_TRUE(!refused->node_names || refused->node_names->empty()) << "nothing is admitted";

  // The list goes through: ready, and the filter decides.
  h().api().ClearFaults();
  common::Status ready = h().extender().WaitReady(seconds(40));
  ASSERT_TRUE(ready.ok()) << ready.error().message;
  readyz = h().extender().Readyz();
  ASSERT_TRUE(readyz.ok()) << readyz.error().message;
  EXPECT_EQ(readyz->status, 200);
  common::Result<extender::testing::FilterReply> decided =
      h().extender().client().FilterNames(pod->json, P5Nodes());
  ASSERT_TRUE(decided.ok()) << decided.error().message;
  EXPECT_EQ(decided->error, "");
  ASSERT_TRUE(decided->node_names.has_value());
  EXPECT_EQ(*decided->node_names, P5Nodes());
  // And the whole loop works: the pod is bound and charged.
  ASSERT_TRUE(h().RunUntil([&] { return Running("a") == 1; }, 5));
}

// A start that fails after the informers run (the port file cannot be written) exits 2 naming
// the file, having stopped its threads first: while pods arrive (each pokes the preemption loop),
// no run crashes or hangs in the Process's teardown.
TEST_F(StartupTest, AStartThatFailsLateStopsItsThreadsAndExits) {
  HarnessOptions options;
  options.config["policy.yaml"] = kPolicy;
  StartHarness(std::move(options));
  for (int i = 0; i < 40; ++i) {
    ASSERT_TRUE(h().Submit(GpuPod("a", "late-" + std::to_string(i))).ok());
  }
  const std::string port_file = h().work_dir() + "/no-such-dir/extender.port";
  for (int run = 0; run < 5; ++run) {
    const common::testing::ToolRun r = common::testing::RunToCompletion(
        {ExtenderBinary(), "--listen=127.0.0.1:0", "--metrics-listen=127.0.0.1:0",
         "--health-listen=127.0.0.1:0", "--console-listen=", "--leader-elect=false",
         "--log-level=warn", "--kubeconfig=" + h().work_dir() + "/kubeconfig",
         "--config-dir=" + h().config_dir().path(), "--port-file=" + port_file},
        "", seconds(30));
    EXPECT_FALSE(r.timed_out) << r.output;
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find(port_file), std::string::npos) << r.output;
  }
}

// ---- --check-config ----

common::testing::ToolRun CheckConfig(const std::string& dir) {
  return common::testing::RunToCompletion({ExtenderBinary(), "--check-config=" + dir});
}

TEST(CheckConfigTest, TheSampleConfigurationIsValid) {
  ASSERT_FALSE(SampleConfigDir().empty());
  common::testing::ToolRun run = CheckConfig(SampleConfigDir());
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("ml.p5.48xlarge"), std::string::npos) << run.output;
}

TEST(CheckConfigTest, AnInvalidConfigurationNamesTheFileAndThePath) {
  const std::filesystem::path dir = std::filesystem::path(::testing::TempDir()) / "invalid";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "broken.yaml") << R"(apiVersion: taskgov.io/v1
kind: TaskGovernancePolicy
teams:
  - name: z
    sharing: {strategy: LendAndBorrow, borrowLimit: 100}
    compute: [{instanceType: ml.p5.48xlarge, accelerators: -3}]
)";
  common::testing::ToolRun run = CheckConfig(dir.string());
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_NE(run.output.find("error: broken.yaml: teams[0].compute[0].accelerators (line 6"),
            std::string::npos)
      << run.output;
  EXPECT_NE(run.output.find("result: invalid (1 error"), std::string::npos) << run.output;
}

}  // namespace
}  // namespace taskgov::e2e

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (argc < 3) {
    fprintf(stderr, "usage: %s <taskgov-extender> <the files of config/samples>...\n", argv[0]);
    return 2;
  }
  taskgov::e2e::ExtenderBinary() = taskgov::common::testing::RunfilePath(argv[1]);
  // The native sample's directory.
  for (int i = 2; i < argc; ++i) {
    const std::filesystem::path file(taskgov::common::testing::RunfilePath(argv[i]));
    if (file.parent_path().filename() == "native") {
      taskgov::e2e::SampleConfigDir() = file.parent_path().string();
    }
  }
  return RUN_ALL_TESTS();
}
