// SPDX-License-Identifier: Apache-2.0
// Model test of the replay ring, its pins, its channels and the attach
// (docs/sessions.md#get-attach-replay-resume, #takeover, #the-replay-ring, #pinned-finals; MCP
// resumability): random schedules of publish / publish_ring_only / publish_final (on the GET stream
// or a POST stream's channel) / open_channel / end_channel / unpin / attach (cursors the client
// could hold, and junk) / take / written / detach run against `session_stream` and against a plain
// reference model written from the reference's rules; after every step the two must agree on the
// ids held, the bytes, the pins, every attach verdict, channel and replay, what each sink holds and
// whether it is closed, the fences and the leases. Small random caps make eviction, pin overshoot,
// gaps and ended channels common.
#include <mcpcore/session/session_stream.hpp>

#include <doctest/doctest.h>

#include <mcpcore/session/session_metrics.hpp>
#include <mcpcore/session/stream_budget.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <memory>
#include <optional>
#include <ostream>
#include <random>
#include <string>
#include <vector>

namespace {

using mcpcore::attach_status;
using mcpcore::close_reason;

std::size_t env_or(const char* name, std::size_t fallback) {
  if (const char* v = std::getenv(name); v != nullptr && *v != '\0') return std::strtoull(v, nullptr, 10);
  return fallback;
}

constexpr std::size_t type_bytes = mcpcore::stream_event_type.size();

// The reference model: a vector of frames, the list of every frame evicted, four pin slots, the
// POST streams opened and every sink attached, following docs/sessions.md#get-attach-replay-resume,
// #takeover, #the-replay-ring, #pinned-finals and the channel rules literally (no performance
// concerns, nothing shared with the implementation).
struct model {
  using channel_id = std::uint64_t;
  struct frame {
    std::uint64_t id;
    std::size_t weight;
    channel_id channel;  // 0: the GET stream
    bool marker;         // a POST stream's priming marker: held and evicted, never replayed
  };
  struct evicted_frame {
    std::uint64_t id;
    channel_id channel;
  };
  // What `current(generation)` must say about a sink.
  enum class fence : std::uint8_t { current, stale, unspecified };
  // One sink the client was given, as the model expects it.
  struct sink {
    channel_id channel = 0;
    std::vector<std::uint64_t> queued;  // ids pushed and not taken yet
    bool closed = false;
    close_reason reason = close_reason::none;
    bool tracked = false;  // the live, draining or a channel's resumed sink: detach answers true
    bool lease = true;     // holds its budget slot (until detached, or let go when untracked)
    fence fence_state = fence::current;
  };
  struct post_stream {
    channel_id channel;
    std::uint64_t priming;
    bool open;
    std::optional<std::size_t> sink;  // its resumed sink, kept after the end until it detaches
  };
  enum class kind : std::uint8_t { live, ring_only, final };
  struct verdict {
    attach_status status = attach_status::gap;
    channel_id channel = 0;
    std::vector<std::uint64_t> replay;
    std::size_t pins_replayed = 0;
    bool took_over = false;
    std::optional<std::size_t> sink;
  };

  model(std::size_t frames_cap, std::size_t bytes_cap, std::size_t open_cap)
      : max_frames(frames_cap), max_bytes(bytes_cap), max_open(open_cap) {}

  std::size_t max_frames, max_bytes, max_open;
  std::vector<frame> frames;
  std::vector<evicted_frame> evicted;
  std::vector<std::uint64_t> pins;  // at most 4
  std::uint64_t next = 1;
  channel_id next_channel = 1;
  std::vector<post_stream> streams;  // every POST stream opened, oldest first
  std::vector<sink> sinks;           // every sink attached, in attach order
  std::optional<std::size_t> live, draining;

  [[nodiscard]] std::size_t bytes() const {
    std::size_t b = 0;
    for (const auto& f : frames) b += f.weight;
    return b;
  }
  [[nodiscard]] bool is_pinned(std::uint64_t id) const { return std::find(pins.begin(), pins.end(), id) != pins.end(); }
  [[nodiscard]] post_stream* find(channel_id c) {
    for (auto& p : streams) {
      if (p.channel == c) return &p;
    }
    return nullptr;
  }
  [[nodiscard]] std::size_t open_streams() const {
    std::size_t n = 0;
    for (const auto& p : streams) n += p.open ? std::size_t{1} : std::size_t{0};
    return n;
  }
  [[nodiscard]] std::size_t stream_sinks() const {
    std::size_t n = 0;
    for (const auto& p : streams) n += p.sink ? std::size_t{1} : std::size_t{0};
    return n;
  }
  [[nodiscard]] std::size_t leases() const {
    std::size_t n = 0;
    for (const auto& s : sinks) n += s.lease ? std::size_t{1} : std::size_t{0};
    return n;
  }

