// SPDX-License-Identifier: Apache-2.0
// Tests of one session's stream state: the replay ring, pinned finals, attach_and_replay, takeover
// and the sink queue (docs/sessions.md#sse-frames, #get-attach-replay-resume, #takeover,
// #the-replay-ring, #pinned-finals, #lock-discipline, #exception-boundaries, #ordering-guarantees).
#include <mcpcore/session/session_stream.hpp>

#include <mcpcore/governance/metrics.hpp>
#include <mcpcore/session/session_metrics.hpp>
#include <mcpcore/session/stream_budget.hpp>
#include <mcpcore/wire/json.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

using namespace mcpcore;
using namespace std::string_view_literals;

namespace {

session_stream_options opts(std::size_t ring_frames, std::size_t ring_bytes = default_ring_bytes,
                            std::size_t sink_queue_frames = default_sink_queue_frames) {
  session_stream_options o;
  o.ring_frames = ring_frames;
  o.ring_bytes = ring_bytes;
  o.sink_queue_frames = sink_queue_frames;
  return o;
}

std::string msg(std::uint64_t n) {
  return R"({"jsonrpc":"2.0","method":"notifications/progress","params":{"n":)" + std::to_string(n) + "}}";
}

// Every frame id queued in `sink`, taken.
std::vector<std::uint64_t> take_ids(stream_sink& sink, std::uint64_t* dropped = nullptr) {
  stream_sink::batch b;
  sink.take(b);
  if (dropped != nullptr) *dropped = b.dropped;
  std::vector<std::uint64_t> ids;
  ids.reserve(b.frames.size());
  for (const auto& f : b.frames) ids.push_back(f.id);
  return ids;
}

std::vector<std::uint64_t> range(std::uint64_t from, std::uint64_t to) {
  std::vector<std::uint64_t> v;
  for (std::uint64_t i = from; i <= to; ++i) v.push_back(i);
  return v;
}

std::size_t pin_count(const session_stream_stats& st) {
  return static_cast<std::size_t>(std::count_if(st.pins.begin(), st.pins.end(), [](std::uint64_t p) { return p != 0; }));
}

bool same(const session_stream_stats& a, const session_stream_stats& b) {
  return a.next_id == b.next_id && a.oldest_id == b.oldest_id && a.frames == b.frames && a.bytes == b.bytes &&
         a.pins == b.pins && a.live == b.live && a.draining == b.draining && a.generation == b.generation &&
         a.poisoned == b.poisoned;
}

attach_result attach(session_stream& s, stream_budget& b, std::uint64_t cursor = 0, std::string_view principal = "alice") {
  return s.attach_and_replay(cursor, b, principal);
}

// A waker that counts its calls and, to prove it runs under no stream lock, reads the stream.
struct waker_probe {
  session_stream* stream = nullptr;
  int calls = 0;
  std::uint64_t seen_next_id = 0;
  static void wake(void* p) noexcept {
    auto* self = static_cast<waker_probe*>(p);
    ++self->calls;
    if (self->stream != nullptr) self->seen_next_id = self->stream->stats().next_id;  // deadlocks under the lock
  }
};

}  // namespace

