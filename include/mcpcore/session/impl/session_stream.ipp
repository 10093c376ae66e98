// SPDX-License-Identifier: Apache-2.0
// One session's stream state: the replay ring, the pinned finals, the live and draining sinks, and
// the sink queue a pump drains (docs/sessions.md#get-attach-replay-resume, #takeover,
// #the-replay-ring, #pinned-finals, #lock-discipline).
#ifndef MCPCORE_IMPL_SESSION_STREAM_IPP
#define MCPCORE_IMPL_SESSION_STREAM_IPP

#include <mcpcore/session/session_stream.hpp>

#include <mcpcore/detail/lazy_deque.hpp>

#include <mcpcore/wire/json_writer.hpp>

#include <algorithm>
#include <charconv>
#include <condition_variable>
#include <mutex>
#include <new>
#include <optional>
#include <utility>
#include <vector>

MCPCORE_BEGIN_NAMESPACE

// ---- stream_sink -----------------------------------------------------------------------------

struct stream_sink::impl {
  explicit impl(std::size_t queue_frames) : capacity(queue_frames == 0 ? 1 : queue_frames) {}

  // Whether the consumer has anything to do; called with `mutex` held.
  [[nodiscard]] bool ready_locked() const noexcept { return !queue.empty() || dropped != 0 || poked || closed; }

  const std::size_t capacity;
  mutable std::mutex mutex;
  std::condition_variable cv;
  // Everything below is guarded by `mutex` (the wait predicate included: lost-wakeup rule).
  // Made on the first frame: an idle stream's sink never allocates it (docs/performance.md#idle-memory).
  detail::lazy_deque<stream_frame> queue;
  std::uint64_t dropped = 0;        // since the last take
  std::uint64_t dropped_total = 0;  // since construction
  bool closed = false;
  close_reason reason = close_reason::none;
  // Set by poke(): wakes the consumer with nothing queued (its frames live elsewhere, e.g. in a
  // progress record); cleared by take().
  bool poked = false;
  // Read under `mutex`, always called after it is released: a waker runs under no mcpcore lock
  // (docs/sessions.md#what-never-happens-under-a-lock).
  void (*waker)(void*) noexcept = nullptr;
  void* waker_context = nullptr;
};

MCPCORE_DECL stream_sink::stream_sink(std::size_t queue_frames) : impl_(new impl(queue_frames)) {}

// The lease member is destroyed after this body: a lease nobody released goes back then.
MCPCORE_DECL stream_sink::~stream_sink() { delete impl_; }

MCPCORE_DECL void stream_sink::take(batch& out) {
  const std::lock_guard<std::mutex> lock(impl_->mutex);
  out.frames.clear();
  // The only allocation, before anything is taken: a throw leaves the sink as it was.
  out.frames.reserve(impl_->queue.size());
  for (auto& f : impl_->queue) out.frames.push_back(std::move(f));
  impl_->queue.clear();
  out.dropped = std::exchange(impl_->dropped, 0);
  out.closed = impl_->closed;
  out.reason = impl_->reason;
  impl_->poked = false;
}

MCPCORE_DECL bool stream_sink::wait_for(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(impl_->mutex);
  return impl_->cv.wait_for(lock, timeout, [this] { return impl_->ready_locked(); });
}

MCPCORE_DECL bool stream_sink::ready() const noexcept {
  const std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->ready_locked();
}

MCPCORE_DECL void stream_sink::set_waker(void (*fn)(void*) noexcept, void* context) noexcept {
  const std::lock_guard<std::mutex> lock(impl_->mutex);
  impl_->waker = fn;
  impl_->waker_context = fn != nullptr ? context : nullptr;
}

MCPCORE_DECL bool stream_sink::close(close_reason reason) noexcept {
  void (*fn)(void*) noexcept = nullptr;
  void* context = nullptr;
  {
    const std::lock_guard<std::mutex> lock(impl_->mutex);
    if (impl_->closed) return false;
    impl_->closed = true;
    impl_->reason = reason;
    fn = impl_->waker;
    context = impl_->waker_context;
    // Notified under the mutex: a consumer woken by it may drop the last reference to the sink.
    impl_->cv.notify_all();
  }
  if (fn != nullptr) fn(context);
  return true;
}

