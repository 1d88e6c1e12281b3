#include "extender/flags.h"

#include <arpa/inet.h>

#include <algorithm>
#include <charconv>
#include <functional>
#include <map>

#include "scheduler/common/log.h"

namespace taskgov::extender {
namespace {

common::Result<int> ParseInt(std::string_view name, std::string_view text, int min, int max) {
  int value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < min || value > max) {
    return common::Error{"flag --" + std::string(name) + ": '" + std::string(text) +
                         "' is not an integer in [" + std::to_string(min) + ", " +
                         std::to_string(max) + "]"};
  }
  return value;
}

using Setter = std::function<common::Status(Flags&, std::string_view)>;

// A flag's setter, and whether the flag is a switch (`--name` alone means true).
struct FlagDef {
  template <typename F>
  FlagDef(F set, bool is_switch = false)  // NOLINT: setters convert implicitly
      : set(std::move(set)), is_switch(is_switch) {}
  Setter set;
  bool is_switch;
};

Setter HostPortSetter(HostPort Flags::*field, std::string_view name) {
  return [field, name](Flags& flags, std::string_view value) -> common::Status {
    common::Result<HostPort> hp = ParseHostPort(value);
    if (!hp.ok()) return hp.error().Wrap("flag --" + std::string(name));
    flags.*field = *hp;
    return common::Status::Ok();
  };
}

common::Status SetConsoleAuth(Flags& flags, std::string_view value) {
  if (value != "token" && value != "none") {
    return common::Error{"flag --console-auth: '" + std::string(value) + "' is not token or none"};
  }
  flags.console_auth = std::string(value);
  return common::Status::Ok();
}

// resource.group ("workloads.taskgov.io"), or a core-group resource ("pods").
common::Status SetConsoleResource(Flags& flags, std::string_view value) {
  const bool ok =
      !value.empty() && value.front() != '.' && value.back() != '.' &&
      value.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789.-") == std::string_view::npos;
  if (!ok) {
    return common::Error{"flag --console-resource: '" + std::string(value) +
                         "' is not a resource.group such as workloads.taskgov.io"};
  }
  flags.console_resource = std::string(value);
  return common::Status::Ok();
}

// --console-listen=ADDR:PORT, or empty to disable the console listener.
common::Status SetConsoleListen(Flags& flags, std::string_view value) {
  if (value.empty()) {
    flags.console_listen.reset();
    return common::Status::Ok();
  }
  common::Result<HostPort> hp = ParseHostPort(value);
  if (!hp.ok()) return hp.error().Wrap("flag --console-listen");
  flags.console_listen = *hp;
  return common::Status::Ok();
}

Setter StringSetter(std::string Flags::*field) {
  return [field](Flags& flags, std::string_view value) -> common::Status {
    flags.*field = std::string(value);
    return common::Status::Ok();
  };
}

FlagDef BoolSetter(bool Flags::*field, std::string_view name) {
  auto set = [field, name](Flags& flags, std::string_view value) -> common::Status {
    if (value == "true" || value == "1") {
      flags.*field = true;
    } else if (value == "false" || value == "0") {
      flags.*field = false;
    } else {
      return common::Error{"flag --" + std::string(name) + ": '" + std::string(value) +
                           "' is not true or false"};
    }
    return common::Status::Ok();
  };
  return FlagDef(set, /*is_switch=*/true);
}

Setter DurationSetter(std::chrono::milliseconds Flags::*field, std::string_view name) {
  return [field, name](Flags& flags, std::string_view value) -> common::Status {
    common::Result<std::chrono::milliseconds> d = ParseDuration(value);
    if (!d.ok()) return d.error().Wrap("flag --" + std::string(name));
    flags.*field = *d;
    return common::Status::Ok();
  };
}

constexpr size_t kMinBodyLimit = 1024;
constexpr size_t kMaxBodyLimit = size_t{1} << 30;

Setter ByteSizeSetter(size_t Flags::*field, std::string_view name) {
  return [field, name](Flags& flags, std::string_view value) -> common::Status {
    common::Result<size_t> n = ParseByteSize(value);
    if (!n.ok()) return n.error().Wrap("flag --" + std::string(name));
    if (*n < kMinBodyLimit || *n > kMaxBodyLimit) {
      return common::Error{"flag --" + std::string(name) + ": '" + std::string(value) +
                           "' is outside [1Ki, 1Gi]"};
    }
    flags.*field = *n;
    return common::Status::Ok();
  };
}

// A field selector as the API server takes it: comma-separated `key=value`, `key==value` or
// `key!=value` terms with non-empty keys; "" selects everything.
common::Status CheckFieldSelector(std::string_view selector) {
  if (selector.empty()) return common::Status::Ok();
  size_t start = 0;
  while (start <= selector.size()) {
    size_t comma = selector.find(',', start);
    if (comma == std::string_view::npos) comma = selector.size();
    const std::string_view term = selector.substr(start, comma - start);
    const size_t eq = term.find('=');
    const size_t key_end =
        eq != std::string_view::npos && eq > 0 && term[eq - 1] == '!' ? eq - 1 : eq;
    if (eq == std::string_view::npos || key_end == 0) {
      return common::Error{"flag --pod-field-selector: term '" + std::string(term) +
                           "' is not key=value, key==value or key!=value"};
    }
    start = comma + 1;
  }
  return common::Status::Ok();
}

// An integer flag within [min, max].
template <typename T>
Setter IntSetter(T Flags::*field, std::string_view name, int min, int max) {
  return [field, name, min, max](Flags& flags, std::string_view value) -> common::Status {
    common::Result<int> n = ParseInt(name, value, min, max);
    if (!n.ok()) return n.error();
    flags.*field = static_cast<T>(*n);
    return common::Status::Ok();
  };
}

// Without trailing slashes, with a leading one.
common::Status SetUrlPrefix(Flags& flags, std::string_view value) {
  std::string prefix(value);
  while (!prefix.empty() && prefix.back() == '/') prefix.pop_back();
  if (!prefix.empty() && prefix.front() != '/') prefix.insert(prefix.begin(), '/');
  flags.url_prefix = prefix;
  return common::Status::Ok();
}

common::Status SetLogLevel(Flags& flags, std::string_view value) {
  common::log::Level level;
  if (!common::log::ParseLevel(value, &level)) {
    return common::Error{"flag --log-level: '" + std::string(value) +
                         "' is not one of debug, info, warn, error"};
  }
  flags.log_level = std::string(value);
  return common::Status::Ok();
}

common::Status SetPodFieldSelector(Flags& flags, std::string_view value) {
  if (common::Status s = CheckFieldSelector(value); !s.ok()) return s;
  flags.pod_field_selector = std::string(value);
  return common::Status::Ok();
}

// Boolean flags may be given without a value.
const std::map<std::string, FlagDef, std::less<>>& Setters() {
  static const auto* setters = new std::map<std::string, FlagDef, std::less<>>{
      {"listen", HostPortSetter(&Flags::listen, "listen")},
      {"metrics-listen", HostPortSetter(&Flags::metrics_listen, "metrics-listen")},
      {"health-listen", HostPortSetter(&Flags::health_listen, "health-listen")},
      {"console-listen", SetConsoleListen},
      {"console-auth", SetConsoleAuth},
      {"console-resource", SetConsoleResource},
      {"console-token-audience", StringSetter(&Flags::console_token_audience)},
      {"console-tls-cert-file", StringSetter(&Flags::console_tls_cert_file)},
      {"console-tls-key-file", StringSetter(&Flags::console_tls_key_file)},
      {"url-prefix", SetUrlPrefix},
      {"config-dir", StringSetter(&Flags::config_dir)},
      {"kubeconfig", StringSetter(&Flags::kubeconfig)},
      {"tls-cert-file", StringSetter(&Flags::tls_cert_file)},
      {"tls-key-file", StringSetter(&Flags::tls_key_file)},
      {"tls-client-ca-file", StringSetter(&Flags::tls_client_ca_file)},
      {"log-level", SetLogLevel},
      {"io-threads", IntSetter(&Flags::io_threads, "io-threads", 1, 64)},
      {"port-file", StringSetter(&Flags::port_file)},
      {"check-config", StringSetter(&Flags::check_config)},
      {"no-kube", BoolSetter(&Flags::no_kube, "no-kube")},
      {"scheduler-name", StringSetter(&Flags::scheduler_name)},
      {"kueue-metrics", BoolSetter(&Flags::kueue_metrics, "kueue-metrics")},
      {"leader-elect", BoolSetter(&Flags::leader_elect, "leader-elect")},
      {"requeue-lapsed-refusals",
       BoolSetter(&Flags::requeue_lapsed_refusals, "requeue-lapsed-refusals")},
      {"leader-elect-namespace", StringSetter(&Flags::leader_elect_namespace)},
      {"leader-elect-name", StringSetter(&Flags::leader_elect_name)},
      {"identity", StringSetter(&Flags::identity)},
      {"leader-elect-lease-duration",
       DurationSetter(&Flags::lease_duration, "leader-elect-lease-duration")},
      {"leader-elect-renew-deadline",
       DurationSetter(&Flags::renew_deadline, "leader-elect-renew-deadline")},
      {"leader-elect-retry-period",
       DurationSetter(&Flags::retry_period, "leader-elect-retry-period")},
      {"kube-context", StringSetter(&Flags::kube_context)},
      {"pod-field-selector", SetPodFieldSelector},
      {"filter-body-limit", ByteSizeSetter(&Flags::filter_body_limit, "filter-body-limit")},
      {"prioritize-body-limit",
       ByteSizeSetter(&Flags::prioritize_body_limit, "prioritize-body-limit")},
      {"preempt-body-limit", ByteSizeSetter(&Flags::preempt_body_limit, "preempt-body-limit")},
      {"bind-body-limit", ByteSizeSetter(&Flags::bind_body_limit, "bind-body-limit")},
      {"header-timeout", DurationSetter(&Flags::header_timeout, "header-timeout")},
      {"request-timeout", DurationSetter(&Flags::request_timeout, "request-timeout")},
      {"idle-timeout", DurationSetter(&Flags::idle_timeout, "idle-timeout")},
      {"max-connections", IntSetter(&Flags::max_connections, "max-connections", 1, 1'000'000)},
      {"metrics-max-connections",
       IntSetter(&Flags::metrics_max_connections, "metrics-max-connections", 1, 1'000'000)},
      {"max-inflight-body-bytes",
       ByteSizeSetter(&Flags::max_inflight_body_bytes, "max-inflight-body-bytes")},
      {"shutdown-drain", DurationSetter(&Flags::shutdown_drain, "shutdown-drain")},
      {"history-interval", DurationSetter(&Flags::history_interval, "history-interval")},
  };
  return *setters;
}

}  // namespace

