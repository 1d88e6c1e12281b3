#pragma once

// WorkloadTable: every governed, non-terminal pod the informers report, grouped into its
// workload (a gang, a job owner or a lone pod) and kept in the admin API's order — namespace,
// name, kind — as the ClusterState applies each pod event. A reader walks it under the table's
// own shared lock, so listing 10,000 workloads never holds the ClusterState's lock that the
// filter path takes, and costs a walk, not a rebuild.
//
// What changes without a pod event (a pod's reservation, its place in the pending queues, its
// preemption) is not here: readers join it from the QuotaBook and the PendingQueues.
//
// Thread-safety: writers (the ClusterState, under its own lock) take the table's lock
// exclusively; Read() holds it shared for the duration of its callback. Lock order: the
// ClusterState's lock, then the PendingQueues', then this one; a reader must not take either
// of the first two inside Read().

#include <cstdint>
#include <map>
#include <memory>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "scheduler/model/gang.h"
#include "scheduler/model/interner.h"
#include "scheduler/model/kept_pod.h"
#include "scheduler/model/objects.h"
#include "scheduler/model/string_pool.h"
#include "scheduler/state/pending_queues.h"
#include "scheduler/state/string_hash.h"

namespace taskgov::scheduler::state {

// The admin API's kind of a workload: the object that declares the gang, or Pod for a lone pod.
[[nodiscard]] std::string_view WorkloadKindOf(const model::WorkloadRef& ref);
[[nodiscard]] std::string_view WorkloadKindOf(model::GangSource source, bool lone);

// A member of a workload: the state's packed pod, shared (immutable: an event replaces it whole,
// under the table's lock), and what the state derives of it under the policy in force — its team,
// priority, priority class (PriorityClassNames: classes are a bounded set), the size it declares
// and the instance type its node selector asks for. The instance type is pooled, not interned: a
// node selector names it freely, and an interner never forgets a name.
struct WorkloadMember {
  std::shared_ptr<const model::KeptPod> pod;
  model::NameId team = kNoTeam;
  int32_t priority = 0;
  int32_t declared = 0;
  model::NameId priority_class = 0;   // PriorityClassNames(); 0: none
  model::PooledString instance_type;  // what its node selector asks for ("" if nothing)
  [[nodiscard]] std::string_view name() const { return pod->name(); }
  [[nodiscard]] std::string_view uid() const { return pod->uid(); }
  [[nodiscard]] bool bound() const { return pod->bound(); }
  [[nodiscard]] bool terminating() const { return pod->terminating(); }
  [[nodiscard]] const std::string& node_name() const { return pod->node_name(); }
};

// A workload. Its key, namespace and name are views of its order key (the table's key for it,
// "<ns>/<name>/<kind>/<key>", which never moves), so the table holds each string once; 56 bytes.
struct WorkloadEntry {
  // WorkloadRef::key, or "pod/<ns>/<name>" for a lone pod.
  [[nodiscard]] std::string_view key() const {
    return std::string_view(*order_).substr(ns().size() + name_len_ + kind().size() + 3);
  }
  // Up to the order key's first '/': a namespace holds none.
  [[nodiscard]] std::string_view ns() const {
    return std::string_view(*order_).substr(0, order_->find('/'));
  }
  [[nodiscard]] std::string_view name() const {
    return std::string_view(*order_).substr(ns().size() + 1, name_len_);
  }
  // As the admin API names it: Pod, KueuePodGroup, Job, PodGroup, ... (WorkloadKindOf).
  [[nodiscard]] std::string_view kind() const { return WorkloadKindOf(source_, lone_); }
  // The instance type the first member that names one asks for ("" if none does).
  [[nodiscard]] std::string_view instance_type() const;
  [[nodiscard]] const std::string& priority_class_name() const {
    return model::PriorityClassNames().Name(priority_class);
  }

  // Whatever order its pods' events came in: the first member's team, the highest priority of
  // its members and that member's class, the largest size a member declares (1 for a lone pod).
  model::NameId team = kNoTeam;
  int32_t priority = 0;
  int32_t declared = 0;
  model::NameId priority_class = 0;     // PriorityClassNames(); 0: none
  std::vector<WorkloadMember> members;  // by name