MCPCORE_DECL void stream_sink::poke() noexcept {
  void (*fn)(void*) noexcept = nullptr;
  void* context = nullptr;
  {
    const std::lock_guard<std::mutex> lock(impl_->mutex);
    impl_->poked = true;
    fn = impl_->waker;
    context = impl_->waker_context;
    impl_->cv.notify_all();
  }
  if (fn != nullptr) fn(context);
}

MCPCORE_DECL bool stream_sink::closed() const noexcept {
  const std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->closed;
}

MCPCORE_DECL close_reason stream_sink::reason() const noexcept {
  const std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->reason;
}

MCPCORE_DECL std::uint64_t stream_sink::dropped_total() const noexcept {
  const std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->dropped_total;
}

// A closed sink queues nothing: its consumer finishes without writing frames
// (docs/sessions.md#the-get-pump), and a frame it never gets stays replayable from the ring.
MCPCORE_DECL bool stream_sink::push(const stream_frame& frame) noexcept {
  const std::lock_guard<std::mutex> lock(impl_->mutex);
  if (impl_->closed) return false;
  try {
    if (impl_->queue.size() >= impl_->capacity) {
      impl_->queue.pop_front();  // drop-oldest (docs/sessions.md#get-attach-replay-resume)
      ++impl_->dropped;
      ++impl_->dropped_total;
    }
    impl_->queue.push_back(frame);  // strong guarantee: on a throw the queue is unchanged
  } catch (const std::bad_alloc&) {
    ++impl_->dropped;
    ++impl_->dropped_total;
  }
  // The condition variable is notified under the sink lock (docs/sessions.md#lost-wake-ups); the
  // waker cannot run here, as the caller holds the stream lock: hence the return value.
  impl_->cv.notify_all();
  return impl_->waker != nullptr;
}

MCPCORE_DECL bool stream_sink::add_dropped(std::uint64_t n) noexcept {
  if (n == 0) return false;
  const std::lock_guard<std::mutex> lock(impl_->mutex);
  impl_->dropped += n;
  impl_->dropped_total += n;
  impl_->cv.notify_all();
  return impl_->waker != nullptr;
}

MCPCORE_DECL void stream_sink::wake() noexcept {
  void (*fn)(void*) noexcept = nullptr;
  void* context = nullptr;
  {
    const std::lock_guard<std::mutex> lock(impl_->mutex);
    fn = impl_->waker;
    context = impl_->waker_context;
  }
  if (fn != nullptr) fn(context);
}

// ---- session_stream --------------------------------------------------------------------------

namespace detail {

// The options a stream actually runs with (the raises documented on session_stream_options).
inline session_stream_options normalise_session_stream_options(session_stream_options o) {
  o.ring_frames = std::max<std::size_t>(o.ring_frames, 1);
  o.ring_bytes = std::max(o.ring_bytes, min_ring_bytes);
  o.sink_queue_frames = std::max(o.sink_queue_frames, o.ring_frames);
  o.open_channels = std::max<std::size_t>(o.open_channels, 1);
  return o;
}

// The notice replacing a frame of `bytes` bytes that exceeds the ring's byte cap
// (docs/sessions.md#the-replay-ring): a JSON-RPC notification, so that a conformant client can
// still parse the stream.
inline void append_frame_too_large_notice(std::string& out, std::string_view method, std::size_t bytes) {
  out.append(R"({"jsonrpc":"2.0","method":)");
  json::append_escaped(out, method);
  out.append(R"(,"params":{"error":"frame_too_large","bytes":)");
  char digits[24];
  const auto r = std::to_chars(digits, digits + sizeof digits, bytes);
  out.append(digits, r.ptr);
  out.append(R"(,"remediation":"fetch the full result by its execution id"}})");
}

}  // namespace detail

struct session_stream::impl {
  impl(session_stream_options o, session_metrics m)
      : options(detail::normalise_session_stream_options(std::move(o))), metrics(m) {}

  enum class target : std::uint8_t { ring_and_live, ring_only, final };
  struct channel_entry {
    stream_channel channel = 0;
    std::shared_ptr<stream_sink> sink;  // a resumed stream of the channel, if attached
    std::uint64_t generation = 0;       // its fence
    // The channel ended while its resumed stream is still attached: the entry stays (the fence
    // stays current while the stream writes its last frames) until the stream detaches.
    bool ended = false;
  };

  [[nodiscard]] static std::size_t weight(const stream_frame& f) noexcept {
    return stream_event_type.size() + f.data.size();
  }

