// SPDX-License-Identifier: Apache-2.0
// The dispatch core's state: the builder's tables, the compiled tools, resources and prompts,
// the method table, URI-template matching and `server::impl` (the immutable server, its
// plug-ins and metric handles).
#ifndef MCPCORE_IMPL_SERVER_STATE_IPP
#define MCPCORE_IMPL_SERVER_STATE_IPP

#include <mcpcore/dispatch/server.hpp>

#include <mcpcore/dispatch/schema.hpp>
#include <mcpcore/wire/correlation_id.hpp>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

MCPCORE_BEGIN_NAMESPACE

namespace detail {

struct builder_state {
  server_info info;
  server_options options;
  std::deque<tool_def> tools;
  std::deque<resource_def> resources;
  std::deque<prompt_def> prompts;
  std::optional<std::vector<std::string>> securables;
  std::unique_ptr<policy_base> policy;
  scope_map scopes;  // server_builder::oauth_scopes
  std::unique_ptr<authorizer_base> authz;
  std::unique_ptr<audit_base> audit;
  std::unique_ptr<clock_base> clock;
  std::optional<metrics_binding> metrics;
  approval_service* approvals = nullptr;
  std::unique_ptr<task_store_base> task_store;  // server_builder::tasks; null: tasks off
  task_options task_opts;
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

// The approval series of one gated tool (docs/metrics.md#names-and-registration).
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
  schema::compiled_schema output;  // the outputSchema, when declared (has_output_schema)
  bool has_output_schema = false;
  std::string listing;  // the tools/list entry
  std::string action;   // "mcp.<name>" (the audit action)
  operation op = operation::read;
  counter outcomes[static_cast<std::size_t>(call_outcome::count)];
  counter args_invalid;
  counter output_invalid;  // results refused for their structured content (docs/design.md#the-toolscall-pipeline)
  bool gated = false;  // some tier of server_options::policy_tiers routes it through approval
  approval_counters approval;
  std::vector<param_header> param_headers;  // x-mcp-header properties (docs/eras.md#headers)
  /// Run-time visibility (`server::set_tool_enabled`).
  mutable std::atomic<bool> hidden{false};
};

struct compiled_resource {
  resource_def def;
  std::vector<template_part> parts;  // templates only
  std::string listing;
};

struct compiled_prompt {
  prompt_def def;
  std::string listing;
  /// Run-time visibility (`server::set_prompt_enabled`).
  mutable std::atomic<bool> hidden{false};
};

/// The list kinds; each one's cursors carry its kind and the generation of its list.
enum class list_kind : std::uint8_t { tools = 1, resources = 2, templates = 3, prompts = 4 };

/// One immutable version of the server's tables (docs/server.md#tables-that-change): what a
/// request reads, from the start of its dispatch to its answer. A change builds a new version and
/// swaps it in; a request (or a call waiting for its client) keeps the version it started with,
/// and with it every tool, resource and prompt it may still use. Entries are shared between
/// versions, so that a change copies pointers, not compiled schemas.
struct tables {
  std::vector<std::shared_ptr<compiled_tool>> tools;  // registration order (a replacement keeps its place)
  std::map<std::string, std::size_t, std::less<>> tool_index;
  std::vector<std::shared_ptr<const compiled_resource>> resources;
  std::map<std::string, std::size_t, std::less<>> resource_index;
  std::vector<std::shared_ptr<const compiled_resource>> templates;
  std::vector<std::shared_ptr<const compiled_prompt>> prompts;
  std::map<std::string, std::size_t, std::less<>> prompt_index;
  bool has_completions = false;
  /// initialize's capabilities and server/discover's (docs/design.md#other-methods).
  std::string capabilities_json;
  std::string per_request_capabilities_json;
  /// Changes of each list so far (index: `list_kind`); a cursor names the generation it was
  /// issued in and is refused in another.
  std::uint64_t generation[5] = {};

  /// Rebuilds the indexes and `has_completions` from the lists.
  void reindex() {
    tool_index.clear();
    resource_index.clear();
    prompt_index.clear();
    has_completions = false;
    for (std::size_t i = 0; i < tools.size(); ++i) tool_index.emplace(tools[i]->def.name, i);
    for (std::size_t i = 0; i < resources.size(); ++i) {
      resource_index.emplace(resources[i]->def.uri, i);
      has_completions = has_completions || !resources[i]->def.completers.empty();
    }
    for (const auto& t : templates) has_completions = has_completions || !t->def.completers.empty();
    for (std::size_t i = 0; i < prompts.size(); ++i) {
      prompt_index.emplace(prompts[i]->def.name, i);
      for (const auto& a : prompts[i]->def.arguments) {
        has_completions = has_completions || a.complete || !a.enum_values.empty();
      }
    }
  }
};

// Methods counted by mcp_requests_total{method}.
enum class method_id : std::uint8_t {
  initialize, ping, tools_list, tools_call, resources_list, resources_templates_list, resources_read,
  resources_subscribe, resources_unsubscribe, prompts_list, prompts_get, completion_complete,
  logging_set_level, server_discover, subscriptions_listen, tasks_get, tasks_result, tasks_list, tasks_cancel,
  tasks_update, other, count
};
inline constexpr std::string_view method_names[] = {
    "initialize",       "ping",           "tools/list",         "tools/call",
    "resources/list",   "resources/templates/list",             "resources/read",
    "resources/subscribe", "resources/unsubscribe", "prompts/list", "prompts/get",
    "completion/complete", "logging/setLevel", "server/discover", "subscriptions/listen", "tasks/get",
    "tasks/result",     "tasks/list",     "tasks/cancel",       "tasks/update",     "other"};

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

class waiting_call;
struct task_engine;

/// The calls waiting for a client (docs/eras.md#waiting-for-the-client): each principal's count
/// (calls suspended between rounds and handlers blocked in `call_context::request`, capped by
/// `server_options::max_waiting_calls_per_principal`), and the suspended calls themselves, which
/// this table owns until they end (the maintenance tick expires them, shutdown cancels them).
struct waiting_table {
  std::mutex mu;  // a leaf
  std::map<std::string, std::size_t, std::less<>> per_principal;
  std::map<std::uint64_t, std::shared_ptr<waiting_call>> calls;
  std::uint64_t next_key = 0;

