// SPDX-License-Identifier: Apache-2.0
// server_builder: the declaration tables, one validator per declaration kind
// (docs/design.md#registration-validation), the listings, metric binding and `build`.
#ifndef MCPCORE_IMPL_SERVER_BUILDER_IPP
#define MCPCORE_IMPL_SERVER_BUILDER_IPP

#include <mcpcore/dispatch/server.hpp>

#include <mcpcore/detail/ascii.hpp>
#include <mcpcore/detail/random.hpp>
#include <mcpcore/dispatch/impl/server_state.ipp>
#include <mcpcore/dispatch/impl/task_engine.ipp>
#include <mcpcore/dispatch/schema.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

MCPCORE_BEGIN_NAMESPACE

MCPCORE_DECL server_builder::server_builder(server_info info, server_options options)
    : s_(new detail::builder_state) {
  s_->info = std::move(info);
  s_->options = std::move(options);
}
MCPCORE_DECL server_builder::~server_builder() { delete s_; }
MCPCORE_DECL server_builder::server_builder(server_builder&& o) noexcept : s_(std::exchange(o.s_, nullptr)) {}
MCPCORE_DECL server_builder& server_builder::operator=(server_builder&& o) noexcept {
  if (this != &o) {
    delete s_;
    s_ = std::exchange(o.s_, nullptr);
  }
  return *this;
}

MCPCORE_DECL tool_builder server_builder::tool(std::string name) {
  auto& d = s_->tools.emplace_back();
  d.name = std::move(name);
  return tool_builder{d};
}
MCPCORE_DECL resource_builder server_builder::resource(std::string uri) {
  auto& d = s_->resources.emplace_back();
  d.uri = std::move(uri);
  return resource_builder{d};
}
MCPCORE_DECL resource_builder server_builder::resource_template(std::string uri_template) {
  auto& d = s_->resources.emplace_back();
  d.uri = std::move(uri_template);
  d.is_template = true;
  return resource_builder{d};
}
MCPCORE_DECL prompt_builder server_builder::prompt(std::string name) {
  auto& d = s_->prompts.emplace_back();
  d.name = std::move(name);
  return prompt_builder{d};
}
MCPCORE_DECL server_builder& server_builder::securables(std::vector<std::string> names) {
  s_->securables = std::move(names);
  return *this;
}
MCPCORE_DECL server_builder& server_builder::oauth_scopes(scope_map scopes) {
  s_->scopes = std::move(scopes);
  return *this;
}
MCPCORE_DECL server_builder& server_builder::approvals(approval_service& service) {
  s_->approvals = &service;
  return *this;
}
MCPCORE_DECL server_builder& server_builder::approval_tools(std::string securable) {
  auto declare = [&](std::string name, detail::builtin_tool kind, std::string description, std::string schema) {
    auto& d = s_->tools.emplace_back();
    d.name = std::move(name);
    d.description = std::move(description);
    d.input_schema = std::move(schema);
    d.securable = securable;
    d.op = operation::approve;
    // Approving arms a live one-time capability: destructive and not idempotent
    // (docs/approvals.md#the-approver-tools).
    d.effect = tool_effect::destructive;
    d.idempotent = false;
    d.builtin = kind;
  };
  declare("approve_request", detail::builtin_tool::approve_request,
          "Approve a pending approval request so its submitter can run the operation once. Only a person "
          "signed in interactively with strong authentication may approve, and never their own request.",
          R"({"type":"object","properties":{"approval_id":{"type":"string","pattern":"^[0-9a-f]{32}$",)"
          R"("description":"The id of the pending approval request"}},"required":["approval_id"],)"
          R"("additionalProperties":false})");
  declare("reject_request", detail::builtin_tool::reject_request,
          "Reject a pending approval request. Only a person signed in interactively with strong authentication "
          "may reject, and never their own request.",
          R"({"type":"object","properties":{"approval_id":{"type":"string","pattern":"^[0-9a-f]{32}$",)"
          R"("description":"The id of the pending approval request"},"comment":{"type":"string",)"
          R"("description":"Why the request is rejected"}},"required":["approval_id"],"additionalProperties":false})");
  return *this;
}
MCPCORE_DECL void server_builder::set_policy(detail::policy_base* p) { s_->policy.reset(p); }
MCPCORE_DECL void server_builder::set_authorizer(detail::authorizer_base* a) { s_->authz.reset(a); }
MCPCORE_DECL void server_builder::set_audit(detail::audit_base* a) { s_->audit.reset(a); }
MCPCORE_DECL void server_builder::set_metrics(detail::metrics_binding b) { s_->metrics = std::move(b); }
MCPCORE_DECL void server_builder::set_clock(detail::clock_base* c) { s_->clock.reset(c); }
MCPCORE_DECL void server_builder::set_tasks(detail::task_store_base* store, task_options options) {
  s_->task_store.reset(store);
  s_->task_opts = options;
}

