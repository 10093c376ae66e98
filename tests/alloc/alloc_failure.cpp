// SPDX-License-Identifier: Apache-2.0
// Allocation failure in the replay ring and the progress bridge
// (docs/sessions.md#exception-boundaries: "Allocation is done before any state is committed so a
// bad_alloc is a clean 'nothing happened'"): every operation is run once per allocation it makes,
// with that allocation failing (once, and from there on), and afterwards the state must be the
// state before or the state after a clean run, or one of the documented degradations (a frame
// committed but counted dropped for one connection, a final that fell down the final → fallback →
// poison ladder). Ids, pins, charges, leases and gauges are checked after each run, and the state
// is driven to its end and checked empty. Leaks are AddressSanitizer's to find; an exception
// escaping a noexcept boundary terminates the program.
#include "failing_allocator.hpp"
#include "support/header_views.hpp"

#include <mcpcore/dispatch/server.hpp>
#include <mcpcore/dispatch/tool.hpp>
#include <mcpcore/governance/audit.hpp>
#include <mcpcore/governance/clock.hpp>
#include <mcpcore/governance/metrics.hpp>
#include <mcpcore/session/progress_bridge.hpp>
#include <mcpcore/session/session_metrics.hpp>
#include <mcpcore/session/session_registry.hpp>
#include <mcpcore/session/session_stream.hpp>
#include <mcpcore/session/stream_admission.hpp>
#include <mcpcore/session/stream_budget.hpp>
#include <mcpcore/transport/http_endpoint.hpp>
#include <mcpcore/transport/impl/document_pool.ipp>
#include <mcpcore/wire/http.hpp>
#include <mcpcore/wire/jsonrpc.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <functional>
#include <memory>
#include <new>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

using namespace mcpcore;
using namespace std::chrono_literals;
namespace fa = failing_allocator;

namespace {

// ---- the sweep ----------------------------------------------------------------------------------

/// The most allocations one operation may make before the sweep calls it runaway.
constexpr std::uint64_t max_points = 4000;

/// What one armed run did.
struct run {
  std::uint64_t n = 0;  ///< the failing allocation's index
  fa::mode mode = fa::mode::once;
  bool fired = false;   ///< an allocation failed
  bool threw = false;   ///< std::bad_alloc left the operation
};

/// Runs `one(r, armed)` (which builds its world unarmed, calls `armed(op)` for the operation, then
/// checks the world unarmed; `op` itself must allocate nothing but what the library does) for every failing allocation index, in both modes, until a run in
/// which nothing failed: that run is the clean one, and every allocation before it was failed
/// once. Returns how many allocation points the operation has.
struct armed_run {
  run& r;
  /// Calls `op` with the allocator armed; records whether it threw std::bad_alloc.
  template <class Op>
  void operator()(Op&& op) {
    fa::arm(r.n, r.mode);
    try {
      std::forward<Op>(op)();
    } catch (const std::bad_alloc&) {
      r.threw = true;
    }
    r.fired = fa::disarm().fired;
  }
};

template <class One>
std::uint64_t sweep(std::string_view what, One&& one) {
  std::uint64_t points = 0;
  for (const auto mode : {fa::mode::once, fa::mode::sticky}) {
    for (std::uint64_t n = 0;; ++n) {
      run r{n, mode};
      CAPTURE(what);
      CAPTURE(n);
      CAPTURE(mode == fa::mode::sticky);
      one(r, armed_run{r});
      if (!r.fired) {
        CHECK_FALSE(r.threw);
        points = n;
        break;
      }
      REQUIRE_MESSAGE(n < max_points, what << ": more than " << max_points << " allocations");
    }
  }
  if (std::getenv("MCPCORE_ALLOC_TRACE") != nullptr) {
    std::fprintf(stderr, "%.*s: %llu allocation points, each failed once and sticky\n", static_cast<int>(what.size()),
                 what.data(), static_cast<unsigned long long>(points));
  }
  CHECK(points > 0);  // the operation allocates: the sweep tested something
  return points;
}

// ---- the replay ring ----------------------------------------------------------------------------

std::string msg(int i, std::size_t pad = 0) {
  return R"({"jsonrpc":"2.0","method":"notifications/message","params":{"n":)" + std::to_string(i) +
         R"(,"pad":")" + std::string(pad, 'x') + R"("}})";
}
std::string final_for(int id) {
  return R"({"jsonrpc":"2.0","id":)" + std::to_string(id) + R"(,"result":{"content":[]}})";
}

/// A session stream with its metrics and a budget, built before arming.
struct ring_world {
  explicit ring_world(session_stream_options o = small()) : stream(std::move(o), m) {}
  static session_stream_options small() {
    session_stream_options o;
    o.ring_frames = 6;
    o.ring_bytes = 4096;
    o.open_channels = 3;
    return o;
  }
  metrics_registry registry;
  session_metrics m = bind_session_metrics(registry);
  stream_budget budget;
  session_stream stream;
  std::vector<std::shared_ptr<stream_sink>> sinks;  // attached by the test, detached at the end

