// SPDX-License-Identifier: Apache-2.0
// The protected-resource metadata of the HTTP endpoint (RFC 9728, docs/oauth.md#protected-resource-metadata):
// the document, the paths it is served at, and what the 401 challenge says. Made once, when the
// endpoint is constructed.
#ifndef MCPCORE_IMPL_RESOURCE_METADATA_IPP
#define MCPCORE_IMPL_RESOURCE_METADATA_IPP

#include <mcpcore/detail/config.hpp>
#include <mcpcore/governance/scopes.hpp>
#include <mcpcore/transport/http_endpoint.hpp>
#include <mcpcore/wire/json_writer.hpp>

#include <cstddef>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

MCPCORE_BEGIN_NAMESPACE

namespace detail {

/// The well-known path of RFC 9728 (its section 3).
inline constexpr std::string_view protected_resource_well_known = "/.well-known/oauth-protected-resource";

/// The parts of an absolute `http://` or `https://` URI that the metadata needs.
struct http_uri_parts {
  std::string_view origin;  ///< `scheme://authority`
  std::string_view path;    ///< from the first `/` after the authority; empty when there is none
};

/// `uri` split, or nullopt when it is not an absolute http(s) URI of visible ASCII with a
/// non-empty authority and no userinfo, query or fragment.
[[nodiscard]] inline std::optional<http_uri_parts> split_http_uri(std::string_view uri) noexcept {
  std::size_t scheme_end = 0;
  if (uri.starts_with("https://")) {
    scheme_end = 8;
  } else if (uri.starts_with("http://")) {
    scheme_end = 7;
  } else {
    return std::nullopt;
  }
  for (const char c : uri) {
    if (c <= 0x20 || c >= 0x7f || c == '?' || c == '#' || c == '"' || c == '\\') return std::nullopt;
  }
  const std::size_t slash = uri.find('/', scheme_end);
  const std::size_t authority_end = slash == std::string_view::npos ? uri.size() : slash;
  const std::string_view authority = uri.substr(scheme_end, authority_end - scheme_end);
  if (authority.empty() || authority.find('@') != std::string_view::npos) return std::nullopt;
  return http_uri_parts{uri.substr(0, authority_end), uri.substr(authority_end)};
}

/// The endpoint's protected-resource metadata, made from its options.
struct protected_resource_doc {
  std::string body;             ///< the JSON document; empty: none is served
  std::string root_path;        ///< `/.well-known/oauth-protected-resource`
  std::string suffixed_path;    ///< the same with the resource's path appended; empty when it has none
  std::string challenge_url;    ///< `resource_metadata` of the 401; empty: none
  std::string challenge_scope;  ///< `scope` of the 401; empty: none

  [[nodiscard]] bool serves(std::string_view path) const noexcept {
    return !body.empty() && (path == root_path || (!suffixed_path.empty() && path == suffixed_path));
  }
};

/// Whether `s` is one or more scope-tokens separated by single spaces.
[[nodiscard]] inline bool is_scope_list(std::string_view s) noexcept {
  if (s.empty()) return false;
  for (;;) {
    const std::size_t sp = s.find(' ');
    if (!is_scope_token(s.substr(0, sp))) return false;
    if (sp == std::string_view::npos) return true;
    s.remove_prefix(sp + 1);
  }
}

/// The metadata of `o` and the challenge of the 401, `configured_url` (the endpoint's
/// `resource_metadata_url`) taking precedence over the document's own URL.
/// @throws std::invalid_argument naming the option it refuses
[[nodiscard]] inline protected_resource_doc make_protected_resource(const protected_resource_options& o,
                                                                    std::string_view configured_url) {
  protected_resource_doc d;
  d.challenge_url = std::string{configured_url};
  if (o.resource.empty()) {
    if (!o.authorization_servers.empty() || !o.scopes_supported.empty() || !o.challenge_scope.empty()) {
      throw std::invalid_argument("protected_resource: authorization servers or scopes without a resource");
    }
    return d;
  }
  const std::optional<http_uri_parts> resource = split_http_uri(o.resource);
  if (!resource) {
    throw std::invalid_argument(
        "protected_resource.resource: not an absolute http(s) URI without userinfo, query or fragment");
  }
  if (o.authorization_servers.empty()) {
    throw std::invalid_argument("protected_resource.authorization_servers: at least one issuer is needed");
  }
  for (const std::string& as : o.authorization_servers) {
    if (!split_http_uri(as)) {
      throw std::invalid_argument("protected_resource.authorization_servers: not an absolute http(s) URI: " + as);
    }
  }
  for (const std::string& sc : o.scopes_supported) {
    if (!is_scope_token(sc)) throw std::invalid_argument("protected_resource.scopes_supported: not a scope-token");
  }
  if (!o.challenge_scope.empty() && !is_scope_list(o.challenge_scope)) {
    throw std::invalid_argument("protected_resource.challenge_scope: not scope-tokens separated by single spaces");
  }
  for (const char c : o.resource_name) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      throw std::invalid_argument("protected_resource.resource_name: a control character");
    }
  }
  const std::string_view path = resource->path == "/" ? std::string_view{} : resource->path;
  d.root_path = std::string{protected_resource_well_known};
  if (!path.empty()) d.suffixed_path = d.root_path + std::string{path};
  if (d.challenge_url.empty()) {
    d.challenge_url = std::string{resource->origin} + (path.empty() ? d.root_path : d.suffixed_path);
  }
  d.challenge_scope = o.challenge_scope;
  json::writer w{d.body};
  w.begin_object().member("resource", o.resource).key("authorization_servers").begin_array();
  for (const std::string& as : o.authorization_servers) w.value(as);
  w.end_array();
  if (!o.scopes_supported.empty()) {
    w.key("scopes_supported").begin_array();
    for (const std::string& sc : o.scopes_supported) w.value(sc);
    w.end_array();
  }
  w.key("bearer_methods_supported").begin_array().value("header").end_array();
  if (!o.resource_name.empty()) w.member("resource_name", o.resource_name);
  w.end_object();
  return d;
}

}  // namespace detail

MCPCORE_END_NAMESPACE

#endif  // MCPCORE_IMPL_RESOURCE_METADATA_IPP
