#include "extender/wire.h"

#include <gtest/gtest.h>
#include <rapidjson/document.h>
#include <rapidjson/pointer.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <cstdint>
#include <string>

#include "scheduler/model/json_select.h"

namespace taskgov::extender {
namespace {

constexpr const char* kPod =
    R"({"metadata":{"name":"w-0","namespace":"team-a","uid":"u-1","labels":{"app":"x"}},)"
    R"("spec":{"priority":7,"initContainers":[{"name":"i","resources":{"requests":{"cpu":"1"}}},)"
    R"({"name":"s","restartPolicy":"Always","resources":{"requests":{"cpu":"1"}}}],)"
    R"("containers":[{"name":"m","resources":{"requests":{"cpu":"2","nvidia.com/gpu":"1"}}}],)"
    R"("overhead":{"cpu":"100m"}},"status":{"phase":"Pending"}})";

constexpr const char* kNode1 =
    R"({"metadata":{"name":"n1","labels":{"node.kubernetes.io/instance-type":"ml.p5.48xlarge"}},)"
    R"( "status":{"allocatable":{"nvidia.com/gpu":"8"},"images":[{"names":["x"]}]}})";
constexpr const char* kNode2 = R"({"metadata" : {"name" : "n2"}, "spec": {"unschedulable": true}})";

std::string WithPod(const std::string& rest) {
  return std::string("{\"Pod\":") + kPod + rest + "}";
}

FilterRequest MustDecodeFilter(const std::string& body) {
  FilterRequest out;
  DecodeStatus s = DecodeFilterRequest(body, &out);
  EXPECT_TRUE(s.ok()) << s.message << "\n" << body;
  return out;
}

TEST(DecodeFilterRequestTest, NodeNamesMode) {
  FilterRequest r = MustDecodeFilter(WithPod(R"(,"Nodes":null,"NodeNames":["n1","n2","n3"])"));
  EXPECT_TRUE(r.args.node_names_mode);
  EXPECT_EQ(r.args.node_names, (std::vector<std::string>{"n1", "n2", "n3"}));
  EXPECT_TRUE(r.args.nodes.empty());
  EXPECT_TRUE(r.raw_nodes.empty());
  EXPECT_EQ(r.args.pod.key(), "team-a/w-0");
  EXPECT_EQ(r.args.pod.uid, "u-1");
  EXPECT_EQ(r.args.pod.priority, 7);
  EXPECT_EQ(scheduler::model::EffectiveRequest(r.args.pod).Get("cpu"), 3100);
}

TEST(DecodeFilterRequestTest, NodesModeKeepsRawNodes) {
  const std::string body = WithPod(std::string(R"(, "Nodes": {"metadata":{}, "items": [ )") +
                                   kNode1 + " ,\n" + kNode2 + R"(]}, "NodeNames": null)");
  FilterRequest r = MustDecodeFilter(body);
  EXPECT_FALSE(r.args.node_names_mode);
  ASSERT_EQ(r.args.nodes.size(), 2u);
  EXPECT_EQ(r.args.node_names, (std::vector<std::string>{"n1", "n2"}));
  EXPECT_EQ(r.args.nodes[0].allocatable.Get("nvidia.com/gpu"), 8);
  EXPECT_TRUE(r.args.nodes[1].unschedulable);
  ASSERT_EQ(r.raw_nodes.size(), 2u);
  EXPECT_EQ(r.raw_nodes[0], kNode1);
  EXPECT_EQ(r.raw_nodes[1], kNode2);
}

TEST(DecodeFilterRequestTest, PodPlacementThroughTheSharedDecoder) {
  // The webhook's pod goes through scheduler/model/kube_json.h like the informer's: tolerations and
  // required node affinity arrive; preferred affinity and pod affinity are skipped.
  const std::string pod =
      R"({"metadata":{"name":"w-1","namespace":"team-a","uid":"u-2"},"spec":{)"
      R"("nodeSelector":{"node.kubernetes.io/instance-type":"ml.p5.48xlarge"},)"
      R"("tolerations":[{"key":"nvidia.com/gpu","operator":"Exists","effect":"NoSchedule"}],)"
      R"("affinity":{"podAffinity":{"x":1},"nodeAffinity":{)"
      R"("preferredDuringSchedulingIgnoredDuringExecution":[{"weight":1}],)"
      R"("requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[)"
      R"({"matchFields":[{"key":"metadata.name","operator":"In","values":["n1"]}]}]}}}}})";
  FilterRequest r = MustDecodeFilter(R"({"Pod":)" + pod + R"(,"NodeNames":["n1"]})");
  const scheduler::model::Pod& p = r.args.pod;
  EXPECT_EQ(p.node_selector.at("node.kubernetes.io/instance-type"), "ml.p5.48xlarge");
  ASSERT_NE(p.placement, nullptr);
  ASSERT_EQ(p.placement->tolerations.size(), 1u);
  EXPECT_EQ(p.placement->tolerations[0].key, "nvidia.com/gpu");
  EXPECT_EQ(p.placement->tolerations[0].op, scheduler::model::TolerationOperator::kExists);
  EXPECT_EQ(p.placement->tolerations[0].effect, scheduler::model::TaintEffect::kNoSchedule);
  ASSERT_TRUE(p.placement->required_node_affinity.has_value());
  ASSERT_EQ(p.placement->required_node_affinity->size(), 1u);
  const auto& fields = p.placement->required_node_affinity->at(0).match_fields;
  ASSERT_EQ(fields.size(), 1u);
  EXPECT_EQ(fields[0].values, std::vector<std::string>{"n1"});

  // A wrong type inside is malformed, with its path.
  FilterRequest bad;
  DecodeStatus s = DecodeFilterRequest(
      R"({"Pod":{"spec":{"tolerations":[{"effect":1}]}},"NodeNames":["n1"]})", &bad);
  EXPECT_EQ(s.failure, DecodeFailure::kMalformed);
  EXPECT_NE(s.message.find("spec.tolerations[0].effect: expected a string, got number"),
            std::string::npos)
      << s.message;
}

TEST(DecodeFilterRequestTest, KeysMatchLikeGo) {
  // ≥ 1.18 capitalised, ≤ 1.17 lower-case, and any other folding Go accepts.
  for (const char* pod_key : {"Pod", "pod", "POD", "pOd"}) {
    for (const char* names_key :
         {"NodeNames", "nodenames", "nodeNames", "NODENAMES", "NodeName\xC5\xBF"}) {
      const std::string body =
          std::string("{\"") + pod_key + "\":" + kPod + ",\"" + names_key + "\":[\"a\"]}";
      FilterRequest r = MustDecodeFilter(body);
      EXPECT_EQ(r.args.node_names.size(), 1u) << body;
      EXPECT_EQ(r.args.pod.name, "w-0");
    }
  }
  for (const char* nodes_key : {"Nodes", "nodes", "NODES", "NodeS", "node\xC5\xBF"}) {
    const std::string body =
        std::string("{\"pod\":") + kPod + ",\"" + nodes_key + "\":{\"Items\":[" + kNode2 + "]}}";
    FilterRequest r = MustDecodeFilter(body);
    EXPECT_FALSE(r.args.node_names_mode) << nodes_key;
    EXPECT_EQ(r.args.node_names, std::vector<std::string>{"n2"});
  }
}

TEST(DecodeFilterRequestTest, NullIsAbsentUnknownIgnoredLastKeyWins) {
  FilterRequest r = MustDecodeFilter(WithPod(
      R"(,"Nodes":null,"NodeNames":["a"],"Extra":{"deep":[1,{"x":null}]},"nodenames":["b","c"])"));
  EXPECT_EQ(r.args.node_names, (std::vector<std::string>{"b", "c"}));

  // The last "Nodes" wins, with the raw text of its own items.
  const std::string body = WithPod(std::string(R"(,"Nodes":{"items":[)") + kNode1 + "," + kNode1 +
                                   R"(]},"nodes":{"items":[)" + kNode2 + "]}");
  FilterRequest last = MustDecodeFilter(body);
  ASSERT_EQ(last.raw_nodes.size(), 1u);
  EXPECT_EQ(last.raw_nodes[0], kNode2);
  EXPECT_EQ(last.args.node_names, std::vector<std::string>{"n2"});

  const std::string items_twice = WithPod(std::string(R"(,"Nodes":{"items":[)") + kNode1 +
                                          R"(],"items":[)" + kNode2 + "," + kNode1 + "]}");
  FilterRequest twice = MustDecodeFilter(items_twice);
  ASSERT_EQ(twice.raw_nodes.size(), 2u);
  EXPECT_EQ(twice.raw_nodes[0], kNode2);
  EXPECT_EQ(twice.raw_nodes[1], kNode1);

  FilterRequest empty = MustDecodeFilter(WithPod(R"(,"Nodes":{})"));
  EXPECT_FALSE(empty.args.node_names_mode);
  EXPECT_TRUE(empty.args.node_names.empty());
  FilterRequest no_names = MustDecodeFilter(WithPod(R"(,"NodeNames":[])"));
  EXPECT_TRUE(no_names.args.node_names_mode);
}

struct BadRequest {
  const char* name;
  std::string body;
  DecodeFailure failure;
  std::string message;  // expected substring
};

void PrintTo(const BadRequest& b, std::ostream* os) { *os << b.name; }

class DecodeFilterBadTest : public ::testing::TestWithParam<BadRequest> {};

TEST_P(DecodeFilterBadTest, Fails) {
  FilterRequest out;
  DecodeStatus s = DecodeFilterRequest(GetParam().body, &out);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.failure, GetParam().failure) << s.message;
  EXPECT_NE(s.message.find(GetParam().message), std::string::npos) << s.message;
}

BadRequest Malformed(const char* name, std::string body, std::string message) {
  return BadRequest{name, std::move(body), DecodeFailure::kMalformed, std::move(message)};
}
BadRequest Unusable(const char* name, std::string body, std::string message) {
  return BadRequest{name, std::move(body), DecodeFailure::kUnusable, std::move(message)};
}

std::string PodWithRequest(const std::string& resource, const std::string& quantity) {
  return R"({"Pod":{"metadata":{"name":"p","namespace":"n","uid":"u"},"spec":{"containers":[)"
         R"({"name":"a"},{"name":"b","resources":{"requests":{")" +
         resource + "\":" + quantity + R"(}}}]}},"NodeNames":["x"]})";
}

