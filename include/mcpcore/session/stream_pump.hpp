// SPDX-License-Identifier: Apache-2.0
// The sans-I/O pumps of held-open responses: the GET stream's (docs/sessions.md#the-get-pump) and
// the streamed POST's (docs/sessions.md#streamed-post, #close-reasons), with credential
// re-validation with grace (docs/sessions.md#credential-re-validation), the close notification
// (docs/sessions.md#close-reasons), the events-dropped and heartbeat synthetics
// (docs/sessions.md#sse-frames).
#ifndef MCPCORE_STREAM_PUMP_HPP
#define MCPCORE_STREAM_PUMP_HPP

#include <mcpcore/detail/config.hpp>
#include <mcpcore/governance/policy.hpp>
#include <mcpcore/session/progress_bridge.hpp>
#include <mcpcore/session/session_metrics.hpp>
#include <mcpcore/session/session_stream.hpp>
#include <mcpcore/session/stream_budget.hpp>
#include <mcpcore/session/stream_types.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

MCPCORE_BEGIN_NAMESPACE

/// Default JSON-RPC method of the close notification (docs/sessions.md; Yuzu's is
/// `notifications/yuzu.stream_closed`).
inline constexpr std::string_view default_close_notification_method = "notifications/mcpcore/stream_closed";
/// Default pump tick: heartbeat interval and revocation latency bound
/// (docs/sessions.md#the-get-pump).
inline constexpr std::chrono::milliseconds default_pump_tick{3000};
/// Default grace after the last authoritative confirmation when the auth backend is unreachable.
inline constexpr std::chrono::milliseconds default_revalidation_grace{60000};
/// Default upper bound of the per-stream jitter added to the grace (grace / 2: deaths spread
/// over 60-90 s instead of a reconnect storm).
inline constexpr std::chrono::milliseconds default_revalidation_jitter_max{30000};
/// Default age bound of a cached (`valid_stale`) answer; `4 × max_staleness ≤ grace` is required.
inline constexpr std::chrono::milliseconds default_revalidation_max_staleness{15000};
static_assert(4 * default_revalidation_max_staleness <= default_revalidation_grace);

/// Grace parameters (docs/sessions.md#credential-re-validation).
struct revalidation_options {
  std::chrono::milliseconds grace = default_revalidation_grace;
  /// Upper bound of the jitter drawn once per stream, uniformly in [0, jitter_max]; tests use 0.
  std::chrono::milliseconds jitter_max = default_revalidation_jitter_max;
  std::chrono::milliseconds max_staleness = default_revalidation_max_staleness;
};

/// The grace machine of one stream (docs/sessions.md#credential-re-validation).
///
/// The deadline is measured from the last authoritative confirmation (backdated, so cache
/// residency and grace never add up): `last_ok + grace + jitter`.
/// - `valid`: last_ok = now; no deadline.
/// - `valid_stale`: last_ok = max(last_ok, now - max_staleness); no deadline.
/// - `revoked`: `credential_revoked`.
/// - `indeterminate`: arm the deadline; already passed → `auth_unavailable`.
/// - any other value: `auth_unavailable` (fail closed).
class revalidation_grace {
 public:
  /// A machine whose last authoritative confirmation is `attached_at` (the attach authenticated).
  MCPCORE_DECL revalidation_grace(revalidation_options options, std::chrono::steady_clock::time_point attached_at,
                                  std::chrono::milliseconds jitter) noexcept;
  /// A jitter drawn uniformly in [0, max] from a per-call random engine (no global state).
  [[nodiscard]] MCPCORE_DECL static std::chrono::milliseconds draw_jitter(std::chrono::milliseconds max);
  /// Applies `verdict` observed at `now`; returns `none` to keep the stream, or the close reason.
  MCPCORE_DECL close_reason apply(credential_verdict verdict, std::chrono::steady_clock::time_point now) noexcept;
  /// The armed deadline, if any.
  [[nodiscard]] std::optional<std::chrono::steady_clock::time_point> deadline() const noexcept { return deadline_; }
  [[nodiscard]] std::chrono::steady_clock::time_point last_authoritative() const noexcept { return last_ok_; }

 private:
  revalidation_options options_;
  std::chrono::steady_clock::time_point last_ok_;
  std::chrono::milliseconds jitter_;
  std::optional<std::chrono::steady_clock::time_point> deadline_;
};

/// The remediation text the close notification carries for `reason` (docs/sessions.md#close-reasons
/// table).
[[nodiscard]] MCPCORE_DECL std::string_view close_remediation(close_reason reason) noexcept;

/// Appends the close notification as one SSE event (`event: message`, no id, never in the ring):
/// `{"jsonrpc":"2.0","method":<method>,"params":{"reason":..,"correlation_id":..,
/// "retry_after_ms":null,"remediation":..[,"execution_id":..,"partial":true]}}`. `execution_id`
/// (streamed POST) adds the last two members. Every string is JSON-escaped here.
MCPCORE_DECL void write_close_notification(std::string& out, std::string_view method, close_reason reason,
                                           std::string_view correlation_id, std::string_view execution_id = {});
