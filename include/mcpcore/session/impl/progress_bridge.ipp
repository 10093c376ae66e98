// SPDX-License-Identifier: Apache-2.0
// The progress bridge: records keyed by (session, exact id) under the bridge lock, each with its own
// lock and projection claim; frames projected on the reporting thread
// (docs/sessions.md#pinned-finals, #streamed-post, #progress-records, #shutdown, #lock-discipline).
#ifndef MCPCORE_IMPL_PROGRESS_BRIDGE_IPP
#define MCPCORE_IMPL_PROGRESS_BRIDGE_IPP

#include <mcpcore/session/progress_bridge.hpp>

#include <mcpcore/session/session_registry.hpp>

#include <mcpcore/dispatch/operation.hpp>
#include <mcpcore/wire/correlation_id.hpp>
#include <mcpcore/wire/error.hpp>
#include <mcpcore/wire/json.hpp>
#include <mcpcore/wire/json_writer.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <deque>
#include <functional>
#include <mutex>
#include <new>
#include <unordered_map>
#include <utility>

MCPCORE_BEGIN_NAMESPACE

namespace detail {

/// In-call messages (`progress_call::message`) a record queues while it cannot project them (arming,
/// or a projection in flight); one more is dropped and counted `frames_dropped`.
inline constexpr std::size_t bridge_pending_messages = 64;

/// Remediation of the -32014 frame synthesized for a parked record expired before its terminal.
inline constexpr std::string_view bridge_unavailable_remediation =
    "the work never reported a result here; fetch it by execution id";

struct bridge_core;

/// The latest progress snapshot of a record (docs/sessions.md#progress-records: latest wins).
struct bridge_snapshot {
  double progress = 0;
  std::optional<double> total;
  std::string message;
};

enum class bridge_terminal : std::uint8_t {
  none,         ///< no terminal yet
  response,     ///< `complete`
  finish,       ///< `finish`
  no_response,  ///< `complete_without_response`
};

}  // namespace detail

// The record. Immutable members are set at reserve; the rest is guarded by `mutex`. A charge, the
// teardown flag and the bridge's maps are only changed with the bridge lock held too (bridge lock,
// then record lock: docs/sessions.md#lock-discipline). It is the `operation_link` every
// `operation_handle` of a detached call shares (`progress_call::detach`).
struct progress_call::state final : operation_link {
  state(std::weak_ptr<detail::bridge_core> c, std::shared_ptr<const session_metrics> m, std::shared_ptr<session> s,
        request_id i, request_id t, bool str, std::chrono::steady_clock::time_point now, bool legacy = false)
      : core(std::move(c)),
        metrics(std::move(m)),
        sess(std::move(s)),
        id(std::move(i)),
        token(std::move(t)),
        streamed(str),
        created(now),
        wake(str ? std::make_shared<stream_sink>() : nullptr),
        legacy_members(legacy) {}

  const std::weak_ptr<detail::bridge_core> core;
  const std::shared_ptr<const session_metrics> metrics;
  const std::shared_ptr<session> sess;
  const request_id id;
  const request_id token;
  const bool streamed;
  const std::chrono::steady_clock::time_point created;
  const std::shared_ptr<stream_sink> wake;  // streamed reservations only
  const bool legacy_members;                // progress_bridge_options::legacy_final_members

  mutable std::mutex mutex;
  // Guarded by `mutex`.
  bridge_record_state st = bridge_record_state::arming;
  stream_channel channel = get_channel;  // the POST stream its frames belong to (set by a streamed arm)
  std::uint64_t park_order = 0;
  bool charge_held = false;
  bool cancel_intent = false;
  bool projecting = false;  // the projection claim
  std::optional<detail::bridge_snapshot> slot;
  std::deque<std::string> messages;
  std::optional<double> watermark;
  bool terminal_accepted = false;  // sticky
  detail::bridge_terminal terminal = detail::bridge_terminal::none;
  std::optional<std::string> final_pending;  // latched, not yet projected
  bool final_settled = false;                // the ladder ran
  std::uint64_t final_id = 0;                // committed ring id of the final (pinned at commit)
  bool final_written = false;
  std::string execution_id;
  std::optional<std::string> base;
  std::deque<stream_frame> outbox;  // streaming: committed frames the pump has not taken
  bool final_in_outbox = false;
  bool cap_drain_done = false;
  bool torn_down = false;
  bool detached = false;  // the work continues after the call (`detach`)
  // The final of a `finish` that arrived before `defer` (the worker beat the handler's return): the
  // terminal is accepted, its final is published when the call returns.
  std::optional<std::string> final_awaiting_return;

