#include "extender/http_server.h"

#include <sys/resource.h>
#include <unistd.h>

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/write.hpp>
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
#include <functional>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <type_traits>
#include <unordered_map>

#include "extender/log_throttle.h"
#include "extender/request_parser.h"
#include "scheduler/common/log.h"

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
  if (options.cert_chain_file.empty()) {  // made in memory
    files.cert_chain = options.cert_chain_pem;
    files.key = options.key_pem;
    return files;
  }
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

// What an operator reads, at most once per reason per 10 s, when a listener refuses or cuts off
// connections (indexed by metrics::HttpRefusal).
constexpr std::array<std::string_view, metrics::kHttpRefusals.size()> kRefusalLogLines = {
    "connection cap reached with every connection in a request; new connections answered 503",
    "connection cap reached; the longest-idle connections closed to make room",
    "connections closed: no complete request header within the header timeout",
    "connections closed: request not received, or reply not taken, within the request timeout",
    "in-flight body budget exhausted; requests answered 503",
};

}  // namespace

class HttpServer::Impl {
 public:
  Impl(HttpServerOptions options, std::vector<Route> routes)
      : options_(std::move(options)), ioc_(std::max(1, options_.io_threads)) {
    for (Route& route : routes) {
      std::vector<Route>& same_path =
          route.prefix ? prefix_routes_[route.path] : routes_[route.path];
      same_path.push_back(std::move(route));
    }
  }

  // The routes of `path`: exact, else the longest prefix route; null when none.
  const std::vector<Route>* FindRoutes(const std::string& path) const {
    if (auto it = routes_.find(path); it != routes_.end()) return &it->second;
    const std::vector<Route>* best = nullptr;
    size_t best_length = 0;
    for (const auto& [prefix, candidates] : prefix_routes_) {
      if (prefix.size() >= best_length && path.compare(0, prefix.size(), prefix) == 0) {
        best = &candidates;
        best_length = prefix.size();
      }
    }
    return best;
  }

  ~Impl() { Shutdown(std::chrono::milliseconds(0)); }

  common::Status Start();
  void Shutdown(std::chrono::milliseconds drain);
  uint16_t port() const { return port_; }
  common::Status ReloadTls();

