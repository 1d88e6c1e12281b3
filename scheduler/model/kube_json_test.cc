#include "scheduler/model/kube_json.h"

#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "scheduler/model/json_select.h"
#include "scheduler/model/kube_fields.h"
#include "scheduler/testing/builders.h"

namespace taskgov::scheduler::model {
namespace {

using testing::Q;

// A v1.Pod as the API server serves it, with fields taskgov ignores.
constexpr const char* kPod = R"({
  "kind": "Pod", "apiVersion": "v1",
  "metadata": {
    "name": "train-0", "namespace": "hyperpod-ns-team-a", "uid": "6f1c-0001",
    "resourceVersion": "48213", "generateName": "train-",
    "creationTimestamp": "2026-11-29T22:11:31Z",
    "deletionTimestamp": "2026-11-29T23:00:00.250+01:00",
    "labels": {"kueue.x-k8s.io/queue-name": "team-a", "app": "train"},
    "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{\"huge\":true}"},
    "ownerReferences": [
      {"apiVersion": "batch/v1", "kind": "Job", "name": "train", "uid": "job-1",
       "controller": true, "blockOwnerDeletion": true},
      {"apiVersion": "v1", "kind": "ConfigMap", "name": "cm", "uid": "cm-1"}
    ],
    "managedFields": [{"manager": "kubectl", "fieldsV1": {"f:spec": {"f:containers": {}}}}]
  },
  "spec": {
    "schedulerName": "taskgov", "nodeName": "ip-10-0-0-1", "priority": 1000,
    "priorityClassName": "training-priority",
    "volumes": [{"name": "data", "emptyDir": {}}],
    "initContainers": [
      {"name": "fetch", "image": "busybox",
       "resources": {"requests": {"cpu": "2", "memory": "1Gi"}}},
      {"name": "proxy", "restartPolicy": "Always",
       "resources": {"requests": {"cpu": "500m", "memory": "256Mi"}}}
    ],
    "containers": [
      {"name": "main", "image": "trainer", "env": [{"name": "X", "value": "1"}],
       "resources": {"limits": {"nvidia.com/gpu": "8", "vpc.amazonaws.com/efa": 4},
                     "requests": {"cpu": "1500m", "memory": "64Gi"}}},
      {"name": "logger", "resources": {"limits": {"cpu": "100m"}}}
    ],
    "overhead": {"cpu": "250m", "memory": "128Mi"},
    "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists"},
                    {"key": "node.kubernetes.io/not-ready", "operator": "Exists",
                     "effect": "NoExecute", "tolerationSeconds": 300},
                    {"key": "dedicated", "value": "ml", "effect": "NoSchedule"}],
    "affinity": {
      "nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
          {"matchExpressions": [
             {"key": "node.kubernetes.io/instance-type", "operator": "In",
              "values": ["ml.p5.48xlarge", "ml.p4d.24xlarge"]},
             {"key": "gpu-count", "operator": "Gt", "values": ["4"]}]},
          {"matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": ["bad"]}]}
        ]},
        "preferredDuringSchedulingIgnoredDuringExecution": [
          {"weight": 1, "preference": {"matchExpressions": [
             {"key": "zone", "operator": "In", "values": ["a"]}]}}]
      },
      "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"topologyKey": "kubernetes.io/hostname"}]}
    }
  },
  "status": {"phase": "Running", "startTime": "2026-11-29T22:12:00Z",
             "conditions": [{"type": "Ready", "status": "True"}]}
})";

constexpr const char* kNode = R"({
  "metadata": {"name": "ip-10-0-0-1", "resourceVersion": "77",
               "labels": {"node.kubernetes.io/instance-type": "ml.p5.48xlarge"},
               "annotations": {"x": "y"}},
  "spec": {"unschedulable": true, "providerID": "aws:///i-1",
           "taints": [{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule",
                       "timeAdded": null}]},
  "status": {
    "capacity": {"cpu": "192", "memory": "2048Gi", "nvidia.com/gpu": "8",
                 "vpc.amazonaws.com/efa": "32", "pods": "110"},
    "allocatable": {"cpu": "191450m", "memory": "2000Gi", "nvidia.com/gpu": "8",
                    "vpc.amazonaws.com/efa": "32", "nvidia.com/mig-1g.10gb": "0"},
    "conditions": [{"type": "MemoryPressure", "status": "False"},
                   {"type": "Ready", "status": "False", "reason": "KubeletNotReady"}],
    "images": [{"names": ["trainer:latest"], "sizeBytes": 123}]
  }
})";

rapidjson::Document Parse(const std::string& text) {
  rapidjson::Document doc;
  common::Status s = ParseJson(text, &doc);
  EXPECT_TRUE(s.ok()) << s.error().message;
  return doc;
}