  std::shared_ptr<stream_sink> attach(std::uint64_t cursor) {
    auto a = stream.attach_and_replay(cursor, budget, "alice");
    REQUIRE(a.status == attach_status::attached);
    sinks.push_back(a.sink);
    stream_sink::batch b;
    a.sink->take(b);  // the replay is not what the test looks at
    return a.sink;
  }
};

/// The parts of a stream's state a failed operation must leave alone.
struct ring_state {
  std::uint64_t next_id, oldest_id;
  std::size_t frames, bytes;
  std::array<std::uint64_t, max_pinned_finals> pins;
  bool live, draining, poisoned;
  std::uint64_t generation;
  std::size_t channels_open, channel_sinks;
  std::int64_t streams_active, handover;
  std::size_t leases;
  friend bool operator==(const ring_state&, const ring_state&) = default;
};
std::ostream& operator<<(std::ostream& os, const ring_state& s) {
  os << "{next " << s.next_id << " oldest " << s.oldest_id << " frames " << s.frames << " bytes " << s.bytes << " pins";
  for (const auto p : s.pins) os << ' ' << p;
  return os << " live " << s.live << " draining " << s.draining << " poisoned " << s.poisoned << " gen "
            << s.generation << " channels " << s.channels_open << '/' << s.channel_sinks << " streams "
            << s.streams_active << " handover " << s.handover << " leases " << s.leases << '}';
}
ring_state state_of(const ring_world& w) {
  const auto st = w.stream.stats();
  auto pins = st.pins;
  std::sort(pins.begin(), pins.end());
  return {st.next_id,      st.oldest_id,     st.frames,     st.bytes,
          pins,            st.live,          st.draining,   st.poisoned,
          st.generation,   st.channels_open, st.channel_sinks, w.m.streams_active.value(),
          w.m.streams_handover_pending.value(), w.budget.in_use()};
}

/// The stream's invariants, checked through a fresh attach of every channel from its start:
/// ids strictly increase, every held frame lies in [oldest, next), pins name held frames, the
/// GET stream's frames are consecutive where nothing pinned interrupts them; then every sink is
/// detached and no lease or gauge is left.
void check_ring(ring_world& w) {
  const auto st = w.stream.stats();
  CHECK(st.frames <= w.stream.options().ring_frames + max_pinned_finals);
  for (const auto p : st.pins) {
    if (p == 0) continue;
    CHECK(p >= st.oldest_id);
    CHECK(p < st.next_id);
  }
  for (const auto& s : w.sinks) (void)w.stream.detach(*s);
  w.sinks.clear();
  if (!st.poisoned) {
    stream_budget own;
    auto a = w.stream.attach_and_replay(0, own, "checker");
    REQUIRE(a.status == attach_status::attached);
    stream_sink::batch b;
    a.sink->take(b);
    std::uint64_t last = 0;
    for (const auto& f : b.frames) {
      CHECK(f.id > last);
      CHECK(f.id >= st.oldest_id);
      CHECK(f.id < st.next_id);
      CHECK_FALSE(f.data.empty());
      last = f.id;
    }
    CHECK(b.dropped == 0);
    CHECK(w.stream.detach(*a.sink));
    CHECK(own.in_use() == 0);
  }
  CHECK(w.budget.in_use() == 0);
  CHECK(w.m.streams_active.value() == 0);
  CHECK(w.m.streams_handover_pending.value() == 0);
  // The next publish gets the next id: a failure consumed none (no holes).
  const auto next = w.stream.stats().next_id;
  CHECK(w.stream.publish(msg(99)) == next);
}

/// What a sink received since the last look: the frames' ids and the drop count.
struct received {
  std::vector<std::uint64_t> ids;
  std::uint64_t dropped = 0;
  bool closed = false;
  close_reason reason = close_reason::none;
};
received take(const std::shared_ptr<stream_sink>& s) {
  stream_sink::batch b;
  s->take(b);
  received r;
  for (const auto& f : b.frames) r.ids.push_back(f.id);
  r.dropped = b.dropped;
  r.closed = b.closed;
  r.reason = b.reason;
  return r;
}

// A publish either commits (the next id, the frame in the ring, the live sink given it or told it
// was dropped) or fails before the commit (0, nothing changed, counted).
template <class Setup, class Publish>
void sweep_publish(std::string_view what, Setup setup, Publish publish, bool pins_final) {
  // The clean run, for the state after.
  ring_state after{};
  {
    ring_world w;
    auto sink = setup(w);
    (void)publish(w);
    after = state_of(w);
  }
  sweep(what, [&](run& r, armed_run armed) {
    ring_world w;
    auto sink = setup(w);
    const ring_state before = state_of(w);
    const auto failures_before = w.m.publish_failures.value();
    std::uint64_t id = 0;
    armed([&] { id = publish(w); });
    CHECK_FALSE(r.threw);  // noexcept
    const ring_state now = state_of(w);
    const received got = sink ? take(sink) : received{};
    if (id == 0) {
      CHECK(now == before);
      CHECK(w.m.publish_failures.value() == failures_before + 1);
      CHECK(got.ids.empty());
      CHECK(got.dropped == 0);
      CHECK_FALSE(got.closed);
    } else {
      CHECK(id == before.next_id);
      CHECK(now == after);
      CHECK(w.m.publish_failures.value() == failures_before);
      if (sink) {
        // Delivered, or committed and reported dropped on this connection (still replayable).
        const bool delivered = got.ids == std::vector<std::uint64_t>{id} && got.dropped == 0;
        const bool dropped = got.ids.empty() && got.dropped == 1 && w.m.frames_dropped.value() == 1;
        CHECK_MESSAGE((delivered || dropped), "ids " << got.ids.size() << " dropped " << got.dropped);
        if (pins_final) {
          CHECK(got.closed);  // a final ends its resumed POST stream
          CHECK(got.reason == close_reason::completed);
        }
      }
    }
    if (id == 0 && pins_final && sink) CHECK_FALSE(sink->closed());
    check_ring(w);
  });
}

// ---- the progress bridge ------------------------------------------------------------------------

const request_id token{std::string{"tok"}};

/// A registry, a bridge and a budget on a manual clock, with metrics and an audit trail.
struct bridge_world {
  explicit bridge_world(progress_bridge_options o = {})
      : registry(session_registry_options{}, clock_ref<manual_clock>{clk}, m),
        bridge(registry, o, clock_ref<manual_clock>{clk}, m) {
    registry.set_audit(audit);
    bridge.set_audit(audit);
    auto minted = registry.mint("alice");
    REQUIRE(minted.has_value());
    s = *minted;
  }
  manual_clock clk;
  metrics_registry metrics;
  session_metrics m = bind_session_metrics(metrics);
  memory_audit_sink audit;
  session_registry registry;
  progress_bridge bridge;
  stream_budget budget;
  std::shared_ptr<session> s;
  std::deque<progress_call> calls;  // references stay valid as calls are added

