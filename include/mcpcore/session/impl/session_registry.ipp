// SPDX-License-Identifier: Apache-2.0
// The session registry: one leaf mutex over the id map and the per-principal counts; reaped and
// terminated streams are closed, and their rows written, after the mutex is released.
#ifndef MCPCORE_IMPL_SESSION_REGISTRY_IPP
#define MCPCORE_IMPL_SESSION_REGISTRY_IPP

#include <mcpcore/session/session_registry.hpp>

#include <mcpcore/detail/random.hpp>

#include <atomic>
#include <exception>
#include <functional>
#include <mutex>
#include <new>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

MCPCORE_BEGIN_NAMESPACE

// ---- session -----------------------------------------------------------------------------------

MCPCORE_DECL session::session(std::string id, std::string principal_id, const session_stream_options& stream,
                              const session_metrics& metrics, std::shared_ptr<void> attachment)
    : id_(std::move(id)),
      principal_(std::move(principal_id)),
      // Shared with the pumps attached to it: the stream may outlive the registry entry and the
      // session itself.
      stream_(std::make_shared<session_stream>(stream, metrics)),
      attachment_(std::move(attachment)) {}

MCPCORE_DECL session::~session() = default;

// ---- session_registry --------------------------------------------------------------------------

namespace detail {

// Heterogeneous lookup by std::string_view in maps keyed by std::string (no allocation to find).
struct session_key_hash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
};

/// `mcp.session.close reason=` of a session ended to make room at the per-principal cap.
inline constexpr std::string_view session_evicted_reason = "evicted";

// A session leaving the registry: closed and audited after the registry lock is released.
struct session_departure {
  std::shared_ptr<session> s;
  std::string_view reason;  // a literal, or the caller's `reason` (alive for the whole call)
  bool idle = false;        // reaped by the idle TTL (counted `sessions_expired`)
  bool evicted = false;     // ended to make room at the per-principal cap (counted `sessions_evicted`)
};

}  // namespace detail

struct session_registry::impl {
  impl(session_registry_options o, detail::clock_base* c, session_metrics m)
      : options(std::move(o)), clock(c), metrics(m) {}

  struct entry {
    std::shared_ptr<session> s;
    std::chrono::steady_clock::time_point last_seen;
  };

  const session_registry_options options;
  const std::unique_ptr<detail::clock_base> clock;
  const session_metrics metrics;
  // Set by `set_audit` before the registry is shared; may stay null (no rows).
  std::unique_ptr<detail::audit_base> audit;
  // Written under `mutex`, so a mint holding the lock finishes first; atomic so that
  // `shutting_down` reads it without the lock.
  std::atomic<bool> shutdown{false};

  // The registry lock: a leaf (nothing else is locked, no stream is called, no row is written
  // while it is held).
  mutable std::mutex mutex;
  // Guarded by `mutex`.
  std::unordered_map<std::string, entry, detail::session_key_hash, std::equal_to<>> sessions;
  // Guarded by `mutex`; an entry exists only while its count is non-zero.
  std::unordered_map<std::string, std::size_t, detail::session_key_hash, std::equal_to<>> per_principal;

  [[nodiscard]] bool expired(const entry& e, std::chrono::steady_clock::time_point now) const noexcept {
    return now - e.last_seen >= options.idle_ttl;
  }

  // Removes `it` from both maps (caller holds `mutex`); noexcept: erasing never allocates.
  void erase_locked(decltype(sessions)::iterator it) noexcept {
    const auto p = per_principal.find(std::string_view{it->second.s->principal_id()});
    if (p != per_principal.end() && --p->second == 0) per_principal.erase(p);
    sessions.erase(it);
    metrics.sessions_active.set(static_cast<std::int64_t>(sessions.size()));
  }

  // Moves every expired entry into `out` (caller holds `mutex`). The departure is recorded
  // before the entry is erased, so a bad_alloc leaves the entry in place (and in the registry).
  void sweep_locked(std::chrono::steady_clock::time_point now, std::vector<detail::session_departure>& out) {
    for (auto it = sessions.begin(); it != sessions.end();) {
      if (expired(it->second, now)) {
        out.push_back(detail::session_departure{it->second.s, "idle_expired", true});
        const auto next = std::next(it);
        erase_locked(it);
        it = next;
      } else {
        ++it;
      }
    }
  }

