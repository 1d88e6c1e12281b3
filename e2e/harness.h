#pragma once

// The end-to-end harness: the real taskgov-extender binary against the in-process fake API
// server, driven by a loop that plays the rest of a cluster. Test support (the scenario tests and
// tools/demo).
//
//  * ConfigDir — a policy directory laid out the way the kubelet lays out a ConfigMap volume
//    (`..<timestamp>/` data, a `..data` symlink to it, one symlink per file); Write() replaces
//    the whole set with the kubelet's atomic `..data` swap, which is what the extender watches.
//  * ExtenderProcess — one taskgov-extender process: loopback ports through --port-file, a
//    kubeconfig pointing at the fake API, its stderr drained on a thread of its own (so the
//    child never blocks on a full pipe) and searchable; readiness through /readyz; stop with
//    SIGTERM or SIGKILL and start again.
//  * Harness — the fake API server (sample cluster and/or given nodes; evictions in manual mode)
//    plus one or more ExtenderProcesses, and Step(), one round of everything else a cluster
//    does, in a fixed order:
//      1. kubelet: a bound pod starts (phase Running, startTime); a running pod whose scripted
//         run time (in steps) is over finishes (Succeeded); a pod being evicted (it has a
//         deletionTimestamp) keeps its node and its quota while it terminates, and is deleted
//         once the grace period its eviction carried (metadata.deletionGracePeriodSeconds;
//         30 s, the kubelet's default, when absent) has passed in simulated time — each step
//         is `step_seconds` — or earlier, when the job scripts that its checkpoint is saved
//         (PodSpec::checkpoint_steps);
//      2. job controller: a pod evicted and deleted is created again under a new name
//         (`<job>-r<N>`, a new UID, a new creationTimestamp), with the same spec;
//         (with HarnessOptions::play_every_pod, pods the harness did not submit — a Job's, the
//         CLI's — are started once bound and deleted once their grace period is over, their own
//         controller replacing them, and kube-scheduler tries those of schedulerName taskgov);
//      3. Sync(): waits until the serving extender has seen every pod change made so far;
//      4. kube-scheduler: every pending pod of schedulerName taskgov, in kube-scheduler's queue
//         order (spec.priority descending, then creation), gets one attempt — the nodes that
//         physically fit it (node selector, allocatable minus the requests of the pods bound
//         there that have not ended) go to the extender's filter (nodeCacheCapable: NodeNames);
//         the feasible ones to prioritize; the best-scored node (ties: the first by name) is
//         bound: through the extender's bind verb when taskgov is the binder
//         (HarnessOptions::extender_binds), else through the API server's pods/binding
//         endpoint, as kube-scheduler's default binder does (the extender then learns of the
//         binding from its pod informer). A pod no node fits is not sent to the extender
//         (kube-scheduler's own filters reject it first); a refused pod waits for the next
//         step.
//    Steps are explicit: nothing moves unless a test steps. The extender acts on its own only
//    through evictions (its preemption controller runs every second, and soon after a pod starts
//    waiting or a victim goes), so a step that changed nothing waits (bounded) for the next
//    eviction before returning control to RunUntil.
//  * Sync() is a barrier: it creates a pod of another scheduler and asks the extender to bind
//    it; the extender answers "unknown pod" until its pod informer has seen it, then refuses it
//    for its scheduler (it binds only pods of the governed scheduler it filtered), and the
//    informer sees events in resourceVersion order, so once that refusal comes every earlier
//    pod event has been applied. The barrier pod is then deleted.
//  * ProbeLedger() reads the extender's own numbers for a (team, flavor, resource), after a
//    Sync(): it filters a probe pod that can never fit (it asks for a million) against a made-up
//    node of that flavor with room for it, and parses the refusal ("in use U of nominal N,
//    borrowing limit B"). The probe ranks above every pod (so no queue-order rule applies to it)
//    and is deleted afterwards (so it leaves no pending entry). Use it where fair-share ordering
//    cannot speak first (FirstComeFirstServe idle compute, or no other team waiting to borrow).
//
// Amounts are canonical integers: cpu in millicores, memory in bytes, everything else counts.
// Thread-safety: a Harness is driven from one thread; the fake API server and the extenders'
// stderr drains run threads of their own.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "extender/testing/extender_client.h"
#include "metrics/testing/exposition.h"
#include "scheduler/common/result.h"
#include "scheduler/common/testing/process.h"
#include "scheduler/kube/testing/fake_apiserver.h"

