// SPDX-License-Identifier: Apache-2.0
// mcpcore-host as an OAuth 2.1 resource server: the scope flags, the discovery of the
// authorization server's metadata, the JWT authenticator (oauth_setup.hpp).
#include "oauth_setup.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cstddef>
#include <mcpcore/expected.hpp>
#include <mcpcore/governance/policy.hpp>
#include <mcpcore/governance/scopes.hpp>
#include <mcpcore/transport/http_endpoint.hpp>
#include <mcpcore/transport/http_fetch.hpp>
#include <mcpcore/transport/jwt_authenticator.hpp>
#include <mcpcore/wire/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace mcpcore_host {

namespace {

/// An `http(s)://` URL taken apart (enough for the checks here; the fetcher parses again).
struct url_parts {
  bool https = false;
  std::string_view origin;  ///< scheme://authority
  std::string_view host;    ///< without brackets or port
  std::string_view path;    ///< "" or from the first `/`
};

/// The parts of `url`, or nullopt when it is not `http(s)://host[:port][/path]` of visible ASCII
/// without user information, query or fragment (`parse_http_url`, which allows a query, then no
/// query).
std::optional<url_parts> split_url(std::string_view url) {
  const auto parsed = mcpcore::transport::parse_http_url(url);
  if (!parsed || url.find('?') != std::string_view::npos) return std::nullopt;
  url_parts out;
  out.https = parsed->https;
  const std::size_t scheme = (parsed->https ? std::string_view{"https://"} : std::string_view{"http://"}).size();
  out.origin = url.substr(0, scheme + parsed->authority.size());
  out.host = parsed->host;
  out.path = parsed->path_and_query;
  return out;
}

/// Whether `s` may be a role name: visible ASCII but `,`, at most `max_oauth_role_bytes` bytes.
bool is_role_name(std::string_view s) {
  return !s.empty() && s.size() <= max_oauth_role_bytes &&
         std::ranges::all_of(s, [](char c) { return c > 0x20 && c < 0x7f && c != ','; });
}

/// What one metadata URL gave: the `jwks_uri`, a reason to try the next URL (`next`), or a
/// reason to stop (`fatal`).
struct metadata_outcome {
  std::string jwks_uri;
  std::string next;
  std::string fatal;
};

metadata_outcome read_metadata(const oauth_settings& s, const std::string& url,
                               const mcpcore::transport::fetch_function& fetch) {
  mcpcore::transport::fetch_request req;
  req.url = url;
  req.headers.emplace_back("Accept", "application/json");
  req.timeout = s.fetch_timeout;
  req.max_body_bytes = max_as_metadata_bytes;
  auto got = fetch(req);
  if (!got)
    return {.jwks_uri = {}, .next = fmt::format("{}: {}", url, got.error().message()), .fatal = {}};
  if (got->status != 200)
    return {
        .jwks_uri = {}, .next = fmt::format("{}: HTTP status {}", url, got->status), .fatal = {}};
  mcpcore::json::parse_options po;
  po.max_bytes = max_as_metadata_bytes;
  mcpcore::json::document doc{po};
  auto root = doc.parse(got->body);
  if (!root || !root->is_object()) {
    return {.jwks_uri = {},
            .next = fmt::format("{}: the answer is not a JSON object", url),
            .fatal = {}};
  }
  const auto issuer = root->find("issuer");
  if (!issuer.is_string() || issuer.as_string() != s.issuer) {
    // RFC 8414 section 3.3: metadata naming another issuer must not be used.
    return {.jwks_uri = {},
            .next = {},
            .fatal = fmt::format(
                "{}: its issuer {} is not --oauth-issuer {} (they must be equal exactly)", url,
                issuer.is_string() ? fmt::format("\"{}\"", issuer.as_string()) : "(missing)",
                s.issuer)};
  }
  const auto jwks = root->find("jwks_uri");
  if (!jwks.is_string())
    return {.jwks_uri = {}, .next = {}, .fatal = fmt::format("{}: no jwks_uri", url)};
  std::string jwks_uri{jwks.as_string()};
  if (auto problem = as_url_problem(jwks_uri, s.allow_http, "the jwks_uri of " + url);
      !problem.empty()) {
    return {.jwks_uri = {}, .next = {}, .fatal = std::move(problem)};
  }
  return {.jwks_uri = std::move(jwks_uri), .next = {}, .fatal = {}};
}

}  // namespace

