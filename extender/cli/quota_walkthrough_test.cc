// The HyperPod quota walkthrough against the fake API server, as an admin runs it: three teams'
// allocations by count, by accelerators and by vCPU next to a hand-written HyperPod document;
// describe shows the derived values of DESIGN §3.4 and where they came from; the borrow limit is
// updated; hand-written keys survive byte for byte; what is refused writes nothing.

#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include "config/loader.h"
#include "extender/cli/testing/cli_fixture.h"

namespace taskgov::cli {
namespace {

using testing::CliFixture;
using testing::CliRun;
using testing::HyperPodQuotaJson;

const std::string kHandKey = "hyperpod-ml.json";

// One quota row of `describe -o json`: {"value", "source"} of `field`.
struct Cell {
  std::string value;
  std::string source;
};

class Described {
 public:
  explicit Described(const std::string& json) {
    doc_.Parse(json.c_str());
    EXPECT_TRUE(doc_.IsObject()) << json;
  }
  Cell Field(const char* name) const {
    if (!doc_.IsObject() || !doc_.HasMember(name)) return {};
    return CellOf(doc_[name]);
  }
  Cell Quota(const std::string& flavor, const std::string& resource, const char* field) const {
    if (!doc_.IsObject() || !doc_.HasMember("quota") || !doc_["quota"].IsArray()) return {};
    for (const auto& row : doc_["quota"].GetArray()) {
      if (row["flavor"].GetString() == flavor && row["resource"].GetString() == resource) {
        return CellOf(row[field]);
      }
    }
    ADD_FAILURE() << "no quota row " << flavor << " " << resource;
    return {};
  }
  bool Managed() const { return doc_.IsObject() && doc_["managedByCli"].GetBool(); }

 private:
  static Cell CellOf(const rapidjson::Value& v) {
    if (!v.IsObject() || !v.HasMember("value") || !v["value"].IsString()) return {};
    return {v["value"].GetString(), v["source"].GetString()};
  }
  rapidjson::Document doc_;
};

class QuotaWalkthroughTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(cli_.Start());
    cli_.PutConfigMap({{kHandKey, hand_}});
  }

  CliRun Ok(std::vector<std::string> args) {
    CliRun run = cli_.Run(args);
    EXPECT_EQ(run.code, 0) << run.err;
    return run;
  }
  Described Describe(const std::string& team) {
    return Described(Ok({"quota", "describe", team, "-o", "json"}).out);
  }
  size_t Writes() const {
    size_t n = 0;
    for (const std::string& r : cli_.ConfigMapRequests()) {
      if (!r.starts_with("GET ")) ++n;
    }
    return n;
  }

  CliFixture cli_;
  const std::string hand_ = HyperPodQuotaJson("ml", "ml.p5.48xlarge", 1);
};

