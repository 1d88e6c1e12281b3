// The console in a real browser (issue 16): one headless Chromium (e2e/browser.h) loads each
// page of the console from the real binary while team a borrows 4 of team b's GPUs and b's 2-pod
// gang waits. Each page must load with no console message and no failed request, and show the
// numbers of the admin API; the Tasks page filters by team; a pending task's explanation opens.
// Screenshots of the whole pages (1366 px wide) go to the test's outputs (dashboard.png, tasks.png,
// task.png, policies.png): extender/console/screenshots/ holds the README's copies.
//
// Chromium: Debian's `chromium` (tools/bootstrap installs it); the test is skipped without it.

#include <gtest/gtest.h>
#include <unistd.h>

#include <rapidjson/document.h>
#include <cstdlib>

#include <chrono>
#include <regex>
#include <thread>

#include "e2e/browser.h"
#include "e2e/scenario_test_util.h"
#include "scheduler/common/testing/http_client.h"

namespace taskgov::e2e {
namespace {

constexpr char kChromium[] = "/usr/bin/chromium";

constexpr char kPolicy[] = R"(apiVersion: taskgov.io/v1
kind: TaskGovernancePolicy
taskPrioritization: TaskRanking
idleComputeAllocation: FairShare
defaultCohort: e2e
teams:
  - name: a
    sharing: {strategy: LendAndBorrow, borrowLimit: 100}
    compute: [{instanceType: ml.p5.48xlarge, accelerators: 8}]
  - name: b
    reclaimWithinCohort: Never
    sharing: {strategy: LendAndBorrow, borrowLimit: 100}
    compute: [{instanceType: ml.p5.48xlarge, accelerators: 8}]
)";

// The cohort of the teams above as a Kueue Cohort object: under a parent, holding quota itself on
// a flavor none of its teams uses (so no number above changes), for the policies page's cohorts.
constexpr char kCohort[] = R"(apiVersion: kueue.x-k8s.io/v1beta1
kind: Cohort
metadata: {name: e2e}
spec:
  parentName: org
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - name: ml.g5.12xlarge
      resources: [{name: nvidia.com/gpu, nominalQuota: 4}]
)";

struct Page {
  std::string dom;
  std::vector<std::string> console;  // the browser's console messages
};

class ConsoleBrowserTest : public ScenarioTest {
 protected:
  void SetUp() override {
    if (::access(kChromium, X_OK) != 0) GTEST_SKIP() << "no " << kChromium << " (tools/bootstrap)";
    ScenarioTest::SetUp();
  }

  // One browser for every page, signed in with the admin's token (kept for the session).
  void OpenBrowser() {
    common::Result<std::unique_ptr<Browser>> b =
        Browser::Start(kChromium, ::testing::TempDir() + "/chromium-profile");
    ASSERT_TRUE(b.ok()) << b.error().message;
    browser_ = std::move(*b);
    ASSERT_TRUE(
        browser_->Navigate(h().extender().console_url() + "/#/dashboard?token=t-admin").ok());
  }

  // The page's DOM once the console rendered `route`, and the browser's messages meanwhile.
  Page Load(const std::string& route) {
    common::Status shown = ShowConsoleRoute(*browser_, route);
    EXPECT_TRUE(shown.ok()) << shown.error().message;
    Page page;
    page.dom = browser_->Text("document.documentElement.outerHTML");
    page.console = browser_->Messages();
    browser_->ClearMessages();
    return page;
  }

  void Screenshot(const std::string& route, const std::string& name) {
    const char* out = std::getenv("TEST_UNDECLARED_OUTPUTS_DIR");
    if (out == nullptr) return;
    common::Status shown = ShowConsoleRoute(*browser_, route);
    ASSERT_TRUE(shown.ok()) << shown.error().message;
    common::Status shot = browser_->Screenshot(std::string(out) + "/" + name, /*full_page=*/true);
    EXPECT_TRUE(shot.ok()) << shot.error().message;
  }

  // A page that loaded: its scripts ran to the end, no request failed, nothing was logged.
  static void ExpectClean(const Page& page, const std::string& route) {
    EXPECT_NE(page.dom.find("data-ready=\"true\""), std::string::npos)
        << route << ": the page did not finish rendering\n"
        << page.dom.substr(0, 2000);
    EXPECT_EQ(page.dom.find("data-failed-requests"), std::string::npos) << route;
    EXPECT_EQ(page.dom.find("data-script-errors"), std::string::npos) << route;
    for (const std::string& line : page.console) ADD_FAILURE() << route << ": console: " << line;
  }

