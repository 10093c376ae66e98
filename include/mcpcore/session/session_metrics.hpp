// SPDX-License-Identifier: Apache-2.0
// The session layer's closed vocabularies of sessions and the progress bridge (reject reasons,
// outcomes) and its metric handles, resolved once so that no lock ever calls into a metrics
// registry. The stream vocabularies (`close_reason`, `stream_reject`) are in stream_types.hpp.
#ifndef MCPCORE_SESSION_METRICS_HPP
#define MCPCORE_SESSION_METRICS_HPP

#include <mcpcore/detail/config.hpp>
#include <mcpcore/governance/metrics.hpp>
#include <mcpcore/session/stream_types.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

MCPCORE_BEGIN_NAMESPACE

/// Why minting a session was refused (docs/sessions.md#the-session-registry, #shutdown).
enum class session_reject : std::uint8_t {
  global_cap = 1,     ///< the registry holds `max_sessions` sessions
  per_principal_cap,  ///< the caller holds `max_sessions_per_principal` sessions
  shutdown,           ///< the registry is shutting down (HTTP 503 -32015)
  id_generation,      ///< the CSPRNG failed, or 5 draws collided
};
inline constexpr std::size_t session_reject_count = 4;
[[nodiscard]] MCPCORE_DECL std::string_view to_string(session_reject r) noexcept;

/// What a `notifications/cancelled` did (docs/sessions.md#cancellation); always answered 202.
enum class cancel_outcome : std::uint8_t {
  accepted,  ///< the request was still arming: the intent is recorded
  detached,  ///< the request was streaming: its response stream is closed now
  noop,      ///< nothing matched (finished, unknown, foreign, duplicate)
};
inline constexpr std::size_t cancel_outcome_count = 3;
[[nodiscard]] MCPCORE_DECL std::string_view to_string(cancel_outcome o) noexcept;

/// Why the progress bridge refused a reservation (docs/sessions.md#streamed-post-admission,
/// #progress-records).
enum class bridge_reject : std::uint8_t {
  disabled,
  unknown_session,
  shutdown,
  duplicate_request_id,
  global_cap,
  pin_slots,
};
inline constexpr std::size_t bridge_reject_count = 6;
[[nodiscard]] MCPCORE_DECL std::string_view to_string(bridge_reject r) noexcept;

/// Why a progress-carrying request fell back to a plain JSON answer
/// (docs/sessions.md#projection-and-finals, closed set).
enum class bridge_degrade : std::uint8_t {
  reserve_rejected,
  reserve_threw,
  no_execution_row,
  subscribe_failed,
  arm_threw,
  bind_post_sink_failed,
  stream_install_failed,
  arm_already_armed,
  arm_cancelled,
  arm_not_armed,
  post_dispatch_threw,
};
inline constexpr std::size_t bridge_degrade_count = 11;
[[nodiscard]] MCPCORE_DECL std::string_view to_string(bridge_degrade d) noexcept;

/// What a pressure expiry published for a parked record (docs/sessions.md#the-sweep).
enum class expire_disposition : std::uint8_t {
  none,                    ///< a real final was already pinned
  fallback_final,          ///< the work finished but its result is gone: the fallback final
  synthesize_unavailable,  ///< the work never finished: a -32014 error frame
};
inline constexpr std::size_t expire_disposition_count = 3;
[[nodiscard]] MCPCORE_DECL std::string_view to_string(expire_disposition d) noexcept;

