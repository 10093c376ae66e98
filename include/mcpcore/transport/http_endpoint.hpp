// SPDX-License-Identifier: Apache-2.0
// MCP Streamable HTTP as a sans-I/O endpoint: a parsed request in, a complete or streaming
// response out. The Asio server drives it; so can any host's own HTTP server.
#ifndef MCPCORE_HTTP_ENDPOINT_HPP
#define MCPCORE_HTTP_ENDPOINT_HPP

#include <mcpcore/detail/config.hpp>
#include <mcpcore/governance/approval_endpoint.hpp>
#include <mcpcore/governance/audit.hpp>
#include <mcpcore/governance/authenticator.hpp>
#include <mcpcore/governance/clock.hpp>
#include <mcpcore/session/progress_bridge.hpp>
#include <mcpcore/session/session_registry.hpp>
#include <mcpcore/session/stream_budget.hpp>
#include <mcpcore/session/stream_pump.hpp>
#include <mcpcore/session/stream_types.hpp>
#include <mcpcore/wire/era.hpp>
#include <mcpcore/wire/http.hpp>

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

MCPCORE_BEGIN_NAMESPACE

class approvals_page;  // governance/approvals_page.hpp: mounted by set_approvals_page

class server;
class metrics_registry;

/// Largest request body accepted on the MCP path, in bytes
/// (docs/http.md#processing-order-on-the-mcp-path: 4 MiB → 413).
inline constexpr std::size_t default_max_request_body = std::size_t{4} << 20U;
/// The `retry:` field of the priming event of a POST SSE stream (MCP 2025-11-25, SEP-1699).
inline constexpr std::chrono::milliseconds default_sse_retry{1000};

/// Dispatches (queued or running) one principal may have on the endpoint's executor
/// (docs/sessions.md#fair-dispatch).
inline constexpr std::size_t default_max_dispatch_per_principal = 16;
/// Parsed request documents the endpoint keeps for reuse (docs/performance.md#reused-documents).
inline constexpr std::size_t default_max_idle_documents = 16;
/// Longest request body whose parsed document is kept for reuse.
inline constexpr std::size_t default_max_reused_document_bytes = std::size_t{16} << 10U;
/// Interval of the `: keepalive` comment on an idle per-request-era stream.
inline constexpr std::chrono::milliseconds default_per_request_keepalive{15000};
/// Per-request-era SSE streams one principal may hold open at once.
inline constexpr std::size_t default_per_request_streams_per_principal = 32;
/// `subscriptions/listen` streams one principal may hold open at once.
inline constexpr std::size_t default_listens_per_principal = 8;
/// Resource URIs (and, apart, task ids) one `subscriptions/listen` may name.
inline constexpr std::size_t default_max_listen_uris = 1024;

/// The streams of the per-request era (docs/eras.md#streams).
struct per_request_stream_options {
  /// How long a stream may stay silent before a `: keepalive` comment (0: never).
  std::chrono::milliseconds keepalive = default_per_request_keepalive;
  /// Streams one principal may hold open (0: unlimited); past it a call answers JSON and its
  /// in-call messages are dropped. Every stream also counts against the endpoint's stream budget.
  std::size_t streams_per_principal = default_per_request_streams_per_principal;
  /// `subscriptions/listen` streams one principal may hold open (0: unlimited); one more is
  /// refused 429 -32012. They count against the stream budget too (surface `listen`).
  std::size_t listens_per_principal = default_listens_per_principal;
  /// Resource URIs one listen may subscribe to, and task ids it may watch (`tasksStatus`,
  /// docs/tasks.md#notifications), each; more is -32602.
  std::size_t max_listen_uris = default_max_listen_uris;
};

/// How long a browser may cache a CORS preflight answer (`Access-Control-Max-Age`, docs/http.md#cors).
inline constexpr std::chrono::seconds default_cors_max_age{600};