INSTANTIATE_TEST_SUITE_P(
    Table, DecodeFilterBadTest,
    ::testing::Values(
        Malformed("Empty", "", "malformed JSON: the body is empty"),
        Malformed("NotJson", "filter please", "malformed JSON at offset 1: Invalid value"),
        Malformed("Truncated", WithPod(R"(,"NodeNames":["a",)").substr(0, 120),
                  "malformed JSON at offset"),
        Malformed("TrailingGarbage", WithPod(R"(,"NodeNames":[]}})"), "malformed JSON at offset"),
        Malformed("Array", "[]", "request: expected a JSON object, got array"),
        Malformed("Null", "null", "request: expected a JSON object, got null"),
        Malformed("PodNumber", R"({"Pod":5,"NodeNames":[]})",
                  "Pod: expected an object, got number"),
        Malformed("PodString", R"({"pod":"p","NodeNames":[]})",
                  "Pod: expected an object, got string"),
        Malformed("PodMetadata", R"({"Pod":{"metadata":"m"},"NodeNames":[]})",
                  "Pod: metadata: expected an object, got string"),
        Malformed("Quantity153", PodWithRequest("nvidia.com/gpu", "\"1.5.3\""),
                  "Pod: spec.containers[1].resources.requests[\"nvidia.com/gpu\"]: invalid "
                  "quantity '1.5.3'"),
        Malformed("QuantityNegative", PodWithRequest("cpu", "\"-4\""),
                  "Pod: spec.containers[1].resources.requests[\"cpu\"]: invalid quantity '-4': "
                  "negative"),
        Malformed("QuantityHuge", PodWithRequest("memory", "\"1e400\""),
                  "Pod: spec.containers[1].resources.requests[\"memory\"]: invalid quantity "
                  "'1e400': too large"),
        Malformed("QuantityHugeNumber", PodWithRequest("memory", "1e400"),
                  "malformed JSON at offset"),
        Malformed("QuantitySuffix", PodWithRequest("memory", "\"12XB\""),
                  "invalid quantity '12XB': unknown suffix 'XB'"),
        Malformed("QuantityEmpty", PodWithRequest("memory", "\"\""), "invalid quantity '': empty"),
        Malformed("NodeNamesString", WithPod(R"(,"NodeNames":"n1")"),
                  "NodeNames: expected an array of strings, got string"),
        Malformed("NodeNamesObject", WithPod(R"(,"NodeNames":{"n1":true})"),
                  "NodeNames: expected an array of strings, got object"),
        Malformed("NodeNameNumber", WithPod(R"(,"NodeNames":["a",1])"),
                  "NodeNames[1]: expected a string, got number"),
        Malformed("NodeNameNull", WithPod(R"(,"NodeNames":["a",null])"),
                  "NodeNames[1]: expected a string, got null"),
        Malformed("NodesArray", WithPod(R"(,"Nodes":[])"),
                  "Nodes: expected a NodeList object, got array"),
        Malformed("ItemsObject", WithPod(R"(,"Nodes":{"items":{}})"),
                  "Nodes.items: expected an array, got object"),
        Malformed("ItemNumber", WithPod(R"(,"Nodes":{"items":[1]})"),
                  "Nodes.items[0]: expected a Node object, got number"),
        Malformed("ItemNested", WithPod(R"(,"Nodes":{"items":[[{}]]})"),
                  "Nodes.items[0]: expected a Node object, got array"),
        Malformed("ItemQuantity",
                  WithPod(R"(,"Nodes":{"items":[{"metadata":{"name":"a"}},)"
                          R"({"status":{"allocatable":{"nvidia.com/gpu":"-4"}}}]})"),
                  "Nodes.items[1]: status.allocatable[\"nvidia.com/gpu\"]: invalid quantity '-4'"),
        Malformed("ItemLabels", WithPod(R"(,"Nodes":{"items":[{"metadata":{"labels":[]}}]})"),
                  "Nodes.items[0]: metadata.labels: expected an object, got array"),
        Malformed("DeepGarbage",
                  "{\"Pod\":" + std::string(100000, '[') + std::string(100000, ']') + "}",
                  "nesting deeper than 512"),
        Malformed("DeepInIgnoredKey", WithPod(",\"X\":" + std::string(5000, '[')),
                  "nesting deeper than 512"),
        Malformed("InvalidUtf8", WithPod(",\"NodeNames\":[\"n\xff\"]"), "invalid UTF-8"),
        // Malformed outranks unusable.
        Malformed("NoPodButBadNames", R"({"NodeNames":5})", "NodeNames: expected an array"),
        Unusable("NoPod", R"({"NodeNames":["a"]})", "the request has no Pod"),
        Unusable("NullPod", R"({"Pod":null,"NodeNames":["a"]})", "the request has no Pod"),
        Unusable("PodNulledLater", WithPod(R"(,"pod":null,"NodeNames":["a"])"),
                 "the request has no Pod"),
        Unusable("PodWithoutName", R"({"Pod":{},"NodeNames":[]})", "Pod has no metadata.name"),
        Unusable("PodWithoutUid",
                 R"({"Pod":{"metadata":{"name":"a","namespace":"b"}},"NodeNames":[]})",
                 "Pod has no metadata.uid"),
        Unusable("NoNodeList", WithPod(""), "neither Nodes nor NodeNames"),
        Unusable("NullNodeLists", WithPod(R"(,"Nodes":null,"NodeNames":null)"),
                 "neither Nodes nor NodeNames"),
        Unusable("BothNodeLists", WithPod(R"(,"Nodes":{"items":[]},"NodeNames":[])"),
                 "both Nodes and NodeNames"),
        Unusable("NodeWithoutName", WithPod(R"(,"Nodes":{"items":[{"metadata":{}}]})"),
                 "Nodes.items[0] has no metadata.name")),
    [](const ::testing::TestParamInfo<BadRequest>& info) { return info.param.name; });