TEST_SUITE("session_stream") {
  TEST_CASE("sessions.md/the-replay-ring: defaults are 500 frames, 64 KiB, 4 pins, 4 GET streams per principal") {
    const session_stream s;
    CHECK(s.options().ring_frames == 500);
    CHECK(s.options().ring_bytes == 64 * 1024);
    CHECK(s.options().sink_queue_frames == 500);
    CHECK(s.options().get_streams_per_principal == 4);
    CHECK(s.options().frame_too_large_method == "notifications/mcpcore/frame_too_large");
    CHECK(max_pinned_finals == 4);
    CHECK(stream_event_type == "message");
    const auto st = s.stats();
    CHECK(st.next_id == 1);
    CHECK(st.oldest_id == 0);
    CHECK(st.frames == 0);
    CHECK(st.bytes == 0);
    CHECK(pin_count(st) == 0);
    CHECK_FALSE(st.live);
    CHECK_FALSE(st.draining);
    CHECK(st.generation == 0);
    CHECK_FALSE(st.poisoned);
    CHECK_FALSE(s.poisoned());
    static_assert(!std::is_copy_constructible_v<session_stream>);
    static_assert(!std::is_copy_constructible_v<stream_sink>);
  }

  TEST_CASE("sessions.md/the-replay-ring: options are normalised (ring >= 1 frame, >= min_ring_bytes, queue >= ring)") {
    const session_stream a{opts(0, 10, 0)};
    CHECK(a.options().ring_frames == 1);
    CHECK(a.options().ring_bytes == min_ring_bytes);
    CHECK(a.options().sink_queue_frames == 1);
    const session_stream b{opts(700, 100000, 20)};
    CHECK(b.options().ring_frames == 700);
    CHECK(b.options().ring_bytes == 100000);
    CHECK(b.options().sink_queue_frames == 700);
    const session_stream c{opts(10, 1000, 50)};
    CHECK(c.options().sink_queue_frames == 50);
  }

  TEST_CASE("sessions.md/the-replay-ring: ids are per stream, from 1, strictly increasing across every publish variant") {
    session_stream s;
    session_stream other;
    CHECK(s.publish(msg(1)) == 1);
    CHECK(s.publish_ring_only(msg(2)) == 2);
    CHECK(s.publish_final(msg(3)) == 3);
    CHECK(s.publish(msg(4)) == 4);
    CHECK(other.publish(msg(1)) == 1);  // never global
    const auto st = s.stats();
    CHECK(st.next_id == 5);
    CHECK(st.oldest_id == 1);
    CHECK(st.frames == 4);
    std::size_t bytes = 0;
    for (std::uint64_t i = 1; i <= 4; ++i) bytes += stream_event_type.size() + msg(i).size();
    CHECK(st.bytes == bytes);
  }

  TEST_CASE("sessions.md/the-replay-ring: a frame over the byte cap becomes a frame_too_large notification, ids stay contiguous") {
    metrics_registry reg;
    const auto m = bind_session_metrics(reg);
    session_stream_options o = opts(10, 256);
    o.frame_too_large_method = "x/\"quoted\"";
    stream_budget budget;
    session_stream s{o, m};
    auto a = attach(s, budget);
    REQUIRE(a.status == attach_status::attached);

    CHECK(s.publish(msg(1)) == 1);
    const std::string big(300, 'x');
    CHECK(s.publish(big) == 2);
    CHECK(s.publish(msg(3)) == 3);
    CHECK(m.frames_too_large.value() == 1);
    CHECK(m.publish_failures.value() == 0);

    stream_sink::batch batch;
    a.sink->take(batch);
    REQUIRE(batch.frames.size() == 3);
    CHECK(batch.frames[1].id == 2);
    json::document doc;
    const auto v = doc.parse(batch.frames[1].data);
    REQUIRE(v.has_value());
    CHECK((*v)["jsonrpc"].as_string() == "2.0");
    CHECK((*v)["method"].as_string() == "x/\"quoted\"");  // escaped on the wire, intact when parsed
    CHECK((*v)["id"].exists() == false);                  // a notification
    CHECK((*v)["params"]["error"].as_string() == "frame_too_large");
    CHECK((*v)["params"]["bytes"].to_uint64() == 300);
    CHECK((*v)["params"]["remediation"].as_string() == "fetch the full result by its execution id");
    // the notice, not the frame, is what the ring weighs
    CHECK(s.stats().bytes < 3 * 256);
    // the exact cap is not over it: 256 - "message" = 249 bytes of data stay verbatim
    const std::string at_cap(256 - stream_event_type.size(), 'y');
    CHECK(s.publish(at_cap) == 4);
    CHECK(m.frames_too_large.value() == 1);
    a.sink->take(batch);
    REQUIRE(batch.frames.size() == 1);
    CHECK(batch.frames[0].data == at_cap);
  }

  TEST_CASE("sessions.md/the-replay-ring: the frame bound evicts the oldest frames, counted") {
    metrics_registry reg;
    const auto m = bind_session_metrics(reg);
    session_stream s{opts(3), m};
    for (std::uint64_t i = 1; i <= 5; ++i) CHECK(s.publish(msg(i)) == i);
    const auto st = s.stats();
    CHECK(st.frames == 3);
    CHECK(st.oldest_id == 3);
    CHECK(st.next_id == 6);
    CHECK(st.bytes == 3 * (stream_event_type.size() + msg(3).size()));
    CHECK(m.ring_evictions.value() == 2);
  }

  TEST_CASE("sessions.md/the-replay-ring: the byte bound counts event type plus data and evicts the oldest") {
    metrics_registry reg;
    const auto m = bind_session_metrics(reg);
    session_stream s{opts(100, 256), m};
    const std::string d(100, 'a');  // weight 107
    CHECK(s.publish(d) == 1);
    CHECK(s.publish(d) == 2);
    CHECK(s.stats().bytes == 214);
    CHECK(s.publish(d) == 3);  // 321 > 256: frame 1 goes
    auto st = s.stats();
    CHECK(st.frames == 2);
    CHECK(st.oldest_id == 2);
    CHECK(st.bytes == 214);
    CHECK(m.ring_evictions.value() == 1);
    // a frame of exactly the cap evicts everything else
    CHECK(s.publish(std::string(256 - stream_event_type.size(), 'b')) == 4);
    st = s.stats();
    CHECK(st.frames == 1);
    CHECK(st.oldest_id == 4);
    CHECK(st.bytes == 256);
    CHECK(m.ring_evictions.value() == 3);
  }

  TEST_CASE("sessions.md/the-replay-ring: the newest frame is never evicted, even when it alone exceeds the byte cap") {
    session_stream_options o = opts(10, 256);
    o.frame_too_large_method = std::string(300, 'm');  // the notice itself is over the cap
    session_stream s{o};
    CHECK(s.publish(msg(1)) == 1);
    CHECK(s.publish(std::string(400, 'z')) == 2);
    const auto st = s.stats();
    CHECK(st.frames == 1);
    CHECK(st.oldest_id == 2);
    CHECK(st.bytes > 256);
  }

  TEST_CASE("sessions.md/the-replay-ring, sessions.md/pinned-finals: pinned finals survive eviction, the oldest unpinned non-newest frame goes") {
    metrics_registry reg;
    const auto m = bind_session_metrics(reg);
    session_stream s{opts(2), m};
    CHECK(s.publish(msg(1)) == 1);
    CHECK(s.publish_final(msg(2)) == 2);
    CHECK(s.pinned(2));
    CHECK_FALSE(s.pinned(1));
    for (std::uint64_t i = 3; i <= 10; ++i) CHECK(s.publish(msg(i)) == i);
    auto st = s.stats();
    CHECK(st.frames == 2);
    CHECK(st.oldest_id == 2);  // 1 went first although older than the final; 3..9 went after it
    CHECK(s.pinned(2));
    CHECK(m.ring_evictions.value() == 8);
    // released, the final is evictable like any frame
    CHECK(s.unpin(2));
    CHECK(s.publish(msg(11)) == 11);
    st = s.stats();
    CHECK(st.frames == 2);
    CHECK(st.oldest_id == 10);
  }

  TEST_CASE("sessions.md/the-replay-ring, sessions.md/pinned-finals: the overshoot is bounded by the four pins plus the newest") {
    session_stream s{opts(1)};
    for (std::uint64_t i = 1; i <= 4; ++i) CHECK(s.publish_final(msg(i)) == i);
    for (std::uint64_t i = 5; i <= 50; ++i) {
      CHECK(s.publish(msg(i)) == i);
      const auto st = s.stats();
      CHECK(st.frames == 5);  // = ring_frames + max_pinned_finals
      CHECK(st.oldest_id == 1);
    }
    const auto st = s.stats();
    CHECK(pin_count(st) == 4);
  }

  TEST_CASE("sessions.md/pinned-finals: with the four slots full the smallest pinned id yields, counted, and stays evictable") {
    metrics_registry reg;
    const auto m = bind_session_metrics(reg);
    session_stream s{opts(1), m};
    for (std::uint64_t i = 1; i <= 4; ++i) CHECK(s.publish_final(msg(i)) == i);
    CHECK(m.pin_displaced.value() == 0);
    CHECK(s.publish_final(msg(5)) == 5);
    CHECK(m.pin_displaced.value() == 1);
    CHECK_FALSE(s.pinned(1));
    for (std::uint64_t i = 2; i <= 5; ++i) CHECK(s.pinned(i));
    auto st = s.stats();
    CHECK(pin_count(st) == 4);
    CHECK(st.oldest_id == 2);  // frame 1 lost its exemption and went
    CHECK(st.frames == 4);
    CHECK(s.publish_final(msg(6)) == 6);
    CHECK(m.pin_displaced.value() == 2);
    CHECK_FALSE(s.pinned(2));
    st = s.stats();
    CHECK(pin_count(st) == 4);
    CHECK(m.final_unpinned.value() == 0);
  }

  TEST_CASE("sessions.md/pinned-finals: unpin clears a slot exactly once, 0 and unknown ids are no-ops") {
    session_stream s;
    const auto id = s.publish_final(msg(1));
    CHECK_FALSE(s.unpin(0));
    CHECK_FALSE(s.pinned(0));
    CHECK_FALSE(s.unpin(id + 1));
    CHECK(s.pinned(id));
    CHECK(s.unpin(id));
    CHECK_FALSE(s.unpin(id));
    CHECK_FALSE(s.pinned(id));
    CHECK(pin_count(s.stats()) == 0);
    CHECK(s.stats().frames == 1);  // unpinning does not remove the frame
  }

  TEST_CASE("sessions.md/the-replay-ring: publish reaches the live sink, publish_ring_only and publish_final do not") {
    stream_budget budget;
    session_stream s;
    auto a = attach(s, budget);
    REQUIRE(a.status == attach_status::attached);
    CHECK(s.publish(msg(1)) == 1);
    CHECK(s.publish_ring_only(msg(2)) == 2);
    CHECK(s.publish_final(msg(3)) == 3);
    CHECK(s.publish(msg(4)) == 4);
    stream_sink::batch b;
    a.sink->take(b);
    REQUIRE(b.frames.size() == 2);
    CHECK(b.frames[0].id == 1);
    CHECK(b.frames[0].data == msg(1));
    CHECK(b.frames[1].id == 4);
    CHECK(b.frames[1].data == msg(4));
    CHECK(b.dropped == 0);
    // every one of them is replayable
    auto again = attach(s, budget, 0);
    REQUIRE(again.status == attach_status::attached);
    CHECK(take_ids(*again.sink) == range(1, 4));
  }

  TEST_CASE("sessions.md/takeover: a draining sink gets nothing new, the live one gets everything") {
    stream_budget budget;
    session_stream s;
    auto first = attach(s, budget);
    REQUIRE(first.status == attach_status::attached);
    CHECK(s.publish(msg(1)) == 1);
    auto second = attach(s, budget, 1);
    REQUIRE(second.status == attach_status::attached);
    CHECK(s.publish(msg(2)) == 2);
    CHECK(s.publish(msg(3)) == 3);
    CHECK(take_ids(*first.sink) == std::vector<std::uint64_t>{1});  // queued while it was live
    CHECK(take_ids(*second.sink) == std::vector<std::uint64_t>{2, 3});
    CHECK(s.stats().draining);
  }

  TEST_CASE("sessions.md/get-attach-replay-resume: cursor 0 replays everything held, a cursor in the window what follows it") {
    stream_budget budget;
    session_stream s{opts(5)};
    for (std::uint64_t i = 1; i <= 8; ++i) s.publish(msg(i));  // holds 4..8
    auto a = attach(s, budget, 0);
    REQUIRE(a.status == attach_status::attached);
    CHECK(a.replayed == 5);
    CHECK(take_ids(*a.sink) == range(4, 8));
    REQUIRE(s.detach(*a.sink));

    for (const std::uint64_t cursor : {3u, 4u, 6u, 7u, 8u}) {
      CAPTURE(cursor);
      auto r = attach(s, budget, cursor);
      REQUIRE(r.status == attach_status::attached);
      CHECK(r.replayed == 8 - cursor);
      CHECK(take_ids(*r.sink) == range(cursor + 1, 8));
      CHECK(s.detach(*r.sink));
    }
    CHECK(budget.in_use() == 0);
  }

  TEST_CASE("sessions.md/get-attach-replay-resume: cursors from the future, below the window or across a hole are gaps") {
    stream_budget budget;
    session_stream s{opts(2)};
    SUBCASE("an empty ring holds no window; then cursors from the future") {
      CHECK(attach(s, budget, 1).status == attach_status::gap);  // next_id is 1: 1 is the future
      s.publish(msg(1));
      s.publish(msg(2));
      s.publish(msg(3));  // holds 2, 3
      CHECK(attach(s, budget, 4).status == attach_status::gap);                 // the future
      CHECK(attach(s, budget, ~std::uint64_t{0}).status == attach_status::gap);  // far future
      CHECK(attach(s, budget, 1).status != attach_status::gap);                 // 2 is the oldest held
    }
    SUBCASE("below the window") {
      for (std::uint64_t i = 1; i <= 6; ++i) s.publish(msg(i));  // holds 5, 6
      CHECK(attach(s, budget, 3).status == attach_status::gap);
      CHECK(attach(s, budget, 1).status == attach_status::gap);
      const auto r = attach(s, budget, 4);
      CHECK(r.status == attach_status::attached);
    }
    SUBCASE("a pinned final whose neighbours were evicted leaves a hole") {
      s.publish(msg(1));
      s.publish_final(msg(2));
      for (std::uint64_t i = 3; i <= 6; ++i) s.publish(msg(i));  // holds 2 (pinned), 6
      const auto st = s.stats();
      REQUIRE(st.frames == 2);
      REQUIRE(st.oldest_id == 2);
      CHECK(attach(s, budget, 1).status == attach_status::gap);  // 3..5 are missing
      CHECK(attach(s, budget, 2).status == attach_status::gap);
      CHECK(attach(s, budget, 4).status == attach_status::gap);  // inside the window, 5 missing
      CHECK(s.pinned(2));                                        // a gap acknowledges nothing
      const auto r = attach(s, budget, 5);
      CHECK(r.status == attach_status::attached);
      CHECK(r.pins_replayed == 1);  // never written on a wire: replayed, still pinned
      CHECK(s.pinned(2));
      CHECK(take_ids(*r.sink) == std::vector<std::uint64_t>{2, 6});
    }
  }

  TEST_CASE("sessions.md/get-attach-replay-resume: every refusal changes nothing (stats, pins, budget)") {
    metrics_registry reg;
    const auto m = bind_session_metrics(reg);
    session_stream_options o = opts(3);
    o.get_streams_per_principal = 1;
    stream_budget budget;
    session_stream s{o, m};
    for (std::uint64_t i = 1; i <= 4; ++i) s.publish_final(msg(i));
    for (std::uint64_t i = 5; i <= 7; ++i) s.publish(msg(i));  // holds 1..4 (pinned) and 7
    REQUIRE(s.stats().frames == 5);

    const auto before = s.stats();
    CHECK(attach(s, budget, 4).status == attach_status::gap);  // 5 and 6 are missing
    CHECK(attach(s, budget, 5).status == attach_status::gap);
    CHECK(attach(s, budget, 9).status == attach_status::gap);
    CHECK(same(before, s.stats()));
    CHECK(pin_count(s.stats()) == 4);  // no acknowledgement by a refused cursor
    CHECK(budget.in_use() == 0);

    // caps: another session of alice holds her only GET slot
    session_stream other{o};
    auto held = attach(other, budget, 0, "alice");
    REQUIRE(held.status == attach_status::attached);
    CHECK(attach(s, budget, 6, "alice").status == attach_status::per_principal_stream_cap);
    CHECK(same(before, s.stats()));
    CHECK(budget.in_use() == 1);

    stream_budget full{stream_budget_options{0}};
    CHECK(attach(s, full, 6, "bob").status == attach_status::global_stream_cap);
    CHECK(same(before, s.stats()));
    CHECK(full.in_use() == 0);

    // handover pending
    auto a = attach(s, budget, 0, "bob");
    REQUIRE(a.status == attach_status::attached);
    auto b = attach(s, budget, 0, "bob");
    REQUIRE(b.status == attach_status::attached);
    const auto busy = s.stats();
    const auto in_use = budget.in_use();
    CHECK(attach(s, budget, 6, "bob").status == attach_status::handover_pending);
    CHECK(same(busy, s.stats()));
    CHECK(budget.in_use() == in_use);
    CHECK(pin_count(s.stats()) == 4);
    // the same cursor, admitted, replays the four unwritten pinned finals first
    CHECK(s.detach(*a.sink));
    const auto ok = attach(s, budget, 6, "bob");
    CHECK(ok.status == attach_status::attached);
    CHECK(ok.pins_replayed == 4);
    CHECK(take_ids(*ok.sink) == std::vector<std::uint64_t>{1, 2, 3, 4, 7});
    CHECK(pin_count(s.stats()) == 4);
    CHECK(m.streams_active.value() == 2);
    CHECK(m.streams_handover_pending.value() == 1);
  }

  TEST_CASE("sessions.md/pinned-finals: a cursor releases no pin, finals still pinned at or below it replay first") {
    stream_budget budget;
    session_stream s;
    s.publish_final(msg(1));
    s.publish(msg(2));
    s.publish_final(msg(3));
    s.publish_final(msg(4));
    auto zero = attach(s, budget, 0);
    REQUIRE(zero.status == attach_status::attached);
    CHECK(zero.pins_replayed == 0);  // cursor 0: everything held replays anyway
    CHECK(pin_count(s.stats()) == 3);
    REQUIRE(s.detach(*zero.sink));

    // A GET stream's own Last-Event-ID (3) may pass parked finals it never carried: they replay.
    auto r = attach(s, budget, 3);
    REQUIRE(r.status == attach_status::attached);
    CHECK(r.pins_replayed == 2);
    CHECK(s.pinned(1));
    CHECK(s.pinned(3));
    CHECK(s.pinned(4));
    const auto ids = take_ids(*r.sink);
    CHECK(ids == std::vector<std::uint64_t>{1, 3, 4});  // still increasing on the new connection
  }

  TEST_CASE("sessions.md/pinned-finals: a final written on the GET wire releases its pin, exactly once") {
    session_stream s;
    s.publish_final(msg(1));
    s.publish(msg(2));
    s.publish_final(msg(3));
    const std::vector<std::uint64_t> wrote{1, 2};
    CHECK(s.written(wrote) == 1);
    CHECK_FALSE(s.pinned(1));
    CHECK(s.pinned(3));
    CHECK(s.written(wrote) == 0);
    const std::vector<std::uint64_t> none{0, 99};
    CHECK(s.written(none) == 0);
  }

  TEST_CASE("sessions.md/get-attach-replay-resume: a replay never gaps itself, pinned overshoot included") {
    stream_budget budget;
    session_stream s{opts(1, default_ring_bytes, 1)};
    for (std::uint64_t i = 1; i <= 4; ++i) s.publish_final(msg(i));
    s.publish(msg(5));
    REQUIRE(s.stats().frames == 5);
    auto a = attach(s, budget, 0);
    REQUIRE(a.status == attach_status::attached);
    CHECK(a.replayed == 5);
    std::uint64_t dropped = 99;
    CHECK(take_ids(*a.sink, &dropped) == range(1, 5));
    CHECK(dropped == 0);
    CHECK(a.sink->dropped_total() == 0);
  }

  TEST_CASE("sessions.md/get-attach-replay-resume, sessions.md/takeover: a second attach supersedes the first, a third waits for a detach") {
    metrics_registry reg;
    const auto m = bind_session_metrics(reg);
    stream_budget budget;
    session_stream s{{}, m};
    auto first = attach(s, budget);
    REQUIRE(first.status == attach_status::attached);
    CHECK(first.generation == 1);
    CHECK_FALSE(first.took_over);
    CHECK(s.current(1));
    CHECK(m.streams_active.value() == 1);
    CHECK(m.streams_handover_pending.value() == 0);

    auto second = attach(s, budget);
    REQUIRE(second.status == attach_status::attached);
    CHECK(second.took_over);
    CHECK(second.generation == 2);
    CHECK(first.sink->closed());  // before attach_and_replay returned
    CHECK(first.sink->reason() == close_reason::superseded);
    CHECK_FALSE(second.sink->closed());
    CHECK_FALSE(s.current(1));
    CHECK(s.current(2));
    auto st = s.stats();
    CHECK(st.live);
    CHECK(st.draining);
    CHECK(st.generation == 2);
    CHECK(m.streams_active.value() == 2);
    CHECK(m.streams_handover_pending.value() == 1);

    CHECK(attach(s, budget).status == attach_status::handover_pending);
    CHECK(s.detach(*first.sink));  // the draining one leaves
    CHECK(m.streams_active.value() == 1);
    CHECK(m.streams_handover_pending.value() == 0);

    auto third = attach(s, budget);
    REQUIRE(third.status == attach_status::attached);
    CHECK(third.took_over);
    CHECK(third.generation == 3);
    CHECK(second.sink->reason() == close_reason::superseded);

    // the live one leaving first also frees the handover slot; the draining one stays tracked
    CHECK(s.detach(*third.sink));
    st = s.stats();
    CHECK_FALSE(st.live);
    CHECK(st.draining);
    auto fourth = attach(s, budget);
    REQUIRE(fourth.status == attach_status::attached);
    CHECK_FALSE(fourth.took_over);
    CHECK(s.stats().draining);
    CHECK(attach(s, budget).status == attach_status::handover_pending);
    CHECK(s.detach(*second.sink));
    CHECK(s.detach(*fourth.sink));
    CHECK(budget.in_use() == 0);
    CHECK(m.streams_active.value() == 0);
    CHECK(m.streams_handover_pending.value() == 0);
  }

  TEST_CASE("sessions.md/get-attach-replay-resume, sessions.md/the-stream-budget: a first attach is refused at the per-principal and global caps") {
    session_stream_options o;
    o.get_streams_per_principal = 2;
    stream_budget budget{stream_budget_options{3}};
    session_stream s1{o};
    session_stream s2{o};
    session_stream s3{o};
    session_stream s4{o};
    auto a1 = attach(s1, budget, 0, "alice");
    auto a2 = attach(s2, budget, 0, "alice");
    REQUIRE(a1.status == attach_status::attached);
    REQUIRE(a2.status == attach_status::attached);
    CHECK(attach(s3, budget, 0, "alice").status == attach_status::per_principal_stream_cap);
    CHECK(budget.in_use(stream_surface_get, "alice") == 2);
    auto b1 = attach(s3, budget, 0, "bob");
    REQUIRE(b1.status == attach_status::attached);
    CHECK(attach(s4, budget, 0, "bob").status == attach_status::global_stream_cap);
    CHECK(attach(s4, budget, 0, "alice").status == attach_status::global_stream_cap);  // global checked first
    CHECK_FALSE(s4.stats().live);
    CHECK(s4.stats().generation == 0);
    // 0 means unlimited per principal
    session_stream_options unlimited;
    unlimited.get_streams_per_principal = 0;
    stream_budget big;
    std::vector<std::unique_ptr<session_stream>> many;
    for (int i = 0; i < 10; ++i) {
      many.push_back(std::make_unique<session_stream>(unlimited));
      CHECK(attach(*many.back(), big, 0, "carol").status == attach_status::attached);
    }
    CHECK(big.in_use() == 10);
  }

  TEST_CASE("sessions.md/get-attach-replay-resume, sessions.md/the-stream-budget: a takeover bypasses the caps but takes its own lease") {
    session_stream_options o;
    o.get_streams_per_principal = 1;
    stream_budget budget{stream_budget_options{1}};
    session_stream s{o};
    auto first = attach(s, budget);
    REQUIRE(first.status == attach_status::attached);
    CHECK(budget.in_use() == 1);
    auto second = attach(s, budget);
    REQUIRE(second.status == attach_status::attached);
    CHECK(second.took_over);
    CHECK(budget.in_use() == 2);  // over both caps, still counted
    CHECK(budget.in_use(stream_surface_get, "alice") == 2);
    CHECK(static_cast<bool>(first.sink->lease()));
    CHECK(static_cast<bool>(second.sink->lease()));
  }

  TEST_CASE("sessions.md/takeover: detach returns exactly that sink's lease, is idempotent, and ignores unknown sinks") {
    stream_budget budget;
    session_stream s;
    auto first = attach(s, budget, 0, "alice");
    auto second = attach(s, budget, 0, "bob");
    REQUIRE(first.status == attach_status::attached);
    REQUIRE(second.status == attach_status::attached);
    CHECK(budget.in_use() == 2);

    stream_sink stranger;
    CHECK_FALSE(s.detach(stranger));
    CHECK(budget.in_use() == 2);

    CHECK(s.detach(*first.sink));
    CHECK(budget.in_use() == 1);
    CHECK(budget.in_use(stream_surface_get, "alice") == 0);
    CHECK(budget.in_use(stream_surface_get, "bob") == 1);
    CHECK_FALSE(static_cast<bool>(first.sink->lease()));
    CHECK(static_cast<bool>(second.sink->lease()));
    CHECK_FALSE(s.detach(*first.sink));  // idempotent
    CHECK(budget.in_use() == 1);

    // a sink of another stream is unknown here
    session_stream t;
    CHECK_FALSE(t.detach(*second.sink));
    CHECK(budget.in_use() == 1);
    CHECK(s.detach(*second.sink));
    CHECK(budget.in_use() == 0);
    CHECK(budget.entries() == 0);
    const auto st = s.stats();
    CHECK_FALSE(st.live);
    CHECK_FALSE(st.draining);
  }

  TEST_CASE("sessions.md/pinned-finals: poison is sticky, refuses every attach, and closes the live sink internal_error") {
    stream_budget budget;
    session_stream s;
    auto first = attach(s, budget);
    auto second = attach(s, budget);
    REQUIRE(second.status == attach_status::attached);
    s.poison();
    CHECK(s.poisoned());
    CHECK(s.stats().poisoned);
    CHECK(second.sink->reason() == close_reason::internal_error);
    CHECK(first.sink->reason() == close_reason::superseded);  // the first reason wins
    CHECK(s.detach(*first.sink));
    CHECK(s.detach(*second.sink));
    const auto before = budget.in_use();
    CHECK(attach(s, budget, 0).status == attach_status::poisoned);
    CHECK(attach(s, budget, 5).status == attach_status::poisoned);  // before the window check
    CHECK(budget.in_use() == before);
    s.poison();
    CHECK(s.poisoned());
    // publishing still works: the ring is not the poisoned part
    CHECK(s.publish(msg(1)) == 1);
  }

  TEST_CASE("http.md/delete-sessions-on, sessions.md/close-reasons: close_sinks closes live and draining sinks with the reason, the ring stays") {
    stream_budget budget;
    session_stream s;
    s.publish(msg(1));
    auto first = attach(s, budget);
    first.sink->close(close_reason::credential_revoked);  // recorded first: kept
    auto second = attach(s, budget);
    REQUIRE(second.status == attach_status::attached);
    s.close_sinks(close_reason::session_terminated);
    CHECK(first.sink->reason() == close_reason::credential_revoked);
    CHECK(second.sink->reason() == close_reason::session_terminated);
    CHECK(s.stats().frames == 1);
    CHECK(s.stats().live);  // still attached until the pumps detach
    s.close_sinks(close_reason::internal_error);  // already closed: the first reason stays
    CHECK(second.sink->reason() == close_reason::session_terminated);
  }

  TEST_CASE("sessions.md/pinned-finals: destroying the stream closes remaining sinks session_terminated") {
    metrics_registry reg;
    const auto m = bind_session_metrics(reg);
    stream_budget budget;
    std::shared_ptr<stream_sink> a;
    std::shared_ptr<stream_sink> b;
    {
      session_stream s{{}, m};
      a = attach(s, budget).sink;
      b = attach(s, budget).sink;
      REQUIRE(a);
      REQUIRE(b);
      CHECK(m.streams_active.value() == 2);
    }
    CHECK(a->reason() == close_reason::superseded);
    CHECK(b->reason() == close_reason::session_terminated);
    CHECK(m.streams_active.value() == 0);
    CHECK(m.streams_handover_pending.value() == 0);
    CHECK(budget.in_use() == 2);  // the pumps return the leases
    a->lease().release();
    b.reset();  // the last holder: the lease goes back with the sink
    CHECK(budget.in_use() == 0);
  }

  TEST_CASE("sessions.md/get-attach-replay-resume, sessions.md/sse-frames: a full sink queue drops the oldest and counts it") {
    metrics_registry reg;
    const auto m = bind_session_metrics(reg);
    stream_budget budget;
    session_stream s{opts(2, default_ring_bytes, 2), m};
    auto a = attach(s, budget);
    REQUIRE(a.status == attach_status::attached);
    for (std::uint64_t i = 1; i <= 5; ++i) s.publish(msg(i));
    CHECK(a.sink->dropped_total() == 3);
    CHECK(m.frames_dropped.value() == 3);
    std::uint64_t dropped = 0;
    CHECK(take_ids(*a.sink, &dropped) == std::vector<std::uint64_t>{4, 5});
    CHECK(dropped == 3);
    CHECK(take_ids(*a.sink, &dropped).empty());
    CHECK(dropped == 0);  // take resets it
    CHECK(a.sink->dropped_total() == 3);
  }

  TEST_CASE("sessions.md/close-reasons: a sink's first close reason wins and exactly one close returns true") {
    stream_sink sink;
    CHECK_FALSE(sink.closed());
    CHECK(sink.reason() == close_reason::none);
    CHECK_FALSE(sink.ready());
    CHECK(sink.close(close_reason::credential_revoked));
    CHECK_FALSE(sink.close(close_reason::client_disconnect));
    CHECK_FALSE(sink.close(close_reason::superseded));
    CHECK(sink.closed());
    CHECK(sink.reason() == close_reason::credential_revoked);
    CHECK(sink.ready());
    stream_sink::batch b;
    sink.take(b);
    CHECK(b.closed);
    CHECK(b.reason == close_reason::credential_revoked);
    CHECK(sink.ready());  // a close stays pending
    // a closed sink queues nothing
    CHECK_FALSE(sink.push(stream_frame{1, "x"}));
    sink.take(b);
    CHECK(b.frames.empty());
  }

  TEST_CASE("sessions.md/get-attach-replay-resume: a sink queue holds at least one frame and drops the oldest beyond it") {
    stream_sink sink{0};
    CHECK_FALSE(sink.push(stream_frame{1, "a"}));  // no waker: nothing to wake
    sink.push(stream_frame{2, "b"});
    sink.push(stream_frame{3, "c"});
    CHECK(sink.dropped_total() == 2);
    stream_sink::batch b;
    b.frames.push_back(stream_frame{99, "stale"});  // replaced, not appended to
    sink.take(b);
    REQUIRE(b.frames.size() == 1);
    CHECK(b.frames[0].id == 3);
    CHECK(b.frames[0].data == "c");
    CHECK(b.dropped == 2);
    CHECK_FALSE(b.closed);
    CHECK(b.reason == close_reason::none);
    CHECK_FALSE(sink.ready());
    CHECK_FALSE(sink.add_dropped(0));
    CHECK_FALSE(sink.ready());
    sink.add_dropped(4);
    CHECK(sink.ready());
    sink.take(b);
    CHECK(b.frames.empty());
    CHECK(b.dropped == 4);
    CHECK(sink.dropped_total() == 6);
  }

  TEST_CASE("sessions.md/the-get-pump: wait_for returns at once when work is pending and false on a timeout") {
    stream_sink sink;
    CHECK_FALSE(sink.wait_for(std::chrono::milliseconds(0)));
    CHECK_FALSE(sink.wait_for(std::chrono::milliseconds(1)));
    sink.poke();
    CHECK(sink.ready());
    CHECK(sink.wait_for(std::chrono::milliseconds(0)));
    stream_sink::batch b;
    sink.take(b);  // clears the poke
    CHECK_FALSE(sink.ready());
    sink.push(stream_frame{1, "x"});
    CHECK(sink.wait_for(std::chrono::hours(1)));
    sink.take(b);
    sink.close(close_reason::session_terminated);
    CHECK(sink.wait_for(std::chrono::hours(1)));  // a closed sink never blocks
  }

  TEST_CASE("sessions.md/lock-discipline: the waker runs after every push, close and poke, under no stream lock") {
    stream_budget budget;
    session_stream s;
    auto a = attach(s, budget);
    REQUIRE(a.status == attach_status::attached);
    waker_probe probe;
    probe.stream = &s;
    a.sink->set_waker(&waker_probe::wake, &probe);
    CHECK(s.publish(msg(1)) == 1);  // would deadlock if the waker ran under the stream lock
    CHECK(probe.calls == 1);
    CHECK(probe.seen_next_id == 2);
    s.publish_ring_only(msg(2));  // not for the live sink: nobody to wake
    CHECK(probe.calls == 1);
    a.sink->poke();
    CHECK(probe.calls == 2);
    s.close_sinks(close_reason::session_terminated);  // the sink wakes its consumer itself
    CHECK(probe.calls == 3);
    CHECK_FALSE(a.sink->close(close_reason::internal_error));
    CHECK(probe.calls == 3);  // not closed again: nothing new to wake for
    a.sink->set_waker(nullptr, nullptr);
    a.sink->poke();
    CHECK(probe.calls == 3);
  }

  TEST_CASE("sessions.md/get-attach-replay-resume, sessions.md/lock-discipline: the superseded sink's waker runs after the stream lock is released") {
    stream_budget budget;
    session_stream s;
    auto first = attach(s, budget);
    waker_probe probe;
    probe.stream = &s;
    first.sink->set_waker(&waker_probe::wake, &probe);
    auto second = attach(s, budget);
    REQUIRE(second.status == attach_status::attached);
    CHECK(probe.calls == 1);
    CHECK(first.sink->reason() == close_reason::superseded);
    // the same for poison
    waker_probe probe2;
    probe2.stream = &s;
    second.sink->set_waker(&waker_probe::wake, &probe2);
    s.poison();
    CHECK(probe2.calls == 1);
  }
}

