#include "extender/http_server.h"

#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <future>
#include <mutex>
#include <thread>

#include <gtest/gtest.h>

#include "common/testing/http_client.h"
#include "extender/http_test_util.h"

namespace taskgov::extender {
namespace {

using std::chrono::milliseconds;
using testing::Eventually;
using testing::SendAll;

class HttpServerTest : public ::testing::Test {
 protected:
  void StartServer(HttpServerOptions options = {}) {
    std::vector<Route> routes;
    routes.push_back(Route{"/echo", "POST", 1024, [this](const HttpRequest& req) {
                             calls_.fetch_add(1);
                             return HttpResponse{200, "application/json", req.body, {}};
                           }});
    routes.push_back(Route{"/healthz", "GET", 0, [](const HttpRequest&) {
                             return HttpResponse{200, "text/plain", "ok\n", {}};
                           }});
    routes.push_back(Route{"/slow", "POST", 1024, [this](const HttpRequest& req) {
                             slow_entered_.set_value();
                             // Bounded: a broken test must not hang the server thread forever.
                             if (slow_release_.valid()) {
                               (void)slow_release_.wait_for(std::chrono::seconds(20));
                             }
                             return HttpResponse{200, "application/json", req.body, {}};
                           }});
    server_ = std::make_unique<HttpServer>(options, std::move(routes));
    common::Status s = server_->Start();
    ASSERT_TRUE(s.ok()) << s.error().message;
  }

  void TearDown() override {
    if (server_) server_->Shutdown(milliseconds(500));
  }

  // A raw TCP connection for clients that misbehave on purpose.
  int RawConnect() {
    int fd = testing::RawConnect(server_->port());
    EXPECT_GE(fd, 0);
    return fd;
  }

  static std::string ReadAll(int fd) { return testing::ReadUntilClosed(fd); }

  std::unique_ptr<HttpServer> server_;
  std::atomic<int> calls_{0};
  std::promise<void> slow_entered_;
  std::shared_future<void> slow_release_;
};

TEST_F(HttpServerTest, RoutesAndStatusCodes) {
  StartServer();
  common::testing::HttpClient client("127.0.0.1", server_->port());
  common::Result<common::testing::HttpReply> ok = client.Post("/echo", "{\"a\":1}");
  ASSERT_TRUE(ok.ok()) << ok.error().message;
  EXPECT_EQ(ok->status, 200);
  EXPECT_EQ(ok->body, "{\"a\":1}");
  EXPECT_EQ(ok->headers["content-length"], "7");
  EXPECT_EQ(ok->headers.count("transfer-encoding"), 0u);

  common::Result<common::testing::HttpReply> query = client.Post("/echo?x=1", "q");
  ASSERT_TRUE(query.ok());
  EXPECT_EQ(query->status, 200);

  common::Result<common::testing::HttpReply> missing = client.Post("/nope", "{}");
  ASSERT_TRUE(missing.ok());
  EXPECT_EQ(missing->status, 404);
  EXPECT_NE(missing->body.find("no such endpoint: /nope"), std::string::npos);

  common::Result<common::testing::HttpReply> wrong = client.Get("/echo");
  ASSERT_TRUE(wrong.ok());
  EXPECT_EQ(wrong->status, 405);
  EXPECT_EQ(wrong->headers["allow"], "POST");
}

TEST_F(HttpServerTest, OversizedBodyIs413AndServerKeepsServing) {
  StartServer();
  common::testing::HttpClient client("127.0.0.1", server_->port());
  common::Result<common::testing::HttpReply> big = client.Post("/echo", std::string(4096, 'x'));
  ASSERT_TRUE(big.ok()) << big.error().message;
  EXPECT_EQ(big->status, 413);
  EXPECT_NE(big->body.find("limit of 1024 bytes for /echo"), std::string::npos) << big->body;
  EXPECT_EQ(calls_.load(), 0);
  common::Result<common::testing::HttpReply> after = client.Post("/echo", "fine");
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->status, 200);
  EXPECT_EQ(server_->stats().bad_requests, 1u);
}

TEST_F(HttpServerTest, MalformedRequestIs400) {
  StartServer();
  int fd = RawConnect();
  std::string garbage = "NOT HTTP AT ALL\r\n\r\n";
  ASSERT_EQ(::write(fd, garbage.data(), garbage.size()), static_cast<ssize_t>(garbage.size()));
  std::string reply = ReadAll(fd);
  ::close(fd);
  EXPECT_EQ(reply.rfind("HTTP/1.1 400", 0), 0u) << reply;
}

TEST_F(HttpServerTest, ThousandSequentialRequestsOnOneConnection) {
  StartServer();
  common::testing::HttpClient client("127.0.0.1", server_->port());
  for (int i = 0; i < 1000; ++i) {
    common::Result<common::testing::HttpReply> r = client.Post("/echo", std::to_string(i));
    ASSERT_TRUE(r.ok()) << r.error().message;
    ASSERT_EQ(r->body, std::to_string(i));
  }
  EXPECT_EQ(client.connections_opened(), 1);
  EXPECT_EQ(calls_.load(), 1000);
}

TEST_F(HttpServerTest, TricklingClientIsCutOffWithoutSlowingOthers) {
  HttpServerOptions options;
  options.header_timeout = milliseconds(300);
  options.request_timeout = milliseconds(600);
  StartServer(options);
  int slow = RawConnect();
  const std::string partial = "POST /echo HTTP/1.1\r\nHost: x\r\n";
  ASSERT_EQ(::write(slow, partial.data(), 5), 5);  // first bytes, then silence

  common::testing::HttpClient client("127.0.0.1", server_->port());
  for (int i = 0; i < 50; ++i) {
    common::Result<common::testing::HttpReply> r = client.Post("/echo", "x");
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->status, 200);
  }
  // The slow connection is closed by the server at its header deadline: read() sees EOF.
  std::string reply = ReadAll(slow);
  ::close(slow);
  EXPECT_EQ(reply, "");
  server_->Shutdown(milliseconds(2000));  // waits for every session to end: stats are final
  EXPECT_EQ(server_->stats().timeouts, 1u);
}

