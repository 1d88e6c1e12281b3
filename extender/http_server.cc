#include "extender/http_server.h"

#include <atomic>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <condition_variable>
#include <exception>
#include <limits>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>

#include "scheduler/common/log.h"

namespace taskgov::extender {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;

constexpr std::string_view kComponent = "http";

}  // namespace

class HttpServer::Impl {
 public:
  Impl(HttpServerOptions options, std::vector<Route> routes)
      : options_(std::move(options)), ioc_(std::max(1, options_.io_threads)) {
    for (Route& route : routes) routes_[route.path].push_back(std::move(route));
  }

  ~Impl() { Shutdown(std::chrono::milliseconds(0)); }

  Status Start();
  void Shutdown(std::chrono::milliseconds drain);
  uint16_t port() const { return port_; }

  HttpServerStats stats() const {
    HttpServerStats s;
    s.accepted = accepted_.load(std::memory_order_relaxed);
    s.rejected_over_capacity = rejected_.load(std::memory_order_relaxed);
    s.requests = requests_.load(std::memory_order_relaxed);
    s.bad_requests = bad_requests_.load(std::memory_order_relaxed);
    s.timeouts = timeouts_.load(std::memory_order_relaxed);
    s.open_connections = open_.load(std::memory_order_relaxed);
    return s;
  }

 private:
  class Session;
  friend class Session;

  void Accept();
  void OnAccept(beast::error_code ec, tcp::socket socket);
  void Register(const std::shared_ptr<Session>& session);
  void Unregister(Session* session);

  const HttpServerOptions options_;
  std::unordered_map<std::string, std::vector<Route>> routes_;
  uint16_t port_ = 0;

  // Relaxed counters: statistics only, they order nothing.
  std::atomic<uint64_t> accepted_{0};
  std::atomic<uint64_t> rejected_{0};
  std::atomic<uint64_t> requests_{0};
  std::atomic<uint64_t> bad_requests_{0};
  std::atomic<uint64_t> timeouts_{0};
  std::atomic<uint64_t> open_{0};
  // Release on store, acquire on load: a session that sees `stopping_` also sees the acceptor
  // being closed.
  std::atomic<bool> stopping_{false};

  std::mutex sessions_mu_;
  std::condition_variable sessions_cv_;
  std::unordered_map<Session*, std::weak_ptr<Session>> sessions_;  // guarded by sessions_mu_

  bool started_ = false;
  bool stopped_ = false;
  std::vector<std::thread> threads_;
  // Declared last among I/O objects' owners: the sockets below are destroyed before the context.
  asio::io_context ioc_;
  std::optional<tcp::acceptor> acceptor_;
  std::optional<asio::steady_timer> accept_retry_;
};