namespace taskgov::e2e {

using Amounts = std::map<std::string, int64_t>;

inline constexpr char kInstanceTypeLabel[] = "node.kubernetes.io/instance-type";
inline constexpr char kPriorityClassLabel[] = "kueue.x-k8s.io/priority-class";

// ------------------------------------------------------------------------------------------------

class ConfigDir {
 public:
  // `path` is created if missing.
  explicit ConfigDir(std::string path) : path_(std::move(path)) {}
  // Replaces the directory's files with `files` (name → content) atomically.
  [[nodiscard]] common::Status Write(const std::map<std::string, std::string>& files);
  [[nodiscard]] const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::string current_;  // the ..<timestamp> directory in use
  std::set<std::string> names_;
  int generation_ = 0;
};

// ------------------------------------------------------------------------------------------------

struct ExtenderProcessOptions {
  std::string binary;
  std::string config_dir;
  std::string kubeconfig;
  std::string work_dir;  // for the port file
  std::string identity;
  std::string log_level = "info";
  std::vector<std::string> extra_args;
  // The console serves TLS with extender/testdata/tls's server certificate (as it does off
  // loopback in a cluster); false: plain HTTP, as on loopback (the demo's browser tab).
  bool console_tls = true;
};

class ExtenderProcess {
 public:
  explicit ExtenderProcess(ExtenderProcessOptions options);
  ~ExtenderProcess();  // SIGKILLs a running process
  ExtenderProcess(const ExtenderProcess&) = delete;
  ExtenderProcess& operator=(const ExtenderProcess&) = delete;

  // Starts the process and waits until it serves (its port file is written). Not ready yet.
  [[nodiscard]] common::Status Start(std::chrono::milliseconds timeout = std::chrono::seconds(20));
  // Sends `signal_number` and waits for the exit; returns the exit code (128+signal if killed).
  common::Result<int> Stop(int signal_number,
                           std::chrono::milliseconds timeout = std::chrono::seconds(10));
  [[nodiscard]] bool running() const;

  // GET /readyz on the health listener, as the kubelet probes it: the status and body ("ok\n",
  // "not leader\n", ...); an error when unreachable.
  [[nodiscard]] common::Result<common::testing::HttpReply> Readyz();
  // GET /metrics, parsed (Prometheus text format 0.0.4); an error when unreachable, not 200 or
  // unparsable.
  [[nodiscard]] common::Result<metrics::testing::Exposition> ScrapeMetrics();
  // GET `target` on the console listener (the admin API; over TLS unless console_tls is off,
  // the certificate not verified) with `token` as a bearer token (none when empty): the reply,
  // any status; an error when unreachable.
  [[nodiscard]] common::Result<common::testing::HttpReply> Admin(const std::string& target,
                                                                 const std::string& token = "");
  // Polls /readyz until it answers 200.
  [[nodiscard]] common::Status WaitReady(std::chrono::milliseconds timeout);
  // Polls /readyz until its body contains `text` (any status).
  [[nodiscard]] common::Status WaitReadyzSays(const std::string& text,
                                              std::chrono::milliseconds timeout);

  // The webhook client (kube-scheduler's view); after Stop its calls fail until Start.
  [[nodiscard]] extender::testing::ExtenderClient& client();
  [[nodiscard]] uint16_t webhook_port() const { return webhook_port_; }
  [[nodiscard]] uint16_t metrics_port() const { return metrics_port_; }
  [[nodiscard]] uint16_t health_port() const { return health_port_; }
  [[nodiscard]] uint16_t console_port() const { return console_port_; }
  // "https://127.0.0.1:<console port>" (http:// without console TLS).
  [[nodiscard]] std::string console_url() const;
  [[nodiscard]] const std::string& identity() const { return options_.identity; }
  // The process id of the current (or last) run; -1 before the first.
  [[nodiscard]] int pid() const;

