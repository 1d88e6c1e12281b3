// Governance never switches off, and SIGHUP is a reload (issue 14, failures 2 and 3): the real
// binary against the fake API server on loopback.
//
//  * A policy emptied through the ConfigMap (the kubelet's `..data` swap), every file deleted, a
//    file cut to a prefix that still parses, and the mounted file truncated to 0 bytes in place
//    are each refused: the last good policy still governs (a pod over its team's quota is still
//    refused by the filter webhook), /readyz stays 200, the quota metrics stay, and
//    taskgov_config_last_reload_successful is 0 until a good policy is back.
//  * SIGHUP does not kill the process: it keeps serving and re-reads the policy now.
//  * Started on an empty directory, the extender stays not ready.

#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <fstream>

#include "e2e/scenario_test_util.h"

namespace taskgov::e2e {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

// Team a: 8 GPUs of ml.p5.48xlarge, no cohort (so it cannot borrow past them).
constexpr char kPolicy[] = R"(apiVersion: taskgov.io/v1
kind: TaskGovernancePolicy
podsWithoutTeam: Refuse
teams:
  - name: a
    compute: [{instanceType: ml.p5.48xlarge, accelerators: 8}]
  - name: b
    compute: [{instanceType: ml.p5.48xlarge, accelerators: 8}]
)";

// Generous: the in-place truncation is seen by the periodic content check (every 10 s).
constexpr auto kReloadWait = seconds(60);

class PolicyFailSafeTest : public ScenarioTest {
 protected:
  // Team a fills its quota (a-0, 8 GPUs) and a-1 waits, refused for quota.
  void StartGoverning() {
    StartWithPolicy(kPolicy);
    SubmitAll({GpuPod("a", "a-0", 8), GpuPod("a", "a-1", 1)});
    ASSERT_TRUE(h().RunUntil([&] { return Running("a") == 8; }, 5));
    ExpectGoverned("the good policy");
    ExpectReloadSuccessful(1, "the good policy");
  }

  std::vector<std::string> P5Nodes() {
    std::vector<std::string> out;
    for (const NodeSpec& n : h().nodes()) {
      if (n.instance_type == kP5) out.push_back(n.name);
    }
    return out;
  }

  // The last good policy governs: a-1 is refused for team a's quota, /readyz is 200 and the
  // quota metrics are there.
  void ExpectGoverned(const std::string& when) {
    std::optional<PodView> pod = h().PodOfJob("a-1");
    ASSERT_TRUE(pod.has_value()) << when;
    ASSERT_TRUE(pod->pending()) << when;
    common::Result<extender::testing::FilterReply> reply =
        h().extender().client().FilterNames(pod->json, P5Nodes());
    ASSERT_TRUE(reply.ok()) << when << ": " << reply.error().message;
    EXPECT_EQ(reply->error, "") << when;
    EXPECT_TRUE(reply->feasible.empty()) << when << ": a pod over quota was admitted";
    ASSERT_FALSE(reply->failed_and_unresolvable_nodes.empty() && reply->failed_nodes.empty())
        << when;
    const std::string reason = !reply->failed_and_unresolvable_nodes.empty()
                                   ? reply->failed_and_unresolvable_nodes.begin()->second
                                   : reply->failed_nodes.begin()->second;
    EXPECT_NE(reason.find("a: nvidia.com/gpu"), std::string::npos) << when << ": " << reason;
    EXPECT_NE(reason.find("nominal 8"), std::string::npos) << when << ": " << reason;

    common::Result<common::testing::HttpReply> readyz = h().extender().Readyz();
    ASSERT_TRUE(readyz.ok()) << when << ": " << readyz.error().message;
    EXPECT_EQ(readyz->status, 200) << when << ": " << readyz->body;

    common::Result<metrics::testing::Exposition> m = h().extender().ScrapeMetrics();
    ASSERT_TRUE(m.ok()) << when << ": " << m.error().message;
    EXPECT_EQ(m->Value("taskgov_quota_nominal", {{"team", "a"}, {"resource", kGpu}}), 8) << when;
  }

  void ExpectReloadSuccessful(double value, const std::string& when) {
    common::Result<metrics::testing::Exposition> m = h().extender().ScrapeMetrics();
    ASSERT_TRUE(m.ok()) << when << ": " << m.error().message;
    EXPECT_EQ(m->Value("taskgov_config_last_reload_successful"), value) << when;
  }

  // Waits for the refusal of the next reload; returns its log line.
  std::string WaitForRefusal(size_t from, const std::string& when) {
    common::Result<std::string> line = h().extender().WaitForLogMatching(
        [](const std::string& l) {
          return l.find("\"msg\":\"policy loaded\"") != std::string::npos ||
                 l.find("invalid configuration refused") != std::string::npos;
        },
        from, kReloadWait, "a reload outcome");
    EXPECT_TRUE(line.ok()) << when << ": " << line.error().message;
    if (!line.ok()) return "";
    EXPECT_NE(line->find("invalid configuration refused"), std::string::npos)
        << when << ": accepted: " << *line;
    return *line;
  }

  void Restore() {
    common::Status s = h().Reconfigure({{"policy.yaml", kPolicy}}, kReloadWait);
    ASSERT_TRUE(s.ok()) << s.error().message;
    ExpectReloadSuccessful(1, "restored");
  }
};

