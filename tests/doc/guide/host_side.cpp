// SPDX-License-Identifier: Apache-2.0
// docs/guide.md#the-caller and #tables-that-change: a handler reading the host's own context of
// the request, and tools added and removed while the server runs, compiled and run through
// server::handle.
#include <mcpcore/dispatch/server.hpp>

#include <doctest/doctest.h>

#include "support/server_fixture.hpp"

#include <mcpcore/dispatch/tool.hpp>
#include <mcpcore/governance/policy.hpp>

#include <memory>
#include <stdexcept>
#include <string>
#include <utility>

namespace guide_host {

namespace fx = server_fixture;

// ---- snippet guide_caller (keep identical) ----
// The host's own facts about a request, handed in with the principal it authenticated.
struct tenant_context final : mcpcore::host_context {
  explicit tenant_context(std::string t) : tenant(std::move(t)) {}
  std::string tenant;
};

void declare_whoami(mcpcore::server_builder& b) {
  b.tool("whoami")
      .description("Says who is calling, and for which tenant.")
      .security("Identity", mcpcore::operation::read)
      .effect(mcpcore::tool_effect::read_only, true)
      .handler([](mcpcore::call_context& ctx, const mcpcore::arguments&) {
        const mcpcore::principal& who = ctx.caller();
        const auto* tenant = dynamic_cast<const tenant_context*>(who.context.get());  // null: none handed in
        return mcpcore::tool_result::text(who.id + (tenant ? " of " + tenant->tenant : std::string{}));
      });
}
// ---- end of snippet guide_caller

// ---- snippet guide_tables (keep identical) ----
// Built with `server_options::list_changed = true`, the server tells its clients when a table changes.
void add_plugin_tool(mcpcore::server& server) {
  auto added = server.add_tool("plugin_hello", [](mcpcore::tool_builder& t) {
    t.description("A tool a plug-in added while the server runs.")
        .security("Plugin", mcpcore::operation::read)
        .effect(mcpcore::tool_effect::read_only, true)
        .handler([](mcpcore::call_context&, const mcpcore::arguments&) {
          return mcpcore::tool_result::text("hello from the plug-in");
        });
  });  // validated as at build; clients get notifications/tools/list_changed
  if (!added) throw std::runtime_error{added.error().message()};
}

void on_config_changed(mcpcore::server& server) {
  server.remove_tool("plugin_hello");                     // a call running it finishes normally
  server.notify_resource_updated("config://current");    // to the clients subscribed to it
}
// ---- end of snippet guide_tables

mcpcore::server make_server() {
  mcpcore::server_builder b{{.name = "guide-host", .version = "1.0.0"}, {.list_changed = true}};
  declare_whoami(b);
  auto s = b.build();
  REQUIRE_MESSAGE(s.has_value(), (s ? std::string{} : s.error().message()));
  return std::move(*s);
}

TEST_CASE("guide.md#the-caller: the documented handler reads the context the host handed in") {
  auto s = make_server();
  mcpcore::principal who{.id = "alice"};
  auto plain = fx::handle(s, fx::call_tool(1, "whoami"), mcpcore::dispatch_context{who});
  CHECK(fx::str(fx::at(plain.result()["content"], 0)["text"]) == "alice");
  who.context = std::make_shared<const tenant_context>("acme");
  auto with_context = fx::handle(s, fx::call_tool(2, "whoami"), mcpcore::dispatch_context{who});
  CAPTURE(with_context.text);
  CHECK(fx::str(fx::at(with_context.result()["content"], 0)["text"]) == "alice of acme");
}

TEST_CASE("guide.md#tables-that-change: the documented plug-in tool is added, called, then removed") {
  auto s = make_server();
  const mcpcore::principal who{.id = "alice"};
  add_plugin_tool(s);
  auto called = fx::handle(s, fx::call_tool(1, "plugin_hello"), mcpcore::dispatch_context{who});
  CAPTURE(called.text);
  CHECK(fx::str(fx::at(called.result()["content"], 0)["text"]) == "hello from the plug-in");
  on_config_changed(s);
  auto gone = fx::handle(s, fx::call_tool(2, "plugin_hello"), mcpcore::dispatch_context{who});
  CAPTURE(gone.text);
  CHECK(gone.code() == -32602);  // an unknown tool
}

}  // namespace guide_host
