// SPDX-License-Identifier: Apache-2.0
// The progress bridge: records of progress-carrying calls keyed by (session, exact request id),
// streamed-POST admission with pin accounting, projection of progress and finals onto the
// session's ring, detached operations, cancellation, the sweep and shutdown
// (docs/sessions.md#pinned-finals, #streamed-post, #progress-records, #shutdown).
#ifndef MCPCORE_PROGRESS_BRIDGE_HPP
#define MCPCORE_PROGRESS_BRIDGE_HPP

#include <mcpcore/detail/config.hpp>
#include <mcpcore/dispatch/operation.hpp>
#include <mcpcore/expected.hpp>
#include <mcpcore/governance/audit.hpp>
#include <mcpcore/governance/clock.hpp>
#include <mcpcore/session/session_metrics.hpp>
#include <mcpcore/session/session_stream.hpp>
#include <mcpcore/wire/jsonrpc.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

MCPCORE_BEGIN_NAMESPACE

class session;
class session_registry;

/// Default bounds of the bridge (docs/sessions.md#the-sweep, #progress-records).
inline constexpr std::size_t default_bridge_records = 256;
inline constexpr std::size_t default_parked_pressure_threshold = 64;
inline constexpr std::size_t default_max_parked_per_principal = 16;
inline constexpr std::chrono::milliseconds default_arming_reap_after{300000};
inline constexpr std::chrono::milliseconds default_streaming_park_after{600000};
/// Default cap on how long one streamed POST response is held open
/// (docs/sessions.md#streamed-post).
inline constexpr std::chrono::milliseconds default_post_response_cap{120000};
// `execution_id_meta_key`, the `_meta` key of the durable execution id, is in operation.hpp.

/// Options of a `progress_bridge`.
struct progress_bridge_options {
  /// Records alive at once (docs/sessions.md#progress-records: 256, fixed there, an option here);
  /// one more is refused `global_cap`. A dispatched record is never evicted to make room.
  std::size_t max_records = default_bridge_records;
  /// Parked (ring-only) records, across principals, above which the sweep expires some: always
  /// the oldest record of the principal holding the most (docs/sessions.md#the-sweep), so one
  /// principal's flood never expires another principal's parked results.
  std::size_t parked_pressure_threshold = default_parked_pressure_threshold;
  /// Parked records one principal keeps (its sessions together); the sweep expires that
  /// principal's oldest beyond it even when the total is below `parked_pressure_threshold`
  /// (docs/sessions.md#the-sweep).
  std::size_t max_parked_per_principal = default_max_parked_per_principal;
  /// An arming record older than this is reaped by the sweep (its transport never armed it).
  std::chrono::milliseconds arming_reap_after = default_arming_reap_after;
  /// A streaming record older than this (its response stream never released it) is parked by the
  /// sweep (docs/sessions.md#the-sweep).
  std::chrono::milliseconds streaming_park_after = default_streaming_park_after;
  /// False withdraws the capability: every reservation is refused `disabled` (degrade to plain).
  bool enabled = true;
  /// Off by default. On, a detached call's final also carries the top-level result members of
  /// the shape older hosts expect (docs/sessions.md#projection-and-finals): `status` (the final's
  /// `structuredContent.status` when it is a string, else `failed` for an error result, else
  /// `completed`), `execution_id`, and the other members of its `structuredContent`; the fallback
  /// final carries `status` `unknown`, `execution_id` and `detail`.
  bool legacy_final_members = false;
};

/// A refused reservation (docs/sessions.md#streamed-post-admission).
struct bridge_refusal {
  bridge_reject reason = bridge_reject::disabled;
  /// For `pin_slots`: true when charges (streamed calls genuinely in flight) hold slots ("wait
  /// for one to finish"), false when pinned finals hold them (resume the GET stream to release
  /// them, or re-initialize) (docs/sessions.md#pinned-finals).
  bool held_by_charges = false;
};

