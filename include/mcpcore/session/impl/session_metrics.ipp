// SPDX-License-Identifier: Apache-2.0
#ifndef MCPCORE_IMPL_SESSION_METRICS_IPP
#define MCPCORE_IMPL_SESSION_METRICS_IPP

#include <mcpcore/session/session_metrics.hpp>

// `detail::name_at` lives with the stream vocabularies.
#include <mcpcore/session/impl/stream_types.ipp>

#include <iterator>

MCPCORE_BEGIN_NAMESPACE

MCPCORE_DECL std::string_view to_string(session_reject r) noexcept {
  static constexpr std::string_view names[] = {"global_cap", "per_principal_cap", "shutdown", "id_generation"};
  static_assert(std::size(names) == session_reject_count);
  const auto i = static_cast<std::size_t>(r);
  // session_reject counts from 1 (0 is no enumerator).
  return i == 0 ? std::string_view{"unknown"} : detail::name_at(names, i - 1);
}

MCPCORE_DECL std::string_view to_string(cancel_outcome o) noexcept {
  static constexpr std::string_view names[] = {"accepted", "detached", "noop"};
  static_assert(std::size(names) == cancel_outcome_count);
  return detail::name_at(names, static_cast<std::size_t>(o));
}

MCPCORE_DECL std::string_view to_string(bridge_reject r) noexcept {
  static constexpr std::string_view names[] = {"disabled",  "unknown_session", "shutdown", "duplicate_request_id",
                                               "global_cap", "pin_slots"};
  static_assert(std::size(names) == bridge_reject_count);
  return detail::name_at(names, static_cast<std::size_t>(r));
}

MCPCORE_DECL std::string_view to_string(bridge_degrade d) noexcept {
  static constexpr std::string_view names[] = {
      "reserve_rejected",  "reserve_threw",        "no_execution_row",  "subscribe_failed",
      "arm_threw",         "bind_post_sink_failed", "stream_install_failed", "arm_already_armed",
      "arm_cancelled",     "arm_not_armed",        "post_dispatch_threw"};
  static_assert(std::size(names) == bridge_degrade_count);
  return detail::name_at(names, static_cast<std::size_t>(d));
}

MCPCORE_DECL std::string_view to_string(expire_disposition d) noexcept {
  static constexpr std::string_view names[] = {"none", "fallback_final", "synthesize_unavailable"};
  static_assert(std::size(names) == expire_disposition_count);
  return detail::name_at(names, static_cast<std::size_t>(d));
}

MCPCORE_END_NAMESPACE

#endif  // MCPCORE_IMPL_SESSION_METRICS_IPP
