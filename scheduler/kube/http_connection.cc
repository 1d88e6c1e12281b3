#include "scheduler/kube/http_connection.h"

#include <openssl/ssl.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <optional>

namespace taskgov::scheduler::kube {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;

constexpr uint32_t kHeaderLimit = 64 * 1024;

bool IEquals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

std::string SslErrorText(const beast::error_code& ec) {
  std::string text = ec.message();
  if (ec.category() == asio::error::get_ssl_category()) {
    char buf[256];
    ERR_error_string_n(static_cast<unsigned long>(ec.value()), buf, sizeof(buf));
    text = buf;
  }
  return text;
}

http::request<http::string_body> BuildRequest(const HttpRequest& request) {
  http::request<http::string_body> req;
  req.method_string(request.method);
  req.target(request.target);
  req.version(11);
  for (const auto& [k, v] : request.headers) req.set(k, v);
  req.body() = request.body;
  if (!request.body.empty() || request.method == "POST" || request.method == "PUT") {
    req.prepare_payload();
  }
  req.keep_alive(true);
  return req;
}

void CopyHeaders(const http::response_header<>& header, HttpResponse* out) {
  out->status = static_cast<int>(header.result_int());
  for (const auto& field : header) {
    out->headers.emplace_back(std::string(field.name_string()), std::string(field.value()));
  }
}

}  // namespace

struct TlsContext {
  TlsContext() : ctx(ssl::context::tls_client) {}
  ssl::context ctx;
};

common::Result<std::shared_ptr<TlsContext>> MakeTlsContext(const TlsSettings& settings) {
  auto tls = std::make_shared<TlsContext>();
  beast::error_code ec;
  tls->ctx.set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                           ssl::context::no_sslv3 | ssl::context::no_tlsv1 |
                           ssl::context::no_tlsv1_1,
                       ec);
  if (!settings.insecure_skip_verify) {
    if (!settings.ca_pem.empty()) {
      tls->ctx.add_certificate_authority(asio::buffer(settings.ca_pem), ec);
      if (ec) return common::Error{"invalid CA certificate: " + SslErrorText(ec)};
    } else {
      tls->ctx.set_default_verify_paths(ec);
      if (ec) return common::Error{"cannot load the system CA certificates: " + SslErrorText(ec)};
    }
  }
  if (!settings.client_cert_pem.empty()) {
    tls->ctx.use_certificate_chain(asio::buffer(settings.client_cert_pem), ec);
    if (ec) return common::Error{"invalid client certificate: " + SslErrorText(ec)};
    tls->ctx.use_private_key(asio::buffer(settings.client_key_pem), ssl::context::pem, ec);
    if (ec) return common::Error{"invalid client key: " + SslErrorText(ec)};
    if (SSL_CTX_check_private_key(tls->ctx.native_handle()) != 1) {
      return common::Error{"the client key does not match the client certificate"};
    }
  }
  return tls;
}

std::string HttpResponse::Header(std::string_view name) const {
  for (const auto& [k, v] : headers) {
    if (IEquals(k, name)) return v;
  }
  return "";
}

// ---------------------------------------------------------------------------------------------
// Cancellation

void Cancellation::Cancel() {
  std::lock_guard<std::mutex> lock(mu_);
  cancelled_ = true;
  if (active_ != nullptr) active_->StopFromOtherThread();
  cv_.notify_all();
}

void Cancellation::Reset() {
  std::lock_guard<std::mutex> lock(mu_);
  cancelled_ = false;
}

bool Cancellation::cancelled() const {
  std::lock_guard<std::mutex> lock(mu_);
  return cancelled_;
}

bool Cancellation::SleepFor(std::chrono::milliseconds duration) {
  std::unique_lock<std::mutex> lock(mu_);
  return !cv_.wait_for(lock, duration, [this] { return cancelled_; });
}

bool Cancellation::Attach(HttpConnection* connection) {
  std::lock_guard<std::mutex> lock(mu_);
  active_ = connection;
  return !cancelled_;
}

void Cancellation::Detach(HttpConnection* connection) {
  std::lock_guard<std::mutex> lock(mu_);
  if (active_ == connection) active_ = nullptr;
}

// ---------------------------------------------------------------------------------------------
// HttpConnection

