// tools/demo: the task-governance story, told step by step, through the real taskgov-extender
// on the fake API server's sample cluster (issue 9): borrowing idle quota, reclaiming it,
// preemption within a team, fair share of idle capacity, task ranking, and gangs admitted and
// reclaimed whole, with taskgov's own
// refusal reasons and eviction notes quoted, and a per-team table at the end; then the taskgov
// CLI against the same API server: an admin's allocation and why a data scientist's job waits. The
// demo plays kube-scheduler, the kubelet and the job controller (e2e/harness.h). Every claim the
// narration makes is checked; the exit status is 0 only if all of them held.

#include <signal.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <optional>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <fstream>
#include <sstream>

#include "e2e/harness.h"
#include "extender/cli/apply.h"
#include "extender/cli/owned_policy.h"
#include "extender/cli/take_over.h"
#include "extender/cli/testing/cli_fixture.h"
#include "metrics/testing/exposition.h"
#include "scheduler/kube/testing/fake_apiserver.h"

namespace taskgov::e2e {
namespace {

using std::chrono::milliseconds;
using SteadyClock = std::chrono::steady_clock;

constexpr char kP5[] = "ml.p5.48xlarge";
constexpr char kG5[] = "ml.g5.12xlarge";
constexpr char kGpu[] = "nvidia.com/gpu";
constexpr int kGraceSeconds = 120;

// The demo's policy, in taskgov's native schema (config/README.md). It is sized for the sample
// cluster: 16 GPUs on ml.p5.48xlarge, 8 on ml.g5.12xlarge.
constexpr char kPolicy[] = R"(apiVersion: taskgov.io/v1
kind: TaskGovernancePolicy
metadata: {name: demo}
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

struct QuotaRow {
  std::string team;
  std::string flavor;
  int nominal;
  int borrow_limit;
};
const std::vector<QuotaRow> kQuotas = {
    {"a", kP5, 8, 4}, {"b", kP5, 8, 8}, {"c", kG5, 4, 0}, {"d", kG5, 2, 4}, {"e", kG5, 2, 4},
};

std::string Ns(const std::string& team) { return "hyperpod-ns-" + team; }
std::string Short(const std::string& key) { return key.substr(key.find('/') + 1); }

PodSpec Pod(const std::string& team, const std::string& name, const std::string& priority_class,
            const std::string& flavor) {
  PodSpec spec;
  spec.ns = Ns(team);
  spec.name = name;
  spec.requests[kGpu] = 1;
  spec.priority_class = priority_class;
  spec.node_selector[kInstanceTypeLabel] = flavor;
  // An evicted pod saves its checkpoint and exits within one step (30 s of simulated time),
  // well inside the 120 s grace period.
  spec.checkpoint_steps = 1;
  return spec;
}

std::string Field(const std::string& json, const std::string& key) {
  std::smatch m;
  if (std::regex_search(json, m, std::regex("\"" + key + "\":\"([^\"]*)\""))) return m[1].str();
  return "";
}

// The Event bodies with `reason` ("Preempted" on victims, "Preempting" on preemptors).
std::vector<std::string> WithReason(const std::vector<std::string>& events,
                                    const std::string& reason) {
  std::vector<std::string> out;
  for (const std::string& e : events) {
    if (Field(e, "reason") == reason) out.push_back(e);
  }
  return out;
}

// Ctrl-C, kill and a closed terminal: what ends the wait at the end of the demo.
sigset_t StopSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGHUP);
  return set;
}

// kPolicy in the CLI's key (taskgov-cli.yaml), as `taskgov policy take-over` renders it: the same
// policy, which `taskgov quota` and `taskgov policy set` then change. "" if it cannot be (a bug:
// the demo's first check fails).
std::string DemoPolicyKey() {
  const std::vector<config::SourceFile> files = {{"policy.yaml", kPolicy}};
  common::Result<cli::TakeOver> moved =
      cli::TakeOverPolicy(files, cli::DecodeAll(files), cli::OwnedPolicy{});
  if (!moved.ok()) return "";
  std::string key = cli::RenderOwned(moved->owned);
  const std::vector<config::SourceFile> after = {{std::string(cli::kOwnedKey), key}};
  return cli::PolicyDifference(files, after).empty() ? key : "";
}

class Demo {
 public:
  // `table_rows`: also write every table row to stderr for a program to read (demo_test).
  // `wait`: at the end, keep the extender and its console up until Ctrl-C.
  Demo(const std::string& binary, bool table_rows, bool wait)
      : table_rows_(table_rows), wait_(wait) {
    HarnessOptions options;
    options.extender_binary = binary;
    // The console on loopback without sign-in, for the person running the demo (in a cluster
    // it asks for a token: --console-auth=token).
    options.extender_args = {"--console-auth=none"};
    // The policy in the CLI's key, as deploy/base ships it: taskgov quota and policy set change
    // it from the first day (and the extender reads the same key).
    options.config[std::string(cli::kOwnedKey)] = policy_key_;
    options.console_tls = false;  // on loopback, for the browser tab it prints
    options.idle_wait = milliseconds(1200);
    // After the story the demo plays every pod, the CLI's too (Sandbox).
    options.play_every_pod = true;
    h_ = std::make_unique<Harness>(std::move(options));
  }

