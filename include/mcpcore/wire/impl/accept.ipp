// SPDX-License-Identifier: Apache-2.0
// Accept header matching.
#ifndef MCPCORE_IMPL_ACCEPT_IPP
#define MCPCORE_IMPL_ACCEPT_IPP

#include <mcpcore/wire/accept.hpp>

#include <mcpcore/detail/ascii.hpp>

MCPCORE_BEGIN_NAMESPACE
namespace detail {

constexpr bool is_ows(char c) noexcept { return c == ' ' || c == '\t'; }

MCPCORE_INTERNAL bool media_type_equals(std::string_view element, std::string_view media_type) noexcept {
  // element: the text before any ';', trimmed.
  while (!element.empty() && is_ows(element.front())) element.remove_prefix(1);
  while (!element.empty() && is_ows(element.back())) element.remove_suffix(1);
  if (element.size() != media_type.size()) return false;
  // Media types are case-insensitive; `media_type` is given in lower case. Never std::tolower,
  // which depends on the C locale.
  for (std::size_t i = 0; i < element.size(); ++i)
    if (ascii_lower(element[i]) != media_type[i]) return false;
  return true;
}

}  // namespace detail

MCPCORE_DECL bool accept_lists(std::string_view header, std::string_view media_type) noexcept {
  bool found = false;
  std::size_t type_begin = 0;
  std::size_t type_end = std::string_view::npos;  // position of the first ';' of the element
  bool in_quotes = false;
  for (std::size_t i = 0; i <= header.size(); ++i) {
    if (i == header.size() || (!in_quotes && header[i] == ',')) {
      if (in_quotes) return false;  // unterminated quoted string: fail closed
      const std::size_t end = type_end == std::string_view::npos ? i : type_end;
      if (detail::media_type_equals(header.substr(type_begin, end - type_begin), media_type)) found = true;
      type_begin = i + 1;
      type_end = std::string_view::npos;
      continue;
    }
    const char c = header[i];
    if (in_quotes) {
      if (c == '\\') {
        ++i;  // quoted-pair: the next byte is literal
        // A backslash as the last byte leaves the quoted string open: fail closed as well.
        if (i == header.size()) return false;
      } else if (c == '"') {
        in_quotes = false;
      }
    } else if (c == '"') {
      in_quotes = true;
    } else if (c == ';' && type_end == std::string_view::npos) {
      type_end = i;
    }
  }
  return found;
}

MCPCORE_END_NAMESPACE

#endif  // MCPCORE_IMPL_ACCEPT_IPP
