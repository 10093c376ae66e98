// SPDX-License-Identifier: Apache-2.0
// The dispatch core's entry points: `server` itself and `server::handle`, which routes one parsed
// message to its method. The rest lives beside it: peer.ipp (the peer state), server_state.ipp
// (tables and `server::impl`), server_builder.ipp (validation and build), call_state.ipp (the
// call context), tools_call.ipp (the gate pipeline), waiting_call.ipp (handlers that ask their
// client for input) and server_methods.ipp (the other methods).
#ifndef MCPCORE_IMPL_SERVER_IPP
#define MCPCORE_IMPL_SERVER_IPP

#include <mcpcore/dispatch/server.hpp>

#include <mcpcore/dispatch/impl/call_state.ipp>
#include <mcpcore/dispatch/impl/events.ipp>
#include <mcpcore/dispatch/impl/peer.ipp>
#include <mcpcore/dispatch/impl/per_request.ipp>
#include <mcpcore/dispatch/impl/run_time_tables.ipp>
#include <mcpcore/dispatch/impl/server_builder.ipp>
#include <mcpcore/dispatch/impl/server_methods.ipp>
#include <mcpcore/dispatch/impl/server_state.ipp>
#include <mcpcore/dispatch/impl/task_engine.ipp>
#include <mcpcore/dispatch/impl/task_run.ipp>
#include <mcpcore/dispatch/impl/tools_call.ipp>
#include <mcpcore/dispatch/impl/waiting_call.ipp>
#include <mcpcore/wire/error.hpp>

#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

MCPCORE_BEGIN_NAMESPACE

// ---- server -----------------------------------------------------------------------------------

MCPCORE_DECL server::server(server&& o) noexcept : impl_(std::exchange(o.impl_, nullptr)) {}
MCPCORE_DECL server& server::operator=(server&& o) noexcept {
  if (this != &o) {
    delete impl_;
    impl_ = std::exchange(o.impl_, nullptr);
  }
  return *this;
}
MCPCORE_DECL server::~server() { delete impl_; }
MCPCORE_DECL kill_switches& server::switches() noexcept { return impl_->switches; }
MCPCORE_DECL void server::begin_shutdown() noexcept {
  impl_->shutting_down.store(true);
  for (const auto& c : impl_->waiting.snapshot()) c->cancel();  // docs/eras.md#waiting-for-the-client
}

MCPCORE_DECL std::size_t server::waiting_calls() const noexcept {
  const std::lock_guard lock{impl_->waiting.mu};
  return impl_->waiting.calls.size();
}

MCPCORE_DECL void server::expire_waiting() noexcept {
  const auto now = impl_->clock->steady_now();
  for (const auto& c : impl_->waiting.snapshot()) c->expire(now);
  if (impl_->tasks) detail::sweep_tasks(*impl_);  // docs/tasks.md#expiry
}

MCPCORE_DECL void server::cancel_tasks() noexcept {
  if (impl_->tasks) detail::stop_all_tasks(*impl_->tasks);
}

MCPCORE_DECL std::size_t server::running_tasks() const noexcept {
  if (!impl_->tasks) return 0;
  const std::lock_guard lock{impl_->tasks->mu};
  return impl_->tasks->live.size();
}
MCPCORE_DECL const std::vector<std::string>& server::warnings() const noexcept { return impl_->warnings; }
MCPCORE_DECL const server_info& server::info() const noexcept { return impl_->info; }

MCPCORE_DECL bool usable_progress_token(json::value token, std::size_t max_bytes) noexcept {
  if (token.is_string()) return token.as_string().size() <= max_bytes;
  return token.is_integer() && token.to_int64().has_value();
}