  int Run() {
    const auto start = SteadyClock::now();
    printf("taskgov demo: five teams share a GPU cluster\n");
    printf("=============================================\n\n");
    if (!Start()) return 1;
    BorrowIdleQuota();
    Reclaim();
    PreemptWithinTheTeam();
    FairShare();
    TaskRanking();
    Gangs();
    Table("Where everything stands");
    Terminal();
    PauseAndResume();
    const double seconds = std::chrono::duration<double>(SteadyClock::now() - start).count();
    if (failures_ == 0) {
      printf("\nAll %d checks held (%.1f s).\n", checks_, seconds);
    } else {
      printf("\n%d of %d checks did not hold (%.1f s). The extender's log:\n%s", failures_, checks_,
             seconds, h_->Logs().c_str());
    }
    if (wait_) Sandbox();
    printf("The extender stops.\n");
    h_->Stop();
    return failures_ == 0 ? 0 : 1;
  }

 private:
  // After the story, until Ctrl-C: a sandbox. The demo goes on playing kube-scheduler, the
  // kubelet and the Job controller (a step a second, simulated time running with the clock), and
  // copies the policy ConfigMap into the extender's config directory when it changes, as the
  // kubelet does; it prints what to paste to point the CLI at it, and what happens.
  void Sandbox() {
    const std::string console =
        "http://127.0.0.1:" + std::to_string(h_->extender().console_port()) + "/";
    const std::string metrics =
        "http://127.0.0.1:" + std::to_string(h_->extender().metrics_port()) + "/metrics";
    const char* workspace = std::getenv("BUILD_WORKSPACE_DIRECTORY");
    const std::string cli = (workspace != nullptr ? std::string(workspace) + "/" : "") +
                            "bazel-bin/extender/cli/taskgov";
    printf(
        "\nThe console shows where everything stands: %s\n"
        "   Dashboard: each team's quota, use, borrowing and lending; Tasks: every workload, and\n"
        "   for a waiting one why it waits, rule by rule; Policies: the allocations.\n"
        "   The metrics Prometheus scrapes: %s\n\n"
        "The demo goes on as a sandbox: it keeps playing kube-scheduler, the kubelet and the Job\n"
        "controller, and copies the policy ConfigMap into the extender's config directory as the\n"
        "kubelet does. Point the taskgov CLI at it from another terminal:\n"
        "   export KUBECONFIG=%s\n"
        "   alias taskgov=%s\n"
        "   taskgov quota list\n"
        "   taskgov quota create f --instance-type ml.trn1.32xlarge --count 1\n"
        "   taskgov job submit train -n hyperpod-ns-f --image pytorch:2.3 \\\n"
        "       --instance-type ml.trn1.32xlarge --accelerators 8\n"
        "   taskgov job list -A; taskgov top teams; taskgov job why train -n hyperpod-ns-f\n"
        "Press Ctrl-C to stop (tools/demo --no-wait ends after the story).\n",
        console.c_str(), metrics.c_str(), kubeconfig_.c_str(), cli.c_str());
    fflush(stdout);
    h_->set_step_seconds(1);
    const sigset_t set = StopSignals();
    const timespec tick{1, 0};
    while (sigtimedwait(&set, nullptr, &tick) < 0) {  // a signal ends it; EAGAIN: a second passed
      CopyConfigMap();
      Narrate(h_->Step());
    }
    printf("\n");
  }

  // The ConfigMap's data into the extender's config directory (the kubelet's atomic swap), when
  // it changed since it was last copied.
  void CopyConfigMap() {
    std::optional<std::string> json =
        h_->api().Get("configmaps", "taskgov-system", "taskgov-config");
    if (!json) return;
    rapidjson::Document doc;
    doc.Parse(json->c_str());
    if (doc.HasParseError() || !doc.IsObject() || !doc.HasMember("data") ||
        !doc["data"].IsObject()) {
      return;
    }
    std::map<std::string, std::string> files;
    for (const auto& m : doc["data"].GetObject()) {
      if (m.value.IsString()) files[m.name.GetString()] = m.value.GetString();
    }
    if (files == copied_) return;
    common::Status written = h_->config_dir().Write(files);
    printf("   [sandbox] the policy ConfigMap changed: %s\n",
           written.ok() ? "copied into the extender's config directory"
                        : ("not copied: " + written.error().message).c_str());
    copied_ = std::move(files);
  }

  // What a sandbox step did, once per change: bindings, starts, ends, and a refusal when its
  // reason is new for that pod.
  void Narrate(const StepReport& r) {
    for (const Attempt& a : r.attempts) {
      if (a.outcome == Attempt::Outcome::kBound) {
        printf("   [sandbox] %s admitted and bound to %s\n", a.pod.c_str(), a.node.c_str());
        said_.erase(a.pod);
      } else if (said_[a.pod] != a.reason) {
        printf("   [sandbox] %s waits: %s\n", a.pod.c_str(), a.reason.c_str());
        said_[a.pod] = a.reason;
      }
    }
    for (const std::string& pod : r.started) printf("   [sandbox] %s runs\n", pod.c_str());
    for (const std::string& pod : r.evicted) printf("   [sandbox] %s evicted\n", pod.c_str());
    for (const std::string& pod : r.deleted) printf("   [sandbox] %s gone\n", pod.c_str());
    fflush(stdout);
  }

  bool Check(bool ok, const std::string& claim) {
    ++checks_;
    if (!ok) {
      ++failures_;
      printf("   !! UNEXPECTED: %s\n", claim.c_str());
    }
    return ok;
  }

  int Running(const std::string& team, const std::string& flavor) {
    return static_cast<int>(h_->Usage(Ns(team), flavor, kGpu));
  }
  int Pending(const std::string& team, const std::string& flavor) {
    return static_cast<int>(h_->CountPods([&](const PodView& p) {
      auto selected = p.node_selector.find(kInstanceTypeLabel);
      return p.ns == Ns(team) && p.pending() && selected != p.node_selector.end() &&
             selected->second == flavor;
    }));
  }

