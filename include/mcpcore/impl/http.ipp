// SPDX-License-Identifier: Apache-2.0
// Sans-I/O HTTP values: header lookup in requests and responses.
#ifndef MCPCORE_IMPL_HTTP_IPP
#define MCPCORE_IMPL_HTTP_IPP

#include <mcpcore/http.hpp>

#include <cstddef>

MCPCORE_BEGIN_NAMESPACE
namespace detail {

// ASCII case folding only: 'A'-'Z' become 'a'-'z'; every other byte (including UTF-8 lead and
// continuation bytes) is itself. Not std::tolower, which depends on the C locale.
[[nodiscard]] constexpr char http_ascii_lower(char c) noexcept {
  return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
}

[[nodiscard]] constexpr bool http_iequals(std::string_view a, std::string_view b) noexcept {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (http_ascii_lower(a[i]) != http_ascii_lower(b[i])) return false;
  }
  return true;
}

}  // namespace detail

MCPCORE_DECL std::optional<std::string_view> http_response::header(std::string_view name) const noexcept {
  for (const http_header& h : headers) {
    if (detail::http_iequals(h.name, name)) return std::string_view{h.value};
  }
  return std::nullopt;
}

MCPCORE_DECL std::optional<std::string_view> http_request_view::header(std::string_view name) const noexcept {
  for (const http_header& h : headers) {
    if (detail::http_iequals(h.name, name)) return std::string_view{h.value};
  }
  return std::nullopt;
}

MCPCORE_DECL bool http_request_view::header_repeated(std::string_view name) const noexcept {
  std::size_t n = 0;
  for (const http_header& h : headers) {
    if (detail::http_iequals(h.name, name) && ++n > 1) return true;
  }
  return false;
}

MCPCORE_END_NAMESPACE

#endif  // MCPCORE_IMPL_HTTP_IPP