common::Result<HostPort> ParseHostPort(std::string_view text) {
  HostPort hp;
  std::string_view port_text;
  if (!text.empty() && text.front() == '[') {
    size_t close = text.find(']');
    if (close == std::string_view::npos || close + 1 >= text.size() || text[close + 1] != ':') {
      return common::Error{"'" + std::string(text) + "' is not [ipv6]:port"};
    }
    hp.host = std::string(text.substr(1, close - 1));
    port_text = text.substr(close + 2);
  } else {
    size_t colon = text.rfind(':');
    if (colon == std::string_view::npos) {
      return common::Error{"'" + std::string(text) + "' is not host:port"};
    }
    hp.host = std::string(text.substr(0, colon));
    if (hp.host.find(':') != std::string::npos) {
      return common::Error{"'" + std::string(text) + "': write IPv6 addresses as [addr]:port"};
    }
    port_text = text.substr(colon + 1);
  }
  if (hp.host.empty()) hp.host = "0.0.0.0";
  unsigned char buf[sizeof(struct in6_addr)];
  if (inet_pton(AF_INET, hp.host.c_str(), buf) != 1 &&
      inet_pton(AF_INET6, hp.host.c_str(), buf) != 1) {
    return common::Error{"invalid listen address '" + hp.host + "': not an IPv4 or IPv6 address"};
  }
  int port = 0;
  auto [end, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (port_text.empty() || ec != std::errc() || end != port_text.data() + port_text.size() ||
      port < 0 || port > 65535) {
    return common::Error{"'" + std::string(text) + "': port must be an integer in [0, 65535]"};
  }
  hp.port = static_cast<uint16_t>(port);
  return hp;
}

common::Result<size_t> ParseByteSize(std::string_view text) {
  static constexpr std::pair<std::string_view, int> kSuffixes[] = {
      {"Gi", 30}, {"Mi", 20}, {"Ki", 10}, {"", 0}};
  for (const auto& [suffix, shift] : kSuffixes) {
    if (!text.ends_with(suffix)) continue;
    const std::string_view number = text.substr(0, text.size() - suffix.size());
    uint64_t value = 0;
    auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), value);
    if (number.empty() || ec != std::errc() || end != number.data() + number.size() ||
        value > (uint64_t{1} << 40) >> shift) {
      break;
    }
    return static_cast<size_t>(value << shift);
  }
  return common::Error{"'" + std::string(text) + "' is not a byte size like 65536, 64Ki or 64Mi"};
}

