// SPDX-License-Identifier: Apache-2.0
// The per-request era (MCP 2026-07-28) on the sans-I/O HTTP endpoint, through
// http_endpoint::handle: classification, the envelope, the header checks and their order, the
// revision and era served, the removed methods, server/discover, the result stamp and cache
// fields, per-request log levels, the JSON and SSE answers, cancellation by closing the stream,
// the stream cap, shutdown and the Origin check (docs/eras.md).
#include <mcpcore/transport/http_endpoint.hpp>

#include <doctest/doctest.h>

#include "support/http_endpoint_fixture.hpp"
#include "support/server_fixture.hpp"

#include <mcpcore/dispatch/operation.hpp>
#include <mcpcore/dispatch/server.hpp>
#include <mcpcore/dispatch/tool.hpp>
#include <mcpcore/governance/clock.hpp>
#include <mcpcore/session/session_registry.hpp>
#include <mcpcore/session/stream_admission.hpp>
#include <mcpcore/wire/era.hpp>
#include <mcpcore/wire/json.hpp>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

using namespace mcpcore;
using namespace std::chrono_literals;
namespace fx = server_fixture;

namespace per_request_endpoint_test {

using namespace http_endpoint_fixture;

// ---- requests ----------------------------------------------------------------------------------

/// `members` of a tools/call of `tool`.
std::string tool_members(std::string_view tool) { return R"("name":")" + std::string{tool} + '"'; }

/// A per-request tools/call of `tool` with every header right.
request pr_call(std::string_view id_json, std::string_view tool, const std::string& meta = envelope(),
                std::string_view token = "alice-token") {
  return pr_post(pr_body(id_json, "tools/call", tool_members(tool), meta), "tools/call", tool, token);
}

/// One per-request call: the method, its params members (JSON text without braces), its `Mcp-Name`.
struct method_call {
  std::string method;
  std::string members;
  std::optional<std::string> name;
};

/// The per-request POST of `c` with id `id_json`.
request pr_post_of(std::string_view id_json, const method_call& c) {
  return pr_post(pr_body(id_json, c.method, c.members), c.method,
                 c.name ? std::optional<std::string_view>{*c.name} : std::nullopt);
}

/// A call of each method of the optional tables (prompts, resources, completions); resources/read
/// reads `uri`.
std::vector<method_call> table_calls(std::string_view uri) {
  return {
      {"prompts/list", "", std::nullopt},
      {"prompts/get", R"("name":"greeting")", "greeting"},
      {"resources/list", "", std::nullopt},
      {"resources/templates/list", "", std::nullopt},
      {"resources/read", R"("uri":")" + std::string{uri} + '"', std::string{uri}},
      {"completion/complete", R"("ref":{"type":"ref/prompt","name":"greeting"},"argument":{"name":"topic","value":"a"})",
       std::nullopt},
  };
}

// ---- SSE ---------------------------------------------------------------------------------------

/// The lines of an SSE wire that are fields (not comments, not blank).
std::vector<std::string> field_lines(std::string_view wire) {
  std::vector<std::string> out;
  std::size_t pos = 0;
  while (pos < wire.size()) {
    const std::size_t nl = wire.find('\n', pos);
    const std::string_view line = wire.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
    pos = nl == std::string_view::npos ? wire.size() : nl + 1;
    if (!line.empty() && line.front() != ':') out.emplace_back(line);
  }
  return out;
}

// ---- the fixture ---------------------------------------------------------------------------------

/// A prompt "greeting" (with a completer: the server has completions), a resource
/// "test://doc", a resource "test://shared" with its own cache hint, and a template
/// "test://items/{id}".
void add_prompts_and_resources(server_builder& b) {
  b.prompt("greeting")
      .description("Greets.")
      .argument("topic", "What to talk about", false,
                [](std::string_view, const prompt_arguments&) { return std::vector<std::string>{"alpha", "beta"}; })
      .handler([](call_context&, const prompt_arguments&) { return prompt_result{"A greeting"}.add_user_text("hi"); });
  b.resource("test://doc").name("doc").mime_type("text/plain").handler(text_resource("doc"));
  b.resource("test://shared")
      .name("shared")
      .mime_type("text/plain")
      .cache(cache_hint{60000ms, cache_scope::shared})
      .handler(text_resource("shared"));
  b.resource_template("test://items/{id}").name("item").mime_type("text/plain").handler(text_resource("item"));
}

struct fixture_config {
  std::function<void(http_endpoint_options&)> endpoint{};
  std::function<void(server_builder&)> extra{};
  server_options options{};
  server_info info{.name = "per-request-test", .version = "2.3.4"};
};

/// A server with the test tools (plus `extra`), an endpoint on a manual clock with a
/// thread-per-task executor.
struct fixture : endpoint_harness {
  explicit fixture(fixture_config cfg = {}) {
    server_builder b{cfg.info, cfg.options};
    add_tool(b, "echo", [](call_context&, const arguments&) { return tool_result::text("echoed"); });
    add_tool(b, "levels", [](call_context& ctx, const arguments&) {
      (void)ctx.log(log_level::debug, "at debug");
      (void)ctx.log(log_level::info, "at info");
      (void)ctx.log(log_level::warning, "at warning");
      (void)ctx.log(log_level::error, "at error");
      return tool_result::text("logged");
    });
    add_tool(b, "report", [](call_context& ctx, const arguments&) {
      for (int i = 1; i <= 3; ++i) (void)ctx.progress(i, 3, "step");
      return tool_result::text("reported");
    });
    add_tool(b, "held", [this](call_context& ctx, const arguments&) {
      (void)ctx.progress(1, 10);
      (void)ctx.log(log_level::info, "holding");
      held_started.arrive();
      if (!held_gate.block(ctx.stop_token())) held_saw_stop = true;
      ++held_returned;
      return tool_result::text("held");
    });
    add_tool(b, "ask", [](call_context& ctx, const arguments&) {
      if (const auto t = ctx.input("model")["content"]["text"]; t.is_string()) {
        return tool_result::text("model: " + std::string{t.as_string()});
      }
      return tool_result::need_input(input_required{}.ask(
          "model", input_request::create_message(R"({"messages":[],"maxTokens":5})")));
    });
    if (cfg.extra) cfg.extra(b);
    serve(b, cfg.endpoint);
  }
  ~fixture() {
    held_gate.open();
    exec.join();
  }
  fixture(const fixture&) = delete;
  fixture& operator=(const fixture&) = delete;

