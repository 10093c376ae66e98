// SPDX-License-Identifier: Apache-2.0
// The README's embedding example: a whole program serving one tool over Streamable HTTP, built by
// CI (tests/CMakeLists.txt) so that the documented code always compiles.
#include <mcpcore/dispatch/server.hpp>
#include <mcpcore/transport/asio_http_server.hpp>
#include <mcpcore/transport/http_endpoint.hpp>
#include <mcpcore/transport/token_authenticator.hpp>

#include <string>

// ---- README embedding snippet (keep identical) ----
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
// ---- end of snippet ----
