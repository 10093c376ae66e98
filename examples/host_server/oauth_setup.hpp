// SPDX-License-Identifier: Apache-2.0
// mcpcore-host as an OAuth 2.1 resource server (docs/host-server.md#with-an-authorization-server,
// docs/oauth.md#mcpcore-host-with-an-authorization-server): the scope flags, the discovery of the
// authorization server's metadata, and the JWT authenticator made from them.
#ifndef MCPCORE_HOST_OAUTH_SETUP_HPP
#define MCPCORE_HOST_OAUTH_SETUP_HPP

#include <chrono>
#include <cstddef>
#include <mcpcore/expected.hpp>
#include <mcpcore/governance/scopes.hpp>
#include <mcpcore/transport/http_endpoint.hpp>
#include <mcpcore/transport/http_fetch.hpp>
#include <mcpcore/transport/jwt_authenticator.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace mcpcore_host {

/// Largest authorization-server metadata document accepted at start, in bytes.
inline constexpr std::size_t max_as_metadata_bytes = std::size_t{64} << 10U;
/// Longest role name a `--oauth-scope` flag may give, in bytes.
inline constexpr std::size_t max_oauth_role_bytes = 128;

/// What the `--oauth-*` flags say (docs/host-server.md#flags).
struct oauth_settings {
  /// The authorization server's issuer identifier (`--oauth-issuer`); empty: OAuth is off.
  std::string issuer{};
  /// This server's resource identifier, its public MCP URL (`--oauth-audience`).
  std::string audience{};
  /// `SCOPE=TIER[:ROLE,...]`, least privilege first (`--oauth-scope`); empty: the default map.
  std::vector<std::string> scopes{};
  /// Whether a loopback authorization server may be reached over plain `http://`
  /// (`--oauth-allow-http`).
  bool allow_http = false;
  /// A PEM file of the authorities to trust for the authorization server's certificate
  /// (`--oauth-ca-file`); empty: the system's.
  std::string ca_file{};
  /// The JWT authenticator's `jwks_min_interval` (`--oauth-jwks-min-interval-ms`).
  std::chrono::milliseconds jwks_min_interval = mcpcore::transport::default_jwks_min_interval;
  /// The JWT authenticator's clock leeway (`--oauth-leeway-s`).
  std::chrono::seconds leeway = mcpcore::transport::default_jwt_leeway;
  /// The timeout of each fetch: the metadata at start, then the keys.
  std::chrono::milliseconds fetch_timeout = mcpcore::transport::default_fetch_timeout;
};

/// The map used when no `--oauth-scope` is given: `mcp:read=readonly`, `mcp:operate=operator`,
/// `mcp:supervise=supervised`.
[[nodiscard]] std::vector<mcpcore::scope_grant> default_scope_grants();

/// One `--oauth-scope` value, `SCOPE=TIER[:ROLE,...]`: the scope (an RFC 6749 scope-token, which
/// may hold `:`), after the first `=` a tier of the Yuzu table (`readonly`, `operator`,
/// `supervised`) or nothing (roles only), then optionally `:` and distinct, non-empty,
/// comma-separated roles of visible ASCII. Errors say what is wrong, quoting the value.
[[nodiscard]] mcpcore::result<mcpcore::scope_grant, std::string> parse_scope_grant(
    std::string_view flag);

/// The map of `flags` (the default map when empty), checked with `scope_map::check`.
[[nodiscard]] mcpcore::result<mcpcore::scope_map, std::string> scope_map_of(
    const std::vector<std::string>& flags);

/// Why `url` may not name the authorization server or its keys, or "" when it may: it must be an
/// `https://` URL, or, with `allow_http`, an `http://` URL of a loopback host (`localhost`,
/// `127.0.0.0/8`, `[::1]`); neither user information, a query nor a fragment. `what` names the
/// URL in the message.
[[nodiscard]] std::string as_url_problem(std::string_view url, bool allow_http,
                                         std::string_view what);

/// Where the metadata of `issuer` is looked for, in order: RFC 8414's
/// `<origin>/.well-known/oauth-authorization-server<path>` (any final `/` of the path removed),
/// then OpenID Connect's `<issuer>/.well-known/openid-configuration`.
[[nodiscard]] std::vector<std::string> metadata_urls(std::string_view issuer);

/// The `jwks_uri` of the authorization server `s.issuer`: fetches each of `metadata_urls` in turn
/// until one answers 200 with a JSON object (at most `max_as_metadata_bytes`) whose `issuer`
/// equals `s.issuer` exactly; its `jwks_uri` must pass `as_url_problem`. Errors say which URL
/// answered what.
[[nodiscard]] mcpcore::result<std::string, std::string> discover_jwks_uri(
    const oauth_settings& s, const mcpcore::transport::fetch_function& fetch);

/// Checks `s`, discovers the keys' URL and makes the authenticator (`scopes` its scope map).
/// Errors name the flag or the URL at fault.
[[nodiscard]] mcpcore::result<mcpcore::transport::jwt_authenticator, std::string>
make_oauth_authenticator(const oauth_settings& s, const mcpcore::scope_map& scopes,
                         const mcpcore::transport::fetch_function& fetch);

/// The fetcher of the `--oauth-*` flags: cpp-httplib, `ca_file`, plain HTTP only to a loopback
/// host (what `httplib_fetcher` allows without `allow_http`; `as_url_problem` asks the same).
[[nodiscard]] mcpcore::transport::fetch_function oauth_fetcher(const oauth_settings& s);

/// The protected-resource metadata of the endpoint: `resource` = the audience, the issuer as the
/// one authorization server, every scope of the map supported, the first one the challenge's.
[[nodiscard]] mcpcore::protected_resource_options protected_resource_of(
    const oauth_settings& s, const mcpcore::scope_map& scopes);

}  // namespace mcpcore_host

#endif  // MCPCORE_HOST_OAUTH_SETUP_HPP