common::Result<std::chrono::milliseconds> ParseDuration(std::string_view text) {
  static constexpr std::pair<std::string_view, int64_t> kUnits[] = {
      {"ms", 1}, {"s", 1000}, {"m", 60'000}, {"h", 3'600'000}};
  for (const auto& [unit, scale] : kUnits) {
    if (text.size() <= unit.size() || !text.ends_with(unit)) continue;
    std::string_view number = text.substr(0, text.size() - unit.size());
    if (unit == "m" && number.ends_with('m')) continue;  // "ms" is handled first
    int64_t value = 0;
    auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), value);
    if (ec != std::errc() || end != number.data() + number.size() || value <= 0 ||
        value > int64_t{1} << 40) {
      break;
    }
    return std::chrono::milliseconds(value * scale);
  }
  return common::Error{"'" + std::string(text) + "' is not a positive duration like 15s or 1500ms"};
}

namespace {

// A request the budget can never hold would be refused forever: the budget must hold the
// largest body any verb accepts.
common::Result<Flags> CheckBodyBudget(const Flags& flags) {
  for (auto [limit, name] :
       {std::pair{flags.filter_body_limit, "filter"},
        std::pair{flags.prioritize_body_limit, "prioritize"},
        std::pair{flags.preempt_body_limit, "preempt"}, std::pair{flags.bind_body_limit, "bind"}}) {
    if (limit > flags.max_inflight_body_bytes) {
      return common::Error{
          "flag --max-inflight-body-bytes: " + std::to_string(flags.max_inflight_body_bytes) +
          " bytes is less than --" + name + "-body-limit " + std::to_string(limit) +
          " (such a request could never be served)"};
    }
  }
  return flags;
}

}  // namespace

