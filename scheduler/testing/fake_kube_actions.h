#pragma once

// FakeKubeActions: records binds, evictions and events; can fail on demand. Thread-safe.

#include <mutex>
#include <string>
#include <vector>

#include "scheduler/cluster_api.h"

namespace taskgov::scheduler::testing {

class FakeKubeActions final : public KubeActions {
 public:
  struct BindCall {
    std::string ns, name, uid, node;
  };
  struct EvictCall {
    std::string ns, name, uid;
    int64_t grace_period_seconds;
  };

  common::Status Bind(const std::string& ns, const std::string& name, const std::string& uid,
                      const std::string& node) override {
    std::lock_guard<std::mutex> lock(mu_);
    binds_.push_back({ns, name, uid, node});
    if (!fail_bind_.empty()) return common::Error{fail_bind_};
    return common::Status::Ok();
  }
  EvictOutcome Evict(const std::string& ns, const std::string& name, const std::string& uid,
                     int64_t grace, std::string* detail) override {
    std::lock_guard<std::mutex> lock(mu_);
    evictions_.push_back({ns, name, uid, grace});
    if (detail) *detail = evict_detail_;
    return evict_outcome_;
  }
  SuspendOutcome SetSuspended(const model::JobControl& job, bool suspend,
                              const model::Labels& annotations, std::string* detail) override {
    std::lock_guard<std::mutex> lock(mu_);
    suspends_.push_back({job.workload, suspend, annotations});
    if (detail) *detail = "";
    return suspend_outcome_;
  }
  common::Status Requeue(const std::string& ns, const std::string& name, const std::string& uid,
                         const std::string& at) override {
    std::lock_guard<std::mutex> lock(mu_);
    requeues_.push_back({ns, name, uid, at});
    if (!fail_requeue_.empty()) return common::Error{fail_requeue_};
    return common::Status::Ok();
  }
  void RecordEvent(const EventRecord& event) override {
    std::lock_guard<std::mutex> lock(mu_);
    events_.push_back(event);
  }

  struct RequeueCall {
    std::string ns, name, uid, at;
  };
  std::vector<RequeueCall> requeues() const {
    std::lock_guard<std::mutex> lock(mu_);
    return requeues_;
  }
  void FailRequeues(std::string message) {
    std::lock_guard<std::mutex> lock(mu_);
    fail_requeue_ = std::move(message);
  }

  struct SuspendCall {
    std::string workload;
    bool suspend = false;
    model::Labels annotations;
  };
  void SetSuspendOutcome(SuspendOutcome outcome) {
    std::lock_guard<std::mutex> lock(mu_);
    suspend_outcome_ = outcome;
  }
  std::vector<SuspendCall> suspends() const {
    std::lock_guard<std::mutex> lock(mu_);
    return suspends_;
  }

  void FailBinds(std::string message) {
    std::lock_guard<std::mutex> lock(mu_);
    fail_bind_ = std::move(message);
  }
  void SetEvictOutcome(EvictOutcome outcome, std::string detail = "") {
    std::lock_guard<std::mutex> lock(mu_);
    evict_outcome_ = outcome;
    evict_detail_ = std::move(detail);
  }
  std::vector<BindCall> binds() const {
    std::lock_guard<std::mutex> lock(mu_);
    return binds_;
  }
  std::vector<EvictCall> evictions() const {
    std::lock_guard<std::mutex> lock(mu_);
    return evictions_;
  }
  std::vector<EventRecord> events() const {
    std::lock_guard<std::mutex> lock(mu_);
    return events_;
  }

 private:
  mutable std::mutex mu_;
  std::string fail_bind_;
  EvictOutcome evict_outcome_ = EvictOutcome::kEvicted;
  std::string evict_detail_;
  std::vector<BindCall> binds_;
  std::vector<EvictCall> evictions_;
  std::vector<EventRecord> events_;
  std::vector<SuspendCall> suspends_;
  std::vector<RequeueCall> requeues_;
  std::string fail_requeue_;
  SuspendOutcome suspend_outcome_ = SuspendOutcome::kDone;
};

}  // namespace taskgov::scheduler::testing
