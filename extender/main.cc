// taskgov-extender: the process. The only file that knows every concrete class; it only wires.
//
// Wiring: the ConfigMap directory → ConfigWatcher → PolicyStore → IdleSharing (HyperPod's
// IdleResourceSharing: the nodes' unallocated capacity added to the sharing cohort's quota) →
// Admission::ApplyPolicy (ledger + cluster view); the Kubernetes API → Informers → ClusterState
// (usage, node cache, pending pods) and ApiKubeActions (bind, evict, events); LeaderElector gates
// the webhooks; WebhookHandlers serve Admission over HttpServer; a housekeeping Ticker runs the
// Reconciler (expiry of assumed reservations, ledger repairs), IdleSharing's refresh (the nodes'
// capacity changed) and MemoryTrim (free heap back to the OS after a quiet spell), and another
// the PreemptionController (poked too when a pod starts waiting, a victim goes or a policy is
// loaded); Metrics reads them all when scraped. Readiness: a valid config,
// informers synced, and leadership.
//
// Run reads as its steps: parse and validate the flags, block the termination signals, build
// the metrics, the policy watcher, the domain, the Kubernetes side, the admission and the HTTP
// servers, start, wait for a signal, shut down.

#include <malloc.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "config/check_config.h"
#include "config/loader.h"
#include "config/policy_store.h"
#include "config/watcher.h"
#include "extender/admin_api.h"
#include "extender/body_budget.h"
#include "extender/console_access.h"
#include "extender/console_assets.h"
#include "extender/flags.h"
#include "extender/handlers.h"
#include "extender/http_server.h"
#include "extender/memory_trim.h"
#include "extender/metrics_http.h"
#include "extender/metrics_sources.h"
#include "extender/self_signed.h"
#include "extender/task_history.h"
#include "extender/ticker.h"
#include "extender/usage_history.h"
#include "metrics/metrics.h"
#include "scheduler/actions/job_resumer.h"
#include "scheduler/actions/preemption_controller.h"
#include "scheduler/actions/requeuer.h"
#include "scheduler/common/clock.h"
#include "scheduler/common/log.h"
#include "scheduler/decisions/admission.h"
#include "scheduler/kube/access_review.h"
#include "scheduler/kube/actions.h"
#include "scheduler/kube/client.h"
#include "scheduler/kube/config.h"
#include "scheduler/kube/informers.h"
#include "scheduler/kube/leader_election.h"
#include "scheduler/kube/lease.h"
#include "scheduler/ledger/quota_book.h"
#include "scheduler/model/kube_json.h"
#include "scheduler/state/cluster_state.h"
#include "scheduler/state/idle_sharing.h"
#include "scheduler/state/reconciler.h"

