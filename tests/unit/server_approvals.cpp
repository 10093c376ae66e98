// SPDX-License-Identifier: Apache-2.0
// The approval machine inside the tools/call pipeline (docs/design.md#the-toolscall-pipeline,
// docs/security.md#the-gate-order, docs/approvals.md#the-flow,
// docs/metrics.md#names-and-registration), driven through server::handle only: what the client
// sees, what the audit trail and the metrics record, and that a handler runs at most once per
// ticket.
#include <mcpcore/dispatch/server.hpp>

#include <doctest/doctest.h>

#include "support/process.hpp"
#include "support/server_fixture.hpp"

#include <mcpcore/governance/approval.hpp>
#include <mcpcore/governance/audit.hpp>
#include <mcpcore/governance/clock.hpp>
#include <mcpcore/governance/metrics.hpp>
#include <mcpcore/governance/policy.hpp>
#include <mcpcore/stores/memory_approval_store.hpp>
#include <mcpcore/stores/sqlite_approval_store.hpp>

#include <atomic>
#include <chrono>
#include <optional>
#include <ostream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

using namespace mcpcore;
using namespace server_fixture;
using namespace std::chrono_literals;

namespace {

constexpr std::string_view gated_schema =
    R"({"type":"object","properties":{"tag":{"type":"string"},"approval_id":{"type":"string"}},)"
    R"("required":["tag"],"additionalProperties":false})";
// An open schema: approval_id is not declared, so only the machine sees its type.
constexpr std::string_view open_schema = R"({"type":"object","properties":{"n":{"type":"number"}}})";

principal agent(std::string id = "agent-1") {
  return {.id = std::move(id), .tier = "supervised", .roles = {"user", "approver"}};
}
principal human(std::string id = "carol") {
  return {.id = std::move(id),
          .tier = "supervised",
          .kind = principal_kind::human_interactive,
          .roles = {"user", "approver"},
          .assured = true};
}

// A store wrapper whose operations can be made to fail, for
// docs/approvals.md#every-answer-of-the-machine.
struct faulty_store {
  memory_approval_store inner;
  std::error_code get_error, consume_error, mint_error, review_error;
  result<approval_mint_result> mint(const approval_mint_request& m) {
    if (mint_error) return std::unexpected(mint_error);
    return inner.mint(m);
  }
  result<std::optional<approval_ticket>> get(std::string_view id) {
    if (get_error) return std::unexpected(get_error);
    return inner.get(id);
  }
  result<approval_consume_status> consume(const approval_consume_request& c) {
    if (consume_error) return std::unexpected(consume_error);
    return inner.consume(c);
  }
  result<approval_review_status> review(const approval_review_request& r) {
    if (review_error) return std::unexpected(review_error);
    return inner.review(r);
  }
  result<std::size_t> expire(approval_time now, std::chrono::milliseconds lifetime) {
    return inner.expire(now, lifetime);
  }
  result<std::vector<approval_ticket>> pending(std::size_t limit) { return inner.pending(limit); }
};
static_assert(approval_store<faulty_store>);

// The approval-gated server: delete_tag (Tag:Delete, gated for supervised and operator),
// drop (Thing:Delete, open schema), the approver tools, and a role table in which "user" may
// do anything to tags and things and "approver" may approve.
struct gated {
  manual_clock clock;
  faulty_store store;
  approval_service service;
  memory_audit_sink audit;
  metrics_registry metrics{"t"};
  std::atomic<int> delete_calls{0};
  std::atomic<int> drop_calls{0};
  std::atomic<bool> handler_throws{false};
  std::optional<std::string> precondition_reason;
  std::atomic<int> precondition_calls{0};
  server srv;

  explicit gated(approval_options options = {})
      : service(store, clock_ref<manual_clock>{clock}, std::move(options)), srv(make()) {}

  server make() {
    server_builder b{{.name = "approvals-test", .version = "1"}};
    b.tool("delete_tag")
        .description("Deletes a tag.")
        .input_schema(std::string{gated_schema})
        .security("Tag", operation::delete_)
        .effect(tool_effect::destructive, true)
        .approval_precondition([this](const approval_ticket&, const principal&, json::value) {
          ++precondition_calls;
          return precondition_reason;
        })
        .handler([this](call_context&, const arguments& args) {
          ++delete_calls;
          if (handler_throws) throw std::runtime_error("disk on fire");
          return tool_result::text("deleted " + std::string{args["tag"].as_string()});
        });
    b.tool("drop")
        .description("Drops a thing.")
        .input_schema(std::string{open_schema})
        .security("Thing", operation::delete_)
        .effect(tool_effect::destructive, true)
        .handler([this](call_context&, const arguments&) {
          ++drop_calls;
          return tool_result::text("dropped");
        });
    role_table_authorizer roles;
    roles.grant("user", "Tag", operation::delete_)
        .grant("user", "Thing", operation::delete_)
        .grant("approver", "Approval", operation::approve);
    b.authorizer(std::move(roles)).audit(audit).metrics(metrics).clock(clock_ref<manual_clock>{clock});
    b.approvals(service).approval_tools();
    return build(b);
  }
  [[nodiscard]] long long metric(std::string_view series) const { return series_value(metrics, series); }
  [[nodiscard]] std::vector<audit_entry> rows() const { return audit.entries(); }
  [[nodiscard]] std::optional<approval_ticket> ticket(const std::string& id) {
    auto t = store.inner.get(id);
    REQUIRE(t.has_value());
    return *t;
  }
  void approve(const std::string& id) {
    const auto out = service.approve(id, human("reviewer"));
    REQUIRE(out.ok());
  }
};

std::string with_id(std::string_view args_head, const std::string& id) {
  // args_head is an object text without its closing brace, e.g. {"tag":"a"
  return std::string{args_head} + R"(,"approval_id":")" + id + R"("})";
}

// The id minted by a first call, checked to be a proper -32006
// (docs/approvals.md#what-the-machine-checks-in-order).
std::string mint(gated& g, connection& c, std::string_view args = R"({"tag":"a"})") {
  const auto a = c.send(g.srv, call_tool(1, "delete_tag", args));
  REQUIRE(a.code() == -32006);
  const std::string id = str(a.data()["approval_id"]);
  REQUIRE(is_approval_id(id));
  return id;
}

}  // namespace

