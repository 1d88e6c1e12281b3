#include "metrics/testing/prometheus_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

#include "rapidjson/document.h"

namespace taskgov::metrics::testing {
namespace {

using SteadyClock = std::chrono::steady_clock;

constexpr std::chrono::seconds kRequestTimeout{10};
constexpr std::chrono::seconds kStopTimeout{10};

void Pause(std::chrono::milliseconds ms) { ::poll(nullptr, 0, static_cast<int>(ms.count())); }

// A loopback port that was free a moment ago.
common::Result<uint16_t> FreePort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return common::Error{std::string("socket: ") + strerror(errno)};
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    const std::string why = strerror(errno);
    ::close(fd);
    return common::Error{"bind 127.0.0.1:0: " + why};
  }
  ::close(fd);
  return ntohs(addr.sin_port);
}

std::string UrlEncode(const std::string& s) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

common::Result<double> SampleValue(const rapidjson::Value& pair) {
  // [ <unix time>, "<value>" ]
  if (!pair.IsArray() || pair.Size() != 2 || !pair[1].IsString()) {
    return common::Error{"sample value is not [time, \"value\"]"};
  }
  const std::string text = pair[1].GetString();
  if (text == "+Inf") return INFINITY;
  if (text == "-Inf") return -INFINITY;
  if (text == "NaN") return NAN;
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (end == nullptr || *end != '\0')
    return common::Error{"sample value '" + text + "' is not a number"};
  return v;
}

}  // namespace

PrometheusServer::PrometheusServer(PrometheusOptions options) : options_(std::move(options)) {}

PrometheusServer::~PrometheusServer() { Stop(); }

bool PrometheusServer::Available(const std::string& binary) {
  return ::access(binary.c_str(), X_OK) == 0;
}

common::Status PrometheusServer::Start(const std::string& target, const std::string& metrics_path) {
  if (server_) return common::Error{"prometheus already started"};
  const char* tmp = std::getenv("TEST_TMPDIR");
  std::string templ = std::string(tmp != nullptr ? tmp : "/tmp") + "/prometheus-XXXXXX";
  if (::mkdtemp(templ.data()) == nullptr) {
    return common::Error{"mkdtemp " + templ + ": " + strerror(errno)};
  }
  dir_ = templ;
  log_path_ = dir_ + "/prometheus.log";
  for (int attempt = 0;; ++attempt) {
    bool port_taken = false;
    common::Status s = StartOnce(target, metrics_path, &port_taken);
    if (s.ok() || !port_taken || attempt == 4) return s;
  }
}

common::Status PrometheusServer::StartOnce(const std::string& target,
                                           const std::string& metrics_path, bool* port_taken) {
  common::Result<uint16_t> port = FreePort();
  if (!port.ok()) return port.error();
  port_ = *port;
  const auto interval = std::to_string(options_.scrape_interval.count()) + "ms";
  const std::string config = dir_ + "/prometheus.yml";
  {
    std::ofstream out(config, std::ios::trunc);
    out << "global:\n"
        << "  scrape_interval: " << interval << "\n"
        << "  scrape_timeout: " << interval << "\n"
        << "  evaluation_interval: " << interval << "\n"
        << "scrape_configs:\n"
        << "  - job_name: taskgov\n"
        << "    metrics_path: " << metrics_path << "\n"
        << "    static_configs:\n"
        << "      - targets: ['" << target << "']\n";
    if (!out) return common::Error{"cannot write " + config};
  }
  const std::vector<std::string> args = {
      "--config.file=" + config,
      "--storage.tsdb.path=" + dir_ + "/data",
      "--web.listen-address=127.0.0.1:" + std::to_string(port_),
      "--log.level=info",
  };
  common::testing::SubprocessOptions spawn;
  spawn.stdin_text = "";  // end of file, as /dev/null
  spawn.output_file = log_path_;
  server_ = std::make_unique<common::testing::Subprocess>();
  if (common::Status s = server_->Start(options_.binary, args, spawn); !s.ok()) {
    server_.reset();
    return s;
  }
  client_ = std::make_unique<common::testing::HttpClient>("127.0.0.1", port_, kRequestTimeout);
  client_->set_disable_compression(true);

  const auto deadline = SteadyClock::now() + options_.ready_timeout;
  std::string last;
  while (SteadyClock::now() < deadline) {
    // Waiting for an exit doubles as the pause between readiness probes.
    if (server_->Wait(std::chrono::milliseconds(50))) {
      client_.reset();
      server_.reset();
      const std::string log = LogTail(4000);
      *port_taken = log.find("address already in use") != std::string::npos;
      return common::Error{"prometheus exited before it was ready; its log ends:\n" + log};
    }
    common::Result<std::string> ready = Get("/-/ready");
    if (ready.ok()) return common::Status::Ok();
    last = ready.error().message;
  }
  const std::string log = LogTail(4000);
  Stop();
  return common::Error{"prometheus not ready after " +
                       std::to_string(options_.ready_timeout.count()) + " ms (" + last +
                       "); its log ends:\n" + log};
}

