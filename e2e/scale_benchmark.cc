// Scale benchmark (issue 19): the real extender against the e2e fake API server holding a large
// cluster — by default 5,000 nodes of 10 instance types and 100,000 pods of 500 teams in 50
// cohorts — measured as an operator of such a cluster would see it. Prints one table.
//
//   bazel run -c opt //e2e:scale_benchmark -- [--nodes=5000] [--pods=100000] [--teams=500]
//       [--cohorts=50] [--requests=10000] [--idle-seconds=20] [--kueue=1]
//
// The cluster: flavor f has nodes/10 nodes; cohort c's teams have quota on flavor c % 10 and its
// nodes are a slice of that flavor's (nodes/cohorts each). Every team has nominal = its equal
// share of its cohort's accelerators. Accelerator pods run up to each team's usage (team 0 of
// each cohort uses half its nominal and lends the rest, team 1 borrows that half, the others use
// their nominal; in the last cohort every team uses half, so filters there admit), CPU pods make
// up the rest, and every team but team 0 has 5% of its pods waiting (1 accelerator each: with
// FirstComeFirstServe idle compute they can neither borrow nor preempt, so the controller decides
// once for each and then rests).
//
// Three runs of the extender, each started on the loaded API server: a baseline with the nodes
// and teams but no pods (for the bytes per pod), then the cluster with default metrics, then with
// --kueue-metrics (--kueue=0 skips it). Each loaded run measures: sync (extender serving → /readyz
// 200), RSS after sync, CPU (user + system) over the first minute (the controller decides once for
// every waiting pod) and over the --idle-seconds after it (settled: controllers running, no webhook
// traffic), then
// --requests back-to-back filters with 500 NodeNames that admit, that refuse, and prioritizes
// (p50 / p99 / max, wall time on one kept-alive connection, and the share of filters the
// extender's own histogram saw answered within 0.25 to 2.5 ms), the /metrics render (median and
// size of 5 scrapes), and a reclaim: a pod of a lending team asking for 8 accelerators, from its
// creation to the first eviction the API server receives (the controller runs every second, and
// 250 ms after a pod starts waiting).
//
// Everything listens on 127.0.0.1; the extender processes are stopped by the harness.

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

#include "e2e/harness.h"
#include "scheduler/common/testing/http_client.h"
#include "scheduler/common/testing/process.h"

