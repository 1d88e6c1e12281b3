// No bypass: the ValidatingAdmissionPolicy of deploy/base/admission.yaml selects, through its
// matchConstraints, exactly the namespaces team-namespaces labels for each team of the sample
// policies — the teams and namespaces taskgov-extender --check-config reports — and no other
// namespace; its validation is one comparison of spec.schedulerName with the governed name, and
// its message names the team and the fix. team-namespaces refuses bad input with a clear error.
//
// Arguments: $(rootpath :team-namespaces) $(rootpath //extender:taskgov-extender).

#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "scheduler/common/testing/process.h"

namespace taskgov::deploy {
namespace {

std::string g_tool;
std::string g_extender;

constexpr char kAdmission[] = "deploy/base/admission.yaml";

// Whether a Kubernetes LabelSelector (matchLabels, matchExpressions) selects `labels`.
bool Selects(const YAML::Node& selector, const std::map<std::string, std::string>& labels) {
  if (selector["matchLabels"]) {
    for (const auto& kv : selector["matchLabels"]) {
      const auto it = labels.find(kv.first.as<std::string>());
      if (it == labels.end() || it->second != kv.second.as<std::string>()) return false;
    }
  }
  if (selector["matchExpressions"]) {
    for (const YAML::Node& e : selector["matchExpressions"]) {
      const std::string key = e["key"].as<std::string>(), op = e["operator"].as<std::string>();
      std::set<std::string> values;
      if (e["values"]) {
        for (const YAML::Node& v : e["values"]) values.insert(v.as<std::string>());
      }
      const auto it = labels.find(key);
      const bool has = it != labels.end();
      if (op == "Exists" && !has) return false;
      if (op == "DoesNotExist" && has) return false;
      if (op == "In" && (!has || !values.count(it->second))) return false;
      if (op == "NotIn" && has && values.count(it->second)) return false;
      if (op != "Exists" && op != "DoesNotExist" && op != "In" && op != "NotIn") {
        ADD_FAILURE() << "unknown selector operator " << op;
        return false;
      }
    }
  }
  return true;
}

// A namespace as team-namespaces prints it: name → labels.
using Namespaces = std::map<std::string, std::map<std::string, std::string>>;

Namespaces Parse(const std::string& text) {
  Namespaces out;
  for (const YAML::Node& doc : YAML::LoadAll(text)) {
    if (doc.IsNull()) continue;
    EXPECT_EQ(doc["apiVersion"].as<std::string>(""), "v1");
    EXPECT_EQ(doc["kind"].as<std::string>(""), "Namespace");
    auto& labels = out[doc["metadata"]["name"].as<std::string>("")];
    for (const auto& kv : doc["metadata"]["labels"]) {
      labels[kv.first.as<std::string>()] = kv.second.as<std::string>();
    }
  }
  return out;
}

// namespace → team, from the teams table of `taskgov-extender --check-config=DIR` (columns
// TEAM ... NAMESPACES, namespaces joined by commas, "-" for none).
std::map<std::string, std::string> CheckConfigNamespaces(const std::string& dir) {
  const common::testing::ToolRun run =
      common::testing::RunToCompletion({g_extender, "--check-config=" + dir});
  EXPECT_EQ(run.exit_code, 0) << run.output;
  std::map<std::string, std::string> out;
  std::stringstream lines(run.output);
  bool in_teams = false;
  size_t ns_column = 0;
  for (std::string line; std::getline(lines, line);) {
    std::vector<std::string> cols;
    std::stringstream words(line);
    for (std::string w; words >> w;) cols.push_back(w);
    if (line == "teams") {
      in_teams = true;
      continue;
    }
    if (!in_teams) continue;
    if (cols.empty()) break;
    if (cols[0] == "TEAM") {
      for (size_t i = 0; i < cols.size(); ++i) {
        if (cols[i] == "NAMESPACES") ns_column = i;
      }
      EXPECT_GT(ns_column, 0u) << "no NAMESPACES column: " << line;
      continue;
    }
    if (ns_column == 0 || cols.size() <= ns_column || cols[ns_column] == "-") continue;
    std::stringstream list(cols[ns_column]);
    for (std::string ns; std::getline(list, ns, ',');) out[ns] = cols[0];
  }
  EXPECT_TRUE(in_teams) << "no teams table in --check-config's output:\n" << run.output;
  return out;
}

// The policy's directory: `source` itself, or a ConfigMap's data written out as files.
std::string PolicyDir(const std::string& source) {
  if (std::filesystem::is_directory(source)) return source;
  const std::filesystem::path dir = std::filesystem::path(::testing::TempDir()) / "policy-of" /
                                    std::filesystem::path(source).filename();
  std::filesystem::create_directories(dir);
  for (const auto& entry : YAML::LoadFile(source)["data"]) {
    std::ofstream(dir / entry.first.as<std::string>()) << entry.second.as<std::string>();
  }
  return dir.string();
}

class AdmissionTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    for (const YAML::Node& doc : YAML::LoadAllFromFile(kAdmission)) {
      const std::string kind = doc["kind"].as<std::string>("");
      const std::string name = doc["metadata"]["name"].as<std::string>("");
      if (kind == "ValidatingAdmissionPolicy") policies_[name] = doc;
      if (kind == "ValidatingAdmissionPolicyBinding") bindings_[name] = doc;
      if (kind == "ConfigMap") params_ = doc;
    }
    policy_ = policies_["taskgov-governed-scheduler"];
    binding_ = bindings_["taskgov-governed-scheduler"];
    ASSERT_TRUE(policy_ && binding_) << kAdmission << " lacks the policy or its binding";
    selector_ = policy_["spec"]["matchConstraints"]["namespaceSelector"];
    ASSERT_TRUE(selector_) << "the policy selects no namespaces";
  }
  YAML::Node policy_, binding_, selector_, params_;
  std::map<std::string, YAML::Node> policies_, bindings_;
};

