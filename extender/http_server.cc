#include "extender/http_server.h"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>

#include <atomic>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/stream_traits.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <fstream>
#include <limits>
#include <mutex>
#include <optional>
#include <thread>
#include <type_traits>
#include <unordered_map>

#include "common/log.h"

namespace taskgov::extender {
namespace {

namespace asio = boost::asio;
namespace ssl = asio::ssl;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;
using TlsStream = beast::ssl_stream<beast::tcp_stream>;

constexpr std::string_view kComponent = "http";
// Certificate, key and CA files are small; anything larger is a misconfiguration.
constexpr std::streamsize kMaxTlsFileBytes = 1 << 20;

// The content of the TLS files, compared on every reload check (they are a few KiB).
struct TlsFiles {
  std::string cert_chain;
  std::string key;
  std::string client_ca;
  bool operator==(const TlsFiles&) const = default;
};

common::Result<std::string> ReadSmallFile(const std::string& path, std::string_view what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return common::Error{"cannot read " + std::string(what) + " '" + path + "'"};
  std::string content;
  char buf[8192];
  while (in.read(buf, sizeof(buf)) || in.gcount() > 0) {
    content.append(buf, static_cast<size_t>(in.gcount()));
    if (static_cast<std::streamsize>(content.size()) > kMaxTlsFileBytes) {
      return common::Error{std::string(what) + " '" + path + "' is larger than 1 MiB"};
    }
  }
  if (in.bad()) return common::Error{"cannot read " + std::string(what) + " '" + path + "'"};
  return content;
}

common::Result<TlsFiles> ReadTlsFiles(const HttpTlsOptions& options) {
  TlsFiles files;
  common::Result<std::string> cert =
      ReadSmallFile(options.cert_chain_file, "TLS certificate chain");
  if (!cert.ok()) return cert.error();
  files.cert_chain = std::move(*cert);
  common::Result<std::string> key = ReadSmallFile(options.key_file, "TLS key");
  if (!key.ok()) return key.error();
  files.key = std::move(*key);
  if (!options.client_ca_file.empty()) {
    common::Result<std::string> ca = ReadSmallFile(options.client_ca_file, "TLS client CA");
    if (!ca.ok()) return ca.error();
    files.client_ca = std::move(*ca);
  }
  return files;
}

// The last error on OpenSSL's thread-local queue as text (and the queue cleared).
std::string OpenSslError() {
  const unsigned long code = ERR_peek_last_error();  // NOLINT(runtime/int): OpenSSL's type
  const char* reason = code == 0 ? nullptr : ERR_reason_error_string(code);
  std::string text = reason != nullptr ? reason
                     : code == 0       ? "unknown OpenSSL error"
                                       : "OpenSSL error " + std::to_string(code);
  ERR_clear_error();
  return text;
}

// ALPN: choose "http/1.1" wherever the client lists it; never anything else (in particular not
// "h2", which Go's client offers first). A client that offers ALPN without "http/1.1" gets a
// fatal no_application_protocol alert (RFC 7301 §3.2).
int SelectAlpn(SSL*, const unsigned char** out, unsigned char* out_len, const unsigned char* in,
               unsigned int in_len, void*) {
  constexpr std::string_view kHttp11 = "http/1.1";
  for (unsigned int i = 0; i < in_len;) {
    const unsigned int len = in[i];
    if (i + 1 + len > in_len) break;  // malformed list
    if (len == kHttp11.size() && std::memcmp(in + i + 1, kHttp11.data(), len) == 0) {
      *out = in + i + 1;
      *out_len = static_cast<unsigned char>(len);
      return SSL_TLSEXT_ERR_OK;
    }
    i += 1 + len;
  }
  return SSL_TLSEXT_ERR_ALERT_FATAL;
}

// Adds every certificate in `pem` to the context's trust store and to the CA names sent in the
// CertificateRequest (clients such as Go's pick their certificate by those names).
common::Status AddClientCas(SSL_CTX* ctx, const std::string& pem, const std::string& path) {
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  if (bio == nullptr) return common::Error{"TLS client CA '" + path + "': out of memory"};
  X509_STORE* store = SSL_CTX_get_cert_store(ctx);
  int added = 0;
  common::Status status;
  while (X509* cert = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr)) {
    if (X509_STORE_add_cert(store, cert) != 1 || SSL_CTX_add_client_CA(ctx, cert) != 1) {
      status = common::Error{"TLS client CA '" + path + "': " + OpenSslError()};
      X509_free(cert);
      break;
    }
    X509_free(cert);
    ++added;
  }
  BIO_free(bio);
  if (!status.ok()) return status;
  ERR_clear_error();  // the read that ended the loop leaves "no start line"
  if (added == 0)
    return common::Error{"TLS client CA '" + path + "': no PEM certificate in the file"};
  return common::Status::Ok();
}

std::string CertificateSummary(SSL_CTX* ctx) {
  X509* cert = SSL_CTX_get0_certificate(ctx);
  if (cert == nullptr) return "";
  char name[256];
  X509_NAME_oneline(X509_get_subject_name(cert), name, sizeof(name));
  std::string summary = name;
  X509_NAME_oneline(X509_get_issuer_name(cert), name, sizeof(name));
  summary += ", issued by ";
  summary += name;
  if (BIO* bio = BIO_new(BIO_s_mem())) {
    if (ASN1_TIME_print(bio, X509_get0_notAfter(cert)) == 1) {
      char* data = nullptr;
      long len = BIO_get_mem_data(bio, &data);  // NOLINT(runtime/int): OpenSSL's type
      summary += ", not after " + std::string(data, static_cast<size_t>(len));
    }
    BIO_free(bio);
  }
  return summary;
}

// Builds a server context from the files' content. Errors name the file and OpenSSL's reason.
common::Result<std::shared_ptr<ssl::context>> BuildTlsContext(const HttpTlsOptions& options,
                                                              const TlsFiles& files) {
  auto ctx = std::make_shared<ssl::context>(ssl::context::tls_server);
  SSL_CTX* handle = ctx->native_handle();
  beast::error_code ec;
  ctx->set_options(ssl::context::default_workarounds | ssl::context::no_compression |
                       ssl::context::single_dh_use,
                   ec);
  SSL_CTX_set_options(handle, SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
  if (SSL_CTX_set_min_proto_version(handle, TLS1_2_VERSION) != 1 ||
      SSL_CTX_set_cipher_list(handle,
                              "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:"
                              "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:"
                              "ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305") != 1) {
    return common::Error{"TLS settings: " + OpenSslError()};
  }
  ctx->use_certificate_chain(asio::buffer(files.cert_chain), ec);
  if (ec) {
    ERR_clear_error();
    return common::Error{"TLS certificate chain '" + options.cert_chain_file +
                         "': cannot load a PEM certificate chain (" + ec.message() + ")"};
  }
  ctx->use_private_key(asio::buffer(files.key), ssl::context::pem, ec);
  if (ec) {
    ERR_clear_error();
    const auto code = static_cast<unsigned long>(ec.value());  // NOLINT(runtime/int)
    if (ERR_GET_LIB(code) == ERR_LIB_X509 && ERR_GET_REASON(code) == X509_R_KEY_VALUES_MISMATCH) {
      return common::Error{"TLS key '" + options.key_file +
                           "' does not match the certificate in '" + options.cert_chain_file + "'"};
    }
    return common::Error{"TLS key '" + options.key_file +
                         "': cannot load an unencrypted PEM key (" + ec.message() + ")"};
  }
  if (SSL_CTX_check_private_key(handle) != 1) {
    return common::Error{"TLS key '" + options.key_file + "' does not match the certificate in '" +
                         options.cert_chain_file + "': " + OpenSslError()};
  }
  if (!options.client_ca_file.empty()) {
    if (common::Status s = AddClientCas(handle, files.client_ca, options.client_ca_file); !s.ok()) {
      return s.error();
    }
    ctx->set_verify_mode(ssl::verify_peer | ssl::verify_fail_if_no_peer_cert, ec);
    // Resumed sessions must belong to this server's verification settings.
    static constexpr unsigned char kSessionContext[] = "taskgov-mtls";
    SSL_CTX_set_session_id_context(handle, kSessionContext, sizeof(kSessionContext) - 1);
  }
  SSL_CTX_set_alpn_select_cb(handle, &SelectAlpn, nullptr);
  return ctx;
}

bool IsPeerGone(const beast::error_code& ec) {
  return ec == http::error::end_of_stream || ec == asio::error::operation_aborted ||
         ec == asio::error::connection_reset || ec == asio::error::eof ||
         ec == asio::error::broken_pipe || ec == ssl::error::stream_truncated;
}

}  // namespace

class HttpServer::Impl {
 public:
  Impl(HttpServerOptions options, std::vector<Route> routes)
      : options_(std::move(options)), ioc_(std::max(1, options_.io_threads)) {
    for (Route& route : routes) routes_[route.path].push_back(std::move(route));
  }