TEST_F(HttpServerTest, ConnectionCapClosesExtraConnections) {
  HttpServerOptions options;
  options.max_connections = 2;
  StartServer(options);
  common::testing::HttpClient a("127.0.0.1", server_->port());
  common::testing::HttpClient b("127.0.0.1", server_->port());
  ASSERT_TRUE(a.Get("/healthz").ok());
  ASSERT_TRUE(b.Get("/healthz").ok());
  int extra = RawConnect();
  EXPECT_EQ(ReadAll(extra), "");  // closed at once
  ::close(extra);
  EXPECT_EQ(server_->stats().rejected_over_capacity, 1u);
  ASSERT_TRUE(a.Get("/healthz").ok());
}

TEST_F(HttpServerTest, ParallelClients) {
  HttpServerOptions options;
  options.io_threads = 4;
  StartServer(options);
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      common::testing::HttpClient client("127.0.0.1", server_->port());
      for (int i = 0; i < 100; ++i) {
        std::string body = std::to_string(t) + ":" + std::to_string(i);
        common::Result<common::testing::HttpReply> r = client.Post("/echo", body);
        if (r.ok() && r->status == 200 && r->body == body) ok.fetch_add(1);
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok.load(), 800);
}

TEST_F(HttpServerTest, ShutdownClosesIdleConnectionsPromptly) {
  StartServer();
  common::testing::HttpClient client("127.0.0.1", server_->port());
  ASSERT_TRUE(client.Get("/healthz").ok());
  const auto start = std::chrono::steady_clock::now();
  server_->Shutdown(milliseconds(2000));
  EXPECT_LT(std::chrono::steady_clock::now() - start, milliseconds(1000));
  EXPECT_FALSE(client.Get("/healthz").ok());
}

TEST_F(HttpServerTest, TruncatedBodyIsRejectedAndNeverHandled) {
  StartServer();
  // The client half-closes after part of the body: it can still read the 400.
  int half = RawConnect();
  ASSERT_TRUE(SendAll(half, "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nabc"));
  ::shutdown(half, SHUT_WR);
  std::string reply = ReadAll(half);
  ::close(half);
  EXPECT_EQ(reply.rfind("HTTP/1.1 400", 0), 0u) << reply;
  EXPECT_NE(reply.find("partial message"), std::string::npos) << reply;

  // The client goes away mid-body.
  int gone = RawConnect();
  ASSERT_TRUE(SendAll(gone, "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nab"));
  ::close(gone);

  common::testing::HttpClient client("127.0.0.1", server_->port());
  common::Result<common::testing::HttpReply> r = client.Post("/echo", "whole");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->body, "whole");
  EXPECT_TRUE(Eventually([&] { return server_->stats().open_connections == 1; }));
  EXPECT_EQ(calls_.load(), 1);  // only the whole request reached the handler
}

