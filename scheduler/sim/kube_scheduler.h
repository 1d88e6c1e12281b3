#pragma once

// KubeScheduler: kube-scheduler's part of the simulation, with taskgov as its extender (DESIGN §1,
// §2), played as upstream does it (pkg/scheduler, v1.30):
//  * The queue (internal/queue/scheduling_queue.go): new pods go to activeQ, popped by
//    PrioritySort (spec.priority, then creation). A pod that fails goes to the unschedulable
//    pods and back, to activeQ once its backoff (1 s doubling per attempt, at most 10 s, from its
//    last attempt) has passed, else to the backoffQ, flushed every second, on an event that may
//    help it. By default (`Options::minor` 0) every event on an assigned pod or a node retries
//    every unschedulable pod: more eagerly than any release. A release (`minor` 29 to 35) is
//    played as it requeues: a failed pod remembers what rejected it — the extender on some
//    node, room (NodeResourcesFit), the node selector (NodeAffinity); an error, such as a failed
//    extender call, sends it to the backoffQ instead — and goes back on an event registered by
//    what rejected it (the extender registers every event, kubernetes#122022):
//      - a node added or changed: every pod;
//      - an assigned pod leaving the cache (deleted, or terminal: the scheduler's pod informer
//        lists no Succeeded or Failed pod), or an assumed pod forgotten: pods rejected by the
//        extender or for room;
//      - an assigned pod added (bound) or updated: before v1.32 (no QueueingHints) only pods
//        with affinity terms for it, so none here (AssignedPodAdded); from v1.32 (QueueingHints
//        on by default) pods the extender rejected;
//      - an unschedulable pod updated: before v1.32 that pod, whatever rejected it, if its
//        metadata changed (labels, annotations: taskgov's requeue request; isPodUpdated ignores
//        the status); from v1.32 that pod on any update, its status too, if the extender rejected
//        it (an UpdatePodOther event: only the extender's wildcard registration matches it).
//        kube-scheduler's own PodScheduled condition write after a failure is not played;
//      - from v1.33, a pending pod losing its nomination or nominated to another node, or deleted
//        while nominated: pods of its priority or lower rejected by the extender or for room
//        (kubernetes#129058).
//    From v1.33 a scheduler with activeQ empty pops the backoffQ (SchedulerPopFromBackoffQ), not
//    the pods that failed with an error (podErrorBackoffQ).
//    Pods unschedulable for 5 minutes are retried anyway (flushUnschedulablePodsLeftover, every
//    30 s).
//  * A cycle (schedule_one.go): the nodes that fit — node selector, and allocatable minus the
//    requests of the pods assigned there (terminating ones too) and of the pods nominated there
//    with at least the pod's priority (RunFilterPluginsWithNominatedPods) — go to the extender's
//    filter (nodeCacheCapable: names only); a pod with a nominated node tries that node alone
//    first (evaluateNominatedNode). The feasible nodes are scored: NodeResourcesFit's scoring
//    strategy (node_resources_fit.h; upstream's default LeastAllocated on cpu and memory, 0..100)
//    plus the extender's score × its weight (1) × 10; the best wins (ties: one of them, chosen by a
//    seeded random draw as selectHost's reservoir sampling does). The pod is assumed on that node
//    in the cache at once (the next cycle counts it there), then bound through the extender's bind
//    verb (forgotten if that fails).
//  * PostFilter, DefaultPreemption (framework/preemption/preemption.go), when no node fits or
//    the extender refused some as resolvable (FailedNodes): for each such node, every
//    lower-priority pod there is a potential victim; if the pod fits once they are all gone,
//    victims are reprieved highest priority first while it still fits; nodes with no victims
//    are no candidates. The extender's preempt verb trims the candidates (NodeNameToMetaVictims);
//    the node is picked by fewest PDB violations, lowest highest-victim priority, lowest sum of
//    priorities, fewest victims, latest start of the highest-priority victims, then first. The
//    victims are deleted with their own grace period and the DisruptionTarget condition
//    (PreemptionByScheduler); the preemptor is nominated to the node, and lower-priority pods
//    nominated there lose their nomination. A pod nominated to a node where a lower-priority pod
//    is still terminating does not preempt again (PodEligibleToPreemptOthers).
//
// Not synchronised (the simulator is single-threaded).

#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "scheduler/extender_api.h"
#include "scheduler/sim/api.h"
#include "scheduler/sim/event_loop.h"
#include "scheduler/sim/node_resources_fit.h"

