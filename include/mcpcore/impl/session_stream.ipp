// SPDX-License-Identifier: Apache-2.0
// One session's stream state: the replay ring, the pinned finals, the live and draining sinks, and
// the sink queue a pump drains (reference §7.4, §7.5, §7.9, §8, §14.1).
#ifndef MCPCORE_IMPL_SESSION_STREAM_IPP
#define MCPCORE_IMPL_SESSION_STREAM_IPP

#include <mcpcore/session_stream.hpp>

#include <mcpcore/json_writer.hpp>

#include <algorithm>
#include <charconv>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <new>
#include <utility>

MCPCORE_BEGIN_NAMESPACE

// ---- stream_sink -----------------------------------------------------------------------------

struct stream_sink::impl {
  explicit impl(std::size_t queue_frames) noexcept : capacity(queue_frames == 0 ? 1 : queue_frames) {}

  // Whether the consumer has anything to do; called with `mutex` held.
  [[nodiscard]] bool ready_locked() const noexcept { return !queue.empty() || dropped != 0 || poked || closed; }

  const std::size_t capacity;
  mutable std::mutex mutex;
  std::condition_variable cv;
  // Everything below is guarded by `mutex` (the wait predicate included: lost-wakeup rule).
  std::deque<stream_frame> queue;
  std::uint64_t dropped = 0;        // since the last take
  std::uint64_t dropped_total = 0;  // since construction
  bool closed = false;
  close_reason reason = close_reason::none;
  bool poked = false;
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

// A closed sink queues nothing: its consumer finishes without writing frames (reference §7.6), and a
// frame it never gets stays replayable from the ring.
MCPCORE_DECL bool stream_sink::push(const stream_frame& frame) noexcept {
  const std::lock_guard<std::mutex> lock(impl_->mutex);
  if (impl_->closed) return false;
  try {
    if (impl_->queue.size() >= impl_->capacity) {
      impl_->queue.pop_front();  // drop-oldest (reference §7.4 step 6)
      ++impl_->dropped;
      ++impl_->dropped_total;
    }
    impl_->queue.push_back(frame);  // strong guarantee: on a throw the queue is unchanged
  } catch (const std::bad_alloc&) {
    ++impl_->dropped;
    ++impl_->dropped_total;
  }
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
  return o;
}

// The notice replacing a frame of `bytes` bytes that exceeds the ring's byte cap (reference §7.9):
// a JSON-RPC notification, so that a conformant client can still parse the stream.
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
  // pinned id yields (reference §8, route (c)).
  void pin_locked(std::uint64_t id) noexcept {
    auto slot = std::find(pins.begin(), pins.end(), std::uint64_t{0});
    if (slot == pins.end()) {
      slot = std::min_element(pins.begin(), pins.end());
      metrics.pin_displaced.inc();
    }
    *slot = id;
  }

  // While over either bound, the oldest unpinned frame that is not the newest goes (reference §7.9).
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

  std::uint64_t publish(std::string_view message, target t) noexcept {
    std::shared_ptr<stream_sink> to_wake;
    std::uint64_t id = 0;
    try {
      // The owned copy, outside the lock.
      stream_frame frame;
      const bool too_large = stream_event_type.size() + message.size() > options.ring_bytes;
      if (too_large) {
        detail::append_frame_too_large_notice(frame.data, options.frame_too_large_method, message.size());
      } else {
        frame.data.assign(message);
      }
      const std::lock_guard<std::mutex> lock(mutex);
      frame.id = next_id;
      ring.push_back(std::move(frame));  // the last step that can throw; the ring is unchanged if it does
      // Committed: no-throw from here (reference §7.9).
      id = next_id++;
      bytes += weight(ring.back());
      if (too_large) metrics.frames_too_large.inc();
      if (t == target::final) pin_locked(id);  // after the commit: no ghost pins (reference §8)
      // The live copy before eviction: the newest frame is never evicted anyway.
      if (t == target::ring_and_live && live && push_counted(*live, ring.back())) to_wake = live;
      evict_locked();
    } catch (const std::bad_alloc&) {
      if (id == 0) {
        metrics.publish_failures.inc();
        return 0;
      }
    }
    if (to_wake) to_wake->wake();  // outside the stream lock (reference §14.1)
    return id;
  }

  const session_stream_options options;
  const session_metrics metrics;
  mutable std::mutex mutex;
  // Guarded by `mutex`.
  std::deque<stream_frame> ring;  // ids strictly increasing
  std::size_t bytes = 0;          // sum of weight() over `ring`
  std::uint64_t next_id = 1;
  std::array<std::uint64_t, max_pinned_finals> pins{};  // 0 marks a free slot
  std::shared_ptr<stream_sink> live;
  std::shared_ptr<stream_sink> draining;
  std::uint64_t generation = 0;
  bool poisoned = false;
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
  delete impl_;
}

MCPCORE_DECL std::uint64_t session_stream::publish(std::string_view message) noexcept {
  return impl_->publish(message, impl::target::ring_and_live);
}

