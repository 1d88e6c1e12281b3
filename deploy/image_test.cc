// The Dockerfile: a Debian 12 build stage that runs tools/bootstrap and builds both binaries, and
// a slim Debian 12 runtime stage that installs exactly the packages the binaries' shared
// libraries come from — every library `ldd` resolves for the built taskgov-extender and
// team-namespaces maps (`dpkg -S`, on this Debian 12 machine) to a package the runtime stage
// installs, and every package it installs provides one — runs as a non-root user and carries the
// OCI labels. No container runtime is needed: the image itself is not built here.
//
// Arguments: $(rootpath //extender:taskgov-extender) $(rootpath :team-namespaces).

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "deploy/testing/dockerfile.h"
#include "gtest/gtest.h"
#include "scheduler/common/testing/process.h"

namespace taskgov::deploy {
namespace {

std::vector<std::string> g_binaries;

constexpr char kLdd[] = "/usr/bin/ldd";
constexpr char kDpkg[] = "/usr/bin/dpkg";

using testing::AptInstalled;
using testing::ParseDockerfile;
using testing::Words;
using Stage = testing::DockerStage;

// The files `ldd` resolves for a binary; "not found" ones as "NOT FOUND: name".
std::vector<std::string> SharedLibraries(const std::string& binary) {
  const common::testing::ToolRun run = common::testing::RunToCompletion({kLdd, binary});
  EXPECT_EQ(run.exit_code, 0) << run.output;
  std::vector<std::string> out;
  std::stringstream lines(run.output);
  for (std::string line; std::getline(lines, line);) {
    const std::vector<std::string> w = Words(line);
    if (w.size() >= 3 && w[1] == "=>") {
      out.push_back(w[2] == "not" ? "NOT FOUND: " + w[0] : w[2]);
    } else if (!w.empty() && w[0].find("ld-linux") != std::string::npos) {
      out.push_back(w[0]);  // the dynamic loader, named by its absolute path
    }
  }
  return out;
}

// The Debian package that owns `path` (`dpkg -S`), trying the path as given, its real path and
// the other side of the /usr merge; "" when none does.
std::string OwningPackage(const std::string& path) {
  std::vector<std::string> candidates = {path};
  std::error_code ec;
  const std::string real = std::filesystem::canonical(path, ec).string();
  if (!ec) candidates.push_back(real);
  for (const std::string& p : std::vector<std::string>(candidates)) {
    if (p.rfind("/usr/", 0) == 0) {
      candidates.push_back(p.substr(4));
    } else {
      candidates.push_back("/usr" + p);
    }
  }
  for (const std::string& p : candidates) {
    const common::testing::ToolRun run = common::testing::RunToCompletion({kDpkg, "-S", p});
    if (run.exit_code != 0) continue;
    // "libssl3:amd64: /usr/lib/x86_64-linux-gnu/libssl.so.3" (diversions aside).
    std::stringstream lines(run.output);
    for (std::string line; std::getline(lines, line);) {
      if (line.rfind("diversion", 0) == 0) continue;
      const size_t colon = line.find(':');
      if (colon == std::string::npos) continue;
      std::string pkg = line.substr(0, colon);
      return pkg;
    }
  }
  return "";
}

class ImageTest : public ::testing::Test {
 protected:
  void SetUp() override {
    stages_ = ParseDockerfile("Dockerfile");
    ASSERT_EQ(stages_.size(), 2u) << "a build stage and a runtime stage";
  }
  std::string All(const Stage& s) {
    std::string out;
    for (const std::string& i : s.instructions) out += i + "\n";
    return out;
  }
  std::vector<Stage> stages_;
};

TEST_F(ImageTest, BuildStageBootstrapsAndBuildsBothBinariesOnDebian12) {
  EXPECT_EQ(stages_[0].from, "debian:12 AS build");
  const std::string build = All(stages_[0]);
  EXPECT_NE(build.find("tools/bootstrap"), std::string::npos);
  EXPECT_NE(build.find("bazel build -c opt //extender:taskgov-extender //deploy:team-namespaces"),
            std::string::npos);
}

TEST_F(ImageTest, RuntimeStageIsSlimNonRootAndLabelled) {
  EXPECT_EQ(stages_[1].from, "debian:12-slim");
  const std::string runtime = All(stages_[1]);
  EXPECT_NE(runtime.find("COPY --from=build /out/taskgov-extender /out/team-namespaces "
                         "/usr/local/bin/"),
            std::string::npos);
  EXPECT_NE(runtime.find("ENTRYPOINT [\"/usr/local/bin/taskgov-extender\"]"), std::string::npos);
  EXPECT_NE(runtime.find("rm -rf /var/lib/apt/lists/*"), std::string::npos);
  std::string user;
  for (const std::string& i : stages_[1].instructions) {
    if (i.rfind("USER ", 0) == 0) user = i.substr(5);
  }
  ASSERT_FALSE(user.empty()) << "the runtime stage runs as root";
  // Numeric, so that Kubernetes' runAsNonRoot can verify it; the Deployment's runAsUser.
  EXPECT_EQ(user, "65532:65532");
  for (const char* label :
       {"org.opencontainers.image.title", "org.opencontainers.image.version",
        "org.opencontainers.image.revision", "org.opencontainers.image.description"}) {
    EXPECT_NE(runtime.find(std::string(label) + "="), std::string::npos) << "no label " << label;
  }
}

TEST_F(ImageTest, RuntimePackagesAreExactlyThoseOfTheLibrariesTheBinariesLoad) {
  if (::access(kDpkg, X_OK) != 0 || ::access(kLdd, X_OK) != 0) {
    GTEST_SKIP() << "needs Debian's dpkg and ldd";
  }
  const std::set<std::string> installed = AptInstalled(stages_[1]);
  ASSERT_FALSE(installed.empty()) << "the runtime stage installs nothing";
  std::map<std::string, std::string> needed;  // package → a library it provides
  ASSERT_EQ(g_binaries.size(), 2u);
  for (const std::string& binary : g_binaries) {
    const std::vector<std::string> libraries = SharedLibraries(binary);
    ASSERT_GE(libraries.size(), 5u) << binary << " links fewer libraries than expected";
    for (const std::string& lib : libraries) {
      ASSERT_EQ(lib.rfind("NOT FOUND", 0), std::string::npos) << binary << ": " << lib;
      std::string pkg = OwningPackage(lib);
      ASSERT_FALSE(pkg.empty()) << lib << " (loaded by " << binary << ") belongs to no package";
      const size_t arch = pkg.find(':');  // "libssl3:amd64"
      if (arch != std::string::npos) pkg = pkg.substr(0, arch);
      needed[pkg] = lib;
      EXPECT_TRUE(installed.count(pkg)) << binary << " loads " << lib << " from " << pkg
                                        << ", which the runtime stage does not install";
    }
  }
  for (const std::string& pkg : installed) {
    EXPECT_TRUE(needed.count(pkg))
        << "the runtime stage installs " << pkg << ", which provides no library the binaries load";
  }
}

}  // namespace
}  // namespace taskgov::deploy

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  for (int i = 1; i < argc; ++i) {
    taskgov::deploy::g_binaries.push_back(taskgov::common::testing::RunfilePath(argv[i]));
  }
  return RUN_ALL_TESTS();
}
