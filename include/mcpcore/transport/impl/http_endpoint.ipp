// SPDX-License-Identifier: Apache-2.0
// MCP Streamable HTTP, sans-I/O: routing, the processing order, sessions and their peers, the POST
// dispatch with its SSE upgrade, the GET stream, DELETE and the operational routes (reference §1,
// §6-§9, §12; spec §6). docs/http.md describes the behaviour; docs/sessions.md the layer below.
#ifndef MCPCORE_IMPL_HTTP_ENDPOINT_IPP
#define MCPCORE_IMPL_HTTP_ENDPOINT_IPP

#include <mcpcore/transport/http_endpoint.hpp>

#include <mcpcore/detail/ascii.hpp>

#include <mcpcore/dispatch/server.hpp>
#include <mcpcore/governance/approval_endpoint.hpp>
#include <mcpcore/governance/metrics.hpp>
#include <mcpcore/governance/policy.hpp>
#include <mcpcore/wire/accept.hpp>
#include <mcpcore/wire/correlation_id.hpp>
#include <mcpcore/wire/error.hpp>
#include <mcpcore/wire/json.hpp>
#include <mcpcore/wire/json_writer.hpp>
#include <mcpcore/wire/jsonrpc.hpp>
#include <mcpcore/wire/retry.hpp>
#include <mcpcore/wire/sse.hpp>

#include <atomic>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

MCPCORE_BEGIN_NAMESPACE