  // Log lines (every run of this process, in order).
  [[nodiscard]] size_t log_line_count() const;
  [[nodiscard]] std::vector<std::string> log_lines() const;
  // Waits until a line at index >= `from` contains `needle`; returns it.
  [[nodiscard]] common::Result<std::string> WaitForLog(const std::string& needle, size_t from,
                                                       std::chrono::milliseconds timeout);
  // Waits until a line at index >= `from` satisfies `match`; returns it.
  [[nodiscard]] common::Result<std::string> WaitForLogMatching(
      const std::function<bool(const std::string&)>& match, size_t from,
      std::chrono::milliseconds timeout, const std::string& what);

 private:
  void Drain();

  const ExtenderProcessOptions options_;
  int runs_ = 0;
  uint16_t webhook_port_ = 0;
  uint16_t metrics_port_ = 0;
  uint16_t health_port_ = 0;  // 0: the binary has no health listener (probes go to metrics)
  uint16_t console_port_ = 0;
  std::unique_ptr<extender::testing::ExtenderClient> client_;
  std::unique_ptr<common::testing::HttpClient> health_;  // the metrics listener
  std::unique_ptr<common::testing::HttpClient> probe_;   // the health listener
  std::unique_ptr<common::testing::HttpClient> console_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::unique_ptr<common::testing::Subprocess> proc_;  // guarded by mu_
  std::vector<std::string> lines_;                     // guarded by mu_
  size_t copied_ = 0;                                  // lines of proc_ already in lines_
  bool exited_ = true;
  std::optional<int> exit_code_;
  std::thread drain_;
};

// ------------------------------------------------------------------------------------------------

struct NodeSpec {
  std::string name;
  std::string instance_type;
  Amounts allocatable;
  std::map<std::string, std::string> labels;  // besides hostname and instance type
};

struct PodSpec {
  std::string ns;
  std::string name;                 // unique among the harness's pods; also the job name
  Amounts requests;                 // requests (and limits) of its one container
  std::string priority_class;       // the kueue.x-k8s.io/priority-class label ("": none)
  std::optional<int32_t> priority;  // spec.priority: kube-scheduler's queue order
  std::map<std::string, std::string> node_selector;
  // More metadata (gangs: kueue.x-k8s.io/pod-group-name, pod-group-total-count).
  std::map<std::string, std::string> labels;
  std::map<std::string, std::string> annotations;
  // Its controller owner (metadata.ownerReferences with controller: true), when kind is set.
  struct Owner {
    std::string api_version;
    std::string kind;
    std::string name;
    std::string uid;
  };
  std::optional<Owner> owner;
  int run_steps = 0;  // steps from Running to Succeeded; 0: until Finish()
  // Steps from the eviction until the pod has saved its checkpoint and exits, when that is
  // sooner than its grace period; unset: it uses the whole grace period.
  std::optional<int> checkpoint_steps;
  bool recreate_when_evicted = true;
};

// One pod as the fake API server holds it.
struct PodView {
  std::string ns;
  std::string name;
  std::string uid;
  std::string key;  // ns/name
  std::string job;  // the harness job it belongs to ("" for pods the harness did not submit)
  std::string node;
  std::string phase;
  bool terminating = false;
  int64_t grace_seconds = -1;  // metadata.deletionGracePeriodSeconds; -1: not set
  int32_t priority = 0;        // spec.priority
  std::string priority_class;
  int64_t created_ms = 0;
  std::string json;
  // Harness pods: their spec's; others (HarnessOptions::play_every_pod): their own, read from the
  // pod (its effective request, as the extender reckons it).
  Amounts request;
  std::map<std::string, std::string> node_selector;
  std::string scheduler_name;
  std::string instance_type;  // its node's, when bound to a known node

