// SPDX-License-Identifier: Apache-2.0
// The closed vocabularies of held-open responses: why a stream ended (`close_reason`) and why a
// GET or a streamed POST was refused (`stream_reject`). Metrics, audit rows and the wire use them.
#ifndef MCPCORE_STREAM_TYPES_HPP
#define MCPCORE_STREAM_TYPES_HPP

#include <mcpcore/detail/config.hpp>

#include <cstddef>
#include <cstdint>
#include <string_view>

MCPCORE_BEGIN_NAMESPACE

/// Why a held-open response ended (docs/sessions.md#close-reasons): the wire `reason` of the close
/// notification, the audit `reason=` and the `mcp_stream_closes_total{reason}` label. The first
/// reason recorded on a stream wins.
enum class close_reason : std::uint8_t {
  none = 0,            ///< not closed (a releaser reports it as `client_disconnect`)
  client_disconnect,   ///< write failure, peer gone, or closed with no recorded reason
  superseded,          ///< a newer GET took the session's stream over (no close frame)
  session_terminated,  ///< DELETE, idle expiry, replay-window termination, shutdown
  credential_revoked,  ///< re-validation said the credential is revoked
  auth_unavailable,    ///< re-validation indeterminate past its grace, or an unknown verdict
  internal_error,      ///< the pump failed, or the stream was poisoned while live
  cancelled,           ///< streamed POST only: notifications/cancelled detached the response
  cap_expired,         ///< streamed POST only: the response cap elapsed (the work continues)
  completed,           ///< streamed POST only: the final was written (no close frame)
};
inline constexpr std::size_t close_reason_count = 10;
/// The wire name ("client_disconnect", ...); "none" for `none`.
[[nodiscard]] MCPCORE_DECL std::string_view to_string(close_reason r) noexcept;
/// Whether a stream ending for `r` gets the close notification frame
/// (docs/sessions.md#close-reasons table): false for `none`, `client_disconnect` (the peer is
/// gone), `superseded` and `completed`.
[[nodiscard]] MCPCORE_DECL bool writes_close_frame(close_reason r) noexcept;

/// Why a GET or a streamed-POST admission was refused (docs/http.md#get-sessions-on,
/// docs/sessions.md#get-attach-replay-resume, #streamed-post-admission): the `reason=` of the audit
/// row and the `mcp_stream_rejects_total{reason}` label.
enum class stream_reject : std::uint8_t {
  missing_session_header,
  unknown_session,
  not_acceptable,
  origin,
  protocol_version,
  per_principal_stream_cap,
  global_stream_cap,
  stream_handover_pending,
  replay_window_exceeded,
  terminal_poisoned,
  post_per_principal_cap,
  post_global_cap,
  post_record_cap,
  post_pin_slots,
  post_duplicate_request_id,
  post_unknown_session,
};
inline constexpr std::size_t stream_reject_count = 16;
[[nodiscard]] MCPCORE_DECL std::string_view to_string(stream_reject r) noexcept;

MCPCORE_END_NAMESPACE

#if defined(MCPCORE_HEADER_ONLY)
#  include <mcpcore/session/impl/stream_types.ipp>
#endif

#endif  // MCPCORE_STREAM_TYPES_HPP