  // The reports of the work (`progress_call::progress` and `finish` forward here).
  bool progress(double progress, std::optional<double> total, std::string_view message) override;
  bool finish(operation_final final) override;
};

namespace detail {

struct bridge_string_hash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
};

struct bridge_session_entry {
  std::unordered_map<request_id, std::shared_ptr<progress_call::state>> calls;
  std::size_t charges = 0;  // streamed charges outstanding (docs/sessions.md#pinned-finals)
};

struct bridge_core {
  // Takes `c` as the first thing that can fail after it: a throw deletes the clock exactly once.
  bridge_core(session_registry& r, progress_bridge_options o, std::unique_ptr<clock_base>&& c, session_metrics m)
      : registry(r), options(o), clock(std::move(c)), metrics(std::make_shared<const session_metrics>(m)) {}

  session_registry& registry;
  const progress_bridge_options options;
  const std::unique_ptr<clock_base> clock;
  const std::shared_ptr<const session_metrics> metrics;
  std::unique_ptr<audit_base> audit;  // set before the bridge is shared

  mutable std::mutex mutex;  // the bridge lock
  // Guarded by `mutex`.
  bool shutdown = false;
  std::uint64_t park_counter = 0;
  std::size_t total = 0;
  std::unordered_map<std::string, bridge_session_entry, bridge_string_hash, std::equal_to<>> sessions;

  // One bridge row; a row the sink did not persist (false, a throw, or no memory to build it) is
  // counted in `audit_failures` (docs/security.md#audit-and-the-one-cid-pattern).
  void write_audit(std::string_view action, std::string_view target_type, std::string_view target_id,
                   std::string_view principal, std::string_view detail_text) const noexcept {
    if (!audit) return;
    bool persisted = false;
    try {
      audit_record row;
      row.action = action;
      row.target_type = target_type;
      row.target_id = target_id;
      row.principal_id = principal;
      row.result = audit_result::success;
      row.detail = detail_text;
      row.time = clock->system_now();
      persisted = audit->record(row);
    } catch (...) {
      persisted = false;  // an audit sink may throw; the row is lost
    }
    if (!persisted) metrics->audit_failures.inc();
  }
};

template <class E>
[[nodiscard]] constexpr std::size_t bridge_index(E e) noexcept {
  return static_cast<std::size_t>(e);
}

// Releases the record's streamed charge exactly once. Requires the bridge lock (when `core` is
// alive) and the record lock.
inline void bridge_release_charge_locked(bridge_core* core, progress_call::state& r) noexcept {
  if (!r.charge_held) return;
  r.charge_held = false;
  if (core == nullptr) return;
  const auto it = core->sessions.find(std::string_view{r.sess->id()});
  if (it == core->sessions.end()) return;
  if (it->second.charges > 0) --it->second.charges;
  if (it->second.charges == 0 && it->second.calls.empty()) core->sessions.erase(it);
}

// Erases the record from the bridge's map. Requires the bridge lock and the record lock.
inline void bridge_erase_locked(bridge_core& core, progress_call::state& r) noexcept {
  const auto it = core.sessions.find(std::string_view{r.sess->id()});
  if (it == core.sessions.end()) return;
  const auto call = it->second.calls.find(r.id);
  if (call != it->second.calls.end() && call->second.get() == &r) {
    it->second.calls.erase(call);
    --core.total;
    core.metrics->bridge_records_active.add(-1);
  }
  if (it->second.charges == 0 && it->second.calls.empty()) core.sessions.erase(it);
}

// Teardown (docs/sessions.md#the-sweep): later reports are no-ops, the entry goes, the charge is
// released once. Requires the bridge lock and the record lock.
inline void bridge_teardown_locked(bridge_core& core, progress_call::state& r) noexcept {
  r.torn_down = true;
  if (r.st != bridge_record_state::aborted) r.st = bridge_record_state::done;
  r.slot.reset();
  r.messages.clear();
  r.final_pending.reset();
  r.outbox.clear();
  r.final_in_outbox = false;
  bridge_release_charge_locked(&core, r);
  bridge_erase_locked(core, r);
}

