// SPDX-License-Identifier: Apache-2.0
// The HTTP/1.1 response side of one connection, sans-I/O (internal to mcpcore::transport): the
// status line and head, Content-Length or chunked or close-delimited bodies, the keep-alive
// decision, `100 Continue` and the headers the server adds. The Asio connection drives it and
// writes the bytes it appends; nothing here touches a socket or a clock of its own.
#ifndef MCPCORE_TRANSPORT_HTTP_RESPONSE_WRITER_HPP
#define MCPCORE_TRANSPORT_HTTP_RESPONSE_WRITER_HPP

#include <mcpcore/detail/config.hpp>
#include <mcpcore/wire/http.hpp>

#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>

MCPCORE_BEGIN_NAMESPACE

namespace transport::detail {

/// How the body of a response is delimited (RFC 9112 §6.3).
enum class body_framing : unsigned char {
  content_length,  ///< a complete body: `Content-Length` (none on 1xx, 204 and 304)
  chunked,         ///< a streamed body to an HTTP/1.1 client: `Transfer-Encoding: chunked`
  until_close,     ///< a streamed body to an HTTP/1.0 client: the end of the connection ends it
};

/// The interim answer to `Expect: 100-continue` (RFC 9110 §10.1.1): a status line, no fields.
inline constexpr std::string_view continue_response = "HTTP/1.1 100 Continue\r\n\r\n";
/// The last chunk of a chunked body, without trailer fields (RFC 9112 §7.1).
inline constexpr std::string_view last_chunk = "0\r\n\r\n";

/// The reason phrase the server writes for `status` ("Status" for a code it has no phrase for).
[[nodiscard]] std::string_view reason_phrase(int status) noexcept;

/// Whether a response with `status` never has content (RFC 9110 §6.4.1: 1xx, 204, 304).
[[nodiscard]] constexpr bool body_forbidden(int status) noexcept {
  return (status >= 100 && status < 200) || status == 204 || status == 304;
}

/// Appends `when` as an IMF-fixdate (RFC 9110 §5.6.7, `Sun, 06 Nov 1994 08:49:37 GMT`), in UTC,
/// independent of the locale.
void append_http_date(std::string& out, std::chrono::system_clock::time_point when);

/// Appends the status line and header section of `r` (the final empty line included).
///
/// The status is written as is when it has three digits (100-999), else as 500. The fields of
/// `r` are written in order, except that a field is dropped when its name is empty or holds `:`,
/// or its name or value holds CR, LF or NUL, and `Content-Length`, `Transfer-Encoding` and
/// `Connection` are always dropped: the server owns the framing. Then, in this order:
///  - `Date` (from `now`) and `X-Content-Type-Options: nosniff`, each unless `r` has it;
///  - content_length: `Content-Length: <body_size>`, except for a status without content;
///  - chunked and until_close: `Cache-Control: no-cache` and `X-Accel-Buffering: no` (each unless
///    `r` has it; proxies must not buffer a stream), then for chunked
///    `Transfer-Encoding: chunked`;
///  - `Connection: keep-alive` or `Connection: close`.
void append_head(std::string& out, const http_response& r, body_framing framing, std::size_t body_size,
                 bool keep_alive, std::chrono::system_clock::time_point now);

/// Appends `bytes` as chunks of at most `max_chunk_bytes` (asio_http_server.hpp), each as
/// `<size in lower-case hex>\r\n<data>\r\n`; nothing for empty `bytes` (an empty chunk would end
/// the body).
void append_chunks(std::string& out, std::string_view bytes);

/// What the response to one request depends on, taken from the parsed request.
struct request_facts {
  int version_minor = 1;   ///< 0 for HTTP/1.0, 1 for HTTP/1.1
  bool keep_alive = true;  ///< the request allows another after it (parsed_request::keep_alive)
  bool head = false;       ///< the method is HEAD: the head only, never a body
};

/// Serializes the responses of one connection, one at a time, and remembers the decisions made
/// for the current one (its framing, and whether the connection carries another request after
/// it). Every member appends to the caller's buffer; the caller writes the bytes in order.
///
/// Per response: begin() with the request's facts, then reply() with the handler's answer; for
/// a streamed answer, append_stream() for each piece of the body and end_stream() after the
/// last. An answer not tied to a parsed request (a parse failure, a connection refused) is
/// written with close_with() instead and always ends the connection.
///
/// Not synchronised: one writer per connection, used by one thread at a time (the connection's
/// strand). Nothing but memory allocation throws.
class http_response_writer {
 public:
  using clock = std::chrono::system_clock;

  /// Starts the response to a request with `facts`.
  void begin(const request_facts& facts) noexcept;

  /// Appends the reply to the current request: its head, and its body unless it is streamed.
  /// `persist`: whether the connection itself could carry another request (false once the server
  /// is stopping or the peer has closed its sending side). The connection is kept alive only when
  /// the request allows it, `persist` holds, the reply's `Connection` does not list `close`, and a
  /// streamed body is chunked (HTTP/1.1); an HTTP/1.0 stream is delimited by the close.
  ///
  /// A streamed answer (`streamed`) is written as a head only, with Content-Length (the body's
  /// size, 0 for a stream), when the request is HEAD or the status has no content; a complete
  /// answer to HEAD likewise (its Content-Length is the body it would have had).
  /// @returns whether the body follows as a stream: append_stream() it, then end_stream().
  bool reply(std::string& out, const http_response& r, bool streamed, bool persist, clock::time_point now);

  /// Appends `r` as a complete response with `Connection: close`, for an answer not tied to a
  /// parsed request; the connection closes after it.
  void close_with(std::string& out, const http_response& r, clock::time_point now);

  /// Appends one piece of a streamed body, chunked or as is (until_close). Nothing for none.
  void append_stream(std::string& out, std::string_view bytes) const;

  /// Ends a streamed body. @returns true when bytes were appended (the last chunk); false when
  /// the body is close-delimited: closing the connection ends it.
  bool end_stream(std::string& out) const;

  /// Whether the connection carries another request after the current response.
  [[nodiscard]] bool keep_alive() const noexcept { return keep_alive_; }

  /// The framing of the current response.
  [[nodiscard]] body_framing framing() const noexcept { return framing_; }

 private:
  request_facts request_{};
  body_framing framing_ = body_framing::content_length;
  bool keep_alive_ = true;  // the decision for the current response, once reply()/close_with() made it
};

/// The answer to a request the parser rejected: `status`, `Content-Type: text/plain;
/// charset=utf-8`, and `reason` (the reason phrase when empty) and a line feed as the body.
[[nodiscard]] http_response parse_error_response(int status, std::string_view reason);

/// The answer to a connection accepted beyond `max_connections`: 503, `Retry-After: 1`, a plain
/// text body.
[[nodiscard]] http_response over_capacity_response();

/// The answer to a request whose body does not fit in the server's body budget
/// (`max_buffered_body_bytes`, docs/transport.md#body-buffering): 503, `Retry-After: 1`, a plain
/// text body.
[[nodiscard]] http_response body_budget_response();

/// The answer when the handler throws instead of answering: 500, a plain text body.
[[nodiscard]] http_response internal_error_response();

}  // namespace transport::detail

MCPCORE_END_NAMESPACE

#endif  // MCPCORE_TRANSPORT_HTTP_RESPONSE_WRITER_HPP