namespace detail {

inline void write_annotations(json::writer& w, const tool_def& d) {
  const tool_effect e = d.effect.value_or(tool_effect::destructive);
  const bool idempotent = d.effect ? d.idempotent : false;
  w.key("annotations").begin_object();
  if (!d.title.empty()) w.member("title", d.title);
  w.member("readOnlyHint", e == tool_effect::read_only)
      .member("destructiveHint", e == tool_effect::destructive)
      .member("idempotentHint", idempotent)
      .member("openWorldHint", false)
      .end_object();
}

// `tasks`: the server runs tasks, so a tool that may run as one says so (`execution.taskSupport`,
// docs/tasks.md#task-support).
inline std::string render_tool(const tool_def& d, bool tasks) {
  std::string s;
  json::writer w{s};
  w.begin_object().member("name", d.name);
  if (!d.title.empty()) w.member("title", d.title);
  w.member("description", d.description).raw_member("inputSchema", d.input_schema);
  if (!d.output_schema.empty()) w.raw_member("outputSchema", d.output_schema);
  write_annotations(w, d);
  if (tasks && d.tasks != task_support::forbidden) {
    w.key("execution").begin_object();
    w.member("taskSupport", d.tasks == task_support::required ? "required" : "optional").end_object();
  }
  w.end_object();
  return s;
}

inline std::string render_resource(const resource_def& d) {
  std::string s;
  json::writer w{s};
  w.begin_object().member(d.is_template ? "uriTemplate" : "uri", d.uri).member("name", d.name);
  if (!d.title.empty()) w.member("title", d.title);
  if (!d.description.empty()) w.member("description", d.description);
  if (!d.mime_type.empty()) w.member("mimeType", d.mime_type);
  w.end_object();
  return s;
}

inline std::string render_prompt(const prompt_def& d) {
  std::string s;
  json::writer w{s};
  w.begin_object().member("name", d.name);
  if (!d.title.empty()) w.member("title", d.title);
  if (!d.description.empty()) w.member("description", d.description);
  if (!d.arguments.empty()) {
    w.key("arguments").begin_array();
    for (const auto& a : d.arguments) {
      w.begin_object().member("name", a.name);
      if (!a.description.empty()) w.member("description", a.description);
      w.member("required", a.required).end_object();
    }
    w.end_array();
  }
  w.end_object();
  return s;
}

// ---- validation: one validator per declaration kind (docs/design.md#registration-validation) --

// The offences of one build, each one sentence naming its subject (sorted at the end).
using offence_list = std::vector<std::string>;

inline constexpr std::string_view name_rule = ": name must be 1-128 characters of A-Z a-z 0-9 _ - .";

// server_info and server_options.
inline void validate_settings(const builder_state& st, offence_list& out) {
  if (st.info.name.empty()) out.emplace_back("server_info.name is empty");
  if (st.info.version.empty()) out.emplace_back("server_info.version is empty");
  if (st.options.page_size == 0) out.emplace_back("server_options.page_size is 0");
  if (!st.options.request_state_key.empty() && st.options.request_state_key.size() < min_request_state_key_bytes) {
    out.emplace_back("server_options.request_state_key is shorter than 32 bytes");
  }
  if (st.options.request_state_lifetime.count() <= 0) {
    out.emplace_back("server_options.request_state_lifetime is not positive");
  }
  if (st.task_store) {  // docs/tasks.md#limits
    const task_options& t = st.task_opts;
    if (t.max_per_principal == 0) out.emplace_back("task_options.max_per_principal is 0");
    if (t.max_total == 0) out.emplace_back("task_options.max_total is 0");
    if (t.min_ttl.count() <= 0) out.emplace_back("task_options.min_ttl is not positive");
    if (t.max_ttl < t.min_ttl) out.emplace_back("task_options.max_ttl is shorter than task_options.min_ttl");
    if (t.poll_interval.count() <= 0) out.emplace_back("task_options.poll_interval is not positive");
    if (t.max_result_bytes == 0) out.emplace_back("task_options.max_result_bytes is 0");
    if (t.sweep_interval.count() <= 0) out.emplace_back("task_options.sweep_interval is not positive");
  }
}

// What a registration is checked against: the build's plug-ins and settings, kept by the server
// for the registrations of run time (docs/server.md#tables-that-change).
struct registration_rules {
  const server_options& options;
  const std::optional<std::vector<std::string>>& securables;
  const policy_base& policy;
  const approval_service* approvals;
  bool tasks = false;  // the task engine is on (docs/tasks.md)
};

// A tool's name, description, handler and security row.
inline void check_tool_row(const tool_def& d, const registration_rules& st, const std::string& subject,
                           std::set<std::string, std::less<>>& names, offence_list& out) {
  if (!valid_tool_name(d.name)) out.push_back(subject + std::string{name_rule});
  if (!names.insert(d.name).second) out.push_back(subject + ": declared twice");
  if (d.description.empty()) out.push_back(subject + ": has no description");
  if (!d.handler && d.builtin == builtin_tool::none) out.push_back(subject + ": has no handler");
  if (d.builtin != builtin_tool::none && st.approvals == nullptr) {
    out.push_back(subject + ": approver tools need an approval service (server_builder::approvals)");
  }
  if (d.securable.empty()) out.push_back(subject + ": has no security row (securable, operation)");
  if (!d.op) {
    // security(securable, name) with a name outside the catalogue leaves `op` empty
    if (!d.operation_name.empty()) {
      out.push_back(subject + ": operation '" + echo_name(d.operation_name) +
                    "' is outside the catalogue {Read, Write, Execute, Delete, Approve, Push, Attest, Rotate}");
    } else if (!d.securable.empty()) {
      out.push_back(subject + ": has no operation");
    }
  }
  if (st.securables && !d.securable.empty() &&
      std::find(st.securables->begin(), st.securables->end(), d.securable) == st.securables->end()) {
    out.push_back(subject + ": securable '" + echo_name(d.securable) + "' is outside the catalogue");
  }
}

// Output schemas describe what the host's own handler returns: they are compiled with plain
// JSON Schema semantics, without the registration lints input schemas get (docs/schema.md#two-modes).
inline schema::compile_options output_schema_options() noexcept {
  schema::compile_options o;
  o.strict = false;
  return o;
}

// Compiles the input schema and the output schema (into `output`, when declared).
inline result<schema::compiled_schema, std::vector<schema::compile_error>> check_tool_schemas(
    tool_def& d, const std::string& subject, offence_list& out, schema::compiled_schema& output) {
  d.input_schema = std::string{trim_blanks(d.input_schema)};
  d.output_schema = std::string{trim_blanks(d.output_schema)};
  auto compiled = schema::compiled_schema::compile(d.input_schema);
  if (!compiled) {
    for (const auto& e : compiled.error()) {
      out.push_back(subject + ": input schema " + (e.path.empty() ? std::string{"(root)"} : e.path) + ": " + e.message);
    }
  }
  if (!d.output_schema.empty()) {
    json::document od;
    auto root = od.parse(d.output_schema);
    if (!root || !root->is_object() || !(*root)["type"].is_string() || (*root)["type"].as_string() != "object") {
      out.push_back(subject + R"(: output schema must be a JSON object schema with "type":"object")");
    } else if (auto o = schema::compiled_schema::compile(*root, output_schema_options())) {
      output = std::move(*o);
    } else {
      for (const auto& e : o.error()) {
        out.push_back(subject + ": output schema " + (e.path.empty() ? std::string{"(root)"} : e.path) + ": " +
                      e.message);
      }
    }
  }
  return compiled;
}

// Whether some tier of `policy_tiers` routes the tool through approval; a gated tool must be able
// to receive `approval_id`, and an approver tool cannot itself be gated.
inline bool check_tool_gating(const tool_def& d, const registration_rules& st, const schema::compiled_schema* compiled,
                              const std::string& subject, offence_list& out) {
  bool gated = false;
  if (compiled != nullptr && d.op && !d.securable.empty()) {
    for (const auto& tier : st.options.policy_tiers) {
      gated = gated || st.policy.decide(tier, d.securable, *d.op) == tier_decision::allow_with_approval;
    }
    if (gated && compiled->root_is_closed() && !compiled->root_declares("approval_id")) {
      out.push_back(subject + ": is approval-gated and its closed input schema does not declare 'approval_id'");
    }
  }
  if (gated && d.builtin != builtin_tool::none) {
    out.push_back(subject + ": the tier policy routes it through approval, but an approver tool cannot itself "
                            "require approval");
  }
  return gated;
}

// ---- Mcp-Param-* headers (docs/eras.md#headers) ---------------------------------------------------

/// Whether `s` is an RFC 9110 token (a header name).
inline bool is_http_token(std::string_view s) noexcept {
  constexpr std::string_view extra = "!#$%&'*+-.^_`|~";
  return !s.empty() && std::all_of(s.begin(), s.end(), [&](char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           extra.find(c) != std::string_view::npos;
  });
}

/// Collects the `x-mcp-header` properties of an input schema: a property reached from the root
/// through `properties` alone, of type string, integer or boolean, with a token name unique
/// ignoring case. An annotation anywhere else (under `items`, a combinator, `$defs`, the root
/// itself) or of another type is an offence.
class param_header_scan {
 public:
  param_header_scan(const std::string& subject, offence_list& out) : subject_(subject), out_(out) {}

