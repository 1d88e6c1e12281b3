#include "scheduler/sim/scheduler_config.h"
#include "scheduler/common/testing/files.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace taskgov::scheduler::sim {
namespace {

using Type = ScoringStrategy::Type;
using Resource = ScoringStrategy::Resource;

constexpr char kOverlay[] = "deploy/overlays/second-scheduler/scheduler-config.yaml";

using common::testing::ReadFile;

// A bare configuration: `top` (top-level fields), the governed profile's `profile` fields and
// the extender's `extender` fields are spliced in, each line indented for its place.
std::string Config(const std::string& top, const std::string& profile = "",
                   const std::string& extender =
                       "    prioritizeVerb: prioritize\n"
                       "    weight: 1\n") {
  return "apiVersion: kubescheduler.config.k8s.io/v1\n"
         "kind: KubeSchedulerConfiguration\n" +
         top +
         "profiles:\n"
         "  - schedulerName: taskgov\n" +
         profile +
         "extenders:\n"
         "  - urlPrefix: http://127.0.0.1:8888\n"
         "    filterVerb: filter\n"
         "    preemptVerb: preempt\n"
         "    bindVerb: bind\n" +
         extender;
}

// NodeResourcesFit's arguments in the governed profile.
std::string FitArgs(const std::string& args) {
  return "    pluginConfig:\n"
         "      - name: NodeResourcesFit\n"
         "        args:\n" +
         args;
}

KubeScheduler::Options Apply(const std::string& text) {
  auto options = ApplySchedulerConfig(text, KubeScheduler::Options{});
  EXPECT_TRUE(options.ok()) << options.error().message << "\n" << text;
  return options.ok() ? *options : KubeScheduler::Options{};
}

// The shipped overlay: bin packing, accelerators at weight 3, and the 1 s / 1 s backoffs.
TEST(SchedulerConfigTest, TheShippedOverlayPlaysMostAllocatedWithItsWeightsAndBackoffs) {
  const std::string text = ReadFile(kOverlay);
  ASSERT_FALSE(text.empty()) << kOverlay;
  const KubeScheduler::Options o = Apply(text);
  EXPECT_EQ(o.scoring.type, Type::kMostAllocated);
  ASSERT_GE(o.scoring.resources.size(), 4u);
  EXPECT_EQ(o.scoring.resources[0], (Resource{"cpu", 1}));
  EXPECT_EQ(o.scoring.resources[1], (Resource{"memory", 1}));
  for (size_t i = 2; i < o.scoring.resources.size(); ++i) {
    EXPECT_EQ(o.scoring.resources[i].weight, 3) << o.scoring.resources[i].name;
  }
  auto listed = [&](const std::string& name) {
    for (const Resource& r : o.scoring.resources) {
      if (r.name == name) return true;
    }
    return false;
  };
  for (const char* accelerator : {"nvidia.com/gpu", "aws.amazon.com/neuron",
                                  "aws.amazon.com/neurondevice", "nvidia.com/mig-1g.10gb"}) {
    EXPECT_TRUE(listed(accelerator)) << accelerator;
  }
  EXPECT_EQ(o.initial_backoff_ms, 1'000);
  EXPECT_EQ(o.max_backoff_ms, 1'000);
  EXPECT_EQ(o.extender_weight, 1);
  EXPECT_TRUE(o.preempt_verb);
  EXPECT_EQ(o.scheduler_name, "taskgov");
}

TEST(SchedulerConfigTest, ABareConfigurationPlaysItsStrategy) {
  const KubeScheduler::Options o =
      Apply(Config("podInitialBackoffSeconds: 2\npodMaxBackoffSeconds: 30\n",
                   FitArgs("          scoringStrategy:\n"
                           "            type: LeastAllocated\n"
                           "            resources:\n"
                           "              - {name: nvidia.com/gpu, weight: 5}\n"
                           "              - {name: cpu}\n"
                           "              - {name: memory, weight: 0}\n"),
                   "    prioritizeVerb: prioritize\n    weight: 4\n"));
  EXPECT_EQ(o.scoring, (ScoringStrategy{Type::kLeastAllocated,
                                        {{"nvidia.com/gpu", 5}, {"cpu", 1}, {"memory", 1}}}));
  EXPECT_EQ(o.initial_backoff_ms, 2'000);
  EXPECT_EQ(o.max_backoff_ms, 30'000);
  EXPECT_EQ(o.extender_weight, 4);
  EXPECT_EQ(DescribeScheduling(o),
            "LeastAllocated (nvidia.com/gpu 5, cpu 1, memory 1), backoff 2s to 30s, extender "
            "weight 4");
}

// What a configuration leaves out is upstream's default.
TEST(SchedulerConfigTest, AbsentFieldsAreUpstreamsDefaults) {
  const KubeScheduler::Options defaults;
  for (const std::string& profile :
       {std::string(), FitArgs("          scoringStrategy: null\n"),
        FitArgs("          apiVersion: kubescheduler.config.k8s.io/v1\n"
                "          kind: NodeResourcesFitArgs\n"),
        FitArgs("          scoringStrategy:\n            type: LeastAllocated\n")}) {
    const KubeScheduler::Options o = Apply(Config("", profile));
    EXPECT_EQ(o.scoring, ScoringStrategy{}) << profile;
    EXPECT_EQ(o.scoring, (ScoringStrategy{Type::kLeastAllocated, {{"cpu", 1}, {"memory", 1}}}));
    EXPECT_EQ(o.initial_backoff_ms, 1'000);
    EXPECT_EQ(o.max_backoff_ms, 10'000);
    EXPECT_EQ(o.extender_weight, 1);
  }
  // MostAllocated without resources: cpu and memory, weight 1.
  EXPECT_EQ(
      Apply(Config("", FitArgs("          scoringStrategy: {type: MostAllocated}\n"))).scoring,
      (ScoringStrategy{Type::kMostAllocated, {{"cpu", 1}, {"memory", 1}}}));
  // Without a prioritizeVerb the extender is not asked to score; without a preemptVerb, not to
  // trim victims.
  std::string no_verbs = Config("", "", "");
  no_verbs.replace(no_verbs.find("    preemptVerb: preempt\n"), 25, "");
  const KubeScheduler::Options o = Apply(no_verbs);
  EXPECT_EQ(o.extender_weight, 0);
  EXPECT_FALSE(o.preempt_verb);
  EXPECT_TRUE(defaults.preempt_verb);
  // Fields that change nothing played are read past; other profiles too.
  const KubeScheduler::Options read_past = Apply(
      "apiVersion: kubescheduler.config.k8s.io/v1\n"
      "kind: KubeSchedulerConfiguration\n"
      "leaderElection: {leaderElect: true}\n"
      "clientConnection: {kubeconfig: /etc/k}\n"
      "parallelism: 16\n"
      "percentageOfNodesToScore: 0\n"
      "profiles:\n"
      "  - schedulerName: default-scheduler\n"
      "    plugins: {score: {disabled: [{name: '*'}]}}\n"
      "  - schedulerName: taskgov\n"
      "    percentageOfNodesToScore: 100\n"
      "extenders:\n"
      "  - {urlPrefix: 'https://x', filterVerb: f, prioritizeVerb: p, bindVerb: b, weight: 2,\n"
      "     enableHTTPS: true, tlsConfig: {insecure: true}, httpTimeout: 5s,\n"
      "     nodeCacheCapable: false, ignorable: true, managedResources: []}\n");
  EXPECT_EQ(read_past.scoring, ScoringStrategy{});
  EXPECT_EQ(read_past.extender_weight, 2);
}

TEST(SchedulerConfigTest, AConfigMapHoldingOneConfigurationIsUnwrapped) {
  std::string value = Config("podMaxBackoffSeconds: 3\n",
                             FitArgs("          scoringStrategy: {type: MostAllocated}\n"));
  std::string indented;
  for (size_t at = 0; at < value.size();) {
    const size_t end = value.find('\n', at);
    indented += "    " + value.substr(at, end - at + 1);
    at = end + 1;
  }
  const KubeScheduler::Options o = Apply(
      "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: s, namespace: n}\ndata:\n"
      "  config.yaml: |\n" +
      indented);
  EXPECT_EQ(o.scoring.type, Type::kMostAllocated);
  EXPECT_EQ(o.max_backoff_ms, 3'000);
}

struct ErrorCase {
  std::string name;
  std::string text;
  std::string message;  // the whole message, or its beginning when it ends in "…"
};

std::vector<ErrorCase> ErrorCases() {
  const std::string strategy = "profiles[0].pluginConfig[0].args.scoringStrategy";
  const std::string plays = "the simulator plays LeastAllocated and MostAllocated";
  auto with_strategy = [](const std::string& body) {
    return Config("", FitArgs("          scoringStrategy:\n" + body));
  };
  std::string two_extenders = Config("");
  two_extenders += "  - urlPrefix: http://other\n    filterVerb: f\n    bindVerb: b\n";
  std::string no_extenders = Config("");
  no_extenders.resize(no_extenders.find("extenders:"));
  std::string no_bind = Config("");
  no_bind.replace(no_bind.find("    bindVerb: bind\n"), 19, "");
  return {
      {"RequestedToCapacityRatio",
       with_strategy("            type: RequestedToCapacityRatio\n"
                     "            requestedToCapacityRatio: {shape: [{utilization: 0, score: "
                     "10}]}\n"),
       strategy + ".type: RequestedToCapacityRatio is not played: " + plays},
      {"UnknownType", with_strategy("            type: Spread\n"),
       strategy + ".type: unknown type \"Spread\": " + plays +
           " (kube-scheduler also knows RequestedToCapacityRatio)"},
      {"MissingType", with_strategy("            resources: [{name: cpu}]\n"),
       strategy + ".type: required: " + plays +
           " (kube-scheduler also knows RequestedToCapacityRatio)"},
      {"ShapeWithAnotherType",
       with_strategy("            type: MostAllocated\n"
                     "            requestedToCapacityRatio: {shape: []}\n"),
       strategy + ".requestedToCapacityRatio: not played: " + plays},
      {"WeightAbove100",
       with_strategy("            type: MostAllocated\n"
                     "            resources: [{name: cpu, weight: 1}, {name: x.io/y, weight: "
                     "101}]\n"),
       strategy + ".resources[1].weight: must be an integer from 0 to 100, got 101"},
      {"WeightQuoted",
       with_strategy("            type: MostAllocated\n"
                     "            resources: [{name: cpu, weight: \"3\"}]\n"),
       strategy + ".resources[0].weight: must be an integer from 0 to 100, got \"3\""},
      {"ResourceWithoutName",
       with_strategy("            type: MostAllocated\n            resources: [{weight: 3}]\n"),
       strategy + ".resources[0].name: required"},
      {"UnknownStrategyField",
       with_strategy("            type: MostAllocated\n            resource: []\n"),
       strategy + ".resource: unknown field"},
      {"IgnoredResources", Config("", FitArgs("          ignoredResources: [x.io/y]\n")),
       "profiles[0].pluginConfig[0].args.ignoredResources: not played: the simulator's fit "
       "checks every resource"},
      {"AnotherPluginsArgs",
       Config("", "    pluginConfig:\n      - name: DefaultPreemption\n        args: {}\n"),
       "profiles[0].pluginConfig[0].name: \"DefaultPreemption\" is not played: the simulator "
       "plays NodeResourcesFit's arguments only"},
      {"FitTwice",
       Config("",
              "    pluginConfig:\n      - name: NodeResourcesFit\n      - name: "
              "NodeResourcesFit\n"),
       "profiles[0].pluginConfig[1].name: NodeResourcesFit is configured twice"},
      {"Plugins", Config("", "    plugins: {score: {enabled: [{name: NodeResourcesFit}]}}\n"),
       "profiles[0].plugins: not played: the simulator plays kube-scheduler's default plugins"},
      {"PercentageOfNodesToScore", Config("percentageOfNodesToScore: 50\n"),
       "percentageOfNodesToScore: not played: the simulator scores every feasible node (0 or "
       "100)"},
      {"UnknownProfileField", Config("", "    schedulerNames: [a]\n"),
       "profiles[0].schedulerNames: unknown field"},
      {"NoSuchProfile",
       "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
       "profiles: [{schedulerName: default-scheduler}, {schedulerName: batch}]\n"
       "extenders: [{filterVerb: f, bindVerb: b}]\n",
       "profiles: no profile has schedulerName \"taskgov\", the scheduler taskgov governs "
       "(found: default-scheduler, batch)"},
      {"LoneProfileIsTheDefaultScheduler",
       "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
       "profiles: [{}]\nextenders: [{filterVerb: f, bindVerb: b}]\n",
       "profiles: no profile has schedulerName \"taskgov\", the scheduler taskgov governs "
       "(found: default-scheduler)"},
      {"NoProfiles",
       "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n",
       "profiles: no profile has schedulerName \"taskgov\", the scheduler taskgov governs"},
      {"ProfileTwice",
       "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
       "profiles: [{schedulerName: taskgov}, {schedulerName: taskgov}]\n",
       "profiles[1].schedulerName: \"taskgov\" is given twice"},
      {"InitialBackoffZero", Config("podInitialBackoffSeconds: 0\n"),
       "podInitialBackoffSeconds: must be an integer from 1 to 1000000000, got 0"},
      {"MaxBelowInitial", Config("podInitialBackoffSeconds: 5\npodMaxBackoffSeconds: 2\n"),
       "podMaxBackoffSeconds: podMaxBackoffSeconds (2) must be at least podInitialBackoffSeconds "
       "(5)"},
      {"InitialAboveTheDefaultMax", Config("podInitialBackoffSeconds: 20\n"),
       "podInitialBackoffSeconds: podMaxBackoffSeconds (10) must be at least "
       "podInitialBackoffSeconds (20)"},
      {"BackoffNotANumber", Config("podMaxBackoffSeconds: 2s\n"),
       "podMaxBackoffSeconds: must be an integer from 1 to 1000000000, got 2s"},
      {"ExtenderWeightZero", Config("", "", "    prioritizeVerb: prioritize\n    weight: 0\n"),
       "extenders[0].weight: must be positive with a prioritizeVerb (kube-scheduler refuses 0)"},
      {"ExtenderWeightAbsent", Config("", "", "    prioritizeVerb: prioritize\n"),
       "extenders[0].weight: must be positive with a prioritizeVerb (kube-scheduler refuses 0)"},
      {"TwoExtenders", two_extenders, "extenders: 2 extenders: the simulator plays one, taskgov"},
      {"NoExtenders", no_extenders, "extenders: 0 extenders: the simulator plays one, taskgov"},
      {"NoBindVerb", no_bind,
       "extenders[0].bindVerb: required: the simulator binds through taskgov (kube-scheduler's "
       "own binding, with taskgov confirming from the watched pods, is not played)"},
      {"ManagedResources",
       Config("", "",
              "    prioritizeVerb: p\n    weight: 1\n    managedResources: [{name: "
              "nvidia.com/gpu}]\n"),
       "extenders[0].managedResources: not played: the simulator sends every pod to taskgov"},
      {"UnknownTopField", Config("podMaxBackofSeconds: 2\n"), "podMaxBackofSeconds: unknown field"},
      {"DuplicateKey", Config("podMaxBackoffSeconds: 2\npodMaxBackoffSeconds: 3\n"),
       "podMaxBackoffSeconds: given twice"},
      {"OldApiVersion",
       "apiVersion: kubescheduler.config.k8s.io/v1beta3\nkind: KubeSchedulerConfiguration\n",
       "apiVersion: must be kubescheduler.config.k8s.io/v1, got "
       "\"kubescheduler.config.k8s.io/v1beta3\""},
      {"AnotherKind", "apiVersion: apps/v1\nkind: Deployment\n",
       "kind: must be KubeSchedulerConfiguration, or a ConfigMap holding one; got "
       "\"Deployment\""},
      {"NotAMap", "- a\n- b\n",
       "kind: must be KubeSchedulerConfiguration, or a ConfigMap holding one; got none"},
      {"MalformedYaml", "apiVersion: [v1\nkind: x\n", "not valid YAML (line …"},
      {"TwoDocuments", Config("") + "---\n" + Config(""),
       "2 YAML documents: give one KubeSchedulerConfiguration, or one ConfigMap holding it"},
      {"Empty", "",
       "0 YAML documents: give one KubeSchedulerConfiguration, or one ConfigMap "
       "holding it"},
      {"ConfigMapTwoKeys", "apiVersion: v1\nkind: ConfigMap\ndata: {a: x, b: y}\n",
       "data: must hold one key, the KubeSchedulerConfiguration, got 2 keys"},
      {"ConfigMapErrorInside",
       "apiVersion: v1\nkind: ConfigMap\ndata:\n  scheduler-config.yaml: |\n"
       "    apiVersion: kubescheduler.config.k8s.io/v1\n"
       "    kind: KubeSchedulerConfiguration\n"
       "    profiles: [{schedulerName: taskgov, pluginConfig: [{name: NodeResourcesFit, args: "
       "{scoringStrategy: {type: RequestedToCapacityRatio}}}]}]\n",
       "data[\"scheduler-config.yaml\"].profiles[0].pluginConfig[0].args.scoringStrategy.type: "
       "RequestedToCapacityRatio is not played: " +
           plays},
      {"ConfigMapMalformedInside",
       "apiVersion: v1\nkind: ConfigMap\ndata:\n  scheduler-config.yaml: \"a: [\"\n",
       "data[\"scheduler-config.yaml\"]: not valid YAML (line …"},
  };
}

class SchedulerConfigErrorTest : public ::testing::TestWithParam<ErrorCase> {};

TEST_P(SchedulerConfigErrorTest, NamesTheFieldPath) {
  const ErrorCase& c = GetParam();
  auto options = ApplySchedulerConfig(c.text, KubeScheduler::Options{});
  ASSERT_FALSE(options.ok()) << c.text;
  const std::string ellipsis = "…";
  if (c.message.ends_with(ellipsis)) {
    const std::string prefix = c.message.substr(0, c.message.size() - ellipsis.size());
    EXPECT_EQ(options.error().message.substr(0, prefix.size()), prefix) << options.error().message;
  } else {
    EXPECT_EQ(options.error().message, c.message);
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, SchedulerConfigErrorTest, ::testing::ValuesIn(ErrorCases()),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace taskgov::scheduler::sim
