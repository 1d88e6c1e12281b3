// The soak (issue 14): the real extender under everything at once, for a bounded time.
//
//  * kube-scheduler: the harness's scheduler loop places a steady churn of pods and small gangs
//    of three teams that share the sample cluster (borrowing, fair share, preemption), and after
//    every step the bound pods are checked against the policy's limits (QuotaOracle: DESIGN
//    §3.3) — no over-admission at any observed instant;
//  * a "normal" client (one kept-alive connection, like kube-scheduler's) filters a pod every few
//    milliseconds; its p99 is measured alone first (unloaded), then under the load below, and
//    must stay within 3× of the unloaded p99;
//  * load: several paced clients filter and prioritise pods (the cluster's pending pods, and
//    pods the API server does not have, each with a fresh uid, of a team of their own);
//  * hostile clients: slowloris connections that dribble a header byte at a time and idle
//    connections that send nothing, below the connection cap;
//  * the API server fails the way real ones do: watches dropped and expired (410 in stream and
//    as a status after a compaction), LISTs answered 429 with Retry-After, slow watch replies;
//  * the policy is rewritten every few seconds: valid rewrites (fair-share weights change) and
//    invalid ones (garbage, a truncated prefix of a valid document, an empty file), which must
//    be refused with the last good policy kept.
//  * a /metrics scraper storm (issue 36): 16 scrapers read /metrics back to back on the
//    metrics listener for the whole loaded run, while the kubelet's liveness probe (a new
//    connection every 20 ms) asks /healthz on the health listener from the first second to the
//    last: its p99 must stay under 10 ms unloaded, loaded, and in every 10 s of the run.
// The load's side of the test (the load and hostile clients, the fault and policy tickers, the
// kube-scheduler loop) runs at a lower CPU priority (nice 10): in a cluster those are other
// machines, here they share two cores with the extender and the normal client, and at equal
// priority the normal client's p99 would measure how Linux time-slices the test's own threads.
// The extender serves every client at one priority, so its isolation of the normal client from
// the load is what the p99 bound measures.
// Asserted: no violation of the limits, no 5xx and no transport error for any well-behaved
// client, the p99 bounds, resident memory stable over the loaded run, and the extender ready and
// serving the last valid policy at the end. Prints a table of what it measured.
//
// SOAK_SECONDS sets the loaded run's length (the CI smoke test: 60; the manual soak: 280);
// SOAK_PROBE_POOL how many uids each load client cycles its made-up pods through (0: a fresh
// one every time; default 0 for runs of 200 s or more, else 500 — see StartLoad).

#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <random>
#include <sstream>
#include <thread>

#include "e2e/scenario_test_util.h"
#include "extender/http_test_util.h"
#include "extender/ticker.h"
#include "scheduler/common/testing/http_client.h"

