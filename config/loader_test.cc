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

bool HasAnyError(const LoadResult& r, const std::string& file) {
  return testing::HasDiagnostic(r, Severity::kError, file, "", "");
}

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

TEST(LoadDirectory, EmptyDirectoryIsRefusedWithAWarningNamingIt) {
  TempDir dir;
  LoadResult r = LoadDirectory(dir.path());
  EXPECT_FALSE(r.ok());
  EXPECT_TRUE(testing::HasDiagnostic(r, Severity::kWarning, "", "", "'" + dir.path() + "'"))
      << Dump(r);
  EXPECT_TRUE(testing::HasDiagnostic(r, Severity::kError, "", "", "no team is defined")) << Dump(r);
  dir.Write("policy.yaml",
            "apiVersion: taskgov.io/v1\nkind: TaskGovernancePolicy\nemptyPolicy: true\n");
  LoadResult marked = LoadDirectory(dir.path());
  ASSERT_TRUE(marked.ok()) << Dump(marked);
  EXPECT_TRUE(marked.policy->teams.empty());
  EXPECT_FALSE(marked.policy->source_hash.empty());
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

// Found by config_hyperpod_fuzz (config/document_test.cc has the parser's side): a file holding a
// stray ',' made the reload never finish; now it is refused like any invalid file.
TEST(LoadSources, StrayCommaIsAnErrorNamingTheFileAndLine) {
  LoadResult r = LoadSources({SourceFile{"team-a.json", "{\"Name\": \"a\"},\n"}});
  EXPECT_FALSE(r.ok());
  EXPECT_TRUE(testing::HasDiagnostic(r, Severity::kError, "team-a.json", "",
                                     "invalid YAML/JSON: unexpected ','"))
      << Dump(r);
  EXPECT_NE(r.FirstError().find("line 1, column 14"), std::string::npos) << r.FirstError();
}

// Found by config_hyperpod_fuzz (the exact bytes): "Accelerators": 0 on ml.c5n.4xlarge, a type
// without accelerators, divided by zero while deriving the line's quota (catalogue_test has the
// derivation). The file now loads to a diagnosis instead of killing the process.
TEST(LoadSources, ZeroAcceleratorsOnACpuTypeDoesNotDivideByZero) {
  const std::string found =
      "{\n    \"Oam\": "
      "\"arn:aw==============================s:sagemaker:us-west-2:123456789012:cluster/"
      "sample0cluster\",\n    \"ComputeQuotaConfig\": {\n        \"ComputeQuotaResources\": [\n    "
      "        {\"InstanceType\": \"ml.c5n.4xlarge\", \"Accelerators\": 0},\n            "
      "{\"InstanceType\": \"ml.g5.12xlarge\", \"Accelerators\": 4}\n        ],\n        "
      "\"ResourceSharingConfig\": {\x02"
      "Strategy\": \"LendAndBorrow\", \"BorrowLimit\": 44},\n        +PreemptTeamTasks\": "
      "\"LowerPriority\"\n    },\n    \"ComputeQuotaTarget\": {\"TeamName\": \"a\", \"FairShght\": "
      "$40},\n    \"ActivationState\": \"Enabled\"\n}\n";
  LoadResult r = LoadSources({SourceFile{"team-a.json", found}});
  EXPECT_NE(r.draft, nullptr);
  EXPECT_FALSE(r.ok()) << Dump(r);  // the mutated file has other errors
  EXPECT_FALSE(testing::HasDiagnostic(r, Severity::kError, "team-a.json", "", "ml.c5n.4xlarge"))
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

// The cluster policy says whether IdleResourceSharing is on and within which cohort it lends.
TEST(CheckConfig, PrintsIdleResourceSharing) {
  TempDir dir;
  dir.Write("policy.json", R"({"SchedulerConfig": {"IdleResourceSharing": "Enabled"}})");
  dir.Write("a.json", R"({"ComputeQuotaConfig": {"ComputeQuotaResources": [
      {"InstanceType": "ml.p5.48xlarge", "Count": 1}]}, "ComputeQuotaTarget": {"TeamName": "a"}})");
  std::ostringstream out;
  EXPECT_EQ(RunCheckConfig(dir.path(), out), 0);
  EXPECT_NE(out.str().find("idle resource sharing: Enabled: capacity no quota covers is lent "
                           "within cohort hyperpod\n"),
            std::string::npos)
      << out.str();
  std::ostringstream sample;
  EXPECT_EQ(RunCheckConfig("config/samples/hyperpod", sample), 0);
  EXPECT_NE(sample.str().find("idle resource sharing: Disabled\n"), std::string::npos)
      << sample.str();
}

