#include "scheduler/common/testing/http_client.h"

#include <openssl/ssl.h>
#include <openssl/x509_vfy.h>
#include <poll.h>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/stream_traits.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#include <cctype>
#include <optional>

namespace taskgov::common::testing {
namespace {

namespace asio = boost::asio;
namespace ssl = asio::ssl;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using TlsStream = beast::ssl_stream<beast::tcp_stream>;

// Errors that mean the server closed a kept-alive connection under us.
bool IsDeadConnection(const beast::error_code& ec) {
  return ec == http::error::end_of_stream || ec == asio::error::connection_reset ||
         ec == asio::error::broken_pipe || ec == asio::error::eof ||
         ec == ssl::error::stream_truncated;
}

}  // namespace

struct HttpClient::Tls {
  HttpClientTls options;
  std::optional<ssl::context> ctx;  // built by the first connect
};

struct HttpClient::Conn {
  asio::io_context ioc{1};
  std::optional<beast::tcp_stream> plain;
  std::optional<TlsStream> tls;
  beast::flat_buffer buffer;
  std::string alpn;

  beast::tcp_stream& Tcp() { return tls ? beast::get_lowest_layer(*tls) : *plain; }

  // Runs the operations started on this connection until they finished (each has a deadline).
  void Run() {
    ioc.restart();
    ioc.run();
  }

  // Whether the server closed (or wrote to) the idle connection since the last reply: then it
  // must not be reused. Checks the socket without blocking.
  bool LooksDead() {
    if (buffer.size() > 0) return true;  // unsolicited bytes: the stream is out of step
    pollfd fd{Tcp().socket().native_handle(), POLLIN, 0};
    return ::poll(&fd, 1, 0) != 0;  // readable (EOF, alert, data) or error
  }
};

HttpClient::HttpClient(std::string host, uint16_t port, std::chrono::milliseconds timeout)
    : host_(std::move(host)), port_(port), timeout_(timeout) {}

HttpClient::HttpClient(std::string host, uint16_t port, HttpClientTls tls,
                       std::chrono::milliseconds timeout)
    : host_(std::move(host)),
      port_(port),
      timeout_(timeout),
      tls_(std::make_unique<Tls>(Tls{std::move(tls), std::nullopt})) {}

HttpClient::~HttpClient() = default;

void HttpClient::CloseConnection() { conn_.reset(); }

std::string HttpClient::negotiated_protocol() const { return conn_ ? conn_->alpn : ""; }

namespace {

// "1.2" → TLS1_2_VERSION; 0 for an unknown text.
int TlsVersion(const std::string& text) {
  if (text == "1.0") return TLS1_VERSION;
  if (text == "1.1") return TLS1_1_VERSION;
  if (text == "1.2") return TLS1_2_VERSION;
  if (text == "1.3") return TLS1_3_VERSION;
  return 0;
}

common::Status BuildClientContext(const HttpClientTls& options, std::optional<ssl::context>* out) {
  ssl::context& ctx = out->emplace(ssl::context::tls_client);
  const int min_version = TlsVersion(options.min_version);
  const int max_version = options.max_version.empty() ? 0 : TlsVersion(options.max_version);
  if (min_version == 0 || (!options.max_version.empty() && max_version == 0)) {
    return common::Error{"unknown TLS version '" + options.min_version + "' / '" +
                         options.max_version + "'"};
  }
  SSL_CTX_set_min_proto_version(ctx.native_handle(), min_version);
  SSL_CTX_set_max_proto_version(ctx.native_handle(), max_version);
  if (min_version < TLS1_2_VERSION) {
    SSL_CTX_set_cipher_list(ctx.native_handle(), "DEFAULT:@SECLEVEL=0");
  }
  beast::error_code ec;
  if (options.ca_file.empty()) {
    ctx.set_verify_mode(ssl::verify_none, ec);
  } else {
    ctx.load_verify_file(options.ca_file, ec);
    if (ec) return common::Error{"CA file '" + options.ca_file + "': " + ec.message()};
    ctx.set_verify_mode(ssl::verify_peer, ec);
  }
  if (!options.cert_file.empty()) {
    ctx.use_certificate_chain_file(options.cert_file, ec);
    if (ec) return common::Error{"client certificate '" + options.cert_file + "': " + ec.message()};
    ctx.use_private_key_file(options.key_file, ssl::context::pem, ec);
    if (ec) return common::Error{"client key '" + options.key_file + "': " + ec.message()};
  }
  return common::Status::Ok();
}

}  // namespace

common::Status HttpClient::Connect() {
  const std::string where = host_ + ":" + std::to_string(port_);
  beast::error_code ec;
  auto address = asio::ip::make_address(host_, ec);
  if (ec)
    return common::Error{"bad host '" + host_ + "' (an IP literal is needed): " + ec.message()};
  auto conn = std::make_unique<Conn>();
  if (tls_) {
    if (!tls_->ctx) {
      if (common::Status s = BuildClientContext(tls_->options, &tls_->ctx); !s.ok()) {
        tls_->ctx.reset();
        return s.error().Wrap("TLS client setup");
      }
    }
    conn->tls.emplace(conn->ioc, *tls_->ctx);
    SSL* ssl = conn->tls->native_handle();
    const HttpClientTls& options = tls_->options;
    const std::string& name = options.server_name.empty() ? host_ : options.server_name;
    beast::error_code not_ip;
    (void)asio::ip::make_address(name, not_ip);
    if (not_ip) SSL_set_tlsext_host_name(ssl, name.c_str());
    if (options.verify_server_name && !options.ca_file.empty()) {
      const int ok = not_ip ? SSL_set1_host(ssl, name.c_str())
                            : X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), name.c_str());
      if (ok != 1) return common::Error{"TLS client setup: cannot verify name '" + name + "'"};
    }
    if (!options.alpn.empty()) {
      std::string wire;
      for (const std::string& protocol : options.alpn) {
        wire.push_back(static_cast<char>(protocol.size()));
        wire += protocol;
      }
      if (SSL_set_alpn_protos(ssl, reinterpret_cast<const unsigned char*>(wire.data()),
                              static_cast<unsigned int>(wire.size())) != 0) {
        return common::Error{"TLS client setup: bad ALPN list"};
      }
    }
  } else {
    conn->plain.emplace(conn->ioc);
  }

  conn->Tcp().expires_after(timeout_);
  conn->Tcp().async_connect(tcp::endpoint(address, port_),
                            [&ec](beast::error_code result) { ec = result; });
  conn->Run();
  if (ec) return common::Error{"connect " + where + ": " + ec.message()};
  ++connections_opened_;
  conn->Tcp().socket().set_option(tcp::no_delay(true), ec);

  if (conn->tls) {
    conn->Tcp().expires_after(timeout_);
    conn->tls->async_handshake(ssl::stream_base::client,
                               [&ec](beast::error_code result) { ec = result; });
    conn->Run();
    if (ec) {
      std::string message = "TLS handshake with " + where + ": " + ec.message();
      const long verify = SSL_get_verify_result(conn->tls->native_handle());  // NOLINT
      if (verify != X509_V_OK) {
        message += " (server certificate: ";
        message += X509_verify_cert_error_string(verify);
        message += ")";
      }
      return common::Error{std::move(message)};
    }
    const unsigned char* selected = nullptr;
    unsigned int selected_len = 0;
    SSL_get0_alpn_selected(conn->tls->native_handle(), &selected, &selected_len);
    conn->alpn.assign(reinterpret_cast<const char*>(selected), selected_len);
    if (!conn->alpn.empty() && conn->alpn != "http/1.1") {
      return common::Error{"TLS handshake with " + where + ": server selected ALPN protocol '" +
                           conn->alpn + "'; this client speaks HTTP/1.1 only"};
    }
  }
  conn_ = std::move(conn);
  return common::Status::Ok();
}

