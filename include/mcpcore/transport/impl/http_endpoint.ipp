// SPDX-License-Identifier: Apache-2.0
// MCP Streamable HTTP, sans-I/O: the endpoint's core. Routing, the processing order, sessions and
// their peers, the executor binding, DELETE and the operational routes
// (docs/http.md#processing-order-on-the-mcp-path, docs/sessions.md#the-session-registry,
// #get-attach-replay-resume, #pinned-finals, #streamed-post, #shutdown; docs/sessions.md). The POST
// route is in http_post_stream.ipp, the GET route in http_get_stream.ipp, what their streams share
// in http_pumped_stream.ipp. docs/http.md describes the behaviour; docs/sessions.md the layer
// below.
#ifndef MCPCORE_IMPL_HTTP_ENDPOINT_IPP
#define MCPCORE_IMPL_HTTP_ENDPOINT_IPP

#include <mcpcore/transport/http_endpoint.hpp>

#include <mcpcore/detail/ascii.hpp>
#include <mcpcore/transport/impl/document_pool.ipp>
#include <mcpcore/transport/impl/fair_dispatch.ipp>
#include <mcpcore/transport/impl/http_pumped_stream.ipp>
#include <mcpcore/transport/impl/resource_metadata.ipp>

// The one table of error answers (`detail::refusal_table`) lives with stream admission.
#include <mcpcore/session/impl/stream_admission.ipp>

#include <mcpcore/dispatch/server.hpp>
#include <mcpcore/governance/approval_endpoint.hpp>
#include <mcpcore/governance/approvals_page.hpp>
#include <mcpcore/governance/metrics.hpp>
#include <mcpcore/governance/policy.hpp>
#include <mcpcore/session/session_stream.hpp>
#include <mcpcore/session/stream_types.hpp>
#include <mcpcore/wire/correlation_id.hpp>
#include <mcpcore/wire/error.hpp>
#include <mcpcore/wire/json.hpp>
#include <mcpcore/wire/json_writer.hpp>
#include <mcpcore/wire/jsonrpc.hpp>
#include <mcpcore/wire/retry.hpp>

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

MCPCORE_BEGIN_NAMESPACE

namespace detail {

// ---- wire texts (the error answers are rows of `refusal_table`) -----------------------------------

inline constexpr std::string_view http_allow_mcp = "GET, POST, DELETE";
inline constexpr std::string_view http_allow_stateless = "POST";
inline constexpr std::string_view http_json = "application/json";
inline constexpr std::string_view http_event_stream = "text/event-stream";
inline constexpr std::string_view http_session_header = "Mcp-Session-Id";

/// Audit `reason=` of a session minted for an `initialize` the dispatch core refused.
inline constexpr std::string_view http_initialize_failed_reason = "initialize_failed";

// ---- small helpers -----------------------------------------------------------------------------


inline std::string_view http_trim(std::string_view s) noexcept {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

/// The path of an origin-form target: everything before `?` (and before `#`, which a client
/// should never send).
inline std::string_view http_path_of(std::string_view target) noexcept {
  const auto q = target.find_first_of("?#");
  return q == std::string_view::npos ? target : target.substr(0, q);
}

/// Bytes reserved for a dispatch's answer before the dispatch writes it: one allocation holds an
/// ordinary answer, where the writer's growth from empty took three (docs/performance.md).
inline constexpr std::size_t http_initial_answer_bytes = 512;

/// The value of a header that may be sent as several fields: absent, a view of the one field
/// (the usual case: nothing is copied), or the fields joined with ", " (RFC 9110 §5.3). The view
/// points into the request's headers; it lives no longer than they do.
class http_field_value {
 public:
  explicit operator bool() const noexcept { return present_; }
  [[nodiscard]] std::string_view operator*() const noexcept {
    return joined_.empty() ? one_ : std::string_view{joined_};
  }

 private:
  friend http_field_value http_joined(const http_request_view& req, std::string_view name);
  std::string_view one_;
  std::string joined_;  // only for two fields or more
  bool present_ = false;
};

/// Every field named `name`, joined with ", " (RFC 9110 §5.3); absent when there is none.
/// @throws std::bad_alloc (only when the header is sent as several fields)
inline http_field_value http_joined(const http_request_view& req, std::string_view name) {
  http_field_value out;
  for (const http_header_view& h : req.headers) {
    if (!ascii_iequals(h.name, name)) continue;
    if (!out.present_) {
      out.one_ = h.value;
      out.present_ = true;
      continue;
    }
    if (out.joined_.empty()) out.joined_.assign(out.one_);
    out.joined_.append(", ");
    out.joined_.append(h.value);
  }
  return out;
}

/// Whether `port` is empty or `:` followed by 1-5 digits.
inline bool http_port_suffix_ok(std::string_view port) noexcept {
  if (port.empty()) return true;
  if (port.front() != ':' || port.size() < 2 || port.size() > 6) return false;
  for (std::size_t i = 1; i < port.size(); ++i) {
    if (port[i] < '0' || port[i] > '9') return false;
  }
  return true;
}

/// Whether a `Host` value names loopback (`localhost`, `127.0.0.1`, `[::1]`, any port).
inline bool http_host_is_loopback(std::string_view host) noexcept {
  host = http_trim(host);
  std::string_view name;
  std::string_view port;
  if (!host.empty() && host.front() == '[') {
    const auto close = host.find(']');
    if (close == std::string_view::npos) return false;
    name = host.substr(1, close - 1);
    port = host.substr(close + 1);
    if (name != "::1") return false;
  } else {
    const auto colon = host.find(':');
    name = host.substr(0, colon);
    port = colon == std::string_view::npos ? std::string_view{} : host.substr(colon);
    if (!ascii_iequals(name, "localhost") && name != "127.0.0.1") return false;
  }
  return http_port_suffix_ok(port);
}

/// Whether a `Content-Type` value is `application/json` (parameters such as `charset` ignored,
/// the type compared ASCII case-insensitively).
inline bool http_content_type_is_json(std::string_view v) noexcept {
  const auto semi = v.find(';');
  return ascii_iequals(http_trim(v.substr(0, semi)), http_json);
}

/// A `WWW-Authenticate` quoted-string value: `"` and `\` escaped, control bytes dropped.
inline std::string http_quoted(std::string_view v) {
  std::string out;
  out.reserve(v.size() + 2);
  out.push_back('"');
  for (const char c : v) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) continue;
    if (c == '"' || c == '\\') out.push_back('\\');
    out.push_back(c);
  }
  out.push_back('"');
  return out;
}