// Wrong JSON types at every level of a filter request: each path of a valid request gets each
// value of a type it must not have, and the decoder must say where.
TEST(DecodeFilterRequestTest, WrongTypesAtEveryLevel) {
  const std::string valid = WithPod(R"(,"NodeNames":["n1"])");
  struct Path {
    const char* pointer;  // JSON pointer into the request
    const char* ok_type;  // the JSON type the path may have
    const char* where;    // expected in the message
  };
  const Path paths[] = {
      {"/Pod", "object", "Pod: expected an object"},
      {"/Pod/metadata", "object", "Pod: metadata: expected an object"},
      {"/Pod/metadata/name", "string", "Pod: metadata.name: expected a string"},
      {"/Pod/metadata/namespace", "string", "Pod: metadata.namespace: expected a string"},
      {"/Pod/metadata/uid", "string", "Pod: metadata.uid: expected a string"},
      {"/Pod/metadata/labels", "object", "Pod: metadata.labels: expected an object"},
      {"/Pod/metadata/labels/app", "string", "Pod: metadata.labels[\"app\"]: expected a string"},
      {"/Pod/spec", "object", "Pod: spec: expected an object"},
      {"/Pod/spec/priority", "number", "Pod: spec.priority: expected a 32-bit integer"},
      {"/Pod/spec/initContainers", "array", "Pod: spec.initContainers: expected an array"},
      {"/Pod/spec/initContainers/1", "object", "Pod: spec.initContainers[1]: expected an object"},
      {"/Pod/spec/initContainers/1/restartPolicy", "string",
       "Pod: spec.initContainers[1].restartPolicy: expected a string"},
      {"/Pod/spec/containers", "array", "Pod: spec.containers: expected an array"},
      {"/Pod/spec/containers/0/name", "string", "Pod: spec.containers[0].name: expected a string"},
      {"/Pod/spec/containers/0/resources", "object",
       "Pod: spec.containers[0].resources: expected an object"},
      {"/Pod/spec/containers/0/resources/requests", "object",
       "Pod: spec.containers[0].resources.requests: expected an object of quantities"},
      {"/Pod/spec/containers/0/resources/requests/cpu", "string",
       "Pod: spec.containers[0].resources.requests[\"cpu\"]"},
      {"/Pod/spec/overhead", "object", "Pod: spec.overhead: expected an object of quantities"},
      {"/Pod/status", "object", "Pod: status: expected an object"},
      {"/Pod/status/phase", "string", "Pod: status.phase: expected a string"},
      {"/NodeNames", "array", "NodeNames: expected an array of strings"},
      {"/NodeNames/0", "string", "NodeNames[0]: expected a string"},
  };
  const std::pair<const char*, const char*> wrong[] = {
      {"number", "1.5"}, {"string", "\"s\""}, {"bool", "true"}, {"array", "[]"}, {"object", "{}"}};
  int checked = 0;
  for (const Path& path : paths) {
    for (const auto& [type, json] : wrong) {
      if (std::string(type) == path.ok_type) continue;
      // A bare integer is a valid quantity (Go's Quantity accepts one); 1.5 is not.
      rapidjson::Document doc;
      ASSERT_TRUE(scheduler::model::ParseJson(valid, &doc).ok());
      rapidjson::Document replacement;
      ASSERT_TRUE(scheduler::model::ParseJson(json, &replacement).ok());
      rapidjson::Pointer(path.pointer).Set(doc, replacement, doc.GetAllocator());
      rapidjson::StringBuffer buffer;
      rapidjson::Writer<rapidjson::StringBuffer> writer(buffer);
      doc.Accept(writer);
      FilterRequest out;
      DecodeStatus s = DecodeFilterRequest(buffer.GetString(), &out);
      ASSERT_FALSE(s.ok()) << path.pointer << " = " << json;
      EXPECT_EQ(s.failure, DecodeFailure::kMalformed) << path.pointer << " = " << json;
      EXPECT_NE(s.message.find(path.where), std::string::npos)
          << path.pointer << " = " << json << ": " << s.message;
      ++checked;
    }
  }
  EXPECT_EQ(checked, 22 * 4);
}

