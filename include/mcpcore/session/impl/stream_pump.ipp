// SPDX-License-Identifier: Apache-2.0
// The pumps of held-open responses: credential grace, the close notification, the synthetics, and
// one pass of the GET stream and of a streamed POST.
#ifndef MCPCORE_IMPL_STREAM_PUMP_IPP
#define MCPCORE_IMPL_STREAM_PUMP_IPP

#include <mcpcore/session/stream_pump.hpp>

#include <mcpcore/wire/json_writer.hpp>
#include <mcpcore/wire/sse.hpp>

#include <cstddef>
#include <optional>
#include <random>
#include <utility>

MCPCORE_BEGIN_NAMESPACE

namespace detail {

/// SSE event type of the heartbeat (docs/sessions.md#sse-frames).
inline constexpr std::string_view heartbeat_event_type = "heartbeat";
/// SSE event type of the drop synthetic (docs/sessions.md#sse-frames).
inline constexpr std::string_view events_dropped_event_type = "events-dropped";
/// The `reason` of the drop synthetic.
inline constexpr std::string_view events_dropped_reason = "slow_consumer";
/// The `remediation` of the drop synthetic (docs/sessions.md#sse-frames).
inline constexpr std::string_view events_dropped_remediation =
    "reconnect with Last-Event-ID to replay what was missed; if the replay window has passed you "
    "will get 404 and must re-initialize";

// `t + d`, clamped to the representable range instead of overflowing (an option of
// `milliseconds::max()` means "never"). Negative `d` counts as 0.
inline std::chrono::steady_clock::time_point pump_add(std::chrono::steady_clock::time_point t,
                                                      std::chrono::milliseconds d) noexcept {
  using dur = std::chrono::steady_clock::duration;
  using tp = std::chrono::steady_clock::time_point;
  if (d.count() <= 0) return t;
  // Truncation toward zero keeps the bound itself representable in `dur`.
  if (d >= std::chrono::duration_cast<std::chrono::milliseconds>(dur::max())) return tp::max();
  const dur n = std::chrono::duration_cast<dur>(d);
  if (t.time_since_epoch() > dur::max() - n) return tp::max();
  return t + n;
}

// `t - d`, clamped likewise. Negative `d` counts as 0.
inline std::chrono::steady_clock::time_point pump_sub(std::chrono::steady_clock::time_point t,
                                                      std::chrono::milliseconds d) noexcept {
  using dur = std::chrono::steady_clock::duration;
  using tp = std::chrono::steady_clock::time_point;
  if (d.count() <= 0) return t;
  if (d >= std::chrono::duration_cast<std::chrono::milliseconds>(dur::max())) return tp::min();
  const dur n = std::chrono::duration_cast<dur>(d);
  if (t.time_since_epoch() < dur::min() + n) return tp::min();
  return t - n;
}


// The wait of a pump (get_pump and post_pump, docs/sessions.md#the-get-pump, #streamed-post): until
// the next tick, the credential deadline or `extra` (the streamed-POST response cap), whichever is
// first, rounded up to whole milliseconds; 0 when one is due.
inline std::chrono::milliseconds pump_wait_time(std::chrono::steady_clock::time_point last_tick,
                                                std::chrono::milliseconds tick, const revalidation_grace& grace,
                                                std::optional<std::chrono::steady_clock::time_point> extra,
                                                std::chrono::steady_clock::time_point now) noexcept {
  auto next = pump_add(last_tick, tick);
  if (const auto deadline = grace.deadline(); deadline && *deadline < next) next = *deadline;
  if (extra && *extra < next) next = *extra;
  if (next <= now) return std::chrono::milliseconds{0};
  // Both are valid time points and next > now, but their difference can still overflow when
  // one of them is clamped: saturate.
  if (now.time_since_epoch().count() < 0 &&
      next.time_since_epoch() > std::chrono::steady_clock::duration::max() + now.time_since_epoch()) {
    return std::chrono::milliseconds::max();
  }
  return std::chrono::ceil<std::chrono::milliseconds>(next - now);
}

// Whether a pump's once-per-tick checks are due: a tick elapsed, or the credential deadline passed.
inline bool pump_tick_due(std::chrono::steady_clock::time_point last_tick, std::chrono::milliseconds tick,
                          const revalidation_grace& grace, std::chrono::steady_clock::time_point now) noexcept {
  if (now >= pump_add(last_tick, tick)) return true;
  const auto deadline = grace.deadline();
  return deadline && now >= *deadline;
}

}  // namespace detail

// ---- revalidation_grace ----------------------------------------------------------------------

MCPCORE_DECL revalidation_grace::revalidation_grace(revalidation_options options,
                                                    std::chrono::steady_clock::time_point attached_at,
                                                    std::chrono::milliseconds jitter) noexcept
    : options_(options),
      last_ok_(attached_at),
      jitter_(jitter.count() < 0 ? std::chrono::milliseconds{0} : jitter) {}