namespace taskgov::e2e {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

struct Shape {
  int nodes = 5000;
  int pods = 100000;
  int teams = 500;
  int cohorts = 50;
  int requests = 10000;
  int idle_seconds = 20;
  int kueue = 1;  // 0: skip the --kueue-metrics run
};

struct Flavor {
  const char* name;
  const char* accelerator;
  int per_node;
  int vcpu;
  int memory_gib;
};

constexpr Flavor kFlavors[] = {
    {"ml.p5.48xlarge", "nvidia.com/gpu", 8, 192, 2048},
    {"ml.p5e.48xlarge", "nvidia.com/gpu", 8, 192, 2048},
    {"ml.p5en.48xlarge", "nvidia.com/gpu", 8, 192, 2048},
    {"ml.p4d.24xlarge", "nvidia.com/gpu", 8, 96, 1152},
    {"ml.p4de.24xlarge", "nvidia.com/gpu", 8, 96, 1152},
    {"ml.g5.48xlarge", "nvidia.com/gpu", 8, 192, 768},
    {"ml.g6.48xlarge", "nvidia.com/gpu", 8, 192, 768},
    {"ml.g6e.48xlarge", "nvidia.com/gpu", 8, 192, 1536},
    {"ml.trn1.32xlarge", "aws.amazon.com/neuron", 16, 128, 512},
    {"ml.trn2.48xlarge", "aws.amazon.com/neuron", 16, 192, 2048},
};
constexpr int kFlavorCount = sizeof(kFlavors) / sizeof(kFlavors[0]);

// The cluster's layout, derived from the shape.
class Layout {
 public:
  explicit Layout(const Shape& s) : s_(s) {}
  [[nodiscard]] int teams_per_cohort() const { return s_.teams / s_.cohorts; }
  [[nodiscard]] int nodes_per_cohort() const { return s_.nodes / s_.cohorts; }
  [[nodiscard]] int cohort_of(int team) const { return team / teams_per_cohort(); }
  [[nodiscard]] const Flavor& flavor_of_cohort(int c) const { return kFlavors[c % kFlavorCount]; }
  [[nodiscard]] const Flavor& flavor_of(int team) const {
    return flavor_of_cohort(cohort_of(team));
  }
  // Cohort c's nodes: the (c / kFlavorCount)-th slice of its flavor's nodes.
  [[nodiscard]] std::string node(int cohort, int i) const {
    return "n" + std::to_string(cohort % kFlavorCount) + "-" +
           std::to_string((cohort / kFlavorCount) * nodes_per_cohort() + i);
  }
  [[nodiscard]] int nominal(int team) const {
    return nodes_per_cohort() * flavor_of(team).per_node / teams_per_cohort();
  }
  // Accelerators the team's running pods hold.
  [[nodiscard]] int used(int team) const {
    const int k = team % teams_per_cohort();
    if (cohort_of(team) == s_.cohorts - 1 || k == 0) return nominal(team) / 2;
    if (k == 1) return nominal(team) + nominal(team) / 2;
    return nominal(team);
  }
  [[nodiscard]] int pods_per_team() const { return s_.pods / s_.teams; }
  // Team 0 of each cohort lends: its pods would reclaim, so it has none waiting (the reclaim row
  // submits one); the others' waiting pods can neither borrow nor preempt.
  [[nodiscard]] int pending_per_team(int team) const {
    return team % teams_per_cohort() == 0 ? 0 : std::max(1, pods_per_team() / 20);
  }

