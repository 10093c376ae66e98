// SPDX-License-Identifier: Apache-2.0
// The methods other than tools/call: initialize, the list methods (pagination with opaque
// cursors), resources, subscriptions, prompts, completion, and the client's notifications and
// responses.
#ifndef MCPCORE_IMPL_SERVER_METHODS_IPP
#define MCPCORE_IMPL_SERVER_METHODS_IPP

#include <mcpcore/dispatch/server.hpp>

#include <mcpcore/detail/ascii.hpp>
#include <mcpcore/dispatch/impl/call_state.ipp>
#include <mcpcore/dispatch/impl/input_required.ipp>
#include <mcpcore/dispatch/impl/peer.ipp>
#include <mcpcore/dispatch/impl/server_state.ipp>
#include <mcpcore/dispatch/impl/waiting_call.ipp>
#include <mcpcore/wire/error.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <array>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

MCPCORE_BEGIN_NAMESPACE

namespace detail {

// ---- initialize and the list methods ----------------------------------------------------------

// The MAC of a cursor: the offset, the list and the list's generation, under the server's salt.
// A cursor issued before the list changed is refused (docs/server.md#tables-that-change).
inline std::uint64_t cursor_mac(const server::impl& s, std::uint64_t offset, std::uint64_t kind,
                                std::uint64_t generation) noexcept {
  return mix64(s.cursor_salt ^ mix64(offset * 8 + kind) ^ mix64(~generation));
}

// Parses an opaque cursor; nullopt when it is not one this server issued for `kind` in `generation`.
inline std::optional<std::size_t> parse_cursor(const server::impl& s, json::value cursor, std::uint64_t kind,
                                               std::uint64_t generation, std::size_t size) {
  if (!cursor.is_string()) return std::nullopt;
  const auto text = cursor.as_string();
  const auto dash = text.find('-');
  if (dash == std::string_view::npos || dash == 0 || dash > 16 || text.size() - dash - 1 != 16) return std::nullopt;
  std::uint64_t offset = 0;
  for (char c : text.substr(0, dash)) {
    const int v = hex_value(c);
    if (v < 0 || (c >= 'A' && c <= 'F')) return std::nullopt;
    offset = offset * 16 + static_cast<std::uint64_t>(v);
  }
  std::uint64_t mac = 0;
  for (char c : text.substr(dash + 1)) {
    const int v = hex_value(c);
    if (v < 0 || (c >= 'A' && c <= 'F')) return std::nullopt;
    mac = mac * 16 + static_cast<std::uint64_t>(v);
  }
  if (mac != cursor_mac(s, offset, kind, generation)) return std::nullopt;
  if (offset == 0 || offset >= size) return std::nullopt;
  return static_cast<std::size_t>(offset);
}

inline std::string make_cursor(const server::impl& s, std::size_t offset, std::uint64_t kind,
                               std::uint64_t generation) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string c;
  const auto o = static_cast<std::uint64_t>(offset);
  for (int shift = 60; shift >= 0; shift -= 4) {
    const auto d = (o >> shift) & 0xFU;
    if (d != 0 || !c.empty() || shift == 0) c.push_back(digits[d]);
  }
  c.push_back('-');
  const std::uint64_t mac = cursor_mac(s, o, kind, generation);
  for (int shift = 60; shift >= 0; shift -= 4) c.push_back(digits[(mac >> shift) & 0xFU]);
  return c;
}

// Whether a list entry is hidden (`server::set_tool_enabled`, `set_prompt_enabled`).
template <class Entry>
bool entry_hidden(const Entry& entry) noexcept {
  if constexpr (requires { entry.hidden.load(); }) {
    return entry.hidden.load();
  } else {
    return false;
  }
}

