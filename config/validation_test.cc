// Every kind of validation error names the file, the path inside the document and the reason;
// every error of a file is reported.

#include <gtest/gtest.h>

#include "config/loader.h"
#include "config/test_util.h"

namespace taskgov::config {
namespace {

using testing::Dump;
using testing::HasDiagnostic;
using testing::Load;
using testing::LoadOne;

const char kHead[] = "apiVersion: taskgov.io/v1\nkind: TaskGovernancePolicy\n";

struct Case {
  std::string name;
  std::vector<std::pair<std::string, std::string>> files;
  std::string file;  // where the error is
  std::string path;  // exact path ("" = any)
  std::string text;  // part of the message
};

std::string Policy(const std::string& body) { return std::string(kHead) + body; }

TEST(Validation, EveryKindOfError) {
  const std::vector<Case> cases = {
      {"invalid YAML with line",
       {{"p.yaml", Policy("teams: [\n  {name: a\n")}},
       "p.yaml",
       "",
       "invalid YAML"},
      {"document is not a map", {{"p.yaml", "- a\n- b\n"}}, "p.yaml", "", "must be a map"},
      {"unrecognisable document", {{"p.yaml", "teams: []\n"}}, "p.yaml", "", "cannot tell"},
      {"unknown native kind",
       {{"p.yaml", "apiVersion: taskgov.io/v1\nkind: Teams\n"}},
       "p.yaml",
       "kind",
       "unknown kind"},
      {"unknown field",
       {{"p.yaml", Policy("teams:\n  - name: a\n    computee: []\n")}},
       "p.yaml",
       "teams[0].computee",
       "unknown field"},
      {"duplicate key",
       {{"p.yaml", Policy("podsWithoutTeam: Refuse\npodsWithoutTeam: Refuse\n")}},
       "p.yaml",
       "podsWithoutTeam",
       "duplicate key"},
      {"wrong type: list expected",
       {{"p.yaml", Policy("teams: {name: a}\n")}},
       "p.yaml",
       "teams",
       "must be a list"},
      {"wrong type: number expected",
       {{"p.yaml", Policy("teams:\n  - name: a\n    fairShareWeight: high\n")}},
       "p.yaml",
       "teams[0].fairShareWeight",
       "non-negative number"},
      {"wrong enum",
       {{"p.yaml", Policy("idleComputeAllocation: Fair\n")}},
       "p.yaml",
       "idleComputeAllocation",
       "must be one of FairShare, FirstComeFirstServe"},
      {"negative count in the third team",
       {{"p.yaml", Policy("defaultCohort: c\nteams:\n"
                          "  - {name: a}\n  - {name: b}\n"
                          "  - name: c\n    compute:\n"
                          "      - {instanceType: ml.g5.xlarge, accelerators: -1}\n")}},
       "p.yaml",
       "teams[2].compute[0].accelerators",
       "between 0 and"},
      {"negative quantity",
       {{"p.yaml", Policy("teams:\n  - name: a\n    resources:\n"
                          "      - {flavor: f, name: cpu, nominalQuota: \"-4\"}\n")}},
       "p.yaml",
       "teams[0].resources[0].nominalQuota",
       "invalid quantity '-4'"},
      {"unparsable quantity",
       {{"p.yaml", Policy("teams:\n  - name: a\n    resources:\n"
                          "      - {flavor: f, name: memory, nominalQuota: 12 GB}\n")}},
       "p.yaml",
       "teams[0].resources[0].nominalQuota",
       "invalid quantity '12 GB'"},
      {"limits on a team with no cohort",
       {{"p.yaml", Policy("teams:\n  - name: a\n    resources:\n"
                          "      - {flavor: f, name: cpu, nominalQuota: 4, borrowingLimit: 2}\n")}},
       "p.yaml",
       "teams[0].resources[0]",
       "has no cohort"},
      {"lending limit with DontLend",
       {{"p.yaml", Policy("teams:\n  - name: a\n    cohort: c\n    sharing: {strategy: DontLend}\n"
                          "    resources:\n      - {flavor: f, name: cpu, nominalQuota: 4, "
                          "lendingLimit: 2}\n")}},
       "p.yaml",
       "teams[0].resources[0]",
       "DontLend"},
      {"borrowing limit with Lend",
       {{"p.yaml", Policy("teams:\n  - name: a\n    cohort: c\n    sharing: {strategy: Lend}\n"
                          "    resources:\n      - {flavor: f, name: cpu, nominalQuota: 4, "
                          "borrowingLimit: 2}\n")}},
       "p.yaml",
       "teams[0].resources[0]",
       "does not borrow"},
      {"duplicate teams across files",
       {{"a.yaml", Policy("teams: [{name: x}]\n")},
        {"b.yaml", "apiVersion: taskgov.io/v1\nkind: Team\nname: x\n"}},
       "b.yaml",
       "",
       "team 'x' is defined twice (first in a.yaml at teams[0]"},
      {"duplicate teams across dialects",
       {{"a.yaml", Policy("teams: [{name: x}]\n")},
        {"b.json", R"({"ComputeQuotaConfig": {"ComputeQuotaResources": []},
                       "ComputeQuotaTarget": {"TeamName": "x"}})"}},
       "b.json",
       "",
       "defined twice"},
      {"namespace claimed by two teams",
       {{"p.yaml", Policy("teams:\n  - {name: a, namespaces: [shared]}\n"
                          "  - {name: b, namespaces: [shared]}\n")}},
       "p.yaml",
       "teams[1].namespaces",
       "namespace 'shared' is claimed by team 'b' and by team 'a'"},
      {"a default namespace claimed explicitly by another team",
       {{"p.yaml", Policy("teams:\n  - {name: a}\n  - {name: b, namespaces: [hyperpod-ns-a]}\n")}},
       "p.yaml",
       "teams[1].namespaces",
       "claimed"},
      {"priority weight out of range",
       {{"p.yaml", Policy("priorityClasses: [{name: x, weight: 101}]\n")}},
       "p.yaml",
       "priorityClasses[0].weight",
       "between 0 and 100"},
      {"duplicate priority class",
       {{"p.yaml", Policy("priorityClasses: [{name: x, weight: 1}, {name: x, weight: 2}]\n")}},
       "p.yaml",
       "priorityClasses[1]",
       "defined twice"},
      {"instance type neither in the catalogue nor explicit",
       {{"p.yaml",
         Policy("teams:\n  - name: a\n    compute: [{instanceType: ml.q9.huge, count: 1}]\n")}},
       "p.yaml",
       "teams[0].compute[0]",
       "not in the catalogue"},
      {"instance type override without sizes",
       {{"p.yaml", Policy("instanceTypes: [{name: ml.q9.huge, accelerators: 2}]\n")}},
       "p.yaml",
       "instanceTypes[0]",
       "give vCpu and memoryInGiB"},
      {"same flavor twice in a team's compute",
       {{"p.yaml", Policy("teams:\n  - name: a\n    compute:\n"
                          "      - {instanceType: ml.g5.xlarge, count: 1}\n"
                          "      - {instanceType: ml.g5.xlarge, count: 2}\n")}},
       "p.yaml",
       "teams[0].compute[1]",
       "appears twice"},
      {"flavor defined twice",
       {{"p.yaml", Policy("flavors:\n  - {name: f, instanceType: ml.g5.xlarge}\n"
                          "  - {name: f, instanceType: ml.g5.xlarge}\n")}},
       "p.yaml",
       "flavors[1]",
       "defined twice"},
      {"second policy document",
       {{"a.yaml", Policy("")}, {"b.yaml", Policy("")}},
       "b.yaml",
       "",
       "a second TaskGovernancePolicy"},
      {"invalid team name",
       {{"p.yaml", Policy("teams: [{name: Team_A}]\n")}},
       "p.yaml",
       "teams[0].name",
       "DNS label"},
      {"default namespace too long",
       {{"p.yaml", Policy("teams: [{name: " + std::string(60, 'a') + "}]\n")}},
       "p.yaml",
       "teams[0]",
       "longer than 63"},
      {"lending limit above nominal",
       {{"p.yaml", Policy("teams:\n  - name: a\n    cohort: c\n    resources:\n"
                          "      - {flavor: f, name: cpu, nominalQuota: 1, lendingLimit: 2}\n")}},
       "p.yaml",
       "teams[0].resources[0]",
       "exceeds the nominal quota"},
      {"cyclic cohorts (Volcano parents)",
       {{"q.yaml", R"(apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: a}
spec: {parent: b}
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: b}
spec: {parent: a}
)"}},
       "q.yaml",
       "",
       "cohorts form a cycle"},
  };
  for (const Case& c : cases) {
    LoadResult r = Load(c.files);
    EXPECT_FALSE(r.ok()) << c.name;
    EXPECT_EQ(r.policy, nullptr) << c.name;
    EXPECT_TRUE(HasDiagnostic(r, Severity::kError, c.file, c.path, c.text)) << c.name << "\n"
                                                                            << Dump(r);
  }
}

TEST(Validation, ReportsEveryErrorOfAFile) {
  LoadResult r = LoadOne("p.yaml", Policy(R"(priorityClasses: [{name: x, weight: 500}]
idleComputeAllocation: Sometimes
teams:
  - name: a
    fairShareWeight: -1
    compute: [{instanceType: ml.g5.xlarge, count: many}]
  - name: b
    colour: blue
)"));
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.error_count(), 5u) << Dump(r);
  for (const char* path :
       {"priorityClasses[0].weight", "idleComputeAllocation", "teams[0].fairShareWeight",
        "teams[0].compute[0].count", "teams[1].colour"}) {
    EXPECT_TRUE(HasDiagnostic(r, Severity::kError, "p.yaml", path, "")) << path << Dump(r);
  }
}

// An instance type missing from the catalogue is reported together with the document's other
// errors, even when they make the line's amounts or the team's name unusable.
TEST(Validation, UnknownInstanceTypeIsReportedWithTheOtherErrors) {
  const char kUnknown[] = "is not in the catalogue";
  LoadResult native = LoadOne("t.yaml", R"(apiVersion: taskgov.io/v1
kind: Team
name: Bad_Name
compute:
  - {instanceType: ml.nonexistent.xlarge, accelerators: 2}
  - {instanceType: ml.unknown.xlarge, accelerators: -2}
)");
  EXPECT_EQ(native.error_count(), 4u) << Dump(native);
  EXPECT_TRUE(HasDiagnostic(native, Severity::kError, "t.yaml", "name", "DNS label"))
      << Dump(native);
  EXPECT_TRUE(HasDiagnostic(native, Severity::kError, "t.yaml", "compute[0]", kUnknown))
      << Dump(native);
  EXPECT_TRUE(HasDiagnostic(native, Severity::kError, "t.yaml", "compute[1].accelerators", ""))
      << Dump(native);
  EXPECT_TRUE(HasDiagnostic(native, Severity::kError, "t.yaml", "compute[1]", kUnknown))
      << Dump(native);

  LoadResult hyperpod = LoadOne("q.json", R"({
  "Name": "q", "ClusterArn": "arn:aws:sagemaker:us-west-2:1:cluster/x",
  "ComputeQuotaTarget": {"TeamName": "Bad_Name"},
  "ComputeQuotaConfig": {"ComputeQuotaResources": [
    {"InstanceType": "ml.nonexistent.xlarge", "Count": -1}]}
})");
  EXPECT_TRUE(
      HasDiagnostic(hyperpod, Severity::kError, "q.json", "ComputeQuotaTarget.TeamName", ""))
      << Dump(hyperpod);
  EXPECT_TRUE(HasDiagnostic(hyperpod, Severity::kError, "q.json",
                            "ComputeQuotaConfig.ComputeQuotaResources[0].Count", ""))
      << Dump(hyperpod);
  EXPECT_TRUE(HasDiagnostic(hyperpod, Severity::kError, "q.json",
                            "ComputeQuotaConfig.ComputeQuotaResources[0]", kUnknown))
      << Dump(hyperpod);
}

// Names longer than Kubernetes allows (DNS-1123 label: 63, subdomain: 253) are refused with the
// length and the limit, in every dialect and for every kind of name the configuration gives.
TEST(Validation, NamesLongerThanKubernetesAllowsAreRefused) {
  const std::string label64(64, 'a');
  const std::string sub254 = std::string(125, 'a') + "." + std::string(128, 'b');
  const std::string team63(63, 't');
  struct NameCase {
    std::string name;
    std::string file;
    std::string content;
    std::string path;
    std::string limit;
  };
  const std::string team = "apiVersion: taskgov.io/v1\nkind: Team\n";
  const std::vector<NameCase> cases = {
      {"native team name", "t.yaml", team + "name: " + label64 + "\n", "name", "at most 63"},
      {"native namespace", "t.yaml", team + "name: a\nnamespaces: [" + label64 + "]\n",
       "namespaces[0]", "at most 63"},
      {"native cohort", "t.yaml", team + "name: a\ncohort: " + sub254 + "\n", "cohort",
       "at most 253"},
      {"native compute flavor", "t.yaml",
       team + "name: a\ncompute: [{instanceType: ml.g5.xlarge, count: 1, flavor: " + sub254 +
           "}]\n",
       "compute[0].flavor", "at most 253"},
      {"native flavor", "p.yaml",
       Policy("flavors: [{name: " + sub254 + ", matchAllNodes: true}]\n"), "flavors[0].name",
       "at most 253"},
      {"native priority class", "p.yaml",
       Policy("priorityClasses: [{name: " + sub254 + ", weight: 1}]\n"), "priorityClasses[0].name",
       "at most 253"},
      {"HyperPod team name", "q.json",
       R"({"ComputeQuotaTarget": {"TeamName": ")" + label64 +
           R"("}, "ComputeQuotaConfig": {"ComputeQuotaResources": []}})",
       "ComputeQuotaTarget.TeamName", "at most 63"},
      {"Kueue ClusterQueue", "k.yaml",
       "apiVersion: kueue.x-k8s.io/v1beta1\nkind: ClusterQueue\nmetadata: {name: " + sub254 +
           "}\nspec: {}\n",
       "metadata.name", "at most 253"},
      {"Kueue LocalQueue namespace", "k.yaml",
       "apiVersion: kueue.x-k8s.io/v1beta1\nkind: LocalQueue\nmetadata: {name: q, namespace: " +
           label64 + "}\nspec: {clusterQueue: a}\n",
       "metadata.namespace", "at most 63"},
      {"Volcano queue", "v.yaml",
       "apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {name: " + sub254 +
           "}\nspec: {weight: 1}\n",
       "metadata.name", "at most 253"},
  };
  for (const NameCase& c : cases) {
    LoadResult r = LoadOne(c.file, c.content);
    EXPECT_FALSE(r.ok()) << c.name;
    EXPECT_TRUE(HasDiagnostic(r, Severity::kError, c.file, c.path,
                              "characters long: Kubernetes allows " + c.limit))
        << c.name << "\n"
        << Dump(r);
  }
  // At the limit is fine.
  LoadResult ok = LoadOne("t.yaml", team + "name: " + team63 + "\ncompute: []\n");
  EXPECT_FALSE(HasDiagnostic(ok, Severity::kError, "t.yaml", "name", "")) << Dump(ok);
}

TEST(Validation, ErrorsCarryLineAndDocumentIndex) {
  LoadResult r = LoadOne("t.yaml", R"(apiVersion: taskgov.io/v1
kind: Team
name: a
---
apiVersion: taskgov.io/v1
kind: Team
name: b
compute:
  - instanceType: ml.g5.xlarge
    accelerators: -3
)");
  ASSERT_FALSE(r.ok());
  const std::string first = r.FirstError();
  EXPECT_EQ(first.rfind("t.yaml: document 2: compute[0].accelerators (line 10, column 19): ", 0),
            0u)
      << first;
}

TEST(Validation, WarningsDoNotRefuse) {
  LoadResult r = Load({{"dump.yaml", "apiVersion: v1\nkind: Namespace\nmetadata: {name: x}\n"},
                       {"team.yaml", "apiVersion: taskgov.io/v1\nkind: Team\nname: a\n"}});
  EXPECT_TRUE(r.ok()) << Dump(r);
  EXPECT_EQ(r.warning_count(), 1u);
}

}  // namespace
}  // namespace taskgov::config
