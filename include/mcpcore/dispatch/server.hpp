// SPDX-License-Identifier: Apache-2.0
// The dispatch core: a server built from host tables and plug-ins, answering every MCP server
// method for one parsed message at a time (docs/plugins.md, docs/design.md#json-rpc,
// #the-toolscall-pipeline).
#ifndef MCPCORE_SERVER_HPP
#define MCPCORE_SERVER_HPP

#include <mcpcore/detail/config.hpp>
#include <mcpcore/dispatch/tasks.hpp>
#include <mcpcore/dispatch/tool.hpp>
#include <mcpcore/expected.hpp>
#include <mcpcore/governance/approval.hpp>
#include <mcpcore/governance/audit.hpp>
#include <mcpcore/governance/clock.hpp>
#include <mcpcore/governance/metrics.hpp>
#include <mcpcore/governance/policy.hpp>
#include <mcpcore/governance/scopes.hpp>
#include <mcpcore/wire/era.hpp>
#include <mcpcore/wire/json.hpp>
#include <mcpcore/wire/jsonrpc.hpp>

#include <atomic>
#include <chrono>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <span>
#include <stop_token>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

MCPCORE_BEGIN_NAMESPACE

/// The protocol revisions `initialize` accepts, newest first (docs/design.md#other-methods). An
/// unknown requested revision is answered with the first (no error).
inline constexpr std::string_view supported_protocol_versions[] = {"2025-11-25", "2025-06-18",
                                                                    "2025-03-26"};
/// Whether `v` is one of `supported_protocol_versions`.
[[nodiscard]] constexpr bool is_supported_protocol_version(std::string_view v) noexcept {
  for (auto s : supported_protocol_versions) {
    if (s == v) return true;
  }
  return false;
}

/// `serverInfo` and `instructions` of the `initialize` result.
struct server_info {
  std::string name;
  std::string version;
  /// Optional display name.
  std::string title{};
  /// Optional orientation text for the model (`instructions`); omitted when empty.
  std::string instructions{};
};

/// Default number of items per page of every list method.
inline constexpr std::size_t default_page_size = 100;
/// Default cap on the server-to-client requests one peer may have outstanding.
inline constexpr std::size_t default_max_pending_client_requests = 64;
/// Default cap on the resource URIs one peer may subscribe to.
inline constexpr std::size_t default_max_subscriptions_per_peer = 1024;
/// Default caps on the server's tables, at build and after (docs/server.md#tables-that-change).
/// Each change copies its list's pointers and rebuilds its index, and every `resources/read` of
/// a URI that is not a fixed resource tries the templates one after another: the caps keep both
/// bounded.
inline constexpr std::size_t default_max_tools = 1024;
inline constexpr std::size_t default_max_resources = 4096;
inline constexpr std::size_t default_max_resource_templates = 256;
inline constexpr std::size_t default_max_prompts = 1024;
/// Longest caller-supplied name echoed in an error message ("Unknown tool: <name>"); longer
/// names are cut (at a UTF-8 boundary) and marked with "...".
inline constexpr std::size_t max_echoed_name_bytes = 128;

/// Who may reuse a cached per-request-era result (`cacheScope`, docs/eras.md#caching).
enum class cache_scope : std::uint8_t {
  per_caller,  ///< "private": only the client that asked (the default)
  shared,      ///< "public": any client, whatever its credentials
};

/// How long a client may reuse a list or read result of the per-request era (`ttlMs`) and who
/// may (`cacheScope`). The default, 0 and `per_caller`, says "do not reuse".
struct cache_hint {
  std::chrono::milliseconds ttl{0};
  cache_scope scope = cache_scope::per_caller;
};

/// How long a signed `requestState` stays valid (docs/eras.md#request-state).
inline constexpr std::chrono::seconds default_request_state_lifetime{600};
/// Shortest `server_options::request_state_key` accepted, in bytes.
inline constexpr std::size_t min_request_state_key_bytes = 32;
/// Rounds of input one handshake-era call may ask for before it fails
/// (docs/eras.md#the-handler-contract).
inline constexpr std::size_t default_max_input_rounds = 8;
/// Default cap on one principal's calls waiting for a client's answer at once
/// (docs/eras.md#waiting-for-the-client).
inline constexpr std::size_t default_max_waiting_calls_per_principal = 4;
/// Longest string `_meta.progressToken` that gets progress notifications, in bytes
/// (docs/errors.md#progress-tokens); a longer one, or a token that is neither a string nor an
/// integer, gets none.
inline constexpr std::size_t default_max_progress_token_bytes = 256;

/// The `_meta` key of a tool result that carries the correlation id of an argument error
/// (docs/errors.md#argument-errors).
inline constexpr std::string_view correlation_id_meta_key = "mcpcore/correlationId";
/// The `_meta` key that says `false` when the audit row of such a result could not be written.
inline constexpr std::string_view audit_persisted_meta_key = "mcpcore/auditPersisted";

/// Whether `token`, a request's `_meta.progressToken`, gets progress notifications
/// (docs/errors.md#progress-tokens): a string of at most `max_bytes` bytes, or an integer in the
/// signed 64-bit range. Anything else (null, booleans, objects, arrays, fractions, longer strings)
/// is treated as no token: the call runs, without progress.
[[nodiscard]] MCPCORE_DECL bool usable_progress_token(json::value token, std::size_t max_bytes) noexcept;

/// How a tools/call whose arguments break the tool's input schema is answered
/// (docs/errors.md#argument-errors).
enum class argument_error_style : std::uint8_t {
  tool_result,     ///< a tool result with `isError: true` (MCP 2025-11-25; the default)
  json_rpc_error,  ///< JSON-RPC -32602 (the earlier answer)
};

