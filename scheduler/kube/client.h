#pragma once

// KubeClient: a small Kubernetes API client over Boost.Beast (HTTP/1.1, TLS through Asio SSL)
// and RapidJSON, with the behaviour DESIGN §5 asks of it:
//  * keep-alive connections, pooled; a kept-alive connection the server closed meanwhile is
//    retried once on a new one;
//  * a deadline on every call (CallOptions::timeout, default ClientOptions::request_timeout)
//    covering connect, TLS, write, read and any Retry-After wait;
//  * credentials from CredentialProvider: a 401 re-reads the token file / re-runs the exec plugin
//    and retries once;
//  * 429 with Retry-After: waits and retries (up to max_throttle_retries, within the deadline);
//    otherwise the 429 is returned with ApiError::retry_after set;
//  * errors as ApiError values carrying the HTTP status and the API's Status reason and message.
//
// Threading: every call runs on its caller's thread (see http_connection.h): there is no shared
// I/O thread, so blocking calls made from HTTP handler threads cannot deadlock with watches,
// and an observer callback may itself call the client. All methods are thread-safe.

#include <rapidjson/document.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "scheduler/common/clock.h"
#include "scheduler/common/result.h"
#include "scheduler/kube/api_error.h"
#include "scheduler/kube/config.h"
#include "scheduler/kube/credentials.h"
#include "scheduler/kube/http_connection.h"
#include "scheduler/kube/watch_decoder.h"