// ---- channels: one stream per POST response (MCP resumability) ----------------------------------

namespace {

struct channel_batch {
  std::vector<std::uint64_t> ids;
  bool closed = false;
  close_reason reason = close_reason::none;
};

channel_batch take_all(stream_sink& sink) {
  stream_sink::batch b;
  sink.take(b);
  channel_batch out;
  for (const auto& f : b.frames) out.ids.push_back(f.id);
  out.closed = b.closed;
  out.reason = b.reason;
  return out;
}

}  // namespace

TEST_CASE("MCP resumability: open_channel commits a priming marker that is never replayed") {
  stream_budget b;
  session_stream s;
  const auto a = s.open_channel();
  CHECK(a.channel != get_channel);
  CHECK(a.priming_id == 1);
  const auto c = s.open_channel();
  CHECK(c.channel != a.channel);
  CHECK(c.priming_id == 2);
  CHECK(s.stats().frames == 2);
  CHECK(s.stats().channels_open == 2);
  // No cursor: the GET stream, which holds nothing (markers belong to their channels).
  auto g = attach(s, b);
  REQUIRE(g.status == attach_status::attached);
  CHECK(g.channel == get_channel);
  CHECK(take_ids(*g.sink).empty());
  // The marker's id names its channel: nothing of it yet, and the stream stays open for it.
  auto r = attach(s, b, a.priming_id);
  REQUIRE(r.status == attach_status::attached);
  CHECK(r.channel == a.channel);
  CHECK(r.replayed == 0);
  const auto first = take_all(*r.sink);
  CHECK(first.ids.empty());
  CHECK_FALSE(first.closed);
  CHECK(s.stats().channel_sinks == 1);
}

