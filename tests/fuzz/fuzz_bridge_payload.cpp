// SPDX-License-Identifier: Apache-2.0
// Fuzzes the PostgreSQL event bridge's NOTIFY payload (docs/server.md#events-across-servers):
// detail::pg_events::decode_bridge_event on hostile payloads (anyone who can connect to the
// database can NOTIFY the channel) and encode_bridge_event on hostile strings. No database: the
// pair is pure.
//
// Invariants:
//  - decode never crashes; a payload longer than the bound (postgres_event_max_payload, 7999
//    bytes) is refused whatever it holds, before it is parsed (the fuzzer runs under
//    -rss_limit_mb, which libFuzzer's -malloc_limit_mb follows: a decode that allocated without
//    bound would be reported);
//  - JSON whitespace after the payload changes nothing up to the bound, and past it the payload
//    is refused;
//  - what decode accepts has a URI only for resource_updated, re-encodes (never longer than the
//    input: the encoder writes the shortest form) and decodes back to the same event
//    (decode(encode(decode(p))) == decode(p)); the encoding is then a fixed point;
//  - the input used as a URI (and as an origin) encodes exactly when the escaped payload fits the
//    bound, one byte per byte of escaped text; what is encoded decodes back to the same strings
//    (to U+FFFD in place of bytes that are not UTF-8).
#include <mcpcore/session/impl/bridge_payload.ipp>

#include "fuzz_check.hpp"

#include <mcpcore/dispatch/server.hpp>
#include <mcpcore/wire/json_writer.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace pg = mcpcore::detail::pg_events;
using mcpcore::server_event;
using mcpcore::server_event_kind;

namespace {

constexpr std::string_view own_origin = "0123456789abcdef";

// The input used as a string the bridge sends (a URI, an origin).
void check_encode(std::string_view s) {
  std::string escaped;
  mcpcore::json::append_escaped(escaped, s);
  const bool utf8 = mcpcore::json::is_valid_utf8(s);

  // As a URI of resource_updated, from this bridge.
  const auto frame = pg::encode_bridge_event(own_origin, server_event{.kind = server_event_kind::resource_updated, .uri = ""});
  MCPCORE_FUZZ_CHECK(frame.has_value());
  const std::size_t size = frame->size() - 2 + escaped.size();  // "" replaced by the escaped URI
  const auto p = pg::encode_bridge_event(own_origin, server_event{.kind = server_event_kind::resource_updated, .uri = s});
  MCPCORE_FUZZ_CHECK(p.has_value() == (size <= pg::max_payload));
  if (p) {
    MCPCORE_FUZZ_CHECK(p->size() == size);
    const auto d = pg::decode_bridge_event(*p);
    MCPCORE_FUZZ_CHECK(d.has_value());
    MCPCORE_FUZZ_CHECK(d->origin == own_origin);
    MCPCORE_FUZZ_CHECK(d->kind == server_event_kind::resource_updated);
    if (utf8) MCPCORE_FUZZ_CHECK(d->uri == s);
    MCPCORE_FUZZ_CHECK(d->uri.size() + 2 <= escaped.size());
  }

  // As an origin (decode accepts any string there, so encode must carry any string).
  const server_event listed{.kind = server_event_kind::tools_list_changed, .uri = "ignored"};
  const auto empty_origin = pg::encode_bridge_event("", listed);
  MCPCORE_FUZZ_CHECK(empty_origin.has_value());
  const std::size_t q_size = empty_origin->size() - 2 + escaped.size();
  const auto q = pg::encode_bridge_event(s, listed);
  MCPCORE_FUZZ_CHECK(q.has_value() == (q_size <= pg::max_payload));
  if (q) {
    MCPCORE_FUZZ_CHECK(q->size() == q_size);
    const auto d = pg::decode_bridge_event(*q);
    MCPCORE_FUZZ_CHECK(d.has_value());
    MCPCORE_FUZZ_CHECK(d->kind == server_event_kind::tools_list_changed);
    MCPCORE_FUZZ_CHECK(d->uri.empty());
    if (utf8) MCPCORE_FUZZ_CHECK(d->origin == s);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  // Exact-size heap copy, so that ASan sees any read past the payload's end.
  const std::string owned{reinterpret_cast<const char*>(data), size};
  const std::string_view payload{owned};

  const auto d = pg::decode_bridge_event(payload);
  if (payload.size() > pg::max_payload) MCPCORE_FUZZ_CHECK(!d.has_value());

  // Trailing whitespace: the same answer up to the bound, a refusal past it.
  if (payload.size() < pg::max_payload) {
    const std::string at_bound = owned + std::string(pg::max_payload - payload.size(), ' ');
    MCPCORE_FUZZ_CHECK(pg::decode_bridge_event(at_bound) == d);
    MCPCORE_FUZZ_CHECK(!pg::decode_bridge_event(at_bound + "\n").has_value());
  }

  if (d) {
    if (d->kind != server_event_kind::resource_updated) MCPCORE_FUZZ_CHECK(d->uri.empty());
    const auto e = d->event();
    MCPCORE_FUZZ_CHECK(e.kind == d->kind && e.uri == d->uri);
    const auto again = pg::encode_bridge_event(d->origin, e);
    MCPCORE_FUZZ_CHECK(again.has_value());
    MCPCORE_FUZZ_CHECK(again->size() <= payload.size());
    const auto d2 = pg::decode_bridge_event(*again);
    MCPCORE_FUZZ_CHECK(d2 == d);
    MCPCORE_FUZZ_CHECK(pg::encode_bridge_event(d2->origin, d2->event()) == again);
  }

  check_encode(payload);
  return 0;
}