/// A JSON-RPC id of a message as an owning id.
inline std::optional<request_id> http_id_of(json::value v) {
  if (v.is_string()) return request_id{std::string{v.as_string()}};
  if (v.is_integer()) {
    if (const auto n = v.to_int64()) return request_id{*n};
  }
  return std::nullopt;
}

// ---- per-session state -------------------------------------------------------------------------

/// A session's channel for its tasks' progress and status notifications (`dispatch_context::session_sink`):
/// published on the session's GET stream, live and into the ring like every GET-stream message. It
/// holds the stream weakly: once the session is gone, what its tasks send is dropped.
struct http_task_channel final : message_sink {
  bool send(std::string_view message) noexcept override {
    std::shared_ptr<session_stream> s;
    {
      const std::lock_guard<std::mutex> lock(mutex);
      s = stream.lock();
    }
    return s && s->publish(message) != 0;
  }
  void bind(const std::shared_ptr<session_stream>& s) {
    const std::lock_guard<std::mutex> lock(mutex);
    stream = s;
  }
  std::mutex mutex;  // a leaf
  std::weak_ptr<session_stream> stream;
};

/// What the endpoint keeps per session (`session::attachment()`): the dispatch core's `peer`,
/// the request ids in flight on the session's POSTs (a reused one answers 409), and the channel of
/// its tasks.
struct http_session_state {
  peer client;
  std::mutex mutex;  // a leaf
  std::unordered_set<request_id> in_flight;  // guarded by `mutex`
  /// The session's GET channel for what a task sends after its call returned
  /// (docs/tasks.md#notifications); bound to the session's stream once the session is minted.
  const std::shared_ptr<http_task_channel> tasks = std::make_shared<http_task_channel>();
};

// ---- plug-in forwarders ------------------------------------------------------------------------

/// A `clock_source` reading the endpoint's clock (shared by the registry and the bridge).
struct http_clock_forward {
  const clock_base* c;
  [[nodiscard]] std::chrono::steady_clock::time_point steady_now() const noexcept { return c->steady_now(); }
  [[nodiscard]] std::chrono::system_clock::time_point system_now() const noexcept { return c->system_now(); }
};

/// An `audit_sink` writing to the endpoint's sink (shared by the registry and the bridge).
struct http_audit_forward {
  audit_base* a = nullptr;
  bool record(const audit_record& r) { return a != nullptr && a->record(r); }
};

// ---- the executor ------------------------------------------------------------------------------

/// The endpoint's executor and whether an owner holds it, shared by the endpoint and the one
/// `http_executor_binding` that bound it (shared, so that a binding may outlive the endpoint).
struct http_executor_slot {
  std::mutex mutex;  // a leaf
  // Guarded by `mutex`; null: unbound (dispatch inline). Copied out, then called unlocked, so a
  // release never waits for a submit (the copy keeps a released executor alive until it returns).
  std::shared_ptr<const http_executor> exec;
};

struct http_post_exchange;
struct per_request_channel;
/// Closes every live per-request stream (shutdown); defined in http_per_request.ipp.
inline void close_per_request_streams(http_endpoint::impl& ep) noexcept;
/// Delivers a server event to the sessions; defined in http_events.ipp.
inline void http_deliver_event(http_endpoint::impl& ep, const server_event& ev) noexcept;

}  // namespace detail

// ---- the endpoint's state ----------------------------------------------------------------------

struct http_endpoint::impl {
  impl(server& s, std::unique_ptr<detail::authenticator_base> a, http_endpoint_options o,
       std::unique_ptr<detail::clock_base> c)
      : srv(s),
        authn(std::move(a)),
        options(std::move(o)),
        resource_doc(detail::make_protected_resource(options.protected_resource, options.resource_metadata_url)),
        clock(std::move(c)),
        budget(options.budget) {
    rebuild();
    events = srv.subscribe([this](const server_event& ev) { detail::http_deliver_event(*this, ev); });
  }

  server& srv;
  const std::unique_ptr<detail::authenticator_base> authn;
  const http_endpoint_options options;
  // The protected-resource metadata and the 401 challenge (docs/oauth.md#protected-resource-metadata).
  const detail::protected_resource_doc resource_doc;
  const std::unique_ptr<detail::clock_base> clock;
  metrics_registry* metrics = nullptr;
  session_metrics m;
  std::unique_ptr<detail::audit_base> audit;
  detail::http_audit_forward audit_fwd;
  const approval_endpoint* approvals = nullptr;
  const approvals_page* page = nullptr;
  std::function<bool()> ready;
  // The executor, owned by whoever bound it (`bind_executor`); never null itself.
  const std::shared_ptr<detail::http_executor_slot> executor = std::make_shared<detail::http_executor_slot>();
  // Per-principal queues in front of the executor (docs/sessions.md#fair-dispatch).
  const std::shared_ptr<detail::fair_dispatch> fair =
      std::make_shared<detail::fair_dispatch>(options.max_dispatch_per_principal);
  // Request documents kept for reuse (docs/performance.md#reused-documents).
  const std::shared_ptr<detail::document_pool> documents =
      std::make_shared<detail::document_pool>(options.max_idle_documents, options.max_reused_document_bytes);
  detail::http_wake_slots slots;
  // Declared in this order so that the bridge goes first, then the sessions (whose GET sinks
  // hold leases), then the budget.
  stream_budget budget;
  std::unique_ptr<session_registry> registry;
  std::unique_ptr<progress_bridge> bridge;
  // The wake sinks of live POST SSE responses, with the session and ring channel they stream
  // (begin_shutdown closes them `session_terminated`; a GET resuming the channel, `superseded`).
  struct post_entry {
    std::weak_ptr<stream_sink> wake;
    const session* sess = nullptr;
    stream_channel channel = get_channel;
  };
  std::mutex posts_mutex;  // a leaf
  std::unordered_map<std::uint64_t, post_entry> post_sinks;  // guarded by posts_mutex
  std::uint64_t next_post = 0;                                                // guarded by posts_mutex
  std::atomic<bool> shut{false};  // begin_shutdown runs once
  // The states of the sessions begin_shutdown ended: cancel_in_flight closes their peers.
  std::vector<std::shared_ptr<detail::http_session_state>> draining;  // guarded by posts_mutex
  // The live streams of the per-request era (begin_shutdown closes them).
  std::unordered_map<std::uint64_t, std::weak_ptr<detail::per_request_channel>> per_request_streams;  // posts_mutex
  // The server's events for the handshake era's sessions (http_events.ipp); declared last, so
  // that it ends (waiting out a delivery in progress) before anything it uses goes.
  event_subscription events;

