// SPDX-License-Identifier: Apache-2.0
// The session registry: CSPRNG ids bound to a principal, a global cap that refuses, a per-principal
// cap that ends the principal's least recently used idle session first, a sliding idle TTL,
// garbage collection and the shutdown flag
// (docs/sessions.md#the-session-registry, docs/http.md#delete-sessions-on,
// docs/sessions.md#shutdown).
#ifndef MCPCORE_SESSION_REGISTRY_HPP
#define MCPCORE_SESSION_REGISTRY_HPP

#include <mcpcore/detail/config.hpp>
#include <mcpcore/expected.hpp>
#include <mcpcore/governance/audit.hpp>
#include <mcpcore/governance/clock.hpp>
#include <mcpcore/session/session_metrics.hpp>
#include <mcpcore/session/session_stream.hpp>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

MCPCORE_BEGIN_NAMESPACE

/// Default registry bounds (docs/sessions.md#the-session-registry).
inline constexpr std::size_t default_max_sessions = 1024;
inline constexpr std::size_t default_max_sessions_per_principal = 8;
inline constexpr std::chrono::milliseconds default_session_idle_ttl{30 * 60 * 1000};
/// Length of a session id: 16 CSPRNG bytes as lowercase hex.
inline constexpr std::size_t session_id_length = 32;
/// Draws tried when a new id collides with a live one before refusing `id_generation`.
inline constexpr int session_id_attempts = 5;

/// Bounds of a `session_registry`.
struct session_registry_options {
  /// Sessions alive at once, across principals; one more is refused `global_cap`.
  std::size_t max_sessions = default_max_sessions;
  /// Sessions one principal may hold. At the cap, a mint ends the principal's least recently used
  /// idle session (`evict_idle_at_principal_cap`); when every one is busy, or eviction is off, it
  /// is refused `per_principal_cap` (docs/sessions.md#the-session-registry).
  std::size_t max_sessions_per_principal = default_max_sessions_per_principal;
  /// Whether a mint at the per-principal cap ends the principal's least recently used session
  /// that nothing holds (no open stream, no request in flight: `session_hold`) instead of being
  /// refused. Clients that never send DELETE would otherwise lock themselves out until the idle TTL.
  bool evict_idle_at_principal_cap = true;
  /// A session not used for this long is expired (sliding: every validation refreshes it).
  std::chrono::milliseconds idle_ttl = default_session_idle_ttl;
  /// Bounds of each session's stream state.
  session_stream_options stream{};
};

/// One session: its id, the principal it is bound to and its stream state. Held by `shared_ptr`:
/// a pump or a parked progress record may keep the object (and its stream state) alive after the
/// registry dropped it.
///
/// @par Thread safety
/// Every member is thread-safe.
class session_hold;

class session {
 public:
  /// Library use (the registry creates sessions).
  MCPCORE_DECL session(std::string id, std::string principal_id, const session_stream_options& stream,
                       const session_metrics& metrics, std::shared_ptr<void> attachment = {});
  MCPCORE_DECL ~session();
  session(const session&) = delete;
  session& operator=(const session&) = delete;

  /// The 32-character lowercase hex id (the `Mcp-Session-Id` header).
  [[nodiscard]] const std::string& id() const noexcept { return id_; }
  /// The principal the session is bound to.
  [[nodiscard]] const std::string& principal_id() const noexcept { return principal_; }
  /// The replay ring, pins and GET sinks; outlives the registry entry while held.
  [[nodiscard]] const std::shared_ptr<session_stream>& stream() const noexcept { return stream_; }
  /// The transport's per-session state given to `mint` (the HTTP endpoint keeps the session's
  /// `peer` there); null when none was given. Set once at mint, never changed: it lives as long
  /// as the session object.
  [[nodiscard]] const std::shared_ptr<void>& attachment() const noexcept { return attachment_; }
  /// Whether a `session_hold` holds the session (a request in flight, an open stream): the
  /// registry never evicts a busy session (docs/sessions.md#the-session-registry).
  [[nodiscard]] bool busy() const noexcept { return holds_.load(std::memory_order_acquire) != 0; }

