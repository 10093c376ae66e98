// SPDX-License-Identifier: Apache-2.0
// The dispatch core: registration validation, method routing, the tools/call gate pipeline
// (spec §4), pagination, the call context, and the peer state.
#ifndef MCPCORE_IMPL_SERVER_IPP
#define MCPCORE_IMPL_SERVER_IPP

#include <mcpcore/detail/ascii.hpp>
#include <mcpcore/dispatch/schema.hpp>
#include <mcpcore/dispatch/server.hpp>
#include <mcpcore/wire/correlation_id.hpp>
#include <mcpcore/wire/error.hpp>
#include <mcpcore/wire/retry.hpp>

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <unordered_map>

MCPCORE_BEGIN_NAMESPACE

// ---- peer -------------------------------------------------------------------------------------

struct peer::impl {
  struct waiter {
    std::mutex mu;
    std::condition_variable_any cv;
    bool done = false;
    std::error_code ec;
    std::optional<client_reply> reply;
  };

  mutable std::mutex mu;
  std::string version;
  client_capabilities caps;
  std::atomic<bool> initialized{false};
  std::atomic<int> level{-1};
  std::set<std::string, std::less<>> subscriptions;
  std::unordered_map<request_id, std::stop_source> in_flight;
  std::unordered_map<std::int64_t, std::shared_ptr<waiter>> pending;
  std::int64_t next_request_id = 1;
  bool closed = false;
  bool input_closed = false;

  // `reply` (null for a failure) is moved from. A pointer rather than an std::optional by value:
  // g++ 12 warns (-Wmaybe-uninitialized, a false positive) when a disengaged optional holding a
  // json::document is moved at -O1 and above, which breaks -Werror builds.
  static void finish(waiter& w, std::error_code ec, client_reply* reply) {
    {
      std::lock_guard lock{w.mu};
      if (w.done) return;
      w.done = true;
      w.ec = ec;
      if (reply != nullptr) w.reply.emplace(std::move(*reply));
    }
    w.cv.notify_all();
  }

  // Fails every outstanding client request; called with `mu` held.
  void fail_pending_locked() {
    for (auto& [id, w] : pending) finish(*w, client_request_errc::closed, nullptr);
    pending.clear();
  }
};

MCPCORE_DECL peer::peer() : impl_(new impl) {}
MCPCORE_DECL peer::~peer() {
  close();
  delete impl_;
}

MCPCORE_DECL std::string peer::protocol_version() const {
  std::lock_guard lock{impl_->mu};
  return impl_->version;
}
MCPCORE_DECL bool peer::initialized() const noexcept { return impl_->initialized.load(); }
MCPCORE_DECL client_capabilities peer::capabilities() const noexcept {
  std::lock_guard lock{impl_->mu};
  return impl_->caps;
}
MCPCORE_DECL std::optional<log_level> peer::level() const noexcept {
  const int l = impl_->level.load(std::memory_order_relaxed);
  if (l < 0) return std::nullopt;
  return static_cast<log_level>(l);
}
MCPCORE_DECL bool peer::subscribed(std::string_view uri) const {
  std::lock_guard lock{impl_->mu};
  return impl_->subscriptions.find(uri) != impl_->subscriptions.end();
}
MCPCORE_DECL std::size_t peer::active_calls() const noexcept {
  std::lock_guard lock{impl_->mu};
  return impl_->in_flight.size();
}
MCPCORE_DECL void peer::close() noexcept {
  std::lock_guard lock{impl_->mu};
  impl_->closed = true;
  impl_->input_closed = true;
  for (auto& [id, src] : impl_->in_flight) src.request_stop();
  impl_->fail_pending_locked();
}
MCPCORE_DECL void peer::input_closed() noexcept {
  std::lock_guard lock{impl_->mu};
  impl_->input_closed = true;
  impl_->fail_pending_locked();
}

// ---- server state -----------------------------------------------------------------------------

namespace detail {

struct builder_state {
  server_info info;
  server_options options;
  std::deque<tool_def> tools;
  std::deque<resource_def> resources;
  std::deque<prompt_def> prompts;
  std::optional<std::vector<std::string>> securables;
  std::unique_ptr<policy_base> policy;
  std::unique_ptr<authorizer_base> authz;
  std::unique_ptr<audit_base> audit;
  std::unique_ptr<clock_base> clock;
  std::optional<metrics_binding> metrics;
  approval_service* approvals = nullptr;
};

struct template_part {
  bool is_variable = false;
  std::string text;  // literal text, or the variable's name
};

// The result labels of mcp_tool_calls_total, in this order.
enum class call_outcome : std::uint8_t {
  success, error_result, denied, failure, cancelled, approval_required, count
};
inline constexpr std::string_view call_outcome_names[] = {"success", "error_result", "denied",
                                                          "failure", "cancelled", "approval_required"};

// The approval series of one gated tool (reference §11).
struct approval_counters {
  counter refused;           // recall refusals, no reason label (anti-oracle)
  counter masked;            // refusals with the origin/submitter binding unevaluated
  counter precondition;      // declined by a pre-consume precondition (ticket intact)
  counter burned_rejected;   // consumed, then the request ended in a JSON-RPC error
  counter burned_cancelled;  // consumed, then the call was cancelled before an answer
  counter minted, deduped, consumed;
};

struct compiled_tool {
  tool_def def;
  schema::compiled_schema input;
  std::string listing;  // the tools/list entry
  std::string action;   // "mcp.<name>" (the audit action)
  operation op = operation::read;
  counter outcomes[static_cast<std::size_t>(call_outcome::count)];
  counter args_invalid;
  bool gated = false;  // some tier of server_options::policy_tiers routes it through approval
  approval_counters approval;
};

struct compiled_resource {
  resource_def def;
  std::vector<template_part> parts;  // templates only
  std::string listing;
};

struct compiled_prompt {
  prompt_def def;
  std::string listing;
};

// Methods counted by mcp_requests_total{method}.
enum class method_id : std::uint8_t {
  initialize, ping, tools_list, tools_call, resources_list, resources_templates_list, resources_read,
  resources_subscribe, resources_unsubscribe, prompts_list, prompts_get, completion_complete,
  logging_set_level, other, count
};
inline constexpr std::string_view method_names[] = {
    "initialize",       "ping",           "tools/list",         "tools/call",
    "resources/list",   "resources/templates/list",             "resources/read",
    "resources/subscribe", "resources/unsubscribe", "prompts/list", "prompts/get",
    "completion/complete", "logging/setLevel", "other"};

inline method_id classify_method(std::string_view m) noexcept {
  for (std::size_t i = 0; i + 1 < static_cast<std::size_t>(method_id::count); ++i) {
    if (method_names[i] == m) return static_cast<method_id>(i);
  }
  return method_id::other;
}

// Cuts caller text for an error message at a UTF-8 boundary.
inline std::string echo_name(std::string_view name) {
  if (name.size() <= max_echoed_name_bytes) return std::string{name};
  std::size_t n = max_echoed_name_bytes;
  while (n > 0 && (static_cast<unsigned char>(name[n]) & 0xC0U) == 0x80U) --n;
  std::string s{name.substr(0, n)};
  s += "...";
  return s;
}

inline bool valid_tool_name(std::string_view n) noexcept {
  if (n.empty() || n.size() > 128) return false;
  return std::all_of(n.begin(), n.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-' || c == '.';
  });
}