  /// (Re)creates the registry and the bridge with the current metrics and audit sink.
  void rebuild() {
    bridge.reset();
    registry.reset();
    registry = std::make_unique<session_registry>(options.session, detail::http_clock_forward{clock.get()}, m);
    bridge = std::make_unique<progress_bridge>(*registry, options.bridge, detail::http_clock_forward{clock.get()}, m);
    if (audit) {
      registry->set_audit(audit_fwd);
      bridge->set_audit(audit_fwd);
    }
  }

  [[nodiscard]] correlation_id mint_cid() const noexcept { return next_correlation_id(clock->system_now()); }

  [[nodiscard]] bool is_mcp_path(std::string_view path) const noexcept {
    if (path == options.path) return true;
    for (const auto& a : options.aliases) {
      if (path == a) return true;
    }
    return false;
  }

  [[nodiscard]] std::optional<principal> authenticate(const http_request_view& req) const noexcept {
    try {
      return authn->authenticate(req);
    } catch (...) {
      return std::nullopt;  // a throwing authenticator is a failed authentication
    }
  }
  [[nodiscard]] credential_verdict revalidate(const principal& p) const noexcept {
    try {
      return authn->revalidate(p);
    } catch (...) {
      return credential_verdict::indeterminate;
    }
  }
  /// The once-per-tick session check of a held-open stream (slides the idle TTL).
  [[nodiscard]] bool session_alive(const session& s) const noexcept {
    try {
      return registry->validate_and_touch(s.id(), s.principal_id()) != nullptr;
    } catch (...) {
      return true;  // an allocation failure is not a death sentence for the session
    }
  }

  /// One `mcp.session.reject` row (no row without a sink; a failing sink is contained and
  /// counted in `audit_failures`: audit never fails the request,
  /// docs/security.md#audit-and-the-one-cid-pattern).
  void reject_row(std::string_view reason, std::string_view session_id, std::string_view principal_id,
                  std::string_view cid, bool post_surface = false) const noexcept {
    if (!audit) return;
    bool persisted = false;
    try {
      std::string d = "reason=";
      d += reason;
      if (post_surface) d += " surface=post dispatched=false";
      const std::string target = sanitize_audit_value(session_id.substr(0, 8));
      audit_record r;
      r.action = "mcp.session.reject";
      r.target_type = "McpSession";
      r.target_id = target;
      r.principal_id = principal_id;
      r.result = audit_result::denied;
      r.detail = d;
      r.correlation_id = cid;
      r.time = clock->system_now();
      persisted = audit->record(r);
    } catch (...) {
      persisted = false;
    }
    if (!persisted) m.audit_failures.inc();
  }
  void count_reject(stream_reject r) const noexcept { detail::count_stream_reject(m, r); }

  /// Whether an executor is bound now (a task's work needs one: docs/tasks.md#executors).
  [[nodiscard]] bool has_executor() const {
    const std::lock_guard<std::mutex> lock(executor->mutex);
    return executor->exec != nullptr;
  }
  /// The bound executor as a task's `background_executor`: never inline (no executor: refused).
  struct task_background final : background_executor {
    explicit task_background(impl& e) noexcept : ep(e) {}
    bool post(std::function<void()> work) noexcept override {
      std::shared_ptr<const http_executor> exec;
      {
        const std::lock_guard<std::mutex> lock(ep.executor->mutex);
        exec = ep.executor->exec;
      }
      if (!exec) return false;
      try {
        return (*exec)(std::move(work));
      } catch (...) {
        return false;
      }
    }
    impl& ep;
  };
  task_background tasks_background{*this};
  /// What a dispatch hands a task (docs/tasks.md#executors): the bound executor, or null.
  [[nodiscard]] background_executor* background_for_tasks() {
    return has_executor() ? &tasks_background : nullptr;
  }

  /// Runs `task` on the bound executor (inline without one); false when it was not taken.
  bool submit(std::function<void()> task) {
    std::shared_ptr<const http_executor> exec;
    {
      const std::lock_guard<std::mutex> lock(executor->mutex);
      exec = executor->exec;
    }
    if (!exec) {
      task();
      return true;
    }
    try {
      return (*exec)(std::move(task));
    } catch (...) {
      return false;
    }
  }
  /// A request's dispatch `task` for `principal` through the fair queues (docs/sessions.md#fair-dispatch):
  /// round-robin between principals, at most `max_dispatch_per_principal` queued or running per
  /// principal; the task frees its slot (`fair_slot::release`) when it delivers its answer. `keep`
  /// (the task's state) lives until the task has run, so the task can be a raw pointer to it.
  /// Inline without an executor. Continuations of a call already admitted use `submit`.
  /// @throws std::bad_alloc before anything ran
  detail::fair_submit submit_fair(std::string_view principal, std::function<void(detail::fair_slot&)> task,
                                  std::shared_ptr<void> keep) {
    std::shared_ptr<const http_executor> exec;
    {
      const std::lock_guard<std::mutex> lock(executor->mutex);
      exec = executor->exec;
    }
    if (!exec) {
      detail::fair_slot none;
      task(none);
      return detail::fair_submit::taken;
    }
    return fair->submit(principal, std::move(task), *exec, std::move(keep));
  }

  void register_post(std::uint64_t& key, const std::shared_ptr<stream_sink>& wake, const session* sess,
                     stream_channel channel) {
    const std::lock_guard<std::mutex> lock(posts_mutex);
    key = ++next_post;
    post_sinks.emplace(key, post_entry{wake, sess, channel});
  }
  /// The live POST SSE responses streaming `channel` of `s` (a POST's own channel, never the GET
  /// stream's). @throws std::bad_alloc
  std::vector<std::shared_ptr<stream_sink>> posts_on(const session& s, stream_channel channel) {
    std::vector<std::shared_ptr<stream_sink>> out;
    if (channel == get_channel) return out;
    const std::lock_guard<std::mutex> lock(posts_mutex);
    for (const auto& [key, entry] : post_sinks) {
      if (entry.sess != &s || entry.channel != channel) continue;
      if (auto w = entry.wake.lock()) out.push_back(std::move(w));
    }
    return out;
  }
  void unregister_post(std::uint64_t key) noexcept {
    const std::lock_guard<std::mutex> lock(posts_mutex);
    post_sinks.erase(key);
  }
  void register_per_request(std::uint64_t& key, const std::shared_ptr<detail::per_request_channel>& ch) {
    const std::lock_guard<std::mutex> lock(posts_mutex);
    key = ++next_post;
    per_request_streams.emplace(key, ch);
  }
  void unregister_per_request(std::uint64_t key) noexcept {
    const std::lock_guard<std::mutex> lock(posts_mutex);
    per_request_streams.erase(key);
  }

