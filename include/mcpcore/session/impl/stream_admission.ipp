// SPDX-License-Identifier: Apache-2.0
// The GET attach and its refusals, the streamed-POST opt-in and admission, the post-dispatch 500s
// (docs/http.md#get-sessions-on, docs/sessions.md#get-attach-replay-resume, #streamed-post,
// #ordering-guarantees, docs/errors.md#honest-answers), and the one table of the HTTP surface's
// error answers.
#ifndef MCPCORE_IMPL_STREAM_ADMISSION_IPP
#define MCPCORE_IMPL_STREAM_ADMISSION_IPP

#include <mcpcore/session/stream_admission.hpp>

#include <mcpcore/dispatch/server.hpp>
#include <mcpcore/session/session_registry.hpp>
#include <mcpcore/wire/retry.hpp>
#include <mcpcore/wire/sse.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <optional>
#include <string_view>
#include <utility>

MCPCORE_BEGIN_NAMESPACE

namespace detail {

// ---- the refusal table -------------------------------------------------------------------------

/// Every error answer of the HTTP surface, one row each: the session layer's GET and streamed-POST
/// refusals, the two post-dispatch 500s, and the HTTP endpoint's own request checks
/// (docs/http.md#every-answer-of-the-mcp-path). The endpoint and the admission functions below both read this one table;
/// the first rows mirror `stream_reject` value for value (`stream_refusal_for` casts).
enum class refusal : std::uint8_t {
  // stream_reject, in its order
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
  // the post-dispatch failures (post_dispatch_failure)
  stream_install_failed,
  dispatch_threw,
  // the HTTP endpoint's request checks
  disabled,
  host,
  unauthenticated,
  body_too_large,
  content_type,
  accept,
  in_flight_duplicate,
  session_cap,
  shutting_down,
  mint_failed,
  busy,
  principal_busy,
};

/// One row: the HTTP status, the JSON-RPC code, `error.message`, the retry floor (`retry_after_ms`
/// and `Retry-After`) and `error.data.remediation`. Texts point at static storage.
struct refusal_row {
  refusal id;
  int http_status;
  /// An `errc`, except the 401's -32001 (JSON-RPC's implementation-defined server range, as the MCP
  /// SDKs use for their own session errors; mcpcore has no `errc` for it on purpose: it never
  /// rides on a 200).
  std::int32_t code;
  std::string_view message;
  std::optional<std::chrono::milliseconds> retry_after;
  std::string_view remediation;
};

constexpr std::int32_t code_of(errc e) noexcept { return static_cast<std::int32_t>(e); }

inline constexpr std::string_view refusal_stream_cap_message = "Concurrent stream cap reached";
inline constexpr std::string_view refusal_unknown_session_message = "Unknown or expired session";
inline constexpr std::string_view refusal_unknown_session_remediation = "re-initialize to obtain a new session id";
inline constexpr std::string_view refusal_post_cap_remediation =
    "wait for a streamed call to finish, or retry without Accept: text/event-stream for a plain response";
inline constexpr std::string_view refusal_in_flight_message = "That request id is already in flight on this session";
inline constexpr std::string_view refusal_post_dispatch_remediation =
    "the work is running: fetch its result by execution id (or retry without Accept: text/event-stream); "
    "do not re-POST";

// clang-format off
inline constexpr refusal_row refusal_table[] = {
    {refusal::missing_session_header, 400, code_of(errc::invalid_request), "Mcp-Session-Id header required",
     std::nullopt, "send the Mcp-Session-Id header with the session id that initialize returned"},
    {refusal::unknown_session, 404, code_of(errc::unknown_session), refusal_unknown_session_message,
     std::nullopt, refusal_unknown_session_remediation},
    {refusal::not_acceptable, 406, code_of(errc::not_acceptable), "GET requires Accept: text/event-stream",
     std::nullopt, "send Accept: text/event-stream to open the session's event stream"},
    {refusal::origin, 403, code_of(errc::origin_rejected), "Origin not allowed", std::nullopt,
     "send the request without an Origin header, or add the origin to http_endpoint_options::allowed_origins"},
    {refusal::protocol_version, 400, code_of(errc::unsupported_protocol_version), "Unsupported MCP-Protocol-Version",
     std::nullopt, "send MCP-Protocol-Version: 2025-11-25 (or 2025-06-18, 2025-03-26), or omit the header"},
    {refusal::per_principal_stream_cap, 429, code_of(errc::stream_cap), refusal_stream_cap_message, retry::stream_cap,
     "close another GET stream of yours, or raise session_stream_options::get_streams_per_principal"},
    {refusal::global_stream_cap, 429, code_of(errc::stream_cap), refusal_stream_cap_message, retry::stream_cap,
     "wait for a stream to close, or raise stream_budget_options::global_cap"},
    {refusal::stream_handover_pending, 429, code_of(errc::stream_cap),
     "An earlier stream on this session is still closing", retry::handover,
     "retry once the earlier stream on this session has closed"},
    {refusal::replay_window_exceeded, 404, code_of(errc::unknown_session), "Replay window exceeded", std::nullopt,
     "re-initialize; durable results remain fetchable by execution id"},
    {refusal::terminal_poisoned, 410, code_of(errc::stream_poisoned), "Stream terminated; final response undeliverable",
     std::nullopt, "fetch the result by execution id; do not re-POST the request"},
    {refusal::post_per_principal_cap, 429, code_of(errc::stream_cap), refusal_stream_cap_message, retry::streamed_post,
     refusal_post_cap_remediation},
    {refusal::post_global_cap, 429, code_of(errc::stream_cap), refusal_stream_cap_message, retry::streamed_post,
     refusal_post_cap_remediation},
    {refusal::post_record_cap, 429, code_of(errc::stream_cap), "Streamed request capacity reached",
     retry::streamed_post, refusal_post_cap_remediation},
    // The "pins" remediation; admit_post swaps in `refusal_pin_slots_charges_remediation` when the
    // caller's own calls hold the slots.
    {refusal::post_pin_slots, 429, code_of(errc::stream_cap), "Too many undelivered streamed results on this session",
     retry::streamed_post,
     "retry; if it persists, resume the GET stream with a cursor one below the lowest id you still need, or "
     "re-initialize and fetch results by execution id"},
    {refusal::post_duplicate_request_id, 409, code_of(errc::invalid_request), refusal_in_flight_message, std::nullopt,
     "resume on the GET stream with Last-Event-ID, or use a fresh request id"},
    {refusal::post_unknown_session, 404, code_of(errc::unknown_session), refusal_unknown_session_message,
     std::nullopt, refusal_unknown_session_remediation},
    {refusal::stream_install_failed, 500, code_of(errc::internal_error), "streamed response could not be established",
     std::nullopt, refusal_post_dispatch_remediation},
    {refusal::dispatch_threw, 500, code_of(errc::internal_error), "dispatched, but the response could not be completed",
     std::nullopt, refusal_post_dispatch_remediation},
    // The kill switch's answer is deliberately bare: no `error.data` at all.
    {refusal::disabled, 200, code_of(errc::mcp_disabled), "MCP is disabled on this server", std::nullopt, {}},
    {refusal::host, 403, code_of(errc::origin_rejected), "Host not allowed", std::nullopt,
     "send a Host header naming this server (localhost, 127.0.0.1 or [::1]), or add the host to "
     "http_endpoint_options::allowed_hosts"},
    {refusal::unauthenticated, 401, -32001, "Authentication required", std::nullopt,
     "send a valid credential (Authorization: Bearer <token>)"},
    {refusal::body_too_large, 413, code_of(errc::invalid_request), "Request body too large", std::nullopt,
     "send a smaller request; the limit is http_endpoint_options::max_body_bytes"},
    {refusal::content_type, 415, code_of(errc::invalid_request), "Content-Type must be application/json",
     std::nullopt, "send the JSON-RPC message as application/json"},
    {refusal::accept, 406, code_of(errc::not_acceptable), "Accept must list application/json or text/event-stream",
     std::nullopt, "send Accept: application/json, text/event-stream"},
    {refusal::in_flight_duplicate, 409, code_of(errc::invalid_request), refusal_in_flight_message, std::nullopt,
     "use a fresh request id (MCP: ids are never reused within a session)"},
    {refusal::session_cap, 429, code_of(errc::session_cap), "Session limit reached", std::nullopt,
     "DELETE a session you no longer use, or wait for idle sessions to expire"},
    {refusal::shutting_down, 503, code_of(errc::shutting_down), "Server is shutting down", std::nullopt,
     "reconnect to another instance or retry after the server restarts"},
    {refusal::mint_failed, 500, code_of(errc::internal_error), "The session could not be created", std::nullopt,
     "retry initialize; report the correlation_id if it persists"},
    {refusal::busy, 503, code_of(errc::internal_error), "Server busy", retry::dispatch_queue_full,
     "retry after retry_after_ms; every dispatch slot is taken"},
    {refusal::principal_busy, 429, code_of(errc::internal_error), "Too many requests in flight",
     retry::dispatch_queue_full,
     "retry after retry_after_ms; this caller already has its limit of requests queued or running"},
};
// clang-format on

/// The alternative remediation of `post_pin_slots` (the caller's own calls hold the slots).
inline constexpr std::string_view refusal_pin_slots_charges_remediation =
    "wait for one of your streamed calls on this session to finish";

constexpr bool refusal_table_in_order() noexcept {
  for (std::size_t i = 0; i < std::size(refusal_table); ++i) {
    if (static_cast<std::size_t>(refusal_table[i].id) != i) return false;
  }
  return std::size(refusal_table) == static_cast<std::size_t>(refusal::principal_busy) + 1;
}
static_assert(refusal_table_in_order(), "one row per refusal, in the enum's order");
static_assert(static_cast<std::size_t>(refusal::post_unknown_session) + 1 == stream_reject_count,
              "the first rows mirror stream_reject");

/// The row of `r` (an out-of-range value reads as `unknown_session`, the most conservative answer).
inline const refusal_row& refusal_row_of(refusal r) noexcept {
  const auto i = static_cast<std::size_t>(r);
  return i < std::size(refusal_table) ? refusal_table[i] : refusal_table[static_cast<std::size_t>(refusal::unknown_session)];
}

/// The row of `row_id` as a `stream_refusal` labelled `reason` (metric, audit and `error.data`).
inline stream_refusal stream_refusal_for(refusal row_id, stream_reject reason) noexcept {
  const refusal_row& row = refusal_row_of(row_id);
  stream_refusal out;
  out.http_status = row.http_status;
  out.code = static_cast<errc>(row.code);
  out.message = row.message;
  out.reason = reason;
  out.retry_after = row.retry_after;
  out.remediation = row.remediation;
  return out;
}

/// Every refusal of the closed set (its row has the same value).
inline stream_refusal stream_refusal_for(stream_reject r) noexcept {
  if (static_cast<std::size_t>(r) >= stream_reject_count) r = stream_reject::unknown_session;
  return stream_refusal_for(static_cast<refusal>(r), r);
}

/// Audit `reason=` of the session a resume gap terminates
/// (docs/sessions.md#get-attach-replay-resume).
inline constexpr std::string_view gap_terminate_reason = "replay_window_exceeded";

inline void count_stream_reject(const session_metrics& m, stream_reject r) noexcept {
  const auto i = static_cast<std::size_t>(r);
  if (i < m.stream_rejects.size()) m.stream_rejects[i].inc();
}

inline void count_bridge_degrade(const session_metrics& m, bridge_degrade d) noexcept {
  const auto i = static_cast<std::size_t>(d);
  if (i < m.bridge_degrades.size()) m.bridge_degrades[i].inc();
}

// A progress token is a JSON string of at most default_max_progress_token_bytes or an integer in
// the signed 64-bit range (an integer above it cannot be echoed as an id, so it is "no token",
// like a float): the dispatch core's rule (docs/errors.md#progress-tokens).
inline bool valid_progress_token(json::value token) noexcept {
  return usable_progress_token(token, default_max_progress_token_bytes);
}

}  // namespace detail

