#pragma once

// HttpServer: an asynchronous HTTP/1.1 server (Boost.Beast) for the webhook and metrics
// listeners.
//
// Shape (Beast's async server examples): a listener accepts on its own strand; each connection is
// a session on a strand of its own with a fresh parser per message, an explicit body limit per
// route, and a deadline before every read and write:
//   * idle_timeout     — waiting for the first byte of the next request on a kept-alive
//                        connection;
//   * header_timeout   — from the first byte until the header is complete;
//   * request_timeout  — from the first byte until the body is complete, and for the reply write.
// A client that trickles bytes is cut off at its deadline; other connections do not notice.
// Replies always carry Content-Length (never chunked); sockets have TCP_NODELAY.
//
// Routes match the request path exactly (query ignored). Unknown path → 404, a known path with
// another method → 405 with `Allow`. An oversized body → 413, a malformed request → 400; both
// close the connection. Handlers run synchronously on an I/O thread and must be quick.
//
// Thread-safety: Start/Shutdown from one controlling thread. Handlers are called concurrently
// from the I/O threads. Shutdown stops accepting, closes idle connections, lets requests in
// flight finish until the drain deadline, then stops the threads.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "scheduler/common/result.h"

namespace taskgov::extender {

struct HttpRequest {
  std::string method;  // "GET", "POST", ...
  std::string path;    // target without the query string
  std::string body;
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;  // extra headers
};

struct Route {
  std::string path;
  std::string method;
  size_t body_limit = 64 * 1024;
  std::function<HttpResponse(const HttpRequest&)> handler;
};

struct HttpServerOptions {
  std::string address = "127.0.0.1";
  uint16_t port = 0;  // 0: an ephemeral port, see HttpServer::port().
  int io_threads = 2;
  std::chrono::milliseconds idle_timeout{90'000};
  std::chrono::milliseconds header_timeout{10'000};
  std::chrono::milliseconds request_timeout{30'000};
  size_t max_connections = 1024;
  size_t max_header_bytes = 32 * 1024;
  std::string server_name = "taskgov";
};

// Connection-level counters, readable at any time (relaxed atomics inside).
struct HttpServerStats {
  uint64_t accepted = 0;
  uint64_t rejected_over_capacity = 0;
  uint64_t requests = 0;
  uint64_t bad_requests = 0;  // 400 / 413 / 431 written by the server itself
  uint64_t timeouts = 0;
  uint64_t open_connections = 0;
};

class HttpServer {
 public:
  HttpServer(HttpServerOptions options, std::vector<Route> routes);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds, listens and starts the I/O threads. Errors name the address.
  [[nodiscard]] Status Start();
  // The bound port (after a successful Start).
  [[nodiscard]] uint16_t port() const;
  // Stops accepting, finishes requests in flight until `drain` has passed, stops the threads.
  // Idempotent.
  void Shutdown(std::chrono::milliseconds drain);
  [[nodiscard]] HttpServerStats stats() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace taskgov::extender
