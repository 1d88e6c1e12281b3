// Fuzzes the HTTP request reading of HttpServer: the input is what a client sends on one
// connection, delivered in reads whose sizes are taken from the input's own bytes. Requests are
// read one after another (keep-alive, pipelining) exactly as a session reads them — Beast's
// read_header into a parser from StartHeaderParser with the server's default header limit, then
// CheckFraming, then (unless the declared length exceeds the default route body limit: 413)
// Beast's read into the body parser from StartBodyParser with that limit — until an error, a
// refused framing or `Connection: close` ends the connection. Properties: nothing crashes; a body
// read never exceeds the route's limit.

#include <boost/asio/buffer.hpp>
#include <boost/asio/error.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/read.hpp>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "extender/http_server.h"
#include "extender/request_parser.h"
#include "scheduler/common/testing/fuzz_check.h"

namespace taskgov::extender {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

constexpr int kMaxRequests = 8;

// A SyncReadStream over the input: the k-th read returns 1..256 bytes, its size from byte k;
// then end of stream (the client closed).
class InputStream {
 public:
  explicit InputStream(std::string_view data) : data_(data) {}

  template <typename Buffers>
  size_t read_some(const Buffers& buffers, beast::error_code& ec) {
    if (pos_ == data_.size()) {
      ec = asio::error::eof;
      return 0;
    }
    ec = {};
    size_t n = 1 + static_cast<uint8_t>(data_[reads_++ % data_.size()]) % 256;
    n = std::min(n, data_.size() - pos_);
    n = asio::buffer_copy(buffers, asio::buffer(data_.data() + pos_, n));
    pos_ += n;
    return n;
  }

  template <typename Buffers>
  size_t read_some(const Buffers& buffers) {
    beast::error_code ec;
    size_t n = read_some(buffers, ec);
    if (ec) throw beast::system_error(ec);
    return n;
  }

 private:
  std::string_view data_;
  size_t pos_ = 0;
  size_t reads_ = 0;
};

// One request; false when the connection ends with it.
bool ReadOne(InputStream* stream, beast::flat_buffer* buffer) {
  static const HttpServerOptions kOptions;
  static const Route kRoute;
  std::optional<HeaderParser> header;
  StartHeaderParser(kOptions.max_header_bytes, &header);
  beast::error_code ec;
  http::read_header(*stream, *buffer, *header, ec);
  if (ec) return false;  // 400 / 431, or the peer closed
  bool expect_continue = false;
  if (CheckFraming(header->get(), &expect_continue)) return false;  // 415 / 417 / 501
  std::optional<BodyParser> body;
  if (!StartBodyParser(kRoute.body_limit, &header, &body)) return false;  // 413
  http::read(*stream, *buffer, *body, ec);
  if (ec) return false;  // 400 / 413, or the peer closed
  FUZZ_CHECK(body->get().body().size() <= kRoute.body_limit, "the body limit holds");
  return body->get().keep_alive();
}

}  // namespace
}  // namespace taskgov::extender

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace taskgov::extender;
  InputStream stream(std::string_view(reinterpret_cast<const char*>(data), size));
  boost::beast::flat_buffer buffer;
  for (int i = 0; i < kMaxRequests && ReadOne(&stream, &buffer); ++i) {
  }
  return 0;
}
