// HttpServer over TLS: round trips, protocol versions, ALPN, mTLS, certificate rotation, the
// handshake deadline, and load on TLS connections. Certificates: extender/testdata/tls.

#include <atomic>
#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <thread>

#include <gtest/gtest.h>

#include <fstream>

#include "extender/http_server.h"
#include "extender/http_test_util.h"
#include "extender/self_signed.h"
#include "scheduler/common/testing/http_client.h"

namespace taskgov::extender {
namespace {

using std::chrono::milliseconds;
using testing::Eventually;
using testing::TlsTestFile;

common::testing::HttpClientTls TrustingCa(std::string_view ca) {
  common::testing::HttpClientTls tls;
  tls.ca_file = TlsTestFile(ca);
  return tls;
}

common::testing::HttpClientTls WithClientCert(std::string_view ca, std::string_view cert,
                                              std::string_view key) {
  common::testing::HttpClientTls tls = TrustingCa(ca);
  tls.cert_file = TlsTestFile(cert);
  tls.key_file = TlsTestFile(key);
  return tls;
}

class TlsServerTest : public ::testing::Test {
 protected:
  static HttpTlsOptions ServerTls(bool mtls = false) {
    HttpTlsOptions tls;
    tls.cert_chain_file = TlsTestFile("server.pem");
    tls.key_file = TlsTestFile("server.key");
    if (mtls) tls.client_ca_file = TlsTestFile("ca.pem");
    tls.reload_interval = milliseconds(0);
    return tls;
  }

  void StartServer(HttpTlsOptions tls, HttpServerOptions options = {}) {
    options.tls = std::move(tls);
    options.observer = [this](const RequestObservation& o) {
      if (o.tls) tls_observations_.fetch_add(1);
    };
    std::vector<Route> routes;
    routes.push_back(Route{"/echo", "POST", 64 * 1024, [](const HttpRequest& req) {
                             return HttpResponse{200, "application/json", req.body, {}};
                           }});
    server_ = std::make_unique<HttpServer>(std::move(options), std::move(routes));
    common::Status s = server_->Start();
    ASSERT_TRUE(s.ok()) << s.error().message;
  }

  void TearDown() override {
    if (server_) server_->Shutdown(milliseconds(2000));
  }

  // One POST /echo on `client`; the error message, or "" when the echo came back.
  static std::string Echo(common::testing::HttpClient& client, const std::string& body = "ping") {
    common::Result<common::testing::HttpReply> r = client.Post("/echo", body);
    if (!r.ok()) return r.error().message;
    if (r->status != 200) return "status " + std::to_string(r->status);
    if (r->body != body) return "wrong body " + r->body;
    return "";
  }

  common::testing::HttpClient Client(common::testing::HttpClientTls tls) {
    return common::testing::HttpClient("127.0.0.1", server_->port(), std::move(tls),
                                       milliseconds(5000));
  }

  std::unique_ptr<HttpServer> server_;
  std::atomic<int> tls_observations_{0};
};

TEST_F(TlsServerTest, RoundTripOverTls) {
  StartServer(ServerTls());
  common::testing::HttpClient client = Client(TrustingCa("ca.pem"));
  EXPECT_EQ(Echo(client, "{\"Pod\":{}}"), "");
  EXPECT_EQ(Echo(client, std::string(20000, 'n')), "");
  EXPECT_EQ(client.connections_opened(), 1);
  // The observer runs just after the reply is written.
  EXPECT_TRUE(Eventually([&] { return tls_observations_.load() == 2; }));
}

HttpServerOptions WithTls(HttpTlsOptions tls) {
  HttpServerOptions options;
  options.tls = std::move(tls);
  return options;
}

// Issue 36, item 6: a console off loopback without certificate files serves a certificate made
// in memory at startup (self_signed.h): it loads, names what it was asked to (and 127.0.0.1),
// and a client that trusts it by its own PEM verifies the server by name.
TEST_F(TlsServerTest, ASelfSignedCertificateMadeInMemoryServes) {
  common::Result<PemPair> made = SelfSignedCertificate({"taskgov-console.ns.svc"});
  ASSERT_TRUE(made.ok()) << made.error().message;
  EXPECT_NE(made->certificate.find("BEGIN CERTIFICATE"), std::string::npos);
  HttpTlsOptions tls;
  tls.cert_chain_pem = made->certificate;
  tls.key_pem = made->key;
  tls.reload_interval = std::chrono::milliseconds(0);
  StartServer(tls);
  const std::string ca = ::testing::TempDir() + "/self-signed.pem";
  std::ofstream(ca) << made->certificate;
  common::testing::HttpClientTls trusting;
  trusting.ca_file = ca;
  trusting.server_name = "taskgov-console.ns.svc";
  common::testing::HttpClient client = Client(trusting);
  EXPECT_EQ(Echo(client, "{}"), "");  // verified, and served
  trusting.server_name = "elsewhere.example";
  EXPECT_FALSE(Client(trusting).Get("/echo").ok()) << "a name it was not made for";
}

TEST_F(TlsServerTest, StartFailsOnBadFilesNamingThem) {
  HttpTlsOptions tls = ServerTls();
  tls.key_file = TlsTestFile("other_server.key");  // does not match server.pem
  HttpServer mismatched(WithTls(tls), {});
  common::Status s = mismatched.Start();
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("does not match the certificate"), std::string::npos)
      << s.error().message;

