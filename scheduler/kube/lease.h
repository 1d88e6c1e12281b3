#pragma once

// Leases (coordination.k8s.io/v1) for leader election: the record, its JSON codec, and the
// LeaseStore seam the elector talks to (ApiLeaseStore over KubeClient; tests may use others).
//
// Thread-safety: LeaseRecord is a value; ApiLeaseStore is thread-safe (KubeClient is).

#include <chrono>
#include <cstdint>
#include <string>

#include "scheduler/common/result.h"
#include "scheduler/kube/api_error.h"

namespace taskgov::scheduler::kube {

class KubeClient;

struct LeaseRecord {
  std::string holder_identity;
  int32_t lease_duration_seconds = 0;
  std::string acquire_time;  // MicroTime text, as stored
  std::string renew_time;    // MicroTime text, as stored
  int32_t lease_transitions = 0;
  std::string resource_version;  // metadata.resourceVersion (optimistic concurrency)

  // Same spec (resourceVersion ignored).
  [[nodiscard]] bool SameSpec(const LeaseRecord& other) const {
    return holder_identity == other.holder_identity &&
           lease_duration_seconds == other.lease_duration_seconds &&
           acquire_time == other.acquire_time && renew_time == other.renew_time &&
           lease_transitions == other.lease_transitions;
  }
};

// Lease JSON ↔ LeaseRecord. Decoding checks every field's type; errors name the field.
[[nodiscard]] common::Result<LeaseRecord> DecodeLease(std::string_view json);
[[nodiscard]] std::string EncodeLease(const std::string& ns, const std::string& name,
                                      const LeaseRecord& record);

class LeaseStore {
 public:
  virtual ~LeaseStore() = default;
  // 404 (status 404) when the lease does not exist.
  [[nodiscard]] virtual ApiResult<LeaseRecord> Get(std::chrono::milliseconds timeout) = 0;
  // 409 when it already exists. Returns the stored record (with its resourceVersion).
  [[nodiscard]] virtual ApiResult<LeaseRecord> Create(const LeaseRecord& record,
                                                      std::chrono::milliseconds timeout) = 0;
  // Replaces the lease if its resourceVersion is still record.resource_version (409 if not).
  [[nodiscard]] virtual ApiResult<LeaseRecord> Update(const LeaseRecord& record,
                                                      std::chrono::milliseconds timeout) = 0;
  // "namespace/name", for logs.
  [[nodiscard]] virtual std::string Describe() const = 0;
};

class ApiLeaseStore final : public LeaseStore {
 public:
  ApiLeaseStore(KubeClient* client, std::string ns, std::string name);
  ApiResult<LeaseRecord> Get(std::chrono::milliseconds timeout) override;
  ApiResult<LeaseRecord> Create(const LeaseRecord& record,
                                std::chrono::milliseconds timeout) override;
  ApiResult<LeaseRecord> Update(const LeaseRecord& record,
                                std::chrono::milliseconds timeout) override;
  std::string Describe() const override { return ns_ + "/" + name_; }

 private:
  KubeClient* client_;
  std::string ns_;
  std::string name_;
};

}  // namespace taskgov::scheduler::kube