  ~Impl() { Shutdown(std::chrono::milliseconds(0)); }

  common::Status Start();
  void Shutdown(std::chrono::milliseconds drain);
  uint16_t port() const { return port_; }
  common::Status ReloadTls();

  HttpServerStats stats() const {
    HttpServerStats s;
    s.accepted = accepted_.load(std::memory_order_relaxed);
    s.rejected_over_capacity = rejected_.load(std::memory_order_relaxed);
    s.requests = requests_.load(std::memory_order_relaxed);
    s.bad_requests = bad_requests_.load(std::memory_order_relaxed);
    s.timeouts = timeouts_.load(std::memory_order_relaxed);
    s.open_connections = open_.load(std::memory_order_relaxed);
    s.tls_handshake_failures = handshake_failures_.load(std::memory_order_relaxed);
    s.tls_reloads = tls_reloads_.load(std::memory_order_relaxed);
    s.tls_reload_failures = tls_reload_failures_.load(std::memory_order_relaxed);
    return s;
  }

 private:
  class SessionBase;
  template <class Stream>
  class Session;
  friend class SessionBase;

  void Accept();
  void OnAccept(beast::error_code ec, tcp::socket socket);
  void Register(const std::shared_ptr<SessionBase>& session);
  void Unregister(SessionBase* session);
  // Reads the TLS files; at Start any error is returned, later a rejected set is reported once.
  common::Status LoadTls(bool initial);
  void ScheduleTlsCheck();
  std::shared_ptr<ssl::context> CurrentTlsContext() {
    std::lock_guard<std::mutex> lock(tls_ctx_mu_);
    return tls_ctx_;
  }

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
  std::atomic<uint64_t> handshake_failures_{0};
  std::atomic<uint64_t> tls_reloads_{0};
  std::atomic<uint64_t> tls_reload_failures_{0};
  // Release on store, acquire on load: a session that sees `stopping_` also sees the acceptor
  // being closed.
  std::atomic<bool> stopping_{false};
  // Release on store (after Start finished), acquire in ReloadTls: a caller that sees true also
  // sees the loaded TLS state.
  std::atomic<bool> running_{false};