TEST_CASE("MCP resumability: a cursor replays only the frames of its own stream") {
  stream_budget b;
  session_stream s;
  const auto a = s.open_channel();              // 1
  const auto c = s.open_channel();              // 2
  const auto g1 = s.publish(msg(3));            // 3: GET stream
  const auto a1 = s.publish_ring_only(msg(4), a.channel);  // 4
  const auto c1 = s.publish_ring_only(msg(5), c.channel);  // 5
  const auto a2 = s.publish_ring_only(msg(6), a.channel);  // 6
  const auto g2 = s.publish(msg(7));            // 7
  const auto af = s.publish_final(msg(8), a.channel);      // 8: ends channel a
  REQUIRE(af == 8);
  SUBCASE("the priming marker: the whole POST stream, its final last, then the end") {
    auto r = attach(s, b, a.priming_id);
    REQUIRE(r.status == attach_status::attached);
    CHECK(r.channel == a.channel);
    const auto got = take_all(*r.sink);
    CHECK(got.ids == std::vector<std::uint64_t>{a1, a2, af});
    CHECK(got.closed);
    CHECK(got.reason == close_reason::completed);
  }
  SUBCASE("a frame of the POST stream: what follows it there") {
    auto r = attach(s, b, a1);
    REQUIRE(r.status == attach_status::attached);
    CHECK(take_all(*r.sink).ids == std::vector<std::uint64_t>{a2, af});
  }
  SUBCASE("a frame of the GET stream: the GET stream only") {
    auto r = attach(s, b, g1);
    REQUIRE(r.status == attach_status::attached);
    CHECK(r.channel == get_channel);
    CHECK(take_ids(*r.sink) == std::vector<std::uint64_t>{g2});
    CHECK(s.stats().live);
  }
  SUBCASE("an open POST stream: its frames so far, then live, then its final ends it") {
    auto r = attach(s, b, c.priming_id);
    REQUIRE(r.status == attach_status::attached);
    auto got = take_all(*r.sink);
    CHECK(got.ids == std::vector<std::uint64_t>{c1});
    CHECK_FALSE(got.closed);
    (void)s.publish(msg(9));                                // GET stream: not here
    (void)s.publish_ring_only(msg(10), a.channel);          // an ended stream: not here
    const auto c2 = s.publish_ring_only(msg(11), c.channel);
    got = take_all(*r.sink);
    CHECK(got.ids == std::vector<std::uint64_t>{c2});
    const auto cf = s.publish_final(msg(12), c.channel);
    got = take_all(*r.sink);
    CHECK(got.ids == std::vector<std::uint64_t>{cf});
    CHECK(got.closed);
    CHECK(got.reason == close_reason::completed);
    CHECK(s.stats().channels_open == 0);
    // Its fence stays current while it writes its last frames (a pass between the final's push
    // and the close must not read as superseded); it goes when the stream detaches.
    CHECK(s.current(r.generation));
    CHECK(s.stats().channel_sinks == 1);
    CHECK(s.detach(*r.sink));
    CHECK(s.stats().channel_sinks == 0);
    CHECK_FALSE(s.current(r.generation));
  }
}

