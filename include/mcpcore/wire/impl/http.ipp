// SPDX-License-Identifier: Apache-2.0
// Sans-I/O HTTP values: header lookup in requests and responses.
#ifndef MCPCORE_IMPL_HTTP_IPP
#define MCPCORE_IMPL_HTTP_IPP

#include <mcpcore/wire/http.hpp>

#include <mcpcore/detail/ascii.hpp>

#include <cstddef>

MCPCORE_BEGIN_NAMESPACE

// Field names compare with detail::ascii_iequals: ASCII case folding only, never std::tolower,
// which depends on the C locale.
MCPCORE_DECL std::optional<std::string_view> http_response::header(std::string_view name) const noexcept {
  for (const http_header& h : headers) {
    if (detail::ascii_iequals(h.name, name)) return std::string_view{h.value};
  }
  return std::nullopt;
}

MCPCORE_DECL std::optional<std::string_view> http_request_view::header(std::string_view name) const noexcept {
  for (const http_header& h : headers) {
    if (detail::ascii_iequals(h.name, name)) return std::string_view{h.value};
  }
  return std::nullopt;
}

// For fields that must appear once (credentials): refusing a repeat means no two components can
// each read a different copy.
MCPCORE_DECL bool http_request_view::header_repeated(std::string_view name) const noexcept {
  std::size_t n = 0;
  for (const http_header& h : headers) {
    if (detail::ascii_iequals(h.name, name) && ++n > 1) return true;
  }
  return false;
}

MCPCORE_END_NAMESPACE

#endif  // MCPCORE_IMPL_HTTP_IPP