/// The protected-resource metadata the endpoint serves (RFC 9728, docs/oauth.md#protected-resource-metadata):
/// where a remote client learns which authorization server issues tokens for this server. Off while
/// `resource` is empty (the default).
struct protected_resource_options {
  /// This server's resource identifier (RFC 8707): the canonical `https://` (or, for loopback and
  /// tests, `http://`) URI of its MCP endpoint, without query or fragment; the `aud` its access
  /// tokens must carry. Set: the document is served at `/.well-known/oauth-protected-resource`
  /// and, when the URI has a path, at that path appended to it; the 401 challenge points there
  /// unless `http_endpoint_options::resource_metadata_url` says otherwise.
  std::string resource{};
  /// `authorization_servers`: the issuer URIs of the authorization servers it trusts.
  std::vector<std::string> authorization_servers{};
  /// `scopes_supported`: the scopes a client may ask for (each an RFC 6749 scope-token).
  std::vector<std::string> scopes_supported{};
  /// The `scope` of the 401 challenge: what a client should ask for first (space-separated
  /// scope-tokens); empty sends none, and a client then asks for `scopes_supported`.
  std::string challenge_scope{};
  /// `resource_name`, for people; empty sends none.
  std::string resource_name{};
};

/// Cross-origin requests from browser pages (docs/http.md#cors). Off while `allowed_origins` is
/// empty (the default): then nothing changes, `OPTIONS` stays 405.
struct cors_options {
  /// Exact origins (`scheme://host[:port]`, compared byte for byte) whose pages may call the MCP
  /// paths: their preflight (`OPTIONS` with `Access-Control-Request-Method`) is answered 204, every
  /// answer to them carries `Access-Control-Allow-Origin: <origin>`, and they pass the Origin check
  /// as if listed in `http_endpoint_options::allowed_origins`. Any other origin is unchanged: 403
  /// -32008 on the MCP methods, its preflight refused.
  std::vector<std::string> allowed_origins{};
  /// `Access-Control-Max-Age` of a preflight answer (a negative value sends 0: no caching).
  std::chrono::seconds max_age = default_cors_max_age;
  /// Send `Access-Control-Allow-Credentials: true`, for a host whose authenticator reads cookies
  /// (a page then fetches with `credentials: "include"`). Off: bearer tokens in `Authorization`
  /// need no credentials mode.
  bool allow_credentials = false;
};

