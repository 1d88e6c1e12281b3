// KubeClient against the fake API server: requests, errors, paging, watches, credentials, 401 and
// 429 handling, timeouts, stale connections, TLS, cancellation and concurrent use.

#include "scheduler/kube/client.h"
#include "scheduler/common/base64.h"

#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <thread>

#include "scheduler/common/clock.h"
#include "scheduler/common/time_format.h"
#include "scheduler/kube/testing/fake_apiserver.h"
#include "scheduler/kube/testing/test_support.h"

namespace taskgov::scheduler::kube {
namespace {

using scheduler::kube::testing::FakeApiServer;
using scheduler::kube::testing::FakeApiServerOptions;
using scheduler::kube::testing::FaultRule;
using std::chrono::milliseconds;
using testing::HttpConfig;
using testing::PodJson;
using testing::TempDir;
using testing::Testdata;
using testing::WriteFile;

class ClientTest : public ::testing::Test {
 protected:
  void StartServer(FakeApiServerOptions options = {}) {
    server_ = std::make_unique<FakeApiServer>(std::move(options));
    ASSERT_TRUE(server_->Start().ok());
  }
  std::unique_ptr<KubeClient> MakeClient(ClusterConfig config, ClientOptions options = {}) {
    common::Result<std::unique_ptr<KubeClient>> client =
        KubeClient::Create(std::move(config), options);
    EXPECT_TRUE(client.ok()) << (client.ok() ? "" : client.error().message);
    return client.ok() ? std::move(*client) : nullptr;
  }
  std::unique_ptr<KubeClient> HttpClient(ClientOptions options = {}) {
    return MakeClient(HttpConfig(server_->port()), options);
  }
  std::vector<scheduler::kube::testing::RecordedRequest> RequestsTo(const std::string& path) {
    std::vector<scheduler::kube::testing::RecordedRequest> out;
    for (auto& r : server_->requests()) {
      if (r.path == path) out.push_back(r);
    }
    return out;
  }

  std::unique_ptr<FakeApiServer> server_;
};

TEST_F(ClientTest, GetsObjectsAndDecodesStatusErrors) {
  StartServer();
  ASSERT_TRUE(server_->Upsert("pods", PodJson("team-a", "w-0")).ok());
  auto client = HttpClient();
  ApiResult<rapidjson::Document> pod =
      client->CallJson("GET", "/api/v1/namespaces/team-a/pods/w-0");
  ASSERT_TRUE(pod.ok()) << pod.error().ToString();
  EXPECT_STREQ((*pod)["metadata"]["name"].GetString(), "w-0");

  ApiResult<HttpResponse> missing = client->Call("GET", "/api/v1/namespaces/team-a/pods/nope");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().status, 404);
  EXPECT_EQ(missing.error().reason, "NotFound");
  EXPECT_EQ(missing.error().message, "pods \"nope\" not found");
  EXPECT_EQ(missing.error().ToString(),
            "GET /api/v1/namespaces/team-a/pods/nope: 404 NotFound: pods \"nope\" not found");
  // Both requests went over one kept-alive connection.
  EXPECT_EQ(client->stats().connections_opened, 1u);
}

TEST_F(ClientTest, ConfigMapWritesHonourResourceVersionAndDryRun) {
  StartServer();
  auto client = HttpClient();
  const std::string path = "/api/v1/namespaces/kube-system/configmaps";
  ApiResult<rapidjson::Document> created =
      client->CallJson("POST", path, R"({"metadata":{"name":"cm"},"data":{"a.yaml":"x: 1"}})");
  ASSERT_TRUE(created.ok()) << created.error().ToString();
  const std::string rv = (*created)["metadata"]["resourceVersion"].GetString();
  const std::string put =
      R"({"metadata":{"name":"cm","resourceVersion":")" + rv + R"("},"data":{"a.yaml":"x: 2"}})";

  // A server dry run answers as the write would, and stores nothing.
  ApiResult<rapidjson::Document> dry = client->CallJson("PUT", path + "/cm?dryRun=All", put);
  ASSERT_TRUE(dry.ok()) << dry.error().ToString();
  EXPECT_STREQ((*dry)["data"]["a.yaml"].GetString(), "x: 2");
  EXPECT_EQ((*dry)["metadata"]["resourceVersion"].GetString(), rv);
  EXPECT_NE(server_->Get("configmaps", "kube-system", "cm")->find("x: 1"), std::string::npos);
  ApiResult<HttpResponse> bad = client->Call("PUT", path + "/cm?dryRun=Yes", put);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().status, 400);