namespace taskgov::e2e {
namespace {

using Clock = std::chrono::steady_clock;
using extender::Ticker;
using std::chrono::milliseconds;

int SoakSeconds() {
  const char* text = std::getenv("SOAK_SECONDS");
  const int seconds = text != nullptr ? std::atoi(text) : 60;
  return std::clamp(seconds, 10, 300);
}

// Three teams in one cohort on the sample cluster (16 p5 GPUs, 8 g5 GPUs). `weight_b` changes
// with every valid rewrite; the quotas never do (so the oracle's limits hold for every policy).
std::string Policy(int weight_b) {
  std::ostringstream y;
  y << "apiVersion: taskgov.io/v1\nkind: TaskGovernancePolicy\n"
       "taskPrioritization: TaskRanking\nidleComputeAllocation: FairShare\n"
       "priorityClasses:\n  - {name: inference, weight: 100}\n  - {name: training, weight: 50}\n"
       "  - {name: experimentation, weight: 10}\n"
       "preemption: {gracePeriodSeconds: 30, minimumRuntimeSeconds: 0}\n"
       "gangs: {timeoutSeconds: 120}\nteams:\n"
       "  - name: a\n    cohort: all\n    preemptTeamTasks: LowerPriority\n"
       "    sharing: {strategy: LendAndBorrow, borrowLimit: 50}\n"
       "    compute:\n      - {instanceType: ml.p5.48xlarge, accelerators: 8}\n"
       "      - {instanceType: ml.g5.12xlarge, accelerators: 4}\n"
       "  - name: b\n    cohort: all\n    fairShareWeight: "
    << weight_b
    << "\n    preemptTeamTasks: Never\n"
       "    sharing: {strategy: LendAndBorrow, borrowLimit: 100}\n"
       "    compute:\n      - {instanceType: ml.p5.48xlarge, accelerators: 4}\n"
       "      - {instanceType: ml.g5.12xlarge, accelerators: 4}\n"
       "  - name: c\n    cohort: all\n    sharing: {strategy: Lend}\n"
       "    compute:\n      - {instanceType: ml.p5.48xlarge, accelerators: 4}\n"
       // The load clients' made-up pods: a team of its own, so that the pods the API server
       // never reports (which count as waiting while they are filtered) hold no real team back.
       "  - name: d\n    sharing: {strategy: DontLend}\n"
       "    compute:\n      - {instanceType: ml.p5.48xlarge, accelerators: 1}\n";
  return y.str();
}

QuotaOracle Oracle() {
  auto line = [](const std::string& team, const char* type, int64_t nominal, int64_t borrow) {
    return QuotaLine{team, Ns(team), "all", type, kGpu, nominal, borrow, kNoLimit};
  };
  return QuotaOracle({line("a", kP5, 8, 4), line("a", kG5, 4, 2), line("b", kP5, 4, 4),
                      line("b", kG5, 4, 4), line("c", kP5, 4, 0)});
}

// A filter (or prioritize) request for `pod_json` on `nodes`.
std::string FilterBody(const std::string& pod_json, const std::vector<std::string>& nodes) {
  std::string body = "{\"Pod\":" + pod_json + ",\"Nodes\":null,\"NodeNames\":[";
  for (size_t i = 0; i < nodes.size(); ++i) body += (i ? ",\"" : "\"") + nodes[i] + "\"";
  return body + "]}";
}

// A v1.Pod of `team` the API server does not have, asking for `gpus` on p5 nodes.
std::string UnknownPod(const std::string& team, uint64_t n, uint64_t gpus) {
  return R"({"metadata":{"name":"probe-)" + std::to_string(n) + R"(","namespace":")" + Ns(team) +
         R"(","uid":"probe-uid-)" + std::to_string(n) +
         R"(","creationTimestamp":"2026-12-01T00:00:00Z","labels":{"kueue.x-k8s.io/priority-class":"training"}},)"
         R"("spec":{"schedulerName":"taskgov","nodeSelector":{"node.kubernetes.io/instance-type":"ml.p5.48xlarge"},)"
         R"("containers":[{"name":"c","resources":{"requests":{"nvidia.com/gpu":")" +
         std::to_string(gpus) + R"("}}}]}})";
}

const std::vector<std::string> kP5Nodes = {"hyperpod-p5-0", "hyperpod-p5-1"};

// Lowers the calling thread's CPU priority (Linux: nice applies per thread) to the load's.
void RunAsLoad() {
  constexpr int kLoadNice = 10;
  if (::getpriority(PRIO_PROCESS, static_cast<id_t>(::gettid())) < kLoadNice) {
    ::setpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()), kLoadNice);
  }
}

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t i = std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())));
  return v[i];
}

// What a well-behaved client saw.
struct ClientTally {
  uint64_t ok = 0;
  uint64_t error_field = 0;  // 200 with a non-empty "Error"
  uint64_t server_errors = 0;
  uint64_t other_status = 0;
  uint64_t transport_errors = 0;
  std::string first_failure;
  std::vector<double> latency_ms;

  void Add(const ClientTally& o) {
    ok += o.ok;
    error_field += o.error_field;
    server_errors += o.server_errors;
    other_status += o.other_status;
    transport_errors += o.transport_errors;
    latency_ms.insert(latency_ms.end(), o.latency_ms.begin(), o.latency_ms.end());
    if (first_failure.empty()) first_failure = o.first_failure;
  }
};

// A client on one kept-alive connection sending a request every `interval` (paced: a slow
// reply delays the next one, never makes a burst).
class PacedClient {
 public:
  enum class Role { kMeasured, kLoad };
  PacedClient(uint16_t port, Role role, std::chrono::microseconds interval,
              std::function<std::pair<std::string, std::string>(uint64_t)> next)
      : port_(port), role_(role), interval_(interval), next_(std::move(next)) {}
  ~PacedClient() { Stop(); }

  void Start() {
    stop_ = false;
    thread_ = std::thread([this] { Run(); });
  }
  void Stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  // What it saw since the last call.
  ClientTally Take() {
    std::lock_guard<std::mutex> lock(mu_);
    ClientTally out = std::move(tally_);
    tally_ = ClientTally{};
    return out;
  }

