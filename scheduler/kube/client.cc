#include "scheduler/kube/client.h"

#include <thread>

#include "scheduler/common/log.h"

namespace taskgov::scheduler::kube {
namespace {

constexpr std::string_view kComponent = "kube-client";
constexpr size_t kMaxErrorBodyBytes = 1024 * 1024;

using SteadyClock = std::chrono::steady_clock;

Endpoint EndpointOf(const ClusterConfig& config) {
  Endpoint e;
  e.tls = config.scheme != "http";
  e.host = config.host;
  e.port = config.port;
  e.server_name = config.tls_server_name;
  e.verify = !config.insecure_skip_tls_verify;
  return e;
}

std::chrono::milliseconds ParseRetryAfter(const std::string& value) {
  if (value.empty() || value.size() > 9) return std::chrono::milliseconds(0);
  int64_t seconds = 0;
  for (char c : value) {
    if (c < '0' || c > '9') return std::chrono::milliseconds(0);  // HTTP-date: not used by k8s
    seconds = seconds * 10 + (c - '0');
  }
  return std::chrono::milliseconds(seconds * 1000);
}

std::chrono::milliseconds Remaining(Deadline deadline) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(deadline - SteadyClock::now());
}

void AddParam(std::string* target, std::string_view key, std::string_view value) {
  target->push_back(target->find('?') == std::string::npos ? '?' : '&');
  target->append(key);
  target->push_back('=');
  target->append(QueryEscape(value));
}

}  // namespace