  std::mutex sessions_mu_;
  std::condition_variable sessions_cv_;
  std::unordered_map<SessionBase*, std::weak_ptr<SessionBase>> sessions_;  // by sessions_mu_

  // TLS: reloads are serialised by tls_reload_mu_ (it guards loaded_/rejected_); the context
  // new connections use is swapped under tls_ctx_mu_, held only to copy the pointer. Sessions
  // own a reference to the context they were accepted with.
  std::mutex tls_reload_mu_;
  TlsFiles tls_loaded_;                   // guarded by tls_reload_mu_
  std::optional<TlsFiles> tls_rejected_;  // guarded by tls_reload_mu_
  std::string tls_unreadable_error_;      // guarded by tls_reload_mu_
  std::mutex tls_ctx_mu_;
  std::shared_ptr<ssl::context> tls_ctx_;  // guarded by tls_ctx_mu_

  bool started_ = false;
  bool stopped_ = false;
  std::vector<std::thread> threads_;
  // Declared last among I/O objects' owners: the sockets below are destroyed before the context.
  asio::io_context ioc_;
  std::optional<tcp::acceptor> acceptor_;
  std::optional<asio::steady_timer> accept_retry_;
  std::optional<asio::steady_timer> tls_check_timer_;
};

// What the server needs of a session of either stream type: the registry holds SessionBase.
class HttpServer::Impl::SessionBase {
 public:
  explicit SessionBase(Impl* server) : server_(server) {}
  virtual ~SessionBase() { server_->Unregister(this); }
  // Called from any thread: posts the shutdown notice to the session's strand.
  virtual void PostShutdown() = 0;