Pod MustDecodePod(const std::string& text) {
  rapidjson::Document doc = Parse(text);
  common::Result<Pod> pod = DecodePod(doc);
  EXPECT_TRUE(pod.ok()) << pod.error().message;
  return pod.ok() ? *pod : Pod{};
}

// Every decoded field, for whole-object comparisons.
std::string Describe(const Pod& p) {
  std::ostringstream o;
  o << p.namespace_ << "/" << p.name << " uid=" << p.uid << " rv=" << p.resource_version
    << " created=" << p.creation_unix_ms << " deleted=" << p.deletion_unix_ms.value_or(-1)
    << " started=" << p.start_unix_ms.value_or(-1) << " sched=" << p.scheduler_name
    << " node=" << p.node_name << " prio=" << p.priority.value_or(-1)
    << " pc=" << p.priority_class_name << " phase=" << static_cast<int>(p.phase);
  for (const auto& [k, v] : p.labels) o << " l:" << k << "=" << v;
  for (const auto& [k, v] : p.annotations) o << " a:" << k << "=" << v;
  for (const auto& r : p.owner_references) {
    o << " owner:" << r.api_version << "," << r.kind << "," << r.name << "," << r.uid << ","
      << r.controller;
  }
  for (const auto* list : {&p.init_containers, &p.containers}) {
    for (const Container& c : *list) {
      o << " c:" << c.name << "{" << c.requests.ToString() << "|" << c.limits.ToString() << "|"
        << c.restart_always << "}";
    }
    o << " ;";
  }
  o << " overhead=" << p.overhead.ToString();
  o << " podreq=" << (p.pod_requests ? p.pod_requests->ToString() : "-");
  o << " podlim=" << (p.pod_limits ? p.pod_limits->ToString() : "-");
  for (const auto& [k, v] : p.node_selector) o << " sel:" << k << "=" << v;
  if (p.placement != nullptr) {
    for (const Toleration& t : p.placement->tolerations) {
      o << " tol:" << t.key << "," << static_cast<int>(t.op) << "," << t.value << ","
        << static_cast<int>(t.effect);
    }
    if (p.placement->required_node_affinity) {
      o << " affinity:";
      for (const NodeSelectorTerm& term : *p.placement->required_node_affinity) {
        for (const auto* list : {&term.match_expressions, &term.match_fields}) {
          for (const NodeSelectorRequirement& r : *list) {
            o << r.key << "," << static_cast<int>(r.op);
            for (const std::string& v : r.values) o << "," << v;
            o << ";";
          }
          o << "|";
        }
        o << "||";
      }
    }
  }
  return o.str();
}

TEST(DecodePodTest, ReadsEveryField) {
  Pod p = MustDecodePod(kPod);
  EXPECT_EQ(p.name, "train-0");
  EXPECT_EQ(p.namespace_, "hyperpod-ns-team-a");
  EXPECT_EQ(p.uid, "6f1c-0001");
  EXPECT_EQ(p.resource_version, "48213");
  EXPECT_EQ(p.creation_unix_ms, 1795990291000);
  ASSERT_TRUE(p.deletion_unix_ms.has_value());
  EXPECT_EQ(*p.deletion_unix_ms, 1795990291000 + (48 * 60 + 29) * 1000 - 3600 * 1000 + 250);
  ASSERT_TRUE(p.start_unix_ms.has_value());
  EXPECT_EQ(*p.start_unix_ms, 1795990320000);
  EXPECT_EQ(p.labels.at("kueue.x-k8s.io/queue-name"), "team-a");
  EXPECT_EQ(p.annotations.size(), 1u);
  ASSERT_EQ(p.owner_references.size(), 2u);
  EXPECT_EQ(p.controller_owner()->kind, "Job");
  EXPECT_TRUE(p.owner_references[0].controller);
  EXPECT_FALSE(p.owner_references[1].controller);
  EXPECT_EQ(p.scheduler_name, "taskgov");
  EXPECT_EQ(p.node_name, "ip-10-0-0-1");
  EXPECT_EQ(p.priority, 1000);
  EXPECT_EQ(p.priority_class_name, "training-priority");
  EXPECT_EQ(p.phase, PodPhase::kRunning);
  ASSERT_EQ(p.init_containers.size(), 2u);
  EXPECT_FALSE(p.init_containers[0].restart_always);
  EXPECT_TRUE(p.init_containers[1].restart_always);
  ASSERT_EQ(p.containers.size(), 2u);
  EXPECT_EQ(p.containers[0].requests.Get("cpu"), 1500);
  EXPECT_EQ(p.containers[0].limits.Get("vpc.amazonaws.com/efa"), 4);  // unquoted integer
  EXPECT_EQ(p.overhead.Get("memory"), 128 << 20);
  EXPECT_FALSE(p.pod_requests.has_value());

  ASSERT_NE(p.placement, nullptr);
  const std::vector<Toleration>& tolerations = p.placement->tolerations;
  ASSERT_EQ(tolerations.size(), 3u);
  EXPECT_EQ(tolerations[0].key, "nvidia.com/gpu");
  EXPECT_EQ(tolerations[0].op, TolerationOperator::kExists);
  EXPECT_EQ(tolerations[0].effect, TaintEffect::kAll);
  EXPECT_EQ(tolerations[1].key, "node.kubernetes.io/not-ready");
  EXPECT_EQ(tolerations[1].effect, TaintEffect::kNoExecute);
  EXPECT_EQ(tolerations[2].op, TolerationOperator::kEqual);  // absent operator: Equal
  EXPECT_EQ(tolerations[2].value, "ml");
  EXPECT_EQ(tolerations[2].effect, TaintEffect::kNoSchedule);
  ASSERT_TRUE(p.placement->required_node_affinity.has_value());
  const std::vector<NodeSelectorTerm>& terms = *p.placement->required_node_affinity;
  ASSERT_EQ(terms.size(), 2u);
  ASSERT_EQ(terms[0].match_expressions.size(), 2u);
  EXPECT_TRUE(terms[0].match_fields.empty());
  EXPECT_EQ(terms[0].match_expressions[0].key, "node.kubernetes.io/instance-type");
  EXPECT_EQ(terms[0].match_expressions[0].op, NodeSelectorOperator::kIn);
  EXPECT_EQ(terms[0].match_expressions[0].values,
            (std::vector<std::string>{"ml.p5.48xlarge", "ml.p4d.24xlarge"}));
  EXPECT_EQ(terms[0].match_expressions[1].op, NodeSelectorOperator::kGt);
  EXPECT_EQ(terms[0].match_expressions[1].values, std::vector<std::string>{"4"});
  EXPECT_TRUE(terms[1].match_expressions.empty());
  ASSERT_EQ(terms[1].match_fields.size(), 1u);
  EXPECT_EQ(terms[1].match_fields[0].key, "metadata.name");
  EXPECT_EQ(terms[1].match_fields[0].op, NodeSelectorOperator::kNotIn);
  EXPECT_EQ(terms[1].match_fields[0].values, std::vector<std::string>{"bad"});
}