/// Behaviour switches of the dispatch core; every default is documented in docs/configuration.md.
struct server_options {
  /// Items per page of tools/list, resources/list, resources/templates/list, prompts/list.
  std::size_t page_size = default_page_size;
  /// Yuzu answers an unknown tool with -32601; MCP's convention (the default) is -32602.
  bool unknown_tool_is_method_not_found = false;
  /// The level below which `call_context::log` drops messages until the client sets one.
  log_level default_log_level = log_level::info;
  /// Upper bound on any server-to-client request's wait, whatever the handler asks.
  std::chrono::milliseconds max_client_request_timeout = default_client_request_timeout;
  /// Outstanding server-to-client requests per peer.
  std::size_t max_pending_client_requests = default_max_pending_client_requests;
  /// Resource subscriptions per peer; one more is refused with -32602 "Subscription limit reached".
  std::size_t max_subscriptions_per_peer = default_max_subscriptions_per_peer;
  /// Tiers the registration check asks the tier policy about, to find approval-gated tools
  /// (docs/design.md#registration-validation). The default is Yuzu's tier set, matching the default
  /// policy.
  std::vector<std::string> policy_tiers{"", "readonly", "operator", "supervised"};
  /// `ttlMs`/`cacheScope` of the per-request era's `tools/list`, `prompts/list`,
  /// `resources/list`, `resources/templates/list` and `server/discover` results.
  cache_hint list_cache{};
  /// `ttlMs`/`cacheScope` of `resources/read` results, unless the resource declares its own.
  cache_hint read_cache{};
  /// The HMAC-SHA-256 key that signs `requestState` (docs/eras.md#request-state): at least
  /// `min_request_state_key_bytes` bytes, shared by every server a client may reach. Empty: a
  /// random key per server (states do not survive a restart or cross servers).
  std::string request_state_key{};
  /// How long a `requestState` stays valid.
  std::chrono::seconds request_state_lifetime = default_request_state_lifetime;
  /// Rounds of input a handshake-era call may ask for (each round's requests go to the client on
  /// the session); the next one fails the call.
  std::size_t max_input_rounds = default_max_input_rounds;
  /// Calls of one principal waiting for a client's answer at once (an input round, or a handler
  /// in `call_context::request`); one more fails its request with `too_many_waiting`.
  std::size_t max_waiting_calls_per_principal = default_max_waiting_calls_per_principal;
  /// Longest string progress token echoed in progress notifications (docs/errors.md#progress-tokens).
  std::size_t max_progress_token_bytes = default_max_progress_token_bytes;
  /// How input-schema violations of tools/call are answered (docs/errors.md#argument-errors).
  argument_error_style argument_errors = argument_error_style::tool_result;
  /// Whether the tables change at run time and the clients are told (docs/server.md#tables-that-change):
  /// `initialize` advertises `listChanged: true` for tools, resources and prompts (and the three
  /// families even while empty, as `server/discover` does), and the transports send
  /// `notifications/{tools,resources,prompts}/list_changed` to the handshake era's sessions.
  bool list_changed = false;
  /// Tools the server may hold (built and added); one more refuses the build or the addition.
  std::size_t max_tools = default_max_tools;
  /// Fixed resources the server may hold.
  std::size_t max_resources = default_max_resources;
  /// Resource templates the server may hold.
  std::size_t max_resource_templates = default_max_resource_templates;
  /// Prompts the server may hold.
  std::size_t max_prompts = default_max_prompts;
};

/// Live kill switches (docs/security.md#kill-switches-and-read-only-mode), read on every request;
/// flip them from any thread.
class kill_switches {
 public:
  /// Every request answers -32005 "MCP is disabled on this server" (no error.data).
  void set_disabled(bool on) noexcept { disabled_.store(on, std::memory_order_relaxed); }
  /// Every tool whose operation is not `read` answers -32004 "MCP is in read-only mode".
  void set_read_only(bool on) noexcept { read_only_.store(on, std::memory_order_relaxed); }
  [[nodiscard]] bool disabled() const noexcept { return disabled_.load(std::memory_order_relaxed); }
  [[nodiscard]] bool read_only() const noexcept { return read_only_.load(std::memory_order_relaxed); }

 private:
  std::atomic<bool> disabled_{false};
  std::atomic<bool> read_only_{false};
};

/// How a tool affects the world; the single source of its annotations
/// (docs/concepts/tool_handler.md#the-table).
enum class tool_effect : std::uint8_t { read_only, additive, destructive };

/// The transport's channel for messages sent during a call (progress, log messages,
/// server-to-client requests) and for notifications outside calls.
///
/// Semantic requirements: (1) `send` delivers one complete JSON-RPC message, in call order,
/// before the call's response; (2) it is thread-safe; (3) it returns false when the message
/// cannot be delivered (closed connection) and never throws.
class MCPCORE_API message_sink {
 public:
  virtual ~message_sink() = default;
  virtual bool send(std::string_view message) noexcept = 0;
  /// Ends the call's SSE response early, quietly, for the client to resume with GET +
  /// `Last-Event-ID` after `retry` (0: the transport's default) (SEP-1699 polling; see
  /// `call_context::close_stream`). Returns whether it did; the default cannot.
  virtual bool close_stream(std::chrono::milliseconds retry) noexcept {
    (void)retry;
    return false;
  }
};

/// What the client declared in `initialize.capabilities` that the server may use.
struct client_capabilities {
  bool sampling = false;
  bool elicitation = false;
  bool roots = false;
};

/// The state one client connection (stdio) or session (HTTP) keeps between messages:
/// negotiated revision, client capabilities, log level, resource subscriptions, the calls in
/// flight (for cancellation) and the server-to-client requests awaiting an answer.
///
/// A peer is optional: without one, `server::handle` serves stateless requests (no
/// cancellation, no requests to the client).
///
/// @par Thread safety
/// All members are thread-safe.
class peer {
 public:
  MCPCORE_DECL peer();
  MCPCORE_DECL ~peer();
  peer(const peer&) = delete;
  peer& operator=(const peer&) = delete;