// Every prefix of a valid request is rejected as malformed, never accepted, never a crash.
TEST(DecodeFilterRequestTest, EveryTruncationIsMalformed) {
  const std::string body = WithPod(std::string(R"(,"Nodes":{"items":[)") + kNode1 + "]}");
  for (size_t n = 0; n < body.size(); ++n) {
    FilterRequest out;
    DecodeStatus s = DecodeFilterRequest(body.substr(0, n), &out);
    ASSERT_FALSE(s.ok()) << n;
    EXPECT_EQ(s.failure, DecodeFailure::kMalformed) << n << ": " << s.message;
  }
  FilterRequest out;
  EXPECT_TRUE(DecodeFilterRequest(body, &out).ok());
}

TEST(DecodePreemptRequestTest, MetaVictimsInEveryCasing) {
  for (
      const char* body :
      {R"({"Pod":%P,"NodeNameToVictims":null,"NodeNameToMetaVictims":{"n1":{"Pods":[{"UID":"a"},{"UID":"b"}],"NumPDBViolations":2},"n2":null}})",
       R"({"pod":%P,"nodeNameToMetaVictims":{"n1":{"pods":[{"uid":"a"},{"uid":"b"}],"numPDBViolations":2},"n2":null}})",
       R"({"POD":%P,"NODENAMETOMETAVICTIMS":{"n1":{"PODS":[{"U\u0130D":"a"},{"u\u0131d":"b"}],"numpdbviolations":2},"n2":{}}})"}) {
    std::string text(body);
    text.replace(text.find("%P"), 2, kPod);
    scheduler::PreemptArgs args;
    DecodeStatus s = DecodePreemptRequest(text, &args);
    ASSERT_TRUE(s.ok()) << s.message << "\n" << text;
    EXPECT_TRUE(args.meta);
    EXPECT_EQ(args.pod.name, "w-0");
    ASSERT_EQ(args.node_to_victims.size(), 2u);
    const scheduler::Victims& v = args.node_to_victims.at("n1");
    ASSERT_EQ(v.pods.size(), 2u);
    EXPECT_EQ(v.pods[0].uid, "a");
    EXPECT_EQ(v.pods[1].uid, "b");
    EXPECT_EQ(v.num_pdb_violations, 2);
    EXPECT_TRUE(args.node_to_victims.at("n2").pods.empty());
  }
}

