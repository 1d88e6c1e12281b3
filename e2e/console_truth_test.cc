// The console tells the truth (issue 38): one headless Chromium, driven over the DevTools
// protocol (e2e/browser.h), reads every page of the console from the real binary in a scenario
// with borrowing, a reclaim under way (victims terminating), a waiting gang, lone pods that wait
// for different reasons and a pod asking for an instance type its team has no quota on — and
// holds each number and sentence it shows to the admin API and /metrics of the same instant.
//
// Chromium: Debian's `chromium` (tools/bootstrap installs it); the test is skipped without it.

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <cmath>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "e2e/browser.h"
#include "e2e/scenario_test_util.h"
#include "extender/cli/testing/cli_fixture.h"
#include "metrics/testing/exposition.h"
#include "scheduler/common/testing/http_client.h"
#include "scheduler/kube/testing/fake_apiserver.h"
#include "scheduler/model/quantity.h"

namespace taskgov::e2e {
namespace {

constexpr char kChromium[] = "/usr/bin/chromium";
constexpr char kTrn1[] = "ml.trn1.32xlarge";

// The demo's policy (e2e/demo.cc): a and b share ml.p5.48xlarge, c, d and e ml.g5.12xlarge.
constexpr char kPolicy[] = R"(apiVersion: taskgov.io/v1
kind: TaskGovernancePolicy
taskPrioritization: TaskRanking
idleComputeAllocation: FairShare
priorityClasses:
  - {name: inference, weight: 100}
  - {name: training, weight: 75}
  - {name: experimentation, weight: 25}
preemption: {gracePeriodSeconds: 120, minimumRuntimeSeconds: 0}
defaultCohort: hyperpod
teams:
  - name: a
    sharing: {strategy: LendAndBorrow, borrowLimit: 50}
    preemptTeamTasks: LowerPriority
    compute: [{instanceType: ml.p5.48xlarge, accelerators: 8}]
  - name: b
    sharing: {strategy: LendAndBorrow, borrowLimit: 100}
    compute: [{instanceType: ml.p5.48xlarge, accelerators: 8}]
  - name: c
    sharing: {strategy: Lend}
    compute: [{instanceType: ml.g5.12xlarge, accelerators: 4}]
  - name: d
    fairShareWeight: 3
    sharing: {strategy: LendAndBorrow, borrowLimit: 200}
    compute: [{instanceType: ml.g5.12xlarge, accelerators: 2}]
  - name: e
    fairShareWeight: 1
    sharing: {strategy: LendAndBorrow, borrowLimit: 200}
    compute: [{instanceType: ml.g5.12xlarge, accelerators: 2}]
)";

std::string Json(const rapidjson::Value& v) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> w(buffer);
  v.Accept(w);
  return buffer.GetString();
}

// JavaScript: the text of each cell of the rows matching `selector`, as arrays.
std::string RowsOf(const std::string& selector) {
  rapidjson::Value quoted(selector.c_str(), static_cast<rapidjson::SizeType>(selector.size()));
  return "[...document.querySelectorAll(" + Json(quoted) +
         ")].map(r => [...r.querySelectorAll('th,td')].map(c => c.textContent.trim()))";
}

// A failed quota row of the console's rules: what "To pass" says is the arithmetic of what
// "Found" shows beside it (the numbers of one resource, as explanation.cc writes them).
void ExpectToPassFromFound(const std::string& found, const std::string& to_pass) {
  std::smatch f;
  ASSERT_TRUE(std::regex_search(
      found, f,
      std::regex(
          R"(needs (\d+), in use (\d+) of (\d+) \(nominal (\d+)[^)]*\)(; (\d+) of it from the cohort's pool, which has (\d+) free( \(other teams borrow (\d+)\))?)?)")))
      << found;
  const long need = std::stol(f[1]), in_use = std::stol(f[2]), limit = std::stol(f[3]);
  const std::string why = "Found: " + found + "\nTo pass: " + to_pass;
  std::smatch m;
  if (std::regex_search(to_pass, m, std::regex(R"(must use (\d+) \S+ less)"))) {
    EXPECT_EQ(std::stol(m[1]), in_use + need - limit) << why;
    EXPECT_LE(std::stol(m[1]), in_use) << why;
  } else if (std::regex_search(to_pass, m, std::regex(R"(it needs (\d+) \S+, more than)"))) {
    EXPECT_EQ(std::stol(m[1]), need) << why;
    EXPECT_GT(need, limit) << why;
  } else if (std::regex_search(to_pass, m, std::regex(R"(must have (\d+) \S+ more idle)"))) {
    ASSERT_TRUE(f[5].matched) << why;
    EXPECT_EQ(std::stol(m[1]), std::stol(f[6]) - std::stol(f[7])) << why;
    ASSERT_TRUE(f[8].matched) << why;
    const long borrowed = std::stol(f[9]);
    if (borrowed == 0) {
      EXPECT_NE(to_pass.find("nobody else borrows"), std::string::npos) << why;
    } else {
      EXPECT_NE(to_pass.find("other teams borrow " + std::string(f[9])), std::string::npos) << why;
    }
  } else if (to_pass.find("grow by") == std::string::npos) {
    ADD_FAILURE() << "no remedy derived from the numbers: " << why;
  }
}

// ---- one scenario, the same numbers everywhere ----

// What a surface shows of the teams, by what it counts: "pods running a", "workloads Pending d",
// "usage a ml.p5.48xlarge nvidia.com/gpu" — quantities in base units (cores, bytes, devices), as
// /metrics gives them.
using Numbers = std::map<std::string, double>;

constexpr const char* kTeams[] = {"a", "b", "c", "d", "e"};
// A pod is in one of these (taskgov_pods' states); "leaving" is preempted and terminating
// together, as a workload's state Terminating shows them.
constexpr const char* kPodStates[] = {"pending", "admitted", "running", "preempted", "terminating"};
// A workload's state (the admin API's, the Tasks list's, job list's); "holding-quota" is
// Admitted, Running and Terminating together, as taskgov_workloads{state="admitted"} and Kueue
// count admitted workloads.
constexpr const char* kWorkloadStates[] = {"Pending", "Admitted", "Running", "Terminating"};