/// What the endpoint serves and how.
struct http_endpoint_options {
  /// The MCP path (docs/http.md#processing-order-on-the-mcp-path). Compared byte for byte with the
  /// target's path.
  std::string path = "/mcp/v1/";
  /// Further paths that serve MCP exactly like `path` (the conformance suite and most clients
  /// use `/mcp`).
  std::vector<std::string> aliases = {"/mcp"};
  /// Largest body on the MCP paths (413 beyond, checked before parsing).
  std::size_t max_body_bytes = default_max_request_body;
  /// The protocol eras served (docs/eras.md#choosing-the-eras): both (the default), the
  /// handshake era only (2025-11-25 and before), or the per-request era only (2026-07-28). A
  /// request of an era not served answers 400 -32022 listing the revisions that are.
  served_eras eras = served_eras::both;
  /// The per-request era's streams.
  per_request_stream_options per_request{};
  /// Sessions and streaming (docs/http.md#processing-order-on-the-mcp-path). Off: no
  /// `Mcp-Session-Id`, no Origin, protocol or session checks on POST, GET and DELETE answer 405,
  /// notifications still 202.
  bool sessions = true;
  /// With sessions on, what a POST other than `initialize` without `Mcp-Session-Id` gets. False
  /// (the default; docs/http.md#processing-order-on-the-mcp-path: sessions are optional): it is
  /// served statelessly, with no `peer` (no cancellation, no in-call messages, no requests to the
  /// client). True: 400 -32600 `missing_session_header` (MCP 2025-11-25 basic/transports: "SHOULD
  /// respond 400").
  bool require_session = false;
  /// Whether a `tools/call` may answer as SSE on the POST
  /// (docs/sessions.md#streamed-post-admission; default on).
  bool streamed_post = true;
  /// Dispatches one principal may have queued or running on the executor at once
  /// (docs/sessions.md#fair-dispatch; 0: no cap). One more request is refused 429 -32603 `Too many
  /// requests in flight` with `retry_after_ms`; between principals the queue runs round-robin.
  std::size_t max_dispatch_per_principal = default_max_dispatch_per_principal;
  /// Parsed request documents kept for the next requests (docs/performance.md#reused-documents),
  /// so that ordinary requests parse without allocating; 0: every request parses into a new one.
  std::size_t max_idle_documents = default_max_idle_documents;
  /// A request whose body was longer than this frees its document instead of keeping it, so the
  /// kept documents stay small (at most `max_idle_documents` documents sized for this many bytes).
  std::size_t max_reused_document_bytes = default_max_reused_document_bytes;
  /// Exact `Origin` values allowed (docs/security.md#dns-rebinding-host-and-origin): an absent
  /// Origin passes, a present one must match one of these byte for byte (or be this server's own
  /// loopback origin, below); otherwise
  /// 403 -32008.
  std::vector<std::string> allowed_origins{};
  /// Also allow the server's own origin on loopback: when the request arrived on a loopback
  /// address and its `Host` names loopback (`localhost`, `127.0.0.1` or `[::1]`, with its port),
  /// an `Origin` of `http://<Host>` or `https://<Host>` (ASCII case-insensitive) passes. Such a
  /// page was served by this very listener; a DNS-rebinding page cannot send it, because its
  /// `Host` names the attacker's domain, and a page of another local port has another origin.
  /// Saves a host that binds an ephemeral port from listing origins it learns only after binding.
  bool allow_loopback_same_origin = true;
  /// Exact `Host` values allowed besides the loopback names (DNS-rebinding protection,
  /// docs/security.md#dns-rebinding-host-and-origin). Unless the request arrived on an address
  /// read as non-loopback (`http_request_view::local`; an unreadable one counts as loopback), its
  /// `Host` must name loopback (`localhost`, `127.0.0.1`, `[::1]`, any port) or be listed here,
  /// else 403. More than one `Host` field is 400 whatever the address.
  std::vector<std::string> allowed_hosts{};
  /// Validate `Host` on requests that arrived on a loopback address (default on).
  bool validate_loopback_host = true;
  /// CORS for browser pages of other origins (docs/http.md#cors); off by default.
  cors_options cors{};
  /// The `retry:` of the priming event.
  std::chrono::milliseconds sse_retry = default_sse_retry;
  /// `resource_metadata` of the `WWW-Authenticate: Bearer` challenge on a 401 (MCP
  /// authorization, RFC 9728); empty → the document `protected_resource` serves, or none.
  std::string resource_metadata_url{};
  /// The protected-resource metadata to serve (docs/oauth.md#protected-resource-metadata); off by
  /// default. The constructor throws `std::invalid_argument` for a value it refuses.
  protected_resource_options protected_resource{};
  session_registry_options session{};
  progress_bridge_options bridge{};
  stream_budget_options budget{};
  get_pump_options get_stream{};
  post_pump_options post_stream{};
  /// Operational routes (empty path → not served): Prometheus text exposition of the metrics
  /// registry set with `set_metrics`, liveness, readiness (sessions never gate readiness).
  std::string metrics_path = "/metrics";
  std::string healthz_path = "/healthz";
  std::string readyz_path = "/readyz";
};

/// A held-open response body (`text/event-stream`): the transport pulls bytes until it ends.
///
///     stream->on_ready([conn] { conn->post_pull(); });   // once, before the first pull
///     loop (on the connection's strand):
///       std::string out; stream->pull(clock::now(), out);
///       write(out) → stream->written() or stream->write_failed();
///       if (stream->finished()) { end the body; destroy the stream; }
///       else wait for the waker or stream->wait_time(now), whichever is first
///
/// Destroying the stream releases it (a stream that was not finished closes
/// `client_disconnect`: its work goes on and its result stays resumable on GET).
///
/// @par Thread safety
/// One stream belongs to one thread (or strand) at a time, except `close`, which any thread may
/// call. The waker is called from any thread, under no mcpcore lock; it must not block and must
/// not call `pull`.
class MCPCORE_API http_stream {
 public:
  virtual ~http_stream() = default;
  /// Registers the function called when `pull` may have new bytes.
  virtual void on_ready(std::function<void()> waker) = 0;
  /// Appends the bytes to write now (possibly none).
  virtual void pull(std::chrono::steady_clock::time_point now, std::string& out) noexcept = 0;
  /// How long the transport may wait for the waker before pulling anyway (ticks, heartbeats,
  /// deadlines); 0 when a pull is due.
  [[nodiscard]] virtual std::chrono::milliseconds wait_time(std::chrono::steady_clock::time_point now) const noexcept = 0;
  /// The bytes of the last pull reached the socket.
  virtual void written() noexcept = 0;
  /// The bytes of the last pull could not be written (the peer left, the write timed out).
  virtual void write_failed() noexcept = 0;
  /// Whether the body is complete: nothing more will be pulled.
  [[nodiscard]] virtual bool finished() const noexcept = 0;
  /// Ends the stream for `reason` (shutdown: `session_terminated`); the next pull writes the
  /// close notification where the reason has one.
  virtual void close(close_reason reason) noexcept = 0;