struct HttpConnection::Impl {
  // Declared first so it is destroyed last: pending handlers are destroyed with it, after the
  // streams that own them are gone.
  asio::io_context ioc{1};
  std::shared_ptr<TlsContext> tls_context;
  std::optional<tcp::resolver> resolver;
  std::optional<beast::tcp_stream> plain;
  std::optional<beast::ssl_stream<beast::tcp_stream>> tls;
  beast::flat_buffer buffer;
  std::optional<http::response_parser<http::empty_body>> head_parser;
  std::optional<http::response_parser<http::buffer_body>> body_parser;
  bool broken = false;
  bool keep_alive = false;
  std::string what;  // "host:port" for messages

  beast::tcp_stream& Lowest() { return tls ? beast::get_lowest_layer(*tls) : *plain; }

  template <typename F>
  void WithStream(F&& f) {
    if (tls) {
      f(*tls);
    } else {
      f(*plain);
    }
  }

  // Runs the io_context on this thread until the operation started by `initiate` completes.
  template <typename Initiate>
  beast::error_code Run(Cancellation* cancel, Initiate&& initiate) {
    if (broken) return asio::error::not_connected;
    std::optional<beast::error_code> result;
    initiate([&result](beast::error_code ec, auto&&...) { result = ec; });
    ioc.restart();
    if (cancel != nullptr && cancel->cancelled()) {
      broken = true;  // the operation is abandoned: this connection must never run again
      return asio::error::operation_aborted;
    }
    while (!result) {
      if (ioc.run_one() == 0) {
        broken = true;
        return asio::error::operation_aborted;
      }
    }
    return *result;
  }

  // Run for an operation on the stream (TLS or plain) under `deadline`:
  // initiate(stream, handler) starts it.
  template <typename Initiate>
  beast::error_code RunOnStream(Deadline deadline, Cancellation* cancel, Initiate&& initiate) {
    Lowest().expires_at(deadline);
    beast::error_code ec;
    WithStream(
        [&](auto& stream) { ec = Run(cancel, [&](auto handler) { initiate(stream, handler); }); });
    return ec;
  }

  // Sends `request`; the failure as an error value (the connection is then broken).
  std::optional<ApiError> Write(const HttpRequest& request, Deadline deadline,
                                Cancellation* cancel) {
    auto req = BuildRequest(request);
    beast::error_code ec = RunOnStream(deadline, cancel, [&](auto& stream, auto handler) {
      http::async_write(stream, req, handler);
    });
    if (ec) return Fail(ec, "write", cancel);
    return std::nullopt;
  }

  // The addresses of `endpoint` (IP literals need no lookup), resolved before `deadline`.
  ApiResult<std::vector<tcp::endpoint>> Resolve(const Endpoint& endpoint, Deadline deadline,
                                                Cancellation* cancel);
  // The TLS handshake, with SNI and (when `endpoint.verify`) host name verification.
  beast::error_code Handshake(const Endpoint& endpoint, Deadline deadline, Cancellation* cancel);

  ApiError Fail(const beast::error_code& ec, std::string_view stage, Cancellation* cancel) {
    broken = true;
    ApiError error;
    error.what = what;
    if (cancel != nullptr && cancel->cancelled()) {
      error.reason = "Cancelled";
      error.cancelled = true;
      error.message = std::string(stage) + " cancelled";
    } else if (ec == beast::error::timeout) {
      error.reason = "Timeout";
      error.message = std::string(stage) + ": deadline exceeded";
    } else if (ec == http::error::end_of_stream || ec == asio::error::eof ||
               ec == asio::error::connection_reset || ec == asio::error::broken_pipe ||
               ec == http::error::partial_message) {
      error.reason = "ConnectionClosed";
      error.message =
          std::string(stage) + ": connection closed by the server (" + ec.message() + ")";
    } else {
      error.reason = "TransportError";
      error.message = std::string(stage) + ": " + SslErrorText(ec);
    }
    return error;
  }
};

HttpConnection::HttpConnection() : impl_(std::make_unique<Impl>()) {}
HttpConnection::~HttpConnection() {
  if (impl_->plain || impl_->tls) {
    beast::error_code ec;
    impl_->Lowest().socket().close(ec);
  }
}