  progress_call& reserve(std::int64_t id, bool streamed) {
    auto r = bridge.reserve(s, request_id{id}, token, streamed);
    REQUIRE(r.has_value());
    calls.push_back(*r);
    return calls.back();
  }
  // A streamed record armed on its own POST channel.
  progress_call& streaming(std::int64_t id) {
    auto& c = reserve(id, true);
    const auto ch = s->stream()->open_channel();
    REQUIRE(c.arm(bridge_delivery::streamed, ch.channel) == arm_outcome::streaming);
    return c;
  }
  [[nodiscard]] std::size_t pins() const {
    const auto st = s->stream()->stats();
    return static_cast<std::size_t>(std::count_if(st.pins.begin(), st.pins.end(), [](std::uint64_t p) { return p != 0; }));
  }
};

/// The bridge's bookkeeping, as far as it can be seen from outside.
struct bridge_state {
  std::size_t records, parked, charges, pins;
  std::int64_t records_gauge;
  bool poisoned;
  std::uint64_t next_id;
  std::vector<bridge_record_state> states;
  std::size_t leases;
  friend bool operator==(const bridge_state&, const bridge_state&) = default;
};
std::ostream& operator<<(std::ostream& os, const bridge_state& b) {
  os << "{records " << b.records << " parked " << b.parked << " charges " << b.charges << " pins " << b.pins
     << " gauge " << b.records_gauge << " poisoned " << b.poisoned << " next " << b.next_id << " leases " << b.leases
     << " states";
  for (const auto st : b.states) os << ' ' << to_string(st);
  return os << '}';
}
bridge_state state_of(const bridge_world& w) {
  std::vector<bridge_record_state> states;
  for (const auto& c : w.calls) states.push_back(c.state_now());
  return {w.bridge.records(), w.bridge.parked(), w.bridge.charges(w.s->id()), w.pins(),
          w.m.bridge_records_active.value(), w.s->stream()->poisoned(), w.s->stream()->stats().next_id,
          std::move(states), w.budget.in_use()};
}

/// Invariants that hold after any operation: the gauge is the count, charges fit the pin slots,
/// pins name frames; then the world is driven to its end (every POST closed, every record given
/// a terminal, swept, shut down) and nothing may be left: no record, charge, lease or gauge.
void check_bridge(bridge_world& w) {
  CHECK(w.m.bridge_records_active.value() == static_cast<std::int64_t>(w.bridge.records()));
  CHECK(w.bridge.charges(w.s->id()) + w.pins() <= max_pinned_finals);  // admission's accounting (docs/sessions.md#pinned-finals)
  const auto st = w.s->stream()->stats();
  for (const auto p : st.pins) {
    if (p == 0) continue;
    CHECK(p >= st.oldest_id);
    CHECK(p < st.next_id);
  }
  for (auto& c : w.calls) {
    c.abandon();
    (void)c.complete_without_response();
    c.on_post_closed();
  }
  w.bridge.sweep();
  w.clk.advance(std::chrono::hours{1});
  w.bridge.sweep();
  CHECK(w.bridge.charges(w.s->id()) == 0);
  w.bridge.shutdown();
  CHECK(w.bridge.records() == 0);
  CHECK(w.m.bridge_records_active.value() == 0);
  CHECK(w.bridge.charges(w.s->id()) == 0);
  CHECK(w.budget.in_use() == 0);
  // Every audit row was written or counted as lost
  // (docs/security.md#audit-and-the-one-cid-pattern).
  (void)w.registry.terminate_all();
}

std::string success(std::int64_t id) { return final_for(static_cast<int>(id)); }

// A detached call's final as `operation_handle::finish` hands it to the record; the text is long
// enough to be allocated (not in a string's small buffer).
operation_final finished(std::string_view what = "the work finished with 2 agents succeeded, 0 failed") {
  operation_final f;
  f.result_json = R"({"content":[{"type":"text","text":")" + std::string{what} + R"("}]})";
  return f;
}

// ---- the HTTP endpoint --------------------------------------------------------------------------

struct one_principal {
  [[nodiscard]] std::optional<principal> authenticate(const http_request_view& /*req*/) const {
    return principal{.id = "alice"};
  }
  [[nodiscard]] credential_verdict revalidate(const principal& /*p*/) const noexcept {
    return credential_verdict::valid;
  }
};

/// A server with one read tool behind an endpoint without an executor (answers inline).
struct http_world {
  http_world() : srv(make()), ep(srv, one_principal{}) {}
  explicit http_world(const http_endpoint_options& o) : srv(make()), ep(srv, one_principal{}, o) {}
  static server make() {
    server_builder b{{.name = "alloc", .version = "1"}};
    b.tool("echo").description("Echoes.").security("Thing", operation::read).effect(tool_effect::read_only, true)
        .handler([](call_context&, const arguments&) { return tool_result::text("echoed"); });
    b.tool("report").description("Reports progress.").security("Thing", operation::read)
        .effect(tool_effect::read_only, true)
        .handler([](call_context& ctx, const arguments&) {
          (void)ctx.progress(1, 2, "half");
          return tool_result::text("reported");
        });
    auto r = b.build();
    REQUIRE(r.has_value());
    return std::move(*r);
  }
  server srv;
  http_endpoint ep;
};

struct owned_request {
  std::string body;
  std::vector<http_header> headers;
  test_support::header_views fields{};  // built once by post(): a view allocates nothing
  [[nodiscard]] http_request_view view() const {
    http_request_view v;
    v.method = "POST";
    v.target = "/mcp";
    v.body = body;
    v.headers = fields.of(headers);
    v.remote = "127.0.0.1:50000";
    v.local = parse_local_address("127.0.0.1:8765");
    return v;
  }
};
constexpr std::string_view initialize_body =
    R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25",)"
    R"("capabilities":{},"clientInfo":{"name":"t","version":"1"}}})";

owned_request post(std::string body, std::string session = {}, bool sse = false) {
  owned_request r;
  r.body = std::move(body);
  r.headers = {{"Host", "localhost:8765"},
               {"Content-Type", "application/json"},
               {"Accept", sse ? "application/json, text/event-stream" : "application/json"}};
  if (!session.empty()) r.headers.push_back({"Mcp-Session-Id", std::move(session)});
  (void)r.view();  // the header views, before any armed allocation
  return r;
}

}  // namespace