 protected:
  http_stream() = default;
  http_stream(const http_stream&) = default;
  http_stream& operator=(const http_stream&) = default;
};

/// An answer: the head, then either `head.body` (complete) or the stream's bytes.
struct http_reply {
  /// Status and headers; the body of a complete response. The transport adds framing
  /// (`Content-Length` or chunked) and its own headers (`Date`, `Connection`).
  http_response head;
  /// Null for a complete response.
  std::unique_ptr<http_stream> stream;
};

/// Called exactly once per request with its reply.
using http_completion = std::function<void(http_reply)>;
/// Runs dispatch work off the I/O threads: takes a task, returns false (running nothing) when
/// it cannot take more (the request is then answered -32603 with `retry::dispatch_queue_full`).
using http_executor = std::function<bool(std::function<void()>)>;

namespace detail {
struct http_executor_slot;
}  // namespace detail

/// Ownership of an endpoint's executor, returned by `http_endpoint::bind_executor`. While it lives,
/// the endpoint dispatches on its executor and refuses to bind another; destroying it (or
/// `release`) unbinds the executor: dispatch runs inline again and another owner may bind. Move-only.
/// It may outlive the endpoint (releasing it then does nothing).
///
/// @par Thread safety
/// One binding belongs to one thread at a time; releasing it is safe while other threads call
/// `handle` (a task already handed to the executor still runs there).
class http_executor_binding {
 public:
  /// Binds nothing.
  http_executor_binding() noexcept = default;
  http_executor_binding(http_executor_binding&& other) noexcept = default;
  /// Releases this binding, then takes `other`'s.
  MCPCORE_DECL http_executor_binding& operator=(http_executor_binding&& other) noexcept;
  http_executor_binding(const http_executor_binding&) = delete;
  http_executor_binding& operator=(const http_executor_binding&) = delete;
  /// Runs `release()`.
  MCPCORE_DECL ~http_executor_binding();

  /// Unbinds the executor (dispatch runs inline until another is bound); idempotent, no-throw.
  MCPCORE_DECL void release() noexcept;
  /// Whether this binding still holds an endpoint's executor.
  [[nodiscard]] bool bound() const noexcept { return slot_ != nullptr; }

 private:
  friend class http_endpoint;
  explicit http_executor_binding(std::shared_ptr<detail::http_executor_slot> slot) noexcept
      : slot_(std::move(slot)) {}
  std::shared_ptr<detail::http_executor_slot> slot_;
};

