// Every bad flag and bad value of the CLI: the exact message, the pointer to the command's
// --help, exit code 2, and that the API server is never contacted.

#include <gtest/gtest.h>

#include <sstream>

#include "extender/cli/commands.h"
#include "scheduler/kube/client.h"

namespace taskgov::cli {
namespace {

struct UsageCase {
  std::string name;
  std::vector<std::string> args;
  std::string message;
  std::string help_path;  // the command whose --help the error points to
};

const std::string kP5 = "ml.p5.48xlarge";
const std::string kDnsLabelRule =
    ": use a DNS-1123 label (lowercase letters, digits and '-', starting and ending with a "
    "letter or digit, at most 63 characters)";

std::vector<std::string> Create(std::vector<std::string> rest) {
  std::vector<std::string> args = {"quota", "create", "team-a"};
  args.insert(args.end(), rest.begin(), rest.end());
  return args;
}

std::vector<std::string> CreateP5(std::vector<std::string> rest) {
  rest.insert(rest.begin(), {"--instance-type", kP5});
  return Create(rest);
}

std::vector<UsageCase> Cases() {
  const std::string line_rule =
      "each --instance-type starts a compute line, and the --count, --accelerators, --vcpu and "
      "--memory after it belong to it";
  return {
      {"AmountBeforeInstanceType", Create({"--count", "2"}),
       "--count 2 comes before any --instance-type: " + line_rule, "quota create"},
      {"LineWithoutAmount", CreateP5({}),
       "--instance-type ml.p5.48xlarge has no amount: follow it with --count, or any of "
       "--accelerators, --vcpu and --memory",
       "quota create"},
      {"CountWithAccelerators", CreateP5({"--count", "1", "--accelerators", "8"}),
       "--count and --accelerators exclude each other for --instance-type ml.p5.48xlarge: give a "
       "count of whole instances, or any of --accelerators, --vcpu and --memory",
       "quota create"},
      {"CountWithVcpu", CreateP5({"--vcpu", "8", "--count", "1"}),
       "--count and --vcpu exclude each other for --instance-type ml.p5.48xlarge: give a count "
       "of whole instances, or any of --accelerators, --vcpu and --memory",
       "quota create"},
      {"AmountTwiceInALine", CreateP5({"--count", "1", "--count", "2"}),
       "--count is given twice for --instance-type ml.p5.48xlarge", "quota create"},
      {"MemoryTwiceInALine", CreateP5({"--memory", "1", "--memory", "2"}),
       "--memory is given twice for --instance-type ml.p5.48xlarge", "quota create"},
      {"InstanceTypeTwice", CreateP5({"--count", "1", "--instance-type", kP5, "--count", "2"}),
       "--instance-type ml.p5.48xlarge is given twice: give each instance type once, followed by "
       "its amounts",
       "quota create"},
      {"EmptyInstanceType", Create({"--instance-type", ""}), "--instance-type must not be empty",
       "quota create"},
      {"CountNotANumber", CreateP5({"--count", "abc"}),
       "invalid --count \"abc\" for --instance-type ml.p5.48xlarge: use a whole number from 0 to "
       "10000000",
       "quota create"},
      {"CountNegative", CreateP5({"--count", "-1"}),
       "invalid --count \"-1\" for --instance-type ml.p5.48xlarge: use a whole number from 0 to "
       "10000000",
       "quota create"},
      {"CountTooLarge", CreateP5({"--count", "10000001"}),
       "invalid --count \"10000001\" for --instance-type ml.p5.48xlarge: use a whole number from "
       "0 to 10000000",
       "quota create"},
      {"AcceleratorsFraction", CreateP5({"--accelerators", "1.5"}),
       "invalid --accelerators \"1.5\" for --instance-type ml.p5.48xlarge: use a whole number "
       "from 0 to 10000000",
       "quota create"},
      {"VcpuWithExponent", CreateP5({"--vcpu", "1e3"}),
       "invalid --vcpu \"1e3\" for --instance-type ml.p5.48xlarge: use a number of vCPUs such as "
       "96 or 1.5",
       "quota create"},
      {"VcpuMillicores", CreateP5({"--vcpu", "500m"}),
       "invalid --vcpu \"500m\" for --instance-type ml.p5.48xlarge: use a number of vCPUs such as "
       "96 or 1.5",
       "quota create"},
      {"MemoryWithABadUnit", CreateP5({"--memory", "1GB"}),
       "invalid --memory \"1GB\" for --instance-type ml.p5.48xlarge: use GiB (such as 512 or 0.5) "
       "or a quantity such as 512Mi",
       "quota create"},
      {"MemoryNegative", CreateP5({"--memory", "-2"}),
       "invalid --memory \"-2\" for --instance-type ml.p5.48xlarge: use GiB (such as 512 or 0.5) "
       "or a quantity such as 512Mi",
       "quota create"},
      {"StrategyCase", CreateP5({"--count", "1", "--strategy", "lend"}),
       "invalid --strategy \"lend\": use Lend, DontLend or LendAndBorrow", "quota create"},
      {"BorrowLimitNotANumber", CreateP5({"--count", "1", "--borrow-limit", "half"}),
       "invalid --borrow-limit \"half\": use a whole percentage of the nominal quota from 0 to "
       "10000, such as 50",
       "quota create"},
      {"BorrowLimitTooLarge", CreateP5({"--count", "1", "--borrow-limit", "10001%"}),
       "invalid --borrow-limit \"10001%\": use a whole percentage of the nominal quota from 0 to "
       "10000, such as 50",
       "quota create"},
      {"BorrowLimitWithLend",
       CreateP5({"--count", "1", "--strategy", "Lend", "--borrow-limit", "50"}),
       "--borrow-limit applies only to --strategy LendAndBorrow (got --strategy Lend, which "
       "borrows nothing)",
       "quota create"},
      {"PreemptTeamTasks", CreateP5({"--count", "1", "--preempt-team-tasks", "Always"}),
       "invalid --preempt-team-tasks \"Always\": use LowerPriority or Never", "quota create"},
      {"FairShareWeightTooLarge", CreateP5({"--count", "1", "--fair-share-weight", "101"}),
       "invalid --fair-share-weight \"101\": use a whole number from 0 to 100", "quota create"},
      {"FairShareWeightFraction", CreateP5({"--count", "1", "--fair-share-weight", "0.5"}),
       "invalid --fair-share-weight \"0.5\": use a whole number from 0 to 100", "quota create"},
      {"BadNamespace", CreateP5({"--count", "1", "-n", "Team_A"}),
       "invalid namespace \"Team_A\"" + kDnsLabelRule, "quota create"},
      {"NamespaceTwice", CreateP5({"--count", "1", "-n", "ns-a", "--namespace=ns-a"}),
       "namespace \"ns-a\" is given twice", "quota create"},
      {"BadTeamName",
       {"quota", "create", "Team_A", "--instance-type", kP5, "--count", "1"},
       "invalid team name \"Team_A\"" + kDnsLabelRule,
       "quota create"},
      {"CreateWithoutComputeLine", Create({"--strategy", "Lend"}),
       "a quota needs at least one compute line: --instance-type TYPE followed by --count N, or "
       "by any of --accelerators, --vcpu and --memory",
       "quota create"},
      {"UpdateWithNothing",
       {"quota", "update", "team-a"},
       "nothing to update: give compute lines (--instance-type ...), --strategy, --borrow-limit, "
       "--preempt-team-tasks, --fair-share-weight or -n/--namespace",
       "quota update"},
      {"UpdateAmountBeforeInstanceType",
       {"quota", "update", "team-a", "--vcpu", "4"},
       "--vcpu 4 comes before any --instance-type: " + line_rule,
       "quota update"},
      {"MissingTeam", {"quota", "create"}, "missing TEAM", "quota create"},
      {"MissingTeamForDescribe", {"quota", "describe"}, "missing TEAM", "quota describe"},
      {"TooManyArguments",
       {"quota", "describe", "a", "b"},
       "too many arguments: \"b\" (the command takes TEAM)",
       "quota describe"},
      {"ListTakesNoArgument", {"quota", "list", "x"}, "unexpected argument \"x\"", "quota list"},
      {"FlagTwice", CreateP5({"--count", "1", "--strategy", "Lend", "--strategy=DontLend"}),
       "flag --strategy given more than once (Lend, then DontLend): give it once", "quota create"},
      {"UnknownFlag", CreateP5({"--cont", "1"}), "unknown flag: --cont", "quota create"},
      {"UnknownShorthand",
       {"quota", "list", "-x"},
       "unknown shorthand flag: 'x' in -x",
       "quota list"},
      {"FlagOfAnotherCommand",
       {"quota", "list", "--count", "1"},
       "unknown flag: --count",
       "quota list"},
      {"FlagNeedsValue", Create({"--instance-type"}), "flag needs an argument: --instance-type",
       "quota create"},
      {"ShortFlagNeedsValue",
       {"quota", "list", "-o"},
       "flag needs an argument: 'o' in -o",
       "quota list"},
      {"UnknownOutput",
       {"quota", "list", "-o", "xml"},
       "invalid output format \"xml\": use table, wide, json, yaml or name",
       "quota list"},
      {"OutputOfAWrite", CreateP5({"--count", "1", "-owide"}),
       "this command does not print -o wide: use table, json, yaml", "quota create"},
      {"OutputPolicyShowWide",
       {"policy", "show", "-o", "wide"},
       "this command does not print -o wide: use table, json, yaml",
       "policy show"},
      {"RequestTimeout",
       {"quota", "list", "--request-timeout", "soon"},
       "invalid --request-timeout \"soon\": use a duration such as 30s, 2m or 500ms, or 0 for no "
       "timeout",
       "quota list"},
      {"RequestTimeoutUnit",
       {"quota", "list", "--request-timeout=5d"},
       "invalid --request-timeout \"5d\": use a duration such as 30s, 2m or 500ms, or 0 for no "
       "timeout",
       "quota list"},
      {"AllNamespacesWithNamespace",
       {"quota", "list", "-A", "-n", "ns-a"},
       "-A/--all-namespaces and -n/--namespace exclude each other: give one",
       "quota list"},
      {"BoolFlagValue",
       {"quota", "list", "--all-namespaces=yes"},
       "invalid argument \"yes\" for \"--all-namespaces\" flag: use true or false",
       "quota list"},
      {"ShortBoolWithValue",
       {"quota", "list", "-Ax"},
       "flag -A takes no value; got -Ax",
       "quota list"},
      {"EmptyAs", {"quota", "list", "--as="}, "--as needs a user name", "quota list"},
      {"EmptyConfigMap",
       {"quota", "list", "--configmap="},
       "--configmap and --configmap-namespace must not be empty",
       "quota list"},
      {"DryRunValue", CreateP5({"--count", "1", "--dry-run=maybe"}),
       "invalid --dry-run \"maybe\": use none, client or server", "quota create"},
      {"DeleteDryRunValue",
       {"quota", "delete", "team-a", "--dry-run=All"},
       "invalid --dry-run \"All\": use none, client or server",
       "quota delete"},
      {"UnknownCommand",
       {"quot", "list"},
       "unknown command \"quot\" for \"taskgov\"; did you mean \"quota\"?",
       ""},
      {"UnknownSubcommand",
       {"quota", "show"},
       "unknown command \"show\" for \"taskgov quota\"",
       "quota"},
      {"GroupWithoutCommand",
       {"quota"},
       "a command is needed: create, update, describe, list, delete, take-over",
       "quota"},
      {"RootWithoutCommand",
       {},
       "a command is needed: quota, policy, config, job, top, simulate, completion",
       ""},
      {"CompletionShell",
       {"completion", "fish"},
       "unsupported shell \"fish\": use bash or zsh",
       "completion"},
      {"CompletionWithoutShell", {"completion"}, "missing bash|zsh", "completion"},
      {"PolicySetNothing",
       {"policy", "set"},
       "nothing to set: give --task-prioritization, --idle-compute, --priority-class or "
       "--clear-priority-classes",
       "policy set"},
      {"PriorityClassWithoutWeight",
       {"policy", "set", "--priority-class", "inference"},
       "invalid --priority-class \"inference\": use NAME=WEIGHT with a weight from 0 to 100, such "
       "as inference=100",
       "policy set"},
      {"PriorityClassWeightTooLarge",
       {"policy", "set", "--priority-class", "inference=101"},
       "invalid --priority-class \"inference=101\": use NAME=WEIGHT with a weight from 0 to 100, "
       "such as inference=100",
       "policy set"},
      {"PriorityClassName",
       {"policy", "set", "--priority-class", "Inference=1"},
       "invalid priority class name \"Inference\": use a DNS-1123 subdomain (lowercase letters, "
       "digits, '-' and '.')",
       "policy set"},
      {"PriorityClassTwice",
       {"policy", "set", "--priority-class", "a=1", "--priority-class", "a=2"},
       "priority class \"a\" is given twice",
       "policy set"},
      {"PriorityClassAndClear",
       {"policy", "set", "--priority-class", "a=1", "--clear-priority-classes"},
       "--priority-class and --clear-priority-classes exclude each other",
       "policy set"},
      {"TaskPrioritization",
       {"policy", "set", "--task-prioritization", "Priority"},
       "invalid --task-prioritization \"Priority\": use TaskRanking or FirstComeFirstServe",
       "policy set"},
      {"IdleCompute",
       {"policy", "set", "--idle-compute", "Fair"},
       "invalid --idle-compute \"Fair\": use FairShare or FirstComeFirstServe",
       "policy set"},
      {"ValidateWithoutDir", {"config", "validate"}, "missing DIR", "config validate"},
  };
}

std::vector<std::string> Submit(std::vector<std::string> rest) {
  std::vector<std::string> args = {"job", "submit", "train", "--image", "img"};
  args.insert(args.end(), rest.begin(), rest.end());
  return args;
}

std::vector<UsageCase> JobCases() {
  const std::string dns_subdomain =
      ": use a DNS-1123 subdomain (lowercase letters, digits, '-' and '.')";
  return {
      {"SubmitWithoutName",
       {"job", "submit", "--image", "img"},
       "a job needs a name: give NAME or --job-name NAME",
       "job submit"},
      {"SubmitNamedTwice",
       {"job", "submit", "a", "--job-name", "b", "--image", "img"},
       "the job is named twice (a and --job-name b): give NAME or --job-name NAME",
       "job submit"},
      {"SubmitBadName",
       {"job", "submit", "Train", "--image", "img"},
       "invalid job name \"Train\"" + kDnsLabelRule,
       "job submit"},
      {"SubmitWithoutImage", {"job", "submit", "train"}, "a job needs --image IMAGE", "job submit"},
      {"SubmitTwoNames",
       {"job", "submit", "a", "b", "--image", "img"},
       "too many arguments: \"b\" (the command takes [NAME])",
       "job submit"},
      {"SubmitEmptyInstanceType", Submit({"--instance-type", ""}),
       "--instance-type must not be empty", "job submit"},
      {"SubmitQueueName", Submit({"--queue-name", "Q"}),
       "invalid --queue-name \"Q\"" + dns_subdomain, "job submit"},
      {"SubmitPriority", Submit({"--priority", "High Priority"}),
       "invalid --priority \"High Priority\"" + dns_subdomain, "job submit"},
      {"SubmitAcceleratorsNotANumber", Submit({"--instance-type", kP5, "--accelerators", "x"}),
       "invalid --accelerators \"x\": use a whole number from 0 to 1024", "job submit"},
      {"SubmitAcceleratorsFraction", Submit({"--instance-type", kP5, "--accelerators", "0.5"}),
       "invalid --accelerators \"0.5\": use a whole number from 0 to 1024", "job submit"},
      {"SubmitAcceleratorLimitDiffers",
       Submit({"--instance-type", kP5, "--accelerators", "1", "--accelerators-limit", "2"}),
       "--accelerators-limit 2 differs from --accelerators 1: Kubernetes requires an "
       "accelerator's request to equal its limit",
       "job submit"},
      {"SubmitAcceleratorsWithoutType", Submit({"--accelerators", "1"}),
       "--accelerators needs to know the accelerator's resource: give --instance-type, or "
       "--accelerator-resource such as nvidia.com/gpu",
       "job submit"},
      {"SubmitAcceleratorsOfACpuType",
       Submit({"--instance-type", "ml.c5.4xlarge", "--accelerators", "1"}),
       "--accelerators needs to know the accelerator's resource: instance type ml.c5.4xlarge has "
       "no accelerator in the catalogue, or --accelerator-resource such as nvidia.com/gpu",
       "job submit"},
      {"SubmitVcpu", Submit({"--vcpu", "four"}),
       "invalid --vcpu \"four\": use a number of vCPUs greater than 0, such as 4 or 0.5",
       "job submit"},
      {"SubmitVcpuZero", Submit({"--vcpu", "0"}),
       "invalid --vcpu \"0\": use a number of vCPUs greater than 0, such as 4 or 0.5",
       "job submit"},
      {"SubmitVcpuMilli", Submit({"--vcpu-limit", "500m"}),
       "invalid --vcpu-limit \"500m\": use a number of vCPUs greater than 0, such as 4 or 0.5",
       "job submit"},
      {"SubmitMemory", Submit({"--memory", "lots"}),
       "invalid --memory \"lots\": use GiB (such as 512 or 0.5) or a quantity such as 512Mi",
       "job submit"},
      {"SubmitMemoryLimit", Submit({"--memory-limit", "-1"}),
       "invalid --memory-limit \"-1\": use GiB (such as 512 or 0.5) or a quantity such as 512Mi",
       "job submit"},
      {"SubmitVcpuLimitBelowRequest", Submit({"--vcpu", "4", "--vcpu-limit", "2"}),
       "--vcpu-limit 2 is less than --vcpu 4: a limit must be at least the request", "job submit"},
      {"SubmitMemoryLimitBelowRequest", Submit({"--memory", "32", "--memory-limit", "16Gi"}),
       "--memory-limit 16Gi is less than --memory 32: a limit must be at least the request",
       "job submit"},
      {"SubmitNodeCountZero", Submit({"--node-count", "0"}),
       "invalid --node-count \"0\": use a whole number from 1 to 1000", "job submit"},
      {"SubmitTasksPerNode", Submit({"--tasks-per-node", "1001"}),
       "invalid --tasks-per-node \"1001\": use a whole number from 1 to 1000", "job submit"},
      {"SubmitMaxRetry", Submit({"--max-retry", "-1"}),
       "invalid --max-retry \"-1\": use a whole number from 0 to 100", "job submit"},
      {"SubmitEnvWithoutValue", Submit({"--env", "DEBUG"}),
       "invalid --env \"DEBUG\": use NAME=VALUE with a name of letters, digits, '_', '-' and "
       "'.', not starting with a digit",
       "job submit"},
      {"SubmitEnvName", Submit({"--env", "1X=2"}),
       "invalid --env \"1X=2\": use NAME=VALUE with a name of letters, digits, '_', '-' and "
       "'.', not starting with a digit",
       "job submit"},
      {"SubmitEnvTwice", Submit({"--env", "A=1", "--env", "A=2"}), "--env A is given twice",
       "job submit"},
      {"SubmitPullPolicy", Submit({"--pull-policy", "always"}),
       "invalid --pull-policy \"always\": use Always, IfNotPresent or Never", "job submit"},
      {"SubmitSchedulerName", Submit({"--scheduler-name", "Tg"}),
       "invalid --scheduler-name \"Tg\": use a DNS-1123 subdomain such as taskgov", "job submit"},
      {"SubmitKind", Submit({"--kind", "MPIJob"}),
       "invalid --kind \"MPIJob\": use auto, Job or PyTorchJob", "job submit"},
      {"SubmitDryRun", Submit({"--dry-run=yes"}),
       "invalid --dry-run \"yes\": use none, client or server", "job submit"},
      {"SubmitAllNamespaces", Submit({"-A"}), "this command acts in one namespace: give -n NS",
       "job submit"},
      {"SubmitTwoNamespaces", Submit({"-n", "a", "-n", "b"}),
       "this command acts in one namespace: give -n once", "job submit"},
      {"SubmitBadNamespace", Submit({"-n", "Team_A"}),
       "invalid namespace \"Team_A\"" + kDnsLabelRule, "job submit"},
      {"SubmitOutput", Submit({"-o", "wide"}),
       "this command does not print -o wide: use table, json, yaml, name", "job submit"},
      {"SubmitUnknownFlag", Submit({"--gpus", "8"}), "unknown flag: --gpus", "job submit"},
      {"ListState",
       {"job", "list", "--state", "Queued"},
       "invalid --state \"Queued\": use Pending, Admitted, Running, Terminating, Suspended, "
       "Succeeded or Failed",
       "job list"},
      {"ListTeam",
       {"job", "list", "--team", "Team A"},
       "invalid --team \"Team A\": use a team name (a DNS-1123 label)",
       "job list"},
      {"ListNamespacesAndAll",
       {"job", "list", "-A", "-n", "a"},
       "-A/--all-namespaces and -n/--namespace exclude each other: give one",
       "job list"},
      {"ListArgument", {"job", "list", "train"}, "unexpected argument \"train\"", "job list"},
      {"DescribeWithoutName", {"job", "describe"}, "missing NAME", "job describe"},
      {"DescribeAllNamespaces",
       {"job", "describe", "train", "-A"},
       "this command acts in one namespace: give -n NS",
       "job describe"},
      {"PriorityWithoutClass", {"job", "priority", "train"}, "missing NAME CLASS", "job priority"},
      {"PriorityClass",
       {"job", "priority", "train", "High"},
       "invalid priority class \"High\"" + dns_subdomain,
       "job priority"},
      {"SuspendTwoNames",
       {"job", "suspend", "a", "b"},
       "too many arguments: \"b\" (the command takes NAME)",
       "job suspend"},
      {"ResumeWithoutName", {"job", "resume"}, "missing NAME", "job resume"},
      {"DeleteWithoutName", {"job", "delete"}, "missing NAME", "job delete"},
      {"WhyWithoutName", {"job", "why"}, "missing NAME", "job why"},
      {"WhyOutput",
       {"job", "why", "train", "-o", "wide"},
       "this command does not print -o wide: use table, json, yaml",
       "job why"},
      {"JobWithoutCommand",
       {"job"},
       "a command is needed: submit, list, describe, why, priority, suspend, resume, delete",
       "job"},
      {"JobUnknownCommand",
       {"job", "sumbit"},
       "unknown command \"sumbit\" for \"taskgov job\"; did you mean \"submit\"?",
       "job"},
      {"TopWithoutCommand", {"top"}, "a command is needed: teams", "top"},
      {"TopTeamsArgument", {"top", "teams", "a"}, "unexpected argument \"a\"", "top teams"},
      {"ConsoleService",
       {"top", "teams", "--console-service", "taskgov-console:9091"},
       "invalid --console-service \"taskgov-console:9091\": use [http:|https:]NAMESPACE/NAME:PORT, "
       "such as "
       "https:taskgov-system/taskgov-console:9091",
       "top teams"},
      {"ConsoleServicePort",
       {"top", "teams", "--console-service", "ns/svc:99999"},
       "invalid --console-service \"ns/svc:99999\": use [http:|https:]NAMESPACE/NAME:PORT, such as "
       "https:taskgov-system/taskgov-console:9091",
       "top teams"},
      {"ConsoleUrl",
       {"top", "teams", "--console-url", "127.0.0.1:9091"},
       "invalid --console-url \"127.0.0.1:9091\": use https://HOST:PORT or http://HOST:PORT, such "
       "as https://127.0.0.1:9091",
       "top teams"},
      {"ConsoleUrlAndService",
       {"top", "teams", "--console-url", "http://127.0.0.1:9091", "--console-service", "a/b:1"},
       "--console-service and --console-url exclude each other: give one",
       "top teams"},
  };
}

class UsageTest : public ::testing::TestWithParam<UsageCase> {};

TEST_P(UsageTest, ExactMessageAndExitCode2WithoutContactingTheApi) {
  const UsageCase& c = GetParam();
  std::ostringstream out, err;
  bool connected = false;
  Environment env;
  env.out = &out;
  env.err = &err;
  env.connect = [&](const GlobalOptions&) -> common::Result<std::unique_ptr<ConfigMapStore>> {
    connected = true;
    return common::Error{"the test's API"};
  };
  env.kube =
      [&](const GlobalOptions&,
          const std::string&) -> common::Result<std::unique_ptr<scheduler::kube::KubeClient>> {
    connected = true;
    return common::Error{"the test's API"};
  };
  EXPECT_EQ(RunTaskgov(c.args, env), kExitUsage);
  EXPECT_EQ(err.str(), "error: " + c.message + "\nSee 'taskgov" +
                           (c.help_path.empty() ? "" : " " + c.help_path) +
                           " --help' for usage.\n");
  EXPECT_EQ(out.str(), "");
  EXPECT_FALSE(connected);
}

INSTANTIATE_TEST_SUITE_P(Cli, UsageTest, ::testing::ValuesIn(Cases()),
                         [](const auto& info) { return info.param.name; });
INSTANTIATE_TEST_SUITE_P(Jobs, UsageTest, ::testing::ValuesIn(JobCases()),
                         [](const auto& info) { return info.param.name; });

TEST(UsageTest, TheKubectlPluginNamesItselfKubectlTaskgov) {
  std::ostringstream out, err;
  Environment env;
  env.out = &out;
  env.err = &err;
  env.program = "kubectl taskgov";
  EXPECT_EQ(RunTaskgov({"quota", "list", "-o", "xml"}, env), kExitUsage);
  EXPECT_EQ(err.str(),
            "error: invalid output format \"xml\": use table, wide, json, yaml or name\n"
            "See 'kubectl taskgov quota list --help' for usage.\n");
}

}  // namespace
}  // namespace taskgov::cli