TEST_SUITE("allocation failure") {

// ---- replay ring (docs/sessions.md#the-replay-ring, #pinned-finals, #exception-boundaries)
// ---------------------------------------------------

TEST_CASE("sessions.md/exception-boundaries, sessions.md/the-replay-ring: publish to the ring and the live GET sink commits whole or not at all, with eviction") {
  sweep_publish(
      "session_stream::publish (live sink, full ring)",
      [](ring_world& w) {
        for (int i = 0; i < 6; ++i) REQUIRE(w.stream.publish(msg(i)) != 0);
        return w.attach(0);
      },
      [m = msg(10)](ring_world& w) { return w.stream.publish(m); }, false);
}

TEST_CASE("sessions.md/exception-boundaries, sessions.md/the-replay-ring: an oversized frame's notice is built before the commit") {
  sweep_publish(
      "session_stream::publish (frame_too_large notice)",
      [](ring_world& w) {
        REQUIRE(w.stream.publish(msg(0)) != 0);
        return w.attach(0);
      },
      [m = msg(1, 5000)](ring_world& w) { return w.stream.publish(m); }, false);
}

TEST_CASE("sessions.md/exception-boundaries: publish_ring_only to a resumed POST stream commits whole or not at all") {
  sweep_publish(
      "session_stream::publish_ring_only (resumed POST stream)",
      [](ring_world& w) {
        const auto ch = w.stream.open_channel();
        REQUIRE(ch.priming_id != 0);
        REQUIRE(w.stream.publish_ring_only(msg(0), ch.channel) != 0);
        return w.attach(ch.priming_id);
      },
      [m = msg(1)](ring_world& w) { return w.stream.publish_ring_only(m, 1); }, false);
}

TEST_CASE("sessions.md/exception-boundaries, sessions.md/pinned-finals: publish_final pins only what it committed, displaces a pin and ends its stream only then") {
  sweep_publish(
      "session_stream::publish_final (pins full, resumed POST stream)",
      [](ring_world& w) {
        const auto ch = w.stream.open_channel();
        REQUIRE(ch.priming_id != 0);
        for (int i = 0; i < 4; ++i) REQUIRE(w.stream.publish_final(final_for(i)) != 0);  // four GET pins
        return w.attach(ch.priming_id);
      },
      [m = final_for(9)](ring_world& w) { return w.stream.publish_final(m, 1); }, true);
}

TEST_CASE("sessions.md/exception-boundaries, sessions.md/get-attach-replay-resume: attach_and_replay either attaches (sink, lease, gauge, replay) or changes nothing") {
  for (const bool takeover : {false, true}) {
    CAPTURE(takeover);
    const auto setup = [&](ring_world& w) -> std::shared_ptr<stream_sink> {
      for (int i = 0; i < 4; ++i) REQUIRE(w.stream.publish(msg(i)) != 0);
      REQUIRE(w.stream.publish_final(final_for(1)) != 0);  // a pinned final on the GET stream
      return takeover ? w.attach(0) : nullptr;
    };
    sweep(takeover ? "session_stream::attach_and_replay (takeover)" : "session_stream::attach_and_replay (first)",
          [&](run& r, armed_run armed) {
            ring_world w;
            const auto old = setup(w);
            const ring_state before = state_of(w);
            std::optional<attach_result> a;
            armed([&] { a.emplace(w.stream.attach_and_replay(0, w.budget, "alice")); });
            if (r.threw) {
              CHECK(state_of(w) == before);  // @throws std::bad_alloc before anything changed
              if (old) CHECK_FALSE(old->closed());
            } else {
              REQUIRE(a.has_value());
              REQUIRE(a->status == attach_status::attached);
              w.sinks.push_back(a->sink);
              const auto now = state_of(w);
              CHECK(now.live);
              CHECK(now.leases == before.leases + 1);
              CHECK(now.streams_active == before.streams_active + 1);
              CHECK(now.draining == takeover);
              CHECK(now.handover == (takeover ? 1 : 0));
              const received got = take(a->sink);
              CHECK(got.ids.size() + got.dropped == a->replayed);  // a failed copy is reported dropped
              CHECK(a->replayed == 5);
              if (old) {
                CHECK(old->closed());
                CHECK(old->reason() == close_reason::superseded);
              }
            }
            check_ring(w);
          });
  }
}

TEST_CASE("sessions.md/exception-boundaries: open_channel at the cap ends the oldest stream only when the new one opened") {
  sweep("session_stream::open_channel (at the cap)", [&](run& r, armed_run armed) {
    ring_world w;  // open_channels = 3
    std::vector<opened_channel> open;
    for (int i = 0; i < 3; ++i) {
      open.push_back(w.stream.open_channel());
      REQUIRE(open.back().priming_id != 0);
    }
    const auto oldest = w.attach(open[0].priming_id);  // a client resumed the oldest POST stream
    const ring_state before = state_of(w);
    opened_channel got;
    armed([&] { got = w.stream.open_channel(); });
    CHECK_FALSE(r.threw);
    CHECK(got.channel == open.back().channel + 1);  // the channel is taken whatever fails
    const ring_state now = state_of(w);
    if (got.priming_id == 0) {
      // Nothing opened: nothing ended to make room, and the marker took no id.
      CHECK(now == before);
      CHECK_FALSE(oldest->closed());
      CHECK(w.stream.publish_ring_only(msg(1), open[0].channel) != 0);
      CHECK(take(oldest).ids.size() == 1);  // the oldest stream still gets its frames
    } else {
      CHECK(got.priming_id == before.next_id);
      CHECK(now.channels_open == 3);
      CHECK(oldest->closed());
      CHECK(oldest->reason() == close_reason::completed);
    }
    check_ring(w);
  });
}

// ---- progress bridge (docs/sessions.md#streamed-post-admission, #progress-records,
// #exception-boundaries) -----------------------------------------

TEST_CASE("sessions.md/exception-boundaries, sessions.md/streamed-post-admission: a reservation either exists whole (record, gauge, charge) or not at all") {
  for (const bool streamed : {false, true}) {
    CAPTURE(streamed);
    sweep(streamed ? "progress_bridge::reserve (streamed)" : "progress_bridge::reserve (GET-only)",
          [&](run& r, armed_run armed) {
            bridge_world w;
            const bridge_state before = state_of(w);
            std::optional<result<progress_call, bridge_refusal>> got;
            armed([&] { got.emplace(w.bridge.reserve(w.s, request_id{7}, token, streamed)); });
            if (r.threw) {
              CHECK(state_of(w) == before);
            } else {
              REQUIRE(got.has_value());
              REQUIRE(got->has_value());
              w.calls.push_back(**got);
              CHECK(w.bridge.records() == 1);
              CHECK(w.bridge.charges(w.s->id()) == (streamed ? 1 : 0));
            }
            // No leftover: the same id is reservable (or, when it exists, a duplicate).
            auto again = w.bridge.reserve(w.s, request_id{7}, token, streamed);
            CHECK(again.has_value() == r.threw);
            if (again) w.calls.push_back(*again);
            check_bridge(w);
          });
  }
}

TEST_CASE("sessions.md/exception-boundaries, sessions.md/pinned-finals: an admission that reclaims a pin unpins only after its reservation committed") {
  for (const bool parked_victim : {false, true}) {
    CAPTURE(parked_victim);
    const auto setup = [&](bridge_world& w) {
      if (parked_victim) {
        // Four parked records whose finals stay pinned for a GET resume.
        for (std::int64_t id = 1; id <= 4; ++id) {
          auto& c = w.streaming(id);
          REQUIRE(c.complete(success(id)));
          c.on_post_closed();
          REQUIRE(c.state_now() == bridge_record_state::ring_only);
        }
      } else {
        for (int i = 0; i < 4; ++i) REQUIRE(w.s->stream()->publish_final(final_for(100 + i)) != 0);  // orphans
      }
      REQUIRE(w.pins() == 4);
    };
    sweep(parked_victim ? "progress_bridge::reserve (reclaims a parked final)" : "progress_bridge::reserve (reclaims an orphan pin)",
          [&](run& r, armed_run armed) {
            bridge_world w;
            setup(w);
            const bridge_state before = state_of(w);
            const auto rows_before = w.audit.entries().size();
            const auto lost_before = w.m.audit_failures.value();
            std::optional<result<progress_call, bridge_refusal>> got;
            armed([&] { got.emplace(w.bridge.reserve(w.s, request_id{9}, token, true)); });
            if (r.threw) {
              CHECK(state_of(w) == before);  // the pin is still there: nothing was reclaimed
              CHECK(w.m.pin_displaced_for_admission.value() == 0);
            } else {
              REQUIRE(got.has_value());
              REQUIRE(got->has_value());
              w.calls.push_back(**got);
              CHECK(w.pins() == 3);
              CHECK(w.bridge.charges(w.s->id()) == 1);
              CHECK(w.m.pin_displaced_for_admission.value() == 1);
              // The row, or the count of its loss (docs/security.md#audit-and-the-one-cid-pattern).
              const auto rows = w.audit.entries().size() - rows_before;
              const auto lost = w.m.audit_failures.value() - lost_before;
              CHECK(rows + lost == 1);
              if (parked_victim) CHECK(w.calls[0].state_now() == bridge_record_state::done);
            }
            check_bridge(w);
          });
  }
}

TEST_CASE("sessions.md/exception-boundaries, sessions.md/streamed-post-admission: admit_post never throws, and a throw inside returns its lease and its record") {
  sweep("admit_post (streamed)", [&](run& r, armed_run armed) {
    bridge_world w;
    std::optional<post_admission> a;
    armed([&] { a.emplace(admit_post(post_mode::streamed, w.budget, w.bridge, w.s, request_id{3}, token, w.m)); });
    CHECK_FALSE(r.threw);
    REQUIRE(a.has_value());
    CHECK_FALSE(a->refusal.has_value());
    if (a->mode == post_mode::streamed) {
      REQUIRE(a->call.has_value());
      CHECK(static_cast<bool>(a->lease));
      CHECK(w.budget.in_use() == 1);
      CHECK(w.bridge.records() == 1);
      w.calls.push_back(*a->call);
      a->lease.release();
    } else {
      CHECK(a->mode == post_mode::plain);
      CHECK(a->degraded == bridge_degrade::reserve_threw);
      CHECK(w.budget.in_use() == 0);
      CHECK(w.bridge.records() == 0);
      CHECK(w.m.bridge_records_active.value() == 0);
    }
    check_bridge(w);
  });
}

TEST_CASE("sessions.md/exception-boundaries, sessions.md/streamed-post-admission, sessions.md/projection-and-finals: arm projects what was latched: every frame is committed or counted, the final settles") {
  sweep("progress_call::arm (streamed, progress + message + final latched)", [&](run& r, armed_run armed) {
    bridge_world w;
    auto& c = w.reserve(1, true);
    c.set_execution_id("exec-1");
    REQUIRE_FALSE(c.progress(1, 4, "one"));
    REQUIRE_FALSE(c.message(msg(1)));
    REQUIRE(c.complete(success(1)));
    const auto ch = w.s->stream()->open_channel();
    const auto next_before = w.s->stream()->stats().next_id;
    arm_outcome out = arm_outcome::not_armed;
    armed([&] { out = c.arm(bridge_delivery::streamed, ch.channel); });
    CHECK_FALSE(r.threw);
    CHECK(out == arm_outcome::streaming);
    CHECK(w.bridge.charges(w.s->id()) == 0);  // the final settled: pinned, pinless or poisoned
    post_batch b;
    c.take(b, false);
    std::uint64_t last = 0;
    for (const auto& f : b.frames) {
      CHECK(f.id > last);
      CHECK(f.id >= next_before);
      last = f.id;
    }
    if (w.s->stream()->poisoned()) {
      CHECK_FALSE(b.final_included);
      CHECK(c.wake_sink()->closed());
    } else if (b.final_included) {
      CHECK(w.s->stream()->pinned(b.frames.back().id));
      c.on_final_written();
      CHECK_FALSE(w.s->stream()->pinned(b.frames.back().id));
      CHECK(c.state_now() == bridge_record_state::done);
    } else {
      CHECK(w.pins() == 1);  // committed and pinned, but not handed to the pump: resumable on GET
    }
    check_bridge(w);
  });
}

TEST_CASE("sessions.md/exception-boundaries, sessions.md/projection-and-finals: progress is committed or not, the watermark moves only with a commit") {
  sweep("progress_call::progress (GET-only, live GET sink)", [&](run& /*r*/, armed_run armed) {
    bridge_world w;
    auto& c = w.reserve(1, false);
    REQUIRE(c.arm(bridge_delivery::get_only) == arm_outcome::get_only);
    auto a = w.s->stream()->attach_and_replay(0, w.budget, "alice");
    REQUIRE(a.status == attach_status::attached);
    const auto next_before = w.s->stream()->stats().next_id;
    bool committed = false;
    armed([&] { committed = c.progress(2, 10, "two"); });
    const auto next_after = w.s->stream()->stats().next_id;
    CHECK(committed == (next_after == next_before + 1));
    if (!committed) CHECK(next_after == next_before);
    // Not committed: the same value goes later (the watermark did not move); committed: it does not.
    CHECK(c.progress(2, 10, "two again") == !committed);
    CHECK(c.progress(3, 10, "three"));
    (void)w.s->stream()->detach(*a.sink);
    check_bridge(w);
  });
}

TEST_CASE("sessions.md/exception-boundaries, sessions.md/projection-and-finals: finish before the call returned accepts the terminal only when it could keep it") {
  sweep("progress_call::finish (detached, before defer)", [&](run& r, armed_run armed) {
    bridge_world w;
    auto& c = w.streaming(1);
    c.mark_detached();
    bool accepted = false;
    armed([&] { accepted = c.finish(finished()); });
    CHECK(accepted != r.threw);
    // A terminal that threw was not accepted: the worker's retry is.
    if (r.threw) CHECK(c.finish(finished()));
    CHECK_FALSE(c.finish(finished("again")));  // exactly one terminal
    c.defer(success(1));
    post_batch b;
    c.take(b, false);
    CHECK(b.final_included);  // the final was published once the call returned
    CHECK(w.bridge.charges(w.s->id()) == 0);
    check_bridge(w);
  });
}

TEST_CASE("sessions.md/exception-boundaries, sessions.md/projection-and-finals: finish after defer, and complete: one terminal, down the ladder if it must") {
  for (const bool deferred : {false, true}) {
    CAPTURE(deferred);
    sweep(deferred ? "progress_call::finish (after defer)" : "progress_call::complete",
          [&](run& r, armed_run armed) {
            bridge_world w;
            auto& c = w.streaming(1);
            c.set_execution_id("exec-1");
            if (deferred) {
              c.mark_detached();
              c.defer(success(1));
            }
            std::string response = success(1);
            bool accepted = false;
            armed([&] { accepted = deferred ? c.finish(finished()) : c.complete(std::move(response)); });
            CHECK(accepted != r.threw);
            if (r.threw) {
              CHECK(w.bridge.charges(w.s->id()) == 1);  // nothing latched: the charge is still held
              CHECK(deferred ? c.finish(finished()) : c.complete(success(1)));
            }
            CHECK_FALSE(c.complete(success(1)));
            post_batch b;
            c.take(b, false);
            CHECK(w.bridge.charges(w.s->id()) == 0);  // the final settled
            if (w.s->stream()->poisoned()) {
              CHECK_FALSE(b.final_included);  // the whole ladder failed: poisoned, never silent
            } else {
              CHECK((b.final_included || w.pins() == 1));
            }
            check_bridge(w);
          });
  }
}

TEST_CASE("sessions.md/exception-boundaries, sessions.md/projection-and-finals: defer after an early finish publishes the final, or leaves the terminal waiting for a retry") {
  sweep("progress_call::defer (after an early finish)", [&](run& r, armed_run armed) {
    bridge_world w;
    auto& c = w.streaming(1);
    c.set_execution_id("exec-1");
    c.mark_detached();
    REQUIRE(c.finish(finished()));
    std::string base = success(1);
    armed([&] { c.defer(std::move(base)); });
    if (r.threw) {
      CHECK(w.bridge.charges(w.s->id()) == 1);  // nothing latched
      c.defer(success(1));                       // the transport's call, once more
    }
    post_batch b;
    c.take(b, false);
    CHECK(w.bridge.charges(w.s->id()) == 0);
    CHECK((b.final_included || w.pins() == 1 || w.s->stream()->poisoned()));
    check_bridge(w);
  });
}

TEST_CASE("sessions.md/exception-boundaries, sessions.md/progress-records: an in-call message is queued and committed, or not at all") {
  sweep("progress_call::message (streaming)", [&](run& r, armed_run armed) {
    bridge_world w;
    auto& c = w.streaming(1);
    const std::string text = msg(1, 40);
    const auto next_before = w.s->stream()->stats().next_id;
    bool committed = false;
    armed([&] { committed = c.message(text); });
    const auto next_after = w.s->stream()->stats().next_id;
    CHECK(committed == (next_after == next_before + 1));
    if (r.threw) CHECK(next_after == next_before);
    post_batch b;
    c.take(b, false);
    CHECK(b.frames.size() <= (committed ? 1U : 0U));  // committed but not handed over: counted dropped
    CHECK(c.message(text));
    check_bridge(w);
  });
}

TEST_CASE("sessions.md/exception-boundaries, sessions.md/streamed-post: a pump's take either hands over the frames or leaves them for the next take") {
  sweep("progress_call::take (cap expired)", [&](run& r, armed_run armed) {
    bridge_world w;
    auto& c = w.streaming(1);
    REQUIRE(c.progress(1, 4));
    REQUIRE(c.progress(2, 4));
    post_batch b;
    armed([&] { c.take(b, true); });
    if (r.threw) {
      post_batch again;
      c.take(again, true);
      CHECK(again.frames.size() == 2);
    } else {
      CHECK(b.frames.size() == 2);
    }
    check_bridge(w);
  });
}

TEST_CASE("sessions.md/exception-boundaries, sessions.md/the-sweep: the sweep never throws: records are reaped, parked or expired whole, counts stay true") {
  sweep("progress_bridge::sweep (reap, stranded, dead session, pressure)", [&](run& r, armed_run armed) {
    progress_bridge_options o;
    o.parked_pressure_threshold = 1;
    o.streaming_park_after = 1s;
    bridge_world w{o};
    auto& done = w.reserve(1, false);  // done: reaped
    REQUIRE(done.arm(bridge_delivery::get_only) == arm_outcome::get_only);
    REQUIRE(done.complete(success(1)));
    (void)w.reserve(2, false);  // arming, stale: reaped
    // Parked records above the threshold: one with a terminal but no final (fallback), one
    // without a terminal (-32014), one with its final pinned.
    auto& fallback = w.streaming(3);
    fallback.mark_detached();
    REQUIRE(fallback.finish(finished()));  // before its call returned: no final yet
    fallback.on_post_closed();
    auto& silent = w.streaming(4);
    silent.on_post_closed();
    auto& pinned = w.streaming(5);
    REQUIRE(pinned.complete(success(5)));
    pinned.on_post_closed();
    REQUIRE(w.bridge.parked() == 3);
    (void)w.streaming(6);  // streaming, its response never released it: parked by the sweep
    // A record of a session that died: torn down.
    auto other = w.registry.mint("bob");
    REQUIRE(other.has_value());
    auto orphaned = w.bridge.reserve(*other, request_id{7}, token, false);
    REQUIRE(orphaned.has_value());
    w.calls.push_back(*orphaned);
    REQUIRE(w.calls.back().arm(bridge_delivery::get_only) == arm_outcome::get_only);
    REQUIRE(w.registry.terminate((*other)->id(), "bob"));
    w.clk.advance(o.arming_reap_after + 1s);
    const auto failures_before = w.m.bridge_sweep_failures.value();
    armed([&] { w.bridge.sweep(); });
    CHECK_FALSE(r.threw);
    CHECK(w.m.bridge_records_active.value() == static_cast<std::int64_t>(w.bridge.records()));
    if (w.m.bridge_sweep_failures.value() == failures_before) {
      CHECK(w.bridge.records() == 1);  // the pressure pass left one parked record, the newest
      CHECK(w.bridge.parked() == 1);
      CHECK(w.calls[5].state_now() == bridge_record_state::ring_only);
      CHECK(w.m.streaming_backstop.value() == 1);
    }
    // The next tick finishes the job.
    w.bridge.sweep();
    CHECK(w.bridge.parked() <= 1);
    CHECK(w.m.bridge_records_active.value() == static_cast<std::int64_t>(w.bridge.records()));
    check_bridge(w);
  });
}

TEST_CASE("sessions.md/exception-boundaries, sessions.md/shutdown: shutdown clears every record, and the stream of an undelivered terminal is poisoned") {
  sweep("progress_bridge::shutdown", [&](run& r, armed_run armed) {
    bridge_world w;
    (void)w.streaming(1);  // in flight: poisons
    (void)w.reserve(2, false);
    const auto lost_before = w.m.audit_failures.value();
    const auto rows_before = w.audit.entries().size();
    armed([&] { w.bridge.shutdown(); });
    CHECK_FALSE(r.threw);
    CHECK(w.bridge.records() == 0);
    CHECK(w.m.bridge_records_active.value() == 0);
    CHECK(w.bridge.charges(w.s->id()) == 0);
    // Best effort (docs/sessions.md#shutdown): only memory that stays exhausted can cost the
    // poisoning.
    CHECK((w.s->stream()->poisoned() || (r.fired && r.mode == fa::mode::sticky)));
    CHECK(w.audit.entries().size() - rows_before + (w.m.audit_failures.value() - lost_before) == 1);
    check_bridge(w);
  });
}


// ---- the HTTP endpoint (docs/sessions.md#exception-boundaries; http_endpoint::handle: "never
// throws except on allocation failure before done was called")
// -------------------------------------------------

TEST_CASE("sessions.md/exception-boundaries: http_endpoint::handle of a POST answers exactly once, or throws bad_alloc before answering") {
  for (const bool with_session : {false, true}) {
    CAPTURE(with_session);
    sweep(with_session ? "http_endpoint::handle (tools/call, in a session)" : "http_endpoint::handle (tools/call, stateless)",
          [&](run& r, armed_run armed) {
            http_world w;
            std::string sid;
            if (with_session) {
              const auto init = post(std::string{initialize_body});
              w.ep.handle(init.view(), [&](http_reply reply) {
                sid = std::string{reply.head.header("Mcp-Session-Id").value_or("")};
              });
              REQUIRE(sid.size() == session_id_length);
            }
            const auto call = post(R"({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo"}})", sid);
            int answers = 0;
            int status = 0;
            // Owned outside the armed region: the completion itself allocates nothing.
            http_completion done = [&](http_reply reply) {
              ++answers;
              status = reply.head.status;
            };
            armed([&] { w.ep.handle(call.view(), done); });
            CHECK(answers == (r.threw ? 0 : 1));
            if (answers == 1) CHECK((status == 200 || status == 500 || status == 503));
            // The endpoint still serves.
            int after = 0;
            w.ep.handle(call.view(), [&](http_reply reply) {
              ++after;
              CHECK(reply.head.status == 200);
            });
            CHECK(after == 1);
          });
  }
}


