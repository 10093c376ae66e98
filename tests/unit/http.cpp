// SPDX-License-Identifier: Apache-2.0
// Tests of the sans-I/O HTTP values: header lookup is ASCII case-insensitive (RFC 9110 §5.1); a
// request's header fields are views into the host's buffer; the local address's reading fails
// safe (docs/security.md#dns-rebinding-host-and-origin).
#include <mcpcore/wire/http.hpp>

#include <doctest/doctest.h>

#include <array>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>

using mcpcore::http_header;
using mcpcore::http_header_view;
using mcpcore::http_local_address;
using mcpcore::http_request_view;
using mcpcore::http_response;
using mcpcore::parse_local_address;

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

  TEST_CASE("http.md/the-request-view: a request's header fields are views into the host's buffer, found case-insensitively") {
    static_assert(std::is_aggregate_v<http_header_view>);
    const std::string buffer = "Content-TypeapplicationjsonAuthorizationBearer t";
    const std::string_view b = buffer;
    const std::array<http_header_view, 3> fields{http_header_view{b.substr(0, 12), b.substr(12, 11)},
                                                 http_header_view{b.substr(27, 13), b.substr(40, 8)},
                                                 http_header_view{"authorization", "Bearer u"}};
    const http_request_view v{.method = "POST", .target = "/mcp", .body = {}, .headers = fields};
    REQUIRE(v.header("content-type").has_value());
    CHECK(*v.header("content-type") == "application");
    CHECK(v.header("content-type")->data() == buffer.data() + 12);  // no copy
    CHECK(*v.header("AUTHORIZATION") == "Bearer t");
    CHECK(v.header_repeated("Authorization"));
    CHECK_FALSE(v.header_repeated("Content-Type"));
    CHECK_FALSE(v.header("Host").has_value());
  }

  TEST_CASE("security.md/dns-rebinding-host-and-origin: parse_local_address reads IPv4 and bracketed IPv6 with a port, and fails safe on the rest") {
    const std::string text = "10.0.0.5:8765";
    const http_local_address a = parse_local_address(text);
    CHECK(a.address == "10.0.0.5");
    CHECK(a.address.data() == text.data());
    CHECK(a.port == 8765);
    CHECK_FALSE(a.loopback);
    CHECK_FALSE(a.treated_as_loopback());
    struct row {
      const char* text;
      std::string_view address;
      std::uint16_t port;
      bool loopback;
    };
    for (const row& r : {row{"127.0.0.1:8765", "127.0.0.1", 8765, true}, row{"[::1]:80", "::1", 80, true},
                         row{"[2001:db8::1]:65535", "2001:db8::1", 65535, false}, row{"192.168.1.2", "192.168.1.2", 0, false},
                         row{"[::ffff:10.0.0.1]:80", "::ffff:10.0.0.1", 80, false},
                         row{"[::ffff:127.0.0.1]:80", "::ffff:127.0.0.1", 80, true}, row{"0.0.0.0:80", "0.0.0.0", 80, true},
                         row{"[::]:80", "::", 80, true}, row{"[::10.0.0.1]:80", "::10.0.0.1", 80, true}}) {
      CAPTURE(r.text);
      const http_local_address p = parse_local_address(r.text);
      CHECK(p.address == r.address);
      CHECK(p.port == r.port);
      CHECK(p.loopback == r.loopback);
      CHECK(p.treated_as_loopback() == r.loopback);
    }
    // Unreadable: nothing known, checked as loopback.
    for (const char* bad : {"", "::1:8800", "junk", "[::1", "localhost:80", "10.0.0.1:99999", "10.0.0:80", "256.0.0.1:80",
                            "[2001:db8::1]x", "10.0.0.1:", "10.0.0.1:8a", "[1.2.3.4]:80", "[fe80::1%eth0]:80", " 10.0.0.1:80"}) {
      CAPTURE(bad);
      const http_local_address p = parse_local_address(bad);
      CHECK(p.address.empty());
      CHECK(p.port == 0);
      CHECK(p.loopback);
      CHECK(p.treated_as_loopback());
    }
    // A default one knows nothing and is checked.
    CHECK(http_local_address{}.treated_as_loopback());
  }

  TEST_CASE("the view returned by header() refers into the response's headers") {
    const auto r = with_headers({{"Cache-Control", "no-store"}});
    const auto v = r.header("cache-control");
    REQUIRE(v.has_value());
    CHECK(v->data() == r.headers[0].value.data());
  }
}
