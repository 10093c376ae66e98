// SPDX-License-Identifier: Apache-2.0
// What the OAuth access-token authenticators share in their options and counters: the injected
// clocks and the accepted / refused counts (docs/oauth.md#options).
#ifndef MCPCORE_TRANSPORT_OAUTH_COMMON_HPP
#define MCPCORE_TRANSPORT_OAUTH_COMMON_HPP

#include <mcpcore/detail/config.hpp>
#include <mcpcore/governance/clock.hpp>

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>

MCPCORE_BEGIN_NAMESPACE

namespace transport {

/// The clocks of an OAuth authenticator, a base of its options (`jwt_authenticator_options`,
/// `introspection_authenticator_options`). Empty members read the process's clocks.
struct oauth_clock {
  /// The wall clock for the token's time claims (`exp`, `nbf`, ...); empty:
  /// `std::chrono::system_clock`.
  std::function<std::chrono::system_clock::time_point()> system_now{};
  /// The steady clock of schedules and caches; empty: `std::chrono::steady_clock`.
  std::function<std::chrono::steady_clock::time_point()> steady_now{};

  /// Sets `system_now` and `steady_now` from a `clock_source` (`clock_ref{manual}` in tests).
  template <clock_source C>
  void use_clock(const C& c) {
    system_now = [c] { return c.system_now(); };
    steady_now = [c] { return c.steady_now(); };
  }
};

/// The counts of `check` outcomes, a base of an OAuth authenticator's stats: the tokens accepted,
/// and those refused by reason (`Refusal`, an enumeration of `RefusalCount` values from 0).
template <class Refusal, std::size_t RefusalCount>
struct oauth_check_counts {
  std::uint64_t accepted = 0;                           ///< tokens `check` accepted
  std::array<std::uint64_t, RefusalCount> refused{};    ///< tokens refused, by `Refusal`

  /// The refusals for `r`; 0 for a value outside the enumeration.
  [[nodiscard]] std::uint64_t refusals(Refusal r) const noexcept {
    const auto i = static_cast<std::size_t>(r);
    return i < refused.size() ? refused[i] : 0;
  }
};

}  // namespace transport

MCPCORE_END_NAMESPACE

#endif  // MCPCORE_TRANSPORT_OAUTH_COMMON_HPP
