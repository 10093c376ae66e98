// SPDX-License-Identifier: Apache-2.0
// End to end over loopback: a server_builder server behind http_endpoint behind the Asio server
// (initialize, notifications, tools/call as JSON and as SSE, the GET stream, DELETE, graceful
// stop closing the GET stream with session_terminated; MCP 2025-11-25 transports,
// docs/sessions.md#shutdown).
#include <mcpcore/transport/asio_http_server.hpp>

#include <doctest/doctest.h>

#include "http_test_support.hpp"
#include "support/server_fixture.hpp"

#include <mcpcore/dispatch/server.hpp>
#include <mcpcore/dispatch/tool.hpp>
#include <mcpcore/governance/authenticator.hpp>
#include <mcpcore/governance/policy.hpp>
#include <mcpcore/transport/http_endpoint.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <future>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
namespace fx = server_fixture;
using mcpcore::transport::asio_http_server;
using mcpcore::transport::asio_http_server_options;
using test_http::raw_client;

namespace {

mcpcore::server make_server() {
  mcpcore::server_info info;
  info.name = "asio-e2e";
  info.version = "1.0.0";
  mcpcore::server_builder b{info};
  b.tool("echo")
      .description("Echoes its text.")
      .input_schema(R"({"type":"object","properties":{"text":{"type":"string"}},"required":["text"]})")
      .security("Thing", mcpcore::operation::read)
      .effect(mcpcore::tool_effect::read_only, false)
      .handler([](mcpcore::call_context&, const mcpcore::arguments& args) {
        return mcpcore::tool_result::text(std::string{args["text"].as_string()});
      });
  b.tool("report")
      .description("Reports progress, then answers.")
      .security("Thing", mcpcore::operation::read)
      .effect(mcpcore::tool_effect::read_only, false)
      .handler([](mcpcore::call_context& ctx, const mcpcore::arguments&) {
        for (int i = 1; i <= 3; ++i) (void)ctx.progress(i, 3, "step");
        return mcpcore::tool_result::text("reported");
      });
  return fx::build(b);
}

mcpcore::principal alice() {
  mcpcore::principal p;
  p.id = "alice";
  return p;
}

std::string mcp_post(std::uint16_t port, std::string_view body, std::string_view session = {},
                     std::string_view accept = "application/json, text/event-stream") {
  std::string s = "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port) +
                  "\r\nContent-Type: application/json\r\nAccept: " + std::string(accept) +
                  "\r\nMCP-Protocol-Version: 2025-11-25\r\n";
  if (!session.empty()) s += "Mcp-Session-Id: " + std::string(session) + "\r\n";
  s += "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n";
  s += body;
  return s;
}

std::string mcp_get_or_delete(std::string_view method, std::uint16_t port, std::string_view session) {
  std::string s = std::string(method) + " /mcp HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port) +
                  "\r\nAccept: text/event-stream\r\nMCP-Protocol-Version: 2025-11-25\r\nMcp-Session-Id: " +
                  std::string(session) + "\r\n\r\n";
  return s;
}

// The data of every SSE event in `body` (one `data:` line per event here).
std::vector<std::string> sse_data(std::string_view body) {
  std::vector<std::string> out;
  std::size_t pos = 0;
  while ((pos = body.find("data:", pos)) != std::string_view::npos) {
    auto end = body.find('\n', pos);
    auto line = body.substr(pos + 5, end - pos - 5);
    if (!line.empty() && line.front() == ' ') line.remove_prefix(1);
    if (!line.empty()) out.emplace_back(line);
    pos = end;
  }
  return out;
}

}  // namespace