TEST(DecodePodTest, PlacementOperatorsAndEffects) {
  Pod p = MustDecodePod(R"({"spec": {
      "tolerations": [
        {"operator": "Exists"},
        {"key": "k", "operator": "Equal", "value": "v", "effect": "PreferNoSchedule"},
        {"key": "k", "operator": "Gt", "value": "3", "effect": "Sometimes"},
        {"key": null, "operator": null, "value": null, "effect": null}],
      "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [
          {"key": "a", "operator": "NotIn", "values": ["x", null]},
          {"key": "b", "operator": "Exists"},
          {"key": "c", "operator": "DoesNotExist", "values": null},
          {"key": "d", "operator": "Lt", "values": ["10"]},
          {"key": "e", "operator": "in", "values": ["x"]},
          {"key": "f"}]}]}}}}})");
  ASSERT_NE(p.placement, nullptr);
  const std::vector<Toleration>& t = p.placement->tolerations;
  ASSERT_EQ(t.size(), 4u);
  EXPECT_EQ(t[0].key, "");
  EXPECT_EQ(t[0].op, TolerationOperator::kExists);
  EXPECT_EQ(t[0].effect, TaintEffect::kAll);
  EXPECT_EQ(t[1].op, TolerationOperator::kEqual);
  EXPECT_EQ(t[1].effect, TaintEffect::kPreferNoSchedule);
  EXPECT_EQ(t[2].op, TolerationOperator::kOther);  // Gt: alpha, off by default
  EXPECT_EQ(t[2].effect, TaintEffect::kOther);
  EXPECT_EQ(t[3].op, TolerationOperator::kEqual);  // nulls: zero values
  EXPECT_EQ(t[3].effect, TaintEffect::kAll);
  ASSERT_TRUE(p.placement->required_node_affinity.has_value());
  const std::vector<NodeSelectorRequirement>& r =
      p.placement->required_node_affinity->at(0).match_expressions;
  ASSERT_EQ(r.size(), 6u);
  EXPECT_EQ(r[0].op, NodeSelectorOperator::kNotIn);
  EXPECT_EQ(r[0].values, (std::vector<std::string>{"x", ""}));
  EXPECT_EQ(r[1].op, NodeSelectorOperator::kExists);
  EXPECT_EQ(r[2].op, NodeSelectorOperator::kDoesNotExist);
  EXPECT_TRUE(r[2].values.empty());
  EXPECT_EQ(r[3].op, NodeSelectorOperator::kLt);
  EXPECT_EQ(r[4].op, NodeSelectorOperator::kOther);  // operators are case-sensitive
  EXPECT_EQ(r[5].op, NodeSelectorOperator::kOther);  // no operator
}

