// SPDX-License-Identifier: Apache-2.0
// Incremental HTTP/1.1 request parser: the one seam over libhttp-parser (internal to
// mcpcore::transport).
#ifndef MCPCORE_TRANSPORT_HTTP_HEAD_PARSER_HPP
#define MCPCORE_TRANSPORT_HTTP_HEAD_PARSER_HPP

#include <cstddef>
#include <mcpcore/detail/config.hpp>
#include <mcpcore/wire/http.hpp>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

MCPCORE_BEGIN_NAMESPACE

namespace transport::detail {

/// The caps one `http_head_parser` enforces. Each is checked as bytes arrive, so a parser never
/// buffers more than these allow.
struct head_limits {
  /// Longest request target (the bytes between method and version). Beyond: 414.
  std::size_t max_target_bytes = 8192;
  /// Longest head: the request line plus every header line, CRLFs (and any empty lines before the
  /// request line) included; the trailer section of a chunked body is counted in the same budget.
  /// Beyond: 431. libhttp-parser adds its own compiled-in cap of 80 KiB per head (also 431).
  std::size_t max_header_bytes = 16384;
  /// Most header fields in one request (trailer fields count too). Beyond: 431.
  std::size_t max_header_count = 100;
  /// Largest request content, in bytes, after de-chunking. Beyond: 413. A declared
  /// `Content-Length` is checked as soon as the head is complete (feed() stops there with
  /// state error, peek() still shows the head); a chunked body is checked at each chunk size.
  std::size_t max_body_bytes = std::size_t{4} << 20U;
};

/// Longest chunk-size line of a chunked body (size, chunk extensions and CRLF), in bytes. Longer
/// lines are rejected with 400; extensions are validated (RFC 9112 §7.1.1) and then ignored.
inline constexpr std::size_t max_chunk_line_bytes = 1024;

/// Longest method the parser waits for when libhttp-parser does not know it, in bytes: a token
/// of more tchars is answered 501 as soon as the byte beyond this cap arrives (RFC 9112 §3: "A
/// server that receives a method longer than any that it implements SHOULD respond with a 501"),
/// so an unknown method is never buffered beyond it. The longest method the library knows,
/// UNSUBSCRIBE, has 11 bytes.
inline constexpr std::size_t max_method_bytes = 32;

/// One parsed request. Filled progressively: method, target, version, headers, keep_alive and
/// expect_continue are final from `parse_state::headers_done`; body from `parse_state::complete`.
struct parsed_request {
  std::string method;     ///< "GET", "POST", ... as received (case-sensitive)
  /// The request target as received (not decoded), in origin-form: an absolute-form target
  /// (`http://host:port/path?query`, RFC 9112 §3.2.2) becomes its path and query (`/` when the
  /// path is empty), and its authority replaces every `Host` field (see `headers`).
  std::string target;
  int version_minor = 1;  ///< 0 for HTTP/1.0, 1 for HTTP/1.1 (no other version is accepted)
  /// Header fields in the order received: names as received, values with leading and trailing
  /// spaces and tabs (OWS) removed. The trailer fields of a chunked body are validated, counted
  /// and dropped (RFC 9110 §6.5.1: never merged into the header section). For an absolute-form
  /// target, the `Host` fields received are dropped and one `Host` field carrying the target's
  /// authority takes the place of the first (or ends the list when there was none): RFC 9112
  /// §3.2.2 has the server ignore the received `Host` then.
  std::vector<mcpcore::http_header> headers;
  std::string body;  ///< the content, de-chunked; empty when there is none
  /// Whether the connection may carry another request after this one: HTTP/1.1 unless a
  /// `Connection` field lists `close`; HTTP/1.0 only when a `Connection` field lists `keep-alive`.
  bool keep_alive = true;
  /// An HTTP/1.1 request carries `Expect: 100-continue` (the transport may answer 100 before
  /// reading the body). Other expectations, and any in HTTP/1.0, are ignored.
  bool expect_continue = false;
};

/// Where a parser stands.
enum class parse_state {
  need_more,     ///< the head is not complete yet: feed more bytes
  headers_done,  ///< head parsed (peek() is valid); the body is still coming
  complete,      ///< a whole request parsed: take() it
  error,         ///< the input is rejected: see failure(); the parser accepts nothing more
};

/// The printable name of a state ("need_more", "headers_done", "complete", "error").
[[nodiscard]] std::string_view to_string(parse_state state) noexcept;

/// Whether the comma-separated list `list` (RFC 9110 §5.6.1, e.g. a `Connection` value) has an
/// element equal to `token`, ignoring ASCII case and the spaces and tabs around each element.
/// Shared by the request parser and the response writer.
[[nodiscard]] bool list_has_token(std::string_view list, std::string_view token) noexcept;

/// Why a request was rejected: the status to answer with, then close the connection.
///  - 400: malformed syntax: the request line (a method that is not a token included: an empty
///    one, a line starting with SP, a byte other than a tchar, such as HTAB, CR, LF or NUL, before
///    the first SP), a target byte that is not visible ASCII, a header name that is not a token, a
///    control character such as NUL, CR or LF in a value, a CR not followed by LF, obsolete line
///    folding, Content-Length together with Transfer-Encoding, a repeated Content-Length (even
///    with equal values), Transfer-Encoding in HTTP/1.0, a bad chunk size line or extension, chunk
///    data not followed by CRLF, a target with a fragment (`#`, RFC 9112 §3.2), an absolute-form
///    target whose scheme is not `http` or `https`, whose authority is empty or carries userinfo
///  - 413: content larger than `max_body_bytes`, a chunk size beyond 64 bits ("chunk size too
///    large")
///  - 414: request target longer than `max_target_bytes`
///  - 431: head larger than `max_header_bytes`, or more than `max_header_count` fields
///  - 500: memory exhausted while buffering the request
///  - 501: a method libhttp-parser does not know that is a token (RFC 9110 §9.1: `QUERY`, `FOO`,
///    lower-case `get`...; settled at the SP after it, or at once beyond `max_method_bytes`),
///    Transfer-Encoding other than exactly `chunked`, an `Upgrade` field, CONNECT. Known methods
///    the endpoint does not serve (PUT, PATCH...) are parsed: the endpoint answers 405
///  - 505: HTTP version other than 1.0 and 1.1 (HTTP/0.9 included), and the method `PRI` (the
///    HTTP/2 connection preface `PRI * HTTP/2.0`)
struct parse_failure {
  int status = 400;         ///< the status code to answer with
  std::string_view reason;  ///< short English text (static storage), for logs and the response body
};

/// Parses HTTP/1.1 requests from a byte stream, one request at a time, within `head_limits`.
///
/// Use: feed() what arrived; on `complete`, take() the request and feed the bytes feed() did not
/// consume (a pipelined request) again; on `error`, answer failure().status and close. A request
/// whose body arrives in the same feed() as its head goes straight from need_more to complete.
///
/// libhttp-parser owns the grammar; this seam owns the limits and rejects what the library, as
/// Debian builds it (without HTTP_PARSER_STRICT), would tolerate (see parse_failure). Every
/// outcome depends only on the bytes, never on how they were split between feed() calls: a
/// method the library rejects is consumed (need_more) until the byte that settles 501 or 400.
///
/// Not synchronised: one parser per connection, used by one thread at a time. Movable (a
/// moved-from parser may only be destroyed or assigned to); not copyable. Nothing but the
/// constructor throws.
class http_head_parser {
 public:
  /// A parser waiting for the first byte of a request. Allocates its state (may throw bad_alloc).
  explicit http_head_parser(head_limits limits = {});
  ~http_head_parser();
  http_head_parser(http_head_parser&&) noexcept;
  http_head_parser& operator=(http_head_parser&&) noexcept;
  http_head_parser(const http_head_parser&) = delete;
  http_head_parser& operator=(const http_head_parser&) = delete;

