// The webhooks end to end: a real HttpServer on 127.0.0.1:0 serving WebhookHandlers over the
// FakeDecider, driven by the kube-scheduler-like extender::testing::ExtenderClient and by raw
// sockets that misbehave.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <fstream>
#include <sstream>
#include <thread>

#include "extender/fake_decider.h"
#include "extender/handlers.h"
#include "extender/http_server.h"
#include "extender/metrics_http.h"
#include "extender/testing/extender_client.h"
#include "metrics/metrics.h"
#include "metrics/testing/exposition.h"

namespace taskgov::extender {
namespace {

using std::chrono::milliseconds;

constexpr const char* kPod =
    R"({"metadata":{"name":"w-0","namespace":"team-a","uid":"u-1","labels":{"app":"x"}},)"
    R"("spec":{"priority":5,"containers":[{"name":"m","resources":{"requests":)"
    R"({"nvidia.com/gpu":"8","cpu":"4"}}}]}})";

std::string Node(const std::string& name, const std::string& gpus) {
  return R"({"metadata":{"name":")" + name +
         R"(","labels":{"node.kubernetes.io/instance-type":"ml.p5.48xlarge"},"annotations":)"
         R"({"a":"\u003cb\u003e"}},"status":{"allocatable":{"nvidia.com/gpu":")" +
         gpus + R"(","cpu":"192"},"images":[{"names":["x"],"sizeBytes":1}]}})";
}

class WebhookServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    WebhookOptions options;
    options.url_prefix = "/taskgov";
    handlers_ = std::make_unique<WebhookHandlers>(&decider_, options);
    HttpServerOptions server_options;
    server_options.io_threads = 2;
    server_options.header_timeout = milliseconds(5000);
    server_options.request_timeout = milliseconds(5000);
    server_options.observer = MetricsObserver(metrics_);
    server_ = std::make_unique<HttpServer>(server_options, handlers_->Routes());
    common::Status s = server_->Start();
    ASSERT_TRUE(s.ok()) << s.error().message;
  }

  void TearDown() override { server_->Shutdown(milliseconds(1000)); }

  extender::testing::ExtenderClient Client(
      extender::testing::ExtenderKeys keys = extender::testing::ExtenderKeys::kGoFieldNames) {
    extender::testing::ExtenderClientOptions options;
    options.port = server_->port();
    options.url_prefix = "/taskgov/";
    options.keys = keys;
    return extender::testing::ExtenderClient(options);
  }

  int RawConnect() {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(server_->port());
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    return fd;
  }

  static void SendAll(int fd, const std::string& data) {
    size_t sent = 0;
    while (sent < data.size()) {
      ssize_t n = ::send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
      if (n <= 0) return;
      sent += static_cast<size_t>(n);
    }
  }

  static std::string ReadAll(int fd) {
    std::string out;
    char buf[4096];
    ssize_t n;
    while ((n = ::read(fd, buf, sizeof(buf))) > 0) out.append(buf, static_cast<size_t>(n));
    return out;
  }

  // taskgov_webhook_requests_total{verb, outcome} as the exposition renders it.
  double Count(Verb verb, Outcome outcome) {
    return metrics::testing::ParseExposition(metrics_.Render())
        .Value("taskgov_webhook_requests_total",
               {{"verb", VerbName(verb)},
                {"outcome", std::string(metrics::WebhookOutcomeName(outcome))}})
        .value_or(0);
  }
  // The observer runs after a reply is written, so the client may read it first: waits (bounded)
  // until the count reaches `expected`, and returns the count.
  double CountWhenAt(Verb verb, Outcome outcome, double expected) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    double n = Count(verb, outcome);
    while (n < expected && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(milliseconds(1));
      n = Count(verb, outcome);
    }
    return n;
  }

  metrics::Metrics metrics_;
  testing::FakeDecider decider_;
  std::unique_ptr<WebhookHandlers> handlers_;
  std::unique_ptr<HttpServer> server_;
};