TEST_CASE("sessions.md/exception-boundaries, http.md/post: initialize over HTTP mints a session the client is told of, or none") {
  sweep("http_endpoint::handle (initialize)", [&](run& r, armed_run armed) {
    http_world w;
    const auto init = post(std::string{initialize_body});
    int answers = 0;
    int status = 0;
    bool has_session = false;
    http_completion done = [&](http_reply reply) {
      ++answers;
      status = reply.head.status;
      has_session = reply.head.header("Mcp-Session-Id").has_value();
    };
    armed([&] { w.ep.handle(init.view(), done); });
    CHECK(answers == (r.threw ? 0 : 1));
    if (has_session) {
      CHECK(status == 200);
      CHECK(w.ep.sessions().size() == 1);
    } else if (w.ep.sessions().size() != 0) {
      // Only memory that stays exhausted (the cleanup cannot allocate either) leaves a session the
      // client was not told of, to the idle collection.
      CHECK(r.mode == fa::mode::sticky);
      CHECK(w.ep.sessions().size() == 1);
    }
    int after = 0;
    w.ep.handle(init.view(), [&](http_reply reply) {
      ++after;
      CHECK(reply.head.status == 200);
    });
    CHECK(after == 1);
  });
}

TEST_CASE("sessions.md/exception-boundaries, sessions.md/streamed-post-admission, sessions.md/streamed-post: a streamed tools/call over HTTP is admitted and answered once, or cleanly not") {
  sweep("http_endpoint::handle (streamed tools/call with progress)", [&](run& r, armed_run armed) {
    http_world w;
    std::string sid;
    w.ep.handle(post(std::string{initialize_body}).view(), [&](http_reply reply) {
      sid = std::string{reply.head.header("Mcp-Session-Id").value_or("")};
    });
    REQUIRE(sid.size() == session_id_length);
    const auto call = post(R"({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"report",)"
                           R"("_meta":{"progressToken":"p1"}}})",
                           sid, true);
    int answers = 0;
    std::optional<http_reply> got;
    http_completion done = [&](http_reply reply) {
      ++answers;
      got.emplace(std::move(reply));
    };
    armed([&] { w.ep.handle(call.view(), done); });
    CHECK(answers == (r.threw ? 0 : 1));
    got.reset();  // the client goes away: a stream is released, its record parks
    CHECK(w.ep.budget().in_use() == 0);
    w.ep.tick();
    CHECK(w.ep.bridge().charges(sid) == 0);
    // The session still serves a new call, streamed.
    const auto next = post(R"({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"report",)"
                           R"("_meta":{"progressToken":"p2"}}})",
                           sid, true);
    int after = 0;
    w.ep.handle(next.view(), [&](http_reply reply) {
      ++after;
      CHECK(reply.head.status == 200);
    });
    CHECK(after == 1);
    CHECK(w.ep.budget().in_use() == 0);
  });
}

}  // TEST_SUITE

