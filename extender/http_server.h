#pragma once

// HttpServer: an asynchronous HTTP/1.1 server (Boost.Beast), plain or TLS, for the webhook and
// metrics listeners.
//
// Shape (Beast's async server examples): a listener accepts on its own strand; each connection is
// a session on a strand of its own with a fresh parser per message, an explicit body limit per
// route, and a deadline before every read and write:
//   * header_timeout   — a new connection: from accept until its first request's header is
//                        complete (the TLS handshake included), so a client that connects and
//                        sends nothing, or trickles, is closed then; a kept-alive connection:
//                        from a request's first byte until its header is complete;
//   * request_timeout  — from the first byte until the body is complete, and for the reply write;
//   * idle_timeout     — only between requests: a connection that has completed a request
//                        waiting for the first byte of the next one.
// The deadlines are absolute per request, not per read: a client that trickles bytes is cut off
// at its deadline however steadily it sends; other connections do not notice.
// Replies always carry Content-Length (never chunked); sockets have TCP_NODELAY.
//
// Connection cap (max_connections). A connection is *idle* while it has no request whose header
// is complete: waiting for its first request (or TLS handshake), between requests, or still
// receiving a header. When a new connection arrives at the cap, the idle connection that has
// waited longest (since accept or its last reply) is closed to make room (reason idle_evicted).
// When none is idle (every connection is in a request), the new connection is still accepted,
// its request header read (within header_timeout), and answered `503` with `Retry-After: 1` and
// `Connection: close` (reason cap); at most max(8, max_connections / 8) such connections are
// held at once, beyond that a new connection is closed at once (also reason cap). A request
// whose header completes in the instant its idle connection is chosen for eviction is closed
// without a reply (kube-scheduler's client retries it on a new connection).
//
// Body budget (body_budget, shared by listeners): a body reserves its bytes as they arrive, 64 KiB
// ahead of what it has received (the first 64 KiB before its first byte is read, and before
// `100 Continue`), never its declared Content-Length at once: connections that declare large
// bodies and trickle them hold 64 KiB each. A step that does not fit waits up to
// body_budget_wait for requests in flight to finish, then is answered `503` with `Retry-After: 1`
// (reason body_budget). A chunked body reserves each piece as it arrives and is answered 503 at
// once when one does not fit. Reservations are released once the handler has returned. A body
// that sends nothing for body_progress_timeout is cut off (reason request_timeout).
//
// Refusals and timeouts are counted by reason (metrics::HttpRefusal, in stats().refused) and
// logged at most once per reason per 10 s, with the count since the previous line.
//
// Routes match the request path exactly (query ignored). Unknown path → 404, a known path with
// another method → 405 with `Allow`. An oversized body → 413, an oversized header → 431, a
// malformed or truncated request → 400, a Transfer-Encoding other than `chunked` → 501, any
// Content-Encoding → 415 (the body is never parsed as raw bytes), an Expect other than
// `100-continue` → 417. `Expect: 100-continue` is answered `100 Continue` once the request is
// accepted (route, size and budget), just before its body is read; a refused request gets its
// final status instead. Every reply the server writes itself closes the connection (the request
// body, if any, was not read). Bodies are JSON `{"Error":"..."}`.
//
// Handlers run synchronously on an I/O thread, on the connection's strand, and must be quick
// (microseconds to a few milliseconds): while one runs, its I/O thread serves nobody else. A route
// whose answer waits on something slow uses an asynchronous handler (Route::async_handler). Other
// connections keep being served by the remaining io_threads, so a slow handler delays others only
// once every I/O thread is busy in one; deadlines of waiting connections keep running meanwhile.
// Work that may block (API calls, disk) belongs on its own thread, not in a handler.
//
// TLS (HttpServerOptions::tls): TLS 1.2 and 1.3 only; ALPN selects "http/1.1" and never "h2" (a
// client that offers ALPN without "http/1.1" fails the handshake with no_application_protocol;
// one that offers no ALPN is served HTTP/1.1). With a client CA file, client certificates are
// mandatory and verified against it (mTLS). The files are re-read every reload_interval, and by
// ReloadTls(): changed content builds a new TLS context that new connections use while
// established ones keep theirs; a new set that does not load (unreadable, malformed, key not
// matching the certificate) is logged and counted, and the previous context stays in use.
// A certificate file holds the leaf certificate first, then any intermediates (PEM); keys are
// unencrypted PEM (PKCS#8, RSA or EC).
//
// Observation (HttpServerOptions::observer): called once per reply written — handler replies and
// the server's own 400/404/405/413/415/417/431/501/503 — on the I/O thread, after the write
// finished (a kept-alive connection is idle again by then). Connections cut off at a deadline or
// closed by the peer before a reply produce no observation (they are in stats()). Unset, it costs
// one branch per request. It must be quick and must not throw.
//
// Thread-safety: Start/Shutdown from one controlling thread; port, stats and ReloadTls from any
// thread. Handlers and the observer are called concurrently from the I/O threads. Shutdown stops
// accepting, closes idle connections, lets requests in flight finish until the drain deadline
// (their replies carry `Connection: close`), then stops the threads.

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "extender/body_budget.h"
#include "metrics/labels.h"
#include "scheduler/common/result.h"