  fx::gate held_started;
  fx::gate held_gate;
  std::atomic<bool> held_saw_stop{false};
  std::atomic<int> held_returned{0};
};

fixture_config everything() {
  fixture_config c;
  c.extra = add_prompts_and_resources;
  return c;
}

/// The capability families an object names, in order ("tools resources ..."), each an object.
std::string families_of(json::value caps) {
  std::string out;
  for (const auto m : caps.members()) {
    if (!out.empty()) out += ' ';
    out += m.key;
    if (!m.value().is_object()) out += "(not an object)";
  }
  return out;
}

/// A -32020 with `data.mismatch.header` = `header`.
void check_mismatch(const http_reply& r, std::string_view id_json, std::string_view header) {
  check_refusal(r, 400, -32020, id_json);
  const auto p = body_of(r);
  CHECK(fx::str(p.root["error"]["data"]["mismatch"]["header"]) == header);
  CHECK(p.root["error"]["data"]["mismatch"]["body"].is_string());
}

/// `result` of a 200 answer, whose `resultType` is "complete" and whose `_meta` names the server.
void check_complete(const fx::parsed& p, std::string_view version = "2.3.4") {
  const json::value r = p.root["result"];
  REQUIRE_MESSAGE(r.is_object(), fx::to_json(p.root));
  CHECK(fx::str(r["resultType"]) == "complete");
  const json::value si = r["_meta"]["io.modelcontextprotocol/serverInfo"];
  CHECK(fx::str(si["name"]) == "per-request-test");
  CHECK(fx::str(si["version"]) == version);
}

}  // namespace per_request_endpoint_test

using namespace per_request_endpoint_test;

