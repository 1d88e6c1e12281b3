#pragma once

// WorkloadRows: the admin API's workloads, as the ClusterState's WorkloadTable holds them joined
// with what changes without a pod event: each pod's reservation (QuotaBook), its place and last
// refusal in its team's pending queue, and the pods known only from kube-scheduler's filter
// calls (the PendingQueues). The pending queues are read when a WorkloadRows is made, before the
// table's lock is taken (the lock order of WorkloadTable); the table is walked under its shared
// lock in Read(), which never takes the ClusterState's lock.
//
// A workload's state from its pods': Terminating when all are; Running when every other pod runs
// and the gang is complete; Admitted while it holds quota (a pod admitted or running, or the
// gang's hold); else Pending.
//
// Paused jobs (issue 35): a job taskgov suspended (ClusterState::PausedJobs, model/job_control.h)
// has no pods once its controller deleted them, so the table has no entry for it; it is listed
// as a workload of its own, state Suspended, its team resolved from its pod template (as the
// filter resolves its pods': TeamOfJob), its request its whole demand (JobDemand). A workload
// whose job is suspended (by taskgov or by its user) carries the job (AddSuspension), whatever
// its pods' state.
//
// Thread-safety: one request's object, used by one thread.

#include <cstdint>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "scheduler/ledger/quota_book.h"
#include "scheduler/model/job_control.h"
#include "scheduler/state/cluster_state.h"

namespace taskgov::extender {

struct PodRow {
  std::string ns, name, uid;
  std::string state;  // Pending, Admitted, Running, Terminating
  scheduler::model::ResourceList request;
  int64_t created_ms = 0;
  int64_t started_ms = 0;
  bool refused = false;
  std::string refusal;  // the filter's reasons, while it is refused
  int64_t refused_ms = 0;
  std::string preemption;  // set by WorkloadRows::AddPreemption
};

struct WorkloadRow {
  std::string key, ns, name, kind;
  scheduler::model::NameId team = scheduler::state::kNoTeam;
  int32_t priority = 0;
  std::string priority_class;
  int32_t declared = 0;
  std::string instance_type;  // what its pods' node selector asks for ("" if nothing)
  // The flavor of the node its first bound pod runs on, else instance_type (set by the admin
  // API, AdminApi::SetFlavor).
  std::string flavor;
  size_t position = 0;  // among the team's pending workloads, from 1; 0: not pending
  std::set<std::string> nodes;
  std::vector<PodRow> pods;  // by name
  std::string state;         // Pending, Admitted, Running, Terminating; Suspended: a paused job's
  // Its job, when that job is suspended (by taskgov: job->paused_by_taskgov(); else by its user).
  std::shared_ptr<const scheduler::model::JobControl> job;
  // The earliest creation of its pods (0 if none is known).
  [[nodiscard]] int64_t created_ms() const;
};

// The team of a pausable job's pods: its first pod set's template resolved as the filter
// resolves a pod (namespace, queue labels), kNoTeam for none.
[[nodiscard]] scheduler::model::NameId TeamOfJob(const scheduler::state::ClusterState& cluster,
                                                 const scheduler::model::JobControl& job);
// What a job's pods request in all: Σ over its pod sets of count × the template's effective
// request.
[[nodiscard]] scheduler::model::ResourceList JobDemand(const scheduler::model::JobControl& job);

class WorkloadRows {
  struct Queued {
    scheduler::state::PendingPod pod;
    bool refused = false;
    int64_t refused_ms = 0;
    size_t position = 0;
  };

 public:
  WorkloadRows(const scheduler::ledger::QuotaBook& book, scheduler::state::ClusterState& cluster);

  // One workload to read: a table entry, or a workload known only from filter calls.
  struct Item {
    std::string_view order;  // the table's order key "<ns>/<name>/<kind>/<key>"
    const scheduler::state::WorkloadEntry* entry = nullptr;
    const WorkloadRow* loose = nullptr;
  };
  // The workloads under the table's lock, in order; valid inside Read()'s callback only.
  class Reader {
   public:
    // Every workload, in order (the table's and the loose ones merged).
    [[nodiscard]] std::vector<Item> Items() const;
    // The workloads named ns/name, in order (by kind).
    [[nodiscard]] std::vector<Item> Named(std::string_view ns, std::string_view name) const;
    [[nodiscard]] std::string_view Ns(const Item& item) const;
    [[nodiscard]] std::string_view Key(const Item& item) const;
    [[nodiscard]] scheduler::model::NameId Team(const Item& item) const;
    // Its state, without copying it.
    [[nodiscard]] std::string State(const Item& item) const;
    // A copy of it with its pods' states, queue places and refusals.
    [[nodiscard]] WorkloadRow Row(const Item& item) const;

   private:
    friend class WorkloadRows;
    Reader(const WorkloadRows& rows, const scheduler::state::WorkloadTable::View& view);
    // The table's entries [from, to) and the loose workloads whose order key starts with
    // `prefix`, merged in order.
    [[nodiscard]] std::vector<Item> Merge(
        scheduler::state::WorkloadTable::Ordered::const_iterator from,
        scheduler::state::WorkloadTable::Ordered::const_iterator to, std::string_view prefix) const;
    [[nodiscard]] bool GangHolds(std::string_view kind, std::string_view key) const;
    // A pod's place and refusal in its team's queue, onto its row and its workload's.
    static void Queue(const Queued& q, PodRow* row, WorkloadRow* w);
    // The row of a pod known only from filter calls.
    [[nodiscard]] PodRow FilterOnlyPod(const Queued& q, WorkloadRow* w) const;
    // Its pods in order, its state, and no queue place unless it waits.
    void Settle(WorkloadRow& w) const;
    [[nodiscard]] const std::vector<const Queued*>* ExtrasOf(
        const scheduler::state::WorkloadEntry& entry) const;

    const WorkloadRows& rows_;
    const scheduler::state::WorkloadTable::View& view_;
    // Pods known only from filter calls: of a workload in the table (by its key), and the
    // loose workloads of the others with their order keys, in order.
    std::unordered_map<std::string_view, std::vector<const Queued*>> extras_;
    std::vector<std::string> loose_order_;
    std::vector<WorkloadRow> loose_;
  };

  template <typename Fn>
  decltype(auto) Read(Fn&& fn) const {
    return cluster_.workloads().Read([&](const scheduler::state::WorkloadTable::View& view) {
      const Reader reader(*this, view);
      return fn(reader);
    });
  }

  // Outside Read(): the preemption controller's word on each pending pod (it takes its own
  // lock, which is never taken under the table's).
  static void AddPreemption(WorkloadRow& row,
                            const std::function<std::string(std::string_view uid)>& status);
  // Outside Read(): row.job, when the row's job is suspended (ClusterState::JobOf).
  static void AddSuspension(WorkloadRow& row, const scheduler::state::ClusterState& cluster);

 private:
  // The row of a job taskgov paused, listed while the table has no entry for it.
  [[nodiscard]] WorkloadRow PausedRow(std::shared_ptr<const scheduler::model::JobControl> job,
                                      const scheduler::model::Policy& policy) const;

  const scheduler::ledger::QuotaBook& book_;
  scheduler::state::ClusterState& cluster_;
  std::string instance_type_label_;                 // the policy's
  std::unordered_map<std::string, Queued> queued_;  // the pending pods by uid
  std::vector<WorkloadRow> paused_;                 // PausedRow of each paused job
};

}  // namespace taskgov::extender
