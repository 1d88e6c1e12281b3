// Pause and resume under load (issue 35): what a queue of jobs taskgov paused costs the two
// moments its users wait for, through the real extender against the fake API server's Job
// controller (the cost of one resumer run is BM_ResumerRun's table).
//
// Team a's 8-pod Job "train" (2 GPUs a pod) runs on 16 GPUs of ml.p5.48xlarge, 8 lent by team b.
// Then `paused` more Jobs of team a are created as taskgov leaves the jobs it pauses (suspended,
// annotated suspended-by taskgov), each asking for 16 GPUs: none can resume while a round runs,
// and every resumer run and every controller run sees them all. Each round:
//   reclaim  team b submits a 2-pod inference Job (4 GPUs a pod) → both its pods Running: train
//            is paused (suspended, its pods deleted with the policy's 2 s grace period — simulated
//            time, a harness step per second) and b's pods are bound;
//   resume   once train's pods are gone and its backoff is over (5 s·2^(N-1) after its N-th
//            suspension), b's pods succeed: its quota is free → train's spec.suspend is false
//            (the leader's loop runs every second, and sooner when pods start waiting) → train's 8
//            pods Running again (the Job controller recreates them, the harness schedules them).
// Rows: `paused` 0 (the peer: the same rounds with an empty queue) and --paused; --rounds rounds
// each; median and max wall time. Exits non-zero when a round did not complete.
//
//   bazel run -c opt //e2e:resume_benchmark [-- --paused=1000 --rounds=3]
//
// Everything listens on 127.0.0.1; the extender is stopped by the harness.

#include <rapidjson/document.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "e2e/harness.h"
#include "scheduler/common/testing/http_client.h"

namespace taskgov::e2e {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr char kPolicy[] = R"(apiVersion: taskgov.io/v1
kind: TaskGovernancePolicy
taskPrioritization: TaskRanking
idleComputeAllocation: FirstComeFirstServe
priorityClasses:
  - {name: inference, weight: 100}
  - {name: training, weight: 75}
defaultCohort: hyperpod
preemption: {gracePeriodSeconds: 2}
teams:
  - name: a
    sharing: {strategy: LendAndBorrow, borrowLimit: 100}
    compute: [{instanceType: ml.p5.48xlarge, accelerators: 8}]
  - name: b
    sharing: {strategy: LendAndBorrow, borrowLimit: 100}
    compute: [{instanceType: ml.p5.48xlarge, accelerators: 8}]
)";

std::string Ns(const std::string& team) { return "hyperpod-ns-" + team; }

// An Indexed Job of `pods` pods of `gpus` GPUs each; `paused`: as taskgov leaves a job it paused.
std::string IndexedJob(const std::string& team, const std::string& name, int pods, int gpus,
                       const std::string& priority_class, bool paused = false) {
  const std::string n = std::to_string(pods);
  const std::string annotations =
      paused ? R"(,"annotations":{"taskgov.io/suspended-by":"taskgov",)"
               R"("taskgov.io/suspend-reason":"Reclaim","taskgov.io/suspensions":"1"})"
             : "";
  return R"({"apiVersion":"batch/v1","kind":"Job","metadata":{"name":")" + name +
         R"(","namespace":")" + Ns(team) + R"(")" + annotations + R"(},"spec":{"suspend":)" +
         (paused ? "true" : "false") + R"(,"parallelism":)" + n + R"(,"completions":)" + n +
         R"(,"completionMode":"Indexed","backoffLimit":6,"podFailurePolicy":{"rules":[
           {"action":"Ignore","onPodConditions":[{"type":"DisruptionTarget"}]}]},
         "template":{"metadata":{"labels":{"app":")" +
         name + R"("}},"spec":{"schedulerName":"taskgov","restartPolicy":"Never",
           "priorityClassName":")" +
         priority_class + R"(","nodeSelector":{"node.kubernetes.io/instance-type":"ml.p5.48xlarge"},
           "containers":[{"name":"main","image":"pytorch","resources":{"requests":{"nvidia.com/gpu":")" +
         std::to_string(gpus) + R"("}}}]}}}})";
}

std::string Text(const rapidjson::Value& v, std::initializer_list<const char*> path) {
  const rapidjson::Value* at = &v;
  for (const char* key : path) {
    if (!at->IsObject() || !at->HasMember(key)) return "";
    at = &(*at)[key];
  }
  if (at->IsString()) return at->GetString();
  if (at->IsBool()) return at->GetBool() ? "true" : "false";
  return "";
}

