#include "extender/handlers.h"

#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include <string>
#include <vector>

#include "extender/fake_decider.h"
#include "scheduler/common/log.h"
#include "scheduler/model/json_select.h"

namespace taskgov::extender {
namespace {

constexpr const char* kPod =
    R"({"metadata":{"name":"w-0","namespace":"team-a","uid":"u-1"},"spec":{"containers":[)"
    R"({"name":"m","resources":{"requests":{"nvidia.com/gpu":"8"}}}]}})";

std::string FilterBody(const std::string& names = R"(["n1","busy-2","full-3"])") {
  return std::string(R"({"Pod":)") + kPod + R"(,"Nodes":null,"NodeNames":)" + names + "}";
}

HttpRequest Post(const std::string& path, std::string body) {
  HttpRequest request;
  request.method = "POST";
  request.path = path;
  request.body = std::move(body);
  return request;
}

std::string ErrorOf(const std::string& body) {
  rapidjson::Document doc;
  if (!scheduler::model::ParseJson(body, &doc).ok() || !doc.IsObject() || !doc.HasMember("Error") ||
      !doc["Error"].IsString()) {
    return "<no Error in " + body + ">";
  }
  return doc["Error"].GetString();
}

// A Decider whose answers the test sets.
class ScriptedDecider : public scheduler::Decider {
 public:
  scheduler::FilterResult Filter(const scheduler::FilterArgs&) override { return filter; }
  std::vector<scheduler::HostPriority> Prioritize(const scheduler::FilterArgs&) override {
    return priorities;
  }
  scheduler::PreemptResult Preempt(const scheduler::PreemptArgs&) override { return preempt; }
  scheduler::BindResult Bind(const scheduler::BindArgs&) override { return {}; }

  scheduler::FilterResult filter;
  std::vector<scheduler::HostPriority> priorities;
  scheduler::PreemptResult preempt;
};

TEST(WebhookRoutesTest, PathsMethodsAndLimits) {
  testing::FakeDecider decider;
  WebhookHandlers defaults(&decider);
  std::vector<Route> routes = defaults.Routes();
  ASSERT_EQ(routes.size(), 4u);
  EXPECT_EQ(routes[0].path, "/filter");
  EXPECT_EQ(routes[1].path, "/prioritize");
  EXPECT_EQ(routes[2].path, "/preempt");
  EXPECT_EQ(routes[3].path, "/bind");
  for (const Route& r : routes) EXPECT_EQ(r.method, "POST");
  EXPECT_EQ(routes[0].body_limit, 64u << 20);
  EXPECT_EQ(routes[1].body_limit, 64u << 20);
  EXPECT_EQ(routes[2].body_limit, 64u << 20);
  EXPECT_EQ(routes[3].body_limit, 64u << 10);

  WebhookOptions options;
  options.url_prefix = "taskgov/";
  options.filter_body_limit = 1000;
  options.bind_body_limit = 10;
  WebhookHandlers custom(&decider, options);
  routes = custom.Routes();
  EXPECT_EQ(routes[0].path, "/taskgov/filter");
  EXPECT_EQ(routes[3].path, "/taskgov/bind");
  EXPECT_EQ(routes[0].body_limit, 1000u);
  EXPECT_EQ(routes[3].body_limit, 10u);
  // The routes call this object's handlers.
  HttpResponse r = routes[0].handler(Post("/taskgov/filter", FilterBody()));
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(decider.filter_calls.load(), 1);
}

TEST(WebhookRoutesTest, NormalizePrefix) {
  for (auto [in, out] : std::vector<std::pair<const char*, const char*>>{{"", ""},
                                                                         {"/", ""},
                                                                         {"//", ""},
                                                                         {"/taskgov", "/taskgov"},
                                                                         {"/taskgov/", "/taskgov"},
                                                                         {"taskgov", "/taskgov"},
                                                                         {"/a/b//", "/a/b"}}) {
    EXPECT_EQ(WebhookHandlers::NormalizePrefix(in), out) << in;
  }
}

TEST(WebhookHandlersTest, FilterDecides) {
  testing::FakeDecider decider;
  WebhookHandlers handlers(&decider);
  HttpResponse r = handlers.Filter(Post("/filter", FilterBody()));
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.content_type, "application/json");
  EXPECT_EQ(r.body.substr(0, 23), R"({"NodeNames":["n1"],"Fa)");
  EXPECT_EQ(ErrorOf(r.body), "");
  EXPECT_EQ(r.outcome, "ok");
}

struct BadCase {
  const char* name;
  Verb verb;
  std::string body;
  int status;
  Outcome outcome;
  std::string error;  // expected substring of the reply's Error
};

void PrintTo(const BadCase& c, std::ostream* os) { *os << c.name; }

class WebhookBadInputTest : public ::testing::TestWithParam<BadCase> {};

// Each bad request: the status, an Error naming what and where, its outcome label, and exactly
// one log line (at the default level) that names the verb.
TEST_P(WebhookBadInputTest, AnswersLabelsAndLogsOnce) {
  const BadCase& c = GetParam();
  testing::FakeDecider decider;
  WebhookHandlers handlers(&decider);
  HttpRequest request = Post(std::string("/") + VerbName(c.verb), c.body);
  common::log::ScopedCapture logs;
  HttpResponse r;
  switch (c.verb) {
    case Verb::kFilter:
      r = handlers.Filter(request);
      break;
    case Verb::kPrioritize:
      r = handlers.Prioritize(request);
      break;
    case Verb::kPreempt:
      r = handlers.Preempt(request);
      break;
    case Verb::kBind:
      r = handlers.Bind(request);
      break;
  }
  EXPECT_EQ(r.status, c.status) << r.body;
  EXPECT_NE(ErrorOf(r.body).find(c.error), std::string::npos) << r.body;
  EXPECT_EQ(r.outcome, metrics::WebhookOutcomeName(c.outcome));
  const std::vector<std::string> lines = logs.Lines();
  ASSERT_EQ(lines.size(), 1u) << ::testing::PrintToString(lines);
  EXPECT_NE(lines[0].find(VerbName(c.verb)), std::string::npos) << lines[0];
  if (c.outcome == Outcome::kBadRequest || c.outcome == Outcome::kUnusable) {
    EXPECT_EQ(decider.filter_calls + decider.prioritize_calls + decider.preempt_calls +
                  decider.bind_calls,
              0);
  }
}

std::string PodRequest(const std::string& quantity) {
  return std::string(R"({"Pod":{"metadata":{"name":"p","namespace":"n","uid":"u"},"spec":{)") +
         R"("containers":[{"resources":{"limits":{"nvidia.com/gpu":")" + quantity +
         R"("}}}]}},"NodeNames":["a"]})";
}

