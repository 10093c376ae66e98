// SPDX-License-Identifier: Apache-2.0
// The per-request era in the dispatch core (docs/eras.md): its method table (`server/discover`
// added; `initialize`, `ping`, `logging/setLevel` and the subscription methods unknown), the
// capability families a server without them answers -32601, and the one encoder that stamps
// every result with `resultType`, the cache fields where they belong, and the server's identity.
#ifndef MCPCORE_IMPL_PER_REQUEST_IPP
#define MCPCORE_IMPL_PER_REQUEST_IPP

#include <mcpcore/dispatch/server.hpp>

#include <mcpcore/dispatch/impl/call_state.ipp>
#include <mcpcore/dispatch/impl/input_required.ipp>
#include <mcpcore/dispatch/impl/server_methods.ipp>
#include <mcpcore/dispatch/impl/server_state.ipp>
#include <mcpcore/dispatch/impl/task_run.ipp>
#include <mcpcore/dispatch/impl/tools_call.ipp>
#include <mcpcore/wire/era.hpp>

#include <cstddef>
#include <string>
#include <string_view>

MCPCORE_BEGIN_NAMESPACE
namespace detail {

/// Whether the server has the family `m` belongs to: a method of a family the server does not
/// advertise is unknown in the per-request era (its `server/discover` does not list it).
inline bool per_request_family_served(const server::impl& srv, const tables& s, method_id m) noexcept {
  const bool all = srv.options.list_changed;  // families that may fill at run time are served empty
  switch (m) {
    case method_id::tools_list:
    case method_id::tools_call: return all || !s.tools.empty();
    case method_id::resources_list:
    case method_id::resources_templates_list:
    case method_id::resources_read: return all || !s.resources.empty() || !s.templates.empty();
    case method_id::prompts_list:
    case method_id::prompts_get: return all || !s.prompts.empty();
    case method_id::completion_complete: return s.has_completions;
    case method_id::server_discover: return true;
    // The tasks extension (docs/tasks.md#methods): tasks/result and tasks/list do not exist here.
    case method_id::tasks_get:
    case method_id::tasks_update:
    case method_id::tasks_cancel: return srv.tasks != nullptr;
    default: return false;  // handshake-era methods and unknown ones
  }
}

/// `server/discover`: the revisions served, the capabilities, the instructions
/// (docs/eras.md#server-discovery). The server's identity goes into `_meta` with every result.
inline bool handle_discover(request_env& e) {
  write_result_response(e.out, e.id, [&](json::writer& w) {
    w.begin_object().key("supportedVersions").begin_array();
    for (const std::string_view v : per_request_protocol_versions) w.value(v);
    w.end_array().raw_member("capabilities", e.t->per_request_capabilities_json);
    if (!e.s.info.instructions.empty()) w.member("instructions", e.s.info.instructions);
    w.end_object();
  });
  return true;
}

/// Appends the per-request era's result fields to the result object that ends `out`
/// (`{"jsonrpc":"2.0","id":..,"result":{..}}`, written compactly by the library): `resultType`,
/// then `ttlMs`/`cacheScope` when `cache` is set, then the server's `_meta`. No result the
/// library writes carries a `_meta` of its own.
inline void stamp_per_request_result(std::string& out, [[maybe_unused]] std::size_t start, const server::impl& s,
                                     const cache_hint* cache) {
  MCPCORE_ASSERT(out.size() >= start + 4 && out.back() == '}' && out[out.size() - 2] == '}');
  std::string tail;
  tail.reserve(64 + s.server_info_meta.size());
  if (out[out.size() - 3] != '{') tail += ',';
  tail += R"("resultType":"complete")";
  if (cache != nullptr) {
    tail += R"(,"ttlMs":)";
    tail += std::to_string(cache->ttl.count() < 0 ? 0 : cache->ttl.count());
    tail += cache->scope == cache_scope::shared ? R"(,"cacheScope":"public")" : R"(,"cacheScope":"private")";
  }
  tail += s.server_info_meta;
  out.insert(out.size() - 2, tail);
}

/// One request of the per-request era (`ctx.envelope` set).
inline bool handle_per_request(server::impl& s, const message& msg, const dispatch_context& ctx, std::string& out) {
  MCPCORE_ASSERT(msg.id.has_value());
  const auto method = classify_method(msg.method);
  s.requests[static_cast<std::size_t>(method)].inc();
  request_env e{s, ctx, *msg.id, msg, out};
  if (s.switches.disabled()) {
    write_error_response(out, msg.id, errc::mcp_disabled, "MCP is disabled on this server", error_data{});
    e.error = errc::mcp_disabled;
  } else if (!per_request_family_served(s, *e.t, method)) {
    // docs/eras.md#methods: removed methods, unknown ones and unadvertised families alike.
    const auto cid = s.mint_cid();
    write_error(e, errc::method_not_found, "Method not found: " + echo_name(msg.method), cid.view(),
                "Call server/discover for the capabilities this server offers in this protocol revision.");
  } else {
    const std::size_t start = out.size();
    const cache_hint* cache = nullptr;
    bool answered = true;
    switch (method) {
      case method_id::tools_call: answered = !read_input_round(e) || handle_tools_call(e); break;
      case method_id::tools_list:
        cache = &s.options.list_cache;
        answered = write_page(e, "tools", e.t->tools, list_kind::tools);
        break;
      case method_id::resources_list:
        cache = &s.options.list_cache;
        answered = write_page(e, "resources", e.t->resources, list_kind::resources);
        break;
      case method_id::resources_templates_list:
        cache = &s.options.list_cache;
        answered = write_page(e, "resourceTemplates", e.t->templates, list_kind::templates);
        break;
      case method_id::prompts_list:
        cache = &s.options.list_cache;
        answered = write_page(e, "prompts", e.t->prompts, list_kind::prompts);
        break;
      case method_id::resources_read:
        answered = !read_input_round(e) || handle_resources_read(e);
        cache = e.read_cache;  // found by the read, which matched the URI once
        break;
      case method_id::prompts_get: answered = !read_input_round(e) || handle_prompts_get(e); break;
      case method_id::completion_complete: answered = handle_completion(e); break;
      case method_id::server_discover:
        cache = &s.options.list_cache;
        answered = handle_discover(e);
        break;
      case method_id::tasks_get: answered = handle_tasks_get(e); break;
      case method_id::tasks_update: answered = handle_tasks_update(e); break;
      case method_id::tasks_cancel: answered = handle_tasks_cancel(e); break;
      default: MCPCORE_ASSERT(false); break;
    }
    if (!answered) return false;
    if (e.input_required || e.result_type_written) {
      out.insert(out.size() - 2, s.server_info_meta);  // no resultType "complete", no cache fields
    } else if (!e.error) {
      stamp_per_request_result(out, start, s, cache);
    }
  }
  if (ctx.report != nullptr) ctx.report->error = e.error;
  return true;
}

}  // namespace detail
MCPCORE_END_NAMESPACE

#endif  // MCPCORE_IMPL_PER_REQUEST_IPP