// ---- refusals ----------------------------------------------------------------------------------

MCPCORE_DECL stream_refusal get_refusal(stream_reject r) noexcept {
  MCPCORE_ASSERT(r == stream_reject::missing_session_header || r == stream_reject::unknown_session ||
                 r == stream_reject::not_acceptable);
  return detail::stream_refusal_for(r);
}

MCPCORE_DECL stream_refusal get_refusal(attach_status s) noexcept {
  switch (s) {
    case attach_status::poisoned: return detail::stream_refusal_for(stream_reject::terminal_poisoned);
    case attach_status::gap: return detail::stream_refusal_for(stream_reject::replay_window_exceeded);
    case attach_status::handover_pending: return detail::stream_refusal_for(stream_reject::stream_handover_pending);
    case attach_status::global_stream_cap: return detail::stream_refusal_for(stream_reject::global_stream_cap);
    case attach_status::per_principal_stream_cap:
      return detail::stream_refusal_for(stream_reject::per_principal_stream_cap);
    case attach_status::attached: break;
  }
  // `attached` is not a refusal (precondition); answer as a gap would, the safest refusal.
  MCPCORE_ASSERT(s != attach_status::attached);
  return detail::stream_refusal_for(stream_reject::replay_window_exceeded);
}

MCPCORE_DECL void write_refusal(std::string& out, const std::optional<request_id_view>& id, const stream_refusal& r,
                                std::string_view correlation_id) {
  error_data d;
  d.correlation_id = correlation_id;
  d.retry_after_ms = r.retry_after;
  if (!r.remediation.empty()) d.remediation = r.remediation;
  d.reason = to_string(r.reason);
  const error_object e = make_error(r.code, r.message, d);
  write_error_response(out, id, e);
}