/// Every metric of the session layer (docs/metrics.md#names-and-registration), as handles resolved
/// once. A default-constructed value is inert (counts nothing). Names are `mcp_` + the reference's
/// name without its `yuzu_mcp_` prefix; every labelled series is pre-seeded by
/// `bind_session_metrics`.
///
/// Handles are lock-free atomics, so they may be touched under any lock
/// (docs/sessions.md#lock-discipline forbids only registry calls, which all happen in
/// `bind_session_metrics`).
struct session_metrics {
  // sessions (docs/sessions.md#the-session-registry)
  gauge sessions_active;                                        ///< mcp_sessions_active
  counter sessions_opened;                                      ///< mcp_sessions_opened_total
  counter sessions_expired;                                     ///< mcp_sessions_expired_total (idle GC)
  counter sessions_evicted;  ///< mcp_sessions_evicted_total (idle sessions ended at the per-principal cap)
  counter dispatch_principal_cap;  ///< mcp_dispatch_rejects_total{reason="principal_cap"} (docs/sessions.md#fair-dispatch)
  std::array<counter, session_reject_count> session_rejects{};  ///< mcp_session_rejects_total{reason}
  /// mcp_bridge_cancel_total{outcome}: what a cancel did to the request's progress record. Not
  /// `mcp_cancel_notifications_total`: the dispatch core counts each notification there, once
  /// (docs/metrics.md).
  std::array<counter, cancel_outcome_count> cancels{};
  counter session_gc_failures;   ///< mcp_maintenance_tick_failures_total{tick="session_gc"}
  counter bridge_sweep_failures;  ///< mcp_maintenance_tick_failures_total{tick="bridge_sweep"}
  // streams (docs/sessions.md#get-attach-replay-resume, #pinned-finals)
  gauge streams_active;            ///< mcp_streams_active (live + draining GET sinks)
  gauge streams_handover_pending;  ///< mcp_streams_handover_pending (draining GET sinks)
  gauge post_streams_active;       ///< mcp_post_streams_active
  std::array<counter, stream_reject_count> stream_rejects{};  ///< mcp_stream_rejects_total{reason}
  std::array<counter, close_reason_count> stream_closes{};    ///< mcp_stream_closes_total{reason}
  counter ring_evictions;              ///< mcp_stream_replay_ring_evictions_total
  counter frames_dropped;              ///< mcp_stream_frames_dropped_total
  counter frames_too_large;            ///< mcp_stream_frames_too_large_total
  counter publish_failures;            ///< mcp_stream_publish_failures_total
  counter terminal_publish_failures;   ///< mcp_stream_terminal_publish_failures_total
  counter pin_displaced;               ///< mcp_stream_pin_displaced_total (alert on > 0)
  counter final_unpinned;              ///< mcp_stream_final_unpinned_total
  counter attach_audit_failures;       ///< mcp_stream_attach_audit_failures_total
  /// mcp_audit_write_failures_total: rows of the session layer (`mcp.session.*`, `mcp.bridge.*`)
  /// the audit sink did not persist. The dispatch core counts its own rows in the same family, so
  /// a registry shared with the server shows one series for every gap
  /// (docs/security.md#audit-and-the-one-cid-pattern).
  counter audit_failures;
  // progress bridge (docs/sessions.md#progress-records)
  gauge bridge_records_active;                                       ///< mcp_bridge_records_active
  std::array<counter, bridge_reject_count> bridge_rejects{};         ///< mcp_bridge_reject_total{reason}
  std::array<counter, bridge_degrade_count> bridge_degrades{};       ///< mcp_bridge_degrade_total{reason}
  counter progress_suppressed;          ///< mcp_bridge_progress_suppressed_total
  counter streaming_backstop;           ///< mcp_bridge_streaming_backstop_total
  std::array<counter, expire_disposition_count> forced_expires{};  ///< mcp_bridge_forced_expire_total{disposition}
  counter pressure_budget_exhausted;    ///< mcp_bridge_pressure_budget_exhausted_total
  counter pin_slots_reject_charges;     ///< mcp_bridge_pin_slots_reject_total{held="charges"}
  counter pin_slots_reject_pins;        ///< mcp_bridge_pin_slots_reject_total{held="pins"}
  counter pin_displaced_for_admission;  ///< mcp_bridge_pin_displaced_for_admission_total
  counter pin_release_raced;            ///< mcp_bridge_pin_release_raced_total
  counter pin_release_failed;           ///< mcp_bridge_pin_release_failed_total
};

namespace detail {
/// Resolves every handle through `make_counter(name, help, labels)` / `make_gauge(...)`.
template <class MakeCounter, class MakeGauge>
session_metrics bind_session_metrics(MakeCounter&& mc, MakeGauge&& mg);
}  // namespace detail

/// Registers (pre-seeds) every series of the session layer in `sink` and returns the handles.
/// Call it once per sink; `sink` must outlive every component using the handles.
template <metrics_sink M>
[[nodiscard]] session_metrics bind_session_metrics(M& sink) {
  return detail::bind_session_metrics(
      [&sink](std::string_view n, std::string_view h, std::span<const metric_label> l) {
        return sink.make_counter(n, h, l);
      },
      [&sink](std::string_view n, std::string_view h, std::span<const metric_label> l) {
        return sink.make_gauge(n, h, l);
      });
}