 private:
  friend class session_hold;
  std::string id_;
  std::string principal_;
  std::shared_ptr<session_stream> stream_;
  std::shared_ptr<void> attachment_;
  std::atomic<std::size_t> holds_{0};
};

/// Marks a session busy while it lives (move-only): the transport holds one per request in flight
/// and per open stream, so that a mint at the per-principal cap never evicts that session
/// (docs/sessions.md#the-session-registry). Taken by `session_registry::validate_and_touch` under
/// the registry lock, so an eviction never picks a session a request has just validated.
class session_hold {
 public:
  session_hold() noexcept = default;
  explicit session_hold(std::shared_ptr<session> s) noexcept : s_(std::move(s)) {
    if (s_) s_->holds_.fetch_add(1, std::memory_order_acq_rel);
  }
  session_hold(session_hold&& other) noexcept = default;
  session_hold& operator=(session_hold&& other) noexcept {
    if (this != &other) {
      reset();
      s_ = std::move(other.s_);
    }
    return *this;
  }
  session_hold(const session_hold&) = delete;
  session_hold& operator=(const session_hold&) = delete;
  ~session_hold() { reset(); }

  /// Lets the session go (idempotent).
  void reset() noexcept {
    if (s_) s_->holds_.fetch_sub(1, std::memory_order_acq_rel);
    s_.reset();
  }
  /// The session held, or null.
  [[nodiscard]] const std::shared_ptr<session>& get() const noexcept { return s_; }

 private:
  std::shared_ptr<session> s_;
};

/// Live MCP sessions (docs/sessions.md#the-session-registry, docs/http.md#delete-sessions-on).
///
/// - Ids are 16 bytes of the platform CSPRNG in lowercase hex; a collision is redrawn up to
///   `session_id_attempts` times, never overwritten.
/// - Unknown, expired and foreign-principal ids are indistinguishable ("unknown"): no
///   cross-principal existence oracle.
/// - The global cap refuses. At the per-principal cap, the principal's least recently used session
///   that is not `busy()` is ended (`mcp.session.close reason=evicted`, counted
///   `sessions_evicted`) to make room; the mint is refused only when every one is busy.
/// - Idle expiry is sliding (`validate_and_touch` refreshes it); `exists` never refreshes it, so
///   background work cannot keep a session alive. Expired sessions are collected by
///   `collect_garbage` (a maintenance tick) and opportunistically by `mint` and
///   `validate_and_touch`; their streams are closed `session_terminated` after the registry lock
///   is released (the registry lock is a leaf: docs/sessions.md#lock-discipline).
/// - Audit rows (target type `McpSession`, target id the first 8 characters of the id):
///   `mcp.session.open`; `mcp.session.close` with `reason=deleted|idle_expired|evicted|
///   replay_window_exceeded|shutdown`; `mcp.session.reject` with `reason=<session_reject>`.
///
/// @par Thread safety
/// Every member except `set_audit` is thread-safe.
class session_registry {
 public:
  /// A registry on the system clock.
  explicit session_registry(session_registry_options options = {}, session_metrics metrics = {})
      : session_registry(std::move(options), system_clock_source{}, metrics) {}
  /// A registry on `clock` (tests use `clock_ref<manual_clock>`).
  template <clock_source C>
  session_registry(session_registry_options options, C clock, session_metrics metrics = {})
      : session_registry(std::move(options), new detail::clock_model<C>(std::move(clock)), metrics) {}
  MCPCORE_DECL ~session_registry();
  session_registry(const session_registry&) = delete;
  session_registry& operator=(const session_registry&) = delete;

  /// Routes the registry's audit rows to `sink` (which must outlive the registry). Call before
  /// the registry is shared between threads.
  template <audit_sink A>
  void set_audit(A& sink) {
    set_audit(new detail::audit_model<A>(sink));
  }

