// taskgov-extender: the process. The only file that knows every concrete class.
//
// Wiring: the ConfigMap directory → ConfigWatcher → Admission::ApplyPolicy (ledger + cluster
// view); the Kubernetes API → Informers → ClusterState (usage, node cache, pending pods) and
// ApiKubeActions (bind, evict, events); LeaderElector gates the webhooks; WebhookHandlers serve
// Admission over HttpServer; a housekeeping thread expires assumed reservations and reconciles
// the ledger. Readiness: a valid config, informers synced, and leadership.

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "common/log.h"
#include "config/check_config.h"
#include "config/loader.h"
#include "config/policy_store.h"
#include "config/watcher.h"
#include "extender/flags.h"
#include "extender/handlers.h"
#include "extender/http_server.h"
#include "extender/metrics_http.h"
#include "metrics/metrics.h"
#include "scheduler/actions/preemption_controller.h"
#include "scheduler/decisions/admission.h"
#include "scheduler/kube/actions.h"
#include "scheduler/kube/client.h"
#include "scheduler/kube/config.h"
#include "scheduler/kube/informers.h"
#include "scheduler/kube/leader_election.h"
#include "scheduler/kube/lease.h"
#include "scheduler/ledger/quota_book.h"
#include "scheduler/model/kube_json.h"
#include "scheduler/state/cluster_state.h"

