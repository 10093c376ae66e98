// SPDX-License-Identifier: Apache-2.0
// Mounting http_endpoint on a thread-per-request (blocking) HTTP server: the stream pull loop, a
// bounded executor, the maintenance tick and the idle wait (docs/http.md#mounting-on-a-blocking-server).
#ifndef MCPCORE_BLOCKING_ADAPTER_HPP
#define MCPCORE_BLOCKING_ADAPTER_HPP

#include <mcpcore/detail/config.hpp>
#include <mcpcore/governance/policy.hpp>
#include <mcpcore/transport/http_endpoint.hpp>
#include <mcpcore/wire/http.hpp>

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string_view>

MCPCORE_BEGIN_NAMESPACE

/// Default number of threads of a `blocking_executor` (the dispatch work: tool handlers).
inline constexpr std::size_t default_blocking_worker_threads = 4;
/// Default cap on the tasks waiting for a `blocking_executor` thread; one more is refused (the
/// endpoint then answers 503 -32603 `Server busy` with `retry_after_ms`).
inline constexpr std::size_t default_blocking_queue_cap = 256;
/// Default interval at which a `blocking_adapter` calls `http_endpoint::tick` (as the Asio
/// server's `tick_interval`).
inline constexpr std::chrono::milliseconds default_blocking_tick_interval{3000};
/// Default shortest wait between two pulls of a stream whose last pull produced nothing, so that
/// a stream answering `wait_time` 0 never spins a thread.
inline constexpr std::chrono::milliseconds default_blocking_min_stream_wait{1};

/// Writes bytes of a streamed body to the client; false when they could not be written (the peer
/// left, the write timed out). Called on the thread that pumps the stream.
using blocking_write = std::function<bool(std::string_view bytes)>;

/// Pulls `stream` to its end on the calling thread (docs/http.md#mounting-on-a-blocking-server):
/// registers a waker, then pull → `write` → `written()` until `finished()`, waiting between pulls
/// on a condition variable for the waker or `stream.wait_time(now)` (at least `min_wait`),
/// whichever comes first. Returns true when the body is complete, false when a write failed (or
/// threw): the stream has then seen `write_failed()` and the host drops the connection. Call it
/// once per stream, before any other use of `on_ready`.
MCPCORE_DECL bool pump_stream(http_stream& stream, const blocking_write& write,
                              std::chrono::milliseconds min_wait = default_blocking_min_stream_wait);

/// Limits of a `blocking_executor` (docs/configuration.md).
struct blocking_executor_options {
  /// Threads running tasks (at least 1).
  std::size_t threads = default_blocking_worker_threads;
  /// Tasks waiting for a thread at most (at least 1); past it `submit` returns false.
  std::size_t queue_cap = default_blocking_queue_cap;
};

/// A fixed set of threads taking tasks from a bounded queue: what `http_endpoint::bind_executor`
/// takes, for a host whose own server has no executor to lend.
///
/// @par Thread safety
/// `submit`, `executor()` and the counts may be called from any thread; `stop` and the destructor
/// from any thread but one of its own.
class blocking_executor {
 public:
  /// Starts `options.threads` threads. @throws std::system_error when a thread cannot start.
  MCPCORE_DECL explicit blocking_executor(blocking_executor_options options = {});
  /// Runs `stop()`.
  MCPCORE_DECL ~blocking_executor();
  blocking_executor(const blocking_executor&) = delete;
  blocking_executor& operator=(const blocking_executor&) = delete;

  /// Queues `task`; false (running nothing) when the queue is full, after `stop`, or for an empty
  /// task. A task's exception is swallowed.
  MCPCORE_DECL bool submit(std::function<void()> task);
  /// `submit` as an `http_executor`, for `http_endpoint::bind_executor`; it stays safe to call
  /// after this executor is gone (it then refuses).
  [[nodiscard]] MCPCORE_DECL http_executor executor() const;
  /// Refuses new tasks, lets the threads run every queued one, joins them. Idempotent.
  MCPCORE_DECL void stop() noexcept;
  /// Tasks queued and not started.
  [[nodiscard]] MCPCORE_DECL std::size_t queued() const noexcept;
  /// Tasks running now.
  [[nodiscard]] MCPCORE_DECL std::size_t running() const noexcept;

  struct state;

 private:
  std::shared_ptr<state> state_;
};

/// What a `blocking_adapter` runs (docs/configuration.md, docs/http.md#mounting-on-a-blocking-server).
struct blocking_adapter_options {
  /// The executor bound to the endpoint.
  blocking_executor_options executor{};
  /// How often a thread of the adapter calls `http_endpoint::tick` (0: no tick thread; the host
  /// then calls `tick` itself).
  std::chrono::milliseconds tick_interval = default_blocking_tick_interval;
  /// The shortest wait between two pulls of a stream (see `pump_stream`).
  std::chrono::milliseconds min_stream_wait = default_blocking_min_stream_wait;
};

