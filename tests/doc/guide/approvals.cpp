// SPDX-License-Identifier: Apache-2.0
// docs/guide.md#approvals: an approval-gated tool from the tool author's side, compiled and run
// through the whole ticket-then-recall round (docs/approvals.md has the machine's rules).
#include <mcpcore/dispatch/server.hpp>

#include <doctest/doctest.h>

#include "support/server_fixture.hpp"

#include <mcpcore/dispatch/tool.hpp>
#include <mcpcore/governance/approval.hpp>
#include <mcpcore/governance/policy.hpp>
#include <mcpcore/stores/memory_approval_store.hpp>

#include <stdexcept>
#include <string>
#include <utility>

namespace guide_approvals {

namespace fx = server_fixture;

// ---- snippet guide_approvals (keep identical) ----
struct gated_server {
  mcpcore::memory_approval_store store;              // tickets in memory (sqlite_approval_store persists them)
  mcpcore::approval_service approvals{store};        // the ticket machine, shared with the approvers' side
  mcpcore::server server = build(approvals);

  static mcpcore::server build(mcpcore::approval_service& approvals) {
    mcpcore::server_builder b{{.name = "gated", .version = "1.0.0"}};
    b.tool("delete_user")
        .description("Deletes a user account.")
        // A gated tool with a closed schema declares approval_id: the recall carries it.
        .input_schema(R"({"type":"object","properties":{"user":{"type":"string"},)"
                      R"("approval_id":{"type":"string"}},"required":["user"],"additionalProperties":false})")
        .security("User", mcpcore::operation::delete_)  // the default tier table gates Delete for "supervised"
        .effect(mcpcore::tool_effect::destructive, /*idempotent=*/true)
        .handler([](mcpcore::call_context&, const mcpcore::arguments& args) {
          // Runs only once a person approved this exact call: the handler needs no approval code.
          return mcpcore::tool_result::text("deleted " + std::string{args["user"].as_string()});
        });
    b.approvals(approvals);
    auto s = b.build();
    if (!s) throw std::runtime_error{s.error().message()};
    return std::move(*s);
  }
};
// ---- end of snippet guide_approvals

TEST_CASE("guide.md#approvals: the documented gated tool runs once, after a person approved the call") {
  gated_server g;
  const mcpcore::principal agent{.id = "agent-7", .tier = "supervised"};
  auto first = fx::handle(g.server, fx::call_tool(1, "delete_user", R"({"user":"bob"})"), mcpcore::dispatch_context{agent});
  CAPTURE(first.text);
  REQUIRE(first.code() == -32006);  // approval required, with a ticket
  const std::string id = fx::str(first.data()["approval_id"]);

  const mcpcore::principal alice{.id = "alice", .tier = "operator", .kind = mcpcore::principal_kind::human_interactive,
                                 .assured = true};
  CHECK(g.approvals.approve(id, alice).status == mcpcore::approval_review_status::reviewed);

  const std::string recall = R"({"user":"bob","approval_id":")" + id + R"("})";
  auto second = fx::handle(g.server, fx::call_tool(2, "delete_user", recall), mcpcore::dispatch_context{agent});
  CAPTURE(second.text);
  CHECK(fx::str(fx::at(second.result()["content"], 0)["text"]) == "deleted bob");
  auto third = fx::handle(g.server, fx::call_tool(3, "delete_user", recall), mcpcore::dispatch_context{agent});
  CHECK(third.code() != 0);  // a ticket runs the call once
}

}  // namespace guide_approvals
