// SPDX-License-Identifier: Apache-2.0
// Sans-I/O HTTP values: what a host's HTTP server hands to mcpcore endpoints and gets back.
#ifndef MCPCORE_HTTP_HPP
#define MCPCORE_HTTP_HPP

#include <mcpcore/detail/config.hpp>

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <stop_token>
#include <string_view>
#include <vector>

MCPCORE_BEGIN_NAMESPACE

/// One response header. mcpcore writes names in their canonical capitalisation
/// (`Content-Type`) and never writes CR, LF or NUL into a name or a value.
struct http_header {
  std::string name;   ///< field name (RFC 9110 §5.1: a token; compared case-insensitively)
  std::string value;  ///< field value, without surrounding whitespace
};

/// One request header field as the host's HTTP server holds it: views into the host's buffer,
/// valid for the call the request is passed to (mcpcore copies neither the name nor the value).
struct http_header_view {
  std::string_view name;   ///< field name, in any case (compared ASCII case-insensitively)
  std::string_view value;  ///< field value, without surrounding whitespace
};

/// The local address a request arrived on (docs/http.md#the-request-view), for the `Host` check
/// against DNS rebinding (docs/security.md#dns-rebinding-host-and-origin).
///
/// A default-constructed one means "nothing known" and is treated as loopback (the `Host` is
/// checked). `loopback = false` is a claim the endpoint verifies: the `Host` check is skipped only
/// when `address` also reads as an IP address that is neither loopback nor unspecified
/// (`treated_as_loopback`), exactly the rule a formatted address string met before.
///
/// A plain aggregate of a view: `address` must stay valid for the call it is passed to.
struct http_local_address {
  /// The IP address without port: `127.0.0.1`, `::1` (IPv6 with or without brackets,
  /// `[2001:db8::1]`); empty when unknown.
  std::string_view address{};
  std::uint16_t port = 0;  ///< the local port; 0 when unknown
  /// Whether the listener is a loopback one. Default true: fail safe.
  bool loopback = true;

  /// Whether an endpoint treats this address as loopback and checks `Host`: true unless
  /// `loopback` is false and `address` reads as an IPv4 address (dotted decimal) or an IPv6 one
  /// (RFC 4291 text form, no zone) other than loopback (127/8, `::1`, IPv4-mapped 127/8), the
  /// unspecified addresses and the deprecated IPv4-compatible forms.
  [[nodiscard]] MCPCORE_DECL bool treated_as_loopback() const noexcept;
};

/// Reads a local address formatted as `<IPv4>[:<port>]` (`127.0.0.1:8765`) or
/// `[<IPv6>][:<port>]` (`[::1]:8765`; the brackets are required): `address` is a view into `text`
/// (without brackets), `port` the port (0 when left out), and `loopback` false only when the
/// address is neither loopback nor unspecified. Anything it cannot read so (empty, `::1:8765`
/// without brackets, a name, a port above 65535, junk) gives `{.address = {}, .port = 0,
/// .loopback = true}`: the `Host` is then checked (fail safe).
[[nodiscard]] MCPCORE_DECL http_local_address parse_local_address(std::string_view text) noexcept;

/// A request as the host's HTTP server parsed it (method, target, header fields and the complete
/// body, after the host applied its own transport limits).
///
/// A plain aggregate of views: what they refer to must stay valid for the duration of the call
/// it is passed to; mcpcore keeps no reference afterwards.
struct http_request_view {
  std::string_view method;  ///< "GET", "POST", ... (case-sensitive, RFC 9110 §9.1)
  /// Origin-form request target (RFC 9112 §3.2.1): the absolute path, then optionally `?` and
  /// the query, exactly as received (not percent-decoded, dot segments not removed).
  std::string_view target;
  std::string_view body;  ///< the request content, already de-chunked; empty when there is none
  /// The header fields as received, in order (names in any case; a repeated field appears once
  /// per line), as views into the host's buffers. Empty when the host does not pass them (the
  /// approval endpoint needs none).
  std::span<const http_header_view> headers{};
  /// The peer's address as the host formats it (`127.0.0.1:53122`); for audit rows only.
  std::string_view remote{};
  /// The local address the request arrived on. An endpoint validates `Host` against DNS
  /// rebinding unless it reads as a non-loopback address (`http_local_address::treated_as_loopback`);
  /// the default (nothing known) is checked (docs/security.md#dns-rebinding-host-and-origin). A
  /// host holding the address as text reads it with `parse_local_address`.
  http_local_address local{};
  /// Signalled when the client goes away before it has its answer (the connection closed, or the
  /// client shut its sending side): the endpoint cancels the per-request call it serves
  /// (docs/eras.md#streams). Default: never.
  std::stop_token disconnected{};
  /// The body length the head declares (`Content-Length`), for checks made before the body is
  /// read (`http_endpoint::check_head`); `std::nullopt` when the head declares none.
  std::optional<std::uint64_t> declared_length{};
  /// The head declares a chunked body (`Transfer-Encoding: chunked`): its length is known only as
  /// it arrives.
  bool chunked = false;

  /// The value of the first field named `name` (ASCII case-insensitive), or `std::nullopt`.
  [[nodiscard]] MCPCORE_DECL std::optional<std::string_view> header(std::string_view name) const noexcept;
  /// Whether a field named `name` appears more than once.
  [[nodiscard]] MCPCORE_DECL bool header_repeated(std::string_view name) const noexcept;
};

/// A complete (non-streaming) response for the host to write: status line, headers in order,
/// then `body` (the host adds `Content-Length` and any framing headers of its own).
///
/// A plain value: copy it freely; it is not synchronised.
struct http_response {
  int status = 200;                   ///< the status code (RFC 9110 §15)
  std::vector<http_header> headers;  ///< in the order to write them; names may repeat
  std::string body;                   ///< the response content

  /// The value of the first header whose name equals `name` ignoring ASCII case (only A-Z and
  /// a-z are folded; other bytes, non-ASCII included, must match exactly), or `std::nullopt`.
  /// The view refers into `headers` and is invalidated by any change to it.
  [[nodiscard]] MCPCORE_DECL std::optional<std::string_view> header(std::string_view name) const noexcept;
};

MCPCORE_END_NAMESPACE

#if defined(MCPCORE_HEADER_ONLY)
#  include <mcpcore/wire/impl/http.ipp>
#endif

#endif  // MCPCORE_HTTP_HPP