 private:
  Shape s_;
};

std::string TeamName(int t) { return "t" + std::to_string(t); }
std::string TeamNs(int t) { return "team-" + std::to_string(t); }

std::string PolicyYaml(const Shape& s, const Layout& l) {
  std::ostringstream y;
  y << "apiVersion: taskgov.io/v1\nkind: TaskGovernancePolicy\n"
       "taskPrioritization: TaskRanking\nidleComputeAllocation: FirstComeFirstServe\n"
       "priorityClasses:\n  - {name: inference, weight: 100}\n  - {name: training, weight: 50}\n"
       "preemption: {gracePeriodSeconds: 60, minimumRuntimeSeconds: 0}\nteams:\n";
  for (int t = 0; t < s.teams; ++t) {
    y << "  - name: " << TeamName(t) << "\n    namespaces: [" << TeamNs(t) << "]\n"
      << "    cohort: c" << l.cohort_of(t) << "\n"
      << "    sharing: {strategy: LendAndBorrow, borrowLimit: 100}\n"
      << "    compute:\n      - {instanceType: " << l.flavor_of(t).name
      << ", accelerators: " << l.nominal(t) << "}\n";
  }
  return y.str();
}

std::vector<NodeSpec> Nodes(const Shape& s, const Layout& l) {
  std::vector<NodeSpec> nodes;
  for (int c = 0; c < s.cohorts; ++c) {
    const Flavor& f = l.flavor_of_cohort(c);
    for (int i = 0; i < l.nodes_per_cohort(); ++i) {
      NodeSpec n;
      n.name = l.node(c, i);
      n.instance_type = f.name;
      n.allocatable = {{f.accelerator, f.per_node},
                       {"cpu", int64_t{f.vcpu} * 1000},
                       {"memory", int64_t{f.memory_gib} << 30},
                       {"pods", 110}};
      nodes.push_back(std::move(n));
    }
  }
  return nodes;
}

// A pod as the API server holds it: bound and running when `node` is set, else pending.
std::string PodJson(const std::string& ns, const std::string& name, const std::string& node,
                    const Flavor& f, int accelerators, const std::string& uid = "") {
  const std::string requests = accelerators > 0 ? "{\"" + std::string(f.accelerator) + "\":\"" +
                                                      std::to_string(accelerators) +
                                                      "\",\"cpu\":\"2\",\"memory\":\"16Gi\"}"
                                                : "{\"cpu\":\"1\",\"memory\":\"4Gi\"}";
  std::string json = "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"" + name +
                     "\",\"namespace\":\"" + ns + "\",";
  if (!uid.empty()) json += "\"uid\":\"" + uid + "\",";
  json +=
      "\"creationTimestamp\":\"2026-12-01T00:00:00Z\",\"labels\":{\"app\":\"bench\","
      "\"kueue.x-k8s.io/priority-class\":\"training\"}},\"spec\":{\"schedulerName\":\"taskgov\",";
  if (!node.empty()) json += "\"nodeName\":\"" + node + "\",";
  json +=
      "\"nodeSelector\":{\"node.kubernetes.io/instance-type\":\"" + std::string(f.name) +
      "\"},\"containers\":[{\"name\":\"main\",\"image\":\"bench\",\"resources\":{\"requests\":" +
      requests + ",\"limits\":" + requests + "}}]},\"status\":{\"phase\":\"" +
      (node.empty() ? "Pending" : "Running") + "\"" +
      (node.empty() ? "" : ",\"startTime\":\"2026-12-01T00:00:01Z\"") + "}}";
  return json;
}

// Creates every team's pods in the API server.
common::Status LoadPods(const Shape& s, const Layout& l,
                        scheduler::kube::testing::FakeApiServer& api) {
  for (int c = 0; c < s.cohorts && s.pods > 0; ++c) {
    int gpu_slot = 0;  // next free accelerator across the cohort's nodes
    int cpu_slot = 0;
    const Flavor& f = l.flavor_of_cohort(c);
    for (int k = 0; k < l.teams_per_cohort(); ++k) {
      const int t = c * l.teams_per_cohort() + k;
      const int running = l.pods_per_team() - l.pending_per_team(t);
      const int gpu_pods = std::min(running, l.used(t));
      for (int p = 0; p < l.pods_per_team(); ++p) {
        std::string node;
        int accelerators = 1;
        if (p < gpu_pods) {
          node = l.node(c, (gpu_slot++ / f.per_node) % l.nodes_per_cohort());
        } else if (p < running) {
          node = l.node(c, cpu_slot++ % l.nodes_per_cohort());
          accelerators = 0;
        }
        common::Result<std::string> r =
            api.Upsert("pods", PodJson(TeamNs(t), "p" + std::to_string(p), node, f, accelerators));
        if (!r.ok()) return r.error();
      }
    }
  }
  return common::Status::Ok();
}

double Ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

// The process's resident set (VmRSS) in MiB, and its CPU time (user + system) in seconds.
double RssMib(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;
  }
  return -1;
}
double CpuSeconds(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::istringstream fields(stat.substr(stat.rfind(')') + 2));
  std::string field;
  double ticks = 0;
  for (int i = 3; i <= 15 && fields >> field; ++i) {
    if (i == 14 || i == 15) ticks += std::stod(field);
  }
  return ticks / static_cast<double>(sysconf(_SC_CLK_TCK));
}

struct Latency {
  double p50 = 0, p99 = 0, max = 0;
  int errors = 0;
};

Latency Measure(int n, const std::function<bool()>& call) {
  std::vector<double> ms;
  ms.reserve(n);
  Latency out;
  for (int i = 0; i < n; ++i) {
    const Clock::time_point t0 = Clock::now();
    if (!call()) ++out.errors;
    ms.push_back(Ms(Clock::now() - t0));
  }
  std::sort(ms.begin(), ms.end());
  if (!ms.empty()) {
    out.p50 = ms[ms.size() / 2];
    out.p99 = ms[std::min(ms.size() - 1, ms.size() * 99 / 100)];
    out.max = ms.back();
  }
  return out;
}

// One run's figures (rows of the table).
using Figures = std::vector<std::pair<std::string, std::string>>;

