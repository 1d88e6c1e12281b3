#pragma once

// EventWriter: the events the preemption controller records (DESIGN §4: a reason on the pod),
// through KubeActions::RecordEvent (best effort: KubeActions counts and logs failures).
//  * Preempting, on the preemptor when its round starts — kube-scheduler's own filters refuse it
//    while the nodes are full, so the filter's refusal reason alone would not reach the user:
//    "taskgov is reclaiming 4 nvidia.com/gpu on ml.p5.48xlarge from team-a (Reclaim): evicting 2
//    pods with a 120s grace period" ("preempting" when no victim is taken by Reclaim or
//    FairShare; every team in victim order with its reasons).
//  * Preempted, on each victim the API server agreed to evict: the victim's note (why it goes,
//    for whom: Selection::Victim::note) and the grace period,
//    "Reclaim: team-b reclaims ... (grace period 120s)".
// Both are Normal events with action Preempting. The texts are pure functions of the round.
//
// Thread-safety: as thread-safe as the KubeActions (which is).

#include <cstdint>

#include "scheduler/actions/round.h"
#include "scheduler/cluster_api.h"

namespace taskgov::scheduler::actions {

class EventWriter {
 public:
  // `kube` outlives the writer.
  explicit EventWriter(KubeActions* kube) : kube_(kube) {}

  // The events, as values.
  [[nodiscard]] static EventRecord PreemptingEvent(const Round& round, int64_t grace_s);
  // With a checkpoint (RoundVictim::checkpoint_ms), the note says the work lost since it, at
  // `now_ms`.
  [[nodiscard]] static EventRecord PreemptedEvent(const RoundVictim& victim, int64_t grace_s,
                                                  const std::string& paused_job = "",
                                                  int64_t now_ms = 0);

  // Records them.
  void RoundStarted(const Round& round, int64_t grace_s);
  void VictimEvicted(const RoundVictim& victim, int64_t grace_s, const std::string& paused_job = "",
                     int64_t now_ms = 0);

 private:
  KubeActions* const kube_;
};

}  // namespace taskgov::scheduler::actions
