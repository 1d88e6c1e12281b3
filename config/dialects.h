#pragma once

// The dialect decoders: each turns one document into ConfigSet entries, reporting every problem
// with its path. DecodeDocument recognises the dialect:
//   * apiVersion taskgov.io/v1 — native (kind TaskGovernancePolicy or Team);
//   * apiVersion kueue.x-k8s.io/v1beta1 | v1beta2 (and v1alpha1 Cohort) — Kueue ClusterQueue,
//     LocalQueue, ResourceFlavor, WorkloadPriorityClass, Cohort;
//   * apiVersion scheduling.volcano.sh/v1beta1, kind Queue — Volcano;
//   * kind List (or any <Kind>List) with items — each item in turn, at path items[i];
//   * no apiVersion, with ComputeQuotaConfig / ComputeQuotaTarget / ComputeQuotaId — a HyperPod
//     CreateComputeQuota / UpdateComputeQuota request (or DescribeComputeQuota output); with
//     SchedulerConfig — CreateClusterSchedulerConfig / UpdateClusterSchedulerConfig.
// Other Kubernetes objects are reported as warnings and skipped; an unrecognisable document is an
// error. Empty documents are skipped.
//
// Pure functions; thread-safe.

#include <string>

#include "config/document.h"
#include "config/reader.h"
#include "config/spec.h"

namespace taskgov::config {

void DecodeDocument(const Node& doc, const DocContext& ctx, ConfigSet* out);

// Per dialect; the reader is positioned on the document (its path is "" or "items[3]").
void DecodeNative(ObjectReader& doc, std::string_view kind, ConfigSet* out);
void DecodeHyperPod(ObjectReader& doc, ConfigSet* out);
void DecodeKueue(ObjectReader& doc, std::string_view api_version, std::string_view kind,
                 ConfigSet* out);
void DecodeVolcano(ObjectReader& doc, std::string_view kind, ConfigSet* out);

// Shared pieces.
[[nodiscard]] Origin OriginOf(const DocContext& ctx, std::string path, Mark mark);
[[nodiscard]] Origin OriginOf(const ObjectReader& r);

// Records the document `r` reads in `seen`, the documents of a kind a configuration holds once;
// from the second on, an error naming the first: "a second <what> (the first is in <file>):
// <advice>".
void RecordSingleton(const ObjectReader& r, std::vector<Origin>* seen, std::string_view what,
                     std::string_view advice);

// The field names of a compute line in one dialect's spelling.
struct ComputeKeys {
  std::string_view instance_type;
  std::string_view count;
  std::string_view accelerators;
  std::string_view vcpu;
  std::string_view memory;
  std::string_view partition;
  std::string_view partition_type;
  std::string_view partition_count;
};
inline constexpr ComputeKeys kNativeComputeKeys{
    "instanceType",         "count", "accelerators", "vCpu", "memoryInGiB",
    "acceleratorPartition", "type",  "count"};
inline constexpr ComputeKeys kHyperPodComputeKeys{
    "InstanceType",         "Count", "Accelerators", "VCpu", "MemoryInGiB",
    "AcceleratorPartition", "Type",  "Count"};

// Kubernetes' rules for the names a configuration gives (common/k8s_names.h): a DNS-1123 label
// (team names, namespaces; at most 63 characters) or a DNS-1123 subdomain (object names: queues,
// flavors, cohorts, priority classes; at most 253).
enum class NameRule { kDnsLabel, kDnsSubdomain };
// Whether `name` follows `rule`; otherwise reports an error at `path` naming `what` ("team name")
// and the rule, and for a name that is too long its length and the limit Kubernetes sets.
bool CheckName(const DocContext& ctx, std::string path, Mark mark, std::string_view what,
               std::string_view name, NameRule rule);
// CheckName of field `key` of `r`, when present with a string value (empty allowed only when
// `allow_empty`, for names where "" means none).
bool CheckNameField(const ObjectReader& r, std::string_view key, std::string_view what,
                    const std::optional<std::string>& name, NameRule rule,
                    bool allow_empty = false);

// A borrowWithinCohort object at `key` of `r` (Kueue's ClusterQueue preemption field, also the
// native team's): policy Never | LowerPriority, maxPriorityThreshold an integer. Absent: left.
void ReadBorrowWithinCohort(ObjectReader& r, scheduler::model::BorrowWithinCohort* out,
                            std::string_view key = "borrowWithinCohort");

// Reads the common fields of one compute line (instance type, when present, and the amounts);
// the caller reads its dialect's other fields and decides whether the instance type is required.
// Returns nullopt when the line is unusable (already reported); a line whose instance type is
// readable but whose amounts are not comes back with amounts_valid false (its instance type is
// still checked at resolution).
[[nodiscard]] std::optional<ComputeSpec> DecodeCompute(ObjectReader& r, const ComputeKeys& keys);

}  // namespace taskgov::config
