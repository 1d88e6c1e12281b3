#include "e2e/harness.h"

#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "extender/http_test_util.h"
#include "scheduler/kube/actions.h"
#include "scheduler/model/kube_json.h"
#include "scheduler/model/quantity.h"

namespace taskgov::e2e {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;
using SteadyClock = std::chrono::steady_clock;
using Writer = rapidjson::Writer<rapidjson::StringBuffer>;

constexpr char kSchedulerName[] = "taskgov";
constexpr char kSyncNamespace[] = "e2e-sync";
constexpr char kSyncNode[] = "e2e-sync-node";
constexpr char kJobLabel[] = "e2e.taskgov.io/job";
constexpr int64_t kProbeRequest = 1'000'000;

void Key(Writer& w, const std::string& key) {
  w.Key(key.c_str(), static_cast<rapidjson::SizeType>(key.size()));
}
void Str(Writer& w, const std::string& key, const std::string& value) {
  Key(w, key);
  w.String(value.c_str(), static_cast<rapidjson::SizeType>(value.size()));
}
void StringMap(Writer& w, const std::string& key, const std::map<std::string, std::string>& m) {
  Key(w, key);
  w.StartObject();
  for (const auto& [k, v] : m) Str(w, k, v);
  w.EndObject();
}
void QuantityMap(Writer& w, const std::string& key, const Amounts& amounts) {
  Key(w, key);
  w.StartObject();
  for (const auto& [resource, amount] : amounts) Str(w, resource, QuantityText(resource, amount));
  w.EndObject();
}

const rapidjson::Value* Member(const rapidjson::Value& v, const char* name) {
  if (!v.IsObject()) return nullptr;
  auto it = v.FindMember(name);
  return it == v.MemberEnd() ? nullptr : &it->value;
}

std::string StringAt(const rapidjson::Value& v, std::initializer_list<const char*> path) {
  const rapidjson::Value* cur = &v;
  for (const char* p : path) {
    cur = Member(*cur, p);
    if (cur == nullptr) return "";
  }
  return cur->IsString() ? std::string(cur->GetString(), cur->GetStringLength()) : "";
}

std::string PodJson(const PodSpec& spec, const std::string& name, const std::string& job,
                    const std::string& created, const std::string& scheduler_name) {
  rapidjson::StringBuffer buffer;
  Writer w(buffer);
  w.StartObject();
  Str(w, "apiVersion", "v1");
  Str(w, "kind", "Pod");
  Key(w, "metadata");
  w.StartObject();
  Str(w, "name", name);
  Str(w, "namespace", spec.ns);
  Str(w, "creationTimestamp", created);
  std::map<std::string, std::string> labels = spec.labels;
  if (!job.empty()) labels[kJobLabel] = job;
  if (!spec.priority_class.empty()) labels[kPriorityClassLabel] = spec.priority_class;
  StringMap(w, "labels", labels);
  if (!spec.annotations.empty()) StringMap(w, "annotations", spec.annotations);
  if (spec.owner) {
    Key(w, "ownerReferences");
    w.StartArray();
    w.StartObject();
    Str(w, "apiVersion", spec.owner->api_version);
    Str(w, "kind", spec.owner->kind);
    Str(w, "name", spec.owner->name);
    Str(w, "uid", spec.owner->uid);
    Key(w, "controller");
    w.Bool(true);
    w.EndObject();
    w.EndArray();
  }
  w.EndObject();
  Key(w, "spec");
  w.StartObject();
  Str(w, "schedulerName", scheduler_name);
  if (spec.priority) {
    Key(w, "priority");
    w.Int(*spec.priority);
  }
  if (!spec.node_selector.empty()) StringMap(w, "nodeSelector", spec.node_selector);
  Key(w, "containers");
  w.StartArray();
  w.StartObject();
  Str(w, "name", "main");
  Str(w, "image", "e2e-workload");
  Key(w, "resources");
  w.StartObject();
  QuantityMap(w, "requests", spec.requests);
  QuantityMap(w, "limits", spec.requests);
  w.EndObject();
  w.EndObject();
  w.EndArray();
  w.EndObject();
  Key(w, "status");
  w.StartObject();
  Str(w, "phase", "Pending");
  w.EndObject();
  w.EndObject();
  return buffer.GetString();
}

std::string NodeJson(const NodeSpec& node) {
  rapidjson::StringBuffer buffer;
  Writer w(buffer);
  w.StartObject();
  Str(w, "apiVersion", "v1");
  Str(w, "kind", "Node");
  Key(w, "metadata");
  w.StartObject();
  Str(w, "name", node.name);
  std::map<std::string, std::string> labels = node.labels;
  labels["kubernetes.io/hostname"] = node.name;
  labels[kInstanceTypeLabel] = node.instance_type;
  StringMap(w, "labels", labels);
  w.EndObject();
  Key(w, "spec");
  w.StartObject();
  w.EndObject();
  Key(w, "status");
  w.StartObject();
  QuantityMap(w, "capacity", node.allocatable);
  QuantityMap(w, "allocatable", node.allocatable);
  Key(w, "conditions");
  w.StartArray();
  w.StartObject();
  Str(w, "type", "Ready");
  Str(w, "status", "True");
  w.EndObject();
  w.EndArray();
  w.EndObject();
  w.EndObject();
  return buffer.GetString();
}

bool Fits(const Amounts& free, const Amounts& request) {
  for (const auto& [resource, amount] : request) {
    if (amount <= 0) continue;
    auto it = free.find(resource);
    if (it == free.end() || it->second < amount) return false;
  }
  return true;
}

std::string WorkDir() {
  const char* base = getenv("TEST_TMPDIR");
  std::string pattern =
      (base != nullptr && *base != '\0' ? std::string(base) : fs::temp_directory_path().string()) +
      "/taskgov-e2e-XXXXXX";
  std::vector<char> buf(pattern.begin(), pattern.end());
  buf.push_back('\0');
  if (mkdtemp(buf.data()) == nullptr) return "";
  return buf.data();
}

}  // namespace

