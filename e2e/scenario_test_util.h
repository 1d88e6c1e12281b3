#pragma once

// Shared fixture of the end-to-end scenario tests: a Harness on the sample cluster with a
// policy per test, pod builders, and failure output that shows what the extender logged.
// Test support.

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "e2e/harness.h"
#include "e2e/quota_oracle.h"

namespace taskgov::e2e {

// Set by main() from the test's argument ($(rootpath //extender:taskgov-extender)).
inline std::string& ExtenderBinary() {
  static std::string path;
  return path;
}

inline constexpr char kP5[] = "ml.p5.48xlarge";
inline constexpr char kG5[] = "ml.g5.12xlarge";
inline constexpr char kGpu[] = "nvidia.com/gpu";

inline std::string Ns(const std::string& team) { return "hyperpod-ns-" + team; }

// A pod of `team` asking for `gpus` nvidia.com/gpu on ml.p5.48xlarge nodes.
inline PodSpec GpuPod(const std::string& team, const std::string& name, int64_t gpus = 1,
                      const std::string& priority_class = "training",
                      const std::string& instance_type = kP5) {
  PodSpec spec;
  spec.ns = Ns(team);
  spec.name = name;
  spec.requests[kGpu] = gpus;
  spec.priority_class = priority_class;
  spec.node_selector[kInstanceTypeLabel] = instance_type;
  return spec;
}

// Member `i` of Kueue pod group `job` of `team`, declaring `size` members of `gpus` GPUs each.
inline PodSpec KueueGangPod(const std::string& team, const std::string& job, int i, int size,
                            int64_t gpus) {
  PodSpec spec = GpuPod(team, job + "-" + std::to_string(i), gpus);
  spec.labels["kueue.x-k8s.io/pod-group-name"] = job;
  spec.annotations["kueue.x-k8s.io/pod-group-total-count"] = std::to_string(size);
  return spec;
}

// gtest prints outcomes by name.
inline void PrintTo(Attempt::Outcome outcome, std::ostream* os) {
  static const char* kNames[] = {"bound", "refused", "unschedulable", "error"};
  *os << kNames[static_cast<int>(outcome)];
}

class ScenarioTest : public ::testing::Test {
 protected:
  void StartHarness(HarnessOptions options) {
    options.extender_binary = ExtenderBinary();
    harness_ = std::make_unique<Harness>(std::move(options));
    common::Status started = harness_->Start();
    ASSERT_TRUE(started.ok()) << started.error().message << "\n" << harness_->Logs();
  }

  void StartWithPolicy(const std::string& policy_yaml) {
    HarnessOptions options;
    options.config["policy.yaml"] = policy_yaml;
    StartHarness(std::move(options));
  }

  void TearDown() override {
    // E2E_VERBOSE=1 prints every step of passing tests too. A failure shows the last steps
    // (long ones cut) and the extender's recent log lines.
    const bool failed = HasFailure();
    if (harness_ && (failed || getenv("E2E_VERBOSE") != nullptr)) {
      constexpr size_t kSteps = 12, kLinesPerStep = 60, kLogLines = 400;
      const std::vector<StepReport>& history = harness_->history();
      std::string steps;
      const size_t first = failed && history.size() > kSteps ? history.size() - kSteps : 0;
      for (size_t i = first; i < history.size(); ++i) {
        const StepReport& r = history[i];
        std::vector<std::string> lines;
        for (const Attempt& a : r.attempts) {
          std::ostringstream outcome;
          PrintTo(a.outcome, &outcome);
          lines.push_back(a.pod + " " + outcome.str() + (a.node.empty() ? "" : " " + a.node) +
                          (a.reason.empty() ? "" : ": " + a.reason));
        }
        for (const auto& e : r.started) lines.push_back("started " + e);
        for (const auto& e : r.finished) lines.push_back("finished " + e);
        for (const auto& e : r.evicted) lines.push_back("evicted " + e);
        for (const auto& e : r.deleted) lines.push_back("deleted " + e);
        for (const auto& e : r.recreated) lines.push_back("recreated " + e);
        if (!r.sync_error.empty()) lines.push_back("sync: " + r.sync_error);
        steps += "step " + std::to_string(r.step) + ":";
        for (size_t k = 0; k < lines.size(); ++k) {
          if (failed && k == kLinesPerStep) {
            steps += "\n  ... " + std::to_string(lines.size() - k) + " more";
            break;
          }
          steps += "\n  " + lines[k];
        }
        steps += "\n";
      }
      if (failed) {
        std::vector<std::string> log;
        for (size_t i = 0; i < harness_->extender_count(); ++i) {
          for (const std::string& line : harness_->extender(i).log_lines()) log.push_back(line);
        }
        std::string tail;
        for (size_t i = log.size() > kLogLines ? log.size() - kLogLines : 0; i < log.size(); ++i) {
          tail += log[i] + "\n";
        }
        ADD_FAILURE() << "steps" << (first > 0 ? " (the last " + std::to_string(kSteps) + ")" : "")
                      << ":\n"
                      << steps << "extender log:\n"
                      << tail;
      } else {
        printf("steps:\n%s", steps.c_str());
        for (const std::string& e : harness_->Events()) printf("event: %s\n", e.c_str());
      }
    }
    harness_.reset();
  }

  Harness& h() { return *harness_; }

  void SubmitAll(const std::vector<PodSpec>& pods) {
    for (const PodSpec& p : pods) {
      common::Status s = h().Submit(p);
      ASSERT_TRUE(s.ok()) << s.error().message;
    }
  }

  size_t Running(const std::string& team, const std::string& instance_type = kP5) {
    return static_cast<size_t>(h().Usage(Ns(team), instance_type, kGpu));
  }

  size_t PendingOf(const std::string& team) {
    return h().CountPods([&](const PodView& p) { return p.ns == Ns(team) && p.pending(); });
  }

  // The pods evicted in the steps from `first_step` (an index of h().history()) on, in order.
  std::vector<std::string> EvictedSince(size_t first_step) {
    std::vector<std::string> out;
    for (size_t i = first_step; i < h().history().size(); ++i) {
      for (const std::string& pod : h().history()[i].evicted) out.push_back(pod);
    }
    return out;
  }

  // Checks the oracle after every step from now on.
  void CheckLimitsEveryStep(QuotaOracle oracle) {
    oracle_ = std::make_unique<QuotaOracle>(std::move(oracle));
    h().SetStepObserver([this](const StepReport& report) {
      for (const std::string& v : oracle_->Violations(h().Pods())) {
        ADD_FAILURE() << "step " << report.step << ": " << v;
      }
    });
  }

  std::unique_ptr<Harness> harness_;
  std::unique_ptr<QuotaOracle> oracle_;
};

}  // namespace taskgov::e2e