 private:
  void Run() {
    if (role_ == Role::kLoad) RunAsLoad();
    common::testing::HttpClient http("127.0.0.1", port_, std::chrono::seconds(5));
    auto due = Clock::now();
    for (uint64_t n = 0; !stop_; ++n) {
      due += interval_;
      std::this_thread::sleep_until(due);
      if (Clock::now() > due + interval_ * 10) due = Clock::now();  // no catch-up burst
      auto [target, body] = next_(n);
      const auto t0 = Clock::now();
      common::Result<common::testing::HttpReply> reply = http.Post(target, body);
      const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
      std::lock_guard<std::mutex> lock(mu_);
      if (!reply.ok()) {
        ++tally_.transport_errors;
        if (tally_.first_failure.empty()) tally_.first_failure = reply.error().message;
        continue;
      }
      tally_.latency_ms.push_back(ms);
      if (reply->status >= 500) {
        ++tally_.server_errors;
      } else if (reply->status != 200) {
        ++tally_.other_status;
      } else if (reply->body.find("\"Error\":\"\"") == std::string::npos &&
                 reply->body.find("\"Error\"") != std::string::npos) {
        ++tally_.error_field;
      } else {
        ++tally_.ok;
        continue;
      }
      if (tally_.first_failure.empty()) {
        tally_.first_failure =
            target + ": " + std::to_string(reply->status) + " " + reply->body.substr(0, 300);
      }
    }
  }

  const uint16_t port_;
  const Role role_;
  const std::chrono::microseconds interval_;
  const std::function<std::pair<std::string, std::string>(uint64_t)> next_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  std::mutex mu_;
  ClientTally tally_;
};

// Slowloris and idle connections, kept at `count` each, reopened when the extender closes them.
class SlowClients {
 public:
  SlowClients(uint16_t port, int count) : port_(port), count_(count) {}
  ~SlowClients() { Stop(); }
  void Start() {
    thread_ = std::thread([this] { Run(); });
  }
  void Stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  [[nodiscard]] uint64_t opened() const { return opened_; }

 private:
  void Run() {
    struct Conn {
      int fd = -1;
      size_t sent = 0;
      bool dribbles = false;
    };
    static constexpr std::string_view kRequest =
        "POST /filter HTTP/1.1\r\nHost: taskgov\r\nContent-Type: application/json\r\n"
        "X-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n";
    RunAsLoad();
    std::vector<Conn> conns(static_cast<size_t>(2 * count_));
    for (size_t i = 0; i < conns.size(); ++i) conns[i].dribbles = i % 2 == 0;
    while (!stop_) {
      for (Conn& c : conns) {
        if (c.fd < 0) {
          c.fd = extender::testing::RawConnect(port_, milliseconds(100));
          c.sent = 0;
          if (c.fd >= 0) ++opened_;
          continue;
        }
        if (c.dribbles) {
          // One byte; once the peer has closed, the send fails and the slot reconnects.
          const bool sent = c.sent < kRequest.size() &&
                            extender::testing::SendAll(c.fd, kRequest.substr(c.sent, 1));
          if (sent) {
            ++c.sent;
            continue;
          }
        } else {
          char byte = 0;
          const ssize_t n = ::recv(c.fd, &byte, 1, MSG_DONTWAIT);
          if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) continue;  // still open
        }
        ::close(c.fd);
        c.fd = -1;
      }
      std::this_thread::sleep_for(milliseconds(500));
    }
    for (Conn& c : conns) {
      if (c.fd >= 0) ::close(c.fd);
    }
  }

  const uint16_t port_;
  const int count_;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> opened_{0};
  std::thread thread_;
};

// The /metrics scraper storm: `count` scrapers, each on a kept-alive connection, reading
// /metrics back to back with no pause (Prometheus replicas, dashboards and a runaway script).
class Scrapers {
 public:
  Scrapers(uint16_t port, int count) : port_(port), count_(count) {}
  ~Scrapers() { Stop(); }
  void Start() {
    for (int i = 0; i < count_; ++i) threads_.emplace_back([this] { Run(); });
  }
  void Stop() {
    stop_ = true;
    for (std::thread& t : threads_) t.join();
    threads_.clear();
  }
  [[nodiscard]] uint64_t scrapes() const { return scrapes_; }
  [[nodiscard]] uint64_t failures() const { return failures_; }

 private:
  void Run() {
    RunAsLoad();
    common::testing::HttpClient http("127.0.0.1", port_, std::chrono::seconds(10));
    while (!stop_) {
      common::Result<common::testing::HttpReply> r = http.Get("/metrics");
      ++(r.ok() && r->status == 200 ? scrapes_ : failures_);
    }
  }