TEST_F(WebhookServerTest, EveryVerbInBothKeyCasings) {
  for (auto keys : {extender::testing::ExtenderKeys::kGoFieldNames,
                    extender::testing::ExtenderKeys::kLowerCase}) {
    extender::testing::ExtenderClient client = Client(keys);

    common::Result<extender::testing::FilterReply> names =
        client.FilterNames(kPod, {"n1", "busy-2", "full-3"});
    ASSERT_TRUE(names.ok()) << names.error().message;
    EXPECT_EQ(names->feasible, std::vector<std::string>{"n1"});
    EXPECT_EQ(names->failed_nodes.count("busy-2"), 1u);
    EXPECT_EQ(names->failed_and_unresolvable_nodes.count("full-3"), 1u);
    EXPECT_EQ(names->error, "");
    EXPECT_FALSE(names->nodes.has_value());

    const std::vector<std::string> nodes = {Node("p5-a", "8"), Node("p5-b", "4"),
                                            Node("p5-c", "8")};
    common::Result<extender::testing::FilterReply> full = client.FilterNodes(kPod, nodes);
    ASSERT_TRUE(full.ok()) << full.error().message;
    EXPECT_EQ(full->feasible, (std::vector<std::string>{"p5-a", "p5-c"}));
    ASSERT_TRUE(full->nodes.has_value());
    EXPECT_EQ(*full->nodes, (std::vector<std::string>{nodes[0], nodes[2]}));  // byte for byte
    EXPECT_NE(full->failed_and_unresolvable_nodes.at("p5-b").find("allocatable 4"),
              std::string::npos);

    common::Result<std::vector<extender::testing::HostScore>> scores =
        client.PrioritizeNames(kPod, {"a", "bb"});
    ASSERT_TRUE(scores.ok()) << scores.error().message;
    ASSERT_EQ(scores->size(), 2u);
    EXPECT_EQ((*scores)[1].host, "bb");
    EXPECT_EQ((*scores)[1].score, (2 + 7 + 2) % 11);
    common::Result<std::vector<extender::testing::HostScore>> node_scores =
        client.PrioritizeNodes(kPod, nodes);
    ASSERT_TRUE(node_scores.ok()) << node_scores.error().message;
    EXPECT_EQ(node_scores->size(), 3u);

    common::Result<extender::testing::PreemptReply> meta =
        client.PreemptMeta(kPod, {{"n1", {{"v1", "v2"}, 1}}, {"protected-2", {{"v3"}, 0}}});
    ASSERT_TRUE(meta.ok()) << meta.error().message;
    ASSERT_EQ(meta->node_to_victims.size(), 1u);
    EXPECT_EQ(meta->node_to_victims.at("n1").uids, (std::vector<std::string>{"v2", "v1"}));
    EXPECT_EQ(meta->node_to_victims.at("n1").num_pdb_violations, 1);

    const std::string low = R"({"metadata":{"uid":"low"},"spec":{"priority":1}})";
    const std::string high = R"({"metadata":{"uid":"high"},"spec":{"priority":9}})";
    common::Result<extender::testing::PreemptReply> full_victims =
        client.PreemptFull(kPod, {{"n1", {{low, high}, 0}}});
    ASSERT_TRUE(full_victims.ok()) << full_victims.error().message;
    EXPECT_EQ(full_victims->node_to_victims.at("n1").uids,
              (std::vector<std::string>{"high", "low"}));

    common::Result<std::string> bound = client.Bind("w-0", "team-a", "u-1", "n1");
    ASSERT_TRUE(bound.ok()) << bound.error().message;
    EXPECT_EQ(*bound, "");
    common::Result<std::string> conflict = client.Bind("w-0", "team-a", "conflict-1", "n1");
    ASSERT_TRUE(conflict.ok());
    EXPECT_NE(conflict->find("409 Conflict"), std::string::npos);

    EXPECT_EQ(client.connections_opened(), 1);
  }
  EXPECT_EQ(CountWhenAt(Verb::kFilter, Outcome::kOk, 4), 4);
  EXPECT_EQ(CountWhenAt(Verb::kBind, Outcome::kErrorReply, 2), 2);
}

