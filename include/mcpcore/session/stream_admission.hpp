// SPDX-License-Identifier: Apache-2.0
// What a transport answers around held-open responses, sans-I/O: the GET attach with its gap rule
// and refusals (reference §7.1, §7.4), the streamed-POST opt-in and admission with every refusal of
// reference §9.2, the post-dispatch 500s (§9.6), and the streamed-POST pump (§9.4-§9.5).
#ifndef MCPCORE_STREAM_ADMISSION_HPP
#define MCPCORE_STREAM_ADMISSION_HPP

#include <mcpcore/detail/config.hpp>
#include <mcpcore/session/progress_bridge.hpp>
#include <mcpcore/session/session_metrics.hpp>
#include <mcpcore/session/session_stream.hpp>
#include <mcpcore/session/stream_budget.hpp>
#include <mcpcore/session/stream_pump.hpp>
#include <mcpcore/wire/error.hpp>
#include <mcpcore/wire/json.hpp>
#include <mcpcore/wire/jsonrpc.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

MCPCORE_BEGIN_NAMESPACE

class session;
class session_registry;

/// One refusal, ready for the wire: HTTP status, JSON-RPC code and message, the closed-set reason
/// (metric label, audit `reason=`, and `error.data.reason`), the honest retry floor (also the
/// `Retry-After` header, in whole seconds rounded up) and the remediation.
struct stream_refusal {
  int http_status = 429;
  errc code = errc::stream_cap;
  std::string_view message{};
  stream_reject reason = stream_reject::global_stream_cap;
  std::optional<std::chrono::milliseconds> retry_after{};
  std::string_view remediation{};
};

/// The refusal of a GET that never reaches the attach (reference §7.1 steps 6-8):
/// `missing_session_header` 400 -32600, `unknown_session` 404 -32007, `not_acceptable` 406 -32011.
/// @pre `r` is one of those three.
[[nodiscard]] MCPCORE_DECL stream_refusal get_refusal(stream_reject r) noexcept;
/// The refusal of an attach status other than `attached` (reference §7.4): `poisoned` 410 -32013
/// (`terminal_poisoned`, no retry: fetch by execution id, do not re-POST), `gap` 404 -32007
/// "Replay window exceeded" (`replay_window_exceeded`, re-initialize), `handover_pending`,
/// `global_stream_cap`, `per_principal_stream_cap` 429 -32012 with retry 5000 ms and a
/// remediation naming the knob that can fix it.
/// @pre `s != attach_status::attached`.
[[nodiscard]] MCPCORE_DECL stream_refusal get_refusal(attach_status s) noexcept;

/// Writes `r` as a JSON-RPC error response for `id` (null when absent) with the `error.data`
/// envelope (correlation id, retry, remediation, reason).
MCPCORE_DECL void write_refusal(std::string& out, const std::optional<request_id_view>& id, const stream_refusal& r,
                                std::string_view correlation_id);

/// The outcome of `attach_get`.
struct get_attach {
  /// Set when refused: answer it (nothing is attached).
  std::optional<stream_refusal> refusal;
  /// When attached: the sink (with its lease and its replay) and the generation fence.
  attach_result attached;
};
/// The GET attach of reference §7.1 steps 9-10 and §7.4 for a session the caller already
/// validated: parses `last_event_id` strictly (anything malformed reads as 0), attaches, and on a
/// gap terminates the session (`registry.terminate(..., "replay_window_exceeded", cid)`: the
/// client's next POST 404s too) before answering 404. Every refusal is counted in
/// `metrics.stream_rejects`.
[[nodiscard]] MCPCORE_DECL get_attach attach_get(session_registry& registry, const std::shared_ptr<session>& s,
                                                 std::string_view last_event_id, stream_budget& budget,
                                                 std::string_view correlation_id, const session_metrics& metrics);

