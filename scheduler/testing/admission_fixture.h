#pragma once

// A real QuotaBook, ClusterState and Admission on a fake clock, with pods and nodes synced, for
// the decision tests (admission, explanation): Start(policy) builds them anew, AddNodes adds GPU
// nodes of a flavor. Test support.

#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "scheduler/common/clock.h"
#include "scheduler/decisions/admission.h"
#include "scheduler/testing/builders.h"

namespace taskgov::scheduler::testing {

class AdmissionFixture : public ::testing::Test {
 protected:
  // `binder` may be null (taskgov does not bind).
  void Start(model::PolicyPtr policy, KubeActions* binder = nullptr) {
    book_ = std::make_unique<ledger::QuotaBook>(policy, &clock_);
    cluster_ =
        std::make_unique<state::ClusterState>(book_.get(), &clock_, state::ClusterState::Options{});
    admission_ = std::make_unique<decisions::Admission>(book_.get(), cluster_.get(), binder,
                                                        &clock_, decisions::Admission::Options{});
    cluster_->OnSynced(ObjectKind::kPod);
    cluster_->OnSynced(ObjectKind::kNode);
  }
  // n nodes of `flavor` with `gpus` GPUs each (and 192 cores, 2 TiB), named <prefix>-<i>.
  void AddNodes(const std::string& prefix, const std::string& flavor, int n, int gpus) {
    for (int i = 0; i < n; ++i) {
      std::string name = prefix + "-" + std::to_string(i);
      cluster_->OnNodeUpsert(NodeBuilder(name)
                                 .InstanceType(flavor)
                                 .Allocatable("nvidia.com/gpu", std::to_string(gpus))
                                 .Allocatable("cpu", "192")
                                 .Allocatable("memory", "2Ti"));
      nodes_.push_back(name);
    }
  }
  // team-a and team-b of cohort "c", 8 GPUs each on ml.p5.48xlarge; team-a may borrow
  // `a_borrow`.
  static model::PolicyPtr TwoTeams(int64_t a_borrow = model::kUnlimited) {
    return PolicyBuilder()
        .Team("team-a", "c")
        .Quota("ml.p5.48xlarge", "nvidia.com/gpu", 8, a_borrow)
        .Team("team-b", "c")
        .Quota("ml.p5.48xlarge", "nvidia.com/gpu", 8)
        .Build();
  }
  // A pod of `team` (namespace ns-<team>) asking for `gpus` GPUs.
  static model::Pod GpuPod(const std::string& name, const std::string& team, int gpus,
                           int64_t created_ms = 1000) {
    return PodBuilder(name).Namespace("ns-" + team).Gpus(gpus).Created(created_ms);
  }

  common::FakeClock clock_;
  std::unique_ptr<ledger::QuotaBook> book_;
  std::unique_ptr<state::ClusterState> cluster_;
  std::unique_ptr<decisions::Admission> admission_;
  std::vector<std::string> nodes_;
};

}  // namespace taskgov::scheduler::testing
