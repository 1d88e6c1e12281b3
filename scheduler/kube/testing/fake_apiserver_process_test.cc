// The fake API server as a separate process, driven through its control API the way tests that
// start the real extender (and tools/demo) use it.

#include <signal.h>

#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include <chrono>
#include <regex>
#include <string>

#include "scheduler/common/testing/http_client.h"
#include "scheduler/common/testing/process.h"

namespace taskgov::scheduler::kube::testing {
namespace {

using std::chrono::milliseconds;

std::string g_binary;

rapidjson::Document Json(const std::string& text) {
  rapidjson::Document doc;
  doc.Parse(text.c_str());
  return doc;
}

TEST(FakeApiServerProcess, ServesTheSampleClusterAndObeysTheControlApi) {
  common::testing::Subprocess proc;
  ASSERT_TRUE(proc.Start(g_binary, {"--listen=127.0.0.1:0", "--sample-cluster"}).ok());
  common::Result<std::string> serving =
      proc.WaitForLine("\"msg\":\"serving\"", milliseconds(10000));
  ASSERT_TRUE(serving.ok()) << serving.error().message;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(*serving, m, std::regex("\"port\":([0-9]+)")));
  common::testing::HttpClient client("127.0.0.1", static_cast<uint16_t>(std::stoi(m[1])));

  common::Result<common::testing::HttpReply> nodes = client.Get("/api/v1/nodes");
  ASSERT_TRUE(nodes.ok()) << nodes.error().message;
  ASSERT_EQ(nodes->status, 200);
  rapidjson::Document list = Json(nodes->body);
  ASSERT_TRUE(list.IsObject());
  EXPECT_EQ(list["items"].Size(), 5u);
  int p5 = 0, gpus = 0, neuron = 0;
  for (const auto& node : list["items"].GetArray()) {
    const auto& labels = node["metadata"]["labels"];
    if (std::string(labels["node.kubernetes.io/instance-type"].GetString()) == "ml.p5.48xlarge") {
      ++p5;
    }
    const auto& allocatable = node["status"]["allocatable"];
    if (allocatable.HasMember("nvidia.com/gpu")) {
      gpus += std::stoi(allocatable["nvidia.com/gpu"].GetString());
    }
    if (allocatable.HasMember("aws.amazon.com/neuron")) {
      neuron += std::stoi(allocatable["aws.amazon.com/neuron"].GetString());
    }
  }
  EXPECT_EQ(p5, 2);
  EXPECT_EQ(gpus, 2 * 8 + 2 * 4);
  EXPECT_EQ(neuron, 16);

  // Objects through the control API, bindings through the real one.
  common::Result<common::testing::HttpReply> created =
      client.Post("/fake/objects/pods",
                  "{\"metadata\":{\"name\":\"w-0\",\"namespace\":\"hyperpod-ns-a\"},\"spec\":{}}");
  ASSERT_TRUE(created.ok());
  ASSERT_EQ(created->status, 200) << created->body;
  const std::string uid = Json(created->body)["metadata"]["uid"].GetString();
  common::Result<common::testing::HttpReply> bound = client.Post(
      "/api/v1/namespaces/hyperpod-ns-a/pods/w-0/binding",
      "{\"apiVersion\":\"v1\",\"kind\":\"Binding\",\"metadata\":{\"name\":\"w-0\",\"uid\":\"" +
          uid + "\"},\"target\":{\"kind\":\"Node\",\"name\":\"hyperpod-p5-0\"}}");
  ASSERT_TRUE(bound.ok());
  EXPECT_EQ(bound->status, 201) << bound->body;
  common::Result<common::testing::HttpReply> pod =
      client.Get("/api/v1/namespaces/hyperpod-ns-a/pods/w-0");
  ASSERT_TRUE(pod.ok());
  EXPECT_STREQ(Json(pod->body)["spec"]["nodeName"].GetString(), "hyperpod-p5-0");
  common::Result<common::testing::HttpReply> recorded = client.Get("/fake/recorded");
  ASSERT_TRUE(recorded.ok());
  EXPECT_EQ(Json(recorded->body)["bindings"].Size(), 1u);

  // A fault injected over HTTP.
  common::Result<common::testing::HttpReply> fault =
      client.Post("/fake/faults",
                  "{\"pathPrefix\":\"/api/v1/nodes\",\"status\":503,\"times\":1,"
                  "\"message\":\"etcd is sad\",\"retryAfterSeconds\":2}");
  ASSERT_TRUE(fault.ok());
  ASSERT_EQ(fault->status, 200);
  common::Result<common::testing::HttpReply> failed = client.Get("/api/v1/nodes");
  ASSERT_TRUE(failed.ok());
  EXPECT_EQ(failed->status, 503);
  EXPECT_EQ(failed->headers["retry-after"], "2");
  rapidjson::Document status = Json(failed->body);
  EXPECT_STREQ(status["kind"].GetString(), "Status");
  EXPECT_STREQ(status["message"].GetString(), "etcd is sad");
  EXPECT_EQ(client.Get("/api/v1/nodes")->status, 200);

  common::Result<common::testing::HttpReply> state = client.Get("/fake/state");
  ASSERT_TRUE(state.ok());
  EXPECT_EQ(Json(state->body)["counts"]["pods"].GetInt(), 1);

  proc.Signal(SIGTERM);
  std::optional<int> code = proc.Wait(milliseconds(5000));
  ASSERT_TRUE(code.has_value());
  EXPECT_EQ(*code, 0);
}

TEST(FakeApiServerProcess, RejectsUnknownFlags) {
  common::testing::Subprocess proc;
  ASSERT_TRUE(proc.Start(g_binary, {"--frobnicate"}).ok());
  std::optional<int> code = proc.Wait(milliseconds(5000));
  ASSERT_TRUE(code.has_value());
  EXPECT_EQ(*code, 2);
}

}  // namespace
}  // namespace taskgov::scheduler::kube::testing

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (argc < 2) {
    fprintf(stderr, "usage: %s <path to fake_apiserver>\n", argv[0]);
    return 2;
  }
  taskgov::scheduler::kube::testing::g_binary = taskgov::common::testing::RunfilePath(argv[1]);
  return RUN_ALL_TESTS();
}