TEST_F(HttpServerTest, TricklingBodyIsCutAtTheRequestDeadlineWhileOthersAreServed) {
  HttpServerOptions options;
  options.header_timeout = milliseconds(5000);
  options.request_timeout = milliseconds(400);
  StartServer(options);
  constexpr size_t kBody = 1000;  // one byte per 10 ms: 10 s, far past the 400 ms deadline
  int slow = RawConnect();
  ASSERT_TRUE(SendAll(slow, "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: " +
                                std::to_string(kBody) + "\r\n\r\n"));
  std::atomic<size_t> sent{0};
  std::thread trickler([&] {
    // Steady progress does not extend the deadline; stops when the server hangs up.
    while (sent.load() < kBody && SendAll(slow, "x")) {
      sent.fetch_add(1);
      std::this_thread::sleep_for(milliseconds(10));
    }
  });
  common::testing::HttpClient client("127.0.0.1", server_->port());
  for (int i = 0; i < 50; ++i) {
    common::Result<common::testing::HttpReply> r = client.Post("/echo", std::to_string(i));
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_EQ(r->body, std::to_string(i));
  }
  bool closed = false;
  EXPECT_EQ(testing::ReadUntilClosed(slow, &closed), "");  // cut off without a reply
  EXPECT_TRUE(closed);
  trickler.join();
  ::close(slow);
  EXPECT_LT(sent.load(), kBody);
  server_->Shutdown(milliseconds(2000));  // waits for every session to end: stats are final
  EXPECT_EQ(server_->stats().timeouts, 1u);
  EXPECT_EQ(calls_.load(), 50);
}

TEST_F(HttpServerTest, ObserverSeesEveryReply) {
  struct Seen {
    std::string method, path;
    bool matched;
    int status;
    uint64_t in, out;
    bool sent, tls;
  };
  std::mutex mu;
  std::condition_variable cv;
  std::vector<Seen> seen;  // guarded by mu
  HttpServerOptions options;
  options.observer = [&](const RequestObservation& o) {
    EXPECT_GE(o.duration.count(), 0);
    std::lock_guard<std::mutex> lock(mu);
    seen.push_back(Seen{std::string(o.method), std::string(o.path), o.route_matched, o.status,
                        o.request_body_bytes, o.response_body_bytes, o.reply_sent, o.tls});
    cv.notify_all();
  };
  StartServer(options);
  common::testing::HttpClient client("127.0.0.1", server_->port());
  // The observer runs after the reply is written, and 404/405/413 close the connection: wait
  // for each observation so that they stay in request order.
  auto observed = [&](size_t n) {
    std::unique_lock<std::mutex> lock(mu);
    return cv.wait_for(lock, std::chrono::seconds(10), [&] { return seen.size() == n; });
  };
  ASSERT_TRUE(client.Post("/echo?x=1", "abc").ok());
  ASSERT_TRUE(observed(1));
  ASSERT_TRUE(client.Get("/echo").ok());
  ASSERT_TRUE(observed(2));
  ASSERT_TRUE(client.Post("/nope", "{}").ok());
  ASSERT_TRUE(observed(3));
  ASSERT_TRUE(client.Post("/echo", std::string(2000, 'x')).ok());
  ASSERT_TRUE(observed(4));
  std::lock_guard<std::mutex> lock(mu);
  EXPECT_EQ(seen[0].method, "POST");
  EXPECT_EQ(seen[0].path, "/echo");
  EXPECT_TRUE(seen[0].matched);
  EXPECT_EQ(seen[0].status, 200);
  EXPECT_EQ(seen[0].in, 3u);
  EXPECT_EQ(seen[0].out, 3u);
  EXPECT_TRUE(seen[0].sent);
  EXPECT_FALSE(seen[0].tls);
  EXPECT_EQ(seen[1].method, "GET");
  EXPECT_FALSE(seen[1].matched);
  EXPECT_EQ(seen[1].status, 405);
  EXPECT_EQ(seen[2].path, "/nope");
  EXPECT_FALSE(seen[2].matched);
  EXPECT_EQ(seen[2].status, 404);
  EXPECT_EQ(seen[3].status, 413);
  EXPECT_FALSE(seen[3].matched);
  EXPECT_EQ(seen[3].in, 0u);  // the body was never read
  EXPECT_GT(seen[3].out, 0u);
}