  [[nodiscard]] bool ended() const { return phase == "Succeeded" || phase == "Failed"; }
  // Bound and not ended: what the quota is charged for.
  [[nodiscard]] bool active() const { return !node.empty() && !ended(); }
  [[nodiscard]] bool pending() const { return node.empty() && !ended() && !terminating; }
};

struct Attempt {
  enum class Outcome {
    kBound,          // filter admitted, bind succeeded
    kRefused,        // the extender's filter left no feasible node
    kUnschedulable,  // no node physically fits: not sent to the extender
    kError,          // the extender failed (Error, transport) or bind failed
  };
  std::string pod;  // ns/name
  Outcome outcome = Outcome::kRefused;
  std::string node;
  std::string reason;  // the extender's distinct reasons joined by " | ", or the error
};

struct StepReport {
  int step = 0;
  std::vector<std::string> started;      // pods the kubelet started
  std::vector<std::string> finished;     // pods that ran their time
  std::vector<std::string> evicted;      // pods seen terminating for the first time
  std::vector<std::string> terminating;  // pods terminating after the kubelet's turn
  std::vector<std::string> deleted;      // terminated pods the kubelet deleted
  std::vector<std::string> recreated;    // "old -> new"
  std::vector<Attempt> attempts;
  std::string sync_error;  // why Sync() failed, when it did

  [[nodiscard]] std::vector<std::string> Bound() const;
  [[nodiscard]] const Attempt* Find(const std::string& pod) const;
  // The reason of the step's last refused attempt ("" when none was refused).
  [[nodiscard]] std::string LastRefusal() const;
  [[nodiscard]] bool progress() const;
};

// The extender's numbers for one (team, flavor, resource), as a refusal states them.
struct LedgerLine {
  int64_t in_use = 0;
  int64_t nominal = 0;
  std::string borrowing_limit;  // as printed ("8", "unlimited"; "" when not stated)
  std::string reason;           // the whole refusal
};

struct HarnessOptions {
  std::string extender_binary;
  std::map<std::string, std::string> config;  // policy files: name → content
  bool sample_cluster = true;                 // FakeApiServer::LoadSampleCluster
  std::vector<NodeSpec> nodes;                // more nodes
  std::vector<std::string> namespaces;        // more namespaces
  size_t extenders = 1;                       // started in order; the first becomes the leader
  int step_seconds = 30;       // simulated time a step takes (grace periods count in it)
  bool extender_binds = true;  // false: the harness binds through the API, as kube-scheduler's
                               // default binder does
  std::chrono::milliseconds idle_wait{1500};  // see RunUntil
  std::string log_level = "info";
  std::vector<std::string> extender_args;
  // Installed in the fake API server before the extenders start (e.g. a withheld pod LIST).
  std::vector<scheduler::kube::testing::FaultRule> api_faults;
  bool wait_ready = true;   // false: Start() does not wait for the first extender's /readyz
  bool console_tls = true;  // ExtenderProcessOptions::console_tls
  // Runs once the cluster (nodes, namespaces) is loaded and before any extender starts: objects
  // the extenders must find at their first LIST (e.g. a large cluster's pods).
  std::function<common::Status(scheduler::kube::testing::FakeApiServer&)> preload;
  // Also play for the pods the harness did not submit (a Job controller's, the CLI's): the
  // scheduler tries those of schedulerName taskgov, the kubelet starts them once bound and
  // deletes them when their grace period is over (their controller replaces them). Off, only the
  // harness's own pods are played (the scenario tests' exact accounting).
  bool play_every_pod = false;
};

class Harness {
 public:
  explicit Harness(HarnessOptions options);
  ~Harness();
  Harness(const Harness&) = delete;
  Harness& operator=(const Harness&) = delete;

  // Fake API server, config directory, kubeconfig, then the extenders (the first one is waited
  // for until ready, unless wait_ready is off: it holds the lease; the others are started and
  // left following).
  [[nodiscard]] common::Status Start();
  void Stop();

