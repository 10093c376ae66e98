// SPDX-License-Identifier: Apache-2.0
// The sans-I/O MCP endpoint end to end: routing, the processing order, sessions, plain and SSE
// answers, the upgrade on the first in-call message, sampling, cancellation, resume, DELETE, the
// polling hook, the operational routes and the refusals
// (docs/http.md#processing-order-on-the-mcp-path, docs/sessions.md#the-session-registry,
// #get-attach-replay-resume, #pinned-finals, #streamed-post, #shutdown, #cancellation; MCP
// 2025-11-25 basic/transports).
#include <mcpcore/transport/http_endpoint.hpp>

#include <doctest/doctest.h>

#include "support/http_endpoint_fixture.hpp"
#include "support/server_fixture.hpp"

#include <mcpcore/dispatch/server.hpp>
#include <mcpcore/dispatch/tool.hpp>
#include <mcpcore/governance/approval.hpp>
#include <mcpcore/governance/approval_endpoint.hpp>
#include <mcpcore/governance/audit.hpp>
#include <mcpcore/governance/clock.hpp>
#include <mcpcore/governance/metrics.hpp>
#include <mcpcore/governance/policy.hpp>
#include <mcpcore/session/progress_bridge.hpp>
#include <mcpcore/session/session_registry.hpp>
#include <mcpcore/session/stream_admission.hpp>
#include <mcpcore/stores/memory_approval_store.hpp>
#include <mcpcore/wire/json.hpp>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

using namespace mcpcore;
using namespace std::chrono_literals;
namespace fx = server_fixture;

namespace {

using namespace http_endpoint_fixture;
using fx::flag;

// ---- the fixture ---------------------------------------------------------------------------------

std::string progress_meta(std::string_view token_json) {
  return std::string{R"({"progressToken":)"} + std::string{token_json} + "}";
}

/// A server with the test tools, an endpoint on a manual clock with a thread-per-task executor.
struct fixture : endpoint_harness {
  explicit fixture(const std::function<void(http_endpoint_options&)>& tweak = {},
                   const std::function<void(server_builder&)>& extra = {}, bool with_executor = true) {
    server_info info;
    info.name = "http-endpoint-test";
    info.version = "1.0.0";
    server_builder b{info};
    add_tool(b, "echo", [](call_context&, const arguments&) { return tool_result::text("echoed"); });
    add_tool(b, "report", [](call_context& ctx, const arguments&) {
      for (int i = 1; i <= 3; ++i) (void)ctx.progress(i, 3, "step");
      return tool_result::text("reported");
    });
    add_tool(b, "logger", [](call_context& ctx, const arguments&) {
      (void)ctx.log(log_level::info, "one");
      (void)ctx.log(log_level::info, "two");
      (void)ctx.log(log_level::info, "three");
      return tool_result::text("logged");
    });
    add_tool(b, "sampler", [](call_context& ctx, const arguments&) {
      auto r = ctx.request("sampling/createMessage",
                           R"({"messages":[{"role":"user","content":{"type":"text","text":"hi"}}],"maxTokens":100})",
                           patience);
      if (!r) return tool_result::error("sampling failed: " + r.error().message());
      const auto text = r->value()["content"]["text"];
      return tool_result::text(text.is_string() ? "sampled: " + std::string{text.as_string()} : "sampled: ?");
    });
    add_tool(b, "held", [this](call_context& ctx, const arguments&) {
      (void)ctx.progress(1, 10);
      (void)ctx.log(log_level::info, "holding");
      held_started.arrive();
      const bool opened = held_gate.block(ctx.stop_token());
      if (!opened) held_saw_stop = true;
      return tool_result::text("held");
    });
    add_tool(b, "slow_report", [this](call_context& ctx, const arguments&) {
      (void)ctx.progress(1, 3);
      held_started.arrive();
      if (!held_gate.block(ctx.stop_token())) held_saw_stop = true;
      (void)ctx.progress(2, 3);
      (void)ctx.progress(3, 3);
      return tool_result::text("slow done");
    });
    add_tool(b, "reconnect", [this](call_context& ctx, const arguments&) {
      closed_stream = ctx.close_stream(500ms);
      held_started.arrive();
      if (!held_gate.block(ctx.stop_token())) held_saw_stop = true;
      (void)ctx.log(log_level::info, "after the close");
      return tool_result::text("Reconnection test completed successfully");
    });
    add_tool(b, "log_then_close", [this](call_context& ctx, const arguments&) {
      (void)ctx.log(log_level::info, "before the close");
      held_started.arrive();
      if (!held_gate.block(ctx.stop_token())) held_saw_stop = true;
      closed_stream = ctx.close_stream(700ms);
      return tool_result::text("closed late");
    });
    add_tool(b, "fleet", [this](call_context& ctx, const arguments&) {
      auto op = mcpcore::detach(ctx, "exec-7");
      std::lock_guard lock{workers_mu};
      workers.emplace_back([op, this]() mutable {
        (void)op.progress(1, 2);
        if (!fleet_go.wait()) return;
        (void)op.progress(2, 2);
        (void)op.finish(tool_result::structured(R"({"status":"completed","agents_success":2})"));
      });
      return tool_result::text("started");
    });
    if (extra) extra(b);
    serve(b, tweak, with_executor);
  }
  ~fixture() {
    held_gate.open();
    fleet_go.set();
    exec.join();
    std::lock_guard lock{workers_mu};
    for (auto& t : workers) t.join();
  }
  fixture(const fixture&) = delete;
  fixture& operator=(const fixture&) = delete;

  /// initialize; the session id.
  std::string open_session(std::string_view token = "alice-token", std::string_view capabilities = "{}") {
    const auto r = send(post(fx::initialize(1, "2025-11-25", capabilities), {}, token));
    REQUIRE(r.head.status == 200);
    const auto sid = r.head.header("Mcp-Session-Id");
    REQUIRE(sid.has_value());
    return std::string{*sid};
  }
  std::shared_ptr<session> session_of(std::string_view sid, std::string_view who = "alice") {
    return ep->sessions().validate_and_touch(sid, who);
  }

  fx::gate held_started;
  fx::gate held_gate;
  std::atomic<bool> held_saw_stop{false};
  std::atomic<bool> closed_stream{false};
  flag fleet_go;
  std::mutex workers_mu;
  std::vector<std::thread> workers;
};

std::size_t pin_count(const std::shared_ptr<session>& s) {
  const auto st = s->stream()->stats();
  return static_cast<std::size_t>(std::count_if(st.pins.begin(), st.pins.end(), [](std::uint64_t p) { return p != 0; }));
}

}  // namespace