  // Routes (definitions below).
  /// The MCP path; `who` is the principal the host handed in, or std::nullopt (authenticate).
  void handle_mcp(const http_request_view& req, std::optional<principal> who, http_completion& done);
  /// Every route (`http_endpoint::handle`); `handed` as in handle_mcp.
  void route(const http_request_view& req, std::optional<principal> handed, http_completion& done);
  /// `http_endpoint::check_head`: `who` is the handed-in principal or std::nullopt on entry, the
  /// principal the head established (if any) on a pass.
  [[nodiscard]] std::optional<http_response> head_verdict(const http_request_view& head,
                                                          std::optional<principal>& who) const;
  void handle_post(const http_request_view& req, const principal& who, const correlation_id& cid,
                   http_completion& done);
  void handle_initialize(const std::shared_ptr<detail::http_post_exchange>& ex, http_completion& done);
  void handle_post_per_request(const http_request_view& req, const std::shared_ptr<detail::http_post_exchange>& ex,
                               bool accepts_sse, http_completion& done);
  void handle_listen(const std::shared_ptr<detail::http_post_exchange>& ex, bool accepts_sse, http_completion& done);
  void handle_get(const http_request_view& req, const principal& who, const correlation_id& cid,
                  http_completion& done);
  void handle_delete(const http_request_view& req, const principal& who, const correlation_id& cid,
                     http_completion& done);
  bool handle_ops(const http_request_view& req, std::string_view path, http_completion& done);
  /// The protected-resource metadata (docs/oauth.md#protected-resource-metadata); false when
  /// `path` is not one of its paths.
  bool handle_resource_metadata(const http_request_view& req, std::string_view path, http_completion& done);
  /// The answer to a request for the metadata that is not a GET: the preflight, or 405.
  [[nodiscard]] static http_reply resource_metadata_other(const http_request_view& req);
  /// Steps 1-6 of docs/http.md#processing-order-on-the-mcp-path (everything the head decides):
  /// the refusal, or nullopt with `who` set (authenticated unless it was set on entry: a
  /// principal handed in).
  [[nodiscard]] std::optional<http_reply> mcp_head(const http_request_view& req, const correlation_id& cid,
                                                   std::optional<principal>& who) const;
  /// Repeated Host (400) or Origin (403), then Host (403): the guard of the approval and
  /// operational routes.
  [[nodiscard]] std::optional<http_reply> host_guard(const http_request_view& req) const;
  [[nodiscard]] bool host_allowed(const http_request_view& req) const noexcept;
  [[nodiscard]] static bool loopback_same_origin(const http_request_view& req, std::string_view origin) noexcept;
  // CORS (docs/http.md#cors; defined in cors.ipp). The answer to a preflight of a listed origin
  // (204, or its Host/Origin refusal), std::nullopt for any other request.
  [[nodiscard]] std::optional<http_reply> cors_preflight(const http_request_view& req) const;
  /// Adds the CORS headers of `req`'s answer to `head` (nothing with CORS off).
  void cors_decorate(http_response& head, const http_request_view& req) const;
  /// Makes `done` add them to the reply it is given (unchanged with CORS off).
  void cors_wrap(const http_request_view& req, http_completion& done) const;
};

namespace detail {

// ---- replies -----------------------------------------------------------------------------------

inline void http_add(http_reply& r, std::string_view name, std::string_view value) {
  r.head.headers.push_back(http_header{std::string{name}, std::string{value}});
}

inline http_reply http_empty(int status) {
  http_reply r;
  r.head.status = status;
  return r;
}

inline void http_add_retry_after(http_reply& r, std::optional<std::chrono::milliseconds> retry) {
  if (!retry || (r.head.status != 429 && r.head.status != 503)) return;
  http_add(r, "Retry-After", std::to_string(retry::header_seconds(*retry)));
}

inline http_reply http_json_body(int status, std::string body) {
  http_reply r;
  r.head.status = status;
  http_add(r, "Content-Type", http_json);
  r.head.body = std::move(body);
  return r;
}

/// A JSON-RPC error reply of `refusal_table` with the `error.data` envelope (and `reason` when given).
inline http_reply http_error(refusal id, const std::optional<request_id_view>& echo, std::string_view cid,
                             std::optional<std::string_view> reason = {}) {
  const refusal_row& row = refusal_row_of(id);
  error_data d;
  d.correlation_id = cid;
  d.retry_after_ms = row.retry_after;
  if (!row.remediation.empty()) d.remediation = row.remediation;
  d.reason = reason;
  std::string body;
  write_error_response(body, echo, static_cast<errc>(row.code), row.message, d);
  http_reply r = http_json_body(row.http_status, std::move(body));
  http_add_retry_after(r, row.retry_after);
  return r;
}

/// Appends ` name="value"` (the first parameter) or `, name="value"` to a `Bearer` challenge.
inline void http_challenge_param(std::string& challenge, std::string_view name, std::string_view value) {
  challenge += challenge == "Bearer" ? " " : ", ";
  challenge += name;
  challenge += '=';
  challenge += http_quoted(value);
}

/// The 401 (MCP authorization): -32001 with the envelope, and the `WWW-Authenticate: Bearer`
/// challenge (docs/oauth.md#the-401-challenge): `error="invalid_token"` when the request presented
/// a credential (RFC 6750 section 3.1; none when it presented nothing), the protected-resource
/// metadata (RFC 9728) and the scope to ask for, each when configured.
inline http_reply http_unauthenticated(std::string_view cid, const protected_resource_doc& pr, bool presented) {
  const refusal_row& row = refusal_row_of(refusal::unauthenticated);
  error_data d;
  d.correlation_id = cid;
  d.remediation = row.remediation;
  error_object eo;
  eo.code = row.code;
  eo.message = std::string{row.message};
  json::writer w{eo.data_json};
  write_error_data(w, d);
  std::string body;
  write_error_response(body, std::nullopt, eo);
  http_reply r = http_json_body(row.http_status, std::move(body));
  std::string challenge = "Bearer";
  if (presented) http_challenge_param(challenge, "error", "invalid_token");
  if (!pr.challenge_url.empty()) http_challenge_param(challenge, "resource_metadata", pr.challenge_url);
  if (!pr.challenge_scope.empty()) http_challenge_param(challenge, "scope", pr.challenge_scope);
  http_add(r, "WWW-Authenticate", challenge);
  return r;
}

/// The 403 of a call the tier gate refused for lack of a scope (docs/oauth.md#step-up): the
/// JSON-RPC error `body` as it was written, and `WWW-Authenticate: Bearer
/// error="insufficient_scope"` with the scopes to ask for (those the token has and the missing
/// one: a client that asks for the challenge's scope alone keeps what it had) and the metadata.
inline http_reply http_insufficient_scope(std::string body, const principal& who, std::string_view missing,
                                          const protected_resource_doc& pr) {
  http_reply r = http_json_body(403, std::move(body));
  std::string scope;
  for (const std::string& s : who.scopes) {
    scope += s;
    scope += ' ';
  }
  scope += missing;
  std::string challenge = "Bearer";
  http_challenge_param(challenge, "error", "insufficient_scope");
  http_challenge_param(challenge, "scope", scope);
  if (!pr.challenge_url.empty()) http_challenge_param(challenge, "resource_metadata", pr.challenge_url);
  http_add(r, "WWW-Authenticate", challenge);
  return r;
}

/// A session-layer refusal (`stream_admission.hpp`) with its status and `Retry-After`.
inline http_reply http_refusal(const stream_refusal& s, const std::optional<request_id_view>& id,
                               std::string_view cid) {
  std::string body;
  write_refusal(body, id, s, cid);
  http_reply r = http_json_body(s.http_status, std::move(body));
  http_add_retry_after(r, s.retry_after);
  return r;
}

/// The headers of every SSE answer (docs/http.md#get-sessions-on,
/// docs/sessions.md#streamed-post-admission).
inline void http_sse_head(http_reply& r, std::string_view cid) {
  r.head.status = 200;
  http_add(r, "Content-Type", http_event_stream);
  http_add(r, "Cache-Control", "no-cache");
  http_add(r, "X-Accel-Buffering", "no");
  http_add(r, "X-Content-Type-Options", "nosniff");
  http_add(r, "X-Correlation-Id", cid);
}

inline void http_deliver(http_completion& done, http_reply r) {
  http_completion d = std::exchange(done, nullptr);
  if (d) d(std::move(r));
}

}  // namespace detail

