#pragma once

// A workload trace for `taskgov simulate` (DESIGN §8, "Governance in motion"): the cluster's
// nodes and the jobs that arrive, each with its team's namespace, priority class, pod sets and
// how long it works. Read from JSON (ParseTrace), written back (TraceToJson), or made up from a
// seed (GenerateTrace: the same options and seed give the same trace, byte for byte).
//
//   {"name": "a compressed day",
//    "nodes": [{"instanceType": "ml.p5.48xlarge", "count": 4, "namePrefix": "p5",
//               "allocatable": {"nvidia.com/gpu": "8", "cpu": "192", "memory": "2048Gi"},
//               "labels": {"topology.k8s.aws/network-node-layer-1": "nn-1"}}],
//    "jobs": [{"name": "alpha-0007", "namespace": "hyperpod-ns-alpha", "arrivalSeconds": 12.5,
//              "priorityClass": "training", "kind": "PodGroup",
//              "podSets": [{"name": "worker", "count": 4, "instanceType": "ml.p5.48xlarge",
//                           "requests": {"nvidia.com/gpu": "4", "cpu": "16", "memory": "128Gi"}}],
//              "workSeconds": 900, "checkpointEverySeconds": 300, "saveOnTermSeconds": 30,
//              "announcesCheckpoints": true, "terminationGracePeriodSeconds": 30}]}
//
// Kinds: "Pod" (one bare pod: a single pod set of count 1), "PodGroup" (a Kueue pod group of
// bare pods, admitted as a gang), "Job" (a batch/v1 Indexed Job: one pod set, parallelism =
// completions = count; suspendable). A job's work is done once all its pods ran together for
// workSeconds; progress is kept at every checkpointEverySeconds (0: never) and when it is
// stopped with at least saveOnTermSeconds of grace (absent: it cannot save on SIGTERM). A job that
// announcesCheckpoints writes the time of each checkpoint on its pods as it saves it
// (taskgov.io/last-checkpoint, as training code or a sidecar does for taskgov's victim choice).
//
// Value types; not synchronised.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "scheduler/common/result.h"
#include "scheduler/model/resources.h"

namespace taskgov::scheduler::sim {

struct NodeGroup {
  std::string instance_type;
  int count = 1;
  std::string name_prefix;  // node names are <prefix>-<i>; default: the instance type
  model::ResourceList allocatable;
  std::map<std::string, std::string> labels;  // besides hostname and instance type
};

enum class JobKind { kPod, kPodGroup, kJob };

struct PodSet {
  std::string name = "main";
  int count = 1;
  std::string instance_type;  // its nodeSelector; "" for none
  model::ResourceList requests;
};

struct TraceJob {
  std::string name;
  std::string ns;
  int64_t arrival_ms = 0;
  std::string priority_class;  // "" for none
  JobKind kind = JobKind::kPod;
  std::vector<PodSet> pod_sets;
  int64_t work_ms = 0;
  int64_t checkpoint_every_ms = 0;                 // 0: no periodic checkpoint
  std::optional<int64_t> save_on_term_ms;          // unset: it cannot save on SIGTERM
  bool announces_checkpoints = false;              // taskgov.io/last-checkpoint on its pods
  int64_t termination_grace_ms = 30'000;           // the pod's terminationGracePeriodSeconds
  std::map<std::string, std::string> annotations;  // on the pods (and the Job)

  [[nodiscard]] int pods() const;
  // Σ over pod sets of count × requests.
  [[nodiscard]] model::ResourceList Demand() const;
};

struct Trace {
  std::string name;
  std::vector<NodeGroup> nodes;
  std::vector<TraceJob> jobs;  // in arrival order (ParseTrace sorts them, stably)
};

// Parses a trace; errors name the path inside the document and the reason.
[[nodiscard]] common::Result<Trace> ParseTrace(std::string_view json);
[[nodiscard]] std::string TraceToJson(const Trace& trace);

// "Pod", "PodGroup", "Job".
[[nodiscard]] std::string_view JobKindName(JobKind kind);

// A synthetic trace: jobs arriving over `span_ms` as a Poisson process whose rate follows a
// day's curve (quiet at night, busy in the afternoon), from the given teams' namespaces, in a
// mix of lone pods and gangs of pods of whole and partial nodes, in the given priority classes.
struct GeneratorOptions {
  uint64_t seed = 1;
  int jobs = 172;
  int64_t span_ms = 20 * 60'000;  // arrivals spread over this much time
  std::vector<NodeGroup> nodes;
  // The teams that submit: a namespace each, how often they submit relative to each other, and
  // the instance types they may use with the most accelerators they may ever hold there (their
  // nominal plus borrowing limit): a job goes to one of those types and asks for no more than
  // that, so that every job of the trace can run. No instance types: any, up to its capacity.
  struct Team {
    std::string ns;
    double weight = 1.0;
    std::map<std::string, int64_t> max_accelerators;
  };
  std::vector<Team> teams;
  std::vector<std::string> priority_classes;  // most urgent first
  std::vector<double> priority_weights;       // parallel; empty: 1, 3, 6, ...
  double gang_fraction = 0.4;                 // of jobs that are gangs (PodGroup)
  double job_fraction = 0.0;                  // of jobs that are batch/v1 Jobs
  // The work offered over span_ms, as a multiple of the cluster's accelerator-time: each job's
  // work is scaled so that Σ accelerators × work = load × accelerators × span (jobs work at least
  // 30 s and at most 2 hours).
  double load = 1.2;
  int64_t checkpoint_every_ms = 0;
  std::optional<int64_t> save_on_term_ms;
  bool announce_checkpoints = false;
};
[[nodiscard]] Trace GenerateTrace(const GeneratorOptions& options);

}  // namespace taskgov::scheduler::sim
