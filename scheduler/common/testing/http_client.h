#pragma once

// HttpClient: a blocking HTTP/1.1 client over one keep-alive connection, plain or TLS, the way
// Go's net/http client (and so kube-scheduler's extender client) talks to a host. Test support.
//
// Like Go's transport it keeps one connection per client and reuses it; before reusing it, it
// checks whether the server closed it meanwhile (Go's background read notices that) and then
// opens a new one; and when a request on a reused connection fails before any byte of the reply
// arrived (the server closed it in the race window), it is sent once more on a new connection.
// A failure on a fresh connection is returned. Every operation has the client's timeout, as
// Go's http.Client.Timeout (kube-scheduler's `httpTimeout`).
//
// TLS as kube-scheduler configures its extender client (crypto/tls): TLS 1.2+, the server
// verified against a CA file, hostname (or IP SAN) verification, SNI for host names, an optional
// client certificate, and ALPN offering "h2" then "http/1.1" (Go's default). This client speaks
// HTTP/1.1 only, so a server that selects "h2" is an error here.
//
// Thread-safety: one thread at a time per client.

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "scheduler/common/result.h"

namespace taskgov::common::testing {

struct HttpReply {
  int status = 0;
  std::string body;
  std::map<std::string, std::string> headers;  // names lower-cased
};

struct HttpClientTls {
  std::string ca_file;    // PEM CAs that verify the server; empty: the server is not verified
  std::string cert_file;  // PEM client certificate chain for mTLS; empty: none is sent
  std::string key_file;   // PEM key of cert_file
  // SNI and the name verified in the server certificate; empty: the client's host. An IP
  // literal is matched against IP SANs and sends no SNI, as in Go.
  std::string server_name;
  bool verify_server_name = true;
  std::vector<std::string> alpn = {"h2", "http/1.1"};  // offered in this order; empty: no ALPN
  // Protocol versions offered: "1.0", "1.1", "1.2" or "1.3"; an empty max means the newest.
  // Below "1.2" (for tests of servers that must refuse it) OpenSSL's security level is lowered.
  std::string min_version = "1.2";
  std::string max_version;
};

class HttpClient {
 public:
  HttpClient(std::string host, uint16_t port,
             std::chrono::milliseconds timeout = std::chrono::seconds(10));
  // A TLS client. Bad TLS files are reported by the first request.
  HttpClient(std::string host, uint16_t port, HttpClientTls tls,
             std::chrono::milliseconds timeout = std::chrono::seconds(10));
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  // Sends one request on the kept-alive connection, connecting first if needed.
  using Headers = std::vector<std::pair<std::string, std::string>>;
  [[nodiscard]] common::Result<HttpReply> Request(
      const std::string& method, const std::string& target, const std::string& body = "",
      const std::string& content_type = "application/json", const Headers& headers = {});
  [[nodiscard]] common::Result<HttpReply> Get(const std::string& target) {
    return Request("GET", target);
  }
  [[nodiscard]] common::Result<HttpReply> Post(const std::string& target, const std::string& body) {
    return Request("POST", target, body);
  }
  // Closes the kept-alive connection (the next request opens a new one).
  void CloseConnection();
  // As Go's Transport.DisableCompression: when set, requests no longer carry "Accept-Encoding:
  // gzip". This client does not decompress, so a server that compresses what it is offered
  // (Prometheus' HTTP API does) must not be offered it.
  void set_disable_compression(bool disable) { disable_compression_ = disable; }

  // How many connections this client has opened so far (TCP connects, TLS or not).
  [[nodiscard]] int connections_opened() const { return connections_opened_; }
  // Requests sent a second time because the reused connection died under them.
  [[nodiscard]] int retries() const { return retries_; }
  // Kept-alive connections found closed by the server before reuse, and replaced.
  [[nodiscard]] int stale_connections() const { return stale_connections_; }
  // The ALPN protocol of the current TLS connection; empty when none was selected or no
  // connection is open.
  [[nodiscard]] std::string negotiated_protocol() const;

 private:
  struct Conn;
  struct Tls;
  common::Result<HttpReply> RoundTrip(const std::string& method, const std::string& target,
                                      const std::string& body, const std::string& content_type,
                                      const Headers& headers, bool* retryable);
  common::Status Connect();

  std::string host_;
  uint16_t port_;
  std::chrono::milliseconds timeout_;
  std::unique_ptr<Tls> tls_;    // declared before conn_: connections use its context
  std::unique_ptr<Conn> conn_;  // the kept-alive connection, if any
  int connections_opened_ = 0;
  int retries_ = 0;
  int stale_connections_ = 0;
  bool disable_compression_ = false;
};

}  // namespace taskgov::common::testing
