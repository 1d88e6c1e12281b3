#include "scheduler/sim/workloads.h"

#include <algorithm>

#include "scheduler/common/time_format.h"
#include "scheduler/model/gang.h"
#include "scheduler/model/kept_pod.h"
#include "scheduler/model/pod_identity.h"

namespace taskgov::scheduler::sim {

using model::Pod;
using model::PodPhase;

namespace {

std::string_view Mechanism(const std::string& disruption_target) {
  if (disruption_target == "PreemptionByScheduler") return "kube-scheduler preemption";
  if (disruption_target == "EvictionByEvictionAPI") return "eviction";
  return "other";
}

}  // namespace

Workloads::Workloads(Api* api, EventLoop* loop, Recorder* recorder, const model::Policy& policy,
                     Options options)
    : api_(api), loop_(loop), recorder_(recorder), policy_(policy), options_(std::move(options)) {}

void Workloads::Submit(const TraceJob& spec) {
  Job& job = jobs_[spec.name];
  job.spec = &spec;
  ++unfinished_;
  recorder_->Arrived(spec, loop_->now_ms());
  CreateAttempt(job);
}

Pod Workloads::PodFor(const Job& job, const PodSet& set, int index) const {
  const TraceJob& spec = *job.spec;
  Pod pod;
  pod.namespace_ = spec.ns;
  std::string name = spec.name;
  if (job.attempt > 0) name += "-r" + std::to_string(job.attempt);
  if (spec.kind != JobKind::kPod) name += "-" + std::to_string(index);
  pod.name = name;
  pod.scheduler_name = options_.scheduler_name;
  if (!spec.priority_class.empty()) {
    pod.labels[model::kKueuePriorityLabel] = spec.priority_class;
    if (const model::PriorityClass* pc = policy_.FindPriorityClass(spec.priority_class)) {
      pod.priority = pc->value;
    }
  }
  if (spec.kind == JobKind::kPodGroup) {
    pod.labels[model::kKueuePodGroupKey] = spec.name;
    pod.annotations[model::kKueueTotalCountKey] = std::to_string(spec.pods());
  }
  for (const auto& [k, v] : spec.annotations) pod.annotations[k] = v;
  if (!set.instance_type.empty())
    pod.node_selector[policy_.instance_type_label] = set.instance_type;
  model::Container c;
  c.name = set.name;
  c.requests = set.requests;
  c.limits = set.requests;
  pod.containers.push_back(std::move(c));
  return pod;
}

void Workloads::CreateAttempt(Job& job) {
  job.members.clear();
  job.bound.clear();
  job.running.clear();
  job.gone.clear();
  job.broken = false;
  job.run_start_ms = -1;
  int index = 0;
  for (const PodSet& set : job.spec->pod_sets) {
    for (int i = 0; i < set.count; ++i, ++index) {
      PodTag tag{job.spec->name, job.attempt, index, job.spec->termination_grace_ms};
      const PodObject& created = api_->CreatePod(PodFor(job, set, index), tag);
      job.members.push_back(created.pod.uid);
      job_of_pod_[created.pod.uid] = job.spec->name;
    }
  }
}

void Workloads::OnEvent(const WatchEvent& event) {
  if (event.type == WatchEvent::Type::kNodeUpsert) return;
  Kubelet(event);
  auto owner = job_of_pod_.find(event.pod.uid);
  if (owner == job_of_pod_.end()) return;
  Job& job = jobs_[owner->second];
  if (event.type == WatchEvent::Type::kPodDelete) job_of_pod_.erase(owner);
  Controller(job, event);
}

// ---- the kubelet ----

void Workloads::Kubelet(const WatchEvent& event) {
  if (event.type != WatchEvent::Type::kPodUpsert) return;
  const Pod& pod = event.pod;
  const std::string uid = pod.uid;
  if (pod.deletion_unix_ms) {
    if (stopping_.insert(uid).second) Stop(uid);
    return;
  }
  if (pod.bound() && pod.phase == PodPhase::kPending && starting_.insert(uid).second) {
    loop_->After(options_.start_latency_ms, [this, uid] {
      starting_.erase(uid);
      const PodObject* o = api_->Find(uid);
      if (o && !o->pod.deletion_unix_ms && o->pod.phase == PodPhase::kPending) {
        api_->SetPhase(uid, PodPhase::kRunning);
      }
    });
  }
}

// SIGTERM: the pod exits once it saved its checkpoint, or at the end of its grace period.
void Workloads::Stop(const std::string& uid) {
  const PodObject* o = api_->Find(uid);
  if (o == nullptr) {  // gone already (the event is older than the object)
    stopping_.erase(uid);
    return;
  }
  int64_t exit_in = 0;
  if (o->pod.bound() && o->pod.phase == PodPhase::kRunning) {
    exit_in = std::max<int64_t>(0, o->deletion_grace_ms);
    auto owner = job_of_pod_.find(uid);
    if (owner != job_of_pod_.end()) {
      const TraceJob& spec = *jobs_[owner->second].spec;
      if (spec.save_on_term_ms && *spec.save_on_term_ms < exit_in) exit_in = *spec.save_on_term_ms;
    }
  }
  loop_->After(exit_in, [this, uid] {
    stopping_.erase(uid);
    const PodObject* p = api_->Find(uid);
    if (p == nullptr) return;
    if (p->pod.bound() && !p->pod.terminal()) api_->SetPhase(uid, PodPhase::kFailed);
    api_->Remove(uid);
  });
}

// ---- the job controllers ----

void Workloads::Controller(Job& job, const WatchEvent& event) {
  const Pod& pod = event.pod;
  const std::string& uid = pod.uid;
  if (std::find(job.members.begin(), job.members.end(), uid) == job.members.end()) return;
  if (event.type == WatchEvent::Type::kPodDelete) {
    job.gone.insert(uid);
    job.bound.erase(uid);
    job.running.erase(uid);
    if (!job.complete && job.gone.size() == job.members.size()) {
      ++job.attempt;
      loop_->After(options_.recreate_delay_ms,
                   [this, name = job.spec->name] { CreateAttempt(jobs_[name]); });
    }
    return;
  }
  if (job.complete || job.broken) return;
  if (pod.deletion_unix_ms || pod.phase == PodPhase::kFailed) {
    if (const PodObject* o = api_->Find(uid)) Break(job, *o);
    return;
  }
  if (pod.bound() && job.bound.insert(uid).second && job.bound.size() == job.members.size()) {
    recorder_->AllBound(*job.spec, loop_->now_ms());
  }
  if (pod.phase == PodPhase::kRunning && job.running.insert(uid).second) MaybeStartRunning(job);
}

void Workloads::MaybeStartRunning(Job& job) {
  if (job.running.size() != job.members.size()) return;
  job.run_start_ms = loop_->now_ms();
  const uint64_t epoch = ++job.epoch;
  loop_->After(job.spec->work_ms - job.saved_ms,
               [this, name = job.spec->name, epoch] { Complete(jobs_[name], epoch); });
  const int64_t every = job.spec->checkpoint_every_ms;
  if (job.spec->announces_checkpoints && every > 0) {
    ScheduleCheckpoint(job, epoch, every - job.saved_ms % every);
  }
}

void Workloads::ScheduleCheckpoint(const Job& job, uint64_t epoch, int64_t in_ms) {
  loop_->After(in_ms, [this, name = job.spec->name, epoch] {
    Job& j = jobs_[name];
    if (j.epoch != epoch || j.broken || j.complete) return;
    const std::string now = common::FormatMicroTime(loop_->now_ms() * 1000);
    for (const std::string& uid : j.members) {
      api_->Annotate(uid, model::kLastCheckpointAnnotation, now);
    }
    ScheduleCheckpoint(j, epoch, j.spec->checkpoint_every_ms);
  });
}

void Workloads::Complete(Job& job, uint64_t epoch) {
  if (job.epoch != epoch || job.broken || job.complete) return;
  job.complete = true;
  --unfinished_;
  recorder_->Completed(*job.spec, loop_->now_ms());
  const std::vector<std::string> members = job.members;
  for (const std::string& uid : members) api_->SetPhase(uid, PodPhase::kSucceeded);
  for (const std::string& uid : members) api_->Remove(uid);
}

// The attempt lost pod `lost`: progress back to the last checkpoint (or kept, when the pod's
// grace period lets it save), and the launcher stops the other pods.
void Workloads::Break(Job& job, const PodObject& lost) {
  job.broken = true;
  ++job.epoch;
  const TraceJob& spec = *job.spec;
  int64_t progress = job.saved_ms;
  if (job.run_start_ms >= 0) progress += loop_->now_ms() - job.run_start_ms;
  int64_t saved = job.saved_ms;
  if (job.run_start_ms >= 0 && spec.save_on_term_ms && lost.deletion_grace_ms >= 0 &&
      *spec.save_on_term_ms <= lost.deletion_grace_ms) {
    saved = progress;
  } else if (spec.checkpoint_every_ms > 0) {
    saved = std::max(saved, progress / spec.checkpoint_every_ms * spec.checkpoint_every_ms);
  }
  job.saved_ms = std::min(saved, spec.work_ms);
  job.run_start_ms = -1;
  recorder_->Disrupted(spec, loop_->now_ms(), progress - job.saved_ms,
                       Mechanism(lost.disruption_target));
  const int64_t grace = std::max<int64_t>(0, lost.deletion_grace_ms);
  for (const std::string& uid : job.members) {
    if (uid == lost.pod.uid) continue;
    const PodObject* o = api_->Find(uid);
    if (o == nullptr || o->pod.deletion_unix_ms) continue;
    (void)api_->DeleteGracefully(uid, o->pod.bound() ? grace : 0, "");
  }
}

}  // namespace taskgov::scheduler::sim