// Writes one page of a list method (docs/design.md#other-methods: opaque cursor, configurable page
// size) from the request's tables.
template <class Items>
bool write_page(request_env& e, std::string_view key, const Items& items, list_kind which) {
  const auto kind = static_cast<std::uint64_t>(which);
  const std::uint64_t generation = e.t->generation[kind];
  std::size_t offset = 0;
  const auto cursor = e.msg.params["cursor"];
  if (cursor.exists()) {
    auto o = parse_cursor(e.s, cursor, kind, generation, items.size());
    if (!o) {
      const auto cid = e.s.mint_cid();
      write_error(e, errc::invalid_params, "Invalid cursor", cid.view(),
                  "Pass a nextCursor value from this server's previous answer unchanged, or omit cursor to "
                  "start from the first page.");
      return true;
    }
    offset = *o;
  }
  const std::size_t end = std::min(items.size(), offset + e.s.options.page_size);
  write_result_response(e.out, e.id, [&](json::writer& w) {
    w.begin_object().key(key).begin_array();
    for (std::size_t i = offset; i < end; ++i) {
      if (!entry_hidden(*items[i])) w.raw(items[i]->listing);
    }
    w.end_array();
    if (end < items.size()) w.member("nextCursor", make_cursor(e.s, end, kind, generation));
    w.end_object();
  });
  return true;
}

inline bool handle_initialize(request_env& e) {
  if (e.s.shutting_down.load()) {
    const auto cid = e.s.mint_cid();
    write_error(e, errc::shutting_down, "Server is shutting down", cid.view(),
                "Reconnect to another instance or retry after the server restarts.");
    return true;
  }
  const auto requested = e.msg.params["protocolVersion"];
  if (requested.exists() && !requested.is_string()) return bad_params(e, "params.protocolVersion must be a string");
  std::size_t chosen = 0;  // latest, for an unknown or absent revision (docs/design.md#other-methods)
  if (requested.is_string()) {
    for (std::size_t i = 0; i < std::size(supported_protocol_versions); ++i) {
      if (supported_protocol_versions[i] == requested.as_string()) chosen = i;
    }
  }
  const auto version = supported_protocol_versions[chosen];
  e.s.initialize_revision[chosen].inc();
  if (e.ctx.client != nullptr) {
    const auto caps = e.msg.params["capabilities"];
    auto& p = e.ctx.client->state();
    std::lock_guard lock{p.mu};
    p.version = std::string{version};
    p.caps.sampling = caps["sampling"].is_object();
    p.caps.elicitation = caps["elicitation"].is_object();
    p.caps.roots = caps["roots"].is_object();
  }
  write_result_response(e.out, e.id, [&](json::writer& w) {
    w.begin_object().member("protocolVersion", version).raw_member("capabilities", e.t->capabilities_json);
    w.key("serverInfo").begin_object().member("name", e.s.info.name).member("version", e.s.info.version);
    if (!e.s.info.title.empty()) w.member("title", e.s.info.title);
    w.end_object();
    if (!e.s.info.instructions.empty()) w.member("instructions", e.s.info.instructions);
    w.end_object();
  });
  return true;
}

// ---- resources ---------------------------------------------------------------------------------

struct resource_match {
  const compiled_resource* r = nullptr;
  uri_variables vars;
};

// `uri` in `s`: a fixed resource, else the first template that matches it.
inline std::optional<resource_match> find_resource(const tables& s, std::string_view uri) {
  if (auto it = s.resource_index.find(uri); it != s.resource_index.end()) {
    return resource_match{s.resources[it->second].get(), {}};
  }
  if (uri.size() > max_template_subject_bytes) return std::nullopt;
  for (const auto& tp : s.templates) {
    const compiled_resource& t = *tp;
    std::vector<std::pair<std::string, std::string>> raw;
    if (!match_template(t.parts, uri, raw)) continue;
    resource_match m{&t, {}};
    bool ok = true;
    for (auto& [k, v] : raw) {
      auto d = percent_decode(v);
      if (!d) {
        ok = false;
        break;
      }
      m.vars.items().emplace_back(std::move(k), std::move(*d));
    }
    if (ok) return m;
  }
  return std::nullopt;
}

inline bool resource_not_found(request_env& e, std::string_view uri) {
  const auto cid = e.s.mint_cid();
  const std::string message = "Resource not found: " + echo_name(uri);
  constexpr std::string_view hint =
      "Call resources/list and resources/templates/list for the resources this server offers.";
  if (e.ctx.envelope == nullptr) {
    write_error(e, errc::resource_not_found, message, cid.view(), hint);
    return true;
  }
  // The per-request era: -32602 naming the URI in `data.uri` (docs/eras.md#errors).
  std::string uri_json;
  json::writer{uri_json}.value(echo_name(uri));
  const std::array members{error_data_member{"uri", uri_json}};
  error_data d;
  d.correlation_id = cid.view();
  d.remediation = hint;
  d.members = members;
  write_error_response(e.out, e.id, errc::invalid_params, message, d);
  e.error = errc::invalid_params;
  return true;
}

