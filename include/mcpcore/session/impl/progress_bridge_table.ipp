// SPDX-License-Identifier: Apache-2.0
// The bridge's table of records: reservation with pin-slot accounting, cancellation, the sweep,
// shutdown and the counts (docs/sessions.md#pinned-finals, #streamed-post, #progress-records,
// #shutdown). Lock order: bridge lock, then record lock, then stream
// (docs/sessions.md#lock-discipline).
#ifndef MCPCORE_IMPL_PROGRESS_BRIDGE_TABLE_IPP
#define MCPCORE_IMPL_PROGRESS_BRIDGE_TABLE_IPP

#include <mcpcore/session/progress_bridge.hpp>

#include <mcpcore/session/impl/progress_bridge.ipp>
#include <mcpcore/session/session_registry.hpp>

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdint>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

MCPCORE_BEGIN_NAMESPACE

namespace detail {

// The pin slot a streamed reservation takes when the session's pinned finals plus streamed
// charges are at `max_pinned_finals` (docs/sessions.md#pinned-finals): an orphan pin (no record
// references it) first, else the oldest parked final; refused when neither exists or a projection
// is in flight.
struct bridge_pin_choice {
  std::uint64_t displaced = 0;  // the pin to release once the reservation commits; 0: none needed
  bool orphan = false;
  std::shared_ptr<progress_call::state> victim;  // the parked record whose final is displaced
  bool refused = false;
  bool held_by_charges = false;  // for a refusal: charges, not pinned finals, hold the slots
};

// Requires the bridge lock; takes each record lock of the session in turn.
inline bridge_pin_choice bridge_choose_pin_locked(const bridge_session_entry* entry,
                                                  const std::shared_ptr<session>& s) {
  bridge_pin_choice out;
  const std::size_t charges = entry != nullptr ? entry->charges : 0;
  const session_stream_stats stats = s->stream()->stats();
  std::size_t pins = 0;
  for (const auto pin : stats.pins) pins += pin != 0 ? 1 : 0;
  if (pins + charges < max_pinned_finals) return out;
  // docs/sessions.md#pinned-finals: select a displaceable pin; the unpin waits for the commit.
  bool declined = false;
  std::vector<std::uint64_t> referenced;
  std::uint64_t best_park = 0;
  std::shared_ptr<progress_call::state> victim;
  if (entry != nullptr) {
    for (const auto& [key, r] : entry->calls) {
      const std::lock_guard<std::mutex> rl(r->mutex);
      if (r->projecting) {
        declined = true;
        break;
      }
      if (r->final_id != 0) referenced.push_back(r->final_id);
      if (r->st == bridge_record_state::ring_only && r->final_id != 0 && !r->final_written && !r->torn_down &&
          s->stream()->pinned(r->final_id) && (best_park == 0 || r->park_order < best_park)) {
        best_park = r->park_order;
        victim = r;
      }
    }
  }
  if (!declined) {
    std::array<std::uint64_t, max_pinned_finals> sorted = stats.pins;
    std::sort(sorted.begin(), sorted.end());
    for (const auto pin : sorted) {
      if (pin != 0 && std::find(referenced.begin(), referenced.end(), pin) == referenced.end()) {
        out.displaced = pin;
        out.orphan = true;
        break;
      }
    }
    if (out.displaced == 0 && victim) {
      out.displaced = victim->final_id;  // read under its lock above; only changes under both locks
      out.victim = std::move(victim);
    }
  }
  if (out.displaced == 0) {
    out.refused = true;
    out.held_by_charges = charges > 0;
  }
  return out;
}

// The audit row of a pin displaced for an admission; a row that cannot be built is counted lost
// (the admission stands).
inline void bridge_audit_displaced(const bridge_core& c, const session& s, const bridge_pin_choice& pin) noexcept {
  try {
    std::string detail_text = "event_id=";
    char digits[24];
    const auto r = std::to_chars(digits, digits + sizeof digits, pin.displaced);
    detail_text.append(digits, r.ptr);
    detail_text.append(pin.orphan ? " orphan=true" : " orphan=false");
    const std::string_view sid{s.id()};
    c.write_audit("mcp.bridge.pin_displaced_for_admission", "McpSession", sid.substr(0, 8), s.principal_id(),
                  detail_text);
  } catch (const std::bad_alloc&) {
    if (c.audit) c.metrics->audit_failures.inc();
  }
}

}  // namespace detail