  // Prints what a step decided for the pods of `teams`, grouped: admissions per team, refusals
  // per distinct reason.
  StepReport Step(const std::string& teams) {
    StepReport r = h_->Step();
    std::map<std::string, std::vector<std::string>> bound;                  // team → pods
    std::vector<std::pair<std::string, std::vector<std::string>>> refused;  // reason → pods
    int unschedulable = 0;
    for (const Attempt& a : r.attempts) {
      const std::string team = a.pod.substr(12, a.pod.find('/') - 12);
      if (teams.find(team) == std::string::npos) continue;
      if (a.outcome == Attempt::Outcome::kBound) {
        bound[team].push_back(Short(a.pod));
      } else if (a.outcome == Attempt::Outcome::kRefused) {
        auto it = std::find_if(refused.begin(), refused.end(),
                               [&](const auto& e) { return e.first == a.reason; });
        if (it == refused.end()) {
          refused.push_back({a.reason, {}});
          it = std::prev(refused.end());
        }
        it->second.push_back(Short(a.pod));
      } else if (a.outcome == Attempt::Outcome::kUnschedulable) {
        ++unschedulable;
      } else {
        printf("   error: %s: %s\n", a.pod.c_str(), a.reason.c_str());
      }
    }
    for (const auto& [team, pods] : bound) {
      printf("   admitted and bound: %zu of team %s (%s)\n", pods.size(), team.c_str(),
             List(pods).c_str());
    }
    for (const auto& [reason, pods] : refused) {
      printf("   refused by taskgov: %s\n      \"%s\"\n", List(pods).c_str(), reason.c_str());
    }
    if (unschedulable > 0) {
      printf("   waiting for a free GPU (kube-scheduler: no node has room): %d pod%s\n",
             unschedulable, unschedulable == 1 ? "" : "s");
    }
    return r;
  }

  static std::string List(const std::vector<std::string>& names) {
    std::string out;
    const size_t shown = std::min<size_t>(names.size(), 4);
    for (size_t i = 0; i < shown; ++i) out += (i == 0 ? "" : ", ") + names[i];
    if (names.size() > shown) out += ", ... " + names.back();
    return out;
  }

  void Ledger(const std::string& team, const std::string& flavor) {
    common::Result<LedgerLine> line = h_->ProbeLedger(Ns(team), flavor, kGpu);
    if (!line.ok()) {
      Check(false, "taskgov's ledger for team " + team + ": " + line.error().message);
      return;
    }
    printf("   taskgov's ledger: team %s uses %lld of its nominal %lld on %s%s\n", team.c_str(),
           static_cast<long long>(line->in_use), static_cast<long long>(line->nominal),
           flavor.c_str(),
           line->in_use > line->nominal
               ? (" (borrowing " + std::to_string(line->in_use - line->nominal) + ")").c_str()
               : "");
    Check(line->in_use == Running(team, flavor),
          "the ledger agrees with the API server for team " + team);
  }