// ---- routes ------------------------------------------------------------------------------------

namespace detail {

/// A repeated `Host` field (RFC 9112 §3.2; docs/security.md#dns-rebinding-host-and-origin): 400
/// -32600 with `reason: repeated_host`.
inline http_reply http_repeated_host(std::string_view cid) {
  error_data d;
  d.correlation_id = cid;
  d.reason = "repeated_host";
  std::string body;
  write_error_response(body, std::nullopt, errc::invalid_request, "Host repeated", d);
  return http_json_body(400, std::move(body));
}

}  // namespace detail

inline std::optional<http_reply> http_endpoint::impl::host_guard(const http_request_view& req) const {
  if (req.header_repeated("Host")) return detail::http_repeated_host(mint_cid().view());
  if (req.header_repeated("Origin")) {
    return detail::http_error(detail::refusal::origin, std::nullopt, mint_cid().view(), "repeated_origin");
  }
  if (!host_allowed(req)) return detail::http_error(detail::refusal::host, std::nullopt, mint_cid().view());
  return std::nullopt;
}

inline bool http_endpoint::impl::host_allowed(const http_request_view& req) const noexcept {
  // An unreadable or unknown `local` counts as loopback (fail safe;
  // docs/security.md#dns-rebinding-host-and-origin).
  if (!options.validate_loopback_host || !req.local.treated_as_loopback()) return true;
  const auto host = req.header("Host");
  if (!host) return false;  // a loopback request without Host: refused (fail closed)
  if (detail::http_host_is_loopback(*host)) return true;
  const std::string_view h = detail::http_trim(*host);
  for (const auto& a : options.allowed_hosts) {
    if (h == a) return true;
  }
  return false;
}

inline bool http_endpoint::impl::loopback_same_origin(const http_request_view& req, std::string_view origin) noexcept {
  if (!req.local.treated_as_loopback()) return false;
  const auto host = req.header("Host");
  if (!host || !detail::http_host_is_loopback(*host)) return false;
  const std::string_view h = detail::http_trim(*host);
  for (const std::string_view scheme : {std::string_view{"http://"}, std::string_view{"https://"}}) {
    if (origin.size() == scheme.size() + h.size() && detail::ascii_iequals(origin.substr(0, scheme.size()), scheme) &&
        detail::ascii_iequals(origin.substr(scheme.size()), h)) {
      return true;
    }
  }
  return false;
}

inline std::optional<http_reply> http_endpoint::impl::mcp_head(const http_request_view& req, const correlation_id& cid,
                                                               std::optional<principal>& who) const {
  // 1. The kill switch (docs/http.md#processing-order-on-the-mcp-path): before anything else,
  // deliberately bare.
  if (srv.switches().disabled()) {
    std::string body;
    const detail::refusal_row& row = detail::refusal_row_of(detail::refusal::disabled);
    write_error_response(body, std::nullopt, static_cast<errc>(row.code), row.message, error_data{});
    return detail::http_json_body(200, std::move(body));
  }
  // 2. Methods (docs/http.md#processing-order-on-the-mcp-path, #delete-sessions-on): GET and DELETE
  // exist only with sessions.
  const bool is_post = req.method == "POST";
  const bool is_get = req.method == "GET";
  const bool is_delete = req.method == "DELETE";
  const bool sessions_served = options.sessions && serves(options.eras, protocol_era::handshake);
  if (!is_post && (!sessions_served || (!is_get && !is_delete))) {
    http_reply r = detail::http_empty(405);
    detail::http_add(r, "Allow", sessions_served ? detail::http_allow_mcp : detail::http_allow_stateless);
    return r;
  }
  // 3. Host (DNS rebinding, docs/security.md#dns-rebinding-host-and-origin); more than one Host
  // field is 400 (RFC 9112 §3.2), whatever the listener.
  if (req.header_repeated("Host")) {
    reject_row("repeated_host", {}, {}, cid.view());
    return detail::http_repeated_host(cid.view());
  }
  if (!host_allowed(req)) {
    reject_row("host", {}, {}, cid.view());
    return detail::http_error(detail::refusal::host, std::nullopt, cid.view());
  }
  // 4. Origin (docs/security.md#dns-rebinding-host-and-origin): every path and era, before
  // authentication. Two Origin fields are refused as a foreign one: no component may read another
  // copy than the one checked.
  if (req.header_repeated("Origin")) {
    if (is_get) count_reject(stream_reject::origin);
    reject_row(to_string(stream_reject::origin), {}, {}, cid.view());
    return detail::http_error(detail::refusal::origin, std::nullopt, cid.view(), "repeated_origin");
  }
  if (const auto origin = req.header("Origin")) {
    bool ok = options.allow_loopback_same_origin && loopback_same_origin(req, *origin);
    for (const auto& o : options.allowed_origins) ok = ok || *origin == o;
    for (const auto& o : options.cors.allowed_origins) ok = ok || *origin == o;  // docs/http.md#cors
    if (!ok) {
      if (is_get) count_reject(stream_reject::origin);
      reject_row(to_string(stream_reject::origin), {}, {}, cid.view());
      return detail::http_error(detail::refusal::origin, std::nullopt, cid.view());
    }
  }
  if (options.sessions && !is_post) {
    // 5. MCP-Protocol-Version of a GET or DELETE (docs/http.md#processing-order-on-the-mcp-path):
    // absent is accepted; present must be supported. A POST's is read with its body, which says
    // the era (docs/eras.md#classification).
    if (const auto v = req.header("MCP-Protocol-Version")) {
      if (!is_supported_protocol_version(detail::http_trim(*v))) {
        if (is_get) count_reject(stream_reject::protocol_version);
        reject_row(to_string(stream_reject::protocol_version), {}, {}, cid.view());
        return detail::http_error(detail::refusal::protocol_version, std::nullopt, cid.view());
      }
    }
  }
  // 6. Authentication: every request, a session is never a credential
  // (docs/sessions.md#the-session-registry); a principal the host handed in stands for it
  // (docs/http.md#handing-in-the-principal).
  if (!who) who = authenticate(req);
  if (!who) return detail::http_unauthenticated(cid.view(), resource_doc, req.header("Authorization").has_value());
  return std::nullopt;
}