TEST_SUITE("per_request_endpoint") {

// ---- classification ------------------------------------------------------------------------------

TEST_CASE("eras.md/classification: a POST with the envelope is served without Mcp-Session-Id and mints no session") {
  fixture f{everything()};
  auto r = f.send(pr_call("1", "echo"));
  REQUIRE(r.head.status == 200);
  CHECK(header_of(r, "Content-Type") == "application/json");
  CHECK_FALSE(r.head.header("Mcp-Session-Id").has_value());
  CHECK_FALSE(r.stream);
  const auto p = body_of(r);
  CHECK(fx::to_json(p.root["id"]) == "1");
  CHECK(fx::str(fx::at(p.root["result"]["content"], 0)["text"]) == "echoed");
  for (const char* m : {"tools/list", "prompts/list", "resources/list", "server/discover"}) {
    CAPTURE(m);
    auto l = f.send(pr_post(pr_body("2", m), m));
    CHECK(l.head.status == 200);
    CHECK_FALSE(l.head.header("Mcp-Session-Id").has_value());
  }
  CHECK(f.ep->sessions().size() == 0);
  CHECK(f.ep->sessions().count("alice") == 0);
  // The handshake era on the same endpoint still mints one.
  auto init = f.send(post(fx::initialize(3)));
  REQUIRE(init.head.status == 200);
  CHECK(init.head.header("Mcp-Session-Id").has_value());
  CHECK(f.ep->sessions().size() == 1);
}

TEST_CASE("eras.md/classification: a per-request POST never touches a session, whatever Mcp-Session-Id says") {
  fixture_config cfg;
  cfg.endpoint = [](http_endpoint_options& o) { o.require_session = true; };
  fixture f{cfg};
  // require_session does not apply to the per-request era.
  const auto served = f.send(pr_call("1", "echo"));
  CHECK(served.head.status == 200);
  check_complete(body_of(served));
  // An unknown session id is not looked up (the handshake era would answer 404).
  auto req = pr_call("2", "echo");
  req.set("Mcp-Session-Id", "0123456789abcdef0123456789abcdef");
  const auto r = f.send(req);
  CHECK(r.head.status == 200);
  CHECK_FALSE(r.head.header("Mcp-Session-Id").has_value());
  check_complete(body_of(r));
  CHECK(f.ep->sessions().size() == 0);
  auto handshake = post(fx::call_tool(3, "echo"));
  handshake.set("Mcp-Session-Id", "0123456789abcdef0123456789abcdef");
  CHECK(f.send(handshake).head.status == 404);
}

TEST_CASE("eras.md/classification: a per-request header without the envelope is 400 -32602 naming it, a notification 202") {
  fixture f;
  SUBCASE("no _meta at all") {
    auto req = post(fx::call_tool(R"("r-1")", "echo"));
    req.set("MCP-Protocol-Version", std::string{rev});
    const auto r = f.send(req);
    check_refusal(r, 400, -32602, R"("r-1")");
    CHECK(data_of(r, "envelope") == R"({"missing":["_meta"]})");
  }
  SUBCASE("a _meta without the revision") {
    auto req = post(fx::call_tool(7, "echo", {}, R"({"io.modelcontextprotocol/clientCapabilities":{}})"));
    req.set("MCP-Protocol-Version", std::string{rev});
    const auto r = f.send(req);
    check_refusal(r, 400, -32602, "7");
    CHECK(data_of(r, "envelope") == R"({"missing":["io.modelcontextprotocol/protocolVersion"]})");
  }
  SUBCASE("an unknown later revision in the header is per-request too") {
    auto req = post(fx::call_tool(8, "echo"));
    req.set("MCP-Protocol-Version", "2099-12-31");
    const auto r = f.send(req);
    check_refusal(r, 400, -32602, "8");
    CHECK(data_of(r, "envelope") == R"({"missing":["_meta"]})");
  }
  SUBCASE("a notification is accepted and changes nothing") {
    auto req = post(fx::notification("notifications/initialized"));
    req.set("MCP-Protocol-Version", std::string{rev});
    const auto r = f.send(req);
    CHECK(r.head.status == 202);
    CHECK(r.head.body.empty());
  }
  CHECK(f.ep->sessions().size() == 0);
}

// ---- the envelope ----------------------------------------------------------------------------------

TEST_CASE("eras.md/the-envelope: a refused envelope is 400 -32602 with data.envelope {key, problem} and the id") {
  fixture f;
  struct bad_case {
    std::string meta;
    const char* key;
    const char* problem;
  };
  const bad_case cases[] = {
      {R"({"io.modelcontextprotocol/protocolVersion":20260728,"io.modelcontextprotocol/clientCapabilities":{}})",
       "io.modelcontextprotocol/protocolVersion", "must be a string"},
      {R"({"io.modelcontextprotocol/protocolVersion":"2026-07-28"})", "io.modelcontextprotocol/clientCapabilities",
       "missing"},
      {envelope({}, "[]"), "io.modelcontextprotocol/clientCapabilities", "must be an object"},
      {envelope(R"("io.modelcontextprotocol/clientInfo":"me")"), "io.modelcontextprotocol/clientInfo",
       "must be an object"},
      {envelope(R"("io.modelcontextprotocol/logLevel":"loud")"), "io.modelcontextprotocol/logLevel",
       "unknown log level"},
      {envelope(R"("io.modelcontextprotocol/logLevel":3)"), "io.modelcontextprotocol/logLevel", "must be a string"},
      // The order of the checks: the capabilities are reported before a bad log level.
      {R"({"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/logLevel":"loud"})",
       "io.modelcontextprotocol/clientCapabilities", "missing"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.meta);
    const auto r = f.send(pr_call(R"("env-1")", "echo", c.meta));
    check_refusal(r, 400, -32602, R"("env-1")");
    const auto p = body_of(r);
    CHECK(fx::str(p.root["error"]["data"]["envelope"]["key"]) == c.key);
    CHECK(fx::str(p.root["error"]["data"]["envelope"]["problem"]) == c.problem);
  }
  // Other _meta members pass through.
  const auto ok = f.send(pr_call("2", "echo", envelope(R"("traceparent":"00-x","io.modelcontextprotocol/clientInfo":{"name":"c"})")));
  CHECK(ok.head.status == 200);
  CHECK(fx::str(fx::at(body_of(ok).root["result"]["content"], 0)["text"]) == "echoed");
}

// ---- the checks and the headers -----------------------------------------------------------------------

TEST_CASE("eras.md/the-checks: MCP-Protocol-Version and Mcp-Method disagreeing with the body, or missing, are 400 -32020") {
  fixture f;
  SUBCASE("the version header names another revision") {
    auto req = pr_call("1", "echo");
    req.set("MCP-Protocol-Version", "2025-11-25");
    check_mismatch(f.send(req), "1", "2025-11-25");
  }
  SUBCASE("Mcp-Method names another method") {
    auto req = pr_call("2", "echo");
    req.set("Mcp-Method", "tools/list");
    check_mismatch(f.send(req), "2", "tools/list");
  }
  SUBCASE("MCP-Protocol-Version missing") {
    auto req = pr_call("3", "echo");
    req.drop("MCP-Protocol-Version");
    check_mismatch(f.send(req), "3", "(missing)");
  }
  SUBCASE("Mcp-Method missing") {
    auto req = pr_call("4", "echo");
    req.drop("Mcp-Method");
    check_mismatch(f.send(req), "4", "(missing)");
  }
  SUBCASE("values are compared after trimming spaces and tabs") {
    auto req = pr_call("5", "echo");
    req.set("MCP-Protocol-Version", " 2026-07-28\t");
    req.set("Mcp-Method", "\ttools/call ");
    req.set("Mcp-Name", " echo ");
    const auto r = f.send(req);
    CHECK(r.head.status == 200);
    CHECK(fx::str(fx::at(body_of(r).root["result"]["content"], 0)["text"]) == "echoed");
  }
  SUBCASE("the envelope is checked before the headers") {
    auto req = pr_call("6", "echo", R"({"io.modelcontextprotocol/protocolVersion":"2026-07-28"})");
    req.set("Mcp-Method", "tools/list");
    check_refusal(f.send(req), 400, -32602, "6");
  }
  SUBCASE("a notification whose version header disagrees is refused too (no id)") {
    auto req = pr_post(fx::notification("notifications/initialized", std::string{R"({"_meta":)"} + envelope() + "}"),
                       "notifications/initialized");
    req.set("MCP-Protocol-Version", "2025-11-25");
    const auto r = f.send(req);
    CHECK(r.head.status == 400);
    CHECK(code_of(r) == -32020);
  }
}

TEST_CASE("eras.md/headers: Mcp-Name must carry the tool name, the prompt name or the resource URI") {
  fixture f{everything()};
  struct target {
    std::string method;
    std::string members;
    std::string name;
  };
  const target targets[] = {
      {"tools/call", tool_members("echo"), "echo"},
      {"prompts/get", R"("name":"greeting")", "greeting"},
      {"resources/read", R"("uri":"test://doc")", "test://doc"},
  };
  for (const auto& t : targets) {
    CAPTURE(t.method);
    const std::string body = pr_body(R"("n-1")", t.method, t.members);
    // Missing, another name, then the right one.
    check_mismatch(f.send(pr_post(body, t.method)), R"("n-1")", "(missing)");
    check_mismatch(f.send(pr_post(body, t.method, "other")), R"("n-1")", "other");
    const auto r = f.send(pr_post(body, t.method, t.name));
    CHECK(r.head.status == 200);
    check_complete(body_of(r));
  }
  // Methods without a subject need no Mcp-Name.
  CHECK(f.send(pr_post(pr_body("2", "tools/list"), "tools/list")).head.status == 200);
}

TEST_CASE("eras.md/headers: Mcp-Name in the =?base64?...?= form is decoded strictly before the comparison") {
  fixture f{everything()};
  const auto call = [&](std::string_view name_header) {
    return f.send(pr_post(pr_body("9", "tools/call", tool_members("echo")), "tools/call", name_header));
  };
  SUBCASE("the encoding of the name is accepted") {
    const auto r = call("=?base64?ZWNobw==?=");  // "echo"
    CHECK(r.head.status == 200);
    CHECK(fx::str(fx::at(body_of(r).root["result"]["content"], 0)["text"]) == "echoed");
    // ... and of a URI.
    const auto read = f.send(pr_post(pr_body("10", "resources/read", R"("uri":"test://doc")"), "resources/read",
                                     "=?base64?dGVzdDovL2RvYw==?="));
    CHECK(read.head.status == 200);
  }
  SUBCASE("the encoding of another name is a mismatch") {
    check_mismatch(call("=?base64?ZWNobzI=?="), "9", "=?base64?ZWNobzI=?=");  // "echo2"
  }
  SUBCASE("a malformed form is refused") {
    for (const char* bad : {"=?base64?ZWNobw?=",      // no padding
                            "=?base64?ZWNobx==?=",    // non-zero trailing bits
                            "=?base64?ZW!obw==?=",    // not the alphabet
                            "=?base64?ZWNo=w==?=",    // padding inside
                            "=?base64?/w==?="}) {     // 0xFF: not UTF-8
      CAPTURE(bad);
      check_mismatch(call(bad), "9", bad);
    }
  }
}

// ---- revisions and eras ------------------------------------------------------------------------------

TEST_CASE("eras.md/the-checks: an unsupported revision is 400 -32022 with data.supported and data.requested") {
  fixture f;
  auto req = pr_call(R"("v-1")", "echo", envelope({}, "{}", "2099-01-01"));
  req.set("MCP-Protocol-Version", "2099-01-01");
  const auto r = f.send(req);
  check_refusal(r, 400, -32022, R"("v-1")");
  CHECK(data_of(r, "supported") == R"(["2026-07-28"])");
  CHECK(data_of(r, "requested") == R"("2099-01-01")");
  SUBCASE("the revision is checked before the required headers") {
    auto bare = post(pr_body("3", "tools/call", tool_members("echo"), envelope({}, "{}", "2099-01-01")));
    const auto b = f.send(bare);
    check_refusal(b, 400, -32022, "3");
    CHECK(data_of(b, "requested") == R"("2099-01-01")");
  }
  SUBCASE("a handshake revision in the envelope is not a per-request one") {
    auto old = pr_call("2", "echo", envelope({}, "{}", "2025-11-25"));
    old.set("MCP-Protocol-Version", "2025-11-25");
    const auto o = f.send(old);
    check_refusal(o, 400, -32022, "2");
    CHECK(data_of(o, "supported") == R"(["2026-07-28"])");
    CHECK(data_of(o, "requested") == R"("2025-11-25")");
  }
}

TEST_CASE("eras.md/choosing-the-eras: handshake_only answers a per-request claim 400 -32022 listing the handshake revisions") {
  fixture_config cfg;
  cfg.endpoint = [](http_endpoint_options& o) { o.eras = served_eras::handshake_only; };
  fixture f{cfg};
  const auto r = f.send(pr_call("1", "echo"));
  check_refusal(r, 400, -32022, "1");
  CHECK(data_of(r, "supported") == R"(["2025-11-25","2025-06-18","2025-03-26"])");
  CHECK(data_of(r, "requested") == R"("2026-07-28")");
  const auto d = f.send(pr_post(pr_body("2", "server/discover"), "server/discover"));
  check_refusal(d, 400, -32022, "2");
  // The header checks come before the era's.
  auto mismatched = pr_call("4", "echo");
  mismatched.set("Mcp-Method", "tools/list");
  check_mismatch(f.send(mismatched), "4", "tools/list");
  // The handshake era is served as ever.
  const auto init = f.send(post(fx::initialize(3)));
  CHECK(init.head.status == 200);
  CHECK(init.head.header("Mcp-Session-Id").has_value());
}

TEST_CASE("eras.md/choosing-the-eras: per_request_only answers the handshake era 400 -32022, GET and DELETE 405") {
  fixture_config cfg;
  cfg.endpoint = [](http_endpoint_options& o) { o.eras = served_eras::per_request_only; };
  fixture f{cfg};
  SUBCASE("initialize: requested is the initialize revision") {
    const auto r = f.send(post(fx::initialize(1, "2025-06-18")));
    check_refusal(r, 400, -32022, "1");
    CHECK(data_of(r, "supported") == R"(["2026-07-28"])");
    CHECK(data_of(r, "requested") == R"("2025-06-18")");
    CHECK_FALSE(r.head.header("Mcp-Session-Id").has_value());
  }
  SUBCASE("another request: requested is the header's revision, or absent") {
    auto req = post(fx::call_tool(2, "echo"));
    req.set("MCP-Protocol-Version", "2025-11-25");
    const auto r = f.send(req);
    check_refusal(r, 400, -32022, "2");
    CHECK(data_of(r, "requested") == R"("2025-11-25")");
    const auto bare = f.send(post(fx::call_tool(3, "echo")));
    check_refusal(bare, 400, -32022, "3");
    CHECK(data_of(bare, "supported") == R"(["2026-07-28"])");
    CHECK(data_of(bare, "requested") == "<absent>");
  }
  SUBCASE("GET and DELETE") {
    const auto g = f.send(get({}));
    CHECK(g.head.status == 405);
    CHECK(header_of(g, "Allow") == "POST");
    CHECK(f.send(del({})).head.status == 405);
  }
  SUBCASE("a handshake notification is accepted and changes nothing") {
    CHECK(f.send(post(fx::notification("notifications/initialized"))).head.status == 202);
  }
  SUBCASE("the per-request era is served") {
    const auto r = f.send(pr_call("4", "echo"));
    CHECK(r.head.status == 200);
    check_complete(body_of(r));
  }
  CHECK(f.ep->sessions().size() == 0);
}

// ---- methods ---------------------------------------------------------------------------------------------

TEST_CASE("eras.md/methods: the removed methods and unknown ones are 404 -32601, server/discover is unknown to the handshake era") {
  fixture f{everything()};
  const char* removed[] = {"ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe",
                           "tools/frobnicate", "sampling/createMessage"};
  for (const char* m : removed) {
    CAPTURE(m);
    const std::string members = std::string_view{m}.starts_with("resources/") ? R"("uri":"test://doc")" : "";
    check_refusal(f.send(pr_post(pr_body(R"("m-1")", m, members), m)), 404, -32601, R"("m-1")");
  }
  SUBCASE("initialize with the envelope") {
    const std::string members =
        R"("protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"})";
    const auto r = f.send(pr_post(pr_body("2", "initialize", members), "initialize"));
    check_refusal(r, 404, -32601, "2");
    CHECK_FALSE(r.head.header("Mcp-Session-Id").has_value());
    CHECK(f.ep->sessions().size() == 0);
  }
  SUBCASE("server/discover in the handshake era") {
    const auto r = f.send(post(fx::request(3, "server/discover")));
    check_refusal(r, 200, -32601, "3");
  }
}

TEST_CASE("eras.md/methods: a family the server does not have is 404 -32601") {
  fixture f;  // tools only: no prompts, no resources, no completions
  const auto probes = table_calls("test://doc");
  for (const auto& p : probes) {
    CAPTURE(p.method);
    check_refusal(f.send(pr_post_of("1", p)), 404, -32601, "1");
  }
  CHECK(f.send(pr_post(pr_body("2", "tools/list"), "tools/list")).head.status == 200);
  SUBCASE("with the tables, the same methods are served") {
    fixture g{everything()};
    for (const auto& p : probes) {
      CAPTURE(p.method);
      const auto r = g.send(pr_post_of("3", p));
      CHECK(r.head.status == 200);
      check_complete(body_of(r));
    }
  }
}

// ---- server/discover and results ------------------------------------------------------------------------

TEST_CASE("eras.md/server-discovery: the revisions, the capabilities of the tables, the instructions") {
  SUBCASE("every table") {
    fixture_config cfg = everything();
    cfg.info.instructions = "Use the echo tool.";
    fixture f{cfg};
    const auto r = f.send(pr_post(pr_body("1", "server/discover"), "server/discover"));
    REQUIRE(r.head.status == 200);
    const auto p = body_of(r);
    const json::value res = p.root["result"];
    CHECK(fx::to_json(res["supportedVersions"]) == R"(["2026-07-28"])");
    CHECK(families_of(res["capabilities"]) == "tools resources prompts logging completions");
    CHECK(fx::str(res["instructions"]) == "Use the echo tool.");
    check_complete(p);
  }
  SUBCASE("tools only, no instructions") {
    fixture f;
    const auto r = f.send(pr_post(pr_body("1", "server/discover"), "server/discover"));
    REQUIRE(r.head.status == 200);
    const auto p = body_of(r);
    CHECK(families_of(p.root["result"]["capabilities"]) == "tools logging");
    CHECK_FALSE(p.root["result"]["instructions"].exists());
    check_complete(p);
  }
}

TEST_CASE("eras.md/results: every result carries resultType complete and the server's identity in _meta") {
  fixture_config cfg = everything();
  cfg.info.title = "Per-Request Test";
  fixture f{cfg};
  std::vector<method_call> calls = {{"tools/list", "", std::nullopt}, {"tools/call", R"("name":"echo")", "echo"}};
  const auto tables = table_calls("test://items/7");
  calls.insert(calls.end(), tables.begin(), tables.end());
  calls.push_back({"server/discover", "", std::nullopt});
  for (const auto& c : calls) {
    CAPTURE(c.method);
    const auto r = f.send(pr_post_of("1", c));
    REQUIRE(r.head.status == 200);
    const auto p = body_of(r);
    check_complete(p);
    CHECK(fx::to_json(p.root["result"]["_meta"]) ==
          R"({"io.modelcontextprotocol/serverInfo":{"name":"per-request-test","version":"2.3.4","title":"Per-Request Test"}})");
    // One stamp: the members appear once.
    CHECK(r.head.body.find("\"resultType\"") == r.head.body.rfind("\"resultType\""));
    CHECK(r.head.body.find("\"_meta\"") == r.head.body.rfind("\"_meta\""));
  }
  // An error carries none.
  const auto e = f.send(pr_post(pr_body("2", "ping"), "ping"));
  CHECK_FALSE(body_of(e).root["result"].exists());
  CHECK(e.head.body.find("resultType") == std::string::npos);
}

// ---- caching --------------------------------------------------------------------------------------------

TEST_CASE("eras.md/caching: ttlMs and cacheScope on the list, read and discover results only") {
  const auto cache_of = [](fixture& f, std::string_view method, std::string_view members,
                           std::optional<std::string_view> name) {
    const auto r = f.send(pr_post(pr_body("1", method, members), method, name));
    REQUIRE(r.head.status == 200);
    const auto p = body_of(r);
    const json::value res = p.root["result"];
    if (!res["ttlMs"].exists() && !res["cacheScope"].exists()) return std::string{"none"};
    return fx::to_json(res["ttlMs"]) + "/" + fx::str(res["cacheScope"]);
  };
  const char* lists[] = {"tools/list", "prompts/list", "resources/list", "resources/templates/list", "server/discover"};
  // The lists carry `list_hint`, the reads `read_hint` unless the resource has its own, a call none.
  const auto check_hints = [&](fixture& f, std::string_view list_hint, std::string_view read_hint) {
    for (const char* m : lists) {
      CAPTURE(m);
      CHECK(cache_of(f, m, "", std::nullopt) == list_hint);
    }
    CHECK(cache_of(f, "resources/read", R"("uri":"test://doc")", "test://doc") == read_hint);
    CHECK(cache_of(f, "resources/read", R"("uri":"test://items/1")", "test://items/1") == read_hint);
    // The resource's own hint wins.
    CHECK(cache_of(f, "resources/read", R"("uri":"test://shared")", "test://shared") == "60000/public");
    CHECK(cache_of(f, "tools/call", R"("name":"echo")", "echo") == "none");
  };
  SUBCASE("the defaults: 0 and private") {
    fixture f{everything()};
    check_hints(f, "0/private", "0/private");
    CHECK(cache_of(f, "prompts/get", R"("name":"greeting")", "greeting") == "none");
    CHECK(cache_of(f, "completion/complete",
                   R"("ref":{"type":"ref/prompt","name":"greeting"},"argument":{"name":"topic","value":"a"})",
                   std::nullopt) == "none");
  }
  SUBCASE("list_cache and read_cache") {
    fixture_config cfg = everything();
    cfg.options.list_cache = cache_hint{5000ms, cache_scope::shared};
    cfg.options.read_cache = cache_hint{250ms, cache_scope::per_caller};
    fixture f{cfg};
    check_hints(f, "5000/public", "250/private");
  }
}

// ---- errors ---------------------------------------------------------------------------------------------

TEST_CASE("eras.md/errors: resources/read of an unknown URI is 200 -32602 with data.uri, the handshake era keeps -32002") {
  fixture f{everything()};
  const auto r = f.send(pr_post(pr_body(R"("u-1")", "resources/read", R"("uri":"test://nope")"), "resources/read",
                                "test://nope"));
  check_refusal(r, 200, -32602, R"("u-1")");
  CHECK(data_of(r, "uri") == R"("test://nope")");
  CHECK(body_of(r).root["error"]["data"]["correlation_id"].is_string());
  // The same request without the envelope, in the handshake era.
  const auto h = f.send(post(fx::request(R"("u-2")", "resources/read", R"({"uri":"test://nope"})")));
  check_refusal(h, 200, -32002, R"("u-2")");
  CHECK(data_of(h, "uri") == "<absent>");
}

TEST_CASE("eras.md/errors: a missing client capability is 400 -32021, an input_required result 200 and its state is the caller's") {
  fixture f;
  const auto refused = f.send(pr_call("1", "ask"));
  check_refusal(refused, 400, -32021, "1");
  CHECK(data_of(refused, "requiredCapabilities") == R"({"sampling":{}})");

  const auto asked = f.send(pr_call("2", "ask", envelope({}, R"({"sampling":{}})")));
  REQUIRE(asked.head.status == 200);
  const auto p = body_of(asked);
  CHECK(fx::str(p.root["result"]["resultType"]) == "input_required");
  CHECK(fx::str(p.root["result"]["inputRequests"]["model"]["method"]) == "sampling/createMessage");
  CHECK_FALSE(p.root["result"]["ttlMs"].exists());
  CHECK_FALSE(p.root["result"]["cacheScope"].exists());
  CHECK(fx::str(p.root["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"]) == "per-request-test");
  const std::string state = fx::str(p.root["result"]["requestState"]);
  REQUIRE(state.starts_with("v1."));

  const std::string retry_members = tool_members("ask") +
                                    R"(,"inputResponses":{"model":{"role":"assistant","content":{"type":"text","text":"hi"}}})" +
                                    R"(,"requestState":")" + state + '"';
  const auto done = f.send(pr_post(pr_body("3", "tools/call", retry_members, envelope({}, R"({"sampling":{}})")),
                                   "tools/call", "ask"));
  REQUIRE(done.head.status == 200);
  check_complete(body_of(done));
  CHECK(fx::str(fx::at(body_of(done).root["result"]["content"], 0)["text"]) == "model: hi");

  // Bob replays alice's state.
  const auto stolen = f.send(pr_post(pr_body("4", "tools/call", retry_members, envelope({}, R"({"sampling":{}})")),
                                     "tools/call", "ask", "bob-token"));
  check_refusal(stolen, 200, -32602, "4");
  CHECK(data_of(stolen, "reason") == R"("invalid_request_state")");
}

// ---- logging and streams -----------------------------------------------------------------------------------

TEST_CASE("eras.md/logging: without logLevel a tool's log messages are not sent and the answer is plain JSON") {
  fixture f;
  const auto r = f.send(pr_call("1", "levels"));
  REQUIRE(r.head.status == 200);
  CHECK(header_of(r, "Content-Type") == "application/json");
  CHECK_FALSE(r.stream);
  CHECK(fx::str(fx::at(body_of(r).root["result"]["content"], 0)["text"]) == "logged");
  check_complete(body_of(r));
}

TEST_CASE("eras.md/logging: with logLevel only messages at or above it are sent, over SSE when accepted") {
  fixture f;
  auto r = f.send(pr_call("1", "levels", envelope(R"("io.modelcontextprotocol/logLevel":"warning")")));
  REQUIRE(r.head.status == 200);
  CHECK(header_of(r, "Content-Type") == "text/event-stream");
  CHECK_FALSE(r.head.header("Mcp-Session-Id").has_value());
  auto reader = f.read(r);
  reader.drive_to_end();
  CAPTURE(reader.wire());
  const auto msgs = reader.messages();
  REQUIRE(msgs.size() == 3);
  REQUIRE(is_log(msgs[0]));
  REQUIRE(is_log(msgs[1]));
  CHECK(fx::str(fx::parse(msgs[0].data).root["params"]["level"]) == "warning");
  CHECK(fx::str(fx::parse(msgs[0].data).root["params"]["data"]) == "at warning");
  CHECK(fx::str(fx::parse(msgs[1].data).root["params"]["level"]) == "error");
  REQUIRE(is_response_for(msgs[2], "1"));
  const auto final_message = fx::parse(msgs[2].data);
  check_complete(final_message);
  CHECK(fx::str(fx::at(final_message.root["result"]["content"], 0)["text"]) == "logged");

  SUBCASE("debug sends every level") {
    auto all = f.send(pr_call("2", "levels", envelope(R"("io.modelcontextprotocol/logLevel":"debug")")));
    auto rd = f.read(all);
    rd.drive_to_end();
    CHECK(count_if_events(rd.messages(), is_log) == 4);
  }
  SUBCASE("without text/event-stream in Accept the answer stays JSON and the messages are dropped") {
    auto req = pr_call("3", "levels", envelope(R"("io.modelcontextprotocol/logLevel":"debug")"));
    req.set("Accept", "application/json");
    const auto plain = f.send(req);
    REQUIRE(plain.head.status == 200);
    CHECK(header_of(plain, "Content-Type") == "application/json");
    CHECK_FALSE(plain.stream);
    check_complete(body_of(plain));
  }
}

TEST_CASE("eras.md/streams: progress for a progressToken streams the notifications then the result, no ids, no retry") {
  fixture f;
  auto r = f.send(pr_call("5", "report", envelope(R"("progressToken":"tok-5")")));
  REQUIRE(r.head.status == 200);
  CHECK(header_of(r, "Content-Type") == "text/event-stream");
  CHECK(header_of(r, "Cache-Control") == "no-cache");
  auto reader = f.read(r);
  reader.drive_to_end();
  CAPTURE(reader.wire());
  const auto events = reader.events();
  REQUIRE(events.size() == 4);  // no priming event
  for (std::size_t i = 0; i < 3; ++i) {
    CAPTURE(i);
    REQUIRE(is_progress(events[i]));
    const auto n = fx::parse(events[i].data);
    CHECK(fx::str(n.root["params"]["progressToken"]) == "tok-5");
    CHECK(n.root["params"]["progress"].to_int64() == static_cast<std::int64_t>(i + 1));
  }
  REQUIRE(is_response_for(events[3], "5"));
  check_complete(fx::parse(events[3].data));
  for (const auto& e : events) {
    CHECK_FALSE(e.id.has_value());
    CHECK_FALSE(e.retry.has_value());
    CHECK(e.type == "message");
  }
  // Each event is `event: message` and one `data:` line; nothing else.
  std::size_t data_lines = 0;
  for (const auto& line : field_lines(reader.wire())) {
    CAPTURE(line);
    CHECK((line == "event: message" || line.starts_with("data: ")));
    CHECK_FALSE(line.starts_with("id"));
    CHECK_FALSE(line.starts_with("retry"));
    if (line.starts_with("data: ")) ++data_lines;
  }
  CHECK(data_lines == 4);
  CHECK(f.ep->sessions().size() == 0);
  // The stream's budget slot goes back when the transport destroys the finished stream.
  CHECK(f.ep->budget().in_use("per_request", "alice") == 1);
  reader.destroy();
  CHECK(f.ep->budget().in_use() == 0);

  SUBCASE("without a progress token the same tool answers JSON") {
    const auto plain = f.send(pr_call("6", "report"));
    CHECK(header_of(plain, "Content-Type") == "application/json");
    CHECK_FALSE(plain.stream);
    check_complete(body_of(plain));
  }
}

TEST_CASE("eras.md/streams: closing the stream before the result cancels the call, the handler's stop token fires") {
  fixture f;
  auto r = f.send(pr_call("7", "held", envelope(R"("progressToken":7)")));
  REQUIRE(r.head.status == 200);
  CHECK(header_of(r, "Content-Type") == "text/event-stream");
  auto reader = f.read(r);
  REQUIRE(f.held_started.wait_arrived());
  REQUIRE(reader.drive_until([](const auto& ev) { return count_if_events(ev, is_progress) == 1; }));
  CHECK(f.ep->budget().in_use() == 1);
  CHECK_FALSE(f.held_saw_stop.load());
  SUBCASE("the transport destroys the stream") {
    reader.destroy();
  }
  SUBCASE("a write fails, then the transport destroys the stream") {
    reader.drop();
  }
  CHECK(eventually([&] { return f.held_saw_stop.load(); }));
  CHECK(eventually([&] { return f.held_returned.load() == 1; }));
  CHECK(eventually([&] { return f.ep->budget().in_use() == 0; }));
}

TEST_CASE("eras.md/streams: an idle stream gets a keepalive comment every per_request_stream_options::keepalive") {
  fixture_config cfg;
  cfg.endpoint = [](http_endpoint_options& o) { o.per_request.keepalive = 5s; };
  fixture f{cfg};
  auto r = f.send(pr_call("1", "held", envelope(R"("progressToken":1)")));
  REQUIRE(header_of(r, "Content-Type") == "text/event-stream");
  auto reader = f.read(r);
  REQUIRE(f.held_started.wait_arrived());
  REQUIRE(reader.drive_until([](const auto& ev) { return count_if_events(ev, is_progress) == 1; }));
  const auto keepalives = [&] {
    std::size_t n = 0;
    for (std::size_t at = reader.wire().find(": keepalive\n"); at != std::string::npos;
         at = reader.wire().find(": keepalive\n", at + 1)) {
      ++n;
    }
    return n;
  };
  (void)reader.pull();
  CHECK(keepalives() == 0);
  f.clk.advance(5s);
  (void)reader.pull();
  CHECK(keepalives() == 1);
  (void)reader.pull();
  CHECK(keepalives() == 1);
  f.clk.advance(5s);
  (void)reader.pull();
  CHECK(keepalives() == 2);
  // Comments are not events: the client sees only the messages.
  CHECK(reader.messages().size() == 1);
  f.held_gate.open();
  reader.drive_to_end();
  const auto msgs = reader.messages();
  REQUIRE(msgs.size() == 2);
  CHECK(is_response_for(msgs.back(), "1"));
}

TEST_CASE("eras.md/streams: past the per-principal stream cap the call answers JSON and its messages are dropped") {
  fixture_config cfg;
  cfg.endpoint = [](http_endpoint_options& o) { o.per_request.streams_per_principal = 1; };
  fixture f{cfg};
  auto held = f.send(pr_call("1", "held", envelope(R"("progressToken":1)")));
  REQUIRE(held.head.status == 200);
  REQUIRE(header_of(held, "Content-Type") == "text/event-stream");
  auto reader = f.read(held);
  REQUIRE(f.held_started.wait_arrived());
  CHECK(f.ep->budget().in_use("per_request", "alice") == 1);

  const auto capped = f.send(pr_call("2", "report", envelope(R"("progressToken":2)")));
  REQUIRE(capped.head.status == 200);
  CHECK(header_of(capped, "Content-Type") == "application/json");
  CHECK_FALSE(capped.stream);
  CHECK(fx::str(fx::at(body_of(capped).root["result"]["content"], 0)["text"]) == "reported");

  // Another principal has its own cap.
  auto bobs = f.send(pr_call("3", "report", envelope(R"("progressToken":3)"), "bob-token"));
  CHECK(header_of(bobs, "Content-Type") == "text/event-stream");
  auto bob_reader = f.read(bobs);
  bob_reader.drive_to_end();
  CHECK(count_if_events(bob_reader.messages(), is_progress) == 3);

  f.held_gate.open();
  reader.drive_to_end();
  const auto msgs = reader.messages();
  REQUIRE_FALSE(msgs.empty());
  CHECK(is_response_for(msgs.back(), "1"));
}

TEST_CASE("eras.md/streams: begin_shutdown closes a live per-request stream and stops its handler") {
  fixture f;
  auto r = f.send(pr_call("8", "held", envelope(R"("io.modelcontextprotocol/logLevel":"info")")));
  REQUIRE(r.head.status == 200);
  REQUIRE(header_of(r, "Content-Type") == "text/event-stream");
  auto reader = f.read(r);
  REQUIRE(f.held_started.wait_arrived());
  REQUIRE(reader.drive_until([](const auto& ev) { return count_if_events(ev, is_log) == 1; }));
  f.ep->begin_shutdown();
  reader.drive_to_end();
  for (const auto& e : reader.messages()) CHECK_FALSE(is_response_for(e, "8"));
  CHECK(eventually([&] { return f.held_saw_stop.load(); }));
  CHECK(eventually([&] { return f.held_returned.load() == 1; }));
}

// ---- detached work ------------------------------------------------------------------------------------

/// The handles the `detached` tool's calls produced (the test reports through them).
struct detached_ops {
  std::mutex mu;
  std::vector<operation_handle> ops;
  /// Detached calls finish before they return.
  bool finish_early = false;
  void put(operation_handle op) {
    const std::lock_guard lock{mu};
    ops.push_back(std::move(op));
  }
  operation_handle take() {
    REQUIRE(eventually([&] {
      const std::lock_guard lock{mu};
      return !ops.empty();
    }));
    const std::lock_guard lock{mu};
    auto op = std::move(ops.front());
    ops.erase(ops.begin());
    return op;
  }
};

/// A fixture with the tool `detached`: it detaches its work as "exec-<n>" and answers "started".
fixture_config with_detached(const std::shared_ptr<detached_ops>& ops) {
  fixture_config c;
  c.extra = [ops](server_builder& b) {
    add_tool(b, "detached", [ops](call_context& ctx, const arguments&) {
      std::string id = "exec-" + std::to_string(ctx.id().is_string() ? 0 : ctx.id().as_integer());
      operation_handle op = detach(ctx, std::move(id));
      if (ops->finish_early) CHECK(op.finish(tool_result::structured(R"({"status":"succeeded","exit_code":0})")));
      ops->put(std::move(op));
      return tool_result::text("started");
    });
  };
  return c;
}

TEST_CASE("eras.md/detached-work: with a progress token the stream carries the work's progress, then its final") {
  const auto ops = std::make_shared<detached_ops>();
  fixture f{with_detached(ops)};
  auto r = f.send(pr_call("11", "detached", envelope(R"("progressToken":"t-11")")));
  REQUIRE(r.head.status == 200);
  REQUIRE(header_of(r, "Content-Type") == "text/event-stream");
  auto reader = f.read(r);
  operation_handle op = ops->take();
  CHECK(op.bound());
  CHECK(op.execution_id() == "exec-11");
  // The call returned: its answer waits for the work's terminal.
  (void)reader.pull();
  CHECK_FALSE(reader.finished());
  CHECK(reader.messages().empty());

  CHECK(op.progress(1, 4, "line one"));
  CHECK_FALSE(op.progress(1, 4));  // not above the last value sent
  CHECK_FALSE(op.progress(2, 0));  // no meaningful total
  CHECK(op.progress(9, 4));        // clamped to the total
  REQUIRE(reader.drive_until([](const auto& ev) { return count_if_events(ev, is_progress) == 2; }));
  CHECK(op.finish(tool_result::structured(R"({"status":"succeeded","exit_code":0})")));
  CHECK_FALSE(op.finish(tool_result::error("failed")));  // one terminal
  CHECK_FALSE(op.progress(10, 11));  // nothing after it
  reader.drive_to_end();
  const auto msgs = reader.messages();
  REQUIRE(msgs.size() == 3);
  const auto first = fx::parse(msgs[0].data);
  CHECK(fx::str(first.root["params"]["progressToken"]) == "t-11");
  CHECK(fx::str(first.root["params"]["message"]) == "line one");
  CHECK(fx::str(first.root["params"]["_meta"]["mcpcore/executionId"]) == "exec-11");
  CHECK(fx::parse(msgs[1].data).root["params"]["progress"].to_int64() == 4);
  REQUIRE(is_response_for(msgs[2], "11"));
  const auto final_result = fx::parse(msgs[2].data);
  check_complete(final_result);
  // The work's complete result replaces the provisional "started" (docs/eras.md#detached-work).
  const json::value res = final_result.root["result"];
  CHECK(fx::str(fx::at(res["content"], 0)["text"]) == R"({"status":"succeeded","exit_code":0})");
  CHECK(fx::str(res["structuredContent"]["status"]) == "succeeded");
  CHECK(res["structuredContent"]["exit_code"].to_int64() == 0);
  CHECK(fx::str(res["_meta"]["mcpcore/executionId"]) == "exec-11");
  CHECK_FALSE(res["status"].exists());
  reader.destroy();
  CHECK(f.ep->budget().in_use() == 0);
  CHECK(f.ep->sessions().size() == 0);
}

TEST_CASE("eras.md/detached-work: a terminal reported before the call returned is the final at once") {
  const auto ops = std::make_shared<detached_ops>();
  ops->finish_early = true;
  fixture f{with_detached(ops)};
  auto r = f.send(pr_call("12", "detached", envelope(R"("progressToken":12)")));
  REQUIRE(header_of(r, "Content-Type") == "text/event-stream");
  auto reader = f.read(r);
  reader.drive_to_end();
  const auto msgs = reader.messages();
  REQUIRE(msgs.size() == 1);
  REQUIRE(is_response_for(msgs[0], "12"));
  const auto final_result = fx::parse(msgs[0].data);
  const json::value res = final_result.root["result"];
  CHECK(fx::str(res["structuredContent"]["status"]) == "succeeded");
  CHECK(fx::str(res["_meta"]["mcpcore/executionId"]) == "exec-12");
  CHECK_FALSE(res["status"].exists());
}

TEST_CASE("eras.md/detached-work: without a progress token, or past the stream cap, the call answers at once, unbound") {
  const auto ops = std::make_shared<detached_ops>();
  auto cfg = with_detached(ops);
  cfg.endpoint = [](http_endpoint_options& o) { o.per_request.streams_per_principal = 1; };
  fixture f{cfg};
  SUBCASE("no progress token") {
    const auto r = f.send(pr_call("13", "detached"));
    CHECK(header_of(r, "Content-Type") == "application/json");
    CHECK(fx::str(fx::at(body_of(r).root["result"]["content"], 0)["text"]) == "started");
    operation_handle op = ops->take();
    CHECK_FALSE(op.bound());
    CHECK(op.execution_id() == "exec-13");
    CHECK_FALSE(op.finish(tool_result::text("done")));
  }
  SUBCASE("the principal's one stream is taken") {
    auto held = f.send(pr_call("1", "held", envelope(R"("progressToken":1)")));
    REQUIRE(header_of(held, "Content-Type") == "text/event-stream");
    auto held_reader = f.read(held);
    REQUIRE(f.held_started.wait_arrived());
    const auto r = f.send(pr_call("14", "detached", envelope(R"("progressToken":14)")));
    CHECK(header_of(r, "Content-Type") == "application/json");
    CHECK_FALSE(ops->take().bound());
    f.held_gate.open();
    held_reader.drive_to_end();
  }
  SUBCASE("the client does not accept an event stream") {
    auto req = pr_call("15", "detached", envelope(R"("progressToken":15)"));
    req.set("Accept", "application/json");
    const auto r = f.send(req);
    CHECK(header_of(r, "Content-Type") == "application/json");
    CHECK_FALSE(ops->take().bound());
  }
}

TEST_CASE("eras.md/detached-work: the last handle gone without a terminal ends the stream with -32014") {
  const auto ops = std::make_shared<detached_ops>();
  fixture f{with_detached(ops)};
  auto r = f.send(pr_call("16", "detached", envelope(R"("progressToken":16)")));
  REQUIRE(header_of(r, "Content-Type") == "text/event-stream");
  auto reader = f.read(r);
  {
    operation_handle op = ops->take();
    CHECK(op.progress(1));
  }
  reader.drive_to_end();
  const auto msgs = reader.messages();
  REQUIRE(msgs.size() == 2);
  REQUIRE(is_response_for(msgs[1], "16"));
  const auto err = fx::parse(msgs[1].data);
  CHECK(err.root["error"]["code"].to_int64() == -32014);
  CHECK(fx::str(err.root["error"]["data"]["execution_id"]) == "exec-16");
}

TEST_CASE("eras.md/detached-work: the client closing the stream stops the reports, not the work") {
  const auto ops = std::make_shared<detached_ops>();
  fixture f{with_detached(ops)};
  auto r = f.send(pr_call("17", "detached", envelope(R"("progressToken":17)")));
  auto reader = f.read(r);
  operation_handle op = ops->take();
  CHECK(op.progress(1));
  SUBCASE("the client leaves") {
    reader.drop();
  }
  SUBCASE("the server shuts down") {
    f.ep->begin_shutdown();
    reader.drive_to_end();
    for (const auto& e : reader.messages()) CHECK_FALSE(is_response_for(e, "17"));
    reader.destroy();
  }
  CHECK_FALSE(op.progress(2));
  CHECK(op.finish(tool_result::text("done")));  // accepted: the one terminal, delivered nowhere
  CHECK(eventually([&] { return f.ep->budget().in_use() == 0; }));
}

// ---- notifications and the Origin ---------------------------------------------------------------------------

TEST_CASE("eras.md/the-checks: notifications with the envelope are 202 and change nothing") {
  fixture f;
  const std::string params = std::string{R"({"_meta":)"} + envelope() + "}";
  for (const char* m : {"notifications/initialized", "notifications/cancelled", "notifications/whatever"}) {
    CAPTURE(m);
    const auto with_headers = f.send(pr_post(fx::notification(m, params), m));
    CHECK(with_headers.head.status == 202);
    CHECK(with_headers.head.body.empty());
    CHECK_FALSE(with_headers.stream);
    // Notifications need no method headers.
    const auto bare = f.send(post(fx::notification(m, params)));
    CHECK(bare.head.status == 202);
    CHECK(bare.head.body.empty());
  }
  CHECK(f.ep->sessions().size() == 0);
}

TEST_CASE("eras.md/the-checks: an Origin from elsewhere is 403 on a per-request POST, with sessions on and off") {
  for (const bool sessions : {true, false}) {
    CAPTURE(sessions);
    fixture_config cfg;
    cfg.endpoint = [sessions](http_endpoint_options& o) {
      o.sessions = sessions;
      o.allowed_origins = {"http://localhost:8765"};
    };
    fixture f{cfg};
    auto req = pr_call("1", "echo");
    req.set("Origin", "http://elsewhere.example");
    const auto refused = f.send(req);
    CHECK(refused.head.status == 403);
    CHECK(code_of(refused) == -32008);
    req.set("Origin", "http://localhost:8765");
    const auto ok = f.send(req);
    CHECK(ok.head.status == 200);
    check_complete(body_of(ok));
  }
}

}  // TEST_SUITE
