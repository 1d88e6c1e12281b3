// Decoding extender requests: a ~6 MB filter request carrying 500 full v1.Nodes (as
// nodeCacheCapable: false sends them), and a NodeNames request with 500 names.
//
//   bazel run -c opt //extender:wire_benchmark

#include <benchmark/benchmark.h>
#include <rapidjson/document.h>

#include <string>

#include "extender/wire.h"

namespace taskgov::extender {
namespace {

constexpr const char* kPod =
    R"({"metadata":{"name":"train-0","namespace":"hyperpod-ns-team-a","uid":"7f3e1a52-0001",)"
    R"("labels":{"kueue.x-k8s.io/queue-name":"team-a"},"creationTimestamp":"2026-11-29T22:11:31Z"},)"
    R"("spec":{"schedulerName":"taskgov","priority":1000,"containers":[{"name":"trainer",)"
    R"("image":"trainer:2.4","resources":{"requests":{"cpu":"180","memory":"1800Gi",)"
    R"("nvidia.com/gpu":"8","vpc.amazonaws.com/efa":"32"}}}]},"status":{"phase":"Pending"}})";

// A v1.Node the size a real GPU node has on the wire (~12 KB): labels, annotations,
// managedFields, conditions, addresses, nodeInfo and a long image list.
std::string FullNode(int i) {
  const std::string name = "ip-10-0-" + std::to_string(i / 250) + "-" + std::to_string(i % 250);
  std::string n = R"({"metadata":{"name":")" + name + R"(","uid":"node-)" + std::to_string(i) +
                  R"(","resourceVersion":"123456","creationTimestamp":"2026-11-01T00:00:00Z",)"
                  R"("labels":{"node.kubernetes.io/instance-type":"ml.p5.48xlarge",)"
                  R"("kubernetes.io/hostname":")" +
                  name + R"(")";
  for (int l = 0; l < 20; ++l) {
    n += R"(,"example.com/label-)" + std::to_string(l) + R"(":"value-)" + std::to_string(l) + "\"";
  }
  n += R"(},"annotations":{"node.alpha.kubernetes.io/ttl":"0","csi.volume.kubernetes.io/nodeid":")";
  n += std::string(1500, 'x');
  n += R"("},"managedFields":[)";
  for (int m = 0; m < 4; ++m) {
    if (m > 0) n += ",";
    n += R"({"manager":"kubelet","operation":"Update","apiVersion":"v1","time":)"
         R"("2026-11-29T22:00:00Z","fieldsType":"FieldsV1","fieldsV1":{"f:status":)"
         R"({"f:conditions":{"k:{\"type\":\"Ready\"}":{"f:lastHeartbeatTime":{},"f:message":{},)"
         R"("f:reason":{},"f:status":{}}},"f:images":{},"f:nodeInfo":{"f:bootID":{}}}}})";
  }
  n += R"(]},"spec":{"providerID":"aws:///us-west-2a/i-0123456789","taints":[{"key":)"
       R"("nvidia.com/gpu","value":"present","effect":"NoSchedule"}]},"status":{"capacity":)"
       R"({"cpu":"192","memory":"2097152Mi","nvidia.com/gpu":"8","vpc.amazonaws.com/efa":"32",)"
       R"("ephemeral-storage":"1Ti","hugepages-1Gi":"0","pods":"110"},"allocatable":{"cpu":)"
       R"("191450m","memory":"2000Gi","nvidia.com/gpu":"8","vpc.amazonaws.com/efa":"32",)"
       R"("ephemeral-storage":"1000Gi","hugepages-1Gi":"0","pods":"110"},"conditions":[)";
  for (const char* type : {"MemoryPressure", "DiskPressure", "PIDPressure", "Ready"}) {
    n += R"({"type":")" + std::string(type) +
         R"(","status":"False","lastHeartbeatTime":"2026-11-29T22:10:00Z",)"
         R"("lastTransitionTime":"2026-11-01T00:00:00Z","reason":"KubeletHasSufficient",)"
         R"("message":"kubelet has sufficient resources available"},)";
  }
  n.pop_back();
  n += R"(],"addresses":[{"type":"InternalIP","address":"10.0.0.1"},{"type":"Hostname",)"
       R"("address":")" +
       name +
       R"("}],"nodeInfo":{"machineID":"ec2abc","systemUUID":"ec2abc","bootID":"b",)"
       R"("kernelVersion":"6.1.0","osImage":"Amazon Linux 2023","containerRuntimeVersion":)"
       R"("containerd://1.7.11","kubeletVersion":"v1.31.2","operatingSystem":"linux",)"
       R"("architecture":"amd64"},"images":[)";
  for (int im = 0; im < 40; ++im) {
    if (im > 0) n += ",";
    n += R"({"names":["public.ecr.example/team/image-)" + std::to_string(im) +
         R"(@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",)"
         R"("public.ecr.example/team/image-)" +
         std::to_string(im) + R"(:v1.2.3"],"sizeBytes":)" + std::to_string(1000000 + im) + "}";
  }
  n += "]}}";
  return n;
}

