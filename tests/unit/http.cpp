// SPDX-License-Identifier: Apache-2.0
// Tests of the sans-I/O HTTP values: header lookup is ASCII case-insensitive (RFC 9110 §5.1).
#include <mcpcore/wire/http.hpp>

#include <doctest/doctest.h>

#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>

using mcpcore::http_header;
using mcpcore::http_request_view;
using mcpcore::http_response;

namespace {

http_response with_headers(std::initializer_list<http_header> hs) {
  http_response r;
  r.headers.assign(hs.begin(), hs.end());
  return r;
}

}  // namespace

TEST_SUITE("http") {
  TEST_CASE("a default response is 200 with no headers and no body") {
    const http_response r;
    CHECK(r.status == 200);
    CHECK(r.headers.empty());
    CHECK(r.body.empty());
    CHECK_FALSE(r.header("Content-Type").has_value());
  }

  TEST_CASE("the request view is a plain aggregate of views") {
    static_assert(std::is_aggregate_v<http_request_view>);
    const http_request_view v{.method = "POST", .target = "/a?b", .body = "{}"};
    CHECK(v.method == "POST");
    CHECK(v.target == "/a?b");
    CHECK(v.body == "{}");
  }

  TEST_CASE("RFC 9110 §5.1: header() matches field names ignoring ASCII case") {
    const auto r = with_headers({{"Content-Type", "application/json"}, {"Retry-After", "5"}});
    REQUIRE(r.header("Content-Type").has_value());
    CHECK(*r.header("Content-Type") == "application/json");
    CHECK(*r.header("content-type") == "application/json");
    CHECK(*r.header("CONTENT-TYPE") == "application/json");
    CHECK(*r.header("cOnTeNt-TyPe") == "application/json");
    CHECK(*r.header("retry-after") == "5");
  }

  TEST_CASE("header() returns the first of repeated names, whatever their case") {
    const auto r = with_headers({{"x-a", "first"}, {"X-A", "second"}, {"X-B", "b"}});
    CHECK(*r.header("X-A") == "first");
    CHECK(*r.header("x-b") == "b");
  }

  TEST_CASE("header() returns nullopt for an absent name, a prefix or an extension of a name") {
    const auto r = with_headers({{"Allow", "GET"}});
    CHECK_FALSE(r.header("Allo").has_value());
    CHECK_FALSE(r.header("Allows").has_value());
    CHECK_FALSE(r.header("").has_value());
    CHECK_FALSE(r.header("Allow ").has_value());
  }

  TEST_CASE("header() folds only A-Z/a-z: bytes 0x20 apart that are not letters differ") {
    // '@' (0x40) / '`' (0x60), '[' (0x5B) / '{' (0x7B), '-' (0x2D) / '\r' (0x0D).
    const auto r = with_headers({{"a@", "1"}, {"a[", "2"}, {"a-b", "3"}});
    CHECK_FALSE(r.header("a`").has_value());
    CHECK_FALSE(r.header("A`").has_value());
    CHECK_FALSE(r.header("a{").has_value());
    CHECK_FALSE(r.header("a\rb").has_value());
    CHECK(*r.header("A@") == "1");
    CHECK(*r.header("A[") == "2");
    CHECK(*r.header("A-B") == "3");
  }

  TEST_CASE("header() does not fold non-ASCII bytes (no locale, no Unicode case mapping)") {
    // U+00C4 is C3 84, U+00E4 is C3 A4: 0x20 apart in the second byte, but not ASCII.
    const auto r = with_headers({{"X-\xC3\x84", "upper"}, {"\xC0", "c0"}});
    CHECK_FALSE(r.header("x-\xC3\xA4").has_value());
    CHECK(*r.header("x-\xC3\x84") == "upper");
    CHECK_FALSE(r.header("\xE0").has_value());
    CHECK(*r.header("\xC0") == "c0");
  }

  TEST_CASE("a header with an empty name or value is found like any other") {
    const auto r = with_headers({{"", "anon"}, {"X-Empty", ""}});
    REQUIRE(r.header("").has_value());
    CHECK(*r.header("") == "anon");
    REQUIRE(r.header("x-empty").has_value());
    CHECK(r.header("x-empty")->empty());
  }

  TEST_CASE("the view returned by header() refers into the response's headers") {
    const auto r = with_headers({{"Cache-Control", "no-store"}});
    const auto v = r.header("cache-control");
    REQUIRE(v.has_value());
    CHECK(v->data() == r.headers[0].value.data());
  }
}