  // The hook runs between the client's requests: a concurrent change makes the PUT a conflict.
  server_->SetRequestHook([&](const std::string& method, const std::string&) {
    if (method != "PUT") return;
    server_->SetRequestHook(nullptr);
    ASSERT_TRUE(server_
                    ->Upsert("configmaps", R"({"metadata":{"name":"cm","namespace":"kube-system"},)"
                                           R"("data":{"a.yaml":"x: 3"}})")
                    .ok());
  });
  ApiResult<HttpResponse> conflict = client->Call("PUT", path + "/cm", put);
  ASSERT_FALSE(conflict.ok());
  EXPECT_EQ(conflict.error().status, 409);
  EXPECT_EQ(conflict.error().reason, "Conflict");
  EXPECT_NE(server_->Get("configmaps", "kube-system", "cm")->find("x: 3"), std::string::npos);
}

TEST_F(ClientTest, ImpersonationSendsImpersonateUser) {
  StartServer();
  ClientOptions options;
  options.impersonate_user = "alice@example.com";
  auto client = HttpClient(options);
  ASSERT_TRUE(client->Call("GET", "/api/v1/nodes").ok());
  std::vector<scheduler::kube::testing::RecordedRequest> requests = RequestsTo("/api/v1/nodes");
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].impersonate_user, "alice@example.com");
  ASSERT_TRUE(HttpClient()->Call("GET", "/api/v1/nodes").ok());
  EXPECT_EQ(RequestsTo("/api/v1/nodes").back().impersonate_user, "");
}

TEST_F(ClientTest, ListsInPagesFollowingContinueTokens) {
  StartServer();
  for (int i = 0; i < 7; ++i) {
    ASSERT_TRUE(server_->Upsert("pods", PodJson("ns", "pod-" + std::to_string(i))).ok());
  }
  auto client = HttpClient();
  ListOptions list;
  list.limit = 2;
  std::vector<std::string> names;
  int pages = 0;
  std::string version;
  while (true) {
    ApiResult<ListPage> page = client->List("/api/v1/pods", list);
    ASSERT_TRUE(page.ok()) << page.error().ToString();
    ++pages;
    for (const auto& item : page->items().GetArray()) {
      names.push_back(item["metadata"]["name"].GetString());
    }
    if (version.empty()) version = page->resource_version;
    EXPECT_EQ(page->resource_version, version);  // every page reports the snapshot's version
    if (page->continue_token.empty()) break;
    list.continue_token = page->continue_token;
  }
  EXPECT_EQ(pages, 4);
  EXPECT_EQ(names, (std::vector<std::string>{"pod-0", "pod-1", "pod-2", "pod-3", "pod-4", "pod-5",
                                             "pod-6"}));
  EXPECT_EQ(version, std::to_string(server_->resource_version()));
}

TEST_F(ClientTest, ListReportsAnExpiredContinueTokenAs410) {
  StartServer();
  for (int i = 0; i < 3; ++i)
    ASSERT_TRUE(server_->Upsert("nodes", testing::NodeJson("n" + std::to_string(i))).ok());
  auto client = HttpClient();
  ListOptions list;
  list.limit = 1;
  ApiResult<ListPage> first = client->List("/api/v1/nodes", list);
  ASSERT_TRUE(first.ok());
  ASSERT_TRUE(server_->Upsert("nodes", testing::NodeJson("n9")).ok());
  server_->Compact();  // etcd compacted past the list's snapshot
  list.continue_token = first->continue_token;
  ApiResult<ListPage> second = client->List("/api/v1/nodes", list);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.error().status, 410);
  EXPECT_EQ(second.error().reason, "Expired");
}

