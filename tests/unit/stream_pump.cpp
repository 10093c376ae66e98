// SPDX-License-Identifier: Apache-2.0
// Tests of the GET stream pump (docs/sessions.md#sse-frames frames, docs/sessions.md#takeover
// takeover, docs/sessions.md#the-get-pump pump pass, docs/sessions.md#credential-re-validation
// credential grace, docs/sessions.md#close-reasons close reasons and the close notification,
// docs/sessions.md#exception-boundaries no-throw boundary).
#include <mcpcore/session/stream_pump.hpp>

#include <mcpcore/governance/clock.hpp>
#include <mcpcore/governance/metrics.hpp>
#include <mcpcore/session/session_stream.hpp>
#include <mcpcore/session/stream_budget.hpp>

#include <doctest/doctest.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>

using namespace mcpcore;
using namespace std::chrono_literals;
using std::chrono::milliseconds;

namespace {

constexpr std::string_view msg_a = R"({"jsonrpc":"2.0","method":"notifications/progress","params":{"n":1}})";
constexpr std::string_view msg_b = R"({"jsonrpc":"2.0","method":"notifications/progress","params":{"n":2}})";
constexpr std::string_view msg_c = R"({"jsonrpc":"2.0","method":"notifications/progress","params":{"n":3}})";

constexpr std::string_view heartbeat_bytes = "event: heartbeat\ndata: \n\n";

std::string frame_bytes(std::uint64_t id, std::string_view data) {
  return "id: " + std::to_string(id) + "\nevent: message\ndata: " + std::string{data} + "\n\n";
}

// The close notification of the default method, as the exact bytes a client receives.
std::string close_bytes(std::string_view reason, std::string_view escaped_cid, std::string_view remediation) {
  return std::string{"event: message\ndata: "} +
         R"({"jsonrpc":"2.0","method":"notifications/mcpcore/stream_closed","params":{"reason":")" +
         std::string{reason} + R"(","correlation_id":")" + std::string{escaped_cid} +
         R"(","retry_after_ms":null,"remediation":")" + std::string{remediation} + "\"}}\n\n";
}

revalidation_options grace_options(milliseconds grace, milliseconds max_staleness = 250ms) {
  revalidation_options o;
  o.grace = grace;
  o.jitter_max = 0ms;
  o.max_staleness = max_staleness;
  return o;
}

get_pump_options pump_options(milliseconds tick = 3000ms, milliseconds grace = 60000ms) {
  get_pump_options o;
  o.tick = tick;
  o.revalidation = grace_options(grace, 15000ms);
  return o;
}

// A real session stream with its budget, one attach per `attach()`.
struct fixture {
  manual_clock clock;
  stream_budget budget;
  std::shared_ptr<session_stream> stream;

  explicit fixture(session_stream_options o = {}) : stream(std::make_shared<session_stream>(std::move(o))) {}

  attach_result attach(std::uint64_t cursor = 0) {
    auto r = stream->attach_and_replay(cursor, budget, "alice");
    REQUIRE(r.status == attach_status::attached);
    REQUIRE(r.sink != nullptr);
    return r;
  }

  get_pump pump(const attach_result& r, std::string cid = "cid-1", get_pump_options o = pump_options(),
                milliseconds jitter = 0ms, session_metrics m = {}) {
    return get_pump{stream, r.sink, r.generation, clock.steady_now(), std::move(cid), std::move(o), jitter, m};
  }
};

// The bytes of one pass.
std::string pass(get_pump& p) {
  std::string out;
  p.pass(out);
  return out;
}

}  // namespace