  [[nodiscard]] bool pinned_locked(std::uint64_t id) const noexcept {
    return id != 0 && std::find(pins.begin(), pins.end(), id) != pins.end();
  }

  // Releases the pin of `id`, if any (an id holds at most one slot: it is pinned once, when
  // committed). Returns whether one was released.
  bool unpin_locked(std::uint64_t id) noexcept {
    if (id == 0) return false;
    const auto slot = std::find(pins.begin(), pins.end(), id);
    if (slot == pins.end()) return false;
    *slot = 0;
    return true;
  }

  // Pins `id` (just committed, so larger than every pinned id): a free slot, else the smallest
  // pinned id yields (docs/sessions.md#pinned-finals, route (c)).
  void pin_locked(std::uint64_t id) noexcept {
    auto slot = std::find(pins.begin(), pins.end(), std::uint64_t{0});
    if (slot == pins.end()) {
      slot = std::min_element(pins.begin(), pins.end());
      metrics.pin_displaced.inc();
    }
    *slot = id;
  }

  // While over either bound, the oldest unpinned frame that is not the newest goes
  // (docs/sessions.md#the-replay-ring).
  void evict_locked() noexcept {
    while (ring.size() > options.ring_frames || bytes > options.ring_bytes) {
      auto victim = ring.end();
      const auto newest = ring.end() - 1;  // never evicted; the ring is non-empty here
      for (auto it = ring.begin(); it != newest; ++it) {
        if (!pinned_locked(it->id)) {
          victim = it;
          break;
        }
      }
      if (victim == ring.end()) return;  // only pinned frames and the newest: bounded overshoot
      // What a later cursor needs to know about the frame (see resolve_locked).
      if (victim->id > max_evicted) {
        max_evicted = victim->id;
        max_evicted_channel = victim->channel;
      }
      if (victim->channel == get_channel) get_max_evicted = std::max(get_max_evicted, victim->id);
      bytes -= weight(*victim);
      ring.erase(victim);  // moves at most the pinned frames before it (deque erase shifts the shorter side)
      metrics.ring_evictions.inc();
    }
  }

  // Queues a copy of `f` into `sink` and counts a drop it causes; returns whether to wake it. The
  // drop is read off the sink's total (its queue is private): only this stream feeds its sinks,
  // always under `mutex`, so nothing else moves that total in between.
  bool push_counted(stream_sink& sink, const stream_frame& f) noexcept {
    const std::uint64_t before = sink.dropped_total();
    const bool wake = sink.push(f);
    const std::uint64_t after = sink.dropped_total();
    if (after != before) metrics.frames_dropped.inc(after - before);
    return wake;
  }

  // The open (not ended) channel `c`, or end().
  [[nodiscard]] auto find_channel_locked(stream_channel c) noexcept {
    return std::find_if(channels.begin(), channels.end(),
                        [c](const channel_entry& e) { return e.channel == c && !e.ended; });
  }

  [[nodiscard]] std::size_t open_channels_locked() const noexcept {
    return static_cast<std::size_t>(
        std::count_if(channels.begin(), channels.end(), [](const channel_entry& e) { return !e.ended; }));
  }

  // Ends the open channel at `it`; returns its resumed sink (to be closed `completed` after
  // unlocking), if any, whose entry stays until it detaches.
  std::shared_ptr<stream_sink> end_channel_locked(std::vector<channel_entry>::iterator it) noexcept {
    if (!it->sink) {
      channels.erase(it);
      return nullptr;
    }
    it->ended = true;
    return it->sink;
  }