MCPCORE_DECL std::chrono::milliseconds revalidation_grace::draw_jitter(std::chrono::milliseconds max) {
  if (max.count() <= 0) return std::chrono::milliseconds{0};
  std::random_device rd;
  std::mt19937_64 engine{(static_cast<std::uint64_t>(rd()) << 32) ^ static_cast<std::uint64_t>(rd())};
  std::uniform_int_distribution<std::chrono::milliseconds::rep> pick{0, max.count()};
  return std::chrono::milliseconds{pick(engine)};
}

MCPCORE_DECL close_reason revalidation_grace::apply(credential_verdict verdict,
                                                    std::chrono::steady_clock::time_point now) noexcept {
  switch (verdict) {
    case credential_verdict::valid:
      last_ok_ = now;
      deadline_.reset();
      return close_reason::none;
    case credential_verdict::valid_stale: {
      // The cache may be up to max_staleness old: the last authoritative yes is at least that far
      // back, and a stale answer never moves the floor backwards.
      const auto floor = detail::pump_sub(now, options_.max_staleness);
      if (floor > last_ok_) last_ok_ = floor;
      deadline_.reset();
      return close_reason::none;
    }
    case credential_verdict::revoked:
      return close_reason::credential_revoked;
    case credential_verdict::indeterminate:
      if (!deadline_) deadline_ = detail::pump_add(detail::pump_add(last_ok_, options_.grace), jitter_);
      return now >= *deadline_ ? close_reason::auth_unavailable : close_reason::none;
  }
  return close_reason::auth_unavailable;  // an unknown verdict fails closed
}

// ---- frames ------------------------------------------------------------------------------------

MCPCORE_DECL std::string_view close_remediation(close_reason reason) noexcept {
  switch (reason) {
    case close_reason::client_disconnect: return "reconnect with Last-Event-ID";
    case close_reason::superseded: return "a newer stream on this session replaced this one";
    case close_reason::session_terminated: return "re-initialize the session";
    case close_reason::credential_revoked: return "re-authenticate, then re-initialize";
    case close_reason::auth_unavailable: return "retry shortly; results remain fetchable by execution id";
    case close_reason::internal_error:
      return "reconnect with Last-Event-ID; results remain fetchable by execution id";
    case close_reason::cancelled: return "the work continues; fetch the result by execution id";
    case close_reason::cap_expired:
      return "the work continues; fetch the result by execution id or resume on the GET stream";
    case close_reason::completed:
    case close_reason::none:
      return {};
  }
  return {};
}

MCPCORE_DECL void write_close_notification(std::string& out, std::string_view method, close_reason reason,
                                           std::string_view correlation_id, std::string_view execution_id) {
  std::string data;
  json::writer w{data};
  w.begin_object().member("jsonrpc", "2.0").member("method", method).key("params").begin_object();
  w.member("reason", to_string(reason)).member("correlation_id", correlation_id);
  w.key("retry_after_ms").null();
  w.member("remediation", close_remediation(reason));
  if (!execution_id.empty()) w.member("execution_id", execution_id).member("partial", true);
  w.end_object().end_object();
  sse::event e;
  e.type = stream_event_type;
  e.data = data;
  sse::write_event(out, e);
}

MCPCORE_DECL void write_events_dropped(std::string& out, std::uint64_t dropped) {
  std::string data;
  json::writer w{data};
  w.begin_object()
      .member("dropped_count", dropped)
      .member("reason", detail::events_dropped_reason)
      .member("remediation", detail::events_dropped_remediation)
      .end_object();
  sse::event e;
  e.type = detail::events_dropped_event_type;
  e.data = data;
  sse::write_event(out, e);
}

MCPCORE_DECL void write_heartbeat(std::string& out) {
  sse::event e;
  e.type = detail::heartbeat_event_type;
  sse::write_event(out, e);
}

MCPCORE_DECL void write_frame(std::string& out, const stream_frame& frame) {
  sse::event e;
  e.id = frame.id;
  e.type = stream_event_type;
  e.data = frame.data;
  sse::write_event(out, e);
}

// ---- get_pump ----------------------------------------------------------------------------------

MCPCORE_DECL get_pump::get_pump(std::shared_ptr<session_stream> stream, std::shared_ptr<stream_sink> sink,
                                std::uint64_t generation, std::chrono::steady_clock::time_point now,
                                std::string correlation_id, get_pump_options options,
                                std::chrono::milliseconds jitter, session_metrics metrics)
    : stream_(std::move(stream)),
      sink_(std::move(sink)),
      generation_(generation),
      correlation_id_(std::move(correlation_id)),
      options_(std::move(options)),
      grace_(options_.revalidation, now, jitter),
      metrics_(metrics),
      last_tick_(now) {
  MCPCORE_ASSERT(stream_ != nullptr);
  MCPCORE_ASSERT(sink_ != nullptr);
}

MCPCORE_DECL get_pump::~get_pump() { release(); }

