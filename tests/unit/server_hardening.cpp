// SPDX-License-Identifier: Apache-2.0
// The dispatch core's answers to the second hardening round (docs/security.md#bad-input-catalogue),
// driven through server::handle only: checks that can refuse run before an approval ticket is
// consumed (docs/approvals.md#what-the-machine-checks-in-order), progress tokens
// (docs/errors.md#progress-tokens), argument errors as tool results (docs/errors.md), the ticket
// in the -32006 message (docs/approvals.md#the-flow), enforced output schemas
// (docs/design.md#the-toolscall-pipeline) and the governance of resources and prompts
// (docs/security.md#resources-and-prompts).
#include <mcpcore/dispatch/server.hpp>

#include <doctest/doctest.h>

#include "support/server_fixture.hpp"

#include <mcpcore/dispatch/tool.hpp>
#include <mcpcore/governance/approval.hpp>
#include <mcpcore/governance/audit.hpp>
#include <mcpcore/governance/metrics.hpp>
#include <mcpcore/governance/policy.hpp>
#include <mcpcore/session/stream_admission.hpp>
#include <mcpcore/stores/memory_approval_store.hpp>
#include <mcpcore/wire/json.hpp>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

using namespace mcpcore;
using namespace server_fixture;

namespace {

server_info hardening_info() { return {.name = "hardening-test", .version = "1"}; }

// An authorizer a test can turn off between the approval and the recall.
struct switchable_authorizer {
  const std::atomic<bool>* on;
  bool allowed(const principal&, std::string_view, operation) const { return on->load(); }
};

const principal supervised_agent{.id = "agent-1", .tier = "supervised"};
const principal carol{.id = "carol",
                      .tier = "supervised",
                      .kind = principal_kind::human_interactive,
                      .assured = true};

// delete_item (Item:Delete, gated at supervised) behind a switchable authorizer and a precondition
// the test controls.
struct gated_server {
  memory_approval_store store;
  approval_service service{store};
  memory_audit_sink audit;
  metrics_registry metrics{"t"};
  std::atomic<bool> rbac_on{true};
  std::atomic<bool> slot_free{true};
  std::atomic<int> runs{0};
  std::atomic<bool> handler_fails{false};
  server srv;

  gated_server() : srv(make()) {}
  server make() {
    server_builder b{hardening_info()};
    b.tool("delete_item")
        .description("Deletes an item.")
        .input_schema(R"({"type":"object","properties":{"id":{"type":"string"},"approval_id":{"type":"string"}},)"
                      R"("required":["id"],"additionalProperties":false})")
        .security("Item", operation::delete_)
        .effect(tool_effect::destructive, true)
        .approval_precondition([this](const approval_ticket&, const principal&, json::value) -> std::optional<std::string> {
          if (slot_free) return std::nullopt;
          return "no free slot";
        })
        .handler([this](call_context&, const arguments&) {
          ++runs;
          if (handler_fails) return tool_result::error("too many commands");
          return tool_result::text("deleted");
        });
    b.authorizer(switchable_authorizer{&rbac_on}).audit(audit).metrics(metrics).approvals(service);
    return build(b);
  }
  std::string mint(connection& c) {
    const auto a = c.send(srv, call_tool(1, "delete_item", R"({"id":"x"})"));
    REQUIRE(a.code() == -32006);
    return str(a.data()["approval_id"]);
  }
  [[nodiscard]] bool consumed(const std::string& id) {
    auto t = store.get(id);
    REQUIRE(t.has_value());
    const std::optional<approval_ticket> ticket = t.value_or(std::nullopt);
    REQUIRE(ticket.has_value());
    return ticket.has_value() && ticket->consumed_at.has_value();
  }
};

std::string recall_of(const std::string& id) {
  return call_tool(2, "delete_item", R"({"id":"x","approval_id":")" + id + R"("})");
}

}  // namespace