TEST_F(WebhookServerTest, ThousandSequentialFiltersOnOneConnection) {
  extender::testing::ExtenderClient client = Client();
  std::vector<std::string> names;
  for (int i = 0; i < 50; ++i) names.push_back("node-" + std::to_string(i));
  names.push_back("busy-x");
  for (int i = 0; i < 1000; ++i) {
    common::Result<extender::testing::FilterReply> reply = client.FilterNames(kPod, names);
    ASSERT_TRUE(reply.ok()) << i << ": " << reply.error().message;
    ASSERT_EQ(reply->feasible.size(), 50u) << i;
  }
  EXPECT_EQ(client.connections_opened(), 1);
  EXPECT_EQ(CountWhenAt(Verb::kFilter, Outcome::kOk, 1000), 1000);
}

TEST_F(WebhookServerTest, BadRequestsBetweenGoodOnesOnTheSameConnection) {
  extender::testing::ExtenderClient client = Client();
  int good = 0;
  for (int i = 0; i < 20; ++i) {
    common::Result<extender::testing::FilterReply> ok = client.FilterNames(kPod, {"n1", "full-2"});
    ASSERT_TRUE(ok.ok()) << ok.error().message;
    EXPECT_EQ(ok->feasible, std::vector<std::string>{"n1"});
    ++good;

    common::Result<common::testing::HttpReply> garbage =
        client.PostRaw("filter", "{\"Pod\": [1, 2");
    ASSERT_TRUE(garbage.ok()) << garbage.error().message;
    EXPECT_EQ(garbage->status, 400);
    EXPECT_NE(garbage->body.find("malformed JSON"), std::string::npos);
    EXPECT_EQ(garbage->headers.count("content-length"), 1u);

    common::Result<common::testing::HttpReply> quantity = client.PostRaw(
        "prioritize",
        R"({"Pod":{"metadata":{"name":"p","namespace":"n","uid":"u"},"spec":{"overhead":)"
        R"({"cpu":"1.5.3"}}},"NodeNames":["a"]})");
    ASSERT_TRUE(quantity.ok());
    EXPECT_EQ(quantity->status, 400);
    EXPECT_NE(quantity->body.find("Pod: spec.overhead[\\\"cpu\\\"]: invalid quantity '1.5.3'"),
              std::string::npos)
        << quantity->body;

    common::Result<extender::testing::FilterReply> unusable_seen =
        client.FilterNames(R"({"metadata":{"name":"nouid","namespace":"n"}})", {"n1"});
    ASSERT_TRUE(unusable_seen.ok());
    EXPECT_EQ(unusable_seen->error, "Pod has no metadata.uid");
    EXPECT_TRUE(unusable_seen->feasible.empty());

    common::Result<std::vector<extender::testing::HostScore>> scores =
        client.PrioritizeNames(kPod, {"n1"});
    ASSERT_TRUE(scores.ok()) << scores.error().message;
    ++good;
  }
  EXPECT_EQ(good, 40);
  // 400s written by the handlers keep the connection; nothing here needed a new one.
  EXPECT_EQ(client.connections_opened(), 1);
  EXPECT_EQ(CountWhenAt(Verb::kFilter, Outcome::kBadRequest, 20), 20);
  EXPECT_EQ(CountWhenAt(Verb::kPrioritize, Outcome::kBadRequest, 20), 20);
  EXPECT_EQ(CountWhenAt(Verb::kFilter, Outcome::kUnusable, 20), 20);
  EXPECT_EQ(CountWhenAt(Verb::kFilter, Outcome::kOk, 20), 20);
}

