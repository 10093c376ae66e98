// SPDX-License-Identifier: Apache-2.0
// The stdio transport: newline-delimited JSON-RPC on a pair of file descriptors
// (docs/design.md#the-stdio-transport).
#ifndef MCPCORE_STDIO_HPP
#define MCPCORE_STDIO_HPP

#include <mcpcore/detail/config.hpp>
#include <mcpcore/dispatch/server.hpp>
#include <mcpcore/governance/policy.hpp>
#include <mcpcore/wire/era.hpp>
#include <mcpcore/wire/json.hpp>

#include <chrono>
#include <cstddef>
#include <string_view>

MCPCORE_BEGIN_NAMESPACE

/// Default cap on one message (one line), in bytes; the HTTP body cap of
/// docs/http.md#processing-order-on-the-mcp-path.
inline constexpr std::size_t default_stdio_max_message_bytes = std::size_t{4} << 20;
/// Default number of threads running calls (so that a slow tool never blocks cancellation,
/// client responses or other calls).
inline constexpr std::size_t default_stdio_workers = 4;
/// Default cap on requests waiting for a worker; beyond it a request is answered at once with
/// -32603 and `retry_after_ms` = `retry::dispatch_queue_full`.
inline constexpr std::size_t default_stdio_max_queued = 256;
/// Default time the calls in flight get to finish after the input ends, before they are
/// cancelled.
inline constexpr std::chrono::milliseconds default_stdio_drain_timeout{5000};
/// Default cap on the `subscriptions/listen` one connection holds open at once
/// (docs/eras.md#stdio); one more is -32012 "Subscription limit reached".
inline constexpr std::size_t default_stdio_max_listens = 8;
/// Default cap on the resource URIs (and, apart, task ids) one `subscriptions/listen` may name (as on HTTP).
inline constexpr std::size_t default_stdio_max_listen_uris = 1024;
/// Default interval at which an idle worker ends the waits for the client that passed their
/// deadline (`server::expire_waiting`, docs/eras.md#waiting-for-the-client).
inline constexpr std::chrono::milliseconds default_stdio_expiry_tick{1000};
/// Default cap on the calls of one connection whose answer waits for the final of their detached
/// work (docs/transport.md#detached-calls-over-stdio); beyond it a call that detaches is answered
/// its provisional result at once.
inline constexpr std::size_t default_stdio_max_detached_calls = 64;

/// Limits of the stdio transport (docs/configuration.md).
struct stdio_options {
  std::size_t max_message_bytes = default_stdio_max_message_bytes;
  std::size_t workers = default_stdio_workers;
  std::size_t max_queued = default_stdio_max_queued;
  std::chrono::milliseconds drain_timeout = default_stdio_drain_timeout;
  /// Nesting limit of a message (the other JSON limits follow `max_message_bytes`).
  std::uint32_t max_depth = json::default_max_depth;
  /// The eras the connection may be pinned to (docs/eras.md#stdio): a first request of an era not
  /// served is answered -32022 listing the revisions that are.
  served_eras eras = served_eras::both;
  /// `subscriptions/listen` the connection may hold open at once (0: unlimited); one more is
  /// answered -32012 (docs/eras.md#stdio).
  std::size_t max_listens = default_stdio_max_listens;
  /// Resource URIs one listen may subscribe to, and task ids it may watch (`tasksStatus`,
  /// docs/tasks.md#notifications), each; more is -32602.
  std::size_t max_listen_uris = default_stdio_max_listen_uris;
  /// How often an idle worker expires the calls waiting for the client past their deadline.
  std::chrono::milliseconds expiry_tick = default_stdio_expiry_tick;
  /// Calls whose answer waits for the final of their detached work at once
  /// (docs/transport.md#detached-calls-over-stdio); one more that detaches is answered its
  /// provisional result at once and nothing of it is held (0: none is ever held).
  std::size_t max_detached_calls = default_stdio_max_detached_calls;
};

