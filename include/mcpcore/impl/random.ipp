// SPDX-License-Identifier: Apache-2.0
// The getrandom(2) loop and its lowercase-hex form.
#ifndef MCPCORE_IMPL_RANDOM_IPP
#define MCPCORE_IMPL_RANDOM_IPP

#include <mcpcore/detail/random.hpp>

#include <cerrno>
#include <string_view>

#include <sys/random.h>

MCPCORE_BEGIN_NAMESPACE

namespace detail {

MCPCORE_DECL bool fill_random(void* data, std::size_t size) noexcept {
  auto* const out = static_cast<unsigned char*>(data);
  std::size_t filled = 0;
  while (filled < size) {
    // Flags 0: the urandom source, which blocks until the kernel pool is seeded (never early, weak
    // bytes); a request over 256 bytes may come back short, hence the loop.
    const auto n = ::getrandom(out + filled, size - filled, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;  // errno holds the cause
    }
    if (n == 0) {  // not expected for a non-zero request; refuse rather than spin
      errno = EIO;
      return false;
    }
    filled += static_cast<std::size_t>(n);
  }
  return true;
}

MCPCORE_DECL std::optional<std::string> random_hex(std::size_t bytes) {
  static constexpr std::string_view digits = "0123456789abcdef";
  // One allocation, before the CSPRNG is read: the raw bytes land in the back half and are
  // expanded forwards in place (byte i is read before positions 2i and 2i+1, which are at most
  // its own position, are written; later bytes sit further back and are untouched).
  std::string out(2 * bytes, '\0');
  unsigned char* const raw = reinterpret_cast<unsigned char*>(out.data()) + bytes;
  if (!fill_random(raw, bytes)) return std::nullopt;
  for (std::size_t i = 0; i < bytes; ++i) {
    const unsigned char b = raw[i];
    out[2 * i] = digits[b >> 4U];
    out[2 * i + 1] = digits[b & 0x0FU];
  }
  return out;
}

}  // namespace detail

MCPCORE_END_NAMESPACE

#endif  // MCPCORE_IMPL_RANDOM_IPP