  void Evictions(size_t from) {
    const std::vector<std::string> evictions = h_->Evictions();
    for (size_t i = from; i < evictions.size(); ++i) {
      printf("   evicted %s/%s through the Eviction API, gracePeriodSeconds %s\n",
             Field(evictions[i], "namespace").c_str(), Field(evictions[i], "name").c_str(),
             [&] {
               std::smatch m;
               std::regex_search(evictions[i], m, std::regex(R"("gracePeriodSeconds":(\d+))"));
               return m[1].str();
             }()
                 .c_str());
      Check(evictions[i].find("\"gracePeriodSeconds\":" + std::to_string(kGraceSeconds)) !=
                std::string::npos,
            "the eviction carries the policy's grace period");
    }
    // The events are sent in the background: wait for one on each victim.
    const size_t want = evictions.size();
    Check(h_->api().WaitFor([&] { return WithReason(h_->Events(), "Preempted").size() >= want; },
                            milliseconds(5000)),
          "every eviction is explained by an event");
    // The preemptors' events (one per round) first, then the victims'.
    const std::vector<std::string> told = WithReason(h_->Events(), "Preempting");
    for (; told_shown_ < told.size(); ++told_shown_) {
      std::smatch regarding;
      std::regex_search(told[told_shown_], regarding,
                        std::regex(R"re("regarding":\{[^}]*"name":"([^"]+)")re"));
      printf("      event on %s: \"%s\"\n", regarding.empty() ? "?" : regarding[1].str().c_str(),
             Field(told[told_shown_], "note").c_str());
    }
    const std::vector<std::string> events = WithReason(h_->Events(), "Preempted");
    for (size_t i = from; i < events.size(); ++i) {
      std::smatch regarding;  // the pod the event is about (not the Event's own name)
      std::regex_search(events[i], regarding,
                        std::regex(R"re("regarding":\{[^}]*"name":"([^"]+)")re"));
      printf("      event on %s: \"%s\"\n", regarding.empty() ? "?" : regarding[1].str().c_str(),
             Field(events[i], "note").c_str());
    }
  }

  // One row of a per-team table: each number as /metrics shows it and as the API server's pods
  // have it (-1: no such series), in the table's order: nominal, usage, borrowed, running,
  // pending, preempted.
  struct Row {
    const QuotaRow* quota;
    int lent = -1;
    std::vector<std::pair<std::string, std::pair<int, int>>> compared;  // name → (metric, API)
  };

  std::vector<Row> ReadTable(const metrics::testing::Exposition& m) const {
    auto gauge = [&](const char* family, const std::map<std::string, std::string>& labels) {
      std::optional<double> v = m.Value(family, labels);
      return v ? static_cast<int>(std::lround(*v)) : -1;
    };
    std::vector<Row> rows;
    for (const QuotaRow& q : kQuotas) {
      const std::map<std::string, std::string> cell = {
          {"team", q.team}, {"flavor", q.flavor}, {"resource", kGpu}};
      auto pods = [&](const char* state) {
        return gauge("taskgov_pods", {{"team", q.team}, {"state", state}});
      };
      auto api_pods = [&](const std::function<bool(const PodView&)>& pred) {
        return static_cast<int>(
            h_->CountPods([&](const PodView& p) { return p.ns == Ns(q.team) && pred(p); }));
      };
      const int api_used = static_cast<int>(h_->Usage(Ns(q.team), q.flavor, kGpu));
      Row row{&q, gauge("taskgov_quota_lent", cell), {}};
      row.compared = {
          {"nominal", {gauge("taskgov_quota_nominal", cell), q.nominal}},
          {"usage", {gauge("taskgov_quota_usage", cell), api_used}},
          {"borrowed", {gauge("taskgov_quota_borrowed", cell), std::max(0, api_used - q.nominal)}},
          {"running", {pods("running"), api_pods([](const PodView& p) {
                         return p.active() && !p.terminating;
                       })}},
          {"pending", {pods("pending"), api_pods([](const PodView& p) { return p.pending(); })}},
          {"preempted", {pods("preempted"), api_pods([](const PodView& p) {
                           return p.active() && p.terminating;
                         })}}};
      rows.push_back(std::move(row));
    }
    return rows;
  }

  static bool Agree(const std::vector<Row>& rows) {
    for (const Row& row : rows) {
      for (const auto& [what, values] : row.compared) {
        if (values.first != values.second) return false;
      }
    }
    return true;
  }

  // The per-team table as the metrics show it: a scrape of the extender's /metrics after a
  // Sync(), each number checked against the API server's pods. Some series follow the pods a
  // moment later (the preemption controller counts a victim as preempted until its own loop,
  // once a second, sees it gone): the scrape is repeated, for up to 3 s, until it agrees.
  // With --table-rows every row is also written to stderr as one machine-readable line,
  //   demo-table|<title>|<team>|<flavor>|<name>=<from /metrics>/<from the API server>|...
  // which demo_test reads.
  void Table(const std::string& title) {
    printf("\n   %s (from taskgov's /metrics)\n", title.c_str());
    common::Status synced = h_->Sync();
    Check(synced.ok(), "the extender caught up with the API server before the scrape");
    const auto deadline = SteadyClock::now() + std::chrono::seconds(3);
    std::vector<Row> rows;
    while (true) {
      common::Result<metrics::testing::Exposition> scraped =
          h_->extender(h_->serving()).ScrapeMetrics();
      if (!Check(scraped.ok(), "the extender's /metrics can be scraped: " +
                                   (scraped.ok() ? std::string() : scraped.error().message))) {
        return;
      }
      rows = ReadTable(*scraped);
      if (Agree(rows) || SteadyClock::now() >= deadline) break;
      std::this_thread::sleep_for(milliseconds(50));  // polling a condition, bounded above
    }
    printf("   %-5s %-16s %8s %7s %9s %5s %8s %8s %10s\n", "team", "flavor", "nominal", "in use",
           "borrowed", "lent", "running", "pending", "preempted");
    std::map<std::string, int> lent_sum, borrowed_sum;
    for (const Row& row : rows) {
      const QuotaRow& q = *row.quota;
      auto metric = [&](size_t i) { return row.compared[i].second.first; };
      printf("   %-5s %-16s %8d %7d %9d %5d %8d %8d %10d\n", q.team.c_str(), q.flavor.c_str(),
             metric(0), metric(1), metric(2), row.lent, metric(3), metric(4), metric(5));
      std::string line = "demo-table|" + title + "|" + q.team + "|" + q.flavor;
      for (const auto& [what, values] : row.compared) {
        line +=
            "|" + what + "=" + std::to_string(values.first) + "/" + std::to_string(values.second);
        Check(values.first == values.second,
              "team " + q.team + ": /metrics " + what + " " + std::to_string(values.first) +
                  " equals the API server's " + std::to_string(values.second));
      }
      if (table_rows_) fprintf(stderr, "%s\n", line.c_str());
      const int api_used = row.compared[1].second.second;
      Check(row.lent >= 0 && row.lent <= std::max(0, q.nominal - api_used),
            "team " + q.team + " lends no more than its idle nominal quota");
      lent_sum[q.flavor] += row.lent;
      borrowed_sum[q.flavor] += metric(2);
    }
    for (const auto& [flavor, lent] : lent_sum) {
      Check(lent == borrowed_sum[flavor], "on " + flavor + " what is lent (" +
                                              std::to_string(lent) + ") is what is borrowed (" +
                                              std::to_string(borrowed_sum[flavor]) + ")");
    }
    printf("\n");
  }

  bool Start() {
    if (!Check(!policy_key_.empty(), "the demo's policy renders into the CLI's key unchanged")) {
      return false;
    }
    printf("The cluster is a simulated Kubernetes API server holding the sample cluster:\n");
    const auto t0 = SteadyClock::now();
    common::Status started = h_->Start();
    if (!started.ok()) {
      printf("   could not start: %s\n%s", started.error().message.c_str(), h_->Logs().c_str());
      return false;
    }
    for (const NodeSpec& n : h_->nodes()) {
      std::string resources;
      for (const auto& [r, v] : n.allocatable) {
        if (r == "nvidia.com/gpu" || r == "aws.amazon.com/neuron") {
          resources += std::to_string(v) + " " + r;
        }
      }
      printf("   %-16s %-17s %s\n", n.name.c_str(), n.instance_type.c_str(), resources.c_str());
    }
    printf(
        "\nThe policy (TaskRanking, FairShare idle compute, one cohort, grace period %d s):\n"
        "   team  instance type    GPUs of quota  may borrow  fair-share weight\n"
        "   a     ml.p5.48xlarge   8              4 more      1\n"
        "   b     ml.p5.48xlarge   8              8 more      1\n"
        "   c     ml.g5.12xlarge   4              lends only  1\n"
        "   d     ml.g5.12xlarge   2              4 more      3\n"
        "   e     ml.g5.12xlarge   2              4 more      1\n"
        "   priority classes: inference 100, training 75, experimentation 25\n"
        "   Each team's pods run in its namespace hyperpod-ns-<team> and select their instance\n"
        "   type with a nodeSelector.\n\n",
        kGraceSeconds);
    printf(
        "taskgov-extender (pid %d, the real binary) watches the API server and answers the\n"
        "scheduler's filter / prioritize / bind calls; it was ready %lld ms after start. The demo\n"
        "plays kube-scheduler, the kubelet and the job controller around it.\n\n",
        h_->extender().pid(),
        static_cast<long long>(
            std::chrono::duration_cast<milliseconds>(SteadyClock::now() - t0).count()));
    return true;
  }

  // ---- the acts ----

  void BorrowIdleQuota() {
    printf("1. Borrowing idle quota\n");
    printf(
        "   Team a submits 12 training pods of 1 GPU on ml.p5.48xlarge; its quota there is 8.\n");
    for (int i = 0; i < 12; ++i) {
      (void)h_->Submit(Pod("a", "a-train-" + std::to_string(100 + i), "training", kP5));
    }
    StepReport r = Step("a");
    Check(r.Bound().size() == 12, "all 12 are admitted");
    printf("   8 run within a's quota; 4 run on team b's quota, which b does not use and lends.\n");
    Ledger("a", kP5);
    Check(Running("a", kP5) == 12, "a runs 12 GPUs on ml.p5.48xlarge");
    (void)h_->Step();  // the kubelet starts them
  }

  void Reclaim() {
    printf("\n2. Reclaiming lent quota\n");
    printf("   Team b submits 8 inference pods on ml.p5.48xlarge: it wants its 8 GPUs back.\n");
    for (int i = 0; i < 8; ++i) {
      PodSpec p = Pod("b", "b-serve-" + std::to_string(i), "inference", kP5);
      p.priority = 1000;
      (void)h_->Submit(p);
    }
    const size_t evictions_before = h_->Evictions().size();
    StepReport r = Step("b");
    Check(r.Bound().size() == 4, "4 of b's pods start at once on the 4 free GPUs");
    printf(
        "   b is within its quota and a borrows b's GPUs, so taskgov reclaims them for b's other\n"
        "   4 pods: it evicts 4 of a's pods, giving each time to checkpoint (each saves its\n"
        "   checkpoint within 30 s and exits; until then it keeps its GPU).\n");
    const bool done = h_->RunUntil([&] { return Running("b", kP5) == 8; }, 30);
    Evictions(evictions_before);
    Check(done && h_->Evictions().size() - evictions_before == 4,
          "exactly 4 of a's pods are evicted and b's 8 pods run");
    printf("   a's job controller recreated the 4 evicted pods; they wait, every GPU is taken.\n");
    Check(Running("a", kP5) == 8 && Pending("a", kP5) == 4, "a runs 8 and 4 wait");
    Table("After the reclaim");
    printf("   b's 8 inference pods finish.\n");
    for (int i = 0; i < 8; ++i) (void)h_->Finish("b-serve-" + std::to_string(i));
    Step("a");
    Check(h_->RunUntil([&] { return Running("a", kP5) == 12; }, 5),
          "a's 4 waiting pods run again, on b's idle quota");
    Ledger("a", kP5);
    (void)h_->Step();
  }

  void PreemptWithinTheTeam() {
    printf("\n3. Preemption within a team\n");
    printf(
        "   Team a runs 12 GPUs on ml.p5.48xlarge, its nominal 8 plus all 4 it may borrow. It\n"
        "   submits an urgent inference pod: no GPU is free and a may not borrow more, so\n"
        "   taskgov makes room inside a — its lowest-priority pod that started last.\n");
    PodSpec urgent = Pod("a", "a-urgent", "inference", kP5);
    urgent.priority = 1000;
    (void)h_->Submit(urgent);
    const size_t evictions_before = h_->Evictions().size();
    const bool done = h_->RunUntil(
        [&] {
          std::optional<PodView> p = h_->PodOfJob("a-urgent");
          return p && p->active();
        },
        20);
    Evictions(evictions_before);
    Check(done && h_->Evictions().size() - evictions_before == 1,
          "one of a's training pods made room and a-urgent runs");
    const std::vector<std::string> events = WithReason(h_->Events(), "Preempted");
    Check(!events.empty() && Field(events.back(), "note").rfind("InTeamPriority", 0) == 0,
          "the eviction is explained as in-team priority preemption");
    printf("   The evicted pod was recreated and waits.\n");
    (void)h_->Step();
  }

  void FairShare() {
    printf("\n4. Fair share of idle capacity\n");
    printf(
        "   Team c does not use its 4 GPUs on ml.g5.12xlarge and lends them. Teams d (weight 3)\n"
        "   and e (weight 1), with 2 GPUs of quota each there, both submit 6 training pods\n"
        "   (alternately). The 4 idle GPUs go 3 to d and 1 to e: borrowed / weight is then\n"
        "   equal (3/3 = 1/1).\n");
    for (int i = 0; i < 6; ++i) {
      (void)h_->Submit(Pod("d", "d-" + std::to_string(i), "training", kG5));
      (void)h_->Submit(Pod("e", "e-" + std::to_string(i), "training", kG5));
    }
    StepReport r = Step("de");
    Check(Running("d", kG5) == 5 && Running("e", kG5) == 3,
          "d runs 5 (2 + 3 borrowed) and e runs 3 (2 + 1 borrowed) on ml.g5.12xlarge");
    bool fair_share_refusal = false;
    for (const Attempt& a : r.attempts) {
      fair_share_refusal = fair_share_refusal || a.reason.rfind("fair share:", 0) == 0;
    }
    Check(fair_share_refusal, "a pod of e was refused for fair share");
    printf(
        "   Neither can take more from the other: d with one more would be at 4/3 > e's 1/1,\n"
        "   e with one more at 2/1 > d's 3/3.\n");
    Table("After the fair share");
    (void)h_->Step();
  }

  void TaskRanking() {
    printf("\n5. Task ranking\n");
    const int waiting = Pending("a", kP5);
    printf(
        "   Team a has %d training pod%s waiting (recreated after the preemption). It submits two\n"
        "   experimentation pods, then one more training pod. The priority class is a Kueue\n"
        "   label kube-scheduler does not read: it tries pods in submission order, and taskgov\n"
        "   ranks them (training before experimentation, first come first within a class).\n",
        waiting, waiting == 1 ? "" : "s");
    (void)h_->Submit(Pod("a", "a-exp-0", "experimentation", kP5));
    (void)h_->Submit(Pod("a", "a-exp-1", "experimentation", kP5));
    (void)h_->Submit(Pod("a", "a-train-late", "training", kP5));
    Step("a");
    std::vector<std::string> order;
    for (int i = 0; i < 3 + waiting; ++i) {
      const std::string job = "a-train-" + std::to_string(100 + i);
      printf("   %s finishes.\n", job.c_str());
      (void)h_->Finish(job);
      StepReport r = Step("a");
      for (const std::string& pod : r.Bound()) order.push_back(Short(pod));
    }
    std::string shown;
    for (const std::string& name : order) shown += (shown.empty() ? "" : ", ") + name;
    printf("   Admitted in this order: %s\n", shown.c_str());
    const size_t n = order.size();
    Check(n >= 3 && order[n - 3] == "a-train-late" && order[n - 2] == "a-exp-0" &&
              order[n - 1] == "a-exp-1",
          "a-train-late went ahead of the older experimentation pods, which then went in "
          "submission order");
  }

  // Worker `i` of Kueue pod group `job` of `team`: `size` workers of `gpus` GPUs on p5.
  static PodSpec Worker(const std::string& team, const std::string& job, int i, int size,
                        int gpus) {
    PodSpec spec = Pod(team, job + "-" + std::to_string(i), "training", kP5);
    spec.requests[kGpu] = gpus;
    spec.labels["kueue.x-k8s.io/pod-group-name"] = job;
    spec.annotations["kueue.x-k8s.io/pod-group-total-count"] = std::to_string(size);
    return spec;
  }
  int RunningWorkers(const std::string& job) {
    return static_cast<int>(h_->CountPods(
        [&](const PodView& p) { return p.job.starts_with(job + "-") && p.active(); }));
  }

  void Gangs() {
    printf("\n6. Gangs: admitted whole, reclaimed whole\n");
    printf("   Team a's pods on ml.p5.48xlarge all finish.\n");
    for (const PodView& p : h_->Pods()) {
      if (p.ns == Ns("a") && !p.job.empty() && (p.active() || p.pending())) {
        (void)h_->Finish(p.job);
      }
    }
    Step("a");
    Check(h_->RunUntil([&] { return Running("a", kP5) == 0 && Pending("a", kP5) == 0; }, 10),
          "ml.p5.48xlarge is idle");
    printf(
        "   Team a submits a distributed training job: a Kueue pod group of 4 workers with 3 GPUs\n"
        "   each, 12 GPUs — its nominal 8 and the 4 it may borrow. The first worker's filter\n"
        "   reserves the quota of all four; the others take their shares.\n");
    for (int i = 0; i < 4; ++i) (void)h_->Submit(Worker("a", "a-dist", i, 4, 3));
    Step("a");
    Check(RunningWorkers("a-dist") == 4, "a-dist runs its 4 workers at once");
    (void)h_->Step();
    printf(
        "   Team b submits a 4-worker job of 2 GPUs each: 8 GPUs, its whole quota. Only 4 are\n"
        "   free and a borrows b's other 4, so no worker of b-x may start yet (it would hold\n"
        "   half of what it needs). taskgov reclaims b's 4 lent GPUs, and a-dist is the victim\n"
        "   as a whole: one of its workers alone would free the GPUs but leave a-dist stalled.\n");
    const size_t evictions_before = h_->Evictions().size();
    for (int i = 0; i < 4; ++i) (void)h_->Submit(Worker("b", "b-x", i, 4, 2));
    Step("b");
    Check(RunningWorkers("b-x") == 0, "no worker of b-x starts while only 4 GPUs are free");
    const bool done = h_->RunUntil([&] { return RunningWorkers("b-x") == 4; }, 30);
    Evictions(evictions_before);
    Check(done, "b-x runs its 4 workers, admitted together once its quota was back");
    Check(h_->Evictions().size() - evictions_before == 4, "all 4 workers of a-dist were evicted");
    printf(
        "   a-dist's job controller recreated its 4 workers. They need 12 GPUs: a's nominal 8 is\n"
        "   free, but the 4 more it would borrow are b's, in use. So they wait, whole: none\n"
        "   starts alone on a's free GPUs.\n");
    Step("a");
    Check(RunningWorkers("a-dist") == 0 && Pending("a", kP5) == 4,
          "a-dist's 4 workers wait and none runs alone");
  }

  // 7. The taskgov CLI against the same API server: the admin's allocation, the data
  // scientist's job and why it waits.
  void Terminal() {
    printf("\n7. From a terminal: the taskgov CLI\n");
    // As deploy/ installs them: the policy ConfigMap, and the console behind the API server's
    // service proxy (the CLI reads the extender's admin API through it).
    rapidjson::StringBuffer configmap;
    rapidjson::Writer<rapidjson::StringBuffer> w(configmap);
    w.StartObject();
    w.Key("metadata");
    w.StartObject();
    w.Key("name");
    w.String("taskgov-config");
    w.Key("namespace");
    w.String("taskgov-system");
    w.EndObject();
    w.Key("data");
    w.StartObject();
    w.Key(std::string(cli::kOwnedKey).c_str());
    w.String(policy_key_.c_str());
    w.EndObject();
    w.EndObject();
    Check(h_->api().Upsert("configmaps", configmap.GetString()).ok(),
          "the policy ConfigMap is in the API server");
    copied_ = {{std::string(cli::kOwnedKey), policy_key_}};  // as the extender read it
    h_->api().SetJobController(true);
    h_->api().SetServed("pytorchjobs", false);
    h_->api().SetServiceProxy("taskgov-system", "taskgov-console", 9091,
                              "http://127.0.0.1:" + std::to_string(h_->extender().console_port()));
    kubeconfig_ = h_->work_dir() + "/kubeconfig";
    std::ofstream(kubeconfig_) << scheduler::kube::testing::KubeconfigFor(h_->api().url());

    printf(
        "   An admin reads team c's allocation: each value, where it came from, and what c uses\n"
        "   now.\n");
    const cli::testing::CliRun quota = Cli({"quota", "describe", "c"});
    Check(quota.code == 0 && quota.out.find(kG5) != std::string::npos,
          "taskgov quota describe c shows c's ml.g5.12xlarge allocation");
    printf(
        "   A data scientist of team c submits a training job: 2 nodes of 4 GPUs each. c's quota\n"
        "   is 4 GPUs and c lends but never borrows, so the job cannot run as it is; taskgov says\n"
        "   why, rule by rule, and what would have to change.\n");
    const cli::testing::CliRun submit =
        Cli({"job", "submit", "c-train", "-n", Ns("c"), "--image", "pytorch:2.3", "--instance-type",
             kG5, "--accelerators", "4", "--node-count", "2", "--priority", "training"});
    Check(submit.code == 0, "taskgov job submit created the job");
    Check(h_->Sync().ok(), "the extender saw the job's pods");
    Check(JobObserved(Ns("c"), "c-train"), "the extender saw the job, which sizes the gang");
    const cli::testing::CliRun why = Cli({"job", "why", "c-train", "-n", Ns("c")});
    Check(why.code == 0 && why.out.find("NeverFits") != std::string::npos &&
              why.out.find("can never run as it is: " + std::string(kG5) +
                           ", borrowing: nvidia.com/gpu") != std::string::npos,
          "taskgov job why says c-train never fits c's quota");
    const cli::testing::CliRun deleted = Cli({"job", "delete", "c-train", "-n", Ns("c")});
    Check(deleted.code == 0, "taskgov job delete removed it");
  }

  // 8. Pause and resume (issue 35): a reclaim suspends a training Job instead of failing it, and
  // taskgov resumes it when the quota returns.
  // The pods of the Job `job` of `team` (not the harness's: CountPods counts only those) that
  // run, or (running false) that are not ended.
  int JobPods(const std::string& team, const std::string& job, bool running) {
    int n = 0;
    for (const PodView& p : h_->Pods()) {
      n += p.ns == Ns(team) && p.name.starts_with(job + "-") &&
                   (running ? p.phase == "Running" && !p.terminating : !p.ended())
               ? 1
               : 0;
    }
    return n;
  }
  std::string JobListRow(const std::string& team, const std::string& job) {
    const cli::testing::CliRun list = Cli({"job", "list", "-n", Ns(team)});
    std::istringstream lines(list.out);
    for (std::string line; std::getline(lines, line);) {
      if (line.starts_with(job + " ")) return line;
    }
    return "";
  }
  void PauseAndResume() {
    printf("\n8. Paused, not failed: a reclaimed training job is suspended and resumed\n");
    printf("   ml.p5.48xlarge is cleared: every pod there finishes.\n");
    for (const PodView& p : h_->Pods()) {
      if (p.instance_type == kP5 || p.node_selector.count(kInstanceTypeLabel) > 0) {
        if (!p.job.empty() && !p.ended()) (void)h_->Finish(p.job);
      }
    }
    Check(h_->RunUntil([&] { return Running("a", kP5) == 0 && Running("b", kP5) == 0; }, 20),
          "ml.p5.48xlarge is idle");
    printf(
        "   Team a submits a training job of 2 nodes x 6 GPUs: 12 GPUs, its nominal 8 and 4\n"
        "   borrowed from b.\n");
    const cli::testing::CliRun a_job = Cli({"job", "submit", "a-pretrain", "-n", Ns("a"), "--image",
                                            "pytorch:2.3", "--instance-type", kP5, "--accelerators",
                                            "6", "--node-count", "2", "--priority", "training"});
    Check(a_job.code == 0, "taskgov job submit created a-pretrain");
    Check(h_->RunUntil([&] { return JobPods("a", "a-pretrain", true) == 2; }, 20),
          "a-pretrain runs on 12 GPUs");
    printf(
        "   Team b submits an inference job of 2 nodes x 4 GPUs: its own 8, of which a borrows 4.\n"
        "   taskgov reclaims them, but a-pretrain is a Job: it is suspended (spec.suspend), not\n"
        "   evicted to failure. Its pods get the policy's 120 s to checkpoint (its\n"
        "   podFailurePolicy ignores disruptions), then its controller deletes them uncounted.\n");
    const size_t evictions_before = h_->Evictions().size();
    const cli::testing::CliRun b_job =
        Cli({"job", "submit", "b-serve", "-n", Ns("b"), "--image", "vllm:0.6", "--instance-type",
             kP5, "--accelerators", "4", "--node-count", "2", "--priority", "inference"});
    Check(b_job.code == 0, "taskgov job submit created b-serve");
    Check(h_->RunUntil([&] { return JobPods("b", "b-serve", true) == 2; }, 40),
          "b-serve runs on b's 8 GPUs");
    Evictions(evictions_before);
    const std::string paused = JobListRow("a", "a-pretrain");
    Check(paused.find("Suspended (Reclaimed by taskgov)") != std::string::npos,
          "taskgov job list shows a-pretrain Suspended (Reclaimed by taskgov)");
    Check(JobPods("a", "a-pretrain", false) == 0, "a-pretrain has no pods while paused");
    printf("   b-serve finishes: a-pretrain's whole demand fits again, and taskgov resumes it.\n");
    for (const PodView& p : h_->Pods()) {
      if (p.ns == Ns("b") && p.name.starts_with("b-serve-") && !p.ended()) {
        (void)h_->api().SetPodPhase(p.ns, p.name, "Succeeded");
      }
    }
    Check(h_->RunUntil([&] { return JobPods("a", "a-pretrain", true) == 2; }, 40),
          "a-pretrain runs again, resumed by taskgov");
    const std::string resumed = JobListRow("a", "a-pretrain");
    Check(resumed.find("Running") != std::string::npos, "taskgov job list shows it Running");
    const std::optional<std::string> job = h_->api().Get("jobs", Ns("a"), "a-pretrain");
    Check(job && job->find("\"failed\":0") != std::string::npos,
          "a-pretrain's status.failed is 0: the reclaim cost it no retry");
  }

  // Whether the extender's Job informer has seen the Job `ns`/`name` within 5 s (polled). Sync()
  // orders pod events only; until the Job is seen, its pods wait for it (the Job declares how
  // many pods are admitted together) and an explanation says so instead of judging the gang.
  bool JobObserved(const std::string& ns, const std::string& name) {
    const std::string target = "/api/v1/workloads/" + ns + "/" + name + "/explanation";
    for (int i = 0; i < 50; ++i) {  // bounded: 5 s
      common::Result<common::testing::HttpReply> why = h_->extender().Admin(target);
      if (why.ok() && why->status == 200 && why->body.find("to be observed") == std::string::npos) {
        return true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return false;
  }

  // Runs `taskgov ARGS` against the demo's API server and prints it as a terminal would (its
  // error output after its output).
  cli::testing::CliRun Cli(std::vector<std::string> args) {
    std::string line = "   $ taskgov";
    for (const std::string& a : args) line += " " + a;
    printf("%s\n", line.c_str());
    args.push_back("--kubeconfig=" + kubeconfig_);
    // The demo's console is plain HTTP on loopback: the API server's proxy speaks HTTP to it.
    args.push_back("--console-service=http:taskgov-system/taskgov-console:9091");
    cli::testing::CliRun run = cli::testing::CliFixture::RunOffline(args);
    std::istringstream lines(run.out + run.err);
    for (std::string l; std::getline(lines, l);) printf("   %s\n", l.c_str());
    return run;
  }

  const bool table_rows_;
  const bool wait_;
  const std::string policy_key_ = DemoPolicyKey();
  std::map<std::string, std::string> copied_;  // the ConfigMap data the extender reads
  std::map<std::string, std::string> said_;    // pod → the refusal last printed
  std::string kubeconfig_;
  std::unique_ptr<Harness> h_;
  int checks_ = 0;
  int failures_ = 0;
  size_t told_shown_ = 0;  // preemptor events printed so far
};

}  // namespace
}  // namespace taskgov::e2e

int main(int argc, char** argv) {
  bool table_rows = false, wait = true, usage = argc < 2;
  for (int i = 2; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--table-rows") {
      table_rows = true;
    } else if (arg == "--no-wait") {
      wait = false;
    } else {
      usage = true;
    }
  }
  if (usage) {
    fprintf(stderr, "usage: %s <path to taskgov-extender> [--table-rows] [--no-wait]\n", argv[0]);
    return 2;
  }
  setvbuf(stdout, nullptr, _IOLBF, 0);
  if (wait) {
    // Ctrl-C is taken by sigwait at the end (blocked before any thread starts, so every thread
    // inherits the mask and the harness's subprocesses are stopped in order).
    const sigset_t set = taskgov::e2e::StopSignals();
    pthread_sigmask(SIG_BLOCK, &set, nullptr);
  }
  taskgov::e2e::Demo demo(taskgov::common::testing::RunfilePath(argv[1]), table_rows, wait);
  return demo.Run();
}