namespace taskgov::scheduler::sim {

class KubeScheduler {
 public:
  // Upstream's defaults; a KubeSchedulerConfiguration sets them (scheduler_config.h).
  struct Options {
    std::string scheduler_name = "taskgov";
    int64_t initial_backoff_ms = 1'000;  // podInitialBackoffSeconds
    int64_t max_backoff_ms = 10'000;     // podMaxBackoffSeconds
    int64_t unschedulable_max_ms = 5 * 60'000;
    bool preempt_verb = true;  // the extender registers a preemptVerb
    // NodeResourcesFit's scoringStrategy in the profile's pluginConfig.
    ScoringStrategy scoring;
    // The extender's weight; 0 when it registers no prioritizeVerb (prioritize is not called).
    int64_t extender_weight = 1;
    // The release played, 1.<minor>, for the queue's requeueing (above); 0: every event
    // retries every pod. The second-scheduler overlay's image is v1.30.
    int minor = 0;
    uint64_t seed = 1;
  };
  static constexpr int kOldestMinor = 29;  // the first with kubernetes#122022 in its .0
  static constexpr int kNewestMinor = 35;
  struct Stats {
    uint64_t attempts = 0;
    uint64_t bound = 0;
    uint64_t refused_by_extender = 0;  // the filter left no feasible node
    uint64_t no_fit = 0;               // no node fits physically
    uint64_t bind_errors = 0;
    uint64_t preemptions = 0;  // PostFilter nominated the pod after deleting victims
    uint64_t preemption_victims = 0;
    uint64_t preemptions_vetoed = 0;  // the extender left no candidate
  };

  KubeScheduler(Api* api, Decider* extender, EventLoop* loop, Options options);

  // Told the outcome of every scheduling attempt: the pod, and "" when bound, else why not.
  void SetAttemptObserver(std::function<void(const model::Pod&, const std::string&)> observer) {
    attempt_observer_ = std::move(observer);
  }
  // Every watch event, after the informers saw it.
  void OnEvent(const WatchEvent& event);
  // Schedules the pods in activeQ, one cycle each, best first; returns how many were tried.
  size_t RunCycles();
  // Whether a cycle would pop a pod now (activeQ, or from v1.33 the backoffQ).
  [[nodiscard]] bool has_active() const {
    return !active_.empty() || (options_.minor >= 33 && !backoff_.empty());
  }
  [[nodiscard]] const Stats& stats() const { return stats_; }
  // Free room on every node, as the scheduler's cache sees it (allocatable minus the requests of
  // the pods assigned there, terminating ones included).
  [[nodiscard]] std::map<std::string, model::ResourceList> FreeByNode() const;

 private:
  struct QueuedPod {
    std::string uid;
    int32_t priority = 0;
    int64_t created_ms = 0;
    int attempts = 0;
    int64_t last_attempt_ms = 0;
    int64_t unschedulable_since_ms = 0;
    uint8_t rejected_by = 0;  // at its last failure: Rejector bits (0: an error)
    // The verbs' arguments for the pod as its last cycle saw it (their pod a copy of that
    // version, kept while its resourceVersion stays), and which nodes its node selector
    // accepts (by index in Api::nodes()).
    FilterArgs filter_args;
    PreemptArgs preempt_args;
    std::vector<uint8_t> selects;
    // Its metadata as the last watch event showed it: an update that changes it is what
    // isPodUpdated sees (the status aside).
    model::Labels labels;
    model::Labels annotations;
  };
  // activeQ's order: (−priority, created, uid); the backoffQ's: (end of backoff, uid).
  struct ActiveOrder {
    bool operator()(const QueuedPod* a, const QueuedPod* b) const {
      return std::tie(b->priority, a->created_ms, a->uid) <
             std::tie(a->priority, b->created_ms, b->uid);
    }
  };
  using BackoffKey = std::pair<int64_t, QueuedPod*>;
  struct BackoffOrder {
    bool operator()(const BackoffKey& a, const BackoffKey& b) const {
      return std::tie(a.first, a.second->uid) < std::tie(b.first, b.second->uid);
    }
  };
  struct UidOrder {
    bool operator()(const QueuedPod* a, const QueuedPod* b) const { return a->uid < b->uid; }
  };