// ---- governance of resources and prompts (docs/security.md#resources-and-prompts) ---------------

inline constexpr std::string_view resource_read_action = "mcp.resources/read";
inline constexpr std::string_view prompt_get_action = "mcp.prompts/get";

// What resources/read and prompts/get are audited under: the action, the target's type and id.
struct governed_target {
  std::string_view action;
  std::string_view type;
  std::string target;  // sanitised
};

// The kill switch (read-only mode refuses an operation that is not `read`) and the tier gate of a
// resource or prompt's security row. A refusal is answered (-32004, audited denied) and returns
// true. The tier policy's `allow_with_approval` refuses too: these methods have no approval flow.
inline bool governance_refused(request_env& e, const governed_target& g, std::string_view securable, operation op) {
  auto& s = e.s;
  std::string_view message;
  std::string_view remediation;
  std::string step_up_text;
  std::string detail;
  if (op != operation::read && s.switches.read_only()) {
    message = "MCP is in read-only mode";
    remediation = "Only reads are served while the server is in read-only mode; ask an operator to lift it.";
    detail = "read-only mode";
  } else if (s.policy->decide(e.ctx.caller.tier, securable, op) != tier_decision::allow) {
    message = "MCP tier does not allow this operation";
    remediation = "Use a token of a higher tier, or the host's REST API or dashboard.";
    detail = "tier=" + sanitize_audit_value(e.ctx.caller.tier);
    // docs/oauth.md#step-up: an OAuth principal is told the scope it lacks.
    if (const std::string_view scope = step_up_scope(e, securable, op, false); !scope.empty()) {
      message = step_up_message;
      step_up_text = step_up_remediation(scope);
      remediation = step_up_text;
      detail += " missing scope=" + sanitize_audit_value(scope);
    }
  } else {
    return false;
  }
  const auto cid = s.mint_cid();
  detail += " correlation_id=";
  detail += cid.view();
  const bool persisted = s.record(g.action, g.type, g.target, e.ctx.caller, audit_result::denied, detail, cid.view());
  write_error(e, errc::tier_denied, message, cid.view(), remediation, std::nullopt, persisted);
  return true;
}

inline void audit_governed(request_env& e, const governed_target& g, audit_result result, std::string_view detail) {
  (void)e.s.record(g.action, g.type, g.target, e.ctx.caller, result, detail, {});
}

inline bool handle_resources_read(request_env& e) {
  const auto uri = e.msg.params["uri"];
  if (!uri.is_string()) return bad_params(e, "resources/read needs params.uri (a string)");
  auto m = find_resource(*e.t, uri.as_string());
  if (!m) return resource_not_found(e, uri.as_string());
  const governed_target g{resource_read_action, "mcp_resource", sanitize_audit_value(uri.as_string())};
  if (governance_refused(e, g, m->r->def.securable, m->r->def.op)) return true;
  e.read_cache = m->r->def.cache ? &*m->r->def.cache : &e.s.options.read_cache;
  call_scope scope{e.ctx, e.id};
  scope.link(e.ctx.stop);
  call_state_impl state{e.s, e.ctx, e.id, e.msg.params["_meta"]["progressToken"], scope.token()};
  call_context cc{state};
  std::optional<resource_result> r;
  try {
    r = m->r->def.handler(cc, uri.as_string(), m->vars);
  } catch (...) {
    audit_governed(e, g, audit_result::failure, "handler exception");
    return internal_fault(e, "The resource could not be read");
  }
  if (scope.cancelled()) return false;
  if (!r) return resource_not_found(e, uri.as_string());
  audit_governed(e, g, audit_result::success, {});
  write_result_response(e.out, e.id, [&](json::writer& w) {
    w.begin_object().key("contents").begin_array();
    for (const auto& c : r->contents()) {
      w.begin_object().member("uri", c.primary());
      if (!c.mime_type().empty()) w.member("mimeType", c.mime_type());
      w.member(c.type() == content_block::kind::resource_blob ? "blob" : "text", c.resource_payload()).end_object();
    }
    w.end_array().end_object();
  });
  return true;
}