class HttpServer::Impl::Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket&& socket, Impl* server) : stream_(std::move(socket)), server_(server) {
    beast::error_code ec;
    auto endpoint = stream_.socket().remote_endpoint(ec);
    if (!ec) peer_ = endpoint.address().to_string() + ":" + std::to_string(endpoint.port());
  }

  ~Session() { server_->Unregister(this); }

  void Run() {
    asio::dispatch(stream_.get_executor(), [self = shared_from_this()] { self->WaitForRequest(); });
  }

  // Called on the session's strand when the server shuts down: an idle connection closes now,
  // one with a request in flight finishes it first (the reply then carries Connection: close).
  void OnShutdown() {
    if (idle_) stream_.socket().close();
  }

  beast::tcp_stream::executor_type executor() { return stream_.get_executor(); }

 private:
  void WaitForRequest() {
    if (server_->stopping_.load(std::memory_order_acquire)) return Close();
    if (buffer_.size() > 0) return StartRequest();  // a pipelined request is already here
    idle_ = true;
    stream_.expires_after(server_->options_.idle_timeout);
    stream_.async_read_some(
        buffer_.prepare(4096),
        [self = shared_from_this()](beast::error_code ec, size_t n) { self->OnFirstBytes(ec, n); });
  }

  void OnFirstBytes(beast::error_code ec, size_t n) {
    if (ec) {
      // An idle keep-alive connection that times out or is closed by the peer is normal.
      return Close();
    }
    buffer_.commit(n);
    StartRequest();
  }

  void StartRequest() {
    idle_ = false;
    request_start_ = Clock::now();
    header_parser_.emplace();
    header_parser_->header_limit(static_cast<uint32_t>(server_->options_.max_header_bytes));
    // The route's limit is only known once the path is; it is applied in OnHeader. (Not
    // boost::none: Beast 1.74 compares the content length against the optional and fails.)
    header_parser_->body_limit(std::numeric_limits<std::uint64_t>::max());
    const auto& opts = server_->options_;
    stream_.expires_at(request_start_ + std::min(opts.header_timeout, opts.request_timeout));
    http::async_read_header(
        stream_, buffer_, *header_parser_,
        [self = shared_from_this()](beast::error_code ec, size_t) { self->OnHeader(ec); });
  }

  void OnHeader(beast::error_code ec) {
    if (ec) return OnReadError(ec, "header");
    const auto& header = header_parser_->get();
    std::string_view target = header.target();
    std::string_view path = target.substr(0, target.find('?'));
    route_ = nullptr;
    auto it = server_->routes_.find(std::string(path));
    if (it == server_->routes_.end()) {
      return WriteError(http::status::not_found, "no such endpoint: " + std::string(path));
    }
    std::string allow;
    for (const Route& route : it->second) {
      if (route.method == header.method_string()) route_ = &route;
      if (!allow.empty()) allow += ", ";
      allow += route.method;
    }
    if (route_ == nullptr) {
      return WriteError(http::status::method_not_allowed,
                        "method " + std::string(header.method_string()) + " not allowed on " +
                            std::string(path) + "; allowed: " + allow,
                        {{"Allow", allow}});
    }
    if (auto length = header_parser_->content_length(); length && *length > route_->body_limit) {
      return OnReadError(http::error::body_limit, "body");
    }
    body_parser_.emplace(std::move(*header_parser_));
    header_parser_.reset();
    body_parser_->body_limit(route_->body_limit);  // enforced while reading chunked bodies
    stream_.expires_at(request_start_ + server_->options_.request_timeout);
    http::async_read(
        stream_, buffer_, *body_parser_,
        [self = shared_from_this()](beast::error_code ec, size_t) { self->OnBody(ec); });
  }

  void OnBody(beast::error_code ec) {
    if (ec) return OnReadError(ec, "body");
    server_->requests_.fetch_add(1, std::memory_order_relaxed);
    http::request<http::string_body> req = body_parser_->release();
    body_parser_.reset();
    HttpRequest request;
    request.method = std::string(req.method_string());
    std::string_view target = req.target();
    request.path = std::string(target.substr(0, target.find('?')));
    request.body = std::move(req.body());
    HttpResponse response;
    try {
      response = route_->handler(request);
    } catch (const std::exception& e) {
      // Handlers must not throw; a bug here must still not take the connection down silently.
      log::Error(kComponent, "handler threw", {{"path", request.path}, {"what", e.what()}});
      response = HttpResponse{500, "application/json", "{\"Error\":\"internal error\"}", {}};
    }
    const bool keep_alive = req.keep_alive() && !server_->stopping_.load(std::memory_order_acquire);
    Write(std::move(response), keep_alive);
  }

  void OnReadError(beast::error_code ec, std::string_view stage) {
    if (ec == http::error::end_of_stream || ec == asio::error::operation_aborted ||
        ec == asio::error::connection_reset || ec == asio::error::eof) {
      return Close();
    }
    if (ec == beast::error::timeout) {
      server_->timeouts_.fetch_add(1, std::memory_order_relaxed);
      log::Warn(kComponent, "request deadline passed; connection closed",
                {{"stage", stage}, {"peer", Peer()}});
      return Close();  // Nothing sensible can be written to a client that stopped sending.
    }
    if (ec == http::error::body_limit) {
      return WriteError(http::status::payload_too_large,
                        "request body exceeds the limit of " +
                            std::to_string(route_ ? route_->body_limit : 0) + " bytes for " +
                            (route_ ? route_->path : std::string("this endpoint")));
    }
    if (ec == http::error::header_limit) {
      return WriteError(http::status::request_header_fields_too_large,
                        "request header exceeds " +
                            std::to_string(server_->options_.max_header_bytes) + " bytes");
    }
    return WriteError(http::status::bad_request,
                      "malformed HTTP request (" + std::string(stage) + "): " + ec.message());
  }

  // Writes a server-generated error and closes the connection (its stream position is unknown).
  void WriteError(http::status status, const std::string& message,
                  std::vector<std::pair<std::string, std::string>> headers = {}) {
    if (status != http::status::not_found && status != http::status::method_not_allowed) {
      server_->bad_requests_.fetch_add(1, std::memory_order_relaxed);
      log::Warn(kComponent, "bad request",
                {{"status", static_cast<int>(status)}, {"error", message}, {"peer", Peer()}});
    }
    std::string body = "{\"Error\":\"";
    log::AppendJsonEscaped(message, &body);
    body += "\"}";
    HttpResponse response{static_cast<int>(status), "application/json", std::move(body),
                          std::move(headers)};
    Write(std::move(response), /*keep_alive=*/false);
  }

  void Write(HttpResponse response, bool keep_alive) {
    auto res = std::make_shared<http::response<http::string_body>>();
    res->result(static_cast<unsigned>(response.status));
    res->version(11);
    res->set(http::field::server, server_->options_.server_name);
    res->set(http::field::content_type, response.content_type);
    for (auto& [name, value] : response.headers) res->set(name, value);
    res->keep_alive(keep_alive);
    res->body() = std::move(response.body);
    res->prepare_payload();  // Content-Length, never chunked.
    stream_.expires_after(server_->options_.request_timeout);
    http::async_write(stream_, *res,
                      [self = shared_from_this(), res, keep_alive](beast::error_code ec, size_t) {
                        if (ec || !keep_alive) return self->Close();
                        self->WaitForRequest();
                      });
  }

  void Close() {
    beast::error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
    stream_.socket().close(ec);
  }

  const std::string& Peer() const { return peer_; }

  beast::tcp_stream stream_;
  Impl* const server_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::empty_body>> header_parser_;
  std::optional<http::request_parser<http::string_body>> body_parser_;
  const Route* route_ = nullptr;
  Clock::time_point request_start_;
  bool idle_ = true;  // waiting for the first byte of a request
  std::string peer_ = "unknown";
};