// The cohort pools a configuration makes: per cohort, flavor and resource, what its teams lend,
// what the cohort holds itself (a Kueue Cohort's resourceGroups), what its child cohorts lend it,
// the pool's capacity and what a child keeps for its own subtree.
TEST(CheckConfig, PrintsEachCohortPoolWithTheCohortsOwnQuota) {
  TempDir dir;
  dir.Write("kueue.yaml", R"(apiVersion: kueue.x-k8s.io/v1beta1
kind: Cohort
metadata: {name: lab}
spec:
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - name: ml.p5.48xlarge
      resources: [{name: nvidia.com/gpu, nominalQuota: 8}]
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: Cohort
metadata: {name: vision}
spec:
  parentName: lab
  fairSharing: {weight: "0.5"}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - name: ml.p5.48xlarge
      resources: [{name: nvidia.com/gpu, nominalQuota: 2, lendingLimit: 3}]
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: vision-team}
spec:
  cohort: vision
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - name: ml.p5.48xlarge
      resources: [{name: nvidia.com/gpu, nominalQuota: 4}]
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: research}
spec:
  cohort: lab
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - name: ml.p5.48xlarge
      resources: [{name: nvidia.com/gpu, nominalQuota: 16, lendingLimit: 4}]
)");
  std::ostringstream out;
  EXPECT_EQ(RunCheckConfig(dir.path(), out), 0);
  const std::string text = out.str();
  ASSERT_NE(text.find("cohort pools"), std::string::npos) << text;
  // vision: 4 from its team + 2 of its own = 6, keeps 6 − 3 and lends 3 to lab; lab: 4 from
  // research + 8 of its own + vision's 3 = 15.
  int rows = 0;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream words(line);
    std::vector<std::string> w{std::istream_iterator<std::string>(words), {}};
    if (w.size() == 10 && w[0] == "lab") {  // a root: no weight
      EXPECT_EQ(w, (std::vector<std::string>{"lab", "-", "-", "ml.p5.48xlarge", "nvidia.com/gpu",
                                             "4", "8", "3", "15", "-"}));
      ++rows;
    }
    if (w.size() == 10 && w[0] == "vision") {
      EXPECT_EQ(w, (std::vector<std::string>{"vision", "lab", "0.5", "ml.p5.48xlarge",
                                             "nvidia.com/gpu", "4", "2", "0", "6", "3"}));
      ++rows;
    }
  }
  EXPECT_EQ(rows, 2) << text;
}