namespace detail {
template <class MakeCounter, class MakeGauge>
session_metrics bind_session_metrics(MakeCounter&& mc, MakeGauge&& mg) {
  session_metrics m;
  const auto plain = [&](std::string_view name, std::string_view help) {
    return mc(name, help, std::span<const metric_label>{});
  };
  const auto labelled = [&](std::string_view name, std::string_view help, std::string_view label,
                            std::string_view value) {
    const metric_label l[] = {{label, value}};
    return mc(name, help, std::span<const metric_label>{l});
  };
  const auto level = [&](std::string_view name, std::string_view help) {
    return mg(name, help, std::span<const metric_label>{});
  };
  m.sessions_active = level("mcp_sessions_active", "Live MCP sessions.");
  m.sessions_opened = plain("mcp_sessions_opened_total", "Sessions minted by initialize.");
  m.sessions_expired = plain("mcp_sessions_expired_total", "Sessions reaped by the idle TTL.");
  m.sessions_evicted =
      plain("mcp_sessions_evicted_total", "Idle sessions ended to make room at the per-principal session cap.");
  m.dispatch_principal_cap = labelled("mcp_dispatch_rejects_total", "Requests refused before dispatch.", "reason",
                                      "principal_cap");
  for (std::size_t i = 0; i < session_reject_count; ++i) {
    m.session_rejects[i] = labelled("mcp_session_rejects_total", "Session mints refused.", "reason",
                                    to_string(static_cast<session_reject>(i + 1)));
  }
  for (std::size_t i = 0; i < cancel_outcome_count; ++i) {
    m.cancels[i] = labelled("mcp_bridge_cancel_total", "notifications/cancelled outcomes at the progress bridge.",
                            "outcome", to_string(static_cast<cancel_outcome>(i)));
  }
  m.session_gc_failures = labelled("mcp_maintenance_tick_failures_total",
                                   "Maintenance ticks that failed (retried next cycle).", "tick", "session_gc");
  m.bridge_sweep_failures = labelled("mcp_maintenance_tick_failures_total",
                                     "Maintenance ticks that failed (retried next cycle).", "tick", "bridge_sweep");
  m.streams_active = level("mcp_streams_active", "Held-open GET streams (live and draining).");
  m.streams_handover_pending = level("mcp_streams_handover_pending", "Superseded GET streams still draining.");
  m.post_streams_active = level("mcp_post_streams_active", "Held-open streamed POST responses.");
  for (std::size_t i = 0; i < stream_reject_count; ++i) {
    m.stream_rejects[i] = labelled("mcp_stream_rejects_total", "Stream attaches and admissions refused.",
                                   "reason", to_string(static_cast<stream_reject>(i)));
  }
  for (std::size_t i = 1; i < close_reason_count; ++i) {
    m.stream_closes[i] = labelled("mcp_stream_closes_total", "Held-open responses ended, by reason.",
                                  "reason", to_string(static_cast<close_reason>(i)));
  }
  m.ring_evictions = plain("mcp_stream_replay_ring_evictions_total", "Frames evicted from replay rings.");
  m.frames_dropped = plain("mcp_stream_frames_dropped_total", "Frames dropped before reaching a connection.");
  m.frames_too_large = plain("mcp_stream_frames_too_large_total", "Frames replaced by the frame_too_large notice.");
  m.publish_failures = plain("mcp_stream_publish_failures_total", "Publishes that failed before committing.");
  m.terminal_publish_failures =
      plain("mcp_stream_terminal_publish_failures_total", "Failed rungs of the final/fallback/poison ladder.");
  m.pin_displaced = plain("mcp_stream_pin_displaced_total", "Pinned finals displaced by a newer final.");
  m.final_unpinned = plain("mcp_stream_final_unpinned_total", "Finals committed without a pin slot.");
  m.attach_audit_failures =
      plain("mcp_stream_attach_audit_failures_total", "Stream attach audit rows that were not persisted.");
  m.audit_failures = plain("mcp_audit_write_failures_total", "audit rows that were not persisted");
  m.bridge_records_active = level("mcp_bridge_records_active", "Progress-bridge records alive.");
  for (std::size_t i = 0; i < bridge_reject_count; ++i) {
    m.bridge_rejects[i] = labelled("mcp_bridge_reject_total", "Progress-bridge reservations refused.", "reason",
                                   to_string(static_cast<bridge_reject>(i)));
  }
  for (std::size_t i = 0; i < bridge_degrade_count; ++i) {
    m.bridge_degrades[i] = labelled("mcp_bridge_degrade_total", "Progress requests answered plain instead.",
                                    "reason", to_string(static_cast<bridge_degrade>(i)));
  }
  m.progress_suppressed =
      plain("mcp_bridge_progress_suppressed_total", "Progress snapshots not sent (not increasing, or superseded).");
  m.streaming_backstop = plain("mcp_bridge_streaming_backstop_total", "Stranded streaming records parked by the sweep.");
  for (std::size_t i = 0; i < expire_disposition_count; ++i) {
    m.forced_expires[i] = labelled("mcp_bridge_forced_expire_total", "Parked records expired under pressure.",
                                   "disposition", to_string(static_cast<expire_disposition>(i)));
  }
  m.pressure_budget_exhausted = plain("mcp_bridge_pressure_budget_exhausted_total",
                                      "Pressure passes that ran out of victims with the cap still exceeded.");
  m.pin_slots_reject_charges = labelled("mcp_bridge_pin_slots_reject_total",
                                        "pin_slots refusals, by which half of the sum held the slots.", "held", "charges");
  m.pin_slots_reject_pins = labelled("mcp_bridge_pin_slots_reject_total",
                                     "pin_slots refusals, by which half of the sum held the slots.", "held", "pins");
  m.pin_displaced_for_admission =
      plain("mcp_bridge_pin_displaced_for_admission_total", "Pinned finals released to admit a streamed request.");
  m.pin_release_raced = plain("mcp_bridge_pin_release_raced_total", "Admission pin releases that lost a race.");
  m.pin_release_failed = plain("mcp_bridge_pin_release_failed_total", "Admission pin releases that failed.");
  return m;
}
}  // namespace detail

MCPCORE_END_NAMESPACE

#if defined(MCPCORE_HEADER_ONLY)
#  include <mcpcore/session/impl/session_metrics.ipp>
#endif

#endif  // MCPCORE_SESSION_METRICS_HPP
