// Golden files: every testdata/<case>.request.json goes through the webhook handler (decode →
// FakeDecider → encode) and the reply must equal testdata/<case>.reply.json byte for byte.
//
// To regenerate after an intended change (then review the diff):
//   TASKGOV_UPDATE_GOLDEN=$PWD/extender/testdata bazel test //extender:golden_test

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "extender/fake_decider.h"
#include "extender/handlers.h"
#include "extender/wire.h"

namespace taskgov::extender {
namespace {

struct GoldenCase {
  const char* name;
  Verb verb;
};

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << "cannot read " << path;
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

class GoldenTest : public ::testing::TestWithParam<GoldenCase> {};

TEST_P(GoldenTest, ReplyMatches) {
  const GoldenCase& c = GetParam();
  const std::string stem = std::string("extender/testdata/") + c.name;
  const std::string request_body = ReadFile(stem + ".request.json");
  ASSERT_FALSE(request_body.empty());

  testing::FakeDecider decider;
  WebhookHandlers handlers(&decider);
  HttpRequest request;
  request.method = "POST";
  request.path = std::string("/") + VerbName(c.verb);
  request.body = request_body;
  HttpResponse response;
  switch (c.verb) {
    case Verb::kFilter:
      response = handlers.Filter(request);
      break;
    case Verb::kPrioritize:
      response = handlers.Prioritize(request);
      break;
    case Verb::kPreempt:
      response = handlers.Preempt(request);
      break;
    case Verb::kBind:
      response = handlers.Bind(request);
      break;
  }
  EXPECT_EQ(response.status, 200) << response.body;
  EXPECT_NE(response.outcome, "bad_request");
  EXPECT_NE(response.outcome, "unusable");

  if (const char* dir = std::getenv("TASKGOV_UPDATE_GOLDEN"); dir != nullptr) {
    std::ofstream out(std::string(dir) + "/" + c.name + ".reply.json", std::ios::binary);
    out << response.body << "\n";
    GTEST_SKIP() << "wrote " << c.name << ".reply.json";
  }
  std::string golden = ReadFile(stem + ".reply.json");
  ASSERT_FALSE(golden.empty());
  ASSERT_EQ(golden.back(), '\n');
  golden.pop_back();
  EXPECT_EQ(response.body, golden);
}

INSTANTIATE_TEST_SUITE_P(Testdata, GoldenTest,
                         ::testing::Values(GoldenCase{"filter_names_go", Verb::kFilter},
                                           GoldenCase{"filter_names_lower", Verb::kFilter},
                                           GoldenCase{"filter_nodes_go", Verb::kFilter},
                                           GoldenCase{"filter_nodes_lower", Verb::kFilter},
                                           GoldenCase{"filter_nodes_mig_go", Verb::kFilter},
                                           GoldenCase{"prioritize_names_go", Verb::kPrioritize},
                                           GoldenCase{"prioritize_names_lower", Verb::kPrioritize},
                                           GoldenCase{"prioritize_nodes_go", Verb::kPrioritize},
                                           GoldenCase{"prioritize_nodes_lower", Verb::kPrioritize},
                                           GoldenCase{"preempt_meta_go", Verb::kPreempt},
                                           GoldenCase{"preempt_meta_lower", Verb::kPreempt},
                                           GoldenCase{"preempt_full_go", Verb::kPreempt},
                                           GoldenCase{"preempt_full_lower", Verb::kPreempt},
                                           GoldenCase{"bind_go", Verb::kBind},
                                           GoldenCase{"bind_lower", Verb::kBind}),
                         [](const ::testing::TestParamInfo<GoldenCase>& info) {
                           return info.param.name;
                         });

// The Nodes-mode reply carries each feasible node exactly as the request had it: every node of
// the reply is a byte-for-byte substring of the request.
TEST(GoldenEchoTest, FeasibleNodesAreEchoedVerbatim) {
  const std::string body = ReadFile("extender/testdata/filter_nodes_go.request.json");
  FilterRequest request;
  DecodeStatus status = DecodeFilterRequest(body, &request);
  ASSERT_TRUE(status.ok()) << status.message;
  ASSERT_EQ(request.raw_nodes.size(), 4u);
  scheduler::FilterResult result;
  result.feasible = {3, 0};
  const std::string reply = EncodeFilterResult(request, result);
  const std::string expected = "{\"Nodes\":{\"metadata\":{},\"items\":[" +
                               std::string(request.raw_nodes[3]) + "," +
                               std::string(request.raw_nodes[0]) + "]},";
  EXPECT_EQ(reply.substr(0, expected.size()), expected);
  for (std::string_view raw : request.raw_nodes) {
    EXPECT_NE(body.find(raw), std::string::npos);
    EXPECT_EQ(raw.front(), '{');
    EXPECT_EQ(raw.back(), '}');
  }
  // The escapes of the input survive (Go writes <, > and & as \u003c, \u003e, \u0026).
  EXPECT_NE(request.raw_nodes[0].find("\\u003cok\\u003e \\u0026 \\\"quoted\\\""),
            std::string::npos);
}

}  // namespace
}  // namespace taskgov::extender