std::string QueryEscape(std::string_view value) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : value) {
    if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
        c == '_' || c == '.' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

ApiError ErrorFromResponse(std::string what, const HttpResponse& response) {
  ApiError error;
  error.what = std::move(what);
  error.status = response.status;
  error.retry_after = ParseRetryAfter(response.Header("Retry-After"));
  rapidjson::Document doc;
  doc.Parse(response.body.data(), response.body.size());
  if (!doc.HasParseError() && doc.IsObject()) {
    StatusInfo info = ReadStatus(doc);
    error.reason = info.reason;
    error.message = info.message;
    error.causes = std::move(info.causes);
    if (error.retry_after.count() == 0 && info.retry_after_seconds > 0) {
      error.retry_after = std::chrono::milliseconds(info.retry_after_seconds * 1000);
    }
  }
  if (error.message.empty()) {
    error.message = response.body.substr(0, 256);
    if (error.message.empty()) error.message = "no message";
  }
  return error;
}

const rapidjson::Value& ListPage::items() const {
  static const rapidjson::Value* empty = new rapidjson::Value(rapidjson::kArrayType);
  if (!doc.IsObject()) return *empty;
  auto it = doc.FindMember("items");
  if (it == doc.MemberEnd() || !it->value.IsArray()) return *empty;
  return it->value;
}

KubeClient::KubeClient(ClusterConfig config, ClientOptions options)
    : config_(std::move(config)),
      options_(std::move(options)),
      endpoint_(EndpointOf(config_)),
      credentials_(config_, CredentialOptions{options_.token_reread_interval, options_.exec_timeout,
                                              options_.clock}) {}

KubeClient::~KubeClient() = default;

common::Result<std::unique_ptr<KubeClient>> KubeClient::Create(ClusterConfig config,
                                                               ClientOptions options) {
  if (config.host.empty() || config.port == 0) {
    if (config.server.empty()) return common::Error{"Kubernetes client: no server configured"};
    if (common::Status s = ParseServerUrl(config.server, &config); !s.ok()) return s.error();
  }
  std::unique_ptr<KubeClient> client(new KubeClient(std::move(config), std::move(options)));
  if (client->endpoint_.tls) {
    // Validate the static TLS material now, so a bad CA or key fails at startup.
    TlsSettings settings{client->config_.ca_pem, client->config_.insecure_skip_tls_verify,
                         client->config_.client_cert_pem, client->config_.client_key_pem};
    common::Result<std::shared_ptr<TlsContext>> tls = MakeTlsContext(settings);
    if (!tls.ok()) return tls.error().Wrap("Kubernetes client (" + client->config_.source + ")");
  }
  return client;
}

std::chrono::milliseconds KubeClient::TimeoutOf(const CallOptions& call) const {
  return call.timeout.count() > 0 ? call.timeout : options_.request_timeout;
}

ClientStats KubeClient::stats() const {
  ClientStats s;
  s.requests = requests_.load(std::memory_order_relaxed);
  s.errors = errors_.load(std::memory_order_relaxed);
  s.auth_retries = auth_retries_.load(std::memory_order_relaxed);
  s.throttle_retries = throttle_retries_.load(std::memory_order_relaxed);
  s.stale_retries = stale_retries_.load(std::memory_order_relaxed);
  s.connections_opened = connections_opened_.load(std::memory_order_relaxed);
  s.watches_opened = watches_opened_.load(std::memory_order_relaxed);
  return s;
}

ApiResult<KubeClient::Prepared> KubeClient::Prepare(std::string_view method,
                                                    std::string_view target,
                                                    const std::string& body,
                                                    const CallOptions& call) {
  common::Result<Credentials> creds = credentials_.Get();
  if (!creds.ok()) {
    return ApiError::Of(0, "CredentialsUnavailable", creds.error().message,
                        std::string(method) + " " + std::string(target));
  }
  {
    std::lock_guard<std::mutex> lock(pool_mu_);
    if (endpoint_.tls && (!tls_ || tls_generation_ != creds->tls_generation)) {
      TlsSettings settings{config_.ca_pem, config_.insecure_skip_tls_verify, creds->client_cert_pem,
                           creds->client_key_pem};
      common::Result<std::shared_ptr<TlsContext>> tls = MakeTlsContext(settings);
      if (!tls.ok()) {
        return ApiError::Of(0, "CredentialsUnavailable", tls.error().message,
                            std::string(method) + " " + std::string(target));
      }
      tls_ = std::move(*tls);
      tls_generation_ = creds->tls_generation;
      idle_.clear();  // connections made with the old certificate
    }
  }
  Prepared p;
  p.request.method = std::string(method);
  p.request.target = config_.base_path + std::string(target);
  std::string host =
      config_.host.find(':') != std::string::npos ? "[" + config_.host + "]" : config_.host;
  if ((endpoint_.tls && config_.port != 443) || (!endpoint_.tls && config_.port != 80)) {
    host += ":" + std::to_string(config_.port);
  }
  p.request.headers.emplace_back("Host", host);
  p.request.headers.emplace_back("User-Agent", options_.user_agent);
  p.request.headers.emplace_back("Accept", "application/json");
  if (!body.empty()) {
    p.request.headers.emplace_back(
        "Content-Type", call.content_type.empty() ? "application/json" : call.content_type);
  }
  if (!options_.impersonate_user.empty()) {
    p.request.headers.emplace_back("Impersonate-User", options_.impersonate_user);
  }
  const bool replaces =
      !call.forwarded_token.empty() && call.forward_token_header == "Authorization";
  if (!creds->token.empty() && !replaces) {
    p.request.headers.emplace_back("Authorization", "Bearer " + creds->token);
  }
  if (!call.forward_token_header.empty()) {
    const std::string& forwarded =
        call.forwarded_token.empty() ? creds->token : call.forwarded_token;
    if (!forwarded.empty()) {
      p.request.headers.emplace_back(call.forward_token_header, "Bearer " + forwarded);
    }
  }
  p.request.body = body;
  p.token = creds->token;
  return p;
}

ApiResult<std::unique_ptr<HttpConnection>> KubeClient::Acquire(Deadline deadline,
                                                               Cancellation* cancel, bool* reused) {
  std::shared_ptr<TlsContext> tls;
  uint64_t generation = 0;
  {
    std::lock_guard<std::mutex> lock(pool_mu_);
    const auto now = SteadyClock::now();
    while (!idle_.empty()) {
      std::unique_ptr<HttpConnection> conn = std::move(idle_.back());
      idle_.pop_back();
      if (now - conn->idle_since < options_.idle_connection_ttl) {
        *reused = true;
        return conn;
      }
    }
    tls = tls_;
    generation = tls_generation_;
  }
  *reused = false;
  connections_opened_.fetch_add(1, std::memory_order_relaxed);
  ApiResult<std::unique_ptr<HttpConnection>> conn =
      HttpConnection::Open(endpoint_, std::move(tls), deadline, cancel);
  if (conn.ok()) (*conn)->epoch = generation;
  return conn;
}

void KubeClient::Release(std::unique_ptr<HttpConnection> connection) {
  if (!connection || !connection->reusable()) return;
  std::lock_guard<std::mutex> lock(pool_mu_);
  if (connection->epoch != tls_generation_ || idle_.size() >= options_.max_idle_connections) return;
  connection->idle_since = SteadyClock::now();
  idle_.push_back(std::move(connection));
}

namespace {

// Sleeps `delay`; false when `cancel` (may be nullptr) fired first.
bool SleepUnlessCancelled(std::chrono::milliseconds delay, Cancellation* cancel) {
  if (cancel != nullptr) return cancel->SleepFor(delay);
  std::this_thread::sleep_for(delay);
  return true;
}

}  // namespace

ApiResult<HttpResponse> KubeClient::Call(std::string_view method, std::string_view target,
                                         std::string body, const CallOptions& call) {
  const std::string what = std::string(method) + " " + std::string(target);
  const Deadline deadline = SteadyClock::now() + TimeoutOf(call);
  requests_.fetch_add(1, std::memory_order_relaxed);
  bool auth_retried = false;
  bool stale_retried = false;
  int throttled = 0;
  auto fail = [&](ApiError error) -> ApiResult<HttpResponse> {
    errors_.fetch_add(1, std::memory_order_relaxed);
    if (error.what.empty() || error.transport()) error.what = what;
    return error;
  };
  while (true) {
    ApiResult<Prepared> prepared = Prepare(method, target, body, call);
    if (!prepared.ok()) return fail(prepared.error());
    bool reused = false;
    ApiResult<std::unique_ptr<HttpConnection>> conn = Acquire(deadline, call.cancel, &reused);
    if (!conn.ok()) return fail(conn.error());
    bool got_response = false;
    ApiResult<HttpResponse> response = (*conn)->RoundTrip(
        prepared->request, deadline, options_.max_response_bytes, call.cancel, &got_response);
    if (!response.ok()) {
      if (reused && !got_response && !stale_retried && !response.error().cancelled &&
          response.error().reason == "ConnectionClosed") {
        stale_retried = true;
        stale_retries_.fetch_add(1, std::memory_order_relaxed);
        continue;
      }
      return fail(response.error());
    }
    Release(std::move(*conn));
    const int status = response->status;
    if (status >= 200 && status < 300) return response;
    ApiError error = ErrorFromResponse(what, *response);
    if (status == 401 && !auth_retried) {
      auth_retried = true;
      auth_retries_.fetch_add(1, std::memory_order_relaxed);
      credentials_.Invalidate(prepared->token);
      common::log::Info(kComponent, "401 Unauthorized; refreshing credentials and retrying",
                        {{"request", what}});
      continue;
    }
    if (status == 429 && call.retry_throttled && error.retry_after.count() > 0 &&
        throttled < options_.max_throttle_retries && error.retry_after < Remaining(deadline)) {
      ++throttled;
      throttle_retries_.fetch_add(1, std::memory_order_relaxed);
      common::log::Info(
          kComponent, "429 Too Many Requests; waiting Retry-After",
          {{"request", what}, {"retry_after_ms", static_cast<int64_t>(error.retry_after.count())}});
      if (!SleepUnlessCancelled(error.retry_after, call.cancel)) {
        return fail(ApiError::Cancelled("cancelled while waiting Retry-After", what));
      }
      continue;
    }
    return fail(std::move(error));
  }
}

ApiResult<rapidjson::Document> KubeClient::CallJson(std::string_view method,
                                                    std::string_view target, std::string body,
                                                    const CallOptions& call) {
  ApiResult<HttpResponse> response = Call(method, target, std::move(body), call);
  if (!response.ok()) return response.error();
  rapidjson::Document doc;
  doc.Parse(response->body.data(), response->body.size());
  if (doc.HasParseError() || !doc.IsObject()) {
    errors_.fetch_add(1, std::memory_order_relaxed);
    return ApiError::Of(
        response->status, "InvalidResponse",
        "response body is not a JSON object (at byte " + std::to_string(doc.GetErrorOffset()) + ")",
        std::string(method) + " " + std::string(target));
  }
  return doc;
}

ApiResult<ListPage> KubeClient::List(const std::string& path, const ListOptions& list,
                                     const CallOptions& call) {
  std::string target = path;
  if (list.limit > 0) AddParam(&target, "limit", std::to_string(list.limit));
  if (!list.continue_token.empty()) AddParam(&target, "continue", list.continue_token);
  if (!list.field_selector.empty()) AddParam(&target, "fieldSelector", list.field_selector);
  if (!list.label_selector.empty()) AddParam(&target, "labelSelector", list.label_selector);
  if (!list.resource_version.empty()) {
    AddParam(&target, "resourceVersion", list.resource_version);
  }
  ApiResult<rapidjson::Document> doc = CallJson("GET", target, "", call);
  if (!doc.ok()) return doc.error();
  ListPage page;
  page.doc = std::move(*doc);
  auto bad = [&](const std::string& why) {
    errors_.fetch_add(1, std::memory_order_relaxed);
    return ApiError::Of(200, "InvalidResponse", why, "GET " + target);
  };
  const rapidjson::Value& root = page.doc;  // const iterators compare unambiguously in C++20
  auto items = root.FindMember("items");
  if (items != root.MemberEnd() && !items->value.IsArray() && !items->value.IsNull()) {
    return bad("items: expected an array");
  }
  auto meta = root.FindMember("metadata");
  if (meta != root.MemberEnd()) {
    if (!meta->value.IsObject()) return bad("metadata: expected an object");
    for (auto [key, out] : {std::pair{"resourceVersion", &page.resource_version},
                            std::pair{"continue", &page.continue_token}}) {
      common::Result<std::string> v =
          OptionalJsonString(meta->value, key, std::string("metadata.") + key);
      if (!v.ok()) return bad(v.error().message);
      *out = std::move(*v);
    }
  }
  return page;
}

ApiResult<std::unique_ptr<WatchStream>> KubeClient::Watch(const std::string& path,
                                                          const WatchOptions& watch,
                                                          const CallOptions& call) {
  std::string target = path;
  AddParam(&target, "watch", "true");
  if (!watch.resource_version.empty()) {
    AddParam(&target, "resourceVersion", watch.resource_version);
  }
  if (watch.allow_bookmarks) AddParam(&target, "allowWatchBookmarks", "true");
  if (watch.timeout_seconds > 0) {
    AddParam(&target, "timeoutSeconds", std::to_string(watch.timeout_seconds));
  }
  if (!watch.field_selector.empty()) AddParam(&target, "fieldSelector", watch.field_selector);
  if (!watch.label_selector.empty()) AddParam(&target, "labelSelector", watch.label_selector);
  const std::string what = "WATCH " + target;
  const Deadline deadline = SteadyClock::now() + TimeoutOf(call);
  requests_.fetch_add(1, std::memory_order_relaxed);
  auto fail = [&](ApiError error) -> ApiResult<std::unique_ptr<WatchStream>> {
    errors_.fetch_add(1, std::memory_order_relaxed);
    error.what = what;
    return error;
  };
  bool auth_retried = false;
  bool stale_retried = false;
  while (true) {
    ApiResult<Prepared> prepared = Prepare("GET", target, "", call);
    if (!prepared.ok()) return fail(prepared.error());
    bool reused = false;
    // A watch takes a connection of its own (never returned to the pool).
    ApiResult<std::unique_ptr<HttpConnection>> conn = Acquire(deadline, call.cancel, &reused);
    if (!conn.ok()) return fail(conn.error());
    ApiResult<HttpResponse> head =
        (*conn)->WriteAndReadHead(prepared->request, deadline, call.cancel);
    if (!head.ok()) {
      if (reused && !stale_retried && head.error().reason == "ConnectionClosed" &&
          !head.error().cancelled) {
        stale_retried = true;
        stale_retries_.fetch_add(1, std::memory_order_relaxed);
        continue;
      }
      return fail(head.error());
    }
    if (head->status == 200) {
      watches_opened_.fetch_add(1, std::memory_order_relaxed);
      std::chrono::milliseconds idle = watch.idle_timeout;
      if (idle.count() <= 0) {
        idle = std::chrono::milliseconds(
            (watch.timeout_seconds > 0 ? watch.timeout_seconds : 3600) * 1000 + 30'000);
      }
      return std::unique_ptr<WatchStream>(new WatchStream(
          std::move(*conn), idle, options_.max_watch_event_bytes, call.cancel, what));
    }
    ApiResult<std::string> body =
        (*conn)->ReadBodyToString(deadline, kMaxErrorBodyBytes, call.cancel);
    HttpResponse response = std::move(*head);
    if (body.ok()) response.body = std::move(*body);
    ApiError error = ErrorFromResponse(what, response);
    if (response.status == 401 && !auth_retried) {
      auth_retried = true;
      auth_retries_.fetch_add(1, std::memory_order_relaxed);
      credentials_.Invalidate(prepared->token);
      continue;
    }
    return fail(std::move(error));
  }
}

WatchStream::WatchStream(std::unique_ptr<HttpConnection> connection,
                         std::chrono::milliseconds idle_timeout, size_t max_event_bytes,
                         Cancellation* cancel, std::string what)
    : connection_(std::move(connection)),
      idle_timeout_(idle_timeout),
      splitter_(max_event_bytes),
      cancel_(cancel),
      what_(std::move(what)) {}

WatchStream::~WatchStream() = default;

ApiResult<bool> WatchStream::Next(WatchEvent* event) {
  auto fail = [&](std::string reason, std::string message) -> ApiResult<bool> {
    failed_ = true;
    return ApiError::Of(0, std::move(reason), std::move(message), what_);
  };
  if (failed_) return fail("TransportError", "the stream already failed");
  while (true) {
    std::optional<std::string> line = splitter_.NextLine();
    if (line) {
      bool blank = true;
      for (char c : *line) {
        if (c != ' ' && c != '\t' && c != '\r') blank = false;
      }
      if (blank) continue;
      common::Result<WatchEvent> parsed = ParseWatchEvent(*line);
      if (!parsed.ok()) return fail("InvalidEvent", parsed.error().message);
      *event = std::move(*parsed);
      return true;
    }
    if (splitter_.overflow()) {
      return fail("InvalidEvent", "a watch event exceeds " + std::to_string(splitter_.buffered()) +
                                      " bytes without a newline");
    }
    if (done_) {
      if (!splitter_.blank()) {
        return fail("InvalidEvent", "the stream ended inside an event (" +
                                        std::to_string(splitter_.buffered()) + " bytes)");
      }
      return false;
    }
    std::string chunk;
    ApiResult<size_t> n = connection_->ReadBodySome(
        &chunk, std::chrono::steady_clock::now() + idle_timeout_, cancel_, &done_);
    if (!n.ok()) {
      failed_ = true;
      ApiError error = n.error();
      error.what = what_;
      return error;
    }
    bytes_ += *n;
    splitter_.Feed(chunk);
  }
}

}  // namespace taskgov::scheduler::kube