// ---- GET attach --------------------------------------------------------------------------------

MCPCORE_DECL get_attach attach_get(session_registry& registry, const std::shared_ptr<session>& s,
                                   std::string_view last_event_id, stream_budget& budget,
                                   std::string_view correlation_id, const session_metrics& metrics) {
  get_attach out;
  if (!s || !s->stream()) {
    // Not validated after all: the same answer as an unknown session
    // (docs/http.md#get-sessions-on).
    out.refusal = detail::stream_refusal_for(stream_reject::unknown_session);
    detail::count_stream_reject(metrics, stream_reject::unknown_session);
    return out;
  }
  // docs/design.md#other-wire-pieces: strict; anything malformed is "no cursor", never a
  // termination.
  const std::uint64_t cursor = sse::parse_last_event_id(last_event_id);
  attach_result a = s->stream()->attach_and_replay(cursor, budget, s->principal_id());
  if (a.status == attach_status::attached) {
    out.attached = std::move(a);
    return out;
  }
  if (a.status == attach_status::gap) {
    // docs/sessions.md#get-attach-replay-resume: one coherent signal, the session ends and the next
    // POST 404s too.
    (void)registry.terminate(s->id(), s->principal_id(), detail::gap_terminate_reason, correlation_id);
  }
  out.refusal = get_refusal(a.status);
  detail::count_stream_reject(metrics, out.refusal->reason);
  return out;
}

