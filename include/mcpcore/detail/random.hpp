// SPDX-License-Identifier: Apache-2.0
// The platform CSPRNG (getrandom(2)) for identifiers that must not be guessable: session and ticket ids.
#ifndef MCPCORE_DETAIL_RANDOM_HPP
#define MCPCORE_DETAIL_RANDOM_HPP

#include <mcpcore/detail/config.hpp>

#include <cstddef>
#include <optional>
#include <string>

MCPCORE_BEGIN_NAMESPACE

namespace detail {

/// Fills `size` bytes at `data` from the kernel's CSPRNG (getrandom(2) with no flags: it blocks
/// only until the CSPRNG is seeded at early boot, never afterwards). Short reads are continued
/// and EINTR is retried. Returns false on any other failure, with `errno` left holding the
/// cause (the content of `data` is then unspecified). `size == 0` succeeds at once.
///
/// @par Thread safety
/// Thread-safe; no shared state.
MCPCORE_DECL bool fill_random(void* data, std::size_t size) noexcept;

/// `bytes` CSPRNG bytes as lowercase hex (`2 * bytes` characters), or `std::nullopt` when the
/// CSPRNG failed (`errno` then holds the cause, as for `fill_random`).
///
/// @throws std::bad_alloc before the CSPRNG is read
/// @par Thread safety
/// Thread-safe; no shared state.
[[nodiscard]] MCPCORE_DECL std::optional<std::string> random_hex(std::size_t bytes);

}  // namespace detail

MCPCORE_END_NAMESPACE

#if defined(MCPCORE_HEADER_ONLY)
#  include <mcpcore/impl/random.ipp>
#endif

#endif  // MCPCORE_DETAIL_RANDOM_HPP