TEST_F(QuotaWalkthroughTest, ThreeTeamsByCountAcceleratorsAndVcpuThenTheBorrowLimit) {
  CliRun a = Ok({"quota", "create", "team-a", "--instance-type", "ml.p5.48xlarge", "--count", "2"});
  EXPECT_NE(a.out.find("+  - {instanceType: ml.p5.48xlarge, count: 2}\n"), std::string::npos)
      << a.out;
  EXPECT_TRUE(a.out.ends_with("quota/team-a created\n")) << a.out;
  Ok({"quota", "create", "team-b", "--instance-type", "ml.g5.12xlarge", "--accelerators", "2",
      "--fair-share-weight", "10"});
  Ok({"quota", "create", "team-c", "--instance-type", "ml.m5.2xlarge", "--vcpu", "16", "--strategy",
      "Lend", "-n", "research", "-n", "research-batch"});

  // By count: n × the instance's accelerators, vCPU and memory; LendAndBorrow 50% by default.
  Described da = Describe("team-a");
  EXPECT_TRUE(da.Managed());
  Cell gpu = da.Quota("ml.p5.48xlarge", "nvidia.com/gpu", "nominal");
  EXPECT_EQ(gpu.value, "16");
  EXPECT_EQ(gpu.source,
            "count 2 × 8 accelerators per ml.p5.48xlarge [taskgov-cli.yaml: compute[0]]");
  Cell cpu = da.Quota("ml.p5.48xlarge", "cpu", "nominal");
  EXPECT_EQ(cpu.value, "384");
  EXPECT_EQ(cpu.source, "count 2 × 192 vCPU per ml.p5.48xlarge [taskgov-cli.yaml: compute[0]]");
  EXPECT_EQ(da.Quota("ml.p5.48xlarge", "memory", "nominal").value, "4Ti");
  Cell borrow = da.Quota("ml.p5.48xlarge", "nvidia.com/gpu", "borrowingLimit");
  EXPECT_EQ(borrow.value, "8");
  EXPECT_EQ(borrow.source, "⌊16 × 50%⌋: LendAndBorrow with borrow limit 50%");
  EXPECT_EQ(da.Field("borrowLimit").value, "50%");
  EXPECT_EQ(da.Field("borrowLimit").source, "default (HyperPod: 50%)");
  EXPECT_EQ(da.Quota("ml.p5.48xlarge", "nvidia.com/gpu", "lendingLimit").value, "unlimited");

  // By accelerators: vCPU and memory scale by accelerators / accelerators per instance.
  Described db = Describe("team-b");
  EXPECT_EQ(db.Quota("ml.g5.12xlarge", "nvidia.com/gpu", "nominal").value, "2");
  Cell b_cpu = db.Quota("ml.g5.12xlarge", "cpu", "nominal");
  EXPECT_EQ(b_cpu.value, "24");
  EXPECT_EQ(b_cpu.source,
            "48 vCPU per ml.g5.12xlarge × 2/4 accelerators (§3.4 ratio default, rounded up) "
            "[taskgov-cli.yaml (document 2): compute[0]]");
  EXPECT_EQ(db.Quota("ml.g5.12xlarge", "memory", "nominal").value, "96Gi");
  EXPECT_EQ(db.Field("fairShareWeight").value, "10");
  EXPECT_EQ(db.Field("fairShareWeight").source, "taskgov-cli.yaml");

  // By vCPU: memory scales by vCPU / vCPU per instance, no accelerators; Lend borrows nothing.
  Described dc = Describe("team-c");
  Cell c_mem = dc.Quota("ml.m5.2xlarge", "memory", "nominal");
  EXPECT_EQ(c_mem.value, "64Gi");
  EXPECT_EQ(c_mem.source,
            "32 GiB per ml.m5.2xlarge × 16 vCPU/8 vCPU (§3.4 ratio default, rounded up) "
            "[taskgov-cli.yaml (document 3): compute[0]]");
  EXPECT_EQ(dc.Quota("ml.m5.2xlarge", "cpu", "nominal").source,
            "16 vCPU given [taskgov-cli.yaml (document 3): compute[0]]");
  EXPECT_EQ(dc.Quota("ml.m5.2xlarge", "cpu", "borrowingLimit").source, "Lend borrows nothing");
  EXPECT_EQ(dc.Field("namespaces").value, "research, research-batch");

  // The hand-written HyperPod team, described with its own document's values.
  Described ml = Describe("ml");
  EXPECT_FALSE(ml.Managed());
  EXPECT_EQ(ml.Field("strategy").value, "Lend");
  EXPECT_EQ(ml.Field("fairShareWeight").value, "20");
  EXPECT_EQ(ml.Field("preemptTeamTasks").value, "Never");

  // The borrow limit is updated; the derived limit follows.
  CliRun update = Ok({"quota", "update", "team-a", "--borrow-limit", "100"});
  EXPECT_NE(update.out.find("+  borrowLimit: 100\n"), std::string::npos) << update.out;
  EXPECT_TRUE(update.out.ends_with("quota/team-a configured\n"));
  Described after = Describe("team-a");
  EXPECT_EQ(after.Quota("ml.p5.48xlarge", "nvidia.com/gpu", "borrowingLimit").value, "16");
  EXPECT_EQ(after.Quota("ml.p5.48xlarge", "nvidia.com/gpu", "nominal").value, "16");
  EXPECT_EQ(Ok({"quota", "update", "team-a", "--borrow-limit", "100"}).out,
            "quota/team-a unchanged\n");

  EXPECT_EQ(Ok({"quota", "list", "-o", "name"}).out,
            "quota/ml\nquota/team-a\nquota/team-b\nquota/team-c\n");
  EXPECT_EQ(Ok({"quota", "list", "-n", "research-batch", "-o", "name"}).out, "quota/team-c\n");
  Ok({"quota", "delete", "team-c"});
  EXPECT_EQ(Ok({"quota", "list", "-o", "name"}).out, "quota/ml\nquota/team-a\nquota/team-b\n");

  // The hand-written key is byte for byte what it was; the extender's loader takes the whole set.
  testing::ConfigData data = cli_.Data();
  EXPECT_EQ(data[kHandKey], hand_);
  std::vector<config::SourceFile> files;
  for (const auto& [k, v] : data) files.push_back({k, v});
  config::LoadResult loaded = config::LoadSources(files);
  ASSERT_TRUE(loaded.ok()) << loaded.FirstError();
  const scheduler::model::Team* team_a = loaded.policy->FindTeam("team-a");
  ASSERT_NE(team_a, nullptr);
  EXPECT_EQ(team_a->cohort, loaded.policy->FindTeam("ml")->cohort);
  ASSERT_EQ(team_a->flavors.size(), 1u);
  EXPECT_EQ(loaded.policy->FindTeam("team-c"), nullptr);
}

