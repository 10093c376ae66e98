// SPDX-License-Identifier: Apache-2.0
// SHA-256 (FIPS 180-4) and HMAC-SHA-256 (RFC 2104), for the signed request state of the
// per-request era (docs/eras.md#request-state). Standard library only, so the dispatch core stays
// free of dependencies; checked against the FIPS 180-4 and RFC 4231 test vectors
// (tests/unit/sha256_base64.cpp). Not a general cryptography API.
#ifndef MCPCORE_DETAIL_SHA256_HPP
#define MCPCORE_DETAIL_SHA256_HPP

#include <mcpcore/detail/config.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

MCPCORE_BEGIN_NAMESPACE

namespace detail {

/// A SHA-256 digest.
using sha256_digest = std::array<std::uint8_t, 32>;

/// Incremental SHA-256.
class sha256 {
 public:
  sha256() noexcept = default;

  sha256& update(std::string_view bytes) noexcept {
    for (const char c : bytes) {
      block_[fill_++] = static_cast<std::uint8_t>(c);
      if (fill_ == block_.size()) {
        compress();
        fill_ = 0;
      }
    }
    length_ += bytes.size();
    return *this;
  }

  [[nodiscard]] sha256_digest finish() noexcept {
    const std::uint64_t bits = length_ * 8U;
    block_[fill_++] = 0x80U;
    if (fill_ > 56) {
      while (fill_ < block_.size()) block_[fill_++] = 0;
      compress();
      fill_ = 0;
    }
    while (fill_ < 56) block_[fill_++] = 0;
    for (int i = 7; i >= 0; --i) block_[fill_++] = static_cast<std::uint8_t>(bits >> (static_cast<unsigned>(i) * 8U));
    compress();
    sha256_digest out{};
    for (std::size_t i = 0; i < 8; ++i) {
      for (std::size_t j = 0; j < 4; ++j) out[i * 4 + j] = static_cast<std::uint8_t>(h_[i] >> (24U - 8U * j));
    }
    return out;
  }

 private:
  static constexpr std::uint32_t rotr(std::uint32_t x, unsigned n) noexcept { return (x >> n) | (x << (32U - n)); }

  void compress() noexcept {
    static constexpr std::array<std::uint32_t, 64> k{
        0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
        0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
        0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
        0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
        0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
        0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
        0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
        0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};
    std::array<std::uint32_t, 64> w{};
    for (std::size_t i = 0; i < 16; ++i) {
      w[i] = (static_cast<std::uint32_t>(block_[i * 4]) << 24U) | (static_cast<std::uint32_t>(block_[i * 4 + 1]) << 16U) |
             (static_cast<std::uint32_t>(block_[i * 4 + 2]) << 8U) | static_cast<std::uint32_t>(block_[i * 4 + 3]);
    }
    for (std::size_t i = 16; i < 64; ++i) {
      const std::uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3U);
      const std::uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10U);
      w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    std::uint32_t a = h_[0], b = h_[1], c = h_[2], d = h_[3], e = h_[4], f = h_[5], g = h_[6], h = h_[7];
    for (std::size_t i = 0; i < 64; ++i) {
      const std::uint32_t t1 = h + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + k[i] + w[i];
      const std::uint32_t t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
      h = g;
      g = f;
      f = e;
      e = d + t1;
      d = c;
      c = b;
      b = a;
      a = t1 + t2;
    }
    h_[0] += a;
    h_[1] += b;
    h_[2] += c;
    h_[3] += d;
    h_[4] += e;
    h_[5] += f;
    h_[6] += g;
    h_[7] += h;
  }

  std::array<std::uint32_t, 8> h_{0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                  0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  std::array<std::uint8_t, 64> block_{};
  std::size_t fill_ = 0;
  std::uint64_t length_ = 0;
};

/// HMAC-SHA-256 of `message` under `key` (RFC 2104; keys longer than the block are hashed).
[[nodiscard]] inline sha256_digest hmac_sha256(std::string_view key, std::string_view message) noexcept {
  std::array<std::uint8_t, 64> k{};
  if (key.size() > k.size()) {
    const sha256_digest d = sha256{}.update(key).finish();
    for (std::size_t i = 0; i < d.size(); ++i) k[i] = d[i];
  } else {
    for (std::size_t i = 0; i < key.size(); ++i) k[i] = static_cast<std::uint8_t>(key[i]);
  }
  std::array<char, 64> pad{};
  const auto as_view = [&pad] { return std::string_view{pad.data(), pad.size()}; };
  for (std::size_t i = 0; i < pad.size(); ++i) pad[i] = static_cast<char>(k[i] ^ 0x36U);
  sha256 inner;
  inner.update(as_view()).update(message);
  const sha256_digest ih = inner.finish();
  for (std::size_t i = 0; i < pad.size(); ++i) pad[i] = static_cast<char>(k[i] ^ 0x5cU);
  sha256 outer;
  outer.update(as_view());
  outer.update(std::string_view{reinterpret_cast<const char*>(ih.data()), ih.size()});  // NOLINT(cppcoreguidelines-pro-type-reinterpret-cast)
  return outer.finish();
}

/// Compares two byte strings in time that depends only on their lengths.
[[nodiscard]] inline bool constant_time_equals(std::string_view a, std::string_view b) noexcept {
  if (a.size() != b.size()) return false;
  unsigned diff = 0;
  for (std::size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned>(static_cast<unsigned char>(a[i]) ^ static_cast<unsigned char>(b[i]));
  return diff == 0;
}

}  // namespace detail

MCPCORE_END_NAMESPACE

#endif  // MCPCORE_DETAIL_SHA256_HPP
