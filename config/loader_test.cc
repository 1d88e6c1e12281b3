// Reading the mounted directory, and the check-config report.

#include "config/loader.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sstream>

#include "config/check_config.h"
#include "config/document.h"
#include "config/test_util.h"

namespace taskgov::config {
namespace {

using testing::Dump;
using testing::KubeletPublish;
using testing::TempDir;

const char kTeamA[] =
    "apiVersion: taskgov.io/v1\nkind: Team\nname: a\ncohort: c\n"
    "compute: [{instanceType: ml.g5.xlarge, count: 1}]\n";
const char kTeamB[] =
    "apiVersion: taskgov.io/v1\nkind: Team\nname: b\ncohort: c\n"
    "compute: [{instanceType: ml.g5.xlarge, count: 2}]\n";

std::vector<std::string> Names(const DirectorySnapshot& s) {
  std::vector<std::string> names;
  for (const SourceFile& f : s.files) names.push_back(f.name);
  return names;
}

TEST(ReadConfigDirectory, PlainDirectorySkipsDotfilesAndDirectoriesFollowsSymlinks) {
  TempDir dir;
  dir.Write("b.yaml", kTeamB);
  dir.Write(".hidden.yaml", "garbage: [");
  dir.Write(".a.yaml.swp", "\x01\x02");
  ASSERT_EQ(::mkdir((dir.path() + "/sub").c_str(), 0755), 0);
  dir.Write("sub/c.yaml", "garbage: [");
  TempDir other;
  other.Write("real.yaml", kTeamA);
  ASSERT_EQ(::symlink((other.path() + "/real.yaml").c_str(), (dir.path() + "/a.yaml").c_str()), 0);
  ASSERT_EQ(::symlink("/nonexistent/x", (dir.path() + "/dangling.yaml").c_str()), 0);

  DirectorySnapshot s = ReadConfigDirectory(dir.path());
  EXPECT_TRUE(s.errors.empty());
  EXPECT_EQ(Names(s), (std::vector<std::string>{"a.yaml", "b.yaml"}));
  LoadResult r = LoadDirectory(dir.path());
  ASSERT_TRUE(r.ok()) << Dump(r);
  EXPECT_EQ(r.policy->teams.size(), 2u);
}

TEST(ReadConfigDirectory, KubeletLayoutReadsTheDataSnapshot) {
  TempDir dir;
  KubeletPublish(dir.path(), {{"a.yaml", kTeamA}, {"b.yaml", kTeamB}}, "22_34_01.000000001");
  DirectorySnapshot s = ReadConfigDirectory(dir.path());
  EXPECT_TRUE(s.errors.empty());
  EXPECT_EQ(Names(s), (std::vector<std::string>{"a.yaml", "b.yaml"}));
  EXPECT_EQ(s.data_target, "..2026_11_29_22_34_01.000000001");

  // The next version drops b.yaml.
  KubeletPublish(dir.path(), {{"a.yaml", kTeamA}}, "22_35_01.000000002");
  s = ReadConfigDirectory(dir.path());
  EXPECT_EQ(Names(s), std::vector<std::string>{"a.yaml"});
  EXPECT_EQ(s.data_target, "..2026_11_29_22_35_01.000000002");
}

TEST(LoadDirectory, EmptyDirectoryIsAValidEmptyPolicy) {
  TempDir dir;
  LoadResult r = LoadDirectory(dir.path());
  ASSERT_TRUE(r.ok()) << Dump(r);
  EXPECT_TRUE(r.policy->teams.empty());
  EXPECT_FALSE(r.policy->source_hash.empty());
}

TEST(LoadDirectory, MissingDirectoryIsAnError) {
  LoadResult r = LoadDirectory("/nonexistent/taskgov-config");
  EXPECT_FALSE(r.ok());
  EXPECT_NE(r.FirstError().find("cannot read directory"), std::string::npos) << Dump(r);
}

TEST(LoadDirectory, OversizedFileIsAnError) {
  TempDir dir;
  dir.Write("big.yaml", std::string(kMaxDocumentBytes + 10, '#'));
  LoadResult r = LoadDirectory(dir.path());
  EXPECT_FALSE(r.ok());
  EXPECT_TRUE(testing::HasDiagnostic(r, Severity::kError, "big.yaml", "", "larger than"))
      << Dump(r);
}

TEST(ContentHash, DependsOnNamesAndContents) {
  const std::string h1 = ContentHash({{"a.yaml", "x"}});
  EXPECT_EQ(h1.size(), 16u);
  EXPECT_EQ(h1, ContentHash({{"a.yaml", "x"}}));
  EXPECT_NE(h1, ContentHash({{"a.yaml", "y"}}));
  EXPECT_NE(h1, ContentHash({{"b.yaml", "x"}}));
  EXPECT_NE(ContentHash({{"a", "bc"}}), ContentHash({{"ab", "c"}}));
}

TEST(CheckConfig, ValidSampleExitsZeroAndPrintsTheQuotaTable) {
  std::ostringstream out;
  EXPECT_EQ(RunCheckConfig("config/samples/hyperpod", out), 0);
  const std::string text = out.str();
  for (const char* want : {"team-a.json: ok", "cluster-policy.json: ok", "effective quotas",
                           "NOMINAL", "BORROWING LIMIT", "LENDING LIMIT", "ml.trn1.32xlarge",
                           "aws.amazon.com/neuron", "inference=100", "result: valid"}) {
    EXPECT_NE(text.find(want), std::string::npos) << want << "\n" << text;
  }
  // Team a on p5: 8 GPUs, borrows 4 (50%), lends all.
  bool row = false;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream words(line);
    std::vector<std::string> w{std::istream_iterator<std::string>(words), {}};
    if (w.size() == 6 && w[0] == "a" && w[1] == "ml.p5.48xlarge" && w[2] == "nvidia.com/gpu") {
      EXPECT_EQ(w[3], "8");
      EXPECT_EQ(w[4], "4");
      EXPECT_EQ(w[5], "unlimited");
      row = true;
    }
  }
  EXPECT_TRUE(row) << text;
}

TEST(CheckConfig, InvalidDirectoryExitsOneAndListsErrorsPerFile) {
  TempDir dir;
  dir.Write("good.yaml", kTeamA);
  dir.Write("bad.yaml",
            "apiVersion: taskgov.io/v1\nkind: Team\nname: b\ncompute:\n"
            "  - {instanceType: ml.g5.xlarge, count: -2}\n");
  dir.Write("warn.yaml", "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\n");
  std::ostringstream out;
  EXPECT_EQ(RunCheckConfig(dir.path(), out), 1);
  const std::string text = out.str();
  for (const char* want :
       {"good.yaml: ok", "bad.yaml: 1 error", "error: bad.yaml: compute[0].count (line 5",
        "warn.yaml: 1 warning", "result: invalid (1 error, 1 warning)"}) {
    EXPECT_NE(text.find(want), std::string::npos) << want << "\n" << text;
  }
}

}  // namespace
}  // namespace taskgov::config