/// Appends the `events-dropped` synthetic (no id): data `{"dropped_count":N,"reason":"slow_consumer",
/// "remediation":...}` (docs/sessions.md#sse-frames).
MCPCORE_DECL void write_events_dropped(std::string& out, std::uint64_t dropped);
/// Appends a heartbeat (`event: heartbeat`, empty data, no id).
MCPCORE_DECL void write_heartbeat(std::string& out);
/// Appends a ring frame (`id: <id>`, `event: message`, the JSON-RPC message as data).
MCPCORE_DECL void write_frame(std::string& out, const stream_frame& frame);

/// Options of a GET pump.
struct get_pump_options {
  std::chrono::milliseconds tick = default_pump_tick;
  revalidation_options revalidation{};
  std::string close_method{default_close_notification_method};
};

/// One held-open GET stream's pump, sans-I/O (docs/sessions.md#the-get-pump). The transport owns
/// the timing and the socket:
///
///     while (!pump.finished()) {
///       wait on the sink (wait_for / waker) for at most pump.wait_time(now);
///       if (pump.tick_due(now)) pump.tick(now, host_revalidate(), registry.validate_and_touch(...) != nullptr);
///       std::string out; pump.pass(out);      // frames, synthetics, heartbeat, or the close frame
///       if (!write(out)) pump.write_failed();
///     }
///     pump.release();   // also run by the destructor: detach, lease back
///
/// Once finished, `reason()` is the close reason for the audit row and the metric (none is
/// reported as `client_disconnect`).
///
/// @par Thread safety
/// A pump belongs to one thread (or strand) at a time; the sink and stream it holds are thread-safe.
class get_pump {
 public:
  /// A pump for `sink`, attached to `stream` at `generation` at time `now`; `correlation_id` goes
  /// into the close notification.
  MCPCORE_DECL get_pump(std::shared_ptr<session_stream> stream, std::shared_ptr<stream_sink> sink,
                        std::uint64_t generation, std::chrono::steady_clock::time_point now,
                        std::string correlation_id, get_pump_options options = {},
                        std::chrono::milliseconds jitter = std::chrono::milliseconds{0},
                        session_metrics metrics = {});
  /// Runs `release()`.
  MCPCORE_DECL ~get_pump();
  get_pump(const get_pump&) = delete;
  get_pump& operator=(const get_pump&) = delete;

  /// How long the transport may wait before the next pass: until the next tick or credential
  /// deadline, whichever is first, rounded up to whole milliseconds (0 when one is due).
  [[nodiscard]] MCPCORE_DECL std::chrono::milliseconds wait_time(std::chrono::steady_clock::time_point now) const noexcept;
  /// Whether the once-per-tick checks are due (a tick elapsed since the last, or the credential
  /// deadline passed).
  [[nodiscard]] MCPCORE_DECL bool tick_due(std::chrono::steady_clock::time_point now) const noexcept;
  /// Records this tick's checks: the host's credential verdict and whether the session is still
  /// alive (the caller's `validate_and_touch`, which also slides the TTL). A close reason they
  /// imply is recorded on the sink (first reason wins).
  MCPCORE_DECL void tick(std::chrono::steady_clock::time_point now, credential_verdict verdict,
                         bool session_alive) noexcept;
  /// Appends this pass's bytes to `out`: when the sink is closed `completed` (a resumed POST
  /// stream that has nothing more to come), its queued frames, and the pump finishes; when it is
  /// closed otherwise, the close notification if the reason writes one, and the pump finishes; when superseded (generation fence), nothing, and
  /// it finishes `superseded`; otherwise the `events-dropped` synthetic if frames were lost, the
  /// queued frames, or a heartbeat on a pass that would write nothing and a tick elapsed.
  /// No-throw: an internal failure finishes the pump `internal_error`.
  MCPCORE_DECL void pass(std::string& out) noexcept;
  /// The bytes of the last pass reached the wire: pinned finals among its frames are released
  /// (`session_stream::written`). Without it, a final stays pinned and is replayed on the next
  /// attach.
  MCPCORE_DECL void written() noexcept;
  /// The transport could not write: finishes `client_disconnect` (unless a reason was recorded).
  MCPCORE_DECL void write_failed() noexcept;
  [[nodiscard]] bool finished() const noexcept { return finished_; }
  /// The close reason (valid once finished; `none` is reported as `client_disconnect`).
  [[nodiscard]] MCPCORE_DECL close_reason reason() const noexcept;
  /// Detaches the sink from the stream (its lease goes back) and counts the close; idempotent, no-throw.
  MCPCORE_DECL void release() noexcept;