  HttpServerStats stats() const {
    HttpServerStats s;
    s.accepted = accepted_.load(std::memory_order_relaxed);
    s.requests = requests_.load(std::memory_order_relaxed);
    s.bad_requests = bad_requests_.load(std::memory_order_relaxed);
    s.open_connections = open_.load(std::memory_order_relaxed);
    for (size_t i = 0; i < s.refused.size(); ++i) {
      s.refused[i] = refused_[i].load(std::memory_order_relaxed);
    }
    s.timeouts = s.refused_for(metrics::HttpRefusal::kHeaderTimeout) +
                 s.refused_for(metrics::HttpRefusal::kRequestTimeout);
    s.inflight_body_bytes = inflight_body_bytes_.load(std::memory_order_relaxed);
    s.body_budget_waits = body_budget_waits_.load(std::memory_order_relaxed);
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
  // At the cap: closes the connection idle the longest; false when none is idle.
  bool EvictOldestIdle();
  template <class Stream>
  void StartSession(tcp::socket socket, bool refusing);
  // Counts a refusal and logs it, at most once per reason per 10 s.
  void NoteRefusal(metrics::HttpRefusal reason, std::string_view peer);
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
  std::map<std::string, std::vector<Route>> prefix_routes_;  // few: scanned
  uint16_t port_ = 0;

  // Relaxed counters: statistics only, they order nothing.
  std::atomic<uint64_t> accepted_{0};
  std::atomic<uint64_t> requests_{0};
  std::atomic<uint64_t> bad_requests_{0};
  std::array<std::atomic<uint64_t>, metrics::kHttpRefusals.size()> refused_{};
  std::array<LogThrottle, metrics::kHttpRefusals.size()> refusal_logs_;
  std::atomic<uint64_t> inflight_body_bytes_{0};
  std::atomic<uint64_t> body_budget_waits_{0};
  std::atomic<uint64_t> open_{0};
  std::atomic<uint64_t> refusing_{0};  // of open_: accepted over the cap, to be answered 503
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
  // Values of idle_since_ besides a time (steady-clock ticks, > 0).
  static constexpr int64_t kBusy = 0;      // a request's header is complete: not evictable
  static constexpr int64_t kEvicted = -1;  // chosen for eviction at the cap: closing

  SessionBase(Impl* server, bool refusing)
      : server_(server), refusing_(refusing), idle_since_(refusing ? kBusy : NowTicks()) {}
  virtual ~SessionBase() { server_->Unregister(this); }
  // Called from any thread: posts the shutdown notice to the session's strand.
  virtual void PostShutdown() = 0;
  // Called from any thread by the acceptor once it claimed the session (idle_since_ = kEvicted):
  // posts the close to the session's strand.
  virtual void PostEvict() = 0;

  bool refusing() const { return refusing_; }
  // The time the session became idle, or kBusy / kEvicted. For the acceptor's scan.
  int64_t idle_since() const { return idle_since_.load(std::memory_order_relaxed); }
  // The acceptor's claim: true when the session was idle since `since` and is now kEvicted.
  bool ClaimForEviction(int64_t since) {
    return idle_since_.compare_exchange_strong(since, kEvicted, std::memory_order_relaxed);
  }

 protected:
  static int64_t NowTicks() {
    return std::max<int64_t>(1, Clock::now().time_since_epoch().count());
  }
  // The header is complete: the session is busy. False when the acceptor claimed it first.
  bool MarkBusy() { return idle_since_.exchange(kBusy, std::memory_order_relaxed) != kEvicted; }
  void MarkIdle() { idle_since_.store(NowTicks(), std::memory_order_relaxed); }
  bool evicted() const { return idle_since_.load(std::memory_order_relaxed) == kEvicted; }

  Impl* const server_;
  // Accepted over the cap: reads one request header and answers 503.
  const bool refusing_;

 private:
  // Relaxed everywhere: a protocol on this one variable (the session stores times and kBusy; the
  // acceptor only swaps a time for kEvicted), whose modification order alone decides who wins;
  // the close itself is posted to the session's strand, which orders everything else.
  std::atomic<int64_t> idle_since_;
};

// One connection; Stream is beast::tcp_stream or beast::ssl_stream<beast::tcp_stream>. Every
// member function runs on the connection's strand.
template <class Stream>
class HttpServer::Impl::Session : public SessionBase,
                                  public std::enable_shared_from_this<Session<Stream>> {
  static constexpr bool kTls = std::is_same_v<Stream, TlsStream>;
  // Bodies and replies up to this size are read and written by non-blocking calls first
  // (ReadAvailable, WriteNow): a webhook's NodeNames request and reply are ~10 KB. Larger ones
  // go by asynchronous operations only, whose steps interleave with the other connections': a
  // 6 MB NodeList read and answered inline raised the p99 of 8 connections sending them from
  // ~120 ms to 300-600 ms (tools/bench, filter-nodes).
  static constexpr size_t kInlineIoBytes = 256 * 1024;

 public:
  Session(tcp::socket&& socket, Impl* server, std::shared_ptr<ssl::context> tls_ctx, bool refusing)
      : SessionBase(server, refusing),
        tls_ctx_(std::move(tls_ctx)),
        stream_(MakeStream(std::move(socket))),
        accepted_at_(Clock::now()) {
    beast::error_code ec;
    auto endpoint = Tcp().socket().remote_endpoint(ec);
    if (!ec) peer_ = endpoint.address().to_string() + ":" + std::to_string(endpoint.port());
    if constexpr (!kTls) {
      // Synchronous reads and writes on the socket (ReadAvailable, WriteNow) return at once
      // instead of waiting; the asynchronous operations are not affected.
      beast::error_code nb_ec;
      Tcp().socket().non_blocking(true, nb_ec);
      nonblocking_ = !nb_ec;
    }
    if (Options().send_buffer_bytes > 0) {
      beast::error_code buffer_ec;  // a size the kernel refuses leaves its own
      Tcp().socket().set_option(asio::socket_base::send_buffer_size(Options().send_buffer_bytes),
                                buffer_ec);
    }
    chunk_body_ = [this](std::uint64_t, beast::string_view piece, beast::error_code& chunk_ec) {
      return OnChunkBody(piece, chunk_ec);
    };
  }

  ~Session() override { ReleaseBody(); }

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

  void PostEvict() override {
    // The pending read (or handshake) completes with operation_aborted, and the session closes.
    asio::post(stream_.get_executor(), [self = this->shared_from_this()] { self->Tcp().cancel(); });
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
  const HttpServerOptions& Options() const { return server_->options_; }

  // An idle connection closes now; one with a request in flight finishes it first (the reply
  // then carries Connection: close).
  void OnShutdown() {
    if (idle_) Tcp().cancel();  // the pending read completes with operation_aborted → Close
  }

  // The deadline of the header being read: a new connection's first header (and TLS handshake)
  // counts from accept, a kept-alive connection's from the request's first byte.
  Clock::time_point HeaderDeadline() const {
    return (served_one_ ? request_start_ : accepted_at_) + Options().header_timeout;
  }

  void Handshake() {
    Tcp().expires_at(accepted_at_ + Options().header_timeout);
    stream_.async_handshake(
        ssl::stream_base::server,
        [self = this->shared_from_this()](beast::error_code ec) { self->OnHandshake(ec); });
  }

  void OnHandshake(beast::error_code ec) {
    if (ec && (server_->stopping_.load(std::memory_order_acquire) || evicted())) {
      return CloseSocket();
    }
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
      if (ec == beast::error::timeout) {
        server_->NoteRefusal(metrics::HttpRefusal::kHeaderTimeout, peer_);
      } else {
        common::log::Warn(kComponent, "TLS handshake failed",
                          {{"listener", Options().listener}, {"error", reason}, {"peer", peer_}});
      }
      return CloseSocket();
    }
    handshake_done_ = true;
    WaitForRequest();
  }

  void WaitForRequest() {
    if (server_->stopping_.load(std::memory_order_acquire)) return Close();
    if (buffer_.size() > 0) {
      // A pipelined request is already here. Posted, not called: a request can complete
      // inline (ParseBufferedHeader, ReadAvailable, WriteNow), and a client pipelining many
      // must not deepen the stack by one request each.
      asio::post(stream_.get_executor(),
                 [self = this->shared_from_this()] { self->StartRequest(); });
      return;
    }
    idle_ = true;
    Tcp().expires_never();  // the wait is timed by WatchIdle, not per read
    WatchIdle(served_one_ ? Clock::now() + Options().idle_timeout : HeaderDeadline());
    stream_.async_read_some(buffer_.prepare(4096),
                            [self = this->shared_from_this()](beast::error_code ec, size_t n) {
                              self->OnFirstBytes(ec, n);
                            });
  }

  // Times the wait for a request's first byte: the connection closes at `deadline` unless bytes
  // came first. One timer per connection, re-armed only when a deadline comes earlier than its
  // expiry or when it fires early (then at the current deadline): a kept-alive connection's
  // waits cost no timer operation each, where the stream's own deadline would arm and cancel
  // one per wait (a reactor round and a scheduler round that wakes another I/O thread).
  void WatchIdle(Clock::time_point deadline) {
    idle_deadline_ = deadline;
    if (!idle_timer_) idle_timer_.emplace(stream_.get_executor());
    if (idle_timer_armed_ && idle_timer_->expiry() <= deadline) return;
    idle_timer_armed_ = true;
    idle_timer_->expires_at(deadline);  // a wait pending completes with operation_aborted
    // A weak reference: the timer must not keep a closed connection alive until it fires.
    idle_timer_->async_wait([weak = this->weak_from_this()](beast::error_code ec) {
      if (auto self = weak.lock(); self && !ec) self->OnIdleTimer();
    });
  }

  void OnIdleTimer() {
    idle_timer_armed_ = false;
    if (!idle_) return;  // in a request: its reads and writes have deadlines of their own
    if (Clock::now() < idle_deadline_) return WatchIdle(idle_deadline_);
    idle_timed_out_ = true;
    Tcp().close();  // the pending read completes with an error: OnFirstBytes
  }

  void OnFirstBytes(beast::error_code ec, size_t n) {
    if (idle_timed_out_) ec = beast::error::timeout;  // even if bytes came at the deadline
    if (ec) {
      // A new connection that sent nothing by its header deadline is counted; an idle
      // keep-alive connection that times out, is closed by the peer, evicted or shut down is
      // normal.
      if (ec == beast::error::timeout && !served_one_) {
        server_->NoteRefusal(metrics::HttpRefusal::kHeaderTimeout, peer_);
      }
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
    path_known_ = false;
    expect_continue_ = false;
    budget_exceeded_at_ = 0;
    request_body_bytes_ = 0;
    StartHeaderParser(Options().max_header_bytes, &header_parser_);
    Tcp().expires_at(std::min(HeaderDeadline(), request_start_ + Options().request_timeout));
    if (beast::error_code ec; ParseBufferedHeader(&ec)) return OnHeader(ec);
    http::async_read_header(
        stream_, buffer_, *header_parser_,
        [self = this->shared_from_this()](beast::error_code ec, size_t) { self->OnHeader(ec); });
  }

  // Feeds what is already buffered to the header parser, as Beast's read does first, but without
  // its round through the scheduler (a post, and a wake of another I/O thread). True when that
  // settled the header: complete, or *ec says why not; false when more bytes are needed.
  bool ParseBufferedHeader(beast::error_code* ec) {
    if (buffer_.size() == 0) return false;
    const size_t used = header_parser_->put(buffer_.data(), *ec);
    buffer_.consume(used);
    return *ec != http::error::need_more;
  }

  void OnHeader(beast::error_code ec) {
    if (ec) return OnReadError(ec, "header");
    if (!MarkBusy()) return Close();  // chosen for eviction as the header completed
    const auto& header = header_parser_->get();
    std::string_view target = header.target();
    method_.assign(header.method_string());
    const size_t question = target.find('?');
    path_.assign(target.substr(0, question));
    query_.assign(question == std::string_view::npos ? std::string_view()
                                                     : target.substr(question + 1));
    authorization_.assign(header[http::field::authorization]);
    // Behind the API server's service proxy (which keeps Authorization for itself) the caller's
    // token comes in a header of its own.
    if (authorization_.empty()) authorization_.assign(header[kForwardedAuthorization]);
    const std::vector<Route>* candidates = server_->FindRoutes(path_);
    path_known_ = candidates != nullptr;
    if (refusing_) {
      server_->NoteRefusal(metrics::HttpRefusal::kCap, peer_);
      return WriteError(http::status::service_unavailable,
                        "the " + Options().listener + " listener is at its connection limit of " +
                            std::to_string(Options().max_connections) +
                            " with every connection in a request; retry",
                        {{"Retry-After", "1"}});
    }
    if (std::optional<ServerError> e = CheckFraming(header, &expect_continue_)) {
      return WriteError(e->status, e->message, std::move(e->headers));
    }
    if (!path_known_) return WriteError(http::status::not_found, "no such endpoint: " + path_);
    route_ = MatchMethod(*candidates);
    if (route_ == nullptr) return;  // 405 written
    if (DeclaresTooLargeBody(*header_parser_, route_->body_limit)) {
      return OnReadError(http::error::body_limit, "body");
    }
    ReserveBody(header_parser_->content_length().value_or(0));
  }

  // The route among `candidates` (same path) with the request's method; else writes 405 and
  // returns null.
  const Route* MatchMethod(const std::vector<Route>& candidates) {
    std::string allow;
    for (const Route& candidate : candidates) {
      if (candidate.method == method_) return &candidate;
      if (!allow.empty()) allow += ", ";
      allow += candidate.method;
    }
    WriteError(http::status::method_not_allowed,
               "method " + method_ + " not allowed on " + path_ + "; allowed: " + allow,
               {{"Allow", allow}});
    return nullptr;
  }

  // The body budget is reserved as the body arrives (kBodyStep at a time, just before each step
  // is read), never on the declared Content-Length alone: a client that declares 64 MiB and
  // trickles a byte holds 64 KiB of the budget, not 64 MiB. A step that does not fit waits up to
  // body_budget_wait for room, then is answered 503. The first step is reserved before the
  // body is read (and before `100 Continue`); chunked bodies reserve each piece as it arrives.
  static constexpr uint64_t kBodyStep = 64 * 1024;
  enum class AfterBudget { kReadBody, kNextFixedStep };

  void ReserveBody(uint64_t length) {
    declared_length_ = length;
    ReserveThen(std::min(length, kBodyStep), AfterBudget::kReadBody);
  }

  void ReserveThen(uint64_t bytes, AfterBudget next) {
    if (bytes == 0 || TryReserve(bytes)) return Continue(next);
    const BodyBudget& budget = *Options().body_budget;
    if (reserved_ + bytes > budget.limit()) return RefuseForBudget(declared_length_);  // never
    server_->body_budget_waits_.fetch_add(1, std::memory_order_relaxed);
    budget_wait_until_ = std::min(Clock::now() + Options().body_budget_wait,
                                  request_start_ + Options().request_timeout);
    WaitForBudget(bytes, next);
  }

  void Continue(AfterBudget next) {
    if (next == AfterBudget::kReadBody) return ReadBody();
    ReadFixedStep();
  }

  void WaitForBudget(uint64_t bytes, AfterBudget next) {
    if (!budget_timer_) budget_timer_.emplace(stream_.get_executor());
    budget_timer_->expires_after(kBudgetPoll);
    budget_timer_->async_wait([self = this->shared_from_this(), bytes, next](beast::error_code) {
      if (self->TryReserve(bytes)) return self->Continue(next);
      if (self->server_->stopping_.load(std::memory_order_acquire) ||
          Clock::now() >= self->budget_wait_until_) {
        return self->RefuseForBudget(self->declared_length_);
      }
      self->WaitForBudget(bytes, next);
    });
  }

  bool TryReserve(uint64_t bytes) {
    const std::shared_ptr<BodyBudget>& budget = Options().body_budget;
    if (budget == nullptr) return true;
    if (!budget->TryReserve(bytes)) return false;
    reserved_ += bytes;
    server_->inflight_body_bytes_.fetch_add(bytes, std::memory_order_relaxed);
    return true;
  }

  void ReleaseBody() {
    if (reserved_ == 0) return;
    Options().body_budget->Release(reserved_);
    server_->inflight_body_bytes_.fetch_sub(reserved_, std::memory_order_relaxed);
    reserved_ = 0;
  }

  // A piece of a chunked body as the parser delivers it: reserved, then kept. A piece that does
  // not fit stops the read (answered 503 at once: OnReadError); one beyond the route's limit is
  // left to the parser's body limit (413).
  size_t OnChunkBody(beast::string_view piece, beast::error_code& ec) {
    if (Options().body_budget != nullptr && !TryReserve(piece.size())) {
      budget_exceeded_at_ = reserved_ + piece.size();
      ec = asio::error::no_buffer_space;
      return 0;
    }
    chunked_body_.append(piece.data(), piece.size());
    return piece.size();
  }

  void RefuseForBudget(uint64_t length) {
    server_->NoteRefusal(metrics::HttpRefusal::kBodyBudget, peer_);
    const BodyBudget& budget = *Options().body_budget;
    WriteError(http::status::service_unavailable,
               "request body of " + std::to_string(length) +
                   " bytes does not fit the in-flight body budget (" +
                   std::to_string(budget.in_use()) + " of " + std::to_string(budget.limit()) +
                   " bytes held by requests in flight); retry",
               {{"Retry-After", "1"}});
  }

  // The request is accepted: answers `100 Continue` if asked, then reads the body.
  void ReadBody() {
    if (!StartBodyParser(route_->body_limit, &header_parser_, &body_parser_)) {
      return OnReadError(http::error::body_limit, "body");  // OnHeader refused it already
    }
    body_parser_->on_chunk_body(chunk_body_);
    chunked_body_.clear();
    Tcp().expires_at(BodyDeadline());
    if (!expect_continue_) return ReadBodyBytes();
    static constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
    asio::async_write(stream_, asio::buffer(kContinue.data(), kContinue.size()),
                      [self = this->shared_from_this()](beast::error_code ec, size_t) {
                        if (ec) return self->OnReadError(ec, "100-continue");
                        self->ReadBodyBytes();
                      });
  }

  void ReadBodyBytes() {
    if (const auto length = body_parser_->content_length(); length && !body_parser_->chunked()) {
      return ReadFixedBody(*length);
    }
    if (body_parser_->is_done()) return OnBody({});  // no body at all
    ReadChunkedSome();
  }

  // The deadline of the body's next read: the request's, and no more than body_progress_timeout
  // from now (a body that stops arriving is cut off then, however long the request may take).
  Clock::time_point BodyDeadline() const {
    return std::min(request_start_ + Options().request_timeout,
                    Clock::now() + Options().body_progress_timeout);
  }

  // A chunked body, read as it arrives, each read under BodyDeadline.
  void ReadChunkedSome() {
    Tcp().expires_at(BodyDeadline());
    http::async_read_some(stream_, buffer_, *body_parser_,
                          [self = this->shared_from_this()](beast::error_code ec, size_t) {
                            if (ec || self->body_parser_->is_done()) return self->OnBody(ec);
                            self->ReadChunkedSome();
                          });
  }

  // A body of declared length (the webhooks' case): read straight into its string, a step of
  // at most kBodyStep at a time (its budget reserved first), not through the parser's steps and
  // a copy. The string grows with the body, so a declared length costs no memory in advance.
  void ReadFixedBody(uint64_t length) {
    fixed_length_ = length;
    fixed_body_.clear();
    fixed_body_.reserve(std::min<uint64_t>(length, kInlineIoBytes));
    ReadFixedStep();
  }

  // Reads the next step (its budget reserved).
  void ReadFixedStep() {
    const size_t have = fixed_body_.size();
    const size_t step = static_cast<size_t>(std::min<uint64_t>(kBodyStep, fixed_length_ - have));
    fixed_body_.resize(have + step);
    char* at = fixed_body_.data() + have;
    size_t got = asio::buffer_copy(asio::buffer(at, step), buffer_.data());
    buffer_.consume(got);
    beast::error_code ec;
    if (fixed_length_ <= kInlineIoBytes)
      got += ReadAvailable(asio::buffer(at + got, step - got), &ec);
    if (ec || got == step) return OnFixedStep(ec);
    Tcp().expires_at(BodyDeadline());
    asio::async_read(
        stream_, asio::buffer(at + got, step - got),
        [self = this->shared_from_this()](beast::error_code ec, size_t) { self->OnFixedStep(ec); });
  }

  void OnFixedStep(beast::error_code ec) {
    if (ec || fixed_body_.size() == fixed_length_) return OnFixedBody(ec);
    ReserveThen(std::min<uint64_t>(kBodyStep, fixed_length_ - fixed_body_.size()),
                AfterBudget::kNextFixedStep);
  }

  // Plain TCP: reads what the socket already holds into `buffer`, without waiting (the rest comes
  // by an asynchronous read, under the request's deadline). A read that needs no wait costs one
  // system call instead of a reactor operation, its deadline timer and two scheduler rounds.
  // Sets *ec only for a real failure (as the asynchronous read would report it); TLS: reads
  // nothing.
  size_t ReadAvailable(asio::mutable_buffer buffer, beast::error_code* ec) {
    if constexpr (kTls) {
      return 0;
    } else {
      if (!nonblocking_) return 0;
      size_t n = 0;
      while (buffer.size() > 0) {
        const size_t got = Tcp().socket().read_some(buffer, *ec);  // see the constructor
        n += got;
        buffer += got;
        if (*ec) break;
      }
      if (*ec == asio::error::would_block || *ec == asio::error::try_again) *ec = {};
      return n;
    }
  }

  void OnFixedBody(beast::error_code ec) {
    if (ec) return OnReadError(ec == asio::error::eof ? http::error::partial_message : ec, "body");
    const bool keep_alive = body_parser_->get().keep_alive();
    body_parser_.reset();
    Dispatch(std::move(fixed_body_), keep_alive);
  }

  void OnBody(beast::error_code ec) {
    if (ec) return OnReadError(ec, "body");
    const bool keep_alive = body_parser_->get().keep_alive();
    body_parser_.reset();
    Dispatch(std::move(chunked_body_), keep_alive);  // the pieces OnChunkBody kept
  }

  // The request whole: the route's handler answers it.
  void Dispatch(std::string body, bool request_keep_alive) {
    server_->requests_.fetch_add(1, std::memory_order_relaxed);
    HttpRequest request;
    request.method = method_;
    request.path = path_;
    request.query = query_;
    request.authorization = authorization_;
    request.body = std::move(body);
    request.peer_address = peer_.substr(0, peer_.rfind(':'));
    request_body_bytes_ = request.body.size();
    if (route_->async_handler) return DispatchAsync(std::move(request), request_keep_alive);
    HttpResponse response;
    try {
      response = route_->handler(request);
    } catch (const std::exception& e) {
      // Handlers must not throw; a bug here must still not take the connection down silently.
      common::log::Error(kComponent, "handler threw", {{"path", request.path}, {"what", e.what()}});
      response = HttpResponse{500, "application/json", "{\"Error\":\"internal error\"}", {}};
    }
    std::string().swap(request.body);  // the body's memory goes before its reservation does
    ReleaseBody();
    const bool keep_alive =
        request_keep_alive && !server_->stopping_.load(std::memory_order_acquire);
    Write(std::move(response), keep_alive);
  }

  // An asynchronous route: the handler answers through a Responder that brings the reply back to
  // this connection's strand (the session lives until it does).
  void DispatchAsync(HttpRequest request, bool request_keep_alive) {
    auto self = this->shared_from_this();
    auto answered = std::make_shared<std::atomic<bool>>(false);
    Responder respond = [self, answered, request_keep_alive](std::function<HttpResponse()> make) {
      if (answered->exchange(true, std::memory_order_relaxed)) return;  // once; relaxed: a flag
      asio::post(self->stream_.get_executor(), [self, request_keep_alive, make = std::move(make)] {
        HttpResponse response;
        try {
          response = make();
        } catch (const std::exception& e) {
          common::log::Error(kComponent, "handler threw",
                             {{"path", self->path_}, {"what", e.what()}});
          response = HttpResponse{500, "application/json", "{\"Error\":\"internal error\"}", {}};
        }
        const bool keep_alive =
            request_keep_alive && !self->server_->stopping_.load(std::memory_order_acquire);
        self->Write(std::move(response), keep_alive);
      });
    };
    try {
      route_->async_handler(request, respond);
    } catch (const std::exception& e) {
      common::log::Error(kComponent, "handler threw", {{"path", request.path}, {"what", e.what()}});
      respond([] {
        return HttpResponse{500, "application/json", "{\"Error\":\"internal error\"}", {}};
      });
    }
    std::string().swap(request.body);
    ReleaseBody();
  }

  void OnReadError(beast::error_code ec, std::string_view stage) {
    if (budget_exceeded_at_ > 0) return RefuseForBudget(budget_exceeded_at_);
    if (IsPeerGone(ec)) return Close();
    if (ec == beast::error::timeout) {
      server_->NoteRefusal(stage == "header" ? metrics::HttpRefusal::kHeaderTimeout
                                             : metrics::HttpRefusal::kRequestTimeout,
                           peer_);
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
      return WriteError(
          http::status::request_header_fields_too_large,
          "request header exceeds " + std::to_string(Options().max_header_bytes) + " bytes");
    }
    return WriteError(http::status::bad_request,
                      "malformed HTTP request (" + std::string(stage) + "): " + ec.message());
  }

  // Writes a server-generated error and closes the connection (its stream position is unknown).
  // Client errors are counted and logged here; 404/405 are routine, 503s are refusals, counted
  // and logged by NoteRefusal.
  void WriteError(http::status status, const std::string& message,
                  std::vector<std::pair<std::string, std::string>> headers = {}) {
    if (status != http::status::not_found && status != http::status::method_not_allowed &&
        status != http::status::service_unavailable) {
      server_->bad_requests_.fetch_add(1, std::memory_order_relaxed);
      common::log::Warn(kComponent, "bad request",
                        {{"listener", Options().listener},
                         {"status", static_cast<int>(status)},
                         {"error", message},
                         {"peer", peer_}});
    }
    route_ = nullptr;  // for the observer: no route handled it
    std::string body = "{\"Error\":\"";
    common::log::AppendJsonEscaped(message, &body);
    body += "\"}";
    HttpResponse response{static_cast<int>(status), "application/json", std::move(body),
                          std::move(headers)};
    Write(std::move(response), /*keep_alive=*/false);
  }

  // A reply being written: the message and its serializer, which keeps the write's progress
  // (WriteNow's part, then the asynchronous write's).
  struct OutgoingReply {
    http::response<http::string_body> message;
    std::optional<http::response_serializer<http::string_body>> serializer;
  };

  void Write(HttpResponse response, bool keep_alive) {
    auto reply = std::make_shared<OutgoingReply>();
    http::response<http::string_body>* res = &reply->message;
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
    res->set(http::field::server, Options().server_name);
    res->set(http::field::content_type, response.content_type);
    for (const auto& [name, value] : Options().response_headers) res->set(name, value);
    for (auto& [name, value] : response.headers) res->set(name, value);
    res->keep_alive(keep_alive);
    res->body() = std::move(response.body);
    res->prepare_payload();  // Content-Length, never chunked.
    reply->serializer.emplace(*res);
    Tcp().expires_after(Options().request_timeout);
    beast::error_code ec;
    if (res->body().size() <= kInlineIoBytes && WriteNow(&*reply->serializer, &ec)) {
      return OnWritten(*res, ec, keep_alive);
    }
    http::async_write(
        stream_, *reply->serializer,
        [self = this->shared_from_this(), reply, keep_alive](beast::error_code ec, size_t) {
          self->OnWritten(reply->message, ec, keep_alive);
        });
  }

  // Plain TCP: writes as much of the reply as the socket takes without waiting. True when that
  // settled the write: all sent, or *ec says why not (as the asynchronous write would report
  // it); false when the rest must wait for room (the asynchronous write continues from where
  // this stopped). TLS: writes nothing.
  bool WriteNow(http::response_serializer<http::string_body>* serializer, beast::error_code* ec) {
    if constexpr (kTls) {
      return false;
    } else {
      if (!nonblocking_) return false;
      http::write(Tcp().socket(), *serializer, *ec);  // non-blocking: see the constructor
      if (*ec == asio::error::would_block || *ec == asio::error::try_again) {
        *ec = {};
        return false;
      }
      return true;
    }
  }

  void OnWritten(const http::response<http::string_body>& res, beast::error_code ec,
                 bool keep_alive) {
    const bool next = !ec && keep_alive;
    if (next) {
      served_one_ = true;
      MarkIdle();  // before the observer: whoever it tells may count on the connection's state
    }
    if (Options().observer) Observe(res, !ec);
    if (ec == beast::error::timeout) {
      server_->NoteRefusal(metrics::HttpRefusal::kRequestTimeout, peer_);
    }
    if (!next) return Close();
    WaitForRequest();
  }

  void Observe(const http::response<http::string_body>& res, bool sent) {
    RequestObservation observation;
    observation.method = method_;
    observation.path = path_;
    observation.route_matched = route_ != nullptr;
    observation.path_known = path_known_;
    observation.status = static_cast<int>(res.result_int());
    observation.duration = Clock::now() - request_start_;
    observation.request_body_bytes = request_body_bytes_;
    observation.response_body_bytes = res.body().size();
    observation.reply_sent = sent;
    observation.tls = kTls;
    observation.outcome = outcome_;
    try {
      Options().observer(observation);
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
        Tcp().expires_after(std::min(Options().header_timeout, std::chrono::milliseconds(1'000)));
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

  // How often a request waiting for room in the body budget looks again.
  static constexpr std::chrono::milliseconds kBudgetPoll{5};

  // Declared before stream_: the stream refers to the context.
  std::shared_ptr<ssl::context> tls_ctx_;
  Stream stream_;
  const Clock::time_point accepted_at_;
  beast::flat_buffer buffer_;
  std::optional<HeaderParser> header_parser_;
  std::optional<BodyParser> body_parser_;
  std::string fixed_body_;        // a body of declared length, read by ReadFixedBody
  uint64_t fixed_length_ = 0;     // its length
  uint64_t declared_length_ = 0;  // the current request's Content-Length (0: none or chunked)
  std::string chunked_body_;      // a chunked body's pieces, kept by OnChunkBody
  // The parser's chunk-body callback (it keeps a reference): reserves and keeps each piece.
  std::function<size_t(std::uint64_t, beast::string_view, beast::error_code&)> chunk_body_;
  std::optional<asio::steady_timer> budget_timer_;  // made on the first wait for the budget
  Clock::time_point budget_wait_until_;
  uint64_t reserved_ = 0;            // bytes of the current body held in the budget
  uint64_t budget_exceeded_at_ = 0;  // > 0: the chunked body's size when a chunk did not fit
  const Route* route_ = nullptr;     // the route handling the current request, if any
  std::string_view outcome_;         // the current reply's HttpResponse::outcome
  std::string method_;               // of the current request
  std::string path_;                 // of the current request, without the query
  std::string query_;                // of the current request, after the '?'
  std::string authorization_;        // of the current request
  bool path_known_ = false;          // a route has path_
  bool expect_continue_ = false;     // the current request asked for 100 Continue
  uint64_t request_body_bytes_ = 0;
  Clock::time_point request_start_;
  bool idle_ = true;         // waiting for the first byte of a request
  bool served_one_ = false;  // a reply was written: the idle timeout applies between requests
  bool handshake_done_ = false;
  bool closing_ = false;
  bool nonblocking_ = false;  // plain TCP: the socket's synchronous operations never wait
  // WatchIdle's timer, made on the first wait; armed_: a wait is pending on it.
  std::optional<asio::steady_timer> idle_timer_;
  Clock::time_point idle_deadline_;
  bool idle_timer_armed_ = false;
  bool idle_timed_out_ = false;  // the wait for a request's first byte passed its deadline
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
    threads_.emplace_back([this] {
      if (options_.nice != 0)
        (void)setpriority(PRIO_PROCESS, static_cast<id_t>(gettid()), options_.nice);
      ioc_.run();
    });
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
    common::log::Warn(kComponent, "accept failed",
                      {{"listener", options_.listener}, {"error", ec.message()}});
    accept_retry_->expires_after(std::chrono::milliseconds(50));
    accept_retry_->async_wait([this](beast::error_code wait_ec) {
      if (!wait_ec) Accept();
    });
    return;
  }
  accepted_.fetch_add(1, std::memory_order_relaxed);
  // Only the acceptor's strand adds sessions: the counts can only fall between here and
  // Register. Relaxed: a limit, not a publication.
  const uint64_t refusing = refusing_.load(std::memory_order_relaxed);
  const bool at_cap = open_.load(std::memory_order_relaxed) - refusing >= options_.max_connections;
  if (!at_cap || EvictOldestIdle()) {
    socket.set_option(tcp::no_delay(true), ec);
    if (options_.tls) {
      StartSession<TlsStream>(std::move(socket), /*refusing=*/false);
    } else {
      StartSession<beast::tcp_stream>(std::move(socket), /*refusing=*/false);
    }
  } else if (refusing < std::max<uint64_t>(8, options_.max_connections / 8)) {
    // Counted when its 503 is written (or as a header timeout if its header never comes).
    if (options_.tls) {
      StartSession<TlsStream>(std::move(socket), /*refusing=*/true);
    } else {
      StartSession<beast::tcp_stream>(std::move(socket), /*refusing=*/true);
    }
  } else {
    NoteRefusal(metrics::HttpRefusal::kCap, "");
    beast::error_code ignored;
    socket.close(ignored);
  }
  Accept();
}

template <class Stream>
void HttpServer::Impl::StartSession(tcp::socket socket, bool refusing) {
  std::shared_ptr<ssl::context> tls_ctx;
  if constexpr (std::is_same_v<Stream, TlsStream>) tls_ctx = CurrentTlsContext();
  auto session =
      std::make_shared<Session<Stream>>(std::move(socket), this, std::move(tls_ctx), refusing);
  Register(session);
  session->Run();
}

bool HttpServer::Impl::EvictOldestIdle() {
  std::shared_ptr<SessionBase> victim;
  {
    std::lock_guard<std::mutex> lock(sessions_mu_);
    for (;;) {  // a claim fails only when its session became busy in the meantime
      SessionBase* oldest = nullptr;
      int64_t oldest_since = std::numeric_limits<int64_t>::max();
      for (const auto& [raw, weak] : sessions_) {
        const int64_t since = raw->idle_since();
        if (since > SessionBase::kBusy && since < oldest_since) {
          oldest = raw;
          oldest_since = since;
        }
      }
      if (oldest == nullptr) return false;
      if (oldest->ClaimForEviction(oldest_since)) {
        victim = sessions_[oldest].lock();  // null: it is being destroyed, the room is made
        break;
      }
    }
  }
  NoteRefusal(metrics::HttpRefusal::kIdleEvicted, "");
  // Outside the lock: dropping the last reference runs ~Session, which takes it.
  if (victim) victim->PostEvict();
  return true;
}

void HttpServer::Impl::NoteRefusal(metrics::HttpRefusal reason, std::string_view peer) {
  const size_t i = static_cast<size_t>(reason);
  refused_[i].fetch_add(1, std::memory_order_relaxed);
  if (const uint64_t count = refusal_logs_[i].Admit(Clock::now()); count > 0) {
    common::log::Warn(kComponent, kRefusalLogLines[i],
                      {{"listener", options_.listener},
                       {"reason", metrics::HttpRefusalName(reason)},
                       {"count", count},
                       {"open_connections", open_.load(std::memory_order_relaxed)},
                       {"max_connections", uint64_t{options_.max_connections}},
                       {"peer", peer.empty() ? std::string_view("-") : peer}});
  }
}

void HttpServer::Impl::Register(const std::shared_ptr<SessionBase>& session) {
  std::lock_guard<std::mutex> lock(sessions_mu_);
  sessions_.emplace(session.get(), session);
  open_.fetch_add(1, std::memory_order_relaxed);
  if (session->refusing()) refusing_.fetch_add(1, std::memory_order_relaxed);
}

void HttpServer::Impl::Unregister(SessionBase* session) {
  {
    std::lock_guard<std::mutex> lock(sessions_mu_);
    sessions_.erase(session);
    open_.fetch_sub(1, std::memory_order_relaxed);
    if (session->refusing()) refusing_.fetch_sub(1, std::memory_order_relaxed);
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
