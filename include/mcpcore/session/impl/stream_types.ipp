// SPDX-License-Identifier: Apache-2.0
// The names of the stream vocabularies, and `detail::name_at`, the bounded lookup every closed
// vocabulary of the session layer names its values with.
#ifndef MCPCORE_IMPL_STREAM_TYPES_IPP
#define MCPCORE_IMPL_STREAM_TYPES_IPP

#include <mcpcore/session/stream_types.hpp>

#include <cstddef>
#include <iterator>
#include <string_view>

MCPCORE_BEGIN_NAMESPACE

namespace detail {
// The name tables below are indexed by enumerator value: keep each in its enum's order (the
// static_asserts check only the counts). An out-of-range value reads "unknown".
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
      // A value outside the enum writes no frame.
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

MCPCORE_END_NAMESPACE

#endif  // MCPCORE_IMPL_STREAM_TYPES_IPP