TEST_CASE("MCP resumability: end_channel ends a resumed stream, a second resume supersedes the first") {
  stream_budget b;
  session_stream s;
  const auto a = s.open_channel();
  auto first = attach(s, b, a.priming_id);
  REQUIRE(first.status == attach_status::attached);
  auto second = attach(s, b, a.priming_id);
  REQUIRE(second.status == attach_status::attached);
  CHECK(second.took_over);
  CHECK(first.sink->closed());
  CHECK(first.sink->reason() == close_reason::superseded);
  CHECK_FALSE(s.current(first.generation));
  CHECK(s.current(second.generation));
  CHECK(b.in_use() == 2);  // the superseded sink still holds its lease until its pump lets go
  s.end_channel(a.channel);
  CHECK(second.sink->closed());
  CHECK(second.sink->reason() == close_reason::completed);
  s.end_channel(a.channel);  // idempotent
  s.end_channel(get_channel);  // a no-op
  CHECK(s.stats().channels_open == 0);
}

TEST_CASE("MCP resumability: the GET stream's gap rule counts only its own evicted frames") {
  stream_budget b;
  session_stream s{opts(4)};
  const auto g1 = s.publish(msg(1));  // 1: GET stream
  const auto a = s.open_channel();     // 2
  for (int i = 0; i < 6; ++i) (void)s.publish_ring_only(msg(10), a.channel);  // 3..8 evict 1..4
  REQUIRE(s.stats().oldest_id == 5);
  SUBCASE("the GET cursor's own frame was evicted, but nothing of the GET stream after it") {
    auto r = attach(s, b, g1);
    REQUIRE(r.status == attach_status::attached);
    CHECK(r.channel == get_channel);
    CHECK(take_ids(*r.sink).empty());
  }
  SUBCASE("a POST stream's cursor after an eviction in between is a gap (never silent)") {
    CHECK(attach(s, b, a.priming_id).status == attach_status::gap);
  }
  SUBCASE("a cursor whose frame is gone and whose stream cannot be told is a gap") {
    CHECK(attach(s, b, 3).status == attach_status::gap);
  }
}