  /// The revision `initialize` negotiated; empty before it.
  [[nodiscard]] MCPCORE_DECL std::string protocol_version() const;
  /// Whether `notifications/initialized` arrived.
  [[nodiscard]] MCPCORE_DECL bool initialized() const noexcept;
  [[nodiscard]] MCPCORE_DECL client_capabilities capabilities() const noexcept;
  /// The level set by `logging/setLevel`, if any.
  [[nodiscard]] MCPCORE_DECL std::optional<log_level> level() const noexcept;
  [[nodiscard]] MCPCORE_DECL bool subscribed(std::string_view uri) const;
  /// Calls in flight.
  [[nodiscard]] MCPCORE_DECL std::size_t active_calls() const noexcept;
  /// Cancels every call in flight and fails every outstanding client request with `closed`;
  /// later client requests fail at once. Idempotent.
  MCPCORE_DECL void close() noexcept;
  /// Fails the outstanding client requests with `closed` (no answer can arrive any more: the
  /// input ended) while letting the calls in flight finish.
  MCPCORE_DECL void input_closed() noexcept;

  struct impl;
  /// Library use.
  [[nodiscard]] impl& state() noexcept { return *impl_; }

 private:
  impl* impl_;
};

/// What the dispatch core tells the transport about the answer it wrote (the per-request era's
/// HTTP status depends on the error code: docs/eras.md#errors).
struct dispatch_report {
  /// The code of the error response written; empty for a result.
  std::optional<errc> error;
  /// The tier gate refused an OAuth principal for lack of this scope (docs/oauth.md#step-up):
  /// an HTTP transport answers 403 `insufficient_scope`. Empty otherwise.
  std::string missing_scope{};
};

/// A transport's way to let a handshake-era call that waits for its client give its thread back
/// (docs/eras.md#waiting-for-the-client): the dispatch core sends the round's requests, returns
/// from `server::handle` without an answer, and resumes the handler on a handler thread when the
/// answers (or a timeout, a cancellation, the connection's end) arrive.
///
/// Semantic requirements: (1) `suspend` is called at most once per call, on the dispatching
/// thread, before `server::handle` returns false with nothing written; the transport then owes the
/// call's answer to `finish`, not to `handle`'s return; (2) `finish` is then called exactly once,
/// from any thread, possibly before `handle` returned; (3) `post` and `finish` are thread-safe and
/// never throw.
class MCPCORE_API call_resumer {
 public:
  /// The call will answer later: returns what keeps the call's message, caller, peer, sink and
  /// link alive until `finish` has run; null refuses (the call then waits on its thread).
  virtual std::shared_ptr<void> suspend() noexcept = 0;
  /// Runs `task` later on a handler thread; false when it cannot (the task is then dropped).
  virtual bool post(std::function<void()> task) noexcept = 0;
  /// The suspended call's answer: what `server::handle` would have returned, and written.
  virtual void finish(bool answered, std::string out) noexcept = 0;

 protected:
  call_resumer() = default;
  call_resumer(const call_resumer&) = default;
  call_resumer(call_resumer&&) = default;
  call_resumer& operator=(const call_resumer&) = default;
  call_resumer& operator=(call_resumer&&) = default;
  ~call_resumer() = default;
};

/// Where a message came from and where in-call messages go.
struct dispatch_context {
  /// The authenticated caller.
  const principal& caller;
  /// The connection's state; null serves the request statelessly.
  peer* client = nullptr;
  /// Channel for in-call messages; null drops progress and log messages and fails client
  /// requests with `no_channel`.
  message_sink* sink = nullptr;
  /// The transport's own stop signal (shutdown, a closed stream); linked to every call's stop
  /// token.
  std::stop_token stop{};
  /// The transport's record of this call (operation.hpp; on session transports, the progress
  /// bridge's record of a request carrying a progress token); lets a tool `detach` work beyond
  /// the call. Null: no record.
  call_link* progress = nullptr;
  /// The per-request era's envelope (docs/eras.md): non-null serves the message in that era
  /// (its methods, its result fields, the client capabilities and log level it declares); null
  /// serves it in the handshake era.
  const request_envelope* envelope = nullptr;
  /// Filled in after a request was answered; null: not wanted.
  dispatch_report* report = nullptr;
  /// Lets a handshake-era call that waits for its client free its thread; null: it waits on it.
  call_resumer* resumer = nullptr;
  /// Where the work of a task runs (docs/tasks.md#executors): the transport's handler pool. Null:
  /// none (a `task_start::immediate` tool then runs as a plain call, or answers -32603 when it
  /// requires a task).
  background_executor* background = nullptr;
  /// The client's channel beyond this call (docs/tasks.md#notifications): the session's GET stream
  /// over HTTP, the output over stdio. A task created by this request sends its progress and status
  /// notifications there while it lives. Null: none (they are dropped).
  std::shared_ptr<message_sink> session_sink{};
  /// The client's session beyond this call (docs/tasks.md#input): the peer (the same as `client`)
  /// whose answers a 2025-11-25 task created by this request waits for when it asks for input, its
  /// requests going out on `session_sink`. The task holds it weakly: once it is gone (the session
  /// ended) such a task fails. Null: none (a 2025-11-25 task asking for input fails).
  std::shared_ptr<peer> session_peer{};
};