std::string Rfc3339Millis(int64_t unix_ms) {
  std::time_t secs = static_cast<std::time_t>(unix_ms / 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[40];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
  char out[48];
  snprintf(out, sizeof(out), "%s.%03dZ", buf, static_cast<int>(unix_ms % 1000));
  return out;
}

std::string QuantityText(const std::string& resource, int64_t amount) {
  if (resource == "cpu") return std::to_string(amount) + "m";
  return std::to_string(amount);
}

// ================================================================================================
// ConfigDir

common::Status ConfigDir::Write(const std::map<std::string, std::string>& files) {
  std::error_code ec;
  fs::create_directories(path_, ec);
  if (ec) return common::Error{"config dir " + path_ + ": " + ec.message()};
  // The kubelet's AtomicWriter: a fresh timestamped directory, a ..data_tmp symlink to it
  // renamed over ..data, then the per-file symlinks, then the old directory goes.
  const std::string ts = "..2026_01_01_00_00_00." + std::to_string(++generation_);
  fs::create_directory(path_ + "/" + ts, ec);
  if (ec) return common::Error{"config dir " + path_ + "/" + ts + ": " + ec.message()};
  for (const auto& [name, content] : files) {
    std::ofstream out(path_ + "/" + ts + "/" + name, std::ios::trunc);
    out << content;
    if (!out) return common::Error{"cannot write " + path_ + "/" + ts + "/" + name};
  }
  const std::string tmp = path_ + "/..data_tmp";
  ::unlink(tmp.c_str());
  if (::symlink(ts.c_str(), tmp.c_str()) != 0) return common::Error{"symlink " + tmp + " failed"};
  if (::rename(tmp.c_str(), (path_ + "/..data").c_str()) != 0) {
    return common::Error{"rename ..data_tmp over ..data failed in " + path_};
  }
  for (const auto& [name, content] : files) {
    if (names_.count(name) > 0) continue;
    const std::string link = path_ + "/" + name;
    if (::symlink(("..data/" + name).c_str(), link.c_str()) != 0) {
      return common::Error{"symlink " + link + " failed"};
    }
  }
  for (const std::string& name : names_) {
    if (files.count(name) == 0) ::unlink((path_ + "/" + name).c_str());
  }
  names_.clear();
  for (const auto& [name, content] : files) names_.insert(name);
  if (!current_.empty()) fs::remove_all(path_ + "/" + current_, ec);
  current_ = ts;
  return common::Status::Ok();
}

// ================================================================================================
// ExtenderProcess

ExtenderProcess::ExtenderProcess(ExtenderProcessOptions options) : options_(std::move(options)) {}

ExtenderProcess::~ExtenderProcess() {
  if (running()) (void)Stop(SIGKILL);
  if (drain_.joinable()) drain_.join();
}

common::Status ExtenderProcess::Start(milliseconds timeout) {
  if (running()) return common::Error{"extender " + options_.identity + " is already running"};
  if (drain_.joinable()) drain_.join();
  ++runs_;
  const std::string port_file = options_.work_dir + "/ports-" + options_.identity + ".json";
  ::unlink(port_file.c_str());
  std::vector<std::string> args = {"--listen=127.0.0.1:0",
                                   "--metrics-listen=127.0.0.1:0",
                                   "--health-listen=127.0.0.1:0",
                                   "--console-listen=127.0.0.1:0",
                                   "--config-dir=" + options_.config_dir,
                                   "--kubeconfig=" + options_.kubeconfig,
                                   "--port-file=" + port_file,
                                   "--identity=" + options_.identity,
                                   "--log-level=" + options_.log_level};
  if (options_.console_tls) {
    args.push_back("--console-tls-cert-file=" + extender::testing::TlsTestFile("server.pem"));
    args.push_back("--console-tls-key-file=" + extender::testing::TlsTestFile("server.key"));
  }
  for (const std::string& a : options_.extra_args) args.push_back(a);
  auto proc = std::make_unique<common::testing::Subprocess>();
  if (common::Status s = proc->Start(options_.binary, args); !s.ok()) return s;
  size_t from;
  {
    std::lock_guard<std::mutex> lock(mu_);
    proc_ = std::move(proc);
    copied_ = 0;
    exited_ = false;
    exit_code_.reset();
    from = lines_.size();
    lines_.push_back("---- " + options_.identity + " run " + std::to_string(runs_) + " ----");
  }
  drain_ = std::thread([this] { Drain(); });
  common::Result<std::string> serving = WaitForLog("\"msg\":\"serving\"", from, timeout);
  if (!serving.ok()) return common::Error{"extender " + options_.identity + " did not start"};
  std::ifstream in(port_file);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::smatch m;
  if (!std::regex_search(text, m, std::regex(R"re("webhook":(\d+),"metrics":(\d+))re"))) {
    return common::Error{"extender " + options_.identity + ": unreadable port file '" + text + "'"};
  }
  webhook_port_ = static_cast<uint16_t>(std::stoi(m[1]));
  metrics_port_ = static_cast<uint16_t>(std::stoi(m[2]));
  if (std::regex_search(text, m, std::regex(R"re("health":(\d+))re"))) {
    health_port_ = static_cast<uint16_t>(std::stoi(m[1]));
  }
  if (std::regex_search(text, m, std::regex(R"re("console":(\d+))re"))) {
    console_port_ = static_cast<uint16_t>(std::stoi(m[1]));
    if (options_.console_tls) {
      common::testing::HttpClientTls tls;  // not verified: a test certificate
      tls.alpn = {"http/1.1"};
      console_ = std::make_unique<common::testing::HttpClient>("127.0.0.1", console_port_, tls,
                                                               std::chrono::seconds(5));
    } else {
      console_ = std::make_unique<common::testing::HttpClient>("127.0.0.1", console_port_,
                                                               std::chrono::seconds(5));
    }
  }
  extender::testing::ExtenderClientOptions client_options;
  client_options.port = webhook_port_;
  client_ = std::make_unique<extender::testing::ExtenderClient>(client_options);
  health_ = std::make_unique<common::testing::HttpClient>("127.0.0.1", metrics_port_,
                                                          std::chrono::seconds(2));
  probe_ = std::make_unique<common::testing::HttpClient>(
      "127.0.0.1", health_port_ != 0 ? health_port_ : metrics_port_, std::chrono::seconds(2));
  return common::Status::Ok();
}

std::string ExtenderProcess::console_url() const {
  return (options_.console_tls ? "https://127.0.0.1:" : "http://127.0.0.1:") +
         std::to_string(console_port_);
}

void ExtenderProcess::Drain() {
  // Only this thread reads the child's stderr and reaps it; the lines are copied out under mu_.
  common::testing::Subprocess* proc;
  {
    std::lock_guard<std::mutex> lock(mu_);
    proc = proc_.get();
  }
  while (true) {
    proc->DrainStderr(milliseconds(20));
    std::unique_lock<std::mutex> lock(mu_);
    for (; copied_ < proc->stderr_lines().size(); ++copied_) {
      lines_.push_back(proc->stderr_lines()[copied_]);
    }
    std::optional<int> code = proc->Wait(milliseconds(0));
    if (code) {
      lock.unlock();
      proc->DrainStderr(milliseconds(500));
      lock.lock();
      for (; copied_ < proc->stderr_lines().size(); ++copied_) {
        lines_.push_back(proc->stderr_lines()[copied_]);
      }
      exited_ = true;
      exit_code_ = code;
      lock.unlock();
      cv_.notify_all();
      return;
    }
    lock.unlock();
    cv_.notify_all();
  }
}

common::Result<int> ExtenderProcess::Stop(int signal_number, milliseconds timeout) {
  {
    std::unique_lock<std::mutex> lock(mu_);
    if (!proc_) return common::Error{"extender " + options_.identity + " was never started"};
    if (!exited_) ::kill(proc_->pid(), signal_number);
    if (!cv_.wait_for(lock, timeout, [this] { return exited_; })) {
      ::kill(proc_->pid(), SIGKILL);
      cv_.wait(lock, [this] { return exited_; });
    }
  }
  if (drain_.joinable()) drain_.join();
  // The clients stay (calls fail: nothing listens) until the next Start replaces them.
  std::lock_guard<std::mutex> lock(mu_);
  return exit_code_.value_or(-1);
}

int ExtenderProcess::pid() const {
  std::lock_guard<std::mutex> lock(mu_);
  return proc_ ? static_cast<int>(proc_->pid()) : -1;
}

bool ExtenderProcess::running() const {
  std::lock_guard<std::mutex> lock(mu_);
  return proc_ != nullptr && !exited_;
}

common::Result<common::testing::HttpReply> ExtenderProcess::Readyz() {
  if (!probe_) return common::Error{"extender " + options_.identity + " is not running"};
  return probe_->Get("/readyz");
}

common::Result<common::testing::HttpReply> ExtenderProcess::Admin(const std::string& target,
                                                                  const std::string& token) {
  if (!console_) return common::Error{"extender " + options_.identity + ": no console listener"};
  common::testing::HttpClient::Headers headers;
  if (!token.empty()) headers.emplace_back("Authorization", "Bearer " + token);
  return console_->Request("GET", target, "", "application/json", headers);
}

common::Result<metrics::testing::Exposition> ExtenderProcess::ScrapeMetrics() {
  if (!health_) return common::Error{"extender " + options_.identity + " is not running"};
  common::Result<common::testing::HttpReply> reply = health_->Get("/metrics");
  if (!reply.ok()) return reply.error();
  if (reply->status != 200) {
    return common::Error{"extender " + options_.identity + ": /metrics answered " +
                         std::to_string(reply->status)};
  }
  metrics::testing::Exposition parsed = metrics::testing::ParseExposition(reply->body);
  if (!parsed.errors.empty()) {
    return common::Error{"extender " + options_.identity +
                         ": unparsable /metrics: " + parsed.errors[0]};
  }
  return parsed;
}

common::Status ExtenderProcess::WaitReady(milliseconds timeout) {
  return WaitReadyzSays("ok", timeout);
}

common::Status ExtenderProcess::WaitReadyzSays(const std::string& text, milliseconds timeout) {
  const auto deadline = SteadyClock::now() + timeout;
  std::string last = "no answer";
  while (true) {
    if (!running()) return common::Error{"extender " + options_.identity + " exited"};
    common::Result<common::testing::HttpReply> r = Readyz();
    if (r.ok()) {
      if (r->body.find(text) != std::string::npos) return common::Status::Ok();
      last = std::to_string(r->status) + " " + r->body;
    } else {
      last = r.error().message;
    }
    if (SteadyClock::now() >= deadline) {
      return common::Error{"extender " + options_.identity + ": /readyz never said '" + text +
                           "'; last: " + last};
    }
    std::this_thread::sleep_for(milliseconds(10));  // polling a condition, bounded above
  }
}

extender::testing::ExtenderClient& ExtenderProcess::client() { return *client_; }

size_t ExtenderProcess::log_line_count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return lines_.size();
}