const std::string& NodesBody() {
  static const std::string* body = [] {
    auto* b = new std::string(R"({"Pod":)");
    *b += kPod;
    *b += R"(,"Nodes":{"metadata":{},"items":[)";
    for (int i = 0; i < 500; ++i) {
      if (i > 0) *b += ",";
      *b += FullNode(i);
    }
    *b += R"(]},"NodeNames":null})";
    return b;
  }();
  return *body;
}

const std::string& NamesBody() {
  static const std::string* body = [] {
    auto* b = new std::string(R"({"Pod":)");
    *b += kPod;
    *b += R"(,"Nodes":null,"NodeNames":[)";
    for (int i = 0; i < 500; ++i) {
      if (i > 0) *b += ",";
      *b += "\"ip-10-0-" + std::to_string(i / 250) + "-" + std::to_string(i % 250) + "\"";
    }
    *b += "]}";
    return b;
  }();
  return *body;
}

void BM_DecodeFilter500FullNodes(benchmark::State& state) {
  const std::string& body = NodesBody();
  for (auto _ : state) {
    FilterRequest request;
    DecodeStatus s = DecodeFilterRequest(body, &request);
    if (!s.ok() || request.args.nodes.size() != 500) state.SkipWithError(s.message.c_str());
    benchmark::DoNotOptimize(request);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * body.size()));
  state.counters["body_MB"] = static_cast<double>(body.size()) / 1e6;
}
BENCHMARK(BM_DecodeFilter500FullNodes)->Unit(benchmark::kMillisecond);

// For comparison: a full RapidJSON DOM of the same body (what reading everything costs).
void BM_FullDomParse500FullNodes(benchmark::State& state) {
  const std::string& body = NodesBody();
  for (auto _ : state) {
    rapidjson::Document doc;
    doc.Parse(body.data(), body.size());
    benchmark::DoNotOptimize(doc);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * body.size()));
}
BENCHMARK(BM_FullDomParse500FullNodes)->Unit(benchmark::kMillisecond);

void BM_EncodeFilter500FullNodesEcho(benchmark::State& state) {
  FilterRequest request;
  DecodeStatus s = DecodeFilterRequest(NodesBody(), &request);
  if (!s.ok()) state.SkipWithError(s.message.c_str());
  scheduler::FilterResult result;
  for (uint32_t i = 0; i < request.args.node_names.size(); ++i) result.feasible.push_back(i);
  for (auto _ : state) {
    std::string reply = EncodeFilterResult(request, result);
    benchmark::DoNotOptimize(reply);
  }
}
BENCHMARK(BM_EncodeFilter500FullNodesEcho)->Unit(benchmark::kMillisecond);

void BM_DecodeFilter500Names(benchmark::State& state) {
  const std::string& body = NamesBody();
  for (auto _ : state) {
    FilterRequest request;
    DecodeStatus s = DecodeFilterRequest(body, &request);
    if (!s.ok() || request.args.node_names.size() != 500) state.SkipWithError(s.message.c_str());
    benchmark::DoNotOptimize(request);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * body.size()));
}
BENCHMARK(BM_DecodeFilter500Names)->Unit(benchmark::kMicrosecond);

void BM_EncodeFilter500Names(benchmark::State& state) {
  FilterRequest request;
  DecodeStatus s = DecodeFilterRequest(NamesBody(), &request);
  if (!s.ok()) state.SkipWithError(s.message.c_str());
  scheduler::FilterResult result;
  for (uint32_t i = 0; i < request.args.node_names.size(); ++i) result.feasible.push_back(i);
  for (auto _ : state) {
    std::string reply = EncodeFilterResult(request, result);
    benchmark::DoNotOptimize(reply);
  }
}
BENCHMARK(BM_EncodeFilter500Names)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace taskgov::extender