/// A tool argument the client mirrors in an `Mcp-Param-<name>` header: a property of the input
/// schema annotated `"x-mcp-header": "<name>"` (docs/eras.md#headers).
struct param_header {
  enum class value_type : std::uint8_t { string, integer, boolean };
  /// The header's name after `Mcp-Param-` (an RFC 9110 token; compared case-insensitively).
  std::string name;
  /// The property names from the arguments object down to the value.
  std::vector<std::string> path;
  value_type type = value_type::string;
};

/// Name/value pairs matched out of a resource template (percent-decoded).
class uri_variables {
 public:
  [[nodiscard]] std::optional<std::string_view> find(std::string_view name) const noexcept {
    for (const auto& [k, v] : vars_) {
      if (k == name) return std::string_view{v};
    }
    return std::nullopt;
  }
  /// Library use.
  std::vector<std::pair<std::string, std::string>>& items() noexcept { return vars_; }
  [[nodiscard]] const std::vector<std::pair<std::string, std::string>>& items() const noexcept {
    return vars_;
  }

 private:
  std::vector<std::pair<std::string, std::string>> vars_;
};

/// The arguments of a `prompts/get` (string values; closed-enum arguments already normalised).
class prompt_arguments {
 public:
  [[nodiscard]] std::optional<std::string_view> find(std::string_view name) const noexcept {
    for (const auto& [k, v] : args_) {
      if (k == name) return std::string_view{v};
    }
    return std::nullopt;
  }
  /// Library use.
  std::vector<std::pair<std::string, std::string>>& items() noexcept { return args_; }
  [[nodiscard]] const std::vector<std::pair<std::string, std::string>>& items() const noexcept {
    return args_;
  }

 private:
  std::vector<std::pair<std::string, std::string>> args_;
};

/// A tool handler: plain function, lambda or function object; called concurrently.
using tool_handler = std::function<tool_result(call_context&, const arguments&)>;
/// A resource handler; `std::nullopt` means "no such resource" (-32002).
using resource_handler =
    std::function<std::optional<resource_result>(call_context&, std::string_view uri, const uri_variables&)>;
/// A prompt handler.
using prompt_handler = std::function<prompt_result(call_context&, const prompt_arguments&)>;
/// Completion candidates for a partially typed argument value, given the other arguments
/// already chosen. At most 100 values are sent; the rest are reported as `hasMore`.
using completer = std::function<std::vector<std::string>(std::string_view value, const prompt_arguments& context)>;

/// A callable usable as a tool handler: `h(ctx, args)` returns something convertible to
/// `tool_result`.
///
/// Semantic requirements: (1) it may be called concurrently from several threads; (2) it should
/// honour `ctx.stop_token()`; (3) an exception it throws becomes -32603 and is contained.
template <class H>
concept tool_handler_callable = std::copy_constructible<H> && requires(H& h, call_context& ctx, const arguments& args) {
  // the call and its result
  { h(ctx, args) } -> std::convertible_to<tool_result>;
};
/// A callable usable as a resource handler: `h(ctx, uri, vars)` returns an optional
/// `resource_result` (`std::nullopt` = not found).
template <class H>
concept resource_handler_callable =
    std::copy_constructible<H> && requires(H& h, call_context& ctx, std::string_view uri, const uri_variables& v) {
      { h(ctx, uri, v) } -> std::convertible_to<std::optional<resource_result>>;
    };
/// A callable usable as a prompt handler: `h(ctx, args)` returns a `prompt_result`.
template <class H>
concept prompt_handler_callable =
    std::copy_constructible<H> && requires(H& h, call_context& ctx, const prompt_arguments& args) {
      { h(ctx, args) } -> std::convertible_to<prompt_result>;
    };
/// A callable usable as a completer: `c(value, context)` returns the candidate values.
template <class C>
concept completer_callable = std::copy_constructible<C> && requires(C& c, std::string_view value,
                                                                    const prompt_arguments& context) {
  { c(value, context) } -> std::convertible_to<std::vector<std::string>>;
};

/// A tool's pre-consume precondition, owned by its declaration (see
/// `approval_precondition_callable`).
using approval_precondition =
    std::function<std::optional<std::string>(const approval_ticket&, const principal&, json::value)>;

namespace detail {
/// Tools whose handler is the library's own (the approver tools of
/// docs/approvals.md#the-approver-tools).
enum class builtin_tool : std::uint8_t { none, approve_request, reject_request };
struct tool_def {
  std::string name, title, description;
  std::string input_schema{R"({"type":"object","additionalProperties":false})"};
  std::string output_schema;
  std::string securable, operation_name;  // operation_name: as given, checked at build
  std::optional<operation> op;
  std::optional<tool_effect> effect;
  bool idempotent = false;
  tool_handler handler;
  approval_precondition precondition;
  builtin_tool builtin = builtin_tool::none;
  task_support tasks = task_support::forbidden;  // docs/tasks.md#task-support
  task_start start = task_start::immediate;
};
struct resource_def {
  std::string uri, name, title, description, mime_type;
  std::string securable{"Resource"};  // the security row (docs/security.md#resources-and-prompts)
  operation op = operation::read;
  bool is_template = false;
  std::optional<cache_hint> cache;
  resource_handler handler;
  std::vector<std::pair<std::string, completer>> completers;
};
struct prompt_argument_def {
  std::string name, description;
  bool required = false;
  std::vector<std::string> enum_values;  // closed set; first is the fallback
  completer complete;
};
struct prompt_def {
  std::string name, title, description;
  std::string securable{"Prompt"};  // the security row (docs/security.md#resources-and-prompts)
  operation op = operation::read;
  std::vector<prompt_argument_def> arguments;
  prompt_handler handler;
};

// Type erasure of the plug-ins: one virtual call per gate.
struct MCPCORE_API policy_base {
  virtual ~policy_base() = default;
  virtual tier_decision decide(std::string_view tier, std::string_view securable, operation op) const noexcept = 0;
};
template <class P>
struct policy_model final : policy_base {
  explicit policy_model(P p) : p_(std::move(p)) {}
  tier_decision decide(std::string_view t, std::string_view s, operation op) const noexcept override {
    return p_.decide(t, s, op);
  }
  P p_;
};
// authorizer_base / authorizer_model: policy.hpp; clock_base / clock_model: clock.hpp;
// audit_base / audit_model: audit.hpp.
/// Metric handles are resolved at build time through this callback pair.
struct metrics_binding {
  std::function<counter(std::string_view, std::string_view, std::span<const metric_label>)> make_counter;
  std::function<gauge(std::string_view, std::string_view, std::span<const metric_label>)> make_gauge;
};
struct builder_state;
}  // namespace detail