std::vector<mcpcore::scope_grant> default_scope_grants() {
  return {{.scope = "mcp:read", .tier = "readonly", .roles = {}},
          {.scope = "mcp:operate", .tier = "operator", .roles = {}},
          {.scope = "mcp:supervise", .tier = "supervised", .roles = {}}};
}

mcpcore::result<mcpcore::scope_grant, std::string> parse_scope_grant(std::string_view flag) {
  const auto refuse = [flag](std::string_view why) {
    return mcpcore::fail(
        fmt::format("--oauth-scope \"{}\": {} (the form is SCOPE=TIER[:ROLE,...])", flag, why));
  };
  const std::size_t eq = flag.find('=');
  if (eq == std::string_view::npos) return refuse("no =");
  mcpcore::scope_grant g;
  g.scope = std::string{flag.substr(0, eq)};
  if (!mcpcore::is_scope_token(g.scope)) return refuse("the scope is not an OAuth scope-token");
  std::string_view rest = flag.substr(eq + 1);
  const std::size_t colon = rest.find(':');
  const std::string_view tier = rest.substr(0, colon);
  if (!tier.empty() && !mcpcore::yuzu_tier_policy::known_tier(tier)) {
    return refuse("the tier is none of readonly, operator, supervised (or empty, for roles only)");
  }
  g.tier = std::string{tier};
  if (colon != std::string_view::npos) {
    rest = rest.substr(colon + 1);
    for (;;) {
      const std::size_t comma = rest.find(',');
      const std::string_view role = rest.substr(0, comma);
      if (!is_role_name(role)) return refuse("a role is empty, too long or not visible ASCII");
      if (std::ranges::find(g.roles, role) != g.roles.end())
        return refuse("a role is listed twice");
      g.roles.emplace_back(role);
      if (comma == std::string_view::npos) break;
      rest = rest.substr(comma + 1);
    }
  }
  if (g.tier.empty() && g.roles.empty()) return refuse("neither a tier nor a role");
  return g;
}

mcpcore::result<mcpcore::scope_map, std::string> scope_map_of(
    const std::vector<std::string>& flags) {
  if (flags.empty()) return mcpcore::scope_map{default_scope_grants()};
  std::vector<mcpcore::scope_grant> grants;
  grants.reserve(flags.size());
  for (const auto& f : flags) {
    auto g = parse_scope_grant(f);
    if (!g) return mcpcore::fail(std::move(g.error()));
    grants.push_back(std::move(*g));
  }
  if (auto problem = mcpcore::scope_map::check(grants))
    return mcpcore::fail("--oauth-scope: " + *problem);
  return mcpcore::scope_map{std::move(grants)};
}

std::string as_url_problem(std::string_view url, bool allow_http, std::string_view what) {
  const auto parts = split_url(url);
  if (!parts) {
    return fmt::format(
        "{} \"{}\" is not an http(s):// URL of visible ASCII with a host and no user information, "
        "query or fragment",
        what, url);
  }
  if (parts->https) return {};
  if (!allow_http)
    return fmt::format(
        "{} \"{}\" is plain http:// (allowed only with --oauth-allow-http, and only "
        "for a loopback host)",
        what, url);
  if (!mcpcore::transport::is_loopback_host(parts->host)) {
    return fmt::format(
        "{} \"{}\" is plain http:// to a host that is not loopback: --oauth-allow-http allows "
        "localhost, 127.0.0.0/8 and [::1] only",
        what, url);
  }
  return {};
}

