#include "extender/http_server.h"

#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <future>
#include <memory>
#include <mutex>
#include <thread>

#include <gtest/gtest.h>

#include "extender/http_test_util.h"
#include "scheduler/common/testing/http_client.h"

namespace taskgov::extender {
namespace {

using std::chrono::milliseconds;
using testing::Eventually;
using testing::SendAll;

class HttpServerTest : public ::testing::Test {
 protected:
  // /echo's body limit is `echo_limit`.
  void StartServer(HttpServerOptions options = {}, uint64_t echo_limit = 1024) {
    std::vector<Route> routes;
    routes.push_back(Route{"/echo", "POST", echo_limit, [this](const HttpRequest& req) {
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

// A prefix route serves every path below it (the longest prefix wins, an exact route wins over
// both) and sees the query string and the Authorization header as sent.
TEST_F(HttpServerTest, PrefixRoutesQueriesAndAuthorization) {
  std::vector<Route> routes;
  auto echo_target = [](std::string name) {
    return [name](const HttpRequest& req) {
      return HttpResponse{200,
                          "text/plain",
                          name + " " + req.path + " ?" + req.query + " " + req.authorization,
                          {}};
    };
  };
  routes.push_back(Route{"/api/v1/", "GET", 0, echo_target("api"), /*prefix=*/true});
  routes.push_back(Route{"/api/v1/teams/", "GET", 0, echo_target("team"), /*prefix=*/true});
  routes.push_back(Route{"/api/v1/teams", "GET", 0, echo_target("teams")});
  server_ = std::make_unique<HttpServer>(HttpServerOptions{}, std::move(routes));
  ASSERT_TRUE(server_->Start().ok());
  common::testing::HttpClient client("127.0.0.1", server_->port());
  auto body = [&](const std::string& target) {
    common::Result<common::testing::HttpReply> r = client.Get(target);
    return r.ok() ? std::to_string(r->status) + " " + r->body : r.error().message;
  };
  EXPECT_EQ(body("/api/v1/teams"), "200 teams /api/v1/teams ? ");
  EXPECT_EQ(body("/api/v1/teams/team-a?x=1&y=%20"), "200 team /api/v1/teams/team-a ?x=1&y=%20 ");
  EXPECT_EQ(body("/api/v1/workloads"), "200 api /api/v1/workloads ? ");
  EXPECT_EQ(body("/api/v2/teams").substr(0, 3), "404");
  common::Result<common::testing::HttpReply> r = client.Request(
      "GET", "/api/v1/teams", "", "application/json", {{"Authorization", "Bearer abc"}});
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->body, "teams /api/v1/teams ? Bearer abc");
  // Through the API server's service proxy the token comes in X-Taskgov-Authorization; a request
  // that has Authorization too is read by Authorization.
  r = client.Request("GET", "/api/v1/teams", "", "application/json",
                     {{"X-Taskgov-Authorization", "Bearer proxied"}});
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->body, "teams /api/v1/teams ? Bearer proxied");
  r = client.Request("GET", "/api/v1/teams", "", "application/json",
                     {{"Authorization", "Bearer direct"}, {"X-Taskgov-Authorization", "Bearer x"}});
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->body, "teams /api/v1/teams ? Bearer direct");
  r = client.Get("/api/v1/teams");  // nothing carried over from the request before
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->body, "teams /api/v1/teams ? ");
}

// A listener whose work may wait (/metrics, the console) serves from I/O threads below the
// webhooks' priority: its handlers run at the nice value it was given (issue 36's scraper
// storm took CPU from filters when both ran at 0).
TEST_F(HttpServerTest, ALowerPriorityListenersHandlersRunAtItsNiceValue) {
  const int base = getpriority(PRIO_PROCESS, static_cast<id_t>(gettid()));
  std::vector<Route> routes;
  routes.push_back(Route{
      "/nice", "GET", 0, [](const HttpRequest&) {
        return HttpResponse{200,
                            "text/plain",
                            std::to_string(getpriority(PRIO_PROCESS, static_cast<id_t>(gettid()))),
                            {}};
      }});
  HttpServerOptions options;
  options.nice = 7;
  server_ = std::make_unique<HttpServer>(options, std::move(routes));
  ASSERT_TRUE(server_->Start().ok());
  common::testing::HttpClient client("127.0.0.1", server_->port());
  common::Result<common::testing::HttpReply> r = client.Get("/nice");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->body, std::to_string(std::min(base + 7, 19)));
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

// Reads from `fd` until `needle` has arrived (or the peer closed / the read timed out).
std::string ReadUntil(int fd, std::string_view needle) {
  std::string out;
  char buf[4096];
  while (out.find(needle) == std::string::npos) {
    const ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

uint64_t Refused(const HttpServer& server, metrics::HttpRefusal reason) {
  return server.stats().refused_for(reason);
}

TEST_F(HttpServerTest, ANewConnectionThatSendsNothingIsClosedAtTheHeaderTimeoutFromAccept) {
  HttpServerOptions options;
  options.header_timeout = milliseconds(200);
  options.idle_timeout = milliseconds(60'000);  // must not apply: no request was completed
  StartServer(options);
  int silent = RawConnect();  // reads give up after 10 s
  bool closed = false;
  EXPECT_EQ(testing::ReadUntilClosed(silent, &closed), "");
  EXPECT_TRUE(closed) << "still open: the idle timeout, not the header timeout, applied";
  ::close(silent);
  EXPECT_TRUE(
      Eventually([&] { return Refused(*server_, metrics::HttpRefusal::kHeaderTimeout) == 1; }));
  EXPECT_EQ(server_->stats().timeouts, 1u);
}

TEST_F(HttpServerTest, TheIdleTimeoutAppliesBetweenRequestsOnceOneCompleted) {
  HttpServerOptions options;
  options.header_timeout = milliseconds(100);
  options.idle_timeout = milliseconds(60'000);
  StartServer(options);
  common::testing::HttpClient client("127.0.0.1", server_->port());
  ASSERT_TRUE(client.Get("/healthz").ok());
  // Five header timeouts later the kept-alive connection is still there.
  std::this_thread::sleep_for(milliseconds(500));
  common::Result<common::testing::HttpReply> again = client.Get("/healthz");
  ASSERT_TRUE(again.ok()) << again.error().message;
  EXPECT_EQ(again->status, 200);
  EXPECT_EQ(client.connections_opened(), 1);
  EXPECT_EQ(client.stale_connections(), 0);
  EXPECT_EQ(Refused(*server_, metrics::HttpRefusal::kHeaderTimeout), 0u);
}

TEST_F(HttpServerTest, AtTheCapTheLongestIdleConnectionIsClosedForANewOne) {
  // Shared with the observer, which the server may call after this body returned (the last
  // request's observation comes after its reply): it must outlive the server, not the body.
  auto observed_count = std::make_shared<std::atomic<int>>(0);
  std::atomic<int>& observed = *observed_count;
  HttpServerOptions options;
  options.max_connections = 2;
  // Called once the connection is idle again: orders the two connections' idle times.
  options.observer = [observed_count](const RequestObservation&) { observed_count->fetch_add(1); };
  StartServer(options);
  const std::string get = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n";
  int oldest = RawConnect();
  ASSERT_TRUE(SendAll(oldest, get));
  ASSERT_NE(ReadUntil(oldest, "ok\n").find("ok\n"), std::string::npos);
  ASSERT_TRUE(Eventually([&] { return observed.load() == 1; }));
  int newer = RawConnect();
  ASSERT_TRUE(SendAll(newer, get));
  ASSERT_NE(ReadUntil(newer, "ok\n").find("ok\n"), std::string::npos);
  ASSERT_TRUE(Eventually([&] { return observed.load() == 2; }));

  common::testing::HttpClient client("127.0.0.1", server_->port());
  common::Result<common::testing::HttpReply> r = client.Get("/healthz");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->status, 200);
  bool closed = false;
  EXPECT_EQ(testing::ReadUntilClosed(oldest, &closed), "");
  EXPECT_TRUE(closed);
  ::close(oldest);
  // The newer idle connection was kept and still serves.
  ASSERT_TRUE(SendAll(newer, get));
  EXPECT_NE(ReadUntil(newer, "ok\n").find("HTTP/1.1 200"), std::string::npos);
  ::close(newer);
  EXPECT_EQ(Refused(*server_, metrics::HttpRefusal::kIdleEvicted), 1u);
  EXPECT_EQ(Refused(*server_, metrics::HttpRefusal::kCap), 0u);
}

TEST_F(HttpServerTest, AConnectionStillSendingItsHeaderIsIdleAndEvictable) {
  HttpServerOptions options;
  options.max_connections = 1;
  StartServer(options);
  int slowloris = RawConnect();
  ASSERT_TRUE(SendAll(slowloris, "GET /healthz HTTP/1.1\r\n"));  // and no more
  ASSERT_TRUE(Eventually([&] { return server_->stats().open_connections == 1; }));
  common::testing::HttpClient client("127.0.0.1", server_->port());
  common::Result<common::testing::HttpReply> r = client.Get("/healthz");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->status, 200);
  bool closed = false;
  EXPECT_EQ(testing::ReadUntilClosed(slowloris, &closed), "");
  EXPECT_TRUE(closed);
  ::close(slowloris);
  EXPECT_EQ(Refused(*server_, metrics::HttpRefusal::kIdleEvicted), 1u);
}

TEST_F(HttpServerTest, AtTheCapWithEveryConnectionInARequestTheNewcomerGets503) {
  std::promise<void> release;
  slow_release_ = release.get_future().share();
  HttpServerOptions options;
  options.max_connections = 1;
  StartServer(options);
  common::Result<common::testing::HttpReply> slow_reply = common::Error{"not run"};
  std::thread slow([&] {
    common::testing::HttpClient client("127.0.0.1", server_->port());
    slow_reply = client.Post("/slow", "busy");
  });
  ASSERT_EQ(slow_entered_.get_future().wait_for(std::chrono::seconds(10)),
            std::future_status::ready);

  int newcomer = RawConnect();
  ASSERT_TRUE(SendAll(newcomer, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"));
  bool closed = false;
  const std::string reply = testing::ReadUntilClosed(newcomer, &closed);
  ::close(newcomer);
  EXPECT_TRUE(closed);
  EXPECT_EQ(reply.rfind("HTTP/1.1 503", 0), 0u) << reply;
  EXPECT_NE(reply.find("Retry-After: 1\r\n"), std::string::npos) << reply;
  EXPECT_NE(reply.find("Connection: close\r\n"), std::string::npos) << reply;
  EXPECT_NE(reply.find("connection limit of 1"), std::string::npos) << reply;
  EXPECT_EQ(Refused(*server_, metrics::HttpRefusal::kCap), 1u);

  release.set_value();
  slow.join();
  ASSERT_TRUE(slow_reply.ok()) << slow_reply.error().message;
  EXPECT_EQ(slow_reply->status, 200);
  // Once the busy client is gone, newcomers are served again.
  ASSERT_TRUE(Eventually([&] { return server_->stats().open_connections == 0; }));
  common::testing::HttpClient after("127.0.0.1", server_->port());
  common::Result<common::testing::HttpReply> r = after.Get("/healthz");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->status, 200);
}

// The input request_parser_fuzz found (its path changed to this server's route): a declared
// length of 7.2e18 bytes is answered 413 before any body byte is reserved, and the server serves
// on (extender/request_parser_test.cc has the parser's side).
TEST_F(HttpServerTest, HugeDeclaredLengthIs413AndServerKeepsServing) {
  StartServer();
  int fd = RawConnect();
  ASSERT_TRUE(SendAll(fd,
                      "POST /echo HTTP/1.1\r\nHost: 127.0.0.1:88%8\r\nUser-Qgent: Go-http-clie "
                      "gzip\r\nExpect: 100-continue\r\nContent-Length: "
                      "00007241543250761220096\r\n\r\n{\"podNxpect: "
                      "100-cont0003\",\"node\":\"ip-10-0-3-5\"}\n"));
  const std::string refused = testing::ReadUntilClosed(fd);
  ::close(fd);
  EXPECT_EQ(refused.rfind("HTTP/1.1 413", 0), 0u) << refused;
  EXPECT_EQ(calls_.load(), 0);
  common::testing::HttpClient client("127.0.0.1", server_->port());
  common::Result<common::testing::HttpReply> after = client.Post("/echo", "fine");
  ASSERT_TRUE(after.ok()) << after.error().message;
  EXPECT_EQ(after->status, 200);
}

TEST_F(HttpServerTest, Expect100ContinueIsAnsweredOnlyForAnAcceptableRequest) {
  StartServer();
  int fd = RawConnect();
  ASSERT_TRUE(SendAll(fd,
                      "POST /echo HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n"
                      "Content-Length: 5\r\n\r\n"));
  EXPECT_EQ(ReadUntil(fd, "\r\n\r\n"), "HTTP/1.1 100 Continue\r\n\r\n");
  ASSERT_TRUE(SendAll(fd, "hello"));
  const std::string reply = ReadUntil(fd, "hello");
  EXPECT_EQ(reply.rfind("HTTP/1.1 200", 0), 0u) << reply;
  ::close(fd);

  int big = RawConnect();
  ASSERT_TRUE(SendAll(big,
                      "POST /echo HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n"
                      "Content-Length: 4096\r\n\r\n"));
  const std::string refused = testing::ReadUntilClosed(big);
  ::close(big);
  EXPECT_EQ(refused.rfind("HTTP/1.1 413", 0), 0u) << refused;  // no 100 first
  EXPECT_EQ(calls_.load(), 1);
}

TEST_F(HttpServerTest, UnsupportedFramingIsRefusedBeforeTheBodyIsRead) {
  struct Case {
    std::string name;
    std::string headers;
    std::string status;
    std::string message;
  };
  StartServer();
  for (const Case& c : std::vector<Case>{
           {"gzip", "Transfer-Encoding: gzip\r\n", "HTTP/1.1 501",
            "Transfer-Encoding 'gzip' is not supported (only chunked)"},
           {"gzip_then_chunked", "Transfer-Encoding: gzip, chunked\r\n", "HTTP/1.1 501",
            "Transfer-Encoding 'gzip, chunked'"},
           {"content_encoding", "Content-Encoding: gzip\r\nContent-Length: 4\r\n", "HTTP/1.1 415",
            "Content-Encoding 'gzip' is not supported"},
           {"identity_encoding", "Content-Encoding: identity\r\nContent-Length: 4\r\n",
            "HTTP/1.1 415", "Content-Encoding 'identity'"},
           {"other_expectation", "Expect: 200-ok\r\nContent-Length: 4\r\n", "HTTP/1.1 417",
            "Expect '200-ok' is not supported"},
       }) {
    int fd = RawConnect();
    ASSERT_TRUE(SendAll(fd, "POST /echo HTTP/1.1\r\nHost: x\r\n" + c.headers + "\r\n"));
    const std::string reply = testing::ReadUntilClosed(fd);
    ::close(fd);
    EXPECT_EQ(reply.rfind(c.status, 0), 0u) << c.name << ": " << reply;
    EXPECT_NE(reply.find(c.message), std::string::npos) << c.name << ": " << reply;
    if (c.status == "HTTP/1.1 415") {
      EXPECT_NE(reply.find("Accept-Encoding: identity\r\n"), std::string::npos) << reply;
    }
  }
  EXPECT_EQ(calls_.load(), 0);
  EXPECT_EQ(server_->stats().bad_requests, 5u);
  // Chunked alone is fine.
  int chunked = RawConnect();
  ASSERT_TRUE(SendAll(chunked,
                      "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                      "5\r\nhello\r\n0\r\n\r\n"));
  const std::string reply = ReadUntil(chunked, "hello");
  ::close(chunked);
  EXPECT_EQ(reply.rfind("HTTP/1.1 200", 0), 0u) << reply;
}

// A fixture whose /slow request holds `kHeld` bytes of a budget of kBudget while it runs.
class HttpBodyBudgetTest : public HttpServerTest {
 protected:
  static constexpr uint64_t kBudget = 1500;
  static constexpr size_t kHeld = 1000;

  void StartWithBudget(milliseconds wait) {
    HttpServerOptions options;
    options.body_budget = std::make_shared<BodyBudget>(kBudget);
    options.body_budget_wait = wait;
    slow_release_ = release_.get_future().share();
    StartServer(options);
    slow_ = std::thread([this] {
      common::testing::HttpClient client("127.0.0.1", server_->port());
      slow_reply_ = client.Post("/slow", std::string(kHeld, 's'));
    });
    ASSERT_EQ(slow_entered_.get_future().wait_for(std::chrono::seconds(10)),
              std::future_status::ready);
    EXPECT_EQ(server_->stats().inflight_body_bytes, kHeld);
  }

  void ReleaseSlow() {
    release_.set_value();
    slow_.join();
    ASSERT_TRUE(slow_reply_.ok()) << slow_reply_.error().message;
    EXPECT_EQ(slow_reply_->status, 200);
  }

  void TearDown() override {
    if (slow_.joinable()) ReleaseSlow();
    HttpServerTest::TearDown();
  }

  std::promise<void> release_;
  std::thread slow_;
  common::Result<common::testing::HttpReply> slow_reply_ = common::Error{"not run"};
};

TEST_F(HttpBodyBudgetTest, ABodyThatDoesNotFitWaitsBrieflyThenGets503) {
  StartWithBudget(milliseconds(100));
  common::testing::HttpClient client("127.0.0.1", server_->port());
  common::Result<common::testing::HttpReply> r = client.Post("/echo", std::string(kHeld, 'x'));
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->status, 503);
  EXPECT_EQ(r->headers["retry-after"], "1");
  EXPECT_NE(r->body.find("does not fit the in-flight body budget (1000 of 1500 bytes"),
            std::string::npos)
      << r->body;
  EXPECT_EQ(Refused(*server_, metrics::HttpRefusal::kBodyBudget), 1u);
  EXPECT_EQ(server_->stats().body_budget_waits, 1u);
  // A body that fits beside the held one is served meanwhile.
  common::Result<common::testing::HttpReply> small = client.Post("/echo", std::string(400, 'y'));
  ASSERT_TRUE(small.ok()) << small.error().message;
  EXPECT_EQ(small->status, 200);
  ReleaseSlow();
  EXPECT_TRUE(Eventually([&] { return server_->stats().inflight_body_bytes == 0; }));
  common::Result<common::testing::HttpReply> after = client.Post("/echo", std::string(kHeld, 'x'));
  ASSERT_TRUE(after.ok()) << after.error().message;
  EXPECT_EQ(after->status, 200);
  EXPECT_EQ(calls_.load(), 2);
}

TEST_F(HttpBodyBudgetTest, ABodyWaitingForTheBudgetIsServedOnceRoomIsMade) {
  StartWithBudget(milliseconds(20'000));
  common::Result<common::testing::HttpReply> waiting = common::Error{"not run"};
  std::thread waiter([&] {
    common::testing::HttpClient client("127.0.0.1", server_->port());
    waiting = client.Post("/echo", std::string(kHeld, 'w'));
  });
  ASSERT_TRUE(Eventually([&] { return server_->stats().body_budget_waits == 1; }));
  ReleaseSlow();
  waiter.join();
  ASSERT_TRUE(waiting.ok()) << waiting.error().message;
  EXPECT_EQ(waiting->status, 200);
  EXPECT_EQ(waiting->body, std::string(kHeld, 'w'));
  EXPECT_EQ(Refused(*server_, metrics::HttpRefusal::kBodyBudget), 0u);
}

TEST_F(HttpBodyBudgetTest, AChunkedBodyThatOutgrowsTheBudgetGets503AtOnce) {
  StartWithBudget(milliseconds(20'000));
  int fd = RawConnect();
  // A chunk of 0x320 = 800 bytes, where 500 are left: reserved as its bytes arrive, it does not
  // fit, and the reply comes before the rest of the body.
  ASSERT_TRUE(SendAll(fd,
                      "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                      "320\r\n" +
                          std::string(800, 'c')));
  const std::string reply = testing::ReadUntilClosed(fd);
  ::close(fd);
  EXPECT_EQ(reply.rfind("HTTP/1.1 503", 0), 0u) << reply;
  EXPECT_NE(reply.find("Retry-After: 1\r\n"), std::string::npos) << reply;
  EXPECT_EQ(Refused(*server_, metrics::HttpRefusal::kBodyBudget), 1u);
  EXPECT_EQ(server_->stats().inflight_body_bytes, kHeld);  // nothing of it stays reserved
}

// Issue 36, item 8: the budget is reserved as a body arrives, not on its declared length. Four
// connections that declare 64 MiB each (of a 256 MiB budget) and trickle a byte hold 64 KiB
// each, and a real request's body is served meanwhile; before, the four reserved the whole
// budget and every other body got 503 until they timed out.
TEST_F(HttpServerTest, BodiesDeclaredLargeAndTrickledHoldOnlyWhatArrived) {
  HttpServerOptions options;
  options.body_budget = std::make_shared<BodyBudget>(uint64_t{256} << 20);
  options.body_budget_wait = milliseconds(100);
  StartServer(options, /*echo_limit=*/uint64_t{64} << 20);
  std::vector<int> fds;
  for (int i = 0; i < 4; ++i) {
    const int fd = RawConnect();
    ASSERT_GE(fd, 0);
    fds.push_back(fd);
    ASSERT_TRUE(SendAll(fd, "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: " +
                                std::to_string(uint64_t{64} << 20) + "\r\n\r\nx"));
  }
  ASSERT_TRUE(Eventually([&] { return server_->stats().inflight_body_bytes == 4 * 65536u; }))
      << server_->stats().inflight_body_bytes;
  common::testing::HttpClient client("127.0.0.1", server_->port());
  common::Result<common::testing::HttpReply> r = client.Post("/echo", std::string(100'000, 'b'));
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(Refused(*server_, metrics::HttpRefusal::kBodyBudget), 0u);
  for (int fd : fds) ::close(fd);
}

// A body that stops arriving is cut off at body_progress_timeout, long before the request
// timeout, and releases what it held.
TEST_F(HttpServerTest, ABodyThatStallsIsCutOff) {
  HttpServerOptions options;
  options.body_budget = std::make_shared<BodyBudget>(uint64_t{1} << 20);
  options.request_timeout = milliseconds(20'000);
  options.body_progress_timeout = milliseconds(200);
  StartServer(options);
  const int fd = RawConnect();
  ASSERT_TRUE(SendAll(fd, "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 500\r\n\r\nabc"));
  const auto start = std::chrono::steady_clock::now();
  bool closed = false;
  (void)testing::ReadUntilClosed(fd, &closed);
  ::close(fd);
  EXPECT_TRUE(closed);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  // Counted when the connection's timer handler ends, which may be after the client saw the
  // close.
  EXPECT_TRUE(Eventually([&] {
    return Refused(*server_, metrics::HttpRefusal::kRequestTimeout) == 1u;
  })) << Refused(*server_, metrics::HttpRefusal::kRequestTimeout);
  EXPECT_TRUE(Eventually([&] { return server_->stats().inflight_body_bytes == 0; }));
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

// Bodies of declared length are read whole, however they arrive: in the header's packet, with the
// next request right behind them, or in pieces.
TEST_F(HttpServerTest, PipelinedAndSplitBodiesAreReadWhole) {
  StartServer();
  int fd = RawConnect();
  ASSERT_TRUE(SendAll(fd,
                      "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nfirst"
                      "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 6\r\n\r\nsecond"
                      "POST /echo HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                      "Content-Length: 1000\r\n\r\n"));
  const std::string big(1000, 'b');  // the fixture's limit is 1024
  for (size_t at = 0; at < big.size(); at += 250) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    ASSERT_TRUE(SendAll(fd, big.substr(at, 250)));
  }
  const std::string reply = ReadAll(fd);
  ::close(fd);
  const size_t first = reply.find("\r\n\r\nfirst");
  const size_t second = reply.find("\r\n\r\nsecond");
  const size_t third = reply.find("\r\n\r\n" + big);
  EXPECT_NE(first, std::string::npos) << reply.substr(0, 300);
  EXPECT_NE(second, std::string::npos) << reply.substr(0, 300);
  EXPECT_NE(third, std::string::npos);
  EXPECT_LT(first, second);
  EXPECT_LT(second, third);
  EXPECT_EQ(calls_.load(), 3);
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
    bool known;
    int status;
    uint64_t in, out;
    bool sent, tls;
  };
  // Shared with the observer, which must not outlive it (a failed assertion returns early).
  struct Observed {
    std::mutex mu;
    std::condition_variable cv;
    std::vector<Seen> seen;  // guarded by mu
  };
  auto state = std::make_shared<Observed>();
  std::mutex& mu = state->mu;
  std::condition_variable& cv = state->cv;
  std::vector<Seen>& seen = state->seen;
  HttpServerOptions options;
  options.observer = [state](const RequestObservation& o) {
    EXPECT_GE(o.duration.count(), 0);
    std::lock_guard<std::mutex> lock(state->mu);
    state->seen.push_back(Seen{std::string(o.method), std::string(o.path), o.route_matched,
                               o.path_known, o.status, o.request_body_bytes, o.response_body_bytes,
                               o.reply_sent, o.tls});
    state->cv.notify_all();
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
  EXPECT_TRUE(seen[1].known);  // the path is a route's: the metrics keep its verb
  EXPECT_FALSE(seen[2].known);
  EXPECT_TRUE(seen[3].known);
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

// A reply the socket cannot take at once goes on where the non-blocking write stopped: a client
// with a small receive buffer that reads late gets every byte, in order, of replies below and
// above the size written inline (HttpServer's kInlineIoBytes), and the requests after them on the
// same connection are served too.
TEST(HttpServerReplyTest, RepliesLargerThanTheSocketTakesArriveWholeAndInOrder) {
  auto body_of = [](size_t size) {
    std::string body(size, ' ');
    for (size_t i = 0; i < size; ++i) body[i] = static_cast<char>('!' + (i * 31 + i / 93) % 90);
    return body;
  };
  std::vector<Route> routes;
  routes.push_back(
      Route{"/bytes", "POST", 64, [&](const HttpRequest& req) {
              return HttpResponse{200, "text/plain", body_of(std::stoul(req.body)), {}};
            }});
  HttpServerOptions options;
  options.send_buffer_bytes = 4096;
  HttpServer server(options, std::move(routes));
  ASSERT_TRUE(server.Start().ok());
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  const int small = 4096;
  ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
  timeval tv{10, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(server.port());
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  std::string pending;  // read past the reply before
  auto read_reply = [&]() -> std::string {
    std::string in = std::move(pending);
    char buf[8192];
    size_t header_end;
    while ((header_end = in.find("\r\n\r\n")) == std::string::npos) {
      const ssize_t n = ::read(fd, buf, sizeof(buf));
      if (n <= 0) return "no header: " + in;
      in.append(buf, static_cast<size_t>(n));
    }
    const size_t at = in.find("Content-Length: ");
    if (at == std::string::npos || at > header_end) return "no length: " + in.substr(0, 300);
    const size_t length = std::stoul(in.substr(at + 16));
    while (in.size() < header_end + 4 + length) {
      const ssize_t n = ::read(fd, buf, sizeof(buf));
      if (n <= 0) return "short body";
      in.append(buf, static_cast<size_t>(n));
    }
    pending = in.substr(header_end + 4 + length);
    return in.substr(header_end + 4, length);
  };
  for (size_t size : {size_t{200'000}, size_t{3'000'000}, size_t{10}, size_t{250'000}}) {
    const std::string n = std::to_string(size);
    ASSERT_TRUE(SendAll(fd, "POST /bytes HTTP/1.1\r\nHost: x\r\nContent-Length: " +
                                std::to_string(n.size()) + "\r\n\r\n" + n));
    std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the socket fills meanwhile
    const std::string got = read_reply();
    ASSERT_EQ(got.size(), size) << got.substr(0, 200);
    EXPECT_TRUE(got == body_of(size)) << size;
  }
  ::close(fd);
  server.Shutdown(std::chrono::milliseconds(500));
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