class server;

/// Declares one tool (fluent; returned by `server_builder::tool`).
class tool_builder {
 public:
  explicit tool_builder(detail::tool_def& d) noexcept : d_(&d) {}
  tool_builder& title(std::string t) { d_->title = std::move(t); return *this; }
  tool_builder& description(std::string t) { d_->description = std::move(t); return *this; }
  /// The input schema, served verbatim and compiled under the closed subset (docs/schema.md).
  /// Default: `{"type":"object","additionalProperties":false}` (a tool without arguments).
  tool_builder& input_schema(std::string json) { d_->input_schema = std::move(json); return *this; }
  /// The output schema (an object schema), served verbatim, compiled at build (one that does not
  /// compile refuses the build) and enforced: every result that is not `isError` must carry
  /// `structuredContent` that validates, else the call answers -32603
  /// (docs/design.md#the-toolscall-pipeline).
  tool_builder& output_schema(std::string json) { d_->output_schema = std::move(json); return *this; }
  /// The security row: the securable the tool touches and the operation it performs.
  tool_builder& security(std::string securable, operation op) {
    d_->securable = std::move(securable);
    d_->op = op;
    d_->operation_name.clear();
    return *this;
  }
  /// The security row with the operation by catalogue name ("Read", "Write", ...), for hosts
  /// that keep their rows as text; a name outside the catalogue refuses the build.
  tool_builder& security(std::string securable, std::string operation_name) {
    d_->securable = std::move(securable);
    d_->op = parse_operation(operation_name);
    d_->operation_name = std::move(operation_name);
    return *this;
  }
  /// The classification the annotations are generated from
  /// (docs/concepts/tool_handler.md#the-table): `read_only` → readOnlyHint; `destructive` →
  /// destructiveHint; `idempotent` → idempotentHint; openWorldHint is false. An unclassified tool
  /// gets readOnly=false, destructive=true, idempotent=false and a build warning.
  tool_builder& effect(tool_effect e, bool idempotent) {
    d_->effect = e;
    d_->idempotent = idempotent;
    return *this;
  }
  template <tool_handler_callable H>
  tool_builder& handler(H h) {
    d_->handler = tool_handler{std::move(h)};
    return *this;
  }
  /// Whether the tool runs as a task, and when it becomes one (docs/tasks.md#task-support); the
  /// default is `forbidden`. Without `server_builder::tasks` the declaration is inert.
  tool_builder& task_support(mcpcore::task_support support, task_start start = task_start::immediate) {
    d_->tasks = support;
    d_->start = start;
    return *this;
  }
  /// A pre-consume precondition for this approval-gated tool
  /// (docs/approvals.md#what-the-machine-checks-in-order): checked on a recall after every ticket
  /// check, just before the ticket is consumed; a refusal leaves the ticket unconsumed and answers
  /// a generic -32003 (the reason goes to the audit row only).
  template <approval_precondition_callable P>
  tool_builder& approval_precondition(P p) {
    d_->precondition = mcpcore::approval_precondition{std::move(p)};
    return *this;
  }

 private:
  detail::tool_def* d_;
};

/// Declares one resource or resource template.
class resource_builder {
 public:
  explicit resource_builder(detail::resource_def& d) noexcept : d_(&d) {}
  resource_builder& name(std::string n) { d_->name = std::move(n); return *this; }
  resource_builder& title(std::string t) { d_->title = std::move(t); return *this; }
  resource_builder& description(std::string t) { d_->description = std::move(t); return *this; }
  resource_builder& mime_type(std::string m) { d_->mime_type = std::move(m); return *this; }
  /// `ttlMs`/`cacheScope` of this resource's reads in the per-request era (default:
  /// `server_options::read_cache`).
  resource_builder& cache(cache_hint hint) { d_->cache = hint; return *this; }
  /// The security row the tier gate and the kill switches see on resources/read
  /// (docs/security.md#resources-and-prompts). Default: (`Resource`, read).
  resource_builder& security(std::string securable, operation op) {
    d_->securable = std::move(securable);
    d_->op = op;
    return *this;
  }
  template <resource_handler_callable H>
  resource_builder& handler(H h) {
    d_->handler = resource_handler{std::move(h)};
    return *this;
  }
  /// Completion for a template variable (completion/complete with ref/resource).
  template <completer_callable C>
  resource_builder& complete(std::string variable, C c) {
    d_->completers.emplace_back(std::move(variable), completer{std::move(c)});
    return *this;
  }

 private:
  detail::resource_def* d_;
};

