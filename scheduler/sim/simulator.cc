#include "scheduler/sim/simulator.h"

#include <chrono>
#include <limits>
#include <memory>
#include <set>

#include "scheduler/actions/requeuer.h"
#include "scheduler/decisions/admission.h"
#include "scheduler/ledger/quota_book.h"
#include "scheduler/state/cluster_state.h"
#include "scheduler/state/idle_sharing.h"
#include "scheduler/state/reconciler.h"

namespace taskgov::scheduler::sim {
namespace {

// Unix ms of the simulation's start: 2026-01-05T00:00:00Z (a Monday).
constexpr int64_t kStartMs = 1'767'571'200'000;

// The process's Ticker on virtual time: a call one period after the previous call, or
// `min_gap` after the later of the first poke since and the previous call, whichever is first
// (extender/ticker.h).
class VirtualTicker {
 public:
  VirtualTicker(EventLoop* loop, int64_t period_ms, int64_t min_gap_ms, std::function<void()> call)
      : loop_(loop), period_(period_ms), gap_(min_gap_ms), call_(std::move(call)) {
    last_ = loop_->now_ms();
    Arm();
  }
  void Poke() {
    if (poked_at_ >= 0) return;
    poked_at_ = loop_->now_ms();
    Arm();
  }

 private:
  void Arm() {
    int64_t due = last_ + period_;
    if (poked_at_ >= 0) due = std::min(due, std::max(poked_at_ + gap_, last_ + gap_));
    if (due == armed_at_) return;
    armed_at_ = due;
    const uint64_t token = ++token_;
    loop_->At(due, [this, token] {
      if (token != token_) return;
      poked_at_ = -1;
      armed_at_ = -1;
      call_();
      last_ = loop_->now_ms();
      Arm();
    });
  }

  EventLoop* const loop_;
  const int64_t period_;
  const int64_t gap_;
  const std::function<void()> call_;
  int64_t last_ = 0;
  int64_t poked_at_ = -1;
  int64_t armed_at_ = -1;
  uint64_t token_ = 0;
};

// The extender's verbs with the filter's pending-queue notes applied before the next decision
// (in the process the queues' applier thread applies them microseconds later).
class FlushingDecider final : public Decider {
 public:
  FlushingDecider(decisions::Admission* admission, state::ClusterState* cluster)
      : admission_(admission), cluster_(cluster) {}
  FilterResult Filter(const FilterArgs& args) override {
    FilterResult r = admission_->Filter(args);
    cluster_->pending().Flush();
    ++filters_;
    return r;
  }
  std::vector<HostPriority> Prioritize(const FilterArgs& args) override {
    return admission_->Prioritize(args);
  }
  PreemptResult Preempt(const PreemptArgs& args) override {
    PreemptResult r = admission_->Preempt(args);
    ++preempts_;
    for (const auto& [node, victims] : r.node_to_victims) approved_ += victims.pods.size();
    return r;
  }
  BindResult Bind(const BindArgs& args) override { return admission_->Bind(args); }

  uint64_t filters_ = 0;
  uint64_t preempts_ = 0;
  uint64_t approved_ = 0;

 private:
  decisions::Admission* const admission_;
  state::ClusterState* const cluster_;
};

model::Node NodeOf(const NodeGroup& group, int index, const std::string& instance_type_label) {
  model::Node node;
  node.name = group.name_prefix + "-" + std::to_string(index);
  for (const auto& [k, v] : group.labels) node.labels[k] = v;
  node.labels["kubernetes.io/hostname"] = node.name;
  node.labels[instance_type_label] = group.instance_type;
  node.allocatable = group.allocatable;
  node.capacity = group.allocatable;
  return node;
}

// One run: the cluster, the extender and the players, wired.
class Run {
 public:
  Run(const model::PolicyPtr& policy, const Trace& trace, const SimulationOptions& options)
      : policy_(policy),
        trace_(trace),
        options_(options),
        clock_(kStartMs),
        loop_(&clock_),
        api_(&clock_),
        book_(policy, &clock_),
        cluster_(&book_, &clock_, ClusterOptions(options)),
        admission_(&book_, &cluster_, &api_, &clock_, decisions::Admission::Options{}),
        idle_sharing_(
            &cluster_.nodes(), &clock_,
            [this](const model::PolicyPtr& effective) { admission_.ApplyPolicy(effective); },
            state::IdleSharing::Options{}),
        controller_(&book_, &cluster_, &api_, &clock_, options.controller),
        requeuer_(
            &cluster_, &api_,
            [this](const model::Pod& pod, bool known_to_wait) {
              return admission_.OutlookOf(pod, known_to_wait);
            },
            &clock_, actions::Requeuer::Options{}),
        reconciler_(&book_, &cluster_, &clock_, state::Reconciler::Options{}),
        decider_(&admission_, &cluster_),
        recorder_(*policy, trace, &api_),
        scheduler_(&api_, &decider_, &loop_, SchedulerOptions(options)),
        workloads_(&api_, &loop_, &recorder_, *policy, options.workloads) {}