TEST_P(AdmissionTest, SelectsEveryTeamNamespaceOfThePolicyAndNoOther) {
  const common::testing::ToolRun run = common::testing::RunToCompletion({g_tool, GetParam()});
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const Namespaces generated = Parse(run.output);
  const std::map<std::string, std::string> teams = CheckConfigNamespaces(PolicyDir(GetParam()));
  ASSERT_FALSE(teams.empty()) << GetParam() << ": no team owns a namespace";
  std::set<std::string> names;
  for (const auto& [ns, labels] : generated) names.insert(ns);
  std::set<std::string> expected;
  for (const auto& [ns, team] : teams) expected.insert(ns);
  EXPECT_EQ(names, expected) << "team-namespaces and --check-config disagree on the namespaces";
  for (const auto& [ns, team] : teams) {
    if (!generated.count(ns)) continue;
    const auto& labels = generated.at(ns);
    EXPECT_TRUE(Selects(selector_, labels)) << ns << " of team " << team << " is not governed";
    ASSERT_TRUE(labels.count("taskgov.io/team")) << ns;
    EXPECT_EQ(labels.at("taskgov.io/team"), team) << ns << ": the message would name another team";
  }
  // Namespaces no team owns, as the cluster labels them.
  for (const std::string ns : {"default", "kube-system", "kube-public", "taskgov-system",
                               "monitoring", "hyperpod-ns-unknown"}) {
    EXPECT_FALSE(Selects(selector_, {{"kubernetes.io/metadata.name", ns}}))
        << ns << " is governed although no team owns it";
  }
}

