// HttpClient against a scripted raw-socket server: keep-alive reuse and the one retry on a
// kept-alive connection that dies under a request, as Go's transport behaves.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <functional>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "scheduler/common/testing/http_client.h"

namespace taskgov::common::testing {
namespace {

// A one-thread server that plays a script: for each accepted connection, a list of actions.
class ScriptedServer {
 public:
  ScriptedServer() {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    EXPECT_EQ(::listen(listen_fd_, 8), 0);
    socklen_t len = sizeof(addr);
    ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
  }
  ~ScriptedServer() {
    if (thread_.joinable()) thread_.join();
    ::close(listen_fd_);
  }

  uint16_t port() const { return port_; }

  // Runs `script` on a thread; it gets an Accept function returning connected fds.
  void Run(std::function<void(ScriptedServer&)> script) {
    thread_ = std::thread([this, script = std::move(script)] { script(*this); });
  }
  void Join() { thread_.join(); }

  int Accept() { return ::accept(listen_fd_, nullptr, nullptr); }

  // Reads one request (header and Content-Length body); returns its body, or "<eof>", and its
  // head (request line and header fields) in `head` if given.
  static std::string ReadRequest(int fd, std::string* head = nullptr) {
    std::string data;
    char buf[4096];
    size_t header_end = std::string::npos;
    while ((header_end = data.find("\r\n\r\n")) == std::string::npos) {
      const ssize_t n = ::read(fd, buf, sizeof(buf));
      if (n <= 0) return "<eof>";
      data.append(buf, static_cast<size_t>(n));
    }
    size_t length = 0;
    const size_t at = data.find("Content-Length: ");
    if (at != std::string::npos && at < header_end) length = std::stoul(data.substr(at + 16));
    while (data.size() < header_end + 4 + length) {
      const ssize_t n = ::read(fd, buf, sizeof(buf));
      if (n <= 0) return "<eof>";
      data.append(buf, static_cast<size_t>(n));
    }
    if (head != nullptr) *head = data.substr(0, header_end);
    return data.substr(header_end + 4, length);
  }

  static void Reply(int fd, const std::string& body) {
    const std::string reply =
        "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
    ASSERT_EQ(::send(fd, reply.data(), reply.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(reply.size()));
  }

 private:
  int listen_fd_ = -1;
  uint16_t port_ = 0;
  std::thread thread_;
};

TEST(HttpClientTest, RetriesOnceWhenAKeptAliveConnectionDiesUnderARequest) {
  ScriptedServer server;
  server.Run([](ScriptedServer& s) {
    int first = s.Accept();
    EXPECT_EQ(ScriptedServer::ReadRequest(first), "one");
    ScriptedServer::Reply(first, "1");
    EXPECT_EQ(ScriptedServer::ReadRequest(first), "two");  // read, then hang up unanswered
    ::close(first);
    int second = s.Accept();
    EXPECT_EQ(ScriptedServer::ReadRequest(second), "two");
    ScriptedServer::Reply(second, "2");
    EXPECT_EQ(ScriptedServer::ReadRequest(second), "<eof>");
    ::close(second);
  });
  {
    HttpClient client("127.0.0.1", server.port());
    common::Result<HttpReply> one = client.Post("/filter", "one");
    ASSERT_TRUE(one.ok()) << one.error().message;
    EXPECT_EQ(one->body, "1");
    common::Result<HttpReply> two = client.Post("/filter", "two");
    ASSERT_TRUE(two.ok()) << two.error().message;
    EXPECT_EQ(two->body, "2");
    EXPECT_EQ(client.connections_opened(), 2);
    EXPECT_EQ(client.retries(), 1);
  }
  server.Join();
}

TEST(HttpClientTest, NoRetryOnAFreshConnection) {
  ScriptedServer server;
  server.Run([](ScriptedServer& s) {
    int fd = s.Accept();
    EXPECT_EQ(ScriptedServer::ReadRequest(fd), "x");
    ::close(fd);  // no reply
  });
  HttpClient client("127.0.0.1", server.port());
  common::Result<HttpReply> r = client.Post("/filter", "x");
  server.Join();
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("POST /filter"), std::string::npos) << r.error().message;
  EXPECT_EQ(client.connections_opened(), 1);
  EXPECT_EQ(client.retries(), 0);
}

TEST(HttpClientTest, TimesOutOnASilentServer) {
  ScriptedServer server;
  server.Run([](ScriptedServer& s) {
    int fd = s.Accept();
    EXPECT_EQ(ScriptedServer::ReadRequest(fd), "x");
    EXPECT_EQ(ScriptedServer::ReadRequest(fd), "<eof>");  // the client gives up and closes
    ::close(fd);
  });
  HttpClient client("127.0.0.1", server.port(), std::chrono::milliseconds(200));
  common::Result<HttpReply> r = client.Post("/filter", "x");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("timed out"), std::string::npos) << r.error().message;
  server.Join();
}

struct CompressionCase {
  std::string name;
  bool disable_compression;
  bool offers_gzip;
};

void PrintTo(const CompressionCase& c, std::ostream* os) { *os << c.name; }

class HttpClientCompressionTest : public ::testing::TestWithParam<CompressionCase> {};

TEST_P(HttpClientCompressionTest, OffersGzipUnlessCompressionIsDisabled) {
  ScriptedServer server;
  std::string head;
  server.Run([&head](ScriptedServer& s) {
    int fd = s.Accept();
    EXPECT_EQ(ScriptedServer::ReadRequest(fd, &head), "");
    ScriptedServer::Reply(fd, "ok");
    ::close(fd);
  });
  HttpClient client("127.0.0.1", server.port());
  client.set_disable_compression(GetParam().disable_compression);
  common::Result<HttpReply> r = client.Get("/api/v1/query");
  server.Join();
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->body, "ok");
  EXPECT_EQ(head.find("\r\nAccept-Encoding: gzip") != std::string::npos, GetParam().offers_gzip)
      << head;
}

INSTANTIATE_TEST_SUITE_P(Compression, HttpClientCompressionTest,
                         ::testing::Values(CompressionCase{"AsGoByDefault", false, true},
                                           CompressionCase{"Disabled", true, false}),
                         [](const ::testing::TestParamInfo<CompressionCase>& info) {
                           return info.param.name;
                         });

}  // namespace
}  // namespace taskgov::common::testing
