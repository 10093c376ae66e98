// SPDX-License-Identifier: Apache-2.0
// The README's wire-layer snippet, compiled and run so that the documentation cannot rot.
#include <mcpcore/jsonrpc.hpp>

#include <doctest/doctest.h>

#include <mcpcore/correlation_id.hpp>

#include <string>
#include <string_view>

namespace {

std::string answer(std::string_view body) {
  // ---- README snippet (keep identical) ----
  mcpcore::json::document doc;   // reuse it: steady-state parsing does not allocate
  std::string out;
  if (auto msg = mcpcore::parse_message(doc, body)) {
    if (msg->kind == mcpcore::message_kind::request && msg->method == "ping")
      mcpcore::write_result_response(out, *msg->id, "{}");
  } else {
    mcpcore::write_error_response(out, msg.error(), mcpcore::next_correlation_id().view());
  }
  // ---- end of snippet ----
  return out;
}

}  // namespace

TEST_SUITE("doc") {
  TEST_CASE("the README snippet answers ping and refuses a batch") {
    CHECK(answer(R"({"jsonrpc":"2.0","id":1,"method":"ping"})") == R"({"jsonrpc":"2.0","id":1,"result":{}})");
    const std::string refused = answer("[]");
    CHECK(refused.starts_with(R"({"jsonrpc":"2.0","id":null,"error":{"code":-32600,)"));
    CHECK(answer(R"({"jsonrpc":"2.0","method":"notifications/initialized"})").empty());
  }
}
