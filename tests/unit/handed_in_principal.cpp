// SPDX-License-Identifier: Apache-2.0
// A principal the host authenticated itself, handed to the endpoint with its request
// (docs/http.md#handing-in-the-principal): it reaches the tool with its host context, the
// authenticator is not asked, sessions stay bound to the principal id, streams re-validate it
// through `external_authenticator`, and without one a request is 401. Also the structured local
// address of the request view (docs/security.md#dns-rebinding-host-and-origin).
#include <mcpcore/transport/http_endpoint.hpp>

#include <doctest/doctest.h>

#include "support/http_endpoint_fixture.hpp"
#include "support/server_fixture.hpp"

#include <mcpcore/dispatch/server.hpp>
#include <mcpcore/dispatch/tool.hpp>
#include <mcpcore/governance/authenticator.hpp>
#include <mcpcore/governance/clock.hpp>
#include <mcpcore/governance/policy.hpp>
#include <mcpcore/session/stream_pump.hpp>
#include <mcpcore/wire/http.hpp>
#include <mcpcore/wire/json.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

using namespace mcpcore;
using namespace std::chrono_literals;
namespace fx = server_fixture;

namespace handed_in_test {

using namespace http_endpoint_fixture;

/// The host's own context of a request: here, the host's session name.
struct host_session final : host_context {
  explicit host_session(std::string n) : name(std::move(n)) {}
  std::string name;
};

std::string context_of(const principal& p) {
  const auto* c = dynamic_cast<const host_session*>(p.context.get());
  return c != nullptr ? c->name : std::string{"<none>"};
}

principal carol(std::string_view session = "host-7") {
  principal p;
  p.id = "carol";
  p.context = std::make_shared<const host_session>(std::string{session});
  return p;
}

/// Counts `authenticate` calls; `Bearer alice-token` is alice.
struct counting_authenticator {
  std::shared_ptr<std::atomic<int>> calls = std::make_shared<std::atomic<int>>(0);
  [[nodiscard]] std::optional<principal> authenticate(const http_request_view& req) const {
    ++*calls;
    if (req.header("Authorization") != std::optional<std::string_view>{"Bearer alice-token"}) return std::nullopt;
    principal p;
    p.id = "alice";
    return p;
  }
  [[nodiscard]] credential_verdict revalidate(const principal& /*p*/) const noexcept { return credential_verdict::valid; }
};

constexpr std::string_view name_form = R"({"type":"object","properties":{"name":{"type":"string"}}})";

/// A server whose tools tell who called them (and ask the client first, `ask_whoami`), behind an
/// endpoint with the authenticator `A` on a manual clock and a thread-per-task executor.
struct fixture {
  template <authenticator A>
  explicit fixture(A authn) {
    server_builder b{{.name = "handed-in-test", .version = "1"}};
    add_tool(b, "whoami", [](call_context& ctx, const arguments&) {
      return tool_result::text(ctx.caller().id + "|" + context_of(ctx.caller()));
    });
    add_tool(b, "ask_whoami", [](call_context& ctx, const arguments&) {
      if (fx::str(ctx.input("name")["action"]) == "accept") {
        return tool_result::text(ctx.caller().id + "|" + context_of(ctx.caller()));
      }
      return tool_result::need_input(input_required{}.ask("name", input_request::elicit("Name?", name_form)));
    });
    srv.emplace(fx::build(b));
    ep = std::make_unique<http_endpoint>(*srv, std::move(authn), test_options(), clock_ref<manual_clock>{clk});
    binding = ep->bind_executor(exec.get());
  }
  ~fixture() { exec.join(); }
  fixture(const fixture&) = delete;
  fixture& operator=(const fixture&) = delete;

  /// Sends `r`, handing in `who` (none: the endpoint authenticates), and waits for the reply.
  http_reply send(const request& r, std::optional<principal> who) { return send_view(r.view(), std::move(who)); }
  http_reply send_view(const http_request_view& v, std::optional<principal> who) {
    auto box = std::make_shared<reply_box>();
    if (who) {
      ep->handle(v, std::move(*who), into(box));
    } else {
      ep->handle(v, into(box));
    }
    REQUIRE(box->wait());
    const std::lock_guard lock{box->mu};
    CHECK(box->calls == 1);
    return std::move(*box->reply);
  }
  /// initialize (declaring elicitation) and notifications/initialized as `who`; the session id.
  std::string open_session(const principal& who) {
    const auto r = send(post(fx::initialize(1, "2025-11-25", R"({"elicitation":{}})"), {}, "none"), who);
    REQUIRE(r.head.status == 200);
    const auto sid = r.head.header("Mcp-Session-Id");
    REQUIRE(sid.has_value());
    CHECK(send(post(fx::notification("notifications/initialized"), *sid, "none"), who).head.status == 202);
    return std::string{*sid};
  }
  sse_reader read(http_reply& r) {
    REQUIRE(r.stream);
    return sse_reader{std::move(r.stream), clk};
  }

