// The CLI's pieces without an API server: the parser, help on every command, completion scripts,
// the diff, and the CLI's own ConfigMap key read back through config/'s decoder.

#include <gtest/gtest.h>
#include <stdio.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "extender/cli/args.h"
#include "extender/cli/commands.h"
#include "extender/cli/diff.h"
#include "extender/cli/owned_policy.h"

namespace taskgov::cli {
namespace {

struct Output {
  int code;
  std::string out, err;
};

Output RunCli(const std::vector<std::string>& args) {
  std::ostringstream out, err;
  Environment env;
  env.out = &out;
  env.err = &err;
  env.connect = [](const GlobalOptions&) -> common::Result<std::unique_ptr<ConfigMapStore>> {
    return common::Error{"no API in this test"};
  };
  const int code = RunTaskgov(args, env);
  return {code, out.str(), err.str()};
}

TEST(ParserTest, KeepsFlagOrderAndAcceptsEveryKubectlSpelling) {
  CommandNode leaf{"create", {ValueFlag("count", "N", "").Repeatable()}, {}};
  CommandNode root{"", {}, {&leaf}};
  const std::vector<FlagSpec> global = {ValueFlag("namespace", "NS", "").Short('n').Repeatable(),
                                        BoolFlag("all", "").Short('A'),
                                        ValueFlag("dry-run", "M", "").Optional("client")};
  ParseOutcome p = ParseCommandLine({"-nfirst", "create", "team", "--count=1", "--count", "2", "-n",
                                     "second", "-A", "--dry-run", "--", "--count"},
                                    root, global);
  ASSERT_FALSE(p.error) << p.error->message;
  EXPECT_EQ(p.command, &leaf);
  EXPECT_EQ(p.args.command, std::vector<std::string>({"create"}));
  EXPECT_EQ(p.args.positional, std::vector<std::string>({"team", "--count"}));
  EXPECT_EQ(p.args.All("count"), std::vector<std::string>({"1", "2"}));
  EXPECT_EQ(p.args.All("namespace"), std::vector<std::string>({"first", "second"}));
  EXPECT_TRUE(p.args.Bool("all"));
  EXPECT_EQ(p.args.Get("dry-run"), "client");
  ASSERT_EQ(p.args.flags.size(), 6u);
  EXPECT_EQ(p.args.flags[1].name, "count");
  EXPECT_EQ(p.args.flags[3].name, "namespace");
}

TEST(ParserTest, AWordAfterAPositionalIsPositional) {
  CommandNode list{"list", {}, {}};
  CommandNode root{"", {}, {&list}};
  ParseOutcome p = ParseCommandLine({"list", "x", "list"}, root, {});
  EXPECT_EQ(p.args.positional, std::vector<std::string>({"x", "list"}));
}

// Every command answers --help with its usage, an example and the exit codes.
TEST(HelpTest, EveryCommandHasHelpWithAnExample) {
  for (const std::vector<std::string>& path :
       std::vector<std::vector<std::string>>{{},
                                             {"quota"},
                                             {"quota", "create"},
                                             {"quota", "update"},
                                             {"quota", "describe"},
                                             {"quota", "list"},
                                             {"quota", "delete"},
                                             {"policy"},
                                             {"policy", "show"},
                                             {"policy", "set"},
                                             {"config"},
                                             {"config", "validate"},
                                             {"completion"}}) {
    std::vector<std::string> args = path;
    args.push_back("--help");
    Output help = RunCli(args);
    std::string name;
    for (const std::string& w : path) name += " " + w;
    SCOPED_TRACE("taskgov" + name);
    EXPECT_EQ(help.code, 0);
    EXPECT_EQ(help.err, "");
    EXPECT_NE(help.out.find("Usage:\n  taskgov" + name), std::string::npos) << help.out;
    EXPECT_NE(help.out.find("Exit codes: 0"), std::string::npos);
    EXPECT_NE(help.out.find("Examples:\n  taskgov" + name), std::string::npos) << help.out;
    std::vector<std::string> via_help = {"help"};
    via_help.insert(via_help.end(), path.begin(), path.end());
    EXPECT_EQ(RunCli(via_help).out, help.out);
    args.back() = "-h";
    EXPECT_EQ(RunCli(args).out, help.out);
  }
}

TEST(HelpTest, QuotaCreateDocumentsHowRepeatedFlagsGroup) {
  Output help = RunCli({"quota", "create", "--help"});
  EXPECT_NE(help.out.find("Every\n--instance-type starts a line; the --count, --accelerators, "
                          "--vcpu and --memory after it\nbelong to that line."),
            std::string::npos)
      << help.out;
  EXPECT_NE(help.out.find("--dry-run[=MODE]"), std::string::npos);
  EXPECT_NE(help.out.find("-n, --namespace NS"), std::string::npos);
}

// The scripts parse in bash and name every command and the enumerated values.
TEST(CompletionTest, BashAndZshScriptsCompleteCommandsFlagsAndValues) {
  for (const char* shell : {"bash", "zsh"}) {
    Output script = RunCli({"completion", shell});
    ASSERT_EQ(script.code, 0) << script.err;
    for (const char* word :
         {"create update describe list delete", "show set", "validate", "--instance-type",
          "--borrow-limit", "Lend DontLend LendAndBorrow", "table wide json yaml name",
          "complete -F _taskgov taskgov "
          "kubectl-taskgov"}) {
      EXPECT_NE(script.out.find(word), std::string::npos) << shell << ": " << word;
    }
    if (std::string(shell) == "bash") {
      const std::string path = ::testing::TempDir() + "/completion.bash";
      std::ofstream(path) << script.out;
      EXPECT_EQ(system(("bash -n " + path).c_str()), 0);
      // Completing `taskgov quota cr` in a real bash offers `create`.
      const std::string probe = "source " + path +
                                "; COMP_WORDS=(taskgov quota cr); COMP_CWORD=2; _taskgov; "
                                "echo \"${COMPREPLY[*]}\"";
      FILE* pipe = popen(("bash -c '" + probe + "'").c_str(), "r");
      ASSERT_NE(pipe, nullptr);
      char buffer[256] = {};
      ASSERT_NE(fgets(buffer, sizeof(buffer), pipe), nullptr);
      pclose(pipe);
      EXPECT_STREQ(buffer, "create\n");
    } else {
      EXPECT_EQ(script.out.rfind("#compdef taskgov kubectl-taskgov\n", 0), 0u);
    }
  }
}

TEST(DiffTest, ShowsChangedLinesWithContextAndLineNumbers) {
  const std::string before = "a\nb\nc\nd\ne\nf\ng\nh\n";
  const std::string after = "a\nb\nC\nd\ne\nf\ng\nh\ni\n";
  EXPECT_EQ(UnifiedDiff(before, after, "old", "new", 1),
            "--- old\n+++ new\n@@ -2,3 +2,3 @@\n b\n-c\n+C\n d\n@@ -8,1 +8,2 @@\n h\n+i\n");
  EXPECT_EQ(UnifiedDiff(before, before, "old", "new"), "");
  EXPECT_EQ(UnifiedDiff("", "x\n", "old", "new"), "--- old\n+++ new\n@@ -0,0 +1,1 @@\n+x\n");
}

OwnedPolicy SamplePolicy() {
  OwnedPolicy p;
  TeamQuota a;
  a.name = "team-a";
  a.cohort = "hyperpod";
  a.namespaces = {"ns-a", "ns-b"};
  a.compute = {ComputeLine{"ml.p5.48xlarge", 2, {}, {}, {}},
               ComputeLine{"ml.m5.2xlarge", {}, {}, "1.5", "0.25"}};
  a.strategy = "LendAndBorrow";
  a.borrow_limit = 80;
  a.fair_share_weight = 0;
  TeamQuota b;
  b.name = "team-b";
  b.cohort = "hyperpod";
  b.compute = {ComputeLine{"ml.g5.12xlarge", {}, 4, {}, {}}};
  b.strategy = "DontLend";
  b.preempt_team_tasks = "Never";
  p.teams = {b, a};
  p.cluster.task_prioritization = "FirstComeFirstServe";
  p.cluster.priority_classes = std::vector<PriorityClassWeight>{{"inference", 100}};
  return p;
}

TEST(OwnedPolicyTest, ReadsBackThroughTheConfigDecoderAsWritten) {
  const OwnedPolicy p = SamplePolicy();
  const std::string text = RenderOwned(p);
  common::Result<OwnedPolicy> back = ParseOwned(text);
  ASSERT_TRUE(back.ok()) << back.error().message << "\n" << text;
  ASSERT_EQ(back->teams.size(), 2u);
  EXPECT_EQ(back->teams[0], p.teams[1]);  // rendered in name order
  EXPECT_EQ(back->teams[1], p.teams[0]);
  EXPECT_EQ(back->cluster, p.cluster);
  EXPECT_EQ(RenderOwned(*back), text);
  EXPECT_EQ(RenderOwned(OwnedPolicy{}), "");
}

TEST(OwnedPolicyTest, RemovingTheLastDocumentNeverLeavesAPrefix) {
  OwnedPolicy p = SamplePolicy();
  const std::string two = RenderOwned(p);
  p.teams.pop_back();  // team-a, rendered last
  const std::string one = RenderOwned(p);
  EXPECT_FALSE(two.starts_with(one));
}

TEST(OwnedPolicyTest, RefusesWhatTheCliDoesNotWrite) {
  common::Result<OwnedPolicy> partition = ParseOwned(
      "apiVersion: taskgov.io/v1\nkind: Team\nname: t\ncompute:\n"
      "  - {instanceType: ml.p4d.24xlarge, acceleratorPartition: {type: mig-1g.5gb, count: 7}}\n");
  ASSERT_FALSE(partition.ok());
  EXPECT_EQ(partition.error().message,
            "taskgov-cli.yaml: compute[0]: flavors and accelerator partitions are not written by "
            "the CLI");
  common::Result<OwnedPolicy> broken = ParseOwned("kind: [\n");
  ASSERT_FALSE(broken.ok());
  EXPECT_NE(broken.error().message.find("taskgov-cli.yaml"), std::string::npos);
}

TEST(FormatDecimalTest, IsExact) {
  EXPECT_EQ(FormatDecimal(1500, 1000), "1.5");
  EXPECT_EQ(FormatDecimal(96000, 1000), "96");
  EXPECT_EQ(FormatDecimal(int64_t{3} << 28, int64_t{1} << 30), "0.75");
  EXPECT_EQ(FormatDecimal(1, int64_t{1} << 30), "0.000000000931322574615478515625");
}

}  // namespace
}  // namespace taskgov::cli

namespace taskgov::cli {
namespace {

// `config validate` is the extender's own check: the sample policy passes, a broken file fails
// with the file, path and reason.
TEST(ConfigValidateTest, RunsTheExtendersChecks) {
  Output good = RunCli({"config", "validate", "config/samples/native"});
  EXPECT_EQ(good.code, 0) << good.out;
  EXPECT_NE(good.out.find("taskgov-policy.yaml: ok"), std::string::npos) << good.out;

  const std::string dir = ::testing::TempDir() + "/bad-policy";
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/teams.yaml") << "apiVersion: taskgov.io/v1\nkind: Team\nname: a\ncompute:\n"
                                        "  - {instanceType: ml.p5.48xlarge, accelerators: -1}\n";
  Output bad = RunCli({"config", "validate", dir});
  EXPECT_EQ(bad.code, 1);
  EXPECT_NE(bad.out.find("teams.yaml: compute[0].accelerators"), std::string::npos) << bad.out;
}

}  // namespace
}  // namespace taskgov::cli