TEST_F(QuotaWalkthroughTest, HandWrittenTeamsAreNotChangedAndSayWhereToEdit) {
  const std::string where =
      "quota/ml is defined in the hand-written key hyperpod-ml.json (a HyperPod document); the "
      "CLI changes only the teams it wrote (key taskgov-cli.yaml) and leaves hand-written keys as "
      "they are: 'taskgov quota take-over ml' moves it into the CLI's key (it shows the change "
      "and asks), or edit hyperpod-ml.json\n";
  CliRun update = cli_.Run({"quota", "update", "ml", "--borrow-limit", "10"});
  EXPECT_EQ(update.code, 1);
  EXPECT_EQ(update.err, "error: " + where);
  CliRun del = cli_.Run({"quota", "delete", "ml"});
  EXPECT_EQ(del.code, 1);
  EXPECT_EQ(del.err, "error: " + where);
  CliRun create =
      cli_.Run({"quota", "create", "ml", "--instance-type", "ml.p5.48xlarge", "--count", "1"});
  EXPECT_EQ(create.code, 1);
  EXPECT_EQ(create.err,
            "error: quota/ml already exists (in key hyperpod-ml.json): use 'taskgov quota update "
            "ml' to change it\n");
  CliRun missing = cli_.Run({"quota", "describe", "nobody"});
  EXPECT_EQ(missing.code, 1);
  EXPECT_EQ(missing.err,
            "error: quota/nobody not found in taskgov-system/taskgov-config: 'taskgov quota list' "
            "shows the teams; 'taskgov quota create nobody' makes it\n");
  EXPECT_EQ(Writes(), 0u);
  EXPECT_EQ(cli_.Data()[kHandKey], hand_);
}

