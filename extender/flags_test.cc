#include "extender/flags.h"

#include <gtest/gtest.h>

namespace taskgov::extender {
namespace {

TEST(ParseHostPortTest, AcceptsIpv4Ipv6AndAllInterfaces) {
  Result<HostPort> v4 = ParseHostPort("127.0.0.1:8888");
  ASSERT_TRUE(v4.ok());
  EXPECT_EQ(v4->host, "127.0.0.1");
  EXPECT_EQ(v4->port, 8888);
  Result<HostPort> v6 = ParseHostPort("[::1]:0");
  ASSERT_TRUE(v6.ok());
  EXPECT_EQ(v6->host, "::1");
  EXPECT_EQ(v6->port, 0);
  Result<HostPort> any = ParseHostPort(":9090");
  ASSERT_TRUE(any.ok());
  EXPECT_EQ(any->host, "0.0.0.0");
}

TEST(ParseHostPortTest, RejectsMalformed) {
  for (const char* bad : {"8888", "127.0.0.1:", "127.0.0.1:65536", "127.0.0.1:-1", "::1:80",
                          "[::1]80", "[::1", "host:port", "300.1.1.1:80", "localhost:80"}) {
    EXPECT_FALSE(ParseHostPort(bad).ok()) << bad;
  }
}

TEST(ParseFlagsTest, DefaultsWhenEmpty) {
  Result<Flags> flags = ParseFlags({});
  ASSERT_TRUE(flags.ok());
  EXPECT_EQ(flags->listen.host, "127.0.0.1");
  EXPECT_EQ(flags->listen.port, 8888);
  EXPECT_EQ(flags->metrics_listen.port, 9090);
  EXPECT_EQ(flags->config_dir, "/etc/taskgov");
  EXPECT_EQ(flags->io_threads, 2);
}

TEST(ParseFlagsTest, BothValueFormsAndPrefixNormalised) {
  Result<Flags> flags =
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
    Result<Flags> flags = ParseFlags(c.args);
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
  Result<Flags> flags = ParseFlags({"--leader-elect-lease-duration=3s"});
  ASSERT_TRUE(flags.ok());
  EXPECT_EQ(flags->lease_duration, std::chrono::milliseconds(3'000));
  EXPECT_FALSE(ParseFlags({"--leader-elect-retry-period=soon"}).ok());
}

TEST(ParseFlagsTest, HelpIsAFlag) {
  Result<Flags> flags = ParseFlags({"--help"});
  ASSERT_TRUE(flags.ok());
  EXPECT_TRUE(flags->help);
  EXPECT_NE(Usage().find("--config-dir"), std::string::npos);
}

}  // namespace
}  // namespace taskgov::extender