/// Declares one prompt.
class prompt_builder {
 public:
  explicit prompt_builder(detail::prompt_def& d) noexcept : d_(&d) {}
  prompt_builder& title(std::string t) { d_->title = std::move(t); return *this; }
  prompt_builder& description(std::string t) { d_->description = std::move(t); return *this; }
  /// The security row the tier gate and the kill switches see on prompts/get
  /// (docs/security.md#resources-and-prompts). Default: (`Prompt`, read).
  prompt_builder& security(std::string securable, operation op) {
    d_->securable = std::move(securable);
    d_->op = op;
    return *this;
  }
  /// A free-text argument; its value reaches the model only through
  /// `append_untrusted_argument` if the handler follows docs/design.md#other-methods.
  prompt_builder& argument(std::string name, std::string description, bool required) {
    d_->arguments.push_back({std::move(name), std::move(description), required, {}, {}});
    return *this;
  }
  /// A free-text argument with a completer for completion/complete.
  template <completer_callable C>
  prompt_builder& argument(std::string name, std::string description, bool required, C complete) {
    d_->arguments.push_back({std::move(name), std::move(description), required, {}, completer{std::move(complete)}});
    return *this;
  }
  /// A closed-enum argument: the value is matched case-insensitively (surrounding blanks
  /// ignored) against `values` and replaced by the canonical spelling; anything else becomes
  /// `values.front()`, so caller text never reaches the model (docs/design.md#other-methods).
  /// Completion offers the values that start with the typed prefix.
  prompt_builder& enum_argument(std::string name, std::string description, std::vector<std::string> values,
                                bool required = false) {
    d_->arguments.push_back({std::move(name), std::move(description), required, std::move(values), {}});
    return *this;
  }
  template <prompt_handler_callable H>
  prompt_builder& handler(H h) {
    d_->handler = prompt_handler{std::move(h)};
    return *this;
  }

 private:
  detail::prompt_def* d_;
};

/// Collects tables and plug-ins, then validates them and builds an immutable `server`.
///
/// Plug-ins default to Yuzu's tier policy, an allow-all authorizer, no audit, no metrics and
/// the system clock. Sinks are held by reference and must outlive the server.
class server_builder {
 public:
  MCPCORE_DECL explicit server_builder(server_info info, server_options options = {});
  MCPCORE_DECL ~server_builder();
  server_builder(const server_builder&) = delete;
  server_builder& operator=(const server_builder&) = delete;
  MCPCORE_DECL server_builder(server_builder&&) noexcept;
  MCPCORE_DECL server_builder& operator=(server_builder&&) noexcept;

  /// Declares a tool (names: 1-128 characters of A-Z a-z 0-9 _ - .).
  MCPCORE_DECL tool_builder tool(std::string name);
  /// Declares a resource with a fixed URI.
  MCPCORE_DECL resource_builder resource(std::string uri);
  /// Declares a resource template (RFC 6570 level 1: literal text and `{name}` variables; a
  /// variable matches one or more characters other than `/`, `?` and `#`, percent-decoded).
  MCPCORE_DECL resource_builder resource_template(std::string uri_template);
  /// Declares a prompt.
  MCPCORE_DECL prompt_builder prompt(std::string name);
  /// Closes the securable catalogue: a tool naming another securable refuses the build.
  MCPCORE_DECL server_builder& securables(std::vector<std::string> names);
  /// The OAuth scopes of the authenticator, for step-up (docs/oauth.md#step-up): when the tier
  /// gate refuses a principal that came from an access token, the refusal names the first scope of
  /// `scopes` it lacks whose tier the policy allows. The authenticator should use the same map.
  MCPCORE_DECL server_builder& oauth_scopes(scope_map scopes);

  template <mcpcore::tier_policy P>
  server_builder& policy(P p) {
    set_policy(new detail::policy_model<P>(std::move(p)));
    return *this;
  }
  template <mcpcore::authorizer A>
  server_builder& authorizer(A a) {
    set_authorizer(new detail::authorizer_model<A>(std::move(a)));
    return *this;
  }
  /// @pre `sink` outlives the server.
  template <mcpcore::audit_sink S>
  server_builder& audit(S& sink) {
    set_audit(new detail::audit_model<S>(sink));
    return *this;
  }
  /// @pre `sink` outlives the server. Every series the server uses is created (pre-seeded) at build.
  template <mcpcore::metrics_sink M>
  server_builder& metrics(M& sink) {
    detail::metrics_binding b;
    b.make_counter = [&sink](std::string_view n, std::string_view h, std::span<const metric_label> l) {
      return sink.make_counter(n, h, l);
    };
    b.make_gauge = [&sink](std::string_view n, std::string_view h, std::span<const metric_label> l) {
      return sink.make_gauge(n, h, l);
    };
    set_metrics(std::move(b));
    return *this;
  }
  /// Routes approval-gated tools through the ticket-then-recall machine of `service`
  /// (docs/approvals.md). Without it, an approval-gated call answers -32004 with no ticket
  /// (docs/approvals.md#every-answer-of-the-machine).
  /// @pre `service` outlives the server; its clock should be the server's.
  MCPCORE_DECL server_builder& approvals(approval_service& service);
  /// Declares the approver tools `approve_request` and `reject_request`
  /// (docs/approvals.md#the-approver-tools), with the security row (`securable`, Approve): the tier
  /// policy and RBAC see `Approve` on `securable`. They answer `-32003
  /// approver_assurance_required:<reason>` unless the caller is a human-interactive, assured
  /// principal; reviewer must differ from submitter. Needs `approvals()`.
  MCPCORE_DECL server_builder& approval_tools(std::string securable = "Approval");
  template <mcpcore::clock_source C>
  server_builder& clock(C c) {
    set_clock(new detail::clock_model<C>(std::move(c)));
    return *this;
  }
  /// Turns the task engine on (docs/tasks.md), with its tasks kept in `store`: tools declaring
  /// `task_support` run as tasks, the capability is advertised and the `tasks/*` methods are
  /// served. Without it, a 2025-11-25 request's `params.task` is ignored and `tasks/*` are unknown.
  /// @pre `store` outlives the server.
  template <mcpcore::task_store S>
  server_builder& tasks(S& store, task_options options = {}) {
    set_tasks(new detail::task_store_ref<S>(store), options);
    return *this;
  }