std::string Key(std::initializer_list<std::string_view> parts) {
  std::string key;
  for (std::string_view p : parts) key += (key.empty() ? "" : " ") + std::string(p);
  return key;
}

// A quantity the way a page or the CLI prints it, in the resource's base unit.
double BaseUnits(const std::string& resource, const std::string& text) {
  common::Result<int64_t> v = scheduler::model::ParseResourceQuantity(resource, text);
  EXPECT_TRUE(v.ok()) << resource << ": '" << text << "'";
  return v.ok() ? scheduler::model::InBaseUnits(resource, static_cast<double>(*v)) : NAN;
}

// A count as a page or the CLI prints it ("4", or "1 of 2" pods: the first number).
double CountIn(const std::string& text) {
  std::smatch m;
  EXPECT_TRUE(std::regex_search(text, m, std::regex(R"(^\d+)"))) << "'" << text << "'";
  return m.empty() ? NAN : std::stod(m[0]);
}

// The `index`th table the CLI printed (tables apart by a blank line), its rows as column → cell
// (columns apart by two spaces or more).
std::vector<std::map<std::string, std::string>> CliTable(const std::string& out, size_t index) {
  std::vector<std::map<std::string, std::string>> rows;
  std::vector<std::string> header;
  std::istringstream lines(out);
  size_t table = 0;
  bool in_table = false;
  const std::regex gap(R"( {2,})");
  for (std::string line; std::getline(lines, line);) {
    if (line.empty()) {
      table += in_table ? 1 : 0;
      in_table = false;
      continue;
    }
    in_table = true;
    if (table != index) continue;
    std::vector<std::string> cells(std::sregex_token_iterator(line.begin(), line.end(), gap, -1),
                                   {});
    if (header.empty()) {
      header = cells;
      continue;
    }
    EXPECT_EQ(cells.size(), header.size()) << line;
    std::map<std::string, std::string>& row = rows.emplace_back();
    for (size_t i = 0; i < cells.size() && i < header.size(); ++i) row[header[i]] = cells[i];
  }
  EXPECT_FALSE(rows.empty()) << "no table " << index << " in:\n" << out;
  return rows;
}

class ConsoleTruthTest : public ScenarioTest {
 protected:
  void SetUp() override {
    if (::access(kChromium, X_OK) != 0) GTEST_SKIP() << "no " << kChromium << " (tools/bootstrap)";
    ScenarioTest::SetUp();
  }

  std::string Base() const { return harness_->extender().console_url(); }

  void OpenBrowser() {
    common::Result<std::unique_ptr<Browser>> b =
        Browser::Start(kChromium, ::testing::TempDir() + "/chromium-truth");
    ASSERT_TRUE(b.ok()) << b.error().message;
    browser_ = std::move(*b);
    // The sign-in link: the token is kept for the session, the address bar cleaned.
    ASSERT_TRUE(browser_->Navigate(Base() + "/#/dashboard?token=t-admin").ok());
    ASSERT_TRUE(WaitRendered("#/dashboard")) << Dom();
  }

  // Waits until the console finished a render of `hash` (successful or not).
  bool WaitRendered(const std::string& hash) {
    common::Result<rapidjson::Document> r = browser_->Evaluate(
        "new Promise(ok => { const t0 = Date.now(); (function wait() {"
        " if (document.body.dataset.route === '" +
        hash +
        "') ok(true);"
        " else if (Date.now() - t0 > 15000) ok(false); else setTimeout(wait, 20); })(); })");
    return r.ok() && r->IsBool() && r->GetBool();
  }

  // Shows `route` ("dashboard", "tasks?team=a", ...) freshly rendered.
  void Show(const std::string& route) {
    common::Status shown = ShowConsoleRoute(*browser_, route);
    ASSERT_TRUE(shown.ok()) << shown.error().message;
  }

  std::string Dom() { return browser_->Text("document.body.outerHTML.slice(0, 3000)"); }

  // The rows matching `selector`, each as its cells' text.
  std::vector<std::vector<std::string>> Rows(const std::string& selector) {
    common::Result<rapidjson::Document> v = browser_->Evaluate(RowsOf(selector));
    std::vector<std::vector<std::string>> rows;
    if (!v.ok() || !v->IsArray()) {
      ADD_FAILURE() << selector << ": " << (v.ok() ? Json(*v) : v.error().message);
      return rows;
    }
    for (const auto& row : v->GetArray()) {
      rows.emplace_back();
      for (const auto& cell : row.GetArray()) rows.back().push_back(cell.GetString());
    }
    return rows;
  }
  std::vector<std::string> Row(const std::string& selector) {
    std::vector<std::vector<std::string>> rows = Rows(selector);
    EXPECT_EQ(rows.size(), 1u) << selector << "\n" << Dom();
    return rows.empty() ? std::vector<std::string>{} : rows[0];
  }
  // The header texts of the table `selector`.
  std::vector<std::string> Headers(const std::string& table) { return Row(table + " thead tr"); }
  // The cell of `row` under the column titled `title` of `table`.
  std::string Cell(const std::string& table, const std::vector<std::string>& row,
                   const std::string& title) {
    const std::vector<std::string> headers = Headers(table);
    for (size_t i = 0; i < headers.size() && i < row.size(); ++i) {
      if (headers[i] == title) return row[i];
    }
    ADD_FAILURE() << "no column '" << title << "' in " << table;
    return "";
  }

  // A page that rendered without a console message, exception or failed request.
  void ExpectClean(const std::string& what) {
    for (const std::string& m : browser_->Messages()) ADD_FAILURE() << what << ": " << m;
    browser_->ClearMessages();
    EXPECT_EQ(browser_->Text("document.body.dataset.failedRequests || ''"), "") << what;
    EXPECT_EQ(browser_->Text("document.body.dataset.scriptErrors || ''"), "") << what;
  }