TEST_F(ClientTest, WatchDeliversAnEventSplitAcrossThreeChunks) {
  FakeApiServerOptions options;
  options.watch_piece_delay = milliseconds(5);
  StartServer(options);
  std::atomic<int> splits{0};
  server_->SetWatchSplitter([&splits](size_t n) {
    ++splits;
    return std::vector<size_t>{n / 3, 2 * n / 3};
  });
  auto client = HttpClient();
  WatchOptions watch;
  watch.resource_version = std::to_string(server_->resource_version());
  ApiResult<std::unique_ptr<WatchStream>> stream = client->Watch("/api/v1/pods", watch);
  ASSERT_TRUE(stream.ok()) << stream.error().ToString();
  common::Result<std::string> stored = server_->Upsert("pods", PodJson("ns", "split-me", "node-1"));
  ASSERT_TRUE(stored.ok());
  WatchEvent event;
  ApiResult<bool> next = (*stream)->Next(&event);
  ASSERT_TRUE(next.ok()) << next.error().ToString();
  ASSERT_TRUE(*next);
  EXPECT_EQ(event.type, WatchEventType::kAdded);
  EXPECT_STREQ(event.object()["metadata"]["name"].GetString(), "split-me");
  EXPECT_STREQ(event.object()["spec"]["nodeName"].GetString(), "node-1");
  EXPECT_EQ(splits.load(), 1);
  const std::string line = "{\"type\":\"ADDED\",\"object\":" + *stored + "}\n";
  EXPECT_EQ((*stream)->bytes_read(), line.size());
}

TEST_F(ClientTest, WatchReplaysFromAVersionThenEndsCleanly) {
  StartServer();
  const std::string from = std::to_string(server_->resource_version());
  ASSERT_TRUE(server_->Upsert("pods", PodJson("ns", "a")).ok());
  ASSERT_TRUE(server_->Upsert("pods", PodJson("ns", "a", "node-1")).ok());
  ASSERT_TRUE(server_->Delete("pods", "ns", "a"));
  auto client = HttpClient();
  WatchOptions watch;
  watch.resource_version = from;
  auto stream = client->Watch("/api/v1/pods", watch);
  ASSERT_TRUE(stream.ok());
  std::vector<std::string> seen;
  WatchEvent event;
  for (int i = 0; i < 3; ++i) {
    ApiResult<bool> next = (*stream)->Next(&event);
    ASSERT_TRUE(next.ok() && *next);
    seen.push_back(std::string(WatchEventTypeName(event.type)) + "@" + event.resource_version());
  }
  const int64_t rv = server_->resource_version();
  EXPECT_EQ(seen, (std::vector<std::string>{"ADDED@" + std::to_string(rv - 2),
                                            "MODIFIED@" + std::to_string(rv - 1),
                                            "DELETED@" + std::to_string(rv)}));
  server_->EndWatches("pods");
  ApiResult<bool> end = (*stream)->Next(&event);
  ASSERT_TRUE(end.ok()) << end.error().ToString();
  EXPECT_FALSE(*end);
}

TEST_F(ClientTest, WatchSeesBookmarksAndInStreamExpiry) {
  StartServer();
  auto client = HttpClient();
  WatchOptions watch;
  watch.resource_version = std::to_string(server_->resource_version());
  auto stream = client->Watch("/api/v1/nodes", watch);
  ASSERT_TRUE(stream.ok());
  ASSERT_TRUE(server_->WaitFor([&] { return server_->open_watches("nodes") == 1; },
                               std::chrono::seconds(10)));
  ASSERT_TRUE(server_->Upsert("pods", PodJson("ns", "elsewhere")).ok());  // moves the version
  server_->SendBookmarks("nodes");
  WatchEvent event;
  ApiResult<bool> next = (*stream)->Next(&event);
  ASSERT_TRUE(next.ok() && *next);
  EXPECT_EQ(event.type, WatchEventType::kBookmark);
  EXPECT_EQ(event.resource_version(), std::to_string(server_->resource_version()));
  server_->ExpireWatches("nodes");
  next = (*stream)->Next(&event);
  ASSERT_TRUE(next.ok() && *next);
  EXPECT_EQ(event.type, WatchEventType::kError);
  EXPECT_EQ(event.error_code, 410);
  next = (*stream)->Next(&event);
  ASSERT_TRUE(next.ok());
  EXPECT_FALSE(*next);
}

TEST_F(ClientTest, DroppedWatchIsAnError) {
  StartServer();
  auto client = HttpClient();
  auto stream = client->Watch("/api/v1/pods", WatchOptions{});
  ASSERT_TRUE(stream.ok());
  ASSERT_TRUE(server_->WaitFor([&] { return server_->open_watches("pods") == 1; },
                               std::chrono::seconds(10)));
  server_->DropWatches("pods");
  WatchEvent event;
  ApiResult<bool> next = (*stream)->Next(&event);
  ASSERT_FALSE(next.ok());
  EXPECT_TRUE(next.error().transport());
  EXPECT_FALSE(next.error().cancelled);
}