TEST_F(QuotaWalkthroughTest, AChangeTheExtenderWouldRefuseIsNotWritten) {
  // The namespace belongs to the hand-written team.
  CliRun claimed = cli_.Run({"quota", "create", "x", "--instance-type", "ml.p5.48xlarge", "--count",
                             "1", "-n", "hyperpod-ns-ml"});
  EXPECT_EQ(claimed.code, 1);
  EXPECT_TRUE(claimed.err.starts_with(
      "error: the change would leave taskgov-system/taskgov-config invalid, so nothing was written "
      "(taskgov config validate shows the same checks):\n  "))
      << claimed.err;
  EXPECT_NE(claimed.err.find("hyperpod-ns-ml"), std::string::npos) << claimed.err;
  // An instance type outside the catalogue without explicit vCPU and memory.
  CliRun unknown =
      cli_.Run({"quota", "create", "y", "--instance-type", "ml.nope.xlarge", "--count", "1"});
  EXPECT_EQ(unknown.code, 1);
  EXPECT_NE(unknown.err.find("taskgov-cli.yaml: compute[0]"), std::string::npos) << unknown.err;
  EXPECT_NE(unknown.err.find("'ml.nope.xlarge' is not in the catalogue"), std::string::npos)
      << unknown.err;
  // A borrow limit on a team whose strategy borrows nothing.
  Ok({"quota", "create", "z", "--instance-type", "ml.p5.48xlarge", "--count", "1", "--strategy",
      "DontLend"});
  const size_t writes = Writes();
  CliRun borrow = cli_.Run({"quota", "update", "z", "--borrow-limit", "20"});
  EXPECT_EQ(borrow.code, 1);
  EXPECT_EQ(borrow.err,
            "error: --borrow-limit applies only to the strategy LendAndBorrow, and quota/z has the "
            "strategy DontLend (which borrows nothing): add --strategy LendAndBorrow\n");
  EXPECT_EQ(Writes(), writes);
}

TEST_F(QuotaWalkthroughTest, DryRunsWriteNothing) {
  const std::string before = cli_.ResourceVersion();
  CliRun client = Ok({"quota", "create", "team-a", "--instance-type", "ml.p5.48xlarge", "--count",
                      "2", "--dry-run"});
  EXPECT_NE(client.out.find("+name: team-a\n"), std::string::npos) << client.out;
  EXPECT_TRUE(client.out.ends_with("quota/team-a created (dry run)\n"));
  EXPECT_EQ(Writes(), 0u);

  CliRun server = Ok({"quota", "create", "team-a", "--instance-type", "ml.p5.48xlarge", "--count",
                      "2", "--dry-run=server"});
  EXPECT_TRUE(server.out.ends_with("quota/team-a created (server dry run)\n"));
  std::vector<std::string> requests = cli_.ConfigMapRequests();
  EXPECT_EQ(requests.back(),
            "PUT /api/v1/namespaces/taskgov-system/configmaps/taskgov-config?dryRun=All");
  EXPECT_EQ(cli_.ResourceVersion(), before);
  EXPECT_EQ(cli_.Data().count("taskgov-cli.yaml"), 0u);
  EXPECT_EQ(Ok({"quota", "list", "-o", "name"}).out, "quota/ml\n");
}

TEST_F(QuotaWalkthroughTest, PolicySetAndShow) {
  CliRun set = Ok({"policy", "set", "--task-prioritization", "FirstComeFirstServe",
                   "--priority-class", "inference=100", "--priority-class", "training=50"});
  EXPECT_TRUE(set.out.ends_with("policy/cluster configured\n")) << set.out;
  rapidjson::Document shown;
  shown.Parse(Ok({"policy", "show", "-o", "json"}).out.c_str());
  ASSERT_TRUE(shown.IsObject());
  EXPECT_STREQ(shown["taskPrioritization"]["value"].GetString(), "FirstComeFirstServe");
  EXPECT_STREQ(shown["taskPrioritization"]["source"].GetString(),
               "taskgov-cli.yaml: taskPrioritization");
  EXPECT_STREQ(shown["idleComputeAllocation"]["source"].GetString(), "default (FairShare)");
  ASSERT_EQ(shown["priorityClasses"].Size(), 2u);
  EXPECT_STREQ(shown["priorityClasses"][0]["name"].GetString(), "inference");
  EXPECT_EQ(shown["priorityClasses"][0]["weight"].GetInt(), 100);
  Ok({"policy", "set", "--clear-priority-classes"});
  shown.Parse(Ok({"policy", "show", "-o", "json"}).out.c_str());
  EXPECT_EQ(shown["priorityClasses"].Size(), 0u);
  EXPECT_EQ(cli_.Data()[kHandKey], hand_);
}

