// SPDX-License-Identifier: Apache-2.0
// Tests of scope step-up: a call the tier gate refuses for lack of a scope is 403
// insufficient_scope over HTTP, names the scope, and is audited with it (docs/oauth.md#step-up).
#include <mcpcore/transport/http_endpoint.hpp>

#include <doctest/doctest.h>

#include "support/http_endpoint_fixture.hpp"
#include "support/server_fixture.hpp"

#include <mcpcore/dispatch/server.hpp>
#include <mcpcore/dispatch/tool.hpp>
#include <mcpcore/governance/audit.hpp>
#include <mcpcore/governance/authenticator.hpp>
#include <mcpcore/governance/clock.hpp>
#include <mcpcore/governance/policy.hpp>
#include <mcpcore/governance/scopes.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

using namespace mcpcore;
namespace fx = server_fixture;

namespace step_up_test {

using namespace http_endpoint_fixture;

scope_map grants() {
  return scope_map{{{.scope = "mcp:read", .tier = "readonly", .roles = {}},
                    {.scope = "mcp:operate", .tier = "operator", .roles = {}},
                    {.scope = "mcp:supervise", .tier = "supervised", .roles = {}}}};
}

/// A principal as an OAuth authenticator makes it from a token with `scopes`.
principal oauth_principal(const std::vector<std::string_view>& scopes) {
  principal p;
  p.id = "alice";
  grants().apply(scopes, p);
  return p;
}

/// A server with a read tool and a Tag:Write tool under the Yuzu tiers, the scope map for step-up,
/// and an endpoint whose host hands every principal in (its 401s never matter here).
struct fixture {
  fixture() {
    server_builder b{{.name = "step-up-test", .version = "1"}};
    b.tool("read_thing")
        .description("Reads.")
        .security("Device", operation::read)
        .effect(tool_effect::read_only, true)
        .handler([](call_context&, const arguments&) { return tool_result::text("read"); });
    b.tool("tag_thing")
        .description("Writes a tag.")
        .security("Tag", operation::write)
        .effect(tool_effect::additive, false)
        .handler([](call_context&, const arguments&) { return tool_result::text("tagged"); });
    b.audit(audit);
    b.oauth_scopes(grants());
    srv.emplace(fx::build(b));
    http_endpoint_options o = test_options();
    o.protected_resource.resource = "https://mcp.example.test/mcp";
    o.protected_resource.authorization_servers = {"https://auth.example.test"};
    ep = std::make_unique<http_endpoint>(*srv, external_authenticator{}, o, clock_ref<manual_clock>{clk});
    binding = ep->bind_executor(exec.get());
  }
  ~fixture() { exec.join(); }
  fixture(const fixture&) = delete;
  fixture& operator=(const fixture&) = delete;

  http_reply send(const request& r, principal who) {
    auto box = std::make_shared<reply_box>();
    ep->handle(r.view(), std::move(who), into(box));
    REQUIRE(box->wait());
    const std::lock_guard lock{box->mu};
    return std::move(*box->reply);
  }
  std::string open_session(const principal& who) {
    const auto r = send(post(fx::initialize(1), {}, "none"), who);
    REQUIRE(r.head.status == 200);
    const auto sid = r.head.header("Mcp-Session-Id");
    REQUIRE(sid.has_value());
    CHECK(send(post(fx::notification("notifications/initialized"), *sid, "none"), who).head.status == 202);
    return std::string{*sid};  // NOLINT(bugprone-unchecked-optional-access): REQUIRE above
  }

  memory_audit_sink audit;
  manual_clock clk;
  std::optional<server> srv;
  thread_executor exec;
  std::unique_ptr<http_endpoint> ep;
  http_executor_binding binding;
};

}  // namespace step_up_test

using namespace step_up_test;

TEST_CASE("oauth.md/step-up: a 2025-11-25 call beyond the token's scopes is 403 insufficient_scope naming the scope, and passes with it") {
  fixture f;
  const principal reader = oauth_principal({"mcp:read"});
  const std::string sid = f.open_session(reader);
  const http_reply refused = f.send(post(fx::call_tool("2", "tag_thing"), sid, "none"), reader);
  CHECK(refused.head.status == 403);
  CHECK(header_of(refused, "WWW-Authenticate") ==
        R"(Bearer error="insufficient_scope", scope="mcp:read mcp:operate", resource_metadata="https://mcp.example.test/.well-known/oauth-protected-resource/mcp")");
  const auto body = body_of(refused);
  CHECK(body.root["error"]["code"].to_int64() == static_cast<std::int64_t>(errc::tier_denied));
  CHECK(fx::str(body.root["error"]["message"]) == "The access token lacks a scope this operation needs");
  CHECK(fx::str(body.root["error"]["data"]["remediation"]).find("mcp:operate") != std::string::npos);
  // The audit row says which scope was missing.
  bool audited = false;
  for (const audit_entry& row : f.audit.entries()) {
    audited = audited || (row.result == audit_result::denied && row.detail.find("missing scope=mcp:operate") != std::string::npos);
  }
  CHECK(audited);
  // What the token allows is served as before.
  CHECK(f.send(post(fx::call_tool("3", "read_thing"), sid, "none"), reader).head.status == 200);
  // A token with the scope passes.
  const principal operate = oauth_principal({"mcp:read", "mcp:operate"});
  const std::string sid2 = f.open_session(operate);
  const http_reply passed = f.send(post(fx::call_tool("4", "tag_thing"), sid2, "none"), operate);
  CHECK(passed.head.status == 200);
  CHECK(body_of(passed).root["result"]["content"].exists());
}

TEST_CASE("oauth.md/step-up: a 2026-07-28 call beyond the token's scopes is 403 insufficient_scope too") {
  fixture f;
  const principal unscoped = oauth_principal({"openid"});
  CHECK(unscoped.tier == unscoped_tier);
  const std::string call = pr_body("5", "tools/call", R"("name":"read_thing","arguments":{})");
  const http_reply refused = f.send(pr_post(call, "tools/call", "read_thing", "none"), unscoped);
  CHECK(refused.head.status == 403);
  CHECK(header_of(refused, "WWW-Authenticate").starts_with(R"(Bearer error="insufficient_scope", scope="openid mcp:read")"));
  const http_reply passed = f.send(pr_post(call, "tools/call", "read_thing", "none"), oauth_principal({"mcp:read"}));
  CHECK(passed.head.status == 200);
}

TEST_CASE("oauth.md/step-up: a principal that did not come from an OAuth token keeps the 200 -32004") {
  fixture f;
  principal static_token;
  static_token.id = "svc";
  static_token.tier = "readonly";
  const std::string sid = f.open_session(static_token);
  const http_reply r = f.send(post(fx::call_tool("2", "tag_thing"), sid, "none"), static_token);
  CHECK(r.head.status == 200);
  CHECK(header_of(r, "WWW-Authenticate") == "<absent>");
  CHECK(body_of(r).root["error"]["code"].to_int64() == static_cast<std::int64_t>(errc::tier_denied));
  CHECK(fx::str(body_of(r).root["error"]["message"]) == "MCP tier does not allow this operation");
}
