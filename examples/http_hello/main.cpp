// SPDX-License-Identifier: Apache-2.0
// A one-tool MCP server over Streamable HTTP on 127.0.0.1:8765 (examples/README.md, step 2). The
// README's "Embedding" section and docs/getting-started.md#a-first-http-server show this program;
// CI builds it and examples/http_hello/check_http_hello.sh runs it against a token file.
// ---- snippet http_hello_includes (keep identical) ----
#include <mcpcore/dispatch/server.hpp>
#include <mcpcore/dispatch/tool.hpp>
#include <mcpcore/governance/policy.hpp>
#include <mcpcore/transport/asio_http_server.hpp>
#include <mcpcore/transport/http_endpoint.hpp>
#include <mcpcore/transport/token_authenticator.hpp>

#include <string>
// ---- end of snippet http_hello_includes

// ---- snippet http_hello (keep identical) ----
int main() {
  mcpcore::server_builder b{{.name = "hello", .version = "1.0.0"}};
  b.tool("echo").description("Returns the given text.").security("Echo", mcpcore::operation::read)
      .input_schema(R"({"type":"object","properties":{"text":{"type":"string"}},"required":["text"]})")
      .handler([](mcpcore::call_context&, const mcpcore::arguments& a) {
        return mcpcore::tool_result::text(std::string{a["text"].as_string()});
      });
  auto server = b.build();
  auto tokens = mcpcore::transport::token_authenticator::load("tokens");  // sha256:<digest> <id> <tier> <kind>
  if (!server || !tokens) return 1;
  mcpcore::http_endpoint endpoint{*server, *tokens};
  mcpcore::transport::asio_http_server http{endpoint, {.port = 8765}};  // on 127.0.0.1
  return http.run() ? 0 : 1;
}
// ---- end of snippet http_hello