std::string Fixed(double v, int digits) {
  char buf[64];
  snprintf(buf, sizeof(buf), "%.*f", digits, v);
  return buf;
}
std::string Lat(const Latency& l) {
  return Fixed(l.p50, 3) + " / " + Fixed(l.p99, 3) + " / " + Fixed(l.max, 1) + " ms" +
         (l.errors > 0 ? " (" + std::to_string(l.errors) + " errors)" : "");
}

// What a shell command writes to stdout, and whether it exited 0.
bool CommandOutput(const std::string& command, std::string* out) {
  FILE* p = popen(command.c_str(), "r");
  if (p == nullptr) return false;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof(buf), p)) > 0;) out->append(buf, n);
  return pclose(p) == 0;
}

// `seconds` of back-to-back POSTs of `body` to `url` by wrk on one connection (a lean client in a
// process of its own, as tools/bench uses): "p50 / p99 / max, N requests", or why not.
std::string Wrk(const std::string& url, const std::string& body, int seconds) {
  if (system("command -v wrk >/dev/null 2>&1") != 0) return "wrk not installed (tools/bootstrap)";
  char dir_template[] = "/tmp/taskgov-scale-wrk-XXXXXX";
  const char* dir = mkdtemp(dir_template);
  if (dir == nullptr) return "no temporary directory";
  const std::string body_path = std::string(dir) + "/body.json";
  const std::string script_path = std::string(dir) + "/post.lua";
  std::ofstream(body_path) << body;
  std::ofstream(script_path) << "wrk.method = \"POST\"\n"
                                "wrk.headers[\"Content-Type\"] = \"application/json\"\n"
                                "local f = io.open(\""
                             << body_path << "\", \"rb\")\nwrk.body = f:read(\"*a\")\n";
  const std::string command = "wrk -t1 -c1 -d" + std::to_string(seconds) + "s --latency -s " +
                              script_path + " " + url + " 2>&1";
  std::string out;
  (void)CommandOutput(command, &out);  // its output says what went wrong, if anything did
  std::remove(body_path.c_str());
  std::remove(script_path.c_str());
  rmdir(dir);
  // "    Latency   612.34us  100.00us  12.34ms   90.00%", "     50%  600.00us", "N requests in".
  auto ms = [](const std::string& v) {
    const double x = std::atof(v.c_str());
    if (v.find("us") != std::string::npos) return x / 1000;
    if (v.find("ms") != std::string::npos) return x;
    return x * 1000;
  };
  auto field = [&](const std::string& label, int index) -> std::string {
    std::istringstream lines(out);
    for (std::string line; std::getline(lines, line);) {
      std::istringstream words(line);
      std::string first;
      words >> first;
      if (first != label) continue;
      std::string word;
      for (int i = 0; i <= index; ++i) words >> word;
      return word;
    }
    return "";
  };
  const std::string p50 = field("50%", 0), p99 = field("99%", 0), max = field("Latency", 2);
  const size_t at = out.find(" requests in");
  if (p50.empty() || p99.empty() || max.empty() || at == std::string::npos ||
      out.find("Non-2xx") != std::string::npos || out.find("Socket errors") != std::string::npos) {
    return "wrk failed: " + out.substr(0, 300);
  }
  const size_t from = out.rfind('\n', at);
  const std::string requests = out.substr(from + 1, at - from - 1);
  return Fixed(ms(p50), 3) + " / " + Fixed(ms(p99), 3) + " / " + Fixed(ms(max), 1) + " ms, " +
         std::to_string(std::atol(requests.c_str())) + " requests";
}

// The median time curl takes to GET `url`, over `times` requests: "N ms", or why not.
std::string Curl(const std::string& url, int times) {
  if (system("command -v curl >/dev/null 2>&1") != 0) return "curl not installed (tools/bootstrap)";
  std::vector<double> ms;
  for (int i = 0; i < times; ++i) {
    const std::string command = "curl -sf -o /dev/null -w '%{time_total}' " + url;
    std::string out;
    if (!CommandOutput(command, &out)) return "curl failed";
    ms.push_back(std::atof(out.c_str()) * 1000);
  }
  std::sort(ms.begin(), ms.end());
  return Fixed(ms[ms.size() / 2], 1) + " ms";
}