  // One audit row; whether it was persisted. A throwing sink (or a failed allocation) is
  // contained and reported as not persisted: audit never fails the operation, and the gap is
  // counted (`audit_failures`, docs/security.md#audit-and-the-one-cid-pattern).
  bool write_row(std::string_view action, audit_result result, std::string_view id, std::string_view principal,
                 std::string_view reason, std::string_view correlation_id) const noexcept {
    if (!audit) return true;
    bool persisted = false;
    try {
      std::string detail;
      if (!reason.empty()) {
        detail = "reason=";
        detail += sanitize_audit_value(reason);
      }
      audit_record r;
      r.action = action;
      r.target_type = "McpSession";
      r.target_id = id.substr(0, 8);
      r.principal_id = principal;
      r.result = result;
      r.detail = detail;
      r.correlation_id = correlation_id;
      r.time = clock->system_now();
      persisted = audit->record(r);
    } catch (...) {
      persisted = false;
    }
    if (!persisted) metrics.audit_failures.inc();
    return persisted;
  }

  // The least recently used session of `principal_id` that is not busy, or end() (caller holds
  // `mutex`). A scan of the map: it runs only for a mint at the per-principal cap.
  decltype(sessions)::iterator idle_lru_locked(std::string_view principal_id) {
    auto best = sessions.end();
    for (auto it = sessions.begin(); it != sessions.end(); ++it) {
      const entry& e = it->second;
      if (e.s->principal_id() != principal_id || e.s->busy()) continue;
      if (best == sessions.end() || e.last_seen < best->second.last_seen) best = it;
    }
    return best;
  }

  // Closes the departed sessions' sinks and writes their close rows; called with no lock held.
  // Idle reaps are counted `sessions_expired`, evictions `sessions_evicted`.
  void finish(const std::vector<detail::session_departure>& gone, std::string_view correlation_id) const noexcept {
    std::uint64_t idle = 0;
    std::uint64_t evicted = 0;
    for (const auto& d : gone) {
      d.s->stream()->close_sinks(close_reason::session_terminated);
      if (d.idle) ++idle;
      if (d.evicted) ++evicted;
      write_row("mcp.session.close", audit_result::success, d.s->id(), d.s->principal_id(), d.reason,
                d.idle ? std::string_view{} : correlation_id);
    }
    if (idle != 0) metrics.sessions_expired.inc(idle);
    if (evicted != 0) metrics.sessions_evicted.inc(evicted);
  }
};

MCPCORE_DECL session_registry::session_registry(session_registry_options options, detail::clock_base* clock,
                                                 session_metrics metrics)
    : impl_(nullptr) {
  try {
    impl_ = new impl(std::move(options), clock, metrics);
  } catch (...) {
    delete clock;  // the registry owns it from the call on
    throw;
  }
  impl_->metrics.sessions_active.set(0);
}

MCPCORE_DECL session_registry::~session_registry() {
  // Remaining streams close their sinks `session_terminated` as their last owner lets go.
  delete impl_;
}

MCPCORE_DECL void session_registry::set_audit(detail::audit_base* audit) {
  std::unique_ptr<detail::audit_base> owned{audit};
  impl_->audit = std::move(owned);
}