inline std::uint64_t mix64(std::uint64_t x) noexcept {
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// Parses an RFC 6570 level-1 template; nullopt (with `why`) when it uses anything else.
inline std::optional<std::vector<template_part>> parse_uri_template(std::string_view t, std::string& why) {
  std::vector<template_part> parts;
  std::size_t i = 0;
  while (i < t.size()) {
    if (t[i] == '}') {
      why = "unbalanced '}'";
      return std::nullopt;
    }
    if (t[i] != '{') {
      const auto next = t.find_first_of("{}", i);
      const auto end = next == std::string_view::npos ? t.size() : next;
      parts.push_back({false, std::string{t.substr(i, end - i)}});
      i = end;
      continue;
    }
    const auto close = t.find('}', i);
    if (close == std::string_view::npos) {
      why = "unbalanced '{'";
      return std::nullopt;
    }
    const auto name = t.substr(i + 1, close - i - 1);
    if (name.empty() || !std::all_of(name.begin(), name.end(), [](char c) {
          return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
        })) {
      why = "only level-1 expressions {name} (letters, digits, _) are supported";
      return std::nullopt;
    }
    if (!parts.empty() && parts.back().is_variable) {
      why = "two variables must be separated by literal text";
      return std::nullopt;
    }
    for (const auto& p : parts) {
      if (p.is_variable && p.text == name) {
        why = "variable '" + std::string{name} + "' appears twice";
        return std::nullopt;
      }
    }
    parts.push_back({true, std::string{name}});
    i = close + 1;
  }
  return parts;
}

inline constexpr std::size_t max_template_subject_bytes = 8192;

// Matches the whole of `uri` against `parts`; on success fills `vars` (raw, undecoded).
//
// A variable takes one or more characters other than '/', '?', '#'; when several splits match,
// each variable takes the shortest value that lets the rest match. Dynamic programming from the
// end keeps a crafted URI from making this exponential (backtracking over a template such as
// `{y}-{m}-{d}` is O(n^3)): first[k][pos] is the smallest q >= pos such that parts k.. match
// uri[q..], so the whole is O(parts x n) time and memory (n <= max_template_subject_bytes).
inline bool match_template(const std::vector<template_part>& parts, std::string_view uri,
                           std::vector<std::pair<std::string, std::string>>& vars) {
  using index = std::uint32_t;
  constexpr index none = std::numeric_limits<index>::max();
  const auto n = static_cast<index>(uri.size());
  const std::size_t np = parts.size();
  const std::size_t width = std::size_t{n} + 2;  // positions 0..n, plus n + 1 as a sentinel
  // seg_end[pos]: the first '/', '?' or '#' at or after pos (n when none): where a variable
  // starting at pos must end at the latest.
  std::vector<index> seg_end(std::size_t{n} + 1, n);
  for (index i = n; i-- > 0;) {
    const char c = uri[i];
    seg_end[i] = (c == '/' || c == '?' || c == '#') ? i : seg_end[i + 1];
  }
  std::vector<index> first((np + 1) * width, none);
  auto at = [&](std::size_t k, std::size_t pos) -> index& { return first[k * width + pos]; };
  for (index pos = 0; pos <= n; ++pos) at(np, pos) = n;  // after the last part only the end matches
  for (std::size_t k = np; k-- > 0;) {
    const auto& p = parts[k];
    for (index pos = n + 1; pos-- > 0;) {
      bool ok = false;
      if (!p.is_variable) {
        const std::size_t after = std::size_t{pos} + p.text.size();
        ok = after <= n && uri.substr(pos, p.text.size()) == p.text && at(k + 1, after) == after;
      } else if (pos < n) {
        // the shortest value uri[pos, stop) after which the rest matches
        const index stop = at(k + 1, std::size_t{pos} + 1);
        ok = stop != none && stop <= seg_end[pos];
      }
      at(k, pos) = ok ? pos : at(k, std::size_t{pos} + 1);
    }
  }
  if (at(0, 0) != 0) return false;
  std::size_t pos = 0;
  for (std::size_t k = 0; k < np; ++k) {
    const auto& p = parts[k];
    if (!p.is_variable) {
      pos += p.text.size();
      continue;
    }
    const std::size_t stop = at(k + 1, pos + 1);
    vars.emplace_back(p.text, std::string{uri.substr(pos, stop - pos)});
    pos = stop;
  }
  return true;
}

inline std::string_view trim_blanks(std::string_view s) noexcept {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\n' || s.front() == '\r'))
    s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\n' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

}  // namespace detail

struct server::impl {
  server_info info;
  server_options options;
  kill_switches switches;
  std::atomic<bool> shutting_down{false};
  std::vector<detail::compiled_tool> tools;
  std::map<std::string, std::size_t, std::less<>> tool_index;
  std::vector<detail::compiled_resource> resources;
  std::map<std::string, std::size_t, std::less<>> resource_index;
  std::vector<detail::compiled_resource> templates;
  std::vector<detail::compiled_prompt> prompts;
  std::map<std::string, std::size_t, std::less<>> prompt_index;
  std::unique_ptr<detail::policy_base> policy;
  std::unique_ptr<detail::authorizer_base> authz;
  std::unique_ptr<detail::audit_base> audit;
  std::unique_ptr<detail::clock_base> clock;
  approval_service* approvals = nullptr;
  std::vector<std::string> warnings;
  std::uint64_t cursor_salt = 0;
  bool has_completions = false;
  std::string capabilities_json;
  json::document empty_object;  // `{}`, validated for calls without arguments

  // metrics (inert when no sink was given)
  counter requests[static_cast<std::size_t>(detail::method_id::count)];
  counter initialize_revision[std::size(supported_protocol_versions)];
  counter cancel_accepted, cancel_noop, cancel_detached;
  counter tool_unknown, security_misconfig, unmatched_responses, audit_failures, handler_exceptions;

  correlation_id mint_cid() const noexcept { return next_correlation_id(clock->system_now()); }

  // Writes one audit row; never fails the request (reference §3.5). Returns whether it persisted.
  bool record(std::string_view action, std::string_view target_type, std::string_view target_id,
              const principal& who, audit_result result, std::string_view detail,
              std::string_view cid) noexcept {
    if (!audit) return true;
    bool ok = false;
    try {
      audit_record r;
      r.action = action;
      r.target_type = target_type;
      r.target_id = target_id;
      r.principal_id = who.id;
      r.result = result;
      r.detail = detail;
      r.correlation_id = cid;
      r.time = clock->system_now();
      ok = audit->record(r);
    } catch (...) {
      ok = false;
    }
    if (!ok) audit_failures.inc();
    return ok;
  }
};

// ---- builder ----------------------------------------------------------------------------------

MCPCORE_DECL std::string build_error::message() const {
  std::string s;
  for (const auto& o : offences) {
    if (!s.empty()) s += "; ";
    s += o;
  }
  return s;
}

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
    // Approving arms a live one-time capability: destructive and not idempotent (reference §5.8).
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

inline std::string render_tool(const tool_def& d) {
  std::string s;
  json::writer w{s};
  w.begin_object().member("name", d.name);
  if (!d.title.empty()) w.member("title", d.title);
  w.member("description", d.description).raw_member("inputSchema", d.input_schema);
  if (!d.output_schema.empty()) w.raw_member("outputSchema", d.output_schema);
  write_annotations(w, d);
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

}  // namespace detail

MCPCORE_DECL result<server, build_error> server_builder::build() {
  using namespace detail;
  build_error err;
  auto& st = *s_;
  auto offence = [&](std::string s) { err.offences.push_back(std::move(s)); };

  if (st.info.name.empty()) offence("server_info.name is empty");
  if (st.info.version.empty()) offence("server_info.version is empty");
  if (st.options.page_size == 0) offence("server_options.page_size is 0");
  if (!st.policy) st.policy = std::make_unique<policy_model<yuzu_tier_policy>>(yuzu_tier_policy{});
  if (!st.authz) st.authz = std::make_unique<authorizer_model<allow_all_authorizer>>(allow_all_authorizer{});
  if (!st.clock) st.clock = std::make_unique<clock_model<system_clock_source>>(system_clock_source{});

  auto impl = std::make_unique<server::impl>();
  std::set<std::string, std::less<>> tool_names;
  for (auto& d : st.tools) {
    const std::string subject = "tool '" + echo_name(d.name) + "'";
    if (!valid_tool_name(d.name)) offence(subject + ": name must be 1-128 characters of A-Z a-z 0-9 _ - .");
    if (!tool_names.insert(d.name).second) offence(subject + ": declared twice");
    if (d.description.empty()) offence(subject + ": has no description");
    if (!d.handler && d.builtin == builtin_tool::none) offence(subject + ": has no handler");
    if (d.builtin != builtin_tool::none && st.approvals == nullptr) {
      offence(subject + ": approver tools need an approval service (server_builder::approvals)");
    }
    if (d.securable.empty()) offence(subject + ": has no security row (securable, operation)");
    if (!d.op) {
      if (!d.operation_name.empty()) {
        offence(subject + ": operation '" + echo_name(d.operation_name) +
                "' is outside the catalogue {Read, Write, Execute, Delete, Approve, Push, Attest, Rotate}");
      } else if (!d.securable.empty()) {
        offence(subject + ": has no operation");
      }
    }
    if (st.securables && !d.securable.empty() &&
        std::find(st.securables->begin(), st.securables->end(), d.securable) == st.securables->end()) {
      offence(subject + ": securable '" + echo_name(d.securable) + "' is outside the catalogue");
    }
    d.input_schema = std::string{trim_blanks(d.input_schema)};
    d.output_schema = std::string{trim_blanks(d.output_schema)};
    auto compiled = schema::compiled_schema::compile(d.input_schema);
    if (!compiled) {
      for (const auto& e : compiled.error()) {
        offence(subject + ": input schema " + (e.path.empty() ? std::string{"(root)"} : e.path) + ": " + e.message);
      }
    }
    if (!d.output_schema.empty()) {
      json::document od;
      auto root = od.parse(d.output_schema);
      if (!root || !root->is_object() || !(*root)["type"].is_string() || (*root)["type"].as_string() != "object") {
        offence(subject + R"(: output schema must be a JSON object schema with "type":"object")");
      }
    }
    if (!d.effect) {
      impl->warnings.push_back(subject + " is unclassified; annotated readOnly=false, destructive=true, idempotent=false");
    }
    bool gated = false;
    if (compiled && d.op && !d.securable.empty()) {
      for (const auto& tier : st.options.policy_tiers) {
        gated = gated || st.policy->decide(tier, d.securable, *d.op) == tier_decision::allow_with_approval;
      }
      if (gated && compiled->root_is_closed() && !compiled->root_declares("approval_id")) {
        offence(subject + ": is approval-gated and its closed input schema does not declare 'approval_id'");
      }
    }
    if (gated && d.builtin != builtin_tool::none) {
      offence(subject + ": the tier policy routes it through approval, but an approver tool cannot itself "
                        "require approval");
    }
    if (err.offences.empty()) {
      auto& t = impl->tools.emplace_back();
      t.input = std::move(*compiled);
      t.op = *d.op;
      t.listing = render_tool(d);
      t.action = "mcp." + d.name;
      t.gated = gated;
      t.def = std::move(d);
    }
  }

  std::set<std::string, std::less<>> uris;
  for (auto& d : st.resources) {
    const std::string subject = std::string{d.is_template ? "resource template '" : "resource '"} + echo_name(d.uri) + "'";
    if (d.uri.empty()) offence(subject + ": has no URI");
    if (!uris.insert(d.uri).second) offence(subject + ": declared twice");
    if (d.name.empty()) offence(subject + ": has no name");
    if (!d.handler) offence(subject + ": has no handler");
    std::vector<template_part> parts;
    if (d.is_template) {
      std::string why;
      auto p = parse_uri_template(d.uri, why);
      if (!p) {
        std::string what = subject;
        what += ": ";
        what += why;
        offence(std::move(what));
      } else {
        parts = std::move(*p);
        for (const auto& [var, c] : d.completers) {
          const bool known = std::any_of(parts.begin(), parts.end(),
                                         [&](const template_part& tp) { return tp.is_variable && tp.text == var; });
          if (!known) offence(subject + ": completion for unknown variable '" + echo_name(var) + "'");
        }
      }
    } else {
      if (d.uri.find('{') != std::string::npos) {
        offence(subject + ": a fixed URI contains '{' (declare it with resource_template)");
      }
      // A fixed URI has no variables, so every completer names an unknown one.
      for (const auto& [var, c] : d.completers) {
        offence(subject + ": completion for unknown variable '" + echo_name(var) + "'");
      }
    }
    if (!d.completers.empty()) impl->has_completions = true;
    if (err.offences.empty()) {
      detail::compiled_resource r;
      r.parts = std::move(parts);
      r.listing = render_resource(d);
      r.def = std::move(d);
      if (r.def.is_template) {
        impl->templates.push_back(std::move(r));
      } else {
        impl->resource_index.emplace(r.def.uri, impl->resources.size());
        impl->resources.push_back(std::move(r));
      }
    }
  }

  std::set<std::string, std::less<>> prompt_names;
  for (auto& d : st.prompts) {
    const std::string subject = "prompt '" + echo_name(d.name) + "'";
    if (!valid_tool_name(d.name)) offence(subject + ": name must be 1-128 characters of A-Z a-z 0-9 _ - .");
    if (!prompt_names.insert(d.name).second) offence(subject + ": declared twice");
    if (!d.handler) offence(subject + ": has no handler");
    std::set<std::string, std::less<>> args;
    for (const auto& a : d.arguments) {
      if (a.name.empty()) offence(subject + ": an argument has no name");
      if (!args.insert(a.name).second) offence(subject + ": argument '" + echo_name(a.name) + "' declared twice");
      std::set<std::string, std::less<>> values;
      for (const auto& v : a.enum_values) {
        if (!values.insert(v).second) offence(subject + ": argument '" + a.name + "' repeats value '" + echo_name(v) + "'");
      }
      if (a.complete || !a.enum_values.empty()) impl->has_completions = true;
    }
    if (err.offences.empty()) {
      detail::compiled_prompt p;
      p.listing = render_prompt(d);
      p.def = std::move(d);
      impl->prompt_index.emplace(p.def.name, impl->prompts.size());
      impl->prompts.push_back(std::move(p));
    }
  }

  if (!err.offences.empty()) {
    std::sort(err.offences.begin(), err.offences.end());
    st.tools.clear();
    st.resources.clear();
    st.prompts.clear();
    return std::unexpected(std::move(err));
  }

  st.tools.clear();  // the definitions moved into the server: the builder is left empty
  st.resources.clear();
  st.prompts.clear();
  for (std::size_t i = 0; i < impl->tools.size(); ++i) impl->tool_index.emplace(impl->tools[i].def.name, i);

  // Metrics: every series is created now (pre-seeded at zero; reference §11).
  if (st.metrics) {
    auto& m = *st.metrics;
    for (std::size_t i = 0; i < static_cast<std::size_t>(method_id::count); ++i) {
      const metric_label l[] = {{"method", method_names[i]}};
      impl->requests[i] = m.make_counter("mcp_requests_total", "JSON-RPC requests received, by method", l);
    }
    for (std::size_t i = 0; i < std::size(supported_protocol_versions); ++i) {
      const metric_label l[] = {{"revision", supported_protocol_versions[i]}};
      impl->initialize_revision[i] = m.make_counter(
          "mcp_initialize_protocol_total", "initialize handshakes by negotiated protocol revision", l);
    }
    const std::string_view cancel_help = "notifications/cancelled outcomes";
    const metric_label acc[] = {{"outcome", "accepted"}};
    const metric_label det[] = {{"outcome", "detached"}};
    const metric_label noop[] = {{"outcome", "noop"}};
    impl->cancel_accepted = m.make_counter("mcp_cancel_notifications_total", cancel_help, acc);
    impl->cancel_detached = m.make_counter("mcp_cancel_notifications_total", cancel_help, det);
    impl->cancel_noop = m.make_counter("mcp_cancel_notifications_total", cancel_help, noop);
    impl->tool_unknown = m.make_counter("mcp_tool_unknown_total", "tools/call naming no registered tool", {});
    impl->security_misconfig = m.make_counter(
        "mcp_tool_security_misconfig_total", "served tool without a security row (refused at build, so 0)", {});
    impl->unmatched_responses = m.make_counter(
        "mcp_client_responses_unmatched_total", "client responses for no outstanding server request", {});
    impl->audit_failures = m.make_counter("mcp_audit_write_failures_total", "audit rows that were not persisted", {});
    impl->handler_exceptions = m.make_counter(
        "mcp_handler_exceptions_total", "handlers that threw (answered -32603)", {});
    for (auto& t : impl->tools) {
      for (std::size_t i = 0; i < static_cast<std::size_t>(call_outcome::count); ++i) {
        const metric_label l[] = {{"tool", t.def.name}, {"result", call_outcome_names[i]}};
        t.outcomes[i] = m.make_counter("mcp_tool_calls_total", "tools/call outcomes by tool", l);
      }
      const metric_label l[] = {{"tool", t.def.name}};
      t.args_invalid = m.make_counter("mcp_tool_args_invalid_total",
                                      "tools/call refused by input-schema validation, by tool", l);
      if (!t.gated) continue;
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
  }

  // initialize's capabilities: only what is registered (spec §3).
  {
    json::writer w{impl->capabilities_json};
    w.begin_object();
    if (!impl->tools.empty()) w.key("tools").begin_object().member("listChanged", false).end_object();
    if (!impl->resources.empty() || !impl->templates.empty()) {
      w.key("resources").begin_object().member("subscribe", true).member("listChanged", false).end_object();
    }
    if (!impl->prompts.empty()) w.key("prompts").begin_object().member("listChanged", false).end_object();
    w.key("logging").begin_object().end_object();
    if (impl->has_completions) w.key("completions").begin_object().end_object();
    w.end_object();
  }

  [[maybe_unused]] const bool parsed_empty = impl->empty_object.parse("{}").has_value();
  MCPCORE_ASSERT(parsed_empty);
  std::random_device rd;
  impl->cursor_salt = (static_cast<std::uint64_t>(rd()) << 32) ^ rd();
  impl->info = st.info;  // the builder keeps its info and options
  impl->options = st.options;
  impl->policy = std::move(st.policy);
  impl->authz = std::move(st.authz);
  impl->approvals = std::exchange(st.approvals, nullptr);
  impl->audit = std::move(st.audit);
  impl->clock = std::move(st.clock);
  return server{impl.release()};
}

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
MCPCORE_DECL void server::begin_shutdown() noexcept { impl_->shutting_down.store(true); }
MCPCORE_DECL const std::vector<std::string>& server::warnings() const noexcept { return impl_->warnings; }
MCPCORE_DECL const server_info& server::info() const noexcept { return impl_->info; }

namespace detail {

// The state of one call, behind call_context.
class call_state_impl final : public call_state {
 public:
  call_state_impl(server::impl& s, const dispatch_context& ctx, request_id_view id, json::value progress_token,
                  std::stop_token stop) noexcept
      : s_(s), ctx_(ctx), id_(id), token_(progress_token), stop_(std::move(stop)) {}

  const principal& caller() const noexcept override { return ctx_.caller; }
  request_id_view id() const noexcept override { return id_; }
  std::stop_token stop_token() const noexcept override { return stop_; }
  bool wants_progress() const noexcept override { return token_.exists(); }
  progress_call* bridge_call() const noexcept override { return ctx_.progress; }
  bool close_stream(std::chrono::milliseconds retry) noexcept override {
    return ctx_.sink != nullptr && ctx_.sink->close_stream(retry);
  }

  bool progress(double p, std::optional<double> total, std::string_view message) override {
    if (!token_.exists() || ctx_.sink == nullptr || !std::isfinite(p)) return false;
    std::string out;
    {
      std::lock_guard lock{mu_};
      if (sent_progress_ && !(p > last_progress_)) return false;
      sent_progress_ = true;
      last_progress_ = p;
      write_notification(out, "notifications/progress", [&](json::writer& w) {
        w.begin_object().key("progressToken").value(token_);
        w.member("progress", p);
        if (total && std::isfinite(*total)) w.member("total", *total);
        if (!message.empty()) w.member("message", message);
        w.end_object();
      });
    }
    return ctx_.sink->send(out);
  }

  bool log(log_level level, std::string_view data, std::string_view logger) override {
    if (ctx_.sink == nullptr) return false;
    log_level threshold = s_.options.default_log_level;
    if (ctx_.client != nullptr) {
      if (auto l = ctx_.client->level()) threshold = *l;
    }
    if (level < threshold) return false;
    std::string out;
    write_notification(out, "notifications/message", [&](json::writer& w) {
      w.begin_object().member("level", to_string(level));
      if (!logger.empty()) w.member("logger", logger);
      w.member("data", data).end_object();
    });
    return ctx_.sink->send(out);
  }

  result<client_reply> request(std::string_view method, std::string_view params_json,
                               std::chrono::milliseconds timeout) override {
    if (ctx_.client == nullptr || ctx_.sink == nullptr) {
      return std::unexpected(make_error_code(client_request_errc::no_channel));
    }
    auto& p = ctx_.client->state();
    const auto caps = ctx_.client->capabilities();
    if ((method == "sampling/createMessage" && !caps.sampling) ||
        (method == "elicitation/create" && !caps.elicitation) || (method == "roots/list" && !caps.roots)) {
      return std::unexpected(make_error_code(client_request_errc::not_supported));
    }
    auto w = std::make_shared<peer::impl::waiter>();
    std::int64_t rid = 0;
    {
      std::lock_guard lock{p.mu};
      if (p.input_closed) return std::unexpected(make_error_code(client_request_errc::closed));
      if (p.pending.size() >= s_.options.max_pending_client_requests) {
        return std::unexpected(make_error_code(client_request_errc::too_many_pending));
      }
      rid = p.next_request_id++;
      p.pending.emplace(rid, w);
    }
    auto forget = [&] {
      std::lock_guard lock{p.mu};
      p.pending.erase(rid);
    };
    std::string out;
    write_request(out, rid, method, params_json);
    if (!ctx_.sink->send(out)) {
      forget();
      return std::unexpected(make_error_code(client_request_errc::closed));
    }
    const auto limit = std::min(timeout, s_.options.max_client_request_timeout);
    const auto deadline = std::chrono::steady_clock::now() + limit;
    std::unique_lock lock{w->mu};
    const bool done = w->cv.wait_until(lock, stop_, deadline, [&] { return w->done; });
    if (!done) {
      lock.unlock();
      bool connection_closed = false;
      {
        std::lock_guard plock{p.mu};
        p.pending.erase(rid);
        connection_closed = p.input_closed;
      }
      // peer::close() stops the calls in flight and fails their requests under one lock: a call
      // woken by the stop reports the closed connection, not a cancellation, and sends nothing.
      if (connection_closed) return std::unexpected(make_error_code(client_request_errc::closed));
      // MCP: the sender of a request that is abandoned tells the receiver.
      std::string cancel;
      write_notification(cancel, "notifications/cancelled", [&](json::writer& cw) {
        cw.begin_object().member("requestId", rid)
            .member("reason", stop_.stop_requested() ? "the call was cancelled" : "timed out")
            .end_object();
      });
      (void)ctx_.sink->send(cancel);
      return std::unexpected(make_error_code(stop_.stop_requested() ? client_request_errc::cancelled
                                                                    : client_request_errc::timed_out));
    }
    if (w->ec) return std::unexpected(w->ec);
    std::optional<client_reply>& reply = w->reply;
    if (reply.has_value()) return std::move(*reply);
    return std::unexpected(make_error_code(client_request_errc::closed));
  }

 private:
  server::impl& s_;
  const dispatch_context& ctx_;
  request_id_view id_;
  json::value token_;
  std::stop_token stop_;
  std::mutex mu_;
  double last_progress_ = 0;
  bool sent_progress_ = false;
};

// Registers a call in its peer's in-flight table (for notifications/cancelled) and links the
// transport's own stop token.
class call_scope {
 public:
  call_scope(const dispatch_context& ctx, request_id_view id) : ctx_(ctx) {
    if (ctx.client != nullptr) {
      auto& p = ctx.client->state();
      std::lock_guard lock{p.mu};
      if (p.closed) source_.request_stop();
      registered_ = p.in_flight.try_emplace(request_id{id}, source_).second;
      if (registered_) id_.emplace(id);
    } else {
      registered_ = true;
    }
  }
  ~call_scope() {
    if (ctx_.client != nullptr && id_) {
      auto& p = ctx_.client->state();
      std::lock_guard lock{p.mu};
      p.in_flight.erase(*id_);
    }
  }
  call_scope(const call_scope&) = delete;
  call_scope& operator=(const call_scope&) = delete;

  /// False when the id is already in flight on this peer (MCP: ids are not reused).
  [[nodiscard]] bool registered() const noexcept { return registered_; }
  [[nodiscard]] std::stop_token token() const noexcept { return source_.get_token(); }
  [[nodiscard]] bool cancelled() const noexcept { return source_.stop_requested(); }

 private:
  const dispatch_context& ctx_;
  std::stop_source source_;
  std::optional<std::stop_callback<std::function<void()>>> link_;
  std::optional<request_id> id_;
  bool registered_ = false;

 public:
  void link(std::stop_token external) {
    if (external.stop_possible()) {
      link_.emplace(std::move(external), std::function<void()>{[this] { source_.request_stop(); }});
    }
  }
};

// Context shared by the method handlers of one request.
struct request_env {
  server::impl& s;
  const dispatch_context& ctx;
  request_id_view id;
  const message& msg;
  std::string& out;
};

inline void write_error(request_env& e, errc code, std::string_view message, std::string_view cid,
                        std::optional<std::string_view> remediation,
                        std::optional<std::chrono::milliseconds> retry = std::nullopt,
                        bool audit_persisted = true) {
  error_data d;
  d.correlation_id = cid;
  d.retry_after_ms = retry;
  d.remediation = remediation;
  if (!audit_persisted) d.audit_persisted = false;
  write_error_response(e.out, e.id, code, message, d);
}

// An invalid-params answer for malformed params (no audit: not a tool decision).
inline bool bad_params(request_env& e, std::string_view message) {
  const auto cid = e.s.mint_cid();
  write_error(e, errc::invalid_params, message, cid.view(),
              "Send params of the shape the MCP specification (2025-11-25) defines for this method.");
  return true;
}

inline bool internal_fault(request_env& e, std::string_view message) {
  e.s.handler_exceptions.inc();
  const auto cid = e.s.mint_cid();
  write_error(e, errc::internal_error, message, cid.view(),
              "The server failed while handling the request; report the correlation_id to its operator.");
  return true;
}

// Parses an opaque cursor; nullopt when it is not one this server issued for `kind`.
inline std::optional<std::size_t> parse_cursor(const server::impl& s, json::value cursor, std::uint64_t kind,
                                               std::size_t size) {
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
  if (mac != mix64(s.cursor_salt ^ mix64(offset * 8 + kind))) return std::nullopt;
  if (offset == 0 || offset >= size) return std::nullopt;
  return static_cast<std::size_t>(offset);
}

inline std::string make_cursor(const server::impl& s, std::size_t offset, std::uint64_t kind) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string c;
  const auto o = static_cast<std::uint64_t>(offset);
  for (int shift = 60; shift >= 0; shift -= 4) {
    const auto d = (o >> shift) & 0xFU;
    if (d != 0 || !c.empty() || shift == 0) c.push_back(digits[d]);
  }
  c.push_back('-');
  const std::uint64_t mac = mix64(s.cursor_salt ^ mix64(o * 8 + kind));
  for (int shift = 60; shift >= 0; shift -= 4) c.push_back(digits[(mac >> shift) & 0xFU]);
  return c;
}

// Writes one page of a list method (spec §3: opaque cursor, configurable page size).
template <class Items, class Listing>
bool write_page(request_env& e, std::string_view key, const Items& items, std::uint64_t kind, Listing listing) {
  std::size_t offset = 0;
  const auto cursor = e.msg.params["cursor"];
  if (cursor.exists()) {
    auto o = parse_cursor(e.s, cursor, kind, items.size());
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
    for (std::size_t i = offset; i < end; ++i) w.raw(listing(items[i]));
    w.end_array();
    if (end < items.size()) w.member("nextCursor", make_cursor(e.s, end, kind));
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
  std::size_t chosen = 0;  // latest, for an unknown or absent revision (spec §3)
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
    w.begin_object().member("protocolVersion", version).raw_member("capabilities", e.s.capabilities_json);
    w.key("serverInfo").begin_object().member("name", e.s.info.name).member("version", e.s.info.version);
    if (!e.s.info.title.empty()) w.member("title", e.s.info.title);
    w.end_object();
    if (!e.s.info.instructions.empty()) w.member("instructions", e.s.info.instructions);
    w.end_object();
  });
  return true;
}

// ---- tools/call: the gate pipeline (spec §4) ---------------------------------------------------

inline bool write_tool_result(request_env& e, compiled_tool& t, const tool_result& r, const correlation_id*& cid_out,
                              correlation_id& cid_storage) {
  // Structured content is checked before anything is written: a malformed payload from the
  // handler becomes -32603, never a malformed response.
  std::optional<json::document> doc;  // only structured results pay for a document
  json::value structured;
  if (!r.structured_json().empty()) {
    auto v = doc.emplace().parse(r.structured_json());
    if (!v || !v->is_object()) {
      cid_storage = e.s.mint_cid();
      cid_out = &cid_storage;
      write_error(e, errc::internal_error, "The tool returned structured content that is not a JSON object",
                  cid_storage.view(), "Report the correlation_id to the server's operator.");
      return false;
    }
    structured = *v;
  } else if (!t.def.output_schema.empty() && !r.is_error()) {
    cid_storage = e.s.mint_cid();
    cid_out = &cid_storage;
    write_error(e, errc::internal_error, "The tool declares an outputSchema but returned no structured content",
                cid_storage.view(), "Report the correlation_id to the server's operator.");
    return false;
  }
  write_result_response(e.out, e.id, [&](json::writer& w) {
    w.begin_object().key("content").begin_array();
    if (r.content().empty() && structured.exists()) {
      // The text twin (reference §1.7): the same JSON, for clients that read only content.
      std::string text;
      json::writer tw{text};
      tw.value(structured);
      w.begin_object().member("type", "text").member("text", text).end_object();
    }
    for (const auto& c : r.content()) c.write(w);
    w.end_array();
    if (structured.exists()) w.key("structuredContent").value(structured);
    if (r.is_error()) w.member("isError", true);
    w.end_object();
  });
  return true;
}

// "approval expired (past its 7-day lifetime)", naming the configured lifetime in its largest
// whole unit ("36-hour", "90-minute", "45-second", "1500-millisecond").
inline std::string expired_message(std::chrono::milliseconds lifetime) {
  using namespace std::chrono;
  static constexpr std::pair<milliseconds, std::string_view> units[] = {
      {days{1}, "day"},      {hours{1}, "hour"},           {minutes{1}, "minute"},
      {seconds{1}, "second"}, {milliseconds{1}, "millisecond"}};
  std::string phrase = std::to_string(lifetime.count()) + "-millisecond";
  for (const auto& [unit, name] : units) {
    if (lifetime >= unit && lifetime % unit == milliseconds::zero()) {
      phrase = std::to_string(lifetime / unit) + "-" + std::string{name};
      break;
    }
  }
  return "approval expired (past its " + phrase + " lifetime)";
}

// g++ 12 and clang 19 warn about members left to their default initializers in designated
// initializers, which is exactly how pipeline_answer is meant to be used.
#if defined(__GNUC__)
#  pragma GCC diagnostic push
#  pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#endif

// One answer of the tools/call pipeline before (or instead of) the handler: a JSON-RPC error
// with the A4 envelope and, unless `audit` is false, one audit row carrying the same
// correlation id (the one-cid pattern).
struct pipeline_answer {
  errc code = errc::internal_error;
  std::string_view message;
  std::string_view remediation;
  std::string detail;  // the audit detail head; " correlation_id=<cid>" is appended
  audit_result result = audit_result::denied;
  call_outcome outcome = call_outcome::denied;
  std::optional<std::chrono::milliseconds> retry_after;
  std::string_view approval_id;  // -32006 only, with its status URL
  std::string status_url;
  bool audit = true;
};

inline bool answer(request_env& e, compiled_tool& t, const pipeline_answer& a) {
  auto& s = e.s;
  const auto cid = s.mint_cid();
  bool persisted = true;
  if (a.audit) {
    std::string detail = a.detail;
    detail += detail.empty() ? "correlation_id=" : " correlation_id=";
    detail += cid.view();
    persisted = s.record(t.action, "mcp_tool", t.def.name, e.ctx.caller, a.result, detail, cid.view());
  }
  t.outcomes[static_cast<std::size_t>(a.outcome)].inc();
  error_data d;
  d.correlation_id = cid.view();
  d.retry_after_ms = a.retry_after;
  d.remediation = a.remediation;
  if (!a.approval_id.empty()) {
    d.approval_id = a.approval_id;
    d.status_url = a.status_url;
  }
  if (!persisted) d.audit_persisted = false;
  write_error_response(e.out, e.id, a.code, a.message, d);
  return true;
}

// Step 5 of spec §4: the approval machine (reference §5.3-5.7). Returns an answer when the call
// stops here; std::nullopt when the ticket was consumed and the call proceeds (`consumed` set).
inline std::optional<bool> approval_step(request_env& e, compiled_tool& t, json::value args, bool& consumed) {
  auto& s = e.s;
  if (s.approvals == nullptr) {
    // Degraded (reference §5.7): never a -32006 without a pollable ticket.
    return answer(e, t, {.code = errc::tier_denied,
                         .message = "This operation requires approval, but no approval store is configured",
                         .remediation = "Ask the server's operator to enable approvals, or perform the operation "
                                        "through the host's REST API or dashboard.",
                         .detail = "approval unavailable"});
  }
  auto& svc = *s.approvals;
  const approval_precondition& pre = t.def.precondition;
  const auto g = pre ? svc.gate(t.def.name, e.ctx.caller, args, approval_precondition_ref{pre})
                     : svc.gate(t.def.name, e.ctx.caller, args);
  auto& m = t.approval;
  const std::string id_head = "approval_id=" + g.approval_id;
  auto refused = [&](std::string_view message, std::string_view remediation, std::string detail,
                     audit_result result = audit_result::denied) {
    m.refused.inc();
    return answer(e, t, {.code = errc::permission_denied, .message = message, .remediation = remediation,
                         .detail = std::move(detail), .result = result});
  };
  auto required = [&](bool audit, std::string detail) {
    return answer(e, t, {.code = errc::approval_required,
                         .message = "operation requires approval",
                         .remediation = "An approver must approve this approval_id (see status_url); then call this "
                                        "tool again with the same arguments plus the approval_id argument to run it "
                                        "once.",
                         .detail = std::move(detail),
                         .result = audit_result::pending,
                         .outcome = call_outcome::approval_required,
                         .retry_after = retry::approval_poll,
                         .approval_id = g.approval_id,
                         .status_url = svc.status_url(g.approval_id),
                         .audit = audit});
  };
  switch (g.verdict) {
    case approval_verdict::proceed:
      consumed = true;
      m.consumed.inc();
      (void)s.record(t.action, "mcp_tool", t.def.name, e.ctx.caller, audit_result::approved,
                     "consumed " + id_head, {});
      return std::nullopt;
    case approval_verdict::minted: m.minted.inc(); return required(true, id_head);
    case approval_verdict::deduped: m.deduped.inc(); return required(true, id_head + " (deduped)");
    case approval_verdict::pending: return required(false, {});  // a poll writes no audit row
    case approval_verdict::submitter_cap:
      return answer(e, t, {.code = errc::tier_denied,
                           .message = "too many pending approvals for this principal",
                           .remediation = "Wait until an approver reviews your pending requests (or they expire), "
                                          "then call again.",
                           .detail = "approval refused: submitter_cap",
                           .retry_after = retry::approval_poll});
    case approval_verdict::global_cap:
      return answer(e, t, {.code = errc::tier_denied,
                           .message = "too many pending approvals on this server",
                           .remediation = "Wait until approvers work through the pending requests, then call again.",
                           .detail = "approval refused: global_cap",
                           .retry_after = retry::approval_poll});
    case approval_verdict::unidentified:
      return answer(e, t, {.code = errc::permission_denied,
                           .message = "approval requires an identified caller",
                           .remediation = "Authenticate with a credential that names a principal.",
                           .detail = "approval refused: unidentified caller"});
    case approval_verdict::bad_id:
      t.args_invalid.inc();
      return answer(e, t, {.code = errc::invalid_params,
                           .message = "Invalid arguments at /approval_id: must be a 32-character lowercase "
                                      "hexadecimal approval id",
                           .remediation = "Pass the approval_id exactly as the -32006 error returned it, or omit it "
                                          "to request approval; nothing was minted or consumed.",
                           .detail = "schema path=/approval_id"});
    case approval_verdict::mismatch:
      return refused("the approval_id does not match this tool and arguments",
                     "Call again without approval_id to request approval for these arguments; a ticket runs only "
                     "the exact tool and arguments that were approved.",
                     id_head + " refused: mismatch");
    case approval_verdict::rejected:
      return refused("approval was rejected", "Submit a new request (call without approval_id) if it is still needed.",
                     id_head + " refused: rejected");
    case approval_verdict::expired: {
      const std::string message = expired_message(svc.options().ticket_lifetime);
      return refused(message, "Submit a new request (call without approval_id).", id_head + " refused: expired");
    }
    case approval_verdict::refused: {
      // Anti-oracle (reference §5.4 6): replay, foreign origin and foreign submitter read alike;
      // only the audit row names the reason.
      std::string detail = id_head + " refused: " + std::string{to_string(g.refusal)};
      return refused("approval already used (one-time ticket)",
                     "Submit a new request (call without approval_id); each approval runs the operation at most "
                     "once.",
                     std::move(detail));
    }
    case approval_verdict::precondition:
      m.precondition.inc();
      return answer(e, t, {.code = errc::permission_denied,
                           .message = "approval cannot be redeemed right now: a precondition of this operation was "
                                      "not met",
                           .remediation = "The approval is still valid and was NOT consumed; call again later with "
                                          "the same arguments and approval_id.",
                           .detail = id_head + " refused: precondition: " + sanitize_audit_value(g.detail)});
    case approval_verdict::store_transient:
    case approval_verdict::store_permanent: {
      const bool transient = g.verdict == approval_verdict::store_transient;
      if (g.during_mint) {
        return answer(e, t, {.code = errc::internal_error,
                             .message = "failed to create approval request",
                             .remediation = transient ? "Retry the same call; no approval request was created."
                                                      : "This will not clear on retry; no approval request was "
                                                        "created. Report the correlation_id to the server's operator.",
                             .detail = "approval submit failed: " + sanitize_audit_value(g.detail),
                             .result = audit_result::failure,
                             .outcome = call_outcome::failure,
                             .retry_after = transient ? std::optional{retry::store_fault} : std::nullopt});
      }
      m.refused.inc();
      if (g.binding_unverified) m.masked.inc();
      std::string detail = id_head + " refused: store_error";
      if (g.binding_unverified) detail += " (origin/submitter unverified)";
      detail += " " + sanitize_audit_value(g.detail);
      return answer(
          e, t,
          {.code = errc::internal_error,
           .message = transient ? "approval store temporarily unavailable" : "approval store unavailable",
           .remediation = transient ? "Retry the same call unchanged: the approval was not consumed; do not request "
                                      "a fresh one. The approval's lifetime keeps running."
                                    : "This will not clear on retry. The approval was not consumed; report the "
                                      "correlation_id to the server's operator.",
           .detail = std::move(detail),
           .result = audit_result::failure,
           .outcome = call_outcome::failure,
           .retry_after = transient ? std::optional{retry::approval_store_transient} : std::nullopt});
    }
  }
  return answer(e, t, {.code = errc::internal_error, .message = "approval machine fault",
                       .remediation = "Report the correlation_id to the server's operator.",
                       .detail = "approval verdict out of range", .result = audit_result::failure,
                       .outcome = call_outcome::failure});
}

// The approver tools (reference §5.8): RBAC already allowed Approve on their securable; the
// service checks assurance, separation of duties and the pending-only rule.
inline bool review_step(request_env& e, compiled_tool& t, json::value args) {
  auto& s = e.s;
  const std::string_view id = args["approval_id"].as_string();  // schema-validated: 32 hex
  const bool approving = t.def.builtin == builtin_tool::approve_request;
  const auto comment = args["comment"];
  const auto out = approving ? s.approvals->approve(id, e.ctx.caller)
                             : s.approvals->reject(id, e.ctx.caller, comment.is_string() ? comment.as_string()
                                                                                          : std::string_view{});
  const std::string id_head = "approval_id=" + std::string{id};
  if (out.assurance != approver_assurance::ok) {
    const std::string message = "approver_assurance_required:" + std::string{to_string(out.assurance)};
    return answer(e, t, {.code = errc::permission_denied,
                         .message = message,
                         .remediation = "Only a person signed in interactively with strong authentication can review "
                                        "approvals; use the host's approval page.",
                         .detail = id_head + " approver_assurance:" + std::string{to_string(out.assurance)}});
  }
  if (out.comment_too_long) {
    t.args_invalid.inc();
    const std::string message = "Invalid arguments at /comment: longer than " +
                                std::to_string(s.approvals->options().max_review_comment_bytes) + " bytes";
    return answer(e, t, {.code = errc::invalid_params, .message = message,
                         .remediation = "Shorten the comment; nothing was reviewed.",
                         .detail = "schema path=/comment"});
  }
  if (out.error) {
    const bool permanent = is_permanent_store_error(out.error);
    return answer(e, t, {.code = errc::internal_error,
                         .message = permanent ? "approval store unavailable" : "approval store temporarily unavailable",
                         .remediation = permanent ? "This will not clear on retry; nothing was reviewed. Report the "
                                                    "correlation_id to the server's operator."
                                                  : "Retry the same call; nothing was reviewed.",
                         .detail = id_head + " review failed: " + sanitize_audit_value(out.error.message()),
                         .result = audit_result::failure,
                         .outcome = call_outcome::failure,
                         .retry_after = permanent ? std::nullopt : std::optional{retry::approval_store_transient}});
  }
  switch (out.status) {
    case approval_review_status::reviewed: break;
    case approval_review_status::not_found:
      return answer(e, t, {.code = errc::invalid_params, .message = "no approval request has this approval_id",
                           .remediation = "Check the approval_id against the approval queue.",
                           .detail = id_head + " refused: not_found"});
    case approval_review_status::already_reviewed:
      return answer(e, t, {.code = errc::permission_denied, .message = "already reviewed by another user",
                           .remediation = "Nothing to do: the request is no longer pending.",
                           .detail = id_head + " refused: already_reviewed"});
    case approval_review_status::expired: {
      const std::string message = expired_message(s.approvals->options().ticket_lifetime);
      return answer(e, t, {.code = errc::permission_denied, .message = message,
                           .remediation = "Nothing to do: the submitter must request approval again.",
                           .detail = id_head + " refused: expired"});
    }
    case approval_review_status::self_review:
      return answer(e, t, {.code = errc::permission_denied, .message = "the reviewer must differ from the submitter",
                           .remediation = "Another approver must review this request.",
                           .detail = id_head + " refused: self_review"});
  }
  const std::string_view status = approving ? "approved" : "rejected";
  std::string structured;
  {
    json::writer w{structured};
    w.begin_object().member("approval_id", id).member("status", status).end_object();
  }
  const tool_result r = tool_result::structured(std::move(structured));
  correlation_id cid_storage;
  const correlation_id* cid = nullptr;
  if (!write_tool_result(e, t, r, cid, cid_storage)) return true;
  t.outcomes[static_cast<std::size_t>(call_outcome::success)].inc();
  (void)s.record(t.action, "mcp_tool", t.def.name, e.ctx.caller, audit_result::success,
                 id_head + " " + std::string{status}, {});
  return true;
}

#if defined(__GNUC__)
#  pragma GCC diagnostic pop
#endif

inline bool handle_tools_call(request_env& e) {
  auto& s = e.s;
  const auto& who = e.ctx.caller;
  const auto name = e.msg.params["name"];
  if (!name.is_string()) return bad_params(e, "tools/call needs params.name (a string)");
  const auto args = e.msg.params["arguments"];
  if (args.exists() && !args.is_object()) return bad_params(e, "params.arguments must be an object");

  // 1. Classify the name.
  const auto it = s.tool_index.find(name.as_string());
  if (it == s.tool_index.end()) {
    s.tool_unknown.inc();
    const auto cid = s.mint_cid();
    const auto target = sanitize_audit_value(name.as_string());
    const std::string detail = "unknown tool correlation_id=" + std::string{cid.view()};
    const bool persisted = s.record("mcp.unknown_tool", "mcp_tool", target, who, audit_result::denied, detail, cid.view());
    write_error(e, s.options.unknown_tool_is_method_not_found ? errc::method_not_found : errc::invalid_params,
                "Unknown tool: " + echo_name(name.as_string()), cid.view(),
                "Call tools/list for the tools this server offers.", std::nullopt, persisted);
    return true;
  }
  auto& t = s.tools[it->second];
  auto counted = [&](call_outcome o) { t.outcomes[static_cast<std::size_t>(o)].inc(); };
  auto deny = [&](errc code, std::string_view message, std::string_view remediation, std::string_view detail_head,
                  audit_result result = audit_result::denied, call_outcome outcome = call_outcome::denied) {
    const auto cid = s.mint_cid();
    std::string detail{detail_head};
    detail += detail.empty() ? "correlation_id=" : " correlation_id=";
    detail += cid.view();
    const bool persisted = s.record(t.action, "mcp_tool", t.def.name, who, result, detail, cid.view());
    counted(outcome);
    write_error(e, code, message, cid.view(), remediation, std::nullopt, persisted);
    return true;
  };

  // 2. Kill switches (disabled is answered before routing, in server::handle).
  if (t.op != operation::read && s.switches.read_only()) {
    return deny(errc::tier_denied, "MCP is in read-only mode",
                "Only read tools are served while the server is in read-only mode; use the host's REST API or "
                "dashboard, or ask an operator to lift read-only mode.",
                "read-only mode");
  }
  // 3. Tier gate.
  const auto decision = s.policy->decide(who.tier, t.def.securable, t.op);
  if (decision == tier_decision::deny) {
    const std::string head = "tier=" + sanitize_audit_value(who.tier);
    return deny(errc::tier_denied, "MCP tier does not allow this operation",
                "Use a token of a higher tier, or the host's REST API or dashboard.", head);
  }
  // 4. Input-schema validation, for every tool, before anything else happens.
  if (auto v = t.input.validate(args.exists() ? args : s.empty_object.root())) {
    t.args_invalid.inc();
    const std::string path = v->path.empty() ? std::string{"/"} : v->path;
    const std::string message = "Invalid arguments at " + path + ": " + v->reason;
    const std::string head = "schema path=" + sanitize_audit_value(path);
    return deny(errc::invalid_params, message,
                "Fix the arguments to match the tool's inputSchema from tools/list; nothing was executed and no "
                "approval ticket was created or consumed.",
                head);
  }
  // The request id is claimed before the approval step: a duplicate in-flight id must be refused
  // before it can spend a ticket.
  call_scope scope{e.ctx, e.id};
  if (!scope.registered()) {
    const auto cid = s.mint_cid();
    write_error(e, errc::invalid_request, "A request with this id is already in flight", cid.view(),
                "Use a new request id for every request.");
    return true;
  }
  scope.link(e.ctx.stop);
  // 5. Approval: mint, poll or redeem a ticket (spec §5).
  bool consumed = false;
  if (decision == tier_decision::allow_with_approval) {
    if (auto answered = approval_step(e, t, args, consumed)) return *answered;
  }
  // From here on a consumed ticket is spent: a request that still fails burned it (reference §3.4).
  auto burned = [&](bool cancelled) {
    if (!consumed) return;
    (cancelled ? t.approval.burned_cancelled : t.approval.burned_rejected).inc();
  };
  // 6. RBAC.
  bool allowed = false;
  try {
    allowed = s.authz->allowed(who, t.def.securable, t.op);
  } catch (...) {
    allowed = false;
  }
  if (!allowed) {
    burned(false);
    return deny(errc::permission_denied, "Permission denied",
                "The caller lacks the permission this tool needs; ask an administrator for the role.", "rbac");
  }
  // 7. The handler (the approver tools' handler is the library's own).
  if (t.def.builtin != builtin_tool::none) return review_step(e, t, args);
  if (scope.cancelled()) {
    // The connection closed (or the transport stopped) before the handler started: nothing runs.
    burned(true);
    counted(call_outcome::cancelled);
    return false;
  }
  call_state_impl state{s, e.ctx, e.id, e.msg.params["_meta"]["progressToken"], scope.token()};
  call_context cc{state};
  std::optional<tool_result> r;
  try {
    r.emplace(t.def.handler(cc, args));
  } catch (...) {
    r.reset();
  }
  if (scope.cancelled()) {
    burned(true);
    counted(call_outcome::cancelled);
    (void)s.record(t.action, "mcp_tool", t.def.name, who, audit_result::failure, "cancelled", {});
    return false;
  }
  if (!r) {
    burned(false);
    s.handler_exceptions.inc();
    return deny(errc::internal_error, "The tool failed unexpectedly",
                "The server kept running; report the correlation_id to its operator. Retrying may repeat side "
                "effects of a partial run.",
                "handler exception", audit_result::failure, call_outcome::failure);
  }
  correlation_id cid_storage;
  const correlation_id* cid = nullptr;
  if (!write_tool_result(e, t, *r, cid, cid_storage)) {
    burned(false);
    counted(call_outcome::failure);
    (void)s.record(t.action, "mcp_tool", t.def.name, who, audit_result::failure,
                   "invalid result correlation_id=" + std::string{cid->view()}, cid->view());
    return true;
  }
  counted(r->is_error() ? call_outcome::error_result : call_outcome::success);
  (void)s.record(t.action, "mcp_tool", t.def.name, who, r->is_error() ? audit_result::failure : audit_result::success,
                 r->is_error() ? "is_error" : "", {});
  return true;
}

// ---- resources ---------------------------------------------------------------------------------

struct resource_match {
  const compiled_resource* r = nullptr;
  uri_variables vars;
};

inline std::optional<resource_match> find_resource(const server::impl& s, std::string_view uri) {
  if (auto it = s.resource_index.find(uri); it != s.resource_index.end()) {
    return resource_match{&s.resources[it->second], {}};
  }
  if (uri.size() > max_template_subject_bytes) return std::nullopt;
  for (const auto& t : s.templates) {
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
  write_error(e, errc::resource_not_found, "Resource not found: " + echo_name(uri), cid.view(),
              "Call resources/list and resources/templates/list for the resources this server offers.");
  return true;
}

inline bool handle_resources_read(request_env& e) {
  const auto uri = e.msg.params["uri"];
  if (!uri.is_string()) return bad_params(e, "resources/read needs params.uri (a string)");
  auto m = find_resource(e.s, uri.as_string());
  if (!m) return resource_not_found(e, uri.as_string());
  call_scope scope{e.ctx, e.id};
  scope.link(e.ctx.stop);
  call_state_impl state{e.s, e.ctx, e.id, e.msg.params["_meta"]["progressToken"], scope.token()};
  call_context cc{state};
  std::optional<resource_result> r;
  try {
    r = m->r->def.handler(cc, uri.as_string(), m->vars);
  } catch (...) {
    return internal_fault(e, "The resource could not be read");
  }
  if (scope.cancelled()) return false;
  if (!r) return resource_not_found(e, uri.as_string());
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
  if (!find_resource(e.s, uri.as_string())) return resource_not_found(e, uri.as_string());
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

inline bool handle_prompts_get(request_env& e) {
  const auto name = e.msg.params["name"];
  if (!name.is_string()) return bad_params(e, "prompts/get needs params.name (a string)");
  const auto it = e.s.prompt_index.find(name.as_string());
  if (it == e.s.prompt_index.end()) {
    const auto cid = e.s.mint_cid();
    write_error(e, errc::invalid_params, "Unknown prompt: " + echo_name(name.as_string()), cid.view(),
                "Call prompts/list for the prompts this server offers.");
    return true;
  }
  const auto& p = e.s.prompts[it->second];
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
  call_state_impl state{e.s, e.ctx, e.id, e.msg.params["_meta"]["progressToken"], scope.token()};
  call_context cc{state};
  std::optional<prompt_result> r;
  try {
    r.emplace(p.def.handler(cc, args));
  } catch (...) {
    return internal_fault(e, "The prompt could not be produced");
  }
  if (scope.cancelled()) return false;
  write_result_response(e.out, e.id, [&](json::writer& w) {
    w.begin_object();
    if (!r->description().empty()) w.member("description", r->description());
    w.key("messages").begin_array();
    for (const auto& [role, content] : r->messages()) write_content_message(w, role, content);
    w.end_array().end_object();
  });
  return true;
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
    const auto it = e.s.prompt_index.find(ref["name"].as_string());
    if (it == e.s.prompt_index.end()) {
      const auto cid = e.s.mint_cid();
      write_error(e, errc::invalid_params, "Unknown prompt: " + echo_name(ref["name"].as_string()), cid.view(),
                  "Call prompts/list for the prompts this server offers.");
      return true;
    }
    prompt = &e.s.prompts[it->second].def;
    for (const auto& a : prompt->arguments) {
      if (a.name != arg_name) continue;
      if (a.complete) fn = &a.complete;
      if (!a.enum_values.empty()) enum_arg = &a;
    }
  } else if (type == "ref/resource") {
    if (!ref["uri"].is_string()) return bad_params(e, "params.ref.uri must be a string");
    const auto uri = ref["uri"].as_string();
    const compiled_resource* found = nullptr;
    for (const auto& t : e.s.templates) {
      if (t.def.uri == uri) found = &t;
    }
    if (found == nullptr) {
      if (auto it = e.s.resource_index.find(uri); it != e.s.resource_index.end()) found = &e.s.resources[it->second];
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
        std::lock_guard lock{p.mu};
        if (auto it = p.in_flight.find(request_id{*id}); it != p.in_flight.end()) {
          it->second.request_stop();
          hit = true;
        }
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
  const auto method = classify_method(msg.method);
  s.requests[static_cast<std::size_t>(method)].inc();
  if (s.switches.disabled()) {
    // Reference §1.4: deliberately bare (no error.data). The id is echoed so that stdio clients
    // can match it; the HTTP transport answers before parsing, with id null.
    write_error_response(out, msg.id, errc::mcp_disabled, "MCP is disabled on this server", error_data{});
    return true;
  }
  request_env e{s, ctx, *msg.id, msg, out};
  switch (method) {
    case method_id::initialize: return handle_initialize(e);
    case method_id::ping: write_result_response(out, *msg.id, "{}"); return true;
    case method_id::tools_call: return handle_tools_call(e);
    case method_id::tools_list:
      return write_page(e, "tools", s.tools, 1, [](const compiled_tool& t) -> const std::string& { return t.listing; });
    case method_id::resources_list:
      return write_page(e, "resources", s.resources, 2,
                        [](const compiled_resource& r) -> const std::string& { return r.listing; });
    case method_id::resources_templates_list:
      return write_page(e, "resourceTemplates", s.templates, 3,
                        [](const compiled_resource& r) -> const std::string& { return r.listing; });
    case method_id::prompts_list:
      return write_page(e, "prompts", s.prompts, 4,
                        [](const compiled_prompt& p) -> const std::string& { return p.listing; });
    case method_id::resources_read: return handle_resources_read(e);
    case method_id::resources_subscribe: return handle_subscription(e, true);
    case method_id::resources_unsubscribe: return handle_subscription(e, false);
    case method_id::prompts_get: return handle_prompts_get(e);
    case method_id::completion_complete: return handle_completion(e);
    case method_id::logging_set_level: {
      const auto level = msg.params["level"];
      const auto parsed = level.is_string() ? parse_log_level(level.as_string()) : std::nullopt;
      if (!parsed) {
        return bad_params(e, "params.level must be one of debug, info, notice, warning, error, critical, alert, "
                             "emergency");
      }
      if (ctx.client != nullptr) ctx.client->state().level.store(static_cast<int>(*parsed));
      write_result_response(out, *msg.id, "{}");
      return true;
    }
    case method_id::other:
    case method_id::count: break;
  }
  const auto cid = s.mint_cid();
  write_error(e, errc::method_not_found, "Unknown method: " + echo_name(msg.method), cid.view(),
              "See the MCP specification (2025-11-25) for the methods a server offers.");
  return true;
}

MCPCORE_DECL bool server::has_resource(std::string_view uri) const {
  return detail::find_resource(*impl_, uri).has_value();
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