inline void http_endpoint::impl::handle_mcp(const http_request_view& req, std::optional<principal> who,
                                            http_completion& done) {
  // CORS (docs/http.md#cors): a listed origin's preflight is answered here, before the kill
  // switch and without authentication; every other answer gets the CORS headers.
  if (std::optional<http_reply> preflight = cors_preflight(req)) {
    detail::http_deliver(done, std::move(*preflight));
    return;
  }
  cors_wrap(req, done);
  const correlation_id cid = mint_cid();
  if (std::optional<http_reply> refused = mcp_head(req, cid, who)) {
    detail::http_deliver(done, std::move(*refused));
    return;
  }
  if (!who) {  // not reached: mcp_head refuses every request it leaves without a principal
    detail::http_deliver(done, detail::http_unauthenticated(cid.view(), resource_doc, false));
    return;
  }
  // The body against the cap, on every method and at the point check_head checks the declared
  // length, so that both answer the same (a GET or DELETE with a large body is 413 too).
  if (req.body.size() > options.max_body_bytes) {
    detail::http_deliver(done, detail::http_error(detail::refusal::body_too_large, std::nullopt, cid.view()));
    return;
  }
  const principal& caller = *who;
  if (req.method == "POST") {
    handle_post(req, caller, cid, done);
  } else if (req.method == "GET") {
    handle_get(req, caller, cid, done);
  } else {
    handle_delete(req, caller, cid, done);
  }
}

inline void http_endpoint::impl::handle_delete(const http_request_view& req, const principal& who,
                                               const correlation_id& cid, http_completion& done) {
  using detail::http_deliver;
  // docs/http.md#delete-sessions-on.
  const auto sid = req.header(detail::http_session_header);
  if (!sid) {
    reject_row(to_string(stream_reject::missing_session_header), {}, who.id, cid.view());
    http_deliver(done, detail::http_refusal(get_refusal(stream_reject::missing_session_header), std::nullopt,
                                            cid.view()));
    return;
  }
  std::shared_ptr<session> s = registry->validate_and_touch(*sid, who.id);
  if (!s || !registry->terminate(*sid, who.id, "deleted", cid.view())) {
    reject_row(to_string(stream_reject::unknown_session), *sid, who.id, cid.view());
    http_deliver(done, detail::http_refusal(get_refusal(stream_reject::unknown_session), std::nullopt, cid.view()));
    return;
  }
  // The session is over: its calls in flight are cancelled and its requests to the client fail.
  // Detached work goes on (its records die with the session at the next sweep).
  if (auto* st = static_cast<detail::http_session_state*>(s->attachment().get())) st->client.close();
  http_deliver(done, detail::http_empty(200));
}

inline bool http_endpoint::impl::handle_ops(const http_request_view& req, std::string_view path,
                                            http_completion& done) {
  using detail::http_deliver;
  const bool is_metrics = !options.metrics_path.empty() && path == options.metrics_path;
  const bool is_health = !options.healthz_path.empty() && path == options.healthz_path;
  const bool is_ready = !options.readyz_path.empty() && path == options.readyz_path;
  if (!is_metrics && !is_health && !is_ready) return false;
  if (std::optional<http_reply> refused = host_guard(req)) {
    http_deliver(done, std::move(*refused));
    return true;
  }
  if (req.method != "GET") {
    http_reply r = detail::http_empty(405);
    detail::http_add(r, "Allow", "GET");
    http_deliver(done, std::move(r));
    return true;
  }
  if (is_metrics) {
    if (metrics == nullptr) {
      http_deliver(done, detail::http_empty(404));
      return true;
    }
    http_reply r;
    r.head.status = 200;
    detail::http_add(r, "Content-Type", prometheus_content_type);
    metrics->write_prometheus(r.head.body);
    http_deliver(done, std::move(r));
    return true;
  }
  if (is_health) {
    http_deliver(done, detail::http_json_body(200, R"({"status":"ok"})"));
    return true;
  }
  bool up = true;
  if (ready) {
    try {
      up = ready();
    } catch (...) {
      up = false;
    }
  }
  http_deliver(done, up ? detail::http_json_body(200, R"({"status":"ready"})")
                        : detail::http_json_body(503, R"({"status":"not_ready"})"));
  return true;
}

inline http_reply http_endpoint::impl::resource_metadata_other(const http_request_view& req) {
  if (req.method == "OPTIONS") {
    // A public document: any page may read it, with the header MCP clients send.
    http_reply r = detail::http_empty(204);
    detail::http_add(r, "Access-Control-Allow-Origin", "*");
    detail::http_add(r, "Access-Control-Allow-Methods", "GET");
    detail::http_add(r, "Access-Control-Allow-Headers", "MCP-Protocol-Version");
    return r;
  }
  http_reply r = detail::http_empty(405);
  detail::http_add(r, "Allow", "GET, OPTIONS");
  return r;
}

