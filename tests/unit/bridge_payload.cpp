// SPDX-License-Identifier: Apache-2.0
// Tests of the PostgreSQL event bridge's payload, encoded and decoded without a database
// (docs/server.md#events-across-servers): the format, its bound, and hostile payloads from anyone
// who can NOTIFY the channel. The bridge itself is tested in tests/postgres/event_bridge.cpp; this
// file needs no libpq and runs in every preset.
#include <mcpcore/session/impl/bridge_payload.ipp>

#include <doctest/doctest.h>

#include <mcpcore/dispatch/server.hpp>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

using namespace mcpcore;
using detail::pg_events::decode_bridge_event;
using detail::pg_events::decoded_event;
using detail::pg_events::encode_bridge_event;
using detail::pg_events::max_payload;

namespace {

constexpr std::string_view origin = "0123456789abcdef";

server_event updated(std::string_view uri) { return server_event{.kind = server_event_kind::resource_updated, .uri = uri}; }

// A well-formed update payload of exactly `size` bytes (its URI filled with 'x'), from another origin.
std::string update_payload_of_size(std::size_t size) {
  const std::string head = R"({"o":"fedcba9876543210","k":"resource_updated","u":"test://)";
  const std::string tail = R"("})";
  REQUIRE(size >= head.size() + tail.size());
  return head + std::string(size - head.size() - tail.size(), 'x') + tail;
}

}  // namespace