common::Result<Flags> ParseFlags(const std::vector<std::string_view>& args) {
  Flags flags;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string_view arg = args[i];
    if (arg == "--help" || arg == "-h") {
      flags.help = true;
      continue;
    }
    if (arg.substr(0, 2) != "--") {
      return common::Error{"unexpected argument '" + std::string(arg) +
                           "' (flags are --name=value)"};
    }
    arg.remove_prefix(2);
    std::string_view name = arg;
    std::string_view value;
    bool has_value = false;
    if (size_t eq = arg.find('='); eq != std::string_view::npos) {
      name = arg.substr(0, eq);
      value = arg.substr(eq + 1);
      has_value = true;
    }
    auto it = Setters().find(name);
    if (it == Setters().end()) {
      return common::Error{"unknown flag --" + std::string(name) + " (see --help)"};
    }
    if (!has_value) {
      if (it->second.is_switch) {
        value = "true";
      } else {
        if (i + 1 >= args.size())
          return common::Error{"flag --" + std::string(name) + " needs a value"};
        value = args[++i];
      }
    }
    common::Status status = it->second.set(flags, value);
    if (!status.ok()) return status.error();
  }
  if (flags.header_timeout > flags.request_timeout) {
    return common::Error{"flag --header-timeout: " + std::to_string(flags.header_timeout.count()) +
                         "ms exceeds --request-timeout " +
                         std::to_string(flags.request_timeout.count()) +
                         "ms (the header is part of the request)"};
  }
  if (flags.history_interval < std::chrono::seconds(1) ||
      flags.history_interval > std::chrono::minutes(5)) {
    return common::Error{"flag --history-interval: " +
                         std::to_string(flags.history_interval.count()) + "ms is outside 1s..5m"};
  }
  if (flags.no_kube && flags.console_auth == "token") {
    return common::Error{
        "flag --console-auth=token needs the Kubernetes API (TokenReview): not with --no-kube"};
  }
  return CheckBodyBudget(flags);
}