const std::string kQuantityPath =
    "Pod: spec.containers[0].resources.limits[\"nvidia.com/gpu\"]: invalid quantity";

INSTANTIATE_TEST_SUITE_P(
    Table, WebhookBadInputTest,
    ::testing::Values(
        BadCase{"FilterNotJson", Verb::kFilter, "{", 400, Outcome::kBadRequest, "malformed JSON"},
        BadCase{"FilterWrongType", Verb::kFilter, R"({"Pod":[]})", 400, Outcome::kBadRequest,
                "Pod: expected an object, got array"},
        BadCase{"Quantity153", Verb::kFilter, PodRequest("1.5.3"), 400, Outcome::kBadRequest,
                kQuantityPath + " '1.5.3'"},
        BadCase{"QuantityNegative", Verb::kFilter, PodRequest("-4"), 400, Outcome::kBadRequest,
                kQuantityPath + " '-4'"},
        BadCase{"QuantityHuge", Verb::kFilter, PodRequest("1e400"), 400, Outcome::kBadRequest,
                kQuantityPath + " '1e400'"},
        BadCase{"QuantitySuffix", Verb::kFilter, PodRequest("12XB"), 400, Outcome::kBadRequest,
                kQuantityPath + " '12XB'"},
        BadCase{"FilterNoPod", Verb::kFilter, R"({"NodeNames":["a"]})", 200, Outcome::kUnusable,
                "the request has no Pod"},
        BadCase{"FilterDeciderError", Verb::kFilter,
                std::string(R"({"Pod":{"metadata":{"name":"p","namespace":"n","uid":"u",)") +
                    R"("labels":{"taskgov.test/error":"not ready: pods not synced"}}},)" +
                    R"("NodeNames":["a"]})",
                200, Outcome::kErrorReply, "not ready: pods not synced"},
        BadCase{"PrioritizeNotJson", Verb::kPrioritize, "nope", 400, Outcome::kBadRequest,
                "malformed JSON"},
        BadCase{"PrioritizeNoPod", Verb::kPrioritize, R"({"NodeNames":["a"]})", 400,
                Outcome::kUnusable, "the request has no Pod"},
        BadCase{"PreemptNotJson", Verb::kPreempt, "[", 400, Outcome::kBadRequest, "malformed JSON"},
        BadCase{"PreemptNoPod", Verb::kPreempt, R"({"NodeNameToMetaVictims":{}})", 200,
                Outcome::kUnusable, "the request has no Pod"},
        BadCase{"PreemptNoVictimsMap", Verb::kPreempt,
                std::string(R"({"Pod":{"metadata":{"name":"p","namespace":"n","uid":"u"}},)") +
                    R"("NodeNameToVictims":null})",
                200, Outcome::kUnusable, "neither NodeNameToVictims nor NodeNameToMetaVictims"},
        BadCase{"BindWrongType", Verb::kBind, R"({"PodName":["p"]})", 400, Outcome::kBadRequest,
                "PodName: expected a string, got array"},
        BadCase{"BindNoNode", Verb::kBind, R"({"PodName":"p","PodNamespace":"n"})", 200,
                Outcome::kUnusable, "the bind request has no Node"},
        BadCase{"BindConflict", Verb::kBind,
                R"({"PodName":"p","PodNamespace":"n","PodUID":"conflict-1","Node":"x"})", 200,
                Outcome::kErrorReply, "409 Conflict"}),
    [](const ::testing::TestParamInfo<BadCase>& info) { return info.param.name; });