TEST(DecodePreemptRequestTest, FullVictims) {
  std::string text = std::string(R"({"Pod":)") + kPod + R"(,"NodeNameToVictims":{"n1":{"Pods":[)" +
                     kPod + R"(],"NumPDBViolations":0}},"NodeNameToMetaVictims":null})";
  scheduler::PreemptArgs args;
  DecodeStatus s = DecodePreemptRequest(text, &args);
  ASSERT_TRUE(s.ok()) << s.message;
  EXPECT_FALSE(args.meta);
  ASSERT_EQ(args.node_to_victims.at("n1").pods.size(), 1u);
  EXPECT_EQ(args.node_to_victims.at("n1").pods[0].priority, 7);

  scheduler::PreemptArgs empty;
  ASSERT_TRUE(
      DecodePreemptRequest(std::string(R"({"Pod":)") + kPod + R"(,"NodeNameToVictims":{}})", &empty)
          .ok());
  EXPECT_TRUE(empty.node_to_victims.empty());
}

TEST(DecodePreemptRequestTest, NoVictimsMapIsUnusable) {
  for (const std::string& rest : {std::string("}"), std::string(R"(,"NodeNameToVictims":null})"),
                                  std::string(R"(,"nodeNameToMetaVictims":null})")}) {
    scheduler::PreemptArgs args;
    DecodeStatus s = DecodePreemptRequest(std::string(R"({"Pod":)") + kPod + rest, &args);
    EXPECT_FALSE(s.ok()) << rest;
    EXPECT_EQ(s.failure, DecodeFailure::kUnusable) << rest;  // 200 with Error, not a 400
    EXPECT_NE(s.message.find("neither NodeNameToVictims nor NodeNameToMetaVictims"),
              std::string::npos)
        << s.message;
  }
}

