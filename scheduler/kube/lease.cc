#include "scheduler/kube/lease.h"

#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "scheduler/kube/client.h"
#include "scheduler/kube/watch_decoder.h"

namespace taskgov::scheduler::kube {
namespace {

// OptionalJsonString into *out.
common::Status ReadString(const rapidjson::Value& object, const char* name, const char* path,
                          std::string* out) {
  common::Result<std::string> v = OptionalJsonString(object, name, path);
  if (!v.ok()) return v.error();
  *out = std::move(*v);
  return common::Status::Ok();
}

common::Status ReadInt32(const rapidjson::Value& object, const char* name, const char* path,
                         int32_t* out) {
  const rapidjson::Value* v = JsonMember(object, name);
  if (v == nullptr) return common::Status::Ok();
  if (!v->IsInt()) return common::Error{std::string(path) + ": expected a 32-bit integer"};
  *out = v->GetInt();
  return common::Status::Ok();
}

}  // namespace

common::Result<LeaseRecord> DecodeLease(std::string_view json) {
  rapidjson::Document doc;
  doc.Parse(json.data(), json.size());
  if (doc.HasParseError() || !doc.IsObject()) return common::Error{"lease: not a JSON object"};
  LeaseRecord record;
  const rapidjson::Value* meta = JsonMember(doc, "metadata");
  if (meta != nullptr) {
    if (!meta->IsObject()) return common::Error{"lease metadata: expected an object"};
    if (common::Status s = ReadString(*meta, "resourceVersion", "lease metadata.resourceVersion",
                                      &record.resource_version);
        !s.ok()) {
      return s.error();
    }
  }
  const rapidjson::Value* spec = JsonMember(doc, "spec");
  if (spec == nullptr) return record;
  if (!spec->IsObject()) return common::Error{"lease spec: expected an object"};
  for (common::Status s :
       {ReadString(*spec, "holderIdentity", "lease spec.holderIdentity", &record.holder_identity),
        ReadInt32(*spec, "leaseDurationSeconds", "lease spec.leaseDurationSeconds",
                  &record.lease_duration_seconds),
        ReadString(*spec, "acquireTime", "lease spec.acquireTime", &record.acquire_time),
        ReadString(*spec, "renewTime", "lease spec.renewTime", &record.renew_time),
        ReadInt32(*spec, "leaseTransitions", "lease spec.leaseTransitions",
                  &record.lease_transitions)}) {
    if (!s.ok()) return s.error();
  }
  return record;
}

std::string EncodeLease(const std::string& ns, const std::string& name, const LeaseRecord& record) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> w(buffer);
  auto str = [&](const char* key, const std::string& value) {
    w.Key(key);
    w.String(value.c_str(), static_cast<rapidjson::SizeType>(value.size()));
  };
  w.StartObject();
  str("apiVersion", "coordination.k8s.io/v1");
  str("kind", "Lease");
  w.Key("metadata");
  w.StartObject();
  str("name", name);
  str("namespace", ns);
  if (!record.resource_version.empty()) str("resourceVersion", record.resource_version);
  w.EndObject();
  w.Key("spec");
  w.StartObject();
  if (!record.holder_identity.empty()) str("holderIdentity", record.holder_identity);
  w.Key("leaseDurationSeconds");
  w.Int(record.lease_duration_seconds);
  if (!record.acquire_time.empty()) str("acquireTime", record.acquire_time);
  if (!record.renew_time.empty()) str("renewTime", record.renew_time);
  w.Key("leaseTransitions");
  w.Int(record.lease_transitions);
  w.EndObject();
  w.EndObject();
  return buffer.GetString();
}

ApiLeaseStore::ApiLeaseStore(KubeClient* client, std::string ns, std::string name)
    : client_(client), ns_(std::move(ns)), name_(std::move(name)) {}

namespace {

ApiResult<LeaseRecord> Decoded(ApiResult<HttpResponse> response, const std::string& what) {
  if (!response.ok()) return response.error();
  common::Result<LeaseRecord> record = DecodeLease(response->body);
  if (!record.ok()) {
    return ApiError::Of(response->status, "InvalidResponse", record.error().message, what);
  }
  return *record;
}

}  // namespace

ApiResult<LeaseRecord> ApiLeaseStore::Get(std::chrono::milliseconds timeout) {
  const std::string path = "/apis/coordination.k8s.io/v1/namespaces/" + ns_ + "/leases/" + name_;
  CallOptions call;
  call.timeout = timeout;
  return Decoded(client_->Call("GET", path, "", call), "GET " + path);
}

ApiResult<LeaseRecord> ApiLeaseStore::Create(const LeaseRecord& record,
                                             std::chrono::milliseconds timeout) {
  const std::string path = "/apis/coordination.k8s.io/v1/namespaces/" + ns_ + "/leases";
  LeaseRecord fresh = record;
  fresh.resource_version.clear();
  CallOptions call;
  call.timeout = timeout;
  return Decoded(client_->Call("POST", path, EncodeLease(ns_, name_, fresh), call), "POST " + path);
}

ApiResult<LeaseRecord> ApiLeaseStore::Update(const LeaseRecord& record,
                                             std::chrono::milliseconds timeout) {
  const std::string path = "/apis/coordination.k8s.io/v1/namespaces/" + ns_ + "/leases/" + name_;
  CallOptions call;
  call.timeout = timeout;
  return Decoded(client_->Call("PUT", path, EncodeLease(ns_, name_, record), call), "PUT " + path);
}

}  // namespace taskgov::scheduler::kube