/// States of a record (docs/sessions.md#progress-records).
enum class bridge_record_state : std::uint8_t {
  arming,     ///< reserved before dispatch; progress latches, nothing is projected
  streaming,  ///< the POST response is an SSE stream: frames are committed ring-only, the pump writes them
  get_only,   ///< the POST answered plain JSON: progress goes live to the GET stream; no final frame
  ring_only,  ///< parked: progress and the final are committed ring-only, the final pinned, for a GET resume
  done,       ///< delivered; reaped by the sweep
  aborted,    ///< abandoned before dispatch; erased at once
};
[[nodiscard]] MCPCORE_DECL std::string_view to_string(bridge_record_state s) noexcept;

/// How a reserved call is delivered.
enum class bridge_delivery : std::uint8_t {
  streamed,  ///< SSE on the POST response
  get_only,  ///< plain JSON on the POST; progress on the session's GET stream
};

/// What `progress_call::arm` did (docs/sessions.md#streamed-post-admission).
enum class arm_outcome : std::uint8_t {
  streaming,      ///< armed streamed: install the SSE response and its pump
  get_only,       ///< armed GET-only: answer plain JSON
  cancelled,      ///< a cancel landed while arming: answer plain JSON (degrade `arm_cancelled`)
  already_armed,  ///< armed before: answer plain JSON (degrade `arm_already_armed`)
  not_armed,      ///< aborted or torn down: answer plain JSON (degrade `arm_not_armed`)
};

/// What a streamed POST's pump takes in one pass (docs/sessions.md#streamed-post).
struct post_batch {
  /// Ring-committed frames not yet written on this POST, in id order: progress first, the final
  /// last (when `final_included`).
  std::vector<stream_frame> frames;
  /// The last frame is the call's final response: write it, then end the stream (`completed`),
  /// then call `on_final_written`.
  bool final_included = false;
  /// The response cap expired and the one drain pass is done: end the stream `cap_expired`.
  bool cap_settled = false;
};

class progress_bridge;

/// One progress-carrying call's record, as its transport and its work see it
/// (docs/sessions.md#streamed-post, #progress-records). Shared by the transport (admission, arm,
/// pump, release), the work (progress, terminal, from any thread) and the bridge (sweep); every
/// member is thread-safe.
///
/// Projection happens on the reporting thread under the record's projection claim (no bridge
/// thread): progress is a latest-wins slot, so a reporter that finds a projection in flight leaves
/// its snapshot for the projector to take before it releases the claim.
///
/// It is the `call_link` the transport hands to the dispatch core (`dispatch_context::progress`):
/// `detach` (operation.hpp) reaches the record through it, and `operation_handle`s share the record.
class progress_call final : public call_link {
 public:
  /// Library use (the bridge creates calls).
  struct state;
  explicit progress_call(std::shared_ptr<state> s) noexcept : s_(std::move(s)) {}

  /// Arms the record (docs/sessions.md#streamed-post-admission). `streamed` needs a streamed
  /// reservation; a cancel that landed while arming turns a streamed arm into a plain answer.
  /// Pending progress is projected. `channel` (from `session_stream::open_channel`, for a streamed
  /// arm) is the POST stream the record's frames belong to; when the record does not stream on it
  /// (any other outcome, or the work already ended) the channel is ended here. `get_channel` keeps
  /// every frame on the session's GET stream.
  MCPCORE_DECL arm_outcome arm(bridge_delivery delivery, stream_channel channel = get_channel);
  /// Abandons a record before dispatch (docs/sessions.md#streamed-post-admission): it is erased,
  /// its charge released; a recorded cancel intent is discarded. Idempotent.
  MCPCORE_DECL void abandon() noexcept;

  /// The durable handle of detached work, carried in every progress frame's `_meta`, in close
  /// frames and in post-dispatch errors (docs/sessions.md#ordering-guarantees). Set before the
  /// first progress.
  MCPCORE_DECL void set_execution_id(std::string execution_id);
  [[nodiscard]] MCPCORE_DECL std::string execution_id() const;