TEST_SUITE("bridge payload") {
  TEST_CASE("server.md/events-across-servers: each bridged kind encodes to the documented payload and decodes back") {
    CHECK(encode_bridge_event(origin, server_event{.kind = server_event_kind::tools_list_changed}) ==
          R"({"o":"0123456789abcdef","k":"tools_list_changed"})");
    CHECK(encode_bridge_event(origin, server_event{.kind = server_event_kind::prompts_list_changed}) ==
          R"({"o":"0123456789abcdef","k":"prompts_list_changed"})");
    CHECK(encode_bridge_event(origin, server_event{.kind = server_event_kind::resources_list_changed}) ==
          R"({"o":"0123456789abcdef","k":"resources_list_changed"})");
    CHECK(encode_bridge_event(origin, updated("test://a\"b\\c\n\xC3\xA9")) ==
          R"({"o":"0123456789abcdef","k":"resource_updated","u":"test://a\"b\\c\n)"
          "\xC3\xA9\"}");
    // task_status is not bridged: nothing to send.
    CHECK_FALSE(encode_bridge_event(origin, server_event{.kind = server_event_kind::task_status, .task_id = "t1"}));

    for (const auto k : {server_event_kind::tools_list_changed, server_event_kind::prompts_list_changed,
                         server_event_kind::resources_list_changed}) {
      const auto p = encode_bridge_event(origin, server_event{.kind = k, .uri = "ignored"});
      REQUIRE(p);
      CHECK(decode_bridge_event(*p) == decoded_event{.origin = std::string(origin), .kind = k, .uri = {}});
    }
    const std::string uri = "test://a\"b\\c\n\x01\xC3\xA9/\x7F";
    const auto p = encode_bridge_event(origin, updated(uri));
    REQUIRE(p);
    const auto d = decode_bridge_event(*p);
    REQUIRE(d);
    CHECK(*d == decoded_event{.origin = std::string(origin), .kind = server_event_kind::resource_updated, .uri = uri});
    CHECK(d->event().kind == server_event_kind::resource_updated);
    CHECK(d->event().uri == uri);
  }

  TEST_CASE("server.md/events-across-servers: a payload longer than postgres_event_max_payload is refused by decode, one at the bound is accepted") {
    const std::string at = update_payload_of_size(max_payload);
    const auto d = decode_bridge_event(at);
    REQUIRE(d);
    CHECK(d->uri.size() == max_payload - 54);  // the payload less its 61 bytes of frame, plus "test://"
    // PostgreSQL built with larger pages delivers longer payloads: the bridge refuses them itself.
    CHECK_FALSE(decode_bridge_event(update_payload_of_size(max_payload + 1)));
    CHECK_FALSE(decode_bridge_event(update_payload_of_size(1 << 20)));
    // Whitespace counts too: the bound is on bytes, not on the event.
    CHECK_FALSE(decode_bridge_event(R"({"o":"a","k":"tools_list_changed"})" + std::string(max_payload, ' ')));
  }

  TEST_CASE("server.md/events-across-servers: encode refuses an event whose payload would pass the bound, to the byte") {
    const std::size_t overhead = encode_bridge_event(origin, updated(""))->size();
    const std::string fits(max_payload - overhead, 'u');
    const auto p = encode_bridge_event(origin, updated(fits));
    REQUIRE(p);
    CHECK(p->size() == max_payload);
    CHECK(decode_bridge_event(*p)->uri == fits);
    CHECK_FALSE(encode_bridge_event(origin, updated(fits + "u")));
    // An escaped byte counts as its escape: a quote takes two bytes, a control character six.
    CHECK_FALSE(encode_bridge_event(origin, updated(std::string(max_payload - overhead - 1, 'u') + "\"")));
    CHECK(encode_bridge_event(origin, updated(std::string(max_payload - overhead - 2, 'u') + "\"")));
    CHECK_FALSE(encode_bridge_event(origin, updated(std::string(max_payload - overhead - 5, 'u') + "\x01")));
    CHECK(encode_bridge_event(origin, updated(std::string(max_payload - overhead - 6, 'u') + "\x01")));
  }

  TEST_CASE("server.md/events-across-servers: whatever origin a payload carries re-encodes to a payload that decodes the same") {
    // A hostile sender picks any origin: quotes, backslashes, control characters (escaped in JSON).
    const std::string hostile = R"({"o":"a\"b\\c\u0001\n","k":"tools_list_changed"})";
    const auto d = decode_bridge_event(hostile);
    REQUIRE(d);
    CHECK(d->origin == "a\"b\\c\x01\n");
    const auto again = encode_bridge_event(d->origin, d->event());
    REQUIRE(again);
    CHECK(decode_bridge_event(*again) == d);
    CHECK(*again == R"({"o":"a\"b\\c\u0001\n","k":"tools_list_changed"})");
  }

  TEST_CASE("server.md/events-across-servers: payloads that are not a bridge event are refused") {
    for (const std::string_view bad : {
             std::string_view{""},
             std::string_view{"not json"},
             std::string_view{"null"},
             std::string_view{R"(["o","k"])"},
             std::string_view{R"("{\"o\":\"a\",\"k\":\"tools_list_changed\"}")"},
             std::string_view{R"({"k":"tools_list_changed"})"},                          // no origin
             std::string_view{R"({"o":"a"})"},                                           // no kind
             std::string_view{R"({"o":7,"k":"tools_list_changed"})"},                    // origin not a string
             std::string_view{R"({"o":"a","k":["tools_list_changed"]})"},                // kind not a string
             std::string_view{R"({"o":"a","k":"task_status"})"},                         // not bridged
             std::string_view{R"({"o":"a","k":"Tools_list_changed"})"},                  // names are exact
             std::string_view{R"({"o":"a","k":"tools_list_changed "})"},
             std::string_view{R"({"o":"a","k":"resource_updated"})"},                    // update without a URI
             std::string_view{R"({"o":"a","k":"resource_updated","u":null})"},
             std::string_view{R"({"o":"a","k":"resource_updated","u":{"x":1}})"},
             std::string_view{R"({"o":"a","k":"tools_list_changed","o":"b"})"},          // duplicate member
             std::string_view{R"({"o":"a","k":"tools_list_changed"} {})"},               // trailing content
             std::string_view{R"({"o":"a","k":"tools_list_changed")"},                   // truncated
             std::string_view{R"({"o":"\ud800","k":"tools_list_changed"})"},             // lone surrogate
             std::string_view{"{\"o\":\"\xC3\",\"k\":\"tools_list_changed\"}"},          // invalid UTF-8
             std::string_view{"{\"o\":\"a\tb\",\"k\":\"tools_list_changed\"}"},          // raw control character
         }) {
      CAPTURE(bad);
      CHECK_FALSE(decode_bridge_event(bad));
    }
    // Deep nesting in an ignored member stays within the JSON reader's depth limit: refused, not a crash.
    CHECK_FALSE(decode_bridge_event(R"({"o":"a","k":"tools_list_changed","x":)" + std::string(3000, '[') +
                                    std::string(3000, ']') + "}"));
  }

  TEST_CASE("server.md/events-across-servers: unknown members are ignored, and a URI only counts for resource_updated") {
    const auto d = decode_bridge_event(R"( {"v":2,"k":"prompts_list_changed","u":"test://x","o":"b","extra":{"a":[1,2]}} )");
    REQUIRE(d);
    CHECK(*d == decoded_event{.origin = "b", .kind = server_event_kind::prompts_list_changed, .uri = {}});
    const auto e = decode_bridge_event(R"({"o":"","k":"resource_updated","u":""})");
    REQUIRE(e);
    CHECK(*e == decoded_event{.origin = "", .kind = server_event_kind::resource_updated, .uri = ""});
    // Escapes are read: the URI published is the unescaped text.
    const auto f = decode_bridge_event(R"({"o":"c","k":"resource_updated","u":"test:\/\/\u00e9\u0000x"})");
    REQUIRE(f);
    CHECK(f->uri == std::string("test://\xC3\xA9\0x", 11));
  }

  TEST_CASE("server.md/events-across-servers: a URI that is not UTF-8 crosses with U+FFFD in place of the bad bytes") {
    const auto p = encode_bridge_event(origin, updated("test://a\xFF" "b"));
    REQUIRE(p);
    const auto d = decode_bridge_event(*p);
    REQUIRE(d);
    CHECK(d->uri == "test://a\xEF\xBF\xBD" "b");
  }
}