// Kueue's resource groups: a table says what a team's pods on one flavor are charged for on
// another (cpu on an unlabelled default flavor for GPU pods on an instance type).
TEST(CheckConfig, PrintsWhatPodsAreChargedForOnAnotherFlavor) {
  TempDir dir;
  dir.Write("kueue.yaml", R"(apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: default-flavor}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: ml.p5.48xlarge}
spec: {nodeLabels: {node.kubernetes.io/instance-type: ml.p5.48xlarge}}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: llm}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [cpu]
    flavors: [{name: default-flavor, resources: [{name: cpu, nominalQuota: 384}]}]
  - coveredResources: [nvidia.com/gpu]
    flavors: [{name: ml.p5.48xlarge, resources: [{name: nvidia.com/gpu, nominalQuota: 16}]}]
)");
  std::ostringstream out;
  EXPECT_EQ(RunCheckConfig(dir.path(), out), 0);
  const std::string text = out.str();
  ASSERT_NE(text.find("charged on another flavor (resource groups)"), std::string::npos) << text;
  bool found = false;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream words(line);
    const std::vector<std::string> w{std::istream_iterator<std::string>(words), {}};
    found =
        found || w == std::vector<std::string>{"llm", "ml.p5.48xlarge", "cpu", "default-flavor"};
  }
  EXPECT_TRUE(found) << text;
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

// An empty config dir under --check-config says so, with its path, and is invalid (no team).
TEST(CheckConfig, EmptyDirectoryWarnsWithItsPath) {
  TempDir dir;
  std::ostringstream out;
  EXPECT_EQ(RunCheckConfig(dir.path(), out), 1);
  const std::string text = out.str();
  for (const std::string& want :
       {std::string("<directory>: 1 error, 1 warning"),
        "warning: <config>: the directory '" + dir.path() + "' holds no configuration file",
        std::string("error: <config>: no team is defined"), std::string("emptyPolicy: true")}) {
    EXPECT_NE(text.find(want), std::string::npos) << want << "\n" << text;
  }
}

// Every error of a document in one run: here an unusable team name, a bad amount and an instance
// type missing from the catalogue on the same line.
TEST(CheckConfig, ReportsEveryErrorOfADocumentInOneRun) {
  TempDir dir;
  dir.Write("t.yaml",
            "apiVersion: taskgov.io/v1\nkind: Team\nname: Bad_Name\nfairShareWeight: -1\n"
            "compute:\n  - {instanceType: ml.nonexistent.xlarge, accelerators: -1}\n");
  std::ostringstream out;
  EXPECT_EQ(RunCheckConfig(dir.path(), out), 1);
  const std::string text = out.str();
  for (const char* want :
       {"t.yaml: 4 errors", "error: t.yaml: name (line 3", "error: t.yaml: fairShareWeight (line 4",
        "error: t.yaml: compute[0].accelerators (line 6",
        "error: t.yaml: compute[0] (line 6, column 5): instance type "
        "'ml.nonexistent.xlarge' is not in the catalogue"}) {
    EXPECT_NE(text.find(want), std::string::npos) << want << "\n" << text;
  }
}

// The files of one configuration of each dialect, read from the test data.
std::vector<SourceFile> Files(const std::string& dir, const std::vector<std::string>& names) {
  std::vector<SourceFile> files;
  for (const std::string& name : names) {
    files.push_back({name, testing::ReadRunfile(dir + "/" + name)});
  }
  return files;
}