std::vector<std::string> FlagWarnings(const Flags& flags) {
  std::vector<std::string> warnings;
  if (flags.console_listen && flags.console_token_audience.empty() &&
      flags.console_auth != "none" && !flags.no_kube) {
    warnings.push_back(
        "flag --console-token-audience is empty: the console accepts the API server's own "
        "tokens, which its readers then hand it (and which work against the API server); give "
        "an audience (default taskgov) and tokens made with kubectl create token --audience");
  }
  if (flags.listen.host == "0.0.0.0" || flags.listen.host == "::") {
    warnings.push_back(
        "flag --listen: " + flags.listen.host + ":" + std::to_string(flags.listen.port) +
        " binds every interface: the webhooks (which bind pods) are reachable from the "
        "network" +
        (flags.tls_client_ca_file.empty() ? std::string(" without client certificates")
                                          : std::string(", with client certificates required")) +
        "; use 127.0.0.1:PORT with kube-scheduler as a sidecar");
  }
  return warnings;
}

uint64_t FilesNeeded(const Flags& flags) {
  return uint64_t{flags.max_connections} + uint64_t{flags.metrics_max_connections} +
         (flags.console_listen ? Flags::kConsoleMaxConnections : 0) + Flags::kHealthMaxConnections +
         kFileReserve;
}

FileLimitPlan PlanFileLimit(const Flags& flags, uint64_t soft, uint64_t hard) {
  const uint64_t need = FilesNeeded(flags);
  FileLimitPlan plan;
  plan.soft = std::max(soft, std::min(need, hard));
  if (plan.soft < need) {
    plan.warning = "open-file limit " + std::to_string(plan.soft) + " (hard " +
                   std::to_string(hard) + ") is below the " + std::to_string(need) +
                   " that --max-connections=" + std::to_string(flags.max_connections) +
                   (flags.console_listen ? ", --metrics-max-connections="
                                         : " and --metrics-max-connections=") +
                   std::to_string(flags.metrics_max_connections) +
                   (flags.console_listen ? " and the console listener's " +
                                               std::to_string(Flags::kConsoleMaxConnections)
                                         : std::string()) +
                   " (and the health listener's " + std::to_string(Flags::kHealthMaxConnections) +
                   ") need: new connections may fail before the caps; raise the limit (ulimit -n) "
                   "or lower the caps";
  }
  return plan;
}