namespace taskgov::extender {
namespace {

constexpr std::string_view kComponent = "main";
constexpr char kVersion[] = "0.1.0";
constexpr char kRevision[] = "dev";
constexpr std::chrono::milliseconds kHousekeepingPeriod{1'000};
constexpr int kReconcileEveryTicks = 60;
// A bound reservation whose pod has not been seen running for this long is an orphan.
constexpr int64_t kOrphanReservationAgeMs = 120'000;

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

common::Status WritePortFile(const std::string& path, uint16_t webhook, uint16_t metrics) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << "{\"webhook\":" << webhook << ",\"metrics\":" << metrics << "}\n";
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

// Runs `tick` every period on a thread of its own until stopped.
class Ticker {
 public:
  Ticker(std::chrono::milliseconds period, std::function<void(uint64_t)> tick)
      : period_(period), tick_(std::move(tick)), thread_([this] { Loop(); }) {}
  ~Ticker() { Stop(); }
  void Stop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

 private:
  void Loop() {
    uint64_t n = 0;
    std::unique_lock<std::mutex> lock(mu_);
    while (!cv_.wait_for(lock, period_, [this] { return stop_; })) {
      lock.unlock();
      tick_(++n);
      lock.lock();
    }
  }
  const std::chrono::milliseconds period_;
  std::function<void(uint64_t)> tick_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

int Run(int argc, char** argv) {
  std::vector<std::string_view> args(argv + 1, argv + argc);
  common::Result<Flags> parsed = ParseFlags(args);
  if (!parsed.ok()) return Fail(parsed.error().message);
  const Flags& flags = *parsed;
  if (flags.help) {
    std::cout << Usage();
    return 0;
  }
  if (!flags.check_config.empty()) return config::RunCheckConfig(flags.check_config, std::cout);
  common::log::Level level = common::log::Level::kInfo;
  (void)common::log::ParseLevel(flags.log_level, &level);  // validated by ParseFlags
  common::log::SetLevel(level);

  if (!(flags.retry_period < flags.renew_deadline && flags.renew_deadline < flags.lease_duration)) {
    return Fail("leader election needs retry period < renew deadline < lease duration");
  }
  if ((flags.tls_cert_file.empty()) != (flags.tls_key_file.empty())) {
    return Fail("--tls-cert-file and --tls-key-file go together");
  }
  if (!flags.tls_client_ca_file.empty() && flags.tls_cert_file.empty()) {
    return Fail("--tls-client-ca-file needs --tls-cert-file and --tls-key-file");
  }
  for (auto [path, what] :
       {std::pair{flags.config_dir, "config directory"}, std::pair{flags.kubeconfig, "kubeconfig"},
        std::pair{flags.tls_cert_file, "TLS certificate"}, std::pair{flags.tls_key_file, "TLS key"},
        std::pair{flags.tls_client_ca_file, "TLS client CA"}}) {
    if (common::Status s = CheckReadable(path, what); !s.ok()) return Fail(s.error().message);
  }

  // Block the termination signals before any thread starts, so every thread inherits the mask
  // and sigwait() below is the only place they are delivered.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  common::SystemClock clock;

  metrics::Options metrics_options;
  metrics_options.kueue_compatible = flags.kueue_metrics;
  metrics_options.build = metrics::BuildInfo{kVersion, kRevision};
  metrics_options.clock = &clock;
  metrics::Metrics metrics(metrics_options);

  // ---- policy ----
  config::PolicyStore policies;
  std::atomic<bool> config_valid{false};
  // Set once the admission exists; reloads before that only publish to the store.
  std::atomic<scheduler::Admission*> admission_ptr{nullptr};
  config::WatcherOptions watcher_options;
  watcher_options.dir = flags.config_dir;
  // The watcher logs every attempt itself (each diagnostic once, then loaded or refused); this
  // applies a valid policy and says so once it is in force ("policy loaded", which tools wait
  // for).
  watcher_options.on_reload = [&](const config::LoadResult& result) {
    metrics.ObserveConfigReload(result.policy != nullptr, clock.NowMs());
    if (!result.policy) return;
    config_valid.store(true, std::memory_order_release);
    if (scheduler::Admission* admission = admission_ptr.load(std::memory_order_acquire)) {
      admission->ApplyPolicy(result.policy);
    }
    common::log::Info("config", "policy loaded",
                      {{"teams", static_cast<int64_t>(result.policy->teams.size())},
                       {"hash", result.content_hash}});
  };
  config::ConfigWatcher watcher(&policies, watcher_options);
  (void)watcher.Reload();

  // ---- domain ----
  scheduler::QuotaBook book(policies.Current(), &clock);
  scheduler::ClusterState::Options cluster_options;
  cluster_options.scheduler_name = flags.scheduler_name;
  scheduler::ClusterState cluster(&book, &clock, cluster_options);
  cluster.SetLifecycleObserver([&](const scheduler::ClusterState::PodLifecycle& event) {
    if (event.team == scheduler::kNoTeam) return;
    if (event.transition == scheduler::PodTransition::kBound) {
      metrics.ObservePodBound(event.team, event.priority_class, event.pod->creation_unix_ms,
                              event.now_ms);
    } else {
      metrics.ObservePodEnded(event.team, event.priority_class, event.bound_ms, event.now_ms);
    }
  });

  // ---- Kubernetes ----
  std::unique_ptr<scheduler::kube::KubeClient> client;
  std::unique_ptr<scheduler::kube::ApiKubeActions> actions;
  std::unique_ptr<scheduler::kube::Informers> informers;
  std::unique_ptr<scheduler::kube::ApiLeaseStore> lease_store;
  std::unique_ptr<scheduler::kube::LeaderElector> elector;
  std::unique_ptr<scheduler::PreemptionController> preemption;
  const std::string identity = flags.identity.empty() ? DefaultIdentity() : flags.identity;
  if (!flags.no_kube) {
    common::Result<scheduler::kube::ClusterConfig> cluster_config =
        scheduler::kube::LoadClusterConfig(flags.kubeconfig, flags.kube_context,
                                           scheduler::kube::ProcessEnv());
    if (!cluster_config.ok()) {
      return Fail("no usable Kubernetes API configuration: " + cluster_config.error().message +
                  " (give --kubeconfig, run in a cluster, or --no-kube)");
    }
    auto created = scheduler::kube::KubeClient::Create(*cluster_config);
    if (!created.ok()) return Fail(created.error().message);
    client = std::move(created.value());
    scheduler::kube::KubeActionsOptions action_options;
    action_options.reporting_instance = identity;
    actions = std::make_unique<scheduler::kube::ApiKubeActions>(client.get(), action_options);
    preemption = std::make_unique<scheduler::PreemptionController>(
        &book, &cluster, actions.get(), &clock, scheduler::PreemptionController::Options{});
    // The controller forwards every event to the cluster state and reacts to victims going.
    scheduler::kube::InformerOptions informer_options;
    informer_options.pod_field_selector = flags.pod_field_selector;
    informers = std::make_unique<scheduler::kube::Informers>(
        client.get(), preemption->observer(),
        scheduler::kube::ObjectDecoders{scheduler::DecodePod, scheduler::DecodeNode},
        informer_options);
    if (flags.leader_elect) {
      lease_store = std::make_unique<scheduler::kube::ApiLeaseStore>(
          client.get(), LeaseNamespace(flags), flags.leader_elect_name);
      scheduler::kube::LeaderElectionOptions election;
      election.identity = identity;
      election.lease_duration = flags.lease_duration;
      election.renew_deadline = flags.renew_deadline;
      election.retry_period = flags.retry_period;
      election.on_started_leading = [&] {
        // A new leader inherits no reservations: rebuild the counters from what is bound.
        std::vector<scheduler::Ledger::Drift> drift = book.Reconcile();
        common::log::Info(
            "leader", "started leading",
            {{"identity", identity}, {"drift_cells", static_cast<int64_t>(drift.size())}});
      };
      election.on_stopped_leading = [&] {
        common::log::Warn("leader", "stopped leading", {{"identity", identity}});
      };
      elector = std::make_unique<scheduler::kube::LeaderElector>(lease_store.get(), election);
    }
  } else {
    cluster.OnSynced(scheduler::ObjectKind::kPod);
    cluster.OnSynced(scheduler::ObjectKind::kNode);
  }

  scheduler::Admission admission(&book, &cluster, actions.get(), &clock, {});
  // Why webhooks are refused and /readyz fails; "" when serving.
  auto not_ready = [&]() -> std::string {
    if (!config_valid.load(std::memory_order_acquire)) {
      return "not ready: no valid configuration in " + flags.config_dir;
    }
    if (!cluster.synced()) return "not ready: waiting for initial sync";
    // Serving needs the lease *and* the new leader's resync (on_started_leading) done.
    if (elector && !elector->is_serving()) return "not leader";
    return "";
  };
  admission.SetGate(not_ready);
  admission.SetObserver(
      [&](const scheduler::FilterDecision& decision) { metrics.ObserveFilter(decision); });
  metrics::Sources sources;
  sources.book = &book;
  sources.cluster = &cluster;
  if (preemption) {
    sources.preempted_pods = [&](scheduler::NameId team) -> int64_t {
      const scheduler::PreemptionStats stats = preemption->Stats();
      auto it = stats.preempted_pods.find(scheduler::TeamNames().Name(team));
      return it == stats.preempted_pods.end() ? 0 : it->second;
    };
  }
  metrics.SetSources(sources);
  if (preemption) {
    admission.SetPreemptionStatus([&](std::string_view uid) { return preemption->StatusFor(uid); });
  }
  admission.ApplyPolicy(policies.Current());
  admission_ptr.store(&admission, std::memory_order_release);
  // A reload that raced with the construction above is applied again (idempotent).
  admission.ApplyPolicy(policies.Current());

  // ---- HTTP ----
  WebhookOptions webhook_options;
  webhook_options.url_prefix = flags.url_prefix;
  webhook_options.filter_body_limit = flags.filter_body_limit;
  webhook_options.prioritize_body_limit = flags.prioritize_body_limit;
  webhook_options.preempt_body_limit = flags.preempt_body_limit;
  webhook_options.bind_body_limit = flags.bind_body_limit;
  WebhookHandlers handlers(&admission, webhook_options);

  HttpServerOptions health_options;
  health_options.address = flags.metrics_listen.host;
  health_options.port = flags.metrics_listen.port;
  health_options.io_threads = 1;
  std::vector<Route> health_routes;
  health_routes.push_back(MetricsRoute(metrics));
  health_routes.push_back(Route{"/healthz", "GET", 0, [](const HttpRequest&) {
                                  return HttpResponse{200, "text/plain", "ok\n", {}};
                                }});
  health_routes.push_back(Route{"/readyz", "GET", 0, [&](const HttpRequest&) {
                                  const std::string why = not_ready();
                                  if (why.empty())
                                    return HttpResponse{200, "text/plain", "ok\n", {}};
                                  return HttpResponse{503, "text/plain", why + "\n", {}};
                                }});
  HttpServer health(health_options, std::move(health_routes));

  HttpServerOptions webhook_server_options;
  webhook_server_options.address = flags.listen.host;
  webhook_server_options.port = flags.listen.port;
  webhook_server_options.io_threads = flags.io_threads;
  webhook_server_options.header_timeout = flags.header_timeout;
  webhook_server_options.request_timeout = flags.request_timeout;
  webhook_server_options.idle_timeout = flags.idle_timeout;
  webhook_server_options.max_connections = flags.max_connections;
  webhook_server_options.observer = MetricsObserver(metrics);
  if (!flags.tls_cert_file.empty()) {
    HttpTlsOptions tls;
    tls.cert_chain_file = flags.tls_cert_file;
    tls.key_file = flags.tls_key_file;
    tls.client_ca_file = flags.tls_client_ca_file;
    webhook_server_options.tls = tls;
  }
  HttpServer webhooks(webhook_server_options, handlers.Routes());

  if (common::Status s = health.Start(); !s.ok()) return Fail(s.error().message);
  if (common::Status s = webhooks.Start(); !s.ok()) return Fail(s.error().message);
  if (common::Status s = watcher.Start(); !s.ok()) {
    common::log::Warn("config", "no inotify on the config directory; polling only",
                      {{"error", s.error().message}});
  }
  if (informers) informers->Start();
  if (elector) elector->Start();

  // Preemption and reclaim run only on the serving leader.
  std::optional<Ticker> preemption_loop;
  if (preemption) {
    preemption_loop.emplace(kHousekeepingPeriod, [&](uint64_t) {
      if (not_ready().empty()) (void)preemption->RunOnce();
    });
  }
  // Informer and preemption counters are pulled once a tick and fed to the metrics as deltas.
  std::map<std::string, uint64_t> seen_restarts;
  std::map<scheduler::PreemptionStats::Key, uint64_t> seen_preemptions;
  auto feed_metrics = [&] {
    if (informers) {
      for (const scheduler::kube::ReflectorStats& stats : informers->Stats()) {
        for (const auto& [reason, count] : stats.watch_restarts) {
          uint64_t& seen = seen_restarts[stats.resource + "/" + reason];
          for (; seen < count; ++seen) metrics.ObserveWatchRestart(stats.resource, reason);
        }
        if (stats.last_event_unix_ms > 0) {
          metrics.ObserveInformerEvent(stats.resource, stats.last_event_unix_ms);
        }
      }
    }
    if (preemption) {
      for (const auto& [key, count] : preemption->Stats().preemptions) {
        // Pods of no team preempted by plain priority are not a team's preemption.
        using scheduler::PreemptionReason;
        const std::string_view reason =
            key.reason == PreemptionReason::kInTeamPriority ? metrics::kPreemptWithinTeam
            : key.reason == PreemptionReason::kReclaim      ? metrics::kPreemptReclaim
            : key.reason == PreemptionReason::kFairShare    ? metrics::kPreemptFairShare
                                                            : std::string_view();
        if (reason.empty() || key.victim_team.empty()) continue;
        uint64_t& seen = seen_preemptions[key];
        for (; seen < count; ++seen) {
          metrics.ObservePreemption(scheduler::TeamNames().Intern(key.preemptor_team),
                                    scheduler::TeamNames().Intern(key.victim_team), reason);
        }
      }
    }
  };
  Ticker housekeeping(kHousekeepingPeriod, [&](uint64_t tick) {
    feed_metrics();
    if (size_t expired = book.ExpireAssumed(); expired > 0) {
      common::log::Info("ledger", "assumed reservations expired",
                        {{"count", static_cast<int64_t>(expired)}});
    }
    if (tick % kReconcileEveryTicks == 0) {
      // Reservations against the pods running, then the counters against the reservations.
      const scheduler::ClusterState::ReservationDrift pods =
          cluster.ReconcileReservations(kOrphanReservationAgeMs);
      for (const auto& [what, uids] :
           {std::pair{"released", &pods.released}, std::pair{"charged", &pods.charged}}) {
        if (uids->empty()) continue;
        common::log::Warn("ledger", "reservations repaired against the running pods",
                          {{"repair", what},
                           {"count", static_cast<int64_t>(uids->size())},
                           {"first_uid", uids->front()}});
      }
      for (const scheduler::Ledger::Drift& d : book.Reconcile()) {
        common::log::Warn("ledger", "usage drift repaired",
                          {{"team", scheduler::TeamNames().Name(d.key.team)},
                           {"flavor", scheduler::FlavorNames().Name(d.key.flavor)},
                           {"resource", scheduler::ResourceNames().Name(d.key.resource)},
                           {"ledger", d.ledger_usage},
                           {"reservations", d.charged}});
      }
    }
  });

  if (!flags.port_file.empty()) {
    if (common::Status s = WritePortFile(flags.port_file, webhooks.port(), health.port());
        !s.ok()) {
      return Fail(s.error().message);
    }
  }
  common::log::Info(kComponent, "serving",
                    {{"webhook_port", static_cast<int>(webhooks.port())},
                     {"metrics_port", static_cast<int>(health.port())},
                     {"config_dir", flags.config_dir},
                     {"identity", identity},
                     {"kube", !flags.no_kube}});

  int signal_number = 0;
  sigwait(&signals, &signal_number);
  common::log::Info(kComponent, "shutting down", {{"signal", strsignal(signal_number)}});
  webhooks.Shutdown(flags.shutdown_drain);
  if (preemption_loop) preemption_loop->Stop();
  housekeeping.Stop();
  if (elector) elector->Stop();
  if (informers) informers->Stop();
  watcher.Stop();
  health.Shutdown(std::chrono::milliseconds(100));
  common::log::Info(kComponent, "stopped");
  return 0;
}

}  // namespace
}  // namespace taskgov::extender

int main(int argc, char** argv) { return taskgov::extender::Run(argc, argv); }
