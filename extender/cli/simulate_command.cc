#include "extender/cli/simulate_command.h"

#include <algorithm>
#include <charconv>
#include <fstream>
#include <map>
#include <sstream>
#include <string_view>

#include "config/catalogue.h"
#include "config/loader.h"
#include "scheduler/common/log.h"
#include "scheduler/sim/scheduler_config.h"
#include "scheduler/sim/simulator.h"
#include "scheduler/sim/trace.h"

namespace taskgov::cli {
namespace {

namespace sim = scheduler::sim;

common::Result<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return common::Error{"cannot read " + Quoted(path)};
  std::ostringstream content;
  content << in.rdbuf();
  return content.str();
}

common::Result<scheduler::model::PolicyPtr> LoadPolicy(const std::string& dir) {
  config::LoadResult loaded = config::LoadDirectory(dir);
  if (!loaded.ok()) {
    return common::Error{"the policy in " + Quoted(dir) + " is not valid: " + loaded.FirstError() +
                         " (taskgov config validate " + dir + ")"};
  }
  return loaded.policy;
}

// --nodes ml.p5.48xlarge=4,ml.g5.12xlarge=4: node groups with the catalogue's allocatable.
common::Result<std::vector<sim::NodeGroup>> ParseNodes(const std::string& text) {
  std::vector<sim::NodeGroup> groups;
  std::stringstream items(text);
  std::string item;
  while (std::getline(items, item, ',')) {
    const size_t eq = item.find('=');
    const std::string type = item.substr(0, eq);
    int count = 0;
    if (eq == std::string::npos || sscanf(item.c_str() + eq + 1, "%d", &count) != 1 || count <= 0 ||
        count > 100'000) {
      return common::Error{"invalid --nodes item " + Quoted(item) +
                           ": use INSTANCE-TYPE=COUNT, e.g. ml.p5.48xlarge=4"};
    }
    const config::InstanceType* known = config::Catalogue::Builtin().Find(type);
    if (known == nullptr) {
      return common::Error{"--nodes: instance type " + Quoted(type) + " is not in the catalogue"};
    }
    sim::NodeGroup g;
    g.instance_type = type;
    g.count = count;
    g.name_prefix = type;
    if (!known->accelerator_resource.empty()) {
      g.allocatable.Set(known->accelerator_resource, known->accelerators);
    }
    g.allocatable.Set("cpu", known->vcpus * 1000);
    g.allocatable.Set("memory", known->memory_mib * 1024 * 1024);
    groups.push_back(std::move(g));
  }
  if (groups.empty()) return common::Error{"--nodes names no instance type"};
  return groups;
}

common::Result<int64_t> Number(const Invocation& inv, const char* flag, int64_t fallback,
                               int64_t lo, int64_t hi) {
  std::optional<std::string> v = inv.args.Get(flag);
  if (!v) return fallback;
  char* end = nullptr;
  const long long n = strtoll(v->c_str(), &end, 10);
  if (v->empty() || *end != '\0' || n < lo || n > hi) {
    return common::Error{"invalid --" + std::string(flag) + " " + Quoted(*v) + ": a number from " +
                         std::to_string(lo) + " to " + std::to_string(hi)};
  }
  return n;
}

common::Result<int64_t> Duration(const Invocation& inv, const char* flag, int64_t fallback_ms) {
  std::optional<std::string> v = inv.args.Get(flag);
  if (!v) return fallback_ms;
  if (*v == "0" && fallback_ms == 0) return int64_t{0};
  std::optional<std::chrono::milliseconds> d = ParseTimeout(*v);
  if (!d || d->count() <= 0) {
    return common::Error{"invalid --" + std::string(flag) + " " + Quoted(*v) +
                         ": a duration such as 20m, 6h or 90s"};
  }
  return d->count();
}

// The accelerators `team` may ever hold per flavor: its nominal plus borrowing limit, and no more
// than it guarantees itself plus what the teams of its cohort tree lend (flat arithmetic, DESIGN
// §3.3), so that every generated job can run.
std::map<std::string, int64_t> MostEver(const scheduler::model::Policy& policy,
                                        const scheduler::model::Team& team) {
  using scheduler::model::ResourceQuota;
  using scheduler::model::SaturatingAdd;
  const std::string root = team.cohort.empty() ? "" : std::string(policy.RootCohort(team.cohort));
  // What the teams of the tree lend, of a resource on a flavor.
  auto lent = [&](const std::string& flavor, const std::string& resource) {
    int64_t sum = 0;
    for (const scheduler::model::Team& other : policy.teams) {
      if (root.empty() || other.cohort.empty() || policy.RootCohort(other.cohort) != root) continue;
      for (const scheduler::model::FlavorQuota& fq : other.flavors) {
        for (const ResourceQuota& q : fq.resources) {
          if (fq.flavor == flavor && q.resource == resource) {
            sum = SaturatingAdd(sum, std::min(q.lending_limit, q.nominal));
          }
        }
      }
    }
    return sum;
  };
  std::map<std::string, int64_t> out;
  for (const scheduler::model::FlavorQuota& fq : team.flavors) {
    for (const ResourceQuota& q : fq.resources) {
      if (!scheduler::model::IsAccelerator(q.resource)) continue;
      const int64_t guaranteed =
          root.empty() ? q.nominal : q.nominal - std::min(q.lending_limit, q.nominal);
      const int64_t most = std::min(SaturatingAdd(q.nominal, q.borrowing_limit),
                                    SaturatingAdd(guaranteed, lent(fq.flavor, q.resource)));
      if (most > 0) out[fq.flavor] = most;
    }
  }
  return out;
}

// The synthetic trace --generate asks for: the policy's teams (their first namespace) and
// priority classes (most urgent first).
common::Result<sim::Trace> Generate(const Invocation& inv, const scheduler::model::Policy& policy,
                                    uint64_t seed) {
  if (!inv.args.Get("nodes")) {
    return common::Error{"--generate needs --nodes, e.g. --nodes ml.p5.48xlarge=4"};
  }
  auto nodes = ParseNodes(*inv.args.Get("nodes"));
  if (!nodes.ok()) return nodes.error();
  auto jobs = Number(inv, "jobs", 172, 1, 1'000'000);
  if (!jobs.ok()) return jobs.error();
  auto span = Duration(inv, "span", 20 * 60'000);
  if (!span.ok()) return span.error();
  sim::GeneratorOptions o;
  if (auto load = inv.args.Get("load")) {
    char* end = nullptr;
    o.load = strtod(load->c_str(), &end);
    if (load->empty() || *end != '\0' || !(o.load > 0 && o.load <= 100)) {
      return common::Error{"invalid --load " + Quoted(*load) + ": a number above 0, e.g. 1.2"};
    }
  }
  auto checkpoint = Duration(inv, "checkpoint-every", 0);
  if (!checkpoint.ok()) return checkpoint.error();
  o.checkpoint_every_ms = *checkpoint;
  o.announce_checkpoints = inv.args.Bool("announce-checkpoints");
  o.seed = seed;
  o.jobs = static_cast<int>(*jobs);
  o.span_ms = *span;
  o.nodes = std::move(*nodes);
  for (const scheduler::model::Team& team : policy.teams) {
    if (team.namespaces.empty()) continue;
    sim::GeneratorOptions::Team t;
    t.ns = team.namespaces.front();
    t.max_accelerators = MostEver(policy, team);
    if (!t.max_accelerators.empty()) o.teams.push_back(std::move(t));
  }
  if (o.teams.empty()) {
    return common::Error{"no team of the policy has accelerator quota to submit jobs with"};
  }
  std::vector<scheduler::model::PriorityClass> classes = policy.priority_classes;
  std::stable_sort(classes.begin(), classes.end(),
                   [](const auto& a, const auto& b) { return a.value > b.value; });
  for (const auto& c : classes) o.priority_classes.push_back(c.name);
  return sim::GenerateTrace(o);
}

common::Result<sim::Trace> TraceFor(const Invocation& inv, const scheduler::model::Policy& policy,
                                    uint64_t seed) {
  const bool generate = inv.args.Bool("generate");
  if (generate == inv.args.Get("trace").has_value()) {
    return common::Error{"give either --trace FILE or --generate"};
  }
  if (generate) return Generate(inv, policy, seed);
  auto content = ReadFile(*inv.args.Get("trace"));
  if (!content.ok()) return content.error();
  auto trace = sim::ParseTrace(*content);
  if (!trace.ok()) return trace.error().Wrap(*inv.args.Get("trace"));
  return trace;
}

std::string LabelOf(const std::string& dir) {
  std::string d = dir;
  while (d.size() > 1 && d.back() == '/') d.pop_back();
  const size_t slash = d.find_last_of('/');
  return slash == std::string::npos ? d : d.substr(slash + 1);
}

// "1.30", "v1.30" or "v1.30.2": 30, for a release the simulated kube-scheduler plays.
common::Result<int> KubeMinor(std::string_view text) {
  const common::Error bad{"invalid --kube-version " + std::string(text) + ": give 1." +
                          std::to_string(sim::KubeScheduler::kOldestMinor) + " to 1." +
                          std::to_string(sim::KubeScheduler::kNewestMinor) + " (such as 1.30)"};
  if (!text.empty() && text.front() == 'v') text.remove_prefix(1);
  if (text.substr(0, 2) != "1.") return bad;
  text.remove_prefix(2);
  const size_t dot = text.find('.');
  const std::string_view minor_text = text.substr(0, dot);
  int minor = 0;
  const auto [end, ec] =
      std::from_chars(minor_text.data(), minor_text.data() + minor_text.size(), minor);
  if (ec != std::errc() || end != minor_text.data() + minor_text.size() ||
      minor < sim::KubeScheduler::kOldestMinor || minor > sim::KubeScheduler::kNewestMinor) {
    return bad;
  }
  if (dot != std::string_view::npos) {  // a patch release: digits
    const std::string_view patch = text.substr(dot + 1);
    if (patch.empty() || patch.find_first_not_of("0123456789") != std::string_view::npos) {
      return bad;
    }
  }
  return minor;
}

// kube-scheduler as --scheduler-config configures it (upstream's defaults without), with
// --pod-max-backoff over its podMaxBackoffSeconds.
common::Result<sim::KubeScheduler::Options> SchedulerOptions(const Invocation& inv) {
  sim::KubeScheduler::Options options;
  if (auto path = inv.args.Get("scheduler-config")) {
    auto text = ReadFile(*path);
    if (!text.ok()) return text.error();
    auto configured = sim::ApplySchedulerConfig(*text, options);
    if (!configured.ok()) return configured.error().Wrap(*path);
    options = std::move(*configured);
  }
  auto max_backoff = Duration(inv, "pod-max-backoff", options.max_backoff_ms);
  if (!max_backoff.ok()) return max_backoff.error();
  if (*max_backoff < options.initial_backoff_ms) {
    const int64_t initial = options.initial_backoff_ms;
    return common::Error{"invalid --pod-max-backoff: at least kube-scheduler's initial backoff, " +
                         (initial % 1000 == 0 ? std::to_string(initial / 1000) + "s"
                                              : std::to_string(initial) + "ms")};
  }
  options.max_backoff_ms = *max_backoff;
  if (auto version = inv.args.Get("kube-version")) {
    auto minor = KubeMinor(*version);
    if (!minor.ok()) return minor.error();
    options.minor = *minor;
  }
  return options;
}

int Simulate(const Invocation& inv) {
  // The decisions log as the extender does; a simulation prints its table, not their lines.
  common::log::SetLevel(common::log::Level::kError);
  auto seed = Number(inv, "seed", 1, 0, INT64_MAX);
  if (!seed.ok()) return inv.Usage(seed.error().message);
  auto horizon = Duration(inv, "horizon", 6 * 3600'000);
  if (!horizon.ok()) return inv.Usage(horizon.error().message);
  auto scheduler = SchedulerOptions(inv);
  if (!scheduler.ok()) return inv.Usage(scheduler.error().message);
  std::vector<std::string> dirs = {*inv.args.Get("policy")};
  if (auto other = inv.args.Get("compare")) dirs.push_back(*other);
  std::vector<scheduler::model::PolicyPtr> policies;
  for (const std::string& dir : dirs) {
    auto policy = LoadPolicy(dir);
    if (!policy.ok()) return inv.Failed(policy.error().message);
    policies.push_back(*policy);
  }
  auto trace = TraceFor(inv, *policies.front(), static_cast<uint64_t>(*seed));
  if (!trace.ok()) return inv.Failed(trace.error().message);
  if (auto path = inv.args.Get("write-trace")) {
    std::ofstream out(*path, std::ios::trunc);
    out << sim::TraceToJson(*trace);
    if (!out) return inv.Failed("cannot write " + Quoted(*path));
  }
  std::ofstream timeline;
  if (auto path = inv.args.Get("timeline")) {
    timeline.open(*path, std::ios::trunc);
    if (!timeline) return inv.Failed("cannot write " + Quoted(*path));
  }
  std::vector<sim::Report> reports;
  for (size_t i = 0; i < policies.size(); ++i) {
    sim::SimulationOptions options;
    if (timeline.is_open()) {
      options.timeline = &timeline;
      timeline << "# policy " << dirs[i] << "\n";
    }
    options.label = LabelOf(dirs[i]);
    options.seed = static_cast<uint64_t>(*seed);
    options.horizon_after_last_arrival_ms = *horizon;
    options.scheduler = *scheduler;
    options.requeue = !inv.args.Bool("no-requeue");
    reports.push_back(sim::Simulate(policies[i], *trace, options));
  }
  inv.out() << "trace: " << (trace->name.empty() ? "(unnamed)" : trace->name) << ", "
            << trace->jobs.size() << " jobs\n";
  // "kube-scheduler[ v1.N][: FILE: what it sets]", when either flag is given.
  const std::string release =
      scheduler->minor == 0 ? "" : " v1." + std::to_string(scheduler->minor);
  if (auto path = inv.args.Get("scheduler-config")) {
    inv.out() << "kube-scheduler" << release << ": " << *path << ": "
              << sim::DescribeScheduling(*scheduler) << "\n";
  } else if (!release.empty()) {
    inv.out() << "kube-scheduler" << release << "\n";
  }
  if (inv.args.Bool("no-requeue")) {
    inv.out() << "extender: --requeue-lapsed-refusals=false (kube-scheduler alone decides when a "
                 "refused pod is tried again)\n";
  }
  inv.out() << "\n";
  sim::PrintReports(reports, inv.out());
  return kExitOk;
}

}  // namespace

Command SimulateCommand() {
  return Command{
      "simulate",
      "replay a workload trace through taskgov's decisions on virtual time",
      "",
      "Plays a trace of jobs (arrival, team namespace, priority class, pod sets, work) through\n"
      "taskgov's own filter, prioritize, preempt and bind decisions, its preemption controller,\n"
      "quota ledger and pending queues, with kube-scheduler, the kubelet and the job controllers\n"
      "played around them on virtual time, and prints utilisation, stranded accelerators, time\n"
      "to guarantee, borrowing per fair-share weight and per fair part while teams contend\n"
      "(Jain's indices), disruptions per job, work lost, ping-pong, waits per priority class\n"
      "and jobs that never ran. --compare plays the same trace under a second policy beside\n"
      "the first. kube-scheduler plays upstream's defaults, or what --scheduler-config sets\n"
      "(such as deploy/overlays/second-scheduler/scheduler-config.yaml: bin packing, 2 s\n"
      "backoff); a field it cannot play is an error. Runs offline; deterministic for a seed.\n"
      "Trace format and metrics: docs/simulate.md.\n",
      "taskgov simulate --policy scheduler/sim/samples/five-teams/policy \\\n"
      "    --trace scheduler/sim/samples/five-teams/day.json\n"
      "taskgov simulate --policy ./policy --compare ./policy-new-weights --trace day.json\n"
      "taskgov simulate --policy ./policy --trace day.json \\\n"
      "    --scheduler-config deploy/overlays/second-scheduler/scheduler-config.yaml\n"
      "taskgov simulate --policy ./policy --generate --nodes ml.p5.48xlarge=4 --jobs 500 "
      "--span 2h --seed 3 --write-trace day.json",
      {ValueFlag("policy", "DIR", "the policy directory (as the ConfigMap is mounted)"),
       ValueFlag("trace", "FILE", "the trace to play (JSON)"),
       ValueFlag("compare", "DIR", "a second policy to play the same trace under"),
       BoolFlag("generate", "play a synthetic trace instead (with --nodes, --jobs, --span)"),
       ValueFlag("nodes", "TYPE=N,...", "--generate: the cluster's node groups"),
       ValueFlag("jobs", "N", "--generate: how many jobs arrive (default 172)"),
       ValueFlag("span", "DURATION", "--generate: over how long they arrive (default 20m)"),
       ValueFlag("load", "X",
                 "--generate: work offered, in multiples of the cluster's capacity (default 1.2)"),
       ValueFlag("checkpoint-every", "DURATION",
                 "--generate: the jobs save a checkpoint this often (default: never)"),
       BoolFlag("announce-checkpoints",
                "--generate: the jobs write each checkpoint's time on their pods "
                "(taskgov.io/last-checkpoint)"),
       ValueFlag("seed", "N", "the generator's and kube-scheduler's seed (default 1)"),
       ValueFlag("write-trace", "FILE", "also write the trace played to FILE"),
       ValueFlag("timeline", "FILE", "write what happened to every pod, in virtual time"),
       ValueFlag("horizon", "DURATION", "stop this long after the last arrival (default 6h)"),
       ValueFlag("scheduler-config", "FILE",
                 "play kube-scheduler as this KubeSchedulerConfiguration (or the ConfigMap "
                 "holding it) sets it: backoffs, NodeResourcesFit's scoring strategy for the "
                 "taskgov profile, the extender's weight (default: upstream's defaults)"),
       ValueFlag("pod-max-backoff", "DURATION",
                 "kube-scheduler's podMaxBackoffSeconds, over --scheduler-config's (default "
                 "10s, upstream's)"),
       BoolFlag("no-requeue",
                "play the extender with --requeue-lapsed-refusals=false: it never asks "
                "kube-scheduler to try again a pod whose refusal lapsed"),
       ValueFlag("kube-version", "1.N",
                 "play the queue of this kube-scheduler release, 1.29 to 1.35: which events "
                 "retry a pod (default: every event retries every pod, more eagerly than any "
                 "release; the second-scheduler overlay's image is 1.30)")},
      0,
      0,
      {},
      [](const Invocation& inv) {
        if (!inv.args.Get("policy")) return inv.Usage("--policy DIR is required");
        return Simulate(inv);
      },
      {}};
}

}  // namespace taskgov::cli
