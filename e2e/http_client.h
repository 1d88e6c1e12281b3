#pragma once

// HttpClient: a blocking HTTP/1.1 client over one keep-alive connection, the way Go's
// net/http client (and so kube-scheduler's extender client) talks to a host. Test support.
//
// Thread-safety: one thread at a time per client.

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "scheduler/common/result.h"

namespace taskgov::e2e {

struct HttpReply {
  int status = 0;
  std::string body;
  std::map<std::string, std::string> headers;  // names lower-cased
};

class HttpClient {
 public:
  HttpClient(std::string host, uint16_t port,
             std::chrono::milliseconds timeout = std::chrono::seconds(10));
  ~HttpClient();

  // Sends one request on the kept-alive connection, connecting first if needed.
  [[nodiscard]] Result<HttpReply> Request(const std::string& method, const std::string& target,
                                          const std::string& body = "",
                                          const std::string& content_type = "application/json");
  [[nodiscard]] Result<HttpReply> Get(const std::string& target) { return Request("GET", target); }
  [[nodiscard]] Result<HttpReply> Post(const std::string& target, const std::string& body) {
    return Request("POST", target, body);
  }
  // How many TCP connections this client has opened so far.
  [[nodiscard]] int connections_opened() const { return connections_opened_; }

 private:
  struct Conn;
  std::string host_;
  uint16_t port_;
  std::chrono::milliseconds timeout_;
  std::unique_ptr<Conn> conn_;
  int connections_opened_ = 0;
};

}  // namespace taskgov::e2e
