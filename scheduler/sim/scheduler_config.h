#pragma once

// What `taskgov simulate --scheduler-config` plays of a kube-scheduler configuration: a
// KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1), bare or as the one data value of a
// ConfigMap (as deploy/overlays/second-scheduler/scheduler-config.yaml ships it). It sets, in
// KubeScheduler::Options, with upstream's defaults and validation
// (pkg/scheduler/apis/config/v1/defaults.go, validation/validation.go and
// validation_pluginargs.go):
//  * podInitialBackoffSeconds (default 1, > 0) and podMaxBackoffSeconds (default 10, ≥ the
//    initial backoff);
//  * from the profile whose schedulerName is the governed one (Options::scheduler_name; a lone
//    profile without one is "default-scheduler"): NodeResourcesFit's scoringStrategy from its
//    pluginConfig — type LeastAllocated or MostAllocated, resources with weights 1..100 (a weight
//    absent or 0 is 1; no resources: cpu and memory, weight 1); no such pluginConfig or no
//    scoringStrategy: LeastAllocated on cpu and memory, weight 1;
//  * from the one extender (taskgov): its weight (> 0 with a prioritizeVerb; without one
//    prioritize is not called, extender_weight 0) and whether it has a preemptVerb.
// Fields that change nothing the simulator plays are read past: leader election, client
// connection, profiling, parallelism, other profiles, and the extender's URL, TLS, timeout,
// nodeCacheCapable and ignorable. Anything else is an error naming the field path
// (`profiles[0].pluginConfig[0].args.scoringStrategy.type: ...`, inside a ConfigMap
// `data["scheduler-config.yaml"].profiles[0]...`): what the simulator cannot play
// (RequestedToCapacityRatio, a profile's plugins or other plugins' arguments, ignoredResources,
// percentageOfNodesToScore other than 0 or 100, managedResources, an extender without a filter
// or bind verb, no or several extenders, no profile of the governed scheduler), unknown fields
// and values, and malformed YAML.
//
// Pure functions; thread-safe. yaml-cpp's exceptions do not leave this file.

#include <string>
#include <string_view>

#include "scheduler/common/result.h"
#include "scheduler/sim/kube_scheduler.h"

namespace taskgov::scheduler::sim {

// `options` with what the configuration `text` sets (the fields above); the rest of `options`
// (scheduler_name, seed, ...) unchanged.
[[nodiscard]] common::Result<KubeScheduler::Options> ApplySchedulerConfig(
    std::string_view text, KubeScheduler::Options options);

// What is played, in one line: "MostAllocated (cpu 1, memory 1, nvidia.com/gpu 3), backoff 1s
// to 2s, extender weight 1" (the first six resources, then "and N more").
[[nodiscard]] std::string DescribeScheduling(const KubeScheduler::Options& options);

}  // namespace taskgov::scheduler::sim