  std::uint64_t publish(std::string_view message, target t, stream_channel channel) noexcept {
    std::shared_ptr<stream_sink> to_wake;
    std::shared_ptr<stream_sink> to_complete;
    std::uint64_t id = 0;
    try {
      // The owned copy, outside the lock.
      stream_frame frame;
      frame.channel = t == target::ring_and_live ? get_channel : channel;
      const bool too_large = stream_event_type.size() + message.size() > options.ring_bytes;
      if (too_large) {
        detail::append_frame_too_large_notice(frame.data, options.frame_too_large_method, message.size());
      } else {
        frame.data.assign(message);
      }
      const std::lock_guard<std::mutex> lock(mutex);
      frame.id = next_id;
      ring.push_back(std::move(frame));  // the last step that can throw; the ring is unchanged if it does
      // Committed: no-throw from here (docs/sessions.md#the-replay-ring).
      id = next_id++;
      bytes += weight(ring.back());
      if (too_large) metrics.frames_too_large.inc();
      if (t == target::final) pin_locked(id);  // after the commit: no ghost pins (docs/sessions.md#pinned-finals)
      // The live copy before eviction: the newest frame is never evicted anyway.
      if (t == target::ring_and_live) {
        if (live && push_counted(*live, ring.back())) to_wake = live;
      } else if (channel != get_channel) {
        const auto open = find_channel_locked(channel);
        if (open != channels.end()) {
          if (open->sink && push_counted(*open->sink, ring.back())) to_wake = open->sink;
          if (t == target::final) to_complete = end_channel_locked(open);  // the final is the last frame
        }
      }
      evict_locked();
    } catch (const std::bad_alloc&) {
      if (id == 0) {
        metrics.publish_failures.inc();
        return 0;
      }
    }
    // Outside the stream lock (docs/sessions.md#lock-discipline). Closing after the push: the
    // consumer writes the final, then ends.
    if (to_wake) to_wake->wake();
    if (to_complete) to_complete->close(close_reason::completed);
    return id;
  }

  // The channel a resume cursor names, or nullopt when it cannot be told (a gap). Called after
  // the window check, so `cursor` is below `next_id`. A held frame names its own channel; of the
  // evicted ones, only the newest evicted frame of the GET stream and the newest evicted frame
  // overall are remembered: every other evicted cursor is a gap on any channel anyway.
  [[nodiscard]] std::optional<stream_channel> resolve_locked(std::uint64_t cursor) const noexcept {
    if (cursor == 0) return get_channel;
    const auto it = std::lower_bound(ring.begin(), ring.end(), cursor,
                                     [](const stream_frame& f, std::uint64_t c) { return f.id < c; });
    if (it != ring.end() && it->id == cursor) return it->channel;
    if (cursor == get_max_evicted) return get_channel;
    if (cursor == max_evicted) return max_evicted_channel;
    return std::nullopt;
  }


  const session_stream_options options;
  // Lock-free handles, so they are updated under the stream lock and the gauges stay exact.
  const session_metrics metrics;
  // The stream lock: taken after the bridge and record locks and before any sink's lock, never the
  // reverse (docs/sessions.md#the-hierarchy).
  mutable std::mutex mutex;
  // Guarded by `mutex`.
  // ids strictly increasing; made on the first frame (docs/performance.md#idle-memory)
  detail::lazy_deque<stream_frame> ring;
  std::size_t bytes = 0;          // sum of weight() over `ring`
  std::uint64_t next_id = 1;
  std::array<std::uint64_t, max_pinned_finals> pins{};  // 0 marks a free slot
  // At most one live and one draining GET sink (docs/sessions.md#takeover): the draining one is a
  // superseded live sink whose pump has not detached yet; its close happens outside the lock.
  std::shared_ptr<stream_sink> live;
  std::shared_ptr<stream_sink> draining;
  std::uint64_t generation = 0;   // the live GET sink's fence
  std::uint64_t generations = 0;  // every fence handed out (GET and resumed POST streams)
  bool poisoned = false;
  // Also holds ended channels whose resumed stream is still attached (see channel_entry::ended).
  std::vector<channel_entry> channels;  // open POST streams, oldest first
  stream_channel next_channel = 1;
  std::uint64_t max_evicted = 0;        // the largest evicted id, and its channel
  stream_channel max_evicted_channel = get_channel;
  std::uint64_t get_max_evicted = 0;    // the largest evicted id of the GET stream
};

MCPCORE_DECL session_stream::session_stream(session_stream_options options, session_metrics metrics)
    : impl_(new impl(std::move(options), metrics)) {}

MCPCORE_DECL session_stream::~session_stream() {
  // Pumps hold the stream while attached, so sinks still here were never detached: close them and
  // drop them from the gauges. Their leases go back with the sinks (or with the pumps' releasers).
  if (impl_->live) {
    impl_->live->close(close_reason::session_terminated);
    impl_->metrics.streams_active.add(-1);
  }
  if (impl_->draining) {
    impl_->draining->close(close_reason::session_terminated);
    impl_->metrics.streams_active.add(-1);
    impl_->metrics.streams_handover_pending.add(-1);
  }
  for (auto& c : impl_->channels) {
    if (!c.sink) continue;
    c.sink->close(close_reason::session_terminated);
    impl_->metrics.streams_active.add(-1);
  }
  delete impl_;
}