/// MCP Streamable HTTP (MCP 2025-11-25 basic/transports;
/// docs/http.md#processing-order-on-the-mcp-path, docs/sessions.md#the-session-registry,
/// #get-attach-replay-resume, #pinned-finals, #streamed-post, #shutdown) over a `server`, sans-I/O.
///
/// Routes: POST / GET / DELETE on `path` and each alias (others: 405 with `Allow`); the approval
/// routes when `set_approvals` was called; the approvals page when `set_approvals_page` was
/// called; the operational routes. Anything else: 404.
///
/// @par Processing order (docs/http.md#processing-order-on-the-mcp-path, #delete-sessions-on,
/// #get-sessions-on) kill switch (-32005, no `data`) → Host (400 when repeated, 403) → Origin
/// (403 -32008, a repeated one too) →
/// `MCP-Protocol-Version` (400 -32009) → authentication (401 + `WWW-Authenticate: Bearer`) → body
/// limits and content type (413, 415) → parse (-32700 / -32600) → session (404 -32007; 400 -32600
/// without one where one is required) → notification or client response (202, empty) → dispatch.
///
/// @par Answers
/// A request answers `application/json`, or `text/event-stream` when the client accepts it and
/// the call produces a message before its result (progress for a progress token, a log message,
/// a request to the client): then a priming event (`id` + empty data + `retry:`), the messages,
/// the result last, and the end of the body. Calls carrying a progress token are admitted before
/// dispatch (docs/sessions.md#streamed-post-admission); a call that upgrades later and is refused
/// sends its messages to the session's GET stream instead. `notifications/cancelled` ends the
/// cancelled request's stream promptly, without a result. GET opens the session's stream (resume
/// with `Last-Event-ID`; a gap terminates the session, 404 -32007). DELETE ends the session (200)
/// or 404.
///
/// @par Executor
/// An endpoint dispatches on at most one executor, owned by whoever bound it (`bind_executor`):
/// `asio_http_server` binds its handler pool for its own lifetime, so a second server on the same
/// endpoint fails loudly (std::logic_error) instead of taking the executor over.
///
/// @par Thread safety
/// `handle`, `tick`, `begin_shutdown` and `bind_executor` may be called concurrently from any
/// threads. The `set_*` members must be called before the first `handle`.
class http_endpoint {
 public:
  /// An endpoint over `srv` (which must outlive it), authenticating with `authn`, on the system
  /// clock.
  template <authenticator A>
  http_endpoint(server& srv, A authn, http_endpoint_options options = {})
      : http_endpoint(srv, new detail::authenticator_model<A>(std::move(authn)), std::move(options),
                      new detail::clock_model<system_clock_source>(system_clock_source{})) {}
  /// The same on `clock` (tests use `clock_ref<manual_clock>`); session expiry, the bridge's
  /// sweep and audit times read it, while pumps take `now` from the transport.
  template <authenticator A, clock_source C>
  http_endpoint(server& srv, A authn, http_endpoint_options options, C clock)
      : http_endpoint(srv, new detail::authenticator_model<A>(std::move(authn)), std::move(options),
                      new detail::clock_model<C>(std::move(clock))) {}
  MCPCORE_DECL ~http_endpoint();
  http_endpoint(const http_endpoint&) = delete;
  http_endpoint& operator=(const http_endpoint&) = delete;

  /// Binds `exec` as the executor dispatch work runs on, for as long as the returned binding
  /// lives (without one: inline, on the thread that calls `handle`). The binder owns it: a server
  /// keeps the binding for its own lifetime; a host that mounts the endpoint on its own server
  /// keeps it beside that server (`auto binding = endpoint.bind_executor(submit);`).
  /// @throws std::logic_error when an executor is already bound (a second server on this
  /// endpoint): release the first binding before binding another. std::invalid_argument when
  /// `exec` is empty. std::bad_alloc. Nothing is bound when it throws.
  [[nodiscard]] MCPCORE_DECL http_executor_binding bind_executor(http_executor exec);
  /// Session, stream and bridge metrics go to `registry`, which `/metrics` exposes.
  /// @pre `registry` outlives the endpoint.
  MCPCORE_DECL void set_metrics(metrics_registry& registry);
  /// Audit rows of the session layer (`mcp.session.*`, stream rejects) go to `sink`.
  template <audit_sink S>
  void set_audit(S& sink) {
    set_audit(new detail::audit_model<S>(sink));
  }
  /// Serves the approval routes through `approvals` (which must outlive the endpoint).
  MCPCORE_DECL void set_approvals(const approval_endpoint& approvals);
  /// Serves the approvals page through `page` (which must outlive the endpoint), after the
  /// endpoint's Host check (docs/approvals-page.md#mounting-the-page).
  MCPCORE_DECL void set_approvals_page(const approvals_page& page);
  /// `/readyz` answers 200 while `ready()` is true, else 503 (default: always ready).
  MCPCORE_DECL void set_readiness(std::function<bool()> ready);

