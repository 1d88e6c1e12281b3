#include "extender/flags.h"

#include <gtest/gtest.h>

#include "extender/handlers.h"
#include "extender/http_server.h"
#include "scheduler/kube/informers.h"

namespace taskgov::extender {
namespace {

TEST(ParseHostPortTest, AcceptsIpv4Ipv6AndAllInterfaces) {
  common::Result<HostPort> v4 = ParseHostPort("127.0.0.1:8888");
  ASSERT_TRUE(v4.ok());
  EXPECT_EQ(v4->host, "127.0.0.1");
  EXPECT_EQ(v4->port, 8888);
  common::Result<HostPort> v6 = ParseHostPort("[::1]:0");
  ASSERT_TRUE(v6.ok());
  EXPECT_EQ(v6->host, "::1");
  EXPECT_EQ(v6->port, 0);
  common::Result<HostPort> any = ParseHostPort(":9090");
  ASSERT_TRUE(any.ok());
  EXPECT_EQ(any->host, "0.0.0.0");
}

TEST(ParseHostPortTest, RejectsMalformed) {
  for (const char* bad : {"8888", "127.0.0.1:", "127.0.0.1:65536", "127.0.0.1:-1", "::1:80",
                          "[::1]80", "[::1", "host:port", "300.1.1.1:80", "localhost:80"}) {
    EXPECT_FALSE(ParseHostPort(bad).ok()) << bad;
  }
}

TEST(ParseFlagsTest, EverySwitchStandsAloneAndNeverSwallowsTheNextFlag) {
  for (const char* name : {"no-kube", "kueue-metrics", "leader-elect", "requeue-lapsed-refusals"}) {
    const std::string flag = std::string("--") + name;
    // Last on the line, and followed by another flag.
    for (const std::vector<std::string_view>& args :
         {std::vector<std::string_view>{flag},
          std::vector<std::string_view>{flag, "--listen=127.0.0.1:0"}}) {
      common::Result<Flags> flags = ParseFlags(args);
      ASSERT_TRUE(flags.ok()) << name << ": " << flags.error().message;
      const bool value = std::string(name) == "no-kube"         ? flags->no_kube
                         : std::string(name) == "kueue-metrics" ? flags->kueue_metrics
                         : std::string(name) == "leader-elect"  ? flags->leader_elect
                                                                : flags->requeue_lapsed_refusals;
      EXPECT_TRUE(value) << name;
    }
    const std::string off = flag + "=false", bad = flag + "=maybe";
    EXPECT_TRUE(ParseFlags({off}).ok()) << name;
    if (std::string(name) == "requeue-lapsed-refusals") {
      EXPECT_FALSE(ParseFlags({off})->requeue_lapsed_refusals);
    }
    EXPECT_FALSE(ParseFlags({bad}).ok()) << name;
  }
}

TEST(ParseFlagsTest, DefaultsWhenEmpty) {
  common::Result<Flags> flags = ParseFlags({});
  ASSERT_TRUE(flags.ok());
  EXPECT_EQ(flags->listen.host, "127.0.0.1");
  EXPECT_EQ(flags->listen.port, 8888);
  EXPECT_EQ(flags->metrics_listen.port, 9090);
  EXPECT_EQ(flags->config_dir, "/etc/taskgov");
  EXPECT_EQ(flags->io_threads, 2);
}

// The console listener: loopback by default, disabled by an empty value, validated like the
// others; its cap counts toward the open-file need only when it listens.
TEST(ParseFlagsTest, ConsoleListenDefaultsToLoopbackAndEmptyDisablesIt) {
  common::Result<Flags> flags = ParseFlags({});
  ASSERT_TRUE(flags.ok());
  ASSERT_TRUE(flags->console_listen.has_value());
  EXPECT_EQ(flags->console_listen->host, "127.0.0.1");
  EXPECT_EQ(flags->console_listen->port, 9091);
  const uint64_t with_console = FilesNeeded(*flags);
  flags = ParseFlags({"--console-listen="});
  ASSERT_TRUE(flags.ok()) << flags.error().message;
  EXPECT_FALSE(flags->console_listen.has_value());
  EXPECT_EQ(FilesNeeded(*flags), with_console - Flags::kConsoleMaxConnections);
  flags = ParseFlags({"--console-listen", "[::1]:0"});
  ASSERT_TRUE(flags.ok()) << flags.error().message;
  EXPECT_EQ(flags->console_listen->host, "::1");
  flags = ParseFlags({"--console-listen=localhost:80"});
  ASSERT_FALSE(flags.ok());
  EXPECT_EQ(flags.error().message,
            "flag --console-listen: invalid listen address 'localhost': not an IPv4 or IPv6 "
            "address");
}

TEST(ParseFlagsTest, ConsoleAuthIsTokenOrNoneAndTokenNeedsTheApi) {
  common::Result<Flags> flags = ParseFlags({});
  ASSERT_TRUE(flags.ok());
  EXPECT_EQ(flags->console_auth, "");  // token with an API, none without
  EXPECT_EQ(flags->console_resource, "workloads.taskgov.io");
  EXPECT_TRUE(ParseFlags({"--no-kube"}).ok());
  EXPECT_TRUE(ParseFlags({"--console-auth=none", "--console-resource=pods"}).ok());
  struct Case {
    std::vector<std::string_view> args;
    std::string error;
  };
  for (const Case& c : std::vector<Case>{
           {{"--console-auth=basic"}, "flag --console-auth: 'basic' is not token or none"},
           {{"--no-kube", "--console-auth=token"},
            "flag --console-auth=token needs the Kubernetes API (TokenReview): not with "
            "--no-kube"},
           {{"--history-interval=500ms"}, "flag --history-interval: 500ms is outside 1s..5m"},
           {{"--history-interval=1h"}, "flag --history-interval: 3600000ms is outside 1s..5m"},
           {{"--console-resource=Workloads"},
            "flag --console-resource: 'Workloads' is not a resource.group such as "
            "workloads.taskgov.io"},
           {{"--console-resource=.taskgov.io"},
            "flag --console-resource: '.taskgov.io' is not a resource.group such as "
            "workloads.taskgov.io"}}) {
    common::Result<Flags> bad = ParseFlags(c.args);
    ASSERT_FALSE(bad.ok()) << c.error;
    EXPECT_EQ(bad.error().message, c.error);
  }
}

TEST(ParseFlagsTest, BothValueFormsAndPrefixNormalised) {
  common::Result<Flags> flags =
      ParseFlags({"--listen=[::1]:8443", "--config-dir", "/cfg", "--url-prefix=taskgov/",
                  "--io-threads=4", "--log-level", "debug"});
  ASSERT_TRUE(flags.ok()) << flags.error().message;
  EXPECT_EQ(flags->listen.host, "::1");
  EXPECT_EQ(flags->listen.port, 8443);
  EXPECT_EQ(flags->config_dir, "/cfg");
  EXPECT_EQ(flags->url_prefix, "/taskgov");
  EXPECT_EQ(flags->io_threads, 4);
  EXPECT_EQ(flags->log_level, "debug");
}

TEST(ParseFlagsTest, ErrorsNameTheFlag) {
  struct Case {
    std::vector<std::string_view> args;
    std::string expected;
  };
  for (const Case& c : std::vector<Case>{
           {{"--bogus=1"}, "unknown flag --bogus"},
           {{"--io-threads=0"}, "--io-threads"},
           {{"--io-threads=many"}, "--io-threads"},
           {{"--metrics-listen=x"}, "--metrics-listen"},
           {{"--kubeconfig"}, "--kubeconfig needs a value"},
           {{"positional"}, "unexpected argument 'positional'"},
       }) {
    common::Result<Flags> flags = ParseFlags(c.args);
    ASSERT_FALSE(flags.ok()) << c.expected;
    EXPECT_NE(flags.error().message.find(c.expected), std::string::npos) << flags.error().message;
  }
}

TEST(ParseDurationTest, UnitsAndErrors) {
  EXPECT_EQ(*ParseDuration("15s"), std::chrono::milliseconds(15'000));
  EXPECT_EQ(*ParseDuration("1500ms"), std::chrono::milliseconds(1'500));
  EXPECT_EQ(*ParseDuration("2m"), std::chrono::milliseconds(120'000));
  EXPECT_EQ(*ParseDuration("1h"), std::chrono::milliseconds(3'600'000));
  for (const char* bad : {"", "15", "s", "-1s", "0s", "1.5s", "10x", "ms"}) {
    EXPECT_FALSE(ParseDuration(bad).ok()) << bad;
  }
  common::Result<Flags> flags = ParseFlags({"--leader-elect-lease-duration=3s"});
  ASSERT_TRUE(flags.ok());
  EXPECT_EQ(flags->lease_duration, std::chrono::milliseconds(3'000));
  EXPECT_FALSE(ParseFlags({"--leader-elect-retry-period=soon"}).ok());
}

TEST(ParseByteSizeTest, SuffixesAndErrors) {
  EXPECT_EQ(*ParseByteSize("65536"), 65536u);
  EXPECT_EQ(*ParseByteSize("64Ki"), 64u << 10);
  EXPECT_EQ(*ParseByteSize("64Mi"), 64u << 20);
  EXPECT_EQ(*ParseByteSize("1Gi"), 1u << 30);
  for (const char* bad : {"", "Mi", "-1", "1.5Mi", "64MB", "64mi", "1e6", "99999999999Gi"}) {
    EXPECT_FALSE(ParseByteSize(bad).ok()) << bad;
  }
}

// The flag defaults are the option structs' defaults: a flag left out changes nothing.
TEST(ParseFlagsTest, ServerDefaultsMatchTheOptionStructs) {
  common::Result<Flags> flags = ParseFlags({});
  ASSERT_TRUE(flags.ok());
  const WebhookOptions webhook;
  EXPECT_EQ(flags->filter_body_limit, webhook.filter_body_limit);
  EXPECT_EQ(flags->prioritize_body_limit, webhook.prioritize_body_limit);
  EXPECT_EQ(flags->preempt_body_limit, webhook.preempt_body_limit);
  EXPECT_EQ(flags->bind_body_limit, webhook.bind_body_limit);
  const HttpServerOptions server;
  EXPECT_EQ(flags->header_timeout, server.header_timeout);
  EXPECT_EQ(flags->request_timeout, server.request_timeout);
  EXPECT_EQ(flags->idle_timeout, server.idle_timeout);
  EXPECT_EQ(flags->max_connections, server.max_connections);
  EXPECT_EQ(flags->pod_field_selector, scheduler::kube::InformerOptions{}.pod_field_selector);
  EXPECT_EQ(flags->kube_context, "");
}

TEST(ParseFlagsTest, ServerLimitsTimeoutsSelectorAndContext) {
  common::Result<Flags> flags = ParseFlags(
      {"--filter-body-limit=8Mi", "--prioritize-body-limit", "4Mi", "--preempt-body-limit=2097152",
       "--bind-body-limit=16Ki", "--header-timeout=2s", "--request-timeout=5s", "--idle-timeout=2m",
       "--max-connections=64", "--shutdown-drain=3s",
       "--pod-field-selector=spec.schedulerName=taskgov,status.phase!=Failed",
       "--kube-context=prod"});
  ASSERT_TRUE(flags.ok()) << flags.error().message;
  EXPECT_EQ(flags->filter_body_limit, 8u << 20);
  EXPECT_EQ(flags->prioritize_body_limit, 4u << 20);
  EXPECT_EQ(flags->preempt_body_limit, 2u << 20);
  EXPECT_EQ(flags->bind_body_limit, 16u << 10);
  EXPECT_EQ(flags->header_timeout, std::chrono::milliseconds(2'000));
  EXPECT_EQ(flags->request_timeout, std::chrono::milliseconds(5'000));
  EXPECT_EQ(flags->idle_timeout, std::chrono::milliseconds(120'000));
  EXPECT_EQ(flags->max_connections, 64u);
  EXPECT_EQ(flags->shutdown_drain, std::chrono::milliseconds(3'000));
  EXPECT_EQ(flags->pod_field_selector, "spec.schedulerName=taskgov,status.phase!=Failed");
  EXPECT_EQ(flags->kube_context, "prod");
  common::Result<Flags> all_pods = ParseFlags({"--pod-field-selector="});
  ASSERT_TRUE(all_pods.ok());
  EXPECT_EQ(all_pods->pod_field_selector, "");
}

TEST(ParseFlagsTest, BadServerValuesAreOneLineErrorsNamingTheFlag) {
  struct Case {
    std::string_view arg;
    std::string expected;
  };
  for (const Case& c : std::vector<Case>{
           {"--filter-body-limit=lots", "flag --filter-body-limit"},
           {"--prioritize-body-limit=512", "flag --prioritize-body-limit: '512' is outside"},
           {"--preempt-body-limit=2Gi", "flag --preempt-body-limit: '2Gi' is outside"},
           {"--bind-body-limit=-1", "flag --bind-body-limit"},
           {"--header-timeout=0s", "flag --header-timeout"},
           {"--request-timeout=30", "flag --request-timeout"},
           {"--idle-timeout=forever", "flag --idle-timeout"},
           {"--max-connections=0", "flag --max-connections"},
           {"--max-connections=1e3", "flag --max-connections"},
           {"--shutdown-drain=-1s", "flag --shutdown-drain"},
           {"--pod-field-selector=status.phase", "flag --pod-field-selector"},
           {"--pod-field-selector=a=b,,c=d", "flag --pod-field-selector"},
           {"--pod-field-selector=!=x", "flag --pod-field-selector"},
           {"--header-timeout=31s", "flag --header-timeout: 31000ms exceeds --request-timeout"},
           {"--metrics-max-connections=0", "flag --metrics-max-connections"},
           {"--max-inflight-body-bytes=lots", "flag --max-inflight-body-bytes"},
           {"--max-inflight-body-bytes=32Mi",
            "flag --max-inflight-body-bytes: 33554432 bytes is less than --filter-body-limit"},
       }) {
    common::Result<Flags> flags = ParseFlags({c.arg});
    ASSERT_FALSE(flags.ok()) << c.arg;
    EXPECT_NE(flags.error().message.find(c.expected), std::string::npos) << flags.error().message;
    EXPECT_EQ(flags.error().message.find('\n'), std::string::npos) << flags.error().message;
  }
}

TEST(ParseFlagsTest, UsageListsEveryServerFlag) {
  for (const char* name :
       {"--kube-context", "--pod-field-selector", "--filter-body-limit", "--prioritize-body-limit",
        "--preempt-body-limit", "--bind-body-limit", "--header-timeout", "--request-timeout",
        "--idle-timeout", "--max-connections", "--metrics-max-connections",
        "--max-inflight-body-bytes", "--shutdown-drain"}) {
    EXPECT_NE(Usage().find(name), std::string::npos) << name;
  }
}

TEST(ParseFlagsTest, ConnectionCapsAndBodyBudget) {
  common::Result<Flags> defaults = ParseFlags({});
  ASSERT_TRUE(defaults.ok());
  EXPECT_EQ(defaults->metrics_max_connections, 64u);
  EXPECT_EQ(defaults->max_inflight_body_bytes, 256u << 20);
  common::Result<Flags> flags = ParseFlags(
      {"--metrics-max-connections=8", "--max-inflight-body-bytes=8Mi", "--filter-body-limit=4Mi",
       "--prioritize-body-limit=4Mi", "--preempt-body-limit=8Mi"});
  ASSERT_TRUE(flags.ok()) << flags.error().message;
  EXPECT_EQ(flags->metrics_max_connections, 8u);
  EXPECT_EQ(flags->max_inflight_body_bytes, 8u << 20);
}

TEST(FlagWarningsTest, AWebhookListenerOnEveryInterfaceIsWarnedAbout) {
  common::Result<Flags> loopback = ParseFlags({});
  ASSERT_TRUE(loopback.ok());
  EXPECT_TRUE(FlagWarnings(*loopback).empty());  // the metrics listener's 0.0.0.0 is intended
  for (const char* listen : {"--listen=:8888", "--listen=0.0.0.0:8888", "--listen=[::]:8888"}) {
    common::Result<Flags> flags = ParseFlags({listen});
    ASSERT_TRUE(flags.ok()) << listen;
    const std::vector<std::string> warnings = FlagWarnings(*flags);
    ASSERT_EQ(warnings.size(), 1u) << listen;
    EXPECT_NE(warnings[0].find("flag --listen"), std::string::npos) << warnings[0];
    EXPECT_NE(warnings[0].find("binds every interface"), std::string::npos) << warnings[0];
  }
}

TEST(FileLimitTest, TheSoftLimitIsRaisedForTheCapsWithinTheHardLimitAndAShortfallIsNamed) {
  common::Result<Flags> flags = ParseFlags({"--max-connections=4000"});
  ASSERT_TRUE(flags.ok());
  const uint64_t need = 4000 + 64 + 64 + 16 + kFileReserve;  // webhook, metrics, console, health
  EXPECT_EQ(FilesNeeded(*flags), need);
  FileLimitPlan roomy = PlanFileLimit(*flags, 1024, 1'048'576);
  EXPECT_EQ(roomy.soft, need);  // raised to the need, not to the hard limit
  EXPECT_EQ(roomy.warning, "");
  EXPECT_EQ(PlanFileLimit(*flags, 1'000'000, 1'048'576).soft, 1'000'000u);  // never lowered
  FileLimitPlan short_hard = PlanFileLimit(*flags, 1024, 4096);
  EXPECT_EQ(short_hard.soft, 4096u);
  EXPECT_EQ(short_hard.warning,
            "open-file limit 4096 (hard 4096) is below the 4400 that --max-connections=4000, "
            "--metrics-max-connections=64 and the console listener's 64 (and the health "
            "listener's 16) need: new connections may fail before the caps; raise the limit "
            "(ulimit -n) or lower the caps");
}

TEST(ParseFlagsTest, HelpIsAFlag) {
  common::Result<Flags> flags = ParseFlags({"--help"});
  ASSERT_TRUE(flags.ok());
  EXPECT_TRUE(flags->help);
  EXPECT_NE(Usage().find("--config-dir"), std::string::npos);
}

}  // namespace
}  // namespace taskgov::extender
