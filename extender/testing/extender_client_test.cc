#include "extender/testing/extender_client.h"

#include <gtest/gtest.h>

#include <mutex>

#include "extender/http_server.h"

namespace taskgov::extender::testing {
namespace {

using extender::HttpRequest;
using extender::HttpResponse;

// A server that records what it receives and answers with a scripted reply.
class ExtenderClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::vector<extender::Route> routes;
    for (const char* verb : {"filter", "prioritize", "preempt", "bind"}) {
      routes.push_back(extender::Route{
          std::string("/p/") + verb, "POST", 1 << 20, [this](const HttpRequest& request) {
            std::lock_guard<std::mutex> lock(mu_);
            last_path_ = request.path;
            last_body_ = request.body;
            return HttpResponse{status_, "application/json", reply_, {}};
          }});
    }
    server_ = std::make_unique<extender::HttpServer>(extender::HttpServerOptions{}, routes);
    common::Status s = server_->Start();
    ASSERT_TRUE(s.ok()) << s.error().message;
  }
  void TearDown() override { server_->Shutdown(std::chrono::milliseconds(500)); }

  ExtenderClient Client(ExtenderKeys keys = ExtenderKeys::kGoFieldNames) {
    ExtenderClientOptions options;
    options.port = server_->port();
    options.url_prefix = "/p//";
    options.keys = keys;
    return ExtenderClient(options);
  }

  void Reply(int status, std::string body) {
    std::lock_guard<std::mutex> lock(mu_);
    status_ = status;
    reply_ = std::move(body);
  }
  std::string LastBody() {
    std::lock_guard<std::mutex> lock(mu_);
    return last_body_;
  }
  std::string LastPath() {
    std::lock_guard<std::mutex> lock(mu_);
    return last_path_;
  }

  std::unique_ptr<extender::HttpServer> server_;
  std::mutex mu_;
  int status_ = 200;
  std::string reply_ = "{}";
  std::string last_path_;
  std::string last_body_;
};

constexpr const char* kPod = R"({"metadata":{"name":"p"}})";
constexpr const char* kNode = R"({"metadata":{"name":"n1"}})";

TEST_F(ExtenderClientTest, MarshalsRequestsLikeKubeScheduler) {
  ExtenderClient go = Client();
  Reply(200, R"({"NodeNames":[]})");
  ASSERT_TRUE(go.FilterNames(kPod, {"a", "b\"c"}).ok());
  EXPECT_EQ(LastPath(), "/p/filter");
  EXPECT_EQ(LastBody(),
            std::string(R"({"Pod":)") + kPod + R"(,"Nodes":null,"NodeNames":["a","b\"c"]})");
  ASSERT_TRUE(go.FilterNodes(kPod, {kNode}).ok());
  EXPECT_EQ(LastBody(), std::string(R"({"Pod":)") + kPod + R"(,"Nodes":{"metadata":{},"items":[)" +
                            kNode + R"(]},"NodeNames":null})");
  Reply(200, "[]");
  ASSERT_TRUE(go.PrioritizeNames(kPod, {"a"}).ok());
  EXPECT_EQ(LastPath(), "/p/prioritize");
  Reply(200, "{}");
  ASSERT_TRUE(go.PreemptMeta(kPod, {{"n1", {{"u1", "u2"}, 1}}}).ok());
  EXPECT_EQ(LastPath(), "/p/preempt");
  EXPECT_EQ(LastBody(),
            std::string(R"({"Pod":)") + kPod +
                R"(,"NodeNameToVictims":null,"NodeNameToMetaVictims":{"n1":{"Pods":[{"UID":"u1"},)"
                R"({"UID":"u2"}],"NumPDBViolations":1}}})");
  ASSERT_TRUE(go.PreemptFull(kPod, {{"n1", {{kPod}, 0}}}).ok());
  EXPECT_EQ(LastBody(), std::string(R"({"Pod":)") + kPod +
                            R"(,"NodeNameToVictims":{"n1":{"Pods":[)" + kPod +
                            R"(],"NumPDBViolations":0}},"NodeNameToMetaVictims":null})");
  Reply(200, R"({"Error":""})");
  ASSERT_TRUE(go.Bind("p", "ns", "u", "n1").ok());
  EXPECT_EQ(LastPath(), "/p/bind");
  EXPECT_EQ(LastBody(), R"({"PodName":"p","PodNamespace":"ns","PodUID":"u","Node":"n1"})");
  EXPECT_EQ(go.connections_opened(), 1);

  ExtenderClient old = Client(ExtenderKeys::kLowerCase);
  Reply(200, "{}");
  ASSERT_TRUE(old.FilterNames(kPod, {"a"}).ok());
  EXPECT_EQ(LastBody(), std::string(R"({"pod":)") + kPod + R"(,"nodenames":["a"]})");
  ASSERT_TRUE(old.FilterNodes(kPod, {kNode}).ok());
  EXPECT_EQ(LastBody(), std::string(R"({"pod":)") + kPod + R"(,"nodes":{"metadata":{},"items":[)" +
                            kNode + "]}}");
  ASSERT_TRUE(old.PreemptMeta(kPod, {{"n1", {{"u1"}, 0}}}).ok());
  EXPECT_EQ(LastBody(), std::string(R"({"pod":)") + kPod +
                            R"(,"nodeNameToMetaVictims":{"n1":{"pods":[{"uid":"u1"}],)"
                            R"("numPDBViolations":0}}})");
  ASSERT_TRUE(old.Bind("p", "ns", "u", "n1").ok());
  EXPECT_EQ(LastBody(), R"({"podName":"p","podNamespace":"ns","podUID":"u","node":"n1"})");
}