struct Round {
  double reclaim_ms = 0;    // b's Job submitted → its pods Running
  double unsuspend_ms = 0;  // b's quota free → train's spec.suspend false
  double resume_ms = 0;     // b's quota free → train's pods Running
};

class Bench {
 public:
  Bench(const std::string& binary, int paused) : paused_(paused) {
    HarnessOptions options;
    options.extender_binary = binary;
    options.config["policy.yaml"] = kPolicy;
    options.play_every_pod = true;
    options.step_seconds = 1;
    options.idle_wait = milliseconds(50);
    harness_ = std::make_unique<Harness>(std::move(options));
  }

  bool Start() {
    if (common::Status s = harness_->Start(); !s.ok()) {
      fprintf(stderr, "harness: %s\n%s\n", s.error().message.c_str(), harness_->Logs().c_str());
      return false;
    }
    h().api().SetJobController(true);
    h().set_finishing(false);
    if (!h().api().Upsert("jobs", IndexedJob("a", "train", 8, 2, "training")).ok()) return false;
    if (!h().RunUntil([&] { return Pods("a", "train", "Running") == 8; }, 600)) {
      fprintf(stderr, "train never ran\n");
      return false;
    }
    for (int i = 0; i < paused_; ++i) {
      const std::string job = IndexedJob("a", "queued-" + std::to_string(i), 8, 2, "training",
                                         /*paused=*/true);
      if (!h().api().Upsert("jobs", job).ok()) return false;
    }
    if (!h().Sync().ok()) return false;
    // The extender sees them all as paused.
    const Clock::time_point deadline = Clock::now() + std::chrono::seconds(30);
    while (PausedSeen() != paused_) {
      if (Clock::now() > deadline) {
        fprintf(stderr, "the extender sees %d paused jobs of %d\n", PausedSeen(), paused_);
        return false;
      }
      std::this_thread::sleep_for(milliseconds(50));
    }
    return true;
  }

