#include "extender/request_parser.h"

#include <boost/beast/core/string.hpp>
#include <boost/beast/http/field.hpp>
#include <boost/beast/http/rfc7230.hpp>
#include <boost/optional/optional.hpp>
#include <limits>

namespace taskgov::extender {

namespace beast = boost::beast;
namespace http = beast::http;

void StartHeaderParser(size_t max_header_bytes, std::optional<HeaderParser>* parser) {
  parser->emplace();
  (*parser)->header_limit(static_cast<uint32_t>(max_header_bytes));
  // The route's limit is only known once the path is; StartBodyParser applies it. (Not
  // boost::none: Beast 1.74 compares the content length against the optional and fails.)
  (*parser)->body_limit(std::numeric_limits<std::uint64_t>::max());
}

std::optional<ServerError> CheckFraming(const http::request<http::empty_body>& header,
                                        bool* expect_continue) {
  std::string codings;
  int tokens = 0;
  bool chunked = false;
  for (auto [it, end] = header.equal_range(http::field::transfer_encoding); it != end; ++it) {
    if (!codings.empty()) codings += ", ";
    codings.append(it->value().data(), it->value().size());
    for (beast::string_view token : http::token_list{it->value()}) {
      ++tokens;
      chunked = beast::iequals(token, "chunked");
    }
  }
  if (!codings.empty() && !(tokens == 1 && chunked)) {
    return ServerError{http::status::not_implemented,
                       "Transfer-Encoding '" + codings + "' is not supported (only chunked)",
                       {}};
  }
  if (auto it = header.find(http::field::content_encoding); it != header.end()) {
    return ServerError{http::status::unsupported_media_type,
                       "Content-Encoding '" + std::string(it->value()) +
                           "' is not supported; send the body unencoded",
                       {{"Accept-Encoding", "identity"}}};
  }
  if (auto it = header.find(http::field::expect); it != header.end() && header.version() >= 11) {
    if (!beast::iequals(it->value(), "100-continue")) {
      return ServerError{
          http::status::expectation_failed,
          "Expect '" + std::string(it->value()) + "' is not supported (only 100-continue)",
          {}};
    }
    *expect_continue = true;
  }
  return std::nullopt;
}

bool DeclaresTooLargeBody(const HeaderParser& header, uint64_t body_limit) {
  const boost::optional<uint64_t> length = header.content_length();
  return length && *length > body_limit;
}

bool StartBodyParser(uint64_t body_limit, std::optional<HeaderParser>* header,
                     std::optional<BodyParser>* body) {
  if (DeclaresTooLargeBody(**header, body_limit)) return false;
  body->emplace(std::move(**header));
  header->reset();
  (*body)->body_limit(body_limit);  // enforced while reading chunked bodies
  return true;
}

}  // namespace taskgov::extender