TEST_F(ExtenderClientTest, AnyStatusButOkIsAnError) {
  ExtenderClient client = Client();
  for (int status : {201, 202, 400, 404, 500, 503}) {
    Reply(status, R"({"NodeNames":["a"]})");
    common::Result<FilterReply> r = client.FilterNames(kPod, {"a"});
    ASSERT_FALSE(r.ok()) << status;
    EXPECT_NE(r.error().message.find("code " + std::to_string(status)), std::string::npos)
        << r.error().message;
  }
  Reply(200, "");
  EXPECT_FALSE(client.FilterNames(kPod, {"a"}).ok());  // Go: EOF
}

TEST_F(ExtenderClientTest, DecodesFilterRepliesLikeGo) {
  ExtenderClient client = Client();
  // Case-insensitive keys, unknown keys ignored, null map values "", trailing bytes ignored.
  Reply(200,
        R"({"nodenames":["a"],"FAILEDNODES":{"b":"why"},"failedAndUnresolvableNodes":{"c":null},)"
        R"("error":"","Unknown":[1,{"x":2}]} trailing)");
  common::Result<FilterReply> r = client.FilterNames(kPod, {"a", "b", "c"});
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->feasible, std::vector<std::string>{"a"});
  EXPECT_EQ(r->failed_nodes.at("b"), "why");
  EXPECT_EQ(r->failed_and_unresolvable_nodes.at("c"), "");

  // nodeCacheCapable: a name the request did not carry fails the call ...
  Reply(200, R"({"NodeNames":["a","zzz"]})");
  common::Result<FilterReply> claimed = client.FilterNames(kPod, {"a"});
  ASSERT_FALSE(claimed.ok());
  EXPECT_NE(claimed.error().message.find("'zzz' which is not found"), std::string::npos);
  // ... unless Error is set, which kube-scheduler checks first.
  Reply(200, R"({"NodeNames":["zzz"],"Error":"not ready"})");
  common::Result<FilterReply> failed = client.FilterNames(kPod, {"a"});
  ASSERT_TRUE(failed.ok());
  EXPECT_EQ(failed->error, "not ready");

  // Neither list: nothing is feasible. NodeNames absent: Nodes are read even when cache-capable.
  Reply(200, R"({"NodeNames":null,"Nodes":null})");
  EXPECT_TRUE(client.FilterNames(kPod, {"a"})->feasible.empty());
  Reply(200, R"({"Nodes":{"Items":[{"Metadata":{"Name":"n9"}}, {"metadata":{"name":"n8"}}]}})");
  common::Result<FilterReply> nodes = client.FilterNames(kPod, {"a"});
  ASSERT_TRUE(nodes.ok()) << nodes.error().message;
  EXPECT_EQ(nodes->feasible, (std::vector<std::string>{"n9", "n8"}));
  EXPECT_EQ(nodes->nodes->at(0), R"({"Metadata":{"Name":"n9"}})");

  // Not cache-capable: NodeNames is ignored.
  Reply(200, R"({"NodeNames":["a"]})");
  common::Result<FilterReply> ignored = client.FilterNodes(kPod, {kNode});
  ASSERT_TRUE(ignored.ok());
  EXPECT_TRUE(ignored->feasible.empty());

  for (const char* bad : {R"({"NodeNames":"a"})", R"({"NodeNames":[1]})", R"({"FailedNodes":[]})",
                          R"({"FailedNodes":{"a":1}})", R"({"Error":5})", R"({"Nodes":[]})",
                          R"({"Nodes":{"items":[5]}})", R"([])", R"({"NodeNames":["a")"}) {
    Reply(200, bad);
    EXPECT_FALSE(client.FilterNames(kPod, {"a"}).ok()) << bad;
  }
  EXPECT_EQ(client.connections_opened(), 1);
}