MCPCORE_DECL result<std::shared_ptr<session>, session_reject> session_registry::mint(
    std::string_view principal_id, std::string_view correlation_id, const std::shared_ptr<void>& attachment) {
  impl& m = *impl_;
  std::vector<detail::session_departure> reaped;
  std::optional<session_reject> refused;
  std::shared_ptr<session> minted;
  std::exception_ptr failure;

  for (int draw = 0; draw < session_id_attempts && !refused && !minted && !failure; ++draw) {
    try {
      // The id and the session (with its stream state) exist before any registry state changes:
      // a bad_alloc here is a clean "nothing happened" (docs/sessions.md#exception-boundaries).
      // Declared before the lock, a discarded candidate is destroyed after the lock is released.
      auto id = detail::random_hex(session_id_length / 2);
      if (!id) {
        refused = session_reject::id_generation;
        break;
      }
      // Every draw gets the attachment (a copy: a collided candidate is discarded).
      auto candidate = std::make_shared<session>(std::move(*id), std::string{principal_id}, m.options.stream,
                                                 m.metrics, attachment);

      const std::lock_guard lock{m.mutex};
      const auto now = m.clock->steady_now();
      // docs/sessions.md#the-session-registry order: idle GC, then shutdown, the global cap, the
      // per-principal cap.
      m.sweep_locked(now, reaped);
      if (m.shutdown.load(std::memory_order_acquire)) {
        refused = session_reject::shutdown;
        break;
      }
      if (m.sessions.size() >= m.options.max_sessions) {
        refused = session_reject::global_cap;
        break;
      }
      auto p = m.per_principal.find(principal_id);
      if ((p == m.per_principal.end() ? 0 : p->second) >= m.options.max_sessions_per_principal) {
        // docs/sessions.md#the-session-registry: make room by ending the principal's least
        // recently used idle session; refused only when every one is busy.
        const auto victim = m.options.evict_idle_at_principal_cap ? m.idle_lru_locked(principal_id) : m.sessions.end();
        if (victim == m.sessions.end()) {
          refused = session_reject::per_principal_cap;
          break;
        }
        // may throw: nothing changed
        reaped.push_back(detail::session_departure{victim->second.s, detail::session_evicted_reason, false, true});
        m.erase_locked(victim);
        p = m.per_principal.find(principal_id);  // erase_locked may have dropped the entry
      }
      if (m.sessions.find(std::string_view{candidate->id()}) != m.sessions.end()) {
        continue;  // a live session has this id: never overwrite it, draw again
      }
      const auto it = m.sessions.try_emplace(candidate->id(), impl::entry{candidate, now}).first;
      try {
        if (p != m.per_principal.end()) {
          ++p->second;
        } else {
          m.per_principal.try_emplace(std::string{principal_id}, std::size_t{1});
        }
      } catch (...) {
        m.sessions.erase(it);  // roll back: the session never existed
        throw;
      }
      m.metrics.sessions_active.set(static_cast<std::int64_t>(m.sessions.size()));
      minted = std::move(candidate);
    } catch (...) {
      failure = std::current_exception();  // rethrown after the reaped streams are closed
    }
  }

  // After the registry lock: close what the GC reaped and what was evicted, then count and audit
  // the outcome (an eviction's row carries this mint's correlation id).
  m.finish(reaped, correlation_id);
  if (failure) std::rethrow_exception(failure);
  if (minted) {
    m.metrics.sessions_opened.inc();
    m.write_row("mcp.session.open", audit_result::success, minted->id(), principal_id, {}, correlation_id);
    return minted;
  }
  const session_reject r = refused.value_or(session_reject::id_generation);  // or every draw collided
  // session_reject counts from 1; the counters are indexed from 0.
  m.metrics.session_rejects[static_cast<std::size_t>(r) - 1].inc();
  // Caps and shutdown are refusals the caller can act on; an id that could not be drawn is a
  // server-side fault.
  m.write_row("mcp.session.reject", r == session_reject::id_generation ? audit_result::failure : audit_result::denied,
              {}, principal_id, to_string(r), correlation_id);
  return fail(r);
}

MCPCORE_DECL std::shared_ptr<session> session_registry::validate_and_touch(std::string_view id,
                                                                            std::string_view principal_id) {
  session_hold unused;
  return validate_and_touch(id, principal_id, unused);
}

MCPCORE_DECL std::shared_ptr<session> session_registry::validate_and_touch(std::string_view id,
                                                                            std::string_view principal_id,
                                                                            session_hold& hold) {
  impl& m = *impl_;
  // Opportunistic GC here reaps only the looked-up entry when it has expired (whoever it belongs
  // to: the answer is "unknown" either way). A full sweep would make every request pay for the
  // whole map; `mint` and `collect_garbage` sweep it all.
  std::vector<detail::session_departure> reaped;
  std::shared_ptr<session> found;
  {
    const std::lock_guard lock{m.mutex};
    const auto it = m.sessions.find(id);
    // Unknown, expired and foreign ids all answer null (docs/sessions.md#the-session-registry).
    if (it == m.sessions.end()) return nullptr;
    const auto now = m.clock->steady_now();
    if (m.expired(it->second, now)) {
      reaped.push_back(detail::session_departure{it->second.s, "idle_expired", true});  // may throw: nothing changed
      m.erase_locked(it);
    } else if (it->second.s->principal_id() == principal_id) {
      it->second.last_seen = now;
      found = it->second.s;
      // Under the lock: a mint at the per-principal cap cannot pick this session from now on.
      hold = session_hold{found};
    }
    // a foreign principal's session: "unknown", and its idle time is left alone
  }
  m.finish(reaped, {});
  return found;
}

// Never touches: background work (a parked result) must not keep its session alive
// (docs/sessions.md#the-session-registry).
MCPCORE_DECL bool session_registry::exists(std::string_view id, std::string_view principal_id) const {
  const impl& m = *impl_;
  const std::lock_guard lock{m.mutex};
  const auto it = m.sessions.find(id);
  if (it == m.sessions.end()) return false;
  return !m.expired(it->second, m.clock->steady_now()) && it->second.s->principal_id() == principal_id;
}

