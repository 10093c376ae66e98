// SPDX-License-Identifier: Apache-2.0
// CORS on the MCP paths of the HTTP endpoint (docs/http.md#cors): the preflight of a listed origin,
// and the headers every answer to a listed origin carries. Off while `cors_options::allowed_origins`
// is empty. It never weakens the Host and Origin checks
// (docs/security.md#dns-rebinding-host-and-origin): a listed origin passes the Origin check, every
// other origin is checked as without CORS.
#ifndef MCPCORE_IMPL_CORS_IPP
#define MCPCORE_IMPL_CORS_IPP

// The endpoint's state (`http_endpoint::impl`) and its reply helpers.
#include <mcpcore/transport/impl/http_endpoint.ipp>

#include <mcpcore/detail/ascii.hpp>
#include <mcpcore/session/stream_types.hpp>
#include <mcpcore/transport/http_endpoint.hpp>
#include <mcpcore/wire/correlation_id.hpp>
#include <mcpcore/wire/era.hpp>
#include <mcpcore/wire/http.hpp>

#include <array>
#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

MCPCORE_BEGIN_NAMESPACE

namespace detail {

/// The request headers a listed origin's page may send (docs/http.md#cors), besides
/// `Mcp-Param-<name>`. Compared ASCII case-insensitively.
inline constexpr std::array<std::string_view, 8> cors_request_headers = {
    "Accept",       "Authorization",        "Content-Type", "Last-Event-ID",
    "Mcp-Session-Id", "MCP-Protocol-Version", "Mcp-Method",   "Mcp-Name"};
/// The prefix of the per-request era's argument headers (docs/eras.md#headers).
inline constexpr std::string_view cors_param_prefix = "Mcp-Param-";
/// The response headers a listed origin's page may read besides the CORS-safelisted ones.
inline constexpr std::string_view cors_expose_headers =
    "Mcp-Session-Id, MCP-Protocol-Version, WWW-Authenticate, Retry-After, X-Correlation-Id";
/// `Vary` of every MCP answer while CORS is on, and of a preflight answer.
inline constexpr std::string_view cors_vary = "Origin";
inline constexpr std::string_view cors_preflight_vary =
    "Origin, Access-Control-Request-Method, Access-Control-Request-Headers";

/// Whether `c` is an RFC 9110 tchar.
inline bool cors_tchar(char c) noexcept {
  if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) return true;
  return std::string_view{"!#$%&'*+-.^_`|~"}.find(c) != std::string_view::npos;
}

/// Whether a listed origin's page may send the request header `name`: one of
/// `cors_request_headers`, or `Mcp-Param-` followed by a token (any name: a header no tool
/// declares is ignored by the endpoint, docs/eras.md#headers).
inline bool cors_request_header_allowed(std::string_view name) noexcept {
  for (const std::string_view h : cors_request_headers) {
    if (ascii_iequals(name, h)) return true;
  }
  if (name.size() <= cors_param_prefix.size() ||
      !ascii_iequals(name.substr(0, cors_param_prefix.size()), cors_param_prefix)) {
    return false;
  }
  for (const char c : name.substr(cors_param_prefix.size())) {
    if (!cors_tchar(c)) return false;
  }
  return true;
}

/// The origin of `req` when CORS is on and its one `Origin` field is listed byte for byte; a
/// repeated `Origin` is never listed.
inline std::optional<std::string_view> cors_listed_origin(const cors_options& o, const http_request_view& req) noexcept {
  if (o.allowed_origins.empty() || req.header_repeated("Origin")) return std::nullopt;
  const std::optional<std::string_view> origin = req.header("Origin");
  if (!origin) return std::nullopt;
  for (const auto& a : o.allowed_origins) {
    if (*origin == a) return origin;
  }
  return std::nullopt;
}

/// Adds the headers of an answer while CORS is on: `Vary: Origin` always, and for a listed
/// `origin` (non-empty) `Access-Control-Allow-Origin`, `-Expose-Headers` and, when configured,
/// `-Allow-Credentials`.
inline void cors_add_headers(http_response& head, std::string_view origin, bool credentials) {
  head.headers.push_back(http_header{"Vary", std::string{cors_vary}});
  if (origin.empty()) return;
  head.headers.push_back(http_header{"Access-Control-Allow-Origin", std::string{origin}});
  if (credentials) head.headers.push_back(http_header{"Access-Control-Allow-Credentials", "true"});
  head.headers.push_back(http_header{"Access-Control-Expose-Headers", std::string{cors_expose_headers}});
}