/// Serves one client over newline-delimited JSON-RPC (MCP's stdio transport, POSIX).
///
/// One reader thread parses each line. Client responses and notifications (cancellation among
/// them) are handled at once on the reader; requests run on a fixed pool of workers, so a
/// long call never delays a cancellation or the answer a call is waiting for. Messages a call
/// sends (progress, logging, requests to the client) are written before its result; writes are
/// serialized, one line each. A line longer than `max_message_bytes` is skipped and answered
/// with -32600. Diagnostics belong on stderr: the transport writes nothing but protocol to
/// the output.
///
/// A `notifications/cancelled` for a request still waiting in the queue removes it: it never
/// runs and is never answered.
///
/// Detached work (docs/transport.md#detached-calls-over-stdio): a `tools/call` whose handler
/// detaches (`detach`, operation.hpp) is answered the final its work reports through `finish`,
/// not its provisional result: the response is held back (the worker is free once the handler
/// returned) and the final is written as the one response to that request id; the work's progress
/// goes out as `notifications/progress` (with the execution id in `_meta`) when the request carried
/// a progress token. At most `max_detached_calls` are held at once; one more is answered its
/// provisional result at once. A `notifications/cancelled` for a held call releases it: nothing is
/// written for it, the work goes on. When every handle of the work is gone without a terminal, the
/// call is answered the fallback final (an error result: the result is not available here).
///
/// A handshake-era call that asks its client for input (`need_input`) gives its worker back while
/// the client answers; the answer resumes it on a worker, and an idle worker expires waits past
/// their deadline every `expiry_tick` (docs/eras.md#waiting-for-the-client).
///
/// Eras (docs/eras.md#stdio): the first request pins the connection's era. A request without a
/// per-request claim (`initialize`, or any other) pins the handshake era, served with the one
/// `peer` as before; a request whose `params._meta` claims the per-request era pins that era,
/// except `server/discover`, which is answered in the per-request era without pinning (so that
/// a client may still `initialize` afterwards). A pinned per-request connection dispatches each
/// request with its own envelope and no peer, cancels a running call on
/// `notifications/cancelled` (no answer is written for it), and answers `initialize` -32022; a
/// pinned handshake connection answers a per-request claim -32022.
///
/// Lifecycle of the handshake era (docs/eras.md#stdio-lifecycle): before `initialize` only `ping`
/// is served (any other request is -32600 `Server not initialized`); a second `initialize` is
/// -32600 `Already initialized` and the first negotiation stays; a refused `initialize` may be sent
/// again.
///
/// Subscriptions (docs/eras.md#stdio): a pinned per-request connection serves
/// `subscriptions/listen` on the reader: it subscribes to the server's events
/// (`server::subscribe`), then writes the acknowledgement and one line per matching event, through
/// a writer thread of the transport so that `server::publish` never waits for the output.
/// `notifications/cancelled` naming a listen ends it without an answer; at the end (input end or
/// `stop()`) every open listen is answered its result before `run` returns. At most
/// `max_listens` are open at once.
///
/// Writing to a pipe whose reader has gone raises SIGPIPE, which terminates a process that does
/// not handle it; a host serving stdio should ignore SIGPIPE (the example does), so that a write
/// fails with EPIPE and the transport stops writing instead.
///
/// Shutdown: at the end of the input the transport fails every request to the client (no
/// answer can come), lets calls in flight finish for `drain_timeout`, cancels the rest, gives the
/// held calls the rest of `drain_timeout` for their finals, answers those still held the fallback
/// final, and returns; a later `finish` writes nothing. `stop()` cancels everything at once and
/// answers the held calls the fallback final without waiting.
class stdio_transport {
 public:
  /// @pre `s` outlives the transport.
  MCPCORE_DECL stdio_transport(server& s, principal caller, stdio_options options = {});
  MCPCORE_DECL ~stdio_transport();
  stdio_transport(const stdio_transport&) = delete;
  stdio_transport& operator=(const stdio_transport&) = delete;

  /// Serves until the input ends or `stop()` is called. Returns 0 after a clean end of input
  /// or a stop, 1 when reading failed.
  MCPCORE_DECL int run(int in_fd = 0, int out_fd = 1);
  /// Makes `run` return promptly, cancelling calls in flight. Thread-safe.
  MCPCORE_DECL void stop() noexcept;
  /// Sends `notifications/resources/updated` if the client subscribed to `uri`. Thread-safe;
  /// valid while `run` executes.
  MCPCORE_DECL bool notify_resource_updated(std::string_view uri);
  /// The connection's peer state (the handshake era's; a per-request connection never uses it).
  [[nodiscard]] MCPCORE_DECL peer& client() noexcept;

  struct impl;

 private:
  impl* impl_;
};

MCPCORE_END_NAMESPACE

#if defined(MCPCORE_HEADER_ONLY)
#  include <mcpcore/transport/impl/stdio.ipp>
#endif

#endif  // MCPCORE_STDIO_HPP
