// SPDX-License-Identifier: Apache-2.0
// Tables that change at run time (docs/server.md#tables-that-change): adding, replacing and
// removing tools, resources, templates and prompts on a live server, validated as at build; a
// running call keeps its tool; list pages and cursors across a change; listChanged advertised
// (server_options::list_changed); the caps; and the notifications on every transport
// (docs/server.md#notifications): the handshake era's GET stream over HTTP and stdio.
#include <mcpcore/dispatch/server.hpp>

#include <doctest/doctest.h>

#include "support/http_endpoint_fixture.hpp"
#include "support/server_fixture.hpp"

#include <mcpcore/dispatch/tool.hpp>
#include <mcpcore/expected.hpp>
#include <mcpcore/transport/http_endpoint.hpp>
#include <mcpcore/transport/stdio.hpp>
#include <mcpcore/wire/json.hpp>

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include <unistd.h>

using namespace mcpcore;
using namespace std::chrono_literals;
namespace fx = server_fixture;

namespace {

server_info info() { return {.name = "tables", .version = "1"}; }

/// A read tool answering `text`.
auto read_tool(std::string text) {
  return [text = std::move(text)](tool_builder& t) {
    t.description("Answers " + text + ".")
        .security("Thing", operation::read)
        .effect(tool_effect::read_only, true)
        .handler([text](call_context&, const arguments&) { return tool_result::text(text); });
  };
}

server build_with(server_options o, const std::vector<std::string>& tools) {
  server_builder b{info(), std::move(o)};
  for (const auto& n : tools) {
    tool_builder t = b.tool(n);
    read_tool(n)(t);
  }
  return fx::build(b);
}

std::vector<std::string> names(const fx::answer& a, std::string_view key = "tools", std::string_view member = "name") {
  std::vector<std::string> out;
  for (const auto item : a.result()[key].elements()) out.push_back(fx::str(item[member]));
  return out;
}

std::string text_of(const fx::answer& a) { return fx::str(fx::at(a.result()["content"], 0)["text"]); }

auto text_resource(std::string text) {
  return [text = std::move(text)](resource_builder& r) {
    r.name("doc").handler([text](call_context&, std::string_view uri, const uri_variables&) {
      return std::optional<resource_result>{resource_result{}.add_text(std::string{uri}, "text/plain", text)};
    });
  };
}

}  // namespace