inline bool handle_subscription(request_env& e, bool subscribe) {
  const auto uri = e.msg.params["uri"];
  if (!uri.is_string()) return bad_params(e, "params.uri must be a string");
  if (!find_resource(*e.t, uri.as_string())) return resource_not_found(e, uri.as_string());
  if (e.ctx.client != nullptr) {
    auto& p = e.ctx.client->state();
    std::lock_guard lock{p.mu};
    if (subscribe) {
      if (p.subscriptions.size() >= e.s.options.max_subscriptions_per_peer &&
          p.subscriptions.find(uri.as_string()) == p.subscriptions.end()) {
        const auto cid = e.s.mint_cid();
        write_error(e, errc::invalid_params, "Subscription limit reached", cid.view(),
                    "Unsubscribe from resources you no longer watch before subscribing to more.");
        return true;
      }
      p.subscriptions.emplace(uri.as_string());
    } else if (auto it = p.subscriptions.find(uri.as_string()); it != p.subscriptions.end()) {
      p.subscriptions.erase(it);
    }
  }
  write_result_response(e.out, e.id, "{}");
  return true;
}

// ---- prompts ----------------------------------------------------------------------------------

inline std::string normalise_enum(const prompt_argument_def& a, std::string_view value) {
  const auto v = trim_blanks(value);
  for (const auto& allowed : a.enum_values) {
    if (ascii_iequals(allowed, v)) return allowed;
  }
  return a.enum_values.front();
}

// Reads a string-valued arguments object into `out`, normalising closed enums; false on a
// non-string value.
inline bool read_prompt_arguments(const prompt_def& p, json::value args, prompt_arguments& out) {
  if (!args.exists()) return true;
  if (!args.is_object()) return false;
  for (const auto& m : args.members()) {
    const auto v = m.value();
    if (!v.is_string()) return false;
    const auto it = std::find_if(p.arguments.begin(), p.arguments.end(),
                                 [&](const prompt_argument_def& a) { return a.name == m.key; });
    if (it == p.arguments.end()) continue;  // undeclared arguments never reach the handler
    out.items().emplace_back(it->name, it->enum_values.empty() ? std::string{v.as_string()}
                                                               : normalise_enum(*it, v.as_string()));
  }
  return true;
}

inline void write_content_message(json::writer& w, prompt_result::role r, const content_block& c) {
  w.begin_object().member("role", r == prompt_result::role::user ? "user" : "assistant").key("content");
  c.write(w);
  w.end_object();
}

// A prompt's rounds (docs/eras.md#the-handler-contract), for `drive_input_loop`.
class prompt_loop final : public input_loop {
 public:
  prompt_loop(const compiled_prompt& p, prompt_arguments args) : p_(p), args_(std::move(args)) {}
  prompt_loop(const prompt_loop&) = default;
  prompt_loop(prompt_loop&&) = default;
  prompt_loop& operator=(const prompt_loop&) = delete;
  prompt_loop& operator=(prompt_loop&&) = delete;
  ~prompt_loop() override = default;

  round_end run(request_env& e, call_scope& scope, std::optional<input_required>& ask) override {
    call_state_impl state{e.s, e.ctx, e.id, e.msg.params["_meta"]["progressToken"], scope.token()};
    state.round = &e.round;
    call_context cc{state};
    std::optional<prompt_result> r;
    const governed_target g{prompt_get_action, "mcp_prompt", p_.def.name};
    try {
      r.emplace(p_.def.handler(cc, args_));
    } catch (...) {
      audit_governed(e, g, audit_result::failure, "handler exception");
      return round_end_of(internal_fault(e, "The prompt could not be produced"));
    }
    if (scope.cancelled()) return round_end::no_answer;
    if (const input_required* ir = r->input()) {
      ask.emplace(*ir);
      return round_end::needs_input;
    }
    audit_governed(e, g, audit_result::success, {});
    write_result_response(e.out, e.id, [&](json::writer& w) {
      w.begin_object();
      if (!r->description().empty()) w.member("description", r->description());
      w.key("messages").begin_array();
      for (const auto& [role, content] : r->messages()) write_content_message(w, role, content);
      w.end_array().end_object();
    });
    return round_end::answered;
  }
  bool give_up(request_env& e, std::string_view why) override {
    return internal_fault(e, "The prompt needs input the client did not give: " + std::string{why});
  }
  bool cancelled(request_env& /*e*/) override { return false; }