TEST_F(AdmissionTest, RefusesAnotherSchedulerWithOneComparisonAndAnActionableMessage) {
  const YAML::Node rules = policy_["spec"]["matchConstraints"]["resourceRules"];
  ASSERT_TRUE(rules.IsSequence() && rules.size() == 1);
  EXPECT_EQ(rules[0]["resources"][0].as<std::string>(""), "pods");
  EXPECT_EQ(rules[0]["operations"][0].as<std::string>(""), "CREATE");
  EXPECT_EQ(policy_["spec"]["failurePolicy"].as<std::string>(""), "Fail");
  const YAML::Node validations = policy_["spec"]["validations"];
  ASSERT_TRUE(validations.IsSequence() && validations.size() >= 1);
  EXPECT_EQ(validations[0]["expression"].as<std::string>(""),
            "object.spec.schedulerName == params.data.schedulerName");
  const std::string message = validations[0]["messageExpression"].as<std::string>("");
  for (const char* part :
       {"namespaceObject.metadata.labels['taskgov.io/team']", "params.data.schedulerName",
        "object.spec.schedulerName", "add schedulerName: "}) {
    EXPECT_NE(message.find(part), std::string::npos) << "the message lacks " << part;
  }
  EXPECT_EQ(binding_["spec"]["policyName"].as<std::string>(""),
            policy_["metadata"]["name"].as<std::string>(""));
  EXPECT_EQ(binding_["spec"]["validationActions"][0].as<std::string>(""), "Deny");
  EXPECT_EQ(binding_["spec"]["paramRef"]["name"].as<std::string>(""), "taskgov-admission");
  EXPECT_EQ(binding_["spec"]["paramRef"]["parameterNotFoundAction"].as<std::string>(""), "Deny");
}

// Issue 36, item 11: the governed pods' other doors. Binding a pod of a governed namespace
// (pods/binding) is refused but for the governed binders, and an in-place resize (pods/resize)
// may not change a running pod's requests; both in the same namespaces as the scheduler check,
// with the same parameter and an actionable message.
TEST_F(AdmissionTest, BindingsAndResizesOfGovernedPodsAreCovered) {
  ASSERT_TRUE(policies_.count("taskgov-governed-pods")) << "no policy for bindings and resizes";
  const YAML::Node pods = policies_["taskgov-governed-pods"];
  EXPECT_EQ(pods["spec"]["failurePolicy"].as<std::string>(""), "Fail");
  auto emit = [](const YAML::Node& n) {
    YAML::Emitter out;
    out << n;
    return std::string(out.c_str());
  };
  EXPECT_EQ(emit(pods["spec"]["matchConstraints"]["namespaceSelector"]), emit(selector_))
      << "bindings and resizes are checked in other namespaces than pod creation";
  std::map<std::string, std::string> covered;  // resource → operation
  for (const YAML::Node& r : pods["spec"]["matchConstraints"]["resourceRules"]) {
    covered[r["resources"][0].as<std::string>("")] = r["operations"][0].as<std::string>("");
  }
  EXPECT_EQ(covered["pods/binding"], "CREATE");
  EXPECT_EQ(covered["pods/resize"], "UPDATE");
  std::string expressions, messages;
  for (const YAML::Node& v : pods["spec"]["validations"]) {
    expressions += v["expression"].as<std::string>("") + "\n";
    messages += v["messageExpression"].as<std::string>("") + "\n";
  }
  for (const char* part : {"request.userInfo.username in variables.binders",
                           "c.resources.requests == o.resources.requests"}) {
    EXPECT_NE(expressions.find(part), std::string::npos) << "no validation checks " << part;
  }
  EXPECT_NE(messages.find("may not change in place"), std::string::npos);
  EXPECT_NE(messages.find("its pods are bound by the governed scheduler"), std::string::npos);
  EXPECT_EQ(bindings_["taskgov-governed-pods"]["spec"]["paramRef"]["name"].as<std::string>(""),
            "taskgov-admission");
  // The binders: taskgov's service account, which binds (the extender's bind verb).
  EXPECT_NE(params_["data"]["binders"].as<std::string>("").find(
                "system:serviceaccount:taskgov-system:taskgov"),
            std::string::npos);
}