TEST_F(HttpServerTest, ClientReplacesAKeptAliveConnectionTheServerClosed) {
  HttpServerOptions options;
  options.idle_timeout = milliseconds(50);
  StartServer(options);
  common::testing::HttpClient client("127.0.0.1", server_->port());
  ASSERT_TRUE(client.Post("/echo", "1").ok());
  ASSERT_TRUE(Eventually([&] { return server_->stats().open_connections == 0; }));
  common::Result<common::testing::HttpReply> r = client.Post("/echo", "2");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->body, "2");
  EXPECT_EQ(client.connections_opened(), 2);
  EXPECT_EQ(client.stale_connections(), 1);
}

TEST_F(HttpServerTest, ManyParallelConnections) {
  HttpServerOptions options;
  options.io_threads = 4;
  StartServer(options);
  constexpr int kThreads = 4;
  constexpr int kClientsPerThread = 32;  // 128 connections open at once
  constexpr int kRounds = 5;
  std::atomic<int> ok{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::vector<std::unique_ptr<common::testing::HttpClient>> clients;
      for (int c = 0; c < kClientsPerThread; ++c) {
        clients.push_back(
            std::make_unique<common::testing::HttpClient>("127.0.0.1", server_->port()));
      }
      for (int round = 0; round < kRounds; ++round) {
        for (auto& client : clients) {
          const std::string body = std::to_string(t) + ":" + std::to_string(round);
          common::Result<common::testing::HttpReply> r = client->Post("/echo", body);
          if (r.ok() && r->status == 200 && r->body == body) ok.fetch_add(1);
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok.load(), kThreads * kClientsPerThread * kRounds);
  EXPECT_EQ(server_->stats().accepted, static_cast<uint64_t>(kThreads * kClientsPerThread));
}

TEST_F(HttpServerTest, ShutdownFinishesAnInFlightSlowHandlerButClosesIdleConnections) {
  std::promise<void> release;
  slow_release_ = release.get_future().share();
  StartServer();  // two I/O threads: the slow handler holds one
  int idle = RawConnect();
  ASSERT_TRUE(SendAll(idle, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"));

  common::Result<common::testing::HttpReply> slow_reply = common::Error{"not run"};
  std::thread slow([&] {
    common::testing::HttpClient client("127.0.0.1", server_->port());
    slow_reply = client.Post("/slow", "finish me");
  });
  ASSERT_EQ(slow_entered_.get_future().wait_for(std::chrono::seconds(10)),
            std::future_status::ready);

  std::thread stopper([&] { server_->Shutdown(milliseconds(10000)); });
  // The idle connection is closed while the slow handler is still running.
  bool closed = false;
  const std::string idle_reply = testing::ReadUntilClosed(idle, &closed);
  EXPECT_TRUE(closed);
  EXPECT_NE(idle_reply.find("ok\n"), std::string::npos) << idle_reply;
  ::close(idle);
  // New connections are refused once shutdown began.
  EXPECT_TRUE(Eventually([&] {
    int fd = testing::RawConnect(server_->port());
    if (fd >= 0) ::close(fd);
    return fd < 0;
  }));

  release.set_value();
  slow.join();
  stopper.join();
  ASSERT_TRUE(slow_reply.ok()) << slow_reply.error().message;
  EXPECT_EQ(slow_reply->status, 200);
  EXPECT_EQ(slow_reply->body, "finish me");
  EXPECT_EQ(slow_reply->headers["connection"], "close");
}

TEST(HttpServerStatusTest, BodilessAndInvalidStatusesDoNotCrash) {
  std::vector<Route> routes;
  routes.push_back(Route{"/nocontent", "GET", 0, [](const HttpRequest&) {
                           return HttpResponse{204, "text/plain", "ignored body", {}};
                         }});
  routes.push_back(Route{"/weird", "GET", 0, [](const HttpRequest&) {
                           return HttpResponse{42, "text/plain", "x", {}};
                         }});
  HttpServer server(HttpServerOptions{}, std::move(routes));
  ASSERT_TRUE(server.Start().ok());
  common::testing::HttpClient client("127.0.0.1", server.port());
  common::Result<common::testing::HttpReply> none = client.Get("/nocontent");
  ASSERT_TRUE(none.ok()) << none.error().message;
  EXPECT_EQ(none->status, 204);
  EXPECT_EQ(none->body, "");
  common::Result<common::testing::HttpReply> weird = client.Get("/weird");
  ASSERT_TRUE(weird.ok()) << weird.error().message;
  EXPECT_EQ(weird->status, 500);
  server.Shutdown(std::chrono::milliseconds(500));
}

}  // namespace
}  // namespace taskgov::extender