namespace detail {

// ---- wire texts ----------------------------------------------------------------------------------

inline constexpr std::string_view http_allow_mcp = "GET, POST, DELETE";
inline constexpr std::string_view http_allow_stateless = "POST";
inline constexpr std::string_view http_json = "application/json";
inline constexpr std::string_view http_event_stream = "text/event-stream";
inline constexpr std::string_view http_session_header = "Mcp-Session-Id";

inline constexpr std::string_view http_disabled_message = "MCP is disabled on this server";
inline constexpr std::string_view http_host_message = "Host not allowed";
inline constexpr std::string_view http_host_remediation =
    "send a Host header naming this server (localhost, 127.0.0.1 or [::1]), or add the host to "
    "http_endpoint_options::allowed_hosts";
inline constexpr std::string_view http_origin_message = "Origin not allowed";
inline constexpr std::string_view http_origin_remediation =
    "send the request without an Origin header, or add the origin to http_endpoint_options::allowed_origins";
inline constexpr std::string_view http_version_message = "Unsupported MCP-Protocol-Version";
inline constexpr std::string_view http_version_remediation =
    "send MCP-Protocol-Version: 2025-11-25 (or 2025-06-18, 2025-03-26), or omit the header";
/// The JSON-RPC code of the 401 body (JSON-RPC's implementation-defined server range; the MCP
/// SDKs use -32001 for their own session errors, mcpcore has no `errc` for it on purpose: it
/// never rides on a 200).
inline constexpr std::int32_t http_unauthenticated_code = -32001;
inline constexpr std::string_view http_unauthenticated_message = "Authentication required";
inline constexpr std::string_view http_unauthenticated_remediation =
    "send a valid credential (Authorization: Bearer <token>)";
inline constexpr std::string_view http_too_large_message = "Request body too large";
inline constexpr std::string_view http_too_large_remediation =
    "send a smaller request; the limit is http_endpoint_options::max_body_bytes";
inline constexpr std::string_view http_content_type_message = "Content-Type must be application/json";
inline constexpr std::string_view http_content_type_remediation = "send the JSON-RPC message as application/json";
inline constexpr std::string_view http_accept_message = "Accept must list application/json or text/event-stream";
inline constexpr std::string_view http_accept_remediation = "send Accept: application/json, text/event-stream";
inline constexpr std::string_view http_session_cap_message = "Session limit reached";
inline constexpr std::string_view http_session_cap_remediation =
    "DELETE a session you no longer use, or wait for idle sessions to expire";
inline constexpr std::string_view http_shutdown_message = "Server is shutting down";
inline constexpr std::string_view http_shutdown_remediation =
    "reconnect to another instance or retry after the server restarts";
inline constexpr std::string_view http_mint_failed_message = "The session could not be created";
inline constexpr std::string_view http_mint_failed_remediation = "retry initialize; report the correlation_id if it persists";
inline constexpr std::string_view http_busy_message = "Server busy";
inline constexpr std::string_view http_busy_remediation = "retry after retry_after_ms; every dispatch slot is taken";
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

/// Every field named `name`, joined with ", " (RFC 9110 §5.3), or nullopt when absent.
inline std::optional<std::string> http_joined(const http_request_view& req, std::string_view name) {
  std::optional<std::string> out;
  for (const http_header& h : req.headers) {
    if (!ascii_iequals(h.name, name)) continue;
    if (!out) {
      out.emplace(h.value);
    } else {
      out->append(", ");
      out->append(h.value);
    }
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

/// Whether a local address as the host formats it (`127.0.0.1:8765`, `[::1]:8765`) is loopback.
inline bool http_local_is_loopback(std::string_view local) noexcept {
  std::string_view host = local;
  if (!host.empty() && host.front() == '[') {
    const auto close = host.find(']');
    if (close == std::string_view::npos) return false;
    host = host.substr(1, close - 1);
  } else if (host.find(':') == host.rfind(':')) {
    // IPv4 or a name, with or without one ":port"
    const auto colon = host.rfind(':');
    if (colon != std::string_view::npos) host = host.substr(0, colon);
  }
  if (host == "::1" || ascii_iequals(host, "localhost")) return true;
  if (host.substr(0, 7) == "::ffff:") host.remove_prefix(7);
  return host.substr(0, 4) == "127.";
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

/// The priming event of a POST SSE stream (MCP 2025-11-25, SEP-1699): `id` (the stream's marker
/// in the session's ring: a resume cursor naming this stream), `retry`, one empty `data` line.
/// Without a marker (memory exhausted) the event has no `id`: the stream is not resumable, and
/// a client never resumes another stream with it.
inline void http_write_priming(std::string& out, std::uint64_t id, std::chrono::milliseconds retry) {
  sse::event e;
  e.id = id;
  e.retry = retry;
  sse::write_event(out, e);
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

/// What the endpoint keeps per session (`session::attachment()`): the dispatch core's `peer`
/// and the request ids in flight on the session's POSTs (a reused one answers 409).
struct http_session_state {
  peer client;
  std::mutex mutex;  // a leaf
  std::unordered_set<request_id> in_flight;  // guarded by `mutex`
};

// ---- wakers ------------------------------------------------------------------------------------

/// One transport waker, reachable from a `stream_sink` through a stable address. A sink calls its
/// waker after releasing its own lock, so a waker may still be running when the stream that set it
/// goes away: slots are therefore never freed while the endpoint lives, only reused (a late wake of
/// a reused slot is a spurious wake, which every transport tolerates).
struct http_wake_slot {
  std::mutex mutex;  // a leaf
  std::shared_ptr<const std::function<void()>> fn;
};

class http_wake_slots {
 public:
  http_wake_slots() = default;
  http_wake_slots(const http_wake_slots&) = delete;
  http_wake_slots& operator=(const http_wake_slots&) = delete;

  /// A slot calling `fn`. @throws std::bad_alloc (nothing changed)
  http_wake_slot* acquire(std::function<void()> fn) {
    auto shared = std::make_shared<const std::function<void()>>(std::move(fn));
    http_wake_slot* s = nullptr;
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      if (!free_.empty()) {
        s = free_.back();
        free_.pop_back();
      } else {
        slots_.emplace_back();
        try {
          free_.reserve(slots_.size());  // release() never allocates
        } catch (...) {
          slots_.pop_back();
          throw;
        }
        s = &slots_.back();
      }
    }
    const std::lock_guard<std::mutex> lock(s->mutex);
    s->fn = std::move(shared);
    return s;
  }
  /// Clears the slot's waker and makes it reusable.
  void release(http_wake_slot* s) noexcept {
    if (s == nullptr) return;
    std::shared_ptr<const std::function<void()>> old;
    {
      const std::lock_guard<std::mutex> lock(s->mutex);
      old = std::move(s->fn);
    }
    const std::lock_guard<std::mutex> lock(mutex_);
    free_.push_back(s);  // capacity reserved at acquire
  }

 private:
  std::mutex mutex_;  // a leaf
  std::deque<http_wake_slot> slots_;
  std::vector<http_wake_slot*> free_;
};

/// The `stream_sink` waker: calls the slot's function, under no mcpcore lock.
inline void http_wake(void* context) noexcept {
  auto* s = static_cast<http_wake_slot*>(context);
  std::shared_ptr<const std::function<void()>> fn;
  {
    const std::lock_guard<std::mutex> lock(s->mutex);
    fn = s->fn;
  }
  if (fn && *fn) {
    try {
      (*fn)();
    } catch (...) {  // NOLINT(bugprone-empty-catch): a throwing waker loses one wake; wait_time bounds it
    }
  }
}

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

struct http_post_exchange;

}  // namespace detail

// ---- the endpoint's state ----------------------------------------------------------------------

struct http_endpoint::impl {
  impl(server& s, std::unique_ptr<detail::authenticator_base> a, http_endpoint_options o,
       std::unique_ptr<detail::clock_base> c)
      : srv(s), authn(std::move(a)), options(std::move(o)), clock(std::move(c)), budget(options.budget) {
    rebuild();
  }

  server& srv;
  const std::unique_ptr<detail::authenticator_base> authn;
  const http_endpoint_options options;
  const std::unique_ptr<detail::clock_base> clock;
  metrics_registry* metrics = nullptr;
  session_metrics m;
  std::unique_ptr<detail::audit_base> audit;
  detail::http_audit_forward audit_fwd;
  const approval_endpoint* approvals = nullptr;
  std::function<bool()> ready;
  http_executor exec;
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
  std::atomic<bool> shut{false};

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
  /// counted in `audit_failures`: audit never fails the request, reference §3.5).
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
  void count_reject(stream_reject r) const noexcept {
    const auto i = static_cast<std::size_t>(r);
    if (i < m.stream_rejects.size()) m.stream_rejects[i].inc();
  }

  /// Runs `task` on the executor (inline without one); false when it was not taken.
  bool submit(std::function<void()> task) {
    if (!exec) {
      task();
      return true;
    }
    try {
      return exec(std::move(task));
    } catch (...) {
      return false;
    }
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

  // Routes (definitions below).
  void handle_mcp(const http_request_view& req, http_completion& done);
  void handle_post(const http_request_view& req, const principal& who, const correlation_id& cid,
                   http_completion& done);
  void handle_initialize(const std::shared_ptr<detail::http_post_exchange>& ex, http_completion& done);
  void handle_get(const http_request_view& req, const principal& who, const correlation_id& cid,
                  http_completion& done);
  void handle_delete(const http_request_view& req, const principal& who, const correlation_id& cid,
                     http_completion& done);
  bool handle_ops(const http_request_view& req, std::string_view path, http_completion& done);
  [[nodiscard]] bool host_allowed(const http_request_view& req) const noexcept;
  [[nodiscard]] static bool loopback_same_origin(const http_request_view& req, std::string_view origin) noexcept;
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

/// A JSON-RPC error reply with the `error.data` envelope.
inline http_reply http_error(int status, const std::optional<request_id_view>& id, errc code, std::string_view message,
                             std::string_view remediation, std::string_view cid,
                             std::optional<std::chrono::milliseconds> retry = {},
                             std::optional<std::string_view> reason = {}) {
  error_data d;
  d.correlation_id = cid;
  d.retry_after_ms = retry;
  if (!remediation.empty()) d.remediation = remediation;
  d.reason = reason;
  std::string body;
  write_error_response(body, id, code, message, d);
  http_reply r = http_json_body(status, std::move(body));
  http_add_retry_after(r, retry);
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

/// The headers of every SSE answer (reference §7.2, §9.3).
inline void http_sse_head(http_reply& r, std::string_view cid) {
  r.head.status = 200;
  http_add(r, "Content-Type", http_event_stream);
  http_add(r, "Cache-Control", "no-cache");
  http_add(r, "X-Accel-Buffering", "no");
  http_add(r, "X-Content-Type-Options", "nosniff");
  http_add(r, "X-Correlation-Id", cid);
}

inline void http_deliver(http_completion& done, http_reply r) {
  http_completion d = std::move(done);
  done = nullptr;
  if (d) d(std::move(r));
}

// ---- POST ------------------------------------------------------------------------------------

class http_post_sink final : public message_sink {
 public:
  explicit http_post_sink(http_post_exchange& ex) noexcept : ex_(ex) {}
  bool send(std::string_view message) noexcept override;
  bool close_stream(std::chrono::milliseconds retry) noexcept override;

 private:
  http_post_exchange& ex_;
};

/// Where a call's in-call messages go.
enum class http_route : std::uint8_t {
  none,    ///< nowhere yet: the first one upgrades the answer to SSE
  record,  ///< the call's progress record (SSE on the POST, or GET-only)
  get,     ///< the session's GET stream (the upgrade was refused)
};

/// One POST request carrying a JSON-RPC request: its parsed message, its session, its progress
/// record and its one reply. Shared by the request path, the dispatch task and the SSE stream.
struct http_post_exchange {
  // Not noexcept: the document allocates (a bad_alloc here is handle's "allocation failure
  // before done was called", never std::terminate; reference §14.2).
  explicit http_post_exchange(http_endpoint::impl& e) : ep(e) {}
  // A request path that left by an exception (allocation failure before the dispatch) gives its
  // request id back too; otherwise the session would refuse the id (409) for the rest of its life.
  ~http_post_exchange() { release_id(); }
  http_post_exchange(const http_post_exchange&) = delete;
  http_post_exchange& operator=(const http_post_exchange&) = delete;

  http_endpoint::impl& ep;
  json::document doc;
  message msg;
  principal who;
  correlation_id cid;
  std::shared_ptr<session> sess;                 // null: stateless
  http_session_state* state = nullptr;           // the session's attachment (alive with `sess`)
  request_id id{0};                              // the request's id (set before any use)
  std::optional<request_id> token;               // a valid `_meta.progressToken`
  bool accepts_sse = false;                      // SSE in Accept, and streamed POST enabled
  bool sink_enabled = false;                     // in-call messages have a channel
  bool pre_admitted = false;                     // `call` was reserved before dispatch
  bool in_flight_claimed = false;                // `id` is in `state->in_flight`
  http_post_sink sink{*this};

  std::mutex mutex;  // above the bridge in the lock order; never held across a callback
  // Guarded by `mutex`:
  http_completion done;                          // the one reply; moved out when it goes
  bool replied = false;
  bool dispatch_ended = false;
  http_route route = http_route::none;
  std::optional<progress_call> call;             // set with route == record
  bool streaming = false;                        // the answer is an SSE stream on `call`
  bool quiet = false;                            // close_stream was called
  std::chrono::milliseconds quiet_retry{0};
  std::optional<stream_reject> upgrade_refusal;  // written to the audit after unlocking

  /// The upgrade on the first in-call message (reference §9.2 admission, §9.3 arm). Under `mutex`,
  /// with route none. Returns the SSE reply to deliver after unlocking, or nullopt (routed to the
  /// GET stream, or answered plain with the record GET-only).
  std::optional<http_reply> upgrade_locked(const std::shared_ptr<http_post_exchange>& self);
  /// The end of the dispatch: the record's terminal, then the plain reply if none went yet.
  void finish(bool returned, bool threw, std::string out) noexcept;
  /// The dispatch task.
  void run(const std::shared_ptr<http_post_exchange>& self) noexcept;
  /// Gives the request id back to the session (another POST may use it again).
  void release_id() noexcept {
    if (!in_flight_claimed || state == nullptr) return;
    in_flight_claimed = false;
    const std::lock_guard<std::mutex> lock(state->mutex);
    state->in_flight.erase(id);
  }

  /// Set by the request path before dispatch (guarded by nothing: published by the executor).
  std::weak_ptr<http_post_exchange> self_weak;
};

/// A POST answered as SSE: the priming event, then a `post_pump` over the call's record.
class http_post_stream final : public http_stream {
 public:
  http_post_stream(std::shared_ptr<http_post_exchange> ex, const progress_call& call, stream_lease lease,
                   std::uint64_t priming_id, stream_channel channel)
      : ep_(ex->ep),
        ex_(std::move(ex)),
        wake_(call.wake_sink()),
        pump_(call, std::move(lease), ep_.clock->steady_now(), std::string{ex_->cid.view()}, ep_.options.post_stream,
              revalidation_grace::draw_jitter(ep_.options.post_stream.revalidation.jitter_max), ep_.m),
        priming_id_(priming_id) {
    if (wake_) ep_.register_post(key_, wake_, ex_->sess.get(), channel);
  }
  ~http_post_stream() override {
    if (slot_ != nullptr) {
      wake_->set_waker(nullptr, nullptr);
      ep_.slots.release(slot_);
    }
    if (key_ != 0) ep_.unregister_post(key_);
    pump_.release();  // without a written final the record parks for a GET resume
  }
  http_post_stream(const http_post_stream&) = delete;
  http_post_stream& operator=(const http_post_stream&) = delete;

  void on_ready(std::function<void()> waker) override {
    if (!wake_) return;
    http_wake_slot* s = ep_.slots.acquire(std::move(waker));
    if (slot_ != nullptr) {
      wake_->set_waker(nullptr, nullptr);
      ep_.slots.release(slot_);
    }
    slot_ = s;
    wake_->set_waker(&http_wake, slot_);
  }

  void pull(std::chrono::steady_clock::time_point now, std::string& out) noexcept override {
    if (pump_.finished()) return;
    bool quiet = false;
    std::chrono::milliseconds quiet_retry{0};
    {
      const std::lock_guard<std::mutex> lock(ex_->mutex);
      quiet = ex_->quiet;
      quiet_retry = ex_->quiet_retry;
    }
    const std::size_t mark = out.size();
    try {
      if (!primed_) {
        http_write_priming(out, priming_id_, quiet && quiet_retry.count() > 0 ? quiet_retry : ep_.options.sse_retry);
        primed_ = true;
        retry_sent_ = quiet;
      } else if (quiet && !retry_sent_ && quiet_retry.count() > 0) {
        // A block without data dispatches no event; its `retry:` still sets the reconnection time.
        out.append("retry: ").append(std::to_string(quiet_retry.count())).append("\n\n");
        retry_sent_ = true;
      }
    } catch (...) {
      out.resize(mark);  // nothing half-written; the pump's pass still runs
    }
    if (pump_.tick_due(now)) pump_.tick(now, ep_.revalidate(ex_->who), ep_.session_alive(*ex_->sess));
    pump_.pass(now, out);
  }

  [[nodiscard]] std::chrono::milliseconds wait_time(std::chrono::steady_clock::time_point now) const noexcept override {
    if (pump_.finished() || !primed_) return std::chrono::milliseconds{0};
    if (wake_ && wake_->ready()) return std::chrono::milliseconds{0};
    return pump_.wait_time(now);
  }
  void written() noexcept override { pump_.written(); }
  void write_failed() noexcept override { pump_.write_failed(); }
  [[nodiscard]] bool finished() const noexcept override { return pump_.finished(); }
  void close(close_reason reason) noexcept override {
    if (wake_) (void)wake_->close(reason);
  }

 private:
  http_endpoint::impl& ep_;
  std::shared_ptr<http_post_exchange> ex_;
  std::shared_ptr<stream_sink> wake_;
  post_pump pump_;
  std::uint64_t priming_id_;
  std::uint64_t key_ = 0;
  http_wake_slot* slot_ = nullptr;
  bool primed_ = false;
  bool retry_sent_ = false;
};

inline http_reply http_post_sse_reply(const std::shared_ptr<http_post_exchange>& ex, const progress_call& call,
                                      stream_lease lease, std::uint64_t priming_id, stream_channel channel) {
  http_reply r;
  http_sse_head(r, ex->cid.view());
  r.stream = std::make_unique<http_post_stream>(ex, call, std::move(lease), priming_id, channel);
  return r;
}

inline std::optional<http_reply> http_post_exchange::upgrade_locked(const std::shared_ptr<http_post_exchange>& self) {
  http_endpoint::impl& e = ep;
  const request_id key = token.value_or(id);
  post_admission a = admit_post(post_mode::streamed, e.budget, *e.bridge, sess, id, key, e.m);
  if (!a.call || a.mode != post_mode::streamed) {
    // reference §9.2 refusal (counted by admit_post) or a degrade: the messages go to the GET stream.
    if (a.refusal) upgrade_refusal = a.refusal->reason;
    route = http_route::get;
    return std::nullopt;
  }
  // The POST's own stream in the session's ring, opened before the arm so that its priming
  // marker precedes every frame of the call (arm ends it again if the record does not stream).
  const opened_channel ch = sess->stream()->open_channel();
  const std::uint64_t priming = ch.priming_id;
  const arm_outcome o = a.call->arm(bridge_delivery::streamed, ch.channel);
  call = *a.call;
  route = http_route::record;
  if (o != arm_outcome::streaming) {
    a.lease.release();  // GET-only: the POST answers plain JSON at the end
    return std::nullopt;
  }
  std::optional<http_reply> r;
  try {
    r.emplace(http_post_sse_reply(self, *a.call, std::move(a.lease), priming, ch.channel));
  } catch (...) {
    // reference §9.6: the stream could not be installed. Nothing was sent yet, so the call is
    // still answered plain; the record ends here (no frame of it was written) and later messages
    // go to the GET stream.
    e.m.bridge_degrades[static_cast<std::size_t>(bridge_degrade::stream_install_failed)].inc();
    (void)a.call->complete_without_response();
    call.reset();
    route = http_route::get;
    return std::nullopt;
  }
  streaming = true;
  replied = true;
  return r;
}

inline bool http_post_sink::send(std::string_view message) noexcept {
  try {
    std::optional<progress_call> target;
    bool to_get = false;
    std::optional<http_reply> reply;
    http_completion d;
    std::optional<stream_reject> refused;
    {
      const std::lock_guard<std::mutex> lock(ex_.mutex);
      if (ex_.route == http_route::none && !ex_.replied && !ex_.dispatch_ended && ex_.sess && ex_.accepts_sse) {
        if (auto self = ex_.self_weak.lock()) {
          reply = ex_.upgrade_locked(self);
          if (reply) d = std::move(ex_.done);
          refused = std::exchange(ex_.upgrade_refusal, std::nullopt);
        }
      }
      if (ex_.route == http_route::record) {
        target = ex_.call;
      } else if (ex_.route == http_route::get) {
        to_get = true;
      }
    }
    if (refused) ex_.ep.reject_row(to_string(*refused), ex_.sess->id(), ex_.who.id, ex_.cid.view(), true);
    if (reply) http_deliver(d, std::move(*reply));
    if (target) {
      // `message` returns false also when the frame is only latched (arming, or a projection in
      // flight), which is still a delivery.
      (void)target->message(message);
      return true;
    }
    if (to_get && ex_.sess) return ex_.sess->stream()->publish(message) != 0;
    return false;
  } catch (...) {
    return false;
  }
}

inline bool http_post_sink::close_stream(std::chrono::milliseconds retry) noexcept {
  try {
    std::optional<http_reply> reply;
    http_completion d;
    std::shared_ptr<stream_sink> wake;
    std::optional<stream_reject> refused;
    {
      const std::lock_guard<std::mutex> lock(ex_.mutex);
      if (ex_.route == http_route::none && !ex_.replied && !ex_.dispatch_ended && ex_.sess && ex_.accepts_sse) {
        if (auto self = ex_.self_weak.lock()) {
          reply = ex_.upgrade_locked(self);
          if (reply) d = std::move(ex_.done);
          refused = std::exchange(ex_.upgrade_refusal, std::nullopt);
        }
      }
      if (ex_.streaming && ex_.call && !ex_.quiet) {
        ex_.quiet = true;
        ex_.quiet_retry = retry.count() > 0 ? retry : std::chrono::milliseconds{0};
        wake = ex_.call->wake_sink();
        // The route stays the record: once the POST is released the record parks, and its later
        // messages and its result are committed on this POST's channel, replayed to (and live on)
        // a GET resuming with the priming event's id.
      }
    }
    if (refused) ex_.ep.reject_row(to_string(*refused), ex_.sess->id(), ex_.who.id, ex_.cid.view(), true);
    if (reply) http_deliver(d, std::move(*reply));
    // `superseded` ends the POST without a close frame (the client resumes on GET); the record
    // parks when the stream is released, and its final goes to the resumed stream.
    return wake && wake->close(close_reason::superseded);
  } catch (...) {
    return false;
  }
}

inline void http_post_exchange::finish(bool returned, bool threw, std::string out) noexcept {
  std::optional<progress_call> c;
  http_completion d;
  bool reply_plain = false;
  {
    const std::lock_guard<std::mutex> lock(mutex);
    dispatch_ended = true;
    c = call;
    if (!replied) {
      replied = true;
      reply_plain = true;
      d = std::move(done);
      done = nullptr;
    }
  }
  std::string execution_id;
  try {
    if (c) execution_id = c->execution_id();
  } catch (...) {  // NOLINT(bugprone-empty-catch): the failure reply then says null
  }
  // The record's terminal first: a streamed answer ends with its final (reference §9.4).
  if (c) {
    try {
      if (threw) {
        std::string t;
        write_post_dispatch_failure(t, id, post_dispatch_failure::dispatch_threw, cid.view(), execution_id);
        (void)c->complete(std::move(t));
      } else if (!returned) {
        (void)c->complete_without_response();  // cancelled in-call: MCP sends no response
      } else if (c->detached()) {
        c->defer(out);  // the base of the final `finish` publishes
      } else {
        (void)c->complete(out);
      }
    } catch (...) {
      (void)c->complete_without_response();
    }
  }
  release_id();
  if (!reply_plain || !d) return;
  http_reply r;
  try {
    if (threw) {
      std::string body;
      write_post_dispatch_failure(body, id, post_dispatch_failure::dispatch_threw, cid.view(), execution_id);
      r = http_json_body(500, std::move(body));
    } else if (!returned) {
      r = http_empty(202);  // cancelled: MCP sends no response, HTTP needs an answer
    } else {
      r = http_json_body(200, std::move(out));
    }
  } catch (...) {
    // No memory for the answer: a bare 500 (no header, no body: nothing to allocate), so that the
    // request is still answered exactly once (reference §14.2).
    r = http_reply{};
    r.head.status = 500;
  }
  try {
    http_deliver(d, std::move(r));
  } catch (...) {  // NOLINT(bugprone-empty-catch): the transport's completion threw; nothing more to do
  }
}

inline void http_post_exchange::run(const std::shared_ptr<http_post_exchange>& self) noexcept {
  (void)self;  // keeps the exchange alive for the whole dispatch
  std::string out;
  bool returned = false;
  bool threw = false;
  try {
    progress_call* pc = pre_admitted && call ? &*call : nullptr;  // not modified once dispatch starts
    const dispatch_context ctx{who, state != nullptr ? &state->client : nullptr, sink_enabled ? &sink : nullptr, {},
                               pc};
    returned = ep.srv.handle(msg, ctx, out);
  } catch (...) {
    threw = true;
  }
  finish(returned, threw, std::move(out));
}

// ---- GET ---------------------------------------------------------------------------------------

/// A session's GET stream: a `get_pump` over the attached sink.
class http_get_stream final : public http_stream {
 public:
  http_get_stream(http_endpoint::impl& e, std::shared_ptr<session> s, principal who, const attach_result& a,
                  std::string cid)
      : ep_(e),
        sess_(std::move(s)),
        who_(std::move(who)),
        sink_(a.sink),
        pump_(sess_->stream(), a.sink, a.generation, e.clock->steady_now(), std::move(cid), e.options.get_stream,
              revalidation_grace::draw_jitter(e.options.get_stream.revalidation.jitter_max), e.m) {}
  ~http_get_stream() override {
    if (slot_ != nullptr) {
      sink_->set_waker(nullptr, nullptr);
      ep_.slots.release(slot_);
    }
    pump_.release();
  }
  http_get_stream(const http_get_stream&) = delete;
  http_get_stream& operator=(const http_get_stream&) = delete;

  void on_ready(std::function<void()> waker) override {
    http_wake_slot* s = ep_.slots.acquire(std::move(waker));
    if (slot_ != nullptr) {
      sink_->set_waker(nullptr, nullptr);
      ep_.slots.release(slot_);
    }
    slot_ = s;
    sink_->set_waker(&http_wake, slot_);
  }
  void pull(std::chrono::steady_clock::time_point now, std::string& out) noexcept override {
    if (pump_.finished()) return;
    if (pump_.tick_due(now)) pump_.tick(now, ep_.revalidate(who_), ep_.session_alive(*sess_));
    pump_.pass(out);
  }
  [[nodiscard]] std::chrono::milliseconds wait_time(std::chrono::steady_clock::time_point now) const noexcept override {
    if (pump_.finished() || sink_->ready()) return std::chrono::milliseconds{0};
    return pump_.wait_time(now);
  }
  void written() noexcept override { pump_.written(); }
  void write_failed() noexcept override { pump_.write_failed(); }
  [[nodiscard]] bool finished() const noexcept override { return pump_.finished(); }
  void close(close_reason reason) noexcept override { (void)sink_->close(reason); }

 private:
  http_endpoint::impl& ep_;
  std::shared_ptr<session> sess_;
  principal who_;
  std::shared_ptr<stream_sink> sink_;
  get_pump pump_;
  http_wake_slot* slot_ = nullptr;
};

}  // namespace detail

// ---- routes ------------------------------------------------------------------------------------

inline bool http_endpoint::impl::host_allowed(const http_request_view& req) const noexcept {
  if (!options.validate_loopback_host || req.local.empty() || !detail::http_local_is_loopback(req.local)) return true;
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
  if (req.local.empty() || !detail::http_local_is_loopback(req.local)) return false;
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

inline void http_endpoint::impl::handle_mcp(const http_request_view& req, http_completion& done) {
  const correlation_id cid = mint_cid();
  // 1. The kill switch (reference §1.4 step 1): before anything else, deliberately bare.
  if (srv.switches().disabled()) {
    std::string body;
    write_error_response(body, std::nullopt, errc::mcp_disabled, detail::http_disabled_message, error_data{});
    detail::http_deliver(done, detail::http_json_body(200, std::move(body)));
    return;
  }
  // 2. Methods (reference §6.1, §6.7): GET and DELETE exist only with sessions.
  const bool is_post = req.method == "POST";
  const bool is_get = req.method == "GET";
  const bool is_delete = req.method == "DELETE";
  if (!is_post && (!options.sessions || (!is_get && !is_delete))) {
    http_reply r = detail::http_empty(405);
    detail::http_add(r, "Allow", options.sessions ? detail::http_allow_mcp : detail::http_allow_stateless);
    detail::http_deliver(done, std::move(r));
    return;
  }
  // 3. Host (DNS rebinding, spec §6).
  if (!host_allowed(req)) {
    reject_row("host", {}, {}, cid.view());
    detail::http_deliver(done, detail::http_error(403, std::nullopt, errc::origin_rejected, detail::http_host_message,
                                                  detail::http_host_remediation, cid.view()));
    return;
  }
  if (options.sessions) {
    // 4. Origin (reference §6.4): before authentication.
    if (const auto origin = req.header("Origin")) {
      bool ok = options.allow_loopback_same_origin && loopback_same_origin(req, *origin);
      for (const auto& o : options.allowed_origins) ok = ok || *origin == o;
      if (!ok) {
        if (is_get) count_reject(stream_reject::origin);
        reject_row(to_string(stream_reject::origin), {}, {}, cid.view());
        detail::http_deliver(done, detail::http_error(403, std::nullopt, errc::origin_rejected,
                                                      detail::http_origin_message, detail::http_origin_remediation,
                                                      cid.view()));
        return;
      }
    }
    // 5. MCP-Protocol-Version (reference §6.3): absent is accepted; present must be supported.
    if (const auto v = req.header("MCP-Protocol-Version")) {
      if (!is_supported_protocol_version(detail::http_trim(*v))) {
        if (is_get) count_reject(stream_reject::protocol_version);
        reject_row(to_string(stream_reject::protocol_version), {}, {}, cid.view());
        detail::http_deliver(done, detail::http_error(400, std::nullopt, errc::unsupported_protocol_version,
                                                      detail::http_version_message,
                                                      detail::http_version_remediation, cid.view()));
        return;
      }
    }
  }
  // 6. Authentication: every request, a session is never a credential (reference §6.5).
  const std::optional<principal> who = authenticate(req);
  if (!who) {
    error_data d;
    d.correlation_id = cid.view();
    d.remediation = detail::http_unauthenticated_remediation;
    error_object eo;
    eo.code = detail::http_unauthenticated_code;
    eo.message = std::string{detail::http_unauthenticated_message};
    json::writer w{eo.data_json};
    write_error_data(w, d);
    std::string body;
    write_error_response(body, std::nullopt, eo);
    http_reply r = detail::http_json_body(401, std::move(body));
    std::string challenge = "Bearer";
    if (!options.resource_metadata_url.empty()) {
      challenge += " resource_metadata=";
      challenge += detail::http_quoted(options.resource_metadata_url);
    }
    detail::http_add(r, "WWW-Authenticate", challenge);
    detail::http_deliver(done, std::move(r));
    return;
  }
  if (is_post) {
    handle_post(req, *who, cid, done);
  } else if (is_get) {
    handle_get(req, *who, cid, done);
  } else {
    handle_delete(req, *who, cid, done);
  }
}

inline void http_endpoint::impl::handle_post(const http_request_view& req, const principal& who,
                                             const correlation_id& cid, http_completion& done) {
  using detail::http_deliver;
  using detail::http_error;
  // Body limits and media types, before parsing.
  if (req.body.size() > options.max_body_bytes) {
    http_deliver(done, http_error(413, std::nullopt, errc::invalid_request, detail::http_too_large_message,
                                  detail::http_too_large_remediation, cid.view()));
    return;
  }
  const auto content_type = req.header("Content-Type");
  if (!content_type || !detail::http_content_type_is_json(*content_type)) {
    http_deliver(done, http_error(415, std::nullopt, errc::invalid_request, detail::http_content_type_message,
                                  detail::http_content_type_remediation, cid.view()));
    return;
  }
  const std::optional<std::string> accept = detail::http_joined(req, "Accept");
  if (accept && !detail::http_trim(*accept).empty() && !accept_wants_json(*accept) && !accept_wants_sse(*accept) &&
      !accept_lists(*accept, "*/*") && !accept_lists(*accept, "application/*") && !accept_lists(*accept, "text/*")) {
    http_deliver(done, http_error(406, std::nullopt, errc::not_acceptable, detail::http_accept_message,
                                  detail::http_accept_remediation, cid.view()));
    return;
  }

  auto ex = std::make_shared<detail::http_post_exchange>(*this);
  ex->who = who;
  ex->cid = cid;
  ex->self_weak = ex;
  {
    auto parsed = parse_message(ex->doc, req.body);
    if (!parsed) {
      std::string body;
      write_error_response(body, parsed.error(), cid.view());
      http_deliver(done, detail::http_json_body(200, std::move(body)));
      return;
    }
    ex->msg = *parsed;
  }
  const message& msg = ex->msg;
  const bool is_init = msg.kind == message_kind::request && msg.method == "initialize";
  const std::optional<request_id_view> echo =
      msg.kind == message_kind::request ? msg.id : std::optional<request_id_view>{};

  // The session (reference §1.4 step 5): before the notification branch, so a notification on a
  // dead session is 404, never 202. `initialize` ignores any header (no fixation).
  if (options.sessions && !is_init) {
    if (const auto sid = req.header(detail::http_session_header)) {
      ex->sess = registry->validate_and_touch(*sid, who.id);
      if (!ex->sess) {
        reject_row(to_string(stream_reject::unknown_session), *sid, who.id, cid.view());
        http_deliver(done, detail::http_refusal(get_refusal(stream_reject::unknown_session), echo, cid.view()));
        return;
      }
      ex->state = static_cast<detail::http_session_state*>(ex->sess->attachment().get());
    } else if (options.require_session) {
      reject_row(to_string(stream_reject::missing_session_header), {}, who.id, cid.view());
      http_deliver(done, detail::http_refusal(get_refusal(stream_reject::missing_session_header), echo, cid.view()));
      return;
    }
  }
  peer* client = ex->state != nullptr ? &ex->state->client : nullptr;

  // Notifications and client responses: 202, empty (reference §1.4 step 6).
  if (msg.kind != message_kind::request || !msg.id) {  // (a request always has an id)
    if (msg.kind == message_kind::notification && msg.method == "notifications/cancelled" && ex->sess) {
      // reference §9.8: the bridge withdraws the streamed response, the dispatch core stops the
      // handler; both, in this order, whatever either finds.
      if (const auto rid = detail::http_id_of(msg.params["requestId"])) (void)bridge->cancel(ex->sess->id(), *rid);
    }
    const dispatch_context ctx{who, client, nullptr, {}, nullptr};
    std::string ignored;
    try {
      (void)srv.handle(msg, ctx, ignored);
    } catch (...) {  // NOLINT(bugprone-empty-catch): a notification is never answered
    }
    http_deliver(done, detail::http_empty(202));
    return;
  }

  ex->id = request_id{*msg.id};
  if (is_init && options.sessions) {
    handle_initialize(ex, done);
    return;
  }

  // A reused in-flight id on the session (reference §9.2: 409).
  if (ex->state != nullptr) {
    bool claimed = false;
    {
      const std::lock_guard<std::mutex> lock(ex->state->mutex);
      claimed = ex->state->in_flight.insert(ex->id).second;
    }
    if (!claimed) {
      count_reject(stream_reject::post_duplicate_request_id);
      reject_row(to_string(stream_reject::post_duplicate_request_id), ex->sess->id(), who.id, cid.view(), true);
      stream_refusal r;
      r.http_status = 409;
      r.code = errc::invalid_request;
      r.message = "That request id is already in flight on this session";
      r.reason = stream_reject::post_duplicate_request_id;
      r.remediation = "use a fresh request id (MCP: ids are never reused within a session)";
      http_deliver(done, detail::http_refusal(r, echo, cid.view()));
      return;
    }
    ex->in_flight_claimed = true;
  }
  // `streamed_post` off: no POST is ever answered as SSE (progress goes GET-only).
  ex->accepts_sse = accept && accept_wants_sse(*accept) && options.streamed_post;
  const json::value token_value = msg.params["_meta"]["progressToken"];
  const std::optional<request_id> token = progress_token_of(token_value);
  ex->token = token;

  // Calls carrying a progress token are admitted before dispatch (reference §9.1-§9.3).
  stream_lease lease;
  std::uint64_t priming = 0;
  stream_channel channel = get_channel;  // a streamed answer's channel in the session's ring
  std::optional<progress_call> streamed;  // armed streaming: the SSE reply goes from here
  if (options.sessions && ex->sess && msg.method == "tools/call") {
    post_mode_inputs in;
    in.bridge_available = true;
    in.has_session = true;
    in.progress_token = token_value;
    in.accepts_sse = ex->accepts_sse;
    in.streamed_post_enabled = options.streamed_post;  // already folded into accepts_sse
    const post_mode mode = choose_post_mode(in);
    if (mode != post_mode::plain && token) {
      post_admission a = admit_post(mode, budget, *bridge, ex->sess, ex->id, *token, m);
      if (a.refusal) {
        ex->release_id();
        reject_row(to_string(a.refusal->reason), ex->sess->id(), who.id, cid.view(), true);
        http_deliver(done, detail::http_refusal(*a.refusal, echo, cid.view()));
        return;
      }
      if (a.call) {
        progress_call call = *a.call;
        // A streamed answer is this POST's own stream in the session's ring (the priming marker
        // first); GET-only progress rides the GET stream.
        opened_channel ch;
        if (a.mode == post_mode::streamed) ch = ex->sess->stream()->open_channel();
        priming = ch.priming_id;
        channel = ch.channel;
        const arm_outcome o =
            call.arm(a.mode == post_mode::streamed ? bridge_delivery::streamed : bridge_delivery::get_only, ch.channel);
        if (o == arm_outcome::streaming) streamed = call;
        ex->call = std::move(call);
        ex->route = detail::http_route::record;
        ex->pre_admitted = true;
        if (streamed) {
          ex->streaming = true;
          ex->replied = true;  // the SSE reply goes from here, after the task was taken
          lease = std::move(a.lease);
        } else {
          a.lease.release();
        }
      }
    }
  }
  // In-call messages: to the record, or (with a session and SSE accepted) an upgrade on the first
  // one; otherwise there is no channel (progress and logs dropped, client requests `no_channel`).
  ex->sink_enabled = ex->route == detail::http_route::record || (ex->sess && ex->accepts_sse);
  // The reply goes to the exchange; with `replied` set (`streamed`) the task never takes it, and
  // the SSE reply below takes it back.
  ex->done = std::move(done);

  bool taken = false;
  try {
    taken = submit([ex] { ex->run(ex); });
  } catch (...) {
    // No memory for the task itself: nothing ran. The admission is undone (the record ends
    // without a response, releasing its charge; the lease and the id go back as this unwinds)
    // and the allocation failure propagates before `done` was called (reference §14.2).
    if (std::optional<progress_call>& c = ex->call) (void)c->complete_without_response();
    ex->release_id();
    throw;
  }
  if (!taken) {
    // A full executor: nothing ran. The record (if any) ends without a response.
    if (std::optional<progress_call>& c = ex->call) (void)c->complete_without_response();
    lease.release();
    ex->release_id();
    http_completion d;
    {
      const std::lock_guard<std::mutex> lock(ex->mutex);
      ex->dispatch_ended = true;
      ex->replied = true;
      d = std::move(ex->done);
    }
    http_deliver(d, http_error(503, echo, errc::internal_error, detail::http_busy_message,
                               detail::http_busy_remediation, cid.view(), retry::dispatch_queue_full));
    return;
  }
  if (streamed) {
    // reference §9.3: the SSE answer at once; frames the task produced meanwhile are in the record.
    http_completion reply_to;
    {
      const std::lock_guard<std::mutex> lock(ex->mutex);
      reply_to = std::move(ex->done);
    }
    std::optional<http_reply> sse;
    try {
      sse.emplace(detail::http_post_sse_reply(ex, *streamed, std::move(lease), priming, channel));
    } catch (...) {  // NOLINT(bugprone-empty-catch): answered below
    }
    if (sse) {
      http_deliver(reply_to, std::move(*sse));
      return;
    }
    // reference §9.6: dispatched, but the stream could not be installed. The record parks (its
    // final stays resumable on GET) and the answer says the work is running.
    m.bridge_degrades[static_cast<std::size_t>(bridge_degrade::stream_install_failed)].inc();
    streamed->on_post_closed();
    http_reply failed = detail::http_empty(500);
    try {
      std::string body;
      write_post_dispatch_failure(body, ex->id, post_dispatch_failure::stream_install_failed, cid.view(),
                                  streamed->execution_id());
      failed = detail::http_json_body(500, std::move(body));
    } catch (...) {  // NOLINT(bugprone-empty-catch): the bare 500 still goes
    }
    http_deliver(reply_to, std::move(failed));
  }
}

inline void http_endpoint::impl::handle_initialize(const std::shared_ptr<detail::http_post_exchange>& ex,
                                                   http_completion& done) {
  using detail::http_deliver;
  const std::string_view cid = ex->cid.view();
  const std::optional<request_id_view> echo = ex->msg.id;
  // reference §6.2: every initialize mints a fresh session bound to the caller.
  auto state = std::make_shared<detail::http_session_state>();
  auto minted = registry->mint(ex->who.id, cid, state);
  if (!minted) {
    switch (minted.error()) {
      case session_reject::shutdown:
        http_deliver(done, detail::http_error(503, echo, errc::shutting_down, detail::http_shutdown_message,
                                              detail::http_shutdown_remediation, cid));
        return;
      case session_reject::global_cap:
      case session_reject::per_principal_cap:
        http_deliver(done, detail::http_error(429, echo, errc::session_cap, detail::http_session_cap_message,
                                              detail::http_session_cap_remediation, cid, std::nullopt,
                                              to_string(minted.error())));
        return;
      case session_reject::id_generation:
        break;
    }
    http_deliver(done, detail::http_error(500, echo, errc::internal_error, detail::http_mint_failed_message,
                                          detail::http_mint_failed_remediation, cid));
    return;
  }
  const std::shared_ptr<session> s = std::move(*minted);
  std::string out;
  bool answered = false;
  try {
    const dispatch_context ctx{ex->who, &state->client, nullptr, {}, nullptr};
    answered = srv.handle(ex->msg, ctx, out);
  } catch (...) {
    answered = false;
    out.clear();
  }
  if (!answered || state->client.protocol_version().empty()) {
    // The dispatch core refused (bad params, its own shutdown): no session survives it.
    (void)registry->terminate(s->id(), s->principal_id(), detail::http_initialize_failed_reason, cid);
    if (out.empty()) {
      std::string body;
      write_post_dispatch_failure(body, ex->id, post_dispatch_failure::dispatch_threw, cid, {});
      http_deliver(done, detail::http_json_body(500, std::move(body)));
      return;
    }
    int status = 200;
    json::document doc;
    if (auto root = doc.parse(out); root && (*root)["error"]["code"].to_int64() == static_cast<std::int64_t>(errc::shutting_down)) {
      status = 503;
    }
    http_deliver(done, detail::http_json_body(status, std::move(out)));
    return;
  }
  http_reply r;
  try {
    r = detail::http_json_body(200, std::move(out));
    detail::http_add(r, detail::http_session_header, s->id());
  } catch (...) {
    // No memory for the answer: the client would never learn the session's id, so the session
    // does not survive (reference §14.2); the allocation failure propagates before `done`.
    (void)registry->terminate(s->id(), s->principal_id(), detail::http_initialize_failed_reason, cid);
    throw;
  }
  http_deliver(done, std::move(r));
}

inline void http_endpoint::impl::handle_get(const http_request_view& req, const principal& who,
                                            const correlation_id& cid, http_completion& done) {
  using detail::http_deliver;
  // reference §7.1 steps 6-8.
  const auto refuse = [&](stream_reject reason, std::string_view sid) {
    count_reject(reason);
    reject_row(to_string(reason), sid, who.id, cid.view());
    http_deliver(done, detail::http_refusal(get_refusal(reason), std::nullopt, cid.view()));
  };
  const auto sid = req.header(detail::http_session_header);
  if (!sid) {
    refuse(stream_reject::missing_session_header, {});
    return;
  }
  std::shared_ptr<session> s = registry->validate_and_touch(*sid, who.id);
  if (!s) {
    refuse(stream_reject::unknown_session, *sid);
    return;
  }
  const std::optional<std::string> accept = detail::http_joined(req, "Accept");
  if (!accept || !accept_wants_sse(*accept)) {
    refuse(stream_reject::not_acceptable, *sid);
    return;
  }
  // reference §7.1 steps 9-10: strict cursor, attach with the gap rule (a gap ends the session).
  const std::string_view last = detail::http_trim(req.header("Last-Event-ID").value_or(std::string_view{}));
  get_attach a = attach_get(*registry, s, last, budget, cid.view(), m);
  if (a.refusal) {
    reject_row(to_string(a.refusal->reason), *sid, who.id, cid.view());
    http_deliver(done, detail::http_refusal(*a.refusal, std::nullopt, cid.view()));
    return;
  }
  http_reply r;
  detail::http_sse_head(r, cid.view());
  r.stream = std::make_unique<detail::http_get_stream>(*this, s, who, a.attached, std::string{cid.view()});
  // A resumed POST stream whose POST answer is still streaming (the client reconnected before the
  // server saw the old connection go): MCP sends a message on one stream only, so that answer ends
  // now, quietly (`superseded`: no close frame, as after close_stream) and the call's later frames
  // and its result reach this GET alone.
  try {
    for (const auto& wake : posts_on(*s, a.attached.channel)) (void)wake->close(close_reason::superseded);
  } catch (...) {  // NOLINT(bugprone-empty-catch): out of memory; the old answer then ends on its own
  }
  http_deliver(done, std::move(r));
}

inline void http_endpoint::impl::handle_delete(const http_request_view& req, const principal& who,
                                               const correlation_id& cid, http_completion& done) {
  using detail::http_deliver;
  // reference §6.7.
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
  if (!host_allowed(req)) {
    http_deliver(done, detail::http_error(403, std::nullopt, errc::origin_rejected, detail::http_host_message,
                                          detail::http_host_remediation, mint_cid().view()));
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

// ---- http_endpoint ------------------------------------------------------------------------------

MCPCORE_DECL http_endpoint::http_endpoint(server& srv, detail::authenticator_base* authn, http_endpoint_options options,
                                          detail::clock_base* clock)
    : impl_(nullptr) {
  std::unique_ptr<detail::authenticator_base> a{authn};
  std::unique_ptr<detail::clock_base> c{clock};
  impl_ = new impl(srv, std::move(a), std::move(options), std::move(c));
}

MCPCORE_DECL http_endpoint::~http_endpoint() { delete impl_; }

MCPCORE_DECL void http_endpoint::set_executor(http_executor exec) { impl_->exec = std::move(exec); }

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

MCPCORE_DECL void http_endpoint::set_readiness(std::function<bool()> ready) { impl_->ready = std::move(ready); }

MCPCORE_DECL void http_endpoint::handle(const http_request_view& req, http_completion done) {
  impl& e = *impl_;
  const std::string_view path = detail::http_path_of(req.target);
  if (e.is_mcp_path(path)) {
    e.handle_mcp(req, done);
    return;
  }
  if (e.approvals != nullptr && e.approvals->matches(req.target)) {
    if (!e.host_allowed(req)) {
      detail::http_deliver(done, detail::http_error(403, std::nullopt, errc::origin_rejected,
                                                    detail::http_host_message, detail::http_host_remediation,
                                                    e.mint_cid().view()));
      return;
    }
    const std::optional<principal> who = e.authenticate(req);
    std::optional<http_response> answer = e.approvals->handle(req, who ? &*who : nullptr);
    if (!answer) {
      detail::http_deliver(done, detail::http_empty(404));
      return;
    }
    http_reply r;
    r.head = std::move(*answer);
    detail::http_deliver(done, std::move(r));
    return;
  }
  if (e.handle_ops(req, path, done)) return;
  detail::http_deliver(done, detail::http_empty(404));
}

MCPCORE_DECL bool http_endpoint::matches(std::string_view target) const noexcept {
  const impl& e = *impl_;
  const std::string_view path = detail::http_path_of(target);
  if (e.is_mcp_path(path)) return true;
  if (e.approvals != nullptr && e.approvals->matches(target)) return true;
  return (!e.options.metrics_path.empty() && path == e.options.metrics_path) ||
         (!e.options.healthz_path.empty() && path == e.options.healthz_path) ||
         (!e.options.readyz_path.empty() && path == e.options.readyz_path);
}

MCPCORE_DECL void http_endpoint::tick() noexcept {
  (void)impl_->registry->collect_garbage();  // no-throw; failures counted
  impl_->bridge->sweep();                   // no-throw; failures counted
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
  (void)e.registry->terminate_all();  // GET streams close `session_terminated`
  e.bridge->shutdown();
}

MCPCORE_DECL session_registry& http_endpoint::sessions() noexcept { return *impl_->registry; }
MCPCORE_DECL progress_bridge& http_endpoint::bridge() noexcept { return *impl_->bridge; }
MCPCORE_DECL stream_budget& http_endpoint::budget() noexcept { return impl_->budget; }
MCPCORE_DECL const http_endpoint_options& http_endpoint::options() const noexcept { return impl_->options; }

MCPCORE_END_NAMESPACE

#endif  // MCPCORE_IMPL_HTTP_ENDPOINT_IPP