std::vector<std::string> ExtenderProcess::log_lines() const {
  std::lock_guard<std::mutex> lock(mu_);
  return lines_;
}

common::Result<std::string> ExtenderProcess::WaitForLog(const std::string& needle, size_t from,
                                                        milliseconds timeout) {
  return WaitForLogMatching(
      [&](const std::string& line) { return line.find(needle) != std::string::npos; }, from,
      timeout, "'" + needle + "'");
}

common::Result<std::string> ExtenderProcess::WaitForLogMatching(
    const std::function<bool(const std::string&)>& match, size_t from, milliseconds timeout,
    const std::string& what) {
  std::unique_lock<std::mutex> lock(mu_);
  size_t checked = from;
  std::optional<std::string> found;
  auto seen = [&] {
    for (; checked < lines_.size(); ++checked) {
      if (match(lines_[checked])) {
        found = lines_[checked];
        return true;
      }
    }
    return exited_;
  };
  cv_.wait_for(lock, timeout, seen);
  if (found) return *found;
  return common::Error{"extender " + options_.identity + ": no log line matching " + what +
                       (exited_ ? " (it exited)" : "")};
}

// ================================================================================================
// StepReport

std::vector<std::string> StepReport::Bound() const {
  std::vector<std::string> out;
  for (const Attempt& a : attempts) {
    if (a.outcome == Attempt::Outcome::kBound) out.push_back(a.pod);
  }
  return out;
}