struct progress_bridge::impl {
  std::shared_ptr<detail::bridge_core> core;
};

MCPCORE_DECL progress_bridge::progress_bridge(session_registry& registry, progress_bridge_options options,
                                              detail::clock_base* clock, session_metrics metrics)
    : impl_(nullptr) {
  std::unique_ptr<detail::clock_base> owned{clock};
  auto core = std::make_shared<detail::bridge_core>(registry, options, std::move(owned), metrics);
  impl_ = new impl{std::move(core)};
}

MCPCORE_DECL progress_bridge::~progress_bridge() {
  shutdown();
  delete impl_;
}

MCPCORE_DECL void progress_bridge::set_audit(detail::audit_base* audit) {
  impl_->core->audit.reset(audit);
}

MCPCORE_DECL result<progress_call, bridge_refusal> progress_bridge::reserve(const std::shared_ptr<session>& s,
                                                                             const request_id& id,
                                                                             const request_id& progress_token,
                                                                             bool streamed) {
  detail::bridge_core& c = *impl_->core;
  const session_metrics& m = *c.metrics;
  const auto refuse = [&](bridge_reject reason, bool held_by_charges = false) {
    m.bridge_rejects[detail::bridge_index(reason)].inc();
    return fail(bridge_refusal{reason, held_by_charges});
  };
  // Allocation before the lock and before anything is committed.
  std::shared_ptr<progress_call::state> rec;
  if (s) {
    rec = std::make_shared<progress_call::state>(impl_->core, c.metrics, s, id, progress_token, streamed,
                                                 c.clock->steady_now(), c.options.legacy_final_members);
  }
  detail::bridge_pin_choice pin;
  bool audit_displaced = false;
  {
    const std::lock_guard<std::mutex> lock(c.mutex);
    if (c.shutdown) return refuse(bridge_reject::shutdown);
    if (!c.options.enabled) return refuse(bridge_reject::disabled);
    if (!s || !s->stream() || !c.registry.exists(s->id(), s->principal_id())) {
      return refuse(bridge_reject::unknown_session);
    }
    auto entry = c.sessions.find(std::string_view{s->id()});
    if (entry != c.sessions.end() && entry->second.calls.contains(id)) {
      return refuse(bridge_reject::duplicate_request_id);
    }
    if (c.total >= c.options.max_records) return refuse(bridge_reject::global_cap);

    if (streamed) {
      pin = detail::bridge_choose_pin_locked(entry != c.sessions.end() ? &entry->second : nullptr, s);
      if (pin.refused) {
        (pin.held_by_charges ? m.pin_slots_reject_charges : m.pin_slots_reject_pins).inc();
        return refuse(bridge_reject::pin_slots, pin.held_by_charges);
      }
    }

    // Commit.
    if (entry == c.sessions.end()) entry = c.sessions.try_emplace(s->id()).first;
    try {
      entry->second.calls.emplace(id, rec);
    } catch (...) {
      if (entry->second.calls.empty() && entry->second.charges == 0) c.sessions.erase(entry);
      throw;
    }
    ++c.total;
    m.bridge_records_active.add(1);
    if (streamed) {
      const std::lock_guard<std::mutex> rl(rec->mutex);
      rec->charge_held = true;
      ++entry->second.charges;
    }
    if (pin.displaced != 0) {
      if (s->stream()->unpin(pin.displaced)) {
        m.pin_displaced_for_admission.inc();
        audit_displaced = true;
        if (pin.victim) {
          const std::lock_guard<std::mutex> rl(pin.victim->mutex);
          if (!pin.victim->torn_down && pin.victim->st == bridge_record_state::ring_only) {
            pin.victim->st = bridge_record_state::done;
          }
        }
      } else {
        m.pin_release_raced.inc();
      }
    }
  }
  if (audit_displaced) detail::bridge_audit_displaced(c, *s, pin);
  return progress_call{std::move(rec)};
}