TEST(WebhookHandlersTest, UnusableFilterReplyHasNoNodes) {
  testing::FakeDecider decider;
  WebhookHandlers handlers(&decider);
  HttpResponse r = handlers.Filter(Post("/filter", R"({"NodeNames":["a"]})"));
  EXPECT_EQ(r.body, R"({"FailedNodes":{},"FailedAndUnresolvableNodes":{},)"
                    R"("Error":"the request has no Pod"})");
}

TEST(WebhookHandlersTest, UnusablePreemptVetoes) {
  testing::FakeDecider decider;
  WebhookHandlers handlers(&decider);
  HttpResponse r = handlers.Preempt(Post("/preempt", R"({"NodeNameToMetaVictims":{"n":{}}})"));
  EXPECT_EQ(r.body, R"({"NodeNameToMetaVictims":{},"Error":"the request has no Pod"})");
}

TEST(WebhookHandlersTest, ScoresAreClamped) {
  ScriptedDecider decider;
  decider.priorities = {{"n1", -5}, {"n2", 42}, {"n3", 7}};
  WebhookHandlers handlers(&decider);
  HttpResponse r = handlers.Prioritize(Post("/prioritize", FilterBody()));
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body,
            R"([{"Host":"n1","Score":0},{"Host":"n2","Score":10},{"Host":"n3","Score":7}])");
}

TEST(WebhookHandlersTest, UnknownFeasibleNodesAreDropped) {
  ScriptedDecider decider;
  decider.filter.feasible = {0, 99};  // n1, and a node the request did not name
  WebhookHandlers handlers(&decider);
  HttpResponse r = handlers.Filter(Post("/filter", FilterBody()));
  EXPECT_EQ(r.body.substr(0, 20), R"({"NodeNames":["n1"],)");
}

TEST(WebhookHandlersTest, PreemptErrorClearsVictims) {
  ScriptedDecider decider;
  decider.preempt.node_to_victims["n1"] = scheduler::Victims{};
  decider.preempt.error = "ledger unavailable";
  WebhookHandlers handlers(&decider);
  HttpResponse r = handlers.Preempt(
      Post("/preempt", std::string(R"({"Pod":)") + kPod + R"(,"NodeNameToMetaVictims":{}})"));
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, R"({"NodeNameToMetaVictims":{},"Error":"ledger unavailable"})");
  EXPECT_EQ(r.outcome, "error_reply");
}

TEST(WebhookHandlersTest, NamesForMetrics) {
  EXPECT_STREQ(VerbName(Verb::kFilter), "filter");
  EXPECT_STREQ(VerbName(Verb::kPrioritize), "prioritize");
  EXPECT_STREQ(VerbName(Verb::kPreempt), "preempt");
  EXPECT_STREQ(VerbName(Verb::kBind), "bind");
  EXPECT_EQ(metrics::WebhookOutcomeName(Outcome::kOk), "ok");
  EXPECT_EQ(metrics::WebhookOutcomeName(Outcome::kErrorReply), "error_reply");
  EXPECT_EQ(metrics::WebhookOutcomeName(Outcome::kUnusable), "unusable");
  EXPECT_EQ(metrics::WebhookOutcomeName(Outcome::kBadRequest), "bad_request");
}

}  // namespace
}  // namespace taskgov::extender
