// SPDX-License-Identifier: Apache-2.0
// One session's stream state: the replay ring, the pinned finals and the live and draining sinks
// of its GET channel (docs/sessions.md#get-attach-replay-resume, #takeover, #the-replay-ring,
// #pinned-finals). Sans-I/O: nothing here touches a socket.
#ifndef MCPCORE_SESSION_STREAM_HPP
#define MCPCORE_SESSION_STREAM_HPP

#include <mcpcore/detail/config.hpp>
#include <mcpcore/session/session_metrics.hpp>
#include <mcpcore/session/stream_budget.hpp>
#include <mcpcore/session/stream_types.hpp>

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

MCPCORE_BEGIN_NAMESPACE

/// Pinned finals one session can hold (docs/sessions.md#pinned-finals); equal to the streamed-POST
/// cap per principal, `default_post_streams_per_principal`.
inline constexpr std::size_t max_pinned_finals = 4;
/// Streamed POSTs one principal may hold open at once (docs/sessions.md#the-stream-budget: fixed,
/// equal to the pin slots).
inline constexpr std::size_t default_post_streams_per_principal = 4;
static_assert(max_pinned_finals == default_post_streams_per_principal,
              "admission counts pins: one streamed POST per pin slot (docs/sessions.md#pinned-finals)");
/// GET streams one principal may hold open at once (docs/sessions.md#get-attach-replay-resume).
inline constexpr std::size_t default_get_streams_per_principal = 4;
/// Default replay-ring bounds (docs/sessions.md#the-session-registry, #the-replay-ring).
inline constexpr std::size_t default_ring_frames = 500;
inline constexpr std::size_t default_ring_bytes = std::size_t{64} * 1024;
/// The smallest byte cap a ring accepts; smaller values are raised to it.
inline constexpr std::size_t min_ring_bytes = 256;
/// Default bound on the POST streams (channels) one session keeps open for resumption at once;
/// equal to the progress bridge's record cap, since each open channel belongs to one record.
inline constexpr std::size_t default_open_channels = 256;
/// Default bound on a live sink's queue (docs/sessions.md#get-attach-replay-resume: drop-oldest
/// beyond it).
inline constexpr std::size_t default_sink_queue_frames = 500;
/// The SSE event type of every ring frame and of the close notification.
inline constexpr std::string_view stream_event_type = "message";
/// Default JSON-RPC method of the notice that replaces an oversized frame
/// (docs/sessions.md#the-replay-ring).
inline constexpr std::string_view default_frame_too_large_method = "notifications/mcpcore/frame_too_large";

/// Bounds of one session's stream state.
struct session_stream_options {
  /// Frames the ring holds (1 or more; values above `sink_queue_frames` raise that bound instead,
  /// so that a full replay always fits a fresh sink's queue and never gaps itself).
  std::size_t ring_frames = default_ring_frames;
  /// Bytes the ring holds, counting `stream_event_type` plus the data of each frame; raised to
  /// `min_ring_bytes` if smaller. A frame alone larger than this is replaced by a notice.
  std::size_t ring_bytes = default_ring_bytes;
  /// Frames a live sink queues before dropping the oldest (the consumer then sees
  /// `events-dropped`); raised to `ring_frames` if smaller.
  std::size_t sink_queue_frames = default_sink_queue_frames;
  /// GET streams one principal may hold (the budget's per-principal cap on
  /// `stream_surface_get`); 0 means unlimited.
  std::size_t get_streams_per_principal = default_get_streams_per_principal;
  /// Method of the JSON-RPC notification that replaces a frame larger than `ring_bytes`:
  /// `{"jsonrpc":"2.0","method":<this>,"params":{"error":"frame_too_large","bytes":N,
  /// "remediation":"..."}}` (a notification, so a conformant client can still parse the stream).
  std::string frame_too_large_method{default_frame_too_large_method};
  /// POST streams (channels) held open for resumption at once (1 or more); beyond it the oldest
  /// is ended, as if its call had finished without another frame.
  std::size_t open_channels = default_open_channels;
};

/// The stream a frame belongs to: 0 is the session's GET stream; every other value is one POST
/// response stream, opened by `session_stream::open_channel` (MCP: a resume replays only the
/// messages of the stream its `Last-Event-ID` came from).
using stream_channel = std::uint64_t;
/// The session's GET stream.
inline constexpr stream_channel get_channel = 0;