std::string StepReport::LastRefusal() const {
  for (auto it = attempts.rbegin(); it != attempts.rend(); ++it) {
    if (it->outcome == Attempt::Outcome::kRefused) return it->reason;
  }
  return "";
}

const Attempt* StepReport::Find(const std::string& pod) const {
  for (const Attempt& a : attempts) {
    if (a.pod == pod) return &a;
  }
  return nullptr;
}

bool StepReport::progress() const {
  return !started.empty() || !finished.empty() || !evicted.empty() || !deleted.empty() ||
         !recreated.empty() || !Bound().empty();
}

// ================================================================================================
// Harness

Harness::Harness(HarnessOptions options)
    : options_(std::move(options)), step_seconds_(options_.step_seconds) {}

Harness::~Harness() { Stop(); }

common::Status Harness::Start() {
  work_dir_ = WorkDir();
  if (work_dir_.empty()) return common::Error{"cannot create a work directory"};
  scheduler::kube::testing::FakeApiServerOptions api_options;
  api_options.eviction_mode = scheduler::kube::testing::EvictionMode::kManual;
  api_ = std::make_unique<scheduler::kube::testing::FakeApiServer>(api_options);
  if (common::Status s = api_->Start(); !s.ok()) return s;
  api_client_ = std::make_unique<common::testing::HttpClient>("127.0.0.1", api_->port(),
                                                              std::chrono::seconds(2));
  if (common::Status s = LoadCluster(); !s.ok()) return s;
  if (options_.preload) {
    if (common::Status s = options_.preload(*api_); !s.ok()) return s;
  }
  ReadNodesFromApi();
  config_dir_ = std::make_unique<ConfigDir>(work_dir_ + "/config");
  if (common::Status s = config_dir_->Write(options_.config); !s.ok()) return s;
  const std::string kubeconfig = work_dir_ + "/kubeconfig";
  if (common::Status s = WriteKubeconfig(kubeconfig); !s.ok()) return s;
  for (const scheduler::kube::testing::FaultRule& fault : options_.api_faults)
    api_->AddFault(fault);
  if (common::Status s = StartExtenders(kubeconfig); !s.ok()) return s;
  serving_ = 0;
  return common::Status::Ok();
}

common::Status Harness::LoadCluster() {
  if (options_.sample_cluster) api_->LoadSampleCluster();
  for (const NodeSpec& node : options_.nodes) {
    if (common::Result<std::string> r = api_->Upsert("nodes", NodeJson(node)); !r.ok())
      return r.error();
  }
  for (const std::string& ns : options_.namespaces) {
    const std::string json = "{\"metadata\":{\"name\":\"" + ns +
                             "\",\"labels\":{\"kubernetes.io/metadata.name\":\"" + ns + "\"}}}";
    if (common::Result<std::string> r = api_->Upsert("namespaces", json); !r.ok()) return r.error();
  }
  return common::Status::Ok();
}

void Harness::ReadNodesFromApi() {
  // The nodes as the API holds them: what the scheduler loop places pods on.
  for (const std::string& json : api_->List("nodes")) {
    rapidjson::Document doc;
    doc.Parse(json.c_str());
    NodeSpec node;
    node.name = StringAt(doc, {"metadata", "name"});
    if (const rapidjson::Value* labels = Member(doc, "metadata"); labels != nullptr) {
      if (const rapidjson::Value* l = Member(*labels, "labels"); l != nullptr && l->IsObject()) {
        for (auto it = l->MemberBegin(); it != l->MemberEnd(); ++it) {
          if (it->value.IsString()) node.labels[it->name.GetString()] = it->value.GetString();
        }
      }
    }
    node.instance_type = node.labels[kInstanceTypeLabel];
    const rapidjson::Value* status = Member(doc, "status");
    const rapidjson::Value* alloc = status == nullptr ? nullptr : Member(*status, "allocatable");
    if (alloc != nullptr && alloc->IsObject()) {
      for (auto it = alloc->MemberBegin(); it != alloc->MemberEnd(); ++it) {
        if (!it->value.IsString()) continue;
        common::Result<int64_t> q =
            scheduler::model::ParseResourceQuantity(it->name.GetString(), it->value.GetString());
        if (q.ok()) node.allocatable[it->name.GetString()] = *q;
      }
    }
    node_by_name_[node.name] = node;
    nodes_.push_back(std::move(node));
  }
  std::sort(nodes_.begin(), nodes_.end(),
            [](const NodeSpec& a, const NodeSpec& b) { return a.name < b.name; });
}