  Report Play() {
    const auto wall_start = std::chrono::steady_clock::now();
    Wire();
    Load();
    int64_t last_arrival = kStartMs;
    for (const TraceJob& job : trace_.jobs) {
      last_arrival = std::max(last_arrival, kStartMs + job.arrival_ms);
      loop_.At(kStartMs + job.arrival_ms, [this, &job] {
        workloads_.Submit(job);
        ++arrived_;
      });
    }
    const int64_t deadline = last_arrival + options_.horizon_after_last_arrival_ms;
    int64_t next = 0;
    while (!(arrived_ == trace_.jobs.size() && workloads_.unfinished() == 0) && loop_.Next(&next) &&
           next <= deadline) {
      loop_.RunNext();
      Settle();
      if (options_.after_step) options_.after_step(api_, clock_.NowMs());
    }
    Report report = recorder_.Finish(clock_.NowMs());
    report.label = options_.label;
    report.jobs = static_cast<int>(trace_.jobs.size());
    report.simulated_s = (clock_.NowMs() - kStartMs) / 1000.0;
    report.wall_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
    Count(&report);
    return report;
  }

 private:
  static state::ClusterState::Options ClusterOptions(const SimulationOptions& o) {
    state::ClusterState::Options c;
    c.scheduler_name = o.scheduler.scheduler_name;
    return c;
  }
  static KubeScheduler::Options SchedulerOptions(const SimulationOptions& o) {
    KubeScheduler::Options s = o.scheduler;
    s.seed = o.seed;
    return s;
  }

  void Wire() {
    // No applier thread: FlushingDecider applies the filter's notes on this thread, at once.
    cluster_.pending().Stop();
    // The policy in force, with the nodes' unallocated capacity under IdleResourceSharing, as
    // the extender applies it (housekeeping follows the nodes).
    idle_sharing_.SetPolicy(policy_);
    admission_.SetPreemptionStatus(
        [this](std::string_view uid) { return controller_.StatusFor(uid); });
    admission_.SetPreemptorState([this](std::string_view uid) { return controller_.StateOf(uid); });
    preemption_loop_ = std::make_unique<VirtualTicker>(&loop_, options_.tick_ms,
                                                       options_.preemption_min_gap_ms, [this] {
                                                         (void)controller_.RunOnce();
                                                         if (options_.requeue)
                                                           (void)requeuer_.RunOnce();
                                                       });
    housekeeping_ = std::make_unique<VirtualTicker>(&loop_, options_.tick_ms, 0, [this] {
      (void)idle_sharing_.Refresh();
      reconciler_.Tick();
    });
    sampler_ = std::make_unique<VirtualTicker>(&loop_, options_.tick_ms, 0, [this] {
      recorder_.Sample(clock_.NowMs(), scheduler_.FreeByNode());
    });
    if (options_.timeline != nullptr) {
      recorder_.SetStrandedObserver([this](const std::string& note) { Line() << note << "\n"; });
    }
    if (options_.timeline != nullptr || options_.on_event) {
      api_.SetEventObserver([this](const EventRecord& e) {
        if (options_.on_event) options_.on_event(e, api_);
        if (options_.timeline == nullptr) return;
        Line() << "event " << e.reason << " " << e.ns << "/" << e.pod_name << ": " << e.note
               << "\n";
      });
    }
    if (options_.timeline != nullptr) {
      scheduler_.SetAttemptObserver([this](const model::Pod& pod, const std::string& outcome) {
        std::string& last = last_outcome_[pod.uid];
        if (outcome == last) return;
        last = outcome;
        if (!outcome.empty()) Line() << "attempt " << pod.key() << ": " << outcome << "\n";
      });
    }
    cluster_.SetPodWaitingObserver([this] { poke_ = true; });
    cluster_.SetPodGoneObserver([this](std::string_view uid) {
      if (controller_.OnPodGone(uid)) poke_ = true;
    });
  }

  void Load() {
    for (const NodeGroup& group : trace_.nodes) {
      for (int i = 0; i < group.count; ++i) {
        api_.AddNode(NodeOf(group, i, policy_->instance_type_label));
      }
    }
    std::set<std::string> namespaces;
    for (const TraceJob& job : trace_.jobs) namespaces.insert(job.ns);
    for (const std::string& ns : namespaces) cluster_.OnNamespaceUpsert(ns, {});
    for (ObjectKind kind :
         {ObjectKind::kPod, ObjectKind::kNode, ObjectKind::kNamespace, ObjectKind::kLocalQueue,
          ObjectKind::kPodGroup, ObjectKind::kJob, ObjectKind::kJobSet, ObjectKind::kPyTorchJob,
          ObjectKind::kTFJob, ObjectKind::kMPIJob, ObjectKind::kXGBoostJob, ObjectKind::kPaddleJob,
          ObjectKind::kJAXJob, ObjectKind::kRayCluster, ObjectKind::kRayJob}) {
      cluster_.OnSynced(kind);
    }
    Settle();
    (void)idle_sharing_.Refresh();  // the trace's nodes are in: no job arrives before
  }

