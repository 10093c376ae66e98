// SPDX-License-Identifier: Apache-2.0
// docs/concepts/approval_precondition.md's example, compiled and run so that the documentation
// cannot rot.
#include <mcpcore/governance/approval.hpp>

#include <doctest/doctest.h>

#include "support/server_fixture.hpp"

#include <mcpcore/dispatch/server.hpp>
#include <mcpcore/governance/audit.hpp>
#include <mcpcore/governance/policy.hpp>
#include <mcpcore/stores/memory_approval_store.hpp>

#include <functional>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>

namespace approval_precondition_doc {

// ---- docs/concepts/approval_precondition.md snippet (keep identical) ----
// The host's notes; thread-safe, because a precondition may run on several threads at once.
class note_store {
 public:
  void add(std::string id) {
    const std::lock_guard lock{mutex_};
    ids_.insert(std::move(id));
  }
  void erase(std::string_view id) {
    const std::lock_guard lock{mutex_};
    if (const auto it = ids_.find(id); it != ids_.end()) ids_.erase(it);
  }
  bool contains(std::string_view id) const {
    const std::lock_guard lock{mutex_};
    return ids_.find(id) != ids_.end();
  }

 private:
  mutable std::mutex mutex_;
  std::set<std::string, std::less<>> ids_;
};

// What must still hold when an approved deletion is redeemed: the note still exists (someone
// may have deleted it during the review). A reason refuses the recall and leaves the ticket
// unconsumed, so it can be redeemed once the note is back; the reason goes to the audit row only.
struct note_still_exists {
  const note_store* notes;
  std::optional<std::string> operator()(const mcpcore::approval_ticket& /*ticket*/,
                                        const mcpcore::principal& /*caller*/, mcpcore::json::value args) const {
    if (notes->contains(args["id"].as_string())) return std::nullopt;  // the schema made it a string
    return "the note no longer exists";
  }
};
static_assert(mcpcore::approval_precondition_callable<note_still_exists>);

void declare_delete_note(mcpcore::server_builder& b, const note_store& notes) {
  b.tool("delete_note")
      .description("Deletes a note. Needs an approval.")
      .input_schema(R"({"type":"object","properties":{"id":{"type":"string"},)"
                    R"("approval_id":{"type":"string"}},"required":["id"],"additionalProperties":false})")
      .security("Note", mcpcore::operation::delete_)  // supervised: through approval (Yuzu's table)
      .effect(mcpcore::tool_effect::destructive, /*idempotent=*/true)
      .approval_precondition(note_still_exists{&notes})
      .handler([](mcpcore::call_context&, const mcpcore::arguments& args) {
        return mcpcore::tool_result::text("deleted " + std::string{args["id"].as_string()});
      });
}
// ---- end of snippet ----

}  // namespace approval_precondition_doc

TEST_CASE("docs/concepts/approval_precondition.md: a refused precondition leaves the ticket redeemable") {
  using namespace server_fixture;
  approval_precondition_doc::note_store notes;
  notes.add("n1");
  mcpcore::memory_approval_store store;
  mcpcore::approval_service service{store};
  mcpcore::memory_audit_sink audit;
  mcpcore::server_builder b{{.name = "notes", .version = "1.0.0"}};
  approval_precondition_doc::declare_delete_note(b, notes);
  b.approvals(service).audit(audit);
  auto server = build(b);

  connection agent{{.id = "agent-1", .tier = "supervised"}};
  const auto minted = agent.send(server, call_tool(1, "delete_note", R"({"id":"n1"})"));
  REQUIRE(minted.code() == -32006);
  const std::string id = str(minted.data()["approval_id"]);
  const mcpcore::principal carol{.id = "carol", .kind = mcpcore::principal_kind::human_interactive, .assured = true};
  REQUIRE(service.approve(id, carol).ok());

  notes.erase("n1");  // deleted by someone else during the review
  const std::string recall = call_tool(2, "delete_note", R"({"id":"n1","approval_id":")" + id + R"("})");
  const auto refused = agent.send(server, recall);
  CHECK(refused.code() == -32003);
  CHECK(refused.message() == "approval cannot be redeemed right now: a precondition of this operation was not met");
  const auto ticket = service.get(id);
  REQUIRE(ticket.has_value());
  REQUIRE(ticket->has_value());
  CHECK_FALSE((*ticket)->consumed_at.has_value());
  bool audited = false;
  for (const auto& row : audit.entries()) {
    if (row.detail.find("refused: precondition: the note no longer exists") != std::string::npos) audited = true;
  }
  CHECK(audited);

  notes.add("n1");  // the condition holds again: the same ticket redeems, once
  CHECK(str(at(agent.send(server, recall).result()["content"], 0)["text"]) == "deleted n1");
  CHECK(agent.send(server, recall).message() == "approval already used (one-time ticket)");
}
