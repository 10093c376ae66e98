// SPDX-License-Identifier: Apache-2.0
// CORS on the MCP paths (docs/http.md#cors): the preflight of a listed origin, the headers of every
// answer to it (JSON, SSE, errors, the head checks), and what stays as it was: CORS off, an
// unlisted origin (still 403 -32008), the Host check (docs/security.md#dns-rebinding-host-and-origin).
#include <mcpcore/transport/http_endpoint.hpp>

#include <doctest/doctest.h>

#include "support/http_endpoint_fixture.hpp"
#include "support/server_fixture.hpp"

#include <mcpcore/dispatch/server.hpp>
#include <mcpcore/dispatch/tool.hpp>
#include <mcpcore/wire/http.hpp>

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

using namespace mcpcore;
using namespace std::chrono_literals;
namespace fx = server_fixture;

namespace {

using namespace http_endpoint_fixture;

constexpr std::string_view page = "http://127.0.0.1:9100";
constexpr std::string_view stranger = "http://127.0.0.1:9200";

/// An endpoint with CORS for `page` (unless `tweak` says otherwise) and two tools: `echo` (plain
/// JSON) and `logger` (a log message first: an SSE answer on a session).
struct cors_fixture : endpoint_harness {
  explicit cors_fixture(const std::function<void(http_endpoint_options&)>& tweak = {}) {
    server_info info;
    info.name = "cors-test";
    info.version = "1.0.0";
    server_builder b{info};
    add_tool(b, "echo", [](call_context&, const arguments&) { return tool_result::text("echoed"); });
    add_tool(b, "logger", [](call_context& ctx, const arguments&) {
      (void)ctx.log(log_level::info, "one");
      return tool_result::text("logged");
    });
    serve(b, [&](http_endpoint_options& o) {
      o.cors.allowed_origins = {std::string{page}};
      if (tweak) tweak(o);
    });
  }
  /// A session of alice opened from `origin`.
  std::string open_session(std::string_view origin = page) {
    request r = post(fx::initialize(1));
    r.set("Origin", std::string{origin});
    const http_reply a = send(r);
    REQUIRE(a.head.status == 200);
    const std::string sid = header_of(a, "Mcp-Session-Id");
    REQUIRE(sid != "<absent>");
    return sid;
  }
};

/// A browser's preflight: `OPTIONS` from `origin` for a POST carrying `headers`.
request preflight(std::string_view origin, std::string_view headers = "content-type,authorization,mcp-session-id") {
  request r;
  r.method = "OPTIONS";
  r.target = "/mcp";
  r.set("Host", "127.0.0.1:8765");
  r.set("Origin", std::string{origin});
  r.set("Access-Control-Request-Method", "POST");
  if (!headers.empty()) r.set("Access-Control-Request-Headers", std::string{headers});
  return r;
}

/// The request `r` sent from a page of `origin`.
request from(request r, std::string_view origin) {
  r.set("Origin", std::string{origin});
  return r;
}

bool has_cors(const http_reply& r) { return r.head.header("Access-Control-Allow-Origin").has_value(); }

/// The headers every answer to a listed origin carries.
void check_actual_cors(const http_reply& r, std::string_view origin = page) {
  CAPTURE(r.head.status);
  CHECK(header_of(r, "Access-Control-Allow-Origin") == origin);
  CHECK(header_of(r, "Vary") == "Origin");
  const std::string exposed = header_of(r, "Access-Control-Expose-Headers");
  CHECK(exposed.find("Mcp-Session-Id") != std::string::npos);
  CHECK(exposed.find("WWW-Authenticate") != std::string::npos);
  CHECK(exposed.find("MCP-Protocol-Version") != std::string::npos);
  CHECK(header_of(r, "Access-Control-Allow-Credentials") == "<absent>");
}

}  // namespace

TEST_CASE("http.md/cors: a preflight from a listed origin is 204 with the allowed methods, headers and max age") {
  cors_fixture f;
  // No Authorization: a browser sends no credential on a preflight.
  const http_reply r =
      f.send(preflight(page, "content-type, Authorization,mcp-session-id,MCP-Protocol-Version,last-event-id,"
                             "mcp-method,mcp-name,mcp-param-region,x-evil,accept"));
  CHECK(r.head.status == 204);
  CHECK(r.head.body.empty());
  CHECK_FALSE(r.stream);
  CHECK(header_of(r, "Access-Control-Allow-Origin") == page);
  CHECK(header_of(r, "Vary").starts_with("Origin"));
  CHECK(header_of(r, "Access-Control-Allow-Methods") == "GET, POST, DELETE");
  // The requested headers that are allowed, echoed as asked; x-evil is left out.
  CHECK(header_of(r, "Access-Control-Allow-Headers") ==
        "content-type, Authorization, mcp-session-id, MCP-Protocol-Version, last-event-id, mcp-method, mcp-name, "
        "mcp-param-region, accept");
  CHECK(header_of(r, "Access-Control-Max-Age") == "600");
  CHECK(header_of(r, "Access-Control-Allow-Credentials") == "<absent>");
  // The head check lets it through to handle (no refusal, the connection stays open).
  CHECK_FALSE(f.ep->check_head(preflight(page).view()).has_value());
}

