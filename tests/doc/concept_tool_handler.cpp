// SPDX-License-Identifier: Apache-2.0
// docs/concepts/tool_handler.md's example, compiled and run so that the documentation cannot rot.
#include <mcpcore/dispatch/server.hpp>

#include <doctest/doctest.h>

#include "support/server_fixture.hpp"

#include <mcpcore/dispatch/tool.hpp>
#include <mcpcore/governance/policy.hpp>
#include <mcpcore/wire/json_writer.hpp>

#include <cstdint>
#include <string>
#include <string_view>

namespace tool_handler_doc {

// ---- docs/concepts/tool_handler.md snippet (keep identical) ----
// A plain function is a handler. The schema was checked before it runs, so `text` is a string.
mcpcore::tool_result word_count(mcpcore::call_context&, const mcpcore::arguments& args) {
  const std::string_view text = args["text"].as_string();
  std::int64_t words = 0;
  bool in_word = false;
  for (const char c : text) {
    const bool blank = c == ' ' || c == '\t' || c == '\n';
    if (!blank && !in_word) ++words;
    in_word = !blank;
  }
  return mcpcore::tool_result::structured_with(
      [&](mcpcore::json::writer& w) { w.begin_object().member("words", words).end_object(); });
}

// One declaration per tool: name, description, schemas, security row, effect, handler.
void declare_tools(mcpcore::server_builder& b) {
  b.tool("word_count")
      .title("Word count")
      .description("Counts the words of a text.")
      .input_schema(R"({"type":"object","properties":{"text":{"type":"string","maxLength":65536}},)"
                    R"("required":["text"],"additionalProperties":false})")
      .output_schema(R"({"type":"object","properties":{"words":{"type":"integer"}},"required":["words"]})")
      .security("Text", mcpcore::operation::read)
      .effect(mcpcore::tool_effect::read_only, /*idempotent=*/true)
      .handler(word_count);
  b.tool("countdown")
      .description("Counts down from n, reporting progress; stops early when cancelled.")
      .input_schema(R"({"type":"object","properties":{"n":{"type":"integer","minimum":1,"maximum":100}},)"
                    R"("required":["n"],"additionalProperties":false})")
      .security("Text", mcpcore::operation::read)
      .effect(mcpcore::tool_effect::read_only, /*idempotent=*/true)
      .handler([](mcpcore::call_context& ctx, const mcpcore::arguments& args) {
        const std::int64_t n = args["n"].to_int64().value_or(1);
        for (std::int64_t i = 1; i <= n; ++i) {
          if (ctx.stop_requested()) return mcpcore::tool_result::error("cancelled");  // never sent
          (void)ctx.progress(static_cast<double>(i), static_cast<double>(n));  // sent only for a progressToken
        }
        (void)ctx.log(mcpcore::log_level::info, "countdown finished");
        return mcpcore::tool_result::text("liftoff");
      });
}
// ---- end of snippet ----

}  // namespace tool_handler_doc

TEST_CASE("docs/concepts/tool_handler.md: the declared tools list, validate and answer") {
  using namespace server_fixture;
  mcpcore::server_builder b{{.name = "text", .version = "1.0.0"}};
  tool_handler_doc::declare_tools(b);
  auto server = build(b);
  CHECK(server.warnings().empty());  // every tool is classified
  connection c;

  const auto listed = c.send(server, request(1, "tools/list"));
  const auto tools = listed.result()["tools"];
  REQUIRE(tools.size() == 2);
  CHECK(str(at(tools, 0)["name"]) == "word_count");
  CHECK(at(tools, 0)["annotations"]["readOnlyHint"].as_bool());

  const auto counted = c.send(server, call_tool(2, "word_count", R"({"text":"one two  three\n"})"));
  CHECK(counted.result()["structuredContent"]["words"].to_int64() == 3);
  CHECK(str(at(counted.result()["content"], 0)["text"]) == R"({"words":3})");  // the text twin

  const auto invalid = c.send(server, call_tool(3, "word_count", R"({"text":42})"));
  CHECK(invalid.result()["isError"].is_bool());  // docs/errors.md#argument-errors
  CHECK(str(at(invalid.result()["content"], 0)["text"]).rfind("Invalid arguments at /text", 0) == 0);

  const auto down = c.send(server, call_tool(4, "countdown", R"({"n":3})", R"({"progressToken":"p4"})"));
  CHECK(str(at(down.result()["content"], 0)["text"]) == "liftoff");
  CHECK(c.sink.with_method("notifications/progress").size() == 3);
  CHECK(c.sink.with_method("notifications/message").size() == 1);
}
