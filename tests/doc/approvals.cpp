// SPDX-License-Identifier: Apache-2.0
// docs/approvals.md's embedding snippet, compiled and run so that the documentation cannot rot.
#include <mcpcore/governance/approval.hpp>

#include <doctest/doctest.h>

#include "support/process.hpp"
#include "support/server_fixture.hpp"

#include <mcpcore/dispatch/server.hpp>
#include <mcpcore/governance/approval_endpoint.hpp>
#include <mcpcore/governance/policy.hpp>
#include <mcpcore/stores/sqlite_approval_store.hpp>
#include <mcpcore/wire/http.hpp>

#include <optional>
#include <stdexcept>
#include <string>
#include <utility>

namespace approvals_doc {

// ---- docs/approvals.md snippet (keep identical) ----
// Keeps the pieces alive in dependency order: the service refers to the store, the endpoint
// and the server refer to the service. Members are destroyed in reverse order.
class approvals_host {
 public:
  explicit approvals_host(const std::string& db_path)
      : store_(open_store(db_path)),
        service_(store_, mcpcore::system_clock_source{}),  // default approval_options
        endpoint_(service_, roles()),
        server_(build_server()) {}

  // Hand MCP messages to this server (stdio_transport, or server().handle(...)).
  mcpcore::server& server() noexcept { return server_; }

  // The host's HTTP server calls this for every request, after authenticating the caller
  // (nullptr: no valid credentials). std::nullopt: not an approval URL, route it elsewhere.
  std::optional<mcpcore::http_response> on_http(const mcpcore::http_request_view& req,
                                                const mcpcore::principal* caller) const {
    return endpoint_.handle(req, caller);
  }

 private:
  static mcpcore::sqlite_approval_store open_store(const std::string& path) {
    auto s = mcpcore::sqlite_approval_store::open(path);  // creates and migrates the schema
    if (!s) throw std::runtime_error{"approval store: " + s.error().message()};
    return std::move(*s);
  }

  // Who may delete tags, and who may review approvals (Approve on "Approval").
  static mcpcore::role_table_authorizer roles() {
    mcpcore::role_table_authorizer r;
    r.grant("tagger", "Tag", mcpcore::operation::delete_)
        .grant("approver", "Approval", mcpcore::operation::approve);
    return r;
  }

  mcpcore::server build_server() {
    mcpcore::server_builder b{{.name = "host", .version = "1.0.0"}};
    b.tool("delete_tag")
        .description("Deletes a tag from every device.")
        // A gated tool with a closed schema must declare approval_id (checked at build).
        .input_schema(R"({"type":"object","properties":{"tag":{"type":"string"},)"
                      R"("approval_id":{"type":"string"}},"required":["tag"],"additionalProperties":false})")
        .security("Tag", mcpcore::operation::delete_)  // the default (Yuzu) tier table gates Tag:Delete
        .effect(mcpcore::tool_effect::destructive, /*idempotent=*/true)
        // Runs on a recall just before the ticket is consumed; a reason refuses, ticket intact.
        .approval_precondition([](const mcpcore::approval_ticket&, const mcpcore::principal&,
                                  mcpcore::json::value args) -> std::optional<std::string> {
          if (args["tag"].as_string() == "production") return "tag is locked during the release freeze";
          return std::nullopt;
        })
        .handler([](mcpcore::call_context&, const mcpcore::arguments& args) {
          return mcpcore::tool_result::text("deleted " + std::string{args["tag"].as_string()});
        });
    b.authorizer(roles())
        .approvals(service_)  // approval-gated tools now mint and redeem tickets
        .approval_tools();    // approve_request and reject_request, for human approvers
    auto s = b.build();
    if (!s) throw std::runtime_error{s.error().message()};
    return std::move(*s);
  }

  mcpcore::sqlite_approval_store store_;
  mcpcore::approval_service service_;
  mcpcore::approval_endpoint endpoint_;
  mcpcore::server server_;
};

// ---- end of snippet ----

}  // namespace approvals_doc

TEST_CASE("docs/approvals.md: the embedding snippet mints, approves over HTTP, and redeems once") {
  using namespace server_fixture;
  const test_process::temp_dir dir;
  approvals_doc::approvals_host host{dir.file()};
  connection agent{{.id = "agent-1", .tier = "supervised", .roles = {"tagger"}}};
  const auto minted = agent.send(host.server(), call_tool(1, "delete_tag", R"({"tag":"old"})"));
  REQUIRE(minted.code() == -32006);
  const std::string id = str(minted.data()["approval_id"]);
  const mcpcore::principal carol{.id = "carol",
                                 .kind = mcpcore::principal_kind::human_interactive,
                                 .roles = {"approver"},
                                 .assured = true};
  const std::string target = str(minted.data()["status_url"]) + "/approve";
  const auto approved = host.on_http({.method = "POST", .target = target, .body = ""}, &carol);
  REQUIRE(approved.has_value());
  CHECK(approved->status == 200);
  const std::string recall = call_tool(2, "delete_tag", R"({"tag":"old","approval_id":")" + id + R"("})");
  CHECK(str(at(agent.send(host.server(), recall).result()["content"], 0)["text"]) == "deleted old");
  CHECK(agent.send(host.server(), recall).message() == "approval already used (one-time ticket)");
  // the precondition: a ticket for "production" stays unspent while the freeze lasts
  const auto frozen = agent.send(host.server(), call_tool(3, "delete_tag", R"({"tag":"production"})"));
  const std::string frozen_id = str(frozen.data()["approval_id"]);
  REQUIRE(host.on_http({.method = "POST", .target = str(frozen.data()["status_url"]) + "/approve", .body = ""}, &carol)
              ->status == 200);
  const auto refused = agent.send(
      host.server(), call_tool(4, "delete_tag", R"({"tag":"production","approval_id":")" + frozen_id + R"("})"));
  CHECK(refused.message() == "approval cannot be redeemed right now: a precondition of this operation was not met");
}