// Issue 36, item 11: the namespace label governance rests on (taskgov.io/team) may be set,
// changed or removed — on create or update of any namespace — only by the administrators' groups
// of the parameter; a namespace editor removing it would take the namespace out of governance,
// and one setting it would charge that team.
TEST_F(AdmissionTest, TheTeamLabelIsGuarded) {
  ASSERT_TRUE(policies_.count("taskgov-team-label")) << "nothing guards the label";
  const YAML::Node guard = policies_["taskgov-team-label"];
  EXPECT_EQ(guard["spec"]["failurePolicy"].as<std::string>(""), "Fail");
  EXPECT_FALSE(guard["spec"]["matchConstraints"]["namespaceSelector"])
      << "a namespace selector on the label would exempt namespaces without it";
  const YAML::Node rule = guard["spec"]["matchConstraints"]["resourceRules"][0];
  EXPECT_EQ(rule["resources"][0].as<std::string>(""), "namespaces");
  std::set<std::string> operations;
  for (const YAML::Node& op : rule["operations"]) operations.insert(op.as<std::string>(""));
  EXPECT_EQ(operations, (std::set<std::string>{"CREATE", "UPDATE"}));
  std::string variables;
  for (const YAML::Node& v : guard["spec"]["variables"]) {
    variables += v["expression"].as<std::string>("") + "\n";
  }
  EXPECT_NE(variables.find("object.metadata.labels['taskgov.io/team']"), std::string::npos);
  EXPECT_NE(variables.find("oldObject.metadata.labels['taskgov.io/team']"), std::string::npos);
  EXPECT_NE(variables.find("params.data.teamLabelAdmins"), std::string::npos);
  EXPECT_EQ(guard["spec"]["validations"][0]["expression"].as<std::string>(""),
            "variables.label == variables.oldLabel || variables.admin");
  EXPECT_EQ(params_["data"]["teamLabelAdmins"].as<std::string>(""), "system:masters");
  EXPECT_EQ(bindings_["taskgov-team-label"]["spec"]["validationActions"][0].as<std::string>(""),
            "Deny");
}

// taskgov's own `patch` on pods (--requeue-lapsed-refusals) changes one annotation: the policy
// binds every pod update its service account makes, in any namespace, and refuses a change of
// the spec, labels, owners, finalizers or any other annotation (no cluster here evaluates its
// CEL: the expressions are checked to compare each of those).
TEST_F(AdmissionTest, TaskgovsOwnPodPatchesChangeOnlyTheRequeueAnnotation) {
  ASSERT_TRUE(policies_.count("taskgov-requeue-only")) << "taskgov's patch on pods is unguarded";
  const YAML::Node only = policies_["taskgov-requeue-only"];
  EXPECT_EQ(only["spec"]["failurePolicy"].as<std::string>(""), "Fail");
  EXPECT_FALSE(only["spec"]["matchConstraints"]["namespaceSelector"]);
  const YAML::Node rule = only["spec"]["matchConstraints"]["resourceRules"][0];
  EXPECT_EQ(rule["resources"][0].as<std::string>(""), "pods");
  EXPECT_EQ(rule["operations"][0].as<std::string>(""), "UPDATE");
  EXPECT_EQ(only["spec"]["matchConditions"][0]["expression"].as<std::string>(""),
            "request.userInfo.username == 'system:serviceaccount:taskgov-system:taskgov'");
  std::string validations;
  for (const YAML::Node& v : only["spec"]["validations"]) {
    validations += v["expression"].as<std::string>("") + "\n";
  }
  for (const char* compared :
       {"object.spec == oldObject.spec", "object.metadata.labels == oldObject.metadata.labels",
        "object.metadata.ownerReferences == oldObject.metadata.ownerReferences",
        "object.metadata.finalizers == oldObject.metadata.finalizers",
        "oldObject.metadata.annotations[k] == object.metadata.annotations[k]",
        "k in object.metadata.annotations", "k == 'taskgov.io/requeued-at'"}) {
    EXPECT_NE(validations.find(compared), std::string::npos) << compared;
  }
  EXPECT_EQ(bindings_["taskgov-requeue-only"]["spec"]["validationActions"][0].as<std::string>(""),
            "Deny");
}

