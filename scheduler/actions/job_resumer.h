#pragma once

// JobResumer: resumes the jobs taskgov paused (issue 35). A preemption or reclaim whose victims
// belong to a pausable job suspends the job (PreemptionController::Stop) and records who, why
// and when in its annotations (model/job_control.h); the job then waits as a queued workload.
// Each RunOnce looks at the paused jobs (ClusterState::PausedJobs, rebuilt from the annotations
// by the informers after a restart or a failover), best-ranked first — its pods' priority when
// suspended, then its creation (it keeps its place) — and unsuspends the first whose whole
// demand the filter would admit now (Admission::Explain on a pod of its template, with its
// gang's declared size: quota with borrowing limits and the cohort's pool, queue order, fair
// share) and whose every pod finds room on the nodes of a flavor the filter would admit it on
// (decisions/gang_room.h), clearing taskgov's annotations but the suspension count. One job per
// run: the next one is judged once the first one's pods count.
//
// A job suspended N times waits at least base·2^(N-1) (at most max_backoff) after its last
// suspension before it is resumed: no pause/resume ping-pong. A job suspended by anyone else
// (no taskgov annotation) is never resumed; one that someone else resumed loses the annotation.
//
// Thread-safety: RunOnce calls must be serialised (the leader's controller ticker).

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>

#include "scheduler/cluster_api.h"
#include "scheduler/common/clock.h"
#include "scheduler/decisions/explanation.h"
#include "scheduler/model/job_control.h"
#include "scheduler/state/cluster_state.h"

namespace taskgov::scheduler::actions {

class JobResumer {
 public:
  struct Options {
    int64_t base_backoff_ms = 5'000;
    int64_t max_backoff_ms = 600'000;
    // At most this many paused jobs are judged (Admission::Explain) a run; a job judged not
    // admissible is judged again only once something it depends on changed (the policy, its
    // team's flavors, any team's queue) or after rejudge_after_ms.
    size_t max_judged_per_run = 16;
    int64_t rejudge_after_ms = 60'000;
  };
  using Explainer = std::function<decisions::Explanation(const model::Pod& pod)>;
  // Reserves the whole gang's need for the job's pods before it is resumed
  // (Admission::ReserveForGang); false: nothing reserved, the job is not resumed now.
  using Reserver = std::function<bool(const model::Pod& stand_in)>;

  // Without `reserve`, a job is resumed on the explanation alone.
  JobResumer(state::ClusterState* cluster, KubeActions* kube, Explainer explain,
             const common::Clock* clock, Options options, Reserver reserve = nullptr);

  struct RunReport {
    size_t paused = 0;     // jobs waiting to be resumed
    size_t waiting = 0;    // of which still backed off
    size_t judged = 0;     // of which judged this run
    size_t unchanged = 0;  // of which not judged: nothing they depend on changed
    size_t no_room = 0;    // of which judged admissible but without node room for every pod
    std::string resumed;   // the job resumed ("Job ns/name"), "" if none
  };
  RunReport RunOnce();

  // When a job suspended `suspensions` times at `suspended_at_ms` may be resumed.
  [[nodiscard]] int64_t ResumableAt(int64_t suspended_at_ms, int64_t suspensions) const;
  // The pod Explain judges for `job`: its first pod set's template, named after the job, owned
  // by it (so its gang is the job's), created when the job was, at its suspended priority.
  [[nodiscard]] static model::Pod Representative(const model::JobControl& job);
  // Whether every pod of `job` finds room at `now_ms` on the nodes of a flavor `explanation`
  // admits it on.
  [[nodiscard]] bool RoomForAll(const model::JobControl& job,
                                const decisions::Explanation& explanation, int64_t now_ms) const;
  // Some flavor of `explanation` would take it, but for room for all its pods at once.
  [[nodiscard]] static bool OnlyRoomLacks(const decisions::Explanation& explanation);

 private:
  // What a job was last judged not admissible under.
  struct Judged {
    const model::Policy* policy = nullptr;
    uint64_t flavors = 0;  // NodeCache::ChangeStamp of its team's flavors
    uint64_t queues = 0;   // PendingQueues::Version of its team
    int64_t at_ms = 0;
    [[nodiscard]] bool Same(const Judged& now, int64_t max_age_ms) const {
      return policy == now.policy && flavors == now.flavors && queues == now.queues &&
             now.at_ms - at_ms < max_age_ms;
    }
  };

  state::ClusterState* const cluster_;
  KubeActions* const kube_;
  const Explainer explain_;
  const Reserver reserve_;
  const common::Clock* const clock_;
  const Options options_;
  std::unordered_map<std::string, Judged> judged_;  // by workload; run state
};

}  // namespace taskgov::scheduler::actions
