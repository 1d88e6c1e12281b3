#pragma once

// A scripted cluster state for metrics tests: a policy of three teams (two in cohort
// "research", one HyperPod-style team without a cohort), reservations in a QuotaBook, pending
// pods in a ClusterState, the ledger's Reconciler, what the informers and the preemption
// controller report (fakes), a fake clock, and a Metrics object wired to them and fed a fixed
// sequence of events. Every number in its exposition is known (see the comments). Test support.
// Thread-safety: the Note* and SetPreempted methods may be called while another thread renders.
//
//   team-a (research; weight 1; cluster queue "team-a"): ml.p5.48xlarge
//       nvidia.com/gpu nominal 16, borrowing limit 8, lending unlimited — 4 bound
//       cpu nominal 192 cores — 48 cores bound;  memory nominal 2Ti — 512Gi bound
//   team-b (research; weight 2): ml.p5.48xlarge nvidia.com/gpu nominal 16, lending limit 8,
//       borrowing unlimited — 24 bound (8 borrowed); 2 pending pods
//   ml (no cohort; cluster queue "hyperpod-ns-ml-clusterqueue"): ml.trn1.32xlarge
//       aws.amazon.com/neurondevice nominal 16, borrowing limit 0, lending limit 0 — 12 bound
//       and 4 assumed
// In cohort research the borrowed total on gpus is 8 (team-b); team-a leaves 12 of its
// lendable 16 idle and team-b none, so team-a lends 8.
// Preemptions: team-a reclaimed one pod of team-b by evicting it and two by pausing their job
// (issue 35), which is still paused.

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "metrics/metrics.h"
#include "scheduler/common/clock.h"
#include "scheduler/decisions/admission.h"
#include "scheduler/ledger/quota_book.h"
#include "scheduler/model/interner.h"
#include "scheduler/state/cluster_state.h"
#include "scheduler/state/reconciler.h"
#include "scheduler/testing/builders.h"

