// SPDX-License-Identifier: Apache-2.0
// Handshake-era calls that ask their client for input over Streamable HTTP wait without a thread
// (docs/eras.md#waiting-for-the-client): the handler's thread goes back while the client answers,
// the answer resumes the handler, and a timeout (the maintenance tick), a cancellation, the
// session's end or shutdown end the call; one principal's waiting calls are capped.
#include <mcpcore/transport/http_endpoint.hpp>

#include <doctest/doctest.h>

#include "support/http_endpoint_fixture.hpp"
#include "support/server_fixture.hpp"

#include <mcpcore/dispatch/server.hpp>
#include <mcpcore/dispatch/tool.hpp>
#include <mcpcore/governance/clock.hpp>
#include <mcpcore/wire/json.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

using namespace mcpcore;
using namespace std::chrono_literals;
namespace fx = server_fixture;

namespace waiting_for_client_test {

using namespace http_endpoint_fixture;

constexpr std::string_view name_form = R"({"type":"object","properties":{"name":{"type":"string"}}})";
constexpr std::string_view elicitation_caps = R"({"elicitation":{}})";

/// The accepted elicitation's `field`, if the client answered `key`.
std::optional<std::string> accepted(call_context& ctx, std::string_view key, std::string_view field) {
  const json::value v = ctx.input(key);
  if (fx::str(v["action"]) != "accept") return std::nullopt;
  const json::value f = v["content"][field];
  if (!f.is_string()) return std::nullopt;
  return std::string{f.as_string()};
}

/// A server whose tools ask the client for input, an endpoint on a manual clock (the server's
/// too), and an executor that counts the handler tasks running.
struct fixture : endpoint_harness {
  explicit fixture(const std::function<void(server_options&)>& tweak = {}) {
    server_options o;
    o.max_client_request_timeout = 5s;
    if (tweak) tweak(o);
    server_builder b{{.name = "waiting-test", .version = "1"}, o};
    b.clock(clock_ref<manual_clock>{clk});
    add_tool(b, "ask", [this](call_context& ctx, const arguments&) {
      ++runs;
      if (const auto name = accepted(ctx, "name", "name")) return tool_result::text("Hello, " + *name);
      return tool_result::need_input(input_required{}.ask("name", input_request::elicit("Name?", name_form)));
    });
    add_tool(b, "ask_twice", [](call_context& ctx, const arguments&) {
      if (ctx.round_state() == "second") {
        const auto color = accepted(ctx, "color", "name");
        return tool_result::text(std::string{"likes "} + (color ? *color : "?"));
      }
      if (const auto name = accepted(ctx, "name", "name")) {
        return tool_result::need_input(
            input_required{}.ask("color", input_request::elicit("Color?", name_form)).state("second"));
      }
      return tool_result::need_input(input_required{}.ask("name", input_request::elicit("Name?", name_form)));
    });
    b.prompt("greet").description("Greets by name.").handler([](call_context& ctx, const prompt_arguments&) {
      if (const auto name = accepted(ctx, "name", "name")) {
        return prompt_result{"A greeting"}.add_user_text("Hello, " + *name);
      }
      return prompt_result::need_input(input_required{}.ask("name", input_request::elicit("Name?", name_form)));
    });
    serve(b, {}, false);
    auto inner = exec.get();
    exec_binding = ep->bind_executor([inner, r = running](std::function<void()> task) {
      return inner([task = std::move(task), r] {
        ++*r;
        task();
        --*r;
      });
    });
  }

  /// initialize declaring `capabilities`; the session id.
  std::string open_session(std::string_view token = "alice-token", std::string_view capabilities = elicitation_caps) {
    const auto r = send(post(fx::initialize(1, "2025-11-25", capabilities), {}, token));
    REQUIRE(r.head.status == 200);
    const auto sid = r.head.header("Mcp-Session-Id");
    REQUIRE(sid.has_value());
    return std::string{*sid};
  }