 private:
  const compiled_prompt& p_;
  prompt_arguments args_;
};

inline bool handle_prompts_get(request_env& e) {
  const auto name = e.msg.params["name"];
  if (!name.is_string()) return bad_params(e, "prompts/get needs params.name (a string)");
  const auto it = e.t->prompt_index.find(name.as_string());
  if (it == e.t->prompt_index.end() || e.t->prompts[it->second]->hidden.load()) {
    const auto cid = e.s.mint_cid();
    write_error(e, errc::invalid_params, "Unknown prompt: " + echo_name(name.as_string()), cid.view(),
                "Call prompts/list for the prompts this server offers.");
    return true;
  }
  const compiled_prompt& p = *e.t->prompts[it->second];
  if (governance_refused(e, {prompt_get_action, "mcp_prompt", p.def.name}, p.def.securable, p.def.op)) return true;
  prompt_arguments args;
  if (!read_prompt_arguments(p.def, e.msg.params["arguments"], args)) {
    return bad_params(e, "params.arguments must be an object of string values");
  }
  for (const auto& a : p.def.arguments) {
    if (!a.required || args.find(a.name)) continue;
    if (!a.enum_values.empty()) {
      args.items().emplace_back(a.name, a.enum_values.front());
      continue;
    }
    const auto cid = e.s.mint_cid();
    write_error(e, errc::invalid_params, "Missing required argument: " + a.name, cid.view(),
                "Supply every argument prompts/list marks as required.");
    return true;
  }
  call_scope scope{e.ctx, e.id};
  scope.link(e.ctx.stop);
  prompt_loop loop{p, std::move(args)};
  return drive_input_loop(e, scope, loop);
}

// ---- completion --------------------------------------------------------------------------------

inline constexpr std::size_t max_completion_values = 100;

inline bool handle_completion(request_env& e) {
  const auto ref = e.msg.params["ref"];
  const auto arg = e.msg.params["argument"];
  if (!ref.is_object() || !ref["type"].is_string()) return bad_params(e, "completion/complete needs params.ref");
  if (!arg.is_object() || !arg["name"].is_string() || !arg["value"].is_string()) {
    return bad_params(e, "completion/complete needs params.argument {name, value} (strings)");
  }
  const auto arg_name = arg["name"].as_string();
  const auto value = arg["value"].as_string();
  const auto type = ref["type"].as_string();
  std::vector<std::string> values;
  const completer* fn = nullptr;
  const prompt_argument_def* enum_arg = nullptr;
  const prompt_def* prompt = nullptr;
  if (type == "ref/prompt") {
    if (!ref["name"].is_string()) return bad_params(e, "params.ref.name must be a string");
    const auto it = e.t->prompt_index.find(ref["name"].as_string());
    if (it == e.t->prompt_index.end()) {
      const auto cid = e.s.mint_cid();
      write_error(e, errc::invalid_params, "Unknown prompt: " + echo_name(ref["name"].as_string()), cid.view(),
                  "Call prompts/list for the prompts this server offers.");
      return true;
    }
    prompt = &e.t->prompts[it->second]->def;
    for (const auto& a : prompt->arguments) {
      if (a.name != arg_name) continue;
      if (a.complete) fn = &a.complete;
      if (!a.enum_values.empty()) enum_arg = &a;
    }
  } else if (type == "ref/resource") {
    if (!ref["uri"].is_string()) return bad_params(e, "params.ref.uri must be a string");
    const auto uri = ref["uri"].as_string();
    const compiled_resource* found = nullptr;
    for (const auto& t : e.t->templates) {
      if (t->def.uri == uri) found = t.get();
    }
    if (found == nullptr) {
      if (auto it = e.t->resource_index.find(uri); it != e.t->resource_index.end()) {
        found = e.t->resources[it->second].get();
      }
    }
    if (found == nullptr) return resource_not_found(e, uri);
    for (const auto& [var, c] : found->def.completers) {
      if (var == arg_name) fn = &c;
    }
  } else {
    return bad_params(e, "params.ref.type must be ref/prompt or ref/resource");
  }
  prompt_arguments context;
  if (prompt != nullptr && !read_prompt_arguments(*prompt, e.msg.params["context"]["arguments"], context)) {
    return bad_params(e, "params.context.arguments must be an object of string values");
  }
  if (fn != nullptr) {
    try {
      values = (*fn)(value, context);
    } catch (...) {
      return internal_fault(e, "Completion failed");
    }
  } else if (enum_arg != nullptr) {
    for (const auto& v : enum_arg->enum_values) {
      if (v.size() >= value.size() && ascii_iequals(std::string_view{v}.substr(0, value.size()), value)) values.push_back(v);
    }
  }
  write_result_response(e.out, e.id, [&](json::writer& w) {
    w.begin_object().key("completion").begin_object().key("values").begin_array();
    for (std::size_t i = 0; i < values.size() && i < max_completion_values; ++i) w.value(values[i]);
    w.end_array().member("total", values.size()).member("hasMore", values.size() > max_completion_values);
    w.end_object().end_object();
  });
  return true;
}