TEST_SUITE("server hardening") {

// ---- checks that can refuse run before the consume ----------------------------------------------

TEST_CASE("approvals.md/what-the-machine-checks-in-order: an RBAC refusal after the approval leaves the ticket redeemable") {
  gated_server g;
  connection c{supervised_agent};
  const std::string id = g.mint(c);
  REQUIRE(g.service.approve(id, carol).ok());
  g.rbac_on = false;  // the role was withdrawn during the review
  const auto refused = c.send(g.srv, recall_of(id));
  CHECK(refused.code() == -32003);
  CHECK(refused.message() == "Permission denied");
  CHECK_FALSE(g.consumed(id));
  CHECK(series_value(g.metrics, R"(t_mcp_approval_burned_total{reason="handler_reject",tool="delete_item"})") == 0);
  CHECK(g.runs == 0);
  g.rbac_on = true;
  CHECK(c.send(g.srv, recall_of(id)).result().exists());
  CHECK(g.runs == 1);
}

TEST_CASE("approvals.md/what-the-machine-checks-in-order: a caller RBAC refuses mints no ticket") {
  gated_server g;
  g.rbac_on = false;
  connection c{supervised_agent};
  const auto a = c.send(g.srv, call_tool(1, "delete_item", R"({"id":"x"})"));
  CHECK(a.code() == -32003);
  auto pending = g.store.pending(10);
  REQUIRE(pending.has_value());
  CHECK(pending->empty());
}

TEST_CASE("approvals.md/what-the-machine-checks-in-order: a precondition refusing after approval is retryable and leaves the ticket redeemable") {
  gated_server g;
  connection c{supervised_agent};
  const std::string id = g.mint(c);
  REQUIRE(g.service.approve(id, carol).ok());
  g.slot_free = false;
  const auto refused = c.send(g.srv, recall_of(id));
  CHECK(refused.code() == -32003);
  CHECK(refused.data()["retry_after_ms"].to_int64().value_or(0) ==
        std::chrono::milliseconds{default_precondition_retry_after}.count());
  CHECK_FALSE(g.consumed(id));
  g.slot_free = true;
  CHECK(c.send(g.srv, recall_of(id)).result().exists());
  CHECK(g.runs == 1);
  CHECK(g.consumed(id));
}

TEST_CASE("security.md/the-gate-order: a consumed ticket whose handler answers a tool error counts as burned") {
  gated_server g;
  connection c{supervised_agent};
  const std::string id = g.mint(c);
  REQUIRE(g.service.approve(id, carol).ok());
  g.handler_fails = true;
  const auto a = c.send(g.srv, recall_of(id));
  CHECK(a.result()["isError"].is_bool());
  CHECK(g.consumed(id));
  CHECK(series_value(g.metrics, R"(t_mcp_approval_burned_total{reason="handler_reject",tool="delete_item"})") == 1);
}

// ---- the ticket in the -32006 message -------------------------------------------------------------

TEST_CASE("approvals.md/the-flow: the -32006 message names the ticket and how to redeem it") {
  gated_server g;
  connection c{supervised_agent};
  const auto a = c.send(g.srv, call_tool(1, "delete_item", R"({"id":"x"})"));
  REQUIRE(a.code() == -32006);
  const std::string id = str(a.data()["approval_id"]);
  REQUIRE(id.size() == 32);
  CHECK(a.message().starts_with("operation requires approval"));
  CHECK(a.message().find(id) != std::string::npos);
  CHECK(a.message().find(R"("approval_id":")" + id + '"') != std::string::npos);
  CHECK(a.message().find("approver") != std::string::npos);
  // a poll of the pending ticket says the same
  const auto poll = c.send(g.srv, recall_of(id));
  CHECK(poll.code() == -32006);
  CHECK(poll.message().find(id) != std::string::npos);
}

// ---- progress tokens ---------------------------------------------------------------------------

TEST_CASE("errors.md/progress-tokens: a progress token that is not a bounded string or an integer gets no progress") {
  server_builder b{hardening_info()};
  b.tool("steps")
      .description("Reports progress.")
      .effect(tool_effect::read_only, true)
      .security("Thing", operation::read)
      .handler([](call_context& ctx, const arguments&) {
        (void)ctx.progress(1);
        return tool_result::text(ctx.wants_progress() ? "wanted" : "not wanted");
      });
  auto srv = build(b);
  const std::string huge = std::string(std::size_t{4} << 20U, 'a');
  const std::vector<std::string> bad = {"null", "true", R"({"a":1})", "[1]", "1.5", '"' + huge + '"',
                                        '"' + std::string(default_max_progress_token_bytes + 1, 'b') + '"'};
  for (const auto& token : bad) {
    CAPTURE(token.substr(0, 40));
    connection c;
    const auto a = c.send(srv, call_tool(1, "steps", "{}", R"({"progressToken":)" + token + "}"));
    CHECK(str(at(a.result()["content"], 0)["text"]) == "not wanted");
    CHECK(c.sink.with_method("notifications/progress").empty());
  }
  const std::vector<std::string> good = {"7", R"("tok")", '"' + std::string(default_max_progress_token_bytes, 'c') + '"'};
  for (const auto& token : good) {
    CAPTURE(token.substr(0, 40));
    connection c;
    const auto a = c.send(srv, call_tool(1, "steps", "{}", R"({"progressToken":)" + token + "}"));
    CHECK(str(at(a.result()["content"], 0)["text"]) == "wanted");
    CHECK(c.sink.with_method("notifications/progress").size() == 1);
  }
}

TEST_CASE("errors.md/progress-tokens: the session layer's progress bridge takes the same rule") {
  const std::string huge = R"({"big":")" + std::string(std::size_t{4} << 20U, 'a') + R"(","ok":"tok","n":7})";
  const auto p = parse(huge);
  CHECK_FALSE(progress_token_of(p.root["big"]).has_value());
  CHECK(progress_token_of(p.root["ok"]).has_value());
  CHECK(progress_token_of(p.root["n"]).has_value());
  post_mode_inputs in{.bridge_available = true, .has_session = true, .progress_token = p.root["big"], .accepts_sse = true};
  CHECK(choose_post_mode(in) == post_mode::plain);
  in.progress_token = p.root["ok"];
  CHECK(choose_post_mode(in) == post_mode::streamed);
}

// ---- argument errors as tool results ----------------------------------------------------------------

TEST_CASE("errors.md/argument-errors: an input-schema violation is a tool result with isError, the path and the correlation id") {
  memory_audit_sink audit;
  auto make = [&](argument_error_style style) {
    server_builder b{hardening_info(), {.argument_errors = style}};
    b.tool("echo")
        .description("Echoes.")
        .input_schema(R"({"type":"object","properties":{"n":{"type":"integer"}},"required":["n"],)"
                      R"("additionalProperties":false})")
        .security("Thing", operation::read)
        .effect(tool_effect::read_only, true)
        .handler([](call_context&, const arguments&) { return tool_result::text("ran"); });
    b.audit(audit);
    return build(b);
  };
  SUBCASE("the default: a tool result") {
    auto srv = make(argument_error_style::tool_result);
    connection c;
    const auto a = c.send(srv, call_tool(1, "echo", R"({"n":"x"})"));
    REQUIRE(a.result().exists());
    CHECK(a.result()["isError"].is_bool());
    const std::string text = str(at(a.result()["content"], 0)["text"]);
    CHECK(text.starts_with("Invalid arguments at /n: "));
    const std::string cid = str(a.result()["_meta"]["mcpcore/correlationId"]);
    CHECK(is_correlation_id(cid));
    bool audited = false;
    for (const auto& row : audit.entries()) {
      if (row.correlation_id == cid && row.detail.find("schema path=/n") != std::string::npos) audited = true;
    }
    CHECK(audited);
  }
  SUBCASE("hosts that want the JSON-RPC error keep -32602") {
    auto srv = make(argument_error_style::json_rpc_error);
    connection c;
    const auto a = c.send(srv, call_tool(1, "echo", R"({"n":"x"})"));
    CHECK(a.code() == -32602);
    CHECK(a.message().starts_with("Invalid arguments at /n: "));
  }
  SUBCASE("gates that are not about the arguments stay JSON-RPC errors") {
    auto srv = make(argument_error_style::tool_result);
    connection c;
    CHECK(c.send(srv, call_tool(1, "nope", "{}")).code() == -32602);
    srv.switches().set_disabled(true);
    CHECK(c.send(srv, call_tool(2, "echo", R"({"n":"x"})")).code() == -32005);
  }
}

// ---- output schemas -----------------------------------------------------------------------------

TEST_CASE("design.md/the-toolscall-pipeline: structuredContent that breaks the outputSchema is -32603, counted and audited") {
  memory_audit_sink audit;
  metrics_registry metrics{"t"};
  std::string payload = R"({"n":1})";
  server_builder b{hardening_info()};
  b.tool("shape")
      .description("Returns a shape.")
      .output_schema(R"({"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]})")
      .security("Thing", operation::read)
      .effect(tool_effect::read_only, true)
      .handler([&](call_context&, const arguments&) { return tool_result::structured(payload); });
  b.audit(audit).metrics(metrics);
  auto srv = build(b);
  connection c;
  CHECK(c.send(srv, call_tool(1, "shape")).result()["structuredContent"]["n"].to_int64() == 1);
  payload = R"({"n":"one"})";
  const auto bad = c.send(srv, call_tool(2, "shape"));
  CHECK(bad.code() == -32603);
  CHECK(series_value(metrics, R"(t_mcp_tool_output_invalid_total{tool="shape"})") == 1);
  bool audited = false;
  for (const auto& row : audit.entries()) {
    if (row.correlation_id == bad.cid() && row.detail.find("schema path=/n") != std::string::npos) audited = true;
  }
  CHECK(audited);
  payload = R"({})";
  CHECK(c.send(srv, call_tool(3, "shape")).code() == -32603);
  CHECK(series_value(metrics, R"(t_mcp_tool_output_invalid_total{tool="shape"})") == 2);
}