TEST_F(ClientTest, Watch410StatusIsReturned) {
  StartServer();
  FaultRule gone;
  gone.watch = true;
  gone.status = 410;
  gone.reason = "Expired";
  gone.message = "too old resource version";
  server_->AddFault(gone);
  auto client = HttpClient();
  auto stream = client->Watch("/api/v1/pods", WatchOptions{});
  ASSERT_FALSE(stream.ok());
  EXPECT_EQ(stream.error().status, 410);
  EXPECT_EQ(stream.error().reason, "Expired");
}

TEST_F(ClientTest, A401IsRetriedOnceWithFreshCredentials) {
  StartServer();
  FaultRule unauthorized;
  unauthorized.status = 401;
  unauthorized.reason = "Unauthorized";
  server_->AddFault(unauthorized);
  auto client = HttpClient();
  ApiResult<HttpResponse> r = client->Call("GET", "/api/v1/nodes");
  ASSERT_TRUE(r.ok()) << r.error().ToString();
  EXPECT_EQ(client->stats().auth_retries, 1u);
  auto requests = RequestsTo("/api/v1/nodes");
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[0].status, 401);
  EXPECT_EQ(requests[1].status, 200);

  // Two 401s in a row: the second is returned.
  unauthorized.times = 2;
  server_->AddFault(unauthorized);
  r = client->Call("GET", "/api/v1/nodes");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().status, 401);
}

TEST_F(ClientTest, TokenFileIsReReadAfterA401AndEveryMinute) {
  FakeApiServerOptions options;
  options.tokens = {"t1"};
  StartServer(options);
  const std::string dir = TempDir("token-rotation");
  WriteFile(dir + "/token", "t1\n");
  ClusterConfig config = HttpConfig(server_->port());
  config.token_file = dir + "/token";
  common::FakeClock clock;
  ClientOptions client_options;
  client_options.clock = &clock;
  auto client = MakeClient(config, client_options);
  ASSERT_TRUE(client->Call("GET", "/api/v1/nodes").ok());

  // The kubelet rotates the token; the server stops accepting the old one.
  WriteFile(dir + "/token", "t2\n");
  server_->SetAcceptedTokens({"t2"});
  ApiResult<HttpResponse> r = client->Call("GET", "/api/v1/nodes");
  ASSERT_TRUE(r.ok()) << r.error().ToString();
  EXPECT_EQ(client->stats().auth_retries, 1u);
  auto requests = RequestsTo("/api/v1/nodes");
  ASSERT_EQ(requests.size(), 3u);
  EXPECT_EQ(requests[1].authorization, "Bearer t1");
  EXPECT_EQ(requests[1].status, 401);
  EXPECT_EQ(requests[2].authorization, "Bearer t2");

  // Rotated again while both are valid: within the minute the cached token is used ...
  WriteFile(dir + "/token", "t3\n");
  server_->SetAcceptedTokens({"t2", "t3"});
  ASSERT_TRUE(client->Call("GET", "/api/v1/nodes").ok());
  EXPECT_EQ(RequestsTo("/api/v1/nodes").back().authorization, "Bearer t2");
  // ... and after a minute the file is read again, without a 401.
  clock.Advance(std::chrono::seconds(61));
  ASSERT_TRUE(client->Call("GET", "/api/v1/nodes").ok());
  EXPECT_EQ(RequestsTo("/api/v1/nodes").back().authorization, "Bearer t3");
  EXPECT_EQ(client->stats().auth_retries, 1u);
}