struct Damage {
  std::string name;
  std::map<std::string, std::string> files;  // what the ConfigMap becomes
  std::string first_error;                   // part of the refusal's first error
};

TEST_F(PolicyFailSafeTest, AnEmptiedDeletedOrCutPolicyIsRefusedAndTheLastGoodGoverns) {
  StartGoverning();
  const std::string policy = kPolicy;
  const std::vector<Damage> damages = {
      {"the ConfigMap's file emptied", {{"policy.yaml", ""}}, "policy.yaml: the file is empty"},
      {"every file deleted", {}, "no team is defined"},
      {"cut after team a (valid YAML: team b is gone)",
       {{"policy.yaml", policy.substr(0, policy.find("  - name: b"))}},
       "policy.yaml: the file shrank to its first"},
  };
  for (const Damage& d : damages) {
    const size_t from = h().extender().log_line_count();
    ASSERT_TRUE(h().config_dir().Write(d.files).ok()) << d.name;
    const std::string line = WaitForRefusal(from, d.name);
    EXPECT_NE(line.find(d.first_error), std::string::npos) << d.name << ": " << line;
    ExpectReloadSuccessful(0, d.name);
    ExpectGoverned(d.name);
    Restore();
  }
}

// The issue's literal case: the policy file truncated to 0 bytes where it is mounted (no `..data`
// swap, so no inotify event on the directory: the periodic content check finds it).
TEST_F(PolicyFailSafeTest, TheMountedFileTruncatedInPlaceIsRefused) {
  StartGoverning();
  const size_t from = h().extender().log_line_count();
  std::filesystem::resize_file(h().config_dir().path() + "/policy.yaml", 0);  // via the symlink
  const std::string line = WaitForRefusal(from, "truncated in place");
  EXPECT_NE(line.find("policy.yaml: the file is empty (0 bytes)"), std::string::npos) << line;
  ExpectReloadSuccessful(0, "truncated in place");
  ExpectGoverned("truncated in place");
}

std::optional<double> Reloads(ExtenderProcess& e, const std::string& result) {
  common::Result<metrics::testing::Exposition> m = e.ScrapeMetrics();
  if (!m.ok()) return std::nullopt;
  return m->Value("taskgov_config_reloads_total", {{"result", result}});
}

TEST_F(PolicyFailSafeTest, SighupKeepsServingAndReReadsThePolicy) {
  StartGoverning();
  ExtenderProcess& e = h().extender();
  const std::optional<double> before = Reloads(e, "success");
  ASSERT_TRUE(before.has_value());

  // Unchanged content: SIGHUP still re-reads it (a reload is counted).
  size_t from = e.log_line_count();
  ASSERT_EQ(::kill(e.pid(), SIGHUP), 0);
  common::Result<std::string> requested = e.WaitForLog("reload requested", from, kReloadWait);
  ASSERT_TRUE(requested.ok()) << requested.error().message;
  ASSERT_TRUE(e.WaitForLog("\"msg\":\"policy loaded\"", from, kReloadWait).ok());
  EXPECT_TRUE(e.running());
  EXPECT_EQ(Reloads(e, "success"), *before + 1);
  ExpectGoverned("after SIGHUP");

  // A change the watcher has not been told of (written in place: no inotify event) is read at
  // the SIGHUP: team a's quota grows to 16 and a-1 is admitted.
  const std::string grown = std::string(kPolicy).replace(
      std::string(kPolicy).find("accelerators: 8"), 15, "accelerators: 16");
  {
    std::ofstream out(h().config_dir().path() + "/policy.yaml", std::ios::trunc);
    out << grown;
    ASSERT_TRUE(out.good());
  }
  from = e.log_line_count();
  ASSERT_EQ(::kill(e.pid(), SIGHUP), 0);
  ASSERT_TRUE(e.WaitForLog("reload requested", from, kReloadWait).ok());
  ASSERT_TRUE(e.WaitForLog("\"msg\":\"policy loaded\"", from, kReloadWait).ok());
  EXPECT_TRUE(e.running());
  ASSERT_TRUE(h().RunUntil([&] { return Running("a") == 9; }, 5));
  common::Result<common::testing::HttpReply> readyz = e.Readyz();
  ASSERT_TRUE(readyz.ok()) << readyz.error().message;
  EXPECT_EQ(readyz->status, 200);

  // SIGTERM still stops it, cleanly.
  common::Result<int> code = e.Stop(SIGTERM);
  ASSERT_TRUE(code.ok()) << code.error().message;
  EXPECT_EQ(*code, 0);
}

// Never fail open at startup: an empty directory is no policy, and the extender is not ready.
TEST_F(PolicyFailSafeTest, StartedOnAnEmptyDirectoryItStaysNotReady) {
  HarnessOptions options;
  options.wait_ready = false;
  StartHarness(std::move(options));
  common::Status says = h().extender().WaitReadyzSays("no valid configuration", kReloadWait);
  ASSERT_TRUE(says.ok()) << says.error().message;
  common::Result<common::testing::HttpReply> readyz = h().extender().Readyz();
  ASSERT_TRUE(readyz.ok()) << readyz.error().message;
  EXPECT_EQ(readyz->status, 503);
  ExpectReloadSuccessful(0, "empty at startup");
}

}  // namespace
}  // namespace taskgov::e2e