  // GET `target` of the admin API, parsed.
  rapidjson::Document Api(const std::string& target) {
    rapidjson::Document doc;
    common::Result<common::testing::HttpReply> r = h().extender().Admin(target, "t-admin");
    EXPECT_TRUE(r.ok() && r->status == 200)
        << target << ": " << (r.ok() ? r->body : r.error().message);
    if (r.ok()) doc.Parse(r->body.c_str());
    if (!doc.IsObject()) doc.SetObject();
    return doc;
  }

  // Waits (bounded) until the usage report holds some of team c's cpu-hours: history samples
  // every second in this test.
  bool WaitForReport() {
    for (int i = 0; i < 100; ++i) {
      common::Result<common::testing::HttpReply> r =
          h().extender().Admin("/api/v1/reports/usage.csv", "t-admin");
      std::smatch m;
      if (r.ok() &&
          std::regex_search(r->body, m,
                            std::regex(R"(,c,ml\.g5\.12xlarge,cpu,cores,([0-9.]+),)")) &&
          std::stod(m[1]) >= 0.01) {
        return true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));  // bounded: 10 s
    }
    return false;
  }

  // After failures a check provoked: the console's count of them starts again.
  void ForgetFailures() {
    browser_->ClearMessages();
    EXPECT_EQ(browser_->Text("delete document.body.dataset.failedRequests; 'ok'"), "ok");
  }

  metrics::testing::Exposition Scrape() {
    common::Result<metrics::testing::Exposition> m = h().extender().ScrapeMetrics();
    EXPECT_TRUE(m.ok()) << (m.ok() ? "" : m.error().message);
    return m.ok() ? *m : metrics::testing::Exposition{};
  }
  static std::string Int(std::optional<double> v) {
    return v ? std::to_string(std::llround(*v)) : "(no series)";
  }

  // The scenario: c and e use their own g5 quota; d's gang waits for the pool; d asks for p5,
  // where it has no quota; e asks for more than a g5 node has; a borrows 4 of b's p5 GPUs and b
  // takes them back — the evictions are accepted and the victims still terminate when it ends.
  void BuildScenario() {
    HarnessOptions options;
    options.config["policy.yaml"] = kPolicy;
    options.extender_args = {"--history-interval=1s"};  // a usage report within the test's time
    StartHarness(std::move(options));
    // The admin's console token (audience taskgov) for the browser and the CLI's --console-token,
    // and their API-server token for the kubeconfig, as deployed (issue 36, item 6).
    h().api().SetAccessReviews(
        {{"t-admin", "admin", {}, {"taskgov"}},
         {"k-admin", "admin", {}, {scheduler::kube::testing::kApiServerAudience}}},
        {{"admin", "get", "taskgov.io", "workloads", ""}});
    std::vector<PodSpec> pods;
    for (int i = 0; i < 4; ++i)
      pods.push_back(GpuPod("c", "c-" + std::to_string(i), 1, "training", kG5));
    for (int i = 0; i < 2; ++i)
      pods.push_back(GpuPod("e", "e-" + std::to_string(i), 1, "training", kG5));
    SubmitAll(pods);
    ASSERT_TRUE(h().RunUntil([&] { return Running("c", kG5) == 4 && Running("e", kG5) == 2; }, 5));
    std::vector<PodSpec> gang;
    for (int i = 0; i < 2; ++i) {
      PodSpec spec = GpuPod("d", "d-gang-" + std::to_string(i), 2, "training", kG5);
      spec.labels["kueue.x-k8s.io/pod-group-name"] = "d-gang";
      spec.annotations["kueue.x-k8s.io/pod-group-total-count"] = "2";
      gang.push_back(spec);
    }
    SubmitAll(gang);
    SubmitAll({GpuPod("d", "d-p5", 1, "training", kP5), GpuPod("e", "e-big", 5, "training", kG5)});
    pods.clear();
    for (int i = 0; i < 12; ++i) pods.push_back(GpuPod("a", "a-" + std::to_string(i)));
    SubmitAll(pods);
    ASSERT_TRUE(h().RunUntil([&] { return Running("a") == 12; }, 5));
    (void)h().Step();  // the kubelet starts them
    pods.clear();
    for (int i = 0; i < 8; ++i) {
      PodSpec spec = GpuPod("b", "b-" + std::to_string(i), 1, "inference");
      spec.priority = 1000;
      pods.push_back(spec);
    }
    SubmitAll(pods);
    (void)h().Step();
    ASSERT_TRUE(
        h().api().WaitFor([&] { return h().Evictions().size() == 4; }, std::chrono::seconds(10)))
        << h().Logs();
    ASSERT_TRUE(h().Sync().ok());
  }

  // Item 1: a's preempted pods are a's (the victims), as /metrics counts them.
  void PreemptedAreTheVictims() {
    Show("dashboard");
    const metrics::testing::Exposition m = Scrape();
    double total = 0;
    for (const auto& s : m.All("taskgov_preemptions_total")) {
      if (s.labels.at("victim_team") == "a") total += s.value;
    }
    EXPECT_EQ(total, 4);
    const std::vector<std::string> a = Row("table.teams tbody tr[data-team='a']");
    const std::vector<std::string> b = Row("table.teams tbody tr[data-team='b']");
    EXPECT_EQ(Cell("table.teams", a, "Preempted now"),
              Int(m.Value("taskgov_pods", {{"team", "a"}, {"state", "preempted"}})));
    EXPECT_EQ(Cell("table.teams", a, "Preempted now"), "4");
    EXPECT_EQ(Cell("table.teams", a, "Preempted (total)"), Int(total));
    EXPECT_EQ(Cell("table.teams", b, "Preempted now"), "0");
    EXPECT_EQ(Cell("table.teams", b, "Preempted (total)"), "0");
    ExpectClean("dashboard, preempted");
  }

  // Item 2: capacity no team has quota on is capacity too: the trn1 node's 16 Neuron devices.
  void CapacityWithoutQuotaIsShown() {
    const rapidjson::Document cluster = Api("/api/v1/cluster");
    const rapidjson::Value* trn1 = nullptr;
    for (const auto& f : cluster["flavors"].GetArray()) {
      if (std::string(f["name"].GetString()) == kTrn1) trn1 = &f;
    }
    ASSERT_NE(trn1, nullptr) << Json(cluster);
    EXPECT_EQ((*trn1)["nodes"].GetInt(), 1);
    EXPECT_STREQ((*trn1)["allocatable"]["aws.amazon.com/neuron"].GetString(), "16");
    EXPECT_EQ((*trn1)["nominalQuota"].MemberCount(), 0u) << "no team has quota there";
    Show("dashboard");
    const std::string card = browser_->Text(
        "[...document.querySelectorAll('.card')].filter(c => c.querySelector('h4').textContent "
        "=== '" +
        std::string(kTrn1) + "').map(c => c.textContent).join('|')");
    EXPECT_NE(card.find("1 node"), std::string::npos) << card;
    EXPECT_NE(card.find("aws.amazon.com/neuron0 of 16 in use"), std::string::npos) << card;
    EXPECT_NE(card.find("no team has quota"), std::string::npos) << card;
  }

  // Item 3: d's pod selects ml.p5.48xlarge, where d has no quota: that is the whole truth.
  void TheSelectedInstanceTypeIsJudged() {
    const rapidjson::Document why = Api("/api/v1/workloads/" + Ns("d") + "/d-p5/explanation");
    EXPECT_STREQ(why["outlook"].GetString(), "NeverFits") << Json(why);
    const std::string summary = why["summary"].GetString();
    EXPECT_NE(summary.find("can never run as it is: d has no quota on ml.p5.48xlarge"),
              std::string::npos)
        << summary;
    Show("tasks/" + Ns("d") + "/d-p5");
    EXPECT_EQ(browser_->Text("document.getElementById('why').textContent"), summary);
    ExpectClean("task d-p5");
  }

  // Item 4: d's gang needs 4 GPUs, twice its nominal 2, while d uses none and nobody borrows on
  // ml.g5.12xlarge: every "To pass" is derived from the numbers beside it.
  void ToPassIsDerivedFromTheNumbers() {
    Show("tasks/" + Ns("d") + "/d-gang");
    const std::vector<std::vector<std::string>> rows = Rows("table.rules tr.fail");
    int quota_rows = 0;
    for (const std::vector<std::string>& row : rows) {
      ASSERT_EQ(row.size(), 4u);
      if (row[1] != "quota") continue;
      ++quota_rows;
      ExpectToPassFromFound(row[2], row[3]);
    }
    EXPECT_EQ(quota_rows, 2) << "within nominal and borrowing\n" << Dom();
    const std::string text = browser_->Text("document.getElementById('rules').textContent");
    EXPECT_EQ(text.find("d must use"), std::string::npos) << text;
    EXPECT_EQ(text.find("borrowed pods"), std::string::npos) << text;
    ExpectClean("task d-gang");
  }

  // Item 5: one unit for shares, explained once: the fraction /metrics and the API report, with
  // three decimals, on the Dashboard and in explanations alike.
  void SharesHaveOneUnit() {
    Show("tasks/" + Ns("d") + "/d-gang");
    const std::string rules = browser_->Text("document.getElementById('rules').textContent");
    EXPECT_EQ(rules.find("per mille"), std::string::npos) << rules;
    EXPECT_TRUE(std::regex_search(rules, std::regex(R"(d's share after admission: \d+\.\d{3}\))")))
        << rules;
    Show("dashboard");
    const rapidjson::Document teams = Api("/api/v1/teams");
    const metrics::testing::Exposition m = Scrape();
    int shares = 0;
    for (const auto& team : teams["items"].GetArray()) {
      const std::string name = team["name"].GetString();
      for (const auto& q : team["quotas"].GetArray()) {
        if (std::string(q["resource"].GetString()) != kGpu) continue;
        const std::string flavor = q["flavor"].GetString();
        const double share = team["weightedShare"][flavor.c_str()].GetDouble();
        EXPECT_EQ(share, *m.Value("taskgov_weighted_share", {{"team", name}, {"flavor", flavor}}))
            << name;
        char text[32];
        snprintf(text, sizeof(text), "%.3f", share);
        const std::vector<std::string> row =
            Row("table.alloc tbody tr[data-team='" + name + "'][data-resource='nvidia.com/gpu']");
        EXPECT_EQ(Cell("table.alloc", row, "Share"), text) << name;
        ++shares;
      }
    }
    EXPECT_EQ(shares, 5);
    const std::string means = browser_->Text("document.getElementById('share-means').textContent");
    EXPECT_NE(means.find("divided by its fair-share weight"), std::string::npos) << means;
  }

  // Item 6: every waiting task says why in the list, as its own page does — also those
  // kube-scheduler never sent to the extender (no node has room: no refusal to quote).
  void EveryWaitingTaskSaysWhy() {
    Show("tasks?state=Pending");
    const std::vector<std::vector<std::string>> rows = Rows("table.tasks tbody tr");
    EXPECT_EQ(rows.size(), 7u);  // d's gang and its p5 pod, e-big, b's four pods waiting for room
    for (const std::vector<std::string>& row : rows) {
      EXPECT_FALSE(Cell("table.tasks", row, "Why it waits").empty()) << row[0];
    }
    const std::vector<std::string> big =
        Row("table.tasks tbody tr[data-name='" + Ns("e") + "/e-big']");
    const rapidjson::Document why = Api("/api/v1/workloads/" + Ns("e") + "/e-big/explanation");
    EXPECT_EQ(Cell("table.tasks", big, "Why it waits"), why["summary"].GetString());
    ExpectClean("tasks, pending");
  }

  // Item 7: the usage report gives memory in GiB-hours, and the Dashboard offers it.
  void TheUsageReportIsInUnitsAndOffered() {
    ASSERT_TRUE(WaitForReport());
    Show("dashboard");
    EXPECT_EQ(browser_->Text("document.getElementById('usage-report').textContent"),
              "Download the usage report (CSV)");
    const std::string csv = browser_->Text("downloadUsageReport()");
    ExpectClean("usage report");
    std::istringstream lines(csv);
    std::string line;
    std::getline(lines, line);
    EXPECT_EQ(line, "day,team,flavor,resource,unit,allocated_hours,used_hours,borrowed_hours");
    std::map<std::string, double> c_allocated;  // team c's, by resource
    while (std::getline(lines, line)) {
      std::vector<std::string> f;
      std::stringstream fields(line);
      for (std::string x; std::getline(fields, x, ',');) f.push_back(x);
      ASSERT_EQ(f.size(), 8u) << line;
      EXPECT_EQ(f[4], f[3] == "memory" ? "GiB" : f[3] == "cpu" ? "cores" : "devices") << line;
      if (f[1] == "c") c_allocated[f[3]] = std::stod(f[5]);
    }
    // c's nominal quota: 48 cores and 192 GiB for the same time: 4 GiB-hours per core-hour. The
    // report prints 3 decimals (±0.0005 each), so over the seconds this test runs the ratio of
    // the printed hours is 4 within 5 × 0.0005 / (the printed core-hours).
    ASSERT_GT(c_allocated["cpu"], 0) << csv;
    EXPECT_NEAR(c_allocated["memory"] / c_allocated["cpu"], 4.0, 5 * 0.0005 / c_allocated["cpu"])
        << csv;
  }

  // Item 9: the instance-type filter filters the Teams table too; at 420 px nothing overflows.
  void TheFlavorFilterFiltersTeamsAndNarrowFits() {
    Show("dashboard?flavor=ml.p5.48xlarge");
    const std::vector<std::vector<std::string>> teams = Rows("table.teams tbody tr");
    // a and b have quota on ml.p5.48xlarge; d has none there but a pod waiting for it.
    ASSERT_EQ(teams.size(), 3u) << Dom();
    EXPECT_EQ(teams[0][0], "a");
    EXPECT_EQ(teams[1][0], "b");
    EXPECT_EQ(teams[2][0], "d");
    EXPECT_EQ(Cell("table.teams", teams[2], "Pending pods"), "1");
    // a runs only there: its pods on p5 are all its running pods.
    const rapidjson::Document a = Api("/api/v1/teams/a");
    EXPECT_EQ(Cell("table.teams", teams[0], "Running pods"),
              std::to_string(a["pods"]["running"].GetInt()));
    EXPECT_EQ(Cell("table.teams", teams[1], "Pending pods"), "4");
    Show("dashboard?flavor=ml.g5.12xlarge");
    const std::vector<std::vector<std::string>> g5 = Rows("table.teams tbody tr");
    ASSERT_EQ(g5.size(), 3u) << Dom();
    EXPECT_EQ(Cell("table.teams", g5[1], "Pending pods"), "2")
        << "d's gang; its p5 pod is not here";
    EXPECT_EQ(Cell("table.teams", g5[1], "Pending workloads"), "1");

    ASSERT_TRUE(browser_->SetViewport(420, 860).ok());
    for (const std::string& route : std::vector<std::string>{
             "dashboard", "tasks", "tasks/" + Ns("d") + "/d-gang", "policies"}) {
      Show(route);
      EXPECT_EQ(browser_->Text("String(document.documentElement.scrollWidth <= 420 ? 'fits' : "
                               "document.documentElement.scrollWidth + ' px wide')"),
                "fits")
          << route << " overflows a 420 px screen: "
          << browser_->Text(
                 "[...document.querySelectorAll('body *')].filter(e => "
                 "e.getBoundingClientRect().right > 420.5 && !e.closest('table')).slice(0, 6)"
                 ".map(e => e.tagName + '.' + e.getAttribute('class') + ' ' + "
                 "Math.round(e.getBoundingClientRect().right)).join(', ')");
    }
    ASSERT_TRUE(browser_->SetViewport(1366, 900).ok());
    ExpectClean("narrow");
  }

  // Item 15: waits and run times over the last hour, and the tasks that ended — as the
  // histograms count them. The victims finish terminating, one of c's pods succeeds, one of e's
  // fails.
  void WaitsRunTimesAndEndedTasksAreShown() {
    ASSERT_TRUE(h().RunUntil(
        [&] { return h().CountPods([](const PodView& p) { return p.terminating; }) == 0; }, 10));
    ASSERT_TRUE(h().Finish("c-0").ok());
    ASSERT_TRUE(h().api().SetPodPhase(Ns("e"), "e-0", "Failed"));
    (void)h().Step();
    ASSERT_TRUE(h().Sync().ok());
    const rapidjson::Document ended = Api("/api/v1/history/tasks");
    std::map<std::string, std::string> outcome;  // name → outcome (reason)
    for (const auto& x : ended["items"].GetArray()) {
      outcome[x["name"].GetString()] =
          std::string(x["outcome"].GetString()) + " (" + x["reason"].GetString() + ")";
    }
    EXPECT_EQ(outcome["c-0"], "Succeeded ()") << Json(ended);
    EXPECT_EQ(outcome["e-0"], "Failed ()");
    int reclaimed = 0;
    for (const auto& [name, what] : outcome) reclaimed += what == "Preempted (Reclaim)" ? 1 : 0;
    EXPECT_EQ(reclaimed, 4) << Json(ended);

    const rapidjson::Document teams = Api("/api/v1/teams");
    const metrics::testing::Exposition m = Scrape();
    auto summed = [&](const std::string& sample, const std::string& team) {
      double sum = 0;
      for (const auto& s : m.All(sample)) sum += s.labels.at("team") == team ? s.value : 0;
      return sum;
    };
    Show("dashboard");
    for (const auto& team : teams["items"].GetArray()) {
      const std::string name = team["name"].GetString();
      const rapidjson::Value& win = team["window"];
      EXPECT_EQ(win["boundPods"].GetDouble(), summed("taskgov_pod_wait_seconds_count", name))
          << name;
      EXPECT_NEAR(win["waitSecondsSum"].GetDouble(), summed("taskgov_pod_wait_seconds_sum", name),
                  1e-6)
          << name;
      EXPECT_EQ(win["endedPods"].GetDouble(), summed("taskgov_pod_run_seconds_count", name))
          << name;
      EXPECT_NEAR(win["runSecondsSum"].GetDouble(), summed("taskgov_pod_run_seconds_sum", name),
                  1e-6)
          << name;
      const std::vector<std::string> row = Row("table.window tbody tr[data-team='" + name + "']");
      EXPECT_EQ(Cell("table.window", row, "Pods started"),
                std::to_string(win["boundPods"].GetInt()));
      for (const char* o : {"Succeeded", "Failed", "Preempted"}) {
        EXPECT_EQ(Cell("table.window", row, o), std::to_string(win["ended"][o].GetInt()))
            << name << " " << o;
      }
    }
    EXPECT_EQ(Cell("table.window", Row("table.window tbody tr[data-team='a']"), "Preempted"), "4");
    Show("tasks");
    EXPECT_EQ(browser_->Text("document.querySelectorAll('table.ended tbody "
                             "tr[data-outcome=\"Preempted\"]').length"),
              "4");
    ExpectClean("history");
  }

  // Item 8: a page that cannot be shown says so in place of the previous page, never under it.
  void BadRoutesReplaceThePageAndStaleIsSaid() {
    const std::string main = "document.getElementById('main').textContent";
    const std::string banner = "document.getElementById('errors').textContent";
    for (const auto& [route, says] : std::vector<std::pair<std::string, std::string>>{
             {"tasks?state=Bogus", "query parameter 'state' must be"},
             {"nope", "No such page"},
             {"tasks/" + Ns("a") + "/nothere", "no workload " + Ns("a") + "/nothere"}}) {
      Show("dashboard");
      Show(route);
      const std::string text = browser_->Text(main);
      EXPECT_NE(text.find(says), std::string::npos) << route << ": " << text;
      EXPECT_EQ(text.find("Allocation"), std::string::npos) << route << ": the dashboard stayed";
      browser_->ClearMessages();  // the 400 and 404 replies are logged as failed loads
    }
    ForgetFailures();
    Show("dashboard?team=zzz");
    EXPECT_NE(browser_->Text(main).find("No team zzz"), std::string::npos) << browser_->Text(main);
    EXPECT_EQ(browser_->Text("document.querySelectorAll('table.teams tbody tr').length"), "0");
    Show("dashboard");  // a good page clears what the bad ones said
    EXPECT_EQ(browser_->Text(banner), "");
    // No page prints a literal null or undefined where it has nothing to say.
    for (const std::string& route : std::vector<std::string>{
             "dashboard", "tasks", "tasks?team=a", "tasks/" + Ns("d") + "/d-gang", "policies"}) {
      Show(route);
      // innerText: the text as shown, block by block (textContent runs "null" into its neighbour).
      const std::string text = browser_->Text("document.getElementById('main').innerText");
      EXPECT_FALSE(std::regex_search(text, std::regex(R"(\bnull\b|\bundefined\b)")))
          << route << ": " << text;
      ExpectClean(route);
    }

    // The extender goes away: the numbers stay, marked as stale, with the time they are from.
    Show("dashboard");
    const std::string updated = browser_->Text("document.getElementById('updated').textContent");
    ASSERT_TRUE(h().extender().Stop(SIGKILL).ok());
    Show("dashboard");
    EXPECT_EQ(browser_->Text("document.getElementById('main').dataset.stale || ''"), "true");
    const std::string said = browser_->Text(banner);
    EXPECT_NE(said.find("not answering"), std::string::npos) << said;
    EXPECT_NE(said.find(updated.substr(updated.find(' ') + 1)), std::string::npos)
        << said << " does not say when the numbers are from (" << updated << ")";
    EXPECT_NE(browser_->Text(main).find("Allocation"), std::string::npos) << "the numbers went";
    browser_->ClearMessages();
  }

  // ---- one scenario, the same numbers everywhere ----

  // The CLI pointed at this cluster as a user points it: a kubeconfig naming the API server
  // with the admin's API-server token, and the console token, which the CLI passes to the
  // console through the API server's service proxy.
  void PointTheCli() {
    h().api().SetServiceProxy("taskgov-system", "taskgov-console", 9091, Base());
    kubeconfig_ = ::testing::TempDir() + "/kubeconfig-truth";
    std::string config = scheduler::kube::testing::KubeconfigFor(h().api().url());
    const size_t user = config.find("user: {}");
    ASSERT_NE(user, std::string::npos) << config;
    config.replace(user, 8, "user: {token: k-admin}");
    std::ofstream(kubeconfig_) << config;
  }
  cli::testing::CliRun Cli(std::vector<std::string> args) {
    args.push_back("--kubeconfig=" + kubeconfig_);
    args.push_back("--console-token=t-admin");
    cli::testing::CliRun run = cli::testing::CliFixture::RunOffline(args);
    EXPECT_EQ(run.code, 0) << args[0] << " " << args[1] << ": " << run.err;
    return run;
  }

  // The row's cells by the column titles of `table`.
  std::vector<std::map<std::string, std::string>> NamedRows(const std::string& table) {
    const std::vector<std::string> headers = Headers(table);
    std::vector<std::map<std::string, std::string>> rows;
    for (const std::vector<std::string>& cells : Rows(table + " tbody tr")) {
      std::map<std::string, std::string>& row = rows.emplace_back();
      for (size_t i = 0; i < cells.size() && i < headers.size(); ++i) row[headers[i]] = cells[i];
    }
    return rows;
  }

  // The pods evicted, "ns/name" (the eviction bodies the API server accepted).
  std::set<std::string> Evicted() {
    std::set<std::string> evicted;
    for (const std::string& body : h().Evictions()) {
      rapidjson::Document e;
      e.Parse(body.c_str());
      EXPECT_TRUE(e.IsObject() && e.HasMember("metadata")) << body;
      if (!e.IsObject() || !e.HasMember("metadata")) continue;
      evicted.insert(std::string(e["metadata"]["namespace"].GetString()) + "/" +
                     e["metadata"]["name"].GetString());
    }
    return evicted;
  }

  // What every surface must show: the cluster's pods (the API server's — waiting, bound, being
  // deleted, evicted), the engine's workloads (/api/v1/workloads) and quota lines
  // (/api/v1/teams), every team's and state's, zeros included.
  Numbers Truth() {
    Numbers n;
    for (const char* team : kTeams) {
      for (const char* s : kPodStates) n[Key({"pods", s, team})] = 0;
      for (const char* s : kWorkloadStates) n[Key({"workloads", s, team})] = 0;
      n[Key({"workloads", "holding-quota", team})] = 0;
    }
    const std::set<std::string> evicted = Evicted();
    for (const PodView& p : h().Pods()) {
      if (p.ended()) continue;
      const std::string state = p.node.empty()         ? "pending"
                                : !p.terminating       ? "running"
                                : evicted.count(p.key) ? "preempted"
                                                       : "terminating";
      ++n[Key({"pods", state, p.ns.substr(Ns("").size())})];
    }
    for (const char* team : kTeams) {
      n[Key({"pods", "leaving", team})] =
          n[Key({"pods", "preempted", team})] + n[Key({"pods", "terminating", team})];
    }
    const rapidjson::Document workloads = Api("/api/v1/workloads?limit=1000");
    for (const auto& w : workloads["items"].GetArray()) {
      const std::string team = w["team"].GetString(), state = w["state"].GetString();
      ++n[Key({"workloads", state, team})];
      if (state != "Pending") ++n[Key({"workloads", "holding-quota", team})];
    }
    const rapidjson::Document teams = Api("/api/v1/teams");
    for (const auto& t : teams["items"].GetArray()) {
      for (const auto& q : t["quotas"].GetArray()) {
        const std::string resource = q["resource"].GetString();
        for (const char* field : {"usage", "borrowed", "lent"}) {
          n[Key({field, t["name"].GetString(), q["flavor"].GetString(), resource})] =
              BaseUnits(resource, q[field].GetString());
        }
      }
    }
    return n;
  }

  Numbers FromTeamsApi() {
    Numbers n;
    const rapidjson::Document teams = Api("/api/v1/teams");
    for (const auto& t : teams["items"].GetArray()) {
      const std::string team = t["name"].GetString();
      auto add = [&](const char* object, const char* field, const std::string& key) {
        const rapidjson::Value& o = t[object];
        if (o.HasMember(field) && o[field].IsNumber()) n[key] = o[field].GetDouble();
      };
      for (const char* s : kPodStates) add("pods", s, Key({"pods", s, team}));
      add("workloads", "pending", Key({"workloads", "Pending", team}));
      add("workloads", "admitted", Key({"workloads", "holding-quota", team}));
    }
    return n;
  }

  Numbers FromMetrics() {
    Numbers n;
    const metrics::testing::Exposition m = Scrape();
    for (const auto& s : m.All("taskgov_pods")) {
      n[Key({"pods", s.labels.at("state"), s.labels.at("team")})] = s.value;
    }
    for (const auto& s : m.All("taskgov_workloads")) {
      const std::string& state = s.labels.at("state");
      EXPECT_TRUE(state == "pending" || state == "admitted") << state;
      n[Key({"workloads", state == "pending" ? "Pending" : "holding-quota", s.labels.at("team")})] =
          s.value;
    }
    for (const char* field : {"usage", "borrowed", "lent"}) {
      for (const auto& s : m.All(std::string("taskgov_quota_") + field)) {
        n[Key({field, s.labels.at("team"), s.labels.at("flavor"), s.labels.at("resource")})] =
            s.value;
      }
    }
    return n;
  }

  Numbers FromDashboard() {
    Show("dashboard");
    Numbers n;
    for (auto& row : NamedRows("table.teams")) {
      const std::string& team = row["Team"];
      n[Key({"pods", "running", team})] = CountIn(row["Running pods"]);
      n[Key({"pods", "pending", team})] = CountIn(row["Pending pods"]);
      n[Key({"workloads", "Pending", team})] = CountIn(row["Pending workloads"]);
      n[Key({"pods", "preempted", team})] = CountIn(row["Preempted now"]);
    }
    for (auto& row : NamedRows("table.alloc")) {
      const std::string& resource = row["Resource"];
      for (auto [title, field] : {std::pair{"Used", "usage"}, std::pair{"Borrowed", "borrowed"},
                                  std::pair{"Lent", "lent"}}) {
        n[Key({field, row["Team"], row["Instance type"], resource})] =
            BaseUnits(resource, row[title]);
      }
    }
    ExpectClean("dashboard");
    return n;
  }

  // The Tasks list: its workloads by team and state, and their pods — in this scenario a
  // workload's pods are all in its state (Terminating ones are leaving: preempted or
  // terminating).
  Numbers FromTasksList() {
    Show("tasks");
    Numbers n;
    const std::map<std::string, std::string> pods_of = {{"Pending", "pending"},
                                                        {"Admitted", "admitted"},
                                                        {"Running", "running"},
                                                        {"Terminating", "leaving"}};
    for (const char* team : kTeams) {
      for (const auto& [state, pods] : pods_of) {
        n[Key({"workloads", state, team})] = 0;
        n[Key({"pods", pods, team})] = 0;
      }
    }
    for (auto& row : NamedRows("table.tasks")) {
      const std::string& team = row["Team"];
      ++n[Key({"workloads", row["State"], team})];
      auto pods = pods_of.find(row["State"]);
      EXPECT_NE(pods, pods_of.end()) << row["State"];
      if (pods != pods_of.end()) n[Key({"pods", pods->second, team})] += CountIn(row["Pods"]);
    }
    ExpectClean("tasks");
    return n;
  }

  Numbers FromTopTeams() {
    const cli::testing::CliRun run = Cli({"top", "teams"});
    Numbers n;
    for (auto& row : CliTable(run.out, 0)) {
      const std::string& resource = row["RESOURCE"];
      for (auto [column, field] : {std::pair{"USE", "usage"}, std::pair{"BORROWED", "borrowed"},
                                   std::pair{"LENT", "lent"}}) {
        n[Key({field, row["TEAM"], row["INSTANCE-TYPE"], resource})] =
            BaseUnits(resource, row[column]);
      }
    }
    for (auto& row : CliTable(run.out, 1)) {
      n[Key({"pods", "running", row["TEAM"]})] = CountIn(row["RUNNING-PODS"]);
      n[Key({"workloads", "Pending", row["TEAM"]})] = CountIn(row["WAITING-WORKLOADS"]);
      n[Key({"pods", "pending", row["TEAM"]})] = CountIn(row["WAITING-PODS"]);
    }
    return n;
  }

  // job list -A -o wide: a row per workload, with its state and its pods running ("r/n").
  Numbers FromJobList() {
    const cli::testing::CliRun run = Cli({"job", "list", "-A", "-o", "wide"});
    Numbers n;
    for (const char* team : kTeams) {
      for (const char* s : kWorkloadStates) n[Key({"workloads", s, team})] = 0;
      n[Key({"pods", "running", team})] = 0;
    }
    for (auto& row : CliTable(run.out, 0)) {
      ++n[Key({"workloads", row["STATE"], row["TEAM"]})];
      n[Key({"pods", "running", row["TEAM"]})] += CountIn(row["RUNNING"]);
    }
    return n;
  }

  // Every number `surface` shows is the truth's, and what it counts it counts for every team
  // (and quota line).
  static void ExpectTruth(const std::string& surface, const Numbers& shown, const Numbers& truth) {
    std::set<std::string> kinds;  // "pods running", "workloads Pending", "usage", ...
    for (const auto& [key, value] : shown) {
      kinds.insert(KindOf(key));
      auto t = truth.find(key);
      if (t == truth.end()) {
        ADD_FAILURE() << surface << " shows '" << key << "' = " << value << ", nothing else does";
      } else {
        EXPECT_EQ(value, t->second) << surface << " shows '" << key << "' = " << value
                                    << "; the cluster and the engine: " << t->second;
      }
    }
    for (const auto& [key, value] : truth) {
      EXPECT_TRUE(!kinds.count(KindOf(key)) || shown.count(key))
          << surface << " does not show '" << key << "' (" << value << ")";
    }
  }
  // "pods running a" → "pods running"; "usage a ml.p5.48xlarge cpu" → "usage".
  static std::string KindOf(const std::string& key) {
    const size_t first = key.find(' ');
    if (key.starts_with("pods ") || key.starts_with("workloads ")) {
      return key.substr(0, key.find(' ', first + 1));
    }
    return key.substr(0, first);
  }

  std::string kubeconfig_;

  std::unique_ptr<Browser> browser_;
};

