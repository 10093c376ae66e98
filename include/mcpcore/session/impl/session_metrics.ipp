// SPDX-License-Identifier: Apache-2.0
#ifndef MCPCORE_IMPL_SESSION_METRICS_IPP
#define MCPCORE_IMPL_SESSION_METRICS_IPP

#include <mcpcore/session/session_metrics.hpp>

#include <iterator>

MCPCORE_BEGIN_NAMESPACE

namespace detail {
template <std::size_t N>
constexpr std::string_view name_at(const std::string_view (&names)[N], std::size_t i) noexcept {
  return i < N ? names[i] : std::string_view{"unknown"};
}
}  // namespace detail

MCPCORE_DECL std::string_view to_string(close_reason r) noexcept {
  static constexpr std::string_view names[] = {
      "none",           "client_disconnect", "superseded", "session_terminated", "credential_revoked",
      "auth_unavailable", "internal_error",  "cancelled",  "cap_expired",        "completed"};
  static_assert(std::size(names) == close_reason_count);
  return detail::name_at(names, static_cast<std::size_t>(r));
}

MCPCORE_DECL bool writes_close_frame(close_reason r) noexcept {
  switch (r) {
    case close_reason::none:
    case close_reason::client_disconnect:
    case close_reason::superseded:
    case close_reason::completed:
      return false;
    default:
      return static_cast<std::size_t>(r) < close_reason_count;
  }
}

MCPCORE_DECL std::string_view to_string(stream_reject r) noexcept {
  static constexpr std::string_view names[] = {
      "missing_session_header",  "unknown_session",   "not_acceptable",         "origin",
      "protocol_version",        "per_principal_stream_cap", "global_stream_cap", "stream_handover_pending",
      "replay_window_exceeded",  "terminal_poisoned", "post_per_principal_cap", "post_global_cap",
      "post_record_cap",         "post_pin_slots",    "post_duplicate_request_id", "post_unknown_session"};
  static_assert(std::size(names) == stream_reject_count);
  return detail::name_at(names, static_cast<std::size_t>(r));
}

MCPCORE_DECL std::string_view to_string(session_reject r) noexcept {
  static constexpr std::string_view names[] = {"global_cap", "per_principal_cap", "shutdown", "id_generation"};
  static_assert(std::size(names) == session_reject_count);
  const auto i = static_cast<std::size_t>(r);
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