Status HttpServer::Impl::Start() {
  if (started_) return Error{"server already started"};
  beast::error_code ec;
  auto address = asio::ip::make_address(options_.address, ec);
  if (ec) return Error{"invalid listen address '" + options_.address + "': " + ec.message()};
  tcp::endpoint endpoint(address, options_.port);
  const std::string where = options_.address + ":" + std::to_string(options_.port);
  acceptor_.emplace(asio::make_strand(ioc_));
  acceptor_->open(endpoint.protocol(), ec);
  if (ec) return Error{"cannot open socket for " + where + ": " + ec.message()};
  acceptor_->set_option(asio::socket_base::reuse_address(true), ec);
  acceptor_->bind(endpoint, ec);
  if (ec) return Error{"cannot bind " + where + ": " + ec.message()};
  acceptor_->listen(asio::socket_base::max_listen_connections, ec);
  if (ec) return Error{"cannot listen on " + where + ": " + ec.message()};
  port_ = acceptor_->local_endpoint().port();
  accept_retry_.emplace(acceptor_->get_executor());
  started_ = true;
  Accept();
  for (int i = 0; i < std::max(1, options_.io_threads); ++i) {
    threads_.emplace_back([this] { ioc_.run(); });
  }
  return Status::Ok();
}

void HttpServer::Impl::Accept() {
  acceptor_->async_accept(
      asio::make_strand(ioc_),
      [this](beast::error_code ec, tcp::socket socket) { OnAccept(ec, std::move(socket)); });
}

void HttpServer::Impl::OnAccept(beast::error_code ec, tcp::socket socket) {
  if (stopping_.load(std::memory_order_acquire) || !acceptor_->is_open()) return;
  if (ec) {
    // Typically EMFILE: back off briefly instead of spinning on the failing accept.
    log::Warn(kComponent, "accept failed", {{"error", ec.message()}});
    accept_retry_->expires_after(std::chrono::milliseconds(50));
    accept_retry_->async_wait([this](beast::error_code wait_ec) {
      if (!wait_ec) Accept();
    });
    return;
  }
  accepted_.fetch_add(1, std::memory_order_relaxed);
  if (open_.load(std::memory_order_relaxed) >= options_.max_connections) {
    rejected_.fetch_add(1, std::memory_order_relaxed);
    beast::error_code ignored;
    socket.close(ignored);
  } else {
    socket.set_option(tcp::no_delay(true), ec);
    auto session = std::make_shared<Session>(std::move(socket), this);
    Register(session);
    session->Run();
  }
  Accept();
}

void HttpServer::Impl::Register(const std::shared_ptr<Session>& session) {
  std::lock_guard<std::mutex> lock(sessions_mu_);
  sessions_.emplace(session.get(), session);
  open_.fetch_add(1, std::memory_order_relaxed);
}

void HttpServer::Impl::Unregister(Session* session) {
  {
    std::lock_guard<std::mutex> lock(sessions_mu_);
    sessions_.erase(session);
    open_.fetch_sub(1, std::memory_order_relaxed);
  }
  sessions_cv_.notify_all();
}

void HttpServer::Impl::Shutdown(std::chrono::milliseconds drain) {
  if (!started_ || stopped_) return;
  stopped_ = true;
  stopping_.store(true, std::memory_order_release);
  asio::post(acceptor_->get_executor(), [this] {
    beast::error_code ignored;
    acceptor_->close(ignored);
    accept_retry_->cancel();
  });
  std::vector<std::shared_ptr<Session>> live;
  {
    std::lock_guard<std::mutex> lock(sessions_mu_);
    for (auto& [raw, weak] : sessions_) {
      if (auto session = weak.lock()) live.push_back(std::move(session));
    }
  }
  // Posted outside the lock: dropping the last reference runs ~Session, which takes the lock.
  for (auto& session : live) {
    asio::post(session->executor(), [session] { session->OnShutdown(); });
  }
  live.clear();
  {
    std::unique_lock<std::mutex> lock(sessions_mu_);
    sessions_cv_.wait_for(lock, drain, [this] { return sessions_.empty(); });
  }
  ioc_.stop();
  for (std::thread& t : threads_) t.join();
  threads_.clear();
}

HttpServer::HttpServer(HttpServerOptions options, std::vector<Route> routes)
    : impl_(std::make_unique<Impl>(std::move(options), std::move(routes))) {}
HttpServer::~HttpServer() = default;
Status HttpServer::Start() { return impl_->Start(); }
uint16_t HttpServer::port() const { return impl_->port(); }
void HttpServer::Shutdown(std::chrono::milliseconds drain) { impl_->Shutdown(drain); }
HttpServerStats HttpServer::stats() const { return impl_->stats(); }

}  // namespace taskgov::extender
