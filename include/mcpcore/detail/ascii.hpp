// SPDX-License-Identifier: Apache-2.0
// ASCII text helpers shared by every layer: case-insensitive comparison (HTTP field names and
// tokens, MCP enum values), hex digits and percent-decoding. Locale-free; one copy for the whole
// library, the examples and the transport.
#ifndef MCPCORE_DETAIL_ASCII_HPP
#define MCPCORE_DETAIL_ASCII_HPP

#include <mcpcore/detail/config.hpp>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

MCPCORE_BEGIN_NAMESPACE

namespace detail {

/// `c` with A-Z mapped to a-z; every other byte unchanged (no locale, no UTF-8 folding).
[[nodiscard]] constexpr char ascii_lower(char c) noexcept {
  return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
}

/// Whether `a` and `b` are equal ignoring ASCII case (RFC 9110 field names and tokens).
[[nodiscard]] constexpr bool ascii_iequals(std::string_view a, std::string_view b) noexcept {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (ascii_lower(a[i]) != ascii_lower(b[i])) return false;
  }
  return true;
}

/// The value of one hex digit (either case), or -1 for any other byte.
[[nodiscard]] constexpr int hex_value(char c) noexcept {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/// Percent-decodes `s` (RFC 3986 section 2.1): each `%XY` becomes the byte 0xXY, everything
/// else is copied. `std::nullopt` when a `%` is not followed by two hex digits. The result may
/// hold any byte, NUL included; callers that need UTF-8 check it themselves.
/// @throws std::bad_alloc
[[nodiscard]] inline std::optional<std::string> percent_decode(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '%') {
      out.push_back(s[i]);
      continue;
    }
    if (i + 2 >= s.size()) return std::nullopt;
    const int hi = hex_value(s[i + 1]);
    const int lo = hex_value(s[i + 2]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out.push_back(static_cast<char>((hi * 16) + lo));
    i += 2;
  }
  return out;
}

}  // namespace detail

MCPCORE_END_NAMESPACE

#endif  // MCPCORE_DETAIL_ASCII_HPP