TEST_CASE("http.md/cors: max_age and allow_credentials shape the preflight and the answers") {
  cors_fixture f{[](http_endpoint_options& o) {
    o.cors.max_age = 30s;
    o.cors.allow_credentials = true;
  }};
  const http_reply pre = f.send(preflight(page, {}));
  CHECK(pre.head.status == 204);
  CHECK(header_of(pre, "Access-Control-Max-Age") == "30");
  CHECK(header_of(pre, "Access-Control-Allow-Credentials") == "true");
  CHECK(header_of(pre, "Access-Control-Allow-Headers") == "<absent>");
  const http_reply init = f.send(from(post(fx::initialize(1)), page));
  CHECK(init.head.status == 200);
  CHECK(header_of(init, "Access-Control-Allow-Origin") == page);
  CHECK(header_of(init, "Access-Control-Allow-Credentials") == "true");
}

TEST_CASE("http.md/cors: a preflight from an unlisted origin gets no CORS header (405 as without CORS)") {
  cors_fixture f;
  const http_reply r = f.send(preflight(stranger));
  CHECK(r.head.status == 405);
  CHECK(header_of(r, "Allow") == "GET, POST, DELETE");
  CHECK_FALSE(has_cors(r));
  CHECK(header_of(r, "Vary") == "Origin");
  const auto head = f.ep->check_head(preflight(stranger).view());
  REQUIRE(head.has_value());
  CHECK(head->status == 405);
  CHECK_FALSE(head->header("Access-Control-Allow-Origin").has_value());
  // An OPTIONS that is no preflight (no Access-Control-Request-Method), even from a listed origin.
  request plain = preflight(page);
  plain.drop("Access-Control-Request-Method");
  const http_reply p = f.send(plain);
  CHECK(p.head.status == 405);
  CHECK(header_of(p, "Access-Control-Allow-Methods") == "<absent>");
}

TEST_CASE("http.md/cors: a preflight is checked for Host and a repeated Origin before it is answered") {
  cors_fixture f;
  request rebound = preflight(page);
  rebound.set("Host", "attacker.example:8765");
  const http_reply r = f.send(rebound);
  CHECK(r.head.status == 403);
  CHECK(code_of(r) == -32008);
  CHECK(header_of(r, "Access-Control-Allow-Methods") == "<absent>");
  const auto head = f.ep->check_head(rebound.view());
  REQUIRE(head.has_value());
  CHECK(head->status == 403);

  request twice = preflight(page);
  twice.headers.push_back(http_header{"Origin", std::string{page}});
  const http_reply t = f.send(twice);
  CHECK(t.head.status == 403);
  CHECK(code_of(t) == -32008);
  CHECK(data_of(t, "reason") == R"("repeated_origin")");
  CHECK_FALSE(has_cors(t));
}

TEST_CASE("http.md/cors: a JSON answer to a listed origin carries the CORS headers and the origin passes the Origin check") {
  cors_fixture f;  // allowed_origins (DNS rebinding) is empty: the CORS list admits the page
  const http_reply init = f.send(from(post(fx::initialize(1)), page));
  CHECK(init.head.status == 200);
  check_actual_cors(init);
  const std::string sid = header_of(init, "Mcp-Session-Id");
  const http_reply call = f.send(from(post(fx::call_tool(2, "echo"), sid), page));
  CHECK(call.head.status == 200);
  CHECK(call.head.body.find("echoed") != std::string::npos);
  check_actual_cors(call);
  // A 202 (a notification) too.
  const http_reply note = f.send(from(post(fx::notification("notifications/initialized"), sid), page));
  CHECK(note.head.status == 202);
  check_actual_cors(note);
}

TEST_CASE("http.md/cors: SSE answers to a listed origin carry the CORS headers (POST upgrade and GET)") {
  cors_fixture f;
  const std::string sid = f.open_session();
  http_reply call = f.send(from(post(fx::call_tool(2, "logger"), sid), page));
  CHECK(call.head.status == 200);
  CHECK(header_of(call, "Content-Type") == "text/event-stream");
  check_actual_cors(call);
  auto reader = f.read(call);
  reader.drive_to_end();
  http_reply stream = f.send(from(get(sid), page));
  CHECK(stream.head.status == 200);
  CHECK(header_of(stream, "Content-Type") == "text/event-stream");
  check_actual_cors(stream);
  auto get_reader = f.read(stream);
  get_reader.destroy();
}

