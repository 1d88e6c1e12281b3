#pragma once

// HttpConnection: one HTTP/1.1 connection (plain TCP or TLS) to the API server, driven by the
// calling thread. Internal to the Kubernetes client.
//
// Each connection owns a private Asio io_context; every operation starts an asynchronous Beast
// operation with a deadline on the stream and runs that context on the caller's thread until
// the operation completes. So there is no shared I/O thread: a blocking call costs its own
// thread only, and nothing a caller does can stall another caller's I/O (no deadlock between
// watches and bind/evict calls by construction).
//
// Cancellation: a Cancellation may be attached to the operation in progress; Cancel() from any
// thread stops the connection's io_context, the operation fails with reason "Cancelled" and the
// connection is discarded (never reused).
//
// Thread-safety: a connection is used by one thread at a time (the pool hands it out
// exclusively); Cancellation is thread-safe.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "scheduler/common/result.h"
#include "scheduler/kube/api_error.h"

namespace taskgov::scheduler::kube {

using Deadline = std::chrono::steady_clock::time_point;

class HttpConnection;

class Cancellation {
 public:
  // Cancels the operation in progress (if any) and every later one until Reset. Idempotent.
  void Cancel();
  void Reset();
  [[nodiscard]] bool cancelled() const;
  // Sleeps for `duration` unless cancelled first; false when cancelled.
  bool SleepFor(std::chrono::milliseconds duration);

 private:
  friend class HttpConnection;
  friend class ScopedAttach;
  bool Attach(HttpConnection* connection);  // false when already cancelled
  void Detach(HttpConnection* connection);

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool cancelled_ = false;            // guarded by mu_
  HttpConnection* active_ = nullptr;  // guarded by mu_
};

// A TLS client configuration (CA, verification, client certificate). Immutable once built;
// shared by the connections made with it.
struct TlsContext;

struct TlsSettings {
  std::string ca_pem;  // empty: system trust store
  bool insecure_skip_verify = false;
  std::string client_cert_pem;
  std::string client_key_pem;
};
[[nodiscard]] common::Result<std::shared_ptr<TlsContext>> MakeTlsContext(
    const TlsSettings& settings);

struct Endpoint {
  bool tls = true;
  std::string host;  // name or IP literal (no brackets)
  uint16_t port = 0;
  std::string server_name;  // SNI and the name verified in the certificate; empty: host
  bool verify = true;
};

struct HttpRequest {
  std::string method;
  std::string target;  // path and query
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
};

struct HttpResponse {
  int status = 0;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  // The first header named `name` (case-insensitive), or "".
  [[nodiscard]] std::string Header(std::string_view name) const;
};

class HttpConnection {
 public:
  ~HttpConnection();
  HttpConnection(const HttpConnection&) = delete;
  HttpConnection& operator=(const HttpConnection&) = delete;

  // Resolves, connects and (for TLS) handshakes, all before `deadline`.
  [[nodiscard]] static ApiResult<std::unique_ptr<HttpConnection>> Open(
      const Endpoint& endpoint, std::shared_ptr<TlsContext> tls, Deadline deadline,
      Cancellation* cancel);

  // Writes `request` and reads the whole response (body capped at `body_limit`). On a failure
  // `*got_response` says whether any byte of a response had arrived (a kept-alive connection the
  // server had closed fails with none, and the request may be retried on a new one).
  [[nodiscard]] ApiResult<HttpResponse> RoundTrip(const HttpRequest& request, Deadline deadline,
                                                  size_t body_limit, Cancellation* cancel,
                                                  bool* got_response);

  // Streaming: write the request, read the status line and headers, then the body piece by
  // piece (chunked or not).
  [[nodiscard]] ApiResult<HttpResponse> WriteAndReadHead(const HttpRequest& request,
                                                         Deadline deadline, Cancellation* cancel);
  // After WriteAndReadHead: the rest of the body as a string (for error replies).
  [[nodiscard]] ApiResult<std::string> ReadBodyToString(Deadline deadline, size_t body_limit,
                                                        Cancellation* cancel);
  // After WriteAndReadHead: appends the next body bytes to `*out` (at least one byte unless the
  // body is complete, then sets *done).
  [[nodiscard]] ApiResult<size_t> ReadBodySome(std::string* out, Deadline deadline,
                                               Cancellation* cancel, bool* done);

  // True when the connection can carry another request.
  [[nodiscard]] bool reusable() const;
  std::chrono::steady_clock::time_point idle_since;
  uint64_t epoch = 0;  // the TLS generation it was made with

 private:
  friend class Cancellation;
  struct Impl;
  HttpConnection();
  void StopFromOtherThread();
  std::unique_ptr<Impl> impl_;
};

// RAII: attaches a Cancellation to a connection for one operation.
class ScopedAttach {
 public:
  ScopedAttach(Cancellation* cancel, HttpConnection* connection)
      : cancel_(cancel), connection_(connection) {
    if (cancel_ != nullptr) cancel_->Attach(connection_);
  }
  ~ScopedAttach() {
    if (cancel_ != nullptr) cancel_->Detach(connection_);
  }
  ScopedAttach(const ScopedAttach&) = delete;
  ScopedAttach& operator=(const ScopedAttach&) = delete;

 private:
  Cancellation* cancel_;
  HttpConnection* connection_;
};

}  // namespace taskgov::scheduler::kube
