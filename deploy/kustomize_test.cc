// deploy/overlays: `kubectl kustomize` builds every overlay, the output parses, and every object
// has the fields its kind needs and points at objects that exist: Deployments (two replicas,
// anti-affinity, probes, resources, a restricted securityContext on a read-only root
// filesystem), the Services, disruption budget, network policies and ServiceMonitor select the
// extender's pods and name its ports, RBAC bindings name roles and service accounts that exist,
// cert-manager Certificates name their Issuers; and each topology's wiring agrees (the
// scheduler's extender URL is the extender's --listen, the governed scheduler name is the
// profile's and the admission policy's, the TLS files are in the mounted Secret).

#include <unistd.h>

#include <set>
#include <string>
#include <vector>

#include "deploy/testing/manifests.h"
#include "gtest/gtest.h"
#include "scheduler/common/testing/process.h"

namespace taskgov::deploy {
namespace {

using testing::Container;
using testing::Describe;
using testing::Manifests;
using testing::Scalar;
using testing::Selects;

bool Has(const YAML::Node& node, const std::vector<std::string>& path) {
  YAML::Node at;
  at.reset(node);
  for (const std::string& key : path) {
    if (!at.IsMap() || !at[key]) return false;
    at.reset(at[key]);  // not operator=, which would overwrite the node at refers to
  }
  return !at.IsNull();
}

const std::set<std::string>& ClusterScoped() {
  static const std::set<std::string> kinds = {"Namespace", "ClusterRole", "ClusterRoleBinding",
                                              "ValidatingAdmissionPolicy",
                                              "ValidatingAdmissionPolicyBinding"};
  return kinds;
}

class KustomizeTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (::access(testing::kKubectl, X_OK) != 0) {
      GTEST_SKIP()
          << testing::kKubectl
          << " not found: install the Debian package `kubernetes-client` (tools/bootstrap)";
    }
    common::Result<Manifests> m = testing::Render(GetParam());
    ASSERT_TRUE(m.ok()) << m.error().message;
    m_ = *m;
    std::optional<YAML::Node> d = m_.Find("Deployment", "taskgov");
    ASSERT_TRUE(d) << "no Deployment taskgov";
    deployment_ = *d;
    std::optional<YAML::Node> c = Container(deployment_, "taskgov-extender");
    ASSERT_TRUE(c) << "no container taskgov-extender";
    extender_ = *c;
  }

  YAML::Node PodLabels() const { return deployment_["spec"]["template"]["metadata"]["labels"]; }

  // Named container ports of the pod, and their numbers.
  std::map<std::string, int> ContainerPorts() const {
    std::map<std::string, int> out;
    for (const YAML::Node& c : testing::Containers(deployment_)) {
      for (const YAML::Node& p : c["ports"]) {
        out[p["name"].as<std::string>("")] = p["containerPort"].as<int>(0);
      }
    }
    return out;
  }

  bool Exists(const std::string& kind, const std::string& name) const {
    return m_.Find(kind, name).has_value();
  }

  Manifests m_;
  YAML::Node deployment_;
  YAML::Node extender_;
};

TEST_P(KustomizeTest, EveryObjectIsWellFormedAndUnique) {
  std::set<std::string> seen;
  for (const YAML::Node& o : m_.objects) {
    const std::string what = Describe(o);
    ASSERT_TRUE(o.IsMap()) << "an object is not a map";
    EXPECT_FALSE(Scalar(o, {"apiVersion"}).empty()) << what << ": no apiVersion";
    EXPECT_FALSE(Scalar(o, {"kind"}).empty()) << what << ": no kind";
    EXPECT_FALSE(Scalar(o, {"metadata", "name"}).empty()) << what << ": no metadata.name";
    const bool cluster = ClusterScoped().count(Scalar(o, {"kind"})) > 0;
    EXPECT_EQ(Scalar(o, {"metadata", "namespace"}).empty(), cluster)
        << what << (cluster ? ": a cluster-scoped object with a namespace" : ": no namespace");
    EXPECT_EQ(Scalar(o, {"metadata", "labels", "app.kubernetes.io/name"}), "taskgov")
        << what << ": not labelled app.kubernetes.io/name=taskgov (uninstall selects by it)";
    EXPECT_TRUE(seen.insert(Scalar(o, {"apiVersion"}) + " " + what).second) << what << " twice";
    const std::string ns = Scalar(o, {"metadata", "namespace"});
    if (!ns.empty() && ns != "kube-system") {
      EXPECT_TRUE(Exists("Namespace", ns)) << what << ": namespace " << ns << " is not installed";
    }
  }
}