TEST(DecodePodTest, PlacementIsNullWithoutTolerationsOrRequiredAffinity) {
  EXPECT_EQ(MustDecodePod("{}").placement, nullptr);
  EXPECT_EQ(MustDecodePod(R"({"spec": {"tolerations": [], "affinity": {}}})").placement, nullptr);
  // Only preferred affinity: nothing is required.
  EXPECT_EQ(MustDecodePod(R"({"spec": {"affinity": {"nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": null,
                "preferredDuringSchedulingIgnoredDuringExecution": []}}}})")
                .placement,
            nullptr);
  // A required selector without terms is kept: it matches no node.
  Pod empty = MustDecodePod(R"({"spec": {"affinity": {"nodeAffinity": {
      "requiredDuringSchedulingIgnoredDuringExecution": {}}}}})");
  ASSERT_NE(empty.placement, nullptr);
  ASSERT_TRUE(empty.placement->required_node_affinity.has_value());
  EXPECT_TRUE(empty.placement->required_node_affinity->empty());
  EXPECT_TRUE(empty.placement->tolerations.empty());
  // Copies share the decoded constraints.
  Pod copy = empty;
  EXPECT_EQ(copy.placement.get(), empty.placement.get());
}

TEST(DecodePodTest, EffectiveRequestOfTheDecodedPod) {
  // Regular: main (1500m, 64Gi, gpu 8 and efa 4 from limits) + logger (100m from its limit)
  // + sidecar proxy (500m, 256Mi) = 2100m, 64Gi+256Mi. Init peak: fetch (2 cpu, 1Gi) alone,
  // since the sidecar starts after it. max → cpu 2100m, memory 64Gi+256Mi. Plus overhead.
  Pod p = MustDecodePod(kPod);
  ResourceList want{{"cpu", 2100 + 250},
                    {"memory", (int64_t{64} << 30) + (256 << 20) + (128 << 20)},
                    {"nvidia.com/gpu", 8},
                    {"vpc.amazonaws.com/efa", 4}};
  EXPECT_EQ(EffectiveRequest(p), want) << EffectiveRequest(p).ToString();
}

TEST(DecodePodTest, PodLevelResourcesAndInitPeak) {
  Pod p = MustDecodePod(R"({"spec": {
      "initContainers": [
        {"name": "side", "restartPolicy": "Always", "resources": {"requests": {"cpu": "1"}}},
        {"name": "big", "resources": {"requests": {"cpu": "4", "aws.amazon.com/neuron": "16"}}}],
      "containers": [{"name": "m", "resources": {"requests": {"cpu": "2"}}}],
      "resources": {"limits": {"memory": "8Gi"}, "requests": null}}})");
  ASSERT_TRUE(p.pod_limits.has_value());
  EXPECT_FALSE(p.pod_requests.has_value());
  // Init peak: big (4) + side started before it (1) = 5 > regular 2 + 1. Pod-level memory limit
  // stands in for the missing request.
  ResourceList want{{"aws.amazon.com/neuron", 16}, {"cpu", 5000}, {"memory", int64_t{8} << 30}};
  EXPECT_EQ(EffectiveRequest(p), want) << EffectiveRequest(p).ToString();
}

TEST(DecodePodTest, AbsentAndNullTakeZeroValues) {
  Pod p = MustDecodePod(R"({"metadata": {"labels": null, "deletionTimestamp": null},
                            "spec": {"priority": null, "containers": null}, "status": null})");
  EXPECT_TRUE(p.name.empty());
  EXPECT_TRUE(p.labels.empty());
  EXPECT_FALSE(p.deletion_unix_ms.has_value());
  EXPECT_FALSE(p.priority.has_value());
  EXPECT_EQ(p.phase, PodPhase::kPending);
  Pod empty = MustDecodePod("{}");
  EXPECT_TRUE(empty.containers.empty());
  EXPECT_EQ(MustDecodePod(R"({"status": {"phase": "Weird"}})").phase, PodPhase::kUnknown);
  EXPECT_EQ(MustDecodePod(R"({"status": {"phase": "Failed"}})").phase, PodPhase::kFailed);
  EXPECT_EQ(MustDecodePod(R"({"status": {"phase": "Succeeded"}})").phase, PodPhase::kSucceeded);
}