TEST_CASE("design.md/registration-validation: an output schema that does not compile refuses the build") {
  server_builder b{hardening_info()};
  b.tool("shape")
      .description("Returns a shape.")
      .output_schema(R"({"type":"object","properties":{"n":{"type":"nonsense"}}})")
      .security("Thing", operation::read)
      .effect(tool_effect::read_only, true)
      .handler([](call_context&, const arguments&) { return tool_result::structured("{}"); });
  auto r = b.build();
  REQUIRE_FALSE(r.has_value());
  CHECK(r.error().message().find("output schema") != std::string::npos);
}

// ---- resources and prompts are governed ----------------------------------------------------------

namespace {
struct governed {
  memory_audit_sink audit;
  server srv;
  governed() : srv(make()) {}
  server make() {
    server_builder b{hardening_info()};
    b.resource("res://open").name("open").handler([](call_context&, std::string_view uri, const uri_variables&) {
      return std::optional{resource_result{}.add_text(std::string{uri}, "text/plain", "hello")};
    });
    b.resource("res://secret")
        .name("secret")
        .security("Secret", operation::write)
        .handler([](call_context&, std::string_view uri, const uri_variables&) {
          return std::optional{resource_result{}.add_text(std::string{uri}, "text/plain", "s3cret")};
        });
    b.prompt("open").handler([](call_context&, const prompt_arguments&) { return prompt_result{}; });
    b.prompt("secret").security("Secret", operation::write).handler([](call_context&, const prompt_arguments&) {
      return prompt_result{};
    });
    b.policy(yuzu_tier_policy{}).audit(audit);
    return build(b);
  }
  answer read(const principal& who, std::string_view uri) {
    return handle(srv, request(1, "resources/read", R"({"uri":")" + std::string{uri} + R"("})"), {.caller = who});
  }
  answer get(const principal& who, std::string_view name) {
    return handle(srv, request(1, "prompts/get", R"({"name":")" + std::string{name} + R"("})"), {.caller = who});
  }
  [[nodiscard]] bool row(std::string_view action, std::string_view target, audit_result result) const {
    for (const auto& r : audit.entries()) {
      if (r.action == action && r.target_id == target && r.result == result) return true;
    }
    return false;
  }
};
const principal readonly_reader{.id = "reader", .tier = "readonly"};
const principal unknown_tier{.id = "who", .tier = "bogus"};
}  // namespace