 protected:
  Impl* const server_;
};

// One connection; Stream is beast::tcp_stream or beast::ssl_stream<beast::tcp_stream>. Every
// member function runs on the connection's strand.
template <class Stream>
class HttpServer::Impl::Session : public SessionBase,
                                  public std::enable_shared_from_this<Session<Stream>> {
  static constexpr bool kTls = std::is_same_v<Stream, TlsStream>;

 public:
  Session(tcp::socket&& socket, Impl* server, std::shared_ptr<ssl::context> tls_ctx)
      : SessionBase(server), tls_ctx_(std::move(tls_ctx)), stream_(MakeStream(std::move(socket))) {
    beast::error_code ec;
    auto endpoint = Tcp().socket().remote_endpoint(ec);
    if (!ec) peer_ = endpoint.address().to_string() + ":" + std::to_string(endpoint.port());
  }

  void Run() {
    asio::dispatch(stream_.get_executor(), [self = this->shared_from_this()] {
      if constexpr (kTls) {
        self->Handshake();
      } else {
        self->WaitForRequest();
      }
    });
  }

  void PostShutdown() override {
    asio::post(stream_.get_executor(), [self = this->shared_from_this()] { self->OnShutdown(); });
  }

 private:
  Stream MakeStream(tcp::socket&& socket) {
    if constexpr (kTls) {
      return Stream(std::move(socket), *tls_ctx_);
    } else {
      return Stream(std::move(socket));
    }
  }

  beast::tcp_stream& Tcp() { return beast::get_lowest_layer(stream_); }

  // An idle connection closes now; one with a request in flight finishes it first (the reply
  // then carries Connection: close).
  void OnShutdown() {
    if (idle_) Tcp().cancel();  // the pending read completes with operation_aborted → Close
  }

  void Handshake() {
    Tcp().expires_after(server_->options_.header_timeout);
    stream_.async_handshake(
        ssl::stream_base::server,
        [self = this->shared_from_this()](beast::error_code ec) { self->OnHandshake(ec); });
  }

  void OnHandshake(beast::error_code ec) {
    if (ec && server_->stopping_.load(std::memory_order_acquire)) return CloseSocket();
    if (ec) {
      server_->handshake_failures_.fetch_add(1, std::memory_order_relaxed);
      std::string reason = ec == beast::error::timeout ? "handshake deadline passed" : ec.message();
      if constexpr (kTls) {
        const long verify = SSL_get_verify_result(stream_.native_handle());  // NOLINT
        if (verify != X509_V_OK) {
          reason += "; client certificate: ";
          reason += X509_verify_cert_error_string(verify);
        }
      }
      common::log::Warn(kComponent, "TLS handshake failed", {{"error", reason}, {"peer", peer_}});
      return CloseSocket();
    }
    handshake_done_ = true;
    WaitForRequest();
  }

  void WaitForRequest() {
    if (server_->stopping_.load(std::memory_order_acquire)) return Close();
    if (buffer_.size() > 0) return StartRequest();  // a pipelined request is already here
    idle_ = true;
    Tcp().expires_after(server_->options_.idle_timeout);
    stream_.async_read_some(buffer_.prepare(4096),
                            [self = this->shared_from_this()](beast::error_code ec, size_t n) {
                              self->OnFirstBytes(ec, n);
                            });
  }

  void OnFirstBytes(beast::error_code ec, size_t n) {
    if (ec) {
      // An idle keep-alive connection that times out, is closed by the peer or by Shutdown is
      // normal.
      return Close();
    }
    buffer_.commit(n);
    StartRequest();
  }

  void StartRequest() {
    idle_ = false;
    request_start_ = Clock::now();
    method_.clear();
    path_.clear();
    route_ = nullptr;
    request_body_bytes_ = 0;
    header_parser_.emplace();
    header_parser_->header_limit(static_cast<uint32_t>(server_->options_.max_header_bytes));
    // The route's limit is only known once the path is; it is applied in OnHeader. (Not
    // boost::none: Beast 1.74 compares the content length against the optional and fails.)
    header_parser_->body_limit(std::numeric_limits<std::uint64_t>::max());
    const auto& opts = server_->options_;
    Tcp().expires_at(request_start_ + std::min(opts.header_timeout, opts.request_timeout));
    http::async_read_header(
        stream_, buffer_, *header_parser_,
        [self = this->shared_from_this()](beast::error_code ec, size_t) { self->OnHeader(ec); });
  }

  void OnHeader(beast::error_code ec) {
    if (ec) return OnReadError(ec, "header");
    const auto& header = header_parser_->get();
    std::string_view target = header.target();
    std::string_view path = target.substr(0, target.find('?'));
    method_.assign(header.method_string());
    path_.assign(path);
    auto it = server_->routes_.find(path_);
    if (it == server_->routes_.end()) {
      return WriteError(http::status::not_found, "no such endpoint: " + path_);
    }
    std::string allow;
    const Route* route = nullptr;
    for (const Route& candidate : it->second) {
      if (candidate.method == method_) route = &candidate;
      if (!allow.empty()) allow += ", ";
      allow += candidate.method;
    }
    if (route == nullptr) {
      return WriteError(http::status::method_not_allowed,
                        "method " + method_ + " not allowed on " + path_ + "; allowed: " + allow,
                        {{"Allow", allow}});
    }
    route_ = route;
    if (auto length = header_parser_->content_length(); length && *length > route_->body_limit) {
      return OnReadError(http::error::body_limit, "body");
    }
    body_parser_.emplace(std::move(*header_parser_));
    header_parser_.reset();
    body_parser_->body_limit(route_->body_limit);  // enforced while reading chunked bodies
    Tcp().expires_at(request_start_ + server_->options_.request_timeout);
    http::async_read(
        stream_, buffer_, *body_parser_,
        [self = this->shared_from_this()](beast::error_code ec, size_t) { self->OnBody(ec); });
  }

  void OnBody(beast::error_code ec) {
    if (ec) return OnReadError(ec, "body");
    server_->requests_.fetch_add(1, std::memory_order_relaxed);
    http::request<http::string_body> req = body_parser_->release();
    body_parser_.reset();
    HttpRequest request;
    request.method = method_;
    request.path = path_;
    request.body = std::move(req.body());
    request_body_bytes_ = request.body.size();
    HttpResponse response;
    try {
      response = route_->handler(request);
    } catch (const std::exception& e) {
      // Handlers must not throw; a bug here must still not take the connection down silently.
      common::log::Error(kComponent, "handler threw", {{"path", request.path}, {"what", e.what()}});
      response = HttpResponse{500, "application/json", "{\"Error\":\"internal error\"}", {}};
    }
    const bool keep_alive = req.keep_alive() && !server_->stopping_.load(std::memory_order_acquire);
    Write(std::move(response), keep_alive);
  }

  void OnReadError(beast::error_code ec, std::string_view stage) {
    if (IsPeerGone(ec)) return Close();
    if (ec == beast::error::timeout) {
      server_->timeouts_.fetch_add(1, std::memory_order_relaxed);
      common::log::Warn(kComponent, "request deadline passed; connection closed",
                        {{"stage", stage}, {"peer", peer_}});
      return Close();  // Nothing sensible can be written to a client that stopped sending.
    }
    if (ec.category() == asio::error::get_ssl_category()) {
      common::log::Warn(kComponent, "TLS error; connection closed",
                        {{"stage", stage}, {"error", ec.message()}, {"peer", peer_}});
      return CloseSocket();  // the TLS stream is unusable: not even close_notify can be sent
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
      common::log::Warn(
          kComponent, "bad request",
          {{"status", static_cast<int>(status)}, {"error", message}, {"peer", peer_}});
    }
    route_ = nullptr;  // for the observer: no route handled it
    std::string body = "{\"Error\":\"";
    common::log::AppendJsonEscaped(message, &body);
    body += "\"}";
    HttpResponse response{static_cast<int>(status), "application/json", std::move(body),
                          std::move(headers)};
    Write(std::move(response), /*keep_alive=*/false);
  }

  void Write(HttpResponse response, bool keep_alive) {
    auto res = std::make_shared<http::response<http::string_body>>();
    // A status outside 200..599 is a handler bug: answer 500 rather than send nonsense. Statuses
    // that may carry no body (204, 304) lose it, which Beast would otherwise throw on.
    if (response.status < 200 || response.status > 599) {
      common::log::Error(kComponent, "handler returned an invalid status; answering 500",
                         {{"status", response.status}});
      response.status = 500;
      response.body = "{\"Error\":\"internal error\"}";
      response.outcome = {};
    }
    outcome_ = response.outcome;
    if (response.status == 204 || response.status == 304) response.body.clear();
    res->result(static_cast<unsigned>(response.status));
    res->version(11);
    res->set(http::field::server, server_->options_.server_name);
    res->set(http::field::content_type, response.content_type);
    for (auto& [name, value] : response.headers) res->set(name, value);
    res->keep_alive(keep_alive);
    res->body() = std::move(response.body);
    res->prepare_payload();  // Content-Length, never chunked.
    Tcp().expires_after(server_->options_.request_timeout);
    http::async_write(
        stream_, *res,
        [self = this->shared_from_this(), res, keep_alive](beast::error_code ec, size_t) {
          if (self->server_->options_.observer) self->Observe(*res, !ec);
          if (ec || !keep_alive) return self->Close();
          self->WaitForRequest();
        });
  }

  void Observe(const http::response<http::string_body>& res, bool sent) {
    RequestObservation observation;
    observation.method = method_;
    observation.path = path_;
    observation.route_matched = route_ != nullptr;
    observation.status = static_cast<int>(res.result_int());
    observation.duration = Clock::now() - request_start_;
    observation.request_body_bytes = request_body_bytes_;
    observation.response_body_bytes = res.body().size();
    observation.reply_sent = sent;
    observation.tls = kTls;
    observation.outcome = outcome_;
    try {
      server_->options_.observer(observation);
    } catch (const std::exception& e) {
      common::log::Error(kComponent, "request observer threw", {{"what", e.what()}});
    }
  }

  // Ends the connection: TLS sends close_notify first (without waiting for the peer's, as Go's
  // server does), then the socket is closed.
  void Close() {
    if constexpr (kTls) {
      if (handshake_done_ && !closing_) {
        closing_ = true;
        // Marking the peer's close_notify as received makes SSL_shutdown complete once ours is
        // written, instead of reading until the peer answers.
        SSL_set_shutdown(stream_.native_handle(), SSL_RECEIVED_SHUTDOWN);
        Tcp().expires_after(
            std::min(server_->options_.header_timeout, std::chrono::milliseconds(1'000)));
        stream_.async_shutdown(
            [self = this->shared_from_this()](beast::error_code) { self->CloseSocket(); });
        return;
      }
    }
    CloseSocket();
  }

  void CloseSocket() {
    beast::error_code ec;
    Tcp().socket().shutdown(tcp::socket::shutdown_send, ec);
    Tcp().socket().close(ec);
  }

  // Declared before stream_: the stream refers to the context.
  std::shared_ptr<ssl::context> tls_ctx_;
  Stream stream_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::empty_body>> header_parser_;
  std::optional<http::request_parser<http::string_body>> body_parser_;
  const Route* route_ = nullptr;  // the route handling the current request, if any
  std::string_view outcome_;      // the current reply's HttpResponse::outcome
  std::string method_;            // of the current request
  std::string path_;              // of the current request, without the query
  uint64_t request_body_bytes_ = 0;
  Clock::time_point request_start_;
  bool idle_ = true;  // waiting for the first byte of a request
  bool handshake_done_ = false;
  bool closing_ = false;
  std::string peer_ = "unknown";
};

common::Status HttpServer::Impl::LoadTls(bool initial) {
  const HttpTlsOptions& tls = *options_.tls;
  std::lock_guard<std::mutex> lock(tls_reload_mu_);
  common::Result<TlsFiles> files = ReadTlsFiles(tls);
  common::Result<std::shared_ptr<ssl::context>> ctx = common::Error{""};
  if (files.ok()) {
    if (!initial && *files == tls_loaded_) return common::Status::Ok();
    ctx = BuildTlsContext(tls, *files);
  } else {
    ctx = files.error();
  }
  if (initial) {
    if (!ctx.ok()) return ctx.error();
  } else if (!ctx.ok()) {
    // Each distinct rejected content (or, for unreadable files, each distinct error) is
    // reported once, not on every check.
    const bool seen =
        files.ok() ? tls_rejected_ == *files : tls_unreadable_error_ == files.error().message;
    if (files.ok()) {
      tls_rejected_ = *files;
      tls_unreadable_error_.clear();
    } else {
      tls_unreadable_error_ = files.error().message;
    }
    if (!seen) {
      tls_reload_failures_.fetch_add(1, std::memory_order_relaxed);
      common::log::Error(kComponent,
                         "new TLS files rejected; still serving the previous certificate",
                         {{"error", ctx.error().message}});
      if (tls.on_reload) tls.on_reload(ctx.error());
    }
    return ctx.error();
  }
  tls_loaded_ = std::move(*files);
  tls_rejected_.reset();
  tls_unreadable_error_.clear();
  const std::string summary = CertificateSummary((*ctx)->native_handle());
  {
    std::lock_guard<std::mutex> ctx_lock(tls_ctx_mu_);
    tls_ctx_ = std::move(*ctx);
  }
  common::log::Info(kComponent, initial ? "TLS certificate loaded" : "TLS certificate reloaded",
                    {{"certificate", summary},
                     {"client_ca", tls.client_ca_file.empty() ? "none (no client certificates)"
                                                              : tls.client_ca_file}});
  if (!initial) {
    tls_reloads_.fetch_add(1, std::memory_order_relaxed);
    if (tls.on_reload) tls.on_reload(common::Status::Ok());
  }
  return common::Status::Ok();
}

common::Status HttpServer::Impl::ReloadTls() {
  if (!options_.tls) return common::Error{"this server has no TLS"};
  if (!running_.load(std::memory_order_acquire)) return common::Error{"server not running"};
  return LoadTls(/*initial=*/false);
}

void HttpServer::Impl::ScheduleTlsCheck() {
  tls_check_timer_->expires_after(options_.tls->reload_interval);
  tls_check_timer_->async_wait([this](beast::error_code ec) {
    if (ec || stopping_.load(std::memory_order_acquire)) return;
    (void)LoadTls(/*initial=*/false);  // reported inside
    ScheduleTlsCheck();
  });
}

common::Status HttpServer::Impl::Start() {
  if (started_) return common::Error{"server already started"};
  if (options_.tls) {
    if (common::Status s = LoadTls(/*initial=*/true); !s.ok()) return s;
  }
  beast::error_code ec;
  auto address = asio::ip::make_address(options_.address, ec);
  if (ec)
    return common::Error{"invalid listen address '" + options_.address + "': " + ec.message()};
  tcp::endpoint endpoint(address, options_.port);
  const std::string where = options_.address + ":" + std::to_string(options_.port);
  acceptor_.emplace(asio::make_strand(ioc_));
  acceptor_->open(endpoint.protocol(), ec);
  if (ec) return common::Error{"cannot open socket for " + where + ": " + ec.message()};
  acceptor_->set_option(asio::socket_base::reuse_address(true), ec);
  acceptor_->bind(endpoint, ec);
  if (ec) return common::Error{"cannot bind " + where + ": " + ec.message()};
  acceptor_->listen(asio::socket_base::max_listen_connections, ec);
  if (ec) return common::Error{"cannot listen on " + where + ": " + ec.message()};
  port_ = acceptor_->local_endpoint().port();
  accept_retry_.emplace(acceptor_->get_executor());
  started_ = true;
  Accept();
  if (options_.tls && options_.tls->reload_interval.count() > 0) {
    tls_check_timer_.emplace(asio::make_strand(ioc_));
    ScheduleTlsCheck();
  }
  for (int i = 0; i < std::max(1, options_.io_threads); ++i) {
    threads_.emplace_back([this] { ioc_.run(); });
  }
  running_.store(true, std::memory_order_release);
  return common::Status::Ok();
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
    common::log::Warn(kComponent, "accept failed", {{"error", ec.message()}});
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
    if (options_.tls) {
      auto session =
          std::make_shared<Session<TlsStream>>(std::move(socket), this, CurrentTlsContext());
      Register(session);
      session->Run();
    } else {
      auto session = std::make_shared<Session<beast::tcp_stream>>(std::move(socket), this, nullptr);
      Register(session);
      session->Run();
    }
  }
  Accept();
}

void HttpServer::Impl::Register(const std::shared_ptr<SessionBase>& session) {
  std::lock_guard<std::mutex> lock(sessions_mu_);
  sessions_.emplace(session.get(), session);
  open_.fetch_add(1, std::memory_order_relaxed);
}

void HttpServer::Impl::Unregister(SessionBase* session) {
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
  if (tls_check_timer_) {
    asio::post(tls_check_timer_->get_executor(), [this] { tls_check_timer_->cancel(); });
  }
  std::vector<std::shared_ptr<SessionBase>> live;
  {
    std::lock_guard<std::mutex> lock(sessions_mu_);
    for (auto& [raw, weak] : sessions_) {
      if (auto session = weak.lock()) live.push_back(std::move(session));
    }
  }
  // Posted outside the lock: dropping the last reference runs ~Session, which takes the lock.
  for (auto& session : live) session->PostShutdown();
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
common::Status HttpServer::Start() { return impl_->Start(); }
uint16_t HttpServer::port() const { return impl_->port(); }
void HttpServer::Shutdown(std::chrono::milliseconds drain) { impl_->Shutdown(drain); }
HttpServerStats HttpServer::stats() const { return impl_->stats(); }
common::Status HttpServer::ReloadTls() { return impl_->ReloadTls(); }

}  // namespace taskgov::extender
