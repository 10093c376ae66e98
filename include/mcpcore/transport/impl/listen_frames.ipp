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
#include <mcpcore/wire/error.hpp>
#include <mcpcore/wire/json.hpp>
#include <mcpcore/wire/json_writer.hpp>
#include <mcpcore/wire/jsonrpc.hpp>

#include <array>
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
  /// The tasks whose status changes it gets (`tasksStatus`, docs/tasks.md#notifications).
  std::vector<std::string> task_ids;

  [[nodiscard]] bool empty() const noexcept {
    return !tools && !prompts && !resources && uris.empty() && task_ids.empty();
  }
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
    if (!task_ids.empty()) {
      w.key("tasksStatus").begin_array();
      for (const auto& id : task_ids) w.value(id);
      w.end_array();
    }
    w.end_object();
  }
};

/// The tasks extension a listen asking for `tasksStatus` must declare in its client capabilities.
inline constexpr std::string_view listen_tasks_extension = "io.modelcontextprotocol/tasks";
/// `error.data.requiredCapabilities` of a listen refused for not declaring it.
inline constexpr std::string_view listen_tasks_required = R"({"extensions":{"io.modelcontextprotocol/tasks":{}}})";

/// Why a listen is refused: -32602 (a malformed filter) or -32021 (`tasksStatus` without the tasks
/// extension).
struct listen_refusal {
  errc code = errc::invalid_params;
  std::string_view message;
};

/// Reads `params.notifications` of a `subscriptions/listen` and keeps what `srv` can send (a flag
/// asked with `true` whose kind the server publishes; the URIs when it has resources; the task ids
/// of `tasksStatus` when tasks are on). A missing or malformed filter, more than `max_uris` URIs or
/// task ids: -32602; `tasksStatus` on a server with tasks from a request that does not declare the
/// tasks extension: -32021 (docs/tasks.md#notifications).
inline result<listen_filter, listen_refusal> read_listen_filter(const message& msg, const server& srv,
                                                                std::size_t max_uris) {
  const json::value n = msg.params["notifications"];
  const json::value uris = n["resourceSubscriptions"];
  const json::value tasks = n["tasksStatus"];
  const auto flag_ok = [&n](std::string_view key) { return !n[key].exists() || n[key].is_bool(); };
  const auto refuse = [](std::string_view text) { return fail(listen_refusal{errc::invalid_params, text}); };
  if (!n.is_object() || (uris.exists() && !uris.is_array()) || (tasks.exists() && !tasks.is_array()) ||
      !flag_ok("toolsListChanged") || !flag_ok("promptsListChanged") || !flag_ok("resourcesListChanged")) {
    return refuse("Invalid params: 'notifications' is required and must be a subscription filter");
  }
  if (uris.is_array()) {
    for (json::value u : uris.elements()) {
      if (!u.is_string()) return refuse("Invalid params: resourceSubscriptions must hold URI strings");
    }
  }
  if (uris.exists() && uris.size() > max_uris) return refuse("Invalid params: too many resourceSubscriptions");
  if (tasks.is_array()) {
    for (json::value t : tasks.elements()) {
      if (!t.is_string()) return refuse("Invalid params: tasksStatus must hold task id strings");
    }
    if (tasks.size() > max_uris) return refuse("Invalid params: too many tasksStatus");
  }
  const bool task_status = srv.publishes(server_event_kind::task_status);
  if (task_status && tasks.exists() &&
      !msg.params["_meta"][meta_key::client_capabilities]["extensions"][listen_tasks_extension].is_object()) {
    return fail(listen_refusal{errc::missing_client_capability,
                               "tasksStatus needs the io.modelcontextprotocol/tasks extension in the request's "
                               "client capabilities"});
  }
  const auto asked = [&n](std::string_view key) { return n[key].is_bool() && n[key].as_bool(); };
  listen_filter f;
  f.tools = asked("toolsListChanged") && srv.publishes(server_event_kind::tools_list_changed);
  f.prompts = asked("promptsListChanged") && srv.publishes(server_event_kind::prompts_list_changed);
  const bool resources = srv.publishes(server_event_kind::resources_list_changed);
  f.resources = asked("resourcesListChanged") && resources;
  if (resources && uris.is_array()) {
    for (json::value u : uris.elements()) f.uris.emplace_back(u.as_string());
  }
  // Every id asked is granted, known or not, the caller's or not: the grant tells nothing about a
  // task; only the owner's listens get its changes (listen_event).
  if (task_status && tasks.is_array()) {
    for (json::value t : tasks.elements()) f.task_ids.emplace_back(t.as_string());
  }
  return f;
}

/// The error answer of a refused listen: its code, message and correlation id, and for -32021
/// `error.data.requiredCapabilities` naming the tasks extension.
inline void write_listen_refusal(std::string& out, const std::optional<request_id_view>& id, const listen_refusal& why,
                                 std::string_view cid, std::string_view remediation) {
  const std::array members{error_data_member{"requiredCapabilities", listen_tasks_required}};
  error_data d;
  d.correlation_id = cid;
  d.remediation = why.code == errc::missing_client_capability
                      ? "Declare extensions[\"io.modelcontextprotocol/tasks\"] in io.modelcontextprotocol/clientCapabilities."
                      : remediation;
  if (why.code == errc::missing_client_capability) d.members = members;
  write_error_response(out, id, why.code, why.message, d);
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

/// `{"jsonrpc":"2.0","method":"notifications/tasks/status","params":{<the task's members>,"_meta":
/// {"io.modelcontextprotocol/subscriptionId":<id>}}}`; `task_json` is the task as a JSON object.
inline std::string listen_task_frame(std::string_view id_json, std::string_view task_json) {
  // The task's members go in front of the `_meta` (copied as text: the task is a JSON object the
  // engine wrote).
  std::string out = R"({"jsonrpc":"2.0","method":"notifications/tasks/status","params":{)";
  const std::size_t close = task_json.rfind('}');
  const std::string_view members = task_json.substr(1, close == std::string_view::npos || close < 1 ? 0 : close - 1);
  out += members;
  if (!members.empty()) out += ',';
  out += R"("_meta":{")";
  out += meta_key::subscription_id;
  out += R"(":)";
  out += id_json;
  out += "}}}";
  return out;
}

/// The frame an event becomes on a listen stream of principal `who`, or nothing when the filter
/// does not ask for it. A task's status change goes only to its owner's listens naming it
/// (docs/tasks.md#notifications).
inline std::optional<std::string> listen_event(const listen_filter& f, std::string_view id_json, std::string_view who,
                                               const server_event& e) {
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
    case server_event_kind::task_status:
      if (e.owner != who || e.task_json.size() < 2) break;
      for (const auto& id : f.task_ids) {
        if (id == e.task_id) return listen_task_frame(id_json, e.task_json);
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
