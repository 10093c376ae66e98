// SPDX-License-Identifier: Apache-2.0
// Tests of Accept header matching (docs/design.md#other-wire-pieces; MCP 2025-11-25 transports).
#include <mcpcore/wire/accept.hpp>

#include <doctest/doctest.h>

#include <string_view>

using namespace mcpcore;

TEST_SUITE("accept") {
  TEST_CASE("the MCP client's Accept lists both types") {
    constexpr std::string_view h = "application/json, text/event-stream";
    CHECK(accept_wants_sse(h));
    CHECK(accept_wants_json(h));
  }

  TEST_CASE("parameters and q-values are ignored, q=0 included (http.md/get-sessions-on)") {
    CHECK(accept_wants_sse("text/event-stream;q=0.5"));
    CHECK(accept_wants_sse("text/event-stream ; charset=utf-8"));
    CHECK(accept_wants_sse("text/event-stream;q=0"));
    CHECK(accept_wants_json("application/json;q=0.9,text/event-stream"));
  }

  TEST_CASE("media types compare case-insensitively after trimming") {
    CHECK(accept_wants_sse("TEXT/Event-Stream"));
    CHECK(accept_wants_sse("  text/event-stream\t"));
    CHECK(accept_wants_sse("text/html,\ttext/event-stream ,application/xml"));
  }

  TEST_CASE("wildcards do not opt in (design.md/other-wire-pieces)") {
    CHECK_FALSE(accept_wants_sse("*/*"));
    CHECK_FALSE(accept_wants_sse("text/*"));
    CHECK_FALSE(accept_wants_json("application/*, */*;q=0.1"));
  }

  TEST_CASE("near misses do not match") {
    CHECK_FALSE(accept_wants_sse(""));
    CHECK_FALSE(accept_wants_sse("text/event-streams"));
    CHECK_FALSE(accept_wants_sse("text/event"));
    CHECK_FALSE(accept_wants_sse("xtext/event-stream"));
    CHECK_FALSE(accept_wants_sse("text/event-stream-x;q=1"));
    CHECK_FALSE(accept_wants_sse("text /event-stream"));
    CHECK_FALSE(accept_wants_sse("application/json"));
    CHECK_FALSE(accept_wants_json("application/json-seq"));
  }

  TEST_CASE("commas inside quoted parameters do not split elements") {
    CHECK_FALSE(accept_wants_sse(R"(text/plain;x="a,text/event-stream")"));
    CHECK(accept_wants_sse(R"(text/plain;x="a,b", text/event-stream)"));
    CHECK(accept_wants_sse(R"(text/plain;x="a\",text/event-stream,\"", text/event-stream)"));
    CHECK_FALSE(accept_wants_sse(R"(text/plain;x="a\",text/event-stream")"));
  }

  TEST_CASE("an unterminated quoted string fails closed (design.md/other-wire-pieces)") {
    CHECK_FALSE(accept_wants_sse(R"(text/event-stream, text/plain;x="open)"));
    CHECK_FALSE(accept_wants_sse(R"(text/event-stream;x="a\)"));
    CHECK_FALSE(accept_wants_json(R"(application/json;p=")"));
  }

  TEST_CASE("empty elements are tolerated") {
    CHECK(accept_wants_sse(",,text/event-stream,,"));
    CHECK_FALSE(accept_wants_sse(",,,"));
  }

  TEST_CASE("accept_lists takes any lowercase media type") {
    CHECK(accept_lists("Application/Problem+JSON", "application/problem+json"));
    CHECK_FALSE(accept_lists("application/problem+json", "application/json"));
  }
}