  /// Mints a session for `principal_id` (docs/sessions.md#the-session-registry order: collect
  /// expired sessions, then the shutdown flag, the global cap, the per-principal cap; at the
  /// latter the principal's least recently used idle session is evicted when there is one).
  /// `correlation_id` goes into the row; `attachment` becomes `session::attachment()` (dropped when
  /// the mint is refused).
  [[nodiscard]] MCPCORE_DECL result<std::shared_ptr<session>, session_reject> mint(
      std::string_view principal_id, std::string_view correlation_id = {}, const std::shared_ptr<void>& attachment = {});
  /// The session `id` if it exists, is not expired and is bound to `principal_id`, after
  /// refreshing its idle time; null otherwise ("unknown": 404 -32007).
  [[nodiscard]] MCPCORE_DECL std::shared_ptr<session> validate_and_touch(std::string_view id,
                                                                         std::string_view principal_id);
  /// As above, and when found, `hold` holds the session (taken under the registry lock: a mint
  /// racing this call never evicts the session it returns).
  [[nodiscard]] MCPCORE_DECL std::shared_ptr<session> validate_and_touch(std::string_view id,
                                                                         std::string_view principal_id,
                                                                         session_hold& hold);
  /// Whether `id` exists, is not expired and is bound to `principal_id`, without refreshing it.
  [[nodiscard]] MCPCORE_DECL bool exists(std::string_view id, std::string_view principal_id) const;
  /// Ends session `id` if it exists and is bound to `principal_id`: the entry goes, its sinks
  /// are closed `session_terminated` (after unlocking), and `mcp.session.close reason=<reason>` is
  /// written. Returns false for an unknown id (a second DELETE is 404). `reason` is `deleted`
  /// for DELETE and `replay_window_exceeded` for a resume gap.
  MCPCORE_DECL bool terminate(std::string_view id, std::string_view principal_id,
                              std::string_view reason = "deleted", std::string_view correlation_id = {});
  /// Erases expired sessions and closes their streams; returns how many went. The maintenance
  /// tick calls it; an exception is contained and counted (`session_gc_failures`).
  MCPCORE_DECL std::size_t collect_garbage() noexcept;
  /// From now on `mint` refuses with `shutdown` (HTTP 503 -32015). Idempotent.
  MCPCORE_DECL void begin_shutdown() noexcept;
  [[nodiscard]] MCPCORE_DECL bool shutting_down() const noexcept;
  /// Terminates every session (reason `shutdown`); returns how many.
  MCPCORE_DECL std::size_t terminate_all() noexcept;
  /// As above, and calls `each` (which must not throw) with every session ended, after its sinks
  /// closed and with no lock held: the HTTP endpoint closes the sessions' peers there
  /// (docs/sessions.md#shutdown).
  template <class F>
  std::size_t terminate_all(F&& each) noexcept {
    return terminate_all_with(&each, [](void* f, const session& s) { (*static_cast<std::remove_reference_t<F>*>(f))(s); });
  }

  /// Sessions held (expired ones not yet collected included).
  [[nodiscard]] MCPCORE_DECL std::size_t size() const;
  /// The sessions held now that are not expired (copied under the registry lock, so that the
  /// caller may publish to their streams with no lock held: docs/http.md#server-notifications);
  /// empty when there is no memory for the copy.
  [[nodiscard]] MCPCORE_DECL std::vector<std::shared_ptr<session>> live() const noexcept;
  /// Sessions held by `principal_id`.
  [[nodiscard]] MCPCORE_DECL std::size_t count(std::string_view principal_id) const;
  [[nodiscard]] MCPCORE_DECL const session_registry_options& options() const noexcept;
  /// The registry's steady time (its clock).
  [[nodiscard]] MCPCORE_DECL std::chrono::steady_clock::time_point now() const noexcept;

 private:
  // terminate_all with a callback that needs no <functional>: `each(ctx, s)` per session ended.
  MCPCORE_DECL std::size_t terminate_all_with(void* ctx, void (*each)(void*, const session&)) noexcept;
  MCPCORE_DECL session_registry(session_registry_options options, detail::clock_base* clock,
                                session_metrics metrics);
  MCPCORE_DECL void set_audit(detail::audit_base* audit);
  struct impl;
  impl* impl_;
};

MCPCORE_END_NAMESPACE

#if defined(MCPCORE_HEADER_ONLY)
#  include <mcpcore/session/impl/session_registry.ipp>
#endif

#endif  // MCPCORE_SESSION_REGISTRY_HPP