namespace taskgov::scheduler::kube {

struct ClientOptions {
  std::chrono::milliseconds request_timeout{10'000};
  std::chrono::milliseconds token_reread_interval{60'000};
  std::chrono::milliseconds exec_timeout{30'000};
  std::chrono::milliseconds idle_connection_ttl{60'000};
  size_t max_idle_connections = 8;
  size_t max_response_bytes = 256 * 1024 * 1024;
  size_t max_watch_event_bytes = 64 * 1024 * 1024;
  int max_throttle_retries = 5;
  std::string user_agent = "taskgov";
  // Non-empty: every request acts as this user (the Impersonate-User header, kubectl --as); the
  // credentials' user needs the RBAC `impersonate` verb.
  std::string impersonate_user;
  const common::Clock* clock =
      nullptr;  // nullptr: SystemClock (token re-read interval, exec expiry)
};

struct CallOptions {
  std::chrono::milliseconds timeout{0};  // 0: ClientOptions::request_timeout
  bool retry_throttled = true;           // wait out 429 Retry-After and retry
  Cancellation* cancel = nullptr;
  // Not empty: the bearer token (if the credentials have one) also goes in this header, as
  // "Bearer <token>", for a service reached through the API server's proxy (which does not pass
  // Authorization on).
  std::string forward_token_header;
  // Not empty: the token forward_token_header carries instead of the credentials' (a token for
  // that service, not for the API server); with forward_token_header "Authorization" it replaces
  // the credentials' token (a direct connection to that service).
  std::string forwarded_token;
  // The Content-Type of a request body; empty: "application/json". A PATCH names its kind, e.g.
  // "application/merge-patch+json".
  std::string content_type;
};

struct ListOptions {
  std::string field_selector;
  std::string label_selector;
  int64_t limit = 500;  // 0: no paging
  std::string continue_token;
  std::string resource_version;
};

struct ListPage {
  rapidjson::Document doc;
  std::string resource_version;  // metadata.resourceVersion of the list
  std::string continue_token;    // metadata.continue; empty on the last page
  // The items array (checked to be an array, or empty when null).
  [[nodiscard]] const rapidjson::Value& items() const;
};

struct WatchOptions {
  std::string resource_version;
  std::string field_selector;
  std::string label_selector;
  bool allow_bookmarks = true;
  int64_t timeout_seconds = 300;  // asks the server to end the watch; 0: server default
  // No byte for this long ends the stream with a "Timeout" error. 0: timeout_seconds + 30 s.
  std::chrono::milliseconds idle_timeout{0};
};

struct ClientStats {
  uint64_t requests = 0;
  uint64_t errors = 0;            // calls that returned an ApiError
  uint64_t auth_retries = 0;      // 401 → new credentials → retry
  uint64_t throttle_retries = 0;  // 429 Retry-After waits
  uint64_t stale_retries = 0;     // a pooled connection was closed by the server
  uint64_t connections_opened = 0;
  uint64_t watches_opened = 0;
};

class WatchStream;

class KubeClient {
 public:
  [[nodiscard]] static common::Result<std::unique_ptr<KubeClient>> Create(
      ClusterConfig config, ClientOptions options = {});
  ~KubeClient();
  KubeClient(const KubeClient&) = delete;
  KubeClient& operator=(const KubeClient&) = delete;

  // One request. `target` is the path (without the server's base path) and query. 2xx replies
  // are returned; anything else becomes an ApiError with the Status decoded.
  [[nodiscard]] ApiResult<HttpResponse> Call(std::string_view method, std::string_view target,
                                             std::string body = "", const CallOptions& call = {});
  // Call, then parse a 2xx body as a JSON object.
  [[nodiscard]] ApiResult<rapidjson::Document> CallJson(std::string_view method,
                                                        std::string_view target,
                                                        std::string body = "",
                                                        const CallOptions& call = {});
  // One page of a collection (`path` like "/api/v1/pods").
  [[nodiscard]] ApiResult<ListPage> List(const std::string& path, const ListOptions& list,
                                         const CallOptions& call = {});
  // Opens a watch on a collection; the call timeout bounds getting the response head. A 401 is
  // retried once with fresh credentials; a 429 is returned with retry_after (the reflector waits).
  [[nodiscard]] ApiResult<std::unique_ptr<WatchStream>> Watch(const std::string& path,
                                                              const WatchOptions& watch,
                                                              const CallOptions& call = {});

  [[nodiscard]] const ClusterConfig& config() const { return config_; }
  [[nodiscard]] ClientStats stats() const;
  [[nodiscard]] CredentialStats credential_stats() const { return credentials_.stats(); }

 private:
  friend class WatchStream;
  KubeClient(ClusterConfig config, ClientOptions options);

  struct Prepared {
    HttpRequest request;
    std::string token;
  };
  ApiResult<Prepared> Prepare(std::string_view method, std::string_view target,
                              const std::string& body, const CallOptions& call);
  ApiResult<std::unique_ptr<HttpConnection>> Acquire(Deadline deadline, Cancellation* cancel,
                                                     bool* reused);
  void Release(std::unique_ptr<HttpConnection> connection);
  std::chrono::milliseconds TimeoutOf(const CallOptions& call) const;

  const ClusterConfig config_;
  const ClientOptions options_;
  const Endpoint endpoint_;
  CredentialProvider credentials_;

  std::mutex pool_mu_;
  std::vector<std::unique_ptr<HttpConnection>> idle_;  // guarded by pool_mu_
  std::shared_ptr<TlsContext> tls_;                    // guarded by pool_mu_
  uint64_t tls_generation_ = 0;                        // guarded by pool_mu_

  // Relaxed counters: statistics only.
  std::atomic<uint64_t> requests_{0}, errors_{0}, auth_retries_{0}, throttle_retries_{0},
      stale_retries_{0}, connections_opened_{0}, watches_opened_{0};
};

// A watch in progress: events in the order the server sent them. Owned and read by one thread;
// Cancel the Cancellation given to Watch to interrupt a blocked Next from another thread.
class WatchStream {
 public:
  ~WatchStream();
  // The next event: true with *event filled; false when the server ended the stream cleanly;
  // an ApiError when the connection broke, went idle too long, was cancelled, or sent an
  // undecodable event (the stream is finished either way).
  [[nodiscard]] ApiResult<bool> Next(WatchEvent* event);
  [[nodiscard]] uint64_t bytes_read() const { return bytes_; }

 private:
  friend class KubeClient;
  WatchStream(std::unique_ptr<HttpConnection> connection, std::chrono::milliseconds idle_timeout,
              size_t max_event_bytes, Cancellation* cancel, std::string what);

  std::unique_ptr<HttpConnection> connection_;
  std::chrono::milliseconds idle_timeout_;
  LineSplitter splitter_;
  Cancellation* cancel_;
  std::string what_;
  bool done_ = false;
  bool failed_ = false;
  uint64_t bytes_ = 0;
};

// Percent-encodes a query parameter value.
[[nodiscard]] std::string QueryEscape(std::string_view value);
// Builds an ApiError from a non-2xx reply (Status body when present, Retry-After header).
[[nodiscard]] ApiError ErrorFromResponse(std::string what, const HttpResponse& response);

}  // namespace taskgov::scheduler::kube
