// SPDX-License-Identifier: Apache-2.0
// Outgoing HTTP requests of the OAuth authenticators (JWKS, introspection): the fetch seam and its
// cpp-httplib implementation (docs/oauth.md#keys-and-rotation).
#ifndef MCPCORE_TRANSPORT_HTTP_FETCH_HPP
#define MCPCORE_TRANSPORT_HTTP_FETCH_HPP

#include <mcpcore/detail/config.hpp>
#include <mcpcore/expected.hpp>

#include <chrono>
#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

MCPCORE_BEGIN_NAMESPACE

namespace transport {

/// The timeout of a `fetch_request` that names none: 5 s.
inline constexpr std::chrono::milliseconds default_fetch_timeout{5000};
/// The body cap of a `fetch_request` that names none: 1 MiB.
inline constexpr std::size_t default_fetch_max_body_bytes = std::size_t{1} << 20U;

/// One outgoing HTTP request.
struct fetch_request {
  /// `https://host[:port]/path[?query]` (or `http://`, see `httplib_fetcher_options::allow_http`).
  std::string url{};
  /// The request method.
  std::string method = "GET";
  /// The `Content-Type` of `body`; empty when there is no body.
  std::string content_type{};
  /// The request body; empty for none.
  std::string body{};
  /// Further header fields (`Accept`, `Authorization`, ...).
  std::vector<std::pair<std::string, std::string>> headers{};
  /// How long connecting, and then each read and write, may take.
  std::chrono::milliseconds timeout = default_fetch_timeout;
  /// The largest response body accepted, in bytes: a larger one fails the fetch while it is read.
  std::size_t max_body_bytes = default_fetch_max_body_bytes;
};

/// The answer to a `fetch_request`, whatever its status (redirects are not followed: a 3xx is an
/// answer like any other).
struct fetch_response {
  int status = 0;              ///< the HTTP status code
  std::string content_type{};  ///< the `Content-Type` field; empty when absent
  std::string body{};          ///< the body, at most `fetch_request::max_body_bytes` long
};

/// Performs one request, blocking. A failure to get an answer (a refused URL, no connection, a
/// timeout, a TLS failure, a body over the cap) is an `error`; an answer with any status is a
/// `fetch_response`. Called from the authenticator's own thread: it must be thread-safe.
using fetch_function = std::function<result<fetch_response>(const fetch_request&)>;

/// An `http(s)://` URL taken apart by `parse_http_url`; every view points into the URL.
struct http_url_parts {
  bool https = false;                ///< `https://` (any case), else `http://`
  std::string_view authority{};      ///< `host[:port]`, as written
  std::string_view host{};           ///< the host, without brackets and port
  std::string_view path_and_query{}; ///< from the first `/` or `?` on; empty when there is neither
};

/// The parts of `url` when it is `http(s)://` (the scheme in any case), then a non-empty host, of
/// visible ASCII, without user information or fragment: the URLs `httplib_fetcher` will fetch;
/// nullopt otherwise.
[[nodiscard]] MCPCORE_API std::optional<http_url_parts> parse_http_url(std::string_view url) noexcept;

/// Whether `host` (as in `http_url_parts::host`) is loopback: `localhost` (any case), `::1`, or
/// a dotted `127.` address. The hosts `httplib_fetcher` fetches plain `http://` from without
/// `allow_http`.
[[nodiscard]] MCPCORE_API bool is_loopback_host(std::string_view host) noexcept;

/// How `httplib_fetcher` connects.
struct httplib_fetcher_options {
  /// A PEM file of the certificate authorities to trust; empty: the system's (OpenSSL's default
  /// verify paths).
  std::string ca_file{};
  /// Whether server certificates (and host names) are verified. Leave it on: off is for tests.
  bool verify_certificates = true;
  /// Whether `http://` URLs are fetched whatever their host. Without it, plain HTTP is allowed
  /// only for a loopback host (`localhost`, `127.0.0.0/8`, `[::1]`).
  bool allow_http = false;
};

/// A `fetch_function` on cpp-httplib: one connection per request, HTTPS with certificate and
/// host-name verification (unless turned off), `fetch_request::timeout` for connecting and for
/// each read and write, the body refused (the fetch fails with `std::errc::message_size`) as soon
/// as it grows past `max_body_bytes`, no redirect followed, no credentials in URLs.
///
/// Errors (docs/errors.md#one-error-shape), `code()` in the generic category:
/// `invalid_argument` (a URL that is not `http(s)://host...`, or holds user information or a
/// fragment), `permission_denied` (plain HTTP to a host that is not loopback without
/// `allow_http`), `timed_out`, `message_size` (the body cap), `connection_refused` (any other
/// connection, TLS or protocol failure); `message()` says which URL and why.
/// @throws std::bad_alloc
[[nodiscard]] MCPCORE_API fetch_function httplib_fetcher(httplib_fetcher_options options = {});

}  // namespace transport

MCPCORE_END_NAMESPACE

#endif  // MCPCORE_TRANSPORT_HTTP_FETCH_HPP