  tls = ServerTls();
  tls.cert_chain_file = TlsTestFile("missing.pem");
  HttpServer missing(WithTls(tls), {});
  s = missing.Start();
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("missing.pem"), std::string::npos) << s.error().message;

  tls = ServerTls();
  tls.cert_chain_file = TlsTestFile("README.md");  // not PEM
  HttpServer garbage(WithTls(tls), {});
  s = garbage.Start();
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("TLS certificate chain"), std::string::npos)
      << s.error().message;
}

TEST_F(TlsServerTest, ServerNameVerification) {
  StartServer(ServerTls());
  common::testing::HttpClientTls by_name = TrustingCa("ca.pem");
  by_name.server_name = "localhost";  // SNI + DNS SAN
  common::testing::HttpClient named = Client(by_name);
  EXPECT_EQ(Echo(named), "");

  common::testing::HttpClientTls wrong_name = TrustingCa("ca.pem");
  wrong_name.server_name = "taskgov.example";
  common::testing::HttpClient wrong = Client(wrong_name);
  const std::string error = Echo(wrong);
  EXPECT_NE(error.find("hostname mismatch"), std::string::npos) << error;

  common::testing::HttpClient untrusting = Client(TrustingCa("other_ca.pem"));
  const std::string untrusted = Echo(untrusting);
  EXPECT_NE(untrusted.find("certificate"), std::string::npos) << untrusted;
}

TEST_F(TlsServerTest, OnlyTls12AndNewer) {
  StartServer(ServerTls());
  common::testing::HttpClientTls tls12 = TrustingCa("ca.pem");
  tls12.max_version = "1.2";
  common::testing::HttpClient modern = Client(tls12);
  EXPECT_EQ(Echo(modern), "");

  common::testing::HttpClientTls tls11 = TrustingCa("ca.pem");
  tls11.min_version = "1.0";
  tls11.max_version = "1.1";
  common::testing::HttpClient old = Client(tls11);
  EXPECT_NE(Echo(old), "");
  EXPECT_TRUE(Eventually([&] { return server_->stats().tls_handshake_failures == 1; }));
}

TEST_F(TlsServerTest, AlpnSelectsHttp11AndNeverH2) {
  StartServer(ServerTls());
  common::testing::HttpClient go_like =
      Client(TrustingCa("ca.pem"));  // offers h2, http/1.1 (Go's order)
  EXPECT_EQ(Echo(go_like), "");
  EXPECT_EQ(go_like.negotiated_protocol(), "http/1.1");

  common::testing::HttpClientTls no_alpn = TrustingCa("ca.pem");
  no_alpn.alpn.clear();
  common::testing::HttpClient plain_tls = Client(no_alpn);
  EXPECT_EQ(Echo(plain_tls), "");
  EXPECT_EQ(plain_tls.negotiated_protocol(), "");

  common::testing::HttpClientTls h2_only = TrustingCa("ca.pem");
  h2_only.alpn = {"h2"};
  common::testing::HttpClient h2 = Client(h2_only);
  const std::string error = Echo(h2);
  EXPECT_NE(error.find("no application protocol"), std::string::npos) << error;
  EXPECT_TRUE(Eventually([&] { return server_->stats().tls_handshake_failures == 1; }));
}