 private:
  friend class WorkloadTable;
  const std::string* order_ = nullptr;  // the order key, in the table's map node
  uint32_t name_len_ = 0;
  model::GangSource source_ = model::GangSource::kNone;
  bool lone_ = false;
};
// The table key of a workload: its gang key (WorkloadRef::key, PendingPod::gang), or
// "pod/<ns>/<name>" for a lone pod (`gang_key` empty).
[[nodiscard]] std::string WorkloadKeyOf(std::string_view gang_key, std::string_view pod_key);
// The table's order key of a workload: "<ns>/<name>/<kind>/<key>".
[[nodiscard]] std::string WorkloadOrderKey(std::string_view ns, std::string_view name,
                                           std::string_view kind, std::string_view key);
// "<ns>/<name>" split in two; no '/': an empty namespace and the whole as the name.
[[nodiscard]] std::pair<std::string_view, std::string_view> SplitKey(std::string_view key);
// The instance type a node selector asks for under the policy's instance-type `label` ("" if
// none).
[[nodiscard]] std::string RequestedInstanceType(const model::Labels& node_selector,
                                                std::string_view label);

class WorkloadTable {
 public:
  // Entries by order key "<ns>/<name>/<kind>/<key>" (names hold no '/', so this sorts by
  // namespace, name, kind).
  using Ordered = std::map<std::string, WorkloadEntry, std::less<>>;
  // What a lone pod's workload key starts with ("pod/<ns>/<name>"; no gang key does).
  static constexpr std::string_view kLonePrefix = "pod/";

  // A pod's current state (packed, shared with the caller): it joins (or moves to) the
  // workload `ref` names. `instance_type`: the one its node selector asks for ("" if none).
  void Put(std::shared_ptr<const model::KeptPod> pod, model::NameId team,
           const model::WorkloadRef& ref, int32_t priority, std::string_view priority_class,
           std::string instance_type = "");
  // A pod gone, terminal or no longer governed (`ns` and `name`: its namespace and name, which
  // find it among its workload's members).
  void Remove(std::string_view uid, std::string_view ns, std::string_view name);
  // The uids of the members of workload `key`.
  [[nodiscard]] std::vector<std::string> MembersOf(std::string_view key) const;

  // The table as readers see it, valid inside Read()'s callback only.
  class View {
   public:
    [[nodiscard]] const Ordered& ordered() const { return table_.ordered_; }
    [[nodiscard]] const WorkloadEntry* Find(std::string_view key) const;
    [[nodiscard]] bool HasPod(std::string_view uid, std::string_view ns,
                              std::string_view name) const;

   private:
    friend class WorkloadTable;
    explicit View(const WorkloadTable& table) : table_(table) {}
    const WorkloadTable& table_;
  };
  template <typename Fn>
  decltype(auto) Read(Fn&& fn) const {
    std::shared_lock lock(mu_);
    return fn(View(*this));
  }

  [[nodiscard]] size_t size() const;

 private:
  // Pod uid hash → the entry of a gang one of whose members has a uid of that hash.
  using Owners = std::unordered_multimap<size_t, Ordered::iterator>;
  // Where a pod is: its workload's entry (ordered_.end(): nowhere) and, for a gang's member, its
  // slot in workload_of_ (end() for a lone pod).
  struct Place {
    Ordered::iterator entry;
    Owners::iterator owner;
  };

  // Whether `key` is a lone pod's.
  static bool IsLone(std::string_view key);
  // The entry of workload `key`, or ordered_.end(): a lone pod's by its order key, derived from
  // its key, so that lone pods (most workloads) need no entry in order_of_.
  [[nodiscard]] Ordered::iterator FindEntry(std::string_view key);
  // The entry of the lone pod `ns`/`name`, or ordered_.end().
  [[nodiscard]] Ordered::iterator FindLone(std::string_view ns, std::string_view name);
  // The first member of `members` (by name) not before `name`.
  static std::vector<WorkloadMember>::iterator LowerBound(std::vector<WorkloadMember>& members,
                                                          std::string_view name);
  // The slot of workload_of_ for pod `uid` named `name`: the one whose entry has that member
  // (found by name, O(log members)).
  [[nodiscard]] Owners::iterator OwnerOf(std::string_view uid, std::string_view name);
  // Where pod `uid` (`ns`/`name`) is: as a lone pod, by its order key; else as a gang's member.
  [[nodiscard]] Place Locate(std::string_view uid, std::string_view ns, std::string_view name);
  // With mu_ held exclusively: the member named `name` at `place` leaves.
  void RemoveAt(Place place, std::string_view name);
  // Its team, priority, class and size from its members' (a walk over them).
  static void Summarize(WorkloadEntry& entry);
  // What of a member the summary reads.
  struct Standing {
    int32_t priority = 0;
    model::NameId priority_class = 0;
    int32_t declared = 0;
  };
  // The same after member `m` joined (`before` null) or changed from `before`: a walk only when
  // the top may have changed, so a gang's events cost O(log members), not O(members), each.
  static void Follow(WorkloadEntry& entry, const WorkloadMember& m, const Standing* before);

  mutable std::shared_mutex mu_;
  Ordered ordered_;
  // Gang key (a view of its entry's `key`: map nodes never move) → its entry; lone pods are found
  // by their order key (FindEntry).
  std::unordered_map<std::string_view, Ordered::iterator, StringHash, std::equal_to<>> order_of_;
  // A gang member's uid → its gang's entry, keyed by the uid's hash: the uid is kept once, by its
  // member (a lookup confirms it among the entry's members, found by the pod's name). Lone pods
  // (most pods) have no slot: they are found by their order key (Locate).
  Owners workload_of_;
};

}  // namespace taskgov::scheduler::state
