#include "config/catalogue.h"

#include <algorithm>
#include <limits>

namespace taskgov::config {

namespace {

constexpr std::string_view kGpu = "nvidia.com/gpu";
constexpr std::string_view kNeuron = "aws.amazon.com/neuron";

// MIG profiles per accelerator model (NVIDIA's MIG user guide; the profile names are the ones
// HyperPod's AcceleratorPartition.Type accepts).
std::vector<MigProfile> Mig(std::string_view model) {
  if (model == "A100 40GB") {
    return {{"mig-1g.5gb", 7},  {"mig-1g.10gb", 4}, {"mig-2g.10gb", 3},
            {"mig-3g.20gb", 2}, {"mig-4g.20gb", 1}, {"mig-7g.40gb", 1}};
  }
  if (model == "A100 80GB" || model == "H100 80GB") {
    return {{"mig-1g.10gb", 7}, {"mig-1g.20gb", 4}, {"mig-2g.20gb", 3},
            {"mig-3g.40gb", 2}, {"mig-4g.40gb", 1}, {"mig-7g.80gb", 1}};
  }
  if (model == "H200 141GB") {
    return {{"mig-1g.18gb", 7}, {"mig-1g.35gb", 4}, {"mig-2g.35gb", 3},
            {"mig-3g.71gb", 2}, {"mig-4g.71gb", 1}, {"mig-7g.141gb", 1}};
  }
  if (model == "B200 180GB") {
    return {{"mig-1g.23gb", 7}, {"mig-1g.45gb", 4}, {"mig-2g.45gb", 3},
            {"mig-3g.90gb", 2}, {"mig-4g.90gb", 1}, {"mig-7g.180gb", 1}};
  }
  if (model == "GB200 186GB") {
    return {{"mig-1g.23gb", 7}, {"mig-1g.47gb", 4}, {"mig-2g.47gb", 3},
            {"mig-3g.93gb", 2}, {"mig-4g.93gb", 1}, {"mig-7g.186gb", 1}};
  }
  return {};
}

struct Row {
  std::string_view name;
  std::string_view resource;
  int64_t accelerators;
  int64_t vcpus;
  double memory_gib;
  std::string_view model;
};

// Per-instance amounts as AWS publishes them for each instance type.
constexpr Row kRows[] = {
    // NVIDIA training instances.
    {"ml.p4d.24xlarge", kGpu, 8, 96, 1152, "A100 40GB"},
    {"ml.p4de.24xlarge", kGpu, 8, 96, 1152, "A100 80GB"},
    {"ml.p5.4xlarge", kGpu, 1, 16, 256, "H100 80GB"},
    {"ml.p5.48xlarge", kGpu, 8, 192, 2048, "H100 80GB"},
    {"ml.p5e.48xlarge", kGpu, 8, 192, 2048, "H200 141GB"},
    {"ml.p5en.48xlarge", kGpu, 8, 192, 2048, "H200 141GB"},
    {"ml.p6-b200.48xlarge", kGpu, 8, 192, 2048, "B200 180GB"},
    {"ml.p6e-gb200.36xlarge", kGpu, 4, 144, 960, "GB200 186GB"},
    // G5: NVIDIA A10G 24GB.
    {"ml.g5.xlarge", kGpu, 1, 4, 16, "A10G 24GB"},
    {"ml.g5.2xlarge", kGpu, 1, 8, 32, "A10G 24GB"},
    {"ml.g5.4xlarge", kGpu, 1, 16, 64, "A10G 24GB"},
    {"ml.g5.8xlarge", kGpu, 1, 32, 128, "A10G 24GB"},
    {"ml.g5.12xlarge", kGpu, 4, 48, 192, "A10G 24GB"},
    {"ml.g5.16xlarge", kGpu, 1, 64, 256, "A10G 24GB"},
    {"ml.g5.24xlarge", kGpu, 4, 96, 384, "A10G 24GB"},
    {"ml.g5.48xlarge", kGpu, 8, 192, 768, "A10G 24GB"},
    // G6: NVIDIA L4 24GB.
    {"ml.g6.xlarge", kGpu, 1, 4, 16, "L4 24GB"},
    {"ml.g6.2xlarge", kGpu, 1, 8, 32, "L4 24GB"},
    {"ml.g6.4xlarge", kGpu, 1, 16, 64, "L4 24GB"},
    {"ml.g6.8xlarge", kGpu, 1, 32, 128, "L4 24GB"},
    {"ml.g6.12xlarge", kGpu, 4, 48, 192, "L4 24GB"},
    {"ml.g6.16xlarge", kGpu, 1, 64, 256, "L4 24GB"},
    {"ml.g6.24xlarge", kGpu, 4, 96, 384, "L4 24GB"},
    {"ml.g6.48xlarge", kGpu, 8, 192, 768, "L4 24GB"},
    {"ml.gr6.4xlarge", kGpu, 1, 16, 128, "L4 24GB"},
    {"ml.gr6.8xlarge", kGpu, 1, 32, 256, "L4 24GB"},
    // G6e: NVIDIA L40S 48GB.
    {"ml.g6e.xlarge", kGpu, 1, 4, 32, "L40S 48GB"},
    {"ml.g6e.2xlarge", kGpu, 1, 8, 64, "L40S 48GB"},
    {"ml.g6e.4xlarge", kGpu, 1, 16, 128, "L40S 48GB"},
    {"ml.g6e.8xlarge", kGpu, 1, 32, 256, "L40S 48GB"},
    {"ml.g6e.12xlarge", kGpu, 4, 48, 384, "L40S 48GB"},
    {"ml.g6e.16xlarge", kGpu, 1, 64, 512, "L40S 48GB"},
    {"ml.g6e.24xlarge", kGpu, 4, 96, 768, "L40S 48GB"},
    {"ml.g6e.48xlarge", kGpu, 8, 192, 1536, "L40S 48GB"},
    // AWS Trainium and Inferentia: Neuron devices.
    {"ml.trn1.2xlarge", kNeuron, 1, 8, 32, "Trainium"},
    {"ml.trn1.32xlarge", kNeuron, 16, 128, 512, "Trainium"},
    {"ml.trn1n.32xlarge", kNeuron, 16, 128, 512, "Trainium"},
    {"ml.trn2.3xlarge", kNeuron, 1, 12, 128, "Trainium2"},
    {"ml.trn2.48xlarge", kNeuron, 16, 192, 2048, "Trainium2"},
    {"ml.inf2.xlarge", kNeuron, 1, 4, 16, "Inferentia2"},
    {"ml.inf2.8xlarge", kNeuron, 1, 32, 128, "Inferentia2"},
    {"ml.inf2.24xlarge", kNeuron, 6, 96, 384, "Inferentia2"},
    {"ml.inf2.48xlarge", kNeuron, 12, 192, 768, "Inferentia2"},
    // CPU instances.
    {"ml.c5.large", "", 0, 2, 4, ""},
    {"ml.c5.xlarge", "", 0, 4, 8, ""},
    {"ml.c5.2xlarge", "", 0, 8, 16, ""},
    {"ml.c5.4xlarge", "", 0, 16, 32, ""},
    {"ml.c5.9xlarge", "", 0, 36, 72, ""},
    {"ml.c5.12xlarge", "", 0, 48, 96, ""},
    {"ml.c5.18xlarge", "", 0, 72, 144, ""},
    {"ml.c5.24xlarge", "", 0, 96, 192, ""},
    {"ml.c5n.large", "", 0, 2, 5.25, ""},
    {"ml.c5n.xlarge", "", 0, 4, 10.5, ""},
    {"ml.c5n.2xlarge", "", 0, 8, 21, ""},
    {"ml.c5n.4xlarge", "", 0, 16, 42, ""},
    {"ml.c5n.9xlarge", "", 0, 36, 96, ""},
    {"ml.c5n.18xlarge", "", 0, 72, 192, ""},
    {"ml.c6i.large", "", 0, 2, 4, ""},
    {"ml.c6i.xlarge", "", 0, 4, 8, ""},
    {"ml.c6i.2xlarge", "", 0, 8, 16, ""},
    {"ml.c6i.4xlarge", "", 0, 16, 32, ""},
    {"ml.c6i.8xlarge", "", 0, 32, 64, ""},
    {"ml.c6i.12xlarge", "", 0, 48, 96, ""},
    {"ml.c6i.16xlarge", "", 0, 64, 128, ""},
    {"ml.c6i.24xlarge", "", 0, 96, 192, ""},
    {"ml.c6i.32xlarge", "", 0, 128, 256, ""},
    {"ml.m5.large", "", 0, 2, 8, ""},
    {"ml.m5.xlarge", "", 0, 4, 16, ""},
    {"ml.m5.2xlarge", "", 0, 8, 32, ""},
    {"ml.m5.4xlarge", "", 0, 16, 64, ""},
    {"ml.m5.8xlarge", "", 0, 32, 128, ""},
    {"ml.m5.12xlarge", "", 0, 48, 192, ""},
    {"ml.m5.16xlarge", "", 0, 64, 256, ""},
    {"ml.m5.24xlarge", "", 0, 96, 384, ""},
    {"ml.m6i.large", "", 0, 2, 8, ""},
    {"ml.m6i.xlarge", "", 0, 4, 16, ""},
    {"ml.m6i.2xlarge", "", 0, 8, 32, ""},
    {"ml.m6i.4xlarge", "", 0, 16, 64, ""},
    {"ml.m6i.8xlarge", "", 0, 32, 128, ""},
    {"ml.m6i.12xlarge", "", 0, 48, 192, ""},
    {"ml.m6i.16xlarge", "", 0, 64, 256, ""},
    {"ml.m6i.24xlarge", "", 0, 96, 384, ""},
    {"ml.m6i.32xlarge", "", 0, 128, 512, ""},
    {"ml.r5.large", "", 0, 2, 16, ""},
    {"ml.r5.xlarge", "", 0, 4, 32, ""},
    {"ml.r5.2xlarge", "", 0, 8, 64, ""},
    {"ml.r5.4xlarge", "", 0, 16, 128, ""},
    {"ml.r5.8xlarge", "", 0, 32, 256, ""},
    {"ml.r5.12xlarge", "", 0, 48, 384, ""},
    {"ml.r5.16xlarge", "", 0, 64, 512, ""},
    {"ml.r5.24xlarge", "", 0, 96, 768, ""},
    {"ml.r6i.large", "", 0, 2, 16, ""},
    {"ml.r6i.xlarge", "", 0, 4, 32, ""},
    {"ml.r6i.2xlarge", "", 0, 8, 64, ""},
    {"ml.r6i.4xlarge", "", 0, 16, 128, ""},
    {"ml.r6i.8xlarge", "", 0, 32, 256, ""},
    {"ml.r6i.12xlarge", "", 0, 48, 384, ""},
    {"ml.r6i.16xlarge", "", 0, 64, 512, ""},
    {"ml.r6i.24xlarge", "", 0, 96, 768, ""},
    {"ml.r6i.32xlarge", "", 0, 128, 1024, ""},
    {"ml.t3.medium", "", 0, 2, 4, ""},
    {"ml.t3.large", "", 0, 2, 8, ""},
    {"ml.t3.xlarge", "", 0, 4, 16, ""},
    {"ml.t3.2xlarge", "", 0, 8, 32, ""},
};

Catalogue MakeBuiltin() {
  Catalogue c;
  for (const Row& row : kRows) {
    InstanceType t;
    t.name = std::string(row.name);
    t.accelerator_resource = std::string(row.resource);
    t.accelerators = row.accelerators;
    t.vcpus = row.vcpus;
    t.memory_mib = static_cast<int64_t>(row.memory_gib * 1024);
    t.accelerator_model = std::string(row.model);
    t.mig_profiles = Mig(row.model);
    c.Put(std::move(t));
  }
  return c;
}

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
using int128 = __int128;

// ceil(a * b / c) for non-negative a, b and positive c; nullopt on overflow of int64.
std::optional<int64_t> MulDivCeil(int128 a, int128 b, int128 c) {
  const int128 product = a * b;
  const int128 q = (product + c - 1) / c;
  if (q > kMax) return std::nullopt;
  return static_cast<int64_t>(q);
}

std::optional<int64_t> Mul(int64_t a, int64_t b) { return MulDivCeil(a, b, 1); }

}  // namespace

const MigProfile* InstanceType::FindMigProfile(std::string_view profile) const {
  for (const MigProfile& p : mig_profiles) {
    if (p.name == profile) return &p;
  }
  return nullptr;
}

const Catalogue& Catalogue::Builtin() {
  static const Catalogue* const kBuiltin = new Catalogue(MakeBuiltin());
  return *kBuiltin;
}

const InstanceType* Catalogue::Find(std::string_view name) const {
  for (const InstanceType& t : types_) {
    if (t.name == name) return &t;
  }
  if (name.substr(0, 3) != "ml.") {
    const std::string prefixed = "ml." + std::string(name);
    for (const InstanceType& t : types_) {
      if (t.name == prefixed) return &t;
    }
  }
  return nullptr;
}

void Catalogue::Put(InstanceType type) {
  for (InstanceType& t : types_) {
    if (t.name == type.name) {
      t = std::move(type);
      return;
    }
  }
  types_.push_back(std::move(type));
}

std::string PartitionResource(std::string_view partition_type) {
  return "nvidia.com/" + std::string(partition_type);
}

namespace {

common::Error UnknownInstanceType(const std::string& quoted) {
  return common::Error{"instance type " + quoted +
                       " is not in the catalogue: give VCpu and MemoryInGiB explicitly, or "
                       "describe the type under instanceTypes"};
}

common::Error Overflow(const std::string& quoted) {
  return common::Error{"quota for instance type " + quoted + " overflows"};
}

// A type not in the catalogue: only explicit VCpu and MemoryInGiB can be taken as they are.
common::Result<scheduler::model::ResourceList> ExplicitOnly(const std::string& quoted,
                                                            const ComputeAmounts& a) {
  if (a.count) {
    return common::Error{"instance type " + quoted +
                         " is not in the catalogue, so Count cannot be converted: give VCpu and "
                         "MemoryInGiB explicitly, or describe the type under instanceTypes"};
  }
  if ((a.accelerators && *a.accelerators > 0) || a.partition_type) {
    return common::Error{"instance type " + quoted +
                         " is not in the catalogue, so its accelerator resource is unknown: "
                         "describe the type under instanceTypes"};
  }
  if (!a.vcpu_millis || !a.memory_bytes) return UnknownInstanceType(quoted);
  scheduler::model::ResourceList out;
  out.Set("cpu", *a.vcpu_millis);
  out.Set("memory", *a.memory_bytes);
  return out;
}

// The MIG profile of the line's partition; nullptr when the type does not offer it but VCpu and
// MemoryInGiB are explicit (nothing is derived from it then), an error otherwise.
common::Result<const MigProfile*> PartitionProfile(const InstanceType& type,
                                                   const std::string& quoted,
                                                   const ComputeAmounts& a) {
  const MigProfile* profile = type.FindMigProfile(*a.partition_type);
  if (profile != nullptr || (a.vcpu_millis && a.memory_bytes)) return profile;
  std::string offered;
  for (const MigProfile& p : type.mig_profiles) {
    if (!offered.empty()) offered += ", ";
    offered += p.name;
  }
  return common::Error{"instance type " + quoted + " offers no accelerator partition '" +
                       *a.partition_type + "'" +
                       (offered.empty() ? std::string(" (it has no MIG profiles)")
                                        : " (it offers " + offered + ")") +
                       ": give VCpu and MemoryInGiB explicitly, or describe the profile under "
                       "instanceTypes"};
}

// Accelerators, cpu millicores and memory bytes; unset where nothing was derived.
struct Amounts {
  std::optional<int64_t> acc;
  std::optional<int64_t> vcpu;
  std::optional<int64_t> memory;
};

// The amounts in the type's proportions from the first of: Count instances; accelerators and
// partitions (as a fraction of an instance); VCpu; MemoryInGiB. Rounded up; an error on
// overflow.
common::Result<Amounts> Proportional(const InstanceType& type, const MigProfile* profile,
                                     const std::string& quoted, const ComputeAmounts& a) {
  const int64_t per_vcpu_millis = type.vcpus * 1000;
  const int64_t per_memory = type.memory_mib * (int64_t{1} << 20);
  const int64_t per_acc = type.accelerators;
  Amounts d;
  if (a.count) {
    d.acc = Mul(*a.count, per_acc);
    d.vcpu = Mul(*a.count, per_vcpu_millis);
    d.memory = Mul(*a.count, per_memory);
    if (!d.acc || !d.vcpu || !d.memory) return Overflow(quoted);
  } else if (a.accelerators || a.partition_type) {
    // f = accelerators / A + partitions / (per_accelerator × A) = num / den.
    const int64_t accelerators = a.accelerators.value_or(0);
    const int128 per_partition = profile ? profile->per_accelerator : 1;
    const int128 num = int128{accelerators} * per_partition +
                       (profile ? int128{a.partition_count.value_or(0)} : 0);
    const int128 den = per_partition * per_acc;
    d.acc = accelerators;
    if (den == 0) {
      // A type without accelerators, given Accelerators 0 (DeriveQuota refuses more, and any
      // partition): no fraction of an instance, as 0 accelerators of any type is.
      d.vcpu = 0;
      d.memory = 0;
      return d;
    }
    d.vcpu = MulDivCeil(num, per_vcpu_millis, den);
    d.memory = MulDivCeil(num, per_memory, den);
    if (!d.vcpu || !d.memory) return Overflow(quoted);
  } else if (a.vcpu_millis) {
    d.acc = 0;
    d.memory = per_vcpu_millis == 0 ? std::optional<int64_t>(0)
                                    : MulDivCeil(*a.vcpu_millis, per_memory, per_vcpu_millis);
    if (!d.memory) return Overflow(quoted);
  } else {
    d.acc = 0;
    d.vcpu = per_memory == 0 ? std::optional<int64_t>(0)
                             : MulDivCeil(*a.memory_bytes, per_vcpu_millis, per_memory);
    if (!d.vcpu) return Overflow(quoted);
  }
  return d;
}

}  // namespace

common::Status CheckKnownInstanceType(const InstanceType* type, std::string_view type_name) {
  if (type != nullptr) return common::Status::Ok();
  return UnknownInstanceType("'" + std::string(type_name) + "'");
}

common::Result<scheduler::model::ResourceList> DeriveQuota(const InstanceType* type,
                                                           std::string_view type_name,
                                                           const ComputeAmounts& a) {
  const std::string quoted = "'" + std::string(type_name) + "'";
  const bool has_partition = a.partition_type.has_value();
  if (!a.count && !a.accelerators && !a.vcpu_millis && !a.memory_bytes && !has_partition) {
    return common::Error{
        "gives none of Count, Accelerators, VCpu, MemoryInGiB or AcceleratorPartition"};
  }
  if (type == nullptr) return ExplicitOnly(quoted, a);
  const bool has_accelerators = type->accelerators > 0 && !type->accelerator_resource.empty();
  if (!has_accelerators && ((a.accelerators && *a.accelerators > 0) || has_partition)) {
    return common::Error{"instance type " + quoted + " has no accelerators"};
  }

  scheduler::model::ResourceList out;
  const MigProfile* profile = nullptr;
  if (has_partition) {
    common::Result<const MigProfile*> found = PartitionProfile(*type, quoted, a);
    if (!found.ok()) return found.error();
    profile = *found;
    out.Set(PartitionResource(*a.partition_type), a.partition_count.value_or(0));
  }
  common::Result<Amounts> derived = Proportional(*type, profile, quoted, a);
  if (!derived.ok()) return derived.error();
  // Explicit values win.
  if (a.accelerators) derived->acc = a.accelerators;
  if (a.vcpu_millis) derived->vcpu = a.vcpu_millis;
  if (a.memory_bytes) derived->memory = a.memory_bytes;

  if (has_accelerators) out.Set(type->accelerator_resource, derived->acc.value_or(0));
  out.Set("cpu", derived->vcpu.value_or(0));
  out.Set("memory", derived->memory.value_or(0));
  return out;
}

}  // namespace taskgov::config
