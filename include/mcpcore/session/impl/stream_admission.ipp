// SPDX-License-Identifier: Apache-2.0
// The GET attach and its refusals, the streamed-POST opt-in and admission, the post-dispatch 500s
// and the streamed-POST pump (reference §7.1, §7.4, §9, §14.3-§14.4).
#ifndef MCPCORE_IMPL_STREAM_ADMISSION_IPP
#define MCPCORE_IMPL_STREAM_ADMISSION_IPP

#include <mcpcore/session/stream_admission.hpp>

#include <mcpcore/session/session_registry.hpp>
#include <mcpcore/wire/retry.hpp>
#include <mcpcore/wire/sse.hpp>

// The pump's saturating time arithmetic (`detail::pump_add`) lives with the GET pump.
#include <mcpcore/session/impl/stream_pump.ipp>

#include <cstddef>
#include <utility>

MCPCORE_BEGIN_NAMESPACE

namespace detail {

// ---- wire texts (reference §7.1, §7.4, §9.2, §9.6; paraphrased) ----------------------------------

inline constexpr std::string_view refusal_missing_session_header_message = "Mcp-Session-Id header required";
inline constexpr std::string_view refusal_missing_session_header_remediation =
    "send the Mcp-Session-Id header with the session id that initialize returned";

inline constexpr std::string_view refusal_unknown_session_message = "Unknown or expired session";
inline constexpr std::string_view refusal_unknown_session_remediation =
    "re-initialize to obtain a new session id";

inline constexpr std::string_view refusal_not_acceptable_message = "GET requires Accept: text/event-stream";
inline constexpr std::string_view refusal_not_acceptable_remediation =
    "send Accept: text/event-stream to open the session's event stream";

inline constexpr std::string_view refusal_poisoned_message = "Stream terminated; final response undeliverable";
inline constexpr std::string_view refusal_poisoned_remediation =
    "fetch the result by execution id; do not re-POST the request";

inline constexpr std::string_view refusal_gap_message = "Replay window exceeded";
inline constexpr std::string_view refusal_gap_remediation =
    "re-initialize; durable results remain fetchable by execution id";

inline constexpr std::string_view refusal_handover_message = "An earlier stream on this session is still closing";
inline constexpr std::string_view refusal_handover_remediation =
    "retry once the earlier stream on this session has closed";

inline constexpr std::string_view refusal_stream_cap_message = "Concurrent stream cap reached";
inline constexpr std::string_view refusal_per_principal_stream_cap_remediation =
    "close another GET stream of yours, or raise session_stream_options::get_streams_per_principal";
inline constexpr std::string_view refusal_global_stream_cap_remediation =
    "wait for a stream to close, or raise stream_budget_options::global_cap";

inline constexpr std::string_view refusal_post_cap_remediation =
    "wait for a streamed call to finish, or retry without Accept: text/event-stream for a plain response";

inline constexpr std::string_view refusal_duplicate_message = "That request id is already in flight on this session";
inline constexpr std::string_view refusal_duplicate_remediation =
    "resume on the GET stream with Last-Event-ID, or use a fresh request id";

inline constexpr std::string_view refusal_record_cap_message = "Streamed request capacity reached";

inline constexpr std::string_view refusal_pin_slots_message = "Too many undelivered streamed results on this session";
inline constexpr std::string_view refusal_pin_slots_charges_remediation =
    "wait for one of your streamed calls on this session to finish";
inline constexpr std::string_view refusal_pin_slots_pins_remediation =
    "retry; if it persists, resume the GET stream with a cursor one below the lowest id you still need, or "
    "re-initialize and fetch results by execution id";

inline constexpr std::string_view post_stream_install_failed_message = "streamed response could not be established";
inline constexpr std::string_view post_dispatch_threw_message = "dispatched, but the response could not be completed";
inline constexpr std::string_view post_dispatch_failure_remediation =
    "the work is running: fetch its result by execution id (or retry without Accept: text/event-stream); "
    "do not re-POST";

/// Audit `reason=` of the session a resume gap terminates (reference §7.4 step 3).
inline constexpr std::string_view gap_terminate_reason = "replay_window_exceeded";

inline constexpr stream_refusal make_stream_refusal(int status, errc code, std::string_view message,
                                                    stream_reject reason,
                                                    std::optional<std::chrono::milliseconds> retry_after,
                                                    std::string_view remediation) noexcept {
  stream_refusal r;
  r.http_status = status;
  r.code = code;
  r.message = message;
  r.reason = reason;
  r.retry_after = retry_after;
  r.remediation = remediation;
  return r;
}

// Every refusal of the closed set; `pin_slots` gets the "pins" remediation (the caller swaps it
// for the "charges" one). Texts point at static storage.
inline stream_refusal stream_refusal_for(stream_reject r) noexcept {
  using std::nullopt;
  switch (r) {
    case stream_reject::missing_session_header:
      return make_stream_refusal(400, errc::invalid_request, refusal_missing_session_header_message, r, nullopt,
                                 refusal_missing_session_header_remediation);
    case stream_reject::unknown_session:
    case stream_reject::post_unknown_session:
      return make_stream_refusal(404, errc::unknown_session, refusal_unknown_session_message, r, nullopt,
                                 refusal_unknown_session_remediation);
    case stream_reject::not_acceptable:
      return make_stream_refusal(406, errc::not_acceptable, refusal_not_acceptable_message, r, nullopt,
                                 refusal_not_acceptable_remediation);
    case stream_reject::origin:
      // Answered by the transport's Origin check; mapped here only to keep this function total.
      return make_stream_refusal(403, errc::origin_rejected, default_message(errc::origin_rejected), r, nullopt, {});
    case stream_reject::protocol_version:
      return make_stream_refusal(400, errc::unsupported_protocol_version,
                                 default_message(errc::unsupported_protocol_version), r, nullopt, {});
    case stream_reject::per_principal_stream_cap:
      return make_stream_refusal(429, errc::stream_cap, refusal_stream_cap_message, r, retry::stream_cap,
                                 refusal_per_principal_stream_cap_remediation);
    case stream_reject::global_stream_cap:
      return make_stream_refusal(429, errc::stream_cap, refusal_stream_cap_message, r, retry::stream_cap,
                                 refusal_global_stream_cap_remediation);
    case stream_reject::stream_handover_pending:
      return make_stream_refusal(429, errc::stream_cap, refusal_handover_message, r, retry::handover,
                                 refusal_handover_remediation);
    case stream_reject::replay_window_exceeded:
      return make_stream_refusal(404, errc::unknown_session, refusal_gap_message, r, nullopt,
                                 refusal_gap_remediation);
    case stream_reject::terminal_poisoned:
      return make_stream_refusal(410, errc::stream_poisoned, refusal_poisoned_message, r, nullopt,
                                 refusal_poisoned_remediation);
    case stream_reject::post_per_principal_cap:
    case stream_reject::post_global_cap:
      return make_stream_refusal(429, errc::stream_cap, refusal_stream_cap_message, r, retry::streamed_post,
                                 refusal_post_cap_remediation);
    case stream_reject::post_record_cap:
      return make_stream_refusal(429, errc::stream_cap, refusal_record_cap_message, r, retry::streamed_post,
                                 refusal_post_cap_remediation);
    case stream_reject::post_pin_slots:
      return make_stream_refusal(429, errc::stream_cap, refusal_pin_slots_message, r, retry::streamed_post,
                                 refusal_pin_slots_pins_remediation);
    case stream_reject::post_duplicate_request_id:
      return make_stream_refusal(409, errc::invalid_request, refusal_duplicate_message, r, nullopt,
                                 refusal_duplicate_remediation);
  }
  // An out-of-range value: the most conservative answer (unknown session, no retry).
  return make_stream_refusal(404, errc::unknown_session, refusal_unknown_session_message,
                             stream_reject::unknown_session, nullopt, refusal_unknown_session_remediation);
}

inline void count_stream_reject(const session_metrics& m, stream_reject r) noexcept {
  const auto i = static_cast<std::size_t>(r);
  if (i < m.stream_rejects.size()) m.stream_rejects[i].inc();
}

inline void count_bridge_degrade(const session_metrics& m, bridge_degrade d) noexcept {
  const auto i = static_cast<std::size_t>(d);
  if (i < m.bridge_degrades.size()) m.bridge_degrades[i].inc();
}

// A progress token is a JSON string or an integer in the signed 64-bit range (an integer above
// it cannot be echoed as an id, so it is "no token", like a float).
inline bool valid_progress_token(json::value token) noexcept {
  return token.is_string() || (token.is_integer() && token.to_int64().has_value());
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
    // Not validated after all: the same answer as an unknown session (reference §7.1 step 7).
    out.refusal = detail::stream_refusal_for(stream_reject::unknown_session);
    detail::count_stream_reject(metrics, stream_reject::unknown_session);
    return out;
  }
  // reference §7.1 step 9: strict; anything malformed is "no cursor", never a termination.
  const std::uint64_t cursor = sse::parse_last_event_id(last_event_id);
  attach_result a = s->stream()->attach_and_replay(cursor, budget, s->principal_id());
  if (a.status == attach_status::attached) {
    out.attached = std::move(a);
    return out;
  }
  if (a.status == attach_status::gap) {
    // reference §7.4 step 3: one coherent signal, the session ends and the next POST 404s too.
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
    // 3. A throw is not a refusal (reference §9.2 step 3): never 429 into an OOM.
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
  d.remediation = detail::post_dispatch_failure_remediation;
  // Written either way: null says "no execution yet", a string is the handle to fetch by.
  d.execution_id = execution_id.empty() ? std::optional<std::string_view>{}
                                        : std::optional<std::string_view>{execution_id};
  const std::string_view message = f == post_dispatch_failure::stream_install_failed
                                       ? detail::post_stream_install_failed_message
                                       : detail::post_dispatch_threw_message;
  const error_object e = make_error(errc::internal_error, message, d);
  write_error_response(out, std::optional<request_id_view>{id}, e);
}

// ---- post_pump ---------------------------------------------------------------------------------

namespace detail {

// The pump's close bookkeeping lives on the call's wake sink (where a cancel records `cancelled`).
// A call reserved without the streamed intent has no wake sink (a precondition violation): the
// pump then keeps the first reason in `fallback` (its own `reason_`, still `none` until finished).
inline void post_pump_close(const std::shared_ptr<stream_sink>& sink, close_reason r, close_reason& fallback) noexcept {
  if (sink) {
    (void)sink->close(r);
  } else if (fallback == close_reason::none) {
    fallback = r;
  }
}

inline close_reason post_pump_recorded(const std::shared_ptr<stream_sink>& sink, close_reason fallback) noexcept {
  return sink ? sink->reason() : fallback;
}

}  // namespace detail

MCPCORE_DECL post_pump::post_pump(progress_call call, stream_lease lease, std::chrono::steady_clock::time_point now,
                                  std::string correlation_id, post_pump_options options,
                                  std::chrono::milliseconds jitter, session_metrics metrics)
    : call_(std::move(call)),
      lease_(std::move(lease)),
      correlation_id_(std::move(correlation_id)),
      options_(std::move(options)),
      grace_(options_.revalidation, now, jitter),
      metrics_(metrics),
      last_tick_(now),
      deadline_(detail::pump_add(now, options_.response_cap)) {
  MCPCORE_ASSERT(call_.wake_sink() != nullptr);  // a streamed reservation, armed streaming
  // Paired with the decrement in release().
  metrics_.post_streams_active.add(1);
}

MCPCORE_DECL post_pump::~post_pump() { release(); }

MCPCORE_DECL std::chrono::milliseconds post_pump::wait_time(std::chrono::steady_clock::time_point now) const noexcept {
  return detail::pump_wait_time(last_tick_, options_.tick, grace_, deadline_, now);
}

MCPCORE_DECL bool post_pump::tick_due(std::chrono::steady_clock::time_point now) const noexcept {
  return detail::pump_tick_due(last_tick_, options_.tick, grace_, now);
}

MCPCORE_DECL void post_pump::tick(std::chrono::steady_clock::time_point now, credential_verdict verdict,
                                  bool session_alive) noexcept {
  if (finished_) return;
  last_tick_ = now;
  heartbeat_due_ = true;
  const close_reason r = grace_.apply(verdict, now);
  if (r != close_reason::none) {
    detail::post_pump_close(call_.wake_sink(), r, reason_);
  } else if (!session_alive) {
    detail::post_pump_close(call_.wake_sink(), close_reason::session_terminated, reason_);
  }
}

MCPCORE_DECL void post_pump::pass(std::chrono::steady_clock::time_point now, std::string& out) noexcept {
  if (finished_ || final_in_flight_) return;
  const std::size_t mark = out.size();
  // Finishes with `r`, appending the close notification (with the execution id and
  // `"partial":true`) when the reason has a frame (reference §9.5).
  const auto finish = [&](close_reason r) {
    reason_ = r;
    finished_ = true;
    if (writes_close_frame(r)) {
      write_close_notification(out, options_.close_method, r, correlation_id_, call_.execution_id());
    }
  };
  const std::shared_ptr<stream_sink> wake = call_.wake_sink();
  try {
    bool closed = reason_ != close_reason::none;  // only without a wake sink
    close_reason recorded = reason_;
    if (wake) {
      wake->take(wake_batch_);  // also clears the poke that woke the transport
      closed = wake_batch_.closed;
      recorded = wake_batch_.reason;
    }
    if (closed) {
      // Closed (cancel, revocation, session death, poison, shutdown): frames not yet written stay
      // in the ring, and the record parks for a GET resume when the pump is released.
      finish(recorded == close_reason::none ? close_reason::client_disconnect : recorded);
      return;
    }
    const bool cap_expired = now >= deadline_;
    call_.take(batch_, cap_expired);
    for (const auto& frame : batch_.frames) write_frame(out, frame);  // ring ids: resumable on GET
    if (batch_.final_included) {
      // The final is last; the stream ends `completed` once `written()` confirms it.
      final_in_flight_ = true;
      heartbeat_due_ = false;
      return;
    }
    if (batch_.cap_settled) {
      // reference §9.4: the one drain pass is done; the work continues.
      finish(close_reason::cap_expired);
      return;
    }
    if (out.size() == mark) {
      const bridge_record_state st = call_.state_now();
      if (st == bridge_record_state::done || st == bridge_record_state::aborted ||
          st == bridge_record_state::ring_only) {
        // Nothing more will come for this POST. A reason recorded on the sink wins (a poisoned
        // final and shutdown close it `internal_error` around the record turning done);
        // otherwise a record done without a final on this POST (the work produced no response)
        // ends `completed` with no frame, and one aborted, or parked under a live pump by the
        // sweep's backstop, ends `internal_error` (its frames stay resumable on the GET stream).
        close_reason r = detail::post_pump_recorded(wake, reason_);
        if (r == close_reason::none) {
          r = st == bridge_record_state::done ? close_reason::completed : close_reason::internal_error;
        }
        finish(r);
        return;
      }
    }
    if (out.size() == mark && heartbeat_due_) write_heartbeat(out);
    if (out.size() != mark) heartbeat_due_ = false;
  } catch (...) {
    // Nothing half-written goes out; the client resumes from its last whole frame on GET.
    out.resize(mark);
    detail::post_pump_close(wake, close_reason::internal_error, reason_);  // the first reason wins
    const close_reason recorded = detail::post_pump_recorded(wake, reason_);
    reason_ = recorded == close_reason::none ? close_reason::internal_error : recorded;
    finished_ = true;
    final_in_flight_ = false;
    try {
      if (writes_close_frame(reason_)) {
        write_close_notification(out, options_.close_method, reason_, correlation_id_, call_.execution_id());
      }
    } catch (...) {
      out.resize(mark);
    }
  }
}

MCPCORE_DECL void post_pump::written() noexcept {
  if (!final_in_flight_ || finished_) return;
  final_in_flight_ = false;
  call_.on_final_written();  // route (a): unpinned, record done
  reason_ = close_reason::completed;
  finished_ = true;
}

MCPCORE_DECL void post_pump::write_failed() noexcept {
  const std::shared_ptr<stream_sink> wake = call_.wake_sink();
  final_in_flight_ = false;  // the final did not reach the wire: it stays pinned for a GET resume
  if (finished_) {
    if (wake) (void)wake->close(close_reason::client_disconnect);
    return;  // the reason this pump finished with stands
  }
  detail::post_pump_close(wake, close_reason::client_disconnect, reason_);
  reason_ = detail::post_pump_recorded(wake, reason_);
  finished_ = true;
}

MCPCORE_DECL close_reason post_pump::reason() const noexcept {
  if (!finished_) return detail::post_pump_recorded(call_.wake_sink(), reason_);
  return reason_ == close_reason::none ? close_reason::client_disconnect : reason_;
}

MCPCORE_DECL void post_pump::release() noexcept {
  if (released_) return;
  released_ = true;
  if (!finished_) {
    // The transport stopped early (the peer went away): the recorded reason, if any (`none`
    // reports as client_disconnect). The sink is not closed here, as in get_pump.
    reason_ = detail::post_pump_recorded(call_.wake_sink(), reason_);
    finished_ = true;
  }
  final_in_flight_ = false;
  call_.on_post_closed();  // without a written final the record parks ring-only (reference §9.4)
  lease_.release();
  metrics_.post_streams_active.add(-1);
  const auto i = static_cast<std::size_t>(reason());
  if (i < metrics_.stream_closes.size()) metrics_.stream_closes[i].inc();
}

MCPCORE_END_NAMESPACE

#endif  // MCPCORE_IMPL_STREAM_ADMISSION_IPP