inline std::string bridge_progress_frame(const request_id& token, const bridge_snapshot& snap,
                                         std::string_view execution_id) {
  std::string out;
  json::writer w{out};
  w.begin_object().member("jsonrpc", "2.0").member("method", "notifications/progress").key("params").begin_object();
  w.key("progressToken");
  write_id(w, token.view());
  w.key("progress").value(snap.progress);
  if (snap.total) w.key("total").value(*snap.total);
  if (!snap.message.empty()) w.member("message", std::string_view{snap.message});
  if (!execution_id.empty()) {
    w.key("_meta").begin_object().member(execution_id_meta_key, execution_id).end_object();
  }
  w.end_object().end_object();
  return out;
}

// The fallback final (docs/sessions.md#projection-and-finals): a complete error result.
inline std::string bridge_fallback_final(const request_id& id, std::string_view execution_id, bool legacy_members) {
  std::string out;
  write_result_response(out, id.view(), std::string_view{fallback_final_result(execution_id, legacy_members)});
  return out;
}

inline std::string bridge_unavailable_final(const request_id& id, std::string_view execution_id,
                                            std::chrono::system_clock::time_point now) {
  const correlation_id cid = next_correlation_id(now);
  error_data data;
  data.correlation_id = cid.view();
  data.remediation = bridge_unavailable_remediation;
  data.execution_id = execution_id.empty() ? std::optional<std::string_view>{} : std::optional{execution_id};
  std::string out;
  write_error_response(out, std::optional<request_id_view>{id.view()}, errc::terminal_unavailable, {}, data);
  return out;
}

// The JSON-RPC response of a detached call's final (docs/sessions.md#projection-and-finals): the
// final's result (or error) for `id`. With `legacy`, the result also carries the top-level members
// older hosts read: `status` (the final's `structuredContent.status` when it is a string, else
// `failed` for an error result, else `completed`), `execution_id`, and the other members of its
// `structuredContent`; members the result already has are never repeated.
inline std::string bridge_final_response(const request_id& id, const operation_final& f, std::string_view execution_id,
                                         bool legacy) {
  std::string out;
  if (f.error) {
    write_error_response(out, std::optional<request_id_view>{id.view()}, *f.error);
    return out;
  }
  json::document doc;
  json::value result;
  if (legacy) {
    auto parsed = doc.parse(f.result_json);
    if (parsed.has_value() && parsed->is_object()) result = *parsed;
  }
  if (!result.exists()) {
    write_result_response(out, id.view(), std::string_view{f.result_json});
    return out;
  }
  const json::value structured = result["structuredContent"];
  std::string_view status = result["isError"].is_bool() && result["isError"].as_bool() ? "failed" : "completed";
  if (structured["status"].is_string()) status = structured["status"].as_string();
  write_result_response(out, id.view(), [&](json::writer& w) {
    w.begin_object();
    for (const auto& m : result.members()) w.key(m.key).value(m.value());
    if (!result.find("status").exists()) w.member("status", status);
    if (!execution_id.empty() && !result.find("execution_id").exists()) w.member("execution_id", execution_id);
    if (structured.is_object()) {
      for (const auto& m : structured.members()) {
        if (m.key == "status" || m.key == "execution_id" || result.find(m.key).exists()) continue;
        w.key(m.key).value(m.value());
      }
    }
    w.end_object();
  });
  return out;
}

// What a projection left for after the record lock is released.
struct bridge_projection {
  std::size_t committed = 0;  // progress and message frames committed
  bool poke = false;          // frames went to the outbox: wake the pump
};