  /// Counts one more waiting call of `who`; false at `cap` (or without memory for the entry).
  bool try_add(std::string_view who, std::size_t cap) noexcept {
    const std::lock_guard lock{mu};
    try {
      auto it = per_principal.find(who);
      if (it == per_principal.end()) it = per_principal.emplace(std::string{who}, 0).first;
      if (it->second >= cap) return false;
      ++it->second;
      return true;
    } catch (...) {
      return false;
    }
  }
  /// Counts one waiting call of `who` less.
  void remove(std::string_view who) noexcept {
    const std::lock_guard lock{mu};
    const auto it = per_principal.find(who);
    if (it == per_principal.end()) return;
    if (--it->second == 0) per_principal.erase(it);
  }
  /// The suspended calls now (expiry and shutdown act on them outside the lock).
  std::vector<std::shared_ptr<waiting_call>> snapshot() noexcept {
    std::vector<std::shared_ptr<waiting_call>> out;
    const std::lock_guard lock{mu};
    try {
      out.reserve(calls.size());
      for (const auto& [key, c] : calls) out.push_back(c);
    } catch (...) {  // NOLINT(bugprone-empty-catch): best effort; the next tick tries again
    }
    return out;
  }
};

/// A handshake-era call blocked in a request to its client counts as waiting while it waits.
class waiting_slot {
 public:
  waiting_slot(waiting_table& t, std::string_view who, std::size_t cap) noexcept
      : t_(t), who_(who), held_(t.try_add(who, cap)) {}
  ~waiting_slot() {
    if (held_) t_.remove(who_);
  }
  waiting_slot(const waiting_slot&) = delete;
  waiting_slot& operator=(const waiting_slot&) = delete;
  explicit operator bool() const noexcept { return held_; }

 private:
  waiting_table& t_;
  std::string_view who_;  // the caller's id, alive for the call
  bool held_;
};

}  // namespace detail

struct server::impl {
  server_info info;
  server_options options;
  kill_switches switches;
  std::atomic<bool> shutting_down{false};
  /// The calls waiting for a client.
  detail::waiting_table waiting;
  /// The tables now (docs/server.md#tables-that-change): read with `tables()`, replaced whole by a
  /// run-time change.
  mutable std::mutex tables_mutex;  // a leaf: guards `current` only
  std::shared_ptr<const detail::tables> current;
  /// Serialises the run-time changes (held while one builds its new tables; taken before
  /// `tables_mutex`, never while publishing).
  std::mutex change_mutex;
  /// What a run-time registration is validated against, kept from the build.
  std::optional<std::vector<std::string>> securables;
  std::optional<detail::metrics_binding> metrics;
  /// The subscribers of `server::subscribe`.
  std::shared_ptr<detail::event_hub> events;
  std::unique_ptr<detail::policy_base> policy;
  /// The OAuth scopes for step-up (docs/oauth.md#step-up); empty: none.
  scope_map scopes;
  std::unique_ptr<detail::authorizer_base> authz;
  std::unique_ptr<detail::audit_base> audit;
  std::unique_ptr<detail::clock_base> clock;
  approval_service* approvals = nullptr;
  /// The task engine (docs/tasks.md); null while tasks are off.
  std::shared_ptr<detail::task_engine> tasks;
  std::vector<std::string> warnings;
  std::uint64_t cursor_salt = 0;
  /// `,"_meta":{"io.modelcontextprotocol/serverInfo":{...}}`, the tail of every per-request-era
  /// result (docs/eras.md#results).
  std::string server_info_meta;
  json::document empty_object;  // `{}`, validated for calls without arguments

  // metrics (inert when no sink was given)
  counter requests[static_cast<std::size_t>(detail::method_id::count)];
  counter initialize_revision[std::size(supported_protocol_versions)];
  counter cancel_accepted, cancel_noop, cancel_detached;
  counter tool_unknown, security_misconfig, unmatched_responses, audit_failures, handler_exceptions;

  /// The current tables; the copy keeps them alive while the caller uses them.
  [[nodiscard]] std::shared_ptr<const detail::tables> tables() const noexcept {
    const std::lock_guard lock{tables_mutex};
    return current;
  }

  correlation_id mint_cid() const noexcept { return next_correlation_id(clock->system_now()); }

  // Writes one audit row; never fails the request (docs/security.md#audit-and-the-one-cid-pattern).
  // Returns whether it persisted.
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

MCPCORE_END_NAMESPACE

#endif  // MCPCORE_IMPL_SERVER_STATE_IPP