common::Result<HttpReply> HttpClient::RoundTrip(const std::string& method,
                                                const std::string& target, const std::string& body,
                                                const std::string& content_type,
                                                const Headers& headers, bool* retryable) {
  http::request<http::string_body> req(http::string_to_verb(method), target, 11);
  req.set(http::field::host, host_);
  req.set(http::field::user_agent, "taskgov-e2e");
  // Go's transport asks unless told not to; the servers tested here do not compress.
  if (!disable_compression_) req.set(http::field::accept_encoding, "gzip");
  if (!body.empty() || method == "POST") req.set(http::field::content_type, content_type);
  for (const auto& [name, value] : headers) req.set(name, value);
  req.body() = body;
  req.prepare_payload();
  req.keep_alive(true);
  http::response_parser<http::string_body> parser;
  parser.body_limit(512 * 1024 * 1024);

  // Write, then read, within one deadline (Go's Client.Timeout covers both); one code path for
  // both stream types.
  beast::error_code ec;
  auto exchange = [&](auto& stream) {
    http::async_write(stream, req, [&](beast::error_code write_ec, size_t) {
      if (write_ec) {
        ec = write_ec;
        return;
      }
      http::async_read(stream, conn_->buffer, parser,
                       [&ec](beast::error_code read_ec, size_t) { ec = read_ec; });
    });
  };
  conn_->Tcp().expires_after(timeout_);
  if (conn_->tls) {
    exchange(*conn_->tls);
  } else {
    exchange(*conn_->plain);
  }
  conn_->Run();
  if (ec) {
    conn_.reset();
    *retryable = IsDeadConnection(ec) && !parser.got_some();
    return common::Error{method + " " + target + ": " +
                         (ec == beast::error::timeout ? std::string("timed out") : ec.message())};
  }
  auto res = parser.release();
  HttpReply reply;
  reply.status = static_cast<int>(res.result_int());
  reply.body = std::move(res.body());
  for (const auto& field : res) {
    std::string name(field.name_string());
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    reply.headers[name] = std::string(field.value());
  }
  if (!res.keep_alive()) conn_.reset();
  return reply;
}

common::Result<HttpReply> HttpClient::Request(const std::string& method, const std::string& target,
                                              const std::string& body,
                                              const std::string& content_type,
                                              const Headers& headers) {
  for (int attempt = 0;; ++attempt) {
    bool reused = conn_ != nullptr;
    if (reused && conn_->LooksDead()) {
      conn_.reset();
      ++stale_connections_;
      reused = false;
    }
    if (!conn_) {
      if (common::Status s = Connect(); !s.ok()) return s.error();
    }
    bool retryable = false;
    common::Result<HttpReply> reply =
        RoundTrip(method, target, body, content_type, headers, &retryable);
    if (reply.ok() || !reused || !retryable || attempt > 0) return reply;
    ++retries_;  // the reused connection died before any reply byte: once more on a new one
  }
}

}  // namespace taskgov::common::testing