  std::shared_ptr<std::atomic<int>> running = std::make_shared<std::atomic<int>>(0);
  std::atomic<int> runs{0};
};

bool is_method(const sse_event& e, std::string_view m) { return has_method(e, m); }

/// The id of the first `method` request on the stream read so far.
std::int64_t request_id_of(const sse_reader& reader, std::string_view method) {
  for (const auto& e : reader.messages()) {
    if (is_method(e, method)) return fx::parse(e.data).root["id"].to_int64().value_or(0);
  }
  return 0;
}

/// Posts `call` on `sid` and reads its stream until the client is asked for input; the request's id.
std::int64_t call_until_asked(fixture& f, std::string_view sid, const std::string& call, std::optional<sse_reader>& reader,
                              std::string_view token = "alice-token") {
  auto r = f.send(post(call, sid, token));
  REQUIRE(r.head.status == 200);
  REQUIRE(header_of(r, "Content-Type") == "text/event-stream");
  reader.emplace(f.read(r));
  REQUIRE(reader->drive_until([](const auto& ev) {
    return std::any_of(ev.begin(), ev.end(), [](const sse_event& e) { return is_method(e, "elicitation/create"); });
  }));
  const std::int64_t rid = request_id_of(*reader, "elicitation/create");
  REQUIRE(rid != 0);
  return rid;
}

std::string accept_name(std::string_view name) {
  return std::string{R"({"action":"accept","content":{"name":")"} + std::string{name} + "\"}}";
}

/// The text of the result on the stream for `id_json` (empty when there is none).
std::string result_text(const sse_reader& reader, std::string_view id_json) {
  for (const auto& e : reader.messages()) {
    if (is_response_for(e, id_json)) return fx::str(fx::at(fx::parse(e.data).root["result"]["content"], 0)["text"]);
  }
  return {};
}

}  // namespace waiting_for_client_test

using namespace waiting_for_client_test;