  manual_clock clk;
  std::optional<server> srv;
  thread_executor exec;
  std::unique_ptr<http_endpoint> ep;
  http_executor_binding binding;
};

/// The text of a JSON tools/call result, or of the result for `id_json` on an SSE stream.
std::string result_text(const http_reply& r) { return fx::str(fx::at(body_of(r).root["result"]["content"], 0)["text"]); }
std::string result_text(const sse_reader& reader, std::string_view id_json) {
  for (const auto& e : reader.messages()) {
    if (is_response_for(e, id_json)) return fx::str(fx::at(fx::parse(e.data).root["result"]["content"], 0)["text"]);
  }
  return {};
}

}  // namespace handed_in_test

using namespace handed_in_test;

TEST_SUITE("handed_in_principal") {

TEST_CASE("http.md/handing-in-the-principal: a handed-in principal reaches the tool with its context, and the authenticator is not called") {
  counting_authenticator auth;
  fixture f{auth};
  // The handshake era, in a session.
  const auto sid = f.open_session(carol());
  const auto call = f.send(post(fx::call_tool(2, "whoami"), sid, "none"), carol());
  REQUIRE(call.head.status == 200);
  CHECK(result_text(call) == "carol|host-7");
  // Stateless, and with credentials of its own the request is still the handed-in principal's.
  const auto plain = f.send(post(fx::call_tool(3, "whoami"), {}, "alice-token"), carol("host-8"));
  REQUIRE(plain.head.status == 200);
  CHECK(result_text(plain) == "carol|host-8");
  // The per-request era.
  const auto pr = f.send(pr_post(pr_body("4", "tools/call", R"("name":"whoami")"), "tools/call", "whoami", "none"),
                         carol("host-9"));
  REQUIRE(pr.head.status == 200);
  CHECK(result_text(pr) == "carol|host-9");
  CHECK(auth.calls->load() == 0);
  // The same requests without a principal handed in are authenticated as before.
  const auto authed = f.send(post(fx::call_tool(5, "whoami"), {}, "alice-token"), std::nullopt);
  REQUIRE(authed.head.status == 200);
  CHECK(result_text(authed) == "alice|<none>");
  CHECK(auth.calls->load() == 1);
}

TEST_CASE("http.md/handing-in-the-principal: a call that waits for its client resumes as the handed-in principal, context included") {
  fixture f{external_authenticator{}};
  const auto sid = f.open_session(carol());
  auto r = f.send(post(fx::call_tool(3, "ask_whoami"), sid, "none"), carol());
  REQUIRE(r.head.status == 200);
  REQUIRE(header_of(r, "Content-Type") == "text/event-stream");
  auto reader = f.read(r);
  REQUIRE(reader.drive_until([](const auto& ev) {
    for (const auto& e : ev) {
      if (has_method(e, "elicitation/create")) return true;
    }
    return false;
  }));
  std::int64_t rid = 0;
  for (const auto& e : reader.messages()) {
    if (has_method(e, "elicitation/create")) rid = fx::parse(e.data).root["id"].to_int64().value_or(0);
  }
  REQUIRE(rid != 0);
  const auto answer = f.send(post(fx::client_result(rid, R"({"action":"accept","content":{"name":"x"}})"), sid, "none"),
                             carol());
  CHECK(answer.head.status == 202);
  reader.drive_to_end();
  CHECK(result_text(reader, "3") == "carol|host-7");
}

TEST_CASE("http.md/handing-in-the-principal: a session minted by one handed-in principal answers another 404") {
  fixture f{external_authenticator{}};
  const auto sid = f.open_session(carol());
  principal dave;
  dave.id = "dave";
  const auto call = f.send(post(fx::call_tool(2, "whoami"), sid, "none"), dave);
  CHECK(call.head.status == 404);
  CHECK(code_of(call) == -32007);
  CHECK(f.send(get(sid, "none"), dave).head.status == 404);
  CHECK(f.send(del(sid, "none"), dave).head.status == 404);
  // The owner still holds it.
  const auto own = f.send(post(fx::call_tool(3, "whoami"), sid, "none"), carol());
  REQUIRE(own.head.status == 200);
  CHECK(result_text(own) == "carol|host-7");
}

TEST_CASE("http.md/handing-in-the-principal: a GET stream of a handed-in principal closes credential_revoked when the host's callable says revoked") {
  struct seen_state {
    std::mutex mu;
    std::string context;
    std::atomic<credential_verdict> verdict{credential_verdict::valid};
  };
  auto seen = std::make_shared<seen_state>();
  fixture f{external_authenticator{[seen](const principal& p) {
    {
      const std::lock_guard lock{seen->mu};
      seen->context = p.id + "|" + context_of(p);
    }
    return seen->verdict.load();
  }}};
  const auto sid = f.open_session(carol());
  auto g = f.send(get(sid, "none"), carol());
  REQUIRE(g.head.status == 200);
  auto stream = f.read(g);
  (void)stream.pull();
  f.clk.advance(default_pump_tick);
  (void)stream.pull();  // a tick: still valid
  CHECK_FALSE(stream.finished());
  {
    const std::lock_guard lock{seen->mu};
    CHECK(seen->context == "carol|host-7");
  }
  seen->verdict.store(credential_verdict::revoked);
  f.clk.advance(default_pump_tick);
  stream.drive_to_end();
  const auto msgs = stream.messages();
  REQUIRE_FALSE(msgs.empty());
  REQUIRE(is_close(msgs.back()));
  CHECK(fx::str(fx::parse(msgs.back().data).root["params"]["reason"]) == "credential_revoked");
}

TEST_CASE("http.md/handing-in-the-principal: with external_authenticator a request handed in without a principal is 401") {
  fixture f{external_authenticator{}};
  const auto req = post(fx::initialize(1), {}, "alice-token");
  const auto r = f.send(req, std::nullopt);
  CHECK(r.head.status == 401);
  // The request carried a credential that established nobody.
  CHECK(header_of(r, "WWW-Authenticate") == R"(Bearer error="invalid_token")");
  const auto head = f.ep->check_head(req.view());
  REQUIRE(head.has_value());
  CHECK(head->status == 401);
  const principal who = carol();
  CHECK_FALSE(f.ep->check_head(req.view(), &who).has_value());
  CHECK(f.ep->check_head(req.view(), nullptr).value_or(http_response{}).status == 401);
}

TEST_CASE("http.md/handing-in-the-principal: check_head keeps the principal it authenticated, for handle") {
  counting_authenticator auth;
  fixture f{auth};
  std::optional<principal> established;
  const auto ok = post(fx::call_tool(1, "whoami"), {}, "alice-token");
  CHECK_FALSE(f.ep->check_head(ok.view(), established).has_value());
  REQUIRE(established.has_value());
  CHECK(established->id == "alice");
  CHECK(auth.calls->load() == 1);
  const auto r = f.send(ok, std::move(established));
  REQUIRE(r.head.status == 200);
  CHECK(result_text(r) == "alice|<none>");
  CHECK(auth.calls->load() == 1);
  // A refused head leaves nothing established.
  established = carol();
  const auto bad = post(fx::call_tool(1, "whoami"), {}, "wrong");
  const auto refused = f.ep->check_head(bad.view(), established);
  REQUIRE(refused.has_value());
  CHECK(refused->status == 401);
  CHECK_FALSE(established.has_value());
  // The operational routes need none.
  request health = get("");
  health.target = "/healthz";
  established = carol();
  CHECK_FALSE(f.ep->check_head(health.view(), established).has_value());
  CHECK_FALSE(established.has_value());
}

TEST_CASE("security.md/dns-rebinding-host-and-origin: a structured local address skips the Host check only when its address reads as non-loopback") {
  fixture f{external_authenticator{}};
  request r = post(fx::initialize(1), {}, "none");
  r.set("Host", "evil.example");
  struct variant {
    const char* name;
    http_local_address local;
    int status;
  };
  for (const variant& v : {
           variant{"nothing known", http_local_address{}, 403},
           variant{"a loopback listener", http_local_address{.address = "127.0.0.1", .port = 8765, .loopback = true}, 403},
           variant{"a public address claimed loopback", http_local_address{.address = "10.0.0.5", .port = 80, .loopback = true}, 403},
           variant{"non-loopback claimed without an address", http_local_address{.address = "", .port = 80, .loopback = false}, 403},
           variant{"non-loopback claimed for 127.0.0.1", http_local_address{.address = "127.0.0.1", .port = 80, .loopback = false}, 403},
           variant{"non-loopback claimed for ::1", http_local_address{.address = "::1", .port = 80, .loopback = false}, 403},
           variant{"non-loopback claimed for mapped 127.0.0.2", http_local_address{.address = "::ffff:127.0.0.2", .loopback = false}, 403},
           variant{"non-loopback claimed for 0.0.0.0", http_local_address{.address = "0.0.0.0", .loopback = false}, 403},
           variant{"non-loopback claimed for a name", http_local_address{.address = "example.com", .loopback = false}, 403},
           variant{"non-loopback claimed with a port inside", http_local_address{.address = "10.0.0.5:80", .loopback = false}, 403},
           variant{"a bracketed IPv4", http_local_address{.address = "[10.0.0.5]", .loopback = false}, 403},
           variant{"a public IPv4", http_local_address{.address = "10.0.0.5", .port = 80, .loopback = false}, 200},
           variant{"a public IPv6", http_local_address{.address = "2001:db8::1", .port = 80, .loopback = false}, 200},
           variant{"a bracketed public IPv6", http_local_address{.address = "[2001:db8::1]", .loopback = false}, 200},
       }) {
    CAPTURE(v.name);
    http_request_view view = r.view();
    view.local = v.local;
    CHECK(f.send_view(view, carol()).head.status == v.status);
  }
}

}  // TEST_SUITE