/// How a `tools/call` POST is answered (reference §9.1).
enum class post_mode : std::uint8_t {
  plain,     ///< plain JSON; no progress record
  get_only,  ///< plain JSON on the POST; progress live on the session's GET stream
  streamed,  ///< SSE on the POST: progress, then the final, then the end
};
/// What decides the mode (reference §9.1).
struct post_mode_inputs {
  /// Sessions are on and a progress bridge is wired.
  bool bridge_available = false;
  /// The request carries a valid `Mcp-Session-Id`.
  bool has_session = false;
  /// `params._meta.progressToken` (absent when missing).
  json::value progress_token{};
  /// `Accept` lists `text/event-stream` (`accept_wants_sse`; `;q=0` still opts in: the token wins).
  bool accepts_sse = false;
  /// Streamed POST is enabled (default on; a host may opt out).
  bool streamed_post_enabled = true;
};
/// The mode: `plain` unless the bridge is available, a session is present and the progress token
/// is a string or an integer (floats, booleans, null and objects silently mean "no progress");
/// then `streamed` when SSE is accepted and streamed POST enabled, else `get_only`.
[[nodiscard]] MCPCORE_DECL post_mode choose_post_mode(const post_mode_inputs& in) noexcept;
/// The progress token as an id-shaped value (string or integer), or nullopt for any other JSON.
[[nodiscard]] MCPCORE_DECL std::optional<request_id> progress_token_of(json::value token);

/// The outcome of `admit_post`.
struct post_admission {
  /// The mode to answer in (a degrade lowers it to `plain`).
  post_mode mode = post_mode::plain;
  /// The record (modes `get_only` and `streamed`).
  std::optional<progress_call> call;
  /// The stream-budget slot (mode `streamed`); hand it to the `post_pump`.
  stream_lease lease;
  /// Set when refused: answer it and dispatch nothing.
  std::optional<stream_refusal> refusal;
  /// Set when the request degraded to a plain answer (reference §9.2: disabled, shutdown,
  /// a GET-only duplicate, a throw).
  std::optional<bridge_degrade> degraded;
};
/// Admission before dispatch (reference §9.2), in order:
/// 1. `streamed`: a budget lease on `stream_surface_post` (per-principal cap
///    `default_post_streams_per_principal`); refused → 429 -32012 "Concurrent stream cap reached",
///    `post_per_principal_cap` / `post_global_cap`, retry 30000 ms.
/// 2. The bridge reservation: `disabled` / `shutdown` → degrade to plain (`reserve_rejected`);
///    `duplicate_request_id` → 409 -32600 on a streamed request, a silent plain degrade on a
///    GET-only one; `unknown_session` → 404 -32007; `global_cap` → 429 -32012 "Streamed request
///    capacity reached" (`post_record_cap`, 30000 ms); `pin_slots` → 429 -32012 (`post_pin_slots`,
///    30000 ms) with the remediation of which half holds the slots.
/// 3. A throw is not a refusal: degrade to plain (`reserve_threw`).
/// Refusals are counted in `metrics.stream_rejects`, degrades in `metrics.bridge_degrades`; the
/// lease of a refused or degraded request is returned before this returns.
[[nodiscard]] MCPCORE_DECL post_admission admit_post(post_mode mode, stream_budget& budget, progress_bridge& bridge,
                                                     const std::shared_ptr<session>& s, const request_id& id,
                                                     const request_id& progress_token, const session_metrics& metrics);

/// The two post-dispatch failures, the only 500s (reference §9.6).
enum class post_dispatch_failure : std::uint8_t {
  stream_install_failed,  ///< "streamed response could not be established"
  dispatch_threw,         ///< "dispatched, but the response could not be completed"
};
/// Writes the 500's body: -32603 with the envelope carrying `execution_id` (null when empty),
/// retry null, and a remediation saying the work IS running: fetch it by execution id or retry
/// without SSE Accept, never re-POST blindly.
MCPCORE_DECL void write_post_dispatch_failure(std::string& out, request_id_view id, post_dispatch_failure f,
                                              std::string_view correlation_id, std::string_view execution_id);

/// Options of a streamed-POST pump.
struct post_pump_options {
  std::chrono::milliseconds tick = default_pump_tick;
  /// How long the response is held open (reference §9.4: 120 s); the work continues after it.
  std::chrono::milliseconds response_cap = default_post_response_cap;
  revalidation_options revalidation{};
  std::string close_method{default_close_notification_method};
};

/// One streamed POST response's pump, sans-I/O (reference §9.4-§9.5), driven like `get_pump`:
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
#  include <mcpcore/session/impl/stream_admission.ipp>
#endif

#endif  // MCPCORE_STREAM_ADMISSION_HPP
