// SPDX-License-Identifier: Apache-2.0
// docs/concepts/authorizer.md's example, compiled and run so that the documentation cannot rot.
#include <mcpcore/governance/policy.hpp>

#include <doctest/doctest.h>

#include "support/server_fixture.hpp"

#include <mcpcore/dispatch/server.hpp>

#include <algorithm>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace authorizer_doc {

// ---- docs/concepts/authorizer.md snippet (keep identical) ----
// Per-principal grants that an administrator changes while the server runs. The server keeps
// its own copy of the authorizer, so the table lives behind a shared_ptr: a grant or a revoke
// through any copy is seen by every copy. Calls take a shared lock (requirement 1); an unknown
// principal or securable holds no grant, so it is refused (requirement 3).
class live_grants {
 public:
  void grant(std::string principal_id, std::string securable, mcpcore::operation op) {
    const std::unique_lock lock{table_->mutex};
    table_->grants.push_back({std::move(principal_id), std::move(securable), op});
  }
  void revoke_all(std::string_view principal_id) {
    const std::unique_lock lock{table_->mutex};
    std::erase_if(table_->grants, [&](const entry& e) { return e.principal_id == principal_id; });
  }
  bool allowed(const mcpcore::principal& who, std::string_view securable, mcpcore::operation op) const {
    if (who.id.empty()) return false;
    const std::shared_lock lock{table_->mutex};
    return std::any_of(table_->grants.begin(), table_->grants.end(), [&](const entry& e) {
      return e.principal_id == who.id && e.securable == securable && e.op == op;
    });
  }

 private:
  struct entry {
    std::string principal_id;
    std::string securable;
    mcpcore::operation op;
  };
  struct table {
    mutable std::shared_mutex mutex;
    std::vector<entry> grants;
  };
  std::shared_ptr<table> table_ = std::make_shared<table>();
};
static_assert(mcpcore::authorizer<live_grants>);

mcpcore::server make_server(const live_grants& grants) {
  mcpcore::server_builder b{{.name = "notes", .version = "1.0.0"}};
  b.tool("read_note")
      .description("Returns a note.")
      .input_schema(R"({"type":"object","properties":{"id":{"type":"string"}},"required":["id"]})")
      .security("Note", mcpcore::operation::read)
      .effect(mcpcore::tool_effect::read_only, /*idempotent=*/true)
      .handler([](mcpcore::call_context&, const mcpcore::arguments& args) {
        return mcpcore::tool_result::text("note " + std::string{args["id"].as_string()});
      });
  b.authorizer(grants);  // a copy that shares the table
  auto s = b.build();
  if (!s) throw std::runtime_error{s.error().message()};
  return std::move(*s);
}
// ---- end of snippet ----

}  // namespace authorizer_doc

TEST_CASE("docs/concepts/authorizer.md: grants changed at run time reach the server's copy") {
  using namespace server_fixture;
  authorizer_doc::live_grants grants;
  grants.grant("alice", "Note", mcpcore::operation::read);
  auto server = authorizer_doc::make_server(grants);

  connection alice{{.id = "alice"}};
  connection bob{{.id = "bob"}};
  const std::string call = call_tool(1, "read_note", R"({"id":"n1"})");
  CHECK(str(at(alice.send(server, call).result()["content"], 0)["text"]) == "note n1");
  const auto denied = bob.send(server, call);
  CHECK(denied.code() == -32003);
  CHECK(denied.message() == "Permission denied");

  grants.revoke_all("alice");  // through the host's copy
  CHECK(alice.send(server, call).code() == -32003);
  grants.grant("bob", "Note", mcpcore::operation::read);
  CHECK(bob.send(server, call).error().exists() == false);

  // A grant never implies another operation, and the empty id holds nothing.
  CHECK_FALSE(grants.allowed({.id = "bob"}, "Note", mcpcore::operation::write));
  CHECK_FALSE(grants.allowed({.id = ""}, "Note", mcpcore::operation::read));
}