TEST_F(ClientTest, ExecPluginTokenIsCachedUntilExpiryAndRefreshedAfterA401) {
  FakeApiServerOptions options;
  options.tokens = {"exec-1"};
  StartServer(options);
  common::FakeClock clock;
  const std::string state = TempDir("exec-plugin");
  WriteFile(state + "/token", "exec-1");
  WriteFile(state + "/expiry", common::FormatTime(clock.WallNowMicros() + 60'000'000));
  const std::string plugin =
      std::filesystem::absolute("scheduler/kube/testdata/exec_plugin.sh").string();
  const std::string kubeconfig = state + "/kubeconfig";
  WriteFile(kubeconfig,
            "apiVersion: v1\nkind: Config\ncurrent-context: c\nclusters:\n"
            "- name: k\n  cluster:\n    server: http://127.0.0.1:" +
                std::to_string(server_->port()) +
                "\ncontexts:\n- name: c\n  context: {cluster: k, user: u}\n"
                "users:\n- name: u\n  user:\n    exec:\n"
                "      apiVersion: client.authentication.k8s.io/v1\n"
                "      command: " +
                plugin + "\n      args: [" + state +
                "]\n      env: [{name: PLUGIN_GREETING, value: hi}]\n"
                "      interactiveMode: Never\n");
  KubeconfigSource source;
  source.explicit_path = kubeconfig;
  common::Result<ClusterConfig> config = LoadKubeconfig(source);
  ASSERT_TRUE(config.ok()) << config.error().message;
  ClientOptions client_options;
  client_options.clock = &clock;
  auto client = MakeClient(*config, client_options);
  auto runs = [&] { return std::stoi(testing::ReadTestFile(state + "/count")); };

  ASSERT_TRUE(client->Call("GET", "/api/v1/nodes").ok());
  ASSERT_TRUE(client->Call("GET", "/api/v1/nodes").ok());
  EXPECT_EQ(runs(), 1);  // cached
  const std::string info = testing::ReadTestFile(state + "/exec_info");
  EXPECT_NE(info.find("\"apiVersion\":\"client.authentication.k8s.io/v1\""), std::string::npos);
  EXPECT_NE(info.find("\"interactive\":false"), std::string::npos);
  EXPECT_EQ(testing::ReadTestFile(state + "/greeting"), "hi");

  // The credential is revoked: a 401 runs the plugin again.
  WriteFile(state + "/token", "exec-2");
  server_->SetAcceptedTokens({"exec-2"});
  ASSERT_TRUE(client->Call("GET", "/api/v1/nodes").ok());
  EXPECT_EQ(runs(), 2);
  EXPECT_EQ(RequestsTo("/api/v1/nodes").back().authorization, "Bearer exec-2");

  // Expiry passes: the next call runs it again without a 401.
  WriteFile(state + "/token", "exec-3");
  server_->SetAcceptedTokens({"exec-2", "exec-3"});
  clock.Advance(std::chrono::seconds(61));
  ASSERT_TRUE(client->Call("GET", "/api/v1/nodes").ok());
  EXPECT_EQ(runs(), 3);
  EXPECT_EQ(RequestsTo("/api/v1/nodes").back().authorization, "Bearer exec-3");
  EXPECT_EQ(client->stats().auth_retries, 1u);

  // A failing plugin is an error naming it and carrying its stderr.
  WriteFile(state + "/fail", "no credentials for you");
  clock.Advance(std::chrono::seconds(120));
  ApiResult<HttpResponse> r = client->Call("GET", "/api/v1/nodes");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().reason, "CredentialsUnavailable");
  EXPECT_NE(r.error().message.find("exec_plugin.sh"), std::string::npos);
  EXPECT_NE(r.error().message.find("no credentials for you"), std::string::npos);
}

TEST_F(ClientTest, TooManyRequestsWaitsRetryAfterThenSucceeds) {
  StartServer();
  FaultRule throttle;
  throttle.path_prefix = "/api/v1/nodes";
  throttle.status = 429;
  throttle.retry_after_seconds = 1;
  server_->AddFault(throttle);
  auto client = HttpClient();
  ApiResult<HttpResponse> r = client->Call("GET", "/api/v1/nodes");
  ASSERT_TRUE(r.ok()) << r.error().ToString();
  EXPECT_EQ(client->stats().throttle_retries, 1u);
  auto requests = RequestsTo("/api/v1/nodes");
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[0].status, 429);
  EXPECT_GE(requests[1].at - requests[0].at, std::chrono::seconds(1));
}