// ---- logging ---------------------------------------------------------------------------------

inline bool handle_set_level(request_env& e) {
  const auto level = e.msg.params["level"];
  const auto parsed = level.is_string() ? parse_log_level(level.as_string()) : std::nullopt;
  if (!parsed) {
    return bad_params(e, "params.level must be one of debug, info, notice, warning, error, critical, alert, "
                         "emergency");
  }
  if (e.ctx.client != nullptr) e.ctx.client->state().level.store(static_cast<int>(*parsed));
  write_result_response(e.out, e.id, "{}");
  return true;
}

// ---- notifications and client responses --------------------------------------------------------

inline void handle_notification(server::impl& s, const message& msg, const dispatch_context& ctx) {
  if (msg.method == "notifications/initialized") {
    if (ctx.client != nullptr) ctx.client->state().initialized.store(true);
    return;
  }
  if (msg.method == "notifications/cancelled") {
    const auto rid = msg.params["requestId"];
    bool hit = false;
    if (ctx.client != nullptr && (rid.is_string() || rid.is_integer())) {
      std::optional<request_id_view> id;
      if (rid.is_string()) {
        id.emplace(rid.as_string());
      } else if (auto n = rid.to_int64()) {
        id.emplace(*n);
      }
      if (id) {
        auto& p = ctx.client->state();
        std::stop_source target{std::nostopstate};
        {
          std::lock_guard lock{p.mu};
          if (auto it = p.in_flight.find(request_id{*id}); it != p.in_flight.end()) target = it->second;
        }
        // Outside the peer's lock: a call waiting without a thread resumes on a stop, and takes it.
        hit = target.stop_possible();
        (void)target.request_stop();
      }
    }
    (hit ? s.cancel_accepted : s.cancel_noop).inc();
    return;
  }
  // notifications/progress and notifications/roots/list_changed from the client, and unknown
  // notifications, need no action (MCP: notifications are never answered).
}

inline void handle_client_response(server::impl& s, const message& msg, const dispatch_context& ctx) {
  if (ctx.client == nullptr || !msg.id || !msg.id->is_integer()) {
    s.unmatched_responses.inc();
    return;
  }
  auto& p = ctx.client->state();
  std::shared_ptr<peer::impl::waiter> w;
  {
    std::lock_guard lock{p.mu};
    auto it = p.pending.find(msg.id->as_integer());
    if (it == p.pending.end()) {
      s.unmatched_responses.inc();
      return;
    }
    w = std::move(it->second);
    p.pending.erase(it);
  }
  // The reply outlives the transport's document: copy it into a document of its own.
  std::string text;
  json::writer tw{text};
  tw.value(msg.root);
  json::document doc;
  if (!doc.parse(text)) {
    peer::impl::finish(*w, client_request_errc::closed, nullptr);
    return;
  }
  client_reply reply{std::move(doc), msg.error.exists()};
  peer::impl::finish(*w, {}, &reply);
}

}  // namespace detail

MCPCORE_END_NAMESPACE

#endif  // MCPCORE_IMPL_SERVER_METHODS_IPP
