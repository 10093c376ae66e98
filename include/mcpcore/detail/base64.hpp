// SPDX-License-Identifier: Apache-2.0
// RFC 4648 base64, both alphabets: the standard one with padding (the `=?base64?...?=` form of
// MCP header values) and the URL-safe one without padding (signed request state). Strict
// decoding: only the canonical encoding of some bytes is accepted, so one value has one text.
#ifndef MCPCORE_DETAIL_BASE64_HPP
#define MCPCORE_DETAIL_BASE64_HPP

#include <mcpcore/detail/config.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

MCPCORE_BEGIN_NAMESPACE

namespace detail {

/// Which RFC 4648 alphabet: `standard` (section 4, `+/`, padded) or `url` (section 5, `-_`,
/// unpadded).
enum class base64_alphabet : std::uint8_t { standard, url };

/// Appends the encoding of `bytes` to `out`.
inline void base64_encode(std::string& out, std::string_view bytes, base64_alphabet a) {
  const char* const table = a == base64_alphabet::standard
                                ? "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
                                : "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::size_t i = 0;
  const auto byte = [&](std::size_t k) { return static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[k])); };
  for (; i + 3 <= bytes.size(); i += 3) {
    const std::uint32_t v = (byte(i) << 16U) | (byte(i + 1) << 8U) | byte(i + 2);
    out += table[(v >> 18U) & 63U];
    out += table[(v >> 12U) & 63U];
    out += table[(v >> 6U) & 63U];
    out += table[v & 63U];
  }
  const std::size_t rest = bytes.size() - i;
  if (rest == 0) return;
  std::uint32_t v = byte(i) << 16U;
  if (rest == 2) v |= byte(i + 1) << 8U;
  out += table[(v >> 18U) & 63U];
  out += table[(v >> 12U) & 63U];
  if (rest == 2) out += table[(v >> 6U) & 63U];
  if (a == base64_alphabet::standard) out.append(rest == 1 ? 2U : 1U, '=');
}

/// The bytes `text` encodes, or nothing when it is not the canonical encoding of some bytes in
/// alphabet `a` (wrong characters, wrong padding, non-zero trailing bits).
[[nodiscard]] inline std::optional<std::string> base64_decode(std::string_view text, base64_alphabet a) {
  const auto value = [a](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == (a == base64_alphabet::standard ? '+' : '-')) return 62;
    if (c == (a == base64_alphabet::standard ? '/' : '_')) return 63;
    return -1;
  };
  std::size_t pad = 0;
  if (a == base64_alphabet::standard) {
    if (text.size() % 4 != 0) return std::nullopt;
    while (pad < 2 && pad < text.size() && text[text.size() - 1 - pad] == '=') ++pad;
    text.remove_suffix(pad);
  } else if (text.size() % 4 == 1) {
    return std::nullopt;
  }
  std::string out;
  out.reserve(text.size() * 3 / 4);
  std::uint32_t acc = 0;
  unsigned bits = 0;
  for (const char c : text) {
    const int v = value(c);
    if (v < 0) return std::nullopt;
    acc = (acc << 6U) | static_cast<std::uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((acc >> bits) & 0xFFU);
    }
  }
  // Canonical: the unused low bits of the last character are zero.
  if (bits > 0 && (acc & ((1U << bits) - 1U)) != 0) return std::nullopt;
  if (a == base64_alphabet::standard && pad != (3 - (out.size() % 3)) % 3) return std::nullopt;
  return out;
}

}  // namespace detail

MCPCORE_END_NAMESPACE

#endif  // MCPCORE_DETAIL_BASE64_HPP