TEST_SUITE("server approvals") {

TEST_CASE("approvals.md/what-the-machine-checks-in-order: a first call mints a ticket: -32006 with approval_id, status_url, retry 30000, remediation, audit pending") {
  gated g;
  connection c{agent()};
  const auto a = c.send(g.srv, call_tool(1, "delete_tag", R"({"tag":"a"})"));
  REQUIRE(a.code() == -32006);
  const std::string id = str(a.data()["approval_id"]);
  CHECK(is_approval_id(id));
  CHECK(a.message() == "operation requires approval: ticket " + id +
                           ". An approver must approve it; then call this tool again with the same arguments plus "
                           "\"approval_id\":\"" + id + "\" to run it once.");
  CHECK(str(a.data()["status_url"]) == "/api/v1/approvals/" + id);
  CHECK(a.data()["retry_after_ms"].to_int64() == 30000);
  CHECK(str(a.data()["remediation"]).find("approval_id") != std::string::npos);
  CHECK(is_correlation_id(a.cid()));
  CHECK(g.delete_calls == 0);
  // the ticket binds mcp.<tool>, the submitter, the canonical arguments and origin mcp
  // (docs/approvals.md#the-flow)
  const auto t = g.ticket(id);
  REQUIRE(t.has_value());
  CHECK(t->definition_id == "mcp.delete_tag");
  CHECK(t->submitted_by == "agent-1");
  CHECK(t->scope == R"({"tag":"a"})");
  CHECK(t->origin == "mcp");
  CHECK(t->status == approval_status::pending);
  // one audit row, pending, with the one-cid pattern
  const auto rows = g.rows();
  REQUIRE(rows.size() == 1);
  CHECK(rows[0].action == "mcp.delete_tag");
  CHECK(rows[0].result == audit_result::pending);
  CHECK(rows[0].detail == "approval_id=" + id + " correlation_id=" + a.cid());
  CHECK(rows[0].correlation_id == a.cid());
  CHECK(g.metric(R"(t_mcp_approval_tickets_total{outcome="minted",tool="delete_tag"})") == 1);
  CHECK(g.metric(R"(t_mcp_tool_calls_total{result="approval_required",tool="delete_tag"})") == 1);
}

TEST_CASE("approvals.md/what-the-machine-checks-in-order, approvals.md/guarantees: minting is idempotent per (tool, canonical args, submitter) while pending") {
  gated g;
  connection c{agent()};
  const std::string id = mint(g, c, R"({"tag":"a"})");
  // key order and whitespace do not matter (docs/approvals.md#the-flow); audit says deduped
  const auto again = c.send(g.srv, call_tool(2, "delete_tag", R"( { "tag" : "a" } )"));
  CHECK(again.code() == -32006);
  CHECK(str(again.data()["approval_id"]) == id);
  REQUIRE(g.rows().size() == 2);
  CHECK(g.rows()[1].detail.rfind("approval_id=" + id + " (deduped) correlation_id=", 0) == 0);
  CHECK(g.metric(R"(t_mcp_approval_tickets_total{outcome="deduped",tool="delete_tag"})") == 1);
  // another submitter, or other arguments, mint another ticket
  connection other{agent("agent-2")};
  CHECK(mint(g, other, R"({"tag":"a"})") != id);
  CHECK(mint(g, c, R"({"tag":"b"})") != id);
  CHECK(g.store.inner.size() == 3);
}

TEST_CASE("approvals.md/the-flow: number spelling is part of the arguments: 1 and 1.0 mint different tickets") {
  gated g;
  connection c{agent()};
  const auto one = c.send(g.srv, call_tool(1, "drop", R"({"n":1})"));
  const auto one_point_zero = c.send(g.srv, call_tool(2, "drop", R"({"n":1.0})"));
  REQUIRE(one.code() == -32006);
  REQUIRE(one_point_zero.code() == -32006);
  CHECK(str(one.data()["approval_id"]) != str(one_point_zero.data()["approval_id"]));
}

TEST_CASE("approvals.md/what-the-machine-checks-in-order: a recall of a pending ticket echoes -32006 with the same id and writes no audit row") {
  gated g;
  connection c{agent()};
  const std::string id = mint(g, c);
  const auto a = c.send(g.srv, call_tool(2, "delete_tag", with_id(R"({"tag":"a")", id)));
  CHECK(a.code() == -32006);
  CHECK(str(a.data()["approval_id"]) == id);
  CHECK(a.data()["retry_after_ms"].to_int64() == 30000);
  CHECK(g.rows().size() == 1);  // only the mint's row
  CHECK(g.store.inner.size() == 1);
  CHECK(g.delete_calls == 0);
}

TEST_CASE("approvals.md/what-the-machine-checks-in-order: an approved ticket runs the handler exactly once, a replay is 'approval already used'") {
  gated g;
  connection c{agent()};
  const std::string id = mint(g, c);
  g.approve(id);
  const auto ok = c.send(g.srv, call_tool(2, "delete_tag", with_id(R"({"tag":"a")", id)));
  REQUIRE_MESSAGE(ok.result().exists(), ok.text);
  CHECK(str(at(ok.result()["content"], 0)["text"]) == "deleted a");
  CHECK(g.delete_calls == 1);
  const auto t = g.ticket(id);
  REQUIRE(t.has_value());
  CHECK(t->consumed_at.has_value());
  CHECK(t->consumed_by == "agent-1");
  // audit: pending (mint), approved (consumed), success (the handler)
  const auto rows = g.rows();
  REQUIRE(rows.size() == 3);
  CHECK(rows[1].result == audit_result::approved);
  CHECK(rows[1].detail == "consumed approval_id=" + id);
  CHECK(rows[2].result == audit_result::success);
  CHECK(g.metric(R"(t_mcp_approval_tickets_total{outcome="consumed",tool="delete_tag"})") == 1);

  const auto replay = c.send(g.srv, call_tool(3, "delete_tag", with_id(R"({"tag":"a")", id)));
  CHECK(replay.code() == -32003);
  CHECK(replay.message() == "approval already used (one-time ticket)");
  CHECK(replay.data()["retry_after_ms"].is_null());
  CHECK(g.delete_calls == 1);
  CHECK(g.rows().back().detail.rfind("approval_id=" + id + " refused: not_consumable correlation_id=", 0) == 0);
  CHECK(g.metric(R"(t_mcp_approval_refused_total{tool="delete_tag"})") == 1);
}

TEST_CASE("approvals.md/what-the-machine-checks-in-order: replay, foreign submitter and foreign origin answer identically, only the audit row differs") {
  gated g;
  connection owner{agent()};
  connection thief{agent("agent-2")};

  // replay
  const std::string spent = mint(g, owner, R"({"tag":"spent"})");
  g.approve(spent);
  REQUIRE(owner.send(g.srv, call_tool(2, "delete_tag", with_id(R"({"tag":"spent")", spent))).result().exists());
  const auto replay = owner.send(g.srv, call_tool(3, "delete_tag", with_id(R"({"tag":"spent")", spent)));

  // foreign submitter: another principal with the same tier and arguments
  const std::string owned = mint(g, owner, R"({"tag":"owned"})");
  g.approve(owned);
  const auto foreign_submitter = thief.send(g.srv, call_tool(4, "delete_tag", with_id(R"({"tag":"owned")", owned)));

  // foreign origin: a ticket for the same definition and arguments minted by another surface
  auto rest_id = make_approval_id();
  REQUIRE(rest_id.has_value());
  const approval_mint_request m{*rest_id, "mcp.delete_tag", "rest", "agent-1", R"({"tag":"rest"})",
                                g.service.now(), 7 * 24h, 25, 1000};
  REQUIRE(g.store.inner.mint(m).has_value());
  g.approve(*rest_id);
  const auto foreign_origin = owner.send(g.srv, call_tool(5, "delete_tag", with_id(R"({"tag":"rest")", *rest_id)));

  for (const auto* a : {&replay, &foreign_submitter, &foreign_origin}) {
    CHECK(a->code() == -32003);
    CHECK(a->message() == replay.message());
    CHECK(str(a->data()["remediation"]) == str(replay.data()["remediation"]));
    CHECK(a->data()["retry_after_ms"].is_null());
  }
  const auto rows = g.rows();
  auto detail_for = [&](const answer& a) {
    for (const auto& r : rows) {
      if (r.correlation_id == a.cid()) return r.detail;
    }
    return std::string{"<none>"};
  };
  CHECK(detail_for(replay).find("refused: not_consumable") != std::string::npos);
  CHECK(detail_for(foreign_submitter).find("refused: foreign_submitter") != std::string::npos);
  CHECK(detail_for(foreign_origin).find("refused: foreign_origin") != std::string::npos);
  CHECK(g.delete_calls == 1);
  // the refusals left the owner's ticket intact: the owner still redeems it once
  const auto t = g.ticket(owned);
  REQUIRE(t.has_value());
  CHECK_FALSE(t->consumed_at.has_value());
  CHECK(owner.send(g.srv, call_tool(6, "delete_tag", with_id(R"({"tag":"owned")", owned))).result().exists());
  CHECK(g.delete_calls == 2);
  // the refusal counter has no reason label (anti-oracle through /metrics)
  CHECK(exposition(g.metrics).find("mcp_approval_refused_total{reason") == std::string::npos);
  CHECK(g.metric(R"(t_mcp_approval_refused_total{tool="delete_tag"})") == 3);
}

TEST_CASE("approvals.md/what-the-machine-checks-in-order: another tool, other arguments or an unknown id are the distinct mismatch refusal") {
  gated g;
  connection c{agent()};
  const std::string id = mint(g, c, R"({"tag":"a"})");
  g.approve(id);
  const auto other_args = c.send(g.srv, call_tool(2, "delete_tag", with_id(R"({"tag":"b")", id)));
  CHECK(other_args.code() == -32003);
  CHECK(other_args.message() == "the approval_id does not match this tool and arguments");
  const auto other_tool = c.send(g.srv, call_tool(3, "drop", with_id(R"({"n":1)", id)));
  CHECK(other_tool.message() == "the approval_id does not match this tool and arguments");
  const auto unknown = c.send(g.srv, call_tool(4, "delete_tag", with_id(R"({"tag":"a")", std::string(32, 'e'))));
  CHECK(unknown.message() == "the approval_id does not match this tool and arguments");
  CHECK(g.rows().back().detail.find("refused: mismatch") != std::string::npos);
  // none of them touched the ticket
  const auto t = g.ticket(id);
  REQUIRE(t.has_value());
  CHECK_FALSE(t->consumed_at.has_value());
  CHECK(g.delete_calls == 0);
  CHECK(g.drop_calls == 0);
}

TEST_CASE("design.md/the-toolscall-pipeline, approvals.md/what-the-machine-checks-in-order: an approval_id of the wrong type or shape mints and consumes nothing") {
  gated g;
  connection c{agent()};
  // Argument errors are isError tool results (docs/errors.md#argument-errors).
  auto argument_error = [](const answer& a) {
    return a.result()["isError"].is_bool() ? str(at(a.result()["content"], 0)["text"]) : std::string{"<not one>"};
  };
  SUBCASE("declared as a string: the schema refuses a number") {
    const auto a = c.send(g.srv, call_tool(1, "delete_tag", R"({"tag":"a","approval_id":7})"));
    CHECK(argument_error(a).starts_with("Invalid arguments at /approval_id: expected string, got number\n"));
  }
  SUBCASE("undeclared (open schema): the machine refuses a number") {
    const auto a = c.send(g.srv, call_tool(1, "drop", R"({"n":1,"approval_id":7})"));
    CHECK(argument_error(a).find("/approval_id") != std::string::npos);
    CHECK(g.metric(R"(t_mcp_tool_args_invalid_total{tool="drop"})") == 1);
  }
  SUBCASE("not 32 lowercase hex") {
    for (const std::string& bad : {std::string(31, 'a'), std::string(33, 'a'), std::string(32, 'A'), std::string(32, 'g'),
                                  std::string{}}) {
      const auto a = c.send(g.srv, call_tool(1, "delete_tag", with_id(R"({"tag":"a")", bad)));
      CHECK_MESSAGE(argument_error(a).starts_with("Invalid arguments at /approval_id"), bad);
    }
  }
  CHECK(g.store.inner.size() == 0);
  CHECK(g.delete_calls == 0);
  CHECK(g.drop_calls == 0);
}

TEST_CASE("approvals.md/what-the-machine-checks-in-order, approvals.md/lifetime: rejected and expired tickets are refused with their own messages") {
  approval_options o;
  o.ticket_lifetime = 7 * 24h;
  gated g{o};
  connection c{agent()};
  SUBCASE("rejected") {
    const std::string id = mint(g, c);
    REQUIRE(g.service.reject(id, human("reviewer"), "no").ok());
    const auto a = c.send(g.srv, call_tool(2, "delete_tag", with_id(R"({"tag":"a")", id)));
    CHECK(a.code() == -32003);
    CHECK(a.message() == "approval was rejected");
  }
  SUBCASE("approved, then not redeemed within 7 days of the review: expired at consume (state change)") {
    const std::string id = mint(g, c);
    g.approve(id);
    g.clock.advance(7 * 24h);
    const auto a = c.send(g.srv, call_tool(2, "delete_tag", with_id(R"({"tag":"a")", id)));
    CHECK(a.code() == -32003);
    CHECK(a.message() == "approval expired (past its 7-day lifetime)");
    const auto t = g.ticket(id);
    REQUIRE(t.has_value());  // expiry never deletes
    CHECK(t->status == approval_status::expired);
    CHECK_FALSE(t->consumed_at.has_value());
    CHECK(g.precondition_calls == 0);
  }
  SUBCASE("pending for 7 days: the recall no longer polls, it is expired") {
    const std::string id = mint(g, c);
    g.clock.advance(7 * 24h);
    const auto a = c.send(g.srv, call_tool(2, "delete_tag", with_id(R"({"tag":"a")", id)));
    CHECK(a.message() == "approval expired (past its 7-day lifetime)");
    CHECK(g.ticket(id)->status == approval_status::expired);
  }
  SUBCASE("the mint sweep expires old tickets, so the same arguments mint a fresh one") {
    const std::string id = mint(g, c);
    g.clock.advance(7 * 24h);
    const std::string fresh = mint(g, c);
    CHECK(fresh != id);
    CHECK(g.ticket(id)->status == approval_status::expired);
  }
  CHECK(g.delete_calls == 0);
}

TEST_CASE("approvals.md/lifetime: the lifetime is configurable and the message names it") {
  approval_options o;
  o.ticket_lifetime = 36h;
  gated g{o};
  connection c{agent()};
  const std::string id = mint(g, c);
  g.approve(id);
  g.clock.advance(36h);
  CHECK(c.send(g.srv, call_tool(2, "delete_tag", with_id(R"({"tag":"a")", id))).message() ==
        "approval expired (past its 36-hour lifetime)");
}

TEST_CASE("approvals.md/what-the-machine-checks-in-order: a precondition refusal is generic, leaves the ticket unconsumed, and names its reason only in the audit row") {
  gated g;
  connection c{agent()};
  const std::string id = mint(g, c);
  g.approve(id);
  g.precondition_reason = "rotation already confirmed";
  const auto a = c.send(g.srv, call_tool(2, "delete_tag", with_id(R"({"tag":"a")", id)));
  CHECK(a.code() == -32003);
  CHECK(a.message() == "approval cannot be redeemed right now: a precondition of this operation was not met");
  CHECK(str(a.data()["remediation"]).find("NOT consumed") != std::string::npos);
  CHECK(a.text.find("rotation") == std::string::npos);
  CHECK(g.rows().back().detail.find("refused: precondition: rotation already confirmed") != std::string::npos);
  CHECK(g.metric(R"(t_mcp_approval_precondition_denied_total{tool="delete_tag"})") == 1);
  CHECK(g.delete_calls == 0);
  CHECK_FALSE(g.ticket(id)->consumed_at.has_value());
  // once the condition holds, the same ticket redeems
  g.precondition_reason.reset();
  CHECK(c.send(g.srv, call_tool(3, "delete_tag", with_id(R"({"tag":"a")", id))).result().exists());
  CHECK(g.delete_calls == 1);
  CHECK(g.precondition_calls == 2);
}

TEST_CASE("approvals.md/every-answer-of-the-machine: store faults split into transient (retry 5000, ticket intact) and permanent (no retry)") {
  gated g;
  connection c{agent()};
  const std::string id = mint(g, c);
  g.approve(id);
  SUBCASE("transient read: binding unverified, masked denial counted") {
    g.store.get_error = make_error_code(approval_store_errc::busy);
    const auto a = c.send(g.srv, call_tool(2, "delete_tag", with_id(R"({"tag":"a")", id)));
    CHECK(a.code() == -32603);
    CHECK(a.message() == "approval store temporarily unavailable");
    CHECK(a.data()["retry_after_ms"].to_int64() == 5000);
    CHECK(str(a.data()["remediation"]).find("not consumed") != std::string::npos);
    CHECK(g.rows().back().detail.find("refused: store_error (origin/submitter unverified)") != std::string::npos);
    CHECK(g.rows().back().result == audit_result::failure);
    CHECK(g.metric(R"(t_mcp_approval_masked_denials_total{tool="delete_tag"})") == 1);
    CHECK(g.metric(R"(t_mcp_approval_refused_total{tool="delete_tag"})") == 1);
  }
  SUBCASE("permanent consume failure: no retry, binding was evaluated") {
    g.store.consume_error = make_error_code(approval_store_errc::corrupt);
    const auto a = c.send(g.srv, call_tool(2, "delete_tag", with_id(R"({"tag":"a")", id)));
    CHECK(a.code() == -32603);
    CHECK(a.message() == "approval store unavailable");
    CHECK(a.data()["retry_after_ms"].is_null());
    CHECK(g.metric(R"(t_mcp_approval_masked_denials_total{tool="delete_tag"})") == 0);
  }
  SUBCASE("mint failure: 'failed to create approval request', retry 5000 when transient") {
    g.store.mint_error = make_error_code(approval_store_errc::io_error);
    const auto a = c.send(g.srv, call_tool(2, "delete_tag", R"({"tag":"z"})"));
    CHECK(a.code() == -32603);
    CHECK(a.message() == "failed to create approval request");
    CHECK(a.data()["retry_after_ms"].to_int64() == 5000);
    CHECK_FALSE(a.data()["approval_id"].exists());
    g.store.mint_error = make_error_code(approval_store_errc::read_only);
    CHECK(c.send(g.srv, call_tool(3, "delete_tag", R"({"tag":"z"})")).data()["retry_after_ms"].is_null());
  }
  // the ticket survived every fault: clear them and redeem it once
  CHECK(g.delete_calls == 0);
  g.store.get_error = g.store.consume_error = g.store.mint_error = {};
  CHECK(c.send(g.srv, call_tool(9, "delete_tag", with_id(R"({"tag":"a")", id))).result().exists());
  CHECK(g.delete_calls == 1);
}

TEST_CASE("approvals.md/every-answer-of-the-machine: after a transient fault clears, the same ticket redeems") {
  gated g;
  connection c{agent()};
  const std::string id = mint(g, c);
  g.approve(id);
  g.store.consume_error = make_error_code(approval_store_errc::busy);
  CHECK(c.send(g.srv, call_tool(2, "delete_tag", with_id(R"({"tag":"a")", id))).code() == -32603);
  g.store.consume_error = {};
  CHECK(c.send(g.srv, call_tool(3, "delete_tag", with_id(R"({"tag":"a")", id))).result().exists());
  CHECK(g.delete_calls == 1);
}

TEST_CASE("approvals.md/what-the-machine-checks-in-order: the per-submitter and global pending caps answer -32004 and mint nothing") {
  approval_options o;
  o.max_pending_per_submitter = 2;
  o.max_pending_global = 3;
  gated g{o};
  connection a{agent("a")};
  connection b{agent("b")};
  (void)mint(g, a, R"({"tag":"1"})");
  (void)mint(g, a, R"({"tag":"2"})");
  const auto capped = a.send(g.srv, call_tool(3, "delete_tag", R"({"tag":"3"})"));
  CHECK(capped.code() == -32004);
  CHECK(capped.message() == "too many pending approvals for this principal");
  CHECK(capped.data()["retry_after_ms"].to_int64() == 30000);
  CHECK_FALSE(capped.data()["approval_id"].exists());
  // a dedup hit is not a new ticket, so the cap does not refuse it
  CHECK(a.send(g.srv, call_tool(4, "delete_tag", R"({"tag":"1"})")).code() == -32006);
  (void)mint(g, b, R"({"tag":"1"})");
  const auto full = b.send(g.srv, call_tool(5, "delete_tag", R"({"tag":"2"})"));
  CHECK(full.code() == -32004);
  CHECK(full.message() == "too many pending approvals on this server");
  CHECK(g.store.inner.size() == 3);
  CHECK(g.rows().back().result == audit_result::denied);
}

TEST_CASE("security.md/the-gate-order: a ticket consumed by a call that still fails is counted as burned") {
  gated g;
  connection c{agent()};
  SUBCASE("the handler throws") {
    const std::string id = mint(g, c);
    g.approve(id);
    g.handler_throws = true;
    CHECK(c.send(g.srv, call_tool(2, "delete_tag", with_id(R"({"tag":"a")", id))).code() == -32603);
    CHECK(g.metric(R"(t_mcp_approval_burned_total{reason="handler_reject",tool="delete_tag"})") == 1);
    // burned means spent: the replay is refused
    g.handler_throws = false;
    CHECK(c.send(g.srv, call_tool(3, "delete_tag", with_id(R"({"tag":"a")", id))).code() == -32003);
    CHECK(g.delete_calls == 1);
  }
  SUBCASE("RBAC runs before the approval machine (design.md/the-toolscall-pipeline order): nothing minted or burned") {
    connection no_roles{{.id = "agent-9", .tier = "supervised"}};
    const auto a = no_roles.send(g.srv, call_tool(1, "delete_tag", R"({"tag":"a"})"));
    CHECK(a.code() == -32003);
    CHECK(a.message() == "Permission denied");
    CHECK(g.metric(R"(t_mcp_approval_burned_total{reason="handler_reject",tool="delete_tag"})") == 0);
    CHECK(g.store.inner.size() == 0);
  }
  SUBCASE("a successful call burns nothing") {
    const std::string id = mint(g, c);
    g.approve(id);
    CHECK(c.send(g.srv, call_tool(2, "delete_tag", with_id(R"({"tag":"a")", id))).result().exists());
    CHECK(g.metric(R"(t_mcp_approval_burned_total{reason="handler_reject",tool="delete_tag"})") == 0);
  }
}

TEST_CASE("metrics.md/names-and-registration: approval series are pre-seeded for gated tools only") {
  gated g;
  const auto text = exposition(g.metrics);
  CHECK(text.find(R"(t_mcp_approval_refused_total{tool="delete_tag"} 0)") != std::string::npos);
  CHECK(text.find(R"(t_mcp_approval_masked_denials_total{tool="delete_tag"} 0)") != std::string::npos);
  CHECK(text.find(R"(t_mcp_approval_precondition_denied_total{tool="delete_tag"} 0)") != std::string::npos);
  CHECK(text.find(R"(t_mcp_approval_burned_total{reason="handler_reject",tool="delete_tag"} 0)") != std::string::npos);
  CHECK(text.find(R"(t_mcp_approval_refused_total{tool="approve_request"})") == std::string::npos);
}

TEST_CASE("approvals.md/what-the-machine-checks-in-order: an anonymous caller can neither mint nor redeem") {
  gated g;
  connection c{{.id = "", .tier = "supervised", .roles = {"user"}}};
  const auto a = c.send(g.srv, call_tool(1, "delete_tag", R"({"tag":"a"})"));
  CHECK(a.code() == -32003);
  CHECK(g.store.inner.size() == 0);
}

TEST_CASE("approvals.md/the-approver-tools: approve_request / reject_request are for human, assured principals other than the submitter") {
  gated g;
  connection submitter{agent()};
  const std::string id = mint(g, submitter);
  const std::string args = R"({"approval_id":")" + id + R"("})";
  SUBCASE("a token principal: -32003 approver_assurance_required:non_human_principal, audited, nothing reviewed") {
    connection token{agent("agent-2")};
    const auto a = token.send(g.srv, call_tool(2, "approve_request", args));
    CHECK(a.code() == -32003);
    CHECK(a.message() == "approver_assurance_required:non_human_principal");
    CHECK(a.data()["retry_after_ms"].is_null());
    CHECK(g.rows().back().detail.rfind("approval_id=" + id + " approver_assurance:non_human_principal", 0) == 0);
    CHECK(g.rows().back().result == audit_result::denied);
    CHECK(g.ticket(id)->status == approval_status::pending);
  }
  SUBCASE("an engine, an unassured human") {
    connection engine{{.id = "engine", .tier = "supervised", .kind = principal_kind::engine, .roles = {"approver"}}};
    CHECK(engine.send(g.srv, call_tool(2, "approve_request", args)).message() ==
          "approver_assurance_required:engine_principal");
    connection unassured{{.id = "dave", .tier = "supervised", .kind = principal_kind::human_interactive,
                          .roles = {"approver"}}};
    CHECK(unassured.send(g.srv, call_tool(3, "approve_request", args)).message() ==
          "approver_assurance_required:non_interactive_session");
  }
  SUBCASE("the tier gate runs first: an operator-tier token gets -32004") {
    connection op{{.id = "op", .tier = "operator", .roles = {"approver"}}};
    CHECK(op.send(g.srv, call_tool(2, "approve_request", args)).code() == -32004);
  }
  SUBCASE("RBAC (Approval:Approve) runs before the assurance check") {
    connection human_without_role{{.id = "erin", .tier = "supervised", .kind = principal_kind::human_interactive,
                                   .assured = true}};
    CHECK(human_without_role.send(g.srv, call_tool(2, "approve_request", args)).message() == "Permission denied");
  }
  SUBCASE("a human approver approves; the submitter then redeems once; a second review is 'already reviewed'") {
    connection approver{human()};
    const auto a = approver.send(g.srv, call_tool(2, "approve_request", args));
    REQUIRE_MESSAGE(a.result().exists(), a.text);
    CHECK(str(a.result()["structuredContent"]["status"]) == "approved");
    CHECK(g.ticket(id)->reviewed_by == "carol");
    CHECK(approver.send(g.srv, call_tool(3, "reject_request", args)).message() == "already reviewed by another user");
    CHECK(submitter.send(g.srv, call_tool(4, "delete_tag", with_id(R"({"tag":"a")", id))).result().exists());
    CHECK(g.delete_calls == 1);
  }
  SUBCASE("reviewer equal to submitter is refused") {
    connection self{human("agent-1")};
    CHECK(self.send(g.srv, call_tool(2, "approve_request", args)).message() ==
          "the reviewer must differ from the submitter");
    CHECK(g.ticket(id)->status == approval_status::pending);
  }
  SUBCASE("reject with a comment; the submitter's recall is then 'approval was rejected'") {
    connection approver{human()};
    const std::string reject_args = R"({"approval_id":")" + id + R"(","comment":"not today"})";
    REQUIRE(approver.send(g.srv, call_tool(2, "reject_request", reject_args)).result().exists());
    CHECK(g.ticket(id)->review_comment == "not today");
    CHECK(submitter.send(g.srv, call_tool(3, "delete_tag", with_id(R"({"tag":"a")", id))).message() ==
          "approval was rejected");
  }
  SUBCASE("an unknown id is -32602") {
    connection approver{human()};
    CHECK(approver.send(g.srv, call_tool(2, "approve_request", R"({"approval_id":")" + std::string(32, '0') + R"("})"))
              .code() == -32602);
  }
  CHECK(g.delete_calls <= 1);
}

TEST_CASE("approvals.md/the-approver-tools: the approver tools need an approval service at build") {
  server_builder b{{.name = "x", .version = "1"}};
  b.approval_tools();
  auto r = b.build();
  REQUIRE_FALSE(r.has_value());
  CHECK(r.error().message().find("approver tools need an approval service") != std::string::npos);
}

TEST_CASE("approvals.md/the-approver-tools: an approver tool the tier policy would route through approval refuses the build") {
  struct gating_policy {
    tier_decision decide(std::string_view, std::string_view, operation) const noexcept {
      return tier_decision::allow_with_approval;
    }
  };
  memory_approval_store store;
  approval_service service{store};
  server_builder b{{.name = "x", .version = "1"}};
  b.policy(gating_policy{}).approvals(service).approval_tools();
  auto r = b.build();
  REQUIRE_FALSE(r.has_value());
  CHECK(r.error().message().find("tool 'approve_request': the tier policy routes it through approval") !=
        std::string::npos);
  CHECK(r.error().message().find("tool 'reject_request'") != std::string::npos);
}

TEST_CASE("approvals.md/guarantees: a recall reusing an in-flight request id is refused before it can spend the ticket") {
  gate hold;
  memory_approval_store store;
  approval_service service{store};
  std::atomic<int> deletes{0};
  server_builder b{{.name = "x", .version = "1"}};
  b.tool("slow")
      .description("Blocks.")
      .security("Thing", operation::read)
      .effect(tool_effect::read_only, true)
      .handler([&](call_context& ctx, const arguments&) {
        hold.arrive();
        hold.block(ctx.stop_token());
        return tool_result::text("done");
      });
  b.tool("delete_tag")
      .description("Deletes a tag.")
      .input_schema(std::string{gated_schema})
      .security("Tag", operation::delete_)
      .effect(tool_effect::destructive, true)
      .handler([&](call_context&, const arguments&) {
        ++deletes;
        return tool_result::text("deleted");
      });
  b.approvals(service);
  auto srv = build(b);
  connection c{agent()};
  const auto minted = c.send(srv, call_tool(1, "delete_tag", R"({"tag":"a"})"));
  const std::string id = str(minted.data()["approval_id"]);
  REQUIRE(is_approval_id(id));
  REQUIRE(service.approve(id, human("reviewer")).ok());
  // request 7 is in flight on this connection...
  std::thread slow{[&] { (void)c.send(srv, call_tool(7, "slow")); }};
  REQUIRE(hold.wait_arrived());
  // ...so a recall that reuses id 7 is refused, and the ticket stays unspent
  const auto dup = c.send(srv, call_tool(7, "delete_tag", with_id(R"({"tag":"a")", id)));
  CHECK(dup.code() == -32600);
  auto t = store.get(id);
  REQUIRE(t.has_value());
  REQUIRE(t->has_value());
  CHECK_FALSE((*t)->consumed_at.has_value());
  hold.open();
  slow.join();
  CHECK(c.send(srv, call_tool(8, "delete_tag", with_id(R"({"tag":"a")", id))).result().exists());
  CHECK(deletes == 1);
}

TEST_CASE("security.md/the-gate-order: approval is per decision: a tier the policy does not gate runs without a ticket") {
  gated g;
  connection plain{{.id = "agent-1", .roles = {"user"}}};  // empty tier: RBAC alone decides
  CHECK(plain.send(g.srv, call_tool(1, "delete_tag", R"({"tag":"a"})")).result().exists());
  CHECK(g.delete_calls == 1);
  CHECK(g.store.inner.size() == 0);
}

// ---- across processes (SQLite) -------------------------------------------------------------------

namespace {

// A server over `service` whose delete_tag handler reports each run through `runs` (shared with
// nothing across processes: each child reports through its exit code).
server sqlite_server(approval_service& service, int& runs) {
  server_builder b{{.name = "approvals-sqlite", .version = "1"}};
  b.tool("delete_tag")
      .description("Deletes a tag.")
      .input_schema(std::string{gated_schema})
      .security("Tag", operation::delete_)
      .effect(tool_effect::destructive, true)
      .handler([&runs](call_context&, const arguments&) {
        ++runs;
        return tool_result::text("deleted");
      });
  b.approvals(service);
  return build(b);
}

const principal sqlite_agent{.id = "agent-1", .tier = "supervised"};

}  // namespace

TEST_CASE("approvals.md/guarantees: a ticket minted and approved before a process restart is redeemable once after it") {
  using namespace test_process;
  const temp_dir dir;
  const std::string path = dir.file();
  // The first process mints through tools/call, has a human approve, prints nothing, and dies.
  int pipe_fds[2] = {-1, -1};
  REQUIRE(::pipe(pipe_fds) == 0);
  const pid_t child = spawn([&] {
    ::close(pipe_fds[0]);
    auto store = sqlite_approval_store::open(path);
    if (!store) return 2;
    approval_service service{*store};
    int runs = 0;
    auto srv = sqlite_server(service, runs);
    connection c{sqlite_agent};
    const auto a = c.send(srv, call_tool(1, "delete_tag", R"({"tag":"a"})"));
    const std::string id = str(a.data()["approval_id"]);
    if (a.code() != -32006 || !is_approval_id(id)) return 3;
    const principal reviewer{.id = "carol", .kind = principal_kind::human_interactive, .assured = true};
    if (!service.approve(id, reviewer).ok()) return 4;
    if (::write(pipe_fds[1], id.data(), id.size()) != static_cast<ssize_t>(id.size())) return 5;
    return runs;  // 0: the handler never ran in this process
  });
  ::close(pipe_fds[1]);
  std::string id(approval_id_length, '\0');
  const auto got = ::read(pipe_fds[0], id.data(), id.size());
  ::close(pipe_fds[0]);
  REQUIRE(wait_exit(child) == 0);
  REQUIRE(got == static_cast<ssize_t>(approval_id_length));

  // The restarted process: a new store, service and server over the same file.
  auto store = sqlite_approval_store::open(path);
  REQUIRE(store.has_value());
  approval_service service{*store};
  int runs = 0;
  auto srv = sqlite_server(service, runs);
  connection c{sqlite_agent};
  const std::string recall = call_tool(2, "delete_tag", R"({"tag":"a","approval_id":")" + id + R"("})");
  const auto first = c.send(srv, recall);
  CHECK_MESSAGE(first.result().exists(), first.text);
  const auto second = c.send(srv, recall);
  CHECK(second.message() == "approval already used (one-time ticket)");
  CHECK(runs == 1);
}

TEST_CASE("approvals.md/guarantees: processes racing to recall one approved ticket through their own servers run the handler once") {
  using namespace test_process;
  const temp_dir dir;
  const std::string path = dir.file();
  std::string id;
  {
    auto store = sqlite_approval_store::open(path);
    REQUIRE(store.has_value());
    approval_service service{*store};
    int runs = 0;
    auto srv = sqlite_server(service, runs);
    connection c{sqlite_agent};
    id = str(c.send(srv, call_tool(1, "delete_tag", R"({"tag":"a"})")).data()["approval_id"]);
    REQUIRE(is_approval_id(id));
    const principal reviewer{.id = "carol", .kind = principal_kind::human_interactive, .assured = true};
    REQUIRE(service.approve(id, reviewer).ok());
  }  // closed before forking: SQLite connections must not cross fork()
  constexpr int children = 4;
  start_gate gate;
  std::vector<pid_t> pids;
  for (int i = 0; i < children; ++i) {
    pids.push_back(spawn([&] {
      auto store = sqlite_approval_store::open(path);
      if (!store) return 20;
      approval_service service{*store};
      int runs = 0;
      auto srv = sqlite_server(service, runs);
      connection c{sqlite_agent};
      gate.wait();
      const auto a = c.send(srv, call_tool(2, "delete_tag", R"({"tag":"a","approval_id":")" + id + R"("})"));
      if (a.result().exists()) return runs == 1 ? 0 : 21;                           // won
      if (a.message() == "approval already used (one-time ticket)") return runs == 0 ? 1 : 22;  // lost
      return 23;
    }));
  }
  gate.open();
  int won = 0;
  int lost = 0;
  for (const pid_t pid : pids) {
    const int code = wait_exit(pid);
    won += code == 0 ? 1 : 0;
    lost += code == 1 ? 1 : 0;
    CHECK_MESSAGE((code == 0 || code == 1), "child exit code " << code);
  }
  CHECK(won == 1);
  CHECK(lost == children - 1);
}

}  // TEST_SUITE