/// An opened POST stream: its channel and the id of its priming event (a marker frame in the ring
/// that is never written: a resume cursor naming the channel before any frame of it exists).
struct opened_channel {
  stream_channel channel = 0;
  std::uint64_t priming_id = 0;  ///< 0 when the marker could not be committed (no resumption)
};

/// One frame: a ring frame (id > 0) or a synthetic queued for one connection (id 0).
struct stream_frame {
  std::uint64_t id = 0;
  /// A complete JSON-RPC message; empty only for a channel's priming marker (never queued).
  std::string data;
  /// The stream the frame belongs to.
  stream_channel channel = get_channel;
};

/// One held-open response's end of a session stream: a bounded queue of frames, a dropped-frame
/// count, a closed flag with its first-recorded reason, and the budget lease of the response.
///
/// Producers (publishers, closers) push under the session stream's lock and wake the consumer
/// after releasing it; the consumer (a transport's pump) drains with `take` when woken, either
/// blocking in `wait_for` (a thread per stream) or through a waker (an event loop).
///
/// @par Thread safety
/// Every member is thread-safe. Lock order: session stream lock, then sink lock, never reverse;
/// the waker runs under no mcpcore lock.
class stream_sink {
 public:
  /// A sink queueing up to `queue_frames` frames (0 is taken as 1).
  MCPCORE_DECL explicit stream_sink(std::size_t queue_frames = default_sink_queue_frames);
  MCPCORE_DECL ~stream_sink();
  stream_sink(const stream_sink&) = delete;
  stream_sink& operator=(const stream_sink&) = delete;

  /// What the consumer takes in one pass.
  struct batch {
    /// Frames in publish order (ids strictly increasing among ring frames).
    std::vector<stream_frame> frames;
    /// Frames lost before reaching this connection since the last `take` (queue overflow or a
    /// failed copy): write an `events-dropped` synthetic before `frames` when non-zero.
    std::uint64_t dropped = 0;
    /// Whether the sink is closed, and the first reason recorded.
    bool closed = false;
    close_reason reason = close_reason::none;
  };
  /// Moves every queued frame into `out.frames` (replacing its content), takes and resets the
  /// dropped count, reads the closed state, and clears a pending poke. Never blocks on a peer.
  MCPCORE_DECL void take(batch& out);
  /// Blocks for at most `timeout` until frames, drops, a poke or a close are pending; returns
  /// whether one is. For transports that give each stream a thread.
  MCPCORE_DECL bool wait_for(std::chrono::milliseconds timeout);
  /// Whether frames, drops, a poke or a close are pending (non-blocking).
  [[nodiscard]] MCPCORE_DECL bool ready() const noexcept;
  /// The consumer's wake-up for event-loop transports: `fn(context)` is called, under no mcpcore
  /// lock, whenever work becomes pending (it should only schedule a `take`, and must not throw).
  /// Work pending before the call is not signalled: check `ready()` after setting it. Null clears.
  MCPCORE_DECL void set_waker(void (*fn)(void*) noexcept, void* context) noexcept;

  /// Closes the sink with `reason` unless it is already closed (the first reason wins) and wakes
  /// the consumer; returns whether this call closed it (exactly one caller sees true).
  MCPCORE_DECL bool close(close_reason reason) noexcept;
  /// Wakes the consumer without queueing anything (a pump owner has frames elsewhere).
  MCPCORE_DECL void poke() noexcept;
  [[nodiscard]] MCPCORE_DECL bool closed() const noexcept;
  /// The first reason recorded; `none` while open.
  [[nodiscard]] MCPCORE_DECL close_reason reason() const noexcept;
  /// Frames lost for this connection since construction.
  [[nodiscard]] MCPCORE_DECL std::uint64_t dropped_total() const noexcept;
  /// The stream-budget slot of this response (taken at attach; `detach` returns it).
  [[nodiscard]] stream_lease& lease() noexcept { return lease_; }

  /// Library use (called under the session stream lock): queues `frame`, dropping the oldest
  /// queued frame when full (counted as dropped). A failed copy counts as dropped. Returns
  /// whether the consumer needs waking (call `wake()` after releasing the stream lock).
  MCPCORE_DECL bool push(const stream_frame& frame) noexcept;
  /// Library use: adds `n` to the dropped count; returns whether the consumer needs waking.
  MCPCORE_DECL bool add_dropped(std::uint64_t n) noexcept;
  /// Library use: calls the waker (never under an mcpcore lock).
  MCPCORE_DECL void wake() noexcept;