  [[nodiscard]] scheduler::kube::testing::FakeApiServer& api() { return *api_; }
  [[nodiscard]] ExtenderProcess& extender(size_t i = 0) { return *extenders_.at(i); }
  [[nodiscard]] size_t extender_count() const { return extenders_.size(); }
  // The extender the scheduler loop talks to.
  [[nodiscard]] size_t serving() const { return serving_; }
  void set_serving(size_t i) { serving_ = i; }
  [[nodiscard]] ConfigDir& config_dir() { return *config_dir_; }
  // A directory of this run's own (the port files, and whatever a caller keeps there).
  [[nodiscard]] const std::string& work_dir() const { return work_dir_; }
  // Writes a new policy (kubelet swap) and waits until every running extender has loaded it.
  [[nodiscard]] common::Status Reconfigure(
      const std::map<std::string, std::string>& files,
      std::chrono::milliseconds timeout = std::chrono::seconds(10));

  // ---- pods ----
  // Creates the pod (status Pending, creationTimestamp now, strictly after every earlier pod).
  [[nodiscard]] common::Status Submit(const PodSpec& spec);
  // The job's work is done: its current pod becomes Succeeded.
  [[nodiscard]] common::Status Finish(const std::string& job);
  // Every pod in the fake API server (parsed), sorted by namespace/name.
  [[nodiscard]] std::vector<PodView> Pods() const;
  // The job's current pod.
  [[nodiscard]] std::optional<PodView> PodOfJob(const std::string& job) const;
  // Jobs whose work is done: their pod reached Succeeded (it may have been evicted and deleted
  // after that; it is not recreated).
  [[nodiscard]] size_t CompletedJobs() const;
  // How many harness pods satisfy `pred`.
  [[nodiscard]] size_t CountPods(const std::function<bool(const PodView&)>& pred) const;
  // Sum of the requests of active pods (bound, not ended; terminating ones included) per
  // namespace / instance type / resource.
  [[nodiscard]] int64_t Usage(const std::string& ns, const std::string& instance_type,
                              const std::string& resource) const;
  [[nodiscard]] const std::vector<NodeSpec>& nodes() const { return nodes_; }

  // ---- steps ----
  StepReport Step();
  // Steps until `done()` holds (checked before every step); a step that changed nothing waits
  // up to idle_wait for the extender to evict something. False if max_steps ran out.
  bool RunUntil(const std::function<bool()>& done, int max_steps);
  // Steps until a step changes nothing, leaves no pod terminating, and nothing is evicted for
  // `quiet`. False if max_steps ran out first.
  bool RunUntilQuiet(std::chrono::milliseconds quiet, int max_steps);
  // Called after every step (invariant checks).
  void SetStepObserver(std::function<void(const StepReport&)> observer) {
    step_observer_ = std::move(observer);
  }
  // Called in the scheduling pass after the filter admitted `pod` and before its bind to `node`.
  void SetBeforeBind(std::function<void(const PodView& pod, const std::string& node)> hook) {
    before_bind_ = std::move(hook);
  }
  // false: running pods never finish on their own (run_steps is ignored until set back).
  void set_finishing(bool on) { finishing_ = on; }
  // The simulated time a step takes from now on (grace periods count in it).
  void set_step_seconds(int seconds) { step_seconds_ = seconds; }
  [[nodiscard]] int step() const { return step_; }
  // Simulated time: step() × step_seconds.
  [[nodiscard]] int64_t simulated_seconds() const { return simulated_seconds_; }
  [[nodiscard]] const std::vector<StepReport>& history() const { return history_; }

  // ---- the extender's view ----
  [[nodiscard]] common::Status Sync(std::chrono::milliseconds timeout = std::chrono::seconds(10));
  [[nodiscard]] common::Result<LedgerLine> ProbeLedger(const std::string& ns,
                                                       const std::string& instance_type,
                                                       const std::string& resource);

