#pragma once

// FakeDecider: a deterministic scheduler::Decider for webhook tests, golden files and
// benchmarks. Its decisions are pure functions of the arguments and spell out what was decoded
// (pod key, effective request, priority), so a golden reply changes when decoding does.
//
//  filter     Nodes mode: a node is feasible when it is ready, schedulable and its allocatable
//             covers the pod's effective request; otherwise unresolvable with the numbers.
//             NodeNames mode: a name containing "full" is unresolvable, one containing "busy"
//             failed (preemption may help), the rest feasible.
//             A pod label "taskgov.test/error" becomes the reply's Error.
//  prioritize (len(name) + 7 × index + number of requested resources) mod 11.
//  preempt    drops nodes whose name contains "protected"; keeps the others' victims, highest
//             priority first (full victims), or in reverse order (meta victims: no priorities).
//  bind       fails when the pod UID contains "conflict".
//
// Thread-safe (no state but relaxed call counters). Test support.

#include <algorithm>
#include <atomic>
#include <string>

#include "scheduler/extender_api.h"
#include "scheduler/model/quantity.h"

namespace taskgov::extender::testing {

class FakeDecider : public scheduler::Decider {
 public:
  scheduler::FilterResult Filter(const scheduler::FilterArgs& args) override {
    filter_calls.fetch_add(1, std::memory_order_relaxed);
    scheduler::FilterResult result;
    if (auto it = args.pod.labels.find("taskgov.test/error"); it != args.pod.labels.end()) {
      result.error = it->second;
      return result;
    }
    const scheduler::model::ResourceList request = scheduler::model::EffectiveRequest(args.pod);
    const std::string who = Describe(args.pod, request);
    for (size_t i = 0; i < args.node_names.size(); ++i) {
      const std::string& name = args.node_names[i];
      if (args.node_names_mode) {
        const uint32_t index = static_cast<uint32_t>(i);
        if (name.find("full") != std::string::npos) {
          result.unresolvable.push_back(
              {index, result.AddReason(who + ": no quota left on " + name)});
        } else if (name.find("busy") != std::string::npos) {
          result.failed.push_back(
              {index, result.AddReason(who + ": preemption may help on " + name)});
        } else {
          result.feasible.push_back(index);
        }
        continue;
      }
      const scheduler::model::Node& node = args.nodes[i];
      std::string why;
      if (!node.ready) why = "node is not ready";
      if (why.empty() && node.unschedulable) why = "node is unschedulable";
      for (const scheduler::model::ResourceAmount& r : request) {
        if (!why.empty()) break;
        const int64_t have = node.allocatable.Get(r.name);
        if (have < r.amount) {
          why = r.name + " requested " + scheduler::model::FormatQuantity(r.name, r.amount) +
                ", allocatable " + scheduler::model::FormatQuantity(r.name, have);
        }
      }
      if (why.empty()) {
        result.feasible.push_back(static_cast<uint32_t>(i));
      } else {
        auto type = node.labels.find("node.kubernetes.io/instance-type");
        result.unresolvable.push_back(
            {static_cast<uint32_t>(i),
             result.AddReason(who + ": " + why + " on " +
                              (type == node.labels.end() ? "?" : type->second))});
      }
    }
    return result;
  }

  std::vector<scheduler::HostPriority> Prioritize(const scheduler::FilterArgs& args) override {
    prioritize_calls.fetch_add(1, std::memory_order_relaxed);
    const size_t resources = scheduler::model::EffectiveRequest(args.pod).size();
    std::vector<scheduler::HostPriority> out;
    for (size_t i = 0; i < args.node_names.size(); ++i) {
      const std::string& name = args.node_names[i];
      out.push_back({name, static_cast<int64_t>((name.size() + 7 * i + resources) % 11)});
    }
    return out;
  }

  scheduler::PreemptResult Preempt(const scheduler::PreemptArgs& args) override {
    preempt_calls.fetch_add(1, std::memory_order_relaxed);
    scheduler::PreemptResult result;
    for (const auto& [node, victims] : args.node_to_victims) {
      if (node.find("protected") != std::string::npos) continue;
      scheduler::Victims kept = victims;
      if (args.meta) {
        std::reverse(kept.pods.begin(), kept.pods.end());
      } else {
        std::stable_sort(kept.pods.begin(), kept.pods.end(), [](const auto& a, const auto& b) {
          return a.priority.value_or(0) > b.priority.value_or(0);
        });
      }
      result.node_to_victims[node] = std::move(kept);
    }
    return result;
  }

  scheduler::BindResult Bind(const scheduler::BindArgs& args) override {
    bind_calls.fetch_add(1, std::memory_order_relaxed);
    if (args.pod_uid.find("conflict") != std::string::npos) {
      return {"binding " + args.pod_namespace + "/" + args.pod_name + " to " + args.node +
              ": 409 Conflict"};
    }
    return {};
  }

  // Relaxed: counts for assertions after the calls have returned.
  std::atomic<int> filter_calls{0};
  std::atomic<int> prioritize_calls{0};
  std::atomic<int> preempt_calls{0};
  std::atomic<int> bind_calls{0};

 private:
  static std::string Describe(const scheduler::model::Pod& pod,
                              const scheduler::model::ResourceList& request) {
    std::string out = pod.key() + " (priority " + std::to_string(pod.priority.value_or(0)) +
                      ", requests " + request.ToString() + ")";
    return out;
  }
};

}  // namespace taskgov::extender::testing