void HttpConnection::StopFromOtherThread() { impl_->ioc.stop(); }

bool HttpConnection::reusable() const {
  return !impl_->broken && impl_->keep_alive && !impl_->head_parser && !impl_->body_parser;
}

ApiResult<std::vector<tcp::endpoint>> HttpConnection::Impl::Resolve(const Endpoint& endpoint,
                                                                    Deadline deadline,
                                                                    Cancellation* cancel) {
  beast::error_code ec;
  asio::ip::address address = asio::ip::make_address(endpoint.host, ec);
  std::vector<tcp::endpoint> targets;
  if (!ec) {
    targets.emplace_back(address, endpoint.port);
    return targets;
  }
  tcp::resolver::results_type endpoints;
  resolver.emplace(ioc);
  asio::steady_timer timer(ioc);
  timer.expires_at(deadline);
  timer.async_wait([this](beast::error_code timer_ec) {
    if (!timer_ec) resolver->cancel();
  });
  ec = Run(cancel, [&](auto handler) {
    resolver->async_resolve(
        endpoint.host, std::to_string(endpoint.port),
        [&endpoints, handler](beast::error_code e, tcp::resolver::results_type r) mutable {
          endpoints = std::move(r);
          handler(e);
        });
  });
  timer.cancel();
  if (ec) {
    if (ec == asio::error::operation_aborted && !(cancel && cancel->cancelled())) {
      ec = beast::error::timeout;
    }
    return Fail(ec, "resolve " + endpoint.host, cancel);
  }
  for (const auto& e : endpoints) targets.push_back(e.endpoint());
  // The timer's cancelled handler must run before `timer` goes out of scope.
  ioc.restart();
  ioc.poll();
  return targets;
}

beast::error_code HttpConnection::Impl::Handshake(const Endpoint& endpoint, Deadline deadline,
                                                  Cancellation* cancel) {
  const std::string& name = endpoint.server_name.empty() ? endpoint.host : endpoint.server_name;
  beast::error_code ip_ec;
  asio::ip::make_address(name, ip_ec);
  if (ip_ec) {
    // SNI carries names only, never addresses.
    SSL_set_tlsext_host_name(tls->native_handle(), name.c_str());
  }
  if (endpoint.verify) {
    tls->set_verify_mode(ssl::verify_peer);
    tls->set_verify_callback(ssl::host_name_verification(name));
  } else {
    tls->set_verify_mode(ssl::verify_none);
  }
  Lowest().expires_at(deadline);
  return Run(cancel,
             [&](auto handler) { tls->async_handshake(ssl::stream_base::client, handler); });
}

ApiResult<std::unique_ptr<HttpConnection>> HttpConnection::Open(const Endpoint& endpoint,
                                                                std::shared_ptr<TlsContext> tls,
                                                                Deadline deadline,
                                                                Cancellation* cancel) {
  std::unique_ptr<HttpConnection> conn(new HttpConnection());
  Impl& im = *conn->impl_;
  ScopedAttach attach(cancel, conn.get());
  im.what = "connect " + endpoint.host + ":" + std::to_string(endpoint.port);
  im.tls_context = std::move(tls);
  ApiResult<std::vector<tcp::endpoint>> targets = im.Resolve(endpoint, deadline, cancel);
  if (!targets.ok()) return targets.error();

  if (endpoint.tls) {
    if (!im.tls_context) return ApiError::Of(0, "TransportError", "no TLS context", im.what);
    im.tls.emplace(im.ioc, im.tls_context->ctx);
  } else {
    im.plain.emplace(im.ioc);
  }
  beast::tcp_stream& lowest = im.Lowest();
  lowest.expires_at(deadline);
  beast::error_code ec =
      im.Run(cancel, [&](auto handler) { lowest.async_connect(*targets, handler); });
  if (ec) return im.Fail(ec, "connect", cancel);
  lowest.socket().set_option(tcp::no_delay(true), ec);

  if (endpoint.tls) {
    ec = im.Handshake(endpoint, deadline, cancel);
    if (ec) return im.Fail(ec, "TLS handshake", cancel);
  }
  im.keep_alive = true;
  im.what = endpoint.host + ":" + std::to_string(endpoint.port);
  return conn;
}