  // The cache: a pod counted on a node (assumed by a cycle, or seen bound), and no more.
  void Assume(const std::string& uid, const std::string& node, const model::ResourceList& request,
              int32_t priority);
  void Forget(const std::string& uid);
  void Enqueue(const std::string& uid, const model::Pod& pod);
  // A watch event on a queued pod: an unschedulable pod updated may go back (above;
  // updatePodInSchedulingQueue).
  void Updated(QueuedPod* q, const model::Pod& pod);
  // `bound`: it leaves the queue because it was bound, not deleted.
  void Dequeue(const std::string& uid, bool bound);
  void ToActive(QueuedPod* q);
  // To activeQ when its backoff has passed, else to the backoffQ.
  void ToActiveOrBackoff(QueuedPod* q);
  // What rejected a pod on some node, and the cluster events the queue tells apart.
  enum Rejector : uint8_t { kByExtender = 1, kByRoom = 2, kBySelector = 4 };
  enum class Event { kNodeChanged, kRoomFreed, kAssignedPodChanged, kNominationLost };
  [[nodiscard]] bool WorthRetry(const QueuedPod& q, Event event) const;
  // Moves the unschedulable pods `event` may help, none above `up_to_priority`.
  void MoveAllToActiveOrBackoff(Event event,
                                int32_t up_to_priority = std::numeric_limits<int32_t>::max());
  void FlushBackoff();
  void FlushUnschedulableLeftover();
  void ScheduleFlushes();
  [[nodiscard]] int64_t BackoffEnd(const QueuedPod& q) const;
  // `rejected_by`: Rejector bits; 0 for an error (the pod goes to the backoffQ).
  void Failed(QueuedPod* q, uint8_t rejected_by);

  // One scheduling cycle.
  void ScheduleOne(QueuedPod* q);
  // Brings `q`'s copy of the pod (and what is derived from it) up to `pod`'s version.
  void Refresh(const PodObject& pod, QueuedPod* q) const;
  // The nodes (indices in Api::nodes()) among `among` that fit `pod`; those that do not for
  // lack of room are appended to `resolvable` (when given).
  [[nodiscard]] std::vector<size_t> NodesThatFit(const PodObject& pod, const QueuedPod& q,
                                                 const std::vector<size_t>& among,
                                                 std::vector<size_t>* resolvable) const;
  [[nodiscard]] bool Fits(const PodObject& pod, const model::Node& node,
                          const model::ResourceList& extra_free) const;
  [[nodiscard]] const model::ResourceList& Used(const std::string& node) const;
  [[nodiscard]] model::ResourceList NominatedOn(const std::string& node, int32_t priority,
                                                const std::string& except) const;
  [[nodiscard]] std::string SelectHost(const PodObject& pod, const FilterArgs& args,
                                       const std::vector<std::string>& feasible);
  // DefaultPreemption over `candidates` (indices in Api::nodes(), in name order); true when it
  // nominated the pod.
  bool PostFilter(const PodObject& pod, QueuedPod* q, const std::vector<size_t>& candidates);
  [[nodiscard]] std::vector<const PodObject*> VictimsOn(const PodObject& pod,
                                                        const model::Node& node) const;
  // Forgets `uid`'s nomination; returns the node it was nominated to ("" if none).
  std::string ClearNomination(const std::string& uid);
  // The pod's nomination is cleared (a status update): the room it held goes to the pods of its
  // priority or lower (hasNominatedNodeNameChanged: an AssignedPodDelete for them).
  void LoseNomination(const model::Pod& pod);
  void PrepareCandidate(const PodObject& pod, const std::string& node, const Victims& victims);

  Api* const api_;
  Decider* const extender_;
  EventLoop* const loop_;
  const Options options_;
  std::mt19937_64 rng_;
  Stats stats_;
  std::function<void(const model::Pod&, const std::string&)> attempt_observer_;

  std::unordered_map<std::string, QueuedPod> queued_;  // pending pods of this scheduler, by uid
  // The queued pods (in queued_, whose nodes do not move) by where they are: activeQ in pop
  // order, the backoffQ by the end of their backoff (fixed while they are there), the
  // unschedulable pods.
  std::set<QueuedPod*, ActiveOrder> active_;
  std::set<BackoffKey, BackoffOrder> backoff_;
  // Pods that failed with an error wait out their backoff here (podErrorBackoffQ): an idle
  // scheduler does not pop them (v1.33), or a failing extender would be called in a loop.
  std::set<BackoffKey, BackoffOrder> error_backoff_;
  std::set<QueuedPod*, UidOrder> unschedulable_;
  bool flushes_scheduled_ = false;
  // The scheduler's cache: pods counted on each node (bound, not terminal, not gone).
  struct Counted {
    std::string node;
    model::ResourceList request;
    int32_t priority = 0;
  };
  std::unordered_map<std::string, Counted> counted_;      // by uid
  std::map<std::string, model::ResourceList> used_;       // node → requests
  std::map<std::string, std::set<std::string>> pods_on_;  // node → uids
  // node → the priorities of its pods: a node without a pod of lower priority than a
  // preemptor's offers it no victim, told without looking at its pods.
  std::map<std::string, std::multiset<int32_t>> priorities_on_;
  std::map<std::string, std::set<std::string>> nominated_;  // node → pending uids nominated
};

}  // namespace taskgov::scheduler::sim