TEST_CASE("security.md/resources-and-prompts: resources/read goes through the tier gate and is audited") {
  governed g;
  CHECK(str(at(g.read(readonly_reader, "res://open").result()["contents"], 0)["text"]) == "hello");
  CHECK(g.row("mcp.resources/read", "res://open", audit_result::success));
  const auto denied = g.read(readonly_reader, "res://secret");
  CHECK(denied.code() == -32004);
  CHECK(denied.message() == "MCP tier does not allow this operation");
  CHECK(g.row("mcp.resources/read", "res://secret", audit_result::denied));
  CHECK(g.read(unknown_tier, "res://open").code() == -32004);  // the default row (Resource, Read)
}

TEST_CASE("security.md/resources-and-prompts: read-only mode refuses a resource whose operation is not read") {
  governed g;
  const principal sup{.id = "s", .tier = "supervised"};
  g.srv.switches().set_read_only(true);
  const auto refused = g.read(sup, "res://secret");
  CHECK(refused.code() == -32004);
  CHECK(refused.message() == "MCP is in read-only mode");
  CHECK(str(at(g.read(sup, "res://open").result()["contents"], 0)["text"]) == "hello");
  g.srv.switches().set_disabled(true);
  CHECK(g.read(sup, "res://open").code() == -32005);
}

TEST_CASE("security.md/resources-and-prompts: prompts/get goes through the tier gate and is audited") {
  governed g;
  CHECK(g.get(readonly_reader, "open").result()["messages"].is_array());
  CHECK(g.row("mcp.prompts/get", "open", audit_result::success));
  const auto denied = g.get(readonly_reader, "secret");
  CHECK(denied.code() == -32004);
  CHECK(g.row("mcp.prompts/get", "secret", audit_result::denied));
  CHECK(g.get(unknown_tier, "open").code() == -32004);
}

TEST_CASE("security.md/resources-and-prompts: read-only mode refuses a prompt whose operation is not read") {
  governed g;
  const principal sup{.id = "s", .tier = "supervised"};
  g.srv.switches().set_read_only(true);
  CHECK(g.get(sup, "secret").code() == -32004);
  CHECK(g.get(sup, "open").result()["messages"].is_array());
  g.srv.switches().set_disabled(true);
  CHECK(g.get(sup, "open").code() == -32005);
}

}  // TEST_SUITE