TEST_SUITE("server tables") {

TEST_CASE("server.md/tables-that-change: add_tool serves a new tool, a second add replaces it, remove_tool removes it") {
  server srv = build_with({}, {"first"});
  fx::connection c;
  REQUIRE(srv.add_tool("second", read_tool("two")).has_value());
  CHECK(names(c.send(srv, fx::request(1, "tools/list"))) == std::vector<std::string>{"first", "second"});
  CHECK(text_of(c.send(srv, fx::call_tool(2, "second"))) == "two");
  REQUIRE(srv.add_tool("second", read_tool("deux")).has_value());
  CHECK(names(c.send(srv, fx::request(3, "tools/list"))) == std::vector<std::string>{"first", "second"});
  CHECK(text_of(c.send(srv, fx::call_tool(4, "second"))) == "deux");
  CHECK(srv.remove_tool("first"));
  CHECK_FALSE(srv.remove_tool("first"));
  CHECK(names(c.send(srv, fx::request(5, "tools/list"))) == std::vector<std::string>{"second"});
  const auto gone = c.send(srv, fx::call_tool(6, "first"));
  CHECK(gone.code() == -32602);
  CHECK(gone.message() == "Unknown tool: first");
}

TEST_CASE("server.md/tables-that-change: a run-time registration is validated as at build and a refusal changes nothing") {
  server_builder b{info()};
  tool_builder ta = b.tool("a");
  read_tool("a")(ta);
  b.securables({"Thing"});
  server srv = fx::build(b);
  const auto no_description = srv.add_tool("bad", [](tool_builder& t) {
    t.security("Thing", operation::read).handler([](call_context&, const arguments&) { return tool_result::text(""); });
  });
  REQUIRE_FALSE(no_description.has_value());
  CHECK(no_description.error() == library_errc::build_refused);
  CHECK(no_description.error().message() == "tool 'bad': has no description");
  const auto outside = srv.add_tool("other", [](tool_builder& t) {
    t.description("d").security("Elsewhere", operation::read).handler([](call_context&, const arguments&) {
      return tool_result::text("");
    });
  });
  REQUIRE_FALSE(outside.has_value());
  CHECK(outside.error().message() == "tool 'other': securable 'Elsewhere' is outside the catalogue");
  const auto schema = srv.add_tool("a", [](tool_builder& t) {
    t.description("d").input_schema(R"({"type":"object","properties":{"x":{"type":"strin"}}})")
        .security("Thing", operation::read)
        .handler([](call_context&, const arguments&) { return tool_result::text(""); });
  });
  REQUIRE_FALSE(schema.has_value());
  CHECK(schema.error().details().size() >= 1);
  fx::connection c;
  CHECK(names(c.send(srv, fx::request(1, "tools/list"))) == std::vector<std::string>{"a"});
  CHECK(text_of(c.send(srv, fx::call_tool(2, "a"))) == "a");  // the refused replacement did not replace it
}

TEST_CASE("server.md/tables-that-change: a call already running keeps its removed tool and answers normally") {
  server srv = build_with({}, {});
  fx::gate g;
  REQUIRE(srv.add_tool("slow", [&g](tool_builder& t) {
    t.description("Waits.").security("Thing", operation::read).effect(tool_effect::read_only, true)
        .handler([&g](call_context& ctx, const arguments&) {
          g.arrive();
          (void)g.block(ctx.stop_token());
          return tool_result::text("finished");
        });
  }).has_value());
  fx::connection c;
  std::optional<fx::answer> slow;
  std::thread t{[&] { slow.emplace(c.send(srv, fx::call_tool(1, "slow"))); }};
  REQUIRE(g.wait_arrived());
  CHECK(srv.remove_tool("slow"));
  CHECK(c.send(srv, fx::call_tool(2, "slow")).code() == -32602);  // a new call no longer finds it
  g.open();
  t.join();
  REQUIRE(slow.has_value());
  CHECK(slow->returned);
  CHECK(slow->code() == 0);
  CHECK(text_of(*slow) == "finished");
}

TEST_CASE("server.md/tables-that-change: list pages follow a change and a cursor issued before it is refused") {
  server srv = build_with({.page_size = 2}, {"t0", "t1", "t2"});
  fx::connection c;
  const auto first = c.send(srv, fx::request(1, "tools/list"));
  const std::string cursor = fx::str(first.result()["nextCursor"]);
  REQUIRE_FALSE(cursor.empty());
  // Before a change the cursor works (twice: it is not consumed).
  CHECK(names(c.send(srv, fx::request(2, "tools/list", R"({"cursor":")" + cursor + R"("})"))) ==
        std::vector<std::string>{"t2"});
  REQUIRE(srv.add_tool("t3", read_tool("t3")).has_value());
  const auto stale = c.send(srv, fx::request(3, "tools/list", R"({"cursor":")" + cursor + R"("})"));
  CHECK(stale.code() == -32602);
  CHECK(stale.message() == "Invalid cursor");
  const auto again = c.send(srv, fx::request(4, "tools/list"));
  const std::string fresh = fx::str(again.result()["nextCursor"]);
  CHECK(names(c.send(srv, fx::request(5, "tools/list", R"({"cursor":")" + fresh + R"("})"))) ==
        std::vector<std::string>{"t2", "t3"});
  // Hiding a tool is not a change of the list's order: its cursors stay valid.
  CHECK(srv.set_tool_enabled("t0", false));
  CHECK(names(c.send(srv, fx::request(6, "tools/list", R"({"cursor":")" + fresh + R"("})"))) ==
        std::vector<std::string>{"t2", "t3"});
  // Another list's change leaves the tools' cursors alone.
  REQUIRE(srv.add_prompt("p", [](prompt_builder& p) {
    p.handler([](call_context&, const prompt_arguments&) { return prompt_result{}; });
  }).has_value());
  CHECK(names(c.send(srv, fx::request(7, "tools/list", R"({"cursor":")" + fresh + R"("})"))) ==
        std::vector<std::string>{"t2", "t3"});
}

TEST_CASE("server.md/tables-that-change: list_changed advertises listChanged true for every family, even empty ones") {
  server plain = build_with({}, {"a"});
  fx::connection c;
  const auto plain_init = c.send(plain, fx::initialize(1));  // the document the views below read
  const auto caps = plain_init.result()["capabilities"];
  CHECK(fx::to_json(caps["tools"]) == R"({"listChanged":false})");
  CHECK_FALSE(caps["prompts"].exists());
  CHECK_FALSE(caps["resources"].exists());

  server changing = build_with({.list_changed = true}, {});
  fx::connection d;
  const auto changing_init = d.send(changing, fx::initialize(1));
  const auto all = changing_init.result()["capabilities"];
  CHECK(fx::to_json(all["tools"]) == R"({"listChanged":true})");
  CHECK(fx::to_json(all["prompts"]) == R"({"listChanged":true})");
  CHECK(fx::to_json(all["resources"]) == R"({"subscribe":true,"listChanged":true})");
  CHECK(d.send(changing, fx::request(2, "tools/list")).result()["tools"].is_array());
  CHECK(changing.publishes(server_event_kind::prompts_list_changed));
}

TEST_CASE("server.md/tables-that-change: every change publishes its list's event, a removal of nothing publishes none") {
  server srv = build_with({}, {"a"});
  std::vector<server_event_kind> seen;
  auto sub = srv.subscribe([&](const server_event& e) { seen.push_back(e.kind); });
  REQUIRE(srv.add_tool("b", read_tool("b")).has_value());
  REQUIRE(srv.add_resource("res://x", text_resource("x")).has_value());
  REQUIRE(srv.add_resource_template("res://t/{id}", text_resource("t")).has_value());
  REQUIRE(srv.add_prompt("p", [](prompt_builder& p) {
    p.handler([](call_context&, const prompt_arguments&) { return prompt_result{}; });
  }).has_value());
  CHECK(srv.remove_tool("b"));
  CHECK_FALSE(srv.remove_tool("b"));
  CHECK(srv.remove_resource("res://x"));
  CHECK(srv.remove_resource_template("res://t/{id}"));
  CHECK(srv.remove_prompt("p"));
  CHECK(seen == std::vector<server_event_kind>{
                    server_event_kind::tools_list_changed, server_event_kind::resources_list_changed,
                    server_event_kind::resources_list_changed, server_event_kind::prompts_list_changed,
                    server_event_kind::tools_list_changed, server_event_kind::resources_list_changed,
                    server_event_kind::resources_list_changed, server_event_kind::prompts_list_changed});
}

TEST_CASE("server.md/tables-that-change: resources, templates and prompts added at run time are read, listed and removed") {
  server srv = build_with({}, {});
  REQUIRE(srv.add_resource("res://x", text_resource("fixed")).has_value());
  REQUIRE(srv.add_resource_template("res://items/{id}", text_resource("templated")).has_value());
  REQUIRE(srv.add_prompt("greet", [](prompt_builder& p) {
    p.description("Greets.").handler([](call_context&, const prompt_arguments&) {
      return prompt_result{}.add(prompt_result::role::user, content_block::text("hello"));
    });
  }).has_value());
  fx::connection c;
  CHECK(names(c.send(srv, fx::request(1, "resources/list")), "resources", "uri") == std::vector<std::string>{"res://x"});
  CHECK(names(c.send(srv, fx::request(2, "resources/templates/list")), "resourceTemplates", "uriTemplate") ==
        std::vector<std::string>{"res://items/{id}"});
  const auto read = c.send(srv, fx::request(3, "resources/read", R"({"uri":"res://items/7"})"));
  CHECK(fx::str(fx::at(read.result()["contents"], 0)["text"]) == "templated");
  CHECK(srv.has_resource("res://x"));
  CHECK(names(c.send(srv, fx::request(4, "prompts/list")), "prompts") == std::vector<std::string>{"greet"});
  CHECK(c.send(srv, fx::request(5, "prompts/get", R"({"name":"greet"})")).code() == 0);
  CHECK(srv.remove_resource("res://x"));
  CHECK_FALSE(srv.has_resource("res://x"));
  CHECK(c.send(srv, fx::request(6, "resources/read", R"({"uri":"res://x"})")).code() == -32002);
  CHECK(srv.remove_prompt("greet"));
  CHECK(c.send(srv, fx::request(7, "prompts/get", R"({"name":"greet"})")).code() == -32602);
  // One URI namespace: a fixed resource with the text of a template replaces the template.
  REQUIRE(srv.add_resource("res://items/{id}", text_resource("x")).has_value() == false);  // '{' in a fixed URI
  CHECK(srv.remove_resource_template("res://items/{id}"));
  CHECK_FALSE(srv.remove_resource_template("res://items/{id}"));
}

TEST_CASE("server.md/tables-that-change: the table caps refuse one more, at build and at run time") {
  server srv = build_with({.max_tools = 2}, {"a", "b"});
  const auto third = srv.add_tool("c", read_tool("c"));
  REQUIRE_FALSE(third.has_value());
  CHECK(third.error().message() == "the server has 3 tools, more than server_options.max_tools (2)");
  CHECK(srv.add_tool("b", read_tool("b2")).has_value());  // a replacement is not one more
  server_builder b{info(), {.max_tools = 1}};
  tool_builder ta = b.tool("a");
  read_tool("a")(ta);
  tool_builder tb = b.tool("b");
  read_tool("b")(tb);
  const auto built = b.build();
  REQUIRE_FALSE(built.has_value());
  CHECK(built.error().message() == "the server has 2 tools, more than server_options.max_tools (1)");
}

// ---- notifications over HTTP (the handshake era) -------------------------------------------------

namespace {

using namespace http_endpoint_fixture;

struct http_fixture : endpoint_harness {
  explicit http_fixture(bool list_changed = false) {
    server_builder b{info(), {.list_changed = list_changed}};
    b.resource("res://a").name("a").handler(http_endpoint_fixture::text_resource("A"));
    b.resource("res://b").name("b").handler(http_endpoint_fixture::text_resource("B"));
    serve(b);
  }
  std::string open_session(std::string_view token = "alice-token") {
    const auto r = send(post(fx::initialize(1, "2025-11-25"), {}, token));
    REQUIRE(r.head.status == 200);
    const auto sid = r.head.header("Mcp-Session-Id");
    REQUIRE(sid.has_value());
    const std::string id{*sid};
    CHECK(send(post(fx::notification("notifications/initialized"), id, token)).head.status == 202);
    return id;
  }
  sse_reader open_get(const std::string& sid, std::string_view token = "alice-token") {
    auto r = send(get(sid, token));
    REQUIRE(r.head.status == 200);
    return read(r);
  }
  void subscribe(const std::string& sid, std::string_view uri, std::string_view token = "alice-token") {
    const auto r = send(post(fx::request(9, "resources/subscribe", R"({"uri":")" + std::string{uri} + R"("})"), sid, token));
    REQUIRE(r.head.status == 200);
  }
};

std::string methods(const sse_reader& r) {
  std::string out;
  for (const auto& e : r.messages()) {
    const auto p = fx::parse(e.data);
    if (!p.root["method"].is_string()) continue;
    if (!out.empty()) out += ' ';
    out += p.root["method"].as_string();
    if (p.root["params"]["uri"].is_string()) out += "(" + std::string{p.root["params"]["uri"].as_string()} + ")";
  }
  return out;
}

}  // namespace

TEST_CASE("http.md/server-notifications: resources/updated reaches the GET stream of the subscribed session only") {
  http_fixture f;
  const std::string alice = f.open_session();
  const std::string bob = f.open_session("bob-token");
  f.subscribe(alice, "res://a");
  f.subscribe(bob, "res://b", "bob-token");
  auto ga = f.open_get(alice);
  auto gb = f.open_get(bob, "bob-token");
  f.srv->notify_resource_updated("res://a");
  REQUIRE(ga.drive_until([](const auto& ev) { return messages_of(ev).size() >= 1; }));
  (void)gb.pull();
  (void)gb.pull();
  CHECK(methods(ga) == "notifications/resources/updated(res://a)");
  CHECK(methods(gb).empty());
  f.srv->notify_resource_updated("res://b");
  REQUIRE(gb.drive_until([](const auto& ev) { return messages_of(ev).size() >= 1; }));
  CHECK(methods(gb) == "notifications/resources/updated(res://b)");
  // Replayable: the notification is on the ring with an id, like every GET-stream message.
  CHECK(gb.messages().front().id.has_value());
}

TEST_CASE("http.md/server-notifications: list changes reach every session's GET stream only with list_changed") {
  http_fixture quiet;
  const std::string q = quiet.open_session();
  auto gq = quiet.open_get(q);
  REQUIRE(quiet.srv->add_resource("res://c", [](resource_builder& r) {
    r.name("c").handler(http_endpoint_fixture::text_resource("C"));
  }).has_value());
  (void)gq.pull();
  (void)gq.pull();
  CHECK(methods(gq).empty());

  http_fixture loud{true};
  const std::string a = loud.open_session();
  const std::string b = loud.open_session("bob-token");
  auto ga = loud.open_get(a);
  auto gb = loud.open_get(b, "bob-token");
  REQUIRE(loud.srv->remove_resource("res://b"));
  REQUIRE(ga.drive_until([](const auto& ev) { return messages_of(ev).size() >= 1; }));
  REQUIRE(gb.drive_until([](const auto& ev) { return messages_of(ev).size() >= 1; }));
  CHECK(methods(ga) == "notifications/resources/list_changed");
  CHECK(methods(gb) == "notifications/resources/list_changed");
}

// ---- notifications over stdio (the handshake era) -------------------------------------------------

TEST_CASE("eras.md/stdio: server::notify_resource_updated reaches a subscribed stdio client, not for another uri") {
  server_builder b{info(), {.list_changed = true}};
  b.resource("res://a").name("a").handler(http_endpoint_fixture::text_resource("A"));
  server srv = fx::build(b);
  int in[2];
  int out[2];
  REQUIRE(::pipe(in) == 0);
  REQUIRE(::pipe(out) == 0);
  stdio_transport t{srv, principal{.id = "local"}};
  std::thread runner{[&] { (void)t.run(in[0], out[1]); }};
  auto write_line = [&](const std::string& line) {
    const std::string l = line + "\n";
    REQUIRE(::write(in[1], l.data(), l.size()) == static_cast<ssize_t>(l.size()));
  };
  std::string seen;
  auto read_until = [&](std::string_view needle) {
    const auto deadline = std::chrono::steady_clock::now() + fx::patience;
    char buf[4096];
    while (seen.find(needle) == std::string::npos && std::chrono::steady_clock::now() < deadline) {
      const auto n = ::read(out[0], buf, sizeof buf);
      if (n <= 0) break;
      seen.append(buf, static_cast<std::size_t>(n));
    }
    return seen.find(needle) != std::string::npos;
  };
  write_line(fx::initialize(1));
  REQUIRE(read_until(R"("id":1)"));
  write_line(fx::notification("notifications/initialized"));
  write_line(fx::request(2, "resources/subscribe", R"({"uri":"res://a"})"));
  REQUIRE(read_until(R"("id":2)"));
  srv.notify_resource_updated("res://other");
  srv.notify_resource_updated("res://a");
  REQUIRE(read_until(R"("uri":"res://a")"));
  REQUIRE(srv.add_tool("late", read_tool("late")).has_value());
  REQUIRE(read_until("notifications/tools/list_changed"));
  CHECK(seen.find("res://other") == std::string::npos);
  ::close(in[1]);
  runner.join();
  ::close(in[0]);
  ::close(out[0]);
  ::close(out[1]);
}

}  // TEST_SUITE