TEST_F(ClientTest, TooManyRequestsBeyondTheDeadlineOrWithoutRetryAfterIsReturned) {
  StartServer();
  FaultRule throttle;
  throttle.status = 429;
  throttle.retry_after_seconds = 30;
  server_->AddFault(throttle);
  auto client = HttpClient();
  CallOptions call;
  call.timeout = milliseconds(2000);
  ApiResult<HttpResponse> r = client->Call("GET", "/api/v1/nodes", "", call);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().status, 429);
  EXPECT_EQ(r.error().retry_after, std::chrono::seconds(30));

  throttle.retry_after_seconds = -1;
  server_->AddFault(throttle);
  r = client->Call("GET", "/api/v1/nodes");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().status, 429);
  EXPECT_EQ(client->stats().throttle_retries, 0u);
}

TEST_F(ClientTest, EveryCallHasADeadline) {
  StartServer();
  FaultRule slow;
  slow.delay = milliseconds(3000);
  server_->AddFault(slow);
  auto client = HttpClient();
  CallOptions call;
  call.timeout = milliseconds(300);
  ApiResult<HttpResponse> r = client->Call("GET", "/api/v1/nodes", "", call);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().reason, "Timeout");
  EXPECT_NE(r.error().ToString().find("GET /api/v1/nodes"), std::string::npos);
  // The timed-out connection is discarded; the next call works.
  ASSERT_TRUE(client->Call("GET", "/api/v1/nodes").ok());
}

TEST_F(ClientTest, AConnectionTheServerDroppedIsRetriedOnce) {
  StartServer();
  auto client = HttpClient();
  ASSERT_TRUE(client->Call("GET", "/api/v1/nodes").ok());  // leaves a pooled connection
  FaultRule drop;
  drop.drop_connection = true;
  server_->AddFault(drop);
  ApiResult<HttpResponse> r = client->Call("GET", "/api/v1/nodes");
  ASSERT_TRUE(r.ok()) << r.error().ToString();
  EXPECT_EQ(client->stats().stale_retries, 1u);
  EXPECT_EQ(client->stats().connections_opened, 2u);
}

TEST_F(ClientTest, UnreachableServerIsATransportError) {
  StartServer();
  const uint16_t port = server_->port();
  server_->Stop();
  auto client = MakeClient(HttpConfig(port));
  CallOptions call;
  call.timeout = milliseconds(2000);
  ApiResult<HttpResponse> r = client->Call("GET", "/api/v1/nodes", "", call);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.error().transport());
}

class TlsClientTest : public ClientTest {
 protected:
  void StartTls(bool client_ca) {
    FakeApiServerOptions options;
    options.tls_cert_pem = Testdata("server.crt");
    options.tls_key_pem = Testdata("server.key");
    if (client_ca) {
      options.client_ca_pem = Testdata("ca.crt");
      options.tokens = {"only-certificates-please"};
    }
    StartServer(options);
  }
  ClusterConfig TlsConfig(const std::string& ca) {
    ClusterConfig config;
    EXPECT_TRUE(ParseServerUrl(server_->url(), &config).ok());
    config.ca_pem = Testdata(ca);
    return config;
  }
};

TEST_F(TlsClientTest, VerifiesTheServerAgainstTheConfiguredCa) {
  StartTls(false);
  auto good = MakeClient(TlsConfig("ca.crt"));
  ApiResult<HttpResponse> r = good->Call("GET", "/api/v1/nodes");
  ASSERT_TRUE(r.ok()) << r.error().ToString();

  auto wrong_ca = MakeClient(TlsConfig("other-ca.crt"));
  r = wrong_ca->Call("GET", "/api/v1/nodes");
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.error().transport());
  EXPECT_NE(r.error().message.find("TLS handshake"), std::string::npos) << r.error().message;

  ClusterConfig insecure = TlsConfig("other-ca.crt");
  insecure.insecure_skip_tls_verify = true;
  EXPECT_TRUE(MakeClient(insecure)->Call("GET", "/api/v1/nodes").ok());
}

TEST_F(TlsClientTest, TlsServerNameSelectsTheNameToVerify) {
  StartTls(false);
  ClusterConfig named = TlsConfig("ca.crt");
  named.tls_server_name = "kube.test";  // a SAN of the certificate
  EXPECT_TRUE(MakeClient(named)->Call("GET", "/api/v1/nodes").ok());
  named.tls_server_name = "not-the-apiserver.test";
  ApiResult<HttpResponse> r = MakeClient(named)->Call("GET", "/api/v1/nodes");
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.error().transport());
}