TEST_F(WebhookServerTest, OversizedBodyGets413AndTheServerGoesOn) {
  // A 70 MiB filter body: the server answers 413 from the Content-Length alone.
  int fd = RawConnect();
  const size_t size = size_t{70} << 20;
  SendAll(fd,
          "POST /taskgov/filter HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
          "Content-Length: " +
              std::to_string(size) + "\r\n\r\n");
  const std::string reply = ReadAll(fd);
  ::close(fd);
  EXPECT_EQ(reply.substr(0, 12), "HTTP/1.1 413") << reply;
  EXPECT_NE(reply.find("/taskgov/filter"), std::string::npos);

  // bind's limit is 64 KiB.
  fd = RawConnect();
  const std::string bind_body(70 * 1024, ' ');
  SendAll(fd, "POST /taskgov/bind HTTP/1.1\r\nHost: x\r\nContent-Length: " +
                  std::to_string(bind_body.size()) + "\r\n\r\n");
  const std::string bind_reply = ReadAll(fd);
  ::close(fd);
  EXPECT_EQ(bind_reply.substr(0, 12), "HTTP/1.1 413") << bind_reply;

  extender::testing::ExtenderClient client = Client();
  common::Result<extender::testing::FilterReply> ok = client.FilterNames(kPod, {"n1"});
  ASSERT_TRUE(ok.ok()) << ok.error().message;
  EXPECT_EQ(ok->feasible, std::vector<std::string>{"n1"});
  EXPECT_EQ(decider_.filter_calls.load(), 1);
}

TEST_F(WebhookServerTest, TruncatedBodiesNeverReachTheDecider) {
  // The connection ends before the declared length: nothing is decided, nothing hangs.
  for (int i = 0; i < 5; ++i) {
    int fd = RawConnect();
    SendAll(fd,
            "POST /taskgov/filter HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{\"Pod\":{");
    ::shutdown(fd, SHUT_WR);
    const std::string reply = ReadAll(fd);  // the server closes without a reply
    ::close(fd);
    EXPECT_EQ(reply.find("200 OK"), std::string::npos);
  }
  // A complete HTTP request whose JSON is truncated: 400.
  extender::testing::ExtenderClient client = Client();
  const std::string body = client.FilterNamesBody(kPod, {"n1"});
  common::Result<common::testing::HttpReply> cut =
      client.PostRaw("filter", body.substr(0, body.size() / 2));
  ASSERT_TRUE(cut.ok());
  EXPECT_EQ(cut->status, 400);
  EXPECT_EQ(decider_.filter_calls.load(), 0);
  common::Result<extender::testing::FilterReply> ok = client.FilterNames(kPod, {"n1"});
  ASSERT_TRUE(ok.ok()) << ok.error().message;
  EXPECT_EQ(decider_.filter_calls.load(), 1);
}

// Good clients on their own connections keep being answered while others send garbage.
TEST_F(WebhookServerTest, BadConnectionsDoNotDisturbGoodOnes) {
  constexpr int kGoodClients = 3;
  constexpr int kRequestsEach = 100;
  std::atomic<bool> stop{false};
  std::atomic<int> answered{0};
  std::atomic<int> bad_sent{0};
  std::vector<std::thread> good;
  for (int c = 0; c < kGoodClients; ++c) {
    good.emplace_back([&, c] {
      extender::testing::ExtenderClient client = Client();
      for (int i = 0; i < kRequestsEach; ++i) {
        const std::string node = "n-" + std::to_string(c) + "-" + std::to_string(i);
        common::Result<extender::testing::FilterReply> reply =
            client.FilterNames(kPod, {node, "full-x"});
        if (reply.ok() && reply->feasible == std::vector<std::string>{node}) {
          answered.fetch_add(1, std::memory_order_relaxed);
        } else {
          ADD_FAILURE() << (reply.ok() ? "wrong reply" : reply.error().message);
        }
      }
    });
  }
  std::thread bad([&] {
    extender::testing::ExtenderClient client = Client();
    const std::string deep = "{\"Pod\":" + std::string(200000, '[');
    while (!stop.load(std::memory_order_relaxed)) {
      for (const std::string& body :
           {std::string("{"), deep, std::string("[1,2,3]"),
            std::string(R"({"Pod":{"spec":{"overhead":{"cpu":"-4"}}}})")}) {
        common::Result<common::testing::HttpReply> r = client.PostRaw("filter", body);
        ASSERT_TRUE(r.ok()) << r.error().message;
        EXPECT_EQ(r->status, 400);
        bad_sent.fetch_add(1, std::memory_order_relaxed);
      }
      int fd = RawConnect();
      SendAll(fd, "POST /taskgov/preempt HTTP/1.1\r\nHost: x\r\nContent-Length: 9\r\n\r\n{\"Po");
      ::shutdown(fd, SHUT_WR);
      (void)ReadAll(fd);
      ::close(fd);
    }
  });
  for (std::thread& t : good) t.join();
  stop.store(true, std::memory_order_relaxed);
  bad.join();
  EXPECT_EQ(answered.load(), kGoodClients * kRequestsEach);
  EXPECT_GT(bad_sent.load(), 0);
  EXPECT_EQ(CountWhenAt(Verb::kFilter, Outcome::kOk, kGoodClients * kRequestsEach),
            kGoodClients * kRequestsEach);
  EXPECT_EQ(CountWhenAt(Verb::kFilter, Outcome::kBadRequest, bad_sent.load()), bad_sent.load());
}