TEST_P(KustomizeTest, EveryKindHasTheFieldsItNeeds) {
  const std::map<std::string, std::vector<std::vector<std::string>>> required = {
      {"Namespace", {}},
      {"ServiceAccount", {}},
      {"ClusterRole", {{"rules"}}},
      {"Role", {{"rules"}}},
      {"ClusterRoleBinding", {{"roleRef", "kind"}, {"roleRef", "name"}, {"subjects"}}},
      {"RoleBinding", {{"roleRef", "kind"}, {"roleRef", "name"}, {"subjects"}}},
      {"ConfigMap", {{"data"}}},
      {"Secret", {{"type"}}},
      {"Deployment", {{"spec", "selector", "matchLabels"}, {"spec", "template", "spec"}}},
      {"PodDisruptionBudget", {{"spec", "selector", "matchLabels"}}},
      {"Service", {{"spec", "selector"}, {"spec", "ports"}}},
      {"NetworkPolicy", {{"spec", "podSelector"}, {"spec", "policyTypes"}, {"spec", "ingress"}}},
      {"ServiceMonitor", {{"spec", "selector", "matchLabels"}, {"spec", "endpoints"}}},
      {"PrometheusRule", {{"spec", "groups"}}},
      {"Issuer", {{"spec"}}},
      {"Certificate", {{"spec", "secretName"}, {"spec", "issuerRef", "name"}}},
      {"ValidatingAdmissionPolicy",
       {{"spec", "matchConstraints"}, {"spec", "validations"}, {"spec", "failurePolicy"}}},
      {"ValidatingAdmissionPolicyBinding", {{"spec", "policyName"}, {"spec", "validationActions"}}},
  };
  for (const YAML::Node& o : m_.objects) {
    const auto it = required.find(Scalar(o, {"kind"}));
    if (it == required.end()) {
      ADD_FAILURE() << Describe(o) << ": no check for this kind: add one to " << __FILE__;
      continue;
    }
    for (const std::vector<std::string>& path : it->second) {
      std::string dotted;
      for (const std::string& p : path) dotted += (dotted.empty() ? "" : ".") + p;
      EXPECT_TRUE(Has(o, path)) << Describe(o) << ": no " << dotted;
    }
  }
  // What an install needs, whatever the topology.
  for (const char* kind :
       {"Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding",
        "Deployment", "PodDisruptionBudget", "Service", "NetworkPolicy", "ServiceMonitor",
        "PrometheusRule", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"}) {
    EXPECT_FALSE(m_.OfKind(kind).empty()) << m_.overlay << " installs no " << kind;
  }
  EXPECT_TRUE(Exists("ConfigMap", "taskgov-config")) << "no policy ConfigMap";
}

TEST_P(KustomizeTest, DeploymentIsHighlyAvailableAndRestricted) {
  const YAML::Node spec = deployment_["spec"];
  EXPECT_EQ(spec["replicas"].as<int>(0), 2);
  EXPECT_TRUE(Selects(spec["selector"]["matchLabels"], PodLabels()))
      << "the Deployment's selector does not select its own pods";
  const YAML::Node pod = spec["template"]["spec"];
  const YAML::Node anti = pod["affinity"]["podAntiAffinity"];
  ASSERT_TRUE(anti.IsMap()) << "no podAntiAffinity";
  bool spreads = false;
  for (const char* kind : {"preferredDuringSchedulingIgnoredDuringExecution",
                           "requiredDuringSchedulingIgnoredDuringExecution"}) {
    for (const YAML::Node& term : anti[kind]) {
      const YAML::Node t = term["podAffinityTerm"] ? term["podAffinityTerm"] : term;
      spreads |= Scalar(t, {"topologyKey"}) == "kubernetes.io/hostname" &&
                 Selects(t["labelSelector"]["matchLabels"], PodLabels());
    }
  }
  EXPECT_TRUE(spreads) << "the anti-affinity does not keep the replicas on different nodes";
  EXPECT_EQ(Scalar(pod, {"securityContext", "runAsNonRoot"}), "true");
  EXPECT_NE(Scalar(pod, {"securityContext", "runAsUser"}), "0");
  EXPECT_EQ(Scalar(pod, {"securityContext", "seccompProfile", "type"}), "RuntimeDefault");
  const std::string sa = Scalar(pod, {"serviceAccountName"});
  EXPECT_TRUE(Exists("ServiceAccount", sa)) << "service account " << sa << " is not installed";

  std::set<std::string> volumes;
  for (const YAML::Node& v : pod["volumes"]) {
    volumes.insert(Scalar(v, {"name"}));
    if (v["configMap"]) {
      const std::string cm = Scalar(v, {"configMap", "name"});
      EXPECT_TRUE(Exists("ConfigMap", cm))
          << "volume " << Scalar(v, {"name"}) << ": ConfigMap " << cm << " is not installed";
    }
  }
  for (const YAML::Node& c : testing::Containers(deployment_)) {
    const std::string name = Scalar(c, {"name"});
    const std::string image = Scalar(c, {"image"});
    EXPECT_NE(image.find(':'), std::string::npos) << name << ": image " << image << " has no tag";
    const YAML::Node sc = c["securityContext"];
    EXPECT_EQ(Scalar(sc, {"allowPrivilegeEscalation"}), "false") << name;
    EXPECT_EQ(Scalar(sc, {"readOnlyRootFilesystem"}), "true") << name;
    ASSERT_TRUE(sc["capabilities"]["drop"].IsSequence()) << name << ": no capabilities.drop";
    EXPECT_EQ(sc["capabilities"]["drop"][0].as<std::string>(""), "ALL") << name;
    EXPECT_FALSE(Scalar(c, {"resources", "requests", "cpu"}).empty()) << name;
    EXPECT_FALSE(Scalar(c, {"resources", "requests", "memory"}).empty()) << name;
    EXPECT_FALSE(Scalar(c, {"resources", "limits", "memory"}).empty()) << name;
    EXPECT_TRUE(Has(c, {"livenessProbe"})) << name << ": no livenessProbe";
    for (const YAML::Node& mount : c["volumeMounts"]) {
      EXPECT_TRUE(volumes.count(Scalar(mount, {"name"})))
          << name << " mounts " << Scalar(mount, {"name"}) << ", which is no volume";
    }
  }
  EXPECT_EQ(Scalar(extender_, {"livenessProbe", "httpGet", "path"}), "/healthz");
  // Only the leader answers /readyz. Where a Service routes webhooks, readiness must be /readyz
  // (the leader alone gets calls), and a rolling update may then stop every old replica (a new
  // follower never becomes ready while the old leader lives); elsewhere a replica is ready while
  // it runs, so rollouts and the disruption budget move one replica at a time.
  const bool routed = m_.Find("Service", "taskgov").has_value();
  const std::string readiness = Scalar(extender_, {"readinessProbe", "httpGet", "path"});
  const std::string max_unavailable = Scalar(spec, {"strategy", "rollingUpdate", "maxUnavailable"});
  if (routed) {
    EXPECT_EQ(readiness, "/readyz") << "the webhook Service would route calls to a follower";
    EXPECT_TRUE(max_unavailable == "100%" || max_unavailable == Scalar(spec, {"replicas"}))
        << "maxUnavailable " << max_unavailable << ": a rolling update would never finish";
  } else {
    EXPECT_EQ(readiness, "/healthz") << "the follower would stall every rollout";
    EXPECT_EQ(max_unavailable, "1");
  }
}

TEST_P(KustomizeTest, ServicesBudgetsPoliciesAndMonitorsSelectTheExtender) {
  const std::map<std::string, int> ports = ContainerPorts();
  for (const YAML::Node& s : m_.OfKind("Service")) {
    EXPECT_TRUE(Selects(s["spec"]["selector"], PodLabels())) << Describe(s) << " selects no pod";
    for (const YAML::Node& p : s["spec"]["ports"]) {
      const std::string target = Scalar(p, {"targetPort"});
      EXPECT_TRUE(ports.count(target))
          << Describe(s) << ": targetPort " << target << " is no named container port";
    }
  }
  for (const YAML::Node& b : m_.OfKind("PodDisruptionBudget")) {
    EXPECT_TRUE(Selects(b["spec"]["selector"]["matchLabels"], PodLabels())) << Describe(b);
    EXPECT_TRUE(Has(b, {"spec", "maxUnavailable"}) || Has(b, {"spec", "minAvailable"}))
        << Describe(b);
  }
  std::set<int> numbers;
  for (const auto& [name, port] : ports) numbers.insert(port);
  bool metrics_from_monitoring = false;
  for (const YAML::Node& np : m_.OfKind("NetworkPolicy")) {
    EXPECT_TRUE(Selects(np["spec"]["podSelector"]["matchLabels"], PodLabels())) << Describe(np);
    for (const YAML::Node& rule : np["spec"]["ingress"]) {
      ASSERT_TRUE(rule["from"].IsSequence() && rule["from"].size() > 0)
          << Describe(np) << ": an ingress rule from anywhere";
      for (const YAML::Node& p : rule["ports"]) {
        EXPECT_TRUE(numbers.count(p["port"].as<int>(0)))
            << Describe(np) << ": port " << Scalar(p, {"port"}) << " is no container port";
        if (p["port"].as<int>(0) == ports.at("metrics")) {
          for (const YAML::Node& from : rule["from"]) {
            metrics_from_monitoring |=
                Scalar(from, {"namespaceSelector", "matchLabels", "kubernetes.io/metadata.name"}) ==
                "monitoring";
          }
        }
      }
    }
  }
  EXPECT_TRUE(metrics_from_monitoring) << "no network policy lets the monitoring namespace scrape";
  for (const YAML::Node& sm : m_.OfKind("ServiceMonitor")) {
    bool matched = false;
    for (const YAML::Node& s : m_.OfKind("Service")) {
      if (!Selects(sm["spec"]["selector"]["matchLabels"], s["metadata"]["labels"])) continue;
      matched = true;
      std::set<std::string> names;
      for (const YAML::Node& p : s["spec"]["ports"]) names.insert(Scalar(p, {"name"}));
      for (const YAML::Node& e : sm["spec"]["endpoints"]) {
        EXPECT_TRUE(names.count(Scalar(e, {"port"})))
            << Describe(sm) << ": endpoint port " << Scalar(e, {"port"}) << " not on "
            << Describe(s);
      }
    }
    EXPECT_TRUE(matched) << Describe(sm) << " selects no Service";
  }
  std::optional<YAML::Node> dashboard = m_.Find("ConfigMap", "taskgov-dashboard");
  ASSERT_TRUE(dashboard) << "no Grafana dashboard ConfigMap";
  EXPECT_EQ(Scalar(*dashboard, {"metadata", "labels", "grafana_dashboard"}), "1");
}

TEST_P(KustomizeTest, BindingsNameRolesAndAccountsThatExist) {
  for (const char* kind : {"ClusterRoleBinding", "RoleBinding"}) {
    for (const YAML::Node& b : m_.OfKind(kind)) {
      const std::string role_kind = Scalar(b, {"roleRef", "kind"});
      const std::string role = Scalar(b, {"roleRef", "name"});
      // system: roles and the kube-system Role are the cluster's own.
      if (role.rfind("system:", 0) != 0 && role != "extension-apiserver-authentication-reader") {
        EXPECT_TRUE(Exists(role_kind, role))
            << Describe(b) << ": " << role_kind << " " << role << " is not installed";
      }
      for (const YAML::Node& s : b["subjects"]) {
        EXPECT_EQ(Scalar(s, {"kind"}), "ServiceAccount") << Describe(b);
        EXPECT_TRUE(Exists("ServiceAccount", Scalar(s, {"name"})))
            << Describe(b) << ": service account " << Scalar(s, {"name"}) << " is not installed";
      }
    }
  }
  for (const YAML::Node& c : m_.OfKind("Certificate")) {
    EXPECT_TRUE(
        Exists(Scalar(c, {"spec", "issuerRef", "kind"}), Scalar(c, {"spec", "issuerRef", "name"})))
        << Describe(c) << ": its issuer is not installed";
  }
}

// Issue 36, item 7: the network-facing extender container holds only taskgov's own
// permissions. Its service account (the pod's) is bound to taskgov's own roles alone — never to
// kube-scheduler's (cluster-wide pod deletion, pods/status, PV/PVC updates) — and where the pod
// runs kube-scheduler beside it, that container authenticates as a service account of its own,
// whose token is mounted in it alone.
TEST_P(KustomizeTest, TheExtenderContainerHoldsOnlyItsOwnPermissions) {
  const YAML::Node pod = deployment_["spec"]["template"]["spec"];
  const std::string extender_sa = Scalar(pod, {"serviceAccountName"});
  const std::set<std::string> own = {"taskgov-extender", "taskgov-leader-election"};
  for (const char* kind : {"ClusterRoleBinding", "RoleBinding"}) {
    for (const YAML::Node& b : m_.OfKind(kind)) {
      for (const YAML::Node& s : b["subjects"]) {
        if (Scalar(s, {"name"}) != extender_sa) continue;
        EXPECT_TRUE(own.count(Scalar(b, {"roleRef", "name"})))
            << Describe(b) << " gives the extender's service account " << extender_sa << " "
            << Scalar(b, {"roleRef", "name"});
      }
    }
  }
  std::optional<YAML::Node> scheduler = Container(deployment_, "kube-scheduler");
  if (!scheduler) return;
  constexpr char kTokenPath[] = "/var/run/secrets/kubernetes.io/serviceaccount";
  EXPECT_EQ(Scalar(pod, {"automountServiceAccountToken"}), "false")
      << "the pod's token would be mounted in every container";
  auto token_volume = [&](const YAML::Node& container) -> std::string {
    for (const YAML::Node& m : container["volumeMounts"]) {
      if (Scalar(m, {"mountPath"}) == kTokenPath) return Scalar(m, {"name"});
    }
    return "";
  };
  auto volume = [&](const std::string& name) -> YAML::Node {
    for (const YAML::Node& v : pod["volumes"]) {
      if (Scalar(v, {"name"}) == name) return v;
    }
    return YAML::Node();
  };
  // The extender: the pod's projected token (taskgov's).
  const std::string extender_token = token_volume(extender_);
  ASSERT_FALSE(extender_token.empty()) << "the extender has no API credentials";
  bool projected = false;
  for (const YAML::Node& src : volume(extender_token)["projected"]["sources"]) {
    projected |= static_cast<bool>(src["serviceAccountToken"]);
  }
  EXPECT_TRUE(projected) << "the extender's token is not its own service account's";
  // kube-scheduler: the token Secret of the service account that kube-scheduler's roles go to.
  const std::string scheduler_token = token_volume(*scheduler);
  ASSERT_FALSE(scheduler_token.empty()) << "kube-scheduler has no API credentials";
  EXPECT_NE(scheduler_token, extender_token);
  const std::string secret = Scalar(volume(scheduler_token), {"secret", "secretName"});
  std::optional<YAML::Node> s = m_.Find("Secret", secret);
  ASSERT_TRUE(s) << "no Secret " << secret;
  EXPECT_EQ(Scalar(*s, {"type"}), "kubernetes.io/service-account-token");
  const std::string scheduler_sa =
      Scalar(*s, {"metadata", "annotations", "kubernetes.io/service-account.name"});
  EXPECT_NE(scheduler_sa, extender_sa);
  bool has_scheduler_role = false;
  for (const YAML::Node& b : m_.OfKind("ClusterRoleBinding")) {
    if (Scalar(b, {"roleRef", "name"}) != "system:kube-scheduler") continue;
    for (const YAML::Node& subject : b["subjects"]) {
      has_scheduler_role |= Scalar(subject, {"name"}) == scheduler_sa;
    }
  }
  EXPECT_TRUE(has_scheduler_role) << scheduler_sa << " is not bound to system:kube-scheduler";
  for (const YAML::Node& m : extender_["volumeMounts"]) {
    EXPECT_NE(Scalar(m, {"name"}), scheduler_token) << "the extender mounts kube-scheduler's token";
  }
}

// Issue 36, item 6: the console serves TLS in every topology — off loopback the extender makes
// a certificate at startup; where the overlay has taskgov's serving certificate (extender-service,
// cert-manager included) the console serves that one, whose names include the console's Service —
// and its Service says so (appProtocol https). Readers' tokens are reviewed for the taskgov
// audience (no flag empties it).
TEST_P(KustomizeTest, TheConsoleServesTls) {
  const std::map<std::string, std::string> flags = testing::Flags(extender_);
  ASSERT_TRUE(flags.count("--console-listen"));
  EXPECT_NE(flags.at("--console-listen").rfind("127.0.0.1", 0), 0u)
      << "a loopback console would serve plain HTTP";
  EXPECT_FALSE(flags.count("--console-token-audience") &&
               flags.at("--console-token-audience").empty())
      << "an empty audience makes the console accept the API server's own tokens";
  std::optional<YAML::Node> service = m_.Find("Service", "taskgov-console");
  ASSERT_TRUE(service);
  EXPECT_EQ(Scalar((*service)["spec"]["ports"][0], {"appProtocol"}), "https");
  if (!flags.count("--tls-cert-file")) return;  // no certificate: the one made at startup
  EXPECT_EQ(flags.count("--console-tls-cert-file") ? flags.at("--console-tls-cert-file") : "",
            flags.at("--tls-cert-file"));
  EXPECT_EQ(flags.count("--console-tls-key-file") ? flags.at("--console-tls-key-file") : "",
            flags.at("--tls-key-file"));
  if (std::optional<YAML::Node> cert = m_.Find("Certificate", "taskgov-tls")) {
    std::set<std::string> names;
    for (const YAML::Node& n : (*cert)["spec"]["dnsNames"]) names.insert(n.as<std::string>(""));
    EXPECT_TRUE(names.count("taskgov-console.taskgov-system.svc"))
        << "the certificate does not name the console's Service";
  }
}

// The port of "ADDR:PORT".
int PortOf(const std::string& address) {
  const size_t colon = address.rfind(':');
  return colon == std::string::npos ? -1 : std::atoi(address.c_str() + colon + 1);
}

TEST_P(KustomizeTest, TheTopologyIsWiredTogether) {
  const std::map<std::string, std::string> flags = testing::Flags(extender_);
  ASSERT_TRUE(flags.count("--listen")) << "the extender has no --listen";
  ASSERT_TRUE(flags.count("--scheduler-name")) << "the extender has no --scheduler-name";
  EXPECT_EQ(PortOf(flags.at("--metrics-listen")), ContainerPorts().at("metrics"));
  // Issue 36, item 2: the kubelet probes the health listener, whose thread and connections
  // /metrics never holds (a scrape storm made probes on the metrics port time out).
  ASSERT_TRUE(flags.count("--health-listen")) << "the extender has no --health-listen";
  ASSERT_TRUE(ContainerPorts().count("health")) << "no container port named health";
  EXPECT_EQ(PortOf(flags.at("--health-listen")), ContainerPorts().at("health"));
  for (const char* probe : {"startupProbe", "livenessProbe", "readinessProbe"}) {
    EXPECT_EQ(Scalar(extender_, {probe, "httpGet", "port"}), "health")
        << probe << " must go to the health listener, not share /metrics' listener";
  }
  // The admission policy requires the scheduler name the extender governs.
  std::optional<YAML::Node> params = m_.Find("ConfigMap", "taskgov-admission");
  ASSERT_TRUE(params) << "no parameters for the admission policy";
  EXPECT_EQ(Scalar(*params, {"data", "schedulerName"}), flags.at("--scheduler-name"))
      << "the admission policy would admit pods of another scheduler than the governed one";
  if (m_.overlay == "second-scheduler") {
    std::optional<YAML::Node> cm = m_.Find("ConfigMap", "taskgov-scheduler-config");
    ASSERT_TRUE(cm);
    const YAML::Node config = YAML::Load(Scalar(*cm, {"data", "scheduler-config.yaml"}));
    const YAML::Node extender = config["extenders"][0];
    EXPECT_EQ(Scalar(extender, {"urlPrefix"}), "http://" + flags.at("--listen"))
        << "kube-scheduler does not call the extender's --listen";
    EXPECT_EQ(Scalar(extender, {"nodeCacheCapable"}), "true");
    EXPECT_EQ(Scalar(extender, {"ignorable"}), "false");
    EXPECT_EQ(Scalar(config["profiles"][0], {"schedulerName"}), flags.at("--scheduler-name"));
    EXPECT_EQ(flags.at("--listen").rfind("127.0.0.1:", 0), 0u) << "plain HTTP off loopback";
    std::optional<YAML::Node> scheduler = Container(deployment_, "kube-scheduler");
    ASSERT_TRUE(scheduler) << "no kube-scheduler container";
    const std::map<std::string, std::string> sflags = testing::Flags(*scheduler);
    EXPECT_EQ(sflags.count("--config"), 1u);
    EXPECT_EQ(Scalar(config, {"leaderElection", "resourceNamespace"}), "taskgov-system");
  } else {
    EXPECT_EQ(flags.at("--scheduler-name"), "default-scheduler");
    std::optional<YAML::Node> service = m_.Find("Service", "taskgov");
    ASSERT_TRUE(service) << "no webhook Service";
    EXPECT_EQ(ContainerPorts().at(Scalar((*service)["spec"]["ports"][0], {"targetPort"})),
              PortOf(flags.at("--listen")));
    // mTLS by default: serving certificate, key and client CA from the mounted Secret.
    std::string tls_dir;
    for (const YAML::Node& mount : extender_["volumeMounts"]) {
      if (Scalar(mount, {"name"}) == "taskgov-tls") tls_dir = Scalar(mount, {"mountPath"});
    }
    ASSERT_FALSE(tls_dir.empty()) << "the TLS Secret is not mounted";
    for (const char* flag : {"--tls-cert-file", "--tls-key-file", "--tls-client-ca-file"}) {
      ASSERT_TRUE(flags.count(flag)) << "no " << flag;
      EXPECT_EQ(flags.at(flag).rfind(tls_dir + "/", 0), 0u) << flag << " outside " << tls_dir;
    }
    if (m_.overlay == "extender-service-cert-manager") {
      std::optional<YAML::Node> cert = m_.Find("Certificate", "taskgov-tls");
      ASSERT_TRUE(cert);
      EXPECT_EQ(Scalar(*cert, {"spec", "secretName"}), "taskgov-tls");
      bool names_service = false;
      for (const YAML::Node& n : (*cert)["spec"]["dnsNames"]) {
        names_service |= n.as<std::string>("") == "taskgov.taskgov-system.svc";
      }
      EXPECT_TRUE(names_service) << "the serving certificate does not name the Service";
      EXPECT_TRUE(Exists("Certificate", "taskgov-scheduler-client"));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Overlays, KustomizeTest, ::testing::ValuesIn(testing::Overlays()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string name;
                           for (char c : info.param) name += c == '-' ? '_' : c;
                           return name;
                         });

}  // namespace
}  // namespace taskgov::deploy