TEST_F(ConsoleTruthTest, EveryPageAgreesWithTheApiAndTheMetrics) {
  ASSERT_NO_FATAL_FAILURE(BuildScenario());
  ASSERT_NO_FATAL_FAILURE(OpenBrowser());
  ExpectClean("dashboard");
  ASSERT_NO_FATAL_FAILURE(PreemptedAreTheVictims());
  ASSERT_NO_FATAL_FAILURE(CapacityWithoutQuotaIsShown());
  ASSERT_NO_FATAL_FAILURE(TheSelectedInstanceTypeIsJudged());
  ASSERT_NO_FATAL_FAILURE(ToPassIsDerivedFromTheNumbers());
  ASSERT_NO_FATAL_FAILURE(SharesHaveOneUnit());
  ASSERT_NO_FATAL_FAILURE(EveryWaitingTaskSaysWhy());
  ASSERT_NO_FATAL_FAILURE(TheUsageReportIsInUnitsAndOffered());
  ASSERT_NO_FATAL_FAILURE(TheFlavorFilterFiltersTeamsAndNarrowFits());
  ASSERT_NO_FATAL_FAILURE(WaitsRunTimesAndEndedTasksAreShown());
  ASSERT_NO_FATAL_FAILURE(BadRoutesReplaceThePageAndStaleIsSaid());
}