TEST_CASE("MCP resumability: session death and poison close resumed POST streams too") {
  stream_budget b;
  session_stream s;
  const auto a = s.open_channel();
  auto r = attach(s, b, a.priming_id);
  REQUIRE(r.status == attach_status::attached);
  SUBCASE("close_sinks") {
    s.close_sinks(close_reason::session_terminated);
    CHECK(r.sink->reason() == close_reason::session_terminated);
  }
  SUBCASE("poison") {
    s.poison();
    CHECK(r.sink->reason() == close_reason::internal_error);
  }
  SUBCASE("detach returns the lease") {
    CHECK(s.detach(*r.sink));
    CHECK(b.in_use() == 0);
    CHECK(s.stats().channel_sinks == 0);
  }
}

TEST_CASE("MCP resumability: at open_channels the oldest open channel is ended") {
  session_stream_options o;
  o.open_channels = 2;
  stream_budget b;
  session_stream s{o};
  const auto a = s.open_channel();
  auto r = attach(s, b, a.priming_id);
  REQUIRE(r.status == attach_status::attached);
  (void)s.open_channel();
  CHECK_FALSE(r.sink->closed());
  (void)s.open_channel();
  CHECK(r.sink->reason() == close_reason::completed);
  CHECK(s.stats().channels_open == 2);
}