common::Status Harness::WriteKubeconfig(const std::string& path) const {
  std::ofstream out(path);
  out << scheduler::kube::testing::KubeconfigFor(api_->url());
  if (!out) return common::Error{"cannot write " + path};
  return common::Status::Ok();
}

common::Status Harness::StartExtenders(const std::string& kubeconfig) {
  for (size_t i = 0; i < options_.extenders; ++i) {
    ExtenderProcessOptions o;
    o.binary = options_.extender_binary;
    o.config_dir = config_dir_->path();
    o.kubeconfig = kubeconfig;
    o.work_dir = work_dir_;
    o.identity = "e2e-" + std::to_string(i);
    o.log_level = options_.log_level;
    o.extra_args = options_.extender_args;
    o.console_tls = options_.console_tls;
    extenders_.push_back(std::make_unique<ExtenderProcess>(o));
    if (common::Status s = extenders_.back()->Start(); !s.ok()) return s;
    if (i == 0 && options_.wait_ready) {
      if (common::Status s = extenders_.back()->WaitReady(std::chrono::seconds(20)); !s.ok())
        return s;
    }
  }
  return common::Status::Ok();
}

void Harness::Stop() {
  for (auto& e : extenders_) {
    if (e->running()) (void)e->Stop(SIGTERM);
  }
  if (api_) api_->Stop();
  if (!work_dir_.empty()) {
    std::error_code ec;
    fs::remove_all(work_dir_, ec);
    work_dir_.clear();
  }
}

common::Status Harness::Reconfigure(const std::map<std::string, std::string>& files,
                                    milliseconds timeout) {
  std::vector<size_t> from;
  for (auto& e : extenders_) from.push_back(e->log_line_count());
  if (common::Status s = config_dir_->Write(files); !s.ok()) return s;
  auto outcome = [](const std::string& line) {
    return line.find("\"msg\":\"policy loaded\"") != std::string::npos ||
           line.find("invalid configuration") != std::string::npos;
  };
  for (size_t i = 0; i < extenders_.size(); ++i) {
    if (!extenders_[i]->running()) continue;
    common::Result<std::string> line =
        extenders_[i]->WaitForLogMatching(outcome, from[i], timeout, "a reload outcome");
    if (!line.ok()) return line.error();
    if (line->find("invalid configuration") != std::string::npos) {
      return common::Error{"extender " + extenders_[i]->identity() +
                           " refused the new policy: " + *line};
    }
  }
  return common::Status::Ok();
}

std::string Harness::NextTimestamp() {
  const int64_t now =
      std::chrono::duration_cast<milliseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count();
  last_timestamp_ms_ = std::max(now, last_timestamp_ms_ + 1);
  return Rfc3339Millis(last_timestamp_ms_);
}

common::Status Harness::CreatePod(const PodSpec& spec, const std::string& name) {
  common::Result<std::string> stored =
      api_->Upsert("pods", PodJson(spec, name, spec.name, NextTimestamp(), kSchedulerName));
  if (!stored.ok()) return stored.error();
  job_of_pod_[name] = spec.name;
  return common::Status::Ok();
}

common::Status Harness::Submit(const PodSpec& spec) {
  if (spec.name.empty() || spec.ns.empty())
    return common::Error{"a pod needs a namespace and a name"};
  if (spec.name.rfind("e2e-", 0) == 0)
    return common::Error{"pod names starting e2e- are the harness's"};
  if (jobs_.count(spec.name) > 0 || job_of_pod_.count(spec.name) > 0) {
    return common::Error{"pod " + spec.name + " already exists"};
  }
  Job job;
  job.spec = spec;
  job.current = spec.name;
  jobs_[spec.name] = job;
  return CreatePod(spec, spec.name);
}

common::Status Harness::Finish(const std::string& job_name) {
  auto it = jobs_.find(job_name);
  if (it == jobs_.end()) return common::Error{"no job " + job_name};
  if (!api_->SetPodPhase(it->second.spec.ns, it->second.current, "Succeeded")) {
    return common::Error{"pod " + it->second.current + " is gone"};
  }
  it->second.done = true;
  return common::Status::Ok();
}

PodView Harness::Parse(const std::string& json) const {
  PodView p;
  p.json = json;
  rapidjson::Document doc;
  doc.Parse(json.c_str());
  if (doc.HasParseError() || !doc.IsObject()) return p;
  p.ns = StringAt(doc, {"metadata", "namespace"});
  p.name = StringAt(doc, {"metadata", "name"});
  p.uid = StringAt(doc, {"metadata", "uid"});
  p.key = p.ns + "/" + p.name;
  p.node = StringAt(doc, {"spec", "nodeName"});
  p.phase = StringAt(doc, {"status", "phase"});
  p.terminating = !StringAt(doc, {"metadata", "deletionTimestamp"}).empty();
  if (const rapidjson::Value* meta = Member(doc, "metadata"); meta != nullptr) {
    if (const rapidjson::Value* grace = Member(*meta, "deletionGracePeriodSeconds");
        grace != nullptr && grace->IsInt64()) {
      p.grace_seconds = grace->GetInt64();
    }
  }
  p.priority_class = StringAt(doc, {"metadata", "labels", kPriorityClassLabel});
  if (const rapidjson::Value* spec = Member(doc, "spec"); spec != nullptr) {
    if (const rapidjson::Value* prio = Member(*spec, "priority");
        prio != nullptr && prio->IsInt()) {
      p.priority = prio->GetInt();
    }
  }
  common::Result<int64_t> created =
      scheduler::model::ParseTimestamp(StringAt(doc, {"metadata", "creationTimestamp"}));
  if (created.ok()) p.created_ms = *created;
  p.scheduler_name = StringAt(doc, {"spec", "schedulerName"});
  if (auto job = job_of_pod_.find(p.name); job != job_of_pod_.end()) {
    p.job = job->second;
    p.request = jobs_.at(p.job).spec.requests;
    p.node_selector = jobs_.at(p.job).spec.node_selector;
  } else if (options_.play_every_pod) {
    // Another's pod: what the product reads of it.
    if (common::Result<scheduler::model::Pod> pod = scheduler::model::DecodePod(doc); pod.ok()) {
      for (const scheduler::model::ResourceAmount& r : scheduler::model::EffectiveRequest(*pod)) {
        p.request[r.name] = r.amount;
      }
      p.node_selector =
          std::map<std::string, std::string>(pod->node_selector.begin(), pod->node_selector.end());
    }
  }
  if (auto node = node_by_name_.find(p.node); node != node_by_name_.end()) {
    p.instance_type = node->second.instance_type;
  }
  return p;
}