TEST(DecodePodTest, SelectiveParseDecodesTheSamePod) {
  rapidjson::Document full = Parse(kPod);
  SelectedJson selected;
  ASSERT_TRUE(SelectiveParse(kPod, PodFieldSelector(), &selected).ok());
  common::Result<Pod> a = DecodePod(full);
  common::Result<Pod> b = DecodePod(selected.doc);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(Describe(*a), Describe(*b));
  // What was skipped is really gone.
  const rapidjson::Value& spec = selected.doc["spec"];
  EXPECT_FALSE(spec.HasMember("volumes"));
  EXPECT_FALSE(selected.doc["metadata"].HasMember("managedFields"));
  EXPECT_FALSE(spec["containers"][0].HasMember("env"));
  EXPECT_FALSE(spec["affinity"].HasMember("podAntiAffinity"));
  EXPECT_FALSE(spec["affinity"]["nodeAffinity"].HasMember(
      "preferredDuringSchedulingIgnoredDuringExecution"));
  EXPECT_NE(Describe(*b).find(" tol:dedicated,0,ml,1"), std::string::npos) << Describe(*b);
  EXPECT_NE(Describe(*b).find("metadata.name,1,bad;"), std::string::npos) << Describe(*b);
}

struct ErrorCase {
  const char* name;
  std::string json;
  std::string message;  // the whole expected message
};

// A pod whose spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution is
// `required`, and the error path of that field followed by `rest`.
std::string WithRequiredAffinity(const std::string& required) {
  return R"({"spec": {"affinity": {"nodeAffinity": {)"
         R"("requiredDuringSchedulingIgnoredDuringExecution": )" +
         required + "}}}}";
}
std::string RequiredAffinityPath(const std::string& rest) {
  return "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution" + rest;
}

class DecodePodErrorTest : public ::testing::TestWithParam<ErrorCase> {};

TEST_P(DecodePodErrorTest, NamesThePath) {
  rapidjson::Document doc = Parse(GetParam().json);
  common::Result<Pod> pod = DecodePod(doc);
  ASSERT_FALSE(pod.ok());
  EXPECT_EQ(pod.error().message, GetParam().message);
}

