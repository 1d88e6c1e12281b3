#include "extender/http_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <thread>

#include <gtest/gtest.h>

#include "e2e/http_client.h"

namespace taskgov::extender {
namespace {

using std::chrono::milliseconds;

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
    server_ = std::make_unique<HttpServer>(options, std::move(routes));
    Status s = server_->Start();
    ASSERT_TRUE(s.ok()) << s.error().message;
  }

  void TearDown() override {
    if (server_) server_->Shutdown(milliseconds(500));
  }

  // A raw TCP connection for clients that misbehave on purpose.
  int RawConnect() {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(server_->port());
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    return fd;
  }

  static std::string ReadAll(int fd) {
    std::string out;
    char buf[4096];
    ssize_t n;
    while ((n = ::read(fd, buf, sizeof(buf))) > 0) out.append(buf, static_cast<size_t>(n));
    return out;
  }

  std::unique_ptr<HttpServer> server_;
  std::atomic<int> calls_{0};
};

TEST_F(HttpServerTest, RoutesAndStatusCodes) {
  StartServer();
  e2e::HttpClient client("127.0.0.1", server_->port());
  Result<e2e::HttpReply> ok = client.Post("/echo", "{\"a\":1}");
  ASSERT_TRUE(ok.ok()) << ok.error().message;
  EXPECT_EQ(ok->status, 200);
  EXPECT_EQ(ok->body, "{\"a\":1}");
  EXPECT_EQ(ok->headers["content-length"], "7");
  EXPECT_EQ(ok->headers.count("transfer-encoding"), 0u);

  Result<e2e::HttpReply> query = client.Post("/echo?x=1", "q");
  ASSERT_TRUE(query.ok());
  EXPECT_EQ(query->status, 200);

  Result<e2e::HttpReply> missing = client.Post("/nope", "{}");
  ASSERT_TRUE(missing.ok());
  EXPECT_EQ(missing->status, 404);
  EXPECT_NE(missing->body.find("no such endpoint: /nope"), std::string::npos);

  Result<e2e::HttpReply> wrong = client.Get("/echo");
  ASSERT_TRUE(wrong.ok());
  EXPECT_EQ(wrong->status, 405);
  EXPECT_EQ(wrong->headers["allow"], "POST");
}

TEST_F(HttpServerTest, OversizedBodyIs413AndServerKeepsServing) {
  StartServer();
  e2e::HttpClient client("127.0.0.1", server_->port());
  Result<e2e::HttpReply> big = client.Post("/echo", std::string(4096, 'x'));
  ASSERT_TRUE(big.ok()) << big.error().message;
  EXPECT_EQ(big->status, 413);
  EXPECT_NE(big->body.find("limit of 1024 bytes for /echo"), std::string::npos) << big->body;
  EXPECT_EQ(calls_.load(), 0);
  Result<e2e::HttpReply> after = client.Post("/echo", "fine");
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
  e2e::HttpClient client("127.0.0.1", server_->port());
  for (int i = 0; i < 1000; ++i) {
    Result<e2e::HttpReply> r = client.Post("/echo", std::to_string(i));
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

  e2e::HttpClient client("127.0.0.1", server_->port());
  for (int i = 0; i < 50; ++i) {
    Result<e2e::HttpReply> r = client.Post("/echo", "x");
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
  e2e::HttpClient a("127.0.0.1", server_->port());
  e2e::HttpClient b("127.0.0.1", server_->port());
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
      e2e::HttpClient client("127.0.0.1", server_->port());
      for (int i = 0; i < 100; ++i) {
        std::string body = std::to_string(t) + ":" + std::to_string(i);
        Result<e2e::HttpReply> r = client.Post("/echo", body);
        if (r.ok() && r->status == 200 && r->body == body) ok.fetch_add(1);
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok.load(), 800);
}

TEST_F(HttpServerTest, ShutdownClosesIdleConnectionsPromptly) {
  StartServer();
  e2e::HttpClient client("127.0.0.1", server_->port());
  ASSERT_TRUE(client.Get("/healthz").ok());
  const auto start = std::chrono::steady_clock::now();
  server_->Shutdown(milliseconds(2000));
  EXPECT_LT(std::chrono::steady_clock::now() - start, milliseconds(1000));
  EXPECT_FALSE(client.Get("/healthz").ok());
}

}  // namespace
}  // namespace taskgov::extender