 private:
  struct impl;
  impl* impl_;
  stream_lease lease_;
};

/// What `session_stream::attach_and_replay` decided (docs/sessions.md#get-attach-replay-resume).
enum class attach_status : std::uint8_t {
  attached,                  ///< a new live sink, with the replay queued
  poisoned,                  ///< 410 -32013: a final was lost; fetch by execution id, do not re-POST
  gap,                       ///< the cursor is outside the window or frames are missing: the caller
                             ///< terminates the session and answers 404 -32007 "Replay window exceeded"
  handover_pending,          ///< 429 -32012: a live and a draining sink exist already (retry 5 s)
  global_stream_cap,         ///< 429 -32012: the budget's global cap
  per_principal_stream_cap,  ///< 429 -32012: this principal's GET cap
};

/// The result of `session_stream::attach_and_replay`.
struct attach_result {
  attach_status status = attach_status::gap;
  /// The new live sink (set only when attached); it already holds its lease and its replay.
  std::shared_ptr<stream_sink> sink;
  /// The takeover fence: a pump whose generation is no longer `generation()` was superseded.
  std::uint64_t generation = 0;
  /// Ring frames queued by the replay.
  std::size_t replayed = 0;
  /// Pinned finals at or below the cursor replayed ahead of the frames after it (still pinned:
  /// never written on any wire).
  std::size_t pins_replayed = 0;
  /// The stream the cursor named: `get_channel` (the sink is the session's live GET sink), or a
  /// POST stream's channel (the sink gets that channel's later frames and is closed `completed`
  /// after its final, at once when the channel has ended already).
  stream_channel channel = get_channel;
  /// Whether a live sink was superseded (it is closed `superseded` before this returns).
  bool took_over = false;
};

/// A point-in-time view of a session stream, for tests, benchmarks and diagnostics.
struct session_stream_stats {
  std::uint64_t next_id = 1;    ///< the id the next committed frame gets
  std::uint64_t oldest_id = 0;  ///< the smallest id held; 0 when the ring is empty
  std::size_t frames = 0;       ///< frames held
  std::size_t bytes = 0;        ///< bytes held (type + data per frame)
  std::array<std::uint64_t, max_pinned_finals> pins{};  ///< pinned ids; 0 marks a free slot
  bool live = false;            ///< a live sink is attached
  bool draining = false;        ///< a superseded sink has not detached yet
  std::uint64_t generation = 0;
  bool poisoned = false;
  std::size_t channels_open = 0;    ///< POST streams opened and not ended
  std::size_t channel_sinks = 0;    ///< resumed POST streams attached
};

/// One session's replay ring, pinned finals and GET sinks (docs/sessions.md#the-replay-ring,
/// #pinned-finals, #get-attach-replay-resume, #takeover).
///
/// Ids are per session, from 1, strictly increasing, assigned with the ring append and the live
/// enqueue under one lock, so concurrent publishers can never put id 6 on a wire before id 5.
///
/// Every frame belongs to a channel: the GET stream (`get_channel`) or one POST response stream
/// (`open_channel`). A resume replays, and then delivers live, only the channel its cursor names
/// (MCP: a server MUST NOT replay messages that would have been delivered on a different stream).
/// Publishing never throws: it returns the committed id, or 0 for a failure before the commit
/// (then neither the ring nor the next id changed: no id holes). After the commit nothing is
/// undone; a frame that cannot reach the live sink is counted dropped and stays replayable.
///
/// Eviction, after each append: while over either bound, the oldest unpinned frame that is not
/// the newest goes (counted); when only pinned frames and the newest remain it stops (overshoot
/// bounded by `max_pinned_finals` frames).
///
/// Contract (the security property of the GET channel): publish only messages arising from this
/// session's own requests.
///
/// @par Thread safety
/// Every member is thread-safe. No callback, waker or socket write runs under the stream lock.
class session_stream {
 public:
  MCPCORE_DECL explicit session_stream(session_stream_options options = {}, session_metrics metrics = {});
  /// Closes any remaining sink `session_terminated` (route (d): pins die with the state).
  MCPCORE_DECL ~session_stream();
  session_stream(const session_stream&) = delete;
  session_stream& operator=(const session_stream&) = delete;

