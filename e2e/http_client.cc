#include "e2e/http_client.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cctype>

namespace taskgov::e2e {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

struct HttpClient::Conn {
  asio::io_context ioc;
  beast::tcp_stream stream{ioc};
  beast::flat_buffer buffer;
};

HttpClient::HttpClient(std::string host, uint16_t port, std::chrono::milliseconds timeout)
    : host_(std::move(host)), port_(port), timeout_(timeout) {}

HttpClient::~HttpClient() = default;

Result<HttpReply> HttpClient::Request(const std::string& method, const std::string& target,
                                      const std::string& body, const std::string& content_type) {
  for (int attempt = 0; attempt < 2; ++attempt) {
    const bool fresh = conn_ == nullptr;
    if (fresh) {
      conn_ = std::make_unique<Conn>();
      beast::error_code ec;
      auto address = asio::ip::make_address(host_, ec);
      if (ec) return Error{"bad host '" + host_ + "': " + ec.message()};
      conn_->stream.expires_after(timeout_);
      conn_->stream.connect(tcp::endpoint(address, port_), ec);
      if (ec) {
        conn_.reset();
        return Error{"connect " + host_ + ":" + std::to_string(port_) + ": " + ec.message()};
      }
      conn_->stream.socket().set_option(tcp::no_delay(true), ec);
      ++connections_opened_;
    }
    http::request<http::string_body> req(http::string_to_verb(method), target, 11);
    req.set(http::field::host, host_);
    req.set(http::field::user_agent, "taskgov-e2e");
    if (!body.empty() || method == "POST") req.set(http::field::content_type, content_type);
    req.body() = body;
    req.prepare_payload();
    req.keep_alive(true);
    beast::error_code ec;
    conn_->stream.expires_after(timeout_);
    http::write(conn_->stream, req, ec);
    http::response_parser<http::string_body> parser;
    parser.body_limit(512 * 1024 * 1024);
    if (!ec) http::read(conn_->stream, conn_->buffer, parser, ec);
    if (ec) {
      conn_.reset();
      // A kept-alive connection the server closed meanwhile: retry once on a new one, as Go does.
      if (!fresh && (ec == http::error::end_of_stream || ec == asio::error::connection_reset ||
                     ec == asio::error::broken_pipe || ec == asio::error::eof)) {
        continue;
      }
      return Error{method + " " + target + ": " + ec.message()};
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
  return Error{method + " " + target + ": connection closed twice"};
}

}  // namespace taskgov::e2e