std::vector<std::string> metadata_urls(std::string_view issuer) {
  const auto parts = split_url(issuer);
  if (!parts) return {};
  std::string_view path = parts->path;
  if (path.ends_with('/')) path.remove_suffix(1);
  std::string_view base = issuer;
  if (base.ends_with('/')) base.remove_suffix(1);
  return {fmt::format("{}/.well-known/oauth-authorization-server{}", parts->origin, path),
          fmt::format("{}/.well-known/openid-configuration", base)};
}

mcpcore::result<std::string, std::string> discover_jwks_uri(
    const oauth_settings& s, const mcpcore::transport::fetch_function& fetch) {
  if (auto problem = as_url_problem(s.issuer, s.allow_http, "--oauth-issuer"); !problem.empty()) {
    return mcpcore::fail(std::move(problem));
  }
  std::string tried;
  for (const auto& url : metadata_urls(s.issuer)) {
    auto outcome = read_metadata(s, url, fetch);
    if (!outcome.fatal.empty())
      return mcpcore::fail("authorization server metadata " + outcome.fatal);
    if (!outcome.jwks_uri.empty()) return std::move(outcome.jwks_uri);
    tried += tried.empty() ? "" : "; ";
    tried += outcome.next;
  }
  return mcpcore::fail(
      fmt::format("cannot discover the metadata of --oauth-issuer {}: {}", s.issuer, tried));
}

mcpcore::result<mcpcore::transport::jwt_authenticator, std::string> make_oauth_authenticator(
    const oauth_settings& s, const mcpcore::scope_map& scopes,
    const mcpcore::transport::fetch_function& fetch) {
  if (s.audience.empty())
    return mcpcore::fail(
        std::string{"--oauth-issuer needs --oauth-audience (this server's MCP URL)"});
  // The audience is this server's own URL: plain http:// is its operator's choice (loopback, a
  // TLS-terminating proxy), so only its form is checked here (the endpoint checks it again).
  if (!split_url(s.audience)) {
    return mcpcore::fail(
        fmt::format("--oauth-audience \"{}\" is not an http(s):// URL of visible ASCII with a host "
                    "and no user information, query or fragment",
                    s.audience));
  }
  auto jwks_uri = discover_jwks_uri(s, fetch);
  if (!jwks_uri) return mcpcore::fail(std::move(jwks_uri.error()));
  mcpcore::transport::jwt_authenticator_options o;
  o.issuer = s.issuer;
  o.audience = s.audience;
  o.jwks_uri = std::move(*jwks_uri);
  o.leeway = s.leeway;
  o.scopes = scopes;
  o.jwks_min_interval = s.jwks_min_interval;
  o.fetch_timeout = s.fetch_timeout;
  auto made = mcpcore::transport::jwt_authenticator::make(std::move(o), fetch);
  if (!made) return mcpcore::fail("cannot start the JWT authenticator: " + made.error().message());
  return std::move(*made);
}

mcpcore::transport::fetch_function oauth_fetcher(const oauth_settings& s) {
  mcpcore::transport::httplib_fetcher_options o;
  o.ca_file = s.ca_file;
  // allow_http stays off: the fetcher then allows plain HTTP to loopback hosts only, which is all
  // --oauth-allow-http permits (as_url_problem refuses any other before a fetch).
  o.allow_http = false;
  return mcpcore::transport::httplib_fetcher(std::move(o));
}

mcpcore::protected_resource_options protected_resource_of(const oauth_settings& s,
                                                          const mcpcore::scope_map& scopes) {
  mcpcore::protected_resource_options pr;
  pr.resource = s.audience;
  pr.authorization_servers = {s.issuer};
  for (const auto& g : scopes.grants()) pr.scopes_supported.push_back(g.scope);
  if (!scopes.empty()) pr.challenge_scope = scopes.grants().front().scope;
  pr.resource_name = "mcpcore-host";
  return pr;
}

}  // namespace mcpcore_host
