// SPDX-License-Identifier: Apache-2.0
// Internal: the bearer token of a request's `Authorization` field (RFC 6750 §2.1), shared by the
// token authenticator and the OAuth authenticators.
#ifndef MCPCORE_SRC_TRANSPORT_BEARER_TOKEN_HPP
#define MCPCORE_SRC_TRANSPORT_BEARER_TOKEN_HPP

#include <mcpcore/detail/ascii.hpp>
#include <mcpcore/detail/config.hpp>
#include <mcpcore/wire/http.hpp>

#include <cstddef>
#include <optional>
#include <string_view>

MCPCORE_BEGIN_NAMESPACE

namespace transport::detail {

/// RFC 6750 §2.1 b64token: 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"=".
[[nodiscard]] constexpr bool is_b64token(std::string_view s) noexcept {
  std::size_t i = 0;
  for (; i < s.size(); ++i) {
    const char c = s[i];
    const bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
                    c == '.' || c == '_' || c == '~' || c == '+' || c == '/';
    if (!ok) break;
  }
  if (i == 0) return false;
  for (; i < s.size(); ++i) {
    if (s[i] != '=') return false;
  }
  return true;
}

/// The token of the request's one `Authorization: Bearer <token>` field: exactly one field, the
/// scheme case-insensitive, one or more spaces, a `b64token` (of any length: the caller applies
/// its cap). Nullopt for no field, several, another scheme or a malformed token. The view refers
/// into the request.
[[nodiscard]] inline std::optional<std::string_view> bearer_token(const http_request_view& req) noexcept {
  if (req.header_repeated("Authorization")) return std::nullopt;
  const auto field = req.header("Authorization");
  if (!field) return std::nullopt;
  // credentials = auth-scheme 1*SP token68 (RFC 9110 §11.4, RFC 6750 §2.1); the field value
  // carries no surrounding whitespace (RFC 9110 §5.5), which a lenient host may have left.
  std::string_view value = *field;
  while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
  while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) value.remove_suffix(1);
  constexpr std::string_view scheme = "Bearer";
  if (value.size() <= scheme.size() || !mcpcore::detail::ascii_iequals(value.substr(0, scheme.size()), scheme) ||
      value[scheme.size()] != ' ') {
    return std::nullopt;
  }
  std::string_view token = value.substr(scheme.size());
  while (!token.empty() && token.front() == ' ') token.remove_prefix(1);
  if (!is_b64token(token)) return std::nullopt;
  return token;
}

}  // namespace transport::detail

MCPCORE_END_NAMESPACE

#endif  // MCPCORE_SRC_TRANSPORT_BEARER_TOKEN_HPP
