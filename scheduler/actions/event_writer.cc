#include "scheduler/actions/event_writer.h"

#include <string>

#include "scheduler/model/interner.h"
#include "scheduler/model/quantity.h"

namespace taskgov::scheduler::actions {

EventRecord EventWriter::PreemptingEvent(const Round& round, int64_t grace_s) {
  const Freed freed = FreedBy(round);
  const std::string& key = round.preemptor.key;
  const size_t slash = key.find('/');
  EventRecord e;
  e.ns = slash == std::string::npos ? std::string() : key.substr(0, slash);
  e.pod_name = slash == std::string::npos ? key : key.substr(slash + 1);
  e.pod_uid = round.preemptor.uid;
  e.type = "Normal";
  e.reason = "Preempting";
  e.action = "Preempting";
  e.note = std::string("taskgov is ") +
           (freed.reclaim || freed.fair ? "reclaiming" : "preempting") + " " +
           model::FormatQuantity(freed.resource, freed.amount) + " " + freed.resource + " on " +
           model::FlavorNames().Name(round.flavor) + " from ";
  for (size_t i = 0; i < freed.teams.size(); ++i) {
    e.note += (i == 0 ? "" : ", ") + freed.teams[i].first + " (";
    for (size_t j = 0; j < freed.teams[i].second.size(); ++j) {
      e.note += (j == 0 ? "" : ", ") + std::string(decisions::ReasonName(freed.teams[i].second[j]));
    }
    e.note += ")";
  }
  e.note += ": evicting " + PodCount(round.victims.size()) + " with a " + std::to_string(grace_s) +
            "s grace period";
  return e;
}

EventRecord EventWriter::PreemptedEvent(const RoundVictim& victim, int64_t grace_s,
                                        const std::string& paused_job, int64_t now_ms) {
  EventRecord e;
  e.ns = victim.ns;
  e.pod_name = victim.name;
  e.pod_uid = victim.uid;
  e.type = "Normal";
  e.reason = "Preempted";
  e.action = "Preempting";
  e.note = victim.note + " (grace period " + std::to_string(grace_s) + "s)";
  if (victim.checkpoint_ms > 0 && now_ms >= victim.checkpoint_ms) {
    const int64_t lost_s = (now_ms - victim.checkpoint_ms) / 1000;
    e.note += "; loses about " +
              (lost_s < 60 ? std::to_string(lost_s) + " s" : std::to_string(lost_s / 60) + " min") +
              " of work since its last checkpoint";
  }
  if (!paused_job.empty()) {
    e.note += "; its " + paused_job +
              " is suspended, not failed: taskgov resumes it when its quota is free again";
  }
  return e;
}

void EventWriter::RoundStarted(const Round& round, int64_t grace_s) {
  kube_->RecordEvent(PreemptingEvent(round, grace_s));
}

void EventWriter::VictimEvicted(const RoundVictim& victim, int64_t grace_s,
                                const std::string& paused_job, int64_t now_ms) {
  kube_->RecordEvent(PreemptedEvent(victim, grace_s, paused_job, now_ms));
}

}  // namespace taskgov::scheduler::actions