std::vector<PodView> Harness::Pods() const {
  std::vector<PodView> out;
  for (const std::string& json : api_->List("pods")) out.push_back(Parse(json));
  return out;
}

std::optional<PodView> Harness::PodOfJob(const std::string& job) const {
  auto it = jobs_.find(job);
  if (it == jobs_.end()) return std::nullopt;
  std::optional<std::string> json = api_->Get("pods", it->second.spec.ns, it->second.current);
  if (!json) return std::nullopt;
  return Parse(*json);
}

size_t Harness::CompletedJobs() const {
  size_t n = 0;
  for (const auto& [name, job] : jobs_) n += job.done ? 1 : 0;
  return n;
}

size_t Harness::CountPods(const std::function<bool(const PodView&)>& pred) const {
  size_t n = 0;
  for (const PodView& p : Pods()) n += !p.job.empty() && pred(p) ? 1 : 0;
  return n;
}

int64_t Harness::Usage(const std::string& ns, const std::string& instance_type,
                       const std::string& resource) const {
  int64_t sum = 0;
  for (const PodView& p : Pods()) {
    if (p.job.empty() || !p.active() || p.ns != ns || p.instance_type != instance_type) continue;
    auto it = p.request.find(resource);
    if (it != p.request.end()) sum += it->second;
  }
  return sum;
}

size_t Harness::BindingCount() const {
  size_t n = 0;
  for (const std::string& body : api_->bindings()) {
    n += body.find("\"name\":\"e2e-") == std::string::npos ? 1 : 0;
  }
  return n;
}

std::string Harness::Logs() const {
  std::string out;
  for (const auto& e : extenders_) {
    for (const std::string& line : e->log_lines()) out += line + "\n";
  }
  return out;
}

// ---- steps ----

bool Harness::GraceOver(const PodView& p, StepReport* report) {
  auto [since, first] = terminating_since_.try_emplace(p.uid, step_);
  auto [at, unused] = terminating_at_.try_emplace(p.uid, simulated_seconds_);
  if (first) report->evicted.push_back(p.key);
  // The kubelet's default terminationGracePeriodSeconds when the deletion carried none.
  const int64_t grace = p.grace_seconds >= 0 ? p.grace_seconds : 30;
  return simulated_seconds_ - at->second >= grace;
}

void Harness::Kubelet(const std::vector<PodView>& pods, StepReport* report) {
  for (const PodView& p : pods) {
    if (p.job.empty()) {
      if (options_.play_every_pod) KubeletOfOther(p, report);
      continue;
    }
    Job& job = jobs_.at(p.job);
    if (p.ended()) job.done = job.done || p.phase == "Succeeded";
    if (p.terminating) {
      const bool grace_over = GraceOver(p, report);
      const int steps = step_ - terminating_since_.at(p.uid);
      const bool checkpointed = job.spec.checkpoint_steps && steps >= *job.spec.checkpoint_steps;
      if (!grace_over && !checkpointed) {
        report->terminating.push_back(p.key);
        continue;
      }
      // Checkpointed and exited (or killed when its grace period ran out): the pod object goes.
      if (!api_->Delete("pods", p.ns, p.name)) continue;
      report->deleted.push_back(p.key);
      terminating_since_.erase(p.uid);
      terminating_at_.erase(p.uid);
      if (p.ended() || !job.spec.recreate_when_evicted || job.current != p.name) continue;
      // The job controller replaces it.
      const std::string name = p.job + "-r" + std::to_string(++job.generation);
      if (CreatePod(job.spec, name).ok()) {
        job.current = name;
        job.started_step = -1;
        report->recreated.push_back(p.key + " -> " + p.ns + "/" + name);
      }
      continue;
    }
    if (!p.node.empty() && p.phase == "Pending") {
      if (api_->StartPod(p.ns, p.name, NextTimestamp())) {
        job.started_step = step_;
        report->started.push_back(p.key);
      }
    } else if (p.phase == "Running" && finishing_ && job.spec.run_steps > 0 &&
               job.started_step >= 0 && step_ - job.started_step >= job.spec.run_steps) {
      if (api_->SetPodPhase(p.ns, p.name, "Succeeded")) {
        job.done = true;
        report->finished.push_back(p.key);
      }
    }
  }
}

void Harness::KubeletOfOther(const PodView& p, StepReport* report) {
  if (node_by_name_.count(p.node) == 0) return;  // unbound, or the barrier's made-up node
  if (p.terminating) {
    if (!GraceOver(p, report)) {
      report->terminating.push_back(p.key);
      return;
    }
    // It exits when its grace period is over; its controller (if any) replaces it.
    if (api_->Delete("pods", p.ns, p.name)) {
      report->deleted.push_back(p.key);
      terminating_since_.erase(p.uid);
      terminating_at_.erase(p.uid);
    }
    return;
  }
  if (p.phase == "Pending" && api_->StartPod(p.ns, p.name, NextTimestamp())) {
    report->started.push_back(p.key);
  }
}

