// SPDX-License-Identifier: Apache-2.0
// What a transport answers around held-open responses, sans-I/O: the GET attach with its gap rule
// and refusals (docs/http.md#get-sessions-on, docs/sessions.md#get-attach-replay-resume), the
// streamed-POST opt-in and admission with every refusal of
// docs/sessions.md#streamed-post-admission, and the post-dispatch 500s
// (docs/sessions.md#streamed-post-admission). The pumps are in stream_pump.hpp.
#ifndef MCPCORE_STREAM_ADMISSION_HPP
#define MCPCORE_STREAM_ADMISSION_HPP

#include <mcpcore/detail/config.hpp>
#include <mcpcore/session/progress_bridge.hpp>
#include <mcpcore/session/session_metrics.hpp>
#include <mcpcore/session/session_stream.hpp>
#include <mcpcore/session/stream_budget.hpp>
#include <mcpcore/session/stream_types.hpp>
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

/// The refusal of a GET that never reaches the attach (docs/http.md#get-sessions-on):
/// `missing_session_header` 400 -32600, `unknown_session` 404 -32007, `not_acceptable` 406 -32011.
/// @pre `r` is one of those three.
[[nodiscard]] MCPCORE_DECL stream_refusal get_refusal(stream_reject r) noexcept;
/// The refusal of an attach status other than `attached`
/// (docs/sessions.md#get-attach-replay-resume): `poisoned` 410 -32013 (`terminal_poisoned`, no
/// retry: fetch by execution id, do not re-POST), `gap` 404 -32007 "Replay window exceeded"
/// (`replay_window_exceeded`, re-initialize), `handover_pending`, `global_stream_cap`,
/// `per_principal_stream_cap` 429 -32012 with retry 5000 ms and a remediation naming the knob that
/// can fix it.
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
/// The GET attach of docs/http.md#get-sessions-on, docs/sessions.md#get-attach-replay-resume for a
/// session the caller already validated: parses `last_event_id` strictly (anything malformed reads
/// as 0), attaches, and on a gap terminates the session (`registry.terminate(...,
/// "replay_window_exceeded", cid)`: the client's next POST 404s too) before answering 404. Every
/// refusal is counted in `metrics.stream_rejects`.
[[nodiscard]] MCPCORE_DECL get_attach attach_get(session_registry& registry, const std::shared_ptr<session>& s,
                                                 std::string_view last_event_id, stream_budget& budget,
                                                 std::string_view correlation_id, const session_metrics& metrics);

/// How a `tools/call` POST is answered (docs/sessions.md#streamed-post-admission).
enum class post_mode : std::uint8_t {
  plain,     ///< plain JSON; no progress record
  get_only,  ///< plain JSON on the POST; progress live on the session's GET stream
  streamed,  ///< SSE on the POST: progress, then the final, then the end
};
/// What decides the mode (docs/sessions.md#streamed-post-admission).
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
/// The progress token as an id-shaped value (a string of at most `default_max_progress_token_bytes`
/// bytes, or an integer; docs/errors.md#progress-tokens), or nullopt for anything else.
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
  /// Set when the request degraded to a plain answer (docs/sessions.md#streamed-post-admission:
  /// disabled, shutdown, a GET-only duplicate, a throw).
  std::optional<bridge_degrade> degraded;
};
/// Admission before dispatch (docs/sessions.md#streamed-post-admission), in order:
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

/// The two post-dispatch failures, the only 500s (docs/sessions.md#streamed-post-admission).
enum class post_dispatch_failure : std::uint8_t {
  stream_install_failed,  ///< "streamed response could not be established"
  dispatch_threw,         ///< "dispatched, but the response could not be completed"
};
/// Writes the 500's body: -32603 with the envelope carrying `execution_id` (null when empty),
/// retry null, and a remediation saying the work IS running: fetch it by execution id or retry
/// without SSE Accept, never re-POST blindly.
MCPCORE_DECL void write_post_dispatch_failure(std::string& out, request_id_view id, post_dispatch_failure f,
                                              std::string_view correlation_id, std::string_view execution_id);

MCPCORE_END_NAMESPACE

#if defined(MCPCORE_HEADER_ONLY)
#  include <mcpcore/session/impl/stream_admission.ipp>
#endif

#endif  // MCPCORE_STREAM_ADMISSION_HPP