  // The cells of the table row whose opening tag contains `attrs`, as text.
  static std::vector<std::string> Row(const std::string& dom, const std::string& attrs) {
    const size_t start = dom.find("<tr " + attrs);
    if (start == std::string::npos) return {};
    const std::string row = dom.substr(start, dom.find("</tr>", start) - start);
    std::vector<std::string> cells;
    const std::regex cell(R"(<t[hd][^>]*>(.*?)</t[hd]>)");
    for (auto it = std::sregex_iterator(row.begin(), row.end(), cell); it != std::sregex_iterator();
         ++it) {
      cells.push_back(std::regex_replace((*it)[1].str(), std::regex("<[^>]*>"), ""));
    }
    return cells;
  }

  // Whether the admin API's history gets a sample of `team` using `gpus` within 10 s.
  bool WaitForSample(const std::string& team, double gpus) {
    const std::string target = "/api/v1/history?resource=nvidia.com/gpu&team=" + team;
    for (int attempt = 0; attempt < 100; ++attempt) {
      common::Result<common::testing::HttpReply> reply = h().extender().Admin(target, "t-admin");
      rapidjson::Document doc;
      if (reply.ok() && reply->status == 200 && !doc.Parse(reply->body.c_str()).HasParseError() &&
          doc.HasMember("teams") && doc["teams"].IsArray()) {
        for (const auto& series : doc["teams"].GetArray()) {
          for (const auto& point : series["points"].GetArray()) {
            if (point.Size() > 1 && point[1].IsNumber() && point[1].GetDouble() == gpus)
              return true;
          }
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return false;
  }

  std::unique_ptr<Browser> browser_;
};

TEST_F(ConsoleBrowserTest, EveryPageLoadsCleanAndShowsTheApisNumbers) {
  HarnessOptions options;
  options.config["policy.yaml"] = kPolicy;
  options.config["cohort.yaml"] = kCohort;
  options.extender_args = {"--history-interval=1s"};  // a trend within the test's time
  StartHarness(std::move(options));
  h().api().SetAccessReviews({{"t-admin", "admin", {}, {"taskgov"}}},
                             {{"admin", "get", "taskgov.io", "workloads", ""}});
  std::vector<PodSpec> pods;
  for (int i = 0; i < 12; ++i) pods.push_back(GpuPod("a", "a-" + std::to_string(i)));
  SubmitAll(pods);
  ASSERT_TRUE(h().RunUntil([&] { return Running("a") == 12; }, 5));
  std::vector<PodSpec> gang;
  for (int i = 0; i < 2; ++i) {
    PodSpec spec = GpuPod("b", "train-" + std::to_string(i), 4);
    spec.labels["kueue.x-k8s.io/pod-group-name"] = "train";
    spec.annotations["kueue.x-k8s.io/pod-group-total-count"] = "2";
    gang.push_back(spec);
  }
  SubmitAll(gang);
  for (int i = 0; i < 3; ++i) h().Step();
  ASSERT_EQ(PendingOf("b"), 2u);
  // The history samples on its own clock: the trend is there once a sample saw a's 12 GPUs.
  ASSERT_TRUE(WaitForSample("a", 12)) << "no history sample of team a at 12 GPUs";
  ASSERT_NO_FATAL_FAILURE(OpenBrowser());

  const Page dashboard = Load("dashboard");
  ExpectClean(dashboard, "dashboard");
  // The trend: the history sampled every second while the scenario ran.
  EXPECT_NE(dashboard.dom.find("data-series=\"a\""), std::string::npos) << "no trend of team a";
  EXPECT_NE(dashboard.dom.find("data-series=\"capacity\""), std::string::npos);
  // Team a's GPUs: allocated 8, used 12, borrowed 4, lent 0; team b lends 4.
  const std::vector<std::string> a =
      Row(dashboard.dom, "data-team=\"a\" data-resource=\"nvidia.com/gpu\"");
  ASSERT_GE(a.size(), 7u) << dashboard.dom.substr(0, 3000);
  EXPECT_EQ(std::vector<std::string>(a.begin(), a.begin() + 7),
            (std::vector<std::string>{"a", kP5, kGpu, "8", "12", "4", "0"}));
  const std::vector<std::string> b =
      Row(dashboard.dom, "data-team=\"b\" data-resource=\"nvidia.com/gpu\"");
  ASSERT_GE(b.size(), 7u);
  EXPECT_EQ(b[6], "4");
  EXPECT_NE(dashboard.dom.find("12 of 16 in use (75%)"), std::string::npos);
  const std::vector<std::string> b_counts = Row(dashboard.dom, "data-team=\"b\">");
  ASSERT_GE(b_counts.size(), 4u);
  EXPECT_EQ(b_counts[2], "2");  // pending pods
  EXPECT_EQ(b_counts[3], "1");  // pending workloads: the gang

  const Page tasks = Load("tasks?team=b");
  ExpectClean(tasks, "tasks");
  EXPECT_NE(tasks.dom.find(Ns("b") + "/train"), std::string::npos);
  EXPECT_EQ(tasks.dom.find(Ns("a") + "/a-0"), std::string::npos);  // filtered out
  EXPECT_NE(tasks.dom.find("1 of 1 workloads"), std::string::npos);
  const Page all = Load("tasks");
  ExpectClean(all, "tasks (all)");
  EXPECT_NE(all.dom.find("13 of 13 workloads"), std::string::npos);

  const Page task = Load("tasks/" + Ns("b") + "/train");
  ExpectClean(task, "task");
  const std::smatch why = [&] {
    std::smatch m;
    std::regex_search(task.dom, m, std::regex(R"(<p id="why">([^<]*)</p>)"));
    return m;
  }();
  ASSERT_FALSE(why.empty()) << task.dom.substr(0, 3000);
  // The explanation: the gang needs 8 GPUs, 4 of them lent to a — the pool has 4 free.
  EXPECT_NE(why[1].str().find("waits: " + std::string(kP5) + ": nvidia.com/gpu: needs 8"),
            std::string::npos)
      << why[1].str();
  EXPECT_NE(why[1].str().find("the cohort must have 4 nvidia.com/gpu more idle"), std::string::npos)
      << why[1].str();
  EXPECT_NE(task.dom.find("<table class=\"rules\"><caption>" + std::string(kP5) +
                          ", within nominal quota</caption>"),
            std::string::npos)
      << task.dom.substr(0, 4000);
  EXPECT_NE(task.dom.find("<tr class=\"fail\"><td aria-label=\"refuses\">✗</td><th "
                          "scope=\"row\">quota</th>"),
            std::string::npos);
  // And the filter's own last refusal, as kube-scheduler was told.
  EXPECT_NE(task.dom.find("needs 8, b may use 4 more"), std::string::npos);

  const Page policies = Load("policies");
  ExpectClean(policies, "policies");
  EXPECT_NE(policies.dom.find("data-team=\"b\""), std::string::npos);
  EXPECT_NE(policies.dom.find("TaskRanking"), std::string::npos);
  const size_t cohorts = policies.dom.find("id=\"cohorts\"");
  ASSERT_NE(cohorts, std::string::npos) << "no cohorts table";
  const std::string table =
      policies.dom.substr(cohorts, policies.dom.find("</table>", cohorts) - cohorts);
  for (const char* cell : {">e2e<", ">org<", ">ml.g5.12xlarge<", ">nvidia.com/gpu<", ">4<"}) {
    EXPECT_NE(table.find(cell), std::string::npos) << cell << " in " << table;
  }

  // A render overtaken by a later one shows nothing: the dashboard's refresh, slowed here to
  // answer after a click on Tasks was rendered, must not replace the tasks page (seen under load:
  // the Tasks tab showed the dashboard).
  ASSERT_TRUE(Load("dashboard").dom.find("data-ready") != std::string::npos);
  common::Result<rapidjson::Document> raced = browser_->Evaluate(
      "new Promise(ok => {"
      " const fetch0 = window.fetch; let slowed = false;"
      " window.fetch = (...a) => { if (slowed) return fetch0(...a); slowed = true;"
      "   return new Promise(r => setTimeout(r, 1500)).then(() => fetch0(...a)); };"
      " render();"  // the dashboard again, its first request held 1.5 s
      " setTimeout(() => { location.hash = '#/tasks?team=b'; }, 100);"
      " setTimeout(() => { window.fetch = fetch0;"
      "   ok(document.body.dataset.route + ' ' + document.body.dataset.page + ' ' +"
      "      (document.getElementById('main').textContent.includes('1 of 1 workloads'))); },"
      "   3000); })");
  ASSERT_TRUE(raced.ok()) << raced.error().message;
  ASSERT_TRUE(raced->IsString());
  EXPECT_EQ(std::string(raced->GetString()), "#/tasks?team=b tasks true");

  Screenshot("dashboard", "dashboard.png");
  Screenshot("tasks", "tasks.png");
  Screenshot("tasks/" + Ns("b") + "/train", "task.png");
  Screenshot("policies", "policies.png");
}

}  // namespace
}  // namespace taskgov::e2e