  /// Consumes a prefix of `data` and returns its length. Stops right after the end of a
  /// complete request, so bytes of a pipelined request that follow stay with the caller (to be
  /// fed after take()). Consumes nothing in state complete or error. On error the returned count
  /// is the bytes examined before the error was found (the caller closes the connection anyway).
  /// Memory exhaustion while buffering becomes error 500.
  std::size_t feed(std::string_view data) noexcept;

  /// Like feed(), but stops as soon as the head is complete (state headers_done), before any body
  /// byte, so that a transport can check the head before it reads or buffers the body
  /// (docs/transport.md#body-buffering). In state headers_done it consumes nothing: feed() reads
  /// the body.
  std::size_t feed_head(std::string_view data) noexcept;

  /// The current state.
  [[nodiscard]] parse_state state() const noexcept;

  /// The request being parsed: valid (head complete) from headers_done; its body is complete only
  /// in state complete. After a 413 for a declared Content-Length it still shows the head.
  /// Refers into the parser: invalidated by feed(), take() and moves.
  [[nodiscard]] const parsed_request& peek() const noexcept;

  /// In state complete: moves the request out and resets the parser for the next request on the
  /// same connection (limits kept). Precondition: state() == parse_state::complete.
  parsed_request take();

  /// In state error: the status and reason to answer with (in any other state: {400, ""}).
  [[nodiscard]] parse_failure failure() const noexcept;

  /// The declared `Content-Length` of the current request once its head is parsed; 0 when the
  /// request has none (no body, or a chunked body).
  [[nodiscard]] std::size_t body_declared() const noexcept;

  /// Whether the current request's body is chunked (final from headers_done).
  [[nodiscard]] bool body_chunked() const noexcept;

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

}  // namespace transport::detail

MCPCORE_END_NAMESPACE

#endif  // MCPCORE_TRANSPORT_HTTP_HEAD_PARSER_HPP
