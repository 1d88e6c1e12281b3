#pragma once

// Requeuer: asks kube-scheduler to try again the pods taskgov's filter refused once the refusal
// has lapsed.
//
// kube-scheduler retries a pod its extender refused only on a cluster event: before v1.32 a node
// added or changed, or an assigned pod deleted or finished; from v1.32 a pod bound too. Some
// refusals lapse with no such event — room held for a preemptor that bound elsewhere or timed
// out, a borrower's wait after a disruption, a higher-ranked pod of the team deleted while
// pending, another team's fair-share turn taken — and the pod would wait until some pod ends, or
// 5 minutes (flushUnschedulablePodsLeftover), with the capacity idle. Every scheduling queue
// moves an unschedulable pod whose metadata changed back to its queue (isPodUpdated; with
// QueueingHints, the extender's registration for every event, kubernetes#122022), so each run
// looks at the best-ranked refused pods of every team, judges each (a gang once, by its
// best-ranked refused member) as the filter would now (Admission::OutlookOf: Explain's outlook; a
// pod judged waiting before that no node has room for is still waiting, unexplained), and for those
// the filter would admit sets the annotation taskgov.io/requeued-at on the pod
// (KubeActions::Requeue), every refused member of a gang. Only pods no filter call refused for a
// few seconds are judged (kube-scheduler is not trying them); one judged not admissible is judged
// again, not within two seconds, once its team's queue or flavors changed, or after a while;
// teams take turns at going first. A pod is asked for again only after a gap that doubles each time
// while it stays refused (the filter may still refuse what Explain admits: kube-scheduler's own
// filters), so the API server sees at most a few writes a minute per waiting pod.
//
// Thread-safety: RunOnce calls must be serialised (the leader's controller ticker); Stats may be
// read from any thread.

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <unordered_map>

#include "scheduler/cluster_api.h"
#include "scheduler/common/clock.h"
#include "scheduler/decisions/explanation.h"
#include "scheduler/state/cluster_state.h"

namespace taskgov::scheduler::actions {

class Requeuer {
 public:
  struct Options {
    // The best-ranked refused pods of a team looked at in a run; of them, at most this many
    // workloads judged (Judge), and at most so many in the whole run.
    size_t scanned_per_team = 32;
    size_t judged_per_team = 2;
    size_t judged_per_run = 8;
    // A pod asked for again waits this long, doubled each time, at most max_gap_ms.
    int64_t first_gap_ms = 2'000;
    int64_t max_gap_ms = 60'000;
    // A pod judged not admissible (Judge) is not judged again for recheck_ms, whatever changed;
    // then once its team's queue or its team's flavors changed (PendingQueues::Version,
    // NodeCache::ChangeStamp), else after recheck_ms (what lapses with time alone: a borrower's
    // wait, another team's turn), doubled each time it is judged under the same, at most
    // max_recheck_ms — or never_fits_recheck_ms when no flavor could ever take it. On a busy
    // cluster the flavors change with nearly every bind, and a judgment costs about what a filter
    // call does; what frees room kube-scheduler retries the pod for itself (an assigned pod
    // deleted, a node changed), and what lapses without such an event is seen at most recheck_ms
    // later for it.
    // A pod a filter call refused less than this long ago is not judged: kube-scheduler is
    // trying it itself.
    int64_t quiet_ms = 3'000;
    int64_t recheck_ms = 2'000;
    int64_t max_recheck_ms = 30'000;
    int64_t never_fits_recheck_ms = 60'000;
  };
  // The filter's outlook for `pod` (Admission::OutlookOf); `known_to_wait`: its last judgment here
  // said kWaiting.
  using Judge = std::function<decisions::Outlook(const model::Pod& pod, bool known_to_wait)>;

  Requeuer(state::ClusterState* cluster, KubeActions* kube, Judge judge, const common::Clock* clock,
           Options options);

  struct RunReport {
    size_t refused = 0;  // refused pods looked at
    size_t judged = 0;   // workloads judged
    size_t requeued = 0;
    size_t failed = 0;  // Requeue calls that failed (tried again after the gap)
  };
  RunReport RunOnce();

  struct Stats {
    uint64_t requeued = 0;
    uint64_t failed = 0;
  };
  [[nodiscard]] Stats stats() const {
    return Stats{requeued_.load(std::memory_order_relaxed),
                 failed_.load(std::memory_order_relaxed)};
  }

 private:
  struct Asked {
    int times = 0;
    int64_t next_ms = 0;  // not asked for again before
    // Judged not admissible under (queue version, flavors' stamp), not judged again before
    // recheck_ms unless either moved.
    uint64_t queue_version = 0;
    uint64_t stamp = 0;
    int64_t recheck_ms = 0;
    int64_t recheck_gap_ms = 0;  // the last gap; doubled while the same holds
    bool waiting = false;        // the last judgment said kWaiting
    uint64_t run = 0;            // the last run that looked at it
  };
  // Asks for `pod` (if its gap has passed); returns whether a request was sent.
  bool Ask(const state::PendingPod& pending, int64_t now_ms, RunReport* report);

  state::ClusterState* const cluster_;
  KubeActions* const kube_;
  const Judge judge_;
  const common::Clock* const clock_;
  const Options options_;
  std::unordered_map<std::string, Asked> asked_;  // by pod uid; run state
  uint64_t run_ = 0;                              // runs so far
  size_t first_team_ = 0;                         // the team that goes first next run
  std::atomic<uint64_t> requeued_{0};
  std::atomic<uint64_t> failed_{0};
};

}  // namespace taskgov::scheduler::actions
