// The taskgov-extender process under hostile clients on loopback (issue 14, failures 1 and 4):
// idle and slowloris connections must not lock kube-scheduler or the probes out, and request
// bodies must not take the process past its memory limit.
//
// Each test starts the real binary with small configured timeouts and caps, attacks it with raw
// sockets, and asserts what a scheduler and an operator see: replies (never resets), the
// refusal counters on /metrics, bounded log lines. No assertion is about speed; every wait is
// bounded.

#include <poll.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "extender/http_test_util.h"
#include "metrics/testing/exposition.h"
#include "scheduler/common/testing/http_client.h"
#include "scheduler/common/testing/process.h"

namespace taskgov::e2e {
namespace {

using common::testing::HttpClient;
using common::testing::HttpReply;
using extender::testing::RawConnect;
using extender::testing::ReadUntilClosed;
using extender::testing::SendAll;
using std::chrono::milliseconds;

std::string g_binary;

// A filter call as kube-scheduler makes it (nodeCacheCapable). With no policy the process is
// not ready and answers 200 with Error: a reply is all these tests need.
constexpr char kFilterBody[] =
    R"({"Pod":{"metadata":{"name":"w-0","namespace":"team-a","uid":"u-0"}},)"
    R"("Nodes":null,"NodeNames":["n1","n2"]})";

class HostileClientsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    config_dir_ = std::filesystem::path(::testing::TempDir()) / "config";
    std::filesystem::create_directories(config_dir_);
  }