MCPCORE_DECL std::chrono::milliseconds get_pump::wait_time(std::chrono::steady_clock::time_point now) const noexcept {
  return detail::pump_wait_time(last_tick_, options_.tick, grace_, std::nullopt, now);
}

MCPCORE_DECL bool get_pump::tick_due(std::chrono::steady_clock::time_point now) const noexcept {
  return detail::pump_tick_due(last_tick_, options_.tick, grace_, now);
}

MCPCORE_DECL void get_pump::tick(std::chrono::steady_clock::time_point now, credential_verdict verdict,
                                 bool session_alive) noexcept {
  if (finished_) return;
  last_tick_ = now;
  heartbeat_due_ = true;
  const close_reason r = grace_.apply(verdict, now);
  if (r != close_reason::none) {
    sink_->close(r);
  } else if (!session_alive) {
    sink_->close(close_reason::session_terminated);
  }
}

MCPCORE_DECL void get_pump::pass(std::string& out) noexcept {
  if (finished_) return;
  const std::size_t mark = out.size();
  try {
    sink_->take(batch_);
    if (batch_.closed && batch_.reason == close_reason::completed) {
      // A resumed POST stream that has nothing more to come: its last frames, then the end.
      write_batch(out);
      reason_ = close_reason::completed;
      finished_ = true;
      return;
    }
    if (batch_.closed) {
      // A closed stream stops: frames still queued are not written (they stay in the ring).
      reason_ = batch_.reason == close_reason::none ? close_reason::client_disconnect : batch_.reason;
      finished_ = true;
      if (writes_close_frame(reason_)) {
        write_close_notification(out, options_.close_method, reason_, correlation_id_);
      }
      return;
    }
    if (!stream_->current(generation_)) {
      // Superseded: the new stream replays these frames from the ring; write nothing
      // (docs/sessions.md#takeover).
      reason_ = close_reason::superseded;
      finished_ = true;
      return;
    }
    write_batch(out);
    if (out.size() == mark && heartbeat_due_) write_heartbeat(out);
    if (out.size() != mark) heartbeat_due_ = false;
  } catch (...) {
    // Nothing half-written goes out; the client resumes from its last whole frame.
    out.resize(mark);
    last_ids_.clear();
    sink_->close(close_reason::internal_error);  // the first reason recorded wins
    const close_reason recorded = sink_->reason();
    reason_ = recorded == close_reason::none ? close_reason::internal_error : recorded;
    finished_ = true;
    try {
      if (writes_close_frame(reason_)) {
        write_close_notification(out, options_.close_method, reason_, correlation_id_);
      }
    } catch (...) {
      out.resize(mark);
    }
  }
}

MCPCORE_DECL void get_pump::write_batch(std::string& out) {
  if (batch_.dropped != 0) write_events_dropped(out, batch_.dropped);
  last_ids_.clear();
  for (const auto& frame : batch_.frames) {
    write_frame(out, frame);
    last_ids_.push_back(frame.id);
  }
}

MCPCORE_DECL void get_pump::written() noexcept {
  if (!last_ids_.empty()) (void)stream_->written(last_ids_);
  last_ids_.clear();
}

MCPCORE_DECL void get_pump::write_failed() noexcept {
  last_ids_.clear();  // not written: their pins stay, the next attach replays them
  sink_->close(close_reason::client_disconnect);
  if (finished_) return;  // the reason this pump finished with stands
  reason_ = sink_->reason();
  finished_ = true;
}

MCPCORE_DECL close_reason get_pump::reason() const noexcept {
  if (!finished_) return sink_->reason();
  return reason_ == close_reason::none ? close_reason::client_disconnect : reason_;
}

MCPCORE_DECL void get_pump::release() noexcept {
  if (released_) return;
  released_ = true;
  if (!finished_) {
    // The transport stopped before the pump finished (the peer went away): the reason is the one
    // recorded on the sink, if any (`none` reports as client_disconnect). The sink is not closed
    // here: that would run the transport's waker while the transport is tearing the stream down.
    reason_ = sink_->reason();
    finished_ = true;
  }
  stream_->detach(*sink_);   // the lease goes back
  sink_->lease().release();  // (a resumed stream of an ended POST stream was never tracked)
  const auto i = static_cast<std::size_t>(reason());
  if (i < metrics_.stream_closes.size()) metrics_.stream_closes[i].inc();
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
  // `"partial":true`) when the reason has a frame (docs/sessions.md#close-reasons).
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
      // docs/sessions.md#streamed-post: the one drain pass is done; the work continues.
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
  call_.on_post_closed();  // without a written final the record parks ring-only (docs/sessions.md#streamed-post)
  lease_.release();
  metrics_.post_streams_active.add(-1);
  const auto i = static_cast<std::size_t>(reason());
  if (i < metrics_.stream_closes.size()) metrics_.stream_closes[i].inc();
}

MCPCORE_END_NAMESPACE

#endif  // MCPCORE_IMPL_STREAM_PUMP_IPP
