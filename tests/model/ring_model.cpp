// SPDX-License-Identifier: Apache-2.0
// Model test of the replay ring, its pins and the GET attach (reference §7.4, §7.9, §8): random
// schedules of publish / publish_final / unpin / attach (random cursors) / take / written / detach run
// against `session_stream` and against a plain reference model written from the reference's
// rules; after every step the two must agree on the ids held, the bytes, the pins and every
// attach verdict and replay. Small random caps make eviction, pin overshoot and gaps common.
#include <mcpcore/session_stream.hpp>

#include <doctest/doctest.h>

#include <mcpcore/stream_budget.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace {

using mcpcore::attach_status;

std::size_t env_or(const char* name, std::size_t fallback) {
  if (const char* v = std::getenv(name); v != nullptr && *v != '\0') return std::strtoull(v, nullptr, 10);
  return fallback;
}

// The reference model: a vector of frames and four pin slots, following reference §7.9 and §8
// literally (no performance concerns).
struct model {
  struct frame {
    std::uint64_t id;
    std::size_t weight;
  };
  std::size_t max_frames, max_bytes;
  std::vector<frame> frames;
  std::vector<std::uint64_t> pins;  // at most 4
  std::uint64_t next = 1;
  bool live = false, draining = false;

  [[nodiscard]] std::size_t bytes() const {
    std::size_t b = 0;
    for (const auto& f : frames) b += f.weight;
    return b;
  }
  [[nodiscard]] bool is_pinned(std::uint64_t id) const { return std::find(pins.begin(), pins.end(), id) != pins.end(); }

  std::uint64_t publish(std::size_t weight, bool final) {
    const auto id = next++;
    frames.push_back({id, weight});
    if (final) {
      if (pins.size() == mcpcore::max_pinned_finals) pins.erase(std::min_element(pins.begin(), pins.end()));
      pins.push_back(id);
    }
    while (frames.size() > max_frames || bytes() > max_bytes) {
      auto victim = frames.end();
      for (auto it = frames.begin(); it + 1 < frames.end(); ++it) {
        if (!is_pinned(it->id)) {
          victim = it;
          break;
        }
      }
      if (victim == frames.end()) break;
      frames.erase(victim);
    }
    return id;
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
  // The verdict of an attach and, when attached, the ids replayed.
  attach_status attach(std::uint64_t cursor, std::vector<std::uint64_t>& replay) {
    replay.clear();
    if (cursor != 0) {
      const auto lower = frames.empty() ? next : frames.front().id;
      if (!(cursor + 1 >= lower && cursor < next)) return attach_status::gap;
      std::uint64_t expect = cursor + 1;
      for (const auto& f : frames) {
        if (f.id <= cursor) continue;
        if (f.id != expect) return attach_status::gap;
        ++expect;
      }
      if (expect != next) return attach_status::gap;
    }
    if (live && draining) return attach_status::handover_pending;
    // Finals still pinned at or below the cursor were never written on a wire: replayed first.
    for (const auto& f : frames) {
      if (f.id <= cursor && is_pinned(f.id)) replay.push_back(f.id);
    }
    for (const auto& f : frames) {
      if (f.id > cursor) replay.push_back(f.id);
    }
    draining = live;
    live = true;
    return attach_status::attached;
  }
};

}  // namespace