  /// A progress snapshot (docs/sessions.md#progress-records, #projection-and-finals): skipped when
  /// `total` is 0; `progress` clamped to `total`; projected only if it strictly exceeds the last
  /// committed value (the first always goes); the watermark advances only after the frame
  /// committed. Dropped after the terminal. Returns whether a frame was committed by this call
  /// (false when latched for later).
  MCPCORE_DECL bool progress(double progress, std::optional<double> total = {}, std::string_view message = {});
  /// Any other in-call message for the client (a log notification): committed like progress,
  /// without the watermark. Dropped after the terminal.
  MCPCORE_DECL bool message(std::string_view jsonrpc_message);
  /// The terminal: the call's JSON-RPC response (docs/sessions.md#projection-and-finals). Exactly
  /// one terminal is accepted (later ones and later progress are dropped: the final is always
  /// last). Published by the ladder: final → fallback → poison
  /// (docs/sessions.md#projection-and-finals). Returns whether this call was the accepted terminal.
  MCPCORE_DECL bool complete(std::string response);
  /// The call returned but its work continues (a detached operation): `base_response` is the
  /// call's provisional response (a GET-only call has already answered it on the POST); the final
  /// that `finish` brings replaces it. Not a terminal. A `finish` that came first is published now.
  MCPCORE_DECL void defer(std::string base_response);
  /// The terminal of detached work (docs/sessions.md#projection-and-finals): the final is the JSON-RPC
  /// response to the call's id with `final`'s result (or its error); with
  /// `progress_bridge_options::legacy_final_members`, the result also carries the legacy top-level
  /// members. Exactly-once as `complete`. Called before the call returned (before `defer`), the
  /// terminal is accepted at once and its final is published when `defer` comes, so that the
  /// call's in-call messages precede it. Returns whether this call was the accepted terminal.
  MCPCORE_DECL bool finish(const operation_final& final);
  /// The terminal of work that produced no response (an in-call request cancelled by the client):
  /// no final frame, the record is done, and a streamed POST's stream closes `cancelled` (with its
  /// close frame) whichever of the dispatch core and `progress_bridge::cancel` saw the cancel first.
  MCPCORE_DECL bool complete_without_response() noexcept;

  /// Streamed POST pump side (docs/sessions.md#streamed-post): the frames to write now;
  /// `cap_expired` says the response cap elapsed (the first such call projects pending progress
  /// once, the next settles).
  MCPCORE_DECL void take(post_batch& out, bool cap_expired);
  /// The final was written on the POST wire (route (a)): unpinned, record done.
  MCPCORE_DECL void on_final_written() noexcept;
  /// The POST response ended (its releaser): without a final written the record parks ring-only
  /// for a GET resume (docs/sessions.md#streamed-post). Idempotent.
  MCPCORE_DECL void on_post_closed() noexcept;
  /// The sink the POST pump waits on (woken when frames are ready; closed `cancelled` by a cancel).
  [[nodiscard]] MCPCORE_DECL std::shared_ptr<stream_sink> wake_sink() const noexcept;

  /// Marks the call's work as continuing after the call returns (`detach`): its transport then
  /// hands the call's response to `defer` instead of `complete`.
  MCPCORE_DECL void mark_detached() noexcept;
  /// `call_link`: sets the execution id, marks the call detached and returns the record (null for
  /// a moved-from call), which every `operation_handle` of the call shares.
  MCPCORE_DECL std::shared_ptr<operation_link> detach(std::string execution_id) override;
  [[nodiscard]] MCPCORE_DECL bool detached() const noexcept;

  [[nodiscard]] MCPCORE_DECL bridge_record_state state_now() const noexcept;
  [[nodiscard]] MCPCORE_DECL const request_id& id() const noexcept;

 private:
  std::shared_ptr<state> s_;
};