  std::vector<param_header> run(json::value root) {
    walk(root, true, {});
    return std::move(found_);
  }

 private:
  void walk(json::value schema, bool reachable, const std::vector<std::string>& path) {
    if (!schema.is_object()) return;
    for (json::member m : schema.members()) {
      const json::value v = m.value();
      if (m.key == "x-mcp-header") {
        declare(schema, v, reachable && !path.empty(), path);
      } else if (m.key == "properties" && v.is_object()) {
        for (json::member p : v.members()) {
          std::vector<std::string> child = path;
          child.emplace_back(p.key);
          walk(p.value(), reachable, child);
        }
      } else if (v.is_object() || v.is_array()) {
        walk_any(v);  // anything below another keyword is unreachable for a header
      }
    }
  }
  void walk_any(json::value v) {
    if (v.is_array()) {
      for (json::value e : v.elements()) walk_any(e);
    } else if (v.is_object()) {
      walk(v, false, {});
    }
  }
  void declare(json::value schema, json::value name, bool reachable, const std::vector<std::string>& path) {
    const std::string where = subject_ + ": x-mcp-header";
    if (!reachable) {
      out_.push_back(where + " is only allowed on a property reached through 'properties' from the root");
      return;
    }
    if (!name.is_string() || !is_http_token(name.as_string())) {
      out_.push_back(where + " of '" + echo_name(path.back()) + "' must be a header-name token");
      return;
    }
    const json::value type = schema["type"];
    param_header h;
    h.name = std::string{name.as_string()};
    h.path = path;
    if (type.is_string() && type.as_string() == "string") {
      h.type = param_header::value_type::string;
    } else if (type.is_string() && type.as_string() == "integer") {
      h.type = param_header::value_type::integer;
    } else if (type.is_string() && type.as_string() == "boolean") {
      h.type = param_header::value_type::boolean;
    } else {
      out_.push_back(where + " of '" + echo_name(path.back()) + "' needs type string, integer or boolean");
      return;
    }
    for (const auto& f : found_) {
      if (ascii_iequals(f.name, h.name)) {
        out_.push_back(where + " '" + echo_name(h.name) + "' is declared twice");
        return;
      }
    }
    found_.push_back(std::move(h));
  }