// The projection loop (docs/sessions.md#projection-and-finals, #lock-discipline). Requires the
// record lock held through `lk` and the claim free; returns with the lock held and the claim
// released. Stream calls happen with no lock held; the final's settlement relocks bridge then
// record (charge release).
inline void bridge_project(progress_call::state& r, std::unique_lock<std::mutex>& lk,
                           const std::shared_ptr<bridge_core>& core, bridge_projection& out) noexcept {
  enum class item : std::uint8_t { message, progress, final };
  const session_metrics& m = *r.metrics;
  r.projecting = true;
  for (;;) {
    if (r.torn_down) break;
    const bridge_record_state mode = r.st;
    const stream_channel channel = r.channel;
    if (mode == bridge_record_state::arming) break;  // latched until arm
    if (mode == bridge_record_state::done || mode == bridge_record_state::aborted) {
      r.slot.reset();
      r.messages.clear();
      r.final_pending.reset();
      break;
    }
    item what = item::message;
    std::string text;
    double progress = 0;
    std::string execution_id;
    if (!r.messages.empty()) {
      text = std::move(r.messages.front());
      r.messages.pop_front();
    } else if (r.slot) {
      bridge_snapshot snap = std::move(*r.slot);
      r.slot.reset();
      if (r.watermark && !(snap.progress > *r.watermark)) {
        m.progress_suppressed.inc();
        continue;
      }
      what = item::progress;
      progress = snap.progress;
      try {
        text = bridge_progress_frame(r.token, snap, r.execution_id);
      } catch (const std::bad_alloc&) {
        m.progress_suppressed.inc();
        continue;
      }
    } else if (r.final_pending) {
      what = item::final;
      text = std::move(*r.final_pending);
      r.final_pending.reset();
      try {
        execution_id = r.execution_id;
      } catch (const std::bad_alloc&) {
        execution_id.clear();  // the fallback then goes without it
      }
    } else {
      break;
    }
    lk.unlock();

    // ---- no lock held ----
    session_stream& stream = *r.sess->stream();
    std::uint64_t id = 0;
    bool poisoned = false;
    if (what != item::final) {
      id = mode == bridge_record_state::get_only ? stream.publish(text) : stream.publish_ring_only(text, channel);
    } else if (mode != bridge_record_state::get_only) {
      // The ladder (docs/sessions.md#projection-and-finals): real final, fallback final, poison.
      id = stream.publish_final(text, channel);
      if (id == 0) {
        m.terminal_publish_failures.inc();
        try {
          text = bridge_fallback_final(r.id, execution_id, r.legacy_members);
          id = stream.publish_final(text, channel);
        } catch (const std::bad_alloc&) {
          id = 0;
        }
        if (id == 0) {
          m.terminal_publish_failures.inc();
          stream.poison();
          poisoned = true;
          // A POST pump waiting for the final would otherwise wait for its cap.
          if (mode == bridge_record_state::streaming && r.wake) r.wake->close(close_reason::internal_error);
        }
      }
    }

    std::unique_lock<std::mutex> bridge_lock;
    if (what == item::final && core) bridge_lock = std::unique_lock<std::mutex>(core->mutex);
    lk.lock();
    // ---- record lock (and, for a final, the bridge lock) held ----
    const bool deliver = !r.torn_down && r.st == bridge_record_state::streaming && id != 0;
    if (what == item::final) {
      r.final_settled = true;
      r.final_id = id;
      if (deliver) {
        try {
          r.outbox.push_back(stream_frame{id, std::move(text)});
          r.final_in_outbox = true;
          out.poke = true;
        } catch (const std::bad_alloc&) {
          m.frames_dropped.inc();  // stays pinned in the ring for a resume
        }
      }
      if (!r.torn_down && r.st != bridge_record_state::aborted &&
          (r.st == bridge_record_state::get_only || poisoned)) {
        r.st = bridge_record_state::done;
      }
      bridge_release_charge_locked(core.get(), r);  // the final settled: pinned, pinless or poisoned
      if (bridge_lock.owns_lock()) bridge_lock.unlock();
      continue;
    }
    if (id == 0) continue;
    ++out.committed;
    if (what == item::progress) r.watermark = progress;
    if (deliver) {
      try {
        r.outbox.push_back(stream_frame{id, std::move(text)});
        out.poke = true;
      } catch (const std::bad_alloc&) {
        m.frames_dropped.inc();  // committed: replayable from the ring
      }
    }
  }
  r.projecting = false;
}

// Projects when nothing else holds the claim, then wakes the pump outside every lock.
inline std::size_t bridge_project_and_release(progress_call::state& r, std::unique_lock<std::mutex>& lk,
                                              const std::shared_ptr<bridge_core>& core) noexcept {
  bridge_projection p;
  if (!r.projecting) bridge_project(r, lk, core, p);
  lk.unlock();
  if (p.poke && r.wake) r.wake->poke();
  return p.committed;
}

