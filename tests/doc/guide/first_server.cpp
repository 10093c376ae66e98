// SPDX-License-Identifier: Apache-2.0
// docs/getting-started.md#your-own-transport: handing one message to server::handle, compiled and
// run so that the page cannot rot.
#include <mcpcore/dispatch/server.hpp>

#include <doctest/doctest.h>

#include <mcpcore/dispatch/tool.hpp>
#include <mcpcore/governance/policy.hpp>
#include <mcpcore/wire/correlation_id.hpp>
#include <mcpcore/wire/json.hpp>
#include <mcpcore/wire/jsonrpc.hpp>

#include <string>
#include <string_view>

namespace getting_started {

// ---- snippet handle_message (keep identical) ----
// One message in, its answer out: what every transport does around server::handle.
std::string answer(mcpcore::server& server, std::string_view line) {
  mcpcore::json::document doc;  // owns the parsed message: keep it alive while the message is used
  const auto msg = mcpcore::parse_message(doc, line);
  std::string out;
  if (!msg) {
    // Malformed: the JSON-RPC error the wire layer chose, with a fresh correlation id.
    mcpcore::write_error_response(out, msg.error(), mcpcore::next_correlation_id().view());
    return out;
  }
  const mcpcore::principal caller{.id = "local-user"};  // who is calling, as your transport authenticated it
  server.handle(*msg, {.caller = caller}, out);  // writes nothing for notifications
  return out;
}
// ---- end of snippet handle_message

}  // namespace getting_started

TEST_SUITE("doc") {
  TEST_CASE("getting-started.md: one message handed to server::handle is answered") {
    mcpcore::server_builder b{{.name = "hello", .version = "1.0.0"}};
    b.tool("greet")
        .description("Says hello.")
        .security("Greeting", mcpcore::operation::read)
        .effect(mcpcore::tool_effect::read_only, true)
        .handler([](mcpcore::call_context&, const mcpcore::arguments&) { return mcpcore::tool_result::text("Hello!"); });
    auto server = b.build();
    REQUIRE_MESSAGE(server.has_value(), (server ? std::string{} : server.error().message()));
    CHECK(getting_started::answer(*server, R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"greet"}})") ==
          R"({"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"Hello!"}]}})");
    CHECK(getting_started::answer(*server, R"({"jsonrpc":"2.0","method":"notifications/initialized"})").empty());
    CHECK(getting_started::answer(*server, "{not json").find("-32700") != std::string::npos);
  }
}