ApiResult<HttpResponse> HttpConnection::RoundTrip(const HttpRequest& request, Deadline deadline,
                                                  size_t body_limit, Cancellation* cancel,
                                                  bool* got_response) {
  Impl& im = *impl_;
  ScopedAttach attach(cancel, this);
  *got_response = false;
  if (std::optional<ApiError> failed = im.Write(request, deadline, cancel)) return *failed;
  http::response_parser<http::string_body> parser;
  parser.header_limit(kHeaderLimit);
  parser.body_limit(body_limit);
  beast::error_code ec = im.RunOnStream(deadline, cancel, [&](auto& stream, auto handler) {
    http::async_read(stream, im.buffer, parser, handler);
  });
  *got_response = parser.got_some();
  if (ec) {
    if (ec == http::error::body_limit) {
      im.broken = true;
      return ApiError::Of(0, "ResponseTooLarge",
                          "response body exceeds " + std::to_string(body_limit) + " bytes",
                          im.what);
    }
    return im.Fail(ec, "read", cancel);
  }
  HttpResponse response;
  CopyHeaders(parser.get().base(), &response);
  im.keep_alive = parser.get().keep_alive();
  response.body = std::move(parser.get().body());
  return response;
}

ApiResult<HttpResponse> HttpConnection::WriteAndReadHead(const HttpRequest& request,
                                                         Deadline deadline, Cancellation* cancel) {
  Impl& im = *impl_;
  ScopedAttach attach(cancel, this);
  if (std::optional<ApiError> failed = im.Write(request, deadline, cancel)) return *failed;
  im.head_parser.emplace();
  im.head_parser->header_limit(kHeaderLimit);
  im.head_parser->body_limit(std::numeric_limits<uint64_t>::max());
  beast::error_code ec = im.RunOnStream(deadline, cancel, [&](auto& stream, auto handler) {
    http::async_read_header(stream, im.buffer, *im.head_parser, handler);
  });
  if (ec) return im.Fail(ec, "read header", cancel);
  HttpResponse response;
  CopyHeaders(im.head_parser->get().base(), &response);
  im.keep_alive = false;  // streamed connections are not reused
  return response;
}

ApiResult<std::string> HttpConnection::ReadBodyToString(Deadline deadline, size_t body_limit,
                                                        Cancellation* cancel) {
  Impl& im = *impl_;
  ScopedAttach attach(cancel, this);
  if (!im.head_parser) return ApiError::Of(0, "TransportError", "no response head", im.what);
  http::response_parser<http::string_body> parser(std::move(*im.head_parser));
  im.head_parser.reset();
  parser.body_limit(body_limit);
  if (parser.is_done()) return std::string(parser.get().body());
  beast::error_code ec = im.RunOnStream(deadline, cancel, [&](auto& stream, auto handler) {
    http::async_read(stream, im.buffer, parser, handler);
  });
  if (ec) return im.Fail(ec, "read body", cancel);
  return std::move(parser.get().body());
}

ApiResult<size_t> HttpConnection::ReadBodySome(std::string* out, Deadline deadline,
                                               Cancellation* cancel, bool* done) {
  Impl& im = *impl_;
  ScopedAttach attach(cancel, this);
  *done = false;
  if (!im.body_parser) {
    if (!im.head_parser) return ApiError::Of(0, "TransportError", "no response head", im.what);
    im.body_parser.emplace(std::move(*im.head_parser));
    im.head_parser.reset();
  }
  auto& parser = *im.body_parser;
  char buf[16 * 1024];
  while (true) {
    if (parser.is_done()) {
      *done = true;
      return size_t{0};
    }
    parser.get().body().data = buf;
    parser.get().body().size = sizeof(buf);
    parser.get().body().more = true;
    beast::error_code ec = im.RunOnStream(deadline, cancel, [&](auto& stream, auto handler) {
      http::async_read_some(stream, im.buffer, parser, handler);
    });
    if (ec == http::error::need_buffer) ec = {};
    if (ec) return im.Fail(ec, "read watch stream", cancel);
    const size_t n = sizeof(buf) - parser.get().body().size;
    if (n > 0) {
      out->append(buf, n);
      *done = parser.is_done();
      return n;
    }
  }
}

}  // namespace taskgov::scheduler::kube