/// The progress bridge of one server (docs/sessions.md#progress-records; lock hierarchy in
/// docs/sessions.md).
///
/// @par Thread safety
/// Every member except `set_audit` is thread-safe.
class progress_bridge {
 public:
  /// A bridge checking sessions in `registry` (which must outlive it), on the system clock.
  explicit progress_bridge(session_registry& registry, progress_bridge_options options = {},
                           session_metrics metrics = {})
      : progress_bridge(registry, options, system_clock_source{}, metrics) {}
  template <clock_source C>
  progress_bridge(session_registry& registry, progress_bridge_options options, C clock, session_metrics metrics = {})
      : progress_bridge(registry, options, new detail::clock_model<C>(std::move(clock)), metrics) {}
  /// Runs `shutdown()`.
  MCPCORE_DECL ~progress_bridge();
  progress_bridge(const progress_bridge&) = delete;
  progress_bridge& operator=(const progress_bridge&) = delete;

  template <audit_sink A>
  void set_audit(A& sink) {
    set_audit(new detail::audit_model<A>(sink));
  }

  /// Reserves a record for a call on `s` by its bound principal
  /// (docs/sessions.md#streamed-post-admission), before dispatch. Refusals in order: `shutdown`,
  /// `disabled`, `unknown_session` (the session is gone or expired, checked without touching),
  /// `duplicate_request_id` (a live record with the same session and exact id), `global_cap`, and
  /// for `streamed` calls `pin_slots` when the session's pinned finals plus streamed charges reach
  /// `max_pinned_finals` and nothing is reclaimable (docs/sessions.md#pinned-finals: orphans first,
  /// then the oldest parked final; declined while a projection is in flight; the unpin happens
  /// after the reservation commits). `progress_token` is the request's `_meta.progressToken`,
  /// echoed verbatim.
  [[nodiscard]] MCPCORE_DECL result<progress_call, bridge_refusal> reserve(const std::shared_ptr<session>& s,
                                                                           const request_id& id,
                                                                           const request_id& progress_token,
                                                                           bool streamed);
  /// `notifications/cancelled` for `id` on session `session_id` (docs/sessions.md#cancellation):
  /// `accepted` while arming, `detached` while streaming (the POST sink closes `cancelled`), `noop`
  /// otherwise. The work is never touched. Counted by outcome.
  MCPCORE_DECL cancel_outcome cancel(std::string_view session_id, const request_id& id) noexcept;
  /// The maintenance pass (docs/sessions.md#the-sweep): reap done and stale arming records, park
  /// stranded streaming ones, tear down records of dead sessions, finish parked records whose final
  /// was acknowledged, then expire the oldest parked records above the pressure threshold. No-throw
  /// (a failure is counted in `bridge_sweep_failures`).
  MCPCORE_DECL void sweep() noexcept;
  /// Shutdown (docs/sessions.md#shutdown): every later reservation is refused `shutdown`; records
  /// are cleared; a record whose terminal was never delivered poisons its stream; one audit row
  /// `mcp.bridge.shutdown_reap` with the count. Idempotent.
  MCPCORE_DECL void shutdown() noexcept;

  /// Records alive, and how many of them are parked.
  [[nodiscard]] MCPCORE_DECL std::size_t records() const;
  [[nodiscard]] MCPCORE_DECL std::size_t parked() const;
  /// Streamed charges outstanding on a session.
  [[nodiscard]] MCPCORE_DECL std::size_t charges(std::string_view session_id) const;
  [[nodiscard]] MCPCORE_DECL const progress_bridge_options& options() const noexcept;

  struct impl;

 private:
  MCPCORE_DECL progress_bridge(session_registry& registry, progress_bridge_options options,
                               detail::clock_base* clock, session_metrics metrics);
  MCPCORE_DECL void set_audit(detail::audit_base* audit);
  impl* impl_;
};

MCPCORE_END_NAMESPACE

#if defined(MCPCORE_HEADER_ONLY)
#  include <mcpcore/session/impl/progress_bridge.ipp>
#  include <mcpcore/session/impl/progress_bridge_table.ipp>
#endif

#endif  // MCPCORE_PROGRESS_BRIDGE_HPP