// ---- allocations per request (docs/performance.md#reused-documents) -------------------------------

namespace {

/// Allocations of the 20th of 20 identical tools/call requests (ids 1..20) in one session, on an
/// endpoint with `options` (no executor: the call runs inline, on this thread).
std::uint64_t steady_call_allocations(const http_endpoint_options& options) {
  http_world w{options};
  std::string sid;
  const auto init = post(std::string{initialize_body});
  w.ep.handle(init.view(), [&](http_reply reply) {
    sid = std::string{reply.head.header("Mcp-Session-Id").value_or("")};
  });
  REQUIRE(sid.size() == session_id_length);
  std::uint64_t last = 0;
  for (int id = 1; id <= 20; ++id) {
    const auto call = post(R"({"jsonrpc":"2.0","id":)" + std::to_string(id) +
                               R"(,"method":"tools/call","params":{"name":"echo"}})",
                           sid);
    int status = 0;
    const http_completion done = [&](http_reply reply) { status = reply.head.status; };
    const std::uint64_t before = failing_allocator::count();
    w.ep.handle(call.view(), done);
    last = failing_allocator::count() - before;
    REQUIRE(status == 200);
  }
  return last;
}

}  // namespace

TEST_CASE("performance.md/reused-documents: a steady tools/call reuses a parsed document and allocates a bounded number of times") {
  http_endpoint_options reused;
  http_endpoint_options fresh;
  fresh.max_idle_documents = 0;  // every request parses into a new document
  const std::uint64_t with_pool = steady_call_allocations(reused);
  const std::uint64_t without = steady_call_allocations(fresh);
  CAPTURE(with_pool);
  CAPTURE(without);
  // A new document costs its parser, tape and buffers: about ten allocations.
  CHECK(without >= with_pool + 8);
  // The whole sans-I/O request path (session, dispatch, the echo tool's own result, the answer):
  // a bound that fails when a hot path starts allocating again.
  CHECK(with_pool <= 12);
}