TEST_CASE("asio server + http_endpoint: initialize, tools/call (JSON and SSE), GET stream, stop closes it") {
  auto srv = make_server();
  mcpcore::http_endpoint endpoint{srv, mcpcore::fixed_authenticator{alice()}};
  asio_http_server_options o;
  o.port = 0;
  o.io_threads = 2;
  o.handler_threads = 2;
  o.shutdown_drain = 2s;
  asio_http_server http{endpoint, o};
  REQUIRE(http.start());
  const auto port = http.port();

  raw_client c(port);
  REQUIRE(c.connected());
  REQUIRE(c.send(mcp_post(port, fx::initialize(1))));
  auto init = c.read_response();
  REQUIRE(init);
  REQUIRE(init->status == 200);
  CHECK(init->header("X-Content-Type-Options") == "nosniff");
  CHECK(init->count("X-Content-Type-Options") == 1);
  const auto sid = init->header("Mcp-Session-Id");
  REQUIRE(sid);
  CHECK(init->body.find("\"protocolVersion\"") != std::string::npos);

  REQUIRE(c.send(mcp_post(port, fx::notification("notifications/initialized"), *sid)));
  auto ack = c.read_response();
  REQUIRE(ack);
  CHECK(ack->status == 202);

  // A plain call answers JSON (Content-Length framing), on the same keep-alive connection.
  REQUIRE(c.send(mcp_post(port, fx::call_tool(2, "echo", R"({"text":"hi there"})"), *sid, "application/json")));
  auto call = c.read_response();
  REQUIRE(call);
  CHECK(call->status == 200);
  CHECK(call->header("Content-Length").has_value());
  CHECK_MESSAGE(call->body.find("hi there") != std::string::npos, call->body);

  // A call with a progress token answers SSE: progress events, then the result, then the end.
  REQUIRE(c.send(mcp_post(port, fx::call_tool(3, "report", "{}", R"({"progressToken":"p1"})"), *sid)));
  auto streamed = c.read_response();
  REQUIRE(streamed);
  CHECK(streamed->status == 200);
  CHECK(streamed->chunked);
  CHECK(streamed->header("Content-Type").value_or("").starts_with("text/event-stream"));
  CHECK(streamed->count("Cache-Control") == 1);
  CHECK(streamed->count("X-Accel-Buffering") == 1);
  const auto events = sse_data(streamed->body);
  REQUIRE(events.size() >= 2);
  CHECK(events.front().find("notifications/progress") != std::string::npos);
  CHECK(events.back().find("reported") != std::string::npos);
  CHECK(events.back().find("\"id\":3") != std::string::npos);

  // The session's GET stream stays open; stop() closes it with session_terminated.
  raw_client g(port);
  REQUIRE(g.send(mcp_get_or_delete("GET", port, *sid)));
  auto head = g.read_head();
  REQUIRE(head);
  CHECK(head->status == 200);
  CHECK(head->chunked);
  std::string got;
  auto stopped = std::async(std::launch::async, [&] { http.stop(); });
  for (;;) {
    auto ch = g.read_chunk(10s);
    REQUIRE(ch);
    if (ch->empty()) break;
    got += *ch;
  }
  CHECK(got.find("session_terminated") != std::string::npos);
  CHECK(g.wait_closed());
  CHECK(stopped.wait_for(15s) == std::future_status::ready);
  CHECK(http.connections() == 0);
}

TEST_CASE("asio server + http_endpoint: DELETE ends the session, a deleted session answers 404") {
  auto srv = make_server();
  mcpcore::http_endpoint endpoint{srv, mcpcore::fixed_authenticator{alice()}};
  asio_http_server_options o;
  o.port = 0;
  asio_http_server http{endpoint, o};
  REQUIRE(http.start());
  const auto port = http.port();
  raw_client c(port);
  REQUIRE(c.send(mcp_post(port, fx::initialize(1))));
  auto init = c.read_response();
  REQUIRE(init);
  const auto sid = init->header("Mcp-Session-Id");
  REQUIRE(sid);
  REQUIRE(c.send(mcp_get_or_delete("DELETE", port, *sid)));
  auto del = c.read_response();
  REQUIRE(del);
  CHECK(del->status == 200);
  REQUIRE(c.send(mcp_post(port, fx::call_tool(2, "echo", R"({"text":"x"})"), *sid)));
  auto gone = c.read_response();
  REQUIRE(gone);
  CHECK(gone->status == 404);
  // Unknown methods are the endpoint's to answer: 405 with Allow.
  REQUIRE(c.send("PUT /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\n\r\n"));
  auto put = c.read_response();
  REQUIRE(put);
  CHECK(put->status == 405);
  CHECK(put->header("Allow").has_value());
}