MCPCORE_DECL bool session_registry::terminate(std::string_view id, std::string_view principal_id,
                                              std::string_view reason, std::string_view correlation_id) {
  impl& m = *impl_;
  std::vector<detail::session_departure> gone;
  bool terminated = false;
  {
    const std::lock_guard lock{m.mutex};
    const auto it = m.sessions.find(id);
    if (it == m.sessions.end()) return false;
    if (m.expired(it->second, m.clock->steady_now())) {
      // Expired counts as unknown; it is reaped now, as `validate_and_touch` would.
      gone.push_back(detail::session_departure{it->second.s, "idle_expired", true});  // may throw: nothing changed
      m.erase_locked(it);
    } else if (it->second.s->principal_id() == principal_id) {
      gone.push_back(detail::session_departure{it->second.s, reason, false});  // may throw: nothing changed
      m.erase_locked(it);
      terminated = true;
    }
    // a foreign principal's session: "unknown", left alone
  }
  // An idle reap is the system's doing, not this request's: its row carries no correlation id.
  m.finish(gone, terminated ? correlation_id : std::string_view{});
  return terminated;
}

MCPCORE_DECL std::size_t session_registry::collect_garbage() noexcept {
  impl& m = *impl_;
  std::vector<detail::session_departure> reaped;
  bool failed = false;
  {
    const std::lock_guard lock{m.mutex};
    try {
      m.sweep_locked(m.clock->steady_now(), reaped);
    } catch (...) {
      failed = true;  // what was collected before the failure still goes below
    }
  }
  m.finish(reaped, {});
  if (failed) m.metrics.session_gc_failures.inc();
  return reaped.size();
}

MCPCORE_DECL void session_registry::begin_shutdown() noexcept {
  impl& m = *impl_;
  const std::lock_guard lock{m.mutex};  // a mint that already holds the lock finishes first
  m.shutdown.store(true, std::memory_order_release);
}

MCPCORE_DECL bool session_registry::shutting_down() const noexcept {
  return impl_->shutdown.load(std::memory_order_acquire);
}

MCPCORE_DECL std::size_t session_registry::terminate_all() noexcept { return terminate_all_with(nullptr, nullptr); }

MCPCORE_DECL std::size_t session_registry::terminate_all_with(void* ctx, void (*each)(void*, const session&)) noexcept {
  impl& m = *impl_;
  // Later mints are not refused here: begin_shutdown does that, first (docs/sessions.md#shutdown).
  decltype(m.sessions) taken;
  {
    // Swapping allocates nothing, so this cannot fail half-way.
    const std::lock_guard lock{m.mutex};
    taken.swap(m.sessions);
    m.per_principal.clear();
    m.metrics.sessions_active.set(0);
  }
  for (const auto& [id, e] : taken) {
    e.s->stream()->close_sinks(close_reason::session_terminated);
    if (each != nullptr) each(ctx, *e.s);
    m.write_row("mcp.session.close", audit_result::success, id, e.s->principal_id(), "shutdown", {});
  }
  return taken.size();
}

MCPCORE_DECL std::size_t session_registry::size() const {
  const std::lock_guard lock{impl_->mutex};
  return impl_->sessions.size();
}

MCPCORE_DECL std::vector<std::shared_ptr<session>> session_registry::live() const noexcept {
  std::vector<std::shared_ptr<session>> out;
  const auto now = impl_->clock->steady_now();
  const std::lock_guard lock{impl_->mutex};
  try {
    out.reserve(impl_->sessions.size());
    for (const auto& [id, e] : impl_->sessions) {
      if (!impl_->expired(e, now)) out.push_back(e.s);
    }
  } catch (...) {
    out.clear();  // no memory: nobody is notified this time
  }
  return out;
}

MCPCORE_DECL std::size_t session_registry::count(std::string_view principal_id) const {
  const std::lock_guard lock{impl_->mutex};
  const auto it = impl_->per_principal.find(principal_id);
  return it == impl_->per_principal.end() ? 0 : it->second;
}

MCPCORE_DECL const session_registry_options& session_registry::options() const noexcept { return impl_->options; }

MCPCORE_DECL std::chrono::steady_clock::time_point session_registry::now() const noexcept {
  return impl_->clock->steady_now();
}

MCPCORE_END_NAMESPACE

#endif  // MCPCORE_IMPL_SESSION_REGISTRY_IPP