  const uint16_t port_;
  const int count_;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> scrapes_{0}, failures_{0};
  std::vector<std::thread> threads_;
};

// The kubelet's liveness probe: GET /healthz on a new connection every 20 ms (1 s timeout, the
// kubelet's default), at the extender's priority like the normal client; every latency, with
// when it was sent (seconds from Start), for windows of the run.
class Prober {
 public:
  struct Sample {
    double at_s;
    double ms;
  };
  explicit Prober(uint16_t port) : port_(port) {}
  ~Prober() { Stop(); }
  void Start() {
    start_ = Clock::now();
    thread_ = std::thread([this] { Run(); });
  }
  void Stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  // What it saw since the last call, and every sample so far.
  ClientTally Take() {
    std::lock_guard<std::mutex> lock(mu_);
    ClientTally out = std::move(tally_);
    tally_ = ClientTally{};
    return out;
  }
  std::vector<Sample> samples() {
    std::lock_guard<std::mutex> lock(mu_);
    return samples_;
  }

 private:
  void Run() {
    auto due = Clock::now();
    while (!stop_) {
      due += milliseconds(20);
      std::this_thread::sleep_until(due);
      if (Clock::now() > due + milliseconds(200)) due = Clock::now();  // no catch-up burst
      common::testing::HttpClient http("127.0.0.1", port_, milliseconds(1000));
      const auto t0 = Clock::now();
      common::Result<common::testing::HttpReply> r = http.Get("/healthz");
      const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
      std::lock_guard<std::mutex> lock(mu_);
      samples_.push_back({std::chrono::duration<double>(t0 - start_).count(), ms});
      tally_.latency_ms.push_back(ms);
      if (r.ok() && r->status == 200) {
        ++tally_.ok;
        continue;
      }
      ++(r.ok() ? tally_.other_status : tally_.transport_errors);
      if (tally_.first_failure.empty()) {
        tally_.first_failure =
            "/healthz: " + (r.ok() ? "HTTP " + std::to_string(r->status) : r.error().message);
      }
    }
  }

  const uint16_t port_;
  Clock::time_point start_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  std::mutex mu_;
  ClientTally tally_;
  std::vector<Sample> samples_;
};

int64_t RssKib(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::atoll(line.c_str() + 6);
  }
  return -1;
}

// The API server's failures, one per tick, in rotation.
void InjectApiFault(scheduler::kube::testing::FakeApiServer& api, uint64_t n) {
  using scheduler::kube::testing::FaultRule;
  switch (n % 6) {
    case 0:
      api.DropWatches("pods");
      break;
    case 1:
      api.ExpireWatches("pods");
      break;
    case 2: {
      FaultRule r;
      r.method = "GET";
      r.path_prefix = "/api/v1/pods";
      r.watch = false;
      r.times = 2;
      r.status = 429;
      r.reason = "TooManyRequests";
      r.message = "the soak's API server is busy";
      r.retry_after_seconds = 1;
      api.AddFault(r);
      api.DropWatches("pods");  // the relist meets the 429s
      break;
    }
    case 3: {
      FaultRule r;
      r.path_prefix = "/api/v1/pods";
      r.watch = true;
      r.times = 1;
      r.delay = milliseconds(1500);
      api.AddFault(r);
      api.DropWatches("pods");
      break;
    }
    case 4:
      api.Compact();  // the nodes' and pods' informers resume from versions now too old
      api.DropWatches("nodes");
      api.DropWatches("pods");
      break;
    case 5: {
      FaultRule r;
      r.path_prefix = "/api/v1/nodes";
      r.watch = true;
      r.times = 1;
      r.status = 410;
      r.reason = "Expired";
      r.message = "too old resource version";
      api.AddFault(r);
      api.DropWatches("nodes");
      break;
    }
  }
}

// Every few seconds: a valid policy, or one of the broken ones.
struct PolicyWriter {
  int valid_writes = 0;
  int invalid_writes = 0;
  int last_weight = 1;  // team b's fair-share weight in the last valid policy
  std::string error;

  void Tick(ConfigDir& dir, uint64_t n) {
    std::string content;
    switch (n % 4) {
      case 0:
      case 2:
        last_weight = last_weight == 1 ? 3 : 1;
        content = Policy(last_weight);
        ++valid_writes;
        break;
      case 1:
        content = Policy(7).substr(0, Policy(7).size() / 2);  // a prefix of a valid document
        ++invalid_writes;
        break;
      case 3:
        content = (n / 4) % 2 == 0 ? "" : "teams: [{name: a, compute: 12";
        ++invalid_writes;
        break;
    }
    common::Status s = dir.Write({{"policy.yaml", content}});
    if (!s.ok() && error.empty()) error = s.error().message;
  }
};