// The 500 (at most) node names of `team`'s cohort's flavor: what kube-scheduler sends.
std::vector<std::string> NamesFor(const Shape& s, const Layout& l, int team) {
  std::vector<std::string> names;
  const int flavor_cohorts = s.cohorts / kFlavorCount;
  for (int k = 0; k < std::max(1, flavor_cohorts) && names.size() < 500; ++k) {
    const int c = l.cohort_of(team) % kFlavorCount + k * kFlavorCount;
    for (int i = 0; i < l.nodes_per_cohort() && names.size() < 500; ++i)
      names.push_back(l.node(c, i));
  }
  return names;
}

common::Result<Figures> RunOnce(const std::string& binary, const Shape& s, bool with_pods,
                                bool kueue_metrics) {
  const Layout l(s);
  HarnessOptions options;
  options.extender_binary = binary;
  options.sample_cluster = false;
  options.config["policy.yaml"] = PolicyYaml(s, l);
  options.nodes = Nodes(s, l);
  for (int t = 0; t < s.teams; ++t) options.namespaces.push_back(TeamNs(t));
  options.wait_ready = false;
  if (kueue_metrics) options.extender_args.push_back("--kueue-metrics");
  double preload_s = 0;
  if (with_pods) {
    options.preload = [&](scheduler::kube::testing::FakeApiServer& api) {
      const Clock::time_point t0 = Clock::now();
      common::Status st = LoadPods(s, l, api);
      preload_s = Ms(Clock::now() - t0) / 1000;
      return st;
    };
  }
  Harness h(std::move(options));
  if (common::Status st = h.Start(); !st.ok()) return st.error();
  const Clock::time_point started = Clock::now();
  ExtenderProcess& e = h.extender();
  if (common::Status st = e.WaitReady(std::chrono::seconds(300)); !st.ok()) return st.error();
  const double sync_s = Ms(Clock::now() - started) / 1000;
  Figures f;
  f.emplace_back("pods loaded into the API server in", Fixed(preload_s, 1) + " s");
  f.emplace_back("sync (serving → ready)", Fixed(sync_s, 2) + " s");
  const int pid = e.pid();
  std::this_thread::sleep_for(std::chrono::seconds(2));
  const double rss = RssMib(pid);
  f.emplace_back("RSS after sync", Fixed(rss, 0) + " MiB");
  if (!with_pods) return f;

  // The first minute after sync: the controller decides once for every waiting pod (then sets
  // each aside until its flavors change); after it, a settled cluster.
  auto cpu_over = [&](int seconds) {
    const double cpu0 = CpuSeconds(pid);
    const Clock::time_point t0 = Clock::now();
    std::this_thread::sleep_for(std::chrono::seconds(seconds));
    return (CpuSeconds(pid) - cpu0) / (Ms(Clock::now() - t0) / 1000) * 100;
  };
  const double first = cpu_over(60);
  const double settled = cpu_over(s.idle_seconds);
  f.emplace_back("CPU in the first minute after sync (each waiting pod decided once)",
                 Fixed(first, 1) + "% of a core");
  f.emplace_back("idle CPU after it (controllers running, no webhook traffic)",
                 Fixed(settled, 1) + "% of a core");

  // Filters: a pod of the last cohort (room: admitted), one of cohort 0's team 2 (refused).
  const int admit_team = s.teams - 1;
  const int refuse_team = std::min(2, s.teams - 1);
  const std::string admit_pod =
      PodJson(TeamNs(admit_team), "bench-admit", "", l.flavor_of(admit_team), 1, "bench-admit-uid");
  const std::string refuse_pod = PodJson(TeamNs(refuse_team), "bench-refuse", "",
                                         l.flavor_of(refuse_team), 1, "bench-refuse-uid");
  extender::testing::ExtenderClient& client = e.client();
  const std::string admit_body = client.FilterNamesBody(admit_pod, NamesFor(s, l, admit_team));
  const std::string refuse_body = client.FilterNamesBody(refuse_pod, NamesFor(s, l, refuse_team));
  auto post = [&](const char* verb, const std::string& body, const char* expect) {
    common::Result<common::testing::HttpReply> r = client.PostRaw(verb, body);
    return r.ok() && r->status == 200 && r->body.find(expect) != std::string::npos;
  };
  // The extender's own view of its filter replies (first byte to reply written), to tell the
  // latency the extender adds from what the client, the kernel and the shared cores add.
  auto server_filters = [&](const char* le) {
    common::Result<metrics::testing::Exposition> m = e.ScrapeMetrics();
    if (!m.ok()) return -1.0;
    const char* metric = le == nullptr ? "taskgov_webhook_request_duration_seconds_count"
                                       : "taskgov_webhook_request_duration_seconds_bucket";
    return le == nullptr ? m->Value(metric, {{"verb", "filter"}}).value_or(-1)
                         : m->Value(metric, {{"verb", "filter"}, {"le", le}}).value_or(-1);
  };
  const std::vector<const char*> kLe = {"0.00025", "0.0005", "0.001", "0.0025", nullptr};
  std::vector<double> server_before;
  for (const char* le : kLe) server_before.push_back(server_filters(le));
  const double cpu1 = CpuSeconds(pid);
  const Latency admit =
      Measure(s.requests, [&] { return post("filter", admit_body, "NodeNames"); });
  const Latency refuse =
      Measure(s.requests, [&] { return post("filter", refuse_body, "FailedAndUnresolvable"); });
  std::vector<double> server_after;
  for (const char* le : kLe) server_after.push_back(server_filters(le));
  const Latency prio = Measure(s.requests, [&] { return post("prioritize", admit_body, "Score"); });
  const double cpu_per_request = (CpuSeconds(pid) - cpu1) / (3.0 * s.requests) * 1e6;
  f.emplace_back("filter, 500 NodeNames, admitted: p50 / p99 / max", Lat(admit));
  f.emplace_back("filter, 500 NodeNames, refused: p50 / p99 / max", Lat(refuse));
  {
    const double n = server_after.back() - server_before.back();
    std::string shares;
    for (size_t i = 0; i + 1 < kLe.size(); ++i) {
      shares += (i ? " / " : "") + Fixed(100 * (server_after[i] - server_before[i]) / n, 1) + "%";
    }
    f.emplace_back("filters, extender side: replied within 0.25 / 0.5 / 1 / 2.5 ms", shares);
  }
  f.emplace_back("prioritize, 500 NodeNames: p50 / p99 / max", Lat(prio));
  f.emplace_back(
      "filter, admitted, by wrk (its own process, 1 connection, 10 s): p50 / p99 / max",
      Wrk("http://127.0.0.1:" + std::to_string(e.webhook_port()) + "/filter", admit_body, 10));
  f.emplace_back("extender CPU per webhook request", Fixed(cpu_per_request, 0) + " µs");

  common::testing::HttpClient metrics("127.0.0.1", e.metrics_port(), std::chrono::seconds(30));
  std::vector<double> scrape_ms;
  size_t bytes = 0, series = 0;
  for (int i = 0; i < 5; ++i) {
    const Clock::time_point t0 = Clock::now();
    common::Result<common::testing::HttpReply> r = metrics.Get("/metrics");
    scrape_ms.push_back(Ms(Clock::now() - t0));
    if (!r.ok() || r->status != 200) return common::Error{"/metrics failed"};
    bytes = r->body.size();
    series = 0;
    for (size_t p = 0; p < r->body.size();) {
      const size_t nl = r->body.find('\n', p);
      if (r->body[p] != '#' && nl != p) ++series;
      if (nl == std::string::npos) break;
      p = nl + 1;
    }
  }
  std::sort(scrape_ms.begin(), scrape_ms.end());
  f.emplace_back("/metrics: median scrape, size, series", Fixed(scrape_ms[2], 1) + " ms, " +
                                                              Fixed(bytes / 1048576.0, 2) +
                                                              " MiB, " + std::to_string(series));
  f.emplace_back("/metrics by curl (its own process): median of 5",
                 Curl("http://127.0.0.1:" + std::to_string(e.metrics_port()) + "/metrics", 5));

  // Reclaim: team 0 of cohort 0 lends half its nominal, which team 1 borrows; it asks for 8.
  const size_t evictions_before = h.api().evictions().size();
  const Clock::time_point r0 = Clock::now();
  common::Result<std::string> created =
      h.api().Upsert("pods", PodJson(TeamNs(0), "bench-reclaim", "", l.flavor_of(0), 8));
  if (!created.ok()) return created.error();
  const bool evicted = h.api().WaitFor(
      [&] { return h.api().evictions().size() > evictions_before; }, std::chrono::seconds(60));
  f.emplace_back("reclaim: pod created → first eviction",
                 evicted ? Fixed(Ms(Clock::now() - r0), 0) + " ms" : "none in 60 s");
  f.emplace_back("RSS at the end", Fixed(RssMib(pid), 0) + " MiB");
  return f;
}