TEST_CASE("performance.md/reused-documents: a long body's document is not kept, the pool is bounded") {
  detail::document_pool pool{2, 64};
  {
    detail::pooled_document a{std::shared_ptr<detail::document_pool>(&pool, [](detail::document_pool*) {})};
    detail::pooled_document b{std::shared_ptr<detail::document_pool>(&pool, [](detail::document_pool*) {})};
    detail::pooled_document c{std::shared_ptr<detail::document_pool>(&pool, [](detail::document_pool*) {})};
    REQUIRE(a.for_text(10).parse(R"({"a":1})"));
    REQUIRE(b.for_text(10).parse(R"({"b":2})"));
    REQUIRE(c.for_text(10).parse(R"({"c":3})"));
  }
  CHECK(pool.idle() == 2);  // the third went: the pool holds at most two
  {
    detail::pooled_document big{std::shared_ptr<detail::document_pool>(&pool, [](detail::document_pool*) {})};
    CHECK(pool.idle() == 1);
    const std::string text = R"({"long":")" + std::string(100, 'x') + R"("})";
    REQUIRE(big.for_text(text.size()).parse(text));
  }
  CHECK(pool.idle() == 1);  // longer than 64 bytes: freed, not kept
  {
    // A kept document parses again; the root is the new text's.
    detail::pooled_document again{std::shared_ptr<detail::document_pool>(&pool, [](detail::document_pool*) {})};
    auto root = again.for_text(8).parse(R"({"d":4})");
    REQUIRE(root);
    CHECK((*root)["d"].to_int64() == 4);
  }
  detail::pooled_document alone{nullptr};  // without a pool: a document of its own
  CHECK(alone.for_text(2).parse("[]"));
}