inline bool http_endpoint::impl::handle_resource_metadata(const http_request_view& req, std::string_view path,
                                                          http_completion& done) {
  if (!resource_doc.serves(path)) return false;
  if (std::optional<http_reply> refused = host_guard(req)) {
    detail::http_deliver(done, std::move(*refused));
    return true;
  }
  if (req.method != "GET") {
    detail::http_deliver(done, resource_metadata_other(req));
    return true;
  }
  http_reply r = detail::http_json_body(200, resource_doc.body);
  detail::http_add(r, "Access-Control-Allow-Origin", "*");
  detail::http_deliver(done, std::move(r));
  return true;
}

// ---- http_endpoint ------------------------------------------------------------------------------

MCPCORE_DECL http_endpoint::http_endpoint(server& srv, detail::authenticator_base* authn, http_endpoint_options options,
                                          detail::clock_base* clock)
    : impl_(nullptr) {
  std::unique_ptr<detail::authenticator_base> a{authn};
  std::unique_ptr<detail::clock_base> c{clock};
  impl_ = new impl(srv, std::move(a), std::move(options), std::move(c));
}

MCPCORE_DECL http_endpoint::~http_endpoint() { delete impl_; }

MCPCORE_DECL http_executor_binding http_endpoint::bind_executor(http_executor exec) {
  if (!exec) throw std::invalid_argument("http_endpoint::bind_executor: the executor is empty");
  auto shared = std::make_shared<const http_executor>(std::move(exec));
  const std::shared_ptr<detail::http_executor_slot>& slot = impl_->executor;
  {
    const std::lock_guard<std::mutex> lock(slot->mutex);
    if (slot->exec) {
      throw std::logic_error(
          "http_endpoint::bind_executor: this endpoint already has an executor (is a second server driving "
          "it?); destroy or release the first http_executor_binding before binding another");
    }
    slot->exec = std::move(shared);
  }
  return http_executor_binding{slot};
}

// ---- http_executor_binding ----------------------------------------------------------------------

MCPCORE_DECL http_executor_binding& http_executor_binding::operator=(http_executor_binding&& other) noexcept {
  if (this != &other) {
    release();
    slot_ = std::move(other.slot_);
  }
  return *this;
}

MCPCORE_DECL http_executor_binding::~http_executor_binding() { release(); }

MCPCORE_DECL void http_executor_binding::release() noexcept {
  if (!slot_) return;
  std::shared_ptr<const http_executor> old;  // destroyed after unlocking
  {
    const std::lock_guard<std::mutex> lock(slot_->mutex);
    old = std::move(slot_->exec);
  }
  slot_.reset();
}

// ---- http_endpoint, continued --------------------------------------------------------------------

MCPCORE_DECL void http_endpoint::set_metrics(metrics_registry& registry) {
  impl_->metrics = &registry;
  impl_->m = bind_session_metrics(registry);
  impl_->rebuild();
}

MCPCORE_DECL void http_endpoint::set_audit(detail::audit_base* audit) {
  std::unique_ptr<detail::audit_base> owned{audit};
  impl_->audit = std::move(owned);
  impl_->audit_fwd.a = impl_->audit.get();
  impl_->registry->set_audit(impl_->audit_fwd);
  impl_->bridge->set_audit(impl_->audit_fwd);
}

MCPCORE_DECL void http_endpoint::set_approvals(const approval_endpoint& approvals) { impl_->approvals = &approvals; }

MCPCORE_DECL void http_endpoint::set_approvals_page(const approvals_page& page) { impl_->page = &page; }

MCPCORE_DECL void http_endpoint::set_readiness(std::function<bool()> ready) { impl_->ready = std::move(ready); }

inline void http_endpoint::impl::route(const http_request_view& req, std::optional<principal> handed,
                                       http_completion& done) {
  const std::string_view path = detail::http_path_of(req.target);
  if (is_mcp_path(path)) {
    handle_mcp(req, std::move(handed), done);
    return;
  }
  if (page != nullptr && page->matches(req.target)) {
    // The Host check against DNS rebinding first; the page checks Origin itself
    // (docs/approvals-page.md#web-security).
    if (std::optional<http_reply> refused = host_guard(req)) {
      detail::http_deliver(done, std::move(*refused));
      return;
    }
    std::optional<http_response> answer = page->handle(req);
    http_reply r;
    if (answer) {
      r.head = std::move(*answer);
    } else {
      r = detail::http_empty(404);
    }
    detail::http_deliver(done, std::move(r));
    return;
  }
  if (approvals != nullptr && approvals->matches(req.target)) {
    if (std::optional<http_reply> refused = host_guard(req)) {
      detail::http_deliver(done, std::move(*refused));
      return;
    }
    const std::optional<principal> who = handed ? std::move(handed) : authenticate(req);
    std::optional<http_response> answer = approvals->handle(req, who ? &*who : nullptr);
    if (!answer) {
      detail::http_deliver(done, detail::http_empty(404));
      return;
    }
    http_reply r;
    r.head = std::move(*answer);
    detail::http_deliver(done, std::move(r));
    return;
  }
  if (handle_ops(req, path, done)) return;
  if (handle_resource_metadata(req, path, done)) return;
  detail::http_deliver(done, detail::http_empty(404));
}