INSTANTIATE_TEST_SUITE_P(
    Table, DecodePodErrorTest,
    ::testing::Values(
        ErrorCase{"NotObject", R"("pod")", "pod: expected an object, got string"},
        ErrorCase{"Metadata", R"({"metadata": []})", "metadata: expected an object, got array"},
        ErrorCase{"Name", R"({"metadata": {"name": 5}})",
                  "metadata.name: expected a string, got number"},
        ErrorCase{"Labels", R"({"metadata": {"labels": ["a"]}})",
                  "metadata.labels: expected an object, got array"},
        ErrorCase{"LabelValue", R"({"metadata": {"labels": {"team": true}}})",
                  "metadata.labels[\"team\"]: expected a string, got true"},
        ErrorCase{"Annotation", R"({"metadata": {"annotations": {"a": {}}}})",
                  "metadata.annotations[\"a\"]: expected a string, got object"},
        ErrorCase{"Created", R"({"metadata": {"creationTimestamp": 12}})",
                  "metadata.creationTimestamp: expected an RFC 3339 timestamp string, got number"},
        ErrorCase{"CreatedBad", R"({"metadata": {"creationTimestamp": "yesterday"}})",
                  "metadata.creationTimestamp: invalid timestamp 'yesterday': malformed (want "
                  "RFC 3339, e.g. 2006-01-02T15:04:05Z)"},
        ErrorCase{"Owners", R"({"metadata": {"ownerReferences": {}}})",
                  "metadata.ownerReferences: expected an array, got object"},
        ErrorCase{"Owner", R"({"metadata": {"ownerReferences": [{}, 3]}})",
                  "metadata.ownerReferences[1]: expected an object, got number"},
        ErrorCase{"Controller", R"({"metadata": {"ownerReferences": [{"controller": "yes"}]}})",
                  "metadata.ownerReferences[0].controller: expected a boolean, got string"},
        ErrorCase{"Spec", R"({"spec": "x"})", "spec: expected an object, got string"},
        ErrorCase{"Priority", R"({"spec": {"priority": "high"}})",
                  "spec.priority: expected a 32-bit integer, got string"},
        ErrorCase{"PriorityRange", R"({"spec": {"priority": 4294967296}})",
                  "spec.priority: expected a 32-bit integer, got number"},
        ErrorCase{"PriorityFraction", R"({"spec": {"priority": 1.5}})",
                  "spec.priority: expected a 32-bit integer, got number"},
        ErrorCase{"Containers", R"({"spec": {"containers": {}}})",
                  "spec.containers: expected an array, got object"},
        ErrorCase{"Container", R"({"spec": {"containers": [{}, null]}})",
                  "spec.containers[1]: expected an object, got null"},
        ErrorCase{"Resources", R"({"spec": {"containers": [{"resources": []}]}})",
                  "spec.containers[0].resources: expected an object, got array"},
        ErrorCase{"Requests", R"({"spec": {"containers": [{"resources": {"requests": 1}}]}})",
                  "spec.containers[0].resources.requests: expected an object of quantities, got "
                  "number"},
        ErrorCase{"Quantity153",
                  R"({"spec": {"containers": [{}, {"resources": {"requests":
                       {"nvidia.com/gpu": "1.5.3"}}}]}})",
                  "spec.containers[1].resources.requests[\"nvidia.com/gpu\"]: invalid quantity "
                  "'1.5.3': unknown suffix '.3'"},
        ErrorCase{"QuantityNegative",
                  R"({"spec": {"initContainers": [{"resources": {"limits": {"cpu": "-4"}}}]}})",
                  "spec.initContainers[0].resources.limits[\"cpu\"]: invalid quantity '-4': "
                  "negative quantities are not allowed"},
        ErrorCase{"QuantityNegativeNumber",
                  R"({"spec": {"initContainers": [{"resources": {"limits": {"cpu": -4}}}]}})",
                  "spec.initContainers[0].resources.limits[\"cpu\"]: invalid quantity '-4': "
                  "negative quantities are not allowed"},
        ErrorCase{"QuantityHuge", R"({"spec": {"overhead": {"memory": "1e400"}}})",
                  "spec.overhead[\"memory\"]: invalid quantity '1e400': too large"},
        ErrorCase{"QuantitySuffix", R"({"spec": {"overhead": {"memory": "12XB"}}})",
                  "spec.overhead[\"memory\"]: invalid quantity '12XB': unknown suffix 'XB'"},
        ErrorCase{"QuantityFraction", R"({"spec": {"overhead": {"cpu": 0.5}}})",
                  "spec.overhead[\"cpu\"]: expected a quantity string, got number"},
        ErrorCase{"QuantityBool", R"({"spec": {"overhead": {"cpu": true}}})",
                  "spec.overhead[\"cpu\"]: expected a quantity string, got true"},
        ErrorCase{"PodResources", R"({"spec": {"resources": {"requests": {"cpu": "x"}}}})",
                  "spec.resources.requests[\"cpu\"]: invalid quantity 'x': no digits"},
        ErrorCase{"RestartPolicy", R"({"spec": {"initContainers": [{"restartPolicy": 1}]}})",
                  "spec.initContainers[0].restartPolicy: expected a string, got number"},
        ErrorCase{"Tolerations", R"({"spec": {"tolerations": {"key": "k"}}})",
                  "spec.tolerations: expected an array, got object"},
        ErrorCase{"Toleration", R"({"spec": {"tolerations": [{}, "nvidia.com/gpu"]}})",
                  "spec.tolerations[1]: expected an object, got string"},
        ErrorCase{"TolerationKey", R"({"spec": {"tolerations": [{"key": 7}]}})",
                  "spec.tolerations[0].key: expected a string, got number"},
        ErrorCase{"TolerationOperator", R"({"spec": {"tolerations": [{"operator": true}]}})",
                  "spec.tolerations[0].operator: expected a string, got true"},
        ErrorCase{"TolerationValue", R"({"spec": {"tolerations": [{"value": 1}]}})",
                  "spec.tolerations[0].value: expected a string, got number"},
        ErrorCase{"TolerationEffect", R"({"spec": {"tolerations": [{"effect": []}]}})",
                  "spec.tolerations[0].effect: expected a string, got array"},
        ErrorCase{"Affinity", R"({"spec": {"affinity": []}})",
                  "spec.affinity: expected an object, got array"},
        ErrorCase{"NodeAffinity", R"({"spec": {"affinity": {"nodeAffinity": "x"}}})",
                  "spec.affinity.nodeAffinity: expected an object, got string"},
        ErrorCase{"RequiredAffinity", WithRequiredAffinity("[{}]"),
                  RequiredAffinityPath(": expected an object, got array")},
        ErrorCase{"Terms", WithRequiredAffinity(R"({"nodeSelectorTerms": {}})"),
                  RequiredAffinityPath(".nodeSelectorTerms: expected an array, got object")},
        ErrorCase{"Term", WithRequiredAffinity(R"({"nodeSelectorTerms": [{}, null]})"),
                  RequiredAffinityPath(".nodeSelectorTerms[1]: expected an object, got null")},
        ErrorCase{
            "MatchExpressions",
            WithRequiredAffinity(R"({"nodeSelectorTerms": [{"matchExpressions": {"key": "a"}}]})"),
            RequiredAffinityPath(
                ".nodeSelectorTerms[0].matchExpressions: expected an array, got object")},
        ErrorCase{"RequirementOperator",
                  WithRequiredAffinity(R"({"nodeSelectorTerms": [{"matchExpressions":
                                            [{"key": "a", "operator": 1}]}]})"),
                  RequiredAffinityPath(".nodeSelectorTerms[0].matchExpressions[0].operator: "
                                       "expected a string, got number")},
        ErrorCase{"RequirementValues",
                  WithRequiredAffinity(R"({"nodeSelectorTerms": [{"matchFields":
                      [{"key": "metadata.name", "operator": "In", "values": "n1"}]}]})"),
                  RequiredAffinityPath(".nodeSelectorTerms[0].matchFields[0].values: expected an "
                                       "array, got string")},
        ErrorCase{"RequirementValue",
                  WithRequiredAffinity(R"({"nodeSelectorTerms": [{}, {"matchExpressions":
                      [{"key": "gpus", "operator": "Gt", "values": [4]}]}]})"),
                  RequiredAffinityPath(".nodeSelectorTerms[1].matchExpressions[0].values[0]: "
                                       "expected a string, got number")},
        ErrorCase{"Phase", R"({"status": {"phase": 3}})",
                  "status.phase: expected a string, got number"},
        ErrorCase{"StartTime", R"({"status": {"startTime": "2026-02-30T00:00:00Z"}})",
                  "status.startTime: invalid timestamp '2026-02-30T00:00:00Z': day out of range "
                  "(want RFC 3339, e.g. 2006-01-02T15:04:05Z)"}),
    [](const ::testing::TestParamInfo<ErrorCase>& info) { return info.param.name; });