TEST_F(TlsClientTest, ClientCertificateAuthenticates) {
  StartTls(true);
  ClusterConfig with_cert = TlsConfig("ca.crt");
  with_cert.client_cert_pem = Testdata("client.crt");
  with_cert.client_key_pem = Testdata("client.key");
  ApiResult<HttpResponse> r = MakeClient(with_cert)->Call("GET", "/api/v1/nodes");
  ASSERT_TRUE(r.ok()) << r.error().ToString();
  EXPECT_TRUE(RequestsTo("/api/v1/nodes").back().client_certificate);

  r = MakeClient(TlsConfig("ca.crt"))->Call("GET", "/api/v1/nodes");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().status, 401);

  ClusterConfig mismatched = TlsConfig("ca.crt");
  mismatched.client_cert_pem = Testdata("client.crt");
  mismatched.client_key_pem = Testdata("server.key");
  common::Result<std::unique_ptr<KubeClient>> bad = KubeClient::Create(mismatched);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("client key"), std::string::npos) << bad.error().message;
}

TEST_F(TlsClientTest, ExecPluginV1beta1CanSupplyTheClientCertificate) {
  StartTls(true);
  const std::string state = TempDir("exec-plugin-cert");
  auto json_escaped = [](std::string pem) {
    std::string out;
    for (char c : pem) out += c == '\n' ? std::string("\\n") : std::string(1, c);
    return out;
  };
  WriteFile(state + "/token", "");
  WriteFile(state + "/cert", json_escaped(Testdata("client.crt")));
  WriteFile(state + "/key", json_escaped(Testdata("client.key")));
  const std::string plugin =
      std::filesystem::absolute("scheduler/kube/testdata/exec_plugin.sh").string();
  const std::string kubeconfig = state + "/kubeconfig";
  WriteFile(kubeconfig,
            "current-context: c\nclusters:\n- name: k\n  cluster:\n    server: " + server_->url() +
                "\n    certificate-authority-data: " + common::Base64Encode(Testdata("ca.crt")) +
                "\ncontexts:\n- name: c\n  context: {cluster: k, user: u}\n"
                "users:\n- name: u\n  user:\n    exec:\n"
                "      apiVersion: client.authentication.k8s.io/v1beta1\n"
                "      command: " +
                plugin + "\n      args: [" + state + "]\n");
  KubeconfigSource source;
  source.explicit_path = kubeconfig;
  common::Result<ClusterConfig> config = LoadKubeconfig(source);
  ASSERT_TRUE(config.ok()) << config.error().message;
  auto client = MakeClient(*config);
  ApiResult<HttpResponse> r = client->Call("GET", "/api/v1/nodes");
  ASSERT_TRUE(r.ok()) << r.error().ToString();
  EXPECT_TRUE(RequestsTo("/api/v1/nodes").back().client_certificate);
  EXPECT_EQ(RequestsTo("/api/v1/nodes").back().authorization, "");
  EXPECT_NE(
      testing::ReadTestFile(state + "/exec_info").find("client.authentication.k8s.io/v1beta1"),
      std::string::npos);
}

TEST_F(ClientTest, CancelInterruptsABlockedWatch) {
  StartServer();
  auto client = HttpClient();
  Cancellation cancel;
  CallOptions call;
  call.cancel = &cancel;
  auto stream = client->Watch("/api/v1/pods", WatchOptions{}, call);
  ASSERT_TRUE(stream.ok());
  ApiResult<bool> result = false;
  std::thread reader([&] {
    WatchEvent event;
    result = (*stream)->Next(&event);
  });
  ASSERT_TRUE(server_->WaitFor([&] { return server_->open_watches("pods") == 1; },
                               std::chrono::seconds(10)));
  cancel.Cancel();
  reader.join();
  ASSERT_FALSE(result.ok());
  EXPECT_TRUE(result.error().cancelled);
}

TEST_F(ClientTest, ConcurrentCallsShareThePool) {
  StartServer();
  ASSERT_TRUE(server_->Upsert("nodes", testing::NodeJson("n1")).ok());
  auto client = HttpClient();
  std::atomic<int> ok{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 25; ++i) {
        if (client->CallJson("GET", "/api/v1/nodes/n1").ok()) ++ok;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok.load(), 100);
  EXPECT_LE(client->stats().connections_opened, 8u);
}

}  // namespace
}  // namespace taskgov::scheduler::kube