  // Delivers the watch events of what just happened and lets kube-scheduler run, until nothing
  // is left to do at this instant.
  void Settle() {
    while (true) {
      std::deque<WatchEvent> events = api_.TakeEvents();
      if (events.empty()) {
        if (!scheduler_.has_active()) break;
        (void)scheduler_.RunCycles();
        continue;
      }
      for (const WatchEvent& e : events) Deliver(e);
    }
    if (poke_) {
      poke_ = false;
      preemption_loop_->Poke();
    }
  }

  std::ostream& Line() {
    char t[32];
    snprintf(t, sizeof(t), "%10.3f ", (clock_.NowMs() - kStartMs) / 1000.0);
    return *options_.timeline << t;
  }

  void Log(const WatchEvent& e) {
    const model::Pod& p = e.pod;
    if (e.type == WatchEvent::Type::kPodDelete) {
      Line() << "gone " << p.key() << "\n";
    } else if (e.type == WatchEvent::Type::kPodUpsert) {
      const char* phase[] = {"Pending", "Running", "Succeeded", "Failed", "Unknown"};
      Line() << "pod " << p.key() << " " << phase[static_cast<int>(p.phase)]
             << (p.node_name.empty() ? "" : " on " + p.node_name)
             << (p.deletion_unix_ms ? " deleting" : "") << "\n";
    }
  }

  void Deliver(const WatchEvent& e) {
    if (options_.timeline != nullptr) Log(e);
    switch (e.type) {
      case WatchEvent::Type::kNodeUpsert:
        cluster_.OnNodeUpsert(e.node);
        break;
      case WatchEvent::Type::kPodUpsert:
        cluster_.OnPodUpsert(e.pod);
        break;
      case WatchEvent::Type::kPodDelete:
        cluster_.OnPodDelete(e.pod);
        break;
    }
    recorder_.OnEvent(e, clock_.NowMs());
    scheduler_.OnEvent(e);
    workloads_.OnEvent(e);
  }

  void Count(Report* report) const {
    const KubeScheduler::Stats& s = scheduler_.stats();
    std::map<std::string, uint64_t>& c = report->counters;
    c["kube-scheduler: scheduling attempts"] = s.attempts;
    c["kube-scheduler: pods bound"] = s.bound;
    c["kube-scheduler: preemptions (victims)"] = s.preemption_victims;
    c["extender: filter calls"] = decider_.filters_;
    c["extender: preempt calls"] = decider_.preempts_;
    c["extender: victims approved by the preempt verb"] = decider_.approved_;
    const actions::PreemptionStats p = controller_.Stats();
    c["controller: rounds started"] = p.rounds_started;
    c["controller: rounds succeeded"] = p.rounds_succeeded;
    c["controller: rounds abandoned"] = p.rounds_abandoned;
    c["controller: gang timeout evictions"] = p.gang_timeout_evictions;
    c["controller: drains"] = p.drains;
    c["extender: pods requeued (refusal lapsed)"] = api_.counts().requeues;
    c["events/loop actions"] = loop_.ran();
  }

  const model::PolicyPtr policy_;
  const Trace& trace_;
  const SimulationOptions options_;
  common::FakeClock clock_;
  EventLoop loop_;
  Api api_;
  ledger::QuotaBook book_;
  state::ClusterState cluster_;
  decisions::Admission admission_;
  state::IdleSharing idle_sharing_;
  actions::PreemptionController controller_;
  actions::Requeuer requeuer_;
  state::Reconciler reconciler_;
  FlushingDecider decider_;
  Recorder recorder_;
  KubeScheduler scheduler_;
  Workloads workloads_;
  std::unique_ptr<VirtualTicker> preemption_loop_;
  std::unique_ptr<VirtualTicker> housekeeping_;
  std::unique_ptr<VirtualTicker> sampler_;
  size_t arrived_ = 0;
  bool poke_ = false;
  std::map<std::string, std::string> last_outcome_;  // the timeline's, by pod uid
};

}  // namespace

Report Simulate(const model::PolicyPtr& policy, const Trace& trace,
                const SimulationOptions& options) {
  Run run(policy, trace, options);
  return run.Play();
}

}  // namespace taskgov::scheduler::sim
