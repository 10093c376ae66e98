// SPDX-License-Identifier: Apache-2.0
// The smallest MCP server built with server_builder: one tool, served on stdin/stdout
// (examples/README.md, step 1; docs/getting-started.md#a-first-stdio-server shows this file).
// ---- snippet stdio_hello (keep identical) ----
#include <mcpcore/dispatch/server.hpp>
#include <mcpcore/dispatch/tool.hpp>
#include <mcpcore/governance/policy.hpp>
#include <mcpcore/transport/stdio.hpp>

#include <cstdio>
#include <string>

int main() {
  mcpcore::server_builder b{{.name = "hello", .version = "1.0.0"}};
  b.tool("greet")
      .description("Says hello to the given name.")
      .input_schema(R"({"type":"object","properties":{"name":{"type":"string"}},"required":["name"]})")
      .security("Greeting", mcpcore::operation::read)
      .effect(mcpcore::tool_effect::read_only, /*idempotent=*/true)
      .handler([](mcpcore::call_context&, const mcpcore::arguments& args) {
        return mcpcore::tool_result::text("Hello, " + std::string{args["name"].as_string()} + "!");
      });
  auto server = b.build();
  if (!server) {
    std::fprintf(stderr, "hello: %s\n", server.error().message().c_str());  // stdout carries only MCP
    return 1;
  }
  mcpcore::stdio_transport transport{*server, {.id = "local-user"}};
  return transport.run();  // until stdin ends
}
// ---- end of snippet stdio_hello