  // A closed sink queues nothing; its first close reason stands.
  void deliver(std::size_t i, std::uint64_t id) {
    if (!sinks[i].closed) sinks[i].queued.push_back(id);
  }
  void close(std::size_t i, close_reason r) {
    if (sinks[i].closed) return;
    sinks[i].closed = true;
    sinks[i].reason = r;
  }
  // A POST stream that carries nothing more: its resumed sink, if any, is closed `completed` after
  // what it holds (and stays attached until it detaches).
  void end(post_stream& p) {
    if (!p.open) return;
    p.open = false;
    if (p.sink) close(*p.sink, close_reason::completed);
  }

  // While over either bound, the oldest unpinned frame that is not the newest goes.
  void evict() {
    while (frames.size() > max_frames || bytes() > max_bytes) {
      auto victim = frames.end();
      for (auto it = frames.begin(); it + 1 < frames.end(); ++it) {
        if (!is_pinned(it->id)) {
          victim = it;
          break;
        }
      }
      if (victim == frames.end()) break;
      evicted.push_back({victim->id, victim->channel});
      frames.erase(victim);
    }
  }

  // publish (`live`: the GET stream and its live sink), publish_ring_only and publish_final (on
  // `channel`; live to that channel's resumed sink while the channel is open; a final ends it).
  std::uint64_t publish(std::size_t weight, kind k, channel_id channel) {
    const auto id = next++;
    const channel_id c = k == kind::live ? 0 : channel;
    frames.push_back({id, weight, c, false});
    if (k == kind::final) {
      if (pins.size() == mcpcore::max_pinned_finals) pins.erase(std::min_element(pins.begin(), pins.end()));
      pins.push_back(id);
    }
    if (k == kind::live) {
      if (live) deliver(*live, id);
    } else if (c != 0) {
      if (auto* p = find(c); p != nullptr && p->open) {
        if (p->sink) deliver(*p->sink, id);
        if (k == kind::final) end(*p);
      }
    }
    evict();
    return id;
  }
  // A new POST stream and its marker; at the cap the oldest open stream ends first.
  post_stream open() {
    if (open_streams() >= max_open) {
      for (auto& p : streams) {
        if (p.open) {
          end(p);
          break;
        }
      }
    }
    const channel_id c = next_channel++;
    const auto id = next++;
    frames.push_back({id, type_bytes, c, true});
    streams.push_back({c, id, true, std::nullopt});
    evict();
    return streams.back();
  }
  void end_channel(channel_id c) {
    if (c == 0) return;
    if (auto* p = find(c); p != nullptr) end(*p);
  }
  // Frames written on a wire release their pins.
  std::size_t written(const std::vector<std::uint64_t>& ids) {
    std::size_t n = 0;
    for (auto id : ids) n += unpin(id) ? std::size_t{1} : std::size_t{0};
    return n;
  }
  bool unpin(std::uint64_t id) {
    const auto it = std::find(pins.begin(), pins.end(), id);
    if (it == pins.end()) return false;
    pins.erase(it);
    return true;
  }

