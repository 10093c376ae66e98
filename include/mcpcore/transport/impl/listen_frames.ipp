// SPDX-License-Identifier: Apache-2.0
// subscriptions/listen's messages, shared by the transports that serve it (the HTTP endpoint, the
// stdio transport; docs/eras.md#subscriptions): the filter a listen asks for and is granted, its
// acknowledgement and change notifications, each stamped with the listen's id, and its closing
// result.
#ifndef MCPCORE_IMPL_LISTEN_FRAMES_IPP
#define MCPCORE_IMPL_LISTEN_FRAMES_IPP

#include <mcpcore/dispatch/server.hpp>
#include <mcpcore/expected.hpp>
#include <mcpcore/wire/era.hpp>
#include <mcpcore/wire/json.hpp>
#include <mcpcore/wire/json_writer.hpp>
#include <mcpcore/wire/jsonrpc.hpp>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

MCPCORE_BEGIN_NAMESPACE

namespace detail {

/// What one listen asked for and was granted (docs/eras.md#subscriptions).
struct listen_filter {
  bool tools = false;
  bool prompts = false;
  bool resources = false;
  std::vector<std::string> uris;

  [[nodiscard]] bool empty() const noexcept { return !tools && !prompts && !resources && uris.empty(); }
  void write(json::writer& w) const {
    w.begin_object();
    if (tools) w.member("toolsListChanged", true);
    if (prompts) w.member("promptsListChanged", true);
    if (resources) w.member("resourcesListChanged", true);
    if (!uris.empty()) {
      w.key("resourceSubscriptions").begin_array();
      for (const auto& u : uris) w.value(u);
      w.end_array();
    }
    w.end_object();
  }
};

/// Reads `params.notifications` of a `subscriptions/listen` and keeps what `srv` can send (a flag
/// asked with `true` whose kind the server publishes; the URIs when it has resources). On a
/// missing or malformed filter, or more than `max_uris` URIs: the -32602 message.
inline result<listen_filter, std::string_view> read_listen_filter(const message& msg, const server& srv,
                                                                  std::size_t max_uris) {
  const json::value n = msg.params["notifications"];
  const json::value uris = n["resourceSubscriptions"];
  const auto flag_ok = [&n](std::string_view key) { return !n[key].exists() || n[key].is_bool(); };
  if (!n.is_object() || (uris.exists() && !uris.is_array()) || !flag_ok("toolsListChanged") ||
      !flag_ok("promptsListChanged") || !flag_ok("resourcesListChanged")) {
    return fail(std::string_view{"Invalid params: 'notifications' is required and must be a subscription filter"});
  }
  if (uris.is_array()) {
    for (json::value u : uris.elements()) {
      if (!u.is_string()) return fail(std::string_view{"Invalid params: resourceSubscriptions must hold URI strings"});
    }
  }
  if (uris.exists() && uris.size() > max_uris) return fail(std::string_view{"Invalid params: too many resourceSubscriptions"});
  const auto asked = [&n](std::string_view key) { return n[key].is_bool() && n[key].as_bool(); };
  listen_filter f;
  f.tools = asked("toolsListChanged") && srv.publishes(server_event_kind::tools_list_changed);
  f.prompts = asked("promptsListChanged") && srv.publishes(server_event_kind::prompts_list_changed);
  const bool resources = srv.publishes(server_event_kind::resources_list_changed);
  f.resources = asked("resourcesListChanged") && resources;
  if (resources && uris.is_array()) {
    for (json::value u : uris.elements()) f.uris.emplace_back(u.as_string());
  }
  return f;
}

/// The id of a listen as JSON text (its subscriptionId: the id as it was sent).
inline std::string listen_id_json(const std::optional<request_id_view>& id) {
  std::string out;
  json::writer w{out};
  write_id(w, id);
  return out;
}

/// `{"jsonrpc":"2.0","method":<method>,"params":{[uri,]"_meta":{"io.modelcontextprotocol/subscriptionId":<id>}}}`.
inline std::string listen_frame(std::string_view method, std::string_view id_json, const listen_filter* ack,
                                std::string_view uri) {
  std::string out;
  json::writer w{out};
  w.begin_object().member("jsonrpc", "2.0").member("method", method).key("params").begin_object();
  if (ack != nullptr) {
    w.key("notifications");
    ack->write(w);
  }
  if (!uri.empty()) w.member("uri", uri);
  w.key("_meta").begin_object().raw_member(meta_key::subscription_id, id_json).end_object();
  w.end_object().end_object();
  return out;
}

/// The frame an event becomes on a listen stream, or nothing when the filter does not ask for it.
inline std::optional<std::string> listen_event(const listen_filter& f, std::string_view id_json, const server_event& e) {
  switch (e.kind) {
    case server_event_kind::tools_list_changed:
      if (f.tools) return listen_frame("notifications/tools/list_changed", id_json, nullptr, {});
      break;
    case server_event_kind::prompts_list_changed:
      if (f.prompts) return listen_frame("notifications/prompts/list_changed", id_json, nullptr, {});
      break;
    case server_event_kind::resources_list_changed:
      if (f.resources) return listen_frame("notifications/resources/list_changed", id_json, nullptr, {});
      break;
    case server_event_kind::resource_updated:
      for (const auto& u : f.uris) {
        if (u == e.uri) return listen_frame("notifications/resources/updated", id_json, nullptr, e.uri);
      }
      break;
  }
  return std::nullopt;
}

/// The result that ends a listen: `{"jsonrpc":"2.0","id":<id>,"result":{"resultType":"complete",
/// "_meta":{"io.modelcontextprotocol/subscriptionId":<id>,"io.modelcontextprotocol/serverInfo":{name,version}}}}`.
inline std::string listen_result(const std::optional<request_id_view>& id, std::string_view id_json,
                                 const server_info& info) {
  std::string out;
  json::writer w{out};
  begin_message(w, id).key("result").begin_object().member("resultType", "complete");
  w.key("_meta").begin_object().raw_member(meta_key::subscription_id, id_json);
  w.key(meta_key::server_info).begin_object().member("name", info.name).member("version", info.version);
  w.end_object().end_object().end_object().end_object();
  return out;
}

}  // namespace detail

MCPCORE_END_NAMESPACE

#endif  // MCPCORE_IMPL_LISTEN_FRAMES_IPP
