#include "scheduler/kube/config.h"
#include "scheduler/common/base64.h"

#include <gtest/gtest.h>

#include "scheduler/kube/testing/test_support.h"

namespace taskgov::scheduler::kube {
namespace {

using testing::TempDir;
using testing::WriteFile;

TEST(ParseServerUrl, SplitsSchemeHostPortAndPath) {
  struct Case {
    const char* url;
    const char* scheme;
    const char* host;
    uint16_t port;
    const char* path;
  };
  const Case cases[] = {
      {"https://10.0.0.1", "https", "10.0.0.1", 443, ""},
      {"https://10.0.0.1:6443/", "https", "10.0.0.1", 6443, ""},
      {"http://127.0.0.1:8080", "http", "127.0.0.1", 8080, ""},
      {"https://[fd00::1]:6443", "https", "fd00::1", 6443, ""},
      {"https://[::1]", "https", "::1", 443, ""},
      {"https://rancher.example/k8s/clusters/c-1/", "https", "rancher.example", 443,
       "/k8s/clusters/c-1"},
  };
  for (const Case& c : cases) {
    ClusterConfig config;
    common::Status s = ParseServerUrl(c.url, &config);
    ASSERT_TRUE(s.ok()) << c.url << ": " << s.error().message;
    EXPECT_EQ(config.scheme, c.scheme) << c.url;
    EXPECT_EQ(config.host, c.host) << c.url;
    EXPECT_EQ(config.port, c.port) << c.url;
    EXPECT_EQ(config.base_path, c.path) << c.url;
  }
  for (const char* bad : {"ftp://x", "10.0.0.1:443", "https://", "https://h:0", "https://h:99999",
                          "https://h:12a", "https://[::1"}) {
    ClusterConfig config;
    common::Status s = ParseServerUrl(bad, &config);
    ASSERT_FALSE(s.ok()) << bad;
    EXPECT_NE(s.error().message.find(bad), std::string::npos) << s.error().message;
  }
}

TEST(Base64, DecodesWithAndWithoutPaddingAndRoundTrips) {
  common::Result<std::string> d = common::Base64Decode("aGVsbG8gd29ybGQ=", "x");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(*d, "hello world");
  d = common::Base64Decode("aGVsbG8gd29ybGQ", "x");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(*d, "hello world");
  for (const std::string& s :
       std::vector<std::string>{"", "a", "ab", "abc", "abcd", std::string("\0\xff\x10", 3)}) {
    common::Result<std::string> back = common::Base64Decode(common::Base64Encode(s), "x");
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(*back, s);
  }
  common::Result<std::string> bad = common::Base64Decode("a*b", "users[u].client-key-data");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("users[u].client-key-data"), std::string::npos);
}

TEST(InCluster, ReadsEnvironmentTokenFileCaAndNamespace) {
  const std::string dir = TempDir("incluster");
  WriteFile(dir + "/token", "sa-token\n");
  WriteFile(dir + "/ca.crt", "CA PEM");
  WriteFile(dir + "/namespace", "taskgov-system\n");
  InClusterPaths paths{dir + "/token", dir + "/ca.crt", dir + "/namespace"};
  std::map<std::string, std::string> env = {{"KUBERNETES_SERVICE_HOST", "fd00::10"},
                                            {"KUBERNETES_SERVICE_PORT", "6443"}};
  GetEnv get = [&](const std::string& k) -> std::optional<std::string> {
    auto it = env.find(k);
    if (it == env.end()) return std::nullopt;
    return it->second;
  };
  common::Result<ClusterConfig> config = LoadInClusterConfig(get, paths);
  ASSERT_TRUE(config.ok()) << config.error().message;
  EXPECT_EQ(config->server, "https://[fd00::10]:6443");
  EXPECT_EQ(config->host, "fd00::10");
  EXPECT_EQ(config->port, 6443);
  EXPECT_EQ(config->token_file, dir + "/token");
  EXPECT_EQ(config->ca_pem, "CA PEM");
  EXPECT_EQ(config->default_namespace, "taskgov-system");

  // LoadClusterConfig prefers in-cluster when no --kubeconfig is given.
  common::Result<ClusterConfig> chosen = LoadClusterConfig("", "", get, paths);
  ASSERT_TRUE(chosen.ok());
  EXPECT_EQ(chosen->source, "in-cluster");

  env.erase("KUBERNETES_SERVICE_PORT");
  common::Result<ClusterConfig> missing = LoadInClusterConfig(get, paths);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("KUBERNETES_SERVICE_PORT"), std::string::npos);