  /// Handles one request; `done` is called exactly once with the reply: before `handle` returns
  /// for every answer that needs no dispatch, otherwise from the executor (possibly while the
  /// call still runs, when its response became a stream). Never throws except on allocation
  /// failure before `done` was called.
  MCPCORE_DECL void handle(const http_request_view& req, http_completion done);
  /// The same for a request the host authenticated itself (docs/http.md#handing-in-the-principal):
  /// `caller` (its `context` included) is the request's principal, and the authenticator's
  /// `authenticate` is not called. Every other check stays: the kill switch, Host, Origin, the
  /// protocol version, a session bound to another principal id (404), the approval routes (which
  /// see `caller`). Streams the request opens re-validate `caller` through the authenticator's
  /// `revalidate`. Use with `external_authenticator` unless requests may also arrive with
  /// credentials of their own.
  MCPCORE_DECL void handle(const http_request_view& req, principal caller, http_completion done);
  /// The checks that need only the head (docs/http.md#head-checks), for a transport to run as
  /// soon as a request's head is complete, before it answers `100 Continue` or reads the body:
  /// route and method (404 / 405), kill switch, Host (403; a repeated Host 400), Origin (403
  /// -32008, a repeated one too), the `MCP-Protocol-Version` of a GET or DELETE (400 -32009),
  /// authentication (401), and `head.declared_length` against `max_body_bytes` (413). Returns the
  /// answer to send (then close the connection without reading the body), or `std::nullopt` when
  /// the head passes; `head.body` is ignored. `handle` runs the same checks again, so a host that
  /// never calls this stays safe. Never throws except on allocation failure.
  [[nodiscard]] MCPCORE_DECL std::optional<http_response> check_head(const http_request_view& head) const;
  /// `check_head` for a request whose principal the host established (`caller`; nullptr:
  /// authenticate from the headers, as above).
  [[nodiscard]] MCPCORE_DECL std::optional<http_response> check_head(const http_request_view& head,
                                                                   const principal* caller) const;
  /// `check_head` that keeps the principal it authenticated, for a transport that then calls
  /// `handle(req, std::move(*established), done)` so that each request is authenticated once
  /// (the Asio server does). On a pass `established` holds the principal (std::nullopt on the
  /// operational routes, which need none: call `handle(req, done)` for those); on a refusal it is
  /// std::nullopt.
  [[nodiscard]] MCPCORE_DECL std::optional<http_response> check_head(const http_request_view& head,
                                                                   std::optional<principal>& established) const;
  /// Whether `target`'s path is served here (MCP, approval, approvals page or operational route).
  [[nodiscard]] MCPCORE_DECL bool matches(std::string_view target) const noexcept;

  /// The maintenance tick (call every `session.stream.tick`-ish interval, default 3 s): idle
  /// session collection, the bridge's sweep, and the expiry of calls waiting for a client
  /// (`server::expire_waiting`); no-throw, failures are counted.
  MCPCORE_DECL void tick() noexcept;
  /// Graceful shutdown (docs/sessions.md#shutdown): `initialize` answers -32015 / 503 from now on,
  /// every live stream closes `session_terminated`, the bridge stops admitting, and every request
  /// a call made to its client fails at once (`closed`: no answer can arrive any more), so that no
  /// call stays parked on a client's answer. Calls still running keep going until
  /// `cancel_in_flight`. Idempotent.
  MCPCORE_DECL void begin_shutdown() noexcept;
  /// The end of the shutdown drain (docs/sessions.md#shutdown): the stop token of every call of
  /// the sessions `begin_shutdown` ended fires. `asio_http_server` calls it when its
  /// `shutdown_drain` runs out. Idempotent; a no-op before `begin_shutdown`.
  MCPCORE_DECL void cancel_in_flight() noexcept;

  /// The endpoint's sessions (for diagnostics and tests). Sessions the endpoint mints carry its
  /// per-session state as `session::attachment()`; a session minted here directly must carry no
  /// attachment (it is then served without a `peer`). Replaced by `set_metrics`.
  [[nodiscard]] MCPCORE_DECL session_registry& sessions() noexcept;
  /// The endpoint's progress bridge. Replaced by `set_metrics`.
  [[nodiscard]] MCPCORE_DECL progress_bridge& bridge() noexcept;
  /// The stream budget every held-open response of the endpoint counts against.
  [[nodiscard]] MCPCORE_DECL stream_budget& budget() noexcept;
  /// The options given at construction.
  [[nodiscard]] MCPCORE_DECL const http_endpoint_options& options() const noexcept;

  struct impl;

 private:
  MCPCORE_DECL http_endpoint(server& srv, detail::authenticator_base* authn, http_endpoint_options options,
                             detail::clock_base* clock);
  MCPCORE_DECL void set_audit(detail::audit_base* audit);
  impl* impl_;
};

MCPCORE_END_NAMESPACE

#if defined(MCPCORE_HEADER_ONLY)
#  include <mcpcore/transport/impl/http_endpoint.ipp>
#endif

#endif  // MCPCORE_HTTP_ENDPOINT_HPP