// Latches `text` as the call's final (the first terminal wins; a torn-down or aborted record
// takes none) and projects it now, unless a projection in progress or the arming picks it up
// when it ends. False when no terminal could be latched.
inline bool bridge_latch_final(progress_call::state& r, bridge_terminal terminal, std::string text) {
  const auto core = r.core.lock();  // before the record lock, as every projection path takes it
  std::unique_lock<std::mutex> lk(r.mutex);
  if (r.torn_down || r.terminal_accepted || r.st == bridge_record_state::aborted) return false;
  r.terminal_accepted = true;
  r.terminal = terminal;
  r.final_pending = std::move(text);
  if (r.projecting || r.st == bridge_record_state::arming) return true;
  (void)bridge_project_and_release(r, lk, core);
  return true;
}

}  // namespace detail

MCPCORE_DECL std::string_view to_string(bridge_record_state s) noexcept {
  switch (s) {
    case bridge_record_state::arming: return "arming";
    case bridge_record_state::streaming: return "streaming";
    case bridge_record_state::get_only: return "get_only";
    case bridge_record_state::ring_only: return "ring_only";
    case bridge_record_state::done: return "done";
    case bridge_record_state::aborted: return "aborted";
  }
  return {};
}

// ---- progress_call ---------------------------------------------------------------------------

MCPCORE_DECL arm_outcome progress_call::arm(bridge_delivery delivery, stream_channel channel) {
  if (!s_) return arm_outcome::not_armed;
  state& r = *s_;
  // A channel the record does not stream on carries nothing: a resume of it ends after what it
  // holds. Ended outside every lock (that may wake a resumed stream).
  const auto end_unused = [&r, channel] {
    if (channel != get_channel && r.sess) r.sess->stream()->end_channel(channel);
  };
  const session_metrics& m = *r.metrics;
  const auto core = r.core.lock();
  std::unique_lock<std::mutex> bridge_lock;
  if (core) bridge_lock = std::unique_lock<std::mutex>(core->mutex);
  std::unique_lock<std::mutex> lk(r.mutex);
  const bool not_armed = !core || r.torn_down || r.st == bridge_record_state::aborted;
  if (not_armed || r.st != bridge_record_state::arming) {
    m.bridge_degrades[detail::bridge_index(not_armed ? bridge_degrade::arm_not_armed
                                                     : bridge_degrade::arm_already_armed)]
        .inc();
    lk.unlock();
    if (bridge_lock.owns_lock()) bridge_lock.unlock();
    end_unused();
    return not_armed ? arm_outcome::not_armed : arm_outcome::already_armed;
  }
  arm_outcome outcome = arm_outcome::get_only;
  if (r.cancel_intent) {
    // docs/sessions.md#cancellation: a cancel consumed by arm degrades a streamed intent to a plain
    // answer.
    r.st = bridge_record_state::get_only;
    detail::bridge_release_charge_locked(core.get(), r);
    outcome = arm_outcome::cancelled;
    m.bridge_degrades[detail::bridge_index(bridge_degrade::arm_cancelled)].inc();
  } else if (delivery == bridge_delivery::streamed && r.streamed) {
    r.st = bridge_record_state::streaming;
    r.channel = channel;
    outcome = arm_outcome::streaming;
  } else {
    r.st = bridge_record_state::get_only;
    detail::bridge_release_charge_locked(core.get(), r);
  }
  bool poke = false;
  if (r.terminal == detail::bridge_terminal::no_response) {
    // The work already ended without a response: nothing to project.
    r.st = bridge_record_state::done;
    r.slot.reset();
    r.messages.clear();
    detail::bridge_release_charge_locked(core.get(), r);
    poke = true;
  }
  const bool ended = outcome != arm_outcome::streaming || r.st == bridge_record_state::done;
  bridge_lock.unlock();
  (void)detail::bridge_project_and_release(r, lk, core);
  if (poke && r.wake) r.wake->poke();
  if (ended) end_unused();
  return outcome;
}