inline std::optional<http_response> http_endpoint::impl::head_verdict(const http_request_view& head,
                                                                      std::optional<principal>& who) const {
  const std::string_view path = detail::http_path_of(head.target);
  if (is_mcp_path(path)) {
    // A listed origin's preflight passes to handle, which answers it (docs/http.md#cors); its
    // Host/Origin refusal is answered here.
    if (std::optional<http_reply> preflight = cors_preflight(head)) {
      who.reset();
      if (preflight->head.status == 204) return std::nullopt;
      return std::move(preflight->head);
    }
    const correlation_id cid = mint_cid();
    if (std::optional<http_reply> refused = mcp_head(head, cid, who)) {
      who.reset();
      cors_decorate(refused->head, head);
      return std::move(refused->head);
    }
    // The declared length against the cap, after authentication as in handle (413 before parsing).
    if (head.declared_length && *head.declared_length > options.max_body_bytes) {
      who.reset();
      http_response too_large = detail::http_error(detail::refusal::body_too_large, std::nullopt, cid.view()).head;
      cors_decorate(too_large, head);
      return too_large;
    }
    return std::nullopt;
  }
  if (page != nullptr && page->matches(head.target)) {
    who.reset();  // the page reads its own session cookie
    if (std::optional<http_reply> refused = host_guard(head)) return std::move(refused->head);
    return page->check_head(head);
  }
  if (approvals != nullptr && approvals->matches(head.target)) {
    if (std::optional<http_reply> refused = host_guard(head)) {
      who.reset();
      return std::move(refused->head);
    }
    // Without a principal the approval endpoint answers its 401 before it reads anything else.
    if (!who) who = authenticate(head);
    if (!who) return approvals->handle(head, nullptr);
    return std::nullopt;
  }
  who.reset();  // the operational routes and 404 need no principal
  const bool ops = (!options.metrics_path.empty() && path == options.metrics_path) ||
                   (!options.healthz_path.empty() && path == options.healthz_path) ||
                   (!options.readyz_path.empty() && path == options.readyz_path);
  if (ops) {
    if (std::optional<http_reply> refused = host_guard(head)) return std::move(refused->head);
    if (head.method != "GET") {
      http_reply r = detail::http_empty(405);
      detail::http_add(r, "Allow", "GET");
      return std::move(r.head);
    }
    return std::nullopt;
  }
  if (resource_doc.serves(path)) {
    if (std::optional<http_reply> refused = host_guard(head)) return std::move(refused->head);
    // Its preflight passes to handle, which answers it, as on the MCP path (docs/http.md#cors).
    if (head.method != "GET" && head.method != "OPTIONS") return resource_metadata_other(head).head;
    return std::nullopt;
  }
  return detail::http_empty(404).head;
}

MCPCORE_DECL void http_endpoint::handle(const http_request_view& req, http_completion done) {
  impl_->route(req, std::nullopt, done);
}

MCPCORE_DECL void http_endpoint::handle(const http_request_view& req, principal caller, http_completion done) {
  impl_->route(req, std::optional<principal>{std::move(caller)}, done);
}

MCPCORE_DECL std::optional<http_response> http_endpoint::check_head(const http_request_view& head) const {
  std::optional<principal> who;
  return impl_->head_verdict(head, who);
}

MCPCORE_DECL std::optional<http_response> http_endpoint::check_head(const http_request_view& head,
                                                                    const principal* caller) const {
  std::optional<principal> who;
  if (caller != nullptr) who = *caller;
  return impl_->head_verdict(head, who);
}

MCPCORE_DECL std::optional<http_response> http_endpoint::check_head(const http_request_view& head,
                                                                    std::optional<principal>& established) const {
  established.reset();
  return impl_->head_verdict(head, established);
}

MCPCORE_DECL bool http_endpoint::matches(std::string_view target) const noexcept {
  const impl& e = *impl_;
  const std::string_view path = detail::http_path_of(target);
  if (e.is_mcp_path(path)) return true;
  if (e.approvals != nullptr && e.approvals->matches(target)) return true;
  if (e.page != nullptr && e.page->matches(target)) return true;
  return (!e.options.metrics_path.empty() && path == e.options.metrics_path) ||
         (!e.options.healthz_path.empty() && path == e.options.healthz_path) ||
         (!e.options.readyz_path.empty() && path == e.options.readyz_path) || e.resource_doc.serves(path);
}

MCPCORE_DECL void http_endpoint::tick() noexcept {
  (void)impl_->registry->collect_garbage();  // no-throw; failures counted
  impl_->bridge->sweep();                   // no-throw; failures counted
  impl_->srv.expire_waiting();              // docs/eras.md#waiting-for-the-client
}

MCPCORE_DECL void http_endpoint::begin_shutdown() noexcept {
  impl& e = *impl_;
  if (e.shut.exchange(true)) return;
  e.srv.begin_shutdown();
  e.registry->begin_shutdown();
  // Every live POST stream ends `session_terminated` (with its close frame) before the bridge's
  // shutdown would close the unresolved ones `internal_error`.
  std::vector<std::shared_ptr<stream_sink>> posts;
  {
    const std::lock_guard<std::mutex> lock(e.posts_mutex);
    try {
      posts.reserve(e.post_sinks.size());
      for (const auto& [key, entry] : e.post_sinks) {
        if (auto s = entry.wake.lock()) posts.push_back(std::move(s));
      }
    } catch (...) {  // NOLINT(bugprone-empty-catch): best effort; the bridge's shutdown still closes them
    }
  }
  for (const auto& s : posts) (void)s->close(close_reason::session_terminated);
  detail::close_per_request_streams(e);
  // GET streams close `session_terminated`; no call stays parked on its client's answer
  // (docs/sessions.md#shutdown): the calls keep running until cancel_in_flight.
  (void)e.registry->terminate_all([&e](const session& s) {
    auto st = std::static_pointer_cast<detail::http_session_state>(s.attachment());
    if (!st) return;
    st->client.input_closed();
    const std::lock_guard<std::mutex> lock(e.posts_mutex);
    try {
      e.draining.push_back(st);
    } catch (...) {
      st->client.close();  // out of memory: no drain for this session's calls
    }
  });
  e.bridge->shutdown();
}

MCPCORE_DECL void http_endpoint::cancel_in_flight() noexcept {
  impl& e = *impl_;
  std::vector<std::shared_ptr<detail::http_session_state>> states;
  {
    const std::lock_guard<std::mutex> lock(e.posts_mutex);
    states.swap(e.draining);
  }
  for (const auto& st : states) st->client.close();  // their stop tokens fire
  e.srv.cancel_tasks();  // docs/tasks.md#shutdown: the tasks' work stops too
}

MCPCORE_DECL session_registry& http_endpoint::sessions() noexcept { return *impl_->registry; }
MCPCORE_DECL progress_bridge& http_endpoint::bridge() noexcept { return *impl_->bridge; }
MCPCORE_DECL stream_budget& http_endpoint::budget() noexcept { return impl_->budget; }
MCPCORE_DECL const http_endpoint_options& http_endpoint::options() const noexcept { return impl_->options; }

MCPCORE_END_NAMESPACE

// The routes with a stream: they need the endpoint's state above (and include this file first).
#include <mcpcore/transport/impl/http_get_stream.ipp>
#include <mcpcore/transport/impl/http_post_stream.ipp>
#include <mcpcore/transport/impl/http_per_request.ipp>
#include <mcpcore/transport/impl/http_events.ipp>
#include <mcpcore/transport/impl/cors.ipp>

#endif  // MCPCORE_IMPL_HTTP_ENDPOINT_IPP
