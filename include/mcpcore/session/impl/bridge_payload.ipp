// SPDX-License-Identifier: Apache-2.0
// The PostgreSQL event bridge's NOTIFY payload: one event encoded and decoded by a pair of pure
// functions, with no libpq and no state, so that the bridge, its fuzzer (tests/fuzz/
// fuzz_bridge_payload.cpp) and its unit tests (tests/unit/bridge_payload.cpp) share them
// (docs/server.md#events-across-servers). The payload is hostile input: anyone who can connect to
// the database can NOTIFY the channel.
#ifndef MCPCORE_IMPL_BRIDGE_PAYLOAD_IPP
#define MCPCORE_IMPL_BRIDGE_PAYLOAD_IPP

#include <mcpcore/detail/config.hpp>
#include <mcpcore/dispatch/server.hpp>
#include <mcpcore/wire/json.hpp>
#include <mcpcore/wire/json_writer.hpp>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

MCPCORE_BEGIN_NAMESPACE
namespace detail::pg_events {

/// The longest payload encoded or decoded, in bytes: `postgres_event_max_payload` (PostgreSQL
/// refuses a NOTIFY payload of 8000 bytes or more). Repeated here, not included, because the
/// bridge's public header brings libpq in header-only mode; postgres_event_bridge.ipp checks the
/// two are equal.
inline constexpr std::size_t max_payload = 7999;

/// The name of a bridged kind in a payload (`k`); none for `task_status`, which is not bridged.
inline std::optional<std::string_view> kind_name(server_event_kind k) noexcept {
  switch (k) {
    case server_event_kind::tools_list_changed: return "tools_list_changed";
    case server_event_kind::prompts_list_changed: return "prompts_list_changed";
    case server_event_kind::resources_list_changed: return "resources_list_changed";
    case server_event_kind::resource_updated: return "resource_updated";
    case server_event_kind::task_status: return std::nullopt;
  }
  return std::nullopt;
}

/// The bridged kind named `n`, if any.
inline std::optional<server_event_kind> kind_of(std::string_view n) noexcept {
  for (auto k : {server_event_kind::tools_list_changed, server_event_kind::prompts_list_changed,
                 server_event_kind::resources_list_changed, server_event_kind::resource_updated}) {
    if (kind_name(k) == n) return k;
  }
  return std::nullopt;
}

/// One decoded payload. It owns its strings (the JSON document it came from is gone).
struct decoded_event {
  std::string origin;  ///< `o`: the sending bridge's id
  server_event_kind kind = server_event_kind::tools_list_changed;  ///< `k`
  std::string uri;     ///< `u`, for `resource_updated` only (empty for the other kinds)

  /// The event to publish; views into this object.
  [[nodiscard]] server_event event() const noexcept { return server_event{.kind = kind, .uri = uri}; }
  friend bool operator==(const decoded_event&, const decoded_event&) = default;
};

/// The payload of `e` from the bridge `origin`: `{"o":<origin>,"k":<kind>,"u":<uri>}` (`u` only for
/// `resource_updated`), the strings escaped as JSON (bytes that are not UTF-8 become U+FFFD). None
/// for a kind that is not bridged (`task_status`) or a payload longer than `max_payload`.
///
/// The origin is escaped too: the bridge's own is 16 hex digits, but a decoded one is whatever the
/// sender wrote, and what `decode_bridge_event` accepts must encode back to the same event.
inline std::optional<std::string> encode_bridge_event(std::string_view origin, const server_event& e) {
  const auto name = kind_name(e.kind);
  if (!name) return std::nullopt;
  std::string payload = R"({"o":)";
  json::append_escaped(payload, origin);
  payload += R"(,"k":")";
  payload += *name;
  payload += '"';
  if (e.kind == server_event_kind::resource_updated) {
    payload += R"(,"u":)";
    json::append_escaped(payload, e.uri);
  }
  payload += '}';
  if (payload.size() > max_payload) return std::nullopt;
  return payload;
}

/// The event in `payload`, or none when it is not one: longer than `max_payload` (refused before
/// it is parsed, so the memory one payload costs is bounded whatever the database delivers), not a JSON object (the JSON reader's rules: UTF-8, no duplicate member,
/// nesting at most `json::default_max_depth`), `o` or `k` missing or not a string, an unknown kind,
/// a `resource_updated` without a string `u`. Other members are ignored, and so is `u` for the
/// other kinds.
inline std::optional<decoded_event> decode_bridge_event(std::string_view payload) {
  // PostgreSQL built with larger pages delivers payloads past 8000 bytes: the bound is the
  // bridge's, not only the sender's (docs/server.md#events-across-servers).
  if (payload.size() > max_payload) return std::nullopt;
  json::document doc(json::parse_options{.max_bytes = max_payload});
  const auto root = doc.parse(payload);
  if (!root || !root->is_object()) return std::nullopt;
  const auto o = root->find("o");
  const auto k = root->find("k");
  if (!o.is_string() || !k.is_string()) return std::nullopt;
  const auto kind = kind_of(k.as_string());
  if (!kind) return std::nullopt;
  decoded_event d{.origin = std::string(o.as_string()), .kind = *kind, .uri = {}};
  if (*kind == server_event_kind::resource_updated) {
    const auto u = root->find("u");
    if (!u.is_string()) return std::nullopt;
    d.uri = u.as_string();
  }
  return d;
}

}  // namespace detail::pg_events
MCPCORE_END_NAMESPACE

#endif  // MCPCORE_IMPL_BRIDGE_PAYLOAD_IPP