// The body of a 200 reply to a GET.
common::Result<std::string> PrometheusServer::Get(const std::string& target) {
  if (!client_) return common::Error{"GET " + target + ": prometheus is not running"};
  common::Result<common::testing::HttpReply> reply = client_->Get(target);
  if (!reply.ok()) return reply.error();
  if (reply->status != 200) {
    return common::Error{"GET " + target + ": status " + std::to_string(reply->status) + ": " +
                         reply->body};
  }
  return std::move(reply->body);
}

common::Result<std::vector<QuerySample>> PrometheusServer::Query(const std::string& promql) {
  common::Result<std::string> body = Get("/api/v1/query?query=" + UrlEncode(promql));
  if (!body.ok()) return body.error().Wrap("query " + promql);
  rapidjson::Document doc;
  doc.Parse(body->c_str(), body->size());
  const std::string where = "query " + promql + ": ";
  if (doc.HasParseError() || !doc.IsObject())
    return common::Error{where + "reply is not JSON: " + *body};
  auto status = doc.FindMember("status");
  if (status == doc.MemberEnd() || !status->value.IsString() ||
      std::string(status->value.GetString()) != "success") {
    return common::Error{where + "status is not success: " + *body};
  }
  auto data = doc.FindMember("data");
  if (data == doc.MemberEnd() || !data->value.IsObject()) return common::Error{where + "no data"};
  auto type = data->value.FindMember("resultType");
  auto result = data->value.FindMember("result");
  if (type == data->value.MemberEnd() || !type->value.IsString() ||
      result == data->value.MemberEnd()) {
    return common::Error{where + "no resultType/result"};
  }
  std::vector<QuerySample> out;
  const std::string kind = type->value.GetString();
  if (kind == "scalar") {
    common::Result<double> v = SampleValue(result->value);
    if (!v.ok()) return v.error().Wrap(where);
    out.push_back(QuerySample{{}, *v});
    return out;
  }
  if (kind != "vector" || !result->value.IsArray()) {
    return common::Error{where + "result type " + kind + " is not a vector"};
  }
  for (const rapidjson::Value& item : result->value.GetArray()) {
    if (!item.IsObject()) return common::Error{where + "result item is not an object"};
    auto metric = item.FindMember("metric");
    auto value = item.FindMember("value");
    if (metric == item.MemberEnd() || !metric->value.IsObject() || value == item.MemberEnd()) {
      return common::Error{where + "result item without metric/value"};
    }
    QuerySample sample;
    for (const auto& label : metric->value.GetObject()) {
      if (label.name.IsString() && label.value.IsString()) {
        sample.labels[label.name.GetString()] = label.value.GetString();
      }
    }
    common::Result<double> v = SampleValue(value->value);
    if (!v.ok()) return v.error().Wrap(where);
    sample.value = *v;
    out.push_back(std::move(sample));
  }
  return out;
}

common::Result<std::vector<QuerySample>> PrometheusServer::WaitFor(
    const std::string& promql, const std::function<bool(const std::vector<QuerySample>&)>& done,
    std::chrono::milliseconds timeout) {
  const auto deadline = SteadyClock::now() + timeout;
  while (true) {
    common::Result<std::vector<QuerySample>> r = Query(promql);
    if (r.ok() && done(*r)) return r;
    if (SteadyClock::now() >= deadline) {
      if (!r.ok()) return r;
      std::string seen;
      for (const QuerySample& s : *r) seen += " " + std::to_string(s.value);
      return common::Error{"query " + promql + ": condition not met within " +
                           std::to_string(timeout.count()) +
                           " ms; last result:" + (seen.empty() ? " (empty)" : seen)};
    }
    Pause(std::chrono::milliseconds(50));
  }
}

void PrometheusServer::Stop() {
  if (!server_) return;
  client_.reset();
  server_->Signal(SIGTERM);
  if (!server_->Wait(kStopTimeout)) server_->Kill();
  server_.reset();  // reaps a killed server
}

std::string PrometheusServer::LogTail(size_t bytes) const {
  std::ifstream in(log_path_);
  std::stringstream text;
  text << in.rdbuf();
  const std::string all = text.str();
  return all.size() <= bytes ? all : all.substr(all.size() - bytes);
}

}  // namespace taskgov::metrics::testing
