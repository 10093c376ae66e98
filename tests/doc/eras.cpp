// SPDX-License-Identifier: Apache-2.0
// docs/eras.md's input-request example, compiled and run in both eras so that the documentation
// cannot rot: the per-request era answers input_required and completes on the retry; the
// handshake era without a session turns the missing input into a tool error.
#include <mcpcore/dispatch/server.hpp>

#include <doctest/doctest.h>

#include "support/server_fixture.hpp"

#include <mcpcore/dispatch/tool.hpp>
#include <mcpcore/governance/policy.hpp>
#include <mcpcore/wire/era.hpp>
#include <mcpcore/wire/json.hpp>
#include <mcpcore/wire/jsonrpc.hpp>

#include <string>
#include <string_view>

namespace eras_doc {

namespace fx = server_fixture;
using namespace mcpcore;

void declare_greet(server_builder& b) {
// ---- docs/eras.md snippet (keep identical) ----
b.tool("greet").description("Greets the user by name").security("Demo", mcpcore::operation::read)
    .effect(mcpcore::tool_effect::read_only, true)
    .handler([](mcpcore::call_context& ctx, const mcpcore::arguments&) {
      const auto answer = ctx.input("name");  // the client's answer from the previous round
      if (!answer["content"]["name"].is_string()) {
        return mcpcore::tool_result::need_input(mcpcore::input_required{}.ask(
            "name", mcpcore::input_request::elicit(
                        "What is your name?",
                        R"({"type":"object","properties":{"name":{"type":"string"}},"required":["name"]})")));
      }
      return mcpcore::tool_result::text("Hello, " + std::string{answer["content"]["name"].as_string()});
    });
// ---- end of snippet
}

server make_server() {
  server_builder b{server_info{"eras-doc", "1.0.0"}};
  declare_greet(b);
  auto s = b.build();
  REQUIRE_MESSAGE(s.has_value(), (s ? std::string{} : s.error().message()));
  return std::move(*s);
}

/// Sends `params` (with the per-request envelope added) as a tools/call of greet.
fx::answer call_per_request(server& s, int id, std::string_view extra_params) {
  std::string params = R"({"name":"greet","arguments":{},)";
  params += extra_params;
  params += R"("_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",)"
            R"("io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}})";
  const std::string text = fx::request(id, "tools/call", params);
  json::document doc;
  auto msg = parse_message(doc, text);
  REQUIRE(msg.has_value());
  auto env = read_envelope(*msg);
  REQUIRE(env.has_value());
  principal p;
  p.id = "alice";
  const dispatch_context ctx{p, nullptr, nullptr, {}, nullptr, &*env, nullptr};
  return fx::handle(s, text, ctx);
}

TEST_CASE("eras.md/input-requests: the documented greet tool asks, then greets, in the per-request era") {
  server s = make_server();
  const fx::answer first = call_per_request(s, 1, {});
  CAPTURE(first.text);
  REQUIRE(fx::str(first.result()["resultType"]) == "input_required");
  CHECK(fx::str(first.result()["inputRequests"]["name"]["method"]) == "elicitation/create");
  const std::string state = fx::str(first.result()["requestState"]);
  REQUIRE(state.starts_with("v1."));

  std::string retry = R"("inputResponses":{"name":{"action":"accept","content":{"name":"Ada"}}},"requestState":")";
  retry += state;
  retry += R"(",)";
  const fx::answer second = call_per_request(s, 2, retry);
  CAPTURE(second.text);
  CHECK(fx::str(second.result()["resultType"]) == "complete");
  CHECK(fx::str(fx::at(second.result()["content"], 0)["text"]) == "Hello, Ada");
}

TEST_CASE("eras.md/input-requests: without a session the documented tool reports the input it could not get") {
  server s = make_server();
  principal p;
  p.id = "alice";
  const fx::answer a = fx::handle(s, fx::call_tool(1, "greet"), dispatch_context{p});
  CAPTURE(a.text);
  CHECK(a.result()["isError"].as_bool());
  CHECK(fx::str(fx::at(a.result()["content"], 0)["text"]).find("name") != std::string::npos);
}

}  // namespace eras_doc
