// SPDX-License-Identifier: Apache-2.0
// The README's embedding snippet, compiled and run so that the documentation cannot rot.
#include <mcpcore/dispatch/server.hpp>

#include <doctest/doctest.h>

#include <mcpcore/wire/jsonrpc.hpp>

#include <stdexcept>
#include <string>
#include <utility>

namespace readme {

// ---- README snippet (keep identical) ----
mcpcore::server make_server() {
  mcpcore::server_builder b{{.name = "host", .version = "1.0.0"}};
  b.tool("echo")
      .description("Returns the given text unchanged.")
      .input_schema(R"({"type":"object","properties":{"text":{"type":"string"}},"required":["text"]})")
      .security("Echo", mcpcore::operation::read)
      .effect(mcpcore::tool_effect::read_only, /*idempotent=*/true)
      .handler([](mcpcore::call_context&, const mcpcore::arguments& args) {
        return mcpcore::tool_result::text(std::string{args["text"].as_string()});
      });
  auto server = b.build();  // a wrong declaration refuses to build, naming every offence
  if (!server) throw std::runtime_error{server.error().message()};
  return std::move(*server);
}
// ---- end of snippet ----

}  // namespace readme

TEST_SUITE("doc") {
  TEST_CASE("the README snippet builds a server that answers tools/call") {
    auto server = readme::make_server();
    mcpcore::json::document doc;
    const auto msg = mcpcore::parse_message(
        doc, R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}})");
    REQUIRE(msg);
    const mcpcore::principal who{.id = "local-user"};
    std::string out;
    CHECK(server.handle(*msg, {.caller = who}, out));
    CHECK(out == R"({"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hi"}]}})");
  }
}