namespace taskgov::extender {

// The header a client behind the API server's service proxy sends its bearer token in: the
// API server authenticates the caller with Authorization and does not pass it on, but passes
// this one (the taskgov CLI sends it; the console access check reads it as Authorization).
inline constexpr char kForwardedAuthorization[] = "X-Taskgov-Authorization";

struct HttpRequest {
  std::string method;  // "GET", "POST", ...
  std::string path;    // target without the query string
  std::string query;   // what follows the first '?' of the target ("" if none), raw
  // The Authorization header, else X-Taskgov-Authorization (kForwardedAuthorization); "" if none.
  std::string authorization;
  std::string body;
  std::string peer_address;  // the client's IP address, as the socket reports it
};

struct HttpResponse {
  HttpResponse() = default;
  HttpResponse(int status_code, std::string type, std::string body_text,
               std::vector<std::pair<std::string, std::string>> extra_headers = {})
      : status(status_code),
        content_type(std::move(type)),
        body(std::move(body_text)),
        headers(std::move(extra_headers)) {}

  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;  // extra headers
  // How the handler's request ended, as a metrics label (static storage, e.g.
  // metrics::WebhookOutcomeName); passed to the observer. Empty: the status tells.
  std::string_view outcome;
};

// An asynchronous handler's way back (Route::async_handler): call it exactly once, from any
// thread, with a function that makes the reply; the server runs that function on the
// connection's strand (an I/O thread, as a handler) and writes what it returns.
using Responder = std::function<void(std::function<HttpResponse()> make_reply)>;

struct Route {
  // The request path; with `prefix`, every path that starts with it (e.g. "/api/v1/teams/"),
  // the longest such route winning. Exact routes win over prefix routes.
  std::string path;
  std::string method;
  size_t body_limit = 64 * 1024;
  std::function<HttpResponse(const HttpRequest&)> handler;
  bool prefix = false;
  // Instead of `handler`, for requests that wait on something slow (an API call): it returns at
  // once and answers through the Responder later, while the I/O thread serves other
  // connections. The request's body budget is released when it returns; the connection waits
  // (busy) for the reply.
  std::function<void(const HttpRequest&, Responder)> async_handler = nullptr;
};

// TLS for a listener. File paths are read at Start (an error there fails Start) and re-read
// every reload_interval.
struct HttpTlsOptions {
  std::string cert_chain_file;  // PEM: the server certificate, then intermediates
  std::string key_file;         // PEM: the certificate's private key, unencrypted
  // Instead of the two files: the PEM itself (a certificate made in memory, self_signed.h);
  // used when cert_chain_file is empty, never reloaded.
  std::string cert_chain_pem;
  std::string key_pem;
  std::string client_ca_file;  // PEM, one or more CAs; non-empty ⇒ client certificates required
  // How often the files are checked for new content; 0: only at Start and on ReloadTls().
  std::chrono::milliseconds reload_interval{5'000};
  // Called after every reload that found changed content (ok, or the reason the new files were
  // rejected), on an I/O thread or the ReloadTls caller's thread. Optional; must not throw.
  std::function<void(const common::Status&)> on_reload;
};

// What the server saw of one request, for metrics. The views are valid during the call only.
struct RequestObservation {
  std::string_view method;     // as received; empty when the request line did not parse
  std::string_view path;       // without the query; the client's text for 404s (unbounded set)
  bool route_matched = false;  // a route with this path and method handled it
  bool path_known = false;     // a route has this path (whatever its method)
  int status = 0;              // the status written
  std::chrono::nanoseconds duration{0};  // from the request's first byte until the reply was sent
  uint64_t request_body_bytes = 0;
  uint64_t response_body_bytes = 0;
  bool reply_sent = false;  // false: the reply write failed (peer gone, deadline)
  bool tls = false;
  std::string_view outcome;  // the handler's HttpResponse::outcome; empty for server replies
};

struct HttpServerOptions {
  std::string listener = "http";  // names the listener in logs and in the metrics' labels
  std::string address = "127.0.0.1";
  uint16_t port = 0;  // 0: an ephemeral port, see HttpServer::port().
  int io_threads = 2;
  // The I/O threads' nice value (Linux: setpriority on each thread): a listener whose work may
  // wait (/metrics, the console) runs below the webhooks, so that a scrape storm takes no CPU
  // from filters when both want it.
  int nice = 0;
  std::chrono::milliseconds idle_timeout{90'000};
  std::chrono::milliseconds header_timeout{10'000};
  std::chrono::milliseconds request_timeout{30'000};
  size_t max_connections = 1024;
  size_t max_header_bytes = 32 * 1024;
  // Bodies held in memory at once, across every listener given the same budget; null: no
  // budget (only the per-route limits).
  std::shared_ptr<BodyBudget> body_budget;
  // How long a request whose body does not fit the budget waits for room before its 503.
  std::chrono::milliseconds body_budget_wait{500};
  // A body that sends nothing for this long is cut off (reason request_timeout), within the
  // request timeout: a client trickling a large body is closed when it stalls.
  std::chrono::milliseconds body_progress_timeout{10'000};
  std::string server_name = "taskgov";
  // SO_SNDBUF of accepted connections; 0: the kernel's (autotuned). Tests set it small so that
  // a reply spans several writes.
  int send_buffer_bytes = 0;
  std::optional<HttpTlsOptions> tls;  // unset: plain HTTP
  // Headers on every reply of this listener, the server's own included (a handler's header of
  // the same name wins), e.g. Cache-Control: no-store for replies no cache may keep.
  std::vector<std::pair<std::string, std::string>> response_headers;
  std::function<void(const RequestObservation&)> observer;  // optional, see above
};

// Connection-level counters, readable at any time (relaxed atomics inside).
struct HttpServerStats {
  uint64_t accepted = 0;
  uint64_t requests = 0;
  uint64_t bad_requests = 0;  // 400 / 413 / 415 / 417 / 431 / 501 written by the server itself
  uint64_t timeouts = 0;      // refused[kHeaderTimeout] + refused[kRequestTimeout]
  uint64_t open_connections = 0;
  // Connections and requests refused or cut off, by metrics::HttpRefusal.
  std::array<uint64_t, metrics::kHttpRefusals.size()> refused{};
  uint64_t inflight_body_bytes = 0;     // this listener's reservations against body_budget now
  uint64_t body_budget_waits = 0;       // requests that had to wait for room in the budget
  uint64_t tls_handshake_failures = 0;  // incl. rejected client certificates and deadline
  uint64_t tls_reloads = 0;             // new certificate sets taken into use after Start
  uint64_t tls_reload_failures = 0;     // changed files that did not load (old set kept)

  [[nodiscard]] uint64_t refused_for(metrics::HttpRefusal reason) const {
    return refused[static_cast<size_t>(reason)];
  }
};

class HttpServer {
 public:
  HttpServer(HttpServerOptions options, std::vector<Route> routes);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Loads the TLS files (if any), binds, listens and starts the I/O threads. Errors name the
  // address or the file.
  [[nodiscard]] common::Status Start();
  // The bound port (after a successful Start).
  [[nodiscard]] uint16_t port() const;
  // Stops accepting, finishes requests in flight until `drain` has passed, stops the threads.
  // Idempotent.
  void Shutdown(std::chrono::milliseconds drain);
  [[nodiscard]] HttpServerStats stats() const;
  // Re-reads the TLS files now; a changed, valid set is used by connections accepted from then
  // on. Returns OK when the files loaded or did not change, the load error when they are
  // rejected (the old set stays), and an error when the server has no TLS or is not started.
  // Logging, stats and on_reload report each distinct rejected content once.
  [[nodiscard]] common::Status ReloadTls();

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace taskgov::extender