// The outcome label says how each request really ended: a 200 that carries Error is error_reply,
// not ok; replies the server writes itself are labelled from their status.
TEST_F(WebhookServerTest, MetricsRenderTheRealOutcomeOfEachRequest) {
  extender::testing::ExtenderClient client = Client();
  ASSERT_TRUE(client.FilterNames(kPod, {"n1"}).ok());
  common::Result<extender::testing::FilterReply> not_ready =
      client.FilterNames(R"({"metadata":{"name":"p","namespace":"n","uid":"u",)"
                         R"("labels":{"taskgov.test/error":"not leader"}}})",
                         {"n1"});
  ASSERT_TRUE(not_ready.ok());
  EXPECT_EQ(not_ready->error, "not leader");
  ASSERT_TRUE(client.FilterNames(R"({"metadata":{"name":"nouid","namespace":"n"}})", {"n1"}).ok());
  common::Result<common::testing::HttpReply> garbage = client.PostRaw("filter", "{");
  ASSERT_TRUE(garbage.ok());
  EXPECT_EQ(garbage->status, 400);
  common::Result<std::string> conflict = client.Bind("w-0", "team-a", "conflict-1", "n1");
  ASSERT_TRUE(conflict.ok());

  for (const auto& [request, status] :
       {std::pair{std::string("GET /taskgov/filter HTTP/1.1\r\nHost: x\r\n\r\n"), 405},
        std::pair{std::string("POST /taskgov/bind HTTP/1.1\r\nHost: x\r\n"
                              "Content-Length: 999999999\r\n\r\n"),
                  413},
        std::pair{std::string("POST /nope HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n"),
                  404}}) {
    int fd = RawConnect();
    SendAll(fd, request);
    ::shutdown(fd, SHUT_WR);
    EXPECT_NE(ReadAll(fd).find(" " + std::to_string(status) + " "), std::string::npos);
    ::close(fd);
  }

  EXPECT_EQ(CountWhenAt(Verb::kFilter, Outcome::kOk, 1), 1);
  EXPECT_EQ(CountWhenAt(Verb::kFilter, Outcome::kErrorReply, 1), 1);
  EXPECT_EQ(CountWhenAt(Verb::kFilter, Outcome::kUnusable, 1), 1);
  EXPECT_EQ(CountWhenAt(Verb::kFilter, Outcome::kBadRequest, 1), 1);
  EXPECT_EQ(CountWhenAt(Verb::kBind, Outcome::kErrorReply, 1), 1);
  EXPECT_EQ(Count(Verb::kBind, Outcome::kOk), 0);
  const auto counted = [&](std::string_view verb, std::string_view outcome) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    double n = 0;
    do {
      n = metrics::testing::ParseExposition(metrics_.Render())
              .Value("taskgov_webhook_requests_total",
                     {{"verb", std::string(verb)}, {"outcome", std::string(outcome)}})
              .value_or(0);
    } while (n < 1 && std::chrono::steady_clock::now() < deadline);
    return n;
  };
  // Replies the server writes on a route's path keep its verb; other paths are "unknown".
  EXPECT_EQ(counted("filter", "method_not_allowed"), 1);
  EXPECT_EQ(counted("bind", "too_large"), 1);
  EXPECT_EQ(counted("unknown", "not_found"), 1);
}

}  // namespace
}  // namespace taskgov::extender