TEST_SUITE("model") {
  TEST_CASE("reference §7.4, §7.9, §8: the ring, pins and attach agree with the reference model on random schedules") {
    const std::size_t schedules = env_or("MCPCORE_MODEL_SCHEDULES", 10000);
    const std::size_t seed = env_or("MCPCORE_MODEL_SEED", 20261130);
    constexpr std::size_t steps = 120;
    constexpr std::size_t type_bytes = mcpcore::stream_event_type.size();
    std::mt19937_64 rng{seed};
    std::size_t gaps = 0, attaches = 0, evicted_pinned_survivals = 0;

    for (std::size_t schedule = 0; schedule < schedules; ++schedule) {
      std::uniform_int_distribution<std::size_t> frames_cap(2, 12);
      std::uniform_int_distribution<std::size_t> bytes_cap(mcpcore::min_ring_bytes, 900);
      mcpcore::session_stream_options o;
      o.ring_frames = frames_cap(rng);
      o.ring_bytes = bytes_cap(rng);
      o.get_streams_per_principal = 0;
      mcpcore::session_stream stream{o};
      mcpcore::stream_budget budget;
      model m{o.ring_frames, o.ring_bytes, {}, {}, 1, false, false};
      std::shared_ptr<mcpcore::stream_sink> live, draining;
      std::uint64_t client_cursor = 0;  // the last id the client saw on any GET
      std::vector<std::uint64_t> model_replay;
      mcpcore::stream_sink::batch batch;

      for (std::size_t step = 0; step < steps; ++step) {
        CAPTURE(schedule);
        CAPTURE(step);
        const auto action = std::uniform_int_distribution<int>(0, 99)(rng);
        if (action < 45) {  // publish (ring + live) or ring-only
          const auto size = std::uniform_int_distribution<std::size_t>(1, 120)(rng);
          const std::string data(size, 'x');
          const bool ring_only = action < 15;
          const auto id = ring_only ? stream.publish_ring_only(data) : stream.publish(data);
          REQUIRE(id == m.publish(type_bytes + size, false));
        } else if (action < 58) {  // a final
          const auto size = std::uniform_int_distribution<std::size_t>(1, 120)(rng);
          REQUIRE(stream.publish_final(std::string(size, 'f')) == m.publish(type_bytes + size, true));
        } else if (action < 66) {  // unpin a pinned id (or a random one)
          std::uint64_t id = m.next > 1 ? std::uniform_int_distribution<std::uint64_t>(1, m.next - 1)(rng) : 1;
          if (!m.pins.empty() && action < 63) id = m.pins[static_cast<std::size_t>(action) % m.pins.size()];
          REQUIRE(stream.unpin(id) == m.unpin(id));
        } else if (action < 86) {  // attach with a cursor: the client's, 0, stale, or from the future
          std::uint64_t cursor = client_cursor;
          const auto pick = std::uniform_int_distribution<int>(0, 9)(rng);
          if (pick == 0) cursor = 0;
          if (pick == 1 && cursor > 3) cursor -= 3;
          if (pick == 2) cursor = m.next + 2;
          const auto expected = m.attach(cursor, model_replay);
          const auto got = stream.attach_and_replay(cursor, budget, "p");
          REQUIRE(got.status == expected);
          ++attaches;
          if (expected == attach_status::gap) {
            ++gaps;
            continue;
          }
          if (expected != attach_status::attached) continue;
          REQUIRE(got.replayed == model_replay.size());
          got.sink->take(batch);
          std::vector<std::uint64_t> ids;
          for (const auto& f : batch.frames) ids.push_back(f.id);
          REQUIRE(ids == model_replay);
          REQUIRE(batch.dropped == 0);
          if (std::uniform_int_distribution<int>(0, 4)(rng) != 0) {  // the replay reached the wire
            REQUIRE(stream.written(ids) == m.written(ids));
          }
          if (!ids.empty()) client_cursor = std::max(client_cursor, ids.back());
          if (live) {
            CHECK(live->closed());  // superseded
            draining = live;
          }
          live = got.sink;
        } else if (action < 94) {  // the live pump drains: ids strictly increase on the wire
          if (live) {
            live->take(batch);
            std::uint64_t last = client_cursor;
            std::vector<std::uint64_t> ids;
            for (const auto& f : batch.frames) {
              REQUIRE(f.id > last);
              last = f.id;
              ids.push_back(f.id);
            }
            client_cursor = std::max(client_cursor, last);
            if (std::uniform_int_distribution<int>(0, 4)(rng) != 0) REQUIRE(stream.written(ids) == m.written(ids));
          }
        } else {  // a sink detaches (the draining one first, as a closing pump would)
          auto& victim = draining ? draining : live;
          if (victim) {
            REQUIRE(stream.detach(*victim));
            REQUIRE_FALSE(stream.detach(*victim));  // exactly once
            if (victim == live) m.live = false; else m.draining = false;
            victim.reset();
          }
        }
        // After every step the stream and the model agree.
        const auto st = stream.stats();
        REQUIRE(st.next_id == m.next);
        REQUIRE(st.frames == m.frames.size());
        REQUIRE(st.bytes == m.bytes());
        REQUIRE(st.oldest_id == (m.frames.empty() ? 0 : m.frames.front().id));
        std::vector<std::uint64_t> pins;
        for (auto p : st.pins) {
          if (p != 0) pins.push_back(p);
        }
        auto model_pins = m.pins;
        std::sort(pins.begin(), pins.end());
        std::sort(model_pins.begin(), model_pins.end());
        REQUIRE(pins == model_pins);
        // Pinned finals survive eviction until released.
        for (auto p : model_pins) {
          const bool held = std::any_of(m.frames.begin(), m.frames.end(), [p](const auto& f) { return f.id == p; });
          REQUIRE(held);
          if (m.frames.front().id < p) ++evicted_pinned_survivals;
        }
        REQUIRE(st.live == m.live);
        REQUIRE(st.draining == m.draining);
        // Overshoot is bounded by the pinned finals.
        REQUIRE(st.frames <= o.ring_frames + mcpcore::max_pinned_finals);
      }
      if (live) stream.detach(*live);
      if (draining) stream.detach(*draining);
      REQUIRE(budget.in_use() == 0);
    }
    MESSAGE("schedules=" << schedules << " attaches=" << attaches << " gaps=" << gaps);
    CHECK(gaps > 0);      // the schedules did exercise the gap path
    CHECK(attaches > gaps);
    CHECK(evicted_pinned_survivals > 0);
  }
}
