// tools/package: the release tarball holds both binaries (runnable), the manifests (kustomize
// builds the packaged overlays), the dashboard, the READMEs, tools/gen-certs, a licence file for
// every runtime package of the Dockerfile, and SHA256SUMS that verify; it is reproducible (two
// runs, the same bytes); bad arguments are refused with exit code 2 and a message.
//
// Arguments: $(rootpath //extender:taskgov-extender) $(rootpath :team-namespaces).

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "deploy/testing/dockerfile.h"
#include "deploy/testing/manifests.h"
#include "gtest/gtest.h"
#include "scheduler/common/testing/files.h"
#include "scheduler/common/testing/process.h"

namespace taskgov::deploy {
namespace {

namespace fs = std::filesystem;
using common::testing::RunToCompletion;
using common::testing::ToolRun;

std::string g_extender;
std::string g_team_namespaces;

constexpr char kVersion[] = "1.2.3-test";
constexpr char kName[] = "taskgov-1.2.3-test-linux-amd64";

using common::testing::ReadFile;

class PackageTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) / ("package-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    bin_ = dir_ / "bin";
    fs::create_directories(bin_);
    fs::copy_file(g_extender, bin_ / "taskgov-extender");
    fs::copy_file(g_team_namespaces, bin_ / "team-namespaces");
  }

  // tools/package into `out`; the tarball's path.
  std::string Package(const fs::path& out) {
    const ToolRun run = RunToCompletion(
        {"tools/package", "--version", kVersion, "--out", out.string(), "--bin-dir", bin_.string()},
        "", std::chrono::seconds(120));
    EXPECT_EQ(run.exit_code, 0) << run.output;
    const std::string tarball = (out / (std::string(kName) + ".tar.gz")).string();
    EXPECT_NE(run.output.find(tarball), std::string::npos) << run.output;
    return tarball;
  }

  fs::path dir_, bin_;
};

TEST_F(PackageTest, TarballHoldsBinariesManifestsDocsAndLicences) {
  const std::string tarball = Package(dir_ / "out");
  ASSERT_TRUE(fs::exists(tarball));
  const ToolRun list = RunToCompletion({"/bin/tar", "-tzf", tarball});
  ASSERT_EQ(list.exit_code, 0) << list.output;
  std::set<std::string> entries;
  std::stringstream lines(list.output);
  for (std::string line; std::getline(lines, line);) {
    EXPECT_EQ(line.rfind(std::string(kName) + "/", 0), 0u) << line << " is outside " << kName;
    entries.insert(line.substr(std::string(kName).size() + 1));
  }
  for (const char* f :
       {"bin/taskgov-extender", "bin/team-namespaces", "README.md", "SHA256SUMS", "tools/gen-certs",
        "deploy/README.md", "deploy/base/kustomization.yaml", "deploy/base/policy.yaml",
        "deploy/monitoring/prometheusrule.yaml", "deploy/base/admission.yaml",
        "deploy/overlays/second-scheduler/kustomization.yaml",
        "deploy/overlays/extender-service/kustomization.yaml",
        "deploy/overlays/extender-service-cert-manager/kustomization.yaml",
        "deploy/monitoring/kustomization.yaml", "deploy/admission-mutating/kustomization.yaml",
        "deploy/dashboards/taskgov.json", "deploy/dashboards/taskgov-dashboard-configmap.yaml"}) {
    EXPECT_TRUE(entries.count(f)) << "the tarball lacks " << f;
  }
  // The reference pages README.md links.
  for (const char* page : {"install", "operations", "cli", "benchmarks", "development"}) {
    EXPECT_TRUE(entries.count(std::string("docs/") + page + ".md")) << "the tarball lacks " << page;
  }
  for (const std::string& e : entries) {
    EXPECT_EQ(e.find("_test"), std::string::npos) << "a test in the release: " << e;
    EXPECT_EQ(e.find("BUILD"), std::string::npos) << "a Bazel file in the release: " << e;
  }
  // Every runtime package of the image has its licence here.
  const std::vector<testing::DockerStage> stages = testing::ParseDockerfile("Dockerfile");
  ASSERT_EQ(stages.size(), 2u);
  const std::set<std::string> runtime = testing::AptInstalled(stages.back());
  ASSERT_FALSE(runtime.empty());
  for (const std::string& pkg : runtime) {
    EXPECT_TRUE(entries.count("licenses/" + pkg + ".copyright")) << "no licence of " << pkg;
  }

  const fs::path x = dir_ / "x";
  fs::create_directories(x);
  ASSERT_EQ(RunToCompletion({"/bin/tar", "-xzf", tarball, "-C", x.string()}).exit_code, 0);
  const fs::path root = x / kName;
  const ToolRun sums = RunToCompletion(
      {"/bin/sh", "-c", "cd '" + root.string() + "' && sha256sum --check --strict SHA256SUMS"});
  EXPECT_EQ(sums.exit_code, 0) << sums.output;
  EXPECT_GE(std::count(sums.output.begin(), sums.output.end(), '\n'), 25) << sums.output;
  const ToolRun help = RunToCompletion({(root / "bin/taskgov-extender").string(), "--help"});
  EXPECT_EQ(help.exit_code, 0) << help.output;
  const ToolRun namespaces = RunToCompletion(
      {(root / "bin/team-namespaces").string(), (root / "deploy/base/policy.yaml").string()});
  EXPECT_EQ(namespaces.exit_code, 0) << namespaces.output;
  EXPECT_NE(namespaces.output.find("name: hyperpod-ns-a"), std::string::npos) << namespaces.output;
  if (::access(testing::kKubectl, X_OK) == 0) {
    std::vector<std::string> dirs = {"monitoring"};
    for (const std::string& overlay : testing::Overlays()) dirs.push_back("overlays/" + overlay);
    for (const std::string& dir : dirs) {
      const ToolRun build =
          RunToCompletion({testing::kKubectl, "kustomize", (root / "deploy" / dir).string()}, "",
                          std::chrono::seconds(60));
      EXPECT_EQ(build.exit_code, 0) << dir << ": " << build.output;
      EXPECT_NE(
          build.output.find(dir == "monitoring" ? "kind: PrometheusRule" : "kind: Deployment"),
          std::string::npos)
          << dir;
    }
  }
}