MCPCORE_DECL cancel_outcome progress_bridge::cancel(std::string_view session_id, const request_id& id) noexcept {
  detail::bridge_core& c = *impl_->core;
  const session_metrics& m = *c.metrics;
  cancel_outcome outcome = cancel_outcome::noop;
  std::shared_ptr<stream_sink> to_close;
  {
    const std::lock_guard<std::mutex> lock(c.mutex);
    const auto entry = c.sessions.find(session_id);
    if (entry != c.sessions.end()) {
      const auto call = entry->second.calls.find(id);
      if (call != entry->second.calls.end()) {
        progress_call::state& r = *call->second;
        const std::lock_guard<std::mutex> rl(r.mutex);
        if (!r.torn_down) {
          if (r.st == bridge_record_state::arming && !r.cancel_intent) {
            r.cancel_intent = true;
            outcome = cancel_outcome::accepted;
          } else if (r.st == bridge_record_state::streaming && r.wake && !r.terminal_accepted) {
            to_close = r.wake;
          }
        }
      }
    }
  }
  // Outside every lock (the sink's waker runs in close); the closed flag's transition makes the
  // detach exactly-once.
  if (to_close && to_close->close(close_reason::cancelled)) outcome = cancel_outcome::detached;
  m.cancels[detail::bridge_index(outcome)].inc();
  return outcome;
}

