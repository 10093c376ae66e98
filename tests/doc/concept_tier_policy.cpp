// SPDX-License-Identifier: Apache-2.0
// docs/concepts/tier_policy.md's example, compiled and run so that the documentation cannot rot.
#include <mcpcore/governance/policy.hpp>

#include <doctest/doctest.h>

#include "support/server_fixture.hpp"

#include <mcpcore/dispatch/server.hpp>

#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

namespace tier_policy_doc {

// ---- docs/concepts/tier_policy.md snippet (keep identical) ----
// A host with two tiers of its own: "viewer" may only read, "admin" may do everything, and
// every Delete an admin asks for goes through approval. Any other tier, "" included, is
// refused (requirement 3: fail closed).
struct two_tier_policy {
  mcpcore::tier_decision decide(std::string_view tier, std::string_view /*securable*/,
                                mcpcore::operation op) const noexcept {
    if (tier == "viewer") {
      return op == mcpcore::operation::read ? mcpcore::tier_decision::allow : mcpcore::tier_decision::deny;
    }
    if (tier == "admin") {
      return op == mcpcore::operation::delete_ ? mcpcore::tier_decision::allow_with_approval
                                               : mcpcore::tier_decision::allow;
    }
    return mcpcore::tier_decision::deny;
  }
};
static_assert(mcpcore::tier_policy<two_tier_policy>);

mcpcore::server make_notes_server() {
  mcpcore::server_options options;
  options.policy_tiers = {"viewer", "admin"};  // the tiers build() asks the policy about
  mcpcore::server_builder b{{.name = "notes", .version = "1.0.0"}, options};
  b.tool("read_note")
      .description("Returns a note.")
      .input_schema(R"({"type":"object","properties":{"id":{"type":"string"}},"required":["id"]})")
      .security("Note", mcpcore::operation::read)
      .effect(mcpcore::tool_effect::read_only, /*idempotent=*/true)
      .handler([](mcpcore::call_context&, const mcpcore::arguments& args) {
        return mcpcore::tool_result::text("note " + std::string{args["id"].as_string()});
      });
  b.tool("delete_note")
      .description("Deletes a note.")
      // gated for "admin": a closed schema must declare approval_id (checked at build)
      .input_schema(R"({"type":"object","properties":{"id":{"type":"string"},)"
                    R"("approval_id":{"type":"string"}},"required":["id"],"additionalProperties":false})")
      .security("Note", mcpcore::operation::delete_)
      .effect(mcpcore::tool_effect::destructive, /*idempotent=*/true)
      .handler([](mcpcore::call_context&, const mcpcore::arguments&) {
        return mcpcore::tool_result::text("deleted");
      });
  b.policy(two_tier_policy{});
  auto s = b.build();
  if (!s) throw std::runtime_error{s.error().message()};
  return std::move(*s);
}
// ---- end of snippet ----

}  // namespace tier_policy_doc

TEST_CASE("docs/concepts/tier_policy.md: a host's own tiers decide the tier gate") {
  using namespace server_fixture;
  using tier_policy_doc::two_tier_policy;
  const two_tier_policy p;
  CHECK(p.decide("viewer", "Note", mcpcore::operation::read) == mcpcore::tier_decision::allow);
  CHECK(p.decide("viewer", "Note", mcpcore::operation::write) == mcpcore::tier_decision::deny);
  CHECK(p.decide("admin", "Note", mcpcore::operation::delete_) == mcpcore::tier_decision::allow_with_approval);
  CHECK(p.decide("", "Note", mcpcore::operation::read) == mcpcore::tier_decision::deny);
  CHECK(p.decide("Admin", "Note", mcpcore::operation::read) == mcpcore::tier_decision::deny);

  auto server = tier_policy_doc::make_notes_server();
  connection viewer{{.id = "vera", .tier = "viewer"}};
  CHECK(str(at(viewer.send(server, call_tool(1, "read_note", R"({"id":"n1"})")).result()["content"], 0)["text"]) ==
        "note n1");
  const auto refused = viewer.send(server, call_tool(2, "delete_note", R"({"id":"n1"})"));
  CHECK(refused.code() == -32004);
  CHECK(refused.message() == "MCP tier does not allow this operation");

  // The admin's Delete goes through approval; without an approval service that is the degraded
  // -32004 of docs/approvals.md#every-answer-of-the-machine, with no ticket.
  connection admin{{.id = "ada", .tier = "admin"}};
  const auto gated = admin.send(server, call_tool(3, "delete_note", R"({"id":"n1"})"));
  CHECK(gated.code() == -32004);
  CHECK(gated.message() == "This operation requires approval, but no approval store is configured");
  CHECK_FALSE(gated.data()["approval_id"].exists());

  connection stranger{{.id = "sam", .tier = ""}};
  CHECK(stranger.send(server, call_tool(4, "read_note", R"({"id":"n1"})")).code() == -32004);
}

TEST_CASE("docs/concepts/tier_policy.md: policy_tiers decides which tools registration treats as gated") {
  // With Yuzu's default policy_tiers the two_tier_policy is never asked about "admin", so the
  // build does not see delete_note as gated; with the host's tiers it does, and a closed schema
  // without approval_id is refused.
  mcpcore::server_options options;
  options.policy_tiers = {"viewer", "admin"};
  mcpcore::server_builder b{{.name = "notes", .version = "1.0.0"}, options};
  b.tool("delete_note")
      .description("Deletes a note.")
      .input_schema(R"({"type":"object","properties":{"id":{"type":"string"}},"additionalProperties":false})")
      .security("Note", mcpcore::operation::delete_)
      .effect(mcpcore::tool_effect::destructive, true)
      .handler([](mcpcore::call_context&, const mcpcore::arguments&) { return mcpcore::tool_result::text("x"); });
  b.policy(tier_policy_doc::two_tier_policy{});
  auto s = b.build();
  REQUIRE_FALSE(s.has_value());
  CHECK(s.error().message().find("approval_id") != std::string::npos);
}
