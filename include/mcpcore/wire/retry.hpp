// SPDX-License-Identifier: Apache-2.0
// The named retry floors of docs/errors.md#retry-floors-retryhpp: every retry_after_ms mcpcore
// emits is one of these.
#ifndef MCPCORE_RETRY_HPP
#define MCPCORE_RETRY_HPP

#include <mcpcore/detail/config.hpp>

#include <chrono>
#include <cstdint>

MCPCORE_BEGIN_NAMESPACE

/// Retry floors: how long a client should wait before retrying as is
/// (docs/errors.md#retry-floors-retryhpp).
///
/// Each floor is "honest": a retry sooner cannot succeed. They are separate symbols even where
/// the values coincide, because each derives from a different mechanism and may be tuned alone.
/// Errors that cannot succeed on retry (tier, permission and validation denials, session cap,
/// unknown session, origin, protocol version, not acceptable, poisoned stream, duplicate
/// in-flight id, post-dispatch 500s) carry `retry_after_ms: null` instead.
namespace retry {

using std::chrono::milliseconds;

/// Error-shaped transient store faults: a read of a tracker, response or configuration store
/// failed; the store recovers on the scale of seconds.
inline constexpr milliseconds store_fault{5000};

/// Faster-recovering store faults (configuration and token rotation), and the "server not
/// ready" class; the REST twin of the same fault sends `Retry-After: 2`.
inline constexpr milliseconds store_fault_short{2000};

/// A data provider still initializing after boot.
inline constexpr milliseconds provider_warmup{5000};

/// Success-shaped hint inside the *result* of a poll tool (execution status and the like)
/// while the work is not terminal; omitted once it is.
inline constexpr milliseconds result_poll{2000};

/// Every `approval_required` (-32006) envelope: fresh mint, dedup hit, still-pending recall;
/// also the pending-ticket caps (-32004), which clear when a reviewer acts. Approvals clear on
/// human time.
inline constexpr milliseconds approval_poll{30000};

/// GET attach refused by the stream budget (global or per principal): a slot frees only after a
/// dead peer is noticed, about one 3 s heartbeat tick plus the failed write.
inline constexpr milliseconds stream_cap{5000};

/// GET attach refused while a superseded stream on the session is still draining.
inline constexpr milliseconds handover{5000};

/// Streamed-POST admission refusals (per-principal cap, global cap, bridge record cap, pin
/// slots): a slot frees only when the work or the 120 s response cap ends; 30 s is a quarter of
/// that cap.
inline constexpr milliseconds streamed_post{30000};

/// An approval lookup or consume failed transiently; the ticket is intact. A permanent store
/// failure (store closed, permanent SQL class) carries null instead.
inline constexpr milliseconds approval_store_transient{5000};

/// A request found every worker busy and the dispatch queue full (stdio): a slot frees when any
/// call finishes, which the server cannot predict; one second is the floor it can honestly give.
inline constexpr milliseconds dispatch_queue_full{1000};

/// A task refused because its principal (or the server) holds as many tasks as allowed: a slot
/// frees only when a task's ttl runs out (finished tasks are kept until then), which the server
/// cannot predict; a minute is the floor it gives (docs/tasks.md#limits).
inline constexpr milliseconds task_cap{60000};

/// The `Retry-After` header value (whole seconds, rounded up) for a `retry_after_ms` floor; a 429
/// carries both (docs/errors.md#the-errordata-envelope).
[[nodiscard]] constexpr std::int64_t header_seconds(milliseconds floor) noexcept {
  const auto ms = floor.count();
  return ms <= 0 ? 0 : (ms + 999) / 1000;
}

}  // namespace retry

MCPCORE_END_NAMESPACE

#endif  // MCPCORE_RETRY_HPP