MCPCORE_DECL std::uint64_t session_stream::publish(std::string_view message) noexcept {
  return impl_->publish(message, impl::target::ring_and_live, get_channel);
}

MCPCORE_DECL std::uint64_t session_stream::publish_ring_only(std::string_view message,
                                                             stream_channel channel) noexcept {
  return impl_->publish(message, impl::target::ring_only, channel);
}

MCPCORE_DECL std::uint64_t session_stream::publish_final(std::string_view message, stream_channel channel) noexcept {
  return impl_->publish(message, impl::target::final, channel);
}

MCPCORE_DECL opened_channel session_stream::open_channel() noexcept {
  opened_channel out;
  std::shared_ptr<stream_sink> to_complete;
  {
    const std::lock_guard<std::mutex> lock(impl_->mutex);
    impl& s = *impl_;
    // The channel first: whatever fails below, the stream's frames never join another stream.
    out.channel = s.next_channel++;
    try {
      // Reserved before the commit so that the push_back of the entry after it cannot throw.
      s.channels.reserve(s.channels.size() + 1);
      stream_frame marker;
      marker.channel = out.channel;
      marker.id = s.next_id;
      s.ring.push_back(std::move(marker));  // the last step that can throw
      // Committed: no-throw from here. Only a channel that opens makes room
      // (docs/sessions.md#exception-boundaries: a failed open ends nobody's stream).
      if (s.open_channels_locked() >= s.options.open_channels) {
        // One exists: at least `open_channels` (1 or more) channels are open here.
        const auto oldest = std::find_if(s.channels.begin(), s.channels.end(),
                                         [](const impl::channel_entry& e) { return !e.ended; });
        to_complete = s.end_channel_locked(oldest);
      }
      out.priming_id = s.next_id++;
      s.bytes += impl::weight(s.ring.back());
      s.channels.push_back(impl::channel_entry{out.channel, nullptr, 0});
      s.evict_locked();
    } catch (const std::bad_alloc&) {  // NOLINT(bugprone-empty-catch): no marker, see below
      // No priming id: the POST still streams, but cannot be resumed (and is not open, so a
      // cursor naming one of its frames replays what is held and ends).
    }
  }
  if (to_complete) to_complete->close(close_reason::completed);
  return out;
}

MCPCORE_DECL void session_stream::end_channel(stream_channel channel) noexcept {
  if (channel == get_channel) return;
  std::shared_ptr<stream_sink> to_complete;
  {
    const std::lock_guard<std::mutex> lock(impl_->mutex);
    const auto it = impl_->find_channel_locked(channel);
    if (it == impl_->channels.end()) return;
    to_complete = impl_->end_channel_locked(it);
  }
  if (to_complete) to_complete->close(close_reason::completed);
}

MCPCORE_DECL bool session_stream::unpin(std::uint64_t id) noexcept {
  if (id == 0) return false;
  const std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->unpin_locked(id);
}

MCPCORE_DECL bool session_stream::pinned(std::uint64_t id) const noexcept {
  const std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->pinned_locked(id);
}