void Harness::SchedulePass(StepReport* report) {
  std::map<std::string, Amounts> free;
  for (const NodeSpec& n : nodes_) free[n.name] = n.allocatable;
  const std::vector<PodView> pods = Pods();
  std::vector<const PodView*> pending;
  for (const PodView& p : pods) {
    if (p.active()) {
      auto it = free.find(p.node);
      if (it == free.end()) continue;
      for (const auto& [resource, amount] : p.request) it->second[resource] -= amount;
    } else if (p.pending() &&
               (!p.job.empty() || (options_.play_every_pod && p.scheduler_name == "taskgov"))) {
      pending.push_back(&p);
    }
  }
  // kube-scheduler's active queue: priority, then the time the pod was queued.
  std::sort(pending.begin(), pending.end(), [](const PodView* a, const PodView* b) {
    if (a->priority != b->priority) return a->priority > b->priority;
    if (a->created_ms != b->created_ms) return a->created_ms < b->created_ms;
    return a->key < b->key;
  });
  for (const PodView* p : pending) {
    Attempt attempt = SchedulePod(*p, &free);
    report->attempts.push_back(std::move(attempt));
  }
}

std::vector<std::string> Harness::Candidates(const PodView& pod,
                                             const std::map<std::string, Amounts>& free) const {
  std::vector<std::string> candidates;
  for (const NodeSpec& n : nodes_) {
    bool selected = true;
    for (const auto& [k, v] : pod.node_selector) {
      auto label = n.labels.find(k);
      selected = selected && label != n.labels.end() && label->second == v;
    }
    if (selected && Fits(free.at(n.name), pod.request)) candidates.push_back(n.name);
  }
  return candidates;
}

namespace {

// Every distinct refusal reason of the candidates, unresolvable first, " | "-joined.
std::string RefusalReasons(const extender::testing::FilterReply& filtered,
                           const std::vector<std::string>& candidates) {
  std::vector<std::string> reasons;
  auto add = [&](const std::map<std::string, std::string>& by_node) {
    for (const std::string& node : candidates) {
      auto it = by_node.find(node);
      if (it != by_node.end() &&
          std::find(reasons.begin(), reasons.end(), it->second) == reasons.end()) {
        reasons.push_back(it->second);
      }
    }
  };
  add(filtered.failed_and_unresolvable_nodes);
  add(filtered.failed_nodes);
  std::string joined;
  for (const std::string& r : reasons) joined += (joined.empty() ? "" : " | ") + r;
  return joined;
}

}  // namespace

Attempt Harness::SchedulePod(const PodView& p, std::map<std::string, Amounts>* free) {
  Attempt attempt;
  attempt.pod = p.key;
  auto done = [&](Attempt::Outcome outcome, std::string reason) {
    attempt.outcome = outcome;
    attempt.reason = std::move(reason);
    return attempt;
  };
  const std::vector<std::string> candidates = Candidates(p, *free);
  if (candidates.empty()) {
    return done(
        Attempt::Outcome::kUnschedulable,
        "0/" + std::to_string(nodes_.size()) + " nodes are available: insufficient resources");
  }
  ExtenderProcess& extender = *extenders_.at(serving_);
  if (!extender.running()) {
    return done(Attempt::Outcome::kError, "extender " + extender.identity() + " is down");
  }
  common::Result<extender::testing::FilterReply> filtered =
      extender.client().FilterNames(p.json, candidates);
  if (!filtered.ok()) return done(Attempt::Outcome::kError, "filter: " + filtered.error().message);
  if (!filtered->error.empty()) return done(Attempt::Outcome::kError, "filter: " + filtered->error);
  if (filtered->feasible.empty()) {
    return done(Attempt::Outcome::kRefused, RefusalReasons(*filtered, candidates));
  }
  attempt.node = BestNode(extender, p, filtered->feasible);
  if (before_bind_) before_bind_(p, attempt.node);
  std::string bind_error;
  if (options_.extender_binds) {
    common::Result<std::string> bound = extender.client().Bind(p.name, p.ns, p.uid, attempt.node);
    bind_error = !bound.ok() ? bound.error().message : *bound;
  } else {
    bind_error = BindThroughApi(p, attempt.node);
  }
  if (!bind_error.empty()) return done(Attempt::Outcome::kError, "bind: " + bind_error);
  for (const auto& [resource, amount] : p.request) (*free)[attempt.node][resource] -= amount;
  return done(Attempt::Outcome::kBound, "");
}

std::string Harness::BestNode(ExtenderProcess& extender, const PodView& pod,
                              std::vector<std::string> feasible) {
  // The highest prioritize score, the first by name among equals.
  std::map<std::string, int64_t> score;
  if (common::Result<std::vector<extender::testing::HostScore>> scores =
          extender.client().PrioritizeNames(pod.json, feasible);
      scores.ok()) {
    for (const extender::testing::HostScore& s : *scores) score[s.host] = s.score;
  }
  std::sort(feasible.begin(), feasible.end());
  std::string best = feasible.front();
  for (const std::string& n : feasible) {
    if (score[n] > score[best]) best = n;
  }
  return best;
}