/// The requested headers (`Access-Control-Request-Headers`, every field, comma-separated) that
/// are allowed, as the request spelled them, joined with ", ".
inline std::string cors_allowed_of(const http_request_view& req) {
  std::string out;
  for (const auto& h : req.headers) {
    if (!ascii_iequals(h.name, "Access-Control-Request-Headers")) continue;
    std::string_view rest = h.value;
    while (!rest.empty()) {
      const auto comma = rest.find(',');
      const std::string_view name = http_trim(rest.substr(0, comma));
      rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
      if (name.empty() || !cors_request_header_allowed(name)) continue;
      if (!out.empty()) out += ", ";
      out += name;
    }
  }
  return out;
}

}  // namespace detail

inline std::optional<http_reply> http_endpoint::impl::cors_preflight(const http_request_view& req) const {
  // docs/http.md#cors: an OPTIONS with Origin and Access-Control-Request-Method, CORS on.
  if (options.cors.allowed_origins.empty() || req.method != "OPTIONS" ||
      !req.header("Access-Control-Request-Method") || !req.header("Origin")) {
    return std::nullopt;
  }
  // The Host and Origin guards as on every route, before anything is answered
  // (docs/security.md#dns-rebinding-host-and-origin); a refusal carries the CORS headers of any
  // answer (a repeated Origin is never listed).
  const correlation_id cid = mint_cid();
  const std::optional<std::string_view> origin = detail::cors_listed_origin(options.cors, req);
  std::optional<http_reply> refused;
  if (req.header_repeated("Host")) {
    reject_row("repeated_host", {}, {}, cid.view());
    refused = detail::http_repeated_host(cid.view());
  } else if (req.header_repeated("Origin")) {
    reject_row(to_string(stream_reject::origin), {}, {}, cid.view());
    refused = detail::http_error(detail::refusal::origin, std::nullopt, cid.view(), "repeated_origin");
  } else if (!host_allowed(req)) {
    reject_row("host", {}, {}, cid.view());
    refused = detail::http_error(detail::refusal::host, std::nullopt, cid.view());
  }
  if (refused) {
    detail::cors_add_headers(refused->head, origin.value_or(std::string_view{}), options.cors.allow_credentials);
    return refused;
  }
  // An unlisted origin's preflight goes on as any OPTIONS (the kill switch, then 405): no CORS
  // header, so the browser refuses the request it was asked about.
  if (!origin) return std::nullopt;
  const bool sessions_served = options.sessions && serves(options.eras, protocol_era::handshake);
  http_reply r = detail::http_empty(204);
  detail::http_add(r, "Access-Control-Allow-Origin", *origin);
  detail::http_add(r, "Vary", detail::cors_preflight_vary);
  detail::http_add(r, "Access-Control-Allow-Methods",
                   sessions_served ? detail::http_allow_mcp : detail::http_allow_stateless);
  if (std::string allowed = detail::cors_allowed_of(req); !allowed.empty()) {
    detail::http_add(r, "Access-Control-Allow-Headers", allowed);
  }
  const std::chrono::seconds::rep max_age = options.cors.max_age.count();
  detail::http_add(r, "Access-Control-Max-Age", std::to_string(max_age < 0 ? 0 : max_age));
  if (options.cors.allow_credentials) detail::http_add(r, "Access-Control-Allow-Credentials", "true");
  return r;
}

inline void http_endpoint::impl::cors_decorate(http_response& head, const http_request_view& req) const {
  if (options.cors.allowed_origins.empty()) return;
  const std::optional<std::string_view> origin = detail::cors_listed_origin(options.cors, req);
  detail::cors_add_headers(head, origin.value_or(std::string_view{}), options.cors.allow_credentials);
}

inline void http_endpoint::impl::cors_wrap(const http_request_view& req, http_completion& done) const {
  if (options.cors.allowed_origins.empty() || !done) return;
  // The request's views die with the call; the completion may run later (from the executor).
  std::string origin{detail::cors_listed_origin(options.cors, req).value_or(std::string_view{})};
  done = [inner = std::move(done), origin = std::move(origin),
          credentials = options.cors.allow_credentials](http_reply r) mutable {
    try {
      detail::cors_add_headers(r.head, origin, credentials);
    } catch (...) {  // NOLINT(bugprone-empty-catch): out of memory, the answer still goes out (a browser refuses it)
    }
    inner(std::move(r));
  };
}

MCPCORE_END_NAMESPACE

#endif  // MCPCORE_IMPL_CORS_IPP