  env["KUBERNETES_SERVICE_PORT"] = "443";
  InClusterPaths no_token{dir + "/absent", dir + "/ca.crt", dir + "/namespace"};
  common::Result<ClusterConfig> unreadable = LoadInClusterConfig(get, no_token);
  ASSERT_FALSE(unreadable.ok());
  EXPECT_NE(unreadable.error().message.find(dir + "/absent"), std::string::npos);
}

constexpr char kFirst[] = R"(apiVersion: v1
kind: Config
current-context: prod
clusters:
- name: prod
  cluster:
    server: https://10.1.2.3:6443
    certificate-authority: certs/ca.pem
    tls-server-name: kube.test
- name: shared
  cluster:
    server: https://first.example
contexts:
- name: prod
  context: {cluster: prod, user: admin, namespace: team-a}
- name: plugin
  context: {cluster: shared, user: plugin}
users:
- name: admin
  user:
    tokenFile: tokens/admin
    client-certificate-data: Q0VSVA==
    client-key-data: S0VZ
- name: plugin
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1
      command: ./bin/get-token
      args: [--cluster, prod]
      env:
      - {name: GREETING, value: hello}
      interactiveMode: Never
      provideClusterInfo: true
)";

constexpr char kSecond[] = R"(current-context: other
clusters:
- name: shared
  cluster:
    server: https://second.example
    insecure-skip-tls-verify: true
- name: dev
  cluster:
    server: http://127.0.0.1:8080
contexts:
- name: dev
  context: {cluster: dev, user: dev}
users:
- name: dev
  user:
    token: static-dev-token
)";

TEST(Kubeconfig, MergesPathListFirstWinsAndResolvesRelativePaths) {
  const std::string dir = TempDir("kubeconfig-merge");
  std::filesystem::create_directories(dir + "/a/certs");
  std::filesystem::create_directories(dir + "/b");
  WriteFile(dir + "/a/config", kFirst);
  WriteFile(dir + "/a/certs/ca.pem", "CA FROM FILE");
  WriteFile(dir + "/b/config", kSecond);
  KubeconfigSource source;
  source.env_kubeconfig = dir + "/a/config:" + dir + "/missing:" + dir + "/b/config";
  ASSERT_EQ(KubeconfigPaths(source).size(), 3u);

  common::Result<ClusterConfig> prod = LoadKubeconfig(source);  // current-context of the first file
  ASSERT_TRUE(prod.ok()) << prod.error().message;
  EXPECT_EQ(prod->server, "https://10.1.2.3:6443");
  EXPECT_EQ(prod->ca_pem, "CA FROM FILE");
  EXPECT_EQ(prod->tls_server_name, "kube.test");
  EXPECT_EQ(prod->token_file, dir + "/a/tokens/admin");
  EXPECT_EQ(prod->client_cert_pem, "CERT");
  EXPECT_EQ(prod->client_key_pem, "KEY");
  EXPECT_EQ(prod->default_namespace, "team-a");
  EXPECT_FALSE(prod->exec.has_value());

  source.context = "plugin";  // "shared" is defined in both files: the first wins
  common::Result<ClusterConfig> plugin = LoadKubeconfig(source);
  ASSERT_TRUE(plugin.ok()) << plugin.error().message;
  EXPECT_EQ(plugin->server, "https://first.example");
  EXPECT_FALSE(plugin->insecure_skip_tls_verify);
  ASSERT_TRUE(plugin->exec.has_value());
  EXPECT_EQ(plugin->exec->command, dir + "/a/./bin/get-token");
  EXPECT_EQ(plugin->exec->args, (std::vector<std::string>{"--cluster", "prod"}));
  ASSERT_EQ(plugin->exec->env.size(), 1u);
  EXPECT_EQ(plugin->exec->env[0].second, "hello");
  EXPECT_TRUE(plugin->exec->provide_cluster_info);
  EXPECT_EQ(plugin->exec->interactive_mode, "Never");

  source.context = "dev";  // only in the second file
  common::Result<ClusterConfig> dev = LoadKubeconfig(source);
  ASSERT_TRUE(dev.ok()) << dev.error().message;
  EXPECT_EQ(dev->scheme, "http");
  EXPECT_EQ(dev->token, "static-dev-token");
  EXPECT_EQ(dev->default_namespace, "default");

  // --kubeconfig alone wins over $KUBECONFIG.
  source.explicit_path = dir + "/b/config";
  source.context = "";
  common::Result<ClusterConfig> only_b = LoadKubeconfig(source);
  ASSERT_FALSE(only_b.ok());  // its current-context "other" does not exist
  EXPECT_NE(only_b.error().message.find("context 'other' not found"), std::string::npos);
}