  bool RunRound(int n, Round* out) {
    const std::string serve = "serve-" + std::to_string(n);
    Clock::time_point t0 = Clock::now();
    if (!h().api().Upsert("jobs", IndexedJob("b", serve, 2, 4, "inference")).ok()) return false;
    if (!h().RunUntil([&] { return Pods("b", serve, "Running") == 2; }, 600)) {
      fprintf(stderr, "round %d: b's pods never ran\n%s\n", n, h().Logs().c_str());
      return false;
    }
    out->reclaim_ms = Ms(Clock::now() - t0);
    if (Field({"spec", "suspend"}) != "true") {
      fprintf(stderr, "round %d: train was not paused\n", n);
      return false;
    }
    // Train's last pods terminate (the kubelet's part: a step per simulated second).
    if (!h().RunUntil([&] { return Pods("a", "train", "") == 0; }, 600)) {
      fprintf(stderr, "round %d: train's pods never went\n", n);
      return false;
    }
    // Train's backoff after its n-th suspension (the resumer's defaults), and a margin.
    std::this_thread::sleep_for(milliseconds((5'000 << (n - 1)) + 1'000));
    t0 = Clock::now();
    for (const std::string& pod : PodNames("b", serve, "Running")) {
      if (!h().api().SetPodPhase(Ns("b"), pod, "Succeeded")) return false;
    }
    while (Field({"spec", "suspend"}) != "false") {
      if (Clock::now() - t0 > std::chrono::seconds(60)) {
        fprintf(stderr, "round %d: train never resumed\n%s\n", n, h().Logs().c_str());
        return false;
      }
      std::this_thread::sleep_for(milliseconds(2));
    }
    out->unsuspend_ms = Ms(Clock::now() - t0);
    if (!h().RunUntil([&] { return Pods("a", "train", "Running") == 8; }, 600)) {
      fprintf(stderr, "round %d: train's pods never ran again\n", n);
      return false;
    }
    out->resume_ms = Ms(Clock::now() - t0);
    return true;
  }

 private:
  Harness& h() { return *harness_; }
  // taskgov_paused_workloads{team="a"}, as the extender's /metrics says.
  int PausedSeen() {
    common::testing::HttpClient client("127.0.0.1", h().extender().metrics_port());
    common::Result<common::testing::HttpReply> r = client.Get("/metrics");
    if (!r.ok()) return -1;
    const std::string key = "taskgov_paused_workloads{team=\"a\"} ";
    const size_t at = r->body.find(key);
    return at == std::string::npos ? 0 : std::atoi(r->body.c_str() + at + key.size());
  }
  static double Ms(Clock::duration d) {
    return std::chrono::duration<double, std::milli>(d).count();
  }
  std::string Field(std::initializer_list<const char*> path) {
    rapidjson::Document doc;
    doc.Parse(h().api().Get("jobs", Ns("a"), "train").value_or("{}").c_str());
    return Text(doc, path);
  }
  std::vector<std::string> PodNames(const std::string& team, const std::string& job,
                                    const std::string& phase) {
    std::vector<std::string> out;
    for (const std::string& json : h().api().List("pods")) {
      rapidjson::Document pod;
      pod.Parse(json.c_str());
      if (Text(pod, {"metadata", "namespace"}) == Ns(team) &&
          Text(pod, {"metadata", "labels", "job-name"}) == job &&
          (phase.empty() || Text(pod, {"status", "phase"}) == phase)) {
        out.push_back(Text(pod, {"metadata", "name"}));
      }
    }
    return out;
  }
  int Pods(const std::string& team, const std::string& job, const std::string& phase) {
    return static_cast<int>(PodNames(team, job, phase).size());
  }

  const int paused_;
  std::unique_ptr<Harness> harness_;
};

struct Row {
  int paused = 0;
  std::vector<Round> rounds;
};

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

void Print(const std::vector<Row>& rows) {
  printf("\n%-8s  %-27s  %-27s  %-27s\n", "paused", "reclaim: submitted->running",
         "resume: free->unsuspended", "resume: free->pods running");
  printf("%-8s  %13s %13s  %13s %13s  %13s %13s\n", "jobs", "median ms", "max ms", "median ms",
         "max ms", "median ms", "max ms");
  for (const Row& row : rows) {
    std::vector<double> reclaim, unsuspend, resume;
    for (const Round& r : row.rounds) {
      reclaim.push_back(r.reclaim_ms);
      unsuspend.push_back(r.unsuspend_ms);
      resume.push_back(r.resume_ms);
    }
    printf("%-8d  %13.0f %13.0f  %13.0f %13.0f  %13.0f %13.0f\n", row.paused, Median(reclaim),
           *std::max_element(reclaim.begin(), reclaim.end()), Median(unsuspend),
           *std::max_element(unsuspend.begin(), unsuspend.end()), Median(resume),
           *std::max_element(resume.begin(), resume.end()));
  }
  if (rows.size() == 2) {
    auto ratio = [&](double Round::*field) {
      std::vector<double> a, b;
      for (const Round& r : rows[0].rounds) a.push_back(r.*field);
      for (const Round& r : rows[1].rounds) b.push_back(r.*field);
      return Median(b) / std::max(Median(a), 1.0);
    };
    printf("ratio %d/0 paused (medians): reclaim %.2fx, unsuspend %.2fx, pods running %.2fx\n",
           rows[1].paused, ratio(&Round::reclaim_ms), ratio(&Round::unsuspend_ms),
           ratio(&Round::resume_ms));
  }
}

int Main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: resume_benchmark <taskgov-extender> [--paused=N] [--rounds=N]\n");
    return 2;
  }
  int paused = 1000, rounds = 3;
  for (int i = 2; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--paused=", 0) == 0) paused = std::atoi(arg.c_str() + 9);
    if (arg.rfind("--rounds=", 0) == 0) rounds = std::clamp(std::atoi(arg.c_str() + 9), 1, 4);
  }
  std::vector<Row> rows;
  for (int queue : {0, paused}) {
    Bench bench(argv[1], queue);
    if (!bench.Start()) return 1;
    Row row{queue, {}};
    for (int n = 1; n <= rounds; ++n) {
      Round r;
      if (!bench.RunRound(n, &r)) return 1;
      row.rounds.push_back(r);
      fprintf(stderr, "paused %d, round %d: reclaim %.0f ms, unsuspend %.0f ms, resume %.0f ms\n",
              queue, n, r.reclaim_ms, r.unsuspend_ms, r.resume_ms);
    }
    rows.push_back(std::move(row));
  }
  Print(rows);
  return 0;
}

}  // namespace
}  // namespace taskgov::e2e

int main(int argc, char** argv) { return taskgov::e2e::Main(argc, argv); }