TEST_CASE("performance.md/idle-memory: a session's stream and an open sink allocate no queue before their first frame") {
  // An idle session holds a session_stream whose ring never holds a frame, an idle GET stream a
  // sink whose queue never does: each allocates its own state only, and its queue on the first frame.
  std::uint64_t before = failing_allocator::count();
  auto stream = std::make_unique<session_stream>();
  const std::uint64_t made_stream = failing_allocator::count() - before;
  before = failing_allocator::count();
  auto sink = std::make_shared<stream_sink>(64);
  const std::uint64_t made_sink = failing_allocator::count() - before;
  CAPTURE(made_stream);
  CAPTURE(made_sink);
  CHECK(made_sink == 2);  // the shared control block with the sink, and its state; no deque map or block
  CHECK(made_stream <= 3);  // the object, its state and the pins' table; no deque map or block
  CHECK(stream->stats().frames == 0);
  const std::string_view note = R"({"jsonrpc":"2.0","method":"notifications/message","params":{}})";
  before = failing_allocator::count();
  CHECK(stream->publish(note) != 0);
  const std::uint64_t first = failing_allocator::count() - before;
  before = failing_allocator::count();
  CHECK(stream->publish(note) != 0);
  const std::uint64_t second = failing_allocator::count() - before;
  CAPTURE(first);
  CAPTURE(second);
  CHECK(first >= second + 2);  // the ring's deque is made by the first frame: its map and a block
  CHECK(stream->stats().frames == 2);
  CHECK(sink->push(stream_frame{}) == false);  // no waker set; the frame is queued
  stream_sink::batch got;
  sink->take(got);
  CHECK(got.frames.size() == 1);
}