MCPCORE_DECL std::uint64_t session_stream::publish_ring_only(std::string_view message) noexcept {
  return impl_->publish(message, impl::target::ring_only);
}

MCPCORE_DECL std::uint64_t session_stream::publish_final(std::string_view message) noexcept {
  return impl_->publish(message, impl::target::final);
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
  {
    const std::lock_guard<std::mutex> lock(impl_->mutex);
    impl& s = *impl_;
    // 0. A lost final is sticky.
    if (s.poisoned) {
      out.status = attach_status::poisoned;
      return out;
    }
    // The first held frame with id > cursor.
    const auto first = std::upper_bound(s.ring.begin(), s.ring.end(), cursor,
                                        [](std::uint64_t c, const stream_frame& f) { return c < f.id; });
    const auto after = static_cast<std::size_t>(s.ring.end() - first);
    if (cursor != 0) {
      // 1. The window: an evicted cursor and a future cursor take the same path.
      const std::uint64_t lower = s.ring.empty() ? s.next_id : s.ring.front().id;
      if (cursor + 1 < lower || cursor >= s.next_id) {
        out.status = attach_status::gap;
        return out;
      }
      // 2. Contiguity: ids are distinct, increasing and below next_id, so exactly
      //    cursor+1 .. next_id-1 are held iff that many frames follow the cursor.
      if (after != s.next_id - 1 - cursor) {
        out.status = attach_status::gap;
        return out;
      }
    }
    // 5. Admission: at most one draining sink per session (reference §7.5).
    if (s.live && s.draining) {
      out.status = attach_status::handover_pending;
      return out;
    }
    // The sink first, then the lease: a throw or a refusal leaves the stream as it was. The queue
    // holds the whole replay, pinned overshoot included, so a replay never gaps itself.
    auto sink = std::make_shared<stream_sink>(std::max(s.options.sink_queue_frames, s.ring.size()));
    const bool takeover = static_cast<bool>(s.live);
    auto lease = budget.try_acquire(stream_surface_get, principal, s.options.get_streams_per_principal,
                                    takeover ? stream_budget_mode::takeover : stream_budget_mode::enforce_caps);
    if (!lease.has_value()) {
      out.status = lease.error() == stream_budget_reject::global_stream_cap ? attach_status::global_stream_cap
                                                                            : attach_status::per_principal_stream_cap;
      return out;
    }
    // No-throw from here.
    sink->lease() = std::move(*lease);
    // 6. Replay. Nobody else sees the sink yet and it has no waker: nothing to wake. A copy that
    //    fails is counted dropped (the consumer writes events-dropped; the frame stays replayable).
    //    First the finals still pinned at or below the cursor: a pin is only released once its
    //    frame was written on a wire, so these never reached the client, whatever the cursor says
    //    (a parked final is ring-only and a GET stream's own Last-Event-ID may pass it unseen).
    //    Ids still increase on the new connection: these all precede the frames after the cursor.
    for (auto it = s.ring.begin(); it != first; ++it) {
      if (s.pinned_locked(it->id)) {
        s.push_counted(*sink, *it);
        ++out.pins_replayed;
      }
    }
    for (auto it = first; it != s.ring.end(); ++it) s.push_counted(*sink, *it);
    out.replayed = after + out.pins_replayed;
    // 7. Commit.
    s.metrics.streams_active.add(1);
    if (takeover) {
      superseded = s.live;
      s.draining = std::move(s.live);
      s.metrics.streams_handover_pending.add(1);
    }
    s.live = sink;
    out.generation = ++s.generation;
    out.sink = std::move(sink);
    out.took_over = takeover;
    out.status = attach_status::attached;
  }
  // 8. Outside the stream lock.
  if (superseded) superseded->close(close_reason::superseded);
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
    }
  }
  if (!found) return false;
  found->lease().release();  // exactly this sink's lease (reference §7.5)
  return true;
}

MCPCORE_DECL bool session_stream::current(std::uint64_t generation) const noexcept {
  const std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->generation == generation;
}

MCPCORE_DECL void session_stream::close_sinks(close_reason reason) noexcept {
  std::shared_ptr<stream_sink> live;
  std::shared_ptr<stream_sink> draining;
  {
    const std::lock_guard<std::mutex> lock(impl_->mutex);
    live = impl_->live;
    draining = impl_->draining;
  }
  if (live) live->close(reason);
  if (draining) draining->close(reason);
}

MCPCORE_DECL void session_stream::poison() noexcept {
  std::shared_ptr<stream_sink> live;
  {
    const std::lock_guard<std::mutex> lock(impl_->mutex);
    impl_->poisoned = true;
    live = impl_->live;
  }
  if (live) live->close(close_reason::internal_error);
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
  return st;
}

MCPCORE_DECL const session_stream_options& session_stream::options() const noexcept { return impl_->options; }

MCPCORE_END_NAMESPACE

#endif  // MCPCORE_IMPL_SESSION_STREAM_IPP