TEST(DecodeNodeTest, ReadsEveryField) {
  rapidjson::Document doc = Parse(kNode);
  common::Result<Node> node = DecodeNode(doc);
  ASSERT_TRUE(node.ok()) << node.error().message;
  EXPECT_EQ(node->name, "ip-10-0-0-1");
  EXPECT_EQ(node->resource_version, "77");
  EXPECT_EQ(node->labels.at("node.kubernetes.io/instance-type"), "ml.p5.48xlarge");
  EXPECT_TRUE(node->unschedulable);
  EXPECT_FALSE(node->ready);
  ASSERT_EQ(node->taints.size(), 1u);
  EXPECT_EQ(node->taints[0].key, "nvidia.com/gpu");
  EXPECT_EQ(node->taints[0].value, "true");
  EXPECT_EQ(node->taints[0].effect, TaintEffect::kNoSchedule);
  EXPECT_EQ(node->allocatable.Get("cpu"), 191450);
  EXPECT_EQ(node->allocatable.Get("memory"), int64_t{2000} << 30);
  EXPECT_EQ(node->allocatable.Get("nvidia.com/gpu"), 8);
  EXPECT_TRUE(node->allocatable.Has("nvidia.com/mig-1g.10gb"));
  EXPECT_EQ(node->capacity.Get("pods"), 110);
  EXPECT_EQ(node->capacity.Get("cpu"), 192000);

  // The selective reader keeps exactly what the decoder reads.
  SelectedJson selected;
  ASSERT_TRUE(SelectiveParse(kNode, NodeFieldSelector(), &selected).ok());
  common::Result<Node> again = DecodeNode(selected.doc);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->allocatable, node->allocatable);
  EXPECT_EQ(again->capacity, node->capacity);
  EXPECT_EQ(again->labels, node->labels);
  EXPECT_EQ(again->ready, node->ready);
  EXPECT_EQ(again->taints.size(), 1u);
  EXPECT_FALSE(selected.doc["status"].HasMember("images"));
}

TEST(DecodeNodeTest, TaintEffects) {
  rapidjson::Document doc = Parse(R"({"spec": {"taints": [
      {"key": "a", "effect": "NoSchedule"}, {"key": "b", "effect": "PreferNoSchedule"},
      {"key": "c", "effect": "NoExecute"}, {"key": "d", "effect": "Later"}, {"key": "e"}]}})");
  common::Result<Node> node = DecodeNode(doc);
  ASSERT_TRUE(node.ok()) << node.error().message;
  std::vector<TaintEffect> effects;
  for (const Taint& t : node->taints) effects.push_back(t.effect);
  // A taint without an effect (invalid) keeps no pod off: kOther, not "every effect".
  EXPECT_EQ(effects, (std::vector<TaintEffect>{
                         TaintEffect::kNoSchedule, TaintEffect::kPreferNoSchedule,
                         TaintEffect::kNoExecute, TaintEffect::kOther, TaintEffect::kOther}));
}

TEST(DecodeNodeTest, ReadyCondition) {
  auto ready = [](const std::string& json) {
    rapidjson::Document doc = Parse(json);
    common::Result<Node> n = DecodeNode(doc);
    EXPECT_TRUE(n.ok());
    return n.ok() && n->ready;
  };
  EXPECT_TRUE(ready("{}"));
  EXPECT_TRUE(ready(R"({"status": {"conditions": [{"type": "Ready", "status": "True"}]}})"));
  EXPECT_FALSE(ready(R"({"status": {"conditions": [{"type": "Ready", "status": "Unknown"}]}})"));
  EXPECT_TRUE(ready(R"({"status": {"conditions": [{"type": "DiskPressure", "status": "True"}]}})"));
}