// A file cut short anywhere is refused when its full version is in force, in every dialect —
// including the YAML cuts that still parse and validate on their own (a list or map cut at a
// line end), which LoadSources alone would take for a smaller policy.
TEST(Truncation, EveryPrefixOfAFileInForceIsRefused) {
  const std::string kHyperPodYaml =
      "ComputeQuotaTarget:\n  TeamName: ya\n  FairShareWeight: 10\nComputeQuotaConfig:\n"
      "  ComputeQuotaResources:\n    - InstanceType: ml.g5.xlarge\n      Count: 2\n"
      "    - InstanceType: ml.g5.2xlarge\n      Count: 1\n  ResourceSharingConfig:\n"
      "    Strategy: LendAndBorrow\n    BorrowLimit: 50\n";
  struct Dialect {
    std::string name;
    std::vector<SourceFile> files;
    std::string cut;  // the file that is cut short
    bool yaml;
  };
  const std::string eq = "config/testdata/equivalence/";
  const std::vector<Dialect> dialects = {
      {"native", Files("config/testdata/native", {"full.yaml"}), "full.yaml", true},
      {"HyperPod JSON", Files(eq + "hyperpod", {"team-a.json", "team-b.json", "team-c.json"}),
       "team-a.json", false},
      {"HyperPod YAML",
       {{"team-ya.yaml", kHyperPodYaml},
        {"team-a.json", Files(eq + "hyperpod", {"team-a.json"})[0].content}},
       "team-ya.yaml",
       true},
      {"Kueue", Files(eq + "kueue_v1beta1", {"kueue.yaml"}), "kueue.yaml", true},
      {"Volcano", Files(eq + "volcano", {"policy.yaml", "queues.yaml"}), "queues.yaml", true},
  };
  for (const Dialect& d : dialects) {
    LoadResult full = LoadSources(d.files);
    ASSERT_TRUE(full.ok()) << d.name << "\n" << Dump(full);
    const std::string& content = std::find_if(d.files.begin(), d.files.end(), [&](auto& f) {
                                   return f.name == d.cut;
                                 })->content;
    size_t valid_alone = 0;
    size_t cuts = 0;
    for (size_t n = 0; n < content.size(); ++n) {
      if (content.find_first_not_of(" \t\r\n", n) == std::string::npos) break;  // blanks only
      const bool line_end = n > 0 && content[n - 1] == '\n';
      if (!line_end && n % 5 != 0) continue;  // every line end, and every fifth byte
      DirectorySnapshot snapshot;
      snapshot.files = d.files;
      for (SourceFile& f : snapshot.files) {
        if (f.name == d.cut) f.content = content.substr(0, n);
      }
      if (line_end && LoadSources(snapshot.files).ok()) ++valid_alone;
      LoadResult r = LoadSnapshot(snapshot, &d.files);
      ++cuts;
      ASSERT_FALSE(r.ok()) << d.name << ": cut at " << n << " accepted";
      ASSERT_TRUE(HasAnyError(r, d.cut)) << d.name << " cut at " << n << "\n" << Dump(r);
    }
    EXPECT_GT(cuts, 50u) << d.name;
    // The YAML dialects have cuts that still load on their own: what the rule is for.
    if (d.yaml) {
      EXPECT_GT(valid_alone, 0u) << d.name;
    }
  }
}

TEST(Truncation, OnlyStrictPrefixesWithMoreThanBlanksCutAreTruncations) {
  const std::vector<SourceFile> in_force = {{"a.yaml", kTeamA}, {"b.yaml", kTeamB}};
  const std::string a = kTeamA;
  EXPECT_EQ(TruncationErrors({{"a.yaml", a.substr(0, a.size() - 5)}}, in_force).size(), 1u);
  EXPECT_TRUE(TruncationErrors({{"a.yaml", a}}, in_force).empty());               // unchanged
  EXPECT_TRUE(TruncationErrors({{"a.yaml", a + "# more\n"}}, in_force).empty());  // grew
  EXPECT_TRUE(TruncationErrors({{"a.yaml", "# x\n" + a.substr(0, 40)}}, in_force).empty());
  EXPECT_TRUE(TruncationErrors({{"c.yaml", a.substr(0, 20)}}, in_force).empty());  // new file
  EXPECT_TRUE(TruncationErrors({{"a.yaml", ""}}, in_force).empty());  // empty: its own error
  const std::vector<SourceFile> trailing = {{"a.yaml", a + "\n\n  \n"}};
  EXPECT_TRUE(TruncationErrors({{"a.yaml", a}}, trailing).empty());  // only blanks cut
  const std::vector<Diagnostic> e =
      TruncationErrors({{"b.yaml", "apiVersion: taskgov.io/v1\n"}}, in_force);
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0].file, "b.yaml");
  EXPECT_NE(e[0].message.find("shrank to its first 26 of"), std::string::npos) << e[0].message;
}

}  // namespace
}  // namespace taskgov::config