  // The verdict of an attach and, when attached, the ids replayed into the new sink.
  verdict attach(std::uint64_t cursor) {
    verdict v;
    // The stream the cursor names: 0 is the GET stream; a held frame names its own; of the evicted
    // frames only the newest of the GET stream and the newest overall can still be told.
    std::optional<channel_id> named;
    if (cursor == 0) {
      named = 0;
    } else if (cursor < next) {
      for (const auto& f : frames) {
        if (f.id == cursor) named = f.channel;
      }
      if (!named) {
        std::optional<evicted_frame> newest_get, newest;
        for (const auto& e : evicted) {
          if (e.channel == 0 && (!newest_get || e.id > newest_get->id)) newest_get = e;
          if (!newest || e.id > newest->id) newest = e;
        }
        if (newest_get && newest_get->id == cursor) {
          named = 0;
        } else if (newest && newest->id == cursor) {
          named = newest->channel;
        }
      }
    }
    if (!named) return v;  // a gap
    v.channel = *named;
    // The gap rule (a cursor of 0 asks for a fresh GET stream): on the GET stream, a GET frame
    // after the cursor was evicted; on a POST stream, any frame after the cursor was evicted.
    if (cursor != 0) {
      for (const auto& e : evicted) {
        if (e.id > cursor && (v.channel != 0 || e.channel == 0)) return v;
      }
    }
    if (v.channel == 0 && live && draining) {
      v.status = attach_status::handover_pending;
      return v;
    }
    // The stream's finals still pinned at or below the cursor, then its frames after the cursor.
    for (const auto& f : frames) {
      if (f.channel == v.channel && f.id <= cursor && is_pinned(f.id)) {
        v.replay.push_back(f.id);
        ++v.pins_replayed;
      }
    }
    for (const auto& f : frames) {
      if (f.channel == v.channel && f.id > cursor && !f.marker) v.replay.push_back(f.id);
    }
    const std::size_t n = sinks.size();
    sinks.push_back(sink{v.channel, v.replay});
    v.sink = n;
    v.status = attach_status::attached;
    if (v.channel == 0) {
      // The newest GET sink holds the GET fence: every older one is stale now.
      for (std::size_t i = 0; i < n; ++i) {
        if (sinks[i].channel == 0) sinks[i].fence_state = fence::stale;
      }
      if (live) {
        close(*live, close_reason::superseded);
        draining = live;
        v.took_over = true;
      }
      live = n;
      sinks[n].tracked = true;
    } else if (auto* p = find(v.channel); p != nullptr && p->open) {
      if (p->sink) {  // a second resume replaces the first
        close(*p->sink, close_reason::superseded);
        sinks[*p->sink].tracked = false;
        sinks[*p->sink].fence_state = fence::stale;
        v.took_over = true;
      }
      p->sink = n;
      sinks[n].tracked = true;
    } else {  // ended (or never opened): what it held, then the end
      close(n, close_reason::completed);
      sinks[n].fence_state = fence::stale;
    }
    return v;
  }
  // Whether the stream knew the sink; it then gives its lease back.
  bool detach(std::size_t i) {
    auto& s = sinks[i];
    if (!s.tracked) return false;
    s.tracked = false;
    s.lease = false;
    if (live == i) {
      live.reset();
      s.fence_state = fence::unspecified;  // no live sink: nothing asks for the GET fence
    } else if (draining == i) {
      draining.reset();
    } else {
      for (auto& p : streams) {
        if (p.sink == i) {
          p.sink.reset();
          s.fence_state = fence::stale;
        }
      }
    }
    return true;
  }
};

// What one sink looks like from outside, to compare the stream's sinks with the model's in one go.
struct sink_view {
  std::size_t index = 0;
  bool closed = false;
  close_reason reason = close_reason::none;
  bool lease = false;
  int fence = 0;  // 1 current, 0 stale, -1 not asked
  bool operator==(const sink_view&) const = default;
};
// What a session stream looks like from outside after a step.
struct stream_view {
  std::uint64_t next_id = 0;
  std::uint64_t oldest_id = 0;
  std::size_t frames = 0;
  std::size_t bytes = 0;
  std::vector<std::uint64_t> pins;  // sorted
  bool live = false;
  bool draining = false;
  std::size_t channels_open = 0;
  std::size_t channel_sinks = 0;
  std::size_t leases = 0;  // budget slots in use
  std::vector<sink_view> sinks;
  bool operator==(const stream_view&) const = default;
};
// One take, as the pump sees it.
struct take_view {
  std::vector<std::uint64_t> ids;
  std::size_t foreign = 0;     // frames of another stream
  std::size_t markers = 0;     // priming markers (empty data)
  bool increasing = true;      // ids strictly increase on this sink, across takes
  std::uint64_t dropped = 0;
  bool closed = false;
  close_reason reason = close_reason::none;
  bool operator==(const take_view&) const = default;
};

std::ostream& print_ids(std::ostream& os, const std::vector<std::uint64_t>& v) {
  os << '[';
  for (std::size_t i = 0; i < v.size(); ++i) os << (i == 0 ? "" : " ") << v[i];
  return os << ']';
}
std::ostream& operator<<(std::ostream& os, const sink_view& v) {
  return os << "{sink " << v.index << " closed=" << v.closed << " reason=" << static_cast<int>(v.reason)
            << " lease=" << v.lease << " fence=" << v.fence << '}';
}
std::ostream& operator<<(std::ostream& os, const stream_view& v) {
  os << "{next_id=" << v.next_id << " oldest_id=" << v.oldest_id << " frames=" << v.frames << " bytes=" << v.bytes
     << " pins=";
  print_ids(os, v.pins);
  os << " live=" << v.live << " draining=" << v.draining << " channels_open=" << v.channels_open
     << " channel_sinks=" << v.channel_sinks << " leases=" << v.leases << " sinks=";
  for (const auto& s : v.sinks) os << s;
  return os << '}';
}
std::ostream& operator<<(std::ostream& os, const take_view& v) {
  os << "{ids=";
  print_ids(os, v.ids);
  return os << " foreign=" << v.foreign << " markers=" << v.markers << " increasing=" << v.increasing
            << " dropped=" << v.dropped << " closed=" << v.closed << " reason=" << static_cast<int>(v.reason) << '}';
}

// One schedule's session stream and model, and the sinks the client holds (by model index).
struct harness {
  explicit harness(const mcpcore::session_stream_options& o)
      : stream(o), m(o.ring_frames, o.ring_bytes, std::max<std::size_t>(o.open_channels, 1)) {}