// ---- head-first checks and bounded body buffering (docs/http.md#head-checks,
// docs/transport.md#body-buffering) ---------------------------------------------------------------

namespace {

/// Admits only `Authorization: Bearer alice-token`.
struct bearer_alice {
  [[nodiscard]] std::optional<mcpcore::principal> authenticate(const mcpcore::http_request_view& req) const {
    const auto a = req.header("Authorization");
    if (!a || *a != "Bearer alice-token") return std::nullopt;
    return alice();
  }
  [[nodiscard]] mcpcore::credential_verdict revalidate(const mcpcore::principal& /*p*/) const noexcept {
    return mcpcore::credential_verdict::valid;
  }
};

/// The head of a POST to `target` declaring `length` body bytes (no body).
std::string post_head(std::uint16_t port, std::size_t length, std::string_view extra = {},
                      std::string_view target = "/mcp", std::string_view host = {}) {
  std::string s = "POST " + std::string(target) + " HTTP/1.1\r\nHost: " +
                  (host.empty() ? "127.0.0.1:" + std::to_string(port) : std::string(host)) +
                  "\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n";
  s += extra;
  s += "Content-Length: " + std::to_string(length) + "\r\n\r\n";
  return s;
}

/// A ping request padded with spaces to exactly `size` bytes.
std::string padded_ping(std::size_t size, int id = 7) {
  std::string s = R"({"jsonrpc":"2.0","id":)" + std::to_string(id) + R"(,"method":"ping"})";
  s.resize(std::max(size, s.size()), ' ');
  return s;
}

asio_http_server_options head_options() {
  asio_http_server_options o;
  o.port = 0;
  o.io_threads = 2;
  o.handler_threads = 2;
  o.close_linger = 300ms;
  o.shutdown_drain = 1s;
  return o;
}

}  // namespace

TEST_CASE("http.md/head-checks: Expect 100-continue without a token, with a foreign Host or on an unknown path gets the final refusal, never 100") {
  auto srv = make_server();
  mcpcore::http_endpoint endpoint{srv, bearer_alice{}};
  asio_http_server http{endpoint, head_options()};
  REQUIRE(http.start());
  const auto port = http.port();
  struct variant {
    const char* name;
    std::string head;
    int status;
  };
  const std::string expect = "Expect: 100-continue\r\n";
  const std::string token = "Authorization: Bearer alice-token\r\n";
  for (const variant& v : {variant{"no token", post_head(port, 100, expect), 401},
                           variant{"foreign Host", post_head(port, 100, expect + token, "/mcp", "evil.example"), 403},
                           variant{"unknown path", post_head(port, 100, expect + token, "/elsewhere"), 404}}) {
    CAPTURE(v.name);
    raw_client c(port);
    REQUIRE(c.send(v.head));
    auto r = c.read_head();
    REQUIRE(r);
    CHECK(r->status == v.status);
    CHECK(r->header("Connection") == "close");
    CHECK(c.wait_closed());
  }
  // With a token, the right Host and path, the interim answer comes, then the final one.
  raw_client ok(port);
  const std::string body = padded_ping(100);
  REQUIRE(ok.send(post_head(port, body.size(), expect + token)));
  auto interim = ok.read_head();
  REQUIRE(interim);
  CHECK(interim->status == 100);
  REQUIRE(ok.send(body));
  auto final_answer = ok.read_response();
  REQUIRE(final_answer);
  CHECK(final_answer->status == 200);
}

TEST_CASE("http.md/head-checks: an unauthenticated POST declaring 4 MiB is answered 401 after its head alone, and the connection closes") {
  auto srv = make_server();
  mcpcore::http_endpoint endpoint{srv, bearer_alice{}};
  asio_http_server http{endpoint, head_options()};
  REQUIRE(http.start());
  const auto port = http.port();
  raw_client c(port);
  REQUIRE(c.send(post_head(port, std::size_t{4} << 20U)));  // the body never comes
  auto r = c.read_response(2s);
  REQUIRE(r);
  CHECK(r->status == 401);
  CHECK(r->header("Connection") == "close");
  CHECK(r->header("WWW-Authenticate") == "Bearer");
  CHECK(c.wait_closed());
  CHECK(http.buffered_body_bytes() == 0);
}