TEST_SUITE("waiting_for_client") {

TEST_CASE("eras.md/waiting-for-the-client: the handler's thread goes back while the client answers, and the answer resumes it") {
  fixture f;
  const auto sid = f.open_session();
  std::optional<sse_reader> reader;
  const auto rid = call_until_asked(f, sid, fx::call_tool(3, "ask"), reader);
  // Nothing runs while the client thinks.
  CHECK(eventually([&] { return f.running->load() == 0; }));
  CHECK(f.runs.load() == 1);
  const auto answer = f.send(post(fx::client_result(rid, accept_name("Ada")), sid));
  CHECK(answer.head.status == 202);
  reader->drive_to_end();
  CHECK(result_text(*reader, "3") == "Hello, Ada");
  CHECK(f.runs.load() == 2);

  SUBCASE("the id is free again once answered") {
    CHECK(eventually([&] { return f.send(post(fx::call_tool(3, "echo_missing"), sid)).head.status == 200; }));
  }
}

TEST_CASE("eras.md/waiting-for-the-client: several rounds, each sent when the last one's answers are in") {
  fixture f;
  const auto sid = f.open_session();
  std::optional<sse_reader> reader;
  const auto first = call_until_asked(f, sid, fx::call_tool(4, "ask_twice"), reader);
  CHECK(f.send(post(fx::client_result(first, accept_name("Bo")), sid)).head.status == 202);
  REQUIRE(reader->drive_until([](const auto& ev) {
    return std::count_if(ev.begin(), ev.end(), [](const sse_event& e) { return is_method(e, "elicitation/create"); }) ==
           2;
  }));
  std::int64_t second = 0;
  for (const auto& e : reader->messages()) {
    if (is_method(e, "elicitation/create")) second = fx::parse(e.data).root["id"].to_int64().value_or(0);
  }
  REQUIRE(second != first);
  CHECK(eventually([&] { return f.running->load() == 0; }));
  CHECK(f.send(post(fx::client_result(second, accept_name("red")), sid)).head.status == 202);
  reader->drive_to_end();
  CHECK(result_text(*reader, "4") == "likes red");
}

TEST_CASE("eras.md/waiting-for-the-client: prompts/get waits the same way") {
  fixture f;
  const auto sid = f.open_session();
  std::optional<sse_reader> reader;
  const auto rid = call_until_asked(f, sid, fx::request(5, "prompts/get", R"({"name":"greet"})"), reader);
  CHECK(f.send(post(fx::client_result(rid, accept_name("Cy")), sid)).head.status == 202);
  reader->drive_to_end();
  bool found = false;
  for (const auto& e : reader->messages()) {
    if (!is_response_for(e, "5")) continue;
    found = true;
    CHECK(fx::str(fx::at(fx::parse(e.data).root["result"]["messages"], 0)["content"]["text"]) == "Hello, Cy");
  }
  CHECK(found);
}

TEST_CASE("eras.md/waiting-for-the-client: past max_client_request_timeout the tick ends the call with a tool error") {
  fixture f;
  const auto sid = f.open_session();
  std::optional<sse_reader> reader;
  const auto rid = call_until_asked(f, sid, fx::call_tool(6, "ask"), reader);
  f.clk.advance(4s);
  f.ep->tick();
  (void)reader->pull();
  CHECK(result_text(*reader, "6").empty());
  f.clk.advance(2s);
  f.ep->tick();
  reader->drive_to_end();
  const auto msgs = reader->messages();
  // The client is told the request was abandoned, then the call answers.
  bool told = false;
  for (const auto& e : msgs) {
    if (!is_method(e, "notifications/cancelled")) continue;
    const auto n = fx::parse(e.data);
    told = n.root["params"]["requestId"].to_int64() == rid && fx::str(n.root["params"]["reason"]) == "timed out";
  }
  CHECK(told);
  REQUIRE_FALSE(msgs.empty());
  REQUIRE(is_response_for(msgs.back(), "6"));
  const auto last = fx::parse(msgs.back().data);
  const json::value result = last.root["result"];
  CHECK(result["isError"].is_bool());
  const std::string text = fx::str(fx::at(result["content"], 0)["text"]);
  CAPTURE(text);
  CHECK(text.find("'name'") != std::string::npos);
  CHECK(text.find("did not answer in time") != std::string::npos);
  CHECK(f.runs.load() == 1);  // the handler did not run again
  // A late answer changes nothing.
  CHECK(f.send(post(fx::client_result(rid, accept_name("late")), sid)).head.status == 202);
  CHECK(f.runs.load() == 1);
}

TEST_CASE("eras.md/waiting-for-the-client: notifications/cancelled of the call ends it without an answer") {
  fixture f;
  const auto sid = f.open_session();
  std::optional<sse_reader> reader;
  const auto rid = call_until_asked(f, sid, fx::call_tool(7, "ask"), reader);
  CHECK(f.send(post(fx::cancel("7"), sid)).head.status == 202);
  reader->drive_to_end();
  for (const auto& e : reader->messages()) CHECK_FALSE(is_response_for(e, "7"));
  // The handler did not run again, even for a late answer; the id is free again.
  CHECK(f.send(post(fx::client_result(rid, accept_name("late")), sid)).head.status == 202);
  CHECK(f.runs.load() == 1);
  CHECK(eventually([&] {
    const auto again = f.send(post(fx::call_tool(7, "echo_missing"), sid));
    return again.head.status == 200 && header_of(again, "Content-Type") == "application/json";
  }));
}

TEST_CASE("eras.md/waiting-for-the-client: max_waiting_calls_per_principal caps one caller, not the others") {
  fixture f{[](server_options& o) { o.max_waiting_calls_per_principal = 2; }};
  const auto alice = f.open_session();
  std::optional<sse_reader> r1;
  std::optional<sse_reader> r2;
  (void)call_until_asked(f, alice, fx::call_tool(10, "ask"), r1);
  (void)call_until_asked(f, alice, fx::call_tool(11, "ask"), r2);
  // The third waits for nothing: it answers at once, a tool error naming the cap.
  auto third = f.send(post(fx::call_tool(12, "ask"), alice));
  REQUIRE(third.head.status == 200);
  std::string text;
  if (third.stream) {
    auto rd = f.read(third);
    rd.drive_to_end();
    text = result_text(rd, "12");
  } else {
    text = fx::str(fx::at(body_of(third).root["result"]["content"], 0)["text"]);
  }
  CHECK(text.find("too many of this caller's calls are waiting for the client") != std::string::npos);

  // Another principal waits, and a ping of anyone answers at once: no thread is held.
  const auto bob = f.open_session("bob-token");
  std::optional<sse_reader> rb;
  (void)call_until_asked(f, bob, fx::call_tool(13, "ask"), rb, "bob-token");
  const auto ping = f.send(post(fx::request(14, "ping", "{}"), bob, "bob-token"));
  CHECK(ping.head.status == 200);
  CHECK(eventually([&] { return f.running->load() == 0; }));

  SUBCASE("the session's end frees the caller's count") {
    CHECK(f.send(del(alice)).head.status == 200);
    const auto again = f.open_session();
    // The ended calls give their count back once their continuations ran.
    std::int64_t id = 15;
    const auto waits = [&] {
      auto r = f.send(post(fx::call_tool(++id, "ask"), again));
      return header_of(r, "Content-Type") == "text/event-stream";
    };
    CHECK(eventually(waits));
    CHECK(eventually(waits));
  }
  SUBCASE("shutdown ends every waiting call without an answer") {
    f.ep->begin_shutdown();
    for (auto* rd : {&*r1, &*r2, &*rb}) {
      rd->drive_to_end();
      for (const auto& e : rd->messages()) CHECK_FALSE(e.data.find("\"result\"") != std::string::npos);
    }
  }
}

TEST_CASE("eras.md/waiting-for-the-client: a call that asks for input once shutdown began ends at once, without an answer") {
  // Found by fuzz_http_endpoint: a call dispatched after shutdown cancelled the waiting calls
  // waited for an answer that could never come, and its POST was never answered.
  fixture f;
  const auto sid = f.open_session();
  f.srv->begin_shutdown();
  auto r = f.send(post(fx::call_tool(20, "ask"), sid));
  if (r.stream) {
    auto rd = f.read(r);
    rd.drive_to_end();
    CHECK(result_text(rd, "20").empty());
  } else {
    CHECK(r.head.status == 202);
  }
  CHECK(f.srv->waiting_calls() == 0);
  CHECK(f.runs.load() == 1);
}

}  // TEST_SUITE