TEST_F(ExtenderClientTest, DecodesOtherRepliesLikeGo) {
  ExtenderClient client = Client();
  Reply(200, R"([{"host":"a","score":3},null,{"HOST":"b"}])");
  common::Result<std::vector<HostScore>> scores = client.PrioritizeNames(kPod, {"a", "b"});
  ASSERT_TRUE(scores.ok()) << scores.error().message;
  ASSERT_EQ(scores->size(), 3u);
  EXPECT_EQ((*scores)[0].host, "a");
  EXPECT_EQ((*scores)[0].score, 3);
  EXPECT_EQ((*scores)[1].host, "");
  EXPECT_EQ((*scores)[2].score, 0);
  Reply(200, "null");
  EXPECT_TRUE(client.PrioritizeNames(kPod, {"a"})->empty());
  for (const char* bad : {R"([{"Host":"a","Score":1.5}])", R"([{"Score":"3"}])", R"({})"}) {
    Reply(200, bad);
    EXPECT_FALSE(client.PrioritizeNames(kPod, {"a"}).ok()) << bad;
  }

  Reply(200, R"({"nodenametometavictims":{"n":{"pods":[{"uid":"x"}],"numpdbviolations":1}},)"
             R"("error":"extension"})");
  common::Result<PreemptReply> preempt = client.PreemptMeta(kPod, {});
  ASSERT_TRUE(preempt.ok()) << preempt.error().message;
  EXPECT_EQ(preempt->node_to_victims.at("n").uids, std::vector<std::string>{"x"});
  EXPECT_EQ(preempt->node_to_victims.at("n").num_pdb_violations, 1);
  EXPECT_EQ(preempt->error, "extension");
  for (const char* bad : {R"({"NodeNameToMetaVictims":{"n":null}})",
                          R"({"NodeNameToMetaVictims":{"n":{"Pods":[{"UID":1}]}}})",
                          R"({"NodeNameToMetaVictims":[]})"}) {
    Reply(200, bad);
    EXPECT_FALSE(client.PreemptMeta(kPod, {}).ok()) << bad;
  }

  Reply(200, R"({"error":"no"})");
  EXPECT_EQ(*client.Bind("p", "n", "u", "x"), "no");
  Reply(200, "{}");
  EXPECT_EQ(*client.Bind("p", "n", "u", "x"), "");
  Reply(200, R"({"Error":false})");
  EXPECT_FALSE(client.Bind("p", "n", "u", "x").ok());
}

}  // namespace
}  // namespace taskgov::extender::testing