  void TearDown() override {
    for (int fd : fds_) ::close(fd);
    if (proc_.pid() > 0) {
      proc_.Signal(SIGTERM);
      (void)proc_.Wait(milliseconds(10'000));  // the destructor kills its group if still running
    }
  }

  // Starts the binary on loopback with `extra` flags; sets the ports.
  void Start(std::vector<std::string> extra) {
    std::vector<std::string> args = {"--listen=127.0.0.1:0",
                                     "--metrics-listen=127.0.0.1:0",
                                     "--health-listen=127.0.0.1:0",
                                     "--console-listen=127.0.0.1:0",
                                     "--config-dir=" + config_dir_.string(),
                                     "--no-kube"};
    args.insert(args.end(), extra.begin(), extra.end());
    ASSERT_TRUE(proc_.Start(g_binary, args).ok());
    common::Result<std::string> serving =
        proc_.WaitForLine("\"msg\":\"serving\"", milliseconds(20'000));
    ASSERT_TRUE(serving.ok()) << serving.error().message;
    webhook_port_ = PortFrom(*serving, "webhook_port");
    metrics_port_ = PortFrom(*serving, "metrics_port");
    health_port_ = PortFrom(*serving, "health_port");
    ASSERT_NE(webhook_port_, 0);
    ASSERT_NE(metrics_port_, 0);
  }

  static uint16_t PortFrom(const std::string& line, const std::string& key) {
    std::smatch m;
    if (!std::regex_search(line, m, std::regex("\"" + key + "\":([0-9]+)"))) return 0;
    return static_cast<uint16_t>(std::stoi(m[1]));
  }

  // `n` connections to `port` that send nothing; kept in fds_.
  void OpenIdle(uint16_t port, int n) {
    for (int i = 0; i < n; ++i) {
      const int fd = RawConnect(port);
      ASSERT_GE(fd, 0) << "connect " << i;
      fds_.push_back(fd);
    }
  }

  // The value of a series on /metrics (0 when absent or unreadable).
  double Scrape(const std::string& family, const std::map<std::string, std::string>& labels) {
    HttpClient client("127.0.0.1", metrics_port_);
    common::Result<HttpReply> reply = client.Get("/metrics");
    if (!reply.ok() || reply->status != 200) return 0;
    return metrics::testing::ParseExposition(reply->body).Value(family, labels).value_or(0);
  }
  double Refused(const std::string& listener, const std::string& reason) {
    return Scrape("taskgov_http_connections_refused_total",
                  {{"listener", listener}, {"reason", reason}});
  }

  // Sends `n` filter requests on one kept-alive client (a new connection every `reconnect_every`
  // requests, as after an idle close); returns how many got an HTTP 200.
  int SchedulerRequests(int n, int reconnect_every) {
    HttpClient scheduler("127.0.0.1", webhook_port_, milliseconds(10'000));
    int ok = 0;
    for (int i = 0; i < n; ++i) {
      if (reconnect_every > 0 && i % reconnect_every == 0) scheduler.CloseConnection();
      common::Result<HttpReply> r = scheduler.Post("/filter", kFilterBody);
      if (r.ok() && r->status == 200) {
        ++ok;
      } else {
        ADD_FAILURE() << "request " << i << ": "
                      << (r.ok() ? "HTTP " + std::to_string(r->status) : r.error().message);
      }
    }
    return ok;
  }

  // Log lines (stderr, read so far and until `wait` passes) that contain `needle`.
  int LinesWith(const std::string& needle, milliseconds wait) {
    (void)proc_.WaitForLine("\x01never\x01", wait);  // reads what arrived meanwhile
    int n = 0;
    for (const std::string& line : proc_.stderr_lines())
      n += line.find(needle) != std::string::npos;
    return n;
  }

  std::filesystem::path config_dir_;
  common::testing::Subprocess proc_;
  uint16_t webhook_port_ = 0;
  uint16_t metrics_port_ = 0;
  uint16_t health_port_ = 0;  // the probes' listener
  std::vector<int> fds_;
};

// Failure 1: connections that send nothing fill the cap. Before: every new connection was closed
// at once (no reply) until the idle connections hit the 90 s idle timeout.
TEST_F(HostileClientsTest, IdleConnectionsAtTheCapDoNotLockTheSchedulerOut) {
  Start({"--max-connections=32", "--header-timeout=200ms"});
  OpenIdle(webhook_port_, 48);  // the cap, and more
  EXPECT_EQ(SchedulerRequests(20, /*reconnect_every=*/5), 20);

  HttpClient probe("127.0.0.1", metrics_port_);
  common::Result<HttpReply> health = probe.Get("/healthz");
  ASSERT_TRUE(health.ok()) << health.error().message;
  EXPECT_EQ(health->status, 200);

  // Every idle connection is closed by the server at its header deadline (reads give up after
  // 10 s: a connection held to the idle timeout fails here).
  for (size_t i = 0; i < fds_.size(); ++i) {
    bool closed = false;
    EXPECT_EQ(ReadUntilClosed(fds_[i], &closed), "") << "connection " << i;
    EXPECT_TRUE(closed) << "connection " << i << " still open";
  }
  // What an operator sees: the refusals counted by reason, and a bounded number of log lines.
  EXPECT_GE(Refused("webhook", "idle_evicted") + Refused("webhook", "header_timeout"), 48);
  EXPECT_EQ(Refused("webhook", "cap"), 0);
  EXPECT_EQ(Scrape("taskgov_http_open_connections", {{"listener", "webhook"}}), 0);
  const int lines = LinesWith("\"reason\":\"header_timeout\"", milliseconds(200));
  EXPECT_GE(lines, 1);
  EXPECT_LE(lines, 3);  // one per 10 s, not one per connection
}

// Failure 1, slowloris: clients that trickle header bytes and reconnect when cut off. Before,
// the scheduler's connections found the cap full nearly all the time.
TEST_F(HostileClientsTest, SlowlorisClientsThatReconnectDoNotLockTheSchedulerOut) {
  Start({"--max-connections=32", "--header-timeout=200ms"});
  std::atomic<bool> stop{false};
  std::atomic<int> reconnects{0};
  std::thread attacker([&] {
    std::vector<int> conns(48, -1);
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (!stop.load() && std::chrono::steady_clock::now() < give_up) {
      for (int& fd : conns) {
        if (fd >= 0 && SendAll(fd, "x")) continue;  // one more header byte
        if (fd >= 0) ::close(fd);
        fd = RawConnect(webhook_port_);
        if (fd >= 0 && SendAll(fd, "POST /filter HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")) {
          reconnects.fetch_add(1);
        }
      }
      std::this_thread::sleep_for(milliseconds(20));
    }
    for (int fd : conns) {
      if (fd >= 0) ::close(fd);
    }
  });
  // The attacker holds the cap before the scheduler starts.
  for (int i = 0; i < 1000 && reconnects.load() < 48; ++i) {
    std::this_thread::sleep_for(milliseconds(5));
  }
  // The scheduler calls every few milliseconds while the attacker is cut off and comes back at
  // least three times over (bounded: at most 300 rounds).
  int sent = 0, ok = 0;
  for (int round = 0; round < 300 && (round < 10 || reconnects.load() < 4 * 48); ++round) {
    ok += SchedulerRequests(3, /*reconnect_every=*/2);
    sent += 3;
    std::this_thread::sleep_for(milliseconds(10));
  }
  stop.store(true);
  attacker.join();
  EXPECT_EQ(ok, sent);
  EXPECT_GE(reconnects.load(), 4 * 48);  // the attacker was cut off and came back
  EXPECT_GE(Refused("webhook", "idle_evicted") + Refused("webhook", "header_timeout"), 1);
}

// The probes have their own listener, cap and rules: /healthz answers while both ports are
// flooded with idle connections.
TEST_F(HostileClientsTest, HealthzAnswersWhileBothListenersAreFlooded) {
  Start({"--max-connections=32", "--metrics-max-connections=8", "--header-timeout=200ms"});
  OpenIdle(webhook_port_, 40);
  OpenIdle(metrics_port_, 20);
  for (int i = 0; i < 5; ++i) {
    HttpClient probe("127.0.0.1", metrics_port_);  // a new connection, as the kubelet's probes
    common::Result<HttpReply> health = probe.Get("/healthz");
    ASSERT_TRUE(health.ok()) << health.error().message;
    EXPECT_EQ(health->status, 200);
  }
  EXPECT_EQ(SchedulerRequests(5, /*reconnect_every=*/1), 5);
  EXPECT_GE(Refused("metrics", "idle_evicted") + Refused("metrics", "header_timeout"), 12);
}

// A policy of `teams` teams on two instance types: a /metrics of thousands of series.
std::string ManyTeams(int teams) {
  std::string y =
      "apiVersion: taskgov.io/v1\nkind: TaskGovernancePolicy\ndefaultCohort: all\nteams:\n";
  for (int t = 0; t < teams; ++t) {
    y += "  - name: t" + std::to_string(t) +
         "\n    compute:\n      - {instanceType: ml.p5.48xlarge, accelerators: 8}\n"
         "      - {instanceType: ml.g5.12xlarge, accelerators: 4}\n";
  }
  return y;
}

// Probes /healthz and /readyz (alternately) on a new connection every 20 ms, `n` times, as the
// kubelet does (1 s timeout); their latencies in ms, and a failure for each that is not a 200.
std::vector<double> Probe(uint16_t port, int n) {
  std::vector<double> ms;
  for (int i = 0; i < n; ++i) {
    HttpClient probe("127.0.0.1", port, milliseconds(1000));
    const auto start = std::chrono::steady_clock::now();
    common::Result<HttpReply> r = probe.Get(i % 2 == 0 ? "/healthz" : "/readyz");
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                     .count());
    if (!r.ok() || r->status != 200) {
      ADD_FAILURE() << "probe " << i << ": "
                    << (r.ok() ? "HTTP " + std::to_string(r->status) : r.error().message);
    }
    std::this_thread::sleep_for(milliseconds(20));
  }
  std::sort(ms.begin(), ms.end());
  return ms;
}

// Issue 36, item 2: the kubelet's probes answer within milliseconds whatever /metrics is doing:
// first 24 scrapers read a large /metrics in a loop; then 64 connections pipeline /metrics
// without reading a byte (the metrics listener's whole cap, each stuck writing its reply).
// Before, the probes shared the metrics listener — its cap and its one I/O thread — and were
// answered 503 at the cap, or after a queue of renders.
TEST_F(HostileClientsTest, ProbesAnswerWithinMillisecondsWhileMetricsIsStormed) {
  std::ofstream(config_dir_ / "policy.yaml") << ManyTeams(400);
  Start({"--request-timeout=20s"});
  const uint16_t probes = health_port_ != 0 ? health_port_ : metrics_port_;
  {
    HttpClient scrape("127.0.0.1", metrics_port_);
    ASSERT_TRUE(extender::testing::Eventually([&] {
      common::Result<HttpReply> r = scrape.Get("/metrics");
      return r.ok() && r->body.find("team=\"t399\"") != std::string::npos;
    }));
  }
  // 1. Ordinary scrapers, as many as fast as they can.
  std::atomic<bool> stop{false};
  std::atomic<int> scrapes{0};
  std::vector<std::thread> scrapers;
  for (int i = 0; i < 24; ++i) {
    scrapers.emplace_back([&] {
      HttpClient scrape("127.0.0.1", metrics_port_, milliseconds(5000));
      while (!stop.load(std::memory_order_relaxed)) {
        common::Result<HttpReply> r = scrape.Get("/metrics");
        if (r.ok() && r->status == 200) scrapes.fetch_add(1, std::memory_order_relaxed);
      }
    });
  }
  std::this_thread::sleep_for(milliseconds(300));
  const std::vector<double> scraped = Probe(probes, 100);
  stop.store(true);
  for (std::thread& t : scrapers) t.join();
  // 2. Clients that pipeline /metrics and never read.
  std::string pipelined;
  for (int i = 0; i < 200; ++i) pipelined += "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n";
  for (int i = 0; i < 64 + 8; ++i) {  // the cap, and the connections waiting for their 503
    const int fd = RawConnect(metrics_port_);
    ASSERT_GE(fd, 0) << "connect " << i;
    fds_.push_back(fd);
    int small = 4096;  // the replies pile up in the server's socket, never read
    ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
    (void)SendAll(fd, pipelined);
  }
  std::this_thread::sleep_for(milliseconds(300));
  const std::vector<double> pipelining = Probe(probes, 100);
  {
    HttpClient old_probe("127.0.0.1", metrics_port_, milliseconds(1000));
    common::Result<HttpReply> r = old_probe.Get("/healthz");
    printf("meanwhile /healthz on the metrics listener: %s\n",
           r.ok() ? ("HTTP " + std::to_string(r->status)).c_str() : r.error().message.c_str());
  }
  for (int fd : fds_) ::close(fd);
  fds_.clear();
  for (const auto& [phase, ms] :
       {std::pair{"24 scrapers", &scraped}, std::pair{"64 pipelining clients", &pipelining}}) {
    const double p99 = (*ms)[ms->size() * 99 / 100];
    printf("probes beside %s: p50 %.2f ms, p99 %.2f ms, max %.2f ms\n", phase,
           (*ms)[ms->size() / 2], p99, ms->back());
    EXPECT_LT(p99, 100.0) << phase << ": far below the kubelet's 1 s timeout";
  }
  EXPECT_GE(scrapes.load(), 10);  // the storm was real
}

// Issue 36, item 8: four connections that declare 64 MiB bodies (the whole default budget of
// 256 MiB) and trickle a byte do not lock real filters out: the budget is reserved as bytes
// arrive, and the stalled bodies are cut off after --request-timeout's share of progress. Before,
// every filter got 503 (body_budget) for the trickling clients' 30 s.
TEST_F(HostileClientsTest, BodiesDeclaredLargeAndTrickledDoNotLockFiltersOut) {
  Start({});  // the defaults: 64 MiB body limit, 256 MiB budget
  for (int i = 0; i < 4; ++i) {
    const int fd = RawConnect(webhook_port_);
    ASSERT_GE(fd, 0);
    fds_.push_back(fd);
    ASSERT_TRUE(SendAll(fd, "POST /filter HTTP/1.1\r\nHost: x\r\nContent-Length: " +
                                std::to_string(64 << 20) + "\r\n\r\n{"));
  }
  std::this_thread::sleep_for(milliseconds(200));  // the trickling clients are in
  EXPECT_EQ(SchedulerRequests(20, /*reconnect_every=*/0), 20);
  EXPECT_EQ(Refused("webhook", "body_budget"), 0);
  EXPECT_LE(Scrape("taskgov_http_inflight_body_bytes", {{"listener", "webhook"}}), 4.0 * 65536);
}

uint64_t PeakRssBytes(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stoull(line.substr(6)) * 1024;  // "… kB"
  }
  return 0;
}

// Failure 4: ten connections each sending most of a 60 MiB filter body at once. Before, every
// body was buffered (RSS ≈ 627 MB, against the Deployment's 1 GiB limit); now the default
// budget (256 MiB) holds four and answers the others 503.
TEST_F(HostileClientsTest, LargeBodiesInFlightStayWithinTheBodyBudget) {
  Start({});  // the defaults: 64 MiB body limit, 256 MiB budget
  constexpr size_t kBody = 60 << 20;
  const std::string chunk(kBody - 1, ' ');  // all but the last byte: the requests stay in flight
  std::vector<std::thread> senders;
  for (int i = 0; i < 10; ++i) {
    const int fd = RawConnect(webhook_port_, milliseconds(30'000));
    ASSERT_GE(fd, 0);
    fds_.push_back(fd);
    senders.emplace_back([fd, &chunk] {
      // A refused request fails here (the server closed it), or not: the last megabytes of a
      // body can sit in loopback's socket buffers when the server refuses it.
      (void)(SendAll(fd,
                     "POST /filter HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json"
                     "\r\nContent-Length: " +
                         std::to_string(kBody) + "\r\n\r\n") &&
             SendAll(fd, chunk));
    });
  }
  for (std::thread& t : senders) t.join();
  const uint64_t peak = PeakRssBytes(proc_.pid());
  ASSERT_GT(peak, 0u);
  EXPECT_LT(peak, uint64_t{400} << 20) << "peak RSS " << (peak >> 20) << " MiB";
  // Four bodies fit the budget at a time: the server holds at most four of the ten requests
  // (no reply, not closed) once each has been read as far as its budget allows (a wait for room
  // lasts body_budget_wait) and the rest answered 503. A body whose last byte never comes is cut
  // off after 10 s without progress (request_timeout), and its room goes to another: on a loaded
  // machine the ten senders can take that long, so each cut-off lets one more body in.
  const auto held = [this] {
    int n = 0;
    for (int fd : fds_) {
      pollfd p{.fd = fd, .events = POLLIN | POLLRDHUP, .revents = 0};
      if (::poll(&p, 1, 0) == 0) ++n;  // nothing to read and not closed: still in flight
    }
    return n;
  };
  EXPECT_TRUE(extender::testing::Eventually([&] { return held() <= 4; }, milliseconds(5'000)))
      << held() << " requests held";
  const double cut_off = Refused("webhook", "request_timeout");
  EXPECT_GE(Refused("webhook", "body_budget") + cut_off, 6);
  EXPECT_LE(Scrape("taskgov_http_inflight_body_bytes", {{"listener", "webhook"}}),
            static_cast<double>(256 << 20));

  // The clients give up; the process was not killed and serves on.
  for (int fd : fds_) ::close(fd);
  fds_.clear();
  EXPECT_EQ(SchedulerRequests(3, 0), 3);
  EXPECT_EQ(::kill(proc_.pid(), 0), 0);
}

}  // namespace
}  // namespace taskgov::e2e

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (argc < 2) {
    fprintf(stderr, "usage: %s <path to taskgov-extender>\n", argv[0]);
    return 2;
  }
  taskgov::e2e::g_binary = taskgov::common::testing::RunfilePath(argv[1]);
  return RUN_ALL_TESTS();
}