  mcpcore::stream_budget budget;  // outlives every sink (the stream's and the held ones)
  mcpcore::session_stream stream;
  model m;
  std::vector<std::shared_ptr<mcpcore::stream_sink>> held;  // null once let go
  std::vector<std::uint64_t> generation;
  std::vector<std::uint64_t> last_id;   // the last id each sink delivered
  std::vector<bool> end_seen;           // its end was taken
  mcpcore::stream_sink::batch batch;
  stream_view got_view, want_view;
  std::size_t ends_checked = 0;

  std::uint64_t publish(std::size_t size, model::kind k, model::channel_id channel) {
    std::uint64_t id = 0;
    switch (k) {
      case model::kind::live:
        id = stream.publish(std::string(size, 'x'));
        break;
      case model::kind::ring_only:
        id = stream.publish_ring_only(std::string(size, 'r'), channel);
        break;
      case model::kind::final:
        id = stream.publish_final(std::string(size, 'f'), channel);
        break;
    }
    REQUIRE(id == m.publish(type_bytes + size, k, channel));
    return id;
  }
  mcpcore::opened_channel open_channel() {
    const auto got = stream.open_channel();
    const auto expected = m.open();
    REQUIRE(got.channel == expected.channel);
    REQUIRE(got.priming_id == expected.priming);
    return got;
  }
  void end_channel(model::channel_id c) {
    stream.end_channel(c);
    m.end_channel(c);
  }
  void unpin(std::uint64_t id) { REQUIRE(stream.unpin(id) == m.unpin(id)); }
  void written(const std::vector<std::uint64_t>& ids) { REQUIRE(stream.written(ids) == m.written(ids)); }

  model::verdict attach(std::uint64_t cursor) {
    auto expected = m.attach(cursor);
    auto got = stream.attach_and_replay(cursor, budget, "p");
    CAPTURE(cursor);
    REQUIRE(got.status == expected.status);
    if (expected.status != attach_status::attached) {
      REQUIRE_FALSE(got.sink);
      return expected;
    }
    REQUIRE(got.sink);
    REQUIRE(got.channel == expected.channel);
    REQUIRE(got.replayed == expected.replay.size());
    REQUIRE(got.pins_replayed == expected.pins_replayed);
    REQUIRE(got.took_over == expected.took_over);
    REQUIRE(got.generation != 0);
    REQUIRE(held.size() == *expected.sink);
    held.push_back(std::move(got.sink));
    generation.push_back(got.generation);
    last_id.push_back(0);
    end_seen.push_back(false);
    return expected;
  }
  // The client's pump drains sink `i`: exactly what the model queued, of its channel only, in
  // increasing id order, closed exactly when the model says.
  std::vector<std::uint64_t> take(std::size_t i) {
    auto& expected = m.sinks[i];
    held[i]->take(batch);
    take_view got{{}, 0, 0, true, batch.dropped, batch.closed, batch.reason};
    for (const auto& f : batch.frames) {
      got.foreign += f.channel != expected.channel ? 1U : 0U;
      got.markers += f.data.empty() ? 1U : 0U;
      got.increasing = got.increasing && f.id > last_id[i];
      last_id[i] = f.id;
      got.ids.push_back(f.id);
    }
    const take_view want{expected.queued, 0, 0, true, 0, expected.closed, expected.reason};
    CAPTURE(i);
    REQUIRE(got == want);
    expected.queued.clear();
    if (batch.closed) end_seen[i] = true;
    return std::move(got.ids);
  }
  // The pump lets go of sink `i`: detach (exactly once), then the last reference goes.
  void let_go(std::size_t i) {
    detach(i);
    m.sinks[i].lease = false;
    held[i].reset();
  }
  void detach(std::size_t i) {
    const bool known = m.detach(i);
    REQUIRE(stream.detach(*held[i]) == known);
    REQUIRE_FALSE(stream.detach(*held[i]));
  }
  void let_go_all() {
    for (std::size_t i = 0; i < held.size(); ++i) {
      if (held[i]) let_go(i);
    }
  }

