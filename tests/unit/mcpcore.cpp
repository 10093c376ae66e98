// SPDX-License-Identifier: Apache-2.0
// Tests that the umbrella header offers the wire layer in one include.
#include <mcpcore/mcpcore.hpp>

#include <doctest/doctest.h>

#include <string>

TEST_SUITE("mcpcore") {
  TEST_CASE("a request can be parsed and answered through the umbrella header") {
    mcpcore::json::document doc;
    const auto msg = mcpcore::parse_message(doc, R"({"jsonrpc":"2.0","id":1,"method":"ping"})");
    REQUIRE(msg);
    std::string out;
    mcpcore::write_result_response(out, *msg->id, "{}");
    CHECK(out == R"({"jsonrpc":"2.0","id":1,"result":{}})");
  }
}
