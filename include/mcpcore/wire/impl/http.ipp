// SPDX-License-Identifier: Apache-2.0
// Sans-I/O HTTP values: header lookup in requests and responses, and the local address's reading
// (docs/security.md#dns-rebinding-host-and-origin).
#ifndef MCPCORE_IMPL_HTTP_IPP
#define MCPCORE_IMPL_HTTP_IPP

#include <mcpcore/wire/http.hpp>

#include <mcpcore/detail/ascii.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

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
  for (const http_header_view& h : headers) {
    if (detail::ascii_iequals(h.name, name)) return h.value;
  }
  return std::nullopt;
}

// For fields that must appear once (credentials): refusing a repeat means no two components can
// each read a different copy.
MCPCORE_DECL bool http_request_view::header_repeated(std::string_view name) const noexcept {
  std::size_t n = 0;
  for (const http_header_view& h : headers) {
    if (detail::ascii_iequals(h.name, name) && ++n > 1) return true;
  }
  return false;
}

namespace detail {

/// An IPv4 address in dotted-decimal form (four decimal octets, no leading junk), or nullopt.
inline std::optional<std::array<std::uint8_t, 4>> http_parse_ipv4(std::string_view s) noexcept {
  std::array<std::uint8_t, 4> out{};
  for (std::size_t i = 0; i < 4; ++i) {
    if (i > 0) {
      if (s.empty() || s.front() != '.') return std::nullopt;
      s.remove_prefix(1);
    }
    std::size_t n = 0;
    unsigned v = 0;
    while (n < s.size() && n < 4 && s[n] >= '0' && s[n] <= '9') v = v * 10 + static_cast<unsigned>(s[n++] - '0');
    if (n == 0 || n > 3 || v > 255) return std::nullopt;
    out[i] = static_cast<std::uint8_t>(v);
    s.remove_prefix(n);
  }
  if (!s.empty()) return std::nullopt;
  return out;
}

/// An IPv6 address in RFC 4291 §2.2 text form (hex groups, at most one `::`, an optional dotted
/// IPv4 tail; no zone), or nullopt.
inline std::optional<std::array<std::uint8_t, 16>> http_parse_ipv6(std::string_view s) noexcept {
  std::array<std::uint16_t, 8> groups{};
  std::size_t count = 0;
  std::optional<std::size_t> gap;  // where `::` stands, in groups
  if (s.starts_with("::")) {
    gap = 0;
    s.remove_prefix(2);
  }
  while (!s.empty()) {
    if (count >= 8) return std::nullopt;
    const auto colon = s.find(':');
    const std::string_view part = s.substr(0, colon);
    if (colon == std::string_view::npos && part.find('.') != std::string_view::npos) {
      const auto v4 = http_parse_ipv4(part);
      if (!v4 || count > 6) return std::nullopt;
      groups[count++] = static_cast<std::uint16_t>(((*v4)[0] << 8U) | (*v4)[1]);
      groups[count++] = static_cast<std::uint16_t>(((*v4)[2] << 8U) | (*v4)[3]);
      s = {};
      break;
    }
    if (part.empty() || part.size() > 4) return std::nullopt;
    unsigned v = 0;
    for (const char c : part) {
      unsigned d = 0;
      if (c >= '0' && c <= '9') {
        d = static_cast<unsigned>(c - '0');
      } else if (c >= 'a' && c <= 'f') {
        d = static_cast<unsigned>(c - 'a' + 10);
      } else if (c >= 'A' && c <= 'F') {
        d = static_cast<unsigned>(c - 'A' + 10);
      } else {
        return std::nullopt;
      }
      v = v * 16 + d;
    }
    groups[count++] = static_cast<std::uint16_t>(v);
    if (colon == std::string_view::npos) {
      s = {};
      break;
    }
    s.remove_prefix(colon + 1);
    if (s.starts_with(":")) {
      if (gap) return std::nullopt;
      gap = count;
      s.remove_prefix(1);
    } else if (s.empty()) {
      return std::nullopt;  // a trailing single `:`
    }
  }
  if (gap ? count > 7 : count != 8) return std::nullopt;
  std::array<std::uint16_t, 8> full{};
  const std::size_t at = gap.value_or(count);
  for (std::size_t i = 0; i < at; ++i) full[i] = groups[i];
  for (std::size_t i = at; i < count; ++i) full[8 - (count - i)] = groups[i];
  std::array<std::uint8_t, 16> out{};
  for (std::size_t i = 0; i < 8; ++i) {
    out[2 * i] = static_cast<std::uint8_t>(full[i] >> 8U);
    out[2 * i + 1] = static_cast<std::uint8_t>(full[i] & 0xffU);
  }
  return out;
}

/// Whether `ip` (no port; IPv6 with or without brackets) reads as an IP address that is neither
/// loopback (127/8, `::1`, IPv4-mapped 127/8) nor unspecified, nor an IPv4-compatible IPv6 form:
/// the only addresses whose requests skip the `Host` check
/// (docs/security.md#dns-rebinding-host-and-origin). Anything unreadable is false: fail safe.
inline bool http_ip_is_public(std::string_view ip) noexcept {
  std::optional<std::array<std::uint8_t, 4>> v4;
  const bool bracketed = ip.size() >= 2 && ip.front() == '[' && ip.back() == ']';
  if (bracketed) ip = ip.substr(1, ip.size() - 2);
  if (bracketed || ip.find(':') != std::string_view::npos) {
    const auto v6 = http_parse_ipv6(ip);
    if (!v6) return false;
    bool zero10 = true;
    for (std::size_t i = 0; i < 10; ++i) zero10 = zero10 && (*v6)[i] == 0;
    const bool mapped = zero10 && (*v6)[10] == 0xff && (*v6)[11] == 0xff;
    const bool compat = zero10 && (*v6)[10] == 0 && (*v6)[11] == 0;  // ::a.b.c.d, ::1 and :: included
    if (compat) return false;  // ::, ::1 and the deprecated IPv4-compatible forms: checked
    if (!mapped) return true;  // an IPv6 address other than loopback, unspecified or IPv4-mapped
    v4 = std::array<std::uint8_t, 4>{(*v6)[12], (*v6)[13], (*v6)[14], (*v6)[15]};
  } else {
    v4 = http_parse_ipv4(ip);
    if (!v4) return false;
  }
  const auto& a = *v4;
  return a[0] != 127 && !(a[0] == 0 && a[1] == 0 && a[2] == 0 && a[3] == 0);
}

}  // namespace detail

