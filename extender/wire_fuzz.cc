// Fuzzes the webhook codec: every input is decoded as each verb's request (filter / prioritize
// share ExtenderArgs; preempt; bind), with the seeds covering kube-scheduler's capitalised and
// pre-1.18 lower-case keys. What decodes is encoded back as a reply. Properties: nothing crashes;
// a failure always carries a message; every reply and every error body is valid JSON (names and
// messages carry untrusted text); a Nodes-mode reply echoes exactly the feasible nodes.

#include <rapidjson/document.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "extender/wire.h"
#include "scheduler/common/testing/fuzz_check.h"

namespace taskgov::extender {
namespace {

rapidjson::Document ParseReply(const std::string& reply) {
  rapidjson::Document doc;
  doc.Parse(reply.data(), reply.size());
  FUZZ_CHECK(!doc.HasParseError(), "every reply the codec writes is valid JSON");
  return doc;
}

void CheckFailure(const DecodeStatus& status) {
  FUZZ_CHECK(!status.message.empty(), "a decode failure says what and where");
  ParseReply(EncodeError(status.message));
  ParseReply(EncodeFilterError(status.message));
}

// Every even-indexed node feasible, every odd one refused with its own name as the reason.
scheduler::FilterResult SomeResult(const scheduler::FilterArgs& args) {
  scheduler::FilterResult result;
  for (uint32_t i = 0; i < args.node_names.size(); ++i) {
    if (i % 2 == 0) {
      result.feasible.push_back(i);
    } else {
      const uint32_t reason = result.AddReason(args.node_names[i]);
      (i % 4 == 1 ? result.failed : result.unresolvable).push_back({i, reason});
    }
  }
  return result;
}

void FuzzFilter(std::string_view body) {
  FilterRequest request;
  DecodeStatus status = DecodeFilterRequest(body, &request);
  if (!status.ok()) return CheckFailure(status);
  const scheduler::FilterResult result = SomeResult(request.args);
  size_t dropped = 0;
  rapidjson::Document reply = ParseReply(EncodeFilterResult(request, result, &dropped));
  FUZZ_CHECK(dropped == 0, "feasible nodes taken from the request are never dropped");
  if (!request.args.node_names_mode) {
    FUZZ_CHECK(reply.IsObject() && reply.HasMember("Nodes") && reply["Nodes"]["items"].IsArray() &&
                   reply["Nodes"]["items"].Size() == result.feasible.size(),
               "a Nodes-mode reply echoes every feasible node");
  }
  std::vector<scheduler::HostPriority> priorities;
  for (const std::string& name : request.args.node_names) priorities.push_back({name, 5});
  ParseReply(EncodePriorities(priorities));
}

void FuzzPreempt(std::string_view body) {
  scheduler::PreemptArgs args;
  DecodeStatus status = DecodePreemptRequest(body, &args);
  if (!status.ok()) return CheckFailure(status);
  scheduler::PreemptResult result;
  result.node_to_victims = args.node_to_victims;
  result.error = args.pod.name;
  ParseReply(EncodePreemptResult(result));
}

void FuzzBind(std::string_view body) {
  scheduler::BindArgs args;
  DecodeStatus status = DecodeBindRequest(body, &args);
  if (!status.ok()) return CheckFailure(status);
  ParseReply(EncodeBindResult({args.pod_name + "/" + args.node}));
}

}  // namespace
}  // namespace taskgov::extender

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  taskgov::extender::FuzzFilter(body);
  taskgov::extender::FuzzPreempt(body);
  taskgov::extender::FuzzBind(body);
  return 0;
}