MCPCORE_DECL void progress_call::abandon() noexcept {
  if (!s_) return;
  state& r = *s_;
  const auto core = r.core.lock();
  std::unique_lock<std::mutex> bridge_lock;
  if (core) bridge_lock = std::unique_lock<std::mutex>(core->mutex);
  const std::lock_guard<std::mutex> lk(r.mutex);
  if (r.torn_down || r.st != bridge_record_state::arming) return;
  r.st = bridge_record_state::aborted;
  r.cancel_intent = false;
  if (core) {
    detail::bridge_teardown_locked(*core, r);
  } else {
    r.torn_down = true;
    r.charge_held = false;
  }
}

MCPCORE_DECL void progress_call::set_execution_id(std::string execution_id) {
  if (!s_) return;
  const std::lock_guard<std::mutex> lk(s_->mutex);
  if (s_->torn_down) return;
  s_->execution_id = std::move(execution_id);
}

MCPCORE_DECL std::string progress_call::execution_id() const {
  if (!s_) return {};
  const std::lock_guard<std::mutex> lk(s_->mutex);
  return s_->execution_id;
}

namespace detail {

// The body of `progress_call::progress` (and of the record's `operation_link::progress`).
inline bool bridge_report_progress(progress_call::state& r, double progress, std::optional<double> total,
                                   std::string_view message) {
  const session_metrics& m = *r.metrics;
  // docs/sessions.md#projection-and-finals: no meaningful denominator (strict clients reject total
  // 0) or no number at all.
  if (!std::isfinite(progress) || (total && (!std::isfinite(*total) || *total <= 0))) {
    m.progress_suppressed.inc();
    return false;
  }
  if (total && progress > *total) progress = *total;  // clamp
  detail::bridge_snapshot snap;
  snap.progress = progress;
  snap.total = total;
  snap.message.assign(message);  // allocation before any state changes
  const auto core = r.core.lock();
  std::unique_lock<std::mutex> lk(r.mutex);
  if (r.torn_down || r.terminal_accepted || r.st == bridge_record_state::done ||
      r.st == bridge_record_state::aborted) {
    return false;  // the final is always last
  }
  if (r.watermark && !(progress > *r.watermark)) {
    m.progress_suppressed.inc();
    return false;
  }
  if (r.slot) m.progress_suppressed.inc();  // an untaken snapshot is superseded (latest wins)
  r.slot = std::move(snap);
  if (r.projecting || r.st == bridge_record_state::arming) return false;  // latched for later
  return detail::bridge_project_and_release(r, lk, core) > 0;
}

}  // namespace detail

MCPCORE_DECL bool progress_call::progress(double progress, std::optional<double> total, std::string_view message) {
  return s_ && detail::bridge_report_progress(*s_, progress, total, message);
}

inline bool progress_call::state::progress(double progress, std::optional<double> total, std::string_view message) {
  return detail::bridge_report_progress(*this, progress, total, message);
}

MCPCORE_DECL bool progress_call::message(std::string_view jsonrpc_message) {
  if (!s_) return false;
  state& r = *s_;
  std::string text{jsonrpc_message};
  const auto core = r.core.lock();
  std::unique_lock<std::mutex> lk(r.mutex);
  if (r.torn_down || r.terminal_accepted || r.st == bridge_record_state::done ||
      r.st == bridge_record_state::aborted) {
    return false;
  }
  if (r.messages.size() >= detail::bridge_pending_messages) {
    r.metrics->frames_dropped.inc();
    return false;
  }
  r.messages.push_back(std::move(text));
  if (r.projecting || r.st == bridge_record_state::arming) return false;
  return detail::bridge_project_and_release(r, lk, core) > 0;
}

MCPCORE_DECL bool progress_call::complete(std::string response) {
  if (!s_) return false;
  return detail::bridge_latch_final(*s_, detail::bridge_terminal::response, std::move(response));
}

MCPCORE_DECL void progress_call::defer(std::string base_response) {
  if (!s_) return;
  state& r = *s_;
  const auto core = r.core.lock();
  std::unique_lock<std::mutex> lk(r.mutex);
  if (r.torn_down || r.base || r.st == bridge_record_state::aborted) return;
  r.base = std::move(base_response);
  if (!r.final_awaiting_return) return;
  // The work finished before its call returned: its final goes now, after the call's in-call
  // messages.
  r.final_pending = std::move(r.final_awaiting_return);
  r.final_awaiting_return.reset();
  if (r.projecting || r.st == bridge_record_state::arming) return;
  (void)detail::bridge_project_and_release(r, lk, core);
}