// ---- streamed-POST opt-in ----------------------------------------------------------------------

MCPCORE_DECL post_mode choose_post_mode(const post_mode_inputs& in) noexcept {
  if (!in.bridge_available || !in.has_session || !detail::valid_progress_token(in.progress_token)) {
    return post_mode::plain;
  }
  return in.accepts_sse && in.streamed_post_enabled ? post_mode::streamed : post_mode::get_only;
}

MCPCORE_DECL std::optional<request_id> progress_token_of(json::value token) {
  if (!detail::valid_progress_token(token)) return std::nullopt;
  if (token.is_string()) return request_id{std::string{token.as_string()}};
  if (token.is_integer()) {
    if (const auto v = token.to_int64()) return request_id{*v};
  }
  return std::nullopt;
}

// ---- admission ---------------------------------------------------------------------------------

MCPCORE_DECL post_admission admit_post(post_mode mode, stream_budget& budget, progress_bridge& bridge,
                                       const std::shared_ptr<session>& s, const request_id& id,
                                       const request_id& progress_token, const session_metrics& metrics) {
  post_admission out;
  if (mode == post_mode::plain) return out;
  const bool streamed = mode == post_mode::streamed;
  const auto refuse = [&](stream_refusal r) {
    out.lease.release();
    out.mode = post_mode::plain;
    out.call.reset();
    detail::count_stream_reject(metrics, r.reason);
    out.refusal = r;
  };
  const auto degrade = [&](bridge_degrade d) {
    out.lease.release();
    out.mode = post_mode::plain;
    out.call.reset();
    detail::count_bridge_degrade(metrics, d);
    out.degraded = d;
  };
  try {
    // 1. The budget (streamed only).
    if (streamed) {
      const std::string_view principal = s ? std::string_view{s->principal_id()} : std::string_view{};
      auto lease = budget.try_acquire(stream_surface_post, principal, default_post_streams_per_principal);
      if (!lease) {
        refuse(detail::stream_refusal_for(lease.error() == stream_budget_reject::per_principal_stream_cap
                                              ? stream_reject::post_per_principal_cap
                                              : stream_reject::post_global_cap));
        return out;
      }
      out.lease = std::move(*lease);
    }
    // 2. The bridge reservation.
    auto reserved = bridge.reserve(s, id, progress_token, streamed);
    if (!reserved) {
      const bridge_refusal why = reserved.error();
      switch (why.reason) {
        case bridge_reject::disabled:
        case bridge_reject::shutdown:
          degrade(bridge_degrade::reserve_rejected);
          return out;
        case bridge_reject::duplicate_request_id:
          if (streamed) {
            refuse(detail::stream_refusal_for(stream_reject::post_duplicate_request_id));
          } else {
            degrade(bridge_degrade::reserve_rejected);  // GET-only: silently plain
          }
          return out;
        case bridge_reject::unknown_session:
          refuse(detail::stream_refusal_for(stream_reject::post_unknown_session));
          return out;
        case bridge_reject::global_cap:
          refuse(detail::stream_refusal_for(stream_reject::post_record_cap));
          return out;
        case bridge_reject::pin_slots: {
          stream_refusal r = detail::stream_refusal_for(stream_reject::post_pin_slots);
          if (why.held_by_charges) r.remediation = detail::refusal_pin_slots_charges_remediation;
          refuse(r);
          return out;
        }
      }
      degrade(bridge_degrade::reserve_rejected);  // an unknown reason: the capability is withdrawn
      return out;
    }
    out.call.emplace(std::move(*reserved));
    out.mode = mode;
  } catch (...) {
    // 3. A throw is not a refusal (docs/sessions.md#streamed-post-admission): never 429 into an
    // OOM.
    if (out.call) out.call->abandon();
    degrade(bridge_degrade::reserve_threw);
  }
  return out;
}

// ---- post-dispatch failures --------------------------------------------------------------------

MCPCORE_DECL void write_post_dispatch_failure(std::string& out, request_id_view id, post_dispatch_failure f,
                                              std::string_view correlation_id, std::string_view execution_id) {
  error_data d;
  d.correlation_id = correlation_id;
  d.retry_after_ms = std::nullopt;
  const detail::refusal_row& row = detail::refusal_row_of(
      f == post_dispatch_failure::stream_install_failed ? detail::refusal::stream_install_failed
                                                        : detail::refusal::dispatch_threw);
  d.remediation = row.remediation;
  // Written either way: null says "no execution yet", a string is the handle to fetch by.
  d.execution_id = execution_id.empty() ? std::optional<std::string_view>{}
                                        : std::optional<std::string_view>{execution_id};
  const error_object e = make_error(static_cast<errc>(row.code), row.message, d);
  write_error_response(out, std::optional<request_id_view>{id}, e);
}

MCPCORE_END_NAMESPACE

#endif  // MCPCORE_IMPL_STREAM_ADMISSION_IPP