/// Everything a thread-per-request HTTP server (cpp-httplib and the like) needs to serve an
/// `http_endpoint` (docs/http.md#mounting-on-a-blocking-server): a bounded executor bound to the
/// endpoint, a thread calling `tick`, synchronous `handle`, the stream pull loop, counts of what
/// is in flight, an idle wait and the shutdown sequence.
///
///     mcpcore::blocking_adapter mcp(endpoint);              // after the endpoint, before the server
///     handler: auto reply = mcp.handle(view);               // or mcp.handle(view, caller)
///              if (reply.stream) mcp.serve(std::move(reply.stream), write);
///     stop:    mcp.shutdown(drain); http_server.stop();     // then destroy mcp, then the endpoint
///
/// A stream handed out by `handle` counts as active until it is destroyed, so `wait_idle`
/// returning true means no request, no stream and no dispatch task of the adapter is left: the
/// endpoint may then be destroyed (after the adapter).
///
/// @par Thread safety
/// Every member may be called from any thread, concurrently, except the destructor (and, on one
/// stream, `serve`, which the thread serving that stream calls once).
class blocking_adapter {
 public:
  /// Starts the executor's threads and binds them to `endpoint` (which must outlive the adapter),
  /// then starts the tick thread. @throws std::logic_error when the endpoint has an executor
  /// already, std::system_error when a thread cannot start; nothing is left running then.
  MCPCORE_DECL explicit blocking_adapter(http_endpoint& endpoint, blocking_adapter_options options = {});
  /// Stops the tick thread, unbinds the executor, runs its queued tasks and joins its threads.
  /// Streams still alive keep working against the endpoint; destroy them first.
  MCPCORE_DECL ~blocking_adapter();
  blocking_adapter(const blocking_adapter&) = delete;
  blocking_adapter& operator=(const blocking_adapter&) = delete;

  /// `http_endpoint::handle`, waiting for the completion: the reply, whose stream (if any) the
  /// caller then pulls with `serve` (or `pump_stream`). The request counts as active meanwhile.
  [[nodiscard]] MCPCORE_DECL http_reply handle(const http_request_view& request);
  /// The same with a principal the host authenticated itself (`http_endpoint::handle(request,
  /// caller, done)`, docs/http.md#handing-in-the-principal).
  [[nodiscard]] MCPCORE_DECL http_reply handle(const http_request_view& request, principal caller);
  /// The same for a start function that calls a `handle` overload of the endpoint with the
  /// completion it is given (a principal the host authenticated itself, for instance); it must
  /// arrange for the completion to be called exactly once.
  [[nodiscard]] MCPCORE_DECL http_reply handle_with(const std::function<void(http_completion)>& start);
  /// Pulls `stream` to its end through `write` (`pump_stream`), then destroys it. Returns true
  /// when the body is complete, false when a write failed.
  MCPCORE_DECL bool serve(std::unique_ptr<http_stream> stream, const blocking_write& write);

  /// Requests inside `handle` now.
  [[nodiscard]] MCPCORE_DECL std::size_t active_requests() const noexcept;
  /// Streams `handle` returned that are not destroyed yet.
  [[nodiscard]] MCPCORE_DECL std::size_t active_streams() const noexcept;
  /// Dispatch tasks queued or running on the executor.
  [[nodiscard]] MCPCORE_DECL std::size_t active_tasks() const noexcept;
  /// Waits until no request, stream or task is active, at most `timeout`; true when idle.
  MCPCORE_DECL bool wait_idle(std::chrono::milliseconds timeout) const;

  /// `http_endpoint::begin_shutdown`, then closes every active stream (`session_terminated`) and
  /// wakes its pull loop, so each ends promptly with its close notification. Idempotent.
  MCPCORE_DECL void begin_shutdown() noexcept;
  /// The whole drain (docs/sessions.md#shutdown): `begin_shutdown`, `wait_idle(drain)`, then
  /// `http_endpoint::cancel_in_flight` and a second `wait_idle(drain)` for the cancelled calls to
  /// return. True when the adapter is idle at the end.
  MCPCORE_DECL bool shutdown(std::chrono::milliseconds drain) noexcept;

  /// The endpoint served.
  [[nodiscard]] MCPCORE_DECL http_endpoint& endpoint() noexcept;

  struct impl;

 private:
  impl* impl_;
};

MCPCORE_END_NAMESPACE

#if defined(MCPCORE_HEADER_ONLY)
#  include <mcpcore/transport/impl/blocking_adapter.ipp>
#endif

#endif  // MCPCORE_BLOCKING_ADAPTER_HPP
