// SPDX-License-Identifier: Apache-2.0
// Correlation ids: req-<hex wall-clock ms>-<hex process-wide sequence>.
#ifndef MCPCORE_CORRELATION_ID_HPP
#define MCPCORE_CORRELATION_ID_HPP

#include <mcpcore/detail/config.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string_view>

MCPCORE_BEGIN_NAMESPACE

/// A correlation id, held inline (no allocation): `req-<hex ms>-<hex seq>`, lowercase hex without
/// leading zeros, e.g. `req-18f3c2a1b07-2a` (docs/errors.md#the-errordata-envelope).
///
/// It is a handle a client can quote when reporting a failure, and the token the one-cid pattern
/// stamps into both the error body and the audit row. It is unique within a process and
/// not a secret: never use it to authorize anything.
class correlation_id {
 public:
  /// Longest form: "req-" + 16 hex digits + "-" + 16 hex digits.
  static constexpr std::size_t max_size = 4 + 16 + 1 + 16;

  /// The id as text; valid while this object lives.
  [[nodiscard]] std::string_view view() const noexcept { return {buf_, size_}; }
  /// Same as `view()`.
  operator std::string_view() const noexcept { return view(); }  // NOLINT(google-explicit-constructor)

  friend bool operator==(const correlation_id& a, const correlation_id& b) noexcept {
    return a.view() == b.view();
  }

  /// Formats an id from its two parts (pure; the building block of `next_correlation_id`).
  [[nodiscard]] MCPCORE_DECL static correlation_id format(std::uint64_t wall_ms,
                                                          std::uint64_t sequence) noexcept;

 private:
  char buf_[max_size] = {};
  std::uint8_t size_ = 0;
};

/// Mints the next id from `now` and the process-wide sequence.
///
/// The sequence is one atomic counter per process starting at 0, incremented with relaxed
/// ordering: ids are unique, not ordered across threads.
///
/// @par Thread safety
/// Safe to call from any thread.
[[nodiscard]] MCPCORE_DECL correlation_id next_correlation_id(std::chrono::system_clock::time_point now) noexcept;

/// Mints the next id stamped with the current wall-clock time.
[[nodiscard]] MCPCORE_DECL correlation_id next_correlation_id() noexcept;

MCPCORE_END_NAMESPACE

#if defined(MCPCORE_HEADER_ONLY)
#  include <mcpcore/wire/impl/correlation_id.ipp>
#endif

#endif  // MCPCORE_CORRELATION_ID_HPP