namespace detail {

// The body of `progress_call::finish` (and of the record's `operation_link::finish`).
inline bool bridge_report_finish(progress_call::state& r, const operation_final& final) {
  std::string execution_id;
  {
    const std::lock_guard<std::mutex> lk(r.mutex);
    if (r.torn_down || r.terminal_accepted || r.st == bridge_record_state::aborted) return false;
    execution_id = r.execution_id;
  }
  // Built before anything is latched: a throw leaves the record as it was
  // (docs/sessions.md#exception-boundaries).
  std::string text = bridge_final_response(r.id, final, execution_id, r.legacy_members);
  {
    const std::lock_guard<std::mutex> lk(r.mutex);
    if (r.torn_down || r.terminal_accepted || r.st == bridge_record_state::aborted) return false;
    if (r.detached && !r.base) {
      // The call has not returned yet: accept the terminal now (later progress is dropped) and
      // publish the final when `defer` comes, after the call's own messages.
      r.final_awaiting_return = std::move(text);
      r.terminal_accepted = true;
      r.terminal = bridge_terminal::finish;
      return true;
    }
  }
  return bridge_latch_final(r, bridge_terminal::finish, std::move(text));
}

}  // namespace detail

MCPCORE_DECL bool progress_call::finish(const operation_final& final) {
  return s_ && detail::bridge_report_finish(*s_, final);
}

inline bool progress_call::state::finish(operation_final final) {
  return detail::bridge_report_finish(*this, final);
}

MCPCORE_DECL bool progress_call::complete_without_response() noexcept {
  if (!s_) return false;
  state& r = *s_;
  const auto core = r.core.lock();
  {
    std::unique_lock<std::mutex> bridge_lock;
    if (core) bridge_lock = std::unique_lock<std::mutex>(core->mutex);
    const std::lock_guard<std::mutex> lk(r.mutex);
    if (r.torn_down || r.terminal_accepted || r.st == bridge_record_state::aborted) return false;
    r.terminal_accepted = true;
    r.terminal = detail::bridge_terminal::no_response;
    if (r.st == bridge_record_state::arming) return true;  // arm settles it
    r.slot.reset();
    r.messages.clear();
    r.outbox.clear();  // frames not yet written stay in the ring only
    r.final_in_outbox = false;
  }
  // In-call work ends without a response only when it was cancelled: a streamed POST then ends
  // `cancelled` with its close frame, whichever of the dispatch core and the bridge heard the
  // cancel first (a close is never indistinguishable from completion,
  // docs/errors.md#honest-answers). The sink is closed before the record turns done: a pump pass
  // that found it done with no reason recorded would end the POST `completed`, with neither a
  // result nor a close frame.
  if (r.wake) r.wake->close(close_reason::cancelled);
  stream_channel channel = get_channel;
  {
    std::unique_lock<std::mutex> bridge_lock;
    if (core) bridge_lock = std::unique_lock<std::mutex>(core->mutex);
    const std::lock_guard<std::mutex> lk(r.mutex);
    channel = r.channel;
    // (Its releaser, or the sweep, may have settled it meanwhile.)
    if (!r.torn_down && r.st != bridge_record_state::aborted) r.st = bridge_record_state::done;
    detail::bridge_release_charge_locked(core.get(), r);
  }
  if (channel != get_channel && r.sess) r.sess->stream()->end_channel(channel);  // a resumed stream ends too
  return true;
}

MCPCORE_DECL void progress_call::take(post_batch& out, bool cap_expired) {
  out.frames.clear();
  out.final_included = false;
  out.cap_settled = false;
  if (!s_) {
    out.cap_settled = cap_expired;
    return;
  }
  state& r = *s_;
  const auto core = r.core.lock();
  std::unique_lock<std::mutex> lk(r.mutex);
  if (r.torn_down || r.st != bridge_record_state::streaming) {
    // Nothing for a POST: parked, done or gone. A pump past its cap ends.
    out.cap_settled = cap_expired;
    return;
  }
  if (cap_expired) {
    // docs/sessions.md#streamed-post: a terminal latched in the same instant wins over the cap.
    const bool terminal_wins =
        r.final_in_outbox || r.final_pending.has_value() ||
        (r.terminal_accepted && r.terminal != detail::bridge_terminal::no_response && !r.final_settled);
    if (!terminal_wins) {
      if (!r.cap_drain_done) {
        r.cap_drain_done = true;  // one drain pass, so the tail of progress precedes the close
        if (!r.projecting) {
          detail::bridge_projection p;  // the caller is the pump itself: nothing to wake
          detail::bridge_project(r, lk, core, p);
        }
      } else {
        out.cap_settled = true;
      }
    }
  }
  out.frames.reserve(r.outbox.size());  // the one allocation, before anything is taken
  for (auto& f : r.outbox) out.frames.push_back(std::move(f));
  r.outbox.clear();
  out.final_included = std::exchange(r.final_in_outbox, false);
}