  /// Validates every registration (docs/design.md#registration-validation, #the-toolscall-pipeline)
  /// and builds the server; on any offence nothing is built and every offence is listed. Either way
  /// the builder is left without tables and plug-ins (they moved into the server); it keeps its
  /// `server_info` and `server_options`.
  ///
  /// A refusal is `library_errc::build_refused` with the offences in `error::details()`, each one
  /// sentence naming its subject, sorted; `message()` joins them with "; "
  /// (docs/errors.md#one-error-shape).
  [[nodiscard]] MCPCORE_DECL result<server> build();

 private:
  MCPCORE_DECL void set_policy(detail::policy_base* p);
  MCPCORE_DECL void set_authorizer(detail::authorizer_base* a);
  MCPCORE_DECL void set_audit(detail::audit_base* a);
  MCPCORE_DECL void set_metrics(detail::metrics_binding b);
  MCPCORE_DECL void set_clock(detail::clock_base* c);
  MCPCORE_DECL void set_tasks(detail::task_store_base* store, task_options options);
  detail::builder_state* s_;
};

/// What changed on a server, for the clients listening (docs/eras.md#subscriptions).
enum class server_event_kind : std::uint8_t {
  tools_list_changed,
  prompts_list_changed,
  resources_list_changed,
  resource_updated,  ///< the resource `uri` changed
  /// A 2026-07-28 task changed status (docs/tasks.md#notifications): only the listens of its
  /// owner that name it get it; it has no handshake-era notification.
  task_status,
};

/// One change, as `server::publish` hands it to subscribers (views valid during the call).
struct server_event {
  server_event_kind kind = server_event_kind::tools_list_changed;
  /// The resource, for `resource_updated`.
  std::string_view uri{};
  /// For `task_status`: the task's id, its owner (the principal id) and the task as `tasks/get`
  /// describes it (a JSON object, without `resultType`).
  std::string_view task_id{};
  std::string_view owner{};
  std::string_view task_json{};
};

/// The handshake era's notification for `e` (`notifications/tools/list_changed`, ...,
/// `notifications/resources/updated` with `params.uri`), for a transport that delivers events
/// itself (docs/server.md#notifications); empty for `task_status`, which has none.
[[nodiscard]] MCPCORE_DECL std::string event_notification(const server_event& e);

namespace detail {
struct event_hub;
}  // namespace detail

/// A registration made by `server::subscribe`: the callback is called until this ends (on
/// destruction or `cancel`); once `cancel` returns, the callback is not running and will not run.
/// Move-only. It may outlive the server (it then does nothing).
class event_subscription {
 public:
  event_subscription() noexcept = default;
  event_subscription(event_subscription&& other) noexcept = default;
  MCPCORE_DECL event_subscription& operator=(event_subscription&& other) noexcept;
  event_subscription(const event_subscription&) = delete;
  event_subscription& operator=(const event_subscription&) = delete;
  MCPCORE_DECL ~event_subscription();
  /// Ends the registration; idempotent.
  MCPCORE_DECL void cancel() noexcept;

 private:
  friend class server;
  event_subscription(std::weak_ptr<detail::event_hub> hub, std::uint64_t key) noexcept
      : hub_(std::move(hub)), key_(key) {}
  std::weak_ptr<detail::event_hub> hub_;
  std::uint64_t key_ = 0;
};

/// A thread-safe MCP server: tables, compiled schemas, plug-ins and pre-rendered list pages. The
/// tables can change at run time (tools and prompts hidden and shown again, every kind added,
/// replaced and removed: docs/server.md#tables-that-change); everything else is fixed at build.
/// Every transport drives the same object through `handle`.
class server {
 public:
  MCPCORE_DECL server(server&& other) noexcept;
  MCPCORE_DECL server& operator=(server&& other) noexcept;
  MCPCORE_DECL ~server();

  /// Handles one parsed message from the client.
  ///
  /// Requests: appends the JSON-RPC response to `out` and returns true, except when the call
  /// was cancelled while it ran (MCP: no response is sent), which returns false.
  /// Notifications (`initialized`, `cancelled`, `progress`, `roots/list_changed`, unknown ones)
  /// and client responses (routed to the waiting call; unmatched ones are counted and dropped)
  /// return false and write nothing.
  ///
  /// Any number of threads may call `handle` concurrently.
  MCPCORE_DECL bool handle(const message& msg, const dispatch_context& ctx, std::string& out);