// The soak's phases, in order; the test below runs them.
class SoakTest : public ScenarioTest {
 protected:
  void SetUp() override {
    seconds_ = SoakSeconds();
    HarnessOptions options;
    options.config["policy.yaml"] = Policy(1);
    options.idle_wait = milliseconds(0);
    StartHarness(std::move(options));
    CheckLimitsEveryStep(Oracle());
    port_ = h().extender().webhook_port();
    // The normal client's pod: a team-c pod that fits (admitted on every call).
    normal_body_ = FilterBody(UnknownPod("c", 0, 1), kP5Nodes);
    normal_ = std::make_unique<PacedClient>(
        port_, PacedClient::Role::kMeasured, std::chrono::microseconds(5000),
        [this](uint64_t) { return std::pair<std::string, std::string>("/filter", normal_body_); });
    prober_ = std::make_unique<Prober>(h().extender().health_port());
  }

  void TearDown() override {
    StopLoad();
    if (normal_) normal_->Stop();
    if (prober_) prober_->Stop();
    ScenarioTest::TearDown();
  }

  void MeasureUnloaded() {
    prober_->Start();
    normal_->Start();
    std::this_thread::sleep_for(std::chrono::seconds(std::max(8, seconds_ / 6)));
    unloaded_ = normal_->Take();
    unloaded_probes_ = prober_->Take();
  }