MCPCORE_DECL void progress_call::on_final_written() noexcept {
  if (!s_) return;
  state& r = *s_;
  const auto core = r.core.lock();
  std::unique_lock<std::mutex> bridge_lock;
  if (core) bridge_lock = std::unique_lock<std::mutex>(core->mutex);
  const std::lock_guard<std::mutex> lk(r.mutex);
  if (r.torn_down || r.final_written) return;
  r.final_written = true;
  if (r.st != bridge_record_state::aborted) r.st = bridge_record_state::done;
  detail::bridge_release_charge_locked(core.get(), r);
  // Route (a) (docs/sessions.md#pinned-finals); lock order bridge → record → stream.
  if (r.final_id != 0) (void)r.sess->stream()->unpin(r.final_id);
}

MCPCORE_DECL void progress_call::on_post_closed() noexcept {
  if (!s_) return;
  state& r = *s_;
  const auto core = r.core.lock();
  if (!core) return;
  std::unique_lock<std::mutex> bridge_lock(core->mutex);
  std::unique_lock<std::mutex> lk(r.mutex);
  if (r.torn_down || r.final_written) return;
  if (r.terminal == detail::bridge_terminal::no_response &&
      (r.st == bridge_record_state::arming || r.st == bridge_record_state::streaming)) {
    // The work ended without a response (it was cancelled) before anything could park: nothing will
    // ever be published for it, so it settles now instead of holding a pin slot
    // (docs/sessions.md#pinned-finals).
    r.st = bridge_record_state::done;
    r.slot.reset();
    r.messages.clear();
    r.outbox.clear();
    r.final_in_outbox = false;
    detail::bridge_release_charge_locked(core.get(), r);
    return;
  }
  if (r.st == bridge_record_state::streaming || (r.st == bridge_record_state::arming && r.streamed)) {
    // docs/sessions.md#streamed-post releaser / docs/sessions.md#streamed-post-admission: park
    // ring-only for a GET resume; a final already committed stays pinned, a later one is published
    // pinned.
    r.st = bridge_record_state::ring_only;
    r.park_order = ++core->park_counter;
    r.outbox.clear();
    r.final_in_outbox = false;
    bridge_lock.unlock();
    (void)detail::bridge_project_and_release(r, lk, core);
  }
}

MCPCORE_DECL void progress_call::mark_detached() noexcept {
  if (!s_) return;
  const std::lock_guard<std::mutex> lk(s_->mutex);
  s_->detached = true;
}

MCPCORE_DECL bool progress_call::detached() const noexcept {
  if (!s_) return false;
  const std::lock_guard<std::mutex> lk(s_->mutex);
  return s_->detached;
}

MCPCORE_DECL std::shared_ptr<operation_link> progress_call::detach(std::string execution_id) {
  if (!s_) return nullptr;
  set_execution_id(std::move(execution_id));
  mark_detached();
  return s_;  // the record itself: handles keep it alive as copies of this call do
}

MCPCORE_DECL std::shared_ptr<stream_sink> progress_call::wake_sink() const noexcept {
  return s_ ? s_->wake : nullptr;
}

MCPCORE_DECL bridge_record_state progress_call::state_now() const noexcept {
  if (!s_) return bridge_record_state::aborted;
  const std::lock_guard<std::mutex> lk(s_->mutex);
  return s_->st;
}

MCPCORE_DECL const request_id& progress_call::id() const noexcept {
  static const request_id none{0};
  return s_ ? s_->id : none;
}

MCPCORE_END_NAMESPACE

#endif  // MCPCORE_IMPL_PROGRESS_BRIDGE_IPP