  // After every step the stream and the model agree (the views are members: their storage is reused).
  void check(const mcpcore::session_stream_options& o, std::size_t& evicted_pinned_survivals) {
    const auto st = stream.stats();
    auto& got = got_view;
    auto& want = want_view;
    got.next_id = st.next_id;
    got.oldest_id = st.oldest_id;
    got.frames = st.frames;
    got.bytes = st.bytes;
    got.pins.clear();
    for (auto p : st.pins) {
      if (p != 0) got.pins.push_back(p);
    }
    std::sort(got.pins.begin(), got.pins.end());
    got.live = st.live;
    got.draining = st.draining;
    got.channels_open = st.channels_open;
    got.channel_sinks = st.channel_sinks;
    got.leases = budget.in_use();
    want.next_id = m.next;
    want.oldest_id = m.frames.empty() ? 0 : m.frames.front().id;
    want.frames = m.frames.size();
    want.bytes = m.bytes();
    want.pins.assign(m.pins.begin(), m.pins.end());
    std::sort(want.pins.begin(), want.pins.end());
    want.live = m.live.has_value();
    want.draining = m.draining.has_value();
    want.channels_open = m.open_streams();
    want.channel_sinks = m.stream_sinks();
    want.leases = m.leases();
    got.sinks.clear();
    want.sinks.clear();
    for (std::size_t i = 0; i < held.size(); ++i) {
      if (!held[i]) continue;
      const auto& expected = m.sinks[i];
      const int fence = expected.fence_state == model::fence::unspecified ? -1
                        : expected.fence_state == model::fence::current   ? 1
                                                                          : 0;
      got.sinks.push_back({i, held[i]->closed(), held[i]->reason(), static_cast<bool>(held[i]->lease()),
                           fence < 0 ? -1 : stream.current(generation[i]) ? 1 : 0});
      want.sinks.push_back({i, expected.closed, expected.reason, expected.lease, fence});
    }
    REQUIRE(got == want);
    // Pinned finals survive eviction until released (the pins agree: the model's are held), and
    // the overshoot is bounded by them. (Asserted only when false: these run after every step.)
    for (auto p : want.pins) {
      const bool held_frame = std::any_of(m.frames.begin(), m.frames.end(), [p](const auto& f) { return f.id == p; });
      if (!held_frame) REQUIRE(held_frame);
      if (m.frames.front().id < p) ++evicted_pinned_survivals;
    }
    const std::size_t bound = o.ring_frames + mcpcore::max_pinned_finals;
    if (st.frames > bound) REQUIRE(st.frames <= bound);
    // A POST stream's sink closed `completed` ends right after its last frame: take it now.
    for (std::size_t i = 0; i < held.size(); ++i) {
      if (held[i] && m.sinks[i].closed && m.sinks[i].reason == close_reason::completed && !end_seen[i]) {
        (void)take(i);
        ++ends_checked;
      }
    }
  }
};

// A compact record of a schedule's steps, printed only when an assertion fails.
struct step_record {
  char op;
  std::uint64_t a;
  std::uint64_t b;
};
struct trace {
  std::vector<step_record> steps;
};
std::ostream& operator<<(std::ostream& os, const trace& t) {
  os << " (o channel priming: open_channel; g id: publish; r channel id: publish_ring_only; f channel id: "
        "publish_final; e channel: end_channel; u id: unpin; a cursor sink: attach; t sink frames: take; "
        "d sink: detach; l sink: detach and let go)\n";
  for (const auto& s : t.steps) os << "  " << s.op << ' ' << s.a << ' ' << s.b << "\n";
  return os;
}

}  // namespace