  const std::string& subject_;
  offence_list& out_;
  std::vector<param_header> found_;
};

inline std::vector<param_header> scan_param_headers(const std::string& input_schema, const std::string& subject,
                                                    offence_list& out) {
  json::document doc;
  const auto root = doc.parse(input_schema);
  if (!root) return {};  // the schema compiler reports it
  return param_header_scan{subject, out}.run(*root);
}

// A tool; compiled while the registration has no offence so far (null otherwise).
inline std::shared_ptr<compiled_tool> validate_tool(tool_def& d, const registration_rules& st,
                                                    std::set<std::string, std::less<>>& names,
                                                    std::vector<std::string>& warnings, offence_list& out) {
  const std::string subject = "tool '" + echo_name(d.name) + "'";
  check_tool_row(d, st, subject, names, out);
  schema::compiled_schema output;
  auto compiled = check_tool_schemas(d, subject, out, output);
  if (!d.effect) {
    warnings.push_back(subject + " is unclassified; annotated readOnly=false, destructive=true, idempotent=false");
  }
  const bool gated = check_tool_gating(d, st, compiled ? &*compiled : nullptr, subject, out);
  std::vector<param_header> headers = scan_param_headers(d.input_schema, subject, out);
  // A build without offences has a compiled schema and an operation (the checks above say so).
  if (!out.empty() || !compiled || !d.op) return nullptr;
  auto made = std::make_shared<compiled_tool>();
  compiled_tool& t = *made;
  t.param_headers = std::move(headers);
  t.input = std::move(*compiled);
  t.has_output_schema = !d.output_schema.empty();
  t.output = std::move(output);
  t.op = *d.op;
  t.listing = render_tool(d, st.tasks);
  t.action = "mcp." + d.name;
  t.gated = gated;
  t.def = std::move(d);
  return made;
}

// A completer naming a variable `parts` lacks.
inline void check_completers(const resource_def& d, const std::vector<template_part>& parts,
                             const std::string& subject, offence_list& out) {
  for (const auto& [var, c] : d.completers) {
    const bool known = std::any_of(parts.begin(), parts.end(),
                                   [&](const template_part& tp) { return tp.is_variable && tp.text == var; });
    if (!known) out.push_back(subject + ": completion for unknown variable '" + echo_name(var) + "'");
  }
}

// A fixed resource: no '{' in its URI, and no completer (it has no variables).
inline void check_fixed_resource(const resource_def& d, const std::string& subject, offence_list& out) {
  if (d.uri.find('{') != std::string::npos) {
    out.push_back(subject + ": a fixed URI contains '{' (declare it with resource_template)");
  }
  check_completers(d, {}, subject, out);
}

// A resource template: RFC 6570 level 1; its completers name its variables.
inline std::vector<template_part> check_resource_template(const resource_def& d, const std::string& subject,
                                                          offence_list& out) {
  std::string why;
  auto parts = parse_uri_template(d.uri, why);
  if (!parts) {
    out.push_back(subject + ": " + why);
    return {};
  }
  check_completers(d, *parts, subject, out);
  return std::move(*parts);
}

// A resource or resource template (one URI namespace for both); compiled while the registration
// has no offence so far (null otherwise).
inline std::shared_ptr<const compiled_resource> validate_resource(resource_def& d,
                                                                  std::set<std::string, std::less<>>& uris,
                                                                  offence_list& out) {
  const std::string subject =
      std::string{d.is_template ? "resource template '" : "resource '"} + echo_name(d.uri) + "'";
  if (d.uri.empty()) out.push_back(subject + ": has no URI");
  if (!uris.insert(d.uri).second) out.push_back(subject + ": declared twice");
  if (d.name.empty()) out.push_back(subject + ": has no name");
  if (!d.handler) out.push_back(subject + ": has no handler");
  std::vector<template_part> parts;
  if (d.is_template) {
    parts = check_resource_template(d, subject, out);
  } else {
    check_fixed_resource(d, subject, out);
  }
  if (!out.empty()) return nullptr;
  auto r = std::make_shared<compiled_resource>();
  r->parts = std::move(parts);
  r->listing = render_resource(d);
  r->def = std::move(d);
  return r;
}

// A prompt and its arguments; compiled while the registration has no offence so far (null
// otherwise).
inline std::shared_ptr<const compiled_prompt> validate_prompt(prompt_def& d, std::set<std::string, std::less<>>& names,
                                                              offence_list& out) {
  const std::string subject = "prompt '" + echo_name(d.name) + "'";
  if (!valid_tool_name(d.name)) out.push_back(subject + std::string{name_rule});
  if (!names.insert(d.name).second) out.push_back(subject + ": declared twice");
  if (!d.handler) out.push_back(subject + ": has no handler");
  std::set<std::string, std::less<>> args;
  for (const auto& a : d.arguments) {
    if (a.name.empty()) out.push_back(subject + ": an argument has no name");
    if (!args.insert(a.name).second) out.push_back(subject + ": argument '" + echo_name(a.name) + "' declared twice");
    std::set<std::string, std::less<>> values;
    for (const auto& v : a.enum_values) {
      if (!values.insert(v).second) {
        out.push_back(subject + ": argument '" + a.name + "' repeats value '" + echo_name(v) + "'");
      }
    }
  }
  if (!out.empty()) return nullptr;
  auto p = std::make_shared<compiled_prompt>();
  p->listing = render_prompt(d);
  p->def = std::move(d);
  return p;
}

// ---- metrics and capabilities ------------------------------------------------------------------

// The server-wide series, pre-seeded at zero (docs/metrics.md#names-and-registration).
inline void bind_server_metrics(server::impl& impl, const metrics_binding& m) {
  for (std::size_t i = 0; i < static_cast<std::size_t>(method_id::count); ++i) {
    const metric_label l[] = {{"method", method_names[i]}};
    impl.requests[i] = m.make_counter("mcp_requests_total", "JSON-RPC requests received, by method", l);
  }
  for (std::size_t i = 0; i < std::size(supported_protocol_versions); ++i) {
    const metric_label l[] = {{"revision", supported_protocol_versions[i]}};
    impl.initialize_revision[i] = m.make_counter(
        "mcp_initialize_protocol_total", "initialize handshakes by negotiated protocol revision", l);
  }
  const std::string_view cancel_help = "notifications/cancelled outcomes";
  const metric_label acc[] = {{"outcome", "accepted"}};
  const metric_label det[] = {{"outcome", "detached"}};
  const metric_label noop[] = {{"outcome", "noop"}};
  impl.cancel_accepted = m.make_counter("mcp_cancel_notifications_total", cancel_help, acc);
  impl.cancel_detached = m.make_counter("mcp_cancel_notifications_total", cancel_help, det);
  impl.cancel_noop = m.make_counter("mcp_cancel_notifications_total", cancel_help, noop);
  impl.tool_unknown = m.make_counter("mcp_tool_unknown_total", "tools/call naming no registered tool", {});
  impl.security_misconfig = m.make_counter(
      "mcp_tool_security_misconfig_total", "served tool without a security row (refused at build, so 0)", {});
  impl.unmatched_responses = m.make_counter(
      "mcp_client_responses_unmatched_total", "client responses for no outstanding server request", {});
  impl.audit_failures = m.make_counter("mcp_audit_write_failures_total", "audit rows that were not persisted", {});
  impl.handler_exceptions = m.make_counter(
      "mcp_handler_exceptions_total", "handlers that threw (answered -32603)", {});
}

// The task engine's series (docs/metrics.md#tasks).
inline void bind_task_metrics(task_engine& g, const metrics_binding& m) {
  g.m.created = m.make_counter("mcp_tasks_created_total", "tasks created", {});
  for (std::size_t i = 0; i < std::size(task_terminals); ++i) {
    const metric_label l[] = {{"status", to_string(task_terminals[i])}};
    g.m.finished[i] = m.make_counter("mcp_tasks_finished_total", "tasks that ended, by terminal status", l);
  }
  for (std::size_t i = 0; i < static_cast<std::size_t>(task_refusal::count); ++i) {
    const metric_label l[] = {{"reason", task_refusal_names[i]}};
    g.m.refused[i] = m.make_counter("mcp_tasks_refused_total", "task creations refused, by reason", l);
  }
  g.m.running = m.make_gauge("mcp_tasks_running", "tasks whose work runs in this process", {});
}

// The approval series of a gated tool (docs/metrics.md#names-and-registration).
inline void bind_approval_metrics(compiled_tool& t, const metrics_binding& m) {
  const metric_label l[] = {{"tool", t.def.name}};
  auto& a = t.approval;
  a.refused = m.make_counter("mcp_approval_refused_total", "approval recalls refused (no reason label)", l);
  a.masked = m.make_counter("mcp_approval_masked_denials_total",
                            "approval refusals with the origin/submitter binding unevaluated", l);
  a.precondition = m.make_counter("mcp_approval_precondition_denied_total",
                                  "approval recalls declined by a pre-consume precondition (ticket intact)", l);
  const std::string_view burned_help = "approval tickets consumed by a request that still failed";
  const metric_label rejected[] = {{"tool", t.def.name}, {"reason", "handler_reject"}};
  const metric_label cancelled[] = {{"tool", t.def.name}, {"reason", "cancelled"}};
  a.burned_rejected = m.make_counter("mcp_approval_burned_total", burned_help, rejected);
  a.burned_cancelled = m.make_counter("mcp_approval_burned_total", burned_help, cancelled);
  const std::string_view tickets_help = "approval tickets minted, deduplicated and consumed";
  const metric_label minted[] = {{"tool", t.def.name}, {"outcome", "minted"}};
  const metric_label deduped[] = {{"tool", t.def.name}, {"outcome", "deduped"}};
  const metric_label consumed[] = {{"tool", t.def.name}, {"outcome", "consumed"}};
  a.minted = m.make_counter("mcp_approval_tickets_total", tickets_help, minted);
  a.deduped = m.make_counter("mcp_approval_tickets_total", tickets_help, deduped);
  a.consumed = m.make_counter("mcp_approval_tickets_total", tickets_help, consumed);
}

// The series of one tool.
inline void bind_tool_metrics(compiled_tool& t, const metrics_binding& m) {
  for (std::size_t i = 0; i < static_cast<std::size_t>(call_outcome::count); ++i) {
    const metric_label l[] = {{"tool", t.def.name}, {"result", call_outcome_names[i]}};
    t.outcomes[i] = m.make_counter("mcp_tool_calls_total", "tools/call outcomes by tool", l);
  }
  const metric_label l[] = {{"tool", t.def.name}};
  t.args_invalid = m.make_counter("mcp_tool_args_invalid_total",
                                  "tools/call refused by input-schema validation, by tool", l);
  t.output_invalid = m.make_counter("mcp_tool_output_invalid_total",
                                    "tools/call results refused for their structured content (outputSchema), by tool",
                                    l);
  if (t.gated) bind_approval_metrics(t, m);
}

// initialize's capabilities: only what is registered (docs/design.md#other-methods), or, with
// `server_options::list_changed`, every family whose tables may fill at run time, with
// `listChanged: true` (docs/server.md#tables-that-change).
inline void render_capabilities(tables& t, const server_options& o, bool tasks) {
  const bool all = o.list_changed;
  const bool tools = all || !t.tools.empty();
  const bool resources = all || !t.resources.empty() || !t.templates.empty();
  const bool prompts = all || !t.prompts.empty();
  t.capabilities_json.clear();
  json::writer w{t.capabilities_json};
  w.begin_object();
  if (tools) w.key("tools").begin_object().member("listChanged", all).end_object();
  if (resources) w.key("resources").begin_object().member("subscribe", true).member("listChanged", all).end_object();
  if (prompts) w.key("prompts").begin_object().member("listChanged", all).end_object();
  w.key("logging").begin_object().end_object();
  if (t.has_completions) w.key("completions").begin_object().end_object();
  // The 2025-11-25 tasks (docs/tasks.md#capabilities): listing, cancelling, task-augmented tools/call.
  if (tasks) {
    w.key("tasks").begin_object().key("list").begin_object().end_object().key("cancel").begin_object().end_object();
    w.key("requests").begin_object().key("tools").begin_object().key("call").begin_object().end_object();
    w.end_object().end_object().end_object();
  }
  w.end_object();
  // The per-request era: list changes and resource updates reach a client through
  // subscriptions/listen (docs/eras.md#server-discovery, #subscriptions).
  t.per_request_capabilities_json.clear();
  json::writer p{t.per_request_capabilities_json};
  p.begin_object();
  if (tools) p.key("tools").begin_object().member("listChanged", true).end_object();
  if (resources) p.key("resources").begin_object().member("subscribe", true).member("listChanged", true).end_object();
  if (prompts) p.key("prompts").begin_object().member("listChanged", true).end_object();
  p.key("logging").begin_object().end_object();
  if (t.has_completions) p.key("completions").begin_object().end_object();
  // The 2026-07-28 tasks are an extension, never `capabilities.tasks` (docs/tasks.md#capabilities).
  if (tasks) p.key("extensions").begin_object().key("io.modelcontextprotocol/tasks").begin_object().end_object().end_object();
  p.end_object();
}

// The tables' sizes against the caps (docs/server.md#tables-that-change).
inline void check_table_caps(const tables& t, const server_options& o, offence_list& out) {
  auto over = [&](std::size_t n, std::size_t cap, std::string_view what, std::string_view option) {
    if (n <= cap) return;
    out.push_back("the server has " + std::to_string(n) + " " + std::string{what} + ", more than server_options." +
                  std::string{option} + " (" + std::to_string(cap) + ")");
  };
  over(t.tools.size(), o.max_tools, "tools", "max_tools");
  over(t.resources.size(), o.max_resources, "resources", "max_resources");
  over(t.templates.size(), o.max_resource_templates, "resource templates", "max_resource_templates");
  over(t.prompts.size(), o.max_prompts, "prompts", "max_prompts");
}

// `,"_meta":{...serverInfo...}`, the tail of every per-request-era result.
inline void render_server_meta(server::impl& impl) {
  impl.server_info_meta = ",\"_meta\":";
  json::writer m{impl.server_info_meta};
  m.begin_object().key(meta_key::server_info).begin_object();
  m.member("name", impl.info.name).member("version", impl.info.version);
  if (!impl.info.title.empty()) m.member("title", impl.info.title);
  m.end_object().end_object();
}

}  // namespace detail