namespace detail {

// The sweep's pressure pass (docs/sessions.md#the-sweep), under the bridge lock: `all` holds
// every record (alive for the pass); streams whose final could not be published go to
// `to_poison` (poisoned by the caller after unlocking). @throws std::bad_alloc
inline void bridge_pressure_locked(bridge_core& c, const std::vector<std::shared_ptr<progress_call::state>>& all,
                                   std::vector<std::shared_ptr<session_stream>>& to_poison) {
  const session_metrics& m = *c.metrics;
  // (6) Pressure (docs/sessions.md#the-sweep), per principal: first every principal's parked
  // records beyond `max_parked_per_principal` expire, oldest first; then, while the total is
  // above the threshold, the oldest record of the principal holding the most parked records
  // (ties: the principal whose oldest is older). A principal is never charged for another's.
  std::vector<std::pair<std::uint64_t, std::shared_ptr<progress_call::state>>> parked;
  for (const auto& p : all) {
    const std::lock_guard<std::mutex> rl(p->mutex);
    if (!p->torn_down && p->st == bridge_record_state::ring_only) parked.emplace_back(p->park_order, p);
  }
  std::sort(parked.begin(), parked.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  struct principal_parked {
    std::vector<std::pair<std::uint64_t, std::shared_ptr<progress_call::state>>> oldest_first;  // park order
    std::size_t next = 0;   // the next candidate
    std::size_t count = 0;  // parked and not expired
  };
  // Keys view the principal ids of the records in `all` (alive for the whole pass).
  std::unordered_map<std::string_view, principal_parked> by_principal;
  for (const auto& [order, p] : parked) {
    principal_parked& q = by_principal[std::string_view{p->sess->principal_id()}];
    q.oldest_first.emplace_back(order, p);
    ++q.count;
  }
  std::size_t count = parked.size();
  // Expires the principal's oldest expirable record; false when none is left. A record that
  // left `ring_only` meanwhile is no longer counted; a deferred one stays counted.
  const auto expire_oldest = [&](principal_parked& q) {
    while (q.next < q.oldest_first.size()) {
      progress_call::state& r = *q.oldest_first[q.next++].second;
      const std::lock_guard<std::mutex> rl(r.mutex);
      if (r.torn_down || r.st != bridge_record_state::ring_only) {
        --q.count;
        --count;
        continue;
      }
      if (r.projecting || r.final_pending) continue;  // deferred
      expire_disposition d = expire_disposition::synthesize_unavailable;
      if (r.final_id != 0) {
        d = expire_disposition::none;
      } else if (r.terminal_accepted && r.terminal != detail::bridge_terminal::no_response) {
        d = expire_disposition::fallback_final;
      }
      if (d != expire_disposition::none) {
        // Publishing ring-only wakes nobody: allowed under bridge → record → stream.
        std::uint64_t fid = 0;
        try {
          const std::string text = d == expire_disposition::fallback_final
                                       ? detail::bridge_fallback_final(r.id, r.execution_id, r.legacy_members)
                                       : detail::bridge_unavailable_final(r.id, r.execution_id,
                                                                          c.clock->system_now());
          fid = r.sess->stream()->publish_final(text, r.channel);
        } catch (const std::bad_alloc&) {
          fid = 0;
        }
        if (fid == 0) {
          m.terminal_publish_failures.inc();
          to_poison.push_back(r.sess->stream());
        }
        r.final_id = fid;
        r.final_settled = true;
      }
      m.forced_expires[detail::bridge_index(d)].inc();
      bridge_teardown_locked(c, r);
      --q.count;
      --count;
      return true;
    }
    return false;
  };
  for (auto& [who, q] : by_principal) {
    while (q.count > c.options.max_parked_per_principal && expire_oldest(q)) {
    }
  }
  while (count > c.options.parked_pressure_threshold) {
    principal_parked* most = nullptr;
    for (auto& [who, q] : by_principal) {
      if (q.next >= q.oldest_first.size()) continue;  // nothing left to expire
      if (most == nullptr || q.count > most->count ||
          (q.count == most->count &&
           q.oldest_first[q.next].first < most->oldest_first[most->next].first)) {
        most = &q;
      }
    }
    if (most == nullptr) break;
    (void)expire_oldest(*most);
  }
  if (count > c.options.parked_pressure_threshold) m.pressure_budget_exhausted.inc();
}

}  // namespace detail

MCPCORE_DECL void progress_bridge::sweep() noexcept {
  detail::bridge_core& c = *impl_->core;
  const session_metrics& m = *c.metrics;
  std::vector<std::shared_ptr<session_stream>> to_poison;
  try {
    const std::lock_guard<std::mutex> lock(c.mutex);
    if (c.shutdown) return;
    const auto now = c.clock->steady_now();
    std::vector<std::shared_ptr<progress_call::state>> all;
    all.reserve(c.total);
    for (const auto& [sid, entry] : c.sessions) {
      for (const auto& [key, r] : entry.calls) all.push_back(r);
    }
    // Session liveness, checked once per session and without touching it
    // (docs/sessions.md#progress-records).
    std::unordered_map<std::string_view, bool> alive;
    const auto session_alive = [&](const progress_call::state& r) {
      const auto it = alive.find(std::string_view{r.sess->id()});
      if (it != alive.end()) return it->second;
      const bool a = c.registry.exists(r.sess->id(), r.sess->principal_id());
      alive.emplace(std::string_view{r.sess->id()}, a);
      return a;
    };
    const auto teardown = [&](progress_call::state& r) { detail::bridge_teardown_locked(c, r); };

    // (1) done; (2) stale arming; (3) stranded streaming; (4) dead sessions; (5) pin-ack.
    for (const auto& p : all) {
      progress_call::state& r = *p;
      const std::lock_guard<std::mutex> rl(r.mutex);
      if (r.torn_down) continue;
      if (r.st == bridge_record_state::done || r.st == bridge_record_state::aborted) {
        teardown(r);
        continue;
      }
      if (r.st == bridge_record_state::arming) {
        if (now - r.created > c.options.arming_reap_after) teardown(r);
        continue;
      }
      if (r.st == bridge_record_state::streaming &&
          (now - r.created > c.options.streaming_park_after || !session_alive(r))) {
        // docs/sessions.md#the-sweep: parked, never reaped.
        r.st = bridge_record_state::ring_only;
        r.park_order = ++c.park_counter;
        r.outbox.clear();
        r.final_in_outbox = false;
        m.streaming_backstop.inc();
      }
      if ((r.st == bridge_record_state::get_only || r.st == bridge_record_state::ring_only) && !session_alive(r)) {
        teardown(r);
        continue;
      }
      if (r.st == bridge_record_state::ring_only && r.final_id != 0 && !r.sess->stream()->pinned(r.final_id)) {
        // Acknowledged by a resume (or displaced): delivered as far as the bridge can tell.
        r.st = bridge_record_state::done;
        teardown(r);
      }
    }

    // (6) Pressure, per principal (docs/sessions.md#the-sweep).
    detail::bridge_pressure_locked(c, all, to_poison);
  } catch (...) {
    m.bridge_sweep_failures.inc();
  }
  for (const auto& st : to_poison) st->poison();  // closes a live sink: outside every lock
}

MCPCORE_DECL void progress_bridge::shutdown() noexcept {
  detail::bridge_core& c = *impl_->core;
  std::size_t reaped = 0;
  std::vector<std::shared_ptr<session_stream>> to_poison;
  std::vector<std::shared_ptr<stream_sink>> to_close;
  {
    const std::lock_guard<std::mutex> lock(c.mutex);
    if (c.shutdown) return;
    c.shutdown = true;
    for (auto& [sid, entry] : c.sessions) {
      for (auto& [key, p] : entry.calls) {
        progress_call::state& r = *p;
        const std::lock_guard<std::mutex> rl(r.mutex);
        ++reaped;
        const bool resolved = r.final_id != 0 || r.final_written || r.st == bridge_record_state::done ||
                              r.st == bridge_record_state::aborted;
        if (!resolved) {
          try {
            to_poison.push_back(r.sess->stream());
            if (r.st == bridge_record_state::streaming && r.wake) to_close.push_back(r.wake);
          } catch (const std::bad_alloc&) {  // NOLINT(bugprone-empty-catch): best effort (docs/sessions.md#shutdown)
          }
        }
        r.torn_down = true;
        if (r.st != bridge_record_state::aborted) r.st = bridge_record_state::done;
        r.charge_held = false;
        r.slot.reset();
        r.messages.clear();
        r.final_pending.reset();
        r.outbox.clear();
        r.final_in_outbox = false;
      }
    }
    c.sessions.clear();
    c.total = 0;
    c.metrics->bridge_records_active.add(-static_cast<std::int64_t>(reaped));
  }
  for (const auto& st : to_poison) st->poison();
  for (const auto& sink : to_close) (void)sink->close(close_reason::internal_error);
  // One aggregate row (docs/sessions.md#shutdown), formatted without allocating.
  char text[32] = "count=";
  const auto r = std::to_chars(text + 6, text + sizeof text, reaped);
  c.write_audit("mcp.bridge.shutdown_reap", "McpBridge", {}, {},
                std::string_view{text, static_cast<std::size_t>(r.ptr - text)});
}

MCPCORE_DECL std::size_t progress_bridge::records() const {
  const std::lock_guard<std::mutex> lock(impl_->core->mutex);
  return impl_->core->total;
}

MCPCORE_DECL std::size_t progress_bridge::parked() const {
  const std::lock_guard<std::mutex> lock(impl_->core->mutex);
  std::size_t n = 0;
  for (const auto& [sid, entry] : impl_->core->sessions) {
    for (const auto& [key, r] : entry.calls) {
      const std::lock_guard<std::mutex> rl(r->mutex);
      if (r->st == bridge_record_state::ring_only) ++n;
    }
  }
  return n;
}

MCPCORE_DECL std::size_t progress_bridge::charges(std::string_view session_id) const {
  const std::lock_guard<std::mutex> lock(impl_->core->mutex);
  const auto it = impl_->core->sessions.find(session_id);
  return it != impl_->core->sessions.end() ? it->second.charges : 0;
}

MCPCORE_DECL const progress_bridge_options& progress_bridge::options() const noexcept {
  return impl_->core->options;
}

MCPCORE_END_NAMESPACE

#endif  // MCPCORE_IMPL_PROGRESS_BRIDGE_TABLE_IPP
