// The install (deploy/) against the real binary (issue 15's consistency tests):
//  * every flag the manifests pass to taskgov-extender is one its --help lists;
//  * the extender-service overlay's TLS flags, with the files tools/gen-certs makes in place of
//    its Secret, serve mutual TLS: the scheduler's client certificate is accepted under the
//    Service's name, no certificate or one of another CA is refused;
//  * after a scenario that borrows, reclaims (evictions, events) and elects a leader, run
//    with the shipped policy (deploy/base/policy.yaml) and Kueue's metric names on:
//      - every metric (and label) the Grafana dashboard and the PrometheusRule's alerts query is
//        in the extender's real /metrics scrape, and each label value an alert matches on
//        exists;
//      - every (verb, API group, resource) the binary called on the fake API server is granted
//        by the rendered RBAC, and the RBAC grants exactly the list documented in
//        deploy/README.md ("Permissions"), nothing more.

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "deploy/testing/manifests.h"
#include "e2e/scenario_test_util.h"
#include "metrics/testing/exposition.h"
#include "metrics/testing/promql.h"
#include "rapidjson/document.h"
#include "scheduler/common/testing/files.h"
#include "scheduler/common/testing/http_client.h"
#include "scheduler/common/testing/process.h"

namespace taskgov::e2e {
namespace {

using deploy::testing::Manifests;
using deploy::testing::Scalar;

using common::testing::ReadFile;

// Skips the calling test when kubectl is missing (as the promtool tests do).
#define SKIP_WITHOUT_KUBECTL()                                                             \
  if (::access(deploy::testing::kKubectl, X_OK) != 0) {                                    \
    GTEST_SKIP()                                                                           \
        << deploy::testing::kKubectl                                                       \
        << " not found: install the Debian package `kubernetes-client` (tools/bootstrap)"; \
  }

// $(rootpath //tools:gen-certs), from the test's arguments.
std::string g_gen_certs = "tools/gen-certs";

std::vector<Manifests> RenderAll() {
  std::vector<Manifests> out;
  for (const std::string& overlay : deploy::testing::Overlays()) {
    common::Result<Manifests> m = deploy::testing::Render(overlay);
    EXPECT_TRUE(m.ok()) << m.error().message;
    if (m.ok()) out.push_back(*m);
  }
  return out;
}

// The taskgov-extender containers of an install.
std::vector<YAML::Node> ExtenderContainers(const Manifests& m) {
  std::vector<YAML::Node> out;
  for (const YAML::Node& d : m.OfKind("Deployment")) {
    for (const YAML::Node& c : deploy::testing::Containers(d)) {
      if (Scalar(c, {"image"}).rfind("taskgov-extender", 0) == 0) out.push_back(c);
    }
  }
  return out;
}

TEST(InstallFlagsTest, EveryFlagTheManifestsPassIsOneTheBinaryKnows) {
  SKIP_WITHOUT_KUBECTL();
  const common::testing::ToolRun help =
      common::testing::RunToCompletion({ExtenderBinary(), "--help"});
  ASSERT_EQ(help.exit_code, 0) << help.output;
  ASSERT_NE(help.output.find("--listen"), std::string::npos) << help.output;
  size_t checked = 0;
  for (const Manifests& m : RenderAll()) {
    const std::vector<YAML::Node> containers = ExtenderContainers(m);
    EXPECT_FALSE(containers.empty()) << m.overlay << " runs no taskgov-extender";
    for (const YAML::Node& c : containers) {
      for (const auto& [flag, value] : deploy::testing::Flags(c)) {
        ++checked;
        // --help lists a flag as "--name=VALUE", "--name[=BOOL]" or "--name " (or "--name,").
        bool listed = false;
        for (size_t at = help.output.find(flag); at != std::string::npos;
             at = help.output.find(flag, at + 1)) {
          const char next =
              at + flag.size() < help.output.size() ? help.output[at + flag.size()] : ' ';
          listed |= next == '=' || next == '[' || next == ' ' || next == ',' || next == '\n';
        }
        EXPECT_TRUE(listed) << m.overlay << " passes " << flag << "=" << value
                            << ", which taskgov-extender --help does not list";
      }
    }
  }
  EXPECT_GE(checked, 20u);
}

std::map<std::string, std::string> ShippedPolicy();

// tools/gen-certs into `dir`; its output (for failure messages).
std::string GenCerts(const std::string& dir) {
  const common::testing::ToolRun run =
      common::testing::RunToCompletion({common::testing::RunfilePath(g_gen_certs), "--out", dir});
  EXPECT_EQ(run.exit_code, 0) << run.output;
  return run.output;
}

TEST(InstallTlsTest, GenCertsMaterialServesTheOverlaysMutualTls) {
  SKIP_WITHOUT_KUBECTL();
  const std::filesystem::path tmp = std::filesystem::path(::testing::TempDir()) / "tls";
  std::filesystem::remove_all(tmp);
  GenCerts((tmp / "certs").string());
  GenCerts((tmp / "other").string());
  common::Result<Manifests> m = deploy::testing::Render("extender-service");
  ASSERT_TRUE(m.ok()) << m.error().message;
  const std::vector<YAML::Node> containers = ExtenderContainers(*m);
  ASSERT_EQ(containers.size(), 1u);
  std::string mount;
  for (const YAML::Node& v : containers[0]["volumeMounts"]) {
    if (Scalar(v, {"name"}) == "taskgov-tls") mount = Scalar(v, {"mountPath"});
  }
  ASSERT_FALSE(mount.empty());
  // The overlay's TLS flags, with the Secret's mount replaced by gen-certs' directory (the
  // Secret holds gen-certs' tls.crt, tls.key and ca.crt under those names).
  std::vector<std::string> args = {"--listen=127.0.0.1:0", "--metrics-listen=127.0.0.1:0",
                                   "--health-listen=127.0.0.1:0", "--no-kube",
                                   "--config-dir=" + (tmp / "config").string()};
  std::filesystem::create_directories(tmp / "config");
  for (const auto& [name, text] : ShippedPolicy()) std::ofstream(tmp / "config" / name) << text;
  int tls_flags = 0;
  for (const auto& [flag, value] : deploy::testing::Flags(containers[0])) {
    if (flag.rfind("--tls-", 0) != 0) continue;
    ASSERT_EQ(value.rfind(mount + "/", 0), 0u) << flag;
    args.push_back(flag + "=" + (tmp / "certs").string() + value.substr(mount.size()));
    ++tls_flags;
  }
  ASSERT_EQ(tls_flags, 3);
  common::testing::Subprocess proc;
  ASSERT_TRUE(proc.Start(ExtenderBinary(), args).ok());
  common::Result<std::string> serving =
      proc.WaitForLine("\"msg\":\"serving\"", std::chrono::seconds(10));
  ASSERT_TRUE(serving.ok()) << serving.error().message;
  const size_t at = serving->find("\"webhook_port\":");
  ASSERT_NE(at, std::string::npos) << *serving;
  const uint16_t port = static_cast<uint16_t>(std::stoi(serving->substr(at + 15)));

  // As kube-scheduler's tlsConfig of docs/install.md form (b) names them.
  auto client = [&](const std::string& certs) {
    common::testing::HttpClientTls tls;
    tls.ca_file = (tmp / "certs/ca.crt").string();
    tls.cert_file = certs.empty() ? "" : certs + "/client.crt";
    tls.key_file = certs.empty() ? "" : certs + "/client.key";
    tls.server_name = "taskgov.taskgov-system.svc";
    tls.alpn = {"http/1.1"};
    return std::make_unique<common::testing::HttpClient>("127.0.0.1", port, tls);
  };
  common::Result<common::testing::HttpReply> ok =
      client((tmp / "certs").string())->Post("/filter", "{}");
  ASSERT_TRUE(ok.ok()) << ok.error().message;
  EXPECT_TRUE(ok->status == 200 || ok->status == 400) << ok->status << " " << ok->body;
  EXPECT_FALSE(client("")->Post("/filter", "{}").ok()) << "served without a client certificate";
  EXPECT_FALSE(client((tmp / "other").string())->Post("/filter", "{}").ok())
      << "served a client certificate of another CA";
  proc.Signal(SIGTERM);
  EXPECT_EQ(proc.Wait(std::chrono::seconds(5)).value_or(-1), 0);
}

// ---- the scenario both consistency checks read ----

// The shipped policy ConfigMap's files, with its minimum runtime before preemption (60 s, on
// the extender's real clock) set to 0 so that the scenario's reclaim need not wait for it.
std::map<std::string, std::string> ShippedPolicy() {
  std::map<std::string, std::string> files;
  const YAML::Node cm = YAML::LoadFile("deploy/base/policy.yaml");
  for (const auto& entry : cm["data"]) {
    std::string text = entry.second.as<std::string>();
    const std::string from = "minimumRuntimeSeconds: 60";
    const size_t at = text.find(from);
    EXPECT_NE(at, std::string::npos) << "the shipped policy no longer says " << from;
    if (at != std::string::npos) text.replace(at, from.size(), "minimumRuntimeSeconds: 0");
    files[entry.first.as<std::string>()] = text;
  }
  return files;
}

// A permission: API group ("" for the core group), resource (with its subresource, as RBAC
// names it: pods/eviction), verb.
using Permission = std::tuple<std::string, std::string, std::string>;

std::string Show(const Permission& p) {
  return "(" + std::get<2>(p) + " " + (std::get<0>(p).empty() ? "core" : std::get<0>(p)) + "/" +
         std::get<1>(p) + ")";
}

// The permission a recorded request needs; nullopt for non-resource URLs (discovery: /api,
// /apis, /apis/GROUP[/VERSION], /version — granted to every authenticated client by the
// cluster's system:discovery role) and the fake server's own /fake/ control API.
std::optional<Permission> Needs(const scheduler::kube::testing::RecordedRequest& r) {
  std::vector<std::string> segs;
  std::stringstream path(r.path);
  for (std::string s; std::getline(path, s, '/');) {
    if (!s.empty()) segs.push_back(s);
  }
  size_t at;
  std::string group;
  if (segs.size() >= 2 && segs[0] == "api") {
    at = 2;  // api/v1/...
  } else if (segs.size() >= 3 && segs[0] == "apis") {
    group = segs[1];
    at = 3;  // apis/GROUP/VERSION/...
  } else {
    return std::nullopt;
  }
  if (segs.size() <= at) return std::nullopt;
  std::vector<std::string> rest(segs.begin() + at, segs.end());
  if (rest[0] == "namespaces" && rest.size() >= 3) rest.erase(rest.begin(), rest.begin() + 2);
  const std::string resource = rest[0] + (rest.size() >= 3 ? "/" + rest[2] : "");
  const bool item = rest.size() >= 2;
  std::string verb;
  if (r.method == "GET") {
    verb = r.watch ? "watch" : item ? "get" : "list";
  } else if (r.method == "POST") {
    verb = "create";
  } else if (r.method == "PUT") {
    verb = "update";
  } else if (r.method == "PATCH") {
    verb = "patch";
  } else if (r.method == "DELETE") {
    verb = item ? "delete" : "deletecollection";
  } else {
    verb = r.method;
  }
  return Permission{group, resource, verb};
}

// The permissions a set of RBAC rules grants, expanded; `where` gets each one's role.
std::set<Permission> Granted(const std::vector<YAML::Node>& roles,
                             std::map<Permission, std::string>* where) {
  std::set<Permission> out;
  for (const YAML::Node& role : roles) {
    for (const YAML::Node& rule : role["rules"]) {
      EXPECT_FALSE(rule["resourceNames"]) << deploy::testing::Describe(role);
      for (const YAML::Node& g : rule["apiGroups"]) {
        for (const YAML::Node& res : rule["resources"]) {
          for (const YAML::Node& v : rule["verbs"]) {
            const Permission p{g.as<std::string>(""), res.as<std::string>(""),
                               v.as<std::string>("")};
            EXPECT_NE(std::get<1>(p), "*") << "a wildcard resource in " << role["metadata"]["name"];
            EXPECT_NE(std::get<2>(p), "*") << "a wildcard verb in " << role["metadata"]["name"];
            out.insert(p);
            (*where)[p] = deploy::testing::Describe(role);
          }
        }
      }
    }
  }
  return out;
}

// The permissions table of deploy/README.md between its markers: rows
// "| `group` | `resource` | verb, verb | why |" (group `""` for the core group).
std::set<Permission> Documented() {
  const std::string text = ReadFile("deploy/README.md");
  const size_t begin = text.find("<!-- permissions:begin -->");
  const size_t end = text.find("<!-- permissions:end -->");
  EXPECT_NE(begin, std::string::npos) << "deploy/README.md has no permissions table";
  EXPECT_NE(end, std::string::npos);
  std::set<Permission> out;
  if (begin == std::string::npos || end == std::string::npos) return out;
  std::stringstream table(text.substr(begin, end - begin));
  for (std::string line; std::getline(table, line);) {
    if (line.rfind("| `", 0) != 0) continue;
    std::vector<std::string> cells;
    std::stringstream row(line.substr(1));
    for (std::string cell; std::getline(row, cell, '|');) cells.push_back(cell);
    if (cells.size() < 3) continue;
    auto unquote = [](std::string s) {
      std::string out;
      for (char c : s) {
        if (c != '`' && c != ' ' && c != '"') out += c;
      }
      return out;
    };
    std::stringstream verbs(cells[2]);
    for (std::string v; std::getline(verbs, v, ',');) {
      out.insert({unquote(cells[0]), unquote(cells[1]), unquote(v)});
    }
  }
  return out;
}

class InstallScenarioTest : public ScenarioTest {
 protected:
  // a borrows 4 of b's idle GPUs on ml.p5.48xlarge, then b's 8 inference pods reclaim them: a's
  // borrowers are evicted (with events) and b runs 8. On ml.g5.12xlarge a takes its 4 and the
  // 2 its borrowing limit (50 %) allows, and a seventh pod is refused although a node has room.
  void RunBorrowAndReclaim() {
    HarnessOptions options;
    options.config = ShippedPolicy();
    options.step_seconds = 30;
    options.extender_args = {"--kueue-metrics=true"};
    StartHarness(std::move(options));
    std::vector<PodSpec> a;
    for (int i = 0; i < 12; ++i) a.push_back(GpuPod("a", "a-train-" + std::to_string(i)));
    for (int i = 0; i < 7; ++i) {
      a.push_back(GpuPod("a", "a-g5-" + std::to_string(i), 1, "training", kG5));
    }
    for (const PodSpec& p : a) ASSERT_TRUE(h().Submit(p).ok());
    ASSERT_TRUE(h().RunUntil([&] { return Running("a-train-") == 12 && Running("a-g5-") == 6; }, 6))
        << h().Logs();
    bool refused = false;
    for (const StepReport& r : h().history()) {
      for (const Attempt& at : r.attempts) refused |= at.outcome == Attempt::Outcome::kRefused;
    }
    ASSERT_TRUE(refused) << "the seventh g5 pod of a was not refused";
    for (int i = 0; i < 8; ++i) {
      PodSpec p = GpuPod("b", "b-serve-" + std::to_string(i), 1, "inference");
      p.priority = 1000;
      ASSERT_TRUE(h().Submit(p).ok());
    }
    ASSERT_TRUE(h().RunUntil([&] { return Running("b-serve-") == 8; }, 20)) << h().Logs();
    ASSERT_GE(h().Evictions().size(), 4u);
    ASSERT_FALSE(h().Events().empty());
    // An admin reads the console's API: its token and access are reviewed by the API server.
    h().api().SetAccessReviews({{"t-admin", "admin", {}, {"taskgov"}}},
                               {{"admin", "get", "taskgov.io", "workloads", ""}});
    common::Result<common::testing::HttpReply> teams =
        h().extender(h().serving()).Admin("/api/v1/teams", "t-admin");
    ASSERT_TRUE(teams.ok()) << teams.error().message;
    ASSERT_EQ(teams->status, 200) << teams->body;
  }