std::string Harness::BindThroughApi(const PodView& pod, const std::string& node) {
  // The Binding kube-scheduler's default binder posts; its wire form is taskgov's own.
  common::Result<common::testing::HttpReply> reply =
      api_client_->Post("/api/v1/namespaces/" + pod.ns + "/pods/" + pod.name + "/binding",
                        scheduler::kube::BindingBody(pod.name, pod.uid, node));
  if (!reply.ok()) return reply.error().message;
  if (reply->status != 201 && reply->status != 200) {
    return "the API server answered " + std::to_string(reply->status) + ": " + reply->body;
  }
  ++bindings_through_api_;
  return "";
}

StepReport Harness::Step() {
  ++step_;
  simulated_seconds_ += step_seconds_;
  StepReport report;
  report.step = step_;
  step_evictions_ = api_->evictions().size();
  Kubelet(Pods(), &report);
  if (common::Status s = Sync(); !s.ok()) report.sync_error = s.error().message;
  SchedulePass(&report);
  history_.push_back(report);
  if (step_observer_) step_observer_(history_.back());
  return history_.back();
}

bool Harness::WaitForActivity(milliseconds timeout) {
  const size_t before = step_evictions_;
  return api_->WaitFor([&] { return api_->evictions().size() != before; }, timeout);
}

bool Harness::RunUntil(const std::function<bool()>& done, int max_steps) {
  for (int i = 0; i < max_steps; ++i) {
    if (done()) return true;
    if (!Step().progress()) WaitForActivity(options_.idle_wait);
  }
  return done();
}

bool Harness::RunUntilQuiet(milliseconds quiet, int max_steps) {
  for (int i = 0; i < max_steps; ++i) {
    const StepReport report = Step();
    if (report.progress()) continue;
    if (!report.terminating.empty()) {
      // Not quiet: pods still terminate, and only steps move their grace period on.
      WaitForActivity(options_.idle_wait);
      continue;
    }
    if (!WaitForActivity(quiet)) return true;
  }
  return false;
}

// ---- the extender's view ----

common::Status Harness::Sync(milliseconds timeout) {
  ExtenderProcess& extender = *extenders_.at(serving_);
  if (!extender.running()) return common::Error{"extender " + extender.identity() + " is down"};
  const std::string name = "e2e-sync-" + std::to_string(++sync_seq_);
  PodSpec spec;
  spec.ns = kSyncNamespace;
  common::Result<std::string> stored =
      api_->Upsert("pods", PodJson(spec, name, "", NextTimestamp(), "e2e-sync"));
  if (!stored.ok()) return stored.error();
  const std::string uid = Parse(*stored).uid;
  const auto deadline = SteadyClock::now() + timeout;
  common::Status result = common::Status::Ok();
  milliseconds pause(1);
  while (true) {
    // The barrier pod is of another scheduler: once the informer has seen it, the bind verb
    // refuses it for that (it binds only pods of the governed scheduler that it filtered).
    common::Result<std::string> bound =
        extender.client().Bind(name, kSyncNamespace, uid, kSyncNode);
    const std::string why = bound.ok() ? *bound : bound.error().message;
    if (why.find("taskgov binds only pods of scheduler") != std::string::npos) break;
    if (why.find("unknown pod") == std::string::npos || SteadyClock::now() >= deadline) {
      result = common::Error{"sync with " + extender.identity() + ": " + why};
      break;
    }
    std::this_thread::sleep_for(pause);  // polling a condition, bounded above
    pause = std::min(pause * 2, milliseconds(16));
  }
  (void)api_->Delete("pods", kSyncNamespace, name);
  return result;
}

common::Result<LedgerLine> Harness::ProbeLedger(const std::string& ns,
                                                const std::string& instance_type,
                                                const std::string& resource) {
  ExtenderProcess& extender = *extenders_.at(serving_);
  if (common::Status synced = Sync(); !synced.ok()) return synced.error();
  const std::string name = "e2e-probe-" + std::to_string(++sync_seq_);
  PodSpec spec;
  spec.ns = ns;
  spec.priority = 1'000'000'000;
  spec.requests[resource] = kProbeRequest;
  common::Result<std::string> stored =
      api_->Upsert("pods", PodJson(spec, name, "", "2000-01-01T00:00:00.000Z", "e2e-probe"));
  if (!stored.ok()) return stored.error();
  NodeSpec node;
  node.name = "e2e-probe-node";
  node.instance_type = instance_type;
  node.allocatable[resource] = kProbeRequest * 10;
  common::Result<extender::testing::FilterReply> reply =
      extender.client().FilterNodes(*stored, {NodeJson(node)});
  (void)api_->Delete("pods", ns, name);
  if (!reply.ok()) return reply.error();
  if (!reply->error.empty()) return common::Error{"probe: " + reply->error};
  std::string reason;
  for (const auto* m : {&reply->failed_and_unresolvable_nodes, &reply->failed_nodes}) {
    if (auto it = m->find(node.name); it != m->end()) reason = it->second;
  }
  if (reason.empty())
    return common::Error{"probe of " + ns + " on " + instance_type + " was admitted"};
  LedgerLine line;
  line.reason = reason;
  std::smatch m;
  if (!std::regex_search(reason, m, std::regex(R"re(in use ([^ ,;]+) of nominal ([^ ,;)]+))re"))) {
    return common::Error{"probe: no usage in '" + reason + "'"};
  }
  common::Result<int64_t> in_use = scheduler::model::ParseResourceQuantity(resource, m[1].str());
  common::Result<int64_t> nominal = scheduler::model::ParseResourceQuantity(resource, m[2].str());
  if (!in_use.ok() || !nominal.ok())
    return common::Error{"probe: unparsable numbers in '" + reason + "'"};
  line.in_use = *in_use;
  line.nominal = *nominal;
  if (std::regex_search(reason, m, std::regex(R"re(borrowing limit ([^ ,;]+))re"))) {
    line.borrowing_limit = m[1].str();
  }
  return line;
}

}  // namespace taskgov::e2e