namespace taskgov::extender {
namespace {

constexpr std::string_view kComponent = "main";
constexpr char kVersion[] = "0.1.0";
constexpr char kRevision[] = "dev";
constexpr std::chrono::milliseconds kHousekeepingPeriod{1'000};
// The preemption loop also runs when a pod starts waiting or a victim of a round in flight goes
// (Ticker::Poke): this long after the first such event, and no sooner than this after its
// previous run returned. Not at once: a run at the instant a pod is created or refused decides
// for the pods of the same burst that kube-scheduler has not tried yet (it counted the last free
// capacity as claimed by a pod the filter had just refused, evicted for a pod the scheduler then
// placed there, and set untried pods aside for 5 s: e2e's FairShare scenario failed in 2 runs of
// 4 so, and in 8 of 8 when only refusals poked). 250 ms lets the scheduler try a burst first
// (that scenario: 8 of 8); one run answers every event within it; and as a run gathers the
// running pods of the flavors it decides on (up to ~27 ms at 100,000 pods), the loop takes at
// most about a tenth of a core however fast pods come. A reclaim starts ~250 ms after its pod
// is created, instead of up to a second.
constexpr std::chrono::milliseconds kPreemptionMinGap{250};
// The heap's free pages go back to the OS when the webhooks have been quiet this long (MemoryTrim).
constexpr int64_t kMemoryTrimQuietMs = 2'000;
// The console's history sampling and the policy watcher's reloads run below the webhook threads'
// CPU priority (kube-scheduler waits for every filter; nobody waits for a sample, and a reload
// may take a second longer). The preemption loop keeps the default: a
// run's evictions go out together, before the victims' kubelets act on the first; so does
// housekeeping, whose reconcile holds the ledger still while it runs.
constexpr int kBackgroundNice = 10;

// malloc_trim(0): every arena's free pages back to the OS (it locks each arena in turn, so it
// runs only when the webhooks are quiet), timed.
void ReturnFreeMemory(const common::Clock& clock) {
  const int64_t start = clock.SteadyNowMs();
  const int released = malloc_trim(0);
  common::log::Debug(kComponent, "free heap memory returned to the OS",
                     {{"released", released != 0}, {"ms", clock.SteadyNowMs() - start}});
}

int Fail(const std::string& message) {
  std::cerr << "taskgov-extender: " << message << "\n";
  return 2;
}

common::Status CheckReadable(const std::string& path, std::string_view what) {
  if (path.empty()) return common::Status::Ok();
  if (::access(path.c_str(), R_OK) != 0) {
    return common::Error{"cannot read " + std::string(what) + " '" + path +
                         "': " + strerror(errno)};
  }
  return common::Status::Ok();
}

// {"webhook":W,"metrics":M,"health":H} and, when the console listens (`console` not 0),
// ,"console":C.
common::Status WritePortFile(const std::string& path, uint16_t webhook, uint16_t metrics,
                             uint16_t health, uint16_t console) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << "{\"webhook\":" << webhook << ",\"metrics\":" << metrics << ",\"health\":" << health;
    if (console != 0) out << ",\"console\":" << console;
    out << "}\n";
    if (!out) return common::Error{"cannot write port file '" + tmp + "'"};
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    return common::Error{"cannot rename port file to '" + path + "': " + strerror(errno)};
  }
  return common::Status::Ok();
}

std::string DefaultIdentity() {
  char host[256] = {0};
  if (::gethostname(host, sizeof(host) - 1) != 0) snprintf(host, sizeof(host), "taskgov");
  std::random_device rd;
  char suffix[16];
  snprintf(suffix, sizeof(suffix), "%08x", rd());
  return std::string(host) + "_" + suffix;
}

std::string LeaseNamespace(const Flags& flags) {
  if (!flags.leader_elect_namespace.empty()) return flags.leader_elect_namespace;
  std::ifstream in("/var/run/secrets/kubernetes.io/serviceaccount/namespace");
  std::string ns;
  if (in && std::getline(in, ns) && !ns.empty()) return ns;
  return "default";
}

// Everything the process runs, in construction order (destroyed in reverse: the loops and
// servers first, the metrics last). The Kubernetes members are null with --no-kube, the lease
// store and elector without --leader-elect.
struct Process {
  explicit Process(const Flags& f)
      : flags(f), identity(f.identity.empty() ? DefaultIdentity() : f.identity) {}

