// SPDX-License-Identifier: Apache-2.0
// docs/guide.md's tool snippets (#tools, #tool-results, #schemas), compiled and run: every
// documented declaration is built into a server and called through server::handle.
#include <mcpcore/dispatch/server.hpp>

#include <doctest/doctest.h>

#include "support/server_fixture.hpp"

#include <mcpcore/dispatch/tool.hpp>
#include <mcpcore/governance/policy.hpp>
#include <mcpcore/wire/json_writer.hpp>

#include <cmath>
#include <string>
#include <utility>

namespace guide_tools {

namespace fx = server_fixture;

void declare(mcpcore::server_builder& b) {
// ---- snippet guide_tool (keep identical) ----
b.tool("add")
    .title("Add two numbers")
    .description("Returns a + b.")
    .input_schema(R"({"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},)"
                  R"("required":["a","b"],"additionalProperties":false})")
    .security("Calculator", mcpcore::operation::read)           // what the tier gate and RBAC see
    .effect(mcpcore::tool_effect::read_only, /*idempotent=*/true)  // the annotations
    .handler([](mcpcore::call_context&, const mcpcore::arguments& args) {
      // The input schema was checked before the handler runs: both numbers are there.
      return mcpcore::tool_result::text(std::to_string(*args["a"].to_double() + *args["b"].to_double()));
    });
// ---- end of snippet guide_tool

// ---- snippet guide_results (keep identical) ----
b.tool("lookup")
    .description("Looks a word up; shows each form of result.")
    .input_schema(R"({"type":"object","properties":{"word":{"type":"string"}},"required":["word"]})")
    .security("Dictionary", mcpcore::operation::read)
    .effect(mcpcore::tool_effect::read_only, true)
    .handler([](mcpcore::call_context&, const mcpcore::arguments& args) {
      const std::string word{args["word"].as_string()};
      if (word.empty()) {
        return mcpcore::tool_result::error("the word is empty");  // isError: the model sees it
      }
      if (word == "logo") {  // several content blocks: text and an image (base64 from the host)
        return mcpcore::tool_result::text("the logo:").add(
            mcpcore::content_block::image("iVBORw0KGgo=", "image/png"));
      }
      if (word == "link") {
        return mcpcore::tool_result{}.add(
            mcpcore::content_block::resource_link("dict://words/link", "link", "text/plain"));
      }
      // Structured content, written with the JSON writer (escaping done for you); with no
      // content added, a text twin carrying the same JSON is sent too.
      return mcpcore::tool_result::structured_with([&](mcpcore::json::writer& w) {
        w.begin_object().member("word", word).member("length", word.size()).end_object();
      });
    });
// ---- end of snippet guide_results

// ---- snippet guide_output_schema (keep identical) ----
b.tool("sqrt")
    .description("The square root of x.")
    .input_schema(R"({"type":"object","properties":{"x":{"type":"number","minimum":0}},)"
                  R"("required":["x"],"additionalProperties":false})")
    .output_schema(R"({"type":"object","properties":{"root":{"type":"number"}},)"
                   R"("required":["root"],"additionalProperties":false})")
    .security("Calculator", mcpcore::operation::read)
    .effect(mcpcore::tool_effect::read_only, true)
    .handler([](mcpcore::call_context&, const mcpcore::arguments& args) {
      // Every result that is not isError must carry structuredContent valid under the output
      // schema, else the call answers -32603 instead of sending it.
      return mcpcore::tool_result::structured(
          R"({"root":)" + std::to_string(std::sqrt(*args["x"].to_double())) + "}");
    });
// ---- end of snippet guide_output_schema
}

mcpcore::server make_server() {
  mcpcore::server_builder b{{.name = "guide-tools", .version = "1.0.0"}};
  declare(b);
  auto s = b.build();
  REQUIRE_MESSAGE(s.has_value(), (s ? std::string{} : s.error().message()));
  return std::move(*s);
}

fx::answer call(mcpcore::server& s, std::string_view name, std::string_view args) {
  const mcpcore::principal who{.id = "guide-user"};
  return fx::handle(s, fx::call_tool(1, name, args), mcpcore::dispatch_context{who});
}

TEST_CASE("guide.md#tools: the documented tool adds, and its input schema refuses a missing number") {
  auto s = make_server();
  auto a = call(s, "add", R"({"a":2,"b":0.5})");
  CAPTURE(a.text);
  CHECK(fx::str(fx::at(a.result()["content"], 0)["text"]) == "2.500000");
  auto bad = call(s, "add", R"({"a":2})");
  CAPTURE(bad.text);
  CHECK(bad.result()["isError"].as_bool());  // argument errors are tool results by default
}

TEST_CASE("guide.md#tool-results: each documented form of result is sent as documented") {
  auto s = make_server();
  auto err = call(s, "lookup", R"({"word":""})");
  CAPTURE(err.text);
  CHECK(err.result()["isError"].as_bool());
  CHECK(fx::str(fx::at(err.result()["content"], 0)["text"]) == "the word is empty");

  auto logo = call(s, "lookup", R"({"word":"logo"})");
  CAPTURE(logo.text);
  CHECK(fx::str(fx::at(logo.result()["content"], 1)["type"]) == "image");
  CHECK(fx::str(fx::at(logo.result()["content"], 1)["mimeType"]) == "image/png");

  auto link = call(s, "lookup", R"({"word":"link"})");
  CAPTURE(link.text);
  CHECK(fx::str(fx::at(link.result()["content"], 0)["type"]) == "resource_link");
  CHECK(fx::str(fx::at(link.result()["content"], 0)["uri"]) == "dict://words/link");

  auto structured = call(s, "lookup", R"({"word":"mcp"})");
  CAPTURE(structured.text);
  CHECK(structured.result()["structuredContent"]["length"].to_int64() == 3);
  CHECK(fx::str(fx::at(structured.result()["content"], 0)["text"]) == R"({"word":"mcp","length":3})");
}

TEST_CASE("guide.md#schemas: the documented output schema is served and its result validates") {
  auto s = make_server();
  auto r = call(s, "sqrt", R"({"x":9})");
  CAPTURE(r.text);
  CHECK(r.result()["structuredContent"]["root"].to_double() == doctest::Approx(3.0));
  auto negative = call(s, "sqrt", R"({"x":-1})");
  CAPTURE(negative.text);
  CHECK(negative.result()["isError"].as_bool());  // minimum 0: refused before the handler
  const mcpcore::principal who{.id = "guide-user"};
  auto list = fx::handle(s, fx::request(2, "tools/list"), mcpcore::dispatch_context{who});
  CAPTURE(list.text);
  CHECK(list.text.find(R"("outputSchema":{"type":"object","properties":{"root")") != std::string::npos);
}

}  // namespace guide_tools