TEST_SUITE("http_endpoint") {

// ---- sessions and plain answers ----------------------------------------------------------------

TEST_CASE("http.md/post: initialize mints a session bound to the caller and returns Mcp-Session-Id") {
  fixture f;
  auto r = f.send(post(fx::initialize(1)));
  REQUIRE(r.head.status == 200);
  CHECK(header_of(r, "Content-Type") == "application/json");
  const auto sid = header_of(r, "Mcp-Session-Id");
  CHECK(sid.size() == session_id_length);
  CHECK(fx::str(body_of(r).root["result"]["protocolVersion"]) == "2025-11-25");
  CHECK(f.ep->sessions().count("alice") == 1);
  CHECK(f.session_of(sid) != nullptr);
  CHECK(f.session_of(sid, "bob") == nullptr);

  SUBCASE("a client-supplied session id on initialize is ignored (no fixation)") {
    auto again = f.send(post(fx::initialize(2), "0123456789abcdef0123456789abcdef"));
    REQUIRE(again.head.status == 200);
    CHECK(header_of(again, "Mcp-Session-Id") != "0123456789abcdef0123456789abcdef");
    CHECK(header_of(again, "Mcp-Session-Id") != sid);
    CHECK(f.ep->sessions().count("alice") == 2);
  }
}

TEST_CASE("http.md/processing-order-on-the-mcp-path: a call without in-call messages answers plain JSON, even with SSE accepted") {
  fixture f;
  const auto sid = f.open_session();
  auto r = f.send(post(fx::call_tool(2, "echo"), sid));
  REQUIRE(r.head.status == 200);
  CHECK(header_of(r, "Content-Type") == "application/json");
  CHECK_FALSE(r.stream);
  CHECK(fx::str(fx::at(body_of(r).root["result"]["content"], 0)["text"]) == "echoed");
}

TEST_CASE("http.md/processing-order-on-the-mcp-path: notifications and client responses answer 202 with no body") {
  fixture f;
  const auto sid = f.open_session();
  auto n = f.send(post(fx::notification("notifications/initialized"), sid));
  CHECK(n.head.status == 202);
  CHECK(n.head.body.empty());
  CHECK_FALSE(n.stream);
  auto resp = f.send(post(fx::client_result(99, "{}"), sid));
  CHECK(resp.head.status == 202);
  CHECK(resp.head.body.empty());
  SUBCASE("an unknown notification and a stateless one are 202 too") {
    CHECK(f.send(post(fx::notification("notifications/whatever"), sid)).head.status == 202);
    CHECK(f.send(post(fx::notification("notifications/initialized"))).head.status == 202);
  }
}

TEST_CASE("http.md/processing-order-on-the-mcp-path: without a session header a request is served statelessly (sessions are optional)") {
  fixture f;
  auto r = f.send(post(fx::call_tool(3, "logger")));
  REQUIRE(r.head.status == 200);
  CHECK(header_of(r, "Content-Type") == "application/json");  // the log messages had no channel
  CHECK(fx::str(fx::at(body_of(r).root["result"]["content"], 0)["text"]) == "logged");
  auto s = f.send(post(fx::call_tool(4, "sampler")));
  REQUIRE(s.head.status == 200);
  const auto text = fx::str(fx::at(body_of(s).root["result"]["content"], 0)["text"]);
  CHECK(text.find("sampling failed") != std::string::npos);  // client_request_errc::no_channel
}

TEST_CASE("MCP 2025-11-25 transports: require_session answers 400 -32600 to a POST without Mcp-Session-Id") {
  fixture f{[](http_endpoint_options& o) { o.require_session = true; }};
  auto r = f.send(post(fx::request(5, "ping")));
  CHECK(r.head.status == 400);
  CHECK(code_of(r) == -32600);
  CHECK(fx::to_json(body_of(r).root["id"]) == "5");
  CHECK(fx::str(body_of(r).root["error"]["data"]["reason"]) == "missing_session_header");
  const auto sid = f.open_session();  // initialize needs none
  CHECK(f.send(post(fx::request(6, "ping"), sid)).head.status == 200);
}

// ---- streamed answers --------------------------------------------------------------------------

TEST_CASE("sessions.md/streamed-post, SEP-1699: streamed progress: priming event first, ring ids, the final last") {
  fixture f;
  const auto sid = f.open_session();
  auto r = f.send(post(fx::call_tool(7, "report", {}, progress_meta(R"("tok-7")")), sid));
  REQUIRE(r.head.status == 200);
  CHECK(header_of(r, "Content-Type") == "text/event-stream");
  CHECK(header_of(r, "Cache-Control") == "no-cache");
  CHECK(header_of(r, "X-Accel-Buffering") == "no");
  CHECK(header_of(r, "X-Content-Type-Options") == "nosniff");
  CHECK(fx::is_correlation_id(header_of(r, "X-Correlation-Id")));
  auto reader = f.read(r);
  reader.drive_to_end();

  const auto events = reader.events();
  CAPTURE(reader.wire());
  REQUIRE(events.size() == 5);
  // The priming event: an id (the POST stream's marker: a resume cursor naming this stream), retry,
  // empty data.
  REQUIRE(events[0].id.has_value());
  CHECK(*events[0].id > 0);
  CHECK(events[0].retry == std::optional<std::uint64_t>{1000});
  CHECK(events[0].data.empty());
  std::uint64_t last = *events[0].id;
  for (std::size_t i = 1; i < 4; ++i) {
    CAPTURE(i);
    REQUIRE(is_progress(events[i]));
    REQUIRE(events[i].id.has_value());
    CHECK(*events[i].id > last);
    last = *events[i].id;
    CHECK(fx::str(fx::parse(events[i].data).root["params"]["progressToken"]) == "tok-7");
  }
  REQUIRE(is_response_for(events[4], "7"));
  CHECK(*events[4].id > last);
  CHECK(fx::str(fx::at(fx::parse(events[4].data).root["result"]["content"], 0)["text"]) == "reported");
  for (const auto& e : events) CHECK_FALSE(is_close(e));
}

TEST_CASE("MCP 2025-11-25 transports: the first log message upgrades a plain call to SSE") {
  fixture f;
  const auto sid = f.open_session();
  auto r = f.send(post(fx::call_tool(8, "logger"), sid));
  REQUIRE(r.head.status == 200);
  CHECK(header_of(r, "Content-Type") == "text/event-stream");
  auto reader = f.read(r);
  reader.drive_to_end();
  const auto events = reader.events();
  CAPTURE(reader.wire());
  REQUIRE(events.size() == 5);
  CHECK(events[0].id.has_value());
  CHECK(events[0].data.empty());
  const auto msgs = messages_of(events);
  REQUIRE(msgs.size() == 4);
  for (std::size_t i = 0; i < 3; ++i) CHECK(is_log(msgs[i]));
  CHECK(fx::str(fx::parse(msgs[0].data).root["params"]["data"]) == "one");
  REQUIRE(is_response_for(msgs[3], "8"));
  CHECK(fx::str(fx::at(fx::parse(msgs[3].data).root["result"]["content"], 0)["text"]) == "logged");

  SUBCASE("without SSE in Accept the same call answers plain JSON and its logs have no channel") {
    auto req = post(fx::call_tool(9, "logger"), sid);
    req.set("Accept", "application/json");
    auto plain = f.send(req);
    CHECK(header_of(plain, "Content-Type") == "application/json");
    CHECK(fx::str(fx::at(body_of(plain).root["result"]["content"], 0)["text"]) == "logged");
  }
}

TEST_CASE("MCP 2025-11-25 client features: a sampling round trip over the POST stream and a second POST") {
  fixture f;
  const auto sid = f.open_session("alice-token", R"({"sampling":{}})");
  auto r = f.send(post(fx::call_tool(10, "sampler"), sid));
  REQUIRE(header_of(r, "Content-Type") == "text/event-stream");
  auto reader = f.read(r);
  REQUIRE(reader.drive_until([](const auto& ev) {
    return std::any_of(ev.begin(), ev.end(), [](const sse_event& e) { return has_method(e, "sampling/createMessage"); });
  }));
  std::int64_t rid = 0;
  for (const auto& e : reader.messages()) {
    if (has_method(e, "sampling/createMessage")) rid = fx::parse(e.data).root["id"].to_int64().value_or(0);
  }
  REQUIRE(rid != 0);
  auto answer = f.send(post(fx::client_result(
                                rid, R"({"role":"assistant","content":{"type":"text","text":"hello"},"model":"m","stopReason":"endTurn"})"),
                            sid));
  CHECK(answer.head.status == 202);
  CHECK(answer.head.body.empty());
  reader.drive_to_end();
  const auto msgs = reader.messages();
  REQUIRE_FALSE(msgs.empty());
  REQUIRE(is_response_for(msgs.back(), "10"));
  CHECK(fx::str(fx::at(fx::parse(msgs.back().data).root["result"]["content"], 0)["text"]) == "sampled: hello");
}

TEST_CASE("sessions.md/cancellation: notifications/cancelled ends the request's stream promptly, without a result") {
  fixture f;
  const auto sid = f.open_session();
  SUBCASE("a streamed call (progress token)") {
    auto r = f.send(post(fx::call_tool(11, "held", {}, progress_meta("11")), sid));
    auto reader = f.read(r);
    REQUIRE(f.held_started.wait_arrived());
    REQUIRE(reader.drive_until([](const auto& ev) { return count_if_events(ev, is_progress) == 1; }));
    auto c = f.send(post(fx::cancel("11"), sid));
    CHECK(c.head.status == 202);
    reader.drive_to_end();
    const auto msgs = reader.messages();
    REQUIRE_FALSE(msgs.empty());
    for (const auto& e : msgs) CHECK_FALSE(is_response_for(e, "11"));
    REQUIRE(is_close(msgs.back()));
    CHECK(fx::str(fx::parse(msgs.back().data).root["params"]["reason"]) == "cancelled");
    CHECK(eventually([&] { return f.held_saw_stop.load(); }));  // the handler got its stop token
  }
  SUBCASE("a call upgraded by its log message") {
    auto r = f.send(post(fx::call_tool(12, "held"), sid));
    auto reader = f.read(r);
    REQUIRE(f.held_started.wait_arrived());
    REQUIRE(reader.drive_until([](const auto& ev) { return count_if_events(ev, is_log) == 1; }));
    CHECK(f.send(post(fx::cancel("12"), sid)).head.status == 202);
    reader.drive_to_end();
    const auto msgs = reader.messages();
    for (const auto& e : msgs) CHECK_FALSE(is_response_for(e, "12"));
    REQUIRE(is_close(msgs.back()));
    CHECK(fx::str(fx::parse(msgs.back().data).root["params"]["reason"]) == "cancelled");
  }
  SUBCASE("a plain call answers 202 with no body once its handler stopped") {
    auto req = post(fx::call_tool(13, "held"), sid);
    req.set("Accept", "application/json");
    auto box = f.start(req);
    REQUIRE(f.held_started.wait_arrived());
    CHECK(f.send(post(fx::cancel("13"), sid)).head.status == 202);
    REQUIRE(box->wait());
    CHECK(box->reply->head.status == 202);
    CHECK(box->reply->head.body.empty());
    CHECK(f.held_saw_stop.load());
  }
}

TEST_CASE("sessions.md/streamed-post, MCP: a dropped stream is not a cancel, GET + Last-Event-ID replays the final once") {
  fixture f;
  const auto sid = f.open_session();
  auto r = f.send(post(fx::call_tool(14, "slow_report", {}, progress_meta(R"("t14")")), sid));
  auto reader = f.read(r);
  REQUIRE(f.held_started.wait_arrived());
  REQUIRE(reader.drive_until([](const auto& ev) { return count_if_events(ev, is_progress) == 1; }));
  const auto seen = reader.messages();
  const std::uint64_t cursor = *seen.back().id;
  reader.drop();  // the client went away mid-call
  CHECK_FALSE(f.held_saw_stop.load());
  f.held_gate.open();
  const auto s = f.session_of(sid);
  REQUIRE(s);
  REQUIRE(eventually([&] { return pin_count(s) == 1; }));  // the final, parked and pinned
  CHECK_FALSE(f.held_saw_stop.load());

  auto g = f.send(get(sid).set("Last-Event-ID", std::to_string(cursor)));
  REQUIRE(g.head.status == 200);
  CHECK(header_of(g, "Content-Type") == "text/event-stream");
  CHECK(header_of(g, "X-Accel-Buffering") == "no");
  auto resumed = f.read(g);
  REQUIRE(resumed.drive_until([](const auto& ev) {
    return std::any_of(ev.begin(), ev.end(), [](const sse_event& e) { return is_response_for(e, "14"); });
  }));
  const auto replay = resumed.messages();
  REQUIRE(replay.size() == 3);
  CHECK(is_progress(replay[0]));
  CHECK(is_progress(replay[1]));
  REQUIRE(is_response_for(replay[2], "14"));
  CHECK(fx::str(fx::at(fx::parse(replay[2].data).root["result"]["content"], 0)["text"]) == "slow done");
  CHECK(*replay[0].id > cursor);
  CHECK(pin_count(s) == 0);  // written on the GET wire: released
  const std::uint64_t final_id = *replay[2].id;
  resumed.drop();

  // Exactly once: a resume from the final's id replays nothing more.
  auto again = f.send(get(sid).set("Last-Event-ID", std::to_string(final_id)));
  REQUIRE(again.head.status == 200);
  auto second = f.read(again);
  for (int i = 0; i < 3; ++i) (void)second.pull();
  CHECK(second.messages().empty());
}

TEST_CASE("MCP resumability: a stream dropped mid-call, resumed by GET: the rest live, the final last, then the end") {
  fixture f;
  const auto sid = f.open_session();
  auto r = f.send(post(fx::call_tool(24, "slow_report", {}, progress_meta("24")), sid));
  auto reader = f.read(r);
  REQUIRE(f.held_started.wait_arrived());
  REQUIRE(reader.drive_until([](const auto& ev) { return count_if_events(ev, is_progress) == 1; }));
  const std::uint64_t cursor = *reader.messages().back().id;
  reader.drop();
  // Resumed before the call goes on: nothing to replay yet, and the stream stays open for it.
  auto g = f.send(get(sid).set("Last-Event-ID", std::to_string(cursor)));
  REQUIRE(g.head.status == 200);
  auto resumed = f.read(g);
  (void)resumed.pull();
  CHECK(resumed.messages().empty());
  CHECK_FALSE(resumed.finished());
  f.held_gate.open();
  resumed.drive_to_end();  // the final ends the resumed stream
  const auto msgs = resumed.messages();
  CAPTURE(resumed.wire());
  REQUIRE(msgs.size() == 3);
  CHECK(is_progress(msgs[0]));
  CHECK(is_progress(msgs[1]));
  REQUIRE(is_response_for(msgs[2], "24"));
  CHECK(*msgs[0].id > cursor);
  CHECK(*msgs[1].id > *msgs[0].id);
  CHECK(*msgs[2].id > *msgs[1].id);
  for (const auto& e : resumed.events()) CHECK_FALSE(is_close(e));
  const auto s = f.session_of(sid);
  CHECK(eventually([&] { return pin_count(s) == 0; }));  // written on the resumed wire
  CHECK_FALSE(f.held_saw_stop.load());
}

// Found by fuzz_http_endpoint (corpus regress_resume_supersedes_post.bin): the live POST answer
// and the GET resuming it both got the call's later progress and its result.
TEST_CASE("MCP transports: a GET resuming a POST stream that is still open takes it over, no message goes to both") {
  fixture f;
  const auto sid = f.open_session();
  auto r = f.send(post(fx::call_tool(25, "slow_report", {}, progress_meta("25")), sid));
  auto reader = f.read(r);
  REQUIRE(f.held_started.wait_arrived());
  REQUIRE(reader.drive_until([](const auto& ev) { return count_if_events(ev, is_progress) == 1; }));
  const std::uint64_t cursor = *reader.messages().back().id;
  // The client reconnects while the server still holds the POST's connection.
  auto g = f.send(get(sid).set("Last-Event-ID", std::to_string(cursor)));
  REQUIRE(g.head.status == 200);
  auto resumed = f.read(g);
  f.held_gate.open();
  resumed.drive_to_end();  // the final ends the resumed stream
  reader.drive_to_end();   // the old answer ended quietly
  CAPTURE(resumed.wire());
  CAPTURE(reader.wire());
  const auto msgs = resumed.messages();
  REQUIRE(msgs.size() == 3);
  CHECK(is_progress(msgs[0]));
  CHECK(is_progress(msgs[1]));
  CHECK(is_response_for(msgs[2], "25"));
  CHECK(*msgs[0].id > cursor);
  CHECK(reader.messages().size() == 1);  // the progress it wrote before the resume, nothing after
  for (const auto& e : reader.events()) {
    CHECK_FALSE(is_close(e));  // superseded: no close notification
    CHECK_FALSE(is_response_for(e, "25"));
  }
  CHECK_FALSE(f.held_saw_stop.load());
}

TEST_CASE("MCP resumability: a resume replays only the POST stream its Last-Event-ID names, then ends") {
  fixture f;
  const auto sid = f.open_session();
  auto ra = f.send(post(fx::call_tool(21, "report", {}, progress_meta("21")), sid));
  auto a = f.read(ra);
  a.drive_to_end();
  auto rb = f.send(post(fx::call_tool(22, "report", {}, progress_meta("22")), sid));
  auto b = f.read(rb);
  b.drive_to_end();
  const auto a_events = a.events();  // the priming event, three progress notifications, the result
  REQUIRE(a_events.size() == 5);
  const auto replay_of = [&](std::uint64_t cursor) {
    auto g = f.send(get(sid).set("Last-Event-ID", std::to_string(cursor)));
    REQUIRE(g.head.status == 200);
    auto resumed = f.read(g);
    resumed.drive_to_end();  // the stream ended already: what it holds, then the end
    return resumed.messages();
  };
  SUBCASE("from the priming event: the whole call, with the same ids") {
    const auto msgs = replay_of(*a_events[0].id);
    REQUIRE(msgs.size() == 4);
    for (std::size_t i = 0; i < 4; ++i) CHECK(*msgs[i].id == *a_events[i + 1].id);
    for (std::size_t i = 0; i < 3; ++i) {
      REQUIRE(is_progress(msgs[i]));
      CHECK(fx::to_json(fx::parse(msgs[i].data).root["params"]["progressToken"]) == "21");
    }
    CHECK(is_response_for(msgs[3], "21"));
  }
  SUBCASE("from its second progress: the rest of it, never the later call's frames") {
    const auto msgs = replay_of(*a_events[2].id);
    REQUIRE(msgs.size() == 2);
    CHECK(*msgs[0].id == *a_events[3].id);
    CHECK(is_response_for(msgs[1], "21"));
  }
  SUBCASE("from its result: nothing") { CHECK(replay_of(*a_events[4].id).empty()); }
  SUBCASE("a live GET stream carries neither call") {
    auto g = f.send(get(sid));
    auto live = f.read(g);
    for (int i = 0; i < 3; ++i) (void)live.pull();
    CHECK(live.messages().empty());
  }
}

TEST_CASE("SEP-1699: close_stream ends the POST after the priming event, GET + Last-Event-ID gets the result") {
  fixture f;
  const auto sid = f.open_session();
  auto req = post(fx::call_tool(1, "reconnect"), sid);
  req.set("MCP-Protocol-Version", "2025-03-26");  // as the conformance scenario sends it
  auto r = f.send(req);
  REQUIRE(r.head.status == 200);
  REQUIRE(header_of(r, "Content-Type") == "text/event-stream");
  auto reader = f.read(r);
  reader.drive_to_end();
  REQUIRE(f.held_started.wait_arrived());  // close_stream has returned
  CHECK(f.closed_stream.load());
  const auto events = reader.events();
  CAPTURE(reader.wire());
  REQUIRE(events.size() == 1);  // the priming event only: no result, no close frame
  REQUIRE(events[0].id.has_value());
  CHECK(events[0].retry == std::optional<std::uint64_t>{500});
  CHECK(events[0].data.empty());
  const std::uint64_t cursor = *events[0].id;
  const auto s = f.session_of(sid);
  REQUIRE(s);

  const auto got_result = [](const auto& ev) {
    return std::any_of(ev.begin(), ev.end(), [](const sse_event& e) { return is_response_for(e, "1"); });
  };
  const auto check_resumed = [&](const sse_reader& resumed) {
    const auto msgs = resumed.messages();
    REQUIRE(msgs.size() == 2);
    CHECK(is_log(msgs[0]));  // a message after the close rides the resumed stream too, before the result
    REQUIRE(is_response_for(msgs[1], "1"));
    CHECK(*msgs[0].id > cursor);
    CHECK(*msgs[1].id > *msgs[0].id);
    CHECK(fx::str(fx::at(fx::parse(msgs[1].data).root["result"]["content"], 0)["text"]) ==
          "Reconnection test completed successfully");
  };
  SUBCASE("the client reconnects before the result exists: it arrives live") {
    auto g = f.send(get(sid).set("Last-Event-ID", std::to_string(cursor)));
    REQUIRE(g.head.status == 200);
    auto resumed = f.read(g);
    (void)resumed.pull();
    CHECK(resumed.messages().empty());
    f.held_gate.open();
    REQUIRE(resumed.drive_until(got_result));
    check_resumed(resumed);
  }
  SUBCASE("the client reconnects after the result: the replay has it") {
    f.held_gate.open();
    REQUIRE(eventually([&] { return s->stream()->stats().channels_open == 0; }));  // the result ended it
    auto g = f.send(get(sid).set("Last-Event-ID", std::to_string(cursor)));
    REQUIRE(g.head.status == 200);
    auto resumed = f.read(g);
    REQUIRE(resumed.drive_until(got_result));
    check_resumed(resumed);
  }
  SUBCASE("close_stream without SSE accepted changes nothing and answers false") {
    f.held_gate.open();
    f.closed_stream = true;
    auto plain = post(fx::call_tool(2, "reconnect"), sid);
    plain.set("Accept", "application/json");
    auto box = f.start(plain);
    REQUIRE(f.held_started.wait_arrived(2));
    REQUIRE(box->wait());
    CHECK(header_of(*box->reply, "Content-Type") == "application/json");
    CHECK_FALSE(f.closed_stream.load());
  }
  CHECK_FALSE(f.held_saw_stop.load());
  CHECK(eventually([&] { return f.ep->bridge().charges(sid) == 0; }));
}

TEST_CASE("SEP-1699: close_stream after the priming event went out sends its retry in a block of its own") {
  fixture f;
  const auto sid = f.open_session();
  auto r = f.send(post(fx::call_tool(3, "log_then_close"), sid));
  auto reader = f.read(r);
  REQUIRE(f.held_started.wait_arrived());
  REQUIRE(reader.drive_until([](const auto& ev) { return count_if_events(ev, is_log) == 1; }));
  f.held_gate.open();
  reader.drive_to_end();
  const auto events = reader.events();
  CAPTURE(reader.wire());
  REQUIRE(events.size() == 3);
  CHECK(events[0].retry == std::optional<std::uint64_t>{1000});  // the priming event, default retry
  CHECK(is_log(events[1]));
  CHECK(events[2].retry == std::optional<std::uint64_t>{700});
  CHECK_FALSE(events[2].id.has_value());
  CHECK(events[2].data.empty());
  CHECK(eventually([&] { return f.closed_stream.load(); }));
  // The result went to this POST's stream: a resume after the log's id gets it, then the end.
  const auto s = f.session_of(sid);
  REQUIRE(eventually([&] { return s->stream()->stats().channels_open == 0; }));
  auto g = f.send(get(sid).set("Last-Event-ID", std::to_string(*events[1].id)));
  auto resumed = f.read(g);
  resumed.drive_to_end();
  REQUIRE(resumed.messages().size() == 1);
  CHECK(is_response_for(resumed.messages()[0], "3"));
}

TEST_CASE("SEP-1699: close_stream is false on a channel that cannot end a response (stdio-like sink)") {
  server_info info;
  info.name = "sink-test";
  info.version = "1.0.0";
  server_builder b{info};
  std::atomic<int> answer{-1};
  add_tool(b, "try_close", [&](call_context& ctx, const arguments&) {
    answer = ctx.close_stream(10ms) ? 1 : 0;
    return tool_result::text("ok");
  });
  server srv = fx::build(b);
  fx::connection conn;
  const auto a = conn.send(srv, fx::call_tool(1, "try_close"));
  CHECK(a.returned);
  CHECK(answer.load() == 0);
}

TEST_CASE("sessions.md/projection-and-finals: a detached operation streams its progress and its final over HTTP") {
  fixture f;
  const auto sid = f.open_session();
  auto r = f.send(post(fx::call_tool(15, "fleet", {}, progress_meta(R"("t15")")), sid));
  auto reader = f.read(r);
  REQUIRE(reader.drive_until([](const auto& ev) { return count_if_events(ev, is_progress) == 1; }));
  f.fleet_go.set();
  reader.drive_to_end();
  const auto msgs = reader.messages();
  REQUIRE(msgs.size() == 3);
  CHECK(fx::str(fx::parse(msgs[0].data).root["params"]["_meta"][execution_id_meta_key]) == "exec-7");
  REQUIRE(is_response_for(msgs[2], "15"));
  // The final is the work's complete result (not the provisional "started"), the execution id in
  // its _meta, and no top-level members beside the result's own.
  const auto fin = fx::parse(msgs[2].data);
  const auto result = fin.root["result"];
  CHECK(fx::str(result["structuredContent"]["status"]) == "completed");
  CHECK(result["structuredContent"]["agents_success"].to_int64() == 2);
  CHECK(fx::str(fx::at(result["content"], 0)["text"]) == R"({"status":"completed","agents_success":2})");
  CHECK(fx::str(result["_meta"][execution_id_meta_key]) == "exec-7");
  CHECK_FALSE(result["status"].exists());
  CHECK_FALSE(result["execution_id"].exists());
  CHECK(result.size() == 3);
}

TEST_CASE("sessions.md/streamed-post-admission: without SSE accepted progress goes live to the GET stream and the POST answers plain") {
  fixture f;
  const auto sid = f.open_session();
  auto g = f.send(get(sid));
  REQUIRE(g.head.status == 200);
  auto stream = f.read(g);
  auto req = post(fx::call_tool(16, "report", {}, progress_meta("16")), sid);
  req.set("Accept", "application/json");
  auto r = f.send(req);
  CHECK(header_of(r, "Content-Type") == "application/json");
  CHECK(fx::str(fx::at(body_of(r).root["result"]["content"], 0)["text"]) == "reported");
  REQUIRE(stream.drive_until([](const auto& ev) { return count_if_events(ev, is_progress) == 3; }));
  for (const auto& e : stream.messages()) CHECK_FALSE(is_response_for(e, "16"));
}

TEST_CASE("http.md/delete-sessions-on: DELETE ends the session (200), later requests on it are 404") {
  fixture f;
  const auto sid = f.open_session();
  auto d = f.send(del(sid));
  CHECK(d.head.status == 200);
  CHECK(d.head.body.empty());
  CHECK(f.ep->sessions().count("alice") == 0);
  auto p = f.send(post(fx::request(20, "ping"), sid));
  CHECK(p.head.status == 404);
  CHECK(code_of(p) == -32007);
  CHECK(fx::to_json(body_of(p).root["id"]) == "20");
  CHECK(f.send(del(sid)).head.status == 404);
  CHECK(f.send(get(sid)).head.status == 404);
  // docs/http.md#processing-order-on-the-mcp-path: a notification on a dead session is 404, never
  // 202.
  auto n = f.send(post(fx::notification("notifications/initialized"), sid));
  CHECK(n.head.status == 404);
  CHECK(code_of(n) == -32007);
}

TEST_CASE("sessions.md/the-get-pump, sessions.md/credential-re-validation: the GET stream's tick re-validates the credential and closes on revocation") {
  fixture f;
  const auto sid = f.open_session();
  auto g = f.send(get(sid));
  REQUIRE(g.head.status == 200);
  auto stream = f.read(g);
  (void)stream.pull();
  CHECK_FALSE(stream.finished());
  f.clk.advance(default_pump_tick);
  REQUIRE(stream.stream()->wait_time(f.clk.steady_now()) == 0ms);
  (void)stream.pull();  // a tick: still valid, and the idle tick writes a heartbeat
  CHECK(stream.wire().find("event: heartbeat") != std::string::npos);
  f.auth.verdict->store(credential_verdict::revoked);
  f.clk.advance(default_pump_tick);
  stream.drive_to_end();
  const auto msgs = stream.messages();
  REQUIRE_FALSE(msgs.empty());
  REQUIRE(is_close(msgs.back()));
  CHECK(fx::str(fx::parse(msgs.back().data).root["params"]["reason"]) == "credential_revoked");
}

TEST_CASE("sessions.md/streamed-post-admission: with streamed_post off no POST answers SSE, progress goes to the GET stream") {
  fixture f{[](http_endpoint_options& o) { o.streamed_post = false; }};
  const auto sid = f.open_session();
  auto g = f.send(get(sid));
  auto stream = f.read(g);
  auto r = f.send(post(fx::call_tool(3, "report", {}, progress_meta("3")), sid));
  CHECK(header_of(r, "Content-Type") == "application/json");
  REQUIRE(stream.drive_until([](const auto& ev) { return count_if_events(ev, is_progress) == 3; }));
  auto logs = f.send(post(fx::call_tool(4, "logger"), sid));
  CHECK(header_of(logs, "Content-Type") == "application/json");
}

// ---- refusals ------------------------------------------------------------------------------------

TEST_CASE("design.md/json-rpc: malformed JSON, arrays and null ids answer -32700 / -32600 with id null") {
  fixture f;
  auto bad = f.send(post("{\"jsonrpc\":\"2.0\",\"id\":1,"));
  CHECK(bad.head.status == 200);
  CHECK(code_of(bad) == -32700);
  CHECK(body_of(bad).root["id"].kind() == json::kind::null);
  auto arr = f.send(post(R"([{"jsonrpc":"2.0","id":1,"method":"ping"}])"));
  CHECK(code_of(arr) == -32600);
  CHECK(body_of(arr).root["id"].kind() == json::kind::null);
  auto null_id = f.send(post(R"({"jsonrpc":"2.0","id":null,"method":"ping"})"));
  CHECK(code_of(null_id) == -32600);
  CHECK(body_of(null_id).root["id"].kind() == json::kind::null);
  CHECK(fx::is_correlation_id(fx::str(body_of(null_id).root["error"]["data"]["correlation_id"])));
}

TEST_CASE("MCP 2025-11-25 transports: Content-Type must be application/json (415), the body cap answers 413 before parsing") {
  fixture f{[](http_endpoint_options& o) { o.max_body_bytes = 64; }};
  auto tp = post(fx::request(1, "ping"));
  tp.set("Content-Type", "text/plain");
  CHECK(f.send(tp).head.status == 415);
  tp.drop("Content-Type");
  CHECK(f.send(tp).head.status == 415);
  tp.set("Content-Type", "Application/JSON; charset=utf-8");
  CHECK(f.send(tp).head.status == 200);
  auto big = post(std::string(65, '['));  // not JSON either: the size is checked first
  auto r = f.send(big);
  CHECK(r.head.status == 413);
  CHECK(code_of(r) == -32600);
}

TEST_CASE("MCP 2025-11-25 transports: POST Accept is lenient, 406 only when it names neither type nor a wildcard") {
  fixture f;
  auto req = post(fx::request(1, "ping"));
  req.set("Accept", "application/json");
  CHECK(f.send(req).head.status == 200);
  req.set("Accept", "text/event-stream");
  CHECK(f.send(req).head.status == 200);
  req.set("Accept", "*/*");
  CHECK(f.send(req).head.status == 200);
  req.drop("Accept");
  CHECK(f.send(req).head.status == 200);
  req.set("Accept", "text/html");
  auto r = f.send(req);
  CHECK(r.head.status == 406);
  CHECK(code_of(r) == -32011);
}

TEST_CASE("http.md/processing-order-on-the-mcp-path: an unsupported MCP-Protocol-Version is 400 -32009, every supported one passes") {
  fixture f;
  auto req = post(fx::request(1, "ping"));
  req.set("MCP-Protocol-Version", "1999-01-01");
  auto r = f.send(req);
  CHECK(r.head.status == 400);
  CHECK(code_of(r) == -32009);
  // A POST's header is read with its body (eras.md#classification), so the answer echoes the id.
  CHECK(body_of(r).root["id"].to_int64() == 1);
  for (const auto v : supported_protocol_versions) {
    req.set("MCP-Protocol-Version", std::string{v});
    CHECK(f.send(req).head.status == 200);
  }
  // On GET too, before the session is looked at.
  auto g = get("nonexistent");
  g.set("MCP-Protocol-Version", "1999-01-01");
  CHECK(f.send(g).head.status == 400);
}

TEST_CASE("sessions.md/the-session-registry: foreign, unknown and deleted sessions are 404 -32007 alike") {
  fixture f;
  const auto sid = f.open_session();
  auto foreign = f.send(post(fx::request(1, "ping"), sid, "bob-token"));
  CHECK(foreign.head.status == 404);
  CHECK(code_of(foreign) == -32007);
  auto unknown = f.send(post(fx::request(1, "ping"), "ffffffffffffffffffffffffffffffff"));
  CHECK(unknown.head.status == 404);
  CHECK(fx::str(body_of(foreign).root["error"]["message"]) == fx::str(body_of(unknown).root["error"]["message"]));
  CHECK(f.send(get(sid, "bob-token")).head.status == 404);
  CHECK(f.send(del(sid, "bob-token")).head.status == 404);
  CHECK(f.session_of(sid) != nullptr);  // the foreign DELETE changed nothing
}

TEST_CASE("http.md/get-sessions-on: GET needs a session header (400), a live session (404) and SSE in Accept (406)") {
  fixture f;
  const auto sid = f.open_session();
  auto none = f.send(get(""));
  CHECK(none.head.status == 400);
  CHECK(code_of(none) == -32600);
  auto no_sse = get(sid);
  no_sse.set("Accept", "application/json");
  auto r = f.send(no_sse);
  CHECK(r.head.status == 406);
  CHECK(code_of(r) == -32011);
  no_sse.set("Accept", "*/*");  // wildcards do not opt in
  CHECK(f.send(no_sse).head.status == 406);
  auto d = f.send(del(""));
  CHECK(d.head.status == 400);
  CHECK(code_of(d) == -32600);
}

TEST_CASE("design.md/other-wire-pieces, sessions.md/get-attach-replay-resume: a junk Last-Event-ID reads as no cursor, a cursor outside the window ends the session") {
  fixture f;
  const auto sid = f.open_session();
  // A streamed call (its frames belong to its POST stream), then a GET-only one (its progress
  // rides the GET stream, held in the ring for a later attach).
  auto r = f.send(post(fx::call_tool(2, "report", {}, progress_meta("2")), sid));
  auto reader = f.read(r);
  reader.drive_to_end();
  auto plain = post(fx::call_tool(4, "report", {}, progress_meta("4")), sid);
  plain.set("Accept", "application/json");
  REQUIRE(f.send(plain).head.status == 200);
  SUBCASE("junk reads as no cursor: every frame of the GET stream, none of the POST stream (MCP)") {
    auto g = f.send(get(sid).set("Last-Event-ID", "12abc"));
    REQUIRE(g.head.status == 200);
    auto all = f.read(g);
    REQUIRE(all.drive_until([](const auto& ev) { return messages_of(ev).size() == 3; }));
    for (int i = 0; i < 3; ++i) (void)all.pull();
    const auto msgs = all.messages();
    REQUIRE(msgs.size() == 3);
    for (const auto& m : msgs) {
      REQUIRE(is_progress(m));
      CHECK(fx::to_json(fx::parse(m.data).root["params"]["progressToken"]) == "4");
    }
  }
  SUBCASE("a future cursor is a gap: 404 Replay window exceeded, and the session is gone") {
    auto g = f.send(get(sid).set("Last-Event-ID", "999"));
    CHECK(g.head.status == 404);
    CHECK(code_of(g) == -32007);
    CHECK(fx::str(body_of(g).root["error"]["message"]) == "Replay window exceeded");
    CHECK(fx::str(body_of(g).root["error"]["data"]["reason"]) == "replay_window_exceeded");
    CHECK(f.send(post(fx::request(3, "ping"), sid)).head.status == 404);
  }
}

TEST_CASE("sessions.md/streamed-post-admission: a request id still in flight on the session answers 409 -32600") {
  fixture f;
  const auto sid = f.open_session();
  auto first = post(fx::call_tool(5, "held"), sid);
  first.set("Accept", "application/json");
  auto box = f.start(first);
  REQUIRE(f.held_started.wait_arrived());
  auto dup = f.send(post(fx::call_tool(5, "echo"), sid));
  CHECK(dup.head.status == 409);
  CHECK(code_of(dup) == -32600);
  CHECK(fx::to_json(body_of(dup).root["id"]) == "5");
  SUBCASE("the string id \"5\" is another request") {
    CHECK(f.send(post(fx::call_tool(R"("5")", "echo"), sid)).head.status == 200);
  }
  f.held_gate.open();
  REQUIRE(box->wait());
  CHECK(box->reply->head.status == 200);
  // Finished: the id is free again.
  CHECK(f.send(post(fx::call_tool(5, "echo"), sid)).head.status == 200);
}

TEST_CASE("sessions.md/streamed-post-admission: a streamed call over the per-principal cap is refused 429 with Retry-After") {
  fixture f;
  const auto sid = f.open_session();
  const auto s = f.session_of(sid);
  session_metrics inert;
  std::vector<post_admission> held;
  for (std::int64_t id = 101; id <= 104; ++id) {
    held.push_back(admit_post(post_mode::streamed, f.ep->budget(), f.ep->bridge(), s, request_id{id},
                              request_id{std::string{"t"}}, inert));
    REQUIRE(held.back().call.has_value());
  }
  auto r = f.send(post(fx::call_tool(105, "report", {}, progress_meta("105")), sid));
  CHECK(r.head.status == 429);
  CHECK(code_of(r) == -32012);
  CHECK(header_of(r, "Retry-After") == "30");
  CHECK(body_of(r).root["error"]["data"]["retry_after_ms"].to_int64() == 30000);
  CHECK(fx::str(body_of(r).root["error"]["data"]["reason"]) == "post_per_principal_cap");
  SUBCASE("a call that would upgrade later falls back to the GET stream and answers plain") {
    auto g = f.send(get(sid));
    auto stream = f.read(g);
    auto plain = f.send(post(fx::call_tool(106, "logger"), sid));
    CHECK(header_of(plain, "Content-Type") == "application/json");
    REQUIRE(stream.drive_until([](const auto& ev) { return count_if_events(ev, is_log) == 3; }));
  }
  for (auto& a : held) {
    a.call->abandon();
    a.lease.release();
  }
}

TEST_CASE("http.md/processing-order-on-the-mcp-path: methods other than GET, POST and DELETE are 405 with Allow") {
  fixture f;
  request r = post(fx::request(1, "ping"));
  r.method = "PUT";
  auto a = f.send(r);
  CHECK(a.head.status == 405);
  CHECK(header_of(a, "Allow") == "GET, POST, DELETE");
  r.method = "post";  // methods are case-sensitive
  CHECK(f.send(r).head.status == 405);
}

TEST_CASE("security.md/dns-rebinding-host-and-origin: Origin and Host refusals are 403, before authentication") {
  fixture f{[](http_endpoint_options& o) {
    o.allowed_origins = {"http://localhost:8765"};
    o.allowed_hosts = {"mcp.example.test:8765"};
  }};
  auto req = post(fx::initialize(1), {}, "nobody");
  req.set("Origin", "http://evil.example.com");
  auto o = f.send(req);
  CHECK(o.head.status == 403);
  CHECK(code_of(o) == -32008);
  req.set("Origin", "http://localhost:8765");
  CHECK(f.send(req).head.status == 401);  // the Origin passed; authentication comes next
  req.set("Authorization", "Bearer alice-token");
  CHECK(f.send(req).head.status == 200);

  SUBCASE("Host on a loopback listener") {
    req.set("Host", "evil.example.com");
    auto h = f.send(req);
    CHECK(h.head.status == 403);
    CHECK(fx::str(body_of(h).root["error"]["message"]) == "Host not allowed");
    req.drop("Host");
    CHECK(f.send(req).head.status == 403);
    for (const char* ok : {"localhost", "127.0.0.1:8765", "[::1]:8765", "LOCALHOST:1", "mcp.example.test:8765"}) {
      CAPTURE(ok);
      req.set("Host", ok);
      CHECK(f.send(req).head.status == 200);
    }
    req.set("Host", "localhost.evil.example.com");
    CHECK(f.send(req).head.status == 403);
    req.set("Host", "evil.example.com");
    req.local = "10.0.0.5:8765";  // not a loopback listener: no Host check
    CHECK(f.send(req).head.status == 200);
    req.local = "[::1]:8765";
    CHECK(f.send(req).head.status == 403);
  }
}

TEST_CASE("security.md/dns-rebinding-host-and-origin: on loopback the server's own origin passes (Origin = scheme + Host), no other does") {
  fixture f;  // no allowed_origins at all
  auto req = post(fx::initialize(1));
  req.local = "127.0.0.1:40123";
  for (const char* ok : {"http://127.0.0.1:40123", "https://127.0.0.1:40123", "HTTP://127.0.0.1:40123"}) {
    CAPTURE(ok);
    req.set("Host", "127.0.0.1:40123");
    req.set("Origin", ok);
    CHECK(f.send(req).head.status == 200);
  }
  req.set("Host", "LocalHost:40123");
  req.set("Origin", "http://localhost:40123");
  CHECK(f.send(req).head.status == 200);
  req.set("Host", "[::1]:40123");
  req.set("Origin", "http://[::1]:40123");
  CHECK(f.send(req).head.status == 200);
  // Another port on the same machine is another origin; so is a prefix, a path or userinfo.
  req.set("Host", "127.0.0.1:40123");
  for (const char* bad : {"http://127.0.0.1:3000", "http://127.0.0.1", "http://127.0.0.1:401234", "http://127.0.0.1:40123/",
                          "ftp://127.0.0.1:40123", "http://localhost:40123", "null"}) {
    CAPTURE(bad);
    req.set("Origin", bad);
    auto r = f.send(req);
    CHECK(r.head.status == 403);
    CHECK(code_of(r) == -32008);
  }
  // Off a loopback listener there is no "own origin" (the Host is the client's word).
  req.local = "10.0.0.5:40123";
  req.set("Host", "10.0.0.5:40123");
  req.set("Origin", "http://10.0.0.5:40123");
  CHECK(f.send(req).head.status == 403);
  SUBCASE("the option turns it off") {
    fixture g{[](http_endpoint_options& o) { o.allow_loopback_same_origin = false; }};
    auto r = post(fx::initialize(1));
    r.local = "127.0.0.1:40123";
    r.set("Host", "127.0.0.1:40123");
    r.set("Origin", "http://127.0.0.1:40123");
    CHECK(g.send(r).head.status == 403);
  }
}

TEST_CASE("MCP authorization: a request without a valid credential is 401 with WWW-Authenticate: Bearer") {
  fixture f{[](http_endpoint_options& o) { o.resource_metadata_url = "https://mcp.example.test/.well-known/oauth-protected-resource"; }};
  auto req = post(fx::request(1, "ping"), {}, "wrong");
  auto r = f.send(req);
  CHECK(r.head.status == 401);
  // A token was presented and refused: invalid_token (RFC 6750 section 3.1).
  CHECK(header_of(r, "WWW-Authenticate") ==
        R"(Bearer error="invalid_token", resource_metadata="https://mcp.example.test/.well-known/oauth-protected-resource")");
  CHECK(code_of(r) == -32001);
  CHECK(body_of(r).root["id"].kind() == json::kind::null);
  CHECK(fx::is_correlation_id(fx::str(body_of(r).root["error"]["data"]["correlation_id"])));
  req.drop("Authorization");
  const http_reply none = f.send(req);
  CHECK(none.head.status == 401);
  CHECK(header_of(none, "WWW-Authenticate") ==
        R"(Bearer resource_metadata="https://mcp.example.test/.well-known/oauth-protected-resource")");
  // Notifications too: an unauthenticated notification is never 202.
  CHECK(f.send(post(fx::notification("notifications/initialized"), {}, "wrong")).head.status == 401);
  CHECK(f.send(get("x", "wrong")).head.status == 401);

  SUBCASE("without resource metadata the challenge is bare") {
    fixture g;
    CHECK(header_of(g.send(post(fx::request(1, "ping"), {}, "wrong")), "WWW-Authenticate") ==
          R"(Bearer error="invalid_token")");
  }
}

TEST_CASE("http.md/processing-order-on-the-mcp-path: the kill switch answers -32005 with id null and no data, before anything else") {
  fixture f;
  f.srv->switches().set_disabled(true);
  auto r = f.send(post(fx::request(1, "ping"), {}, "wrong"));
  CHECK(r.head.status == 200);
  CHECK(code_of(r) == -32005);
  CHECK(fx::str(body_of(r).root["error"]["message"]) == "MCP is disabled on this server");
  CHECK(body_of(r).root["id"].kind() == json::kind::null);
  CHECK_FALSE(body_of(r).root["error"]["data"].exists());
  request put = post("");
  put.method = "PUT";
  CHECK(code_of(f.send(put)) == -32005);
  f.srv->switches().set_disabled(false);
  CHECK(f.send(post(fx::request(1, "ping"))).head.status == 200);
}

TEST_CASE("sessions.md/the-session-registry, sessions.md/shutdown: the session cap is 429 -32010, after begin_shutdown initialize is 503 -32015") {
  fixture f{[](http_endpoint_options& o) { o.session.max_sessions_per_principal = 1; }};
  const auto sid = f.open_session();
  // the one session is busy (its GET stream is open): nothing to evict, the mint is refused
  auto g = f.send(get(sid));
  REQUIRE(g.head.status == 200);
  auto stream = f.read(g);
  auto capped = f.send(post(fx::initialize(2)));
  CHECK(capped.head.status == 429);
  CHECK(code_of(capped) == -32010);
  CHECK(body_of(capped).root["error"]["data"]["retry_after_ms"].kind() == json::kind::null);

  f.ep->begin_shutdown();
  f.ep->begin_shutdown();  // idempotent
  stream.drive_to_end();
  const auto msgs = stream.messages();
  REQUIRE_FALSE(msgs.empty());
  REQUIRE(is_close(msgs.back()));
  CHECK(fx::str(fx::parse(msgs.back().data).root["params"]["reason"]) == "session_terminated");
  auto down = f.send(post(fx::initialize(3), {}, "bob-token"));
  CHECK(down.head.status == 503);
  CHECK(code_of(down) == -32015);
}

TEST_CASE("sessions.md/the-session-registry: tick() collects idle sessions, their requests are then 404") {
  fixture f;
  const auto sid = f.open_session();
  f.clk.advance(default_session_idle_ttl + 1s);
  f.ep->tick();
  CHECK(f.ep->sessions().size() == 0);
  CHECK(f.send(post(fx::request(1, "ping"), sid)).head.status == 404);
}

TEST_CASE("retry dispatch_queue_full: a full executor answers 503 -32603 with Retry-After") {
  fixture f;
  const auto sid = f.open_session();
  f.exec.refuse = true;
  auto r = f.send(post(fx::call_tool(1, "report", {}, progress_meta("1")), sid));
  CHECK(r.head.status == 503);
  CHECK(code_of(r) == -32603);
  CHECK(header_of(r, "Retry-After") == "1");
  CHECK(body_of(r).root["error"]["data"]["retry_after_ms"].to_int64() == 1000);
  CHECK(f.ep->budget().in_use() == 0);
  f.exec.refuse = false;
  CHECK(f.send(post(fx::call_tool(1, "echo"), sid)).head.status == 200);  // the id was given back
}

TEST_CASE("executor ownership: one binder at a time, a second bind throws and changes nothing") {
  fixture f;  // binds f.exec for the fixture's lifetime
  REQUIRE(f.exec_binding.bound());
  std::atomic<int> intruder{0};
  const http_executor other = [&intruder](std::function<void()> task) {
    ++intruder;
    task();
    return true;
  };
  // A second server on the same endpoint is refused loudly; the first keeps the executor (its
  // refusal still answers 503).
  CHECK_THROWS_AS((void)f.ep->bind_executor(other), std::logic_error);
  f.exec.refuse = true;
  CHECK(f.send(post(fx::request(1, "ping"))).head.status == 503);
  CHECK(intruder.load() == 0);
  // Released: inline dispatch until another owner binds, which then has it alone.
  f.exec_binding.release();
  CHECK_FALSE(f.exec_binding.bound());
  CHECK(f.send(post(fx::request(2, "ping"))).head.status == 200);
  http_executor_binding second = f.ep->bind_executor(other);
  CHECK(f.send(post(fx::request(3, "ping"))).head.status == 200);
  CHECK(intruder.load() == 1);
  CHECK_THROWS_AS((void)f.ep->bind_executor(f.exec.get()), std::logic_error);
  CHECK(f.send(post(fx::request(4, "ping"))).head.status == 200);
  CHECK(intruder.load() == 2);
  // A moved binding carries the ownership; destroying it unbinds.
  {
    http_executor_binding moved = std::move(second);
    CHECK(moved.bound());
    CHECK_FALSE(second.bound());  // NOLINT(bugprone-use-after-move): moved-from is documented empty
  }
  CHECK(f.send(post(fx::request(5, "ping"))).head.status == 200);
  CHECK(intruder.load() == 2);
  CHECK_THROWS_AS((void)f.ep->bind_executor(http_executor{}), std::invalid_argument);
  // A binding may outlive its endpoint: releasing it then does nothing.
  f.exec.refuse = false;
  f.exec_binding = f.ep->bind_executor(f.exec.get());
  f.ep.reset();
  f.exec_binding.release();
  CHECK_FALSE(f.exec_binding.bound());
}

TEST_CASE("http.md/processing-order-on-the-mcp-path: with sessions off GET and DELETE are 405 and initialize mints nothing") {
  fixture f{[](http_endpoint_options& o) { o.sessions = false; }};
  auto init = f.send(post(fx::initialize(1)));
  CHECK(init.head.status == 200);
  CHECK_FALSE(init.head.header("Mcp-Session-Id").has_value());
  auto g = f.send(get("x"));
  CHECK(g.head.status == 405);
  CHECK(header_of(g, "Allow") == "POST");
  CHECK(f.send(del("x")).head.status == 405);
  CHECK(f.send(post(fx::notification("notifications/initialized"))).head.status == 202);
  auto req = post(fx::request(2, "ping"));
  CHECK(f.send(req).head.status == 200);
  req.set("Origin", "http://elsewhere.example");  // the Origin check holds on every path (eras.md)
  auto refused = f.send(req);
  CHECK(refused.head.status == 403);
  CHECK(code_of(refused) == -32008);
}

TEST_CASE("without an executor, dispatch runs inline and every reply comes before handle returns") {
  fixture f{{}, {}, false};
  const auto sid = f.open_session();
  auto box = f.start(post(fx::call_tool(2, "report", {}, progress_meta("2")), sid));
  REQUIRE(box->reply.has_value());
  auto reader = f.read(*box->reply);
  reader.drive_to_end();
  const auto msgs = reader.messages();
  REQUIRE(msgs.size() == 4);
  CHECK(is_response_for(msgs.back(), "2"));
}

// ---- the other routes ------------------------------------------------------------------------------

TEST_CASE("operational routes: /metrics, /healthz, /readyz, unknown paths 404, matches()") {
  fixture f;
  request m;
  m.method = "GET";
  m.target = "/metrics";
  m.set("Host", "localhost:8765");
  CHECK(f.send(m).head.status == 404);  // no registry yet
  CHECK(f.ep->matches("/metrics"));
  CHECK(f.ep->matches("/mcp?x=1"));
  CHECK(f.ep->matches("/mcp/v1/"));
  CHECK_FALSE(f.ep->matches("/mcp/v2"));
  CHECK_FALSE(f.ep->matches("/api/v1/approvals/x"));

  request h = m;
  h.target = "/healthz";
  auto hr = f.send(h);
  CHECK(hr.head.status == 200);
  CHECK(hr.head.body == R"({"status":"ok"})");
  request rz = m;
  rz.target = "/readyz";
  CHECK(f.send(rz).head.status == 200);
  request nowhere = m;
  nowhere.target = "/nowhere";
  CHECK(f.send(nowhere).head.status == 404);
  request post_health = h;
  post_health.method = "POST";
  auto ph = f.send(post_health);
  CHECK(ph.head.status == 405);
  CHECK(header_of(ph, "Allow") == "GET");
}

TEST_CASE("operational routes: readiness and the metrics registry set before the first request") {
  metrics_registry reg;
  std::atomic<bool> up{false};
  memory_audit_sink audit;
  fixture f;
  // A fresh endpoint (set_* before its first request).
  f.ep = std::make_unique<http_endpoint>(*f.srv, f.auth, test_options(), clock_ref<manual_clock>{f.clk});
  f.exec_binding = f.ep->bind_executor(f.exec.get());
  f.ep->set_metrics(reg);
  f.ep->set_audit(audit);
  f.ep->set_readiness([&] { return up.load(); });
  request rz;
  rz.method = "GET";
  rz.target = "/readyz";
  rz.set("Host", "localhost");
  CHECK(f.send(rz).head.status == 503);
  up = true;
  CHECK(f.send(rz).head.status == 200);

  const auto sid = f.open_session();
  request m = rz;
  m.target = "/metrics";
  auto r = f.send(m);
  REQUIRE(r.head.status == 200);
  CHECK(header_of(r, "Content-Type").rfind("text/plain; version=0.0.4", 0) == 0);
  CHECK(r.head.body.find("mcpcore_mcp_sessions_active 1") != std::string::npos);
  // The session layer's audit rows reach the sink, and so do the endpoint's refusals.
  CHECK(f.send(post(fx::request(1, "ping"), "ffffffffffffffffffffffffffffffff")).head.status == 404);
  const auto rows = audit.entries();
  CHECK(std::any_of(rows.begin(), rows.end(), [](const audit_entry& e) { return e.action == "mcp.session.open"; }));
  CHECK(std::any_of(rows.begin(), rows.end(), [](const audit_entry& e) {
    return e.action == "mcp.session.reject" && e.detail == "reason=unknown_session";
  }));
  (void)sid;
}

TEST_CASE("approvals.md: the approval routes are delegated with the authenticated principal (null when it failed)") {
  memory_approval_store store;
  approval_service service{store};
  approval_endpoint approvals{service, allow_all_authorizer{}};
  fixture f;
  f.ep = std::make_unique<http_endpoint>(*f.srv, f.auth, test_options(), clock_ref<manual_clock>{f.clk});
  f.ep->set_approvals(approvals);
  CHECK(f.ep->matches("/api/v1/approvals/0123456789abcdef0123456789abcdef"));
  request r;
  r.method = "GET";
  r.target = "/api/v1/approvals/0123456789abcdef0123456789abcdef";
  r.set("Host", "localhost");
  auto anon = f.send(r);
  CHECK(anon.head.status == 401);
  r.set("Authorization", "Bearer alice-token");
  auto known = f.send(r);
  CHECK(known.head.status == 404);  // authenticated: the ticket simply does not exist
  r.set("Host", "evil.example.com");
  CHECK(f.send(r).head.status == 403);
}


// ---- head checks, repeated Host / Origin, unreadable local addresses (issue 21 items 1-3) ----------

namespace {

/// The reply `check_head` gives for `r` (status 0: none, the head passes).
http_reply head_verdict(const fixture& f, const request& r, std::optional<std::uint64_t> declared = std::nullopt,
                        bool chunked = false) {
  http_request_view v = r.view();
  v.body = {};
  v.declared_length = declared;
  v.chunked = chunked;
  http_reply out;
  out.head.status = 0;
  if (auto refused = f.ep->check_head(v)) out.head = std::move(*refused);
  return out;
}

}  // namespace

TEST_CASE("http.md/head-checks: check_head refuses on the head alone what handle would refuse before the body") {
  fixture f{[](http_endpoint_options& o) { o.max_body_bytes = 1000; }};
  // A request that passes every head check: no answer yet.
  CHECK(head_verdict(f, post(""), 10).head.status == 0);
  CHECK(head_verdict(f, post(""), std::nullopt, true).head.status == 0);  // chunked: its size is checked as it arrives
  CHECK(head_verdict(f, get("any-session")).head.status == 0);            // the session is checked by handle
  // Route and method.
  request unknown = post("");
  unknown.target = "/nope";
  CHECK(head_verdict(f, unknown, 10).head.status == 404);
  request put = post("");
  put.method = "PUT";
  const auto p405 = head_verdict(f, put);
  CHECK(p405.head.status == 405);
  CHECK(header_of(p405, "Allow") == "GET, POST, DELETE");
  // Host, Origin, protocol version of a GET, authentication: the same answers as handle.
  request evil = post("");
  evil.set("Host", "evil.example");
  CHECK(head_verdict(f, evil, 10).head.status == 403);
  CHECK(code_of(head_verdict(f, evil, 10)) == -32008);
  request origin = post("");
  origin.set("Origin", "http://evil.example");
  CHECK(head_verdict(f, origin, 10).head.status == 403);
  request version = get("s");
  version.set("MCP-Protocol-Version", "1999-01-01");
  CHECK(head_verdict(f, version).head.status == 400);
  const auto anon = head_verdict(f, post("", {}, "wrong"), 4U << 20U);
  CHECK(anon.head.status == 401);
  CHECK(header_of(anon, "WWW-Authenticate") == R"(Bearer error="invalid_token")");
  CHECK(code_of(anon) == -32001);
  // The declared length against max_body_bytes, after authentication.
  const auto big = head_verdict(f, post(""), 1001);
  CHECK(big.head.status == 413);
  CHECK(head_verdict(f, post(""), 1000).head.status == 0);
  CHECK(head_verdict(f, post("", {}, "wrong"), 1001).head.status == 401);
  // The operational routes: Host, then GET only.
  request health = get("");
  health.drop("Authorization");
  health.target = "/healthz";
  CHECK(head_verdict(f, health).head.status == 0);
  health.method = "POST";
  CHECK(head_verdict(f, health).head.status == 405);
  // The kill switch first, deliberately bare.
  f.srv->switches().set_disabled(true);
  CHECK(code_of(head_verdict(f, post("", {}, "wrong"), 10)) == -32005);
  f.srv->switches().set_disabled(false);
}

TEST_CASE("http.md/processing-order-on-the-mcp-path: a GET or DELETE with a body over the cap is 413 from check_head and handle alike") {
  // Found by fuzz_http_endpoint: handle answered the GET's missing session (400) while check_head,
  // from the declared length, answered 413.
  fixture f{[](http_endpoint_options& o) { o.max_body_bytes = 64; }};
  for (request r : {get(""), del("")}) {
    r.drop("Mcp-Session-Id");
    r.body = std::string(65, 'x');
    CHECK(head_verdict(f, r, r.body.size()).head.status == 413);
    const auto answered = f.send(r);
    CHECK(answered.head.status == 413);
    CHECK(code_of(answered) == -32600);
    r.body = std::string(64, 'x');  // at the cap: the method's own steps (no session: 400)
    CHECK(head_verdict(f, r, r.body.size()).head.status == 0);
    CHECK(f.send(r).head.status == 400);
  }
}

TEST_CASE("http.md/head-checks: check_head on the approval routes checks Host and refuses the unauthenticated") {
  memory_approval_store store;
  approval_service service{store};
  approval_endpoint approvals{service, allow_all_authorizer{}};
  fixture f;
  f.ep = std::make_unique<http_endpoint>(*f.srv, f.auth, test_options(), clock_ref<manual_clock>{f.clk});
  f.ep->set_approvals(approvals);
  request r;
  r.method = "POST";
  r.target = "/api/v1/approvals/0123456789abcdef0123456789abcdef/approve";
  r.set("Host", "localhost");
  CHECK(head_verdict(f, r, 4U << 20U).head.status == 401);
  r.set("Authorization", "Bearer alice-token");
  CHECK(head_verdict(f, r, 10).head.status == 0);
  r.set("Host", "evil.example.com");
  CHECK(head_verdict(f, r, 10).head.status == 403);
}

TEST_CASE("security.md/dns-rebinding-host-and-origin: a repeated Host is 400 and a repeated Origin 403 on every route") {
  fixture f{[](http_endpoint_options& o) { o.allowed_origins = {"http://localhost:8765"}; }};
  auto twice = [](request r, std::string_view name, std::string_view second) {
    r.headers.push_back(http_header{std::string{name}, std::string{second}});
    return r;
  };
  request ok = post(fx::initialize(1));
  ok.set("Host", "127.0.0.1");
  CHECK(f.send(ok).head.status == 200);
  const request hosts = twice(ok, "host", "evil.example");
  const auto r = f.send(hosts);
  CHECK(r.head.status == 400);
  CHECK(code_of(r) == -32600);
  CHECK(head_verdict(f, hosts, 10).head.status == 400);
  // Even two equal Host fields, and off a loopback listener (RFC 9112 §3.2).
  request same = twice(ok, "Host", "127.0.0.1");
  same.local = "10.0.0.5:8765";
  CHECK(f.send(same).head.status == 400);
  // Two Origin fields, even both allowed.
  request origins = ok;
  origins.set("Origin", "http://localhost:8765");
  CHECK(f.send(origins).head.status == 200);
  origins = twice(origins, "Origin", "http://localhost:8765");
  const auto o = f.send(origins);
  CHECK(o.head.status == 403);
  CHECK(code_of(o) == -32008);
  CHECK(head_verdict(f, origins, 10).head.status == 403);
  // The other routes.
  for (const char* target : {"/healthz", "/metrics", "/readyz"}) {
    const std::string shown{target};
    CAPTURE(shown);
    request g = twice(get(""), "Host", "evil.example");
    g.target = target;
    CHECK(f.send(g).head.status == 400);
  }
  request del = twice(ok, "Host", "evil.example");
  del.method = "GET";
  CHECK(f.send(del).head.status == 400);
}

TEST_CASE("security.md/dns-rebinding-host-and-origin: a local address the endpoint cannot read is checked as loopback") {
  fixture f;
  request r = post(fx::initialize(1));
  r.set("Host", "evil.example");
  for (const char* local : {"::1:8800", "", "junk", "[::1]:8800", "[::1", "127.0.0.1", "[::ffff:127.0.0.1]:80",
                            "[0:0:0:0:0:0:0:1]:80", "0.0.0.0:80", "[::]:80", "10.0.0.1:99999", "10.0.0:80",
                            "256.0.0.1:80", "[2001:db8::1]x"}) {
    const std::string shown{local};
    CAPTURE(shown);
    r.local = local;
    const auto a = f.send(r);
    CHECK(a.head.status == 403);
  }
  for (const char* local : {"10.0.0.1:80", "[2001:db8::1]:8765", "192.168.1.2", "[::ffff:10.0.0.1]:80"}) {
    const std::string shown{local};
    CAPTURE(shown);
    r.local = local;
    CHECK(f.send(r).head.status == 200);
  }
}

}  // TEST_SUITE
