#pragma once

// The instance-type catalogue and the HyperPod ratio defaults (DESIGN §3.4).
//
// The built-in catalogue lists the SageMaker HyperPod instance types (ml.p4d, p4de, p5, p5e,
// p5en, p6-b200, p6e-gb200, g5, g6, gr6, g6e, trn1, trn1n, trn2, inf2 and common CPU types:
// c5, c5n, c6i, m5, m6i, r5, r6i, t3): the accelerator resource name and count, vCPUs and memory
// per instance, and the MIG profiles one accelerator offers. A configuration may add types or
// override fields (native `instanceTypes:`); a node's own allocatable stays the truth for
// capacity — the catalogue only turns "16 GPUs of ml.p5.48xlarge" into the matching vCPU and
// memory quota.
//
// DeriveQuota applies the ratio rules once for every dialect:
//   * Count n: n × each per-instance amount;
//   * Accelerators a (and/or an accelerator partition of c MIG slices of a profile offering p per
//     accelerator): vCPU and memory scale by f = a / A + c / (p × A);
//   * VCpu only: memory scales by vcpu / V, accelerators are 0;
//   * MemoryInGiB only: vCPU scales by memory / M, accelerators are 0;
//   * explicit values always win. Derived amounts round up to the canonical unit.
// An instance type missing from the catalogue needs VCpu and MemoryInGiB given explicitly (and no
// accelerators, whose resource name would be unknown).
//
// Catalogue values are plain data; Builtin() is immutable and thread-safe.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "scheduler/common/result.h"
#include "scheduler/model/resources.h"

namespace taskgov::config {

// A Multi-Instance GPU profile and how many of it one accelerator holds.
struct MigProfile {
  std::string name;  // "mig-1g.10gb"
  int64_t per_accelerator = 0;
  bool operator==(const MigProfile&) const = default;
};

struct InstanceType {
  std::string name;                  // "ml.p5.48xlarge"
  std::string accelerator_resource;  // "nvidia.com/gpu", "aws.amazon.com/neuron"; empty: none
  int64_t accelerators = 0;          // per instance
  int64_t vcpus = 0;                 // per instance
  int64_t memory_mib = 0;            // per instance
  std::string accelerator_model;     // "H100 80GB", for people
  std::vector<MigProfile> mig_profiles;
  bool operator==(const InstanceType&) const = default;

  [[nodiscard]] const MigProfile* FindMigProfile(std::string_view profile) const;
};

class Catalogue {
 public:
  // The embedded SageMaker HyperPod catalogue.
  static const Catalogue& Builtin();

  // By exact name; a name without the "ml." prefix (EKS node labels such as "p5.48xlarge") also
  // finds the "ml." entry.
  [[nodiscard]] const InstanceType* Find(std::string_view name) const;
  // Adds a type or replaces the one with the same name.
  void Put(InstanceType type);
  [[nodiscard]] const std::vector<InstanceType>& types() const { return types_; }

 private:
  std::vector<InstanceType> types_;
};

// The amounts one HyperPod-style compute line asks for; unset fields follow the ratio rules.
struct ComputeAmounts {
  std::optional<int64_t> count = std::nullopt;
  std::optional<int64_t> accelerators = std::nullopt;
  std::optional<int64_t> vcpu_millis = std::nullopt;
  std::optional<int64_t> memory_bytes = std::nullopt;
  std::optional<std::string> partition_type = std::nullopt;  // "mig-1g.10gb"
  std::optional<int64_t> partition_count = std::nullopt;
};

// The MIG partition resource name for a profile: "nvidia.com/mig-1g.10gb".
[[nodiscard]] std::string PartitionResource(std::string_view partition_type);

// The quota a compute line stands for on `type_name`: the accelerator resource (when the type has
// accelerators, even if 0), the partition resource (when given), cpu (millicores) and memory
// (bytes). `type` is the catalogue entry, or nullptr when the type is not in the catalogue.
// Errors name what is missing, e.g. "instance type 'ml.x' is not in the catalogue: give VCpu and
// MemoryInGiB explicitly, or describe it under instanceTypes".
[[nodiscard]] common::Result<scheduler::model::ResourceList> DeriveQuota(
    const InstanceType* type, std::string_view type_name, const ComputeAmounts& amounts);

// For a line whose amounts cannot be read: an error when `type` (the catalogue entry of
// `type_name`) is nullptr, with DeriveQuota's wording.
[[nodiscard]] common::Status CheckKnownInstanceType(const InstanceType* type,
                                                    std::string_view type_name);

}  // namespace taskgov::config