TEST_CASE("transport.md/body-buffering: pipelined POSTs behind an authenticated GET stream are not buffered beyond the cap") {
  auto srv = make_server();
  mcpcore::http_endpoint endpoint{srv, bearer_alice{}};
  auto o = head_options();
  constexpr std::size_t mib = std::size_t{1} << 20U;
  o.max_connection_buffered_body_bytes = 2 * mib;
  asio_http_server http{endpoint, o};
  REQUIRE(http.start());
  const auto port = http.port();
  const std::string token = "Authorization: Bearer alice-token\r\n";
  std::string init_req = mcp_post(port, fx::initialize(1));
  init_req.insert(init_req.find("\r\n") + 2, token);
  raw_client i(port);
  REQUIRE(i.send(init_req));
  auto init = i.read_response();
  REQUIRE(init);
  REQUIRE(init->status == 200);
  const auto sid = init->header("Mcp-Session-Id");
  REQUIRE(sid);
  std::string get = mcp_get_or_delete("GET", port, *sid);
  get.insert(get.find("\r\n") + 2, token);

  for (const bool authenticated : {false, true}) {
    CAPTURE(authenticated);
    raw_client g(port);
    REQUIRE(g.send(get));
    auto head = g.read_head();
    REQUIRE(head);
    REQUIRE(head->status == 200);
    // Eight 1 MiB POSTs pipelined behind the stream, sent from another thread (the server
    // stops reading).
    const std::string body = padded_ping(mib);
    std::string pipelined;
    for (int k = 0; k < 8; ++k) {
      pipelined += post_head(port, body.size(), authenticated ? token : std::string{});
      pipelined += body;
    }
    auto sender = std::async(std::launch::async, [&] { return g.send(pipelined); });
    std::size_t peak = 0;
    const auto until = std::chrono::steady_clock::now() + 600ms;
    while (std::chrono::steady_clock::now() < until) {
      peak = std::max(peak, http.buffered_body_bytes());
      std::this_thread::sleep_for(1ms);
    }
    CHECK(peak <= (authenticated ? 2 * mib : 0));
    if (authenticated) CHECK(peak > 0);
    g.shutdown_write();  // wakes the sender blocked in send
    (void)sender.get();
    g.reset();
    CHECK(test_http::eventually([&] { return http.buffered_body_bytes() == 0; }));
  }
}

TEST_CASE("transport.md/body-buffering: the server-wide cap holds with many connections, the bodies beyond it get 503") {
  auto srv = make_server();
  mcpcore::http_endpoint endpoint{srv, bearer_alice{}};
  auto o = head_options();
  constexpr std::size_t mib = std::size_t{1} << 20U;
  o.max_buffered_body_bytes = 3 * mib;
  asio_http_server http{endpoint, o};
  REQUIRE(http.start());
  const auto port = http.port();
  const std::string token = "Authorization: Bearer alice-token\r\n";
  const std::string body = padded_ping(mib);
  std::vector<std::unique_ptr<raw_client>> clients;
  for (int k = 0; k < 6; ++k) {
    clients.push_back(std::make_unique<raw_client>(port));
    REQUIRE(clients.back()->send(post_head(port, body.size(), token)));
  }
  CHECK(test_http::eventually([&] { return http.body_refusals() == 3; }));
  CHECK(http.buffered_body_bytes() == 3 * mib);
  int ok = 0;
  int refused = 0;
  for (auto& c : clients) {
    (void)c->send(body);  // a refused connection may already be closed
    auto r = c->read_response();
    REQUIRE(r);
    if (r->status == 200) ++ok;
    if (r->status == 503) {
      ++refused;
      CHECK(r->header("Retry-After").has_value());
      CHECK(r->header("Connection") == "close");
    }
  }
  CHECK(ok == 3);
  CHECK(refused == 3);
  CHECK(test_http::eventually([&] { return http.buffered_body_bytes() == 0; }));
}