std::string Usage() {
  return R"(taskgov-extender: a kube-scheduler extender that governs how teams share accelerators.

Flags (--name=value or --name value):
  --listen=ADDR:PORT            webhook listener (default 127.0.0.1:8888)
  --metrics-listen=ADDR:PORT    /metrics, /healthz and /readyz (default 0.0.0.0:9090)
  --health-listen=ADDR:PORT     /healthz and /readyz alone, on their own thread and cap, for the
                                kubelet's probes (default 0.0.0.0:9092)
  --console-listen=ADDR:PORT    the read-only admin API /api/v1/ (default 127.0.0.1:9091; empty:
                                disabled)
  --console-auth=token|none     token: requests need a bearer token that TokenReview accepts and
                                SubjectAccessReview allows get on --console-resource (the
                                default; the extender needs system:auth-delegator); none: no
                                checks (the default with --no-kube)
  --console-token-audience=AUD the audience console tokens must be issued for (default taskgov:
                                kubectl create token SA --audience taskgov); empty: the API
                                server's own tokens (they would work elsewhere too)
  --console-tls-cert-file=FILE  the console's TLS certificate chain (PEM), with
  --console-tls-key-file=FILE   its key; without them, a console off loopback serves a
                                self-signed certificate made at startup
  --history-interval=D          how often the console's history samples use (default 30s; 1s..5m)
  --console-resource=RES.GROUP  what a reader must be allowed to get (default
                                workloads.taskgov.io; in a team's namespace only: that team's
                                view)
  --url-prefix=PATH             serve the verbs at PATH/filter, PATH/prioritize, ... (default /)
  --config-dir=DIR              the mounted policy ConfigMap (default /etc/taskgov)
  --kubeconfig=FILE             kubeconfig to use outside the cluster
  --tls-cert-file=FILE          serve the webhooks over TLS with this certificate chain (PEM)
  --tls-key-file=FILE           ... and this private key (PEM)
  --tls-client-ca-file=FILE     require client certificates signed by this CA (mTLS)
  --log-level=LEVEL             debug | info | warn | error (default info)
  --io-threads=N                HTTP I/O threads (default 2)
  --port-file=FILE              write the bound ports as JSON once serving
  --check-config=DIR            validate a policy directory, print errors, warnings and the
                                effective quotas, exit 0 (valid) or 1
  --scheduler-name=NAME         govern pods with this spec.schedulerName (default taskgov)
  --leader-elect[=BOOL]         elect one active replica through a Lease (default true)
  --requeue-lapsed-refusals[=BOOL]  annotate (taskgov.io/requeued-at) a pending pod the filter
                                refused once it would admit it, so that kube-scheduler tries it
                                again (default true; needs patch on pods)
  --leader-elect-namespace=NS   the Lease's namespace (default: the pod's, else default)
  --leader-elect-name=NAME      the Lease's name (default taskgov)
  --identity=ID                 this replica's identity (default: hostname + random suffix)
  --leader-elect-lease-duration=D, --leader-elect-renew-deadline=D,
  --leader-elect-retry-period=D  Lease timing (defaults 15s, 10s, 2s, as kube-scheduler's)
  --kube-context=NAME           the kubeconfig context to use (default: its current-context)
  --pod-field-selector=SEL      pods to watch (default status.phase!=Succeeded,
                                status.phase!=Failed; "" watches every pod)
  --filter-body-limit=SIZE, --prioritize-body-limit=SIZE, --preempt-body-limit=SIZE
                                largest request body per verb (default 64Mi; 1Ki..1Gi)
  --bind-body-limit=SIZE        largest bind request body (default 64Ki; 1Ki..1Gi)
  --header-timeout=D            a new connection: from accept (TLS handshake included) until
                                its first request header is read; later requests: from their
                                first byte (default 10s)
  --request-timeout=D           from a request's first byte until its body is read, and for
                                writing the reply (default 30s)
  --idle-timeout=D              how long a connection that has completed a request may wait
                                for its next one (default 90s)
  --max-connections=N           concurrent webhook connections; at the cap the longest-idle
                                one is closed, or the newcomer answered 503 (default 1024)
  --metrics-max-connections=N   the same for the metrics listener (default 64)
  --max-inflight-body-bytes=SIZE
                                request bodies held in memory at once; a request that does not
                                fit waits up to 500ms, then gets 503 (default 256Mi; at least
                                every body limit)
  --shutdown-drain=D            after SIGTERM, how long requests in flight may finish
                                (default 600ms)
  --kueue-metrics[=BOOL]        also export Kueue's metric names and labels (default false)
  --no-kube                     run without a Kubernetes API (no informers, binding or leader
                                election; for testing the webhooks)
  --help                        this text

Sizes: bytes, or with a binary suffix (64Ki, 64Mi, 1Gi). Durations: 1500ms, 15s, 2m, 1h.
Exit codes: 0 after SIGTERM/SIGINT, 2 for bad flags or unreadable files.
)";
}

}  // namespace taskgov::extender