TEST(DecodePreemptRequestTest, BadInput) {
  const std::string pod = std::string(R"({"Pod":)") + kPod;
  struct Case {
    std::string body;
    DecodeFailure failure;
    const char* message;
  };
  const Case cases[] = {
      {pod + R"(,"NodeNameToMetaVictims":[]})", DecodeFailure::kMalformed,
       "NodeNameToMetaVictims: expected an object, got array"},
      {pod + R"(,"NodeNameToMetaVictims":{"n1":5}})", DecodeFailure::kMalformed,
       "NodeNameToMetaVictims[\"n1\"]: expected an object, got number"},
      {pod + R"(,"NodeNameToMetaVictims":{"n1":{"Pods":{}}}})", DecodeFailure::kMalformed,
       "NodeNameToMetaVictims[\"n1\"].Pods: expected an array, got object"},
      {pod + R"(,"NodeNameToMetaVictims":{"n1":{"Pods":[5]}}})", DecodeFailure::kMalformed,
       "NodeNameToMetaVictims[\"n1\"].Pods[0]: expected an object, got number"},
      {pod + R"(,"NodeNameToMetaVictims":{"n1":{"Pods":[{"UID":5}]}}})", DecodeFailure::kMalformed,
       "NodeNameToMetaVictims[\"n1\"].Pods[0].UID: expected a string, got number"},
      {pod + R"(,"NodeNameToMetaVictims":{"n1":{"NumPDBViolations":1.5}}})",
       DecodeFailure::kMalformed,
       "NodeNameToMetaVictims[\"n1\"].NumPDBViolations: expected a "
       "64-bit integer, got number"},
      {pod + R"(,"NodeNameToVictims":{"n1":{"Pods":[{"spec":{"overhead":{"cpu":"12XB"}}}]}}})",
       DecodeFailure::kMalformed,
       "NodeNameToVictims[\"n1\"].Pods[0]: spec.overhead[\"cpu\"]: invalid quantity '12XB'"},
      {pod + R"(,"NodeNameToMetaVictims":{"n1":{"Pods":[{}]}}})", DecodeFailure::kUnusable,
       "victim 0 on node 'n1' has no UID"},
      {pod + R"(,"NodeNameToMetaVictims":{},"NodeNameToVictims":{}})", DecodeFailure::kUnusable,
       "both NodeNameToVictims and NodeNameToMetaVictims"},
      {R"({"NodeNameToMetaVictims":{}})", DecodeFailure::kUnusable, "the request has no Pod"},
      {R"({"Pod":[],"NodeNameToMetaVictims":{}})", DecodeFailure::kMalformed,
       "Pod: expected an object, got array"},
      {"{\"Pod\":", DecodeFailure::kMalformed, "malformed JSON"},
  };
  for (const Case& c : cases) {
    scheduler::PreemptArgs args;
    DecodeStatus s = DecodePreemptRequest(c.body, &args);
    ASSERT_FALSE(s.ok()) << c.body;
    EXPECT_EQ(s.failure, c.failure) << c.body << ": " << s.message;
    EXPECT_NE(s.message.find(c.message), std::string::npos) << s.message;
  }
}