TEST_F(QuotaWalkthroughTest, APolicyWrittenByHandElsewhereIsReportedNotOverwritten) {
  const std::string policy =
      "# by hand\napiVersion: taskgov.io/v1\nkind: TaskGovernancePolicy\n"
      "idleComputeAllocation: FairShare   # keep\n";
  cli_.PutConfigMap({{kHandKey, hand_}, {"policy.yaml", policy}});
  CliRun set = cli_.Run({"policy", "set", "--idle-compute", "FirstComeFirstServe"});
  EXPECT_EQ(set.code, 1);
  EXPECT_NE(set.err.find("a second TaskGovernancePolicy (the first is in policy.yaml)"),
            std::string::npos)
      << set.err;
  EXPECT_EQ(cli_.Data()["policy.yaml"], policy);
  EXPECT_EQ(Writes(), 0u);
}

TEST_F(QuotaWalkthroughTest, AMissingConfigMapIsCreatedByTheFirstQuota) {
  ASSERT_TRUE(cli_.api().Delete("configmaps", "taskgov-system", "taskgov-config"));
  CliRun list = cli_.Run({"quota", "list"});
  EXPECT_EQ(list.code, 1);
  EXPECT_EQ(list.err,
            "error: configmap taskgov-system/taskgov-config not found: install taskgov "
            "(deploy/taskgov-config.yaml), or name the policy ConfigMap with --configmap and "
            "--configmap-namespace\n");
  Ok({"quota", "create", "team-a", "--instance-type", "ml.p5.48xlarge", "--count", "1"});
  EXPECT_EQ(cli_.ConfigMapRequests().back(), "POST /api/v1/namespaces/taskgov-system/configmaps");
  EXPECT_EQ(Ok({"quota", "list", "-o", "name"}).out, "quota/team-a\n");
}

TEST_F(QuotaWalkthroughTest, KubectlFlagsReachTheApi) {
  Ok({"quota", "list", "--request-timeout", "0"});  // kubectl's "no timeout"
  Ok({"quota", "list", "--as", "alice", "--request-timeout", "5s"});
  std::vector<scheduler::kube::testing::RecordedRequest> requests = cli_.api().requests();
  ASSERT_FALSE(requests.empty());
  EXPECT_EQ(requests.back().impersonate_user, "alice");
  // Another ConfigMap, in another namespace.
  CliRun other =
      cli_.Run({"quota", "list", "--configmap", "policy", "--configmap-namespace", "taskgov"});
  EXPECT_EQ(other.code, 1);
  EXPECT_TRUE(other.err.starts_with("error: configmap taskgov/policy not found")) << other.err;
  // A context the kubeconfig does not have.
  CliRun context = cli_.Run({"quota", "list", "--context", "prod"});
  EXPECT_EQ(context.code, 1);
  EXPECT_TRUE(
      context.err.starts_with("error: no usable Kubernetes configuration (use "
                              "--kubeconfig or --context, or set KUBECONFIG): "))
      << context.err;
}

TEST_F(QuotaWalkthroughTest, AnUnreachableApiServerSaysWhatToCheck) {
  cli_.api().Stop();
  CliRun run = cli_.Run({"quota", "list", "--request-timeout", "2s"});
  EXPECT_EQ(run.code, 1);
  EXPECT_TRUE(
      run.err.starts_with("error: reading taskgov-system/taskgov-config: GET "
                          "/api/v1/namespaces/taskgov-system/configmaps/taskgov-config: "))
      << run.err;
  EXPECT_NE(run.err.find("(check that the API server is reachable and that --kubeconfig / "
                         "--context name the right cluster)"),
            std::string::npos)
      << run.err;
}

}  // namespace
}  // namespace taskgov::cli

