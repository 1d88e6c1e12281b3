#pragma once

// A scripted cluster state for metrics tests: a policy of three teams (two in cohort
// "research", one HyperPod-style team without a cohort), reservations in a QuotaBook, pending
// pods in a ClusterState, a fake clock, and a Metrics object wired to them and fed a fixed
// sequence of events. Every number in its exposition is known (see the comments). Test support.
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

#include <memory>
#include <string>

#include "common/clock.h"
#include "metrics/metrics.h"
#include "scheduler/decisions/admission.h"
#include "scheduler/ledger/quota_book.h"
#include "scheduler/model/interner.h"
#include "scheduler/state/cluster_state.h"
#include "scheduler/testing/builders.h"

namespace taskgov::metrics::testing {

inline constexpr int64_t kStartMs = 1'700'000'000'000;
inline constexpr int64_t kGi = int64_t{1} << 30;

inline scheduler::PolicyPtr ScenarioPolicy(bool with_team_b = true) {
  using scheduler::kUnlimited;
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

inline scheduler::NameId TeamId(const std::string& name) {
  return scheduler::TeamNames().Intern(name);
}
inline scheduler::NameId FlavorId(const std::string& name) {
  return scheduler::FlavorNames().Intern(name);
}

struct Scenario {
  explicit Scenario(bool kueue_compatible = true)
      : clock(kStartMs),
        book(ScenarioPolicy(), &clock),
        cluster(&book, &clock, scheduler::ClusterState::Options{}) {
    cluster.SetPolicy(book.ledger().policy());
    Options options;
    options.kueue_compatible = kueue_compatible;
    options.build = BuildInfo{"1.2.3", "abc123"};
    options.clock = &clock;
    metrics = std::make_unique<Metrics>(options);
    Sources sources;
    sources.book = &book;
    sources.cluster = &cluster;
    sources.preempted_pods = [this](scheduler::NameId team) {
      return team == TeamId("team-a") ? preempted_team_a : int64_t{0};
    };
    metrics->SetSources(sources);
  }

  void Bind(const std::string& uid, const std::string& team, const std::string& flavor,
            const scheduler::ResourceList& request) {
    book.ConfirmBound(uid, TeamId(team), FlavorId(flavor), request, scheduler::PodMeta{});
  }

  // The state described in the header comment, and one of each event.
  void Script() {
    using scheduler::ResourceList;
    Bind("a-1", "team-a", "ml.p5.48xlarge",
         ResourceList{{"nvidia.com/gpu", 4}, {"cpu", 48'000}, {"memory", 512 * kGi}});
    Bind("b-1", "team-b", "ml.p5.48xlarge", ResourceList{{"nvidia.com/gpu", 16}});
    Bind("b-2", "team-b", "ml.p5.48xlarge", ResourceList{{"nvidia.com/gpu", 8}});
    Bind("ml-1", "ml", "ml.trn1.32xlarge", ResourceList{{"aws.amazon.com/neurondevice", 12}});
    (void)book.Assume("ml-2", TeamId("ml"), FlavorId("ml.trn1.32xlarge"),
                      ResourceList{{"aws.amazon.com/neurondevice", 4}},
                      scheduler::Ledger::Mode::kWithinNominal, 30'000, scheduler::PodMeta{});
    for (const char* name : {"b-3", "b-4"}) {
      cluster.NotePending(scheduler::testing::PodBuilder(name).Namespace("ns-team-b").Gpus(8),
                          TeamId("team-b"), 0, ResourceList{{"nvidia.com/gpu", 8}});
    }
    preempted_team_a = 1;

    scheduler::FilterDecision admitted;
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
    scheduler::FilterDecision refused;
    refused.team = TeamId("team-b");
    refused.reason = "pool";
    metrics->ObserveFilter(refused);
    refused.reason = "fair_share";
    metrics->ObserveFilter(refused);
    scheduler::FilterDecision not_ready;
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
    metrics->ObservePreemption(TeamId("team-a"), TeamId("team-b"), kPreemptReclaim);
    metrics->ObserveWatchRestart("pods", "expired");
    metrics->ObserveInformerEvent("pods", kStartMs - 2'500);
    metrics->ObserveInformerEvent("nodes");  // now, by the clock
    metrics->ObserveConfigReload(true, kStartMs - 60'000);
    metrics->ObserveConfigReload(false, kStartMs - 1'000);
    clock.Advance(500);
  }

  common::FakeClock clock;
  scheduler::QuotaBook book;
  scheduler::ClusterState cluster;
  std::unique_ptr<Metrics> metrics;
  int64_t preempted_team_a = 0;
};

}  // namespace taskgov::metrics::testing