  void StartLoad() {
    // Made-up pods stay queued for the filter TTL (60 s) after their last filter call: a run
    // long enough to pass that sends a fresh uid every time (memory must level off once the
    // first ones expire); a shorter one cycles through 500 uids per client, so that its memory
    // levels off within the run too.
    uint64_t probe_pool = seconds_ >= 200 ? 0 : 500;
    if (const char* e = std::getenv("SOAK_PROBE_POOL")) probe_pool = std::strtoull(e, nullptr, 10);
    for (uint64_t k = 0; k < 4; ++k) {
      load_.push_back(std::make_unique<PacedClient>(
          port_, PacedClient::Role::kLoad, std::chrono::microseconds(10'000),
          [this, k, probe_pool](uint64_t n) {
            std::string pod;
            if (n % 3 == 0) {
              std::lock_guard<std::mutex> lock(pending_mu_);
              if (!pending_pods_.empty()) pod = pending_pods_[n % pending_pods_.size()];
            }
            if (pod.empty()) {
              pod = UnknownPod("d", 1'000'000 * (k + 1) + (probe_pool > 0 ? n % probe_pool : n),
                               1 + n % 4);
            }
            return std::pair<std::string, std::string>(n % 5 == 4 ? "/prioritize" : "/filter",
                                                       FilterBody(pod, kP5Nodes));
          }));
    }
    slow_ = std::make_unique<SlowClients>(port_, 32);
    scrapers_ = std::make_unique<Scrapers>(h().extender().metrics_port(), kScrapers);
    for (auto& c : load_) c->Start();
    slow_->Start();
    scrapers_->Start();
    // Tickers count their calls from 1.
    faults_ = std::make_unique<Ticker>(milliseconds(2000), [this](uint64_t n) {
      RunAsLoad();
      InjectApiFault(h().api(), n - 1);
    });
    policies_ = std::make_unique<Ticker>(milliseconds(3000), [this](uint64_t n) {
      RunAsLoad();
      writer_.Tick(h().config_dir(), n - 1);
    });
    const int pid = h().extender().pid();
    rss_ = std::make_unique<Ticker>(milliseconds(500), [this, pid](uint64_t) {
      const int64_t kib = RssKib(pid);
      std::lock_guard<std::mutex> lock(rss_mu_);
      rss_kib_.push_back(kib);
    });
    (void)normal_->Take();  // measured from here
    (void)prober_->Take();
  }

  // Keeps ~12 pods waiting (lone pods of 1–4 GPUs and 2-pod Kueue gangs of three teams) and
  // steps the cluster until the loaded run is over.
  void RunChurn() {
    RunAsLoad();  // this thread is kube-scheduler's from here on
    std::mt19937 rng(20261202);
    const auto end = Clock::now() + std::chrono::seconds(seconds_);
    size_t waiting = 0;
    while (Clock::now() < end) {
      for (size_t i = waiting; i < 12; ++i) SubmitJob(rng);
      if (HasFatalFailure()) return;
      StepReport report = h().Step();
      if (!report.sync_error.empty()) ++sync_errors_;
      for (const Attempt& a : report.attempts) {
        if (a.outcome != Attempt::Outcome::kError) continue;
        if (extender_errors_++ == 0) first_extender_error_ = a.pod + ": " + a.reason;
      }
      // One read of the API server's pods per step (parsing them all is this loop's main cost,
      // and it shares the machine with the extender).
      std::vector<std::string> jsons;
      for (const PodView& p : h().Pods()) {
        if (p.pending()) jsons.push_back(p.json);
      }
      waiting = jsons.size();
      {
        std::lock_guard<std::mutex> lock(pending_mu_);
        pending_pods_ = std::move(jsons);
      }
      std::this_thread::sleep_for(milliseconds(100));
    }
    loaded_ = normal_->Take();
    loaded_probes_ = prober_->Take();
  }

  void SubmitJob(std::mt19937& rng) {
    static const char* kTeams[] = {"a", "b", "c"};
    static const char* kClasses[] = {"inference", "training", "experimentation"};
    static const int32_t kValues[] = {100, 50, 10};
    const std::string team = kTeams[rng() % 3];
    const size_t c = rng() % 3;
    const bool gang = rng() % 4 == 0;
    const std::string job = team + "-" + std::to_string(submitted_);
    for (int m = 0; m < (gang ? 2 : 1); ++m) {
      const bool g5 = team != "c" && rng() % 3 == 0;  // c has no g5 quota
      PodSpec p =
          GpuPod(team, gang ? job + "-" + std::to_string(m) : job, 1, kClasses[c], g5 ? kG5 : kP5);
      p.requests[kGpu] = gang ? 2 : g5 ? 1 + rng() % 2 : 1 + rng() % 4;
      p.priority = kValues[c];
      p.run_steps = 1 + static_cast<int>(rng() % 6);
      if (gang) {
        p.labels["kueue.x-k8s.io/pod-group-name"] = job;
        p.annotations["kueue.x-k8s.io/pod-group-total-count"] = "2";
      }
      common::Status s = h().Submit(p);
      ASSERT_TRUE(s.ok()) << s.error().message;
      ++submitted_;
    }
    gangs_ += gang ? 1 : 0;
  }

  void StopLoad() {
    for (Ticker* t : {rss_.get(), policies_.get(), faults_.get()}) {
      if (t != nullptr) t->Stop();
    }
    if (slow_) slow_->Stop();
    if (scrapers_) scrapers_->Stop();
    for (auto& c : load_) {
      c->Stop();
      load_tally_.Add(c->Take());
    }
    load_.clear();
  }

  // The faults end and a last valid policy is written: it must be loaded and served.
  void CheckAfter() {
    ExtenderProcess& ext = h().extender();
    h().api().ClearFaults();
    const size_t log_from = ext.log_line_count();
    ASSERT_TRUE(h().config_dir().Write({{"policy.yaml", Policy(5)}}).ok());
    EXPECT_TRUE(
        ext.WaitForLog("\"msg\":\"policy loaded\"", log_from, std::chrono::seconds(20)).ok())
        << "the last valid policy was not loaded";
    EXPECT_TRUE(ext.WaitReady(std::chrono::seconds(20)).ok()) << "not ready after the soak";
    common::Result<metrics::testing::Exposition> m = ext.ScrapeMetrics();
    ASSERT_TRUE(m.ok()) << m.error().message;
    EXPECT_EQ(m->Value("taskgov_config_last_reload_successful"), 1.0);
    refused_reloads_ =
        m->Value("taskgov_config_reloads_total", {{"result", "failure"}}).value_or(0);
    // The extender's own view of its filter replies (first byte to reply written), to tell a
    // tail the extender adds from one the machine adds.
    for (const char* le : {"0.001", "0.0025", "0.005", "0.01"}) {
      server_filter_le_.emplace_back(le, m->Value("taskgov_webhook_request_duration_seconds_bucket",
                                                  {{"verb", "filter"}, {"le", le}})
                                             .value_or(0));
    }
    server_filter_count_ =
        m->Value("taskgov_webhook_request_duration_seconds_count", {{"verb", "filter"}})
            .value_or(0);
    EXPECT_TRUE(h().Sync().ok());
    EXPECT_TRUE(ext.running());
  }

  // The extender's log and the API server's requests, for a look after the run.
  void KeepLogs() {
    const char* dir = std::getenv("TEST_UNDECLARED_OUTPUTS_DIR");
    if (dir == nullptr) return;
    std::ofstream out(std::string(dir) + "/extender.log");
    for (const std::string& line : h().extender().log_lines()) out << line << "\n";
    std::ofstream api(std::string(dir) + "/api-requests.log");
    const std::vector<scheduler::kube::testing::RecordedRequest> requests = h().api().requests();
    for (const auto& r : requests) {
      if (r.path.find("e2e-sync") != std::string::npos) continue;
      api << std::chrono::duration_cast<milliseconds>(r.at - requests.front().at).count() << " "
          << r.method << " " << r.target << " " << r.status << "\n";
    }
  }

  void ReportAndCheck() {
    std::vector<int64_t> rss;
    {
      std::lock_guard<std::mutex> lock(rss_mu_);
      rss = rss_kib_;
    }
    ASSERT_GE(rss.size(), 8u);
    auto median = [](std::vector<int64_t> v) {
      std::sort(v.begin(), v.end());
      return v[v.size() / 2];
    };
    printf("RSS KiB every 10 s:");
    for (size_t i = 0; i < rss.size(); i += 20) printf(" %lld", static_cast<long long>(rss[i]));
    printf("\n");
    const size_t q = rss.size() / 4;
    const int64_t rss_early = median({rss.begin() + q, rss.begin() + 2 * q});
    const int64_t rss_late = median({rss.end() - q, rss.end()});
    const double unloaded_p99 = Percentile(unloaded_.latency_ms, 0.99);
    const double loaded_p99 = Percentile(loaded_.latency_ms, 0.99);
    printf("soak: %d s loaded, %zu pods submitted (%zu 2-pod gangs), %d steps, %zu evictions\n",
           seconds_, submitted_, gangs_, h().step(), h().Evictions().size());
    printf("%-26s %12s %12s %12s\n", "", "p50 ms", "p99 ms", "requests");
    for (const auto& [what, t] :
         {std::pair<const char*, const ClientTally*>{"normal client, unloaded", &unloaded_},
          {"normal client, loaded", &loaded_},
          {"load clients (4)", &load_tally_}}) {
      printf("%-26s %12.3f %12.3f %12zu\n", what, Percentile(t->latency_ms, 0.5),
             Percentile(t->latency_ms, 0.99), t->latency_ms.size());
    }
    printf("p99 loaded / unloaded: %.2f\n", unloaded_p99 > 0 ? loaded_p99 / unloaded_p99 : 0.0);
    printf("RSS KiB: 2nd quarter median %lld, last quarter median %lld, max %lld\n",
           static_cast<long long>(rss_early), static_cast<long long>(rss_late),
           static_cast<long long>(*std::max_element(rss.begin(), rss.end())));
    printf("extender's filter replies (%.0f):", server_filter_count_);
    for (const auto& [le, n] : server_filter_le_) {
      printf(" %.3f%% within %s s", server_filter_count_ > 0 ? 100 * n / server_filter_count_ : 0,
             le.c_str());
    }
    printf("\n");
    printf(
        "slow connections opened %llu; policy writes valid %d, invalid %d; harness sync "
        "errors %zu; reloads refused %.0f\n",
        static_cast<unsigned long long>(slow_ ? slow_->opened() : 0), writer_.valid_writes,
        writer_.invalid_writes, sync_errors_, refused_reloads_);

    EXPECT_TRUE(writer_.error.empty()) << writer_.error;
    EXPECT_GT(refused_reloads_, 0) << "no broken policy was refused";
    ClientTally all = unloaded_;
    all.Add(loaded_);
    all.Add(load_tally_);
    EXPECT_EQ(all.server_errors, 0u) << all.first_failure;
    EXPECT_EQ(all.transport_errors, 0u) << all.first_failure;
    EXPECT_EQ(all.other_status, 0u) << all.first_failure;
    EXPECT_EQ(all.error_field, 0u) << all.first_failure;
    EXPECT_EQ(extender_errors_, 0u) << first_extender_error_;
    EXPECT_GT(loaded_.latency_ms.size(), 100u);
    // Within 3× of its p99 alone. Alone, on two shared cores, that p99 moves between 1.6 and
    // 3.4 ms from run to run with the machine's other work (seen in consecutive runs of this
    // commit): under 2 ms it measures the machine's quiet, not the extender, so the baseline is
    // at least 2 ms.
    EXPECT_LE(loaded_p99, 3 * std::max(unloaded_p99, 2.0))
        << "normal client p99 " << loaded_p99 << " ms under load, " << unloaded_p99 << " ms alone";
    // Level: the last quarter's median within 10% (and 8 MiB) of the second quarter's.
    EXPECT_LE(rss_late, rss_early + std::max<int64_t>(8 * 1024, rss_early / 10))
        << "resident memory grew from " << rss_early << " KiB to " << rss_late << " KiB";
    EXPECT_GT(h().CompletedJobs(), 20u);
  }

  // The kubelet's /healthz probes: their rows, the p99 of every 10 s of the run, and the bound —
  // p99 under 10 ms unloaded, under the load and the scraper storm, and in every 10 s.
  void ReportAndCheckProbes() {
    printf("%-26s %12s %12s %12s\n", "/healthz probes", "p50 ms", "p99 ms", "requests");
    for (const auto& [what, t] :
         {std::pair<const char*, const ClientTally*>{"unloaded", &unloaded_probes_},
          {"loaded, scraper storm", &loaded_probes_}}) {
      printf("%-26s %12.3f %12.3f %12zu\n", what, Percentile(t->latency_ms, 0.5),
             Percentile(t->latency_ms, 0.99), t->latency_ms.size());
    }
    std::vector<double> window_p99;
    std::vector<double> window;
    double window_end = 10;
    for (const Prober::Sample& sample : prober_->samples()) {
      if (sample.at_s >= window_end) {
        window_p99.push_back(Percentile(std::move(window), 0.99));
        window.clear();
        window_end += 10;
      }
      window.push_back(sample.ms);
    }
    if (window.size() >= 100) window_p99.push_back(Percentile(std::move(window), 0.99));
    printf("/healthz p99 ms in each 10 s:");
    for (double p99 : window_p99) printf(" %.2f", p99);
    printf("\n/metrics: %llu scrapes by %d scrapers (%.0f/s), %llu failed\n",
           static_cast<unsigned long long>(scrapers_->scrapes()), kScrapers,
           static_cast<double>(scrapers_->scrapes()) / seconds_,
           static_cast<unsigned long long>(scrapers_->failures()));

    ClientTally probes = unloaded_probes_;
    probes.Add(loaded_probes_);
    EXPECT_EQ(probes.transport_errors + probes.other_status, 0u) << probes.first_failure;
    EXPECT_LT(Percentile(unloaded_probes_.latency_ms, 0.99), kProbeP99Ms);
    EXPECT_LT(Percentile(loaded_probes_.latency_ms, 0.99), kProbeP99Ms)
        << "/healthz p99 under the load and " << kScrapers << " scrapers";
    for (size_t i = 0; i < window_p99.size(); ++i) {
      EXPECT_LT(window_p99[i], kProbeP99Ms)
          << "/healthz p99 in seconds " << 10 * i << "–" << 10 * (i + 1) << " of the probes";
    }
    EXPECT_GE(scrapers_->scrapes(), static_cast<uint64_t>(kScrapers * seconds_))
        << "the storm was not one";
  }

  static constexpr int kScrapers = 16;
  static constexpr double kProbeP99Ms = 10;

  int seconds_ = 60;
  uint16_t port_ = 0;
  std::string normal_body_;
  std::unique_ptr<PacedClient> normal_;
  std::vector<std::unique_ptr<PacedClient>> load_;
  std::unique_ptr<SlowClients> slow_;
  std::unique_ptr<Scrapers> scrapers_;
  std::unique_ptr<Prober> prober_;
  std::unique_ptr<Ticker> faults_, policies_, rss_;
  PolicyWriter writer_;
  std::mutex pending_mu_;
  std::vector<std::string> pending_pods_;  // JSON of the cluster's pending pods, each step
  std::mutex rss_mu_;
  std::vector<int64_t> rss_kib_;
  ClientTally unloaded_, loaded_, load_tally_;
  ClientTally unloaded_probes_, loaded_probes_;
  size_t submitted_ = 0, gangs_ = 0, sync_errors_ = 0, extender_errors_ = 0;
  std::string first_extender_error_;
  double refused_reloads_ = 0;
  std::vector<std::pair<std::string, double>> server_filter_le_;
  double server_filter_count_ = 0;
};

TEST_F(SoakTest, EverythingAtOnceNeverOverAdmitsAndKeepsServing) {
  MeasureUnloaded();
  StartLoad();
  ASSERT_NO_FATAL_FAILURE(RunChurn());
  StopLoad();
  normal_->Stop();
  prober_->Stop();
  CheckAfter();
  KeepLogs();
  ReportAndCheck();
  ReportAndCheckProbes();
}

}  // namespace
}  // namespace taskgov::e2e