TEST_SUITE("stream_pump") {
  TEST_CASE("sessions.md/pinned-finals: a pinned final written on the GET wire is released by written(), not by a failed write") {
    fixture f;
    const auto a = f.attach();
    auto p = f.pump(a);
    REQUIRE(f.stream->publish_final(R"({"jsonrpc":"2.0","id":1,"result":{}})") == 1);  // ring-only: replay it
    REQUIRE(f.stream->detach(*a.sink));
    const auto b = f.attach(0);
    auto q = f.pump(b);
    CHECK_FALSE(pass(q).empty());
    q.write_failed();  // not written: still pinned, replayed again next time
    CHECK(f.stream->pinned(1));
    q.release();
    const auto c = f.attach(0);
    auto r = f.pump(c);
    CHECK(pass(r).find("id: 1\n") != std::string::npos);
    r.written();
    CHECK_FALSE(f.stream->pinned(1));
    p.release();
  }

  TEST_CASE("sessions.md/the-get-pump: defaults: 3 s tick, 60 s grace, 30 s jitter, 15 s staleness, namespaced method") {
    CHECK(default_pump_tick == 3000ms);
    CHECK(default_revalidation_grace == 60000ms);
    CHECK(default_revalidation_jitter_max == 30000ms);
    CHECK(default_revalidation_max_staleness == 15000ms);
    CHECK(default_close_notification_method == "notifications/mcpcore/stream_closed");
    const get_pump_options o;
    CHECK(o.tick == default_pump_tick);
    CHECK(o.close_method == default_close_notification_method);
    CHECK(o.revalidation.grace == default_revalidation_grace);
    static_assert(!std::is_copy_constructible_v<get_pump>);
    static_assert(std::is_nothrow_destructible_v<get_pump>);
  }

  // ---- wire formats (docs/sessions.md#sse-frames, #close-reasons)
  // -------------------------------------------------------

  TEST_CASE("sessions.md/sse-frames: a ring frame carries its id, type message and the message as data") {
    std::string out;
    write_frame(out, stream_frame{7, std::string{msg_a}});
    CHECK(out == frame_bytes(7, msg_a));
  }

  TEST_CASE("sessions.md/sse-frames: heartbeat and events-dropped carry no id") {
    std::string out;
    write_heartbeat(out);
    CHECK(out == heartbeat_bytes);
    out.clear();
    write_events_dropped(out, 3);
    CHECK(out ==
          "event: events-dropped\n"
          R"(data: {"dropped_count":3,"reason":"slow_consumer","remediation":"reconnect with Last-Event-ID to )"
          R"(replay what was missed; if the replay window has passed you will get 404 and must re-initialize"})"
          "\n\n");
  }

  TEST_CASE("sessions.md/close-reasons: remediation text per close reason") {
    CHECK(close_remediation(close_reason::client_disconnect) == "reconnect with Last-Event-ID");
    CHECK(close_remediation(close_reason::superseded) == "a newer stream on this session replaced this one");
    CHECK(close_remediation(close_reason::session_terminated) == "re-initialize the session");
    CHECK(close_remediation(close_reason::credential_revoked) == "re-authenticate, then re-initialize");
    CHECK(close_remediation(close_reason::auth_unavailable) ==
          "retry shortly; results remain fetchable by execution id");
    CHECK(close_remediation(close_reason::internal_error) ==
          "reconnect with Last-Event-ID; results remain fetchable by execution id");
    CHECK(close_remediation(close_reason::cancelled) == "the work continues; fetch the result by execution id");
    CHECK(close_remediation(close_reason::cap_expired) ==
          "the work continues; fetch the result by execution id or resume on the GET stream");
    CHECK(close_remediation(close_reason::completed).empty());
    CHECK(close_remediation(close_reason::none).empty());
    CHECK(close_remediation(static_cast<close_reason>(42)).empty());
  }

  TEST_CASE("sessions.md/close-reasons: the close notification escapes every string, no id, retry_after_ms is null") {
    std::string out;
    write_close_notification(out, "m/\"x\"", close_reason::session_terminated, "c\"1\\\n");
    CHECK(out ==
          "event: message\n"
          R"(data: {"jsonrpc":"2.0","method":"m/\"x\"","params":{"reason":"session_terminated",)"
          R"("correlation_id":"c\"1\\\n","retry_after_ms":null,"remediation":"re-initialize the session"}})"
          "\n\n");
  }

  TEST_CASE("sessions.md/close-reasons: the execution_id variant adds execution_id and partial:true") {
    std::string out;
    write_close_notification(out, default_close_notification_method, close_reason::cap_expired, "cid",
                             "exec\"9");
    CHECK(out ==
          "event: message\n"
          R"(data: {"jsonrpc":"2.0","method":"notifications/mcpcore/stream_closed","params":{"reason":)"
          R"("cap_expired","correlation_id":"cid","retry_after_ms":null,"remediation":"the work continues; )"
          R"(fetch the result by execution id or resume on the GET stream","execution_id":"exec\"9",)"
          R"("partial":true}})"
          "\n\n");
    out.clear();
    write_close_notification(out, default_close_notification_method, close_reason::cap_expired, "cid", "");
    CHECK(out.find("execution_id") == std::string::npos);
    CHECK(out.find("partial") == std::string::npos);
  }

  // ---- revalidation_grace (docs/sessions.md#credential-re-validation)
  // -------------------------------------------------------

  TEST_CASE("sessions.md/credential-re-validation: revoked closes credential_revoked at once") {
    manual_clock c;
    revalidation_grace g{grace_options(1000ms), c.steady_now(), 0ms};
    CHECK(g.apply(credential_verdict::revoked, c.steady_now()) == close_reason::credential_revoked);
  }

  TEST_CASE("sessions.md/credential-re-validation: indeterminate arms last_ok + grace + jitter and closes at the deadline, not before") {
    manual_clock c;
    const auto t0 = c.steady_now();
    revalidation_grace g{grace_options(1000ms), t0, 200ms};
    CHECK_FALSE(g.deadline().has_value());
    CHECK(g.last_authoritative() == t0);
    c.advance(300ms);
    CHECK(g.apply(credential_verdict::indeterminate, c.steady_now()) == close_reason::none);
    REQUIRE(g.deadline().has_value());
    CHECK(*g.deadline() == t0 + 1200ms);
    // Re-applying does not push the deadline out.
    CHECK(g.apply(credential_verdict::indeterminate, t0 + 1199ms) == close_reason::none);
    CHECK(*g.deadline() == t0 + 1200ms);
    CHECK(g.apply(credential_verdict::indeterminate, t0 + 1200ms - 1ns) == close_reason::none);
    CHECK(g.apply(credential_verdict::indeterminate, t0 + 1200ms) == close_reason::auth_unavailable);
    CHECK(g.apply(credential_verdict::indeterminate, t0 + 5000ms) == close_reason::auth_unavailable);
  }

  TEST_CASE("sessions.md/credential-re-validation: valid clears the deadline and moves last_ok to now") {
    manual_clock c;
    const auto t0 = c.steady_now();
    revalidation_grace g{grace_options(1000ms), t0, 0ms};
    CHECK(g.apply(credential_verdict::indeterminate, t0 + 500ms) == close_reason::none);
    REQUIRE(g.deadline().has_value());
    CHECK(g.apply(credential_verdict::valid, t0 + 900ms) == close_reason::none);
    CHECK_FALSE(g.deadline().has_value());
    CHECK(g.last_authoritative() == t0 + 900ms);
    // The next outage is measured from the new confirmation.
    CHECK(g.apply(credential_verdict::indeterminate, t0 + 1500ms) == close_reason::none);
    CHECK(*g.deadline() == t0 + 1900ms);
    CHECK(g.apply(credential_verdict::indeterminate, t0 + 1900ms) == close_reason::auth_unavailable);
  }

  TEST_CASE("sessions.md/credential-re-validation: valid_stale backdates by max_staleness, cache residency and grace do not add") {
    manual_clock c;
    const auto t0 = c.steady_now();
    revalidation_grace g{grace_options(60000ms, 15000ms), t0, 0ms};
    // A stale yes early on never moves the floor backwards.
    CHECK(g.apply(credential_verdict::valid_stale, t0 + 10s) == close_reason::none);
    CHECK(g.last_authoritative() == t0);
    CHECK(g.apply(credential_verdict::indeterminate, t0 + 20s) == close_reason::none);
    CHECK(*g.deadline() == t0 + 60s);
    // A stale yes clears the deadline and sets the floor to now - max_staleness.
    CHECK(g.apply(credential_verdict::valid_stale, t0 + 50s) == close_reason::none);
    CHECK_FALSE(g.deadline().has_value());
    CHECK(g.last_authoritative() == t0 + 35s);
    CHECK(g.apply(credential_verdict::indeterminate, t0 + 51s) == close_reason::none);
    CHECK(*g.deadline() == t0 + 95s);  // not t0 + 50 s + 60 s
    CHECK(g.apply(credential_verdict::indeterminate, t0 + 94s) == close_reason::none);
    CHECK(g.apply(credential_verdict::indeterminate, t0 + 95s) == close_reason::auth_unavailable);
  }

  TEST_CASE("sessions.md/credential-re-validation: a deadline already passed on the arming tick closes at once") {
    manual_clock c;
    const auto t0 = c.steady_now();
    revalidation_grace g{grace_options(1000ms), t0, 0ms};
    CHECK(g.apply(credential_verdict::indeterminate, t0 + 2000ms) == close_reason::auth_unavailable);
  }

  TEST_CASE("sessions.md/credential-re-validation: an unknown verdict fails closed with auth_unavailable") {
    manual_clock c;
    revalidation_grace g{grace_options(1000ms), c.steady_now(), 0ms};
    CHECK(g.apply(static_cast<credential_verdict>(9), c.steady_now()) == close_reason::auth_unavailable);
  }

  TEST_CASE("sessions.md/credential-re-validation: huge grace and staleness saturate instead of overflowing") {
    manual_clock c;
    const auto t0 = c.steady_now();
    revalidation_grace g{grace_options(milliseconds::max(), milliseconds::max()), t0, milliseconds::max()};
    CHECK(g.apply(credential_verdict::indeterminate, t0 + 1000h) == close_reason::none);
    CHECK(*g.deadline() == std::chrono::steady_clock::time_point::max());
    CHECK(g.apply(credential_verdict::valid_stale, t0) == close_reason::none);
    CHECK(g.last_authoritative() == t0);
  }

  TEST_CASE("sessions.md/credential-re-validation: draw_jitter is uniform in [0, max], max <= 0 gives 0") {
    CHECK(revalidation_grace::draw_jitter(0ms) == 0ms);
    CHECK(revalidation_grace::draw_jitter(-5ms) == 0ms);
    bool saw_zero = false;
    bool saw_max = false;
    for (int i = 0; i < 400; ++i) {
      const auto j = revalidation_grace::draw_jitter(5ms);
      CHECK(j >= 0ms);
      CHECK(j <= 5ms);
      saw_zero = saw_zero || j == 0ms;
      saw_max = saw_max || j == 5ms;
    }
    CHECK(saw_zero);  // both ends are reachable (a miss has probability below 1e-30)
    CHECK(saw_max);
    const auto big = revalidation_grace::draw_jitter(default_revalidation_jitter_max);
    CHECK(big >= 0ms);
    CHECK(big <= default_revalidation_jitter_max);
  }

  // ---- get_pump: frames, synthetics, heartbeats (docs/sessions.md#sse-frames, #the-get-pump)
  // ---------------------------

  TEST_CASE("sessions.md/the-get-pump: queued frames are written in id order as SSE events") {
    fixture f;
    REQUIRE(f.stream->publish(msg_a) == 1);
    auto a = f.attach();  // frame 1 replayed into the new sink
    auto p = f.pump(a);
    REQUIRE(f.stream->publish(msg_b) == 2);
    REQUIRE(f.stream->publish(msg_c) == 3);
    CHECK(pass(p) == frame_bytes(1, msg_a) + frame_bytes(2, msg_b) + frame_bytes(3, msg_c));
    CHECK(pass(p).empty());  // nothing new, and no tick elapsed: no heartbeat
    CHECK_FALSE(p.finished());
    CHECK(p.reason() == close_reason::none);
  }

  TEST_CASE("sessions.md/the-replay-ring: ring-only publishes do not reach the GET pump") {
    fixture f;
    auto a = f.attach();
    auto p = f.pump(a);
    REQUIRE(f.stream->publish_ring_only(msg_a) == 1);
    REQUIRE(f.stream->publish(msg_b) == 2);
    CHECK(pass(p) == frame_bytes(2, msg_b));
  }

  TEST_CASE("sessions.md/sse-frames: a heartbeat goes out only on an idle pass after a tick, once per tick") {
    fixture f;
    auto a = f.attach();
    auto p = f.pump(a);
    CHECK(pass(p).empty());
    CHECK_FALSE(p.tick_due(f.clock.steady_now()));
    f.clock.advance(3000ms);
    REQUIRE(p.tick_due(f.clock.steady_now()));
    p.tick(f.clock.steady_now(), credential_verdict::valid, true);
    CHECK_FALSE(p.tick_due(f.clock.steady_now()));
    CHECK(pass(p) == heartbeat_bytes);
    CHECK(pass(p).empty());  // one heartbeat per tick

    // A pass that writes a frame after a tick writes no heartbeat, and the tick is spent.
    f.clock.advance(3000ms);
    p.tick(f.clock.steady_now(), credential_verdict::valid, true);
    REQUIRE(f.stream->publish(msg_a) == 1);
    const auto bytes = pass(p);
    CHECK(bytes == frame_bytes(1, msg_a));
    CHECK(bytes.find("heartbeat") == std::string::npos);
    CHECK(pass(p).empty());
  }

  TEST_CASE("sessions.md/sse-frames: events-dropped is written, without an id, before the surviving frames") {
    session_stream_options o;
    o.ring_frames = 2;
    o.sink_queue_frames = 2;
    fixture f{o};
    auto a = f.attach();
    auto p = f.pump(a);
    for (int i = 1; i <= 5; ++i) REQUIRE(f.stream->publish(i % 2 == 0 ? msg_b : msg_a) != 0);
    const auto bytes = pass(p);
    std::string expected;
    write_events_dropped(expected, 3);
    expected += frame_bytes(4, msg_b) + frame_bytes(5, msg_a);
    CHECK(bytes == expected);
    CHECK(bytes.rfind("event: events-dropped\n", 0) == 0);  // first, and no id line before it
    CHECK(a.sink->dropped_total() == 3);
    CHECK(pass(p).empty());  // the count was taken
  }

  // ---- get_pump: closing (docs/sessions.md#takeover, #the-get-pump, #close-reasons)
  // ---------------------------------------------

  TEST_CASE("sessions.md/close-reasons: session_terminated writes the close notification with the escaped cid") {
    fixture f;
    auto a = f.attach();
    auto p = f.pump(a, "c\"1\\");
    REQUIRE(f.stream->publish(msg_a) == 1);
    f.stream->close_sinks(close_reason::session_terminated);
    // A closed stream stops: the queued frame is not written (it stays in the ring).
    CHECK(pass(p) == close_bytes("session_terminated", R"(c\"1\\)", "re-initialize the session"));
    CHECK(p.finished());
    CHECK(p.reason() == close_reason::session_terminated);
    CHECK(pass(p).empty());  // finished: nothing more
  }

  TEST_CASE("sessions.md/the-get-pump: a tick that finds the session gone closes session_terminated") {
    fixture f;
    auto a = f.attach();
    auto p = f.pump(a, "cid\"");
    f.clock.advance(3000ms);
    p.tick(f.clock.steady_now(), credential_verdict::valid, false);
    CHECK(a.sink->reason() == close_reason::session_terminated);
    CHECK(pass(p) == close_bytes("session_terminated", R"(cid\")", "re-initialize the session"));
    CHECK(p.reason() == close_reason::session_terminated);
  }

  TEST_CASE("sessions.md/credential-re-validation: a revoked verdict on a tick closes credential_revoked with a close frame") {
    fixture f;
    auto a = f.attach();
    auto p = f.pump(a, "\"q\"");
    f.clock.advance(3000ms);
    p.tick(f.clock.steady_now(), credential_verdict::revoked, true);
    CHECK(pass(p) == close_bytes("credential_revoked", R"(\"q\")", "re-authenticate, then re-initialize"));
    CHECK(p.finished());
    CHECK(p.reason() == close_reason::credential_revoked);
  }

  TEST_CASE("sessions.md/credential-re-validation: revocation outranks a dead session on the same tick") {
    fixture f;
    auto a = f.attach();
    auto p = f.pump(a);
    p.tick(f.clock.steady_now(), credential_verdict::revoked, false);
    CHECK(a.sink->reason() == close_reason::credential_revoked);
  }

  TEST_CASE("sessions.md/credential-re-validation: indeterminate closes auth_unavailable at the deadline, not before") {
    fixture f;
    auto a = f.attach();
    const auto t0 = f.clock.steady_now();
    auto p = f.pump(a, "a\"b", pump_options(3000ms, 5000ms), 500ms);
    f.clock.advance(3000ms);
    p.tick(f.clock.steady_now(), credential_verdict::indeterminate, true);
    CHECK(pass(p) == heartbeat_bytes);  // still open during the grace
    // The deadline t0 + 5.5 s comes before the next tick (t0 + 6 s): the wait honours it.
    CHECK(p.wait_time(f.clock.steady_now()) == 2500ms);
    f.clock.advance(2499ms);
    CHECK_FALSE(p.tick_due(f.clock.steady_now()));
    f.clock.advance(1ms);
    CHECK(f.clock.steady_now() == t0 + 5500ms);
    REQUIRE(p.tick_due(f.clock.steady_now()));
    CHECK(p.wait_time(f.clock.steady_now()) == 0ms);
    p.tick(f.clock.steady_now(), credential_verdict::indeterminate, true);
    CHECK(pass(p) ==
          close_bytes("auth_unavailable", R"(a\"b)", "retry shortly; results remain fetchable by execution id"));
    CHECK(p.reason() == close_reason::auth_unavailable);
  }

  TEST_CASE("sessions.md/credential-re-validation: a valid tick inside the grace keeps the stream and clears the deadline") {
    fixture f;
    auto a = f.attach();
    auto p = f.pump(a, "cid", pump_options(3000ms, 5000ms));
    f.clock.advance(3000ms);
    p.tick(f.clock.steady_now(), credential_verdict::indeterminate, true);
    f.clock.advance(1000ms);
    p.tick(f.clock.steady_now(), credential_verdict::valid, true);  // t0 + 4 s
    f.clock.advance(3000ms);                                         // t0 + 7 s: past the old deadline
    p.tick(f.clock.steady_now(), credential_verdict::indeterminate, true);
    CHECK(pass(p) == heartbeat_bytes);
    CHECK_FALSE(p.finished());
    CHECK(p.wait_time(f.clock.steady_now()) == 2000ms);  // new deadline t0 + 9 s, tick t0 + 10 s
  }

  TEST_CASE("sessions.md/credential-re-validation: an unknown verdict on a tick closes auth_unavailable") {
    fixture f;
    auto a = f.attach();
    auto p = f.pump(a);
    p.tick(f.clock.steady_now(), static_cast<credential_verdict>(9), true);
    CHECK(pass(p) == close_bytes("auth_unavailable", "cid-1", close_remediation(close_reason::auth_unavailable)));
  }

  TEST_CASE("sessions.md/close-reasons: a poisoned stream closes its live pump internal_error with a close frame") {
    fixture f;
    auto a = f.attach();
    auto p = f.pump(a, "x\\y");
    f.stream->poison();
    CHECK(pass(p) == close_bytes("internal_error", R"(x\\y)",
                                 "reconnect with Last-Event-ID; results remain fetchable by execution id"));
    CHECK(p.reason() == close_reason::internal_error);
  }

  TEST_CASE("sessions.md/takeover: a superseded pump finishes superseded and writes nothing") {
    fixture f;
    auto first = f.attach();
    auto p = f.pump(first);
    REQUIRE(f.stream->publish(msg_a) == 1);  // queued on the first sink, never written by it
    auto second = f.attach(0);
    CHECK(second.took_over);
    CHECK(pass(p).empty());
    CHECK(p.finished());
    CHECK(p.reason() == close_reason::superseded);
    // The new stream replays the frame the old one never wrote.
    auto q = f.pump(second);
    CHECK(pass(q) == frame_bytes(1, msg_a));
  }

  TEST_CASE("sessions.md/takeover: the generation fence stops a pump whose sink is not closed yet") {
    // The window between the takeover's commit and its close of the old sink: the fence alone
    // must stop the old pump, writing nothing (not even the frames it already holds).
    fixture f;
    auto a = f.attach();
    auto p = get_pump{f.stream, a.sink, a.generation + 1, f.clock.steady_now(), "cid", pump_options()};
    REQUIRE(f.stream->publish(msg_a) == 1);
    f.clock.advance(3000ms);
    p.tick(f.clock.steady_now(), credential_verdict::valid, true);  // a heartbeat would be due
    CHECK(pass(p).empty());
    CHECK(p.finished());
    CHECK(p.reason() == close_reason::superseded);
    CHECK_FALSE(a.sink->closed());
    p.write_failed();  // a finished pump keeps its reason
    CHECK(p.reason() == close_reason::superseded);
  }

  TEST_CASE("sessions.md/the-get-pump: write_failed finishes client_disconnect without a close frame") {
    fixture f;
    auto a = f.attach();
    auto p = f.pump(a);
    REQUIRE(f.stream->publish(msg_a) == 1);
    CHECK(pass(p) == frame_bytes(1, msg_a));
    p.write_failed();
    CHECK(p.finished());
    CHECK(p.reason() == close_reason::client_disconnect);
    CHECK(a.sink->reason() == close_reason::client_disconnect);
    REQUIRE(f.stream->publish(msg_b) == 2);
    CHECK(pass(p).empty());
  }

  TEST_CASE("sessions.md/close-reasons: a sink closed with no reason reports client_disconnect, no close frame") {
    fixture f;
    auto a = f.attach();
    auto p = f.pump(a);
    a.sink->close(close_reason::none);
    CHECK(pass(p).empty());
    CHECK(p.finished());
    CHECK(p.reason() == close_reason::client_disconnect);
  }

  TEST_CASE("sessions.md/close-reasons: completed writes no close frame") {
    fixture f;
    auto a = f.attach();
    auto p = f.pump(a);
    a.sink->close(close_reason::completed);
    CHECK(pass(p).empty());
    CHECK(p.reason() == close_reason::completed);
  }

  TEST_CASE("MCP resumability: a resumed POST stream writes its last frames, its final included, then ends") {
    fixture f;
    const auto ch = f.stream->open_channel();
    auto a = f.attach(ch.priming_id);
    CHECK(a.channel == ch.channel);
    auto p = f.pump(a);
    const auto one = f.stream->publish_ring_only(msg_a, ch.channel);
    CHECK(pass(p) == frame_bytes(one, msg_a));
    p.written();
    // The final and the close land between two passes: the pass writes the final, then finishes.
    const auto fin = f.stream->publish_final(msg_b, ch.channel);
    CHECK(f.stream->pinned(fin));
    CHECK(pass(p) == frame_bytes(fin, msg_b));
    CHECK(p.finished());
    CHECK(p.reason() == close_reason::completed);
    p.written();
    CHECK_FALSE(f.stream->pinned(fin));  // written on the resumed wire: released
    p.release();
    CHECK(f.budget.in_use() == 0);
    CHECK(f.stream->stats().channel_sinks == 0);
  }

  TEST_CASE("sessions.md/close-reasons: the first reason wins: a revocation is not overwritten by the teardown") {
    SUBCASE("write_failed before the pass") {
      fixture f;
      auto a = f.attach();
      auto p = f.pump(a);
      p.tick(f.clock.steady_now(), credential_verdict::revoked, true);
      p.write_failed();
      CHECK(p.finished());
      CHECK(p.reason() == close_reason::credential_revoked);
    }
    SUBCASE("the close frame's write fails") {
      fixture f;
      auto a = f.attach();
      auto p = f.pump(a);
      p.tick(f.clock.steady_now(), credential_verdict::revoked, true);
      CHECK_FALSE(pass(p).empty());
      p.write_failed();
      CHECK(p.reason() == close_reason::credential_revoked);
    }
    SUBCASE("a later close of the sink") {
      fixture f;
      auto a = f.attach();
      auto p = f.pump(a);
      p.tick(f.clock.steady_now(), credential_verdict::revoked, true);
      f.stream->close_sinks(close_reason::session_terminated);
      CHECK(pass(p).find("credential_revoked") != std::string::npos);
      CHECK(p.reason() == close_reason::credential_revoked);
    }
  }

  TEST_CASE("sessions.md/the-get-pump: a custom close method is used") {
    fixture f;
    auto a = f.attach();
    auto o = pump_options();
    o.close_method = "notifications/yuzu.stream_closed";
    auto p = f.pump(a, "cid", o);
    f.stream->close_sinks(close_reason::session_terminated);
    CHECK(pass(p).find(R"("method":"notifications/yuzu.stream_closed")") != std::string::npos);
  }

  // ---- get_pump: timing (docs/sessions.md#the-get-pump)
  // ----------------------------------------------------------

  TEST_CASE("sessions.md/the-get-pump: wait_time runs to the next tick, rounded up to whole milliseconds") {
    fixture f;
    auto a = f.attach();
    const auto t0 = f.clock.steady_now();
    auto p = f.pump(a);
    CHECK(p.wait_time(t0) == 3000ms);
    CHECK(p.wait_time(t0 + 500us) == 3000ms);  // 2999.5 ms rounds up
    CHECK(p.wait_time(t0 + 1ms) == 2999ms);
    CHECK(p.wait_time(t0 + 2999ms + 1ns) == 1ms);
    CHECK(p.wait_time(t0 + 3000ms) == 0ms);
    CHECK(p.wait_time(t0 + 10s) == 0ms);
    CHECK_FALSE(p.tick_due(t0 + 3000ms - 1ns));
    CHECK(p.tick_due(t0 + 3000ms));
    // The next tick is measured from the last one.
    p.tick(t0 + 3500ms, credential_verdict::valid, true);
    CHECK(p.wait_time(t0 + 3500ms) == 3000ms);
    CHECK_FALSE(p.tick_due(t0 + 6000ms));
    CHECK(p.tick_due(t0 + 6500ms));
  }

  TEST_CASE("sessions.md/the-get-pump: an enormous tick saturates the wait instead of overflowing") {
    fixture f;
    auto a = f.attach();
    auto p = f.pump(a, "cid", pump_options(milliseconds::max()));
    const auto w = p.wait_time(f.clock.steady_now());
    CHECK(w > std::chrono::hours{24 * 365 * 100});
    CHECK_FALSE(p.tick_due(f.clock.steady_now() + 1000h));
  }

  // ---- get_pump: release (docs/sessions.md#takeover, #close-reasons releaser)
  // -----------------------------------------

  TEST_CASE("sessions.md/close-reasons: release detaches, returns the lease, counts the close once") {
    metrics_registry reg;
    const auto m = bind_session_metrics(reg);
    const auto revoked = static_cast<std::size_t>(close_reason::credential_revoked);
    fixture f;
    auto a = f.attach();
    auto p = f.pump(a, "cid", pump_options(), 0ms, m);
    CHECK(f.budget.in_use() == 1);
    CHECK(f.stream->stats().live);
    p.tick(f.clock.steady_now(), credential_verdict::revoked, true);
    CHECK_FALSE(pass(p).empty());
    p.release();
    CHECK(f.budget.in_use() == 0);
    CHECK_FALSE(f.stream->stats().live);
    CHECK(m.stream_closes[revoked].value() == 1);
    p.release();  // idempotent
    CHECK(f.budget.in_use() == 0);
    CHECK(m.stream_closes[revoked].value() == 1);
    CHECK(p.reason() == close_reason::credential_revoked);
  }

  TEST_CASE("sessions.md/close-reasons: the destructor releases, an unfinished pump counts client_disconnect") {
    metrics_registry reg;
    const auto m = bind_session_metrics(reg);
    fixture f;
    {
      auto a = f.attach();
      auto p = f.pump(a, "cid", pump_options(), 0ms, m);
      CHECK(f.budget.in_use() == 1);
    }
    CHECK(f.budget.in_use() == 0);
    CHECK_FALSE(f.stream->stats().live);
    CHECK(m.stream_closes[static_cast<std::size_t>(close_reason::client_disconnect)].value() == 1);
    CHECK(m.stream_closes[static_cast<std::size_t>(close_reason::none)].value() == 0);
  }

  TEST_CASE("sessions.md/takeover: a superseded pump's release returns only its own lease") {
    metrics_registry reg;
    const auto m = bind_session_metrics(reg);
    fixture f;
    auto first = f.attach();
    auto p = f.pump(first, "cid", pump_options(), 0ms, m);
    auto second = f.attach();
    CHECK(f.budget.in_use() == 2);
    CHECK(f.stream->stats().draining);
    CHECK(pass(p).empty());
    p.release();
    CHECK(f.budget.in_use() == 1);
    CHECK(f.stream->stats().live);
    CHECK_FALSE(f.stream->stats().draining);
    CHECK(m.stream_closes[static_cast<std::size_t>(close_reason::superseded)].value() == 1);
  }

  TEST_CASE("sessions.md/close-reasons: releasing before the pass reports the reason recorded on the sink") {
    metrics_registry reg;
    const auto m = bind_session_metrics(reg);
    fixture f;
    auto a = f.attach();
    auto p = f.pump(a, "cid", pump_options(), 0ms, m);
    CHECK(p.reason() == close_reason::none);  // not finished, nothing recorded
    f.stream->close_sinks(close_reason::session_terminated);
    CHECK(p.reason() == close_reason::session_terminated);
    p.release();
    CHECK(p.finished());
    CHECK(p.reason() == close_reason::session_terminated);
    CHECK(m.stream_closes[static_cast<std::size_t>(close_reason::session_terminated)].value() == 1);
    CHECK(f.budget.in_use() == 0);
  }

  TEST_CASE("sessions.md/the-get-pump: after release the pump is finished and passes write nothing") {
    fixture f;
    auto a = f.attach();
    auto p = f.pump(a);
    p.release();
    CHECK(p.finished());
    CHECK(p.reason() == close_reason::client_disconnect);
    REQUIRE(f.stream->publish(msg_a) == 1);
    CHECK(pass(p).empty());
  }
}
