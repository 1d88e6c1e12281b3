#include "extender/request_parser.h"

#include <gtest/gtest.h>

#include <boost/asio/buffer.hpp>
#include <boost/beast/core/error.hpp>
#include <string_view>

namespace taskgov::extender {
namespace {

// Parses `text` as one request's header the way the server does; false when the header is
// incomplete or malformed.
bool ParseHeader(std::string_view text, std::optional<HeaderParser>* parser) {
  StartHeaderParser(32 * 1024, parser);
  boost::beast::error_code ec;
  (*parser)->put(boost::asio::buffer(text.data(), text.size()), ec);
  return !ec && (*parser)->is_header_done();
}

// Found by request_parser_fuzz (the exact bytes): a Content-Length far above the route's limit.
// The body parser's string body would reserve it at once (std::length_error); the header is
// refused instead, and the server answers 413 (http_server_test).
TEST(RequestParser, DeclaredLengthAboveTheLimitIsRefusedBeforeTheBody) {
  const std::string_view kFound =
      "POST /bind HTTP/1.1\r\nHost: 127.0.0.1:88%8\r\nUser-Qgent: Go-http-clie gzip\r\nExpect: "
      "100-continue\r\nContent-Length: 00007241543250761220096\r\n\r\n{\"podNxpect: "
      "100-cont0003\",\"node\":\"ip-10-0-3-5\"}\n";
  std::optional<HeaderParser> header;
  ASSERT_TRUE(ParseHeader(kFound, &header));
  EXPECT_TRUE(DeclaresTooLargeBody(*header, 64 * 1024));
  std::optional<BodyParser> body;
  EXPECT_FALSE(StartBodyParser(64 * 1024, &header, &body));
  EXPECT_FALSE(body.has_value());
  EXPECT_TRUE(header.has_value());  // left for the 413 reply
}

TEST(RequestParser, DeclaredLengthWithinTheLimitStartsTheBody) {
  std::optional<HeaderParser> header;
  ASSERT_TRUE(
      ParseHeader("POST /bind HTTP/1.1\r\nHost: x\r\nContent-Length: 65536\r\n\r\n", &header));
  EXPECT_FALSE(DeclaresTooLargeBody(*header, 64 * 1024));
  std::optional<BodyParser> body;
  ASSERT_TRUE(StartBodyParser(64 * 1024, &header, &body));
  EXPECT_FALSE(header.has_value());
  EXPECT_EQ(body->get().target(), "/bind");
}

}  // namespace
}  // namespace taskgov::extender