  // Running pods whose name starts with `prefix`.
  size_t Running(const std::string& prefix) {
    return h().CountPods([&](const PodView& p) {
      return p.name.rfind(prefix, 0) == 0 && p.active() && !p.terminating && p.phase == "Running";
    });
  }
};

TEST_F(InstallScenarioTest, DashboardAndAlertsQueryOnlyWhatTheBinaryExports) {
  SKIP_WITHOUT_KUBECTL();
  RunBorrowAndReclaim();
  if (HasFatalFailure()) return;
  // A dropped node watch, restarted: taskgov_watch_restarts_total has a series from then on.
  const uint64_t watches = h().api().watches_started("nodes");
  h().api().DropWatches("nodes");
  ASSERT_TRUE(h().api().WaitFor([&] { return h().api().watches_started("nodes") > watches; },
                                std::chrono::seconds(10)));
  // A node event (the same node written again: MODIFIED), as kubelets' status updates are:
  // the node informer's event age has a series from its first event.
  const std::vector<std::string> nodes = h().api().List("nodes");
  ASSERT_FALSE(nodes.empty());
  ASSERT_TRUE(h().api().Upsert("nodes", nodes.front()).ok());
  // kube-scheduler calls preempt for a pod its own dry run found victims for; the verb's series
  // exist from its first call.
  std::optional<PodView> waiting;
  for (const PodView& p : h().Pods()) {
    if (p.pending() && p.name.rfind("a-g5-", 0) == 0) waiting = p;
  }
  ASSERT_TRUE(waiting) << "the refused g5 pod of a is not pending";
  ASSERT_TRUE(h().extender().client().PreemptMeta(waiting->json, {}).ok());
  ASSERT_TRUE(h().Sync().ok());
  common::Result<metrics::testing::Exposition> scraped =
      h().extender(h().serving()).ScrapeMetrics();
  ASSERT_TRUE(scraped.ok()) << scraped.error().message;
  // Label names, and label values, seen per sample name.
  std::map<std::string, std::set<std::string>> labels;
  std::map<std::string, std::set<std::string>> values;
  for (const metrics::testing::Sample& s : scraped->samples) {
    labels[s.name];
    for (const auto& [k, v] : s.labels) {
      labels[s.name].insert(k);
      values[s.name].insert(k + "=" + v);
    }
  }
  std::vector<std::pair<std::string, std::string>> queries;  // (where, PromQL)
  const std::string dashboard_text = ReadFile("deploy/dashboards/taskgov.json");
  rapidjson::Document dashboard;
  dashboard.Parse(dashboard_text.c_str(), dashboard_text.size());
  ASSERT_FALSE(dashboard.HasParseError());
  std::vector<std::string> panel_queries;
  metrics::testing::CollectQueries(dashboard, &panel_queries);
  for (const std::string& q : panel_queries) queries.push_back({"the dashboard", q});
  const size_t from_dashboard = queries.size();
  common::Result<Manifests> m = deploy::testing::RenderDir("monitoring");
  ASSERT_TRUE(m.ok()) << m.error().message;
  for (const YAML::Node& rule : m->OfKind("PrometheusRule")) {
    for (const YAML::Node& group : rule["spec"]["groups"]) {
      for (const YAML::Node& r : group["rules"]) {
        queries.push_back({"alert " + Scalar(r, {"alert"}), Scalar(r, {"expr"})});
      }
    }
  }
  ASSERT_GT(from_dashboard, 20u);
  ASSERT_GE(queries.size() - from_dashboard, 6u) << "the alerts are missing";
  size_t selectors = 0;
  for (const auto& [where, q] : queries) {
    for (const metrics::testing::Selector& sel : metrics::testing::Selectors(q)) {
      ++selectors;
      ASSERT_TRUE(labels.count(sel.name))
          << where << " queries " << sel.name << ", which the binary does not export: " << q;
      for (const std::string& label : sel.labels) {
        EXPECT_TRUE(labels[sel.name].count(label))
            << where << " selects " << sel.name << " by " << label << ", which it lacks: " << q;
      }
      for (const auto& [label, value] : sel.equals) {
        if (value.find('$') != std::string::npos) continue;  // a Grafana variable
        EXPECT_TRUE(values[sel.name].count(label + "=" + value))
            << where << " matches " << sel.name << "{" << label << "=\"" << value
            << "\"}, which the binary never exports: " << q;
      }
    }
  }
  EXPECT_GE(selectors, queries.size());
}

TEST_F(InstallScenarioTest, RbacGrantsWhatTheBinaryCallsAndOnlyTheDocumentedList) {
  SKIP_WITHOUT_KUBECTL();
  RunBorrowAndReclaim();
  if (HasFatalFailure()) return;
  std::map<Permission, size_t> used;
  for (const auto& r : h().api().requests()) {
    if (std::optional<Permission> p = Needs(r)) ++used[*p];
  }
  ASSERT_GE(used.size(), 6u);
  for (const Manifests& m : RenderAll()) {
    SCOPED_TRACE(m.overlay);
    std::vector<YAML::Node> roles;
    for (const char* kind : {"ClusterRole", "Role"}) {
      for (const YAML::Node& role : m.OfKind(kind)) roles.push_back(role);
    }
    std::map<Permission, std::string> where;
    const std::set<Permission> granted = Granted(roles, &where);
    std::string used_list;
    for (const auto& [p, n] : used) used_list += " " + Show(p) + "×" + std::to_string(n);
    if (m.overlay == deploy::testing::Overlays().front()) {
      std::cout << "the binary called:" << used_list << "\n";
    }
    for (const auto& [p, n] : used) {
      EXPECT_TRUE(granted.count(p))
          << "the binary called " << Show(p) << " " << n
          << " times, which the RBAC does not grant; it called:" << used_list;
    }
    const std::set<Permission> documented = Documented();
    for (const Permission& p : granted) {
      EXPECT_TRUE(documented.count(p))
          << where[p] << " grants " << Show(p) << ", which deploy/README.md does not list";
    }
    for (const Permission& p : documented) {
      EXPECT_TRUE(granted.count(p))
          << "deploy/README.md lists " << Show(p) << ", which no role grants";
    }
    // The admission policy that bounds the extender's patch on pods names the account the
    // ClusterRole is bound to (a renamed namespace must not leave the patch unbounded).
    std::optional<YAML::Node> binding = m.Find("ClusterRoleBinding", "taskgov-extender");
    std::optional<YAML::Node> requeue_only =
        m.Find("ValidatingAdmissionPolicy", "taskgov-requeue-only");
    ASSERT_TRUE(binding && requeue_only);
    const YAML::Node subject = (*binding)["subjects"][0];
    EXPECT_EQ((*requeue_only)["spec"]["matchConditions"][0]["expression"].as<std::string>(""),
              "request.userInfo.username == 'system:serviceaccount:" +
                  subject["namespace"].as<std::string>("") + ":" +
                  subject["name"].as<std::string>("") + "'");
    // The Leases are where the Role that grants them is.
    std::optional<YAML::Node> role = m.Find("Role", "taskgov-leader-election");
    ASSERT_TRUE(role);
    for (const YAML::Node& c : ExtenderContainers(m)) {
      EXPECT_EQ(deploy::testing::Flags(c)["--leader-elect-namespace"],
                Scalar(*role, {"metadata", "namespace"}));
    }
  }
}

}  // namespace
}  // namespace taskgov::e2e