TEST(DecodeNodeTest, Errors) {
  for (auto [json, message] : std::vector<std::pair<const char*, const char*>>{
           {"[]", "node: expected an object, got array"},
           {R"({"spec": {"unschedulable": "yes"}})",
            "spec.unschedulable: expected a boolean, got string"},
           {R"({"spec": {"taints": [{"key": 1}]}})",
            "spec.taints[0].key: expected a string, got "
            "number"},
           {R"({"spec": {"taints": ["x"]}})", "spec.taints[0]: expected an object, got string"},
           {R"({"status": {"allocatable": {"nvidia.com/gpu": "eight"}}})",
            "status.allocatable[\"nvidia.com/gpu\"]: invalid quantity 'eight': no digits"},
           {R"({"status": {"capacity": {"memory": "99999999999999999999Ei"}}})",
            "status.capacity[\"memory\"]: invalid quantity '99999999999999999999Ei': too large"},
           {R"({"status": {"conditions": [{"type": "Ready", "status": false}]}})",
            "status.conditions[0].status: expected a string, got false"},
       }) {
    rapidjson::Document doc = Parse(json);
    common::Result<Node> n = DecodeNode(doc);
    ASSERT_FALSE(n.ok()) << json;
    EXPECT_EQ(n.error().message, message);
  }
}

TEST(DecodeResourceListTest, CanonicalUnits) {
  rapidjson::Document doc = Parse(
      R"({"cpu": "100m", "memory": "1.5Ki", "nvidia.com/gpu": 8, "aws.amazon.com/neuron": "16",
          "nvidia.com/mig-1g.10gb": "2", "ephemeral-storage": "1e3", "hugepages-2Mi": null})");
  common::Result<ResourceList> list = DecodeResourceList(doc, "x");
  ASSERT_TRUE(list.ok()) << list.error().message;
  EXPECT_EQ(list->Get("cpu"), 100);
  EXPECT_EQ(list->Get("memory"), 1536);
  EXPECT_EQ(list->Get("nvidia.com/gpu"), 8);
  EXPECT_EQ(list->Get("aws.amazon.com/neuron"), 16);
  EXPECT_EQ(list->Get("nvidia.com/mig-1g.10gb"), 2);
  EXPECT_EQ(list->Get("ephemeral-storage"), 1000);
  EXPECT_TRUE(list->Has("hugepages-2Mi"));
  rapidjson::Document null_doc = Parse("null");
  EXPECT_TRUE(DecodeResourceList(null_doc, "x").ok());
}

struct TimeCase {
  const char* text;
  int64_t unix_ms;
};

TEST(ParseTimestampTest, Valid) {
  for (const TimeCase& c : {
           TimeCase{"1970-01-01T00:00:00Z", 0},
           TimeCase{"1970-01-01T00:00:01.5Z", 1500},
           TimeCase{"1970-01-01T00:00:00.123456789Z", 123},
           TimeCase{"1970-01-01T01:00:00+01:00", 0},
           TimeCase{"1969-12-31T19:00:00-05:00", 0},
           TimeCase{"1969-12-31T23:59:59Z", -1000},
           TimeCase{"2000-02-29T00:00:00Z", 951782400000},
           TimeCase{"2024-12-31T23:59:59z", 1735689599000},
           TimeCase{"2026-11-29t22:11:31Z", 1795990291000},
           TimeCase{"2026-11-29T22:11:31,250Z", 1795990291250},
       }) {
    common::Result<int64_t> t = ParseTimestamp(c.text);
    ASSERT_TRUE(t.ok()) << c.text << ": " << t.error().message;
    EXPECT_EQ(*t, c.unix_ms) << c.text;
  }
}

TEST(ParseTimestampTest, Invalid) {
  for (const char* text :
       {"", "2026", "2026-11-29", "2026-11-29 22:11:31Z", "2026-11-29T22:11:31",
        "2026-13-01T00:00:00Z", "2026-00-01T00:00:00Z", "2025-02-29T00:00:00Z",
        "2026-04-31T00:00:00Z", "2026-11-29T24:00:00Z", "2026-11-29T23:60:00Z",
        "2026-11-29T23:59:60Z", "2026-11-29T22:11:31.Z", "2026-11-29T22:11:31+1",
        "2026-11-29T22:11:31+01:60", "2026-11-29T22:11:31Zx", "2026-11-29T22:11:31+01:00:00",
        "+2026-11-29T22:11:31Z", "2026-1a-29T22:11:31Z"}) {
    common::Result<int64_t> t = ParseTimestamp(text);
    EXPECT_FALSE(t.ok()) << text;
    if (!t.ok()) {
      EXPECT_NE(t.error().message.find("invalid timestamp"), std::string::npos);
    }
  }
}

}  // namespace
}  // namespace taskgov::scheduler::model