TEST_SUITE("model") {
  TEST_CASE("sessions.md/get-attach-replay-resume, sessions.md/the-replay-ring, sessions.md/pinned-finals: the ring, pins and attach agree with the reference model on random schedules") {
    const std::size_t schedules = env_or("MCPCORE_MODEL_SCHEDULES", 10000);
    const std::size_t seed = env_or("MCPCORE_MODEL_SEED", 20261130);
    constexpr std::size_t steps = 120;
    std::mt19937_64 rng{seed};
    std::size_t gaps = 0, attaches = 0, evicted_pinned_survivals = 0;

    for (std::size_t schedule = 0; schedule < schedules; ++schedule) {
      std::uniform_int_distribution<std::size_t> frames_cap(2, 12);
      std::uniform_int_distribution<std::size_t> bytes_cap(mcpcore::min_ring_bytes, 900);
      mcpcore::session_stream_options o;
      o.ring_frames = frames_cap(rng);
      o.ring_bytes = bytes_cap(rng);
      o.get_streams_per_principal = 0;
      harness h{o};
      model& m = h.m;
      std::uint64_t client_cursor = 0;  // the last id the client saw on any GET
      std::size_t step = 0;
      INFO("schedule " << schedule << ", step " << step);  // read only on a failure

      for (; step < steps; ++step) {
        const auto action = std::uniform_int_distribution<int>(0, 99)(rng);
        if (action < 45) {  // publish (ring + live) or ring-only
          const auto size = std::uniform_int_distribution<std::size_t>(1, 120)(rng);
          const bool ring_only = action < 15;
          (void)h.publish(size, ring_only ? model::kind::ring_only : model::kind::live, mcpcore::get_channel);
        } else if (action < 58) {  // a final
          const auto size = std::uniform_int_distribution<std::size_t>(1, 120)(rng);
          (void)h.publish(size, model::kind::final, mcpcore::get_channel);
        } else if (action < 66) {  // unpin a pinned id (or a random one)
          std::uint64_t id = m.next > 1 ? std::uniform_int_distribution<std::uint64_t>(1, m.next - 1)(rng) : 1;
          if (!m.pins.empty() && action < 63) id = m.pins[static_cast<std::size_t>(action) % m.pins.size()];
          h.unpin(id);
        } else if (action < 86) {  // attach with a cursor: the client's, 0, stale, or from the future
          std::uint64_t cursor = client_cursor;
          const auto pick = std::uniform_int_distribution<int>(0, 9)(rng);
          if (pick == 0) cursor = 0;
          if (pick == 1 && cursor > 3) cursor -= 3;
          if (pick == 2) cursor = m.next + 2;
          const auto v = h.attach(cursor);
          ++attaches;
          if (v.status == attach_status::gap) ++gaps;
          if (v.status == attach_status::attached) {
            REQUIRE(v.channel == mcpcore::get_channel);
            const auto ids = h.take(*v.sink);
            if (std::uniform_int_distribution<int>(0, 4)(rng) != 0) h.written(ids);  // the replay reached the wire
            if (!ids.empty()) client_cursor = std::max(client_cursor, ids.back());
          }
        } else if (action < 94) {  // the live pump drains: ids strictly increase on the wire
          if (m.live) {
            const auto ids = h.take(*m.live);
            REQUIRE((ids.empty() || ids.front() > client_cursor));  // and take() saw them increase
            if (!ids.empty()) client_cursor = ids.back();
            if (std::uniform_int_distribution<int>(0, 4)(rng) != 0) h.written(ids);
          }
        } else {  // a sink detaches (the draining one first, as a closing pump would)
          const auto victim = m.draining ? m.draining : m.live;
          if (victim) h.let_go(*victim);
        }
        h.check(o, evicted_pinned_survivals);
      }
      h.let_go_all();
      REQUIRE(h.budget.in_use() == 0);
    }
    MESSAGE("schedules=" << schedules << " attaches=" << attaches << " gaps=" << gaps);
    CHECK(gaps > 0);      // the schedules did exercise the gap path
    CHECK(attaches > gaps);
    CHECK(evicted_pinned_survivals > 0);
  }

  TEST_CASE("MCP resumability (sessions.md/get-attach-replay-resume, sessions.md/takeover, sessions.md/the-replay-ring, sessions.md/pinned-finals): channels, their replays, gaps and ends agree with the reference model on random schedules") {
    // Each schedule has its own generator (seeded from the seed and its index), so that a failing
    // schedule replays alone: MCPCORE_MODEL_SEED=<seed>, and its index is in the failure report.
    const std::size_t schedules = env_or("MCPCORE_MODEL_SCHEDULES", 1500);
    const std::size_t seed = env_or("MCPCORE_MODEL_SEED", 20261130);
    constexpr std::size_t steps = 150;
    std::size_t evicted_pinned_survivals = 0, ends_checked = 0, max_channels = 0;
    std::size_t get_attaches = 0, open_resumes = 0, ended_resumes = 0, post_takeovers = 0, gaps = 0, pending = 0;

    for (std::size_t schedule = 0; schedule < schedules; ++schedule) {
      std::mt19937_64 rng{seed * 1000003 + schedule};
      const auto draw = [&rng](std::uint64_t lo, std::uint64_t hi) {
        return std::uniform_int_distribution<std::uint64_t>(lo, hi)(rng);
      };
      mcpcore::session_stream_options o;
      o.ring_frames = draw(2, 20);
      o.ring_bytes = draw(mcpcore::min_ring_bytes, 1400);
      o.open_channels = draw(1, 5);
      o.get_streams_per_principal = 0;
      harness h{o};
      model& m = h.m;
      // What the client could hold per stream (index: channel; 0 is the GET stream): every id
      // committed on it (a POST stream's priming marker first) and the last id it was delivered.
      std::vector<std::vector<std::uint64_t>> ids_of(1);
      std::vector<std::uint64_t> seen_on(1, 0);
      trace t;
      INFO("schedule " << schedule << " (seed " << seed << ", ring_frames " << o.ring_frames << ", ring_bytes "
                       << o.ring_bytes << ", open_channels " << o.open_channels << "), steps:" << t);

      // A channel to publish on: an open POST stream mostly, else any opened one, else the GET stream.
      const auto publish_target = [&]() -> std::uint64_t {
        const auto p = draw(0, 99);
        std::vector<std::uint64_t> open;
        for (const auto& s : m.streams) {
          if (s.open) open.push_back(s.channel);
        }
        if (p < 75 && !open.empty()) return open[draw(0, open.size() - 1)];
        if (p < 95 && !m.streams.empty()) return m.streams[draw(0, m.streams.size() - 1)].channel;
        return mcpcore::get_channel;
      };
      const auto holder = [&]() -> std::optional<std::size_t> {  // a sink the client still holds
        std::vector<std::size_t> live_ones;
        for (std::size_t i = 0; i < h.held.size(); ++i) {
          if (h.held[i]) live_ones.push_back(i);
        }
        if (live_ones.empty()) return std::nullopt;
        return live_ones[draw(0, live_ones.size() - 1)];
      };

      for (std::size_t step = 0; step < steps; ++step) {
        const auto action = draw(0, 99);
        const auto size = draw(1, 120);
        if (action < 8) {  // a streamed POST opens its stream
          const auto c = h.open_channel();
          ids_of.resize(c.channel + 1);
          seen_on.resize(c.channel + 1, 0);
          ids_of[c.channel].push_back(c.priming_id);
          t.steps.push_back({'o', c.channel, c.priming_id});
        } else if (action < 20) {  // the GET stream: ring and live
          const auto id = h.publish(size, model::kind::live, mcpcore::get_channel);
          ids_of[0].push_back(id);
          t.steps.push_back({'g', id, 0});
        } else if (action < 40) {  // a POST stream's frame (or a ring-only GET frame)
          const auto c = publish_target();
          const auto id = h.publish(size, model::kind::ring_only, c);
          ids_of[c].push_back(id);
          t.steps.push_back({'r', c, id});
        } else if (action < 47) {  // a final: pinned, and it ends its stream
          const auto c = publish_target();
          const auto id = h.publish(size, model::kind::final, c);
          ids_of[c].push_back(id);
          t.steps.push_back({'f', c, id});
        } else if (action < 52) {  // a call ends without a final (or junk: the GET stream, unknown)
          const auto p = draw(0, 9);
          std::uint64_t c = p < 8 ? publish_target() : p == 8 ? mcpcore::get_channel : m.next_channel + draw(0, 3);
          h.end_channel(c);
          t.steps.push_back({'e', c, 0});
        } else if (action < 55) {  // unpin a pinned id (or a random one)
          std::uint64_t id = draw(1, m.next);
          if (!m.pins.empty() && action < 54) id = m.pins[draw(0, m.pins.size() - 1)];
          h.unpin(id);
          t.steps.push_back({'u', id, 0});
        } else if (action < 75) {  // a resume: a cursor the client could hold, or junk
          const auto c = draw(0, ids_of.size() - 1);
          const auto& ids = ids_of[c];
          std::uint64_t cursor = 0;
          switch (draw(0, 9)) {
            case 0: break;  // no Last-Event-ID
            case 1:
            case 2:  // a priming marker
              if (!m.streams.empty()) cursor = m.streams[draw(0, m.streams.size() - 1)].priming;
              break;
            case 3:
            case 4: cursor = seen_on[c]; break;  // the last id delivered on that stream
            case 5:
            case 6: cursor = ids.empty() ? 0 : ids[draw(0, ids.size() - 1)]; break;  // any id of it
            case 7: cursor = ids.empty() ? 0 : ids.back(); break;                     // its newest
            case 8: cursor = draw(1, m.next + 2); break;                               // any id, or the future
            default: cursor = draw(0, 1) == 0 ? std::numeric_limits<std::uint64_t>::max() : m.next + draw(0, 5); break;
          }
          const auto v = h.attach(cursor);
          t.steps.push_back({'a', cursor, v.sink ? *v.sink : 999999});
          if (v.status == attach_status::gap) ++gaps;
          if (v.status == attach_status::handover_pending) ++pending;
          if (v.status == attach_status::attached) {
            if (v.channel == mcpcore::get_channel) {
              ++get_attaches;
            } else if (m.sinks[*v.sink].closed) {
              ++ended_resumes;
            } else {
              ++open_resumes;
              if (v.took_over) ++post_takeovers;
            }
          }
        } else if (action < 88) {  // a pump drains a sink; its frames mostly reach the wire
          if (const auto i = holder()) {
            const auto ids = h.take(*i);
            if (!ids.empty()) seen_on[m.sinks[*i].channel] = std::max(seen_on[m.sinks[*i].channel], ids.back());
            if (draw(0, 4) != 0) h.written(ids);
            t.steps.push_back({'t', *i, ids.size()});
          }
        } else if (action < 95) {  // a pump detaches its sink but still holds it
          if (const auto i = holder()) {
            h.detach(*i);
            t.steps.push_back({'d', *i, 0});
          }
        } else if (const auto i = holder()) {  // a pump lets go: detach, and the sink goes
          h.let_go(*i);
          t.steps.push_back({'l', *i, 0});
        }
        h.check(o, evicted_pinned_survivals);
      }
      max_channels = std::max<std::size_t>(max_channels, m.streams.size());
      ends_checked += h.ends_checked;
      h.let_go_all();
      REQUIRE(h.budget.in_use() == 0);
      const auto st = h.stream.stats();
      REQUIRE_FALSE(st.live);
      REQUIRE_FALSE(st.draining);
      REQUIRE(st.channel_sinks == 0);
    }
    MESSAGE("schedules=" << schedules << " get_attaches=" << get_attaches << " open_resumes=" << open_resumes
                         << " post_takeovers=" << post_takeovers << " ended_resumes=" << ended_resumes
                         << " gaps=" << gaps << " handover_pending=" << pending << " ends_checked=" << ends_checked
                         << " max_channels=" << max_channels);
    // The schedules did exercise every path.
    CHECK(get_attaches > 0);
    CHECK(open_resumes > 0);
    CHECK(post_takeovers > 0);
    CHECK(ended_resumes > 0);
    CHECK(gaps > 0);
    CHECK(pending > 0);
    CHECK(ends_checked > 0);
    CHECK(evicted_pinned_survivals > 0);
  }
}
