#include "extender/admin_api.h"

#include <gtest/gtest.h>
#include <rapidjson/document.h>
#include <rapidjson/prettywriter.h>
#include <rapidjson/stringbuffer.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "extender/http_test_util.h"
#include "extender/testing/fake_access_reviewer.h"
#include "scheduler/common/testing/http_client.h"
#include "scheduler/decisions/admission.h"
#include "scheduler/model/gang.h"
#include "scheduler/model/job_control.h"
#include "scheduler/testing/builders.h"

namespace taskgov::extender {
namespace {

using scheduler::testing::NodeBuilder;
using scheduler::testing::PodBuilder;
using scheduler::testing::PolicyBuilder;

constexpr char kP5[] = "ml.p5.48xlarge";
constexpr char kGpu[] = "nvidia.com/gpu";
constexpr int64_t kNow = 1'780'000'000'000;  // 2026-05-28T20:26:40Z

// Two teams of cohort "research" on two 8-GPU p5 nodes: team-a runs 12 GPUs (4 borrowed from
// team-b, which runs nothing), team-b waits with a 2-pod Kueue gang and a lone pod.
class AdminApiTest : public ::testing::Test {
 protected:
  AdminApiTest()
      : clock_(kNow),
        book_(PolicyBuilder()
                  .Team("team-a", "research")
                  .Quota(kP5, kGpu, 8, /*borrowing_limit=*/8)
                  .Team("team-b", "research")
                  .Weight(2)
                  .Quota(kP5, kGpu, 8)
                  .PriorityClass("training", 50)
                  .Cohort("research")
                  .Build(),
              &clock_),
        cluster_(&book_, &clock_, scheduler::state::ClusterState::Options{}),
        admission_(&book_, &cluster_, nullptr, &clock_, {}),
        api_(FixtureSources()) {
    cluster_.SetPolicy(book_.ledger().policy());
    for (const char* node : {"p5-0", "p5-1"}) {
      cluster_.OnNodeUpsert(NodeBuilder(node).InstanceType(kP5).Allocatable(kGpu, "8"));
    }
    Run("a-0", "p5-0", 8, kNow - 3'600'000);
    Run("a-1", "p5-1", 4, kNow - 600'000);
    for (int i = 0; i < 2; ++i) {
      Wait(PodBuilder("b-train-" + std::to_string(i))
               .Label("kueue.x-k8s.io/pod-group-name", "train")
               .Annotation("kueue.x-k8s.io/pod-group-total-count", "2"),
           4, kNow - 120'000);
    }
    Wait(PodBuilder("b-solo").Label("kueue.x-k8s.io/priority-class", "training"), 4, kNow - 60'000);
    // kube-scheduler tried the gang's first member: refused, the pool has 4 GPUs left.
    scheduler::FilterArgs args;
    args.pod = *cluster_.FindPod("uid-b-train-0");
    args.node_names = {"p5-0", "p5-1"};
    EXPECT_TRUE(admission_.Filter(args).feasible.empty());
    // Two samples of the history, 30 s apart.
    history_.Sample(kNow - 30'000, api_.HistorySnapshot());
    history_.Sample(kNow, api_.HistorySnapshot());
    // Tasks of the last hour: a-batch waited 5 s, ran 50 minutes and succeeded; a-old waited
    // 15 s, ran 10 minutes and was taken back by team-b's reclaim.
    Ended("a-batch", scheduler::model::PodPhase::kSucceeded, kNow - 3'300'000, 5'000,
          kNow - 300'000, false);
    Ended("a-old", scheduler::model::PodPhase::kRunning, kNow - 1'200'000, 15'000, kNow - 600'000,
          true);
  }

  // A pod of team-a created `waited` before `bound`, bound then and ended at `ended` (evicted by
  // taskgov's reclaim when `evicted`), as the cluster state's lifecycle observer tells it.
  void Ended(const std::string& name, scheduler::model::PodPhase phase, int64_t bound,
             int64_t waited, int64_t ended, bool evicted) {
    scheduler::model::Pod pod =
        PodBuilder(name).Namespace("ns-team-a").Gpus(1).Created(bound - waited).Build();
    scheduler::state::ClusterState::PodLifecycle e;
    e.pod = &pod;
    e.team = scheduler::model::TeamNames().Intern("team-a");
    e.transition = scheduler::state::PodTransition::kBound;
    e.now_ms = bound;
    tasks_.OnLifecycle(e);
    if (evicted) {
      tasks_.NoteEvicted(pod.uid, ended - 1000);
      tasks_.NoteEvictionReason(pod.uid, "Reclaim");
    }
    pod.phase = phase;
    e.transition = scheduler::state::PodTransition::kEnded;
    e.bound_ms = bound;
    e.now_ms = ended;
    tasks_.OnLifecycle(e);
  }

  AdminApi::Sources FixtureSources() {
    AdminApi::Sources sources;
    sources.book = &book_;
    sources.cluster = &cluster_;
    sources.preemption_status = [](std::string_view uid) {
      return uid == "uid-b-solo" ? std::string("reclaiming 4 GPUs") : std::string();
    };
    // team-b took 3 pods back from team-a, one of which still terminates; a plain priority
    // preemption is no team's and not counted.
    sources.preemptions = [] {
      metrics::PreemptionTotals t;
      t.preemptions = {{"team-b", "team-a", scheduler::decisions::PreemptionReason::kReclaim, 3},
                       {"team-b", "team-a", scheduler::decisions::PreemptionReason::kPriority, 5}};
      t.preempted_pods = {{"team-a", 1}};
      return t;
    };
    sources.clock = &clock_;
    sources.history = &history_;
    sources.tasks = &tasks_;
    sources.explain = [this](const scheduler::model::Pod& pod) { return admission_.Explain(pod); };
    return sources;
  }

  void Run(const std::string& name, const std::string& node, int gpus, int64_t started) {
    scheduler::model::Pod pod = PodBuilder(name).Namespace("ns-team-a").Gpus(gpus).Build();
    pod.creation_unix_ms = started - 1000;
    pod.start_unix_ms = started;
    pod.node_name = node;
    pod.phase = scheduler::model::PodPhase::kRunning;
    cluster_.OnPodUpsert(pod);
  }
  void Wait(PodBuilder builder, int gpus, int64_t created) {
    scheduler::model::Pod pod = builder.Namespace("ns-team-b").Gpus(gpus).Build();
    pod.creation_unix_ms = created;
    cluster_.OnPodUpsert(pod);
  }

  // GET `target` ("path?query") from `api` served on loopback (the fixture's by default), with
  // `authorization` as the Authorization header when not empty: the status and the parsed body.
  int Get(const std::string& target, rapidjson::Document* body, const AdminApi* api = nullptr,
          const std::string& authorization = "") {
    common::testing::HttpReply reply = Reply(target, api, authorization);
    EXPECT_EQ(reply.headers["content-type"], "application/json") << target;
    body->Parse(reply.body.c_str());
    EXPECT_FALSE(body->HasParseError()) << reply.body;
    return reply.status;
  }

  common::testing::HttpReply Reply(const std::string& target, const AdminApi* api = nullptr,
                                   const std::string& authorization = "") {
    HttpServer server(HttpServerOptions{}, (api != nullptr ? *api : api_).Routes());
    EXPECT_TRUE(server.Start().ok());
    common::testing::HttpClient client("127.0.0.1", server.port());
    common::testing::HttpClient::Headers headers;
    if (!authorization.empty()) headers.emplace_back("Authorization", authorization);
    common::Result<common::testing::HttpReply> reply =
        client.Request("GET", target, "", "application/json", headers);
    server.Shutdown(std::chrono::milliseconds(100));
    EXPECT_TRUE(reply.ok()) << target << ": " << (reply.ok() ? "" : reply.error().message);
    return reply.ok() ? *reply : common::testing::HttpReply{};
  }

  static const rapidjson::Value& Find(const rapidjson::Value& items, const char* key,
                                      const std::string& value) {
    for (const rapidjson::Value& item : items.GetArray()) {
      if (item[key].GetString() == value) return item;
    }
    ADD_FAILURE() << "no item with " << key << " = " << value;
    static const rapidjson::Value kNull;
    return kNull;
  }

  common::FakeClock clock_;
  scheduler::ledger::QuotaBook book_;
  scheduler::state::ClusterState cluster_;
  UsageHistory history_;
  TaskHistory tasks_{TaskHistory::Options{}};
  scheduler::decisions::Admission admission_;
  AdminApi api_;
};

TEST_F(AdminApiTest, TeamsReportTheLedgersNumbers) {
  rapidjson::Document d;
  ASSERT_EQ(Get("/api/v1/teams", &d), 200);
  EXPECT_STREQ(d["kind"].GetString(), "TeamList");
  ASSERT_EQ(d["items"].Size(), 2u);
  const rapidjson::Value& a = Find(d["items"], "name", "team-a");
  EXPECT_STREQ(a["cohort"].GetString(), "research");
  const rapidjson::Value& qa = a["quotas"][0];
  EXPECT_STREQ(qa["flavor"].GetString(), kP5);
  EXPECT_STREQ(qa["resource"].GetString(), kGpu);
  EXPECT_STREQ(qa["nominal"].GetString(), "8");
  EXPECT_STREQ(qa["borrowingLimit"].GetString(), "8");
  EXPECT_TRUE(qa["lendingLimit"].IsNull());  // all of it
  EXPECT_STREQ(qa["usage"].GetString(), "12");
  EXPECT_STREQ(qa["borrowed"].GetString(), "4");
  EXPECT_STREQ(qa["lent"].GetString(), "0");
  EXPECT_DOUBLE_EQ(a["weightedShare"][kP5].GetDouble(), 0.25);  // 4 of the pool's 16, weight 1
  // 2 bound, 1 of them preempted: a pod is in one state, as taskgov_pods counts them.
  EXPECT_EQ(a["pods"]["running"].GetInt(), 1);
  EXPECT_EQ(a["pods"]["terminating"].GetInt(), 0);
  EXPECT_EQ(a["workloads"]["admitted"].GetInt(), 2);
  // team-a is the victim: its pods preempted now and in all, as taskgov_pods{state="preempted"}
  // and taskgov_preemptions_total{victim_team} count them.
  EXPECT_EQ(a["pods"]["preempted"].GetInt(), 1);
  EXPECT_EQ(a["preemptions"]["total"].GetInt(), 3);
  ASSERT_TRUE(a["preemptions"]["byReason"].HasMember("reclaim"));
  EXPECT_EQ(a["preemptions"]["byReason"]["reclaim"].GetInt(), 3);

  const rapidjson::Value& b = Find(d["items"], "name", "team-b");
  EXPECT_STREQ(b["quotas"][0]["usage"].GetString(), "0");
  EXPECT_STREQ(b["quotas"][0]["lent"].GetString(), "4");
  EXPECT_TRUE(b["quotas"][0]["borrowingLimit"].IsNull());
  EXPECT_EQ(b["fairShareWeight"].GetDouble(), 2);
  EXPECT_EQ(b["pods"]["pending"].GetInt(), 3);
  EXPECT_EQ(b["workloads"]["pending"].GetInt(), 2);  // the gang counts once
  EXPECT_EQ(b["pods"]["preempted"].GetInt(), 0);     // the preemptor lost nothing
  EXPECT_EQ(b["preemptions"]["total"].GetInt(), 0);

  ASSERT_EQ(Get("/api/v1/teams/team-b", &d), 200);
  EXPECT_STREQ(d["kind"].GetString(), "Team");
  EXPECT_STREQ(d["name"].GetString(), "team-b");
  EXPECT_STREQ(d["preemption"]["reclaimWithinCohort"].GetString(), "Any");
  ASSERT_EQ(Get("/api/v1/teams?cohort=none", &d), 200);
  EXPECT_EQ(d["items"].Size(), 0u);
  // The team of a namespace, as a pod created there would resolve; none for a namespace of none.
  ASSERT_EQ(Get("/api/v1/teams?namespace=ns-team-a", &d), 200);
  ASSERT_EQ(d["items"].Size(), 1u);
  EXPECT_STREQ(d["items"][0]["name"].GetString(), "team-a");
  ASSERT_EQ(Get("/api/v1/teams?namespace=default", &d), 200);
  EXPECT_EQ(d["items"].Size(), 0u);
}

TEST_F(AdminApiTest, WorkloadsListGangsOnceWithStateAndQueuePosition) {
  rapidjson::Document d;
  ASSERT_EQ(Get("/api/v1/workloads", &d), 200);
  EXPECT_EQ(d["total"].GetInt(), 4);  // a-0, a-1, the gang, b-solo
  EXPECT_TRUE(d["continue"].IsNull());
  const rapidjson::Value& a0 = Find(d["items"], "name", "a-0");
  EXPECT_STREQ(a0["state"].GetString(), "Running");
  EXPECT_STREQ(a0["kind"].GetString(), "Pod");
  EXPECT_STREQ(a0["team"].GetString(), "team-a");
  EXPECT_STREQ(a0["request"][kGpu].GetString(), "8");
  EXPECT_STREQ(a0["nodes"][0].GetString(), "p5-0");
  EXPECT_EQ(a0["runSeconds"].GetInt(), 3600);
  EXPECT_EQ(a0["waitSeconds"].GetInt(), 1);
  EXPECT_TRUE(a0["queuePosition"].IsNull());

  const rapidjson::Value& gang = Find(d["items"], "name", "train");
  EXPECT_STREQ(gang["namespace"].GetString(), "ns-team-b");
  EXPECT_STREQ(gang["state"].GetString(), "Pending");
  EXPECT_EQ(gang["pods"].GetInt(), 2);
  EXPECT_EQ(gang["declaredPods"].GetInt(), 2);
  EXPECT_STREQ(gang["request"][kGpu].GetString(), "8");  // the whole gang's
  EXPECT_EQ(gang["waitSeconds"].GetInt(), 120);
  // TaskRanking: the training-class pod ranks ahead of the gang of priority 0.
  const rapidjson::Value& solo = Find(d["items"], "name", "b-solo");
  EXPECT_EQ(solo["queuePosition"].GetInt(), 1);
  EXPECT_EQ(gang["queuePosition"].GetInt(), 2);
  EXPECT_STREQ(solo["priorityClass"].GetString(), "training");
  EXPECT_EQ(solo["priority"].GetInt(), 50);
  EXPECT_STREQ(solo["preemption"].GetString(), "reclaiming 4 GPUs");
  // Why each waits, in the list: the reclaim under way, the filter's refusal; nothing for a
  // running one.
  EXPECT_STREQ(solo["why"].GetString(), "reclaiming 4 GPUs");
  EXPECT_EQ(gang["why"].GetString(), std::string(gang["refusal"].GetString()));
  EXPECT_NE(std::string(gang["why"].GetString()), "");
  EXPECT_STREQ(a0["why"].GetString(), "");

  ASSERT_EQ(Get("/api/v1/workloads?state=Pending&team=team-b", &d), 200);
  EXPECT_EQ(d["total"].GetInt(), 2);
  ASSERT_EQ(Get("/api/v1/workloads?namespace=ns-team-a&state=Running", &d), 200);
  EXPECT_EQ(d["total"].GetInt(), 2);
}

// A pod kube-scheduler never sent to the filter (no node has room) has no refusal to quote: the
// list says why it waits with its explanation, as its own page does.
TEST_F(AdminApiTest, AWorkloadNeverFilteredSaysWhyItWaitsInTheList) {
  Wait(PodBuilder("b-big"), 9, kNow - 10'000);
  rapidjson::Document d, why;
  ASSERT_EQ(Get("/api/v1/workloads?state=Pending", &d), 200);
  const rapidjson::Value& big = Find(d["items"], "name", "b-big");
  EXPECT_FALSE(big["refused"].GetBool());
  ASSERT_EQ(Get("/api/v1/workloads/ns-team-b/b-big/explanation", &why), 200);
  EXPECT_STREQ(big["why"].GetString(), why["summary"].GetString());
  EXPECT_NE(std::string(big["why"].GetString()).find("no node is that big"), std::string::npos)
      << big["why"].GetString();
}

// The last hour of a team's pods, and the tasks that ended, newest first.
TEST_F(AdminApiTest, TeamsHaveAWindowAndEndedTasksAreListed) {
  rapidjson::Document d;
  ASSERT_EQ(Get("/api/v1/teams/team-a", &d), 200);
  const rapidjson::Value& w = d["window"];
  EXPECT_EQ(w["seconds"].GetInt(), 3600);
  EXPECT_EQ(w["boundPods"].GetInt(), 2);
  EXPECT_DOUBLE_EQ(w["averageWaitSeconds"].GetDouble(), 10);  // (5 + 15) / 2
  EXPECT_EQ(w["endedPods"].GetInt(), 2);
  EXPECT_DOUBLE_EQ(w["averageRunSeconds"].GetDouble(), 1800);  // (3000 + 600) / 2
  EXPECT_EQ(w["ended"]["Succeeded"].GetInt(), 1);
  EXPECT_EQ(w["ended"]["Preempted"].GetInt(), 1);
  // The last 10 minutes: a-batch's end only.
  ASSERT_EQ(Get("/api/v1/teams/team-a?window=600", &d), 200);
  EXPECT_EQ(d["window"]["boundPods"].GetInt(), 0);
  EXPECT_EQ(d["window"]["endedPods"].GetInt(), 1);
  EXPECT_TRUE(d["window"]["averageWaitSeconds"].IsNull());
  ASSERT_EQ(Get("/api/v1/teams?window=59", &d), 400);
  EXPECT_NE(std::string(d["error"].GetString()).find("'window'"), std::string::npos);

  ASSERT_EQ(Get("/api/v1/history/tasks", &d), 200);
  ASSERT_EQ(d["items"].Size(), 2u);
  EXPECT_STREQ(d["items"][0]["name"].GetString(), "a-batch");
  EXPECT_STREQ(d["items"][0]["outcome"].GetString(), "Succeeded");
  EXPECT_EQ(d["items"][0]["runSeconds"].GetInt(), 3000);
  EXPECT_STREQ(d["items"][1]["outcome"].GetString(), "Preempted");
  EXPECT_STREQ(d["items"][1]["reason"].GetString(), "Reclaim");
  ASSERT_EQ(Get("/api/v1/history/tasks?team=team-b", &d), 200);
  EXPECT_EQ(d["items"].Size(), 0u);
  ASSERT_EQ(Get("/api/v1/history/tasks?limit=1", &d), 200);
  EXPECT_EQ(d["items"].Size(), 1u);
  ASSERT_EQ(Get("/api/v1/history/tasks?since=yesterday", &d), 400);
}

TEST_F(AdminApiTest, PagesFollowTheContinueToken) {
  std::vector<std::string> names;
  std::string next;
  for (int page = 0; page < 10; ++page) {
    rapidjson::Document d;
    ASSERT_EQ(Get("/api/v1/workloads?limit=3" + (next.empty() ? "" : "&continue=" + next), &d),
              200);
    for (const rapidjson::Value& item : d["items"].GetArray())
      names.push_back(item["name"].GetString());
    if (d["continue"].IsNull()) break;
    next = d["continue"].GetString();  // "namespace/name/kind/key": nothing to escape here
  }
  EXPECT_EQ(names, (std::vector<std::string>{"a-0", "a-1", "b-solo", "train"}));
}

// kube-scheduler asks about pods the informers have not reported yet: a lone pod is a workload
// of its own, a gang member joins its gang's row.
TEST_F(AdminApiTest, PodsKnownOnlyFromFilterCallsAreListed) {
  scheduler::model::Pod ghost = PodBuilder("ghost").Namespace("ns-team-a").Gpus(8).Build();
  ghost.creation_unix_ms = kNow;
  scheduler::model::Pod member = PodBuilder("b-train-2")
                                     .Namespace("ns-team-b")
                                     .Label("kueue.x-k8s.io/pod-group-name", "train")
                                     .Annotation("kueue.x-k8s.io/pod-group-total-count", "2")
                                     .Gpus(4)
                                     .Build();
  for (const scheduler::model::Pod& pod : {ghost, member}) {
    scheduler::FilterArgs args;
    args.pod = pod;
    args.node_names = {"p5-0", "p5-1"};
    EXPECT_TRUE(admission_.Filter(args).feasible.empty()) << pod.name;
  }
  rapidjson::Document d;
  ASSERT_EQ(Get("/api/v1/workloads", &d), 200);
  EXPECT_EQ(d["total"].GetInt(), 5);  // a-0, a-1, ghost, the gang, b-solo
  std::vector<std::string> names;
  for (const rapidjson::Value& item : d["items"].GetArray()) {
    names.push_back(item["name"].GetString());
  }
  EXPECT_EQ(names, (std::vector<std::string>{"a-0", "a-1", "ghost", "b-solo", "train"}));
  const rapidjson::Value& lone = Find(d["items"], "name", "ghost");
  EXPECT_STREQ(lone["kind"].GetString(), "Pod");
  EXPECT_STREQ(lone["state"].GetString(), "Pending");
  EXPECT_TRUE(lone["refused"].GetBool());
  EXPECT_STREQ(lone["team"].GetString(), "team-a");
  EXPECT_EQ(Find(d["items"], "name", "train")["pods"].GetInt(), 3);
  ASSERT_EQ(Get("/api/v1/workloads/ns-team-b/train", &d), 200);
  const rapidjson::Value& pods = d["items"][0]["podList"];
  ASSERT_EQ(pods.Size(), 3u);
  EXPECT_STREQ(pods[2]["name"].GetString(), "b-train-2");
  EXPECT_TRUE(pods[2]["refused"].GetBool());
}

TEST_F(AdminApiTest, OneWorkloadWithItsPods) {
  rapidjson::Document d;
  ASSERT_EQ(Get("/api/v1/workloads/ns-team-b/train", &d), 200);
  ASSERT_EQ(d["items"].Size(), 1u);
  const rapidjson::Value& pods = d["items"][0]["podList"];
  ASSERT_EQ(pods.Size(), 2u);
  EXPECT_STREQ(pods[0]["name"].GetString(), "b-train-0");
  EXPECT_STREQ(pods[0]["state"].GetString(), "Pending");
  EXPECT_STREQ(pods[1]["request"][kGpu].GetString(), "4");
}

TEST_F(AdminApiTest, AWaitingGangIsExplainedRuleByRule) {
  rapidjson::Document d;
  ASSERT_EQ(Get("/api/v1/workloads/ns-team-b/train/explanation", &d), 200);
  EXPECT_STREQ(d["kind"].GetString(), "WorkloadExplanation");
  EXPECT_STREQ(d["team"].GetString(), "team-b");
  EXPECT_STREQ(d["state"].GetString(), "Pending");
  EXPECT_STREQ(d["outlook"].GetString(), "Waiting");
  EXPECT_STREQ(d["need"][kGpu].GetString(), "8");  // the whole gang
  const rapidjson::Value& nominal = d["flavors"][0];
  EXPECT_STREQ(nominal["mode"].GetString(), "WithinNominal");
  EXPECT_FALSE(nominal["admissible"].GetBool());
  const rapidjson::Value& line = nominal["quota"][0];
  EXPECT_STREQ(line["need"].GetString(), "8");
  EXPECT_STREQ(line["inUse"].GetString(), "0");
  EXPECT_STREQ(line["poolUsed"].GetString(), "12");
  EXPECT_STREQ(line["poolCapacity"].GetString(), "16");
  EXPECT_FALSE(line["fits"].GetBool());
  const rapidjson::Value& quota = Find(nominal["checks"], "rule", "quota");
  EXPECT_FALSE(quota["passed"].GetBool());
  EXPECT_STREQ(quota["change"].GetString(),
               "the cohort must have 4 nvidia.com/gpu more idle on ml.p5.48xlarge: other teams "
               "borrow 4 nvidia.com/gpu there, their borrowed pods finishing or reclaimed, or "
               "more quota lent to it");
  EXPECT_STREQ(nominal["quota"][0]["othersBorrowed"].GetString(), "4");
  EXPECT_TRUE(Find(nominal["checks"], "rule", "room")["passed"].GetBool());
  EXPECT_TRUE(Find(nominal["checks"], "rule", "room")["change"].IsNull());

  // A running workload does not wait; an unknown one is 404.
  ASSERT_EQ(Get("/api/v1/workloads/ns-team-a/a-0/explanation", &d), 200);
  EXPECT_STREQ(d["outlook"].GetString(), "NotPending");
  EXPECT_TRUE(d["evaluatedPod"].IsNull());
  EXPECT_EQ(Get("/api/v1/workloads/ns-team-b/nope/explanation", &d), 404);
}

TEST_F(AdminApiTest, ClusterAndPolicy) {
  rapidjson::Document d;
  ASSERT_EQ(Get("/api/v1/cluster", &d), 200);
  const rapidjson::Value& p5 = Find(d["flavors"], "name", kP5);
  EXPECT_EQ(p5["nodes"].GetInt(), 2);
  EXPECT_STREQ(p5["allocatable"][kGpu].GetString(), "16");
  EXPECT_STREQ(p5["inUse"][kGpu].GetString(), "12");
  EXPECT_STREQ(p5["nominalQuota"][kGpu].GetString(), "16");
  // A node of an instance type no team has quota on is capacity too; so is one of no type.
  cluster_.OnNodeUpsert(NodeBuilder("trn1-0")
                            .InstanceType("ml.trn1.32xlarge")
                            .Allocatable("aws.amazon.com/neuron", "16"));
  cluster_.OnNodeUpsert(NodeBuilder("bare-0").Allocatable("cpu", "4"));
  ASSERT_EQ(Get("/api/v1/cluster", &d), 200);
  const rapidjson::Value& trn1 = Find(d["flavors"], "name", "ml.trn1.32xlarge");
  EXPECT_EQ(trn1["nodes"].GetInt(), 1);
  EXPECT_STREQ(trn1["allocatable"]["aws.amazon.com/neuron"].GetString(), "16");
  EXPECT_EQ(trn1["nominalQuota"].MemberCount(), 0u);
  EXPECT_STREQ(Find(d["flavors"], "name", "")["allocatable"]["cpu"].GetString(), "4");
  ASSERT_EQ(Get("/api/v1/policy", &d), 200);
  EXPECT_STREQ(d["taskPrioritization"].GetString(), "TaskRanking");
  EXPECT_STREQ(d["priorityClasses"][0]["name"].GetString(), "training");
  EXPECT_EQ(d["teams"].GetInt(), 2);
  EXPECT_FALSE(d.HasMember("reload"));
}

TEST_F(AdminApiTest, HistoryAndTheUsageReport) {
  rapidjson::Document d;
  ASSERT_EQ(Get("/api/v1/history?team=team-a&resource=nvidia.com/gpu", &d), 200);
  ASSERT_EQ(d["teams"].Size(), 1u);
  const rapidjson::Value& a = d["teams"][0];
  EXPECT_STREQ(a["flavor"].GetString(), kP5);
  ASSERT_EQ(a["points"].Size(), 2u);
  EXPECT_STREQ(a["points"][1][0].GetString(), "2026-05-28T20:26:40Z");
  EXPECT_EQ(a["points"][1][1].GetDouble(), 12);  // usage
  EXPECT_EQ(a["points"][1][2].GetDouble(), 4);   // borrowed
  ASSERT_EQ(d["cluster"].Size(), 1u);            // the GPU line only
  EXPECT_EQ(d["cluster"][0]["points"][0][1].GetDouble(), 12);
  EXPECT_EQ(d["cluster"][0]["points"][0][2].GetDouble(), 16);
  ASSERT_EQ(Get("/api/v1/history?team=team-b", &d), 200);
  ASSERT_EQ(d["queues"].Size(), 1u);
  EXPECT_EQ(d["queues"][0]["points"][1][1].GetDouble(), 3);   // pending pods
  EXPECT_EQ(d["queues"][0]["points"][1][2].GetDouble(), 90);  // (120 + 60) / 2 s
  ASSERT_EQ(Get("/api/v1/history?since=2026-05-28T20:26:30Z", &d), 200);
  EXPECT_EQ(d["teams"][0]["points"].Size(), 1u);
  EXPECT_EQ(Get("/api/v1/history?since=yesterday", &d), 400);
  EXPECT_NE(std::string(d["error"].GetString()).find("'since' must be an RFC 3339 time"),
            std::string::npos);

  common::testing::HttpReply csv = Reply("/api/v1/reports/usage.csv");
  EXPECT_EQ(csv.status, 200);
  EXPECT_EQ(csv.headers["content-type"], "text/csv; charset=utf-8");
  EXPECT_NE(
      csv.body.find("2026-05-28,team-a,ml.p5.48xlarge,nvidia.com/gpu,devices,0.067,0.100,0.033\n"),
      std::string::npos)
      << csv.body;
}

// Malformed and unknown parameters are 400 naming them; unknown teams and workloads 404.
TEST_F(AdminApiTest, BadRequestsSayWhatIsWrong) {
  struct Case {
    const char* target;
    int status;
    const char* error;
  };
  const Case cases[] = {
      {"/api/v1/workloads?limit=0", 400,
       "query parameter 'limit' must be an integer from 1 to 1000, not '0'"},
      {"/api/v1/workloads?limit=12abc", 400,
       "query parameter 'limit' must be an integer from 1 to 1000, not '12abc'"},
      {"/api/v1/workloads?limit=1&limit=2", 400, "query parameter 'limit' given more than once"},
      {"/api/v1/workloads?sort=name", 400,
       "unknown query parameter 'sort'; known: team, namespace, state, limit, continue"},
      {"/api/v1/workloads?state=Waiting", 400,
       "query parameter 'state' must be Pending, Admitted, Running, Terminating or Suspended, not "
       "'Waiting'"},
      {"/api/v1/workloads?team=%zz", 400, "malformed percent-encoding in query parameter 'team'"},
      {"/api/v1/workloads?team=%4", 400, "malformed percent-encoding in query parameter 'team'"},
      {"/api/v1/cluster?x=1", 400, "unknown query parameter 'x'; this endpoint takes none"},
      {"/api/v1/teams/team-z", 404, "no team 'team-z' in the policy in force"},
      {"/api/v1/teams/", 400, "expected /api/v1/teams/{team}, not /api/v1/teams/"},
      {"/api/v1/workloads/ns-team-b", 400,
       "expected /api/v1/workloads/{namespace}/{name}[/explanation], not "
       "/api/v1/workloads/ns-team-b"},
      {"/api/v1/workloads/ns-team-b/nope", 404,
       "no workload ns-team-b/nope (no such pod, pod group or job owner with pods taskgov "
       "knows)"},
  };
  for (const Case& c : cases) {
    rapidjson::Document d;
    EXPECT_EQ(Get(c.target, &d), c.status) << c.target;
    ASSERT_TRUE(d.IsObject() && d.HasMember("error")) << c.target;
    EXPECT_STREQ(d["error"].GetString(), c.error) << c.target;
  }
  // Percent-encoding is decoded: team-b spelled with %2D.
  rapidjson::Document d;
  ASSERT_EQ(Get("/api/v1/workloads?team=team%2Db", &d), 200);
  EXPECT_EQ(d["total"].GetInt(), 2);
}

// Issue 36, item 4: a review stuck in a slow API server delays only the request that waits for
// it. The console listener has one I/O thread; a reader whose decision is cached is answered while
// another token's TokenReview hangs (before, the review ran on that I/O thread: the cached
// reader's request waited behind it). Replies carry Cache-Control: no-store where the listener
// says so (issue 36, item 6).
TEST_F(AdminApiTest, ASlowReviewDelaysOnlyTheRequestThatWaitsForIt) {
  testing::FakeAccessReviewer reviewer;
  reviewer.allowed = {"admin@", "slow@"};
  ConsoleAccess access(&reviewer, &clock_, ConsoleAccess::Options{});
  AdminApi::Sources sources;
  sources.book = &book_;
  sources.cluster = &cluster_;
  sources.clock = &clock_;
  sources.access = &access;
  const AdminApi guarded(sources);
  HttpServerOptions options;
  options.io_threads = 1;
  options.response_headers = {{"Cache-Control", "no-store"}};
  HttpServer server(options, guarded.Routes());
  ASSERT_TRUE(server.Start().ok());
  auto get = [&](const std::string& token, std::chrono::milliseconds timeout) {
    common::testing::HttpClient client("127.0.0.1", server.port(), timeout);
    return client.Request("GET", "/api/v1/teams", "", "application/json",
                          {{"Authorization", "Bearer " + token}});
  };
  common::Result<common::testing::HttpReply> admin = get("t-admin", std::chrono::seconds(5));
  ASSERT_TRUE(admin.ok()) << admin.error().message;
  EXPECT_EQ(admin->status, 200);
  EXPECT_EQ(admin->headers["cache-control"], "no-store");
  reviewer.held = {"t-slow"};
  common::Result<common::testing::HttpReply> slow = common::Error{"not run"};
  std::thread waiting([&] { slow = get("t-slow", std::chrono::seconds(10)); });
  ASSERT_TRUE(extender::testing::Eventually([&] { return reviewer.token_reviews == 2; }));
  const auto start = std::chrono::steady_clock::now();
  common::Result<common::testing::HttpReply> cached = get("t-admin", std::chrono::seconds(2));
  ASSERT_TRUE(cached.ok()) << cached.error().message << " (behind the slow review)";
  EXPECT_EQ(cached->status, 200);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));
  reviewer.Release("t-slow");
  waiting.join();
  ASSERT_TRUE(slow.ok()) << slow.error().message;
  EXPECT_EQ(slow->status, 200);
  server.Shutdown(std::chrono::milliseconds(100));
}

// With access checks: no token 401, no grant 403; a caller granted team-b's namespace sees
// team-a's workloads without their names and cannot look one up; an admin sees everything.
TEST_F(AdminApiTest, AccessIsCheckedAndOtherTeamsWorkloadsAreNameless) {
  testing::FakeAccessReviewer reviewer;
  reviewer.allowed = {"admin@", "bob@ns-team-b"};
  ConsoleAccess access(&reviewer, &clock_, ConsoleAccess::Options{});
  AdminApi::Sources sources;
  sources.book = &book_;
  sources.cluster = &cluster_;
  sources.clock = &clock_;
  sources.access = &access;
  const AdminApi guarded(sources);

  common::testing::HttpReply anonymous = Reply("/api/v1/teams", &guarded);
  EXPECT_EQ(anonymous.status, 401);
  EXPECT_EQ(anonymous.headers["www-authenticate"], "Bearer");
  EXPECT_EQ(Reply("/api/v1/workloads", &guarded, "Bearer t-eve").status, 403);

  rapidjson::Document d;
  ASSERT_EQ(Get("/api/v1/workloads", &d, &guarded, "Bearer t-bob"), 200);
  EXPECT_EQ(d["total"].GetInt(), 4);
  size_t hidden = 0;
  for (const rapidjson::Value& item : d["items"].GetArray()) {
    const bool of_a = item["team"].GetString() == std::string("team-a");
    EXPECT_EQ(item["hidden"].GetBool(), of_a);
    if (!of_a) continue;
    ++hidden;
    EXPECT_STREQ(item["name"].GetString(), "");
    EXPECT_STREQ(item["namespace"].GetString(), "");
    EXPECT_EQ(item["nodes"].Size(), 0u);
    EXPECT_STREQ(item["state"].GetString(), "Running");  // the numbers stay
  }
  EXPECT_EQ(hidden, 2u);
  ASSERT_EQ(Get("/api/v1/workloads?namespace=ns-team-a", &d, &guarded, "Bearer t-bob"), 200);
  EXPECT_EQ(d["total"].GetInt(), 0);
  // Issue 36, item 10: the page token standing for a hidden workload is a keyed digest (a
  // per-process secret), not std::hash of its key, which bob could compute for a guessed name:
  // another process (another secret) gives another token for the same workload.
  ASSERT_EQ(Get("/api/v1/workloads?limit=2", &d, &guarded, "Bearer t-bob"), 200);
  ASSERT_TRUE(d["continue"].IsString());
  const std::string token = d["continue"].GetString();
  ASSERT_EQ(token.rfind("~team-a/", 0), 0u) << token;
  const AdminApi other(sources);  // another process: another secret
  ASSERT_EQ(Get("/api/v1/workloads?limit=2", &d, &other, "Bearer t-bob"), 200);
  EXPECT_NE(std::string(d["continue"].GetString()), token);
  ASSERT_EQ(Get("/api/v1/workloads?limit=2&continue=" + token, &d, &guarded, "Bearer t-bob"), 200);
  EXPECT_EQ(d["items"].Size(), 2u);  // the same process pages on with it
  EXPECT_EQ(Get("/api/v1/workloads/ns-team-a/a-0", &d, &guarded, "Bearer t-bob"), 404);
  ASSERT_EQ(Get("/api/v1/workloads/ns-team-b/train", &d, &guarded, "Bearer t-bob"), 200);
  ASSERT_EQ(Get("/api/v1/teams", &d, &guarded, "Bearer t-bob"), 200);
  EXPECT_EQ(d["items"].Size(), 2u);

  ASSERT_EQ(Get("/api/v1/workloads/ns-team-a/a-0", &d, &guarded, "Bearer t-admin"), 200);
  EXPECT_STREQ(d["items"][0]["name"].GetString(), "a-0");
  reviewer.down = true;
  common::testing::HttpReply down = Reply("/api/v1/teams", &guarded, "Bearer t-carol");
  EXPECT_EQ(down.status, 503);
  EXPECT_EQ(down.headers["retry-after"], "1");
}

// Issue 35: a job taskgov paused has no pods; it is listed as a workload of its own, Suspended,
// with its team, its whole demand, who paused it and why, and explained as the resumer judges it.
// A job its user suspended is marked so on its workload while its pods go.
TEST_F(AdminApiTest, PausedJobsAreListedSuspendedWithWhoAndWhy) {
  auto job = std::make_shared<scheduler::model::JobControl>();
  job->kind = "Job";
  job->ns = "ns-team-b";
  job->name = "llm";
  job->uid = "uid-llm";
  job->workload = scheduler::model::OwnerGangKey(job->uid);
  job->suspended = true;
  job->creation_unix_ms = kNow - 600'000;
  job->annotations = {{scheduler::model::kSuspendedByAnnotation, "taskgov"},
                      {scheduler::model::kSuspendReasonAnnotation, "Reclaim"},
                      {scheduler::model::kSuspendedAtAnnotation, "2026-05-28T20:25:10Z"},
                      {scheduler::model::kSuspensionsAnnotation, "2"},
                      {scheduler::model::kSuspendedPriorityAnnotation, "0"}};
  job->pod_sets = {{2, PodBuilder("").Namespace("ns-team-b").Gpus(4).Build()}};
  cluster_.OnJobUpsert(job);
  cluster_.OnGangSizeUpsert(job->workload, 2);  // the informers report spec.parallelism

  rapidjson::Document d;
  ASSERT_EQ(Get("/api/v1/workloads?state=Suspended", &d), 200);
  ASSERT_EQ(d["items"].Size(), 1u);
  const rapidjson::Value& w = d["items"][0];
  EXPECT_STREQ(w["name"].GetString(), "llm");
  EXPECT_STREQ(w["kind"].GetString(), "Job");
  EXPECT_STREQ(w["team"].GetString(), "team-b");
  EXPECT_STREQ(w["state"].GetString(), "Suspended");
  EXPECT_EQ(w["pods"].GetInt(), 0);
  EXPECT_EQ(w["declaredPods"].GetInt(), 2);
  EXPECT_STREQ(w["request"][kGpu].GetString(), "8");
  EXPECT_EQ(w["waitSeconds"].GetInt(), 90);  // since it was paused
  EXPECT_STREQ(w["suspended"]["by"].GetString(), "taskgov");
  EXPECT_STREQ(w["suspended"]["reason"].GetString(), "Reclaim");
  EXPECT_STREQ(w["suspended"]["since"].GetString(), "2026-05-28T20:25:10Z");
  EXPECT_EQ(w["suspended"]["suspensions"].GetInt(), 2);
  EXPECT_EQ(std::string(w["why"].GetString()),
            "Job ns-team-b/llm is paused by taskgov (Reclaim) since 2026-05-28T20:25:10Z: taskgov "
            "resumes it when its whole demand fits its team's quota");
  // Every other workload says it is not suspended; the full list counts the paused job.
  ASSERT_EQ(Get("/api/v1/workloads", &d), 200);
  EXPECT_EQ(d["total"].GetInt(), 5);
  EXPECT_TRUE(Find(d["items"], "name", "a-0")["suspended"].IsNull());

  ASSERT_EQ(Get("/api/v1/workloads/ns-team-b/llm/explanation", &d), 200);
  EXPECT_STREQ(d["state"].GetString(), "Suspended");
  EXPECT_STREQ(d["evaluatedPod"].GetString(), "ns-team-b/llm (paused)");
  EXPECT_STREQ(d["need"][kGpu].GetString(), "8");  // the whole gang's
  EXPECT_TRUE(std::string(d["summary"].GetString())
                  .starts_with("Job ns-team-b/llm is paused by taskgov (Reclaim) since "))
      << d["summary"].GetString();
  EXPECT_STREQ(d["suspended"]["by"].GetString(), "taskgov");

  // Resumed: no longer listed.
  auto resumed = std::make_shared<scheduler::model::JobControl>(*job);
  resumed->suspended = false;
  resumed->annotations = {{scheduler::model::kSuspensionsAnnotation, "2"}};
  cluster_.OnJobUpsert(resumed);
  ASSERT_EQ(Get("/api/v1/workloads?state=Suspended", &d), 200);
  EXPECT_EQ(d["items"].Size(), 0u);

  // Its user suspends a job whose pod still waits: the workload says so.
  auto user = std::make_shared<scheduler::model::JobControl>();
  user->kind = "Job";
  user->ns = "ns-team-b";
  user->name = "mine";
  user->uid = "uid-mine";
  user->workload = scheduler::model::OwnerGangKey(user->uid);
  user->suspended = true;
  cluster_.OnJobUpsert(user);
  Wait(PodBuilder("mine-0").Owner("Job", "mine", "uid-mine"), 1, kNow - 5'000);
  ASSERT_EQ(Get("/api/v1/workloads/ns-team-b/mine", &d), 200);
  ASSERT_EQ(d["items"].Size(), 1u);
  EXPECT_STREQ(d["items"][0]["suspended"]["by"].GetString(), "user");
  EXPECT_STREQ(d["items"][0]["suspended"]["reason"].GetString(), "");
  EXPECT_TRUE(d["items"][0]["suspended"]["since"].IsNull());
  EXPECT_TRUE(std::string(d["items"][0]["why"].GetString()).find("suspended by its user") !=
              std::string::npos)
      << d["items"][0]["why"].GetString();
}

// The reference's examples (ADMIN_API.md: a line "`GET target`", then a ```json block) are this
// fixture's replies, pretty-printed. UPDATE_GOLDEN=1 under `bazel run` rewrites them.
TEST_F(AdminApiTest, TheReferenceShowsRealReplies) {
  constexpr char kReference[] = "extender/ADMIN_API.md";
  std::ifstream in(kReference);
  ASSERT_TRUE(in) << "cannot read " << kReference;
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  std::string rewritten;
  size_t examples = 0;
  for (size_t i = 0; i < lines.size(); ++i) {
    rewritten += lines[i] + "\n";
    const std::string& line = lines[i];
    if (!(line.starts_with("`GET ") && line.ends_with("`") && i + 1 < lines.size() &&
          lines[i + 1] == "```json")) {
      continue;
    }
    const std::string target = line.substr(5, line.size() - 6);
    rapidjson::Document reply;
    reply.Parse(Reply(target).body.c_str());
    ASSERT_FALSE(reply.HasParseError()) << target;
    rapidjson::StringBuffer pretty;
    rapidjson::PrettyWriter<rapidjson::StringBuffer> writer(pretty);
    writer.SetIndent(' ', 2);
    reply.Accept(writer);
    std::string shown;
    size_t end = i + 2;
    for (; end < lines.size() && lines[end] != "```"; ++end) shown += lines[end] + "\n";
    ASSERT_LT(end, lines.size()) << "unclosed example after " << line;
    const std::string actual = std::string(pretty.GetString()) + "\n";
    if (shown != actual) {
      std::istringstream a(actual), e(shown);
      std::string la, le;
      for (int n = 1;
           static_cast<bool>(std::getline(a, la)) | static_cast<bool>(std::getline(e, le)); ++n) {
        if (la == le) continue;
        ADD_FAILURE() << kReference << ": the example of " << target << " differs at its line " << n
                      << "\n  shown: " << le << "\n  reply: " << la
                      << "\n(rerun with UPDATE_GOLDEN=1 under `bazel run` to accept)";
        break;
      }
    }
    rewritten += "```json\n" + std::string(pretty.GetString()) + "\n```\n";
    i = end;
    ++examples;
  }
  EXPECT_EQ(examples, 8u);
  const char* workspace = std::getenv("BUILD_WORKSPACE_DIRECTORY");
  if (std::getenv("UPDATE_GOLDEN") != nullptr && workspace != nullptr) {
    std::ofstream(std::string(workspace) + "/" + kReference) << rewritten;
  }
}

}  // namespace
}  // namespace taskgov::extender
