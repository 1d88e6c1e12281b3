#pragma once

// The benchmarks' cluster: 100 teams in one cohort, each with quota on three flavors, and 500
// synced nodes spread over those flavors, behind a real QuotaBook, ClusterState and Admission.
// Test support (benchmarks).

#include <string>
#include <vector>

#include "scheduler/common/clock.h"
#include "scheduler/decisions/admission.h"
#include "scheduler/testing/builders.h"

namespace taskgov::scheduler::testing {

inline constexpr char kBenchGpu[] = "nvidia.com/gpu";
inline constexpr const char* kBenchFlavors[] = {"ml.p5.48xlarge", "ml.g5.12xlarge",
                                                "ml.trn1.32xlarge"};

// team-0 … team-99, each 8 GPUs (borrowing limit 16), 192 cores and 2 TiB on every flavor.
inline model::PolicyPtr HundredTeams() {
  PolicyBuilder builder;
  for (int t = 0; t < 100; ++t) {
    builder.Team("team-" + std::to_string(t), "cohort");
    for (const char* flavor : kBenchFlavors) {
      builder.Quota(flavor, kBenchGpu, 8, 16)
          .Quota(flavor, "cpu", 192000)
          .Quota(flavor, "memory", int64_t{2048} << 30);
    }
  }
  return builder.Build();
}

struct FilterFixture {
  common::FakeClock clock;
  ledger::QuotaBook book{HundredTeams(), &clock};
  state::ClusterState cluster{&book, &clock, state::ClusterState::Options{}};
  decisions::Admission admission{&book, &cluster, nullptr, &clock, decisions::Admission::Options{}};
  std::vector<std::string> names;  // node-0 … node-499

  FilterFixture() {
    for (int i = 0; i < 500; ++i) {
      std::string name = "node-" + std::to_string(i);
      cluster.OnNodeUpsert(NodeBuilder(name)
                               .InstanceType(kBenchFlavors[i % 3])
                               .Allocatable(kBenchGpu, "8")
                               .Allocatable("cpu", "192")
                               .Allocatable("memory", "2Ti"));
      names.push_back(name);
    }
    cluster.OnSynced(ObjectKind::kPod);
    cluster.OnSynced(ObjectKind::kNode);
  }
};

}  // namespace taskgov::scheduler::testing