TEST_F(PackageTest, IsReproducible) {
  const std::string a = Package(dir_ / "a");
  const std::string b = Package(dir_ / "b");
  const std::string bytes = ReadFile(a);
  ASSERT_GT(bytes.size(), 100000u);
  EXPECT_TRUE(bytes == ReadFile(b)) << "two runs made different tarballs";
}

TEST_F(PackageTest, RefusesBadArguments) {
  const struct {
    std::vector<std::string> args;
    std::string message;
  } cases[] = {
      {{"--bogus"}, "unknown argument '--bogus'"},
      {{"--version", "a b"}, "--version 'a b' may hold only"},
      {{"--version"}, "--version needs a value"},
      {{"--version", "1", "--bin-dir", "/no/such/dir"},
       "--bin-dir /no/such/dir is not a directory"},
  };
  for (const auto& c : cases) {
    std::vector<std::string> args = {"tools/package"};
    args.insert(args.end(), c.args.begin(), c.args.end());
    const ToolRun run = RunToCompletion(args);
    EXPECT_EQ(run.exit_code, 2) << c.message << ": " << run.output;
    EXPECT_NE(run.output.find(c.message), std::string::npos) << run.output;
  }
  const fs::path empty = dir_ / "empty-bin";
  fs::create_directories(empty);
  const ToolRun missing = RunToCompletion({"tools/package", "--version", "1", "--bin-dir",
                                           empty.string(), "--out", (dir_ / "o").string()});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.output.find("taskgov-extender is missing or not executable"), std::string::npos)
      << missing.output;
}

}  // namespace
}  // namespace taskgov::deploy

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (argc < 3) {
    fprintf(stderr, "usage: %s <taskgov-extender> <team-namespaces>\n", argv[0]);
    return 2;
  }
  taskgov::deploy::g_extender = taskgov::common::testing::RunfilePath(argv[1]);
  taskgov::deploy::g_team_namespaces = taskgov::common::testing::RunfilePath(argv[2]);
  return RUN_ALL_TESTS();
}