  /// The live kill switches.
  [[nodiscard]] MCPCORE_DECL kill_switches& switches() noexcept;
  /// From now on `initialize` answers -32015 (docs/errors.md#error-codes); the calls waiting for
  /// a client without a thread are cancelled.
  MCPCORE_DECL void begin_shutdown() noexcept;
  /// Ends the waits for a client whose deadline (`max_client_request_timeout` from the round's
  /// start, on the server's clock) has passed; a transport's maintenance tick calls it
  /// (docs/eras.md#waiting-for-the-client). No-throw.
  MCPCORE_DECL void expire_waiting() noexcept;
  /// The calls waiting for a client without a thread now.
  [[nodiscard]] MCPCORE_DECL std::size_t waiting_calls() const noexcept;
  /// Requests stop on the work of every task running in this process, and ends every `tasks/result`
  /// waiting for one (docs/tasks.md#shutdown): a task stopped this way fails (-32603 "the server
  /// stopped before the task finished") unless it was cancelled. A transport calls it before it
  /// stops its handler pool (`http_endpoint::cancel_in_flight`, the end of `stdio_transport::run`).
  /// No-throw; idempotent; tasks created afterwards run as usual.
  MCPCORE_DECL void cancel_tasks() noexcept;
  /// Tasks whose work runs in this process now (created here and not yet finished).
  [[nodiscard]] MCPCORE_DECL std::size_t running_tasks() const noexcept;
  /// Non-fatal registration findings (for example unclassified tools).
  [[nodiscard]] MCPCORE_DECL const std::vector<std::string>& warnings() const noexcept;
  [[nodiscard]] MCPCORE_DECL const server_info& info() const noexcept;
  /// Whether `uri` names a registered resource or matches a template.
  [[nodiscard]] MCPCORE_DECL bool has_resource(std::string_view uri) const;
  /// Calls `f` for every event published from now on, on the publishing thread, until the
  /// returned subscription ends. `f` must not block and must not subscribe or cancel.
  /// @throws std::bad_alloc
  [[nodiscard]] MCPCORE_DECL event_subscription subscribe(std::function<void(const server_event&)> f);
  /// Hands `e` to every subscriber (the host calls it when its resources change).
  MCPCORE_DECL void publish(const server_event& e) noexcept;
  /// Whether the server advertises events of kind `k` (it has tools, prompts, or resources;
  /// `task_status`: tasks are on).
  [[nodiscard]] MCPCORE_DECL bool publishes(server_event_kind k) const noexcept;
  /// Hides (`enabled` false) or shows again a registered tool: a hidden tool is not listed and is
  /// an unknown tool to `tools/call`. Publishes `tools_list_changed` when the visibility changed;
  /// false for an unknown name.
  MCPCORE_DECL bool set_tool_enabled(std::string_view name, bool enabled) noexcept;
  /// The same for a prompt (`prompts_list_changed`).
  MCPCORE_DECL bool set_prompt_enabled(std::string_view name, bool enabled) noexcept;
  /// The `Mcp-Param-*` headers of tool `name` (empty for an unknown tool or one without any).
  [[nodiscard]] MCPCORE_DECL std::vector<param_header> param_headers(std::string_view name) const;
  /// The options the server was built with.
  [[nodiscard]] MCPCORE_DECL const server_options& options() const noexcept;

  /// The host's resource `uri` changed: publishes `resource_updated`, which every transport
  /// delivers to the clients that subscribed to `uri` (docs/server.md#notifications). Any thread.
  MCPCORE_DECL void notify_resource_updated(std::string_view uri) noexcept;

  /// Tables that change at run time (docs/server.md#tables-that-change). Any thread, concurrently
  /// with `handle`. `declare` fills the declaration as `server_builder::tool` would; it is then
  /// validated as at build (name, description, handler, security row against the securable
  /// catalogue, schemas compiled, approval gating, `Mcp-Param-*` headers) and, without offence,
  /// replaces the tool of that name or adds one (past `server_options::max_tools`: refused).
  /// A call already running keeps the tool it found until it ends. Publishes
  /// `tools_list_changed`. A refusal is `library_errc::build_refused` with the offences in
  /// `error::details()`; the tables are then unchanged.
  template <std::invocable<tool_builder&> F>
  result<void> add_tool(std::string name, F&& declare) {
    detail::tool_def d;
    d.name = std::move(name);
    tool_builder b{d};
    std::forward<F>(declare)(b);
    return commit(std::move(d));
  }
  /// A resource with a fixed URI (replaces one with that URI; `resources_list_changed`).
  template <std::invocable<resource_builder&> F>
  result<void> add_resource(std::string uri, F&& declare) {
    detail::resource_def d;
    d.uri = std::move(uri);
    resource_builder b{d};
    std::forward<F>(declare)(b);
    return commit(std::move(d));
  }
  /// A resource template (replaces one with that template; `resources_list_changed`).
  template <std::invocable<resource_builder&> F>
  result<void> add_resource_template(std::string uri_template, F&& declare) {
    detail::resource_def d;
    d.uri = std::move(uri_template);
    d.is_template = true;
    resource_builder b{d};
    std::forward<F>(declare)(b);
    return commit(std::move(d));
  }
  /// A prompt (replaces one of that name; `prompts_list_changed`).
  template <std::invocable<prompt_builder&> F>
  result<void> add_prompt(std::string name, F&& declare) {
    detail::prompt_def d;
    d.name = std::move(name);
    prompt_builder b{d};
    std::forward<F>(declare)(b);
    return commit(std::move(d));
  }
  /// Removes tool `name` (a call running it finishes normally); false when there is none.
  /// Publishes `tools_list_changed`.
  MCPCORE_DECL bool remove_tool(std::string_view name);
  /// Removes the fixed resource `uri`; `resources_list_changed`.
  MCPCORE_DECL bool remove_resource(std::string_view uri);
  /// Removes the resource template `uri_template` (as declared); `resources_list_changed`.
  MCPCORE_DECL bool remove_resource_template(std::string_view uri_template);
  /// Removes prompt `name`; `prompts_list_changed`.
  MCPCORE_DECL bool remove_prompt(std::string_view name);

  struct impl;

 private:
  friend class server_builder;
  explicit server(impl* p) noexcept : impl_(p) {}
  MCPCORE_DECL result<void> commit(detail::tool_def&& d);
  MCPCORE_DECL result<void> commit(detail::resource_def&& d);
  MCPCORE_DECL result<void> commit(detail::prompt_def&& d);
  impl* impl_;
};

/// Writes `notifications/resources/updated` for `uri` to `sink` if `client` subscribed to it.
/// Superseded by `server::notify_resource_updated`, which reaches every transport's subscribers.
MCPCORE_DECL bool notify_resource_updated(peer& client, message_sink& sink, std::string_view uri);

MCPCORE_END_NAMESPACE

#if defined(MCPCORE_HEADER_ONLY)
#  include <mcpcore/dispatch/impl/server.ipp>
#endif

#endif  // MCPCORE_SERVER_HPP