MCPCORE_DECL attach_result session_stream::attach_and_replay(std::uint64_t cursor, stream_budget& budget,
                                                             std::string_view principal) {
  attach_result out;
  std::shared_ptr<stream_sink> superseded;
  std::shared_ptr<stream_sink> ended;  // a resumed POST stream that has nothing more to come
  {
    const std::lock_guard<std::mutex> lock(impl_->mutex);
    impl& s = *impl_;
    // 0. A lost final is sticky.
    if (s.poisoned) {
      out.status = attach_status::poisoned;
      return out;
    }
    // 1. The window and the cursor's channel: a future cursor, a cursor whose channel is no longer
    //    known, and a cursor after which a frame of its stream was evicted take the same path. On
    //    the GET stream that is exact (only its own evictions count); for a POST stream any
    //    eviction after the cursor counts (its frames are not tracked once gone).
    const std::optional<stream_channel> resolved = cursor < s.next_id ? s.resolve_locked(cursor) : std::nullopt;
    if (!resolved) {
      out.status = attach_status::gap;
      return out;
    }
    const stream_channel channel = *resolved;
    if (cursor != 0 && (channel == get_channel ? s.get_max_evicted : s.max_evicted) > cursor) {
      out.status = attach_status::gap;
      return out;
    }
    const bool on_get = channel == get_channel;
    const auto open = on_get ? s.channels.end() : s.find_channel_locked(channel);
    // 5. Admission: at most one draining sink per session (docs/sessions.md#takeover).
    if (on_get && s.live && s.draining) {
      out.status = attach_status::handover_pending;
      return out;
    }
    // The sink first, then the lease: a throw or a refusal leaves the stream as it was. The queue
    // holds the whole replay, pinned overshoot included, so a replay never gaps itself.
    auto sink = std::make_shared<stream_sink>(std::max(s.options.sink_queue_frames, s.ring.size()));
    const bool takeover = on_get ? static_cast<bool>(s.live) : open != s.channels.end() && open->sink;
    auto lease = budget.try_acquire(stream_surface_get, principal, s.options.get_streams_per_principal,
                                    takeover ? stream_budget_mode::takeover : stream_budget_mode::enforce_caps);
    if (!lease.has_value()) {
      out.status = lease.error() == stream_budget_reject::global_stream_cap ? attach_status::global_stream_cap
                                                                            : attach_status::per_principal_stream_cap;
      return out;
    }
    // No-throw from here.
    sink->lease() = std::move(*lease);
    // 6. Replay, of the cursor's stream only. Nobody else sees the sink yet and it has no waker:
    //    nothing to wake. A copy that fails is counted dropped (the consumer writes events-dropped;
    //    the frame stays replayable). First the finals still pinned at or below the cursor: a pin
    //    is only released once its frame was written on a wire, so these never reached the client,
    //    whatever the cursor says (a parked final is ring-only and a GET stream's own
    //    Last-Event-ID may pass it unseen). Ids still increase on the new connection: these all
    //    precede the frames after the cursor. Priming markers are never written.
    const auto last = s.ring.end();  // the loops below change the sinks, never the ring
    const auto first = std::upper_bound(s.ring.begin(), last, cursor,
                                        [](std::uint64_t c, const stream_frame& f) { return c < f.id; });
    for (auto it = s.ring.begin(); it != first; ++it) {
      if (it->channel == channel && s.pinned_locked(it->id)) {
        s.push_counted(*sink, *it);
        ++out.pins_replayed;
      }
    }
    for (auto it = first; it != last; ++it) {
      if (it->channel != channel || it->data.empty()) continue;
      s.push_counted(*sink, *it);
      ++out.replayed;
    }
    out.replayed += out.pins_replayed;
    // 7. Commit.
    out.generation = ++s.generations;
    if (on_get) {
      s.metrics.streams_active.add(1);
      if (takeover) {
        superseded = s.live;
        s.draining = std::move(s.live);
        s.metrics.streams_handover_pending.add(1);
      }
      s.live = sink;
      s.generation = out.generation;
    } else if (open != s.channels.end()) {
      if (takeover) {
        // The replaced sink hands its gauge slot to the new one: no longer tracked, its
        // pump's detach changes nothing, and that pump returns the lease itself.
        superseded = std::move(open->sink);  // replaced, not draining: its frames are replayed here
      } else {
        s.metrics.streams_active.add(1);
      }
      open->sink = sink;
      open->generation = out.generation;
    } else {
      // Untracked (no entry, no gauge): as for a replaced sink, its pump returns the lease itself.
      ended = sink;  // the stream ended already: what it held, then the end
    }
    out.sink = std::move(sink);
    out.took_over = takeover;
    out.channel = channel;
    out.status = attach_status::attached;
  }
  // 8. Outside the stream lock.
  if (superseded) superseded->close(close_reason::superseded);
  if (ended) ended->close(close_reason::completed);
  return out;
}

MCPCORE_DECL std::size_t session_stream::written(std::span<const std::uint64_t> ids) noexcept {
  std::size_t released = 0;
  const std::lock_guard<std::mutex> lock(impl_->mutex);
  for (const auto id : ids) {
    if (impl_->unpin_locked(id)) ++released;
  }
  return released;
}