namespace taskgov::metrics::testing {

inline constexpr int64_t kStartMs = 1'700'000'000'000;
inline constexpr int64_t kGi = int64_t{1} << 30;

inline scheduler::model::PolicyPtr ScenarioPolicy(bool with_team_b = true) {
  using scheduler::model::kUnlimited;
  scheduler::testing::PolicyBuilder b;
  b.Team("team-a", "research")
      .Quota("ml.p5.48xlarge", "nvidia.com/gpu", 16, 8)
      .Quota("ml.p5.48xlarge", "cpu", 192'000)
      .Quota("ml.p5.48xlarge", "memory", 2048 * kGi);
  if (with_team_b) {
    b.Team("team-b", "research")
        .Weight(2)
        .Quota("ml.p5.48xlarge", "nvidia.com/gpu", 16, kUnlimited, 8);
  }
  b.Team("ml").Quota("ml.trn1.32xlarge", "aws.amazon.com/neurondevice", 16, 0, 0);
  b.PriorityClass("training", 50).PriorityClass("inference", 100);
  b.mutable_policy().teams.back().cluster_queue = "hyperpod-ns-ml-clusterqueue";
  return b.Build();
}

inline scheduler::model::NameId TeamId(const std::string& name) {
  return scheduler::model::TeamNames().Intern(name);
}
inline scheduler::model::NameId FlavorId(const std::string& name) {
  return scheduler::model::FlavorNames().Intern(name);
}

struct Scenario {
  explicit Scenario(bool kueue_compatible = true)
      : clock(kStartMs),
        book(ScenarioPolicy(), &clock),
        cluster(&book, &clock, scheduler::state::ClusterState::Options{}),
        reconciler(&book, &cluster, &clock, scheduler::state::Reconciler::Options{}) {
    cluster.SetPolicy(book.ledger().policy());
    Options options;
    options.kueue_compatible = kueue_compatible;
    options.build = BuildInfo{"1.2.3", "abc123"};
    options.clock = &clock;
    metrics = std::make_unique<Metrics>(options);
    Sources sources;
    sources.book = &book;
    sources.cluster = &cluster;
    sources.reconciler = &reconciler;
    sources.informers = [this] {
      std::lock_guard<std::mutex> lock(fakes_mu);
      return informers;
    };
    sources.preemptions = [this] {
      std::lock_guard<std::mutex> lock(fakes_mu);
      return preemptions;
    };
    sources.paused_workloads = [this] {
      std::lock_guard<std::mutex> lock(fakes_mu);
      return paused_workloads;
    };
    metrics->SetSources(sources);
  }

  void Bind(const std::string& uid, const std::string& team, const std::string& flavor,
            const scheduler::model::ResourceList& request) {
    book.ConfirmBound(uid, TeamId(team), FlavorId(flavor), request, scheduler::ledger::PodMeta{});
  }

  // The state described in the header comment, and one of each event.
  void Script() {
    using scheduler::model::ResourceList;
    Bind("a-1", "team-a", "ml.p5.48xlarge",
         ResourceList{{"nvidia.com/gpu", 4}, {"cpu", 48'000}, {"memory", 512 * kGi}});
    Bind("b-1", "team-b", "ml.p5.48xlarge", ResourceList{{"nvidia.com/gpu", 16}});
    Bind("b-2", "team-b", "ml.p5.48xlarge", ResourceList{{"nvidia.com/gpu", 8}});
    Bind("ml-1", "ml", "ml.trn1.32xlarge", ResourceList{{"aws.amazon.com/neurondevice", 12}});
    (void)book.Assume("ml-2", TeamId("ml"), FlavorId("ml.trn1.32xlarge"),
                      ResourceList{{"aws.amazon.com/neurondevice", 4}},
                      scheduler::ledger::Ledger::Mode::kWithinNominal, 30'000,
                      scheduler::ledger::PodMeta{});
    for (const char* name : {"b-3", "b-4"}) {
      cluster.pending().NoteRefused(scheduler::state::PendingPodOf(
          scheduler::testing::PodBuilder(name).Namespace("ns-team-b").Gpus(8), TeamId("team-b"), 0,
          ResourceList{{"nvidia.com/gpu", 8}}, scheduler::model::WorkloadRef{}));
    }
    SetPreempted("team-a", 1);

    scheduler::decisions::FilterDecision admitted;
    admitted.team = TeamId("team-b");
    admitted.flavor = FlavorId("ml.p5.48xlarge");
    admitted.admitted = true;
    admitted.borrowing = true;
    admitted.priority_class = "training";
    metrics->ObserveFilter(admitted);
    admitted.team = TeamId("team-a");
    admitted.borrowing = false;
    metrics->ObserveFilter(admitted);
    metrics->ObserveFilter(admitted);
    scheduler::decisions::FilterDecision refused;
    refused.team = TeamId("team-b");
    refused.reason = "pool";
    metrics->ObserveFilter(refused);
    refused.reason = "fair_share";
    metrics->ObserveFilter(refused);
    scheduler::decisions::FilterDecision not_ready;
    not_ready.reason = "not_ready";
    metrics->ObserveFilter(not_ready);

    metrics->ObserveRequest("/filter", true, 200, true, "", std::chrono::microseconds(180));
    metrics->ObserveRequest("/filter", true, 200, true, "", std::chrono::microseconds(700));
    metrics->ObserveRequest("/bind", true, 200, true, "", std::chrono::milliseconds(12));
    metrics->ObserveRequest("/nope", false, 404, true, "", std::chrono::microseconds(40));
    metrics->ObserveRequest("/prioritize", true, 400, true, "", std::chrono::microseconds(90));

    metrics->ObservePodBound(TeamId("team-a"), "training", kStartMs - 90'000, kStartMs);
    metrics->ObservePodBound(TeamId("team-b"), "inference", kStartMs - 4'000, kStartMs);
    metrics->ObservePodEnded(TeamId("team-b"), "inference", kStartMs - 7'200'000, kStartMs);
    NotePreemption("team-a", "team-b", scheduler::decisions::PreemptionReason::kReclaim);
    NotePause("team-a", "team-b", scheduler::decisions::PreemptionReason::kReclaim, 2);
    SetPausedWorkloads("team-b", 1);
    NoteWatchRestart("pods", "expired");
    NoteInformerEvent("pods", kStartMs - 2'500);
    NoteInformerEvent("nodes", clock.NowMs());
    metrics->ObserveConfigReload(true, kStartMs - 60'000);
    metrics->ObserveConfigReload(false, kStartMs - 1'000);
    clock.Advance(500);
  }

  // What the informers report: one more restart of `resource`'s watch for `reason`, its last
  // event at `unix_ms`.
  void NoteWatchRestart(const std::string& resource, const std::string& reason) {
    std::lock_guard<std::mutex> lock(fakes_mu);
    ++Informer(resource).watch_restarts[reason];
  }
  void NoteInformerEvent(const std::string& resource, int64_t unix_ms) {
    std::lock_guard<std::mutex> lock(fakes_mu);
    Informer(resource).last_event_unix_ms = unix_ms;
  }
  // What the preemption controller reports: one more eviction, pods preempted and not yet gone.
  void NotePreemption(const std::string& team, const std::string& victim_team,
                      scheduler::decisions::PreemptionReason reason) {
    std::lock_guard<std::mutex> lock(fakes_mu);
    ++CountOf(team, victim_team, reason).evictions;
  }
  // One more job paused (issue 35), stopping `pods` of its pods.
  void NotePause(const std::string& team, const std::string& victim_team,
                 scheduler::decisions::PreemptionReason reason, uint64_t pods) {
    std::lock_guard<std::mutex> lock(fakes_mu);
    PreemptionTotals::Count& c = CountOf(team, victim_team, reason);
    c.evictions += pods;
    c.paused_pods += pods;
    ++c.jobs_paused;
  }
  // Jobs taskgov paused and has not resumed, of `team`.
  void SetPausedWorkloads(const std::string& team, int64_t jobs) {
    std::lock_guard<std::mutex> lock(fakes_mu);
    paused_workloads[team] = jobs;
  }
  void SetPreempted(const std::string& team, int64_t pods) {
    std::lock_guard<std::mutex> lock(fakes_mu);
    preemptions.preempted_pods[team] = pods;
  }

  common::FakeClock clock;
  scheduler::ledger::QuotaBook book;
  scheduler::state::ClusterState cluster;
  scheduler::state::Reconciler reconciler;
  std::unique_ptr<Metrics> metrics;
  std::mutex fakes_mu;
  std::vector<InformerTotals> informers;                         // guarded by fakes_mu
  PreemptionTotals preemptions;                                  // guarded by fakes_mu
  std::map<std::string, int64_t, std::less<>> paused_workloads;  // guarded by fakes_mu

 private:
  PreemptionTotals::Count& CountOf(const std::string& team, const std::string& victim_team,
                                   scheduler::decisions::PreemptionReason reason) {
    for (PreemptionTotals::Count& c : preemptions.preemptions) {
      if (c.team == team && c.victim_team == victim_team && c.reason == reason) return c;
    }
    preemptions.preemptions.push_back(PreemptionTotals::Count{team, victim_team, reason, 0});
    return preemptions.preemptions.back();
  }
  InformerTotals& Informer(const std::string& resource) {
    for (InformerTotals& i : informers) {
      if (i.resource == resource) return i;
    }
    informers.push_back(InformerTotals{resource, {}, 0});
    return informers.back();
  }
};

}  // namespace taskgov::metrics::testing