int Main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s <taskgov-extender> [--nodes=N] [--pods=N] ...\n", argv[0]);
    return 2;
  }
  const std::string binary = common::testing::RunfilePath(argv[1]);
  Shape s;
  const std::map<std::string, int*> flags = {
      {"--nodes=", &s.nodes},       {"--pods=", &s.pods},
      {"--teams=", &s.teams},       {"--cohorts=", &s.cohorts},
      {"--requests=", &s.requests}, {"--idle-seconds=", &s.idle_seconds},
      {"--kueue=", &s.kueue}};
  for (int i = 2; i < argc; ++i) {
    const std::string arg = argv[i];
    bool known = false;
    for (const auto& [prefix, value] : flags) {
      if (arg.rfind(prefix, 0) == 0) {
        *value = std::atoi(arg.c_str() + prefix.size());
        known = true;
      }
    }
    if (!known) {
      fprintf(stderr, "unknown argument %s\n", arg.c_str());
      return 2;
    }
  }
  if (s.cohorts < 1 || s.teams % s.cohorts != 0 || s.nodes % s.cohorts != 0 ||
      s.cohorts % kFlavorCount != 0 || s.pods < 0) {
    fprintf(stderr, "teams and nodes must be multiples of cohorts, cohorts of %d\n", kFlavorCount);
    return 2;
  }
  printf("scale benchmark: %d nodes, %d pods, %d teams in %d cohorts on %d flavors\n", s.nodes,
         s.pods, s.teams, s.cohorts, kFlavorCount);
  fflush(stdout);
  common::Result<Figures> base = RunOnce(binary, s, false, false);
  common::Result<Figures> plain = RunOnce(binary, s, true, false);
  common::Result<Figures> kueue = s.kueue != 0 ? RunOnce(binary, s, true, true) : Figures{};
  for (const common::Result<Figures>* r : {&base, &plain, &kueue}) {
    if (!r->ok()) {
      fprintf(stderr, "run failed: %s\n", r->error().message.c_str());
      return 1;
    }
  }
  auto rss = [](const Figures& f) { return std::stod(f[2].second); };
  printf("\n| measure | default metrics | --kueue-metrics |\n|---|---|---|\n");
  for (size_t i = 0; i < plain->size(); ++i) {
    printf("| %s | %s | %s |\n", (*plain)[i].first.c_str(), (*plain)[i].second.c_str(),
           i < kueue->size() ? (*kueue)[i].second.c_str() : "");
  }
  const double per_pod = (rss(*plain) - rss(*base)) * 1048576.0 / std::max(1, s.pods);
  printf("| RSS without pods (nodes, teams) | %s | |\n", (*base)[2].second.c_str());
  printf("| RSS per pod after sync (loaded − without pods) / pods | %s B | %s B |\n",
         Fixed(per_pod, 0).c_str(),
         kueue->empty()
             ? ""
             : Fixed((rss(*kueue) - rss(*base)) * 1048576.0 / std::max(1, s.pods), 0).c_str());
  return 0;
}

}  // namespace
}  // namespace taskgov::e2e

int main(int argc, char** argv) { return taskgov::e2e::Main(argc, argv); }