 private:
  std::shared_ptr<session_stream> stream_;
  std::shared_ptr<stream_sink> sink_;
  std::uint64_t generation_;
  std::string correlation_id_;
  get_pump_options options_;
  revalidation_grace grace_;
  session_metrics metrics_;
  std::chrono::steady_clock::time_point last_tick_;
  bool heartbeat_due_ = false;
  bool finished_ = false;
  bool released_ = false;
  close_reason reason_ = close_reason::none;
  stream_sink::batch batch_;
  std::vector<std::uint64_t> last_ids_;  // ring ids of the last pass's frames

  // The taken batch: events-dropped if frames were lost, then the frames (their ids noted).
  void write_batch(std::string& out);
};

/// Options of a streamed-POST pump.
struct post_pump_options {
  std::chrono::milliseconds tick = default_pump_tick;
  /// How long the response is held open (docs/sessions.md#streamed-post: 120 s); the work continues
  /// after it.
  std::chrono::milliseconds response_cap = default_post_response_cap;
  revalidation_options revalidation{};
  std::string close_method{default_close_notification_method};
};

/// One streamed POST response's pump, sans-I/O (docs/sessions.md#streamed-post, #close-reasons),
/// driven like `get_pump`:
///
///     while (!pump.finished()) {
///       wait on call.wake_sink() for at most pump.wait_time(now);
///       if (pump.tick_due(now)) pump.tick(now, host_revalidate(), registry.validate_and_touch(...) != nullptr);
///       std::string out; pump.pass(now, out);
///       if (!write(out)) pump.write_failed(); else pump.written();
///     }
///     pump.release();
///
/// A pass writes the committed progress frames (with their ring ids, so a client can resume on
/// GET from exactly there), then the final last; once `written()` confirms the final reached the
/// wire the pump finishes `completed` (no close frame) and the record is done. The response cap
/// is stamped at construction: when it passes, one drain pass still writes pending progress, then
/// the pump finishes `cap_expired`. Every other end (cancelled, client_disconnect,
/// credential_revoked, auth_unavailable, session_terminated, internal_error) writes the close
/// notification with `execution_id` and `"partial":true` where the reason has a frame.
/// `release()` (also the destructor) tells the bridge the POST closed (an undelivered record parks
/// for a GET resume), returns the lease, and counts the close.
class post_pump {
 public:
  MCPCORE_DECL post_pump(progress_call call, stream_lease lease, std::chrono::steady_clock::time_point now,
                         std::string correlation_id, post_pump_options options = {},
                         std::chrono::milliseconds jitter = std::chrono::milliseconds{0},
                         session_metrics metrics = {});
  MCPCORE_DECL ~post_pump();
  post_pump(const post_pump&) = delete;
  post_pump& operator=(const post_pump&) = delete;

  /// Until the next tick, credential deadline or response cap, rounded up (0 when one is due).
  [[nodiscard]] MCPCORE_DECL std::chrono::milliseconds wait_time(std::chrono::steady_clock::time_point now) const noexcept;
  [[nodiscard]] MCPCORE_DECL bool tick_due(std::chrono::steady_clock::time_point now) const noexcept;
  /// As `get_pump::tick`.
  MCPCORE_DECL void tick(std::chrono::steady_clock::time_point now, credential_verdict verdict,
                         bool session_alive) noexcept;
  /// Appends this pass's bytes (no-throw: an internal failure finishes `internal_error`).
  MCPCORE_DECL void pass(std::chrono::steady_clock::time_point now, std::string& out) noexcept;
  /// The bytes of the last pass reached the wire (after a final: the record is done, `completed`).
  MCPCORE_DECL void written() noexcept;
  /// The bytes could not be written: finishes `client_disconnect` (unless a reason was recorded).
  MCPCORE_DECL void write_failed() noexcept;
  [[nodiscard]] bool finished() const noexcept { return finished_; }
  /// The close reason (`none` is reported as `client_disconnect`).
  [[nodiscard]] MCPCORE_DECL close_reason reason() const noexcept;
  /// Closes the POST side of the record, returns the lease, counts the close; idempotent, no-throw.
  MCPCORE_DECL void release() noexcept;

 private:
  progress_call call_;
  stream_lease lease_;
  std::string correlation_id_;
  post_pump_options options_;
  revalidation_grace grace_;
  session_metrics metrics_;
  std::chrono::steady_clock::time_point last_tick_;
  std::chrono::steady_clock::time_point deadline_;
  bool heartbeat_due_ = false;
  bool final_in_flight_ = false;
  bool finished_ = false;
  bool released_ = false;
  close_reason reason_ = close_reason::none;
  post_batch batch_;
  stream_sink::batch wake_batch_;
};

MCPCORE_END_NAMESPACE

#if defined(MCPCORE_HEADER_ONLY)
#  include <mcpcore/session/impl/stream_pump.ipp>
#endif

#endif  // MCPCORE_STREAM_PUMP_HPP
