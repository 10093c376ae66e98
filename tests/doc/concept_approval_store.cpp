// SPDX-License-Identifier: Apache-2.0
// docs/concepts/approval_store.md's example, compiled and run so that the documentation cannot rot.
#include <mcpcore/governance/approval.hpp>

#include <doctest/doctest.h>

#include "support/approval_store_suite.hpp"
#include "support/server_fixture.hpp"

#include <mcpcore/dispatch/server.hpp>
#include <mcpcore/governance/policy.hpp>
#include <mcpcore/stores/memory_approval_store.hpp>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace approval_store_doc {

// ---- docs/concepts/approval_store.md snippet (keep identical) ----
// Wraps another store and, while the host is in a maintenance window, refuses every write with
// the permanent `read_only` fault; reads still work. A failed call changes nothing
// (requirement 3), and the class of the error code alone decides what the client is told:
// a permanent fault answers -32603 with no retry hint, the ticket intact.
template <mcpcore::approval_store Inner>
class maintenance_gate {
 public:
  explicit maintenance_gate(Inner& inner) : inner_(&inner) {}
  void set_maintenance(bool on) noexcept { maintenance_.store(on); }

  mcpcore::result<mcpcore::approval_mint_result> mint(const mcpcore::approval_mint_request& m) {
    if (maintenance_.load()) return refused();
    return inner_->mint(m);
  }
  mcpcore::result<std::optional<mcpcore::approval_ticket>> get(std::string_view id) { return inner_->get(id); }
  mcpcore::result<mcpcore::approval_consume_status> consume(const mcpcore::approval_consume_request& c) {
    if (maintenance_.load()) return refused();
    return inner_->consume(c);
  }
  mcpcore::result<mcpcore::approval_review_status> review(const mcpcore::approval_review_request& r) {
    if (maintenance_.load()) return refused();
    return inner_->review(r);
  }
  mcpcore::result<std::size_t> expire(mcpcore::approval_time now, std::chrono::milliseconds lifetime) {
    if (maintenance_.load()) return refused();
    return inner_->expire(now, lifetime);
  }
  mcpcore::result<std::vector<mcpcore::approval_ticket>> pending(std::size_t limit) {
    return inner_->pending(limit);
  }

 private:
  static std::unexpected<std::error_code> refused() {
    return std::unexpected{make_error_code(mcpcore::approval_store_errc::read_only)};
  }
  Inner* inner_;
  std::atomic<bool> maintenance_{false};
};
static_assert(mcpcore::approval_store<maintenance_gate<mcpcore::memory_approval_store>>);
// ---- end of snippet ----

// The suite's make() wants one owning handle: the inner store first, then the gate over it.
struct memory_holder {
  mcpcore::memory_approval_store inner;
};
struct gated_memory_store : memory_holder, maintenance_gate<mcpcore::memory_approval_store> {
  gated_memory_store() : maintenance_gate(inner) {}
};

}  // namespace approval_store_doc

TEST_CASE("docs/concepts/approval_store.md: the gate passes the store conformance suite when open") {
  mcpcore_test::approval_store_conformance([] { return std::make_unique<approval_store_doc::gated_memory_store>(); });
}

TEST_CASE("docs/concepts/approval_store.md: a permanent fault leaves the ticket intact and unretried") {
  using namespace server_fixture;
  mcpcore::memory_approval_store memory;
  approval_store_doc::maintenance_gate<mcpcore::memory_approval_store> store{memory};
  mcpcore::approval_service service{store};

  mcpcore::server_builder b{{.name = "tags", .version = "1.0.0"}};
  b.tool("delete_tag")
      .description("Deletes a tag.")
      .input_schema(R"({"type":"object","properties":{"tag":{"type":"string"}},"required":["tag"]})")
      .security("Tag", mcpcore::operation::delete_)  // supervised: through approval (Yuzu's table)
      .effect(mcpcore::tool_effect::destructive, true)
      .handler([](mcpcore::call_context&, const mcpcore::arguments&) { return mcpcore::tool_result::text("gone"); });
  b.approvals(service);
  auto server = build(b);

  connection agent{{.id = "agent-1", .tier = "supervised"}};
  const auto minted = agent.send(server, call_tool(1, "delete_tag", R"({"tag":"old"})"));
  REQUIRE(minted.code() == -32006);
  const std::string id = str(minted.data()["approval_id"]);
  const mcpcore::principal carol{.id = "carol", .kind = mcpcore::principal_kind::human_interactive, .assured = true};
  REQUIRE(service.approve(id, carol).ok());

  store.set_maintenance(true);
  const std::string recall = call_tool(2, "delete_tag", R"({"tag":"old","approval_id":")" + id + R"("})");
  const auto refused = agent.send(server, recall);
  CHECK(refused.code() == -32603);
  CHECK(refused.message() == "approval store unavailable");
  CHECK(refused.data()["retry_after_ms"].is_null());
  const auto other = agent.send(server, call_tool(3, "delete_tag", R"({"tag":"new"})"));
  CHECK(other.code() == -32603);
  CHECK(other.message() == "failed to create approval request");

  store.set_maintenance(false);  // the ticket was never touched: it redeems now, once
  CHECK(str(at(agent.send(server, recall).result()["content"], 0)["text"]) == "gone");
  CHECK(agent.send(server, recall).message() == "approval already used (one-time ticket)");
}