  // The recorded evictions (policy/v1 Eviction bodies) and events (events.k8s.io/v1 Event
  // bodies) as the fake API server received them.
  [[nodiscard]] std::vector<std::string> Evictions() const { return api_->evictions(); }
  [[nodiscard]] std::vector<std::string> Events() const { return api_->events(); }
  // Bindings of harness pods (the barrier's are left out).
  [[nodiscard]] size_t BindingCount() const;
  // Bindings the harness made itself through the API server (extender_binds off).
  [[nodiscard]] size_t BindingsThroughApi() const { return bindings_through_api_; }

  // Every extender's log, for failure messages.
  [[nodiscard]] std::string Logs() const;

 private:
  struct Job {
    PodSpec spec;
    std::string current;  // pod name
    int generation = 0;
    int started_step = -1;
    bool done = false;
  };

  std::string NextTimestamp();
  common::Status CreatePod(const PodSpec& spec, const std::string& name);
  void Kubelet(const std::vector<PodView>& pods, StepReport* report);
  // The kubelet for a pod the harness did not submit (play_every_pod).
  void KubeletOfOther(const PodView& p, StepReport* report);
  // Whether a terminating pod's grace period is over (first seen terminating: reported).
  bool GraceOver(const PodView& p, StepReport* report);
  // Start's steps.
  common::Status LoadCluster();
  void ReadNodesFromApi();
  common::Status WriteKubeconfig(const std::string& path) const;
  common::Status StartExtenders(const std::string& kubeconfig);
  // One pass of the scheduler loop: every pending pod in queue order, through the extender.
  void SchedulePass(StepReport* report);
  [[nodiscard]] std::vector<std::string> Candidates(
      const PodView& pod, const std::map<std::string, Amounts>& free) const;
  Attempt SchedulePod(const PodView& pod, std::map<std::string, Amounts>* free);
  std::string BestNode(ExtenderProcess& extender, const PodView& pod,
                       std::vector<std::string> feasible);
  bool WaitForActivity(std::chrono::milliseconds timeout);
  PodView Parse(const std::string& json) const;
  // Binds through the API server's pods/binding endpoint; "" on success, else why not.
  std::string BindThroughApi(const PodView& pod, const std::string& node);

  const HarnessOptions options_;
  std::string work_dir_;
  std::unique_ptr<scheduler::kube::testing::FakeApiServer> api_;
  std::unique_ptr<common::testing::HttpClient>
      api_client_;  // kube-scheduler's binder, when taskgov is not
  std::unique_ptr<ConfigDir> config_dir_;
  std::vector<std::unique_ptr<ExtenderProcess>> extenders_;
  size_t serving_ = 0;
  std::vector<NodeSpec> nodes_;
  std::map<std::string, NodeSpec> node_by_name_;

  std::map<std::string, Job> jobs_;                // by job name
  std::map<std::string, std::string> job_of_pod_;  // pod name → job name
  std::map<std::string, int> terminating_since_;   // pod uid → step first seen terminating
  std::set<std::string> recreated_uids_;           // evicted pods already replaced
  int64_t last_timestamp_ms_ = 0;
  size_t step_evictions_ = 0;
  size_t bindings_through_api_ = 0;  // evictions recorded when the current step began
  int step_ = 0;
  int sync_seq_ = 0;
  bool finishing_ = true;
  int step_seconds_ = 30;          // set_step_seconds; options_.step_seconds at first
  int64_t simulated_seconds_ = 0;  // Σ step_seconds_ over the steps
  std::map<std::string, int64_t> terminating_at_;  // pod uid → simulated time first terminating
  std::vector<StepReport> history_;
  std::function<void(const StepReport&)> step_observer_;
  std::function<void(const PodView&, const std::string&)> before_bind_;
};

// "2026-01-02T03:04:05.678Z"
[[nodiscard]] std::string Rfc3339Millis(int64_t unix_ms);
// A quantity string for a canonical amount: "250m" for cpu, the plain number otherwise.
[[nodiscard]] std::string QuantityText(const std::string& resource, int64_t amount);

}  // namespace taskgov::e2e