  const Flags& flags;
  const std::string identity;
  common::SystemClock clock;
  std::unique_ptr<metrics::Metrics> metrics;
  // Policy.
  config::PolicyStore policies;
  std::atomic<bool> config_valid{false};
  std::unique_ptr<config::ConfigWatcher> watcher;
  // Domain.
  std::unique_ptr<scheduler::ledger::QuotaBook> book;
  std::unique_ptr<scheduler::state::ClusterState> cluster;
  std::unique_ptr<scheduler::state::Reconciler> reconciler;
  std::unique_ptr<TaskHistory> tasks;  // waits, run times and ended tasks, for the console
  // Kubernetes.
  std::unique_ptr<scheduler::kube::KubeClient> client;
  std::unique_ptr<scheduler::kube::ApiKubeActions> actions;
  std::unique_ptr<RecordingKubeActions> recorded_actions;  // actions, told to `tasks`
  std::unique_ptr<scheduler::kube::Informers> informers;
  std::unique_ptr<scheduler::kube::ApiLeaseStore> lease_store;
  std::unique_ptr<scheduler::kube::LeaderElector> elector;
  std::unique_ptr<scheduler::actions::PreemptionController> preemption;
  std::unique_ptr<scheduler::decisions::Admission> admission;
  std::unique_ptr<scheduler::state::IdleSharing> idle_sharing;  // the policy admission is given
  std::unique_ptr<scheduler::actions::JobResumer> resumer;      // with `preemption`
  // With `preemption`, unless --requeue-lapsed-refusals=false.
  std::unique_ptr<scheduler::actions::Requeuer> requeuer;
  // HTTP.
  std::unique_ptr<WebhookHandlers> handlers;
  std::unique_ptr<HttpServer> health;  // /metrics, /healthz, /readyz (--metrics-listen)
  std::unique_ptr<HttpServer> probes;  // /healthz, /readyz (--health-listen)
  std::unique_ptr<HttpServer> webhooks;
  std::unique_ptr<scheduler::kube::ApiAccessReviewer> reviewer;
  std::unique_ptr<ConsoleAccess> console_access;  // null: no checks (--console-auth=none)
  std::unique_ptr<UsageHistory> history;
  std::unique_ptr<AdminApi> admin;
  std::unique_ptr<HttpServer> console;  // null with --console-listen=
  // Background loops.
  std::optional<MemoryTrim> memory_trim;  // run by housekeeping
  std::optional<Ticker> preemption_loop;
  std::optional<Ticker> housekeeping;
  std::optional<Ticker> history_loop;  // samples the console's history (with the console)
};

// The exit code when the command line is all there is to do (an error, --help,
// --check-config); nullopt to run, with `flags` set and the log level applied.
std::optional<int> ParseCommandLine(int argc, char** argv, Flags* flags) {
  std::vector<std::string_view> args(argv + 1, argv + argc);
  common::Result<Flags> parsed = ParseFlags(args);
  if (!parsed.ok()) return Fail(parsed.error().message);
  *flags = std::move(*parsed);
  if (flags->help) {
    std::cout << Usage();
    return 0;
  }
  if (!flags->check_config.empty()) return config::RunCheckConfig(flags->check_config, std::cout);
  common::log::Level level = common::log::Level::kInfo;
  (void)common::log::ParseLevel(flags->log_level, &level);  // validated by ParseFlags
  common::log::SetLevel(level);
  return std::nullopt;
}

// What ParseFlags cannot check flag by flag: timings and files that go together, and files
// that must be readable.
common::Status ValidateFlags(const Flags& flags) {
  if (!(flags.retry_period < flags.renew_deadline && flags.renew_deadline < flags.lease_duration)) {
    return common::Error{"leader election needs retry period < renew deadline < lease duration"};
  }
  if ((flags.tls_cert_file.empty()) != (flags.tls_key_file.empty())) {
    return common::Error{"--tls-cert-file and --tls-key-file go together"};
  }
  if (!flags.tls_client_ca_file.empty() && flags.tls_cert_file.empty()) {
    return common::Error{"--tls-client-ca-file needs --tls-cert-file and --tls-key-file"};
  }
  if (flags.console_tls_cert_file.empty() != flags.console_tls_key_file.empty()) {
    return common::Error{"--console-tls-cert-file and --console-tls-key-file go together"};
  }
  for (auto [path, what] :
       {std::pair{flags.config_dir, "config directory"}, std::pair{flags.kubeconfig, "kubeconfig"},
        std::pair{flags.tls_cert_file, "TLS certificate"}, std::pair{flags.tls_key_file, "TLS key"},
        std::pair{flags.tls_client_ca_file, "TLS client CA"},
        std::pair{flags.console_tls_cert_file, "console TLS certificate"},
        std::pair{flags.console_tls_key_file, "console TLS key"}}) {
    if (common::Status s = CheckReadable(path, what); !s.ok()) return s;
  }
  return common::Status::Ok();
}

// Blocks the termination signals and SIGHUP before any thread starts, so every thread inherits
// the mask and WaitForTermination is the only place they are delivered.
sigset_t BlockTerminationSignals() {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  return signals;
}

// Waits for SIGTERM or SIGINT and returns it; each SIGHUP meanwhile re-reads the policy (through
// the watcher, with the same validation as any reload) and serving goes on.
int WaitForTermination(Process& p, const sigset_t& signals) {
  while (true) {
    int signal_number = 0;
    if (sigwait(&signals, &signal_number) != 0) continue;
    if (signal_number != SIGHUP) return signal_number;
    common::log::Info(kComponent, "SIGHUP: re-reading the policy",
                      {{"config_dir", p.flags.config_dir}});
    p.watcher->RequestReload();
  }
}

void BuildMetrics(Process& p) {
  metrics::Options options;
  options.kueue_compatible = p.flags.kueue_metrics;
  options.build = metrics::BuildInfo{kVersion, kRevision};
  options.clock = &p.clock;
  p.metrics = std::make_unique<metrics::Metrics>(options);
}

// A reload finished: counted; a valid policy, already applied by the store's subscribers when it
// was published, is said to be in force ("policy loaded", which tools wait for), and the
// preemption loop runs soon (quotas and priorities changed: a reclaim may be due now). The
// watcher logs every attempt itself.
void OnPolicyReload(Process& p, const config::LoadResult& result) {
  p.metrics->ObserveConfigReload(result.policy != nullptr, p.clock.NowMs());
  if (!result.policy) return;
  p.config_valid.store(true, std::memory_order_release);
  if (p.preemption_loop) p.preemption_loop->Poke();  // none yet at the first load
  common::log::Info("config", "policy loaded",
                    {{"teams", static_cast<int64_t>(result.policy->teams.size())},
                     {"hash", result.content_hash}});
}

// The watcher, with the first load done (valid or not).
void BuildPolicyWatcher(Process& p) {
  config::WatcherOptions options;
  options.dir = p.flags.config_dir;
  options.on_reload = [&p](const config::LoadResult& result) { OnPolicyReload(p, result); };
  options.nice = kBackgroundNice;  // reloads (SIGHUP's too) take no CPU from the webhooks
  p.watcher = std::make_unique<config::ConfigWatcher>(&p.policies, options);
  (void)p.watcher->Reload();
}

void BuildDomain(Process& p) {
  p.book = std::make_unique<scheduler::ledger::QuotaBook>(p.policies.Current(), &p.clock);
  scheduler::state::ClusterState::Options cluster_options;
  cluster_options.scheduler_name = p.flags.scheduler_name;
  p.cluster =
      std::make_unique<scheduler::state::ClusterState>(p.book.get(), &p.clock, cluster_options);
  metrics::Metrics* metrics = p.metrics.get();
  p.tasks = std::make_unique<TaskHistory>(TaskHistory::Options{});
  TaskHistory* tasks = p.tasks.get();
  p.cluster->SetLifecycleObserver(
      [metrics, tasks](const scheduler::state::ClusterState::PodLifecycle& event) {
        metrics->ObservePodLifecycle(event);
        tasks->OnLifecycle(event);
      });
  p.reconciler = std::make_unique<scheduler::state::Reconciler>(
      p.book.get(), p.cluster.get(), &p.clock, scheduler::state::Reconciler::Options{});
}

void BuildLeaderElector(Process& p) {
  p.lease_store = std::make_unique<scheduler::kube::ApiLeaseStore>(
      p.client.get(), LeaseNamespace(p.flags), p.flags.leader_elect_name);
  scheduler::kube::LeaderElectionOptions election;
  election.identity = p.identity;
  election.lease_duration = p.flags.lease_duration;
  election.renew_deadline = p.flags.renew_deadline;
  election.retry_period = p.flags.retry_period;
  election.on_started_leading = [&p] {
    // A new leader inherits no reservations: rebuild the counters from what is bound.
    std::vector<scheduler::ledger::Ledger::Drift> drift = p.book->Reconcile();
    common::log::Info(
        "leader", "started leading",
        {{"identity", p.identity}, {"drift_cells", static_cast<int64_t>(drift.size())}});
  };
  election.on_stopped_leading = [&p] {
    common::log::Warn("leader", "stopped leading", {{"identity", p.identity}});
  };
  p.elector = std::make_unique<scheduler::kube::LeaderElector>(p.lease_store.get(), election);
}

// The API client, actions, preemption controller, informers and (with --leader-elect) the
// elector; with --no-kube, the cluster view counts as synced instead.
common::Status BuildKubeSide(Process& p) {
  if (p.flags.no_kube) {
    p.cluster->OnSynced(scheduler::ObjectKind::kPod);
    p.cluster->OnSynced(scheduler::ObjectKind::kNode);
    return common::Status::Ok();
  }
  common::Result<scheduler::kube::ClusterConfig> cluster_config =
      scheduler::kube::LoadClusterConfig(p.flags.kubeconfig, p.flags.kube_context,
                                         scheduler::kube::ProcessEnv());
  if (!cluster_config.ok()) {
    return common::Error{
        "no usable Kubernetes API configuration: " + cluster_config.error().message +
        " (give --kubeconfig, run in a cluster, or --no-kube)"};
  }
  auto created = scheduler::kube::KubeClient::Create(*cluster_config);
  if (!created.ok()) return created.error();
  p.client = std::move(created.value());
  scheduler::kube::KubeActionsOptions action_options;
  action_options.reporting_instance = p.identity;
  p.actions = std::make_unique<scheduler::kube::ApiKubeActions>(p.client.get(), action_options);
  p.recorded_actions =
      std::make_unique<RecordingKubeActions>(p.actions.get(), p.tasks.get(), &p.clock);
  p.preemption = std::make_unique<scheduler::actions::PreemptionController>(
      p.book.get(), p.cluster.get(), p.recorded_actions.get(), &p.clock,
      scheduler::actions::PreemptionController::Options{});
  // The informers feed the cluster state; the controller hears of pods waiting and going
  // through the observers StartPreemptionLoop sets.
  scheduler::kube::InformerOptions informer_options;
  informer_options.pod_field_selector = p.flags.pod_field_selector;
  p.informers = std::make_unique<scheduler::kube::Informers>(
      p.client.get(), p.cluster.get(),
      scheduler::kube::ObjectDecoders{scheduler::model::DecodePod, scheduler::model::DecodeNode},
      informer_options);
  if (p.flags.leader_elect) BuildLeaderElector(p);
  return common::Status::Ok();
}

// Why webhooks are refused and /readyz fails; "" when serving.
std::string NotReady(const Process& p) {
  if (!p.config_valid.load(std::memory_order_acquire)) {
    return "not ready: no valid configuration in " + p.flags.config_dir;
  }
  if (!p.cluster->synced()) return "not ready: waiting for initial sync";
  // Serving needs the lease *and* the new leader's resync (on_started_leading) done.
  if (p.elector && !p.elector->is_serving()) return "not leader";
  return "";
}

// The admission, gated by readiness and observed by the metrics, with the policy in force.
void BuildAdmission(Process& p) {
  scheduler::decisions::Admission::Options options;
  options.scheduler_name = p.flags.scheduler_name;
  p.admission = std::make_unique<scheduler::decisions::Admission>(
      p.book.get(), p.cluster.get(), p.actions.get(), &p.clock, options);
  p.admission->SetGate([&p] { return NotReady(p); });
  metrics::Metrics* metrics = p.metrics.get();
  p.admission->SetObserver([metrics](const scheduler::decisions::FilterDecision& decision) {
    metrics->ObserveFilter(decision);
  });
  if (scheduler::actions::PreemptionController* preemption = p.preemption.get()) {
    p.admission->SetPreemptionStatus(
        [preemption](std::string_view uid) { return preemption->StatusFor(uid); });
    p.admission->SetPreemptorState(
        [preemption](std::string_view uid) { return preemption->StateOf(uid); });
    // The jobs the controller paused are resumed when the filter would admit them whole.
    scheduler::decisions::Admission* explaining = p.admission.get();
    p.resumer = std::make_unique<scheduler::actions::JobResumer>(
        p.cluster.get(), p.recorded_actions.get(),
        [explaining](const scheduler::model::Pod& pod) { return explaining->Explain(pod); },
        &p.clock, scheduler::actions::JobResumer::Options{},
        [explaining](const scheduler::model::Pod& pod) { return explaining->ReserveForGang(pod); });
    // Pods whose refusal lapses without a cluster event are tried again at once.
    if (p.flags.requeue_lapsed_refusals) {
      p.requeuer = std::make_unique<scheduler::actions::Requeuer>(
          p.cluster.get(), p.recorded_actions.get(),
          [explaining](const scheduler::model::Pod& pod, bool known_to_wait) {
            return explaining->OutlookOf(pod, known_to_wait);
          },
          &p.clock, scheduler::actions::Requeuer::Options{});
    }
  }
  // The ledger and the cluster view follow the published policy from now on (the current one at
  // once, then every reload, in order), with the unallocated capacity of the nodes when the policy
  // enables IdleResourceSharing (housekeeping follows the nodes).
  scheduler::decisions::Admission* admission = p.admission.get();
  p.idle_sharing = std::make_unique<scheduler::state::IdleSharing>(
      &p.cluster->nodes(), &p.clock,
      [admission](const scheduler::model::PolicyPtr& policy) { admission->ApplyPolicy(policy); },
      scheduler::state::IdleSharing::Options{});
  scheduler::state::IdleSharing* idle_sharing = p.idle_sharing.get();
  p.policies.Subscribe([idle_sharing](const scheduler::model::PolicyPtr& policy) {
    idle_sharing->SetPolicy(policy);
  });
}

// What scrapes read: the domain, the Kubernetes side and the listeners.
void ConnectMetricsSources(Process& p) {
  std::vector<HttpListenerSource> listeners = {
      {"webhook", p.webhooks.get()}, {"metrics", p.health.get()}, {"health", p.probes.get()}};
  if (p.console) listeners.push_back({"console", p.console.get()});
  metrics::Sources sources =
      MetricsSources(p.book.get(), p.cluster.get(), p.reconciler.get(), p.informers.get(),
                     p.preemption.get(), std::move(listeners));
  if (const ConsoleAccess* access = p.console_access.get()) {
    sources.console_access = [access] {
      const ConsoleAccessStats s = access->stats();
      return metrics::ConsoleAccessTotals{s.full, s.team_scoped, s.unauthenticated, s.forbidden,
                                          s.errors};
    };
  }
  if (const scheduler::actions::Requeuer* requeuer = p.requeuer.get()) {
    sources.requeues = [requeuer] {
      const scheduler::actions::Requeuer::Stats s = requeuer->stats();
      return metrics::RequeueTotals{s.requeued, s.failed};
    };
  }
  p.metrics->SetSources(std::move(sources));
}

// GET /healthz (the process serves) and /readyz (NotReady), for both listeners that serve them.
std::vector<Route> ProbeRoutes(const Process& p) {
  std::vector<Route> routes;
  routes.push_back(Route{"/healthz", "GET", 0, [](const HttpRequest&) {
                           return HttpResponse{200, "text/plain", "ok\n", {}};
                         }});
  routes.push_back(Route{"/readyz", "GET", 0, [&p](const HttpRequest&) {
                           const std::string why = NotReady(p);
                           if (why.empty()) return HttpResponse{200, "text/plain", "ok\n", {}};
                           return HttpResponse{503, "text/plain", why + "\n", {}};
                         }});
  return routes;
}

// A listener of the process's with `max_connections` and one I/O thread, the webhooks'
// deadlines.
HttpServerOptions SmallListener(const Process& p, std::string name, const HostPort& at,
                                size_t max_connections) {
  HttpServerOptions options;
  options.listener = std::move(name);
  options.address = at.host;
  options.port = at.port;
  options.io_threads = 1;
  options.header_timeout = p.flags.header_timeout;
  options.request_timeout = p.flags.request_timeout;
  options.idle_timeout = p.flags.idle_timeout;
  options.max_connections = max_connections;
  return options;
}

// /metrics, /healthz and /readyz on the metrics listener: its own cap and I/O thread, the same
// deadlines as the webhooks.
std::unique_ptr<HttpServer> BuildHealthServer(const Process& p) {
  std::vector<Route> routes = ProbeRoutes(p);
  routes.push_back(MetricsRoute(*p.metrics));
  HttpServerOptions options =
      SmallListener(p, "metrics", p.flags.metrics_listen, p.flags.metrics_max_connections);
  options.nice = kBackgroundNice;  // a scrape storm takes no CPU from the webhooks
  return std::make_unique<HttpServer>(std::move(options), std::move(routes));
}

// /healthz and /readyz alone on the health listener: a thread and a cap /metrics never touches
// (a scrape storm, or clients pipelining /metrics without reading, hold the metrics listener's
// I/O thread and its connections, not these).
std::unique_ptr<HttpServer> BuildProbeServer(const Process& p) {
  return std::make_unique<HttpServer>(
      SmallListener(p, "health", p.flags.health_listen, Flags::kHealthMaxConnections),
      ProbeRoutes(p));
}

// The console's TLS: the given files; else, off loopback, a self-signed certificate made now
// (readers' tokens never cross a network in clear); on loopback, none.
std::optional<HttpTlsOptions> ConsoleTls(const Flags& flags) {
  HttpTlsOptions tls;
  if (!flags.console_tls_cert_file.empty()) {
    tls.cert_chain_file = flags.console_tls_cert_file;
    tls.key_file = flags.console_tls_key_file;
    return tls;
  }
  const std::string& host = flags.console_listen->host;
  if (host == "127.0.0.1" || host == "::1") return std::nullopt;
  std::vector<std::string> names = {"taskgov-console", "localhost"};
  const std::string ns = LeaseNamespace(flags);
  for (const char* suffix : {"", ".svc", ".svc.cluster.local"}) {
    names.push_back("taskgov-console." + ns + suffix);
  }
  common::Result<PemPair> made = SelfSignedCertificate(names);
  if (!made.ok()) {
    common::log::Error(kComponent, "console: no certificate; the console is not served",
                       {{"error", made.error().message}});
    tls.cert_chain_file = "/nonexistent: " + made.error().message;  // Start fails, named
    return tls;
  }
  common::log::Warn(kComponent,
                    "console: serving a self-signed certificate made at startup (give "
                    "--console-tls-cert-file and --console-tls-key-file to serve your own)",
                    {{"listen", host}});
  tls.cert_chain_pem = std::move(made->certificate);
  tls.key_pem = std::move(made->key);
  tls.reload_interval = std::chrono::milliseconds(0);
  return tls;
}

// The read-only admin API on the console listener (none with --console-listen=): its own cap
// and I/O thread, the same deadlines as the webhooks.
void BuildConsoleServer(Process& p) {
  if (!p.flags.console_listen) return;
  AdminApi::Sources sources;
  sources.book = p.book.get();
  sources.cluster = p.cluster.get();
  if (scheduler::actions::PreemptionController* preemption = p.preemption.get()) {
    sources.preemption_status = [preemption](std::string_view uid) {
      return preemption->StatusFor(uid);
    };
    sources.preemptions = [preemption] { return PreemptionTotalsOf(preemption->Stats()); };
  }
  sources.reload_status = [&p] { return p.watcher->status(); };
  sources.clock = &p.clock;
  sources.tasks = p.tasks.get();
  scheduler::decisions::Admission* admission = p.admission.get();
  sources.topology = [admission](const std::string& workload) {
    return admission->PlacementOf(workload);
  };
  sources.explain = [admission](const scheduler::model::Pod& pod) {
    return admission->Explain(pod);
  };
  UsageHistory::Options history;
  history.interval_ms = p.flags.history_interval.count();
  // The last hour at full resolution, whatever the interval.
  history.fine_points = static_cast<size_t>(std::max<int64_t>(1, 3'600'000 / history.interval_ms));
  p.history = std::make_unique<UsageHistory>(history);
  sources.history = p.history.get();
  if (p.client && p.flags.console_auth != "none") {
    p.reviewer = std::make_unique<scheduler::kube::ApiAccessReviewer>(p.client.get());
    ConsoleAccess::Options access;
    const std::string& resource = p.flags.console_resource;
    const size_t dot = resource.find('.');
    access.resource = resource.substr(0, dot);
    access.group = dot == std::string::npos ? "" : resource.substr(dot + 1);
    access.audience = p.flags.console_token_audience;
    p.console_access = std::make_unique<ConsoleAccess>(p.reviewer.get(), &p.clock, access);
    sources.access = p.console_access.get();
  }
  p.admin = std::make_unique<AdminApi>(std::move(sources));
  HttpServerOptions options =
      SmallListener(p, "console", *p.flags.console_listen, Flags::kConsoleMaxConnections);
  options.tls = ConsoleTls(p.flags);
  options.nice = kBackgroundNice;  // readers wait; the webhooks do not
  // Team data and decisions: no cache keeps a copy (the console's assets say no-cache).
  options.response_headers = {{"Cache-Control", "no-store"}};
  std::vector<Route> routes = p.admin->Routes();
  for (Route& route : ConsoleRoutes()) routes.push_back(std::move(route));
  p.console = std::make_unique<HttpServer>(options, std::move(routes));
}

// The webhook handlers and their listener (TLS when given).
void BuildWebhookServer(Process& p) {
  WebhookOptions webhook_options;
  webhook_options.url_prefix = p.flags.url_prefix;
  webhook_options.filter_body_limit = p.flags.filter_body_limit;
  webhook_options.prioritize_body_limit = p.flags.prioritize_body_limit;
  webhook_options.preempt_body_limit = p.flags.preempt_body_limit;
  webhook_options.bind_body_limit = p.flags.bind_body_limit;
  p.handlers = std::make_unique<WebhookHandlers>(p.admission.get(), webhook_options);

  HttpServerOptions options;
  options.listener = "webhook";
  options.address = p.flags.listen.host;
  options.port = p.flags.listen.port;
  options.io_threads = p.flags.io_threads;
  options.header_timeout = p.flags.header_timeout;
  options.request_timeout = p.flags.request_timeout;
  options.idle_timeout = p.flags.idle_timeout;
  options.max_connections = p.flags.max_connections;
  options.body_budget = std::make_shared<BodyBudget>(p.flags.max_inflight_body_bytes);
  options.observer = MetricsObserver(*p.metrics);
  if (!p.flags.tls_cert_file.empty()) {
    HttpTlsOptions tls;
    tls.cert_chain_file = p.flags.tls_cert_file;
    tls.key_file = p.flags.tls_key_file;
    tls.client_ca_file = p.flags.tls_client_ca_file;
    options.tls = tls;
  }
  p.webhooks = std::make_unique<HttpServer>(options, p.handlers->Routes());
}

// The preemption loop (with Kubernetes): a run every tick on the serving leader, and soon after a
// pod starts waiting or a victim of a round in flight goes — the cluster state's observers poke
// the loop, so they are set here, before anything that reports pods starts. When a victim goes,
// its preemptor is nominated at once (otherwise at the next run, and another team's pod may take
// the capacity in between).
void StartPreemptionLoop(Process& p) {
  scheduler::actions::PreemptionController* preemption = p.preemption.get();
  if (preemption == nullptr) return;
  Ticker& loop = p.preemption_loop.emplace(
      kHousekeepingPeriod,
      [&p, preemption](uint64_t) {
        if (!NotReady(p).empty()) return;
        (void)preemption->RunOnce();
        (void)p.resumer->RunOnce();
        if (p.requeuer) (void)p.requeuer->RunOnce();
      },
      /*nice=*/0, kPreemptionMinGap);
  p.cluster->SetPodWaitingObserver([&loop] { loop.Poke(); });
  p.cluster->SetPodGoneObserver([preemption, &loop](std::string_view uid) {
    if (preemption->OnPodGone(uid)) loop.Poke();
  });
}

// The preemption loop first (see above); the listeners, the watcher, the informers and the
// elector; then the other loops; then the port file and the "serving" line.
common::Status Start(Process& p) {
  StartPreemptionLoop(p);
  if (common::Status s = p.probes->Start(); !s.ok()) return s;
  if (common::Status s = p.health->Start(); !s.ok()) return s;
  if (common::Status s = p.webhooks->Start(); !s.ok()) return s;
  if (p.console) {
    if (common::Status s = p.console->Start(); !s.ok()) return s;
  }
  if (common::Status s = p.watcher->Start(); !s.ok()) {
    common::log::Warn("config", "no inotify on the config directory; polling only",
                      {{"error", s.error().message}});
  }
  if (p.informers) p.informers->Start();
  if (p.elector) p.elector->Start();
  scheduler::state::Reconciler* reconciler = p.reconciler.get();
  MemoryTrim& trim = p.memory_trim.emplace(
      kMemoryTrimQuietMs,
      [&p] { return p.webhooks->stats().requests + (p.console ? p.console->stats().requests : 0); },
      [&p] { ReturnFreeMemory(p.clock); });
  p.housekeeping.emplace(kHousekeepingPeriod, [&p, reconciler, &trim](uint64_t) {
    (void)p.idle_sharing->Refresh();
    reconciler->Tick();
    trim.Tick(p.clock.SteadyNowMs());
  });
  if (p.admin) {
    p.history_loop.emplace(
        p.flags.history_interval,
        [&p](uint64_t) { p.history->Sample(p.clock.NowMs(), p.admin->HistorySnapshot()); },
        kBackgroundNice);
  }

  if (!p.flags.port_file.empty()) {
    const uint16_t console = p.console ? p.console->port() : 0;  // a bound port is never 0
    if (common::Status s = WritePortFile(p.flags.port_file, p.webhooks->port(), p.health->port(),
                                         p.probes->port(), console);
        !s.ok()) {
      return s;
    }
  }
  common::log::Info(kComponent, "serving",
                    {{"webhook_port", static_cast<int>(p.webhooks->port())},
                     {"metrics_port", static_cast<int>(p.health->port())},
                     {"health_port", static_cast<int>(p.probes->port())},
                     {"console_port", p.console ? static_cast<int>(p.console->port()) : 0},
                     {"config_dir", p.flags.config_dir},
                     {"identity", p.identity},
                     {"kube", !p.flags.no_kube}});
  return common::Status::Ok();
}

// Webhooks drain first (for `drain`); the loops, the elector, the informers and the watcher
// stop; /metrics and the probes go last (the health listener's after the metrics listener's). Safe
// on a process whose Start failed part way: every part stops only what it started, and no thread is
// left to call into what the Process destroys.
void StopAll(Process& p, std::chrono::milliseconds drain) {
  if (p.webhooks) p.webhooks->Shutdown(drain);
  if (p.preemption_loop) p.preemption_loop->Stop();
  if (p.housekeeping) p.housekeeping->Stop();
  if (p.history_loop) p.history_loop->Stop();
  if (p.elector) p.elector->Stop();
  if (p.informers) p.informers->Stop();
  // No writer or filter call is left: the queues' applier stops before the tickers its join
  // announcements poke are destroyed.
  if (p.cluster) p.cluster->pending().Stop();
  if (p.watcher) p.watcher->Stop();
  if (p.console) p.console->Shutdown(std::chrono::milliseconds(100));
  if (p.health) p.health->Shutdown(std::chrono::milliseconds(100));
  if (p.probes) p.probes->Shutdown(std::chrono::milliseconds(100));
}

void Shutdown(Process& p, int signal_number) {
  common::log::Info(kComponent, "shutting down", {{"signal", strsignal(signal_number)}});
  StopAll(p, p.flags.shutdown_drain);
  common::log::Info(kComponent, "stopped");
}

// Makes room for both listeners' connection caps in RLIMIT_NOFILE (within the hard limit).
void RaiseFileLimit(const Flags& flags) {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) return;
  const FileLimitPlan plan = PlanFileLimit(flags, limit.rlim_cur, limit.rlim_max);
  if (plan.soft > limit.rlim_cur) {
    rlimit raised = limit;
    raised.rlim_cur = plan.soft;
    if (::setrlimit(RLIMIT_NOFILE, &raised) != 0) {
      common::log::Warn(kComponent, "could not raise the open-file limit",
                        {{"from", static_cast<uint64_t>(limit.rlim_cur)},
                         {"to", plan.soft},
                         {"error", std::string(std::strerror(errno))}});
    }
  }
  if (!plan.warning.empty()) common::log::Warn(kComponent, plan.warning);
}