// Issue 38's consistency test: one scenario with borrowing, a reclaim under way (its victims
// preempted, terminating), a waiting gang and waiting lone pods; every number the Dashboard, the
// Tasks list, `taskgov top teams`, `taskgov job list -A`, /api/v1/teams and /metrics show for a
// team and a state is the cluster's and the engine's.
TEST_F(ConsoleTruthTest, EveryNumberOfATeamAndStateIsTheSameEverywhere) {
  ASSERT_NO_FATAL_FAILURE(BuildScenario());
  ASSERT_NO_FATAL_FAILURE(OpenBrowser());
  ASSERT_NO_FATAL_FAILURE(PointTheCli());
  const Numbers truth = Truth();
  // The scenario (not an agreement of zeros): a runs 8 and has 4 preempted, still charged — it
  // borrows 4 of b's GPUs until they are gone; b runs 4 and waits for 4; d's gang (2 pods) and
  // its p5 pod wait, and e's pod too big for a node.
  for (const auto& [key, value] :
       std::vector<std::pair<std::string, double>>{{"pods running a", 8},
                                                   {"pods preempted a", 4},
                                                   {"pods running b", 4},
                                                   {"pods pending b", 4},
                                                   {"pods pending d", 3},
                                                   {"workloads Pending d", 2},
                                                   {"pods pending e", 1},
                                                   {"workloads Terminating a", 4},
                                                   {"workloads holding-quota a", 12},
                                                   {"usage a ml.p5.48xlarge nvidia.com/gpu", 12},
                                                   {"borrowed a ml.p5.48xlarge nvidia.com/gpu", 4},
                                                   {"lent b ml.p5.48xlarge nvidia.com/gpu", 4}}) {
    EXPECT_EQ(truth.at(key), value) << key;
  }
  ExpectTruth("/api/v1/teams", FromTeamsApi(), truth);
  ExpectTruth("/metrics", FromMetrics(), truth);
  ExpectTruth("the Dashboard", FromDashboard(), truth);
  ExpectTruth("the Tasks list", FromTasksList(), truth);
  ExpectTruth("taskgov top teams", FromTopTeams(), truth);
  ExpectTruth("taskgov job list -A", FromJobList(), truth);
}

}  // namespace
}  // namespace taskgov::e2e