namespace {

/// `Bearer alice-token` is alice, `Bearer bob-token` bob; counts every `authenticate`.
struct counting_bearer {
  std::shared_ptr<std::atomic<int>> calls = std::make_shared<std::atomic<int>>(0);
  [[nodiscard]] std::optional<mcpcore::principal> authenticate(const mcpcore::http_request_view& req) const {
    ++*calls;
    const auto a = req.header("Authorization");
    if (!a) return std::nullopt;
    mcpcore::principal p;
    if (*a == "Bearer alice-token") {
      p.id = "alice";
    } else if (*a == "Bearer bob-token") {
      p.id = "bob";
    } else {
      return std::nullopt;
    }
    return p;
  }
  [[nodiscard]] mcpcore::credential_verdict revalidate(const mcpcore::principal& /*p*/) const noexcept {
    return mcpcore::credential_verdict::valid;
  }
};

/// A POST of `body` on /mcp with the bearer `token` (and `Mcp-Session-Id` when `session` is set).
std::string token_post(std::uint16_t port, std::string_view body, std::string_view token, std::string_view session = {}) {
  std::string s = "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port) +
                  "\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
                  "MCP-Protocol-Version: 2025-11-25\r\nAuthorization: Bearer " +
                  std::string(token) + "\r\n";
  if (!session.empty()) s += "Mcp-Session-Id: " + std::string(session) + "\r\n";
  s += "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n";
  s += body;
  return s;
}

}  // namespace

TEST_CASE("http.md/handing-in-the-principal: the Asio server authenticates each request once, pipelined requests each as their own principal") {
  mcpcore::server_builder b{{.name = "once", .version = "1"}};
  b.tool("whoami")
      .description("Names the caller.")
      .security("Thing", mcpcore::operation::read)
      .effect(mcpcore::tool_effect::read_only, false)
      .handler([](mcpcore::call_context& ctx, const mcpcore::arguments&) {
        return mcpcore::tool_result::text("caller=" + ctx.caller().id);
      });
  auto srv = fx::build(b);
  const counting_bearer auth;
  mcpcore::http_endpoint endpoint{srv, auth};
  asio_http_server http{endpoint, head_options()};
  REQUIRE(http.start());
  const auto port = http.port();
  raw_client c(port);
  REQUIRE(c.connected());
  // Two pipelined calls (stateless), in one write: each is its own principal's.
  REQUIRE(c.send(token_post(port, fx::call_tool(1, "whoami"), "alice-token") +
                 token_post(port, fx::call_tool(2, "whoami"), "bob-token")));
  auto first = c.read_response();
  REQUIRE(first);
  CHECK(first->status == 200);
  CHECK(first->body.find("caller=alice") != std::string::npos);
  auto second = c.read_response();
  REQUIRE(second);
  CHECK(second->status == 200);
  CHECK(second->body.find("caller=bob") != std::string::npos);
  CHECK(auth.calls->load() == 2);
  // A session: initialize, then DELETE as its owner.
  REQUIRE(c.send(token_post(port, fx::initialize(3), "alice-token")));
  auto init = c.read_response();
  REQUIRE(init);
  REQUIRE(init->status == 200);
  const auto sid = init->header("Mcp-Session-Id");
  REQUIRE(sid);
  CHECK(auth.calls->load() == 3);
  REQUIRE(c.send("DELETE /mcp HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port) +
                 "\r\nAuthorization: Bearer alice-token\r\nMcp-Session-Id: " + *sid + "\r\n\r\n"));
  auto del = c.read_response();
  REQUIRE(del);
  CHECK(del->status == 200);
  CHECK(auth.calls->load() == 4);
  // A refused head is authenticated once too; the operational routes not at all.
  REQUIRE(c.send("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port) + "\r\n\r\n"));
  auto health = c.read_response();
  REQUIRE(health);
  CHECK(health->status == 200);
  CHECK(auth.calls->load() == 4);
  raw_client d(port);
  REQUIRE(d.send(token_post(port, fx::call_tool(4, "whoami"), "wrong-token")));
  auto refused = d.read_response();
  REQUIRE(refused);
  CHECK(refused->status == 401);
  CHECK(auth.calls->load() == 5);
}