// The optional mutating policy (deploy/admission-mutating) selects the same pods of the same
// namespaces, reads the same parameter, and sets spec.schedulerName from it.
TEST_F(AdmissionTest, MutatingOptionSetsTheGovernedSchedulerOnTheSamePods) {
  YAML::Node mutating, binding;
  for (const YAML::Node& doc : YAML::LoadAllFromFile("deploy/admission-mutating/mutating.yaml")) {
    if (doc["kind"].as<std::string>("") == "MutatingAdmissionPolicy") mutating = doc;
    if (doc["kind"].as<std::string>("") == "MutatingAdmissionPolicyBinding") binding = doc;
  }
  ASSERT_TRUE(mutating && binding);
  auto emit = [](const YAML::Node& n) {
    YAML::Emitter out;
    out << n;
    return std::string(out.c_str());
  };
  EXPECT_EQ(emit(mutating["spec"]["matchConstraints"]), emit(policy_["spec"]["matchConstraints"]))
      << "the mutating and the validating policy select different pods";
  EXPECT_EQ(emit(mutating["spec"]["paramKind"]), emit(policy_["spec"]["paramKind"]));
  EXPECT_EQ(emit(binding["spec"]["paramRef"]), emit(binding_["spec"]["paramRef"]));
  EXPECT_EQ(binding["spec"]["policyName"].as<std::string>(""),
            mutating["metadata"]["name"].as<std::string>(""));
  EXPECT_EQ(mutating["spec"]["failurePolicy"].as<std::string>(""), "Fail");
  const YAML::Node m = mutating["spec"]["mutations"][0];
  EXPECT_EQ(m["patchType"].as<std::string>(""), "ApplyConfiguration");
  EXPECT_EQ(m["applyConfiguration"]["expression"].as<std::string>(""),
            "Object{spec: Object.spec{schedulerName: params.data.schedulerName}}");
}

TEST_F(AdmissionTest, TeamNamespacesRefusesBadInputClearly) {
  const common::testing::ToolRun none = common::testing::RunToCompletion({g_tool});
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_NE(none.output.find("no POLICY given"), std::string::npos) << none.output;
  const common::testing::ToolRun missing =
      common::testing::RunToCompletion({g_tool, "/no/such/policy"});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.output.find("/no/such/policy: no such file or directory"), std::string::npos)
      << missing.output;
  const std::string not_cm = ::testing::TempDir() + "/not-a-configmap.yaml";
  std::ofstream(not_cm) << "apiVersion: v1\nkind: Secret\n";
  const common::testing::ToolRun secret = common::testing::RunToCompletion({g_tool, not_cm});
  EXPECT_EQ(secret.exit_code, 2);
  EXPECT_NE(secret.output.find("not a ConfigMap"), std::string::npos) << secret.output;
  const std::string invalid = ::testing::TempDir() + "/invalid-policy.yaml";
  std::ofstream(invalid) << "apiVersion: v1\nkind: ConfigMap\ndata:\n  p.yaml: |\n"
                            "    apiVersion: taskgov.io/v1\n    kind: TaskGovernancePolicy\n"
                            "    teams: [{name: a, compute: [{instanceType: x, count: -1}]}]\n";
  const common::testing::ToolRun bad = common::testing::RunToCompletion({g_tool, invalid});
  EXPECT_EQ(bad.exit_code, 1) << bad.output;
  EXPECT_NE(bad.output.find("the policy is invalid: "), std::string::npos) << bad.output;
}

INSTANTIATE_TEST_SUITE_P(SamplePolicies, AdmissionTest,
                         ::testing::Values("deploy/base/policy.yaml", "config/samples/native",
                                           "config/samples/hyperpod", "config/testdata/native",
                                           "config/testdata/equivalence/hyperpod",
                                           "config/testdata/equivalence/native"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string name;
                           for (char c : info.param) name += std::isalnum(c) ? c : '_';
                           return name;
                         });

}  // namespace
}  // namespace taskgov::deploy

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (argc < 3) {
    fprintf(stderr, "usage: %s <team-namespaces> <taskgov-extender>\n", argv[0]);
    return 2;
  }
  taskgov::deploy::g_tool = taskgov::common::testing::RunfilePath(argv[1]);
  taskgov::deploy::g_extender = taskgov::common::testing::RunfilePath(argv[2]);
  return RUN_ALL_TESTS();
}