namespace taskgov::cli {
namespace {

TEST_F(QuotaWalkthroughTest, ABrokenHandWrittenKeyIsShownAndBlocksWrites) {
  cli_.PutConfigMap({{kHandKey, hand_},
                     {"kueue.yaml",
                      "apiVersion: kueue.x-k8s.io/v1beta1\n"
                      "kind: ClusterQueue\nspec: [\n"}});
  CliRun list = cli_.Run({"quota", "list", "-o", "name"});
  EXPECT_EQ(list.code, 0);
  EXPECT_EQ(list.out, "quota/ml\n");
  EXPECT_TRUE(
      list.err.starts_with("warning: the policy in taskgov-system/taskgov-config does not "
                           "load (1 error; the first: kueue.yaml"))
      << list.err;
  CliRun create =
      cli_.Run({"quota", "create", "a", "--instance-type", "ml.p5.48xlarge", "--count", "1"});
  EXPECT_EQ(create.code, 1);
  EXPECT_NE(create.err.find("\n  kueue.yaml"), std::string::npos) << create.err;
  EXPECT_EQ(Writes(), 0u);
}

TEST_F(QuotaWalkthroughTest, AHandEditedCliKeyIsReportedNotGuessedAt) {
  cli_.PutConfigMap({{kHandKey, hand_},
                     {"taskgov-cli.yaml",
                      "apiVersion: taskgov.io/v1\nkind: Team\nname: t\ncohort: hyperpod\n"
                      "resources:\n  - {flavor: f, name: nvidia.com/gpu, nominalQuota: 1}\n"}});
  CliRun update = cli_.Run({"quota", "update", "t", "--borrow-limit", "10"});
  EXPECT_EQ(update.code, 1);
  EXPECT_EQ(
      update.err,
      "error: the CLI's key taskgov-cli.yaml in taskgov-system/taskgov-config cannot be read: "
      "taskgov-cli.yaml: team t: resources, absoluteBorrowLimits and lendingLimits are not "
      "written by the CLI. Move hand-written documents to another key, or delete the key to "
      "start again\n");
  EXPECT_EQ(Writes(), 0u);
}

}  // namespace
}  // namespace taskgov::cli

namespace taskgov::cli {
namespace {

// A hand-written native team with an instance type the configuration describes and a MIG
// partition: describe derives from the configuration's catalogue, as the extender does.
TEST_F(QuotaWalkthroughTest, DescribeUsesTheConfigurationsInstanceTypesAndPartitions) {
  cli_.PutConfigMap({{"policy.yaml", R"(apiVersion: taskgov.io/v1
kind: TaskGovernancePolicy
instanceTypes:
  - {name: ml.g7e.2xlarge, acceleratorResource: nvidia.com/gpu, accelerators: 1, vCpu: 8, memoryInGiB: 64}
teams:
  - name: inference
    compute:
      - {instanceType: ml.g7e.2xlarge, count: 2}
      - {instanceType: ml.p4d.24xlarge, acceleratorPartition: {type: mig-1g.5gb, count: 14}}
)"}});
  Described d = Describe("inference");
  Cell g7e = d.Quota("ml.g7e.2xlarge", "cpu", "nominal");
  EXPECT_EQ(g7e.value, "16");
  EXPECT_EQ(g7e.source, "count 2 × 8 vCPU per ml.g7e.2xlarge [policy.yaml: teams[0].compute[0]]");
  Cell mig = d.Quota("ml.p4d.24xlarge", "nvidia.com/mig-1g.5gb", "nominal");
  EXPECT_EQ(mig.value, "14");
  EXPECT_EQ(mig.source, "14 nvidia.com/mig-1g.5gb given [policy.yaml: teams[0].compute[1]]");
  Cell cpu = d.Quota("ml.p4d.24xlarge", "cpu", "nominal");
  EXPECT_EQ(cpu.value, "24");
  EXPECT_EQ(cpu.source,
            "96 vCPU per ml.p4d.24xlarge × 14 mig-1g.5gb/(7 per accelerator × 8 accelerators) "
            "(§3.4 ratio default, rounded up) [policy.yaml: teams[0].compute[1]]");
  EXPECT_EQ(d.Quota("ml.p4d.24xlarge", "cpu", "borrowingLimit").source,
            "no cohort: the team neither lends nor borrows");
  EXPECT_EQ(d.Field("cohort").source,
            "the policy's defaultCohort (no cohort: the team neither lends nor borrows)");
}

}  // namespace
}  // namespace taskgov::cli
