#pragma once

// How HttpServer reads a request with Beast, in the one configuration the server uses, so the
// server (http_server.cc) and the fuzz target (request_parser_fuzz.cc) parse alike:
//  1. StartHeaderParser: a fresh parser per message, the header limited to max_header_bytes and
//     the body unlimited until the route (and its body limit) is known from the header;
//  2. CheckFraming: framing the server does not implement is refused before any body byte is
//     read;
//  3. DeclaresTooLargeBody: a Content-Length above the route's body limit is refused (413) before
//     any body byte is read or reserved;
//  4. StartBodyParser: the header parser's state moved into a string-body parser with the
//     route's body limit (enforced by Beast as the body arrives, chunked or not).
//
// Value code; a parser belongs to one connection's strand.

#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/status.hpp>
#include <boost/beast/http/string_body.hpp>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace taskgov::extender {

using HeaderParser = boost::beast::http::request_parser<boost::beast::http::empty_body>;
using BodyParser = boost::beast::http::request_parser<boost::beast::http::string_body>;

// (Re)creates `*parser` for the next message's header.
void StartHeaderParser(size_t max_header_bytes, std::optional<HeaderParser>* parser);

// A reply the server writes itself; the connection closes after it.
struct ServerError {
  boost::beast::http::status status;
  std::string message;
  std::vector<std::pair<std::string, std::string>> headers;
};

// Framing this server does not implement: a Transfer-Encoding other than a lone `chunked` (501;
// Beast would ignore it and read what follows as the next request), any Content-Encoding (415),
// an Expect other than `100-continue` (417). Sets *expect_continue when the request asks for
// `100 Continue` (HTTP/1.1 only).
[[nodiscard]] std::optional<ServerError> CheckFraming(
    const boost::beast::http::request<boost::beast::http::empty_body>& header,
    bool* expect_continue);

// Whether the completed header declares a Content-Length above `body_limit`. Such a request must
// be answered 413 at once: Beast's string body reserves the declared length when its first byte
// arrives (up to 2^64 - 1 bytes, from the client's say-so).
[[nodiscard]] bool DeclaresTooLargeBody(const HeaderParser& header, uint64_t body_limit);

// Moves the completed header's parser into `*body` with the route's body limit and resets
// `*header`. Refuses (returns false, nothing moved) when DeclaresTooLargeBody.
[[nodiscard]] bool StartBodyParser(uint64_t body_limit, std::optional<HeaderParser>* header,
                                   std::optional<BodyParser>* body);

}  // namespace taskgov::extender