int Run(int argc, char** argv) {
  Flags flags;
  if (std::optional<int> done = ParseCommandLine(argc, argv, &flags)) return *done;
  if (common::Status s = ValidateFlags(flags); !s.ok()) return Fail(s.error().message);
  for (const std::string& warning : FlagWarnings(flags)) common::log::Warn(kComponent, warning);
  RaiseFileLimit(flags);
  // A peer that closes early must cost a write error, not the process.
  ::signal(SIGPIPE, SIG_IGN);
  const sigset_t signals = BlockTerminationSignals();

  Process p(flags);
  BuildMetrics(p);
  BuildPolicyWatcher(p);
  BuildDomain(p);
  if (common::Status s = BuildKubeSide(p); !s.ok()) return Fail(s.error().message);
  BuildAdmission(p);
  p.health = BuildHealthServer(p);
  p.probes = BuildProbeServer(p);
  BuildWebhookServer(p);
  BuildConsoleServer(p);
  ConnectMetricsSources(p);
  if (common::Status s = Start(p); !s.ok()) {
    StopAll(p, std::chrono::milliseconds(0));  // the threads Start did start, before p goes
    return Fail(s.error().message);
  }

  Shutdown(p, WaitForTermination(p, signals));
  return 0;
}

}  // namespace
}  // namespace taskgov::extender

int main(int argc, char** argv) { return taskgov::extender::Run(argc, argv); }