TEST_F(TlsServerTest, MutualTlsRequiresACertificateFromTheClientCa) {
  StartServer(ServerTls(/*mtls=*/true));
  common::testing::HttpClient anonymous = Client(TrustingCa("ca.pem"));
  EXPECT_NE(Echo(anonymous), "");
  EXPECT_TRUE(Eventually([&] { return server_->stats().tls_handshake_failures == 1; }));

  common::testing::HttpClient wrong_ca =
      Client(WithClientCert("ca.pem", "other_client.pem", "other_client.key"));
  EXPECT_NE(Echo(wrong_ca), "");
  EXPECT_TRUE(Eventually([&] { return server_->stats().tls_handshake_failures == 2; }));

  common::testing::HttpClient scheduler =
      Client(WithClientCert("ca.pem", "client.pem", "client.key"));
  EXPECT_EQ(Echo(scheduler), "");
  EXPECT_EQ(Echo(scheduler), "");
  EXPECT_EQ(scheduler.connections_opened(), 1);
  EXPECT_EQ(server_->stats().requests, 2u);  // the rejected clients got no request through
}

TEST_F(TlsServerTest, PlainHttpToTheTlsPortIsRefusedAndOthersAreServed) {
  StartServer(ServerTls());
  common::testing::HttpClient plain("127.0.0.1", server_->port(), milliseconds(5000));
  EXPECT_FALSE(plain.Post("/echo", "x").ok());
  common::testing::HttpClient tls = Client(TrustingCa("ca.pem"));
  EXPECT_EQ(Echo(tls), "");
  EXPECT_TRUE(Eventually([&] { return server_->stats().tls_handshake_failures == 1; }));
}

TEST_F(TlsServerTest, SilentClientIsCutAtTheHandshakeDeadline) {
  HttpServerOptions options;
  options.header_timeout = milliseconds(300);
  StartServer(ServerTls(), options);
  int silent = testing::RawConnect(server_->port());
  ASSERT_GE(silent, 0);
  ASSERT_TRUE(testing::SendAll(silent, std::string("\x16\x03\x01", 3)));  // a ClientHello begins
  common::testing::HttpClient client = Client(TrustingCa("ca.pem"));
  for (int i = 0; i < 20; ++i) ASSERT_EQ(Echo(client), "");
  bool closed = false;
  EXPECT_EQ(testing::ReadUntilClosed(silent, &closed), "");
  EXPECT_TRUE(closed);  // by the server, not by our read timeout
  ::close(silent);
  EXPECT_TRUE(Eventually([&] { return server_->stats().tls_handshake_failures == 1; }));
}

TEST_F(TlsServerTest, ThousandSequentialRequestsOnOneTlsConnection) {
  StartServer(ServerTls(/*mtls=*/true));
  common::testing::HttpClient client = Client(WithClientCert("ca.pem", "client.pem", "client.key"));
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(Echo(client, std::to_string(i)), "") << i;
  EXPECT_EQ(client.connections_opened(), 1);
  EXPECT_EQ(client.retries(), 0);
  EXPECT_EQ(server_->stats().accepted, 1u);
}