MCPCORE_DECL bool server::handle(const message& msg, const dispatch_context& ctx, std::string& out) {
  using namespace detail;
  auto& s = *impl_;
  if (msg.kind == message_kind::response) {
    handle_client_response(s, msg, ctx);
    return false;
  }
  if (msg.kind == message_kind::notification) {
    handle_notification(s, msg, ctx);
    return false;
  }
  MCPCORE_ASSERT(msg.id.has_value());
  if (ctx.envelope != nullptr) return handle_per_request(s, msg, ctx, out);
  const auto method = classify_method(msg.method);
  s.requests[static_cast<std::size_t>(method)].inc();
  if (s.switches.disabled()) {
    // docs/http.md#processing-order-on-the-mcp-path: deliberately bare (no error.data). The id is
    // echoed so that stdio clients can match it; the HTTP transport answers before parsing, with id
    // null.
    write_error_response(out, msg.id, errc::mcp_disabled, "MCP is disabled on this server", error_data{});
    return true;
  }
  request_env e{s, ctx, *msg.id, msg, out};
  switch (method) {
    case method_id::initialize: return handle_initialize(e);
    case method_id::ping: write_result_response(out, *msg.id, "{}"); return true;
    case method_id::tools_call: return handle_tools_call(e);
    case method_id::tools_list:
      return write_page(e, "tools", e.t->tools, list_kind::tools);
    case method_id::resources_list: return write_page(e, "resources", e.t->resources, list_kind::resources);
    case method_id::resources_templates_list:
      return write_page(e, "resourceTemplates", e.t->templates, list_kind::templates);
    case method_id::prompts_list: return write_page(e, "prompts", e.t->prompts, list_kind::prompts);
    case method_id::resources_read: return handle_resources_read(e);
    case method_id::resources_subscribe: return handle_subscription(e, true);
    case method_id::resources_unsubscribe: return handle_subscription(e, false);
    case method_id::prompts_get: return handle_prompts_get(e);
    case method_id::completion_complete: return handle_completion(e);
    case method_id::logging_set_level: return handle_set_level(e);
    case method_id::tasks_get:  // docs/tasks.md#methods: served while tasks are on
      if (s.tasks) return handle_tasks_get(e);
      break;
    case method_id::tasks_result:
      if (s.tasks) return handle_tasks_result(e);
      break;
    case method_id::tasks_list:
      if (s.tasks) return handle_tasks_list(e);
      break;
    case method_id::tasks_cancel:
      if (s.tasks) return handle_tasks_cancel(e);
      break;
    case method_id::tasks_update:  // the 2026-07-28 extension's
    case method_id::server_discover:       // the per-request era's own methods
    case method_id::subscriptions_listen:  // (docs/eras.md#methods)
    case method_id::other:
    case method_id::count: break;
  }
  const auto cid = s.mint_cid();
  write_error(e, errc::method_not_found, "Unknown method: " + echo_name(msg.method), cid.view(),
              "See the MCP specification (2025-11-25) for the methods a server offers.");
  return true;
}

MCPCORE_DECL std::vector<param_header> server::param_headers(std::string_view name) const {
  const auto t = impl_->tables();
  const auto it = t->tool_index.find(name);
  if (it == t->tool_index.end()) return {};
  return t->tools[it->second]->param_headers;
}

MCPCORE_DECL bool server::has_resource(std::string_view uri) const {
  return detail::find_resource(*impl_->tables(), uri).has_value();
}

MCPCORE_DECL const server_options& server::options() const noexcept { return impl_->options; }

MCPCORE_DECL void server::notify_resource_updated(std::string_view uri) noexcept {
  publish(server_event{server_event_kind::resource_updated, uri});
}

MCPCORE_DECL bool notify_resource_updated(peer& client, message_sink& sink, std::string_view uri) {
  if (!client.subscribed(uri)) return false;
  std::string out;
  write_notification(out, "notifications/resources/updated",
                     [&](json::writer& w) { w.begin_object().member("uri", uri).end_object(); });
  return sink.send(out);
}

MCPCORE_END_NAMESPACE

#endif  // MCPCORE_IMPL_SERVER_IPP