TEST(DecodeBindRequestTest, Casings) {
  for (const char* body :
       {R"({"PodName":"p","PodNamespace":"ns","PodUID":"u","Node":"n"})",
        R"({"podName":"p","podNamespace":"ns","podUID":"u","node":"n"})",
        R"({"PODNAME":"p","podnamespace":"ns","PodU\u0130D":"u","NODE":"n","extra":[1]})"}) {
    scheduler::BindArgs args;
    DecodeStatus s = DecodeBindRequest(body, &args);
    ASSERT_TRUE(s.ok()) << s.message;
    EXPECT_EQ(args.pod_name, "p");
    EXPECT_EQ(args.pod_namespace, "ns");
    EXPECT_EQ(args.pod_uid, "u");
    EXPECT_EQ(args.node, "n");
  }
  scheduler::BindArgs args;
  DecodeStatus missing = DecodeBindRequest(R"({"PodName":"p","PodNamespace":"ns"})", &args);
  EXPECT_EQ(missing.failure, DecodeFailure::kUnusable);
  EXPECT_EQ(missing.message, "the bind request has no Node");
  DecodeStatus wrong = DecodeBindRequest(R"({"PodName":5})", &args);
  EXPECT_EQ(wrong.failure, DecodeFailure::kMalformed);
  EXPECT_EQ(wrong.message, "PodName: expected a string, got number");
  EXPECT_EQ(DecodeBindRequest("[]", &args).failure, DecodeFailure::kMalformed);
}

TEST(EncodeTest, FilterNamesModeDropsUnknownNames) {
  FilterRequest request = MustDecodeFilter(WithPod(R"(,"NodeNames":["a","b","c"])"));
  scheduler::FilterResult result;
  result.feasible = {2, 7, 0};  // c, (no such node), a
  result.failed.push_back(
      {1, result.AddReason("quote \" backslash \\ newline \n tab \t bell \x07")});
  result.unresolvable.push_back({9, result.AddReason("x")});  // no such node
  size_t dropped = 0;
  EXPECT_EQ(EncodeFilterResult(request, result, &dropped),
            R"({"NodeNames":["c","a"],"FailedNodes":{"b":"quote \" backslash \\ newline \n tab )"
            R"(\t bell \u0007"},"FailedAndUnresolvableNodes":{},"Error":""})");
  EXPECT_EQ(dropped, 2u);
}

TEST(EncodeTest, AppendJsonStringEscapesExactlyTheBytesJsonRequires) {
  // Every byte value at every position of texts long enough for the word-at-a-time scan and its
  // tail: kept as it is unless it is a quote, a backslash or a control character.
  for (size_t length : {1u, 7u, 8u, 9u, 17u}) {
    for (size_t at = 0; at < length; ++at) {
      for (int byte = 0; byte < 256; ++byte) {
        std::string text(length, 'a');
        text[at] = static_cast<char>(byte);
        std::string out = "x";
        AppendJsonString(text, &out);
        const bool escaped = byte < 0x20 || byte == '"' || byte == '\\';
        EXPECT_EQ(out == "x\"" + text + "\"", !escaped) << "byte " << byte << " at " << at;
      }
    }
  }
}