TEST(Kubeconfig, HomeConfigIsTheFallback) {
  const std::string home = TempDir("kubeconfig-home");
  std::filesystem::create_directories(home + "/.kube");
  WriteFile(home + "/.kube/config", kSecond);
  KubeconfigSource source;
  source.home = home;
  source.context = "dev";
  EXPECT_EQ(KubeconfigPaths(source), std::vector<std::string>{home + "/.kube/config"});
  common::Result<ClusterConfig> config = LoadKubeconfig(source);
  ASSERT_TRUE(config.ok()) << config.error().message;
  EXPECT_EQ(config->port, 8080);
}

TEST(Kubeconfig, ErrorsNameTheFileAndThePath) {
  const std::string dir = TempDir("kubeconfig-errors");
  struct Case {
    const char* yaml;
    const char* expect;
  };
  const Case cases[] = {
      {"clusters: [", "invalid YAML at line"},
      {"- just\n- a list\n", "expected a map at the top level"},
      {"clusters: {a: b}\n", "clusters: expected a list"},
      {"current-context: x\n", "context 'x' not found"},
      {"clusters:\n- cluster: {server: https://h}\n", "clusters[0].name: missing"},
      {"current-context: c\ncontexts:\n- name: c\n  context: {cluster: nope}\n",
       "cluster 'nope' not found"},
      {"current-context: c\ncontexts:\n- name: c\n  context: {cluster: k, user: u}\nclusters:\n"
       "- name: k\n  cluster: {server: https://h}\n",
       "user 'u' not found"},
      {"current-context: c\ncontexts:\n- name: c\n  context: {cluster: k}\nclusters:\n"
       "- name: k\n  cluster: {server: [1, 2]}\n",
       "clusters[k].cluster.server: expected a string"},
      {"current-context: c\ncontexts:\n- name: c\n  context: {cluster: k}\nclusters:\n"
       "- name: k\n  cluster: {server: https://h, insecure-skip-tls-verify: maybe}\n",
       "insecure-skip-tls-verify: expected a boolean"},
      {"current-context: c\ncontexts:\n- name: c\n  context: {cluster: k}\nclusters:\n"
       "- name: k\n  cluster: {server: https://h, certificate-authority-data: '!!'}\n",
       "certificate-authority-data: invalid base64"},
      {"current-context: c\ncontexts:\n- name: c\n  context: {cluster: k, user: u}\nclusters:\n"
       "- name: k\n  cluster: {server: https://h}\nusers:\n- name: u\n  user:\n    exec:\n"
       "      apiVersion: client.authentication.k8s.io/v1\n      command: x\n",
       "interactiveMode: required"},
      {"current-context: c\ncontexts:\n- name: c\n  context: {cluster: k, user: u}\nclusters:\n"
       "- name: k\n  cluster: {server: https://h}\nusers:\n- name: u\n  user:\n    exec:\n"
       "      apiVersion: client.authentication.k8s.io/v1alpha1\n      command: x\n",
       "unsupported 'client.authentication.k8s.io/v1alpha1'"},
      {"current-context: c\ncontexts:\n- name: c\n  context: {cluster: k, user: u}\nclusters:\n"
       "- name: k\n  cluster: {server: https://h}\nusers:\n- name: u\n  user:\n"
       "    client-certificate-data: Q0VSVA==\n",
       "client-certificate and client-key go together"},
      {"current-context: c\ncontexts:\n- name: c\n  context: {cluster: k, user: u}\nclusters:\n"
       "- name: k\n  cluster: {server: https://h}\nusers:\n- name: u\n  user:\n"
       "    client-certificate: missing.pem\n    client-key: missing.key\n",
       "missing.pem"},
  };
  int i = 0;
  for (const Case& c : cases) {
    const std::string path = dir + "/config-" + std::to_string(i++);
    WriteFile(path, c.yaml);
    KubeconfigSource source;
    source.explicit_path = path;
    common::Result<ClusterConfig> config = LoadKubeconfig(source);
    ASSERT_FALSE(config.ok()) << c.yaml;
    EXPECT_NE(config.error().message.find(c.expect), std::string::npos)
        << "want '" << c.expect << "' in: " << config.error().message;
    EXPECT_NE(config.error().message.find(path), std::string::npos) << config.error().message;
  }
  KubeconfigSource absent;
  absent.explicit_path = dir + "/nope";
  common::Result<ClusterConfig> missing = LoadKubeconfig(absent);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find(dir + "/nope"), std::string::npos);
}

}  // namespace
}  // namespace taskgov::scheduler::kube