MCPCORE_DECL bool http_local_address::treated_as_loopback() const noexcept {
  return loopback || !detail::http_ip_is_public(address);
}

MCPCORE_DECL http_local_address parse_local_address(std::string_view text) noexcept {
  std::string_view ip;
  std::string_view port;
  if (!text.empty() && text.front() == '[') {
    const auto close = text.find(']');
    if (close == std::string_view::npos) return {};
    ip = text.substr(1, close - 1);
    if (ip.find(':') == std::string_view::npos || !detail::http_parse_ipv6(ip)) return {};
    port = text.substr(close + 1);
  } else {
    const auto colon = text.find(':');
    ip = text.substr(0, colon);
    if (!detail::http_parse_ipv4(ip)) return {};
    port = colon == std::string_view::npos ? std::string_view{} : text.substr(colon);
  }
  // Empty, or `:` followed by 1-5 digits naming at most 65535.
  std::uint32_t n = 0;
  if (!port.empty()) {
    if (port.front() != ':' || port.size() < 2 || port.size() > 6) return {};
    for (std::size_t i = 1; i < port.size(); ++i) {
      if (port[i] < '0' || port[i] > '9') return {};
      n = n * 10 + static_cast<std::uint32_t>(port[i] - '0');
    }
    if (n > 65535) return {};
  }
  return http_local_address{
      .address = ip, .port = static_cast<std::uint16_t>(n), .loopback = !detail::http_ip_is_public(ip)};
}

MCPCORE_END_NAMESPACE

#endif  // MCPCORE_IMPL_HTTP_IPP