TEST(EncodeTest, FilterNamesModeEscapesNamesThatNeedIt) {
  // Node names never need escaping, but the request's names are whatever the client sent: a
  // feasible name with a quote, backslash or control character is escaped, the others kept.
  FilterRequest request =
      MustDecodeFilter(WithPod(R"(,"NodeNames":["plain","q\"uote","back\\slash","bell\u0007"])"));
  scheduler::FilterResult result;
  result.feasible = {0, 1, 2, 3};
  EXPECT_EQ(EncodeFilterResult(request, result),
            R"({"NodeNames":["plain","q\"uote","back\\slash","bell\u0007"],"FailedNodes":{},)"
            R"("FailedAndUnresolvableNodes":{},"Error":""})");
  result.feasible = {0};
  EXPECT_EQ(EncodeFilterResult(request, result),
            R"({"NodeNames":["plain"],"FailedNodes":{},"FailedAndUnresolvableNodes":{},)"
            R"("Error":""})");
}

TEST(EncodeTest, FilterNodesModeEchoesRawNodes) {
  // raw_nodes are views into the body: it must outlive the request.
  const std::string body =
      WithPod(std::string(R"(,"Nodes":{"items":[)") + kNode1 + "," + kNode2 + "]}");
  FilterRequest request = MustDecodeFilter(body);
  scheduler::FilterResult result;
  result.feasible = {1, 5};  // n2, (no such node)
  result.error = "partial";
  size_t dropped = 0;
  EXPECT_EQ(EncodeFilterResult(request, result, &dropped),
            std::string(R"({"Nodes":{"metadata":{},"items":[)") + kNode2 +
                R"(]},"FailedNodes":{},"FailedAndUnresolvableNodes":{},"Error":"partial"})");
  EXPECT_EQ(dropped, 1u);
  result.feasible.clear();
  EXPECT_EQ(EncodeFilterResult(request, result),
            R"({"Nodes":{"metadata":{},"items":[]},"FailedNodes":{},)"
            R"("FailedAndUnresolvableNodes":{},"Error":"partial"})");
}

TEST(EncodeTest, OtherReplies) {
  EXPECT_EQ(EncodeFilterError("no \"Pod\""),
            R"({"FailedNodes":{},"FailedAndUnresolvableNodes":{},"Error":"no \"Pod\""})");
  EXPECT_EQ(EncodePriorities({}), "[]");
  EXPECT_EQ(EncodePriorities({{"a", 0}, {"b", 10}}),
            R"([{"Host":"a","Score":0},{"Host":"b","Score":10}])");
  EXPECT_EQ(EncodePriorities({{"q\"", -3}, {"c", INT64_MAX}}),
            R"([{"Host":"q\"","Score":-3},{"Host":"c","Score":9223372036854775807}])");
  scheduler::PreemptResult preempt;
  EXPECT_EQ(EncodePreemptResult(preempt), R"({"NodeNameToMetaVictims":{}})");
  scheduler::model::Pod victim;
  victim.uid = "v1";
  preempt.node_to_victims["n2"] = scheduler::Victims{{victim, victim}, 3};
  preempt.node_to_victims["n1"] = scheduler::Victims{};
  EXPECT_EQ(EncodePreemptResult(preempt),
            R"({"NodeNameToMetaVictims":{"n1":{"Pods":[],"NumPDBViolations":0},)"
            R"("n2":{"Pods":[{"UID":"v1"},{"UID":"v1"}],"NumPDBViolations":3}}})");
  scheduler::PreemptResult veto;
  veto.error = "not ready";
  EXPECT_EQ(EncodePreemptResult(veto), R"({"NodeNameToMetaVictims":{},"Error":"not ready"})");
  EXPECT_EQ(EncodeBindResult({}), R"({"Error":""})");
  EXPECT_EQ(EncodeBindResult({"409"}), R"({"Error":"409"})");
  EXPECT_EQ(EncodeError("bad\x01"), R"({"Error":"bad\u0001"})");
}

}  // namespace
}  // namespace taskgov::extender