MCPCORE_DECL bool session_stream::detach(const stream_sink& sink) noexcept {
  std::shared_ptr<stream_sink> found;
  {
    const std::lock_guard<std::mutex> lock(impl_->mutex);
    if (impl_->live.get() == &sink) {
      found = std::move(impl_->live);
      impl_->live.reset();
      impl_->metrics.streams_active.add(-1);
    } else if (impl_->draining.get() == &sink) {
      found = std::move(impl_->draining);
      impl_->draining.reset();
      impl_->metrics.streams_active.add(-1);
      impl_->metrics.streams_handover_pending.add(-1);
    } else {
      auto& channels = impl_->channels;
      const auto it = std::find_if(channels.begin(), channels.end(),
                                   [&sink](const impl::channel_entry& c) { return c.sink.get() == &sink; });
      if (it != channels.end()) {
        found = std::move(it->sink);
        it->sink.reset();
        // An ended channel's entry stayed only for this stream's fence (`current`):
        // it goes with it.
        if (it->ended) channels.erase(it);
        impl_->metrics.streams_active.add(-1);
      }
    }
  }
  if (!found) return false;
  found->lease().release();  // exactly this sink's lease (docs/sessions.md#takeover)
  return true;
}

MCPCORE_DECL bool session_stream::current(std::uint64_t generation) const noexcept {
  const std::lock_guard<std::mutex> lock(impl_->mutex);
  // 0 is never handed out: fences count from 1 (`generations` is pre-incremented).
  if (generation == 0) return false;
  if (impl_->generation == generation) return true;
  return std::any_of(impl_->channels.begin(), impl_->channels.end(),
                     [generation](const impl::channel_entry& c) { return c.sink && c.generation == generation; });
}

namespace detail {

// The resumed POST streams of `s` (called with its lock held).
template <class Impl>
std::vector<std::shared_ptr<stream_sink>> session_stream_channel_sinks_locked(const Impl& s) {
  std::vector<std::shared_ptr<stream_sink>> out;
  for (const auto& c : s.channels) {
    if (c.sink) out.push_back(c.sink);
  }
  return out;
}

}  // namespace detail

// Closed, not forgotten: each pump still detaches its own sink (docs/sessions.md#takeover), which
// keeps the gauges and the lease accounting with the pumps.
MCPCORE_DECL void session_stream::close_sinks(close_reason reason) noexcept {
  std::vector<std::shared_ptr<stream_sink>> sinks;
  std::shared_ptr<stream_sink> live;
  std::shared_ptr<stream_sink> draining;
  {
    const std::lock_guard<std::mutex> lock(impl_->mutex);
    live = impl_->live;
    draining = impl_->draining;
    try {
      sinks = detail::session_stream_channel_sinks_locked(*impl_);
    } catch (const std::bad_alloc&) {  // NOLINT(bugprone-empty-catch): their pumps see the session gone
    }
  }
  if (live) live->close(reason);
  if (draining) draining->close(reason);
  for (const auto& sink : sinks) sink->close(reason);
}

// The draining sink is left alone: the attach that made it draining closed it, or is about to
// close it, `superseded`.
MCPCORE_DECL void session_stream::poison() noexcept {
  std::vector<std::shared_ptr<stream_sink>> sinks;
  std::shared_ptr<stream_sink> live;
  {
    const std::lock_guard<std::mutex> lock(impl_->mutex);
    impl_->poisoned = true;
    live = impl_->live;
    try {
      sinks = detail::session_stream_channel_sinks_locked(*impl_);
    } catch (const std::bad_alloc&) {  // NOLINT(bugprone-empty-catch): the live sink still closes
    }
  }
  if (live) live->close(close_reason::internal_error);
  for (const auto& sink : sinks) sink->close(close_reason::internal_error);
}

MCPCORE_DECL bool session_stream::poisoned() const noexcept {
  const std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->poisoned;
}

MCPCORE_DECL session_stream_stats session_stream::stats() const {
  const std::lock_guard<std::mutex> lock(impl_->mutex);
  session_stream_stats st;
  st.next_id = impl_->next_id;
  st.oldest_id = impl_->ring.empty() ? 0 : impl_->ring.front().id;
  st.frames = impl_->ring.size();
  st.bytes = impl_->bytes;
  st.pins = impl_->pins;
  st.live = static_cast<bool>(impl_->live);
  st.draining = static_cast<bool>(impl_->draining);
  st.generation = impl_->generation;
  st.poisoned = impl_->poisoned;
  st.channels_open = impl_->open_channels_locked();
  st.channel_sinks = static_cast<std::size_t>(
      std::count_if(impl_->channels.begin(), impl_->channels.end(), [](const impl::channel_entry& c) { return c.sink != nullptr; }));
  return st;
}

MCPCORE_DECL const session_stream_options& session_stream::options() const noexcept { return impl_->options; }

MCPCORE_END_NAMESPACE

#endif  // MCPCORE_IMPL_SESSION_STREAM_IPP