TEST_CASE("http.md/cors: error answers to a listed origin carry the CORS headers (401, 403 Host, 404, 429, 405)") {
  cors_fixture f{[](http_endpoint_options& o) { o.session.max_sessions = 1; }};
  // 401: no credential; the page can read WWW-Authenticate.
  request anon = from(post(fx::initialize(1)), page);
  anon.drop("Authorization");
  const http_reply unauth = f.send(anon);
  CHECK(unauth.head.status == 401);
  check_actual_cors(unauth);
  // The same refusal from the head check (the Asio server sends it without calling handle).
  const auto head401 = f.ep->check_head(anon.view());
  REQUIRE(head401.has_value());
  CHECK(head401->status == 401);
  CHECK(head401->header("Access-Control-Allow-Origin") == page);
  // 403: the Host check is not weakened by a listed origin.
  request rebound = from(post(fx::initialize(1)), page);
  rebound.set("Host", "attacker.example");
  const http_reply host = f.send(rebound);
  CHECK(host.head.status == 403);
  CHECK(code_of(host) == -32008);
  check_actual_cors(host);
  // 404: an unknown session.
  const http_reply unknown = f.send(from(post(fx::call_tool(2, "echo"), "0123456789abcdef0123456789abcdef"), page));
  CHECK(unknown.head.status == 404);
  check_actual_cors(unknown);
  // 429: the one session of the server is taken (the global cap).
  (void)f.open_session();
  const http_reply capped = f.send(from(post(fx::initialize(3)), page));
  CHECK(capped.head.status == 429);
  check_actual_cors(capped);
  // 405: a method the MCP path does not serve.
  request put = from(post(fx::initialize(4)), page);
  put.method = "PUT";
  const http_reply wrong = f.send(put);
  CHECK(wrong.head.status == 405);
  check_actual_cors(wrong);
}

TEST_CASE("http.md/cors: an unlisted Origin is still 403 -32008 with CORS on, and gets no CORS header") {
  cors_fixture f;
  const http_reply r = f.send(from(post(fx::initialize(1)), stranger));
  CHECK(r.head.status == 403);
  CHECK(code_of(r) == -32008);
  CHECK_FALSE(has_cors(r));
  CHECK(header_of(r, "Vary") == "Origin");
  const auto head = f.ep->check_head(from(post(fx::initialize(1)), stranger).view());
  REQUIRE(head.has_value());
  CHECK(head->status == 403);
  CHECK_FALSE(head->header("Access-Control-Allow-Origin").has_value());
  // An origin listed for the Origin check only gets no CORS header either.
  cors_fixture g{[](http_endpoint_options& o) { o.allowed_origins = {std::string{stranger}}; }};
  const http_reply ok = g.send(from(post(fx::initialize(1)), stranger));
  CHECK(ok.head.status == 200);
  CHECK_FALSE(has_cors(ok));
  // Byte for byte: another case or a trailing slash is another origin.
  const http_reply upper = f.send(from(post(fx::initialize(1)), "HTTP://127.0.0.1:9100"));
  CHECK(upper.head.status == 403);
  const http_reply slash = f.send(from(post(fx::initialize(1)), std::string{page} + "/"));
  CHECK(slash.head.status == 403);
}

TEST_CASE("http.md/cors: with CORS off nothing changes: OPTIONS is 405 and no answer carries a CORS header") {
  cors_fixture f{[](http_endpoint_options& o) {
    o.cors.allowed_origins.clear();
    o.allowed_origins = {std::string{page}};
  }};
  const http_reply pre = f.send(preflight(page));
  CHECK(pre.head.status == 405);
  CHECK_FALSE(has_cors(pre));
  CHECK(header_of(pre, "Vary") == "<absent>");
  const http_reply init = f.send(from(post(fx::initialize(1)), page));
  CHECK(init.head.status == 200);
  CHECK_FALSE(has_cors(init));
  CHECK(header_of(init, "Vary") == "<absent>");
  CHECK(header_of(init, "Access-Control-Expose-Headers") == "<absent>");
  // And a CORS-listed origin is no longer admitted once CORS is off.
  cors_fixture g{[](http_endpoint_options& o) { o.cors.allowed_origins.clear(); }};
  const http_reply refused = g.send(from(post(fx::initialize(1)), page));
  CHECK(refused.head.status == 403);
}

TEST_CASE("http.md/cors: the preflight is answered under the kill switch, and the -32005 answer is readable by the page") {
  cors_fixture f;
  f.srv->switches().set_disabled(true);
  const http_reply pre = f.send(preflight(page));
  CHECK(pre.head.status == 204);
  CHECK(header_of(pre, "Access-Control-Allow-Origin") == page);
  const http_reply r = f.send(from(post(fx::initialize(1)), page));
  CHECK(r.head.status == 200);
  CHECK(code_of(r) == -32005);
  CHECK(header_of(r, "Access-Control-Allow-Origin") == page);
  // An unlisted origin's preflight gets the bare kill-switch answer.
  const http_reply other = f.send(preflight(stranger));
  CHECK(code_of(other) == -32005);
  CHECK_FALSE(has_cors(other));
  f.srv->switches().set_disabled(false);
}

TEST_CASE("http.md/cors: the operational routes are not CORS routes") {
  cors_fixture f;
  request health;
  health.method = "GET";
  health.target = "/healthz";
  health.set("Host", "127.0.0.1:8765");
  health.set("Origin", std::string{page});
  const http_reply r = f.send(health);
  CHECK(r.head.status == 200);
  CHECK_FALSE(has_cors(r));
}