  /// Ring and live GET sink (GET-only progress, server notifications), on `get_channel`.
  MCPCORE_DECL std::uint64_t publish(std::string_view message) noexcept;
  /// Ring only on `channel` (streamed-POST frames, written by the POST's own pump), and live to
  /// a resumed stream of that channel if one is attached (never to the GET sink).
  MCPCORE_DECL std::uint64_t publish_ring_only(std::string_view message,
                                               stream_channel channel = get_channel) noexcept;
  /// As `publish_ring_only`, and pinned (a streamed request's final): exempt from eviction until
  /// released. When the four slots are full the smallest pinned id yields (counted
  /// `pin_displaced`). The final ends its channel (`end_channel`) once committed.
  MCPCORE_DECL std::uint64_t publish_final(std::string_view message, stream_channel channel = get_channel) noexcept;
  /// Opens a POST stream: a new channel and its priming marker (an empty frame, evicted like any
  /// other, never replayed). At `open_channels` the oldest open channel is ended to make room, once
  /// the new one is committed (an open that fails for memory ends nothing: `priming_id` 0).
  MCPCORE_DECL opened_channel open_channel() noexcept;
  /// The POST stream `channel` will carry nothing more (its call ended without a final, or the
  /// result went in the last frame): a resumed stream of it is closed `completed` after what it
  /// holds. Idempotent; `get_channel` and unknown channels are no-ops.
  MCPCORE_DECL void end_channel(stream_channel channel) noexcept;
  /// Releases the pin on `id` (routes (a) and (e)); returns whether this call cleared a slot.
  MCPCORE_DECL bool unpin(std::uint64_t id) noexcept;
  /// The frames `ids` were written on a wire (a GET pump after a successful write): every pinned
  /// final among them is released (docs/sessions.md#pinned-finals, on either wire). Returns how
  /// many.
  MCPCORE_DECL std::size_t written(std::span<const std::uint64_t> ids) noexcept;
  /// Whether `id` is pinned.
  [[nodiscard]] MCPCORE_DECL bool pinned(std::uint64_t id) const noexcept;

  /// Attaches a new GET sink after `cursor` (0 = everything held on the GET stream) as one
  /// critical section (docs/sessions.md#get-attach-replay-resume): poisoned → `poisoned`; the
  /// cursor's channel (the channel of the frame it names) and the window checked before any
  /// mutation → `gap` (a frame of the GET stream after the cursor was evicted; for a POST stream,
  /// any frame after it, or a cursor whose channel is no longer known); a live and a draining sink
  /// → `handover_pending`; a budget lease on `stream_surface_get` for `principal` (caps enforced on
  /// a first attach, `takeover` mode when a sink of the same channel exists) → the cap statuses;
  /// the channel's finals still pinned at or below the cursor, then its frames with id > cursor,
  /// queued (a cursor does not release pins: only a write on a wire does, see `written`). On the
  /// GET stream the live sink becomes draining; a resumed POST stream's previous sink is
  /// replaced; either is closed `superseded` after the lock is released. A refusal other than a
  /// gap changes nothing. `budget` must outlive the sink.
  /// @throws std::bad_alloc before anything changed
  [[nodiscard]] MCPCORE_DECL attach_result attach_and_replay(std::uint64_t cursor, stream_budget& budget,
                                                             std::string_view principal);
  /// Forgets `sink` if it is the live or the draining sink of this stream and returns its lease
  /// (docs/sessions.md#takeover); idempotent; an unknown sink is a no-op. Returns whether it was
  /// known.
  MCPCORE_DECL bool detach(const stream_sink& sink) noexcept;
  /// Whether `generation` is still the current one (a pump that is not current was superseded).
  [[nodiscard]] MCPCORE_DECL bool current(std::uint64_t generation) const noexcept;
  /// Closes every sink (live, draining, resumed POST streams) with `reason` (session death); the
  /// ring stays.
  MCPCORE_DECL void close_sinks(close_reason reason) noexcept;
  /// Marks the stream poisoned (sticky: every later attach answers `poisoned`) and closes every
  /// sink `internal_error` (docs/sessions.md#pinned-finals, last bullet).
  MCPCORE_DECL void poison() noexcept;
  [[nodiscard]] MCPCORE_DECL bool poisoned() const noexcept;

  [[nodiscard]] MCPCORE_DECL session_stream_stats stats() const;
  [[nodiscard]] MCPCORE_DECL const session_stream_options& options() const noexcept;

 private:
  struct impl;
  impl* impl_;
};

MCPCORE_END_NAMESPACE

#if defined(MCPCORE_HEADER_ONLY)
#  include <mcpcore/session/impl/session_stream.ipp>
#endif

#endif  // MCPCORE_SESSION_STREAM_HPP