MCPCORE_DECL result<server> server_builder::build() {
  using namespace detail;
  std::vector<std::string> offences;
  auto& st = *s_;
  validate_settings(st, offences);
  if (!st.policy) st.policy = std::make_unique<policy_model<yuzu_tier_policy>>(yuzu_tier_policy{});
  if (!st.authz) st.authz = std::make_unique<authorizer_model<allow_all_authorizer>>(allow_all_authorizer{});
  if (!st.clock) st.clock = std::make_unique<clock_model<system_clock_source>>(system_clock_source{});

  // Every declaration is checked; the compiled tables fill only while no offence was found.
  auto impl = std::make_unique<server::impl>();
  auto t = std::make_shared<tables>();
  const registration_rules rules{st.options, st.securables, *st.policy, st.approvals, st.task_store != nullptr};
  std::set<std::string, std::less<>> tool_names;
  for (auto& d : st.tools) {
    if (auto c = validate_tool(d, rules, tool_names, impl->warnings, offences)) t->tools.push_back(std::move(c));
  }
  std::set<std::string, std::less<>> uris;
  for (auto& d : st.resources) {
    if (auto c = validate_resource(d, uris, offences)) (c->def.is_template ? t->templates : t->resources).push_back(std::move(c));
  }
  std::set<std::string, std::less<>> prompt_names;
  for (auto& d : st.prompts) {
    if (auto c = validate_prompt(d, prompt_names, offences)) t->prompts.push_back(std::move(c));
  }
  check_table_caps(*t, st.options, offences);
  st.tools.clear();  // the definitions moved into the server (or are dropped): the builder is left empty
  st.resources.clear();
  st.prompts.clear();
  if (!offences.empty()) {
    std::sort(offences.begin(), offences.end());
    return fail(error(library_errc::build_refused, std::move(offences)));
  }

  t->reindex();
  render_capabilities(*t, st.options, st.task_store != nullptr);
  impl->events = std::make_shared<event_hub>();
  if (st.task_store) impl->tasks = std::make_shared<task_engine>(std::move(st.task_store), st.task_opts);
  if (st.metrics) {
    bind_server_metrics(*impl, *st.metrics);
    for (auto& tool : t->tools) bind_tool_metrics(*tool, *st.metrics);
    if (impl->tasks) bind_task_metrics(*impl->tasks, *st.metrics);
  }
  impl->current = std::move(t);
  impl->securables = st.securables;
  impl->metrics = st.metrics;
  impl->info = st.info;  // the builder keeps its info and options
  render_server_meta(*impl);
  [[maybe_unused]] const bool parsed_empty = impl->empty_object.parse("{}").has_value();
  MCPCORE_ASSERT(parsed_empty);
  std::random_device rd;
  impl->cursor_salt = (static_cast<std::uint64_t>(rd()) << 32) ^ rd();
  impl->options = st.options;
  if (impl->options.request_state_key.empty()) {
    // docs/eras.md#request-state: a key of this server's own.
    impl->options.request_state_key.assign(min_request_state_key_bytes, '\0');
    if (!fill_random(impl->options.request_state_key.data(), impl->options.request_state_key.size())) {
      return fail(error(library_errc::build_refused,
                        std::string("no random source for the request-state key: set server_options.request_state_key")));
    }
  }
  impl->policy = std::move(st.policy);
  impl->scopes = std::move(st.scopes);
  impl->authz = std::move(st.authz);
  impl->approvals = std::exchange(st.approvals, nullptr);
  impl->audit = std::move(st.audit);
  impl->clock = std::move(st.clock);
  if (impl->tasks && impl->tasks->options.abandon_unfinished_at_build) {
    // docs/tasks.md#restart: no work of an earlier process survives it.
    const std::string payload = internal_error_json(*impl, task_restart_message, "Call the tool again.");
    const auto abandoned =
        impl->tasks->store->abandon_unfinished(task_now(*impl), task_restart_message, task_payload::error, payload);
    if (!abandoned) {
      return fail(error(library_errc::build_refused,
                        "the task store could not mark the unfinished tasks of an earlier run failed: " +
                            abandoned.error().message()));
    }
  }
  return server{impl.release()};
}

MCPCORE_END_NAMESPACE

#endif  // MCPCORE_IMPL_SERVER_BUILDER_IPP