TEST_F(TlsServerTest, ManyParallelTlsConnections) {
  HttpServerOptions options;
  options.io_threads = 4;
  StartServer(ServerTls(/*mtls=*/true), options);
  constexpr int kThreads = 4;
  constexpr int kClientsPerThread = 8;
  constexpr int kRounds = 10;
  std::atomic<int> ok{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::vector<std::unique_ptr<common::testing::HttpClient>> clients;
      for (int c = 0; c < kClientsPerThread; ++c) {
        clients.push_back(std::make_unique<common::testing::HttpClient>(
            "127.0.0.1", server_->port(), WithClientCert("ca.pem", "client.pem", "client.key"),
            milliseconds(10000)));
      }
      for (int round = 0; round < kRounds; ++round) {
        for (int c = 0; c < kClientsPerThread; ++c) {
          const std::string body = std::to_string(t) + "/" + std::to_string(c);
          if (Echo(*clients[c], body).empty()) ok.fetch_add(1);
        }
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(ok.load(), kThreads * kClientsPerThread * kRounds);
  EXPECT_EQ(server_->stats().accepted, static_cast<uint64_t>(kThreads * kClientsPerThread));
}

// Rotation fixture: the server reads its certificate from a temporary directory the test
// rewrites, as the kubelet rewrites a mounted Secret.
class TlsRotationTest : public TlsServerTest {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::path(::testing::TempDir()) /
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    Install("server.pem", "server.key");
  }

  void Install(std::string_view cert, std::string_view key) {
    ASSERT_TRUE(testing::WriteFileAtomically(dir_ / "tls.crt",
                                             testing::ReadFileOrEmpty(TlsTestFile(cert))));
    ASSERT_TRUE(
        testing::WriteFileAtomically(dir_ / "tls.key", testing::ReadFileOrEmpty(TlsTestFile(key))));
  }

  HttpTlsOptions RotatingTls() {
    HttpTlsOptions tls;
    tls.cert_chain_file = (dir_ / "tls.crt").string();
    tls.key_file = (dir_ / "tls.key").string();
    tls.reload_interval = milliseconds(0);
    return tls;
  }

  std::filesystem::path dir_;
};

TEST_F(TlsRotationTest, NewCertificateForNewConnectionsOldConnectionsKeepWorking) {
  StartServer(RotatingTls());
  common::testing::HttpClient before = Client(TrustingCa("ca.pem"));
  ASSERT_EQ(Echo(before), "");

  ASSERT_TRUE(server_->ReloadTls().ok());  // unchanged files: nothing to do
  EXPECT_EQ(server_->stats().tls_reloads, 0u);

  Install("other_server.pem", "other_server.key");
  common::Status reloaded = server_->ReloadTls();
  ASSERT_TRUE(reloaded.ok()) << reloaded.error().message;
  EXPECT_EQ(server_->stats().tls_reloads, 1u);

  common::testing::HttpClient after = Client(TrustingCa("other_ca.pem"));
  EXPECT_EQ(Echo(after), "");
  common::testing::HttpClient stale_trust = Client(TrustingCa("ca.pem"));
  EXPECT_NE(Echo(stale_trust), "");  // new connections get the new certificate

  for (int i = 0; i < 10; ++i) EXPECT_EQ(Echo(before), "");
  EXPECT_EQ(before.connections_opened(), 1);  // the old connection kept its session
}

TEST_F(TlsRotationTest, BadNewFilesKeepTheOldCertificate) {
  StartServer(RotatingTls());
  ASSERT_TRUE(testing::WriteFileAtomically(dir_ / "tls.crt", "-----BEGIN CERTIFICATE-----\nxx"));
  common::Status garbage = server_->ReloadTls();
  ASSERT_FALSE(garbage.ok());
  EXPECT_NE(garbage.error().message.find("tls.crt"), std::string::npos) << garbage.error().message;
  EXPECT_FALSE(server_->ReloadTls().ok());  // still bad, reported (counted, logged) once
  EXPECT_EQ(server_->stats().tls_reload_failures, 1u);

  common::testing::HttpClient client = Client(TrustingCa("ca.pem"));
  EXPECT_EQ(Echo(client), "");  // still the original certificate

  // A rotation caught half-way: the new certificate with the old key.
  ASSERT_TRUE(testing::WriteFileAtomically(
      dir_ / "tls.crt", testing::ReadFileOrEmpty(TlsTestFile("other_server.pem"))));
  common::Status mismatched = server_->ReloadTls();
  ASSERT_FALSE(mismatched.ok());
  EXPECT_NE(mismatched.error().message.find("does not match"), std::string::npos)
      << mismatched.error().message;
  EXPECT_EQ(server_->stats().tls_reload_failures, 2u);
  common::testing::HttpClient fresh = Client(TrustingCa("ca.pem"));
  EXPECT_EQ(Echo(fresh), "");

  // The key arrives: the rotation completes.
  Install("other_server.pem", "other_server.key");
  ASSERT_TRUE(server_->ReloadTls().ok());
  common::testing::HttpClient rotated = Client(TrustingCa("other_ca.pem"));
  EXPECT_EQ(Echo(rotated), "");
  EXPECT_EQ(server_->stats().tls_reloads, 1u);
}

TEST_F(TlsRotationTest, FilesAreWatchedOnATimer) {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<bool> reloads;  // ok or not, in order; guarded by mu
  HttpTlsOptions tls = RotatingTls();
  tls.reload_interval = milliseconds(20);
  tls.on_reload = [&](const common::Status& s) {
    std::lock_guard<std::mutex> lock(mu);
    reloads.push_back(s.ok());
    cv.notify_all();
  };
  StartServer(tls);
  Install("other_server.pem", "other_server.key");
  {
    std::unique_lock<std::mutex> lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(10), [&] { return !reloads.empty(); }));
    EXPECT_TRUE(reloads.front());
  }
  common::testing::HttpClient rotated = Client(TrustingCa("other_ca.pem"));
  EXPECT_EQ(Echo(rotated), "");

  ASSERT_TRUE(testing::WriteFileAtomically(dir_ / "tls.key", "not a key"));
  {
    std::unique_lock<std::mutex> lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(10), [&] { return reloads.size() == 2; }));
    EXPECT_FALSE(reloads.back());
  }
  common::testing::HttpClient still = Client(TrustingCa("other_ca.pem"));
  EXPECT_EQ(Echo(still), "");
}

}  // namespace
}  // namespace taskgov::extender
